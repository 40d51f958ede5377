//! Local-APIC IPI delivery as KVM x86 sees it, and the seed series' IPI
//! tracking.
//!
//! * Destination resolution of an ICR write: `kvm_apic_match_dest` and
//!   `kvm_irq_delivery_to_apic` (arch/x86/kvm/lapic.c, irq_comm.c, 6.12.117)
//!   for fixed and lowest-priority delivery, physical and flat-logical
//!   destinations and the three shorthands.
//! * IPI tracking (series v1 patches 7/10 and 8/10, semantics.md 2.2/2.3):
//!   `kvm_track_ipi_communication`, `kvm_vcpu_is_ipi_receiver`,
//!   `kvm_clear_ipi_on_eoi`, with the v1/v2 clear-on-any-EOI or the v3
//!   matching-vector rule as a switch.
//! * Hardware acceleration switches, named after KVM 6.12.117's module
//!   parameters: `apicv` (`kvm_intel.enable_apicv`; EOIs of edge-triggered
//!   vectors are virtualized and never exit, so nothing is cleared on EOI;
//!   delivery to a vCPU that is not running posts the interrupt, which makes
//!   `kvm_arch_dy_has_pending_interrupt` meaningful), `ipiv`
//!   (`kvm_intel.enable_ipiv`, vmx.c: the x2APIC ICR MSR is not intercepted
//!   and the PID-pointer table is set up; the CPU virtualizes an ICR write
//!   that is fixed, physical and without shorthand to a valid destination,
//!   any other write still takes the APIC-write exit: Intel SDM, "IPI
//!   virtualization") and `avic` (`kvm_amd.avic`, svm/avic.c
//!   `avic_incomplete_ipi_interception`: fixed IPIs are delivered by the
//!   CPU; a write whose target is not running exits with
//!   AVIC_IPI_FAILURE_TARGET_NOT_RUNNING and KVM only kicks the targets,
//!   `avic_kick_target_vcpus`, never reaching `kvm_irq_delivery_to_apic`, so
//!   the series' tracker records nothing; other delivery modes exit with
//!   AVIC_IPI_FAILURE_INVALID_INT_TYPE to `kvm_apic_send_ipi`).

use super::{VcpuIdx, Vector};
use crate::engine::{Nanos, Time};
use smallvec::{smallvec, SmallVec};

/// The vCPUs an interrupt is delivered to, inline for the usual single
/// destination (a unicast IPI allocates nothing).
pub type ApicTargets = SmallVec<[VcpuIdx; 1]>;

/// `APIC_DM_*` delivery modes that matter here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeliveryMode {
    Fixed,
    LowestPriority,
    Nmi,
    /// `APIC_DM_REMRD`, abused by `kvm_pv_kick_cpu_op` to set `pv_unhalted`.
    RemoteRead,
}

/// `APIC_DEST_PHYSICAL` / `APIC_DEST_LOGICAL`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DestMode {
    Physical,
    /// xAPIC flat logical mode; in this model vCPU i has LDR bit i (i < 8).
    Logical,
}

/// ICR destination shorthand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shorthand {
    NoShorthand,
    SelfOnly,
    AllIncludingSelf,
    AllButSelf,
}

/// One interrupt request (`struct kvm_lapic_irq`) built from an ICR write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LapicIrq {
    pub vector: Vector,
    pub delivery_mode: DeliveryMode,
    pub dest_mode: DestMode,
    pub shorthand: Shorthand,
    /// Physical APIC id (= vCPU index in this model; 0xff broadcast) or a
    /// flat-logical bit mask.
    pub dest_id: u32,
}

impl LapicIrq {
    /// A fixed, physical, no-shorthand IPI to one vCPU (Linux's
    /// `__default_send_IPI_dest_field` / x2APIC `send_IPI`).
    pub fn unicast(to: VcpuIdx, vector: Vector) -> LapicIrq {
        LapicIrq {
            vector,
            delivery_mode: DeliveryMode::Fixed,
            dest_mode: DestMode::Physical,
            shorthand: Shorthand::NoShorthand,
            dest_id: to.0,
        }
    }
}

