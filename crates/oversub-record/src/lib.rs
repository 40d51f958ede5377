//! `oversub record`: runs a real program on this machine under tracefs and
//! writes its measured profile (`profile.json`) and a thread program derived
//! from it (`workload.json`, which the simulator runs). This is the only
//! crate of the workspace that touches the operating system's tracing; the
//! simulator core stays free of it. docs/workloads.md, "oversub record",
//! says what each field is derived from.

pub mod derive;
pub mod hist;
pub mod outdir;
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
    /// Replace an `out` directory that holds files (`--force`); without
    /// it, such a directory is refused ([`outdir`]).
    pub force: bool,
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

/// The most of a recorded program's output kept (its end): for
/// `--ops-from` and the report.
pub const MAX_OUTPUT_BYTES: usize = 1 << 20;

/// The last [`MAX_OUTPUT_BYTES`] of a stream, and how much came before.
#[derive(Default)]
struct Tail {
    kept: std::collections::VecDeque<u8>,
    dropped: u64,
}

impl Tail {
    fn push(&mut self, b: &[u8]) {
        self.kept.extend(b);
        let over = self.kept.len().saturating_sub(MAX_OUTPUT_BYTES);
        if over > 0 {
            self.kept.drain(..over);
            self.dropped += over as u64;
        }
    }

    /// The kept text (from its first whole line when the start was cut),
    /// after a line saying how much was left out.
    fn text(self) -> String {
        let bytes: Vec<u8> = self.kept.into_iter().collect();
        if self.dropped == 0 {
            return String::from_utf8_lossy(&bytes).into_owned();
        }
        let start = bytes.iter().position(|&c| c == b'\n').map_or(0, |i| i + 1);
        format!(
            "[oversub record: the program's first {} bytes of output are not shown]\n{}",
            self.dropped + start as u64,
            String::from_utf8_lossy(&bytes[start..])
        )
    }
}

