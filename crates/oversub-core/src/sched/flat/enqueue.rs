//! sched/flat enqueue and dequeue (our reading of the v3 description, on
//! 6.12.117's `enqueue_task_fair()`/`dequeue_entities()`): the hierarchy is
//! enqueued and dequeued as before (load, PELT, group shares, the `h_nr_*`
//! counts), then the task's flat entity is placed on, or taken off, the
//! single runqueue with its effective weight. Only the task's entity can be
//! delayed (DELAY_DEQUEUE), judged by its eligibility on the flat queue.

use super::Flat;
use crate::sched::fair::{
    DEQUEUE_DELAYED, DEQUEUE_SLEEP, DEQUEUE_SPECIAL, ENQUEUE_DELAYED, ENQUEUE_MIGRATED,
    ENQUEUE_WAKEUP,
};
use crate::sched::ids::{CfsRqId, SeId, TaskId};
use crate::sched::load_avg::{DO_ATTACH, DO_DETACH, UPDATE_TG};
use crate::sched::timeline::vec_remove;

impl Flat<'_> {
    /// The `h_nr_*` counts of one hierarchy queue for a task coming (+1) or
    /// going (-1); a delayed task counts in `h_nr_delayed`, not runnable.
    fn h_count(&mut self, cfs: CfsRqId, add: bool, delayed: bool) {
        let q = &mut self.cfs_rqs[cfs.idx()];
        if add {
            q.h_nr_queued += 1;
            if delayed {
                q.h_nr_delayed += 1;
            } else {
                q.h_nr_runnable += 1;
            }
        } else {
            q.h_nr_queued -= 1;
            if delayed {
                q.h_nr_delayed -= 1;
            } else {
                q.h_nr_runnable -= 1;
            }
        }
    }

    /// `enqueue_entity()` of a hierarchy entity: load average, group shares
    /// and the queue's load; no placement (the hierarchy has no timeline).
    fn enqueue_entity_hier(&mut self, cfs: CfsRqId, se: SeId, flags: u32) {
        self.update_load_avg(cfs, se, UPDATE_TG | DO_ATTACH);
        self.se_update_runnable(se);
        self.update_cfs_group(se);
        let w = self.ses[se.idx()].load.weight;
        let q = &mut self.cfs_rqs[cfs.idx()];
        q.load.add(w);
        q.nr_running += 1;
        if let Some(t) = self.ses[se.idx()].task {
            let cpu = self.cfs_rqs[cfs.idx()].cpu;
            self.rqs[cpu.idx()].cfs_tasks.push(t);
        }
        if flags & ENQUEUE_MIGRATED != 0 {
            self.ses[se.idx()].exec_start = 0;
        }
        self.ses[se.idx()].on_rq = true;
        if self.cfs_rqs[cfs.idx()].nr_running == 1 {
            self.list_add_leaf_cfs_rq(cfs);
        }
    }

    /// `dequeue_entity()` of a hierarchy entity (never delayed).
    fn dequeue_entity_hier(&mut self, cfs: CfsRqId, se: SeId) {
        let mut action = UPDATE_TG;
        if self.ses[se.idx()]
            .task
            .is_some_and(|t| self.tasks[t.idx()].migrating)
        {
            action |= DO_DETACH;
        }
        self.update_load_avg(cfs, se, action);
        self.se_update_runnable(se);
        self.ses[se.idx()].on_rq = false;
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
        self.update_cfs_group(se);
    }

    /// The flat queue's counts for an entity coming or going.
    fn flat_count(&mut self, f: CfsRqId, se: SeId, add: bool) {
        let w = self.ses[se.idx()].load.weight;
        let delayed = self.ses[se.idx()].sched_delayed;
        let q = &mut self.cfs_rqs[f.idx()];
        if add {
            q.load.add(w);
            q.nr_running += 1;
        } else {
            q.load.sub(w);
            q.nr_running -= 1;
        }
        self.h_count(f, add, delayed);
    }

    /// `enqueue_task_fair()` (sched/flat): the hierarchy up to the first
    /// queued ancestor, the rest of the chain updated; then the task's flat
    /// entity re-weighted to its effective weight and placed
    /// (`place_entity()` on the flat queue).
    pub fn enqueue_task_fair(&mut self, p: TaskId, flags: u32) {
        let cpu = self.tasks[p.idx()].cpu;
        if flags & ENQUEUE_DELAYED != 0 {
            self.requeue_delayed_entity(p);
            self.hrtick_update(cpu);
            return;
        }
        let hse = self.tasks[p.idx()].se;
        let fse = self.fse(p);
        let f = self.rq_of(cpu);
        // A delayed task moved without a wakeup stays delayed (6.12.117's
        // h_nr_delayed of a non-wakeup enqueue).
        let delayed = flags & ENQUEUE_WAKEUP == 0 && self.ses[hse.idx()].sched_delayed;
        self.update_curr(f);
        let mut se = Some(hse);
        let mut fl = flags;
        while let Some(s) = se {
            if self.ses[s.idx()].on_rq {
                break;
            }
            let cfs = self.cfs_rq_of(s);
            self.enqueue_entity_hier(cfs, s, fl);
            self.h_count(cfs, true, delayed);
            fl = ENQUEUE_WAKEUP;
            se = self.parent_entity(s);
        }
        while let Some(s) = se {
            let cfs = self.cfs_rq_of(s);
            self.update_load_avg(cfs, s, UPDATE_TG);
            self.se_update_runnable(s);
            self.update_cfs_group(s);
            self.h_count(cfs, true, delayed);
            se = self.parent_entity(s);
        }
        // The flat entity: effective weight (enqueue is one of the
        // description's three points), placement, the single timeline.
        self.ses[fse.idx()].cfs_rq = f;
        self.ses[fse.idx()].sched_delayed = delayed;
        self.update_h_load(p);
        let is_curr = self.cfs_rqs[f.idx()].curr == Some(fse);
        self.place_entity(f, fse, flags);
        self.flat_count(f, fse, true);
        if flags & ENQUEUE_MIGRATED != 0 {
            self.ses[fse.idx()].exec_start = 0;
        }
        if !is_curr {
            self.enqueue_into_timeline(f, fse);
        }
        self.ses[fse.idx()].on_rq = true;
        self.rqs[cpu.idx()].nr_running += 1;
        self.balance_add_nr_running(cpu);
        if self.rqs[cpu.idx()].nr_running >= 2 {
            self.rd_overloaded = true;
        }
        self.hrtick_update(cpu);
    }

    /// `requeue_delayed_entity()` (sched/flat): a delayed task woken before
    /// it was picked; DELAY_ZERO re-places its flat entity at zero lag if
    /// its lag turned positive.
    fn requeue_delayed_entity(&mut self, p: TaskId) {
        let hse = self.tasks[p.idx()].se;
        let fse = self.fse(p);
        let f = self.cfs_rq_of(fse);
        if self.feat.delay_zero {
            self.update_entity_lag(f, fse);
            if self.ses[fse.idx()].vlag > 0 {
                if self.cfs_rqs[f.idx()].curr == Some(fse) {
                    self.cfs_rqs[f.idx()].nr_running -= 1;
                    self.ses[fse.idx()].vlag = 0;
                    self.place_entity(f, fse, 0);
                    self.cfs_rqs[f.idx()].nr_running += 1;
                } else {
                    self.requeue_with_lag(f, fse, 0);
                }
            }
        }
        let leaf = self.cfs_rq_of(hse);
        self.update_load_avg(leaf, hse, 0);
        self.clear_delayed(hse);
        self.ses[fse.idx()].sched_delayed = false;
        let q = &mut self.cfs_rqs[f.idx()];
        q.h_nr_delayed -= 1;
        q.h_nr_runnable += 1;
    }

    /// `dequeue_task_fair()` (sched/flat): false if the task stays queued
    /// as delayed.
    pub fn dequeue_task_fair(&mut self, p: TaskId, flags: u32) -> bool {
        let cpu = self.tasks[p.idx()].cpu;
        let r = self.dequeue_task(p, flags);
        self.hrtick_update(cpu);
        r
    }

    /// `dequeue_entities()` (sched/flat) for a task. A sleeping task that is
    /// not eligible on the flat queue stays queued, delayed, everywhere
    /// (DELAY_DEQUEUE); otherwise its flat entity leaves the flat queue
    /// (lag kept, deadline made relative for a non-sleep dequeue) and the
    /// hierarchy is dequeued up to the first queue that keeps load.
    pub(super) fn dequeue_task(&mut self, p: TaskId, flags: u32) -> bool {
        let cpu = self.tasks[p.idx()].cpu;
        let hse = self.tasks[p.idx()].se;
        let fse = self.fse(p);
        let f = self.cfs_rq_of(fse);
        let sleep = flags & DEQUEUE_SLEEP != 0;
        let task_delayed = flags & DEQUEUE_DELAYED != 0;
        self.update_curr(f);
        self.clear_buddies(f, fse);
        if !task_delayed
            && self.feat.delay_dequeue
            && sleep
            && flags & DEQUEUE_SPECIAL == 0
            && !self.entity_eligible(f, fse)
        {
            let leaf = self.cfs_rq_of(hse);
            self.update_load_avg(leaf, hse, 0);
            self.set_delayed(hse);
            self.ses[fse.idx()].sched_delayed = true;
            let q = &mut self.cfs_rqs[f.idx()];
            q.h_nr_runnable -= 1;
            q.h_nr_delayed += 1;
            return false;
        }
        // The flat entity.
        self.update_entity_lag(f, fse);
        if self.feat.place_rel_deadline && !sleep {
            let e = &mut self.ses[fse.idx()];
            e.deadline = e.deadline.wrapping_sub(e.vruntime());
            e.rel_deadline = true;
        }
        if self.cfs_rqs[f.idx()].curr != Some(fse) {
            self.dequeue_from_timeline(f, fse);
        }
        self.ses[fse.idx()].on_rq = false;
        self.flat_count(f, fse, false);
        // The hierarchy (6.12.117's counts: a finally dequeued delayed task
        // is made runnable first, a moved delayed one leaves as delayed).
        let delayed = !sleep && !task_delayed && self.ses[hse.idx()].sched_delayed;
        if task_delayed {
            self.clear_delayed(hse);
            let zero = self.feat.delay_zero;
            let e = &mut self.ses[fse.idx()];
            e.sched_delayed = false;
            if zero && e.vlag > 0 {
                e.vlag = 0;
            }
        }
        let mut se = Some(hse);
        while let Some(s) = se {
            let cfs = self.cfs_rq_of(s);
            self.dequeue_entity_hier(cfs, s);
            self.h_count(cfs, false, delayed);
            se = self.parent_entity(s);
            if self.cfs_rqs[cfs.idx()].load.weight != 0 {
                break;
            }
        }
        while let Some(s) = se {
            let cfs = self.cfs_rq_of(s);
            self.update_load_avg(cfs, s, UPDATE_TG);
            self.se_update_runnable(s);
            self.update_cfs_group(s);
            self.h_count(cfs, false, delayed);
            se = self.parent_entity(s);
        }
        self.rqs[cpu.idx()].nr_running -= 1;
        self.balance_sub_nr_running(cpu, 1);
        if task_delayed {
            self.tasks[p.idx()].on_rq = false;
        }
        true
    }
}
