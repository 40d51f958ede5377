//! The Chrome trace-event JSON format (`{"traceEvents": [...]}`), which
//! ui.perfetto.dev and chrome://tracing open: one track per pCPU showing
//! which task ran ("X" slices), one per host task and vCPU showing where it
//! ran, one per vCPU of a nested guest showing which guest thread ran on it
//! (only while the vCPU was on a pCPU), and the tracepoint events as
//! instants on the CPU's track (the guest's `sched_switch` on the vCPU's).
//!
//! The document is written as the run goes ([`ChromeWriter`] is a trace
//! sink): memory stays bounded whatever the duration, and the JSON is valid
//! once [`ChromeWriter::finish`] has closed it.
//!
//! Arrows (the format's flow events, `ph` `s`/`f`, bound to the slices of
//! the "tasks and vCPUs" tracks) join a waker to its wakee's next slice
//! (`wakeup`), a `yield_to()` caller to its target's (`yield_to`) and an
//! IPI's sender to the receiving vCPU's current or next slice (`ipi`).
//! Perfetto's JSON importer binds a flow event to the slice open on its
//! thread track when it reads the event, after sorting the events by
//! time: at one time, an `X` slice that lasts comes first, everything else
//! (a zero-length slice included) in file order. A slice is written when
//! it ends, so flow events are written once their instant is over: by
//! then a slice that began and ended at that instant (a task switched in
//! and out at once) is written before them, and binds them. A flow's
//! start is written with its end, so every start has an end (a flow still
//! waiting for its target's next slice when the trace ends is left out).
//! Counter tracks (`ph` `C`, written when the value changes) show each
//! CPU's `nr_running` and, per VM, its vCPUs on a CPU, those waiting for
//! one (accruing steal time) and its cgroup's lag on the host. A track
//! gets one value per instant, the one it settled on: the simulator
//! reports counters after each of its events, several of which can share
//! an instant, and their passing values would draw zero-width spikes.
//!
//! Thread ids are unique across the processes and start at 1 (older
//! Perfetto releases merge tid 0 with tid 1 in JSON traces); an event
//! without a `tid` (counters, process metadata) belongs to its process's
//! main thread, tid = pid, which carries no slices. There is no
//! `displayTimeUnit`: Perfetto ignores it, and its releases v4 to v21 read
//! `ts` in that unit rather than in µs. In the events'
//! fields a task's `pid` is its host task id + 1; pid 0 is the idle task
//! (`swapper/N`), as in the kernel's tracepoints.

use super::{TraceEvent, TraceSink};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::Write;

const PID_CPUS: u32 = 1;
const PID_TASKS: u32 = 2;
const PID_GUEST: u32 = 3;
const PID_VMS: u32 = 4;

/// Flows waiting for their target task's next slice, per task, at most.
const MAX_PENDING_FLOWS: usize = 64;
/// Flow events of one instant, at most (more flows are not drawn).
const MAX_INSTANT_FLOWS: usize = 4096;

/// The `pid` of host task `p` in the events' fields (0 is the idle task).
pub fn field_pid(p: Option<u32>) -> u32 {
    p.map_or(0, |p| p + 1)
}

fn us(ns: u64) -> f64 {
    ns as f64 / 1e3
}

