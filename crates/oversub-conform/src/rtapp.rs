//! Running an rt-app program on the real kernel with the real `rt-app`
//! (Debian's rt-app 1.0): the file is run as written except for
//! `global.duration` (long enough for the window), `logdir` (a private
//! directory) and `log_size` (0: no log); rt-app itself sets nice and
//! affinity. Its threads are found in `/proc/PID/task` (in creation order =
//! thread order; the comm is the task name) and measured over the window:
//! CPU time, run delay and timeslices from `schedstat`, voluntary and
//! involuntary switches from `status`.

use crate::clock::mono_now;
use crate::host::CpuController;
use crate::real::CgroupTree;
use oversub::scenario::Scenario;
use oversub::workload::json::{self, Json};
use rustix::process::{Pid, Signal};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Time after the last thread appeared before the window opens.
const WARMUP_NS: u64 = 200_000_000;

/// One thread's figures over the window.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ThreadFigures {
    pub cpu_ns: u64,
    pub run_delay_ns: u64,
    pub timeslices: u64,
    pub voluntary: u64,
    pub involuntary: u64,
}

impl ThreadFigures {
    fn minus(&self, b: &ThreadFigures) -> ThreadFigures {
        ThreadFigures {
            cpu_ns: self.cpu_ns.saturating_sub(b.cpu_ns),
            run_delay_ns: self.run_delay_ns.saturating_sub(b.run_delay_ns),
            timeslices: self.timeslices.saturating_sub(b.timeslices),
            voluntary: self.voluntary.saturating_sub(b.voluntary),
            involuntary: self.involuntary.saturating_sub(b.involuntary),
        }
    }
}

/// Whether the `rt-app` program can be run (`rt-app` with no argument prints
/// its usage).
pub fn rtapp_available() -> bool {
    Command::new("rt-app")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
}

/// Nominal length of the calibration run.
const CAL_RUN_US: i64 = 200_000;
/// The ns per loop the calibration run is started with (any value works:
/// rt-app's loop count is linear in it).
const CAL_GUESS: i64 = 10;

/// Measures rt-app's busy loop by CPU time: one thread runs `run` 200 ms
/// with a guessed ns-per-loop, and its CPU time from `schedstat` gives the
/// true ns per loop (fractional). rt-app's own calibration times the loop by
/// the wall clock (with one-second sleeps between trials), so on a loaded
/// machine it both takes long and comes out too high, making every `run` use
/// less CPU than it says. The caller measures before and after every real
/// run: the loop's cost drifts with the load on the sibling hyperthread.
/// With `cpus`, the measuring thread is pinned there (the program's CPUs:
/// a loop costs what the core it runs on makes it cost).
pub fn measure_ns_per_loop(cpus: Option<&[u32]>) -> Result<f64, String> {
    {
        let dir =
            TmpDir(std::env::temp_dir().join(format!("oversub-rtapp-cal-{}", std::process::id())));
        std::fs::create_dir_all(&dir.0).map_err(|e| format!("mkdir {}: {e}", dir.0.display()))?;
        let file = dir.0.join("cal.json");
        let pin = cpus.map_or(String::new(), |c| {
            format!("\"cpus\": {}, ", serde_json::Value::from(c.to_vec()))
        });
        let prog = format!(
            r#"{{"global": {{"duration": 30, "calibration": {CAL_GUESS}, "log_size": 0, "logdir": {}}},
                "tasks": {{"cal": {{{pin}"loop": 1, "phases": {{"p": {{"run": {CAL_RUN_US}, "sleep": 20000000}}}}}}}}}}"#,
            serde_json::Value::from(dir.0.display().to_string())
        );
        std::fs::write(&file, prog).map_err(|e| format!("write {}: {e}", file.display()))?;
        let proc = RtAppProc::spawn(&file, &dir.0)?;
        let pid = proc.0.id();
        let deadline = mono_now() + 25_000_000_000;
        // The thread has used its run once it sleeps with CPU time past
        // half the nominal run.
        let cpu = loop {
            if mono_now() > deadline {
                return Err("rt-app calibration run did not finish in 25 s".into());
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
            let Some(&tid) = tids(pid).first() else {
                continue;
            };
            let (Some(f), Ok(st)) = (
                figures(pid, tid),
                std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/status")),
            ) else {
                continue;
            };
            let sleeping = st
                .lines()
                .any(|l| l.starts_with("State:") && l.contains("S (sleeping)"));
            if sleeping && f.cpu_ns > (CAL_RUN_US as u64) * 500 {
                break f.cpu_ns;
            }
        };
        drop(proc);
        Ok(CAL_GUESS as f64 * cpu as f64 / (CAL_RUN_US as f64 * 1000.0))
    }
}

