//! The class-independent scheduler core: `__schedule()`, `try_to_wake_up()`,
//! `wake_up_new_task()`, `do_sched_yield()`, `yield_to()` and
//! `sched_tick()`, after kernel/sched/core.c and syscalls.c of Linux 6.12.117.
//!
//! Only the fair class exists in the model (plus the idle task: `rq.curr ==
//! None`). Preemption takes effect at once: a reschedule request is served by
//! the simulator right after the event that raised it (a user-space task or
//! a vCPU in guest mode is preempted on the next interrupt return, which the
//! model takes as immediate), or, on a CPU still paying for its last switch,
//! when that switch is done (the simulator's `Ev::SwitchDone`).

use super::fair::{
    DEQUEUE_DELAYED, DEQUEUE_SLEEP, ENQUEUE_INITIAL, ENQUEUE_MIGRATED, ENQUEUE_WAKEUP, WF_FORK,
};
use super::ids::{CpuId, TaskId};
use super::{Scheduler, TaskState};

/// What `yield_to()` returns. The kernel's int (> 0, 0, `-ESRCH`) exists
/// only where KVM reads it (`kvm::on_spin::yield_to_ret`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum YieldTo {
    /// The target became the buddy and the caller yielded (> 0), with the
    /// switch `schedule()` then made (None: the caller kept the CPU).
    Yielded(Option<Switch>),
    /// The target runs, sleeps or is not queued, or the class refused (0).
    Refused,
    /// Both runqueues hold a single task (`-ESRCH`).
    Esrch,
}

impl YieldTo {
    /// The context switch the yield made, if any.
    pub fn switch(self) -> Option<Switch> {
        match self {
            YieldTo::Yielded(sw) => sw,
            YieldTo::Refused | YieldTo::Esrch => None,
        }
    }
}

/// A context switch done by `schedule()`: `prev` left the CPU, `next` got it
/// (None is the idle task).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Switch {
    pub(crate) cpu: CpuId,
    pub(crate) prev: Option<TaskId>,
    pub(crate) next: Option<TaskId>,
    /// True when prev left still runnable (preempted or yielded).
    pub(crate) prev_runnable: bool,
}

impl Switch {
    /// The task that got the CPU (None: the idle task).
    pub fn next(&self) -> Option<TaskId> {
        self.next
    }
}

impl Scheduler {
    /// `__schedule()`: block prev if it went to sleep, pick next (newidle
    /// balance when nothing is runnable) and account the switch.
    pub fn schedule(&mut self, cpu: CpuId) -> Option<Switch> {
        let prev = self.rqs[cpu.idx()].curr;
        if let Some(p) = prev {
            let t = &self.tasks[p.idx()];
            if t.state == TaskState::Sleeping && t.on_rq && !self.ses[t.se.idx()].sched_delayed {
                // try_to_block_task(): a delayed dequeue keeps p->on_rq.
                if self.dequeue_task_fair(p, DEQUEUE_SLEEP) {
                    self.tasks[p.idx()].on_rq = false;
                }
            }
        }
        let mut prev_put = false;
        if let Some(target) = self.rqs[cpu.idx()].active_balance.take() {
            // The stopper runs active_load_balance_cpu_stop(): prev is
            // switched out first, so it may be the task that moves.
            if let Some(p) = prev {
                self.put_prev_task_fair(p);
                self.tasks[p.idx()].on_cpu = false;
                prev_put = true;
            }
            self.active_load_balance_cpu_stop(cpu, target);
        }
        let pick_prev = if prev_put { None } else { prev };
        let mut next = self.pick_next_task_fair(cpu, pick_prev);
        self.set_last_buddy(cpu, prev, next);
        if next.is_none() && self.sched_balance_newidle(cpu) > 0 {
            next = self.pick_next_task_fair(cpu, pick_prev);
        }
        if next.is_none() && !prev_put {
            if let Some(p) = prev {
                self.put_prev_task_fair(p);
            }
        }
        // clear_tsk_need_resched(prev) after the pick, as 6.12's
        // __schedule(): a reschedule raised by the pick itself (prev's
        // update_curr() ending its slice, the newidle balance) is dropped.
        self.rqs[cpu.idx()].need_resched = false;
        self.rqs[cpu.idx()].wakelist_ipi = false;
        if next == prev {
            if let Some(p) = prev {
                self.tasks[p.idx()].on_cpu = true;
            }
            return None;
        }
        Some(self.context_switch(cpu, prev, next))
    }

