//! Slice protection (RUN_TO_PARITY, VPROT): `set_protect_slice()`,
//! `update_protect_slice()`, `protect_slice()`, `cancel_protect_slice()` of
//! kernel/sched/fair.c, Linux 6.12.117 and the v6.17 rework behind switches.

use super::*;

impl Scheduler {
    /// `set_protect_slice()`: 6.12 stashes the deadline in vlag (RUN_TO_PARITY
    /// lasts until the deadline); with VPROT (v6.17+) protection ends at
    /// min(deadline, v + min slice of the queue).
    pub(in crate::sched) fn set_protect_slice(&mut self, cfs: CfsRqId, se: SeId) {
        if self.feat.vprot {
            let base = if self.feat.run_to_parity {
                self.cfs_rq_min_slice(cfs)
            } else {
                700_000
            };
            let e = &self.ses[se.idx()];
            let slice = base.min(e.slice);
            let vprot = if slice != e.slice {
                let end = e.vruntime().wrapping_add(calc_delta_fair(slice, &e.load));
                if vdiff(end, e.deadline) < 0 {
                    end
                } else {
                    e.deadline
                }
            } else {
                e.deadline
            };
            self.ses[se.idx()].vprot = vprot;
        } else {
            let e = &mut self.ses[se.idx()];
            e.vlag = e.deadline as i64;
        }
    }

    /// `update_protect_slice()` (v6.17, 3a0baa8e6c57; VPROT): a wakee with a
    /// shorter slice that did not preempt shortens curr's protection to the
    /// queue's minimum slice from now on.
    pub(super) fn update_protect_slice(&mut self, cfs: CfsRqId, se: SeId) {
        let slice = self.cfs_rq_min_slice(cfs);
        let e = &mut self.ses[se.idx()];
        let end = e.vruntime().wrapping_add(calc_delta_fair(slice, &e.load));
        if vdiff(end, e.vprot) < 0 {
            e.vprot = end;
        }
    }

    /// `protect_slice()`.
    pub fn protect_slice(&self, se: SeId) -> bool {
        let e = &self.ses[se.idx()];
        if self.feat.vprot {
            vdiff(e.vprot, e.vruntime()) > 0
        } else {
            e.vlag == e.deadline as i64
        }
    }

    /// `cancel_protect_slice()`.
    pub(in crate::sched) fn cancel_protect_slice(&mut self, se: SeId) {
        if self.protect_slice(se) {
            let e = &mut self.ses[se.idx()];
            if self.feat.vprot {
                e.vprot = e.vruntime();
            } else {
                e.vlag = e.deadline as i64 + 1;
            }
        }
    }
}
