//! Mirror of the pure helpers of the `borrow` yield_to design
//! (docs/design.md section 1) and the lag room shared with the penalty
//! (`kernel/sched/yield_to.h`, patch 0001): the same names and arithmetic as
//! the kernel series, checked against `vectors/yield_borrow_*.json`
//! (tests/integration/yield_vectors.rs).

/// `yield_borrow_budget()`: the part of the yielder's slice it has not used.
pub fn yield_borrow_budget(slice_ns: u64, ran_ns: u64) -> u64 {
    slice_ns.saturating_sub(ran_ns)
}

/// `yield_lag_room()`: how much virtual time an entity may still be charged
/// (or pushed back) before it is `limit` ahead of `avg_vruntime`, the bound
/// `update_entity_lag()` clamps lag to. With `d = (s64)(vruntime - avg)`:
/// `limit - d` if `0 <= d < limit`, 0 if `d >= limit`, `limit + |d|`
/// (saturating) if `d < 0`.
pub fn yield_lag_room(vruntime: u64, avg_vruntime: u64, limit: u64) -> u64 {
    let d = vruntime.wrapping_sub(avg_vruntime) as i64;
    if d >= 0 {
        limit.saturating_sub(d as u64)
    } else {
        limit.saturating_add(d.unsigned_abs())
    }
}

/// `yield_borrow_allowed()`: may the target's entity at one level be picked
/// ahead of eligibility? True iff `charge > 0` and `charge` fits the lag room.
pub fn yield_borrow_allowed(vruntime: u64, avg_vruntime: u64, charge: u64, limit: u64) -> bool {
    charge != 0 && charge <= yield_lag_room(vruntime, avg_vruntime, limit)
}
