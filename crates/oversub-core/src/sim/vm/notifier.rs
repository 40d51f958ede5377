//! The vCPU seen from the host scheduler: the preempt notifiers
//! (`kvm_sched_out` / `kvm_sched_in`) the context switch calls, the wakeups
//! of a blocked vCPU (`kvm_vcpu_wake_up`, its LAPIC timer) and the check
//! that KVM's view of every vCPU agrees with the scheduler's.

use super::super::Simulator;
use crate::kvm::{VcpuIdx, VmId};
use crate::sched::{CpuId, TaskId};

impl Simulator {
    /// KVM's view of every vCPU agrees with the host scheduler's (checked
    /// after every event with `--check`): a vCPU on a CPU is neither
    /// `preempted` nor `ready`; a runnable vCPU task waiting for a CPU (after
    /// its first run) is `ready` (preempted, or woken from halt); nobody is
    /// in a spin loop outside `kvm_vcpu_on_spin`.
    pub(in crate::sim) fn check_vcpus(&self) -> Result<(), String> {
        for vm in &self.vms {
            for (i, v) in vm.vcpus.iter().enumerate() {
                let id = vm.task(i);
                let t = &self.host.sched.tasks[id.idx()];
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
    pub(in crate::sim) fn vcpu_sched_out(&mut self, vm: VmId, idx: VcpuIdx, runnable: bool) {
        let (vi, i) = (vm.idx(), idx.idx());
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
    pub(in crate::sim) fn vcpu_sched_in(&mut self, vm: VmId, idx: VcpuIdx) {
        let (vi, i) = (vm.idx(), idx.idx());
        if self.vms[vi].guest.is_some() {
            let task = self.vms[vi].task(i);
            self.guest_vcpu_entry(vi, i, task);
        }
        let vm = &mut self.vms[vi];
        if vm.vcpus[i].kvm_sched_in() {
            if let Some(p) = self.kvm.ple {
                vm.vcpus[i].ple_window = p.shrink_ple_window(vm.vcpus[i].ple_window);
            }
        }
    }

    /// The LAPIC timer of a halted vCPU fired: `kvm_vcpu_kick`.
    pub(in crate::sim) fn guest_timer(&mut self, p: TaskId, gen: u64) {
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
    pub(in crate::sim) fn guest_timer_stale(&self, p: TaskId, gen: u64) -> bool {
        match self.tasks[p.idx()].behaviour {
            crate::task::Behaviour::Vcpu { vm, idx } => {
                self.vms[vm as usize].g[idx as usize].timer_gen != gen
            }
            _ => false,
        }
    }

    /// Which vCPUs of VM `vi` are on a CPU now.
    pub(super) fn vcpus_running(&self, vi: usize) -> Vec<bool> {
        let vm = &self.vms[vi];
        (0..vm.n as usize)
            .map(|t| {
                let id = vm.task(t);
                let st = &self.host.sched.tasks[id.idx()];
                st.on_cpu && self.host.sched.rqs[st.cpu.idx()].curr == Some(id)
            })
            .collect()
    }

    /// [`Self::vcpus_running`] with AVIC (`avic`), else empty (nothing
    /// looks at it then).
    pub(in crate::sim) fn vcpus_running_if(&self, avic: bool, vi: usize) -> Vec<bool> {
        if avic {
            self.vcpus_running(vi)
        } else {
            Vec::new()
        }
    }

    /// `kvm_vcpu_wake_up` of a blocking vCPU: `rcuwait_wake_up` ->
    /// `wake_up_process`; `ready` is set only if that woke the task (a vCPU
    /// already woken, or back on a CPU but not yet out of `kvm_vcpu_block`,
    /// is left alone).
    pub(super) fn wake_vcpu(&mut self, vi: usize, i: usize, waker: Option<CpuId>) {
        let task = self.vms[vi].task(i);
        let v = &mut self.vms[vi].vcpus[i];
        let was_ready = v.ready;
        if v.kvm_vcpu_wake_up() {
            if self.host.sched.try_to_wake_up(task, 0, waker) {
                self.trace_wakeup_from(task, waker);
            } else {
                self.vms[vi].vcpus[i].ready = was_ready;
            }
        }
    }

    /// Makes a running vCPU look at its state now (a lock it waits for was
    /// released, an interrupt arrived); a vCPU that is not running sees the
    /// change when it next enters the guest.
    pub(super) fn poke(&mut self, vi: usize, i: usize) {
        let task = self.vms[vi].task(i);
        let t = &self.host.sched.tasks[task.idx()];
        if t.on_cpu && self.host.sched.rqs[t.cpu.idx()].curr == Some(task) {
            let cpu = t.cpu;
            self.kick_burst(cpu);
        }
    }
}
