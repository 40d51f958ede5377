//! The shared test vectors (`vectors/*.json`, also the kernel's KUnit suite)
//! against the simulator's mirror of the pure helpers
//! (`src/sched/yield_to/{deboost,borrow}_helpers.rs`). Every case of every
//! file runs and is reported by name; a vectors file this test does not
//! know fails, so a new kernel helper cannot go unmirrored.

use oversub::sched::yield_to::borrow_helpers::*;
use oversub::sched::yield_to::deboost_helpers::*;
use serde_json::Value;
use std::path::Path;

fn u(c: &Value, k: &str) -> u64 {
    c[k].as_u64()
        .unwrap_or_else(|| panic!("field {k} is not a u64: {}", c[k]))
}

fn i(c: &Value, k: &str) -> i64 {
    c[k].as_i64()
        .unwrap_or_else(|| panic!("field {k} is not an int: {}", c[k]))
}

fn b(c: &Value, k: &str) -> bool {
    c[k].as_bool()
        .unwrap_or_else(|| panic!("field {k} is not a bool: {}", c[k]))
}

/// Runs one case; returns the (got, expected) pair rendered as JSON.
fn run_case(file: &str, c: &Value) -> (Value, Value) {
    let exp = c["expect"].clone();
    let got: Value = match file {
        "deboost_penalty.json" => yield_penalty(
            u(c, "gran"),
            u(c, "need"),
            u(c, "h_nr_queued") as u32,
            b(c, "reverse_pair"),
        )
        .into(),
        "deboost_cap.json" => yield_penalty_cap(u(c, "h_nr_queued") as u32, u(c, "gran")).into(),
        "deboost_need.json" => {
            yield_penalty_need(u(c, "vruntime_yielder"), u(c, "vruntime_target")).into()
        }
        "deboost_apply.json" => {
            let v = u(c, "vruntime");
            match yield_penalty_new_vruntime(v, u(c, "penalty")) {
                Some(n) => serde_json::json!({"applied": true, "vruntime": n}),
                None => serde_json::json!({"applied": false, "vruntime": v}),
            }
        }
        "deboost_ratelimit.json" => {
            let s = YieldPenaltyState {
                last_apply_ns: u(c, "last_apply_ns"),
                ..YieldPenaltyState::default()
            };
            yield_penalty_rate_limited(&s, u(c, "now_ns")).into()
        }
        "deboost_debounce.json" => {
            let s = YieldPenaltyState {
                last_apply_ns: 0,
                last_pair_ns: u(c, "last_pair_ns"),
                last_src: i(c, "last_src"),
                last_dst: i(c, "last_dst"),
            };
            yield_penalty_reverse_pair(&s, i(c, "src"), i(c, "dst"), u(c, "now_ns")).into()
        }
        "deboost_ratelimit_sequence.json" => {
            // yield_to_penalty()'s order: admit, then commit what was admitted.
            let mut s = YieldPenaltyState::default();
            let steps = c["steps"].as_array().expect("steps");
            let out: Vec<Value> = steps
                .iter()
                .map(|st| {
                    let (now, src, dst) = (u(st, "now_ns"), i(st, "src"), i(st, "dst"));
                    match yield_penalty_admit(&s, src, dst, now) {
                        None => "rate_limited".into(),
                        Some(reverse) => {
                            yield_penalty_commit(&mut s, src, dst, now, reverse);
                            if reverse {
                                "applied_reverse"
                            } else {
                                "applied"
                            }
                            .into()
                        }
                    }
                })
                .collect();
            Value::Array(out)
        }
        "yield_borrow_budget.json" => yield_borrow_budget(u(c, "slice_ns"), u(c, "ran_ns")).into(),
        "yield_borrow_allowed.json" => yield_borrow_allowed(
            u(c, "vruntime"),
            u(c, "avg_vruntime"),
            u(c, "charge"),
            u(c, "limit"),
        )
        .into(),
        other => panic!(
            "vectors/{other}: no simulator mirror for this file (add one in \
             src/sched/yield_to/ and a dispatch arm here)"
        ),
    };
    (got, exp)
}

#[test]
fn every_vector_case_passes_by_name() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../vectors");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("vectors/")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    assert!(
        files.len() >= 9,
        "expected the shared vectors, found {files:?}"
    );
    let mut failures = Vec::new();
    let mut n = 0;
    for f in &files {
        let name = f.file_name().unwrap().to_str().unwrap().to_string();
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(f).unwrap())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let cases = doc["cases"]
            .as_array()
            .unwrap_or_else(|| panic!("{name}: no cases"));
        assert!(!cases.is_empty(), "{name}: no cases");
        for c in cases {
            let case = c["name"].as_str().expect("case name");
            let (got, exp) = run_case(&name, c);
            n += 1;
            if got == exp {
                println!("ok   {name}::{case}");
            } else {
                println!("FAIL {name}::{case}: got {got}, expected {exp}");
                failures.push(format!("{name}::{case}: got {got}, expected {exp}"));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {n} cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
