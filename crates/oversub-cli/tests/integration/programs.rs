//! Thread programs (rt-app JSON) run host-only: the effects of their
//! synchronisation on who gets the CPU, run-until-done, determinism and the
//! command line.

use crate::common::{oversub_text as cli, scratch};
use oversub::report::Report;
use oversub::scenario::rtapp::scenario;

fn run(src: &str) -> Report {
    run_with(src, |_| {})
}

/// [`run`] with the host costs changed by `set`.
fn run_with(src: &str, set: impl FnOnce(&mut oversub::sched::HostCosts)) -> Report {
    let mut sc = scenario("test.json", src).unwrap_or_else(|e| panic!("{e}"));
    set(&mut sc.host.costs);
    let mut sim = oversub::sim::Simulator::new(&sc);
    sim.set_check_invariants(true);
    sim.run_polled(sc.host.duration, &mut |_| true)
        .expect("the run finishes")
}

fn cpu(r: &Report, name: &str) -> u64 {
    r.tasks
        .iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("no task {name}"))
        .cpu_ns
}

#[test]
fn a_mutex_serialises_the_critical_sections() {
    // Two threads on two CPUs, each spending 1 ms of every 1.01 ms under
    // one mutex: together they can use at most about one CPU.
    let locked = run(
        r#"{"global": {"duration": 1}, "tasks": {"t": {"instance": 2,
            "lock": "m", "run": 1000, "unlock": "m", "run1": 10}}}"#,
    );
    let free = run(
        r#"{"global": {"duration": 1}, "tasks": {"t": {"instance": 2, "run": 1000, "run1": 10}}}"#,
    );
    let both = |r: &Report| cpu(r, "t.0") + cpu(r, "t.1");
    assert!(both(&free) > 1_990_000_000, "{}", both(&free));
    assert!(
        both(&locked) < 1_030_000_000,
        "critical sections overlapped: {}",
        both(&locked)
    );
    let p = locked.program.as_ref().unwrap();
    assert!(p.threads.iter().all(|t| t.lock_waits > 100), "{p:?}");
    // Neither starves: the futex wakeup hands the mutex around.
    assert!(cpu(&locked, "t.0") > 400_000_000 && cpu(&locked, "t.1") > 400_000_000);
}

#[test]
fn a_barrier_holds_the_fast_thread_to_the_slow_one() {
    let r = run(r#"{"global": {"duration": 1}, "tasks": {
            "fast": {"run": 100, "barrier": "b"},
            "slow": {"run": 1000, "barrier": "b"}}}"#);
    let p = r.program.as_ref().unwrap();
    let (f, s) = (p.threads[0].phase_loops, p.threads[1].phase_loops);
    assert!(f.abs_diff(s) <= 1, "fast {f} slow {s}");
    assert!((900..=1000).contains(&s), "slow loops {s}");
    let ratio = cpu(&r, "slow") as f64 / cpu(&r, "fast") as f64;
    assert!((9.0..11.0).contains(&ratio), "{ratio}");
}

#[test]
fn condition_variables_pass_the_turn() {
    // Producer/consumer handoff: the consumer runs only when signalled.
    // The producer's sleep and signal cost it no CPU here (their host
    // costs zero), so that the CPU ratio is the work's.
    let r = run_with(
        r#"{"global": {"duration": 1}, "tasks": {
            "prod": {"run": 100, "lock": "m", "signal": "q", "unlock": "m", "sleep": 900},
            "cons": {"lock": "m", "wait": {"ref": "q", "mutex": "m"}, "unlock": "m", "run": 300}}}"#,
        |c| {
            c.nanosleep = 0;
            c.nanosleep_idle = 0;
            c.futex_wake = 0;
        },
    );
    let p = r.program.as_ref().unwrap();
    let (prod, cons) = (p.threads[0].phase_loops, p.threads[1].phase_loops);
    // One consumer pass per signal (it is always waiting by then).
    assert!(prod.abs_diff(cons) <= 1, "prod {prod} cons {cons}");
    let ratio = cpu(&r, "cons") as f64 / cpu(&r, "prod") as f64;
    assert!((2.8..3.2).contains(&ratio), "{ratio}");
}

/// `run` on a host whose wake path and switches are free (`[host.costs]`
/// zero), for exact timings.
#[test]
fn a_bounded_queue_holds_a_fast_producer_to_its_consumer() {
    // A producer making an item in 10 us and a consumer using 1 ms per item,
    // on 2 CPUs for 1 s. Unbounded (capacity far above what 1 s produces),
    // the producer runs all the time; with capacity 4 it blocks on the full
    // queue and makes one item per item consumed.
    let src = |cap: u32| {
        format!(
            r#"{{"global": {{"duration": 1}}, "tasks": {{
              "prod": {{"run": 10, "put": {{"queue": "q", "capacity": {cap}}}}},
              "cons": {{"get": {{"queue": "q"}}, "run": 1000}}}}}}"#
        )
    };
    let free = run(&src(1_000_000));
    let bounded = run(&src(4));
    assert!(cpu(&free, "prod") > 900_000_000, "{}", cpu(&free, "prod"));
    assert!(cpu(&free, "cons") > 900_000_000);
    // ~1000 items consumed in 1 s, at most 4 ahead: ~1004 x 10 us.
    assert!(
        cpu(&bounded, "prod") < 20_000_000,
        "{}",
        cpu(&bounded, "prod")
    );
    assert!(cpu(&bounded, "cons") > 900_000_000);
}

