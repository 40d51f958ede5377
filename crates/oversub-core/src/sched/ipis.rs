//! Which IPI a remote wakeup or preemption sends, as Linux 6.12.117 decides
//! it (kernel/sched/core.c, kernel/smp.c, include/linux/smp.h), counted
//! without changing what the scheduler does:
//!
//! * a wakeup placed on another CPU that is idle goes on that CPU's wakelist
//!   (`ttwu_queue_cond()` -> `ttwu_queue_wakelist()` ->
//!   `__smp_call_single_queue()`) and sends a call-function-single IPI
//!   (`send_call_function_single_ipi()`, traced by `ipi_send_cpu` with the
//!   callback `generic_smp_call_function_single_interrupt`, counted in
//!   /proc/interrupts as "Function call interrupts") when the CPU's
//!   `call_single_queue` was empty; the target activates the task itself
//!   (`sched_ttwu_pending()`), so no reschedule IPI follows;
//! * `resched_curr()` of another CPU sends a reschedule IPI
//!   (`smp_send_reschedule()`, traced with a NULL callback, "Rescheduling
//!   interrupts") unless TIF_NEED_RESCHED was set already;
//! * a polling idle CPU gets neither (`set_nr_if_polling()` /
//!   `set_nr_and_not_polling()`): the host model has no idle-polling state
//!   (its idle CPUs halt), so every host IPI above is sent; a program VM's
//!   guest polls with `[guest] cpuidle_haltpoll` and counts those wakeups
//!   in `guest_haltpoll.wakeups_without_ipi` instead (sim::vm::guest).
//!
//! With `[host.costs] remote_wakeup` zero the model activates a wakelisted
//! wakeup at once on the waking CPU (no `TtwuPending` event): the
//! classification is the one 6.12 would make, the timing is unchanged.

use super::{CpuId, Scheduler};
use serde::Serialize;

/// IPIs the host scheduler sends to other CPUs (`sched_ipis` of a run).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SchedIpiStats {
    /// Reschedule IPIs: `resched_curr()` of another CPU whose current task
    /// had no TIF_NEED_RESCHED (`smp_send_reschedule()`).
    pub reschedule: u64,
    /// Call-function-single IPIs of wakeups queued on another CPU's
    /// wakelist (`ttwu_queue_wakelist()`), one per empty `call_single_queue`.
    pub call_function_single: u64,
}

impl Scheduler {
    /// `ttwu_queue_cond()` (6.12.117) for one LLC without SCX, hotplug or
    /// the stop class: another CPU than the waking one (`this`) that runs
    /// nothing (`!cpu_rq(cpu)->nr_running`; in the model a CPU whose task
    /// blocked has switched away already, so `curr` is None too). TTWU_QUEUE
    /// is on (its default outside PREEMPT_RT).
    pub(crate) fn ttwu_queue_cond(&self, cpu: CpuId, this: CpuId) -> bool {
        let rq = &self.rqs[cpu.idx()];
        cpu != this && rq.nr_running == 0 && rq.curr.is_none()
    }

    /// `__smp_call_single_queue()` for a wakelisted wakeup onto `cpu`: the
    /// call-function-single IPI goes out when `llist_add()` found the
    /// queue empty (nothing pending there yet).
    pub(crate) fn count_wakelist_ipi(&mut self, cpu: CpuId) {
        if self.rqs[cpu.idx()].ttwu_pending == 0 {
            self.ipi_stats.call_function_single += 1;
        }
    }

    /// The IPI `resched_curr(cpu)` sends, counted before it marks the CPU:
    /// a reschedule IPI when the caller (`ttwu_from`, else `this_cpu`) is
    /// another CPU, TIF_NEED_RESCHED was clear, and the wakeup that asked
    /// for it did not go through the wakelist (that one sent its
    /// call-function IPI, and `sched_ttwu_pending()` reschedules locally).
    pub(crate) fn count_resched_ipi(&mut self, cpu: CpuId) {
        let from = self.ttwu_from.or(self.this_cpu);
        if from.is_some_and(|c| c != cpu)
            && !self.ttwu_wakelisted
            && !self.rqs[cpu.idx()].need_resched
        {
            self.ipi_stats.reschedule += 1;
        }
    }

    /// What the scheduler's IPIs were so far.
    pub fn ipi_stats(&self) -> &SchedIpiStats {
        &self.ipi_stats
    }

    /// Takes the mark a wakeup onto `cpu` left when 6.12 would have sent
    /// it a call-function IPI rather than a reschedule IPI (a program VM's
    /// guest sends its IPIs itself, after the scheduler step).
    pub(crate) fn take_wakelist_ipi(&mut self, cpu: CpuId) -> bool {
        std::mem::take(&mut self.rqs[cpu.idx()].wakelist_ipi)
    }
}
