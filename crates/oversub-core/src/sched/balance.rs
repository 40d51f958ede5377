//! The load balancer of kernel/sched/fair.c (Linux 6.12.117):
//! `sched_balance_rq()` with `sched_balance_find_src_group()`
//! (`update_sd_lb_stats()`, `update_sg_lb_stats()`, `group_classify()`,
//! `update_sd_pick_busiest()`, `calculate_imbalance()`),
//! `sched_balance_find_src_rq()`, `detach_tasks()` by `task_h_load()`,
//! `can_migrate_task()`/`task_hot()` and active balance.
//!
//! Topology (docs/model.md, "Load balancing"): one domain spanning every CPU,
//! built as `sd_init()` builds an MC (shared-LLC) level: one single-CPU group
//! per CPU, `imbalance_pct` 117, `cache_nice_tries` 1, `busy_factor` 16,
//! `balance_interval` from `span_weight` to twice that (ms). No parent
//! domain, so `group_imbalanced` (set through the parent's
//! `sgc->imbalance`) never arises; no SMT, NUMA or asymmetric capacity, so
//! the smt/asym/misfit group types and `migrate_misfit` do not either. Every
//! CPU has capacity `SCHED_CAPACITY_SCALE` (no RT/IRQ pressure).

use super::fair::ENQUEUE_MIGRATED;
use super::ids::{CpuId, TaskId};
use super::pelt::SCHED_CAPACITY_SCALE;
use super::{Scheduler, SYSCTL_SCHED_MIGRATION_COST};

/// `SCHED_NR_MIGRATE_BREAK` and `sysctl_sched_nr_migrate` (!PREEMPT_RT).
const SCHED_NR_MIGRATE_BREAK: u32 = 32;
/// `MAX_PINNED_INTERVAL` (ms).
const MAX_PINNED_INTERVAL: u64 = 512;

/// The per-CPU `struct sched_domain` of the single MC-like level.
#[derive(Clone, Debug)]
pub struct SchedDomain {
    /// ms.
    pub(crate) min_interval: u64,
    pub(crate) max_interval: u64,
    pub(crate) busy_factor: u64,
    pub(crate) imbalance_pct: u64,
    pub(crate) cache_nice_tries: u32,
    /// ms.
    pub(crate) balance_interval: u64,
    pub(crate) nr_balance_failed: u32,
    /// jiffies.
    pub(crate) last_balance: u64,
}

impl SchedDomain {
    /// `sd_init()` for an SD_SHARE_LLC level of `sd_weight` CPUs.
    pub fn new(sd_weight: u32) -> SchedDomain {
        SchedDomain {
            min_interval: sd_weight as u64,
            max_interval: 2 * sd_weight as u64,
            busy_factor: 16,
            imbalance_pct: 117,
            cache_nice_tries: 1,
            balance_interval: sd_weight as u64,
            nr_balance_failed: 0,
            last_balance: 0,
        }
    }
}

/// `enum group_type`, in the kernel's order (higher is busier).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum GroupType {
    HasSpare,
    FullyBusy,
    MisfitTask,
    SmtBalance,
    AsymPacking,
    Imbalanced,
    Overloaded,
}

/// `enum migration_type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MigrationType {
    Load,
    Util,
    Task,
    Misfit,
}

/// `enum cpu_idle_type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpuIdleType {
    NotIdle,
    Idle,
    NewlyIdle,
}

impl CpuIdleType {
    /// `env->idle` as a truth value (CPU_NOT_IDLE is 0).
    fn any(self) -> bool {
        self != CpuIdleType::NotIdle
    }
}

/// `struct sg_lb_stats`.
#[derive(Clone, Debug)]
pub struct SgLbStats {
    pub(crate) avg_load: u64,
    pub(crate) group_load: u64,
    pub(crate) group_capacity: u64,
    pub(crate) group_util: u64,
    pub(crate) group_runnable: u64,
    pub(crate) sum_nr_running: u32,
    pub(crate) sum_h_nr_running: u32,
    pub(crate) idle_cpus: u32,
    pub(crate) group_weight: u32,
    pub(crate) group_type: GroupType,
}

