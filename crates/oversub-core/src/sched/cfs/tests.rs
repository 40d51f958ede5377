//! Unit tests of the Linux 6.1 (CFS) rules, each named after the function
//! and the rule of linux-source-6.1 kernel/sched/fair.c it checks.

use super::tunables::{get_update_sysctl_factor, update_sysctl};
use crate::sched::entity::VruntimeStep;
use crate::sched::fair::{DEQUEUE_SLEEP, ENQUEUE_MIGRATED, ENQUEUE_WAKEUP};
use crate::sched::ids::{CpuId, SeId, TaskId};
use crate::sched::{HostCosts, KernelPreset, SchedConfig, Scheduler, TaskState, ROOT_GROUP};

const MS: u64 = 1_000_000;

/// A 6.1 host of `cpus` CPUs with `n` nice-0 tasks on CPU 0 (others not
/// allowed), all woken, the first pick served.
fn host(cpus: u32, n: usize) -> (Scheduler, Vec<TaskId>) {
    let cfg = SchedConfig {
        nr_cpus: cpus,
        hz: 250,
        features: KernelPreset::V6_1.features(),
        preset: KernelPreset::V6_1,
        costs: HostCosts::ZERO,
    };
    let mut s = Scheduler::new(cfg);
    let mut allowed = vec![false; cpus as usize];
    allowed[0] = true;
    let ids: Vec<TaskId> = (0..n)
        .map(|i| {
            s.create_task(
                &format!("t{i}"),
                ROOT_GROUP,
                0,
                allowed.clone(),
                CpuId(0),
                None,
            )
        })
        .collect();
    for &t in &ids {
        s.wake_up_new_task(t);
    }
    serve(&mut s);
    (s, ids)
}

fn serve(s: &mut Scheduler) {
    while let Some(c) = s.take_resched() {
        if s.rqs[c.idx()].need_resched {
            s.schedule(c);
        }
    }
}

fn se(s: &Scheduler, t: TaskId) -> SeId {
    s.tasks[t.idx()].se
}

fn v(s: &Scheduler, t: TaskId) -> u64 {
    s.ses[se(s, t).idx()].vruntime()
}

/// Sets a task's vruntime, keeping the timeline ordered (a queued entity
/// other than curr is taken out and put back).
fn set_v(s: &mut Scheduler, t: TaskId, vr: u64) {
    let e = se(s, t);
    let cfs = s.cfs_rq_of(e);
    let in_tree = s.ses[e.idx()].on_rq && s.cfs_rqs[cfs.idx()].curr != Some(e);
    if in_tree {
        s.dequeue_from_timeline(cfs, e);
    }
    s.ses[e.idx()].set_vruntime(vr, VruntimeStep::Place);
    if in_tree {
        s.enqueue_into_timeline(cfs, e);
    }
}

fn curr(s: &Scheduler) -> TaskId {
    s.rqs[0].curr.expect("a task runs")
}

fn others(ids: &[TaskId], not: TaskId) -> Vec<TaskId> {
    ids.iter().copied().filter(|&t| t != not).collect()
}

#[test]
fn get_update_sysctl_factor_is_1_plus_ilog2_of_cpus_capped_at_8() {
    let f: Vec<u64> = [1, 2, 3, 4, 7, 8, 64]
        .map(get_update_sysctl_factor)
        .to_vec();
    assert_eq!(f, vec![1, 2, 2, 3, 3, 4, 4]);
    let t = update_sysctl(2);
    assert_eq!(t.sched_latency, 12 * MS);
    assert_eq!(t.sched_min_granularity, 1_500_000);
    assert_eq!(t.sched_wakeup_granularity, 2 * MS);
    assert_eq!(update_sysctl(80).sched_latency, 24 * MS);
}

#[test]
fn sched_period_is_latency_up_to_8_tasks_then_n_times_min_granularity() {
    let (mut s, _) = host(1, 1);
    let c = s.cfs();
    assert_eq!(c.__sched_period(8), 6 * MS);
    assert_eq!(c.__sched_period(9), 9 * 750_000);
}

