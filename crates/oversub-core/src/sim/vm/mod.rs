//! VMs on the simulated host: each vCPU is a host task in `KVM_RUN`, known to
//! the host level only by its preempt notifier (notifier.rs), whose bursts
//! the guest/KVM model below runs (module `sim::vm`, a child of the simulator so
//! it can drive the scheduler directly). docs/kvm-model.md, "Integration",
//! describes the mechanisms and their kernel sources.
//!
//! A vCPU runs *phases* (compute, lock spin, critical section, interrupt
//! handler, halt) that become CPU bursts. A burst is `[exit overhead][work]`:
//! VM exit/entry costs owed by the vCPU are paid at the start of its next
//! burst. Whenever a vCPU enters the guest (scheduled in, woken, poked) its
//! burst ends at once and the phase looks at the guest state again, so a lock
//! granted or an interrupt delivered while it was away is seen on entry.

use super::Simulator;
use crate::engine::{Nanos, SimRng, Time};
use crate::guest::machine::GuestLock;
use crate::guest::spinlock::{kvm_spinlock_init, PvSlowpath};
use crate::guest::workload::{LockPattern, WorkloadProfile};
use crate::kvm::ipi_hint::IpiHint;
use crate::kvm::lapic::{IpiTracker, IpiTrackingParams};
use crate::kvm::on_spin::{Attempt, OnSpinVariant, SpinVm};
use crate::kvm::vcpu::VcpuState;
use crate::kvm::{VcpuIdx, VmId};
use crate::report::VmReport;
use crate::scenario::{KvmSpec, OnSpinSpec, PvSpec, VmSpec};
use crate::sched::core::Switch;
use crate::sched::CpuMask;
use crate::sched::TaskId;
use model::{GuestModel, NestedGuest, PhaseGen};
use state::{Cat, Phase, VGuest, VmStats, Wait};

mod events;
mod exits;
mod guest;
mod idle;
mod irq;
mod model;
mod notifier;
mod osq;
mod phases;
mod state;
mod step;
mod wakeup;
pub(super) use events::VmEv;
pub(super) use guest::GuestLevel;
pub(super) use notifier::PreemptNotifier;

const FOREVER: Nanos = Nanos(u64::MAX / 4);

/// The host tasks of one VM's vCPUs: vCPU `k` runs as host task
/// `first + k` (they are created consecutively). The one place a
/// (VM, vCPU) pair becomes a host task id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct VcpuTasks {
    first: TaskId,
}

impl VcpuTasks {
    pub(super) fn new(first: TaskId) -> VcpuTasks {
        VcpuTasks { first }
    }

    /// The host task running vCPU `i`.
    pub(super) fn task(self, i: VcpuIdx) -> TaskId {
        TaskId(self.first.0 + i.0)
    }
}

/// The VMs of a run: indexed by [`VmId`] where modules meet, by position
/// in loops over all of them.
#[derive(Default)]
pub(super) struct Vms(Vec<VmRt>);

impl std::ops::Deref for Vms {
    type Target = Vec<VmRt>;
    fn deref(&self) -> &Vec<VmRt> {
        &self.0
    }
}

impl std::ops::DerefMut for Vms {
    fn deref_mut(&mut self) -> &mut Vec<VmRt> {
        &mut self.0
    }
}

impl std::ops::Index<VmId> for Vms {
    type Output = VmRt;
    fn index(&self, vm: VmId) -> &VmRt {
        &self.0[vm.idx()]
    }
}

impl std::ops::IndexMut<VmId> for Vms {
    fn index_mut(&mut self, vm: VmId) -> &mut VmRt {
        &mut self.0[vm.idx()]
    }
}

impl std::ops::Index<usize> for Vms {
    type Output = VmRt;
    fn index(&self, k: usize) -> &VmRt {
        &self.0[k]
    }
}

