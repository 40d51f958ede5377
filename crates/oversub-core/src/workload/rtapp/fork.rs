//! The `fork` extension's child processes: a task named by a `fork` event
//! is a process image, not a thread started at time 0. Each thread that
//! forks it gets its own copy (`PARENT/TASK`), since a parent waits for
//! its child (`wait4`) and so has at most one of each alive; the copy
//! forks its own children the same way (`job.3/sh/gcc/cc1`).

use super::super::ir::{Event, Thread, ThreadId};
use super::super::InputError;
use crate::engine::Nanos;

/// How deep a chain of forks may go (make -> sh -> gcc -> cc1 is 4).
pub(super) const MAX_FORK_DEPTH: usize = 16;

/// Replaces the process images (tasks named by `fork` events, in
/// `forks` with the path of their first reference) by one copy per
/// forking thread, and points every `Fork` event (whose id indexes
/// `forks` until now) at its copy. Refused: a fork of an unknown task,
/// an image with several instances or a delay, a cycle of forks, a chain
/// deeper than [`MAX_FORK_DEPTH`], more threads than the program may have.
pub(super) fn expand(
    threads: Vec<Thread>,
    forks: &[(String, String)],
) -> Result<Vec<Thread>, InputError> {
    if forks.is_empty() {
        return Ok(threads);
    }
    let mut images: Vec<Option<Thread>> = vec![None; forks.len()];
    let mut roots = Vec::new();
    for t in threads {
        match forks.iter().position(|(n, _)| *n == t.task) {
            Some(k) => {
                let at = format!("tasks.{}", t.task);
                if images[k].is_some() || t.name != t.task {
                    return Err(InputError::new(
                        format!("{at}.instance"),
                        "a forked task (named by a fork event) is one process image: no instance key",
                    ));
                }
                if t.delay != Nanos::ZERO {
                    return Err(InputError::new(
                        format!("{at}.delay"),
                        "a forked task starts when it is forked: no delay",
                    ));
                }
                if t.phases.iter().any(|p| p.loops.is_none()) {
                    return Err(InputError::new(
                        format!("{at}.loop"),
                        "-1: a forked task runs its phases once per fork and exits; its phases need finite loops",
                    ));
                }
                images[k] = Some(t);
            }
            None => roots.push(t),
        }
    }
    if let Some(k) = images.iter().position(Option::is_none) {
        let (name, at) = &forks[k];
        return Err(InputError::new(
            at.clone(),
            format!("\"{name}\": no such task (a fork names a task of this file)"),
        ));
    }
    let images: Vec<Thread> = images.into_iter().flatten().collect();
    if roots.is_empty() {
        return Err(InputError::new(
            "tasks",
            "every task is forked by another: a program needs a task started at time 0",
        ));
    }
    let mut out = roots;
    // Breadth-first: each thread's forks get copies appended after it.
    let mut i = 0;
    while i < out.len() {
        let parent = ThreadId(i as u32);
        let chain: Vec<String> = chain(&out, i);
        let mut copies: Vec<(u32, usize)> = Vec::new();
        for pi in 0..out[i].phases.len() {
            for ei in 0..out[i].phases[pi].events.len() {
                let Event::Fork { child, vfork } = out[i].phases[pi].events[ei] else {
                    continue;
                };
                let k = child.0;
                let at = &forks[k as usize].1;
                let idx = match copies.iter().find(|(c, _)| *c == k) {
                    Some(&(_, idx)) => idx,
                    None => {
                        let img = &images[k as usize];
                        if chain.contains(&img.task) {
                            return Err(InputError::new(
                                at.clone(),
                                format!(
                                    "\"{}\": forks form a cycle ({} -> {})",
                                    img.task,
                                    chain.join(" -> "),
                                    img.task
                                ),
                            ));
                        }
                        if chain.len() >= MAX_FORK_DEPTH {
                            return Err(InputError::new(
                                at.clone(),
                                format!(
                                    "\"{}\": a chain of {} forks: allowed at most {MAX_FORK_DEPTH}",
                                    img.task,
                                    chain.len() + 1
                                ),
                            ));
                        }
                        if out.len() as u64 + 1 > crate::limits::MAX_TASKS {
                            return Err(InputError::new(
                                at.clone(),
                                format!(
                                    "the forked copies make more than {} threads in the program: allowed at most {} threads in all",
                                    crate::limits::MAX_TASKS,
                                    crate::limits::MAX_TASKS
                                ),
                            ));
                        }
                        let mut c = img.clone();
                        c.name = format!("{}/{}", out[i].name, img.task);
                        c.parent = Some(parent);
                        c.loops = Some(1);
                        out.push(c);
                        copies.push((k, out.len() - 1));
                        out.len() - 1
                    }
                };
                out[i].phases[pi].events[ei] = Event::Fork {
                    child: ThreadId(idx as u32),
                    vfork,
                };
            }
        }
        i += 1;
    }
    Ok(out)
}

/// The tasks from the root down to thread `i` (its chain of parents).
fn chain(out: &[Thread], i: usize) -> Vec<String> {
    let mut v = vec![out[i].task.clone()];
    let mut up = out[i].parent;
    while let Some(p) = up {
        v.push(out[p.idx()].task.clone());
        up = out[p.idx()].parent;
    }
    v.reverse();
    v
}
