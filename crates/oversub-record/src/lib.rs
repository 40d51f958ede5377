//! `oversub record`: runs a real program on this machine under tracefs and
//! writes its measured profile (`profile.json`) and a thread program derived
//! from it (`workload.json`, which the simulator runs). This is the only
//! crate of the workspace that touches the operating system's tracing; the
//! simulator core stays free of it. docs/workloads.md, "oversub record",
//! says what each field is derived from.

pub mod derive;
pub mod hist;
pub mod parse;
pub mod profile;
pub mod steady;
pub mod tracefs;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::{json, Value};
use std::io::{IsTerminal, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The longest recording.
pub const MAX_DURATION: Duration = Duration::from_secs(600);
/// Default cap on trace events (each folded as it arrives; the cap bounds
/// the recording's cost, not its memory).
pub const DEFAULT_MAX_EVENTS: u64 = 50_000_000;
/// Default ring buffer per CPU (KiB).
pub const DEFAULT_BUFFER_KB: u64 = 32 * 1024;

/// What `oversub record` was asked to do.
#[derive(Clone, Debug)]
pub struct Options {
    pub out: PathBuf,
    pub duration: Duration,
    pub command: Vec<String>,
    /// Operations the run did, if known (for per-op figures).
    pub ops: Option<u64>,
    /// Take the ops from the number after the last occurrence of this text
    /// in the program's output.
    pub ops_from: Option<String>,
    pub max_events: u64,
    pub buffer_kb: u64,
    pub progress: bool,
}

/// A failed recording: the message (one line) and the exit code (2 for bad
/// input or unavailable tracing, 130 when interrupted).
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    pub code: u8,
    pub message: String,
}

fn fail(m: impl Into<String>) -> Failure {
    Failure {
        code: 2,
        message: m.into(),
    }
}

/// "5s", "250ms", "1.5s", "2m" into a duration (1 ms ..= [`MAX_DURATION`]).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (num, mult) = if let Some(v) = s.strip_suffix("ms") {
        (v, 1e-3)
    } else if let Some(v) = s.strip_suffix('s') {
        (v, 1.0)
    } else if let Some(v) = s.strip_suffix('m') {
        (v, 60.0)
    } else {
        return Err(format!(
            "--duration: {s:?} has no unit: allowed e.g. 500ms, 5s, 2m"
        ));
    };
    let v: f64 = num
        .parse()
        .map_err(|_| format!("--duration: {s:?} is not a number with a unit (500ms, 5s, 2m)"))?;
    let secs = v * mult;
    if !(0.001..=MAX_DURATION.as_secs_f64()).contains(&secs) {
        return Err(format!(
            "--duration: {s} is out of range: allowed 1ms ..= {}s",
            MAX_DURATION.as_secs()
        ));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// The number after the last occurrence of `text` in `output`.
pub fn ops_from(output: &str, text: &str) -> Option<u64> {
    let i = output.rfind(text)? + text.len();
    let rest = output[i..].trim_start();
    let digits: String = rest
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == ',')
        .filter(|c| *c != ',')
        .collect();
    digits.parse().ok()
}

/// Writes `text` to `path` whole or not at all (a temporary name in the same
/// directory, renamed when complete).
fn write_whole(path: &Path, text: &str) -> Result<(), Failure> {
    let tmp = path.with_extension("json.partial");
    let r = std::fs::File::create(&tmp)
        .and_then(|mut f| f.write_all(text.as_bytes()).and_then(|_| f.sync_all()))
        .and_then(|_| std::fs::rename(&tmp, path));
    if let Err(e) = r {
        let _ = std::fs::remove_file(&tmp);
        return Err(fail(format!("{}: cannot write: {e}", path.display())));
    }
    Ok(())
}

/// workload.json: the program derived from `prof` with its provenance
/// (the recording's, plus the derivation record).
fn workload_text(
    prof: &profile::Profile,
    ops: Option<u64>,
    wall_s: f64,
    provenance: Value,
    form: derive::Form,
) -> Result<String, Failure> {
    let secs = (3.0 * wall_s)
        .ceil()
        .clamp(1.0, 3.0 * MAX_DURATION.as_secs_f64()) as u64;
    let (program, derivation) = derive::derive_form(prof, ops, secs, form);
    let mut prov = provenance;
    if let Value::Object(m) = &mut prov {
        m.insert("profile".into(), json!("profile.json (same directory)"));
        m.insert("derivation".into(), derivation);
    }
    let workload = match program {
        derive::Ordered::O(mut kv) => {
            kv.insert(0, ("provenance".into(), derive::Ordered::V(prov)));
            derive::Ordered::O(kv)
        }
        v => v,
    };
    Ok(serde_json::to_string(&workload).map_err(|e| fail(e.to_string()))? + "\n")
}