impl std::ops::IndexMut<usize> for Vms {
    fn index_mut(&mut self, k: usize) -> &mut VmRt {
        &mut self.0[k]
    }
}

/// One VM's per-vCPU state (KVM's `kvm->vcpu_array`, the guest's per-CPU
/// data): indexed by [`VcpuIdx`] where modules meet, by position in loops
/// over all of them.
#[derive(Clone, Debug)]
pub(super) struct PerVcpu<T>(Vec<T>);

impl<T> std::ops::Deref for PerVcpu<T> {
    type Target = Vec<T>;
    fn deref(&self) -> &Vec<T> {
        &self.0
    }
}

impl<T> std::ops::DerefMut for PerVcpu<T> {
    fn deref_mut(&mut self) -> &mut Vec<T> {
        &mut self.0
    }
}

impl<T> std::ops::Index<VcpuIdx> for PerVcpu<T> {
    type Output = T;
    fn index(&self, i: VcpuIdx) -> &T {
        &self.0[i.idx()]
    }
}

impl<T> std::ops::IndexMut<VcpuIdx> for PerVcpu<T> {
    fn index_mut(&mut self, i: VcpuIdx) -> &mut T {
        &mut self.0[i.idx()]
    }
}

impl<T> std::ops::Index<usize> for PerVcpu<T> {
    type Output = T;
    fn index(&self, k: usize) -> &T {
        &self.0[k]
    }
}

impl<T> std::ops::IndexMut<usize> for PerVcpu<T> {
    fn index_mut(&mut self, k: usize) -> &mut T {
        &mut self.0[k]
    }
}

impl<T> FromIterator<T> for PerVcpu<T> {
    fn from_iter<I: IntoIterator<Item = T>>(it: I) -> PerVcpu<T> {
        PerVcpu(it.into_iter().collect())
    }
}

impl Vms {
    /// The ids of all VMs, in order.
    pub(super) fn ids(&self) -> impl Iterator<Item = VmId> {
        (0..self.0.len() as u32).map(VmId)
    }
}

/// The PV qspinlock slow path of `[guest] pv_wait_early` and
/// `pv_lock_stealing`.
fn pv_slowpath(pv: &PvSpec) -> PvSlowpath {
    PvSlowpath {
        wait_early: pv.pv_wait_early,
        steal: pv.pv_lock_stealing,
    }
}

/// Whether a vCPU's phase is a spin on a sleeping lock's owner.
fn spins_on_owner(phase: &Phase) -> bool {
    matches!(
        phase,
        Phase::Spin {
            wait: Wait::Owner,
            ..
        }
    )
}

/// One VM at run time.
pub(super) struct VmRt {
    name: String,
    /// The host tasks running the vCPUs.
    pub(super) tasks: VcpuTasks,
    pub(super) n: u32,
    active: u32,
    vcpus: PerVcpu<VcpuState>,
    g: PerVcpu<VGuest>,
    spin: SpinVm,
    tracker: IpiTracker,
    /// The sender-side IPI hint (on_spin = "ipi_hint" only).
    hint: Option<IpiHint>,
    locks: Vec<GuestLock>,
    /// Per lock: its waiters wait with IRQs off (`spin_lock_irqsave`,
    /// the program's `irqsave` lock attribute).
    lock_irqs_off: Vec<bool>,
    prof: WorkloadProfile,
    rng: SimRng,
    pingpong: bool,
    turn: VcpuIdx,
    /// `vcpu->arch.guest_state_protected` (SEV-ES / TDX).
    protected: bool,
    stats: VmStats,
    /// The guest model the vCPUs run (`model.rs`): the phase generator,
    /// or the nested guest of `guest`.
    model: &'static dyn GuestModel,
    /// The guest kernel of a program VM (None: the phase generator).
    pub(super) guest: Option<GuestLevel>,
    /// A kept buffer for a TLB shootdown's targets.
    targets_buf: Vec<VcpuIdx>,
    /// A kept buffer for the IPI mask of a cross-CPU call
    /// (`cfd->cpumask_ipi`).
    ipi_buf: Vec<VcpuIdx>,
    /// The guest loaded cpuidle-haltpoll (`[guest] cpuidle_haltpoll`, a
    /// program VM): its idle CPUs poll before HLT and host halt polling is
    /// off (`sim::vm::idle`).
    haltpoll: bool,
    /// A kept buffer for the attempts of `kvm_vcpu_on_spin()`.
    attempts_buf: Vec<Attempt>,
    /// The vCPUs that may spin on a sleeping lock's owner: a superset of
    /// those whose phase is `Phase::Spin { wait: Wait::Owner, .. }`, set
    /// where such a phase is entered ([`VmRt::note_owner_spin`]) and
    /// cleared lazily by [`VmRt::next_owner_spinner`], so the poke of every
    /// switch-out reads a few bits instead of every vCPU's phase. Checked
    /// with the invariants (`check_vcpus`).
    owner_spinners: CpuMask,
}

