//! `oversub run --trace`: the Chrome/Perfetto JSON parses, has per-CPU
//! slices and the tracepoint-named events, respects the window, and tracing
//! does not change the run.

use std::process::Command;

fn trace(args: &[&str]) -> (serde_json::Value, String) {
    let out = std::env::temp_dir().join(format!(
        "oversub-trace-{}-{}.json",
        std::process::id(),
        args.len()
    ));
    let o = Command::new(env!("CARGO_BIN_EXE_oversub"))
        .arg("run")
        .args(args)
        .arg("--json")
        .arg("--trace")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).expect("trace is JSON");
    let _ = std::fs::remove_file(&out);
    (v, String::from_utf8_lossy(&o.stdout).into_owned())
}

fn names(v: &serde_json::Value, ph: &str) -> Vec<String> {
    v["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == ph)
        .map(|e| e["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn vm_trace_has_the_kernel_tracepoints() {
    // A phase-generator VM: the nested guests of scenarios/overcommit send
    // their reschedule IPIs without a kvm_apic_ipi trace event yet.
    let (v, _) = trace(&[
        "scenarios/kvm-lock-holder-preemption.toml",
        "--duration",
        "40ms",
        "--set",
        "host.yield.yield_to=deboost-v1",
        "--set",
        "kvm.on_spin=ipi_aware",
    ]);
    let inst = names(&v, "i");
    for n in [
        "sched_switch",
        "sched_wakeup",
        "kvm_exit",
        "kvm_vcpu_on_spin_target",
        "kvm_apic_ipi",
    ] {
        assert!(inst.iter().any(|x| x == n), "no {n}");
    }
    let evs = v["traceEvents"].as_array().unwrap();
    // PAUSE exits carry their reason.
    assert!(evs
        .iter()
        .any(|e| e["name"] == "kvm_exit" && e["args"]["reason"] == "PAUSE_INSTRUCTION"));
    // Slices on pCPU tracks (pid 1) name the vCPU that ran.
    assert!(evs
        .iter()
        .any(|e| e["ph"] == "X" && e["pid"] == 1 && e["name"].as_str().unwrap().contains(".vcpu")));
    // Per-vCPU tracks (pid 2) exist.
    assert!(evs.iter().any(|e| e["ph"] == "X" && e["pid"] == 2));
}

#[test]
fn debooster_event_and_window() {
    let args = [
        "scenarios/yield/cg-bystander.toml",
        "--duration",
        "200ms",
        "--set",
        "host.yield.yield_to=deboost-v1",
    ];
    let (v, report) = trace(&args);
    assert!(names(&v, "i").iter().any(|x| x == "sched_yield_to_tp"));
    // Tracing does not change the results.
    let plain = Command::new(env!("CARGO_BIN_EXE_oversub"))
        .arg("run")
        .args(args)
        .arg("--json")
        .output()
        .unwrap();
    let strip = |s: &str| {
        let mut j: serde_json::Value = serde_json::from_str(s).unwrap();
        j["wall_ns"] = 0.into();
        j
    };
    assert_eq!(
        strip(&report),
        strip(&String::from_utf8_lossy(&plain.stdout))
    );
    // A window keeps only events inside it (ts in us).
    let mut wargs = args.to_vec();
    wargs.extend(["--trace-window", "50ms..60ms"]);
    let (w, _) = trace(&wargs);
    let inst: Vec<f64> = w["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "i")
        .map(|e| e["ts"].as_f64().unwrap())
        .collect();
    assert!(!inst.is_empty());
    assert!(inst.iter().all(|&t| (50_000.0..60_000.0).contains(&t)));
}

#[test]
fn bad_window_is_rejected() {
    let o = Command::new(env!("CARGO_BIN_EXE_oversub"))
        .args([
            "run",
            "scenarios/yield/cg-pair.toml",
            "--trace",
            "/tmp/x.json",
            "--trace-window",
            "2s..1s",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("FROM must be before TO"));
}
