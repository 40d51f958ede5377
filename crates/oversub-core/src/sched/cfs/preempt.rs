//! Linux 6.1 (CFS): preemption: at the tick (`entity_tick()`,
//! `check_preempt_tick()`: the slice from `sched_slice()`, and a lead of more
//! than a slice over the leftmost) and at wakeup (`check_preempt_wakeup()`:
//! the wakee preempts if curr is more than `wakeup_gran` ahead of it at the
//! level where their hierarchies meet; NEXT_BUDDY and LAST_BUDDY).

use super::tunables::SCHED_NR_LATENCY;
use super::Cfs;
use crate::sched::fair::{vdiff, WF_FORK};
use crate::sched::ids::{CfsRqId, CpuId, SeId, TaskId};
use crate::sched::load_avg::UPDATE_TG;

impl Cfs<'_> {
    /// Linux 6.1 (CFS): `check_preempt_tick()`: reschedule when curr has run
    /// longer than its `sched_slice()` since it was picked, or (after at
    /// least `sysctl_sched_min_granularity`) when its vruntime leads the
    /// leftmost entity's by more than that slice.
    pub fn check_preempt_tick(&mut self, cfs: CfsRqId, curr: SeId) {
        let cpu = self.cfs_rqs[cfs.idx()].cpu;
        let ideal_runtime = self.sched_slice(cfs, curr);
        let e = &self.ses[curr.idx()];
        let delta_exec = e.sum_exec_runtime - e.prev_sum_exec_runtime;
        if delta_exec > ideal_runtime {
            self.resched_curr(cpu);
            self.clear_buddies(cfs, curr);
            return;
        }
        if delta_exec < self.cfg.cfs_tunables().sched_min_granularity {
            return;
        }
        let Some(se) = self.timeline_first(cfs) else {
            return;
        };
        let delta = vdiff(
            self.ses[curr.idx()].vruntime(),
            self.ses[se.idx()].vruntime(),
        );
        if delta < 0 {
            return;
        }
        if delta as u64 > ideal_runtime {
            self.resched_curr(cpu);
        }
    }

    /// Linux 6.1 (CFS): `entity_tick()` (HRTICK not modelled): charge,
    /// update the load and the group's shares, and check for preemption
    /// when others are queued.
    pub fn entity_tick(&mut self, cfs: CfsRqId, curr: SeId) {
        self.update_curr(cfs);
        self.update_load_avg(cfs, curr, UPDATE_TG);
        self.update_cfs_group(curr);
        if self.cfs_rqs[cfs.idx()].nr_running > 1 {
            self.check_preempt_tick(cfs, curr);
        }
    }

    /// Linux 6.1 (CFS): `task_tick_fair()`: `entity_tick()` at every level.
    /// `queued` (an HRTICK expiry; HRTICK is refused on 6.1, so only a yield
    /// policy's timer) reschedules outright.
    pub fn task_tick_fair(&mut self, cpu: CpuId, curr: TaskId, queued: bool) {
        let mut s = Some(self.tasks[curr.idx()].se);
        while let Some(e) = s {
            let cfs = self.cfs_rq_of(e);
            if queued {
                self.update_curr(cfs);
                self.resched_curr(cpu);
                return;
            }
            self.entity_tick(cfs, e);
            s = self.parent_entity(e);
        }
    }

    /// Linux 6.1 (CFS): `check_preempt_wakeup()`: with NEXT_BUDDY (off by
    /// default) and `sched_nr_latency` or more queued, the wakee becomes the
    /// next buddy; then, unless a reschedule is pending, the wakee preempts
    /// when curr is more than `wakeup_gran(wakee)` ahead of it
    /// (`wakeup_preempt_entity() == 1`) at the level where their hierarchies
    /// meet, becoming the next buddy; with LAST_BUDDY (and the same
    /// crowding) the preempted curr becomes the last buddy. SCHED_IDLE and
    /// non-SCHED_NORMAL policies are not modelled.
    pub fn check_preempt_wakeup(&mut self, cpu: CpuId, p: TaskId, wake_flags: u32) {
        let Some(curr) = self.rqs[cpu.idx()].curr else {
            self.resched_curr(cpu);
            return;
        };
        let mut se = self.tasks[curr.idx()].se;
        let mut pse = self.tasks[p.idx()].se;
        if se == pse {
            return;
        }
        let cfs = self.cfs_rq_of(se);
        let scale = self.cfs_rqs[cfs.idx()].nr_running as u64 >= SCHED_NR_LATENCY;
        let mut next_buddy_marked = false;
        if self.feat.next_buddy && scale && wake_flags & WF_FORK == 0 {
            self.set_next_buddy(pse);
            next_buddy_marked = true;
        }
        if self.rqs[cpu.idx()].need_resched || !self.feat.wakeup_preemption {
            return;
        }
        (se, pse) = self.find_matching_se(se, pse);
        let q = self.cfs_rq_of(se);
        self.update_curr(q);
        if self.wakeup_preempt_entity(se, pse) != 1 {
            return;
        }
        if !next_buddy_marked {
            self.set_next_buddy(pse);
        }
        // preempt:
        self.resched_curr(cpu);
        if !self.ses[se.idx()].on_rq {
            return;
        }
        if self.feat.last_buddy && scale && self.ses[se.idx()].is_task() {
            self.set_last_buddy(se);
        }
    }
}
