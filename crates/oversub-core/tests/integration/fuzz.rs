//! Fuzzing (issue 9): arbitrary TOML text and structurally valid scenarios
//! with extreme values go through the parser and, when accepted, a short
//! simulation. Zero panics; every rejection is one line; the valid shapes
//! are all accepted (so the extremes really run). Bounded: a fixed
//! number of cases, each run for at most 2 ms of simulated time and within
//! the event budget (docs/limits.md).

use oversub::scenario::Scenario;
use proptest::prelude::*;

/// Picks one of a fixed set of edge values.
fn pick(v: &'static [&'static str]) -> impl Strategy<Value = &'static str> {
    proptest::sample::select(v)
}

/// Every kernel preset (`[host] kernel`, `[vm] kernel`).
const KERNELS: &[&str] = &["6.1", "6.12.0", "6.12.117", "6.18", "6.19", "flat"];

/// A sched feature line valid on `kernel`: the EEVDF switches are absent
/// on 6.1 (CFS), the CFS ones on every other preset.
fn feature_for(kernel: &str, i: usize) -> &'static str {
    const EEVDF: &[&str] = &[
        "",
        "RUN_TO_PARITY = false",
        "HRTICK = true",
        "DELAY_DEQUEUE = false",
        "NEXT_BUDDY = true",
    ];
    const CFS: &[&str] = &[
        "",
        "GENTLE_FAIR_SLEEPERS = false",
        "START_DEBIT = false",
        "NEXT_BUDDY = true",
        "LAST_BUDDY = false",
    ];
    if kernel == "6.1" {
        CFS[i % CFS.len()]
    } else {
        EEVDF[i % EEVDF.len()]
    }
}

fn host() -> impl Strategy<Value = String> {
    (
        pick(&["1", "2", "3", "64", "1024"]),
        pick(&["100", "250", "300", "1000"]),
        pick(KERNELS),
        pick(&["1us", "3600s", "1.5ms", "2ms"]),
        pick(&["0", "9223372036854775807"]),
        pick(&["0ns", "1ns", "10ms", "25us"]),
        0usize..5,
    )
        .prop_map(|(cpus, hz, kernel, dur, seed, cost, fi)| {
            let feat = feature_for(kernel, fi);
            format!(
                "[host]\ncpus = {cpus}\nhz = {hz}\nkernel = \"{kernel}\"\nduration = \"{dur}\"\nseed = {seed}\n\
                 [host.costs]\ntimer_wake = \"{cost}\"\ncontext_switch = \"{cost}\"\nremote_wakeup = \"{cost}\"\n\
                 idle_exit = \"{cost}\"\nmigration = \"{cost}\"\n[host.features]\n{feat}\n"
            )
        })
}

fn task(i: usize) -> impl Strategy<Value = String> {
    (
        pick(&["hog", "periodic", "yield_loop", "pingpong", "messaging"]),
        pick(&["1", "2", "1000"]),
        pick(&["-20", "19", "0"]),
        pick(&["", "cpus = [0]", "cpus = [0, 0]"]),
        pick(&["100ns", "10us"]),
        pick(&["10us", "3600s", "1ms"]),
        pick(&["", "slice = \"100us\"", "slice = \"100ms\""]),
        pick(&["1", "50"]),
        pick(&["100ns", "3600s"]),
    )
        .prop_map(move |(kind, count, nice, cpus, d, period, slice, fds, long)| {
            let count = match (kind, count) {
                ("pingpong", "1") => "2",
                ("messaging", "1000") => "10",
                (_, c) => c,
            };
            let mut s = format!(
                "[[task]]\nname = \"t{i}\"\nkind = \"{kind}\"\ncount = {count}\nnice = {nice}\n{cpus}\n{slice}\n"
            );
            s += &match kind {
                "periodic" => format!("period = \"{period}\"\nrun = \"{d}\"\nphase = \"{long}\"\n"),
                "yield_loop" => format!("work = \"{long}\"\n"),
                "pingpong" => format!("run = \"{long}\"\n"),
                "messaging" => format!("fds = {fds}\nsend = \"{d}\"\nrecv = \"{long}\"\npipe_pages = 1\nmsg_size = 4096\n"),
                _ => String::new(),
            };
            s
        })
}

