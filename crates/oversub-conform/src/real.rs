//! Running a host-only scenario on the real kernel: cgroups under the host's
//! cpu controller, one worker process per task, CPU time from
//! `/proc/PID/schedstat`, cleanup of every process and cgroup on every path.

use crate::calibrate::{Calibration, ProbeShape};
use crate::clock::mono_now;
use crate::host::{self, CpuController};
use crate::worker::{self, GRACE_NS};
use oversub::report::Percentiles;
use oversub::scenario::{expanded_names, Scenario, TaskKind};
use rustix::process::{Pid, Signal};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The weight of the per-run parent cgroup: high, so that the scenario gets
/// the machine even when something else runs on it.
pub const BASE_WEIGHT: u32 = 10000;

/// One task's real measurement.
#[derive(Clone, Debug)]
pub struct RealTask {
    pub name: String,
    pub cgroup: String,
    pub cpu_ns: u64,
    pub latency: Option<Percentiles>,
    /// `se.nr_migrations` over the window (None if /proc/PID/sched lacks it).
    pub nr_migrations: Option<u64>,
    /// CPU time a periodic task did not ask for in the window because it
    /// skipped activations whose expiry passed while the previous one ran
    /// (None for other kinds).
    pub skipped_ns: Option<u64>,
}

/// The cgroups of one run, removed (deepest first) when dropped.
pub struct CgroupTree {
    ctl: CpuController,
    base: PathBuf,
    created: Vec<PathBuf>,
}

impl CgroupTree {
    pub fn create(ctl: &CpuController, tag: &str, sc: &Scenario) -> Result<CgroupTree, String> {
        let base = ctl.root().join(tag);
        let mut t = CgroupTree {
            ctl: ctl.clone(),
            base: base.clone(),
            created: Vec::new(),
        };
        t.mkdir(&base)?;
        t.set_weight(&base, BASE_WEIGHT)?;
        for c in &sc.cgroups {
            let mut p = base.clone();
            for comp in c.path.split('/').filter(|s| !s.is_empty()) {
                p.push(comp);
                if !t.created.contains(&p) {
                    t.mkdir(&p)?;
                }
            }
            t.set_weight(&p, c.weight)?;
        }
        Ok(t)
    }

    fn mkdir(&mut self, p: &Path) -> Result<(), String> {
        std::fs::create_dir(p).map_err(|e| format!("mkdir {}: {e}", p.display()))?;
        self.created.push(p.to_path_buf());
        if let CpuController::V2 { .. } = self.ctl {
            // Children of this group need the cpu controller delegated.
            let _ = std::fs::write(p.join("cgroup.subtree_control"), "+cpu");
        }
        Ok(())
    }

    fn set_weight(&self, p: &Path, w: u32) -> Result<(), String> {
        let (f, v) = self.ctl.weight_file(w);
        std::fs::write(p.join(f), &v).map_err(|e| format!("{}/{f} <- {v}: {e}", p.display()))
    }

    /// The directory of scenario cgroup `path` ("/" is the run's base).
    pub fn dir(&self, path: &str) -> PathBuf {
        let mut p = self.base.clone();
        p.extend(path.split('/').filter(|s| !s.is_empty()));
        p
    }

    pub fn attach(&self, path: &str, pid: u32) -> Result<(), String> {
        let f = self.dir(path).join("cgroup.procs");
        std::fs::write(&f, pid.to_string()).map_err(|e| format!("{} <- {pid}: {e}", f.display()))
    }
}

