//! Load weights and the fixed-point `calc_delta_fair()` of kernel/sched/fair.c
//! (Linux 6.12.117, 64-bit build: loads carry SCHED_FIXEDPOINT_SHIFT = 10 extra
//! bits of resolution, so nice 0 is `1024 << 10`).

/// Extra resolution bits of load weights on 64-bit kernels.
pub const SCHED_FIXEDPOINT_SHIFT: u32 = 10;
/// Weight of a nice-0 task, in scaled units (`scale_load(1024)`).
pub const NICE_0_LOAD: u64 = 1024 << SCHED_FIXEDPOINT_SHIFT;
/// `MIN_SHARES` of `calc_group_shares()` (unscaled on purpose, as in the kernel).
pub const MIN_SHARES: u64 = 2;
/// Upper bound of a group's shares: `scale_load(1 << 18)`.
pub const MAX_SHARES: u64 = (1 << 18) << SCHED_FIXEDPOINT_SHIFT;
const WMULT_CONST: u64 = u32::MAX as u64;
const WMULT_SHIFT: u32 = 32;

/// `sched_prio_to_weight[]`: nice -20 .. 19. The ABI-defined 1.25x-per-nice-level
/// ladder (each entry is ~1.25 times the next, nice 0 = 1024).
pub const SCHED_PRIO_TO_WEIGHT: [u64; 40] = [
    88761, 71755, 56483, 46273, 36291, 29154, 23254, 18705, 14949, 11916, 9548, 7620, 6100, 4904,
    3906, 3121, 2501, 1991, 1586, 1277, 1024, 820, 655, 526, 423, 335, 272, 215, 172, 137, 110, 87,
    70, 56, 45, 36, 29, 23, 18, 15,
];

/// `scale_load()`.
pub const fn scale_load(w: u64) -> u64 {
    w << SCHED_FIXEDPOINT_SHIFT
}

/// `scale_load_down()`: drops the fixed-point bits but never rounds a non-zero
/// weight below 2.
#[inline]
pub fn scale_load_down(w: u64) -> u64 {
    // max(2, w >> 10) for w != 0, tested in the order of likelihood.
    let s = w >> SCHED_FIXEDPOINT_SHIFT;
    if s >= 2 {
        s
    } else if w == 0 {
        0
    } else {
        2
    }
}

/// Scaled weight of a task with this nice value (-20..=19).
pub fn nice_to_weight(nice: i32) -> u64 {
    let idx = (nice.clamp(-20, 19) + 20) as usize;
    scale_load(SCHED_PRIO_TO_WEIGHT[idx])
}

/// `struct load_weight`: a weight and its cached inverse.
///
/// As in the kernel, `update_load_add()`/`update_load_sub()` (a cfs_rq's
/// load at every enqueue and dequeue) only clear the inverse (0: not
/// computed; a computed inverse is never 0) and `__calc_delta()` computes it
/// when it needs it (`__update_inv_weight()`). The model only scales by
/// entity weights, whose inverse `new()`/`set()` compute at once, so the
/// queues' loads never pay the division.
#[derive(Clone, Copy, Debug, Default)]
pub struct LoadWeight {
    pub(crate) weight: u64,
    inv_weight: u32,
}

/// Two load weights are equal when their weights are (the inverse is a cache).
impl PartialEq for LoadWeight {
    fn eq(&self, other: &LoadWeight) -> bool {
        self.weight == other.weight
    }
}

impl Eq for LoadWeight {}

impl LoadWeight {
    pub fn new(weight: u64) -> LoadWeight {
        LoadWeight {
            weight,
            inv_weight: inv_weight_of(weight),
        }
    }
    /// `update_load_set()` (the inverse computed at once, see the type).
    pub fn set(&mut self, weight: u64) {
        *self = LoadWeight::new(weight);
    }
    /// `update_load_add()`: the inverse is left to `__calc_delta()`.
    #[inline]
    pub fn add(&mut self, w: u64) {
        self.weight += w;
        self.inv_weight = 0;
    }
    /// `update_load_sub()`.
    #[inline]
    pub fn sub(&mut self, w: u64) {
        debug_assert!(self.weight >= w, "load underflow");
        self.weight = self.weight.saturating_sub(w);
        self.inv_weight = 0;
    }
    /// `__update_inv_weight()` without the store: the cached inverse, or
    /// the one of the current weight when it was cleared.
    #[inline]
    fn inv(&self) -> u64 {
        if self.inv_weight != 0 {
            self.inv_weight as u64
        } else {
            inv_weight_of(self.weight) as u64
        }
    }
}

