//! The real worker processes of `oversub conform` (run as the hidden
//! `oversub __worker KIND key=value...`). Each waits until `start`
//! (CLOCK_MONOTONIC, ns), behaves like its simulated kind, and exits at `end`
//! plus a grace period. Periodic workers print their wakeup-latency summary
//! (timer expiry to running, cyclictest-style) on stderr as one line
//! `latency samples=N p50=NS p99=NS max=NS mean=NS skipped=N skipped_ns=NS`.
//! Two more kinds are probes, not scenario tasks: `calibrate` (the probes of
//! `oversub calibrate`, JSON on stdout) and `timer_probe` (one batch of the
//! timer-wake probe on `cpu`, `timer_probe p50=NS` on stdout).

use crate::calibrate::{self, ProbeShape};
use crate::clock::{mono_now, sleep_until, Budget};
use oversub::report::Percentiles;
use std::collections::BTreeMap;
use std::io::{Read, Write};

/// How long workers keep going after the measured window ends, so that the
/// parent reads `/proc/PID/schedstat` of live processes.
pub const GRACE_NS: u64 = 300_000_000;

/// Parses `key=value` arguments.
pub fn parse_args(args: &[String]) -> Result<BTreeMap<String, u64>, String> {
    let mut m = BTreeMap::new();
    for a in args {
        let (k, v) = a
            .split_once('=')
            .ok_or_else(|| format!("worker argument {a:?} is not key=value"))?;
        let v: u64 = v
            .parse()
            .map_err(|_| format!("worker argument {a:?}: not an integer"))?;
        m.insert(k.to_string(), v);
    }
    Ok(m)
}

/// The command line of a worker (after `__worker`).
pub fn args_for(kind: &str, kv: &[(&str, u64)]) -> Vec<String> {
    let mut v = vec![kind.to_string()];
    v.extend(kv.iter().map(|(k, x)| format!("{k}={x}")));
    v
}

/// Runs one worker; returns the process exit code.
pub fn main(args: &[String]) -> i32 {
    match run(args) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("oversub worker: {e}");
            2
        }
    }
}

fn run(args: &[String]) -> Result<(), String> {
    let (kind, rest) = args.split_first().ok_or("worker: missing kind")?;
    let a = parse_args(rest)?;
    let get = |k: &str| -> Result<u64, String> {
        a.get(k)
            .copied()
            .ok_or_else(|| format!("worker {kind}: missing {k}="))
    };
    // Die with the parent; no timer slack, so that latency is the scheduler's.
    let _ = rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL));
    let _ = rustix::thread::set_current_timer_slack(std::num::NonZeroU64::new(1));
    let start = get("start")?;
    let end = get("end")?;
    let stop = end + GRACE_NS;
    sleep_until(start);
    let mut budget = Budget::new();
    match kind.as_str() {
        "hog" => while mono_now() < stop {},
        "yield_loop" => {
            let work = get("work")?;
            while mono_now() < stop {
                budget.spin(work);
                rustix::thread::sched_yield();
            }
        }
        "periodic" => {
            let (period, burst, phase) = (get("period")?, get("run")?, get("phase")?);
            let mut lat = Vec::new();
            let mut skipped = 0u64;
            let mut expiry = start + phase;
            loop {
                sleep_until(expiry);
                let now = mono_now();
                if expiry < end {
                    lat.push(now.saturating_sub(expiry));
                }
                if now >= stop {
                    break;
                }
                budget.spin(burst);
                let now = mono_now();
                expiry += period;
                // Expiries already past are skipped (their `run` is not done).
                while expiry <= now {
                    if expiry < end {
                        skipped += 1;
                    }
                    expiry += period;
                }
            }
            let p = Percentiles::of(&mut lat);
            eprintln!(
                "latency samples={} p50={} p99={} max={} mean={} skipped={skipped} skipped_ns={}",
                p.samples,
                p.p50,
                p.p99,
                p.max,
                p.mean,
                skipped * burst
            );
        }
        "pingpong" => {
            let burst = get("run")?;
            let mut working = get("initiator")? == 1;
            let mut rx = std::io::stdin().lock();
            let mut tx = std::io::stdout().lock();
            let mut b = [0u8; 1];
            loop {
                if working {
                    budget.spin(burst);
                    if tx.write_all(&b).and_then(|_| tx.flush()).is_err() {
                        break;
                    }
                }
                working = true;
                if mono_now() >= stop || rx.read_exact(&mut b).is_err() {
                    break;
                }
            }
        }
        "timer_probe" => {
            // One batch of the conform run's timer-wake probe
            // (`real::timer_probe_batch`): a sleeper on `cpu` against the
            // hog process the parent placed there.
            let cpu = get("cpu")?;
            let cpu = (cpu != ANY_CPU).then_some(cpu as usize);
            let shape = ProbeShape {
                sleep: get("sleep")?,
                burn: get("burn")?,
            };
            let v = calibrate::timer_probe_shaped(cpu, get("samples")? as u32, shape);
            println!("timer_probe p50={v}");
        }
        "calibrate" => {
            let cal = calibrate::calibrate(get("samples")? as u32);
            println!("{}", cal.to_json());
        }
        k => return Err(format!("unknown worker kind {k:?}")),
    }
    Ok(())
}

