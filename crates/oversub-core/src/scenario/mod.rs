//! Scenario files (TOML): parsing and validation.
//!
//! The format is a contract (README.md, "Scenario format"): unknown keys, bad
//! units, out-of-range values, affinity to a missing CPU and malformed cgroup
//! paths are rejected with one line naming the file, the field and what is
//! allowed. Parsing never panics (property-tested).

pub mod duration;
mod kvm;
pub mod overrides;
mod pv;
pub mod rtapp;
pub mod vm;
pub mod yield_spec;

use crate::engine::Nanos;
use crate::sched::features::{KernelPreset, FEATURE_NAMES};
use crate::sched::{HostCosts, SchedFeatures};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

pub use duration::parse_duration;
pub use vm::{HaltPoll, KvmSpec, Layout, OnSpinSpec, PvSpec, VmSpec};

/// A scenario error: always one line, naming the file and the field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioError {
    pub file: String,
    pub field: String,
    pub message: String,
}

impl fmt::Display for ScenarioError {
    /// `file: field: message`, with any control character that came from the
    /// input (a key or value with an escaped newline, say) written as its
    /// escape, so that the error stays one line whatever the input held.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // A key or value of megabytes is cut (limits::echo), the message
        // kept to a line a person reads.
        let field = crate::limits::echo_n(&self.field, 2 * crate::limits::MAX_ECHO_CHARS);
        let message = crate::limits::echo_n(&self.message, 12 * crate::limits::MAX_ECHO_CHARS);
        let mut parts = vec![self.file.as_str()];
        if !self.field.is_empty() {
            parts.push(&field);
        }
        parts.push(&message);
        for (i, part) in parts.into_iter().enumerate() {
            if i > 0 {
                f.write_str(": ")?;
            }
            for c in part.chars() {
                if c.is_control() {
                    write!(f, "{}", c.escape_default())?;
                } else {
                    write!(f, "{c}")?;
                }
            }
        }
        Ok(())
    }
}

impl std::error::Error for ScenarioError {}

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
    pipe_slots: Option<i64>,
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
        pipe_slots: u32,
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

/// Where a TOML error sits, as "line L" (1-based) when known.
fn toml_location(src: &str, e: &toml::de::Error) -> String {
    match e.span() {
        Some(span) => {
            let line = src[..span.start.min(src.len())].matches('\n').count() + 1;
            format!("line {line}")
        }
        None => String::new(),
    }
}

