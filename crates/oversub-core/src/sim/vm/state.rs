//! The guest side of one vCPU of the phase generator and the program guest's
//! glue: the phase it is in (`Phase`: the run loop's shared phases, and each
//! guest model's own typed stages), its queued interrupts, the burst it
//! runs, and the VM's workload statistics.

use crate::engine::{Nanos, Time};
use crate::guest::haltpoll::CpuidleDevice;
use crate::kvm::{VcpuIdx, Vector};
use crate::report::Hist;
use std::collections::VecDeque;

/// What the work part of a burst is accounted as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Cat {
    Useful,
    Spin,
    Poll,
    /// The guest's own idle polling (cpuidle-haltpoll's `poll_idle`).
    GuestPoll,
}

/// What a spinning vCPU waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Wait {
    /// A guest spinlock (index into the VM's locks).
    Lock(usize),
    /// `csd_lock_wait`: the targets of a synchronous IPI to run the handler;
    /// then the guest model goes on at stage `then`.
    Csd { then: ModelStage },
    /// pingpong: the other vCPU's turn to end.
    Turn,
    /// A program VM: the guest task spins on the owner of a kernel sleeping
    /// lock (`mutex_spin_on_owner`).
    Owner,
}

/// The phase generator's stages after a compute burst, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum AfterStage {
    /// Maybe a unicast IPI (`ipi_per_ms`).
    Ipi,
    /// Maybe a TLB shootdown (`tlb_shootdown_per_ms`).
    Shootdown,
    /// Block (`block_prob`), wait for the pingpong turn, or take a lock.
    BlockOrLock,
}

/// The phase generator's own stages (`phases.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum GenStage {
    /// A compute burst: `left` of its `len` still to run, in user mode
    /// (`user`) or in the guest kernel.
    Compute { left: Nanos, len: Nanos, user: bool },
    /// After a compute burst of `len`: its stages in order, from `stage` on.
    After { stage: AfterStage, len: Nanos },
}

/// The nested guest's own stage (`guest.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum NestedStage {
    /// Running the guest scheduler's current task (`guest::GuestLevel`).
    Guest,
}

/// A guest model's own stage (`model.rs`): each model has its own enum, and
/// a model is only ever handed its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ModelStage {
    Gen(GenStage),
    Nested(NestedStage),
}

/// Where a vCPU's guest is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Phase {
    /// Back to the guest model: it picks its next stage (the phase
    /// generator its next compute burst, the nested guest its scheduler).
    Start,
    /// One of the guest model's own stages.
    Model(ModelStage),
    /// A PAUSE loop; `ple`: the current burst ends in a PAUSE exit.
    Spin {
        wait: Wait,
        ple: bool,
    },
    Hold {
        lock: usize,
        left: Nanos,
    },
    /// An interrupt handler; a call-function vector's handler runs the
    /// calls it took off the CPU's queue (`VGuest::csd_running`).
    Handler {
        left: Nanos,
        vector: Vector,
    },
    /// HLT (idle, `pv_lock = None`) or `pv_wait` on a PV qspinlock.
    Halted {
        pv_lock: Option<usize>,
    },
    /// A program VM's idle guest CPU polls `need_resched()` in the guest
    /// (cpuidle-haltpoll's `poll_idle`) until `until` (`poll_limit_ns`
    /// after it began), then HLTs (`sim::vm::idle`).
    IdlePoll {
        until: Time,
    },
    /// Halt polling before blocking.
    Poll {
        pv_lock: Option<usize>,
        left: Nanos,
    },
    /// No more work (iterations done, or an inactive vCPU): halted for good.
    Done,
}

impl Phase {
    /// The phase generator's stage `s`.
    pub(super) fn gen(s: GenStage) -> Phase {
        Phase::Model(ModelStage::Gen(s))
    }

    /// The nested guest running its scheduler's current task.
    pub(super) const GUEST: Phase = Phase::Model(ModelStage::Nested(NestedStage::Guest));
}

#[derive(Clone, Copy, Debug)]
pub(super) struct Irq {
    pub(super) at: Time,
    pub(super) vector: Vector,
    pub(super) from: VcpuIdx,
}

/// A cross-CPU call queued on a guest CPU (`call_single_data_t` on the
/// target's `call_single_queue`, kernel/smp.c 6.12).
#[derive(Clone, Copy, Debug)]
pub(super) struct CallSingleData {
    /// The vCPU that queued it.
    pub(super) from: VcpuIdx,
    /// The caller waits for it in `csd_lock_wait` (`CSD_TYPE_SYNC`).
    pub(super) sync: bool,
    /// The function's work after the interrupt entry (`smp_call` handlers).
    pub(super) func: Nanos,
}