/// The largest profile.json `oversub derive` reads.
pub const MAX_PROFILE_BYTES: u64 = 256 << 20;

/// The op count of a recording directory's `ops.txt` (`make measure`:
/// lines `program=NAME unit=UNIT ops=N seconds=S`, the last one counts).
fn ops_txt(dir: &Path) -> Result<Option<u64>, Failure> {
    let path = dir.join("ops.txt");
    let Ok(text) = std::fs::read_to_string(&path) else {
        return Ok(None);
    };
    let Some(line) = text.lines().rev().find(|l| !l.trim().is_empty()) else {
        return Ok(None);
    };
    line.split_whitespace()
        .find_map(|w| w.strip_prefix("ops="))
        .and_then(|n| n.parse().ok())
        .map(Some)
        .ok_or_else(|| {
            fail(format!(
                "{}: {line:?} has no ops=N: allowed program=NAME unit=UNIT ops=N seconds=S",
                path.display()
            ))
        })
}

/// `oversub derive DIR`: re-derives DIR/workload.json from DIR/profile.json
/// (after a change to the derivation; no re-recording). The op count is
/// `ops` if given, else the recording's (`provenance.ops`), else the last
/// line of DIR/ops.txt. The profile is left as it is.
pub fn derive_dir(dir: &Path, ops: Option<u64>) -> Result<String, Failure> {
    let ppath = dir.join("profile.json");
    let size = std::fs::metadata(&ppath)
        .map_err(|e| fail(format!("{}: cannot read: {e}", ppath.display())))?
        .len();
    if size > MAX_PROFILE_BYTES {
        return Err(fail(format!(
            "{}: {size} bytes: allowed at most {MAX_PROFILE_BYTES}",
            ppath.display()
        )));
    }
    let text = std::fs::read_to_string(&ppath)
        .map_err(|e| fail(format!("{}: cannot read: {e}", ppath.display())))?;
    let v: Value = serde_json::from_str(&text)
        .map_err(|e| fail(format!("{}: not JSON: {e}", ppath.display())))?;
    if v.get("schema").and_then(Value::as_str) != Some("oversub-profile/1") {
        return Err(fail(format!(
            "{}: schema: allowed \"oversub-profile/1\" (oversub record's profile.json)",
            ppath.display()
        )));
    }
    let prof =
        profile::Profile::from_json(&v).map_err(|m| fail(format!("{}: {m}", ppath.display())))?;
    let mut provenance = v.get("provenance").cloned().unwrap_or_else(|| json!({}));
    let wall_s = provenance
        .get("wall_s")
        .and_then(Value::as_f64)
        .filter(|w| w.is_finite() && *w >= 0.0)
        .unwrap_or(prof.wall_ns() as f64 / 1e9);
    let recorded = provenance.get("ops").and_then(Value::as_u64);
    let (ops, source) = match (ops, recorded) {
        (Some(n), _) => (Some(n), "oversub derive --ops".to_string()),
        (None, Some(n)) => (Some(n), String::new()),
        (None, None) => match ops_txt(dir)? {
            Some(n) => (
                Some(n),
                "ops.txt (same directory): the program's whole-run count (make measure)".into(),
            ),
            None => (None, String::new()),
        },
    };
    if let Value::Object(m) = &mut provenance {
        if !source.is_empty() {
            m.insert("ops".into(), json!(ops));
            m.insert("ops_source".into(), json!(source));
        }
        m.insert(
            "derived_by".into(),
            json!(format!(
                "oversub derive (oversub {}), from profile.json (same directory)",
                env!("CARGO_PKG_VERSION")
            )),
        );
    }
    let wtext = workload_text(
        &prof,
        ops,
        wall_s,
        provenance.clone(),
        derive::Form::Recorded,
    )?;
    let gtext = workload_text(&prof, ops, wall_s, provenance, derive::Form::Steady)?;
    let out = dir.join("workload.json");
    let gout = dir.join("guest.json");
    write_whole(&out, &wtext)?;
    write_whole(&gout, &gtext)?;
    Ok(format!(
        "derived {} and {} from {} ({} threads{})",
        out.display(),
        gout.display(),
        ppath.display(),
        prof.threads.len(),
        ops.map(|n| format!(", {n} ops")).unwrap_or_default()
    ))
}

