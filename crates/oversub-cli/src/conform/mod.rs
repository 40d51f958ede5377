//! `oversub conform`: runs host-only scenarios on the real kernel and in the
//! simulator, side by side, and compares CPU shares and wakeup latencies.
//!
//! * [`host`]: what the machine is (CPUs, HZ, kernel, cpu controller);
//! * [`real`]: the real run (cgroups, worker processes, schedstat);
//! * [`worker`]: the worker processes (`oversub __worker`);
//! * [`calibrate`]: the host costs measured on the machine, which the
//!   simulated side uses (`[host.costs]`).
//!
//! Tolerances (docs/conformance.md): a CPU share agrees when
//! |real - sim| <= max(2% of real, the real run-to-run spread, 0.2 points);
//! a latency median agrees when |real - sim| <= max(25% of real, 5 us, the
//! real run-to-run spread) + the spread of the scenario's timer-wake probe
//! batches, one run right before each real run ([`ProbeSummary`]), whose
//! median gives the simulated side its `timer_wake`.
//! p99 is printed for information only.

/// `print!` that ignores a closed stdout (`| head`) instead of panicking.
#[macro_export]
macro_rules! out {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stdout(), $($t)*);
    }};
}

/// `println!` that ignores a closed stdout (`| head`) instead of panicking.
#[macro_export]
macro_rules! outln {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($t)*);
    }};
}

pub mod calibrate;
pub mod host;
pub mod real;
pub mod rtapp;
pub mod worker;

use host::{CpuController, HostInfo};
use oversub::engine::Nanos;
use oversub::scenario::{Scenario, TaskKind};
use oversub::sched::HostCosts;
use serde::Serialize;
use std::fmt::Write;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// Relative tolerance of CPU shares.
pub const SHARE_REL_TOL: f64 = 0.02;
/// Absolute floor of the CPU share tolerance (fraction of the total); the
/// floor is also at least one tick of the run's duration, since a task's CPU
/// time in a finite run is quantised to ticks (tick-granular switching).
pub const SHARE_ABS_TOL: f64 = 0.002;

/// The absolute share tolerance floor of a run of `duration_ns` at `hz`.
pub fn share_floor(hz: u32, duration_ns: u64) -> f64 {
    let tick = 1e9 / hz.max(1) as f64;
    SHARE_ABS_TOL.max(tick / duration_ns.max(1) as f64)
}
/// Above this fraction of CPU time skipped by periodic tasks in a real run
/// (foreign load delaying their wakeups), a scenario is not judged.
pub const SKIPPED_LIMIT: f64 = 0.02;
/// Relative tolerance of migration rates.
pub const MIGR_REL_TOL: f64 = 0.5;
/// Absolute floor of the migration-rate tolerance, per second.
pub const MIGR_ABS_TOL: f64 = 2.0;
/// Relative tolerance of latency medians.
pub const LAT_REL_TOL: f64 = 0.25;
/// Absolute floor of the latency median tolerance, ns.
pub const LAT_ABS_TOL_NS: f64 = 5_000.0;
/// Samples per calibration probe in a conform run.
pub const CALIBRATION_SAMPLES: u32 = 1500;
/// Samples per CPU of the timer-wake probe batch run before each real run
/// of a scenario with periodic tasks (~0.4 s per CPU).
pub const PROBE_BATCH_SAMPLES: u32 = 400;

/// Options of `oversub conform`.
#[derive(Clone, Debug)]
pub struct Options {
    pub files: Vec<PathBuf>,
    pub runs: u32,
    pub json: bool,
    /// Overrides each scenario's `[host].duration`, ns.
    pub duration: Option<u64>,
    /// Simulate with this preset instead of the running kernel's.
    pub kernel: Option<oversub::sched::KernelPreset>,
}

/// One compared figure.
#[derive(Serialize, Clone, Debug)]
pub struct Row {
    /// "task" or "cgroup".
    pub kind: String,
    pub name: String,
    /// "share" (fraction of the scenario's CPU time) or "lat_p50" (ns).
    pub metric: String,
    pub real_mean: f64,
    /// Each real run's value, in run order.
    pub real: Vec<f64>,
    pub real_min: f64,
    pub real_max: f64,
    pub sim: f64,
    /// (sim - real_mean) / real_mean.
    pub rel_err: f64,
    pub tolerance: f64,
    /// None: informational only.
    pub pass: Option<bool>,
    /// A documented disagreement (`# conform-known:` line of the scenario):
    /// a failure of this row is reported but not counted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub known: Option<String>,
}

/// A `# conform-known: NAME METRIC: reason` line of a scenario file: a
/// disagreement written down with its cause. NAME may end in `*`.
#[derive(Clone, Debug, PartialEq)]
pub struct Known {
    pub name: String,
    pub metric: String,
    pub reason: String,
}

/// The `# conform-known:` lines of a scenario text.
pub fn known_of(text: &str) -> Vec<Known> {
    text.lines()
        .filter_map(|l| l.trim().strip_prefix("# conform-known:"))
        .filter_map(|rest| {
            let (head, reason) = rest.split_once(':')?;
            let mut w = head.split_whitespace();
            Some(Known {
                name: w.next()?.to_string(),
                metric: w.next()?.to_string(),
                reason: reason.trim().to_string(),
            })
        })
        .collect()
}

/// Marks the rows covered by `known`.
pub fn apply_known(rows: &mut [Row], known: &[Known]) {
    for r in rows.iter_mut() {
        let hit = known.iter().find(|k| {
            k.metric == r.metric
                && match k.name.strip_suffix('*') {
                    Some(p) => r.name.starts_with(p),
                    None => k.name == r.name,
                }
        });
        r.known = hit.map(|k| k.reason.clone());
    }
}

/// Whether a row counts as a failure.
pub fn row_fails(r: &Row) -> bool {
    r.pass == Some(false) && r.known.is_none()
}

/// The outcome of one scenario.
#[derive(Serialize, Clone, Debug)]
pub struct ScenarioResult {
    pub file: String,
    /// "pass", "fail", "skip" or "error".
    pub status: String,
    pub message: String,
    pub rows: Vec<Row>,
    /// The timer-wake probe batches of this scenario's runs, if it has
    /// periodic tasks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timer_probe: Option<ProbeSummary>,
}

/// The timer-wake probe batches run before each real run of a scenario
/// (`real::timer_probe_batch`), on the CPUs its periodic tasks use.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct ProbeSummary {
    pub cpus: Vec<u32>,
    /// Per batch (one before each real run and one after the last), the
    /// median per CPU, ns.
    pub batches: Vec<Vec<u64>>,
    /// The median over the batches of each batch's mean over the CPUs, ns:
    /// the simulated `timer_wake` + `context_switch`.
    pub timer_hog_ns: u64,
    /// max - min of the batches' means, ns: how far the host's wake path
    /// moved between the runs, added to the latency tolerance.
    pub spread_ns: u64,
    /// What the probe's sleeper did between wakeups ([`probe_shape`]): its
    /// shortest sleep and the CPU it burnt per wakeup, ns.
    pub sleep_ns: u64,
    pub burn_ns: u64,
    /// One sleeper free to run on every CPU of `cpus` (a hog on each), one
    /// median per batch, instead of one pinned probe per CPU.
    pub unpinned: bool,
}

