//! Nested guests: a VM whose guest is a thread program (`[[vm]] program`)
//! runs its own instance of the `sched` model, whose CPUs are the vCPUs
//! (docs/workloads.md, "Nested guests").
//!
//! The guest scheduler is the same `Scheduler` as the host's (EEVDF, wakeup
//! placement, load balancing), built for `vcpus` CPUs; its tasks are the
//! program's threads, stepped by `task::program`. The glue here is what the
//! hardware and KVM put between the two levels:
//! * a guest task consumes its CPU burst only inside a vCPU burst, i.e. while
//!   the host runs the vCPU task (`NestedStage::Guest` of `sim::vm`); a host
//!   switch-out pauses it;
//! * an idle guest CPU (`rq->curr == NULL`) executes HLT: the vCPU halts and
//!   blocks in KVM (halt polling as configured);
//! * `resched_curr()` of another guest CPU sends the reschedule IPI
//!   (`native_smp_send_reschedule` -> one unicast ICR write through the
//!   LAPIC model; a halted target is woken by KVM's kick);
//! * guest hrtimers (thread sleeps, and HRTICK when the guest kernel's
//!   `HRTICK` feature is on) fire as LAPIC timer interrupts on the vCPU that
//!   armed them; the guest tick runs `sched_tick()` on the vCPU that takes
//!   it (`[kvm] guest_hz`);
//! * steal time: when a vCPU re-enters after waiting for a host CPU, the
//!   guest's `update_rq_clock_task()` subtracts that wait from the task
//!   clock if the guest uses PV steal time (`[guest.pv] steal_time`).

use super::super::level::{allowed_mask, KernelLevel};
use super::super::{Ev, Simulator};
use super::wakeup::GuestStep;
use super::VmEv;
use crate::engine::{Nanos, Time};
use crate::kvm::irq_vectors::{LOCAL_TIMER_VECTOR, RESCHEDULE_VECTOR};
use crate::kvm::{VcpuIdx, VmId};
use crate::sched::features::KernelPreset;
use crate::sched::{CpuId, SchedConfig, SchedFeatures, TaskId, ROOT_GROUP};
use crate::task::program::{Action, KernelOp, ProgramRt};
use crate::task::Next;
use crate::workload::ir::{MmId, Program, SleepMode};

/// A guest thread: a task of the guest scheduler (its own id space).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct GuestTask(pub(crate) TaskId);

/// What a vCPU does next for its guest CPU's current task.
pub(crate) enum GuestNext {
    /// Run the task's burst for this long.
    Run(Nanos),
    /// Nothing to run: HLT.
    Idle,
    /// The task's syscall takes guest kernel spinlock (index) and holds it
    /// for this long (`syscall` extension).
    KernelLock(usize, Nanos),
    /// A section of the wakeup path (`sim::vm::wakeup`): take guest
    /// spinlock (index) and hold it for this long; not an op.
    WakeLock(usize, Nanos),
    /// The task interrupts these vCPUs to run a handler (`handler` of work
    /// each after the interrupt entry) and, with `wait`, spins in
    /// `csd_lock_wait` until all ran (`smp_call`, munmap's shootdown).
    /// `targets` is the guest's kept `call_buf`: the taker gives it back.
    Call {
        targets: Vec<VcpuIdx>,
        handler: Nanos,
        wait: bool,
    },
    /// The task spins on the owner of the sleeping lock it wants
    /// (`mutex_optimistic_spin` / `rwsem_optimistic_spin`).
    OwnerSpin,
}

/// Guest CPU = vCPU index: the guest CPU vCPU `i` runs.
pub(super) fn gcpu(i: VcpuIdx) -> CpuId {
    CpuId(i.0)
}

/// The vCPU that runs guest CPU `c` (the inverse of [`gcpu`]).
pub(super) fn vcpu_of(c: CpuId) -> VcpuIdx {
    VcpuIdx(c.0)
}

