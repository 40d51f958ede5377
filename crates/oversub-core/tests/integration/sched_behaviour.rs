//! Host-scheduler behaviour that mirrors the real kernel: cgroup shares and
//! trees, lag preservation, wakeup preemption features and buddies, each
//! compared with what the kernel's rules predict. The behaviour a guest
//! kernel must show as well (nice ratios, affinity, forfeit on yield,
//! wakeup preemption, HRTICK) is the contract suite `level_contract`, run
//! at both levels.

use crate::common;

use common::run;
use oversub::report::Report;
use oversub::sched::core::{Switch, YieldTo};
use oversub::sched::{CpuId, KernelPreset, SchedConfig, Scheduler, TaskId, ROOT_GROUP};

fn cpu(r: &Report, name: &str) -> f64 {
    common::cpu_ns(r, name) as f64
}

fn cg(r: &Report, path: &str) -> f64 {
    r.cgroups.iter().find(|c| c.path == path).unwrap().cpu_ns as f64
}

#[test]
fn pinned_hogs_in_weighted_cgroups_split_25_75() {
    let r = run(r#"
        [host]
        cpus = 2
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
        cgroup = "/a"
        cpus = [0]
        [[task]]
        name = "b"
        kind = "hog"
        cgroup = "/b"
        cpus = [0]
    "#);
    let (a, b) = (cpu(&r, "a"), cpu(&r, "b"));
    let share = a / (a + b);
    assert!((share - 0.25).abs() < 0.25 * 0.005, "share of /a = {share}");
    // CPU 1 stays idle: nothing may run there.
    assert_eq!(r.cpus[1].busy_ns, 0);
}

#[test]
fn three_level_cgroup_tree_gets_analytic_shares() {
    // / -> a(100) { x(100) { p, q }, y(300) { y } }, b(100) { b }
    // b: 1/2; a/y: 1/2 * 3/4 = 3/8; a/x/p = a/x/q = 1/2 * 1/4 * 1/2 = 1/16.
    let r = run(r#"
        [host]
        cpus = 1
        duration = "8s"
        [[cgroup]]
        path = "/a"
        [[cgroup]]
        path = "/a/x"
        [[cgroup]]
        path = "/a/y"
        weight = 300
        [[cgroup]]
        path = "/a/x/leaf"
        [[cgroup]]
        path = "/b"
        [[task]]
        name = "b"
        kind = "hog"
        cgroup = "/b"
        [[task]]
        name = "y"
        kind = "hog"
        cgroup = "/a/y"
        [[task]]
        name = "p"
        kind = "hog"
        cgroup = "/a/x/leaf"
        [[task]]
        name = "q"
        kind = "hog"
        cgroup = "/a/x/leaf"
    "#);
    let total = r.duration_ns as f64;
    for (name, want) in [("b", 0.5), ("y", 0.375), ("p", 0.0625), ("q", 0.0625)] {
        let got = cpu(&r, name) / total;
        assert!(
            (got - want).abs() < want * 0.02,
            "{name}: {got} want {want}"
        );
    }
    assert!((cg(&r, "/a/x") / total - 0.125).abs() < 0.125 * 0.02);
}

#[test]
fn cpu_time_is_conserved() {
    let r = run(r#"
        [host]
        cpus = 3
        duration = "2s"
        [[task]]
        name = "h"
        kind = "hog"
        count = 2
        [[task]]
        name = "p"
        kind = "periodic"
        period = "3ms"
        run = "500us"
        count = 3
        [[task]]
        name = "pp"
        kind = "pingpong"
        count = 2
    "#);
    let tasks: u64 = r.tasks.iter().map(|t| t.cpu_ns).sum();
    let busy: u64 = r.cpus.iter().map(|c| c.busy_ns).sum();
    assert_eq!(tasks, busy, "task runtime must equal CPU busy time");
    assert!(busy <= 3 * r.duration_ns);
    // 2 hogs alone would leave one CPU idle; pingpong and periodic fill it.
    let idle = 3 * r.duration_ns - busy;
    assert!(idle < r.duration_ns, "idle {idle}");
}

/// A scheduler with `n` nice-0 root tasks on one CPU, all started.
fn one_cpu(
    preset: KernelPreset,
    n: usize,
    tweak: impl Fn(&mut Scheduler),
) -> (Scheduler, Vec<TaskId>) {
    let cfg = SchedConfig::new(preset, 1, 250);
    let mut s = Scheduler::new(cfg);
    tweak(&mut s);
    let ids: Vec<TaskId> = (0..n)
        .map(|i| s.create_task(&format!("t{i}"), ROOT_GROUP, 0, vec![true], CpuId(0), None))
        .collect();
    for &t in &ids {
        s.wake_up_new_task(t);
    }
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

fn curr(s: &Scheduler) -> Option<TaskId> {
    s.rq(CpuId(0)).curr()
}

#[test]
fn place_lag_preserves_a_sleepers_lag() {
    for place_lag in [true, false] {
        let (mut s, t) = one_cpu(KernelPreset::V6_12_117, 3, |s| {
            assert!(s.features_mut().set("PLACE_LAG", place_lag));
        });
        serve(&mut s);
        let first = curr(&s).unwrap();
        // The first task runs 3 ms (ticks charge it), then someone else runs.
        s.set_now(3_000_000);
        s.sched_tick(CpuId(0));
        serve(&mut s);
        let second = curr(&s).unwrap();
        assert_ne!(first, second);
        // The second runs 100 us and blocks: it leaves with positive lag.
        s.set_now(s.now() + 100_000);
        s.block_current(CpuId(0));
        let se = s.task(second).se();
        let vlag = s.se(se).vlag();
        assert!(vlag > 500_000, "lag at sleep {vlag}");
        // It sleeps 1 ms and wakes: placed `lag` (inflated) before V.
        s.set_now(s.now() + 1_000_000);
        serve(&mut s);
        s.try_to_wake_up(second, 0, None);
        let cfs = s.task_cfs_rq(second);
        let v = s.se(se).vruntime();
        let avg = s.avg_vruntime(cfs);
        let lag_now = avg as i64 - v as i64;
        if place_lag {
            // The inflation lag*(W+w)/W makes the lag survive the shift of V
            // that adding the entity causes (to within rounding).
            assert!(
                (lag_now - vlag).abs() <= 2,
                "placed lag {lag_now} vs kept lag {vlag}"
            );
        } else {
            assert!(
                lag_now.abs() < 2,
                "PLACE_LAG off: placed at V, lag {lag_now}"
            );
        }
        let _ = t;
    }
}

/// Set up Y running with T and O waiting, T and O tied on deadline with O
/// first in tree order; return who runs after Y yields to T.
fn after_yield_to(preset: KernelPreset) -> (TaskId, TaskId, TaskId) {
    let (mut s, ids) = one_cpu(preset, 3, |_| {});
    serve(&mut s);
    let y = curr(&s).unwrap();
    let others: Vec<TaskId> = ids.iter().copied().filter(|&t| t != y).collect();
    let (o, t) = (others[0], others[1]);
    s.set_now(100_000);
    let r = s.yield_to(CpuId(0), t, true);
    let YieldTo::Yielded(sw) = r else {
        panic!("yield_to fails ({r:?}) though the target is queued and not running");
    };
    let next = sw.and_then(|w| w.next()).unwrap_or(y);
    (next, t, o)
}

#[test]
fn yield_to_buddy_runs_next_on_6_12_117_but_not_on_6_12_0() {
    let (next, t, _) = after_yield_to(KernelPreset::V6_12_117);
    assert_eq!(next, t, "PICK_BUDDY honours the yield_to target");
    let (next, t, o) = after_yield_to(KernelPreset::V6_12_0);
    assert_ne!(next, t, "6.12.0: NEXT_BUDDY off, the buddy is ignored");
    assert_eq!(next, o, "EEVDF order picks the other waiter");
}

#[test]
fn yield_to_returns_esrch_with_one_task_per_runqueue() {
    let cfg = SchedConfig::new(KernelPreset::V6_12_117, 2, 250);
    let mut s = Scheduler::new(cfg);
    let a = s.create_task("a", ROOT_GROUP, 0, vec![true, false], CpuId(0), None);
    let b = s.create_task("b", ROOT_GROUP, 0, vec![false, true], CpuId(1), None);
    s.wake_up_new_task(a);
    s.wake_up_new_task(b);
    serve(&mut s);
    assert_eq!(s.rq(CpuId(0)).curr(), Some(a));
    assert_eq!(s.rq(CpuId(1)).curr(), Some(b));
    assert_eq!(s.yield_to(CpuId(0), b, true), YieldTo::Esrch);
    // A running target fails with 0 once a second task makes the rq busier.
    let c = s.create_task("c", ROOT_GROUP, 0, vec![true, false], CpuId(0), None);
    s.wake_up_new_task(c);
    serve(&mut s);
    let runner = s.rq(CpuId(0)).curr().unwrap();
    let r = s.yield_to(CpuId(0), b, true);
    assert_eq!(r, YieldTo::Refused, "target running on another CPU");
    assert_eq!(s.rq(CpuId(0)).curr(), Some(runner));
}

/// Mean wakeup latency of a short-slice periodic waker against one hog with a
/// long (3 ms) custom slice on one CPU. The waker is nice 19, so its 20 us
/// per period is more than its share: it blocks with negative lag and (with
/// DELAY_DEQUEUE and DELAY_ZERO) wakes with no positive lag, so the running
/// hog is still eligible when it arrives. (A waker that wakes with positive
/// lag makes the hog ineligible and preempts it under every feature set;
/// 1 ns of timer slack keeps the timer out of the figure.)
fn latency_mean(features: &str) -> u64 {
    let r = run(&format!(
        r#"
        [host]
        cpus = 1
        duration = "3s"
        [host.features]
        {features}
        [[task]]
        name = "hog"
        kind = "hog"
        slice = "3ms"
        [[task]]
        name = "w"
        kind = "periodic"
        nice = 19
        period = "1300us"
        run = "20us"
        slice = "100us"
        timer_slack = "1ns"
    "#
    ));
    r.tasks
        .iter()
        .find(|t| t.name == "w")
        .unwrap()
        .wakeup_latency_ns
        .mean
}

#[test]
fn preempt_short_lets_a_short_slice_waker_cut_the_running_slice() {
    let both = latency_mean("PREEMPT_SHORT = true\nRUN_TO_PARITY = true");
    let no_short = latency_mean("PREEMPT_SHORT = false\nRUN_TO_PARITY = true");
    eprintln!("mean latency ns: PREEMPT_SHORT {both}, without {no_short}");
    // Without PREEMPT_SHORT the eligible hog's earlier deadline keeps the
    // CPU: the waker waits for the hog's slice to run out.
    assert!(no_short > 100_000, "the waker should wait: {no_short}");
    // PREEMPT_SHORT (do_preempt_short) lets the shorter-slice waker in.
    assert!(
        both < no_short,
        "PREEMPT_SHORT {both} vs without {no_short}"
    );
}
