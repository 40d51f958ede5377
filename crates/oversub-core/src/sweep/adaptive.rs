//! Adaptive seeds: a sweep point gets more seeds until its judged metric is
//! resolved (by default the 95% CI half-width at most [`RESOLVE_POINTS`]
//! points of percent: [`half_points`]; a caller may give its own rule per
//! point, [`Rule`]) or it has [`Adaptive::max_seeds`], and is marked
//! unresolved otherwise (`summary::Cell::resolved`).
//!
//! Deterministic: the seeds are fixed by the rule, not drawn. Every point
//! runs a prefix of one sequence, the sweep's seeds followed by
//! `max(seeds) + 1, + 2, ...` ([`seed_sequence`]); each round adds the next
//! `seeds.len()` of it (at most up to the cap) to every unresolved point and,
//! so that its paired delta keeps every seed, to that point's baseline. The
//! decision depends only on the (deterministic) runs, so the same command
//! gives the same seeds and byte-identical outputs.

use super::spec::SweepSpec;
use super::summary::{summarise, Cell, PointSummary};
use super::{Point, Row};

pub use super::spec::{Adaptive, MAX_SEEDS_LIMIT, RESOLVE_POINTS};

/// The first `n` seeds of the sequence: `seeds`, then `max(seeds) + 1`,
/// `+ 2`, ... (an error past [`crate::scenario::MAX_SEED`]).
pub fn seed_sequence(seeds: &[u64], n: usize) -> Result<Vec<u64>, String> {
    let mut out: Vec<u64> = seeds.iter().copied().take(n).collect();
    let mut next = seeds.iter().copied().max().unwrap_or(0);
    while out.len() < n {
        next = next
            .checked_add(1)
            .filter(|s| *s <= crate::scenario::MAX_SEED)
            .ok_or_else(|| {
                format!(
                    "seeds: the adaptive mode continues after the largest seed, which leaves no room below {}",
                    crate::scenario::MAX_SEED
                )
            })?;
        out.push(next);
    }
    Ok(out)
}

/// The half-width the stop rule judges, in points of percent: of the
/// relative paired delta (percent of the baseline) where the cell has one;
/// else of the value itself for a `_pct` metric; else relative to the mean
/// (percent of |mean|). NaN with fewer than two seeds.
pub fn half_points(c: &Cell) -> f64 {
    match c.delta {
        Some(d) => d.pct.half,
        None if c.metric.ends_with("_pct") => c.ci.half,
        None if c.ci.half == 0.0 => 0.0,
        None => 100.0 * c.ci.half / c.ci.mean.abs(),
    }
}

/// Whether a cell is resolved: [`half_points`] at most [`RESOLVE_POINTS`].
pub fn resolved(c: &Cell) -> bool {
    let h = half_points(c);
    h.is_finite() && h <= RESOLVE_POINTS
}

/// A stop rule: its verdict on the judged metric's cell of a point
/// (`Some(true)`: resolved), or None where the point is not judged. The
/// default rule is [`resolved`] ([`RESOLVE_POINTS`]) at the points a
/// selection judges ([`mark`], [`extend`]); a caller with a limit per point
/// (`oversub reproduce`'s history: the published effect of the point's row)
/// gives its own ([`mark_by`], [`extend_by`]).
pub type Rule<'a> = dyn Fn(&PointSummary, &Cell) -> Option<bool> + 'a;

/// Marks the `metric` cell of every point `judged` selects resolved or not
/// (`Cell::resolved`, by [`resolved`]); other cells keep None.
pub fn mark(s: &mut [PointSummary], metric: &str, judged: &dyn Fn(&PointSummary) -> bool) {
    mark_by(s, metric, &|p, c| judged(p).then(|| resolved(c)));
}

/// Marks the `metric` cell of every point with `rule`'s verdict where it
/// gives one; other cells keep what they had.
pub fn mark_by(s: &mut [PointSummary], metric: &str, rule: &Rule<'_>) {
    for p in s.iter_mut() {
        let verdicts: Vec<Option<bool>> = p
            .cells
            .iter()
            .map(|c| (c.metric == metric).then(|| rule(p, c)).flatten())
            .collect();
        for (c, v) in p.cells.iter_mut().zip(verdicts) {
            if v.is_some() {
                c.resolved = v;
            }
        }
    }
}

