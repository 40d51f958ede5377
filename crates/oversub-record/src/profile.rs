//! The measured profile of a program: the trace's events folded, as they
//! stream in, into per-thread counters and bounded distributions
//! (docs/workloads.md, "oversub record", says what each field is derived
//! from). Memory is bounded by the number of threads and futex words, both
//! capped.

use crate::hist::Dist;
use crate::parse::{futex_args, Body, Line, MmapLockStep};
use std::collections::{BTreeMap, BTreeSet, HashMap};

mod from_json;
pub mod mmap_lock;
mod to_json;

pub use crate::bounds::{MAX_PROFILE_COUNT, MAX_PROFILE_NS, MAX_PROFILE_PEERS};

/// Most threads a recording follows.
pub const MAX_THREADS: usize = 4096;
/// Most distinct futex words (per process) a recording keeps.
pub const MAX_FUTEXES: usize = 65536;
/// Most threads listed one by one in profile.json (beyond those the
/// derivation could use); the rest are folded by comm.
pub const MAX_LISTED_THREADS: usize = 128;
/// Most waiters/wakers listed per futex word.
const MAX_LISTED: usize = 64;

/// Who ended a wait.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Waker {
    /// A thread of the recorded program.
    Thread(u32),
    /// Another task (a kernel thread or another program), by comm stem.
    Task(String),
    /// Interrupt context (timer expiry, I/O completion, IPI) or the idle task.
    Irq,
}

impl Waker {
    pub fn label(&self) -> String {
        match self {
            Waker::Thread(t) => format!("thread:{t}"),
            Waker::Task(c) => format!("task:{c}"),
            Waker::Irq => "irq".into(),
        }
    }
}

impl Waker {
    /// The waker a [`Waker::label`] names.
    pub fn parse(label: &str) -> Option<Waker> {
        if label == "irq" {
            Some(Waker::Irq)
        } else if let Some(t) = label.strip_prefix("thread:") {
            t.parse().ok().map(Waker::Thread)
        } else {
            label
                .strip_prefix("task:")
                .map(|c| Waker::Task(c.to_string()))
        }
    }
}

/// A comm without its instance suffix ("kworker/u8:2" -> "kworker",
/// "jbd2/sda1-8" -> "jbd2").
fn stem(comm: &str) -> String {
    comm.split(['/', ':']).next().unwrap_or(comm).to_string()
}

/// Why a thread blocked: the syscall it was in and its state.
pub fn cause(syscall: Option<&str>, state: &str) -> &'static str {
    let d = state.starts_with('D');
    match syscall {
        Some("futex") | Some("futex_waitv") => "futex",
        Some("nanosleep") | Some("clock_nanosleep") => "sleep",
        Some("fsync")
        | Some("fdatasync")
        | Some("sync_file_range")
        | Some("sync")
        | Some("syncfs") => "fsync",
        Some("poll") | Some("ppoll") | Some("select") | Some("pselect6") | Some("epoll_wait")
        | Some("epoll_pwait") | Some("epoll_pwait2") => "poll",
        Some("wait4") | Some("waitid") => "child",
        Some(
            "read" | "write" | "readv" | "writev" | "recvfrom" | "sendto" | "recvmsg" | "sendmsg"
            | "recvmmsg" | "sendmmsg" | "accept" | "accept4" | "connect",
        ) if !d => "pipe_socket",
        Some(_) if d => "io",
        None if d => "io",
        Some(_) => "other_syscall",
        None => "other",
    }
}

#[derive(Default)]
struct Sys {
    kernel: Dist,
    wall: Dist,
}

#[derive(Default)]
struct FutexObj {
    waits: u64,
    blocked: u64,
    wakes: u64,
    waiters: BTreeSet<u32>,
    wakers: BTreeSet<u32>,
    wait_ns: Dist,
}

