//! The CLI's integration tests, one binary: each module tests one command
//! or contract through the built `oversub` (and `oversub-bench`) binaries;
//! [`common`] holds what they share.

mod bench_harness;
mod bounds;
mod cli_conventions;
mod common;
mod conform_cli;
mod determinism_and_cli;
mod docs;
mod hostile_input;
mod new_inputs;
mod perfetto_import;
mod programs;
mod set_cli;
mod sweep;
mod trace;