#[test]
fn sched_slice_splits_the_period_by_weight() {
    // Two nice-0 tasks on one CPU: 6 ms / 2.
    let (mut s, ids) = host(1, 2);
    let q = s.task_cfs_rq(ids[0]);
    let e = se(&s, ids[0]);
    // 3 ms less the rounding of the kernel's fixed-point __calc_delta().
    assert_eq!(s.cfs().sched_slice(q, e), 2_999_998);
    // A third, not yet queued, entity is counted in the period and the load.
    let t = s.create_task("new", ROOT_GROUP, 0, vec![true], CpuId(0), None);
    let ne = se(&s, t);
    assert_eq!(s.cfs().sched_slice(q, ne), 1_999_999);
}

#[test]
fn sched_slice_is_at_least_min_granularity() {
    // Nine tasks stretch the period to 9 × 0.75 ms; a nice-19 one's share
    // of it (15/(8·1024+15)) is below min_granularity, so it gets 0.75 ms.
    let (mut s, ids) = host(1, 8);
    let t = s.create_task("n19", ROOT_GROUP, 19, vec![true], CpuId(0), None);
    s.wake_up_new_task(t);
    let q = s.task_cfs_rq(ids[0]);
    assert_eq!(
        {
            let e_ = se(&s, t);
            s.cfs().sched_slice(q, e_)
        },
        750_000
    );
    let e0 = se(&s, ids[0]);
    assert!(s.cfs().sched_slice(q, e0) > 750_000);
}

#[test]
fn place_entity_sleeper_credit_is_half_latency_with_gentle_fair_sleepers() {
    for gentle in [true, false] {
        let (mut s, ids) = host(1, 2);
        s.feat.gentle_fair_sleepers = gentle;
        let q = s.task_cfs_rq(ids[0]);
        let sleeper = s.create_task("sleeper", ROOT_GROUP, 0, vec![true], CpuId(0), None);
        let e = se(&s, sleeper);
        let min = s.cfs_rqs[q.idx()].min_vruntime;
        // Slept long ago: its own vruntime is far behind.
        s.ses[e.idx()].set_vruntime(min.wrapping_sub(100 * MS), VruntimeStep::Place);
        s.cfs().place_entity(q, e, false);
        let credit = if gentle { 3 * MS } else { 6 * MS };
        assert_eq!(s.ses[e.idx()].vruntime(), min.wrapping_sub(credit));
    }
}

#[test]
fn place_entity_never_lets_a_sleeper_gain_vruntime() {
    let (mut s, ids) = host(1, 2);
    let q = s.task_cfs_rq(ids[0]);
    let sleeper = s.create_task("sleeper", ROOT_GROUP, 0, vec![true], CpuId(0), None);
    let e = se(&s, sleeper);
    let min = s.cfs_rqs[q.idx()].min_vruntime;
    // Within the credit: keeps its own (later) vruntime.
    let own = min.wrapping_sub(MS);
    s.ses[e.idx()].set_vruntime(own, VruntimeStep::Place);
    s.cfs().place_entity(q, e, false);
    assert_eq!(s.ses[e.idx()].vruntime(), own);
}

#[test]
fn place_entity_start_debit_places_a_new_task_one_vslice_late() {
    for debit in [true, false] {
        let (mut s, ids) = host(1, 2);
        s.feat.start_debit = debit;
        let q = s.task_cfs_rq(ids[0]);
        let t = s.create_task("new", ROOT_GROUP, 0, vec![true], CpuId(0), None);
        let e = se(&s, t);
        let min = s.cfs_rqs[q.idx()].min_vruntime;
        s.ses[e.idx()].set_vruntime(min, VruntimeStep::Place);
        let vslice = s.cfs().sched_vslice(q, e);
        // 6 ms over three nice-0 entities, in __calc_delta()'s fixed point.
        assert_eq!(vslice, 1_999_999);
        s.cfs().place_entity(q, e, true);
        let want = if debit { min.wrapping_add(vslice) } else { min };
        assert_eq!(s.ses[e.idx()].vruntime(), want);
    }
}