    /// LAST_BUDDY (K Prateek Nayak's suggestion, seed 000): when `schedule()`
    /// switches away from a prev that is still runnable, nominate it as the
    /// next buddy, so the pick after the next task's turn prefers it again
    /// (honoured only while eligible, like any buddy). A prev that yielded is
    /// not nominated.
    fn set_last_buddy(&mut self, cpu: CpuId, prev: Option<TaskId>, next: Option<TaskId>) {
        // A task that yielded gave the CPU away on purpose: not a last buddy.
        let yielded = self.yield_rq[cpu.idx()].yielding.take();
        // On 6.1 (CFS) LAST_BUDDY is that kernel's, set in
        // `check_preempt_wakeup()` (`cfs::preempt`).
        if !self.feat.last_buddy || !self.class.last_buddy_at_schedule() {
            return;
        }
        if let Some(p) = prev.filter(|&p| yielded != Some(p)) {
            let t = &self.tasks[p.idx()];
            if next != Some(p) && next.is_some() && t.state == TaskState::Running && t.on_rq {
                let se = self.eevdf_se(p);
                self.set_next_buddy(se);
            }
        }
    }

    /// Bookkeeping of a switch: CPU busy time, wait time, switch counters and
    /// the wakeup-latency sample of the incoming task.
    fn context_switch(&mut self, cpu: CpuId, prev: Option<TaskId>, next: Option<TaskId>) -> Switch {
        let now = self.now;
        let rq = &mut self.rqs[cpu.idx()];
        if prev.is_some() {
            rq.busy_ns += now - rq.switched_at;
        }
        rq.switched_at = now;
        rq.curr = next;
        rq.nr_switches += 1;
        if next.is_some() {
            self.nohz_track_busy(cpu);
        } else {
            self.nohz_track_idle(cpu);
        }
        let mut prev_runnable = false;
        if let Some(p) = prev {
            let t = &mut self.tasks[p.idx()];
            t.on_cpu = false;
            t.stats.nr_switches += 1;
            if t.state == TaskState::Running {
                prev_runnable = true;
                t.stats.nr_involuntary_switches += 1;
                t.wait_since = Some(now);
            } else {
                t.stats.nr_voluntary_switches += 1;
            }
        }
        if let Some(n) = next {
            let t = &mut self.tasks[n.idx()];
            t.on_cpu = true;
            if let Some(ws) = t.wait_since.take() {
                t.stats.wait_ns += now - ws;
            }
            // The wakee runs once the switch is done: the sample ends after
            // the switch's cost (HostCosts::context_switch).
            if let Some(wt) = t.wake_time.take() {
                let done = now + self.cfg.costs.context_switch;
                t.stats.wakeup_latency.push(done.saturating_sub(wt));
            }
        }
        Switch {
            cpu,
            prev,
            next,
            prev_runnable,
        }
    }

    /// `wakeup_preempt()`: the idle task is always preempted; otherwise the
    /// fair class decides.
    pub fn wakeup_preempt(&mut self, cpu: CpuId, p: TaskId, wake_flags: u32) {
        match self.rqs[cpu.idx()].curr {
            None => self.resched_curr(cpu),
            Some(c) if c == p => {}
            Some(_) => self.check_preempt_wakeup_fair(cpu, p, wake_flags),
        }
    }

    /// `wake_up_new_task()`: first activation of a task, placed by the fork
    /// balance with ENQUEUE_INITIAL (half a slice of deadline under
    /// PLACE_DEADLINE_INITIAL).
    pub fn wake_up_new_task(&mut self, p: TaskId) {
        self.tasks[p.idx()].recent_used_cpu = self.tasks[p.idx()].cpu;
        let cpu = self.select_task_rq_fork(p);
        // __set_task_cpu(): placement of a new task is not a migration.
        self.__set_task_cpu(p, cpu);
        self.post_init_entity_util_avg(p);
        let now = self.now;
        let t = &mut self.tasks[p.idx()];
        t.state = TaskState::Running;
        t.on_rq = true;
        t.wait_since = Some(now);
        // sched_fork() runs task_fork_fair() before the enqueue.
        self.task_fork_fair(p);
        self.enqueue_task_fair(p, ENQUEUE_INITIAL);
        self.wakeup_preempt(cpu, p, WF_FORK);
    }

