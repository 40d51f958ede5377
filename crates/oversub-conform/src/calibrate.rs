//! `oversub calibrate`: measures the host costs of `[host.costs]` on the
//! running machine with four probes that are not the scenarios `conform`
//! compares (docs/model.md, "Host costs"):
//!
//! * timer wake on an idle CPU: a thread sleeps to an absolute
//!   CLOCK_MONOTONIC expiry (`clock_nanosleep`, timer slack 1 ns) and records
//!   how late it runs (cyclictest);
//! * the same against a hog spinning on that CPU (the wakeup preempts it),
//!   on each of the first four CPUs (their mean is used);
//! * pipe ping-pong on one CPU: one hop (write, wakeup, block, switch, read)
//!   measured from the writer's timestamp to the reader's return;
//! * cross-CPU wakeup: a pipe write on CPU 0 wakes a reader blocked on an idle
//!   CPU 1;
//! * the sleeper's CPU time (its thread CPU clock) across each sleep of the
//!   timer probe against a hog (mean over the CPUs as for the wake);
//! * the CPU time of a FUTEX_WAKE on CPU 0 that wakes a waiter blocked on
//!   CPU 0 (at nice 19, so that it does not preempt the waker).
//!
//! Every figure is a median, which the load of other processes moves little.
//! The costs follow from them: `context_switch` = hop, `timer_wake` = hog
//! wake - hop, `idle_exit` = idle wake - hog wake, `remote_wakeup` =
//! cross-CPU wakeup - hop, `nanosleep` = CPU across a sleep - hop (the model
//! charges the switch-in separately), `futex_wake` = CPU of the wake (each at
//! least 0). CPU times are robust to the machine's load: only the thread's
//! own time on a CPU counts. `migration` is not measured (a cache refill
//! depends on the working set); it keeps its default.

use crate::clock::{mono_now, sleep_until, thread_cpu, Budget};
use oversub::sched::HostCosts;
use rustix::thread::futex;
use rustix::thread::CpuSet;
use serde::{Deserialize, Serialize};
use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;

/// The probes' medians, ns (None: not measured, e.g. one CPU).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Probes {
    pub samples: u32,
    pub cpus: u32,
    pub timer_idle: u64,
    /// The mean over the probed CPUs of `timer_hog_per_cpu`.
    pub timer_hog: u64,
    /// Timer wake against a hog on CPUs 0, 1, ... (at most 4).
    #[serde(default)]
    pub timer_hog_per_cpu: Vec<u64>,
    pub pipe_hop: u64,
    pub cross_cpu: Option<u64>,
    /// The sleeper's CPU time across a sleep of the timer probe against a
    /// hog, mean over the CPUs of `nanosleep_cpu_per_cpu` (None: not
    /// measured by the version that wrote this).
    #[serde(default)]
    pub nanosleep_cpu: Option<u64>,
    #[serde(default)]
    pub nanosleep_cpu_per_cpu: Vec<u64>,
    /// The sleeper's CPU time across a sleep of the timer probe on idle
    /// CPU 0.
    #[serde(default)]
    pub nanosleep_idle_cpu: Option<u64>,
    /// The CPU time of a FUTEX_WAKE that wakes a waiter on the same CPU.
    #[serde(default)]
    pub futex_wake_cpu: Option<u64>,
}

/// A calibration: the probes and the costs derived from them.
#[derive(Clone, Debug)]
pub struct Calibration {
    pub probes: Probes,
    pub costs: HostCosts,
}

fn pin(cpu: usize) {
    let mut set = CpuSet::new();
    set.set(cpu);
    let _ = rustix::thread::sched_setaffinity(None, &set);
    let _ = rustix::thread::set_current_timer_slack(std::num::NonZeroU64::new(1));
}

fn median(mut v: Vec<u64>) -> u64 {
    if v.is_empty() {
        return 0;
    }
    v.sort_unstable();
    v[(v.len() - 1) / 2]
}

