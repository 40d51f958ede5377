//! SMP placement and load balancing, a reduced model of kernel/sched/fair.c
//! (Linux 6.12.117) `select_task_rq_fair()`, `sched_balance_newidle()`,
//! `sched_balance_rq()` and the nohz idle balance.
//!
//! The model (docs/model.md, "Load balancing"):
//! * One scheduling domain spanning every CPU (one LLC, no SMT, no NUMA).
//! * Wakeup: `wake_affine()` reduced to its idle tests (the waker's CPU if it
//!   is idle, else prev), then `select_idle_sibling()`: the target if idle, prev
//!   if idle, else the first idle allowed CPU scanning from the target, else
//!   the target. `wake_affine_weight()` and the SIS_UTIL scan limit are not
//!   modelled.
//! * Fork: the allowed CPU with the fewest runnable tasks (`find_idlest_cpu()`
//!   without its load/utilisation comparison).
//! * Balancing moves tasks by count of runnable tasks, not by PELT load:
//!   equivalent for equal-weight tasks, coarser for mixed nice levels.
//!   `can_migrate_task()` keeps affinity, never moves the running task or a
//!   delayed-dequeue task, and honours cache hotness (ran within
//!   `sysctl_sched_migration_cost`, or is a buddy) until balancing failed more
//!   than `cache_nice_tries` (1) times.
//! * Periodic balance every `nr_cpus` ms on an idle CPU and 16x that on a busy
//!   one (`balance_interval` x `busy_factor`); idle CPUs stop ticking (NOHZ) and
//!   are balanced through a nohz kick from a busy CPU's tick when it has two or
//!   more runnable tasks.

use super::fair::{vdiff, ENQUEUE_MIGRATED, WF_SYNC};
use super::ids::{CpuId, TaskId};
use super::{Scheduler, TaskState, SYSCTL_SCHED_MIGRATION_COST};

const CACHE_NICE_TRIES: u32 = 1;
const BUSY_FACTOR: u64 = 16;

impl Scheduler {
    fn cpu_idle(&self, c: usize) -> bool {
        self.rqs[c].nr_running == 0 && self.rqs[c].curr.is_none()
    }

    fn allowed(&self, p: TaskId, c: usize) -> bool {
        self.tasks[p.idx()].allowed[c]
    }

    /// `select_task_rq_fair()` for a wakeup (see the module doc for the model).
    pub fn select_task_rq_fair(
        &self,
        p: TaskId,
        prev: CpuId,
        wake_flags: u32,
        waker: Option<CpuId>,
    ) -> CpuId {
        let n = self.nr_cpus();
        let prev = if self.allowed(p, prev.idx()) {
            prev
        } else {
            (0..n)
                .find(|&c| self.allowed(p, c))
                .map(|c| CpuId(c as u32))
                .unwrap_or(prev)
        };
        // wake_affine(): pull towards an idle waker CPU, or a sync waker that
        // is about to sleep and has nothing else queued.
        let mut target = prev;
        if let Some(w) = waker {
            if w != prev && self.allowed(p, w.idx()) {
                let sync_ok = wake_flags & WF_SYNC != 0 && self.rqs[w.idx()].nr_running == 1;
                if (self.cpu_idle(w.idx()) || sync_ok) && !self.cpu_idle(prev.idx()) {
                    target = w;
                }
            }
        }
        // select_idle_sibling()
        if self.cpu_idle(target.idx()) {
            return target;
        }
        if prev != target && self.cpu_idle(prev.idx()) {
            return prev;
        }
        for i in 1..n {
            let c = (target.idx() + i) % n;
            if self.allowed(p, c) && self.cpu_idle(c) {
                return CpuId(c as u32);
            }
        }
        target
    }

    /// Fork placement: the allowed CPU with the fewest runnable tasks.
    pub fn select_task_rq_fork(&self, p: TaskId) -> CpuId {
        let n = self.nr_cpus();
        let start = self.tasks[p.idx()].cpu.idx();
        let mut best: Option<(u32, usize)> = None;
        for i in 0..n {
            let c = (start + i) % n;
            if !self.allowed(p, c) {
                continue;
            }
            let load = self.rqs[c].nr_running + self.rqs[c].curr.is_some() as u32;
            if best.map_or(true, |(l, _)| load < l) {
                best = Some((load, c));
            }
        }
        CpuId(best.map_or(start, |(_, c)| c) as u32)
    }

