//! The simulated side of a comparison: which scenarios conform accepts
//! (host-only kinds the real workers can play), and the scenario as the
//! simulator runs it to mirror this machine (its CPUs, HZ, kernel preset and
//! calibrated costs).

use crate::host::HostInfo;
use crate::judge::RunFigures;
use oversub::engine::Nanos;
use oversub::scenario::{Scenario, TaskKind};
use oversub::sched::HostCosts;

/// Why a scenario cannot be run by conform, if it cannot.
pub fn host_only_check(sc: &Scenario, cpus: u32) -> Result<(), String> {
    if sc.until_done {
        return Err(
            "global.duration -1: the program ends by itself; conform compares a steady window, give a duration"
                .into(),
        );
    }
    if sc.program.as_ref().is_some_and(|p| p.uses_fork()) {
        return Err(
            "the program forks child processes (fork/vfork events), which rt-app 1.0 does not run: the real side would run another program"
                .into(),
        );
    }
    if let Some(vm) = sc.vms.first() {
        return Err(format!(
            "vm {}: scenarios with [[vm]] are not host-only (conform runs hog, periodic, yield_loop, pingpong)",
            vm.name
        ));
    }
    for t in &sc.tasks {
        match &t.kind {
            TaskKind::Messaging { .. } => {
                return Err(format!(
                    "task {}: kind messaging is not host-only (conform runs hog, periodic, yield_loop, pingpong)",
                    t.name
                ))
            }
            TaskKind::YieldLoop {
                target: Some(tg), ..
            } => {
                return Err(format!(
                    "task {}: yield_loop target {tg:?} needs yield_to(), which user space cannot call",
                    t.name
                ))
            }
            _ => {}
        }
        if t.slice.is_some() {
            return Err(format!(
                "task {}: custom slices are not supported by conform",
                t.name
            ));
        }
        if let Some(c) = t.cpus.as_ref().and_then(|v| v.iter().find(|&&c| c >= cpus)) {
            return Err(format!(
                "task {}: CPU {c} does not exist here ({cpus} CPUs)",
                t.name
            ));
        }
    }
    Ok(())
}

/// The scenario as the simulator runs it to mirror this machine, with the
/// machine's calibrated `costs` and the workers' 1 ns of timer slack. The
/// real workers' bursts are CPU budgets
/// that include the kernel's switch into the task (docs/conformance.md); the
/// model charges that switch on top of a burst, so each per-activation
/// budget is reduced by `costs.context_switch` (to at least 1 ns).
pub fn simulated(sc: &Scenario, h: &HostInfo, costs: &HostCosts) -> Scenario {
    let mut s = sc.clone();
    s.host.cpus = h.cpus;
    s.host.hz = h.hz;
    s.host.kernel = h.preset;
    s.host.features = h.preset.features();
    s.host.overrides.clear();
    s.host.costs = *costs;
    let cs = Nanos(costs.context_switch);
    let less = |d: Nanos| Nanos(d.0.saturating_sub(cs.0).max(1));
    for t in &mut s.tasks {
        match &mut t.kind {
            TaskKind::Periodic { run, .. } | TaskKind::PingPong { run } => *run = less(*run),
            TaskKind::YieldLoop { work, .. } => *work = less(*work),
            _ => {}
        }
        // The workers set 1 ns of timer slack (worker.rs); rt-app programs
        // run with what rt-app inherits, the kernel's default 50 us.
        if !matches!(t.kind, TaskKind::Program { .. }) {
            t.timer_slack = Nanos(1);
        }
    }
    s
}

/// Simulated runs per scenario: the judge compares the real runs with the
/// distribution of this many (docs/conformance.md, "The simulated
/// distribution").
pub const SIM_SEEDS: u32 = 8;

/// The stream of a seed's random numbers that orders the tasks.
const ORDER_STREAM: u64 = 2000;

/// The scenario of simulated seed `k` (0-based): the file's seed plus `k`,
/// and its tasks in an order of their own. The real workers all wake at one
/// common start, in an order the harness does not control, and which task is
/// placed first decides where unpinned tasks settle; the model starts its
/// tasks at t = 0 in list order and has no other randomness for host-only
/// scenarios. So seed 0 keeps the file's order and seed k > 0 shuffles the
/// task list (Fisher-Yates, `SimRng` stream 2000 of its seed).
pub fn seeded(sc: &Scenario, k: u32) -> Scenario {
    let mut s = sc.clone();
    s.host.seed = sc.host.seed.saturating_add(u64::from(k)) % (oversub::scenario::MAX_SEED + 1);
    if k > 0 {
        let mut rng = oversub::engine::SimRng::new(s.host.seed, ORDER_STREAM);
        for i in (1..s.tasks.len()).rev() {
            let j = rng.below(i as u64 + 1) as usize;
            s.tasks.swap(i, j);
        }
    }
    s
}

