//! Enqueue and delayed dequeue: `place_entity()`, `enqueue_entity()`,
//! `requeue_delayed_entity()`, `enqueue_task_fair()` and
//! `set_delayed()`/`clear_delayed()` of kernel/sched/fair.c, Linux 6.12.117.

use super::*;

impl Scheduler {
    /// `place_entity()` (6.12.117): v = V - lag with the PLACE_LAG inflation
    /// `lag * (W + w) / W`; the deadline from a kept relative deadline
    /// (PLACE_REL_DEADLINE) or v + vslice (halved for a new task under
    /// PLACE_DEADLINE_INITIAL).
    pub(in crate::sched) fn place_entity(&mut self, cfs: CfsRqId, se: SeId, flags: u32) {
        let vruntime = self.avg_vruntime(cfs);
        let base = self.cfg.base_slice();
        let curr = self.queued_curr(cfs);
        let q = &self.cfs_rqs[cfs.idx()];
        let nr_running = q.nr_running;
        let mut load = q.avg_load;
        if let Some(c) = curr {
            load += scale_load_down(self.ses[c.idx()].load.weight) as i64;
        }
        let e = &mut self.ses[se.idx()];
        if !e.custom_slice {
            e.slice = base;
        }
        let mut vslice = calc_delta_fair(e.slice, &e.load);
        let mut lag: i64 = 0;
        if self.feat.place_lag && nr_running > 0 {
            lag = e.vlag;
            let w = load + scale_load_down(e.load.weight) as i64;
            let load = if load == 0 { 1 } else { load };
            // 64-bit division when the product fits (the same quotient).
            lag = match lag.checked_mul(w) {
                Some(l) => l / load,
                None => (lag as i128 * w as i128 / load as i128) as i64,
            };
        }
        e.set_vruntime(vruntime.wrapping_sub(lag as u64), VruntimeStep::Place);
        if self.feat.place_rel_deadline && e.rel_deadline {
            e.deadline = e.deadline.wrapping_add(e.vruntime());
            e.rel_deadline = false;
            return;
        }
        if self.feat.place_deadline_initial && flags & ENQUEUE_INITIAL != 0 {
            vslice /= 2;
        }
        e.deadline = e.vruntime().wrapping_add(vslice);
    }

    /// `enqueue_entity()`.
    pub(super) fn enqueue_entity(&mut self, cfs: CfsRqId, se: SeId, flags: u32) {
        let is_curr = self.cfs_rqs[cfs.idx()].curr == Some(se);
        if is_curr {
            self.place_entity(cfs, se, flags);
        }
        self.update_curr(cfs);
        self.update_load_avg(cfs, se, UPDATE_TG | DO_ATTACH);
        self.se_update_runnable(se);
        self.update_cfs_group(se);
        if !is_curr {
            self.place_entity(cfs, se, flags);
        }
        // account_entity_enqueue()
        let w = self.ses[se.idx()].load.weight;
        let q = &mut self.cfs_rqs[cfs.idx()];
        q.load.add(w);
        q.nr_running += 1;
        if let Some(t) = self.ses[se.idx()].task {
            // account_entity_enqueue(): head of rq->cfs_tasks.
            let cpu = self.cpu_of(cfs);
            self.rqs[cpu.idx()].cfs_tasks.push(t);
        }
        if flags & ENQUEUE_MIGRATED != 0 {
            self.ses[se.idx()].exec_start = 0;
        }
        if !is_curr {
            self.__enqueue_entity(cfs, se);
        }
        self.ses[se.idx()].on_rq = true;
        if self.cfs_rqs[cfs.idx()].nr_running == 1 {
            self.list_add_leaf_cfs_rq(cfs);
        }
    }

    /// `set_delayed()`: h_nr_runnable/h_nr_delayed move up the hierarchy for tasks.
    pub(in crate::sched) fn set_delayed(&mut self, se: SeId) {
        self.ses[se.idx()].sched_delayed = true;
        if !self.ses[se.idx()].is_task() {
            return;
        }
        let mut s = Some(se);
        while let Some(e) = s {
            let q = &mut self.cfs_rqs[self.ses[e.idx()].cfs_rq.idx()];
            q.h_nr_runnable -= 1;
            q.h_nr_delayed += 1;
            s = self.ses[e.idx()].parent;
        }
    }

