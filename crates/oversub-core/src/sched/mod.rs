//! The host scheduler: a model of kernel/sched (fair class) of Linux 6.12.117,
//! with kernel presets for 6.12.0 and 6.19 (see `features`), and the CFS
//! fair class of Linux 6.1 (`cfs`, the `6.1` preset), and Peter Zijlstra's
//! single-runqueue EEVDF (`flat`, the `flat` preset).
//!
//! Layout follows the kernel: `class` the fair class's entry points, each
//! dispatched to the class the preset chose once (EEVDF, `cfs` or `flat`),
//! `fair` the EEVDF fair-class functions of fair.c, `core` the
//! class-independent parts of core.c/syscalls.c (schedule, wakeups,
//! yield_to, the tick), `group` the task-group weight machinery,
//! `balance` the load balancer, `idle_balance` its triggers (periodic,
//! newidle, nohz), `select` wakeup/fork placement, `pelt` the PELT
//! arithmetic and `load_avg` its fair.c glue.
//!
//! The model is driven by `sim::Simulator`: every entry point runs at the
//! virtual instant `Scheduler::now`, and reschedule requests are collected and
//! served by the simulator (`take_resched`).

pub mod balance;
pub mod cfs;
pub mod class;
pub mod core;
pub mod costs;
pub mod cpumask;
pub mod entity;
pub mod fair;
pub mod features;
pub mod flat;
pub mod group;
pub mod idle_balance;
pub mod ids;
pub mod invariants;
pub mod ipis;
pub mod load_avg;
pub mod pelt;
pub mod select;
pub mod timeline;
pub mod weight;
pub mod yield_to;

pub use class::FairClass;
pub use costs::HostCosts;
pub use cpumask::CpuMask;
pub use entity::{CfsRq, SchedEntity, VruntimeStep};
pub use features::{KernelPreset, SchedFeatures};
pub use ids::{CfsRqId, CpuId, GroupId, SeId, TaskId};

use weight::{nice_to_weight, LoadWeight, NICE_0_LOAD};

/// `sysctl_sched_migration_cost` (ns): a task that ran this recently is cache hot.
pub const SYSCTL_SCHED_MIGRATION_COST: u64 = 500_000;

/// Static configuration of the modelled host.
#[derive(Clone, Debug)]
pub struct SchedConfig {
    pub(crate) nr_cpus: u32,
    pub(crate) hz: u32,
    pub(crate) features: SchedFeatures,
    pub(crate) preset: KernelPreset,
    /// Wake-path, switch and migration costs (`[host.costs]`).
    pub(crate) costs: HostCosts,
}

impl SchedConfig {
    /// A host of `nr_cpus` CPUs at `hz` running kernel `preset` with its
    /// features and free wake paths and switches ([`HostCosts::ZERO`]).
    pub fn new(preset: KernelPreset, nr_cpus: u32, hz: u32) -> SchedConfig {
        SchedConfig {
            nr_cpus,
            hz,
            features: preset.features(),
            preset,
            costs: HostCosts::ZERO,
        }
    }

    /// This configuration with the feature switches `features` (a preset's
    /// with some changed: [`SchedFeatures::set`]).
    pub fn with_features(self, features: SchedFeatures) -> SchedConfig {
        SchedConfig { features, ..self }
    }

    /// This configuration with the host costs `costs`.
    pub fn with_costs(self, costs: HostCosts) -> SchedConfig {
        SchedConfig { costs, ..self }
    }

    /// `TICK_NSEC`.
    pub fn tick_nsec(&self) -> u64 {
        (1_000_000_000 + self.hz as u64 / 2) / self.hz as u64
    }

    /// `sysctl_sched_base_slice`: 0.7 ms scaled by 1 + ilog2(min(ncpus, 8))
    /// (SCHED_TUNABLESCALING_LOG, the default).
    pub fn base_slice(&self) -> u64 {
        let n = self.nr_cpus.clamp(1, 8);
        let factor = 1 + (31 - n.leading_zeros()) as u64;
        700_000 * factor
    }
}