/// A block in progress: since when, its cause, the futex word (tgid, uaddr).
type Blocked = (u64, &'static str, Option<(u32, u64)>);
/// A syscall in progress: name, entry time, CPU time at entry, the futex
/// (uaddr, command) for futex calls, whether it blocked.
type InSyscall = (String, u64, u64, Option<(u64, u32)>, bool);

/// One recorded thread.
#[derive(Default)]
pub struct ThreadAcc {
    pub tid: u32,
    pub tgid: u32,
    pub comm: String,
    pub first_ns: u64,
    pub last_ns: u64,
    on_cpu_since: Option<u64>,
    pub cpu_ns: u64,
    burst_ns: u64,
    pub bursts: Dist,
    /// Blocked since, cause, futex word.
    blocked: Option<Blocked>,
    woken_at: Option<u64>,
    /// Blocked time to the wakeup, per cause.
    pub blocks: BTreeMap<&'static str, Dist>,
    /// Blocked time to the wakeup, per waker.
    pub woken_by: BTreeMap<Waker, Dist>,
    /// Wakeups this thread did, of program threads (by tid) and others.
    pub wakes: BTreeMap<u32, u64>,
    pub wakes_other: BTreeMap<String, u64>,
    pub wake_latency: Dist,
    pub switches_blocked: u64,
    pub switches_preempted: u64,
    syscall: Option<InSyscall>,
    syscalls: BTreeMap<String, Sys>,
    pub kernel_ns: u64,
    pub faults_user: u64,
    pub faults_kernel: u64,
    pub tlb: BTreeMap<u32, (u64, i64)>,
    pub ipis: BTreeMap<String, (u64, u64)>,
    /// The thread's last event was a `tlb:tlb_flush` TLB_REMOTE_SEND_IPI
    /// (`native_flush_tlb_multi`): its next call-function IPI is that
    /// shootdown's (see `ipi_type`).
    after_remote_flush: bool,
    /// Wakeups of a polling idle CPU that sent no IPI.
    pub idle_no_ipi: u64,
    contending: HashMap<String, (u64, String)>,
    contention: BTreeMap<String, Dist>,
    /// mmap_lock acquisitions by call site (profile/mmap_lock.rs).
    pub mmap_lock: mmap_lock::MmapLockAcc,
    fsync: Dist,
    pub futex_waits: u64,
    pub futex_blocked: u64,
    pub exited: bool,
    /// Op markers (`getcpu(NULL, NULL, 0x6f70)`, docs/workloads.md "Program
    /// op markers") and the time between consecutive ones.
    pub op_marks: u64,
    last_mark: Option<u64>,
    op_interval: Dist,
}

impl ThreadAcc {
    /// Completed calls of syscall `name`.
    pub fn syscall_count(&self, name: &str) -> u64 {
        self.syscalls.get(name).map_or(0, |s| s.kernel.count())
    }

    fn cpu_at(&self, ts: u64) -> u64 {
        self.cpu_ns + self.on_cpu_since.map_or(0, |s| ts.saturating_sub(s))
    }
}

/// A reason the recording cannot go on.
#[derive(Debug, Clone, PartialEq)]
pub enum Overflow {
    Threads,
    Futexes,
}

/// The whole program's accumulated trace.
pub struct Profile {
    pub root: u32,
    pub threads: BTreeMap<u32, ThreadAcc>,
    futexes: BTreeMap<(u32, u64), FutexObj>,
    pub events: u64,
    pub first_ns: Option<u64>,
    pub last_ns: u64,
    /// CPU time of threads a profile.json folded by comm (read back by
    /// `from_json`; 0 while recording, when every thread is listed).
    pub folded_cpu_ns: u64,
}

/// An IPI's type from its callback: none is a reschedule IPI
/// (`smp_send_reschedule`), `flush_tlb_func` a TLB shootdown, anything else
/// a call-function IPI named after its callback. In 6.12 (kernel/smp.c:
/// `send_call_function_single_ipi()` and `send_call_function_ipi_mask()`;
/// the recordings' 6.18 likewise) every IPI of `smp_call_function_*` is
/// traced with the generic handler as its callback
/// (`generic_smp_call_function_single_interrupt`), not the function it
/// runs, so a shootdown's IPI is told by what comes right before it in the
/// sending thread (`after_remote_flush`): `native_flush_tlb_multi()` traces
/// `tlb_flush` TLB_REMOTE_SEND_IPI, then queues `flush_tlb_func` and sends
/// the IPI with preemption off (arch/x86/mm/tlb.c, 6.12).
fn ipi_type(callback: &str, after_remote_flush: bool) -> String {
    if callback == "0x0" || callback == "0" {
        "reschedule".into()
    } else if after_remote_flush || callback.contains("flush_tlb") {
        "tlb_shootdown".into()
    } else {
        format!("call_function:{callback}")
    }
}

impl Profile {
    pub fn new(root: u32) -> Profile {
        Profile {
            root,
            threads: BTreeMap::new(),
            futexes: BTreeMap::new(),
            events: 0,
            first_ns: None,
            last_ns: 0,
            folded_cpu_ns: 0,
        }
    }

    fn is_ours(&self, pid: u32) -> bool {
        self.threads.contains_key(&pid)
    }

    fn add_thread(&mut self, tid: u32, comm: &str, ts: u64) -> Result<(), Overflow> {
        if self.threads.contains_key(&tid) {
            return Ok(());
        }
        if self.threads.len() >= MAX_THREADS {
            return Err(Overflow::Threads);
        }
        self.threads.insert(
            tid,
            ThreadAcc {
                tid,
                tgid: tid,
                comm: comm.to_string(),
                first_ns: ts,
                last_ns: ts,
                ..ThreadAcc::default()
            },
        );
        Ok(())
    }

    /// Folds one event in.
    pub fn add(&mut self, l: &Line) -> Result<(), Overflow> {
        let ts = l.h.ts_ns;
        self.events += 1;
        self.first_ns.get_or_insert(ts);
        self.last_ns = self.last_ns.max(ts);
        if self.threads.is_empty() && l.h.pid == self.root {
            self.add_thread(self.root, l.h.comm, ts)?;
            if let Some(t) = self.threads.get_mut(&self.root) {
                t.on_cpu_since = Some(ts);
            }
        }
        if let Body::Switch {
            next_pid,
            next_comm,
            ..
        } = &l.body
        {
            if *next_pid == self.root && self.threads.is_empty() {
                self.add_thread(self.root, next_comm, ts)?;
            }
        }
        if self.threads.is_empty() {
            return Ok(());
        }
        let cur = l.h.pid;
        // Whether this is the event right after the thread's remote flush
        // (interrupt-context events in between do not count: the flush
        // sends its IPI with interrupts on).
        let mut after_remote_flush = false;
        if let Some(t) = self.threads.get_mut(&cur) {
            if !l.h.irq {
                after_remote_flush = std::mem::take(&mut t.after_remote_flush);
            }
            t.last_ns = ts;
            if let Some(g) = l.h.tgid {
                t.tgid = g;
            }
            if t.comm != l.h.comm && !l.h.comm.is_empty() && l.h.comm != "<...>" {
                t.comm = l.h.comm.to_string();
            }
        }
        match &l.body {
            Body::Fork {
                child_comm,
                child_pid,
            } => {
                if self.is_ours(cur) {
                    self.add_thread(*child_pid, child_comm, ts)?;
                }
            }
            Body::Switch {
                prev_pid,
                prev_state,
                next_pid,
                ..
            } => {
                if let Some(t) = self.threads.get_mut(prev_pid) {
                    if let Some(s) = t.on_cpu_since.take() {
                        let d = ts.saturating_sub(s);
                        t.cpu_ns += d;
                        t.burst_ns += d;
                    }
                    if prev_state.starts_with('R') {
                        t.switches_preempted += 1;
                    } else if !prev_state.starts_with('X') && !prev_state.starts_with('Z') {
                        t.switches_blocked += 1;
                        t.bursts.add(t.burst_ns);
                        t.burst_ns = 0;
                        let sys = t.syscall.as_mut();
                        let c = cause(sys.as_ref().map(|s| s.0.as_str()), prev_state);
                        let fx = match sys {
                            Some(s) if s.3.is_some() => {
                                s.4 = true;
                                s.3.map(|(ua, _)| (t.tgid, ua))
                            }
                            _ => None,
                        };
                        if c == "futex" {
                            t.futex_blocked += 1;
                        }
                        t.blocked = Some((ts, c, fx));
                    }
                }
                if let Some(t) = self.threads.get_mut(next_pid) {
                    t.on_cpu_since = Some(ts);
                    if let Some(w) = t.woken_at.take() {
                        t.wake_latency.add(ts.saturating_sub(w));
                    }
                }
            }
            Body::Waking { pid, comm } => {
                let waker = if l.h.irq || cur == 0 {
                    Waker::Irq
                } else if self.is_ours(cur) {
                    Waker::Thread(cur)
                } else {
                    Waker::Task(stem(l.h.comm))
                };
                if let Some(t) = self.threads.get_mut(pid) {
                    if let Some((since, c, fx)) = t.blocked.take() {
                        let d = ts.saturating_sub(since);
                        t.blocks.entry(c).or_default().add(d);
                        t.woken_by.entry(waker.clone()).or_default().add(d);
                        t.woken_at = Some(ts);
                        if let Some(k) = fx {
                            if let Some(f) = self.futexes.get_mut(&k) {
                                f.wait_ns.add(d);
                            }
                        }
                        if let Waker::Thread(w) = waker {
                            if let Some(wt) = self.threads.get_mut(&w) {
                                *wt.wakes.entry(*pid).or_default() += 1;
                            }
                        }
                    }
                } else if let Waker::Thread(w) = waker {
                    if let Some(wt) = self.threads.get_mut(&w) {
                        *wt.wakes_other.entry(stem(comm)).or_default() += 1;
                    }
                }
            }
            Body::Exit { pid } => {
                if let Some(t) = self.threads.get_mut(pid) {
                    t.exited = true;
                    if let Some(s) = t.on_cpu_since.take() {
                        let d = ts.saturating_sub(s);
                        t.cpu_ns += d;
                        t.burst_ns += d;
                    }
                    if t.burst_ns > 0 {
                        t.bursts.add(t.burst_ns);
                        t.burst_ns = 0;
                    }
                    // The exiting task runs on until its final switch.
                    t.on_cpu_since = Some(ts);
                }
            }
            Body::SysEnter { name, args } => {
                if let Some(t) = self.threads.get_mut(&cur) {
                    if *name == "getcpu" && is_op_mark(args) {
                        t.op_marks += 1;
                        if let Some(prev) = t.last_mark.replace(ts) {
                            t.op_interval.add(ts.saturating_sub(prev));
                        }
                    }
                    let fx = if *name == "futex" {
                        futex_args(args)
                    } else {
                        None
                    };
                    let at = t.cpu_at(ts);
                    t.syscall = Some((name.to_string(), ts, at, fx, false));
                    if let Some((ua, cmd)) = fx {
                        let key = (t.tgid, ua);
                        let waits = matches!(cmd, 0 | 6 | 9 | 11);
                        if waits {
                            t.futex_waits += 1;
                        }
                        if !self.futexes.contains_key(&key) && self.futexes.len() >= MAX_FUTEXES {
                            return Err(Overflow::Futexes);
                        }
                        let f = self.futexes.entry(key).or_default();
                        if waits {
                            f.waits += 1;
                            if f.waiters.len() < MAX_LISTED {
                                f.waiters.insert(cur);
                            }
                        } else if matches!(cmd, 1 | 3 | 4 | 5 | 7 | 10 | 12) {
                            f.wakes += 1;
                            if f.wakers.len() < MAX_LISTED {
                                f.wakers.insert(cur);
                            }
                        }
                    }
                }
            }
            Body::SysExit { name } => {
                let mut blocked_futex = None;
                if let Some(t) = self.threads.get_mut(&cur) {
                    if let Some((n, enter, at, fx, blocked)) = t.syscall.take() {
                        if n == *name {
                            let k = t.cpu_at(ts).saturating_sub(at);
                            t.kernel_ns += k;
                            let s = t.syscalls.entry(n).or_default();
                            s.kernel.add(k);
                            s.wall.add(ts.saturating_sub(enter));
                            if matches!(*name, "fsync" | "fdatasync") {
                                t.fsync.add(ts.saturating_sub(enter));
                            }
                            if blocked {
                                blocked_futex = fx.map(|(ua, _)| (t.tgid, ua));
                            }
                        }
                    }
                }
                if let Some(k) = blocked_futex {
                    if let Some(f) = self.futexes.get_mut(&k) {
                        f.blocked += 1;
                    }
                }
            }
            Body::PageFault { user } => {
                if let Some(t) = self.threads.get_mut(&cur) {
                    if *user {
                        t.faults_user += 1;
                    } else {
                        t.faults_kernel += 1;
                    }
                }
            }
            Body::TlbFlush { reason, pages } => {
                if let Some(t) = self.threads.get_mut(&cur) {
                    let e = t.tlb.entry(*reason).or_default();
                    e.0 += 1;
                    e.1 += pages;
                    t.after_remote_flush = *reason == TLB_REMOTE_SEND_IPI && !l.h.irq;
                }
            }
            Body::Ipi {
                targets,
                callsite,
                callback,
            } => {
                if let Some(t) = self.threads.get_mut(&cur) {
                    if !l.h.irq {
                        let e = t
                            .ipis
                            .entry(format!(
                                "{}@{callsite}",
                                ipi_type(callback, after_remote_flush)
                            ))
                            .or_default();
                        e.0 += 1;
                        e.1 += *targets as u64;
                    }
                }
            }
            Body::ContentionBegin { addr, flags } => {
                if let Some(t) = self.threads.get_mut(&cur) {
                    if t.contending.len() < 64 {
                        t.contending
                            .insert(addr.to_string(), (ts, flags.to_string()));
                    }
                }
            }
            Body::ContentionEnd { addr } => {
                if let Some(t) = self.threads.get_mut(&cur) {
                    if let Some((b, f)) = t.contending.remove(*addr) {
                        t.contention.entry(f).or_default().add(ts.saturating_sub(b));
                    }
                }
            }
            Body::WakeIdleNoIpi => {
                if let Some(t) = self.threads.get_mut(&cur) {
                    t.idle_no_ipi += 1;
                }
            }
            Body::MmapLock { step, mm, write } => {
                if let Some(t) = self.threads.get_mut(&cur) {
                    let site = t
                        .syscall
                        .as_ref()
                        .map_or("fault", |s| s.0.as_str())
                        .to_string();
                    match step {
                        MmapLockStep::Start => t.mmap_lock.start(mm, *write, ts, &site),
                        MmapLockStep::Acquired { success } => {
                            t.mmap_lock.acquired(mm, *write, *success, ts, &site)
                        }
                        MmapLockStep::Released => t.mmap_lock.released(mm, *write, ts),
                    }
                }
            }
            Body::Wakeup { .. } | Body::Other => {}
        }
        Ok(())
    }

    /// Closes open slices at the end of the recording.
    pub fn finish(&mut self) {
        let end = self.last_ns;
        for t in self.threads.values_mut() {
            if let Some(s) = t.on_cpu_since.take() {
                t.cpu_ns += end.saturating_sub(s);
                t.burst_ns += end.saturating_sub(s);
            }
            if t.burst_ns > 0 {
                t.bursts.add(t.burst_ns);
                t.burst_ns = 0;
            }
        }
    }

    /// A finished profile of the process `root` folded from saved trace text,
    /// one event line each, as the recorder reads them from `trace_pipe`
    /// (tests and offline folding). A line that is not an event line, or a
    /// recording past the profile's bounds, is refused with the reason.
    pub fn from_trace_lines<'a>(
        root: u32,
        lines: impl IntoIterator<Item = &'a str>,
    ) -> Result<Profile, String> {
        let mut p = Profile::new(root);
        for text in lines {
            let l = crate::parse::line(text)
                .ok_or_else(|| format!("not a trace event line: {text}"))?;
            p.add(&l).map_err(|e| format!("{e:?} at: {text}"))?;
        }
        p.finish();
        Ok(p)
    }

    pub fn wall_ns(&self) -> u64 {
        self.last_ns
            .saturating_sub(self.first_ns.unwrap_or(self.last_ns))
    }

    /// Totals over the program's threads.
    pub fn totals(&self) -> Totals {
        let mut s = Totals::default();
        for t in self.threads.values() {
            s.cpu_ns += t.cpu_ns;
            s.kernel_ns += t.kernel_ns;
            s.switches += t.switches_blocked + t.switches_preempted;
            s.voluntary += t.switches_blocked;
            s.involuntary += t.switches_preempted;
            s.wakeups += t.woken_by.values().map(|d| d.count()).sum::<u64>();
            s.wakeups_by_program += t
                .woken_by
                .iter()
                .filter(|(w, _)| matches!(w, Waker::Thread(_)))
                .map(|(_, d)| d.count())
                .sum::<u64>();
            s.futex_waits += t.futex_waits;
            s.futex_blocked += t.futex_blocked;
            s.faults += t.faults_user + t.faults_kernel;
            s.tlb_shootdowns += t.tlb.get(&TLB_REMOTE_SEND_IPI).map_or(0, |e| e.0);
            s.idle_no_ipi += t.idle_no_ipi;
            s.op_marks += t.op_marks;
            for (k, v) in &t.ipis {
                let ty = k.split('@').next().unwrap_or(k).to_string();
                *s.ipis.entry(ty).or_default() += v.1;
            }
        }
        s
    }
}

