//! The summary of a sweep: per point and metric, the distribution over
//! seeds (mean with its 95% confidence interval, min, max, and how many
//! modes the values fall into), the paired delta (same seed) against the
//! point's baseline with its interval and distribution, and whether the
//! point is resolved by the adaptive stop rule ([`resolution`]).

use super::spec::SweepSpec;
use super::{num, Point, Row};
use crate::stats::distribution::modes;
use crate::stats::{holm, paired_delta, paired_p, pct_deltas, Ci, PairedDelta};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The gap rule of a sweep's mode count, relative: sorted values start a
/// new mode where two neighbours lie more than this fraction of the
/// median's magnitude apart (`stats::distribution::modes`, the rule
/// conformance uses with its row tolerance as the gap). For the per-seed
/// relative deltas (percent of the baseline) the gap is
/// `100 * MODE_GAP_REL` percentage points: the same 10% of the baseline.
/// Seed-to-seed spread of a settled point is a few percent; clusters 10%
/// apart are separate outcomes (e.g. a lock convoy in some seeds only).
pub const MODE_GAP_REL: f64 = 0.10;

/// Where a point's values lie: the range and the mode count.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spread {
    pub min: f64,
    pub max: f64,
    /// Modes by the gap rule ([`MODE_GAP_REL`]); 1 = unimodal.
    pub modes: usize,
}

impl Spread {
    /// The spread of `xs` (finite values) with mode gap `gap`.
    pub fn of(xs: &[f64], gap: f64) -> Spread {
        Spread {
            min: xs.iter().copied().fold(f64::INFINITY, f64::min),
            max: xs.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            modes: modes(xs, gap).len(),
        }
    }

    /// The spread of a metric's values over seeds: gap [`MODE_GAP_REL`] of
    /// the median's magnitude.
    pub fn of_values(xs: &[f64]) -> Spread {
        Spread::of(
            xs,
            MODE_GAP_REL * crate::stats::distribution::median(xs).abs(),
        )
    }

    /// The spread of per-seed relative deltas in percent: gap
    /// `100 * MODE_GAP_REL` percentage points.
    pub fn of_pct(xs: &[f64]) -> Spread {
        Spread::of(xs, 100.0 * MODE_GAP_REL)
    }

    /// "[min, max]" with `prec` decimals, then ", N modes" when multimodal.
    pub fn fmt(&self, prec: usize) -> String {
        let m = if self.modes > 1 {
            format!(", {} modes", self.modes)
        } else {
            String::new()
        };
        format!("[{:.p$}, {:.p$}{m}]", self.min, self.max, p = prec)
    }
}

/// One metric of one point.
#[derive(Clone, Debug)]
pub struct Cell {
    pub metric: String,
    pub ci: Ci,
    /// Range and modes of the values over seeds.
    pub spread: Spread,
    /// Against the baseline point (None for the baseline itself or without one).
    pub delta: Option<PairedDelta>,
    /// Range and modes of the per-seed relative deltas (percent).
    pub delta_spread: Option<Spread>,
    /// The adaptive stop rule's verdict on this cell ([`resolution`]):
    /// Some(false) is "unresolved"; None where the rule was not applied.
    pub resolved: Option<bool>,
    /// Two-sided paired-t p-value of the delta (NaN without one).
    pub p: f64,
    /// `p` adjusted by Holm's method over the cells of this metric at every
    /// point of the sweep that has a delta (NaN without one).
    pub p_holm: f64,
}

/// The family-wise error rate at which a delta is called a change.
pub const ALPHA: f64 = 0.05;

impl Cell {
    /// Whether the delta is a change: Holm-adjusted p < [`ALPHA`], or the
    /// same non-zero difference at every seed.
    pub fn changed(&self) -> bool {
        self.p_holm < ALPHA
    }

    /// Whether the delta is the same at every seed (see [`Ci::deterministic`]).
    pub fn deterministic(&self) -> bool {
        self.delta.is_some_and(|d| d.abs.deterministic())
    }
}