/// `p->__state` reduced to what the fair class looks at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskState {
    /// TASK_RUNNING: on a CPU or queued to run.
    Running,
    /// Blocked (TASK_INTERRUPTIBLE); may still be queued as a delayed entity.
    Sleeping,
}

/// Per-task counters as /proc/PID/sched and schedstat report them.
#[derive(Clone, Debug, Default)]
pub struct TaskStats {
    pub(crate) wait_ns: u64,
    pub(crate) nr_switches: u64,
    pub(crate) nr_voluntary_switches: u64,
    pub(crate) nr_involuntary_switches: u64,
    pub(crate) nr_yields: u64,
    pub(crate) nr_yield_to: u64,
    pub(crate) nr_yield_to_ok: u64,
    /// Successful yield_to() calls after which the target got this CPU.
    pub(crate) nr_yield_to_target_ran: u64,
    pub(crate) nr_migrations: u64,
    pub(crate) nr_wakeups: u64,
    /// Wakeup-to-run latencies (ns), one sample per wakeup that reached a CPU.
    pub(crate) wakeup_latency: Vec<u64>,
}

pub struct Task {
    pub(crate) id: TaskId,
    pub(crate) name: String,
    pub(crate) se: SeId,
    /// `task_cpu(p)`.
    pub(crate) cpu: CpuId,
    pub(crate) state: TaskState,
    /// `p->on_rq`: queued (including a delayed-dequeue entity).
    pub(crate) on_rq: bool,
    /// `task_on_cpu()`.
    pub(crate) on_cpu: bool,
    pub(crate) group: GroupId,
    pub(crate) nice: i32,
    /// `p->cpus_mask`.
    pub(crate) allowed: CpuMask,
    pub(crate) stats: TaskStats,
    /// When the pending wakeup happened (cleared when the task runs).
    pub(crate) wake_time: Option<u64>,
    /// `p->on_rq == TASK_ON_RQ_MIGRATING`: being moved by the balancer.
    pub(crate) migrating: bool,
    /// `p->recent_used_cpu` (`select_idle_sibling()`).
    pub(crate) recent_used_cpu: CpuId,
    /// `p->wakee_flips`, `wakee_flip_decay_ts` (jiffies), `last_wakee`
    /// (`record_wakee()`/`wake_wide()`).
    pub(crate) wakee_flips: u32,
    pub(crate) wakee_flip_decay_ts: u64,
    pub(crate) last_wakee: Option<TaskId>,
    /// Since when the task waits queued but not running.
    pub(crate) wait_since: Option<u64>,
    /// `p->last_yield` of the sched_yield throttle (Kuba Piecuch's RFC).
    pub(crate) last_yield: u64,
    /// `TASK_WAKING` on a remote CPU's wakelist: runnable, not yet queued
    /// (`ttwu_queue_wakelist()` until `sched_ttwu_pending()`).
    pub(crate) waking: bool,
    /// Changed CPU since it last ran (pays `HostCosts::migration` on its
    /// next switch-in).
    pub(crate) migrated: bool,
}

/// `struct task_group`.
pub struct TaskGroup {
    pub(crate) path: String,
    pub(crate) parent: Option<GroupId>,
    /// `tg->shares` (scaled).
    pub(crate) shares: u64,
    /// `tg->load_avg`: Σ over CPUs of the cfs_rqs' `tg_load_avg_contrib`.
    pub(crate) load_avg: i64,
    /// One cfs_rq per CPU.
    pub(crate) cfs_rq: Vec<CfsRqId>,
    /// The group's entity per CPU (None for the root group).
    pub(crate) se: Vec<Option<SeId>>,
    pub(crate) depth: u32,
}

