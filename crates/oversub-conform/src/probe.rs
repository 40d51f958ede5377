//! The timer-wake probe of a conform run: batches run right before each real
//! run of a scenario with periodic tasks, on the CPUs those tasks use and
//! shaped like them; their median gives the simulated side its
//! `timer_wake`, their spread widens the latency tolerances.

use crate::calibrate;
use oversub::scenario::{Scenario, TaskKind};
use oversub::sched::HostCosts;
use serde::Serialize;

/// Samples per CPU of the timer-wake probe batch run before each real run
/// of a scenario with periodic tasks (~0.4 s per CPU).
pub const PROBE_BATCH_SAMPLES: u32 = 400;

/// The timer-wake probe batches run before each real run of a scenario
/// (`real::timer_probe_batch`), on the CPUs its periodic tasks use.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct ProbeSummary {
    pub cpus: Vec<u32>,
    /// Per batch (one before each real run and one after the last), the
    /// median per CPU, ns.
    pub batches: Vec<Vec<u64>>,
    /// The median over the batches of each batch's mean over the CPUs, ns:
    /// the simulated `timer_wake` + `context_switch`.
    pub timer_hog_ns: u64,
    /// max - min of the batches' means, ns: how far the host's wake path
    /// moved between the runs, added to the latency tolerance.
    pub spread_ns: u64,
    /// What the probe's sleeper did between wakeups ([`probe_shape`]): its
    /// shortest sleep and the CPU it burnt per wakeup, ns.
    pub sleep_ns: u64,
    pub burn_ns: u64,
    /// One sleeper free to run on every CPU of `cpus` (a hog on each), one
    /// median per batch, instead of one pinned probe per CPU.
    pub unpinned: bool,
}

impl ProbeSummary {
    /// Summarises the batches (each one value per CPU of `cpus`).
    pub fn of(cpus: Vec<u32>, batches: Vec<Vec<u64>>) -> Option<ProbeSummary> {
        let means: Vec<u64> = batches
            .iter()
            .filter(|b| !b.is_empty())
            .map(|b| b.iter().sum::<u64>() / b.len() as u64)
            .collect();
        let min = *means.iter().min()?;
        let max = *means.iter().max()?;
        let mut sorted = means.clone();
        sorted.sort_unstable();
        let n = sorted.len();
        Some(ProbeSummary {
            cpus,
            batches,
            // The median (of an even count, the mean of the middle two).
            timer_hog_ns: (sorted[(n - 1) / 2] + sorted[n / 2]) / 2,
            spread_ns: max - min,
            sleep_ns: calibrate::ProbeShape::BARE.sleep,
            burn_ns: 0,
            unpinned: false,
        })
    }

    /// The calibrated costs with `timer_wake` from these batches (the
    /// switch into the woken task stays `context_switch`).
    pub fn costs(&self, base: &HostCosts) -> HostCosts {
        HostCosts {
            timer_wake: self.timer_hog_ns.saturating_sub(base.context_switch),
            ..*base
        }
    }

    /// The sentence of the scenario's result line.
    pub fn describe(&self, base: &HostCosts) -> String {
        let us = |v: u64| format!("{:.1}", v as f64 / 1000.0);
        let cpus: Vec<String> = self.cpus.iter().map(|c| c.to_string()).collect();
        let batches: Vec<String> = self
            .batches
            .iter()
            .map(|b| b.iter().map(|&v| us(v)).collect::<Vec<_>>().join("/"))
            .collect();
        let shape = if self.burn_ns > 0 {
            format!(
                " (sleeping {:.1}-{:.1} ms, burning {} us per wakeup)",
                self.sleep_ns as f64 / 1e6,
                (self.sleep_ns + 1_000_000) as f64 / 1e6,
                us(self.burn_ns)
            )
        } else {
            String::new()
        };
        let (what, mean) = match (self.unpinned, self.cpus.len() > 1) {
            (true, _) => ("a hog process on each of CPUs", ""),
            (false, true) => ("a hog process on CPU", ", mean over the CPUs"),
            (false, false) => ("a hog process on CPU", ""),
        };
        format!(
            "timer wake{} against {what} {}{shape} before each run and after the last: {} us (batches {} us{mean}), simulated timer_wake {} us + context_switch {} us; spread {} us added to the latency tolerances",
            if self.unpinned { " of an unpinned sleeper" } else { "" },
            cpus.join("+"),
            us(self.timer_hog_ns),
            batches.join(", "),
            us(self.costs(base).timer_wake),
            us(base.context_switch),
            us(self.spread_ns)
        )
    }
}