fn sh(args: &[&str]) -> String {
    Command::new(args[0])
        .args(&args[1..])
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

/// The machine, for provenance.
fn machine() -> Value {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .map(|v| v.trim_start_matches([' ', '\t', ':']).to_string())
        .unwrap_or_default();
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    json!({
        "cpus": cpus,
        "cpu_model": model,
        "kernel": sh(&["uname", "-r"]),
        "hostname": sh(&["uname", "-n"]),
        "load_average_at_start": std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim(),
    })
}

/// State of `pid` from /proc/PID/stat ('T' = stopped).
fn proc_state(pid: u32) -> Option<char> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let i = s.rfind(')')?;
    s[i + 1..].trim_start().chars().next()
}

fn signal_group(pid: u32, sig: rustix::process::Signal) {
    if let Some(p) = rustix::process::Pid::from_raw(pid as i32) {
        let _ = rustix::process::kill_process_group(p, sig);
    }
}

/// Records `opts.command` and writes DIR/profile.json and DIR/workload.json.
/// `stop` is set by Ctrl-C / SIGTERM: the program is then ended and nothing
/// is written.
pub fn record(opts: &Options, stop: &Arc<AtomicBool>) -> Result<String, Failure> {
    if opts.command.is_empty() {
        return Err(fail(
            "oversub record: no command given: usage oversub record [--out DIR] [--duration D] -- CMD [ARGS...]",
        ));
    }
    if opts.out.exists() && !opts.out.is_dir() {
        return Err(fail(format!(
            "--out: {} exists and is not a directory",
            opts.out.display()
        )));
    }
    let root = tracefs::locate().map_err(fail)?;
    tracefs::check_available(&root).map_err(fail)?;
    std::fs::create_dir_all(&opts.out)
        .map_err(|e| fail(format!("--out: cannot create {}: {e}", opts.out.display())))?;

    let outdir = std::env::temp_dir().join(format!("oversub-record-{}", std::process::id()));
    std::fs::create_dir_all(&outdir)
        .map_err(|e| fail(format!("{}: cannot create: {e}", outdir.display())))?;
    let out_path = outdir.join("output");
    let out_file = std::fs::File::create(&out_path)
        .map_err(|e| fail(format!("{}: {e}", out_path.display())))?;
    let err_file = out_file
        .try_clone()
        .map_err(|e| fail(format!("{}: {e}", out_path.display())))?;
    let cleanup = |d: &Path| {
        let _ = std::fs::remove_dir_all(d);
    };

    // The child stops itself before exec so that the filter holds its pid
    // before it runs; `exec` keeps that pid.
    let mut child = match Command::new("sh")
        .arg("-c")
        .arg("kill -STOP $$; exec \"$@\"")
        .arg("oversub-record")
        .args(&opts.command)
        .stdin(Stdio::null())
        .stdout(out_file)
        .stderr(err_file)
        .process_group(0)
        .spawn()
    {
        Ok(c) => c,
        Err(e) => {
            cleanup(&outdir);
            return Err(fail(format!("oversub record: cannot start sh: {e}")));
        }
    };
    let pid = child.id();
    let t0 = Instant::now();
    while proc_state(pid) != Some('T') {
        if t0.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
            let _ = child.wait();
            cleanup(&outdir);
            return Err(fail(
                "oversub record: the command did not start within 10 s",
            ));
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let name = format!("oversub-record-{}", std::process::id());
    let inst = match tracefs::Instance::create(&root, &name, opts.buffer_kb, pid) {
        Ok(i) => i,
        Err(m) => {
            signal_group(pid, rustix::process::Signal::KILL);
            let _ = child.wait();
            cleanup(&outdir);
            return Err(fail(m));
        }
    };
    let pipe = inst.dir.join("trace_pipe");
    let fd = rustix::fs::open(
        &pipe,
        rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )
    .map_err(|e| fail(format!("{}: {e}", pipe.display())))?;
    let mut reader = std::fs::File::from(fd);
    let done = Arc::new(AtomicBool::new(false));
    let count = Arc::new(AtomicU64::new(0));
    let overflow = Arc::new(AtomicBool::new(false));
    let (d2, c2, o2) = (done.clone(), count.clone(), overflow.clone());
    let handle = std::thread::spawn(move || {
        let mut prof = profile::Profile::new(pid);
        let mut buf = vec![0u8; 1 << 20];
        let mut pending: Vec<u8> = Vec::new();
        let mut err = None;
        loop {
            match reader.read(&mut buf) {
                Ok(0) => std::thread::sleep(Duration::from_millis(5)),
                Ok(n) => {
                    pending.extend_from_slice(&buf[..n]);
                    let mut start = 0;
                    while let Some(j) = pending[start..].iter().position(|&b| b == b'\n') {
                        let l = String::from_utf8_lossy(&pending[start..start + j]);
                        if let Some(ev) = parse::line(&l) {
                            if err.is_none() {
                                if let Err(e) = prof.add(&ev) {
                                    err = Some(e);
                                    o2.store(true, Ordering::SeqCst);
                                }
                            }
                            c2.fetch_add(1, Ordering::Relaxed);
                        }
                        start += j + 1;
                    }
                    pending.drain(..start);
                    // A line longer than the buffer is not a trace line.
                    if pending.len() > (1 << 20) {
                        pending.clear();
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    if d2.load(Ordering::SeqCst) {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(_) => break,
            }
        }
        prof.finish();
        (prof, err)
    });
    let _ = inst.on(true);
    let started = Instant::now();
    let start_date = sh(&["date", "-u", "+%Y-%m-%dT%H:%M:%SZ"]);
    if let Some(p) = rustix::process::Pid::from_raw(pid as i32) {
        let _ = rustix::process::kill_process(p, rustix::process::Signal::CONT);
    }

    let bar = if opts.progress && std::io::stderr().is_terminal() {
        let b = ProgressBar::with_draw_target(
            Some(opts.duration.as_millis() as u64),
            ProgressDrawTarget::stderr(),
        );
        b.set_style(
            ProgressStyle::with_template("recording {elapsed} / {msg} [{bar:30}]")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        Some(b)
    } else {
        None
    };
    let mut limit: Option<String> = None;
    let mut term_at: Option<Instant> = None;
    let mut timed_out = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) => {}
            Err(_) => break None,
        }
        let n = count.load(Ordering::Relaxed);
        if let Some(b) = &bar {
            b.set_position(started.elapsed().as_millis() as u64);
            b.set_message(format!("{} s, {n} events", opts.duration.as_secs_f64()));
        }
        if limit.is_none() {
            if n > opts.max_events {
                limit = Some(format!(
                    "oversub record: more than {} trace events (--max-events): shorten --duration or the program's run",
                    opts.max_events
                ));
            } else if overflow.load(Ordering::SeqCst) {
                limit = Some(format!(
                    "oversub record: the program has more than {} threads or {} futex words: not recorded",
                    profile::MAX_THREADS,
                    profile::MAX_FUTEXES
                ));
            }
        }
        let over = started.elapsed() >= opts.duration;
        if over && !timed_out && limit.is_none() {
            timed_out = true;
        }
        if (over || limit.is_some() || stop.load(Ordering::SeqCst)) && term_at.is_none() {
            signal_group(pid, rustix::process::Signal::TERM);
            signal_group(pid, rustix::process::Signal::CONT);
            term_at = Some(Instant::now());
        }
        if term_at.is_some_and(|t| t.elapsed() > Duration::from_secs(2)) {
            signal_group(pid, rustix::process::Signal::KILL);
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let wall = started.elapsed();
    let _ = inst.on(false);
    // Whatever the group left behind.
    signal_group(pid, rustix::process::Signal::KILL);
    done.store(true, Ordering::SeqCst);
    let (mut prof, _) = handle
        .join()
        .map_err(|_| fail("oversub record: the trace reader failed"))?;
    let lost = inst.lost();
    drop(inst);
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let output = std::fs::read_to_string(&out_path).unwrap_or_default();
    cleanup(&outdir);
    if stop.load(Ordering::SeqCst) {
        return Err(Failure {
            code: 130,
            message: "oversub record: interrupted; nothing written".into(),
        });
    }
    if let Some(m) = limit {
        return Err(fail(m));
    }
    if lost > 0 {
        return Err(fail(format!(
            "oversub record: the trace buffer lost {lost} events (the reader fell behind): use a shorter --duration or a larger --buffer-kb (now {})",
            opts.buffer_kb
        )));
    }
    if let Some(s) = status {
        if !timed_out && s.code() == Some(127) {
            return Err(fail(format!(
                "oversub record: cannot run {:?}: {}",
                opts.command[0],
                output.lines().last().unwrap_or("")
            )));
        }
    }
    if prof.threads.is_empty() {
        return Err(fail(
            "oversub record: no events from the command were traced (is tracing working on this kernel?)",
        ));
    }
    prof.last_ns = prof.last_ns.max(prof.first_ns.unwrap_or(0));
    let ops = match (&opts.ops, &opts.ops_from) {
        (Some(n), _) => Some(*n),
        (None, Some(t)) => match ops_from(&output, t) {
            Some(n) => Some(n),
            None => {
                return Err(fail(format!(
                    "--ops-from: {t:?} followed by a number is not in the program's output"
                )))
            }
        },
        // The program's own op markers, when it made any.
        (None, None) => Some(prof.totals().op_marks).filter(|&n| n > 0),
    };
    let exit = status.and_then(|s| s.code());
    let provenance = json!({
        "command": opts.command,
        "date": start_date,
        "machine": machine(),
        "tool": {
            "name": "oversub record",
            "version": env!("CARGO_PKG_VERSION"),
            // Set when building (OVERSUB_COMMIT=...); else the commit of the
            // working directory's git tree, if any.
            "commit": option_env!("OVERSUB_COMMIT").map(str::to_string).unwrap_or_else(|| {
                let c = sh(&["git", "rev-parse", "--short", "HEAD"]);
                if c.is_empty() { "unknown".to_string() } else { c }
            }),
        },
        "tracer": "tracefs instance, text trace_pipe; events: sched_switch, sched_waking, sched_process_fork/exit, syscalls:*, exceptions:page_fault_user/kernel, tlb:tlb_flush, ipi:ipi_send_cpu/cpumask, lock:contention_begin/end",
        "duration_limit_s": opts.duration.as_secs_f64(),
        "wall_s": wall.as_secs_f64(),
        "ended_by": if timed_out { "duration limit (SIGTERM to its process group)" } else { "itself" },
        "exit_code": exit,
        "ops": ops,
        "ops_source": match (&opts.ops, &opts.ops_from) {
            (Some(_), _) => "--ops".to_string(),
            (None, Some(t)) => format!("the number after {t:?} in its output"),
            _ if ops.is_some() => "the program's op markers (getcpu(NULL, NULL, 0x6f70), docs/workloads.md)".to_string(),
            _ => "none: per-thread figures only".to_string(),
        },
        "timestamps": "tracefs text, microsecond resolution",
    });
    let mut profile = prof.to_json(ops);
    if let Value::Object(m) = &mut profile {
        m.insert("schema".into(), json!("oversub-profile/1"));
        m.insert("provenance".into(), provenance.clone());
    }
    let ptext = serde_json::to_string(&profile).map_err(|e| fail(e.to_string()))? + "\n";
    let wtext = workload_text(
        &prof,
        ops,
        wall.as_secs_f64(),
        provenance.clone(),
        derive::Form::Recorded,
    )?;
    let gtext = workload_text(
        &prof,
        ops,
        wall.as_secs_f64(),
        provenance,
        derive::Form::Steady,
    )?;
    write_whole(&opts.out.join("profile.json"), &ptext)?;
    write_whole(&opts.out.join("workload.json"), &wtext)?;
    write_whole(&opts.out.join("guest.json"), &gtext)?;
    let t = prof.totals();
    Ok(format!(
        "{}recorded {} threads, {} events in {:.2} s: CPU {:.3} s, {} switches, {} wakeups{}\nwrote {}/profile.json, {}/workload.json, {}/guest.json",
        output,
        prof.threads.len(),
        prof.events,
        wall.as_secs_f64(),
        t.cpu_ns as f64 / 1e9,
        t.switches,
        t.wakeups,
        ops.map(|n| format!(", {n} ops")).unwrap_or_default(),
        opts.out.display(),
        opts.out.display(),
        opts.out.display()
    ))
}