/// The guest kernel of one VM: a kernel level whose CPUs are the vCPUs,
/// and what the VM puts around it.
pub(crate) struct GuestLevel {
    /// The guest kernel: its scheduler and its threads' bursts.
    pub(crate) kernel: KernelLevel,
    pub(super) prog: ProgramRt,
    pub(super) exited: Vec<bool>,
    /// Generation of each thread's pending hrtimer.
    timer_gen: Vec<u64>,
    /// Expired hrtimers of each vCPU, waiting for its timer interrupt.
    expired: Vec<Vec<GuestTask>>,
    /// The guest task the current burst of each vCPU runs.
    pub(crate) running: Vec<Option<GuestTask>>,
    /// A guest tick is pending in vCPU i's LAPIC timer interrupt.
    pub(crate) tick_due: Vec<bool>,
    /// An HRTICK expiry (of the level's armed timer) is pending in vCPU
    /// i's LAPIC timer interrupt.
    hrtick_due: Vec<bool>,
    /// The host vCPU task's `wait_ns` at its last sched-in (steal baseline).
    steal_seen: Vec<u64>,
    pub(crate) steal_ns: u64,
    pub(crate) resched_ipis: u64,
    /// The program has kernel sleeping locks (their spinners need pokes).
    pub(crate) has_sleeping_locks: bool,
    /// The OSQ of each kernel sleeping lock (`guest::osq`; `[guest] osq`).
    pub(crate) osq: Vec<crate::guest::osq::Osq>,
    /// Per guest CPU, its OSQ nodes (`osq_node`): how many OSQs hold a
    /// node of the CPU and, when that is one, which (`guest_osq_waiting()`
    /// reads the one queue instead of every lock's).
    pub(crate) osq_node: Vec<(u32, usize)>,
    /// Where the wakeup-path locks are (`[guest] wakeup_locks`; None: off).
    pub(crate) wakeup: Option<crate::guest::wakeup::WakeupLocks>,
    /// Each vCPU's wakeup path in progress (`sim::vm::wakeup`).
    pub(crate) wake_path: Vec<Option<super::wakeup::WakePath>>,
    /// The futex words of the last step (kept buffer).
    pub(crate) futex_buf: Vec<usize>,
    /// The section queue of the last finished wakeup path, kept for the
    /// next one (no allocation per path).
    pub(crate) wake_sections_buf: super::wakeup::Sections,
    /// TLB shootdown targets left out because preempted (PV TLB flush:
    /// they flush on their next entry).
    pub(crate) tlb_flush_deferred: u64,
    /// `flush_tlb_multi` calls: flushes whose mm's cpumask held another
    /// CPU (the recorder's TLB_REMOTE_SEND_IPI), IPIs sent or not.
    pub(crate) tlb_shootdowns: u64,
    /// Per guest CPU, the mm it has loaded (`cpu_tlbstate.loaded_mm`): the
    /// mm of the last thread it ran, kept while idle (lazy TLB); None:
    /// none yet (`init_mm`), or an exited process's whose copy was forked
    /// again (a new mm under the same [`MmId`]).
    pub(crate) loaded_mm: Vec<Option<MmId>>,
    /// The programs' `mm_cpumask`s (`guest::tlb`; state only in the lazy
    /// form of `[guest] lazy_mm_cpumask`).
    pub(crate) mm_cpumasks: crate::guest::tlb::MmCpumasks,
    /// Scratch: each CPU as a flush reads it (`guest::tlb::CpuTlb`).
    tlb_cpus: Vec<crate::guest::tlb::CpuTlb>,
    /// Buffers kept between steps (the threads a program step wakes, the
    /// guest CPUs to send a reschedule IPI), so the hot path allocates
    /// nothing.
    pub(super) wake_buf: Vec<usize>,
    /// Scratch for the children a step forked (`ProgramRt::take_forks`).
    pub(super) fork_buf: Vec<usize>,
    resched_buf: Vec<VcpuIdx>,
    /// The targets of the last cross-CPU call (`GuestNext::Call`), given
    /// back by its taker.
    pub(super) call_buf: Vec<VcpuIdx>,
}

impl GuestLevel {
    /// The program the guest's threads run.
    pub(crate) fn program(&self) -> &ProgramRt {
        &self.prog
    }

