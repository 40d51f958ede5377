//! `oversub._oversub`: the native half of the `oversub` Python package
//! (python/oversub), a thin PyO3 layer over the core crate's public API. It
//! knows nothing of pandas or Ray; the Python half builds frames and submits
//! tasks. Every entry point turns the core's one-line error into
//! `oversub.ScenarioError` with the same text the CLI prints. Long work
//! (a run, a sweep) runs on a worker thread while the calling thread waits
//! with the GIL released and runs Python's signal handlers in between
//! ([`interruptible`]), so Ctrl-C stops it as it stops the CLI.

use oversub::scenario::overrides::{parse_override, Override};
use oversub::scenario::{check_cli_seed, parse_cli_duration, Scenario};
use oversub::sweep::spec::SweepSpec;
use oversub::sweep::{self, Row};
use pyo3::create_exception;
use pyo3::exceptions::{PyKeyboardInterrupt, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Condvar, Mutex};
use std::time::Duration;

create_exception!(
    _oversub,
    ScenarioError,
    PyValueError,
    "A scenario, override or sweep the model refuses; the message is the \
     one line the `oversub` CLI prints (file, field, value, what is allowed)."
);

fn refuse(m: impl std::fmt::Display) -> PyErr {
    ScenarioError::new_err(m.to_string())
}

/// How often a waiting call wakes to run Python's signal handlers: how long
/// Ctrl-C may wait before the model is told to stop (it is not a bound on
/// any result).
const SIGNAL_POLL: Duration = Duration::from_millis(50);

/// Runs `f` on a worker thread while this thread waits with the GIL
/// released, waking every [`SIGNAL_POLL`] to run Python's signal handlers
/// (`PyErr_CheckSignals`; they run only on the main thread). A handler's
/// exception (Ctrl-C's KeyboardInterrupt) sets the core's stop flag
/// ([`oversub::interrupt::flag`]), which every run polls between events,
/// and is returned beside `f`'s result once `f` has returned; the flag is
/// cleared again then, so that the next call runs.
fn interruptible<T: Send>(py: Python<'_>, f: impl FnOnce() -> T + Send) -> (T, Option<PyErr>) {
    let done = (Mutex::new(false), Condvar::new());
    let mut raised = None;
    let out = std::thread::scope(|s| {
        let worker = s.spawn(|| {
            let r = f();
            let (m, c) = &done;
            *m.lock().unwrap_or_else(|p| p.into_inner()) = true;
            c.notify_all();
            r
        });
        loop {
            let finished = py.detach(|| {
                let (m, c) = &done;
                let g = m.lock().unwrap_or_else(|p| p.into_inner());
                let (g, _) = c
                    .wait_timeout_while(g, SIGNAL_POLL, |d| !*d)
                    .unwrap_or_else(|p| p.into_inner());
                *g
            });
            if finished {
                break;
            }
            if raised.is_none() {
                if let Err(e) = py.check_signals() {
                    stop(true);
                    raised = Some(e);
                }
            }
        }
        worker.join()
    });
    if raised.is_some() {
        stop(false);
    }
    match out {
        Ok(v) => (v, raised),
        Err(p) => std::panic::resume_unwind(p),
    }
}

/// Sets or clears the core's stop flag.
fn stop(on: bool) {
    oversub::interrupt::flag().store(on, Ordering::SeqCst);
}

/// JSON text (from `json.dumps`) to TOML text: how a Python dict becomes a
/// scenario or a sweep file without a second parser. TOML has no null.
fn json_to_toml(file: &str, json: &str) -> Result<String, String> {
    let v: serde_json::Value =
        serde_json::from_str(json).map_err(|e| format!("{file}: not a JSON-like dict: {e}"))?;
    if !v.is_object() {
        return Err(format!("{file}: allowed a dict at the top level"));
    }
    let t = toml::Table::try_from(&v).map_err(|e| {
        format!("{file}: cannot be TOML ({e}): allowed str, int, float, bool, list and dict values, no None")
    })?;
    toml::to_string(&t).map_err(|e| format!("{file}: cannot be TOML: {e}"))
}