/// `__update_inv_weight()`: `WMULT_CONST / scale_load_down(w)` with the kernel's
/// two edge cases.
fn inv_weight_of(weight: u64) -> u32 {
    let w = scale_load_down(weight);
    if w >= WMULT_CONST {
        1
    } else {
        WMULT_CONST.checked_div(w).unwrap_or(WMULT_CONST) as u32
    }
}

fn fls32(x: u32) -> u32 {
    32 - x.leading_zeros()
}

/// `__calc_delta()`: `delta_exec * weight / lw.weight` in the kernel's 32.32
/// fixed point, with the same shifts (and so the same rounding).
pub fn __calc_delta(delta_exec: u64, weight: u64, lw: &LoadWeight) -> u64 {
    let mut fact = scale_load_down(weight);
    let mut fact_hi = (fact >> 32) as u32;
    let mut shift = WMULT_SHIFT;
    if fact_hi != 0 {
        let fs = fls32(fact_hi);
        shift -= fs;
        fact >>= fs;
    }
    fact = (fact & 0xffff_ffff) * lw.inv();
    fact_hi = (fact >> 32) as u32;
    if fact_hi != 0 {
        let fs = fls32(fact_hi);
        shift -= fs;
        fact >>= fs;
    }
    // mul_u64_u32_shr()
    ((delta_exec as u128 * (fact & 0xffff_ffff) as u128) >> shift) as u64
}

/// `calc_delta_fair()`: wall-clock delta to virtual-time delta for an entity of
/// load `lw` (identity for nice-0 weight).
pub fn calc_delta_fair(delta: u64, lw: &LoadWeight) -> u64 {
    if lw.weight != NICE_0_LOAD {
        __calc_delta(delta, NICE_0_LOAD, lw)
    } else {
        delta
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_ladder_is_about_125_percent_per_step() {
        for i in 0..39 {
            let r = SCHED_PRIO_TO_WEIGHT[i] as f64 / SCHED_PRIO_TO_WEIGHT[i + 1] as f64;
            assert!((1.15..1.35).contains(&r), "step {i}: {r}");
        }
        assert_eq!(nice_to_weight(0), NICE_0_LOAD);
    }

    #[test]
    fn calc_delta_fair_scales_inversely_with_weight() {
        let w0 = LoadWeight::new(NICE_0_LOAD);
        assert_eq!(calc_delta_fair(1_000_000, &w0), 1_000_000);
        // nice 5 (335): 1ms of CPU is ~3.057ms of vruntime.
        let w5 = LoadWeight::new(nice_to_weight(5));
        let v = calc_delta_fair(1_000_000, &w5);
        assert!((3_056_000..3_058_000).contains(&v), "{v}");
        // Double weight: half the virtual time, truncated like the kernel's
        // WMULT_CONST = 2^32 - 1 inverse (499999.76 -> 499999).
        let w2 = LoadWeight::new(2 * NICE_0_LOAD);
        assert_eq!(calc_delta_fair(1_000_000, &w2), 499_999);
        // A load built by update_load_add() (inverse cleared) scales the same.
        let mut sum = LoadWeight::default();
        sum.add(NICE_0_LOAD);
        sum.add(NICE_0_LOAD);
        assert_eq!(calc_delta_fair(1_000_000, &sum), 499_999);
        sum.sub(NICE_0_LOAD);
        assert_eq!(calc_delta_fair(1_000_000, &sum), 1_000_000);
    }

    #[test]
    fn scale_load_down_floors_at_two() {
        assert_eq!(scale_load_down(0), 0);
        assert_eq!(scale_load_down(1), 2);
        assert_eq!(scale_load_down(NICE_0_LOAD), 1024);
    }
}
