//! The fair class's hook set: which implementation of each fair-class entry
//! point a scheduler runs, chosen once at construction from its kernel
//! preset, as a task's `p->sched_class` points at one `struct sched_class`
//! (kernel/sched/sched.h). Three implementations: EEVDF (`fair/`, Linux
//! 6.6+ as 6.12.117 has it), CFS (`cfs/`, Linux 6.1) and sched/flat (`flat/`,
//! EEVDF on one runqueue of tasks). Every preset-specific choice outside
//! those three directories goes through this file: the entry points below
//! and the few class properties of [`FairClass`].

use super::features::KernelPreset;
use super::ids::{CfsRqId, CpuId, SeId, TaskId};
use super::Scheduler;

/// The fair class a kernel preset runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FairClass {
    /// EEVDF (Linux 6.6+; the 6.12.0, 6.12.117, 6.18 and 6.19 presets).
    Eevdf,
    /// CFS (Linux 6.1, the `6.1` preset).
    Cfs,
    /// sched/flat: EEVDF on one runqueue of tasks per CPU (the `flat` preset).
    Flat,
}

impl KernelPreset {
    /// The fair class this kernel runs.
    pub fn fair_class(self) -> FairClass {
        match self {
            KernelPreset::V6_1 => FairClass::Cfs,
            KernelPreset::Flat => FairClass::Flat,
            KernelPreset::V6_12_0
            | KernelPreset::V6_12_117
            | KernelPreset::V6_18
            | KernelPreset::V6_19 => FairClass::Eevdf,
        }
    }

    /// Is this kernel's fair class CFS (Linux 6.1) rather than EEVDF?
    #[inline]
    pub fn is_cfs(self) -> bool {
        self.fair_class() == FairClass::Cfs
    }
}

impl FairClass {
    /// `update_cfs_group()` leaves the group entity of an empty queue at
    /// its weight (6.12: `if (!gcfs_rq || !gcfs_rq->load.weight) return;`,
    /// which matters for DELAY_DEQUEUE); Linux 6.1 re-weights it too.
    #[inline]
    pub fn keeps_empty_group_weight(self) -> bool {
        self != FairClass::Cfs
    }

    /// The timeline is ordered by deadline (EEVDF); Linux 6.1 (CFS) orders
    /// it by vruntime.
    #[inline]
    pub fn orders_by_deadline(self) -> bool {
        self != FairClass::Cfs
    }

    /// `__schedule()` nominates the previous task as the next buddy
    /// (the model's LAST_BUDDY for EEVDF); Linux 6.1 (CFS) sets its
    /// LAST_BUDDY in `check_preempt_wakeup()` instead (`cfs::preempt`).
    #[inline]
    pub fn last_buddy_at_schedule(self) -> bool {
        self != FairClass::Cfs
    }

    /// The VM group entities carry an EEVDF lag worth tracing (CFS has no
    /// lag; the flat queues hold no group entities).
    #[inline]
    pub fn traces_group_lag(self) -> bool {
        self == FairClass::Eevdf
    }
}

impl Scheduler {
    /// The fair class this scheduler runs.
    #[inline]
    pub fn fair_class(&self) -> FairClass {
        self.class
    }

    /// The class's own state at construction (sched/flat: one flat
    /// runqueue per CPU).
    pub(super) fn init_fair_class(&mut self) {
        if self.class == FairClass::Flat {
            self.flat_init();
        }
    }

    /// `enqueue_task_fair()`.
    #[inline]
    pub fn enqueue_task_fair(&mut self, p: TaskId, flags: u32) {
        match self.class {
            FairClass::Eevdf => self.enqueue_task_eevdf(p, flags),
            FairClass::Cfs => self.cfs().enqueue_task_fair(p, flags),
            FairClass::Flat => self.flat_fair().enqueue_task_fair(p, flags),
        }
    }

    /// `dequeue_task_fair()`: false if the task stays queued as delayed.
    #[inline]
    pub fn dequeue_task_fair(&mut self, p: TaskId, flags: u32) -> bool {
        match self.class {
            FairClass::Eevdf => self.dequeue_task_eevdf(p, flags),
            FairClass::Cfs => self.cfs().dequeue_task_fair(p, flags),
            FairClass::Flat => self.flat_fair().dequeue_task_fair(p, flags),
        }
    }

    /// `update_curr()`: charge the running entity of `cfs`.
    #[inline]
    pub fn update_curr(&mut self, cfs: CfsRqId) {
        match self.class {
            FairClass::Eevdf => self.update_curr_eevdf(cfs),
            FairClass::Cfs => self.cfs().update_curr(cfs),
            FairClass::Flat => self.flat_fair().update_curr(cfs),
        }
    }

    /// `pick_task_fair()`.
    #[inline]
    pub fn pick_task_fair(&mut self, cpu: CpuId) -> Option<TaskId> {
        match self.class {
            FairClass::Eevdf => self.pick_task_eevdf(cpu),
            FairClass::Cfs => self.cfs().pick_task_fair(cpu),
            FairClass::Flat => self.flat_fair().pick_task_fair(cpu),
        }
    }