fn run_free(src: &str) -> Report {
    let mut sc = scenario("test.json", src).unwrap_or_else(|e| panic!("{e}"));
    sc.host.costs = oversub::sched::HostCosts::ZERO;
    let mut sim = oversub::sim::Simulator::new(&sc);
    sim.set_check_invariants(true);
    sim.run_polled(sc.host.duration, &mut |_| true)
        .expect("the run finishes")
}

#[test]
fn duration_minus_one_runs_until_the_last_thread_ends() {
    // Exact instants: no wake-path cost (each sleep would end ~35 us more
    // late); each of a's three sleeps still ends its 50 us timer slack late
    // (rt-app leaves the default; a's CPU is idle, so nothing runs the timer
    // before its hard expiry).
    let r = run_free(
        r#"{"global": {"duration": -1}, "tasks": {
            "a": {"loop": 3, "phases": {"p": {"run": 1000, "sleep": 1000}}},
            "b": {"loop": 1, "phases": {"p": {"run": 500}}}}}"#,
    );
    assert_eq!(r.duration_ns, 6_150_000);
    let p = r.program.as_ref().unwrap();
    assert!(p.completed);
    assert_eq!(p.threads[0].finished_ns, Some(6_150_000));
    assert_eq!(p.threads[1].finished_ns, Some(500_000));
    assert_eq!(cpu(&r, "a"), 3_000_000);
}

#[test]
fn one_cpu_shares_by_nice_like_any_task() {
    // Two always-running program threads at nice 0 and 5 on one CPU get
    // the weight split 1024 : 335.
    let r = run(r#"{"global": {"duration": 2}, "tasks": {
            "a": {"cpus": [0], "run": 100000},
            "b": {"cpus": [0], "priority": 5, "run": 100000}}}"#);
    let share = cpu(&r, "a") as f64 / (cpu(&r, "a") + cpu(&r, "b")) as f64;
    assert!((share - 1024.0 / 1359.0).abs() < 0.01, "{share}");
}

#[test]
fn runs_are_deterministic() {
    let src = r#"{"global": {"duration": 1}, "oversub": {"cpus": 3}, "tasks": {
        "w": {"instance": 5, "lock": "m", "run": 50, "unlock": "m", "run1": 300, "timer": {"ref": "unique", "period": 700}},
        "y": {"run": 20, "yield": ""}}}"#;
    let strip = |r: Report| {
        let mut r = r;
        r.wall_ns = 0;
        r.to_json()
    };
    assert_eq!(strip(run(src)), strip(run(src)));
}

#[test]
fn cli_runs_rtapp_files_and_rejects_bad_ones_in_one_line() {
    let dir = scratch("programs");
    let good = dir.join("good.json");
    std::fs::write(
        &good,
        r#"{"global": {"duration": 1, "calibration": "CPU0", "log_size": 0}, "tasks": {"t": {"run": 100, "sleep": 100}}}"#,
    )
    .unwrap();
    let (code, out, err) = cli(&["run", "--json", good.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["program"]["threads"][0]["name"], "t");
    assert_eq!(v["program"]["fidelity"][0]["at"], "global.calibration");
    let (code, out, _) = cli(&["run", good.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert!(
        out.contains("phase_loops") && out.contains("fidelity: global.calibration"),
        "{out}"
    );
    let bad = dir.join("bad.json");
    std::fs::write(
        &bad,
        r#"{"global": {"duration": 1}, "tasks": {"t": {"run": 100, "sleeep": 100}}}"#,
    )
    .unwrap();
    let (code, _, err) = cli(&["run", bad.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("bad.json: tasks.t.sleeep: unknown key"),
        "{err}"
    );
    let badq = dir.join("badq.json");
    std::fs::write(
        &badq,
        r#"{"global": {"duration": 1}, "tasks": {"t": {"run": 1, "put": {"queue": "q", "items": 3, "capacity": 2}}}}"#,
    )
    .unwrap();
    let (code, _, err) = cli(&["run", badq.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("badq.json: tasks: thread t phase")
            && err.contains("a batch of 3 items on queue \"q\" of capacity 2: allowed 1 ..= 2"),
        "{err}"
    );
    let badc = dir.join("badc.json");
    std::fs::write(
        &badc,
        r#"{"global": {"duration": 1}, "tasks": {"t": {"run": 1, "count": {"counter": "c", "every": 0, "queue": "q"}, "get": {"queue": "q", "capacity": 2}}}}"#,
    )
    .unwrap();
    let (code, _, err) = cli(&["run", badc.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(
            "badc.json: tasks.t.count.every: 0 is out of range: allowed 1 ..= 4294967295 counts"
        ),
        "{err}"
    );
    let (code, out, _) = cli(&["check", good.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert!(out.contains("ok"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}
