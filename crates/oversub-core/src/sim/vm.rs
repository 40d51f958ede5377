//! VMs on the simulated host: each vCPU is a host task whose behaviour is
//! the guest/KVM model below (module `sim::vm`, a child of the simulator so
//! it can drive the scheduler directly). docs/kvm-model.md, "Integration",
//! describes the mechanisms and their kernel sources.
//!
//! A vCPU runs *phases* (compute, lock spin, critical section, interrupt
//! handler, halt) that become CPU bursts. A burst is `[exit overhead][work]`:
//! VM exit/entry costs owed by the vCPU are paid at the start of its next
//! burst. Whenever a vCPU enters the guest (scheduled in, woken, poked) its
//! burst ends at once and the phase looks at the guest state again, so a lock
//! granted or an interrupt delivered while it was away is seen on entry.

use super::{Ev, Simulator};
use crate::engine::{Nanos, SimRng, Time};
use crate::guest::machine::GuestLock;
use crate::guest::spinlock::{LockStep, Release};
use crate::guest::workload::{LockKind, WorkloadProfile};
use crate::kvm::ipi_hint::IpiHint;
use crate::kvm::lapic::{
    DeliveryMode, IcrWrite, IpiTracker, IpiTrackingParams, LapicIrq, Shorthand,
};
use crate::kvm::on_spin::{kvm_vcpu_on_spin, yield_to_ret, OnSpinVariant, SpinVm, Tier};
use crate::kvm::ple::{cycles_to_ns, ple_fires, PauseLoop, PleKind, PleOutcome};
use crate::kvm::pv::{kvm_pv_kick_cpu_op, kvm_sched_yield, SchedYield};
use crate::kvm::vcpu::{Cpl, VcpuState};
use crate::kvm::{VcpuIdx, Vector};
use crate::report::{Hist, VmReport};
use crate::scenario::{HaltPoll, KvmSpec, OnSpinSpec, VmSpec};
use crate::sched::core::{Switch, YieldTo};
use crate::sched::{CpuId, TaskId};
use std::collections::VecDeque;

mod guest;
pub(super) use guest::GuestLevel;
use guest::GuestNext;

/// Whether a vCPU is idle-halted (HLT or halt polling, not `pv_wait`).
fn idle_halted(g: &VGuest) -> bool {
    matches!(
        g.phase,
        Phase::Halted { pv_lock: None } | Phase::Poll { pv_lock: None, .. }
    )
}

/// A uniformly drawn idle-halted vCPU of `g` other than `me` (one
/// `rng.below(count)` draw), None (no draw) if there is none. Up to 64
/// vCPUs in one pass over a bitmask; beyond, counted and found again.
fn draw_idle_vcpu(g: &[VGuest], me: usize, rng: &mut SimRng) -> Option<usize> {
    if g.len() <= 64 {
        let mut m = 0u64;
        for (t, gt) in g.iter().enumerate() {
            if idle_halted(gt) {
                m |= 1 << t;
            }
        }
        m &= !1u64.checked_shl(me as u32).unwrap_or(0);
        if m == 0 {
            return None;
        }
        for _ in 0..rng.below(u64::from(m.count_ones())) {
            m &= m - 1;
        }
        return Some(m.trailing_zeros() as usize);
    }
    let is_idle = |&(t, gt): &(usize, &VGuest)| t != me && idle_halted(gt);
    let n = g.iter().enumerate().filter(is_idle).count();
    if n == 0 {
        return None;
    }
    let k = rng.below(n as u64) as usize;
    g.iter().enumerate().filter(is_idle).nth(k).map(|(t, _)| t)
}

/// Spin iterations in `spun` of guest time.
fn spin_iters(kvm: &KvmSpec, spun: Nanos) -> u64 {
    let cycles = u128::from(spun.0) * u128::from(kvm.guest_tsc_khz) / 1_000_000;
    u64::try_from(cycles / u128::from(kvm.pause_cycles.max(1))).unwrap_or(u64::MAX)
}

const FOREVER: Nanos = Nanos(u64::MAX / 4);
/// arch/x86/include/asm/irq_vectors.h (6.12).
pub(super) const RESCHEDULE_VECTOR: Vector = Vector(0xfd);
const CALL_FUNCTION_VECTOR: Vector = Vector(0xfc);
const CALL_FUNCTION_SINGLE_VECTOR: Vector = Vector(0xfb);
/// Linux's LOCAL_TIMER_VECTOR (the guest tick).
pub(super) const LOCAL_TIMER_VECTOR: Vector = Vector(0xec);

/// What the work part of a burst is accounted as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cat {
    Useful,
    Spin,
    Poll,
}

/// What a spinning vCPU waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Wait {
    /// A guest spinlock (index into the VM's locks).
    Lock(usize),
    /// `csd_lock_wait`: the targets of a synchronous IPI to run the handler.
    Csd,
    /// pingpong: the other vCPU's turn to end.
    Turn,
    /// A program VM: the guest task spins on the owner of a kernel sleeping
    /// lock (`mutex_spin_on_owner`).
    Owner,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Pick the next compute burst.
    Start,
    Compute {
        left: Nanos,
        len: Nanos,
        user: bool,
    },
    /// After a compute burst: 0 unicast IPI, 1 TLB shootdown, 2 block or lock.
    After {
        stage: u8,
        len: Nanos,
    },
    /// A PAUSE loop; `ple`: the current burst ends in a PAUSE exit.
    Spin {
        wait: Wait,
        ple: bool,
        then: u8,
        len: Nanos,
    },
    Hold {
        lock: usize,
        left: Nanos,
    },
    Handler {
        left: Nanos,
        vector: Vector,
        sync_from: Option<u32>,
    },
    /// HLT (idle, `pv_lock = None`) or `pv_wait` on a PV qspinlock.
    Halted {
        pv_lock: Option<usize>,
    },
    /// Halt polling before blocking.
    Poll {
        pv_lock: Option<usize>,
        left: Nanos,
    },
    /// No more work (iterations done, or an inactive vCPU): halted for good.
    Done,
    /// A program VM: running the guest scheduler's current task
    /// (`guest::GuestLevel`).
    Guest,
}

#[derive(Clone, Copy, Debug)]
struct Irq {
    at: Time,
    vector: Vector,
    from: u32,
    sync: bool,
    /// Handler work after the interrupt entry (`smp_call` handlers).
    extra: Nanos,
}

/// Guest-side state of one vCPU.
#[derive(Clone, Debug)]
struct VGuest {
    /// pingpong turn_yield: when this vCPU last yielded to the holder.
    last_turn_yield: Option<Time>,
    phase: Phase,
    /// The phase an interrupt handler returns to.
    resume: Option<Phase>,
    plan_exit: Nanos,
    plan_work: Nanos,
    cat: Cat,
    /// Exit/entry costs owed, paid at the start of the next burst.
    pending_exit: Nanos,
    irqs: VecDeque<Irq>,
    csd_pending: u32,
    /// Current PLE window (`vmx->ple_window` / `pause_filter_count`).
    ple_window: u32,
    timer_gen: u64,
    /// `vcpu->halt_poll_ns` (dynamic halt polling).
    halt_poll_ns: u64,
    /// Inside `kvm_vcpu_halt` since `halt_start`.
    in_halt: bool,
    halt_start: Time,
    wait_start: Time,
    hold_start: Time,
    /// When this vCPU's current work unit (op) started.
    op_start: Time,
    /// A program's syscall: the hold time of the lock it is taking.
    hold_next: Option<Nanos>,
    /// Since when it waits in `csd_lock_wait`.
    csd_since: Time,
}

#[derive(Clone, Debug, Default)]
struct VmStats {
    ops: u64,
    useful: u64,
    spin: u64,
    poll: u64,
    exit: u64,
    ple_exits: u64,
    on_spin_calls: u64,
    yield_attempts: u64,
    yield_ok: u64,
    yield_esrch: u64,
    boosts_receiver: u64,
    boosts_to_spinner: u64,
    guest_ticks: u64,
    boosts_stale_receiver: u64,
    dy_attempted: u64,
    dy_successful: u64,
    halts: u64,
    pv_kicks: u64,
    ipis_sent: u64,
    ipi_exits: u64,
    ipis_tracked: u64,
    eoi_exits: u64,
    lock_wait: Hist,
    lock_hold: Hist,
    ipi_latency: Hist,
    /// Time vCPUs waited in `csd_lock_wait` (synchronous cross-CPU calls
    /// and TLB shootdowns), from the send to the last handler's end.
    csd_wait_ns: u64,
    csd_waits: u64,
    lock_wait_total_ns: u64,
    /// Start to end of each op (a vCPU's work unit), preemption included.
    op_latency: Hist,
}

