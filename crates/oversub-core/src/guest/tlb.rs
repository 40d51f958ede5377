//! Which guest CPUs a TLB flush interrupts: `mm_cpumask(mm)` and
//! `native_flush_tlb_multi()` of arch/x86/mm/tlb.c, in two forms.
//!
//! * **Eager** (Linux 6.12.117, the default): `switch_mm_irqs_off()` clears
//!   the CPU's bit in the previous mm's cpumask when it switches to another
//!   mm, so the mask is the CPUs whose loaded mm (`cpu_tlbstate.loaded_mm`)
//!   is this one: running one of its threads, or idle with it loaded (lazy
//!   TLB). The mask needs no state of its own.
//! * **Lazy** (`[guest] lazy_mm_cpumask`; 209954cbc7d0 "x86/mm/tlb: Update
//!   mm_cpumask lazily", 6db2526c1d69 "x86/mm/tlb: Only trim the mm_cpumask
//!   once a second" and 953753db887f "x86/mm/tlb: Also remove local CPU from
//!   mm_cpumask if stale", merged through tip x86/mm in Nov-Dec 2024 for
//!   Linux 6.14; the recordings' 6.18 has them): the switch sets the bit of
//!   the next mm and leaves the previous one's, which stays set until a
//!   flush IPI reaches the CPU while it has another mm loaded
//!   (`flush_tlb_func()` then clears it).
//!
//! A flush from CPU `from` is remote when the mask holds another CPU
//! (`flush_tlb_mm_range()`; the recorder's TLB_REMOTE_SEND_IPI). Its targets
//! are the CPUs of the mask `should_flush_tlb()` keeps: not lazy, and with
//! the mm loaded, or any mm loaded when the flush trims
//! (`should_trim_cpumask()`: the first remote flush more than a second after
//! the mm's creation or its last trim). A flush that freed page tables
//! (`freed_tables`) skips that filter and interrupts every CPU of the mask,
//! lazy ones included. PV TLB flush (`kvm_flush_tlb_multi()`) drops a
//! preempted vCPU before the filter: it flushes on its next entry.
//!
//! What a target's `flush_tlb_func()` does to the state is applied when
//! the flush is sent (the caller waits for its handlers, and a target's
//! state does not change between the send and its handler in the model):
//! another mm loaded: the bit is cleared (lazy form only: the eager mask
//! never holds such a CPU); lazy with this mm loaded: the CPU switches to
//! `init_mm` (its loaded mm becomes none; the eager mask loses it with
//! that, the lazy one keeps the bit until a later flush finds it there).
//!
//! Simplifications: `jiffies` are nanoseconds (the trim's one-second
//! period is 1 s of simulated time, not HZ ticks), the
//! `LOADED_MM_SWITCHING` window and the ASID-transition (INVLPGB) paths
//! are not modelled.

use crate::engine::{Nanos, Time};
use crate::kvm::VcpuIdx;
use crate::workload::ir::MmId;

/// The trim period of `should_trim_cpumask()` (`HZ` jiffies: one second).
pub const TRIM_PERIOD: Nanos = Nanos::from_secs(1);

/// One guest CPU as `should_flush_tlb()` reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuTlb {
    /// `cpu_tlbstate.loaded_mm`: the current thread's mm, or while idle
    /// the last one (lazy TLB); None: `init_mm`.
    pub loaded: Option<MmId>,
    /// `cpu_tlbstate_shared.is_lazy`: idle with a user mm loaded.
    pub is_lazy: bool,
    /// PV TLB flush drops it (`kvm_flush_tlb_multi()`: the vCPU is
    /// preempted and the guest uses PV TLB flush and steal time).
    pub pv_dropped: bool,
}

/// What one flush did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Flush {
    /// The mask held another CPU: `flush_tlb_multi()` ran.
    pub remote: bool,
    /// Targets PV TLB flush left out (they flush on their next entry).
    pub deferred: u32,
}

/// The `mm_cpumask` of every mm of a guest program (lazy form only; the
/// eager one is read off the CPUs' loaded mms).
#[derive(Clone, Debug)]
pub struct MmCpumasks {
    lazy: bool,
    cpus: usize,
    /// Per mm (`MmId`), per CPU: the bit.
    bits: Vec<bool>,
    /// Per mm, `mm->context.next_trim_cpumask`.
    next_trim: Vec<Time>,
}

impl MmCpumasks {
    /// The masks of `mms` mms on `cpus` CPUs; `lazy`: the lazy form. The
    /// mms exist from time 0 (`init_new_context()`: first trim after a
    /// second); [`Self::new_mm`] renews one.
    pub fn new(lazy: bool, mms: usize, cpus: usize) -> MmCpumasks {
        let (b, t) = if lazy { (mms * cpus, mms) } else { (0, 0) };
        MmCpumasks {
            lazy,
            cpus,
            bits: vec![false; b],
            next_trim: vec![Time::ZERO + TRIM_PERIOD; t],
        }
    }