    /// `try_to_wake_up()`: a delayed task is re-queued where it is
    /// (`ttwu_runnable()`); a dequeued one goes through `select_task_rq_fair()`.
    /// With TTWU_DEQUEUE_DELAYED (v6.13, d68803506ffb) `ttwu_runnable()`
    /// fully dequeues a delayed task whose CPU has other tasks and that may
    /// run elsewhere, and it takes the dequeued task's path.
    /// Returns false if the task was already awake.
    pub fn try_to_wake_up(&mut self, p: TaskId, wake_flags: u32, waker: Option<CpuId>) -> bool {
        if self.tasks[p.idx()].state == TaskState::Running {
            return false;
        }
        let now = self.now;
        {
            let t = &mut self.tasks[p.idx()];
            t.state = TaskState::Running;
            t.stats.nr_wakeups += 1;
            t.wake_time = Some(now);
        }
        if self.tasks[p.idx()].on_rq
            && self.feat.ttwu_dequeue_delayed
            && self.ses[self.tasks[p.idx()].se.idx()].sched_delayed
            && self.rqs[self.tasks[p.idx()].cpu.idx()].nr_running > 1
            && self.tasks[p.idx()].allowed.weight() > 1
        {
            // dequeue_task(DEQUEUE_SLEEP | DEQUEUE_DELAYED): __block_task()
            // clears on_rq; ttwu_runnable() returns 0.
            self.dequeue_task_fair(p, DEQUEUE_SLEEP | DEQUEUE_DELAYED);
        }
        if self.tasks[p.idx()].on_rq {
            let cpu = self.tasks[p.idx()].cpu;
            if self.ses[self.tasks[p.idx()].se.idx()].sched_delayed {
                self.enqueue_task_fair(p, super::fair::ENQUEUE_DELAYED);
            }
            if !self.tasks[p.idx()].on_cpu {
                self.tasks[p.idx()].wait_since = Some(now);
                self.wakeup_preempt(cpu, p, wake_flags);
            } else {
                // Woken before it switched out: it simply keeps running.
                self.tasks[p.idx()].wake_time = None;
            }
            return true;
        }
        let prev_cpu = self.tasks[p.idx()].cpu;
        let cpu = self.select_task_rq_fair(p, prev_cpu, wake_flags, waker);
        let mut flags = ENQUEUE_WAKEUP;
        if cpu != prev_cpu {
            self.set_task_cpu(p, cpu);
            flags |= ENQUEUE_MIGRATED;
        }
        // ttwu_queue(): the CPU doing the wakeup is the waker's, or the
        // task's own for a timer (the hrtimer fires where it was armed).
        let this = self.this_cpu.or(waker).unwrap_or(prev_cpu);
        let wakelisted = self.ttwu_queue_cond(cpu, this);
        if wakelisted {
            // The call-function IPI of ttwu_queue_wakelist() (`ipis`).
            self.count_wakelist_ipi(cpu);
        }
        // The wakelist is modelled only when remote wakeups have a cost;
        // without one the task is activated at once (`sched::ipis`).
        if wakelisted && self.cfg.costs.remote_wakeup > 0 {
            // ttwu_queue_wakelist(): activated by the target CPU when the
            // IPI arrives (sched_ttwu_pending()).
            self.tasks[p.idx()].waking = true;
            self.rqs[cpu.idx()].ttwu_pending += 1;
            self.nohz_track_busy(cpu);
            self.wakelist.push((p, flags));
            return true;
        }
        // Activated at once: what resched_curr() sends is counted as 6.12
        // would send it (`ipis`).
        self.ttwu_from = Some(this);
        self.ttwu_wakelisted = wakelisted;
        if wakelisted {
            self.rqs[cpu.idx()].wakelist_ipi = true;
        }
        self.ttwu_do_activate(p, flags, wake_flags);
        self.ttwu_from = None;
        self.ttwu_wakelisted = false;
        true
    }