impl VGuest {
    /// The part of the current burst (`plan_exit + plan_work`) used when
    /// `left` of it remains, split into (exit overhead, work): the overhead
    /// is paid first.
    fn split_burst(&self, left: Nanos) -> (Nanos, Nanos) {
        let consumed = (self.plan_exit + self.plan_work) - left;
        let ex = consumed.min(self.plan_exit);
        (ex, consumed - ex)
    }
}

impl VmStats {
    /// Accounts a burst's exit overhead and its work as `cat`.
    fn account(&mut self, cat: Cat, ex: Nanos, work: Nanos) {
        self.exit += ex.0;
        match cat {
            Cat::Useful => self.useful += work.0,
            Cat::Spin => self.spin += work.0,
            Cat::Poll => self.poll += work.0,
        }
    }
}

/// One VM at run time.
pub(super) struct VmRt {
    name: String,
    pub(super) task_base: u32,
    pub(super) n: u32,
    active: u32,
    vcpus: Vec<VcpuState>,
    g: Vec<VGuest>,
    spin: SpinVm,
    tracker: IpiTracker,
    /// The sender-side IPI hint (on_spin = "ipi_hint" only).
    hint: Option<IpiHint>,
    locks: Vec<GuestLock>,
    prof: WorkloadProfile,
    rng: SimRng,
    pingpong: bool,
    turn: u32,
    /// `vcpu->arch.guest_state_protected` (SEV-ES / TDX).
    protected: bool,
    stats: VmStats,
    /// The guest kernel of a program VM (None: the phase generator).
    pub(super) guest: Option<GuestLevel>,
    /// A kept buffer for a TLB shootdown's targets.
    targets_buf: Vec<usize>,
}

/// What a vCPU step ends with.
enum Act {
    Run(Cat, Nanos),
    Sleep(Option<Time>),
    /// The vCPU yielded (directed yield): apply this.
    Switched(Option<Switch>),
}

impl VmRt {
    /// An ICR write by `me`: the series' tracker sees it, and with the IPI
    /// hint a unicast fixed-mode IPI that exited is recorded on the sender.
    /// An APIC-write exit costs the sender `exit` (charged at its next
    /// entry); exits and tracked pairs are counted in the VM's stats.
    fn icr_write(
        &mut self,
        me: VcpuIdx,
        irq: &LapicIrq,
        now: Time,
        running: &[bool],
        exit: Nanos,
    ) -> IcrWrite {
        let run = |t: VcpuIdx| running.get(t.idx()).copied().unwrap_or(true);
        let w = self.tracker.on_icr_write_running(me, irq, now, &run);
        if w.exited {
            self.stats.ipi_exits += 1;
            self.g[me.idx()].pending_exit += exit;
        }
        if w.tracked {
            self.stats.ipis_tracked += 1;
        }
        if let Some(h) = self.hint.as_mut() {
            let unicast = irq.delivery_mode == DeliveryMode::Fixed
                && irq.shorthand == Shorthand::NoShorthand
                && w.targets.len() == 1;
            if w.exited && unicast {
                h.record(me, w.targets[0], irq.vector, now);
            } else if w.exited {
                h.forget(me);
            }
        }
        w
    }

    /// Does vCPU `r` still owe `vector` (in its IRR/PIR, i.e. queued and not
    /// yet taken, or in its ISR, i.e. the handler runs)?
    fn owes(&self, r: VcpuIdx, vector: Vector) -> bool {
        let g = &self.g[r.idx()];
        g.irqs.iter().any(|q| q.vector == vector)
            || matches!(g.phase, Phase::Handler { vector: v, .. } if v == vector)
    }

    /// Host CPU time vCPU `i` owes before its guest continues (the host's
    /// context switch into it, a migration's refill): accounted as exit
    /// overhead.
    pub(super) fn g_owe(&mut self, i: usize, d: Nanos) {
        self.g[i].pending_exit += d;
    }

    pub(super) fn new(
        v: &VmSpec,
        kvm: &KvmSpec,
        pv_spinlock: bool,
        task_base: u32,
        rng: SimRng,
    ) -> VmRt {
        let prof = v.workload.clone();
        let active = prof.active_vcpus.unwrap_or(v.vcpus).min(v.vcpus);
        let vcpus = (0..v.vcpus)
            .map(|k| {
                let mut s = VcpuState::new(VcpuIdx(k), Some(TaskId(task_base + k)));
                s.apicv_active = kvm.apicv;
                s
            })
            .collect();
        let window = kvm.ple.map_or(0, |p| p.window);
        let g = (0..v.vcpus)
            .map(|_| VGuest {
                phase: Phase::Start,
                resume: None,
                plan_exit: Nanos::ZERO,
                plan_work: Nanos::ZERO,
                cat: Cat::Useful,
                pending_exit: Nanos::ZERO,
                irqs: VecDeque::new(),
                csd_pending: 0,
                ple_window: window,
                timer_gen: 0,
                halt_poll_ns: 0,
                in_halt: false,
                halt_start: Time::ZERO,
                wait_start: Time::ZERO,
                hold_start: Time::ZERO,
                op_start: Time::ZERO,
                last_turn_yield: None,
                hold_next: None,
                csd_since: Time::ZERO,
            })
            .collect();
        let ipi_aware = matches!(
            kvm.on_spin,
            OnSpinSpec::Variant(OnSpinVariant::IpiAware { .. })
        );
        let tracker = IpiTracker::new(
            v.vcpus,
            IpiTrackingParams {
                enabled: ipi_aware,
                window: kvm.ipi_window,
                eoi: kvm.ipi_eoi,
                apicv: kvm.apicv,
                ipiv: kvm.ipiv,
                avic: kvm.avic,
            },
        );
        let hint = matches!(kvm.on_spin, OnSpinSpec::Variant(OnSpinVariant::IpiHint))
            .then(|| IpiHint::new(v.vcpus, kvm.ipi_window));
        // "phase:pingpong" from a scenario, "pingpong" from a bare profile.
        let pingpong = prof.name.strip_prefix("phase:").unwrap_or(&prof.name) == "pingpong";
        let nlocks = if pingpong { 1 } else { prof.locks as usize };
        // Without KVM_FEATURE_PV_UNHALT ([guest.pv] spinlock = false) the
        // guest's qspinlock is the native one.
        let kind = match prof.lock_kind {
            LockKind::PvQspinlock if !pv_spinlock => LockKind::NativeQspinlock,
            k => k,
        };
        let locks = (0..nlocks).map(|_| GuestLock::new(kind)).collect();
        VmRt {
            name: v.name.clone(),
            task_base,
            n: v.vcpus,
            active,
            vcpus,
            g,
            spin: SpinVm::default(),
            tracker,
            hint,
            locks,
            prof,
            rng,
            pingpong,
            turn: 0,
            protected: v.protected,
            stats: VmStats::default(),
            guest: None,
            targets_buf: Vec::new(),
        }
    }

    /// A program VM's guest kernel spinlocks (the program's `syscall`
    /// locks): the profile's lock kind (PV qspinlock by default; the native
    /// one without `[guest.pv] spinlock`).
    pub(super) fn set_program_locks(&mut self, n: usize, pv_spinlock: bool) {
        let kind = match self.prof.lock_kind {
            LockKind::PvQspinlock if !pv_spinlock => LockKind::NativeQspinlock,
            k => k,
        };
        self.locks = (0..n).map(|_| GuestLock::new(kind)).collect();
    }

    pub(super) fn task(&self, i: usize) -> TaskId {
        TaskId(self.task_base + i as u32)
    }

    /// The APIC-write exits so far (the tracer's `kvm_exit`s of ICR writes).
    pub(super) fn ipi_exits(&self) -> u64 {
        self.stats.ipi_exits
    }

    /// Whether vCPU `j` spins on a sleeping lock's owner.
    fn owner_spinning(&self, j: usize) -> bool {
        matches!(
            self.g[j].phase,
            Phase::Spin {
                wait: Wait::Owner,
                ..
            }
        )
    }

