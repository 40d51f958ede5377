//! `oversub reproduce`'s history section: KVM's published before/after
//! figures (`data/published.toml` `[[history.row]]`: PV TLB flush, PV sched
//! yield, the queue-head boost, the 2012 PLE handler rework, the s390 yield
//! inflation) beside the simulated delta of the same change on the same
//! setup. Each change is a sweep file (`sweeps/history/*.toml`: the
//! scenarios of `scenarios/history/` x `change` = before / after, before
//! the baseline), run with the seeds and duration of `[history]` in the
//! manifest. Outputs: each sweep's files under `DIR/history/<sweep>/`,
//! `DIR/history/summary.csv`, and a markdown table for summary.md and
//! report.html. No figure tunes anything: the presets are the commits'.

use crate::provenance::Provenance;
use crate::sweep_files;
use oversub::sweep::spec::{SweepSpec, FILE_AXIS};
use oversub::sweep::summary::{Cell, PointSummary};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// `[history]` of the manifest.
#[derive(Deserialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Sweep files (relative to the manifest), one per change.
    pub sweeps: Vec<String>,
    pub seeds: Vec<u64>,
    pub duration: String,
    pub quick_seeds: Vec<u64>,
    pub quick_duration: String,
    /// A sweep's own duration (its file stem -> duration) in place of
    /// `duration`: a workload whose op outlasts the section's runs
    /// (kernbench's objects, ~2-4 s each at 64 vCPUs) gets runs long enough
    /// to complete several of them.
    #[serde(default)]
    pub sweep_durations: BTreeMap<String, String>,
    /// The same in place of `quick_duration`.
    #[serde(default)]
    pub quick_sweep_durations: BTreeMap<String, String>,
}

impl Config {
    /// The duration of sweep `name` (its file stem) in this mode, and the
    /// manifest field it comes from.
    pub fn duration_of(&self, name: &str, quick: bool) -> (String, &str) {
        let (map, mf, d, df) = if quick {
            (
                &self.quick_sweep_durations,
                "quick_sweep_durations",
                &self.quick_duration,
                "quick_duration",
            )
        } else {
            (
                &self.sweep_durations,
                "sweep_durations",
                &self.duration,
                "duration",
            )
        };
        match map.get(name) {
            Some(v) => (format!("{mf}.{name}"), v),
            None => (df.to_string(), d),
        }
    }
}

/// `[history]` of `data/published.toml`.
#[derive(Deserialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
pub struct Published {
    pub row: Vec<PublishedRow>,
}

/// How a published figure is measured, and so how the simulated delta is
/// put beside it.
#[derive(Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Throughput gain, % (ebizzy records/s: the VMs' ops/s summed).
    Throughput,
    /// Elapsed-time reduction, % (kernbench: the wall time of one build of
    /// a fixed tree): `1 - T_after / T_before`. A build is a fixed amount of
    /// work done at the rate the vCPUs do guest work, so `T = W / R` with R
    /// the VMs' useful vCPU time per second (sweep metric `useful_pct`: the
    /// guests' CPU that is neither spinning, halt polling nor exits; the
    /// build's processes, partial objects included), and from its gain g
    /// the reduction is `1 - 1 / (1 + g)`. Completed objects would not do:
    /// the simulated slots run identical objects in near lockstep, so a
    /// count moves in waves of 128 (docs/reproduce.md, "history").
    ElapsedTime,
    /// Change of yield hypercalls per lock acquisition, %.
    HypercallYieldsPerOp,
}

impl Metric {
    fn name(self) -> &'static str {
        match self {
            Metric::Throughput => "throughput",
            Metric::ElapsedTime => "elapsed_time",
            Metric::HypercallYieldsPerOp => "hypercall_yields_per_op",
        }
    }

    fn sweep_metric(self) -> &'static str {
        match self {
            Metric::Throughput => "throughput",
            Metric::ElapsedTime => "useful_pct",
            Metric::HypercallYieldsPerOp => "hypercall_yields_per_op",
        }
    }

    /// The simulated throughput (or yields) change `g` (%) in the published
    /// metric's terms.
    fn of_gain(self, g: f64) -> f64 {
        match self {
            Metric::ElapsedTime => 100.0 * (1.0 - 1.0 / (1.0 + g / 100.0)),
            _ => g,
        }
    }
}