/// The file as the real run uses it: `calibration` becomes `ns_per_loop`
/// unless the file gives a number itself.
pub fn real_json(
    src: &str,
    duration_s: u64,
    logdir: &str,
    ns_per_loop: i64,
) -> Result<String, String> {
    let Json::Object(mut root) = json::parse(src)? else {
        return Err("not an object".into());
    };
    let set = |kv: &mut Vec<(String, Json)>, k: &str, v: Json| match kv
        .iter_mut()
        .find(|(n, _)| n == k)
    {
        Some((_, x)) => *x = v,
        None => kv.push((k.to_string(), v)),
    };
    let mut global = match root.iter().position(|(k, _)| k == "global") {
        Some(i) => match root.remove(i).1 {
            Json::Object(g) => g,
            _ => return Err("global is not an object".into()),
        },
        None => Vec::new(),
    };
    set(&mut global, "duration", Json::Int(duration_s as i64));
    if !global
        .iter()
        .any(|(k, v)| k == "calibration" && matches!(v, Json::Int(_)))
    {
        set(&mut global, "calibration", Json::Int(ns_per_loop));
    }
    set(&mut global, "logdir", Json::Str(logdir.to_string()));
    // 0 MB: no log (rt-app 1.0 reads the string "disable" as file mode).
    set(&mut global, "log_size", Json::Int(0));
    root.insert(0, ("global".into(), Json::Object(global)));
    Ok(Json::Object(root).to_string())
}

/// The rt-app process, killed and reaped when dropped.
struct RtAppProc(Child);

impl RtAppProc {
    /// `rt-app FILE` in `dir`, with no terminal I/O, started at nice 0.
    /// rt-app leaves the nice of a thread without a `priority` alone (and
    /// skips an explicit `"priority": 0`, the value it assumes a thread
    /// has), so such a thread would run at the nice the harness inherited:
    /// under `nice -n 10 make test` conform/rtapp_nice.json's "nice0" ran
    /// at nice 10 against "nice5" at 5 and the real shares came out
    /// inverted (24.6% / 75.4%). The simulator gives it nice 0, so rt-app
    /// is started through coreutils' `nice` with the adjustment that
    /// brings the harness's own nice back to 0.
    fn spawn(file: &std::path::Path, dir: &std::path::Path) -> Result<RtAppProc, String> {
        let own = rustix::process::getpriority_process(None)
            .map_err(|e| format!("getpriority of the harness: {e}"))?;
        let mut cmd = if own == 0 {
            Command::new("rt-app")
        } else {
            let mut c = Command::new("nice");
            c.arg("-n").arg((-own).to_string()).arg("rt-app");
            c
        };
        cmd.arg(file)
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map(RtAppProc)
            .map_err(|e| format!("spawn rt-app: {e}"))
    }
}

impl Drop for RtAppProc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A private directory, removed when dropped.
struct TmpDir(std::path::PathBuf);

impl Drop for TmpDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn tids(pid: u32) -> Vec<u32> {
    let mut v: Vec<u32> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .filter(|&t| t != pid)
                .collect()
        })
        .unwrap_or_default();
    v.sort_unstable();
    v
}

fn figures(pid: u32, tid: u32) -> Option<ThreadFigures> {
    let base = format!("/proc/{pid}/task/{tid}");
    let ss = std::fs::read_to_string(format!("{base}/schedstat")).ok()?;
    let mut it = ss.split_whitespace().map(|x| x.parse::<u64>().ok());
    let (cpu_ns, run_delay_ns, timeslices) = (it.next()??, it.next()??, it.next()??);
    let st = std::fs::read_to_string(format!("{base}/status")).ok()?;
    let field = |name: &str| -> Option<u64> {
        st.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().parse().ok())
    };
    Some(ThreadFigures {
        cpu_ns,
        run_delay_ns,
        timeslices,
        voluntary: field("voluntary_ctxt_switches:")?,
        involuntary: field("nonvoluntary_ctxt_switches:")?,
    })
}