#[derive(Clone, Debug)]
pub struct PointSummary {
    pub labels: Vec<(String, String)>,
    pub workload: String,
    pub vms: usize,
    pub baseline: Option<usize>,
    pub cells: Vec<Cell>,
}

/// The index of `p`'s baseline point, if the sweep names one and `p` is not it.
fn baseline_of(spec: &SweepSpec, pts: &[Point], i: usize) -> Option<usize> {
    if spec.baseline.is_empty() {
        return None;
    }
    let want: Vec<(String, String)> = pts[i]
        .labels
        .iter()
        .map(|(k, v)| {
            let b = spec.baseline.iter().find(|(a, _)| a == k);
            (
                k.clone(),
                b.map(|(_, l)| l.clone()).unwrap_or_else(|| v.clone()),
            )
        })
        .collect();
    let j = pts.iter().position(|p| p.labels == want)?;
    (j != i).then_some(j)
}

pub fn summarise(spec: &SweepSpec, pts: &[Point], rows: &[Row]) -> Vec<PointSummary> {
    // point -> seed -> metrics
    let mut by: Vec<BTreeMap<u64, BTreeMap<&str, f64>>> = vec![BTreeMap::new(); pts.len()];
    for r in rows {
        by[r.point].insert(
            r.seed,
            r.metrics.iter().map(|(k, v)| (k.as_str(), *v)).collect(),
        );
    }
    let cols = super::metric_columns(rows);
    let mut out = Vec::new();
    for (i, p) in pts.iter().enumerate() {
        let first = rows.iter().find(|r| r.point == i);
        let base = baseline_of(spec, pts, i);
        let mut cells = Vec::new();
        for c in &cols {
            let xs: Vec<f64> = by[i]
                .values()
                .filter_map(|m| m.get(c.as_str()).copied())
                .filter(|x| x.is_finite())
                .collect();
            if xs.is_empty() {
                continue;
            }
            let pairs = base.map(|b| {
                by[i]
                    .iter()
                    .filter_map(|(s, m)| {
                        let x = *m.get(c.as_str())?;
                        let y = *by[b].get(s)?.get(c.as_str())?;
                        (x.is_finite() && y.is_finite()).then_some((x, y))
                    })
                    .collect::<Vec<(f64, f64)>>()
            });
            let delta = pairs.as_deref().map(paired_delta);
            let delta_spread = pairs.as_deref().map(|ps| Spread::of_pct(&pct_deltas(ps)));
            let p = delta.map_or(f64::NAN, |d| paired_p(&d.abs));
            cells.push(Cell {
                metric: c.clone(),
                ci: Ci::of(&xs),
                spread: Spread::of_values(&xs),
                delta,
                delta_spread,
                resolved: None,
                p,
                p_holm: f64::NAN,
            });
        }
        out.push(PointSummary {
            labels: p.labels.clone(),
            workload: first.map(|r| r.workload.clone()).unwrap_or_default(),
            vms: first.map(|r| r.vms).unwrap_or(0),
            baseline: base,
            cells,
        });
    }
    adjust(&mut out);
    out
}

/// Holm's adjustment per metric: the family of a metric is its cells at
/// every point with a delta (one column of the tables).
pub fn adjust(out: &mut [PointSummary]) {
    let mut metrics: Vec<String> = Vec::new();
    for p in out.iter() {
        for c in &p.cells {
            if c.delta.is_some() && !metrics.contains(&c.metric) {
                metrics.push(c.metric.clone());
            }
        }
    }
    for m in metrics {
        let mut at: Vec<(usize, usize)> = Vec::new();
        let mut ps = Vec::new();
        for (i, p) in out.iter().enumerate() {
            for (j, c) in p.cells.iter().enumerate() {
                if c.metric == m && c.delta.is_some() {
                    at.push((i, j));
                    ps.push(c.p);
                }
            }
        }
        for ((i, j), q) in at.into_iter().zip(holm(&ps)) {
            out[i].cells[j].p_holm = q;
        }
    }
}

