//! One kernel level: a `Scheduler` and what the kernel keeps around it for
//! its tasks. The host is one level and the guest of every nested VM is
//! another (sim/vm/guest.rs); both are this type, so the placement of new
//! tasks, a task's CPU burst left, the reschedule points, HRTICK and the
//! invariant checks exist once. What differs between the levels is the
//! platform under them (the event queue and host IPIs for the host; vCPUs,
//! the LAPIC and KVM for a guest), which their drivers supply.

use crate::engine::{Nanos, Time};
use crate::sched::core::{Switch, YieldTo};
use crate::sched::{CpuId, CpuMask, GroupId, SchedConfig, Scheduler, TaskId};
use crate::task::Next;

/// The CPUs a task may run on: those of `list`, or all `n`.
pub(super) fn allowed_mask(n: usize, list: Option<&[u32]>) -> CpuMask {
    match list {
        Some(list) => {
            let mut m = CpuMask::empty(n);
            for &c in list.iter().filter(|&&c| (c as usize) < n) {
                m.set(c as usize, true);
            }
            m
        }
        None => CpuMask::full(n),
    }
}

/// What became of a task's step on its level ([`KernelLevel::task_next`]).
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Stepped {
    /// The task keeps its CPU for the burst it asked for.
    Runs,
    /// It yielded or blocked: the switch that follows (None: nothing else
    /// to run, it is still current if it yielded).
    Left(Option<Switch>),
    /// Its `yield_to()` and what that did.
    YieldedTo(YieldTo),
}

/// A scheduler and the run state of its tasks.
pub(crate) struct KernelLevel {
    pub(crate) sched: Scheduler,
    /// CPU time left in each task's current burst; None when the task must
    /// be stepped (asked for its next action) as soon as it runs.
    remaining: Vec<Option<Nanos>>,
    /// Generation of each CPU's HRTICK timer: a new request restarts it,
    /// as `hrtick_start()` does, and the superseded expiry is stale.
    hrtick_gen: Vec<u64>,
    /// The placement cursor ([`KernelLevel::spawn`]).
    next_cpu: usize,
}

impl KernelLevel {
    /// A level of `cfg.nr_cpus` CPUs without tasks.
    pub(crate) fn new(cfg: SchedConfig) -> KernelLevel {
        let n = cfg.nr_cpus as usize;
        KernelLevel {
            sched: Scheduler::new(cfg),
            remaining: Vec::new(),
            hrtick_gen: vec![0; n],
            next_cpu: 0,
        }
    }

    /// The one placement of new tasks, at every level (host tasks, vCPU
    /// tasks, guest threads): round-robin over the CPUs, from the cursor
    /// on, taking the first one the task may use (CPU 0 if none); the
    /// cursor moves past it. A model choice, not the kernel's fork
    /// balancing (docs/model.md). The task is created there
    /// (`sched_fork`); it is woken later (`wake_up_new_task`).
    pub(crate) fn spawn(
        &mut self,
        name: &str,
        group: GroupId,
        nice: i32,
        allowed: impl Into<CpuMask>,
        slice: Option<u64>,
    ) -> TaskId {
        let allowed = allowed.into();
        let n = allowed.len();
        let cpu = (0..n)
            .map(|k| (self.next_cpu + k) % n)
            .find(|&c| allowed[c])
            .unwrap_or(0);
        self.next_cpu = cpu + 1;
        let id = self
            .sched
            .create_task(name, group, nice, allowed, CpuId(cpu as u32), slice);
        debug_assert_eq!(id.idx(), self.remaining.len());
        self.remaining.push(None);
        id
    }

    /// The level's clock (`rq_clock`'s source) is now `t`.
    #[inline]
    pub(crate) fn set_now(&mut self, t: Time) {
        self.sched.now = t.0;
    }

    /// CPU time left in `p`'s burst (None: step it).
    #[inline]
    pub(crate) fn remaining(&self, p: TaskId) -> Option<Nanos> {
        self.remaining[p.idx()]
    }

    /// Sets what is left of `p`'s burst (None: step it when it runs).
    #[inline]
    pub(crate) fn set_remaining(&mut self, p: TaskId, d: Option<Nanos>) {
        self.remaining[p.idx()] = d;
    }

    /// `p` ran `d` of its burst (never below zero).
    #[inline]
    pub(crate) fn consume(&mut self, p: TaskId, d: Nanos) {
        if let Some(r) = self.remaining[p.idx()].as_mut() {
            *r = *r - d;
        }
    }

