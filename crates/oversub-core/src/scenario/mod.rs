//! Scenario files (TOML): parsing and validation.
//!
//! The format is a contract (README.md, "Scenario format"): unknown keys, bad
//! units, out-of-range values, affinity to a missing CPU and malformed cgroup
//! paths are rejected with one line naming the file, the field and what is
//! allowed. Parsing never panics (property-tested).
//!
//! This file holds the raw TOML shape and the validated types; the parts:
//! `load.rs` reads a file and validates the whole, `host.rs` `[host]`,
//! `task.rs` `[[task]]`, `cgroup.rs` cgroup paths, `vm.rs` `[[vm]]`,
//! `kvm.rs` `[kvm]`, `pv.rs` `[guest.pv]`, `error.rs` the one-line errors.

mod cgroup;
pub mod duration;
mod error;
mod host;
mod kvm;
mod load;
pub mod overrides;
mod pv;
pub mod rtapp;
mod task;
pub mod vm;
pub mod yield_spec;

use crate::engine::Nanos;
use crate::sched::features::KernelPreset;
use crate::sched::{HostCosts, SchedFeatures};
use serde::Deserialize;
use std::collections::BTreeMap;

pub use cgroup::{parent_path, validate_cgroup_path};
pub use duration::parse_duration;
pub use error::ScenarioError;
pub use task::{expanded_names, host_tasks_of};
pub use vm::{HaltPoll, KvmSpec, Layout, OnSpinSpec, PvSpec, VmSpec};

// ---- Raw TOML shape -------------------------------------------------------

#[derive(Deserialize, Debug, Default)]
#[serde(deny_unknown_fields)]
struct RawScenario {
    host: Option<RawHost>,
    #[serde(default)]
    cgroup: Vec<RawCgroup>,
    #[serde(default)]
    task: Vec<RawTask>,
    #[serde(default)]
    vm: Vec<vm::RawVm>,
    kvm: Option<kvm::RawKvm>,
    guest: Option<pv::RawGuest>,
}

#[derive(Deserialize, Debug, Default)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawHost {
    cpus: Option<i64>,
    hz: Option<i64>,
    kernel: Option<String>,
    duration: Option<String>,
    seed: Option<i64>,
    #[serde(default)]
    features: BTreeMap<String, bool>,
    #[serde(rename = "yield")]
    yield_: Option<yield_spec::RawYield>,
    #[serde(default)]
    costs: BTreeMap<String, String>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct RawCgroup {
    path: String,
    weight: Option<i64>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct RawTask {
    name: String,
    kind: String,
    cgroup: Option<String>,
    nice: Option<i64>,
    cpus: Option<Vec<i64>>,
    count: Option<i64>,
    slice: Option<String>,
    timer_slack: Option<String>,
    // kind parameters
    period: Option<String>,
    run: Option<String>,
    phase: Option<String>,
    work: Option<String>,
    target: Option<String>,
    fds: Option<i64>,
    send: Option<String>,
    recv: Option<String>,
    pipe_pages: Option<i64>,
    msg_size: Option<i64>,
}

// ---- Validated scenario ---------------------------------------------------

/// `[host]`.
#[derive(Clone, Debug)]
pub struct HostSpec {
    pub cpus: u32,
    pub hz: u32,
    pub kernel: KernelPreset,
    pub duration: Nanos,
    pub seed: u64,
    pub features: SchedFeatures,
    /// The names overridden in `[host.features]`, for the report.
    pub overrides: BTreeMap<String, bool>,
    /// `[host.yield]`.
    pub yield_cfg: crate::sched::yield_to::YieldConfig,
    /// `[host.costs]`: wake-path, switch and migration costs.
    pub costs: HostCosts,
}

/// `[[cgroup]]`.
#[derive(Clone, Debug)]
pub struct CgroupSpec {
    pub path: String,
    /// cpu.weight, 1..=10000 (100 = 1024 shares).
    pub weight: u32,
}

/// A task kind with its parameters.
#[derive(Clone, Debug, PartialEq)]
pub enum TaskKind {
    Hog,
    Periodic {
        period: Nanos,
        run: Nanos,
        phase: Nanos,
    },
    YieldLoop {
        work: Nanos,
        target: Option<String>,
    },
    PingPong {
        run: Nanos,
    },
    Messaging {
        fds: u32,
        send: Nanos,
        recv: Nanos,
        /// Page buffers of each pipe (`pipe->max_usage`).
        pipe_pages: u32,
        /// Bytes per message: one `write()`/`read()` (1 ..= PAGE_SIZE).
        msg_size: u32,
    },
    /// Thread `thread` of the scenario's `program`.
    Program {
        thread: u32,
    },
}

impl TaskKind {
    pub fn name(&self) -> &'static str {
        match self {
            TaskKind::Hog => "hog",
            TaskKind::Periodic { .. } => "periodic",
            TaskKind::YieldLoop { .. } => "yield_loop",
            TaskKind::PingPong { .. } => "pingpong",
            TaskKind::Messaging { .. } => "messaging",
            TaskKind::Program { .. } => "program",
        }
    }
}