impl Scenario {
    /// Reads and validates a scenario file: TOML, or an rt-app JSON file
    /// (`.json`) run host-only.
    pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
        Scenario::load_with(path, &[])
    }

    /// Reads a scenario file, applies `--set` overrides in order and validates
    /// the result.
    pub fn load_with(path: &Path, sets: &[overrides::Override]) -> Result<Scenario, ScenarioError> {
        let file = path.display().to_string();
        let err = |message: String| ScenarioError {
            file: file.clone(),
            field: String::new(),
            message,
        };
        // The extension picks the format, in any case (`.JSON` too).
        let is_json = path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("json"));
        let what = if is_json {
            "an rt-app JSON file"
        } else {
            "a TOML scenario (or rt-app JSON named *.json)"
        };
        let src = crate::limits::read_text(path, what).map_err(err)?;
        if is_json {
            if let Some(o) = sets.first() {
                return Err(ScenarioError {
                    file,
                    field: format!("--set {}", o.arg),
                    message: "overrides apply to TOML scenarios, not rt-app JSON".into(),
                });
            }
            return rtapp::scenario(&file, &src);
        }
        Scenario::parse_with(&file, &src, sets).map_err(|mut e| {
            // JSON under another name: say the rule instead of a TOML error.
            if src.trim_start().starts_with('{') && e.field.starts_with("line") {
                e.field = String::new();
                e.message = "looks like JSON, read as TOML: allowed rt-app JSON in a file named *.json (the extension picks the format), else TOML".into();
            }
            e
        })
    }

    /// Parses and validates scenario text; `file` names it in errors.
    pub fn parse(file: &str, src: &str) -> Result<Scenario, ScenarioError> {
        Scenario::parse_with(file, src, &[])
    }

    /// Parses scenario text, applies `--set` overrides and validates. The
    /// file is checked first (errors carry its line numbers); then each
    /// override in turn, an error naming the `--set` argument that caused it.
    pub fn parse_with(
        file: &str,
        src: &str,
        sets: &[overrides::Override],
    ) -> Result<Scenario, ScenarioError> {
        let cx = Ctx { file };
        let raw: RawScenario = serde_path_to_error::deserialize(toml::Deserializer::new(src))
            .map_err(|e| toml_error(&cx, src, e))?;
        let mut table: toml::Table = toml::from_str(src).map_err(|e| {
            let msg = e.message().replace('\n', " ");
            cx.err(toml_location(src, &e), msg.trim().to_string())
        })?;
        if sets.is_empty() {
            let mut sc = Self::from_raw(&cx, raw)?;
            sc.effective = table;
            return Ok(sc);
        }
        let mut raw = raw;
        for o in sets {
            let field = format!("--set {}", o.arg);
            let mut t = table.clone();
            overrides::apply(&mut t, o).map_err(|m| cx.err(&field, m))?;
            let mut r = serde_path_to_error::deserialize(toml::Value::Table(t.clone()));
            if r.is_err() && !o.value.is_str() {
                // An unquoted 6.12 or 0 where a string is wanted: retry as text.
                let s = o.as_string();
                let mut t2 = table.clone();
                overrides::apply(&mut t2, &s).map_err(|m| cx.err(&field, m))?;
                if let Ok(ok) = serde_path_to_error::deserialize(toml::Value::Table(t2.clone())) {
                    t = t2;
                    r = Ok(ok);
                }
            }
            raw = r.map_err(|e: serde_path_to_error::Error<toml::de::Error>| {
                let path = e.path().to_string();
                let msg = e.into_inner().message().replace('\n', " ");
                let msg = humanize_serde(msg.trim()).unwrap_or_else(|| msg.trim().to_string());
                cx.err(&field, format!("{path}: {msg}"))
            })?;
            table = t;
        }
        let mut sc = Self::from_raw(&cx, raw)?;
        sc.effective = table;
        Ok(sc)
    }

    fn from_raw(cx: &Ctx, raw: RawScenario) -> Result<Scenario, ScenarioError> {
        let cx = *cx;
        let host = Self::host(&cx, raw.host.unwrap_or_default())?;
        let mut cgroups = Vec::new();
        // Path -> position in `cgroups`: lookups stay O(log n) (1000 VMs).
        let mut index: BTreeMap<String, usize> = BTreeMap::new();
        for (i, c) in raw.cgroup.iter().enumerate() {
            let f = format!("cgroup[{i}]");
            let path = validate_cgroup_path(&c.path).map_err(|m| cx.err(format!("{f}.path"), m))?;
            if path == "/" {
                return Err(cx.err(
                    format!("{f}.path"),
                    "the root cgroup \"/\" is implicit and cannot be declared",
                ));
            }
            if index.contains_key(&path) {
                return Err(cx.err(format!("{f}.path"), format!("\"{path}\" is declared twice")));
            }
            let weight = cx.int(&format!("{f}.weight"), c.weight.unwrap_or(100), 1, 10000)? as u32;
            index.insert(path.clone(), cgroups.len());
            cgroups.push(CgroupSpec { path, weight });
        }
        // Every declared cgroup's parent must be declared too (or be "/").
        for (i, c) in cgroups.iter().enumerate() {
            let parent = parent_path(&c.path);
            if parent != "/" && !index.contains_key(&parent) {
                return Err(cx.err(
                    format!("cgroup[{i}].path"),
                    format!("parent \"{parent}\" of \"{}\" is not declared", c.path),
                ));
            }
        }
        let mut tasks = Vec::new();
        let mut nr_tasks: u64 = 0;
        for (i, t) in raw.task.iter().enumerate() {
            let spec = Self::task(&cx, i, t, &host, &index)?;
            nr_tasks += host_tasks_of(&spec);
            if nr_tasks > MAX_TASKS {
                return Err(cx.err(
                    format!("task[{i}].count"),
                    format!(
                        "the scenario reaches {nr_tasks} host tasks here: allowed at most {MAX_TASKS} tasks + vCPUs"
                    ),
                ));
            }
            tasks.push(spec);
        }
        let kvm = kvm::kvm(&cx, raw.kvm.unwrap_or_default())?;
        let pv = pv::pv(raw.guest);
        let mut vms = Vec::new();
        for (i, v) in raw.vm.iter().enumerate() {
            let spec = vm::vm(&cx, i, v, &host, &mut cgroups, &mut index)?;
            nr_tasks += u64::from(spec.vcpus);
            if nr_tasks > MAX_TASKS {
                return Err(cx.err(
                    format!("vm[{i}].vcpus"),
                    format!(
                        "the scenario reaches {nr_tasks} host tasks here: allowed at most {MAX_TASKS} tasks + vCPUs"
                    ),
                ));
            }
            // Guest program threads count too: one cap however tasks are spelled.
            nr_tasks += spec.program.as_ref().map_or(0, |p| p.threads.len() as u64);
            if nr_tasks > MAX_TASKS {
                return Err(cx.err(
                    format!("vm[{i}].program"),
                    format!(
                        "the scenario reaches {nr_tasks} tasks, vCPUs and guest threads here: allowed at most {MAX_TASKS}"
                    ),
                ));
            }
            if vms.iter().any(|o: &VmSpec| o.name == spec.name) {
                return Err(cx.err(
                    format!("vm[{i}].name"),
                    format!("VM name \"{}\" is used twice", spec.name),
                ));
            }
            // A libvirt layout makes a cgroup per vCPU under the VM's: two
            // VMs in one cgroup would share them silently.
            if spec.layout == Layout::Libvirt {
                if let Some((j, o)) = vms.iter().enumerate().find(|(_, o): &(usize, &VmSpec)| {
                    o.vcpu_cgroups.iter().any(|c| spec.vcpu_cgroups.contains(c))
                }) {
                    let shared = spec
                        .vcpu_cgroups
                        .iter()
                        .find(|c| o.vcpu_cgroups.contains(c))
                        .cloned()
                        .unwrap_or_default();
                    return Err(cx.err(
                        format!("vm[{i}].cgroup"),
                        format!(
                            "\"{}\" puts vCPU cgroup \"{shared}\" in use by vm[{j}] ({}) too: allowed a cgroup of its own per VM, or layout = \"flat\"",
                            spec.cgroup, o.name
                        ),
                    ));
                }
            }
            vms.push(spec);
        }
        let rqs = (cgroups.len() as u64 + 1) * u64::from(host.cpus);
        if rqs > MAX_GROUP_RQS {
            return Err(cx.err(
                "cgroup",
                format!(
                    "{} cgroups on {} CPUs make {rqs} group runqueues: allowed at most {MAX_GROUP_RQS} ((cgroups + 1) x cpus)",
                    cgroups.len() + 1,
                    host.cpus
                ),
            ));
        }
        // Names (after replica expansion) must be unique; yield_to targets exist.
        let mut names = std::collections::BTreeSet::new();
        let mut vcpu_names = std::collections::BTreeSet::new();
        for v in &vms {
            for k in 0..v.vcpus {
                names.insert(format!("{}.vcpu{k}", v.name));
                vcpu_names.insert(format!("{}.vcpu{k}", v.name));
            }
        }
        for (i, t) in tasks.iter().enumerate() {
            for n in expanded_names(t) {
                if !names.insert(n.clone()) {
                    return Err(cx.err(
                        format!("task[{i}].name"),
                        format!("task name \"{n}\" is used twice"),
                    ));
                }
            }
        }
        for (i, t) in tasks.iter().enumerate() {
            if let TaskKind::YieldLoop {
                target: Some(tg), ..
            } = &t.kind
            {
                if vcpu_names.contains(tg) {
                    return Err(cx.err(
                        format!("task[{i}].target"),
                        format!(
                            "\"{tg}\" is a vCPU: allowed targets are [[task]] tasks (vCPUs yield through KVM)"
                        ),
                    ));
                }
                if !names.contains(tg) {
                    return Err(cx.err(
                        format!("task[{i}].target"),
                        format!(
                            "no task is named \"{tg}\" (replicas are named NAME.0, NAME.1, ...)"
                        ),
                    ));
                }
                if expanded_names(t).contains(tg) {
                    return Err(cx.err(
                        format!("task[{i}].target"),
                        format!(
                            "\"{tg}\" is this entry's own task: allowed another task (yield_to() of oneself fails)"
                        ),
                    ));
                }
            }
        }
        if tasks.is_empty() && vms.is_empty() {
            return Err(cx.err("task", "a scenario needs at least one [[task]]"));
        }
        Ok(Scenario {
            file: cx.file.to_string(),
            host,
            cgroups,
            tasks,
            vms,
            kvm,
            pv,
            program: None,
            until_done: false,
            effective: toml::Table::new(),
        })
    }

    fn host(cx: &Ctx, h: RawHost) -> Result<HostSpec, ScenarioError> {
        let cpus = cx.int("host.cpus", h.cpus.unwrap_or(2), 1, 1024)? as u32;
        let hz = h.hz.unwrap_or(250);
        if ![100, 250, 300, 1000].contains(&hz) {
            return Err(cx.err(
                "host.hz",
                format!("{hz} is not a kernel HZ: allowed 100, 250, 300, 1000"),
            ));
        }
        let kname = h.kernel.unwrap_or_else(|| "6.12.117".into());
        let kernel = KernelPreset::parse(&kname).ok_or_else(|| {
            cx.err(
                "host.kernel",
                format!(
                    "unknown kernel preset \"{kname}\": allowed {}",
                    KernelPreset::names()
                ),
            )
        })?;
        let duration = cx.dur(
            "host.duration",
            h.duration.as_deref().unwrap_or("5s"),
            MIN_DURATION,
            MAX_DURATION,
        )?;
        let seed = h.seed.unwrap_or(1);
        if seed < 0 {
            return Err(cx.err(
                "host.seed",
                format!("{seed} is negative: allowed 0 ..= {MAX_SEED}"),
            ));
        }
        let yield_cfg = yield_spec::yield_cfg(cx, h.yield_)?;
        if kernel.is_cfs() && yield_cfg.policy != crate::sched::yield_to::YieldToPolicy::Upstream {
            return Err(cx.err(
                "host.yield.yield_to",
                format!(
                    "\"{}\" is an EEVDF policy and kernel 6.1 is CFS: allowed \"upstream\"",
                    yield_cfg.policy.name()
                ),
            ));
        }
        let mut features = kernel.features();
        for (k, v) in &h.features {
            if kernel.absent_features().contains(&k.as_str()) {
                return Err(cx.err(
                    format!("host.features.{k}"),
                    format!(
                        "{k} does not exist in kernel {}: allowed on {}",
                        kernel.name(),
                        KernelPreset::ALL
                            .iter()
                            .filter(|p| !p.absent_features().contains(&k.as_str()))
                            .map(|p| p.name())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ));
            }
            if !features.set(k, *v) {
                return Err(cx.err(
                    format!("host.features.{k}"),
                    format!("unknown feature: allowed {}", FEATURE_NAMES.join(", ")),
                ));
            }
        }
        let mut costs = HostCosts::default();
        for (k, v) in &h.costs {
            let field = format!("host.costs.{k}");
            let Some(slot) = costs.get_mut(k) else {
                return Err(cx.err(
                    field,
                    format!("unknown cost: allowed {}", HostCosts::NAMES.join(", ")),
                ));
            };
            *slot = cx.dur(&field, v, Nanos::ZERO, MAX_HOST_COST)?.0;
        }
        Ok(HostSpec {
            cpus,
            hz: hz as u32,
            kernel,
            duration,
            seed: seed as u64,
            features,
            overrides: h.features,
            yield_cfg,
            costs,
        })
    }

    fn task(
        cx: &Ctx,
        i: usize,
        t: &RawTask,
        host: &HostSpec,
        cgroups: &BTreeMap<String, usize>,
    ) -> Result<TaskSpec, ScenarioError> {
        let f = format!("task[{i}]");
        if t.name.is_empty()
            || !t
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
        {
            return Err(cx.err(
                format!("{f}.name"),
                format!(
                    "\"{}\" is not allowed: use letters, digits, '_', '-', '.'",
                    t.name
                ),
            ));
        }
        let cgroup = match &t.cgroup {
            None => "/".to_string(),
            Some(p) => {
                let p = validate_cgroup_path(p).map_err(|m| cx.err(format!("{f}.cgroup"), m))?;
                if p != "/" && !cgroups.contains_key(&p) {
                    return Err(cx.err(
                        format!("{f}.cgroup"),
                        format!("cgroup \"{p}\" is not declared in [[cgroup]]"),
                    ));
                }
                p
            }
        };
        let nice = cx.int(&format!("{f}.nice"), t.nice.unwrap_or(0), -20, 19)? as i32;
        let cpus = match &t.cpus {
            None => None,
            Some(list) => {
                if list.is_empty() {
                    return Err(cx.err(
                        format!("{f}.cpus"),
                        "empty affinity list: allowed CPU ids 0 .. cpus-1",
                    ));
                }
                let mut v = Vec::new();
                for &c in list {
                    if c < 0 || c >= host.cpus as i64 {
                        return Err(cx.err(
                            format!("{f}.cpus"),
                            format!("CPU {c} does not exist: allowed 0 ..= {}", host.cpus - 1),
                        ));
                    }
                    if !v.contains(&(c as u32)) {
                        v.push(c as u32);
                    }
                }
                v.sort();
                Some(v)
            }
        };
        let count = cx.int(
            &format!("{f}.count"),
            t.count.unwrap_or(1),
            1,
            MAX_TASKS as i64,
        )? as u32;
        let slice = match &t.slice {
            None => None,
            // __setparam_fair() clamps custom slices to [0.1 ms, 100 ms].
            Some(s) => Some(cx.dur(
                &format!("{f}.slice"),
                s,
                Nanos::from_us(100),
                Nanos::from_ms(100),
            )?),
        };
        // prctl(PR_SET_TIMERSLACK, 0) restores the default instead of
        // setting 0, so 1 ns is the least a task can ask for.
        let timer_slack = match &t.timer_slack {
            None => crate::task::DEFAULT_TIMER_SLACK,
            Some(s) => cx.dur(
                &format!("{f}.timer_slack"),
                s,
                Nanos(1),
                Nanos::from_secs(1),
            )?,
        };
        let allowed: &[&str] = match t.kind.as_str() {
            "hog" => &[],
            "periodic" => &["period", "run", "phase"],
            "yield_loop" => &["work", "target"],
            "pingpong" => &["run"],
            "messaging" => &["fds", "send", "recv", "pipe_slots"],
            k => {
                return Err(cx.err(
                    format!("{f}.kind"),
                    format!("unknown kind \"{k}\": allowed {KINDS}"),
                ));
            }
        };
        let given: [(&str, bool); 9] = [
            ("period", t.period.is_some()),
            ("run", t.run.is_some()),
            ("phase", t.phase.is_some()),
            ("work", t.work.is_some()),
            ("target", t.target.is_some()),
            ("fds", t.fds.is_some()),
            ("send", t.send.is_some()),
            ("recv", t.recv.is_some()),
            ("pipe_slots", t.pipe_slots.is_some()),
        ];
        for (k, set) in given {
            if set && !allowed.contains(&k) {
                let ok = if allowed.is_empty() {
                    "none".to_string()
                } else {
                    allowed.join(", ")
                };
                return Err(cx.err(
                    format!("{f}.{k}"),
                    format!("not a parameter of kind \"{}\": allowed {ok}", t.kind),
                ));
            }
        }
        let big = Nanos::from_secs(3600);
        let kind = match t.kind.as_str() {
            "hog" => TaskKind::Hog,
            "periodic" => {
                let period = match &t.period {
                    Some(p) => cx.dur(&format!("{f}.period"), p, Nanos::from_us(10), big)?,
                    None => {
                        return Err(cx.err(format!("{f}.period"), "required for kind \"periodic\""))
                    }
                };
                let run = match &t.run {
                    Some(r) => {
                        let d = cx.op(&format!("{f}.run"), r)?;
                        if d > period {
                            return Err(cx.err(
                                format!("{f}.run"),
                                format!(
                                    "{r} is longer than the period: allowed {MIN_OP} ..= period"
                                ),
                            ));
                        }
                        d
                    }
                    None => {
                        return Err(cx.err(format!("{f}.run"), "required for kind \"periodic\""))
                    }
                };
                let phase = match &t.phase {
                    Some(p) => cx.dur(&format!("{f}.phase"), p, Nanos::ZERO, big)?,
                    None => Nanos::ZERO,
                };
                TaskKind::Periodic { period, run, phase }
            }
            "yield_loop" => TaskKind::YieldLoop {
                work: cx.op(&format!("{f}.work"), t.work.as_deref().unwrap_or("1us"))?,
                target: t.target.clone(),
            },
            "pingpong" => {
                if count % 2 != 0 {
                    return Err(cx.err(
                        format!("{f}.count"),
                        format!("{count} is odd: pingpong tasks come in pairs"),
                    ));
                }
                TaskKind::PingPong {
                    run: cx.op(&format!("{f}.run"), t.run.as_deref().unwrap_or("5us"))?,
                }
            }
            "messaging" => TaskKind::Messaging {
                fds: cx.int(&format!("{f}.fds"), t.fds.unwrap_or(20), 1, 1000)? as u32,
                send: cx.op(&format!("{f}.send"), t.send.as_deref().unwrap_or("2us"))?,
                recv: cx.op(&format!("{f}.recv"), t.recv.as_deref().unwrap_or("2us"))?,
                pipe_slots: cx.int(
                    &format!("{f}.pipe_slots"),
                    t.pipe_slots.unwrap_or(64),
                    1,
                    1 << 20,
                )? as u32,
            },
            _ => unreachable!("kind validated above"),
        };
        Ok(TaskSpec {
            name: t.name.clone(),
            cgroup,
            nice,
            cpus,
            count,
            slice,
            timer_slack,
            kind,
        })
    }
}

