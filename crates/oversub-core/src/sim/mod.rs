//! The simulator's host loop: drives the host's kernel level (level.rs)
//! through the event queue; the builder (build.rs) makes it from a
//! scenario, the VM runtime (vm/) is reached through its events (`Ev::Vm`)
//! and each vCPU task's preempt notifier.
//!
//! Events are per-CPU ticks (aligned to the jiffy grid, stopped while a CPU is
//! idle, as NOHZ_IDLE does), the end of a running task's CPU burst, timers
//! that wake sleeping tasks, HRTICK expiries, and the host's wake-path
//! delays (`[host.costs]`: the timer interrupt's wakeup, remote wakelist and
//! reschedule IPIs). After each event every pending reschedule request is
//! served, in the order it was raised, except on a CPU still paying for its
//! last switch: `__schedule()` runs with IRQs and preemption off, so the
//! reschedule waits for the switch's end (`Ev::SwitchDone`). A switch's cost
//! and a migration's are CPU time of the incoming task, paid before its
//! burst continues.
//! Invalidation of a burst-end event when its task is switched out uses a
//! per-CPU generation number.

use crate::engine::{EventQueue, Nanos, SimRng, Time};
use crate::error::RunError;
use crate::report::Report;
use crate::sched::core::{Switch, YieldTo};
use crate::sched::{CpuId, TaskId};
use crate::task::{Behaviour, Next, World};
pub use build::SimBuilder;
use level::{KernelLevel, Stepped};
use vm::VmEv;

#[derive(Clone, Copy, Debug)]
enum Ev {
    Tick(CpuId),
    BurstEnd(CpuId, u64),
    /// A sleeping task's hrtimer expires.
    Timer(TaskId),
    /// `hrtimer_wakeup()` of a task whose timer expired at the given instant,
    /// after the timer interrupt's delay (HostCosts::timer_wake/idle_exit).
    TimerWake(TaskId, Time),
    HrTick(CpuId, u64),
    /// A reschedule IPI arrives (`scheduler_ipi()`).
    ReschedIpi(CpuId),
    /// A wakelist IPI arrives: activate the queued wakeup (flags).
    TtwuPending(TaskId, u32),
    /// An event of the VM runtime (its timers; sim/vm/events.rs).
    Vm(VmEv),
    /// The switch into a CPU's task is done (its cost paid): a reschedule
    /// requested meanwhile takes effect now.
    SwitchDone(CpuId),
}

/// What runs a host task's bursts.
enum Body {
    /// A behaviour the host level steps at each burst end (src/task).
    Steps(Behaviour),
    /// A vCPU thread inside `KVM_RUN`: KVM runs its bursts. The host level
    /// knows it only by the preempt notifier it registered
    /// (`preempt_notifier_register()`, sim/vm/notifier.rs), which the
    /// context switch calls.
    Notified(vm::PreemptNotifier),
}

/// Per-task simulator state of a host task (besides the host level's: its
/// scheduler entity and the CPU time left in its burst).
struct TaskSim {
    body: Body,
    /// When the burst started consuming on the current CPU.
    running_since: Option<Time>,
    started: bool,
    /// Switch, migration and system call CPU time owed (HostCosts), paid
    /// before the burst continues.
    overhead: Nanos,
    /// `timer_slack_ns` of the task's sleeps (sim/hrtimer.rs).
    timer_slack: Nanos,
}

