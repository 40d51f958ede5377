//! A thread program (rt-app 1.0 JSON, docs/workloads.md) derived from a
//! measured profile. Each recorded thread that used at least 0.5% of the
//! program's CPU becomes a task that repeats a cycle of up to [`SLOTS`]
//! slots; a slot is one run burst, the wakeups the thread did in it, and the
//! way it then blocked:
//!
//! * run bursts: the measured burst distribution's quantiles, one per slot,
//!   scaled so that their sum is the measured CPU time per cycle;
//! * a block ended by another recorded thread becomes a `get` of one item
//!   from the thread's own queue, into which that thread `put`s one (a
//!   measured wait is a wait on the thread that ends it, not a sleep): the
//!   wakee waits on its own object, the waker takes no lock of the
//!   wakee's, and the put (`if_waited` 0) wakes the thread only if it
//!   waits, as every recorded wakeup did (docs/workloads.md says why one
//!   that finds it running wakes nobody);
//! * a block ended by anything else (interrupt context: timers, I/O
//!   completion; kernel threads such as jbd2 or kworkers) becomes a sleep of
//!   that waker's mean measured blocked time;
//! * each wakeup of a thread is in every slot at its measured rate (the
//!   `put`'s `times` per `per_loops`: n of the cycles), at its place inside
//!   the burst: a slot's wakeups cut its burst evenly (an estimate: the
//!   recording does not keep where in a burst a wakeup was);
//! * a wakeup that finds its thread running, or a wait the rounded rates
//!   leave without its wakeup, would stall it; so that this cannot stall
//!   it for ever, each waiting thread
//!   has a guard task (`guard_NAME`, nice 19) that kicks its queue
//!   periodically (a `put` with `if_waited`: an item only when the thread
//!   has waited for a whole period): every p99 of its measured waits on
//!   threads, or its mean interval between such waits, or 1 ms, whichever
//!   is longest;
//! * each slot's block kind (wait or sleep) is the measured count per
//!   cycle, spread evenly over the slots (at least one slot waits if any
//!   measured block was a wait).
//!
//! Each thread starts when it did (`delay`) and makes as many passes over
//! its slots as it made cycles (`loop`), so the program does the recorded
//! amount of work and ends, and a run-to-completion program's start-up and
//! joins keep their place; `global.duration` is three times the recorded
//! wall time, a bound for runs slowed by a condition the recording did not
//! see.
//!
//! Every sleep of a derived thread replays a measured blocked time, so the
//! threads carry a timer slack of 1 ns (the rt-app `oversub` task
//! extension): the real slack, if any, is already in the measured time.
//!
//! What this does not capture is listed in `provenance.not_captured`.

use crate::profile::{Profile, ThreadAcc, Waker};
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// JSON whose objects keep their key order (rt-app runs a phase's events in
/// file order; serde_json's `Map` sorts them).
#[derive(Clone, Debug, PartialEq)]
pub enum Ordered {
    V(Value),
    O(Vec<(String, Ordered)>),
}

impl Serialize for Ordered {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Ordered::V(v) => v.serialize(s),
            Ordered::O(kv) => {
                let mut m = s.serialize_map(Some(kv.len()))?;
                for (k, v) in kv {
                    m.serialize_entry(k, v)?;
                }
                m.end()
            }
        }
    }
}

/// Most slots in a thread's cycle.
pub const SLOTS: u64 = 16;
/// Most threads in a derived program.
pub const MAX_PROGRAM_THREADS: usize = 256;
/// Most sched_yield calls in one slot (a yield-heavy thread gets more
/// cycles instead).
pub const YIELDS_PER_SLOT: u64 = 64;
/// The shortest guard period (us).
pub const GUARD_MIN_US: u64 = 1000;
pub use crate::bounds::MIN_CPU_SHARE;
/// The capacity of a derived thread's wakeup queue (items): room for every
/// wakeup a recording can hold, so a wakeup never blocks its waker.
pub const WAKE_QUEUE_CAPACITY: u64 = 1 << 32;
/// The timer slack (us) of derived threads: 1 ns, the least there is
/// (the rt-app `oversub` task extension, docs/workloads.md).
pub const STAND_IN_TIMER_SLACK_US: f64 = 0.001;

