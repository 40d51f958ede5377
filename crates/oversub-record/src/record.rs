//! `oversub record`: the program run under a private tracefs instance, its
//! trace folded into a profile as it streams in, and profile.json,
//! workload.json and guest.json written with the recording's provenance.

use crate::failure::{fail, Failure};
use crate::options::Options;
use crate::output::{ops_from, Tail};
use crate::write::{workload_text, write_set};
use crate::{derive, outdir, parse, profile, tracefs};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::{json, Value};
use std::io::{IsTerminal, Read};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

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
