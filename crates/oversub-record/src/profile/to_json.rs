//! Writing profile.json (`Profile::to_json`): the threads listed one by
//! one (the rest folded by comm), the futex words, the totals and the
//! per-op figures.

use super::mmap_lock::{MmapLockAcc, Site};
use super::{tlb_reason, Profile, ThreadAcc, Totals, MAX_LISTED_THREADS};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

impl Profile {
    /// profile.json's `threads[]`, `threads_folded[]`, `futexes[]` and
    /// `totals`. At most [`MAX_LISTED_THREADS`] threads are listed (the most
    /// CPU first, and every one the derivation could use); the rest are
    /// folded by comm into counts (`threads_folded`), so that a build's
    /// hundreds of short-lived processes keep the file small. `totals` and
    /// `per_op` cover every thread.
    pub fn to_json(&self, ops: Option<u64>) -> Value {
        let mut by_cpu: Vec<&ThreadAcc> = self.threads.values().collect();
        by_cpu.sort_by(|a, b| b.cpu_ns.cmp(&a.cpu_ns).then(a.tid.cmp(&b.tid)));
        let total: u64 = by_cpu.iter().map(|t| t.cpu_ns).sum();
        let derivable = by_cpu
            .iter()
            .filter(|t| {
                t.cpu_ns > 0 && t.cpu_ns as f64 >= crate::bounds::MIN_CPU_SHARE * total as f64
            })
            .count();
        let keep = MAX_LISTED_THREADS.max(derivable);
        let mut listed: Vec<&ThreadAcc> = by_cpu.iter().take(keep).copied().collect();
        listed.sort_by_key(|t| t.tid);
        let threads: Vec<Value> = listed.into_iter().map(thread_json).collect();
        let mut folded: BTreeMap<&str, [u64; 7]> = BTreeMap::new();
        for t in by_cpu.iter().skip(keep) {
            let f = folded.entry(t.comm.as_str()).or_default();
            f[0] += 1;
            f[1] += t.cpu_ns;
            f[2] += t.kernel_ns;
            f[3] += t.switches_blocked;
            f[4] += t.switches_preempted;
            f[5] += t.woken_by.values().map(|d| d.count()).sum::<u64>();
            f[6] += t.faults_user + t.faults_kernel;
        }
        let folded: Vec<Value> = folded
            .iter()
            .map(|(c, f)| {
                json!({"comm": c, "threads": f[0], "cpu_ns": f[1], "kernel_ns": f[2],
                       "switches": {"blocked": f[3], "preempted": f[4]}, "wakeups": f[5], "page_faults": f[6]})
            })
            .collect();
        let futexes: Vec<Value> = self
            .futexes
            .iter()
            .map(|((tgid, ua), f)| {
                json!({
                    "tgid": tgid,
                    "uaddr": format!("{ua:#x}"),
                    "waits": f.waits,
                    "blocked_waits": f.blocked,
                    "wakes": f.wakes,
                    "waiters": f.waiters,
                    "wakers": f.wakers,
                    "wait_ns": f.wait_ns.summary(),
                })
            })
            .collect();
        let t = self.totals();
        let mut o = Map::new();
        o.insert("wall_ns".into(), json!(self.wall_ns()));
        o.insert("first_ns".into(), json!(self.first_ns.unwrap_or(0)));
        o.insert("last_ns".into(), json!(self.last_ns));
        o.insert("events".into(), json!(self.events));
        o.insert("totals".into(), t.to_json());
        if let Some(n) = ops.filter(|&n| n > 0) {
            o.insert("per_op".into(), t.per_op(n));
        }
        o.insert("threads".into(), Value::Array(threads));
        o.insert("threads_folded".into(), Value::Array(folded));
        o.insert("futexes".into(), Value::Array(futexes));
        o.insert(
            "mmap_lock".into(),
            mmap_lock_json(self.threads.values().map(|t| &t.mmap_lock), ops),
        );
        Value::Object(o)
    }
}

/// `mmap_lock`: per call site and mode (`SITE/read`, `SITE/write`), over
/// the given threads: acquisitions (and per op), failed attempts, write
/// holds ended by a downgrade, hold and wait distributions.
fn mmap_lock_json<'a>(accs: impl Iterator<Item = &'a MmapLockAcc>, ops: Option<u64>) -> Value {
    let mut all: BTreeMap<(String, bool), Site> = BTreeMap::new();
    for a in accs {
        for (k, s) in &a.sites {
            all.entry(k.clone()).or_default().merge(s);
        }
    }
    let m: Map<String, Value> = all
        .iter()
        .map(|((site, write), s)| {
            let mut e = json!({
                "acquisitions": s.acquisitions,
                "failed": s.failed,
                "downgrades": s.downgrades,
                "hold_ns": s.hold.summary(),
                "wait_ns": s.wait.summary(),
            });
            if let (Some(n), Value::Object(o)) = (ops.filter(|&n| n > 0), &mut e) {
                o.insert("per_op".into(), json!(s.acquisitions as f64 / n as f64));
            }
            let mode = if *write { "write" } else { "read" };
            (format!("{site}/{mode}"), e)
        })
        .collect();
    Value::Object(m)
}