/// Guest-side state of one vCPU.
#[derive(Clone, Debug)]
pub(super) struct VGuest {
    /// pingpong turn_yield: when this vCPU last yielded to the holder.
    pub(super) last_turn_yield: Option<Time>,
    pub(super) phase: Phase,
    /// The phase an interrupt handler returns to.
    pub(super) resume: Option<Phase>,
    pub(super) plan_exit: Nanos,
    pub(super) plan_work: Nanos,
    pub(super) cat: Cat,
    /// Exit/entry costs owed, paid at the start of the next burst.
    pub(super) pending_exit: Nanos,
    pub(super) irqs: VecDeque<Irq>,
    /// `call_single_queue`: calls queued and not yet taken by the
    /// call-function interrupt handler.
    pub(super) call_single_queue: Vec<CallSingleData>,
    /// The calls the running call-function handler took off the queue
    /// (`llist_del_all` in `__flush_smp_call_function_queue`).
    pub(super) csd_running: Vec<CallSingleData>,
    pub(super) csd_pending: u32,
    pub(super) timer_gen: u64,
    pub(super) wait_start: Time,
    pub(super) hold_start: Time,
    /// When this vCPU's current work unit (op) started.
    pub(super) op_start: Time,
    /// A program's syscall: the hold time of the lock it is taking.
    pub(super) hold_next: Option<Nanos>,
    /// The lock section taken is a wakeup-path one (`sim::vm::wakeup`),
    /// not an op.
    pub(super) wake_section: bool,
    /// Since when it waits in `csd_lock_wait`.
    pub(super) csd_since: Time,
    /// The guest CPU's cpuidle device (cpuidle-haltpoll governor state).
    pub(super) cpuidle: CpuidleDevice,
    /// When the guest CPU's last idle HLT began (its `last_residency_ns`).
    pub(super) hlt_since: Time,
}

#[derive(Clone, Debug, Default)]
pub(super) struct VmStats {
    pub(super) ops: u64,
    pub(super) useful: u64,
    pub(super) spin: u64,
    pub(super) poll: u64,
    pub(super) exit: u64,
    pub(super) ple_exits: u64,
    pub(super) on_spin_calls: u64,
    pub(super) yield_attempts: u64,
    pub(super) yield_ok: u64,
    pub(super) yield_esrch: u64,
    pub(super) boosts_receiver: u64,
    pub(super) boosts_to_spinner: u64,
    pub(super) guest_ticks: u64,
    pub(super) boosts_stale_receiver: u64,
    pub(super) dy_attempted: u64,
    pub(super) dy_successful: u64,
    pub(super) halts: u64,
    pub(super) pv_kicks: u64,
    pub(super) ipis_sent: u64,
    pub(super) ipis_reschedule: u64,
    pub(super) ipis_call_function_single: u64,
    pub(super) ipi_exits: u64,
    pub(super) ipis_tracked: u64,
    pub(super) eoi_exits: u64,
    pub(super) lock_wait: Hist,
    pub(super) lock_hold: Hist,
    pub(super) ipi_latency: Hist,
    /// Time vCPUs waited in `csd_lock_wait` (synchronous cross-CPU calls
    /// and TLB shootdowns), from the send to the last handler's end.
    pub(super) csd_wait_ns: u64,
    pub(super) csd_waits: u64,
    pub(super) lock_wait_total_ns: u64,
    /// Start to end of each op (a vCPU's work unit), preemption included.
    pub(super) op_latency: Hist,
    /// cpuidle-haltpoll: guest idle polling time, polls begun, polls ended
    /// by a wakeup, and wakeups of a polling CPU that sent no IPI
    /// (`sched_wake_idle_without_ipi`).
    pub(super) guest_poll: u64,
    pub(super) guest_polls: u64,
    pub(super) guest_polls_woken: u64,
    pub(super) wake_idle_without_ipi: u64,
}

impl VGuest {
    /// A vCPU that has not run yet.
    pub(super) fn new() -> VGuest {
        VGuest {
            phase: Phase::Start,
            resume: None,
            plan_exit: Nanos::ZERO,
            plan_work: Nanos::ZERO,
            cat: Cat::Useful,
            pending_exit: Nanos::ZERO,
            irqs: VecDeque::new(),
            call_single_queue: Vec::new(),
            csd_running: Vec::new(),
            csd_pending: 0,
            timer_gen: 0,
            wait_start: Time::ZERO,
            hold_start: Time::ZERO,
            op_start: Time::ZERO,
            last_turn_yield: None,
            hold_next: None,
            wake_section: false,
            csd_since: Time::ZERO,
            cpuidle: CpuidleDevice::default(),
            hlt_since: Time::ZERO,
        }
    }

    /// The part of the current burst (`plan_exit + plan_work`) used when
    /// `left` of it remains, split into (exit overhead, work): the overhead
    /// is paid first.
    pub(super) fn split_burst(&self, left: Nanos) -> (Nanos, Nanos) {
        let consumed = (self.plan_exit + self.plan_work) - left;
        let ex = consumed.min(self.plan_exit);
        (ex, consumed - ex)
    }
}

impl VmStats {
    /// Accounts a burst's exit overhead and its work as `cat`.
    pub(super) fn account(&mut self, cat: Cat, ex: Nanos, work: Nanos) {
        self.exit += ex.0;
        match cat {
            Cat::Useful => self.useful += work.0,
            Cat::Spin => self.spin += work.0,
            Cat::Poll => self.poll += work.0,
            Cat::GuestPoll => self.guest_poll += work.0,
        }
    }
}
