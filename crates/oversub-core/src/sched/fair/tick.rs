//! The tick and HRTICK: `task_tick_fair()`/`entity_tick()`,
//! `hrtick_start_fair()`, `hrtick_update()` of kernel/sched/fair.c,
//! Linux 6.12.117.

use super::*;

impl Scheduler {
    /// `task_tick_fair()` / `entity_tick()`: charge and re-weight up the chain.
    /// `queued` is the HRTICK expiry: reschedule outright.
    pub(in crate::sched) fn task_tick_eevdf(&mut self, cpu: CpuId, curr: TaskId, queued: bool) {
        let mut s = Some(self.tasks[curr.idx()].se);
        while let Some(e) = s {
            let cfs = self.cfs_rq_of(e);
            self.update_curr(cfs);
            self.update_load_avg(cfs, e, UPDATE_TG);
            self.update_cfs_group(e);
            if queued {
                self.resched_curr(cpu);
                return;
            }
            s = self.parent_entity(e);
        }
    }

    /// `hrtick_start_fair()`: with HRTICK, arm the per-CPU timer for the end of
    /// the current slice (`slice - ran`).
    pub fn hrtick_start_fair(&mut self, cpu: CpuId, p: TaskId) {
        if !self.feat.hrtick {
            return;
        }
        let root = self.rqs[cpu.idx()].cfs;
        if self.cfs_rqs[root.idx()].h_nr_queued > 1 {
            let e = &self.ses[self.eevdf_se(p).idx()];
            let ran = e.sum_exec_runtime - e.prev_sum_exec_runtime;
            let delta = e.slice as i64 - ran as i64;
            if delta < 0 {
                if self.rqs[cpu.idx()].curr == Some(p) {
                    self.resched_curr(cpu);
                }
                return;
            }
            self.hrtick_requests.push((cpu, self.now + delta as u64));
        }
    }

    /// `hrtick_update()`.
    pub(in crate::sched) fn hrtick_update(&mut self, cpu: CpuId) {
        if !self.feat.hrtick {
            return;
        }
        if let Some(c) = self.rqs[cpu.idx()].curr {
            self.hrtick_start_fair(cpu, c);
        }
    }
}
