//! The yield_to() "vCPU debooster": the seed's v1 and v2 (semantics.md
//! sections 1 and 3, defects included; run before `yield_task_fair()`) and
//! the penalty `kernel/patches` implements as YIELD_TO_PENALTY (series v2,
//! patch 0004, helpers in `deboost_helpers`; run after `yield_task_fair()`).
//! All three push the yielder's entity at the common ancestor (LCA) of
//! yielder and target back in vruntime.
//!
//! The seed's functions (`yield_deboost_*`) follow the seed's control flow:
//! v1 refreshes the rate-limit stamp on every call and runs it before the
//! same-rq check; v2 consumes the token whenever the check passes; both
//! compare vruntimes unsigned and never call `update_curr()` (the inverted
//! `se_y_lca != cfs_rq->curr` test); v1 also writes `vlag` on the running
//! entity (on 6.12, where vlag holds RUN_TO_PARITY's stash, that ends the
//! protection).

use super::borrow_helpers::yield_lag_room;
use super::deboost_helpers as h;
use crate::sched::entity::VruntimeStep;
use crate::sched::ids::{CpuId, SeId, TaskId};
use crate::sched::weight::calc_delta_fair;
use crate::sched::Scheduler;

/// Outcome of one `deboost` decision (the series has no tracepoint result
/// any more; this names the check that ended it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeboostResult {
    Applied,
    RateLimited,
    Invalid,
    /// Yielder and target in one cfs_rq: left to the forfeit and the buddy.
    SameCfsRq,
    /// `h_nr_runnable <= 1` at the common ancestor.
    SingleRunnable,
    /// The yielder's entity is already at the lag bound: nothing to apply.
    NoRoom,
}

impl Scheduler {
    /// The pid-like id the debounce records (task index; -1 = none).
    fn deboost_pid(p: TaskId) -> i64 {
        p.0 as i64
    }

    /// v1/v2 `yield_deboost_calculate_penalty()` incl. the debounce; `nr` is
    /// v1's entity count or v2's h_nr_queued. Dead code (`gran_floor`, the
    /// baseline push) is omitted: it cannot change the result.
    fn yield_deboost_calculate_penalty(
        &mut self,
        cpu: CpuId,
        se_y_lca: SeId,
        se_t_lca: SeId,
        yielder: TaskId,
        target: TaskId,
        nr: u32,
    ) -> u64 {
        let gran = calc_delta_fair(self.cfg.base_slice(), &self.ses[se_y_lca.idx()].load);
        let (vy, vt) = (
            self.ses[se_y_lca.idx()].vruntime(),
            self.ses[se_t_lca.idx()].vruntime(),
        );
        // Unsigned compare, not wrap-safe (as in the seed).
        let need = vt.saturating_sub(vy);
        let mut penalty = gran;
        if need != 0 {
            penalty += (need + need / 10).min(u64::MAX - penalty);
        }
        // yield_deboost_apply_debounce(): state updated on every call.
        let now = self.now;
        let (src, dst) = (Self::deboost_pid(yielder), Self::deboost_pid(target));
        let st = &mut self.yield_rq[cpu.idx()].deboost;
        if st.last_src == dst
            && st.last_dst == src
            && now.wrapping_sub(st.last_pair_ns) <= self.yield_cfg.debounce_ns
        {
            penalty = penalty.min(need.max(gran));
        }
        st.last_src = src;
        st.last_dst = dst;
        st.last_pair_ns = now;
        let maxp = h::yield_penalty_cap_with(&self.yield_cfg.cap_halves, nr, gran);
        penalty.max(gran).min(maxp)
    }

    /// v1/v2 `yield_deboost_apply_penalty()`; v1 also writes vlag and calls
    /// `update_min_vruntime()` (here: re-centring the average).
    fn yield_deboost_apply_penalty(&mut self, se: SeId, penalty: u64, v1: bool) -> bool {
        let vr = self.ses[se.idx()].vruntime();
        if vr > u64::MAX - penalty {
            return false;
        }
        let new = vr + penalty;
        if new <= vr {
            return false;
        }
        let e = &mut self.ses[se.idx()];
        e.set_vruntime(new, VruntimeStep::YieldPolicy);
        e.deadline = new.wrapping_add(calc_delta_fair(e.slice, &e.load));
        if v1 {
            let cfs = self.cfs_rq_of(se);
            let v = self.avg_vruntime(cfs);
            self.ses[se.idx()].vlag = v.wrapping_sub(new) as i64;
        }
        true
    }

    /// The seed's v1 `yield_to_deboost()` (patches 1-5 of 2025-11-10).
    pub(super) fn yield_to_deboost_v1(&mut self, cpu: CpuId, p: TaskId) {
        // yield_deboost_validate_tasks(): rate limit first, stamp refreshed
        // on every call (a stream < 6 ms apart keeps it limited for good).
        let now = self.now;
        let st = &mut self.yield_rq[cpu.idx()].deboost;
        let limited = st.last_apply_ns != 0
            && now.wrapping_sub(st.last_apply_ns) <= self.yield_cfg.ratelimit_ns;
        st.last_apply_ns = now;
        if limited {
            self.yield_stats.deboosts_rate_limited += 1;
            return;
        }
        let Some(y) = self.rqs[cpu.idx()].curr else {
            return;
        };
        if y == p || !self.ses[self.eevdf_se(y).idx()].on_rq {
            return;
        }
        if !self.ses[self.eevdf_se(p).idx()].on_rq || self.tasks[p.idx()].cpu != cpu {
            return;
        }
        let (sy, st_) = self.find_matching_se(self.eevdf_se(y), self.eevdf_se(p));
        let cfs = self.cfs_rq_of(sy);
        // v1 counts entities at the LCA (cfs_rq->nr_queued, 6.12's nr_running).
        let nr = self.cfs_rqs[cfs.idx()].nr_running;
        if nr <= 1 || self.ses[sy.idx()].slice == 0 {
            return;
        }
        // `if (se_y_lca != cfs_rq_common->curr) update_curr()`: never true here.
        let penalty = self.yield_deboost_calculate_penalty(cpu, sy, st_, y, p, nr);
        if self.yield_deboost_apply_penalty(sy, penalty, true) {
            self.yield_stats.deboosts_applied += 1;
        }
    }