/// The seeds each point should have after the next round: an unresolved
/// judged point with fewer than `max` seeds gets `step` more (at most up to
/// `max`), its baseline at least as many. Equal to `have` when done.
pub fn next_counts(
    s: &[PointSummary],
    metric: &str,
    have: &[usize],
    step: usize,
    max: usize,
) -> Vec<usize> {
    let mut want = have.to_vec();
    for (i, p) in s.iter().enumerate() {
        let open = p
            .cells
            .iter()
            .any(|c| c.metric == metric && c.resolved == Some(false));
        if open && have[i] < max {
            want[i] = want[i].max((have[i] + step.max(1)).min(max));
            if let Some(b) = p.baseline {
                want[b] = want[b].max(want[i]);
            }
        }
    }
    want
}

/// Runs (point, seed) pairs of a sweep: one row each, in their order.
pub type RunPairs<'a> = dyn FnMut(&[(usize, u64)]) -> Result<Vec<Row>, String> + 'a;

/// Adds seeds round by round to the points `judged` selects until each is
/// resolved or at the cap (`spec.adaptive`; without it, no round), running
/// them with `run` (e.g. [`super::run_runs`]). `rows` are the runs of the
/// sweep's own seeds. Returns every row, in expansion order (points, then
/// seeds in sequence order), and the summary with the judged cells marked.
pub fn extend(
    spec: &SweepSpec,
    pts: &[Point],
    rows: Vec<Row>,
    judged: &dyn Fn(&PointSummary) -> bool,
    run: &mut RunPairs<'_>,
) -> Result<(Vec<Row>, Vec<PointSummary>), String> {
    extend_by(spec, pts, rows, &|p, c| judged(p).then(|| resolved(c)), run)
}