/// `struct rq`, the per-CPU runqueue.
pub struct Rq {
    pub(crate) cpu: CpuId,
    pub(crate) cfs: CfsRqId,
    /// The running task; None means the idle task.
    pub(crate) curr: Option<TaskId>,
    pub(crate) nr_running: u32,
    pub(crate) need_resched: bool,
    /// When the current task (or idle) started running here.
    pub(crate) switched_at: u64,
    pub(crate) busy_ns: u64,
    /// `rq->next_balance` (ns on the jiffy grid).
    pub(crate) next_balance: u64,
    /// The CPU's copy of the single domain (`struct sched_domain` fields).
    pub(crate) sd: balance::SchedDomain,
    /// `rq->cfs_tasks`: queued fair tasks, most recently used last.
    pub(crate) cfs_tasks: Vec<TaskId>,
    /// `rq->has_blocked_load`, `rq->last_blocked_load_update_tick` (jiffies).
    pub(crate) has_blocked_load: bool,
    pub(crate) last_blocked_load_update_tick: u64,
    /// `rq->active_balance` / `push_cpu`: an active balance queued for the
    /// stopper (run by the next `__schedule()` of this CPU).
    pub(crate) active_balance: Option<CpuId>,
    pub(crate) yld_count: u64,
    pub(crate) nr_switches: u64,
    /// Tasks on this CPU's wakelist (`rq->ttwu_pending`): the CPU is not
    /// idle for `idle_cpu()` while it has some.
    pub(crate) ttwu_pending: u32,
    /// A wakeup activated here at once (zero `remote_wakeup` cost) would
    /// have gone through the wakelist in 6.12, so the IPI this CPU gets for
    /// it is a call-function IPI, not a reschedule IPI (`ipis`); taken by
    /// the guest IPI sender, cleared by `__schedule()`.
    pub(crate) wakelist_ipi: bool,
}

impl Task {
    /// The task's scheduling entity.
    pub fn se(&self) -> SeId {
        self.se
    }

    /// `task_cpu(p)`.
    pub fn cpu(&self) -> CpuId {
        self.cpu
    }

    /// Its /proc/PID/sched counters.
    pub fn stats(&self) -> &TaskStats {
        &self.stats
    }

    /// `p->cpus_mask`, to change it (`set_cpus_allowed_ptr()` without the
    /// migration it may cause: the task moves on its next wakeup).
    pub fn allowed_mut(&mut self) -> &mut CpuMask {
        &mut self.allowed
    }
}

impl TaskStats {
    /// Migrations (`se.nr_migrations`).
    pub fn nr_migrations(&self) -> u64 {
        self.nr_migrations
    }
}

impl Rq {
    /// The running task; None means the idle task.
    pub fn curr(&self) -> Option<TaskId> {
        self.curr
    }

    /// `rq->nr_running`.
    pub fn nr_running(&self) -> u32 {
        self.nr_running
    }

    /// `TIF_NEED_RESCHED` of the running task.
    pub fn need_resched(&self) -> bool {
        self.need_resched
    }

    /// `rq->active_balance` / `push_cpu`: an active balance queued for the
    /// stopper.
    pub fn active_balance(&self) -> Option<CpuId> {
        self.active_balance
    }

    /// The CPU's copy of its sched domain.
    pub fn sd(&self) -> &balance::SchedDomain {
        &self.sd
    }
}

impl balance::SchedDomain {
    /// `sd->cache_nice_tries`: failed balances before a cache-hot task
    /// may be moved.
    pub fn cache_nice_tries(&self) -> u32 {
        self.cache_nice_tries
    }
}