/// `[[task]]`.
#[derive(Clone, Debug)]
pub struct TaskSpec {
    pub name: String,
    pub cgroup: String,
    pub nice: i32,
    pub cpus: Option<Vec<u32>>,
    pub count: u32,
    pub slice: Option<Nanos>,
    /// `prctl(PR_SET_TIMERSLACK)`: the slack of the task's sleep timers
    /// (default the kernel's 50 us; sim/hrtimer.rs).
    pub timer_slack: Nanos,
    pub kind: TaskKind,
}

/// A validated scenario.
#[derive(Clone, Debug)]
pub struct Scenario {
    pub file: String,
    pub host: HostSpec,
    pub cgroups: Vec<CgroupSpec>,
    pub tasks: Vec<TaskSpec>,
    /// `[[vm]]` (empty for a host-only scenario).
    pub vms: Vec<VmSpec>,
    pub kvm: KvmSpec,
    pub pv: PvSpec,
    /// The thread program of the `Program` tasks (an rt-app file run
    /// host-only), if any.
    pub program: Option<crate::workload::Program>,
    /// End the run when every program thread has finished (rt-app
    /// `duration: -1`); `host.duration` is then only a cap.
    pub until_done: bool,
    /// The scenario as validated: the file's TOML after `--set` overrides
    /// (recorded in the JSON report).
    pub effective: toml::Table,
}

/// The range of `[host].duration` (and of `--duration`).
pub const MIN_DURATION: Nanos = Nanos::from_us(1);
pub const MAX_DURATION: Nanos = Nanos::from_secs(3600);
/// The largest `[host].seed` (and `--seed`): TOML integers are signed.
pub const MAX_SEED: u64 = i64::MAX as u64;

/// A `--duration` value, checked against the file's range.
pub fn parse_cli_duration(v: &str) -> Result<Nanos, String> {
    let d = parse_duration(v)?;
    if d < MIN_DURATION || d > MAX_DURATION {
        return Err(format!(
            "{v} is out of range: allowed {MIN_DURATION} ..= {MAX_DURATION} (as [host].duration)"
        ));
    }
    Ok(d)
}

/// A `--seed` value, checked against the file's range.
pub fn check_cli_seed(v: &str) -> Result<u64, String> {
    let s: u64 = v.trim().parse().map_err(|_| {
        format!("\"{v}\" is not allowed: allowed an integer 0 ..= {MAX_SEED} (as [host].seed)")
    })?;
    if s > MAX_SEED {
        return Err(format!(
            "{s} is out of range: allowed 0 ..= {MAX_SEED} (as [host].seed)"
        ));
    }
    Ok(s)
}

/// The largest scenario file read (bytes): [`crate::limits::MAX_INPUT_BYTES`].
pub const MAX_FILE_BYTES: u64 = crate::limits::MAX_INPUT_BYTES;
/// The most host tasks a scenario may create: [`crate::limits::MAX_TASKS`].
pub const MAX_TASKS: u64 = crate::limits::MAX_TASKS;
/// The most per-CPU group runqueues ((cgroups + 1) x CPUs): each is a
/// cfs_rq and a group entity in the model.
pub const MAX_GROUP_RQS: u64 = 1 << 21;
/// The least CPU time of one operation of a task (a periodic activation, a
/// yield-loop chunk, a ping-pong hop, a message) and the least mean guest
/// compute burst of a VM: below it simulated time barely advances.
pub const MIN_OP: Nanos = Nanos(100);