/// Timer lateness on `cpu`, `n` samples, expiries at a phase that walk over
/// the tick period (so that they do not sit on the tick grid).
pub fn timer_probe(cpu: usize, n: u32) -> u64 {
    timer_probe_shaped(Some(cpu), n, ProbeShape::BARE)
}

/// What the sleeper of a timer probe does between its wakeups.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProbeShape {
    /// The shortest sleep, ns: each expiry is this much after the end of the
    /// burst plus a phase that walks over 1 ms in steps of 37 us.
    pub sleep: u64,
    /// CPU time burnt after each wakeup, ns, as a periodic worker's burst
    /// (a CPU budget on the thread's clock, conform's `Budget`).
    pub burn: u64,
}

impl ProbeShape {
    /// `oversub calibrate`'s probe: sleeps of 0.5-1.5 ms, nothing burnt.
    pub const BARE: ProbeShape = ProbeShape {
        sleep: 500_000,
        burn: 0,
    };

    /// Shaped like a periodic task of `period` and `run`: it burns `run` per
    /// activation and sleeps about as long as such a task does (period - run,
    /// within -0.5/+0.5 ms), so that the wakeup pays what that task's does
    /// (its lag after the burst, the delayed dequeue of a task that sleeps
    /// ineligible, its cache footprint after the sleep) against a hog.
    pub fn periodic(period: u64, run: u64) -> ProbeShape {
        ProbeShape {
            sleep: period
                .saturating_sub(run)
                .saturating_sub(500_000)
                .max(500_000),
            burn: run,
        }
    }
}

/// [`timer_probe`] with the sleeper doing what `shape` says between wakeups,
/// pinned to `cpu` or (None) left with the affinity its process has.
pub fn timer_probe_shaped(cpu: Option<usize>, n: u32, shape: ProbeShape) -> u64 {
    timer_probe_cpu(cpu, n, shape).0
}

/// [`timer_probe_shaped`]'s medians of the lateness and of the sleeper's
/// CPU time across each sleep (entry, switch-in and return of
/// `clock_nanosleep()`).
fn timer_probe_cpu(cpu: Option<usize>, n: u32, shape: ProbeShape) -> (u64, u64) {
    std::thread::spawn(move || {
        match cpu {
            Some(c) => pin(c),
            None => {
                let _ = rustix::thread::set_current_timer_slack(std::num::NonZeroU64::new(1));
            }
        }
        let mut budget = Budget::new();
        let mut v = Vec::with_capacity(n as usize);
        let mut c = Vec::with_capacity(n as usize);
        for i in 0..n {
            let expiry = mono_now() + shape.sleep + (u64::from(i) * 37_000) % 1_000_000;
            let c0 = thread_cpu();
            sleep_until(expiry);
            c.push(thread_cpu().saturating_sub(c0));
            v.push(mono_now().saturating_sub(expiry));
            if shape.burn > 0 {
                budget.spin(shape.burn);
            }
        }
        (median(v), median(c))
    })
    .join()
    .unwrap_or((0, 0))
}

