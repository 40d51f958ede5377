//! Sweeps: run a scenario over the cartesian product of its axes and a seed
//! list, in parallel (rayon), giving one row per run (rendered as
//! `results.csv`, `results.jsonl`) and a summary over seeds (mean, 95% CI,
//! paired delta against a baseline) per point, per VM and per host task.
//! Writing them to files is the CLI's (`oversub sweep`).
//!
//! Runs are independent and each is deterministic, and rows are written in
//! the order of the expansion, so the outputs are byte-identical for the same
//! sweep whatever the thread count (the wall time is not recorded).

pub mod adaptive;
pub mod metrics;
pub mod regime;
pub mod spec;
pub mod summary;

use crate::scenario::overrides::Override;
use crate::scenario::Scenario;
use metrics::Metrics;
use serde::Serialize;
use spec::SweepSpec;
use std::fmt::Write as _;
use std::path::PathBuf;

/// The columns every results file has besides the axes and metrics (and
/// `section` in the reproduction's): an axis may not take their names. A
/// `key = "file"` axis is named [`spec::FILE_AXIS`], so that its label (the
/// file's stem) and the `file` column's path are both kept under their own
/// names.
pub const FIXED_COLUMNS: [&str; 5] = ["file", "workload", "vms", "seed", "section"];

/// One point of the product: a value per axis.
#[derive(Clone, Debug)]
pub struct Point {
    /// (axis name, label) in axis order.
    pub labels: Vec<(String, String)>,
    pub file: PathBuf,
    pub sets: Vec<Override>,
}

/// A sweep's points and its rows (in expansion order).
pub type SweepOutput = (Vec<Point>, Vec<Row>);

/// One run's row.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    pub point: usize,
    pub file: String,
    /// The VMs' workloads joined by `+` ("host" without VMs).
    pub workload: String,
    pub vms: usize,
    pub labels: Vec<(String, String)>,
    pub seed: u64,
    pub metrics: Metrics,
    /// The effective scenario (after every override, seed and duration).
    pub scenario: serde_json::Value,
    /// Per-op latencies of the run, pooled (`metrics::op_latency`).
    pub op_latency: crate::stats::hist::LogHist,
    /// The host kernel preset the run modelled (the report's `kernel`).
    #[serde(skip)]
    pub kernel: String,
}

/// Expands the axes (first axis outermost).
pub fn points(spec: &SweepSpec) -> Vec<Point> {
    let mut pts = vec![Point {
        labels: Vec::new(),
        file: spec.base.clone().unwrap_or_default(),
        sets: spec.sets.clone(),
    }];
    for ax in &spec.axes {
        let mut next = Vec::new();
        for p in &pts {
            for v in &ax.values {
                let mut q = p.clone();
                q.labels.push((ax.name.clone(), v.label.clone()));
                if let Some(f) = &v.file {
                    q.file = f.clone();
                }
                q.sets.extend(v.sets.iter().cloned());
                next.push(q);
            }
        }
        pts = next;
    }
    pts
}

fn load(p: &Point, seed: u64, spec: &SweepSpec) -> Result<Scenario, String> {
    let mut sets = p.sets.clone();
    sets.push(Override {
        arg: format!("host.seed={seed}"),
        path: vec!["host".into(), "seed".into()],
        value: toml::Value::Integer(seed as i64),
        raw: seed.to_string(),
    });
    if let Some(d) = spec.duration {
        sets.push(Override {
            arg: format!("host.duration={}ns", d.0),
            path: vec!["host".into(), "duration".into()],
            value: toml::Value::String(format!("{}ns", d.0)),
            raw: format!("{}ns", d.0),
        });
    }
    Scenario::load_with(&p.file, &sets).map_err(|e| {
        let at = p
            .labels
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ");
        format!("{} (sweep {}, point {at})", e, spec.file)
    })
}

/// Expands the axes and loads every point with the first seed, so that a
/// bad value fails before any run.
pub fn validated_points(spec: &SweepSpec) -> Result<Vec<Point>, String> {
    Ok(costed_points(spec)?.0.into_iter().map(|(p, _)| p).collect())
}

