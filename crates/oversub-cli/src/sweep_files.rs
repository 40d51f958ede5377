//! `oversub sweep` and the reproduction's sections: runs a sweep with the
//! core's in-memory runner and writes `results.csv`, `results.jsonl`, `summary.csv`, `summary.md`,
//! each with its provenance (`crate::provenance`: the CSVs in a
//! `.meta.json` sidecar, the JSONL in its first line, the Markdown in one line).

use crate::provenance::Provenance;
use oversub::sweep::spec::SweepSpec;
use oversub::sweep::{self, summary, Row};
use std::path::{Path, PathBuf};

/// Runs several sweeps as one batch (`sweep::Batch`: all runs share the
/// cores, longest first), with one progress bar labelled `prefix`.
pub fn run_many(
    specs: &[&SweepSpec],
    prefix: &str,
    progress: bool,
) -> Result<Vec<sweep::SweepOutput>, String> {
    let batch = sweep::Batch::new(specs)?;
    let bar = crate::progress::Steps::new(batch.len() as u64, "runs", prefix, progress);
    let r = batch.run(Vec::new(), &|| bar.inc(), &|_, _, _| Ok(()));
    bar.finish();
    r
}

/// `--adaptive MAX` and `--adaptive-metric METRIC` checked against the
/// sweep (`sweep::adaptive`): the one-line message names the flag, the
/// value and what is allowed.
pub fn adaptive(
    spec: &SweepSpec,
    max: &str,
    metric: &str,
) -> Result<sweep::adaptive::Adaptive, String> {
    use sweep::adaptive::MAX_SEEDS_LIMIT;
    let shown = oversub::limits::echo(max);
    let n: usize = max.trim().parse().map_err(|_| {
        format!(
            "--adaptive {shown:?}: not an integer: allowed {} ..= {MAX_SEEDS_LIMIT} (seeds per point at most)",
            spec.seeds.len().max(2)
        )
    })?;
    let a = sweep::adaptive::Adaptive {
        max_seeds: n,
        metric: metric.to_string(),
    };
    let points = sweep::points(spec).len();
    a.check(spec.seeds.len(), points)
        .map_err(|m| format!("--adaptive {shown}: {m}"))?;
    let known = sweep::metrics::GLOBAL_METRICS.contains(&metric)
        || ["vm.", "cg.", "task."]
            .iter()
            .any(|p| metric.strip_prefix(p).is_some_and(|r| r.contains('.')));
    if !known {
        return Err(format!(
            "--adaptive-metric {:?}: unknown metric: allowed a metric of the results ({}, or vm.NAME.*, cg.PATH.*, task.NAME.*)",
            oversub::limits::echo(metric),
            sweep::metrics::GLOBAL_METRICS.join(", ")
        ));
    }
    probe_metric(spec, metric)?;
    Ok(a)
}

/// Refuses an `--adaptive-metric` no run of the sweep would have, before
/// the first run (not after its first round): the metrics a run reports
/// follow from its scenario's shape (VMs, tasks, cgroups), so each point
/// is run for 1 us until one has it.
fn probe_metric(spec: &SweepSpec, metric: &str) -> Result<(), String> {
    let mut probe = spec.clone();
    probe.duration = Some(oversub::engine::Nanos::from_us(1));
    let pts = sweep::points(&probe);
    for i in 0..pts.len() {
        match sweep::run_one(&probe, &pts, i, probe.seeds[0]) {
            Ok(r) if r.metrics.iter().any(|(k, _)| k == metric) => return Ok(()),
            Ok(_) => {}
            // A point that does not load is refused by the sweep's own
            // validation, with its message.
            Err(_) if !crate::progress::interrupted() => return Ok(()),
            Err(m) => return Err(m),
        }
    }
    Err(format!(
        "{}: --adaptive-metric {}: no run of the sweep has it: allowed one of its metrics (summary.csv)",
        spec.file,
        oversub::limits::echo(metric)
    ))
}

