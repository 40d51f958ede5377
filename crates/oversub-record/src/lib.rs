//! `oversub record`: runs a real program on this machine under tracefs and
//! writes its measured profile (`profile.json`) and a thread program derived
//! from it (`workload.json`, which the simulator runs). This is the only
//! crate of the workspace that touches the operating system's tracing; the
//! simulator core stays free of it. docs/workloads.md, "oversub record",
//! says what each field is derived from.

pub mod bounds;
pub mod derive;
mod failure;
pub mod hist;
mod options;
pub mod outdir;
mod output;
pub mod parse;
pub mod profile;
mod record;
mod rederive;
pub mod steady;
pub mod tracefs;
mod write;

pub use failure::Failure;
pub use options::{parse_duration, Options, DEFAULT_BUFFER_KB, DEFAULT_MAX_EVENTS, MAX_DURATION};
pub use output::{ops_from, MAX_OUTPUT_BYTES};
pub use record::record;
pub use rederive::{derive_dir, MAX_PROFILE_BYTES};