    /// The guest kernel: the host's preset and features on `vcpus` CPUs,
    /// ticking at `hz`; one guest task per program thread, created and woken
    /// at time 0 (`wake_up_new_task`) as the host does with its tasks (the
    /// vCPUs have not run yet: the first entry runs whatever is current).
    pub(crate) fn new(
        prog: &Program,
        vcpus: u32,
        hz: u32,
        preset: KernelPreset,
        features: SchedFeatures,
    ) -> GuestLevel {
        let mut kernel = KernelLevel::new(SchedConfig {
            nr_cpus: vcpus,
            hz,
            features,
            preset,
            // The guest's wake path is the KVM model's (reschedule IPIs,
            // timer interrupts); guest switch costs are not charged yet.
            costs: crate::sched::costs::HostCosts::ZERO,
        });
        let n = vcpus as usize;
        for t in &prog.threads {
            let allowed = allowed_mask(n, t.cpus.as_deref());
            kernel.spawn(&t.name, ROOT_GROUP, t.nice, allowed, None);
        }
        kernel.set_now(Time::ZERO);
        // As the host starts its tasks: each new task is woken and the CPU
        // it preempts reschedules before the next one is created.
        for k in 0..prog.threads.len() {
            // A forked child process starts when its parent forks it.
            if prog.threads[k].parent.is_some() {
                continue;
            }
            kernel.sched.wake_up_new_task(TaskId(k as u32));
            while let Some(c) = kernel.next_resched() {
                let _ = kernel.sched.schedule(c);
            }
        }
        // HRTICK requests made here are armed on the first guest step
        // (`guest_send_resched`), the vCPUs not having run yet.
        let nt = prog.threads.len();
        GuestLevel {
            kernel,
            prog: ProgramRt::new(prog.clone()),
            exited: prog.threads.iter().map(|t| t.parent.is_some()).collect(),
            timer_gen: vec![0; nt],
            expired: vec![Vec::new(); n],
            running: vec![None; n],
            tick_due: vec![false; n],
            hrtick_due: vec![false; n],
            steal_seen: vec![0; n],
            steal_ns: 0,
            resched_ipis: 0,
            has_sleeping_locks: prog
                .threads
                .iter()
                .flat_map(|t| &t.phases)
                .flat_map(|p| &p.events)
                .any(|e| matches!(e, crate::workload::ir::Event::SleepingLock { .. })),
            osq: vec![crate::guest::osq::Osq::new(); prog.klocks.len()],
            osq_node: vec![(0, 0); n],
            wakeup: None,
            wake_path: vec![None; n],
            futex_buf: Vec::new(),
            wake_sections_buf: Default::default(),
            tlb_flush_deferred: 0,
            tlb_shootdowns: 0,
            loaded_mm: vec![None; n],
            mm_cpumasks: crate::guest::tlb::MmCpumasks::new(false, 0, n),
            tlb_cpus: Vec::with_capacity(n),
            wake_buf: Vec::new(),
            fork_buf: Vec::new(),
            resched_buf: Vec::new(),
            call_buf: Vec::new(),
        }
    }

    /// Guest work consumed by vCPU `i`'s last burst.
    pub(crate) fn consumed(&mut self, i: VcpuIdx, work: Nanos) {
        if let Some(t) = self.running[i.idx()].take() {
            self.kernel.consume(t.0, work);
        }
    }
}

impl Simulator {
    fn guest(&mut self, vi: VmId) -> &mut GuestLevel {
        let now = self.now;
        let g = self.vms[vi].guest.as_mut().expect("a program VM");
        g.kernel.set_now(now);
        g
    }

    /// vCPU `i` of a program VM is in the guest with nothing else to do:
    /// run the guest scheduler's current task (stepping its program), or
    /// HLT when the guest CPU is idle. Returns the work to run, or None for
    /// a halt.
    pub(crate) fn guest_run(&mut self, cpu: CpuId, vi: VmId, i: VcpuIdx) -> GuestNext {
        let before = self.guest(vi).kernel.sched.rqs[i.idx()].curr;
        let next = self.guest_run_inner(cpu, vi, i);
        let g = self.guest(vi);
        // A sleeping lock was released, or a task left this guest CPU (an
        // owner's `on_cpu` went false): optimistic spinners look again.
        if g.has_sleeping_locks
            && (g.prog.take_released() || g.kernel.sched.rqs[i.idx()].curr != before)
        {
            self.poke_owner_spinners(vi);
        }
        next
    }