impl ProbeSummary {
    /// Summarises the batches (each one value per CPU of `cpus`).
    pub fn of(cpus: Vec<u32>, batches: Vec<Vec<u64>>) -> Option<ProbeSummary> {
        let means: Vec<u64> = batches
            .iter()
            .filter(|b| !b.is_empty())
            .map(|b| b.iter().sum::<u64>() / b.len() as u64)
            .collect();
        let min = *means.iter().min()?;
        let max = *means.iter().max()?;
        let mut sorted = means.clone();
        sorted.sort_unstable();
        let n = sorted.len();
        Some(ProbeSummary {
            cpus,
            batches,
            // The median (of an even count, the mean of the middle two).
            timer_hog_ns: (sorted[(n - 1) / 2] + sorted[n / 2]) / 2,
            spread_ns: max - min,
            sleep_ns: calibrate::ProbeShape::BARE.sleep,
            burn_ns: 0,
            unpinned: false,
        })
    }

    /// The calibrated costs with `timer_wake` from these batches (the
    /// switch into the woken task stays `context_switch`).
    pub fn costs(&self, base: &HostCosts) -> HostCosts {
        HostCosts {
            timer_wake: self.timer_hog_ns.saturating_sub(base.context_switch),
            ..*base
        }
    }

    /// The sentence of the scenario's result line.
    pub fn describe(&self, base: &HostCosts) -> String {
        let us = |v: u64| format!("{:.1}", v as f64 / 1000.0);
        let cpus: Vec<String> = self.cpus.iter().map(|c| c.to_string()).collect();
        let batches: Vec<String> = self
            .batches
            .iter()
            .map(|b| b.iter().map(|&v| us(v)).collect::<Vec<_>>().join("/"))
            .collect();
        let shape = if self.burn_ns > 0 {
            format!(
                " (sleeping {:.1}-{:.1} ms, burning {} us per wakeup)",
                self.sleep_ns as f64 / 1e6,
                (self.sleep_ns + 1_000_000) as f64 / 1e6,
                us(self.burn_ns)
            )
        } else {
            String::new()
        };
        let (what, mean) = match (self.unpinned, self.cpus.len() > 1) {
            (true, _) => ("a hog process on each of CPUs", ""),
            (false, true) => ("a hog process on CPU", ", mean over the CPUs"),
            (false, false) => ("a hog process on CPU", ""),
        };
        format!(
            "timer wake{} against {what} {}{shape} before each run and after the last: {} us (batches {} us{mean}), simulated timer_wake {} us + context_switch {} us; spread {} us added to the latency tolerances",
            if self.unpinned { " of an unpinned sleeper" } else { "" },
            cpus.join("+"),
            us(self.timer_hog_ns),
            batches.join(", "),
            us(self.costs(base).timer_wake),
            us(base.context_switch),
            us(self.spread_ns)
        )
    }
}

/// The CPUs a scenario's periodic tasks can run on (sorted; every CPU of
/// the machine if one is unpinned), empty without periodic tasks.
pub fn periodic_cpus(sc: &Scenario, cpus: u32) -> Vec<u32> {
    let mut v: Vec<u32> = Vec::new();
    for t in &sc.tasks {
        if let TaskKind::Periodic { .. } = t.kind {
            match &t.cpus {
                Some(c) => v.extend(c.iter().copied().filter(|&c| c < cpus)),
                None => v.extend(0..cpus),
            }
        }
    }
    v.sort_unstable();
    v.dedup();
    v
}

/// Whether every periodic task of `sc` is free to run on every CPU (no
/// affinity), so that its wakeups go through `select_task_rq_fair()`.
pub fn periodic_unpinned(sc: &Scenario) -> bool {
    let mut any = false;
    for t in &sc.tasks {
        if let TaskKind::Periodic { .. } = t.kind {
            if t.cpus.is_some() {
                return false;
            }
            any = true;
        }
    }
    any
}

/// The shape of a scenario's timer-wake probe: its first periodic task's
/// period and run ([`calibrate::ProbeShape::periodic`]), so that the probe's
/// sleeper sleeps and burns as that task does and its wakeup pays the same
/// kernel path; the bare probe without periodic tasks. Traced on this host
/// (docs/conformance.md, "The wake path of a periodic task"), the bare probe
/// (0.5-1.5 ms sleeps, nothing burnt) paid 5-15 us less than the unpinned
/// periodic tasks' prompt wakeups in every stage from the timer interrupt
/// to the return to user space.
pub fn probe_shape(sc: &Scenario) -> calibrate::ProbeShape {
    sc.tasks
        .iter()
        .find_map(|t| match t.kind {
            TaskKind::Periodic { period, run, .. } => {
                Some(calibrate::ProbeShape::periodic(period.0, run.0))
            }
            _ => None,
        })
        .unwrap_or(calibrate::ProbeShape::BARE)
}

/// Samples per CPU of a probe batch of `shape`: [`PROBE_BATCH_SAMPLES`],
/// fewer for long periods so that a batch takes about a second per CPU
/// (at least 100).
pub fn probe_samples(shape: calibrate::ProbeShape) -> u32 {
    let per = shape.sleep + 500_000 + shape.burn;
    ((1_000_000_000 / per.max(1)) as u32).clamp(100, PROBE_BATCH_SAMPLES)
}

/// Why a scenario cannot be run by conform, if it cannot.
pub fn host_only_check(sc: &Scenario, cpus: u32) -> Result<(), String> {
    if sc.until_done {
        return Err(
            "global.duration -1: the program ends by itself; conform compares a steady window, give a duration"
                .into(),
        );
    }
    if let Some(vm) = sc.vms.first() {
        return Err(format!(
            "vm {}: scenarios with [[vm]] are not host-only (conform runs hog, periodic, yield_loop, pingpong)",
            vm.name
        ));
    }
    for t in &sc.tasks {
        match &t.kind {
            TaskKind::Messaging { .. } => {
                return Err(format!(
                    "task {}: kind messaging is not host-only (conform runs hog, periodic, yield_loop, pingpong)",
                    t.name
                ))
            }
            TaskKind::YieldLoop {
                target: Some(tg), ..
            } => {
                return Err(format!(
                    "task {}: yield_loop target {tg:?} needs yield_to(), which user space cannot call",
                    t.name
                ))
            }
            _ => {}
        }
        if t.slice.is_some() {
            return Err(format!(
                "task {}: custom slices are not supported by conform",
                t.name
            ));
        }
        if let Some(c) = t.cpus.as_ref().and_then(|v| v.iter().find(|&&c| c >= cpus)) {
            return Err(format!(
                "task {}: CPU {c} does not exist here ({cpus} CPUs)",
                t.name
            ));
        }
    }
    Ok(())
}

/// The scenario as the simulator runs it to mirror this machine, with the
/// machine's calibrated `costs`. The real workers' bursts are CPU budgets
/// that include the kernel's switch into the task (docs/conformance.md); the
/// model charges that switch on top of a burst, so each per-activation
/// budget is reduced by `costs.context_switch` (to at least 1 ns).
pub fn simulated(sc: &Scenario, h: &HostInfo, costs: &HostCosts) -> Scenario {
    let mut s = sc.clone();
    s.host.cpus = h.cpus;
    s.host.hz = h.hz;
    s.host.kernel = h.preset;
    s.host.features = h.preset.features();
    s.host.overrides.clear();
    s.host.costs = *costs;
    let cs = Nanos(costs.context_switch);
    let less = |d: Nanos| Nanos(d.0.saturating_sub(cs.0).max(1));
    for t in &mut s.tasks {
        match &mut t.kind {
            TaskKind::Periodic { run, .. } | TaskKind::PingPong { run } => *run = less(*run),
            TaskKind::YieldLoop { work, .. } => *work = less(*work),
            _ => {}
        }
    }
    s
}

