//! Interrupts in a VM: the guest tick, the ICR writes of the guest's IPI
//! senders (`smp_call_function_many_cond` and the reschedule IPI) through
//! the LAPIC model, and their delivery to the target vCPU
//! (`__apic_accept_irq` + `kvm_vcpu_kick`).

use super::super::Simulator;
use super::state::{CallSingleData, Irq, Phase, VGuest};
use super::VmEv;
use super::VmRt;
use crate::engine::{Nanos, SimRng, Time};
use crate::kvm::irq_vectors::{
    CALL_FUNCTION_SINGLE_VECTOR, CALL_FUNCTION_VECTOR, LOCAL_TIMER_VECTOR,
};
use crate::kvm::lapic::{DeliveryMode, IcrWrite, LapicIrq, Shorthand};
use crate::kvm::{VcpuIdx, Vector, VmId};
use crate::sched::core::Switch;
use crate::sched::CpuId;

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
pub(super) fn draw_idle_vcpu(g: &[VGuest], me: VcpuIdx, rng: &mut SimRng) -> Option<VcpuIdx> {
    let me = me.idx();
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
        return Some(VcpuIdx(m.trailing_zeros()));
    }
    let is_idle = |&(t, gt): &(usize, &VGuest)| t != me && idle_halted(gt);
    let n = g.iter().enumerate().filter(is_idle).count();
    if n == 0 {
        return None;
    }
    let k = rng.below(n as u64) as usize;
    g.iter()
        .enumerate()
        .filter(is_idle)
        .nth(k)
        .map(|(t, _)| VcpuIdx(t as u32))
}

