//! sched/flat's effective weight (our reading of the v3 description): a
//! task's weight on the single runqueue is its share of the root, the
//! hierarchical fraction `se->load / cfs_rq->load` taken down its path,
//! i.e. its own weight times, at each group level, the group entity's weight
//! over the group queue's load (`se->h_load`); and the re-weighting of an
//! entity on the flat queue, which keeps its lag as `reweight_entity()` does.
//!
//! When (the description): on enqueue, `set_next_task` and tick, each time
//! for the task concerned only. Queued tasks whose groups' loads change keep
//! their weight until one of those events (docs/model.md).

use super::Flat;
use crate::sched::group::mul_div;
use crate::sched::ids::{SeId, TaskId};
use crate::sched::weight::{scale_load, MIN_SHARES};
use crate::sched::Scheduler;

impl Scheduler {
    /// `se->h_load` of sched/flat: the task's weight times, for each group
    /// between it and the root, group entity weight / group queue load (a
    /// queue without load leaves the fraction as it is). At least
    /// `scale_load(MIN_SHARES)`, the smallest group weight.
    pub fn flat_task_h_load(&self, p: TaskId) -> u64 {
        let se = self.tasks[p.idx()].se;
        let mut w = self.ses[se.idx()].load.weight as u128;
        let mut cfs = self.cfs_rq_of(se);
        while let Some(g) = self.cfs_rqs[cfs.idx()].owner {
            let load = self.cfs_rqs[cfs.idx()].load.weight as u128;
            if let Some(x) = (w * self.ses[g.idx()].load.weight as u128).checked_div(load) {
                w = x;
            }
            cfs = self.cfs_rq_of(g);
        }
        (w.min(u64::MAX as u128) as u64).max(scale_load(MIN_SHARES))
    }
}

impl Flat<'_> {
    /// Gives `p`'s flat entity its current effective weight.
    pub(super) fn update_h_load(&mut self, p: TaskId) {
        let w = self.flat_task_h_load(p);
        let se = self.fse(p);
        self.reweight_flat_entity(se, w);
    }

    /// `reweight_entity()` of an entity on the flat queue (6.12.117's
    /// EEVDF part): a queued entity keeps its lag and relative deadline
    /// (`reweight_eevdf()`), a dequeued one has its lag scaled.
    pub(super) fn reweight_flat_entity(&mut self, se: SeId, weight: u64) {
        let old = self.ses[se.idx()].load.weight;
        if old == weight {
            return;
        }
        let cfs = self.cfs_rq_of(se);
        if !self.ses[se.idx()].on_rq {
            let e = &mut self.ses[se.idx()];
            e.vlag = mul_div(e.vlag, old as i64, weight as i64);
            e.load.set(weight);
            return;
        }
        let is_curr = self.cfs_rqs[cfs.idx()].curr == Some(se);
        self.update_curr(cfs);
        let avruntime = self.avg_vruntime(cfs);
        if !is_curr {
            self.dequeue_from_timeline(cfs, se);
        }
        self.cfs_rqs[cfs.idx()].load.sub(old);
        if is_curr && self.feat.vprot_in_vlag {
            // As group.rs: update_entity_lag() writes the vlag/vprot union.
            self.ses[se.idx()].vprot = self.entity_lag(avruntime, se) as u64;
        }
        self.reweight_eevdf(se, avruntime, weight);
        self.ses[se.idx()].load.set(weight);
        self.cfs_rqs[cfs.idx()].load.add(weight);
        if !is_curr {
            self.enqueue_into_timeline(cfs, se);
        }
    }

    /// `reweight_entity()` of a hierarchy entity (a group's, from
    /// `update_cfs_group()`): its weight in its queue's load and its load
    /// average follow; no EEVDF state (the hierarchy queues have none).
    pub fn reweight_entity(&mut self, cfs: crate::sched::CfsRqId, se: SeId, weight: u64) {
        let on_rq = self.ses[se.idx()].on_rq;
        if on_rq {
            let w = self.ses[se.idx()].load.weight;
            self.cfs_rqs[cfs.idx()].load.sub(w);
        }
        self.dequeue_load_avg(cfs, se);
        self.ses[se.idx()].load.set(weight);
        {
            let e = &mut self.ses[se.idx()];
            let divider = crate::sched::pelt::get_pelt_divider(&e.avg);
            e.avg.load_avg = (crate::sched::weight::scale_load_down(weight) as u128
                * e.avg.load_sum as u128
                / divider as u128) as u64;
        }
        self.enqueue_load_avg(cfs, se);
        if on_rq {
            self.cfs_rqs[cfs.idx()].load.add(weight);
        }
    }
}