/// Streams the JSON document to `W`. `names[pid]` is the name of host task
/// `pid`; `cpus` the number of pCPUs; events outside `[from, to)` are
/// dropped. The first write error is kept and stops further writes
/// ([`ChromeWriter::finish`] returns it).
pub struct ChromeWriter<W: Write> {
    w: W,
    names: Vec<String>,
    cpus: u32,
    from: u64,
    to: u64,
    /// Bytes written so far.
    pub bytes: u64,
    /// Elements of `traceEvents` written so far.
    items: u64,
    error: Option<std::io::Error>,
    /// The time of the first event in the window.
    first: Option<u64>,
    /// Open slice per CPU: (task, since).
    open: Vec<Option<(u32, u64)>>,
    /// Per vCPU task: the guest thread current on it, and the open guest
    /// slice (thread, since), closed when the host switches the vCPU out.
    guest_curr: BTreeMap<u32, String>,
    guest_open: BTreeMap<u32, (String, u64)>,
    /// vCPUs of nested guests given their track so far.
    guest_vcpus: std::collections::BTreeSet<u32>,
    /// VM names by VM index (the counter tracks' names).
    vms: Vec<String>,
    /// The last flow id; flows that end at a task's next slice, per task:
    /// (name, start time, source task).
    flow_id: u64,
    pending: BTreeMap<u32, Vec<(&'static str, u64, u32)>>,
    /// The CPU each task runs on (open slices), to end an IPI's flow at
    /// the receiver's current slice.
    running_on: BTreeMap<u32, u32>,
    /// The current instant (the time of the last event in the window)
    /// and its flow events, written when it is over.
    instant: u64,
    instant_flows: Vec<Value>,
    /// Counter values of the current instant, not yet written: (time,
    /// value) per track; and the last value written per track.
    counters: BTreeMap<super::CounterTrack, (u64, i64)>,
    counters_written: BTreeMap<super::CounterTrack, i64>,
    /// Each track's last value before the window opened, written at the
    /// window's first event (a counter that does not change inside the
    /// window still has its track, as a running task still has its slice).
    counters_before: BTreeMap<super::CounterTrack, i64>,
}

impl<W: Write> ChromeWriter<W> {
    /// Starts the document (its metadata) on `w`.
    pub fn new(w: W, names: Vec<String>, cpus: u32, from: u64, to: u64) -> ChromeWriter<W> {
        let mut c = ChromeWriter {
            w,
            names,
            cpus,
            from,
            to,
            bytes: 0,
            items: 0,
            error: None,
            first: None,
            open: vec![None; cpus as usize],
            guest_curr: BTreeMap::new(),
            guest_open: BTreeMap::new(),
            guest_vcpus: std::collections::BTreeSet::new(),
            vms: Vec::new(),
            flow_id: 0,
            pending: BTreeMap::new(),
            running_on: BTreeMap::new(),
            instant: 0,
            instant_flows: Vec::new(),
            counters: BTreeMap::new(),
            counters_written: BTreeMap::new(),
            counters_before: BTreeMap::new(),
        };
        c.raw("{\"traceEvents\":[\n");
        c.item(json!({"ph": "M", "name": "process_name", "pid": PID_CPUS, "args": {"name": "pCPUs (which task ran)"}}));
        c.item(json!({"ph": "M", "name": "process_name", "pid": PID_TASKS, "args": {"name": "tasks and vCPUs (where they ran)"}}));
        c.item(json!({"ph": "M", "name": "process_sort_index", "pid": PID_CPUS, "args": {"sort_index": 1}}));
        c.item(json!({"ph": "M", "name": "process_sort_index", "pid": PID_TASKS, "args": {"sort_index": 3}}));
        for cpu in 0..cpus {
            c.item(json!({"ph": "M", "name": "thread_name", "pid": PID_CPUS, "tid": c.cpu_tid(cpu), "args": {"name": format!("cpu{cpu}")}}));
            c.item(json!({"ph": "M", "name": "thread_sort_index", "pid": PID_CPUS, "tid": c.cpu_tid(cpu), "args": {"sort_index": cpu}}));
        }
        for p in 0..c.names.len() {
            let n = c.names[p].clone();
            c.item(json!({"ph": "M", "name": "thread_name", "pid": PID_TASKS, "tid": c.task_tid(p as u32), "args": {"name": n}}));
            c.item(json!({"ph": "M", "name": "thread_sort_index", "pid": PID_TASKS, "tid": c.task_tid(p as u32), "args": {"sort_index": p}}));
        }
        c
    }

    /// The VMs' names, by VM index, for their counter tracks (else
    /// `vm0`, `vm1`, ...).
    pub fn with_vm_names(mut self, vms: Vec<String>) -> Self {
        self.vms = vms;
        self
    }

    fn vm_name(&self, vm: u32) -> String {
        self.vms
            .get(vm as usize)
            .cloned()
            .unwrap_or_else(|| format!("vm{vm}"))
    }

    /// `comm` of a task as the tracepoints print it (`swapper/CPU` for idle).
    fn comm(&self, p: Option<u32>, cpu: u32) -> String {
        match p {
            Some(_) => self.name(p),
            None => format!("swapper/{cpu}"),
        }
    }

    /// A flow `name` from task `from`'s current slice (it runs on `cpu`)
    /// at `t` to `to`'s current slice (`to_now`) or to its next one.
    fn flow(&mut self, name: &'static str, t: u64, cpu: u32, from: u32, to: u32, to_now: bool) {
        self.adopt(cpu, from);
        if from == to {
            return;
        }
        if to_now {
            self.flow_pair(name, t, from, t, to);
        } else {
            let queued = self.pending.entry(to).or_default();
            if queued.len() < MAX_PENDING_FLOWS {
                queued.push((name, t, from));
            }
        }
    }