/// How `oversub sweep` treats the runs it keeps ([`oversub_runs`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct Keep {
    /// Finish the runs an interrupted invocation left (`--resume`).
    pub resume: bool,
    /// Stop as Ctrl-C would once this many runs finished (the hidden
    /// `--stop-after-runs`, for the tests of `--resume`).
    pub stop_after: Option<u64>,
}

/// Runs a sweep file and writes `DIR/results.csv`, `DIR/results.jsonl`,
/// `DIR/summary.csv` and `DIR/summary.md` (with the CSVs' provenance
/// sidecars), all or none. The directory is checked (and claimed for this
/// sweep) before the first run. Each run is kept in `DIR/.oversub-runs.jsonl`
/// as it finishes ([`oversub_runs`]), so that an interrupted sweep keeps its
/// finished runs and `keep.resume` skips them. Returns the compact terminal
/// summary ([`compact`]).
pub fn sweep_to_dir(
    spec: &SweepSpec,
    out: &Path,
    progress: bool,
    keep: Keep,
) -> Result<String, String> {
    use std::sync::atomic::{AtomicU64, Ordering};
    let _lock = crate::output::claim_out_dir(out, "--out", &spec.file)?;
    check_outputs(out)?;
    let batch = sweep::Batch::new(&[spec])?;
    let runs = batch.runs(0);
    let fp = oversub_runs::fingerprint(
        std::env::current_exe(),
        crate::provenance::VERSION,
        batch.digest(0),
    );
    let (store, kept) = oversub_runs::open(out, &spec.file, &fp, &runs, keep.resume, "--resume")?;
    if keep.resume && !kept.found {
        eprintln!(
            "note: --resume: {} holds no interrupted sweep; running all {} runs",
            out.display(),
            runs.len()
        );
    }
    let prefix = Path::new(&spec.file)
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let bar =
        crate::progress::Steps::new((runs.len() - kept.count) as u64, "runs", &prefix, progress);
    let finished = AtomicU64::new(0);
    let on_row = |_: usize, slot: usize, r: &Row| {
        store.append(slot, r)?;
        let n = finished.fetch_add(1, Ordering::SeqCst) + 1;
        if keep.stop_after == Some(n) {
            crate::progress::interrupt_flag().store(true, Ordering::SeqCst);
        }
        Ok(())
    };
    let r = batch.run(vec![kept.rows], &|| bar.inc(), &on_row);
    bar.finish();
    let (pts, rows) = match r {
        Ok(mut v) => v.pop().expect("one sweep"),
        Err(e) if crate::progress::interrupted() => {
            let n = kept.count + finished.load(Ordering::SeqCst) as usize;
            if n == 0 {
                store.remove()?;
                return Err(e);
            }
            return Err(format!(
                "{}: interrupted: {n} of {} runs kept in {}; `oversub sweep {} --out {} --resume` runs the other {}",
                spec.file,
                runs.len(),
                store.path().display(),
                spec.file,
                out.display(),
                runs.len() - n
            ));
        }
        Err(e) => return Err(e),
    };
    // The kept runs' lines as they were stored, by (point, seed).
    let lines: std::collections::BTreeMap<(usize, u64), String> = rows
        .iter()
        .zip(kept.lines)
        .filter_map(|(r, l)| Some(((r.point, r.seed), l?)))
        .collect();
    let own = rows.len();
    let (rows, s) = match extend_adaptive(spec, &pts, rows, &prefix, progress) {
        Ok(x) => x,
        Err(e) if crate::progress::interrupted() => {
            return Err(format!(
                "{e}; the sweep's own {own} runs are kept in {}: `oversub sweep {} --out {} --resume ...` runs the adaptive rounds again",
                store.path().display(),
                spec.file,
                out.display()
            ))
        }
        Err(e) => return Err(e),
    };
    let jsonl: String = rows
        .iter()
        .map(|r| {
            lines
                .get(&(r.point, r.seed))
                .cloned()
                .unwrap_or_else(|| sweep::jsonl_line(r))
        })
        .collect();
    let prov = Provenance::new(rows.iter().map(|r| r.kernel.as_str()));
    let (files, _) = outputs_with(spec, &s, &rows, jsonl, out, &prov);
    crate::output::write_set(&files)?;
    store.remove()?;
    Ok(compact(spec, &s, rows.len()))
}