/// What a vCPU step ends with.
enum Act {
    Run(Cat, Nanos),
    Sleep(Option<Time>),
    /// The vCPU yielded (directed yield): apply this.
    Switched(Option<Switch>),
}

impl VmRt {
    pub(super) fn new(
        v: &VmSpec,
        kvm: &KvmSpec,
        pv: &PvSpec,
        tasks: VcpuTasks,
        rng: SimRng,
    ) -> VmRt {
        let prof = v.workload.clone();
        let active = prof.active_vcpus.unwrap_or(v.vcpus).min(v.vcpus);
        let window = kvm.ple.map_or(0, |p| p.window);
        let vcpus = (0..v.vcpus)
            .map(|k| {
                let mut s = VcpuState::new(VcpuIdx(k), Some(tasks.task(VcpuIdx(k))));
                s.apicv_active = kvm.apicv;
                s.ple_window = window;
                s
            })
            .collect();
        let g = (0..v.vcpus).map(|_| VGuest::new()).collect();
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
        let pingpong = prof.pattern == LockPattern::Turns;
        let nlocks = if pingpong { 1 } else { prof.locks as usize };
        // The guest's qspinlock as kvm_spinlock_init() leaves it.
        let kind = kvm_spinlock_init(prof.lock_kind, pv.spinlock, pv.nopvspin, v.vcpus);
        let slow = pv_slowpath(pv);
        let locks = (0..nlocks)
            .map(|_| GuestLock::with_pv_slowpath(kind, slow))
            .collect();
        VmRt {
            name: v.name.clone(),
            tasks,
            n: v.vcpus,
            active,
            vcpus,
            g,
            spin: SpinVm::default(),
            tracker,
            hint,
            locks,
            lock_irqs_off: Vec::new(),
            prof,
            rng,
            pingpong,
            turn: VcpuIdx(0),
            protected: v.protected,
            stats: VmStats::default(),
            model: &PhaseGen,
            guest: None,
            targets_buf: Vec::new(),
            ipi_buf: Vec::new(),
            haltpoll: false,
            attempts_buf: Vec::new(),
            owner_spinners: CpuMask::empty(v.vcpus as usize),
        }
    }

    /// A program VM: its vCPUs run this nested guest kernel.
    pub(super) fn set_guest(&mut self, g: GuestLevel) {
        self.guest = Some(g);
        self.model = &NestedGuest;
    }

