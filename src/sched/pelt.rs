//! A PELT signal for cfs_rq load, after kernel/sched/pelt.c (Linux 6.12.117):
//! the 1024 ns-unit periods, y^32 = 1/2 decay, `accumulate_sum()` with its three
//! segments and the `LOAD_AVG_MAX - 1024 + period_contrib` divider.
//!
//! Simplification (docs/model.md): only the cfs_rq load signal that
//! `calc_group_shares()` reads is kept, driven by the cfs_rq's own weight
//! (`__update_load_avg_cfs_rq`). Per-entity averages and the attach/detach of a
//! migrating task's average are not modelled, so after a migration a group's
//! per-CPU load drains and builds at the PELT rate instead of jumping.

use std::sync::OnceLock;

const LOAD_AVG_PERIOD: u64 = 32;
/// Maximum value of a fully-saturated PELT sum.
pub const LOAD_AVG_MAX: u64 = 47742;
const PELT_MIN_DIVIDER: u64 = LOAD_AVG_MAX - 1024;

/// y^n * 2^32 for n in 0..32, with y = 2^(-1/32). Built from five correctly
/// rounded square roots and exact-rounding multiplications, so it is identical
/// on every IEEE-754 machine.
fn y_n_inv() -> &'static [u64; 32] {
    static TABLE: OnceLock<[u64; 32]> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut y = 0.5f64;
        for _ in 0..5 {
            y = y.sqrt();
        }
        let mut t = [0u64; 32];
        let mut p = 1.0f64;
        for (n, slot) in t.iter_mut().enumerate() {
            *slot = if n == 0 {
                0xffff_ffff
            } else {
                (p * 4_294_967_296.0) as u64
            };
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

fn accumulate_pelt_segments(periods: u64, d1: u64, d3: u64) -> u64 {
    let c1 = decay_load(d1, periods);
    let c2 = LOAD_AVG_MAX - decay_load(LOAD_AVG_MAX, periods) - 1024;
    c1 + c2 + d3
}

/// `struct sched_avg`, load part only.
#[derive(Clone, Debug, Default)]
pub struct SchedAvg {
    pub last_update_time: u64,
    pub load_sum: u64,
    pub load_avg: u64,
    pub period_contrib: u64,
}

impl SchedAvg {
    /// `___update_load_sum()` + `___update_load_avg()` for a cfs_rq whose
    /// (scale_load_down) weight has been `load` since the last update.
    pub fn update(&mut self, now_ns: u64, load: u64) {
        if now_ns < self.last_update_time {
            self.last_update_time = now_ns;
            return;
        }
        let mut delta = (now_ns - self.last_update_time) >> 10;
        if delta == 0 {
            return;
        }
        self.last_update_time += delta << 10;
        // accumulate_sum()
        let mut contrib = delta;
        delta += self.period_contrib;
        let periods = delta / 1024;
        if periods > 0 {
            self.load_sum = decay_load(self.load_sum, periods);
            delta %= 1024;
            if load > 0 {
                contrib = accumulate_pelt_segments(periods, 1024 - self.period_contrib, delta);
            }
        }
        self.period_contrib = delta;
        if load > 0 {
            self.load_sum += load * contrib;
        }
        if periods == 0 {
            return;
        }
        let divider = PELT_MIN_DIVIDER + self.period_contrib;
        self.load_avg = self.load_sum / divider;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            a.update(t, 1024);
        }
        assert!((1000..=1024).contains(&a.load_avg), "{}", a.load_avg);
        // Half-life of ~32 ms: after 32 ms at zero load, about half remains.
        let before = a.load_avg;
        for _ in 0..33 {
            t += 1_000_000;
            a.update(t, 0);
        }
        let ratio = a.load_avg as f64 / before as f64;
        assert!((0.45..0.55).contains(&ratio), "{ratio}");
    }
}
