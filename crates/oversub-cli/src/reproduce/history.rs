//! `oversub reproduce`'s history section: KVM's published before/after
//! figures (`data/published.toml` `[[history.row]]`: PV TLB flush, PV sched
//! yield, the queue-head boost, the 2012 PLE handler rework, the s390 yield
//! inflation) beside the simulated delta of the same change on the same
//! setup. Each change is a sweep file (`sweeps/history/*.toml`: the
//! scenarios of `scenarios/history/` x `change` = before / after, before
//! the baseline), run with the seeds and duration of `[history]` in the
//! manifest. In full mode with `max_seeds`, a row's "after" point gets more
//! seeds in rounds (`sweep::adaptive`, the headline's mode) until the 95%
//! CI half-width of its simulated delta is below the published effect
//! ([`resolves`]) or it has its cap. Outputs: each sweep's files under `DIR/history/<sweep>/`,
//! `DIR/history/summary.csv`, and a markdown table for summary.md and
//! report.html. No figure tunes anything: the presets are the commits'.

use crate::provenance::Provenance;
use crate::sweep_files;
use oversub::stats::PairedDelta;
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
    /// Full mode: adaptive seeds (`sweep::adaptive`) up to this many per
    /// point (`seeds` first, then rounds of `seeds.len()` more) for every
    /// row whose delta is not resolved ([`resolves`]); absent: the fixed
    /// `seeds`. `--quick` keeps `quick_seeds` and marks what they leave
    /// unresolved.
    #[serde(default)]
    pub max_seeds: Option<usize>,
    /// A sweep's own cap (its file stem -> seeds) in place of `max_seeds`.
    #[serde(default)]
    pub sweep_max_seeds: BTreeMap<String, usize>,
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

    /// The adaptive cap of sweep `name` (its file stem) and the manifest
    /// field it comes from; None for the fixed seeds.
    pub fn max_seeds_of(&self, name: &str) -> Option<(String, usize)> {
        match (self.sweep_max_seeds.get(name), self.max_seeds) {
            (Some(&m), _) => Some((format!("sweep_max_seeds.{name}"), m)),
            (None, Some(m)) => Some(("max_seeds".into(), m)),
            (None, None) => None,
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

/// The simulated change in the published metric's terms, % (mean, 95% CI
/// half-width), from the paired delta of the sweep metric: the mean and
/// interval of the per-seed relative changes `100 * (after - before) /
/// before`, before and after run with the same seed (`stats::paired_delta`;
/// the statistic every sweep's summary gives and the headline's stop rule
/// judges). An elapsed-time row's interval is the converted one's half
/// width ([`Metric::of_gain`] is monotonic).
fn in_published_terms(metric: Metric, d: &PairedDelta) -> Option<(f64, f64)> {
    if !d.pct.mean.is_finite() {
        return None;
    }
    let mean = metric.of_gain(d.pct.mean);
    let half = if d.pct.half.is_finite() {
        let hi = metric.of_gain(d.pct.mean + d.pct.half);
        let lo = metric.of_gain(d.pct.mean - d.pct.half);
        (hi - lo) / 2.0
    } else {
        f64::NAN
    };
    Some((mean, half))
}

/// The section's stop rule: a simulated delta is resolved when its 95% CI
/// half-width is below the published effect's magnitude, `half <
/// |published|`: the interval is then narrower than the effect it is held
/// against, and around a simulated delta as large as the published one it
/// excludes zero (the sign is decided). Without an interval (one seed, no
/// delta), unresolved.
pub fn resolves(published_pct: f64, sim: Option<(f64, f64)>) -> bool {
    matches!(sim, Some((_, h)) if h.is_finite() && h < published_pct.abs())
}

/// One row of the comparison.
struct Line<'a> {
    p: &'a PublishedRow,
    /// Simulated change in the published metric, % (mean, CI half-width).
    sim: Option<(f64, f64)>,
    /// Baseline ("before") mean of the sweep metric.
    before: Option<f64>,
    /// Seeds of the paired delta.
    seeds: usize,
    /// Modes of the per-seed deltas (`summary::Spread::of_pct`: clusters
    /// 10 points apart); 0 without a delta.
    modes: usize,
}

impl Line<'_> {
    fn resolved(&self) -> bool {
        resolves(self.p.published_pct, self.sim)
    }

    /// "resolved", or "unresolved (n seeds, ±x)".
    fn resolution(&self) -> String {
        match self.sim {
            _ if self.resolved() => "resolved".into(),
            Some((_, h)) if h.is_finite() => {
                format!("unresolved ({} seeds, ±{h:.1})", self.seeds)
            }
            _ => format!("unresolved ({} seeds)", self.seeds),
        }
    }

    /// Direction and magnitude in words: "unresolved (n seeds, ±x)" when
    /// the 95% CI is at least as wide as the published effect ([`resolves`]).
    fn verdict(&self) -> String {
        let Some((m, h)) = self.sim else {
            return "not simulated".into();
        };
        let pubv = self.p.published_pct;
        if !self.resolved() {
            return self.resolution();
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

/// The published row of sweep `sweep` whose "after" point `p` is (the
/// reverse of [`find`]).
fn row_of<'a>(rows: &'a [PublishedRow], sweep: &str, p: &PointSummary) -> Option<&'a PublishedRow> {
    if !p.labels.iter().any(|(k, v)| k == "change" && v == "after") {
        return None;
    }
    let file = p.labels.iter().find(|(k, _)| k == FILE_AXIS);
    rows.iter()
        .find(|r| r.sweep == sweep && file.is_none_or(|(_, v)| *v == r.scenario))
}

/// The stop rule of sweep `sweep` ([`resolves`] at each row's "after"
/// point, in the row's metric; other points are not judged).
fn rule<'a>(
    rows: &'a [PublishedRow],
    sweep: &'a str,
) -> impl Fn(&PointSummary, &Cell) -> Option<bool> + 'a {
    move |p, c| {
        let r = row_of(rows, sweep, p)?;
        (c.metric == r.metric.sweep_metric()).then(|| {
            resolves(
                r.published_pct,
                c.delta.and_then(|d| in_published_terms(r.metric, &d)),
            )
        })
    }
}