    /// `can_migrate_task()` (see the module doc).
    fn can_migrate_task(&self, p: TaskId, dst: usize, ignore_hot: bool) -> bool {
        let t = &self.tasks[p.idx()];
        if !t.allowed[dst] || t.on_cpu || !t.on_rq || t.state != TaskState::Running {
            return false;
        }
        let se = &self.ses[t.se.idx()];
        if se.sched_delayed {
            return false;
        }
        if ignore_hot {
            return true;
        }
        // task_hot()
        let q = self.cfs_rq_of(t.se);
        if self.feat.cache_hot_buddy
            && self.rqs[dst].nr_running > 0
            && self.cfs_rqs[q.idx()].next == Some(t.se)
        {
            return false;
        }
        vdiff(self.now, se.exec_start) >= SYSCTL_SCHED_MIGRATION_COST as i64
    }

    /// `detach_task()` + `attach_task()`: move a queued task between runqueues.
    /// The dequeue is not a sleep, so PLACE_REL_DEADLINE keeps its relative
    /// deadline and its lag is carried by `vlag`.
    pub fn move_queued_task(&mut self, p: TaskId, dst: CpuId) {
        self.dequeue_task_fair(p, 0);
        self.set_task_cpu(p, dst);
        self.enqueue_task_fair(p, ENQUEUE_MIGRATED);
        self.wakeup_preempt(dst, p, 0);
    }

    /// Tasks of `src` that may move to `dst`, in task-id order.
    fn migratable(&self, src: usize, dst: usize, ignore_hot: bool) -> Vec<TaskId> {
        let mut v: Vec<TaskId> = self.cpu_tasks[src]
            .iter()
            .copied()
            .filter(|&p| self.can_migrate_task(p, dst, ignore_hot))
            .collect();
        v.sort_unstable();
        v
    }

    /// The busiest other CPU by runnable count (at least two), lowest id on ties.
    fn find_busiest(&self, dst: usize) -> Option<usize> {
        let mut best: Option<(u32, usize)> = None;
        for c in 0..self.nr_cpus() {
            if c == dst {
                continue;
            }
            let nr = self.rqs[c].nr_running;
            if nr >= 2 && best.map_or(true, |(b, _)| nr > b) {
                best = Some((nr, c));
            }
        }
        best.map(|(_, c)| c)
    }

    /// Pull up to `max` tasks from the busiest CPU to `dst`; returns the number
    /// moved. Counts failures for the cache-hotness escape.
    fn pull_tasks(&mut self, dst: usize, max: u32) -> u32 {
        let Some(src) = self.find_busiest(dst) else {
            return 0;
        };
        let ignore_hot = self.rqs[dst].nr_balance_failed > CACHE_NICE_TRIES;
        let cand = self.migratable(src, dst, ignore_hot);
        let mut moved = 0;
        for p in cand {
            if moved >= max {
                break;
            }
            let (src_nr, dst_nr) = (self.rqs[src].nr_running, self.rqs[dst].nr_running);
            if src_nr <= dst_nr + 1 {
                break;
            }
            self.move_queued_task(p, CpuId(dst as u32));
            moved += 1;
        }
        if moved == 0 {
            self.rqs[dst].nr_balance_failed += 1;
        } else {
            self.rqs[dst].nr_balance_failed = 0;
        }
        moved
    }

    /// `sched_balance_newidle()`: a CPU about to go idle pulls one task.
    pub fn sched_balance_newidle(&mut self, cpu: CpuId) -> u32 {
        self.pull_tasks(cpu.idx(), 1)
    }

    /// `sched_balance_trigger()` from the tick: the periodic balance of this CPU
    /// and the nohz kick for idle CPUs.
    pub fn sched_balance_trigger(&mut self, cpu: CpuId) {
        let now = self.now;
        let interval = self.nr_cpus() as u64 * 1_000_000;
        let c = cpu.idx();
        if now >= self.rqs[c].next_balance {
            let busy = self.rqs[c].curr.is_some();
            let imbalance = self
                .find_busiest(c)
                .map(|b| {
                    (self.rqs[b]
                        .nr_running
                        .saturating_sub(self.rqs[c].nr_running))
                        / 2
                })
                .unwrap_or(0);
            if imbalance > 0 {
                self.pull_tasks(c, imbalance);
            }
            let f = if busy { BUSY_FACTOR } else { 1 };
            self.rqs[c].next_balance = now + interval * f;
        }
        if self.rqs[c].nr_running >= 2 && now >= self.nohz_next_balance {
            self.nohz_next_balance = now + interval;
            for i in 0..self.nr_cpus() {
                if self.cpu_idle(i) && self.pull_tasks(i, 1) == 0 && self.find_busiest(i).is_none()
                {
                    break;
                }
            }
        }
    }
}
