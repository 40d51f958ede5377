//! The flat host beside the 6.12.117 host: the `seeds-flat` and
//! `topologies-flat` sections (the `flat` preset, sched/flat) set against
//! `seeds` and `topologies` in two tables, for the terminal, summary.md and
//! report.html. Nothing is computed here that the sections did not measure:
//! each gain is over the same host's upstream (the sections' baselines), and
//! the hosts' upstream throughputs are compared paired by seed.

use super::{cell, pct, Published, Section, COMPARE};
use oversub::stats::paired_delta;
use oversub::sweep::spec::FILE_AXIS;
use std::fmt::Write as _;

/// Per-seed values of `metric` at the point with these labels (and
/// workload/VM count), keyed by seed.
fn per_seed(
    s: &Section,
    workload: &str,
    vms: usize,
    labels: &[(&str, &str)],
    metric: &str,
) -> Vec<(u64, f64)> {
    s.rows
        .iter()
        .filter(|r| {
            r.workload == workload
                && r.vms == vms
                && labels
                    .iter()
                    .all(|(k, v)| r.labels.iter().any(|(a, b)| a == k && b == v))
        })
        .filter_map(|r| {
            r.metrics
                .iter()
                .find(|(k, _)| k == metric)
                .map(|(_, v)| (r.seed, *v))
        })
        .collect()
}

/// The seeds' evaluation on both hosts: per workload and VM count, one row
/// per host with its upstream throughput and each policy's gain over that
/// host's upstream; the flat row also gives flat upstream over 6.12.117
/// upstream, paired by seed. Empty without both sections.
pub fn seeds_table(sections: &[Section], p: &Published) -> String {
    let (Some(h), Some(f)) = (
        sections.iter().find(|s| s.name == "seeds"),
        sections.iter().find(|s| s.name == "seeds-flat"),
    ) else {
        return String::new();
    };
    let metric = p.v1.metric.as_str();
    let base = p.v1.baseline.as_str();
    let mut o = String::new();
    let _ = writeln!(
        o,
        "Flat host (sched/flat) beside the 6.12.117 host: throughput gain of each policy over the same host's upstream, % (mean ± 95% CI over seeds {:?}, paired; PV on); flat/6.12 = flat upstream over 6.12.117 upstream, paired by seed",
        f.spec.seeds
    );
    let _ = write!(
        o,
        "{:<8} {:>3} {:<8} {:>12} {:>12} ",
        "workload", "vms", "host", "upstream", "flat/6.12"
    );
    for c in COMPARE {
        let _ = write!(o, "{:>14} ", c);
    }
    let _ = writeln!(o);
    let _ = write!(
        o,
        "{:<8} {:>3} {:<8} {:>12} {:>12} ",
        "", "", "", "ops/s", "%"
    );
    for _ in COMPARE {
        let _ = write!(o, "{:>14} ", "%");
    }
    let _ = writeln!(o);
    for r in &p.v1.row {
        for &vms in &r.vms {
            let w = r.workload.as_str();
            for (host, s) in [("6.12.117", h), ("flat", f)] {
                let at = |pol: &str| {
                    s.find(w, vms, &[("policy", pol), ("pv", "on")])
                        .and_then(|pt| cell(pt, metric))
                };
                let up = at(base).map_or("-".into(), |c| format!("{:.0}", c.ci.mean));
                let vs = if host == "flat" {
                    let lab = [("policy", base), ("pv", "on")];
                    let hv = per_seed(h, w, vms, &lab, metric);
                    let pairs: Vec<(f64, f64)> = per_seed(f, w, vms, &lab, metric)
                        .iter()
                        .filter_map(|(seed, x)| {
                            hv.iter().find(|(s2, _)| s2 == seed).map(|(_, b)| (*x, *b))
                        })
                        .collect();
                    if pairs.is_empty() {
                        "-".into()
                    } else {
                        let d = paired_delta(&pairs).pct;
                        if d.half.is_finite() {
                            format!("{:+.1}±{:.1}", d.mean, d.half)
                        } else {
                            format!("{:+.1}", d.mean)
                        }
                    }
                } else {
                    String::new()
                };
                let _ = write!(o, "{w:<8} {vms:>3} {host:<8} {up:>12} {vs:>12} ");
                for c in COMPARE {
                    let _ = write!(o, "{:>14} ", pct(at(c)));
                }
                let _ = writeln!(o);
            }
        }
    }
    trim_lines(&o)
}

/// The reviewers' topologies on both hosts: per scenario and policy, the
/// CPU shares of the yielder A, its target B and the bystander C (where
/// there is one), mean over seeds, 6.12.117 -> flat. Empty without both
/// sections.
pub fn topologies_table(sections: &[Section]) -> String {
    let (Some(h), Some(f)) = (
        sections.iter().find(|s| s.name == "topologies"),
        sections.iter().find(|s| s.name == "topologies-flat"),
    ) else {
        return String::new();
    };
    let mut o = String::new();
    let _ = writeln!(
        o,
        "The reviewers' topologies, CPU share % (mean over seeds {:?}), 6.12.117 host -> flat host",
        f.spec.seeds
    );
    let _ = writeln!(
        o,
        "{:<20} {:<10} {:>14} {:>14} {:>14}",
        "scenario", "policy", "A (yielder)", "B (target)", "C (bystander)"
    );
    let Some(files) = f.spec.axes.iter().find(|a| a.name == FILE_AXIS) else {
        return String::new();
    };
    let Some(pols) = f.spec.axes.iter().find(|a| a.name == "policy") else {
        return String::new();
    };
    for file in &files.values {
        for pol in &pols.values {
            let lab = [
                (FILE_AXIS, file.label.as_str()),
                ("policy", pol.label.as_str()),
            ];
            let share = |s: &Section, t: &str| {
                s.summary
                    .iter()
                    .find(|pt| {
                        lab.iter()
                            .all(|(k, v)| pt.labels.iter().any(|(a, b)| a == k && b == v))
                    })
                    .and_then(|pt| cell(pt, &format!("task.{t}.cpu_pct")))
                    .map(|c| c.ci.mean)
            };
            let _ = write!(o, "{:<20} {:<10} ", file.label, pol.label);
            for t in ["A", "B", "C"] {
                let v = match (share(h, t), share(f, t)) {
                    (Some(a), Some(b)) => format!("{a:.1} -> {b:.1}"),
                    _ => "-".into(),
                };
                let _ = write!(o, "{v:>14} ");
            }
            let _ = writeln!(o);
        }
    }
    trim_lines(&o)
}

/// The table without the trailing blanks of its padded last column.
fn trim_lines(t: &str) -> String {
    t.lines().map(|l| format!("{}\n", l.trim_end())).collect()
}
