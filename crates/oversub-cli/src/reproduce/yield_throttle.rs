//! Section `yield-throttle` of `oversub reproduce`: Kuba Piecuch's
//! sched_yield() throttle RFC (seed 003) and its benchmark.
//!
//! * real: the benchmark (`kernel/functional/yield_bench.c`, our own:
//!   ITIMER_PROF and N threads, two per CPU, yielding in a loop) compiled
//!   with `cc` and run on this machine's kernel, which has no throttle: the
//!   baseline yield rate, the CPU per yield, the switches; and, where `perf`
//!   can sample the kernel, the share of samples in `update_curr()` (which
//!   inlines `account_group_exec_runtime()`);
//! * simulated: `scenarios/yield/yield-bench.toml` with `yield_interval` 0,
//!   1 ns and 10 us, its `work` the CPU per yield measured in the same run;
//! * published: the RFC's figures (`data/published.toml`).
//!
//! What the simulator cannot show: the contention of one cache line (the
//! atomic add in `account_group_exec_runtime()`); it has no caches. What it
//! can: how many yields reach `schedule()`, how many are throttled, and who
//! runs.

use oversub::engine::Nanos;
use oversub::scenario::overrides::parse_override;
use oversub::scenario::{parse_duration, Scenario};
use oversub::sched::HostCosts;
use serde::Deserialize;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// `[yield_throttle]` of the reproduce manifest.
#[derive(Deserialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub scenario: String,
    /// The benchmark's C source (relative to the manifest).
    pub program: String,
    pub seeds: Vec<u64>,
    pub duration: String,
    pub quick_seeds: Vec<u64>,
    pub quick_duration: String,
    /// The real run's length, whole seconds.
    pub real_seconds: u32,
    pub quick_real_seconds: u32,
}

/// The RFC's figures (`[yield_throttle]` of `data/published.toml`).
#[derive(Deserialize, Clone, Debug)]
pub struct Published {
    pub source: String,
    pub machine: String,
    pub threads: u32,
    pub atomic_add_pct_off: f64,
    pub atomic_add_pct_10us: Vec<f64>,
    pub unthrottled_change_10us_pct: f64,
    pub penalty_1ns_pct: Vec<f64>,
    pub lockup_atomic_add_pct: f64,
}

/// The intervals the section sweeps, ns, with their labels.
pub const INTERVALS: [(u64, &str); 3] = [(0, "0 (off)"), (1, "1 ns"), (10_000, "10 us")];

/// One real run of the benchmark.
#[derive(Clone, Debug)]
pub struct RealBench {
    pub threads: u32,
    pub seconds: u32,
    pub yields: u64,
    pub cpu_ns: u64,
    pub nivcsw: u64,
    pub per_thread: Vec<u64>,
    /// Share of cpu-clock samples in update_curr(), or why not measured.
    pub perf: Result<f64, String>,
}

/// Parses the benchmark's output.
pub fn parse_bench(text: &str) -> Option<RealBench> {
    let first = text.lines().next()?;
    let kv = |k: &str| -> Option<u64> {
        first
            .split_whitespace()
            .find_map(|f| f.strip_prefix(k)?.strip_prefix('='))?
            .parse()
            .ok()
    };
    let per_thread = text
        .lines()
        .skip(1)
        .filter_map(|l| {
            l.split_whitespace()
                .find_map(|f| f.strip_prefix("yields="))?
                .parse()
                .ok()
        })
        .collect();
    Some(RealBench {
        threads: kv("threads")? as u32,
        seconds: kv("seconds")? as u32,
        yields: kv("yields")?,
        cpu_ns: kv("cpu_ns")?,
        nivcsw: kv("nivcsw")?,
        per_thread,
        perf: Err("not tried".into()),
    })
}

/// `perf report --stdio --sort sym` text: the percentage of `update_curr`.
pub fn parse_perf_share(text: &str, sym: &str) -> Option<f64> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .find(|l| l.split_whitespace().last() == Some(sym))
        .and_then(|l| l.split_whitespace().next()?.strip_suffix('%')?.parse().ok())
}