fn sleep_ns(ns: u64, stop: &AtomicBool) -> Result<(), String> {
    let end = mono_now() + ns;
    while mono_now() < end {
        if stop.load(Ordering::SeqCst) {
            return Err("interrupted".into());
        }
        std::thread::sleep(std::time::Duration::from_millis(10).min(
            std::time::Duration::from_nanos(end.saturating_sub(mono_now()).max(1)),
        ));
    }
    Ok(())
}

/// The TIDs of the program's `threads`, in their order, from the rt-app
/// process's threads `found` as (TID, comm): each thread is the one named as
/// its task (rt-app's `pthread_setname_np()`, the comm's 15 characters);
/// the instances of one task share that name and are taken in TID order
/// (rt-app creates them one after the other). An error names what does not
/// match: a thread not named yet, or one more or fewer than the program has.
/// TIDs alone do not give the order (they wrap at `pid_max`), nor does
/// the order of the names in the file (rt-app and the simulator may list
/// the tasks differently): the name does.
pub fn attribute(
    found: &[(u32, String)],
    threads: &[oversub::workload::ir::Thread],
) -> Result<Vec<u32>, String> {
    let comm = |task: &str| -> String { task.chars().take(15).collect() };
    let mut by_name: std::collections::BTreeMap<&str, Vec<u32>> = Default::default();
    for (tid, c) in found {
        by_name.entry(c.as_str()).or_default().push(*tid);
    }
    for tids in by_name.values_mut() {
        tids.sort_unstable();
    }
    let mut taken: std::collections::BTreeMap<String, usize> = Default::default();
    let mut out = Vec::with_capacity(threads.len());
    for t in threads {
        let want = comm(&t.task);
        let k = taken.entry(want.clone()).or_default();
        let tid = by_name
            .get(want.as_str())
            .and_then(|v| v.get(*k))
            .ok_or_else(|| {
                let names: Vec<String> = found.iter().map(|(t, c)| format!("{t}:{c}")).collect();
                format!(
                    "no rt-app thread named \"{want}\" for {} (threads: {})",
                    t.name,
                    names.join(", ")
                )
            })?;
        *k += 1;
        out.push(*tid);
    }
    if let Some((c, v)) = by_name
        .iter()
        .find(|(c, v)| taken.get(**c).copied().unwrap_or(0) != v.len())
    {
        return Err(format!(
            "rt-app has {} thread(s) named \"{c}\", the program {}",
            v.len(),
            taken.get(*c).copied().unwrap_or(0)
        ));
    }
    Ok(out)
}