    /// `owner_on_cpu(owner)` (include/linux/sched.h, 6.12): the owner is
    /// current on a guest CPU whose vCPU `vcpu_is_preempted()` does not
    /// report preempted. That is KVM's steal-time `preempted` flag with PV
    /// steal time, and always false without it (the guest cannot tell).
    pub(crate) fn guest_owner_on_cpu(&self, vi: VmId, owner: usize) -> bool {
        let vm = &self.vms[vi];
        let g = vm.guest.as_ref().expect("a program VM");
        let c = vcpu_of(g.kernel.sched.tasks[owner].cpu);
        g.kernel.sched.rqs[c.idx()].curr == Some(TaskId(owner as u32))
            && !self.guest_vcpu_is_preempted(vi, c)
    }

    /// Whether guest CPU `i`'s current task keeps spinning on the owner of
    /// the sleeping lock it wants (`mutex_spin_on_owner`'s loop condition:
    /// the owner is on a CPU and this CPU needs no reschedule).
    pub(crate) fn guest_keeps_spinning(&self, vi: VmId, i: VcpuIdx) -> bool {
        let g = self.vms[vi].guest.as_ref().expect("a program VM");
        let Some(t) = g.kernel.sched.rqs[i.idx()].curr else {
            return false;
        };
        !g.kernel.sched.rqs[i.idx()].need_resched
            && g.prog
                .sleeping_lock_owner(t.idx())
                .is_some_and(|o| o != t.idx() && self.guest_owner_on_cpu(vi, o))
    }

    /// Whether the sleeping lock guest CPU `i`'s current task spins for is
    /// free now (the spinner then steps and takes it).
    pub(crate) fn guest_spun_lock_free(&self, vi: VmId, i: VcpuIdx) -> bool {
        let g = self.vms[vi].guest.as_ref().expect("a program VM");
        g.kernel.sched.rqs[i.idx()]
            .curr
            .is_some_and(|t| g.prog.sleeping_lock_free(t.idx()))
    }

    /// The spinner gives up (owner off CPU or preempted, or need_resched):
    /// the slow path queues it on the wait list and it sleeps.
    pub(crate) fn guest_sleep_on_lock(&mut self, vi: VmId, i: VcpuIdx) {
        let g = self.guest(vi);
        if let Some(t) = g.kernel.sched.rqs[i.idx()].curr {
            if g.prog.sleeping_lock_wait(t.idx()) {
                let _ = g.kernel.sched.block_current(gcpu(i));
            }
        }
    }

