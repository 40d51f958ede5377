//! `[[vm]]`, `[kvm]` and `[guest.pv]`: the KVM part of a scenario.
//!
//! A VM is a set of vCPU host tasks named `<vm>.vcpu<i>`, placed in cgroups
//! by a layout (`libvirt`: `<vm cgroup>/vcpu<i>`, `flat`: all in the VM's
//! cgroup, `explicit`: one path per vCPU), pinned one CPU per vCPU (`pin`) or
//! floating over a set (`cpus`, default all). The guest runs a named workload
//! profile (src/guest/workload.rs) with `[vm.overrides]` applied field by field.

use super::{parse_duration, validate_cgroup_path, CgroupSpec, Ctx, HostSpec, ScenarioError};
use crate::engine::Nanos;
use crate::guest::workload::{WorkloadProfile, PROFILES};

/// The prefix of the phase generator's profile names (`workload = "phase:dbench"`).
pub const PHASE: &str = "phase:";
const PHASE_IDLE: &str = "phase:idle";

/// `[[vm]] ops = "lock-sections"`: a program VM's ops are its guest kernel
/// lock sections (`syscall` events), said explicitly; it is also what a
/// program VM without `ops` counts, which `oversub run`/`check` print as a
/// note ([`VmSpec::ops_default`]).
pub const OPS_LOCK_SECTIONS: &str = "lock-sections";
pub use crate::kvm::halt_poll::HaltPoll;
use crate::kvm::lapic::EoiClear;
use crate::kvm::on_spin::{HistoricForm, IpiBase, IpiOrder, OnSpinVariant};
use crate::kvm::ple::{PleKind, PleParams};
use serde::Deserialize;

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

#[derive(Deserialize, Debug, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawKvm {
    ple: Option<String>,
    ple_gap: Option<i64>,
    ple_window: Option<i64>,
    ple_window_grow: Option<i64>,
    ple_window_shrink: Option<i64>,
    ple_window_max: Option<i64>,
    on_spin: Option<String>,
    relaxed_boost: Option<bool>,
    ipi_order: Option<String>,
    ipi_base: Option<String>,
    ipi_eoi: Option<String>,
    ipi_window: Option<String>,
    apicv: Option<bool>,
    ipiv: Option<bool>,
    avic: Option<bool>,
    halt_poll: Option<String>,
    halt_poll_max: Option<String>,
    exit_cost: Option<String>,
    entry_cost: Option<String>,
    irq_handler: Option<String>,
    guest_tsc_khz: Option<i64>,
    pause_cycles: Option<i64>,
    guest_hz: Option<i64>,
    kick_yield: Option<bool>,
}

#[derive(Deserialize, Debug, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawGuest {
    pv: Option<RawPv>,
    nopvspin: Option<bool>,
}

#[derive(Deserialize, Debug, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPv {
    steal_time: Option<bool>,
    spinlock: Option<bool>,
    sched_yield: Option<bool>,
    tlb_flush: Option<bool>,
    send_ipi: Option<bool>,
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

/// `kvm_vcpu_on_spin` form, or no directed yield at all (a what-if).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnSpinSpec {
    Off,
    Variant(OnSpinVariant),
}

pub const ON_SPIN_NAMES: &str =
    "6.12, 6.13, 6.19, 2011-yield-to, 2012-dy-eligible, 2013-try-budget, 2014-preempted, 2017-kernel-mode, 2019-ready, 2019-preempted-in-kernel, ipi_aware, ipi_v1, ipi_v3, ipi_series, ipi_hint, off";

/// `[kvm]`, validated.
#[derive(Clone, Debug)]
pub struct KvmSpec {
    /// None: PLE disabled (`ple_gap = 0`, or `kvm_pause_in_guest`).
    pub ple: Option<PleParams>,
    pub on_spin: OnSpinSpec,
    pub apicv: bool,
    pub ipiv: bool,
    /// AMD AVIC (implies APICv's EOI virtualization and posted interrupts;
    /// ICR writes exit only for a target that is not running).
    pub avic: bool,
    /// Halt polling before a halted vCPU blocks.
    pub halt_poll: HaltPoll,
    /// A VM exit and the dispatch to its handler.
    pub exit_cost: Nanos,
    /// The VM entry back into the guest.
    pub entry_cost: Nanos,
    /// Guest interrupt handler time (call-function, reschedule, TLB flush).
    pub irq_handler: Nanos,
    pub guest_tsc_khz: u64,
    /// TSC cycles per iteration of a guest PAUSE loop.
    pub pause_cycles: u64,
    /// IPI-aware form: which EOI clears the tracking (series v3: matching).
    pub ipi_eoi: EoiClear,
    /// IPI-aware form: `kvm.ipi_window_ns`; ipi_hint: the record's lifetime.
    pub ipi_window: Nanos,
    /// The guest's periodic tick on a running vCPU (CONFIG_HZ; NO_HZ_IDLE:
    /// no tick while halted). 0 = no guest tick.
    pub guest_hz: u32,
    /// KVM_HC_KICK_CPU is followed by `kvm_sched_yield` towards the kicked
    /// vCPU (266e85a5ec9 "KVM: X86: Boost queue head vCPU to mitigate lock
    /// waiter preemption", 2019, Linux 5.3); false: the kick only wakes.
    pub kick_yield: bool,
}

