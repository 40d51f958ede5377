//! Charging the running entity: `update_curr()`, `update_deadline()` and the
//! PREEMPT_SHORT tests (`did_preempt_short()`, `do_preempt_short()`) of
//! kernel/sched/fair.c, Linux 6.12.117.

use super::*;

impl Scheduler {
    /// `update_deadline()`: once vruntime reaches the deadline, request a new
    /// slice (vd = v + slice/w) and ask for a reschedule.
    pub(super) fn update_deadline(&mut self, cfs: CfsRqId, se: SeId) -> bool {
        let base = self.cfg.base_slice();
        let e = &mut self.ses[se.idx()];
        if vdiff(e.vruntime(), e.deadline) < 0 {
            return false;
        }
        if !e.custom_slice {
            e.slice = base;
        }
        e.deadline = e.vruntime().wrapping_add(calc_delta_fair(e.slice, &e.load));
        self.avg_vruntime(cfs);
        true
    }

    /// `update_curr()` (6.12.117) on one EEVDF queue (the hierarchical
    /// presets' every level, the flat preset's single runqueue): charge the
    /// running entity, roll its deadline and reschedule on slice expiry or a
    /// cancelled PREEMPT_SHORT protection. The fair class's entry point is
    /// [`Scheduler::update_curr`] (`sched::class`).
    ///
    /// The early returns (no curr, nothing ran since `exec_start`) are
    /// inlined into the callers: most calls of a pick walk or a yield find
    /// the clock unchanged since the last charge.
    #[inline]
    pub(in crate::sched) fn update_curr_eevdf(&mut self, cfs: CfsRqId) {
        let Some(curr) = self.cfs_rqs[cfs.idx()].curr else {
            return;
        };
        let delta_exec = self.now as i64 - self.ses[curr.idx()].exec_start as i64;
        if delta_exec <= 0 {
            return;
        }
        self.update_curr_charge(cfs, curr, delta_exec);
    }

    /// The body of `update_curr()` once `delta_exec > 0`.
    #[inline(never)]
    pub(super) fn update_curr_charge(&mut self, cfs: CfsRqId, curr: SeId, delta_exec: i64) {
        let now = self.now;
        let e = &mut self.ses[curr.idx()];
        e.exec_start = now;
        e.sum_exec_runtime += delta_exec as u64;
        let v = e
            .vruntime()
            .wrapping_add(calc_delta_fair(delta_exec as u64, &e.load));
        e.set_vruntime(v, VruntimeStep::Accounting);
        let resched = self.update_deadline(cfs, curr);
        if self.cfs_rqs[cfs.idx()].nr_running == 1 {
            return;
        }
        // RESCHED_UNPROTECTED (v6.17, 0b9ca2dcabc3): reschedule once the
        // protected period is over, whatever PREEMPT_SHORT says.
        let unprotected = if self.feat.resched_unprotected {
            !self.protect_slice(curr)
        } else {
            self.did_preempt_short(cfs, curr)
        };
        if resched || unprotected {
            let cpu = self.cpu_of(cfs);
            self.resched_curr(cpu);
            self.clear_buddies(cfs, curr);
        }
    }

    /// `did_preempt_short()`.
    pub(super) fn did_preempt_short(&self, cfs: CfsRqId, curr: SeId) -> bool {
        if !self.feat.preempt_short {
            return false;
        }
        if self.protect_slice(curr) {
            return false;
        }
        !self.entity_eligible(cfs, curr)
    }

    /// `do_preempt_short()`.
    pub(super) fn do_preempt_short(&self, cfs: CfsRqId, pse: SeId, se: SeId) -> bool {
        if !self.feat.preempt_short {
            return false;
        }
        if self.ses[pse.idx()].slice >= self.ses[se.idx()].slice {
            return false;
        }
        if !self.entity_eligible(cfs, pse) {
            return false;
        }
        if self.entity_before(pse, se) {
            return true;
        }
        !self.entity_eligible(cfs, se)
    }
}
