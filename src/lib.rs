//! oversub: a deterministic simulator of an oversubscribed KVM host.
//!
//! * `engine`: virtual time, the event queue, seeded randomness;
//! * `sched`: the host scheduler (Linux EEVDF fair class, cgroups, SMP, yield_to);
//! * `task`: host task behaviours and the program interpreter;
//! * `workload`: the program IR and its front ends (rt-app JSON);
//! * `scenario`: the TOML scenario format;
//! * `sim`: the simulation loop; `report`: results; `invariants`: self-checks.

pub mod conform;
pub mod engine;
pub mod guest;
pub mod invariants;
pub mod kvm;
pub mod report;
pub mod reproduce;
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