impl SgLbStats {
    fn zero() -> SgLbStats {
        SgLbStats {
            avg_load: 0,
            group_load: 0,
            group_capacity: 0,
            group_util: 0,
            group_runnable: 0,
            sum_nr_running: 0,
            sum_h_nr_running: 0,
            idle_cpus: 0,
            group_weight: 0,
            group_type: GroupType::HasSpare,
        }
    }
}

/// `struct sd_lb_stats` (groups are single CPUs, named by their CPU).
struct SdLbStats {
    busiest: Option<usize>,
    total_load: u64,
    total_capacity: u64,
    avg_load: u64,
    busiest_stat: SgLbStats,
    local_stat: SgLbStats,
}

const LBF_ALL_PINNED: u32 = 0x01;
const LBF_NEED_BREAK: u32 = 0x02;
const LBF_SOME_PINNED: u32 = 0x08;
const LBF_ACTIVE_LB: u32 = 0x10;

/// `struct lb_env`.
struct LbEnv {
    dst_cpu: usize,
    src_cpu: usize,
    idle: CpuIdleType,
    imbalance: i64,
    migration_type: MigrationType,
    flags: u32,
    loop_: u32,
    loop_max: u32,
    loop_break: u32,
    /// The CPUs taken out of `env->cpus` (all-pinned busiest CPUs; usually
    /// none, so no allocation).
    excluded: Vec<usize>,
}

impl LbEnv {
    fn new(dst: usize, idle: CpuIdleType) -> LbEnv {
        LbEnv {
            dst_cpu: dst,
            src_cpu: dst,
            idle,
            imbalance: 0,
            migration_type: MigrationType::Load,
            flags: 0,
            loop_: 0,
            loop_max: 0,
            loop_break: SCHED_NR_MIGRATE_BREAK,
            excluded: Vec::new(),
        }
    }

    /// `cpumask_test_cpu(c, env->cpus)`.
    fn cpu_considered(&self, c: usize) -> bool {
        self.excluded.is_empty() || !self.excluded.contains(&c)
    }
}

/// `shr_bound()`.
fn shr_bound(v: u64, i: u32) -> u64 {
    v >> i.min(63)
}

impl Scheduler {
    /// `idle_cpu()`: the idle task runs, nothing is queued, and no wakeup is
    /// pending on the CPU's wakelist (`rq->ttwu_pending`).
    pub fn idle_cpu(&self, c: usize) -> bool {
        self.rqs[c].nr_running == 0 && self.rqs[c].curr.is_none() && self.rqs[c].ttwu_pending == 0
    }

    /// `capacity_of()`: every CPU at full capacity (see the module doc).
    pub fn capacity_of(&self, _c: usize) -> u64 {
        SCHED_CAPACITY_SCALE
    }

    /// `group_has_capacity()`.
    fn group_has_capacity(imbalance_pct: u64, sgs: &SgLbStats) -> bool {
        if sgs.sum_nr_running < sgs.group_weight {
            return true;
        }
        if sgs.group_capacity * imbalance_pct < sgs.group_runnable * 100 {
            return false;
        }
        sgs.group_capacity * 100 > sgs.group_util * imbalance_pct
    }

    /// `group_is_overloaded()`.
    fn group_is_overloaded(imbalance_pct: u64, sgs: &SgLbStats) -> bool {
        if sgs.sum_nr_running <= sgs.group_weight {
            return false;
        }
        if sgs.group_capacity * 100 < sgs.group_util * imbalance_pct {
            return true;
        }
        sgs.group_capacity * imbalance_pct < sgs.group_runnable * 100
    }

    /// `group_classify()` (imbalanced/asym/smt/misfit cannot arise here).
    pub fn group_classify(imbalance_pct: u64, sgs: &SgLbStats) -> GroupType {
        if Self::group_is_overloaded(imbalance_pct, sgs) {
            GroupType::Overloaded
        } else if !Self::group_has_capacity(imbalance_pct, sgs) {
            GroupType::FullyBusy
        } else {
            GroupType::HasSpare
        }
    }