fn in_subtree(task_cg: &str, cg: &str) -> bool {
    let cg = cg.trim_end_matches('/');
    cg.is_empty() || task_cg == cg || task_cg.starts_with(&format!("{cg}/"))
}

/// Per-task figures of one run: (name, cgroup, cpu_ns, latency p50/p99,
/// migrations in the window).
pub type RunFigures = Vec<(String, String, u64, Option<(u64, u64)>, Option<u64>)>;

fn shares(run: &RunFigures) -> Vec<f64> {
    let total: u64 = run.iter().map(|t| t.2).sum::<u64>().max(1);
    run.iter().map(|t| t.2 as f64 / total as f64).collect()
}

fn cg_share(run: &RunFigures, cg: &str) -> f64 {
    let total: u64 = run.iter().map(|t| t.2).sum::<u64>().max(1);
    let s: u64 = run
        .iter()
        .filter(|t| in_subtree(&t.1, cg))
        .map(|t| t.2)
        .sum();
    s as f64 / total as f64
}

/// One comparison row: the real runs' mean, min and max against `sim`;
/// `tol(mean, spread)` gives the tolerance; `judged` = Some(eps) judges
/// |sim - mean| <= tolerance + eps, None leaves the row informational.
fn row(
    (kind, name, metric): (&str, &str, &str),
    real: &[f64],
    sim: f64,
    tol: impl FnOnce(f64, f64) -> f64,
    judged: Option<f64>,
) -> Row {
    let mean = real.iter().sum::<f64>() / real.len().max(1) as f64;
    let min = real.iter().cloned().fold(f64::INFINITY, f64::min);
    let max = real.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let tolerance = tol(mean, max - min);
    Row {
        kind: kind.into(),
        name: name.into(),
        metric: metric.into(),
        real_mean: mean,
        real: real.to_vec(),
        real_min: min,
        real_max: max,
        sim,
        rel_err: if mean > 0.0 { (sim - mean) / mean } else { 0.0 },
        tolerance,
        pass: judged.map(|eps| (sim - mean).abs() <= tolerance + eps),
        known: None,
    }
}

/// Float slack of a share verdict (shares are fractions summed from ns).
const SHARE_EPS: f64 = 1e-12;

fn share_row(kind: &str, name: &str, real: &[f64], sim: f64, floor: f64) -> Row {
    let tol = |mean: f64, spread: f64| (SHARE_REL_TOL * mean).max(spread).max(floor);
    row((kind, name, "share"), real, sim, tol, Some(SHARE_EPS))
}

fn lat_row(name: &str, metric: &str, real: &[f64], sim: f64, judged: bool) -> Row {
    // The real run-to-run spread counts as for shares: on a loaded machine
    // the wake path's median moves between runs.
    let tol = |mean: f64, spread: f64| (LAT_REL_TOL * mean).max(LAT_ABS_TOL_NS).max(spread);
    row(
        ("task", name, metric),
        real,
        sim,
        tol,
        judged.then_some(0.0),
    )
}

/// Compares real runs (same task order as `sim`) with the simulated run.
/// `floor` is the absolute share tolerance floor ([`share_floor`]).
/// `duration_ns` converts migration counts into rates.
pub fn compare(
    sc: &Scenario,
    real: &[RunFigures],
    sim: &RunFigures,
    floor: f64,
    duration_ns: u64,
) -> Vec<Row> {
    let mut rows = Vec::new();
    let secs = duration_ns.max(1) as f64 / 1e9;
    let real_shares: Vec<Vec<f64>> = real.iter().map(shares).collect();
    let sim_shares = shares(sim);
    for (i, t) in sim.iter().enumerate() {
        let r: Vec<f64> = real_shares.iter().map(|s| s[i]).collect();
        rows.push(share_row("task", &t.0, &r, sim_shares[i], floor));
        if let Some((p50, p99)) = t.3 {
            let r50: Vec<f64> = real
                .iter()
                .filter_map(|r| r[i].3)
                .map(|l| l.0 as f64)
                .collect();
            let r99: Vec<f64> = real
                .iter()
                .filter_map(|r| r[i].3)
                .map(|l| l.1 as f64)
                .collect();
            if !r50.is_empty() {
                rows.push(lat_row(&t.0, "lat_p50", &r50, p50 as f64, true));
                rows.push(lat_row(&t.0, "lat_p99", &r99, p99 as f64, false));
            }
        }
        if let Some(m) = t.4 {
            let rm: Vec<f64> = real
                .iter()
                .filter_map(|r| r[i].4)
                .map(|x| x as f64 / secs)
                .collect();
            if rm.len() == real.len() && !rm.is_empty() {
                rows.push(migr_row(&t.0, &rm, m as f64 / secs));
            }
        }
    }
    for c in &sc.cgroups {
        let r: Vec<f64> = real.iter().map(|run| cg_share(run, &c.path)).collect();
        rows.push(share_row(
            "cgroup",
            &c.path,
            &r,
            cg_share(sim, &c.path),
            floor,
        ));
    }
    rows
}

/// Adds `extra` (measured in the same run) to the tolerance of the judged
/// `metric` rows and judges them again, with the `eps` they were built with.
fn widen(rows: &mut [Row], metric: &str, extra: f64, eps: f64) {
    for r in rows
        .iter_mut()
        .filter(|r| r.metric == metric && r.pass.is_some())
    {
        r.tolerance += extra;
        r.pass = Some((r.sim - r.real_mean).abs() <= r.tolerance + eps);
    }
}

/// Adds `spread` (ns, measured in the same run) to the tolerance of the
/// judged latency medians and judges them again.
pub fn widen_latency(rows: &mut [Row], spread: f64) {
    widen(rows, "lat_p50", spread, 0.0);
}

/// Migrations per second (`se.nr_migrations` over the window): agree when
/// |real - sim| <= max(MIGR_REL_TOL of real, the real spread, MIGR_ABS_TOL).
fn migr_row(name: &str, real: &[f64], sim: f64) -> Row {
    let tol = |mean: f64, spread: f64| (MIGR_REL_TOL * mean).max(spread).max(MIGR_ABS_TOL);
    row(("task", name, "migr/s"), real, sim, tol, Some(1e-12))
}

fn fmt_val(metric: &str, v: f64) -> String {
    if metric == "share" {
        format!("{:.2}%", v * 100.0)
    } else if metric.ends_with("/s") {
        format!("{v:.1}/s")
    } else {
        format!("{:.1}us", v / 1000.0)
    }
}