/// Median CPU time of a FUTEX_WAKE by a thread on `cpu` that wakes a waiter
/// blocked on the same CPU, `n` samples 300 us apart. The waiter runs at
/// nice 19 so that it does not preempt the waker (whose CPU clock would
/// then include its switch back in). None if fewer than `n` wakes found
/// the waiter blocked within 4n tries.
fn futex_wake_probe(cpu: usize, n: u32) -> Option<u64> {
    let word = Arc::new(AtomicU32::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let (w, s) = (Arc::clone(&word), Arc::clone(&stop));
    let waiter = std::thread::spawn(move || {
        pin(cpu);
        let _ = rustix::process::nice(19);
        while !s.load(Ordering::Relaxed) {
            let _ = futex::wait(&w, futex::Flags::PRIVATE, 0, None);
        }
    });
    pin(cpu);
    let mut v = Vec::with_capacity(n as usize);
    for _ in 0..u64::from(n) * 4 {
        if v.len() == n as usize {
            break;
        }
        // The woken waiter runs while this thread sleeps and blocks again.
        sleep_until(mono_now() + 300_000);
        let c0 = thread_cpu();
        let woke = futex::wake(&word, futex::Flags::PRIVATE, 1);
        let c = thread_cpu().saturating_sub(c0);
        if woke == Ok(1) {
            v.push(c);
        }
    }
    stop.store(true, Ordering::Relaxed);
    while !waiter.is_finished() {
        let _ = futex::wake(&word, futex::Flags::PRIVATE, 1);
        sleep_until(mono_now() + 1_000_000);
    }
    let _ = waiter.join();
    (v.len() == n as usize).then(|| median(v))
}

/// A thread spinning on `cpu` until the returned flag is set.
fn hog(cpu: usize) -> (Arc<AtomicBool>, std::thread::JoinHandle<()>) {
    let stop = Arc::new(AtomicBool::new(false));
    let s = Arc::clone(&stop);
    let h = std::thread::spawn(move || {
        pin(cpu);
        while !s.load(Ordering::Relaxed) {
            std::hint::spin_loop();
        }
    });
    (stop, h)
}

/// A pipe pair as (read end, write end) files.
fn pipe() -> Option<(std::fs::File, std::fs::File)> {
    let (r, w) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).ok()?;
    Some((std::fs::File::from(r), std::fs::File::from(w)))
}

/// Median latency from a timestamped pipe write by a thread on `from` to the
/// return of the blocked reader on `to`. With `gap`, the writer sleeps that
/// long between messages (so that the reader's CPU is idle when woken).
fn pipe_probe(from: usize, to: usize, n: u32, gap: u64) -> Option<u64> {
    let (mut rx, mut tx) = pipe()?;
    let (mut ack_rx, mut ack_tx) = pipe()?;
    let reader = std::thread::spawn(move || {
        pin(to);
        let mut v = Vec::with_capacity(n as usize);
        let mut b = [0u8; 8];
        for _ in 0..n {
            if rx.read_exact(&mut b).is_err() {
                break;
            }
            v.push(mono_now().saturating_sub(u64::from_le_bytes(b)));
            if ack_tx.write_all(&[0]).is_err() {
                break;
            }
        }
        v
    });
    pin(from);
    let mut a = [0u8; 1];
    for _ in 0..n {
        if gap > 0 {
            sleep_until(mono_now() + gap);
        }
        if tx.write_all(&mono_now().to_le_bytes()).is_err() || ack_rx.read_exact(&mut a).is_err() {
            break;
        }
    }
    drop(tx);
    let v = reader.join().ok()?;
    (v.len() as u32 == n).then(|| median(v))
}

/// Runs the probes in a helper thread (so that the caller's affinity is
/// left alone) and derives the costs.
pub fn calibrate(samples: u32) -> Calibration {
    let n = samples.max(1);
    let cpus = std::thread::available_parallelism()
        .map(|c| c.get() as u32)
        .unwrap_or(1);
    let probes = std::thread::spawn(move || {
        let (timer_idle, idle_cpu) = timer_probe_cpu(Some(0), n, ProbeShape::BARE);
        // Against a hog on each of the first CPUs: the machine's CPUs need
        // not deliver timer interrupts alike (a VM's vCPUs), and the model
        // has one timer_wake for all of them.
        let (timer_hog_per_cpu, nanosleep_cpu_per_cpu): (Vec<u64>, Vec<u64>) = (0..cpus.min(4)
            as usize)
            .map(|c| {
                let (stop, h) = hog(c);
                // Let the hog settle before the sleeper competes with it.
                std::thread::sleep(std::time::Duration::from_millis(20));
                let v = timer_probe_cpu(Some(c), n, ProbeShape::BARE);
                stop.store(true, Ordering::Relaxed);
                let _ = h.join();
                v
            })
            .unzip();
        let mean = |v: &[u64]| v.iter().sum::<u64>() / v.len().max(1) as u64;
        let timer_hog = mean(&timer_hog_per_cpu);
        let nanosleep_cpu = Some(mean(&nanosleep_cpu_per_cpu));
        let futex_wake_cpu = futex_wake_probe(0, n);
        let pipe_hop = pipe_probe(0, 0, n.saturating_mul(4), 0).unwrap_or(0);
        let cross_cpu = if cpus >= 2 {
            pipe_probe(0, 1, n, 300_000)
        } else {
            None
        };
        Probes {
            samples: n,
            cpus,
            timer_idle,
            timer_hog,
            timer_hog_per_cpu,
            pipe_hop,
            cross_cpu,
            nanosleep_cpu,
            nanosleep_idle_cpu: Some(idle_cpu),
            nanosleep_cpu_per_cpu,
            futex_wake_cpu,
        }
    })
    .join()
    .expect("calibration probes");
    Calibration::from_probes(probes)
}