    /// Both events of a flow from `from`'s slice at `t0` to `to`'s at
    /// `t1`, queued for the end of the current instant.
    fn flow_pair(&mut self, name: &str, t0: u64, from: u32, t1: u64, to: u32) {
        if self.instant_flows.len() + 2 > MAX_INSTANT_FLOWS {
            return;
        }
        self.flow_id += 1;
        let id = self.flow_id;
        let (a, b) = (self.task_tid(from), self.task_tid(to));
        self.instant_flows.push(json!({"ph": "s", "name": name, "cat": "flow", "id": id, "pid": PID_TASKS, "tid": a, "ts": us(t0)}));
        self.instant_flows.push(json!({"ph": "f", "bp": "e", "name": name, "cat": "flow", "id": id, "pid": PID_TASKS, "tid": b, "ts": us(t1)}));
    }

    /// Task `p` acts on `cpu` (wakes, yields, sends an IPI): when the
    /// window shows nothing running there, it has run there since the
    /// window opened, and its slice starts there (as a `sched_switch`
    /// that switches it out would make it).
    fn adopt(&mut self, cpu: u32, p: u32) {
        let c = cpu as usize;
        if c >= self.open.len() || self.open[c].is_some() || self.running_on.contains_key(&p) {
            return;
        }
        if let Some(first) = self.first {
            self.open[c] = Some((p, first));
            self.running_on.insert(p, cpu);
        }
    }

    /// The end of an instant: its flow events, then its counters' values.
    fn flush_instant(&mut self) {
        for v in std::mem::take(&mut self.instant_flows) {
            self.item(v);
        }
        self.flush_counters();
    }

    fn name(&self, p: Option<u32>) -> String {
        match p {
            Some(p) => self
                .names
                .get(p as usize)
                .cloned()
                .unwrap_or_else(|| format!("task{p}")),
            None => "idle".to_string(),
        }
    }
    fn cpu_tid(&self, c: u32) -> u32 {
        1 + c
    }
    fn task_tid(&self, p: u32) -> u32 {
        1 + self.cpus + p
    }
    fn guest_tid(&self, p: u32) -> u32 {
        1 + self.cpus + self.names.len() as u32 + p
    }

    fn raw(&mut self, s: &str) {
        if self.error.is_none() {
            match self.w.write_all(s.as_bytes()) {
                Ok(()) => self.bytes += s.len() as u64,
                Err(e) => self.error = Some(e),
            }
        }
    }

    /// One element of `traceEvents` (every element but the first is
    /// preceded by a comma).
    fn item(&mut self, v: Value) {
        let sep = if self.items > 0 { ",\n" } else { "" };
        self.items += 1;
        let text = format!("{sep}{v}");
        self.raw(&text);
    }

    fn close_guest(&mut self, v: u32, t: u64) {
        if let Some((th, since)) = self.guest_open.remove(&v) {
            let tid = self.guest_tid(v);
            self.item(json!({"ph": "X", "name": th, "cat": "guest", "pid": PID_GUEST, "tid": tid, "ts": us(since), "dur": us(t.saturating_sub(since))}));
        }
    }

    fn close(&mut self, cpu: u32, task: u32, since: u64, t: u64) {
        let dur = us(t.saturating_sub(since));
        let (n, ct, tt) = (
            self.name(Some(task)),
            self.cpu_tid(cpu),
            self.task_tid(task),
        );
        self.item(json!({"ph": "X", "name": n, "cat": "sched", "pid": PID_CPUS, "tid": ct, "ts": us(since), "dur": dur}));
        self.item(json!({"ph": "X", "name": format!("cpu{cpu}"), "cat": "sched", "pid": PID_TASKS, "tid": tt, "ts": us(since), "dur": dur}));
    }