/// The table of one scenario's rows.
pub fn table(rows: &[Row]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "  {:<6} {:<22} {:<7} {:>9} {:>19} {:>9} {:>8} {:>8}  verdict",
        "what", "name", "metric", "real", "real min..max", "sim", "rel.err", "tol"
    );
    for r in rows {
        let verdict = match (r.pass, &r.known) {
            (Some(true), _) => "ok",
            (Some(false), None) => "FAIL",
            (Some(false), Some(_)) => "known (see below)",
            (None, _) => "info",
        };
        let _ = writeln!(
            s,
            "  {:<6} {:<22} {:<7} {:>9} {:>19} {:>9} {:>7.1}% {:>8}  {verdict}",
            r.kind,
            r.name,
            r.metric,
            fmt_val(&r.metric, r.real_mean),
            format!(
                "{}..{}",
                fmt_val(&r.metric, r.real_min),
                fmt_val(&r.metric, r.real_max)
            ),
            fmt_val(&r.metric, r.sim),
            r.rel_err * 100.0,
            fmt_val(&r.metric, r.tolerance),
        );
    }
    let mut seen: Vec<String> = Vec::new();
    for r in rows.iter().filter(|r| r.pass == Some(false)) {
        if let Some(k) = &r.known {
            if !seen.contains(k) {
                let _ = writeln!(s, "  known disagreement: {k}");
                seen.push(k.clone());
            }
        }
    }
    s
}

/// The one-line statement of the tolerances.
pub fn tolerance_line() -> String {
    format!(
        "tolerances: CPU share |sim-real| <= max({:.0}% of real, real spread max-min, {:.1} points, one tick of the run); latency p50 <= max({:.0}% of real, {:.0}us, real spread) + the spread of the timer-wake probe batches before the runs; p99 informational",
        SHARE_REL_TOL * 100.0,
        SHARE_ABS_TOL * 100.0,
        LAT_REL_TOL * 100.0,
        LAT_ABS_TOL_NS / 1000.0
    )
}

fn sim_figures(
    sc: &Scenario,
    h: &HostInfo,
    costs: &HostCosts,
    duration: Option<u64>,
) -> RunFigures {
    let s = simulated(sc, h, costs);
    let r = oversub::run_scenario(&s, None, duration.map(oversub::engine::Nanos));
    r.tasks
        .iter()
        .map(|t| {
            let lat = t.wakeup_latency_ns.clone();
            let periodic = sc.tasks.iter().any(|ts| {
                matches!(ts.kind, TaskKind::Periodic { .. })
                    && oversub::scenario::expanded_names(ts).contains(&t.name)
            });
            (
                t.name.clone(),
                t.cgroup.clone(),
                t.cpu_ns,
                periodic.then_some((lat.p50, lat.p99)),
                Some(t.nr_migrations),
            )
        })
        .collect()
}

/// Runs `oversub conform`; returns the exit code (0 all agreed or skipped,
/// 1 a disagreement or error).
pub fn run(opts: &Options) -> i32 {
    let stop = crate::progress::interrupt_flag();
    let mut h = HostInfo::detect();
    let chosen = match opts.kernel {
        Some(k) => {
            h.preset = k;
            "--kernel"
        }
        None => "the running kernel's",
    };
    let ctl = host::detect_cpu_controller();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "host: {} CPUs, kernel {} (simulated with preset {}, {chosen}), {}",
        h.cpus,
        h.release,
        h.preset,
        h.hz_note()
    );
    let _ = writeln!(
        out,
        "features: compared at the host's defaults only (the host cannot toggle sched features; [host.features] overrides are ignored)"
    );
    match &ctl {
        Ok(c) => {
            let _ = writeln!(out, "cpu controller: {}", c.describe());
        }
        Err(e) => {
            let _ = writeln!(out, "conform: SKIP (cannot run on the real kernel: {e})");
        }
    }
    let _ = writeln!(out, "{}", tolerance_line());
    // Two conform runs at once would each give their workers weight 10000
    // and take half the machine from the other: real runs are serialised
    // by an exclusive lock held until the end.
    let _lock = match &ctl {
        Ok(_) => match machine_lock() {
            Ok(f) => Some(f),
            Err(e) => {
                eprintln!("conform: {e}");
                return 1;
            }
        },
        Err(_) => None,
    };
    // A bar over the calibration and every real run, after 2 s on a terminal.
    let steps = 1 + opts.files.len() as u64 * u64::from(opts.runs.max(1));
    let bar = crate::progress::Steps::new(
        steps,
        "real runs",
        "conform",
        ctl.is_ok() && crate::progress::wanted(!opts.json),
    );
    // The machine's own costs, measured now, drive the simulated side.
    let cal = match &ctl {
        Ok(c) => {
            let tag = format!("oversub-conform-{}-calibrate", std::process::id());
            match real::calibrate_in_cgroup(c, &tag, CALIBRATION_SAMPLES) {
                Ok(cal) => Some(cal),
                Err(e) => {
                    bar.finish();
                    eprintln!("conform: calibration failed: {e}");
                    return 1;
                }
            }
        }
        Err(_) => None,
    };
    bar.inc();
    let costs = cal.as_ref().map_or_else(HostCosts::default, |c| c.costs);
    if let Some(c) = &cal {
        let _ = writeln!(out, "simulated with the costs calibrated in this run:");
        out += &c.table();
    }
    if !opts.json {
        bar.suspend(|| out!("{out}"));
    }
    let mut results = Vec::new();
    for f in &opts.files {
        let r = run_file(f, &h, &ctl, &costs, opts, &stop, &bar);
        if !opts.json {
            bar.suspend(|| print_result(&r));
        }
        results.push(r);
        if stop.load(std::sync::atomic::Ordering::SeqCst) {
            bar.finish();
            eprintln!("conform: interrupted; workers killed and cgroups removed");
            return i32::from(crate::progress::EXIT_INTERRUPTED);
        }
    }
    bar.finish();
    let count = |s: &str| results.iter().filter(|r| r.status == s).count();
    let (pass, fail, skip, err) = (count("pass"), count("fail"), count("skip"), count("error"));
    if opts.json {
        let v = serde_json::json!({
            "host": {"cpus": h.cpus, "hz": h.hz, "hz_source": h.hz_note(), "release": h.release,
                     "preset": h.preset.name(),
                     "controller": ctl.as_ref().map(|c| c.describe()).unwrap_or_else(|e| format!("skip: {e}"))},
            "tolerances": tolerance_line(),
            "calibration": cal.as_ref().map(|c| c.to_json()),
            "scenarios": results,
            "passed": pass, "failed": fail, "skipped": skip, "errors": err,
        });
        outln!("{v}");
    } else {
        outln!("conform: {pass} passed, {fail} failed, {skip} skipped, {err} errors");
    }
    if fail + err > 0 {
        1
    } else {
        0
    }
}

/// The CPU time periodic tasks skipped in one real run, as a fraction of the
/// scenario's CPU time.
fn skipped_fraction(tasks: &[real::RealTask]) -> f64 {
    let total: u64 = tasks.iter().map(|t| t.cpu_ns).sum();
    let skipped: u64 = tasks.iter().filter_map(|t| t.skipped_ns).sum();
    skipped as f64 / total.max(1) as f64
}

/// The machine-wide lock of real conform runs; waits for another run to end.
pub const LOCK_FILE: &str = "/tmp/oversub-conform.lock";

