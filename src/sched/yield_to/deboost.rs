//! The yield_to() "vCPU debooster": the seed's v1 and v2 (semantics.md
//! sections 1 and 3, defects included) and the form `kernel/patches`
//! implements (patch 0004, helpers in `deboost_helpers`). All three push the
//! yielder's entity at the common ancestor (LCA) of yielder and target back in
//! vruntime, before `yield_task_fair()`.
//!
//! The seed's functions (`yield_deboost_*`) follow the seed's control flow:
//! v1 refreshes the rate-limit stamp on every call and runs it before the
//! same-rq check; v2 consumes the token whenever the check passes; both
//! compare vruntimes unsigned and never call `update_curr()` (the inverted
//! `se_y_lca != cfs_rq->curr` test); v1 also writes `vlag` on the running
//! entity (on 6.12, where vlag holds RUN_TO_PARITY's stash, that ends the
//! protection).

use super::deboost_helpers as h;
use crate::sched::entity::VruntimeStep;
use crate::sched::ids::{CpuId, SeId, TaskId};
use crate::sched::weight::calc_delta_fair;
use crate::sched::Scheduler;

/// Result of one debooster decision (the kernel tracepoint's `result`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeboostResult {
    Applied,
    RateLimited,
    Invalid,
    SingleQueued,
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
        let maxp = h::vcpu_deboost_cap_with(&self.yield_cfg.cap_halves, nr, gran);
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
        if y == p || !self.ses[self.tasks[y.idx()].se.idx()].on_rq {
            return;
        }
        if !self.ses[self.tasks[p.idx()].se.idx()].on_rq || self.tasks[p.idx()].cpu != cpu {
            return;
        }
        let (sy, st_) = self.find_matching_se(self.tasks[y.idx()].se, self.tasks[p.idx()].se);
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
        if !self.ses[self.tasks[p.idx()].se.idx()].on_rq
            || !self.ses[self.tasks[y.idx()].se.idx()].on_rq
        {
            return;
        }
        let (sy, st_) = self.find_matching_se(self.tasks[y.idx()].se, self.tasks[p.idx()].se);
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

    /// `yield_to_deboost()` as `kernel/patches` (0004) implements it.
    pub(super) fn yield_to_deboost(&mut self, cpu: CpuId, p: TaskId) -> DeboostResult {
        let Some(y) = self.rqs[cpu.idx()].curr else {
            return DeboostResult::Invalid;
        };
        let (se_y, se_t) = (self.tasks[y.idx()].se, self.tasks[p.idx()].se);
        if y == p
            || self.tasks[p.idx()].cpu != cpu
            || !self.ses[se_y.idx()].on_rq
            || !self.ses[se_t.idx()].on_rq
        {
            return DeboostResult::Invalid;
        }
        let (sy, st) = self.find_matching_se(se_y, se_t);
        let cfs = self.cfs_rq_of(sy);
        let nr = self.cfs_rqs[cfs.idx()].h_nr_queued;
        if nr <= 1 {
            return DeboostResult::SingleQueued;
        }
        if self.cfs_rqs[cfs.idx()].curr != Some(sy) {
            return DeboostResult::Invalid;
        }
        let now = self.now;
        let window = self.yield_cfg.ratelimit_ns;
        if h::vcpu_deboost_rate_limited_within(&self.yield_rq[cpu.idx()].deboost, now, window) {
            self.yield_stats.deboosts_rate_limited += 1;
            return DeboostResult::RateLimited;
        }
        self.update_curr(cfs);
        let gran = calc_delta_fair(self.cfg.base_slice(), &self.ses[sy.idx()].load);
        let need =
            h::vcpu_deboost_need(self.ses[sy.idx()].vruntime(), self.ses[st.idx()].vruntime());
        let (src, dst) = (Self::deboost_pid(y), Self::deboost_pid(p));
        let reverse = h::vcpu_deboost_reverse_pair_within(
            &self.yield_rq[cpu.idx()].deboost,
            src,
            dst,
            now,
            self.yield_cfg.debounce_ns,
        );
        let penalty =
            h::vcpu_deboost_penalty_with(&self.yield_cfg.cap_halves, gran, need, nr, reverse);
        let Some(v) = h::vcpu_deboost_new_vruntime(self.ses[sy.idx()].vruntime(), penalty) else {
            return DeboostResult::Invalid;
        };
        let e = &mut self.ses[sy.idx()];
        e.set_vruntime(v, VruntimeStep::YieldPolicy);
        e.deadline = v.wrapping_add(calc_delta_fair(e.slice, &e.load));
        h::vcpu_deboost_commit(&mut self.yield_rq[cpu.idx()].deboost, src, dst, now);
        self.yield_stats.deboosts_applied += 1;
        DeboostResult::Applied
    }
}
