//! Task placement at wakeup and fork, after kernel/sched/fair.c (Linux
//! 6.12.117): `select_task_rq_fair()` with `record_wakee()`/`wake_wide()`,
//! `wake_affine()` (WA_IDLE, WA_WEIGHT, WA_BIAS), `select_idle_sibling()`
//! (target, prev, `recent_used_cpu`, then `select_idle_cpu()` limited by
//! SIS_UTIL) and, for new tasks, `sched_balance_find_dst_cpu()`
//! (`find_idlest_cpu()`) with `sched_balance_find_dst_group()`.
//!
//! Topology as in `balance`: one LLC domain of single-CPU groups, no SMT
//! (so no idle-core search), no energy model (`find_energy_efficient_cpu()`
//! never applies), no core scheduling. Sync wakeups (WF_SYNC) are what
//! the caller passes: the pipe wakeups of the `pingpong` and `messaging`
//! tasks (task::Step::wake_flags); in 6.12.117 fair.c reads WF_SYNC only
//! here, in `wake_affine_idle()` and `wake_affine_weight()`.

use super::balance::{GroupType, SgLbStats};
use super::fair::WF_SYNC;
use super::ids::{CpuId, TaskId};
use super::pelt::SCHED_CAPACITY_SCALE;
use super::weight::NICE_0_LOAD;
use super::Scheduler;

impl Scheduler {
    fn allowed(&self, p: TaskId, c: usize) -> bool {
        self.tasks[p.idx()].allowed[c]
    }

    /// `available_idle_cpu()` (no vCPU preemption on the host).
    fn available_idle_cpu(&self, c: usize) -> bool {
        self.idle_cpu(c)
    }

    /// `record_wakee()`: the waker (`current` of `cpu`) counts wakee flips,
    /// halved every second.
    fn record_wakee(&mut self, waker: Option<TaskId>, p: TaskId) {
        let Some(w) = waker else {
            return;
        };
        let jiffies = self.jiffies();
        let hz = self.cfg.hz as u64;
        let t = &mut self.tasks[w.idx()];
        if jiffies > t.wakee_flip_decay_ts + hz {
            t.wakee_flips >>= 1;
            t.wakee_flip_decay_ts = jiffies;
        }
        if t.last_wakee != Some(p) {
            t.last_wakee = Some(p);
            t.wakee_flips += 1;
        }
    }

    /// `wake_wide()`: many-to-many wakeup patterns are not pulled together.
    fn wake_wide(&self, waker: Option<TaskId>, p: TaskId) -> bool {
        let mut master = waker.map_or(0, |w| self.tasks[w.idx()].wakee_flips);
        let mut slave = self.tasks[p.idx()].wakee_flips;
        let factor = self.nr_cpus() as u32;
        if master < slave {
            std::mem::swap(&mut master, &mut slave);
        }
        !(slave < factor || master < slave.saturating_mul(factor))
    }

    /// `wake_affine_idle()`: None is `nr_cpumask_bits` (no decision). A
    /// sync wakeup (the waker is about to sleep) whose waker is alone on
    /// its CPU, not counting delayed-dequeue entities
    /// (`rq->nr_running - cfs_h_nr_delayed(rq)`, 6.12.117), takes the
    /// waker's CPU.
    fn wake_affine_idle(&self, this_cpu: usize, prev: usize, sync: bool) -> Option<usize> {
        if self.available_idle_cpu(this_cpu) {
            return Some(if self.available_idle_cpu(prev) {
                prev
            } else {
                this_cpu
            });
        }
        if sync {
            let rq = &self.rqs[this_cpu];
            let delayed = self.cfs_rqs[rq.cfs.idx()].h_nr_delayed;
            if rq.nr_running.saturating_sub(delayed) == 1 {
                return Some(this_cpu);
            }
        }
        if self.available_idle_cpu(prev) {
            return Some(prev);
        }
        None
    }

    /// `wake_affine_weight()`: the waker's CPU if its load with the wakee
    /// (biased by WA_BIAS) is below prev's without it.
    fn wake_affine_weight(
        &mut self,
        p: TaskId,
        this_cpu: usize,
        prev: usize,
        sync: bool,
        waker: Option<TaskId>,
    ) -> Option<usize> {
        let mut this_eff_load = self.cpu_load(this_cpu) as i64;
        if sync {
            if let Some(w) = waker {
                let current_load = self.task_h_load(w) as i64;
                if current_load > this_eff_load {
                    return Some(this_cpu);
                }
                this_eff_load -= current_load;
            }
        }
        let task_load = self.task_h_load(p) as i64;
        this_eff_load += task_load;
        let imbalance_pct = self.rqs[this_cpu].sd.imbalance_pct as i64;
        if self.feat.wa_bias {
            this_eff_load *= 100;
        }
        this_eff_load *= self.capacity_of(prev) as i64;
        let mut prev_eff_load = self.cpu_load(prev) as i64;
        prev_eff_load -= task_load;
        if self.feat.wa_bias {
            prev_eff_load *= 100 + (imbalance_pct - 100) / 2;
        }
        prev_eff_load *= self.capacity_of(this_cpu) as i64;
        if sync {
            prev_eff_load += 1;
        }
        (this_eff_load < prev_eff_load).then_some(this_cpu)
    }