#[test]
fn update_min_vruntime_follows_the_smallest_but_never_moves_back() {
    let (mut s, ids) = host(1, 3);
    let q = s.task_cfs_rq(ids[0]);
    let c = curr(&s);
    let o = others(&ids, c);
    let base = s.cfs_rqs[q.idx()].min_vruntime;
    set_v(&mut s, c, base + 5 * MS);
    set_v(&mut s, o[0], base + 4 * MS);
    set_v(&mut s, o[1], base + 9 * MS);
    s.cfs().update_min_vruntime(q);
    assert_eq!(s.cfs_rqs[q.idx()].min_vruntime, base + 4 * MS);
    // The leftmost moving back does not move min_vruntime back.
    set_v(&mut s, o[0], base + MS);
    s.cfs().update_min_vruntime(q);
    assert_eq!(s.cfs_rqs[q.idx()].min_vruntime, base + 4 * MS);
}

#[test]
fn wakeup_preempt_entity_is_minus1_0_1_around_wakeup_gran() {
    let (mut s, ids) = host(1, 2);
    let (a, b) = (ids[0], ids[1]);
    let (ea, eb) = (se(&s, a), se(&s, b));
    let base = 1_000 * MS;
    s.ses[eb.idx()].set_vruntime(base, VruntimeStep::Place);
    let gran = s.cfs().wakeup_gran(eb);
    assert_eq!(gran, MS, "1 ms at nice 0 on one CPU");
    for (lead, want) in [
        (0i64, -1),
        (-5, -1),
        (1, 0),
        (MS as i64, 0),
        (MS as i64 + 1, 1),
    ] {
        s.ses[ea.idx()].set_vruntime(base.wrapping_add(lead as u64), VruntimeStep::Place);
        assert_eq!(s.cfs().wakeup_preempt_entity(ea, eb), want, "lead {lead}");
    }
}

#[test]
fn wakeup_gran_is_in_the_virtual_time_of_the_wakee() {
    let (mut s, _) = host(1, 1);
    let heavy = s.create_task("n-5", ROOT_GROUP, -5, vec![true], CpuId(0), None);
    // nice -5 weighs 3121: 1 ms × 1024 / 3121.
    let g = {
        let e_ = se(&s, heavy);
        s.cfs().wakeup_gran(e_)
    };
    assert!((g as i64 - 328_100).abs() < 100, "gran {g}");
}

/// One running task at `lead` ns of vruntime ahead of a waking one.
fn wake_behind(lead: u64) -> (Scheduler, TaskId, TaskId) {
    let (mut s, ids) = host(1, 1);
    let c = ids[0];
    let w = s.create_task("wakee", ROOT_GROUP, 0, vec![true], CpuId(0), None);
    s.wake_up_new_task(w);
    serve(&mut s);
    // Put the wakee to sleep so it can be woken.
    if curr(&s) == w {
        s.now += 1;
        s.block_current(CpuId(0));
    } else {
        let q = s.task_cfs_rq(w);
        s.dequeue_task_fair(w, DEQUEUE_SLEEP);
        s.tasks[w.idx()].on_rq = false;
        s.tasks[w.idx()].state = TaskState::Sleeping;
        let _ = q;
    }
    serve(&mut s);
    assert_eq!(curr(&s), c);
    let q = s.task_cfs_rq(c);
    let min = s.cfs_rqs[q.idx()].min_vruntime;
    set_v(&mut s, c, min.wrapping_add(lead));
    s.cfs_rqs[q.idx()].min_vruntime = min.wrapping_add(lead);
    // The wakee slept briefly: its own vruntime (`lead` behind curr) is
    // later than the sleeper credit allows, so place_entity() keeps it.
    let mv = s.cfs_rqs[q.idx()].min_vruntime;
    let ew = se(&s, w);
    s.ses[ew.idx()].set_vruntime(mv.wrapping_sub(lead), VruntimeStep::Place);
    s.now += 10;
    s.try_to_wake_up(w, 0, Some(CpuId(0)));
    (s, c, w)
}

