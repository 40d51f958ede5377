//! Virtual time in nanoseconds: `Time` is an instant since the start of the run,
//! `Nanos` a duration. Both are plain `u64` nanoseconds underneath, like the
//! kernel's `u64` clocks, but the types keep instants and lengths apart.

use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// An instant of virtual time, in nanoseconds since the simulation started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Time(pub u64);

/// A length of virtual time in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Nanos(pub u64);

pub const NSEC_PER_USEC: u64 = 1_000;
pub const NSEC_PER_MSEC: u64 = 1_000_000;
pub const NSEC_PER_SEC: u64 = 1_000_000_000;

impl Time {
    pub const ZERO: Time = Time(0);
    pub fn ns(self) -> u64 {
        self.0
    }
    /// Time elapsed since `earlier`; zero if `earlier` is in the future.
    pub fn since(self, earlier: Time) -> Nanos {
        Nanos(self.0.saturating_sub(earlier.0))
    }
}

impl Nanos {
    pub const ZERO: Nanos = Nanos(0);
    pub const fn from_us(us: u64) -> Nanos {
        Nanos(us * NSEC_PER_USEC)
    }
    pub const fn from_ms(ms: u64) -> Nanos {
        Nanos(ms * NSEC_PER_MSEC)
    }
    pub const fn from_secs(s: u64) -> Nanos {
        Nanos(s * NSEC_PER_SEC)
    }
    pub fn ns(self) -> u64 {
        self.0
    }
}

impl Add<Nanos> for Time {
    type Output = Time;
    fn add(self, d: Nanos) -> Time {
        Time(self.0.saturating_add(d.0))
    }
}

impl AddAssign<Nanos> for Time {
    fn add_assign(&mut self, d: Nanos) {
        self.0 = self.0.saturating_add(d.0);
    }
}

impl Sub<Time> for Time {
    type Output = Nanos;
    fn sub(self, rhs: Time) -> Nanos {
        debug_assert!(self >= rhs, "time went backwards: {self:?} - {rhs:?}");
        Nanos(self.0 - rhs.0)
    }
}

impl Add for Nanos {
    type Output = Nanos;
    fn add(self, rhs: Nanos) -> Nanos {
        Nanos(self.0.saturating_add(rhs.0))
    }
}

impl AddAssign for Nanos {
    fn add_assign(&mut self, rhs: Nanos) {
        self.0 = self.0.saturating_add(rhs.0);
    }
}

impl Sub for Nanos {
    type Output = Nanos;
    fn sub(self, rhs: Nanos) -> Nanos {
        Nanos(self.0.saturating_sub(rhs.0))
    }
}

impl fmt::Display for Nanos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0;
        if n >= NSEC_PER_SEC && n % NSEC_PER_MSEC == 0 {
            write!(
                f,
                "{}.{:03}s",
                n / NSEC_PER_SEC,
                (n % NSEC_PER_SEC) / NSEC_PER_MSEC
            )
        } else if n >= NSEC_PER_MSEC {
            write!(
                f,
                "{}.{:03}ms",
                n / NSEC_PER_MSEC,
                (n % NSEC_PER_MSEC) / NSEC_PER_USEC
            )
        } else if n >= NSEC_PER_USEC {
            write!(f, "{}.{:03}us", n / NSEC_PER_USEC, n % NSEC_PER_USEC)
        } else {
            write!(f, "{n}ns")
        }
    }
}

impl fmt::Display for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "t={}", Nanos(self.0))
    }
}