fn machine_lock() -> Result<std::fs::File, String> {
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(LOCK_FILE)
        .map_err(|e| format!("{LOCK_FILE}: cannot open: {e}"))?;
    use rustix::fs::{flock, FlockOperation};
    if flock(&f, FlockOperation::NonBlockingLockExclusive).is_err() {
        eprintln!("conform: waiting for another oversub conform run to finish ({LOCK_FILE})");
        flock(&f, FlockOperation::LockExclusive)
            .map_err(|e| format!("{LOCK_FILE}: cannot lock: {e}"))?;
    }
    Ok(f)
}

fn print_result(r: &ScenarioResult) {
    outln!(
        "{}: {}{}",
        r.file,
        r.status.to_uppercase(),
        if r.message.is_empty() {
            String::new()
        } else {
            format!(" ({})", r.message)
        }
    );
    if !r.rows.is_empty() {
        out!("{}", table(&r.rows));
    }
}

/// Relative tolerance of voluntary switch rates of program threads.
pub const SWITCH_REL_TOL: f64 = 0.15;
/// Absolute floor of the switch-rate tolerance, per second.
pub const SWITCH_ABS_TOL: f64 = 5.0;

fn rate_row(name: &str, metric: &str, real: &[f64], sim: f64, tol: Option<f64>) -> Row {
    let tolerance = |_: f64, spread: f64| tol.unwrap_or(0.0).max(spread);
    row(
        ("task", name, metric),
        real,
        sim,
        tolerance,
        tol.map(|_| 1e-9),
    )
}

/// Per program thread: voluntary switches per second (judged: the
/// program's blocking decides them), involuntary switches per second and
/// the mean wait per timeslice (informational: other load on the machine
/// moves them).
pub fn program_rows(
    names: &[String],
    real: &[Vec<rtapp::ThreadFigures>],
    sim: &oversub::report::Report,
    window_ns: u64,
) -> Vec<Row> {
    let secs = window_ns as f64 / 1e9;
    let mut rows = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let Some(t) = sim.tasks.iter().find(|t| &t.name == name) else {
            continue;
        };
        let vol: Vec<f64> = real.iter().map(|r| r[i].voluntary as f64 / secs).collect();
        let mean = vol.iter().sum::<f64>() / vol.len().max(1) as f64;
        let tol = (SWITCH_REL_TOL * mean).max(SWITCH_ABS_TOL);
        rows.push(rate_row(
            name,
            "vol_sw/s",
            &vol,
            t.nr_voluntary_switches as f64 / secs,
            Some(tol),
        ));
        let inv: Vec<f64> = real
            .iter()
            .map(|r| r[i].involuntary as f64 / secs)
            .collect();
        rows.push(rate_row(
            name,
            "invol_sw/s",
            &inv,
            t.nr_involuntary_switches as f64 / secs,
            None,
        ));
        let wait: Vec<f64> = real
            .iter()
            .map(|r| r[i].run_delay_ns as f64 / r[i].timeslices.max(1) as f64)
            .collect();
        let sim_wait = t.wait_ns as f64 / t.nr_switches.max(1) as f64;
        rows.push(rate_row(name, "wait_per_run", &wait, sim_wait, None));
    }
    rows
}

/// The CPUs of a program's threads when every one is pinned (sorted), else
/// None.
pub fn program_cpus(sc: &Scenario) -> Option<Vec<u32>> {
    let mut v: Vec<u32> = Vec::new();
    for t in &sc.tasks {
        v.extend(t.cpus.as_ref()?);
    }
    v.sort_unstable();
    v.dedup();
    (!v.is_empty()).then_some(v)
}

/// Each run's figures `runs` (in the order of the names `have`) in the order
/// of the names `want`; an error names a wanted name that is missing.
pub fn in_order_of<T: Clone>(
    want: &[String],
    have: &[String],
    runs: Vec<Vec<T>>,
) -> Result<Vec<Vec<T>>, String> {
    let idx: Vec<usize> = want
        .iter()
        .map(|w| {
            have.iter()
                .position(|h| h == w)
                .ok_or_else(|| format!("no real thread for the simulated task {w}"))
        })
        .collect::<Result<_, _>>()?;
    Ok(runs
        .into_iter()
        .map(|r| idx.iter().filter_map(|&i| r.get(i).cloned()).collect())
        .collect())
}

/// Runs an rt-app program: the real runs, each between two measurements of
/// the busy loop's cost, then the simulator with the measured cost. Returns
/// the rows, the number of real runs and a note on the calibration.
#[allow(clippy::too_many_arguments)] // the run's context, passed as run_file gets it
fn run_program_file(
    file: &str,
    sc: &Scenario,
    h: &HostInfo,
    ctl: &CpuController,
    costs: &HostCosts,
    duration: u64,
    opts: &Options,
    stop: &Arc<AtomicBool>,
    bar: &crate::progress::Steps,
) -> Result<(Vec<Row>, usize, String), String> {
    let src = std::fs::read_to_string(file).map_err(|e| format!("cannot read: {e}"))?;
    // The loop is measured on the program's CPUs when every thread is
    // pinned (all shipped programs are).
    let cal_cpus = program_cpus(sc);
    let cal =
        || rtapp::measure_ns_per_loop(cal_cpus.as_deref()).map_err(|e| format!("calibration: {e}"));
    let mut loop_ns = vec![cal()?];
    let ns_per_loop = (loop_ns[0].round() as i64).max(1);
    let mut real_runs = Vec::new();
    let mut real_threads = Vec::new();
    for i in 0..opts.runs.max(1) {
        let tag = format!("oversub-conform-{}-{i}", std::process::id());
        let th = rtapp::run_once(sc, &src, ctl, &tag, duration, ns_per_loop, stop)
            .map_err(|e| format!("real run {}: {e}", i + 1))?;
        bar.inc();
        real_threads.push(th);
        loop_ns.push(cal()?);
    }
    let mean = loop_ns.iter().sum::<f64>() / loop_ns.len() as f64;
    let lo = loop_ns.iter().cloned().fold(f64::INFINITY, f64::min);
    let hi = loop_ns.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let drift = (hi - lo) / mean;
    // rt-app's loop costs `mean` ns where it was told `ns_per_loop`: the
    // simulated program runs what the real one did.
    let scale = mean / ns_per_loop as f64;
    // rt-app's runs are loops of work, not CPU budgets: the model's switch
    // cost comes on top as it does for the real program.
    let mut simsc = simulated(sc, h, costs);
    if let Some(p) = simsc.program.as_mut() {
        p.scale_runs(scale);
    }
    let simr = oversub::run_scenario(&simsc, None, Some(oversub::engine::Nanos(duration)));
    let sim: RunFigures = simr
        .tasks
        .iter()
        .map(|t| (t.name.clone(), t.cgroup.clone(), t.cpu_ns, None, None))
        .collect();
    let names: Vec<String> = sim.iter().map(|t| t.0.clone()).collect();
    // The real figures come in the program's thread order; the rows follow
    // the simulator's: match them by name.
    let prog_names: Vec<String> = sc
        .program
        .as_ref()
        .map(|p| p.threads.iter().map(|t| t.name.clone()).collect())
        .unwrap_or_default();
    let real_threads = in_order_of(&names, &prog_names, real_threads)?;
    for th in &real_threads {
        real_runs.push(
            names
                .iter()
                .zip(th)
                .map(|(n, t)| (n.clone(), "/".to_string(), t.cpu_ns, None, None))
                .collect::<RunFigures>(),
        );
    }
    let mut rows = compare(sc, &real_runs, &sim, share_floor(h.hz, duration), duration);
    // A `run` costs what the loop cost at that moment: the measured drift
    // of the loop's cost over the runs bounds how far a demand-bound share
    // can move for that reason alone.
    for r in rows.iter_mut().filter(|r| r.metric == "share") {
        r.tolerance = r.tolerance.max(drift * r.real_mean);
        r.pass = Some((r.sim - r.real_mean).abs() <= r.tolerance + SHARE_EPS);
    }
    rows.extend(program_rows(&names, &real_threads, &simr, duration));
    let note = format!(
        "busy loop {mean:.1} ns by CPU time (drift {:.1}% over the runs), rt-app told {ns_per_loop}, run x{scale:.3}",
        drift * 100.0
    );
    Ok((rows, real_runs.len(), note))
}

