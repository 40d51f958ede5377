//! Property tests: random host scenarios keep every scheduler invariant at
//! every event; the scenario parser never panics on arbitrary input.

use oversub::scenario::Scenario;
use proptest::prelude::*;

fn task_toml(i: usize, kind: u8, nice: i8, cpus: Option<u8>, ncpus: u8, cgroup: &str) -> String {
    let mut s = format!("[[task]]\nname = \"t{i}\"\ncgroup = \"{cgroup}\"\nnice = {nice}\n");
    if let Some(c) = cpus {
        s += &format!("cpus = [{}]\n", c % ncpus);
    }
    s += match kind % 5 {
        0 => "kind = \"hog\"\n",
        1 => "kind = \"periodic\"\nperiod = \"700us\"\nrun = \"150us\"\n",
        2 => "kind = \"yield_loop\"\nwork = \"3us\"\n",
        3 => "kind = \"pingpong\"\ncount = 2\nrun = \"7us\"\n",
        _ => "kind = \"hog\"\nslice = \"300us\"\n",
    };
    s
}

proptest! {
    #![proptest_config(crate::common::proptest_config(24))]

    #[test]
    fn random_scenarios_keep_invariants(
        ncpus in 1u8..4,
        weights in proptest::collection::vec(1u16..2000, 0..3),
        tasks in proptest::collection::vec((0u8..5, -5i8..6, proptest::option::of(0u8..4), 0usize..4), 1..7),
        preset in 0usize..4,
        delay in any::<bool>(),
        parity in any::<bool>(),
        seed in 0u64..1000,
    ) {
        let kernel = ["6.12.0", "6.12.117", "6.18", "6.19"][preset];
        let mut src = format!(
            "[host]\ncpus = {ncpus}\nduration = \"60ms\"\nkernel = \"{kernel}\"\nseed = {seed}\n\
             [host.features]\nDELAY_DEQUEUE = {delay}\nRUN_TO_PARITY = {parity}\n"
        );
        // A chain of nested cgroups /g0, /g0/g1, ...
        let mut paths = vec!["/".to_string()];
        let mut p = String::new();
        for (i, w) in weights.iter().enumerate() {
            p += &format!("/g{i}");
            src += &format!("[[cgroup]]\npath = \"{p}\"\nweight = {w}\n");
            paths.push(p.clone());
        }
        for (i, (kind, nice, cpus, g)) in tasks.iter().enumerate() {
            src += &task_toml(i, *kind, *nice, *cpus, ncpus, &paths[g % paths.len()]);
        }
        let sc = Scenario::parse("prop.toml", &src).unwrap();
        let mut sim = oversub::sim::Simulator::new(&sc);
        sim.set_check_invariants(true);
        let r = sim.run_polled(sc.host.duration, &mut |_| true).expect("the run finishes");
        let tasks_ns: u64 = r.tasks.iter().map(|t| t.cpu_ns).sum();
        let busy: u64 = r.cpus.iter().map(|c| c.busy_ns).sum();
        prop_assert_eq!(tasks_ns, busy);
        prop_assert!(busy <= ncpus as u64 * r.duration_ns);
    }

    #[test]
    fn parser_never_panics_on_arbitrary_text(s in "\\PC{0,200}") {
        let _ = Scenario::parse("fuzz.toml", &s);
    }

    #[test]
    fn parser_never_panics_on_mutated_scenarios(
        key in "[a-z_]{1,10}",
        val in prop_oneof![
            "-?[0-9]{1,20}".prop_map(|s| s),
            "\"[0-9.]{0,6}(ns|us|ms|s|x)?\"".prop_map(|s| s),
            "\\[[0-9, -]{0,10}\\]".prop_map(|s| s),
            "\"/[a-z/.]{0,8}\"".prop_map(|s| s),
        ],
        section in 0usize..3,
    ) {
        let sec = ["[host]", "[[cgroup]]\npath = \"/a\"", "[[task]]\nname = \"x\"\nkind = \"periodic\""][section];
        let src = format!("{sec}\n{key} = {val}\n[[task]]\nname = \"y\"\nkind = \"hog\"\n");
        if let Err(e) = Scenario::parse("m.toml", &src) {
            prop_assert!(!e.to_string().contains('\n'), "one line: {}", e);
        }
    }
}
