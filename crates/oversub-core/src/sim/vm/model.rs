//! The guest-model interface: what a VM's guest does on its vCPUs, as the
//! vCPU run loop (`step.rs`) and the KVM glue (`irq.rs`, `notifier.rs`) call
//! it. Two implementations, chosen once when the VM is built (the way a
//! task's `sched_class` is): the phase generator ([`PhaseGen`], a workload
//! profile's compute bursts and what follows them, `phases.rs`) and the
//! nested Linux guest ([`NestedGuest`], a `GuestLevel` running a thread
//! program, `guest.rs`). The run loop owns the phases both share (lock spin
//! and hold, interrupt handler, halt, polls); a model owns `Phase::Start`
//! and the phases it puts its vCPUs in.

use super::super::Simulator;
use super::guest::GuestNext;
use super::state::{AfterStage, Cat, Phase, Wait};
use super::Act;
use crate::engine::Nanos;
use crate::kvm::{VcpuIdx, VmId};
use crate::sched::CpuId;

/// One guest model's hooks (static methods on the simulator, like a
/// kernel `sched_class`: the model's state lives in the VM it serves).
pub(super) trait GuestModel: Sync {
    /// Advances vCPU `i`'s model phase `phase` (`Phase::Start`, or one the
    /// model set): the next burst, or None to look at the phase again.
    fn step(
        &self,
        sim: &mut Simulator,
        cpu: CpuId,
        vm: VmId,
        i: VcpuIdx,
        phase: Phase,
    ) -> Option<Act>;

    /// `work` of vCPU `i`'s last burst ran in a model phase that keeps no
    /// time left of its own (the phase generator's compute bursts count
    /// down in their phase).
    fn consumed(&self, sim: &mut Simulator, vm: VmId, i: VcpuIdx, work: Nanos);

    /// vCPU `i`'s `csd_lock_wait` ended: the phase it goes on with (`then`,
    /// `len`: where the phase generator's post-compute stages resume).
    fn after_csd_wait(&self, then: AfterStage, len: Nanos) -> Phase;

    /// The guest's local timer interrupt handler on vCPU `i` ran (its EOI
    /// and the return to the interrupted phase are done).
    fn timer_interrupt(&self, sim: &mut Simulator, cpu: CpuId, vm: VmId, i: VcpuIdx);

    /// The guest's tick is due on vCPU `i` (its LAPIC timer interrupt is
    /// queued or about to be).
    fn tick_due(&self, sim: &mut Simulator, vm: VmId, i: VcpuIdx);

    /// vCPU `i` was scheduled in on the host (`kvm_sched_in`): what the
    /// guest sees of the time it waited.
    fn sched_in(&self, sim: &mut Simulator, vm: VmId, i: VcpuIdx);
}

/// The phase generator: vCPUs run a workload profile's draws.
pub(super) struct PhaseGen;

/// The nested Linux guest: vCPUs run the guest scheduler's tasks.
pub(super) struct NestedGuest;

impl GuestModel for PhaseGen {
    /// `Phase::Start`: the next op's compute burst (or done);
    /// `Phase::Compute`: the burst's rest, then the post-compute stages;
    /// `Phase::After`: the stages from where they stopped.
    fn step(
        &self,
        sim: &mut Simulator,
        cpu: CpuId,
        vm: VmId,
        i: VcpuIdx,
        phase: Phase,
    ) -> Option<Act> {
        let (vi, i) = (vm, i);
        match phase {
            Phase::Compute { left, len, .. } => {
                if left > Nanos::ZERO {
                    return Some(Act::Run(Cat::Useful, left));
                }
                sim.vms[vi].g[i].phase = Phase::After {
                    stage: AfterStage::Ipi,
                    len,
                };
                // The stages run at once: none of them queues an
                // interrupt for this vCPU (their IPIs go to others), so
                // the loop's injection check would find nothing.
                sim.after_stages(cpu, vi, i, AfterStage::Ipi, len)
            }
            Phase::After { stage, len } => sim.after_stages(cpu, vi, i, stage, len),
            _ => {
                debug_assert_eq!(phase, Phase::Start, "not a phase generator phase");
                sim.start_op(vi, i)
            }
        }
    }

    fn consumed(&self, _: &mut Simulator, _: VmId, _: VcpuIdx, _: Nanos) {}

    fn after_csd_wait(&self, then: AfterStage, len: Nanos) -> Phase {
        Phase::After { stage: then, len }
    }

    fn timer_interrupt(&self, _: &mut Simulator, _: CpuId, _: VmId, _: VcpuIdx) {}

    fn tick_due(&self, _: &mut Simulator, _: VmId, _: VcpuIdx) {}

    fn sched_in(&self, _: &mut Simulator, _: VmId, _: VcpuIdx) {}
}

impl GuestModel for NestedGuest {
    /// `Phase::Start`: back to the guest (`Phase::Guest`); `Phase::Guest`:
    /// run the guest CPU's current task, take a kernel lock, send a
    /// cross-CPU call, spin on a sleeping lock's owner, or idle (poll or
    /// HLT) when the guest CPU has nothing to run.
    fn step(
        &self,
        sim: &mut Simulator,
        cpu: CpuId,
        vm: VmId,
        i: VcpuIdx,
        phase: Phase,
    ) -> Option<Act> {
        let (vi, i) = (vm, i);
        if phase != Phase::Guest {
            debug_assert_eq!(phase, Phase::Start, "not a nested guest phase");
            sim.vms[vi].g[i].phase = Phase::Guest;
            return None;
        }
        let next = sim.guest_run(cpu, vi, i);
        sim.trace_guest_curr(vi, i);
        match next {
            GuestNext::Run(d) => return Some(Act::Run(Cat::Useful, d)),
            GuestNext::KernelLock(l, hold) => {
                // Back to Phase::Guest (via Start) after the release.
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
                    wait: Wait::Csd,
                    ple: false,
                    then: AfterStage::Ipi,
                    len: Nanos::ZERO,
                });
                if let Some(sw) =
                    sim.smp_call_function_many(cpu, vi, i, &targets, handler, then, &running)
                {
                    return Some(Act::Switched(sw));
                }
                return None;
            }
            GuestNext::OwnerSpin => {
                sim.vms[vi].g[i].phase = Phase::Spin {
                    wait: Wait::Owner,
                    ple: false,
                    then: AfterStage::Ipi,
                    len: Nanos::ZERO,
                };
                sim.vms[vi].note_owner_spin(i);
                return None;
            }
            GuestNext::Idle => {}
        }
        // The guest CPU is idle: poll or HLT (sim::vm::idle).
        Some(sim.cpuidle_idle_call(cpu, vi, i))
    }

    fn consumed(&self, sim: &mut Simulator, vm: VmId, i: VcpuIdx, work: Nanos) {
        if let Some(g) = sim.vms[vm.idx()].guest.as_mut() {
            g.consumed(i, work);
        }
    }

    fn after_csd_wait(&self, _: AfterStage, _: Nanos) -> Phase {
        Phase::Guest
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