impl KvmSpec {
    /// One exit + entry round trip, charged for every exit the model takes.
    pub fn round_trip(&self) -> Nanos {
        self.exit_cost + self.entry_cost
    }
}

impl Default for KvmSpec {
    fn default() -> Self {
        KvmSpec {
            ple: Some(PleParams::vmx_default()),
            on_spin: OnSpinSpec::Variant(OnSpinVariant::V612TwoPass),
            apicv: false,
            ipiv: false,
            avic: false,
            halt_poll: HaltPoll::Dynamic {
                max: Nanos::from_us(200),
            },
            exit_cost: Nanos(700),
            entry_cost: Nanos(300),
            irq_handler: Nanos(1_000),
            guest_tsc_khz: 2_000_000,
            pause_cycles: 40,
            ipi_eoi: EoiClear::MatchingVector,
            ipi_window: Nanos::from_ms(50),
            guest_hz: 250,
            kick_yield: true,
        }
    }
}

/// `[guest.pv]`, validated: which KVM paravirtual features the guest uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PvSpec {
    /// Steal-time `preempted` flag (`vcpu_is_preempted`).
    pub steal_time: bool,
    /// The host offers KVM_FEATURE_PV_UNHALT: the guest's qspinlock is the PV
    /// one (halt/kick); without it, the test-and-set `virt_spin_lock()`
    /// (`guest::spinlock::kvm_spinlock_init`).
    pub spinlock: bool,
    /// KVM_HC_SCHED_YIELD in `smp_call_function_many` towards a preempted target.
    pub sched_yield: bool,
    /// PV TLB flush: preempted targets are not sent the shootdown IPI.
    pub tlb_flush: bool,
    /// KVM_HC_SEND_IPI for multicast IPIs (one exit, never tracked).
    pub send_ipi: bool,
    /// `[guest] nopvspin`, the guest kernel parameter: PV spinlocks and
    /// `virt_spin_lock()` off, the native qspinlock, whatever the host
    /// offers.
    pub nopvspin: bool,
}