impl Totals {
    fn to_json(&self) -> Value {
        json!({
            "cpu_ns": self.cpu_ns,
            "kernel_ns": self.kernel_ns,
            "user_ns": self.cpu_ns.saturating_sub(self.kernel_ns),
            "switches": self.switches,
            "voluntary_switches": self.voluntary,
            "involuntary_switches": self.involuntary,
            "wakeups": self.wakeups,
            "wakeups_by_program": self.wakeups_by_program,
            "futex_waits": self.futex_waits,
            "futex_blocked_waits": self.futex_blocked,
            "page_faults": self.faults,
            "tlb_shootdowns": self.tlb_shootdowns,
            "wakeups_of_polling_idle_without_ipi": self.idle_no_ipi,
            "op_markers": self.op_marks,
            "ipis": self.ipis,
        })
    }

    fn per_op(&self, n: u64) -> Value {
        let r = |v: u64| v as f64 / n as f64;
        let ipis: BTreeMap<&String, f64> = self.ipis.iter().map(|(k, &v)| (k, r(v))).collect();
        json!({
            "ops": n,
            "cpu_ns": r(self.cpu_ns),
            "switches": r(self.switches),
            "wakeups": r(self.wakeups),
            "wakeups_by_program": r(self.wakeups_by_program),
            "futex_waits": r(self.futex_waits),
            "futex_blocked_waits": r(self.futex_blocked),
            "page_faults": r(self.faults),
            "tlb_shootdowns": r(self.tlb_shootdowns),
            "wakeups_of_polling_idle_without_ipi": r(self.idle_no_ipi),
            "ipis": ipis,
        })
    }
}

fn thread_json(t: &ThreadAcc) -> Value {
    let blocks: Map<String, Value> = t
        .blocks
        .iter()
        .map(|(c, d)| (c.to_string(), json!(d.summary())))
        .collect();
    let woken_by: Vec<Value> = t
        .woken_by
        .iter()
        .map(|(w, d)| json!({"waker": w.label(), "count": d.count(), "blocked_ns": d.summary()}))
        .collect();
    let syscalls: Map<String, Value> = t
        .syscalls
        .iter()
        .map(|(n, s)| {
            (
                n.clone(),
                json!({"count": s.kernel.count(), "kernel_ns": s.kernel.summary().brief(), "wall_ns": s.wall.summary().brief()}),
            )
        })
        .collect();
    let tlb: Map<String, Value> = t
        .tlb
        .iter()
        .map(|(r, (n, p))| (tlb_reason(*r).to_string(), json!({"events": n, "pages": p})))
        .collect();
    let ipis: Map<String, Value> = t
        .ipis
        .iter()
        .map(|(k, (n, tg))| (k.clone(), json!({"events": n, "targets": tg})))
        .collect();
    let contention: Map<String, Value> = t
        .contention
        .iter()
        .map(|(f, d)| (f.clone(), json!(d.summary())))
        .collect();
    json!({
        "tid": t.tid,
        "tgid": t.tgid,
        "comm": t.comm,
        "first_ns": t.first_ns,
        "last_ns": t.last_ns,
        "exited": t.exited,
        "cpu_ns": t.cpu_ns,
        "kernel_ns": t.kernel_ns,
        "user_ns": t.cpu_ns.saturating_sub(t.kernel_ns),
        "switches": {"blocked": t.switches_blocked, "preempted": t.switches_preempted},
        "run_bursts_ns": t.bursts.summary(),
        "blocked_by_cause_ns": blocks,
        "woken_by": woken_by,
        "wakes": t.wakes.iter().map(|(k, v)| json!({"wakee": k, "count": v})).collect::<Vec<_>>(),
        "wakes_other": t.wakes_other,
        "wakeup_latency_ns": t.wake_latency.summary(),
        "syscalls": syscalls,
        "page_faults": {"user": t.faults_user, "kernel": t.faults_kernel},
        "tlb_flush": tlb,
        "ipis_sent": ipis,
        "wakeups_of_polling_idle_without_ipi": t.idle_no_ipi,
        "op_markers": t.op_marks,
        "op_interval_ns": t.op_interval.summary(),
        "lock_contention_ns": contention,
        "mmap_lock": mmap_lock_json(std::iter::once(&t.mmap_lock), None),
        "fsync_ns": t.fsync.summary(),
        "futex": {"waits": t.futex_waits, "blocked": t.futex_blocked},
    })
}