/// Writes files as one set: all to temporary names first, renamed when
/// all are whole; on error the temporary files are removed.
fn write_set(files: &[(&Path, &str)]) -> Result<(), Failure> {
    let tmp = |p: &Path| p.with_extension("json.partial");
    let cleanup = || {
        for (p, _) in files {
            let _ = std::fs::remove_file(tmp(p));
        }
    };
    for (p, t) in files {
        let r = std::fs::File::create(tmp(p))
            .and_then(|mut f| f.write_all(t.as_bytes()).and_then(|_| f.sync_all()));
        if let Err(e) = r {
            cleanup();
            return Err(fail(format!("{}: cannot write: {e}", p.display())));
        }
    }
    for (p, _) in files {
        if let Err(e) = std::fs::rename(tmp(p), p) {
            cleanup();
            return Err(fail(format!("{}: cannot write: {e}", p.display())));
        }
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
    // A program of no thread is no workload (the loader refuses it): say so
    // here instead of writing it.
    if !prof.threads.values().any(|t| t.cpu_ns > 0) {
        return Err(fail(format!(
            "profile: {} threads, none with CPU time: nothing to derive; allowed a profile with at least one thread that ran",
            prof.threads.len()
        )));
    }
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
    if !path.exists() && path.symlink_metadata().is_err() {
        return Ok(None);
    }
    // Present but unreadable (a directory, a FIFO, not UTF-8) is refused, not
    // taken as no count: the derived ops would be silently absent.
    let text = oversub::limits::read_text(&path, "make measure's ops.txt")
        .map_err(|m| fail(format!("{}: {m}", path.display())))?;
    let Some(line) = text.lines().rev().find(|l| !l.trim().is_empty()) else {
        return Ok(None);
    };
    line.split_whitespace()
        .find_map(|w| w.strip_prefix("ops="))
        .and_then(|n| n.parse().ok())
        .filter(|&n: &u64| n > 0)
        .map(Some)
        .ok_or_else(|| {
            fail(format!(
                "{}: {:?} has no ops=N: allowed program=NAME unit=UNIT ops=N seconds=S (N >= 1)",
                path.display(),
                oversub::limits::echo(line)
            ))
        })
}

/// `oversub derive DIR`: re-derives DIR/workload.json from DIR/profile.json
/// (after a change to the derivation; no re-recording). The op count is
/// `ops` if given, else the recording's (`provenance.ops`), else the last
/// line of DIR/ops.txt. The profile is left as it is.
pub fn derive_dir(dir: &Path, ops: Option<u64>) -> Result<String, Failure> {
    let ppath = dir.join("profile.json");
    let text =
        oversub::limits::read_text_max(&ppath, "oversub record's profile.json", MAX_PROFILE_BYTES)
            .map_err(|m| fail(format!("{}: {m}", ppath.display())))?;
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
    let in_file = |f: Failure| fail(format!("{}: {}", ppath.display(), f.message));
    let wtext = workload_text(
        &prof,
        ops,
        wall_s,
        provenance.clone(),
        derive::Form::Recorded,
    )
    .map_err(in_file)?;
    let gtext =
        workload_text(&prof, ops, wall_s, provenance, derive::Form::Steady).map_err(in_file)?;
    let out = dir.join("workload.json");
    let gout = dir.join("guest.json");
    write_set(&[(&out, &wtext), (&gout, &gtext)])?;
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
    // Before anything runs: a refused or unwritable --out costs no run.
    let staging = outdir::Staging::claim(&opts.out, opts.force).map_err(fail)?;
    let root = tracefs::locate().map_err(fail)?;
    tracefs::check_available(&root).map_err(fail)?;

    // The program's output (stdout and stderr) goes to a pipe read as it
    // comes; only its last MAX_OUTPUT_BYTES are kept (for --ops-from and
    // the report), so a program that writes without end costs neither
    // memory nor disk.
    let (out_r, out_w) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)
        .map_err(|e| fail(format!("oversub record: cannot make a pipe: {e}")))?;
    rustix::fs::fcntl_setfl(&out_r, rustix::fs::OFlags::NONBLOCK)
        .map_err(|e| fail(format!("oversub record: cannot make a pipe: {e}")))?;
    let err_w = out_w
        .try_clone()
        .map_err(|e| fail(format!("oversub record: cannot make a pipe: {e}")))?;
    let out_done = Arc::new(AtomicBool::new(false));
    let out_reader = {
        let done = out_done.clone();
        let mut r = std::fs::File::from(out_r);
        std::thread::spawn(move || {
            let mut tail = Tail::default();
            let mut buf = vec![0u8; 1 << 16];
            loop {
                match r.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => tail.push(&buf[..n]),
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        if done.load(Ordering::SeqCst) {
                            break;
                        }
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
            tail
        })
    };
    // The child stops itself before exec so that the filter holds its pid
    // before it runs; `exec` keeps that pid.
    let mut child = match Command::new("sh")
        .arg("-c")
        .arg("kill -STOP $$; exec \"$@\"")
        .arg("oversub-record")
        .args(&opts.command)
        .stdin(Stdio::null())
        .stdout(Stdio::from(out_w))
        .stderr(Stdio::from(err_w))
        .process_group(0)
        .spawn()
    {
        Ok(c) => c,
        Err(e) => {
            return Err(fail(format!("oversub record: cannot start sh: {e}")));
        }
    };
    let pid = child.id();
    let t0 = Instant::now();
    while proc_state(pid) != Some('T') {
        if t0.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
            let _ = child.wait();
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
    let (mut prof, overflowed) = handle
        .join()
        .map_err(|_| fail("oversub record: the trace reader failed"))?;
    // The caps hold for events read after the program ended too.
    if limit.is_none() {
        if count.load(Ordering::SeqCst) > opts.max_events {
            limit = Some(format!(
                "oversub record: more than {} trace events (--max-events): shorten --duration or the program's run",
                opts.max_events
            ));
        } else if overflowed.is_some() {
            limit = Some(format!(
                "oversub record: the program has more than {} threads or {} futex words: not recorded",
                profile::MAX_THREADS,
                profile::MAX_FUTEXES
            ));
        }
    }
    let lost = inst.lost();
    drop(inst);
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    out_done.store(true, Ordering::SeqCst);
    let output = out_reader
        .join()
        .map_err(|_| fail("oversub record: the output reader failed"))?
        .text();
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
    let last_line = || {
        oversub::limits::echo(
            output
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("(no output)"),
        )
    };
    if let Some(s) = status.filter(|_| !timed_out) {
        use std::os::unix::process::ExitStatusExt;
        if s.code() == Some(127) {
            return Err(fail(format!(
                "oversub record: cannot run {:?} (exit status 127): {}",
                opts.command[0],
                last_line()
            )));
        }
        // A program that failed on its own measured its failure, not its
        // work: nothing is written.
        if !s.success() {
            let how = match (s.code(), s.signal()) {
                (Some(c), _) => format!("exit status {c}"),
                (None, Some(g)) => format!("signal {g}"),
                _ => "an unknown status".to_string(),
            };
            return Err(fail(format!(
                "oversub record: {:?} ended with {how} before --duration (its last output line: {}): nothing written; allowed a program that succeeds or runs until --duration",
                opts.command[0],
                last_line()
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
        (None, Some(t)) => match ops_from(&output, t).filter(|&n| n > 0) {
            Some(n) => Some(n),
            None => {
                return Err(fail(format!(
                    "--ops-from: {:?} followed by a number >= 1 is not in the program's output: allowed text the program prints before its op count",
                    oversub::limits::echo(t)
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
    let dir = staging.dir();
    write_set(&[
        (&dir.join("profile.json"), &ptext),
        (&dir.join("workload.json"), &wtext),
        (&dir.join("guest.json"), &gtext),
    ])?;
    staging.commit().map_err(fail)?;
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
