//! KVM's paravirtual scheduling hypercalls (arch/x86/kvm/x86.c, 6.12.117):
//! `kvm_sched_yield` (KVM_HC_SCHED_YIELD and the second half of
//! KVM_HC_KICK_CPU) and `kvm_pv_kick_cpu_op` (the APIC_DM_REMRD "kick" that
//! sets `pv_unhalted`, lapic.c `__apic_accept_irq`).

use super::vcpu::VcpuState;
use super::VcpuIdx;

/// What `kvm_sched_yield` did (`directed_yield_attempted` is always counted).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SchedYield {
    /// `single_task_running()` on this CPU: no yield.
    SingleTask,
    /// No vCPU with that APIC id, target not `ready`, or a yield to self.
    NoTarget,
    /// `kvm_vcpu_yield_to` returned <= 0.
    Failed(i32),
    /// `directed_yield_successful`.
    Yielded(VcpuIdx),
}

/// `kvm_sched_yield(vcpu, dest_id)` (x86.c:9560, 6.12.117). `dest_id` is a
/// physical APIC id (= vCPU index in this model). `single_task_running` is
/// the host runqueue state of the caller's CPU.
pub fn kvm_sched_yield<F: FnOnce(VcpuIdx) -> i32>(
    vcpus: &[VcpuState],
    me: VcpuIdx,
    dest_id: u64,
    single_task_running: bool,
    yield_to: F,
) -> SchedYield {
    if single_task_running {
        return SchedYield::SingleTask;
    }
    let target = usize::try_from(dest_id).ok().and_then(|i| vcpus.get(i));
    let Some(t) = target else {
        return SchedYield::NoTarget;
    };
    if !t.ready || t.idx == me {
        return SchedYield::NoTarget;
    }
    match yield_to(t.idx) {
        r if r > 0 => SchedYield::Yielded(t.idx),
        r => SchedYield::Failed(r),
    }
}

/// `kvm_pv_kick_cpu_op` (x86.c:9503) delivering APIC_DM_REMRD
/// (lapic.c:1358-1363): `pv_unhalted = 1`, KVM_REQ_EVENT, `kvm_vcpu_kick`
/// (which wakes a blocked vCPU, setting `ready`). Returns whether a blocked
/// vCPU was woken (the caller wakes its host task). An unknown id does
/// nothing.
pub fn kvm_pv_kick_cpu_op(vcpus: &mut [VcpuState], apicid: u64) -> bool {
    let Some(v) = usize::try_from(apicid).ok().and_then(|i| vcpus.get_mut(i)) else {
        return false;
    };
    v.pv_unhalted = true;
    v.pending_request = true;
    v.kvm_vcpu_wake_up()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::TaskId;

    fn vm(n: u32) -> Vec<VcpuState> {
        (0..n)
            .map(|i| VcpuState::new(VcpuIdx(i), Some(TaskId(i))))
            .collect()
    }

    #[test]
    fn sched_yield_rules() {
        let mut v = vm(3);
        v[1].kvm_sched_out(true, false);
        let me = VcpuIdx(0);
        assert_eq!(
            kvm_sched_yield(&v, me, 1, true, |_| 1),
            SchedYield::SingleTask
        );
        assert_eq!(
            kvm_sched_yield(&v, me, 2, false, |_| 1),
            SchedYield::NoTarget
        );
        assert_eq!(
            kvm_sched_yield(&v, me, 99, false, |_| 1),
            SchedYield::NoTarget
        );
        assert_eq!(
            kvm_sched_yield(&v, VcpuIdx(1), 1, false, |_| 1),
            SchedYield::NoTarget
        );
        assert_eq!(
            kvm_sched_yield(&v, me, 1, false, |_| 0),
            SchedYield::Failed(0)
        );
        assert_eq!(
            kvm_sched_yield(&v, me, 1, false, |_| 1),
            SchedYield::Yielded(VcpuIdx(1))
        );
    }

    #[test]
    fn kick_sets_pv_unhalted_and_wakes_blocked() {
        let mut v = vm(2);
        v[1].kvm_vcpu_block();
        assert!(kvm_pv_kick_cpu_op(&mut v, 1));
        assert!(v[1].pv_unhalted && v[1].ready && v[1].vcpu_dy_runnable());
        assert!(!kvm_pv_kick_cpu_op(&mut v, 0), "running vCPU: flag only");
        assert!(v[0].pv_unhalted && !v[0].ready);
        assert!(!kvm_pv_kick_cpu_op(&mut v, 7));
    }
}