/// xAPIC physical broadcast id.
pub const APIC_BROADCAST: u32 = 0xff;

/// `kvm_apic_match_dest` for vCPU `v` (model: physical id = index; flat
/// logical id = `1 << index` for the first 8 vCPUs, none beyond).
pub fn kvm_apic_match_dest(v: VcpuIdx, src: Option<VcpuIdx>, irq: &LapicIrq) -> bool {
    match irq.shorthand {
        Shorthand::SelfOnly => src == Some(v),
        Shorthand::AllIncludingSelf => true,
        Shorthand::AllButSelf => src != Some(v),
        Shorthand::NoShorthand => match irq.dest_mode {
            DestMode::Physical => irq.dest_id == APIC_BROADCAST || irq.dest_id == v.0,
            DestMode::Logical => v.0 < 8 && (irq.dest_id & (1 << v.0)) != 0,
        },
    }
}

/// `kvm_irq_delivery_to_apic` (irq_comm.c, 6.12.117) over a VM of
/// `nr_vcpus`: the vCPUs that get the interrupt. Lowest-priority delivery
/// uses vector hashing (`kvm_vector_hashing_enabled`, default on):
/// the `(vector % n)`-th matching vCPU, as `kvm_vector_to_index` does;
/// priority arbitration (hashing off) is not modelled.
pub fn kvm_irq_delivery_to_apic(
    nr_vcpus: u32,
    src: Option<VcpuIdx>,
    irq: &LapicIrq,
) -> ApicTargets {
    // A physical unicast (the common case) matches its destination id
    // only: skip the scan over every vCPU. Lowest priority among one
    // match picks it.
    if irq.shorthand == Shorthand::NoShorthand
        && irq.dest_mode == DestMode::Physical
        && irq.dest_id != APIC_BROADCAST
    {
        return if irq.dest_id < nr_vcpus {
            smallvec![VcpuIdx(irq.dest_id)]
        } else {
            ApicTargets::new()
        };
    }
    let matching: ApicTargets = (0..nr_vcpus)
        .map(VcpuIdx)
        .filter(|&v| kvm_apic_match_dest(v, src, irq))
        .collect();
    if irq.delivery_mode == DeliveryMode::LowestPriority
        && !(irq.dest_mode == DestMode::Physical && irq.dest_id == APIC_BROADCAST)
    {
        if matching.is_empty() {
            return matching;
        }
        let i = usize::from(irq.vector.0) % matching.len();
        return smallvec![matching[i]];
    }
    matching
}

/// Whether IPI virtualization handles this ICR write without an exit (Intel
/// SDM, "IPI virtualization"; KVM 6.12.117 sets the PID-pointer table's last
/// index to `max_vcpu_ids - 1`, here the VM's `nr_vcpus`): fixed delivery,
/// physical destination, no shorthand, a destination with a valid
/// PID-pointer entry (a vCPU of the VM).
/// Edge trigger is implied (the model sends no level-triggered IPI).
pub fn ipiv_virtualizes(nr_vcpus: u32, irq: &LapicIrq) -> bool {
    irq.delivery_mode == DeliveryMode::Fixed
        && irq.dest_mode == DestMode::Physical
        && irq.shorthand == Shorthand::NoShorthand
        && irq.dest_id < nr_vcpus
}

/// How an EOI clears tracking state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EoiClear {
    /// Series v1/v2: any EOI by the receiver (a timer EOI too) clears.
    AnyEoi,
    /// Series v3: only an EOI of the tracked IPI's vector clears.
    MatchingVector,
}

