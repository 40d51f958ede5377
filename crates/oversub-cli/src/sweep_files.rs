//! `oversub sweep` and the reproduction's sections: runs a sweep with the
//! core's in-memory runner and writes `results.csv`, `results.jsonl`, `summary.csv`, `summary.md`.

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
/// `DIR/summary.csv` and `DIR/summary.md`, all or none. The directory is
/// checked (and claimed for this sweep) before the first run. Returns the
/// summary text.
pub fn sweep_to_dir(spec: &SweepSpec, out: &Path, progress: bool) -> Result<String, String> {
    crate::output::claim_out_dir(out, "--out", &spec.file)?;
    let (pts, rows) = run(spec, progress)?;
    let (files, md) = outputs(spec, &pts, &rows, out);
    crate::output::write_set(&files)?;
    Ok(md)
}

/// The four files of a sweep in `out` (path, text), and the summary text.
pub fn outputs(
    spec: &SweepSpec,
    pts: &[Point],
    rows: &[Row],
    out: &Path,
) -> (Vec<(PathBuf, String)>, String) {
    let axes: Vec<String> = spec.axes.iter().map(|a| a.name.clone()).collect();
    let s = summary::summarise(spec, pts, rows);
    let md = summary::to_markdown(spec, &s);
    let files = vec![
        (out.join("results.csv"), sweep::to_csv(&axes, rows)),
        (out.join("results.jsonl"), sweep::to_jsonl(rows)),
        (out.join("summary.csv"), summary::to_csv(&axes, &s)),
        (out.join("summary.md"), md.clone()),
    ];
    (files, md)
}
