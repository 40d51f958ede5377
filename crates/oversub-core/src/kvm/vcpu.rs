//! Per-vCPU scheduling state as KVM 6.12.117 keeps it (`struct kvm_vcpu`,
//! `struct kvm_vcpu_arch`) and the hooks that change it:
//! `kvm_sched_out` / `kvm_sched_in` (virt/kvm/kvm_main.c, preempt notifiers),
//! `kvm_arch_vcpu_put` (arch/x86/kvm/x86.c, `preempted_in_kernel`),
//! `kvm_vcpu_wake_up` (kvm_main.c), plus the x86 predicates used by directed
//! yield: `kvm_arch_dy_runnable`, `kvm_arch_dy_has_pending_interrupt`,
//! `kvm_arch_vcpu_preempted_in_kernel` and generic `vcpu_dy_runnable`.

use super::halt_poll::HaltPollState;
use super::VcpuIdx;
use crate::sched::TaskId;

/// Guest privilege level as far as KVM cares (`kvm_arch_vcpu_in_kernel`: CPL == 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Cpl {
    /// CPL 0: guest kernel.
    #[default]
    Kernel,
    /// CPL 3: guest user space.
    User,
}

/// KVM's view of one vCPU. Field names follow the kernel's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VcpuState {
    /// `vcpu->vcpu_idx`.
    pub idx: VcpuIdx,
    /// The host task running this vCPU (`vcpu->pid`); `None` before KVM_RUN
    /// (then `kvm_vcpu_yield_to` returns 0).
    pub task: Option<TaskId>,
    /// `vcpu->preempted`: scheduled out while runnable and wanting to run.
    pub preempted: bool,
    /// `vcpu->ready`: preempted, or woken from halt and not yet running.
    pub ready: bool,
    /// `vcpu->arch.preempted_in_kernel`, written by `kvm_arch_vcpu_put`.
    pub preempted_in_kernel: bool,
    /// `vcpu->wants_to_run`: inside KVM_RUN (not immediate_exit).
    pub wants_to_run: bool,
    /// `kvm_vcpu_is_blocking`: inside `kvm_vcpu_block` (guest HLT / pv_wait).
    pub blocking: bool,
    /// `vcpu->scheduled_out` (drives `shrink_ple_window` on the next load).
    pub scheduled_out: bool,
    /// `vcpu->spin_loop.in_spin_loop`.
    pub in_spin_loop: bool,
    /// `vcpu->spin_loop.dy_eligible`.
    pub dy_eligible: bool,
    /// Switched out by the `yield_to()` inside its own `kvm_vcpu_on_spin()`:
    /// in the kernel `schedule()` runs inside the spin loop, so
    /// `in_spin_loop` stays set while the vCPU waits for a CPU, and
    /// `kvm_vcpu_on_spin()` finishes (clearing it and `dy_eligible`) only when
    /// the vCPU runs again (`kvm_sched_in`).
    pub yielded_in_spin_loop: bool,
    /// Current guest CPL.
    pub cpl: Cpl,
    /// `vcpu->arch.pv.pv_unhalted`: set by a KVM_HC_KICK_CPU (APIC_DM_REMRD).
    pub pv_unhalted: bool,
    /// A pending KVM_REQ_NMI / KVM_REQ_SMI / KVM_REQ_EVENT request.
    pub pending_request: bool,
    /// APICv active for this vCPU (`kvm_vcpu_apicv_active`).
    pub apicv_active: bool,
    /// The posted-interrupt descriptor has an outstanding interrupt
    /// (`dy_apicv_has_pending_interrupt`); meaningful only with APICv.
    pub pi_pending: bool,
    /// `vcpu->async_pf.done` non-empty.
    pub async_pf_done: bool,
    /// Current PLE window (`vmx->ple_window` / `pause_filter_count`).
    pub ple_window: u32,
    /// `vcpu->halt_poll_ns` and the halt in progress.
    pub halt_poll: HaltPollState,
}