    /// The seed's v2 `yield_to_deboost()` (patches 1-5 of 2025-12-19).
    pub(super) fn yield_to_deboost_v2(&mut self, cpu: CpuId, p: TaskId) {
        // yield_deboost_rate_limit(): the token is consumed when the check
        // passes, even if a later check fails.
        let now = self.now;
        let st = &mut self.yield_rq[cpu.idx()].deboost;
        if st.last_apply_ns != 0
            && now.wrapping_sub(st.last_apply_ns) <= self.yield_cfg.ratelimit_ns
        {
            self.yield_stats.deboosts_rate_limited += 1;
            return;
        }
        st.last_apply_ns = now;
        let Some(y) = self.rqs[cpu.idx()].curr else {
            return;
        };
        if y == p || self.tasks[p.idx()].cpu != cpu {
            return;
        }
        if !self.ses[self.eevdf_se(p).idx()].on_rq || !self.ses[self.eevdf_se(y).idx()].on_rq {
            return;
        }
        let (sy, st_) = self.find_matching_se(self.eevdf_se(y), self.eevdf_se(p));
        let cfs = self.cfs_rq_of(sy);
        let nr = self.cfs_rqs[cfs.idx()].h_nr_queued;
        if nr <= 1 {
            return;
        }
        let penalty = self.yield_deboost_calculate_penalty(cpu, sy, st_, y, p, nr);
        if self.yield_deboost_apply_penalty(sy, penalty, false) {
            self.yield_stats.deboosts_applied += 1;
        }
    }

    /// `yield_to_penalty()` (series v2, patch 0004 of `kernel/patches`,
    /// sched feature YIELD_TO_PENALTY): the `deboost` policy. Runs after
    /// `yield_task_fair()`, on its clock. Differences from v1/v2, each a
    /// review item of the cover letter: yielder and target in one cfs_rq are
    /// left to the forfeit and the buddy (M4); the cap counts
    /// `h_nr_runnable` (L); the state is the common ancestor's (L); the
    /// reverse pair is checked before the rate limit, passes it with the
    /// smaller penalty and takes no token (M1); the sum wraps (M2); the
    /// penalty is at most `yield_lag_room()` to the lag bound
    /// `calc_delta_fair(max(2 * slice, TICK_NSEC))` (H3).
    pub(super) fn yield_to_penalty(&mut self, cpu: CpuId, p: TaskId) -> DeboostResult {
        let Some(y) = self.rqs[cpu.idx()].curr else {
            return DeboostResult::Invalid;
        };
        let (se_y, se_t) = (self.eevdf_se(y), self.eevdf_se(p));
        if self.tasks[p.idx()].cpu != cpu
            || y == p
            || !self.ses[se_y.idx()].on_rq
            || !self.ses[se_t.idx()].on_rq
        {
            return DeboostResult::Invalid;
        }
        let (sy, st) = self.find_matching_se(se_y, se_t);
        if sy == se_y {
            return DeboostResult::SameCfsRq;
        }
        let cfs = self.cfs_rq_of(sy);
        let nr = self.cfs_rqs[cfs.idx()].h_nr_runnable;
        if nr <= 1 {
            return DeboostResult::SingleRunnable;
        }
        if self.cfs_rqs[cfs.idx()].curr != Some(sy) {
            return DeboostResult::Invalid;
        }
        let now = self.now;
        let (src, dst) = (Self::deboost_pid(y), Self::deboost_pid(p));
        let state = self.cfs_rqs[cfs.idx()].yield_penalty;
        let Some(reverse) = h::yield_penalty_admit_within(
            &state,
            src,
            dst,
            now,
            self.yield_cfg.ratelimit_ns,
            self.yield_cfg.debounce_ns,
        ) else {
            self.yield_stats.deboosts_rate_limited += 1;
            return DeboostResult::RateLimited;
        };
        self.update_curr(cfs);
        let avg = self.avg_vruntime(cfs);
        let e = &self.ses[sy.idx()];
        let gran = calc_delta_fair(self.cfg.base_slice(), &e.load);
        let need = h::yield_penalty_need(e.vruntime(), self.ses[st.idx()].vruntime());
        let penalty = h::yield_penalty_with(&self.yield_cfg.cap_halves, gran, need, nr, reverse);
        let limit = calc_delta_fair((2 * e.slice).max(self.cfg.tick_nsec()), &e.load);
        let room = yield_lag_room(e.vruntime(), avg, limit);
        let Some(v) = h::yield_penalty_new_vruntime(e.vruntime(), penalty.min(room)) else {
            return DeboostResult::NoRoom;
        };
        let e = &mut self.ses[sy.idx()];
        e.set_vruntime(v, VruntimeStep::YieldPolicy);
        e.deadline = v.wrapping_add(calc_delta_fair(e.slice, &e.load));
        h::yield_penalty_commit(
            &mut self.cfs_rqs[cfs.idx()].yield_penalty,
            src,
            dst,
            now,
            reverse,
        );
        self.yield_stats.deboosts_applied += 1;
        if reverse {
            self.yield_stats.deboosts_reverse += 1;
        }
        if room < penalty {
            self.yield_stats.deboosts_clamped += 1;
        }
        DeboostResult::Applied
    }
}
