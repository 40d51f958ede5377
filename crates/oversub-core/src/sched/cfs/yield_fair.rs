//! Linux 6.1 (CFS): `yield_task_fair()` (charge, then mark the yielder as
//! the skip buddy) and `yield_to_task_fair()` (the target becomes the next
//! buddy, then the caller yields).

use super::Cfs;
use crate::sched::ids::{CpuId, TaskId};

impl Cfs<'_> {
    /// Linux 6.1 (CFS): `yield_task_fair()`: nothing if the task is alone on
    /// the rq; else clear its buddies, charge it (`update_curr()`) and make
    /// it the skip buddy, so the next pick prefers the second entity unless
    /// that is more than `wakeup_gran` behind. Returns whether the caller
    /// should `schedule()` (false: alone, or throttled by `yield_interval`,
    /// Kuba Piecuch's RFC, seed 003, applied after `clear_buddies()` as on
    /// EEVDF). Its vruntime is not changed.
    pub fn yield_task_fair(&mut self, cpu: CpuId) -> bool {
        self.yield_rq[cpu.idx()].yield_left_vns = 0;
        let Some(curr) = self.rqs[cpu.idx()].curr else {
            return false;
        };
        if self.rqs[cpu.idx()].nr_running == 1 {
            return false;
        }
        let se = self.tasks[curr.idx()].se;
        let cfs = self.cfs_rq_of(se);
        self.clear_buddies(cfs, se);
        if self.yield_interval_throttled(curr) {
            return false;
        }
        self.update_curr(cfs);
        self.set_skip_buddy(se);
        self.yield_rq[cpu.idx()].yielding = Some(curr);
        true
    }

    /// Linux 6.1 (CFS): `yield_to_task_fair()`: a queued target becomes the
    /// next buddy along its hierarchy, then the caller yields (and becomes
    /// the skip buddy). False if the target is not queued.
    pub fn yield_to_task_fair(&mut self, cpu: CpuId, p: TaskId) -> bool {
        let se = self.tasks[p.idx()].se;
        if !self.ses[se.idx()].on_rq {
            return false;
        }
        self.set_next_buddy(se);
        self.yield_task_fair(cpu);
        true
    }
}