/// A program VM (a nested guest running an rt-app program) on one of the
/// kernel presets, with a guest feature valid there.
fn program_vm(i: usize) -> impl Strategy<Value = String> {
    (pick(&["1", "2", "8"]), pick(KERNELS), 0usize..5, pick(&["", "ops = \"w\"", "ops = \"lock-sections\""]))
        .prop_map(move |(vcpus, kernel, fi, ops)| {
            let prog = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios/nested/workers-mutex.json");
            format!(
                "[[vm]]\nname = \"p{i}\"\nvcpus = {vcpus}\nprogram = \"{prog}\"\n{ops}\nkernel = \"{kernel}\"\n\
                 [vm.features]\n{}\n",
                feature_for(kernel, fi)
            )
        })
}

fn vm(i: usize) -> impl Strategy<Value = String> {
    (
        pick(&["2", "4", "256"]),
        pick(&["phase:dbench", "phase:dedup", "phase:vips", "phase:ebizzy", "phase:kernbench", "phase:pingpong", "phase:idle"]),
        pick(&["libvirt", "flat"]),
        pick(&["100", "9223372036854775807", "20000"]),
        pick(&["0", "1000000000", "1"]),
        pick(&["", "active_vcpus = 2"]),
        pick(&["0.0", "1.0", "0.5"]),
        pick(&["0", "1", "1000000000"]),
        pick(&["", "weight = 10000", "weight = 1", "protected = true"]),
        pick(&["0.0", "1000000000.0"]),
    )
        .prop_map(move |(vcpus, wl, layout, compute, cs, active, prob, block, extra, rate)| {
            format!(
                "[[vm]]\nname = \"v{i}\"\nvcpus = {vcpus}\nworkload = \"{wl}\"\nlayout = \"{layout}\"\n{extra}\n\
                 [vm.overrides]\ncompute_ns = {compute}\ncs_ns = {cs}\n{active}\n\
                 block_prob = {prob}\nblock_ns = {block}\nipi_per_ms = {rate}\ntlb_shootdown_per_ms = {rate}\n"
            )
        })
}

/// Every `kvm.on_spin` form, the historic ones included.
const ON_SPIN: &[&str] = &[
    "6.12",
    "6.13",
    "6.19",
    "2011-yield-to",
    "2012-dy-eligible",
    "2013-try-budget",
    "2014-preempted",
    "2017-kernel-mode",
    "2019-ready",
    "2019-preempted-in-kernel",
    "ipi_aware",
    "ipi_v1",
    "ipi_v3",
    "ipi_series",
    "ipi_hint",
    "off",
];

fn kvm() -> impl Strategy<Value = String> {
    (
        pick(&["vmx", "svm", "off"]),
        pick(ON_SPIN),
        pick(&["0ns", "100ms", "1ns"]),
        pick(&["off", "0ns", "10ms", "dynamic"]),
        pick(&["1", "100000"]),
        any::<bool>(),
        (any::<bool>(), any::<bool>(), any::<bool>(), any::<bool>()),
        (any::<bool>(), any::<bool>(), any::<bool>()),
    )
        .prop_map(|(ple, on_spin, cost, poll, pause, apicv, (spinlock, nopvspin, kick, steal), (sy, tlb, ipi))| {
            // Consistent by construction: a directed-yield form needs PLE,
            // a kick yield the PV spinlock (both refused otherwise).
            let on_spin = if ple == "off" { "off" } else { on_spin };
            let kick = if spinlock && !nopvspin { format!("kick_yield = {kick}\n") } else { String::new() };
            format!(
                "[kvm]\nple = \"{ple}\"\non_spin = \"{on_spin}\"\nexit_cost = \"{cost}\"\nentry_cost = \"{cost}\"\n\
                 irq_handler = \"{cost}\"\nhalt_poll = \"{poll}\"\npause_cycles = {pause}\napicv = {apicv}\n{kick}\
                 [guest]\nnopvspin = {nopvspin}\n[guest.pv]\nspinlock = {spinlock}\nsteal_time = {steal}\n\
                 sched_yield = {sy}\ntlb_flush = {tlb}\nsend_ipi = {ipi}\n"
            )
        })
}

