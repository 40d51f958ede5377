//! Workload inputs and the program IR they become (docs/workloads.md).
//!
//! * `ir`: validated thread programs plus a fidelity record;
//! * `rtapp`: the rt-app 1.0 JSON front end (Debian's `rt-app`), with the
//!   documented extensions for guest-kernel behaviour;
//! * `json`: the JSON dialect rt-app reads (comments, ordered keys).
//!
//! This layer only describes programs: running them is `task::program`'s
//! business, so nothing here knows the scheduler or the simulator.

pub mod ir;
pub mod json;
pub mod rtapp;

pub use ir::{Event, Fidelity, FidelityNote, Phase, Program, Thread};

/// An input error: the field (a JSON path) and what is wrong, allowed values
/// included. The caller adds the file name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputError {
    pub field: String,
    pub message: String,
}

impl InputError {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> InputError {
        InputError {
            field: field.into(),
            message: message.into(),
        }
    }
}

impl std::fmt::Display for InputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.field.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "{}: {}", self.field, self.message)
        }
    }
}