    /// `lefts[i]`: the unused part of vCPU i's current burst, so bursts in
    /// progress at the end of the run are split too.
    pub(super) fn report(
        &self,
        duration: Nanos,
        cpu_ns: u64,
        steal_ns: u64,
        lefts: &[Nanos],
    ) -> VmReport {
        let mut s = self.stats.clone();
        for (g, &left) in self.g.iter().zip(lefts) {
            let (ex, work) = g.split_burst(left);
            s.account(g.cat, ex, work);
        }
        let s = &s;
        VmReport {
            name: self.name.clone(),
            vcpus: self.n,
            workload: self.prof.name.clone(),
            ops: s.ops,
            ops_per_s: s.ops as f64 / (duration.0.max(1) as f64 / 1e9),
            cpu_ns,
            guest_useful_ns: s.useful,
            spinning_ns: s.spin,
            halt_polling_ns: s.poll,
            exit_overhead_ns: s.exit,
            steal_ns,
            ple_exits: s.ple_exits,
            on_spin_calls: s.on_spin_calls,
            yield_to_attempts: s.yield_attempts,
            yield_to_successes: s.yield_ok,
            yield_to_esrch: s.yield_esrch,
            boosts_to_ipi_receiver: s.boosts_receiver,
            boosts_to_spinner: s.boosts_to_spinner,
            guest_ticks: s.guest_ticks,
            boosts_to_stale_receiver: s.boosts_stale_receiver,
            directed_yield_attempted: s.dy_attempted,
            directed_yield_successful: s.dy_successful,
            halts: s.halts,
            pv_kicks: s.pv_kicks,
            ipis_sent: s.ipis_sent,
            ipi_exits: s.ipi_exits,
            ipis_tracked: s.ipis_tracked,
            eoi_exits: s.eoi_exits,
            lock_wait_ns: s.lock_wait.percentiles(),
            lock_hold_ns: s.lock_hold.percentiles(),
            ipi_latency_ns: s.ipi_latency.percentiles(),
            csd_wait_ns: s.csd_wait_ns,
            csd_waits: s.csd_waits,
            spinlock_wait_total_ns: s.lock_wait_total_ns,
            program: None,
            op_latency_ns: s.op_latency.clone(),
            threads: Vec::new(),
        }
    }
}

impl Simulator {
    /// KVM's view of every vCPU agrees with the host scheduler's (checked
    /// after every event with `--check`): a vCPU on a CPU is neither
    /// `preempted` nor `ready`; a runnable vCPU task waiting for a CPU (after
    /// its first run) is `ready` (preempted, or woken from halt); nobody is
    /// in a spin loop outside `kvm_vcpu_on_spin`.
    pub(super) fn check_vcpus(&self) -> Result<(), String> {
        for vm in &self.vms {
            for (i, v) in vm.vcpus.iter().enumerate() {
                let id = vm.task(i);
                let t = &self.sched.tasks[id.idx()];
                let name = || format!("{}.vcpu{i}", vm.name);
                if t.on_cpu && (v.preempted || v.ready) {
                    return Err(format!("{} runs but is preempted/ready", name()));
                }
                let runnable = t.state == crate::sched::TaskState::Running;
                if !t.on_cpu && runnable && self.tasks[id.idx()].started && !v.ready {
                    return Err(format!("{} waits for a CPU but is not ready", name()));
                }
                if v.preempted && !runnable {
                    return Err(format!("{} sleeps but is marked preempted", name()));
                }
                // A vCPU switched out by its own on_spin yield is still inside
                // kvm_vcpu_on_spin() (schedule() runs there).
                let inside = v.yielded_in_spin_loop && !t.on_cpu;
                if (v.in_spin_loop || v.dy_eligible) && !inside {
                    return Err(format!("{} is in a spin loop outside on_spin", name()));
                }
            }
        }
        Ok(())
    }

    /// `kvm_sched_out` from the context switch (preempt notifier).
    pub(super) fn vcpu_sched_out(&mut self, vi: usize, i: usize, runnable: bool) {
        let protected = self.vms[vi].protected;
        self.vms[vi].vcpus[i].kvm_sched_out(runnable, protected);
        // vcpu_is_preempted() of this vCPU may now be true: the optimistic
        // spinners of its guest look at their owners again.
        if self.pv.steal_time
            && runnable
            && self.vms[vi]
                .guest
                .as_ref()
                .is_some_and(|g| g.has_sleeping_locks)
        {
            self.poke_owner_spinners(vi);
        }
    }

    /// `kvm_sched_in` + `vmx_vcpu_load`/`svm_vcpu_load`: shrink the PLE
    /// window if the vCPU had been scheduled out.
    pub(super) fn vcpu_sched_in(&mut self, vi: usize, i: usize) {
        if self.vms[vi].guest.is_some() {
            let task = self.vms[vi].task(i);
            self.guest_vcpu_entry(vi, i, task);
        }
        let vm = &mut self.vms[vi];
        if vm.vcpus[i].kvm_sched_in() {
            if let Some(p) = self.kvm.ple {
                vm.g[i].ple_window = p.shrink_ple_window(vm.g[i].ple_window);
            }
        }
    }

    /// The LAPIC timer of a halted vCPU fired: `kvm_vcpu_kick`.
    pub(super) fn guest_timer(&mut self, p: TaskId, gen: u64) {
        let crate::task::Behaviour::Vcpu { vm, idx } = self.tasks[p.idx()].behaviour else {
            return;
        };
        let (vi, i) = (vm as usize, idx as usize);
        if self.vms[vi].g[i].timer_gen != gen {
            self.stale += 1;
            return;
        }
        self.wake_vcpu(vi, i, None);
    }

    /// Whether vCPU task `p`'s guest timer of generation `gen` was
    /// superseded (the vCPU ran again, or re-armed it, since).
    pub(super) fn guest_timer_stale(&self, p: TaskId, gen: u64) -> bool {
        match self.tasks[p.idx()].behaviour {
            crate::task::Behaviour::Vcpu { vm, idx } => {
                self.vms[vm as usize].g[idx as usize].timer_gen != gen
            }
            _ => false,
        }
    }

    /// Which vCPUs of VM `vi` are on a CPU now.
    fn vcpus_running(&self, vi: usize) -> Vec<bool> {
        let vm = &self.vms[vi];
        (0..vm.n as usize)
            .map(|t| {
                let id = vm.task(t);
                let st = &self.sched.tasks[id.idx()];
                st.on_cpu && self.sched.rqs[st.cpu.idx()].curr == Some(id)
            })
            .collect()
    }

    /// [`Self::vcpus_running`] with AVIC (`avic`), else empty (nothing
    /// looks at it then).
    pub(super) fn vcpus_running_if(&self, avic: bool, vi: usize) -> Vec<bool> {
        if avic {
            self.vcpus_running(vi)
        } else {
            Vec::new()
        }
    }

    /// Arms the guest tick of every vCPU of VM `vi` (spread over one period).
    pub(super) fn arm_guest_ticks(&mut self, vi: usize) {
        let hz = u64::from(self.kvm.guest_hz);
        if hz == 0 {
            return;
        }
        let period = 1_000_000_000 / hz;
        let n = u64::from(self.vms[vi].n);
        for k in 0..n {
            let at = Time(period + period * k / n);
            self.queue.push(at, Ev::GuestTick(vi as u32, k as u32));
        }
    }

    /// The guest's periodic LAPIC timer interrupt on vCPU `i` (a guest tick).
    /// A running vCPU takes it at once: the timer expiry exits (host hrtimer
    /// or VMX preemption timer, with or without APICv) and the interrupt is
    /// injected; its EOI exits without APICv (`IpiTracker::on_eoi`), which is
    /// where the series' v1/v2 "any EOI clears" rule acts. A vCPU waiting for
    /// a CPU gets it on its next entry (one IRR bit: ticks coalesce). Halted
    /// and finished vCPUs have no tick (NO_HZ idle; pv_wait halts too, a
    /// simplification: docs/kvm-model.md).
    pub(super) fn guest_tick(&mut self, vi: usize, i: usize) {
        let now = self.now;
        let period = Nanos(1_000_000_000 / u64::from(self.kvm.guest_hz));
        self.queue
            .push(now + period, Ev::GuestTick(vi as u32, i as u32));
        let exit = self.kvm.round_trip();
        let task = self.vms[vi].task(i);
        let vm = &mut self.vms[vi];
        let idle = matches!(
            vm.g[i].phase,
            Phase::Done | Phase::Halted { .. } | Phase::Poll { .. }
        );
        if idle || vm.vcpus[i].blocking || !self.tasks[task.idx()].started {
            return;
        }
        if let Some(gl) = vm.guest.as_mut() {
            gl.tick_due[i] = true;
        }
        if vm.g[i].irqs.iter().any(|q| q.vector == LOCAL_TIMER_VECTOR) {
            return;
        }
        vm.g[i].irqs.push_back(Irq {
            at: now,
            vector: LOCAL_TIMER_VECTOR,
            from: i as u32,
            sync: false,
            extra: Nanos::ZERO,
        });
        vm.stats.guest_ticks += 1;
        let st = &self.sched.tasks[task.idx()];
        if st.on_cpu && self.sched.rqs[st.cpu.idx()].curr == Some(task) {
            vm.g[i].pending_exit += exit;
            self.poke(vi, i);
        } else {
            vm.vcpus[i].pending_request = true;
        }
    }