/// Parses `src` and, if accepted, simulates up to 2 ms of it; true if it
/// was accepted.
fn run_briefly(src: &str) -> bool {
    match Scenario::parse("fuzz.toml", src) {
        Ok(sc) => {
            let d = sc.host.duration.min(oversub::engine::Nanos::from_ms(2));
            let mut sim = oversub::sim::Simulator::new(&sc);
            // Extreme values (zero costs, 100 ns ops on 64 CPUs) may go over
            // the event budget: that is a clear one-line error, and the
            // bound on each case's work (counted in events, not timed).
            match sim.run_polled(d, &mut |_| true) {
                Ok(r) => {
                    let busy: u64 = r.cpus.iter().map(|c| c.busy_ns).sum();
                    assert!(busy <= u64::from(sc.host.cpus) * d.0);
                }
                Err(e @ oversub::RunError::EventBudget { .. }) => {
                    assert!(!e.to_string().contains('\n'), "one line: {e}");
                }
                Err(e) => panic!("{e}"),
            }
            true
        }
        Err(e) => {
            assert!(!e.to_string().contains('\n'), "one line: {e}");
            false
        }
    }
}

proptest! {
    #![proptest_config(crate::common::proptest_config(96))]

    #[test]
    fn arbitrary_toml_text_never_panics(s in "(\\PC|\n){0,300}") {
        let _ = run_briefly(&s);
    }

    #[test]
    fn toml_shaped_noise_never_panics(
        lines in proptest::collection::vec(
            prop_oneof![
                pick(&["[host]", "[[task]]", "[[vm]]", "[kvm]", "[guest.pv]", "[host.costs]",
                       "[host.features]", "[[cgroup]]", "[vm.overrides]", "[task]", "[guest]",
                       "[vm.features]"]).prop_map(String::from),
                // The keys added since: right and wrong values.
                (pick(&["kernel", "on_spin", "nopvspin", "spinlock", "kick_yield", "program"]),
                 prop_oneof![pick(KERNELS).prop_map(|k| format!("\"{k}\"")),
                             pick(ON_SPIN).prop_map(|k| format!("\"{k}\"")),
                             pick(&["true", "false", "1", "\"cfs\"", "\"2012\"", "\"/dev/zero\"", "\"\""])
                                 .prop_map(String::from)])
                    .prop_map(|(k, v)| format!("{k} = {v}")),
                ("[a-z_]{1,12}", prop_oneof![
                    "-?[0-9]{1,21}", "\"[-0-9.]{0,8}(ns|us|ms|s)?\"", "\\[[0-9, \"-]{0,12}\\]",
                    "\"/[a-z/.]{0,8}\"", "(true|false)", "[0-9]\\.[0-9]e[0-9]{1,3}"])
                    .prop_map(|(k, v)| format!("{k} = {v}")),
            ],
            0..24,
        )
    ) {
        let _ = run_briefly(&lines.join("\n"));
    }
}

proptest! {
    #![proptest_config(crate::common::proptest_config(64))]

    #[test]
    fn valid_shapes_with_extreme_values_never_panic(
        h in host(),
        t0 in task(0),
        t1 in task(1),
        v0 in vm(0),
        p1 in program_vm(1),
        k in kvm(),
        with_vm in any::<bool>(),
        with_program in any::<bool>(),
    ) {
        let mut src = h + &k + &t0 + &t1;
        if with_vm {
            src += &v0;
        }
        if with_program {
            src += &p1;
        }
        // Every generated value is inside its documented range: the
        // scenario must be accepted, then run without a panic.
        let ok = run_briefly(&src);
        prop_assert!(ok, "rejected: {}\n{}", Scenario::parse("fuzz.toml", &src).unwrap_err(), src);
    }
}