/// Is this `getcpu` call the op marker (third argument 0x6f70)?
pub fn is_op_mark(args: &str) -> bool {
    args.rsplit("unused: ")
        .next()
        .and_then(|v| u64::from_str_radix(v.trim().trim_start_matches("0x"), 16).ok())
        == Some(0x6f70)
        && args.contains("unused: ")
}

/// Program-wide sums.
#[derive(Default, Debug, Clone)]
pub struct Totals {
    pub cpu_ns: u64,
    pub kernel_ns: u64,
    pub switches: u64,
    pub voluntary: u64,
    pub involuntary: u64,
    pub wakeups: u64,
    pub wakeups_by_program: u64,
    pub futex_waits: u64,
    pub futex_blocked: u64,
    pub faults: u64,
    pub tlb_shootdowns: u64,
    pub idle_no_ipi: u64,
    pub op_marks: u64,
    /// IPI targets by type.
    pub ipis: BTreeMap<String, u64>,
}

/// `tlb:tlb_flush` reason TLB_REMOTE_SEND_IPI: a shootdown about to IPI
/// other CPUs (`native_flush_tlb_multi`).
const TLB_REMOTE_SEND_IPI: u32 = 4;

/// `tlb:tlb_flush` reasons (enum tlb_flush_reason, include/linux/mm_types.h).
pub fn tlb_reason(r: u32) -> &'static str {
    match r {
        0 => "flush_on_task_switch",
        1 => "remote_shootdown",
        2 => "local_shootdown",
        3 => "local_mm_shootdown",
        4 => "remote_send_ipi",
        5 => "remote_wrong_cpu",
        _ => "other",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The finished profile of process `root` folded from `lines`.
    fn feed(root: u32, lines: &[&str]) -> Profile {
        Profile::from_trace_lines(root, lines.iter().copied()).unwrap()
    }

    #[test]
    fn a_futex_wait_is_attributed_to_the_thread_that_ends_it() {
        let p = feed(
            10,
            &[
                "sh-10 (10) [000] ..... 1.000000: sched_process_fork: comm=sh pid=10 child_comm=w child_pid=11",
                "sh-10 (10) [000] ..... 1.000010: sys_futex(uaddr: 1000, op: 80, val: 0, utime: 0, uaddr2: 0, val3: 0)",
                "sh-10 (10) [000] d..2. 1.000020: sched_switch: prev_comm=sh prev_pid=10 prev_prio=120 prev_state=S ==> next_comm=w next_pid=11 next_prio=120",
                "w-11 (10) [000] ..... 1.000100: sys_futex(uaddr: 1000, op: 81, val: 1, utime: 0, uaddr2: 0, val3: 0)",
                "w-11 (10) [000] d..3. 1.000110: sched_waking: comm=sh pid=10 prio=120 target_cpu=000",
                "w-11 (10) [000] d..2. 1.000200: sched_switch: prev_comm=w prev_pid=11 prev_prio=120 prev_state=R+ ==> next_comm=sh next_pid=10 next_prio=120",
                "sh-10 (10) [000] ..... 1.000210: sys_futex -> 0x0",
                "sh-10 (10) [000] d.h2. 1.000300: sched_waking: comm=w pid=11 prio=120 target_cpu=000",
            ],
        );
        let sh = &p.threads[&10];
        assert_eq!(sh.switches_blocked, 1);
        assert_eq!(sh.blocks["futex"].count(), 1);
        assert_eq!(sh.woken_by[&Waker::Thread(11)].summary().sum_ns, 90_000);
        assert_eq!(p.threads[&11].wakes[&10], 1);
        // The preempted thread w was not blocked: the irq waking is no wakeup.
        assert_eq!(p.threads[&11].switches_preempted, 1);
        assert!(p.threads[&11].woken_by.is_empty());
        let f = &p.futexes[&(10, 0x1000)];
        assert_eq!((f.waits, f.blocked, f.wakes), (1, 1, 1));
        // sh ran 1.000000..1.000020 (its first event starts it) and from
        // 1.000200 to the end (1.000300).
        assert_eq!(sh.wake_latency.summary().sum_ns, 90_000);
        let t = p.totals();
        assert_eq!(t.wakeups_by_program, 1);
        assert_eq!(t.futex_waits, 1);
    }

    #[test]
    fn op_markers_are_getcpu_with_0x6f70_only() {
        assert!(is_op_mark(
            "cpup: 0x00000000, nodep: 0x00000000, unused: 0x00006f70"
        ));
        assert!(!is_op_mark(
            "cpup: 0x7ffd0000, nodep: 0x00000000, unused: 0x00000000"
        ));
        let p = feed(
            3,
            &[
                "w-3 (3) [000] ..... 1.000000: sys_getcpu(cpup: 0x00000000, nodep: 0x00000000, unused: 0x00006f70)",
                "w-3 (3) [000] ..... 1.000040: sys_getcpu(cpup: 0x00000000, nodep: 0x00000000, unused: 0x00000000)",
                "w-3 (3) [000] ..... 1.000100: sys_getcpu(cpup: 0x00000000, nodep: 0x00000000, unused: 0x00006f70)",
            ],
        );
        let t = &p.threads[&3];
        assert_eq!(t.op_marks, 2);
        assert_eq!(t.op_interval.summary().sum_ns, 100_000);
        assert_eq!(p.totals().op_marks, 2);
    }

    #[test]
    fn mmap_lock_holds_are_filed_under_the_syscall_or_the_fault() {
        let p = feed(
            3,
            &[
                "e-3 (3) [000] ...1. 1.000000: mmap_lock_start_locking: mm=00000000000000aa memcg_id=1 write=false",
                "e-3 (3) [000] ...1. 1.000001: mmap_lock_acquire_returned: mm=00000000000000aa memcg_id=1 write=false success=true",
                "e-3 (3) [000] ...1. 1.000003: mmap_lock_released: mm=00000000000000aa memcg_id=1 write=false",
                "e-3 (3) [000] ..... 1.000010: sys_madvise(start: 7f0000000000, len_in: 80000, behavior: 4)",
                "e-3 (3) [000] ...1. 1.000011: mmap_lock_start_locking: mm=00000000000000aa memcg_id=1 write=false",
                "e-3 (3) [000] ...1. 1.000012: mmap_lock_acquire_returned: mm=00000000000000aa memcg_id=1 write=false success=true",
                "e-3 (3) [000] ...1. 1.000032: mmap_lock_released: mm=00000000000000aa memcg_id=1 write=false",
                "e-3 (3) [000] ..... 1.000033: sys_madvise -> 0x0",
            ],
        );
        let a = &p.threads[&3].mmap_lock.sites;
        let f = &a[&("fault".to_string(), false)];
        assert_eq!(
            (f.acquisitions, f.hold.sum(), f.wait.sum()),
            (1, 2_000, 1_000)
        );
        let m = &a[&("madvise".to_string(), false)];
        assert_eq!((m.acquisitions, m.hold.sum()), (1, 20_000));
        let j = p.to_json(Some(2));
        assert_eq!(j["mmap_lock"]["madvise/read"]["per_op"], 0.5);
        assert_eq!(j["mmap_lock"]["fault/read"]["hold_ns"]["sum_ns"], 2_000);
    }

    #[test]
    fn a_call_function_ipi_right_after_a_remote_flush_is_its_shootdown() {
        // 6.12 traces every smp_call_function IPI with the generic handler
        // as callback: the shootdown's is the one right after the thread's
        // TLB_REMOTE_SEND_IPI; another call-function IPI, a reschedule IPI
        // and one after a flush that sent none stay what they are.
        let gen = "callback=generic_smp_call_function_single_interrupt+0x0/0x10";
        let lines = [
            "e-3 (3) [000] d..1. 1.000000: tlb_flush: pages:128 reason:remote IPI send (4)".to_string(),
            format!("e-3 (3) [000] d..1. 1.000001: ipi_send_cpu: cpu=1 callsite=on_each_cpu_cond_mask+0x20/0x60 {gen}"),
            format!("e-3 (3) [000] d..1. 1.000010: ipi_send_cpu: cpu=1 callsite=on_each_cpu_cond_mask+0x20/0x60 {gen}"),
            "e-3 (3) [000] d..1. 1.000020: ipi_send_cpu: cpu=1 callsite=try_to_wake_up+0x1/0x2 callback=0x0".to_string(),
            "e-3 (3) [000] d..1. 1.000030: tlb_flush: pages:128 reason:remote IPI send (4)".to_string(),
            "e-3 (3) [000] ..... 1.000031: sys_getpid()".to_string(),
            format!("e-3 (3) [000] d..1. 1.000040: ipi_send_cpu: cpu=1 callsite=on_each_cpu_cond_mask+0x20/0x60 {gen}"),
            "e-3 (3) [000] d..1. 1.000050: tlb_flush: pages:128 reason:remote IPI send (4)".to_string(),
            "e-3 (3) [000] dNh1. 1.000051: ipi_send_cpu: cpu=1 callsite=irq_work+0x1/0x2 callback=0x0".to_string(),
            format!("e-3 (3) [000] d..1. 1.000052: ipi_send_cpumask: cpumask=1-2 callsite=on_each_cpu_cond_mask+0x20/0x60 {gen}"),
        ];
        let p = feed(3, &lines.iter().map(String::as_str).collect::<Vec<_>>());
        let ipis = &p.totals().ipis;
        assert_eq!(ipis.get("tlb_shootdown"), Some(&3), "{ipis:?}");
        assert_eq!(
            ipis.get("call_function:generic_smp_call_function_single_interrupt"),
            Some(&2),
            "{ipis:?}"
        );
        assert_eq!(ipis.get("reschedule"), Some(&1), "{ipis:?}");
        assert_eq!(p.totals().tlb_shootdowns, 3);
    }

    #[test]
    fn causes_follow_the_syscall_and_state() {
        assert_eq!(cause(Some("futex"), "S"), "futex");
        assert_eq!(cause(Some("read"), "S"), "pipe_socket");
        assert_eq!(cause(Some("read"), "D"), "io");
        assert_eq!(cause(Some("fdatasync"), "D"), "fsync");
        assert_eq!(cause(Some("clock_nanosleep"), "S"), "sleep");
        assert_eq!(cause(None, "D"), "io");
    }
}
