//! Picking the next task: `pick_eevdf()`, `pick_next_entity()`,
//! `set_next_entity()`/`put_prev_entity()`, `pick_task_fair()`,
//! `pick_next_task_fair()`, `put_prev_task_fair()`, `set_next_task_fair()`
//! of kernel/sched/fair.c, Linux 6.12.117.

use super::*;

impl Scheduler {
    /// `pick_eevdf()` (6.12.117): the eligible entity with the earliest virtual
    /// deadline; curr kept under RUN_TO_PARITY while its slice is protected.
    /// With PICK_BUDDY_IN_PICK_EEVDF (v6.19) an eligible buddy is returned right
    /// after the single-entity shortcut.
    ///
    /// The single-entity shortcut is inlined into the callers (most levels
    /// of a hierarchy walk hold one entity); the rest is `pick_eevdf_queue()`.
    #[inline]
    pub fn pick_eevdf(&self, cfs: CfsRqId) -> Option<SeId> {
        self.__pick_eevdf(cfs, true)
    }

    /// `__pick_eevdf()` (v6.17, 9de74a9850b9): `pick_eevdf()` with curr's
    /// slice protection honoured only if `protect`.
    #[inline]
    #[allow(non_snake_case)]
    pub fn __pick_eevdf(&self, cfs: CfsRqId, protect: bool) -> Option<SeId> {
        let q = &self.cfs_rqs[cfs.idx()];
        if q.nr_running == 1 {
            return match q.curr {
                Some(c) if self.ses[c.idx()].on_rq => Some(c),
                _ => self.first_entity(cfs),
            };
        }
        self.pick_eevdf_queue(cfs, protect)
    }

    /// `pick_eevdf()` past its single-entity shortcut.
    #[inline(never)]
    pub(super) fn pick_eevdf_queue(&self, cfs: CfsRqId, protect: bool) -> Option<SeId> {
        let q = &self.cfs_rqs[cfs.idx()];
        let mut curr = q.curr;
        if self.feat.buddy_in_pick_eevdf && self.feat.pick_buddy {
            if let Some(n) = q.next {
                if q.next_borrowed || self.entity_eligible(cfs, n) {
                    return Some(n);
                }
            }
        }
        if let Some(c) = curr {
            if !self.ses[c.idx()].on_rq || !self.entity_eligible(cfs, c) {
                curr = None;
            }
        }
        let parity = self.feat.run_to_parity || self.feat.vprot;
        if let Some(c) = curr {
            if parity && protect && self.protect_slice(c) {
                return Some(c);
            }
        }
        // Earliest deadline among eligible queued entities (tree order on
        // ties): the first eligible one of the timeline.
        let sums = self.eligibility_sums(cfs);
        let best = q
            .queued
            .iter()
            .copied()
            .find(|&s| self.eligible_with(cfs, sums, self.ses[s.idx()].vruntime()));
        match (best, curr) {
            (None, c) => c,
            (Some(b), Some(c)) if self.entity_before(c, b) => Some(c),
            (b, _) => b,
        }
    }

    /// `entity_before()`: earlier deadline.
    #[inline]
    pub fn entity_before(&self, a: SeId, b: SeId) -> bool {
        vdiff(self.ses[a.idx()].deadline, self.ses[b.idx()].deadline) < 0
    }

    /// rb-tree order: deadline, then insertion order.
    /// Linux 6.1 (CFS): vruntime, then insertion order.
    #[inline]
    pub fn tree_before(&self, a: SeId, b: SeId) -> bool {
        let (ea, eb) = (&self.ses[a.idx()], &self.ses[b.idx()]);
        let d = if self.class.orders_by_deadline() {
            vdiff(ea.deadline, eb.deadline)
        } else {
            vdiff(ea.vruntime(), eb.vruntime())
        };
        d < 0 || (d == 0 && ea.enqueue_seq < eb.enqueue_seq)
    }

    /// `__pick_first_entity()`: leftmost of the timeline.
    pub(super) fn first_entity(&self, cfs: CfsRqId) -> Option<SeId> {
        self.timeline_first(cfs)
    }

    /// `set_next_entity()`: take the entity out of the timeline, make it curr and
    /// start its slice protection.
    pub(super) fn set_next_entity(&mut self, cfs: CfsRqId, se: SeId) {
        self.clear_buddies(cfs, se);
        if self.ses[se.idx()].on_rq {
            self.__dequeue_entity(cfs, se);
            self.update_load_avg(cfs, se, UPDATE_TG);
            self.set_protect_slice(cfs, se);
        }
        self.cfs_rqs[cfs.idx()].curr = Some(se);
        let now = self.now;
        let e = &mut self.ses[se.idx()];
        // update_stats_curr_start()
        e.exec_start = now;
        e.prev_sum_exec_runtime = e.sum_exec_runtime;
    }

