//! `run --trace` files read the way Perfetto's JSON importer reads them.
//!
//! Perfetto's trace processor (what ui.perfetto.dev runs in the browser)
//! cannot be built or fetched offline here, so [`import`] restates, in this
//! project's own code, the rules of its importer that decide what a trace
//! shows, as read in google/perfetto at commit ec5d16b14b (v54.0-1620,
//! 2026-08-22): `src/trace_processor/importers/json/json_trace_tokenizer.cc`
//! (fields, `ts`/`dur` from µs to ns, a missing `tid` taken from `pid`),
//! `sorter/trace_sorter.h` (events sorted by time; at one time an `E` first,
//! then `X` slices longest first, then the rest in file order),
//! `importers/json/json_trace_parser.cc` (`X`, `i`, `C`, `M`, flow v1
//! `s`/`f`), `importers/common/slice_tracker.cc` (a thread track's slice
//! stack: a slice that ended before, or at, a new slice's start is popped;
//! a partial overlap is spilled to an overflow track) and
//! `importers/common/flow_tracker.cc` (a flow event binds to the slice on
//! top of its track's stack when it is read; none: the flow is dropped).
//!
//! The tests run real scenarios with yields, IPIs, nested guests and two
//! VMs, import their traces and check that nothing is dropped or refused,
//! every flow has both ends, each end binds to the slice it belongs to
//! (the one running at that time on its task's track), and the counter
//! tracks are numeric, named as documented and hold one value per instant.

use crate::common::oversub_cmd;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// A thread track: (pid, tid).
type Track = (u32, u32);

struct Slice {
    track: Track,
    ts: i64,
    dur: i64,
}

/// A flow the importer made: the slices it joins and its events' times.
struct Flow {
    name: String,
    out: usize,
    inn: usize,
    start: i64,
    end: i64,
}

/// What the importer keeps of a trace, and what it would log or drop.
#[derive(Default)]
struct Imported {
    slices: Vec<Slice>,
    flows: Vec<Flow>,
    /// Counter tracks by (pid, name): (ts, value) in import order.
    counters: BTreeMap<(u32, String), Vec<(i64, f64)>>,
    thread_names: BTreeMap<Track, String>,
    process_names: BTreeMap<u32, String>,
    /// Flow starts never ended.
    open_flows: usize,
    /// The importer's errors and data losses (stat name: event).
    errors: Vec<String>,
}

/// `ts`/`dur` (µs) in ns as the tokenizer converts them: a whole number
/// times 1000, else rounded to the nearest ns.
fn to_ns(v: &Value) -> Option<i64> {
    if let Some(i) = v.as_i64() {
        return Some(i * 1000);
    }
    let x = v.as_f64()?;
    Some(if x == x.trunc() {
        x as i64 * 1000
    } else {
        (x * 1000.0).round() as i64
    })
}

/// `pid`/`tid` as the tokenizer reads a number (out of u32: 0).
fn id32(v: &Value) -> Option<u32> {
    if v.is_string() {
        return None;
    }
    Some(
        v.as_i64()
            .or_else(|| v.as_f64().map(|x| x as i64))
            .and_then(|x| u32::try_from(x).ok())
            .unwrap_or(0),
    )
}

/// A flow v1 id: an unsigned number, or a hex string.
fn flow_id(v: &Value) -> Option<u64> {
    match v {
        Value::String(s) => u64::from_str_radix(s.trim_start_matches("0x"), 16).ok(),
        _ => v.as_u64(),
    }
}

impl Imported {
    /// The slice tracker's stack of `track` before a slice (`dur`, 0 for
    /// an instant) starts at `ts`: pops what ended before `ts`, or at `ts`
    /// unless both are instants. False: a partial overlap.
    fn close_stack(&self, stack: &mut Vec<usize>, ts: i64, dur: i64) -> bool {
        let mut i = stack.len();
        while i > 0 {
            i -= 1;
            let s = &self.slices[stack[i]];
            let end = s.ts + s.dur;
            if end < ts || (end == ts && !(s.dur == 0 && dur == 0)) {
                stack.pop();
                continue;
            }
            if ts < end && ts + dur > end {
                return false;
            }
        }
        true
    }
}

