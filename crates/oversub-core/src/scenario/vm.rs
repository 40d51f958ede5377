//! `[[vm]]`: the VMs of a scenario (`[kvm]` is in `kvm.rs`, `[guest.pv]` in
//! `pv.rs`; their specs are re-exported here).
//!
//! A VM is a set of vCPU host tasks named `<vm>.vcpu<i>`, placed in cgroups
//! by a layout (`libvirt`: `<vm cgroup>/vcpu<i>`, `flat`: all in the VM's
//! cgroup, `explicit`: one path per vCPU), pinned one CPU per vCPU (`pin`) or
//! floating over a set (`cpus`, default all). The guest runs a named workload
//! profile (src/guest/workload.rs) with `[vm.overrides]` applied field by field.

use super::{validate_cgroup_path, CgroupSpec, Ctx, HostSpec, ScenarioError};
use crate::guest::workload::{LockPattern, WorkloadProfile, PROFILES};

/// The prefix of the phase generator's profile names (`workload = "phase:dbench"`).
pub const PHASE: &str = "phase:";
const PHASE_IDLE: &str = "phase:idle";

/// `[[vm]] ops = "lock-sections"`: a program VM's ops are its guest kernel
/// lock sections (`syscall` events), said explicitly; it is also what a
/// program VM without `ops` counts, which `oversub run`/`check` print as a
/// note ([`VmSpec::ops_default`]).
pub const OPS_LOCK_SECTIONS: &str = "lock-sections";
pub use super::kvm::{KvmSpec, OnSpinSpec, ON_SPIN_NAMES};
pub use super::pv::PvSpec;
pub use crate::kvm::halt_poll::HaltPoll;
use serde::Deserialize;

mod guest;
use guest::{guest_kernel, guest_program, ops_threads};

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub(super) struct RawVm {
    name: String,
    vcpus: Option<i64>,
    cgroup: Option<String>,
    weight: Option<i64>,
    layout: Option<String>,
    vcpu_cgroups: Option<Vec<String>>,
    pin: Option<Vec<i64>>,
    cpus: Option<Vec<i64>>,
    workload: Option<String>,
    /// An rt-app JSON file (relative to the scenario) run as guest threads.
    program: Option<String>,
    /// Which program threads count as the VM's ops: a task name, or a
    /// prefix ending in `*` (program VMs only).
    ops: Option<String>,
    /// The guest kernel of a program VM (default: the host's preset).
    kernel: Option<String>,
    /// `[vm.features]`: the guest kernel's sched features.
    features: Option<std::collections::BTreeMap<String, bool>>,
    overrides: Option<toml::Table>,
    protected: Option<bool>,
}

/// How a VM's vCPU tasks are placed in cgroups.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// `<vm cgroup>/vcpu<i>` (libvirt's `machine.slice/.../vcpuN`).
    Libvirt,
    /// Every vCPU directly in the VM's cgroup.
    Flat,
    /// `vcpu_cgroups` gives one path per vCPU.
    Explicit,
}

/// `[[vm]]`, validated.
#[derive(Clone, Debug)]
pub struct VmSpec {
    pub name: String,
    pub vcpus: u32,
    /// The VM's cgroup.
    pub cgroup: String,
    pub layout: Layout,
    /// The cgroup of each vCPU task.
    pub vcpu_cgroups: Vec<String>,
    /// vCPU i runs only on `pin[i]`.
    pub pin: Option<Vec<u32>>,
    /// Floating affinity of every vCPU (None = all CPUs).
    pub cpus: Option<Vec<u32>>,
    pub workload: WorkloadProfile,
    /// Guest threads: a thread program run by the guest's own scheduler on
    /// the vCPUs (`program = "FILE.json"`); None: the phase generator.
    pub program: Option<crate::workload::ir::Program>,
    /// `ops = "TASK"` (program VMs): the VM's ops are the phase loops its
    /// threads of these indices completed, instead of its guest kernel
    /// lock sections (docs/workloads.md, "ops").
    pub ops_threads: Option<Vec<usize>>,
    /// A program VM without `ops`: its ops are its guest kernel lock
    /// sections by default (the CLI prints a note; `ops = "lock-sections"`
    /// says so explicitly).
    pub ops_default: bool,
    /// The guest kernel's preset and sched features (program VMs; default
    /// the host's, `[vm] kernel` and `[vm.features]` override).
    pub guest_kernel: crate::sched::features::KernelPreset,
    pub guest_features: crate::sched::SchedFeatures,
    /// SEV-ES / TDX guest state protection (`guest_state_protected`).
    pub protected: bool,
}

