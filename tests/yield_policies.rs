//! The yield_to() policies as effects on the reviewer's topologies
//! (scenarios/yield/*.toml, one CPU): who runs after a yield, and what an
//! uninvolved task keeps. Every run goes through `--set`-style overrides.

use oversub::report::Report;
use oversub::scenario::overrides::parse_override;
use oversub::scenario::Scenario;
use std::path::Path;

fn run(file: &str, sets: &[&str]) -> Report {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
    // 2 s unless a test sets its own duration (later overrides win).
    let mut o = vec![parse_override("host.duration=2s").unwrap()];
    o.extend(sets.iter().map(|s| parse_override(s).unwrap()));
    let sc = Scenario::load_with(&path, &o).unwrap_or_else(|e| panic!("{e}"));
    oversub::run_scenario(&sc, None, None)
}

fn share(r: &Report, task: &str) -> f64 {
    let t = r.tasks.iter().find(|t| t.name == task).unwrap();
    100.0 * t.cpu_ns as f64 / r.duration_ns as f64
}

/// Percentage of A's successful yield_to()s after which B got the CPU.
fn target_ran(r: &Report) -> f64 {
    let a = r.tasks.iter().find(|t| t.name == "A").unwrap();
    100.0 * a.nr_yield_to_target_ran as f64 / a.nr_yield_to_ok.max(1) as f64
}

fn policy(p: &str) -> String {
    format!("host.yield.yield_to={p}")
}

/// Claim (b): with CG0{A, C}/CG1{B}, the debooster takes CPU from C, an
/// uninvolved task beside the yielder; borrow keeps C's upstream share.
#[test]
fn bystander_pays_for_the_debooster_but_not_for_borrow() {
    let f = "scenarios/yield/cg-bystander.toml";
    let up = run(f, &[&policy("upstream")]);
    let db = run(f, &[&policy("deboost")]);
    let lc = run(f, &[&policy("lag-credit-v3")]);
    let bo = run(f, &[&policy("borrow")]);
    let (c_up, c_db, c_lc, c_bo) = (
        share(&up, "C"),
        share(&db, "C"),
        share(&lc, "C"),
        share(&bo, "C"),
    );
    assert!(
        c_up > 45.0,
        "upstream: CG0 gets half, C nearly all of it: {c_up:.1}%"
    );
    assert!(
        c_db < c_up - 5.0,
        "deboost must cost C: {c_db:.1}% vs {c_up:.1}%"
    );
    assert!(
        c_lc < c_up - 5.0,
        "lag credit must cost C: {c_lc:.1}% vs {c_up:.1}%"
    );
    assert!(
        (c_bo - c_up).abs() <= 2.0,
        "borrow keeps C's share: {c_bo:.1}% vs {c_up:.1}%"
    );
    // ... and B gets the CPU after A's yields at least as often as with deboost.
    assert!(
        target_ran(&up) < 5.0,
        "upstream wastes the yields: {:.1}%",
        target_ran(&up)
    );
    assert!(target_ran(&bo) >= 0.9 * target_ran(&db));
    assert!(target_ran(&bo) > 90.0, "borrow: {:.1}%", target_ran(&bo));
}

/// CG0{A}/CG1{B}: upstream honours the buddy rarely (the target's group is
/// ineligible at the root); the deboosters and lag credit make B run after
/// the yields more often, and lag credit gives away service (A starves).
#[test]
fn cgroup_pair_target_runs_after_yield_more_often_with_the_policies() {
    let f = "scenarios/yield/cg-pair.toml";
    let up = target_ran(&run(f, &[&policy("upstream")]));
    for p in [
        "deboost",
        "deboost-v2",
        "lag-credit-v3",
        "kpn-charge",
        "borrow",
    ] {
        let r = run(f, &[&policy(p)]);
        assert!(
            target_ran(&r) > up,
            "{p}: {:.1}% vs upstream {up:.1}%",
            target_ran(&r)
        );
    }
    let lc = run(f, &[&policy("lag-credit-v3")]);
    assert!(
        share(&lc, "B") > 90.0,
        "lag credit gives B A's share: {:.1}%",
        share(&lc, "B")
    );
    let bo = run(f, &[&policy("borrow")]);
    assert!(
        (share(&bo, "B") - 50.0).abs() <= 2.0,
        "borrow keeps 50/50: {:.1}%",
        share(&bo, "B")
    );
}

/// v1's rate limit refreshes its stamp on every call: A's stream of yields
/// (20 us apart) keeps it limited after the first deboost; v2/current
/// consume the token only when it passes.
#[test]
fn v1_rate_limit_starves_itself_on_a_yield_stream() {
    let f = "scenarios/yield/cg-pair.toml";
    let v1 = run(f, &[&policy("deboost-v1")]);
    let v2 = run(f, &[&policy("deboost-v2")]);
    assert!(v1.yield_stats.deboosts_applied <= 1, "{:?}", v1.yield_stats);
    assert!(
        v2.yield_stats.deboosts_applied > 100,
        "{:?}",
        v2.yield_stats
    );
    // The rate-limit knob: with 0 the v1 limiter never refuses.
    let v1_0 = run(
        f,
        &[&policy("deboost-v1"), "host.yield.deboost_ratelimit=0ns"],
    );
    assert!(
        v1_0.yield_stats.deboosts_applied > 100,
        "{:?}",
        v1_0.yield_stats
    );
}

