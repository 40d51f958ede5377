//! The guest-model interface: what a VM's guest does on its vCPUs, as the
//! vCPU run loop (`step.rs`) and the KVM glue (`irq.rs`, `notifier.rs`) call
//! it. Two implementations, chosen once when the VM is built (the way a
//! task's `sched_class` is): the phase generator ([`PhaseGen`], a workload
//! profile's compute bursts and what follows them, `phases.rs`) and the
//! nested Linux guest ([`NestedGuest`], a `GuestLevel` running a thread
//! program, `guest.rs`). The run loop owns the phases both share (lock spin
//! and hold, interrupt handler, halt, polls) and `Phase::Start`, where a
//! vCPU goes back to its model ([`GuestModel::start`]); each model has its
//! own typed stages ([`GenStage`], [`NestedStage`]), and a stage is stepped
//! by the model it belongs to ([`ModelStage::step`]), so a model never sees
//! another's.

use super::super::Simulator;
use super::guest::GuestNext;
use super::state::{AfterStage, Cat, GenStage, ModelStage, NestedStage, Phase, Wait};
use super::Act;
use crate::engine::Nanos;
use crate::kvm::{VcpuIdx, VmId};
use crate::sched::CpuId;

/// One guest model's hooks (static methods on the simulator, like a
/// kernel `sched_class`: the model's state lives in the VM it serves).
/// A hook a model does not need does nothing.
pub(super) trait GuestModel: Sync {
    /// vCPU `i` is back in the model (`Phase::Start`): its next stage or
    /// burst, or None to look at the phase again.
    fn start(&self, sim: &mut Simulator, vm: VmId, i: VcpuIdx) -> Option<Act>;

    /// The guest's local timer interrupt handler on vCPU `i` ran (its EOI
    /// and the return to the interrupted phase are done).
    fn timer_interrupt(&self, _: &mut Simulator, _: CpuId, _: VmId, _: VcpuIdx) {}

    /// The guest's tick is due on vCPU `i` (its LAPIC timer interrupt is
    /// queued or about to be).
    fn tick_due(&self, _: &mut Simulator, _: VmId, _: VcpuIdx) {}

    /// vCPU `i` was scheduled in on the host (`kvm_sched_in`): what the
    /// guest sees of the time it waited.
    fn sched_in(&self, _: &mut Simulator, _: VmId, _: VcpuIdx) {}
}

/// The phase generator: vCPUs run a workload profile's draws.
pub(super) struct PhaseGen;

/// The nested Linux guest: vCPUs run the guest scheduler's tasks.
pub(super) struct NestedGuest;

impl ModelStage {
    /// Advances vCPU `i` in this stage of its model: the next burst, or
    /// None to look at the phase again.
    pub(super) fn step(self, sim: &mut Simulator, cpu: CpuId, vm: VmId, i: VcpuIdx) -> Option<Act> {
        match self {
            ModelStage::Gen(s) => PhaseGen::step(sim, cpu, vm, i, s),
            ModelStage::Nested(s) => NestedGuest::step(sim, cpu, vm, i, s),
        }
    }
}

impl GuestModel for PhaseGen {
    /// The next op's compute burst (or done).
    fn start(&self, sim: &mut Simulator, vm: VmId, i: VcpuIdx) -> Option<Act> {
        sim.start_op(vm, i)
    }
}

impl PhaseGen {
    /// `Compute`: the burst's rest, then the post-compute stages;
    /// `After`: the stages from where they stopped.
    fn step(sim: &mut Simulator, cpu: CpuId, vi: VmId, i: VcpuIdx, stage: GenStage) -> Option<Act> {
        match stage {
            GenStage::Compute { left, len, .. } => {
                if left > Nanos::ZERO {
                    return Some(Act::Run(Cat::Useful, left));
                }
                sim.vms[vi].g[i].phase = Phase::gen(GenStage::After {
                    stage: AfterStage::Ipi,
                    len,
                });
                // The stages run at once: none of them queues an
                // interrupt for this vCPU (their IPIs go to others), so
                // the loop's injection check would find nothing.
                sim.after_stages(cpu, vi, i, AfterStage::Ipi, len)
            }
            GenStage::After { stage, len } => sim.after_stages(cpu, vi, i, stage, len),
        }
    }
}