/// A host under simulation.
pub struct Simulator {
    /// The host kernel: its scheduler and its tasks' bursts.
    host: KernelLevel,
    queue: EventQueue<Ev>,
    tasks: Vec<TaskSim>,
    world: World,
    cpu_gen: Vec<u64>,
    tick_armed: Vec<bool>,
    /// Per CPU, when the last switch's cost is paid: until then
    /// `__schedule()` is still running there (IRQs and preemption off),
    /// so a reschedule waits for it (`resched_deferred`).
    switch_end: Vec<Time>,
    /// Per CPU, a reschedule waits for `switch_end` (`Ev::SwitchDone`
    /// queued).
    resched_deferred: Vec<bool>,
    /// The host tasks' sleep timers, per CPU (sim/hrtimer.rs).
    hrtimers: hrtimer::HrtimerBases,
    /// Scratch of `__hrtimer_run_queues` (no allocation per interrupt).
    due_timers: Vec<(TaskId, Time)>,
    tick: u64,
    now: Time,
    /// End of the run: events after it are never queued.
    end: Time,
    /// Events popped from the queue, stale ones included.
    events: u64,
    /// Of those, the stale ones: a burst end, HRTICK or guest timer
    /// superseded by a newer one (its generation is outdated when it
    /// pops), dropped without doing anything.
    stale: u64,
    check_invariants: bool,
    _rng: SimRng,
    /// The VMs (empty for a host-only scenario).
    vms: vm::Vms,
    /// Per VM, `[[vm]] ops`: which program threads' loops are its ops, and
    /// how many ops one loop of each is (its `ops_per_loop`, default 1).
    vm_ops: Vec<Option<Vec<(usize, f64)>>>,
    kvm: crate::scenario::KvmSpec,
    pv: crate::scenario::PvSpec,
    /// Stop as soon as every program thread has finished.
    until_done: bool,
    /// The run's trace sink (src/trace/), if any, and the policy counters
    /// it last saw.
    trace: Option<Box<dyn crate::trace::TraceSink>>,
    trace_yield: crate::sched::yield_to::YieldStats,
    /// The guest thread last traced as current on each nested guest's vCPU.
    trace_guest: Vec<Vec<Option<u32>>>,
    /// What the tracer last reported (migrations, counters, guest mode).
    trace_st: tracing::TraceState,
    /// The CPUs the event budget counts: host CPUs plus vCPUs.
    budget_cpus: u64,
    /// The event budget's rate (per CPU per simulated second) and its
    /// allowance ([`Simulator::set_event_budget`]).
    budget_rate: u64,
    budget_allowance: u64,
}

impl Simulator {
    /// Checks the scheduler invariants after every event (on by default in
    /// debug builds; tests and `--check` turn it on in release builds).
    pub fn set_check_invariants(&mut self, on: bool) {
        self.check_invariants = on;
    }

    /// The event budget by simulated time `t`: [`limits::EVENT_ALLOWANCE`]
    /// plus [`limits::MAX_EVENTS_PER_CPU_SECOND`] per CPU (host CPUs and
    /// vCPUs) per simulated second.
    pub fn event_budget(&self, t: Time) -> u64 {
        let per_ns = u128::from(self.budget_rate) * u128::from(self.budget_cpus);
        let b = per_ns * u128::from(t.0) / 1_000_000_000 + u128::from(self.budget_allowance);
        u64::try_from(b).unwrap_or(u64::MAX)
    }

    /// Another event budget than the limits' (tests of the budget itself).
    pub fn set_event_budget(&mut self, per_cpu_second: u64, allowance: u64) {
        self.budget_rate = per_cpu_second;
        self.budget_allowance = allowance;
    }

    /// Events between two calls of a run's `poll`.
    pub const POLL_EVENTS: u64 = 1 << 14;

