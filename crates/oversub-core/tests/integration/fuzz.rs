//! Fuzzing (issue 9): arbitrary TOML text and structurally valid scenarios
//! with extreme values go through the parser and, when accepted, a short
//! simulation. Zero panics; every rejection is one line; the valid shapes
//! are all accepted (so the extremes really run). Bounded: a fixed
//! number of cases, each run for at most 2 ms of simulated time.

use oversub::scenario::Scenario;
use proptest::prelude::*;

/// Picks one of a fixed set of edge values.
fn pick(v: &'static [&'static str]) -> impl Strategy<Value = &'static str> {
    proptest::sample::select(v)
}

fn host() -> impl Strategy<Value = String> {
    (
        pick(&["1", "2", "3", "64", "1024"]),
        pick(&["100", "250", "300", "1000"]),
        pick(&["6.12.0", "6.12.117", "6.18", "6.19"]),
        pick(&["1us", "3600s", "1.5ms", "2ms"]),
        pick(&["0", "9223372036854775807"]),
        pick(&["0ns", "1ns", "10ms", "25us"]),
        pick(&["", "RUN_TO_PARITY = false", "HRTICK = true", "DELAY_DEQUEUE = false", "NEXT_BUDDY = true"]),
    )
        .prop_map(|(cpus, hz, kernel, dur, seed, cost, feat)| {
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
                "messaging" => format!("fds = {fds}\nsend = \"{d}\"\nrecv = \"{long}\"\npipe_slots = 1\n"),
                _ => String::new(),
            };
            s
        })
}

fn vm(i: usize) -> impl Strategy<Value = String> {
    (
        pick(&["2", "4", "256"]),
        pick(&["dbench", "dedup", "vips", "ebizzy", "kernbench", "pingpong", "idle"]),
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

fn kvm() -> impl Strategy<Value = String> {
    (
        pick(&["vmx", "svm", "off"]),
        pick(&["6.12", "6.13", "6.19", "ipi_aware", "off"]),
        pick(&["0ns", "100ms", "1ns"]),
        pick(&["off", "0ns", "10ms", "dynamic"]),
        pick(&["1", "100000"]),
        any::<bool>(),
    )
        .prop_map(|(ple, on_spin, cost, poll, pause, apicv)| {
            format!(
                "[kvm]\nple = \"{ple}\"\non_spin = \"{on_spin}\"\nexit_cost = \"{cost}\"\nentry_cost = \"{cost}\"\n\
                 irq_handler = \"{cost}\"\nhalt_poll = \"{poll}\"\npause_cycles = {pause}\napicv = {apicv}\n"
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
            let r = sim.run(d);
            let busy: u64 = r.cpus.iter().map(|c| c.busy_ns).sum();
            assert!(busy <= u64::from(sc.host.cpus) * d.0);
            true
        }
        Err(e) => {
            assert!(!e.to_string().contains('\n'), "one line: {e}");
            false
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_toml_text_never_panics(s in "(\\PC|\n){0,300}") {
        let _ = run_briefly(&s);
    }

    #[test]
    fn toml_shaped_noise_never_panics(
        lines in proptest::collection::vec(
            prop_oneof![
                pick(&["[host]", "[[task]]", "[[vm]]", "[kvm]", "[guest.pv]", "[host.costs]",
                       "[host.features]", "[[cgroup]]", "[vm.overrides]", "[task]"]).prop_map(String::from),
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
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn valid_shapes_with_extreme_values_never_panic(
        h in host(),
        t0 in task(0),
        t1 in task(1),
        v0 in vm(0),
        k in kvm(),
        with_vm in any::<bool>(),
    ) {
        let mut src = h + &k + &t0 + &t1;
        if with_vm {
            src += &v0;
        }
        // Every generated value is inside its documented range: the
        // scenario must be accepted, then run without a panic.
        let ok = run_briefly(&src);
        prop_assert!(ok, "rejected: {}\n{}", Scenario::parse("fuzz.toml", &src).unwrap_err(), src);
    }
}