    /// Writes the counter values held for the current instant (those that
    /// differ from the track's last written value), in track order.
    fn flush_counters(&mut self) {
        use super::CounterTrack;
        let held = std::mem::take(&mut self.counters);
        for (track, (t, value)) in held {
            if self.counters_written.insert(track, value) == Some(value) {
                continue;
            }
            let (pid, name, key) = match track {
                CounterTrack::NrRunning(c) => (PID_CPUS, format!("cpu{c}"), "nr_running"),
                CounterTrack::VcpusRunning(v) => (PID_VMS, self.vm_name(v), "vcpus running"),
                CounterTrack::VcpusWaiting(v) => {
                    (PID_VMS, self.vm_name(v), "vcpus waiting (steal)")
                }
                CounterTrack::VmLag(v) => (PID_VMS, self.vm_name(v), "lag (us)"),
            };
            let mut args = serde_json::Map::new();
            args.insert(key.to_string(), json!(value));
            self.item(json!({"ph": "C", "name": name, "cat": "counter", "pid": pid, "ts": us(t), "args": args}));
        }
    }

    /// The tracks of nested guests' vCPUs (those with a guest switch), in
    /// vCPU order; written at the end, when they are all known (metadata
    /// may stand anywhere in the document).
    fn guest_tracks(&mut self) {
        if self.guest_vcpus.is_empty() {
            return;
        }
        self.item(json!({"ph": "M", "name": "process_name", "pid": PID_GUEST, "args": {"name": "nested guests: which guest thread each vCPU ran"}}));
        self.item(json!({"ph": "M", "name": "process_sort_index", "pid": PID_GUEST, "args": {"sort_index": 2}}));
        let vcpus: Vec<u32> = self.guest_vcpus.iter().copied().collect();
        for v in vcpus {
            let (n, tid) = (format!("{} guest", self.name(Some(v))), self.guest_tid(v));
            self.item(json!({"ph": "M", "name": "thread_name", "pid": PID_GUEST, "tid": tid, "args": {"name": n}}));
            self.item(json!({"ph": "M", "name": "thread_sort_index", "pid": PID_GUEST, "tid": tid, "args": {"sort_index": v}}));
        }
    }