/// The adaptive rounds of `spec` (`sweep::adaptive::extend`) after its own
/// seeds' `rows`, every point judged, one progress bar per round; without
/// `spec.adaptive`, the rows and their summary as they are.
pub fn extend_adaptive(
    spec: &SweepSpec,
    pts: &[sweep::Point],
    rows: Vec<Row>,
    prefix: &str,
    progress: bool,
) -> Result<(Vec<Row>, Vec<summary::PointSummary>), String> {
    extend_adaptive_where(spec, pts, rows, &|_| true, prefix, progress)
}

/// [`extend_adaptive`] judging only the points `judged` selects.
pub fn extend_adaptive_where(
    spec: &SweepSpec,
    pts: &[sweep::Point],
    rows: Vec<Row>,
    judged: &dyn Fn(&summary::PointSummary) -> bool,
    prefix: &str,
    progress: bool,
) -> Result<(Vec<Row>, Vec<summary::PointSummary>), String> {
    let rule = |p: &summary::PointSummary, c: &summary::Cell| {
        judged(p).then(|| sweep::adaptive::resolved(c))
    };
    extend_adaptive_by(spec, pts, rows, &rule, prefix, progress)
}

/// [`extend_adaptive`] with the stop rule given (`sweep::adaptive::Rule`).
pub fn extend_adaptive_by(
    spec: &SweepSpec,
    pts: &[sweep::Point],
    rows: Vec<Row>,
    rule: &sweep::adaptive::Rule<'_>,
    prefix: &str,
    progress: bool,
) -> Result<(Vec<Row>, Vec<summary::PointSummary>), String> {
    let mut round = 0;
    if let Some(a) = &spec.adaptive {
        if !rows
            .iter()
            .any(|r| r.metrics.iter().any(|(k, _)| k == &a.metric))
        {
            return Err(format!(
                "{}: --adaptive-metric {}: no run of the sweep has it: allowed one of its metrics (summary.csv)",
                spec.file, a.metric
            ));
        }
    }
    sweep::adaptive::extend_by(spec, pts, rows, rule, &mut |runs| {
        round += 1;
        let bar = crate::progress::Steps::new(
            runs.len() as u64,
            "runs",
            &format!("{prefix} adaptive round {round}"),
            progress,
        );
        let r = sweep::run_runs(spec, pts, runs, &|| bar.inc());
        bar.finish();
        r
    })
}

/// `summary.md` with its provenance line under the title.
pub fn with_provenance(md: &str, prov: &Provenance) -> String {
    let mut o = String::new();
    let mut lines = md.lines();
    if let Some(title) = lines.next() {
        o.push_str(title);
        o.push_str("\n\n");
    }
    o.push_str(&prov.md_line());
    for l in lines {
        o.push_str(l);
        o.push('\n');
    }
    o
}