#[test]
fn check_preempt_wakeup_a_wakee_within_wakeup_gran_does_not_preempt() {
    // curr leads the wakee by 0.9 ms < 1 ms of wakeup_gran.
    let (mut s, c, w) = wake_behind(900_000);
    assert!(!s.rqs[0].need_resched, "no preemption within wakeup_gran");
    serve(&mut s);
    assert_eq!(curr(&s), c);
    let q = s.task_cfs_rq(w);
    assert_eq!(s.cfs_rqs[q.idx()].next, None, "not nominated either");
}

#[test]
fn check_preempt_wakeup_a_wakee_beyond_wakeup_gran_preempts_and_is_next_buddy() {
    // curr leads by 1.2 ms > 1 ms.
    let (mut s, _c, w) = wake_behind(1_200_000);
    assert!(s.rqs[0].need_resched);
    let q = s.task_cfs_rq(w);
    assert_eq!(s.cfs_rqs[q.idx()].next, Some(se(&s, w)));
    // Fewer than sched_nr_latency queued: no last buddy.
    assert_eq!(s.cfs_rqs[q.idx()].last, None);
    serve(&mut s);
    assert_eq!(curr(&s), w);
}

#[test]
fn check_preempt_wakeup_last_buddy_needs_sched_nr_latency_queued() {
    // Eight queued (sched_nr_latency): the preempted curr becomes `last`.
    let (mut s, ids) = host(1, 8);
    let c = curr(&s);
    let w = s.create_task("wakee", ROOT_GROUP, 0, vec![true], CpuId(0), None);
    let q = s.task_cfs_rq(c);
    let min = s.cfs_rqs[q.idx()].min_vruntime;
    set_v(&mut s, c, min + 10 * MS);
    s.cfs_rqs[q.idx()].min_vruntime = min + 10 * MS;
    for &o in &others(&ids, c) {
        set_v(&mut s, o, min + 20 * MS);
    }
    let ew = se(&s, w);
    s.ses[ew.idx()].set_vruntime(min, VruntimeStep::Place);
    s.tasks[w.idx()].state = TaskState::Sleeping;
    s.try_to_wake_up(w, 0, Some(CpuId(0)));
    assert!(s.rqs[0].need_resched);
    assert_eq!(s.cfs_rqs[q.idx()].last, Some(se(&s, c)));
    // Without LAST_BUDDY it is not set.
    let (mut s, ids) = host(1, 8);
    s.feat.last_buddy = false;
    let c = curr(&s);
    let w = s.create_task("wakee", ROOT_GROUP, 0, vec![true], CpuId(0), None);
    let q = s.task_cfs_rq(c);
    let min = s.cfs_rqs[q.idx()].min_vruntime;
    set_v(&mut s, c, min + 10 * MS);
    s.cfs_rqs[q.idx()].min_vruntime = min + 10 * MS;
    for &o in &others(&ids, c) {
        set_v(&mut s, o, min + 20 * MS);
    }
    let ew = se(&s, w);
    s.ses[ew.idx()].set_vruntime(min, VruntimeStep::Place);
    s.try_to_wake_up(w, 0, Some(CpuId(0)));
    assert!(s.rqs[0].need_resched);
    assert_eq!(s.cfs_rqs[q.idx()].last, None);
}

