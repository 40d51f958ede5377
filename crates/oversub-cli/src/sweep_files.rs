//! `oversub sweep` and the reproduction's sections: runs a sweep with the
//! core's in-memory runner, an indicatif bar of finished runs on a terminal,
//! and writes `results.csv`, `results.jsonl`, `summary.csv`, `summary.md`.

use oversub::sweep::spec::SweepSpec;
use oversub::sweep::{self, summary, Point, Row};
use std::path::Path;
use std::sync::OnceLock;

/// Runs every point of `spec`; `progress` shows a bar on stderr.
pub fn run(spec: &SweepSpec, progress: bool) -> Result<(Vec<Point>, Vec<Row>), String> {
    if !progress {
        return sweep::run(spec);
    }
    let bar: OnceLock<indicatif::ProgressBar> = OnceLock::new();
    let start = |n: usize| {
        let b = indicatif::ProgressBar::with_draw_target(
            Some(n as u64),
            indicatif::ProgressDrawTarget::stderr(),
        );
        if let Ok(st) = indicatif::ProgressStyle::with_template(
            "{prefix} [{bar:30}] {pos}/{len} runs, {elapsed} elapsed, ETA {eta}",
        ) {
            b.set_style(st.progress_chars("=> "));
        }
        b.set_prefix(
            Path::new(&spec.file)
                .file_name()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default(),
        );
        let _ = bar.set(b);
    };
    let done = || {
        if let Some(b) = bar.get() {
            b.inc(1);
        }
    };
    let out = sweep::run_observed(spec, &start, &done);
    if let Some(b) = bar.get() {
        b.finish_and_clear();
    }
    out
}

/// Runs a sweep file and writes `DIR/results.csv`, `DIR/results.jsonl`,
/// `DIR/summary.csv` and `DIR/summary.md`. Returns the summary text.
pub fn sweep_to_dir(spec: &SweepSpec, out: &Path, progress: bool) -> Result<String, String> {
    let (pts, rows) = run(spec, progress)?;
    write_outputs(spec, &pts, &rows, out)
}

/// Writes the four files of a sweep into `out`; returns the summary text.
pub fn write_outputs(
    spec: &SweepSpec,
    pts: &[Point],
    rows: &[Row],
    out: &Path,
) -> Result<String, String> {
    std::fs::create_dir_all(out).map_err(|e| format!("{}: cannot create: {e}", out.display()))?;
    let axes: Vec<String> = spec.axes.iter().map(|a| a.name.clone()).collect();
    let w = |name: &str, text: &str| {
        let p = out.join(name);
        std::fs::write(&p, text).map_err(|e| format!("{}: cannot write: {e}", p.display()))
    };
    w("results.csv", &sweep::to_csv(&axes, rows))?;
    w("results.jsonl", &sweep::to_jsonl(rows))?;
    let s = summary::summarise(spec, pts, rows);
    w("summary.csv", &summary::to_csv(&axes, &s))?;
    let md = summary::to_markdown(spec, &s);
    w("summary.md", &md)?;
    Ok(md)
}