impl GuestModel for NestedGuest {
    /// Back to the guest (`NestedStage::Guest`).
    fn start(&self, sim: &mut Simulator, vm: VmId, i: VcpuIdx) -> Option<Act> {
        sim.vms[vm].g[i].phase = Phase::GUEST;
        None
    }

    fn timer_interrupt(&self, sim: &mut Simulator, cpu: CpuId, vm: VmId, i: VcpuIdx) {
        sim.guest_timer_interrupt(cpu, vm, i);
    }

    fn tick_due(&self, sim: &mut Simulator, vm: VmId, i: VcpuIdx) {
        if let Some(g) = sim.vms[vm.idx()].guest.as_mut() {
            g.tick_due[i.idx()] = true;
        }
    }

    fn sched_in(&self, sim: &mut Simulator, vm: VmId, i: VcpuIdx) {
        let task = sim.vcpu_task(vm, i);
        sim.guest_vcpu_entry(vm, i, task);
    }
}

impl NestedGuest {
    /// `Guest`: run the guest CPU's current task, take a kernel lock, send
    /// a cross-CPU call, spin on a sleeping lock's owner, or idle (poll or
    /// HLT) when the guest CPU has nothing to run.
    fn step(
        sim: &mut Simulator,
        cpu: CpuId,
        vi: VmId,
        i: VcpuIdx,
        stage: NestedStage,
    ) -> Option<Act> {
        let NestedStage::Guest = stage;
        let next = sim.guest_run(cpu, vi, i);
        sim.trace_guest_curr(vi, i);
        match next {
            GuestNext::Run(d) => return Some(Act::Run(Cat::Useful, d)),
            GuestNext::KernelLock(l, hold) => {
                // Back to `NestedStage::Guest` (via Start) after the release.
                sim.vms[vi].g[i].hold_next = Some(hold);
                // Without `[[vm]] ops`, a program VM's op is this kernel
                // lock section, attempt to release.
                sim.vms[vi].g[i].op_start = sim.now;
                sim.lock_start(vi, i, l);
                return None;
            }
            GuestNext::WakeLock(l, hold) => {
                let g = &mut sim.vms[vi].g[i];
                g.hold_next = Some(hold);
                g.wake_section = true;
                sim.lock_start(vi, i, l);
                return None;
            }
            GuestNext::Call {
                targets,
                handler,
                wait,
            } => {
                let running = sim.vcpus_running_if(sim.kvm.avic, vi);
                let then = wait.then_some(Phase::Spin {
                    wait: Wait::Csd {
                        then: ModelStage::Nested(NestedStage::Guest),
                    },
                    ple: false,
                });
                let sw = sim.smp_call_function_many(cpu, vi, i, &targets, handler, then, &running);
                if let Some(g) = sim.vms[vi].guest.as_mut() {
                    g.call_buf = targets;
                }
                return sw.map(Act::Switched);
            }
            GuestNext::OwnerSpin => {
                sim.vms[vi].g[i].phase = Phase::Spin {
                    wait: Wait::Owner,
                    ple: false,
                };
                sim.vms[vi].note_owner_spin(i);
                return None;
            }
            GuestNext::Idle => {}
        }
        // The guest CPU is idle: poll or HLT (sim::vm::idle).
        Some(sim.cpuidle_idle_call(cpu, vi, i))
    }

    /// `work` of vCPU `i`'s last burst ran in the guest's current task.
    pub(super) fn consumed(sim: &mut Simulator, vm: VmId, i: VcpuIdx, work: Nanos) {
        if let Some(g) = sim.vms[vm.idx()].guest.as_mut() {
            g.consumed(i, work);
        }
    }
}