    /// `wake_affine()`: the waker's CPU or prev.
    fn wake_affine(
        &mut self,
        p: TaskId,
        this_cpu: usize,
        prev: usize,
        sync: bool,
        waker: Option<TaskId>,
    ) -> usize {
        let mut target = None;
        if self.feat.wa_idle {
            target = self.wake_affine_idle(this_cpu, prev, sync);
        }
        if self.feat.wa_weight && target.is_none() {
            target = self.wake_affine_weight(p, this_cpu, prev, sync, waker);
        }
        if target != Some(this_cpu) {
            return prev;
        }
        this_cpu
    }

    /// `select_idle_cpu()`: scan the LLC from target + 1 (wrapping) for an
    /// idle allowed CPU, at most `nr_idle_scan` CPUs under SIS_UTIL.
    fn select_idle_cpu(&self, p: TaskId, target: usize) -> Option<usize> {
        let n = self.nr_cpus();
        let mut nr = i64::MAX;
        if self.feat.sis_util {
            nr = self.nr_idle_scan as i64 + 1;
            if nr == 1 {
                return None;
            }
        }
        if self.tasks[p.idx()].allowed.weight() as usize == n {
            // Every CPU allowed: each step of the walk below costs one of
            // `nr`, so the first idle CPU in ring order after `target`
            // (`nohz.idle_cpus_mask` is exactly the idle CPUs), at ring
            // distance d, is returned iff d < nr. Same result, no walk.
            let c = self
                .nohz
                .next_in(target + 1, n)
                .or_else(|| self.nohz.next_in(0, target + 1))?;
            let d = if c > target {
                c - target
            } else {
                c + n - target
            };
            return ((d as i64) < nr).then_some(c);
        }
        let mut c = target;
        for _ in 0..n {
            c = if c + 1 == n { 0 } else { c + 1 };
            if !self.allowed(p, c) {
                continue;
            }
            nr -= 1;
            if nr <= 0 {
                return None;
            }
            if self.available_idle_cpu(c) {
                return Some(c);
            }
        }
        None
    }

    /// `select_idle_sibling()` (6.12.117, no SMT, no asymmetric capacity).
    fn select_idle_sibling(&mut self, p: TaskId, prev: usize, target: usize) -> usize {
        if self.available_idle_cpu(target) {
            return target;
        }
        if prev != target && self.available_idle_cpu(prev) {
            return prev;
        }
        let recent = self.tasks[p.idx()].recent_used_cpu.idx();
        self.tasks[p.idx()].recent_used_cpu = CpuId(prev as u32);
        if recent != prev
            && recent != target
            && self.available_idle_cpu(recent)
            && self.allowed(p, recent)
        {
            return recent;
        }
        self.select_idle_cpu(p, target).unwrap_or(target)
    }

    /// `select_task_rq_fair()` for a wakeup (WF_TTWU) on `waker_cpu` (the
    /// CPU running `try_to_wake_up()`; a timer wakeup runs on the CPU the
    /// sleeper armed it on, its prev CPU).
    pub fn select_task_rq_fair(
        &mut self,
        p: TaskId,
        prev: CpuId,
        wake_flags: u32,
        waker_cpu: Option<CpuId>,
    ) -> CpuId {
        let cpu = waker_cpu.unwrap_or(prev).idx();
        let waker = self.rqs[cpu].curr.filter(|&w| w != p);
        let sync = wake_flags & WF_SYNC != 0;
        let prev_cpu = prev.idx();
        self.record_wakee(waker, p);
        let want_affine = !self.wake_wide(waker, p) && self.allowed(p, cpu);
        let mut new_cpu = prev_cpu;
        if want_affine && cpu != prev_cpu {
            new_cpu = self.wake_affine(p, cpu, prev_cpu, sync, waker);
        }
        let c = self.select_idle_sibling(p, prev_cpu, new_cpu);
        // select_task_rq(): an unusable result falls back to an allowed CPU
        // (select_fallback_rq()).
        if self.allowed(p, c) {
            CpuId(c as u32)
        } else {
            let n = self.nr_cpus();
            let f = (0..n).find(|&i| self.allowed(p, i)).unwrap_or(prev_cpu);
            CpuId(f as u32)
        }
    }