/// The host scheduler state. See the module doc.
pub struct Scheduler {
    pub(crate) cfg: SchedConfig,
    /// The fair class of `cfg.preset`, chosen once (`sched::class`).
    pub(crate) class: FairClass,
    pub(crate) feat: SchedFeatures,
    /// The virtual instant every entry point runs at (`rq_clock()`).
    pub(crate) now: u64,
    pub(crate) tasks: Vec<Task>,
    pub(crate) ses: Vec<SchedEntity>,
    pub(crate) cfs_rqs: Vec<CfsRq>,
    pub(crate) groups: Vec<TaskGroup>,
    pub(crate) rqs: Vec<Rq>,
    enqueue_seq: u64,
    resched: Vec<CpuId>,
    /// HRTICK timers armed by `hrtick_start_fair()`: (cpu, expiry), drained by
    /// the simulator.
    pub(crate) hrtick_requests: Vec<(CpuId, u64)>,
    /// Tasks homed on each CPU (`task_cpu(p) == cpu`), for the balancer.
    pub(crate) cpu_tasks: Vec<Vec<TaskId>>,
    /// `rd->overloaded` (some CPU has two or more runnable tasks).
    pub(crate) rd_overloaded: bool,
    /// `nohz.has_blocked`, `nohz.next_blocked` (ns).
    pub(crate) nohz_has_blocked: bool,
    pub(crate) nohz_next_blocked: u64,
    /// `nohz.idle_cpus_mask` and `nohz.nr_cpus`, kept on idle entry and exit.
    pub(crate) nohz: CpuMask,
    /// CPUs with two or more runnable tasks right now (what sets
    /// `rd->overloaded`), kept by `add_nr_running()`/`sub_nr_running()`.
    pub(crate) overloaded_cpus: CpuMask,
    /// `sd_llc_shared->nr_idle_scan` (SIS_UTIL), set by the load balancer.
    pub(crate) nr_idle_scan: u32,
    /// Scratch for `__update_blocked_fair()` (kept to avoid allocations).
    pub(crate) scratch_child_on: Vec<bool>,
    /// `[host.yield]`: the yield_to() policy and its knobs.
    pub(crate) yield_cfg: yield_to::YieldConfig,
    /// Per-rq state of the yield policies.
    pub(crate) yield_rq: Vec<yield_to::YieldRqState>,
    /// What the yield policies did.
    pub(crate) yield_stats: yield_to::YieldStats,
    /// The CPU the current entry point runs on (`smp_processor_id()`), set by
    /// the simulator; None for a context without one (treated as local).
    pub(crate) this_cpu: Option<CpuId>,
    /// Reschedule IPIs to other CPUs raised by `resched_curr()` (served by the
    /// simulator after `HostCosts::remote_wakeup`).
    pub(crate) resched_ipis: Vec<CpuId>,
    /// Wakeups queued on a remote CPU's wakelist (`ttwu_queue_wakelist()`),
    /// activated by the simulator after `HostCosts::remote_wakeup` with
    /// [`Scheduler::sched_ttwu_pending`]: (task, enqueue flags).
    pub(crate) wakelist: Vec<(TaskId, u32)>,
    /// The IPIs sent to other CPUs, by type (`ipis`).
    pub(crate) ipi_stats: ipis::SchedIpiStats,
    /// The waking CPU while `try_to_wake_up()` activates a task (the CPU
    /// `resched_curr()` runs on; `this_cpu` may be None for a timer).
    pub(crate) ttwu_from: Option<CpuId>,
    /// While `try_to_wake_up()` activates a task at once that 6.12 would
    /// have queued on the target's wakelist (`ipis`).
    pub(crate) ttwu_wakelisted: bool,
    /// The `flat` preset's runqueues and task entities (None otherwise).
    pub(crate) flat: Option<flat::FlatState>,
}

/// The root task group.
pub const ROOT_GROUP: GroupId = GroupId(0);

/// Access for code outside the crate (the front ends and the integration
/// tests): the state stays `pub(crate)`, these name what they return.
impl Scheduler {
    /// The scheduler's clock (ns): `rq_clock()`, set by the level's driver
    /// before every call in.
    pub fn now(&self) -> u64 {
        self.now
    }

    /// Sets the scheduler's clock (ns), as the level's driver does before it
    /// calls in.
    pub fn set_now(&mut self, now: u64) {
        self.now = now;
    }

    /// The run-time sched features (`/sys/kernel/debug/sched/features`), to
    /// switch one before a run.
    pub fn features_mut(&mut self) -> &mut SchedFeatures {
        &mut self.feat
    }

    /// CPU `cpu`'s runqueue.
    pub fn rq(&self, cpu: CpuId) -> &Rq {
        &self.rqs[cpu.idx()]
    }

