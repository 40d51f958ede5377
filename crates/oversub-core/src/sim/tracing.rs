//! The simulator's side of tracing: turns what the loop does into
//! `trace::TraceEvent`s for the run's sink (none by default, which costs one
//! branch per hook).

use super::Simulator;
use crate::kvm::{VcpuIdx, VmId};
use crate::sched::core::Switch;
use crate::sched::fair::vdiff;
use crate::sched::weight::scale_load_down;
use crate::sched::{CpuId, GroupId, TaskId, ROOT_GROUP};
use crate::trace::{CounterTrack, TraceEvent, TraceSink};

/// What the tracer last reported, to report changes only.
#[derive(Default)]
pub(super) struct TraceState {
    /// Per task, the CPU last traced (empty until the tasks are placed:
    /// placing a new task is not a migration).
    cpu: Vec<u32>,
    /// Per vCPU task: in guest mode since its last `kvm_entry`.
    in_guest: Vec<bool>,
    /// The counters' last values.
    counters: std::collections::BTreeMap<CounterTrack, i64>,
    /// Per VM, its APIC-write exits traced so far.
    ipi_exits: Vec<u64>,
    /// Per VM, the host task group holding all its vCPU tasks (the VM's
    /// cgroup), for its lag track; empty when the host is not an EEVDF
    /// preset (CFS has no lag, flat queues no group entities).
    vm_groups: Vec<Option<GroupId>>,
}

impl Simulator {
    /// Sends this run's events to `sink`.
    pub fn set_trace(&mut self, sink: Box<dyn TraceSink>) {
        self.trace_yield = self.host.sched.yield_stats.clone();
        self.trace_guest = self.vms.iter().map(|v| vec![None; v.n as usize]).collect();
        let eevdf = self.host.sched.fair_class().traces_group_lag();
        let vm_groups = if eevdf {
            self.vms.ids().map(|vi| self.vm_group(vi)).collect()
        } else {
            Vec::new()
        };
        self.trace_st = TraceState {
            ipi_exits: self.vms.iter().map(|v| v.ipi_exits()).collect(),
            in_guest: vec![false; self.host.sched.tasks.len()],
            vm_groups,
            ..TraceState::default()
        };
        self.trace = Some(sink);
    }

    /// The innermost non-root task group holding every vCPU task of VM `vi`
    /// (None: a vCPU is in the root group).
    fn vm_group(&self, vi: VmId) -> Option<GroupId> {
        let s = &self.host.sched;
        let in_group = |mut g: GroupId, anc: GroupId| loop {
            if g == anc {
                return true;
            }
            match s.groups[g.idx()].parent {
                Some(p) => g = p,
                None => return false,
            }
        };
        let vm = &self.vms[vi];
        let group_of = |i: VcpuIdx| s.tasks[vm.task(i).idx()].group;
        let mut g = group_of(VcpuIdx(0));
        while !VcpuIdx::all(vm.n).skip(1).all(|i| in_group(group_of(i), g)) {
            g = s.groups[g.idx()].parent?;
        }
        (g != ROOT_GROUP).then_some(g)
    }

    /// The lag of task group `g` in whole µs of CPU time: Σ over CPUs where
    /// its entity is queued of (V - v)·w / 1024 (`avg_vruntime()` without
    /// its side effect, the entity's vruntime and weight).
    fn group_lag_us(&self, g: GroupId) -> i64 {
        let s = &self.host.sched;
        let mut ns: i128 = 0;
        for se in s.groups[g.idx()].se.iter().flatten() {
            let e = &s.ses[se.idx()];
            if e.on_rq {
                let v = vdiff(s.avg_vruntime_peek(e.cfs_rq), e.vruntime());
                ns += i128::from(v) * i128::from(scale_load_down(e.load.weight)) / 1024;
            }
        }
        (ns / 1000) as i64
    }

    fn prio(&self, p: u32) -> i32 {
        120 + self.host.sched.tasks[p as usize].nice
    }

