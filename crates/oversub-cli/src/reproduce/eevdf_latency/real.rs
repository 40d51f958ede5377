//! The real side of `eevdf-latency`: Debian's rt-tests on the running kernel.
//!
//! Per nice level and run: conform's timer-wake probe batch (shaped like a
//! 1 ms periodic task, unpinned), then `hackbench -p -T -g 2 -f 10` (pipes,
//! threads, looping until killed) and `nice -n N cyclictest --policy=other
//! -t 1 -i 1000 -D S -q -h 100000` in a cgroup of weight 10000 (as conform's
//! workers, so that other load on the machine takes little from them).
//! `cyclictest -p 0` is not used: `-p` switches cyclictest to SCHED_FIFO
//! (it prints "defaulting realtime priority to 2"), so the measurement would
//! not be SCHED_OTHER. Before the runs: conform's calibration (host costs)
//! and hackbench's CPU per message (its CPU time from the shell's `times`
//! over a fixed loop count), both in the same run.
//!
//! Scheduler features: where `/sys/kernel/debug/sched/features` can be
//! written, RUN_TO_PARITY and PREEMPT_SHORT are toggled for extra columns
//! and restored by a guard on every exit path (normal end, error, Ctrl-C);
//! where it cannot (kernel lockdown here), one line says so.

use super::Measured;
use oversub::scenario::Scenario;
use oversub_conform::calibrate::ProbeShape;
use oversub_conform::host::{self, CpuController, HostInfo};
use oversub_conform::real::{calibrate_in_cgroup, timer_probe_batch, CgroupTree};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};

/// One cyclictest run's figures, us.
#[derive(Clone, Debug)]
pub struct RunFig {
    pub avg_us: f64,
    /// From the histogram; None when more than half the samples overflowed.
    pub p50_us: Option<f64>,
    pub max_us: f64,
}

/// The runs of one nice level with their probe batches (ns).
#[derive(Clone, Debug, Default)]
pub struct NiceRuns {
    pub runs: Vec<RunFig>,
    pub probes_ns: Vec<u64>,
}

impl NiceRuns {
    pub fn avg_median(&self) -> f64 {
        median_f(&self.runs.iter().map(|r| r.avg_us).collect::<Vec<_>>())
    }
}

pub struct RealResult {
    pub measured: Measured,
    /// In the order of the nice levels asked for.
    pub by_nice: Vec<NiceRuns>,
    /// Lines for the summary (machine, calibration, features).
    pub notes: String,
}

pub fn median(v: &[u64]) -> u64 {
    let mut v = v.to_vec();
    v.sort_unstable();
    if v.is_empty() {
        0
    } else {
        v[(v.len() - 1) / 2]
    }
}