    /// Runs until `duration` of virtual time has passed (or, for a program
    /// run until done, until its last thread finished) and returns the
    /// report, calling `poll(now)` every [`Self::POLL_EVENTS`]
    /// events (progress display, Ctrl-C); `poll` returning false stops the
    /// run ([`RunError::Interrupted`]). At the same points the events so far
    /// are held against [`Self::event_budget`] ([`RunError::EventBudget`]).
    /// A failed invariant check (when enabled) stops it too, naming the level.
    pub fn run_polled(
        &mut self,
        duration: Nanos,
        poll: &mut dyn FnMut(Time) -> bool,
    ) -> Result<Report, RunError> {
        let wall = std::time::Instant::now();
        let mut end = Time::ZERO + duration;
        self.end = end;
        // All tasks start at t=0, in creation order (wake_up_new_task).
        self.set_now(Time::ZERO);
        // A forked child process (the `fork` extension) starts when its
        // parent forks it.
        let unforked: Vec<TaskId> = match &self.world.program {
            Some(p) => (0..p.program().threads.len())
                .filter(|&i| p.is_forked(i))
                .map(|i| self.world.program_tasks[i])
                .collect(),
            None => Vec::new(),
        };
        for i in 0..self.tasks.len() {
            if unforked.contains(&TaskId(i as u32)) {
                continue;
            }
            self.host.sched.wake_up_new_task(TaskId(i as u32));
            self.serve_resched();
        }
        self.trace_after_event();
        // A burst end superseded while it waits (a poke cut the vCPU's burst
        // short: a third of the pops with VMs) is dropped by the queue when
        // it would re-file it (`pop_until_live`), the others by the handler
        // (`Ev::BurstEnd` below). Either way the same events do model work,
        // in the same order.
        while let Some((t, ev)) = {
            let gen = &self.cpu_gen;
            self.queue.pop_until_live(end, |e| match *e {
                Ev::BurstEnd(cpu, g) => gen[cpu.idx()] == g,
                _ => true,
            })
        } {
            self.set_now(t);
            self.events += 1;
            if self.events % Self::POLL_EVENTS == 0 {
                if !poll(t) {
                    return Err(RunError::Interrupted { at: t });
                }
                let budget = self.event_budget(t);
                if self.events > budget {
                    return Err(RunError::EventBudget {
                        at: t,
                        events: self.events,
                        budget,
                        cpus: self.budget_cpus,
                    });
                }
                self.check_zero_time_loops()?;
            }
            self.host.sched.this_cpu = self.event_cpu(ev);
            self.dispatch(ev);
            // hrtimer_interrupt() runs every timer of its CPU that expired by
            // now (the tick is one) before the reschedule at interrupt exit.
            if let Some(cpu) = self.timer_irq_cpu(ev) {
                while let Some((t2, &ev2)) = self.queue.peek() {
                    if t2 != t || self.timer_irq_cpu(ev2) != Some(cpu) {
                        break;
                    }
                    self.queue.pop();
                    self.events += 1;
                    self.dispatch(ev2);
                }
            }
            self.serve_resched();
            if self.trace.is_some() {
                self.trace_yield_policy(ev_cpu(ev));
                self.trace_after_event();
            }
            if self.until_done && self.world.program.as_ref().is_some_and(|p| p.all_done()) {
                end = t;
                break;
            }
            if self.check_invariants {
                self.check_levels(t)?;
            }
        }
        self.check_zero_time_loops()?;
        self.set_now(end);
        self.host.sched.sync_accounting();
        self.guest_sync();
        Ok(self.build_report(end - Time::ZERO, wall.elapsed().as_nanos() as u64))
    }

    /// The host tasks' names, by task id (the trace's track names).
    pub fn task_names(&self) -> Vec<String> {
        self.host
            .sched
            .tasks
            .iter()
            .map(|t| t.name.clone())
            .collect()
    }

    /// Events that did model work: every event popped except the stale
    /// ones, which are queue bookkeeping (how a superseded event is
    /// cancelled), not part of the model.
    pub fn events(&self) -> u64 {
        self.events - self.stale
    }

    fn set_now(&mut self, t: Time) {
        self.now = t;
        self.host.set_now(t);
    }

    /// The CPU an event runs on (`smp_processor_id()` of its handler).
    fn event_cpu(&self, ev: Ev) -> Option<CpuId> {
        match ev {
            Ev::Tick(c)
            | Ev::BurstEnd(c, _)
            | Ev::HrTick(c, _)
            | Ev::ReschedIpi(c)
            | Ev::SwitchDone(c) => Some(c),
            Ev::Timer(p) | Ev::TimerWake(p, _) | Ev::TtwuPending(p, _) => {
                Some(self.host.sched.tasks[p.idx()].cpu)
            }
            Ev::Vm(e) => Some(self.vm_event_cpu(e)),
        }
    }

    /// The CPU whose timer interrupt delivers `ev`, if it is one.
    fn timer_irq_cpu(&self, ev: Ev) -> Option<CpuId> {
        match ev {
            Ev::Tick(c) | Ev::HrTick(c, _) => Some(c),
            Ev::TimerWake(p, _) => Some(self.host.sched.tasks[p.idx()].cpu),
            Ev::Vm(e) => self.vm_timer_irq_cpu(e),
            _ => None,
        }
    }

