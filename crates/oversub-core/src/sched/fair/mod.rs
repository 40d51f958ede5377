//! The EEVDF fair class: the functions of kernel/sched/fair.c, Linux 6.12.117,
//! named after them and following their control flow. Every function follows
//! 6.12.117 unless its doc names another version; version differences are
//! switches in `SchedFeatures` (6.12.0 buddy gating, forfeit on yield, the
//! v6.17 run-to-parity rework with vprot, the v6.19 buddy placement;
//! docs/model.md, "Kernel versions").
//!
//! Not modelled (docs/model.md): CFS bandwidth (throttling), SCHED_IDLE
//! entities, util_est/uclamp, the dl_server, core scheduling, NUMA balancing.

use super::entity::VruntimeStep;
use super::ids::{CfsRqId, CpuId, SeId, TaskId};
use super::load_avg::{DO_ATTACH, DO_DETACH, UPDATE_TG};
use super::timeline::vec_remove;
use super::weight::{calc_delta_fair, scale_load_down};
use super::{Scheduler, TaskState};
use std::borrow::BorrowMut;

mod avg;
mod curr;
mod dequeue;
mod enqueue;
mod pick;
mod protect;
mod tick;
mod wakeup;
mod yield_fair;

/// `enqueue_entity()`/`enqueue_task_fair()` flags (ENQUEUE_*).
pub const ENQUEUE_WAKEUP: u32 = 0x01;
pub const ENQUEUE_MIGRATED: u32 = 0x40;
pub const ENQUEUE_INITIAL: u32 = 0x80;
pub const ENQUEUE_DELAYED: u32 = 0x200;
/// `dequeue_entity()` flags (DEQUEUE_*).
pub const DEQUEUE_SLEEP: u32 = 0x01;
pub const DEQUEUE_SPECIAL: u32 = 0x10;
pub const DEQUEUE_DELAYED: u32 = 0x200;
/// Wakeup flags (WF_*).
pub const WF_SYNC: u32 = 0x10;
pub const WF_FORK: u32 = 0x04;

/// Signed view of a wrapping u64 difference, as the kernel's `(s64)(a - b)`.
#[inline]
pub fn vdiff(a: u64, b: u64) -> i64 {
    a.wrapping_sub(b) as i64
}

impl Scheduler {
    #[inline]
    fn cpu_of(&self, cfs: CfsRqId) -> CpuId {
        self.cfs_rqs[cfs.idx()].cpu
    }

    /// Is the task runnable-queued (not delayed) and not running?
    pub fn task_is_waiting(&self, p: TaskId) -> bool {
        let t = &self.tasks[p.idx()];
        t.state == TaskState::Running && t.on_rq && !t.on_cpu
    }
}

/// The hierarchy walk of `pick_next_task_fair()`'s simple path (Linux 6.1
/// and 6.12 alike, kernel/sched/fair.c): from `next`'s and `prev`'s task
/// entities up to the first cfs_rq they share (the `is_same_group()`
/// climb), `put` on each level of prev's that differs and `set` on each of
/// next's, in the kernel's order, then both on the shared queue. One walk
/// for every preset; each gives its own `put_prev_entity()` /
/// `set_next_entity()` (`S` is the scheduler or a preset's view of it).
#[inline]
pub(super) fn switch_levels<S: BorrowMut<Scheduler>>(
    s: &mut S,
    next: TaskId,
    prev: TaskId,
    mut put: impl FnMut(&mut S, CfsRqId, SeId),
    mut set: impl FnMut(&mut S, CfsRqId, SeId),
) {
    let k: &Scheduler = (*s).borrow();
    let (mut se, mut pse) = (k.tasks[next.idx()].se, k.tasks[prev.idx()].se);
    loop {
        let k: &Scheduler = (*s).borrow();
        let (cs, cp) = (k.cfs_rq_of(se), k.cfs_rq_of(pse));
        if cs == cp {
            put(s, cs, pse);
            set(s, cs, se);
            return;
        }
        let (sd, pd) = (k.ses[se.idx()].depth, k.ses[pse.idx()].depth);
        if sd <= pd {
            put(s, cp, pse);
            pse = (*s).borrow().parent_entity(pse).expect("depth");
        }
        if sd >= pd {
            set(s, cs, se);
            se = (*s).borrow().parent_entity(se).expect("depth");
        }
    }
}