    /// `update_sg_lb_stats()` for the single-CPU group of `c`.
    fn update_sg_lb_stats(&self, env: &LbEnv, c: usize, sg_overloaded: &mut bool) -> SgLbStats {
        let mut sgs = SgLbStats::zero();
        let sd = &self.rqs[env.dst_cpu].sd;
        if env.cpu_considered(c) {
            let root = &self.cfs_rqs[self.rqs[c].cfs.idx()];
            sgs.group_load += self.cpu_load(c);
            sgs.group_util += self.cpu_util_cfs(c);
            sgs.group_runnable += self.cpu_runnable(c);
            sgs.sum_h_nr_running += root.h_nr_queued;
            let nr_running = self.rqs[c].nr_running;
            sgs.sum_nr_running += nr_running;
            if nr_running == 0 && self.idle_cpu(c) {
                sgs.idle_cpus += 1;
            } else if nr_running > 1 {
                // Balancing at the root domain: the overload indicator.
                *sg_overloaded = true;
            }
        }
        sgs.group_capacity = self.capacity_of(c);
        sgs.group_weight = 1;
        sgs.group_type = Self::group_classify(sd.imbalance_pct, &sgs);
        if sgs.group_type == GroupType::Overloaded {
            sgs.avg_load = sgs.group_load * SCHED_CAPACITY_SCALE / sgs.group_capacity;
        }
        sgs
    }

    /// `update_sd_pick_busiest()`.
    fn update_sd_pick_busiest(sds: &SdLbStats, sgs: &SgLbStats) -> bool {
        let busiest = &sds.busiest_stat;
        if sgs.sum_h_nr_running == 0 {
            return false;
        }
        if sgs.group_type > busiest.group_type {
            return true;
        }
        if sgs.group_type < busiest.group_type {
            return false;
        }
        match sgs.group_type {
            GroupType::Overloaded => sgs.avg_load > busiest.avg_load,
            GroupType::Imbalanced => false,
            GroupType::FullyBusy => sgs.avg_load >= busiest.avg_load,
            GroupType::HasSpare => {
                !(sgs.idle_cpus > busiest.idle_cpus
                    || (sgs.idle_cpus == busiest.idle_cpus
                        && sgs.sum_nr_running <= busiest.sum_nr_running))
            }
            // Not reachable in this topology.
            _ => true,
        }
    }

    /// `update_idle_cpu_scan()` (SIS_UTIL): how many CPUs
    /// `select_idle_cpu()` may scan, from the LLC's utilisation.
    fn update_idle_cpu_scan(&mut self, env: &LbEnv, sum_util: u64) {
        if !self.feat.sis_util || env.idle == CpuIdleType::NewlyIdle {
            return;
        }
        let llc_weight = self.nr_cpus() as u64;
        let x = sum_util / llc_weight;
        let pct = self.rqs[env.dst_cpu].sd.imbalance_pct;
        let tmp = (x * x * pct * pct / (10000 * SCHED_CAPACITY_SCALE)).min(SCHED_CAPACITY_SCALE);
        let y = (SCHED_CAPACITY_SCALE - tmp) * llc_weight / SCHED_CAPACITY_SCALE;
        self.nr_idle_scan = y as u32;
    }

