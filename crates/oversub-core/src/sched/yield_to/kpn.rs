//! K Prateek Nayak's alternatives from the review of the seed's v1
//! (seed 000, Nov 11-13 2025):
//!
//! * `kpn-walk`: his hierarchical `yield_task_fair()`: forfeit the yielder's
//!   request level by level up the hierarchy while the entity is eligible,
//!   stopping at the first level with other runnable tasks below
//!   (`h_nr_runnable > 1`). It replaces the forfeit of `yield_task_fair()` for
//!   every caller (sched_yield and yield_to), as his diff does.
//! * `kpn-charge`: "compute the vlag and if it is behind the avg_vruntime,
//!   you account it to the 'target' task": our reading (docs/yield-policies.md)
//!   moves the yielder's positive lag at the common ancestor to the target's
//!   entity there, conserving Σ w·lag, so nobody outside the pair pays.

use crate::sched::entity::VruntimeStep;
use crate::sched::ids::{CfsRqId, CpuId, SeId, TaskId};
use crate::sched::weight::{calc_delta_fair, scale_load_down};
use crate::sched::Scheduler;

impl Scheduler {
    /// kpn-walk: the forfeit loop of his `yield_task_fair()`, from the
    /// yielder's leaf entity up (the leaf was charged by the caller).
    pub(super) fn yield_task_fair_kpn_walk(&mut self, leaf: SeId) {
        let mut s = Some(leaf);
        while let Some(se) = s {
            let cfs = self.cfs_rq_of(se);
            if !self.entity_eligible(cfs, se) {
                break;
            }
            let e = &mut self.ses[se.idx()];
            let d = e.deadline;
            e.set_vruntime(d, VruntimeStep::Forfeit);
            e.deadline = d.wrapping_add(calc_delta_fair(e.slice, &e.load));
            if self.cfs_rqs[cfs.idx()].h_nr_runnable > 1 {
                break;
            }
            s = self.parent_entity(se);
        }
    }

    /// Moves a queued (in-timeline) or running entity to a new vruntime,
    /// keeping its relative deadline and the queue's average exact.
    pub(super) fn yield_move_entity(&mut self, cfs: CfsRqId, se: SeId, v: u64) {
        let is_curr = self.cfs_rqs[cfs.idx()].curr == Some(se);
        if !is_curr {
            self.dequeue_from_timeline(cfs, se);
        }
        let e = &mut self.ses[se.idx()];
        let rel = e.deadline.wrapping_sub(e.vruntime());
        e.set_vruntime(v, VruntimeStep::YieldPolicy);
        e.deadline = v.wrapping_add(rel);
        if !is_curr {
            self.enqueue_into_timeline(cfs, se);
        }
    }

    /// kpn-charge (our reading): at the LCA, the yielder's positive lag (the
    /// service it is owed and gives up) is accounted to the target's entity,
    /// capped at the target's lag bound; the yielder ends at zero lag.
    pub(super) fn yield_to_kpn_charge(&mut self, cpu: CpuId, p: TaskId) {
        let Some(y) = self.rqs[cpu.idx()].curr else {
            return;
        };
        if y == p || self.tasks[p.idx()].cpu != cpu {
            return;
        }
        let (sy, st) = self.find_matching_se(self.eevdf_se(y), self.eevdf_se(p));
        let cfs = self.cfs_rq_of(sy);
        if self.cfs_rqs[cfs.idx()].curr == Some(sy) {
            self.update_curr(cfs);
        }
        let v = self.avg_vruntime(cfs);
        let lag_y = crate::sched::fair::vdiff(v, self.ses[sy.idx()].vruntime());
        if lag_y <= 0 || !self.ses[st.idx()].on_rq {
            return;
        }
        // Service owed to the yielder, in weight-scaled units, given to the
        // target: Δv_t = lag_y · w_y / w_t.
        let wy = scale_load_down(self.ses[sy.idx()].load.weight).max(1) as i128;
        let wt = scale_load_down(self.ses[st.idx()].load.weight).max(1) as i128;
        let credit = (lag_y as i128 * wy / wt) as i64;
        let lag_t = crate::sched::fair::vdiff(v, self.ses[st.idx()].vruntime());
        let e = &self.ses[st.idx()];
        let limit = calc_delta_fair((2 * e.slice).max(self.cfg.tick_nsec()), &e.load) as i64;
        let new_lag_t = (lag_t.saturating_add(credit)).min(limit);
        if new_lag_t <= lag_t {
            return;
        }
        // Only what the target could take is taken from the yielder.
        let given = ((new_lag_t - lag_t) as i128 * wt / wy) as i64;
        self.yield_move_entity(cfs, st, v.wrapping_sub(new_lag_t as u64));
        let vy = self.ses[sy.idx()].vruntime().wrapping_add(given as u64);
        self.yield_move_entity(cfs, sy, vy);
        self.yield_stats.credits += 1;
    }
}
