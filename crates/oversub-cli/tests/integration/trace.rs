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

/// `run ARGS --trace` into a file of its own (`tag`): the trace's bytes, its
/// JSON and the run's stdout.
fn traced(tag: &str, args: &[&str]) -> (Vec<u8>, serde_json::Value, String) {
    let out = std::env::temp_dir().join(format!("oversub-tr-{tag}-{}.json", std::process::id()));
    let o = oversub_cmd()
        .arg("run")
        .args(args)
        .arg("--trace")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let bytes = std::fs::read(&out).unwrap();
    let _ = std::fs::remove_file(&out);
    let v = serde_json::from_slice(&bytes).expect("trace is JSON");
    (bytes, v, String::from_utf8_lossy(&o.stdout).into_owned())
}

fn events(v: &serde_json::Value) -> &Vec<serde_json::Value> {
    v["traceEvents"].as_array().unwrap()
}

/// The task-track tid of the task whose fields' `pid` is `pid`.
fn tid_of(v: &serde_json::Value, pid: u64) -> u64 {
    v["otherData"]["cpus"].as_u64().unwrap() + pid
}

/// The flows named `name`: (start event, end event), by id.
fn flows<'a>(
    v: &'a serde_json::Value,
    name: &str,
) -> Vec<(&'a serde_json::Value, &'a serde_json::Value)> {
    let mut starts = std::collections::BTreeMap::new();
    let mut out = Vec::new();
    for e in events(v).iter().filter(|e| e["name"] == name) {
        let id = e["id"].as_u64().unwrap();
        if e["ph"] == "s" {
            starts.insert(id, e);
        } else if e["ph"] == "f" {
            assert_eq!(e["bp"], "e", "a flow binds to the enclosing slice");
            out.push((starts[&id], e));
        }
    }
    out
}

fn instants<'a>(v: &'a serde_json::Value, name: &str) -> Vec<&'a serde_json::Value> {
    events(v)
        .iter()
        .filter(|e| e["ph"] == "i" && e["name"] == name)
        .collect()
}