/// `summary.csv`: one row per point and metric.
pub fn to_csv(axes: &[String], s: &[PointSummary]) -> String {
    let mut o = String::new();
    let mut head: Vec<String> = vec!["workload".into(), "vms".into()];
    head.extend(axes.iter().cloned());
    head.extend(
        [
            "metric",
            "n",
            "mean",
            "ci95",
            "min",
            "max",
            "modes",
            "delta",
            "delta_ci95",
            "delta_pct",
            "delta_pct_ci95",
            "delta_pct_min",
            "delta_pct_max",
            "delta_pct_modes",
            "p",
            "p_holm",
            "resolved",
        ]
        .map(String::from),
    );
    let _ = writeln!(o, "{}", head.join(","));
    for p in s {
        for c in &p.cells {
            let mut cells = vec![p.workload.clone(), p.vms.to_string()];
            for a in axes {
                cells.push(
                    p.labels
                        .iter()
                        .find(|(k, _)| k == a)
                        .map(|(_, v)| v.clone())
                        .unwrap_or_default(),
                );
            }
            cells.push(c.metric.clone());
            cells.push(c.ci.n.to_string());
            cells.push(num(Some(c.ci.mean)));
            cells.push(num(Some(c.ci.half)));
            cells.push(num(Some(c.spread.min)));
            cells.push(num(Some(c.spread.max)));
            cells.push(c.spread.modes.to_string());
            let d = c.delta;
            cells.push(num(d.map(|d| d.abs.mean)));
            cells.push(num(d.map(|d| d.abs.half)));
            cells.push(num(d.map(|d| d.pct.mean)));
            cells.push(num(d.map(|d| d.pct.half)));
            let ds = c.delta_spread.filter(|d| d.min.is_finite());
            cells.push(num(ds.map(|d| d.min)));
            cells.push(num(ds.map(|d| d.max)));
            cells.push(ds.map(|d| d.modes.to_string()).unwrap_or_default());
            cells.push(num(Some(c.p)));
            cells.push(num(Some(c.p_holm)));
            cells.push(resolved_word(c.resolved).into());
            let _ = writeln!(o, "{}", cells.join(","));
        }
    }
    o
}

/// `summary.csv`'s `resolved`: "yes", "unresolved", or empty where the
/// adaptive stop rule was not applied (`sweep::adaptive`).
pub fn resolved_word(r: Option<bool>) -> &'static str {
    match r {
        Some(true) => "yes",
        Some(false) => "unresolved",
        None => "",
    }
}

/// Units of the metrics by suffix (README, "Metrics").
pub fn unit(metric: &str) -> &'static str {
    let m = metric.rsplit('.').next().unwrap_or(metric);
    if m == "throughput" || m.ends_with("ops_s") {
        "ops/s"
    } else if m.ends_with("_pct") {
        "% of one CPU"
    } else if m.ends_with("_us") {
        "us"
    } else if m.starts_with("jain") {
        "index, 1 = fair"
    } else {
        "count"
    }
}

/// "mean ± ci [min, max] (Δ +x.x% ± y.y% [min, max])", the range followed
/// by ", N modes" when the values fall into more than one mode
/// ([`MODE_GAP_REL`]), the delta marked `*` when it is a change after
/// Holm's adjustment ([`Cell::changed`]), "**unresolved**" appended where
/// the adaptive stop rule judged the cell unresolved. A delta without
/// spread over the seeds reads "deterministic" instead of an interval and a
/// star (and no range).
pub fn fmt_cell(c: &Cell) -> String {
    let prec = if c.ci.mean.abs() >= 100.0 {
        0
    } else if c.ci.mean.abs() >= 1.0 {
        2
    } else {
        4
    };
    let mut s = c.ci.fmt(prec);
    if c.ci.n >= 2 && !c.ci.deterministic() {
        let _ = write!(s, " {}", c.spread.fmt(prec));
    }
    if let Some(d) = c.delta {
        if d.pct.mean.is_finite() {
            let star = if c.changed() { "*" } else { "" };
            let range = c
                .delta_spread
                .filter(|r| d.pct.n >= 2 && r.min.is_finite())
                .map(|r| format!(" {}", r.fmt(1)))
                .unwrap_or_default();
            if c.deterministic() {
                let _ = write!(s, " (Δ {:+.1}%, deterministic)", d.pct.mean);
            } else if d.pct.half.is_finite() {
                let _ = write!(
                    s,
                    " (Δ {:+.1}% ± {:.1}{star}{range})",
                    d.pct.mean, d.pct.half
                );
            } else {
                let _ = write!(s, " (Δ {:+.1}%{star})", d.pct.mean);
            }
        }
    }
    if c.resolved.is_some() {
        let _ = write!(s, " n={}", c.ci.n);
    }
    if c.resolved == Some(false) {
        s.push_str(" **unresolved**");
    }
    s
}