/// IPI-tracking and APIC-acceleration knobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IpiTrackingParams {
    /// `kvm.ipi_tracking_enabled` (default true).
    pub enabled: bool,
    /// `kvm.ipi_window_ns` (default 50 ms).
    pub window: Nanos,
    pub eoi: EoiClear,
    /// APICv / AVIC active: EOI virtualization, posted interrupts.
    pub apicv: bool,
    /// IPI virtualization (`kvm_intel.enable_ipiv`): fixed, physical,
    /// no-shorthand ICR writes do not exit ([`ipiv_virtualizes`]).
    pub ipiv: bool,
    /// AMD AVIC (`kvm_amd.avic`): a fixed IPI exits only when a target is
    /// not running (AVIC_IPI_FAILURE_TARGET_NOT_RUNNING, handled by
    /// `avic_kick_target_vcpus` without `kvm_irq_delivery_to_apic`: not
    /// tracked); other delivery modes exit to `kvm_apic_send_ipi`.
    pub avic: bool,
}

impl Default for IpiTrackingParams {
    fn default() -> Self {
        IpiTrackingParams {
            enabled: true,
            window: Nanos::from_ms(50),
            eoi: EoiClear::MatchingVector,
            apicv: false,
            ipiv: false,
            avic: false,
        }
    }
}

/// `vcpu->arch.ipi_context` (series 7/10) plus the tracked vector (v3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct IpiContext {
    /// vCPU that last sent me a tracked IPI (`-1` = none in C).
    pub last_ipi_sender: Option<VcpuIdx>,
    /// vCPU I last sent a tracked unicast IPI to.
    pub last_ipi_receiver: Option<VcpuIdx>,
    /// I sent an IPI and await the response.
    pub pending_ipi: bool,
    /// When I sent it (`ipi_time_ns`).
    pub ipi_time: Time,
    /// Vector of the tracked IPI I received (v3 matching-vector EOI).
    pub last_ipi_vector: Option<Vector>,
}

/// The result of an ICR write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IcrWrite {
    /// vCPUs that get the vector.
    pub targets: ApicTargets,
    /// The write exited to KVM: an APIC-write (or AVIC invalid-type) exit
    /// to `kvm_apic_send_ipi`, or AVIC's target-not-running exit.
    pub exited: bool,
    /// The exit was AVIC's AVIC_IPI_FAILURE_TARGET_NOT_RUNNING: KVM kicks the
    /// targets (`avic_kick_target_vcpus`) and never reaches
    /// `kvm_irq_delivery_to_apic`.
    pub avic_kick: bool,
    /// The sender/receiver pair was recorded.
    pub tracked: bool,
}

/// IPI tracking for one VM.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IpiTracker {
    pub params: IpiTrackingParams,
    ctx: Vec<IpiContext>,
}

impl IpiTracker {
    pub fn new(nr_vcpus: u32, params: IpiTrackingParams) -> IpiTracker {
        IpiTracker {
            params,
            ctx: vec![IpiContext::default(); nr_vcpus as usize],
        }
    }

    /// The context of vCPU `v` (default for an unknown index).
    pub fn context(&self, v: VcpuIdx) -> IpiContext {
        self.ctx.get(v.idx()).copied().unwrap_or_default()
    }

    fn nr(&self) -> u32 {
        u32::try_from(self.ctx.len()).unwrap_or(u32::MAX)
    }

    /// `kvm_track_ipi_communication(sender, receiver)`: ignored when
    /// disabled, for a self-IPI or unknown vCPUs.
    pub fn kvm_track_ipi_communication(
        &mut self,
        sender: VcpuIdx,
        receiver: VcpuIdx,
        vector: Vector,
        now: Time,
    ) {
        if !self.params.enabled || sender == receiver {
            return;
        }
        if sender.idx() >= self.ctx.len() || receiver.idx() >= self.ctx.len() {
            return;
        }
        let s = &mut self.ctx[sender.idx()];
        s.last_ipi_receiver = Some(receiver);
        s.pending_ipi = true;
        s.ipi_time = now;
        let r = &mut self.ctx[receiver.idx()];
        r.last_ipi_sender = Some(sender);
        r.last_ipi_vector = Some(vector);
    }

