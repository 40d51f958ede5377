//! The vCPU seen from the host scheduler: the preempt notifier each vCPU
//! task registers (`kvm_sched_out` / `kvm_sched_in`), which the host
//! level's context switch calls and which is all the host level knows of a
//! VM; the wakeups of a blocked vCPU (`kvm_vcpu_wake_up`, its LAPIC timer)
//! and the check that KVM's view of every vCPU agrees with the scheduler's.

use super::super::{Body, Simulator};
use crate::engine::Nanos;
use crate::kvm::{VcpuIdx, VmId};
use crate::sched::{CpuId, TaskId};

/// A vCPU task's preempt notifier: `vcpu->preempt_notifier` with
/// `kvm_preempt_ops` (virt/kvm/kvm_main.c, Linux 6.12), registered on the
/// vCPU thread by `vcpu_load()`. The host level holds it as an opaque
/// handle and calls it from the context switch
/// ([`Simulator::fire_sched_out_preempt_notifiers`],
/// [`Simulator::fire_sched_in_preempt_notifiers`]); the vCPU it names is
/// KVM's business.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::sim) struct PreemptNotifier {
    vm: VmId,
    idx: VcpuIdx,
}

impl PreemptNotifier {
    /// Linux 6.12: `preempt_notifier_init()` with `kvm_preempt_ops` for vCPU `idx` of VM
    /// `vm` (`kvm_vm_ioctl_create_vcpu`); `preempt_notifier_register()` of
    /// `vcpu_load()` is storing it in the task (sim/build.rs).
    pub(in crate::sim) fn register(vm: VmId, idx: VcpuIdx) -> PreemptNotifier {
        PreemptNotifier { vm, idx }
    }
}

