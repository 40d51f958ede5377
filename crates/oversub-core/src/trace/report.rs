//! Reads back a trace written by [`super::chrome::ChromeWriter`] (`oversub
//! trace report FILE`) into the per-task summary of [`super::latency`]:
//! the same table `oversub run --latency` prints for the same run.
//!
//! The file is streamed a line at a time (the writer puts one event per
//! line), so memory is bounded by the number of tasks whatever its size.
//! Bounds: a line is at most [`MAX_LINE`] bytes, the file at most
//! [`MAX_BYTES`]; tasks and CPUs are those its metadata declare. A file
//! that is not such a trace, is cut short (no closing line) or breaks a
//! bound is refused with one line naming the file, the line and what is
//! allowed.

use super::latency::Latency;
use super::TraceEvent;
use serde::Deserialize;
use std::io::BufRead;

/// The longest line read (an event of the writer is < 1 KiB).
pub const MAX_LINE: usize = 64 * 1024;
/// The largest trace read: 64 GiB (a 2x16 VM scenario writes ~40 MB per
/// simulated second).
pub const MAX_BYTES: u64 = 64 << 30;

#[derive(Deserialize)]
struct Ev {
    ph: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    pid: u32,
    #[serde(default)]
    ts: f64,
    #[serde(default)]
    args: serde_json::Value,
}

fn ns(us: f64) -> u64 {
    (us * 1e3).round() as u64
}

/// A task's id from a `pid` field (0: idle).
fn task(v: &serde_json::Value) -> Option<u32> {
    v.as_u64()
        .filter(|&p| p > 0 && p <= u64::from(u32::MAX))
        .map(|p| p as u32 - 1)
}

/// The summary of the trace read from `r` (named `file` in errors).
pub fn read(file: &str, r: impl BufRead) -> Result<Latency, String> {
    let mut r = r.take(MAX_BYTES + 1);
    let mut names: Vec<String> = Vec::new();
    let mut lat: Option<Latency> = None;
    let mut end: Option<u64> = None;
    let mut buf = Vec::new();
    let mut n = 0u64;
    let mut read_bytes = 0u64;
    loop {
        buf.clear();
        let got = std::io::Read::take(&mut r, MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut buf)
            .map_err(|e| format!("{file}: cannot read: {e}"))?;
        if got == 0 {
            break;
        }
        n += 1;
        read_bytes += got as u64;
        if buf.last() != Some(&b'\n') && buf.len() <= MAX_LINE {
            return Err(format!(
                "{file}: line {n}: ends without the closing line: cut short (was the run interrupted?)"
            ));
        }
        if read_bytes > MAX_BYTES {
            return Err(format!(
                "{file}: larger than {} GiB: allowed traces up to that size",
                MAX_BYTES >> 30
            ));
        }
        if buf.len() > MAX_LINE {
            return Err(format!(
                "{file}: line {n}: longer than {MAX_LINE} bytes: not a trace written by oversub run --trace"
            ));
        }
        let line = std::str::from_utf8(&buf)
            .map_err(|_| {
                format!("{file}: line {n}: not UTF-8: not a trace written by oversub run --trace")
            })?
            .trim_end();
        if n == 1 {
            if line != "{\"traceEvents\":[" {
                return Err(format!(
                    "{file}: line 1: {:?}: expected {{\"traceEvents\":[ (a trace written by oversub run --trace)",
                    line.chars().take(40).collect::<String>()
                ));
            }
            continue;
        }
        if let Some(rest) = line.strip_prefix("],") {
            // The closing line: {"otherData":{..,"end_ns":N}}
            let tail: serde_json::Value = serde_json::from_str(&format!("{{{rest}"))
                .map_err(|e| format!("{file}: line {n}: closing line: {e}"))?;
            end = tail["otherData"]["end_ns"].as_u64();
            if end.is_none() || tail["otherData"]["producer"] != "oversub" {
                return Err(format!(
                    "{file}: line {n}: otherData: no producer \"oversub\" and end_ns: not a trace written by oversub run --trace"
                ));
            }
            continue;
        }
        if end.is_some() {
            return Err(format!("{file}: line {n}: text after the closing line"));
        }
        let obj = line.strip_suffix(',').unwrap_or(line);
        let ev: Ev = serde_json::from_str(obj).map_err(|e| {
            format!("{file}: line {n}: not a trace event ({e}): not a trace written by oversub run --trace")
        })?;
        // Metadata (first in the file): the host tasks' names.
        if ev.ph == "M" {
            if ev.name == "thread_name" && ev.pid == 2 {
                if lat.is_some() {
                    return Err(format!(
                        "{file}: line {n}: task metadata after the first event"
                    ));
                }
                if names.len() as u64 >= 2 * crate::limits::MAX_TASKS {
                    return Err(format!(
                        "{file}: line {n}: more tasks than a scenario may have"
                    ));
                }
                names.push(ev.args["name"].as_str().unwrap_or("?").to_string());
            }
            continue;
        }
        if ev.ph != "i" || ev.pid != 1 {
            continue;
        }
        let lat = lat.get_or_insert_with(|| Latency::new(names.clone()));
        let t = ns(ev.ts);
        let a = &ev.args;
        let e = match ev.name.as_str() {
            "sched_switch" => TraceEvent::SchedSwitch {
                t,
                cpu: 0,
                prev: task(&a["prev_pid"]),
                prev_runnable: a["prev_state"] == "R" && task(&a["prev_pid"]).is_some(),
                next: task(&a["next_pid"]),
                prev_prio: 120,
                next_prio: 120,
            },
            "sched_waking" => match task(&a["pid"]) {
                Some(pid) => TraceEvent::SchedWaking {
                    t,
                    cpu: 0,
                    pid,
                    prio: 120,
                    target_cpu: 0,
                    waker: None,
                },
                None => continue,
            },
            "sched_yield_to_tp" => match (task(&a["yielder_pid"]), task(&a["target_pid"])) {
                (Some(yielder), Some(target)) => TraceEvent::SchedYieldTo {
                    t,
                    cpu: 0,
                    yielder,
                    target,
                    levels: 0,
                },
                _ => continue,
            },
            _ => continue,
        };
        lat.event(&e);
    }
    let Some(end) = end else {
        return Err(format!(
            "{file}: line {n}: ends without the closing line: cut short (was the run interrupted?)"
        ));
    };
    let mut lat = lat.unwrap_or_else(|| Latency::new(names));
    lat.finish(end);
    Ok(lat)
}
