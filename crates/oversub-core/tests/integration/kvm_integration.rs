//! VMs on the simulated host: vCPU tasks driven by the guest/KVM model
//! (docs/kvm-model.md, "Integration"). Each test states what the kernel's
//! rules predict and checks the simulator against it.

use crate::common::{run, unicast_ipis, vm};
use oversub::kvm::ple::{cycles_to_ns, PleParams};
use oversub::report::Report;
use oversub::scenario::Scenario;
use oversub::RunOptions;

/// The workspace root: the scenario paths below are relative to it.
const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

fn run_fast(src: &str) -> Report {
    let sc = Scenario::parse("test.toml", src).unwrap_or_else(|e| panic!("{e}"));
    oversub::run_scenario(&sc, None, None).expect("the run finishes")
}

fn pingpong(on_spin: &str) -> String {
    format!(
        r#"
[host]
cpus = 1
duration = "300ms"
[kvm]
on_spin = "{on_spin}"
[[vm]]
name = "pp"
vcpus = 2
layout = "flat"
workload = "phase:pingpong"
"#
    )
}

/// VMX defaults, 40 cycles per PAUSE iteration at 2 GHz: a PAUSE loop exits
/// at the first PAUSE more than `window` cycles after its start.
fn exit_after(window: u32) -> u64 {
    let cpi = 40;
    let at = u64::from(window) / cpi + 1;
    cycles_to_ns(at * cpi, 2_000_000).0
}

#[test]
fn pingpong_on_one_pcpu_takes_two_ple_exits_per_handoff() {
    // Two vCPUs of one VM share one pCPU and hand a turn back and forth. The
    // waiter spins in the guest kernel; with ple_window_shrink = 0 the window
    // is back at 4096 whenever a vCPU is scheduled in, so the first PAUSE
    // exit comes after exit_after(4096) = 2.06 us of spinning. The partner
    // got the CPU from its own directed yield, inside kvm_vcpu_on_spin(), so
    // it is still `in_spin_loop` (with dy_eligible false): the first exit
    // passes over it (toggling dy_eligible), and the second, after the
    // doubled window (exit_after(8192)), boosts it. Two exits per handoff.
    let r = run(&pingpong("6.12"));
    let v = vm(&r, "pp");
    assert!(v.ops > 10_000, "{v:?}");
    let per = v.ple_exits as f64 / v.ops as f64;
    assert!((2.0..2.01).contains(&per), "exits per handoff {per}");
    assert!(v.yield_to_successes as f64 >= 0.99 * v.ops as f64);
    let spin = v.spinning_ns as f64 / v.ops as f64;
    let w = PleParams::vmx_default().window;
    let pred = (exit_after(w) + exit_after(2 * w)) as f64;
    assert!(
        (pred..pred * 1.1).contains(&spin),
        "spin per handoff {spin} ns, predicted {pred} ns"
    );
}

/// `yield_to()`'s own CPU time (`[host.costs] yield_to`) is the yielding
/// vCPU's, paid as exit overhead before it enters the guest again: in the
/// one-pCPU ping-pong every handoff has one successful directed yield, so
/// each handoff costs 20 us more exit overhead with a 20 us `yield_to`.
#[test]
fn the_yielding_vcpu_pays_for_yield_to_as_exit_overhead() {
    let per_op = |cost: &str| {
        let src = format!("{}[host.costs]\nyield_to = \"{cost}\"\n", pingpong("6.12"));
        let r = run(&src);
        let v = vm(&r, "pp").clone();
        assert!(v.ops > 2_000, "{v:?}");
        assert!(
            (v.yield_to_successes as f64) >= 0.99 * v.ops as f64,
            "{v:?}"
        );
        assert_eq!(v.yield_to_attempts, v.yield_to_successes, "{v:?}");
        (v.exit_overhead_ns as f64 / v.ops as f64, v.ops)
    };
    let (free, ops_free) = per_op("0ns");
    let (paid, ops_paid) = per_op("20us");
    let extra = paid - free;
    assert!(
        (19_000.0..21_000.0).contains(&extra),
        "extra exit overhead per handoff {extra} ns"
    );
    assert!(ops_paid < ops_free, "{ops_paid} vs {ops_free}");
}

