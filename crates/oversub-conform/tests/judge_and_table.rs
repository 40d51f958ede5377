//! The judge and the printed table through the crate's public API: verdicts
//! of whole comparisons (tasks and cgroups, documented disagreements), the
//! real runs against a simulated distribution (inside, outside, not judged,
//! modes) and the exact text `oversub conform` prints for them.

use oversub::scenario::Scenario;
use oversub_conform::judge::{
    apply_known, compare, known_of, lat_row, row_fails, share_floor, share_row, RunFigures,
    ScenarioResult,
};
use oversub_conform::runner::RowCounts;
use oversub_conform::simulated::host_only_check;
use oversub_conform::table::{result_text, table, tolerance_line};

fn fig(v: &[(&str, &str, u64)]) -> RunFigures {
    v.iter()
        .map(|(n, c, x)| (n.to_string(), c.to_string(), *x, None, None))
        .collect()
}

fn two_cgroups() -> Scenario {
    Scenario::parse(
        "t.toml",
        "[[cgroup]]\npath=\"/a\"\nweight=100\n[[cgroup]]\npath=\"/b\"\nweight=300\n\
         [[task]]\nname=\"x\"\nkind=\"hog\"\ncgroup=\"/a\"\n[[task]]\nname=\"y\"\nkind=\"hog\"\ncgroup=\"/b\"\n",
    )
    .unwrap()
}

#[test]
fn compare_cgroups_and_tasks() {
    let sc = two_cgroups();
    let real = vec![fig(&[("x", "/a", 250), ("y", "/b", 750)])];
    let sim = vec![fig(&[("x", "/a", 251), ("y", "/b", 749)])];
    let rows = compare(
        &sc,
        &real,
        &sim,
        share_floor(250, 2_000_000_000),
        2_000_000_000,
    );
    assert!((share_floor(250, 1_000_000_000) - 0.004).abs() < 1e-12);
    assert_eq!(rows.len(), 4);
    assert!(rows.iter().all(|r| r.pass == Some(true)));
    assert!(table(&rows).contains("/b"));
    assert!(host_only_check(&sc, 2).is_ok());
    // Three points off in a cgroup's share fail its row and both tasks'.
    let sim = vec![fig(&[("x", "/a", 280), ("y", "/b", 720)])];
    let rows = compare(&sc, &real, &sim, 0.002, 2_000_000_000);
    assert_eq!(rows.iter().filter(|r| row_fails(r)).count(), 4);
}

#[test]
fn known_lines_report_a_disagreement_without_counting_it() {
    let k = known_of("x\n# conform-known: yl.* share: yield forfeit\n# other\n");
    assert_eq!(k.len(), 1);
    assert_eq!(k[0].name, "yl.*");
    let sc = Scenario::parse(
        "t.toml",
        "[[task]]\nname=\"yl\"\nkind=\"hog\"\n[[task]]\nname=\"o\"\nkind=\"hog\"\n",
    )
    .unwrap();
    // 6.5% real against 6.25% simulated: outside max(2% of real, 0.2 points).
    let real = vec![fig(&[("yl.0", "/", 650), ("o", "/", 9350)])];
    let sim = vec![fig(&[("yl.0", "/", 625), ("o", "/", 9375)])];
    let mut rows = compare(&sc, &real, &sim, 0.002, 1_000_000_000);
    assert!(row_fails(&rows[0]));
    apply_known(&mut rows, &k);
    assert!(!row_fails(&rows[0]));
    assert!(rows[1].known.is_none(), "only yl.* is covered");
    assert!(table(&rows).contains("known disagreement: yield forfeit"));
}

#[test]
fn inside_the_widened_distribution_passes_outside_fails() {
    // Simulated seeds spread over 40..44%: a real 41% lies inside.
    let sims = [0.40, 0.44, 0.40, 0.44, 0.43, 0.44, 0.40, 0.44];
    let r = share_row("task", "h", &[0.41, 0.41], &sims, 0.001);
    assert_eq!(r.pass, Some(true));
    assert_eq!((r.sim_min, r.sim_max), (0.40, 0.44));
    // 45% is 1 point above the top, within 2% of 45% (0.9 points)? No: fails.
    let r = share_row("task", "h", &[0.45, 0.45], &sims, 0.001);
    assert_eq!(r.pass, Some(false));
    // 44.8% is 0.8 points above, within 2% of 44.8% (0.896): passes.
    let r = share_row("task", "h", &[0.448, 0.448], &sims, 0.001);
    assert_eq!(r.pass, Some(true));
    // Below the bottom by more than the tolerance fails as well.
    let r = share_row("task", "h", &[0.385, 0.385], &sims, 0.001);
    assert_eq!(r.pass, Some(false));
    // One seed reduces to |sim - real| <= tol: 41% against 44% fails.
    let r = share_row("task", "h", &[0.41, 0.41], &[0.44], 0.001);
    assert_eq!(r.pass, Some(false));
}

#[test]
fn a_tolerance_wider_than_the_value_is_not_judged() {
    // The row: a 261 us tolerance on a 200 us median cannot fail.
    let r = lat_row("per", "lat_p50", &[100_000.0, 330_000.0], &[40_000.0], true);
    assert!(r.tolerance > r.real_mean);
    assert!(r.not_judged);
    assert_eq!(r.pass, None);
    assert!(!row_fails(&r));
    assert_eq!(oversub_conform::table::verdict(&r), "not judged");
    // A 0.1% share under the 0.2-point floor: not judged either, whatever
    // the simulator says.
    let r = share_row("task", "tiny", &[0.001], &[0.05], 0.002);
    assert!(r.not_judged && r.pass.is_none());
    // p99 stays informational, never "not judged".
    let r = lat_row("per", "lat_p99", &[1e3], &[1e6], false);
    assert!(!r.not_judged && r.pass.is_none());
    assert_eq!(oversub_conform::table::verdict(&r), "info");
}

