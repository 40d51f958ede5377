//! The integration tests of the core, one binary (one link, one run) with
//! the helpers they share in `tests/common`. Each module is a former test
//! file; run one with `cargo test -p oversub-core --test integration MODULE::`.

#[path = "../common/mod.rs"]
mod common;

mod apic_regimes;
mod architecture;
mod cfs_behaviour;
mod csd_queue;
mod event_budget;
mod flat_behaviour;
mod futex_wake_preempt;
mod fuzz;
mod guest_haltpoll;
mod hackbench_pipes;
mod host_costs;
mod ipi_variants;
mod kvm_fixes;
mod kvm_integration;
mod level_contract;
mod load_balance;
mod nested_guests;
mod periodic_cycles;
mod program_properties;
mod properties;
mod pv_queue_head;
mod pvoff_modes;
mod remote_wakeup_ipis;
mod sched_behaviour;
mod wake_preempt_versions;
mod workloads;
mod yield_policies;
mod yield_vectors;