/// Global metrics shown in the main table, in this order, when present.
pub const KEY_METRICS: [&str; 14] = [
    "throughput",
    "op_latency_us",
    "ple_exits_per_op",
    "yields_per_op",
    "hypercall_yields_per_op",
    "jain_vms_cpu",
    "spin_pct",
    "lock_wait_p99_us",
    "ipi_wait_p99_us",
    "ple_exits",
    "yields",
    "wakeup_p99_us",
    "bystander_lost_pct",
    "steal_pct",
];

fn table(o: &mut String, title: &str, s: &[PointSummary], pick: &dyn Fn(&str) -> Option<String>) {
    // Columns: (group key, metric suffix) present anywhere.
    let mut cols: Vec<String> = Vec::new();
    for p in s {
        for c in &p.cells {
            if pick(&c.metric).is_some() && !cols.contains(&c.metric) {
                cols.push(c.metric.clone());
            }
        }
    }
    if cols.is_empty() {
        return;
    }
    let _ = writeln!(o, "\n## {title}\n");
    let mut head = vec!["point".to_string()];
    head.extend(
        cols.iter()
            .map(|c| format!("{} ({})", pick(c).unwrap_or_default(), unit(c))),
    );
    let _ = writeln!(o, "| {} |", head.join(" | "));
    let _ = writeln!(o, "|{}", "---|".repeat(head.len()));
    for p in s {
        let label = point_label(p);
        let cells: Vec<String> = cols
            .iter()
            .map(|c| {
                p.cells
                    .iter()
                    .find(|x| &x.metric == c)
                    .map(fmt_cell)
                    .unwrap_or_else(|| "-".into())
            })
            .collect();
        let _ = writeln!(o, "| {label} | {} |", cells.join(" | "));
    }
}

