//! The event budget (issue 28): a run that uses more events per simulated
//! second than allowed stops with `RunError::EventBudget`, counted in events
//! (not timed); the repository's scenarios stay far below the limit.

use oversub::scenario::Scenario;
use oversub::sim::Simulator;
use oversub::RunError;

const SRC: &str = "[host]\ncpus = 2\nduration = \"50ms\"\n\
                   [[task]]\nname = \"p\"\nkind = \"pingpong\"\ncount = 2\nrun = \"1us\"\n";

#[test]
fn a_run_over_its_budget_stops_with_the_count() {
    let sc = Scenario::parse("b.toml", SRC).unwrap();
    let mut sim = Simulator::new(&sc);
    // One event per CPU per simulated second and no allowance: the first
    // poll (after 16384 events) is over it.
    sim.set_event_budget(1, 0);
    let e = sim
        .run_polled(sc.host.duration, &mut |_| true)
        .expect_err("over the budget");
    let RunError::EventBudget {
        events,
        budget,
        cpus,
        ..
    } = e.clone()
    else {
        panic!("{e}");
    };
    assert_eq!(cpus, 2);
    assert!(events > budget, "{events} > {budget}");
    assert_eq!(events, Simulator::POLL_EVENTS, "stopped at the first poll");
    let line = e.to_string();
    assert!(
        !line.contains('\n') && line.contains("exceed the budget"),
        "{line}"
    );
}

#[test]
fn the_same_run_within_the_default_budget_completes() {
    let sc = Scenario::parse("b.toml", SRC).unwrap();
    let mut sim = Simulator::new(&sc);
    let r = sim.run_polled(sc.host.duration, &mut |_| true).unwrap();
    assert!(
        r.events > Simulator::POLL_EVENTS,
        "enough events to be polled"
    );
    // Far below the limit: the budget judges nothing a normal run does.
    assert!(r.events < sim.event_budget(oversub::engine::Time(sc.host.duration.0)) / 10);
}

/// A loop only the order of threads makes endless (rt-app's barrier passed
/// alone by its last arrival, in a loop of nothing else) is not caught at
/// load; the run stops with `RunError::ZeroTimeLoop` naming the thread
/// instead of hanging in one event (the hang CI once met in the fuzz test).
#[test]
fn a_barrier_passed_alone_stops_the_run_naming_the_thread() {
    let src = r#"{"global": {"duration": 1}, "oversub": {"cpus": 2},
        "tasks": {"t0": {"instance": 1, "barrier0": "b", "run1": 1},
                  "t1": {"loop": -1, "instance": 3, "barrier0": "b"}}}"#;
    let sc = oversub::scenario::rtapp::scenario("b.json", src).unwrap();
    let mut sim = Simulator::new(&sc);
    let e = sim
        .run_polled(oversub::engine::Nanos::from_ms(2), &mut |_| true)
        .expect_err("a zero-time loop");
    let RunError::ZeroTimeLoop { thread, .. } = &e else {
        panic!("{e}");
    };
    assert!(thread.starts_with("t1"), "{thread}");
    let line = e.to_string();
    assert!(
        !line.contains('\n') && line.contains(thread.as_str()),
        "{line}"
    );
}
