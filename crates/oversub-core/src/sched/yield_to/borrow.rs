//! `borrow`: the fairness-preserving yield_to() of docs/design.md section 1.
//! The target may be picked ahead of eligibility at every level from its own
//! cfs_rq up to the common ancestor's (LCA's), all or none, if the borrowed
//! run keeps it within `entity_lag()`'s bound at each, for the yielder's
//! unused slice, and is then charged normally (nothing is given away: the
//! service is shifted in time). Follows the series' `yield_to_borrow()`
//! (kernel/patches/0003, round 3, on 6.12.117).
//!
//! The per-level grant is `CfsRq::next_borrowed` (cleared with the buddy);
//! `pick_next_entity()` honours a borrowed buddy although it is ineligible.
//! The bound (the target is rescheduled once it has run the budget since it
//! was picked) is armed when the target is switched in and fires as a
//! high-resolution timer at `now + budget` (`borrow_bound()`).

use super::borrow_helpers::{yield_borrow_allowed, yield_borrow_budget};
use crate::sched::core::Switch;
use crate::sched::ids::{CpuId, TaskId};
use crate::sched::weight::{calc_delta_fair, NICE_0_LOAD, SCHED_FIXEDPOINT_SHIFT};
use crate::sched::Scheduler;
use smallvec::SmallVec;

impl Scheduler {
    /// The borrow step of `yield_to_task_fair()` (after `set_next_buddy()`).
    pub(super) fn yield_to_borrow(&mut self, cpu: CpuId, p: TaskId) {
        self.yield_rq[cpu.idx()].borrow_pending = None;
        let Some(y) = self.rqs[cpu.idx()].curr else {
            return;
        };
        if y == p || self.tasks[p.idx()].cpu != cpu {
            return;
        }
        let se_y = self.eevdf_se(y);
        let e = &self.ses[se_y.idx()];
        // What the yielder used of its current slice: its deadline is one
        // slice past the point where the slice started, so the part left is
        // `deadline - vruntime` (recorded by yield_task_fair() before the
        // forfeit), scaled back to real time. `sum_exec_runtime -
        // prev_sum_exec_runtime` would count every slice since the yielder
        // was last switched in, so a yielder that keeps being re-picked
        // would lend nothing (found on the kernel side, docs/design.md).
        let left_vns = self.yield_rq[cpu.idx()].yield_left_vns;
        let left = ((left_vns as u128 * (e.load.weight >> SCHED_FIXEDPOINT_SHIFT) as u128)
            / (NICE_0_LOAD >> SCHED_FIXEDPOINT_SHIFT) as u128)
            .min(u64::MAX as u128) as u64;
        let ran = e.slice - e.slice.min(left);
        let budget = yield_borrow_budget(e.slice, ran);
        if budget == 0 {
            return;
        }
        let se_t = self.eevdf_se(p);
        let (_, st_lca) = self.find_matching_se(se_y, se_t);
        let tick = self.cfg.tick_nsec();
        // All levels or none (the series' yield_to_borrow(), round 3, on
        // 6.12.117): a level granted above one that refuses would let a
        // sibling of the target run ahead of eligibility, unstopped. The
        // stop here is a high-resolution timer, so no tick is reserved.
        let mut chain: SmallVec<[_; 4]> = SmallVec::new();
        let mut s = Some(se_t);
        while let Some(se) = s {
            let cfs = self.cfs_rq_of(se);
            if self.cfs_rqs[cfs.idx()].next != Some(se) {
                return;
            }
            let e = &self.ses[se.idx()];
            let charge = calc_delta_fair(budget, &e.load);
            let limit = calc_delta_fair((2 * e.slice).max(tick), &e.load);
            if !yield_borrow_allowed(e.vruntime(), self.avg_vruntime(cfs), charge, limit) {
                return;
            }
            chain.push(cfs);
            if se == st_lca {
                break;
            }
            s = self.parent_entity(se);
        }
        for cfs in &chain {
            self.cfs_rqs[cfs.idx()].next_borrowed = true;
        }
        let granted = !chain.is_empty();
        if granted {
            self.yield_rq[cpu.idx()].borrow_pending = Some((p, budget));
            self.yield_stats.borrows += 1;
        }
    }

    /// After the `schedule()` of a yield_to(): a granted borrow whose target
    /// was switched in arms its bound; otherwise the grant lapses.
    pub(super) fn borrow_after_schedule(&mut self, cpu: CpuId, sw: Option<Switch>) {
        let Some((t, budget)) = self.yield_rq[cpu.idx()].borrow_pending.take() else {
            return;
        };
        if sw.and_then(|s| s.next) == Some(t) {
            self.yield_rq[cpu.idx()].borrow_running = Some((t, budget));
            self.hrtick_requests.push((cpu, self.now + budget));
        } else {
            // Not picked now: drop the grants left on the target's chain.
            let mut s = Some(self.eevdf_se(t));
            while let Some(se) = s {
                let cfs = self.cfs_rq_of(se);
                self.cfs_rqs[cfs.idx()].next_borrowed = false;
                s = self.parent_entity(se);
            }
        }
    }

    /// The borrow bound's timer: reschedule the target if it is still running
    /// and has used its budget since it was picked. Returns whether a borrow
    /// bound was armed on this CPU (the timer was ours).
    pub(super) fn borrow_bound(&mut self, cpu: CpuId) -> bool {
        let Some((t, budget)) = self.yield_rq[cpu.idx()].borrow_running.take() else {
            return false;
        };
        if self.rqs[cpu.idx()].curr == Some(t) {
            let e = &self.ses[self.eevdf_se(t).idx()];
            let ran = (e.sum_exec_runtime - e.prev_sum_exec_runtime)
                + self.now.saturating_sub(e.exec_start);
            if ran >= budget {
                self.yield_stats.borrow_bounds_hit += 1;
                self.resched_curr(cpu);
            }
        }
        true
    }
}