/// How many host tasks a `[[task]]` entry creates (without naming them).
pub fn host_tasks_of(t: &TaskSpec) -> u64 {
    match &t.kind {
        TaskKind::Messaging { fds, .. } => u64::from(t.count) * 2 * u64::from(*fds),
        _ => u64::from(t.count),
    }
}

/// Names of the tasks a `[[task]]` entry creates.
pub fn expanded_names(t: &TaskSpec) -> Vec<String> {
    match &t.kind {
        TaskKind::Messaging { fds, .. } => {
            let mut v = Vec::new();
            for g in 0..t.count {
                for i in 0..*fds {
                    v.push(format!("{}.{g}.s{i}", t.name));
                }
                for i in 0..*fds {
                    v.push(format!("{}.{g}.r{i}", t.name));
                }
            }
            v
        }
        _ if t.count == 1 => vec![t.name.clone()],
        _ => (0..t.count).map(|i| format!("{}.{i}", t.name)).collect(),
    }
}

/// Normalises "/a/b" (no empty, "." or ".." components, no trailing slash).
pub fn validate_cgroup_path(p: &str) -> Result<String, String> {
    if !p.starts_with('/') {
        return Err(format!("\"{p}\" must be absolute (start with '/')"));
    }
    if p == "/" {
        return Ok("/".into());
    }
    let parts: Vec<&str> = p[1..].split('/').collect();
    for c in &parts {
        if c.is_empty() || *c == "." || *c == ".." {
            return Err(format!(
                "\"{p}\" has an empty, '.' or '..' component: allowed /name/name/..."
            ));
        }
        if !c
            .chars()
            .all(|ch| ch.is_ascii_alphanumeric() || "_-.".contains(ch))
        {
            return Err(format!(
                "\"{p}\": component \"{c}\" may use letters, digits, '_', '-', '.'"
            ));
        }
    }
    Ok(format!("/{}", parts.join("/")))
}