/// One rt-app event, zero-length values included (the loops that cannot
/// advance simulated time must be refused at load, never hang).
fn rtapp_event() -> impl Strategy<Value = String> {
    prop_oneof![
        pick(&["0", "1", "50"]).prop_map(|v| format!("\"run\": {v}")),
        pick(&["0", "20"]).prop_map(|v| format!("\"sleep\": {v}")),
        pick(&["0", "5"]).prop_map(|v| format!("\"runtime\": {v}")),
        Just("\"yield\": 1".to_string()),
        Just("\"lock\": \"m\", \"unlock\": \"m\"".to_string()),
        Just("\"barrier\": \"b\"".to_string()),
        pick(&["0", "100"]).prop_map(|p| format!("\"timer\": {{\"ref\": \"t\", \"period\": {p}}}")),
        Just("\"lock\": \"m\", \"signal\": \"c\", \"unlock\": \"m\"".to_string()),
        Just(
            "\"lock\": \"m\", \"wait\": {\"ref\": \"c\", \"mutex\": \"m\"}, \"unlock\": \"m\""
                .to_string()
        ),
    ]
}

fn rtapp_task(i: usize) -> impl Strategy<Value = String> {
    (
        proptest::collection::vec(rtapp_event(), 1..4),
        pick(&["1", "2", "3", "100000"]),
        pick(&[
            "",
            "\"loop\": 3, ",
            "\"loop\": -1, ",
            "\"loop\": 2000000000, ",
        ]),
    )
        .prop_map(move |(evs, inst, lp)| {
            // Numbered keys keep repeated events distinct (run0, run1...).
            let evs: Vec<String> = evs
                .iter()
                .enumerate()
                .map(|(k, e)| e.replacen("\": ", &format!("{k}\": "), 1))
                .collect();
            format!("\"t{i}\": {{{lp}\"instance\": {inst}, {}}}", evs.join(", "))
        })
}

