//! Run results: the record a run produces (`Report`, built by the simulator
//! in `sim/result.rs`), the JSON object of `oversub run --json` and the
//! readable table. It reads only this record, never the simulator.
//!
//! Everything but `wall_ns` and the derived rates is a pure function of the
//! scenario and seed (docs/determinism.md).

use crate::engine::Nanos;
use serde::Serialize;
use std::fmt::Write;

#[derive(Serialize, Debug, Clone, Default, PartialEq)]
pub struct Percentiles {
    pub samples: u64,
    pub p50: u64,
    pub p99: u64,
    pub max: u64,
    pub mean: u64,
}

impl Percentiles {
    /// Nearest-rank percentiles of `v` (sorted in place).
    pub fn of(v: &mut [u64]) -> Percentiles {
        if v.is_empty() {
            return Percentiles::default();
        }
        v.sort_unstable();
        let rank = |p: f64| v[((p * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1];
        Percentiles {
            samples: v.len() as u64,
            p50: rank(0.50),
            p99: rank(0.99),
            max: *v.last().unwrap(),
            mean: (v.iter().map(|&x| x as u128).sum::<u128>() / v.len() as u128) as u64,
        }
    }
}

/// The log-bucketed histogram of the VM samples, which can number millions
/// per run (`stats::hist`: < 1.6% bucket error; count, mean and maximum
/// exact).
pub use crate::stats::hist::LogHist as Hist;

impl Hist {
    /// Nearest-rank percentiles (bucket upper bounds, capped at the maximum).
    pub fn percentiles(&self) -> Percentiles {
        if self.count() == 0 {
            return Percentiles::default();
        }
        let q = |p: f64| self.quantile(p).unwrap_or(0);
        Percentiles {
            samples: self.count(),
            p50: q(0.50),
            p99: q(0.99),
            max: self.max(),
            mean: self.mean(),
        }
    }
}

/// One program thread's progress (`program.threads[]`).
#[derive(Serialize, Debug, Clone, Default, PartialEq)]
pub struct ProgramThreadReport {
    pub name: String,
    /// Phase iterations completed (rt-app logs one line per iteration).
    pub phase_loops: u64,
    /// When the thread finished (absent while it still runs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finished_ns: Option<u64>,
    /// Waits for a taken mutex: count and total time to acquisition.
    pub lock_waits: u64,
    pub lock_wait_ns: u64,
    /// Duration of each loop iteration (the program's per-op latency).
    pub loop_ns: Hist,
}

/// A thread program's results (`program`, present only for programs).
#[derive(Serialize, Debug, Clone, Default, PartialEq)]
pub struct ProgramReport {
    /// Every thread finished before the end of the run.
    pub completed: bool,
    pub threads: Vec<ProgramThreadReport>,
    /// What the model approximated or ignored of the input.
    pub fidelity: Vec<crate::workload::FidelityNote>,
}

/// One VM's results (`vms[]`, present only when the scenario has VMs).
#[derive(Serialize, Debug, Clone, Default)]
pub struct VmReport {
    pub name: String,
    pub vcpus: u32,
    pub workload: String,
    /// Completed work units (a compute burst and its critical section; a
    /// pingpong handoff).
    pub ops: u64,
    pub ops_per_s: f64,
    /// Host CPU time of the vCPU tasks.
    pub cpu_ns: u64,
    /// Split of `cpu_ns` (they add up to it).
    pub guest_useful_ns: u64,
    pub spinning_ns: u64,
    pub halt_polling_ns: u64,
    pub exit_overhead_ns: u64,
    /// With `[guest] cpuidle_haltpoll` (program VMs): the guest's own idle
    /// polling, the fifth part of the split of `cpu_ns`, and its counts
    /// (absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub guest_haltpoll: Option<GuestHaltpollReport>,
    /// Time the vCPU tasks were runnable but not running.
    pub steal_ns: u64,
    pub ple_exits: u64,
    pub on_spin_calls: u64,
    pub yield_to_attempts: u64,
    pub yield_to_successes: u64,
    pub yield_to_esrch: u64,
    /// Successful on-spin boosts whose target was the confirmed IPI receiver
    /// (IPI-aware form only).
    pub boosts_to_ipi_receiver: u64,
    /// Successful on-spin boosts whose target was itself in a guest PAUSE
    /// loop (a lock waiter or IPI sender, not the one it waits for).
    pub boosts_to_spinner: u64,
    /// Guest timer ticks taken (LAPIC timer interrupts, `[kvm] guest_hz`).
    pub guest_ticks: u64,
    /// Boosts to an "IPI receiver" that no longer owed the spinner an IPI
    /// (nothing from it queued or in service): a stale preference.
    pub boosts_to_stale_receiver: u64,
    /// KVM_HC_SCHED_YIELD / KVM_HC_KICK_CPU path only (vcpu->stat.directed_yield_*).
    pub directed_yield_attempted: u64,
    pub directed_yield_successful: u64,
    pub halts: u64,
    pub pv_kicks: u64,
    pub ipis_sent: u64,
    /// Of `ipis_sent`, the reschedule IPIs (`smp_send_reschedule`: a
    /// remote `resched_curr()` of a busy guest CPU, the phase generator's
    /// asynchronous wakeups).
    pub ipis_reschedule: u64,
    /// Of `ipis_sent`, the call-function-single IPIs other than TLB
    /// shootdowns': wakeups queued on an idle guest CPU's wakelist
    /// (`ttwu_queue_wakelist`, 6.12) and the phase generator's synchronous
    /// calls (`smp_call_function_single`). The rest of `ipis_sent` are the
    /// shootdowns' call-function IPIs.
    pub ipis_call_function_single: u64,
    /// ICR writes and PV send-IPI hypercalls that exited to KVM.
    pub ipi_exits: u64,
    /// Unicast IPIs recorded by the IPI tracker.
    pub ipis_tracked: u64,
    pub eoi_exits: u64,
    pub lock_wait_ns: Percentiles,
    pub lock_hold_ns: Percentiles,
    /// From delivery to the start of the guest handler.
    pub ipi_latency_ns: Percentiles,
    /// Time vCPUs spent in `csd_lock_wait` (synchronous cross-CPU calls,
    /// TLB shootdowns: send to the last handler's end), and how many.
    pub csd_wait_ns: u64,
    pub csd_waits: u64,
    /// Total wait for guest kernel spinlocks (the sum behind
    /// `lock_wait_ns`'s percentiles).
    pub spinlock_wait_total_ns: u64,
    /// A program VM's program as a whole (absent for the phase generator).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub program: Option<ProgramSummary>,
    /// Per-op latency: from the start of a vCPU's work unit to its end
    /// (preemption and spinning included), as the guest would time it; for
    /// a program VM, one kernel lock section (attempt to release), or with
    /// `[[vm]] ops`, one loop of an `ops` thread, start to end.
    pub op_latency_ns: Hist,
    /// A program VM's guest threads, as its own scheduler accounted them
    /// (empty, and absent from the output, for the phase generator).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub threads: Vec<GuestThreadReport>,
}

/// cpuidle-haltpoll in a program VM's guest (`vms[].guest_haltpoll`).
#[derive(Serialize, Debug, Clone, Default, PartialEq, Eq)]
pub struct GuestHaltpollReport {
    /// vCPU time spent polling in the guest's idle loop (`poll_idle`).
    pub polling_ns: u64,
    /// Polls begun.
    pub polls: u64,
    /// Polls ended by a wakeup (the CPU did not HLT).
    pub polls_woken: u64,
    /// Wakeups of a polling guest CPU that sent no reschedule IPI
    /// (`sched_wake_idle_without_ipi`).
    pub wakeups_without_ipi: u64,
}

/// A program VM's program (`vms[].program`): completions and the time the
/// threads waited, summed over its threads.
#[derive(Serialize, Debug, Clone, Default)]
pub struct ProgramSummary {
    /// Phase iterations completed by all threads.
    pub phase_loops: u64,
    /// When the last thread finished (None: some thread still runs, or
    /// runs until the end by construction).
    pub finished_ns: Option<u64>,
    /// Futex-mutex (rt-app `lock`) and kernel sleeping-lock waits, in ns.
    pub lock_wait_ns: u64,
    pub sleeping_lock_wait_ns: u64,
    /// Remote TLB flushes (`flush_tlb_multi` calls: the flushing thread's
    /// mm had another CPU in its cpumask, IPIs sent or not; the recorder's
    /// TLB_REMOTE_SEND_IPI events).
    pub tlb_shootdowns: u64,
}

impl ProgramSummary {
    /// The summary of a program's threads.
    pub fn of(threads: &[GuestThreadReport]) -> ProgramSummary {
        let finished = threads
            .iter()
            .map(|t| t.finished_ns)
            .collect::<Option<Vec<_>>>();
        ProgramSummary {
            phase_loops: threads.iter().map(|t| t.phase_loops).sum(),
            finished_ns: finished.and_then(|f| f.into_iter().max()),
            lock_wait_ns: threads.iter().map(|t| t.lock_wait_ns).sum(),
            sleeping_lock_wait_ns: threads.iter().map(|t| t.sleeping_lock_wait_ns).sum(),
            tlb_shootdowns: 0,
        }
    }
}

/// One guest thread of a program VM (`vms[].threads[]`).
#[derive(Serialize, Debug, Clone)]
pub struct GuestThreadReport {
    pub name: String,
    /// Guest `sum_exec_runtime` (with PV steal time, preempted time is not
    /// charged; without it, it is).
    pub cpu_ns: u64,
    /// Runnable on a guest runqueue but not current.
    pub wait_ns: u64,
    pub nr_switches: u64,
    pub nr_migrations: u64,
    /// Guest wakeup-to-run latency (guest clock = host time).
    pub wakeup_latency_ns: Percentiles,
    /// Program progress: phase iterations completed, finish time, mutex waits.
    pub phase_loops: u64,
    pub finished_ns: Option<u64>,
    pub lock_waits: u64,
    pub lock_wait_ns: u64,
    /// Kernel sleeping locks (`syscall` with `kind` mutex/rwsem) found
    /// taken, and the time from then to acquisition (spinning and sleeping).
    pub sleeping_lock_waits: u64,
    pub sleeping_lock_wait_ns: u64,
    /// Duration of each loop iteration (the program's per-op latency).
    pub loop_ns: Hist,
}

#[derive(Serialize, Debug, Clone)]
pub struct TaskReport {
    pub name: String,
    pub cgroup: String,
    pub cpu: u32,
    pub cpu_ns: u64,
    pub wait_ns: u64,
    pub nr_switches: u64,
    pub nr_voluntary_switches: u64,
    pub nr_involuntary_switches: u64,
    pub nr_yields: u64,
    pub nr_yield_to: u64,
    pub nr_yield_to_ok: u64,
    /// Successful yield_to() calls after which the target got this CPU.
    pub nr_yield_to_target_ran: u64,
    pub nr_migrations: u64,
    pub nr_wakeups: u64,
    pub wakeup_latency_ns: Percentiles,
}

#[derive(Serialize, Debug, Clone)]
pub struct CgroupReport {
    pub path: String,
    /// CPU time of the tasks in this cgroup and its descendants (cpuacct.usage).
    pub cpu_ns: u64,
}

#[derive(Serialize, Debug, Clone)]
pub struct CpuReport {
    pub id: u32,
    pub busy_ns: u64,
    pub nr_switches: u64,
}

#[derive(Serialize, Debug, Clone)]
pub struct Report {
    pub kernel: String,
    pub duration_ns: u64,
    pub seed: u64,
    pub cpus_n: u32,
    pub hz: u32,
    /// `[host.costs]` the run used, ns, by key.
    pub host_costs_ns: std::collections::BTreeMap<String, u64>,
    pub events: u64,
    /// Wall-clock time of the run (not deterministic).
    pub wall_ns: u64,
    pub tasks: Vec<TaskReport>,
    pub cgroups: Vec<CgroupReport>,
    pub cpus: Vec<CpuReport>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub vms: Vec<VmReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub program: Option<ProgramReport>,
    /// What the `[host.yield]` policies did.
    pub yield_stats: crate::sched::yield_to::YieldStats,
    /// The host scheduler's IPIs to other CPUs by type, as 6.12 sends them
    /// for remote wakeups and preemptions (`sched::ipis`).
    pub sched_ipis: crate::sched::ipis::SchedIpiStats,
    /// The scenario file and the effective scenario (after `--set`,
    /// `--seed` and `--duration`).
    pub scenario_file: String,
    pub scenario: serde_json::Value,
}

impl Report {
    /// Records the scenario file and the effective scenario of this run
    /// (the seed and a duration override included).
    pub fn record_scenario(&mut self, sc: &crate::scenario::Scenario, duration: Option<Nanos>) {
        self.scenario_file = sc.file.clone();
        let mut t = sc.effective.clone();
        let host = t
            .entry("host")
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        if let toml::Value::Table(h) = host {
            h.insert("seed".into(), toml::Value::Integer(sc.host.seed as i64));
            if let Some(d) = duration {
                h.insert("duration".into(), toml::Value::String(format!("{}ns", d.0)));
            }
        }
        self.scenario = serde_json::to_value(&t).unwrap_or(serde_json::Value::Null);
    }

    /// The JSON object (one line).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("report serialises")
    }

    /// A readable table.
    pub fn to_table(&self) -> String {
        self.table(false)
    }

    /// The table's first screen (`oversub run --brief`): the header line,
    /// one line per VM and the CPUs' busy share; with VMs the per-thread,
    /// per-task and per-cgroup tables are left out (a host-only run keeps
    /// its task table), and a program's per-thread table too.
    pub fn to_brief(&self) -> String {
        self.table(true)
    }

    fn table(&self, brief: bool) -> String {
        let mut o = String::new();
        let d = self.duration_ns as f64;
        let _ = writeln!(
            o,
            "kernel {}  cpus {}  HZ {}  duration {}  seed {}  events {}  wall {:.3}s ({:.1} Mevents/s)",
            self.kernel,
            self.cpus_n,
            self.hz,
            Nanos(self.duration_ns),
            self.seed,
            self.events,
            self.wall_ns as f64 / 1e9,
            self.events as f64 / (self.wall_ns.max(1) as f64 / 1e9) / 1e6
        );
        if !self.vms.is_empty() {
            let _ = writeln!(
                o,
                "{:<12} {:>10} {:>10} {:>10} {:>10} {:>7} {:>7} {:>7} {:>7} {:>9} {:>9} {:>10} {:>15}",
                "vm",
                "ops/s",
                "op_p50_us",
                "op_p99_us",
                "cpu%",
                "useful%",
                "spin%",
                "exit%",
                "steal%",
                "ple_exits",
                "yield_ok",
                "ipis",
                "lockwait_p99_us"
            );
            let _ = writeln!(
                o,
                "(ops/s: the workload's completed operations per second; op_p50/p99_us: per-op latency \
                 percentiles in us (an op from its start to its end, preemption included); %: percent of one \
                 CPU over the run; ple_exits, yield_ok (successful directed yields), ipis: counts over the run)"
            );
            for v in &self.vms {
                let pct = |x: u64| 100.0 * x as f64 / d;
                let q = |p: f64| {
                    v.op_latency_ns
                        .quantile(p)
                        .map_or("-".into(), |x| format!("{:.1}", x as f64 / 1e3))
                };
                let _ = writeln!(
                    o,
                    "{:<12} {:>10.0} {:>10} {:>10} {:>10.2} {:>7.2} {:>7.2} {:>7.2} {:>7.2} {:>9} {:>9} {:>10} {:>15.1}",
                    v.name,
                    v.ops_per_s,
                    q(0.50),
                    q(0.99),
                    pct(v.cpu_ns),
                    pct(v.guest_useful_ns),
                    pct(v.spinning_ns),
                    pct(v.exit_overhead_ns),
                    pct(v.steal_ns),
                    v.ple_exits,
                    v.yield_to_successes,
                    v.ipis_sent,
                    v.lock_wait_ns.p99 as f64 / 1e3
                );
            }
            for v in self.vms.iter().filter(|v| !brief && !v.threads.is_empty()) {
                let _ = writeln!(
                    o,
                    "{:<20} {:>7} {:>10} {:>9} {:>8} {:>8} {:>12} {:>11} {:>11}",
                    format!("{} thread", v.name),
                    "cpu%",
                    "cpu_ms",
                    "wait_ms",
                    "switches",
                    "loops",
                    "loop_p99_us",
                    "lat_p50_us",
                    "lockwait_ms"
                );
                for t in &v.threads {
                    let _ = writeln!(
                        o,
                        "{:<20} {:>7.2} {:>10.1} {:>9.1} {:>8} {:>8} {:>12} {:>11.1} {:>11.1}",
                        t.name,
                        100.0 * t.cpu_ns as f64 / d,
                        t.cpu_ns as f64 / 1e6,
                        t.wait_ns as f64 / 1e6,
                        t.nr_switches,
                        t.phase_loops,
                        t.loop_ns
                            .quantile(0.99)
                            .map_or("-".into(), |x| format!("{:.1}", x as f64 / 1e3)),
                        t.wakeup_latency_ns.p50 as f64 / 1e3,
                        t.lock_wait_ns as f64 / 1e6
                    );
                }
            }
        }
        let hide = brief && !self.vms.is_empty();
        if !hide {
            let _ = writeln!(
                o,
                "{:<20} {:<12} {:>8} {:>10} {:>9} {:>8} {:>11} {:>11} {:>11}",
                "task",
                "cgroup",
                "cpu%",
                "cpu_ms",
                "wait_ms",
                "switches",
                "lat_p50_us",
                "lat_p99_us",
                "lat_max_us"
            );
        }
        for t in self.tasks.iter().filter(|_| !hide) {
            let l = &t.wakeup_latency_ns;
            let lat = |x: u64| {
                if l.samples == 0 {
                    "-".to_string()
                } else {
                    format!("{:.1}", x as f64 / 1e3)
                }
            };
            let _ = writeln!(
                o,
                "{:<20} {:<12} {:>8.2} {:>10.1} {:>9.1} {:>8} {:>11} {:>11} {:>11}",
                t.name,
                t.cgroup,
                100.0 * t.cpu_ns as f64 / d,
                t.cpu_ns as f64 / 1e6,
                t.wait_ns as f64 / 1e6,
                t.nr_switches,
                lat(l.p50),
                lat(l.p99),
                lat(l.max)
            );
        }
        if hide {
            let _ = writeln!(
                o,
                "(per-thread, per-task and per-cgroup tables: without --brief)"
            );
        } else {
            let _ = writeln!(o, "{:<20} {:>10}", "cgroup", "cpu%");
        }
        for g in self.cgroups.iter().filter(|_| !hide) {
            let _ = writeln!(o, "{:<20} {:>10.2}", g.path, 100.0 * g.cpu_ns as f64 / d);
        }
        let _ = write!(o, "cpu busy%:");
        for c in &self.cpus {
            let _ = write!(o, " cpu{}={:.1}", c.id, 100.0 * c.busy_ns as f64 / d);
        }
        o.push('\n');
        if let Some(p) = &self.program {
            let _ = writeln!(
                o,
                "program: {}",
                if p.completed {
                    "completed"
                } else {
                    "running at the end"
                }
            );
            let _ = writeln!(
                o,
                "{:<20} {:>11} {:>12} {:>10} {:>12}",
                "thread", "phase_loops", "finished_ms", "lock_waits", "lock_wait_ms"
            );
            for t in p.threads.iter().filter(|_| !brief) {
                let fin = t
                    .finished_ns
                    .map_or("-".to_string(), |f| format!("{:.3}", f as f64 / 1e6));
                let _ = writeln!(
                    o,
                    "{:<20} {:>11} {:>12} {:>10} {:>12.3}",
                    t.name,
                    t.phase_loops,
                    fin,
                    t.lock_waits,
                    t.lock_wait_ns as f64 / 1e6
                );
            }
            for n in &p.fidelity {
                let _ = writeln!(o, "fidelity: {} {:?}: {}", n.at, n.fidelity, n.why);
            }
        }
        o
    }
}
