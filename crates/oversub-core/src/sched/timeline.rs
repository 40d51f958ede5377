//! The cfs_rq timeline (`tasks_timeline`, 6.12): queued entities other than
//! curr, kept in rb-tree order (deadline, then insertion order), so that
//! `__pick_first_entity()` is the first element and `pick_eevdf()` stops at the
//! first eligible entity instead of scanning the whole queue.
//!
//! Simplification: a sorted vector, not the kernel's rb-tree augmented with
//! per-subtree `min_vruntime`/`min_slice`. Insertion and removal move the
//! tail (O(n) memmove, cheap at the queue lengths simulated); the pick costs
//! one eligibility test per ineligible entity ahead of the result, where the
//! kernel descends the tree in O(log n). The choice is identical: the earliest
//! deadline among eligible entities, ties by insertion order.
//! `cfs_rq_min_slice()` still scans (the kernel reads the root's `min_slice`).
//!
//! Invariant: an entity's deadline does not change while it is in the
//! timeline (every update of a queued entity's deadline is bracketed by
//! `__dequeue_entity()`/`__enqueue_entity()`, as in the kernel); checked by
//! `invariants::check`.

use crate::sched::ids::{CfsRqId, SeId};
use crate::sched::Scheduler;

impl Scheduler {
    /// Insert `se` (whose `enqueue_seq` is the newest) at its rb-tree position.
    pub(super) fn timeline_insert(&mut self, cfs: CfsRqId, se: SeId) {
        let pos = self.cfs_rqs[cfs.idx()]
            .queued
            .partition_point(|&x| self.tree_before(x, se));
        self.cfs_rqs[cfs.idx()].queued.insert(pos, se);
    }

    /// Remove `se`, found by identity (its deadline may already have been
    /// made relative by `dequeue_entity()`).
    pub(super) fn timeline_remove(&mut self, cfs: CfsRqId, se: SeId) {
        let q = &mut self.cfs_rqs[cfs.idx()];
        let pos = q
            .queued
            .iter()
            .position(|&s| s == se)
            .expect("__dequeue_entity: entity not in the timeline");
        q.queued.remove(pos);
    }

    /// `__pick_first_entity()`: leftmost of the timeline.
    pub(super) fn timeline_first(&self, cfs: CfsRqId) -> Option<SeId> {
        self.cfs_rqs[cfs.idx()].queued.first().copied()
    }
}