/// [`validated_points`] with each point's estimated cost per run: its
/// simulated time times the tasks it runs (vCPUs and host tasks, at least
/// one). Only the order of the runs depends on it ([`Batch::run`]). And the
/// sweep's digest: a hash of the spec and of every point's scenario as
/// loaded (programs included), so that runs kept from an earlier
/// invocation are only reused for the same sweep ([`Batch::digest`]).
fn costed_points(spec: &SweepSpec) -> Result<(Vec<(Point, u128)>, u64), String> {
    use std::hash::Hasher;
    let mut h = std::collections::hash_map::DefaultHasher::new();
    let _ = write!(HashWriter(&mut h), "{spec:?}");
    let pts = points(spec)
        .into_iter()
        .map(|p| {
            if crate::interrupt::interrupted() {
                return Err(format!("{}: interrupted; no results written", spec.file));
            }
            let sc = load(&p, spec.seeds[0], spec)?;
            let _ = write!(HashWriter(&mut h), "{sc:?}");
            let tasks: u64 =
                sc.vms.iter().map(|v| u64::from(v.vcpus)).sum::<u64>() + sc.tasks.len() as u64;
            Ok((p, u128::from(sc.host.duration.0) * u128::from(tasks.max(1))))
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok((pts, h.finish()))
}

/// Feeds formatted text to a hasher without building the string.
struct HashWriter<'a, H: std::hash::Hasher>(&'a mut H);

impl<H: std::hash::Hasher> std::fmt::Write for HashWriter<'_, H> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.write(s.as_bytes());
        Ok(())
    }
}

/// Runs point `i` of `pts` (from [`validated_points`]) with `seed`: one
/// row. Each run is independent and deterministic, so rows may be computed
/// anywhere (threads here, Ray tasks in the Python package) and put back in
/// expansion order. Ctrl-C / SIGTERM ([`crate::interrupt::flag`])
/// makes it an error.
pub fn run_one(spec: &SweepSpec, pts: &[Point], i: usize, seed: u64) -> Result<Row, String> {
    let sc = load(&pts[i], seed, spec)?;
    let interrupted = || format!("{}: interrupted; no results written", spec.file);
    if crate::interrupt::interrupted() {
        return Err(interrupted());
    }
    let r = crate::run(&sc, crate::RunOptions::default()).map_err(|e| match e {
        crate::RunError::Interrupted { .. } => interrupted(),
        e => format!("{}: {e}", sc.file),
    })?;
    let m = metrics::metrics(&sc, &r);
    let op_latency = metrics::op_latency(&r);
    let mut wl: Vec<&str> = sc.vms.iter().map(|v| v.workload.name.as_str()).collect();
    wl.dedup();
    Ok(Row {
        point: i,
        file: pts[i].file.display().to_string(),
        workload: if wl.is_empty() {
            "host".into()
        } else {
            wl.join("+")
        },
        vms: sc.vms.len(),
        labels: pts[i].labels.clone(),
        seed,
        metrics: m,
        kernel: r.kernel.clone(),
        scenario: r.scenario,
        op_latency,
    })
}

/// Validates every point (so a bad value fails before any run), then runs
/// them all in parallel (rayon), rows in expansion order (points, then
/// seeds); `on_run` is called after each run (from the worker threads), for
/// a caller's progress display.
pub fn run(spec: &SweepSpec, on_run: &(dyn Fn() + Sync)) -> Result<SweepOutput, String> {
    Ok(run_many(&[spec], on_run)?.pop().expect("one sweep"))
}

/// Several sweeps as one batch ([`Batch::run`] with nothing done before).
pub fn run_many(
    specs: &[&SweepSpec],
    on_run: &(dyn Fn() + Sync),
) -> Result<Vec<SweepOutput>, String> {
    Batch::new(specs)?.run(Vec::new(), on_run, &|_, _, _| Ok(()))
}

/// Several sweeps as one batch of runs, every point of every sweep
/// validated ([`Batch::new`]) before any run.
pub struct Batch<'a> {
    specs: Vec<&'a SweepSpec>,
    /// Per sweep: its points and their estimated costs.
    pts: Vec<Vec<(Point, u128)>>,
    digests: Vec<u64>,
}

/// A run of a batch: (cost, sweep, point, seed, slot of the row in its
/// sweep's rows).
type Job = (u128, usize, usize, u64, usize);