/// Parent of a normalised cgroup path.
pub fn parent_path(p: &str) -> String {
    match p.rfind('/') {
        Some(0) | None => "/".into(),
        Some(i) => p[..i].into(),
    }
}

/// A TOML or shape error as one line naming the field: serde's path
/// (`task[0].cpus`) and its message with Rust type names replaced by the
/// scenario format's ("an integer", "an array", ...). Syntax errors name the
/// line. Written for any key, so keys added later are covered as they are.
fn toml_error(
    cx: &Ctx,
    src: &str,
    e: serde_path_to_error::Error<toml::de::Error>,
) -> ScenarioError {
    let path = e.path().to_string();
    let inner = e.into_inner();
    let msg = inner.message().replace('\n', " ").trim().to_string();
    let (field, msg) = match (path.as_str(), humanize_serde(&msg)) {
        // No field known (a syntax error): the line is the best place.
        (".", _) | ("", _) => {
            if msg.contains("too large to fit") {
                let m = format!("{msg}: allowed integers -{} ..= {}", i64::MAX, i64::MAX);
                let field = inner
                    .span()
                    .and_then(|sp| key_at(src, sp.start))
                    .unwrap_or_else(|| toml_location(src, &inner));
                return cx.err(field, m);
            }
            (toml_location(src, &inner), format!("TOML syntax: {msg}"))
        }
        (p, Some(h)) => {
            // "[name]" in a message is the table's own name.
            let leaf = p.rsplit('.').next().unwrap_or(p);
            let leaf = leaf.split('[').next().unwrap_or(leaf);
            (p.to_string(), h.replace("name]", &format!("{leaf}]")))
        }
        (p, None) => (p.to_string(), msg),
    };
    cx.err(field, msg)
}