impl Simulator {
    /// KVM's view of every vCPU agrees with the host scheduler's (checked
    /// after every event with `--check`): a vCPU on a CPU is neither
    /// `preempted` nor `ready`; a runnable vCPU task waiting for a CPU (after
    /// its first run) is `ready` (preempted, or woken from halt); nobody is
    /// in a spin loop outside `kvm_vcpu_on_spin`.
    pub(in crate::sim) fn check_vcpus(&self) -> Result<(), String> {
        for vm in self.vms.iter() {
            for (i, v) in VcpuIdx::all(vm.n).zip(vm.vcpus.iter()) {
                let id = vm.task(i);
                let t = &self.host.sched.tasks[id.idx()];
                let name = || format!("{}.{i}", vm.name);
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
            if let Some(i) = vm.owner_spinner_missed() {
                return Err(format!(
                    "{}.{i} spins on an owner outside owner_spinners",
                    vm.name
                ));
            }
            if let Some(g) = &vm.guest {
                for (i, &(n, l)) in g.osq_node.iter().enumerate() {
                    let me = VcpuIdx(i as u32);
                    let held = g.osq.iter().filter(|q| q.is_queued(me)).count();
                    if held != n as usize || (n == 1 && !g.osq[l].is_queued(me)) {
                        return Err(format!(
                            "{}.{me}: osq_node {n}/{l}, queued in {held} OSQs",
                            vm.name
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    /// The vCPU of host task `p`, if it is one (its notifier's).
    fn notifier(&self, p: TaskId) -> Option<PreemptNotifier> {
        match self.tasks[p.idx()].body {
            Body::Notified(n) => Some(n),
            Body::Steps(_) => None,
        }
    }

    /// Linux 6.12: `fire_sched_out_preempt_notifiers()` (kernel/sched/core.c), from
    /// `prepare_task_switch()`: `prev` is switched out, still `runnable`
    /// (preempted) or not.
    pub(in crate::sim) fn fire_sched_out_preempt_notifiers(
        &mut self,
        prev: TaskId,
        runnable: bool,
    ) {
        if let Some(n) = self.notifier(prev) {
            self.kvm_sched_out(n.vm, n.idx, runnable);
        }
    }

    /// Linux 6.12: `fire_sched_in_preempt_notifiers()` (kernel/sched/core.c), from
    /// `finish_task_switch()`: `next` now runs on `cpu`. For a vCPU this is
    /// `kvm_sched_in` (at the switch's start in the model: the cost stands
    /// for all of `__schedule()`), and the vCPU thread, back in
    /// `vcpu_run()`, enters the guest once the switch is paid for: the CPU
    /// time the switch costs (owed by the host task, accounted as exit
    /// overhead) is its burst until then, and the burst the entry starts
    /// supersedes any other. Until that entry the vCPU is not in guest
    /// mode: an interrupt for it waits for the entry
    /// ([`Simulator::vcpu_in_guest_mode`]). Returns whether a notifier
    /// started `next`'s burst so (else the host level starts it).
    pub(in crate::sim) fn fire_sched_in_preempt_notifiers(
        &mut self,
        next: TaskId,
        cpu: CpuId,
    ) -> bool {
        let Some(n) = self.notifier(next) else {
            return false;
        };
        let ts = &mut self.tasks[next.idx()];
        let owed = ts.overhead;
        ts.running_since = Some(self.now);
        self.kvm_sched_in(n.vm, n.idx);
        // VM entry after the switch: the guest looks at its state again
        // (pending interrupts, a lock granted while it was away, a new
        // PAUSE loop with the current window).
        self.kick_burst_at(cpu, self.now + owed);
        true
    }

    /// The burst of vCPU task `p` (notifier `n`) on `cpu` ended, or was cut
    /// short with `left` unused, after `switch` of host switch cost was
    /// paid: KVM's run loop goes on (`vcpu_step`).
    pub(in crate::sim) fn notified_burst_end(
        &mut self,
        cpu: CpuId,
        p: TaskId,
        n: PreemptNotifier,
        left: Nanos,
        switch: Nanos,
    ) {
        self.vms[n.vm.idx()].stats.exit += switch.0;
        self.vcpu_step(cpu, p, n.vm, n.idx, left);
    }

    /// Linux 6.12: `kvm_sched_out()` (virt/kvm/kvm_main.c), the vCPU's preempt
    /// notifier when its task is switched out.
    fn kvm_sched_out(&mut self, vm: VmId, idx: VcpuIdx, runnable: bool) {
        let (vi, i) = (vm, idx);
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

    /// Linux 6.12: `kvm_sched_in()` (virt/kvm/kvm_main.c) + `vmx_vcpu_load`/`svm_vcpu_load`:
    /// steal time on entry; shrink the PLE window if the vCPU had been
    /// scheduled out.
    fn kvm_sched_in(&mut self, vm: VmId, idx: VcpuIdx) {
        let (vi, i) = (vm, idx);
        let model = self.vms[vi].model;
        model.sched_in(self, vm, idx);
        let vm = &mut self.vms[vi];
        if vm.vcpus[i].kvm_sched_in() {
            if let Some(p) = self.kvm.ple {
                vm.vcpus[i].ple_window = p.shrink_ple_window(vm.vcpus[i].ple_window);
            }
        }
    }

    /// The LAPIC timer of a halted vCPU fired: `kvm_vcpu_kick`.
    pub(in crate::sim) fn guest_timer(&mut self, p: TaskId, gen: u64) {
        let Some(n) = self.notifier(p) else {
            return;
        };
        let (vi, i) = (n.vm, n.idx);
        if self.vms[vi].g[i].timer_gen != gen {
            self.stale += 1;
            return;
        }
        self.wake_vcpu(vi, i, None);
    }

    /// Whether vCPU task `p`'s guest timer of generation `gen` was
    /// superseded (the vCPU ran again, or re-armed it, since).
    pub(in crate::sim) fn guest_timer_stale(&self, p: TaskId, gen: u64) -> bool {
        self.notifier(p)
            .is_some_and(|n| self.vms[n.vm.idx()].g[n.idx].timer_gen != gen)
    }

    /// Which vCPUs of VM `vi` are on a CPU now.
    pub(super) fn vcpus_running(&self, vi: VmId) -> Vec<bool> {
        let vm = &self.vms[vi];
        VcpuIdx::all(vm.n)
            .map(|t| {
                let id = vm.task(t);
                let st = &self.host.sched.tasks[id.idx()];
                st.on_cpu && self.host.sched.rqs[st.cpu.idx()].curr == Some(id)
            })
            .collect()
    }

    /// [`Self::vcpus_running`] with AVIC (`avic`), else empty (nothing
    /// looks at it then).
    pub(in crate::sim) fn vcpus_running_if(&self, avic: bool, vi: VmId) -> Vec<bool> {
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
    pub(super) fn wake_vcpu(&mut self, vi: VmId, i: VcpuIdx, waker: Option<CpuId>) {
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

    /// Whether host task `task` (a vCPU) is current on its CPU and done
    /// switching in: in guest mode or KVM's run loop, where a kick reaches
    /// it. A vCPU still being switched in (`__schedule()` with IRQs off)
    /// looks at its guest state at the entry that ends the switch.
    pub(super) fn vcpu_in_guest_mode(&self, task: TaskId) -> bool {
        let t = &self.host.sched.tasks[task.idx()];
        t.on_cpu
            && self.host.sched.rqs[t.cpu.idx()].curr == Some(task)
            && self.switch_end[t.cpu.idx()] <= self.now
    }

    /// Makes a running vCPU look at its state now (a lock it waits for was
    /// released, an interrupt arrived); a vCPU that is not running, or still
    /// being switched in, sees the change when it next enters the guest.
    pub(super) fn poke(&mut self, vi: VmId, i: VcpuIdx) {
        let task = self.vms[vi].task(i);
        if self.vcpu_in_guest_mode(task) {
            let cpu = self.host.sched.tasks[task.idx()].cpu;
            self.kick_burst(cpu);
        }
    }
}