#[derive(Clone, Debug, PartialEq)]
enum Block {
    Wait,
    Sleep(String, u64),
}

/// `n` events spread evenly over `l` slots: is slot `i` one of them?
fn spread(i: u64, n: u64, l: u64) -> bool {
    (i + 1) * n / l > i * n / l
}

/// `n` events spread evenly over the `l` cuts of a burst (cut `k` ends
/// piece `k` of `l + 1`): is cut `k` one of them? Event j (from 0) is at
/// cut `floor((2j + 1) l / 2n)`, so one event is in the middle.
fn spread_in(k: u64, n: u64, l: u64) -> bool {
    // Events before cut k: the j with (2j + 1) l < 2 n k.
    let before = |k: u64| (2 * n * k).saturating_sub(l).div_ceil(2 * l);
    n > 0 && before(k + 1) > before(k)
}

/// Apportions `total` between `weights` by largest remainder.
fn apportion(total: u64, weights: &[u64]) -> Vec<u64> {
    let sum: u64 = weights.iter().sum();
    if sum == 0 {
        return vec![0; weights.len()];
    }
    let mut out: Vec<u64> = weights.iter().map(|w| total * w / sum).collect();
    let mut rem: Vec<(u64, usize)> = weights
        .iter()
        .enumerate()
        .map(|(i, w)| ((total * w) % sum, i))
        .collect();
    rem.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let left = total - out.iter().sum::<u64>();
    for &(_, i) in rem.iter().take(left as usize) {
        out[i] += 1;
    }
    out
}

fn sanitize(comm: &str) -> String {
    comm.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

/// One derived thread, before it is written out.
struct Plan {
    name: String,
    /// Passes over the slots (the measured cycles / slots).
    passes: u64,
    /// Start after the program's first event (us).
    delay_us: u64,
    /// The thread's measured lifetime (us).
    life_us: u64,
    /// The guard timer's period (us) when the thread waits on others.
    guard_us: Option<u64>,
    slots: u64,
    bursts_us: Vec<u64>,
    yields: Vec<u64>,
    blocks: Vec<Option<Block>>,
    /// The threads it wakes: (wakee, measured wakeups), then (after
    /// [`balance`]) (wakee, puts over the thread's passes); each slot puts
    /// into the wakee's queue at that rate.
    signals: Vec<(String, u64)>,
    /// Steady form only: TLB shootdowns (`munmap` events) per slot of one
    /// pass; with `repeat` > 1 they are all in the pass's last slot.
    unmaps: Vec<u64>,
    /// Steady form only: passes over the slots per pass written out (a
    /// rate below one per pass is one event every `repeat` passes).
    repeat: u64,
    /// Steady form only: the real program's ops per phase loop.
    ops_per_loop: Option<f64>,
}

/// Which program the derivation writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// `workload.json`: each thread makes its recorded passes and ends.
    Recorded,
    /// `guest.json` (crate::steady): each thread repeats its cycle for
    /// ever from time 0, with the measured TLB shootdowns as `munmap`
    /// events and its ops per phase loop, to run as a VM guest's steady
    /// state.
    Steady,
}

/// The derived program and the derivation record for its provenance.
pub fn derive(p: &Profile, ops: Option<u64>, duration_s: u64) -> (Ordered, Value) {
    derive_form(p, ops, duration_s, Form::Recorded)
}

