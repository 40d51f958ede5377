//! Unit tests of the sched/flat rules (our reading of the v3 description):
//! the effective weight, when it is recomputed, one pick over tasks, and
//! the buddy of `yield_to()` on the single runqueue.

use crate::sched::core::YieldTo;
use crate::sched::ids::{CpuId, GroupId, TaskId};
use crate::sched::weight::NICE_0_LOAD;
use crate::sched::{HostCosts, KernelPreset, SchedConfig, Scheduler, ROOT_GROUP};

const N: u64 = NICE_0_LOAD;

fn host(preset: KernelPreset) -> Scheduler {
    Scheduler::new(SchedConfig {
        nr_cpus: 1,
        hz: 250,
        features: preset.features(),
        preset,
        costs: HostCosts::ZERO,
    })
}

fn task(s: &mut Scheduler, name: &str, g: GroupId) -> TaskId {
    s.create_task(name, g, 0, vec![true], CpuId(0), None)
}

fn serve(s: &mut Scheduler) {
    while let Some(c) = s.take_resched() {
        if s.rqs[c.idx()].need_resched {
            s.schedule(c);
        }
    }
}

/// `ticks` ticks of 4 ms on CPU 0, each followed by the reschedules it asked for.
fn run_ticks(s: &mut Scheduler, ticks: u32) {
    for _ in 0..ticks {
        s.now += s.cfg.tick_nsec();
        s.sched_tick(CpuId(0));
        serve(s);
        crate::sched::invariants::check(s).unwrap();
    }
}

fn flat_weight(s: &Scheduler, p: TaskId) -> u64 {
    s.ses[s.eevdf_se(p).idx()].load.weight
}

#[test]
fn flat_task_h_load_is_the_task_weight_times_each_group_fraction() {
    // /a{a0}, /b{b0, b1, /b/c{c0}} with /b/c at twice the default shares,
    // one CPU: every group entity gets its group's full shares.
    let mut s = host(KernelPreset::Flat);
    let a = s.create_group("/a", ROOT_GROUP, N);
    let b = s.create_group("/b", ROOT_GROUP, N);
    let c = s.create_group("/b/c", b, 2 * N);
    let ids: Vec<TaskId> = [("a0", a), ("b0", b), ("b1", b), ("c0", c)]
        .iter()
        .map(|&(n, g)| task(&mut s, n, g))
        .collect();
    for &t in &ids {
        s.wake_up_new_task(t);
    }
    crate::sched::invariants::check(&s).unwrap();
    // /b's load: b0 + b1 + /b/c's entity (2N) = 4N, its entity N.
    assert_eq!(s.flat_task_h_load(ids[0]), N);
    assert_eq!(s.flat_task_h_load(ids[1]), N / 4);
    assert_eq!(s.flat_task_h_load(ids[2]), N / 4);
    // c0: N * (2N / N) * (N / 4N).
    assert_eq!(s.flat_task_h_load(ids[3]), N / 2);
    // Not defined on a hierarchical preset: the task's own entity is used.
    let mut h = host(KernelPreset::V6_12_117);
    let g = h.create_group("/g", ROOT_GROUP, N);
    let t = task(&mut h, "t", g);
    assert_eq!(h.eevdf_se(t), h.tasks[t.idx()].se);
    assert!(h.flat_task_se(t).is_none());
}

#[test]
fn effective_weight_is_recomputed_on_enqueue_set_next_and_tick_only() {
    let mut s = host(KernelPreset::Flat);
    let a = s.create_group("/a", ROOT_GROUP, N);
    let b = s.create_group("/b", ROOT_GROUP, N);
    let a0 = task(&mut s, "a0", a);
    let b0 = task(&mut s, "b0", b);
    let b1 = task(&mut s, "b1", b);
    let b2 = task(&mut s, "b2", b);
    s.wake_up_new_task(a0);
    s.wake_up_new_task(b0);
    serve(&mut s);
    assert_eq!(flat_weight(&s, b0), N, "b0 alone in /b at its enqueue");
    // Enqueue: b1 sees /b with two tasks; the queued b0 keeps its weight.
    s.wake_up_new_task(b1);
    assert_eq!(flat_weight(&s, b1), N / 2);
    assert_eq!(flat_weight(&s, b0), N, "a waiting task is not re-weighted");
    // set_next_task: b0 is re-weighted when it is switched in, with no tick
    // in between (the running tasks yield until b0 is picked).
    let mut switched_in = false;
    for _ in 0..10 {
        let sw = s.do_sched_yield(CpuId(0));
        serve(&mut s);
        if sw.is_some_and(|w| w.next == Some(b0)) {
            switched_in = true;
            break;
        }
        assert_eq!(
            flat_weight(&s, b0),
            N,
            "b0 is not re-weighted before its pick"
        );
    }
    assert!(switched_in, "b0 was never picked");
    assert_eq!(flat_weight(&s, b0), N / 2, "b0 after its pick");
    run_ticks(&mut s, 50);
    // Tick: a running /b task is re-weighted at its next tick after b2
    // joins /b, not before.
    while s.tasks[s.rqs[0].curr.unwrap().idx()].group != b {
        run_ticks(&mut s, 1);
    }
    let r = s.rqs[0].curr.unwrap();
    s.wake_up_new_task(b2);
    assert_eq!(flat_weight(&s, b2), N / 3);
    assert_eq!(
        flat_weight(&s, r),
        N / 2,
        "curr keeps its weight until a tick"
    );
    s.now += 1;
    s.sched_tick(CpuId(0));
    assert_eq!(flat_weight(&s, r), N / 3, "the tick re-weights curr");
}

