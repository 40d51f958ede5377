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
//!   `interrupt`: the stop flag the runs poll (the CLI sets it on Ctrl-C).

pub mod engine;
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

use scenario::Scenario;

/// Runs a scenario with an optional seed and duration override.
pub fn run_scenario(
    sc: &Scenario,
    seed: Option<u64>,
    duration: Option<engine::Nanos>,
) -> report::Report {
    let mut sc = sc.clone();
    if let Some(s) = seed {
        sc.host.seed = s;
    }
    let d = duration.unwrap_or(sc.host.duration);
    let mut sim = sim::Simulator::new(&sc);
    let mut r = sim.run(d);
    r.seed = sc.host.seed;
    r.record_scenario(&sc, duration);
    r
}

/// [`run_scenario`] that stops (None) when Ctrl-C or SIGTERM arrives
/// ([`interrupt::interrupted`]), polled every few thousand events.
pub fn run_scenario_interruptible(
    sc: &Scenario,
    seed: Option<u64>,
    duration: Option<engine::Nanos>,
) -> Option<report::Report> {
    let mut sc = sc.clone();
    if let Some(s) = seed {
        sc.host.seed = s;
    }
    let d = duration.unwrap_or(sc.host.duration);
    let mut sim = sim::Simulator::new(&sc);
    let mut r = sim.run_polled(d, &mut |_| !interrupt::interrupted())?;
    r.seed = sc.host.seed;
    r.record_scenario(&sc, duration);
    Some(r)
}

/// Runs `sc` for `d` with a vector sink over `window` and returns the report
/// and the Chrome/Perfetto JSON text.
pub fn run_traced(
    sc: &scenario::Scenario,
    d: engine::Nanos,
    window: (u64, u64),
) -> (report::Report, String) {
    let shared = std::sync::Arc::new(std::sync::Mutex::new(trace::VecSink::window(
        window.0, window.1,
    )));
    let mut sim = sim::Simulator::new(sc);
    sim.set_trace(Box::new(trace::Shared(shared.clone())));
    let mut r = sim.run(d);
    r.seed = sc.host.seed;
    r.record_scenario(sc, Some(d));
    let names: Vec<String> = r.tasks.iter().map(|t| t.name.clone()).collect();
    let ev = shared
        .lock()
        .map(|mut v| std::mem::take(&mut v.events))
        .unwrap_or_default();
    let end = window.1.min(d.0);
    let json = trace::chrome::to_json(&ev, &names, r.cpus_n, end).to_string();
    (r, json)
}