impl VcpuState {
    /// A freshly created vCPU that is inside KVM_RUN and in guest kernel mode.
    pub fn new(idx: VcpuIdx, task: Option<TaskId>) -> VcpuState {
        VcpuState {
            idx,
            task,
            preempted: false,
            ready: false,
            preempted_in_kernel: false,
            wants_to_run: true,
            blocking: false,
            scheduled_out: false,
            in_spin_loop: false,
            dy_eligible: false,
            yielded_in_spin_loop: false,
            cpl: Cpl::Kernel,
            pv_unhalted: false,
            pending_request: false,
            apicv_active: false,
            pi_pending: false,
            async_pf_done: false,
            ple_window: 0,
            halt_poll: HaltPollState::default(),
        }
    }

    /// `kvm_sched_out` (kvm_main.c, 6.12.117) followed by x86
    /// `kvm_arch_vcpu_put`: if the task is still runnable and the vCPU wants
    /// to run, mark it `preempted` and `ready`; when preempted, record whether
    /// it was in guest kernel mode (`kvm_arch_vcpu_in_kernel`, CPL == 0).
    /// `protected_guest` models SEV-ES/TDX where 6.12 reports in-kernel as
    /// true (`vcpu->arch.guest_state_protected`).
    pub fn kvm_sched_out(&mut self, task_runnable: bool, protected_guest: bool) {
        self.scheduled_out = true;
        if task_runnable && self.wants_to_run {
            self.preempted = true;
            self.ready = true;
        }
        // kvm_arch_vcpu_put
        if self.preempted {
            self.preempted_in_kernel = protected_guest || self.cpl == Cpl::Kernel;
        }
    }

    /// `kvm_sched_in` (kvm_main.c, 6.12.117): clears `preempted` and `ready`.
    /// Returns whether `vmx_vcpu_load`/`svm_vcpu_load` would call
    /// `shrink_ple_window` (the vCPU was `scheduled_out`), then clears
    /// `scheduled_out`. `preempted_in_kernel` is left as is (x86 only rewrites
    /// it on the next put; it is only read while `preempted`).
    pub fn kvm_sched_in(&mut self) -> bool {
        self.preempted = false;
        self.ready = false;
        if self.yielded_in_spin_loop {
            // yield_to() returns: the rest of kvm_vcpu_on_spin().
            self.yielded_in_spin_loop = false;
            self.in_spin_loop = false;
            self.dy_eligible = false;
        }
        let shrink = self.scheduled_out;
        self.scheduled_out = false;
        shrink
    }

    /// `kvm_vcpu_wake_up` (kvm_main.c, 6.12.117): if the vCPU was blocked
    /// (`__kvm_vcpu_wake_up` found a waiter), set `ready` and return true.
    /// The blocking state ends when the vCPU task runs again; the caller
    /// clears `blocking` via [`VcpuState::kvm_vcpu_unblock`].
    pub fn kvm_vcpu_wake_up(&mut self) -> bool {
        if self.blocking {
            self.ready = true;
            true
        } else {
            false
        }
    }

    /// Enter `kvm_vcpu_block` (guest HLT with halt polling over, or pv_wait).
    pub fn kvm_vcpu_block(&mut self) {
        self.blocking = true;
    }

    /// Leave `kvm_vcpu_block` (the vCPU task was woken and ran).
    pub fn kvm_vcpu_unblock(&mut self) {
        self.blocking = false;
        self.pv_unhalted = false;
    }

    /// x86 `kvm_arch_dy_has_pending_interrupt` (x86.c, 6.12.117): APICv
    /// active and the posted-interrupt descriptor has a pending interrupt.
    /// Always false without APICv.
    pub fn kvm_arch_dy_has_pending_interrupt(&self) -> bool {
        self.apicv_active && self.pi_pending
    }

    /// x86 `kvm_arch_dy_runnable` (x86.c, 6.12.117): `pv_unhalted`, a pending
    /// NMI/SMI/EVENT request, or a pending posted interrupt.
    pub fn kvm_arch_dy_runnable(&self) -> bool {
        self.pv_unhalted || self.pending_request || self.kvm_arch_dy_has_pending_interrupt()
    }