/// The largest `[host.costs]` value.
pub const MAX_HOST_COST: Nanos = Nanos::from_ms(10);

pub const KINDS: &str = "hog, periodic, yield_loop, pingpong, messaging";

#[derive(Clone, Copy)]
pub(crate) struct Ctx<'a> {
    file: &'a str,
    /// Guest programs this scenario's load has parsed: VMs that name the
    /// same file, and each `--set` re-validation, parse it once.
    programs: &'a ProgramCache,
}

/// Parsed guest programs by source text (a file read again is compared, not
/// trusted by name). Only successful parses are kept: a bad file fails the
/// load at its first reader.
#[derive(Default)]
pub(crate) struct ProgramCache(std::cell::RefCell<Vec<(String, crate::workload::rtapp::RtApp)>>);

impl ProgramCache {
    /// The parse of `src`: the kept one, or `parse(src)` kept when it succeeds.
    pub(crate) fn get_or_parse<E>(
        &self,
        src: &str,
        parse: impl FnOnce(&str) -> Result<crate::workload::rtapp::RtApp, E>,
    ) -> Result<crate::workload::rtapp::RtApp, E> {
        if let Some((_, r)) = self.0.borrow().iter().find(|(s, _)| s == src) {
            return Ok(r.clone());
        }
        let r = parse(src)?;
        self.0.borrow_mut().push((src.to_string(), r.clone()));
        Ok(r)
    }
}

impl Ctx<'_> {
    fn err(&self, field: impl Into<String>, message: impl Into<String>) -> ScenarioError {
        ScenarioError {
            file: self.file.to_string(),
            field: field.into(),
            message: message.into(),
        }
    }

    fn dur(&self, field: &str, v: &str, min: Nanos, max: Nanos) -> Result<Nanos, ScenarioError> {
        let d = parse_duration(v).map_err(|m| self.err(field, m))?;
        if d < min || d > max {
            return Err(self.err(
                field,
                format!("{v} is out of range: allowed {min} ..= {max}"),
            ));
        }
        Ok(d)
    }

    /// The CPU time of one operation: [`MIN_OP`] ..= 3600 s.
    fn op(&self, field: &str, v: &str) -> Result<Nanos, ScenarioError> {
        let d = parse_duration(v).map_err(|m| self.err(field, m))?;
        if d < MIN_OP || d > Nanos::from_secs(3600) {
            return Err(self.err(
                field,
                format!(
                    "{v} is out of range: allowed {MIN_OP} ..= 3600s per operation (below {MIN_OP} simulated time barely advances)"
                ),
            ));
        }
        Ok(d)
    }

    fn int(&self, field: &str, v: i64, lo: i64, hi: i64) -> Result<i64, ScenarioError> {
        if v < lo || v > hi {
            return Err(self.err(field, format!("{v} is out of range: allowed {lo} ..= {hi}")));
        }
        Ok(v)
    }
}

#[cfg(test)]
mod tests {
    use super::ProgramCache;
    use crate::workload::rtapp;

    const A: &str = r#"{"global": {"duration": 1}, "tasks": {"t": {"loop": -1, "run": 100}}}"#;
    const B: &str = r#"{"global": {"duration": 1}, "tasks": {"t": {"loop": -1, "run": 200}}}"#;

    /// The second reader of the same text gets the first parse without
    /// parsing; other text is parsed on its own; a failed parse is not kept.
    #[test]
    fn program_cache_parses_each_text_once() {
        let cache = ProgramCache::default();
        let mut parses = 0;
        let mut parse = |src: &str| {
            parses += 1;
            rtapp::parse(src)
        };
        let a1 = cache.get_or_parse(A, &mut parse).expect("A parses");
        let a2 = cache.get_or_parse(A, &mut parse).expect("A again");
        assert_eq!(a1.program, a2.program);
        let b = cache.get_or_parse(B, &mut parse).expect("B parses");
        assert_ne!(a1.program, b.program);
        assert!(cache.get_or_parse("{", &mut parse).is_err());
        assert!(cache.get_or_parse("{", &mut parse).is_err());
        assert_eq!(parses, 4, "A once, B once, the bad text at each reader");
    }
}
