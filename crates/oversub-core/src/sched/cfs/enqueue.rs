//! Linux 6.1 (CFS): `enqueue_entity()` / `dequeue_entity()` (with the
//! `min_vruntime` renormalisation of entities that move between queues)
//! and `enqueue_task_fair()` / `dequeue_task_fair()` up the hierarchy.

use super::Cfs;
use crate::sched::entity::VruntimeStep;
use crate::sched::fair::{DEQUEUE_SLEEP, ENQUEUE_MIGRATED, ENQUEUE_WAKEUP};
use crate::sched::ids::{CfsRqId, SeId, TaskId};
use crate::sched::load_avg::{DO_ATTACH, DO_DETACH, UPDATE_TG};
use crate::sched::timeline::vec_remove;

impl Cfs<'_> {
    /// Linux 6.1 (CFS): `enqueue_entity()`: an entity arriving from another
    /// queue or new (not ENQUEUE_WAKEUP, or ENQUEUE_MIGRATED) carries a
    /// vruntime relative to `min_vruntime` and gets this queue's added; a
    /// wakeup is placed by `place_entity()` with the sleeper credit.
    pub fn enqueue_entity(&mut self, cfs: CfsRqId, se: SeId, flags: u32) {
        let renorm = flags & ENQUEUE_WAKEUP == 0 || flags & ENQUEUE_MIGRATED != 0;
        let curr = self.cfs_rqs[cfs.idx()].curr == Some(se);
        if renorm && curr {
            self.renormalise(cfs, se);
        }
        self.update_curr(cfs);
        if renorm && !curr {
            self.renormalise(cfs, se);
        }
        self.update_load_avg(cfs, se, UPDATE_TG | DO_ATTACH);
        self.se_update_runnable(se);
        self.update_cfs_group(se);
        // account_entity_enqueue()
        let w = self.ses[se.idx()].load.weight;
        let q = &mut self.cfs_rqs[cfs.idx()];
        q.load.add(w);
        q.nr_running += 1;
        if let Some(t) = self.ses[se.idx()].task {
            let cpu = self.cfs_rqs[cfs.idx()].cpu;
            self.rqs[cpu.idx()].cfs_tasks.push(t);
        }
        if flags & ENQUEUE_WAKEUP != 0 {
            self.place_entity(cfs, se, false);
        }
        if flags & ENQUEUE_MIGRATED != 0 {
            self.ses[se.idx()].exec_start = 0;
        }
        if !curr {
            self.enqueue_into_timeline(cfs, se);
        }
        self.ses[se.idx()].on_rq = true;
        if self.cfs_rqs[cfs.idx()].nr_running == 1 {
            self.list_add_leaf_cfs_rq(cfs);
        }
    }

    /// `se->vruntime += cfs_rq->min_vruntime`.
    fn renormalise(&mut self, cfs: CfsRqId, se: SeId) {
        let v = self.ses[se.idx()]
            .vruntime()
            .wrapping_add(self.cfs_rqs[cfs.idx()].min_vruntime);
        self.ses[se.idx()].set_vruntime(v, VruntimeStep::Place);
    }

    /// Linux 6.1 (CFS): `dequeue_entity()`: an entity that does not go to
    /// sleep (a move to another queue) leaves with its vruntime relative to
    /// `min_vruntime`; the buddies it held are cleared.
    pub fn dequeue_entity(&mut self, cfs: CfsRqId, se: SeId, flags: u32) {
        let mut action = UPDATE_TG;
        if self.ses[se.idx()]
            .task
            .is_some_and(|t| self.tasks[t.idx()].migrating)
        {
            action |= DO_DETACH;
        }
        self.update_curr(cfs);
        self.update_load_avg(cfs, se, action);
        self.se_update_runnable(se);
        self.clear_buddies(cfs, se);
        if self.cfs_rqs[cfs.idx()].curr != Some(se) {
            self.dequeue_from_timeline(cfs, se);
        }
        self.ses[se.idx()].on_rq = false;
        // account_entity_dequeue()
        let w = self.ses[se.idx()].load.weight;
        let q = &mut self.cfs_rqs[cfs.idx()];
        q.load.sub(w);
        q.nr_running -= 1;
        if let Some(t) = self.ses[se.idx()].task {
            let cpu = self.cfs_rqs[cfs.idx()].cpu;
            let list = &mut self.rqs[cpu.idx()].cfs_tasks;
            if let Some(i) = list.iter().rposition(|&x| x == t) {
                vec_remove(list, i);
            }
        }
        if flags & DEQUEUE_SLEEP == 0 {
            let v = self.ses[se.idx()]
                .vruntime()
                .wrapping_sub(self.cfs_rqs[cfs.idx()].min_vruntime);
            self.ses[se.idx()].set_vruntime(v, VruntimeStep::Place);
        }
        self.update_cfs_group(se);
        self.update_min_vruntime(cfs);
    }

    /// Linux 6.1 (CFS): `enqueue_task_fair()`: enqueue up the hierarchy
    /// until an already-queued ancestor (the levels above a new one are
    /// wakeups), then update the rest of the chain.
    pub fn enqueue_task_fair(&mut self, p: TaskId, mut flags: u32) {
        let cpu = self.tasks[p.idx()].cpu;
        let mut se = Some(self.tasks[p.idx()].se);
        while let Some(s) = se {
            if self.ses[s.idx()].on_rq {
                break;
            }
            let cfs = self.cfs_rq_of(s);
            self.enqueue_entity(cfs, s, flags);
            let q = &mut self.cfs_rqs[cfs.idx()];
            q.h_nr_queued += 1;
            q.h_nr_runnable += 1;
            flags = ENQUEUE_WAKEUP;
            se = self.parent_entity(s);
        }
        while let Some(s) = se {
            let cfs = self.cfs_rq_of(s);
            self.update_load_avg(cfs, s, UPDATE_TG);
            self.se_update_runnable(s);
            self.update_cfs_group(s);
            let q = &mut self.cfs_rqs[cfs.idx()];
            q.h_nr_queued += 1;
            q.h_nr_runnable += 1;
            se = self.parent_entity(s);
        }
        // add_nr_running()
        self.rqs[cpu.idx()].nr_running += 1;
        self.balance_add_nr_running(cpu);
        if self.rqs[cpu.idx()].nr_running >= 2 {
            self.rd_overloaded = true;
        }
    }

    /// Linux 6.1 (CFS): `dequeue_task_fair()`: dequeue up the hierarchy while
    /// a queue empties; when a task goes to sleep, the first ancestor that
    /// stays queued becomes the next buddy (`set_next_buddy()`). Always
    /// dequeues (CFS has no delayed dequeue).
    pub fn dequeue_task_fair(&mut self, p: TaskId, mut flags: u32) -> bool {
        let cpu = self.tasks[p.idx()].cpu;
        let task_sleep = flags & DEQUEUE_SLEEP != 0;
        let mut se = Some(self.tasks[p.idx()].se);
        while let Some(s) = se {
            let cfs = self.cfs_rq_of(s);
            self.dequeue_entity(cfs, s, flags);
            let q = &mut self.cfs_rqs[cfs.idx()];
            q.h_nr_queued -= 1;
            q.h_nr_runnable -= 1;
            if q.load.weight != 0 {
                se = self.parent_entity(s);
                if task_sleep {
                    if let Some(parent) = se {
                        self.set_next_buddy(parent);
                    }
                }
                break;
            }
            flags |= DEQUEUE_SLEEP;
            se = self.parent_entity(s);
        }
        while let Some(s) = se {
            let cfs = self.cfs_rq_of(s);
            self.update_load_avg(cfs, s, UPDATE_TG);
            self.se_update_runnable(s);
            self.update_cfs_group(s);
            let q = &mut self.cfs_rqs[cfs.idx()];
            q.h_nr_queued -= 1;
            q.h_nr_runnable -= 1;
            se = self.parent_entity(s);
        }
        self.rqs[cpu.idx()].nr_running -= 1;
        self.balance_sub_nr_running(cpu, 1);
        true
    }
}