/// `--set` arguments, with the CLI's error form (`FILE: message`).
fn overrides(file: &str, sets: &[String]) -> PyResult<Vec<Override>> {
    sets.iter()
        .map(|s| parse_override(s).map_err(|m| refuse(format!("{file}: {m}"))))
        .collect()
}

/// Loads a scenario: the file at `path`, or, with `source` (JSON text of a
/// dict), that text under the name `path`; then the overrides.
fn scenario(path: &str, source: Option<&str>, sets: &[String]) -> PyResult<Scenario> {
    let sets = overrides(path, sets)?;
    match source {
        None => Scenario::load_with(Path::new(path), &sets).map_err(refuse),
        Some(json) => {
            let text = json_to_toml(path, json).map_err(refuse)?;
            Scenario::parse_with(path, &text, &sets).map_err(refuse)
        }
    }
}

/// Runs one scenario and returns the report as the JSON text `oversub run
/// --json` prints (without its newline). The GIL is released while the
/// model runs.
/// `seed` is the text of the Python value, checked as `--seed` is (so -1 or
/// 2**64 get the CLI's line, not an OverflowError).
#[pyfunction]
#[pyo3(signature = (path, source=None, sets=Vec::new(), seed=None, duration=None))]
fn run_json(
    py: Python<'_>,
    path: &str,
    source: Option<&str>,
    sets: Vec<String>,
    seed: Option<&str>,
    duration: Option<&str>,
) -> PyResult<String> {
    let sc = scenario(path, source, &sets)?;
    let seed = match seed {
        None => None,
        Some(v) => Some(check_cli_seed(v).map_err(|m| refuse(format!("--seed: {m}")))?),
    };
    let d = match duration {
        None => None,
        Some(v) => Some(parse_cli_duration(v).map_err(|m| refuse(format!("--duration: {m}")))?),
    };
    let opts = || oversub::RunOptions::default().seed(seed).duration(d);
    let (r, raised) = interruptible(py, || oversub::run(&sc, opts()).map(|r| r.to_json()));
    if let Some(e) = raised {
        return Err(e);
    }
    r.map_err(|e| match e {
        // A bug of the model, not of the scenario.
        oversub::RunError::InvariantBroken { .. } => {
            PyRuntimeError::new_err(format!("{path}: {e}"))
        }
        // A run the model cannot finish (its event budget, a loop at
        // one instant) refuses the scenario, with the CLI's line.
        e => refuse(format!("{path}: {e}")),
    })
}

/// Checks a scenario as `oversub check` does; returns nothing or raises.
#[pyfunction]
#[pyo3(signature = (path, source=None, sets=Vec::new()))]
fn check(path: &str, source: Option<&str>, sets: Vec<String>) -> PyResult<()> {
    scenario(path, source, &sets).map(|_| ())
}

/// A sweep spec from the JSON text of a sweep-file dict; relative paths are
/// resolved against `dir`.
fn spec(json: &str, dir: &str) -> PyResult<SweepSpec> {
    let name = "<sweep>";
    let text = json_to_toml(name, json).map_err(refuse)?;
    SweepSpec::parse(name, &text, Path::new(dir)).map_err(refuse)
}

/// One row as plain Python values: (point, file, workload, vms, [(axis,
/// label)], seed, [(metric, value)]). Plain tuples pickle, so Ray tasks can
/// return them.
type PyRow = (
    usize,
    String,
    String,
    usize,
    Vec<(String, String)>,
    u64,
    Vec<(String, f64)>,
);

fn py_row(r: Row) -> PyRow {
    (
        r.point, r.file, r.workload, r.vms, r.labels, r.seed, r.metrics,
    )
}

/// Validates the sweep (every point is loaded with the first seed) and
/// returns its runs as (point, seed) in expansion order.
#[pyfunction]
fn sweep_jobs(py: Python<'_>, spec_json: &str, dir: &str) -> PyResult<Vec<(usize, u64)>> {
    let s = spec(spec_json, dir)?;
    let pts = py.detach(|| sweep::validated_points(&s)).map_err(refuse)?;
    Ok((0..pts.len())
        .flat_map(|i| s.seeds.iter().map(move |&seed| (i, seed)))
        .collect())
}

/// The name a sweep given as arguments has in messages (the CLI's is its
/// file's path).
const SWEEP_NAME: &str = "<sweep>";