    /// `update_sg_wakeup_stats()` for the single-CPU group `c`; a new task
    /// (zero `last_update_time`) is not yet in any CPU's figures.
    fn update_sg_wakeup_stats(&self, c: usize, p: TaskId) -> SgLbStats {
        let running_here = self.tasks[p.idx()].on_cpu && self.tasks[p.idx()].cpu.idx() == c;
        let local = running_here as u32;
        let root = &self.cfs_rqs[self.rqs[c].cfs.idx()];
        let nr_running = self.rqs[c].nr_running - local;
        let mut sgs = SgLbStats {
            avg_load: 0,
            group_load: self.cpu_load(c),
            group_capacity: self.capacity_of(c),
            group_util: self.cpu_util_cfs(c),
            group_runnable: self.cpu_runnable(c),
            sum_nr_running: nr_running,
            sum_h_nr_running: root.h_nr_queued - local,
            idle_cpus: (nr_running == 0 && (self.idle_cpu(c) || running_here)) as u32,
            group_weight: 1,
            group_type: GroupType::HasSpare,
        };
        sgs.group_type = Self::group_classify(self.rqs[c].sd.imbalance_pct, &sgs);
        if matches!(sgs.group_type, GroupType::FullyBusy | GroupType::Overloaded) {
            sgs.avg_load = sgs.group_load * SCHED_CAPACITY_SCALE / sgs.group_capacity;
        }
        sgs
    }

    /// `update_pick_idlest()`.
    fn update_pick_idlest(idlest: &SgLbStats, sgs: &SgLbStats) -> bool {
        if sgs.group_type < idlest.group_type {
            return true;
        }
        if sgs.group_type > idlest.group_type {
            return false;
        }
        match sgs.group_type {
            GroupType::Overloaded | GroupType::FullyBusy => idlest.avg_load > sgs.avg_load,
            GroupType::HasSpare => {
                !(idlest.idle_cpus > sgs.idle_cpus
                    || (idlest.idle_cpus == sgs.idle_cpus && idlest.group_util <= sgs.group_util))
            }
            _ => false,
        }
    }

    /// `sched_balance_find_dst_group()` (`find_idlest_group()`): a CPU to
    /// push the new task to, or None to stay on `this_cpu`.
    fn sched_balance_find_dst_group(&self, p: TaskId, this_cpu: usize) -> Option<usize> {
        let n = self.nr_cpus();
        let mut idlest: Option<(usize, SgLbStats)> = None;
        let mut local: Option<SgLbStats> = None;
        for k in 0..n {
            let c = (this_cpu + k) % n;
            if !self.allowed(p, c) {
                continue;
            }
            let sgs = self.update_sg_wakeup_stats(c, p);
            if c == this_cpu {
                local = Some(sgs);
            } else {
                let better = match &idlest {
                    None => Self::update_pick_idlest(
                        &SgLbStats {
                            avg_load: u32::MAX as u64,
                            group_type: GroupType::Overloaded,
                            ..sgs.clone()
                        },
                        &sgs,
                    ),
                    Some((_, i)) => Self::update_pick_idlest(i, &sgs),
                };
                if better {
                    idlest = Some((c, sgs));
                }
            }
        }
        let (ic, idlest) = idlest?;
        let Some(local) = local else {
            return Some(ic);
        };
        if local.group_type < idlest.group_type {
            return None;
        }
        if local.group_type > idlest.group_type {
            return Some(ic);
        }
        let imbalance_pct = self.rqs[this_cpu].sd.imbalance_pct;
        match local.group_type {
            GroupType::Overloaded | GroupType::FullyBusy => {
                let imbalance = (NICE_0_LOAD >> 10) * (imbalance_pct - 100) / 100;
                if idlest.avg_load >= local.avg_load + imbalance {
                    return None;
                }
                if 100 * local.avg_load <= imbalance_pct * idlest.avg_load {
                    return None;
                }
            }
            GroupType::HasSpare => {
                if local.idle_cpus >= idlest.idle_cpus {
                    return None;
                }
            }
            _ => return None,
        }
        Some(ic)
    }

    /// Fork placement: `select_task_rq_fair()` with WF_FORK, i.e.
    /// `sched_balance_find_dst_cpu()` from the task's current CPU (single
    /// domain, single-CPU groups: one `find_idlest_group()` step).
    pub fn select_task_rq_fork(&mut self, p: TaskId) -> CpuId {
        let cpu = self.tasks[p.idx()].cpu.idx();
        let n = self.nr_cpus();
        if !(0..n).any(|c| self.allowed(p, c)) {
            return CpuId(cpu as u32);
        }
        let c = self.sched_balance_find_dst_group(p, cpu).unwrap_or(cpu);
        if self.allowed(p, c) {
            CpuId(c as u32)
        } else {
            let f = (0..n).find(|&i| self.allowed(p, i)).unwrap_or(cpu);
            CpuId(f as u32)
        }
    }
}