/// Runs the program of `sc` (its file text `src`) once under real rt-app
/// with `ns_per_loop` as its calibration (unless the file gives one) and
/// measures its threads over a window of `window` ns. The figures are in the
/// order of the program's threads (`sc.program.threads`).
pub fn run_once(
    sc: &Scenario,
    src: &str,
    ctl: &CpuController,
    tag: &str,
    window: u64,
    ns_per_loop: i64,
    stop: &Arc<AtomicBool>,
) -> Result<Vec<ThreadFigures>, String> {
    let prog = sc.program.as_ref().ok_or("not a program")?;
    let tree = CgroupTree::create(ctl, tag, sc)?;
    let dir = TmpDir(std::env::temp_dir().join(tag));
    std::fs::create_dir_all(&dir.0).map_err(|e| format!("mkdir {}: {e}", dir.0.display()))?;
    // Calibration, thread start-up and the warm-up fit in the extra seconds.
    let secs = (window + WARMUP_NS).div_ceil(1_000_000_000) + 2;
    let text = real_json(src, secs, &dir.0.display().to_string(), ns_per_loop)?;
    let file = dir.0.join("program.json");
    std::fs::write(&file, text).map_err(|e| format!("write {}: {e}", file.display()))?;
    let mut proc = RtAppProc::spawn(&file, &dir.0)?;
    let pid = proc.0.id();
    // Before calibration ends, so every thread starts in the cgroup.
    tree.attach("/", pid)?;
    let n = prog.threads.len();
    let deadline = mono_now() + 10_000_000_000;
    let threads = loop {
        if let Ok(Some(st)) = proc.0.try_wait() {
            return Err(format!("rt-app exited before its threads started: {st}"));
        }
        let t = tids(pid);
        if t.len() >= n {
            break t;
        }
        if mono_now() > deadline {
            return Err(format!("rt-app started {} of {n} threads in 10 s", t.len()));
        }
        sleep_ns(5_000_000, stop)?;
    };
    if threads.len() != n {
        return Err(format!(
            "rt-app has {} threads, the program {n}",
            threads.len()
        ));
    }
    // Each thread names itself first thing (pthread_setname_np): give them
    // a moment, then attribute every thread by its name (`attribute`).
    let named_by = mono_now() + 1_000_000_000;
    let threads = loop {
        let found: Vec<(u32, String)> = threads
            .iter()
            .map(|&tid| {
                let comm = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/comm"))
                    .unwrap_or_default();
                (tid, comm.trim_end().to_string())
            })
            .collect();
        match attribute(&found, &prog.threads) {
            Ok(t) => break t,
            Err(e) if mono_now() > named_by => return Err(e),
            Err(_) => sleep_ns(2_000_000, stop)?,
        }
    };
    sleep_ns(WARMUP_NS, stop)?;
    let read = |tids: &[u32]| -> Result<Vec<ThreadFigures>, String> {
        tids.iter()
            .map(|&t| {
                figures(pid, t).ok_or_else(|| format!("thread {t} ended before the window closed"))
            })
            .collect()
    };
    let before = read(&threads)?;
    sleep_ns(window, stop)?;
    let after = read(&threads)?;
    let _ =
        rustix::process::kill_process(Pid::from_raw(pid as i32).ok_or("bad pid")?, Signal::KILL);
    drop(proc);
    drop(tree);
    Ok(after.iter().zip(&before).map(|(a, b)| a.minus(b)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn thread(name: &str, task: &str) -> oversub::workload::ir::Thread {
        oversub::workload::ir::Thread {
            name: name.into(),
            task: task.into(),
            nice: 0,
            cpus: None,
            delay: oversub::engine::Nanos(0),
            loops: None,
            timer_slack: None,
            ops_per_loop: None,
            parent: None,
            phases: Vec::new(),
        }
    }

    #[test]
    fn threads_are_attributed_by_name_not_by_tid_order() {
        let prog = [thread("nice0", "nice0"), thread("nice5", "nice5")];
        let f = |v: &[(u32, &str)]| -> Vec<(u32, String)> {
            v.iter().map(|(t, c)| (*t, c.to_string())).collect()
        };
        // Created in order: TIDs ascending.
        assert_eq!(
            attribute(&f(&[(101, "nice0"), (102, "nice5")]), &prog),
            Ok(vec![101, 102])
        );
        // TIDs wrapped at pid_max between the two: nice5 has the smaller TID.
        assert_eq!(
            attribute(&f(&[(4_194_303, "nice0"), (300, "nice5")]), &prog),
            Ok(vec![4_194_303, 300])
        );
        // Listed in the other order, or by a reader that sorts them: the same.
        assert_eq!(
            attribute(&f(&[(102, "nice5"), (101, "nice0")]), &prog),
            Ok(vec![101, 102])
        );
        // Not named yet (still the process's comm): an error, retried by
        // the caller until a deadline.
        let e = attribute(&f(&[(101, "rt-app"), (102, "nice5")]), &prog).unwrap_err();
        assert!(e.contains("no rt-app thread named \"nice0\""), "{e}");
        // One thread more than the program has.
        let e =
            attribute(&f(&[(101, "nice0"), (102, "nice5"), (103, "nice5")]), &prog).unwrap_err();
        assert!(
            e.contains("2 thread(s) named \"nice5\", the program 1"),
            "{e}"
        );
        // Instances of one task share its name: taken in TID order; names
        // longer than a comm are cut to 15 characters.
        let inst = [
            thread("w.0", "worker"),
            thread("w.1", "worker"),
            thread("long", "a_very_long_task_name"),
        ];
        assert_eq!(
            attribute(
                &f(&[(9, "worker"), (7, "worker"), (8, "a_very_long_tas")]),
                &inst
            ),
            Ok(vec![7, 9, 8])
        );
    }

    #[test]
    fn real_json_sets_the_run_options_and_keeps_the_rest() {
        let src = r#"{"tasks": {"t": {"run": 1, "run1": 2}}, "global": {"duration": 9, "calibration": "CPU0", "log_size": "file"}}"#;
        let out = real_json(src, 4, "/tmp/x", 15).unwrap();
        assert_eq!(
            out,
            r#"{"global":{"duration":4,"calibration":15,"log_size":0,"logdir":"/tmp/x"},"tasks":{"t":{"run":1,"run1":2}}}"#
        );
        let given = r#"{"tasks": {"t": {"run": 1}}, "global": {"calibration": 40}}"#;
        assert!(real_json(given, 4, "/d", 15)
            .unwrap()
            .contains(r#""calibration":40"#));
    }
}
