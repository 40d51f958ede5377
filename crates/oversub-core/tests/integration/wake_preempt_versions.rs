//! Wakeup preemption of a periodic task against a cgroup hog, by kernel
//! version. v6.13's `ttwu_runnable()` change (TTWU_DEQUEUE_DELAYED,
//! d68803506ffb, in the 6.18 preset) takes a task that is still delayed from
//! its last sleep off the runqueue, with its lag measured against the current
//! average (`dequeue_entity()` charges curr first), and enqueues it again as
//! a normal wakeup: at zero lag it loses the deadline comparison to the /a
//! hog's group entity whenever that entity's request has not expired since
//! the last tick, and waits for the next tick (`update_deadline()`). 6.12.117
//! re-queues it in place with `requeue_delayed_entity()`, against the average
//! as of the hog's last charge, which leaves it ahead once the wakeup's
//! `update_curr()` charges the hog; it preempts at once. This is the
//! tick-phase tail that ftrace showed on the real 6.18 host
//! (docs/conformance.md, "Unpinned scenarios in the suite").

use crate::common;

use oversub::report::Report;

/// conform/smp_weights.toml: /a (weight 100: two hogs), /b (weight 300: one
/// hog) and a root periodic task p (1 ms every 5 ms) on 2 CPUs at HZ=250.
/// p's 5 ms period walks through the four phases of the 4 ms tick.
fn smp_weights(kernel: &str, switches: &str) -> Report {
    common::run_on_2cpus(kernel, switches, "10s", common::SMP_WEIGHTS)
}

/// p's wakeups that waited about a tick instead of preempting, as a fraction
/// of its wakeups: its total wait over (wakeups x 2 ms).
fn waited_a_tick(r: &Report) -> f64 {
    let p = common::task(r, "p");
    p.wait_ns as f64 / (p.nr_wakeups as f64 * 2e6)
}

#[test]
fn delayed_wakeup_waits_for_the_tick_on_6_18_but_preempts_on_6_12_117() {
    let old = smp_weights("6.12.117", "");
    let new = smp_weights("6.18", "");
    let (po, pn) = (common::task(&old, "p"), common::task(&new, "p"));
    // 6.12.117: every wakeup preempts the /a hog; the tail is the wake path.
    assert!(
        po.wakeup_latency_ns.p99 < 100_000,
        "6.12.117 p99 {}",
        po.wakeup_latency_ns.p99
    );
    assert!(
        waited_a_tick(&old) < 0.01,
        "6.12.117 {}",
        waited_a_tick(&old)
    );
    // 6.18: at one tick phase of the four the wakeup does not preempt and p
    // runs only at the next tick, 3 ms later: the hog keeps the CPU.
    assert!(
        pn.wakeup_latency_ns.p99 > 2_000_000,
        "6.18 p99 {}",
        pn.wakeup_latency_ns.p99
    );
    let w = waited_a_tick(&new);
    assert!((0.125..0.5).contains(&w), "6.18 waited a tick: {w}");
    // The median wakeup still preempts at once on both.
    assert_eq!(po.wakeup_latency_ns.p50, pn.wakeup_latency_ns.p50);
    // TTWU_DEQUEUE_DELAYED is what makes the difference: 6.18 without it
    // preempts at every wakeup, 6.12.117 with it does not.
    let new_off = smp_weights("6.18", "TTWU_DEQUEUE_DELAYED = false");
    assert!(waited_a_tick(&new_off) < 0.01);
    let old_on = smp_weights("6.12.117", "TTWU_DEQUEUE_DELAYED = true");
    assert!(waited_a_tick(&old_on) > 0.125);
    // The hog that held the CPU is /a's: a.0 + a.1 gain what p waited.
    let a = |r: &Report| common::cpu_ns(r, "a.0") + common::cpu_ns(r, "a.1");
    assert_eq!(common::cpu_ns(&old, "p"), common::cpu_ns(&new, "p"));
    assert!(a(&new) >= a(&old) - 4_000_000, "{} vs {}", a(&new), a(&old));
}