/// The terminal's summary of a sweep: one line per point that has a
/// baseline, with the paired change of its first key metric, and a count of
/// changes over every metric (Holm-adjusted, as in summary.md).
pub fn compact(spec: &SweepSpec, s: &[summary::PointSummary], runs: usize) -> String {
    use std::fmt::Write as _;
    let mut o = String::new();
    match &spec.adaptive {
        None => {
            let _ = writeln!(
                o,
                "{}: {} points x {} seeds = {runs} runs",
                spec.file,
                s.len(),
                spec.seeds.len()
            );
        }
        Some(a) => {
            let open = s
                .iter()
                .flat_map(|p| &p.cells)
                .filter(|c| c.resolved == Some(false))
                .count();
            let _ = writeln!(
                o,
                "{}: {} points, {} to {} seeds each (adaptive, {}: CI half-width <= {} point) = {runs} runs; {open} unresolved",
                spec.file,
                s.len(),
                spec.seeds.len(),
                a.max_seeds,
                a.metric,
                sweep::adaptive::RESOLVE_POINTS
            );
        }
    }
    let key = summary::KEY_METRICS
        .iter()
        .find(|m| s.iter().any(|p| p.cells.iter().any(|c| c.metric == **m)))
        .copied()
        .or_else(|| {
            s.first()
                .and_then(|p| p.cells.first())
                .map(|c| c.metric.as_str())
        });
    let Some(key) = key else {
        return o;
    };
    let width = s
        .iter()
        .map(|p| summary::point_label(p).len())
        .max()
        .unwrap_or(0);
    let _ = writeln!(o, "{key} ({}), mean over seeds:", summary::unit(key));
    for p in s {
        let Some(c) = p.cells.iter().find(|c| c.metric == key) else {
            continue;
        };
        let _ = writeln!(
            o,
            "  {:<width$}  {}",
            summary::point_label(p),
            summary::fmt_cell(c)
        );
    }
    let (mut n, mut changed) = (0, 0);
    for c in s.iter().flat_map(|p| &p.cells) {
        if c.delta.is_some() {
            n += 1;
            changed += usize::from(c.changed());
        }
    }
    if n > 0 {
        let _ = writeln!(
            o,
            "{changed} of {n} paired deltas (every metric) are changes (Holm-adjusted p < {}, per metric)",
            summary::ALPHA
        );
    }
    o
}

/// The names of a sweep's files in its directory ([`outputs`]).
pub const FILES: [&str; 6] = [
    "results.csv",
    "results.csv.meta.json",
    "results.jsonl",
    "summary.csv",
    "summary.csv.meta.json",
    "summary.md",
];

/// Checks, before the first run, that a sweep's files can be written into
/// `out` ([`crate::output::check_targets`]).
pub fn check_outputs(out: &Path) -> Result<(), String> {
    crate::output::check_targets(&FILES.map(|f| out.join(f)))
}

/// The files of a sweep in `out` (path, text): the four outputs and the
/// CSVs' provenance sidecars ([`FILES`]); and the summary's Markdown as
/// written.
pub fn outputs(
    spec: &SweepSpec,
    s: &[summary::PointSummary],
    rows: &[Row],
    out: &Path,
    prov: &Provenance,
) -> (Vec<(PathBuf, String)>, String) {
    outputs_with(spec, s, rows, sweep::to_jsonl(rows), out, prov)
}

/// [`outputs`] with the rows of `results.jsonl` given (`jsonl`, the lines
/// without the provenance line).
fn outputs_with(
    spec: &SweepSpec,
    s: &[summary::PointSummary],
    rows: &[Row],
    jsonl: String,
    out: &Path,
    prov: &Provenance,
) -> (Vec<(PathBuf, String)>, String) {
    let axes: Vec<String> = spec.axes.iter().map(|a| a.name.clone()).collect();
    let md = with_provenance(&summary::to_markdown(spec, s), prov);
    let files = vec![
        (out.join(FILES[0]), sweep::to_csv(&axes, rows)),
        (
            out.join("results.csv.meta.json"),
            prov.sidecar("results.csv"),
        ),
        (out.join(FILES[2]), prov.jsonl_line() + &jsonl),
        (out.join(FILES[3]), summary::to_csv(&axes, s)),
        (
            out.join("summary.csv.meta.json"),
            prov.sidecar("summary.csv"),
        ),
        (out.join(FILES[5]), md.clone()),
    ];
    (files, md)
}