    fn guest_run_inner(&mut self, cpu: CpuId, vi: VmId, i: VcpuIdx) -> GuestNext {
        let now = self.now;
        let osq = self.pv.osq;
        loop {
            let g = self.guest(vi);
            let rq = &g.kernel.sched.rqs[i.idx()];
            // (Not inside a wakeup path: it runs with preemption off.)
            if (rq.need_resched || (rq.curr.is_none() && rq.nr_running > 0))
                && g.wake_path[i.idx()].is_none()
            {
                let _ = g.kernel.sched.schedule(gcpu(i));
            }
            self.guest_send_resched(cpu, vi, i);
            let g = self.guest(vi);
            // An idle guest CPU: the caller halts the vCPU.
            let Some(t) = g.kernel.sched.rqs[i.idx()].curr else {
                return GuestNext::Idle;
            };
            let t = GuestTask(t);
            // switch_mm_irqs_off(): the CPU runs (so has loaded) the
            // thread's mm; it keeps it while idle (lazy TLB).
            let mm = g.prog.program().mm_of(t.0.idx());
            g.loaded_mm[i.idx()] = Some(mm);
            g.mm_cpumasks.switch_mm(i, mm);
            match g.kernel.remaining(t.0) {
                Some(d) if d > Nanos::ZERO => {
                    g.running[i.idx()] = Some(t);
                    return GuestNext::Run(d);
                }
                _ => {}
            }
            g.kernel.set_remaining(t.0, None);
            if g.exited[t.0.idx()] {
                // An exited thread that is still current: leave the CPU.
                let _ = g.kernel.sched.block_current(gcpu(i));
                continue;
            }
            let action = match self.guest_step(vi, i, t.0) {
                GuestStep::Lock(l, hold) => return GuestNext::WakeLock(l, hold),
                GuestStep::Act(a) => a,
            };
            let g = self.guest(vi);
            let mut dead = None;
            // What the level does with the step (guest switches are read
            // from the runqueue on the next pass, so they are dropped here).
            let next = match action {
                Action::Run(d) => Next::Run(d),
                Action::Sleep(timer) => {
                    g.timer_gen[t.0.idx()] += 1;
                    if let Some(at) = timer {
                        let gen = g.timer_gen[t.0.idx()];
                        let at = at.max(now);
                        if at <= self.end {
                            self.push_vm_event(at, VmEv::ThreadHrtimer(vi, t.0 .0, gen));
                        }
                    }
                    Next::Sleep(timer)
                }
                Action::Yield => Next::Yield(Nanos::ZERO),
                Action::Exit => {
                    g.exited[t.0.idx()] = true;
                    if g.prog.is_forked(t.0.idx()) {
                        dead = Some(t.0);
                    }
                    Next::Sleep(None)
                }
                // The thread stays current with preemption off (a
                // spinlock) while the vCPU takes, holds and drops the lock.
                Action::KernelLock { lock, hold } => {
                    return GuestNext::KernelLock(lock.idx(), hold);
                }
                // smp_call_function_single/many: the next `targets` other
                // CPUs in order (a fixed choice; the IR names no CPUs).
                Action::Kernel(KernelOp::SmpCall {
                    targets,
                    handler,
                    wait,
                }) => {
                    let n = g.kernel.sched.rqs.len();
                    let k = (targets as usize).min(n - 1);
                    if k > 0 {
                        let mut targets = std::mem::take(&mut g.call_buf);
                        targets.clear();
                        targets.extend((1..=k).map(|d| VcpuIdx(((i.idx() + d) % n) as u32)));
                        return GuestNext::Call {
                            targets,
                            handler,
                            wait,
                        };
                    }
                    continue;
                }
                Action::Kernel(KernelOp::TlbShootdown { freed_tables, .. }) => {
                    if let Some(next) = self.guest_tlb_shootdown(vi, i, freed_tables) {
                        return next;
                    }
                    continue;
                }
                // mutex_optimistic_spin / rwsem_optimistic_spin: a mutex or
                // writer spins while the owner (a task) is on a CPU; readers
                // and waiters of a reader-owned rwsem go to sleep (6.12
                // readers do not spin; its time-bounded writer spin on
                // readers is not modelled).
                Action::Kernel(KernelOp::SleepingLockBusy { lock, mode, owner }) if osq => {
                    if self.guest_optimistic_spin(vi, i, t.0.idx(), lock, mode, owner) {
                        return GuestNext::OwnerSpin;
                    }
                    self.guest_sleep_on_lock(vi, i);
                    continue;
                }
                Action::Kernel(KernelOp::SleepingLockBusy { mode, owner, .. }) => {
                    let spin = mode != SleepMode::Read
                        && !g.kernel.sched.rqs[i.idx()].need_resched
                        && owner.is_some_and(|o| o != t.0.idx())
                        && self.guest_owner_on_cpu(vi, owner.unwrap_or(0));
                    if spin {
                        return GuestNext::OwnerSpin;
                    }
                    self.guest_sleep_on_lock(vi, i);
                    continue;
                }
            };
            let g = self.guest(vi);
            let _ = g.kernel.task_next(gcpu(i), t.0, next);
            if let Some(d) = dead {
                g.kernel.sched.task_dead_fair(d);
            }
        }
    }

