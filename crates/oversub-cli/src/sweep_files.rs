//! `oversub sweep` and the reproduction's sections: runs a sweep with the
//! core's in-memory runner and writes `results.csv`, `results.jsonl`, `summary.csv`, `summary.md`,
//! each with its provenance (`crate::provenance`: the CSVs in a
//! `.meta.json` sidecar, the JSONL in its first line, the Markdown in one line).

use crate::provenance::Provenance;
use oversub::sweep::spec::SweepSpec;
use oversub::sweep::{self, summary, Point, Row};
use std::path::{Path, PathBuf};

/// Runs every point of `spec` (the core's runner); `progress` shows a bar.
pub fn run(spec: &SweepSpec, progress: bool) -> Result<(Vec<Point>, Vec<Row>), String> {
    let jobs = sweep::validated_points(spec)?.len() * spec.seeds.len();
    let prefix = Path::new(&spec.file)
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let bar = crate::progress::Steps::new(jobs as u64, "runs", &prefix, progress);
    let r = sweep::run(spec, &|| bar.inc());
    bar.finish();
    r
}

/// Runs several sweeps as one batch (`sweep::run_many`: all runs share the
/// cores, longest first), with one progress bar labelled `prefix`.
pub fn run_many(
    specs: &[&SweepSpec],
    prefix: &str,
    progress: bool,
) -> Result<Vec<sweep::SweepOutput>, String> {
    let mut jobs = 0;
    for s in specs {
        jobs += sweep::validated_points(s)?.len() * s.seeds.len();
    }
    let bar = crate::progress::Steps::new(jobs as u64, "runs", prefix, progress);
    let r = sweep::run_many(specs, &|| bar.inc());
    bar.finish();
    r
}

/// Runs a sweep file and writes `DIR/results.csv`, `DIR/results.jsonl`,
/// `DIR/summary.csv` and `DIR/summary.md` (with the CSVs' provenance
/// sidecars), all or none. The directory is checked (and claimed for this
/// sweep) before the first run. Returns the compact terminal summary
/// ([`compact`]).
pub fn sweep_to_dir(spec: &SweepSpec, out: &Path, progress: bool) -> Result<String, String> {
    crate::output::claim_out_dir(out, "--out", &spec.file)?;
    let (pts, rows) = run(spec, progress)?;
    let prov = Provenance::new(rows.iter().map(|r| r.kernel.as_str()));
    let s = summary::summarise(spec, &pts, &rows);
    let (files, _) = outputs(spec, &s, &rows, out, &prov);
    crate::output::write_set(&files)?;
    Ok(compact(spec, &s, rows.len()))
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
    let _ = writeln!(
        o,
        "{}: {} points x {} seeds = {runs} runs",
        spec.file,
        s.len(),
        spec.seeds.len()
    );
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

/// The files of a sweep in `out` (path, text): the four outputs and the
/// CSVs' provenance sidecars; and the summary's Markdown as written.
pub fn outputs(
    spec: &SweepSpec,
    s: &[summary::PointSummary],
    rows: &[Row],
    out: &Path,
    prov: &Provenance,
) -> (Vec<(PathBuf, String)>, String) {
    let axes: Vec<String> = spec.axes.iter().map(|a| a.name.clone()).collect();
    let md = with_provenance(&summary::to_markdown(spec, s), prov);
    let files = vec![
        (out.join("results.csv"), sweep::to_csv(&axes, rows)),
        (
            out.join("results.csv.meta.json"),
            prov.sidecar("results.csv"),
        ),
        (
            out.join("results.jsonl"),
            prov.jsonl_line() + &sweep::to_jsonl(rows),
        ),
        (out.join("summary.csv"), summary::to_csv(&axes, s)),
        (
            out.join("summary.csv.meta.json"),
            prov.sidecar("summary.csv"),
        ),
        (out.join("summary.md"), md.clone()),
    ];
    (files, md)
}
