//! A PELT signal for cfs_rq load, after kernel/sched/pelt.c (Linux 6.12.117):
//! the 1024 ns-unit periods, y^32 = 1/2 decay, `accumulate_sum()` with its three
//! segments and the `LOAD_AVG_MAX - 1024 + period_contrib` divider.
//!
//! The load, runnable and util signals of `struct sched_avg`; the fair.c glue
//! that keeps entities and cfs_rqs in step (attach, detach, removal,
//! propagation, blocked averages, `task_h_load()`) is in `load_avg`.
//! Not modelled: util_est, frequency/capacity invariance (the PELT clock is
//! the rq clock of a full-capacity CPU).

use std::sync::OnceLock;

const LOAD_AVG_PERIOD: u64 = 32;
/// Maximum value of a fully-saturated PELT sum.
pub const LOAD_AVG_MAX: u64 = 47742;
const PELT_MIN_DIVIDER: u64 = LOAD_AVG_MAX - 1024;

/// `runnable_avg_yN_inv[]`: (2^32 - 1) * y^n truncated, for n in 0..32, with
/// y = 2^(-1/32), as the kernel's generator (Documentation/scheduler/
/// sched-pelt.c, 6.12.117) computes it; entry 0 is 0xffffffff. Built from five
/// correctly rounded square roots and exact-rounding multiplications, so it
/// is identical on every IEEE-754 machine (the unit test checks the entries
/// the kernel's header has that a 2^32 scale would get wrong).
fn y_n_inv() -> &'static [u64; 32] {
    static TABLE: OnceLock<[u64; 32]> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut y = 0.5f64;
        for _ in 0..5 {
            y = y.sqrt();
        }
        let mut t = [0u64; 32];
        let mut p = 1.0f64;
        for slot in t.iter_mut() {
            *slot = (p * 4_294_967_295.0) as u64;
            p *= y;
        }
        t
    })
}

/// `decay_load()`: val * y^n.
pub fn decay_load(mut val: u64, n: u64) -> u64 {
    if n > LOAD_AVG_PERIOD * 63 {
        return 0;
    }
    let mut local_n = n;
    if local_n >= LOAD_AVG_PERIOD {
        val >>= local_n / LOAD_AVG_PERIOD;
        local_n %= LOAD_AVG_PERIOD;
    }
    ((val as u128 * y_n_inv()[local_n as usize] as u128) >> 32) as u64
}

/// `val * y^n` given `y^(n mod 32) * 2^32` and `n / 32`: `decay_load()`'s
/// arithmetic, in 64 bits when the product fits (the common case).
#[inline]
fn decay_with(val: u64, shift: u64, y: u64) -> u64 {
    let v = val >> shift;
    if v >> 32 == 0 {
        (v * y) >> 32
    } else {
        ((v as u128 * y as u128) >> 32) as u64
    }
}

/// `SCHED_CAPACITY_SHIFT`: util and runnable sums carry 10 fixed-point bits.
pub const SCHED_CAPACITY_SHIFT: u32 = 10;
/// `SCHED_CAPACITY_SCALE`: the capacity of a full-speed CPU.
pub const SCHED_CAPACITY_SCALE: u64 = 1 << SCHED_CAPACITY_SHIFT;

/// `struct sched_avg`: the PELT load, runnable and util signals of an entity
/// or a cfs_rq (util_est is not modelled).
#[derive(Clone, Debug, Default)]
pub struct SchedAvg {
    pub(crate) last_update_time: u64,
    pub(crate) load_sum: u64,
    pub(crate) runnable_sum: u64,
    pub(crate) util_sum: u64,
    pub(crate) period_contrib: u64,
    pub(crate) load_avg: u64,
    pub(crate) runnable_avg: u64,
    pub(crate) util_avg: u64,
}

/// `get_pelt_divider()`.
#[inline]
pub fn get_pelt_divider(sa: &SchedAvg) -> u64 {
    PELT_MIN_DIVIDER + sa.period_contrib
}