    /// Task `t`.
    pub fn task(&self, t: TaskId) -> &Task {
        &self.tasks[t.idx()]
    }

    /// Task `t`, to change it directly (its affinity mask, say).
    pub fn task_mut(&mut self, t: TaskId) -> &mut Task {
        &mut self.tasks[t.idx()]
    }

    /// Scheduling entity `se`.
    pub fn se(&self, se: SeId) -> &SchedEntity {
        &self.ses[se.idx()]
    }
}

impl Scheduler {
    pub fn new(cfg: SchedConfig) -> Scheduler {
        let feat = cfg.features;
        let n = cfg.nr_cpus as usize;
        let mut s = Scheduler {
            class: cfg.preset.fair_class(),
            cfg,
            feat,
            now: 0,
            tasks: Vec::new(),
            ses: Vec::new(),
            cfs_rqs: Vec::new(),
            groups: Vec::new(),
            rqs: Vec::new(),
            enqueue_seq: 0,
            resched: Vec::new(),
            hrtick_requests: Vec::new(),
            cpu_tasks: vec![Vec::new(); n],
            rd_overloaded: false,
            nohz_has_blocked: false,
            nohz_next_blocked: 0,
            nohz: CpuMask::full(n),
            overloaded_cpus: CpuMask::empty(n),
            nr_idle_scan: 0,
            scratch_child_on: Vec::new(),
            yield_cfg: yield_to::YieldConfig::default(),
            yield_rq: vec![yield_to::YieldRqState::default(); n],
            yield_stats: yield_to::YieldStats::default(),
            this_cpu: None,
            resched_ipis: Vec::new(),
            wakelist: Vec::new(),
            ipi_stats: ipis::SchedIpiStats::default(),
            ttwu_from: None,
            ttwu_wakelisted: false,
            flat: None,
        };
        let mut root_rqs = Vec::with_capacity(n);
        for c in 0..n {
            let id = CfsRqId(s.cfs_rqs.len() as u32);
            s.cfs_rqs
                .push(CfsRq::new(ROOT_GROUP, CpuId(c as u32), None));
            root_rqs.push(id);
            s.rqs.push(Rq {
                cpu: CpuId(c as u32),
                cfs: id,
                curr: None,
                nr_running: 0,
                need_resched: false,
                switched_at: 0,
                busy_ns: 0,
                next_balance: 0,
                sd: balance::SchedDomain::new(n as u32),
                cfs_tasks: Vec::new(),
                has_blocked_load: false,
                last_blocked_load_update_tick: 0,
                active_balance: None,
                yld_count: 0,
                nr_switches: 0,
                ttwu_pending: 0,
                wakelist_ipi: false,
            });
        }
        s.groups.push(TaskGroup {
            path: "/".into(),
            parent: None,
            shares: NICE_0_LOAD,
            load_avg: 0,
            cfs_rq: root_rqs,
            se: vec![None; n],
            depth: 0,
        });
        s.init_fair_class();
        s
    }

    pub fn nr_cpus(&self) -> usize {
        self.rqs.len()
    }

    /// Creates a task group under `parent` with `tg->shares` = `shares` (scaled);
    /// one cfs_rq and one group entity per CPU, as `alloc_fair_sched_group()`.
    pub fn create_group(&mut self, path: &str, parent: GroupId, shares: u64) -> GroupId {
        let gid = GroupId(self.groups.len() as u32);
        let depth = self.groups[parent.idx()].depth + 1;
        let mut cfs = Vec::new();
        let mut ses = Vec::new();
        for c in 0..self.nr_cpus() {
            let parent_q = self.groups[parent.idx()].cfs_rq[c];
            let parent_se = self.groups[parent.idx()].se[c];
            let se_id = SeId(self.ses.len() as u32);
            let q = CfsRqId(self.cfs_rqs.len() as u32);
            self.cfs_rqs
                .push(CfsRq::new(gid, CpuId(c as u32), Some(se_id)));
            // init_tg_cfs_entry(): the group entity starts at NICE_0_LOAD.
            let mut se = SchedEntity::new(LoadWeight::new(NICE_0_LOAD), parent_q);
            se.parent = parent_se;
            se.depth = parent_se.map_or(0, |p| self.ses[p.idx()].depth + 1);
            se.my_q = Some(q);
            self.ses.push(se);
            cfs.push(q);
            ses.push(Some(se_id));
        }
        self.groups.push(TaskGroup {
            path: path.to_string(),
            parent: Some(parent),
            shares,
            load_avg: 0,
            cfs_rq: cfs,
            se: ses,
            depth,
        });
        gid
    }

