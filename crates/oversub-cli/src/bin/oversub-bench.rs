//! `make bench`: simulator speed measured against a lean event loop in one run.
//!
//! The reference is a bare binary-heap event loop (events `(time, seq, id)`, a
//! few arithmetic operations each, no model): the physical limit of an
//! event-driven design on the machine at hand. Every other figure is printed
//! as a ratio to it, measured in the same run, so the ratios hold across
//! machines and across load (absolute figures do not). Each measurement runs
//! in its own child process (this binary re-executed with `--one`) so that
//! its peak memory is its own. Time is the child's thread CPU time, so other
//! processes on the machine disturb the figures little; wall time is printed
//! too (simulated seconds per wall second). Each figure is the best of
//! `REPEATS` runs. Nothing here asserts a time.

use oversub::scenario::Scenario;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::path::Path;
use std::process::{Command, ExitCode};
use std::time::Instant;

/// Events processed by the lean loop.
const LEAN_EVENTS: u64 = 20_000_000;
/// Events pending in the lean loop's heap at any time.
const LEAN_PENDING: u32 = 1024;

fn thread_cpu_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// Peak resident set size in KiB: `VmHWM` of /proc/self/status, the figure
/// getrusage(2) reports as `ru_maxrss` on Linux.
fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

/// One measurement, as a child prints it and the parent reads it.
struct Sample {
    events: u64,
    sim_ns: u64,
    cpu_ns: u64,
    wall_ns: u64,
    rss_kib: u64,
    tasks: u64,
}

impl Sample {
    fn line(&self) -> String {
        format!(
            "{} {} {} {} {} {}",
            self.events, self.sim_ns, self.cpu_ns, self.wall_ns, self.rss_kib, self.tasks
        )
    }
    fn from_line(l: &str) -> Option<Sample> {
        let v: Vec<u64> = l
            .split_whitespace()
            .map(|x| x.parse().ok())
            .collect::<Option<_>>()?;
        (v.len() == 6).then(|| Sample {
            events: v[0],
            sim_ns: v[1],
            cpu_ns: v[2],
            wall_ns: v[3],
            rss_kib: v[4],
            tasks: v[5],
        })
    }
    fn events_per_cpu_s(&self) -> f64 {
        self.events as f64 * 1e9 / self.cpu_ns.max(1) as f64
    }
}

/// The lean loop: pop the earliest event, advance its id's state by one LCG
/// step, push its next occurrence.
fn lean_loop() -> Sample {
    let wall = Instant::now();
    let cpu = thread_cpu_ns();
    let mut state: Vec<u64> = (0..LEAN_PENDING as u64).collect();
    let mut heap: BinaryHeap<Reverse<(u64, u64, u32)>> = BinaryHeap::new();
    let mut seq = 0u64;
    for id in 0..LEAN_PENDING {
        heap.push(Reverse((id as u64, seq, id)));
        seq += 1;
    }
    let mut sum = 0u64;
    let mut now = 0;
    for _ in 0..LEAN_EVENTS {
        let Reverse((t, _, id)) = heap.pop().expect("the heap is never empty");
        now = t;
        let s = &mut state[id as usize];
        *s = s
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        sum = sum.wrapping_add(*s >> 33);
        heap.push(Reverse((t + 1_000 + (*s >> 54), seq, id)));
        seq += 1;
    }
    std::hint::black_box(sum);
    Sample {
        events: LEAN_EVENTS,
        sim_ns: now,
        cpu_ns: thread_cpu_ns() - cpu,
        wall_ns: wall.elapsed().as_nanos() as u64,
        rss_kib: peak_rss_kib(),
        tasks: 0,
    }
}