impl Calibration {
    /// The costs that follow from the probes (see the module doc).
    pub fn from_probes(probes: Probes) -> Calibration {
        let costs = HostCosts {
            context_switch: probes.pipe_hop,
            timer_wake: probes.timer_hog.saturating_sub(probes.pipe_hop),
            idle_exit: probes.timer_idle.saturating_sub(probes.timer_hog),
            remote_wakeup: probes
                .cross_cpu
                .map_or(HostCosts::default().remote_wakeup, |x| {
                    x.saturating_sub(probes.pipe_hop)
                }),
            nanosleep: probes
                .nanosleep_cpu
                .map_or(HostCosts::default().nanosleep, |x| {
                    x.saturating_sub(probes.pipe_hop)
                }),
            nanosleep_idle: match (
                probes.nanosleep_idle_cpu,
                probes.nanosleep_cpu_per_cpu.first(),
            ) {
                (Some(idle), Some(&hog)) => idle.saturating_sub(hog),
                _ => HostCosts::default().nanosleep_idle,
            },
            futex_wake: probes
                .futex_wake_cpu
                .unwrap_or(HostCosts::default().futex_wake),
            ..HostCosts::default()
        };
        Calibration { probes, costs }
    }

    /// Reads back the `probes` of [`Calibration::to_json`].
    pub fn from_json(text: &str) -> Result<Calibration, String> {
        #[derive(Deserialize)]
        struct J {
            probes: Probes,
        }
        let j: J =
            serde_json::from_str(text.trim()).map_err(|e| format!("calibration output: {e}"))?;
        Ok(Calibration::from_probes(j.probes))
    }
}

/// A duration as scenario text: "4.123us" (whole nanoseconds).
pub fn fmt_ns(ns: u64) -> String {
    if ns % 1000 == 0 {
        format!("{}us", ns / 1000)
    } else {
        format!("{}.{:03}us", ns / 1000, ns % 1000)
    }
}