#[test]
fn one_pick_over_tasks_gives_each_cgroup_its_share() {
    // /a{1 hog}, /b{3 hogs} at equal weights on one CPU for 2 s: /a keeps
    // half although it has a quarter of the tasks.
    for preset in [KernelPreset::Flat, KernelPreset::V6_12_117] {
        let mut s = host(preset);
        let a = s.create_group("/a", ROOT_GROUP, N);
        let b = s.create_group("/b", ROOT_GROUP, N);
        let ids: Vec<TaskId> = [a, b, b, b]
            .iter()
            .enumerate()
            .map(|(i, &g)| task(&mut s, &format!("t{i}"), g))
            .collect();
        for &t in &ids {
            s.wake_up_new_task(t);
        }
        serve(&mut s);
        run_ticks(&mut s, 500);
        s.sync_accounting();
        let ran = |t: TaskId| s.ses[s.tasks[t.idx()].se.idx()].sum_exec_runtime as f64;
        let total: f64 = ids.iter().map(|&t| ran(t)).sum();
        let share_a = ran(ids[0]) / total;
        assert!((share_a - 0.5).abs() < 0.01, "{preset}: /a {share_a}");
        for &t in &ids[1..] {
            let sh = ran(t) / total;
            assert!((sh - 1.0 / 6.0).abs() < 0.01, "{preset}: {t:?} {sh}");
        }
    }
}

#[test]
fn yield_to_nominates_the_target_task_on_the_single_runqueue() {
    let mut s = host(KernelPreset::Flat);
    let g0 = s.create_group("/cg0", ROOT_GROUP, N);
    let g1 = s.create_group("/cg1", ROOT_GROUP, N);
    let a = task(&mut s, "A", g0);
    let b = task(&mut s, "B", g1);
    s.wake_up_new_task(a);
    s.wake_up_new_task(b);
    serve(&mut s);
    let y = s.rqs[0].curr.unwrap();
    let t = if y == a { b } else { a };
    assert!(s.yield_to_task_fair(CpuId(0), t));
    let f = s.flat_rq(CpuId(0)).unwrap();
    assert_eq!(s.cfs_rqs[f.idx()].next, Some(s.eevdf_se(t)));
    // No group entity is nominated: the hierarchy has no pick.
    assert!(s.cfs_rqs.iter().filter(|q| q.next.is_some()).count() == 1);
}

/// A (curr) and B on the flat queue of one CPU, B's vruntime set `lead`
/// ns (virtual) past A's, then A yield_to()s B: who runs next.
fn flat_yield_to_with_lead(lead: u64) -> (Option<TaskId>, TaskId, TaskId) {
    let mut s = host(KernelPreset::Flat);
    let g0 = s.create_group("/cg0", ROOT_GROUP, N);
    let g1 = s.create_group("/cg1", ROOT_GROUP, N);
    let a = task(&mut s, "A", g0);
    let b = task(&mut s, "B", g1);
    s.wake_up_new_task(a);
    s.wake_up_new_task(b);
    serve(&mut s);
    while s.rqs[0].curr != Some(a) {
        run_ticks(&mut s, 1);
    }
    let (sa, sb) = (s.eevdf_se(a), s.eevdf_se(b));
    let f = s.cfs_rq_of(sb);
    let v = s.ses[sa.idx()].vruntime().wrapping_add(lead);
    s.dequeue_from_timeline(f, sb);
    let e = &mut s.ses[sb.idx()];
    let d = e.deadline.wrapping_sub(e.vruntime());
    e.set_vruntime(v, crate::sched::entity::VruntimeStep::Place);
    e.deadline = v.wrapping_add(d);
    s.enqueue_into_timeline(f, sb);
    crate::sched::invariants::check(&s).unwrap();
    let next = match s.yield_to(CpuId(0), b, true) {
        YieldTo::Yielded(Some(sw)) => sw.next,
        YieldTo::Yielded(None) => Some(a),
        other => panic!("yield_to refused: {other:?}"),
    };
    crate::sched::invariants::check(&s).unwrap();
    (next, a, b)
}

#[test]
fn yield_to_runs_the_target_next_only_while_the_forfeit_leaves_it_eligible() {
    // A's forfeit moves its vruntime to its deadline (about one 0.7 ms
    // slice of virtual time: A's effective weight is N): a target level
    // with A becomes eligible and runs; one 50 ms ahead stays ineligible
    // and A runs on. On the flat queue the target's own lag decides, not
    // its group entity's.
    let (next, _, b) = flat_yield_to_with_lead(0);
    assert_eq!(next, Some(b), "B level with A: B runs after the yield");
    let (next, a, _) = flat_yield_to_with_lead(50_000_000);
    assert_eq!(
        next,
        Some(a),
        "B 50 ms ahead: the buddy is ignored, A runs on"
    );
}