fn compile(src: &Path, dir: &Path) -> Result<PathBuf, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let bin = dir.join("yield_bench");
    let o = Command::new("cc")
        .args(["-O2", "-pthread", "-o"])
        .arg(&bin)
        .arg(src)
        .output()
        .map_err(|e| format!("cc: {e} (scripts/install-deps.sh installs build-essential)"))?;
    if !o.status.success() {
        return Err(format!(
            "cc {}: {}",
            src.display(),
            String::from_utf8_lossy(&o.stderr)
                .lines()
                .next()
                .unwrap_or("")
        ));
    }
    Ok(bin)
}

/// Whether perf can count cycles here (a VM without a PMU cannot).
fn perf_cycles_note() -> String {
    match Command::new("perf")
        .args(["stat", "-x,", "-e", "cycles", "true"])
        .output()
    {
        Ok(o) => {
            let e = String::from_utf8_lossy(&o.stderr);
            if e.contains("not supported") || e.contains("not counted") {
                "perf cannot count cycles here (`perf stat -e cycles` says <not supported>: the machine is a VM without a PMU), so the share is of cpu-clock (hrtimer) samples".into()
            } else {
                "perf counts cycles here; the share below is of cpu-clock samples all the same"
                    .into()
            }
        }
        Err(e) => format!("perf not runnable ({e})"),
    }
}

/// Runs the benchmark with `threads` for `secs`, sampling with perf when it
/// can.
fn run_real(bin: &Path, threads: u32, secs: u32, dir: &Path) -> Result<RealBench, String> {
    let data = dir.join("perf.data");
    let perf = Command::new("perf")
        .args(["record", "-q", "-e", "cpu-clock", "-a", "-o"])
        .arg(&data)
        .arg("--")
        .arg(bin)
        .args([threads.to_string(), secs.to_string()])
        .output();
    let (out, perf_ok) = match perf {
        Ok(o) if o.status.success() => (String::from_utf8_lossy(&o.stdout).into_owned(), true),
        _ => {
            let o = Command::new(bin)
                .args([threads.to_string(), secs.to_string()])
                .output()
                .map_err(|e| format!("{}: {e}", bin.display()))?;
            (String::from_utf8_lossy(&o.stdout).into_owned(), false)
        }
    };
    let mut b = parse_bench(&out).ok_or_else(|| format!("yield_bench output: {out:?}"))?;
    b.perf = if perf_ok {
        let rep = Command::new("perf")
            .args([
                "report",
                "--stdio",
                "--sort",
                "sym",
                "--comm",
                "yield_bench",
                "-i",
            ])
            .arg(&data)
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        match parse_perf_share(&rep, "update_curr") {
            Some(p) => Ok(p),
            None => Err(format!(
                "no cpu-clock sample of the benchmark falls in update_curr(): it runs with the rq lock held and interrupts off, where the hrtimer behind cpu-clock cannot fire, so its time is billed where interrupts come back on (finish_task_switch: {} of the benchmark's samples); only an NMI-driven cycles event could see it, and this VM has no PMU",
                parse_perf_share(&rep, "finish_task_switch.isra.0")
                    .or_else(|| parse_perf_share(&rep, "finish_task_switch"))
                    .map_or("none".into(), |p| format!("{p:.1}%"))
            )),
        }
    } else {
        Err("perf record failed".into())
    };
    let _ = std::fs::remove_file(&data);
    Ok(b)
}

/// One simulated interval: means over seeds.
#[derive(Clone, Copy, Debug, Default)]
pub struct SimFig {
    pub calls_per_s: f64,
    pub scheduled_per_s: f64,
    pub throttled_per_s: f64,
    pub switches_per_s: f64,
    /// The smallest and largest thread CPU share, % of all threads' CPU.
    pub min_cpu_pct: f64,
    pub max_cpu_pct: f64,
}