    /// Writes one event (in the window).
    pub fn event(&mut self, e: &TraceEvent) {
        let t0 = e.time();
        if t0 < self.from {
            if let TraceEvent::Counter { track, value, .. } = e {
                self.counters_before.insert(*track, *value);
            }
            return;
        }
        if t0 >= self.to || self.error.is_some() {
            return;
        }
        let first = match self.first {
            Some(f) => f,
            None => {
                self.first = Some(t0);
                for (track, value) in std::mem::take(&mut self.counters_before) {
                    self.counters.insert(track, (t0, value));
                }
                t0
            }
        };
        if t0 > self.instant {
            self.flush_instant();
            self.instant = t0;
        }
        match e {
            TraceEvent::SchedSwitch {
                t,
                cpu,
                prev,
                prev_runnable,
                next,
                prev_prio,
                next_prio,
            } => {
                let c = *cpu as usize;
                if c >= self.open.len() {
                    return;
                }
                // A task already running when the window opened: its slice
                // starts at the window's first event.
                let since = match self.open[c].take() {
                    Some((task, since)) => Some((task, since)),
                    None => prev.map(|p| (p, first)),
                };
                if let Some((task, since)) = since {
                    self.close(*cpu, task, since, *t);
                }
                if let Some(n) = next {
                    self.open[c] = Some((*n, *t));
                }
                if let Some(p) = prev {
                    self.close_guest(*p, *t);
                    self.running_on.remove(p);
                }
                if let Some(n) = next {
                    self.running_on.insert(*n, *cpu);
                    for (name, t0, from) in self.pending.remove(n).unwrap_or_default() {
                        self.flow_pair(name, t0, from, *t, *n);
                    }
                }
                if let Some(n) = next {
                    if let Some(th) = self.guest_curr.get(n).cloned() {
                        self.guest_open.insert(*n, (th, *t));
                    }
                }
                let (pc, nc, tid) = (
                    self.comm(*prev, *cpu),
                    self.comm(*next, *cpu),
                    self.cpu_tid(*cpu),
                );
                // The idle task's prev_state is R (TASK_RUNNING), as the
                // kernel prints it.
                let state = if *prev_runnable || prev.is_none() {
                    "R"
                } else {
                    "S"
                };
                self.item(json!({"ph": "i", "s": "t", "name": "sched_switch", "cat": "sched", "pid": PID_CPUS, "tid": tid, "ts": us(*t),
                    "args": {"prev_comm": pc, "prev_pid": field_pid(*prev), "prev_prio": prev_prio, "prev_state": state,
                             "next_comm": nc, "next_pid": field_pid(*next), "next_prio": next_prio}}));
            }
            TraceEvent::SchedWaking {
                t,
                cpu,
                pid,
                prio,
                target_cpu,
                waker,
            } => {
                let (n, tid) = (self.name(Some(*pid)), self.cpu_tid(*cpu));
                self.item(json!({"ph": "i", "s": "t", "name": "sched_waking", "cat": "sched", "pid": PID_CPUS, "tid": tid, "ts": us(*t),
                    "args": {"comm": n, "pid": field_pid(Some(*pid)), "prio": prio, "target_cpu": target_cpu,
                             "common_pid": field_pid(*waker)}}));
                if let Some(w) = waker {
                    self.flow("wakeup", *t, *cpu, *w, *pid, false);
                }
            }
            TraceEvent::SchedMigrateTask {
                t,
                pid,
                prio,
                orig_cpu,
                dest_cpu,
            } => {
                let (n, tid) = (self.name(Some(*pid)), self.cpu_tid(*dest_cpu));
                self.item(json!({"ph": "i", "s": "t", "name": "sched_migrate_task", "cat": "sched", "pid": PID_CPUS, "tid": tid, "ts": us(*t),
                    "args": {"comm": n, "pid": field_pid(Some(*pid)), "prio": prio, "orig_cpu": orig_cpu, "dest_cpu": dest_cpu}}));
            }
            TraceEvent::SchedWakeup {
                t,
                pid,
                prio,
                target_cpu,
            } => {
                let (n, tid) = (self.name(Some(*pid)), self.cpu_tid(*target_cpu));
                self.item(json!({"ph": "i", "s": "t", "name": "sched_wakeup", "cat": "sched", "pid": PID_CPUS, "tid": tid, "ts": us(*t),
                    "args": {"comm": n, "pid": field_pid(Some(*pid)), "prio": prio, "target_cpu": target_cpu}}));
            }
            TraceEvent::KvmEntry { t, cpu, pid } => {
                let (n, tid) = (self.name(Some(*pid)), self.cpu_tid(*cpu));
                self.item(json!({"ph": "i", "s": "t", "name": "kvm_entry", "cat": "kvm", "pid": PID_CPUS, "tid": tid, "ts": us(*t),
                    "args": {"vcpu": n, "pid": field_pid(Some(*pid))}}));
            }
            TraceEvent::KvmVcpuWakeup {
                t,
                cpu,
                pid,
                ns,
                waited,
            } => {
                let (n, tid) = (self.name(Some(*pid)), self.cpu_tid(*cpu));
                self.item(json!({"ph": "i", "s": "t", "name": "kvm_vcpu_wakeup", "cat": "kvm", "pid": PID_CPUS, "tid": tid, "ts": us(*t),
                    "args": {"vcpu": n, "pid": field_pid(Some(*pid)), "ns": ns, "waited": waited, "valid": true}}));
            }
            TraceEvent::Counter { t, track, value } => {
                self.counters.insert(*track, (*t, *value));
            }
            TraceEvent::KvmExit {
                t,
                cpu,
                pid,
                reason,
            } => {
                let (n, tid) = (self.name(Some(*pid)), self.cpu_tid(*cpu));
                self.item(json!({"ph": "i", "s": "t", "name": "kvm_exit", "cat": "kvm", "pid": PID_CPUS, "tid": tid, "ts": us(*t),
                    "args": {"reason": reason, "vcpu": n, "pid": field_pid(Some(*pid))}}));
            }
            TraceEvent::KvmVcpuOnSpinTarget {
                t,
                cpu,
                pid,
                target,
                tier,
                result,
            } => {
                let (n, tn, tid) = (
                    self.name(Some(*pid)),
                    self.name(Some(*target)),
                    self.cpu_tid(*cpu),
                );
                self.item(json!({"ph": "i", "s": "t", "name": "kvm_vcpu_on_spin_target", "cat": "kvm", "pid": PID_CPUS, "tid": tid, "ts": us(*t),
                    "args": {"vcpu": n, "pid": field_pid(Some(*pid)), "target": tn, "target_pid": field_pid(Some(*target)), "tier": tier, "result": result}}));
            }
            TraceEvent::KvmApicIpi {
                t,
                cpu,
                pid,
                dest,
                dest_pid,
                vector,
                exited,
                tracked,
            } => {
                let (n, tid) = (self.name(Some(*pid)), self.cpu_tid(*cpu));
                self.item(json!({"ph": "i", "s": "t", "name": "kvm_apic_ipi", "cat": "kvm", "pid": PID_CPUS, "tid": tid, "ts": us(*t),
                    "args": {"vcpu": n, "pid": field_pid(Some(*pid)), "dest_vcpu": dest, "dest_pid": field_pid(Some(*dest_pid)),
                             "vector": vector, "exited": exited, "tracked": tracked}}));
                let now = self.running_on.contains_key(dest_pid);
                self.flow("ipi", *t, *cpu, *pid, *dest_pid, now);
            }
            TraceEvent::YieldPolicy { t, cpu, name: n } => {
                let tid = self.cpu_tid(*cpu);
                self.item(json!({"ph": "i", "s": "t", "name": n, "cat": "sched", "pid": PID_CPUS, "tid": tid, "ts": us(*t), "args": {}}));
            }
            TraceEvent::SchedYieldTo {
                t,
                cpu,
                yielder,
                target,
                levels,
            } => {
                let (y, tn, tid) = (
                    self.name(Some(*yielder)),
                    self.name(Some(*target)),
                    self.cpu_tid(*cpu),
                );
                self.item(json!({"ph": "i", "s": "t", "name": "sched_yield_to_tp", "cat": "sched", "pid": PID_CPUS, "tid": tid, "ts": us(*t),
                    "args": {"yielder": y, "yielder_pid": field_pid(Some(*yielder)), "target": tn,
                             "target_pid": field_pid(Some(*target)), "levels": levels}}));
                self.flow("yield_to", *t, *cpu, *yielder, *target, false);
            }
            TraceEvent::GuestSwitch {
                t,
                vcpu,
                prev,
                next,
            } => {
                self.guest_vcpus.insert(*vcpu);
                self.close_guest(*vcpu, *t);
                match next {
                    Some(th) => {
                        self.guest_curr.insert(*vcpu, th.clone());
                        self.guest_open.insert(*vcpu, (th.clone(), *t));
                    }
                    None => {
                        self.guest_curr.remove(vcpu);
                    }
                }
                let comm = |x: &Option<String>| x.clone().unwrap_or_else(|| "swapper".into());
                let (vn, tid) = (self.name(Some(*vcpu)), self.guest_tid(*vcpu));
                self.item(json!({"ph": "i", "s": "t", "name": "sched_switch", "cat": "guest", "pid": PID_GUEST, "tid": tid, "ts": us(*t),
                    "args": {"prev_comm": comm(prev), "next_comm": comm(next), "vcpu": vn}}));
            }
        }
    }