    /// The timer interrupt's delay before `hrtimer_wakeup()` runs for a task
    /// whose timer fired on its CPU now: `timer_wake`, plus `idle_exit` when
    /// that CPU was idle.
    fn timer_delay(&self, p: TaskId) -> Nanos {
        let c = &self.host.sched.cfg.costs;
        let cpu = self.host.sched.tasks[p.idx()].cpu.idx();
        let idle = self.host.sched.rqs[cpu].curr.is_none();
        Nanos(c.timer_wake + if idle { c.idle_exit } else { 0 })
    }

    fn dispatch(&mut self, ev: Ev) {
        match ev {
            Ev::Tick(cpu) => {
                self.tick_armed[cpu.idx()] = false;
                if self.host.sched.rqs[cpu.idx()].curr.is_some() {
                    self.host.sched.sched_tick(cpu);
                    self.arm_tick(cpu);
                    // tick_sched_timer() is one of the CPU's hrtimers: the
                    // same interrupt runs the sleepers past their soft expiry.
                    self.hrtimer_interrupt(cpu, Nanos::ZERO);
                }
            }
            Ev::HrTick(cpu, gen) => {
                if self.host.hrtick(cpu, gen) {
                    self.hrtimer_interrupt(cpu, Nanos::ZERO);
                } else {
                    self.stale += 1;
                }
            }
            Ev::BurstEnd(cpu, gen) => {
                if gen != self.cpu_gen[cpu.idx()] {
                    self.stale += 1;
                    return;
                }
                let p = self.host.sched.rqs[cpu.idx()]
                    .curr
                    .expect("burst end on idle CPU");
                let now = self.now;
                let remaining = self.host.remaining(p);
                let ts = &mut self.tasks[p.idx()];
                // A burst ended early (a vCPU poked) leaves some unused.
                self.host.set_remaining(p, None);
                // The switch and migration cost owed is paid first.
                let ran = ts.running_since.map_or(Nanos::ZERO, |since| now - since);
                let paid = ran.min(ts.overhead);
                ts.overhead = ts.overhead - paid;
                let left = match (remaining, ts.running_since) {
                    (Some(r), Some(_)) => r - (ran - paid),
                    _ => Nanos::ZERO,
                };
                ts.running_since = None;
                match ts.body {
                    Body::Steps(_) => self.step(cpu, p),
                    Body::Notified(n) => {
                        ts.started = true;
                        self.notified_burst_end(cpu, p, n, left, paid);
                    }
                }
            }
            Ev::Timer(p) => {
                // The clock event of p's hard expiry, unless another
                // interrupt of its CPU ran the timer after its soft expiry.
                let Some(cpu) = self.hrtimers.current_base(p, self.now) else {
                    self.stale += 1;
                    return;
                };
                let d = self.timer_delay(p);
                self.hrtimer_interrupt(cpu, d);
            }
            Ev::TimerWake(p, expiry) => self.hrtimer_wakeup(p, expiry),
            Ev::ReschedIpi(cpu) => self.host.sched.scheduler_ipi(cpu),
            Ev::TtwuPending(p, flags) => {
                self.host.sched.sched_ttwu_pending(p, flags);
                self.trace_wakeup_pending(p);
            }
            Ev::Vm(e) => self.vm_event(e),
            Ev::SwitchDone(cpu) => {
                // `schedule()` loops `while (need_resched())` after
                // `__schedule()` returns (kernel/sched/core.c): a
                // reschedule requested during the switch is acted on now,
                // as the reschedule IPI's handler would.
                self.resched_deferred[cpu.idx()] = false;
                self.host.sched.scheduler_ipi(cpu);
            }
        }
    }

    /// Linux 6.12: `hrtimer_interrupt()` on `cpu` now: every host sleep timer of the CPU
    /// past its soft expiry runs (sim/hrtimer.rs); `hrtimer_wakeup()` of each
    /// follows after `delay` (the interrupt's entry, when this interrupt is
    /// the timer's own clock event; zero within the tick's).
    fn hrtimer_interrupt(&mut self, cpu: CpuId, delay: Nanos) {
        let mut due = std::mem::take(&mut self.due_timers);
        self.hrtimers.hrtimer_run_queues(cpu, self.now, &mut due);
        // A program thread whose sleep ends on an idle CPU pays
        // HostCosts::nanosleep_idle on top of its sleep's CPU time.
        let idle_cost = match self.host.sched.rqs[cpu.idx()].curr {
            None => Nanos(self.host.sched.cfg.costs.nanosleep_idle),
            Some(_) => Nanos::ZERO,
        };
        for &(p, soft) in &due {
            if idle_cost > Nanos::ZERO {
                let ts = &mut self.tasks[p.idx()];
                if matches!(ts.body, Body::Steps(Behaviour::Program { .. })) {
                    ts.overhead += idle_cost;
                }
            }
            if delay > Nanos::ZERO {
                self.queue.push(self.now + delay, Ev::TimerWake(p, soft));
            } else {
                self.hrtimer_wakeup(p, soft);
            }
        }
        due.clear();
        self.due_timers = due;
    }