    /// `kvm_vcpu_wake_up` of a blocking vCPU: `rcuwait_wake_up` ->
    /// `wake_up_process`; `ready` is set only if that woke the task (a vCPU
    /// already woken, or back on a CPU but not yet out of `kvm_vcpu_block`,
    /// is left alone).
    fn wake_vcpu(&mut self, vi: usize, i: usize, waker: Option<CpuId>) {
        let task = self.vms[vi].task(i);
        let v = &mut self.vms[vi].vcpus[i];
        let was_ready = v.ready;
        if v.kvm_vcpu_wake_up() {
            if self.sched.try_to_wake_up(task, 0, waker) {
                self.trace_wakeup_from(task, waker);
            } else {
                self.vms[vi].vcpus[i].ready = was_ready;
            }
        }
    }

    /// Makes a running vCPU look at its state now (a lock it waits for was
    /// released, an interrupt arrived); a vCPU that is not running sees the
    /// change when it next enters the guest.
    fn poke(&mut self, vi: usize, i: usize) {
        let task = self.vms[vi].task(i);
        let t = &self.sched.tasks[task.idx()];
        if t.on_cpu && self.sched.rqs[t.cpu.idx()].curr == Some(task) {
            let cpu = t.cpu;
            self.kick_burst(cpu);
        }
    }

    /// Interrupt delivery to vCPU `t` (`__apic_accept_irq` + `kvm_vcpu_kick`).
    fn deliver(
        &mut self,
        vi: usize,
        from: usize,
        t: usize,
        vector: Vector,
        sync: bool,
        cpu: CpuId,
    ) {
        self.deliver_call(vi, from, t, vector, sync, Nanos::ZERO, cpu);
    }

    /// `deliver` of an interrupt whose handler does `extra` of work after
    /// the entry (a cross-CPU call's function).
    #[allow(clippy::too_many_arguments)]
    fn deliver_call(
        &mut self,
        vi: usize,
        from: usize,
        t: usize,
        vector: Vector,
        sync: bool,
        extra: Nanos,
        cpu: CpuId,
    ) {
        let now = self.now;
        let apicv = self.kvm.apicv;
        let exit = self.kvm.round_trip();
        let task = self.vms[vi].task(t);
        let vm = &mut self.vms[vi];
        vm.g[t].irqs.push_back(Irq {
            at: now,
            vector,
            from: from as u32,
            sync,
            extra,
        });
        if vm.vcpus[t].blocking {
            // kvm_vcpu_kick -> kvm_vcpu_wake_up -> rcuwait_wake_up.
            vm.vcpus[t].pending_request = true;
            self.wake_vcpu(vi, t, Some(cpu));
            return;
        }
        let st = &self.sched.tasks[task.idx()];
        let running = st.on_cpu && self.sched.rqs[st.cpu.idx()].curr == Some(task);
        if running {
            // In guest mode: a posted interrupt (APICv) needs no exit; without
            // it the kick IPI forces an exit and the injection on re-entry.
            if !apicv {
                vm.g[t].pending_exit += exit;
            }
            self.poke(vi, t);
        } else if apicv {
            vm.vcpus[t].pi_pending = true;
        } else {
            vm.vcpus[t].pending_request = true;
        }
    }

    /// A vCPU task's burst ended (or was cut short, `left` unused).
    pub(super) fn vcpu_step(&mut self, cpu: CpuId, p: TaskId, vi: usize, i: usize, left: Nanos) {
        // Account the burst.
        let mut spun = Nanos::ZERO;
        {
            let vm = &mut self.vms[vi];
            let g = &mut vm.g[i];
            let (ex, work) = g.split_burst(left);
            vm.stats.account(g.cat, ex, work);
            // Exit overhead not yet paid when the burst was cut short stays owed.
            g.pending_exit += g.plan_exit - ex;
            match &mut g.phase {
                Phase::Compute { left, .. }
                | Phase::Hold { left, .. }
                | Phase::Handler { left, .. }
                | Phase::Poll { left, .. } => *left = *left - work,
                Phase::Spin { .. } => spun = work,
                Phase::Guest => {
                    if let Some(gl) = vm.guest.as_mut() {
                        gl.consumed(i, work);
                    }
                }
                _ => {}
            }
            g.plan_exit = Nanos::ZERO;
            g.plan_work = Nanos::ZERO;
            if vm.vcpus[i].blocking {
                vm.vcpus[i].kvm_vcpu_unblock();
            }
            // vcpu_enter_guest consumes KVM_REQ_EVENT (and the PV kick's
            // request); a posted interrupt is synced into the IRR.
            vm.vcpus[i].pending_request = false;
            if g.irqs.is_empty() {
                vm.vcpus[i].pi_pending = false;
            }
        }
        let act = self.vcpu_next(cpu, vi, i, left, spun);
        let vm = &mut self.vms[vi];
        let g = &mut vm.g[i];
        match act {
            Act::Run(cat, work) => {
                g.plan_exit = std::mem::take(&mut g.pending_exit);
                g.plan_work = work;
                g.cat = cat;
                vm.vcpus[i].cpl = match g.phase {
                    Phase::Compute { user: true, .. } => Cpl::User,
                    _ => Cpl::Kernel,
                };
                self.tasks[p.idx()].remaining = Some(g.plan_exit + work);
                self.start_burst(cpu, p);
                self.trace_entry(cpu, p);
            }
            Act::Sleep(timer) => {
                vm.vcpus[i].cpl = Cpl::Kernel;
                vm.vcpus[i].kvm_vcpu_block();
                g.timer_gen += 1;
                if let Some(at) = timer {
                    let gen = g.timer_gen;
                    let at = at.max(self.now);
                    if at <= self.end {
                        self.queue.push(at, Ev::GuestTimer(p, gen));
                    }
                }
                self.tasks[p.idx()].remaining = None;
                let sw = self.sched.block_current(cpu);
                self.after_own_switch(cpu, p, sw);
            }
            Act::Switched(sw) => {
                vm.vcpus[i].cpl = Cpl::Kernel;
                self.tasks[p.idx()].remaining = None;
                self.after_own_switch(cpu, p, sw);
            }
        }
    }

