//! The orchestration of `oversub conform` and `oversub calibrate`: detect
//! the machine, take the machine lock, calibrate, then per scenario the real
//! runs (each after a timer-wake probe batch) and the simulated run, judged
//! row by row.

use crate::calibrate::{self, Calibration};
use crate::host::{self, CpuController, HostInfo};
use crate::judge::{
    apply_known, compare, in_order_of, known_of, program_rows, row_fails, share_floor, widen,
    widen_latency, widen_to_fraction, Row, RunFigures, ScenarioResult, SKIPPED_LIMIT,
};
use crate::lock::machine_lock;
use crate::probe::{periodic_cpus, periodic_unpinned, probe_samples, probe_shape, ProbeSummary};
use crate::simulated::{host_only_check, program_cpus, sim_distribution, simulated, SIM_SEEDS};
use crate::table::{result_text, tolerance_line};
use crate::ui::Ui;
use crate::{real, rtapp};
use oversub::scenario::Scenario;
use oversub::sched::HostCosts;
use std::fmt::Write;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// Samples per calibration probe in a conform run.
pub const CALIBRATION_SAMPLES: u32 = 1500;

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
    /// Set (by the caller's SIGINT/SIGTERM handler) to stop: the workers are
    /// killed, the cgroups removed, and the run ends [`Outcome::Interrupted`].
    pub stop: Arc<AtomicBool>,
}

/// How a conform run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Every scenario agreed or was skipped.
    Agreed,
    /// A scenario disagreed beyond its tolerances or could not be run.
    Disagreed,
    /// The run could not start (machine lock, calibration); said on stderr.
    Failed,
    /// Stopped by [`Options::stop`].
    Interrupted,
    /// An input was refused before anything ran (a file that does not load
    /// or is not host-only, a `--kernel` that cannot be judged here); the
    /// one line saying which is on stderr.
    BadInput,
}

/// Every input checked before the machine is touched: each file loads and
/// is host-only on `cpus` CPUs, and a `--kernel` preset schedules with the
/// same fair class as the running kernel (`running`): the rows judge the
/// model of one kernel against that kernel, and a CFS model judged against
/// an EEVDF kernel (or the reverse) would judge one scheduler by another.
/// Returns the one line naming the file or option, the value and what is
/// allowed.
pub fn validate(
    opts: &Options,
    cpus: u32,
    running: oversub::sched::KernelPreset,
) -> Result<(), String> {
    if let Some(k) = opts.kernel {
        if k.is_cfs() != running.is_cfs() {
            let class = |p: oversub::sched::KernelPreset| if p.is_cfs() { "CFS" } else { "EEVDF" };
            let allowed: Vec<&str> = oversub::sched::KernelPreset::ALL
                .iter()
                .filter(|p| p.is_cfs() == running.is_cfs())
                .map(|p| p.name())
                .collect();
            return Err(format!(
                "--kernel {}: a {} preset cannot be judged against the running kernel (preset {}, {}); allowed: {} (simulate other kernels with `oversub run --set host.kernel=...`)",
                k.name(),
                class(k),
                running.name(),
                class(running),
                allowed.join(", ")
            ));
        }
    }
    for f in &opts.files {
        let sc = Scenario::load(f).map_err(|e| e.to_string())?;
        host_only_check(&sc, cpus).map_err(|e| format!("{}: {e}", f.display()))?;
    }
    Ok(())
}