/// [`derive`] in the given [`Form`].
pub fn derive_form(p: &Profile, ops: Option<u64>, duration_s: u64, form: Form) -> (Ordered, Value) {
    let total: u64 = p.threads.values().map(|t| t.cpu_ns).sum::<u64>() + p.folded_cpu_ns;
    let mut chosen: Vec<&ThreadAcc> = p
        .threads
        .values()
        .filter(|t| t.cpu_ns as f64 >= MIN_CPU_SHARE * total as f64 && t.cpu_ns > 0)
        .collect();
    chosen.sort_by(|a, b| b.cpu_ns.cmp(&a.cpu_ns).then(a.tid.cmp(&b.tid)));
    chosen.truncate(MAX_PROGRAM_THREADS);
    chosen.sort_by_key(|t| t.tid);
    let omitted: Vec<Value> = p
        .threads
        .values()
        .filter(|t| !chosen.iter().any(|c| c.tid == t.tid))
        .map(|t| json!({"tid": t.tid, "comm": t.comm, "cpu_ns": t.cpu_ns}))
        .collect();
    let names: BTreeMap<u32, String> = chosen
        .iter()
        .enumerate()
        .map(|(i, t)| (t.tid, format!("t{i}_{}", sanitize(&t.comm))))
        .collect();

    let mut plans: Vec<Plan> = Vec::new();
    let chosen_cpu: u64 = chosen.iter().map(|t| t.cpu_ns).sum();
    let mut per_thread = Vec::new();
    let mut all_slots = 0u64;
    for t in &chosen {
        let name = names[&t.tid].clone();
        let waits: u64 = t
            .woken_by
            .iter()
            .filter(|(w, _)| matches!(w, Waker::Thread(x) if names.contains_key(x)))
            .map(|(_, d)| d.count())
            .sum();
        // Sleeps: every other waker, with its mean blocked time.
        let sleeps: Vec<(String, u64, u64)> = t
            .woken_by
            .iter()
            .filter(|(w, _)| !matches!(w, Waker::Thread(x) if names.contains_key(x)))
            .map(|(w, d)| (w.label(), d.count(), d.mean().round() as u64))
            .collect();
        let blocks: u64 = waits + sleeps.iter().map(|s| s.1).sum::<u64>();
        let sig: Vec<(&String, u64)> = t
            .wakes
            .iter()
            .filter_map(|(w, &n)| names.get(w).map(|nm| (nm, n)))
            .collect();
        let max_sig = sig.iter().map(|s| s.1).max().unwrap_or(0);
        // A thread that never blocks runs in 10 ms chunks.
        let chunks = t.cpu_ns / 10_000_000;
        // A yield-heavy thread gets more (non-blocking) cycles, so that no
        // slot holds more than YIELDS_PER_SLOT yields.
        let y = t.syscall_count("sched_yield");
        let cycles = blocks
            .max(max_sig)
            .max(if blocks == 0 { chunks } else { 0 })
            .max(y.div_ceil(YIELDS_PER_SLOT))
            .max(1);
        let l = cycles.min(SLOTS);
        let passes = ((cycles + l / 2) / l).max(1);
        all_slots += cycles;
        // Bursts: the quantiles at (i + 0.5) / l, scaled to the mean.
        let per_cycle = t.cpu_ns as f64 / cycles as f64;
        let q: Vec<f64> = (0..l)
            .map(|i| {
                if t.bursts.count() == 0 {
                    per_cycle
                } else {
                    t.bursts.percentile(100.0 * (i as f64 + 0.5) / l as f64) as f64
                }
            })
            .collect();
        let qsum: f64 = q.iter().sum();
        let scale = if qsum > 0.0 {
            per_cycle * l as f64 / qsum
        } else {
            1.0
        };
        let mut carry = 0.0;
        let bursts_us: Vec<u64> = q
            .iter()
            .map(|v| {
                let us = v * scale / 1000.0 + carry;
                let r = us.round().max(1.0);
                carry = us - r;
                r as u64
            })
            .collect();
        // Blocks: how many of the l slots end blocked, and how.
        let nb = if blocks == 0 {
            0
        } else {
            ((l * blocks + cycles / 2) / cycles).clamp(1, l)
        };
        let mut kinds: Vec<(Block, u64)> = Vec::new();
        if waits > 0 {
            kinds.push((Block::Wait, waits));
        }
        for (label, n, mean) in &sleeps {
            kinds.push((Block::Sleep(label.clone(), (mean / 1000).max(1)), *n));
        }
        let counts = apportion(nb, &kinds.iter().map(|k| k.1).collect::<Vec<_>>());
        // Keep every measured wait: at least one slot waits if any did.
        let mut counts = counts;
        if waits > 0 && counts[0] == 0 && nb > 0 {
            if let Some(j) = (1..counts.len()).max_by_key(|&j| counts[j]) {
                counts[j] -= 1;
                counts[0] += 1;
            }
        }
        // Interleave the kinds over the block slots (smooth round robin).
        let mut seq = Vec::new();
        let mut credit = vec![0i64; kinds.len()];
        for _ in 0..nb {
            for (c, n) in credit.iter_mut().zip(&counts) {
                *c += *n as i64;
            }
            let k = (0..kinds.len()).max_by_key(|&k| (credit[k], -(k as i64)));
            if let Some(k) = k {
                credit[k] -= nb as i64;
                seq.push(kinds[k].0.clone());
            }
        }
        let mut seq = seq.into_iter();
        let blocks_v: Vec<Option<Block>> = (0..l)
            .map(|i| if spread(i, nb, l) { seq.next() } else { None })
            .collect();
        // sched_yield calls, spread over the slots (each slot's burst is cut
        // into pieces between them).
        let ytot = (l * y + cycles / 2) / cycles;
        let yields: Vec<u64> = (0..l).map(|i| (i + 1) * ytot / l - i * ytot / l).collect();
        // Every slot wakes each wakee at its measured rate per cycle (a
        // `put` repeated `n` times per `cycles` loops): the wakeups are
        // not rounded to whole slots.
        let signals: Vec<(String, u64)> = sig.iter().map(|(w, n)| ((*w).clone(), *n)).collect();
        let mut waited = crate::hist::Dist::default();
        for (w, d) in &t.woken_by {
            if matches!(w, Waker::Thread(x) if names.contains_key(x)) {
                waited.merge(d);
            }
        }
        let life_us = t.last_ns.saturating_sub(t.first_ns) / 1000;
        let guard_us = (waits > 0).then(|| {
            (waited.percentile(99.0) / 1000)
                .max(life_us / waits)
                .max(GUARD_MIN_US)
        });
        per_thread.push(json!({
            "task": name,
            "tid": t.tid,
            "comm": t.comm,
            "cpu_ns": t.cpu_ns,
            "cycles": cycles,
            "slots": l,
            "run_us_per_slot": bursts_us,
            "blocks_per_cycle": blocks as f64 / cycles as f64,
            "yields_per_cycle": y as f64 / cycles as f64,
            "waits_on_threads": waits,
            "sleeps": sleeps.iter().map(|(w, n, m)| json!({"waker": w, "count": n, "mean_ns": m})).collect::<Vec<_>>(),
            "waits_on_threads_ns": waited.summary(),
            "signals": sig.iter().map(|(w, n)| json!({"wakee": w, "count": n})).collect::<Vec<_>>(),
        }));
        let start = p.first_ns.unwrap_or(t.first_ns);
        let (unmaps, repeat) = if form == Form::Steady {
            crate::steady::unmaps(t.tlb.get(&4).map_or(0, |e| e.0), cycles, l)
        } else {
            (vec![0; l as usize], 1)
        };
        let ops_per_loop = ops.map(|n| crate::steady::ops_per_loop(p, t, n, cycles, chosen_cpu));
        if form == Form::Steady {
            if let Some(Value::Object(m)) = per_thread.last_mut() {
                m.insert(
                    "tlb_shootdowns".into(),
                    json!(t.tlb.get(&4).map_or(0, |e| e.0)),
                );
                m.insert("munmaps_per_pass".into(), json!(unmaps.iter().sum::<u64>()));
                m.insert("slots_per_pass".into(), json!(l * repeat));
                m.insert("op_markers".into(), json!(t.op_marks));
                m.insert("ops_per_loop".into(), json!(ops_per_loop));
            }
        }
        plans.push(Plan {
            passes,
            delay_us: t.first_ns.saturating_sub(start) / 1000,
            life_us: t.last_ns.saturating_sub(t.first_ns) / 1000,
            guard_us,
            name,
            slots: l,
            bursts_us,
            yields,
            blocks: blocks_v,
            signals,
            unmaps,
            repeat,
            ops_per_loop,
        });
    }

    balance(&mut plans);
    let mut tasks: Vec<(String, Ordered)> = plans
        .iter()
        .map(|pl| (pl.name.clone(), task_json(pl, form)))
        .collect();
    for pl in &plans {
        if let Some(us) = pl.guard_us {
            let n = &pl.name;
            tasks.push((
                format!("guard_{n}"),
                Ordered::O(vec![
                    ("priority".into(), Ordered::V(json!(19))),
                    (
                        "delay".into(),
                        Ordered::V(json!(if form == Form::Steady { 0 } else { pl.delay_us })),
                    ),
                    (
                        "loop".into(),
                        Ordered::V(json!(if form == Form::Steady { -1 } else { 1 })),
                    ),
                    (
                        "phases".into(),
                        Ordered::O(vec![(
                            "guard".into(),
                            Ordered::O(vec![
                                (
                                    "loop".into(),
                                    Ordered::V(json!(if form == Form::Steady {
                                        1
                                    } else {
                                        pl.life_us.div_ceil(us) + 1
                                    })),
                                ),
                                (
                                    "timer0".into(),
                                    Ordered::V(json!({"ref": format!("g_{n}"), "period": us})),
                                ),
                                (
                                    "put1".into(),
                                    Ordered::V(json!({
                                        "queue": format!("q_{n}"),
                                        "capacity": WAKE_QUEUE_CAPACITY,
                                        "if_waited": us,
                                    })),
                                ),
                            ]),
                        )]),
                    ),
                ]),
            ));
        }
    }
    let ops_per_loop = ops.map(|n| n as f64 / all_slots.max(1) as f64);
    let derivation = json!({
        "method": "oversub-record/derive 2: per recorded thread, a cycle of run bursts (measured quantiles scaled to the measured CPU per cycle), wakeups of the threads it woke (a put into the wakee's own queue in every slot at a rate: the wakee's derived waits apportioned between its wakers by their measured wakeups of it; spread evenly inside the burst), and blocks: a get from its own queue when a recorded thread ended the measured wait, sleeps of the measured mean otherwise",
        "threads": per_thread,
        "omitted_threads": omitted,
        "min_cpu_share": MIN_CPU_SHARE,
        "slots_per_cycle_max": SLOTS,
        "ops": ops,
        "ops_per_phase_loop": ops_per_loop,
        "ops_tasks": "t*: the phase loops of the derived threads (not the guard_ tasks); one phase loop is one slot (a run burst and what follows it)",
        "phase_loops_recorded": all_slots,
        "timer_slack": "every t* task has \"oversub\": {\"timer_slack\": 0.001} (1 ns): its sleeps replay measured blocked times (irq-, timer- or kernel-thread-ended waits), which already include the real kernel's timer slack where there was one, so the simulator's hrtimer adds none; guard tasks keep the default 50 us (they are not the program)",
        "not_captured": [
            "wakeups of a thread that is not waiting: a derived wakeup (a put with if_waited 0 into the wakee's queue) wakes the wakee only if it waits, as the recorded ones did (the recording counts wakeups of blocked threads only); one that finds it running wakes nobody, where the real program may have left data that ends the next wait at once (a pipe's) or made no wakeup at all (a futex wake with no waiter); a thread left waiting is kicked by its guard task (guard_NAME, nice 19) after a whole period of waiting (the longest of the p99 of the thread's waits on threads, its mean interval between them, and 1 ms); the guard's wakeups are not the program's",
            "page faults, TLB shootdowns, IPIs and kernel lock contention (recorded in profile.json; host-only programs have no kernel-work events)",
            "the CPU cost of the syscalls themselves beyond the measured burst (bursts include kernel time)",
            "sleep durations as distributions (each sleep is its waker's mean)",
            "where inside a burst a wakeup happens (the recording does not keep it: a slot's wakeups cut its burst evenly, an estimate), the order of other events inside a burst, and which thread a wakeup favours beyond the measured counts",
            "threads below min_cpu_share of the program's CPU time"
        ],
    });
    let mut derivation = derivation;
    if form == Form::Steady {
        crate::steady::annotate(&mut derivation);
    }
    let program = Ordered::O(vec![
        (
            "global".into(),
            Ordered::V(json!({"duration": duration_s.max(1)})),
        ),
        ("tasks".into(), Ordered::O(tasks)),
    ]);
    (program, derivation)
}