    /// `update_sd_lb_stats()` for a newly idle CPU: the same busiest group,
    /// local group and `rd->overloaded` as the full scan, without visiting
    /// the CPUs that cannot matter. A newly idle local group has spare
    /// capacity, so the outcome needs only the busiest group and the local
    /// one (`calculate_imbalance()` returns before the domain sums, and
    /// `update_idle_cpu_scan()` skips newidle balancing).
    ///
    /// First the CPUs running two tasks or more, in ring order after the
    /// local group: only they can be overloaded; a non-overloaded busiest
    /// is never preferred to an overloaded one and among overloaded ones
    /// the first with the highest `avg_load` in ring order wins, so when
    /// the busiest found there is overloaded it is the full scan's.
    /// Otherwise every CPU in ring order, skipping the empty ones: a group
    /// with no task (`sum_h_nr_running == 0`) is never picked by
    /// `update_sd_pick_busiest()` and leaves its state as it was, so the
    /// pick over the others, in the same order, is the full scan's. In
    /// both passes the CPUs not visited run at most one task, so the
    /// overload indicator seen is the full scan's.
    fn update_sd_lb_stats_newidle(&mut self, env: &LbEnv) -> SdLbStats {
        let n = self.nr_cpus();
        let dst = env.dst_cpu;
        let mut sg_overloaded = false;
        let local_stat = self.update_sg_lb_stats(env, dst, &mut sg_overloaded);
        let no_busiest = || SgLbStats {
            idle_cpus: u32::MAX,
            ..SgLbStats::zero()
        };
        let mut sds = SdLbStats {
            busiest: None,
            total_load: 0,
            total_capacity: 0,
            avg_load: 0,
            busiest_stat: no_busiest(),
            local_stat,
        };
        for (from, to) in [(dst + 1, n), (0, dst)] {
            let mut next = from;
            while let Some(c) = self.overloaded_cpus.next_in(next, to) {
                next = c + 1;
                let sgs = self.update_sg_lb_stats(env, c, &mut sg_overloaded);
                if Self::update_sd_pick_busiest(&sds, &sgs) {
                    sds.busiest = Some(c);
                    sds.busiest_stat = sgs;
                }
            }
        }
        if sds.busiest_stat.group_type != GroupType::Overloaded {
            sds.busiest = None;
            sds.busiest_stat = no_busiest();
            for (from, to) in [(dst + 1, n), (0, dst)] {
                for c in from..to {
                    if self.rqs[c].nr_running == 0
                        && self.cfs_rqs[self.rqs[c].cfs.idx()].h_nr_queued == 0
                    {
                        continue;
                    }
                    let sgs = self.update_sg_lb_stats(env, c, &mut sg_overloaded);
                    if Self::update_sd_pick_busiest(&sds, &sgs) {
                        sds.busiest = Some(c);
                        sds.busiest_stat = sgs;
                    }
                }
            }
        }
        self.rd_overloaded = sg_overloaded;
        sds
    }

    /// `update_sd_lb_stats()`: the groups in ring order from the local one.
    fn update_sd_lb_stats(&mut self, env: &LbEnv) -> SdLbStats {
        if env.idle == CpuIdleType::NewlyIdle && self.rqs[env.dst_cpu].nr_running == 0 {
            return self.update_sd_lb_stats_newidle(env);
        }
        let n = self.nr_cpus();
        let mut sds = SdLbStats {
            busiest: None,
            total_load: 0,
            total_capacity: 0,
            avg_load: 0,
            busiest_stat: SgLbStats {
                idle_cpus: u32::MAX,
                ..SgLbStats::zero()
            },
            local_stat: SgLbStats::zero(),
        };
        let mut sum_util = 0;
        let mut sg_overloaded = false;
        let mut c = env.dst_cpu;
        for k in 0..n {
            if k > 0 {
                c = if c + 1 == n { 0 } else { c + 1 };
            }
            let sgs = self.update_sg_lb_stats(env, c, &mut sg_overloaded);
            sds.total_load += sgs.group_load;
            sds.total_capacity += sgs.group_capacity;
            sum_util += sgs.group_util;
            if k == 0 {
                sds.local_stat = sgs;
            } else if Self::update_sd_pick_busiest(&sds, &sgs) {
                sds.busiest = Some(c);
                sds.busiest_stat = sgs;
            }
        }
        // No parent: this is the root domain.
        self.rd_overloaded = sg_overloaded;
        self.update_idle_cpu_scan(env, sum_util);
        sds
    }