/// Imports the trace document `doc` (the JSON object form).
fn import(doc: &Value) -> Imported {
    let mut imp = Imported::default();
    let Some(events) = doc["traceEvents"].as_array() else {
        imp.errors.push("no traceEvents array".into());
        return imp;
    };
    // Tokenizer: (ts, sort key, file index, phase, track, dur).
    let mut toks: Vec<(i64, i64, usize, char, Track, Option<i64>)> = Vec::new();
    for (ix, e) in events.iter().enumerate() {
        let Some(ph) = e["ph"].as_str().and_then(|p| p.chars().next()) else {
            imp.errors
                .push(format!("json_tokenizer_failure (no ph): {e}"));
            continue;
        };
        for key in ["ts", "dur"] {
            // The writer's times are whole ns: nothing is lost in rounding.
            if let Some(x) = e[key].as_f64() {
                if (x * 1000.0 - (x * 1000.0).round()).abs() > 1e-3 {
                    imp.errors.push(format!("{key} not a whole ns: {e}"));
                }
            }
        }
        let ts = match to_ns(&e["ts"]) {
            Some(t) => t,
            None if ph == 'M' => 0,
            None => {
                imp.errors.push(format!("json_tokenizer_failure (ts): {e}"));
                continue;
            }
        };
        let (Some(pid), Some(mut tid)) = (id32(&e["pid"]), id32(&e["tid"])) else {
            imp.errors
                .push(format!("string pid/tid (not modelled): {e}"));
            continue;
        };
        if tid == 0 && pid != 0 {
            tid = pid;
        }
        let dur = e.get("dur").and_then(to_ns);
        let key = match ph {
            'E' => i64::MIN,
            'X' => i64::MAX - dur.unwrap_or(i64::MAX),
            _ => i64::MAX,
        };
        toks.push((ts, key, ix, ph, (pid, tid), dur));
    }
    // Sorter.
    toks.sort_by_key(|t| (t.0, t.1, t.2));
    // Parser.
    let mut stacks: BTreeMap<Track, Vec<usize>> = BTreeMap::new();
    let mut started: BTreeMap<(u64, String, String), (usize, i64)> = BTreeMap::new();
    let mut ended: BTreeSet<(u64, String, String)> = BTreeSet::new();
    for (ts, _, ix, ph, track, dur) in toks {
        let e = &events[ix];
        let name = e["name"].as_str().unwrap_or("").to_string();
        match ph {
            'X' | 'i' | 'I' => {
                let dur = if ph == 'X' {
                    let Some(d) = dur else {
                        imp.errors
                            .push(format!("json_parser_failure (X without dur): {e}"));
                        continue;
                    };
                    d
                } else {
                    if !matches!(e["s"].as_str(), None | Some("t")) {
                        imp.errors.push(format!("not a thread-scoped instant: {e}"));
                        continue;
                    }
                    0
                };
                let mut stack = stacks.remove(&track).unwrap_or_default();
                if imp.close_stack(&mut stack, ts, dur) {
                    imp.slices.push(Slice { track, ts, dur });
                    stack.push(imp.slices.len() - 1);
                } else {
                    imp.errors
                        .push(format!("slice_spill_overlapping_complete_event: {e}"));
                }
                stacks.insert(track, stack);
            }
            's' | 'f' => {
                let Some(id) = flow_id(&e["id"]) else {
                    imp.errors.push(format!("flow_invalid_id: {e}"));
                    continue;
                };
                let key = (id, e["cat"].as_str().unwrap_or("").to_string(), name);
                let Some(&top) = stacks.get(&track).and_then(|s| s.last()) else {
                    imp.errors.push(format!("flow_no_enclosing_slice: {e}"));
                    continue;
                };
                if ph == 's' {
                    if started.insert(key, (top, ts)).is_some() {
                        imp.errors.push(format!("flow_duplicate_id: {e}"));
                    }
                    continue;
                }
                if e["bp"] != "e" {
                    imp.errors
                        .push(format!("f without bp=e (binds the next slice): {e}"));
                    continue;
                }
                let Some(&(out, start)) = started.get(&key) else {
                    imp.errors.push(format!("flow_end_without_start: {e}"));
                    continue;
                };
                if !ended.insert(key.clone()) {
                    imp.errors.push(format!("flow ended twice: {e}"));
                }
                imp.flows.push(Flow {
                    name: key.2,
                    out,
                    inn: top,
                    start,
                    end: ts,
                });
            }
            'C' => {
                let Some(args) = e["args"].as_object().filter(|a| !a.is_empty()) else {
                    imp.errors
                        .push(format!("json_parser_failure (C args): {e}"));
                    continue;
                };
                for (k, v) in args {
                    let x = match v {
                        Value::String(s) => s.parse::<f64>().ok(),
                        _ => v.as_f64(),
                    };
                    let Some(x) = x else {
                        imp.errors.push(format!("json_parser_failure (C {k}): {e}"));
                        continue;
                    };
                    imp.counters
                        .entry((track.0, format!("{name} {k}")))
                        .or_default()
                        .push((ts, x));
                }
            }
            'M' => match name.as_str() {
                "thread_name" | "process_name" => {
                    let Some(n) = e["args"]["name"].as_str().filter(|n| !n.is_empty()) else {
                        imp.errors
                            .push(format!("json_parser_failure (M name): {e}"));
                        continue;
                    };
                    if name == "thread_name" {
                        imp.thread_names.insert(track, n.to_string());
                    } else {
                        imp.process_names.insert(track.0, n.to_string());
                    }
                }
                "thread_sort_index" | "process_sort_index"
                    if e["args"]["sort_index"].as_f64().is_none() =>
                {
                    imp.errors
                        .push(format!("json_parser_failure (sort_index): {e}"));
                }
                _ => {}
            },
            _ => imp.errors.push(format!("phase {ph} not modelled: {e}")),
        }
    }
    imp.open_flows = started.len() - ended.len();
    imp
}