/// The CPUs a scenario's periodic tasks can run on (sorted; every CPU of
/// the machine if one is unpinned), empty without periodic tasks.
pub fn periodic_cpus(sc: &Scenario, cpus: u32) -> Vec<u32> {
    let mut v: Vec<u32> = Vec::new();
    for t in &sc.tasks {
        if let TaskKind::Periodic { .. } = t.kind {
            match &t.cpus {
                Some(c) => v.extend(c.iter().copied().filter(|&c| c < cpus)),
                None => v.extend(0..cpus),
            }
        }
    }
    v.sort_unstable();
    v.dedup();
    v
}

/// Whether every periodic task of `sc` is free to run on every CPU (no
/// affinity), so that its wakeups go through `select_task_rq_fair()`.
pub fn periodic_unpinned(sc: &Scenario) -> bool {
    let mut any = false;
    for t in &sc.tasks {
        if let TaskKind::Periodic { .. } = t.kind {
            if t.cpus.is_some() {
                return false;
            }
            any = true;
        }
    }
    any
}

/// The shape of a scenario's timer-wake probe: its first periodic task's
/// period and run ([`calibrate::ProbeShape::periodic`]), so that the probe's
/// sleeper sleeps and burns as that task does and its wakeup pays the same
/// kernel path; the bare probe without periodic tasks. Traced on this host
/// (docs/conformance.md, "The wake path of a periodic task"), the bare probe
/// (0.5-1.5 ms sleeps, nothing burnt) paid 5-15 us less than the unpinned
/// periodic tasks' prompt wakeups in every stage from the timer interrupt
/// to the return to user space.
pub fn probe_shape(sc: &Scenario) -> calibrate::ProbeShape {
    sc.tasks
        .iter()
        .find_map(|t| match t.kind {
            TaskKind::Periodic { period, run, .. } => {
                Some(calibrate::ProbeShape::periodic(period.0, run.0))
            }
            _ => None,
        })
        .unwrap_or(calibrate::ProbeShape::BARE)
}

/// Samples per CPU of a probe batch of `shape`: [`PROBE_BATCH_SAMPLES`],
/// fewer for long periods so that a batch takes about a second per CPU
/// (at least 100).
pub fn probe_samples(shape: calibrate::ProbeShape) -> u32 {
    let per = shape.sleep + 500_000 + shape.burn;
    ((1_000_000_000 / per.max(1)) as u32).clamp(100, PROBE_BATCH_SAMPLES)
}

