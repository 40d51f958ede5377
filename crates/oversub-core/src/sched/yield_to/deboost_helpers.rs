//! Mirror of the kernel series' pure penalty helpers (`yield_penalty_*` in
//! `kernel/sched/yield_to.h`, patch 0001 of `kernel/patches`, series v2; v1
//! called them `vcpu_deboost_*`): the same names, the same u64 arithmetic,
//! checked against the same `vectors/deboost_*.json` as the KUnit suite
//! `sched_yield_to` (tests/integration/yield_vectors.rs). When the kernel series changes
//! these helpers or their vectors, this file follows; nothing else in the
//! simulator depends on their internals.

/// `YIELD_PENALTY_RATELIMIT_NS`: one applied penalty per state per 6 ms
/// (inclusive). The state is per common-ancestor cfs_rq in the series (per
/// rq in the seed's v1/v2).
pub const YIELD_PENALTY_RATELIMIT_NS: u64 = 6_000_000;
/// `YIELD_PENALTY_DEBOUNCE_NS`: a reverse pair within 600 µs is ping-pong.
pub const YIELD_PENALTY_DEBOUNCE_NS: u64 = 600_000;
/// The cap table in halves of `gran` for nr_runnable = 2, 3, 4..6, 7..8,
/// 9..12 and anything else (6.0x, 4.0x, 2.5x, 2.0x, 1.5x, 1.0x).
pub const CAP_HALVES: [u32; 6] = [12, 8, 5, 4, 3, 2];

/// `struct yield_penalty_state` (series: per common-ancestor cfs_rq, the
/// seed's `struct vcpu_deboost_state` was per rq).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct YieldPenaltyState {
    pub last_apply_ns: u64,
    pub last_pair_ns: u64,
    /// pids; -1 = none.
    pub last_src: i64,
    pub last_dst: i64,
}

impl Default for YieldPenaltyState {
    /// `yield_penalty_state_init()`.
    fn default() -> YieldPenaltyState {
        YieldPenaltyState {
            last_apply_ns: 0,
            last_pair_ns: 0,
            last_src: -1,
            last_dst: -1,
        }
    }
}

/// `yield_penalty_rate_limited()` with the window as a knob.
pub fn yield_penalty_rate_limited_within(s: &YieldPenaltyState, now: u64, window: u64) -> bool {
    s.last_apply_ns != 0 && now.wrapping_sub(s.last_apply_ns) <= window
}

/// `yield_penalty_rate_limited()`.
pub fn yield_penalty_rate_limited(s: &YieldPenaltyState, now: u64) -> bool {
    yield_penalty_rate_limited_within(s, now, YIELD_PENALTY_RATELIMIT_NS)
}

/// `yield_penalty_reverse_pair()` with the window as a knob.
pub fn yield_penalty_reverse_pair_within(
    s: &YieldPenaltyState,
    src: i64,
    dst: i64,
    now: u64,
    window: u64,
) -> bool {
    s.last_src == dst && s.last_dst == src && now.wrapping_sub(s.last_pair_ns) <= window
}

/// `yield_penalty_reverse_pair()`.
pub fn yield_penalty_reverse_pair(s: &YieldPenaltyState, src: i64, dst: i64, now: u64) -> bool {
    yield_penalty_reverse_pair_within(s, src, dst, now, YIELD_PENALTY_DEBOUNCE_NS)
}

/// `yield_penalty_admit()` with both windows as knobs: `Some(reverse)` if a
/// penalty may be applied (`reverse`: a reverse pair within the debounce
/// window, admitted even while the token is taken), `None` if rate-limited.
/// The debounce is decided first (series v2, review item M1).
pub fn yield_penalty_admit_within(
    s: &YieldPenaltyState,
    src: i64,
    dst: i64,
    now: u64,
    ratelimit_window: u64,
    debounce_window: u64,
) -> Option<bool> {
    let reverse = yield_penalty_reverse_pair_within(s, src, dst, now, debounce_window);
    (reverse || !yield_penalty_rate_limited_within(s, now, ratelimit_window)).then_some(reverse)
}

/// `yield_penalty_admit()`.
pub fn yield_penalty_admit(s: &YieldPenaltyState, src: i64, dst: i64, now: u64) -> Option<bool> {
    yield_penalty_admit_within(
        s,
        src,
        dst,
        now,
        YIELD_PENALTY_RATELIMIT_NS,
        YIELD_PENALTY_DEBOUNCE_NS,
    )
}

/// `yield_penalty_commit()`: record an applied penalty. The pair and its
/// timestamp are always recorded; only a non-reverse penalty takes the
/// rate-limit token (series v2, review item M1).
pub fn yield_penalty_commit(
    s: &mut YieldPenaltyState,
    src: i64,
    dst: i64,
    now: u64,
    reverse_pair: bool,
) {
    if !reverse_pair {
        s.last_apply_ns = now;
    }
    s.last_pair_ns = now;
    s.last_src = src;
    s.last_dst = dst;
}

/// `yield_penalty_need()`: how far the target is ahead, wrap-safe.
pub fn yield_penalty_need(vruntime_yielder: u64, vruntime_target: u64) -> u64 {
    let delta = vruntime_target.wrapping_sub(vruntime_yielder) as i64;
    if delta > 0 {
        delta as u64
    } else {
        0
    }
}

/// `yield_penalty_cap()` with the halves table as a knob.
pub fn yield_penalty_cap_with(halves_table: &[u32; 6], nr_runnable: u32, gran: u64) -> u64 {
    let halves = match nr_runnable {
        2 => halves_table[0],
        3 => halves_table[1],
        4..=6 => halves_table[2],
        7..=8 => halves_table[3],
        9..=12 => halves_table[4],
        _ => halves_table[5],
    } as u64;
    if halves == 0 {
        return 0;
    }
    if gran > u64::MAX / halves {
        return u64::MAX;
    }
    (gran * halves) >> 1
}

/// `yield_penalty_cap()`.
pub fn yield_penalty_cap(nr_runnable: u32, gran: u64) -> u64 {
    yield_penalty_cap_with(&CAP_HALVES, nr_runnable, gran)
}

/// `yield_penalty()` with the cap table as a knob.
pub fn yield_penalty_with(
    halves_table: &[u32; 6],
    gran: u64,
    need: u64,
    nr_runnable: u32,
    reverse_pair: bool,
) -> u64 {
    let mut penalty = gran;
    if need != 0 {
        let extra = need.saturating_add(need / 10);
        penalty = gran.saturating_add(extra);
    }
    if reverse_pair {
        penalty = penalty.min(need.max(gran));
    }
    // clamp(penalty, gran, cap): the kernel's clamp() takes the upper bound
    // last, so a cap below gran (a zero-halves knob) wins.
    penalty
        .max(gran)
        .min(yield_penalty_cap_with(halves_table, nr_runnable, gran))
}

/// `yield_penalty()`.
pub fn yield_penalty(gran: u64, need: u64, nr_runnable: u32, reverse_pair: bool) -> u64 {
    yield_penalty_with(&CAP_HALVES, gran, need, nr_runnable, reverse_pair)
}

/// `yield_penalty_new_vruntime()` (series v2; was `vcpu_deboost_new_vruntime()`):
/// vruntime is a wrapping clock, so the sum wraps like every other vruntime
/// update; only a zero penalty is refused (None). v1 also refused a wrapping
/// sum, which refused every penalty in a fresh cgroup (review item M2).
pub fn yield_penalty_new_vruntime(vruntime: u64, penalty: u64) -> Option<u64> {
    if penalty == 0 {
        return None;
    }
    Some(vruntime.wrapping_add(penalty))
}