/// A slot's events, as (key prefix, value) in order.
fn slot_events(pl: &Plan, i: usize, unmaps: u64) -> Vec<(&'static str, Value)> {
    let mut ev = Vec::new();
    // The burst is cut into pieces by its wakeups, its yields and its
    // munmaps (each after a piece): the wakeups spread evenly over the
    // cuts (one wakeup is in the middle of the burst), the yields before
    // the munmaps among the rest.
    let puts = pl.signals.len() as u64;
    let cuts = puts + pl.yields[i] + unmaps;
    let pieces = cuts + 1;
    let b = pl.bursts_us[i];
    let (mut put, mut other) = (0usize, 0u64);
    for k in 0..pieces {
        let us = (k + 1) * b / pieces - k * b / pieces;
        if us > 0 || k + 1 == pieces {
            ev.push(("run", json!(us.max(1))));
        }
        if k + 1 == pieces {
            break;
        }
        if spread_in(k, puts, cuts) {
            let (w, n) = &pl.signals[put];
            put += 1;
            // A wakeup of a waiting thread: one that finds it running
            // wakes nobody (`if_waited` 0, module doc).
            let mut v = json!({"queue": format!("q_{w}"), "if_waited": 0});
            let loops = pl.passes * pl.slots;
            if *n != loops {
                v["times"] = json!(n);
                v["per_loops"] = json!(loops);
            }
            ev.push(("put", v));
        } else if other < pl.yields[i] {
            other += 1;
            ev.push(("yield", json!("")));
        } else {
            // The unmapping syscall's kernel work is in the measured burst
            // (CPU time); the event adds the flush of the other CPUs.
            ev.push(("munmap", json!({"run": 0})));
        }
    }
    match &pl.blocks[i] {
        Some(Block::Wait) => {
            let n = &pl.name;
            ev.push((
                "get",
                json!({"queue": format!("q_{n}"), "capacity": WAKE_QUEUE_CAPACITY}),
            ));
        }
        Some(Block::Sleep(_, us)) => ev.push(("sleep", json!(us))),
        None => {}
    }
    ev
}

