//! Dequeue: `dequeue_entity()` (with DELAY_DEQUEUE), `dequeue_entities()`
//! and `dequeue_task_fair()` of kernel/sched/fair.c, Linux 6.12.117.

use super::*;

impl Scheduler {
    /// `dequeue_entity()` (6.12.117): with DELAY_DEQUEUE a sleeping entity that is
    /// not eligible stays queued (`sched_delayed`) and competes until it would
    /// be picked; returns false in that case.
    pub(super) fn dequeue_entity(&mut self, cfs: CfsRqId, se: SeId, flags: u32) -> bool {
        let sleep = flags & DEQUEUE_SLEEP != 0;
        self.update_curr(cfs);
        self.clear_buddies(cfs, se);
        if flags & DEQUEUE_DELAYED == 0 {
            let delay = sleep && flags & DEQUEUE_SPECIAL == 0;
            if self.feat.delay_dequeue && delay && !self.entity_eligible(cfs, se) {
                self.update_load_avg(cfs, se, 0);
                self.set_delayed(se);
                return false;
            }
        }
        let mut action = UPDATE_TG;
        if self.ses[se.idx()]
            .task
            .is_some_and(|t| self.tasks[t.idx()].migrating)
        {
            action |= DO_DETACH;
        }
        self.update_load_avg(cfs, se, action);
        self.se_update_runnable(se);
        self.update_entity_lag(cfs, se);
        if self.feat.place_rel_deadline && !sleep {
            let e = &mut self.ses[se.idx()];
            e.deadline = e.deadline.wrapping_sub(e.vruntime());
            e.rel_deadline = true;
        }
        if self.cfs_rqs[cfs.idx()].curr != Some(se) {
            self.__dequeue_entity(cfs, se);
        }
        self.ses[se.idx()].on_rq = false;
        // account_entity_dequeue()
        let w = self.ses[se.idx()].load.weight;
        let q = &mut self.cfs_rqs[cfs.idx()];
        q.load.sub(w);
        q.nr_running -= 1;
        if let Some(t) = self.ses[se.idx()].task {
            let cpu = self.cpu_of(cfs);
            let list = &mut self.rqs[cpu.idx()].cfs_tasks;
            if let Some(i) = list.iter().rposition(|&x| x == t) {
                vec_remove(list, i);
            }
        }
        self.update_cfs_group(se);
        if flags & DEQUEUE_DELAYED != 0 {
            self.finish_delayed_dequeue_entity(se);
        }
        true
    }

    /// `dequeue_entities()` (6.12.117). Returns -1 when the task's own entity
    /// was delayed rather than dequeued, 1 when fully dequeued, 0 otherwise.
    pub fn dequeue_entities(&mut self, cpu: CpuId, se0: SeId, mut flags: u32) -> i32 {
        let task_sleep = flags & DEQUEUE_SLEEP != 0;
        let task_delayed = flags & DEQUEUE_DELAYED != 0;
        let p = self.ses[se0.idx()].task;
        let mut h_nr_queued = 0;
        let mut h_nr_delayed = 0;
        if p.is_some() {
            h_nr_queued = 1;
            if !task_sleep && !task_delayed {
                h_nr_delayed = self.ses[se0.idx()].sched_delayed as u32;
            }
        }
        let mut se = Some(se0);
        let mut slice = 0u64;
        while let Some(s) = se {
            let cfs = self.cfs_rq_of(s);
            if !self.dequeue_entity(cfs, s, flags) {
                if p.is_some() && s == se0 {
                    return -1;
                }
                slice = self.cfs_rq_min_slice(cfs);
                break;
            }
            let q = &mut self.cfs_rqs[cfs.idx()];
            if h_nr_delayed == 0 {
                q.h_nr_runnable -= h_nr_queued;
            }
            q.h_nr_queued -= h_nr_queued;
            q.h_nr_delayed -= h_nr_delayed;
            if q.load.weight != 0 {
                slice = self.cfs_rq_min_slice(cfs);
                se = self.parent_entity(s);
                if task_sleep {
                    if let Some(parent) = se {
                        self.set_next_buddy(parent);
                    }
                }
                break;
            }
            flags |= DEQUEUE_SLEEP;
            flags &= !(DEQUEUE_DELAYED | DEQUEUE_SPECIAL);
            se = self.parent_entity(s);
        }
        // `se` is now the first entity still queued (a delayed group entity or
        // the parent of the last dequeued one), or None past the root.
        while let Some(s) = se {
            let cfs = self.cfs_rq_of(s);
            self.update_load_avg(cfs, s, UPDATE_TG);
            self.se_update_runnable(s);
            self.update_cfs_group(s);
            self.set_queued_slice(s, slice);
            slice = self.cfs_rq_min_slice(cfs);
            let q = &mut self.cfs_rqs[cfs.idx()];
            if h_nr_delayed == 0 {
                q.h_nr_runnable -= h_nr_queued;
            }
            q.h_nr_queued -= h_nr_queued;
            q.h_nr_delayed -= h_nr_delayed;
            se = self.parent_entity(s);
        }
        self.rqs[cpu.idx()].nr_running -= h_nr_queued;
        self.balance_sub_nr_running(cpu, h_nr_queued);
        if let (Some(t), true) = (p, task_delayed) {
            // __block_task(): the delayed task finally leaves the runqueue.
            self.tasks[t.idx()].on_rq = false;
        }
        1
    }

    /// `dequeue_task_fair()`: false if the task stays queued as delayed.
    pub(in crate::sched) fn dequeue_task_eevdf(&mut self, p: TaskId, flags: u32) -> bool {
        let cpu = self.tasks[p.idx()].cpu;
        let se = self.tasks[p.idx()].se;
        let r = self.dequeue_entities(cpu, se, flags);
        self.hrtick_update(cpu);
        r >= 0
    }
}