    /// The guest's next action.
    fn vcpu_next(&mut self, cpu: CpuId, vi: usize, i: usize, left: Nanos, spun: Nanos) -> Act {
        let now = self.now;
        let me = VcpuIdx(i as u32);
        let mut spun = Some(spun);
        loop {
            let vm = &mut self.vms[vi];
            let phase = vm.g[i].phase;
            // Interrupt injection on entry (not inside a critical section or
            // another handler: the model's locks are taken with IRQs off).
            if !vm.g[i].irqs.is_empty()
                && !matches!(phase, Phase::Hold { .. } | Phase::Handler { .. })
            {
                let irq = vm.g[i].irqs.pop_front().expect("non-empty");
                if vm.g[i].irqs.is_empty() {
                    vm.vcpus[i].pending_request = false;
                    vm.vcpus[i].pi_pending = false;
                }
                if irq.vector != LOCAL_TIMER_VECTOR {
                    vm.stats.ipi_latency.add((now - irq.at).0);
                }
                let resume = match phase {
                    Phase::Halted { pv_lock: None } | Phase::Poll { pv_lock: None, .. } => {
                        vm.g[i].timer_gen += 1;
                        self.halt_done(vi, i);
                        Phase::Start
                    }
                    Phase::Poll { pv_lock, .. } => Phase::Halted { pv_lock },
                    Phase::Spin {
                        wait, then, len, ..
                    } => Phase::Spin {
                        wait,
                        ple: false,
                        then,
                        len,
                    },
                    ph => ph,
                };
                // Keep the interrupted spin's progress for its lock.
                if let (
                    Some(s),
                    Phase::Spin {
                        wait: Wait::Lock(l),
                        ..
                    },
                ) = (spun, phase)
                {
                    let iters = spin_iters(&self.kvm, s);
                    if iters > 0 {
                        match self.vms[vi].locks[l].poll(me, iters) {
                            // Threshold reached as the IRQ came: halt after it.
                            LockStep::Halt => {
                                self.vms[vi].g[i].resume = Some(Phase::Halted { pv_lock: Some(l) })
                            }
                            // Took the lock just before: the handler runs first.
                            LockStep::Acquired => {
                                self.lock_acquired(vi, i, l);
                                self.vms[vi].g[i].resume = Some(self.vms[vi].g[i].phase);
                            }
                            LockStep::Spin => {}
                        }
                    }
                    spun = None;
                }
                let vm = &mut self.vms[vi];
                if vm.g[i].resume.is_none() {
                    vm.g[i].resume = Some(resume);
                }
                vm.g[i].phase = Phase::Handler {
                    left: self.kvm.irq_handler + irq.extra,
                    vector: irq.vector,
                    sync_from: irq.sync.then_some(irq.from),
                };
                continue;
            }
            match phase {
                Phase::Start if vm.guest.is_some() => vm.g[i].phase = Phase::Guest,
                Phase::Guest => {
                    let next = self.guest_run(cpu, vi, i);
                    self.trace_guest_curr(vi, i);
                    match next {
                        GuestNext::Run(d) => return Act::Run(Cat::Useful, d),
                        GuestNext::KernelLock(l, hold) => {
                            // Back to Phase::Guest (via Start) after the
                            // release.
                            self.vms[vi].g[i].hold_next = Some(hold);
                            // Without `[[vm]] ops`, a program VM's op is
                            // this kernel lock section, attempt to release.
                            self.vms[vi].g[i].op_start = self.now;
                            self.lock_start(vi, i, l);
                            continue;
                        }
                        GuestNext::Call {
                            targets,
                            handler,
                            wait,
                        } => {
                            let running = self.vcpus_running_if(self.kvm.avic, vi);
                            let then = wait.then_some(Phase::Spin {
                                wait: Wait::Csd,
                                ple: false,
                                then: 0,
                                len: Nanos::ZERO,
                            });
                            if let Some(sw) = self.smp_call_function_many(
                                cpu, vi, i, &targets, handler, then, &running,
                            ) {
                                return Act::Switched(sw);
                            }
                            continue;
                        }
                        GuestNext::OwnerSpin => {
                            self.vms[vi].g[i].phase = Phase::Spin {
                                wait: Wait::Owner,
                                ple: false,
                                then: 0,
                                len: Nanos::ZERO,
                            };
                            continue;
                        }
                        GuestNext::Idle => {}
                    }
                    // The guest CPU is idle: HLT until an interrupt (its
                    // hrtimers and reschedule IPIs arrive as interrupts).
                    let vm = &mut self.vms[vi];
                    vm.stats.halts += 1;
                    vm.g[i].wait_start = Time(FOREVER.0);
                    return self.halt(cpu, vi, i, None);
                }
                Phase::Start => {
                    let done = i as u32 >= vm.active
                        || (vm.prof.iterations > 0 && vm.stats.ops >= vm.prof.iterations);
                    if done {
                        vm.g[i].phase = Phase::Done;
                        continue;
                    }
                    let len = Nanos(vm.rng.exp(vm.prof.compute_ns).max(1));
                    let user = !vm.rng.chance(vm.prof.kernel_fraction);
                    vm.g[i].op_start = now;
                    vm.g[i].phase = Phase::Compute {
                        left: len,
                        len,
                        user,
                    };
                    // What the next pass would do: no interrupt is pending
                    // (this pass found none) and `len` > 0.
                    return Act::Run(Cat::Useful, len);
                }
                Phase::Compute { left, len, .. } => {
                    if left > Nanos::ZERO {
                        return Act::Run(Cat::Useful, left);
                    }
                    vm.g[i].phase = Phase::After { stage: 0, len };
                    // The stages run at once: none of them queues an
                    // interrupt for this vCPU (their IPIs go to others), so
                    // the loop's injection check would find nothing.
                    if let Some(a) = self.after_stages(cpu, vi, i, 0, len) {
                        return a;
                    }
                }
                Phase::After { stage, len } => {
                    if let Some(a) = self.after_stages(cpu, vi, i, stage, len) {
                        return a;
                    }
                }
                Phase::Spin {
                    wait,
                    ple,
                    then,
                    len,
                } => {
                    let s = spun.take().unwrap_or(Nanos::ZERO);
                    // Did the wait end?
                    match wait {
                        Wait::Lock(l) => {
                            let pv_left = vm.locks[l].spins_left(me);
                            let mut iters = spin_iters(&self.kvm, s).max(1);
                            if !ple && left == Nanos::ZERO && vm.g[i].cat == Cat::Spin {
                                if let Some(n) = pv_left {
                                    iters = n.max(1);
                                }
                            }
                            let vm = &mut self.vms[vi];
                            match vm.locks[l].poll(me, iters) {
                                LockStep::Acquired => {
                                    self.lock_acquired(vi, i, l);
                                    continue;
                                }
                                LockStep::Halt => {
                                    // pv_wait -> kvm_wait -> HLT.
                                    vm.stats.halts += 1;
                                    vm.g[i].pending_exit += self.kvm.round_trip();
                                    return self.halt(cpu, vi, i, Some(l));
                                }
                                LockStep::Spin => {}
                            }
                        }
                        Wait::Csd => {
                            if vm.g[i].csd_pending == 0 {
                                vm.stats.csd_wait_ns += (now - vm.g[i].csd_since).0;
                                vm.stats.csd_waits += 1;
                                vm.g[i].phase = if vm.guest.is_some() {
                                    Phase::Guest
                                } else {
                                    Phase::After { stage: then, len }
                                };
                                continue;
                            }
                        }
                        // mutex_spin_on_owner: the lock came free (take it
                        // through the program), or the owner left its CPU
                        // or was preempted, or need_resched: sleep.
                        Wait::Owner => {
                            if self.guest_spun_lock_free(vi, i) {
                                self.vms[vi].g[i].phase = Phase::Guest;
                                continue;
                            }
                            if !self.guest_keeps_spinning(vi, i) {
                                self.guest_sleep_on_lock(vi, i);
                                self.vms[vi].g[i].phase = Phase::Guest;
                                continue;
                            }
                        }
                        Wait::Turn => {
                            if vm.turn == i as u32 {
                                self.lock_start(vi, i, 0);
                                continue;
                            }
                            // turn_yield: a guest-directed yield to the holder
                            // when steal time says it is preempted (s390's
                            // diag 0x9c; x86 KVM_HC_SCHED_YIELD).
                            let holder = vm.turn as usize;
                            // At most one per spin burst (the guest spins
                            // between two looks at the holder).
                            if vm.prof.turn_yield
                                && self.pv.steal_time
                                && vm.vcpus[holder].preempted
                                && vm.g[i].last_turn_yield != Some(now)
                            {
                                vm.g[i].last_turn_yield = Some(now);
                                vm.g[i].pending_exit += self.kvm.round_trip();
                                if let Some(sw) = self.pv_sched_yield(cpu, vi, i, holder) {
                                    return Act::Switched(sw);
                                }
                            }
                        }
                    }
                    if ple && left == Nanos::ZERO {
                        self.vms[vi].g[i].phase = Phase::Spin {
                            wait,
                            ple: false,
                            then,
                            len,
                        };
                        if let Some(sw) = self.handle_pause(cpu, vi, i) {
                            return Act::Switched(sw);
                        }
                    }
                    let (d, ple2) = self.plan_spin(vi, i, wait);
                    self.vms[vi].g[i].phase = Phase::Spin {
                        wait,
                        ple: ple2,
                        then,
                        len,
                    };
                    return Act::Run(Cat::Spin, d);
                }
                Phase::Hold { lock, left } => {
                    if left > Nanos::ZERO {
                        return Act::Run(Cat::Useful, left);
                    }
                    if let Some(a) = self.lock_release(cpu, vi, i, lock) {
                        return a;
                    }
                }
                Phase::Handler {
                    left,
                    vector,
                    sync_from,
                } => {
                    if left > Nanos::ZERO {
                        return Act::Run(Cat::Useful, left);
                    }
                    // EOI: exits unless APICv virtualizes it.
                    if vm.tracker.on_eoi(me, vector, now) {
                        vm.stats.eoi_exits += 1;
                        vm.g[i].pending_exit += self.kvm.round_trip();
                    }
                    vm.g[i].phase = vm.g[i].resume.take().unwrap_or(Phase::Start);
                    if vector == LOCAL_TIMER_VECTOR && vm.guest.is_some() {
                        self.guest_timer_interrupt(cpu, vi, i);
                    }
                    let vm = &mut self.vms[vi];
                    if let Some(s) = sync_from {
                        let s = s as usize;
                        vm.g[s].csd_pending = vm.g[s].csd_pending.saturating_sub(1);
                        if vm.g[s].csd_pending == 0 {
                            self.poke(vi, s);
                        }
                    }
                }
                Phase::Halted { pv_lock } => match pv_lock {
                    // Woken from an idle HLT (timer or interrupt): work again.
                    None => {
                        self.halt_done(vi, i);
                        let vm = &mut self.vms[vi];
                        vm.g[i].timer_gen += 1;
                        vm.g[i].phase = Phase::Start;
                    }
                    // pv_wait returned (kicked, or woken by an interrupt):
                    // look at the lock, then spin again before halting.
                    Some(l) => {
                        self.halt_done(vi, i);
                        let vm = &mut self.vms[vi];
                        match vm.locks[l].pv_wait_then_poll(me) {
                            LockStep::Halt => return self.halt(cpu, vi, i, Some(l)),
                            LockStep::Acquired => self.lock_acquired(vi, i, l),
                            LockStep::Spin => {
                                vm.g[i].phase = Phase::Spin {
                                    wait: Wait::Lock(l),
                                    ple: false,
                                    then: 0,
                                    len: Nanos::ZERO,
                                }
                            }
                        }
                    }
                },
                Phase::Poll { pv_lock, left } => {
                    // kvm_vcpu_check_block: the guest timer expired, or a PV
                    // kick arrived (interrupts are injected above).
                    let woken = match pv_lock {
                        None => now >= vm.g[i].wait_start,
                        Some(_) => vm.vcpus[i].pv_unhalted,
                    };
                    if woken {
                        vm.vcpus[i].pv_unhalted = false;
                        vm.g[i].phase = Phase::Halted { pv_lock };
                        continue;
                    }
                    if left > Nanos::ZERO && self.sched.rqs[cpu.idx()].nr_running == 1 {
                        // Nothing arrived yet (an arrival pokes): keep polling.
                        return Act::Run(Cat::Poll, left);
                    }
                    let vm = &mut self.vms[vi];
                    vm.g[i].phase = Phase::Halted { pv_lock };
                    let timer = vm.g[i].wait_start;
                    return Act::Sleep((pv_lock.is_none()).then_some(timer));
                }
                Phase::Done => return Act::Sleep(None),
            }
        }
    }