/// Each thread's wakeups of a thread as puts over the waker's passes, so
/// that every thread is woken as often as the derived program makes it
/// wait: its waits (wait slots x passes) apportioned between its wakers by
/// their measured wakeups of it (largest remainder; a measured edge keeps
/// at least one put). In the recording each wait on a thread ended with one
/// of that thread's wakeups; rounding the slots apart would otherwise leave
/// a thread more wakeups than waits (each extra one kept, a wait skipped)
/// or fewer (a stall its guard ends).
fn balance(plans: &mut [Plan]) {
    let waits: BTreeMap<String, u64> = plans
        .iter()
        .map(|pl| {
            let w = pl
                .blocks
                .iter()
                .filter(|b| **b == Some(Block::Wait))
                .count() as u64;
            (pl.name.clone(), w * pl.passes)
        })
        .collect();
    // (waker index, signal index, measured wakeups) per wakee.
    let mut edges: BTreeMap<String, Vec<(usize, usize, u64)>> = BTreeMap::new();
    for (i, pl) in plans.iter().enumerate() {
        for (j, (w, n)) in pl.signals.iter().enumerate() {
            edges.entry(w.clone()).or_default().push((i, j, *n));
        }
    }
    for (wakee, e) in edges {
        let total = waits.get(&wakee).copied().unwrap_or(0);
        let shares = apportion(total, &e.iter().map(|x| x.2).collect::<Vec<_>>());
        for (&(i, j, _), k) in e.iter().zip(shares) {
            plans[i].signals[j].1 = k.max(1);
        }
    }
}