fn simulate(
    file: &Path,
    interval: u64,
    work: Option<u64>,
    costs: Option<HostCosts>,
    seeds: &[u64],
    d: Nanos,
) -> Result<SimFig, String> {
    let mut sets = vec![format!("host.yield.yield_interval={interval}ns")];
    if let Some(w) = work {
        sets.push(format!("task.0.work={w}ns"));
        sets.push(format!("task.1.work={w}ns"));
    }
    let ov: Result<Vec<_>, String> = sets.iter().map(|s| parse_override(s)).collect();
    let mut sc = Scenario::load_with(file, &ov?).map_err(|e| e.to_string())?;
    if let Some(c) = costs {
        sc.host.costs = c;
    }
    if work.is_some() {
        // The measured CPU per yield includes the switch: not charged twice.
        sc.host.costs.context_switch = 0;
    }
    let mut f = SimFig::default();
    let secs = d.0 as f64 / 1e9;
    for &s in seeds {
        let opts = oversub::RunOptions::default()
            .seed(Some(s))
            .duration(Some(d));
        let r = oversub::run(&sc, opts).map_err(|e| format!("{}: {e}", file.display()))?;
        let calls: u64 = r.tasks.iter().map(|t| t.nr_yields).sum();
        let sw: u64 = r.tasks.iter().map(|t| t.nr_involuntary_switches).sum();
        f.calls_per_s += calls as f64 / secs;
        f.scheduled_per_s += r.yield_stats.yields_scheduled as f64 / secs;
        f.throttled_per_s += r.yield_stats.yields_throttled as f64 / secs;
        f.switches_per_s += sw as f64 / secs;
        let tot: u64 = r.tasks.iter().map(|t| t.cpu_ns).sum::<u64>().max(1);
        let pct: Vec<f64> = r
            .tasks
            .iter()
            .map(|t| 100.0 * t.cpu_ns as f64 / tot as f64)
            .collect();
        f.min_cpu_pct += pct.iter().cloned().fold(f64::INFINITY, f64::min);
        f.max_cpu_pct += pct.iter().cloned().fold(0.0, f64::max);
    }
    let n = seeds.len().max(1) as f64;
    Ok(SimFig {
        calls_per_s: f.calls_per_s / n,
        scheduled_per_s: f.scheduled_per_s / n,
        throttled_per_s: f.throttled_per_s / n,
        switches_per_s: f.switches_per_s / n,
        min_cpu_pct: f.min_cpu_pct / n,
        max_cpu_pct: f.max_cpu_pct / n,
    })
}

fn dur(f: &str, v: &str) -> Result<Nanos, String> {
    match parse_duration(v) {
        Ok(d) if d.0 > 0 => Ok(d),
        Ok(_) => Err(format!("{f}: must be positive")),
        Err(m) => Err(format!("{f}: {m}")),
    }
}

