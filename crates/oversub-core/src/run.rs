//! The one way to run a scenario: [`run`] applies the options (seed,
//! duration, invariant checks, a poll for progress and Ctrl-C, a trace
//! sink) to a validated scenario, runs it and records the scenario in the
//! report. The CLI, sweeps, the Python bindings and the benchmarks all call
//! it; a run that cannot finish says why in a [`RunError`].

use crate::engine::{Nanos, Time};
pub use crate::error::{Level, RunError};
use crate::report::Report;
use crate::scenario::Scenario;
use crate::trace::TraceSink;
use std::borrow::Cow;

/// How to run a scenario. `RunOptions::default()` runs it as written: its
/// own seed and duration, invariant checks as the build has them (on in
/// debug builds), no trace, stopping when [`crate::interrupt`] is set.
#[derive(Default)]
pub struct RunOptions<'a> {
    /// Replaces `[host] seed`.
    pub seed: Option<u64>,
    /// Replaces `[host] duration` (and is recorded in the report's scenario).
    pub duration: Option<Nanos>,
    /// Checks the invariants of every level after every event (`--check`).
    pub check_invariants: bool,
    /// Called with the virtual time every [`crate::sim::Simulator::POLL_EVENTS`]
    /// events; returning false stops the run ([`RunError::Interrupted`]).
    /// Without one the run stops when [`crate::interrupt::interrupted`].
    pub poll: Option<&'a mut dyn FnMut(Time) -> bool>,
    /// Where the run writes its trace events (none: no cost).
    pub trace: Option<Box<dyn TraceSink>>,
}

impl<'a> RunOptions<'a> {
    pub fn seed(mut self, seed: Option<u64>) -> Self {
        self.seed = seed;
        self
    }

    pub fn duration(mut self, d: Option<Nanos>) -> Self {
        self.duration = d;
        self
    }

    pub fn check_invariants(mut self, on: bool) -> Self {
        self.check_invariants = on;
        self
    }

    pub fn poll(mut self, poll: &'a mut dyn FnMut(Time) -> bool) -> Self {
        self.poll = Some(poll);
        self
    }

    pub fn trace(mut self, sink: Box<dyn TraceSink>) -> Self {
        self.trace = Some(sink);
        self
    }
}

/// Runs `sc` with `opts`: the report carries the seed used and the
/// scenario as run (`Report::record_scenario`).
pub fn run(sc: &Scenario, opts: RunOptions<'_>) -> Result<Report, RunError> {
    let RunOptions {
        seed,
        duration,
        check_invariants,
        poll,
        trace,
    } = opts;
    let sc: Cow<Scenario> = match seed {
        Some(s) if s != sc.host.seed => {
            let mut c = sc.clone();
            c.host.seed = s;
            Cow::Owned(c)
        }
        _ => Cow::Borrowed(sc),
    };
    let d = duration.unwrap_or(sc.host.duration);
    let mut sim = crate::sim::Simulator::new(&sc);
    if check_invariants {
        sim.set_check_invariants(true);
    }
    if let Some(sink) = trace {
        sim.set_trace(sink);
    }
    let mut stop_flag = |_: Time| !crate::interrupt::interrupted();
    let poll: &mut dyn FnMut(Time) -> bool = match poll {
        Some(p) => p,
        None => &mut stop_flag,
    };
    let mut r = sim.run_polled(d, poll)?;
    r.seed = sc.host.seed;
    r.record_scenario(&sc, duration);
    Ok(r)
}