/// The dotted key whose value sits at byte `at` of `src` (`host.cpus`,
/// `task.count`), read from the line's `key =` and the table header above
/// it: for errors the TOML parser reports before it knows the field.
fn key_at(src: &str, at: usize) -> Option<String> {
    let at = at.min(src.len());
    let start = src[..at].rfind('\n').map_or(0, |i| i + 1);
    let line = &src[start..];
    let key = line.split('=').next()?.trim();
    if key.is_empty() || key.len() > 200 || key.contains(['[', '\n']) {
        return None;
    }
    let table = src[..start]
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with('['))
        .map(|l| l.trim_matches(|c| c == '[' || c == ']').trim().to_string());
    Some(match table {
        Some(t) if !t.is_empty() => format!("{t}.{key}"),
        _ => key.to_string(),
    })
}

/// The scenario format's name of a serde "expected" phrase.
fn human_type(expected: &str) -> String {
    let e = expected.trim();
    let t = match e {
        "i8" | "i16" | "i32" | "i64" | "i128" | "u8" | "u16" | "u32" | "u64" | "u128" | "isize"
        | "usize" => "an integer",
        "f32" | "f64" => "a number",
        "a boolean" | "bool" => "a boolean (true or false)",
        "a string" | "string" | "a borrowed string" => "a string",
        "a sequence" => "an array ([...], or [[...]] for tables)",
        "a map" => "a table",
        _ if e.starts_with("struct ") => "a table",
        _ => return e.to_string(),
    };
    t.to_string()
}