#[derive(Deserialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
pub struct PublishedRow {
    /// 12-hex id of the upstream commit; empty when it could not be
    /// verified (`commit_note` says why).
    pub commit: String,
    #[serde(default)]
    pub commit_note: String,
    /// Where the id was found together with its title (a commit page, or a
    /// Fixes:/bisect/blame line naming it); empty when `commit` is.
    #[serde(default)]
    pub commit_source: String,
    /// The same for the host-side commit of a guest/host pair.
    #[serde(default)]
    pub commit_source_host: String,
    pub change: String,
    pub workload: String,
    /// The published machine and VM layout.
    pub setup: String,
    pub vms: usize,
    pub published_pct: f64,
    pub metric: Metric,
    /// The sweep (file stem under `sweeps/history/`) and the scenario (file
    /// stem, the label of the sweep's `key = "file"` axis) simulating this
    /// row.
    pub sweep: String,
    pub scenario: String,
    pub source: String,
}

/// One row of the comparison.
struct Line<'a> {
    p: &'a PublishedRow,
    /// Simulated change in the published metric, % (mean, CI half-width).
    sim: Option<(f64, f64)>,
    /// Baseline ("before") mean of the sweep metric.
    before: Option<f64>,
}

impl Line<'_> {
    /// Direction and magnitude in words: "unresolved" when the 95% CI is
    /// at least as wide as the published effect.
    fn verdict(&self) -> String {
        let Some((m, h)) = self.sim else {
            return "not simulated".into();
        };
        let pubv = self.p.published_pct;
        if !h.is_finite() || h >= pubv.abs() {
            return "unresolved (CI wider than the published effect)".into();
        }
        if m - h <= 0.0 && m + h >= 0.0 {
            return "no change resolved".into();
        }
        if (m > 0.0) != (pubv > 0.0) {
            return "opposite direction".into();
        }
        let ratio = m / pubv;
        if (0.5..=2.0).contains(&ratio) {
            "same direction, within 2x".into()
        } else if ratio < 0.01 {
            "same direction, under 1% of the published".into()
        } else if ratio < 0.5 {
            format!("same direction, {ratio:.2}x the published")
        } else {
            format!("same direction, {ratio:.1}x the published")
        }
    }
}

/// The point of `scenario` (the label of the `key = "file"` axis,
/// [`FILE_AXIS`]; a sweep with a `base` file and no file axis has none) on
/// the `side` of the change.
fn find<'a>(summary: &'a [PointSummary], scenario: &str, side: &str) -> Option<&'a PointSummary> {
    summary.iter().find(|p| {
        let file = p.labels.iter().find(|(k, _)| k == FILE_AXIS);
        file.is_none_or(|(_, v)| v == scenario)
            && p.labels.iter().any(|(k, v)| k == "change" && v == side)
    })
}

fn cell<'a>(p: &'a PointSummary, metric: &str) -> Option<&'a Cell> {
    p.cells.iter().find(|c| c.metric == metric)
}

