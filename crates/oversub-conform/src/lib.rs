//! `oversub conform` and `oversub calibrate`: host-only scenarios run on the
//! real kernel and in the simulator, side by side, comparing CPU shares,
//! wakeup latencies and migration rates (docs/conformance.md); and the host
//! costs (`[host.costs]`) measured on the running machine.
//!
//! The modules, each one concern, lower ones never importing higher ones:
//!
//! * [`runner`]: the orchestration of both commands (host, lock,
//!   calibration, per scenario the real runs and the simulated seeds);
//! * [`judge`]: the real runs against the simulated seeds ([`judge::Row`]),
//!   the tolerances, the documented disagreements; [`distribution`]: a
//!   row's median and modes (`oversub::stats::distribution`, shared with
//!   the sweeps' summaries);
//! * [`table`]: the text printed per scenario and the tolerance line;
//! * [`probe`]: the timer-wake probe batches around the real runs;
//! * [`simulated`]: which scenarios conform accepts, the scenario as the
//!   simulator runs it to mirror this machine, and its seeds;
//! * [`real`], [`rtapp`]: the real runs (cgroups, worker processes,
//!   schedstat; Debian's rt-app for programs);
//! * [`worker`]: the worker processes (`oversub __worker`), [`calibrate`]:
//!   the probes of the host costs, [`clock`]: the clocks both use;
//! * [`host`]: what the machine is (CPUs, HZ, kernel, cpu controller),
//!   [`lock`]: the machine-wide lock of real runs;
//! * [`ui`]: what a run needs of its caller's terminal.
//!
//! The real workers are the calling binary itself, started as
//! `EXE __worker KIND key=value...`: a binary that calls [`runner::run`]
//! must hand `__worker` arguments to [`worker::main`] (the `oversub` CLI
//! does).

pub mod calibrate;
pub mod clock;
/// A row's median and modes: the core's, shared with the sweeps' summaries.
pub use oversub::stats::distribution;
pub mod host;
pub mod judge;
pub mod lock;
pub mod probe;
pub mod real;
pub mod rtapp;
pub mod runner;
pub mod simulated;
pub mod table;
pub mod ui;
pub mod worker;

pub use runner::{run, Options, Outcome};
pub use ui::{Plain, Ui};
