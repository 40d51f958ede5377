//! oversub: a deterministic simulator of an oversubscribed KVM host (the
//! `oversub-core` crate; the command line and the Python bindings are leaves
//! over it). It reads scenario files and writes none, spawns nothing, draws
//! no progress and installs no signal handler (the CLI does both).
//!
//! * `engine`: virtual time, the event queue, seeded randomness;
//! * `sched`: the scheduler of every level (Linux EEVDF fair class, cgroups, SMP,
//!   yield_to) and its self-checks (`sched::invariants`);
//! * `task`: host task behaviours and the program interpreter;
//! * `workload`: the program IR and its front ends (rt-app JSON);
//! * `scenario`: the TOML scenario format;
//! * `sim`: the simulation loop; `report`: the record of a run (tables, JSON);
//! * `trace`: tracepoint-named events and sinks; `stats`: CIs, paired deltas;
//!   `sweep`: parallel sweeps in memory, their metrics and summaries;
//!   `interrupt`: the stop flag the runs poll (the CLI sets it on Ctrl-C);
//!   `limits`: the bounds on every input and run (docs/limits.md);
//! * `error`: what a run can fail with ([`RunError`]);
//! * `run`: the one run entry point ([`run()`], [`RunOptions`], [`RunError`])
//!   that the CLI, sweeps and the Python bindings call; `prelude`: the names
//!   a front end needs.

pub mod engine;
pub mod error;
pub mod guest;
pub mod interrupt;
pub mod kvm;
pub mod limits;
pub mod report;
pub mod scenario;
pub mod sched;
pub mod sim;
pub mod stats;
pub mod sweep;
pub mod task;
pub mod trace;
pub mod workload;

pub mod run;

pub use run::{run, Level, RunError, RunOptions};

/// What a front end needs to load, run and read a scenario.
pub mod prelude {
    pub use crate::engine::{Nanos, Time};
    pub use crate::kvm::{VcpuIdx, VmId};
    pub use crate::report::Report;
    pub use crate::run::{run, Level, RunError, RunOptions};
    pub use crate::scenario::Scenario;
    pub use crate::sweep::spec::SweepSpec;
}

use scenario::Scenario;

/// [`run`] with a seed and a duration override that cannot be interrupted
/// (it ignores [`interrupt`]): a run over its event budget or one that
/// loops at one instant is its [`RunError`], as is a failed invariant check.
pub fn run_scenario(
    sc: &Scenario,
    seed: Option<u64>,
    duration: Option<engine::Nanos>,
) -> Result<report::Report, RunError> {
    let mut never = |_| true;
    let opts = RunOptions::default()
        .seed(seed)
        .duration(duration)
        .poll(&mut never);
    run(sc, opts)
}

/// Why a traced run gave no trace.
#[derive(Debug)]
pub enum TraceRunError {
    /// The run stopped early ([`RunError`]).
    Stop(RunError),
    /// Writing the trace failed.
    Write(std::io::Error),
}

/// Runs `sc` for `d`, streaming the Chrome/Perfetto JSON of the events in
/// `window` to `w` as the run goes (memory bounded whatever the duration).
/// `poll(now, bytes written)` is called every few thousand events; false
/// stops the run. The trace is whole when this returns Ok.
pub fn run_traced<W: std::io::Write + Send + 'static>(
    sc: &scenario::Scenario,
    d: engine::Nanos,
    window: (u64, u64),
    w: W,
    poll: &mut dyn FnMut(engine::Time, u64) -> bool,
) -> Result<report::Report, TraceRunError> {
    use std::sync::{Arc, Mutex};
    let mut sim = sim::Simulator::new(sc);
    let writer =
        trace::chrome::ChromeWriter::new(w, sim.task_names(), sc.host.cpus, window.0, window.1);
    let shared = Arc::new(Mutex::new(Some(writer)));
    sim.set_trace(Box::new(trace::SharedSink(Arc::clone(&shared))));
    let bytes = |s: &Mutex<Option<trace::chrome::ChromeWriter<W>>>| {
        s.lock()
            .ok()
            .and_then(|g| g.as_ref().map(|w| w.bytes))
            .unwrap_or(0)
    };
    let mut r = sim
        .run_polled(d, &mut |t| poll(t, bytes(&shared)))
        .map_err(TraceRunError::Stop)?;
    drop(sim);
    r.seed = sc.host.seed;
    r.record_scenario(sc, Some(d));
    let writer = shared
        .lock()
        .ok()
        .and_then(|mut g| g.take())
        .ok_or_else(|| TraceRunError::Write(std::io::Error::other("trace sink lost")))?;
    let end = window.1.min(d.0);
    writer.finish(end).map_err(TraceRunError::Write)?;
    Ok(r)
}
