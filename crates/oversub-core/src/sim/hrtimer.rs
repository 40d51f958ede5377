//! The host tasks' sleep hrtimers and their slack (kernel/time/hrtimer.c,
//! Linux 6.12; unchanged in this respect since 2.6.28).
//!
//! `hrtimer_nanosleep()` (clock_nanosleep, nanosleep, rt-app's `sleep` and
//! `timer`, cyclictest) arms the sleeper's timer over a range: the soft
//! expiry is the time asked for, the hard expiry that plus the task's
//! `timer_slack_ns` (50 us unless `prctl(PR_SET_TIMERSLACK)` changed it; 0
//! for RT and deadline tasks, which the model does not have). The clock
//! event device is programmed for the earliest *hard* expiry of the CPU's
//! timers (`hrtimer_reprogram`), and every hrtimer interrupt of that CPU
//! runs each timer whose *soft* expiry has passed (`__hrtimer_run_queues`).
//! So a sleeper wakes at its hard expiry on an otherwise quiet CPU, and
//! earlier when another interrupt of its CPU (the tick of a busy CPU,
//! another task's timer, HRTICK) comes after its soft expiry.
//!
//! The timer is queued on the CPU the task went to sleep on
//! (`get_target_base`: the current CPU is not idle while its task arms the
//! timer, so `get_nohz_timer_target` keeps it there).

use crate::engine::{Nanos, Time};
use crate::sched::{CpuId, TaskId};

pub use crate::task::DEFAULT_TIMER_SLACK;

#[derive(Clone, Copy, Debug)]
struct Armed {
    soft: Time,
    hard: Time,
    cpu: CpuId,
}

/// The per-CPU `hrtimer_cpu_base`s, holding the sleep timers of host tasks.
pub(super) struct HrtimerBases {
    /// Sleeping tasks with an armed timer, per CPU, in arming order.
    queued: Vec<Vec<TaskId>>,
    /// Each task's armed timer, if any.
    armed: Vec<Option<Armed>>,
}

impl HrtimerBases {
    pub(super) fn new(cpus: usize) -> HrtimerBases {
        HrtimerBases {
            queued: vec![Vec::new(); cpus],
            armed: Vec::new(),
        }
    }

    /// Makes room for task `p`'s timer.
    pub(super) fn add_task(&mut self, p: TaskId) {
        if self.armed.len() <= p.idx() {
            self.armed.resize(p.idx() + 1, None);
        }
    }

    /// Linux 6.12: `hrtimer_start_range_ns()` of `p`'s sleep timer on `cpu`: soft
    /// expiry `soft`, hard expiry `soft + slack`. Returns the hard expiry
    /// (when the clock event fires if nothing runs the timer earlier).
    pub(super) fn hrtimer_start_range_ns(
        &mut self,
        p: TaskId,
        cpu: CpuId,
        soft: Time,
        slack: Nanos,
    ) -> Time {
        let hard = soft + slack;
        if let Some(old) = self.armed[p.idx()].take() {
            self.queued[old.cpu.idx()].retain(|&q| q != p);
        }
        self.armed[p.idx()] = Some(Armed { soft, hard, cpu });
        self.queued[cpu.idx()].push(p);
        hard
    }

    /// The CPU base of `p`'s timer if the clock event of its hard expiry at
    /// `now` is still the timer's (not run earlier by another interrupt, not
    /// re-armed).
    pub(super) fn current_base(&self, p: TaskId, now: Time) -> Option<CpuId> {
        self.armed
            .get(p.idx())
            .copied()
            .flatten()
            .filter(|a| a.hard == now)
            .map(|a| a.cpu)
    }

    /// Linux 6.12: `__hrtimer_run_queues()` of `cpu` at `now`: removes every timer whose
    /// soft expiry has passed and appends (task, soft expiry) to `out`, in
    /// the order the kernel's timerqueue runs them (by hard expiry, ties in
    /// arming order).
    pub(super) fn hrtimer_run_queues(
        &mut self,
        cpu: CpuId,
        now: Time,
        out: &mut Vec<(TaskId, Time)>,
    ) {
        if self.queued[cpu.idx()].is_empty() {
            return;
        }
        let start = out.len();
        let armed = &mut self.armed;
        self.queued[cpu.idx()].retain(|&p| {
            let a = armed[p.idx()].expect("a queued timer is armed");
            if a.soft <= now {
                out.push((p, a.soft));
            }
            a.soft > now
        });
        // Stable: equal hard expiries keep their arming order.
        let due = &mut out[start..];
        due.sort_by_key(|&(p, _)| armed[p.idx()].map(|a| a.hard));
        for &(p, _) in due.iter() {
            armed[p.idx()] = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(us: u64) -> Time {
        Time(us * 1_000)
    }

    #[test]
    fn a_timer_runs_from_its_soft_expiry_and_its_event_is_its_hard_expiry() {
        let mut b = HrtimerBases::new(2);
        b.add_task(TaskId(0));
        let hard = b.hrtimer_start_range_ns(TaskId(0), CpuId(1), t(100), DEFAULT_TIMER_SLACK);
        assert_eq!(hard, t(150));
        assert_eq!(b.current_base(TaskId(0), t(150)), Some(CpuId(1)));
        let mut out = Vec::new();
        // Another CPU's interrupt, or one before the soft expiry: nothing.
        b.hrtimer_run_queues(CpuId(0), t(120), &mut out);
        b.hrtimer_run_queues(CpuId(1), t(99), &mut out);
        assert!(out.is_empty());
        // The tick of its CPU at 120 us runs it: its hard event is stale.
        b.hrtimer_run_queues(CpuId(1), t(120), &mut out);
        assert_eq!(out, vec![(TaskId(0), t(100))]);
        assert_eq!(b.current_base(TaskId(0), t(150)), None);
    }

    #[test]
    fn due_timers_run_in_hard_expiry_order() {
        let mut b = HrtimerBases::new(1);
        for p in 0..3 {
            b.add_task(TaskId(p));
        }
        b.hrtimer_start_range_ns(TaskId(0), CpuId(0), t(100), Nanos::from_us(50));
        b.hrtimer_start_range_ns(TaskId(1), CpuId(0), t(110), Nanos(1));
        b.hrtimer_start_range_ns(TaskId(2), CpuId(0), t(130), Nanos(1));
        let mut out = Vec::new();
        b.hrtimer_run_queues(CpuId(0), t(120), &mut out);
        assert_eq!(out, vec![(TaskId(1), t(110)), (TaskId(0), t(100))]);
        // Re-arming moves a timer: the old event is stale.
        b.hrtimer_start_range_ns(TaskId(2), CpuId(0), t(140), Nanos(1));
        assert_eq!(b.current_base(TaskId(2), t(130) + Nanos(1)), None);
        assert!(b.current_base(TaskId(2), t(140) + Nanos(1)).is_some());
    }
}