    /// `sibling_imbalance()` for single-CPU groups (equal core counts).
    fn sibling_imbalance(env: &LbEnv, busiest: &SgLbStats, local: &SgLbStats) -> i64 {
        if !env.idle.any() || busiest.sum_nr_running == 0 {
            return 0;
        }
        (busiest.sum_nr_running as i64 - local.sum_nr_running as i64).max(0)
    }

    /// `calculate_imbalance()`.
    fn calculate_imbalance(&self, env: &mut LbEnv, sds: &mut SdLbStats) {
        let busiest = &sds.busiest_stat;
        if busiest.group_type == GroupType::Imbalanced {
            env.migration_type = MigrationType::Task;
            env.imbalance = 1;
            return;
        }
        let local = &mut sds.local_stat;
        if local.group_type == GroupType::HasSpare {
            // SD_SHARE_LLC: no migrate_util branch at this level.
            env.migration_type = MigrationType::Task;
            env.imbalance = if busiest.group_weight == 1 {
                Self::sibling_imbalance(env, busiest, local)
            } else {
                (local.idle_cpus as i64 - busiest.idle_cpus as i64).max(0)
            };
            env.imbalance >>= 1;
            return;
        }
        if local.group_type < GroupType::Overloaded {
            local.avg_load = local.group_load * SCHED_CAPACITY_SCALE / local.group_capacity;
            if local.avg_load >= busiest.avg_load {
                env.imbalance = 0;
                return;
            }
            sds.avg_load = sds.total_load * SCHED_CAPACITY_SCALE / sds.total_capacity;
            if local.avg_load >= sds.avg_load {
                env.imbalance = 0;
                return;
            }
        }
        env.migration_type = MigrationType::Load;
        let a = busiest.avg_load.saturating_sub(sds.avg_load) * busiest.group_capacity;
        let b = sds.avg_load.saturating_sub(local.avg_load) * local.group_capacity;
        env.imbalance = (a.min(b) / SCHED_CAPACITY_SCALE) as i64;
    }

    /// `sched_balance_find_src_group()` (`find_busiest_group()`): the busiest
    /// CPU if there is an imbalance worth fixing, with `env.imbalance` set.
    fn sched_balance_find_src_group(&mut self, env: &mut LbEnv) -> Option<usize> {
        let mut sds = self.update_sd_lb_stats(env);
        let Some(b) = sds.busiest else {
            env.imbalance = 0;
            return None;
        };
        let imbalance_pct = self.rqs[env.dst_cpu].sd.imbalance_pct;
        let busiest = &sds.busiest_stat;
        let local = &sds.local_stat;
        let force = busiest.group_type == GroupType::Imbalanced;
        if !force {
            if local.group_type > busiest.group_type {
                env.imbalance = 0;
                return None;
            }
            if local.group_type == GroupType::Overloaded {
                if local.avg_load >= busiest.avg_load {
                    env.imbalance = 0;
                    return None;
                }
                sds.avg_load = sds.total_load * SCHED_CAPACITY_SCALE / sds.total_capacity;
                if local.avg_load >= sds.avg_load
                    || 100 * busiest.avg_load <= imbalance_pct * local.avg_load
                {
                    env.imbalance = 0;
                    return None;
                }
            }
            // No SD_PREFER_SIBLING child: no sibling_imbalance() shortcut.
            if busiest.group_type != GroupType::Overloaded {
                if env.idle == CpuIdleType::NotIdle {
                    env.imbalance = 0;
                    return None;
                }
                if busiest.group_weight > 1 && local.idle_cpus <= busiest.idle_cpus + 1 {
                    env.imbalance = 0;
                    return None;
                }
                if busiest.sum_h_nr_running == 1 {
                    env.imbalance = 0;
                    return None;
                }
            }
        }
        self.calculate_imbalance(env, &mut sds);
        (env.imbalance != 0).then_some(b)
    }