impl Drop for CgroupTree {
    fn drop(&mut self) {
        for p in self.created.iter().rev() {
            for _ in 0..100 {
                if std::fs::remove_dir(p).is_ok() || !p.exists() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
        }
    }
}

/// Worker processes, killed and reaped when dropped.
struct Workers(Vec<(Child, String, String)>);

impl Drop for Workers {
    fn drop(&mut self) {
        for (c, _, _) in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Field 1 of `/proc/PID/schedstat`: ns on CPU.
pub fn schedstat_cpu(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/schedstat")).ok()?;
    s.split_whitespace().next()?.parse().ok()
}

/// `se.nr_migrations` of `/proc/PID/sched`.
pub fn sched_nr_migrations(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/sched")).ok()?;
    s.lines()
        .find(|l| l.trim_start().starts_with("se.nr_migrations"))?
        .split(':')
        .nth(1)?
        .trim()
        .parse()
        .ok()
}

/// Sleeps until `t` (CLOCK_MONOTONIC ns) in short steps, failing on interrupt.
fn sleep_until(t: u64, stop: &AtomicBool) -> Result<(), String> {
    loop {
        if stop.load(Ordering::SeqCst) {
            return Err("interrupted".into());
        }
        let now = mono_now();
        if now >= t {
            return Ok(());
        }
        crate::clock::sleep_until(t.min(now + 20_000_000));
    }
}

/// Runs `sc` once on the real kernel for `duration` ns. With `tick_ns` (the
/// tick period) the start is put on the host's tick grid
/// ([`host::tick_phase`]), as the simulator's ticks lie at multiples of the
/// period after its start: a periodic task's expiries then fall at the same
/// phases of the tick on both sides, which decides whether a wakeup waits
/// for a tick (docs/conformance.md, "The tick phase"). Returns the tasks and
/// whether the start was so aligned.
pub fn run_once(
    sc: &Scenario,
    ctl: &CpuController,
    tag: &str,
    duration: u64,
    tick_ns: Option<u64>,
    stop: &Arc<AtomicBool>,
) -> Result<(Vec<RealTask>, bool), String> {
    let tree = CgroupTree::create(ctl, tag, sc)?;
    let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
    let nprocs: u64 = sc.tasks.iter().map(|t| t.count as u64).sum();
    let earliest = mono_now() + 300_000_000 + nprocs * 20_000_000;
    let phase = tick_ns.and_then(|t| host::tick_phase(t).map(|p| (t, p)));
    let start = match phase {
        Some((t, p)) => host::align_to_tick(earliest, t, p),
        None => earliest,
    };
    let end = start + duration;
    let mut workers = Workers(Vec::new());
    let base_kv = [("start", start), ("end", end)];
    for t in &sc.tasks {
        let names = expanded_names(t);
        let mut pp_pipes: Vec<(Stdio, Stdio)> = Vec::new();
        if let TaskKind::PingPong { .. } = t.kind {
            for _ in 0..names.len() / 2 {
                let (ab_r, ab_w) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)
                    .map_err(|e| format!("pipe: {e}"))?;
                let (ba_r, ba_w) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)
                    .map_err(|e| format!("pipe: {e}"))?;
                // A reads b->a and writes a->b; B the other way round.
                pp_pipes.push((Stdio::from(ba_r), Stdio::from(ab_w)));
                pp_pipes.push((Stdio::from(ab_r), Stdio::from(ba_w)));
            }
            pp_pipes.reverse();
        }
        for (i, name) in names.iter().enumerate() {
            let mut kv: Vec<(&str, u64)> = base_kv.to_vec();
            let kind = match &t.kind {
                TaskKind::Hog => "hog",
                TaskKind::Periodic { period, run, phase } => {
                    kv.extend([("period", period.0), ("run", run.0), ("phase", phase.0)]);
                    "periodic"
                }
                TaskKind::YieldLoop { work, .. } => {
                    kv.push(("work", work.0));
                    "yield_loop"
                }
                TaskKind::PingPong { run } => {
                    kv.extend([("run", run.0), ("initiator", (i % 2 == 0) as u64)]);
                    "pingpong"
                }
                TaskKind::Messaging { .. } => return Err("messaging is not host-only".into()),
                TaskKind::Program { .. } => {
                    return Err("rt-app programs run through the real rt-app, not workers".into())
                }
            };
            let mut cmd = Command::new(&exe);
            cmd.arg("__worker").args(worker::args_for(kind, &kv));
            cmd.stderr(Stdio::piped());
            match pp_pipes.pop() {
                Some((rx, tx)) => {
                    cmd.stdin(rx).stdout(tx);
                }
                None => {
                    cmd.stdin(Stdio::null()).stdout(Stdio::null());
                }
            }
            let child = cmd
                .spawn()
                .map_err(|e| format!("spawn worker {name}: {e}"))?;
            let pid = child.id();
            workers.0.push((child, name.clone(), t.cgroup.clone()));
            tree.attach(&t.cgroup, pid)?;
            let rpid = Pid::from_raw(pid as i32).ok_or("bad pid")?;
            rustix::process::setpriority_process(Some(rpid), t.nice)
                .map_err(|e| format!("setpriority {name} {}: {e}", t.nice))?;
            if let Some(cpus) = &t.cpus {
                let mut set = rustix::thread::CpuSet::new();
                for &c in cpus {
                    set.set(c as usize);
                }
                rustix::thread::sched_setaffinity(Some(rpid), &set)
                    .map_err(|e| format!("sched_setaffinity {name}: {e}"))?;
            }
        }
    }
    if mono_now() + 50_000_000 > start {
        return Err("setting up the workers took longer than planned".into());
    }
    sleep_until(start - 20_000_000, stop)?;
    let pids: Vec<u32> = workers.0.iter().map(|(c, _, _)| c.id()).collect();
    let before: Vec<Option<u64>> = pids.iter().map(|&p| schedstat_cpu(p)).collect();
    let mig_before: Vec<Option<u64>> = pids.iter().map(|&p| sched_nr_migrations(p)).collect();
    sleep_until(end, stop)?;
    let after: Vec<Option<u64>> = pids.iter().map(|&p| schedstat_cpu(p)).collect();
    let mig_after: Vec<Option<u64>> = pids.iter().map(|&p| sched_nr_migrations(p)).collect();
    // Wait for the workers to finish on their own (they stop at end + grace).
    let deadline = end + GRACE_NS + 3_000_000_000;
    let mut out = Vec::new();
    for (i, (c, name, cg)) in workers.0.iter_mut().enumerate() {
        loop {
            if stop.load(Ordering::SeqCst) {
                return Err("interrupted".into());
            }
            match c.try_wait() {
                Ok(Some(_)) => break,
                Ok(None) if mono_now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(10))
                }
                _ => {
                    let _ = rustix::process::kill_process(
                        Pid::from_raw(c.id() as i32).ok_or("bad pid")?,
                        Signal::KILL,
                    );
                    let _ = c.wait();
                    break;
                }
            }
        }
        let mut err = String::new();
        if let Some(mut e) = c.stderr.take() {
            let _ = e.read_to_string(&mut err);
        }
        let (Some(b), Some(a)) = (before[i], after[i]) else {
            return Err(format!("worker {name} died early: {}", err.trim()));
        };
        out.push(RealTask {
            name: name.clone(),
            cgroup: cg.clone(),
            cpu_ns: a.saturating_sub(b),
            latency: worker::parse_latency(&err),
            skipped_ns: worker::parse_skipped_ns(&err),
            nr_migrations: match (mig_before[i], mig_after[i]) {
                (Some(b), Some(a)) => Some(a.saturating_sub(b)),
                _ => None,
            },
        });
    }
    drop(workers);
    drop(tree);
    Ok((out, phase.is_some()))
}

