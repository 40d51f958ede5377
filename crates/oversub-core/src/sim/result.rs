//! The record of a run: the simulator hands its state over as a `Report`
//! (src/report.rs), which everything downstream (tables, JSON, sweeps,
//! reproduce) reads instead of the simulator.

use super::Simulator;
use crate::engine::Nanos;
use crate::kvm::VcpuIdx;
use crate::report::*;
use crate::sched::TaskId;

impl Simulator {
    pub(super) fn build_report(&mut self, duration: Nanos, wall_ns: u64) -> Report {
        let sim = self;
        let events = sim.events();
        let s = &mut sim.host.sched;
        let mut tasks = Vec::new();
        for t in s.tasks.iter_mut() {
            let cpu_ns = s.ses[t.se.idx()].sum_exec_runtime;
            tasks.push(TaskReport {
                name: t.name.clone(),
                cgroup: s.groups[t.group.idx()].path.clone(),
                cpu: t.cpu.0,
                cpu_ns,
                wait_ns: t.stats.wait_ns,
                nr_switches: t.stats.nr_switches,
                nr_voluntary_switches: t.stats.nr_voluntary_switches,
                nr_involuntary_switches: t.stats.nr_involuntary_switches,
                nr_yields: t.stats.nr_yields,
                nr_yield_to: t.stats.nr_yield_to,
                nr_yield_to_ok: t.stats.nr_yield_to_ok,
                nr_yield_to_target_ran: t.stats.nr_yield_to_target_ran,
                nr_migrations: t.stats.nr_migrations,
                nr_wakeups: t.stats.nr_wakeups,
                wakeup_latency_ns: crate::report::Percentiles::of(&mut t.stats.wakeup_latency),
            });
        }
        let mut cgroups = Vec::new();
        for (gi, g) in s.groups.iter().enumerate() {
            let cpu_ns = s
                .tasks
                .iter()
                .filter(|t| s.group_is_descendant(t.group, crate::sched::GroupId(gi as u32)))
                .map(|t| s.ses[t.se.idx()].sum_exec_runtime)
                .sum();
            cgroups.push(CgroupReport {
                path: g.path.clone(),
                cpu_ns,
            });
        }
        let mut vms = sim.vm_reports(duration);
        // `[[vm]] ops`: a program VM's ops are its chosen threads' loops,
        // each loop weighted by its thread's `ops_per_loop` (1 unless the
        // program says how many of the real program's ops a loop is).
        for (v, sel) in vms.iter_mut().zip(&sim.vm_ops) {
            if let Some(sel) = sel {
                let ops: f64 = sel
                    .iter()
                    .filter_map(|&(i, w)| v.threads.get(i).map(|t| t.phase_loops as f64 * w))
                    .sum();
                v.ops = ops.round() as u64;
                v.ops_per_s = ops / (duration.0.max(1) as f64 / 1e9);
                // ... and an op's latency is one of those loops, start to end
                // (with ops_per_loop, the histogram counts loops, not ops).
                let mut h = crate::stats::hist::LogHist::default();
                for t in sel.iter().filter_map(|&(i, _)| v.threads.get(i)) {
                    h.merge(&t.loop_ns);
                }
                v.op_latency_ns = h;
            }
        }
        let program = sim.program_report();
        let s = &mut sim.host.sched;
        let cpus = s
            .rqs
            .iter()
            .map(|r| CpuReport {
                id: r.cpu.0,
                busy_ns: r.busy_ns,
                nr_switches: r.nr_switches,
            })
            .collect();
        Report {
            kernel: s.cfg.preset.name().to_string(),
            duration_ns: duration.0,
            seed: 0,
            cpus_n: s.cfg.nr_cpus,
            hz: s.cfg.hz,
            host_costs_ns: crate::sched::HostCosts::NAMES
                .iter()
                .zip(s.cfg.costs.values())
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
            events,
            wall_ns,
            tasks,
            cgroups,
            cpus,
            vms,
            program,
            yield_stats: s.yield_stats.clone(),
            sched_ipis: s.ipi_stats.clone(),
            scenario_file: String::new(),
            scenario: serde_json::Value::Null,
        }
    }

    /// Per-VM results (empty without VMs).
    pub fn vm_reports(&self, duration: Nanos) -> Vec<crate::report::VmReport> {
        self.vms
            .ids()
            .zip(self.vms.iter())
            .map(|(vi, v)| {
                let mut cpu_ns = 0;
                let mut steal = 0;
                let mut lefts = Vec::new();
                // Host switch cost paid by bursts in progress (exit overhead).
                let mut switch_paid = Nanos::ZERO;
                for k in 0..v.n {
                    let id = v.tasks.task(VcpuIdx(k)).idx();
                    let t = &self.host.sched.tasks[id];
                    cpu_ns += self.host.sched.ses[t.se.idx()].sum_exec_runtime;
                    steal += t.stats.wait_ns;
                    // The unused part of each vCPU's current burst.
                    let ts = &self.tasks[id];
                    let ran = ts
                        .running_since
                        .map_or(Nanos::ZERO, |since| self.now - since);
                    let paid = ran.min(ts.overhead);
                    switch_paid += paid;
                    lefts.push(match self.host.remaining(TaskId(id as u32)) {
                        Some(r) => r - (ran - paid),
                        None => Nanos::ZERO,
                    });
                }
                let mut r = v.report(duration, cpu_ns, steal, &lefts);
                r.exit_overhead_ns += switch_paid.0;
                r.threads = self.guest_threads(vi);
                if let Some(g) = &self.vms[vi].guest {
                    let mut p = crate::report::ProgramSummary::of(&r.threads);
                    p.tlb_shootdowns = g.tlb_shootdowns;
                    r.program = Some(p);
                }
                r
            })
            .collect()
    }

    /// The program's results (None without a program).
    pub fn program_report(&self) -> Option<crate::report::ProgramReport> {
        let p = self.world.program.as_ref()?;
        let prog = p.program();
        Some(crate::report::ProgramReport {
            completed: p.all_done(),
            threads: prog
                .threads
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    let s = p.stats(i);
                    crate::report::ProgramThreadReport {
                        name: t.name.clone(),
                        phase_loops: s.phase_loops,
                        finished_ns: s.finished_at.map(|f| f.0),
                        lock_waits: s.lock_waits,
                        lock_wait_ns: s.lock_wait_ns,
                        loop_ns: s.loop_ns.clone(),
                    }
                })
                .collect(),
            fidelity: prog.fidelity.clone(),
        })
    }
}
