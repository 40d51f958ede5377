//! oversub: a deterministic simulator of an oversubscribed KVM host (the
//! `oversub-core` crate; the command line and the Python bindings are leaves
//! over it). It reads scenario files and writes none, spawns nothing, draws
//! no progress and installs no signal handler (the CLI does both).
//!
//! * `engine`: virtual time, the event queue, seeded randomness;
//! * `sched`: the host scheduler (Linux EEVDF fair class, cgroups, SMP, yield_to);
//! * `task`: host task behaviours and the program interpreter;
//! * `workload`: the program IR and its front ends (rt-app JSON);
//! * `scenario`: the TOML scenario format;
//! * `sim`: the simulation loop; `report`: the record of a run (tables, JSON);
//!   `invariants`: self-checks;
//! * `trace`: tracepoint-named events and sinks; `stats`: CIs, paired deltas;
//!   `sweep`: parallel sweeps in memory, their metrics and summaries;
//!   `interrupt`: the stop flag the runs poll (the CLI sets it on Ctrl-C);
//! * `error`: what a run can fail with ([`RunError`]);
//! * `run`: the one run entry point ([`run()`], [`RunOptions`], [`RunError`])
//!   that the CLI, sweeps and the Python bindings call; `prelude`: the names
//!   a front end needs.

pub mod engine;
pub mod error;
pub mod guest;
pub mod interrupt;
pub mod invariants;
pub mod kvm;
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
/// (it ignores [`interrupt`]); it panics when an invariant check fails.
pub fn run_scenario(
    sc: &Scenario,
    seed: Option<u64>,
    duration: Option<engine::Nanos>,
) -> report::Report {
    let mut never = |_| true;
    let opts = RunOptions::default()
        .seed(seed)
        .duration(duration)
        .poll(&mut never);
    run(sc, opts).unwrap_or_else(|e| panic!("{e}"))
}

/// Runs `sc` ([`run`] with `opts`) with a vector sink over `window` and
/// returns the report and the Chrome/Perfetto JSON text.
pub fn run_traced(
    sc: &Scenario,
    opts: RunOptions<'_>,
    window: (u64, u64),
) -> Result<(report::Report, String), RunError> {
    let shared = std::sync::Arc::new(std::sync::Mutex::new(trace::VecSink::window(
        window.0, window.1,
    )));
    let d = opts.duration.unwrap_or(sc.host.duration);
    let r = run(sc, opts.trace(Box::new(trace::Shared(shared.clone()))))?;
    let names: Vec<String> = r.tasks.iter().map(|t| t.name.clone()).collect();
    let ev = shared
        .lock()
        .map(|mut v| std::mem::take(&mut v.events))
        .unwrap_or_default();
    let end = window.1.min(d.0);
    let json = trace::chrome::to_json(&ev, &names, r.cpus_n, end).to_string();
    Ok((r, json))
}
