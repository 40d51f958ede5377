//! Scheduler invariants, checked after every event when enabled (tests, and
//! `oversub run --check`):
//! * per cfs_rq, the incrementally kept Σ (v_i - zero_vruntime)·w_i and Σ w_i
//!   equal a recomputation from the queued entities (so Σ w_i·(V - v_i) is 0
//!   up to the floor in `avg_vruntime()`);
//! * the queue counts (nr_running, h_nr_queued, load) and the timeline's
//!   slice set match the entities;
//! * every runnable task is either on a CPU or queued somewhere (none lost),
//!   and a CPU's curr is a running task of that CPU;
//! * the maintained nohz idle mask and count match `idle_cpu()`, and the
//!   count of overloaded CPUs their `nr_running`.

use crate::sched::timeline::SliceSet;
use crate::sched::weight::scale_load_down;
use crate::sched::{Scheduler, TaskState};

pub fn check(s: &Scheduler) -> Result<(), String> {
    for c in 0..s.nr_cpus() {
        if s.nohz.test(c) != s.idle_cpu(c) {
            return Err(format!(
                "cpu{c}: nohz idle mask says {} but idle_cpu() says {}",
                s.nohz.test(c),
                s.idle_cpu(c)
            ));
        }
    }
    for (c, rq) in s.rqs.iter().enumerate() {
        if s.overloaded_cpus.test(c) != (rq.nr_running >= 2) {
            return Err(format!(
                "cpu{c}: overloaded mask says {} with nr_running {}",
                s.overloaded_cpus.test(c),
                rq.nr_running
            ));
        }
    }
    let overloaded = s.rqs.iter().filter(|rq| rq.nr_running >= 2).count() as u32;
    if s.overloaded_cpus.weight() != overloaded {
        return Err(format!(
            "overloaded mask weight {} but {overloaded} CPUs have two or more tasks",
            s.overloaded_cpus.weight()
        ));
    }
    let nr_idle = (0..s.nr_cpus()).filter(|&c| s.idle_cpu(c)).count() as u32;
    if s.nohz.weight() != nr_idle {
        return Err(format!(
            "nohz.nr_cpus {} but {nr_idle} CPUs are idle",
            s.nohz.weight()
        ));
    }
    let flat_hier = flat_hierarchy_counts(s)?;
    for (qi, q) in s.cfs_rqs.iter().enumerate() {
        let mut sum = 0i64;
        let mut load = 0i64;
        let mut weight = 0u64;
        for &e in &q.queued {
            let se = &s.ses[e.idx()];
            if !se.on_rq {
                return Err(format!("cfs_rq{qi}: {e} in the timeline but not on_rq"));
            }
            if se.cfs_rq.idx() != qi {
                return Err(format!("cfs_rq{qi}: {e} belongs to {}", se.cfs_rq));
            }
            let w = scale_load_down(se.load.weight) as i64;
            sum += (se.vruntime().wrapping_sub(q.zero_vruntime) as i64) * w;
            load += w;
            weight += se.load.weight;
        }
        if sum != q.avg_vruntime || load != q.avg_load {
            return Err(format!(
                "cfs_rq{qi}: avg_vruntime {} / avg_load {} but entities give {sum} / {load}",
                q.avg_vruntime, q.avg_load
            ));
        }
        if let Some(w) = q.queued.windows(2).find(|w| !s.tree_before(w[0], w[1])) {
            return Err(format!(
                "cfs_rq{qi}: timeline out of order: {} before {}",
                w[0], w[1]
            ));
        }
        let slices = SliceSet::of(q.queued.iter().map(|e| s.ses[e.idx()].slice));
        if slices != q.slices {
            return Err(format!(
                "cfs_rq{qi}: slice set {:?} but the timeline gives {slices:?}",
                q.slices
            ));
        }
        let mut nr = q.queued.len() as u32;
        if let Some(c) = q.curr {
            if s.ses[c.idx()].on_rq {
                nr += 1;
                weight += s.ses[c.idx()].load.weight;
            }
        }
        if let Some((n, w)) = flat_hier.as_ref().and_then(|h| h[qi]) {
            // sched/flat: a hierarchy queue has no timeline; its counts are
            // those of the entities queued on it.
            (nr, weight) = (n, w);
        }
        if nr != q.nr_running {
            return Err(format!(
                "cfs_rq{qi}: nr_running {} but {nr} entities queued",
                q.nr_running
            ));
        }
        if weight != q.load.weight {
            return Err(format!(
                "cfs_rq{qi}: load {} but entities weigh {weight}",
                q.load.weight
            ));
        }
    }
    // h_nr_queued at each root equals the tasks queued on that CPU.
    for rq in &s.rqs {
        let queued = s
            .tasks
            .iter()
            .filter(|t| t.cpu == rq.cpu && t.on_rq)
            .count() as u32;
        let root = &s.cfs_rqs[rq.cfs.idx()];
        if root.h_nr_queued != queued || rq.nr_running != queued {
            return Err(format!(
                "{}: h_nr_queued {} nr_running {} but {queued} tasks queued",
                rq.cpu, root.h_nr_queued, rq.nr_running
            ));
        }
        // rq->cfs_tasks holds exactly the queued tasks (delayed included).
        if rq.cfs_tasks.len() as u32 != queued
            || rq
                .cfs_tasks
                .iter()
                .any(|&p| s.tasks[p.idx()].cpu != rq.cpu || !s.tasks[p.idx()].on_rq)
        {
            return Err(format!(
                "{}: cfs_tasks {:?} do not match its {queued} queued tasks",
                rq.cpu, rq.cfs_tasks
            ));
        }
        if let Some(c) = rq.curr {
            let t = &s.tasks[c.idx()];
            if t.cpu != rq.cpu || !t.on_cpu || t.state != TaskState::Running {
                return Err(format!("{}: curr {} is not running here", rq.cpu, t.name));
            }
        }
    }
    for t in &s.tasks {
        if !s.cpu_tasks[t.cpu.idx()].contains(&t.id) {
            return Err(format!(
                "task {} missing from {}'s task list",
                t.name, t.cpu
            ));
        }
        if t.state == TaskState::Running && !t.on_rq && !t.waking {
            return Err(format!("runnable task {} is on no runqueue", t.name));
        }
        if t.on_rq && !s.ses[t.se.idx()].on_rq {
            return Err(format!("task {} on_rq but its entity is not", t.name));
        }
    }
    Ok(())
}