    /// `vcpu_dy_runnable` (kvm_main.c, 6.12.117): arch dy-runnable or a
    /// completed async page fault.
    pub fn vcpu_dy_runnable(&self) -> bool {
        self.kvm_arch_dy_runnable() || self.async_pf_done
    }

    /// x86 `kvm_arch_vcpu_preempted_in_kernel` (x86.c, 6.12.117).
    pub fn kvm_arch_vcpu_preempted_in_kernel(&self) -> bool {
        self.preempted_in_kernel
    }

    /// `kvm_vcpu_eligible_for_directed_yield` (kvm_main.c, 6.12.117, with
    /// CONFIG_HAVE_KVM_CPU_RELAX_INTERCEPT as on x86): eligible if not in a
    /// spin loop, or in one with `dy_eligible`; a vCPU in a spin loop has its
    /// `dy_eligible` toggled on every check. Mutates, like the kernel.
    pub fn kvm_vcpu_eligible_for_directed_yield(&mut self) -> bool {
        let eligible = !self.in_spin_loop || self.dy_eligible;
        if self.in_spin_loop {
            self.dy_eligible = !self.dy_eligible;
        }
        eligible
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v() -> VcpuState {
        VcpuState::new(VcpuIdx(0), Some(TaskId(7)))
    }

    #[test]
    fn sched_out_runnable_marks_preempted_and_ready_in_kernel() {
        let mut s = v();
        s.kvm_sched_out(true, false);
        assert!(s.preempted && s.ready && s.preempted_in_kernel && s.scheduled_out);
    }

    #[test]
    fn sched_out_in_user_records_not_in_kernel() {
        let mut s = v();
        s.cpl = Cpl::User;
        s.kvm_sched_out(true, false);
        assert!(s.preempted && !s.preempted_in_kernel);
        let mut p = v();
        p.cpl = Cpl::User;
        p.kvm_sched_out(true, true);
        assert!(p.preempted_in_kernel, "protected guests report in-kernel");
    }

    #[test]
    fn sched_out_when_sleeping_or_not_wanting_to_run_is_not_preempted() {
        let mut s = v();
        s.kvm_sched_out(false, false);
        assert!(!s.preempted && !s.ready);
        let mut w = v();
        w.wants_to_run = false;
        w.kvm_sched_out(true, false);
        assert!(!w.preempted && !w.ready);
    }

    #[test]
    fn sched_in_clears_and_reports_shrink() {
        let mut s = v();
        s.kvm_sched_out(true, false);
        assert!(s.kvm_sched_in());
        assert!(!s.preempted && !s.ready && !s.scheduled_out);
        assert!(!s.kvm_sched_in(), "second load without put does not shrink");
    }

    #[test]
    fn wake_up_sets_ready_only_when_blocking() {
        let mut s = v();
        assert!(!s.kvm_vcpu_wake_up());
        assert!(!s.ready);
        s.kvm_vcpu_block();
        assert!(s.kvm_vcpu_wake_up());
        assert!(s.ready && !s.preempted);
    }

    #[test]
    fn dy_runnable_sources() {
        let mut s = v();
        assert!(!s.vcpu_dy_runnable());
        s.pi_pending = true;
        assert!(
            !s.vcpu_dy_runnable(),
            "posted interrupt ignored without APICv"
        );
        s.apicv_active = true;
        assert!(s.kvm_arch_dy_has_pending_interrupt() && s.vcpu_dy_runnable());
        let mut k = v();
        k.pv_unhalted = true;
        assert!(k.kvm_arch_dy_runnable());
        let mut a = v();
        a.async_pf_done = true;
        assert!(!a.kvm_arch_dy_runnable() && a.vcpu_dy_runnable());
    }

    #[test]
    fn dy_eligible_alternates_in_spin_loop() {
        let mut s = v();
        assert!(s.kvm_vcpu_eligible_for_directed_yield());
        assert!(s.kvm_vcpu_eligible_for_directed_yield());
        s.in_spin_loop = true;
        s.dy_eligible = false;
        assert!(!s.kvm_vcpu_eligible_for_directed_yield());
        assert!(s.kvm_vcpu_eligible_for_directed_yield());
        assert!(!s.kvm_vcpu_eligible_for_directed_yield());
    }
}
