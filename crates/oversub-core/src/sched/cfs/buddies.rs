//! Linux 6.1 (CFS): the NEXT, LAST and SKIP buddies (`set_next_buddy()`,
//! `set_last_buddy()`, `set_skip_buddy()`, `clear_buddies()`) and the
//! wakeup-granularity test every buddy and wakeup decision goes through
//! (`wakeup_gran()`, `wakeup_preempt_entity()`).

use super::Cfs;
use crate::sched::fair::vdiff;
use crate::sched::ids::{CfsRqId, SeId};
use crate::sched::weight::calc_delta_fair;

impl Cfs<'_> {
    /// Linux 6.1 (CFS): `wakeup_gran()`: `sysctl_sched_wakeup_granularity`
    /// in the virtual time of `se` (the entity that would run instead).
    pub fn wakeup_gran(&self, se: SeId) -> u64 {
        let gran = self.cfg.cfs_tunables().sched_wakeup_granularity;
        calc_delta_fair(gran, &self.ses[se.idx()].load)
    }

    /// Linux 6.1 (CFS): `wakeup_preempt_entity(curr, se)`: -1 if `curr` is
    /// not ahead of `se`, 1 if it is more than `wakeup_gran(se)` ahead (`se`
    /// should preempt it), 0 in between.
    pub fn wakeup_preempt_entity(&self, curr: SeId, se: SeId) -> i32 {
        let d = vdiff(
            self.ses[curr.idx()].vruntime(),
            self.ses[se.idx()].vruntime(),
        );
        if d <= 0 {
            return -1;
        }
        if d > self.wakeup_gran(se) as i64 {
            return 1;
        }
        0
    }

    /// Linux 6.1 (CFS): `set_next_buddy()`: nominate `se` as `cfs_rq->next`
    /// at every level of its hierarchy (stops at an entity not queued).
    pub fn set_next_buddy(&mut self, se: SeId) {
        let mut s = Some(se);
        while let Some(e) = s {
            if !self.ses[e.idx()].on_rq {
                return;
            }
            let q = self.cfs_rq_of(e);
            self.cfs_rqs[q.idx()].next = Some(e);
            s = self.parent_entity(e);
        }
    }

    /// Linux 6.1 (CFS): `set_last_buddy()`: nominate `se` as `cfs_rq->last`
    /// at every level.
    pub fn set_last_buddy(&mut self, se: SeId) {
        let mut s = Some(se);
        while let Some(e) = s {
            if !self.ses[e.idx()].on_rq {
                return;
            }
            let q = self.cfs_rq_of(e);
            self.cfs_rqs[q.idx()].last = Some(e);
            s = self.parent_entity(e);
        }
    }

    /// Linux 6.1 (CFS): `set_skip_buddy()`: mark `se` as `cfs_rq->skip` at
    /// every level.
    pub fn set_skip_buddy(&mut self, se: SeId) {
        let mut s = Some(se);
        while let Some(e) = s {
            let q = self.cfs_rq_of(e);
            self.cfs_rqs[q.idx()].skip = Some(e);
            s = self.parent_entity(e);
        }
    }

    /// Linux 6.1 (CFS): `clear_buddies()`: drop `se` from whichever buddy
    /// slot of its queue holds it, and upwards while the ancestors hold its
    /// ancestors (`__clear_buddies_last/next/skip()`).
    pub fn clear_buddies(&mut self, cfs: CfsRqId, se: SeId) {
        let q = &self.cfs_rqs[cfs.idx()];
        let (last, next, skip) = (q.last == Some(se), q.next == Some(se), q.skip == Some(se));
        if last {
            self.__clear_buddies(se, |q| &mut q.last);
        }
        if next {
            self.__clear_buddies(se, |q| &mut q.next);
        }
        if skip {
            self.__clear_buddies(se, |q| &mut q.skip);
        }
    }

    /// `__clear_buddies_{last,next,skip}()`: one slot, up the hierarchy.
    fn __clear_buddies(
        &mut self,
        se: SeId,
        slot: impl Fn(&mut crate::sched::CfsRq) -> &mut Option<SeId>,
    ) {
        let mut s = Some(se);
        while let Some(e) = s {
            let q = self.cfs_rq_of(e);
            let b = slot(&mut self.cfs_rqs[q.idx()]);
            if *b != Some(e) {
                break;
            }
            *b = None;
            s = self.parent_entity(e);
        }
    }
}
