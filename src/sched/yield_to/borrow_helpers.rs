//! Mirror of the pure helpers of the `borrow` yield_to design
//! (docs/design.md section 1): the same names and arithmetic as the kernel
//! series, checked against `vectors/yield_borrow_*.json`
//! (tests/yield_vectors.rs).

/// `yield_borrow_budget()`: the part of the yielder's slice it has not used.
pub fn yield_borrow_budget(slice_ns: u64, ran_ns: u64) -> u64 {
    slice_ns.saturating_sub(ran_ns)
}

/// `yield_borrow_allowed()`: may the target's entity at one level be picked
/// ahead of eligibility? `d = (s64)(vruntime - avg_vruntime)`; true iff
/// `charge > 0` and `d + charge <= limit`, without overflow.
pub fn yield_borrow_allowed(vruntime: u64, avg_vruntime: u64, charge: u64, limit: u64) -> bool {
    if charge == 0 {
        return false;
    }
    let d = vruntime.wrapping_sub(avg_vruntime) as i64;
    if d >= 0 {
        // room = limit - d, if any
        let d = d as u64;
        d <= limit && charge <= limit - d
    } else {
        let room = limit.saturating_add(d.unsigned_abs());
        charge <= room
    }
}
