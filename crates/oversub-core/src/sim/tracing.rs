//! The simulator's side of tracing: turns what the loop does into
//! `trace::TraceEvent`s for the run's sink (none by default, which costs one
//! branch per hook).

use super::Simulator;
use crate::sched::core::Switch;
use crate::sched::{CpuId, TaskId};
use crate::trace::{TraceEvent, TraceSink};

impl Simulator {
    /// Sends this run's events to `sink`.
    pub fn set_trace(&mut self, sink: Box<dyn TraceSink>) {
        self.trace_yield = self.sched.yield_stats.clone();
        self.trace = Some(sink);
    }

    #[inline]
    pub(super) fn tracing(&self) -> bool {
        self.trace.is_some()
    }

    pub(super) fn tr(&mut self, ev: TraceEvent) {
        if let Some(s) = self.trace.as_mut() {
            s.record(ev);
        }
    }

    pub(super) fn trace_switch(&mut self, sw: &Switch) {
        if self.tracing() {
            let t = self.now.0;
            self.tr(TraceEvent::SchedSwitch {
                t,
                cpu: sw.cpu.0,
                prev: sw.prev.map(|p| p.0),
                prev_runnable: sw.prev_runnable,
                next: sw.next.map(|p| p.0),
            });
        }
    }

    pub(super) fn trace_wakeup(&mut self, p: TaskId) {
        if self.tracing() {
            let t = self.now.0;
            let cpu = self.sched.tasks[p.idx()].cpu.0;
            self.tr(TraceEvent::SchedWakeup {
                t,
                pid: p.0,
                target_cpu: cpu,
            });
        }
    }

    pub(super) fn trace_exit(&mut self, cpu: CpuId, p: TaskId, reason: &'static str) {
        if self.tracing() {
            let t = self.now.0;
            self.tr(TraceEvent::KvmExit {
                t,
                cpu: cpu.0,
                pid: p.0,
                reason,
            });
        }
    }

    /// `kvm_vcpu_on_spin_target` for every yield attempt of one call.
    pub(super) fn trace_on_spin(
        &mut self,
        cpu: CpuId,
        vi: usize,
        i: usize,
        dec: &crate::kvm::on_spin::OnSpinDecision,
    ) {
        let t = self.now.0;
        let base = self.vms[vi].task_base;
        for a in &dec.attempts {
            self.tr(TraceEvent::KvmVcpuOnSpinTarget {
                t,
                cpu: cpu.0,
                pid: base + i as u32,
                target: base + a.target.0,
                tier: format!("{:?}", a.tier),
                result: a.result,
            });
        }
    }

    /// One event per counter of `[host.yield]` policy actions that moved
    /// since the last call, on the CPU of the event being handled.
    pub(super) fn trace_yield_policy(&mut self, cpu: Option<CpuId>) {
        if !self.tracing() {
            return;
        }
        let now = self.sched.yield_stats.clone();
        let was = std::mem::replace(&mut self.trace_yield, now.clone());
        let cpu = cpu.map(|c| c.0).unwrap_or(0);
        let t = self.now.0;
        for (n, name) in [
            (
                now.deboosts_applied - was.deboosts_applied,
                "sched_yield_to_tp",
            ),
            (now.credits - was.credits, "sched_yield_to_credit"),
            (now.borrows - was.borrows, "sched_yield_to_borrow"),
        ] {
            for _ in 0..n {
                self.tr(TraceEvent::YieldPolicy { t, cpu, name });
            }
        }
    }
}