/// `oversub run ARGS --trace` into a file of its own; the trace's JSON.
fn trace(tag: &str, args: &[&str]) -> Value {
    let out = std::env::temp_dir().join(format!("oversub-pf-{tag}-{}.json", std::process::id()));
    let o = oversub_cmd()
        .arg("run")
        .args(args)
        .arg("--brief")
        .arg("--trace")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v = serde_json::from_slice(&std::fs::read(&out).unwrap()).expect("trace is JSON");
    let _ = std::fs::remove_file(&out);
    v
}

/// Imports `v` and checks what every trace must satisfy; returns the
/// import and the flows per name.
fn check(what: &str, v: &Value, vms: &[&str]) -> (Imported, BTreeMap<String, usize>) {
    let imp = import(v);
    // Perfetto v4 to v21 read `ts` in the displayTimeUnit (now ignored).
    assert!(
        v.get("displayTimeUnit").is_none(),
        "{what}: displayTimeUnit"
    );
    assert!(
        imp.errors.is_empty(),
        "{what}: {} importer errors, first: {:?}",
        imp.errors.len(),
        &imp.errors[..imp.errors.len().min(3)]
    );
    // Slices per track in start order, to find the one running at a time.
    let mut by_track: BTreeMap<Track, Vec<(i64, usize)>> = BTreeMap::new();
    for (i, s) in imp.slices.iter().enumerate() {
        by_track.entry(s.track).or_default().push((s.ts, i));
    }
    let running = |track: Track, t: i64| -> Option<usize> {
        let v = by_track.get(&track)?;
        let k = v.partition_point(|&(ts, _)| ts <= t);
        k.checked_sub(1).map(|k| v[k].1)
    };
    let mut kinds: BTreeMap<String, usize> = BTreeMap::new();
    let mut zero_len = 0;
    for f in &imp.flows {
        *kinds.entry(f.name.clone()).or_default() += 1;
        for (end, at, t) in [("start", f.out, f.start), ("end", f.inn, f.end)] {
            let s = &imp.slices[at];
            let track = s.track;
            assert!(
                s.ts <= t && t <= s.ts + s.dur,
                "{what}: {} flow's {end} at {t} ns bound to {track:?}'s slice {}..{}",
                f.name,
                s.ts,
                s.ts + s.dur
            );
            assert_eq!(
                Some(at),
                running(track, t),
                "{what}: {} flow's {end} at {t} ns bound to {track:?}'s slice at {}, \
                 not the one running then",
                f.name,
                s.ts
            );
            assert_eq!(track.0, 2, "{what}: flows join task tracks");
            assert!(imp.thread_names.contains_key(&track), "{what}: {track:?}");
            zero_len += usize::from(s.dur == 0);
        }
        // A wakeup or a yield_to ends at the target's next slice.
        if f.name != "ipi" {
            assert_eq!(imp.slices[f.inn].ts, f.end, "{what}: {} flow", f.name);
        }
        assert_ne!(imp.slices[f.out].track, imp.slices[f.inn].track);
    }
    assert_eq!(imp.open_flows, 0, "{what}: flow starts without an end");
    // Every track with slices is a named thread of a named process.
    for s in &imp.slices {
        assert!(
            imp.thread_names.contains_key(&s.track) && imp.process_names.contains_key(&s.track.0),
            "{what}: unnamed track {:?}",
            s.track
        );
    }
    // Named threads: tids unique across processes, names within one.
    let tids: BTreeSet<u32> = imp.thread_names.keys().map(|k| k.1).collect();
    assert_eq!(
        tids.len(),
        imp.thread_names.len(),
        "{what}: a tid in two processes"
    );
    // Counters: the documented tracks, each CPU's and each VM's, one
    // value per instant, in processes with names.
    let cpus = v["otherData"]["cpus"].as_u64().unwrap();
    let mut expected: BTreeSet<(u32, String)> = (0..cpus)
        .map(|c| (1, format!("cpu{c} nr_running")))
        .collect();
    for vm in vms {
        for k in ["vcpus running", "vcpus waiting (steal)"] {
            expected.insert((4, format!("{vm} {k}")));
        }
    }
    let got: BTreeSet<(u32, String)> = imp.counters.keys().cloned().collect();
    let lag: BTreeSet<(u32, String)> = vms.iter().map(|vm| (4, format!("{vm} lag (us)"))).collect();
    let extra: Vec<_> = got
        .difference(&expected)
        .filter(|k| !lag.contains(k))
        .collect();
    assert!(
        extra.is_empty(),
        "{what}: unexpected counter tracks {extra:?}"
    );
    assert!(expected.is_subset(&got), "{what}: counter tracks {got:?}");
    for (k, vals) in &imp.counters {
        assert!(imp.process_names.contains_key(&k.0), "{what}: {k:?}");
        for w in vals.windows(2) {
            assert!(w[0].0 < w[1].0, "{what}: {k:?} twice at {} ns", w[0].0);
            assert_ne!(w[0].1, w[1].1, "{what}: {k:?} repeats a value");
        }
    }
    kinds.insert("bound to a 0 ns slice".into(), zero_len);
    (imp, kinds)
}

