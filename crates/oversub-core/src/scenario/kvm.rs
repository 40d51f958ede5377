//! `[kvm]`: the host's KVM module parameters of a scenario (PLE, the
//! `kvm_vcpu_on_spin` form, APICv/IPIv/AVIC, halt polling, exit costs),
//! validated into a [`KvmSpec`].

use super::{parse_duration, Ctx, ScenarioError};
use crate::engine::Nanos;
use crate::kvm::halt_poll::HaltPoll;
use crate::kvm::lapic::EoiClear;
use crate::kvm::on_spin::{HistoricForm, IpiBase, IpiOrder, OnSpinVariant};
use crate::kvm::ple::{PleKind, PleParams};
use serde::Deserialize;

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

/// `[kvm]`, validated; `pv` is the guest's `[guest.pv]` (a setting that
/// cannot take effect with it, or without PLE, is refused: a sweep over it
/// would give identical rows).
pub(super) fn kvm(cx: &Ctx, k: RawKvm, pv: &super::pv::PvSpec) -> Result<KvmSpec, ScenarioError> {
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
        // The kick is the PV spinlock's (kvm_kick_cpu); without it no
        // KVM_HC_KICK_CPU is made and kick_yield = true changes nothing.
        if b && (!pv.spinlock || pv.nopvspin) {
            return Err(cx.err(
                "kvm.kick_yield",
                format!(
                    "true has no effect: the guest makes no KVM_HC_KICK_CPU without PV spinlocks (guest.pv.spinlock = {}, guest.nopvspin = {}): allowed with guest.pv.spinlock = true and guest.nopvspin = false",
                    pv.spinlock, pv.nopvspin
                ),
            ));
        }
        s.kick_yield = b;
    }
    // kvm_vcpu_on_spin() runs on a PAUSE-loop exit only: without PLE a
    // form other than "off" changes nothing.
    if let (None, Some(f)) = (s.ple, k.on_spin.as_deref().filter(|&f| f != "off")) {
        return Err(cx.err(
            "kvm.on_spin",
            format!(
                "\"{}\" has no effect without PAUSE-loop exits (ple = \"off\", or VMX ple_gap = 0): allowed \"off\" there, or ple = \"vmx\" / \"svm\"",
                crate::limits::echo(f)
            ),
        ));
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