/// [`extend`] with the stop rule given ([`Rule`]): a point is open while
/// `rule` calls its cell unresolved.
pub fn extend_by(
    spec: &SweepSpec,
    pts: &[Point],
    mut rows: Vec<Row>,
    rule: &Rule<'_>,
    run: &mut RunPairs<'_>,
) -> Result<(Vec<Row>, Vec<PointSummary>), String> {
    let Some(a) = &spec.adaptive else {
        let s = summarise(spec, pts, &rows);
        return Ok((rows, s));
    };
    loop {
        let mut s = summarise(spec, pts, &rows);
        mark_by(&mut s, &a.metric, rule);
        let mut have = vec![0; pts.len()];
        for r in &rows {
            have[r.point] += 1;
        }
        let want = next_counts(&s, &a.metric, &have, spec.seeds.len(), a.max_seeds);
        if want == have {
            return Ok((rows, s));
        }
        let seq = seed_sequence(&spec.seeds, want.iter().copied().max().unwrap_or(0))?;
        let runs: Vec<(usize, u64)> = (0..pts.len())
            .flat_map(|i| seq[have[i]..want[i]].iter().map(move |&seed| (i, seed)))
            .collect();
        rows.extend(run(&runs)?);
        let pos = |seed: u64| seq.iter().position(|&x| x == seed).unwrap_or(usize::MAX);
        rows.sort_by_key(|r| (r.point, pos(r.seed)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Ci;
    use crate::sweep::summary::Spread;

    fn cell(metric: &str, xs: &[f64], deltas_pct: Option<&[f64]>) -> Cell {
        let delta = deltas_pct.map(|d| crate::stats::PairedDelta {
            abs: Ci::of(d),
            pct: Ci::of(d),
        });
        Cell {
            metric: metric.into(),
            ci: Ci::of(xs),
            spread: Spread::of_values(xs),
            delta,
            delta_spread: deltas_pct.map(Spread::of_pct),
            resolved: None,
            p: f64::NAN,
            p_holm: f64::NAN,
        }
    }

    #[test]
    fn the_stop_rule_judges_the_delta_in_points() {
        // Deltas 1.0, 1.2, 0.8: half = 4.303 * 0.2 / sqrt 3 = 0.497 points.
        let c = cell("throughput", &[100.0, 101.0, 99.0], Some(&[1.0, 1.2, 0.8]));
        assert!((half_points(&c) - 4.303 * 0.2 / 3f64.sqrt()).abs() < 1e-9);
        assert!(resolved(&c));
        // The bimodal PV-off outcome of the issue: far from resolved.
        let c = cell("throughput", &[1.0, 1.0, 1.0], Some(&[-15.5, -20.8, 40.6]));
        assert!(half_points(&c) > 50.0);
        assert!(!resolved(&c));
        // One seed: no interval, so not resolved; the same delta at every
        // seed: resolved (half 0).
        assert!(!resolved(&cell("throughput", &[1.0], Some(&[3.0]))));
        assert!(resolved(&cell(
            "throughput",
            &[1.0, 2.0],
            Some(&[3.0, 3.0])
        )));
    }

    #[test]
    fn without_a_delta_the_rule_is_relative_or_in_points_of_percent() {
        // 1000 +- 2% of ops/s: relative half 100 * half / mean.
        let xs = [980.0, 1000.0, 1020.0];
        let c = cell("throughput", &xs, None);
        let half = 4.303 * 20.0 / 3f64.sqrt();
        assert!((half_points(&c) - 100.0 * half / 1000.0).abs() < 1e-9);
        assert!(!resolved(&c));
        // A _pct metric is judged in its own points: 50 +- 0.1.
        let c = cell("spin_pct", &[49.9, 50.0, 50.1], None);
        assert!((half_points(&c) - 4.303 * 0.1 / 3f64.sqrt()).abs() < 1e-9);
        assert!(resolved(&c));
        // A constant zero is resolved, not NaN.
        assert!(resolved(&cell("ple_exits", &[0.0, 0.0], None)));
    }

    fn point(baseline: Option<usize>, c: Cell) -> PointSummary {
        PointSummary {
            labels: Vec::new(),
            workload: "w".into(),
            vms: 1,
            baseline,
            cells: vec![c],
        }
    }

    #[test]
    fn marking_touches_only_the_judged_metric_at_selected_points() {
        let mut s = vec![
            point(None, cell("throughput", &[1.0, 1.0], None)),
            point(
                Some(0),
                cell("throughput", &[1.0, 2.0], Some(&[-15.5, 40.6])),
            ),
            point(Some(0), cell("spin_pct", &[1.0, 2.0], Some(&[-15.5, 40.6]))),
        ];
        mark(&mut s, "throughput", &|p| p.baseline.is_some());
        assert_eq!(s[0].cells[0].resolved, None);
        assert_eq!(s[1].cells[0].resolved, Some(false));
        assert_eq!(s[2].cells[0].resolved, None);
        mark(&mut s, "throughput", &|_| true);
        assert_eq!(s[0].cells[0].resolved, Some(true));
    }

    #[test]
    fn rounds_add_a_step_to_open_points_and_their_baseline_up_to_the_cap() {
        let mut s = vec![
            point(None, cell("throughput", &[1.0, 1.0], None)),
            point(
                Some(0),
                cell("throughput", &[1.0, 2.0], Some(&[-15.5, 40.6])),
            ),
            point(Some(0), cell("throughput", &[1.0, 2.0], Some(&[1.0, 1.0]))),
        ];
        mark(&mut s, "throughput", &|_| true);
        // Point 1 is open: +3 seeds, and its baseline (0) follows; the
        // resolved point 2 stays.
        assert_eq!(
            next_counts(&s, "throughput", &[3, 3, 3], 3, 10),
            vec![6, 6, 3]
        );
        // The cap bounds the step; at the cap nothing is added (done).
        assert_eq!(
            next_counts(&s, "throughput", &[8, 8, 3], 3, 10),
            vec![10, 10, 3]
        );
        assert_eq!(
            next_counts(&s, "throughput", &[10, 10, 3], 3, 10),
            vec![10, 10, 3]
        );
    }

    #[test]
    fn the_seed_sequence_continues_after_the_largest_seed() {
        assert_eq!(
            seed_sequence(&[3, 1, 2], 6).unwrap(),
            vec![3, 1, 2, 4, 5, 6]
        );
        assert_eq!(seed_sequence(&[5, 9], 1).unwrap(), vec![5]);
        let top = crate::scenario::MAX_SEED;
        assert!(seed_sequence(&[top], 2).is_err());
    }

    #[test]
    fn the_cap_is_bounded() {
        let a = |m| Adaptive {
            max_seeds: m,
            metric: "throughput".into(),
        };
        assert!(a(5).check(5, 10).is_ok());
        assert!(a(4).check(5, 10).unwrap_err().contains("allowed 5 ..= 100"));
        assert!(a(1).check(1, 10).unwrap_err().contains("allowed 2 ..= 100"));
        assert!(a(101).check(5, 10).is_err());
        assert!(a(100)
            .check(5, 10_000)
            .unwrap_err()
            .contains("runs: allowed at most"));
    }
}
