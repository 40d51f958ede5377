//! `sched_yield()` and `yield_to()` of the fair class: `yield_task_fair()`
//! and `yield_to_task_fair()` of kernel/sched/fair.c, Linux 6.12.117, with
//! the `yield_interval` throttle of Kuba Piecuch's RFC (seed 003).

use super::*;

impl Scheduler {
    /// Kuba Piecuch's RFC (seed 003): with `yield_interval` set, a
    /// `sched_yield()` within that interval of the task's last one is
    /// throttled (counted, and the caller does not reschedule). Shared by the
    /// EEVDF and CFS `yield_task_fair()`, after their `clear_buddies()`.
    pub(in crate::sched) fn yield_interval_throttled(&mut self, curr: TaskId) -> bool {
        let interval = self.yield_cfg.yield_interval_ns;
        if interval == 0 {
            return false;
        }
        let now = self.now;
        let t = &mut self.tasks[curr.idx()];
        if now < t.last_yield.saturating_add(interval) {
            self.yield_stats.yields_throttled += 1;
            return true;
        }
        t.last_yield = now;
        false
    }

    /// `yield_task_fair()` (6.12.117): charge the yielder and, with FORFEIT_YIELD
    /// (79104becf42b), forfeit the rest of its request if it is eligible:
    /// v = deadline, then a new deadline. Without it (6.12.0) the yielder keeps
    /// its vruntime and its deadline moves one slice later
    /// (`se->deadline += calc_delta_fair(se->slice, se)`).
    ///
    /// Returns false when the caller should not `schedule()`: a single task
    /// on the rq, or a yield throttled by `yield_interval` (Kuba Piecuch's
    /// RFC, seed 003: the bool return and the throttle after
    /// `clear_buddies()`). With the `kpn-walk` policy the forfeit is K Prateek
    /// Nayak's hierarchical loop instead.
    pub(in crate::sched) fn yield_task_eevdf(&mut self, cpu: CpuId) -> bool {
        self.yield_rq[cpu.idx()].yield_left_vns = 0;
        let Some(curr) = self.rqs[cpu.idx()].curr else {
            return false;
        };
        if self.rqs[cpu.idx()].nr_running == 1 {
            return false;
        }
        let se = self.eevdf_se(curr);
        let cfs = self.cfs_rq_of(se);
        self.clear_buddies(cfs, se);
        if self.yield_interval_throttled(curr) {
            return false;
        }
        self.update_curr(cfs);
        let e = &self.ses[se.idx()];
        let left = e.deadline.wrapping_sub(e.vruntime()) as i64;
        self.yield_rq[cpu.idx()].yield_left_vns = left.max(0) as u64;
        if self.yield_policy_forfeit(se) {
            // The policy did the forfeit its own way.
        } else if !self.feat.forfeit_yield {
            let e = &mut self.ses[se.idx()];
            e.deadline = e.deadline.wrapping_add(calc_delta_fair(e.slice, &e.load));
        } else if self.entity_eligible(cfs, se) {
            let d = self.ses[se.idx()].deadline;
            self.ses[se.idx()].set_vruntime(d, VruntimeStep::Forfeit);
            self.update_deadline(cfs, se);
        }
        self.yield_rq[cpu.idx()].yielding = Some(curr);
        true
    }

    /// `yield_to_task_fair()` (6.12.117): nominate the target as buddy along its
    /// hierarchy, run the `[host.yield] yield_to` policy (where the seed hooks
    /// its debooster), then yield; `deboost` (the series' YIELD_TO_PENALTY)
    /// and `borrow` (YIELD_TO_BORROW) run after the yield, as in the series.
    pub(in crate::sched) fn yield_to_task_eevdf(&mut self, cpu: CpuId, p: TaskId) -> bool {
        let se = self.eevdf_se(p);
        if !self.ses[se.idx()].on_rq {
            return false;
        }
        self.set_next_buddy(se);
        self.yield_to_policy(cpu, p);
        self.yield_task_fair(cpu);
        self.yield_to_policy_after_yield(cpu, p);
        true
    }
}