    /// Whether this is the lazy form.
    pub fn is_lazy(&self) -> bool {
        self.lazy
    }

    /// `switch_mm_irqs_off()` to `mm` on `cpu`: the bit is set (the eager
    /// form's previous-mm clear is implicit in the loaded mm).
    #[inline]
    pub fn switch_mm(&mut self, cpu: VcpuIdx, mm: MmId) {
        if self.lazy {
            self.bits[mm.0 as usize * self.cpus + cpu.idx()] = true;
        }
    }

    /// A new mm under `mm`'s id at `now` (`copy_mm()` for a forked copy
    /// whose previous process exited): empty mask, first trim a second
    /// later.
    pub fn new_mm(&mut self, mm: MmId, now: Time) {
        if self.lazy {
            let m = mm.0 as usize;
            self.bits[m * self.cpus..(m + 1) * self.cpus].fill(false);
            self.next_trim[m] = now + TRIM_PERIOD;
        }
    }

    /// Whether `cpu` is in `mm`'s mask (`state`: the CPU as seen now).
    pub fn in_mask(&self, mm: MmId, cpu: VcpuIdx, state: &CpuTlb) -> bool {
        if self.lazy {
            self.bits[mm.0 as usize * self.cpus + cpu.idx()]
        } else {
            state.loaded == Some(mm)
        }
    }

    /// `flush_tlb_mm_range()` -> `flush_tlb_multi()` for `mm` from `from`
    /// at `now`: pushes the CPUs sent the flush IPI to `targets` and
    /// applies their handlers' effect to the masks and to `cpus` (see the
    /// module doc). `cpus[c]` is CPU `c` as `should_flush_tlb()` reads it.
    pub fn flush_tlb_multi(
        &mut self,
        mm: MmId,
        from: VcpuIdx,
        now: Time,
        freed_tables: bool,
        cpus: &mut [CpuTlb],
        targets: &mut Vec<VcpuIdx>,
    ) -> Flush {
        let mut f = Flush::default();
        let others = |c: usize| c != from.idx();
        f.remote = (0..cpus.len())
            .filter(|&c| others(c))
            .any(|c| self.in_mask(mm, VcpuIdx(c as u32), &cpus[c]));
        if !f.remote {
            return f;
        }
        let trim = self.should_trim_cpumask(mm, now);
        for (c, s) in cpus.iter_mut().enumerate().filter(|(c, _)| others(*c)) {
            let v = VcpuIdx(c as u32);
            if !self.in_mask(mm, v, s) {
                continue;
            }
            if !(freed_tables || should_flush_tlb(s, mm, trim)) {
                continue;
            }
            if s.pv_dropped {
                f.deferred += 1;
                continue;
            }
            targets.push(v);
            // flush_tlb_func() on the target.
            if s.loaded != Some(mm) {
                if self.lazy {
                    self.bits[mm.0 as usize * self.cpus + c] = false;
                }
            } else if s.is_lazy {
                s.loaded = None;
                s.is_lazy = false;
            }
        }
        f
    }

    /// `should_trim_cpumask()`: true once a second per mm (lazy form; the
    /// eager mask has nothing to trim).
    fn should_trim_cpumask(&mut self, mm: MmId, now: Time) -> bool {
        if !self.lazy {
            return false;
        }
        let next = &mut self.next_trim[mm.0 as usize];
        if now > *next {
            *next = now + TRIM_PERIOD;
            return true;
        }
        false
    }
}

