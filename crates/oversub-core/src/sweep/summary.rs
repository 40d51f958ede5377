//! The summary of a sweep: per point and metric, the mean over seeds with its
//! 95% confidence interval, and the paired delta (same seed) against the
//! point's baseline with its interval.

use super::spec::SweepSpec;
use super::{num, Point, Row};
use crate::stats::{holm, paired_delta, paired_p, Ci, PairedDelta};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// One metric of one point.
#[derive(Clone, Debug)]
pub struct Cell {
    pub metric: String,
    pub ci: Ci,
    /// Against the baseline point (None for the baseline itself or without one).
    pub delta: Option<PairedDelta>,
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
            let delta = base.map(|b| {
                let pairs: Vec<(f64, f64)> = by[i]
                    .iter()
                    .filter_map(|(s, m)| {
                        let x = *m.get(c.as_str())?;
                        let y = *by[b].get(s)?.get(c.as_str())?;
                        (x.is_finite() && y.is_finite()).then_some((x, y))
                    })
                    .collect();
                paired_delta(&pairs)
            });
            let p = delta.map_or(f64::NAN, |d| paired_p(&d.abs));
            cells.push(Cell {
                metric: c.clone(),
                ci: Ci::of(&xs),
                delta,
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
            "delta",
            "delta_ci95",
            "delta_pct",
            "delta_pct_ci95",
            "p",
            "p_holm",
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
            let d = c.delta;
            cells.push(num(d.map(|d| d.abs.mean)));
            cells.push(num(d.map(|d| d.abs.half)));
            cells.push(num(d.map(|d| d.pct.mean)));
            cells.push(num(d.map(|d| d.pct.half)));
            cells.push(num(Some(c.p)));
            cells.push(num(Some(c.p_holm)));
            let _ = writeln!(o, "{}", cells.join(","));
        }
    }
    o
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

/// "mean ± ci (Δ +x.x% ± y.y%)", the delta marked `*` when it is a change
/// after Holm's adjustment ([`Cell::changed`]); a delta without spread over
/// the seeds reads "deterministic" instead of an interval and a star.
pub fn fmt_cell(c: &Cell) -> String {
    let prec = if c.ci.mean.abs() >= 100.0 {
        0
    } else if c.ci.mean.abs() >= 1.0 {
        2
    } else {
        4
    };
    let mut s = c.ci.fmt(prec);
    if let Some(d) = c.delta {
        if d.pct.mean.is_finite() {
            let star = if c.changed() { "*" } else { "" };
            if c.deterministic() {
                let _ = write!(s, " (Δ {:+.1}%, deterministic)", d.pct.mean);
            } else if d.pct.half.is_finite() {
                let _ = write!(s, " (Δ {:+.1}% ± {:.1}{star})", d.pct.mean, d.pct.half);
            } else {
                let _ = write!(s, " (Δ {:+.1}%{star})", d.pct.mean);
            }
        }
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
         interval (Student t, n - 1 degrees of freedom).",
        spec.seeds
    );
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
