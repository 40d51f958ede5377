//! SMP load balancing and PELT load tracking against what 6.12.117 does:
//! placement by load (not by task count), the departure of a migrated
//! group's per-CPU load from `tg->load_avg`, wakeup placement.

use oversub::report::Report;
use oversub::scenario::Scenario;
use oversub::sim::Simulator;

fn run_for(src: &str, duration: &str) -> Report {
    let src = src.replace("DURATION", duration);
    let sc = Scenario::parse("test.toml", &src).unwrap_or_else(|e| panic!("{e}"));
    let mut sim = Simulator::new(&sc);
    sim.set_check_invariants(true);
    sim.run(sc.host.duration)
}

fn cpu_ns(r: &Report, name: &str) -> u64 {
    r.tasks
        .iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("no task {name}"))
        .cpu_ns
}

fn migrations(r: &Report, name: &str) -> u64 {
    r.tasks
        .iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("no task {name}"))
        .nr_migrations
}

/// Issue 11, bug 1: CPU 0 has hog H0, CPU 1 hogs H1 and H1b; T in /g may run
/// on both. At 1 s two more hogs start on CPU 0 and T moves to CPU 1. Once
/// /g's load has left CPU 0 (`remove_entity_load_avg()`/DO_DETACH and
/// `update_blocked_averages()`), /g's entity on CPU 1 carries all of /g's
/// shares and T gets a third of CPU 1. With CPU 0's contribution to
/// `tg->load_avg` frozen, /g on CPU 1 gets about half the shares and T 20%.
const STALE_GROUP_LOAD: &str = r#"
    [host]
    cpus = 2
    duration = "DURATION"
    [[cgroup]]
    path = "/g"
    weight = 100
    [[task]]
    name = "H0"
    kind = "hog"
    cpus = [0]
    [[task]]
    name = "H1"
    kind = "hog"
    cpus = [1]
    [[task]]
    name = "H1b"
    kind = "hog"
    cpus = [1]
    [[task]]
    name = "T"
    kind = "hog"
    cgroup = "/g"
    [[task]]
    name = "H2"
    kind = "periodic"
    period = "20s"
    run = "20s"
    phase = "1s"
    cpus = [0]
    [[task]]
    name = "H3"
    kind = "periodic"
    period = "20s"
    run = "20s"
    phase = "1s"
    cpus = [0]
"#;

#[test]
fn migrated_group_load_leaves_the_old_cpu() {
    let r5 = run_for(STALE_GROUP_LOAD, "5s");
    let r6 = run_for(STALE_GROUP_LOAD, "6s");
    // T ran on CPU 0 before 1 s and sits on CPU 1 in the window.
    let t = (cpu_ns(&r6, "T") - cpu_ns(&r5, "T")) as f64 / 1e9;
    let h1 = (cpu_ns(&r6, "H1") - cpu_ns(&r5, "H1")) as f64 / 1e9;
    eprintln!("T {t:.4} H1 {h1:.4} migr {}", migrations(&r6, "T"));
    assert!(migrations(&r6, "T") >= 1, "T never moved");
    assert_eq!(migrations(&r6, "T"), migrations(&r5, "T"), "T still moving");
    assert!(
        (t - 1.0 / 3.0).abs() < 0.01,
        "T got {:.1}% of CPU 1 in 5..6 s (H1 {:.1}%), expected 33.3%",
        t * 100.0,
        h1 * 100.0
    );
}
