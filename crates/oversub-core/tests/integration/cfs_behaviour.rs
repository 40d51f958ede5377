//! Linux 6.1 (CFS) behaviour on the `6.1` preset: CPU shares by weight and
//! cgroup, wakeup preemption of a sleeper against a hog (the sleeper credit
//! and `check_preempt_wakeup()`), and who runs after `sched_yield()` and
//! `yield_to()` (the skip and next buddies). The rules themselves are unit
//! tests of `sched::cfs` against linux-source-6.1.

use crate::common;

use oversub::sched::core::{Switch, YieldTo};
use oversub::sched::{CpuId, KernelPreset, SchedConfig, Scheduler, TaskId, ROOT_GROUP};

#[test]
fn cfs_nice_0_vs_nice_5_is_3_057_to_1() {
    let r = common::run(
        r#"
        [host]
        cpus = 1
        kernel = "6.1"
        duration = "5s"
        [[task]]
        name = "n0"
        kind = "hog"
        [[task]]
        name = "n5"
        kind = "hog"
        nice = 5
    "#,
    );
    let ratio = common::cpu_ns(&r, "n0") as f64 / common::cpu_ns(&r, "n5") as f64;
    assert!(
        (ratio - 1024.0 / 335.0).abs() < 3.057 * 0.005,
        "ratio {ratio}"
    );
}

#[test]
fn cfs_weighted_cgroups_split_25_75_through_group_shares() {
    let r = common::run(
        r#"
        [host]
        cpus = 1
        kernel = "6.1"
        duration = "5s"
        [[cgroup]]
        path = "/a"
        weight = 100
        [[cgroup]]
        path = "/b"
        weight = 300
        [[task]]
        name = "a"
        kind = "hog"
        count = 2
        cgroup = "/a"
        [[task]]
        name = "b"
        kind = "hog"
        cgroup = "/b"
    "#,
    );
    let a = (common::cpu_ns(&r, "a.0") + common::cpu_ns(&r, "a.1")) as f64;
    let b = common::cpu_ns(&r, "b") as f64;
    let share = a / (a + b);
    assert!((share - 0.25).abs() < 0.25 * 0.01, "share of /a = {share}");
}

/// A periodic task (1 ms every 5 ms) and a hog on one CPU at HZ=250.
fn sleeper_vs_hog(switches: &str) -> oversub::report::Report {
    common::run(&format!(
        r#"
        [host]
        cpus = 1
        hz = 250
        kernel = "6.1"
        duration = "5s"
        [host.features]
        {switches}
        [[task]]
        name = "hog"
        kind = "hog"
        [[task]]
        name = "p"
        kind = "periodic"
        period = "5ms"
        run = "1ms"
    "#
    ))
}

#[test]
fn cfs_a_waking_sleeper_preempts_a_hog_at_once() {
    // check_preempt_wakeup(): the sleeper, placed half a latency behind
    // min_vruntime, is more than wakeup_gran behind the hog: it preempts.
    let on = sleeper_vs_hog("");
    let p = common::task(&on, "p");
    assert!(p.nr_wakeups > 900, "wakeups {}", p.nr_wakeups);
    // The timer slack and the wake path's costs only (host defaults: about
    // 70 us), far below the 4 ms tick the hog would otherwise run to.
    assert!(
        p.wakeup_latency_ns.max < 250_000,
        "every wakeup preempts at once: max {} ns",
        p.wakeup_latency_ns.max
    );
    // Without WAKEUP_PREEMPTION it waits for the hog's tick.
    let off = sleeper_vs_hog("WAKEUP_PREEMPTION = false");
    let p_off = common::task(&off, "p");
    assert!(
        p_off.wakeup_latency_ns.p50 > 500_000,
        "p50 {} ns",
        p_off.wakeup_latency_ns.p50
    );
    // The sleeper still gets its 20% either way: the credit is bounded.
    let share = common::cpu_ns(&on, "p") as f64 / 5e9;
    assert!((share - 0.2).abs() < 0.2 * 0.01, "share {share}");
}

fn one_cpu(n: usize) -> (Scheduler, Vec<TaskId>) {
    let cfg = SchedConfig::new(KernelPreset::V6_1, 1, 250);
    let mut s = Scheduler::new(cfg);
    let ids: Vec<TaskId> = (0..n)
        .map(|i| s.create_task(&format!("t{i}"), ROOT_GROUP, 0, vec![true], CpuId(0), None))
        .collect();
    for &t in &ids {
        s.wake_up_new_task(t);
    }
    serve(&mut s);
    (s, ids)
}

fn serve(s: &mut Scheduler) -> Vec<Switch> {
    let mut v = Vec::new();
    while let Some(c) = s.take_resched() {
        if s.rq(c).need_resched() {
            v.extend(s.schedule(c));
        }
    }
    v
}

/// Five nice-0 tasks woken at once on one CPU: START_DEBIT places task k at
/// min_vruntime + 6 ms / (k + 1) (`sched_vslice()` with k queued), so t4
/// (+1.2 ms) runs and t3 (+1.5), t2 (+2), t1 (+3), t0 (+6) wait in that
/// order. `yield_to(target)` from t4: the next buddy runs if it is within
/// wakeup_gran (1 ms) of the leftmost (t3), else the leftmost does.
fn after_yield_to(target: usize) -> (Option<TaskId>, Vec<TaskId>) {
    let (mut s, ids) = one_cpu(5);
    assert_eq!(s.rq(CpuId(0)).curr(), Some(ids[4]), "START_DEBIT order");
    s.set_now(1_000);
    let r = s.yield_to(CpuId(0), ids[target], true);
    let YieldTo::Yielded(Some(sw)) = r else {
        panic!("yield_to fails or keeps the yielder ({r:?})");
    };
    (sw.next(), ids)
}

#[test]
fn cfs_yield_to_target_runs_next_within_wakeup_gran_of_the_leftmost() {
    // t2 is 0.5 ms after the leftmost t3: the buddy runs.
    let (next, ids) = after_yield_to(2);
    assert_eq!(next, Some(ids[2]));
    // t0 is 4.5 ms after it: the buddy is ignored, the leftmost runs.
    let (next, ids) = after_yield_to(0);
    assert_eq!(next, Some(ids[3]));
}

#[test]
fn cfs_sched_yield_gives_way_only_to_an_entity_within_wakeup_gran() {
    // Two tasks: t1 (+3 ms) runs, t0 (+6 ms) waits 3 ms ahead, more than
    // wakeup_gran: the skipped yielder is picked again.
    let (mut s, ids) = one_cpu(2);
    assert_eq!(s.rq(CpuId(0)).curr(), Some(ids[1]));
    s.set_now(100_000);
    assert_eq!(s.do_sched_yield(CpuId(0)), None, "no switch");
    // After 2.5 ms of running, t1 is 0.5 ms behind t0: the yield gives way.
    s.set_now(2_500_000);
    s.sched_tick(CpuId(0));
    assert!(!s.rq(CpuId(0)).need_resched(), "within its 3 ms slice");
    let sw = s.do_sched_yield(CpuId(0)).expect("a switch");
    assert_eq!(sw.next(), Some(ids[0]));
}
