//! Helpers shared by the simulator behaviour tests: run a scenario given as
//! TOML text with the scheduler's invariant checks on, and read one task's
//! figures out of the report.

#![allow(dead_code)] // each test binary uses its own subset

use oversub::report::{Report, TaskReport, VmReport};
use oversub::scenario::Scenario;
use oversub::sim::Simulator;

/// Parses `src` and simulates it for its `[host].duration` with the
/// scheduler's invariant checks on.
pub fn run(src: &str) -> Report {
    run_as("test.toml", src)
}

/// [`run`] of `src` as if it were the file `tests/nested/inline.toml`, so
/// `program` paths resolve against tests/nested.
pub fn run_nested(src: &str) -> Report {
    run_as(
        &format!("{}/tests/nested/inline.toml", env!("CARGO_MANIFEST_DIR")),
        src,
    )
}

/// [`run`] of `src` named `file` (relative paths in it resolve against
/// the file's directory).
pub fn run_as(file: &str, src: &str) -> Report {
    let sc = Scenario::parse(file, src).unwrap_or_else(|e| panic!("{e}"));
    let mut sim = Simulator::new(&sc);
    sim.set_check_invariants(true);
    sim.run_polled(sc.host.duration, &mut |_| true)
        .expect("the run finishes")
}

/// The report of task `name`.
pub fn task<'a>(r: &'a Report, name: &str) -> &'a TaskReport {
    r.tasks
        .iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("no task {name}"))
}

/// The report of VM `name`.
pub fn vm<'a>(r: &'a Report, name: &str) -> &'a VmReport {
    r.vms
        .iter()
        .find(|v| v.name == name)
        .unwrap_or_else(|| panic!("no vm {name}"))
}

/// VM `v`, 6 vCPUs of the dedup phase generator sending 20 synchronous
/// unicast IPIs per ms, on 4 pCPUs for 200 ms, with `kvm` as the `[kvm]`
/// table's body: some targets run, some are preempted or halted when an
/// IPI is sent.
pub fn unicast_ipis(kvm: &str) -> String {
    format!(
        r#"
[host]
cpus = 4
duration = "200ms"
[kvm]
{kvm}
[[vm]]
name = "v"
vcpus = 6
workload = "phase:dedup"
[vm.overrides]
ipi_per_ms = 20
ipi_sync = true
"#
    )
}

/// CPU time of task `name`, ns.
pub fn cpu_ns(r: &Report, name: &str) -> u64 {
    task(r, name).cpu_ns
}

/// Issue 10's first layout (conform/smp_weights.toml) without its `[host]`
/// table: /a (weight 100) with hogs a.0 and a.1, /b (weight 300) with hog b,
/// and a periodic task p (1 ms every 5 ms) in the root, none pinned.
pub const SMP_WEIGHTS: &str = r#"
    [[cgroup]]
    path = "/a"
    weight = 100
    [[cgroup]]
    path = "/b"
    weight = 300
    [[task]]
    name = "a"
    kind = "hog"
    count = 2
    cgroup = "/a"
    [[task]]
    name = "b"
    kind = "hog"
    cgroup = "/b"
    [[task]]
    name = "p"
    kind = "periodic"
    period = "5ms"
    run = "1ms"
"#;

/// Issue 10's second layout (conform/smp_nested.toml) without its `[host]`
/// table and its periodic tasks: /x (weight 400) with hog x, /y (weight 100)
/// with hogs y.0 and y.1, its child /y/z (weight 100) with hog z.
pub const SMP_NESTED_HOGS: &str = r#"
    [[cgroup]]
    path = "/x"
    weight = 400
    [[cgroup]]
    path = "/y"
    weight = 100
    [[cgroup]]
    path = "/y/z"
    weight = 100
    [[task]]
    name = "x"
    kind = "hog"
    cgroup = "/x"
    [[task]]
    name = "y"
    kind = "hog"
    count = 2
    cgroup = "/y"
    [[task]]
    name = "z"
    kind = "hog"
    cgroup = "/y/z"
"#;

/// Runs `body` (cgroups and tasks) on 2 CPUs at HZ=250, as conform
/// simulates this host, for `duration` with kernel preset `kernel` and the
/// `[host.features]` lines `switches`.
pub fn run_on_2cpus(kernel: &str, switches: &str, duration: &str, body: &str) -> Report {
    run(&format!(
        r#"
        [host]
        cpus = 2
        hz = 250
        kernel = "{kernel}"
        duration = "{duration}"
        [host.features]
        {switches}
        {body}"#
    ))
}

/// proptest's configuration for these tests: `cases` cases drawn from a
/// fixed seed, so every run (CI's on a fresh machine too) tests the same
/// inputs and a failure repeats; `PROPTEST_RNG_SEED=N` draws other ones
/// (exploration, docs/usage.md).
pub fn proptest_config(cases: u32) -> proptest::test_runner::Config {
    use proptest::test_runner::{Config, RngSeed};
    let mut c = Config {
        cases,
        ..Config::default()
    };
    if c.rng_seed == RngSeed::Random {
        c.rng_seed = RngSeed::Fixed(0x6f76_6572);
    }
    c
}
