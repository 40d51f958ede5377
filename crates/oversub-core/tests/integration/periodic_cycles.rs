//! The two activation cycles of two periodic tasks sharing a CPU with cgroup
//! hogs (conform/smp_nested.toml on the 6.18 preset; docs/conformance.md,
//! "Two cycles of smp_nested's p1"). p1 (2 ms every 10 ms) alternates between
//! expiries 0.5 and 2.5 ms after a 4 ms tick; its burst from the 2.5 ms phase
//! uses up its 1.4 ms request before the next tick. In cycle A that tick
//! preempts it, its rest runs at p2's wakeup (p2 waits 0.5 ms behind it) and
//! its next wakeup preempts at once. In cycle B it runs through, sleeps
//! ineligible, stays queued as delayed, has its lag clipped to zero when it
//! is re-queued (DELAY_ZERO) and its full request at the average loses to the
//! hog's request renewed at the tick: the wakeup waits for the next tick. The
//! model with nothing but the scenario stays in cycle A; a sporadic task
//! (what foreign load is on the real host) moves it into cycle B.

use crate::common;

use oversub::report::Report;

/// The periodic tasks of conform/smp_nested.toml, with its phases.
const PERIODIC: &str = r#"
    [[task]]
    name = "p1"
    kind = "periodic"
    period = "10ms"
    run = "2ms"
    phase = "0.5ms"
    [[task]]
    name = "p2"
    kind = "periodic"
    period = "10ms"
    run = "2ms"
    phase = "5.5ms"
"#;

/// 100 us every 97 ms in the root: 0.1% of a CPU.
const SPORADIC: &str = r#"
    [[task]]
    name = "f"
    kind = "periodic"
    period = "97ms"
    run = "100us"
    phase = "1.3ms"
"#;

fn smp_nested(kernel: &str, switches: &str, extra: &str) -> Report {
    common::run_on_2cpus(
        kernel,
        switches,
        "4s",
        &format!("{}{PERIODIC}{extra}", common::SMP_NESTED_HOGS),
    )
}

#[test]
fn the_model_alone_stays_in_cycle_a() {
    let r = smp_nested("6.18", "", "");
    let (p1, p2) = (common::task(&r, "p1"), common::task(&r, "p2"));
    // p1's wakeups all preempt at once.
    assert!(
        p1.wakeup_latency_ns.p99 < 100_000,
        "p1 p99 {}",
        p1.wakeup_latency_ns.p99
    );
    // p2 waits about 0.5 ms behind p1's rest at its 3.5 ms phase: half of
    // its wakeups.
    assert!(
        (400_000..700_000).contains(&p2.wakeup_latency_ns.p99),
        "p2 p99 {}",
        p2.wakeup_latency_ns.p99
    );
    let waits = p2.wait_ns as f64 / (p2.nr_wakeups as f64 * 500_000.0);
    assert!((0.4..0.6).contains(&waits), "p2 waited at {waits}");
}

#[test]
fn a_sporadic_task_moves_p1_into_cycle_b_through_delay_zero() {
    let r = smp_nested("6.18", "", SPORADIC);
    let p1 = common::task(&r, "p1");
    // Some of p1's wakeups now wait for the next tick (3.5 ms).
    assert!(
        p1.wakeup_latency_ns.p99 > 2_000_000,
        "p1 p99 {}",
        p1.wakeup_latency_ns.p99
    );
    // Not the v6.13 ttwu path: 6.12.117 and 6.18 without it do the same.
    let old = smp_nested("6.12.117", "", SPORADIC);
    let off = smp_nested("6.18", "TTWU_DEQUEUE_DELAYED = false", SPORADIC);
    for o in [&old, &off] {
        let q = common::task(o, "p1");
        assert_eq!(q.wakeup_latency_ns.p99, p1.wakeup_latency_ns.p99);
        assert_eq!(q.wait_ns, p1.wait_ns);
    }
    // Without DELAY_ZERO the re-queued p1 keeps its positive lag and
    // preempts: no tick-long waits.
    let nz = smp_nested("6.18", "DELAY_ZERO = false", SPORADIC);
    let q = common::task(&nz, "p1");
    assert!(
        q.wakeup_latency_ns.p99 < 1_000_000,
        "no DELAY_ZERO: p1 p99 {}",
        q.wakeup_latency_ns.p99
    );
}