    /// A program VM's guest kernel spinlocks (the program's `syscall`
    /// locks, then the wakeup-path locks; `irqsave[k]` says lock `k` is
    /// taken with `spin_lock_irqsave()`: the program's `irqsave`
    /// attribute, `WakeupLocks::irqs_off` for the wakeup path; a lock
    /// past its end is not): the profile's lock kind (PV qspinlock by
    /// default) as `kvm_spinlock_init()` leaves it; those taken with
    /// `spin_lock_irqsave()` are waited for with IRQs off.
    pub(super) fn set_program_locks(&mut self, irqsave: &[bool], n: usize, pv: &PvSpec) {
        let kind = kvm_spinlock_init(self.prof.lock_kind, pv.spinlock, pv.nopvspin, self.n);
        let slow = pv_slowpath(pv);
        self.locks = (0..n)
            .map(|_| GuestLock::with_pv_slowpath(kind, slow))
            .collect();
        self.lock_irqs_off = (0..n)
            .map(|k| irqsave.get(k).copied().unwrap_or(false))
            .collect();
    }

    /// Whether vCPU `i`'s guest has interrupts disabled in `phase` while
    /// it waits for a lock taken with `spin_lock_irqsave()` (spinning,
    /// halt polling or halted in `pv_wait`).
    fn irqs_off_waiting(&self, phase: Phase) -> bool {
        let l = match phase {
            Phase::Spin {
                wait: Wait::Lock(l),
                ..
            }
            | Phase::Halted { pv_lock: Some(l) }
            | Phase::Poll {
                pv_lock: Some(l), ..
            } => l,
            _ => return false,
        };
        self.lock_irqs_off.get(l).copied().unwrap_or(false)
    }

    /// Boot of a guest with cpuidle-haltpoll: `haltpoll_cpu_online` ->
    /// `arch_haltpoll_enable` on every CPU writes 0 to
    /// `MSR_KVM_POLL_CONTROL` (arch/x86/kernel/kvm.c, 6.12), turning host
    /// halt polling off for each vCPU.
    pub(super) fn cpuidle_haltpoll_init(&mut self) {
        self.haltpoll = true;
        for v in self.vcpus.iter_mut() {
            v.halt_poll.set_msr_kvm_poll_control(false);
        }
    }

    /// The host task running vCPU `i`.
    pub(super) fn task(&self, i: VcpuIdx) -> TaskId {
        self.tasks.task(i)
    }

    /// The APIC-write exits so far (the tracer's `kvm_exit`s of ICR writes).
    pub(super) fn ipi_exits(&self) -> u64 {
        self.stats.ipi_exits
    }

    /// The first vCPU from `from` on that spins on a sleeping lock's owner:
    /// the first candidate of `owner_spinners` whose phase says so (a
    /// candidate that left the phase is dropped from the set).
    fn next_owner_spinner(&mut self, mut from: usize) -> Option<VcpuIdx> {
        let n = self.n as usize;
        while let Some(j) = self.owner_spinners.next_in(from, n) {
            if spins_on_owner(&self.g[j].phase) {
                return Some(VcpuIdx(j as u32));
            }
            self.owner_spinners.set(j, false);
            from = j + 1;
        }
        None
    }

    /// Whether any vCPU may spin on an owner (`owner_spinners` not empty).
    #[inline]
    pub(super) fn may_have_owner_spinners(&self) -> bool {
        self.owner_spinners.weight() != 0
    }

    /// Keeps `owner_spinners` a superset: called after every assignment
    /// of vCPU `i`'s phase that may enter an owner spin.
    pub(super) fn note_owner_spin(&mut self, i: VcpuIdx) {
        if spins_on_owner(&self.g[i].phase) {
            self.owner_spinners.set(i.idx(), true);
        }
    }