    /// `clear_delayed()`.
    pub(in crate::sched) fn clear_delayed(&mut self, se: SeId) {
        self.ses[se.idx()].sched_delayed = false;
        if !self.ses[se.idx()].is_task() {
            return;
        }
        let mut s = Some(se);
        while let Some(e) = s {
            let q = &mut self.cfs_rqs[self.ses[e.idx()].cfs_rq.idx()];
            q.h_nr_runnable += 1;
            q.h_nr_delayed -= 1;
            s = self.ses[e.idx()].parent;
        }
    }

    /// `finish_delayed_dequeue_entity()`: DELAY_ZERO clips positive lag.
    pub(in crate::sched) fn finish_delayed_dequeue_entity(&mut self, se: SeId) {
        self.clear_delayed(se);
        if self.feat.delay_zero && self.ses[se.idx()].vlag > 0 {
            self.ses[se.idx()].vlag = 0;
        }
    }

    /// `requeue_delayed_entity()`: a delayed entity woken before it was picked;
    /// DELAY_ZERO re-places it at zero lag if its lag turned positive.
    pub(super) fn requeue_delayed_entity(&mut self, se: SeId) {
        let cfs = self.cfs_rq_of(se);
        if self.feat.delay_zero {
            self.update_entity_lag(cfs, se);
            if self.ses[se.idx()].vlag > 0 {
                let is_curr = self.cfs_rqs[cfs.idx()].curr == Some(se);
                self.cfs_rqs[cfs.idx()].nr_running -= 1;
                if !is_curr {
                    self.__dequeue_entity(cfs, se);
                }
                self.ses[se.idx()].vlag = 0;
                self.place_entity(cfs, se, 0);
                if !is_curr {
                    self.__enqueue_entity(cfs, se);
                }
                self.cfs_rqs[cfs.idx()].nr_running += 1;
            }
        }
        self.update_load_avg(cfs, se, 0);
        self.clear_delayed(se);
    }

    /// `enqueue_task_fair()` (6.12.117): enqueue up the hierarchy until an
    /// already-queued ancestor, then update the rest of the chain.
    pub(in crate::sched) fn enqueue_task_eevdf(&mut self, p: TaskId, mut flags: u32) {
        let cpu = self.tasks[p.idx()].cpu;
        let mut se = Some(self.tasks[p.idx()].se);
        let task_new = flags & ENQUEUE_WAKEUP == 0;
        let mut h_nr_delayed = 0;
        if flags & ENQUEUE_DELAYED != 0 {
            self.requeue_delayed_entity(se.unwrap());
            self.hrtick_update(cpu);
            return;
        }
        if task_new {
            h_nr_delayed = self.ses[se.unwrap().idx()].sched_delayed as u32;
        }
        let mut slice = 0u64;
        while let Some(s) = se {
            if self.ses[s.idx()].on_rq {
                if self.ses[s.idx()].sched_delayed {
                    self.requeue_delayed_entity(s);
                }
                break;
            }
            let cfs = self.cfs_rq_of(s);
            if slice != 0 {
                self.ses[s.idx()].slice = slice;
                self.ses[s.idx()].custom_slice = true;
            }
            self.enqueue_entity(cfs, s, flags);
            slice = self.cfs_rq_min_slice(cfs);
            let q = &mut self.cfs_rqs[cfs.idx()];
            if h_nr_delayed == 0 {
                q.h_nr_runnable += 1;
            }
            q.h_nr_queued += 1;
            q.h_nr_delayed += h_nr_delayed;
            flags = ENQUEUE_WAKEUP;
            se = self.parent_entity(s);
        }
        while let Some(s) = se {
            let cfs = self.cfs_rq_of(s);
            self.update_load_avg(cfs, s, UPDATE_TG);
            self.se_update_runnable(s);
            self.update_cfs_group(s);
            self.set_queued_slice(s, slice);
            slice = self.cfs_rq_min_slice(cfs);
            let q = &mut self.cfs_rqs[cfs.idx()];
            if h_nr_delayed == 0 {
                q.h_nr_runnable += 1;
            }
            q.h_nr_queued += 1;
            q.h_nr_delayed += h_nr_delayed;
            se = self.parent_entity(s);
        }
        // add_nr_running(): a second runnable task overloads the root domain.
        self.rqs[cpu.idx()].nr_running += 1;
        self.balance_add_nr_running(cpu);
        if self.rqs[cpu.idx()].nr_running >= 2 {
            self.rd_overloaded = true;
        }
        self.hrtick_update(cpu);
    }
}