    /// Linux 6.12: `hrtimer_wakeup()` of a sleeper whose timer was asked for `expiry`
    /// (its soft expiry).
    fn hrtimer_wakeup(&mut self, p: TaskId, expiry: Time) {
        if self.host.sched.try_to_wake_up(p, 0, None) {
            self.trace_wakeup(p);
            // cyclictest's latency: from the time asked for, not the wakeup.
            if self.host.sched.tasks[p.idx()].wake_time.is_some() {
                self.host.sched.tasks[p.idx()].wake_time = Some(expiry.0);
            }
        }
    }

    /// Asks the running task's behaviour what to do next and does it.
    fn step(&mut self, cpu: CpuId, p: TaskId) {
        let now = self.now;
        let ts = &mut self.tasks[p.idx()];
        let Body::Steps(behaviour) = &mut ts.body else {
            unreachable!("only a task with a behaviour is stepped");
        };
        // Only a program's threads pay their system calls: the other
        // behaviours' CPU parameters are all the CPU of an activation (as
        // conform's workers burn a cumulative CPU budget).
        let program = matches!(behaviour, Behaviour::Program { .. });
        let step = if ts.started {
            behaviour.on_burst_end(p, now, &mut self.world)
        } else {
            ts.started = true;
            behaviour.start(p, now, &mut self.world)
        };
        for w in step.wake {
            if self
                .host
                .sched
                .try_to_wake_up(w, step.wake_flags, Some(cpu))
            {
                self.trace_wakeup_from(w, Some(cpu));
            }
        }
        // The system calls' own CPU time (HostCosts::nanosleep,
        // HostCosts::futex_wake): paid like the switch, before the task's
        // work goes on (after its wakeup, for a sleep).
        if program {
            let costs = &self.host.sched.cfg.costs;
            let mut syscalls = u64::from(step.futex_wakes) * costs.futex_wake;
            if matches!(step.next, Next::Sleep(Some(_))) {
                syscalls += costs.nanosleep;
            }
            if syscalls > 0 {
                self.tasks[p.idx()].overhead += Nanos(syscalls);
            }
        }
        // kernel_clone(): the child is created on this CPU and placed by
        // wake_up_new_task()'s fork balance.
        while let Some(c) = self.world.program_forks.pop() {
            self.host.sched.sched_fork(c, cpu);
            self.host.sched.wake_up_new_task(c);
        }
        let dead = self.world.program_dead.take();
        if let Next::Sleep(Some(at)) = step.next {
            // hrtimer_nanosleep(): the range [at, at + slack].
            let slack = self.tasks[p.idx()].timer_slack;
            let hard = self
                .hrtimers
                .hrtimer_start_range_ns(p, cpu, at.max(now), slack);
            self.queue.push(hard, Ev::Timer(p));
        }
        let target = match step.next {
            Next::YieldTo(t, _) => t,
            _ => p,
        };
        let stepped = self.host.task_next(cpu, p, step.next);
        if let Some(d) = dead {
            self.host.sched.task_dead_fair(d);
        }
        match stepped {
            Stepped::Runs => self.start_burst(cpu, p),
            Stepped::Left(sw) => self.after_own_switch(cpu, p, sw),
            Stepped::YieldedTo(r) => {
                if let YieldTo::Yielded(_) = r {
                    self.trace_yield_to(cpu, p.0, target.0);
                }
                // yield_to()'s own CPU time, owed by the caller before its
                // next burst (HostCosts::yield_to).
                let cost = self.host.sched.cfg.costs.yield_to_cost(r);
                self.tasks[p.idx()].overhead += Nanos(cost);
                self.after_own_switch(cpu, p, r.switch());
            }
        }
    }

