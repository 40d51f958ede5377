//! A program guest's wakeup path through its spinlocks
//! (`guest::wakeup`, `[guest] wakeup_locks`): a program step that waited on
//! or woke a futex takes each futex's hash-bucket lock (`futex_wait_setup`
//! / `futex_wake`), then, for each thread it wakes, the wakee's `pi_lock`
//! (`try_to_wake_up`), one lock section after the other on the stepping
//! vCPU, before the step's action (run, sleep, ...) takes effect. A wakee
//! is woken when its `pi_lock` section ends, so a waker whose lock is held
//! by a preempted vCPU delays the wakeup as long as it spins. The path runs
//! with preemption off (the guest CPU does not reschedule in between).

use super::super::Simulator;
use super::guest::gcpu;
use crate::engine::Nanos;
use crate::guest::wakeup::{FUTEX_HB_HOLD, TTWU_PI_LOCK_HOLD};
use crate::kvm::{VcpuIdx, VmId};
use crate::sched::TaskId;
use crate::task::program::Action;
use std::collections::VecDeque;

/// A wakeup path's lock sections left: lock, hold, the thread woken when
/// it ends.
pub(crate) type Sections = VecDeque<(usize, Nanos, Option<usize>)>;

/// A step's wakeup path in progress on one vCPU.
#[derive(Clone, Debug)]
pub(crate) struct WakePath {
    /// The stepping thread.
    task: usize,
    /// The step's action, taken once the path has run.
    action: Action,
    /// The thread was woken while its path ran before its futex wait
    /// blocked it (`Action::Sleep(None)`): as `futex_wait` finds itself
    /// dequeued and `schedule()` returns at once, it steps again instead.
    woken: bool,
    /// Lock sections left: lock, hold, the thread woken when it ends.
    sections: Sections,
    /// The thread woken when the current section ends.
    woken_after: Option<usize>,
}

/// What stepping a guest task gives.
pub(super) enum GuestStep {
    /// Take this guest spinlock for this long (a wakeup-path section).
    Lock(usize, Nanos),
    /// The program's action.
    Act(Action),
}

impl Simulator {
    /// Steps task `t`, current on guest CPU `i` of VM `vi`: the program
    /// step and its wakeups, or the next part of its wakeup path.
    pub(super) fn guest_step(&mut self, vi: VmId, i: VcpuIdx, t: TaskId) -> GuestStep {
        let now = self.now;
        let cpu = gcpu(i);
        let g = self.vms[vi].guest.as_mut().expect("a program VM");
        g.kernel.set_now(now);
        if let Some(p) = g.wake_path[i.idx()].as_mut() {
            let woken = p.woken_after.take();
            let next = p.sections.pop_front();
            if let Some((_, _, w)) = next {
                p.woken_after = w;
            }
            if let Some(w) = woken {
                for q in g.wake_path.iter_mut().flatten() {
                    if q.task == w && q.action == Action::Sleep(None) {
                        q.woken = true;
                    }
                }
                g.kernel
                    .sched
                    .try_to_wake_up(TaskId(w as u32), 0, Some(cpu));
            }
            if let Some((l, hold, _)) = next {
                return GuestStep::Lock(l, hold);
            }
            let mut p = g.wake_path[i.idx()].take().expect("a path");
            g.wake_sections_buf = std::mem::take(&mut p.sections);
            if p.woken {
                return self.guest_step(vi, i, t);
            }
            return GuestStep::Act(p.action);
        }
        g.wake_buf.clear();
        let action = g.prog.step_into(t.idx(), now, &mut g.wake_buf);
        // kernel_clone(): each child is created on this CPU and placed by
        // wake_up_new_task()'s fork balance.
        g.prog.take_forks(&mut g.fork_buf);
        for k in 0..g.fork_buf.len() {
            let c = g.fork_buf[k];
            g.exited[c] = false;
            // A new mm (copy_mm): a CPU still holding the copy's previous,
            // exited process's mm lazily is not in the new one's cpumask.
            let id = g.prog.program().mm_of(c);
            let mm = Some(id);
            for l in g.loaded_mm.iter_mut().filter(|l| **l == mm) {
                *l = None;
            }
            g.mm_cpumasks.new_mm(id, now);
            g.kernel.sched.sched_fork(TaskId(c as u32), cpu);
            g.kernel.sched.wake_up_new_task(TaskId(c as u32));
        }
        g.fork_buf.clear();
        let Some(wl) = g.wakeup else {
            for k in 0..g.wake_buf.len() {
                let w = g.wake_buf[k];
                g.kernel
                    .sched
                    .try_to_wake_up(TaskId(w as u32), 0, Some(cpu));
            }
            return GuestStep::Act(action);
        };
        g.futex_buf.clear();
        g.prog.take_futex_ops(&mut g.futex_buf);
        if g.futex_buf.is_empty() && g.wake_buf.is_empty() {
            return GuestStep::Act(action);
        }
        let mut sections = std::mem::take(&mut g.wake_sections_buf);
        sections.clear();
        sections.extend(
            g.futex_buf
                .iter()
                .map(|&f| (wl.futex_hash(f), FUTEX_HB_HOLD, None))
                .chain(
                    g.wake_buf
                        .iter()
                        .map(|&w| (wl.pi_lock(w), TTWU_PI_LOCK_HOLD, Some(w))),
                ),
        );
        let (l, hold, w) = sections.pop_front().expect("a section");
        g.wake_path[i.idx()] = Some(WakePath {
            task: t.idx(),
            action,
            woken: false,
            sections,
            woken_after: w,
        });
        GuestStep::Lock(l, hold)
    }
}
