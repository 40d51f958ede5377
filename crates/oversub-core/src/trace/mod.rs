//! What happened during a run, as events named after the kernel tracepoints
//! that report the same thing, and the sinks a run writes them to: none
//! (the default: no cost), a vector, and the Chrome/Perfetto JSON trace
//! format of `oversub run --trace OUT.json` (opens in ui.perfetto.dev).
//!
//! This module knows task ids and names only; it never reads the simulator.
//! [`latency`] summarises the events per task as `perf sched latency` does
//! (`oversub run --latency`), [`report`] reads a trace this module wrote
//! back into the same summary (`oversub trace report`).

pub mod chrome;
pub mod latency;
pub mod report;

/// One event. Times are virtual nanoseconds since the start of the run;
/// tasks are host task ids (vCPU tasks included).
#[derive(Clone, Debug, PartialEq)]
pub enum TraceEvent {
    /// `sched_switch`: `cpu` switched from `prev` to `next` (None = idle),
    /// with their `prio` (120 + nice for a fair task; the idle task's 120).
    SchedSwitch {
        t: u64,
        cpu: u32,
        prev: Option<u32>,
        /// prev left runnable (R) rather than sleeping (S).
        prev_runnable: bool,
        next: Option<u32>,
        prev_prio: i32,
        next_prio: i32,
    },
    /// `sched_waking`: `try_to_wake_up()` of `pid` ran on `cpu` (the
    /// tracepoint's context), in the context of task `waker` (None: a timer
    /// interrupt, or nothing running there), and chose `target_cpu`.
    SchedWaking {
        t: u64,
        cpu: u32,
        pid: u32,
        prio: i32,
        target_cpu: u32,
        waker: Option<u32>,
    },
    /// `sched_migrate_task`: `pid` moved from `orig_cpu` to `dest_cpu`
    /// (`set_task_cpu()`: a wakeup placement or the load balancer).
    SchedMigrateTask {
        t: u64,
        pid: u32,
        prio: i32,
        orig_cpu: u32,
        dest_cpu: u32,
    },
    /// `sched_wakeup`: `pid` was activated (queued) on `target_cpu`: at
    /// once, or when the wakelist IPI arrived (`sched_ttwu_pending()`).
    SchedWakeup {
        t: u64,
        pid: u32,
        prio: i32,
        target_cpu: u32,
    },
    /// `kvm_entry`: vCPU task `pid` entered guest mode on `cpu` (after it
    /// was switched in, or after an exit was handled).
    KvmEntry { t: u64, cpu: u32, pid: u32 },
    /// `kvm_vcpu_wakeup`: the halted vCPU task `pid` left
    /// `kvm_vcpu_halt()` after `ns`; `waited`: it blocked (false: halt
    /// polling saw the wakeup).
    KvmVcpuWakeup {
        t: u64,
        cpu: u32,
        pid: u32,
        ns: u64,
        waited: bool,
    },
    /// A counter track's new value (written only when it changed): the
    /// runqueue's `nr_running` per CPU, a VM's vCPUs on a CPU, its
    /// runnable vCPUs waiting for one (accruing steal time) and its lag.
    Counter {
        t: u64,
        track: CounterTrack,
        value: i64,
    },
    /// `kvm_exit` of a vCPU task on `cpu` with its exit reason as the
    /// kernel names it (`PAUSE_INSTRUCTION`, `HLT`, ...).
    KvmExit {
        t: u64,
        cpu: u32,
        pid: u32,
        reason: &'static str,
    },
    /// `kvm_vcpu_on_spin_target` (the seed series' tracepoint): one
    /// `yield_to()` attempt of `kvm_vcpu_on_spin` from `pid` to `target`,
    /// with its result (> 0 yielded, 0 refused, < 0 -ESRCH).
    KvmVcpuOnSpinTarget {
        t: u64,
        cpu: u32,
        pid: u32,
        target: u32,
        tier: String,
        result: i32,
    },
    /// `kvm_apic_ipi`: a guest IPI from `pid`'s vCPU to vCPU `dest` (its
    /// index in the VM; `dest_pid` its host task), whether the ICR write
    /// exited (`APIC_WRITE`; not with IPI virtualization) and whether the
    /// IPI tracker recorded it.
    KvmApicIpi {
        t: u64,
        cpu: u32,
        pid: u32,
        dest: u32,
        dest_pid: u32,
        vector: u8,
        exited: bool,
        tracked: bool,
    },
    /// The `[host.yield]` policy acted in `yield_to_task_fair()` on `cpu`:
    /// `sched_yield_to_penalty` (a penalty applied by a debooster: the seeds'
    /// `sched_vcpu_deboost`; the series reports it only as `levels` of
    /// `sched_yield_to_tp`), `sched_yield_to_credit` (a level credited by a
    /// lag credit / kpn-charge), `sched_yield_to_borrow` (borrow).
    YieldPolicy {
        t: u64,
        cpu: u32,
        name: &'static str,
    },
    /// `sched_yield_to_tp` (the series' bare tracepoint in
    /// `yield_to_task_fair()`): `yielder` gave the CPU to `target`; the
    /// `[host.yield]` policy acted `levels` times for it (penalties,
    /// credits or loans; 0: the plain next buddy).
    SchedYieldTo {
        t: u64,
        cpu: u32,
        yielder: u32,
        target: u32,
        levels: u32,
    },
    /// The guest kernel's `sched_switch` inside a nested guest
    /// (`[[vm]] program`): on host vCPU task `vcpu`, the guest thread
    /// `next` became current (None: the guest CPU went idle and the vCPU
    /// halts). Guest threads are named by the program.
    GuestSwitch {
        t: u64,
        vcpu: u32,
        prev: Option<String>,
        next: Option<String>,
    },
}