fn run_file(
    f: &std::path::Path,
    h: &HostInfo,
    ctl: &Result<CpuController, String>,
    costs: &HostCosts,
    opts: &Options,
    stop: &Arc<AtomicBool>,
    bar: &crate::progress::Steps,
) -> ScenarioResult {
    let file = f.display().to_string();
    let res = |status: &str, message: String, rows: Vec<Row>| ScenarioResult {
        file: file.clone(),
        status: status.into(),
        message,
        rows,
        timer_probe: None,
    };
    let sc = match Scenario::load(f) {
        Ok(s) => s,
        Err(e) => return res("error", e.to_string(), vec![]),
    };
    let known = known_of(&std::fs::read_to_string(f).unwrap_or_default());
    if let Err(e) = host_only_check(&sc, h.cpus) {
        return res("error", format!("rejected: {e}"), vec![]);
    }
    let ctl = match ctl {
        Ok(c) => c,
        Err(e) => return res("skip", e.clone(), vec![]),
    };
    let duration = opts.duration.unwrap_or(sc.host.duration.0);
    if sc.program.is_some() {
        if !rtapp::rtapp_available() {
            return res("skip", "rt-app is not installed".into(), vec![]);
        }
        return match run_program_file(&file, &sc, h, ctl, costs, duration, opts, stop, bar) {
            Ok((mut rows, n, note)) => {
                apply_known(&mut rows, &known);
                let ok = !rows.iter().any(row_fails);
                let msg = format!(
                    "{n} real rt-app runs, window {} ms; {note}",
                    duration / 1_000_000
                );
                res(if ok { "pass" } else { "fail" }, msg, rows)
            }
            Err(e) => res("error", e, vec![]),
        };
    }
    let mut real_runs = Vec::new();
    let mut skipped_share: f64 = 0.0;
    let mut all_aligned = true;
    // The host's timer wake path moves on a minutes scale (docs/
    // conformance.md): a probe batch right before each real run, on the
    // CPUs the periodic tasks use, gives the simulated side its wake cost.
    // One more batch after the last run, so that every run lies between
    // two batches.
    let probe_cpus = periodic_cpus(&sc, h.cpus);
    let unpinned = periodic_unpinned(&sc) && probe_cpus.len() > 1;
    let shape = probe_shape(&sc);
    let samples = probe_samples(shape);
    let mut batches = Vec::new();
    let probe_batch = |i: u32| {
        let tag = format!("oversub-conform-{}-{i}-probe", std::process::id());
        real::timer_probe_batch(ctl, &tag, &probe_cpus, samples, shape, unpinned, stop)
            .map_err(|e| format!("probe batch {}: {e}", i + 1))
    };
    for i in 0..opts.runs.max(1) {
        let tag = format!("oversub-conform-{}-{i}", std::process::id());
        if !probe_cpus.is_empty() {
            match probe_batch(i) {
                Ok(b) => batches.push(b),
                Err(e) => return res("error", e, vec![]),
            }
        }
        let tick_ns = 1_000_000_000 / u64::from(h.hz.max(1));
        let run = real::run_once(&sc, ctl, &tag, duration, Some(tick_ns), stop);
        bar.inc();
        match run {
            Ok((tasks, aligned)) => real_runs.push({
                all_aligned &= aligned;
                skipped_share = skipped_share.max(skipped_fraction(&tasks));
                tasks
                    .into_iter()
                    .map(|t| {
                        let lat = t.latency.map(|p| (p.p50, p.p99));
                        (t.name, t.cgroup, t.cpu_ns, lat, t.nr_migrations)
                    })
                    .collect::<RunFigures>()
            }),
            Err(e) => return res("error", format!("real run {}: {e}", i + 1), vec![]),
        }
    }
    if !probe_cpus.is_empty() {
        match probe_batch(opts.runs.max(1)) {
            Ok(b) => batches.push(b),
            Err(e) => return res("error", e, vec![]),
        }
    }
    let probe = ProbeSummary::of(probe_cpus, batches).map(|p| ProbeSummary {
        sleep_ns: shape.sleep,
        burn_ns: shape.burn,
        unpinned,
        ..p
    });
    let sim_costs = probe.as_ref().map_or(*costs, |p| p.costs(costs));
    let sim = sim_figures(&sc, h, &sim_costs, Some(duration));
    let mut rows = compare(&sc, &real_runs, &sim, share_floor(h.hz, duration), duration);
    if let Some(p) = &probe {
        widen_latency(&mut rows, p.spread_ns as f64);
    }
    let res = |status: &str, message: String, rows: Vec<Row>| ScenarioResult {
        timer_probe: probe.clone(),
        ..res(status, message, rows)
    };
    if skipped_share > SKIPPED_LIMIT {
        let msg = format!(
            "machine too busy to judge: periodic tasks skipped {:.2}% of the CPU time in a real run (limit {:.0}%)",
            skipped_share * 100.0,
            SKIPPED_LIMIT * 100.0
        );
        return res("skip", msg, rows);
    }
    // A periodic activation that the machine delayed past the next expiry
    // is skipped, and its `run` of CPU goes to the other tasks: the share
    // so moved, measured in the run, widens every share tolerance.
    widen(&mut rows, "share", skipped_share, SHARE_EPS);
    apply_known(&mut rows, &known);
    let ok = !rows.iter().any(row_fails);
    let nknown = rows
        .iter()
        .filter(|r| r.pass == Some(false) && r.known.is_some())
        .count();
    let mut msg = format!(
        "{} real runs of {} ms",
        real_runs.len(),
        duration / 1_000_000
    );
    if nknown > 0 {
        let _ = write!(msg, "; {nknown} known disagreements, not counted");
    }
    if !all_aligned {
        let _ = write!(
            msg,
            "; the tick's phase was not found in /proc/timer_list, real runs started at any phase of it"
        );
    }
    if let Some(p) = &probe {
        let _ = write!(msg, "; {}", p.describe(costs));
    }
    if skipped_share > 0.0 {
        let _ = write!(
            msg,
            "; periodic tasks skipped up to {:.2}% of the CPU time, added to the share tolerances",
            skipped_share * 100.0
        );
    }
    res(if ok { "pass" } else { "fail" }, msg, rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_threads_follow_the_simulated_order_by_name() {
        let s = |v: &[&str]| -> Vec<String> { v.iter().map(|x| x.to_string()).collect() };
        let runs = vec![vec![25, 75], vec![24, 76]];
        // The program lists nice5 first, the simulator nice0 first.
        assert_eq!(
            in_order_of(
                &s(&["nice0", "nice5"]),
                &s(&["nice5", "nice0"]),
                runs.clone()
            ),
            Ok(vec![vec![75, 25], vec![76, 24]])
        );
        assert_eq!(
            in_order_of(
                &s(&["nice5", "nice0"]),
                &s(&["nice5", "nice0"]),
                runs.clone()
            ),
            Ok(runs.clone())
        );
        assert!(in_order_of(&s(&["x"]), &s(&["nice5", "nice0"]), runs)
            .unwrap_err()
            .contains("simulated task x"));
    }

    #[test]
    fn program_rows_judge_voluntary_switch_rates_only() {
        // A thread that sleeps 1 ms after every 1 ms run: ~500 voluntary
        // switches per second in the simulator.
        let mut sc = oversub::scenario::rtapp::scenario(
            "p.json",
            r#"{"global": {"duration": 1, "log_size": 0}, "tasks": {"t": {"run": 1000, "sleep": 1000}}}"#,
        )
        .unwrap();
        // A free wake path, so that the period is exactly 2 ms (the host
        // costs would add ~35 us to each sleep's wakeup on an idle CPU).
        sc.host.costs = HostCosts::ZERO;
        let sim = oversub::run_scenario(&sc, None, None);
        let names = vec!["t".to_string()];
        let real = |vol: u64| {
            vec![rtapp::ThreadFigures {
                cpu_ns: 500_000_000,
                run_delay_ns: 1_000_000,
                timeslices: 500,
                voluntary: vol,
                involuntary: 7,
            }]
        };
        let rows = program_rows(&names, &[real(500)], &sim, 1_000_000_000);
        let by = |m: &str| rows.iter().find(|r| r.metric == m).unwrap().clone();
        assert_eq!(by("vol_sw/s").pass, Some(true));
        assert!((by("vol_sw/s").sim - 500.0).abs() <= 1.0);
        assert_eq!(by("invol_sw/s").pass, None, "informational");
        assert_eq!(by("wait_per_run").pass, None, "informational");
        assert_eq!(by("wait_per_run").real_mean, 2_000.0);
        // 20% more real switches is outside the 15% tolerance.
        let rows = program_rows(&names, &[real(600)], &sim, 1_000_000_000);
        let vol = rows.iter().find(|r| r.metric == "vol_sw/s").unwrap();
        assert_eq!(vol.pass, Some(false));
    }

    fn fig(v: &[(&str, &str, u64)]) -> RunFigures {
        v.iter()
            .map(|(n, c, x)| (n.to_string(), c.to_string(), *x, None, None))
            .collect()
    }

    #[test]
    fn subtree() {
        assert!(in_subtree("/a/b", "/a"));
        assert!(!in_subtree("/ab", "/a"));
        assert!(in_subtree("/x", "/"));
    }

    #[test]
    fn share_tolerance_uses_spread() {
        let r = share_row("task", "a", &[0.25, 0.25], 0.254, 0.002);
        assert_eq!(r.pass, Some(true)); // 2% of 0.25 = 0.005
        let r = share_row("task", "a", &[0.25, 0.25], 0.26, 0.002);
        assert_eq!(r.pass, Some(false));
        let r = share_row("task", "a", &[0.24, 0.26], 0.265, 0.002);
        assert_eq!(r.pass, Some(true)); // spread 0.02
    }

    #[test]
    fn compare_cgroups_and_tasks() {
        let sc = Scenario::parse(
            "t.toml",
            "[[cgroup]]\npath=\"/a\"\nweight=100\n[[cgroup]]\npath=\"/b\"\nweight=300\n\
             [[task]]\nname=\"x\"\nkind=\"hog\"\ncgroup=\"/a\"\n[[task]]\nname=\"y\"\nkind=\"hog\"\ncgroup=\"/b\"\n",
        )
        .unwrap();
        let real = vec![fig(&[("x", "/a", 250), ("y", "/b", 750)])];
        let sim = fig(&[("x", "/a", 251), ("y", "/b", 749)]);
        let rows = compare(
            &sc,
            &real,
            &sim,
            share_floor(250, 2_000_000_000),
            2_000_000_000,
        );
        assert!((share_floor(250, 1_000_000_000) - 0.004).abs() < 1e-12);
        assert_eq!(rows.len(), 4);
        assert!(rows.iter().all(|r| r.pass == Some(true)));
        assert!(table(&rows).contains("/b"));
        assert!(host_only_check(&sc, 2).is_ok());
    }

    #[test]
    fn latency_median_within_25_percent_or_5us_no_20us_floor() {
        // The issue's failure: 24.2 us real against a model without wake
        // costs (0 us) is a disagreement, not hidden by a floor.
        let r = lat_row("waker", "lat_p50", &[24_200.0, 24_200.0], 0.0, true);
        assert_eq!(r.pass, Some(false));
        assert_eq!(r.tolerance, 6_050.0);
        // Small medians: 5 us absolute.
        let r = lat_row("w", "lat_p50", &[6_000.0, 6_000.0], 10_900.0, true);
        assert_eq!(r.pass, Some(true));
        let r = lat_row("w", "lat_p50", &[6_000.0, 6_000.0], 11_100.0, true);
        assert_eq!(r.pass, Some(false));
        // The real spread widens it (measured in the same run).
        let r = lat_row("w", "lat_p50", &[16_000.0, 31_000.0], 16_200.0, true);
        assert_eq!(r.pass, Some(true));
        // p99 is never judged.
        assert_eq!(lat_row("w", "lat_p99", &[1e6], 0.0, false).pass, None);
    }

    #[test]
    fn simulated_side_uses_the_calibrated_costs() {
        let sc = Scenario::load(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../conform/periodic_vs_hog.toml"),
        )
        .unwrap();
        let h = HostInfo {
            cpus: 2,
            hz: 250,
            hz_source: host::HzSource::Default,
            release: "6.18.0".into(),
            preset: oversub::sched::KernelPreset::V6_12_117,
        };
        let costs = HostCosts {
            timer_wake: 15_000,
            idle_exit: 0,
            context_switch: 3_000,
            remote_wakeup: 0,
            migration: 0,
        };
        let s = simulated(&sc, &h, &costs);
        assert_eq!(s.host.costs, costs);
        let fig = sim_figures(&sc, &h, &costs, Some(200_000_000));
        let waker = fig.iter().find(|t| t.0 == "waker").unwrap();
        // Wake latency = interrupt path + the switch; the budget (100 us,
        // switch included) is kept: 5% of the CPU.
        assert_eq!(waker.3.unwrap().0, 18_000);
        let share = waker.2 as f64 / fig.iter().map(|t| t.2).sum::<u64>() as f64;
        assert!((share - 0.05).abs() < 0.002, "{share}");
    }

    #[test]
    fn probe_batches_give_the_wake_cost_and_widen_latency_tolerances() {
        // Three batches on CPUs 0 and 1: per-batch means 20, 16 and 30 us.
        let p = ProbeSummary::of(
            vec![0, 1],
            vec![
                vec![18_000, 22_000],
                vec![16_000, 16_000],
                vec![30_000, 30_000],
            ],
        )
        .unwrap();
        assert_eq!(p.timer_hog_ns, 20_000, "median of the batch means");
        assert_eq!(p.spread_ns, 14_000);
        let base = HostCosts {
            timer_wake: 1,
            idle_exit: 7,
            context_switch: 3_000,
            remote_wakeup: 9,
            migration: 0,
        };
        let c = p.costs(&base);
        assert_eq!(c.timer_wake + c.context_switch, 20_000);
        assert_eq!((c.idle_exit, c.remote_wakeup), (7, 9));
        assert!(
            p.describe(&base).contains("CPU 0+1"),
            "{}",
            p.describe(&base)
        );
        assert_eq!(ProbeSummary::of(vec![0], vec![]), None);
        let even = ProbeSummary::of(vec![0], vec![vec![14], vec![15], vec![23], vec![28]]);
        assert_eq!(even.unwrap().timer_hog_ns, 19);
        // 30 us real against 20 us simulated fails at max(25%, 5 us) and
        // passes once the probe's measured spread is added; p99 stays
        // informational.
        let mut rows = vec![
            lat_row("w", "lat_p50", &[30_000.0, 30_000.0], 20_000.0, true),
            lat_row("w", "lat_p99", &[90_000.0], 20_000.0, false),
        ];
        assert_eq!(rows[0].pass, Some(false));
        widen_latency(&mut rows, p.spread_ns as f64);
        assert_eq!(rows[0].pass, Some(true));
        assert_eq!(rows[0].tolerance, 7_500.0 + 14_000.0);
        assert_eq!(rows[1].pass, None);
        assert_eq!(rows[0].real, vec![30_000.0, 30_000.0]);
    }

    #[test]
    fn periodic_cpus_are_the_pinned_ones_or_all() {
        let sc = |t: &str| Scenario::parse("t.toml", t).unwrap();
        let hog = "[[task]]\nname=\"h\"\nkind=\"hog\"\ncpus=[0]\n";
        assert!(periodic_cpus(&sc(hog), 2).is_empty());
        let pinned = format!(
            "{hog}[[task]]\nname=\"p\"\nkind=\"periodic\"\nperiod=\"2ms\"\nrun=\"100us\"\ncpus=[1]\n"
        );
        assert_eq!(periodic_cpus(&sc(&pinned), 2), vec![1]);
        let unpinned = format!(
            "{hog}[[task]]\nname=\"p\"\nkind=\"periodic\"\nperiod=\"2ms\"\nrun=\"100us\"\n"
        );
        assert_eq!(periodic_cpus(&sc(&unpinned), 2), vec![0, 1]);
        assert!(!periodic_unpinned(&sc(hog)));
        assert!(!periodic_unpinned(&sc(&pinned)));
        assert!(periodic_unpinned(&sc(&unpinned)));
        let both = format!(
            "{pinned}[[task]]\nname=\"q\"\nkind=\"periodic\"\nperiod=\"2ms\"\nrun=\"100us\"\n"
        );
        assert!(!periodic_unpinned(&sc(&both)), "one pinned periodic task");
    }

    #[test]
    fn probe_is_shaped_like_the_first_periodic_task() {
        let sc = |t: &str| Scenario::parse("t.toml", t).unwrap();
        let hog = "[[task]]\nname=\"h\"\nkind=\"hog\"\n";
        assert_eq!(probe_shape(&sc(hog)), calibrate::ProbeShape::BARE);
        assert_eq!(
            probe_samples(calibrate::ProbeShape::BARE),
            PROBE_BATCH_SAMPLES
        );
        let p = format!(
            "{hog}[[task]]\nname=\"p\"\nkind=\"periodic\"\nperiod=\"5ms\"\nrun=\"1ms\"\n\
             [[task]]\nname=\"q\"\nkind=\"periodic\"\nperiod=\"10ms\"\nrun=\"2ms\"\n"
        );
        let shape = probe_shape(&sc(&p));
        // Sleeps 3.5-4.5 ms (period - run, within -0.5/+0.5 ms), burns run.
        assert_eq!((shape.sleep, shape.burn), (3_500_000, 1_000_000));
        // About a second per CPU: 1 s / (3.5 + 0.5 + 1 ms) = 200 samples.
        assert_eq!(probe_samples(shape), 200);
        // A short period keeps the bare probe's shortest sleep.
        let short = calibrate::ProbeShape::periodic(1_000_000, 400_000);
        assert_eq!((short.sleep, short.burn), (500_000, 400_000));
        // A long one is held to at least 100 samples.
        assert_eq!(
            probe_samples(calibrate::ProbeShape::periodic(100_000_000, 1)),
            100
        );
        let s = ProbeSummary {
            sleep_ns: shape.sleep,
            burn_ns: shape.burn,
            unpinned: true,
            ..ProbeSummary::of(vec![0, 1], vec![vec![30_000]]).unwrap()
        };
        let d = s.describe(&HostCosts::ZERO);
        assert!(d.contains("unpinned sleeper against a hog process on each of CPUs 0+1 (sleeping 3.5-4.5 ms, burning 1000.0 us"), "{d}");
    }

    #[test]
    fn program_loop_calibration_runs_on_the_programs_cpus() {
        let sc = |j: &str| oversub::scenario::rtapp::scenario("p.json", j).unwrap();
        let pinned = sc(r#"{"global": {"duration": 1}, "tasks": {
            "a": {"cpus": [1], "run": 1000, "sleep": 1000},
            "b": {"cpus": [0, 1], "run": 1000}}}"#);
        assert_eq!(program_cpus(&pinned), Some(vec![0, 1]));
        let free = sc(r#"{"global": {"duration": 1}, "tasks": {
            "a": {"cpus": [1], "run": 1000, "sleep": 1000},
            "b": {"run": 1000}}}"#);
        assert_eq!(program_cpus(&free), None);
    }

    #[test]
    fn known_lines() {
        let k = known_of("x\n# conform-known: yl.* share: yield forfeit\n# other\n");
        assert_eq!(k.len(), 1);
        assert_eq!(k[0].name, "yl.*");
        let mut rows = vec![share_row("task", "yl.0", &[0.065], 0.0625, 0.002)];
        assert!(row_fails(&rows[0]));
        apply_known(&mut rows, &k);
        assert!(!row_fails(&rows[0]));
        assert!(table(&rows).contains("known disagreement: yield forfeit"));
    }

    #[test]
    fn rejects_messaging_and_missing_cpus() {
        let sc = Scenario::parse(
            "t.toml",
            "[host]\ncpus=8\n[[task]]\nname=\"h\"\nkind=\"hog\"\ncpus=[3]\n",
        )
        .unwrap();
        assert!(host_only_check(&sc, 2).unwrap_err().contains("CPU 3"));
        let sc = Scenario::parse(
            "t.toml",
            "[host]\ncpus=2\n[[task]]\nname=\"m\"\nkind=\"messaging\"\nfds=1\n",
        )
        .unwrap();
        assert!(host_only_check(&sc, 2).unwrap_err().contains("messaging"));
    }

    #[test]
    fn rejects_vm_scenarios() {
        let sc = Scenario::load(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../scenarios/kvm-lock-holder-preemption.toml"),
        )
        .unwrap();
        let e = host_only_check(&sc, 16).unwrap_err();
        assert!(e.contains("[[vm]]") && e.contains("not host-only"), "{e}");
    }
}