/// Three probe batches on CPUs 0 and 1 with per-batch means 20, 16 and
/// 30 us (median 20 us, spread 14 us): the unit tests' fixture.
#[cfg(test)]
pub(crate) fn three_batches() -> ProbeSummary {
    ProbeSummary::of(
        vec![0, 1],
        vec![
            vec![18_000, 22_000],
            vec![16_000, 16_000],
            vec![30_000, 30_000],
        ],
    )
    .expect("three batches")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_batches_give_the_wake_cost_and_their_spread() {
        let p = three_batches();
        assert_eq!(p.timer_hog_ns, 20_000, "median of the batch means");
        assert_eq!(p.spread_ns, 14_000);
        let base = HostCosts {
            timer_wake: 1,
            idle_exit: 7,
            context_switch: 3_000,
            remote_wakeup: 9,
            migration: 0,
            yield_to: 0,
            nanosleep: 0,
            nanosleep_idle: 0,
            futex_wake: 0,
        };
        let c = p.costs(&base);
        assert_eq!(c.timer_wake + c.context_switch, 20_000);
        assert_eq!((c.idle_exit, c.remote_wakeup), (7, 9));
        assert!(
            p.describe(&base).contains("CPU 0+1"),
            "{}",
            p.describe(&base)
        );
        assert_eq!(ProbeSummary::of(vec![0], vec![]), None);
        let even = ProbeSummary::of(vec![0], vec![vec![14], vec![15], vec![23], vec![28]]);
        assert_eq!(even.unwrap().timer_hog_ns, 19);
    }

    #[test]
    fn periodic_cpus_are_the_pinned_ones_or_all() {
        let sc = |t: &str| Scenario::parse("t.toml", t).unwrap();
        let hog = "[[task]]\nname=\"h\"\nkind=\"hog\"\ncpus=[0]\n";
        assert!(periodic_cpus(&sc(hog), 2).is_empty());
        let pinned = format!(
            "{hog}[[task]]\nname=\"p\"\nkind=\"periodic\"\nperiod=\"2ms\"\nrun=\"100us\"\ncpus=[1]\n"
        );
        assert_eq!(periodic_cpus(&sc(&pinned), 2), vec![1]);
        let unpinned = format!(
            "{hog}[[task]]\nname=\"p\"\nkind=\"periodic\"\nperiod=\"2ms\"\nrun=\"100us\"\n"
        );
        assert_eq!(periodic_cpus(&sc(&unpinned), 2), vec![0, 1]);
        assert!(!periodic_unpinned(&sc(hog)));
        assert!(!periodic_unpinned(&sc(&pinned)));
        assert!(periodic_unpinned(&sc(&unpinned)));
        let both = format!(
            "{pinned}[[task]]\nname=\"q\"\nkind=\"periodic\"\nperiod=\"2ms\"\nrun=\"100us\"\n"
        );
        assert!(!periodic_unpinned(&sc(&both)), "one pinned periodic task");
    }

    #[test]
    fn probe_is_shaped_like_the_first_periodic_task() {
        let sc = |t: &str| Scenario::parse("t.toml", t).unwrap();
        let hog = "[[task]]\nname=\"h\"\nkind=\"hog\"\n";
        assert_eq!(probe_shape(&sc(hog)), calibrate::ProbeShape::BARE);
        assert_eq!(
            probe_samples(calibrate::ProbeShape::BARE),
            PROBE_BATCH_SAMPLES
        );
        let p = format!(
            "{hog}[[task]]\nname=\"p\"\nkind=\"periodic\"\nperiod=\"5ms\"\nrun=\"1ms\"\n\
             [[task]]\nname=\"q\"\nkind=\"periodic\"\nperiod=\"10ms\"\nrun=\"2ms\"\n"
        );
        let shape = probe_shape(&sc(&p));
        // Sleeps 3.5-4.5 ms (period - run, within -0.5/+0.5 ms), burns run.
        assert_eq!((shape.sleep, shape.burn), (3_500_000, 1_000_000));
        // About a second per CPU: 1 s / (3.5 + 0.5 + 1 ms) = 200 samples.
        assert_eq!(probe_samples(shape), 200);
        // A short period keeps the bare probe's shortest sleep.
        let short = calibrate::ProbeShape::periodic(1_000_000, 400_000);
        assert_eq!((short.sleep, short.burn), (500_000, 400_000));
        // A long one is held to at least 100 samples.
        assert_eq!(
            probe_samples(calibrate::ProbeShape::periodic(100_000_000, 1)),
            100
        );
        let s = ProbeSummary {
            sleep_ns: shape.sleep,
            burn_ns: shape.burn,
            unpinned: true,
            ..ProbeSummary::of(vec![0, 1], vec![vec![30_000]]).unwrap()
        };
        let d = s.describe(&HostCosts::ZERO);
        assert!(d.contains("unpinned sleeper against a hog process on each of CPUs 0+1 (sleeping 3.5-4.5 ms, burning 1000.0 us"), "{d}");
    }
}
