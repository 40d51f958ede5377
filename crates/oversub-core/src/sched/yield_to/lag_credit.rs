//! `lag-credit-v3`: our reading of the v3 cover letter (2026-06-12; only the
//! cover letter is public, semantics.md section 4). Walk the chain that
//! `set_next_buddy()` nominated; at each level where the target's entity is
//! not yet eligible with a margin, credit it up to a small positive lag
//! (`margin`, scaled with the runqueue depth, capped by `entity_lag()`'s
//! bound) by re-placing it: a queued entity through the
//! `requeue_delayed_entity()`-style dequeue/`place_entity()`/enqueue, the
//! running one shifted in place. Then force a local reschedule
//! (`cancel_protect_slice()` along the yielder's chain and `resched_curr()`),
//! only that being rate-limited (6 ms per rq). The margin function is not
//! public: ours is the lag that keeps the entity eligible for one base slice
//! of running against `nr` equal competitors, `calc_delta_fair(base_slice,
//! se) * (nr - 1) / nr` (docs/yield-policies.md).

use crate::sched::entity::VruntimeStep;
use crate::sched::ids::{CpuId, TaskId};
use crate::sched::weight::calc_delta_fair;
use crate::sched::Scheduler;

impl Scheduler {
    /// `yield_to_task_fair()`'s v3 lag credit (YIELD_TO_LAG_CREDIT).
    pub(super) fn yield_to_lag_credit(&mut self, cpu: CpuId, p: TaskId) {
        let base = self.cfg.base_slice();
        let tick = self.cfg.tick_nsec();
        let mut s = Some(self.eevdf_se(p));
        while let Some(se) = s {
            let cfs = self.cfs_rq_of(se);
            if self.cfs_rqs[cfs.idx()].next != Some(se) {
                break;
            }
            let nr = self.cfs_rqs[cfs.idx()].nr_running.max(1) as u64;
            let e = &self.ses[se.idx()];
            let margin = calc_delta_fair(base, &e.load) * (nr - 1) / nr;
            let limit = calc_delta_fair((2 * e.slice).max(tick), &e.load);
            let want = margin.min(limit) as i64;
            let v = self.avg_vruntime(cfs);
            let lag = crate::sched::fair::vdiff(v, self.ses[se.idx()].vruntime());
            if self.entity_eligible(cfs, se) && lag >= want {
                s = self.parent_entity(se);
                continue;
            }
            let is_curr = self.cfs_rqs[cfs.idx()].curr == Some(se);
            if is_curr {
                // The off-tree current entity: shift in place (with its
                // slice protection window).
                let nv = v.wrapping_sub(want as u64);
                let e = &mut self.ses[se.idx()];
                let delta = nv.wrapping_sub(e.vruntime());
                e.set_vruntime(nv, VruntimeStep::YieldPolicy);
                e.deadline = e.deadline.wrapping_add(delta);
                e.vprot = e.vprot.wrapping_add(delta);
            } else {
                // The canonical requeue: as requeue_delayed_entity() does.
                self.requeue_with_lag(cfs, se, want);
            }
            self.yield_stats.credits += 1;
            s = self.parent_entity(se);
        }
        // Forced local reschedule, rate-limited once per window per rq.
        let now = self.now;
        let last = self.yield_rq[cpu.idx()].last_forced_resched;
        if last != 0 && now.wrapping_sub(last) <= self.yield_cfg.ratelimit_ns {
            self.yield_stats.deboosts_rate_limited += 1;
            return;
        }
        self.yield_rq[cpu.idx()].last_forced_resched = now.max(1);
        if let Some(y) = self.rqs[cpu.idx()].curr {
            let mut s = Some(self.eevdf_se(y));
            while let Some(se) = s {
                self.cancel_protect_slice(se);
                s = self.parent_entity(se);
            }
        }
        self.resched_curr(cpu);
    }
}
