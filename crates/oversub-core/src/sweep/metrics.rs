//! The metrics a reviewer asks for, computed from one run's `Report` and the
//! scenario that produced it (never from the simulator's state): throughput
//! and per-op latency, fairness against the entitled share, Jain's index over
//! VMs, CPU lost by bystanders, wakeup latency, spin / IPI-wait / lock-wait,
//! yields and PLE exits. Every name carries its unit (README, "Metrics").

use crate::report::Report;
use crate::scenario::{expanded_names, parent_path, Scenario, TaskKind};
use crate::sched::weight::nice_to_weight;
use crate::stats::hist::LogHist;
use crate::stats::jain;
use std::collections::{BTreeMap, BTreeSet};

/// Named values of one run, in a fixed order: global metrics, then
/// `vm.NAME.*`, `cg.PATH.*`, `task.NAME.*`.
pub type Metrics = Vec<(String, f64)>;

fn us(ns: u64) -> f64 {
    ns as f64 / 1e3
}

/// One thread of the host (a task instance or a vCPU) for the entitled-share
/// computation.
struct Leaf {
    name: String,
    cgroup: String,
    weight: f64,
}

/// Entitled CPU of every cgroup and leaf (in CPUs): weighted max-min
/// ("water-filling") down the cgroup tree, each party capped at the number
/// of threads under it, i.e. as if every thread were always runnable.
/// Affinity masks are ignored (docs: README "Metrics").
fn entitled(sc: &Scenario, leaves: &[Leaf]) -> (BTreeMap<String, f64>, Vec<f64>) {
    let weight_of: BTreeMap<&str, f64> = sc
        .cgroups
        .iter()
        .map(|c| (c.path.as_str(), (c.weight as f64) * 1024.0 / 100.0))
        .collect();
    // Children of each cgroup: sub-cgroups and leaves.
    let mut kids: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for c in &sc.cgroups {
        kids.entry(parent_path(&c.path))
            .or_default()
            .push(c.path.clone());
    }
    let mut threads: BTreeMap<String, usize> = BTreeMap::new();
    for l in leaves {
        let mut p = l.cgroup.clone();
        loop {
            *threads.entry(p.clone()).or_default() += 1;
            if p == "/" {
                break;
            }
            p = parent_path(&p);
        }
    }
    let mut cg_share = BTreeMap::new();
    let mut leaf_share = vec![0.0; leaves.len()];
    // (node, capacity) work list; node is a cgroup path.
    let mut work = vec![("/".to_string(), sc.host.cpus as f64)];
    while let Some((node, cap)) = work.pop() {
        cg_share.insert(node.clone(), cap);
        // Parties: (weight, demand, Some(cgroup) | None for leaf index).
        let mut parties: Vec<(f64, f64, Result<String, usize>)> = Vec::new();
        for c in kids.get(&node).into_iter().flatten() {
            let n = threads.get(c).copied().unwrap_or(0);
            if n > 0 {
                parties.push((weight_of[c.as_str()], n as f64, Ok(c.clone())));
            } else {
                cg_share.insert(c.clone(), 0.0);
            }
        }
        for (i, l) in leaves.iter().enumerate() {
            if l.cgroup == node {
                parties.push((l.weight, 1.0, Err(i)));
            }
        }
        // Water-filling: repeatedly give capped parties their demand.
        let mut alloc = vec![0.0; parties.len()];
        let mut open: Vec<usize> = (0..parties.len()).collect();
        let mut left = cap;
        loop {
            let wsum: f64 = open.iter().map(|&i| parties[i].0).sum();
            if open.is_empty() || wsum == 0.0 {
                break;
            }
            let capped: Vec<usize> = open
                .iter()
                .copied()
                .filter(|&i| left * parties[i].0 / wsum >= parties[i].1)
                .collect();
            if capped.is_empty() {
                for &i in &open {
                    alloc[i] = left * parties[i].0 / wsum;
                }
                break;
            }
            for &i in &capped {
                alloc[i] = parties[i].1;
                left -= parties[i].1;
            }
            open.retain(|i| !capped.contains(i));
        }
        for (p, a) in parties.into_iter().zip(alloc) {
            match p.2 {
                Ok(c) => work.push((c, a)),
                Err(i) => leaf_share[i] = a,
            }
        }
    }
    (cg_share, leaf_share)
}

/// The metrics of a run that are not per VM or per task (those are named
/// `NAME.metric`): a sweep axis may not take these names (they would be
/// two columns of one name).
pub const GLOBAL_METRICS: [&str; 24] = [
    "bystander_lost_pct",
    "exit_pct",
    "hypercall_yields_per_op",
    "ipi_wait_p99_us",
    "ipis",
    "jain_vms_cpu",
    "jain_vms_ops",
    "lock_wait_mean_us",
    "lock_wait_p99_us",
    "op_latency_us",
    "op_p50_us",
    "op_p99_us",
    "ple_exits",
    "ple_exits_per_op",
    "spin_pct",
    "steal_pct",
    "throughput",
    "useful_pct",
    "vm_cpu_pct",
    "wakeup_p50_us",
    "wakeup_p99_us",
    "yield_to_ok",
    "yields",
    "yields_per_op",
];