    /// `kvm_vcpu_halt` for an HLT (idle, guest timer at `wait_start`) or a
    /// `pv_wait`: poll first if the interval is non-zero and the CPU has
    /// nothing else to run (`kvm_vcpu_can_poll`: `single_task_running()`),
    /// else block.
    fn halt(&mut self, cpu: CpuId, vi: usize, i: usize, pv_lock: Option<usize>) -> Act {
        self.trace_exit(cpu, self.vms[vi].task(i), "HLT");
        let now = self.now;
        let single = self.sched.rqs[cpu.idx()].nr_running == 1;
        let vm = &mut self.vms[vi];
        let g = &mut vm.g[i];
        g.in_halt = true;
        g.halt_start = now;
        let poll = match self.kvm.halt_poll {
            HaltPoll::Off => Nanos::ZERO,
            HaltPoll::Fixed(d) => d,
            HaltPoll::Dynamic { max } => {
                g.halt_poll_ns = g.halt_poll_ns.min(max.0);
                Nanos(g.halt_poll_ns)
            }
        };
        let poll = match pv_lock {
            None => poll.min(g.wait_start - now),
            Some(_) => poll,
        };
        if poll > Nanos::ZERO && single {
            g.phase = Phase::Poll {
                pv_lock,
                left: poll,
            };
            return Act::Run(Cat::Poll, poll);
        }
        g.phase = Phase::Halted { pv_lock };
        let timer = pv_lock.is_none().then_some(g.wait_start);
        Act::Sleep(timer)
    }

    /// End of `kvm_vcpu_halt`: adapt `vcpu->halt_poll_ns` to how long the
    /// vCPU was halted (kvm_main.c:3880-3900; every wakeup counts as valid).
    fn halt_done(&mut self, vi: usize, i: usize) {
        let now = self.now;
        let g = &mut self.vms[vi].g[i];
        if !g.in_halt {
            return;
        }
        g.in_halt = false;
        let (halted, waited) = (
            (now - g.halt_start).0,
            matches!(g.phase, Phase::Halted { .. }),
        );
        self.trace_vcpu_wakeup(vi, i, halted, waited);
        let g = &mut self.vms[vi].g[i];
        let HaltPoll::Dynamic { max } = self.kvm.halt_poll else {
            return;
        };
        let (halt_ns, max, hp) = ((now - g.halt_start).0, max.0, g.halt_poll_ns);
        const GROW_START: u64 = 10_000;
        if max == 0 {
            g.halt_poll_ns = 0;
        } else if halt_ns <= hp {
        } else if hp > 0 && halt_ns > max {
            let v = hp / 2;
            g.halt_poll_ns = if v < GROW_START { 0 } else { v };
        } else if hp < max && halt_ns < max {
            g.halt_poll_ns = (hp * 2).max(GROW_START);
        }
    }

    /// Length of the next spin burst and whether it ends in a PAUSE exit.
    fn plan_spin(&self, vi: usize, i: usize, wait: Wait) -> (Nanos, bool) {
        let vm = &self.vms[vi];
        let me = VcpuIdx(i as u32);
        let cap = match wait {
            Wait::Lock(l) => vm.locks[l].spins_left(me),
            _ => None,
        };
        let lp = PauseLoop {
            iterations: cap.unwrap_or(u64::MAX),
            cycles_per_iter: self.kvm.pause_cycles,
            tsc_khz: self.kvm.guest_tsc_khz,
            cpl0: true,
        };
        let out = match self.kvm.ple {
            Some(p) => ple_fires(&p, vm.g[i].ple_window, &lp, true),
            None => PleOutcome::NoExit,
        };
        match out {
            PleOutcome::Exit { after, .. } => (after.max(Nanos(1)), true),
            PleOutcome::NoExit => match cap {
                Some(n) => (
                    cycles_to_ns(
                        n.saturating_mul(self.kvm.pause_cycles),
                        self.kvm.guest_tsc_khz,
                    )
                    .max(Nanos(1)),
                    false,
                ),
                None => (FOREVER, false),
            },
        }
    }