/// Three queued tasks with the running one switched out: leftmost `l`,
/// second `m` and third `r` by vruntime, `r` `gap_r` ahead of `l`.
fn three_queued(gap_m: u64, gap_r: u64) -> (Scheduler, [TaskId; 3]) {
    let (mut s, ids) = host(1, 3);
    let c = curr(&s);
    s.put_prev_task_fair(c);
    s.rqs[0].curr = None;
    s.tasks[c.idx()].on_cpu = false;
    let q = s.task_cfs_rq(c);
    let base = s.cfs_rqs[q.idx()].min_vruntime;
    let [l, m, r] = [ids[0], ids[1], ids[2]];
    set_v(&mut s, l, base);
    set_v(&mut s, m, base + gap_m);
    set_v(&mut s, r, base + gap_r);
    (s, [l, m, r])
}

#[test]
fn pick_next_entity_takes_the_leftmost_vruntime() {
    let (s, [l, _, _]) = three_queued(MS / 2, 2 * MS);
    let q = s.task_cfs_rq(l);
    let mut s = s;
    assert_eq!(s.cfs().pick_next_entity(q, None), Some(se(&s, l)));
}

#[test]
fn pick_next_entity_next_buddy_unless_more_than_wakeup_gran_ahead_of_leftmost() {
    // r is 0.9 ms ahead (< 1 ms): picked as the next buddy.
    let (mut s, [l, _, r]) = three_queued(MS / 2, 900_000);
    let q = s.task_cfs_rq(l);
    {
        let e_ = se(&s, r);
        s.cfs().set_next_buddy(e_)
    };
    assert_eq!(s.cfs().pick_next_entity(q, None), Some(se(&s, r)));
    // r is 1.1 ms ahead: the leftmost wins.
    let (mut s, [l, _, r]) = three_queued(MS / 2, 1_100_000);
    {
        let e_ = se(&s, r);
        s.cfs().set_next_buddy(e_)
    };
    assert_eq!(s.cfs().pick_next_entity(q, None), Some(se(&s, l)));
}

#[test]
fn pick_next_entity_next_buddy_beats_last_buddy() {
    let (mut s, [l, m, r]) = three_queued(MS / 2, 900_000);
    let q = s.task_cfs_rq(l);
    {
        let e_ = se(&s, m);
        s.cfs().set_last_buddy(e_)
    };
    assert_eq!(
        s.cfs().pick_next_entity(q, None),
        Some(se(&s, m)),
        "last alone"
    );
    {
        let e_ = se(&s, r);
        s.cfs().set_next_buddy(e_)
    };
    assert_eq!(
        s.cfs().pick_next_entity(q, None),
        Some(se(&s, r)),
        "next first"
    );
}

#[test]
fn pick_next_entity_skips_the_skip_buddy_unless_the_second_is_too_far() {
    let (mut s, [l, m, _]) = three_queued(MS / 2, 2 * MS);
    let q = s.task_cfs_rq(l);
    {
        let e_ = se(&s, l);
        s.cfs().set_skip_buddy(e_)
    };
    assert_eq!(s.cfs().pick_next_entity(q, None), Some(se(&s, m)));
    // The second more than wakeup_gran behind: the skipped leftmost runs.
    let (mut s, [l, _, _]) = three_queued(1_500_000, 2 * MS);
    {
        let e_ = se(&s, l);
        s.cfs().set_skip_buddy(e_)
    };
    assert_eq!(s.cfs().pick_next_entity(q, None), Some(se(&s, l)));
}

#[test]
fn yield_task_fair_marks_the_yielder_skip_and_keeps_its_vruntime() {
    let (mut s, ids) = host(1, 3);
    let y = curr(&s);
    s.now = 1_000;
    s.sched_tick(CpuId(0));
    let before = v(&s, y);
    assert!(s.yield_task_fair(CpuId(0)));
    let q = s.task_cfs_rq(y);
    assert_eq!(s.cfs_rqs[q.idx()].skip, Some(se(&s, y)));
    assert_eq!(v(&s, y), before, "update_curr() ran at the same instant");
    s.schedule(CpuId(0));
    assert_ne!(curr(&s), y, "the yielder gives way");
    let _ = ids;
}