/// The run's per-op latencies pooled: each VM's ops (a vCPU's work unit),
/// each nested guest thread's and each host program thread's loop
/// iterations. Empty when no workload defines an op.
pub fn op_latency(r: &Report) -> LogHist {
    let mut h = LogHist::default();
    for v in &r.vms {
        h.merge(&v.op_latency_ns);
        for t in &v.threads {
            h.merge(&t.loop_ns);
        }
    }
    if let Some(p) = &r.program {
        for t in &p.threads {
            h.merge(&t.loop_ns);
        }
    }
    h
}

/// Computes the metrics of `r`, a run of `sc`.
pub fn metrics(sc: &Scenario, r: &Report) -> Metrics {
    let mut m: Metrics = Vec::new();
    let d = r.duration_ns.max(1) as f64;
    let pct = |ns: u64| 100.0 * ns as f64 / d;
    let mut push = |k: String, v: f64| m.push((k, v));

    // Host threads, in report order: plain tasks first, then vCPUs.
    let mut leaves = Vec::new();
    let mut party: BTreeSet<String> = BTreeSet::new();
    for t in &sc.tasks {
        let names = expanded_names(t);
        if let TaskKind::YieldLoop { target, .. } = &t.kind {
            party.extend(names.iter().cloned());
            party.extend(target.iter().cloned());
        }
        for n in names {
            leaves.push(Leaf {
                name: n,
                cgroup: t.cgroup.clone(),
                weight: nice_to_weight(t.nice) as f64 / 1024.0,
            });
        }
    }
    let n_plain = leaves.len();
    for v in &sc.vms {
        for k in 0..v.vcpus {
            leaves.push(Leaf {
                name: format!("{}.vcpu{k}", v.name),
                cgroup: v.vcpu_cgroups[k as usize].clone(),
                weight: 1024.0,
            });
        }
    }
    let (cg_ent, leaf_ent) = entitled(sc, &leaves);
    let cpu_of: BTreeMap<&str, u64> = r
        .tasks
        .iter()
        .map(|t| (t.name.as_str(), t.cpu_ns))
        .collect();

    // Global.
    if !r.vms.is_empty() {
        let ops: u64 = r.vms.iter().map(|v| v.ops).sum();
        let vcpus: u64 = r.vms.iter().map(|v| u64::from(v.vcpus)).sum();
        push("throughput".into(), r.vms.iter().map(|v| v.ops_per_s).sum());
        // Mean time one guest worker (vCPU) takes per op.
        push(
            "op_latency_us".into(),
            if ops == 0 {
                f64::NAN
            } else {
                vcpus as f64 * d / ops as f64 / 1e3
            },
        );
        let ple: u64 = r.vms.iter().map(|v| v.ple_exits).sum();
        let ytry: u64 = r.vms.iter().map(|v| v.yield_to_attempts).sum();
        push(
            "ple_exits_per_op".into(),
            if ops == 0 {
                f64::NAN
            } else {
                ple as f64 / ops as f64
            },
        );
        let hc: u64 = r.vms.iter().map(|v| v.directed_yield_attempted).sum();
        push(
            "hypercall_yields_per_op".into(),
            if ops == 0 {
                f64::NAN
            } else {
                hc as f64 / ops as f64
            },
        );
        push(
            "yields_per_op".into(),
            if ops == 0 {
                f64::NAN
            } else {
                ytry as f64 / ops as f64
            },
        );
        let per_vcpu: Vec<f64> = r
            .vms
            .iter()
            .map(|v| v.cpu_ns as f64 / f64::from(v.vcpus.max(1)))
            .collect();
        push("jain_vms_cpu".into(), jain(&per_vcpu));
        let tput: Vec<f64> = r
            .vms
            .iter()
            .map(|v| v.ops_per_s / f64::from(v.vcpus.max(1)))
            .collect();
        push("jain_vms_ops".into(), jain(&tput));
        let sum = |f: &dyn Fn(&crate::report::VmReport) -> u64| r.vms.iter().map(f).sum::<u64>();
        push("vm_cpu_pct".into(), pct(sum(&|v| v.cpu_ns)));
        push("useful_pct".into(), pct(sum(&|v| v.guest_useful_ns)));
        push("spin_pct".into(), pct(sum(&|v| v.spinning_ns)));
        push("exit_pct".into(), pct(sum(&|v| v.exit_overhead_ns)));
        push("steal_pct".into(), pct(sum(&|v| v.steal_ns)));
        let lw = r.vms.iter().map(|v| v.lock_wait_ns.p99).max().unwrap_or(0);
        push("lock_wait_p99_us".into(), us(lw));
        let lwm: f64 = {
            let n: u64 = r.vms.iter().map(|v| v.lock_wait_ns.samples).sum();
            let s: f64 = r
                .vms
                .iter()
                .map(|v| v.lock_wait_ns.mean as f64 * v.lock_wait_ns.samples as f64)
                .sum();
            if n == 0 {
                0.0
            } else {
                s / n as f64 / 1e3
            }
        };
        push("lock_wait_mean_us".into(), lwm);
        let iw = r
            .vms
            .iter()
            .map(|v| v.ipi_latency_ns.p99)
            .max()
            .unwrap_or(0);
        push("ipi_wait_p99_us".into(), us(iw));
        push("ple_exits".into(), sum(&|v| v.ple_exits) as f64);
        push("yield_to_ok".into(), sum(&|v| v.yield_to_successes) as f64);
        push("ipis".into(), sum(&|v| v.ipis_sent) as f64);
    }
    // Per-op latency distribution (every VM's ops, every program thread's
    // loop iterations), pooled.
    let ops = op_latency(r);
    if ops.count() > 0 {
        let q = |p: f64| us(ops.quantile(p).unwrap_or(0));
        push("op_p50_us".into(), q(0.50));
        push("op_p99_us".into(), q(0.99));
    }
    let host_tasks = &r.tasks[..n_plain.min(r.tasks.len())];
    push(
        "yields".into(),
        r.tasks
            .iter()
            .map(|t| t.nr_yields + t.nr_yield_to)
            .sum::<u64>() as f64,
    );
    let with_lat: Vec<_> = host_tasks
        .iter()
        .filter(|t| t.wakeup_latency_ns.samples > 0)
        .collect();
    if !with_lat.is_empty() {
        let p50 = with_lat
            .iter()
            .map(|t| t.wakeup_latency_ns.p50)
            .max()
            .unwrap_or(0);
        let p99 = with_lat
            .iter()
            .map(|t| t.wakeup_latency_ns.p99)
            .max()
            .unwrap_or(0);
        push("wakeup_p50_us".into(), us(p50));
        push("wakeup_p99_us".into(), us(p99));
    }
    // Bystanders: plain tasks that neither yield_to() nor are a target.
    let mut lost = 0.0;
    let mut any = false;
    for (i, l) in leaves.iter().enumerate().take(n_plain) {
        if party.contains(&l.name) {
            continue;
        }
        any = true;
        let got = cpu_of.get(l.name.as_str()).copied().unwrap_or(0) as f64 / d;
        lost += (leaf_ent[i] - got).max(0.0);
    }
    if any {
        push("bystander_lost_pct".into(), 100.0 * lost);
    }

    // Per VM.
    for v in &r.vms {
        let k = |s: &str| format!("vm.{}.{s}", v.name);
        push(k("ops_s"), v.ops_per_s);
        push(k("cpu_pct"), pct(v.cpu_ns));
        let vc = sc.vms.iter().find(|s| s.name == v.name);
        if let Some(vc) = vc {
            push(
                k("entitled_pct"),
                100.0 * cg_ent.get(&vc.cgroup).copied().unwrap_or(0.0),
            );
        }
        push(k("spin_pct"), pct(v.spinning_ns));
        push(k("steal_pct"), pct(v.steal_ns));
        push(k("ple_exits"), v.ple_exits as f64);
        push(k("lock_wait_p99_us"), us(v.lock_wait_ns.p99));
    }
    // Per top-level cgroup (VM cgroups are covered above).
    let vm_cgs: BTreeSet<&str> = sc.vms.iter().map(|v| v.cgroup.as_str()).collect();
    for g in &r.cgroups {
        if g.path == "/" || parent_path(&g.path) != "/" || vm_cgs.contains(g.path.as_str()) {
            continue;
        }
        push(format!("cg.{}.cpu_pct", g.path), pct(g.cpu_ns));
        push(
            format!("cg.{}.entitled_pct", g.path),
            100.0 * cg_ent.get(&g.path).copied().unwrap_or(0.0),
        );
    }
    // Per plain host task.
    for (i, t) in host_tasks.iter().enumerate() {
        let k = |s: &str| format!("task.{}.{s}", t.name);
        push(k("cpu_pct"), pct(t.cpu_ns));
        push(
            k("entitled_pct"),
            100.0 * leaf_ent.get(i).copied().unwrap_or(0.0),
        );
        if t.wakeup_latency_ns.samples > 0 {
            push(k("wakeup_p99_us"), us(t.wakeup_latency_ns.p99));
        }
    }
    m
}

#[cfg(test)]
mod global_metric_names {
    use super::*;

    #[test]
    fn every_global_metric_is_listed() {
        let src =
            "[host]\nduration = \"5ms\"\n[[vm]]\nname = \"a\"\nvcpus = 2\nworkload = \"phase:dbench\"\n\
                   [[task]]\nname = \"h\"\nkind = \"yield_loop\"\n";
        let sc = crate::scenario::Scenario::parse("m.toml", src).unwrap();
        let r = crate::run_scenario(&sc, None, None).unwrap();
        let m = metrics(&sc, &r);
        assert!(m.len() > 10);
        for (k, _) in m {
            assert!(
                k.contains('.') || GLOBAL_METRICS.contains(&k.as_str()),
                "{k}"
            );
        }
    }
}