    /// `sched_balance_find_src_rq()` (`find_busiest_queue()`) within the
    /// single-CPU group `g`.
    fn sched_balance_find_src_rq(&self, env: &LbEnv, g: usize) -> Option<usize> {
        if !env.cpu_considered(g) {
            return None;
        }
        let nr_running = self.cfs_rqs[self.rqs[g].cfs.idx()].h_nr_queued;
        if nr_running == 0 {
            return None;
        }
        match env.migration_type {
            MigrationType::Load => {
                let load = self.cpu_load(g);
                // A lone task heavier than the imbalance on a full-capacity
                // CPU (check_cpu_capacity() false) is not worth moving.
                if nr_running == 1 && load as i64 > env.imbalance {
                    return None;
                }
                (load > 0).then_some(g)
            }
            MigrationType::Util => (nr_running > 1 && self.cpu_util_cfs(g) > 0).then_some(g),
            MigrationType::Task | MigrationType::Misfit => Some(g),
        }
    }

    /// `task_hot()`: a buddy (CACHE_HOT_BUDDY) or a task that ran within
    /// `sysctl_sched_migration_cost` is cache hot.
    fn task_hot(&self, p: TaskId, env: &LbEnv) -> bool {
        // The entity the pick and its buddies see (sched/flat: the task's
        // entity on the single runqueue).
        let se = self.eevdf_se(p);
        let q = self.cfs_rq_of(se);
        if self.feat.cache_hot_buddy
            && self.rqs[env.dst_cpu].nr_running > 0
            && (self.cfs_rqs[q.idx()].next == Some(se) || self.cfs_rqs[q.idx()].last == Some(se))
        {
            return true;
        }
        let delta = self.now as i64 - self.ses[se.idx()].exec_start as i64;
        delta < SYSCTL_SCHED_MIGRATION_COST as i64
    }

    /// `can_migrate_task()` (6.12.117): affinity (noting LBF_SOME_PINNED and
    /// clearing LBF_ALL_PINNED), never the running task, then cache hotness
    /// unless active balance or `nr_balance_failed > cache_nice_tries`.
    /// A delayed-dequeue task may move, as in the kernel.
    fn can_migrate_task(&self, p: TaskId, env: &mut LbEnv) -> bool {
        let t = &self.tasks[p.idx()];
        if !t.allowed[env.dst_cpu] {
            env.flags |= LBF_SOME_PINNED;
            // dst_grpmask is the destination CPU alone: no other dst.
            return false;
        }
        env.flags &= !LBF_ALL_PINNED;
        if t.on_cpu {
            return false;
        }
        if env.flags & LBF_ACTIVE_LB != 0 {
            return true;
        }
        let sd = &self.rqs[env.dst_cpu].sd;
        !self.task_hot(p, env) || sd.nr_balance_failed > sd.cache_nice_tries
    }

    /// `detach_task()` + `attach_task()`: move a queued task between
    /// runqueues (TASK_ON_RQ_MIGRATING: its load is detached at dequeue and
    /// attached at enqueue). Not a sleep, so PLACE_REL_DEADLINE keeps its
    /// relative deadline and its lag is carried by `vlag`.
    pub fn move_queued_task(&mut self, p: TaskId, dst: CpuId) {
        self.tasks[p.idx()].migrating = true;
        self.dequeue_task_fair(p, 0);
        self.set_task_cpu(p, dst);
        self.enqueue_task_fair(p, ENQUEUE_MIGRATED);
        self.tasks[p.idx()].migrating = false;
        self.wakeup_preempt(dst, p, 0);
    }