/// The file of this native module (its bytes are part of a runs store's
/// fingerprint, as the `oversub` binary's are for the CLI).
fn module_file(py: Python<'_>) -> std::io::Result<PathBuf> {
    py.import("oversub._oversub")
        .and_then(|m| m.getattr("__file__"))
        .and_then(|f| f.extract::<PathBuf>())
        .map_err(|e| std::io::Error::other(e.to_string()))
}

/// Runs every run of the sweep with the core's parallel runner (rayon, all
/// cores) on a worker thread ([`interruptible`]: Ctrl-C stops it); rows in
/// expansion order. `progress`, if given, is called as `progress(done,
/// total)` after each run this call makes (with the GIL, from the worker
/// thread that finished it); its first exception stops the sweep and is
/// raised. `resume`, a directory, keeps each run in its runs file as it
/// finishes (`oversub_runs`, as `oversub sweep --out DIR` does) and skips
/// the runs it already holds from an interrupted call of the same sweep;
/// the file is removed once every run is done.
#[pyfunction]
#[pyo3(signature = (spec_json, dir, progress=None, resume=None))]
fn sweep_local(
    py: Python<'_>,
    spec_json: &str,
    dir: &str,
    progress: Option<Py<PyAny>>,
    resume: Option<PathBuf>,
) -> PyResult<Vec<PyRow>> {
    use std::sync::atomic::AtomicUsize;
    oversub::limits::check_threads_env().map_err(refuse)?;
    let s = spec(spec_json, dir)?;
    let (batch, raised) = interruptible(py, || sweep::Batch::new(&[&s]));
    if let Some(e) = raised {
        return Err(e);
    }
    let batch = batch.map_err(refuse)?;
    let runs = batch.runs(0);
    // The lock is held until the sweep returns: one writer per directory,
    // as `oversub sweep --out DIR` holds it.
    let (store, kept, _lock) = match &resume {
        None => (None, Vec::new(), None),
        Some(d) => {
            oversub_runs::prepare_dir(d, "resume").map_err(refuse)?;
            let lock = oversub_runs::lock::DirLock::take(d, "resume").map_err(refuse)?;
            let fp = oversub_runs::fingerprint(
                module_file(py),
                env!("CARGO_PKG_VERSION"),
                batch.digest(0),
            );
            let (store, kept) = oversub_runs::open(d, SWEEP_NAME, &fp, &runs, true, "resume=DIR")
                .map_err(refuse)?;
            (Some(store), kept.rows, Some(lock))
        }
    };
    let before = kept.iter().filter(|r| r.is_some()).count();
    let total = runs.len() - before;
    let done = AtomicUsize::new(0);
    let stored = AtomicUsize::new(0);
    let failed: Mutex<Option<PyErr>> = Mutex::new(None);
    let on_run = || {
        let n = done.fetch_add(1, Ordering::SeqCst) + 1;
        if let Some(cb) = &progress {
            Python::attach(|py| {
                if let Err(e) = cb.call1(py, (n, total)) {
                    let mut f = failed.lock().unwrap_or_else(|p| p.into_inner());
                    if f.is_none() {
                        *f = Some(e);
                        stop(true);
                    }
                }
            });
        }
    };
    let on_row = |_: usize, slot: usize, r: &Row| {
        if let Some(st) = &store {
            st.append(slot, r)?;
        }
        stored.fetch_add(1, Ordering::SeqCst);
        Ok(())
    };
    let (r, raised) = interruptible(py, || batch.run(vec![kept], &on_run, &on_row));
    let failed = failed.into_inner().unwrap_or_else(|p| p.into_inner());
    if failed.is_some() {
        stop(false);
    }
    let n = before + stored.load(Ordering::SeqCst);
    if let Some(e) = raised {
        if !e.is_instance_of::<PyKeyboardInterrupt>(py) {
            return Err(e);
        }
        let msg = match (&store, &resume) {
            (Some(st), Some(d)) if n > 0 => format!(
                "{SWEEP_NAME}: interrupted: {n} of {} runs kept in {}; oversub.sweep(..., resume={:?}) runs the other {}",
                runs.len(),
                st.path().display(),
                d.display().to_string(),
                runs.len() - n
            ),
            _ => format!(
                "{SWEEP_NAME}: interrupted; no run kept (oversub.sweep(..., resume=DIR) keeps finished runs)"
            ),
        };
        if n == 0 {
            if let Some(st) = store {
                st.remove().map_err(refuse)?;
            }
        }
        return Err(PyKeyboardInterrupt::new_err(msg));
    }
    if let Some(e) = failed {
        return Err(e);
    }
    let (_, rows) = r.map_err(refuse)?.pop().expect("one sweep");
    if let Some(st) = store {
        st.remove().map_err(refuse)?;
    }
    Ok(rows.into_iter().map(py_row).collect())
}