/// `PELT_MIN_DIVIDER`, for the lower bounds of the sums after a removal.
pub const PELT_MIN_DIV: u64 = PELT_MIN_DIVIDER;

impl SchedAvg {
    /// `accumulate_sum()`: returns the number of periods crossed.
    ///
    /// Most updates stay within the current 1024-unit period (the clock
    /// moved by less than ~1 ms since the last one): then the contribution
    /// is `delta` itself and nothing decays. That case is inline; a period
    /// boundary goes to `accumulate_sum_periods()`. A zero load, runnable or
    /// running adds zero, as the kernel's tests skip it.
    #[inline]
    fn accumulate_sum(&mut self, delta: u64, load: u64, runnable: u64, running: bool) -> u64 {
        let d = delta + self.period_contrib;
        if d >= 1024 {
            return self.accumulate_sum_periods(delta, load, runnable, running);
        }
        self.period_contrib = d;
        self.load_sum += load * delta;
        self.runnable_sum += (runnable * delta) << SCHED_CAPACITY_SHIFT;
        self.util_sum += (running as u64 * delta) << SCHED_CAPACITY_SHIFT;
        0
    }

    /// `accumulate_sum()` when at least one period boundary was crossed:
    /// decay the sums, then add the three segments.
    #[inline(never)]
    fn accumulate_sum_periods(
        &mut self,
        mut delta: u64,
        load: u64,
        runnable: u64,
        running: bool,
    ) -> u64 {
        let mut contrib = delta;
        delta += self.period_contrib;
        let periods = delta / 1024;
        if periods > 0 {
            if periods > LOAD_AVG_PERIOD * 63 {
                self.load_sum = 0;
                self.runnable_sum = 0;
                self.util_sum = 0;
            } else {
                // decay_load() of the three sums with one table lookup.
                let shift = periods / LOAD_AVG_PERIOD;
                let y = y_n_inv()[(periods % LOAD_AVG_PERIOD) as usize];
                self.load_sum = decay_with(self.load_sum, shift, y);
                self.runnable_sum = decay_with(self.runnable_sum, shift, y);
                self.util_sum = decay_with(self.util_sum, shift, y);
            }
            delta %= 1024;
            if load > 0 {
                // __accumulate_pelt_segments(): d1 * y^p + (the geometric
                // sum of the p-1 full periods) + d3, with decay_load() zero
                // beyond 63 half-lives.
                let d1 = 1024 - self.period_contrib;
                contrib = if periods > LOAD_AVG_PERIOD * 63 {
                    LOAD_AVG_MAX - 1024 + delta
                } else {
                    let shift = periods / LOAD_AVG_PERIOD;
                    let y = y_n_inv()[(periods % LOAD_AVG_PERIOD) as usize];
                    decay_with(d1, shift, y) + LOAD_AVG_MAX
                        - decay_with(LOAD_AVG_MAX, shift, y)
                        - 1024
                        + delta
                };
            }
        }
        self.period_contrib = delta;
        if load > 0 {
            self.load_sum += load * contrib;
        }
        if runnable > 0 {
            self.runnable_sum += (runnable * contrib) << SCHED_CAPACITY_SHIFT;
        }
        if running {
            self.util_sum += contrib << SCHED_CAPACITY_SHIFT;
        }
        periods
    }

    /// The clock step of `___update_load_sum()`: the whole 1024 ns units
    /// since `last_update_time` (which moves by them), or 0 when there is
    /// none (the clock went backwards: resynchronised, nothing accrues).
    /// Callers skip the rest of the update on 0, before computing its inputs.
    #[inline(always)]
    pub fn advance(&mut self, now: u64) -> u64 {
        let lut = self.last_update_time;
        if now < lut {
            self.last_update_time = now;
            return 0;
        }
        let delta = (now - lut) >> 10;
        self.last_update_time = lut + (delta << 10);
        delta
    }