/// Spawns this binary as `__worker KIND` with `params`, stdin closed; its
/// stdout and stderr are piped when `piped` (to read a result), else closed.
fn spawn_worker(
    exe: &Path,
    kind: &str,
    params: &[(&str, u64)],
    piped: bool,
) -> Result<Child, String> {
    let out = || if piped { Stdio::piped() } else { Stdio::null() };
    Command::new(exe)
        .arg("__worker")
        .args(worker::args_for(kind, params))
        .stdin(Stdio::null())
        .stdout(out())
        .stderr(out())
        .spawn()
        .map_err(|e| format!("spawn {kind} worker: {e}"))
}

/// A piped worker's whole stdout and stderr, after it exited.
fn collect(c: &mut Child) -> (String, String) {
    let (mut out, mut err) = (String::new(), String::new());
    if let Some(mut o) = c.stdout.take() {
        let _ = o.read_to_string(&mut out);
    }
    if let Some(mut e) = c.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    let _ = c.wait();
    (out, err)
}

/// Runs the calibration probes (`calibrate::calibrate`) in a worker process
/// placed in its own cgroup of weight [`BASE_WEIGHT`], as the scenarios'
/// workers are, so that both see the machine the same way.
pub fn calibrate_in_cgroup(
    ctl: &CpuController,
    tag: &str,
    samples: u32,
) -> Result<Calibration, String> {
    let empty = Scenario::parse("calibrate", "[[task]]\nname = \"x\"\nkind = \"hog\"\n")
        .map_err(|e| e.to_string())?;
    let tree = CgroupTree::create(
        ctl,
        tag,
        &Scenario {
            cgroups: Vec::new(),
            ..empty
        },
    )?;
    let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
    let start = mono_now() + 100_000_000;
    let params = [
        ("start", start),
        ("end", start),
        ("samples", u64::from(samples)),
    ];
    let child = spawn_worker(&exe, "calibrate", &params, true)?;
    let mut workers = Workers(vec![(child, "calibrate".into(), "/".into())]);
    tree.attach("/", workers.0[0].0.id())?;
    let (out, _) = collect(&mut workers.0[0].0);
    drop(workers);
    drop(tree);
    Calibration::from_json(&out)
}