/// Same-cgroup vs per-vCPU cgroups: upstream's buddy works inside one
/// cgroup far better than across per-vCPU groups, where the spinner keeps
/// half the VM's CPU; the deboost recovers it in both layouts; nobody outside
/// the VM is affected in either.
#[test]
fn layouts_same_cgroup_vs_per_vcpu() {
    let same = "scenarios/yield/layout-same-cgroup.toml";
    let per = "scenarios/yield/layout-per-vcpu.toml";
    let up_same = run(same, &[&policy("upstream")]);
    let up_per = run(per, &[&policy("upstream")]);
    assert!(share(&up_per, "A") > 5.0 * share(&up_same, "A"));
    for p in ["deboost", "borrow", "lag-credit-v3"] {
        for f in [same, per] {
            let r = run(f, &[&policy(p)]);
            assert!(
                (share(&r, "C") - 50.0).abs() <= 2.0,
                "{p} {f}: C {:.1}%",
                share(&r, "C")
            );
        }
    }
    let db_per = run(per, &[&policy("deboost")]);
    assert!(share(&db_per, "A") < share(&up_per, "A") / 5.0);
}

/// Kuba Piecuch's throttle: sched_yield() within yield_interval of the last
/// one does not schedule.
#[test]
fn yield_interval_throttles_sched_yield() {
    let f = "scenarios/yield/cg-pair.toml";
    // B becomes a plain sched_yield() loop (every 20 us of work).
    let off = run(f, &["task.1.kind=yield_loop", "task.1.work=20us"]);
    let on = run(
        f,
        &[
            "task.1.kind=yield_loop",
            "task.1.work=20us",
            "host.yield.yield_interval=1ms",
        ],
    );
    let b_off = off.tasks.iter().find(|t| t.name == "B").unwrap();
    let b_on = on.tasks.iter().find(|t| t.name == "B").unwrap();
    assert_eq!(off.yield_stats.yields_throttled, 0);
    assert!(
        on.yield_stats.yields_throttled > 1000,
        "{:?}",
        on.yield_stats
    );
    assert!(
        b_on.nr_involuntary_switches * 2 < b_off.nr_involuntary_switches,
        "throttled yields do not switch: {} vs {}",
        b_on.nr_involuntary_switches,
        b_off.nr_involuntary_switches
    );
}

/// Every policy runs on every shipped scenario of this set.
#[test]
fn every_policy_runs_via_set() {
    for f in [
        "scenarios/yield/cg-pair.toml",
        "scenarios/yield/cg-bystander.toml",
        "scenarios/yield/layout-same-cgroup.toml",
        "scenarios/yield/layout-per-vcpu.toml",
        "scenarios/yield/s390-pingpong.toml",
        "scenarios/overcommit/dedup-2x16.toml",
    ] {
        for p in oversub::sched::yield_to::YieldToPolicy::ALL {
            let r = run(
                f,
                &[
                    &policy(p.name()),
                    "host.duration=50ms",
                    "host.features.LAST_BUDDY=true",
                ],
            );
            assert!(r.tasks.iter().map(|t| t.cpu_ns).sum::<u64>() > 0);
        }
    }
}

/// The s390 ping-pong (2 vCPUs, 1 pCPU, per-vCPU cgroups, a PV sched_yield
/// to the holder): upstream needs ~1.6 yield hypercalls per handoff (the
/// holder's vCPU group is often ineligible at the VM level); the debooster
/// brings it to 1.0 only without its 6 ms rate limit (with it, a handoff
/// every few µs leaves almost every yield unboosted); borrow gets 1.0 without
/// any rate limit.
#[test]
fn s390_pingpong_yield_hypercalls_per_handoff() {
    let f = "scenarios/yield/s390-pingpong.toml";
    // Measured on a host with a free wake path ([host.costs] at zero): with
    // the default 2.7 us switch cost upstream also needs ~1.0 (issue 9).
    let per = |sets: &[&str]| {
        let mut all = sets.to_vec();
        all.extend([
            "host.costs.timer_wake=0ns",
            "host.costs.idle_exit=0ns",
            "host.costs.context_switch=0ns",
            "host.costs.remote_wakeup=0ns",
        ]);
        let r = run(f, &all);
        let v = &r.vms[0];
        assert!(v.ops > 10_000, "{}", v.ops);
        v.directed_yield_attempted as f64 / v.ops as f64
    };
    let up = per(&[&policy("upstream")]);
    let db = per(&[&policy("deboost")]);
    let db0 = per(&[&policy("deboost"), "host.yield.deboost_ratelimit=0ns"]);
    let bo = per(&[&policy("borrow")]);
    assert!(up > 1.5, "upstream {up:.3}");
    assert!(db > 1.5, "deboost with the rate limit {db:.3}");
    assert!(db0 < 1.05, "deboost without the rate limit {db0:.3}");
    assert!(bo < 1.05, "borrow {bo:.3}");
    // Same VM cgroup for both vCPUs: one hypercall per handoff already.
    assert!(per(&[&policy("upstream"), "vm.0.layout=flat"]) < 1.05);
}