    /// The level's side of task `p`'s next step on `cpu` (the task's
    /// program or behaviour chose `next`; the platform armed a sleep's
    /// timer): the burst it runs or will run when next on a CPU, and the
    /// scheduler call, `do_sched_yield()`, `yield_to()` (Linux 6.12,
    /// kernel/sched/syscalls.c) or, for a sleep, the block of the task's
    /// `schedule()` (`block_current`, kernel/sched/core.c).
    pub(crate) fn task_next(&mut self, cpu: CpuId, p: TaskId, next: Next) -> Stepped {
        match next {
            Next::Run(d) => {
                self.set_remaining(p, Some(d));
                Stepped::Runs
            }
            Next::Yield(d) => {
                self.set_remaining(p, Some(d));
                Stepped::Left(self.sched.do_sched_yield(cpu))
            }
            Next::YieldTo(t, d) => {
                self.set_remaining(p, Some(d));
                Stepped::YieldedTo(self.sched.yield_to(cpu, t, true))
            }
            Next::Sleep(_) => {
                self.set_remaining(p, None);
                Stepped::Left(self.sched.block_current(cpu))
            }
        }
    }

    /// The next CPU a reschedule was requested for that still needs one
    /// (`resched_curr()` marks are served in the order they were made; a
    /// mark already served by a `schedule()` since is skipped).
    pub(crate) fn next_resched(&mut self) -> Option<CpuId> {
        while let Some(cpu) = self.sched.take_resched() {
            if self.sched.rqs[cpu.idx()].need_resched {
                return Some(cpu);
            }
        }
        None
    }

    /// Linux 6.12: `hrtick_start()` of every HRTICK the scheduler asked
    /// for since (kernel/sched/core.c): each restarts its CPU's timer,
    /// superseding the armed one; `arm(cpu, expiry, generation)` queues the
    /// expiry on the platform's timer (never before `now`; an expiry after
    /// `end` is not queued).
    pub(crate) fn hrtick_start(
        &mut self,
        now: Time,
        end: Time,
        mut arm: impl FnMut(CpuId, Time, u64),
    ) {
        for (cpu, at) in self.sched.hrtick_requests.drain(..) {
            self.hrtick_gen[cpu.idx()] += 1;
            let at = Time(at).max(now);
            if at <= end {
                arm(cpu, at, self.hrtick_gen[cpu.idx()]);
            }
        }
    }

    /// Whether `cpu`'s HRTICK timer of generation `gen` is the armed one
    /// (else it was superseded: stale).
    #[inline]
    pub(crate) fn hrtick_armed(&self, cpu: CpuId, gen: u64) -> bool {
        self.hrtick_gen[cpu.idx()] == gen
    }

    /// Linux 6.12: `hrtick()` (kernel/sched/core.c), the HRTICK timer's
    /// handler on `cpu`, if `gen` is the armed timer; false for a stale
    /// one.
    pub(crate) fn hrtick(&mut self, cpu: CpuId, gen: u64) -> bool {
        if !self.hrtick_armed(cpu, gen) {
            return false;
        }
        self.sched.hrtick(cpu);
        true
    }