/// The median of `v` (the mean of the middle two for an even count).
pub fn median_f(v: &[f64]) -> f64 {
    let mut v: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn find_bin(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// The debugfs file of the scheduler features.
const FEATURES: &str = "/sys/kernel/debug/sched/features";

/// Restores the scheduler features it changed when dropped.
struct FeatureGuard {
    changed: Vec<String>,
}

impl FeatureGuard {
    /// Writes `NO_NAME` (or `NAME`) and remembers to write the opposite back.
    fn set(&mut self, name: &str, on: bool) -> Result<(), String> {
        let (w, back) = if on {
            (name.to_string(), format!("NO_{name}"))
        } else {
            (format!("NO_{name}"), name.to_string())
        };
        std::fs::write(FEATURES, &w).map_err(|e| format!("{FEATURES} <- {w}: {e}"))?;
        self.changed.push(back);
        Ok(())
    }
}

impl Drop for FeatureGuard {
    fn drop(&mut self) {
        for b in self.changed.drain(..).rev() {
            let _ = std::fs::write(FEATURES, &b);
        }
    }
}

/// Whether the features can be toggled: Ok(the current line) or why not.
fn features_toggleable() -> Result<String, String> {
    let cur = std::fs::read_to_string(FEATURES).map_err(|e| format!("{FEATURES}: {e}"))?;
    // Writing the current value of one feature back changes nothing.
    let rtp = if cur.split_whitespace().any(|w| w == "RUN_TO_PARITY") {
        "RUN_TO_PARITY"
    } else {
        "NO_RUN_TO_PARITY"
    };
    std::fs::write(FEATURES, rtp).map_err(|e| format!("{FEATURES} <- {rtp}: {e}"))?;
    Ok(cur.trim().to_string())
}

/// Child processes killed and reaped when dropped.
struct Kids(Vec<Child>);

impl Drop for Kids {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Spawns `cmd` through `sh`, which first moves itself into `procs` (so the
/// program and every thread it makes start in the cgroup).
/// With `to`, its stdout goes to that file (cyclictest's histogram is
/// larger than a pipe holds), else to a pipe.
fn spawn_in(procs: &Path, cmd: &str, to: Option<&Path>) -> Result<Child, String> {
    let script = format!("echo $$ > '{}' && exec {cmd}", procs.display());
    let stdout = match to {
        Some(p) => {
            Stdio::from(std::fs::File::create(p).map_err(|e| format!("{}: {e}", p.display()))?)
        }
        None => Stdio::piped(),
    };
    Command::new("sh")
        .arg("-c")
        .arg(&script)
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("sh -c {cmd}: {e}"))
}

/// cyclictest checks its privileges by switching to SCHED_FIFO, which a
/// cgroup v1 child without RT runtime refuses (EPERM, "Unable to change
/// scheduling policy!"): the run's cgroup gets a little (1% of the period)
/// while it exists, given back when dropped. The measured thread stays
/// SCHED_OTHER.
struct RtRuntime(Option<PathBuf>);

impl RtRuntime {
    fn grant(dir: &Path) -> Result<RtRuntime, String> {
        let f = dir.join("cpu.rt_runtime_us");
        if !f.exists() {
            return Ok(RtRuntime(None));
        }
        std::fs::write(&f, "10000").map_err(|e| format!("{} <- 10000: {e}", f.display()))?;
        Ok(RtRuntime(Some(f)))
    }
}

impl Drop for RtRuntime {
    fn drop(&mut self) {
        if let Some(f) = &self.0 {
            let _ = std::fs::write(f, "0");
        }
    }
}

fn empty_scenario() -> Result<Scenario, String> {
    let s = Scenario::parse("eevdf-latency", "[[task]]\nname = \"x\"\nkind = \"hog\"\n")
        .map_err(|e| e.to_string())?;
    Ok(Scenario {
        cgroups: Vec::new(),
        ..s
    })
}

/// hackbench's loop count for the CPU-per-message measurement.
const HB_LOOPS: u64 = 2000;
/// Messages of `hackbench -g 2 -f 10 -l L`: 2 groups x 10 senders x 10
/// receivers x L.
fn hb_messages(loops: u64) -> u64 {
    2 * 10 * 10 * loops
}
const HACKBENCH: &str = "hackbench -p -T -g 2 -f 10";

/// The children's user + system time printed by the shell's `times` (its
/// second line, "0m1.234s 0m0.567s"), ns.
pub fn parse_times(text: &str) -> Option<u64> {
    let line = text.lines().filter(|l| l.contains('m')).nth(1)?;
    let mut total = 0.0;
    for f in line.split_whitespace() {
        let (m, s) = f.split_once('m')?;
        let s = s.strip_suffix('s')?;
        total += m.parse::<f64>().ok()? * 60.0 + s.parse::<f64>().ok()?;
    }
    Some((total * 1e9) as u64)
}

/// hackbench's CPU per message on this machine, ns.
fn hackbench_msg_cpu(tree: &CgroupTree, stop: &AtomicBool) -> Result<u64, String> {
    let procs = tree.dir("/").join("cgroup.procs");
    let cmd = format!("sh -c '{HACKBENCH} -l {HB_LOOPS} >/dev/null 2>&1; times'");
    let child = spawn_in(&procs, &cmd, None)?;
    let mut kids = Kids(vec![child]);
    let t0 = std::time::Instant::now();
    loop {
        if stop.load(Ordering::SeqCst) {
            return Err("interrupted".into());
        }
        if let Ok(Some(_)) = kids.0[0].try_wait() {
            break;
        }
        if t0.elapsed().as_secs() > 120 {
            return Err("hackbench CPU measurement: no end after 120 s".into());
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let mut out = String::new();
    if let Some(mut so) = kids.0[0].stdout.take() {
        use std::io::Read;
        let _ = so.read_to_string(&mut out);
    }
    let ns = parse_times(&out).ok_or_else(|| format!("hackbench: no `times` output: {out:?}"))?;
    Ok(ns / hb_messages(HB_LOOPS))
}

/// cyclictest's `-h` output: (avg, p50, max) in us.
pub fn parse_cyclictest(text: &str) -> Option<RunFig> {
    let field = |key: &str| -> Option<f64> {
        text.lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
    };
    let total = field("# Total:")?;
    let avg = field("# Avg Latencies:")?;
    let max = field("# Max Latencies:")?;
    let mut seen = 0.0;
    let mut p50 = None;
    for l in text.lines().filter(|l| !l.starts_with('#')) {
        let mut it = l.split_whitespace();
        let (Some(b), Some(c)) = (it.next(), it.next()) else {
            continue;
        };
        let (Ok(b), Ok(c)) = (b.parse::<f64>(), c.parse::<f64>()) else {
            continue;
        };
        seen += c;
        if seen * 2.0 >= total && total > 0.0 {
            p50 = Some(b);
            break;
        }
    }
    Some(RunFig {
        avg_us: avg,
        p50_us: p50,
        max_us: max,
    })
}

/// One experiment: hackbench and cyclictest at `nice` for `secs`.
fn one_run(tree: &CgroupTree, nice: i32, secs: u32, stop: &AtomicBool) -> Result<RunFig, String> {
    let procs = tree.dir("/").join("cgroup.procs");
    let hist = std::env::temp_dir().join(format!(
        "oversub-eevdf-{}-cyclictest.txt",
        std::process::id()
    ));
    let hb = spawn_in(
        &procs,
        &format!("{HACKBENCH} -l 1000000000"),
        Some(Path::new("/dev/null")),
    )?;
    let mut kids = Kids(vec![hb]);
    // hackbench's threads start and fill the pipes first.
    std::thread::sleep(std::time::Duration::from_millis(300));
    let ct = spawn_in(
        &procs,
        &format!("nice -n {nice} cyclictest --policy=other -t 1 -i 1000 -D {secs} -q -h 100000"),
        Some(&hist),
    )?;
    kids.0.push(ct);
    let t0 = std::time::Instant::now();
    loop {
        if stop.load(Ordering::SeqCst) {
            return Err("interrupted".into());
        }
        if let Ok(Some(_)) = kids.0[1].try_wait() {
            break;
        }
        if t0.elapsed().as_secs() > u64::from(secs) + 30 {
            return Err("cyclictest: no end 30 s after its duration".into());
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    drop(kids);
    let out = std::fs::read_to_string(&hist).unwrap_or_default();
    let _ = std::fs::remove_file(&hist);
    parse_cyclictest(&out).ok_or_else(|| {
        format!(
            "cyclictest output not understood: {}",
            out.lines().take(3).collect::<Vec<_>>().join(" / ")
        )
    })
}

/// Why the real side cannot run here, if it cannot.
fn can_run() -> Result<CpuController, String> {
    if !rustix::process::geteuid().is_root() {
        return Err("not root".into());
    }
    for b in ["cyclictest", "hackbench", "nice", "sh"] {
        if find_bin(b).is_none() {
            return Err(format!(
                "{b} not found (scripts/install-deps.sh conform installs rt-tests)"
            ));
        }
    }
    host::detect_cpu_controller()
}

/// Measures every nice level `runs` times for `secs` seconds each.
pub fn measure(nices: &[i32], runs: u32, secs: u32) -> Result<RealResult, String> {
    let ctl = can_run()?;
    let stop = crate::progress::interrupt_flag();
    let _lock = oversub_conform::lock::machine_lock()?;
    let h = HostInfo::detect();
    let mut notes = String::new();
    let _ = writeln!(
        notes,
        "real: {} CPUs, kernel {} ({}), `{HACKBENCH}` and `nice -n N cyclictest --policy=other -t 1 -i 1000 -D {secs} -q -h 100000` in a cgroup of weight 10000; {runs} runs per nice level; {}.\n",
        h.cpus,
        h.release,
        h.hz_note(),
        ctl.describe()
    );
    let pid = std::process::id();
    let cal = calibrate_in_cgroup(&ctl, &format!("oversub-eevdf-{pid}-cal"), 500)?;
    let _ = writeln!(
        notes,
        "Host costs calibrated in this run (conform's probes, 500 samples): context_switch {} ns, timer_wake {} ns, idle_exit {} ns, remote_wakeup {} ns.\n",
        cal.costs.context_switch, cal.costs.timer_wake, cal.costs.idle_exit, cal.costs.remote_wakeup
    );
    let tree = CgroupTree::create(&ctl, &format!("oversub-eevdf-{pid}"), &empty_scenario()?)?;
    let _rt = RtRuntime::grant(&tree.dir("/"))?;
    let msg = hackbench_msg_cpu(&tree, &stop)?;
    let _ = writeln!(
        notes,
        "hackbench CPU per message measured in this run: {msg} ns (user + system time of `{HACKBENCH} -l {HB_LOOPS}` / {} messages); the simulation splits it evenly between sender and receiver.\n",
        hb_messages(HB_LOOPS)
    );
    // Features: toggled where the machine allows it, always restored.
    let toggle = features_toggleable();
    match &toggle {
        Ok(cur) => {
            let _ = writeln!(notes, "sched features readable and writable: {cur}\n");
        }
        Err(e) => {
            let _ = writeln!(
                notes,
                "sched features: toggling unavailable on this machine ({e}); real runs use the running kernel's defaults (RUN_TO_PARITY and PREEMPT_SHORT on).\n"
            );
        }
    }
    let shape = ProbeShape::periodic(1_000_000, 2_000);
    let samples = oversub_conform::probe::probe_samples(shape);
    let cpus: Vec<u32> = (0..h.cpus).collect();
    let mut by_nice = Vec::new();
    for (ni, &n) in nices.iter().enumerate() {
        let mut nr = NiceRuns::default();
        for k in 0..runs {
            let tag = format!("oversub-eevdf-{pid}-probe-{ni}-{k}");
            let p = timer_probe_batch(&ctl, &tag, &cpus, samples, shape, true, &stop)?;
            nr.probes_ns
                .push(p.iter().sum::<u64>() / p.len().max(1) as u64);
            nr.runs.push(one_run(&tree, n, secs, &stop)?);
        }
        let tag = format!("oversub-eevdf-{pid}-probe-{ni}-last");
        let p = timer_probe_batch(&ctl, &tag, &cpus, samples, shape, true, &stop)?;
        nr.probes_ns
            .push(p.iter().sum::<u64>() / p.len().max(1) as u64);
        by_nice.push(nr);
    }
    // Where the features can be toggled: the same at nice 0 with each off,
    // restored by the guard whatever happens.
    if toggle.is_ok() && nices.contains(&0) {
        for f in ["RUN_TO_PARITY", "PREEMPT_SHORT"] {
            let mut g = FeatureGuard {
                changed: Vec::new(),
            };
            g.set(f, false)?;
            let mut v = Vec::new();
            for _ in 0..runs {
                v.push(one_run(&tree, 0, secs, &stop)?.avg_us);
            }
            drop(g);
            let _ = writeln!(
                notes,
                "real NO_{f} at nice 0: average latency {} us (median of {runs} runs; restored after).\n",
                median_f(&v)
            );
        }
    }
    drop(_rt);
    drop(tree);
    Ok(RealResult {
        measured: Measured {
            host: Some(h),
            costs: Some(cal.costs),
            msg_cpu_ns: Some(msg),
        },
        by_nice,
        notes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cyclictest_histogram_gives_the_median() {
        let t = "# /dev/cpu_dma_latency set to 0us\n000010 000002\n000011 000001\n000030 000003\n# Total: 000000006\n# Min Latencies: 00010\n# Avg Latencies: 00020\n# Max Latencies: 00031\n# Histogram Overflows: 00000\n";
        let r = parse_cyclictest(t).unwrap();
        assert_eq!(r.p50_us, Some(11.0));
        assert_eq!(r.avg_us, 20.0);
        assert_eq!(r.max_us, 31.0);
        // More than half overflowed: no median.
        let o =
            "000010 000001\n# Total: 000000004\n# Avg Latencies: 00020\n# Max Latencies: 99999\n";
        assert_eq!(parse_cyclictest(o).unwrap().p50_us, None);
        assert!(parse_cyclictest("garbage").is_none());
    }

    #[test]
    fn shell_times_give_the_children_cpu() {
        let t = "0m0.001s 0m0.002s\n0m1.500s 1m0.250s\n";
        assert_eq!(parse_times(t), Some(61_750_000_000));
        assert_eq!(parse_times("0m0.001s 0m0.002s\n"), None);
    }

    #[test]
    fn median_of_even_and_odd() {
        assert_eq!(median_f(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median_f(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median_f(&[]).is_nan());
    }
}
