//! What a run can fail with ([`RunError`]), below both the simulator that
//! raises it and the run entry point (`run.rs`) that returns it.

use crate::engine::Time;
use crate::kvm::VmId;
use std::fmt;

/// The kernel level an invariant belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    /// The host scheduler.
    Host,
    /// KVM's per-vCPU state against the host scheduler's view of its task.
    Kvm,
    /// The guest scheduler of a nested guest.
    Guest(VmId),
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Level::Host => write!(f, "host"),
            Level::Kvm => write!(f, "kvm"),
            Level::Guest(vm) => write!(f, "guest of {vm}"),
        }
    }
}

/// Why a run gave no report.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RunError {
    /// The poll asked to stop (Ctrl-C, SIGTERM), at this virtual time.
    Interrupted { at: Time },
    /// An invariant check failed: a bug of the model, not of the scenario.
    InvariantBroken {
        level: Level,
        at: Time,
        what: String,
    },
    /// More events than the simulator's event budget by simulated time
    /// `at` (`Simulator::event_budget`): the model cannot advance
    /// simulated time at a useful rate.
    EventBudget {
        at: Time,
        events: u64,
        budget: u64,
        cpus: u64,
    },
    /// A program thread executed more than
    /// [`crate::limits::MAX_ZERO_TIME_STEPS`] events at virtual time `at`
    /// without simulated time passing (`ProgramRt::zero_time_loop`).
    ZeroTimeLoop {
        level: Level,
        thread: String,
        at: Time,
    },
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunError::Interrupted { at } => write!(f, "interrupted at {at}"),
            RunError::InvariantBroken { level, at, what } => {
                write!(f, "{level} invariant violated at {at}: {what}")
            }
            RunError::EventBudget {
                at,
                events,
                budget,
                cpus,
            } => write!(
                f,
                "stopped at {at} simulated: {events} events exceed the budget of {budget} \
                 for {cpus} CPUs and vCPUs (allowed {} events per CPU per simulated second, plus {}): \
                 simulated time barely advances (zero exit, entry and switch costs? ple_window = 0?)",
                crate::limits::MAX_EVENTS_PER_CPU_SECOND,
                crate::limits::EVENT_ALLOWANCE
            ),
            RunError::ZeroTimeLoop { level, thread, at } => write!(
                f,
                "stopped at {at} simulated: {level} thread {thread} executed more than {} events \
                 without simulated time passing (events that take no time loop here, e.g. an \
                 rt-app barrier passed alone: add a run or sleep to the loop)",
                crate::limits::MAX_ZERO_TIME_STEPS
            ),
        }
    }
}

impl std::error::Error for RunError {}