    /// After each event (and once after the tasks' first activation):
    /// `sched_migrate_task` for tasks the load balancer moved, then the
    /// counters that changed.
    pub(super) fn trace_after_event(&mut self) {
        if !self.tracing() {
            return;
        }
        let t = self.now.0;
        if self.trace_st.cpu.is_empty() {
            self.trace_st.cpu = self.host.sched.tasks.iter().map(|x| x.cpu.0).collect();
        }
        for p in 0..self.host.sched.tasks.len() {
            self.trace_migrate(p as u32);
        }
        let mut now = Vec::new();
        for (c, rq) in self.host.sched.rqs.iter().enumerate() {
            now.push((CounterTrack::NrRunning(c as u32), i64::from(rq.nr_running)));
        }
        for (vi, vm) in self.vms.iter().enumerate() {
            let (mut run, mut wait) = (0, 0);
            for i in VcpuIdx::all(vm.n) {
                let st = &self.host.sched.tasks[vm.task(i).idx()];
                if st.on_cpu {
                    run += 1;
                } else if st.state == crate::sched::TaskState::Running {
                    wait += 1;
                }
            }
            now.push((CounterTrack::VcpusRunning(vi as u32), run));
            now.push((CounterTrack::VcpusWaiting(vi as u32), wait));
            if let Some(&Some(g)) = self.trace_st.vm_groups.get(vi) {
                now.push((CounterTrack::VmLag(vi as u32), self.group_lag_us(g)));
            }
        }
        for (track, value) in now {
            if self.trace_st.counters.insert(track, value) != Some(value) {
                self.tr(TraceEvent::Counter { t, track, value });
            }
        }
    }

    /// `sched_migrate_task` when task `p` is on another CPU than last traced.
    fn trace_migrate(&mut self, p: u32) {
        let Some(&was) = self.trace_st.cpu.get(p as usize) else {
            return;
        };
        let cpu = self.host.sched.tasks[p as usize].cpu.0;
        if cpu != was {
            self.trace_st.cpu[p as usize] = cpu;
            let (t, prio) = (self.now.0, self.prio(p));
            self.tr(TraceEvent::SchedMigrateTask {
                t,
                pid: p,
                prio,
                orig_cpu: was,
                dest_cpu: cpu,
            });
        }
    }

    /// `kvm_entry` of vCPU task `p` on `cpu` when it resumes guest
    /// execution after a switch-in or an exit.
    pub(super) fn trace_entry(&mut self, cpu: CpuId, p: TaskId) {
        if !self.tracing() {
            return;
        }
        if let Some(g) = self.trace_st.in_guest.get_mut(p.idx()) {
            if !*g {
                *g = true;
                let t = self.now.0;
                self.tr(TraceEvent::KvmEntry {
                    t,
                    cpu: cpu.0,
                    pid: p.0,
                });
            }
        }
    }

    /// `kvm_vcpu_wakeup` of vCPU `i` of VM `vi`, halted `ns`.
    pub(super) fn trace_vcpu_wakeup(&mut self, vi: VmId, i: VcpuIdx, ns: u64, waited: bool) {
        if self.tracing() {
            let p = self.vms[vi].task(i);
            let (t, cpu) = (self.now.0, self.host.sched.tasks[p.idx()].cpu.0);
            self.tr(TraceEvent::KvmVcpuWakeup {
                t,
                cpu,
                pid: p.0,
                ns,
                waited,
            });
        }
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
        vi: VmId,
        from: VcpuIdx,
        dest: VcpuIdx,
        vector: u8,
        tracked: bool,
    ) {
        if self.tracing() {
            let (t, pid) = (self.now.0, self.vms[vi].task(from).0);
            // One APIC-write exit per ICR write that exited (the VM's
            // count moved since the last write traced).
            let exited =
                self.trace_st.ipi_exits.get(vi.idx()).copied() < Some(self.vms[vi].ipi_exits());
            if exited {
                self.trace_st.ipi_exits[vi.idx()] += 1;
                self.trace_exit(cpu, TaskId(pid), "APIC_WRITE");
            }
            let dest_pid = self.vms[vi].task(dest).0;
            self.tr(TraceEvent::KvmApicIpi {
                t,
                cpu: cpu.0,
                pid,
                dest: dest.0,
                dest_pid,
                vector,
                exited,
                tracked,
            });
        }
    }