/// The [`SIM_SEEDS`] simulated runs of `sc` on this machine ([`seeded`]),
/// each as [`RunFigures`] in the task order of the file.
pub fn sim_distribution(
    sc: &Scenario,
    h: &HostInfo,
    costs: &HostCosts,
    duration: Option<u64>,
) -> Result<Vec<RunFigures>, String> {
    let base = sim_figures(sc, h, costs, duration)?;
    let names: Vec<String> = base.iter().map(|t| t.0.clone()).collect();
    let mut out = vec![base];
    for k in 1..SIM_SEEDS {
        let f = sim_figures(&seeded(sc, k), h, costs, duration)?;
        let have: Vec<String> = f.iter().map(|t| t.0.clone()).collect();
        // The same tasks under the same names: only their order differs.
        if let Ok(mut v) = crate::judge::in_order_of(&names, &have, vec![f]) {
            out.extend(v.pop());
        }
    }
    Ok(out)
}

/// The simulated run of `sc` on this machine, as [`RunFigures`]; a run
/// the model cannot finish (its event budget, a loop at one instant) is
/// the run's one-line error.
pub fn sim_figures(
    sc: &Scenario,
    h: &HostInfo,
    costs: &HostCosts,
    duration: Option<u64>,
) -> Result<RunFigures, String> {
    let s = simulated(sc, h, costs);
    let r = oversub::run_scenario(&s, None, duration.map(oversub::engine::Nanos))
        .map_err(|e| format!("simulated run: {e}"))?;
    Ok(r.tasks
        .iter()
        .map(|t| {
            let lat = t.wakeup_latency_ns.clone();
            let periodic = sc.tasks.iter().any(|ts| {
                matches!(ts.kind, TaskKind::Periodic { .. })
                    && oversub::scenario::expanded_names(ts).contains(&t.name)
            });
            (
                t.name.clone(),
                t.cgroup.clone(),
                t.cpu_ns,
                periodic.then_some((lat.p50, lat.p99)),
                Some(t.nr_migrations),
            )
        })
        .collect())
}