    /// `detach_tasks()` + `attach_tasks()`: walk `src`'s `cfs_tasks` from the
    /// least recently used end, moving tasks until the imbalance is met.
    fn detach_tasks(&mut self, env: &mut LbEnv) -> u32 {
        let src = env.src_cpu;
        if self.rqs[src].nr_running <= 1 {
            env.flags &= !LBF_ALL_PINNED;
            return 0;
        }
        if env.imbalance <= 0 {
            return 0;
        }
        // The walk takes the least recently used end of `rq->cfs_tasks`
        // (index 0) each time: a skipped task is rotated to the other end,
        // a moved one leaves the list, so a task is visited at most
        // loop_max times in total, as in the kernel.
        let mut detached = 0;
        while let Some(&p) = self.rqs[src].cfs_tasks.first() {
            if env.idle.any() && self.rqs[src].nr_running <= 1 {
                break;
            }
            env.loop_ += 1;
            if env.loop_ > env.loop_max {
                break;
            }
            if env.loop_ > env.loop_break {
                env.loop_break += SCHED_NR_MIGRATE_BREAK;
                env.flags |= LBF_NEED_BREAK;
                break;
            }
            let ok = self.can_migrate_task(p, env)
                && match env.migration_type {
                    MigrationType::Load => {
                        let load = self.task_h_load(p).max(1);
                        let failed = self.rqs[env.dst_cpu].sd.nr_balance_failed;
                        if shr_bound(load, failed) as i64 > env.imbalance {
                            false
                        } else {
                            env.imbalance -= load as i64;
                            true
                        }
                    }
                    MigrationType::Util => {
                        let util = self.ses[self.tasks[p.idx()].se.idx()].avg.util_avg;
                        let failed = self.rqs[env.dst_cpu].sd.nr_balance_failed;
                        if shr_bound(util, failed) as i64 > env.imbalance {
                            false
                        } else {
                            env.imbalance -= util as i64;
                            true
                        }
                    }
                    MigrationType::Task | MigrationType::Misfit => {
                        env.imbalance -= 1;
                        true
                    }
                };
            if !ok {
                // list_move() to the head: visited again last.
                self.cfs_tasks_rotate(src, p);
                continue;
            }
            self.move_queued_task(p, CpuId(env.dst_cpu as u32));
            detached += 1;
            // CONFIG_PREEMPTION (Debian): newidle stops after one task.
            if env.idle == CpuIdleType::NewlyIdle || env.imbalance <= 0 {
                break;
            }
        }
        detached
    }

    /// `list_move(&p->se.group_node, tasks)`: a skipped task goes to the
    /// most-recently-used end of `rq->cfs_tasks`.
    fn cfs_tasks_rotate(&mut self, cpu: usize, p: TaskId) {
        let list = &mut self.rqs[cpu].cfs_tasks;
        if let Some(i) = list.iter().position(|&x| x == p) {
            list.remove(i);
            list.push(p);
        }
    }

    /// `need_active_balance()`: at full capacity only
    /// `imbalanced_active_balance()` applies.
    fn need_active_balance(&self, env: &LbEnv) -> bool {
        let sd = &self.rqs[env.dst_cpu].sd;
        env.migration_type == MigrationType::Task && sd.nr_balance_failed > sd.cache_nice_tries + 2
    }