fn task_json(pl: &Plan, form: Form) -> Ordered {
    // Consecutive identical slots become one phase looping over them.
    let mut phases: Vec<(Vec<(&'static str, Value)>, u64)> = Vec::new();
    // A rate below one munmap per pass: `repeat` passes written out in a
    // row, the last slot of the last carrying the munmap.
    let last = pl.slots as usize - 1;
    for r in 0..pl.repeat {
        for i in 0..pl.slots as usize {
            let n = if pl.repeat == 1 {
                pl.unmaps[i]
            } else if r + 1 == pl.repeat && i == last {
                pl.unmaps.iter().sum()
            } else {
                0
            };
            let ev = slot_events(pl, i, n);
            match phases.last_mut() {
                Some((prev, k)) if *prev == ev => *k += 1,
                _ => phases.push((ev, 1)),
            }
        }
    }
    let ph: Vec<(String, Ordered)> = phases
        .into_iter()
        .enumerate()
        .map(|(k, (ev, n))| {
            let mut o = vec![("loop".to_string(), Ordered::V(json!(n)))];
            for (j, (key, v)) in ev.into_iter().enumerate() {
                o.push((format!("{key}{j}"), Ordered::V(v)));
            }
            (format!("p{k}"), Ordered::O(o))
        })
        .collect();
    let steady = form == Form::Steady;
    let mut ext = json!({ "timer_slack": STAND_IN_TIMER_SLACK_US });
    if let (true, Some(o), Value::Object(m)) = (steady, pl.ops_per_loop, &mut ext) {
        m.insert("ops_per_loop".into(), json!(o));
    }
    Ordered::O(vec![
        (
            "delay".into(),
            Ordered::V(json!(if steady { 0 } else { pl.delay_us })),
        ),
        (
            "loop".into(),
            Ordered::V(if steady { json!(-1) } else { json!(pl.passes) }),
        ),
        // Every sleep of a derived thread stands in for a measured blocked
        // time, which already holds whatever slack the real kernel gave
        // (a nanosleep's) or none (a wait on I/O or a kernel thread): the
        // simulator adds none of its own.
        ("oversub".into(), Ordered::V(ext)),
        ("phases".into(), Ordered::O(ph)),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_places_exactly_n_of_l() {
        for l in 1..40u64 {
            for n in 0..=l {
                assert_eq!((0..l).filter(|&i| spread(i, n, l)).count() as u64, n);
            }
        }
    }

    #[test]
    fn spread_in_places_exactly_n_of_l_around_the_middle() {
        for l in 1..40u64 {
            for n in 0..=l {
                let at: Vec<u64> = (0..l).filter(|&k| spread_in(k, n, l)).collect();
                assert_eq!(at.len() as u64, n, "{n} of {l}");
            }
        }
        // One wakeup in a burst of one cut, and one of five cuts: the
        // middle.
        assert!(spread_in(0, 1, 1));
        assert_eq!(
            (0..5).filter(|&k| spread_in(k, 1, 5)).collect::<Vec<_>>(),
            vec![2]
        );
        assert_eq!(
            (0..4).filter(|&k| spread_in(k, 2, 4)).collect::<Vec<_>>(),
            vec![1, 3]
        );
    }

    #[test]
    fn apportion_keeps_the_total() {
        assert_eq!(apportion(5, &[1, 1, 1]), vec![2, 2, 1]);
        assert_eq!(apportion(7, &[10, 0, 30]), vec![2, 0, 5]);
        assert_eq!(apportion(3, &[0, 0]), vec![0, 0]);
    }
}