/// Runs `oversub conform`: the header, each scenario's result and table,
/// and the count line (or one JSON object with `opts.json`) go to
/// [`Ui::print`].
pub fn run(opts: &Options, ui: &mut dyn Ui) -> Outcome {
    let stop = &opts.stop;
    let mut h = HostInfo::detect();
    if let Err(e) = validate(opts, h.cpus, h.preset) {
        eprintln!("oversub conform: {e}");
        return Outcome::BadInput;
    }
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
                return Outcome::Failed;
            }
        },
        Err(_) => None,
    };
    // A bar over the calibration and every real run, after 2 s on a terminal.
    let steps = 1 + opts.files.len() as u64 * u64::from(opts.runs.max(1));
    ui.begin(steps, ctl.is_ok());
    let bar = &*ui;
    // The machine's own costs, measured now, drive the simulated side.
    let cal = match &ctl {
        Ok(c) => {
            let tag = format!("oversub-conform-{}-calibrate", std::process::id());
            match real::calibrate_in_cgroup(c, &tag, CALIBRATION_SAMPLES) {
                Ok(cal) => Some(cal),
                Err(e) => {
                    bar.finish();
                    eprintln!("conform: calibration failed: {e}");
                    return Outcome::Failed;
                }
            }
        }
        Err(_) => None,
    };
    bar.step();
    let costs = cal.as_ref().map_or_else(HostCosts::default, |c| c.costs);
    if let Some(c) = &cal {
        let _ = writeln!(out, "simulated with the costs calibrated in this run:");
        out += &c.table();
    }
    if !opts.json {
        bar.print(&out);
    }
    let mut results = Vec::new();
    for f in &opts.files {
        let r = run_file(f, &h, &ctl, &costs, opts, stop, bar);
        if !opts.json {
            bar.print(&result_text(&r));
        }
        results.push(r);
        if stop.load(std::sync::atomic::Ordering::SeqCst) {
            bar.finish();
            eprintln!("conform: interrupted; workers killed and cgroups removed");
            return Outcome::Interrupted;
        }
    }
    bar.finish();
    let count = |s: &str| results.iter().filter(|r| r.status == s).count();
    let (pass, fail, skip, err) = (count("pass"), count("fail"), count("skip"), count("error"));
    let rc = RowCounts::of(&results);
    if opts.json {
        let v = serde_json::json!({
            "host": {"cpus": h.cpus, "hz": h.hz, "hz_source": h.hz_note(), "release": h.release,
                     "preset": h.preset.name(),
                     "controller": ctl.as_ref().map(|c| c.describe()).unwrap_or_else(|e| format!("skip: {e}"))},
            "tolerances": tolerance_line(),
            "calibration": cal.as_ref().map(|c| c.to_json()),
            "scenarios": results,
            "passed": pass, "failed": fail, "skipped": skip, "errors": err,
            "sim_seeds": SIM_SEEDS,
            "rows": {"passed": rc.passed, "failed": rc.failed, "not_judged": rc.not_judged,
                     "known": rc.known, "info": rc.info},
        });
        bar.print(&format!("{v}\n"));
    } else {
        bar.print(&format!(
            "conform: {pass} passed, {fail} failed, {skip} skipped, {err} errors; {}\n",
            rc.text()
        ));
    }
    if fail + err > 0 {
        Outcome::Disagreed
    } else {
        Outcome::Agreed
    }
}

/// The rows of the judged scenarios (pass or fail; not the skipped ones),
/// by verdict.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RowCounts {
    pub passed: usize,
    pub failed: usize,
    pub not_judged: usize,
    /// Failed rows covered by a `# conform-known:` line (not counted as
    /// failed).
    pub known: usize,
    pub info: usize,
}

impl RowCounts {
    pub fn of(results: &[ScenarioResult]) -> RowCounts {
        let mut c = RowCounts::default();
        let judged = results
            .iter()
            .filter(|r| r.status == "pass" || r.status == "fail");
        for r in judged.flat_map(|r| &r.rows) {
            match r.pass {
                Some(true) => c.passed += 1,
                Some(false) if r.known.is_some() => c.known += 1,
                Some(false) => c.failed += 1,
                None if r.not_judged => c.not_judged += 1,
                None => c.info += 1,
            }
        }
        c
    }

    /// "rows: P passed, F failed, N not judged" (and the known ones, if any).
    pub fn text(&self) -> String {
        let mut s = format!(
            "rows: {} passed, {} failed, {} not judged",
            self.passed, self.failed, self.not_judged
        );
        if self.known > 0 {
            let _ = write!(s, ", {} known", self.known);
        }
        s
    }
}

