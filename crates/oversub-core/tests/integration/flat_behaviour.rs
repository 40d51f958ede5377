//! sched/flat (the `flat` preset) as effects: without cgroups it picks
//! exactly as 6.12.117; with them each cgroup keeps its share through the
//! effective weights; and on the reviewers' topologies (scenarios/yield/)
//! who runs after a yield_to() and who loses CPU. The rules themselves are
//! unit tests of `sched::flat`.

use crate::common;

use oversub::report::Report;
use oversub::scenario::overrides::parse_override;
use oversub::scenario::Scenario;
use std::path::Path;

fn run_file(file: &str, sets: &[&str]) -> Report {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(file);
    let mut o = vec![parse_override("host.duration=2s").unwrap()];
    o.extend(sets.iter().map(|s| parse_override(s).unwrap()));
    let sc = Scenario::load_with(&path, &o).unwrap_or_else(|e| panic!("{e}"));
    oversub::run_scenario(&sc, None, None).expect("the run finishes")
}

fn share(r: &Report, task: &str) -> f64 {
    100.0 * common::cpu_ns(r, task) as f64 / r.duration_ns as f64
}

/// Percentage of A's successful yield_to()s after which B got the CPU.
fn target_ran(r: &Report) -> f64 {
    let a = common::task(r, "A");
    100.0 * a.nr_yield_to_target_ran as f64 / a.nr_yield_to_ok.max(1) as f64
}

fn topo(file: &str, kernel: &str, policy: &str) -> Report {
    run_file(
        &format!("scenarios/yield/{file}.toml"),
        &[
            &format!("host.kernel={kernel}"),
            &format!("host.yield.yield_to={policy}"),
        ],
    )
}

#[test]
fn flat_without_cgroups_picks_exactly_as_6_12_117() {
    // Every task in the root group: each effective weight is the task's
    // own, so the single runqueue is 6.12.117's root queue.
    let body = r#"
        [[task]]
        name = "h"
        kind = "hog"
        count = 3
        [[task]]
        name = "n5"
        kind = "hog"
        nice = 5
        [[task]]
        name = "p"
        kind = "periodic"
        period = "7ms"
        run = "1ms"
        count = 2
        [[task]]
        name = "pp"
        kind = "pingpong"
        run = "50us"
        count = 2
        [[task]]
        name = "y"
        kind = "yield_loop"
        work = "30us"
    "#;
    let run = |k: &str| {
        common::run(&format!(
            "[host]\ncpus = 2\nkernel = \"{k}\"\nduration = \"2s\"\n{body}"
        ))
    };
    let (h, f) = (run("6.12.117"), run("flat"));
    assert!(h.tasks.iter().map(|t| t.nr_switches).sum::<u64>() > 10_000);
    for (a, b) in h.tasks.iter().zip(&f.tasks) {
        assert_eq!(
            (
                a.cpu_ns,
                a.wait_ns,
                a.nr_switches,
                a.nr_migrations,
                a.nr_yields
            ),
            (
                b.cpu_ns,
                b.wait_ns,
                b.nr_switches,
                b.nr_migrations,
                b.nr_yields
            ),
            "{}",
            a.name
        );
    }
}

#[test]
fn flat_two_cgroups_one_and_three_hogs_split_the_cpu_in_half() {
    let r = common::run(
        r#"
        [host]
        cpus = 1
        kernel = "flat"
        duration = "4s"
        [[cgroup]]
        path = "/a"
        [[cgroup]]
        path = "/b"
        [[task]]
        name = "a"
        kind = "hog"
        cgroup = "/a"
        [[task]]
        name = "b"
        kind = "hog"
        count = 3
        cgroup = "/b"
    "#,
    );
    let a = share(&r, "a");
    assert!((a - 50.0).abs() < 0.5, "/a's one hog: {a:.2}%");
    for b in ["b.0", "b.1", "b.2"] {
        let s = share(&r, b);
        assert!((s - 100.0 / 6.0).abs() < 0.5, "{b}: {s:.2}%");
    }
}

#[test]
fn flat_cg_pair_the_target_runs_after_more_yields_but_not_after_most() {
    // root -> CG0{A}, CG1{B}: on 6.12.117 B's group entity is ineligible
    // at the root after nearly every yield; on the flat queue A's forfeit
    // moves the root's average, so B runs after more of them, but B (which
    // has more than its share) is still ineligible after most.
    let h = target_ran(&topo("cg-pair", "6.12.117", "upstream"));
    let f = target_ran(&topo("cg-pair", "flat", "upstream"));
    assert!(h < 1.0, "6.12.117: {h:.1}%");
    assert!(f > 10.0 && f < 50.0, "flat: {f:.1}%");
}

#[test]
fn flat_borrow_runs_the_target_after_the_yields_without_giving_service_away() {
    let up = topo("cg-pair", "flat", "upstream");
    let bo = topo("cg-pair", "flat", "borrow");
    assert!(target_ran(&bo) > 95.0, "borrow: {:.1}%", target_ran(&bo));
    for t in ["A", "B"] {
        assert!(
            (share(&bo, t) - share(&up, t)).abs() < 1.0,
            "{t}: borrow {:.1}% vs upstream {:.1}%",
            share(&bo, t),
            share(&up, t)
        );
    }
}

#[test]
fn flat_the_series_debooster_finds_yielder_and_target_on_one_queue_and_does_nothing() {
    // deboost (YIELD_TO_PENALTY) leaves a same-cfs_rq pair to the forfeit
    // and the buddy (review item M4): on the flat queue every pair is one.
    let up = topo("cg-bystander", "flat", "upstream");
    let db = topo("cg-bystander", "flat", "deboost");
    assert_eq!(db.yield_stats.deboosts_applied, 0);
    for (a, b) in up.tasks.iter().zip(&db.tasks) {
        assert_eq!(a.cpu_ns, b.cpu_ns, "{}", a.name);
    }
    // On 6.12.117 it applies penalties and moves CPU.
    let h = topo("cg-bystander", "6.12.117", "deboost");
    assert!(h.yield_stats.deboosts_applied > 100);
}

#[test]
fn flat_makes_the_vcpu_cgroup_layout_irrelevant_and_the_yielder_group_loses_its_share() {
    // libvirt per-vCPU cgroups and one VM cgroup give the same effective
    // weights, so the same schedule; the VM's unused share (A yields) goes
    // to every runnable task by weight, not to A's siblings: the other
    // tenant C gains.
    let per = topo("layout-per-vcpu", "flat", "upstream");
    let same = topo("layout-same-cgroup", "flat", "upstream");
    for (a, b) in per.tasks.iter().zip(&same.tasks) {
        assert_eq!(a.cpu_ns, b.cpu_ns, "{}", a.name);
    }
    let h = topo("layout-per-vcpu", "6.12.117", "upstream");
    assert!(
        (share(&h, "C") - 50.0).abs() < 1.0,
        "6.12.117: C {:.1}%",
        share(&h, "C")
    );
    assert!(share(&per, "C") > 60.0, "flat: C {:.1}%", share(&per, "C"));
}