    pub(super) fn trace_switch(&mut self, sw: &Switch) {
        if self.tracing() {
            let t = self.now.0;
            if let Some(n) = sw.next {
                // Switched in on another CPU than last traced: moved by the
                // balancer in this event.
                self.trace_migrate(n.0);
            }
            let prio = |p: Option<TaskId>| p.map_or(120, |p| self.prio(p.0));
            let (prev_prio, next_prio) = (prio(sw.prev), prio(sw.next));
            self.tr(TraceEvent::SchedSwitch {
                t,
                cpu: sw.cpu.0,
                prev: sw.prev.map(|p| p.0),
                prev_runnable: sw.prev_runnable,
                next: sw.next.map(|p| p.0),
                prev_prio,
                next_prio,
            });
            if let Some(g) = sw
                .prev
                .and_then(|p| self.trace_st.in_guest.get_mut(p.idx()))
            {
                *g = false;
            }
        }
    }

    /// A successful `try_to_wake_up()` of `p` run on `waker_cpu` (None: on
    /// `p`'s own CPU, a timer): `sched_waking` in the context of that
    /// CPU's current task, `sched_migrate_task` if it moved, and
    /// `sched_wakeup` unless the activation waits for the wakelist IPI
    /// ([`Self::trace_wakeup_pending`]).
    pub(super) fn trace_wakeup_from(&mut self, p: TaskId, waker_cpu: Option<CpuId>) {
        if !self.tracing() {
            return;
        }
        let t = self.now.0;
        let task = &self.host.sched.tasks[p.idx()];
        let (target_cpu, waking) = (task.cpu.0, task.waking);
        let cpu = waker_cpu.unwrap_or(CpuId(
            self.trace_st
                .cpu
                .get(p.idx())
                .copied()
                .unwrap_or(target_cpu),
        ));
        let waker = waker_cpu
            .and_then(|c| self.host.sched.rqs[c.idx()].curr)
            .map(|w| w.0);
        let prio = self.prio(p.0);
        self.tr(TraceEvent::SchedWaking {
            t,
            cpu: cpu.0,
            pid: p.0,
            prio,
            target_cpu,
            waker,
        });
        self.trace_migrate(p.0);
        if !waking {
            self.trace_wakeup_pending(p);
        }
    }

    /// A wakeup by a timer on `p`'s CPU ([`Self::trace_wakeup_from`]).
    pub(super) fn trace_wakeup(&mut self, p: TaskId) {
        self.trace_wakeup_from(p, None);
    }

    /// `sched_wakeup` of `p`: it is queued on its CPU now.
    pub(super) fn trace_wakeup_pending(&mut self, p: TaskId) {
        if self.tracing() {
            let (t, prio) = (self.now.0, self.prio(p.0));
            let target_cpu = self.host.sched.tasks[p.idx()].cpu.0;
            self.tr(TraceEvent::SchedWakeup {
                t,
                pid: p.0,
                prio,
                target_cpu,
            });
        }
    }

    pub(super) fn trace_exit(&mut self, cpu: CpuId, p: TaskId, reason: &'static str) {
        if let Some(g) = self.trace_st.in_guest.get_mut(p.idx()) {
            *g = false;
        }
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
        vi: VmId,
        i: VcpuIdx,
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
        let (now, was) = (&self.host.sched.yield_stats, &self.trace_yield);
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
    pub(super) fn trace_guest_curr(&mut self, vi: VmId, i: VcpuIdx) {
        if !self.tracing() {
            return;
        }
        let vm = &self.vms[vi];
        let Some(g) = vm.guest.as_ref() else {
            return;
        };
        let now = g.kernel.sched.rqs[i.idx()].curr.map(|t| t.0);
        let was = std::mem::replace(&mut self.trace_guest[vi.idx()][i.idx()], now);
        if was == now {
            return;
        }
        let name = |t: Option<u32>| t.map(|t| g.kernel.sched.tasks[t as usize].name.clone());
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
        let now = self.host.sched.yield_stats.clone();
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