    /// Creates a sleeping task (not yet woken) in `group`, placed on `cpu`.
    pub fn create_task(
        &mut self,
        name: &str,
        group: GroupId,
        nice: i32,
        allowed: impl Into<CpuMask>,
        cpu: CpuId,
        custom_slice: Option<u64>,
    ) -> TaskId {
        let id = TaskId(self.tasks.len() as u32);
        let se_id = SeId(self.ses.len() as u32);
        let q = self.groups[group.idx()].cfs_rq[cpu.idx()];
        let mut se = SchedEntity::new(LoadWeight::new(nice_to_weight(nice)), q);
        se.task = Some(id);
        se.parent = self.groups[group.idx()].se[cpu.idx()];
        se.depth = se.parent.map_or(0, |p| self.ses[p.idx()].depth + 1);
        se.slice = custom_slice.unwrap_or_else(|| self.cfg.base_slice());
        se.custom_slice = custom_slice.is_some();
        self.ses.push(se);
        self.init_entity_runnable_average(se_id);
        self.cpu_tasks[cpu.idx()].push(id);
        self.tasks.push(Task {
            id,
            name: name.to_string(),
            se: se_id,
            cpu,
            state: TaskState::Sleeping,
            on_rq: false,
            on_cpu: false,
            group,
            nice,
            allowed: allowed.into(),
            stats: TaskStats::default(),
            wake_time: None,
            wait_since: None,
            migrating: false,
            recent_used_cpu: cpu,
            wakee_flips: 0,
            wakee_flip_decay_ts: 0,
            last_wakee: None,
            last_yield: 0,
            waking: false,
            migrated: false,
        });
        if self.flat.is_some() {
            self.flat_init_task(id);
        }
        id
    }

    /// `sched_fork()` + `sched_cgroup_fork()` (kernel/sched/core.c, Linux
    /// 6.12) of a new process in the dead task slot `p` (the `fork`
    /// extension reuses one slot per child of a parent, which waits for
    /// it): `__sched_fork()` gives it a fresh entity (no vruntime, lag,
    /// deadline or delayed dequeue; `init_entity_runnable_average()`'s full
    /// load), and it starts on the forking CPU `cpu`
    /// (`__set_task_cpu(p, smp_processor_id())`); `wake_up_new_task()`
    /// places it next. Kept from the slot: its weight and slice (the
    /// parent's nice and policy: `sched_reset_on_fork` is off), its
    /// counters and `sum_exec_runtime` (the slot reports the CPU of all its
    /// processes; `prev_sum_exec_runtime` is set equal, so the slice
    /// accounting starts at 0 as a new task's does). The flat class
    /// (sched/flat) is refused before a run starts (`Program::uses_fork`).
    pub fn sched_fork(&mut self, p: TaskId, cpu: CpuId) {
        debug_assert!(
            self.tasks[p.idx()].state == TaskState::Sleeping
                && !self.tasks[p.idx()].on_rq
                && !self.tasks[p.idx()].on_cpu,
            "sched_fork of a live task slot"
        );
        let se_id = self.tasks[p.idx()].se;
        let old = &self.ses[se_id.idx()];
        let mut se = SchedEntity::new(old.load, old.cfs_rq);
        se.task = Some(p);
        se.parent = old.parent;
        se.depth = old.depth;
        se.slice = old.slice;
        se.custom_slice = old.custom_slice;
        se.sum_exec_runtime = old.sum_exec_runtime;
        se.prev_sum_exec_runtime = old.sum_exec_runtime;
        self.ses[se_id.idx()] = se;
        self.init_entity_runnable_average(se_id);
        self.__set_task_cpu(p, cpu);
        let now = self.now;
        let t = &mut self.tasks[p.idx()];
        t.recent_used_cpu = cpu;
        t.wakee_flips = 0;
        t.wakee_flip_decay_ts = now;
        t.last_wakee = None;
        t.wake_time = None;
        t.wait_since = None;
        t.last_yield = 0;
        t.waking = false;
        t.migrated = false;
    }