/// Runs the section; `costs` are the host costs calibrated in this run (by
/// the eevdf-latency section), if any. Returns its markdown.
pub fn run(
    cfg: &Config,
    manifest_dir: &Path,
    published: Option<&Published>,
    quick: bool,
    costs: Option<HostCosts>,
) -> Result<String, String> {
    let file = manifest_dir.join(&cfg.scenario);
    let (seeds, d, secs) = if quick {
        (
            &cfg.quick_seeds,
            dur("yield_throttle.quick_duration", &cfg.quick_duration)?,
            cfg.quick_real_seconds,
        )
    } else {
        (
            &cfg.seeds,
            dur("yield_throttle.duration", &cfg.duration)?,
            cfg.real_seconds,
        )
    };
    if seeds.is_empty() || !(1..=60).contains(&secs) {
        return Err(format!(
            "yield_throttle: seeds {seeds:?}, real_seconds {secs}: allowed a non-empty seed list and 1..=60 s"
        ));
    }
    let sc = Scenario::load(&file).map_err(|e| e.to_string())?;
    let threads: u32 = sc.tasks.iter().map(|t| t.count).sum();
    let mut md = String::new();
    let _ = writeln!(
        md,
        "# Section yield-throttle: the sched_yield() throttle RFC's benchmark (seed 003)\n"
    );
    // Real: the benchmark on this kernel (no throttle).
    // The compiled benchmark and perf's data are scratch, not outputs.
    let scratch = std::env::temp_dir().join(format!("oversub-yield-bench-{}", std::process::id()));
    let real = compile(&manifest_dir.join(&cfg.program), &scratch)
        .and_then(|bin| run_real(&bin, threads, secs, &scratch));
    let _ = std::fs::remove_dir_all(&scratch);
    let work = match &real {
        Ok(b) if b.yields > 0 => Some((b.cpu_ns / b.yields).max(100)),
        _ => None,
    };
    match &real {
        Ok(b) => {
            let _ = writeln!(
                md,
                "real (this machine's kernel, no throttle): `yield_bench {} {}` (ITIMER_PROF every 1 ms, {} threads, two per CPU): {} yields in {} s = {:.0}/s, CPU per yield {} ns (the process's CPU time / yields), {:.0} involuntary switches/s; per thread {:?}.\n",
                b.threads,
                b.seconds,
                b.threads,
                b.yields,
                b.seconds,
                b.yields as f64 / f64::from(b.seconds.max(1)),
                b.cpu_ns / b.yields.max(1),
                b.nivcsw as f64 / f64::from(b.seconds.max(1)),
                b.per_thread
            );
            let _ = writeln!(md, "{}.", perf_cycles_note());
            match &b.perf {
                Ok(p) => {
                    let _ = writeln!(md, "Share of all CPUs' cpu-clock samples in update_curr() (which inlines account_group_exec_runtime(), the RFC's atomic add) during the run: {p:.2}%. On 2 CPUs two threads share each CPU, so at most two CPUs add to the cache line at once: no contention to speak of.\n");
                }
                Err(e) => {
                    let _ = writeln!(md, "update_curr() share not measured: {e}.\n");
                }
            }
        }
        Err(e) => {
            let _ = writeln!(md, "real: not run ({e}).\n");
        }
    }
    let _ = writeln!(
        md,
        "Simulated: `{}` ({threads} yield_loop threads, two per CPU), work per loop {} (the measured CPU per yield, which includes the switch: the model's context_switch is set to 0 here so that it is not charged twice; the other host costs are the ones calibrated in this run), {} s per run, seeds {seeds:?}.\n",
        cfg.scenario,
        work.map_or("from the scenario (no measurement)".to_string(), |w| format!("{w} ns")),
        d.0 as f64 / 1e9
    );
    let cpus = f64::from(sc.host.cpus.max(1));
    let _ = writeln!(md, "Rates are per CPU-second (the real process's CPU time; the simulated CPUs are busy all the time), so a busy machine does not change them.\n");
    let _ = writeln!(md, "| run | yield_interval | sched_yield() calls | reaching schedule() | throttled | switches | change in unthrottled yields | thread share min..max % of the threads' CPU |\n|---|---|---|---|---|---|---|---|");
    if let Ok(b) = &real {
        let cs = b.cpu_ns.max(1) as f64 / 1e9;
        let _ = writeln!(
            md,
            "| real {} | none (no knob) | {:.0} | all (no throttle) | 0 | {:.0} | - | {} |",
            oversub_conform::host::HostInfo::detect().release,
            b.yields as f64 / cs,
            b.nivcsw as f64 / cs,
            {
                let tot: u64 = b.per_thread.iter().sum::<u64>().max(1);
                let share = |y: u64| 100.0 * y as f64 / tot as f64;
                let mn = b.per_thread.iter().copied().min().unwrap_or(0);
                let mx = b.per_thread.iter().copied().max().unwrap_or(0);
                format!("{:.1}..{:.1} (share of the yields)", share(mn), share(mx))
            }
        );
    }
    let mut base = None;
    for (ns, label) in INTERVALS {
        let f = simulate(&file, ns, work, costs, seeds, d)?;
        let b = *base.get_or_insert(f.scheduled_per_s);
        let change = if b > 0.0 {
            format!("{:+.0}%", 100.0 * (f.scheduled_per_s - b) / b)
        } else {
            "-".into()
        };
        let _ = writeln!(
            md,
            "| simulated {} | {label} | {:.0} | {:.0} | {:.0} | {:.0} | {change} | {:.1}..{:.1} |",
            sc.host.kernel,
            f.calls_per_s / cpus,
            f.scheduled_per_s / cpus,
            f.throttled_per_s / cpus,
            f.switches_per_s / cpus,
            f.min_cpu_pct,
            f.max_cpu_pct
        );
    }
    md.push('\n');
    if let Some(p) = published {
        let _ = writeln!(
            md,
            "## The RFC's figures ({}, not this machine)\n",
            p.machine
        );
        let _ = writeln!(md, "| figure | RFC | here |\n|---|---|---|");
        let _ = writeln!(
            md,
            "| CPU time in the atomic add, knob 0, N = {} | ~{}% | not measurable: the simulator has no caches; real: see the update_curr() share above (2 CPUs) |",
            p.threads, p.atomic_add_pct_off
        );
        let _ = writeln!(
            md,
            "| the same with yield_interval_ns = 10000 | {}-{}% | not measurable (as above) |",
            p.atomic_add_pct_10us.first().copied().unwrap_or(f64::NAN),
            p.atomic_add_pct_10us.last().copied().unwrap_or(f64::NAN)
        );
        let _ = writeln!(
            md,
            "| unthrottled yields, 10 us against 0 | {:+}% | simulated: the \"change\" column above |",
            p.unthrottled_change_10us_pct
        );
        let _ = writeln!(
            md,
            "| cost of the throttle code at 1 ns (low thread counts) | {}-{}% | not modelled: the check costs no CPU in the model, so 1 ns equals 0 there |",
            p.penalty_1ns_pct.first().copied().unwrap_or(f64::NAN),
            p.penalty_1ns_pct.last().copied().unwrap_or(f64::NAN)
        );
        let _ = writeln!(
            md,
            "| the production lockup: cycles in the atomic add | ~{}% | not reproducible here |",
            p.lockup_atomic_add_pct
        );
        let _ = writeln!(md, "\nSource: {}\n", p.source);
    }
    let _ = writeln!(md, "What the simulator cannot show: a cache line's contention (the RFC's 80% of CPU time in one atomic add comes from 60 cores adding to one line; the model has no caches and charges update_curr() nothing). What it can: how many yields reach schedule() and how many the throttle stops, and who runs (each thread's CPU share). The kernel patch's effect test (kernel/functional) counts the same on a real kernel with the knob at 0, 1 ns and 10 us.\n");
    Ok(md)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bench_output_parses() {
        let t = "threads=4 seconds=2 prof=1 yields=357460 cpu_ns=570485000 nvcsw=7 nivcsw=357322 sigprof=28\nthread=0 cpu=0 yields=89927\nthread=1 cpu=0 yields=3\n";
        let b = parse_bench(t).unwrap();
        assert_eq!((b.threads, b.yields, b.nivcsw), (4, 357460, 357322));
        assert_eq!(b.per_thread, vec![89927, 3]);
        assert!(parse_bench("nothing").is_none());
    }

    #[test]
    fn perf_share_of_a_symbol() {
        let t = "# Overhead  Symbol\n    12.50%  [k] update_curr\n     3.00%  [k] do_sched_yield\n";
        assert_eq!(parse_perf_share(t, "update_curr"), Some(12.5));
        assert_eq!(parse_perf_share(t, "nothing"), None);
    }
}