/// sched/flat: per hierarchy queue (None for the flat queues), the number
/// and weight of the entities queued on it; and each task's flat entity
/// queued exactly when its hierarchy entity is.
#[allow(clippy::type_complexity)]
fn flat_hierarchy_counts(s: &Scheduler) -> Result<Option<Vec<Option<(u32, u64)>>>, String> {
    let Some(f) = &s.flat else {
        return Ok(None);
    };
    let mut h: Vec<Option<(u32, u64)>> = vec![Some((0, 0)); s.cfs_rqs.len()];
    for &q in &f.rq {
        h[q.idx()] = None;
    }
    for e in &s.ses {
        if e.on_rq {
            if let Some((n, w)) = &mut h[e.cfs_rq.idx()] {
                *n += 1;
                *w += e.load.weight;
            }
        }
    }
    for t in &s.tasks {
        let fe = &s.ses[f.se[t.id.idx()].idx()];
        let he = &s.ses[t.se.idx()];
        if fe.on_rq != he.on_rq || fe.sched_delayed != he.sched_delayed {
            return Err(format!(
                "task {}: flat entity on_rq/delayed {}/{} but hierarchy entity {}/{}",
                t.name, fe.on_rq, fe.sched_delayed, he.on_rq, he.sched_delayed
            ));
        }
        if fe.on_rq && fe.cfs_rq != f.rq[t.cpu.idx()] {
            return Err(format!("task {}: flat entity queued off its CPU", t.name));
        }
    }
    Ok(Some(h))
}
