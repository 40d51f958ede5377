//! Wakeup preemption and buddies: `check_preempt_wakeup_fair()`,
//! `find_matching_se()`, `set_next_buddy()`, `clear_buddies()` of
//! kernel/sched/fair.c, Linux 6.12.117.

use super::*;

impl Scheduler {
    /// `__clear_buddies_next()` / `clear_buddies()`.
    pub fn clear_buddies(&mut self, cfs: CfsRqId, se: SeId) {
        if self.cfs_rqs[cfs.idx()].next != Some(se) {
            return;
        }
        let mut s = Some(se);
        while let Some(e) = s {
            let q = self.cfs_rq_of(e);
            if self.cfs_rqs[q.idx()].next != Some(e) {
                break;
            }
            self.cfs_rqs[q.idx()].next = None;
            self.cfs_rqs[q.idx()].next_borrowed = false;
            s = self.parent_entity(e);
        }
    }

    /// `set_next_buddy()`: nominate `se` at every level of its hierarchy.
    pub fn set_next_buddy(&mut self, se: SeId) {
        let mut s = Some(se);
        while let Some(e) = s {
            if !self.ses[e.idx()].on_rq {
                return;
            }
            let q = self.cfs_rq_of(e);
            self.cfs_rqs[q.idx()].next = Some(e);
            self.cfs_rqs[q.idx()].next_borrowed = false;
            s = self.parent_entity(e);
        }
    }

    /// `find_matching_se()`: walk both entities up to siblings on a common cfs_rq.
    pub fn find_matching_se(&self, mut a: SeId, mut b: SeId) -> (SeId, SeId) {
        let (mut da, mut db) = (self.ses[a.idx()].depth, self.ses[b.idx()].depth);
        while da > db {
            a = self.parent_entity(a).expect("depth");
            da -= 1;
        }
        while db > da {
            b = self.parent_entity(b).expect("depth");
            db -= 1;
        }
        while self.cfs_rq_of(a) != self.cfs_rq_of(b) {
            a = self.parent_entity(a).expect("no common cfs_rq");
            b = self.parent_entity(b).expect("no common cfs_rq");
        }
        (a, b)
    }

    /// `check_preempt_wakeup_fair()` (6.12.117): WAKEUP_PREEMPTION with
    /// PREEMPT_SHORT cancelling curr's protection; preempt if the wakee would
    /// be picked at the level where the two hierarchies meet.
    /// With WAKEUP_PICK_PROTECT (v6.17, 9de74a9850b9 and 3a0baa8e6c57) a
    /// shorter-slice wakee is judged by `__pick_eevdf(cfs_rq, false)`, curr's
    /// protection is cancelled only if the wakee preempts, and a declined
    /// shorter-slice wakee shortens it (`update_protect_slice()`).
    pub(in crate::sched) fn check_preempt_wakeup_eevdf(
        &mut self,
        cpu: CpuId,
        p: TaskId,
        wake_flags: u32,
    ) {
        let Some(curr) = self.rqs[cpu.idx()].curr else {
            self.resched_curr(cpu);
            return;
        };
        let se = self.eevdf_se(curr);
        let pse = self.eevdf_se(p);
        if se == pse {
            return;
        }
        if self.feat.next_buddy && wake_flags & WF_FORK == 0 && !self.ses[pse.idx()].sched_delayed {
            self.set_next_buddy(pse);
        }
        if self.rqs[cpu.idx()].need_resched || !self.feat.wakeup_preemption {
            return;
        }
        let (se, pse) = self.find_matching_se(se, pse);
        let cfs = self.cfs_rq_of(se);
        self.update_curr(cfs);
        if self.feat.wakeup_pick_protect {
            let short =
                self.feat.preempt_short && self.ses[pse.idx()].slice < self.ses[se.idx()].slice;
            if self.__pick_eevdf(cfs, !short) == Some(pse) {
                if short {
                    self.cancel_protect_slice(se);
                }
                self.resched_curr(cpu);
            } else if self.feat.run_to_parity && short {
                self.update_protect_slice(cfs, se);
            }
            return;
        }
        if self.do_preempt_short(cfs, pse, se) {
            self.cancel_protect_slice(se);
        }
        if self.pick_eevdf(cfs) == Some(pse) {
            self.resched_curr(cpu);
        }
    }
}