    /// `kvm_vcpu_is_ipi_receiver(sender, receiver)`.
    pub fn kvm_vcpu_is_ipi_receiver(&self, sender: VcpuIdx, receiver: VcpuIdx, now: Time) -> bool {
        let s = self.context(sender);
        self.params.enabled
            && s.pending_ipi
            && s.last_ipi_receiver == Some(receiver)
            && now.since(s.ipi_time) <= self.params.window
    }

    /// The vCPU `v` for which `kvm_vcpu_is_ipi_receiver(me, v)` holds now.
    pub fn confirmed_receiver(&self, me: VcpuIdx, now: Time) -> Option<VcpuIdx> {
        let r = self.context(me).last_ipi_receiver?;
        self.kvm_vcpu_is_ipi_receiver(me, r, now).then_some(r)
    }

    /// `kvm_vcpu_clear_ipi_context`: the time is kept.
    pub fn kvm_vcpu_clear_ipi_context(&mut self, v: VcpuIdx) {
        if let Some(c) = self.ctx.get_mut(v.idx()) {
            c.pending_ipi = false;
            c.last_ipi_sender = None;
            c.last_ipi_receiver = None;
            c.last_ipi_vector = None;
        }
    }

    /// `kvm_clear_ipi_on_eoi(apic)` for the receiver's EOI of `vector`:
    /// clears the receiver's whole context (its own sender side too), then the
    /// sender's `pending_ipi` if the pair still matches within the window.
    /// Under [`EoiClear::MatchingVector`] nothing happens unless `vector` is
    /// the tracked IPI's vector ([I]: reconstructed from the v3 cover letter).
    pub fn kvm_clear_ipi_on_eoi(&mut self, receiver: VcpuIdx, vector: Vector, now: Time) {
        if !self.params.enabled {
            return;
        }
        let rc = self.context(receiver);
        if self.params.eoi == EoiClear::MatchingVector && rc.last_ipi_vector != Some(vector) {
            return;
        }
        self.kvm_vcpu_clear_ipi_context(receiver);
        if let Some(s) = rc.last_ipi_sender {
            let window = self.params.window;
            if let Some(sc) = self.ctx.get_mut(s.idx()) {
                if sc.last_ipi_receiver == Some(receiver) && now.since(sc.ipi_time) <= window {
                    sc.pending_ipi = false;
                }
            }
        }
    }

    /// A guest ICR write by `src`: delivery, and tracking when the write
    /// exits (no IPIv) and the series' condition holds (src set, fixed mode,
    /// no shorthand, exactly one target which is not the sender).
    pub fn on_icr_write(&mut self, src: VcpuIdx, irq: &LapicIrq, now: Time) -> IcrWrite {
        self.on_icr_write_running(src, irq, now, &|_| true)
    }

    /// `on_icr_write` with the targets' running state (AVIC exits only for
    /// a target that is not running).
    pub fn on_icr_write_running(
        &mut self,
        src: VcpuIdx,
        irq: &LapicIrq,
        now: Time,
        running: &dyn Fn(VcpuIdx) -> bool,
    ) -> IcrWrite {
        let targets = kvm_irq_delivery_to_apic(self.nr(), Some(src), irq);
        let (exited, avic_kick) = if self.params.avic {
            if irq.delivery_mode != DeliveryMode::Fixed {
                // AVIC_IPI_FAILURE_INVALID_INT_TYPE: kvm_apic_send_ipi.
                (true, false)
            } else {
                let kick = targets.iter().any(|&t| !running(t));
                (kick, kick)
            }
        } else {
            (
                !(self.params.ipiv && ipiv_virtualizes(self.nr(), irq)),
                false,
            )
        };
        let mut tracked = false;
        if exited
            && !avic_kick
            && self.params.enabled
            && irq.delivery_mode == DeliveryMode::Fixed
            && irq.shorthand == Shorthand::NoShorthand
            && targets.len() == 1
            && targets[0] != src
        {
            self.kvm_track_ipi_communication(src, targets[0], irq.vector, now);
            tracked = true;
        }
        IcrWrite {
            targets,
            exited,
            avic_kick,
            tracked,
        }
    }

