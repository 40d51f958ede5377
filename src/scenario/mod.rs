//! Scenario files (TOML): parsing and validation.
//!
//! The format is a contract (README.md, "Scenario format"): unknown keys, bad
//! units, out-of-range values, affinity to a missing CPU and malformed cgroup
//! paths are rejected with one line naming the file, the field and what is
//! allowed. Parsing never panics (property-tested).

pub mod duration;
pub mod overrides;
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
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.field.is_empty() {
            write!(f, "{}: {}", self.file, self.message)
        } else {
            write!(f, "{}: {}: {}", self.file, self.field, self.message)
        }
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
    kvm: Option<vm::RawKvm>,
    guest: Option<vm::RawGuest>,
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
        let src = std::fs::read_to_string(path).map_err(|e| ScenarioError {
            file: file.clone(),
            field: String::new(),
            message: format!("cannot read: {e}"),
        })?;
        if path.extension().is_some_and(|e| e == "json") {
            if let Some(o) = sets.first() {
                return Err(ScenarioError {
                    file,
                    field: format!("--set {}", o.arg),
                    message: "overrides apply to TOML scenarios, not rt-app JSON".into(),
                });
            }
            return rtapp::scenario(&file, &src);
        }
        Scenario::parse_with(&file, &src, sets)
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
        let raw: RawScenario = toml::from_str(src).map_err(|e| {
            let msg = e.message().replace('\n', " ");
            cx.err(toml_location(src, &e), msg.trim().to_string())
        })?;
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
            let mut r = RawScenario::deserialize(toml::Value::Table(t.clone()));
            if r.is_err() && !o.value.is_str() {
                // An unquoted 6.12 or 0 where a string is wanted: retry as text.
                let s = o.as_string();
                let mut t2 = table.clone();
                overrides::apply(&mut t2, &s).map_err(|m| cx.err(&field, m))?;
                if let Ok(ok) = RawScenario::deserialize(toml::Value::Table(t2.clone())) {
                    t = t2;
                    r = Ok(ok);
                }
            }
            raw = r.map_err(|e| {
                let msg = e.message().replace('\n', " ");
                cx.err(&field, msg.trim().to_string())
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
        for (i, c) in raw.cgroup.iter().enumerate() {
            let f = format!("cgroup[{i}]");
            let path = validate_cgroup_path(&c.path).map_err(|m| cx.err(format!("{f}.path"), m))?;
            if path == "/" {
                return Err(cx.err(
                    format!("{f}.path"),
                    "the root cgroup \"/\" is implicit and cannot be declared",
                ));
            }
            if cgroups.iter().any(|g: &CgroupSpec| g.path == path) {
                return Err(cx.err(format!("{f}.path"), format!("\"{path}\" is declared twice")));
            }
            let weight = cx.int(&format!("{f}.weight"), c.weight.unwrap_or(100), 1, 10000)? as u32;
            cgroups.push(CgroupSpec { path, weight });
        }
        // Every declared cgroup's parent must be declared too (or be "/").
        for (i, c) in cgroups.iter().enumerate() {
            let parent = parent_path(&c.path);
            if parent != "/" && !cgroups.iter().any(|g| g.path == parent) {
                return Err(cx.err(
                    format!("cgroup[{i}].path"),
                    format!("parent \"{parent}\" of \"{}\" is not declared", c.path),
                ));
            }
        }
        let mut tasks = Vec::new();
        for (i, t) in raw.task.iter().enumerate() {
            tasks.push(Self::task(&cx, i, t, &host, &cgroups)?);
        }
        let kvm = vm::kvm(&cx, raw.kvm.unwrap_or_default())?;
        let pv = vm::pv(raw.guest);
        let mut vms = Vec::new();
        for (i, v) in raw.vm.iter().enumerate() {
            let spec = vm::vm(&cx, i, v, &host, &mut cgroups)?;
            if vms.iter().any(|o: &VmSpec| o.name == spec.name) {
                return Err(cx.err(
                    format!("vm[{i}].name"),
                    format!("VM name \"{}\" is used twice", spec.name),
                ));
            }
            vms.push(spec);
        }
        // Names (after replica expansion) must be unique; yield_to targets exist.
        let mut names = std::collections::BTreeSet::new();
        for (i, v) in vms.iter().enumerate() {
            for k in 0..v.vcpus {
                names.insert(format!("{}.vcpu{k}", v.name));
            }
            let _ = i;
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
                if !names.contains(tg) {
                    return Err(cx.err(
                        format!("task[{i}].target"),
                        format!(
                            "no task is named \"{tg}\" (replicas are named NAME.0, NAME.1, ...)"
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
                format!("unknown kernel preset \"{kname}\": allowed 6.12.0, 6.12.117, 6.19"),
            )
        })?;
        let duration = cx.dur(
            "host.duration",
            h.duration.as_deref().unwrap_or("5s"),
            Nanos::from_us(1),
            Nanos::from_secs(3600),
        )?;
        let seed = h.seed.unwrap_or(1);
        if seed < 0 {
            return Err(cx.err(
                "host.seed",
                format!("{seed} is negative: allowed 0 ..= {}", i64::MAX),
            ));
        }
        let yield_cfg = yield_spec::yield_cfg(cx, h.yield_)?;
        let mut features = kernel.features();
        for (k, v) in &h.features {
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
        cgroups: &[CgroupSpec],
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
                if p != "/" && !cgroups.iter().any(|g| g.path == p) {
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
        let count = cx.int(&format!("{f}.count"), t.count.unwrap_or(1), 1, 100_000)? as u32;
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
                    Some(r) => cx.dur(&format!("{f}.run"), r, Nanos(1), period)?,
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
                work: cx.dur(
                    &format!("{f}.work"),
                    t.work.as_deref().unwrap_or("1us"),
                    Nanos(10),
                    big,
                )?,
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
                    run: cx.dur(
                        &format!("{f}.run"),
                        t.run.as_deref().unwrap_or("5us"),
                        Nanos(1),
                        big,
                    )?,
                }
            }
            "messaging" => TaskKind::Messaging {
                fds: cx.int(&format!("{f}.fds"), t.fds.unwrap_or(20), 1, 1000)? as u32,
                send: cx.dur(
                    &format!("{f}.send"),
                    t.send.as_deref().unwrap_or("2us"),
                    Nanos(1),
                    big,
                )?,
                recv: cx.dur(
                    &format!("{f}.recv"),
                    t.recv.as_deref().unwrap_or("2us"),
                    Nanos(1),
                    big,
                )?,
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
            kind,
        })
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