/// What the section adds to `oversub reproduce`.
pub struct Output {
    pub markdown: String,
    pub files: Vec<(PathBuf, String)>,
    pub runs: usize,
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// Runs every change's sweep and compares; `dir` is the manifest's folder,
/// `out` the reproduction's `--out`.
pub fn run(
    c: &Config,
    dir: &Path,
    published: Option<&Published>,
    out: &Path,
    quick: bool,
    progress: bool,
) -> Result<Output, String> {
    let Some(published) = published else {
        return Err(format!(
            "{}: [history] needs [[history.row]] in the published figures",
            dir.display()
        ));
    };
    let (seeds, d) = if quick {
        (&c.quick_seeds, &c.quick_duration)
    } else {
        (&c.seeds, &c.duration)
    };
    let sf = if quick { "quick_seeds" } else { "seeds" };
    oversub::sweep::spec::check_seeds(seeds).map_err(|e| format!("history: {sf}: {e}"))?;
    let mut specs = Vec::new();
    let mut names = Vec::new();
    // Sweeps with their own duration, for the table's note.
    let mut own = Vec::new();
    for s in &c.sweeps {
        let path = dir.join(s);
        let mut spec = SweepSpec::load(&path)?;
        let name = path
            .file_stem()
            .map(|x| x.to_string_lossy().into_owned())
            .unwrap_or_else(|| s.clone());
        let (df, dv) = c.duration_of(&name, quick);
        if dv != d {
            own.push(format!("{name} {dv}"));
        }
        spec.seeds = seeds.clone();
        spec.duration = Some(super::dur(&format!("history: {df}"), dv)?);
        names.push(name);
        specs.push(spec);
    }
    for (i, r) in published.row.iter().enumerate() {
        if !names.contains(&r.sweep) {
            return Err(format!(
                "published history.row[{i}].sweep: \"{}\" is not a [history] sweep: allowed {}",
                oversub::limits::echo(&r.sweep),
                names.join(", ")
            ));
        }
        let ok_commit = r.commit.is_empty()
            || (r.commit.len() == 12 && r.commit.chars().all(|c| c.is_ascii_hexdigit()));
        if !ok_commit {
            return Err(format!(
                "published history.row[{i}].commit: \"{}\": allowed a 12-hex commit id or \"\"",
                oversub::limits::echo(&r.commit)
            ));
        }
        if !r.commit.is_empty() && r.commit_source.is_empty() {
            return Err(format!(
                "published history.row[{i}].commit_source: \"\": a commit id ({}) needs where it was found",
                r.commit
            ));
        }
    }
    let refs: Vec<&SweepSpec> = specs.iter().collect();
    let results = sweep_files::run_many(&refs, "history", progress)?;
    let prov = Provenance::new(
        results
            .iter()
            .flat_map(|(_, rows)| rows.iter().map(|r| r.kernel.as_str())),
    );
    let mut files = Vec::new();
    let mut summaries = Vec::new();
    let mut runs = 0;
    for ((spec, name), (points, rows)) in specs.iter().zip(&names).zip(results) {
        let summary = oversub::sweep::summary::summarise(spec, &points, &rows);
        files.extend(
            sweep_files::outputs(
                spec,
                &summary,
                &rows,
                &out.join("history").join(name),
                &prov,
            )
            .0,
        );
        runs += rows.len();
        summaries.push((name.clone(), summary));
    }
    let mut lines = Vec::new();
    for r in &published.row {
        let summary = summaries
            .iter()
            .find(|(n, _)| *n == r.sweep)
            .map(|(_, s)| s.as_slice())
            .unwrap_or(&[]);
        let m = r.metric.sweep_metric();
        let sim = find(summary, &r.scenario, "after")
            .and_then(|p| cell(p, m))
            .and_then(|c| c.delta)
            .filter(|d| d.pct.mean.is_finite())
            .map(|d| {
                let mean = r.metric.of_gain(d.pct.mean);
                let half = if d.pct.half.is_finite() {
                    let hi = r.metric.of_gain(d.pct.mean + d.pct.half);
                    let lo = r.metric.of_gain(d.pct.mean - d.pct.half);
                    (hi - lo) / 2.0
                } else {
                    f64::NAN
                };
                (mean, half)
            });
        let before = find(summary, &r.scenario, "before")
            .and_then(|p| cell(p, m))
            .map(|c| c.ci.mean);
        lines.push(Line { p: r, sim, before });
    }
    // summary.csv
    let mut csv = String::from(
        "commit,change,workload,vms,published_pct,simulated_pct,ci95,gap_pp,metric,setup,scenario,before,verdict\n",
    );
    for l in &lines {
        let (s, h) = l.sim.unwrap_or((f64::NAN, f64::NAN));
        let num = |x: f64| {
            if x.is_finite() {
                format!("{x:.2}")
            } else {
                String::new()
            }
        };
        let _ = writeln!(
            csv,
            "{},{},{},{},{},{},{},{},{},{},{},{},{}",
            l.p.commit,
            csv_field(&l.p.change),
            csv_field(&l.p.workload),
            l.p.vms,
            num(l.p.published_pct),
            num(s),
            num(h),
            num(s - l.p.published_pct),
            l.p.metric.name(),
            csv_field(&l.p.setup),
            csv_field(&l.p.scenario),
            l.before.map_or(String::new(), num),
            csv_field(&l.verdict())
        );
    }
    files.push((out.join("history").join("summary.csv"), csv));
    files.push((
        out.join("history").join("summary.csv.meta.json"),
        prov.sidecar("summary.csv"),
    ));
    // markdown
    let mut md = String::new();
    let _ = writeln!(
        md,
        "# Section history: KVM's published before/after beside the simulation{}\n",
        if quick {
            " (quick: fewer seeds, shorter runs)"
        } else {
            ""
        }
    );
    let _ = writeln!(
        md,
        "Each row: a change's published effect on its setup, and the same change simulated on that setup (scenarios/history/, sweeps/history/), {} seeds x {} of simulated time{}, paired by seed (mean ± 95% CI). Gap = simulated - published (percentage points). \"unresolved\": the CI is at least as wide as the published effect. Elapsed time (kernbench): the build's time for a fixed tree, from the VMs' useful vCPU time per second (the rate its work is done). Host and guests on the CFS model (Linux 6.1).\n",
        seeds.len(),
        d,
        if own.is_empty() {
            String::new()
        } else {
            format!(" ({})", own.join(", "))
        }
    );
    let _ = writeln!(
        md,
        "| commit | change | workload | VMs | setup | published % | simulated % | gap pp | verdict |"
    );
    let _ = writeln!(
        md,
        "| --- | --- | --- | ---: | --- | ---: | ---: | ---: | --- |"
    );
    for l in &lines {
        let sim = match l.sim {
            Some((m, h)) if h.is_finite() => format!("{m:+.1} ± {h:.1}"),
            Some((m, _)) => format!("{m:+.1}"),
            None => "-".into(),
        };
        let gap = l.sim.map_or("-".into(), |(m, _)| {
            format!("{:+.1}", m - l.p.published_pct)
        });
        let commit = if l.p.commit.is_empty() {
            "-".to_string()
        } else {
            format!("`{}`", l.p.commit)
        };
        let _ = writeln!(
            md,
            "| {commit} | {} | {} | {} | {} | {:+.1} | {sim} | {gap} | {} |",
            l.p.change,
            l.p.workload,
            l.p.vms,
            l.p.setup,
            l.p.published_pct,
            l.verdict()
        );
    }
    let _ = writeln!(md, "\nSources:\n");
    let mut seen = Vec::new();
    for l in &lines {
        if !seen.contains(&&l.p.source) {
            seen.push(&l.p.source);
            let mut note = if l.p.commit_note.is_empty() {
                String::new()
            } else {
                format!(" ({})", l.p.commit_note)
            };
            for src in [&l.p.commit_source, &l.p.commit_source_host] {
                if !src.is_empty() {
                    let _ = write!(note, "; id: {src}");
                }
            }
            let _ = writeln!(md, "* {}: {}{note}", l.p.change, l.p.source);
        }
    }
    md.push('\n');
    Ok(Output {
        markdown: md,
        files,
        runs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(p: f64) -> PublishedRow {
        PublishedRow {
            commit: String::new(),
            commit_note: String::new(),
            commit_source: String::new(),
            commit_source_host: String::new(),
            change: "c".into(),
            workload: "w".into(),
            setup: "s".into(),
            vms: 1,
            published_pct: p,
            metric: Metric::Throughput,
            sweep: "x".into(),
            scenario: "y".into(),
            source: "z".into(),
        }
    }

    /// Every id in the repository's `data/published.toml` names where it was
    /// verified (issue 25: ids are verified, not recalled).
    #[test]
    fn every_published_commit_id_has_its_source() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../data/published.toml");
        let text = std::fs::read_to_string(path).expect("data/published.toml");
        let mut t: toml::Table = toml::from_str(&text).expect("published.toml parses");
        let h = t.remove("history").expect("[history]");
        let p: Published = h.try_into().expect("[history] parses");
        assert!(!p.row.is_empty());
        for r in &p.row {
            if r.commit.is_empty() {
                assert!(!r.commit_note.is_empty(), "{}: no id and no note", r.change);
            } else {
                assert!(
                    !r.commit_source.is_empty(),
                    "{}: id without source",
                    r.change
                );
                assert!(r.commit_source.contains(&r.commit[..12]), "{}", r.change);
            }
        }
    }

    #[test]
    fn verdict_calls_a_wide_ci_unresolved_and_reads_direction() {
        let r = row(78.0);
        let l = |sim| Line {
            p: &r,
            sim,
            before: None,
        };
        assert!(l(Some((50.0, 90.0))).verdict().starts_with("unresolved"));
        assert_eq!(l(Some((60.0, 10.0))).verdict(), "same direction, within 2x");
        assert_eq!(l(Some((-30.0, 10.0))).verdict(), "opposite direction");
        assert_eq!(l(Some((3.0, 10.0))).verdict(), "no change resolved");
        assert_eq!(
            l(Some((10.0, 5.0))).verdict(),
            "same direction, 0.13x the published"
        );
        assert_eq!(l(None).verdict(), "not simulated");
        assert_eq!(
            l(Some((0.5, 0.1))).verdict(),
            "same direction, under 1% of the published"
        );
    }

    #[test]
    fn a_sweep_with_its_own_duration_runs_for_it_in_its_mode() {
        let mut c = Config {
            sweeps: vec!["a.toml".into(), "kb.toml".into()],
            seeds: vec![1],
            duration: "1s".into(),
            quick_seeds: vec![1],
            quick_duration: "100ms".into(),
            sweep_durations: BTreeMap::new(),
            quick_sweep_durations: BTreeMap::new(),
        };
        c.sweep_durations.insert("kb".into(), "15s".into());
        assert_eq!(
            c.duration_of("kb", false),
            ("sweep_durations.kb".into(), "15s")
        );
        assert_eq!(c.duration_of("a", false), ("duration".into(), "1s"));
        // Not given for --quick: the section's quick duration.
        assert_eq!(
            c.duration_of("kb", true),
            ("quick_duration".into(), "100ms")
        );
    }

    /// kernbench's elapsed time is read from the rate of useful vCPU time,
    /// not from completed objects (none complete in a run shorter than an
    /// object, and they complete in waves).
    #[test]
    fn elapsed_time_reads_the_useful_vcpu_time() {
        assert_eq!(Metric::ElapsedTime.sweep_metric(), "useful_pct");
        assert_eq!(Metric::Throughput.sweep_metric(), "throughput");
    }

    #[test]
    fn elapsed_time_is_converted_from_the_throughput_gain() {
        // Twice the throughput halves the elapsed time.
        assert!((Metric::ElapsedTime.of_gain(100.0) - 50.0).abs() < 1e-9);
        assert!((Metric::ElapsedTime.of_gain(-50.0) + 100.0).abs() < 1e-9);
        assert_eq!(Metric::Throughput.of_gain(12.5), 12.5);
    }
}