    /// After a yield/block by `p`: apply the switch, or keep `p` running.
    fn after_own_switch(&mut self, cpu: CpuId, p: TaskId, sw: Option<Switch>) {
        match sw {
            Some(sw) => self.apply_switch(sw),
            None => {
                // Still on the CPU (nothing else to run): continue.
                if self.host.sched.rqs[cpu.idx()].curr == Some(p) {
                    self.start_burst(cpu, p);
                }
            }
        }
    }

    /// Schedules the end of `p`'s burst on `cpu` (a zero-length burst asks the
    /// behaviour for its next step right away).
    fn start_burst(&mut self, cpu: CpuId, p: TaskId) {
        self.cpu_gen[cpu.idx()] += 1;
        let gen = self.cpu_gen[cpu.idx()];
        let ts = &mut self.tasks[p.idx()];
        ts.running_since = Some(self.now);
        let d = ts.overhead + self.host.remaining(p).unwrap_or(Nanos::ZERO);
        // A burst that outlasts the run (a hog's) needs no event; queuing it
        // would leave a stale entry in the heap for good.
        if self.now + d <= self.end {
            self.queue.push(self.now + d, Ev::BurstEnd(cpu, gen));
        }
    }

    fn apply_switch(&mut self, sw: Switch) {
        self.trace_switch(&sw);
        let now = self.now;
        let c = sw.cpu.idx();
        self.cpu_gen[c] += 1;
        if let Some(prev) = sw.prev {
            let ts = &mut self.tasks[prev.idx()];
            if let Some(since) = ts.running_since.take() {
                let mut ran = now - since;
                let paid = ran.min(ts.overhead);
                ts.overhead = ts.overhead - paid;
                ran = ran - paid;
                self.host.consume(prev, ran);
            }
            self.fire_sched_out_preempt_notifiers(prev, sw.prev_runnable);
        }
        self.switch_end[c] = now;
        if let Some(next) = sw.next {
            // context_switch() and, after a migration, the cache refill:
            // CPU time of the incoming task, paid before its burst goes on.
            let costs = self.host.sched.cfg.costs;
            let mut cost = costs.context_switch;
            if std::mem::take(&mut self.host.sched.tasks[next.idx()].migrated) {
                cost += costs.migration;
            }
            self.tasks[next.idx()].overhead += Nanos(cost);
            // __schedule() runs with IRQs and preemption off until the
            // switch is done: no reschedule takes effect before.
            self.switch_end[c] = now + Nanos(cost);
            // A task whose notifier starts its burst (a vCPU's VM entry)
            // needs no burst end queued here: it would only pop stale.
            if !self.fire_sched_in_preempt_notifiers(next, sw.cpu) {
                self.start_burst(sw.cpu, next);
            }
            if !self.tick_armed[c] {
                self.arm_tick(sw.cpu);
            }
        }
    }

    /// Ends the current burst of `cpu`'s task now (its unused part is kept
    /// as `remaining` until the step reads it).
    fn kick_burst(&mut self, cpu: CpuId) {
        self.kick_burst_at(cpu, self.now);
    }

    /// Ends the current burst of `cpu`'s task at `at` (superseding its
    /// queued end).
    fn kick_burst_at(&mut self, cpu: CpuId, at: Time) {
        self.cpu_gen[cpu.idx()] += 1;
        let gen = self.cpu_gen[cpu.idx()];
        self.queue.push(at, Ev::BurstEnd(cpu, gen));
    }

    /// Next tick on the jiffy grid, strictly after now; like every timer
    /// interrupt it arrives `HostCosts::timer_wake` after its expiry.
    fn arm_tick(&mut self, cpu: CpuId) {
        let late = self.host.sched.cfg.costs.timer_wake;
        let t = (self.now.0.saturating_sub(late) / self.tick + 1) * self.tick + late;
        self.queue.push(Time(t), Ev::Tick(cpu));
        self.tick_armed[cpu.idx()] = true;
    }

