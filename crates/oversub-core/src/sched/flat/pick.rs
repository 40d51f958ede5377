//! sched/flat `update_curr()`, pick, `put_prev`/`set_next` and tick (our
//! reading of the v3 description, on 6.12.117): EEVDF picks once, on the
//! single runqueue, among task entities; the hierarchy's current entities
//! (`h_curr`) are still put and set level by level for load tracking.

use super::Flat;
use crate::sched::fair::{DEQUEUE_DELAYED, DEQUEUE_SLEEP};
use crate::sched::ids::{CfsRqId, CpuId, SeId, TaskId};
use crate::sched::load_avg::UPDATE_TG;

impl Flat<'_> {
    /// `update_curr()` (sched/flat): whatever queue the caller names, the
    /// running entity is charged on its CPU's flat queue (the hierarchy
    /// queues carry no virtual time); its run time is copied to the task's
    /// hierarchy entity.
    pub fn update_curr(&mut self, cfs: CfsRqId) {
        let cpu = self.cfs_rqs[cfs.idx()].cpu;
        let f = self.rq_of(cpu);
        self.update_curr_eevdf(f);
        self.mirror_curr(f);
    }

    /// Copies the flat curr's run-time accounting to its hierarchy entity.
    #[inline]
    fn mirror_curr(&mut self, f: CfsRqId) {
        let Some(c) = self.cfs_rqs[f.idx()].curr else {
            return;
        };
        let Some(t) = self.ses[c.idx()].task else {
            return;
        };
        let h = self.tasks[t.idx()].se;
        let (sum, start, prev) = {
            let e = &self.ses[c.idx()];
            (e.sum_exec_runtime, e.exec_start, e.prev_sum_exec_runtime)
        };
        let he = &mut self.ses[h.idx()];
        he.sum_exec_runtime = sum;
        he.exec_start = start;
        he.prev_sum_exec_runtime = prev;
    }

    /// `pick_next_entity()` on the flat queue: an eligible (or borrowed)
    /// buddy under PICK_BUDDY, else `pick_eevdf()`.
    fn pick_next_entity(&self, f: CfsRqId) -> Option<SeId> {
        if !self.feat.buddy_in_pick_eevdf && self.feat.honour_buddy() {
            if let Some(n) = self.cfs_rqs[f.idx()].next {
                if self.cfs_rqs[f.idx()].next_borrowed || self.entity_eligible(f, n) {
                    return Some(n);
                }
            }
        }
        self.pick_eevdf(f)
    }

    /// `pick_task_fair()` (sched/flat): one pick on the flat queue; a picked
    /// delayed task is dequeued for good and the pick retried.
    pub fn pick_task_fair(&mut self, cpu: CpuId) -> Option<TaskId> {
        let f = self.rq_of(cpu);
        loop {
            if self.cfs_rqs[f.idx()].nr_running == 0 {
                return None;
            }
            if self.queued_curr(f).is_some() {
                self.update_curr(f);
            }
            let se = self.pick_next_entity(f)?;
            let t = self.ses[se.idx()]
                .task
                .expect("a flat queue holds tasks only");
            if self.ses[se.idx()].sched_delayed {
                self.dequeue_task(t, DEQUEUE_SLEEP | DEQUEUE_DELAYED);
                continue;
            }
            return Some(t);
        }
    }

    /// `put_prev_entity()` of a hierarchy entity: no longer `h_curr`.
    fn put_prev_hier(&mut self, cfs: CfsRqId, prev: SeId) {
        if self.ses[prev.idx()].on_rq {
            self.update_load_avg(cfs, prev, 0);
        }
        self.cfs_rqs[cfs.idx()].curr = None;
    }

    /// `set_next_entity()` of a hierarchy entity: becomes `h_curr`.
    fn set_next_hier(&mut self, cfs: CfsRqId, se: SeId) {
        if self.ses[se.idx()].on_rq {
            self.update_load_avg(cfs, se, UPDATE_TG);
        }
        self.cfs_rqs[cfs.idx()].curr = Some(se);
    }

    /// `put_prev_entity()` on the flat queue: back into the timeline.
    fn put_prev_flat(&mut self, f: CfsRqId, prev: SeId) {
        if self.ses[prev.idx()].on_rq {
            self.update_curr(f);
            self.enqueue_into_timeline(f, prev);
        }
        self.cfs_rqs[f.idx()].curr = None;
    }

    /// `set_next_entity()` on the flat queue, after the effective weight is
    /// recomputed (`set_next_task` is one of the description's three
    /// points): out of the timeline, curr, slice protection started.
    fn set_next_flat(&mut self, p: TaskId) {
        let se = self.fse(p);
        let f = self.cfs_rq_of(se);
        if self.ses[se.idx()].on_rq {
            self.update_h_load(p);
        }
        self.clear_buddies(f, se);
        if self.ses[se.idx()].on_rq {
            self.dequeue_from_timeline(f, se);
            self.set_protect_slice(f, se);
        }
        self.cfs_rqs[f.idx()].curr = Some(se);
        let now = self.now;
        let e = &mut self.ses[se.idx()];
        e.exec_start = now;
        e.prev_sum_exec_runtime = e.sum_exec_runtime;
        self.mirror_curr(f);
    }

    /// `pick_next_task_fair()` (sched/flat) minus the newidle balance: the
    /// pick, then prev put back and next set, on the flat queue and on the
    /// hierarchy levels that differ.
    pub fn pick_next_task_fair(&mut self, cpu: CpuId, prev: Option<TaskId>) -> Option<TaskId> {
        let p = self.pick_task_fair(cpu)?;
        match prev {
            Some(prev) if prev != p => {
                crate::sched::fair::switch_levels(
                    self,
                    p,
                    prev,
                    Self::put_prev_hier,
                    Self::set_next_hier,
                );
                let f = self.rq_of(cpu);
                let fprev = self.fse(prev);
                self.put_prev_flat(f, fprev);
                self.set_next_flat(p);
                self.cfs_tasks_move_to_head(cpu, p);
                self.hrtick_start_fair(cpu, p);
            }
            Some(_) => {}
            None => self.set_next_task_fair(cpu, p),
        }
        Some(p)
    }

    /// `put_prev_task_fair()` (sched/flat).
    pub fn put_prev_task_fair(&mut self, prev: TaskId) {
        let mut s = Some(self.tasks[prev.idx()].se);
        while let Some(e) = s {
            let cfs = self.cfs_rq_of(e);
            self.put_prev_hier(cfs, e);
            s = self.parent_entity(e);
        }
        let fse = self.fse(prev);
        let f = self.cfs_rq_of(fse);
        self.put_prev_flat(f, fse);
    }

    /// `set_next_task_fair()` (sched/flat).
    pub fn set_next_task_fair(&mut self, cpu: CpuId, p: TaskId) {
        self.cfs_tasks_move_to_head(cpu, p);
        let mut s = Some(self.tasks[p.idx()].se);
        while let Some(e) = s {
            let cfs = self.cfs_rq_of(e);
            self.set_next_hier(cfs, e);
            s = self.parent_entity(e);
        }
        self.set_next_flat(p);
        self.hrtick_start_fair(cpu, p);
    }

    /// `task_tick_fair()` (sched/flat): charge curr on the flat queue, tick
    /// the hierarchy (load average, group shares), then recompute curr's
    /// effective weight (tick is one of the description's three points).
    /// `queued` is the HRTICK expiry: reschedule outright.
    pub fn task_tick_fair(&mut self, cpu: CpuId, curr: TaskId, queued: bool) {
        let f = self.rq_of(cpu);
        self.update_curr(f);
        let mut s = Some(self.tasks[curr.idx()].se);
        while let Some(e) = s {
            let cfs = self.cfs_rq_of(e);
            self.update_load_avg(cfs, e, UPDATE_TG);
            self.update_cfs_group(e);
            if queued {
                self.resched_curr(cpu);
                return;
            }
            s = self.parent_entity(e);
        }
        if self.ses[self.fse(curr).idx()].on_rq {
            self.update_h_load(curr);
        }
    }
}
