//! The Chrome trace-event JSON format (`{"traceEvents": [...]}`), which
//! ui.perfetto.dev and chrome://tracing open: one track per pCPU showing
//! which task ran ("X" slices), one per vCPU task showing where it ran, and
//! the tracepoint events as instants on the CPU's track.

use super::TraceEvent;
use serde_json::{json, Value};

const PID_CPUS: u32 = 1;
const PID_TASKS: u32 = 2;

fn us(ns: u64) -> f64 {
    ns as f64 / 1e3
}

/// Builds the JSON document. `names[pid]` is the name of host task `pid`;
/// `cpus` the number of pCPUs; `end` the end of the window (open slices are
/// closed there).
pub fn to_json(events: &[TraceEvent], names: &[String], cpus: u32, end: u64) -> Value {
    let name = |p: Option<u32>| match p {
        Some(p) => names
            .get(p as usize)
            .cloned()
            .unwrap_or_else(|| format!("task{p}")),
        None => "idle".to_string(),
    };
    let mut out: Vec<Value> = Vec::new();
    out.push(json!({"ph": "M", "name": "process_name", "pid": PID_CPUS, "args": {"name": "pCPUs (which task ran)"}}));
    out.push(json!({"ph": "M", "name": "process_name", "pid": PID_TASKS, "args": {"name": "tasks and vCPUs (where they ran)"}}));
    for c in 0..cpus {
        out.push(json!({"ph": "M", "name": "thread_name", "pid": PID_CPUS, "tid": c, "args": {"name": format!("cpu{c}")}}));
        out.push(json!({"ph": "M", "name": "thread_sort_index", "pid": PID_CPUS, "tid": c, "args": {"sort_index": c}}));
    }
    for (p, n) in names.iter().enumerate() {
        out.push(json!({"ph": "M", "name": "thread_name", "pid": PID_TASKS, "tid": p, "args": {"name": n}}));
    }
    // Open slice per CPU: (task, since).
    let mut open: Vec<Option<(u32, u64)>> = vec![None; cpus as usize];
    let first = events.first().map(|e| e.time()).unwrap_or(0);
    let close = |out: &mut Vec<Value>, cpu: u32, task: u32, since: u64, t: u64| {
        let dur = us(t.saturating_sub(since));
        out.push(json!({"ph": "X", "name": name(Some(task)), "cat": "sched", "pid": PID_CPUS, "tid": cpu, "ts": us(since), "dur": dur}));
        out.push(json!({"ph": "X", "name": format!("cpu{cpu}"), "cat": "sched", "pid": PID_TASKS, "tid": task, "ts": us(since), "dur": dur}));
    };
    for e in events {
        match e {
            TraceEvent::SchedSwitch {
                t,
                cpu,
                prev,
                prev_runnable,
                next,
            } => {
                let c = *cpu as usize;
                if c >= open.len() {
                    continue;
                }
                // A task already running when the window opened: its slice
                // starts at the window's first event.
                let since = match open[c].take() {
                    Some((task, since)) => Some((task, since)),
                    None => prev.map(|p| (p, first)),
                };
                if let Some((task, since)) = since {
                    close(&mut out, *cpu, task, since, *t);
                }
                if let Some(n) = next {
                    open[c] = Some((*n, *t));
                }
                out.push(json!({"ph": "i", "s": "t", "name": "sched_switch", "cat": "sched", "pid": PID_CPUS, "tid": cpu, "ts": us(*t),
                    "args": {"prev_comm": name(*prev), "prev_pid": prev, "prev_state": if *prev_runnable { "R" } else { "S" },
                             "next_comm": name(*next), "next_pid": next}}));
            }
            TraceEvent::SchedWakeup { t, pid, target_cpu } => {
                out.push(json!({"ph": "i", "s": "t", "name": "sched_wakeup", "cat": "sched", "pid": PID_CPUS, "tid": target_cpu, "ts": us(*t),
                    "args": {"comm": name(Some(*pid)), "pid": pid, "target_cpu": target_cpu}}));
            }
            TraceEvent::KvmExit {
                t,
                cpu,
                pid,
                reason,
            } => {
                out.push(json!({"ph": "i", "s": "t", "name": "kvm_exit", "cat": "kvm", "pid": PID_CPUS, "tid": cpu, "ts": us(*t),
                    "args": {"reason": reason, "vcpu": name(Some(*pid))}}));
            }
            TraceEvent::KvmVcpuOnSpinTarget {
                t,
                cpu,
                pid,
                target,
                tier,
                result,
            } => {
                out.push(json!({"ph": "i", "s": "t", "name": "kvm_vcpu_on_spin_target", "cat": "kvm", "pid": PID_CPUS, "tid": cpu, "ts": us(*t),
                    "args": {"vcpu": name(Some(*pid)), "target": name(Some(*target)), "tier": tier, "result": result}}));
            }
            TraceEvent::KvmApicIpi {
                t,
                cpu,
                pid,
                dest,
                vector,
                tracked,
            } => {
                out.push(json!({"ph": "i", "s": "t", "name": "kvm_apic_ipi", "cat": "kvm", "pid": PID_CPUS, "tid": cpu, "ts": us(*t),
                    "args": {"vcpu": name(Some(*pid)), "dest_vcpu": dest, "vector": vector, "tracked": tracked}}));
            }
            TraceEvent::YieldPolicy { t, cpu, name: n } => {
                out.push(json!({"ph": "i", "s": "t", "name": n, "cat": "sched", "pid": PID_CPUS, "tid": cpu, "ts": us(*t), "args": {}}));
            }
        }
    }
    for (c, o) in open.iter().enumerate() {
        if let Some((task, since)) = *o {
            close(&mut out, c as u32, task, since, end);
        }
    }
    json!({"traceEvents": out, "displayTimeUnit": "ns",
           "otherData": {"producer": "oversub", "clock": "virtual time of the simulated host"}})
}