#[test]
fn bimodal_values_are_counted_per_mode() {
    // Five seeds at 44%, three at 40%; real runs 40.1, 40.3 and 43.9%.
    let sims = [0.44, 0.401, 0.441, 0.44, 0.399, 0.439, 0.40, 0.44];
    let r = share_row("task", "h", &[0.401, 0.403, 0.439], &sims, 0.001);
    // The gap is the tolerance without the real spread: 2% of real.
    assert!((r.mode_gap - 0.02 * r.real_mean).abs() < 1e-12);
    let counts: Vec<usize> = r.sim_modes.iter().map(|m| m.count).collect();
    assert_eq!(counts, [3, 5]);
    let counts: Vec<usize> = r.real_modes.iter().map(|m| m.count).collect();
    assert_eq!(counts, [2, 1]);
    assert_eq!(r.pass, Some(true));
    let t = table(std::slice::from_ref(&r));
    assert!(
        t.contains("modes (gap > 0.83%): sim 40.00% x3, 44.00% x5; real 40.20% x2, 43.90% x1"),
        "{t}"
    );
    // Three seeds, each its own mode, and one mode of the real runs: no
    // modes line (the values are min..max).
    let r = share_row("task", "h", &[0.44, 0.441], &[0.40, 0.42, 0.44], 0.001);
    assert_eq!((r.sim_modes.len(), r.real_modes.len()), (3, 1));
    assert!(!table(std::slice::from_ref(&r)).contains("modes"));
    // One mode on both sides: no modes line.
    let r = share_row("task", "h", &[0.44, 0.441], &[0.44, 0.441, 0.439], 0.001);
    assert_eq!((r.sim_modes.len(), r.real_modes.len()), (1, 1));
    assert!(!table(&[r]).contains("modes"));
}

#[test]
fn row_counts_separate_passed_failed_and_not_judged() {
    let rows = vec![
        share_row("task", "a", &[0.5], &[0.5], 0.002),
        share_row("task", "b", &[0.5], &[0.6], 0.002),
        share_row("task", "c", &[0.001], &[0.001], 0.002),
        lat_row("c", "lat_p99", &[1e6], &[1e6], false),
    ];
    let res = |status: &str| ScenarioResult {
        file: "t.toml".into(),
        status: status.into(),
        message: String::new(),
        rows: rows.clone(),
        timer_probe: None,
    };
    let c = RowCounts::of(&[res("fail"), res("skip")]);
    assert_eq!((c.passed, c.failed, c.not_judged, c.info), (1, 1, 1, 1));
    assert_eq!(c.text(), "rows: 1 passed, 1 failed, 1 not judged");
}

/// The exact text of a scenario's result: `make test-conform` logs and the
/// docs are read against it.
#[test]
fn result_text_is_the_documented_table() {
    let sc = two_cgroups();
    let real = vec![
        fig(&[("x", "/a", 250), ("y", "/b", 750)]),
        fig(&[("x", "/a", 260), ("y", "/b", 740)]),
    ];
    // Two seeds: x at 25.1 and 24.9%.
    let sims = vec![
        fig(&[("x", "/a", 251), ("y", "/b", 749)]),
        fig(&[("x", "/a", 249), ("y", "/b", 751)]),
    ];
    let rows = compare(&sc, &real, &sims, 0.004, 1_000_000_000);
    let r = ScenarioResult {
        file: "conform/t.toml".into(),
        status: "pass".into(),
        message: "2 real runs of 1000 ms".into(),
        rows,
        timer_probe: None,
    };
    // x: real 25 and 26% (mean 25.5), sim 24.9 and 25.1 (median 25.0):
    // -2.0%, tolerance the real spread (1 point) over 2% of real and the
    // 0.4-point floor. The two real runs lie more than the mode gap (2% of
    // 25.5%) apart, each a mode of its own: no modes line.
    let want = "\
conform/t.toml: PASS (2 real runs of 1000 ms)
  what   name                   metric       real       real min..max  sim median        sim min..max  rel.err      tol  verdict
  task   x                      share      25.50%      25.00%..26.00%      25.00%      24.90%..25.10%    -2.0%    1.00%  ok
  task   y                      share      74.50%      74.00%..75.00%      75.00%      74.90%..75.10%     0.7%    1.49%  ok
  cgroup /a                     share      25.50%      25.00%..26.00%      25.00%      24.90%..25.10%    -2.0%    1.00%  ok
  cgroup /b                     share      74.50%      74.00%..75.00%      75.00%      74.90%..75.10%     0.7%    1.49%  ok
";
    assert_eq!(result_text(&r), want);
    assert!(tolerance_line().starts_with(
        "tolerances: the real mean passes inside [sim min - tol, sim max + tol] over 8 simulated seeds (task start orders); a row whose tol exceeds its real value is not judged; CPU share tol = max(2% of real, real spread max-min, 0.2 points, one tick of the run); latency p50 tol = max(25% of real, 5us, real spread)"
    ));
}