    /// `sched_balance_rq()` (`load_balance()`, 6.12.117) of `this_cpu` in the
    /// single domain; returns the number of tasks moved.
    pub fn sched_balance_rq(&mut self, this_cpu: usize, idle: CpuIdleType) -> u32 {
        let n = self.nr_cpus();
        let mut env = LbEnv::new(this_cpu, idle);
        let mut ld_moved = 0;
        let mut active_balance = false;
        'redo: loop {
            // should_we_balance(): with single-CPU groups every CPU is its
            // group's balance CPU; newidle only if still empty.
            if idle == CpuIdleType::NewlyIdle && self.rqs[this_cpu].nr_running > 0 {
                return self.lb_out_balanced(&env);
            }
            // A newly idle CPU is a has_spare local group; with no CPU
            // running two tasks no group is overloaded and no sibling
            // imbalance reaches one task, so sched_balance_find_src_group()
            // finds nothing and its scan only clears rd->overloaded.
            // Skipped, with the same outcome (not a kernel shortcut: the
            // kernel skips by avg_idle, which is not modelled).
            if idle == CpuIdleType::NewlyIdle && self.overloaded_cpus.weight() == 0 {
                self.rd_overloaded = false;
                return self.lb_out_balanced(&env);
            }
            let Some(group) = self.sched_balance_find_src_group(&mut env) else {
                return self.lb_out_balanced(&env);
            };
            let Some(busiest) = self.sched_balance_find_src_rq(&env, group) else {
                return self.lb_out_balanced(&env);
            };
            env.src_cpu = busiest;
            env.flags |= LBF_ALL_PINNED;
            if self.rqs[busiest].nr_running > 1 {
                env.loop_max = SCHED_NR_MIGRATE_BREAK.min(self.rqs[busiest].nr_running);
                loop {
                    ld_moved += self.detach_tasks(&mut env);
                    if env.flags & LBF_NEED_BREAK != 0 {
                        env.flags &= !LBF_NEED_BREAK;
                        continue;
                    }
                    break;
                }
                if env.flags & LBF_ALL_PINNED != 0 {
                    // __cpumask_clear_cpu(busiest, env->cpus); redo while
                    // a CPU other than this one is left.
                    env.excluded.push(busiest);
                    if env.excluded.len() + 1 < n {
                        env.loop_ = 0;
                        env.loop_break = SCHED_NR_MIGRATE_BREAK;
                        continue 'redo;
                    }
                    // out_all_pinned
                    self.rqs[this_cpu].sd.nr_balance_failed = 0;
                    return self.lb_out_one_pinned(&env);
                }
            }
            break;
        }
        if ld_moved == 0 {
            if idle != CpuIdleType::NewlyIdle {
                self.rqs[this_cpu].sd.nr_balance_failed += 1;
            }
            if self.need_active_balance(&env) {
                let b = env.src_cpu;
                let curr_allowed = self.rqs[b]
                    .curr
                    .is_some_and(|c| self.tasks[c.idx()].allowed[this_cpu]);
                if !curr_allowed {
                    return self.lb_out_one_pinned(&env);
                }
                env.flags &= !LBF_ALL_PINNED;
                if self.rqs[b].active_balance.is_none() {
                    // stop_one_cpu_nowait(): the stopper preempts busiest's
                    // curr at its next __schedule().
                    self.rqs[b].active_balance = Some(CpuId(this_cpu as u32));
                    active_balance = true;
                    self.resched_curr(CpuId(b as u32));
                }
            }
        } else {
            self.rqs[this_cpu].sd.nr_balance_failed = 0;
        }
        if !active_balance || self.need_active_balance(&env) {
            let sd = &mut self.rqs[this_cpu].sd;
            sd.balance_interval = sd.min_interval;
        }
        ld_moved
    }

    /// The `out_balanced` exit of `sched_balance_rq()`.
    fn lb_out_balanced(&mut self, env: &LbEnv) -> u32 {
        self.rqs[env.dst_cpu].sd.nr_balance_failed = 0;
        self.lb_out_one_pinned(env)
    }

    /// The `out_one_pinned` exit: back off the balance interval (not for
    /// newidle balancing).
    fn lb_out_one_pinned(&mut self, env: &LbEnv) -> u32 {
        if env.idle == CpuIdleType::NewlyIdle {
            return 0;
        }
        let sd = &mut self.rqs[env.dst_cpu].sd;
        if (env.flags & LBF_ALL_PINNED != 0 && sd.balance_interval < MAX_PINNED_INTERVAL)
            || sd.balance_interval < sd.max_interval
        {
            sd.balance_interval *= 2;
        }
        0
    }

    /// `active_load_balance_cpu_stop()` run by `busiest`'s stopper: its
    /// running task has just been switched out; move one task (the first
    /// movable from the least recently used end, `detach_one_task()`) to
    /// `target`, ignoring cache hotness (LBF_ACTIVE_LB).
    pub fn active_load_balance_cpu_stop(&mut self, busiest: CpuId, target: CpuId) {
        let b = busiest.idx();
        if self.rqs[b].nr_running <= 1 {
            return;
        }
        let mut env = LbEnv::new(target.idx(), CpuIdleType::Idle);
        env.src_cpu = b;
        env.flags = LBF_ACTIVE_LB;
        let list = self.rqs[b].cfs_tasks.clone();
        for p in list {
            if self.can_migrate_task(p, &mut env) {
                self.move_queued_task(p, target);
                return;
            }
        }
    }
}