fn count(kinds: &BTreeMap<String, usize>, k: &str) -> usize {
    kinds.get(k).copied().unwrap_or(0)
}

/// Directed yields and IPIs between the vCPUs of one VM: thousands of
/// yield_to flows, IPI and wakeup flows, some bound to a vCPU's 0 ns slice
/// (switched in and out at one instant, with a free context switch); and
/// the same, at the default switch cost, over a window that opens while
/// tasks run.
#[test]
fn yield_and_ipi_traces_import_with_every_flow_bound() {
    let args = [
        "scenarios/kvm-lock-holder-preemption.toml",
        "--duration",
        "20ms",
        "--set",
        "host.yield.yield_to=deboost-v1",
        "--set",
        "kvm.on_spin=ipi_aware",
    ];
    // A free context switch (and a free yield_to(), whose cost the yielder
    // pays when it is switched in again) lets a vCPU be switched in and out
    // at one instant (a 0 ns slice); with the default 2.7 us no reschedule
    // may cut a switch short, so none occurs.
    let mut z = args.to_vec();
    z.extend([
        "--set",
        "host.costs.context_switch=0ns",
        "--set",
        "host.costs.yield_to=0ns",
    ]);
    let v = trace("yield", &z);
    let (_, k) = check("yield", &v, &["db"]);
    assert!(
        count(&k, "yield_to") > 1000 && count(&k, "ipi") > 10 && count(&k, "wakeup") > 0,
        "{k:?}"
    );
    assert!(count(&k, "bound to a 0 ns slice") > 0, "{k:?}");
    let mut w = args.to_vec();
    w.extend(["--trace-window", "5ms..12ms"]);
    let v = trace("yield-window", &w);
    let (_, k) = check("yield, window 5ms..12ms", &v, &["db"]);
    assert!(count(&k, "yield_to") > 500, "{k:?}");
}

