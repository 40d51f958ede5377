//! The sender-side IPI hint of docs/design.md section 2 (`ipi_hint`), as the
//! project's series (round 3, kernel/patches/0004-0005, on 6.12.117) does it:
//! `kvm_ipi_hint_record()` (lapic.c), reached from `kvm_apic_send_ipi()` and,
//! under AVIC, from the `AVIC_IPI_FAILURE_TARGET_NOT_RUNNING` exit
//! (`kvm_apic_ipi_hint_record_icr()` before `avic_kick_target_vcpus()`),
//! records `{receiver, vector, time}` on the sender for an exited fixed-mode
//! no-shorthand ICR write with one destination other than the sender, and
//! clears the record for any other exited IPI ([`IpiHint::forget`]). Nothing
//! is seen with IPIv (ICR writes do not exit) or under AVIC when every
//! destination runs. At spin time `kvm_arch_dy_ipi_receiver()` asks whether
//! the receiver still owes that IPI (`kvm_ipi_hint_owed()`: the vector in its
//! IRR or ISR, or in the posted-interrupt descriptor's PIR with APICv) and
//! `kvm_vcpu_on_spin()` tries it first. No receiver-side state, no EOI hook:
//! the preference ends when the receiver takes the interrupt, whether or not
//! its EOI exits. The destination lookup (`kvm_intr_is_single_vcpu()`: the
//! APIC map, else a walk) always resolves in the model, as the walk does.

use super::{VcpuIdx, Vector};
use crate::engine::{Nanos, Time};

/// One sender's record (a single word in the kernel).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HintRecord {
    pub receiver: VcpuIdx,
    pub vector: Vector,
    pub at: Time,
}

/// The records of one VM, indexed by sender.
#[derive(Clone, Debug)]
pub struct IpiHint {
    rec: Vec<Option<HintRecord>>,
    /// The record's lifetime (default 50 ms, the series' `ipi_window_ns`).
    pub window: Nanos,
}

impl IpiHint {
    pub fn new(nr_vcpus: u32, window: Nanos) -> IpiHint {
        IpiHint {
            rec: vec![None; nr_vcpus as usize],
            window,
        }
    }

    /// Record a unicast fixed-mode IPI whose ICR write exited to KVM
    /// (`kvm_ipi_hint_record()`); a self-IPI names no vCPU to wait on and
    /// clears the record, as every IPI that is not recorded does.
    pub fn record(&mut self, sender: VcpuIdx, receiver: VcpuIdx, vector: Vector, now: Time) {
        if sender == receiver {
            self.forget(sender);
            return;
        }
        if let Some(r) = self.rec.get_mut(sender.idx()) {
            *r = Some(HintRecord {
                receiver,
                vector,
                at: now,
            });
        }
    }

    /// An exited IPI of `sender` that is not recorded (broadcast, multicast,
    /// lowest priority, NMI/INIT/SIPI, self): it is the sender's latest and
    /// names no single vCPU, so `kvm_ipi_hint_record()` clears the record.
    pub fn forget(&mut self, sender: VcpuIdx) {
        if let Some(r) = self.rec.get_mut(sender.idx()) {
            *r = None;
        }
    }

    pub fn get(&self, sender: VcpuIdx) -> Option<HintRecord> {
        self.rec.get(sender.idx()).copied().flatten()
    }

    /// At spin time: the receiver that still owes `sender`'s IPI, asked
    /// through `owes(receiver, vector)` (IRR, ISR or PIR holds the vector);
    /// otherwise the record is dropped.
    pub fn owed_receiver(
        &mut self,
        sender: VcpuIdx,
        now: Time,
        owes: impl Fn(VcpuIdx, Vector) -> bool,
    ) -> Option<VcpuIdx> {
        let r = self.get(sender)?;
        if now - r.at <= self.window && owes(r.receiver, r.vector) {
            return Some(r.receiver);
        }
        self.rec[sender.idx()] = None;
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const V: Vector = Vector(0xfb);

    #[test]
    fn owed_while_pending_dropped_once_taken_or_old() {
        let mut h = IpiHint::new(4, Nanos::from_ms(50));
        h.record(VcpuIdx(0), VcpuIdx(2), V, Time(1_000));
        assert_eq!(
            h.owed_receiver(VcpuIdx(0), Time(2_000), |r, v| r.0 == 2 && v == V),
            Some(VcpuIdx(2))
        );
        // Taken (no longer in IRR/ISR/PIR): dropped for good.
        assert_eq!(h.owed_receiver(VcpuIdx(0), Time(3_000), |_, _| false), None);
        assert_eq!(h.get(VcpuIdx(0)), None);
        h.record(VcpuIdx(1), VcpuIdx(3), V, Time(0));
        let late = Time(Nanos::from_ms(50).0 + 1);
        assert_eq!(h.owed_receiver(VcpuIdx(1), late, |_, _| true), None);
        // Self-IPIs are not recorded, and clear an earlier record.
        h.record(VcpuIdx(2), VcpuIdx(3), V, Time(0));
        h.record(VcpuIdx(2), VcpuIdx(2), V, Time(0));
        assert_eq!(h.get(VcpuIdx(2)), None);
    }

    #[test]
    fn an_ipi_that_is_not_recorded_clears_the_hint() {
        let mut h = IpiHint::new(4, Nanos::from_ms(50));
        h.record(VcpuIdx(0), VcpuIdx(2), V, Time(1_000));
        h.forget(VcpuIdx(0));
        assert_eq!(
            h.owed_receiver(VcpuIdx(0), Time(2_000), |_, _| true),
            None,
            "a multicast after the unicast must leave no receiver to prefer"
        );
        // Another sender's record is untouched.
        h.record(VcpuIdx(1), VcpuIdx(3), V, Time(1_000));
        h.forget(VcpuIdx(0));
        assert_eq!(h.get(VcpuIdx(1)).map(|r| r.receiver), Some(VcpuIdx(3)));
    }
}