impl Default for PvSpec {
    fn default() -> Self {
        PvSpec {
            steal_time: true,
            spinlock: true,
            sched_yield: true,
            tlb_flush: true,
            send_ipi: true,
            nopvspin: false,
        }
    }
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

pub(super) fn kvm(cx: &Ctx, k: RawKvm) -> Result<KvmSpec, ScenarioError> {
    let mut s = KvmSpec::default();
    let kind = k.ple.as_deref().unwrap_or("vmx");
    let mut ple = match kind {
        "vmx" => Some(PleParams::vmx_default()),
        "svm" => Some(PleParams::svm_default()),
        "off" => None,
        o => {
            return Err(cx.err(
                "kvm.ple",
                format!("unknown PLE kind \"{o}\": allowed vmx, svm, off"),
            ))
        }
    };
    let params = [
        ("ple_gap", k.ple_gap),
        ("ple_window", k.ple_window),
        ("ple_window_grow", k.ple_window_grow),
        ("ple_window_shrink", k.ple_window_shrink),
        ("ple_window_max", k.ple_window_max),
    ];
    for (name, v) in params {
        let Some(v) = v else { continue };
        let Some(p) = ple.as_mut() else {
            return Err(cx.err(
                format!("kvm.{name}"),
                "not allowed with ple = \"off\": allowed with vmx, svm",
            ));
        };
        // SVM's module parameters are ushort.
        let hi = if p.kind == PleKind::Svm {
            u16::MAX as i64
        } else {
            u32::MAX as i64
        };
        let v = cx.int(&format!("kvm.{name}"), v, 0, hi)? as u32;
        match name {
            "ple_gap" => p.gap = v,
            "ple_window" => p.window = v,
            "ple_window_grow" => p.grow = v,
            "ple_window_shrink" => p.shrink = v,
            _ => p.max = v,
        }
    }
    if let Some(p) = ple {
        if p.max < p.window {
            return Err(cx.err(
                "kvm.ple_window_max",
                format!(
                    "{} is below ple_window {}: allowed >= ple_window",
                    p.max, p.window
                ),
            ));
        }
        if p.kind == PleKind::Vmx && p.gap == 0 {
            ple = None;
        }
    }
    s.ple = ple;
    let relaxed = k.relaxed_boost;
    let form = k.on_spin.as_deref().unwrap_or("6.12");
    // Named versions of the series' KVM side (docs/yield-policies.md): v1/v2
    // classify the receiver inside the scan and clear on any EOI; v3 and the
    // series in kernel/patches try the confirmed receiver first and clear
    // on the tracked vector's EOI. Explicit knobs override.
    let (def_order, def_eoi) = match form {
        "ipi_v1" => ("scan", "any"),
        "ipi_v3" | "ipi_series" => ("receiver_first", "matching"),
        _ => ("scan", "matching"),
    };
    let order = match k.ipi_order.as_deref().unwrap_or(def_order) {
        "scan" => IpiOrder::FilterInScanOrder,
        "receiver_first" => IpiOrder::ReceiverFirst,
        o => {
            return Err(cx.err(
                "kvm.ipi_order",
                format!("unknown order \"{o}\": allowed scan, receiver_first"),
            ))
        }
    };
    let base = match k.ipi_base.as_deref().unwrap_or("6.12") {
        "6.12" => IpiBase::V612TwoPass,
        "6.19" => IpiBase::V613SingleLoopFixed,
        o => {
            return Err(cx.err(
                "kvm.ipi_base",
                format!("unknown base loop \"{o}\": allowed 6.12, 6.19"),
            ))
        }
    };
    s.ipi_eoi = match k.ipi_eoi.as_deref().unwrap_or(def_eoi) {
        "matching" => EoiClear::MatchingVector,
        "any" => EoiClear::AnyEoi,
        o => {
            return Err(cx.err(
                "kvm.ipi_eoi",
                format!("unknown EOI rule \"{o}\": allowed matching, any"),
            ))
        }
    };
    if let Some(v) = &k.ipi_window {
        s.ipi_window = cx.dur("kvm.ipi_window", v, Nanos(1), Nanos::from_secs(10))?;
    }
    s.on_spin = match form {
        "6.12" => OnSpinSpec::Variant(OnSpinVariant::V612TwoPass),
        "6.13" => OnSpinSpec::Variant(OnSpinVariant::V613SingleLoop { fixed_index: false }),
        "6.19" => OnSpinSpec::Variant(OnSpinVariant::V613SingleLoop { fixed_index: true }),
        "ipi_aware" | "ipi_v1" | "ipi_v3" | "ipi_series" => {
            OnSpinSpec::Variant(OnSpinVariant::IpiAware {
                enable_relaxed_boost: relaxed.unwrap_or(true),
                order,
                base,
            })
        }
        "ipi_hint" => OnSpinSpec::Variant(OnSpinVariant::IpiHint),
        "off" => OnSpinSpec::Off,
        o => match HistoricForm::from_name(o) {
            Some(f) => OnSpinSpec::Variant(OnSpinVariant::Historic(f)),
            None => {
                return Err(cx.err(
                    "kvm.on_spin",
                    format!("unknown form \"{o}\": allowed {ON_SPIN_NAMES}"),
                ))
            }
        },
    };
    let aware = matches!(
        s.on_spin,
        OnSpinSpec::Variant(OnSpinVariant::IpiAware { .. })
    );
    let series = [
        ("relaxed_boost", relaxed.is_some()),
        ("ipi_order", k.ipi_order.is_some()),
        ("ipi_base", k.ipi_base.is_some()),
        ("ipi_eoi", k.ipi_eoi.is_some()),
        ("ipi_window", k.ipi_window.is_some()),
    ];
    let hint = matches!(s.on_spin, OnSpinSpec::Variant(OnSpinVariant::IpiHint));
    for (name, set) in series {
        if set && !aware && !(hint && name == "ipi_window") {
            return Err(cx.err(
                format!("kvm.{name}"),
                "only meaningful with on_spin = \"ipi_aware\" (or ipi_v1, ipi_v3, ipi_series; ipi_window also with ipi_hint)",
            ));
        }
    }
    if let Some(b) = k.kick_yield {
        s.kick_yield = b;
    }
    if let Some(hz) = k.guest_hz {
        if ![0, 100, 250, 300, 1000].contains(&hz) {
            return Err(cx.err(
                "kvm.guest_hz",
                format!("{hz} is not a guest HZ: allowed 0 (no tick), 100, 250, 300, 1000"),
            ));
        }
        s.guest_hz = hz as u32;
    }
    s.apicv = k.apicv.unwrap_or(false);
    s.ipiv = k.ipiv.unwrap_or(false);
    s.avic = k.avic.unwrap_or(false);
    if s.avic {
        if s.ipiv {
            return Err(cx.err(
                "kvm.avic",
                "AVIC is AMD's, IPIv Intel's: allowed avic = true with ipiv = false",
            ));
        }
        if k.apicv == Some(false) {
            return Err(cx.err(
                "kvm.avic",
                "AVIC is an APIC virtualization: allowed with apicv unset or true",
            ));
        }
        s.apicv = true;
    }
    if s.ipiv && !s.apicv {
        return Err(cx.err(
            "kvm.ipiv",
            "IPI virtualization needs APICv: allowed with apicv = true",
        ));
    }
    let big = Nanos::from_ms(100);
    let max = match &k.halt_poll_max {
        Some(v) => cx.dur("kvm.halt_poll_max", v, Nanos::ZERO, Nanos::from_ms(10))?,
        None => Nanos::from_us(200),
    };
    s.halt_poll = match k.halt_poll.as_deref() {
        None | Some("dynamic") => HaltPoll::Dynamic { max },
        Some("off") => HaltPoll::Off,
        Some(v) => {
            let d = parse_duration(v).map_err(|_| {
                cx.err(
                    "kvm.halt_poll",
                    format!("\"{v}\" is not allowed: allowed dynamic, off, or a fixed duration"),
                )
            })?;
            let d = cx
                .dur("kvm.halt_poll", v, Nanos::ZERO, Nanos::from_ms(10))
                .map(|_| d)?;
            if d == Nanos::ZERO {
                HaltPoll::Off
            } else {
                HaltPoll::Fixed(d)
            }
        }
    };
    if k.halt_poll_max.is_some() && !matches!(s.halt_poll, HaltPoll::Dynamic { .. }) {
        return Err(cx.err(
            "kvm.halt_poll_max",
            "only meaningful with halt_poll = \"dynamic\"",
        ));
    }
    if let Some(v) = &k.exit_cost {
        s.exit_cost = cx.dur("kvm.exit_cost", v, Nanos::ZERO, big)?;
    }
    if let Some(v) = &k.entry_cost {
        s.entry_cost = cx.dur("kvm.entry_cost", v, Nanos::ZERO, big)?;
    }
    if let Some(v) = &k.irq_handler {
        s.irq_handler = cx.dur("kvm.irq_handler", v, Nanos::ZERO, big)?;
    }
    if let Some(v) = k.guest_tsc_khz {
        s.guest_tsc_khz = cx.int("kvm.guest_tsc_khz", v, 100_000, 10_000_000)? as u64;
    }
    if let Some(v) = k.pause_cycles {
        s.pause_cycles = cx.int("kvm.pause_cycles", v, 1, 100_000)? as u64;
    }
    Ok(s)
}

pub(super) fn pv(g: Option<RawGuest>) -> PvSpec {
    let d = PvSpec::default();
    let (p, nopvspin) = g.map_or((RawPv::default(), None), |g| {
        (g.pv.unwrap_or_default(), g.nopvspin)
    });
    PvSpec {
        steal_time: p.steal_time.unwrap_or(d.steal_time),
        spinlock: p.spinlock.unwrap_or(d.spinlock),
        sched_yield: p.sched_yield.unwrap_or(d.sched_yield),
        tlb_flush: p.tlb_flush.unwrap_or(d.tlb_flush),
        send_ipi: p.send_ipi.unwrap_or(d.send_ipi),
        nopvspin: nopvspin.unwrap_or(d.nopvspin),
    }
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
    if workload.name == "pingpong" && workload.active_vcpus.unwrap_or(vcpus).min(vcpus) < 2 {
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

/// `[vm] kernel` and `[vm.features]`: the guest kernel of a program VM,
/// validated as `[host]`'s (the host's preset and features by default; an
/// explicit kernel starts from that preset's features).
fn guest_kernel(
    cx: &Ctx,
    f: &str,
    v: &RawVm,
    host: &HostSpec,
) -> Result<
    (
        crate::sched::features::KernelPreset,
        crate::sched::SchedFeatures,
    ),
    ScenarioError,
> {
    use crate::sched::features::{KernelPreset, FEATURE_NAMES};
    if v.program.is_none() && (v.kernel.is_some() || v.features.is_some()) {
        let k = if v.kernel.is_some() {
            "kernel"
        } else {
            "features"
        };
        return Err(cx.err(
            format!("{f}.{k}"),
            "the guest kernel applies to program VMs only: allowed with program = \"FILE.json\"",
        ));
    }
    let (kernel, mut features) = match &v.kernel {
        None => (host.kernel, host.features),
        Some(k) => {
            let p = KernelPreset::parse(k).ok_or_else(|| {
                cx.err(
                    format!("{f}.kernel"),
                    format!(
                        "unknown kernel preset \"{k}\": allowed {}",
                        KernelPreset::names()
                    ),
                )
            })?;
            (p, p.features())
        }
    };
    for (k, b) in v.features.iter().flatten() {
        if kernel.absent_features().contains(&k.as_str()) {
            return Err(cx.err(
                format!("{f}.features.{k}"),
                format!("{k} does not exist in kernel {}", kernel.name()),
            ));
        }
        if !features.set(k, *b) {
            return Err(cx.err(
                format!("{f}.features.{k}"),
                format!("unknown feature: allowed {}", FEATURE_NAMES.join(", ")),
            ));
        }
    }
    Ok((kernel, features))
}

/// `[[vm]] ops`: the indices of the program threads whose task is `o` (or
/// starts with `o` minus its trailing `*`).
fn ops_threads(
    cx: &Ctx,
    field: &str,
    o: &str,
    p: &crate::workload::ir::Program,
) -> Result<Vec<usize>, ScenarioError> {
    let hit = |task: &str| match o.strip_suffix('*') {
        Some(prefix) => task.starts_with(prefix),
        None => task == o,
    };
    let v: Vec<usize> = (0..p.threads.len())
        .filter(|&i| hit(&p.threads[i].task))
        .collect();
    if v.is_empty() {
        let mut tasks: Vec<&str> = p.threads.iter().map(|t| t.task.as_str()).collect();
        tasks.dedup();
        return Err(cx.err(
            field,
            format!(
                "\"{o}\" names no task of the program: allowed a task name or a prefix ending in *: {}",
                tasks.join(", ")
            ),
        ));
    }
    Ok(v)
}

/// Reads `[[vm]] program`: an rt-app file, its path relative to the
/// scenario's directory; thread affinities name vCPUs.
fn guest_program(
    cx: &Ctx,
    field: &str,
    path: &str,
    vcpus: u32,
) -> Result<crate::workload::ir::Program, ScenarioError> {
    let base = std::path::Path::new(cx.file)
        .parent()
        .unwrap_or(std::path::Path::new(""));
    let full = base.join(path);
    let src = crate::limits::read_text(&full, "an rt-app JSON program")
        .map_err(|m| cx.err(field, format!("{}: {m}", full.display())))?;
    let r = crate::workload::rtapp::parse(&src).map_err(|e| {
        if e.field.is_empty() && !src.trim_start().starts_with('{') {
            return cx.err(
                field,
                format!(
                    "{}: not JSON ({}): allowed an rt-app JSON program (a TOML scenario is not a program)",
                    full.display(),
                    e.message
                ),
            );
        }
        cx.err(field, format!("{}: {e}", full.display()))
    })?;
    if r.oversub.is_some() {
        return Err(cx.err(
            field,
            format!(
                "{}: the \"oversub\" host object applies to host-only runs: allowed none in a guest program",
                full.display()
            ),
        ));
    }
    let prog = r.program;
    for t in &prog.threads {
        if let Some(c) = t
            .cpus
            .as_ref()
            .and_then(|l| l.iter().find(|&&c| c >= vcpus))
        {
            return Err(cx.err(
                field,
                format!(
                    "{}: thread {} cpus names CPU {c}: allowed vCPUs 0..{}",
                    full.display(),
                    t.name,
                    vcpus - 1
                ),
            ));
        }
    }
    Ok(prog)
}

fn join(base: &str, leaf: &str) -> String {
    if base == "/" {
        format!("/{leaf}")
    } else {
        format!("{base}/{leaf}")
    }
}