/// Parses a periodic worker's stderr summary line.
pub fn parse_latency(text: &str) -> Option<Percentiles> {
    let line = text.lines().find_map(|l| l.strip_prefix("latency "))?;
    let kv: BTreeMap<&str, u64> = line
        .split_whitespace()
        .filter_map(|w| w.split_once('='))
        .filter_map(|(k, v)| Some((k, v.parse().ok()?)))
        .collect();
    Some(Percentiles {
        samples: *kv.get("samples")?,
        p50: *kv.get("p50")?,
        p99: *kv.get("p99")?,
        max: *kv.get("max")?,
        mean: *kv.get("mean")?,
    })
}

/// The CPU time a periodic worker did not ask for because it skipped
/// activations in the window (`skipped_ns=` of its summary line).
pub fn parse_skipped_ns(text: &str) -> Option<u64> {
    let line = text.lines().find_map(|l| l.strip_prefix("latency "))?;
    line.split_whitespace()
        .find_map(|w| w.strip_prefix("skipped_ns="))?
        .parse()
        .ok()
}

/// A `timer_probe` worker's `cpu=` for a sleeper that is not pinned (its
/// parent sets its affinity).
pub const ANY_CPU: u64 = u32::MAX as u64;

/// Parses a `timer_probe` worker's output line.
pub fn parse_timer_probe(text: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix("timer_probe p50="))?
        .trim()
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn args_round_trip() {
        let v = args_for("periodic", &[("start", 5), ("period", 1000)]);
        assert_eq!(v[0], "periodic");
        let m = parse_args(&v[1..]).unwrap();
        assert_eq!(m["start"], 5);
        assert_eq!(m["period"], 1000);
        assert!(parse_args(&["x".into()]).is_err());
    }

    #[test]
    fn latency_line() {
        let p = parse_latency("junk\nlatency samples=3 p50=10 p99=20 max=30 mean=12\n").unwrap();
        assert_eq!(
            parse_skipped_ns("latency samples=3 p50=10 mean=12 skipped=4 skipped_ns=400\n"),
            Some(400)
        );
        assert_eq!(parse_skipped_ns("latency samples=3 p50=10\n"), None);
        assert_eq!(
            (p.samples, p.p50, p.p99, p.max, p.mean),
            (3, 10, 20, 30, 12)
        );
        assert!(parse_latency("nothing").is_none());
        assert_eq!(
            parse_timer_probe("x\ntimer_probe p50=17250\n"),
            Some(17_250)
        );
        assert_eq!(parse_timer_probe("timer_probe p50=x"), None);
    }
}