    /// `___update_load_sum()` after `advance()` returned `delta > 0`: true
    /// when a period boundary was crossed (the averages must then be
    /// recomputed).
    #[inline(always)]
    pub fn accumulate(&mut self, delta: u64, load: u64, runnable: u64, running: bool) -> bool {
        let (runnable, running) = if load == 0 {
            (0, false)
        } else {
            (runnable, running)
        };
        self.accumulate_sum(delta, load, runnable, running) > 0
    }

    /// `___update_load_sum()`: true when a period boundary was crossed (the
    /// averages must then be recomputed).
    #[inline]
    pub fn update_load_sum(&mut self, now: u64, load: u64, runnable: u64, running: bool) -> bool {
        match self.advance(now) {
            0 => false,
            delta => self.accumulate(delta, load, runnable, running),
        }
    }

    /// `___update_load_avg()`: the averages from the sums; `load` is the
    /// entity's weight (1 for a cfs_rq, whose load_sum is already weighted).
    #[inline]
    pub fn update_load_avg(&mut self, load: u64) {
        let divider = get_pelt_divider(self);
        // load <= 88761 (nice -20) and load_sum <= LOAD_AVG_MAX for an
        // entity; load is 1 for a cfs_rq: the product fits in 64 bits.
        self.load_avg = load * self.load_sum / divider;
        self.runnable_avg = self.runnable_sum / divider;
        self.util_avg = self.util_sum / divider;
    }

    /// `___update_load_sum()` + `___update_load_avg()` for a cfs_rq (weight
    /// already in the sum). Returns "decayed".
    #[inline]
    pub fn update(&mut self, now: u64, load: u64, runnable: u64, running: bool) -> bool {
        if self.update_load_sum(now, load, runnable, running) {
            self.update_load_avg(1);
            true
        } else {
            false
        }
    }
}

/// `sub_positive()`.
#[inline]
pub fn sub_positive(v: &mut u64, d: u64) {
    *v = v.saturating_sub(d);
}

/// `add_positive()`.
#[inline]
pub fn add_positive(v: &mut u64, d: i64) {
    *v = if d < 0 {
        v.saturating_sub(d.unsigned_abs())
    } else {
        *v + d as u64
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decay_table_is_the_kernels_scale() {
        // Entries of the kernel's sched-pelt.h (Linux 6.12.117): a table
        // scaled by 2^32 instead of 2^32 - 1 is one higher at n = 1 and 5.
        let t = y_n_inv();
        assert_eq!(t[0], 0xffff_ffff);
        assert_eq!(t[1], 0xfa83_b2da);
        assert_eq!(t[5], 0xe5b9_06e6);
        assert_eq!(t[16], 0xb504_f333);
        assert_eq!(t[31], 0x82cd_8698);
    }

    #[test]
    fn decay_halves_every_32_periods() {
        // A whole half-life is a shift, then the y^0 = 0xffffffff/2^32 factor
        // the kernel also applies (one unit lost to truncation).
        assert_eq!(decay_load(1 << 20, 32), (1 << 19) - 1);
        let v = decay_load(1 << 20, 16);
        assert!((741_000..742_000).contains(&v), "{v}");
        assert_eq!(decay_load(12345, 32 * 64), 0);
    }

    #[test]
    fn constant_load_converges_to_its_weight() {
        let mut a = SchedAvg::default();
        let mut t = 0;
        for _ in 0..2000 {
            t += 1_000_000;
            a.update(t, 1024, 1, true);
        }
        assert!((1000..=1024).contains(&a.util_avg), "{}", a.util_avg);
        assert!((1000..=1024).contains(&a.load_avg), "{}", a.load_avg);
        // Half-life of ~32 ms: after 32 ms at zero load, about half remains.
        let before = a.load_avg;
        for _ in 0..33 {
            t += 1_000_000;
            a.update(t, 0, 0, false);
        }
        let ratio = a.load_avg as f64 / before as f64;
        assert!((0.45..0.55).contains(&ratio), "{ratio}");
    }
}