    /// `flush_tlb_mm_range` -> `flush_tlb_multi` from vCPU `i` (6.12.117,
    /// arch/x86/mm/tlb.c; with `[guest] lazy_mm_cpumask` the lazy
    /// `mm_cpumask` of 6.14 and later) for the mm of its current thread
    /// (the thread's process: [`Program::mm_of`]): the targets are those of
    /// `guest::tlb::MmCpumasks::flush_tlb_multi` (the mask, then
    /// `should_flush_tlb()`, every CPU of the mask when the flush freed
    /// page tables). A CPU is lazy when idle with a user mm loaded. With
    /// PV TLB flush (`kvm_flush_tlb_multi`, needs steal time) preempted
    /// vCPUs are dropped and flush on their next entry. A remote flush is
    /// counted (the recorder's TLB_REMOTE_SEND_IPI). None: nobody to
    /// interrupt.
    fn guest_tlb_shootdown(
        &mut self,
        vi: VmId,
        i: VcpuIdx,
        freed_tables: bool,
    ) -> Option<GuestNext> {
        let pv = self.pv.tlb_flush && self.pv.steal_time;
        let now = self.now;
        let vm = &mut self.vms[vi];
        let g = vm.guest.as_mut().expect("a program VM");
        let prog = g.prog.program();
        let rqs = &g.kernel.sched.rqs;
        // (The flushing thread is current: a step's op.)
        let mm = prog.mm_of(rqs[i.idx()].curr?.idx());
        let mut cpus = std::mem::take(&mut g.tlb_cpus);
        cpus.clear();
        cpus.extend(VcpuIdx::all(rqs.len() as u32).map(|t| {
            let curr = rqs[t.idx()].curr;
            crate::guest::tlb::CpuTlb {
                loaded: curr.map_or(g.loaded_mm[t.idx()], |u| Some(prog.mm_of(u.idx()))),
                is_lazy: curr.is_none() && g.loaded_mm[t.idx()].is_some(),
                pv_dropped: pv && vm.vcpus[t].preempted,
            }
        }));
        let mut targets = std::mem::take(&mut g.call_buf);
        targets.clear();
        let f = g
            .mm_cpumasks
            .flush_tlb_multi(mm, i, now, freed_tables, &mut cpus, &mut targets);
        // A lazy target's handler switched it to init_mm.
        for &t in &targets {
            if rqs[t.idx()].curr.is_none() {
                g.loaded_mm[t.idx()] = cpus[t.idx()].loaded;
            }
        }
        g.tlb_cpus = cpus;
        g.tlb_flush_deferred += u64::from(f.deferred);
        g.tlb_shootdowns += u64::from(f.remote);
        if targets.is_empty() {
            g.call_buf = targets;
            return None;
        }
        Some(GuestNext::Call {
            targets,
            handler: Nanos::ZERO,
            wait: true,
        })
    }

    /// Pokes every vCPU of VM `vi` spinning on a sleeping lock's owner so it
    /// looks at the lock and the owner again.
    /// Most calls (every runnable switch-out of a vCPU) find no candidate:
    /// that test is inlined into the callers.
    #[inline]
    pub(crate) fn poke_owner_spinners(&mut self, vi: VmId) {
        if self.vms[vi].may_have_owner_spinners() {
            self.poke_owner_spinners_from(vi);
        }
    }

    /// [`Self::poke_owner_spinners`] once some vCPU may spin on an owner.
    #[inline(never)]
    fn poke_owner_spinners_from(&mut self, vi: VmId) {
        let mut from = 0;
        while let Some(j) = self.vms[vi].next_owner_spinner(from) {
            if !(self.pv.osq && self.guest_osq_waiting(vi, j)) {
                self.poke(vi, j);
            }
            from = j.idx() + 1;
        }
    }

    /// IPIs from vCPU `from` to every other guest CPU that `resched_curr()`
    /// marked: a reschedule IPI (`smp_send_reschedule`), or for a wakeup
    /// that 6.12 queues on the idle CPU's wakelist the call-function-single
    /// IPI of `ttwu_queue_wakelist()` (counted as such, sched::ipis; it is
    /// delivered as the reschedule IPI is: the guest's `remote_wakeup` cost
    /// is zero, so the task was activated at the wakeup, and the handler's
    /// work is the same reschedule of the idle CPU).
    #[inline]
    fn guest_send_resched(&mut self, cpu: CpuId, vi: VmId, from: VcpuIdx) {
        let g = self.guest(vi);
        if !g.kernel.sched.hrtick_requests.is_empty() {
            self.guest_hrtick_start(vi);
        }
        let g = self.guest(vi);
        // Most steps (1.5 calls per event in dedup) mark no CPU: leave
        // here, inlined into the caller, before any call.
        if let Some(first) = g.kernel.sched.take_resched() {
            self.guest_send_resched_to(cpu, vi, from, first);
        }
    }