/// A frame's row for [`summary_csv`]: (workload, vms, [(axis, label)],
/// seed, [(metric, value)]).
type FrameRow = (
    String,
    usize,
    Vec<(String, String)>,
    u64,
    Vec<(String, f64)>,
);

/// The summary of a sweep's rows as the text of the CLI's `summary.csv`:
/// the same code (`sweep::summary`), so the same means, intervals, paired
/// deltas, p and Holm-adjusted p. Points are the distinct label lists in
/// first-seen order (the sweep's expansion order for a frame from
/// `sweep`); `baseline` is axis -> label as in a sweep file.
#[pyfunction]
fn summary_csv(
    axes: Vec<String>,
    rows: Vec<FrameRow>,
    baseline: Vec<(String, String)>,
) -> PyResult<String> {
    for (k, _) in &baseline {
        if !axes.contains(k) {
            return Err(refuse(format!(
                "baseline: axis \"{k}\" is not allowed: allowed one of the frame's axes: {}",
                axes.join(", ")
            )));
        }
    }
    let mut pts: Vec<sweep::Point> = Vec::new();
    let mut out = Vec::with_capacity(rows.len());
    for (workload, vms, labels, seed, metrics) in rows {
        let point = match pts.iter().position(|p| p.labels == labels) {
            Some(i) => i,
            None => {
                pts.push(sweep::Point {
                    labels: labels.clone(),
                    file: Default::default(),
                    sets: Vec::new(),
                });
                pts.len() - 1
            }
        };
        if out.iter().any(|r: &Row| r.point == point && r.seed == seed) {
            return Err(refuse(format!(
                "frame: point {} has seed {seed} twice: allowed one row per point and seed",
                sweep::summary::point_label(&sweep::summary::PointSummary {
                    labels,
                    workload: String::new(),
                    vms: 0,
                    baseline: None,
                    cells: Vec::new(),
                })
            )));
        }
        out.push(Row {
            point,
            file: String::new(),
            workload,
            vms,
            labels,
            seed,
            metrics,
            scenario: serde_json::Value::Null,
            op_latency: Default::default(),
            kernel: String::new(),
        });
    }
    let spec = SweepSpec {
        file: "<frame>".into(),
        base: None,
        seeds: Vec::new(),
        duration: None,
        sets: Vec::new(),
        axes: Vec::new(),
        baseline,
        adaptive: None,
    };
    let s = sweep::summary::summarise(&spec, &pts, &out);
    Ok(sweep::summary::to_csv(&axes, &s))
}

/// Runs one (point, seed) of the sweep: the unit of work of a Ray task.
#[pyfunction]
fn sweep_one(
    py: Python<'_>,
    spec_json: &str,
    dir: &str,
    point: usize,
    seed: u64,
) -> PyResult<PyRow> {
    let s = spec(spec_json, dir)?;
    let pts = sweep::points(&s);
    if point >= pts.len() {
        return Err(refuse(format!(
            "<sweep>: point {point}: allowed 0..{}",
            pts.len()
        )));
    }
    let row = py
        .detach(|| sweep::run_one(&s, &pts, point, seed))
        .map_err(refuse)?;
    Ok(py_row(row))
}

#[pymodule]
fn _oversub(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("ScenarioError", m.py().get_type::<ScenarioError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("FILE_AXIS", oversub::sweep::spec::FILE_AXIS)?;
    m.add_function(wrap_pyfunction!(summary_csv, m)?)?;
    m.add_function(wrap_pyfunction!(run_json, m)?)?;
    m.add_function(wrap_pyfunction!(check, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_jobs, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_local, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_one, m)?)?;
    Ok(())
}