/// A generated host-only scenario for the scaling series: `cpus` CPUs,
/// `tasks` tasks in two sibling cgroups, three quarters hogs and one quarter
/// periodic (2 ms period, 300 us run), so wakeups, preemption, balancing and
/// group reweighting all occur, not only ticks.
fn scaling_toml(cpus: u32, tasks: u32, duration_ms: u32) -> String {
    let periodic = tasks / 4;
    let hogs = tasks - periodic;
    format!(
        "[host]\ncpus = {cpus}\nduration = \"{duration_ms}ms\"\n\
         [[cgroup]]\npath = \"/a\"\n[[cgroup]]\npath = \"/b\"\n\
         [[task]]\nname = \"h\"\nkind = \"hog\"\ncgroup = \"/a\"\ncount = {hogs}\n\
         [[task]]\nname = \"p\"\nkind = \"periodic\"\ncgroup = \"/b\"\nperiod = \"2ms\"\nrun = \"300us\"\ncount = {periodic}\n"
    )
}

fn run_scenario(sc: &Scenario) -> Result<Sample, String> {
    let tasks: u64 = sc.tasks.iter().map(|t| t.count as u64).sum::<u64>()
        + sc.vms.iter().map(|v| v.vcpus as u64).sum::<u64>();
    let wall = Instant::now();
    let cpu = thread_cpu_ns();
    let r = oversub::run_scenario(sc, None, None).map_err(|e| format!("{}: {e}", sc.file))?;
    Ok(Sample {
        events: r.events,
        sim_ns: r.duration_ns,
        cpu_ns: thread_cpu_ns() - cpu,
        wall_ns: wall.elapsed().as_nanos() as u64,
        rss_kib: peak_rss_kib(),
        tasks,
    })
}

/// The child: run one measurement and print its sample line.
fn one(spec: &str) -> Result<Sample, String> {
    if spec == "lean" {
        return Ok(lean_loop());
    }
    if let Some(gen) = spec.strip_prefix("gen:") {
        let v: Vec<u32> = gen
            .split(':')
            .map(|x| x.parse().map_err(|_| format!("bad generated spec {spec}")))
            .collect::<Result<_, _>>()?;
        let [cpus, tasks, ms] = v[..] else {
            return Err(format!("bad generated spec {spec}"));
        };
        let sc =
            Scenario::parse(spec, &scaling_toml(cpus, tasks, ms)).map_err(|e| e.to_string())?;
        return run_scenario(&sc);
    }
    let sc = Scenario::load(Path::new(spec)).map_err(|e| e.to_string())?;
    run_scenario(&sc)
}

/// Runs per measurement; the one with the least CPU time is kept (the
/// others were disturbed more by the rest of the machine).
const REPEATS: u32 = 3;

fn measure(exe: &Path, spec: &str) -> Result<Sample, String> {
    let mut best = measure_once(exe, spec)?;
    for _ in 1..REPEATS {
        let s = measure_once(exe, spec)?;
        if s.cpu_ns < best.cpu_ns {
            best = s;
        }
    }
    Ok(best)
}

