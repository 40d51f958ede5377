//! `oversub run --trace`: the Chrome/Perfetto JSON parses, has per-CPU
//! slices and the tracepoint-named events, respects the window, and tracing
//! does not change the run.

use crate::common::{oversub_cmd, scratch, ROOT};

fn trace(args: &[&str]) -> (serde_json::Value, String) {
    let out = std::env::temp_dir().join(format!(
        "oversub-trace-{}-{}.json",
        std::process::id(),
        args.len()
    ));
    let o = oversub_cmd()
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
        "sched_yield_to_tp",
    ] {
        assert!(inst.iter().any(|x| x == n), "no {n}");
    }
    let evs = v["traceEvents"].as_array().unwrap();
    // PAUSE exits carry their reason.
    assert!(evs
        .iter()
        .any(|e| e["name"] == "kvm_exit" && e["args"]["reason"] == "PAUSE_INSTRUCTION"));
    // A successful directed yield names yielder and target.
    assert!(evs.iter().any(|e| e["name"] == "sched_yield_to_tp"
        && e["args"]["target"].as_str().unwrap().contains(".vcpu")));
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
    let inst = names(&v, "i");
    assert!(inst.iter().any(|x| x == "sched_yield_to_penalty"));
    assert!(inst.iter().any(|x| x == "sched_yield_to_tp"));
    // Tracing does not change the results.
    let plain = oversub_cmd()
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
    let o = oversub_cmd()
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

/// A nested guest's vCPUs get a track of the guest threads they ran, and a
/// guest thread is shown only while its vCPU was on a pCPU.
#[test]
fn nested_guest_has_per_vcpu_thread_tracks() {
    let (v, _) = trace(&["scenarios/nested/2x2-mutex.toml", "--duration", "60ms"]);
    let evs = v["traceEvents"].as_array().unwrap();
    // Track names: "<vm>.vcpu<i> guest" under process 3.
    let tracks: Vec<(u64, String)> = evs
        .iter()
        .filter(|e| e["ph"] == "M" && e["pid"] == 3 && e["name"] == "thread_name")
        .map(|e| {
            (
                e["tid"].as_u64().unwrap(),
                e["args"]["name"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let names: Vec<&str> = tracks.iter().map(|t| t.1.as_str()).collect();
    assert_eq!(
        names,
        [
            "a.vcpu0 guest",
            "a.vcpu1 guest",
            "b.vcpu0 guest",
            "b.vcpu1 guest"
        ]
    );
    // The guest's own sched_switch, named as the kernel's.
    assert!(evs
        .iter()
        .any(|e| e["ph"] == "i" && e["pid"] == 3 && e["name"] == "sched_switch"));
    // Host slices of each vCPU task (pid 2, named by the vCPU's track).
    let task_tid: std::collections::BTreeMap<String, u64> = evs
        .iter()
        .filter(|e| e["ph"] == "M" && e["pid"] == 2 && e["name"] == "thread_name")
        .map(|e| {
            (
                e["args"]["name"].as_str().unwrap().to_string(),
                e["tid"].as_u64().unwrap(),
            )
        })
        .collect();
    let slices = |pid: u64, tid: u64| -> Vec<(String, f64, f64)> {
        evs.iter()
            .filter(|e| e["ph"] == "X" && e["pid"] == pid && e["tid"] == tid)
            .map(|e| {
                let ts = e["ts"].as_f64().unwrap();
                (
                    e["name"].as_str().unwrap().to_string(),
                    ts,
                    ts + e["dur"].as_f64().unwrap(),
                )
            })
            .collect()
    };
    let mut total = 0.0;
    for (gtid, gname) in &tracks {
        let vcpu = gname.trim_end_matches(" guest");
        let host = slices(2, task_tid[vcpu]);
        let guest = slices(3, *gtid);
        assert!(!guest.is_empty(), "{gname}: no guest-thread slices");
        // Every guest slice names a program thread and lies inside one
        // host slice of its vCPU (1 ns of float rounding allowed).
        for (th, a, b) in &guest {
            assert!(th.starts_with("w."), "{gname}: slice {th}");
            assert!(
                host.iter()
                    .any(|(_, ha, hb)| ha - 1e-3 <= *a && *b <= hb + 1e-3),
                "{gname}: {th} {a}..{b} outside the vCPU's host slices"
            );
        }
        total += guest.iter().map(|s| s.2 - s.1).sum::<f64>();
    }
    // Guest threads run only on running vCPUs: 2 pCPUs for 60 ms bound
    // the four tracks together (a guest thread left "running" across a
    // host preemption would break it: all four vCPUs stay busy).
    assert!(total <= 2.0 * 60_000.0 + 1.0, "guest time {total} us");
}

/// A nested guest's IPIs are `kvm_apic_ipi` events like the phase
/// generator's: the synchronous cross-CPU calls of `smp_call.json` are
/// unicast CALL_FUNCTION_SINGLE writes (vector 0xfb) from the caller's vCPU
/// to vCPU 1, and the IPI-aware `on_spin` records them as tracked.
#[test]
fn nested_guest_ipis_are_traced() {
    let dir = scratch("trace-ipi");
    let prog = std::path::Path::new(ROOT).join("crates/oversub-core/tests/nested/smp_call.json");
    std::fs::copy(&prog, dir.join("smp_call.json")).unwrap();
    let sc = dir.join("ipi.toml");
    std::fs::write(
        &sc,
        "[host]\ncpus = 2\nduration = \"50ms\"\n\
         [kvm]\non_spin = \"ipi_aware\"\n\
         [[vm]]\nname = \"g\"\nvcpus = 2\npin = [0, 1]\nprogram = \"smp_call.json\"\n",
    )
    .unwrap();
    let (v, _) = trace(&[sc.to_str().unwrap()]);
    let _ = std::fs::remove_dir_all(&dir);
    let ipis: Vec<&serde_json::Value> = v["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "i" && e["name"] == "kvm_apic_ipi")
        .collect();
    assert!(ipis.len() > 10, "{} kvm_apic_ipi events", ipis.len());
    assert!(ipis.iter().any(|e| e["args"]["vector"] == 0xfb
        && e["args"]["tracked"] == true
        && e["args"]["dest_vcpu"] == 1));
}
