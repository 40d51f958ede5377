//! Linux 6.1 (CFS): choosing the next entity: `pick_next_entity()` (leftmost
//! vruntime, then the SKIP, NEXT and LAST buddies in 6.1's order, each
//! honoured only within `wakeup_gran()` of the leftmost),
//! `set_next_entity()`, `put_prev_entity()` and the hierarchy walk of
//! `pick_next_task_fair()`.

use super::Cfs;
use crate::sched::fair::vdiff;
use crate::sched::ids::{CfsRqId, CpuId, SeId, TaskId};
use crate::sched::load_avg::UPDATE_TG;

impl Cfs<'_> {
    /// `entity_before()` (6.1): earlier vruntime.
    #[inline]
    pub fn entity_before(&self, a: SeId, b: SeId) -> bool {
        vdiff(self.ses[a.idx()].vruntime(), self.ses[b.idx()].vruntime()) < 0
    }

    /// `__pick_next_entity()`: the entity after `se` in the timeline.
    fn __pick_next_entity(&self, cfs: CfsRqId, se: SeId) -> Option<SeId> {
        let q = &self.cfs_rqs[cfs.idx()].queued;
        let i = q.iter().position(|&s| s == se)?;
        q.get(i + 1).copied()
    }

    /// Linux 6.1 (CFS): `pick_next_entity(cfs_rq, curr)`: the leftmost of
    /// the timeline and a queued `curr`; if that is the skip buddy, the
    /// second one instead unless it is more than `wakeup_gran` behind; then
    /// the next buddy, else the last buddy, if it is not more than
    /// `wakeup_gran` ahead of the leftmost (`wakeup_preempt_entity() < 1`).
    pub fn pick_next_entity(&self, cfs: CfsRqId, curr: Option<SeId>) -> Option<SeId> {
        let mut left = self.timeline_first(cfs);
        if let Some(c) = curr {
            if left.is_none_or(|l| self.entity_before(c, l)) {
                left = Some(c);
            }
        }
        let left = left?;
        let mut se = left;
        let q = &self.cfs_rqs[cfs.idx()];
        if q.skip == Some(se) {
            let second = if Some(se) == curr {
                self.timeline_first(cfs)
            } else {
                match (self.__pick_next_entity(cfs, se), curr) {
                    (None, c) => c,
                    (Some(s), Some(c)) if self.entity_before(c, s) => Some(c),
                    (s, _) => s,
                }
            };
            if let Some(second) = second {
                if self.wakeup_preempt_entity(second, left) < 1 {
                    se = second;
                }
            }
        }
        if let Some(n) = q.next.filter(|&n| self.wakeup_preempt_entity(n, left) < 1) {
            se = n;
        } else if let Some(l) = q.last.filter(|&l| self.wakeup_preempt_entity(l, left) < 1) {
            se = l;
        }
        Some(se)
    }

    /// Linux 6.1 (CFS): `set_next_entity()`: clear its buddies, take it out
    /// of the timeline and make it curr; its slice starts now.
    pub fn set_next_entity(&mut self, cfs: CfsRqId, se: SeId) {
        self.clear_buddies(cfs, se);
        if self.ses[se.idx()].on_rq {
            self.dequeue_from_timeline(cfs, se);
            self.update_load_avg(cfs, se, UPDATE_TG);
        }
        self.cfs_rqs[cfs.idx()].curr = Some(se);
        let now = self.now;
        let e = &mut self.ses[se.idx()];
        e.exec_start = now;
        e.prev_sum_exec_runtime = e.sum_exec_runtime;
    }

    /// Linux 6.1 (CFS): `put_prev_entity()`: charge it and put it back in
    /// the timeline if still queued.
    pub fn put_prev_entity(&mut self, cfs: CfsRqId, prev: SeId) {
        if self.ses[prev.idx()].on_rq {
            self.update_curr(cfs);
            self.enqueue_into_timeline(cfs, prev);
            self.update_load_avg(cfs, prev, 0);
        }
        self.cfs_rqs[cfs.idx()].curr = None;
    }

    /// Linux 6.1 (CFS): the pick walk of `pick_next_task_fair()`: from the
    /// root down, `pick_next_entity()` with the level's queued curr.
    pub fn pick_task_fair(&mut self, cpu: CpuId) -> Option<TaskId> {
        let mut cfs = self.rqs[cpu.idx()].cfs;
        if self.cfs_rqs[cfs.idx()].nr_running == 0 {
            return None;
        }
        loop {
            let curr = self.cfs_rqs[cfs.idx()]
                .curr
                .filter(|c| self.ses[c.idx()].on_rq);
            if curr.is_some() {
                self.update_curr(cfs);
            }
            let se = self.pick_next_entity(cfs, curr)?;
            match self.ses[se.idx()].my_q {
                Some(q) => cfs = q,
                None => return self.ses[se.idx()].task,
            }
        }
    }

    /// Linux 6.1 (CFS): `pick_next_task_fair()` minus the newidle balance
    /// (done by the caller): pick, then `put_prev_entity()` /
    /// `set_next_entity()` on the levels where prev and next differ.
    pub fn pick_next_task_fair(&mut self, cpu: CpuId, prev: Option<TaskId>) -> Option<TaskId> {
        let p = self.pick_task_fair(cpu)?;
        match prev {
            Some(prev) if prev != p => {
                crate::sched::fair::switch_levels(
                    self,
                    p,
                    prev,
                    Self::put_prev_entity,
                    Self::set_next_entity,
                );
                self.cfs_tasks_move_to_head(cpu, p);
            }
            Some(_) => {}
            None => self.set_next_task_fair(cpu, p),
        }
        Some(p)
    }

    /// Linux 6.1 (CFS): `put_prev_task_fair()`.
    pub fn put_prev_task_fair(&mut self, prev: TaskId) {
        let mut s = Some(self.tasks[prev.idx()].se);
        while let Some(e) = s {
            let cfs = self.cfs_rq_of(e);
            self.put_prev_entity(cfs, e);
            s = self.parent_entity(e);
        }
    }

    /// Linux 6.1 (CFS): `set_next_task_fair()`.
    pub fn set_next_task_fair(&mut self, cpu: CpuId, p: TaskId) {
        self.cfs_tasks_move_to_head(cpu, p);
        let mut s = Some(self.tasks[p.idx()].se);
        while let Some(e) = s {
            let cfs = self.cfs_rq_of(e);
            self.set_next_entity(cfs, e);
            s = self.parent_entity(e);
        }
    }
}