    /// Closes the slices still open at `end` (the end of the window) and
    /// the document; flushes. Returns the writer, or the first write error.
    pub fn finish(mut self, end: u64) -> std::io::Result<W> {
        for c in 0..self.open.len() {
            if let Some((task, since)) = self.open[c] {
                self.close(c as u32, task, since, end);
            }
        }
        self.flush_instant();
        let still: Vec<u32> = self.guest_open.keys().copied().collect();
        for v in still {
            self.close_guest(v, end);
        }
        self.guest_tracks();
        if !self.vms.is_empty() {
            self.item(json!({"ph": "M", "name": "process_name", "pid": PID_VMS, "args": {"name": "VMs (vCPUs running, waiting)"}}));
            self.item(json!({"ph": "M", "name": "process_sort_index", "pid": PID_VMS, "args": {"sort_index": 0}}));
        }
        let other = json!({"producer": "oversub", "clock": "virtual time of the simulated host",
            "cpus": self.cpus, "end_ns": end});
        self.raw(&format!("\n],\"otherData\":{other}}}\n"));
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        self.w.flush()?;
        Ok(self.w)
    }
}

impl<W: Write + Send> TraceSink for ChromeWriter<W> {
    fn record(&mut self, ev: TraceEvent) {
        self.event(&ev);
    }
}

/// The whole document for `events` in memory (tests, small traces).
pub fn to_json(events: &[TraceEvent], names: &[String], cpus: u32, end: u64) -> Value {
    let mut w = ChromeWriter::new(Vec::new(), names.to_vec(), cpus, 0, u64::MAX);
    for e in events {
        w.event(e);
    }
    let bytes = w.finish(end).unwrap_or_default();
    serde_json::from_slice(&bytes).unwrap_or(Value::Null)
}