    /// `ttwu_do_activate()`: enqueue the woken task and check preemption.
    fn ttwu_do_activate(&mut self, p: TaskId, flags: u32, wake_flags: u32) {
        let cpu = self.tasks[p.idx()].cpu;
        let t = &mut self.tasks[p.idx()];
        t.on_rq = true;
        t.wait_since = Some(self.now);
        self.enqueue_task_fair(p, flags);
        self.wakeup_preempt(cpu, p, wake_flags);
    }

    /// `sched_ttwu_pending()` on the task's CPU: the wakelist IPI arrived and
    /// the queued wakeup is activated there.
    pub fn sched_ttwu_pending(&mut self, p: TaskId, flags: u32) {
        let cpu = self.tasks[p.idx()].cpu;
        self.tasks[p.idx()].waking = false;
        self.rqs[cpu.idx()].ttwu_pending -= 1;
        self.nohz_track_idle(cpu);
        self.ttwu_do_activate(p, flags, 0);
    }

    /// The running task on `cpu` goes to sleep (`set_current_state()` +
    /// `schedule()`); the caller serves the returned switch.
    pub fn block_current(&mut self, cpu: CpuId) -> Option<Switch> {
        let p = self.rqs[cpu.idx()]
            .curr
            .expect("block_current on an idle CPU");
        self.tasks[p.idx()].state = TaskState::Sleeping;
        self.schedule(cpu)
    }

    /// `do_sched_yield()`: `yield_task_fair()` then `schedule()`.
    pub fn do_sched_yield(&mut self, cpu: CpuId) -> Option<Switch> {
        let p = self.rqs[cpu.idx()]
            .curr
            .expect("sched_yield on an idle CPU");
        self.rqs[cpu.idx()].yld_count += 1;
        self.tasks[p.idx()].stats.nr_yields += 1;
        if !self.yield_task_fair(cpu) {
            return None;
        }
        self.yield_stats.yields_scheduled += 1;
        self.schedule(cpu)
    }

    /// `yield_to()` (kernel/sched/syscalls.c, 6.12.117): `Esrch` when both
    /// runqueues hold a single task; `Refused` when the target runs, sleeps
    /// (a delayed task counts as sleeping) or is not queued; otherwise the
    /// target becomes the buddy, the caller yields, the target's CPU is
    /// rescheduled if remote and `preempt`, and the caller reschedules
    /// (`Yielded` with the switch).
    pub fn yield_to(&mut self, cpu: CpuId, p: TaskId, preempt: bool) -> YieldTo {
        let curr = self.rqs[cpu.idx()].curr.expect("yield_to from an idle CPU");
        self.tasks[curr.idx()].stats.nr_yield_to += 1;
        let p_cpu = self.tasks[p.idx()].cpu;
        if self.rqs[cpu.idx()].nr_running == 1 && self.rqs[p_cpu.idx()].nr_running == 1 {
            return YieldTo::Esrch;
        }
        let t = &self.tasks[p.idx()];
        if t.on_cpu || t.state != TaskState::Running {
            return YieldTo::Refused;
        }
        if !self.yield_to_task_fair(cpu, p) {
            return YieldTo::Refused;
        }
        self.rqs[cpu.idx()].yld_count += 1;
        self.tasks[curr.idx()].stats.nr_yield_to_ok += 1;
        if preempt && p_cpu != cpu {
            self.resched_curr(p_cpu);
        }
        let sw = self.schedule(cpu);
        if sw.and_then(|s| s.next) == Some(p) {
            self.tasks[curr.idx()].stats.nr_yield_to_target_ran += 1;
        }
        self.yield_policy_after_schedule(cpu, sw);
        YieldTo::Yielded(sw)
    }

    /// `hrtick()` (kernel/sched/core.c, 6.12.117): `cpu`'s HRTICK timer
    /// expired: `task_tick(rq, curr, 1)`. A yield policy's timer shares it
    /// (docs/yield-policies.md): an expiry that was the policy's ticks only
    /// when the HRTICK feature is on.
    pub fn hrtick(&mut self, cpu: CpuId) {
        let policy = self.yield_policy_timer(cpu);
        if !policy || self.feat.hrtick {
            if let Some(c) = self.rqs[cpu.idx()].curr {
                self.task_tick_fair(cpu, c, true);
            }
        }
    }