    /// `pick_next_task_fair()` minus the newidle balance (done by the caller).
    #[inline]
    pub fn pick_next_task_fair(&mut self, cpu: CpuId, prev: Option<TaskId>) -> Option<TaskId> {
        match self.class {
            FairClass::Eevdf => self.pick_next_task_eevdf(cpu, prev),
            FairClass::Cfs => self.cfs().pick_next_task_fair(cpu, prev),
            FairClass::Flat => self.flat_fair().pick_next_task_fair(cpu, prev),
        }
    }

    /// `put_prev_task_fair()`.
    #[inline]
    pub fn put_prev_task_fair(&mut self, prev: TaskId) {
        match self.class {
            FairClass::Eevdf => self.put_prev_task_eevdf(prev),
            FairClass::Cfs => self.cfs().put_prev_task_fair(prev),
            FairClass::Flat => self.flat_fair().put_prev_task_fair(prev),
        }
    }

    /// `set_next_task_fair()`.
    #[inline]
    pub fn set_next_task_fair(&mut self, cpu: CpuId, p: TaskId) {
        match self.class {
            FairClass::Eevdf => self.set_next_task_eevdf(cpu, p),
            FairClass::Cfs => self.cfs().set_next_task_fair(cpu, p),
            FairClass::Flat => self.flat_fair().set_next_task_fair(cpu, p),
        }
    }

    /// `task_tick_fair()`; `queued` is the HRTICK expiry.
    #[inline]
    pub fn task_tick_fair(&mut self, cpu: CpuId, curr: TaskId, queued: bool) {
        match self.class {
            FairClass::Eevdf => self.task_tick_eevdf(cpu, curr, queued),
            FairClass::Cfs => self.cfs().task_tick_fair(cpu, curr, queued),
            FairClass::Flat => self.flat_fair().task_tick_fair(cpu, curr, queued),
        }
    }

    /// `check_preempt_wakeup_fair()` (6.1: `check_preempt_wakeup()`);
    /// sched/flat runs EEVDF's on its flat entities.
    #[inline]
    pub fn check_preempt_wakeup_fair(&mut self, cpu: CpuId, p: TaskId, wake_flags: u32) {
        match self.class {
            FairClass::Eevdf | FairClass::Flat => {
                self.check_preempt_wakeup_eevdf(cpu, p, wake_flags)
            }
            FairClass::Cfs => self.cfs().check_preempt_wakeup(cpu, p, wake_flags),
        }
    }

    /// `yield_task_fair()`: false when the caller should not `schedule()`.
    /// sched/flat runs EEVDF's on its flat entities.
    #[inline]
    pub fn yield_task_fair(&mut self, cpu: CpuId) -> bool {
        match self.class {
            FairClass::Eevdf | FairClass::Flat => self.yield_task_eevdf(cpu),
            FairClass::Cfs => self.cfs().yield_task_fair(cpu),
        }
    }

    /// `yield_to_task_fair()`. sched/flat runs EEVDF's on its flat entities.
    #[inline]
    pub fn yield_to_task_fair(&mut self, cpu: CpuId, p: TaskId) -> bool {
        match self.class {
            FairClass::Eevdf | FairClass::Flat => self.yield_to_task_eevdf(cpu, p),
            FairClass::Cfs => self.cfs().yield_to_task_fair(cpu, p),
        }
    }

    /// `reweight_entity()` (6.1: `reweight_cfs_entity()`).
    #[inline]
    pub fn reweight_entity(&mut self, cfs: CfsRqId, se: SeId, weight: u64) {
        match self.class {
            FairClass::Eevdf => self.reweight_entity_eevdf(cfs, se, weight),
            FairClass::Cfs => self.reweight_cfs_entity(cfs, se, weight),
            FairClass::Flat => self.flat_fair().reweight_entity(cfs, se, weight),
        }
    }

    /// `task_fork_fair()` as `sched_fork()` runs it before the new task's
    /// enqueue: Linux 6.1 (CFS) places the child there; 6.12's only sets
    /// the task's max allowed capacity (not modelled): EEVDF places the
    /// child at its enqueue (`place_entity()` with ENQUEUE_INITIAL).
    #[inline]
    pub(super) fn task_fork_fair(&mut self, p: TaskId) {
        if self.class == FairClass::Cfs {
            self.cfs().task_fork_fair(p);
        }
    }

    /// `migrate_task_rq_fair()`: Linux 6.1 (CFS) first makes a waking
    /// task's vruntime relative to its old queue; every class then moves
    /// its load (`migrate_task_rq_load`).
    #[inline]
    pub(super) fn migrate_task_rq_fair(&mut self, p: TaskId) {
        if self.class == FairClass::Cfs {
            self.cfs().migrate_task_rq_fair(p);
        }
        self.migrate_task_rq_load(p);
    }
}
