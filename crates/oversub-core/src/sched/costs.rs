//! The host's wake-path and switch costs (`[host.costs]`): the time the kernel
//! spends between a scheduling decision and the chosen task running, which a
//! model that times decisions only would take as zero.
//!
//! Each cost is charged where the kernel pays it (docs/model.md, "Host
//! costs"):
//! * `timer_wake`: hrtimer expiry -> timer interrupt -> `hrtimer_wakeup()` ->
//!   `try_to_wake_up()`; the wakeup happens this long after the expiry
//!   (the simulator delays the wakeup event);
//! * `idle_exit`: added to `timer_wake` when the timer's CPU was idle (leaving
//!   the idle state: in a VM, the halted vCPU being woken by its host);
//! * `context_switch`: CPU time of `context_switch()` (and the rest of the
//!   switch path), charged to the incoming task as the kernel does
//!   (`exec_start` is set before `switch_to()`): the task's work resumes this
//!   much later and its wakeup-latency sample ends when the switch is done;
//! * `remote_wakeup`: a wakeup placed on another, idle CPU goes through
//!   `ttwu_queue_wakelist()`: the task is activated there
//!   (`sched_ttwu_pending()`) this long later; a `resched_curr()` of another
//!   CPU (the reschedule IPI) takes effect this long later;
//! * `migration`: extra CPU time on a task's first run after it changed CPU
//!   (cache and TLB refill), charged like the switch;
//! * `yield_to`: CPU time of one `yield_to()` call (kernel/sched/syscalls.c)
//!   that got past its -ESRCH test: `p->pi_lock`, `double_rq_lock()`, the
//!   target checks, `yield_to_task_fair()` and `resched_curr()`, charged to
//!   the caller (the yielding vCPU as exit overhead, a host task before its
//!   next burst); the `schedule()` of a successful yield is the switch.
//! * `nanosleep`: CPU time of a sleep on an hrtimer
//!   (`clock_nanosleep()`/`nanosleep()` -> `hrtimer_nanosleep()` ->
//!   `do_nanosleep()`: arming the timer, which reprograms the clock event
//!   device, and the return after the wakeup, Linux 6.12.117 and 6.18 alike)
//!   beyond the switch, charged to the sleeper like the switch (paid when it
//!   next runs, before its work goes on);
//! * `nanosleep_idle`: added to `nanosleep` when the sleeper's timer fires
//!   on an idle CPU (the first switch out of idle and the return path on a
//!   CPU that was halted: in a VM, the vCPU woken by its host);
//! * `futex_wake`: CPU time of a FUTEX_WAKE system call that wakes a waiter
//!   (`futex_wake()` -> `wake_up_q()` -> `try_to_wake_up()`, 6.12.117 and
//!   6.18 alike), charged to the waker after the wakeup, before its work
//!   goes on.
//!
//! The defaults are medians measured on this project's machine kind with
//! `oversub calibrate` (docs/model.md); `oversub calibrate` prints the
//! machine's own values as a `[host.costs]` table.

/// The costs, in nanoseconds. `Default` is the documented default set;
/// [`HostCosts::ZERO`] is a host whose wake path and switches are free.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostCosts {
    pub timer_wake: u64,
    pub idle_exit: u64,
    pub context_switch: u64,
    pub remote_wakeup: u64,
    pub migration: u64,
    pub yield_to: u64,
    pub nanosleep: u64,
    pub nanosleep_idle: u64,
    pub futex_wake: u64,
}

impl HostCosts {
    /// A host whose wake path, switches and migrations cost nothing.
    pub const ZERO: HostCosts = HostCosts {
        timer_wake: 0,
        idle_exit: 0,
        context_switch: 0,
        remote_wakeup: 0,
        migration: 0,
        yield_to: 0,
        nanosleep: 0,
        nanosleep_idle: 0,
        futex_wake: 0,
    };

    /// The keys of `[host.costs]`, in table order.
    pub const NAMES: [&'static str; 9] = [
        "timer_wake",
        "idle_exit",
        "context_switch",
        "remote_wakeup",
        "migration",
        "yield_to",
        "nanosleep",
        "nanosleep_idle",
        "futex_wake",
    ];