    /// `handle_pause` / `pause_interception`: grow the window, then
    /// `kvm_vcpu_on_spin(vcpu, true)`. Returns the switch if it yielded.
    fn handle_pause(&mut self, cpu: CpuId, vi: usize, i: usize) -> Option<Option<Switch>> {
        self.trace_exit(cpu, self.vms[vi].task(i), "PAUSE_INSTRUCTION");
        let now = self.now;
        let kvm = &self.kvm;
        let vm = &mut self.vms[vi];
        vm.stats.ple_exits += 1;
        if let Some(p) = kvm.ple {
            vm.g[i].ple_window = p.grow_ple_window(vm.g[i].ple_window);
        }
        vm.g[i].pending_exit += kvm.round_trip();
        let OnSpinSpec::Variant(variant) = kvm.on_spin else {
            return None;
        };
        vm.stats.on_spin_calls += 1;
        let me = VcpuIdx(i as u32);
        let receiver = match variant {
            OnSpinVariant::IpiAware { .. } => vm.tracker.confirmed_receiver(me, now),
            OnSpinVariant::IpiHint => {
                let mut h = vm.hint.take();
                let r = h
                    .as_mut()
                    .and_then(|h| h.owed_receiver(me, now, |r, v| vm.owes(r, v)));
                vm.hint = h;
                r
            }
            _ => None,
        };
        let base = vm.task_base;
        let sched = &mut self.sched;
        let mut out = None;
        // handle_pause (VMX) passes true; pause_interception (SVM) passes
        // `!sev_es_guest && CPL == 0` (every spin here is at CPL 0).
        let ytkm = !(vm.protected && kvm.ple.is_some_and(|p| p.kind == PleKind::Svm));
        let dec = kvm_vcpu_on_spin(
            &mut vm.spin,
            &mut vm.vcpus,
            me,
            ytkm,
            variant,
            receiver,
            |t| {
                let r = sched.yield_to(cpu, TaskId(base + t.0), true);
                if let YieldTo::Yielded(sw) = r {
                    out = Some(sw);
                }
                yield_to_ret(r)
            },
        );
        if let Some(Some(sw)) = out {
            if sw.prev == Some(TaskId(base + me.0)) {
                // Switched out inside kvm_vcpu_on_spin(): in_spin_loop stays
                // set until the vCPU runs again (issue 11, bug 2).
                vm.vcpus[i].in_spin_loop = true;
                vm.vcpus[i].yielded_in_spin_loop = true;
            }
        }
        if let Some(t) = dec.target.filter(|_| dec.yielded > 0) {
            if matches!(vm.g[t.idx()].phase, Phase::Spin { .. }) {
                vm.stats.boosts_to_spinner += 1;
            }
        }
        if self.trace.is_some() {
            self.trace_on_spin(cpu, vi, i, &dec);
        }
        let vm = &mut self.vms[vi];
        vm.stats.yield_attempts += dec.attempts.len() as u64;
        vm.stats.yield_esrch += dec.attempts.iter().filter(|a| a.result < 0).count() as u64;
        if dec.yielded > 0 {
            vm.stats.yield_ok += 1;
            if dec.tier == Some(Tier::IpiReceiver) {
                vm.stats.boosts_receiver += 1;
                // Does the boosted receiver still owe me an IPI (queued, or
                // its handler running)? If not, the preference was stale.
                let t = dec.target.map_or(0, |t| t.idx());
                let owes = vm.g[t]
                    .irqs
                    .iter()
                    .any(|q| q.from == me.0 && q.vector != LOCAL_TIMER_VECTOR)
                    // An IPI handler in service counts as owing (async IPIs
                    // do not record their sender): undercounts stale boosts.
                    || matches!(vm.g[t].phase, Phase::Handler { vector, .. } if vector != LOCAL_TIMER_VECTOR);
                if !owes {
                    vm.stats.boosts_stale_receiver += 1;
                }
            }
        }
        out
    }

    /// KVM_HC_SCHED_YIELD (also done by KVM_HC_KICK_CPU) towards `target`.
    fn pv_sched_yield(
        &mut self,
        cpu: CpuId,
        vi: usize,
        i: usize,
        target: usize,
    ) -> Option<Option<Switch>> {
        let single = self.sched.rqs[cpu.idx()].nr_running == 1;
        let vm = &mut self.vms[vi];
        vm.stats.dy_attempted += 1;
        let base = vm.task_base;
        let sched = &mut self.sched;
        let mut out = None;
        let r = kvm_sched_yield(&vm.vcpus, VcpuIdx(i as u32), target as u64, single, |t| {
            let r = sched.yield_to(cpu, TaskId(base + t.0), true);
            if let YieldTo::Yielded(sw) = r {
                out = Some(sw);
            }
            yield_to_ret(r)
        });
        if let SchedYield::Yielded(t) = r {
            vm.stats.dy_successful += 1;
            self.trace_yield_to(cpu, base + i as u32, base + t.0);
        }
        out
    }

    /// [`Self::after_compute`] from `stage` on, one stage after the other
    /// while the vCPU stays in the post-compute phase with no interrupt
    /// pending (what `vcpu_next`'s loop would do, without its passes).
    fn after_stages(
        &mut self,
        cpu: CpuId,
        vi: usize,
        i: usize,
        mut stage: u8,
        mut len: Nanos,
    ) -> Option<Act> {
        loop {
            if let Some(a) = self.after_compute(cpu, vi, i, stage, len) {
                return Some(a);
            }
            let g = &self.vms[vi].g[i];
            match g.phase {
                Phase::After { stage: s, len: l } if g.irqs.is_empty() => (stage, len) = (s, l),
                _ => return None,
            }
        }
    }

    /// The post-compute stages. None: continue the loop.
    fn after_compute(
        &mut self,
        cpu: CpuId,
        vi: usize,
        i: usize,
        stage: u8,
        len: Nanos,
    ) -> Option<Act> {
        let now = self.now;
        let exit = self.kvm.round_trip();
        let pv = self.pv;
        // AVIC: which vCPUs run now (an IPI to one that does not exits);
        // built only once an IPI is drawn.
        let avic = self.kvm.avic;
        let vm = &mut self.vms[vi];
        let me = VcpuIdx(i as u32);
        let ms = len.0 as f64 / 1e6;
        match stage {
            0 => {
                vm.g[i].phase = Phase::After { stage: 1, len };
                if vm.active > 1
                    && vm.prof.ipi_per_ms > 0.0
                    && vm.rng.chance(vm.prof.ipi_per_ms * ms)
                {
                    let sync = vm.prof.ipi_sync;
                    // A reschedule IPI carries a work item (a task woken on
                    // another CPU): the guest's wakeup picks an idle CPU when
                    // there is one (select_idle_sibling), so an idle-halted
                    // vCPU gets it; otherwise, and for call-function IPIs, a
                    // uniformly drawn other vCPU.
                    let drawn = if sync {
                        None
                    } else {
                        draw_idle_vcpu(&vm.g[..vm.active as usize], i, &mut vm.rng)
                    };
                    let t = match drawn {
                        Some(t) => t,
                        None => {
                            let t = vm.rng.below(u64::from(vm.active - 1)) as usize;
                            t + usize::from(t >= i)
                        }
                    };
                    let vector = if sync {
                        CALL_FUNCTION_SINGLE_VECTOR
                    } else {
                        RESCHEDULE_VECTOR
                    };
                    vm.stats.ipis_sent += 1;
                    let running = self.vcpus_running_if(avic, vi);
                    let w = self.vms[vi].icr_write(
                        me,
                        &LapicIrq::unicast(VcpuIdx(t as u32), vector),
                        now,
                        &running,
                        exit,
                    );
                    self.trace_icr(cpu, vi, i, t, vector.0, w.tracked);
                    let vm = &mut self.vms[vi];
                    if sync {
                        vm.g[i].csd_pending += w.targets.len() as u32;
                        vm.g[i].phase = Phase::Spin {
                            wait: Wait::Csd,
                            ple: false,
                            then: 1,
                            len,
                        };
                    }
                    for tg in w.targets {
                        self.deliver(vi, i, tg.idx(), vector, sync, cpu);
                    }
                }
                None
            }
            1 => {
                vm.g[i].phase = Phase::After { stage: 2, len };
                if vm.active > 1
                    && vm.prof.tlb_shootdown_per_ms > 0.0
                    && vm.rng.chance(vm.prof.tlb_shootdown_per_ms * ms)
                {
                    // flush_tlb_multi: kvm_flush_tlb_multi drops preempted
                    // vCPUs (they flush on entry) when PV TLB flush is on.
                    // (Into the VM's kept buffer: no allocation per shootdown.)
                    let mut targets = std::mem::take(&mut vm.targets_buf);
                    targets.clear();
                    targets.extend(
                        (0..vm.active as usize)
                            .filter(|&t| t != i)
                            .filter(|&t| !(pv.tlb_flush && pv.steal_time && vm.vcpus[t].preempted)),
                    );
                    if targets.is_empty() {
                        vm.targets_buf = targets;
                        return None;
                    }
                    let then = Phase::Spin {
                        wait: Wait::Csd,
                        ple: false,
                        then: 2,
                        len,
                    };
                    let running = self.vcpus_running_if(avic, vi);
                    let sw = self.smp_call_function_many(
                        cpu,
                        vi,
                        i,
                        &targets,
                        Nanos::ZERO,
                        Some(then),
                        &running,
                    );
                    self.vms[vi].targets_buf = targets;
                    if let Some(sw) = sw {
                        return Some(Act::Switched(sw));
                    }
                }
                None
            }
            _ => {
                if vm.prof.block_prob > 0.0 && vm.rng.chance(vm.prof.block_prob) {
                    // Idle: HLT until the guest timer (or an interrupt). The
                    // compute burst was a unit of work.
                    vm.stats.ops += 1;
                    vm.stats.op_latency.add((now - vm.g[i].op_start).0);
                    vm.stats.halts += 1;
                    vm.g[i].pending_exit += exit;
                    let until = now + Nanos(vm.rng.exp(vm.prof.block_ns).max(1));
                    vm.g[i].wait_start = until;
                    return Some(self.halt(cpu, vi, i, None));
                }
                if vm.pingpong {
                    vm.g[i].phase = Phase::Spin {
                        wait: Wait::Turn,
                        ple: false,
                        then: 0,
                        len,
                    };
                    return None;
                }
                if vm.locks.is_empty() {
                    vm.stats.ops += 1;
                    vm.stats.op_latency.add((now - vm.g[i].op_start).0);
                    vm.g[i].phase = Phase::Start;
                    return None;
                }
                let l = vm.rng.below(vm.locks.len() as u64) as usize;
                self.lock_start(vi, i, l);
                None
            }
        }
    }

