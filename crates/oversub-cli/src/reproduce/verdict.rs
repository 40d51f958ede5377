//! The reproduction's answer in words, computed from its summaries: which
//! policy changes which workload's throughput and by how much, how sure
//! (paired t tests, Holm-adjusted per metric column: `summary::ALPHA`),
//! where the simulation and the publication disagree, and how much of each
//! other section is deterministic. Nothing here is written by hand: every
//! number and every name comes from the sections and `data/published.toml`.

use super::{comparison_rows, Published, Section, COMPARE};
use oversub::sweep::summary::{Cell, ALPHA};

/// "+3.1% ± 1.2", "+3.1% (deterministic)" or "+3.1%" (one seed).
pub fn gain(c: &Cell) -> String {
    match c.delta {
        Some(d) if c.deterministic() => format!("{:+.1}% (deterministic)", d.pct.mean),
        Some(d) if d.pct.half.is_finite() => format!("{:+.1}% ± {:.1}", d.pct.mean, d.pct.half),
        Some(d) => format!("{:+.1}%", d.pct.mean),
        None => "-".into(),
    }
}

fn list(items: &[String]) -> String {
    match items.len() {
        0 => String::new(),
        1 => items[0].clone(),
        n => format!("{} and {}", items[..n - 1].join(", "), items[n - 1]),
    }
}

/// The verdict's sentences, most important first.
pub fn verdict(sections: &[Section], p: &Published) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(s) = sections.iter().find(|s| s.name == "seeds") {
        seeds(&mut out, s, p);
    }
    for s in sections.iter().filter(|s| s.name != "seeds") {
        other(&mut out, s);
    }
    out
}

fn seeds(out: &mut Vec<String>, s: &Section, p: &Published) {
    let rows = comparison_rows(s, p);
    let metric = &p.v1.metric;
    let family = s
        .summary
        .iter()
        .flat_map(|pt| &pt.cells)
        .filter(|c| &c.metric == metric && c.delta.is_some())
        .count();
    // Policies with changes one sentence each; the others together.
    let mut quiet: Vec<&str> = Vec::new();
    let mut quiet_max: Option<(f64, String)> = None;
    let mut ncells = 0;
    for (k, pol) in COMPARE.iter().enumerate() {
        let cells: Vec<(&str, usize, &Cell)> = rows
            .iter()
            .filter_map(|r| r.cells[k].map(|c| (r.workload, r.vms, c)))
            .collect();
        if cells.is_empty() {
            continue;
        }
        ncells = ncells.max(cells.len());
        let changed: Vec<String> = cells
            .iter()
            .filter(|(_, _, c)| c.changed())
            .map(|(w, v, c)| format!("{w} {v} VMs {}", gain(c)))
            .collect();
        if changed.is_empty() {
            quiet.push(pol);
            for (w, v, c) in &cells {
                let Some(d) = c.delta.filter(|d| d.pct.mean.is_finite()) else {
                    continue;
                };
                if quiet_max
                    .as_ref()
                    .is_none_or(|(m, _)| d.pct.mean.abs() > *m)
                {
                    quiet_max = Some((
                        d.pct.mean.abs(),
                        format!("{pol} {} at {w} {v} VMs", gain(c)),
                    ));
                }
            }
        } else {
            out.push(format!(
                "{pol} changes {metric} in {} of {} workload x VM cells: {}.",
                changed.len(),
                cells.len(),
                list(&changed)
            ));
        }
    }
    if !quiet.is_empty() {
        let who = if quiet.len() == COMPARE.len() {
            "No policy".to_string()
        } else {
            list(&quiet.iter().map(|q| q.to_string()).collect::<Vec<_>>())
        };
        out.push(format!(
            "{who} changes {metric} in any of the {ncells} workload x VM cells{}.",
            quiet_max
                .map(|(_, t)| format!(" (largest difference: {t}, within noise)"))
                .unwrap_or_default()
        ));
    }
    // The simulation against the publication (seed-v1 is what was published).
    let k = COMPARE.iter().position(|c| *c == p.v1.policy);
    let mut pubs: Vec<f64> = Vec::new();
    let mut sims: Vec<f64> = Vec::new();
    let mut disagree: Vec<(f64, String)> = Vec::new();
    for r in &rows {
        let Some(c) = k.and_then(|k| r.cells[k]) else {
            continue;
        };
        let Some(d) = c.delta else {
            continue;
        };
        if !r.published.is_finite() || !d.pct.mean.is_finite() {
            continue;
        }
        pubs.push(r.published);
        sims.push(d.pct.mean);
        let half = if d.pct.half.is_finite() {
            d.pct.half
        } else {
            0.0
        };
        let gap = d.pct.mean - r.published;
        if gap.abs() > half {
            disagree.push((gap, format!("{} {} VMs", r.workload, r.vms)));
        }
    }
    if !pubs.is_empty() {
        let range = |xs: &[f64]| {
            let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            format!("{lo:+.1} … {hi:+.1}%")
        };
        let worst = disagree
            .iter()
            .max_by(|a, b| a.0.abs().total_cmp(&b.0.abs()))
            .map(|(g, w)| format!(" (largest gap {g:+.1} pp, {w})"))
            .unwrap_or_default();
        let verb = if disagree.is_empty() {
            "agree"
        } else {
            "disagree"
        };
        out.insert(0, format!(
            "Simulation and publication {verb}: published {} gains are {}, simulated ones {}; the published figure lies outside the simulated 95% interval in {} of {} cells{worst}.",
            p.v1.policy,
            range(&pubs),
            range(&sims),
            disagree.len(),
            pubs.len(),
        ));
    }
    let seeds = match &s.spec.adaptive {
        Some(a) => format!("{} to {} seeds, adaptive", s.spec.seeds.len(), a.max_seeds),
        None => format!("{} seeds", s.spec.seeds.len()),
    };
    out.push(format!(
        "How sure: gains are paired by seed ({seeds}) against upstream; a change is a paired t test with p < {ALPHA} after Holm's adjustment over the {family} cells of the {metric} column. Holm, not Benjamini-Hochberg: the cells share their baseline runs (dependent tests), and Holm holds whatever the dependence."
    ));
    let (open, n, most) = super::unresolved_count(s, p);
    if n > 0 {
        out.push(format!(
            "Resolution: {open} of {n} table cells (upstream included) are unresolved, their 95% CI half-width above {} point with up to {most} seeds: `?` in the table; their sign is not settled.",
            oversub::sweep::adaptive::RESOLVE_POINTS
        ));
    }
}

fn other(out: &mut Vec<String>, s: &Section) {
    let deltas: Vec<&Cell> = s
        .summary
        .iter()
        .flat_map(|p| &p.cells)
        .filter(|c| c.delta.is_some_and(|d| d.pct.mean.is_finite()))
        .collect();
    if deltas.is_empty() {
        return;
    }
    let changed = deltas
        .iter()
        .filter(|c| c.changed() && !c.deterministic())
        .count();
    let det: Vec<&&Cell> = deltas.iter().filter(|c| c.deterministic()).collect();
    let det_nonzero = det
        .iter()
        .filter(|c| c.delta.is_some_and(|d| d.abs.mean != 0.0))
        .count();
    out.push(format!(
        "Section {}: {changed} of {} paired deltas (all metrics) are changes beyond the seeds' noise (Holm per metric); {} are deterministic (the same at every seed), {det_nonzero} of them non-zero.",
        s.name,
        deltas.len(),
        det.len(),
    ));
}