/// The CPUs of a program's threads when every one is pinned (sorted), else
/// None.
pub fn program_cpus(sc: &Scenario) -> Option<Vec<u32>> {
    let mut v: Vec<u32> = Vec::new();
    for t in &sc.tasks {
        v.extend(t.cpus.as_ref()?);
    }
    v.sort_unstable();
    v.dedup();
    (!v.is_empty()).then_some(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host;

    #[test]
    fn simulated_side_uses_the_calibrated_costs() {
        let sc = Scenario::load(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../conform/periodic_vs_hog.toml"),
        )
        .unwrap();
        let h = HostInfo {
            cpus: 2,
            hz: 250,
            hz_source: host::HzSource::Default,
            release: "6.18.0".into(),
            preset: oversub::sched::KernelPreset::V6_12_117,
        };
        let costs = HostCosts {
            timer_wake: 15_000,
            idle_exit: 0,
            context_switch: 3_000,
            remote_wakeup: 0,
            migration: 0,
            yield_to: 0,
            nanosleep: 0,
            nanosleep_idle: 0,
            futex_wake: 0,
        };
        let s = simulated(&sc, &h, &costs);
        assert_eq!(s.host.costs, costs);
        let fig = sim_figures(&sc, &h, &costs, Some(200_000_000)).unwrap();
        let waker = fig.iter().find(|t| t.0 == "waker").unwrap();
        // Wake latency = interrupt path + the switch; the budget (100 us,
        // switch included) is kept: 5% of the CPU.
        // (plus the workers' 1 ns of timer slack).
        assert_eq!(waker.3.unwrap().0, 18_001);
        let share = waker.2 as f64 / fig.iter().map(|t| t.2).sum::<u64>() as f64;
        assert!((share - 0.05).abs() < 0.002, "{share}");
    }

    #[test]
    fn seeds_reorder_the_tasks_and_keep_the_file_order_first() {
        let sc = Scenario::parse(
            "t.toml",
            "[[task]]\nname=\"a\"\nkind=\"hog\"\n[[task]]\nname=\"b\"\nkind=\"hog\"\n\
             [[task]]\nname=\"c\"\nkind=\"hog\"\n[[task]]\nname=\"d\"\nkind=\"hog\"\n",
        )
        .unwrap();
        let order = |k| -> Vec<String> {
            seeded(&sc, k)
                .tasks
                .iter()
                .map(|t| t.name.clone())
                .collect()
        };
        assert_eq!(order(0), ["a", "b", "c", "d"]);
        assert_eq!(seeded(&sc, 3).host.seed, sc.host.seed + 3);
        let orders: Vec<_> = (0..SIM_SEEDS).map(order).collect();
        assert!(orders[1..].iter().any(|o| o != &orders[0]), "{orders:?}");
        // Deterministic: the same seed, the same order.
        assert_eq!(order(5), order(5));
    }

    #[test]
    fn the_distribution_is_in_the_files_task_order() {
        let sc = Scenario::parse(
            "t.toml",
            "[[cgroup]]\npath=\"/a\"\nweight=200\n[[task]]\nname=\"a\"\nkind=\"hog\"\ncgroup=\"/a\"\n\
             [[task]]\nname=\"b\"\nkind=\"hog\"\n[[task]]\nname=\"c\"\nkind=\"hog\"\n",
        )
        .unwrap();
        let h = HostInfo {
            cpus: 2,
            hz: 250,
            hz_source: host::HzSource::Default,
            release: "6.18.0".into(),
            preset: oversub::sched::KernelPreset::V6_12_117,
        };
        let d = sim_distribution(&sc, &h, &HostCosts::ZERO, Some(100_000_000)).unwrap();
        assert_eq!(d.len(), SIM_SEEDS as usize);
        for f in &d {
            let names: Vec<&str> = f.iter().map(|t| t.0.as_str()).collect();
            assert_eq!(names, ["a", "b", "c"]);
            assert_eq!(f[0].1, "/a");
        }
    }

    #[test]
    fn program_loop_calibration_runs_on_the_programs_cpus() {
        let sc = |j: &str| oversub::scenario::rtapp::scenario("p.json", j).unwrap();
        let pinned = sc(r#"{"global": {"duration": 1}, "tasks": {
            "a": {"cpus": [1], "run": 1000, "sleep": 1000},
            "b": {"cpus": [0, 1], "run": 1000}}}"#);
        assert_eq!(program_cpus(&pinned), Some(vec![0, 1]));
        let free = sc(r#"{"global": {"duration": 1}, "tasks": {
            "a": {"cpus": [1], "run": 1000, "sleep": 1000},
            "b": {"run": 1000}}}"#);
        assert_eq!(program_cpus(&free), None);
    }

    #[test]
    fn rejects_messaging_and_missing_cpus() {
        let sc = Scenario::parse(
            "t.toml",
            "[host]\ncpus=8\n[[task]]\nname=\"h\"\nkind=\"hog\"\ncpus=[3]\n",
        )
        .unwrap();
        assert!(host_only_check(&sc, 2).unwrap_err().contains("CPU 3"));
        let sc = Scenario::parse(
            "t.toml",
            "[host]\ncpus=2\n[[task]]\nname=\"m\"\nkind=\"messaging\"\nfds=1\n",
        )
        .unwrap();
        assert!(host_only_check(&sc, 2).unwrap_err().contains("messaging"));
    }

    #[test]
    fn rejects_programs_that_fork() {
        let f =
            std::env::temp_dir().join(format!("oversub-conform-fork-{}.json", std::process::id()));
        std::fs::write(
            &f,
            r#"{"global": {"duration": 1}, "tasks": {"a": {"run": 100, "fork": "b"}, "b": {"run": 5}}}"#,
        )
        .unwrap();
        let sc = Scenario::load(&f).unwrap();
        std::fs::remove_file(&f).unwrap();
        let e = host_only_check(&sc, 2).unwrap_err();
        assert!(e.contains("forks child processes"), "{e}");
    }

    #[test]
    fn rejects_vm_scenarios() {
        let sc = Scenario::load(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../scenarios/kvm-lock-holder-preemption.toml"),
        )
        .unwrap();
        let e = host_only_check(&sc, 16).unwrap_err();
        assert!(e.contains("[[vm]]") && e.contains("not host-only"), "{e}");
    }
}