    /// `smp_call_function_many_cond` from vCPU `i` to `targets` (6.12
    /// kernel/smp.c with x86's IPI senders): the ICR writes (a unicast
    /// CALL_FUNCTION_SINGLE for one target, else PV send-IPI, the
    /// all-but-self shorthand or one unicast per target), each handler doing
    /// `handler` of work after its entry. With `then` (`wait`) the sender
    /// enters it (a `csd_lock_wait` spin) and counts the handlers left;
    /// `kvm_smp_send_call_func_ipi` then yields to the first preempted
    /// target. Some(switch) if the sender yielded.
    #[allow(clippy::too_many_arguments)]
    fn smp_call_function_many(
        &mut self,
        cpu: CpuId,
        vi: usize,
        i: usize,
        targets: &[usize],
        handler: Nanos,
        then: Option<Phase>,
        running: &[bool],
    ) -> Option<Option<Switch>> {
        let now = self.now;
        let exit = self.kvm.round_trip();
        let pv = self.pv;
        let me = VcpuIdx(i as u32);
        let sync = then.is_some();
        // Unicast ICR writes, for `kvm_apic_ipi` once `vm` is released.
        let mut icrs: Vec<(usize, u8, bool)> = Vec::new();
        let tracing = self.tracing();
        let vm = &mut self.vms[vi];
        vm.stats.ipis_sent += targets.len() as u64;
        // smp_call_function_many_cond(): one target goes through
        // send_call_function_single_ipi() -> the native unicast
        // ICR write (PV send-IPI and kvm_smp_send_call_func_ipi
        // only override the mask paths, so no hypercall and no
        // PV sched_yield): issue 11 bug 3.
        let single = targets.len() == 1;
        if single {
            let w = vm.icr_write(
                me,
                &LapicIrq::unicast(VcpuIdx(targets[0] as u32), CALL_FUNCTION_SINGLE_VECTOR),
                now,
                running,
                exit,
            );
            if tracing {
                icrs.push((targets[0], CALL_FUNCTION_SINGLE_VECTOR.0, w.tracked));
            }
        } else if pv.send_ipi {
            // KVM_HC_SEND_IPI: one hypercall exit, never tracked.
            vm.stats.ipi_exits += 1;
            vm.g[i].pending_exit += exit;
        } else if targets.len() + 1 == vm.n as usize {
            // native_send_call_func_ipi: the mask is every other
            // online CPU -> one ICR write with the all-but-self
            // shorthand (broadcast; never tracked).
            let irq = LapicIrq {
                shorthand: Shorthand::AllButSelf,
                ..LapicIrq::unicast(me, CALL_FUNCTION_VECTOR)
            };
            let w = vm.icr_write(me, &irq, now, running, exit);
            debug_assert_eq!(w.targets.len(), targets.len());
        } else {
            for &t in targets {
                let w = vm.icr_write(
                    me,
                    &LapicIrq::unicast(VcpuIdx(t as u32), CALL_FUNCTION_VECTOR),
                    now,
                    running,
                    exit,
                );
                if tracing {
                    icrs.push((t, CALL_FUNCTION_VECTOR.0, w.tracked));
                }
            }
        }
        for (dest, vector, tracked) in icrs {
            self.trace_icr(cpu, vi, i, dest, vector, tracked);
        }
        let vm = &mut self.vms[vi];
        if let Some(then) = then {
            vm.g[i].csd_pending += targets.len() as u32;
            vm.g[i].csd_since = now;
            vm.g[i].phase = then;
        }
        // kvm_smp_send_call_func_ipi: yield to the first preempted target.
        let yield_to = if pv.sched_yield && pv.steal_time && !single {
            targets.iter().copied().find(|&t| vm.vcpus[t].preempted)
        } else {
            None
        };
        let vector = if single {
            CALL_FUNCTION_SINGLE_VECTOR
        } else {
            CALL_FUNCTION_VECTOR
        };
        for &t in targets {
            self.deliver_call(vi, i, t, vector, sync, handler, cpu);
        }
        if let Some(t) = yield_to {
            self.vms[vi].g[i].pending_exit += exit;
            return self.pv_sched_yield(cpu, vi, i, t);
        }
        None
    }

    fn lock_start(&mut self, vi: usize, i: usize, l: usize) {
        let now = self.now;
        let vm = &mut self.vms[vi];
        vm.g[i].wait_start = now;
        match vm.locks[l].lock(VcpuIdx(i as u32)) {
            LockStep::Acquired => self.lock_acquired(vi, i, l),
            _ => {
                vm.g[i].phase = Phase::Spin {
                    wait: Wait::Lock(l),
                    ple: false,
                    then: 0,
                    len: Nanos::ZERO,
                }
            }
        }
    }

    fn lock_acquired(&mut self, vi: usize, i: usize, l: usize) {
        let now = self.now;
        let vm = &mut self.vms[vi];
        vm.stats.lock_wait.add((now - vm.g[i].wait_start).0);
        vm.stats.lock_wait_total_ns += (now - vm.g[i].wait_start).0;
        vm.g[i].hold_start = now;
        let cs = match vm.g[i].hold_next.take() {
            Some(hold) => hold,
            None => Nanos(vm.rng.exp(vm.prof.cs_ns)),
        };
        vm.g[i].phase = Phase::Hold { lock: l, left: cs };
    }

    /// Unlock, wake or kick the next waiter. Some(act) if the releaser yielded.
    fn lock_release(&mut self, cpu: CpuId, vi: usize, i: usize, l: usize) -> Option<Act> {
        let now = self.now;
        let exit = self.kvm.round_trip();
        let vm = &mut self.vms[vi];
        vm.stats.lock_hold.add((now - vm.g[i].hold_start).0);
        vm.stats.ops += 1;
        vm.stats.op_latency.add((now - vm.g[i].op_start).0);
        vm.g[i].phase = Phase::Start;
        let r = vm.locks[l].release(VcpuIdx(i as u32));
        let mut kicked = None;
        match r {
            Release::HandedTo(c) => self.poke(vi, c.idx()),
            Release::Free => {
                // (A poke does not touch the lock.)
                let mut k = 0;
                while let Some(c) = self.vms[vi].locks[l].contender(k) {
                    self.poke(vi, c.idx());
                    k += 1;
                }
            }
            Release::Kick(c) => {
                // pv_kick -> KVM_HC_KICK_CPU: kvm_pv_kick_cpu_op, then
                // kvm_sched_yield towards the kicked vCPU.
                vm.stats.pv_kicks += 1;
                vm.g[i].pending_exit += exit;
                let was_ready = vm.vcpus[c.idx()].ready;
                if kvm_pv_kick_cpu_op(&mut vm.vcpus, u64::from(c.0)) {
                    let task = vm.task(c.idx());
                    if self.sched.try_to_wake_up(task, 0, Some(cpu)) {
                        self.trace_wakeup_from(task, Some(cpu));
                    } else {
                        self.vms[vi].vcpus[c.idx()].ready = was_ready;
                    }
                } else {
                    self.poke(vi, c.idx());
                }
                kicked = Some(c.idx());
            }
        }
        let vm = &mut self.vms[vi];
        if vm.pingpong {
            let other = (i + 1) % (vm.active.max(1) as usize);
            vm.turn = other as u32;
            self.poke(vi, other);
        }
        if let Some(c) = kicked {
            if let Some(sw) = self.pv_sched_yield(cpu, vi, i, c) {
                return Some(Act::Switched(sw));
            }
        }
        None
    }
}