fn cpu_list(
    cx: &Ctx,
    field: &str,
    list: &[i64],
    host: &HostSpec,
) -> Result<Vec<u32>, ScenarioError> {
    if list.is_empty() {
        return Err(cx.err(field, "empty CPU list: allowed CPU ids 0 .. cpus-1"));
    }
    let mut v = Vec::new();
    for &c in list {
        if c < 0 || c >= host.cpus as i64 {
            return Err(cx.err(
                field,
                format!("CPU {c} does not exist: allowed 0 ..= {}", host.cpus - 1),
            ));
        }
        v.push(c as u32);
    }
    Ok(v)
}

/// Validates a `[[vm]]` and adds the cgroups it needs (not declared ones get
/// weight 100, or `weight` for the VM's own cgroup). `index` maps each path
/// of `cgroups` to its position and is kept up to date.
pub(super) fn vm(
    cx: &Ctx,
    i: usize,
    v: &RawVm,
    host: &HostSpec,
    cgroups: &mut Vec<CgroupSpec>,
    index: &mut std::collections::BTreeMap<String, usize>,
) -> Result<VmSpec, ScenarioError> {
    let f = format!("vm[{i}]");
    if v.name.is_empty()
        || !v
            .name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-".contains(c))
    {
        return Err(cx.err(
            format!("{f}.name"),
            format!(
                "\"{}\" is not allowed: use letters, digits, '_', '-'",
                v.name
            ),
        ));
    }
    let vcpus = cx.int(&format!("{f}.vcpus"), v.vcpus.unwrap_or(1), 1, 256)? as u32;
    let cgroup = match &v.cgroup {
        Some(p) => validate_cgroup_path(p).map_err(|m| cx.err(format!("{f}.cgroup"), m))?,
        None => format!("/{}", v.name),
    };
    let weight = cx.int(&format!("{f}.weight"), v.weight.unwrap_or(100), 1, 10000)? as u32;
    // A weight given here and a different one on the same cgroup elsewhere
    // ([[cgroup]], or an earlier VM sharing it) contradict each other.
    if let (Some(_), Some(&k)) = (v.weight, index.get(&cgroup)) {
        if cgroups[k].weight != weight {
            return Err(cx.err(
                format!("{f}.weight"),
                format!(
                    "{weight} contradicts weight {} of cgroup \"{cgroup}\" declared elsewhere: allowed the same weight, or set it in one place",
                    cgroups[k].weight
                ),
            ));
        }
    }
    let layout = match v.layout.as_deref().unwrap_or("libvirt") {
        "libvirt" => Layout::Libvirt,
        "flat" => Layout::Flat,
        "explicit" => Layout::Explicit,
        o => {
            return Err(cx.err(
                format!("{f}.layout"),
                format!("unknown layout \"{o}\": allowed libvirt, flat, explicit"),
            ))
        }
    };
    let vcpu_cgroups: Vec<String> = match layout {
        Layout::Libvirt | Layout::Flat if v.vcpu_cgroups.is_some() => {
            return Err(cx.err(
                format!("{f}.vcpu_cgroups"),
                "only with layout = \"explicit\"",
            ))
        }
        Layout::Libvirt => (0..vcpus)
            .map(|k| join(&cgroup, &format!("vcpu{k}")))
            .collect(),
        Layout::Flat => vec![cgroup.clone(); vcpus as usize],
        Layout::Explicit => {
            let Some(list) = &v.vcpu_cgroups else {
                return Err(cx.err(
                    format!("{f}.vcpu_cgroups"),
                    "required for layout = \"explicit\" (one path per vCPU)",
                ));
            };
            if list.len() != vcpus as usize {
                return Err(cx.err(
                    format!("{f}.vcpu_cgroups"),
                    format!(
                        "{} paths for {vcpus} vCPUs: allowed exactly one per vCPU",
                        list.len()
                    ),
                ));
            }
            let mut out = Vec::new();
            for p in list {
                out.push(
                    validate_cgroup_path(p).map_err(|m| cx.err(format!("{f}.vcpu_cgroups"), m))?,
                );
            }
            out
        }
    };
    // Create missing cgroups (ancestors first).
    let mut need: Vec<String> = Vec::new();
    if cgroup != "/" {
        need.push(cgroup.clone());
    }
    need.extend(vcpu_cgroups.iter().filter(|p| *p != "/").cloned());
    for p in need {
        let mut chain = Vec::new();
        let mut q = p.clone();
        while q != "/" {
            chain.push(q.clone());
            q = super::parent_path(&q);
        }
        for c in chain.into_iter().rev() {
            if !index.contains_key(&c) {
                let w = if c == cgroup { weight } else { 100 };
                index.insert(c.clone(), cgroups.len());
                cgroups.push(CgroupSpec { path: c, weight: w });
            }
        }
    }
    if v.pin.is_some() && v.cpus.is_some() {
        return Err(cx.err(
            format!("{f}.pin"),
            "pin and cpus are exclusive: allowed one of them",
        ));
    }
    let pin = match &v.pin {
        None => None,
        Some(list) => {
            let l = cpu_list(cx, &format!("{f}.pin"), list, host)?;
            if l.len() != vcpus as usize {
                return Err(cx.err(
                    format!("{f}.pin"),
                    format!(
                        "{} CPUs for {vcpus} vCPUs: allowed exactly one per vCPU",
                        l.len()
                    ),
                ));
            }
            Some(l)
        }
    };
    let cpus = match &v.cpus {
        None => None,
        Some(list) => {
            let mut l = cpu_list(cx, &format!("{f}.cpus"), list, host)?;
            l.sort();
            l.dedup();
            Some(l)
        }
    };
    let program = match &v.program {
        None => None,
        Some(_) if v.workload.is_some() || v.overrides.is_some() => {
            return Err(cx.err(
                format!("{f}.program"),
                "program and workload/overrides are exclusive: allowed one of them",
            ))
        }
        Some(p) => Some(guest_program(cx, &format!("{f}.program"), p, vcpus)?),
    };
    let ops_threads = match (&v.ops, &program) {
        (None, _) => None,
        (Some(o), Some(p)) if o == OPS_LOCK_SECTIONS && !p.threads.iter().any(|t| t.task == *o) => {
            None
        }
        (Some(_), None) => {
            return Err(cx.err(
                format!("{f}.ops"),
                "ops names program threads: allowed only with program = \"FILE.json\"",
            ))
        }
        (Some(o), Some(p)) => Some(ops_threads(cx, &format!("{f}.ops"), o, p)?),
    };
    let (guest_kernel, guest_features) = guest_kernel(cx, &f, v, host)?;
    if guest_kernel == crate::sched::KernelPreset::Flat
        && program.as_ref().is_some_and(|p| p.uses_fork())
    {
        return Err(cx.err(
            format!("{f}.kernel"),
            "flat: the program forks child processes (fork events), which the flat scheduler (sched/flat) does not create after the start: allowed any kernel preset but flat",
        ));
    }
    // The phase generator's profiles are `phase:NAME`, so that `workload =
    // "phase:dedup"` cannot be taken for the recorded program
    // (`program = "workloads/dedup.json"`); the bare names are refused with
    // a pointer to both.
    // (No workload: refused below, once `[vm.overrides]` is checked.)
    let wname = v.workload.as_deref().unwrap_or(PHASE_IDLE);
    let phase_names = || {
        PROFILES
            .iter()
            .map(|p| format!("{PHASE}{p}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let bare = match wname.strip_prefix(PHASE) {
        Some(b) => b,
        None if PROFILES.contains(&wname) => {
            return Err(cx.err(
                format!("{f}.workload"),
                format!(
                    "\"{wname}\" is not allowed: the phase-generator profiles are named \"{PHASE}{wname}\" (a model from first principles, not the recorded program); allowed workload = \"{PHASE}{wname}\", or the recorded program: program = \"workloads/{wname}.json\" with ops (docs/workloads.md)"
                ),
            ))
        }
        None => "",
    };
    let mut workload = WorkloadProfile::named(bare).map_err(|_| {
        cx.err(
            format!("{f}.workload"),
            format!("unknown profile \"{wname}\": allowed {}", phase_names()),
        )
    })?;
    if let Some(t) = &v.overrides {
        use crate::guest::workload::WorkloadError;
        workload.merge(t).map_err(|e| match &e {
            WorkloadError::BadValue { field, expected } => cx.err(
                format!("{f}.overrides.{field}"),
                format!(
                    "{} is not allowed: expected {expected}",
                    t.get(field).map_or_else(String::new, |v| v.to_string())
                ),
            ),
            WorkloadError::UnknownField { field, allowed } => cx.err(
                format!("{f}.overrides.{field}"),
                format!("unknown key: allowed {}", allowed.join(", ")),
            ),
            _ => cx.err(format!("{f}.overrides"), e.to_string()),
        })?;
    }
    if v.workload.is_none() && v.program.is_none() {
        // An idle guest is a choice the file states, never a default.
        return Err(cx.err(
            format!("{f}.workload"),
            format!(
                "missing (a VM runs nothing by default): allowed workload = one of {} ({PHASE_IDLE}: a guest that only halts), or program = \"FILE.json\"",
                phase_names()
            ),
        ));
    }
    let given = |k: &str| v.overrides.as_ref().is_some_and(|t| t.contains_key(k));
    if workload.compute_ns < super::MIN_OP.0 {
        return Err(cx.err(
            format!("{f}.overrides.compute_ns"),
            format!(
                "{} is out of range: allowed at least {} per operation (below it simulated time barely advances)",
                workload.compute_ns,
                super::MIN_OP.0
            ),
        ));
    }
    if workload.pattern == LockPattern::Turns
        && workload.active_vcpus.unwrap_or(vcpus).min(vcpus) < 2
    {
        return Err(cx.err(
            if given("active_vcpus") {
                format!("{f}.overrides.active_vcpus")
            } else {
                format!("{f}.vcpus")
            },
            "the pingpong workload hands a lock between vCPUs: allowed 2 or more active vCPUs",
        ));
    }
    if let Some(a) = workload.active_vcpus {
        if a == 0 || a > vcpus {
            return Err(cx.err(
                if given("active_vcpus") {
                    format!("{f}.overrides.active_vcpus")
                } else {
                    format!("{f}.vcpus")
                },
                format!("active_vcpus {a} with {vcpus} vCPUs: allowed 1 ..= vcpus"),
            ));
        }
    }
    if let Some(p) = &v.program {
        // A program VM is named after its file ("dedup" for
        // workloads/dedup.json) in reports and sweeps.
        workload.name = std::path::Path::new(p)
            .file_stem()
            .map_or_else(|| p.clone(), |s| s.to_string_lossy().into_owned());
    } else {
        // A phase-generator VM by its full name ("phase:dedup").
        workload.name = format!("{PHASE}{bare}");
    }
    let ops_default = program.is_some() && v.ops.is_none();
    Ok(VmSpec {
        name: v.name.clone(),
        vcpus,
        cgroup,
        layout,
        vcpu_cgroups,
        pin,
        cpus,
        workload,
        program,
        ops_threads,
        ops_default,
        guest_kernel,
        guest_features,
        protected: v.protected.unwrap_or(false),
    })
}

fn join(base: &str, leaf: &str) -> String {
    if base == "/" {
        format!("/{leaf}")
    } else {
        format!("{base}/{leaf}")
    }
}
