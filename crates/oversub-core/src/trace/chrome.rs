//! The Chrome trace-event JSON format (`{"traceEvents": [...]}`), which
//! ui.perfetto.dev and chrome://tracing open: one track per pCPU showing
//! which task ran ("X" slices), one per host task and vCPU showing where it
//! ran, one per vCPU of a nested guest showing which guest thread ran on it
//! (only while the vCPU was on a pCPU), and the tracepoint events as
//! instants on the CPU's track (the guest's `sched_switch` on the vCPU's).
//!
//! Thread ids are unique across the three processes and start at 1 (older
//! Perfetto releases merge tid 0 with tid 1 in JSON traces).

use super::TraceEvent;
use serde_json::{json, Value};
use std::collections::BTreeMap;

const PID_CPUS: u32 = 1;
const PID_TASKS: u32 = 2;
const PID_GUEST: u32 = 3;

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
    let cpu_tid = |c: u32| 1 + c;
    let task_tid = |p: u32| 1 + cpus + p;
    let guest_tid = |p: u32| 1 + cpus + names.len() as u32 + p;
    let mut out: Vec<Value> = Vec::new();
    out.push(json!({"ph": "M", "name": "process_name", "pid": PID_CPUS, "args": {"name": "pCPUs (which task ran)"}}));
    out.push(json!({"ph": "M", "name": "process_name", "pid": PID_TASKS, "args": {"name": "tasks and vCPUs (where they ran)"}}));
    out.push(json!({"ph": "M", "name": "process_sort_index", "pid": PID_CPUS, "args": {"sort_index": 1}}));
    out.push(json!({"ph": "M", "name": "process_sort_index", "pid": PID_TASKS, "args": {"sort_index": 3}}));
    for c in 0..cpus {
        out.push(json!({"ph": "M", "name": "thread_name", "pid": PID_CPUS, "tid": cpu_tid(c), "args": {"name": format!("cpu{c}")}}));
        out.push(json!({"ph": "M", "name": "thread_sort_index", "pid": PID_CPUS, "tid": cpu_tid(c), "args": {"sort_index": c}}));
    }
    for (p, n) in names.iter().enumerate() {
        out.push(json!({"ph": "M", "name": "thread_name", "pid": PID_TASKS, "tid": task_tid(p as u32), "args": {"name": n}}));
        out.push(json!({"ph": "M", "name": "thread_sort_index", "pid": PID_TASKS, "tid": task_tid(p as u32), "args": {"sort_index": p}}));
    }
    // vCPUs of nested guests: those with a guest sched_switch.
    let mut guest_vcpus: Vec<u32> = events
        .iter()
        .filter_map(|e| match e {
            TraceEvent::GuestSwitch { vcpu, .. } => Some(*vcpu),
            _ => None,
        })
        .collect();
    guest_vcpus.sort_unstable();
    guest_vcpus.dedup();
    if !guest_vcpus.is_empty() {
        out.push(json!({"ph": "M", "name": "process_name", "pid": PID_GUEST, "args": {"name": "nested guests: which guest thread each vCPU ran"}}));
        out.push(json!({"ph": "M", "name": "process_sort_index", "pid": PID_GUEST, "args": {"sort_index": 2}}));
    }
    for &v in &guest_vcpus {
        out.push(json!({"ph": "M", "name": "thread_name", "pid": PID_GUEST, "tid": guest_tid(v), "args": {"name": format!("{} guest", name(Some(v)))}}));
        out.push(json!({"ph": "M", "name": "thread_sort_index", "pid": PID_GUEST, "tid": guest_tid(v), "args": {"sort_index": v}}));
    }
    // Per vCPU task: the guest thread current on it, and the open guest
    // slice (thread, since), closed when the host switches the vCPU out.
    let mut guest_curr: BTreeMap<u32, String> = BTreeMap::new();
    let mut guest_open: BTreeMap<u32, (String, u64)> = BTreeMap::new();
    let close_guest = |out: &mut Vec<Value>,
                       open: &mut BTreeMap<u32, (String, u64)>,
                       v: u32,
                       t: u64| {
        if let Some((th, since)) = open.remove(&v) {
            out.push(json!({"ph": "X", "name": th, "cat": "guest", "pid": PID_GUEST, "tid": guest_tid(v), "ts": us(since), "dur": us(t.saturating_sub(since))}));
        }
    };
    // Open slice per CPU: (task, since).
    let mut open: Vec<Option<(u32, u64)>> = vec![None; cpus as usize];
    let first = events.first().map(|e| e.time()).unwrap_or(0);
    let close = |out: &mut Vec<Value>, cpu: u32, task: u32, since: u64, t: u64| {
        let dur = us(t.saturating_sub(since));
        out.push(json!({"ph": "X", "name": name(Some(task)), "cat": "sched", "pid": PID_CPUS, "tid": cpu_tid(cpu), "ts": us(since), "dur": dur}));
        out.push(json!({"ph": "X", "name": format!("cpu{cpu}"), "cat": "sched", "pid": PID_TASKS, "tid": task_tid(task), "ts": us(since), "dur": dur}));
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
                if let Some(p) = prev {
                    close_guest(&mut out, &mut guest_open, *p, *t);
                }
                if let Some(n) = next {
                    if let Some(th) = guest_curr.get(n) {
                        guest_open.insert(*n, (th.clone(), *t));
                    }
                }
                out.push(json!({"ph": "i", "s": "t", "name": "sched_switch", "cat": "sched", "pid": PID_CPUS, "tid": cpu_tid(*cpu), "ts": us(*t),
                    "args": {"prev_comm": name(*prev), "prev_pid": prev, "prev_state": if *prev_runnable { "R" } else { "S" },
                             "next_comm": name(*next), "next_pid": next}}));
            }
            TraceEvent::SchedWakeup { t, pid, target_cpu } => {
                out.push(json!({"ph": "i", "s": "t", "name": "sched_wakeup", "cat": "sched", "pid": PID_CPUS, "tid": cpu_tid(*target_cpu), "ts": us(*t),
                    "args": {"comm": name(Some(*pid)), "pid": pid, "target_cpu": target_cpu}}));
            }
            TraceEvent::KvmExit {
                t,
                cpu,
                pid,
                reason,
            } => {
                out.push(json!({"ph": "i", "s": "t", "name": "kvm_exit", "cat": "kvm", "pid": PID_CPUS, "tid": cpu_tid(*cpu), "ts": us(*t),
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
                out.push(json!({"ph": "i", "s": "t", "name": "kvm_vcpu_on_spin_target", "cat": "kvm", "pid": PID_CPUS, "tid": cpu_tid(*cpu), "ts": us(*t),
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
                out.push(json!({"ph": "i", "s": "t", "name": "kvm_apic_ipi", "cat": "kvm", "pid": PID_CPUS, "tid": cpu_tid(*cpu), "ts": us(*t),
                    "args": {"vcpu": name(Some(*pid)), "dest_vcpu": dest, "vector": vector, "tracked": tracked}}));
            }
            TraceEvent::YieldPolicy { t, cpu, name: n } => {
                out.push(json!({"ph": "i", "s": "t", "name": n, "cat": "sched", "pid": PID_CPUS, "tid": cpu_tid(*cpu), "ts": us(*t), "args": {}}));
            }
            TraceEvent::SchedYieldTo {
                t,
                cpu,
                yielder,
                target,
                levels,
            } => {
                out.push(json!({"ph": "i", "s": "t", "name": "sched_yield_to_tp", "cat": "sched", "pid": PID_CPUS, "tid": cpu_tid(*cpu), "ts": us(*t),
                    "args": {"yielder": name(Some(*yielder)), "target": name(Some(*target)), "levels": levels}}));
            }
            TraceEvent::GuestSwitch {
                t,
                vcpu,
                prev,
                next,
            } => {
                close_guest(&mut out, &mut guest_open, *vcpu, *t);
                match next {
                    Some(th) => {
                        guest_curr.insert(*vcpu, th.clone());
                        guest_open.insert(*vcpu, (th.clone(), *t));
                    }
                    None => {
                        guest_curr.remove(vcpu);
                    }
                }
                let comm = |x: &Option<String>| x.clone().unwrap_or_else(|| "swapper".into());
                out.push(json!({"ph": "i", "s": "t", "name": "sched_switch", "cat": "guest", "pid": PID_GUEST, "tid": guest_tid(*vcpu), "ts": us(*t),
                    "args": {"prev_comm": comm(prev), "next_comm": comm(next), "vcpu": name(Some(*vcpu))}}));
            }
        }
    }
    for (c, o) in open.iter().enumerate() {
        if let Some((task, since)) = *o {
            close(&mut out, c as u32, task, since, end);
        }
    }
    let still: Vec<u32> = guest_open.keys().copied().collect();
    for v in still {
        close_guest(&mut out, &mut guest_open, v, end);
    }
    json!({"traceEvents": out, "displayTimeUnit": "ns",
           "otherData": {"producer": "oversub", "clock": "virtual time of the simulated host"}})
}
