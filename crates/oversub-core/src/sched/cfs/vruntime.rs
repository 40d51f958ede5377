//! Linux 6.1 (CFS): virtual runtime: `update_curr()`, `update_min_vruntime()`,
//! `place_entity()` (sleeper credit with GENTLE_FAIR_SLEEPERS, START_DEBIT
//! for new tasks, the long-sleeper reset), `task_fork_fair()` and the
//! vruntime part of `migrate_task_rq_fair()` (relative to `min_vruntime`
//! while between runqueues).

use super::{max_vruntime, min_vruntime, Cfs};
use crate::sched::entity::VruntimeStep;
use crate::sched::ids::{CfsRqId, SeId, TaskId};
use crate::sched::weight::{calc_delta_fair, scale_load_down, NICE_0_LOAD};

impl Cfs<'_> {
    /// Linux 6.1 (CFS): `update_curr()`: charge the running entity the time
    /// since `exec_start`, in virtual time, and advance `min_vruntime`.
    /// (CFS bandwidth and schedstats are not modelled.)
    pub fn update_curr(&mut self, cfs: CfsRqId) {
        let Some(curr) = self.cfs_rqs[cfs.idx()].curr else {
            return;
        };
        let now = self.now;
        let delta_exec = now as i64 - self.ses[curr.idx()].exec_start as i64;
        if delta_exec <= 0 {
            return;
        }
        let e = &mut self.ses[curr.idx()];
        e.exec_start = now;
        e.sum_exec_runtime += delta_exec as u64;
        let v = e
            .vruntime()
            .wrapping_add(calc_delta_fair(delta_exec as u64, &e.load));
        e.set_vruntime(v, VruntimeStep::Accounting);
        self.update_min_vruntime(cfs);
    }

    /// Linux 6.1 (CFS): `update_min_vruntime()`: the smaller of curr's (if
    /// queued) and the leftmost entity's vruntime, never moving backwards.
    pub fn update_min_vruntime(&mut self, cfs: CfsRqId) {
        let q = &self.cfs_rqs[cfs.idx()];
        let mut vruntime = q.min_vruntime;
        let curr = q.curr.filter(|c| self.ses[c.idx()].on_rq);
        if let Some(c) = curr {
            vruntime = self.ses[c.idx()].vruntime();
        }
        if let Some(left) = self.timeline_first(cfs) {
            let lv = self.ses[left.idx()].vruntime();
            vruntime = if curr.is_none() {
                lv
            } else {
                min_vruntime(vruntime, lv)
            };
        }
        let q = &mut self.cfs_rqs[cfs.idx()];
        q.min_vruntime = max_vruntime(q.min_vruntime, vruntime);
    }

    /// Linux 6.1 (CFS): `entity_is_long_sleeper()`: slept so long (more than
    /// 2^63 / NICE_0 weight ns since it last ran) that its vruntime may have
    /// wrapped against `min_vruntime`.
    pub fn entity_is_long_sleeper(&self, se: SeId) -> bool {
        let e = &self.ses[se.idx()];
        if e.exec_start == 0 || self.now <= e.exec_start {
            return false;
        }
        let sleep_time = self.now - e.exec_start;
        sleep_time > (1u64 << 63) / scale_load_down(NICE_0_LOAD)
    }

    /// Linux 6.1 (CFS): `place_entity()`: a new entity (`initial`) starts at
    /// `min_vruntime` plus one `sched_vslice()` under START_DEBIT; a waking
    /// one gets a sleeper credit of `sysctl_sched_latency` (halved under
    /// GENTLE_FAIR_SLEEPERS) below `min_vruntime`, but never gains by
    /// sleeping: it keeps its own vruntime if that is later (unless it is a
    /// long sleeper). SCHED_IDLE entities (min_granularity credit) are not
    /// modelled.
    pub fn place_entity(&mut self, cfs: CfsRqId, se: SeId, initial: bool) {
        let mut vruntime = self.cfs_rqs[cfs.idx()].min_vruntime;
        if initial && self.feat.start_debit {
            vruntime = vruntime.wrapping_add(self.sched_vslice(cfs, se));
        }
        if !initial {
            let mut thresh = self.cfg.cfs_tunables().sched_latency;
            if self.feat.gentle_fair_sleepers {
                thresh >>= 1;
            }
            vruntime = vruntime.wrapping_sub(thresh);
        }
        let v = if self.entity_is_long_sleeper(se) {
            vruntime
        } else {
            max_vruntime(self.ses[se.idx()].vruntime(), vruntime)
        };
        self.ses[se.idx()].set_vruntime(v, VruntimeStep::Place);
    }

    /// Linux 6.1 (CFS): `task_fork_fair()`: the child starts at the running
    /// entity's vruntime, is placed as `initial`, and leaves relative to
    /// `min_vruntime` (the enqueue of `wake_up_new_task()` adds it back).
    /// Simplification: the model's tasks have no parent; the cfs_rq is the
    /// child's own on the CPU the fork balance chose, and with nothing
    /// running there the child starts from `min_vruntime`.
    /// `sysctl_sched_child_runs_first` (0 by default) is not modelled.
    pub fn task_fork_fair(&mut self, p: TaskId) {
        let se = self.tasks[p.idx()].se;
        let cfs = self.cfs_rq_of(se);
        let start = match self.cfs_rqs[cfs.idx()].curr {
            Some(c) => {
                self.update_curr(cfs);
                self.ses[c.idx()].vruntime()
            }
            None => self.cfs_rqs[cfs.idx()].min_vruntime,
        };
        self.ses[se.idx()].set_vruntime(start, VruntimeStep::Place);
        self.place_entity(cfs, se, true);
        let rel = self.ses[se.idx()]
            .vruntime()
            .wrapping_sub(self.cfs_rqs[cfs.idx()].min_vruntime);
        self.ses[se.idx()].set_vruntime(rel, VruntimeStep::Place);
    }

    /// Linux 6.1 (CFS): the vruntime part of `migrate_task_rq_fair()`: a
    /// waking task (TASK_WAKING, not a balancer move) leaves its old queue
    /// relative to that queue's `min_vruntime`; the ENQUEUE_MIGRATED enqueue
    /// adds the new queue's.
    pub fn migrate_task_rq_fair(&mut self, p: TaskId) {
        if self.tasks[p.idx()].migrating {
            return;
        }
        let se = self.tasks[p.idx()].se;
        let cfs = self.cfs_rq_of(se);
        let rel = self.ses[se.idx()]
            .vruntime()
            .wrapping_sub(self.cfs_rqs[cfs.idx()].min_vruntime);
        self.ses[se.idx()].set_vruntime(rel, VruntimeStep::Place);
    }
}