impl TraceEvent {
    pub fn time(&self) -> u64 {
        match *self {
            TraceEvent::SchedSwitch { t, .. }
            | TraceEvent::SchedWaking { t, .. }
            | TraceEvent::SchedMigrateTask { t, .. }
            | TraceEvent::SchedWakeup { t, .. }
            | TraceEvent::KvmEntry { t, .. }
            | TraceEvent::KvmVcpuWakeup { t, .. }
            | TraceEvent::Counter { t, .. }
            | TraceEvent::KvmExit { t, .. }
            | TraceEvent::KvmVcpuOnSpinTarget { t, .. }
            | TraceEvent::KvmApicIpi { t, .. }
            | TraceEvent::YieldPolicy { t, .. }
            | TraceEvent::SchedYieldTo { t, .. }
            | TraceEvent::GuestSwitch { t, .. } => t,
        }
    }
}

/// The counter tracks of a trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum CounterTrack {
    /// `rq->nr_running` of a CPU (queued tasks, the running one included).
    NrRunning(u32),
    /// vCPUs of VM index `vm` on a CPU.
    VcpusRunning(u32),
    /// Runnable vCPUs of VM index `vm` waiting for a CPU: the rate at
    /// which the VM accrues steal time (vCPUs).
    VcpusWaiting(u32),
    /// The lag of VM index `vm`'s cgroup on the host (EEVDF presets only),
    /// in whole µs of CPU time: Σ over CPUs where the group's entity is
    /// queued of (V - v)·w / 1024, V its cfs_rq's `avg_vruntime()`. Positive:
    /// the VM is owed service there; negative: it ran ahead.
    VmLag(u32),
}

/// Where a run writes its events.
pub trait TraceSink: Send {
    fn record(&mut self, ev: TraceEvent);
}

/// Discards everything.
pub struct NullSink;

impl TraceSink for NullSink {
    fn record(&mut self, _ev: TraceEvent) {}
}

/// Keeps the events in `[from, to)` (virtual ns), in order.
#[derive(Default)]
pub struct VecSink {
    pub from: u64,
    pub to: u64,
    pub events: Vec<TraceEvent>,
}

impl VecSink {
    pub fn window(from: u64, to: u64) -> VecSink {
        VecSink {
            from,
            to,
            events: Vec::new(),
        }
    }
}

impl TraceSink for VecSink {
    fn record(&mut self, ev: TraceEvent) {
        let t = ev.time();
        if t >= self.from && t < self.to {
            self.events.push(ev);
        }
    }
}

/// Parses a `--trace-window FROM..TO` ("100ms..200ms", "..1s", "2s..").
pub fn parse_window(s: &str) -> Result<(u64, u64), String> {
    let Some((a, b)) = s.split_once("..") else {
        return Err(format!(
            "--trace-window {s}: expected FROM..TO (e.g. 100ms..200ms, ..1s)"
        ));
    };
    let d = |x: &str, dflt: u64| -> Result<u64, String> {
        if x.trim().is_empty() {
            Ok(dflt)
        } else {
            crate::scenario::parse_duration(x.trim())
                .map(|n| n.0)
                .map_err(|m| format!("--trace-window {s}: {m}"))
        }
    };
    let (f, t) = (d(a, 0)?, d(b, u64::MAX)?);
    if f >= t {
        return Err(format!("--trace-window {s}: FROM must be before TO"));
    }
    Ok((f, t))
}

/// A `TraceSink` shared with the caller, who reads it after the run.
pub struct Shared(pub std::sync::Arc<std::sync::Mutex<VecSink>>);

impl TraceSink for Shared {
    fn record(&mut self, ev: TraceEvent) {
        if let Ok(mut v) = self.0.lock() {
            v.record(ev);
        }
    }
}

/// Every event to each of several sinks, in order (`run --trace
/// --latency`).
pub struct Tee(pub Vec<Box<dyn TraceSink>>);

impl TraceSink for Tee {
    fn record(&mut self, ev: TraceEvent) {
        if let Some((last, rest)) = self.0.split_last_mut() {
            for s in rest {
                s.record(ev.clone());
            }
            last.record(ev);
        }
    }
}

/// A sink shared with the caller, who takes it back after the run (the
/// streaming Chrome writer of `run --trace`).
pub struct SharedSink<S: TraceSink>(pub std::sync::Arc<std::sync::Mutex<Option<S>>>);

impl<S: TraceSink> TraceSink for SharedSink<S> {
    fn record(&mut self, ev: TraceEvent) {
        if let Ok(mut g) = self.0.lock() {
            if let Some(s) = g.as_mut() {
                s.record(ev);
            }
        }
    }
}