impl<'a> Batch<'a> {
    /// Expands and loads every point of every sweep (with its first seed),
    /// so that a bad value fails before any run.
    pub fn new(specs: &[&'a SweepSpec]) -> Result<Batch<'a>, String> {
        // The cap holds for the batch as a whole (a reproduction's
        // sections, whose seeds its manifest sets after each sweep file
        // was counted), counted before any point is built.
        let runs = specs
            .iter()
            .fold(0u64, |n, s| n.saturating_add(s.run_count()));
        if runs > crate::limits::MAX_SWEEP_RUNS {
            let files: Vec<String> = specs
                .iter()
                .map(|s| format!("{} ({} runs)", s.file, s.run_count()))
                .collect();
            return Err(format!(
                "{}: {runs} runs (points x seeds): allowed at most {}",
                crate::limits::echo_n(&files.join(", "), 960),
                crate::limits::MAX_SWEEP_RUNS
            ));
        }
        let mut pts = Vec::new();
        let mut digests = Vec::new();
        for spec in specs {
            let (p, d) = costed_points(spec)?;
            pts.push(p);
            digests.push(d);
        }
        Ok(Batch {
            specs: specs.to_vec(),
            pts,
            digests,
        })
    }

    /// Sweep `k`'s points, in expansion order.
    pub fn points(&self, k: usize) -> Vec<Point> {
        self.pts[k].iter().map(|(p, _)| p.clone()).collect()
    }

    /// Sweep `k`'s runs: (point, seed) by slot (points, then seeds).
    pub fn runs(&self, k: usize) -> Vec<(usize, u64)> {
        (0..self.pts[k].len())
            .flat_map(|i| self.specs[k].seeds.iter().map(move |&s| (i, s)))
            .collect()
    }

    /// The runs of every sweep.
    pub fn len(&self) -> usize {
        (0..self.specs.len()).map(|k| self.runs(k).len()).sum()
    }

    /// Whether the batch has no run.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A hash of sweep `k`'s spec and of every point's scenario as loaded
    /// (the files, programs and overrides it was built from): equal digests
    /// mean the same runs, within one build of the tool (the hash is the
    /// standard library's, not stable across builds).
    pub fn digest(&self, k: usize) -> u64 {
        self.digests[k]
    }

    /// Runs the batch: all runs share the rayon pool, longest first (by the
    /// points' estimated cost; ties in expansion order), each worker taking
    /// the next run as it becomes free. Longest-first list scheduling leaves
    /// no long run for the end, where it would run alone while the other
    /// cores idle. `done[k][slot]`, where given, is a row already computed
    /// (an earlier, interrupted invocation): its run is skipped and the row
    /// used as it is. `on_run` is called after each run (progress);
    /// `on_row(k, slot, row)` with each new row as it is made (from the
    /// worker threads; an error stops the batch like a failed run). The
    /// result, per sweep, is what [`run`] returns: rows in expansion order,
    /// so the order of execution shows in nothing but the wall time.
    pub fn run(
        self,
        mut done: Vec<Vec<Option<Row>>>,
        on_run: &(dyn Fn() + Sync),
        on_row: &(dyn Fn(usize, usize, &Row) -> Result<(), String> + Sync),
    ) -> Result<Vec<SweepOutput>, String> {
        done.resize_with(self.specs.len(), Vec::new);
        let mut jobs: Vec<Job> = Vec::new();
        for (k, spec) in self.specs.iter().enumerate() {
            done[k].resize_with(self.pts[k].len() * spec.seeds.len(), || None);
            let mut slot = 0;
            for (i, (_, cost)) in self.pts[k].iter().enumerate() {
                for &seed in &spec.seeds {
                    if done[k][slot].is_none() {
                        jobs.push((*cost, k, i, seed, slot));
                    }
                    slot += 1;
                }
            }
        }
        let pts: Vec<Vec<Point>> = (0..self.specs.len()).map(|k| self.points(k)).collect();
        for (j, row) in execute(&self.specs, &pts, jobs, on_run, on_row)? {
            done[j.0][j.1] = Some(row);
        }
        Ok(pts
            .into_iter()
            .zip(done)
            .map(|(p, rows)| {
                let rows = rows
                    .into_iter()
                    .map(|r| r.expect("every run of a batch without failure has a row"))
                    .collect();
                (p, rows)
            })
            .collect())
    }
}

/// A run's row with where it goes: ((sweep, slot), row).
type Made = ((usize, usize), Row);

/// Runs `jobs` ((cost, sweep, point, seed, slot)) on the rayon pool,
/// longest first (ties in the order given), each worker taking the next
/// job as it becomes free; returns ((sweep, slot), row) per job, or the
/// first failure in that order ([`Batch::run`] says why).
fn execute(
    specs: &[&SweepSpec],
    pts: &[Vec<Point>],
    mut jobs: Vec<Job>,
    on_run: &(dyn Fn() + Sync),
    on_row: &(dyn Fn(usize, usize, &Row) -> Result<(), String> + Sync),
) -> Result<Vec<Made>, String> {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    // Stable: equal costs keep the given order.
    jobs.sort_by_key(|j| std::cmp::Reverse(j.0));
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let made: Vec<Vec<(usize, Result<Row, String>)>> = rayon::broadcast(|_| {
        let mut mine = Vec::new();
        while !failed.load(Ordering::Relaxed) {
            let j = next.fetch_add(1, Ordering::Relaxed);
            let Some(&(_, k, i, seed, slot)) = jobs.get(j) else {
                break;
            };
            let row =
                run_one(specs[k], &pts[k], i, seed).and_then(|r| on_row(k, slot, &r).map(|()| r));
            if row.is_err() {
                failed.store(true, Ordering::Relaxed);
            }
            on_run();
            mine.push((j, row));
        }
        mine
    });
    // The first failure in batch order (the order runs were started).
    let mut err: Option<(usize, String)> = None;
    let mut out = Vec::new();
    for (j, row) in made.into_iter().flatten() {
        let (_, k, _, _, slot) = jobs[j];
        match row {
            Ok(r) => out.push(((k, slot), r)),
            Err(e) if err.as_ref().is_none_or(|(f, _)| j < *f) => err = Some((j, e)),
            Err(_) => {}
        }
    }
    if let Some((_, e)) = err {
        return Err(e);
    }
    Ok(out)
}

/// Runs the (point, seed) pairs `runs` of `spec` (points from
/// [`validated_points`]) in parallel as [`Batch::run`] does; rows in the
/// order of `runs`. The adaptive mode's extra seeds ([`adaptive`]).
pub fn run_runs(
    spec: &SweepSpec,
    pts: &[Point],
    runs: &[(usize, u64)],
    on_run: &(dyn Fn() + Sync),
) -> Result<Vec<Row>, String> {
    let jobs: Vec<Job> = runs
        .iter()
        .enumerate()
        .map(|(slot, &(i, seed))| (0, 0, i, seed, slot))
        .collect();
    let mut made = execute(&[spec], &[pts.to_vec()], jobs, on_run, &|_, _, _| Ok(()))?;
    made.sort_by_key(|((_, slot), _)| *slot);
    Ok(made.into_iter().map(|(_, r)| r).collect())
}

/// Metric columns: the union over rows, in first-seen order.
pub fn metric_columns(rows: &[Row]) -> Vec<String> {
    let mut cols: Vec<String> = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for r in rows {
        for (k, _) in &r.metrics {
            if seen.insert(k.clone()) {
                cols.push(k.clone());
            }
        }
    }
    cols
}

fn csv_cell(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// Formats a metric value for CSV: empty when absent or not a number.
pub fn num(v: Option<f64>) -> String {
    match v {
        Some(x) if x.is_finite() => {
            if x.fract() == 0.0 && x.abs() < 1e15 {
                format!("{x:.0}")
            } else {
                format!("{x:.6}")
            }
        }
        _ => String::new(),
    }
}

/// `results.csv`: `file, workload, vms, <axes>, seed, <metrics>`; every
/// name once (the axes' names are checked against the others by
/// [`SweepSpec::parse`]).
pub fn to_csv(spec_axes: &[String], rows: &[Row]) -> String {
    let cols = metric_columns(rows);
    let mut o = String::new();
    let mut head = vec!["file".to_string(), "workload".into(), "vms".into()];
    head.extend(spec_axes.iter().cloned());
    head.push("seed".into());
    head.extend(cols.iter().cloned());
    let _ = writeln!(
        o,
        "{}",
        head.iter()
            .map(|h| csv_cell(h))
            .collect::<Vec<_>>()
            .join(",")
    );
    for r in rows {
        let mut cells = vec![csv_cell(&r.file), csv_cell(&r.workload), r.vms.to_string()];
        for a in spec_axes {
            let l = r
                .labels
                .iter()
                .find(|(k, _)| k == a)
                .map(|(_, v)| v.as_str())
                .unwrap_or("");
            cells.push(csv_cell(l));
        }
        cells.push(r.seed.to_string());
        for c in &cols {
            cells.push(num(r.metrics.iter().find(|(k, _)| k == c).map(|(_, v)| *v)));
        }
        let _ = writeln!(o, "{}", cells.join(","));
    }
    o
}

/// `results.jsonl`: one object per run ([`jsonl_line`]).
pub fn to_jsonl(rows: &[Row]) -> String {
    rows.iter().map(jsonl_line).collect()
}

/// One run's line of `results.jsonl`, with its newline.
pub fn jsonl_line(r: &Row) -> String {
    let mut obj = serde_json::Map::new();
    obj.insert("file".into(), r.file.clone().into());
    obj.insert("workload".into(), r.workload.clone().into());
    obj.insert("vms".into(), r.vms.into());
    let axes: serde_json::Map<String, serde_json::Value> = r
        .labels
        .iter()
        .map(|(k, v)| (k.clone(), v.clone().into()))
        .collect();
    obj.insert("axes".into(), axes.into());
    obj.insert("seed".into(), r.seed.into());
    let m: serde_json::Map<String, serde_json::Value> = r
        .metrics
        .iter()
        .map(|(k, v)| {
            (
                k.clone(),
                serde_json::Number::from_f64(*v)
                    .map(serde_json::Value::Number)
                    .unwrap_or(serde_json::Value::Null),
            )
        })
        .collect();
    obj.insert("metrics".into(), m.into());
    if r.op_latency.count() > 0 {
        if let Ok(h) = serde_json::to_value(&r.op_latency) {
            obj.insert("op_latency_ns".into(), h);
        }
    }
    obj.insert("scenario".into(), r.scenario.clone());
    format!("{}\n", serde_json::Value::Object(obj))
}