    /// `task_dead_fair()` (kernel/sched/fair.c, Linux 6.12) after the last
    /// switch-out of an exited task: an entity left queued by
    /// DELAY_DEQUEUE is dequeued for good (`DEQUEUE_SLEEP |
    /// DEQUEUE_DELAYED`), so the dead task neither competes nor counts in
    /// its queue's load (`remove_entity_load_avg()`).
    pub fn task_dead_fair(&mut self, p: TaskId) {
        let se = self.tasks[p.idx()].se;
        if self.tasks[p.idx()].on_rq && self.ses[se.idx()].sched_delayed {
            self.dequeue_task_fair(p, fair::DEQUEUE_SLEEP | fair::DEQUEUE_DELAYED);
        }
        self.remove_entity_load_avg(se);
    }

    /// `resched_curr()`: asks the simulator to run `__schedule()` on `cpu`.
    /// On another CPU than `this_cpu` it sets TIF_NEED_RESCHED and sends the
    /// reschedule IPI (`smp_send_reschedule()`), which takes effect after
    /// `HostCosts::remote_wakeup` (at once when that cost is zero).
    pub fn resched_curr(&mut self, cpu: CpuId) {
        self.count_resched_ipi(cpu);
        let remote = self.cfg.costs.remote_wakeup > 0 && self.this_cpu.is_some_and(|c| c != cpu);
        let rq = &mut self.rqs[cpu.idx()];
        if remote {
            if !rq.need_resched {
                rq.need_resched = true;
                self.resched_ipis.push(cpu);
            }
            return;
        }
        rq.need_resched = true;
        if !self.resched.contains(&cpu) {
            self.resched.push(cpu);
        }
    }

    /// The reschedule IPI arrived at `cpu` (`scheduler_ipi()`): a pending
    /// TIF_NEED_RESCHED is acted on.
    pub fn scheduler_ipi(&mut self, cpu: CpuId) {
        if self.rqs[cpu.idx()].need_resched && !self.resched.contains(&cpu) {
            self.resched.push(cpu);
        }
    }

    /// Pops the next CPU with a pending reschedule, lowest request first.
    pub fn take_resched(&mut self) -> Option<CpuId> {
        if self.resched.is_empty() {
            None
        } else {
            Some(self.resched.remove(0))
        }
    }

    pub fn next_enqueue_seq(&mut self) -> u64 {
        self.enqueue_seq += 1;
        self.enqueue_seq
    }

    /// `cfs_rq_of(se)`.
    pub fn cfs_rq_of(&self, se: SeId) -> CfsRqId {
        self.ses[se.idx()].cfs_rq
    }

    /// `parent_entity(se)`.
    pub fn parent_entity(&self, se: SeId) -> Option<SeId> {
        self.ses[se.idx()].parent
    }

    /// The task's leaf cfs_rq (`task_cfs_rq(p)`).
    pub fn task_cfs_rq(&self, p: TaskId) -> CfsRqId {
        self.ses[self.tasks[p.idx()].se.idx()].cfs_rq
    }

    /// Is `g` equal to or below `ancestor` in the group tree?
    pub fn group_is_descendant(&self, mut g: GroupId, ancestor: GroupId) -> bool {
        loop {
            if g == ancestor {
                return true;
            }
            match self.groups[g.idx()].parent {
                Some(p) => g = p,
                None => return false,
            }
        }
    }
}