/// `should_flush_tlb()` (6.12.117 and later): not lazy, and `mm` loaded
/// or the flush trims.
pub fn should_flush_tlb(cpu: &CpuTlb, mm: MmId, trim: bool) -> bool {
    !cpu.is_lazy && (cpu.loaded == Some(mm) || trim)
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: MmId = MmId(0);
    const B: MmId = MmId(1);

    fn on(mm: MmId) -> CpuTlb {
        CpuTlb {
            loaded: Some(mm),
            is_lazy: false,
            pv_dropped: false,
        }
    }

    fn lazy(mm: MmId) -> CpuTlb {
        CpuTlb {
            is_lazy: true,
            ..on(mm)
        }
    }

    fn flush(
        m: &mut MmCpumasks,
        cpus: &mut [CpuTlb],
        at_ms: u64,
        freed: bool,
    ) -> (Flush, Vec<VcpuIdx>) {
        let mut t = Vec::new();
        let f = m.flush_tlb_multi(
            A,
            VcpuIdx(0),
            Time::ZERO + Nanos::from_ms(at_ms),
            freed,
            cpus,
            &mut t,
        );
        (f, t)
    }

    /// 6.12: a CPU that left the mm is out of its mask; one idle with it
    /// loaded is in (remote) but lazy, so only a freed_tables flush
    /// interrupts it, and then it drops to init_mm (out of the mask).
    #[test]
    fn eager_mask_is_the_loaded_mm_and_lazy_cpus_get_only_freed_tables_flushes() {
        let mut m = MmCpumasks::new(false, 2, 3);
        let mut cpus = [on(A), on(B), on(B)];
        assert_eq!(
            flush(&mut m, &mut cpus, 0, true),
            (Flush::default(), vec![])
        );
        cpus[1] = lazy(A);
        let (f, t) = flush(&mut m, &mut cpus, 0, false);
        assert!(f.remote);
        assert!(t.is_empty());
        let (f, t) = flush(&mut m, &mut cpus, 0, true);
        assert!(f.remote);
        assert_eq!(t, vec![VcpuIdx(1)]);
        assert_eq!(cpus[1].loaded, None);
        assert_eq!(flush(&mut m, &mut cpus, 0, true).0, Flush::default());
        // A CPU running the mm is interrupted either way.
        cpus[2] = on(A);
        assert_eq!(flush(&mut m, &mut cpus, 0, false).1, vec![VcpuIdx(2)]);
    }

    /// Lazy form: the CPU keeps the bit of the mm it left; flushes are
    /// remote but send nothing to it (another mm loaded) until the trim a
    /// second after the mm's creation, whose IPI clears the bit; a
    /// freed_tables flush does the same at once.
    #[test]
    fn lazy_mask_keeps_a_cpu_that_left_until_a_trim_or_freed_tables_ipi_clears_it() {
        let mut m = MmCpumasks::new(true, 2, 2);
        m.switch_mm(VcpuIdx(0), A);
        m.switch_mm(VcpuIdx(1), A);
        m.switch_mm(VcpuIdx(1), B);
        let mut cpus = [on(A), on(B)];
        for ms in [10, 500, 1000] {
            let (f, t) = flush(&mut m, &mut cpus, ms, false);
            assert!(f.remote, "{ms} ms");
            assert!(t.is_empty(), "{ms} ms");
        }
        let (f, t) = flush(&mut m, &mut cpus, 1001, false);
        assert!(f.remote);
        assert_eq!(t, vec![VcpuIdx(1)]);
        assert!(!m.in_mask(A, VcpuIdx(1), &cpus[1]));
        assert_eq!(flush(&mut m, &mut cpus, 1002, false).0, Flush::default());
        // Back on A and away again: freed_tables clears it before the
        // next trim (due at 2001 ms).
        m.switch_mm(VcpuIdx(1), A);
        let (f, t) = flush(&mut m, &mut cpus, 1500, true);
        assert!(f.remote);
        assert_eq!(t, vec![VcpuIdx(1)]);
        assert_eq!(flush(&mut m, &mut cpus, 1600, true).0, Flush::default());
    }

    /// Lazy form, the CPU idle with the mm loaded: a freed_tables IPI
    /// switches it to init_mm and the bit stays, so the next flush is
    /// still remote (and a freed_tables one clears the bit).
    #[test]
    fn lazy_mask_keeps_the_bit_of_a_lazy_cpu_sent_to_init_mm() {
        let mut m = MmCpumasks::new(true, 2, 2);
        m.switch_mm(VcpuIdx(0), A);
        m.switch_mm(VcpuIdx(1), A);
        let mut cpus = [on(A), lazy(A)];
        assert!(flush(&mut m, &mut cpus, 10, false).1.is_empty());
        assert_eq!(flush(&mut m, &mut cpus, 20, true).1, vec![VcpuIdx(1)]);
        assert_eq!(cpus[1].loaded, None);
        let (f, t) = flush(&mut m, &mut cpus, 30, true);
        assert!(f.remote);
        assert_eq!(t, vec![VcpuIdx(1)]);
        assert!(!flush(&mut m, &mut cpus, 40, true).0.remote);
    }

    /// PV TLB flush drops a preempted target (deferred), which keeps its
    /// bit (its handler did not run); a new mm starts with an empty mask.
    #[test]
    fn pv_dropped_targets_are_deferred_and_a_new_mm_starts_empty() {
        let mut m = MmCpumasks::new(true, 2, 2);
        m.switch_mm(VcpuIdx(0), A);
        m.switch_mm(VcpuIdx(1), A);
        let mut cpus = [on(A), on(A)];
        cpus[1].pv_dropped = true;
        let (f, t) = flush(&mut m, &mut cpus, 10, true);
        assert_eq!((f.remote, f.deferred), (true, 1));
        assert!(t.is_empty());
        assert!(m.in_mask(A, VcpuIdx(1), &cpus[1]));
        m.new_mm(A, Time::ZERO + Nanos::from_ms(20));
        assert!(!flush(&mut m, &mut cpus, 30, true).0.remote);
    }
}