proptest! {
    #![proptest_config(crate::common::proptest_config(64))]

    /// rt-app JSON from the event pool: accepted and run (bounded by the
    /// event budget and the zero-time step bound), or one line naming a
    /// field; never a hang or a panic.
    #[test]
    fn rtapp_programs_are_refused_or_run_bounded(
        t0 in rtapp_task(0),
        t1 in rtapp_task(1),
        two in any::<bool>(),
    ) {
        let tasks = if two { format!("{t0}, {t1}") } else { t0 };
        let src = format!(r#"{{"global": {{"duration": 1}}, "oversub": {{"cpus": 2}}, "tasks": {{{tasks}}}}}"#);
        match oversub::scenario::rtapp::scenario("fuzz.json", &src) {
            Ok(sc) => {
                let d = oversub::engine::Nanos::from_ms(2);
                let mut sim = oversub::sim::Simulator::new(&sc);
                // A loop the load check cannot see (an rt-app barrier passed
                // alone) stops the run with one line naming the thread.
                match sim.run_polled(d, &mut |_| true) {
                    Ok(_) => {}
                    Err(e @ (oversub::RunError::EventBudget { .. } | oversub::RunError::ZeroTimeLoop { .. })) => {
                        prop_assert!(!e.to_string().contains('\n'), "one line: {e}");
                    }
                    Err(e) => panic!("{e}"),
                }
            }
            Err(e) => {
                let e = e.to_string();
                prop_assert!(!e.contains('\n') && e.starts_with("fuzz.json: "), "{e}");
            }
        }
    }

    /// Sweep files: any axes, seeds and sets give a spec or one line naming
    /// the file; the run count is capped before anything is built; the
    /// results' columns (fixed, axes, metrics) are each one name.
    #[test]
    fn sweep_files_are_refused_or_parsed(
        seeds in pick(&["[1]", "[1, 1]", "[]", "[1, 2, 3]"]),
        key in pick(&["host.seed", "host.duration", "host.hz", "kvm.apicv", "seed", "throughput",
                      "file", "scenario", "workload", "vms", "section"]),
        nvals in 1usize..40,
        naxes in 0usize..6,
        set in pick(&["", "set = [\"host.seed=4\"]", "set = [\"kvm.apicv=true\"]", "duration = \"1ms\""]),
        file_axis in pick(&["", "key = \"file\"\n", "key = \"file\"\nname = \"file\"\n",
                            "key = \"file\"\nname = \"scenario\"\n"]),
    ) {
        let vals: Vec<String> = (0..nvals).map(|j| format!("{{ label = \"l{j}\", set = [] }}")).collect();
        let mut src = format!("base = \"x.toml\"\nseeds = {seeds}\n{set}\n");
        if !file_axis.is_empty() {
            src += &format!("[[axis]]\n{file_axis}values = [\"a/x.toml\", \"b/y.toml\"]\n");
        }
        for a in 0..naxes {
            let name = if a == 0 { key.to_string() } else { format!("a{a}") };
            src += &format!("[[axis]]\nname = \"{name}\"\nvalues = [{}]\n", vals.join(", "));
        }
        match oversub::sweep::spec::SweepSpec::parse("fuzz-sweep.toml", &src, std::path::Path::new(".")) {
            Ok(spec) => {
                let runs: usize = spec.axes.iter().map(|a| a.values.len()).product::<usize>() * spec.seeds.len();
                prop_assert!(runs as u64 <= oversub::limits::MAX_SWEEP_RUNS);
                let mut names = std::collections::BTreeSet::new();
                for n in oversub::sweep::FIXED_COLUMNS.iter().copied()
                    .chain(oversub::sweep::metrics::GLOBAL_METRICS.iter().copied())
                    .chain(spec.axes.iter().map(|a| a.name.as_str()))
                {
                    prop_assert!(names.insert(n), "{n:?} is two columns: {src}");
                }
            }
            Err(e) => prop_assert!(!e.contains('\n') && e.starts_with("fuzz-sweep.toml: "), "{e}"),
        }
    }

    /// `--set KEY=VALUE` of any shape: parsed and applied, or one line.
    #[test]
    fn set_overrides_are_refused_or_applied(
        key in pick(&["host.cpus", "host.seed", "vm.0.vcpus", "task.0.count", "kvm.ple", "a.b.c", "host", "",
                      "host.kernel", "vm.0.kernel", "kvm.on_spin", "kvm.kick_yield", "guest.nopvspin",
                      "guest.pv.spinlock", "vm.0.features.RUN_TO_PARITY"]),
        val in pick(&["2", "-1", "99999999999999999999", "\"x\"", "true", "[1]", "1.5", "",
                      "flat", "6.1", "cfs", "2012-dy-eligible", "false"]),
    ) {
        let arg = format!("{key}={val}");
        match oversub::scenario::overrides::parse_override(&arg) {
            Ok(o) => {
                let src = "[[task]]\nname = \"h\"\nkind = \"hog\"\n[[vm]]\nname = \"v\"\nworkload = \"phase:idle\"\n";
                if let Err(e) = Scenario::parse_with("fuzz.toml", src, &[o]) {
                    prop_assert!(!e.to_string().contains('\n'), "{e}");
                }
            }
            Err(m) => prop_assert!(!m.contains('\n'), "{m}"),
        }
    }
}

proptest! {
    #![proptest_config(crate::common::proptest_config(256))]

    /// An environment variable the tool honours (`limits::env_int`): any
    /// value is unset, an integer in its range, or one line naming the
    /// variable and what is allowed; never a default in silence.
    #[test]
    fn environment_values_are_in_range_or_refused(
        v in prop_oneof![
            "(\\PC){0,30}",
            "-?[0-9]{1,25}",
            Just(" 4".to_string()),
            Just("1e9".to_string()),
        ]
    ) {
        let r = oversub::limits::env_int_of("RAYON_NUM_THREADS", Some(std::ffi::OsStr::new(&v)), 0, 1024, "threads");
        match r {
            Ok(None) => prop_assert!(v.is_empty()),
            Ok(Some(n)) => prop_assert!((0..=1024).contains(&n) && v.parse::<i64>() == Ok(n)),
            Err(e) => {
                prop_assert!(!e.contains('\n'), "{e}");
                prop_assert!(e.starts_with("environment variable RAYON_NUM_THREADS=") && e.contains("allowed an integer 0 ..= 1024"), "{e}");
            }
        }
    }
}