    /// `sched_tick()` for a CPU: charge the running task (`task_tick_fair`),
    /// then the periodic and nohz load-balance triggers.
    pub fn sched_tick(&mut self, cpu: CpuId) {
        if let Some(c) = self.rqs[cpu.idx()].curr {
            self.task_tick_fair(cpu, c, false);
        }
        self.sched_balance_trigger(cpu);
    }

    /// The steal-time part of `update_rq_clock_task()` (kernel/sched/core.c,
    /// 6.12, `CONFIG_PARAVIRT_TIME_ACCOUNTING` with `paravirt_steal_rq_enabled`):
    /// `steal` ns of this CPU's time went to the hypervisor (its vCPU was
    /// runnable on the host but not running), so `rq->clock_task` does not
    /// advance over them and the running task is not charged for them. The
    /// model has one clock, so it moves the running entities'
    /// `exec_start` forward instead, which is what `update_curr()` sees; the
    /// kernel caps steal at the clock delta, here at `now`. Simplification
    /// (docs/workloads.md): PELT keeps running on the wall clock.
    pub fn account_steal_time(&mut self, cpu: CpuId, steal: u64) {
        let Some(p) = self.rqs[cpu.idx()].curr else {
            return;
        };
        let now = self.now;
        let mut s = Some(self.tasks[p.idx()].se);
        while let Some(e) = s {
            let se = &mut self.ses[e.idx()];
            se.exec_start = (se.exec_start + steal).min(now).max(se.exec_start);
            s = self.parent_entity(e);
        }
        if let Some(f) = self.flat_task_se(p) {
            // sched/flat: the runqueue's entity is charged by update_curr().
            let se = &mut self.ses[f.idx()];
            se.exec_start = (se.exec_start + steal).min(now).max(se.exec_start);
        }
    }

    /// Brings every running task's accounting up to `now` (end of a run).
    pub fn sync_accounting(&mut self) {
        for c in 0..self.nr_cpus() {
            if let Some(t) = self.rqs[c].curr {
                let mut s = Some(self.tasks[t.idx()].se);
                while let Some(e) = s {
                    let cfs = self.cfs_rq_of(e);
                    if self.cfs_rqs[cfs.idx()].curr == Some(e) {
                        self.update_curr(cfs);
                    }
                    s = self.parent_entity(e);
                }
                let now = self.now;
                let rq = &mut self.rqs[c];
                rq.busy_ns += now - rq.switched_at;
                rq.switched_at = now;
            }
        }
        let now = self.now;
        for t in &mut self.tasks {
            if let Some(ws) = t.wait_since {
                t.stats.wait_ns += now - ws;
                t.wait_since = Some(now);
            }
        }
    }

    /// `set_task_cpu()` for a task that is not queued: `migrate_task_rq_fair()`
    /// and the migration count when the CPU changes, then `__set_task_cpu()`.
    pub fn set_task_cpu(&mut self, p: TaskId, cpu: CpuId) {
        if self.tasks[p.idx()].cpu != cpu {
            self.migrate_task_rq_fair(p);
            self.tasks[p.idx()].stats.nr_migrations += 1;
        }
        self.__set_task_cpu(p, cpu);
    }

    /// `__set_task_cpu()`: re-home the task's entity in the destination CPU's
    /// copy of its group hierarchy (`set_task_rq()`).
    pub fn __set_task_cpu(&mut self, p: TaskId, cpu: CpuId) {
        let t = &mut self.tasks[p.idx()];
        let old = t.cpu;
        if old != cpu {
            t.migrated = true;
            let list = &mut self.cpu_tasks[old.idx()];
            if let Some(i) = list.iter().position(|&x| x == p) {
                list.swap_remove(i);
            }
            self.cpu_tasks[cpu.idx()].push(p);
        }
        let t = &mut self.tasks[p.idx()];
        t.cpu = cpu;
        let g = t.group;
        let se = t.se;
        let q = self.groups[g.idx()].cfs_rq[cpu.idx()];
        let parent = self.groups[g.idx()].se[cpu.idx()];
        let e = &mut self.ses[se.idx()];
        e.cfs_rq = q;
        e.parent = parent;
    }
}