/// Ping-pong partners wake each other: every wakeup flow of a pp task
/// starts on its partner's track at a `sched_waking` of it in the
/// partner's context, and ends on its own track at the `sched_switch`
/// that ran it next.
#[test]
fn pingpong_wakeup_flows_pair_the_partners() {
    let (_, v, _) = traced(
        "pp",
        &["scenarios/default.toml", "--duration", "30ms", "--brief"],
    );
    let name: std::collections::BTreeMap<u64, String> = events(&v)
        .iter()
        .filter(|e| e["ph"] == "M" && e["pid"] == 2 && e["name"] == "thread_name")
        .map(|e| {
            (
                e["tid"].as_u64().unwrap(),
                e["args"]["name"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let wakings = instants(&v, "sched_waking");
    let switches = instants(&v, "sched_switch");
    let mut pp = 0;
    for (s, f) in flows(&v, "wakeup") {
        let (from, to) = (
            &name[&s["tid"].as_u64().unwrap()],
            &name[&f["tid"].as_u64().unwrap()],
        );
        if !to.starts_with("pp.") {
            continue;
        }
        pp += 1;
        let partner = if to == "pp.0" { "pp.1" } else { "pp.0" };
        assert_eq!(from, partner, "{to} woken by {from}");
        // The sched_waking behind it, in the waker's context.
        assert!(wakings.iter().any(|w| w["ts"] == s["ts"]
            && w["args"]["comm"] == to.as_str()
            && tid_of(&v, w["args"]["common_pid"].as_u64().unwrap())
                == s["tid"].as_u64().unwrap()));
        // Its end is the wakee's next switch-in, not a later one.
        let ins: Vec<f64> = switches
            .iter()
            .filter(|x| x["args"]["next_comm"] == to.as_str())
            .map(|x| x["ts"].as_f64().unwrap())
            .collect();
        let (a, b) = (s["ts"].as_f64().unwrap(), f["ts"].as_f64().unwrap());
        let next = ins.iter().copied().find(|&t| t >= a);
        assert_eq!(
            next,
            Some(b),
            "{to}: woken at {a}, next ran at {next:?}, flow ends at {b}"
        );
    }
    assert!(pp > 100, "{pp} wakeup flows between the ping-pong pair");
}

/// Every `yield_to` flow starts on the yielder's track at its
/// `sched_yield_to_tp` and ends at the target vCPU's next switch-in.
#[test]
fn yield_to_flow_targets_the_vcpu_that_ran_next() {
    let (_, v, _) = traced(
        "yt",
        &[
            "scenarios/kvm-lock-holder-preemption.toml",
            "--duration",
            "20ms",
            "--brief",
            "--set",
            "host.yield.yield_to=deboost-v1",
        ],
    );
    // sched_yield_to_tp by (ts, yielder's tid); switch-in times per pid.
    let tps: std::collections::BTreeMap<(String, u64), u64> = instants(&v, "sched_yield_to_tp")
        .iter()
        .map(|e| {
            let y = tid_of(&v, e["args"]["yielder_pid"].as_u64().unwrap());
            (
                (e["ts"].to_string(), y),
                e["args"]["target_pid"].as_u64().unwrap(),
            )
        })
        .collect();
    let mut ins: std::collections::BTreeMap<u64, Vec<f64>> = Default::default();
    for x in instants(&v, "sched_switch") {
        let n = x["args"]["next_pid"].as_u64().unwrap();
        ins.entry(n).or_default().push(x["ts"].as_f64().unwrap());
    }
    let fl = flows(&v, "yield_to");
    assert!(fl.len() > 100, "{} yield_to flows", fl.len());
    for (s, f) in fl {
        let (a, b) = (s["ts"].as_f64().unwrap(), f["ts"].as_f64().unwrap());
        let target = tps[&(s["ts"].to_string(), s["tid"].as_u64().unwrap())];
        assert_eq!(f["tid"].as_u64().unwrap(), tid_of(&v, target));
        let times = &ins[&target];
        let next = times.get(times.partition_point(|&t| t < a)).copied();
        assert_eq!(
            next,
            Some(b),
            "target {target}: yielded to at {a}, ran at {next:?}"
        );
    }
}

/// An IPI's flow goes from the sender's vCPU to the destination vCPU's
/// task, after an `APIC_WRITE` exit when the write exited.
#[test]
fn ipi_flows_join_sender_and_receiver() {
    let (_, v, _) = traced(
        "ipi",
        &[
            "scenarios/kvm-lock-holder-preemption.toml",
            "--duration",
            "40ms",
            "--brief",
            "--set",
            "kvm.on_spin=ipi_aware",
        ],
    );
    let ipis = instants(&v, "kvm_apic_ipi");
    let fl = flows(&v, "ipi");
    assert_eq!(fl.len(), ipis.len());
    assert!(!fl.is_empty());
    for (s, f) in &fl {
        let ipi = ipis
            .iter()
            .find(|e| {
                e["ts"] == s["ts"]
                    && tid_of(&v, e["args"]["pid"].as_u64().unwrap()) == s["tid"].as_u64().unwrap()
            })
            .expect("a kvm_apic_ipi at the flow's start");
        assert_eq!(
            f["tid"].as_u64().unwrap(),
            tid_of(&v, ipi["args"]["dest_pid"].as_u64().unwrap())
        );
        assert!(f["ts"].as_f64() >= s["ts"].as_f64());
    }
    let exits = instants(&v, "kvm_exit");
    for ipi in ipis.iter().filter(|e| e["args"]["exited"] == true) {
        assert!(exits.iter().any(|x| x["ts"] == ipi["ts"]
            && x["args"]["reason"] == "APIC_WRITE"
            && x["args"]["pid"] == ipi["args"]["pid"]));
    }
}

/// The VM counter "vcpus running" equals the vCPUs the `sched_switch`
/// events put on CPUs, every time it is written; a vCPU enters the guest
/// (`kvm_entry`) only while on a CPU, and a halted vCPU's
/// `kvm_vcpu_wakeup` follows its `HLT` exit.
#[test]
fn vm_counters_and_kvm_events_agree_with_the_switches() {
    let (_, v, _) = traced(
        "ctr",
        &[
            "scenarios/kvm-lock-holder-preemption.toml",
            "--duration",
            "20ms",
            "--brief",
        ],
    );
    let mut running: std::collections::BTreeSet<u64> = Default::default();
    // Runnable vCPUs (all at the start): woken by sched_waking, asleep
    // when switched out in S.
    let mut runnable: std::collections::BTreeSet<u64> = events(&v)
        .iter()
        .filter(|e| e["ph"] == "M" && e["pid"] == 2 && e["name"] == "thread_name")
        .filter(|e| e["args"]["name"].as_str().unwrap().contains(".vcpu"))
        .map(|e| e["tid"].as_u64().unwrap() - v["otherData"]["cpus"].as_u64().unwrap())
        .collect();
    let mut halted: std::collections::BTreeSet<u64> = Default::default();
    let (mut checked, mut entries, mut wakeups) = (0, 0, 0);
    for e in events(&v) {
        match (e["ph"].as_str().unwrap(), e["name"].as_str().unwrap_or("")) {
            ("i", "sched_switch") => {
                let p = e["args"]["prev_pid"].as_u64().unwrap();
                running.remove(&p);
                if e["args"]["prev_state"] == "S" {
                    runnable.remove(&p);
                }
                let n = e["args"]["next_pid"].as_u64().unwrap();
                if e["args"]["next_comm"].as_str().unwrap().contains(".vcpu") {
                    running.insert(n);
                }
            }
            ("i", "sched_waking") => {
                runnable.insert(e["args"]["pid"].as_u64().unwrap());
            }
            ("C", _) if e["args"].get("vcpus waiting (steal)").is_some() => {
                let waiting = runnable.difference(&running).count() as u64;
                assert_eq!(
                    e["args"]["vcpus waiting (steal)"].as_u64().unwrap(),
                    waiting,
                    "at {}",
                    e["ts"]
                );
                checked += 1;
            }
            ("C", _) if e["args"].get("vcpus running").is_some() => {
                assert_eq!(
                    e["args"]["vcpus running"].as_u64().unwrap(),
                    running.len() as u64,
                    "at {}",
                    e["ts"]
                );
                checked += 1;
            }
            ("i", "kvm_entry") => {
                assert!(running.contains(&e["args"]["pid"].as_u64().unwrap()), "{e}");
                entries += 1;
            }
            ("i", "kvm_exit") if e["args"]["reason"] == "HLT" => {
                halted.insert(e["args"]["pid"].as_u64().unwrap());
            }
            ("i", "kvm_vcpu_wakeup") => {
                assert!(halted.remove(&e["args"]["pid"].as_u64().unwrap()), "{e}");
                wakeups += 1;
            }
            _ => {}
        }
    }
    assert!(
        checked > 10 && entries > 100 && wakeups > 10,
        "{checked} {entries} {wakeups}"
    );
}

/// Two VMs alone on the host share every CPU's root queue, where the
/// weighted lags of the queued entities sum to zero: the two VMs' lag
/// counters are opposite (up to their µs truncation) every time one is
/// written, and move by far more than that. A CFS host has no lag track.
#[test]
fn vm_lag_counters_balance_between_two_vms() {
    // The strip-barrier pool fixture: its vCPUs halt and wake often, so
    // the VM entities' lags are written often (the derived dedup's and
    // vips' vCPUs rarely block: a few tens of writes in 20 ms).
    let (_, v, _) = traced(
        "lag",
        &[
            "crates/oversub-cli/tests/data/pool-2x16.toml",
            "--duration",
            "20ms",
            "--brief",
        ],
    );
    // Each VM's value as of the end of each instant that wrote one.
    let mut lag: std::collections::BTreeMap<String, i64> = Default::default();
    let mut at: Vec<(f64, std::collections::BTreeMap<String, i64>)> = Vec::new();
    for e in events(&v).iter().filter(|e| e["ph"] == "C") {
        let Some(x) = e["args"].get("lag (us)") else {
            continue;
        };
        lag.insert(e["name"].as_str().unwrap().into(), x.as_i64().unwrap());
        let ts = e["ts"].as_f64().unwrap();
        match at.last_mut() {
            Some((t, m)) if *t == ts => *m = lag.clone(),
            _ => at.push((ts, lag.clone())),
        }
    }
    let (mut checked, mut max) = (0, 0);
    for (ts, lag) in at.iter().filter(|(_, m)| m.len() == 2) {
        let sum: i64 = lag.values().sum();
        assert!(sum.abs() <= 1, "at {ts}: {lag:?}");
        max = max.max(lag["vm0"].abs());
        checked += 1;
    }
    assert!(
        checked > 100 && max > 100,
        "{checked} writes, max |lag| {max} us"
    );
    let (_, v, _) = traced(
        "lag-cfs",
        &[
            "scenarios/cfs/ebizzy-2x16.toml",
            "--duration",
            "5ms",
            "--brief",
        ],
    );
    assert!(events(&v)
        .iter()
        .all(|e| e["ph"] != "C" || e["args"].get("lag (us)").is_none()));
}

/// Three hogs on two CPUs: the balancer moves them; each task's
/// switch-ins are on the CPU its last `sched_migrate_task` named.
#[test]
fn migrations_name_the_cpu_the_task_runs_on_next() {
    let dir = scratch("trace-mig");
    let sc = dir.join("mig.toml");
    std::fs::write(
        &sc,
        "[host]\ncpus = 2\nduration = \"300ms\"\n\
         [[task]]\nname = \"h\"\nkind = \"hog\"\ncount = 3\n",
    )
    .unwrap();
    let (_, v, _) = traced("mig", &[sc.to_str().unwrap(), "--brief"]);
    let _ = std::fs::remove_dir_all(&dir);
    let mut on: std::collections::BTreeMap<u64, u64> = Default::default();
    let mut migrations = 0;
    for e in events(&v).iter().filter(|e| e["ph"] == "i") {
        let a = &e["args"];
        match e["name"].as_str().unwrap() {
            "sched_migrate_task" => {
                let pid = a["pid"].as_u64().unwrap();
                if let Some(&c) = on.get(&pid) {
                    assert_eq!(a["orig_cpu"].as_u64(), Some(c), "{e}");
                }
                on.insert(pid, a["dest_cpu"].as_u64().unwrap());
                migrations += 1;
            }
            "sched_switch" if a["next_pid"] != 0 => {
                let cpu = e["tid"].as_u64().unwrap() - 1;
                let pid = a["next_pid"].as_u64().unwrap();
                assert_eq!(*on.entry(pid).or_insert(cpu), cpu, "{e}");
            }
            _ => {}
        }
    }
    assert!(migrations > 0);
}

/// Same scenario and seed: byte-identical traces; another seed: another
/// trace.
#[test]
fn traces_are_deterministic() {
    let args = [
        "scenarios/kvm-lock-holder-preemption.toml",
        "--duration",
        "10ms",
        "--brief",
    ];
    let (a, _, _) = traced("det-a", &args);
    let (b, _, _) = traced("det-b", &args);
    assert!(a == b, "two traces of one seed differ");
    let mut other = args.to_vec();
    other.extend(["--seed", "2"]);
    let (c, _, _) = traced("det-c", &other);
    assert!(a != c, "seeds 1 and 2 give the same trace");
}

/// `trace report` of a run's trace prints the table `run --latency`
/// prints for the same run, and its ping-pong rows count the wakeups the
/// trace holds.
#[test]
fn trace_report_equals_run_latency() {
    let args = [
        "scenarios/default.toml",
        "--duration",
        "30ms",
        "--brief",
        "--latency",
    ];
    let out = std::env::temp_dir().join(format!("oversub-tr-rep-{}.json", std::process::id()));
    let o = oversub_cmd()
        .arg("run")
        .args(args)
        .arg("--trace")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success());
    let plain = oversub_cmd().arg("run").args(args).output().unwrap();
    let rep = oversub_cmd()
        .args(["trace", "report"])
        .arg(&out)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let _ = std::fs::remove_file(&out);
    assert!(
        rep.status.success(),
        "{}",
        String::from_utf8_lossy(&rep.stderr)
    );
    let table = String::from_utf8_lossy(&rep.stdout).into_owned();
    // --latency with and without --trace: the run's output, a blank line,
    // then the table.
    for run in [&o.stdout, &plain.stdout] {
        let run = String::from_utf8_lossy(run);
        assert!(
            run.ends_with(&format!("\n\n{table}")),
            "{run}\n---\n{table}"
        );
    }
    let wakings = |comm: &str| {
        instants(&v, "sched_waking")
            .iter()
            .filter(|e| e["args"]["comm"] == comm)
            .count()
    };
    let row = table.lines().find(|l| l.starts_with("pp.0 ")).unwrap();
    let cols: Vec<&str> = row.split('|').map(str::trim).collect();
    assert_eq!(cols[5].parse::<usize>().unwrap(), wakings("pp.0"), "{row}");
}

/// `trace report` refuses what `run --trace` did not write, and a trace
/// cut short, with one line and exit 2.
#[test]
fn trace_report_refuses_other_files() {
    let dir = scratch("trace-bad");
    let bad = dir.join("bad.json");
    std::fs::write(&bad, "{\"foo\": 1}\n").unwrap();
    let cut = dir.join("cut.json");
    let (bytes, _, _) = traced(
        "cut",
        &[
            "scenarios/yield/cg-pair.toml",
            "--duration",
            "5ms",
            "--brief",
        ],
    );
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    for (f, want) in [(&bad, "line 1"), (&cut, "cut short")] {
        let o = oversub_cmd()
            .args(["trace", "report"])
            .arg(f)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.contains(f.to_str().unwrap()) && err.contains(want),
            "{err}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