/// The scenario format's name of a serde "unexpected" value.
fn human_value(v: &str) -> String {
    let v = v.trim();
    for (pre, name) in [
        ("string ", "a string"),
        ("integer ", "an integer"),
        ("floating point ", "a number"),
        ("boolean ", "a boolean"),
    ] {
        if let Some(x) = v.strip_prefix(pre) {
            return format!("{} ({name})", x.trim_matches('`'));
        }
    }
    match v {
        "map" => "a table".into(),
        "sequence" => "an array".into(),
        o => o.to_string(),
    }
}

/// Rewrites serde's messages that name Rust types or internals.
fn humanize_serde(msg: &str) -> Option<String> {
    if let Some(rest) = msg.strip_prefix("invalid type: ") {
        let (got, want) = rest.split_once(", expected ")?;
        if got == "map" && want == "a sequence" {
            return Some("a table ([name]) where an array of tables ([[name]]) is expected".into());
        }
        return Some(format!(
            "{} is not allowed: expected {}",
            human_value(got),
            human_type(want)
        ));
    }
    if let Some(rest) = msg.strip_prefix("invalid value: ") {
        let (got, want) = rest.split_once(", expected ")?;
        return Some(format!(
            "{} is out of range: expected {}",
            human_value(got),
            human_type(want)
        ));
    }
    if let Some(rest) = msg.strip_prefix("unknown field `") {
        let (name, allowed) = rest.split_once('`')?;
        let allowed = allowed
            .trim_start_matches(", expected one of ")
            .trim_start_matches(", expected ")
            .replace('`', "");
        let allowed = if allowed.trim().is_empty() || allowed.contains("there are no fields") {
            "none".to_string()
        } else {
            allowed
        };
        return Some(format!("unknown key \"{name}\": allowed {allowed}"));
    }
    if let Some(rest) = msg.strip_prefix("missing field `") {
        let name = rest.split('`').next()?;
        return Some(format!("required key \"{name}\" is missing"));
    }
    None
}