impl Calibration {
    /// The pasteable `[host.costs]` table with the probes as comments.
    pub fn table(&self) -> String {
        let p = &self.probes;
        let c = &self.costs;
        let us = |v: u64| format!("{:.1} us", v as f64 / 1000.0);
        let cross = p
            .cross_cpu
            .map(us)
            .unwrap_or_else(|| "not measured (one CPU)".into());
        let mut s = format!(
            "# oversub calibrate: {} CPUs, medians of {} samples per probe\n\
             #   timer wake, idle CPU 0:          {}\n\
             #   {:<33}{}\n\
             #   pipe ping-pong hop on CPU 0:     {}\n\
             #   pipe wakeup CPU 0 -> idle CPU 1: {}\n\
             #   CPU across a sleep, hog on CPU:  {}\n\
             #   CPU across a sleep, idle CPU 0:  {}\n\
             #   CPU of a FUTEX_WAKE on CPU 0:    {}\n\
             [host.costs]\n",
            p.cpus,
            p.samples,
            us(p.timer_idle),
            if p.timer_hog_per_cpu.len() > 1 {
                format!(
                    "timer wake, hog on CPU 0..{}:",
                    p.timer_hog_per_cpu.len() - 1
                )
            } else {
                "timer wake, hog on CPU 0:".into()
            },
            if p.timer_hog_per_cpu.len() > 1 {
                format!(
                    "{} (mean of {})",
                    us(p.timer_hog),
                    p.timer_hog_per_cpu
                        .iter()
                        .map(|&v| us(v))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            } else {
                us(p.timer_hog)
            },
            us(p.pipe_hop),
            cross,
            p.nanosleep_cpu.map_or_else(
                || "not measured".into(),
                |v| {
                    let per: Vec<String> = p.nanosleep_cpu_per_cpu.iter().map(|&c| us(c)).collect();
                    format!("{} (mean of {})", us(v), per.join(", "))
                }
            ),
            p.nanosleep_idle_cpu
                .map_or_else(|| "not measured".into(), us),
            p.futex_wake_cpu.map_or_else(|| "not measured".into(), us),
        );
        let notes = [
            "timer wake against a hog - context_switch",
            "idle timer wake - timer wake against a hog",
            "ping-pong hop (wakeup + switch)",
            if p.cross_cpu.is_some() {
                "cross-CPU wakeup - context_switch"
            } else {
                "default: not measured on one CPU"
            },
            "default: not measured (depends on the working set)",
            "default: estimate, not probed (docs/model.md)",
            if p.nanosleep_cpu.is_some() {
                "CPU across a sleep - context_switch"
            } else {
                "default: not measured"
            },
            if p.nanosleep_idle_cpu.is_some() && !p.nanosleep_cpu_per_cpu.is_empty() {
                "CPU across a sleep: idle CPU 0 - hog on CPU 0"
            } else {
                "default: not measured"
            },
            if p.futex_wake_cpu.is_some() {
                "CPU of a FUTEX_WAKE that wakes a waiter"
            } else {
                "default: not measured"
            },
        ];
        for ((name, v), note) in HostCosts::NAMES.iter().zip(c.values()).zip(notes) {
            let val = format!("\"{}\"", fmt_ns(v));
            s += &format!("{name:<15}= {val:<12} # {note}\n");
        }
        s
    }

    pub fn to_json(&self) -> serde_json::Value {
        let costs: serde_json::Map<String, serde_json::Value> = HostCosts::NAMES
            .iter()
            .zip(self.costs.values())
            .map(|(k, v)| (k.to_string(), serde_json::Value::from(v)))
            .collect();
        serde_json::json!({ "probes": self.probes, "costs_ns": costs })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_parses_back_as_host_costs() {
        let cal = Calibration {
            probes: Probes {
                samples: 3,
                cpus: 2,
                timer_idle: 30_500,
                timer_hog: 6_250,
                timer_hog_per_cpu: vec![6_000, 6_500],
                pipe_hop: 2_001,
                cross_cpu: Some(25_000),
                nanosleep_cpu: Some(15_500),
                nanosleep_cpu_per_cpu: vec![15_000, 16_000],
                nanosleep_idle_cpu: Some(19_000),
                futex_wake_cpu: Some(1_700),
            },
            costs: HostCosts {
                timer_wake: 4_249,
                idle_exit: 24_250,
                context_switch: 2_001,
                remote_wakeup: 22_999,
                migration: 0,
                yield_to: 0,
                nanosleep: 13_499,
                nanosleep_idle: 4_000,
                futex_wake: 1_700,
            },
        };
        let src = format!("{}[[task]]\nname = \"a\"\nkind = \"hog\"\n", cal.table());
        let sc = oversub::scenario::Scenario::parse("cal.toml", &src).unwrap();
        assert_eq!(sc.host.costs, cal.costs);
        assert_eq!(median(vec![5, 1, 3, 2]), 2);
        assert_eq!(fmt_ns(4_000), "4us");
        assert_eq!(fmt_ns(4_007), "4.007us");
    }
}
