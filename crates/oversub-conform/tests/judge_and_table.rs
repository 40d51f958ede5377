//! The judge and the printed table through the crate's public API: verdicts
//! of whole comparisons (tasks and cgroups, documented disagreements) and
//! the exact text `oversub conform` prints for them.

use oversub::scenario::Scenario;
use oversub_conform::judge::{
    apply_known, compare, known_of, row_fails, share_floor, RunFigures, ScenarioResult,
};
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
    let sim = fig(&[("x", "/a", 251), ("y", "/b", 749)]);
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
    let sim = fig(&[("x", "/a", 280), ("y", "/b", 720)]);
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
    let sim = fig(&[("yl.0", "/", 625), ("o", "/", 9375)]);
    let mut rows = compare(&sc, &real, &sim, 0.002, 1_000_000_000);
    assert!(row_fails(&rows[0]));
    apply_known(&mut rows, &k);
    assert!(!row_fails(&rows[0]));
    assert!(rows[1].known.is_none(), "only yl.* is covered");
    assert!(table(&rows).contains("known disagreement: yield forfeit"));
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
    let sim = fig(&[("x", "/a", 251), ("y", "/b", 749)]);
    let rows = compare(&sc, &real, &sim, 0.004, 1_000_000_000);
    let r = ScenarioResult {
        file: "conform/t.toml".into(),
        status: "pass".into(),
        message: "2 real runs of 1000 ms".into(),
        rows,
        timer_probe: None,
    };
    // x: real 25 and 26% (mean 25.5), sim 25.1: -1.6%, tolerance the real
    // spread (1 point) over 2% of real and the 0.4-point floor.
    let want = "\
conform/t.toml: PASS (2 real runs of 1000 ms)
  what   name                   metric       real       real min..max       sim  rel.err      tol  verdict
  task   x                      share      25.50%      25.00%..26.00%    25.10%    -1.6%    1.00%  ok
  task   y                      share      74.50%      74.00%..75.00%    74.90%     0.5%    1.49%  ok
  cgroup /a                     share      25.50%      25.00%..26.00%    25.10%    -1.6%    1.00%  ok
  cgroup /b                     share      74.50%      74.00%..75.00%    74.90%     0.5%    1.49%  ok
";
    assert_eq!(result_text(&r), want);
    assert!(tolerance_line().starts_with(
        "tolerances: CPU share |sim-real| <= max(2% of real, real spread max-min, 0.2 points, one tick of the run); latency p50 <= max(25% of real, 5us, real spread)"
    ));
}