#[test]
fn yield_to_task_fair_sets_next_on_the_target_and_skip_on_the_yielder() {
    let (mut s, ids) = host(1, 3);
    let y = curr(&s);
    let o = others(&ids, y);
    let q = s.task_cfs_rq(y);
    // The target is the later of the two waiters (not the leftmost) but
    // within wakeup_gran of it.
    let base = s.cfs_rqs[q.idx()].min_vruntime;
    set_v(&mut s, o[0], base);
    set_v(&mut s, o[1], base + MS / 2);
    let t = o[1];
    assert!(s.yield_to_task_fair(CpuId(0), t));
    assert_eq!(s.cfs_rqs[q.idx()].next, Some(se(&s, t)));
    assert_eq!(s.cfs_rqs[q.idx()].skip, Some(se(&s, y)));
    s.schedule(CpuId(0));
    assert_eq!(curr(&s), t, "the buddy runs next");
}

#[test]
fn check_preempt_tick_reschedules_after_the_ideal_slice() {
    // Two nice-0 tasks: 3 ms slice.
    let (mut s, _) = host(1, 2);
    let c = curr(&s);
    s.now = 2_900_000;
    s.sched_tick(CpuId(0));
    // Others' vruntime equal to curr's start: lead 2.9 ms < 3 ms.
    assert!(!s.rqs[0].need_resched, "within the slice");
    s.now = 3_100_000;
    s.sched_tick(CpuId(0));
    assert!(s.rqs[0].need_resched, "slice exceeded");
    let _ = c;
}

#[test]
fn check_preempt_tick_a_lead_over_leftmost_needs_min_granularity_first() {
    let (mut s, ids) = host(1, 2);
    let c = curr(&s);
    let o = others(&ids, c)[0];
    let q = s.task_cfs_rq(c);
    // curr is already 4 ms (> the 3 ms slice) ahead of the waiter.
    let base = v(&s, o);
    set_v(&mut s, c, base + 4 * MS);
    s.now = 500_000;
    s.sched_tick(CpuId(0));
    assert!(
        !s.rqs[0].need_resched,
        "ran 0.5 ms < min_granularity 0.75 ms"
    );
    s.now = 800_000;
    s.sched_tick(CpuId(0));
    assert!(
        s.rqs[0].need_resched,
        "lead > ideal slice after min_granularity"
    );
    let _ = q;
}

#[test]
fn dequeue_entity_and_enqueue_entity_carry_a_migrating_vruntime_relative_to_min_vruntime() {
    let (mut s, ids) = host(2, 2);
    let c = curr(&s);
    let o = others(&ids, c)[0];
    let q0 = s.task_cfs_rq(o);
    let min0 = s.cfs_rqs[q0.idx()].min_vruntime;
    set_v(&mut s, o, min0 + 2 * MS);
    s.tasks[o.idx()].allowed = crate::sched::CpuMask::full(2);
    let q1 = s.groups[0].cfs_rq[1];
    s.cfs_rqs[q1.idx()].min_vruntime = 500 * MS;
    s.move_queued_task(o, CpuId(1));
    // Not a sleep: 2 ms ahead of min_vruntime on CPU 0 is 2 ms ahead of
    // CPU 1's min_vruntime there.
    assert_eq!(v(&s, o), 500 * MS + 2 * MS);
    let _ = (ENQUEUE_WAKEUP, ENQUEUE_MIGRATED);
}

#[test]
fn reweight_entity_keeps_vruntime_on_6_1() {
    let (mut s, ids) = host(1, 2);
    let c = curr(&s);
    let o = others(&ids, c)[0];
    let q = s.task_cfs_rq(o);
    let before = v(&s, o);
    let e = se(&s, o);
    s.reweight_entity(q, e, 2 * 1024 * 1024);
    assert_eq!(v(&s, o), before);
    assert_eq!(s.ses[e.idx()].load.weight, 2 * 1024 * 1024);
}