/// The CPU time periodic tasks skipped in one real run, as a fraction of the
/// scenario's CPU time.
fn skipped_fraction(tasks: &[real::RealTask]) -> f64 {
    let total: u64 = tasks.iter().map(|t| t.cpu_ns).sum();
    let skipped: u64 = tasks.iter().filter_map(|t| t.skipped_ns).sum();
    skipped as f64 / total.max(1) as f64
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
    bar: &dyn Ui,
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
    let mut loads = Vec::new();
    for i in 0..opts.runs.max(1) {
        let tag = format!("oversub-conform-{}-{i}", std::process::id());
        loads.extend(crate::host::load_average());
        let th = rtapp::run_once(sc, &src, ctl, &tag, duration, ns_per_loop, stop)
            .map_err(|e| format!("real run {}: {e}", i + 1))?;
        bar.step();
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
    let simr = oversub::run_scenario(&simsc, None, Some(oversub::engine::Nanos(duration)))
        .map_err(|e| format!("simulated run: {e}"))?;
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
    // One simulated run: rt-app creates the program's threads one after
    // another in file order, so there is no start order to vary.
    let mut rows = compare(
        sc,
        &real_runs,
        std::slice::from_ref(&sim),
        share_floor(h.hz, duration),
        duration,
    );
    // A `run` costs what the loop cost at that moment: the measured drift
    // of the loop's cost over the runs bounds how far a demand-bound share
    // can move for that reason alone.
    widen_to_fraction(&mut rows, "share", drift);
    rows.extend(program_rows(&names, &real_threads, &simr, duration));
    let note = format!(
        "1 simulated run; busy loop {mean:.1} ns by CPU time (drift {:.1}% over the runs), rt-app told {ns_per_loop}, run x{scale:.3}; {}",
        drift * 100.0,
        crate::host::load_note(&loads)
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
    bar: &dyn Ui,
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
    let mut loads = Vec::new();
    for i in 0..opts.runs.max(1) {
        let tag = format!("oversub-conform-{}-{i}", std::process::id());
        if !probe_cpus.is_empty() {
            match probe_batch(i) {
                Ok(b) => batches.push(b),
                Err(e) => return res("error", e, vec![]),
            }
        }
        let tick_ns = 1_000_000_000 / u64::from(h.hz.max(1));
        loads.extend(crate::host::load_average());
        let run = real::run_once(&sc, ctl, &tag, duration, Some(tick_ns), stop);
        bar.step();
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
    let sims = match sim_distribution(&sc, h, &sim_costs, Some(duration)) {
        Ok(s) => s,
        Err(e) => return res("error", e, vec![]),
    };
    let mut rows = compare(
        &sc,
        &real_runs,
        &sims,
        share_floor(h.hz, duration),
        duration,
    );
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
        // The figures are shown, but none is judged: no row may read "ok".
        for r in rows.iter_mut() {
            r.not_judged = r.judged() || r.not_judged;
            r.pass = None;
        }
        return res("skip", msg, rows);
    }
    // A periodic activation that the machine delayed past the next expiry
    // is skipped, and its `run` of CPU goes to the other tasks: the share
    // so moved, measured in the run, widens every share tolerance.
    widen(&mut rows, "share", skipped_share);
    apply_known(&mut rows, &known);
    let ok = !rows.iter().any(row_fails);
    let nknown = rows
        .iter()
        .filter(|r| r.pass == Some(false) && r.known.is_some())
        .count();
    let mut msg = format!(
        "{} real runs of {} ms, {} simulated seeds; {}",
        real_runs.len(),
        duration / 1_000_000,
        sims.len(),
        crate::host::load_note(&loads)
    );
    let nj = rows.iter().filter(|r| r.not_judged).count();
    if nj > 0 {
        let _ = write!(msg, "; {nj} rows not judged (tolerance over the value)");
    }
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

/// `oversub calibrate`: the probes in a cgroup of their own, with the conform
/// workers' weight, when the machine allows it (root, a cpu controller):
/// other load on the machine then disturbs them far less. Otherwise they run
/// in the caller's cgroup, and the second value says why (a comment line for
/// the table).
pub fn calibrate(samples: u32) -> (Calibration, Option<String>) {
    match host::detect_cpu_controller() {
        Ok(ctl) => {
            let tag = format!("oversub-calibrate-{}", std::process::id());
            let cal = real::calibrate_in_cgroup(&ctl, &tag, samples)
                .unwrap_or_else(|_| calibrate::calibrate(samples));
            (cal, None)
        }
        Err(e) => (
            calibrate::calibrate(samples),
            Some(format!(
                "# probes run in the caller's cgroup ({e}): other load disturbs them"
            )),
        ),
    }
}