pub fn point_label(p: &PointSummary) -> String {
    if p.labels.is_empty() {
        return "base".into();
    }
    p.labels
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

pub fn to_markdown(spec: &SweepSpec, s: &[PointSummary]) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "# Sweep {}\n", spec.file);
    let _ = writeln!(
        o,
        "Seeds {:?}; each cell is the mean over seeds ± the half-width of its 95% confidence \
         interval (Student t, n - 1 degrees of freedom), then [min, max] over the seeds and, when \
         the values fall into more than one mode, how many (a new mode where sorted neighbours lie \
         more than {:.0}% of the median apart; for Δ, {:.0} percentage points).",
        spec.seeds,
        100.0 * MODE_GAP_REL,
        100.0 * MODE_GAP_REL
    );
    if let Some(a) = &spec.adaptive {
        let _ = writeln!(
            o,
            "Adaptive seeds: a point's {} got more seeds (continuing after {}, {} per round, its \
             baseline too) until the 95% CI half-width of its Δ (in percent; without a baseline, of \
             the value relative to its mean) was at most {} point, up to {} seeds; **unresolved** \
             marks a cell still wider at the cap.",
            a.metric,
            spec.seeds.iter().max().copied().unwrap_or(0),
            spec.seeds.len(),
            super::spec::RESOLVE_POINTS,
            a.max_seeds
        );
    }
    if !spec.baseline.is_empty() {
        let b: Vec<String> = spec
            .baseline
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let _ = writeln!(
            o,
            "Δ: paired (same seed) relative difference against the point with {} and the other \
             axes equal, ± its 95% CI; `*` marks a change: paired t test, p adjusted by Holm's \
             method over the column (every point of that metric), p_holm < {ALPHA} (summary.csv \
             has p and p_holm). Holm, not Benjamini-Hochberg: the cells share their baseline runs, \
             so the tests are dependent, and Holm bounds the chance of any false claim in a column \
             whatever the dependence. \"deterministic\": the same difference at every seed.",
            b.join(" ")
        );
    }
    table(&mut o, "Run metrics", s, &|m| {
        KEY_METRICS.contains(&m).then(|| m.to_string())
    });
    // Per VM: one table per VM name.
    let mut vm_names: Vec<String> = Vec::new();
    for p in s {
        for c in &p.cells {
            if let Some(r) = c.metric.strip_prefix("vm.") {
                let n = r.rsplit_once('.').map(|x| x.0).unwrap_or(r).to_string();
                if !vm_names.contains(&n) {
                    vm_names.push(n);
                }
            }
        }
    }
    for n in &vm_names {
        let pre = format!("vm.{n}.");
        table(&mut o, &format!("VM {n}"), s, &|m| {
            m.strip_prefix(&pre).map(str::to_string)
        });
    }
    table(&mut o, "Cgroups (top level, not VMs)", s, &|m| {
        m.strip_prefix("cg.").map(str::to_string)
    });
    table(&mut o, "Host tasks (not vCPUs)", s, &|m| {
        m.strip_prefix("task.").map(str::to_string)
    });
    o
}

#[cfg(test)]
mod distribution_tests {
    use super::*;

    #[test]
    fn the_mode_count_splits_at_ten_percent_of_the_median() {
        // 100, 104, 170: the neighbours 104 -> 170 lie 66 apart, more than
        // 10% of the median (10.4): two modes; 100 -> 104 stays one.
        let s = Spread::of_values(&[170.0, 100.0, 104.0]);
        assert_eq!((s.min, s.max, s.modes), (100.0, 170.0, 2));
        assert_eq!(Spread::of_values(&[100.0, 104.0, 109.0]).modes, 1);
        // The PV-off deltas (%): -20.8 and -15.5 within 10 points,
        // +40.6 beyond: two modes.
        let d = Spread::of_pct(&[-15.5, -20.8, 40.6]);
        assert_eq!(d.modes, 2);
        assert_eq!(d.fmt(1), "[-20.8, 40.6, 2 modes]");
        assert_eq!(Spread::of_pct(&[1.0, 2.0]).fmt(1), "[1.0, 2.0]");
    }

    fn cell(xs: &[f64], resolved: Option<bool>) -> Cell {
        Cell {
            metric: "throughput".into(),
            ci: Ci::of(xs),
            spread: Spread::of_values(xs),
            delta: None,
            delta_spread: None,
            resolved,
            p: f64::NAN,
            p_holm: f64::NAN,
        }
    }

    #[test]
    fn a_cell_shows_its_range_modes_and_an_unresolved_mark() {
        let c = cell(&[100.0, 104.0, 170.0], Some(false));
        let s = fmt_cell(&c);
        assert!(s.starts_with("125 ± "), "{s}");
        assert!(s.contains("[100, 170, 2 modes]"), "{s}");
        assert!(s.ends_with(" n=3 **unresolved**"), "{s}");
        let s = fmt_cell(&cell(&[100.0, 101.0], Some(true)));
        assert!(s.ends_with("n=2") && !s.contains("unresolved"), "{s}");
        // Without the rule: no count, no mark; one seed: no range.
        assert!(!fmt_cell(&cell(&[100.0, 101.0], None)).contains("n="));
        assert_eq!(fmt_cell(&cell(&[100.0], None)), "100");
        assert_eq!(resolved_word(Some(false)), "unresolved");
        assert_eq!(resolved_word(None), "");
    }
}