#[test]
fn pingpong_without_directed_yield_spins_until_the_tick() {
    // No directed yield: the waiter keeps spinning, its window doubling on
    // every exit (ple_window_grow = 2), until the tick preempts it after a
    // 4 ms (HZ=250, tick-granular 3 ms slice) run. k exits take
    // sum_{j<k} exit_after(4096 * 2^j); the count per handoff is the k with
    // that sum just below 4 ms.
    let r = run(&pingpong("off"));
    let v = vm(&r, "pp");
    let p = PleParams::vmx_default();
    let (mut w, mut t, mut k) = (p.window, 0u64, 0u64);
    while t + exit_after(w) <= 4_000_000 {
        t += exit_after(w);
        w = p.grow_ple_window(w);
        k += 1;
    }
    let per = v.ple_exits as f64 / v.ops as f64;
    assert!(
        (k as f64 - 0.5..k as f64 + 1.0).contains(&per),
        "exits per handoff {per}, predicted {k}"
    );
    assert_eq!(v.yield_to_attempts, 0);
}

fn lhp(lock: &str, on_spin: &str) -> String {
    format!(
        r#"
[host]
cpus = 4
duration = "500ms"
[kvm]
on_spin = "{on_spin}"
[[vm]]
name = "a"
vcpus = 8
workload = "phase:dbench"
[vm.overrides]
lock_kind = "{lock}"
locks = 1
cs_ns = 2000
ipi_per_ms = 0
block_prob = 0
"#
    )
}

#[test]
fn directed_yield_beats_no_directed_yield_under_lock_holder_preemption() {
    // 8 vCPUs on 4 pCPUs contend for one lock: holders and queued waiters
    // get preempted. Directed yield hands the spinner's CPU to a preempted
    // vCPU (the holder or the next waiter); without it a spinner burns its
    // whole slice. (PV qspinlock waiters halt after SPIN_THRESHOLD
    // iterations and are kicked, which hides most of the difference: see
    // pv_spinlock_halts_and_kicks_with_counted_hypercall_yields.)
    for lock in ["native_qspinlock", "ticket"] {
        let on = run_fast(&lhp(lock, "6.12"));
        let off = run_fast(&lhp(lock, "off"));
        let (a, b) = (vm(&on, "a"), vm(&off, "a"));
        assert!(
            a.ops as f64 > 1.3 * b.ops as f64,
            "{lock}: directed yield {} ops, none {} ops",
            a.ops,
            b.ops
        );
        assert!(a.yield_to_successes > 0 && b.yield_to_attempts == 0);
        assert!(a.spinning_ns < b.spinning_ns, "{lock}");
    }
}

#[test]
fn every_on_spin_form_runs_and_yields() {
    for form in [
        "6.12",
        "6.13",
        "6.19",
        "ipi_aware",
        "2011-yield-to",
        "2012-dy-eligible",
        "2013-try-budget",
        "2014-preempted",
        "2017-kernel-mode",
        "2019-ready",
        "2019-preempted-in-kernel",
    ] {
        let r = run_fast(&lhp("native_qspinlock", form));
        let v = vm(&r, "a");
        assert!(v.on_spin_calls > 0 && v.yield_to_successes > 0, "{form}");
    }
}

#[test]
fn with_ipiv_no_ipi_reaches_kvm() {
    let r = run(&unicast_ipis(
        "apicv = true\nipiv = true\non_spin = \"ipi_aware\"",
    ));
    let v = vm(&r, "v");
    assert!(v.ipis_sent > 100, "{v:?}");
    assert_eq!(v.ipi_exits, 0);
    assert_eq!(v.ipis_tracked, 0);
    assert_eq!(v.eoi_exits, 0, "APICv virtualizes EOI");
    assert!(v.ipi_latency_ns.samples > 0);
}

#[test]
fn without_apicv_every_unicast_ipi_and_eoi_exits() {
    let r = run(&unicast_ipis("on_spin = \"ipi_aware\""));
    let v = vm(&r, "v");
    assert!(v.ipis_sent > 100);
    assert_eq!(
        v.ipi_exits, v.ipis_sent,
        "one ICR-write exit per unicast IPI"
    );
    assert_eq!(v.ipis_tracked, v.ipis_sent, "tracked by the IPI-aware form");
    assert!(v.eoi_exits >= v.ipi_latency_ns.samples.saturating_sub(10));
    // Upstream forms do not track.
    let r = run(&unicast_ipis("on_spin = \"6.12\""));
    assert_eq!(vm(&r, "v").ipis_tracked, 0);
}