    /// [`Self::guest_send_resched`] once a CPU (`first`) was marked.
    fn guest_send_resched_to(&mut self, cpu: CpuId, vi: VmId, from: VcpuIdx, first: CpuId) {
        let g = self.guest(vi);
        let mut targets = std::mem::take(&mut g.resched_buf);
        targets.clear();
        let marked = g.kernel.sched.rqs[first.idx()].need_resched;
        let mut c = marked.then_some(first).or_else(|| g.kernel.next_resched());
        while let Some(cpu) = c {
            if cpu != gcpu(from) {
                targets.push(vcpu_of(cpu));
            } else {
                g.kernel.sched.take_wakelist_ipi(cpu);
            }
            c = g.kernel.next_resched();
        }
        if targets.is_empty() {
            g.resched_buf = targets;
            return;
        }
        let running = self.vcpus_running_if(self.kvm.avic, vi);
        for &t in &targets {
            let wakelist = self.guest(vi).kernel.sched.take_wakelist_ipi(gcpu(t));
            // set_nr_and_not_polling (set_nr_if_polling for a wakelisted
            // wakeup): a polling idle CPU notices TIF_NEED_RESCHED itself
            // (sim::vm::idle), no IPI.
            if self.guest_cpu_polling(vi, t) {
                self.vms[vi].stats.wake_idle_without_ipi += 1;
                self.poke(vi, t);
                continue;
            }
            let vm = &mut self.vms[vi];
            if vm.g[t].irqs.iter().any(|q| q.vector == RESCHEDULE_VECTOR) {
                continue;
            }
            vm.stats.ipis_sent += 1;
            if wakelist {
                vm.stats.ipis_call_function_single += 1;
            } else {
                vm.stats.ipis_reschedule += 1;
            }
            vm.guest.as_mut().expect("program VM").resched_ipis += 1;
            self.send_unicast_ipi(vi, from, t, RESCHEDULE_VECTOR, &running, cpu);
        }
        self.vms[vi].guest.as_mut().expect("program VM").resched_buf = targets;
    }

    /// Arms the HRTICK timers the guest scheduler asked for
    /// (`hrtick_start()` of the guest level: a guest hrtimer on that CPU's
    /// LAPIC timer).
    #[inline(never)]
    fn guest_hrtick_start(&mut self, vi: VmId) {
        let (now, end) = (self.now, self.end);
        let g = self.vms[vi].guest.as_mut().expect("a program VM");
        let queue = &mut self.queue;
        g.kernel.hrtick_start(now, end, |c, at, gen| {
            queue.push(at, Ev::Vm(VmEv::Hrtick(vi, vcpu_of(c), gen)));
        });
    }

    /// A guest CPU's HRTICK timer expired: the LAPIC timer interrupt of its
    /// vCPU runs `hrtick()` (a superseded timer is stale).
    pub(crate) fn guest_hrtick(&mut self, vm: VmId, idx: VcpuIdx, gen: u64) {
        let (vi, i) = (vm, idx);
        let g = self.guest(vi);
        if !g.kernel.hrtick_armed(gcpu(i), gen) {
            self.stale += 1;
            return;
        }
        g.hrtick_due[i.idx()] = true;
        let host_cpu = self.host.sched.tasks[self.vms[vi].task(i).idx()].cpu;
        self.deliver(vi, i, i, LOCAL_TIMER_VECTOR, host_cpu);
    }