    /// `put_prev_entity()`.
    pub(super) fn put_prev_entity(&mut self, cfs: CfsRqId, prev: SeId) {
        if self.ses[prev.idx()].on_rq {
            self.update_curr(cfs);
            self.__enqueue_entity(cfs, prev);
            self.update_load_avg(cfs, prev, 0);
        }
        self.cfs_rqs[cfs.idx()].curr = None;
    }

    /// `pick_next_entity()` (6.12.117): an eligible buddy under PICK_BUDDY (6.12.0:
    /// under NEXT_BUDDY), else `pick_eevdf()`; a picked delayed entity is
    /// dequeued for good and None returned (the caller retries).
    pub(super) fn pick_next_entity(&mut self, cfs: CfsRqId) -> Option<SeId> {
        if !self.feat.buddy_in_pick_eevdf && self.feat.honour_buddy() {
            if let Some(n) = self.cfs_rqs[cfs.idx()].next {
                // borrow (docs/design.md): a granted buddy is honoured
                // although ineligible.
                if self.cfs_rqs[cfs.idx()].next_borrowed || self.entity_eligible(cfs, n) {
                    return Some(n);
                }
            }
        }
        let se = self.pick_eevdf(cfs)?;
        if self.ses[se.idx()].sched_delayed {
            let cpu = self.cpu_of(cfs);
            self.dequeue_entities(cpu, se, DEQUEUE_SLEEP | DEQUEUE_DELAYED);
            return None;
        }
        Some(se)
    }

    /// `pick_task_fair()`: walk down from the root cfs_rq picking at each level.
    pub(in crate::sched) fn pick_task_eevdf(&mut self, cpu: CpuId) -> Option<TaskId> {
        'again: loop {
            let mut cfs = self.rqs[cpu.idx()].cfs;
            if self.cfs_rqs[cfs.idx()].nr_running == 0 {
                return None;
            }
            loop {
                if self.queued_curr(cfs).is_some() {
                    self.update_curr(cfs);
                }
                let Some(se) = self.pick_next_entity(cfs) else {
                    continue 'again;
                };
                match self.ses[se.idx()].my_q {
                    Some(q) => cfs = q,
                    None => return self.ses[se.idx()].task,
                }
            }
        }
    }

    /// `pick_next_task_fair()` minus the newidle balance (done by the caller):
    /// pick, then put_prev/set_next only on the levels that differ.
    pub(in crate::sched) fn pick_next_task_eevdf(
        &mut self,
        cpu: CpuId,
        prev: Option<TaskId>,
    ) -> Option<TaskId> {
        let p = self.pick_task_fair(cpu)?;
        match prev {
            Some(prev) if prev != p => {
                switch_levels(self, p, prev, Self::put_prev_entity, Self::set_next_entity);
                self.cfs_tasks_move_to_head(cpu, p);
                self.hrtick_start_fair(cpu, p);
            }
            Some(_) => {}
            None => {
                self.set_next_task_fair(cpu, p);
            }
        }
        Some(p)
    }

    /// `put_prev_task_fair()`.
    pub(in crate::sched) fn put_prev_task_eevdf(&mut self, prev: TaskId) {
        let mut s = Some(self.tasks[prev.idx()].se);
        while let Some(e) = s {
            let cfs = self.cfs_rq_of(e);
            self.put_prev_entity(cfs, e);
            s = self.parent_entity(e);
        }
    }

    /// `__set_next_task_fair()`'s list move: the picked task goes to the
    /// head of `rq->cfs_tasks` (most recently used).
    pub(in crate::sched) fn cfs_tasks_move_to_head(&mut self, cpu: CpuId, p: TaskId) {
        let list = &mut self.rqs[cpu.idx()].cfs_tasks;
        if list.last() == Some(&p) {
            return;
        }
        if let Some(i) = list.iter().rposition(|&x| x == p) {
            list.remove(i);
            list.push(p);
        }
    }

    /// `set_next_task_fair()`.
    pub(in crate::sched) fn set_next_task_eevdf(&mut self, cpu: CpuId, p: TaskId) {
        self.cfs_tasks_move_to_head(cpu, p);
        let mut s = Some(self.tasks[p.idx()].se);
        while let Some(e) = s {
            let cfs = self.cfs_rq_of(e);
            self.set_next_entity(cfs, e);
            s = self.parent_entity(e);
        }
        self.hrtick_start_fair(cpu, p);
    }
}