impl VmRt {
    /// An ICR write by `me`: the series' tracker sees it, and with the IPI
    /// hint a unicast fixed-mode IPI that exited is recorded on the sender.
    /// An APIC-write exit costs the sender `exit` (charged at its next
    /// entry); exits and tracked pairs are counted in the VM's stats.
    pub(super) fn icr_write(
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
            self.g[me].pending_exit += exit;
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

    /// Linux 6.12: `__smp_call_single_queue()` / the `llist_add()` of
    /// `smp_call_function_many_cond()` (kernel/smp.c): queue a call from
    /// vCPU `from` on guest CPU `t`'s `call_single_queue`; true when the
    /// queue was empty, i.e. `t` must be sent the IPI (otherwise an IPI is
    /// already pending or its handler has not yet taken the queue).
    pub(super) fn smp_call_single_queue(
        &mut self,
        t: VcpuIdx,
        from: VcpuIdx,
        sync: bool,
        func: Nanos,
    ) -> bool {
        let q = &mut self.g[t].call_single_queue;
        let was_empty = q.is_empty();
        q.push(CallSingleData { from, sync, func });
        was_empty
    }

    /// Does vCPU `r` still owe `vector` (in its IRR/PIR, i.e. queued and not
    /// yet taken, or in its ISR, i.e. the handler runs)?
    pub(super) fn owes(&self, r: VcpuIdx, vector: Vector) -> bool {
        let g = &self.g[r];
        g.irqs.iter().any(|q| q.vector == vector)
            || matches!(g.phase, Phase::Handler { vector: v, .. } if v == vector)
    }
}

impl Simulator {
    /// Arms the guest tick of every vCPU of VM `vi` (spread over one period).
    pub(in crate::sim) fn arm_guest_ticks(&mut self, vm: VmId) {
        let vi = vm;
        let hz = u64::from(self.kvm.guest_hz);
        if hz == 0 {
            return;
        }
        let period = 1_000_000_000 / hz;
        let n = u64::from(self.vms[vi].n);
        for k in 0..n {
            let at = Time(period + period * k / n);
            self.push_vm_event(at, VmEv::Tick(vm, VcpuIdx(k as u32)));
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
    pub(in crate::sim) fn guest_tick(&mut self, vm: VmId, idx: VcpuIdx) {
        let (vi, i) = (vm, idx);
        let now = self.now;
        let period = Nanos(1_000_000_000 / u64::from(self.kvm.guest_hz));
        self.push_vm_event(now + period, VmEv::Tick(vm, idx));
        let exit = self.kvm.round_trip();
        let task = self.vms[vi].task(i);
        let vm_id = vm;
        let vm = &mut self.vms[vi];
        let idle = matches!(
            vm.g[i].phase,
            Phase::Done | Phase::Halted { .. } | Phase::Poll { .. }
        );
        if idle || vm.vcpus[i].blocking || !self.tasks[task.idx()].started {
            return;
        }
        let model = vm.model;
        model.tick_due(self, vm_id, idx);
        let vm = &mut self.vms[vi];
        if vm.g[i].irqs.iter().any(|q| q.vector == LOCAL_TIMER_VECTOR) {
            return;
        }
        vm.g[i].irqs.push_back(Irq {
            at: now,
            vector: LOCAL_TIMER_VECTOR,
            from: i,
        });
        vm.stats.guest_ticks += 1;
        if self.vcpu_in_guest_mode(task) {
            self.vms[vi].g[i].pending_exit += exit;
            self.poke(vi, i);
        } else {
            self.vms[vi].vcpus[i].pending_request = true;
        }
    }

    /// A unicast fixed-mode IPI from `from` to `to`: the ICR write
    /// ([`VmRt::icr_write`]: `kvm_apic_send_ipi`'s exit, the tracker and the
    /// IPI hint, with the vCPUs `running` as AVIC sees them), its trace line
    /// and the delivery to each destination.
    pub(super) fn send_unicast_ipi(
        &mut self,
        vi: VmId,
        from: VcpuIdx,
        to: VcpuIdx,
        vector: Vector,
        running: &[bool],
        cpu: CpuId,
    ) {
        let (now, exit) = (self.now, self.kvm.round_trip());
        let w = self.vms[vi].icr_write(from, &LapicIrq::unicast(to, vector), now, running, exit);
        self.trace_icr(cpu, vi, from, to, vector.0, w.tracked);
        for tg in w.targets {
            self.deliver(vi, from, tg, vector, cpu);
        }
    }

    /// Interrupt delivery to vCPU `t` (`__apic_accept_irq` + `kvm_vcpu_kick`).
    /// A call-function vector's calls are on `t`'s `call_single_queue`
    /// already (`smp_call_single_queue`).
    pub(super) fn deliver(
        &mut self,
        vi: VmId,
        from: VcpuIdx,
        t: VcpuIdx,
        vector: Vector,
        cpu: CpuId,
    ) {
        let now = self.now;
        let apicv = self.kvm.apicv;
        let avic = self.kvm.avic;
        let exit = self.kvm.round_trip();
        let task = self.vms[vi].task(t);
        let vm = &mut self.vms[vi];
        vm.g[t].irqs.push_back(Irq {
            at: now,
            vector,
            from,
        });
        if vm.vcpus[t].blocking {
            // kvm_vcpu_kick -> kvm_vcpu_wake_up -> rcuwait_wake_up. A vCPU
            // halted in pv_wait with IRQs off (halt(), IF=0) stays blocked:
            // kvm_vcpu_has_events() ignores an interrupt it cannot take
            // (the thread's spurious wakeup and re-block is not modelled).
            vm.vcpus[t].pending_request = true;
            let phase = vm.g[t].phase;
            if !vm.irqs_off_waiting(phase) {
                self.wake_vcpu(vi, t, Some(cpu));
            }
            return;
        }
        let running = self.vcpu_in_guest_mode(task);
        let vm = &mut self.vms[vi];
        if running {
            // In guest mode: a posted interrupt (APICv) needs no exit; without
            // it the kick IPI forces an exit and the injection on re-entry.
            if !apicv {
                vm.g[t].pending_exit += exit;
            }
            self.poke(vi, t);
        } else if avic {
            // svm_complete_interrupt_delivery (svm.c, 6.12.117): the vAPIC
            // backing page's IRR has it; a vCPU not in guest mode is only
            // woken (above, if blocked): no request, and SVM has no
            // posted-interrupt descriptor for kvm_arch_dy_has_pending_interrupt.
        } else if apicv {
            vm.vcpus[t].pi_pending = true;
        } else {
            vm.vcpus[t].pending_request = true;
        }
    }

    /// A cross-CPU call queued for a polling idle CPU without an IPI
    /// (`call_function_single_prep_ipi` found it polling and set
    /// `TIF_NEED_RESCHED`): no interrupt, no kick exit; the poller leaves
    /// its loop and runs the call from `do_idle`'s
    /// `flush_smp_call_function_queue` (modelled as the handler of an
    /// interrupt that cost no exit), then goes idle again.
    fn queue_polled_call(&mut self, vi: VmId, from: VcpuIdx, t: VcpuIdx, vector: Vector) {
        let now = self.now;
        self.idle_poll_woken(vi, t);
        self.vms[vi].g[t].irqs.push_back(Irq {
            at: now,
            vector,
            from,
        });
        self.poke(vi, t);
    }

    /// `smp_call_function_many_cond` from vCPU `i` to `targets` (6.12
    /// kernel/smp.c with x86's IPI senders). Each target gets the call on
    /// its `call_single_queue`; only the targets whose queue was empty
    /// (`llist_add()` true: `cfd->cpumask_ipi`) are sent an IPI, the others
    /// run the call from the interrupt already pending. The IPIs: a unicast
    /// CALL_FUNCTION_SINGLE for one, else PV send-IPI, the all-but-self
    /// shorthand or one unicast each; each call's function does `handler`
    /// of work after the interrupt entry. With `then` (`wait`) the sender
    /// enters it (a `csd_lock_wait` spin) and counts the calls left;
    /// `kvm_smp_send_call_func_ipi` then yields to the first preempted
    /// vCPU of the IPI mask. Some(switch) if the sender yielded.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn smp_call_function_many(
        &mut self,
        cpu: CpuId,
        vi: VmId,
        i: VcpuIdx,
        targets: &[VcpuIdx],
        handler: Nanos,
        then: Option<Phase>,
        running: &[bool],
    ) -> Option<Option<Switch>> {
        let now = self.now;
        let exit = self.kvm.round_trip();
        let pv = self.pv;
        let me = i;
        let sync = then.is_some();
        let vm = &mut self.vms[vi];
        let mut ipi = std::mem::take(&mut vm.ipi_buf);
        ipi.clear();
        for &t in targets {
            if vm.smp_call_single_queue(t, i, sync, handler) {
                ipi.push(t);
            }
        }
        // Unicast ICR writes, for `kvm_apic_ipi` once `vm` is released.
        let mut icrs: Vec<(VcpuIdx, u8, bool)> = Vec::new();
        let tracing = self.tracing();
        let single = ipi.len() == 1;
        // send_call_function_single_ipi -> call_function_single_prep_ipi:
        // a target polling in idle (cpuidle-haltpoll) gets TIF_NEED_RESCHED
        // instead of the IPI and runs the call from its idle loop.
        let polled = single && self.guest_cpu_polling(vi, ipi[0]);
        let vm = &mut self.vms[vi];
        // smp_call_function_many_cond(): one IPI goes through
        // send_call_function_single_ipi() -> the native unicast
        // ICR write (PV send-IPI and kvm_smp_send_call_func_ipi
        // only override the mask paths, so no hypercall and no
        // PV sched_yield): issue 11 bug 3.
        if polled {
            vm.stats.wake_idle_without_ipi += 1;
        } else {
            vm.stats.ipis_sent += ipi.len() as u64;
        }
        if polled || ipi.is_empty() {
        } else if single {
            let w = vm.icr_write(
                me,
                &LapicIrq::unicast(ipi[0], CALL_FUNCTION_SINGLE_VECTOR),
                now,
                running,
                exit,
            );
            if tracing {
                icrs.push((ipi[0], CALL_FUNCTION_SINGLE_VECTOR.0, w.tracked));
            }
        } else if pv.send_ipi {
            // KVM_HC_SEND_IPI: one hypercall exit, never tracked.
            vm.stats.ipi_exits += 1;
            vm.g[i].pending_exit += exit;
        } else if ipi.len() + 1 == vm.n as usize {
            // native_send_call_func_ipi: the mask is every other
            // online CPU -> one ICR write with the all-but-self
            // shorthand (broadcast; never tracked).
            let irq = LapicIrq {
                shorthand: Shorthand::AllButSelf,
                ..LapicIrq::unicast(me, CALL_FUNCTION_VECTOR)
            };
            let w = vm.icr_write(me, &irq, now, running, exit);
            debug_assert_eq!(w.targets.len(), ipi.len());
        } else {
            for &t in &ipi {
                let w = vm.icr_write(
                    me,
                    &LapicIrq::unicast(t, CALL_FUNCTION_VECTOR),
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
            vm.note_owner_spin(i);
        }
        // kvm_smp_send_call_func_ipi (the mask path): yield to the first
        // preempted vCPU of the mask.
        let yield_to = if pv.sched_yield && pv.steal_time && ipi.len() > 1 {
            ipi.iter().copied().find(|&t| vm.vcpus[t].preempted)
        } else {
            None
        };
        let vector = if single {
            CALL_FUNCTION_SINGLE_VECTOR
        } else {
            CALL_FUNCTION_VECTOR
        };
        for &t in &ipi {
            if polled {
                self.queue_polled_call(vi, i, t, vector);
            } else {
                self.deliver(vi, i, t, vector, cpu);
            }
        }
        self.vms[vi].ipi_buf = ipi;
        if let Some(t) = yield_to {
            self.vms[vi].g[i].pending_exit += exit;
            return self.pv_sched_yield(cpu, vi, i, t);
        }
        None
    }
}