    /// Queues the IPIs raised by the scheduler: reschedule IPIs and wakelist
    /// activations on other CPUs, after `HostCosts::remote_wakeup`.
    #[inline(always)]
    fn send_ipis(&mut self) {
        // Most events send none: test that before a call.
        if !self.host.sched.resched_ipis.is_empty() || !self.host.sched.wakelist.is_empty() {
            self.send_ipis_queued();
        }
    }

    #[inline(never)]
    fn send_ipis_queued(&mut self) {
        let d = Nanos(self.host.sched.cfg.costs.remote_wakeup);
        // drain(), not take(): the vectors keep their buffers (no allocation
        // per event).
        for cpu in self.host.sched.resched_ipis.drain(..) {
            self.queue.push(self.now + d, Ev::ReschedIpi(cpu));
        }
        for (p, flags) in self.host.sched.wakelist.drain(..) {
            self.queue.push(self.now + d, Ev::TtwuPending(p, flags));
        }
    }

    /// Serves what the event left pending: IPIs, HRTICK requests and
    /// reschedule requests, in the order they were raised.
    #[inline(always)]
    fn serve_resched(&mut self) {
        // Most events leave no IPI and no HRTICK request, and often no
        // reschedule: test that before a call.
        let first = if self.host.sched.resched_ipis.is_empty()
            && self.host.sched.wakelist.is_empty()
            && self.host.sched.hrtick_requests.is_empty()
        {
            match self.host.sched.take_resched() {
                None => return,
                cpu => cpu,
            }
        } else {
            None
        };
        self.serve_resched_pending(first);
    }

    /// [`Self::serve_resched`] with something pending; `first` is a
    /// reschedule request already taken (nothing else was pending then).
    #[inline(never)]
    fn serve_resched_pending(&mut self, mut first: Option<CpuId>) {
        loop {
            let cpu = match first.take() {
                Some(cpu) => cpu,
                None => {
                    self.send_ipis();
                    let queue = &mut self.queue;
                    self.host.hrtick_start(self.now, self.end, |cpu, at, gen| {
                        queue.push(at, Ev::HrTick(cpu, gen));
                    });
                    let Some(cpu) = self.host.next_resched() else {
                        break;
                    };
                    cpu
                }
            };
            if !self.host.sched.rqs[cpu.idx()].need_resched {
                continue;
            }
            if self.switch_end[cpu.idx()] > self.now {
                // Mid-switch: TIF_NEED_RESCHED stays set and is acted on
                // when the switch is done (`Ev::SwitchDone`).
                if !std::mem::replace(&mut self.resched_deferred[cpu.idx()], true) {
                    let at = self.switch_end[cpu.idx()];
                    self.queue.push(at, Ev::SwitchDone(cpu));
                }
                continue;
            }
            let this = self.host.sched.this_cpu.replace(cpu);
            if let Some(sw) = self.host.sched.schedule(cpu) {
                self.apply_switch(sw);
            }
            self.host.sched.this_cpu = this;
        }
        self.send_ipis();
    }

    /// Task ids in creation order with their cgroup paths (for reports).
    pub fn task_ids(&self) -> impl Iterator<Item = TaskId> {
        (0..self.tasks.len() as u32).map(TaskId)
    }
}

/// The CPU an event happens on (None for a sleeping task's timer).
fn ev_cpu(ev: Ev) -> Option<CpuId> {
    match ev {
        Ev::Tick(c)
        | Ev::BurstEnd(c, _)
        | Ev::HrTick(c, _)
        | Ev::ReschedIpi(c)
        | Ev::SwitchDone(c) => Some(c),
        Ev::Timer(_) | Ev::TimerWake(..) | Ev::TtwuPending(..) | Ev::Vm(_) => None,
    }
}

mod build;
mod checks;
mod hrtimer;
mod level;
mod result;
mod tracing;
mod vm;

#[cfg(test)]
impl Simulator {
    /// scenarios/nested/2x2-mutex.toml, built and not yet run: the nested
    /// guest the unit tests of sim/ poke at.
    pub(crate) fn nested_2x2_mutex() -> Simulator {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../scenarios/nested/2x2-mutex.toml");
        let sc = crate::scenario::Scenario::load(&path).unwrap_or_else(|e| panic!("{e}"));
        Simulator::new(&sc)
    }
}
