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
//! `cfs_rq_min_slice()` reads the smallest slice of the timeline from a
//! `SliceSet` (the distinct slices with their counts) kept beside it, as the
//! kernel reads the root's `min_slice`: O(distinct slices), usually one or two.
//!
//! Invariant: an entity's deadline does not change while it is in the
//! timeline (every update of a queued entity's deadline is bracketed by
//! `__dequeue_entity()`/`__enqueue_entity()`, as in the kernel); checked by
//! `invariants::check`. A queued entity's slice changes only through
//! `set_queued_slice()`, which keeps the `SliceSet` in step.

use crate::sched::ids::{CfsRqId, SeId};
use crate::sched::Scheduler;

/// `Vec::insert()`, as a push when `i` is the end (the usual place of a
/// small queue's newest entry): no zero-length memmove call.
#[inline]
pub(super) fn vec_insert<T>(v: &mut Vec<T>, i: usize, x: T) {
    if i == v.len() {
        v.push(x);
    } else {
        v.insert(i, x);
    }
}

/// `Vec::remove()` (order kept), as a pop when `i` is the last element.
#[inline]
pub(super) fn vec_remove<T>(v: &mut Vec<T>, i: usize) {
    if i + 1 == v.len() {
        v.pop();
    } else {
        v.remove(i);
    }
}

/// A multiset of slices (ns): the distinct values in increasing order, each
/// with the number of timeline entities that have it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SliceSet(Vec<(u64, u32)>);

impl SliceSet {
    #[inline]
    pub fn insert(&mut self, slice: u64) {
        match self.0.binary_search_by_key(&slice, |&(s, _)| s) {
            Ok(i) => self.0[i].1 += 1,
            Err(i) => vec_insert(&mut self.0, i, (slice, 1)),
        }
    }

    #[inline]
    pub fn remove(&mut self, slice: u64) {
        let i = self
            .0
            .binary_search_by_key(&slice, |&(s, _)| s)
            .expect("SliceSet::remove: slice not in the set");
        self.0[i].1 -= 1;
        if self.0[i].1 == 0 {
            vec_remove(&mut self.0, i);
        }
    }

    /// The smallest slice, None when empty.
    #[inline]
    pub fn min(&self) -> Option<u64> {
        self.0.first().map(|&(s, _)| s)
    }

    /// The set of `slices` (for the invariant check).
    pub fn of(slices: impl Iterator<Item = u64>) -> SliceSet {
        let mut set = SliceSet::default();
        slices.for_each(|s| set.insert(s));
        set
    }
}

impl Scheduler {
    /// Insert `se` (whose `enqueue_seq` is the newest) at its rb-tree position.
    pub(super) fn timeline_insert(&mut self, cfs: CfsRqId, se: SeId) {
        let pos = self.cfs_rqs[cfs.idx()]
            .queued
            .partition_point(|&x| self.tree_before(x, se));
        let slice = self.ses[se.idx()].slice;
        let q = &mut self.cfs_rqs[cfs.idx()];
        vec_insert(&mut q.queued, pos, se);
        q.slices.insert(slice);
    }

    /// Sets the slice of `se`, which may be queued (in the timeline of its
    /// cfs_rq, or its curr): keeps the `SliceSet` in step, as the kernel's
    /// `min_vruntime_cb_propagate()` after `se->slice = slice` does.
    pub(super) fn set_queued_slice(&mut self, se: SeId, slice: u64) {
        let old = self.ses[se.idx()].slice;
        if old == slice {
            return;
        }
        self.ses[se.idx()].slice = slice;
        let e = &self.ses[se.idx()];
        if !e.on_rq {
            return;
        }
        let cfs = self.cfs_rq_of(se);
        let q = &mut self.cfs_rqs[cfs.idx()];
        if q.curr != Some(se) {
            q.slices.remove(old);
            q.slices.insert(slice);
        }
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
        vec_remove(&mut q.queued, pos);
        q.slices.remove(self.ses[se.idx()].slice);
    }

    /// `__pick_first_entity()`: leftmost of the timeline.
    pub(super) fn timeline_first(&self, cfs: CfsRqId) -> Option<SeId> {
        self.cfs_rqs[cfs.idx()].queued.first().copied()
    }
}
