//! One vCPU burst ending: account it, then run the guest until it asks for
//! CPU time again (`Act::Run`), blocks in KVM (`Act::Sleep`) or yielded
//! (`Act::Switched`): interrupt injection on entry, then the current phase
//! (the guest model's own phases through its interface, `model.rs`).

use super::super::Simulator;
use super::exits::spin_iters;
use super::model::NestedGuest;
use super::osq::OwnerLook;
use super::state::{Cat, GenStage, ModelStage, Phase, Wait};
use super::Act;
use super::VmEv;
use crate::engine::Nanos;
use crate::guest::spinlock::LockStep;
use crate::kvm::irq_vectors::{
    CALL_FUNCTION_SINGLE_VECTOR, CALL_FUNCTION_VECTOR, LOCAL_TIMER_VECTOR,
};
use crate::kvm::vcpu::Cpl;
use crate::kvm::{VcpuIdx, Vector, VmId};
use crate::sched::{CpuId, TaskId};

impl Simulator {
    /// A vCPU task's burst ended (or was cut short, `left` unused).
    pub(in crate::sim) fn vcpu_step(
        &mut self,
        cpu: CpuId,
        p: TaskId,
        vm: VmId,
        idx: VcpuIdx,
        left: Nanos,
    ) {
        let (vi, i) = (vm, idx);
        // Account the burst.
        let mut spun = Nanos::ZERO;
        let mut model_work = None;
        {
            let vm = &mut self.vms[vi];
            let g = &mut vm.g[i];
            let (ex, work) = g.split_burst(left);
            vm.stats.account(g.cat, ex, work);
            // Exit overhead not yet paid when the burst was cut short stays owed.
            g.pending_exit += g.plan_exit - ex;
            match &mut g.phase {
                Phase::Model(ModelStage::Gen(GenStage::Compute { left, .. }))
                | Phase::Hold { left, .. }
                | Phase::Handler { left, .. }
                | Phase::Poll { left, .. } => *left = *left - work,
                Phase::Spin { .. } => spun = work,
                Phase::Model(ModelStage::Nested(_)) => model_work = Some(work),
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
        if let Some(work) = model_work {
            NestedGuest::consumed(self, vm, idx, work);
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
                    Phase::Model(ModelStage::Gen(GenStage::Compute { user: true, .. })) => {
                        Cpl::User
                    }
                    _ => Cpl::Kernel,
                };
                self.host.set_remaining(p, Some(g.plan_exit + work));
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
                        self.push_vm_event(at, VmEv::LapicTimer(p, gen));
                    }
                }
                self.host.set_remaining(p, None);
                let sw = self.host.sched.block_current(cpu);
                self.after_own_switch(cpu, p, sw);
            }
            Act::Switched(sw) => {
                vm.vcpus[i].cpl = Cpl::Kernel;
                self.host.set_remaining(p, None);
                self.after_own_switch(cpu, p, sw);
            }
        }
    }

    /// The guest's next action: inject a pending interrupt, or advance the
    /// current phase, until the vCPU runs a burst, blocks or yielded.
    pub(super) fn vcpu_next(
        &mut self,
        cpu: CpuId,
        vi: VmId,
        i: VcpuIdx,
        left: Nanos,
        spun: Nanos,
    ) -> Act {
        let mut spun = Some(spun);
        loop {
            let vm = &mut self.vms[vi];
            let phase = vm.g[i].phase;
            // Interrupt injection on entry (not inside a critical section or
            // another handler: the model's locks are taken with IRQs off;
            // nor while waiting for a lock taken with spin_lock_irqsave()).
            if !vm.g[i].irqs.is_empty()
                && !matches!(phase, Phase::Hold { .. } | Phase::Handler { .. })
                && !vm.irqs_off_waiting(phase)
            {
                self.inject_irq(vi, i, phase, &mut spun);
                continue;
            }
            let act = match phase {
                // Back to the guest model, or one of its own stages
                // (`model.rs`).
                Phase::Start => {
                    let model = vm.model;
                    model.start(self, vi, i)
                }
                Phase::Model(stage) => stage.step(self, cpu, vi, i),
                Phase::Spin { wait, ple } => {
                    let s = spun.take().unwrap_or(Nanos::ZERO);
                    let spin = SpinAt { wait, ple };
                    self.spin_phase(cpu, vi, i, left, s, spin)
                }
                Phase::Hold { lock, left } => {
                    if left > Nanos::ZERO {
                        return Act::Run(Cat::Useful, left);
                    }
                    self.lock_release(cpu, vi, i, lock)
                }
                Phase::Handler { left, vector } => {
                    if left > Nanos::ZERO {
                        return Act::Run(Cat::Useful, left);
                    }
                    self.handler_end(cpu, vi, i, vector);
                    None
                }
                Phase::Halted { pv_lock } => self.halted_phase(cpu, vi, i, pv_lock),
                Phase::Poll { pv_lock, left } => self.poll_phase(cpu, vi, i, pv_lock, left),
                Phase::IdlePoll { until } => self.idle_poll_phase(cpu, vi, i, until),
                Phase::Done => Some(Act::Sleep(None)),
            };
            if let Some(a) = act {
                return a;
            }
        }
    }

    /// Takes the first pending interrupt of vCPU `i` in `phase`: leaves a
    /// halt (or its polling), keeps an interrupted lock spin's progress
    /// (`spun`), and enters the handler, which returns to `resume`.
    fn inject_irq(&mut self, vi: VmId, i: VcpuIdx, phase: Phase, spun: &mut Option<Nanos>) {
        let now = self.now;
        let me = i;
        let vm = &mut self.vms[vi];
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
                self.cpuidle_hlt_end(vi, i);
                Phase::Start
            }
            Phase::Poll { pv_lock, .. } => Phase::Halted { pv_lock },
            Phase::Spin { wait, .. } => Phase::Spin { wait, ple: false },
            ph => ph,
        };
        // Keep the interrupted spin's progress for its lock.
        if let (
            Some(s),
            Phase::Spin {
                wait: Wait::Lock(l),
                ..
            },
        ) = (*spun, phase)
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
            *spun = None;
        }
        let vm = &mut self.vms[vi];
        if vm.g[i].resume.is_none() {
            vm.g[i].resume = Some(resume);
        }
        let g = &mut vm.g[i];
        let mut left = self.kvm.irq_handler;
        if is_call_function(irq.vector) {
            left += flush_smp_call_function_queue(g);
        }
        g.phase = Phase::Handler {
            left,
            vector: irq.vector,
        };
    }

    /// A spinning vCPU's burst ended: did the wait end (lock granted, calls
    /// done, turn come, owner gone)? Else the PAUSE exit if the burst ended in
    /// one, and the next spin burst. None: look at the phase again.
    fn spin_phase(
        &mut self,
        cpu: CpuId,
        vi: VmId,
        i: VcpuIdx,
        left: Nanos,
        s: Nanos,
        spin: SpinAt,
    ) -> Option<Act> {
        let SpinAt { wait, ple } = spin;
        let now = self.now;
        let me = i;
        let vm = &mut self.vms[vi];
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
                        return None;
                    }
                    LockStep::Halt => {
                        // pv_wait -> kvm_wait -> HLT.
                        vm.stats.halts += 1;
                        vm.g[i].pending_exit += self.kvm.round_trip();
                        // The waiter behind sees this node's state change
                        // at its next pv_wait_early() check.
                        if let Some(n) = vm.locks[l].pv_next_waiter(me) {
                            self.poke(vi, n);
                        }
                        return Some(self.halt(cpu, vi, i, Some(l)));
                    }
                    LockStep::Spin => {}
                }
            }
            Wait::Csd { then } => {
                if vm.g[i].csd_pending == 0 {
                    vm.stats.csd_wait_ns += (now - vm.g[i].csd_since).0;
                    vm.stats.csd_waits += 1;
                    vm.g[i].phase = Phase::Model(then);
                    return None;
                }
            }
            // mutex_spin_on_owner: the lock came free (take it
            // through the program), or the owner left its CPU
            // or was preempted, or need_resched: sleep.
            Wait::Owner if self.pv.osq => match self.guest_owner_spin_look(vi, i) {
                OwnerLook::Spin => {}
                OwnerLook::Take => {
                    self.vms[vi].g[i].phase = Phase::GUEST;
                    return None;
                }
                OwnerLook::Sleep => {
                    self.guest_sleep_on_lock(vi, i);
                    self.vms[vi].g[i].phase = Phase::GUEST;
                    return None;
                }
            },
            Wait::Owner => {
                if self.guest_spun_lock_free(vi, i) {
                    self.vms[vi].g[i].phase = Phase::GUEST;
                    return None;
                }
                if !self.guest_keeps_spinning(vi, i) {
                    self.guest_sleep_on_lock(vi, i);
                    self.vms[vi].g[i].phase = Phase::GUEST;
                    return None;
                }
            }
            Wait::Turn => {
                if vm.turn == i {
                    self.lock_start(vi, i, 0);
                    return None;
                }
                // turn_yield: a guest-directed yield to the holder
                // when steal time says it is preempted (s390's
                // diag 0x9c; x86 KVM_HC_SCHED_YIELD).
                let holder = vm.turn;
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
                        return Some(Act::Switched(sw));
                    }
                }
            }
        }
        if ple && left == Nanos::ZERO {
            self.vms[vi].g[i].phase = Phase::Spin { wait, ple: false };
            self.vms[vi].note_owner_spin(i);
            if let Some(sw) = self.handle_pause(cpu, vi, i) {
                return Some(Act::Switched(sw));
            }
        }
        let (d, ple2) = self.plan_spin(vi, i, wait);
        self.vms[vi].g[i].phase = Phase::Spin { wait, ple: ple2 };
        self.vms[vi].note_owner_spin(i);
        Some(Act::Run(Cat::Spin, d))
    }

    /// An interrupt handler ended: its EOI, the return to the interrupted
    /// phase, the guest timer's work (program guest), and the senders'
    /// `csd_lock_wait` of the synchronous calls it ran (`csd_unlock`).
    fn handler_end(&mut self, cpu: CpuId, vi: VmId, i: VcpuIdx, vector: Vector) {
        let now = self.now;
        let me = i;
        let vm = &mut self.vms[vi];
        // EOI: exits unless APICv virtualizes it.
        if vm.tracker.on_eoi(me, vector, now) {
            vm.stats.eoi_exits += 1;
            vm.g[i].pending_exit += self.kvm.round_trip();
        }
        vm.g[i].phase = vm.g[i].resume.take().unwrap_or(Phase::Start);
        vm.note_owner_spin(i);
        if vector == LOCAL_TIMER_VECTOR {
            let model = vm.model;
            model.timer_interrupt(self, cpu, vi, me);
        }
        if is_call_function(vector) {
            let vm = &mut self.vms[vi];
            let mut ran = std::mem::take(&mut vm.g[i].csd_running);
            for c in ran.iter().filter(|c| c.sync) {
                let s = c.from;
                let g = &mut self.vms[vi].g[s];
                g.csd_pending = g.csd_pending.saturating_sub(1);
                if g.csd_pending == 0 {
                    self.poke(vi, s);
                }
            }
            // Keep the buffer (no allocation per interrupt).
            ran.clear();
            self.vms[vi].g[i].csd_running = ran;
        }
    }

    /// A halted vCPU runs again: the end of `kvm_vcpu_halt`, then back to
    /// work (idle HLT) or to its PV lock (`pv_wait` returned).
    fn halted_phase(
        &mut self,
        cpu: CpuId,
        vi: VmId,
        i: VcpuIdx,
        pv_lock: Option<usize>,
    ) -> Option<Act> {
        let me = i;
        match pv_lock {
            // Woken from an idle HLT (timer or interrupt): work again.
            None => {
                self.halt_done(vi, i);
                self.cpuidle_hlt_end(vi, i);
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
                    LockStep::Halt => return Some(self.halt(cpu, vi, i, Some(l))),
                    LockStep::Acquired => self.lock_acquired(vi, i, l),
                    LockStep::Spin => {
                        vm.g[i].phase = Phase::Spin {
                            wait: Wait::Lock(l),
                            ple: false,
                        }
                    }
                }
            }
        }
        None
    }

    /// Halt polling: `kvm_vcpu_check_block` (timer expired, PV kick), keep
    /// polling while the CPU has nothing else to run, else block.
    fn poll_phase(
        &mut self,
        cpu: CpuId,
        vi: VmId,
        i: VcpuIdx,
        pv_lock: Option<usize>,
        left: Nanos,
    ) -> Option<Act> {
        let now = self.now;
        let vm = &mut self.vms[vi];
        // kvm_vcpu_check_block: the guest timer expired, or a PV
        // kick arrived (interrupts are injected above).
        let woken = match pv_lock {
            None => now >= vm.g[i].wait_start,
            Some(_) => vm.vcpus[i].pv_unhalted,
        };
        if woken {
            vm.vcpus[i].pv_unhalted = false;
            vm.g[i].phase = Phase::Halted { pv_lock };
            return None;
        }
        if left > Nanos::ZERO && self.host.sched.rqs[cpu.idx()].nr_running == 1 {
            // Nothing arrived yet (an arrival pokes): keep polling.
            return Some(Act::Run(Cat::Poll, left));
        }
        let vm = &mut self.vms[vi];
        vm.g[i].phase = Phase::Halted { pv_lock };
        let timer = vm.g[i].wait_start;
        Some(Act::Sleep((pv_lock.is_none()).then_some(timer)))
    }
}

/// Whether `v` is a call-function vector: its handler runs the CPU's
/// `call_single_queue` (`generic_smp_call_function_interrupt` and
/// `generic_smp_call_function_single_interrupt` both flush it).
pub(super) fn is_call_function(v: Vector) -> bool {
    v == CALL_FUNCTION_VECTOR || v == CALL_FUNCTION_SINGLE_VECTOR
}

/// Linux 6.12: `__flush_smp_call_function_queue()` (kernel/smp.c) at the
/// start of a call-function interrupt: `llist_del_all()` takes every call
/// queued on this CPU, however many IPIs were meant to announce them, and
/// the one handler runs them all. Returns the work of their functions.
fn flush_smp_call_function_queue(g: &mut super::state::VGuest) -> Nanos {
    debug_assert!(
        g.csd_running.is_empty(),
        "call-function handlers do not nest"
    );
    std::mem::swap(&mut g.csd_running, &mut g.call_single_queue);
    g.csd_running
        .iter()
        .fold(Nanos::ZERO, |acc, c| acc + c.func)
}

/// The state of a `Phase::Spin` (what it waits for, whether the burst ends
/// in a PAUSE exit).
#[derive(Clone, Copy)]
struct SpinAt {
    wait: Wait,
    ple: bool,
}