/// One batch of conform's timer-wake probe, run right before a real run of
/// a scenario with periodic tasks: for each of `cpus`, a hog *process* is
/// pinned there and a sleeper process on the same CPU measures how late its
/// absolute `clock_nanosleep` expiries run (`samples` of them, at phases
/// that walk over the tick period; the median). Both are workers of this
/// binary in a cgroup of weight [`BASE_WEIGHT`], as a scenario's are, so the
/// probe pays the same path as a periodic worker preempting a hog: the
/// interrupt, the wakeup, a switch between two processes, the return to
/// user space and the same timestamp code. Returns the medians, in `cpus`
/// order. With `unpinned` (the scenario's periodic tasks are free to run on
/// every CPU) it is one probe instead: a hog pinned on each of `cpus` and the
/// sleeper free to run on any of them, so that its wakeup goes through
/// `select_task_rq_fair()` as theirs do; one median.
pub fn timer_probe_batch(
    ctl: &CpuController,
    tag: &str,
    cpus: &[u32],
    samples: u32,
    shape: ProbeShape,
    unpinned: bool,
    stop: &AtomicBool,
) -> Result<Vec<u64>, String> {
    let empty = Scenario::parse("probe", "[[task]]\nname = \"x\"\nkind = \"hog\"\n")
        .map_err(|e| e.to_string())?;
    let tree = CgroupTree::create(
        ctl,
        tag,
        &Scenario {
            cgroups: Vec::new(),
            ..empty
        },
    )?;
    let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
    let pin = |pid: u32, cpus: &[u32]| -> Result<(), String> {
        let mut set = rustix::thread::CpuSet::new();
        for &c in cpus {
            set.set(c as usize);
        }
        let rpid = Pid::from_raw(pid as i32).ok_or("bad pid")?;
        rustix::thread::sched_setaffinity(Some(rpid), &set)
            .map_err(|e| format!("sched_setaffinity probe: {e}"))
    };
    // One probe: a hog pinned on each of `hogs`, the sleeper pinned to
    // `sleeper` or (None) free to run on any of `hogs`.
    let one = |hogs: &[u32], sleeper: Option<u32>| -> Result<u64, String> {
        if stop.load(Ordering::SeqCst) {
            return Err("interrupted".into());
        }
        let now = mono_now();
        let mut workers = Workers(Vec::new());
        // The hogs spin from now on; they are killed when the probe is done
        // (their `end` is only a bound should the parent die).
        for &cpu in hogs {
            let hog = spawn_worker(
                &exe,
                "hog",
                &[("start", now), ("end", now + 60_000_000_000)],
                false,
            )?;
            let hpid = hog.id();
            workers.0.push((hog, "probe-hog".into(), "/".into()));
            tree.attach("/", hpid)?;
            pin(hpid, &[cpu])?;
        }
        // The sleeper starts once the hogs have run for as long as a real
        // run's workers wait before their window (at least 300 ms, see
        // `run_once`): the previous run's exit and cgroup removal are then
        // as far behind as they are for a real run.
        let start = mono_now() + 300_000_000;
        let params = [
            ("start", start),
            ("end", start),
            ("cpu", sleeper.map_or(worker::ANY_CPU, u64::from)),
            ("samples", u64::from(samples)),
            ("sleep", shape.sleep),
            ("burn", shape.burn),
        ];
        let probe = spawn_worker(&exe, "timer_probe", &params, true)?;
        let ppid = probe.id();
        workers.0.push((probe, "probe".into(), "/".into()));
        tree.attach("/", ppid)?;
        match sleeper {
            Some(c) => pin(ppid, &[c])?,
            None => pin(ppid, hogs)?,
        }
        let i = workers.0.len() - 1;
        let (text, err) = collect(&mut workers.0[i].0);
        drop(workers);
        worker::parse_timer_probe(&text)
            .ok_or_else(|| format!("timer probe on CPU {hogs:?} gave no result: {}", err.trim()))
    };
    let out = if unpinned {
        vec![one(cpus, None)?]
    } else {
        let mut out = Vec::with_capacity(cpus.len());
        for &cpu in cpus {
            out.push(one(&[cpu], Some(cpu))?);
        }
        out
    };
    drop(tree);
    Ok(out)
}