    /// A guest thread's hrtimer expired: the LAPIC timer interrupt of the
    /// vCPU that armed it (the CPU the thread slept on) runs the wakeup.
    pub(crate) fn guest_hrtimer(&mut self, vm: VmId, t: u32, gen: u64) {
        let vi = vm;
        if self.guest(vi).timer_gen[t as usize] != gen {
            self.stale += 1;
            return;
        }
        let g = self.guest(vi);
        let v = vcpu_of(g.kernel.sched.tasks[t as usize].cpu);
        g.expired[v.idx()].push(GuestTask(TaskId(t)));
        let host_cpu = self.host.sched.tasks[self.vms[vi].task(v).idx()].cpu;
        self.deliver(vi, v, v, LOCAL_TIMER_VECTOR, host_cpu);
    }

    /// The guest's LAPIC timer handler on vCPU `i` (`hrtimer_interrupt`):
    /// expired hrtimers wake their threads; a due tick runs `sched_tick()`.
    pub(crate) fn guest_timer_interrupt(&mut self, cpu: CpuId, vi: VmId, i: VcpuIdx) {
        let g = self.guest(vi);
        let tick = std::mem::take(&mut g.tick_due[i.idx()]);
        let hrtick = std::mem::take(&mut g.hrtick_due[i.idx()]);
        // In place: the buffer is kept for the next expiries (nothing
        // here queues one: that is `guest_hrtimer`, an event of its own).
        for k in 0..g.expired[i.idx()].len() {
            let t = g.expired[i.idx()][k];
            g.kernel.sched.try_to_wake_up(t.0, 0, Some(gcpu(i)));
        }
        g.expired[i.idx()].clear();
        if hrtick {
            g.kernel.sched.hrtick(gcpu(i));
        }
        if tick {
            g.kernel.sched.sched_tick(gcpu(i));
        }
        self.guest_send_resched(cpu, vi, i);
    }

    /// Steal time on VM entry: the host task's run delay since its last
    /// entry is what KVM's `record_steal_time()` publishes; with PV steal
    /// time the guest subtracts it from its task clock.
    pub(crate) fn guest_vcpu_entry(&mut self, vi: VmId, i: VcpuIdx, task: TaskId) {
        let waited = self.host.sched.tasks[task.idx()].stats.wait_ns;
        let steal_on = self.pv.steal_time;
        let g = self.guest(vi);
        let steal = waited - g.steal_seen[i.idx()];
        g.steal_seen[i.idx()] = waited;
        if steal > 0 {
            g.steal_ns += steal;
            if steal_on {
                g.kernel.sched.account_steal_time(gcpu(i), steal);
            }
        }
    }

    /// Closes the guests' accounting at the end of a run.
    pub(crate) fn guest_sync(&mut self) {
        for vi in self.vms.ids() {
            if self.vms[vi].guest.is_some() {
                self.guest(vi).kernel.sched.sync_accounting();
            }
        }
    }

    /// Per-thread results of VM `vi`'s guest (empty without a program).
    pub(crate) fn guest_threads(&self, vi: VmId) -> Vec<crate::report::GuestThreadReport> {
        let Some(g) = &self.vms[vi].guest else {
            return Vec::new();
        };
        let prog = g.prog.program();
        prog.threads
            .iter()
            .enumerate()
            .map(|(k, th)| {
                let t = &g.kernel.sched.tasks[k];
                let s = g.prog.stats(k);
                crate::report::GuestThreadReport {
                    name: th.name.clone(),
                    cpu_ns: g.kernel.sched.ses[t.se.idx()].sum_exec_runtime,
                    wait_ns: t.stats.wait_ns,
                    nr_switches: t.stats.nr_switches,
                    nr_migrations: t.stats.nr_migrations,
                    wakeup_latency_ns: crate::report::Percentiles::of(
                        &mut t.stats.wakeup_latency.clone(),
                    ),
                    phase_loops: s.phase_loops,
                    finished_ns: s.finished_at.map(|f: Time| f.0),
                    lock_waits: s.lock_waits,
                    lock_wait_ns: s.lock_wait_ns,
                    sleeping_lock_waits: s.sleeping_lock_waits,
                    sleeping_lock_wait_ns: s.sleeping_lock_wait_ns,
                    loop_ns: s.loop_ns.clone(),
                }
            })
            .collect()
    }
}