#[test]
fn halted_vcpus_block_and_are_woken_by_unicast_ipis() {
    // Every compute burst ends in HLT for ~200 us; IPIs wake the targets.
    let r = run(r#"
[host]
cpus = 2
duration = "200ms"
[[vm]]
name = "h"
vcpus = 4
workload = "phase:dedup"
[vm.overrides]
block_prob = 1.0
block_ns = 200000
ipi_per_ms = 50
"#);
    let v = vm(&r, "h");
    assert!(v.halts > 100, "{v:?}");
    // Halted vCPUs leave the host CPUs partly idle.
    let busy: u64 = r.cpus.iter().map(|c| c.busy_ns).sum();
    assert!(busy < 2 * 200_000_000, "busy {busy}");
    assert!(v.ipi_latency_ns.samples > 0);
    let wakeups: u64 = r.tasks.iter().map(|t| t.nr_wakeups).sum();
    assert!(
        wakeups >= v.halts / 2,
        "HLT blocks the task, a kick wakes it"
    );
}

#[test]
fn pv_spinlock_halts_and_kicks_with_counted_hypercall_yields() {
    let r = run_fast(&lhp("pv_qspinlock", "6.12").replace("cs_ns = 2000", "cs_ns = 20000"));
    let v = vm(&r, "a");
    assert!(v.halts > 0 && v.pv_kicks > 0, "{v:?}");
    assert_eq!(
        v.directed_yield_attempted, v.pv_kicks,
        "KVM_HC_KICK_CPU calls kvm_sched_yield"
    );
    assert!(v.directed_yield_successful <= v.directed_yield_attempted);
}

#[test]
fn without_kick_yield_the_kick_only_wakes() {
    // KVM before 266e85a5ec9 ("Boost queue head vCPU"): KVM_HC_KICK_CPU
    // wakes the queue head but the releaser does not yield to it.
    let s = lhp("pv_qspinlock", "6.12").replace("cs_ns = 2000", "cs_ns = 20000");
    let r = run_fast(&s.replacen("[kvm]", "[kvm]\nkick_yield = false", 1));
    let v = vm(&r, "a");
    assert!(v.halts > 0 && v.pv_kicks > 0, "{v:?}");
    assert_eq!(v.directed_yield_attempted, 0, "{v:?}");
}

/// Three vCPUs of one VM on one pCPU shooting down each other's TLBs
/// (`phase:ebizzy`: synchronous multicast shootdowns) with PV TLB flush
/// off, so each shootdown is a call-function IPI to a mask of two vCPUs,
/// both preempted (one pCPU).
fn shootdowns_on_one_pcpu(sched_yield: bool) -> String {
    format!(
        r#"
[host]
cpus = 1
duration = "100ms"
[kvm]
on_spin = "2017-kernel-mode"
kick_yield = false
[guest.pv]
steal_time = true
sched_yield = {sched_yield}
tlb_flush = false
[[vm]]
name = "v"
vcpus = 3
layout = "flat"
workload = "phase:ebizzy"
"#
    )
}

#[test]
fn pv_sched_yield_hands_the_pcpu_to_a_preempted_ipi_target() {
    // 715062970f37 "KVM: X86: Implement PV sched yield hypercall" and its
    // guest side (kvm_smp_send_call_func_ipi): a vCPU that sends a
    // call-function IPI to a mask holding a preempted vCPU (steal time's
    // preempted flag) yields to it at once (KVM_HC_SCHED_YIELD ->
    // kvm_sched_yield -> yield_to) instead of spinning in csd_lock_wait
    // until a PAUSE-loop exit picks a vCPU. Without the hypercall nobody
    // is yielded to outside kvm_vcpu_on_spin, and the waits end in PLE
    // exits instead.
    let on = run_fast(&shootdowns_on_one_pcpu(true));
    let off = run_fast(&shootdowns_on_one_pcpu(false));
    let (a, b) = (vm(&on, "v"), vm(&off, "v"));
    assert!(a.ops > 100 && b.ops > 100, "{a:?} {b:?}");
    assert_eq!(b.directed_yield_attempted, 0, "{b:?}");
    assert!(a.directed_yield_attempted > 100, "{a:?}");
    // On one pCPU the preempted target is runnable on the same runqueue:
    // every hypercall's yield_to boosts it and it runs next.
    assert_eq!(
        a.directed_yield_successful, a.directed_yield_attempted,
        "{a:?}"
    );
    // A wait that the hypercall ends does not reach the PLE window (the
    // second target of the mask still may: ~0.65 against ~0.77 per op).
    assert!(
        (a.ple_exits as f64 / a.ops as f64) < (b.ple_exits as f64 / b.ops as f64),
        "PLE exits per op {} / {} with / without",
        a.ple_exits as f64 / a.ops as f64,
        b.ple_exits as f64 / b.ops as f64
    );
}

#[test]
fn idle_vms_cost_almost_nothing() {
    let r = run(r#"
[host]
cpus = 2
duration = "2s"
[[vm]]
name = "idle"
vcpus = 4
workload = "phase:idle"
"#);
    let v = vm(&r, "idle");
    assert!(v.cpu_ns < 2_000_000, "{v:?}");
    assert_eq!(v.ple_exits, 0);
}

#[test]
fn layouts_and_pinning_place_vcpus() {
    let r = run(r#"
[host]
cpus = 4
duration = "50ms"
[[cgroup]]
path = "/machine"
[[vm]]
name = "a"
vcpus = 2
cgroup = "/machine/a"
pin = [1, 3]
workload = "phase:kernbench"
[[vm]]
name = "b"
vcpus = 2
layout = "flat"
cpus = [0]
workload = "phase:kernbench"
[[vm]]
name = "c"
vcpus = 2
layout = "explicit"
vcpu_cgroups = ["/x/one", "/y"]
workload = "phase:kernbench"
"#);
    let t = |n: &str| r.tasks.iter().find(|t| t.name == n).unwrap();
    assert_eq!(t("a.vcpu0").cgroup, "/machine/a/vcpu0");
    assert_eq!(t("a.vcpu0").cpu, 1);
    assert_eq!(t("a.vcpu1").cpu, 3);
    assert_eq!(t("b.vcpu1").cgroup, "/b");
    assert_eq!(t("b.vcpu0").cpu, 0);
    assert_eq!(t("b.vcpu1").cpu, 0);
    assert_eq!(t("c.vcpu0").cgroup, "/x/one");
    assert_eq!(t("c.vcpu1").cgroup, "/y");
    assert!(t("a.vcpu0").nr_migrations == 0 && t("a.vcpu1").nr_migrations == 0);
}

/// The JSON of a run without its wall time.
fn json_without_wall(r: &Report) -> serde_json::Value {
    let mut v: serde_json::Value = serde_json::from_str(&r.to_json()).expect("json");
    v.as_object_mut().unwrap().remove("wall_ns");
    v
}

#[test]
fn vm_runs_are_deterministic() {
    let src = unicast_ipis("on_spin = \"ipi_aware\"")
        .replace("duration = \"200ms\"", "duration = \"100ms\"");
    let sc = Scenario::parse("vm.toml", &src).unwrap_or_else(|e| panic!("{e}"));
    let run = |seed| oversub::run(&sc, RunOptions::default().seed(seed)).expect("a run");
    let (ja, jb) = (json_without_wall(&run(None)), json_without_wall(&run(None)));
    assert_eq!(ja, jb);
    assert!(ja["vms"][0]["ops"].as_u64().unwrap() > 0);
    assert_ne!(ja["vms"], json_without_wall(&run(Some(7)))["vms"]);
}

#[test]
fn host_only_reports_have_no_vms_key() {
    let r =
        run_fast("[host]\ncpus = 1\nduration = \"10ms\"\n[[task]]\nname = \"h\"\nkind = \"hog\"\n");
    assert!(!r.to_json().contains("\"vms\""));
}

fn bad(src: &str) -> String {
    let e = Scenario::parse("bad.toml", src).expect_err("must be rejected");
    let s = e.to_string();
    assert!(!s.contains('\n'), "one line: {s}");
    assert!(s.starts_with("bad.toml: "), "{s}");
    s
}

#[test]
fn vm_scenario_errors_name_the_field_and_the_allowed_values() {
    let base = "[host]\ncpus = 2\n[[vm]]\nname = \"v\"\nvcpus = 2\n";
    // (text before the base, text after it, what the one-line error must name)
    let cases: &[(&str, &str, &[&str])] = &[
        ("", "colour = \"red\"\n", &["colour"]),
        ("", "workload = \"tpcc\"\n", &["vm[0].workload", "dedup"]),
        ("", "layout = \"tree\"\n", &["vm[0].layout", "libvirt"]),
        ("", "pin = [0]\n", &["vm[0].pin"]),
        ("", "pin = [0, 5]\n", &["vm[0].pin", "0 ..= 1"]),
        (
            "",
            "[vm.overrides]\nspeed = 3\n",
            &["vm[0].overrides", "speed"],
        ),
        ("", "layout = \"explicit\"\n", &["vm[0].vcpu_cgroups"]),
        ("[kvm]\non_spin = \"5.10\"\n", "", &["kvm.on_spin", "6.12"]),
        ("[kvm]\nple = \"arm\"\n", "", &["kvm.ple", "svm"]),
        (
            "[kvm]\nipi_eoi = \"any\"\n",
            "",
            &["kvm.ipi_eoi", "ipi_aware"],
        ),
        (
            "[kvm]\non_spin = \"ipi_aware\"\nipi_order = \"x\"\n",
            "",
            &["kvm.ipi_order", "receiver_first"],
        ),
        ("[kvm]\nipiv = true\n", "", &["kvm.ipiv"]),
        (
            "[kvm]\nple = \"svm\"\nple_window = 70000\n",
            "",
            &["kvm.ple_window", "65535"],
        ),
        ("[guest.pv]\nsteal = true\n", "", &["steal"]),
        // Settings that cannot take effect (a sweep over them gave
        // identical rows): a directed-yield form without PLE, a kick yield
        // without the PV spinlock that kicks.
        (
            "[kvm]\nple = \"off\"\non_spin = \"2012-dy-eligible\"\n",
            "",
            &[
                "kvm.on_spin",
                "2012-dy-eligible",
                "no effect",
                "allowed \"off\"",
            ],
        ),
        (
            "[kvm]\nple_gap = 0\non_spin = \"6.12\"\n",
            "",
            &["kvm.on_spin", "ple_gap = 0"],
        ),
        (
            "[kvm]\nkick_yield = true\n[guest.pv]\nspinlock = false\n",
            "",
            &["kvm.kick_yield", "guest.pv.spinlock = false", "allowed"],
        ),
        (
            "[kvm]\nkick_yield = true\n[guest]\nnopvspin = true\n",
            "",
            &["kvm.kick_yield", "guest.nopvspin = true", "allowed"],
        ),
        (
            "",
            concat!(
                "program = \"",
                env!("CARGO_MANIFEST_DIR"),
                "/../../scenarios/nested/workers-mutex.json\"\nkernel = \"6.1\"\n",
                "[vm.features]\nRUN_TO_PARITY = false\n"
            ),
            &[
                "vm[0].features.RUN_TO_PARITY",
                "kernel 6.1",
                "allowed on 6.12.0",
            ],
        ),
        (
            "",
            "workload = \"phase:idle\"\n[[vm]]\nname = \"v\"\nworkload = \"phase:idle\"\n",
            &["vm[1].name"],
        ),
    ];
    for (before, after, names) in cases {
        let e = bad(&format!("{before}{base}{after}"));
        for n in *names {
            assert!(e.contains(n), "{before}{base}{after} -> {e}: must name {n}");
        }
    }
}

#[test]
fn overcommit_scenarios_parse_and_run() {
    let mut n = 0;
    for entry in std::fs::read_dir(std::path::Path::new(ROOT).join("scenarios/overcommit")).unwrap()
    {
        let p = entry.unwrap().path();
        if p.extension().is_some_and(|e| e == "toml") {
            let sc = Scenario::load(&p).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(sc.host.cpus, 16);
            assert!(sc.vms.iter().all(|v| v.vcpus == 16), "{}", p.display());
            let r = oversub::run_scenario(&sc, None, Some(oversub::engine::Nanos::from_ms(5)))
                .expect("the run finishes");
            assert_eq!(r.vms.len(), sc.vms.len());
            n += 1;
        }
    }
    assert_eq!(n, 28, "1..=4 VMs for each of the 7 profiles");
}

#[test]
fn svm_pause_filter_counts_pauses() {
    // SVM: the exit comes on the pause_filter_count-th PAUSE (3000 by
    // default), i.e. after 2999 * 40 cycles = 59.98 us at 2 GHz; as on VMX
    // the first exit passes over the partner still in its spin loop, and
    // the second (after the grown count) boosts it.
    let r = run(&pingpong("6.12").replace("[kvm]", "[kvm]\nple = \"svm\""));
    let v = vm(&r, "pp");
    let per = v.ple_exits as f64 / v.ops as f64;
    assert!((1.99..2.01).contains(&per), "exits per handoff {per}");
    let spin = v.spinning_ns as f64 / v.ops as f64;
    let grown = PleParams::svm_default().grow_ple_window(3000) as u64;
    let pred = cycles_to_ns((2999 + grown - 1) * 40, 2_000_000).0 as f64;
    assert!((pred..pred * 1.05).contains(&spin), "{spin} vs {pred}");
}

#[test]
fn no_ple_means_no_pause_exits() {
    let r = run(&pingpong("off").replace("[kvm]", "[kvm]\nple = \"off\""));
    let v = vm(&r, "pp");
    assert_eq!(v.ple_exits, 0);
    assert!(v.ops > 0, "the tick still hands over");
}

#[test]
fn vms_and_plain_tasks_share_the_host() {
    let r = run(r#"
[host]
cpus = 2
duration = "200ms"
[[task]]
name = "hog"
kind = "hog"
[[vm]]
name = "v"
vcpus = 2
workload = "phase:kernbench"
"#);
    let hog = r.tasks.iter().find(|t| t.name == "hog").unwrap().cpu_ns as f64;
    let v = vm(&r, "v");
    // Three CPU-bound entities at the top level (hog, /v) on two CPUs: the
    // VM's cgroup gets about the same share as the hog.
    assert!(
        hog > 0.5e8 && v.cpu_ns as f64 > 0.5e8,
        "hog {hog}, vm {}",
        v.cpu_ns
    );
    assert!(v.ops > 0);
}

/// `kvm_spinlock_init()`: without PV_UNHALT (`[guest.pv] spinlock = false`)
/// a KVM guest's qspinlock is the test-and-set `virt_spin_lock()`, with
/// `nopvspin` the native qspinlock. The run is exactly the run of a profile
/// that names that lock (the simulator is deterministic), and neither
/// halts nor kicks.
#[test]
fn pv_spinlock_off_is_virt_spin_lock_and_nopvspin_the_native_lock() {
    let src = lhp("pv_qspinlock", "off").replace("cs_ns = 2000", "cs_ns = 20000");
    let on = run_fast(&src);
    assert!(vm(&on, "a").pv_kicks > 0);
    let no_unhalt = run_fast(&src.replace("[kvm]", "[guest.pv]\nspinlock = false\n[kvm]"));
    let nopvspin = run_fast(&src.replace("[kvm]", "[guest]\nnopvspin = true\n[kvm]"));
    for r in [&no_unhalt, &nopvspin] {
        assert_eq!(vm(r, "a").pv_kicks, 0);
        assert_eq!(vm(r, "a").halts, 0);
    }
    let tas = run_fast(&src.replace("lock_kind = \"pv_qspinlock\"", "lock_kind = \"tas\""));
    let native = run_fast(&src.replace(
        "lock_kind = \"pv_qspinlock\"",
        "lock_kind = \"native_qspinlock\"",
    ));
    // The run, not the scenario it echoes.
    let run = |r: &Report| {
        let mut v = json_without_wall(r);
        v.as_object_mut().unwrap().remove("scenario");
        v
    };
    let (no_unhalt, nopvspin) = (run(&no_unhalt), run(&nopvspin));
    assert_eq!(no_unhalt, run(&tas));
    assert_eq!(nopvspin, run(&native));
    assert_ne!(no_unhalt, nopvspin, "the two locks behave alike here");
}

#[test]
fn reschedule_ipis_hand_work_to_idle_vcpus() {
    // Every compute burst ends in a long idle HLT (10 ms). Reschedule IPIs
    // go to an idle-halted vCPU and wake it early to run the work item, so
    // with them the VM gets through far more work.
    let src = |ipi: u32| {
        format!(
            r#"
[host]
cpus = 4
duration = "300ms"
[[vm]]
name = "w"
vcpus = 4
workload = "phase:vips"
[vm.overrides]
block_prob = 1.0
block_ns = 10000000
compute_ns = 50000
ipi_per_ms = {ipi}
"#
        )
    };
    let quiet = run(&src(0));
    let busy = run(&src(100));
    let (q, b) = (vm(&quiet, "w"), vm(&busy, "w"));
    assert!(
        b.ops > 3 * q.ops,
        "with IPIs {} ops, without {}",
        b.ops,
        q.ops
    );
    assert!(b.ipi_latency_ns.samples > 0);
}

#[test]
fn tlb_shootdowns_use_the_pv_hypercall_or_a_broadcast() {
    let src = |pv: &str| {
        format!(
            r#"
[host]
cpus = 2
duration = "100ms"
[guest.pv]
{pv}
[[vm]]
name = "e"
vcpus = 4
workload = "phase:ebizzy"
"#
        )
    };
    // One hypercall exit per shootdown, whatever the number of targets.
    let r = run(&src("send_ipi = true"));
    let v = vm(&r, "e");
    assert!(v.ipis_sent > v.ipi_exits && v.ipi_exits > 0, "{v:?}");
    assert_eq!(v.ipis_tracked, 0);
    // Native: a broadcast (one exit, 3 IPIs) when all three others get an
    // IPI (PV TLB flush off, so preempted vCPUs are targeted too), else one
    // unicast exit per IPI: the IPI mask leaves out a target whose call
    // queue is not empty (smp_call_function_many_cond's llist_add()).
    let r = run(&src("send_ipi = false\ntlb_flush = false"));
    let v = vm(&r, "e");
    assert!(v.ipis_sent > v.ipi_exits, "some broadcasts: {v:?}");
    assert_eq!(
        (v.ipis_sent - v.ipi_exits) % 2,
        0,
        "3 IPIs or 1 per exit: {v:?}"
    );
    assert_eq!(v.ipis_tracked, 0, "upstream forms never track");
}

#[test]
fn ipi_aware_on_spin_boosts_the_ipi_receiver() {
    // Synchronous IPIs on an overcommitted host: the sender spins in
    // csd_lock_wait while its receiver is often preempted. The IPI-aware form
    // boosts the tracked receiver; upstream forms never classify a boost so.
    let src = |form: &str| {
        format!(
            r#"
[host]
cpus = 2
duration = "300ms"
[kvm]
on_spin = "{form}"
[[vm]]
name = "s"
vcpus = 6
workload = "phase:dedup"
[vm.overrides]
ipi_per_ms = 40
ipi_sync = true
locks = 0
block_prob = 0
"#
        )
    };
    let aware = run_fast(&src("ipi_aware"));
    let v = vm(&aware, "s");
    assert!(v.boosts_to_ipi_receiver > 0, "{v:?}");
    let up = run_fast(&src("6.12"));
    assert_eq!(vm(&up, "s").boosts_to_ipi_receiver, 0);
    // Every series knob runs.
    for knobs in [
        "ipi_order = \"receiver_first\"",
        "ipi_base = \"6.19\"\nrelaxed_boost = false",
        "ipi_eoi = \"any\"\nipi_window = \"1ms\"",
    ] {
        let r = run_fast(&src("ipi_aware").replace("[[vm]]", &format!("{knobs}\n[[vm]]")));
        assert!(vm(&r, "s").on_spin_calls > 0, "{knobs}");
    }
}

#[test]
fn halt_polling_spends_cpu_only_when_the_pcpu_is_otherwise_idle() {
    let src = |pin: &str| {
        format!(
            r#"
[host]
cpus = 2
duration = "200ms"
[kvm]
halt_poll = "50us"
[[vm]]
name = "p"
vcpus = 2
pin = {pin}
workload = "phase:dedup"
[vm.overrides]
block_ns = 20000
"#
        )
    };
    let alone = run(&src("[0, 1]"));
    assert!(vm(&alone, "p").halt_polling_ns > 0);
    let shared = run(&src("[0, 0]"));
    assert!(
        vm(&shared, "p").halt_polling_ns < vm(&alone, "p").halt_polling_ns / 2,
        "single_task_running() is false while the other vCPU is runnable"
    );
}

#[test]
fn every_switch_combination_runs_with_invariants_and_exact_accounting() {
    // A sweep over profiles, lock kinds, on_spin forms and APIC / PV
    // switches, with the scheduler invariants checked after every event and
    // the CPU split of each VM adding up to its vCPU tasks' CPU time.
    let mut n = 0u64;
    let profiles = ["dbench", "ebizzy", "pingpong", "idle", "dedup"];
    {
        for lock in ["pv_qspinlock", "native_qspinlock", "ticket", "tas"] {
            for (form, apic) in [
                ("6.12", "apicv = false"),
                ("6.13", "apicv = true\nipiv = true"),
                ("ipi_aware", "apicv = true\nhalt_poll = \"30us\""),
                ("off", "ple = \"svm\""),
            ] {
                n += 1;
                let prof = profiles[n as usize % profiles.len()];
                let src = format!(
                    r#"
[host]
cpus = 3
duration = "12ms"
seed = {n}
[kvm]
on_spin = "{form}"
{apic}
[guest.pv]
tlb_flush = {tlb}
send_ipi = {send}
[[task]]
name = "t"
kind = "periodic"
period = "1ms"
run = "300us"
[[vm]]
name = "a"
vcpus = 5
workload = "phase:{prof}"
[vm.overrides]
lock_kind = "{lock}"
ipi_sync = {sync}
ipi_per_ms = 10
tlb_shootdown_per_ms = 5
block_prob = 0.1
block_ns = 20000
[[vm]]
name = "b"
vcpus = 3
pin = [0, 1, 2]
layout = "flat"
workload = "phase:{prof}"
"#,
                    tlb = n % 2 == 0,
                    send = n % 3 == 0,
                    sync = n % 2 == 1,
                );
                let r = run(&src);
                for v in &r.vms {
                    let split =
                        v.guest_useful_ns + v.spinning_ns + v.halt_polling_ns + v.exit_overhead_ns;
                    assert!(split <= v.cpu_ns, "{prof}/{lock}/{form}: {v:?}");
                    assert!(
                        split as f64 >= 0.99 * v.cpu_ns as f64,
                        "{prof}/{lock}/{form}: split {split} of {}",
                        v.cpu_ns
                    );
                }
            }
        }
    }
}

#[test]
fn dynamic_halt_polling_grows_for_short_halts_only() {
    // KVM's default: vcpu->halt_poll_ns starts at 0 and grows after halts
    // shorter than halt_poll_ns (200 us); 1 s idle halts never grow it.
    let src = |block: &str, poll: &str| {
        format!(
            r#"
[host]
cpus = 2
duration = "200ms"
[kvm]
halt_poll = "{poll}"
[[vm]]
name = "p"
vcpus = 2
pin = [0, 1]
workload = "phase:dedup"
[vm.overrides]
block_prob = 0.5
block_ns = {block}
ipi_per_ms = 0
"#
        )
    };
    let short = run(&src("20000", "dynamic"));
    assert!(vm(&short, "p").halt_polling_ns > 0);
    let off = run(&src("20000", "off"));
    assert_eq!(vm(&off, "p").halt_polling_ns, 0);
    let long = run(&src("1000000000", "dynamic"));
    assert_eq!(vm(&long, "p").halt_polling_ns, 0);
    let e = bad("[kvm]\nhalt_poll = \"sometimes\"\n[[vm]]\nname = \"v\"\n");
    assert!(e.contains("kvm.halt_poll") && e.contains("dynamic"), "{e}");
}

#[test]
fn protected_guests_run_on_both_ple_kinds() {
    // `protected = true` (SEV-ES/TDX): preempted_in_kernel is always true and
    // SVM PAUSE exits pass yield_to_kernel_mode = false. The state rules are
    // unit-tested in src/kvm/vcpu.rs; here the switch must run cleanly.
    for ple in ["vmx", "svm"] {
        let r = run(&lhp("ticket", "6.12")
            .replace("[kvm]", &format!("[kvm]\nple = \"{ple}\""))
            .replace(
                "workload = \"phase:dbench\"",
                "workload = \"phase:dbench\"\nprotected = true",
            ));
        assert!(vm(&r, "a").yield_to_successes > 0, "{ple}");
    }
}