fn measure_once(exe: &Path, spec: &str) -> Result<Sample, String> {
    let out = Command::new(exe)
        .args(["--one", spec])
        .output()
        .map_err(|e| format!("{}: {e}", exe.display()))?;
    if !out.status.success() {
        return Err(format!(
            "{spec}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Sample::from_line(String::from_utf8_lossy(&out.stdout).trim())
        .ok_or_else(|| format!("{spec}: unreadable sample"))
}

/// A generated scenario of the scaling series: (CPUs, tasks, simulated ms).
type Point = (u32, u32, u32);

fn fmt_m(x: f64) -> String {
    format!("{:.2} M", x / 1e6)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    if args.len() == 3 && args[1] == "--one" {
        return match one(&args[2]) {
            Ok(s) => {
                println!("{}", s.line());
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("{e}");
                ExitCode::from(2)
            }
        };
    }
    if args.len() == 3 && args[1] == "--toml" {
        // The generated scenario as a file, for profiling it with
        // `oversub run` (docs/performance.md).
        let v: Vec<u32> = args[2].split(':').filter_map(|x| x.parse().ok()).collect();
        if let [cpus, tasks, ms] = v[..] {
            print!("{}", scaling_toml(cpus, tasks, ms));
            return ExitCode::SUCCESS;
        }
    }
    if args.len() > 1 {
        eprintln!("usage: oversub-bench [--toml CPUS:TASKS:MS]   (run from the repository root)");
        return ExitCode::from(2);
    }
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("oversub-bench: cannot find own executable: {e}");
            return ExitCode::from(2);
        }
    };
    let mut files: Vec<String> = match std::fs::read_dir("bench") {
        Ok(d) => d
            .filter_map(|e| e.ok())
            .map(|e| e.path().display().to_string())
            .filter(|p| p.ends_with(".toml"))
            .collect(),
        Err(e) => {
            eprintln!("bench: {e} (run from the repository root)");
            return ExitCode::from(2);
        }
    };
    files.sort();
    files.push("scenarios/overcommit/dedup-2x16.toml".into());

    let lean = match measure(&exe, "lean") {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(1);
        }
    };
    let lean_eps = lean.events_per_cpu_s();
    println!(
        "lean binary-heap loop: {} events/CPU-s ({} events, {} pending; peak RSS {} KiB)",
        fmt_m(lean_eps),
        lean.events,
        LEAN_PENDING,
        lean.rss_kib
    );
    println!();
    println!(
        "{:<44} {:>10} {:>12} {:>6} {:>8} {:>9} {:>9}",
        "scenario", "events", "events/CPU-s", "x lean", "ns/event", "sim-s/s", "peak KiB"
    );
    let mut failed = false;
    let mut row = |label: &str, spec: &str| -> Option<Sample> {
        match measure(&exe, spec) {
            Ok(s) => {
                let eps = s.events_per_cpu_s();
                println!(
                    "{:<44} {:>10} {:>12} {:>6.3} {:>8.0} {:>9.2} {:>9}",
                    label,
                    s.events,
                    fmt_m(eps),
                    eps / lean_eps,
                    1e9 / eps,
                    s.sim_ns as f64 / s.wall_ns.max(1) as f64,
                    s.rss_kib
                );
                Some(s)
            }
            Err(e) => {
                eprintln!("{e}");
                failed = true;
                None
            }
        }
    };
    for f in &files {
        row(f, f);
    }
    // Scaling series: durations chosen so every row processes about a
    // million events (an overloaded 16-CPU host has few events per simulated
    // second, a 1024-CPU host many).
    let series: [(&str, [Point; 4]); 2] = [
        (
            "tasks grow (16 CPUs)",
            [
                (16, 64, 36_000),
                (16, 256, 12_000),
                (16, 1024, 12_000),
                (16, 4096, 10_000),
            ],
        ),
        (
            "CPUs grow (4 tasks per CPU)",
            [
                (16, 64, 36_000),
                (64, 256, 9_000),
                (256, 1024, 2_000),
                (1024, 4096, 500),
            ],
        ),
    ];
    for (name, pts) in series {
        println!("-- {name}");
        let mut first: Option<(f64, u64, u64)> = None;
        for (cpus, tasks, ms) in pts {
            let label = format!("gen {cpus} CPUs x {tasks} tasks, {ms} ms");
            if let Some(s) = row(&label, &format!("gen:{cpus}:{tasks}:{ms}")) {
                let ns = 1e9 / s.events_per_cpu_s();
                let (base_ns, base_kib, base_tasks) =
                    *first.get_or_insert((ns, s.rss_kib, s.tasks));
                let added = s.tasks.saturating_sub(base_tasks);
                let marginal = if added > 0 {
                    format!(
                        "; peak memory {:+.2} KiB per added task",
                        (s.rss_kib as f64 - base_kib as f64) / added as f64
                    )
                } else {
                    String::new()
                };
                println!(
                    "{:<44} cost per event x{:.2} of the first row{marginal}",
                    "",
                    ns / base_ns
                );
            }
        }
    }
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
