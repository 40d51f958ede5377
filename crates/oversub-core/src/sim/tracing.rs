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
        self.trace_guest = self.vms.iter().map(|v| vec![None; v.n as usize]).collect();
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

    /// `kvm_apic_ipi` for a guest's unicast ICR write from vCPU `from` of
    /// VM `vi` (running on `cpu`) to vCPU `dest`; `tracked`: the IPI tracker
    /// recorded it.
    pub(super) fn trace_icr(
        &mut self,
        cpu: CpuId,
        vi: usize,
        from: usize,
        dest: usize,
        vector: u8,
        tracked: bool,
    ) {
        if self.tracing() {
            let (t, pid) = (self.now.0, self.vms[vi].task(from).0);
            self.tr(TraceEvent::KvmApicIpi {
                t,
                cpu: cpu.0,
                pid,
                dest: dest as u32,
                vector,
                tracked,
            });
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
        let tasks = self.vms[vi].tasks;
        let pid = self.vms[vi].task(i).0;
        for a in &dec.attempts {
            self.tr(TraceEvent::KvmVcpuOnSpinTarget {
                t,
                cpu: cpu.0,
                pid,
                target: tasks.task(a.target).0,
                tier: format!("{:?}", a.tier),
                result: a.result,
            });
        }
        if let Some(a) = dec.attempts.iter().find(|a| a.result > 0) {
            self.trace_yield_to(cpu, pid, tasks.task(a.target).0);
        }
    }

    /// `sched_yield_to_tp` for a `yield_to()` that succeeded on `cpu`, then
    /// the policy's own events (whose count is its `levels`).
    pub(super) fn trace_yield_to(&mut self, cpu: CpuId, yielder: u32, target: u32) {
        if !self.tracing() {
            return;
        }
        let (now, was) = (&self.sched.yield_stats, &self.trace_yield);
        let levels = (now.deboosts_applied - was.deboosts_applied)
            + (now.credits - was.credits)
            + (now.borrows - was.borrows);
        let t = self.now.0;
        self.tr(TraceEvent::SchedYieldTo {
            t,
            cpu: cpu.0,
            yielder,
            target,
            levels: levels as u32,
        });
        self.trace_yield_policy(Some(cpu));
    }

    /// The guest `sched_switch` of a nested guest's vCPU `i` of VM `vi`,
    /// when its guest CPU's current thread changed since the last call
    /// (called after each pick of the guest scheduler).
    pub(super) fn trace_guest_curr(&mut self, vi: usize, i: usize) {
        if !self.tracing() {
            return;
        }
        let vm = &self.vms[vi];
        let Some(g) = vm.guest.as_ref() else {
            return;
        };
        let now = g.sched.rqs[i].curr.map(|t| t.0);
        let was = std::mem::replace(&mut self.trace_guest[vi][i], now);
        if was == now {
            return;
        }
        let name = |t: Option<u32>| t.map(|t| g.sched.tasks[t as usize].name.clone());
        let ev = TraceEvent::GuestSwitch {
            t: self.now.0,
            vcpu: vm.task(i).0,
            prev: name(was),
            next: name(now),
        };
        self.tr(ev);
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
                "sched_yield_to_penalty",
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