    /// The scheduler invariants of this level (src/sched/invariants.rs).
    pub(crate) fn check(&self) -> Result<(), String> {
        crate::sched::invariants::check(&self.sched)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::{KernelPreset, ROOT_GROUP};

    fn level(cpus: u32) -> KernelLevel {
        let preset = KernelPreset::V6_12_117;
        KernelLevel::new(SchedConfig {
            nr_cpus: cpus,
            hz: 250,
            features: preset.features(),
            preset,
            costs: crate::sched::HostCosts::ZERO,
        })
    }

    /// The fork extension's child (sched_fork + wake_up_new_task): forked
    /// on a busy CPU, the new task goes to the idle one (6.12's fork
    /// balance, `sched_balance_find_dst_cpu`), whatever CPU its slot last
    /// ran on; a re-forked slot starts with a fresh entity (no lag).
    #[test]
    fn a_forked_child_is_placed_by_the_fork_balance_on_the_idle_cpu() {
        let mut l = level(2);
        let a = l.spawn("parent", ROOT_GROUP, 0, vec![true, true], None);
        let c = l.spawn("child", ROOT_GROUP, 0, vec![true, true], None);
        l.set_now(Time::ZERO);
        l.sched.wake_up_new_task(a);
        while let Some(cpu) = l.next_resched() {
            let _ = l.sched.schedule(cpu);
        }
        let pc = l.sched.tasks[a.idx()].cpu;
        assert_eq!(l.sched.rqs[pc.idx()].curr, Some(a));
        l.set_now(Time(1_000_000));
        l.sched.sched_fork(c, pc);
        assert_eq!(l.sched.tasks[c.idx()].cpu, pc, "created on the forking CPU");
        l.sched.wake_up_new_task(c);
        assert_ne!(l.sched.tasks[c.idx()].cpu, pc, "placed on the idle CPU");
        assert!(l.sched.tasks[c.idx()].on_rq);
    }

    /// An exiting task that DELAY_DEQUEUE left queued (it blocked with
    /// negative lag) is dequeued for good by `task_dead_fair`, and a
    /// re-fork of its slot starts from a fresh entity.
    #[test]
    fn task_dead_fair_dequeues_a_delayed_dead_task() {
        let mut l = level(1);
        let a = l.spawn("a", ROOT_GROUP, 0, vec![true], None);
        let b = l.spawn("b", ROOT_GROUP, 0, vec![true], None);
        l.set_now(Time::ZERO);
        for t in [a, b] {
            l.sched.wake_up_new_task(t);
        }
        while let Some(cpu) = l.next_resched() {
            let _ = l.sched.schedule(cpu);
        }
        let cur = l.sched.rqs[0].curr.expect("a task runs");
        // It runs 3 ms while the other waits: its lag goes negative.
        l.set_now(Time(3_000_000));
        l.sched.sched_tick(CpuId(0));
        assert_eq!(l.sched.rqs[0].curr, Some(cur), "not preempted yet");
        let _ = l.sched.block_current(CpuId(0));
        let se = l.sched.tasks[cur.idx()].se;
        assert!(
            l.sched.tasks[cur.idx()].on_rq && l.sched.ses[se.idx()].sched_delayed,
            "blocked with negative lag: delayed, still queued"
        );
        let queued = l.sched.rqs[0].nr_running;
        l.sched.task_dead_fair(cur);
        assert!(!l.sched.tasks[cur.idx()].on_rq, "dead: off the queue");
        assert_eq!(l.sched.rqs[0].nr_running, queued - 1);
        l.sched.sched_fork(cur, CpuId(0));
        assert!(!l.sched.ses[se.idx()].sched_delayed);
        assert_eq!(l.sched.ses[se.idx()].vlag(), 0, "a new process has no lag");
    }

    #[test]
    fn spawn_places_round_robin_over_the_allowed_cpus() {
        let mut l = level(3);
        let all = || allowed_mask(3, None);
        let a = l.spawn("a", ROOT_GROUP, 0, all(), None);
        let b = l.spawn("b", ROOT_GROUP, 0, allowed_mask(3, Some(&[0])), None);
        let c = l.spawn("c", ROOT_GROUP, 0, all(), None);
        let cpus: Vec<u32> = [a, b, c]
            .iter()
            .map(|t| l.sched.tasks[t.idx()].cpu.0)
            .collect();
        // a on 0; b may only use 0 (the cursor was on 1); c after b.
        assert_eq!(cpus, [0, 0, 1]);
    }

    #[test]
    fn a_new_hrtick_request_makes_the_armed_one_stale() {
        let mut l = level(1);
        let mut armed = Vec::new();
        l.sched.hrtick_requests.push((CpuId(0), 10));
        l.sched.hrtick_requests.push((CpuId(0), 20));
        l.hrtick_start(Time(15), Time(100), |c, at, g| armed.push((c, at, g)));
        // The first is clamped to now; the second supersedes it.
        assert_eq!(armed, [(CpuId(0), Time(15), 1), (CpuId(0), Time(20), 2)]);
        assert!(!l.hrtick_armed(CpuId(0), 1));
        assert!(l.hrtick_armed(CpuId(0), 2));
        assert!(!l.hrtick(CpuId(0), 1), "a superseded expiry does nothing");
    }

    /// A sleep blocks the current task and leaves it nothing to run (it is
    /// stepped when woken); a yield keeps its burst and hands the CPU to
    /// the other task.
    #[test]
    fn task_next_blocks_a_sleeper_and_keeps_a_yielders_burst() {
        let mut l = level(1);
        let a = l.spawn("a", ROOT_GROUP, 0, vec![true], None);
        let b = l.spawn("b", ROOT_GROUP, 0, vec![true], None);
        for t in [a, b] {
            l.sched.wake_up_new_task(t);
        }
        while let Some(c) = l.next_resched() {
            let _ = l.sched.schedule(c);
        }
        let cur = l.sched.rqs[0].curr.expect("a task runs");
        let other = if cur == a { b } else { a };
        l.set_now(Time(1_000_000));
        match l.task_next(CpuId(0), cur, Next::Yield(Nanos(7))) {
            Stepped::Left(Some(sw)) => assert_eq!(sw.next, Some(other)),
            s => panic!("the yield handed the CPU to nobody: {s:?}"),
        }
        assert_eq!(l.remaining(cur), Some(Nanos(7)));
        assert_eq!(
            l.task_next(CpuId(0), other, Next::Run(Nanos(3))),
            Stepped::Runs
        );
        assert_eq!(l.remaining(other), Some(Nanos(3)));
        l.set_now(Time(2_000_000));
        match l.task_next(CpuId(0), other, Next::Sleep(None)) {
            Stepped::Left(Some(sw)) => assert_eq!(sw.next, Some(cur)),
            s => panic!("the sleeper kept the CPU: {s:?}"),
        }
        assert_eq!(l.remaining(other), None);
        assert_ne!(
            l.sched.tasks[other.idx()].state,
            crate::sched::TaskState::Running
        );
    }

    #[test]
    fn consume_never_goes_below_zero() {
        let mut l = level(1);
        let t = l.spawn("t", ROOT_GROUP, 0, vec![true], None);
        l.set_remaining(t, Some(Nanos(5)));
        l.consume(t, Nanos(3));
        assert_eq!(l.remaining(t), Some(Nanos(2)));
        l.consume(t, Nanos(7));
        assert_eq!(l.remaining(t), Some(Nanos::ZERO));
    }
}