    /// A guest EOI of `vector` by `v`. With APICv the EOI of an edge-triggered
    /// vector is virtualized and does not exit, so nothing is cleared.
    /// Returns whether KVM saw the EOI.
    pub fn on_eoi(&mut self, v: VcpuIdx, vector: Vector, now: Time) -> bool {
        if self.params.apicv {
            return false;
        }
        self.kvm_clear_ipi_on_eoi(v, vector, now);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const V: Vector = Vector(0xfb); // CALL_FUNCTION_SINGLE_VECTOR
    const TIMER: Vector = Vector(0xec); // LOCAL_TIMER_VECTOR
    const MS: u64 = 1_000_000;

    fn tr(p: IpiTrackingParams) -> IpiTracker {
        IpiTracker::new(4, p)
    }

    #[test]
    fn destinations() {
        let all = LapicIrq {
            shorthand: Shorthand::AllButSelf,
            ..LapicIrq::unicast(VcpuIdx(0), V)
        };
        assert_eq!(
            kvm_irq_delivery_to_apic(4, Some(VcpuIdx(1)), &all).as_slice(),
            [VcpuIdx(0), VcpuIdx(2), VcpuIdx(3)]
        );
        let me = LapicIrq {
            shorthand: Shorthand::SelfOnly,
            ..all
        };
        assert_eq!(
            kvm_irq_delivery_to_apic(4, Some(VcpuIdx(1)), &me).as_slice(),
            [VcpuIdx(1)]
        );
        let logical = LapicIrq {
            dest_mode: DestMode::Logical,
            dest_id: 0b1010,
            ..LapicIrq::unicast(VcpuIdx(0), V)
        };
        assert_eq!(
            kvm_irq_delivery_to_apic(4, Some(VcpuIdx(0)), &logical).as_slice(),
            [VcpuIdx(1), VcpuIdx(3)]
        );
        let lowest = LapicIrq {
            delivery_mode: DeliveryMode::LowestPriority,
            ..logical
        };
        // 0xfb % 2 = 1 -> second match.
        assert_eq!(
            kvm_irq_delivery_to_apic(4, Some(VcpuIdx(0)), &lowest).as_slice(),
            [VcpuIdx(3)]
        );
        assert!(kvm_irq_delivery_to_apic(4, None, &LapicIrq::unicast(VcpuIdx(9), V)).is_empty());
    }

    #[test]
    fn unicast_is_tracked_with_vector() {
        let mut t = tr(IpiTrackingParams::default());
        let w = t.on_icr_write(VcpuIdx(0), &LapicIrq::unicast(VcpuIdx(2), V), Time(5));
        assert!(w.exited && w.tracked);
        assert_eq!(w.targets.as_slice(), [VcpuIdx(2)]);
        assert_eq!(t.confirmed_receiver(VcpuIdx(0), Time(5)), Some(VcpuIdx(2)));
        assert_eq!(t.context(VcpuIdx(2)).last_ipi_sender, Some(VcpuIdx(0)));
        assert_eq!(t.context(VcpuIdx(2)).last_ipi_vector, Some(V));
        assert!(!t.kvm_vcpu_is_ipi_receiver(VcpuIdx(0), VcpuIdx(1), Time(5)));
    }

    #[test]
    fn broadcast_multicast_self_are_not_tracked() {
        let mut t = tr(IpiTrackingParams::default());
        let base = LapicIrq::unicast(VcpuIdx(2), V);
        for irq in [
            LapicIrq {
                shorthand: Shorthand::AllButSelf,
                ..base
            },
            LapicIrq {
                shorthand: Shorthand::SelfOnly,
                ..base
            },
            LapicIrq {
                dest_mode: DestMode::Logical,
                dest_id: 0b0110,
                ..base
            },
            LapicIrq::unicast(VcpuIdx(0), V), // to self without shorthand
            LapicIrq {
                dest_id: APIC_BROADCAST,
                ..base
            },
            LapicIrq {
                delivery_mode: DeliveryMode::Nmi,
                ..base
            },
        ] {
            let w = t.on_icr_write(VcpuIdx(0), &irq, Time(1));
            assert!(!w.tracked, "{irq:?}");
        }
        assert_eq!(t.context(VcpuIdx(0)), IpiContext::default());
        // A logical destination with a single bit set is a unicast.
        let one = LapicIrq {
            dest_mode: DestMode::Logical,
            dest_id: 0b0100,
            ..base
        };
        assert!(t.on_icr_write(VcpuIdx(0), &one, Time(1)).tracked);
    }

    #[test]
    fn eoi_clearing_v3_matches_vector() {
        let mut t = tr(IpiTrackingParams::default());
        t.on_icr_write(VcpuIdx(0), &LapicIrq::unicast(VcpuIdx(2), V), Time(0));
        assert!(t.on_eoi(VcpuIdx(2), TIMER, Time(10)));
        assert!(t.kvm_vcpu_is_ipi_receiver(VcpuIdx(0), VcpuIdx(2), Time(10)));
        t.on_eoi(VcpuIdx(2), V, Time(20));
        assert!(!t.kvm_vcpu_is_ipi_receiver(VcpuIdx(0), VcpuIdx(2), Time(20)));
        assert!(!t.context(VcpuIdx(0)).pending_ipi);
        assert_eq!(t.context(VcpuIdx(2)), IpiContext::default());
    }

    #[test]
    fn eoi_clearing_v1_on_any_eoi() {
        let mut t = tr(IpiTrackingParams {
            eoi: EoiClear::AnyEoi,
            ..Default::default()
        });
        t.on_icr_write(VcpuIdx(0), &LapicIrq::unicast(VcpuIdx(2), V), Time(0));
        t.on_eoi(VcpuIdx(2), TIMER, Time(10));
        assert!(!t.kvm_vcpu_is_ipi_receiver(VcpuIdx(0), VcpuIdx(2), Time(10)));
    }

    #[test]
    fn eoi_also_erases_receivers_own_sender_side() {
        let mut t = tr(IpiTrackingParams {
            eoi: EoiClear::AnyEoi,
            ..Default::default()
        });
        t.on_icr_write(VcpuIdx(2), &LapicIrq::unicast(VcpuIdx(3), V), Time(0));
        t.on_icr_write(VcpuIdx(0), &LapicIrq::unicast(VcpuIdx(2), V), Time(0));
        t.on_eoi(VcpuIdx(2), V, Time(1));
        assert!(!t.kvm_vcpu_is_ipi_receiver(VcpuIdx(2), VcpuIdx(3), Time(1)));
    }

    #[test]
    fn window_expiry() {
        let mut t = tr(IpiTrackingParams::default());
        t.on_icr_write(VcpuIdx(1), &LapicIrq::unicast(VcpuIdx(3), V), Time(MS));
        assert!(t.kvm_vcpu_is_ipi_receiver(VcpuIdx(1), VcpuIdx(3), Time(51 * MS)));
        assert!(!t.kvm_vcpu_is_ipi_receiver(VcpuIdx(1), VcpuIdx(3), Time(51 * MS + 1)));
        // A late EOI clears the receiver but not the (expired) sender flag.
        t.on_eoi(VcpuIdx(3), V, Time(60 * MS));
        assert!(t.context(VcpuIdx(1)).pending_ipi);
        assert_eq!(t.context(VcpuIdx(3)).last_ipi_sender, None);
    }

    #[test]
    fn ipiv_tracks_nothing_and_apicv_never_clears() {
        let mut t = tr(IpiTrackingParams {
            ipiv: true,
            ..Default::default()
        });
        let w = t.on_icr_write(VcpuIdx(0), &LapicIrq::unicast(VcpuIdx(2), V), Time(0));
        assert_eq!(w.targets.as_slice(), [VcpuIdx(2)]);
        assert!(!w.exited && !w.tracked);
        assert_eq!(t.confirmed_receiver(VcpuIdx(0), Time(0)), None);
        let mut a = tr(IpiTrackingParams {
            apicv: true,
            ..Default::default()
        });
        a.on_icr_write(VcpuIdx(0), &LapicIrq::unicast(VcpuIdx(2), V), Time(0));
        assert!(!a.on_eoi(VcpuIdx(2), V, Time(1)));
        assert!(a.kvm_vcpu_is_ipi_receiver(VcpuIdx(0), VcpuIdx(2), Time(1)));
    }

    #[test]
    fn ipiv_virtualizes_fixed_physical_unicasts_only() {
        let mut t = tr(IpiTrackingParams {
            apicv: true,
            ipiv: true,
            ..Default::default()
        });
        let base = LapicIrq::unicast(VcpuIdx(2), V);
        assert!(!t.on_icr_write(VcpuIdx(0), &base, Time(0)).exited);
        // A flat-logical unicast takes the APIC-write exit and reaches
        // kvm_irq_delivery_to_apic: tracked.
        let logical = LapicIrq {
            dest_mode: DestMode::Logical,
            dest_id: 0b0100,
            ..base
        };
        let w = t.on_icr_write(VcpuIdx(0), &logical, Time(1));
        assert!(w.exited && w.tracked && !w.avic_kick);
        assert_eq!(t.confirmed_receiver(VcpuIdx(0), Time(1)), Some(VcpuIdx(2)));
        for irq in [
            LapicIrq {
                shorthand: Shorthand::AllButSelf,
                ..base
            },
            LapicIrq {
                delivery_mode: DeliveryMode::Nmi,
                ..base
            },
            LapicIrq::unicast(VcpuIdx(9), V),
        ] {
            assert!(t.on_icr_write(VcpuIdx(0), &irq, Time(2)).exited, "{irq:?}");
        }
    }

    #[test]
    fn avic_exits_for_a_target_not_running_without_tracking() {
        let mut t = tr(IpiTrackingParams {
            apicv: true,
            avic: true,
            ..Default::default()
        });
        let to2 = LapicIrq::unicast(VcpuIdx(2), V);
        let w = t.on_icr_write_running(VcpuIdx(0), &to2, Time(0), &|_| true);
        assert!(!w.exited && !w.tracked);
        let w = t.on_icr_write_running(VcpuIdx(0), &to2, Time(0), &|v| v != VcpuIdx(2));
        assert!(w.exited && w.avic_kick && !w.tracked);
        assert_eq!(t.context(VcpuIdx(0)), IpiContext::default());
        // Lowest priority is not handled by AVIC: INVALID_INT_TYPE exit to
        // kvm_apic_send_ipi (not tracked: not fixed).
        let lp = LapicIrq {
            delivery_mode: DeliveryMode::LowestPriority,
            ..to2
        };
        let w = t.on_icr_write_running(VcpuIdx(0), &lp, Time(0), &|_| true);
        assert!(w.exited && !w.avic_kick && !w.tracked);
    }

    #[test]
    fn disabled_tracking_tracks_nothing() {
        let mut t = tr(IpiTrackingParams {
            enabled: false,
            ..Default::default()
        });
        assert!(
            !t.on_icr_write(VcpuIdx(0), &LapicIrq::unicast(VcpuIdx(2), V), Time(0))
                .tracked
        );
        t.kvm_track_ipi_communication(VcpuIdx(0), VcpuIdx(9), V, Time(0));
    }
}