/// Nested guests (guest-thread tracks, guest IPIs) and two VMs with their
/// lag counters.
#[test]
fn nested_guest_and_two_vm_traces_import() {
    let v = trace(
        "nested",
        &["scenarios/nested/2x2-mutex.toml", "--duration", "60ms"],
    );
    let (imp, k) = check("nested", &v, &["a", "b"]);
    assert!(count(&k, "ipi") > 0 && count(&k, "wakeup") > 0, "{k:?}");
    assert!(imp.slices.iter().any(|s| s.track.0 == 3), "guest tracks");
    let v = trace(
        "two-vms",
        // The strip-barrier pool fixture: its workers wake each other per
        // tile; the derived dedup's batches and vips' 2.7 ms units rarely
        // block (a few tens of IPIs in 20 ms).
        &[
            "crates/oversub-cli/tests/data/pool-2x16.toml",
            "--duration",
            "20ms",
        ],
    );
    let (imp, k) = check("two VMs", &v, &["vm0", "vm1"]);
    assert!(count(&k, "ipi") > 100 && count(&k, "wakeup") > 100, "{k:?}");
    for vm in ["vm0", "vm1"] {
        let lag = &imp.counters[&(4, format!("{vm} lag (us)"))];
        assert!(lag.len() > 100, "{vm}: {} lag values", lag.len());
    }
}

/// The model itself: the importer's rules it restates, on small documents
/// whose outcome the sources above decide.
#[test]
fn importer_model_follows_the_sources() {
    let doc = |evs: Value| serde_json::json!({ "traceEvents": evs });
    // A flow end at a 0 ns slice's time, written before that slice: the
    // sorter keeps file order (both sort last at that time), so it binds
    // to the thread's previous slice.
    let imp = import(&doc(serde_json::json!([
        {"ph": "X", "pid": 2, "tid": 5, "ts": 1.0, "dur": 1.0, "name": "a"},
        {"ph": "X", "pid": 2, "tid": 6, "ts": 2.0, "dur": 3.0, "name": "b"},
        {"ph": "s", "pid": 2, "tid": 6, "ts": 3.0, "id": 1, "cat": "flow", "name": "y"},
        {"ph": "f", "bp": "e", "pid": 2, "tid": 5, "ts": 3.0, "id": 1, "cat": "flow", "name": "y"},
        {"ph": "X", "pid": 2, "tid": 5, "ts": 3.0, "dur": 0.0, "name": "a"},
    ])));
    assert!(imp.errors.is_empty(), "{:?}", imp.errors);
    assert_eq!(imp.slices[imp.flows[0].inn].ts, 1000, "the stale slice");
    // Written after it, it binds to the 0 ns slice; a slice that lasts
    // sorts before it whatever the file order.
    let imp = import(&doc(serde_json::json!([
        {"ph": "X", "pid": 2, "tid": 5, "ts": 1.0, "dur": 1.0, "name": "a"},
        {"ph": "s", "pid": 2, "tid": 6, "ts": 3.0, "id": 1, "cat": "flow", "name": "y"},
        {"ph": "X", "pid": 2, "tid": 5, "ts": 3.0, "dur": 0.0, "name": "a"},
        {"ph": "f", "bp": "e", "pid": 2, "tid": 5, "ts": 3.0, "id": 1, "cat": "flow", "name": "y"},
        {"ph": "X", "pid": 2, "tid": 6, "ts": 3.0, "dur": 0.5, "name": "b"},
    ])));
    assert!(imp.errors.is_empty(), "{:?}", imp.errors);
    let f = &imp.flows[0];
    assert_eq!((imp.slices[f.out].ts, imp.slices[f.inn].ts), (3000, 3000));
    assert_eq!(imp.slices[f.inn].dur, 0);
    // No slice on the track: the flow is dropped; a counter needs numbers;
    // a missing tid is the pid; µs with a fraction round to the ns.
    let imp = import(&doc(serde_json::json!([
        {"ph": "s", "pid": 2, "tid": 7, "ts": 1.0, "id": 9, "cat": "flow", "name": "y"},
        {"ph": "C", "pid": 4, "ts": 1.0005, "name": "vm", "args": {"n": "x"}},
        {"ph": "C", "pid": 4, "ts": 2.0, "name": "vm", "args": {"n": 2, "m": "3.5"}},
    ])));
    assert_eq!(imp.errors.len(), 3, "{:?}", imp.errors);
    assert!(imp.errors[0].starts_with("ts not a whole ns"));
    assert!(imp.errors[1].starts_with("flow_no_enclosing_slice"));
    assert!(imp.errors[2].starts_with("json_parser_failure (C n)"));
    assert_eq!(imp.counters[&(4, "vm m".into())], [(2000, 3.5)]);
    assert_eq!(imp.counters[&(4, "vm n".into())], [(2000, 2.0)]);
}
