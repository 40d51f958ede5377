//! The clocks of the real side: CLOCK_MONOTONIC now and absolute sleeps on
//! it, and CPU-time budgets on the thread's CPU clock. Shared by the worker
//! processes, the calibration probes and the runners.

use rustix::thread::{clock_nanosleep_absolute, ClockId};
use rustix::time::{clock_gettime, ClockId as TClock, Timespec};

fn ns(t: Timespec) -> u64 {
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// CLOCK_MONOTONIC now, in ns.
pub fn mono_now() -> u64 {
    ns(clock_gettime(TClock::Monotonic))
}

/// This thread's CPU time (CLOCK_THREAD_CPUTIME_ID), in ns.
pub fn thread_cpu() -> u64 {
    ns(clock_gettime(TClock::ThreadCPUTime))
}

/// Sleeps until CLOCK_MONOTONIC reaches `t` (ns).
pub fn sleep_until(t: u64) {
    let ts = Timespec {
        tv_sec: (t / 1_000_000_000) as _,
        tv_nsec: (t % 1_000_000_000) as _,
    };
    while clock_nanosleep_absolute(ClockId::Monotonic, &ts).is_err() {}
}

/// Burns CPU so that this thread's CPU time reaches `budget` (ns since the
/// measured start): every burst's target is cumulative, so the kernel time of
/// the wakeups, yields and pipe I/O between bursts is part of the burst, as in
/// the simulator, where a burst is all the CPU a task uses per activation.
pub struct Budget {
    base: u64,
    used: u64,
}

impl Default for Budget {
    fn default() -> Budget {
        Budget::new()
    }
}

impl Budget {
    pub fn new() -> Budget {
        Budget {
            base: thread_cpu(),
            used: 0,
        }
    }

    pub fn spin(&mut self, d: u64) {
        self.used += d;
        while thread_cpu().saturating_sub(self.base) < self.used {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_burns_at_least_its_cpu_time_and_sleeps_reach_their_expiry() {
        let t0 = mono_now();
        sleep_until(t0 + 2_000_000);
        assert!(mono_now() >= t0 + 2_000_000);
        let c0 = thread_cpu();
        let mut b = Budget::new();
        b.spin(3_000_000);
        assert!(thread_cpu() - c0 >= 3_000_000);
    }
}