/// The metric the stop rule of sweep `name` judges: its rows' (one per
/// sweep), None without rows.
fn sweep_metric(rows: &[PublishedRow], name: &str) -> Result<Option<&'static str>, String> {
    let mut ms = rows
        .iter()
        .filter(|r| r.sweep == name)
        .map(|r| r.metric.sweep_metric());
    let first = ms.next();
    if let Some(other) = ms.find(|m| Some(*m) != first) {
        return Err(format!(
            "published history.row: sweep \"{name}\" has rows judged on {} and {other}: allowed one metric per sweep (its adaptive seeds judge one)",
            first.unwrap_or_default()
        ));
    }
    Ok(first)
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
    // Full mode with a cap: each sweep's rows judged by the section's rule
    // get adaptive seeds (the sweep's own seeds first, all in one batch).
    let mut caps = Vec::new();
    for (spec, name) in specs.iter_mut().zip(&names) {
        let metric = sweep_metric(&published.row, name)?;
        if let (Some(metric), Some((field, max)), false) = (metric, c.max_seeds_of(name), quick) {
            let a = oversub::sweep::adaptive::Adaptive {
                max_seeds: max,
                metric: metric.to_string(),
            };
            a.check(spec.seeds.len(), oversub::sweep::points(spec).len())
                .map_err(|e| format!("history.{field}: {e}"))?;
            spec.adaptive = Some(a);
            caps.push(max);
        }
    }
    let refs: Vec<&SweepSpec> = specs.iter().collect();
    let results = sweep_files::run_many(&refs, "history", progress)?;
    let mut files = Vec::new();
    let mut summaries = Vec::new();
    let mut done = Vec::new();
    for ((spec, name), (points, rows)) in specs.iter().zip(&names).zip(results) {
        let judge = rule(&published.row, name);
        let (rows, mut summary) = sweep_files::extend_adaptive_by(
            spec,
            &points,
            rows,
            &judge,
            &format!("history {name}"),
            progress,
        )?;
        // Quick mode (or no cap): the fixed seeds, judged by the same rule.
        if let Some(m) = sweep_metric(&published.row, name)? {
            oversub::sweep::adaptive::mark_by(&mut summary, m, &judge);
        }
        done.push((rows, summary));
    }
    let prov = Provenance::new(
        done.iter()
            .flat_map(|(rows, _)| rows.iter().map(|r| r.kernel.as_str())),
    );
    let mut runs = 0;
    for ((spec, name), (rows, summary)) in specs.iter().zip(&names).zip(done) {
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
        let after = find(summary, &r.scenario, "after").and_then(|p| cell(p, m));
        let delta = after.and_then(|c| c.delta);
        let sim = delta.and_then(|d| in_published_terms(r.metric, &d));
        let before = find(summary, &r.scenario, "before")
            .and_then(|p| cell(p, m))
            .map(|c| c.ci.mean);
        lines.push(Line {
            p: r,
            sim,
            before,
            seeds: delta.map_or(0, |d| d.pct.n),
            modes: after.and_then(|c| c.delta_spread).map_or(0, |s| s.modes),
        });
    }
    // summary.csv
    let mut csv = String::from(
        "commit,change,workload,vms,published_pct,simulated_pct,ci95,seeds,resolved,delta_modes,gap_pp,metric,setup,scenario,before,verdict\n",
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
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            l.p.commit,
            csv_field(&l.p.change),
            csv_field(&l.p.workload),
            l.p.vms,
            num(l.p.published_pct),
            num(s),
            num(h),
            l.seeds,
            l.resolved(),
            l.modes,
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
        "Each row: a change's published effect on its setup, and the same change simulated on that setup (scenarios/history/, sweeps/history/), {} x {} of simulated time{}, paired by seed (mean ± 95% CI of the per-seed relative changes). Gap = simulated - published (percentage points). Resolved: the CI half-width is below the published effect's magnitude; \"unresolved (n seeds, ±x)\" otherwise. \"N modes\": the per-seed deltas fall into N clusters 10 points apart. Elapsed time (kernbench): the build's time for a fixed tree, from the VMs' useful vCPU time per second (the rate its work is done). Host and guests on the CFS model (Linux 6.1).\n",
        match caps.iter().max() {
            Some(most) => format!(
                "{} seeds, adaptive up to {most} per row (rounds of {} more until resolved)",
                seeds.len(),
                seeds.len()
            ),
            None => format!("{} seeds", seeds.len()),
        },
        d,
        if own.is_empty() {
            String::new()
        } else {
            format!(" ({})", own.join(", "))
        }
    );
    let _ = writeln!(
        md,
        "| commit | change | workload | VMs | setup | published % | simulated % | seeds | gap pp | verdict |"
    );
    let _ = writeln!(
        md,
        "| --- | --- | --- | ---: | --- | ---: | ---: | ---: | ---: | --- |"
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
        let modes = if l.modes > 1 {
            format!("; {} modes", l.modes)
        } else {
            String::new()
        };
        let _ = writeln!(
            md,
            "| {commit} | {} | {} | {} | {} | {:+.1} | {sim} | {} | {gap} | {}{modes} |",
            l.p.change,
            l.p.workload,
            l.p.vms,
            l.p.setup,
            l.p.published_pct,
            l.seeds,
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
            seeds: 5,
            modes: 1,
        };
        assert_eq!(
            l(Some((50.0, 90.0))).verdict(),
            "unresolved (5 seeds, ±90.0)"
        );
        // The rule is strict: a half-width equal to the effect is not
        // narrower than it.
        assert!(!l(Some((50.0, 78.0))).resolved());
        assert!(l(Some((50.0, 77.9))).resolved());
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
            max_seeds: None,
            sweep_max_seeds: BTreeMap::new(),
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

    /// A synthetic two-row sweep run by a fake runner (no simulation): row
    /// "a" resolves after one round of adaptive seeds, row "b" is bimodal
    /// (per-seed deltas -50 / +50) and stays unresolved at the cap.
    #[test]
    fn adaptive_seeds_stop_when_resolved_and_leave_the_bimodal_row_at_the_cap() {
        use oversub::sweep::{self, Row};
        let mut spec = SweepSpec::parse(
            "t.toml",
            "seeds = [1, 2, 3]\nbaseline = { change = \"before\" }\n\
             [[axis]]\nkey = \"file\"\nvalues = [\"a.toml\", \"b.toml\"]\n\
             [[axis]]\nname = \"change\"\n\
             values = [{ label = \"before\", set = [] }, { label = \"after\", set = [] }]\n",
            Path::new("."),
        )
        .unwrap();
        let cap = 12;
        spec.adaptive = Some(oversub::sweep::adaptive::Adaptive {
            max_seeds: cap,
            metric: "throughput".into(),
        });
        let pts = sweep::points(&spec);
        let published = |scenario: &str| PublishedRow {
            sweep: "t".into(),
            scenario: scenario.into(),
            ..row(10.0)
        };
        let rows_pub = vec![published("a"), published("b")];
        // Throughput: 100 before; after, "a" +0, +20, +40 at seeds 1-3 and
        // +20 from then on (half-width 49.7 at 3 seeds, 13.3 at 6, 7.7 at
        // 9: resolved at 9, below |10|); "b" -50 / +50 by seed parity.
        let value = |i: usize, seed: u64| -> f64 {
            let p = &pts[i];
            let label = |k: &str| {
                p.labels
                    .iter()
                    .find(|(n, _)| n == k)
                    .map(|(_, v)| v.as_str())
                    .unwrap()
            };
            let delta = match (label(FILE_AXIS), label("change")) {
                (_, "before") => 0.0,
                ("a", _) => match seed {
                    1 => 0.0,
                    3 => 40.0,
                    _ => 20.0,
                },
                _ if seed % 2 == 0 => 50.0,
                _ => -50.0,
            };
            100.0 + delta
        };
        let row_at = |i: usize, seed: u64| Row {
            point: i,
            file: String::new(),
            workload: "w".into(),
            vms: 1,
            labels: pts[i].labels.clone(),
            seed,
            metrics: vec![("throughput".into(), value(i, seed))],
            scenario: serde_json::Value::Null,
            op_latency: Default::default(),
            kernel: String::new(),
        };
        let own: Vec<Row> = (0..pts.len())
            .flat_map(|i| spec.seeds.iter().map(move |&s| (i, s)))
            .map(|(i, s)| row_at(i, s))
            .collect();
        let mut rounds = 0;
        let judge = rule(&rows_pub, "t");
        let (rows, summary) =
            oversub::sweep::adaptive::extend_by(&spec, &pts, own, &judge, &mut |runs| {
                rounds += 1;
                Ok(runs.iter().map(|&(i, s)| row_at(i, s)).collect())
            })
            .unwrap();
        let seeds_of = |scenario: &str, side: &str| {
            rows.iter()
                .filter(|r| {
                    r.labels
                        .iter()
                        .any(|(k, v)| k == FILE_AXIS && v == scenario)
                        && r.labels.iter().any(|(k, v)| k == "change" && v == side)
                })
                .map(|r| r.seed)
                .collect::<Vec<_>>()
        };
        // "a": its own 3 seeds and two rounds of 3 (seeds 4-9), then
        // resolved; its baseline has the same seeds (paired).
        assert_eq!(seeds_of("a", "after"), (1..=9).collect::<Vec<_>>());
        assert_eq!(seeds_of("a", "before"), seeds_of("a", "after"));
        // "b": rounds up to the cap, then stops (not past it).
        assert_eq!(seeds_of("b", "after").len(), cap);
        assert_eq!(rounds, 3, "rounds of 3 from 3 seeds to the cap of 12");
        let cell_of = |scenario: &str| {
            find(&summary, scenario, "after")
                .and_then(|p| cell(p, "throughput"))
                .unwrap()
        };
        assert_eq!(cell_of("a").resolved, Some(true));
        assert_eq!(cell_of("b").resolved, Some(false));
        // The baselines are not judged.
        assert_eq!(
            find(&summary, "a", "before")
                .and_then(|p| cell(p, "throughput"))
                .unwrap()
                .resolved,
            None
        );
        // What the table says of each.
        fn line<'a>(c: &Cell, r: &'a PublishedRow) -> Line<'a> {
            Line {
                p: r,
                sim: c
                    .delta
                    .and_then(|d| in_published_terms(Metric::Throughput, &d)),
                before: None,
                seeds: c.delta.map_or(0, |d| d.pct.n),
                modes: c.delta_spread.map_or(0, |s| s.modes),
            }
        }
        let (a, b) = (
            line(cell_of("a"), &rows_pub[0]),
            line(cell_of("b"), &rows_pub[1]),
        );
        assert_eq!(a.resolution(), "resolved");
        assert_eq!(a.verdict(), "same direction, within 2x");
        assert!(
            b.resolution().starts_with("unresolved (12 seeds, ±"),
            "{}",
            b.resolution()
        );
        assert_eq!(b.modes, 2, "bimodal");
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
