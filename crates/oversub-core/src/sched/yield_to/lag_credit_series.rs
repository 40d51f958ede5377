//! `lag-credit`: the lag credit exactly as `kernel/patches` implements it,
//! `yield_to_lag_credit()` of patch 0005 (sched feature YIELD_TO_LAG_CREDIT,
//! off by default in the series, kept for comparison), run after
//! `yield_task_fair()` on its clock like the series' other policies.
//!
//! From the target's entity up to the common ancestor (LCA) of yielder and
//! target, every entity that is queued, not its cfs_rq's `curr` and ahead of
//! `avg_vruntime()` (`vruntime - avg > 0`) is moved back by
//! `min(vruntime - avg, calc_delta_fair(max(2 * slice, TICK_NSEC)))` (to lag 0
//! at most, never past the lag bound): vruntime and deadline shift by the
//! credit, through a plain `__dequeue_entity()`/`__enqueue_entity()` so the
//! timeline and the average stay exact. The whole credit is refused while the
//! LCA cfs_rq's `yield_penalty` token is taken (6 ms, inclusive); if any level
//! was credited the token is taken and `resched_curr()` called. Nothing is
//! charged back. `lag-credit-v3` (lag_credit.rs) is our reading of the v3
//! cover letter instead; docs/yield-policies.md lists how the two differ.

use super::deboost_helpers as h;
use crate::sched::entity::VruntimeStep;
use crate::sched::fair::vdiff;
use crate::sched::ids::{CpuId, TaskId};
use crate::sched::weight::calc_delta_fair;
use crate::sched::Scheduler;

impl Scheduler {
    /// `yield_to_lag_credit()` (patch 0005): the number of levels credited.
    pub(super) fn yield_to_lag_credit_series(&mut self, cpu: CpuId, p: TaskId) -> u64 {
        let Some(y) = self.rqs[cpu.idx()].curr else {
            return 0;
        };
        if self.tasks[p.idx()].cpu != cpu || y == p {
            return 0;
        }
        let se_t = self.eevdf_se(p);
        let (_, lca_t) = self.find_matching_se(self.eevdf_se(y), se_t);
        let state_cfs = self.cfs_rq_of(lca_t);
        let now = self.now;
        if h::yield_penalty_rate_limited_within(
            &self.cfs_rqs[state_cfs.idx()].yield_penalty,
            now,
            self.yield_cfg.ratelimit_ns,
        ) {
            self.yield_stats.deboosts_rate_limited += 1;
            return 0;
        }
        let tick = self.cfg.tick_nsec();
        let mut levels = 0;
        let mut s = Some(se_t);
        while let Some(se) = s {
            let cfs = self.cfs_rq_of(se);
            let d = vdiff(self.ses[se.idx()].vruntime(), self.avg_vruntime(cfs));
            if self.ses[se.idx()].on_rq && self.cfs_rqs[cfs.idx()].curr != Some(se) && d > 0 {
                let e = &self.ses[se.idx()];
                let limit = calc_delta_fair((2 * e.slice).max(tick), &e.load);
                let credit = (d as u64).min(limit);
                self.dequeue_from_timeline(cfs, se);
                let e = &mut self.ses[se.idx()];
                let v = e.vruntime().wrapping_sub(credit);
                e.set_vruntime(v, VruntimeStep::YieldPolicy);
                e.deadline = e.deadline.wrapping_sub(credit);
                self.enqueue_into_timeline(cfs, se);
                levels += 1;
            }
            if se == lca_t {
                break;
            }
            s = self.parent_entity(se);
        }
        if levels > 0 {
            h::yield_penalty_commit(
                &mut self.cfs_rqs[state_cfs.idx()].yield_penalty,
                y.0 as i64,
                p.0 as i64,
                now,
                false,
            );
            self.yield_stats.credits += levels;
            self.resched_curr(cpu);
        }
        levels
    }
}