    /// The cost named `name` (one of [`HostCosts::NAMES`]).
    pub fn get_mut(&mut self, name: &str) -> Option<&mut u64> {
        Some(match name {
            "timer_wake" => &mut self.timer_wake,
            "idle_exit" => &mut self.idle_exit,
            "context_switch" => &mut self.context_switch,
            "remote_wakeup" => &mut self.remote_wakeup,
            "migration" => &mut self.migration,
            "yield_to" => &mut self.yield_to,
            "nanosleep" => &mut self.nanosleep,
            "nanosleep_idle" => &mut self.nanosleep_idle,
            "futex_wake" => &mut self.futex_wake,
            _ => return None,
        })
    }

    /// The values in [`HostCosts::NAMES`] order.
    pub fn values(&self) -> [u64; 9] {
        [
            self.timer_wake,
            self.idle_exit,
            self.context_switch,
            self.remote_wakeup,
            self.migration,
            self.yield_to,
            self.nanosleep,
            self.nanosleep_idle,
            self.futex_wake,
        ]
    }

    /// The CPU time `yield_to()` (kernel/sched/core.c, Linux 6.12) cost its
    /// caller: none for a -ESRCH (both runqueues hold one task, tested
    /// before `double_rq_lock()`), `yield_to` otherwise (a target found on
    /// a CPU is refused after the locks, so that refusal pays too).
    pub fn yield_to_cost(&self, r: crate::sched::core::YieldTo) -> u64 {
        match r {
            crate::sched::core::YieldTo::Esrch => 0,
            _ => self.yield_to,
        }
    }
}

impl Default for HostCosts {
    /// Medians measured with `oversub calibrate --samples 1500` (three runs,
    /// in its own cgroup) on the project's machine kind: 2 vCPUs under KVM,
    /// Linux 6.18, HZ=250, load average ~11 from other jobs (docs/model.md,
    /// "Host costs"): timer wake against a hog 17.3-17.4 us, idle 28-42 us,
    /// pipe hop 2.65-2.69 us, cross-CPU wakeup 25.6-29.4 us.
    fn default() -> Self {
        HostCosts {
            timer_wake: 14_700,
            idle_exit: 18_000,
            context_switch: 2_700,
            // Measured 24 us (cross-CPU wakeup 25.6-29.4 us), but 0 by
            // default so that existing results do not move; with it, the
            // rt-app mutex pair of tests/programs.rs shows lock barging
            // (docs/model.md, "Host costs"), as the kernel does.
            remote_wakeup: 0,
            migration: 0,
            // Not probed by `oversub calibrate` (no user-space caller):
            // an estimate from a proxy measured on this machine kind
            // (docs/model.md, "Host costs"): the in-kernel sched_yield() of a
            // SCHED_FIFO task alone in its class (rq lock, the class's yield,
            // a schedule() that keeps the task), median 1.00 us between the
            // syscall tracepoints, minus 0.65 us for getppid() measured the
            // same way.
            yield_to: 350,
            nanosleep: NANOSLEEP_DEFAULT,
            nanosleep_idle: NANOSLEEP_IDLE_DEFAULT,
            futex_wake: FUTEX_WAKE_DEFAULT,
        }
    }
}

/// Default `nanosleep`: the median of eight `oversub calibrate --samples
/// 1500` runs on the project's machine kind (2 vCPUs under KVM, Linux
/// 6.18, load average ~16 from other jobs): CPU across a sleep against a
/// hog 12.8-14.5 us (means over CPUs 0 and 1) minus the pipe hop, 10.2-11.9
/// us (docs/model.md, "Host costs").
const NANOSLEEP_DEFAULT: u64 = 10_900;
/// Default `nanosleep_idle`: median of five runs (as `nanosleep`): CPU
/// across a sleep on idle CPU 0 minus against a hog, 3.6-7.1 us.
const NANOSLEEP_IDLE_DEFAULT: u64 = 6_200;
/// Default `futex_wake`: median of eight runs (as `nanosleep`), 1.9-2.8 us.
const FUTEX_WAKE_DEFAULT: u64 = 2_400;