    /// The vCPUs spinning on an owner that `owner_spinners` misses, if any
    /// (the invariant of the set).
    pub(super) fn owner_spinner_missed(&self) -> Option<VcpuIdx> {
        VcpuIdx::all(self.n)
            .find(|&i| spins_on_owner(&self.g[i].phase) && !self.owner_spinners.test(i.idx()))
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
            guest_haltpoll: self.haltpoll.then_some(crate::report::GuestHaltpollReport {
                polling_ns: s.guest_poll,
                polls: s.guest_polls,
                polls_woken: s.guest_polls_woken,
                wakeups_without_ipi: s.wake_idle_without_ipi,
            }),
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
            ipis_reschedule: s.ipis_reschedule,
            ipis_call_function_single: s.ipis_call_function_single,
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
    /// The host task running vCPU `i` of VM `vm`.
    pub(super) fn vcpu_task(&self, vm: VmId, i: VcpuIdx) -> TaskId {
        self.vms[vm.idx()].tasks.task(i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::kvm::irq_vectors::RESCHEDULE_VECTOR;
    use crate::sched::ids::CpuId;

    fn nested() -> Simulator {
        Simulator::nested_2x2_mutex()
    }

    const OWNER_SPIN: Phase = Phase::Spin {
        wait: Wait::Owner,
        ple: false,
    };

    /// The mutant: an owner spin entered without `note_owner_spin()` is
    /// caught by the invariant check, and the poke would find it once
    /// noted.
    #[test]
    fn an_owner_spinner_missing_from_the_set_is_caught() {
        let mut sim = nested();
        assert_eq!(sim.check_vcpus(), Ok(()));
        sim.vms[0].g[1].phase = OWNER_SPIN;
        assert!(sim.check_vcpus().is_err());
        sim.vms[0].note_owner_spin(VcpuIdx(1));
        assert_eq!(sim.check_vcpus(), Ok(()));
        assert_eq!(sim.vms[0].next_owner_spinner(0), Some(VcpuIdx(1)));
    }

    /// Runs `sim` from its start to `end` as `run_polled()` does (without
    /// its budget, trace and report), calling `after` after each event.
    fn run_events(sim: &mut Simulator, end: Time, mut after: impl FnMut(&mut Simulator)) {
        sim.end = end;
        sim.set_now(Time::ZERO);
        for i in 0..sim.tasks.len() {
            sim.host.sched.wake_up_new_task(TaskId(i as u32));
            sim.serve_resched();
        }
        while let Some((t, ev)) = sim.queue.pop_until(end) {
            sim.set_now(t);
            sim.host.sched.this_cpu = sim.event_cpu(ev);
            sim.dispatch(ev);
            if let Some(cpu) = sim.timer_irq_cpu(ev) {
                while let Some((t2, &ev2)) = sim.queue.peek() {
                    if t2 != t || sim.timer_irq_cpu(ev2) != Some(cpu) {
                        break;
                    }
                    sim.queue.pop();
                    sim.dispatch(ev2);
                }
            }
            sim.serve_resched();
            after(sim);
        }
    }

    /// A guest interrupt that arrives while the host is still switching a
    /// vCPU in (`__schedule()` runs with IRQs off; the switch's cost is
    /// paid before the guest runs) waits in the vCPU's IRR: it is injected
    /// at the VM entry that ends the switch (`switch_end`), not before it
    /// and not lost. The mutants this kills: an interrupt taken at the
    /// poke during the switch (injected early), or one whose poke is
    /// dropped because the vCPU was not in guest mode yet (injected only at
    /// a later exit, or never).
    #[test]
    fn an_interrupt_arriving_during_a_switch_in_is_injected_at_its_end() {
        let mut sim = nested();
        // (VM, vCPU, sent at, the switch's end) of the interrupt in flight.
        let mut sent: Option<(VmId, VcpuIdx, Time, Time)> = None;
        let (mut at_end, mut later, mut early) = (0u32, 0u32, 0u32);
        run_events(&mut sim, Time::ZERO + Nanos(1_000_000_000), |sim| {
            let now = sim.now;
            if let Some((vi, i, at, done)) = sent {
                let pending = sim.vms[vi].g[i]
                    .irqs
                    .iter()
                    .any(|q| q.at == at && q.vector == RESCHEDULE_VECTOR);
                if !pending {
                    match now.cmp(&done) {
                        std::cmp::Ordering::Less => early += 1,
                        std::cmp::Ordering::Equal => at_end += 1,
                        std::cmp::Ordering::Greater => later += 1,
                    }
                    sent = None;
                }
                return;
            }
            // A CPU in the middle of switching into a vCPU whose guest
            // could take an interrupt at entry (not halted, not inside a
            // lock section or handler) and has none pending.
            for c in 0..sim.switch_end.len() {
                let done = sim.switch_end[c];
                let Some(task) = sim.host.sched.rqs[c].curr else {
                    continue;
                };
                if done <= now {
                    continue;
                }
                for v in 0..sim.vms.0.len() {
                    let vi = VmId(v as u32);
                    let Some(i) = (0..sim.vms[vi].n)
                        .map(VcpuIdx)
                        .find(|&i| sim.vms[vi].task(i) == task)
                    else {
                        continue;
                    };
                    let g = &sim.vms[vi].g[i];
                    let takes = g.irqs.is_empty()
                        && matches!(g.phase, Phase::Start | Phase::Model(_))
                        && g.resume.is_none();
                    if !takes {
                        continue;
                    }
                    let from = VcpuIdx((i.0 + 1) % sim.vms[vi].n);
                    sim.deliver(vi, from, i, RESCHEDULE_VECTOR, CpuId(c as u32));
                    sent = Some((vi, i, now, done));
                    return;
                }
            }
        });
        assert_eq!(early, 0, "injected during the switch");
        assert!(at_end >= 20, "at the entry: {at_end}, later: {later}");
        assert!(
            later * 10 <= at_end,
            "at the entry: {at_end}, later: {later}"
        );
    }

    /// `[guest] wakeup_locks`: a waker spinning (or halted in `pv_wait`)
    /// for a wakee's `p->pi_lock` has interrupts off, as 6.12's
    /// `try_to_wake_up()` takes it with `raw_spin_lock_irqsave()`, so an
    /// interrupt for its vCPU is not injected (nor ends the halt) until it
    /// has the lock; one waiting for a futex hash-bucket lock
    /// (`spin_lock()`) takes it. The mutant, every wakeup-path lock waited
    /// for with IRQs on (the model before), fails the first assertion.
    #[test]
    fn a_pi_lock_waiter_takes_no_interrupt_and_a_bucket_lock_waiter_does() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../scenarios/nested/2x2-mutex.toml");
        let mut sc = crate::scenario::Scenario::load(&path).unwrap_or_else(|e| panic!("{e}"));
        sc.pv.wakeup_locks = true;
        let sim = Simulator::new(&sc);
        let vm = &sim.vms[VmId(0)];
        let wl = vm
            .guest
            .as_ref()
            .and_then(|g| g.wakeup)
            .expect("wakeup locks");
        let waiting = |l: usize| Phase::Spin {
            wait: Wait::Lock(l),
            ple: false,
        };
        let halted = |l: usize| Phase::Halted { pv_lock: Some(l) };
        for t in 0..4 {
            assert!(vm.irqs_off_waiting(waiting(wl.pi_lock(t))), "pi_lock {t}");
            assert!(vm.irqs_off_waiting(halted(wl.pi_lock(t))), "pi_lock {t}");
        }
        assert!(!vm.irqs_off_waiting(waiting(wl.futex_hash(0))));
        assert!(!vm.irqs_off_waiting(halted(wl.futex_hash(0))));
    }

    /// A candidate whose phase left the owner spin is dropped by the scan.
    #[test]
    fn a_stale_candidate_is_pruned() {
        let mut sim = nested();
        sim.vms[0].g[0].phase = OWNER_SPIN;
        sim.vms[0].note_owner_spin(VcpuIdx(0));
        sim.vms[0].g[0].phase = Phase::Start;
        assert!(sim.vms[0].may_have_owner_spinners());
        assert_eq!(sim.vms[0].next_owner_spinner(0), None);
        assert!(!sim.vms[0].may_have_owner_spinners());
    }
}
