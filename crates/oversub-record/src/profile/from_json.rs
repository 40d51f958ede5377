//! Reading profile.json back (`Profile::from_json`): the fields the
//! derivation uses, each number bounded, errors naming the field.

use super::{
    tlb_reason, Profile, Sys, ThreadAcc, Waker, MAX_PROFILE_COUNT, MAX_PROFILE_NS,
    MAX_PROFILE_PEERS, MAX_THREADS,
};
use crate::hist::Dist;
use serde_json::Value;

impl Profile {
    /// The profile a profile.json describes, as far as the derivation
    /// (derive.rs) reads it: per thread its identity, lifetime, CPU time,
    /// run bursts, blocks by waker, wakeups done and syscall counts. So a
    /// change to the derivation re-derives committed recordings without
    /// re-recording them (`oversub derive`). Errors name the field.
    pub fn from_json(v: &Value) -> Result<Profile, String> {
        // Every number is bounded (so that the derivation's arithmetic
        // cannot overflow): timestamps to u64, tids to u32, times to
        // MAX_PROFILE_NS, counts to MAX_PROFILE_COUNT.
        let within = |o: &Value, k: &str, at: &str, max: u64, what: &str| {
            let v = o
                .get(k)
                .ok_or_else(|| format!("{at}.{k}: missing: allowed {what}"))?;
            v.as_u64().filter(|&n| n <= max).ok_or_else(|| {
                format!(
                    "{at}.{k}: {}: allowed {what}",
                    oversub::limits::echo(&v.to_string())
                )
            })
        };
        let ts =
            |o: &Value, k: &str, at: &str| within(o, k, at, u64::MAX, "a non-negative integer");
        let id = |o: &Value, k: &str, at: &str| {
            within(o, k, at, u64::from(u32::MAX), "an id 0 ..= 4294967295").map(|n| n as u32)
        };
        let ns =
            |o: &Value, k: &str, at: &str| within(o, k, at, MAX_PROFILE_NS, "a time 0 ..= 2^50 ns");
        let u = |o: &Value, k: &str, at: &str| {
            within(o, k, at, MAX_PROFILE_COUNT, "a count 0 ..= 2^36")
        };
        let threads = v
            .get("threads")
            .and_then(Value::as_array)
            .ok_or("threads: expected an array")?;
        if threads.len() > MAX_THREADS {
            return Err(format!(
                "threads: {} threads: allowed at most {MAX_THREADS}",
                threads.len()
            ));
        }
        let root = threads
            .first()
            .map_or(Ok(0), |t| id(t, "tid", "threads[0]"))?;
        let mut p = Profile::new(root);
        for (i, t) in threads.iter().enumerate() {
            let at = format!("threads[{i}]");
            let tid = id(t, "tid", &at)?;
            let mut a = ThreadAcc {
                tid,
                tgid: id(t, "tgid", &at)?,
                comm: t
                    .get("comm")
                    .and_then(Value::as_str)
                    .ok_or_else(|| format!("{at}.comm: expected a string"))?
                    .to_string(),
                first_ns: ts(t, "first_ns", &at)?,
                last_ns: ts(t, "last_ns", &at)?,
                cpu_ns: ns(t, "cpu_ns", &at)?,
                kernel_ns: ns(t, "kernel_ns", &at)?,
                exited: t.get("exited").and_then(Value::as_bool).unwrap_or(false),
                ..ThreadAcc::default()
            };
            let rb = t
                .get("run_bursts_ns")
                .ok_or(format!("{at}.run_bursts_ns: missing"))?;
            a.bursts = Dist::from_json(rb, &format!("{at}.run_bursts_ns"))?;
            let wb = t
                .get("woken_by")
                .and_then(Value::as_array)
                .ok_or_else(|| format!("{at}.woken_by: expected an array"))?;
            if wb.len() > MAX_PROFILE_PEERS {
                return Err(format!(
                    "{at}.woken_by: {} entries: allowed at most {MAX_PROFILE_PEERS}",
                    wb.len()
                ));
            }
            for (j, w) in wb.iter().enumerate() {
                let wat = format!("{at}.woken_by[{j}]");
                let label = w
                    .get("waker")
                    .and_then(Value::as_str)
                    .ok_or_else(|| format!("{wat}.waker: expected a string"))?;
                let waker = Waker::parse(label).ok_or_else(|| {
                    format!("{wat}.waker: {label:?}: allowed thread:TID, task:COMM, irq")
                })?;
                let d = w
                    .get("blocked_ns")
                    .ok_or_else(|| format!("{wat}.blocked_ns: missing"))?;
                a.woken_by
                    .insert(waker, Dist::from_json(d, &format!("{wat}.blocked_ns"))?);
            }
            let wk = t
                .get("wakes")
                .and_then(Value::as_array)
                .ok_or_else(|| format!("{at}.wakes: expected an array"))?;
            if wk.len() > MAX_PROFILE_PEERS {
                return Err(format!(
                    "{at}.wakes: {} entries: allowed at most {MAX_PROFILE_PEERS}",
                    wk.len()
                ));
            }
            for (j, w) in wk.iter().enumerate() {
                let wat = format!("{at}.wakes[{j}]");
                let wakee = id(w, "wakee", &wat)?;
                a.wakes.insert(wakee, u(w, "count", &wat)?);
            }
            if let Some(sc) = t.get("syscalls").and_then(Value::as_object) {
                // The derivation reads their counts only (the summaries are
                // brief: no buckets).
                for (name, x) in sc {
                    let n = u(x, "count", &format!("{at}.syscalls.{name}"))?;
                    let mut kernel = Dist::default();
                    kernel.add_zeros(n);
                    a.syscalls.insert(
                        name.clone(),
                        Sys {
                            kernel,
                            wall: Dist::default(),
                        },
                    );
                }
            }
            if let Some(sw) = t.get("switches") {
                a.switches_blocked = u(sw, "blocked", &format!("{at}.switches"))?;
                a.switches_preempted = u(sw, "preempted", &format!("{at}.switches"))?;
            }
            // The steady form's inputs (crate::steady): shootdowns started
            // (reason TLB_REMOTE_SEND_IPI) and op markers.
            if let Some(tl) = t.get("tlb_flush").and_then(Value::as_object) {
                for (name, x) in tl {
                    if let Some(r) = (0..=5).find(|&r| tlb_reason(r) == name) {
                        let n = u(x, "events", &format!("{at}.tlb_flush.{name}"))?;
                        a.tlb.insert(r, (n, 0));
                    }
                }
            }
            if let Some(x) = t.get("op_markers") {
                a.op_marks = x
                    .as_u64()
                    .ok_or_else(|| format!("{at}.op_markers: expected a non-negative integer"))?;
            }
            if p.threads.insert(tid, a).is_some() {
                return Err(format!("{at}.tid: {tid} appears twice"));
            }
        }
        let first = p.threads.values().map(|t| t.first_ns).min();
        p.last_ns = match v.get("last_ns") {
            Some(x) => x.as_u64().ok_or("last_ns: expected an integer")?,
            None => p.threads.values().map(|t| t.last_ns).max().unwrap_or(0),
        };
        // Profiles written before first_ns was: the trace's first event is
        // wall_ns before its last (taken as the last thread event).
        p.first_ns = match v.get("first_ns") {
            Some(x) => Some(x.as_u64().ok_or("first_ns: expected an integer")?),
            None => match v.get("wall_ns").and_then(Value::as_u64) {
                Some(w) => Some(p.last_ns.saturating_sub(w)),
                None => first,
            },
        };
        p.events = v.get("events").and_then(Value::as_u64).unwrap_or(0);
        if let Some(f) = v.get("threads_folded").and_then(Value::as_array) {
            for (i, x) in f.iter().enumerate() {
                p.folded_cpu_ns = p
                    .folded_cpu_ns
                    .saturating_add(ns(x, "cpu_ns", &format!("threads_folded[{i}]"))?)
                    .min(MAX_PROFILE_NS);
            }
        }
        Ok(p)
    }
}
