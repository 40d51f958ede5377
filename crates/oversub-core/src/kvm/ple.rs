//! Pause-loop exiting (Intel PLE, AMD pause filter): the per-vCPU window
//! arithmetic of arch/x86/kvm/x86.h `__grow_ple_window` / `__shrink_ple_window`
//! (6.12.117), the module-parameter defaults of kvm_intel (vmx.c) and kvm_amd
//! (svm.c), and a model of when the hardware fires the exit for a guest
//! PAUSE loop.
//!
//! Hardware model (Intel SDM vol. 3, "PAUSE-loop exiting"; AMD APM vol. 2,
//! "Pause intercept filtering"), documented in docs/kvm-model.md:
//! * VMX: PAUSEs closer together than `ple_gap` TSC cycles form one loop; the
//!   exit fires at the first PAUSE whose distance from the loop's first PAUSE
//!   exceeds `ple_window` cycles. Only at CPL 0.
//! * SVM: a counter loaded with `pause_filter_count` is decremented by each
//!   PAUSE and reset when two PAUSEs are more than `pause_filter_thresh`
//!   cycles apart; the exit fires when it reaches zero.

use crate::engine::Nanos;

/// `KVM_DEFAULT_PLE_GAP` (x86.h).
pub const KVM_DEFAULT_PLE_GAP: u32 = 128;
/// `KVM_VMX_DEFAULT_PLE_WINDOW` (x86.h).
pub const KVM_VMX_DEFAULT_PLE_WINDOW: u32 = 4096;
/// `KVM_DEFAULT_PLE_WINDOW_GROW` (x86.h).
pub const KVM_DEFAULT_PLE_WINDOW_GROW: u32 = 2;
/// `KVM_DEFAULT_PLE_WINDOW_SHRINK` (x86.h): 0 means "reset to base".
pub const KVM_DEFAULT_PLE_WINDOW_SHRINK: u32 = 0;
/// `KVM_VMX_DEFAULT_PLE_WINDOW_MAX` (x86.h) = UINT_MAX.
pub const KVM_VMX_DEFAULT_PLE_WINDOW_MAX: u32 = u32::MAX;
/// `KVM_SVM_DEFAULT_PLE_WINDOW` (x86.h), the default `pause_filter_count`.
pub const KVM_SVM_DEFAULT_PLE_WINDOW: u32 = 3000;
/// `KVM_SVM_DEFAULT_PLE_WINDOW_MAX` (x86.h) = USHRT_MAX.
pub const KVM_SVM_DEFAULT_PLE_WINDOW_MAX: u32 = u16::MAX as u32;

/// `__grow_ple_window` (arch/x86/kvm/x86.h, 6.12.117): a modifier below 1
/// resets to `base`; a modifier below `base` multiplies, otherwise adds; the
/// result (computed in 64 bits, so no overflow) is capped at `max`.
pub fn __grow_ple_window(val: u32, base: u32, modifier: u32, max: u32) -> u32 {
    if modifier < 1 {
        return base;
    }
    let ret: u64 = if modifier < base {
        u64::from(val) * u64::from(modifier)
    } else {
        u64::from(val) + u64::from(modifier)
    };
    // min(ret, max) always fits in u32.
    u32::try_from(ret.min(u64::from(max))).unwrap_or(max)
}

/// `__shrink_ple_window` (arch/x86/kvm/x86.h, 6.12.117): a modifier below 1
/// resets to `base`; a modifier below `base` divides, otherwise subtracts;
/// the result is at least `min`. The subtraction is on `unsigned int` in C
/// and wraps if `val < modifier`; we reproduce the wrap (documented quirk,
/// unreachable with the defaults).
pub fn __shrink_ple_window(val: u32, base: u32, modifier: u32, min: u32) -> u32 {
    if modifier < 1 {
        return base;
    }
    let v = if modifier < base {
        val / modifier
    } else {
        val.wrapping_sub(modifier)
    };
    v.max(min)
}

/// Which hardware's pause-loop detection is modelled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PleKind {
    /// Intel VMX PLE: window and gap in TSC cycles.
    Vmx,
    /// AMD SVM pause filter: window is a PAUSE count, gap (`pause_filter_thresh`) in cycles.
    Svm,
}

/// Module parameters of the PLE machinery (`kvm_intel.ple_*` or
/// `kvm_amd.pause_filter_*`), all 0444 in 6.12.117.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PleParams {
    pub kind: PleKind,
    /// `ple_gap` / `pause_filter_thresh` (cycles). 0 disables PLE on VMX
    /// (`kvm_pause_in_guest` style); on SVM 0 disables the threshold check.
    pub gap: u32,
    /// `ple_window` / `pause_filter_count`: base window.
    pub window: u32,
    /// `ple_window_grow` / `pause_filter_count_grow`.
    pub grow: u32,
    /// `ple_window_shrink` / `pause_filter_count_shrink`.
    pub shrink: u32,
    /// `ple_window_max` / `pause_filter_count_max`.
    pub max: u32,
}

impl PleParams {
    /// kvm_intel defaults (vmx.c, 6.12.117).
    pub const fn vmx_default() -> PleParams {
        PleParams {
            kind: PleKind::Vmx,
            gap: KVM_DEFAULT_PLE_GAP,
            window: KVM_VMX_DEFAULT_PLE_WINDOW,
            grow: KVM_DEFAULT_PLE_WINDOW_GROW,
            shrink: KVM_DEFAULT_PLE_WINDOW_SHRINK,
            max: KVM_VMX_DEFAULT_PLE_WINDOW_MAX,
        }
    }

    /// kvm_amd defaults (svm.c, 6.12.117; all `ushort`).
    pub const fn svm_default() -> PleParams {
        PleParams {
            kind: PleKind::Svm,
            gap: KVM_DEFAULT_PLE_GAP,
            window: KVM_SVM_DEFAULT_PLE_WINDOW,
            grow: KVM_DEFAULT_PLE_WINDOW_GROW,
            shrink: KVM_DEFAULT_PLE_WINDOW_SHRINK,
            max: KVM_SVM_DEFAULT_PLE_WINDOW_MAX,
        }
    }

    /// `grow_ple_window` (vmx.c / svm.c), called from `handle_pause` /
    /// `pause_interception` on every PAUSE exit.
    pub fn grow_ple_window(&self, cur: u32) -> u32 {
        let v = __grow_ple_window(cur, self.window, self.grow, self.max);
        match self.kind {
            PleKind::Vmx => v,
            // control->pause_filter_count is a u16 VMCB field.
            PleKind::Svm => v & u32::from(u16::MAX),
        }
    }

    /// `shrink_ple_window` (vmx.c / svm.c), called from `vmx_vcpu_load` /
    /// `svm_vcpu_load` when the vCPU was `scheduled_out`. The floor is the
    /// base window.
    pub fn shrink_ple_window(&self, cur: u32) -> u32 {
        let v = __shrink_ple_window(cur, self.window, self.shrink, self.window);
        match self.kind {
            PleKind::Vmx => v,
            PleKind::Svm => v & u32::from(u16::MAX),
        }
    }
}

/// A guest PAUSE loop as the hardware sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PauseLoop {
    /// Number of PAUSE iterations the guest would execute before the lock
    /// becomes free (or it gives up, e.g. pv_wait).
    pub iterations: u64,
    /// TSC cycles between consecutive PAUSEs (PAUSE latency + loop body).
    pub cycles_per_iter: u64,
    /// Guest TSC frequency in kHz.
    pub tsc_khz: u64,
    /// The loop runs at CPL 0 (VMX PLE is ignored at CPL > 0).
    pub cpl0: bool,
}

/// Outcome of [`ple_fires`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PleOutcome {
    /// The loop ends (lock acquired) without an exit.
    NoExit,
    /// A PAUSE exit happens after `after` of guest time, at PAUSE number
    /// `at_iteration` (0-based).
    Exit { at_iteration: u64, after: Nanos },
}

/// Converts cycles to nanoseconds at `tsc_khz`, saturating; 0 kHz gives 0.
pub fn cycles_to_ns(cycles: u64, tsc_khz: u64) -> Nanos {
    if tsc_khz == 0 {
        return Nanos::ZERO;
    }
    let ns = u128::from(cycles) * 1_000_000 / u128::from(tsc_khz);
    Nanos(u64::try_from(ns).unwrap_or(u64::MAX))
}

/// Does a PAUSE loop cause a PAUSE exit with the current per-vCPU `window`,
/// and after how much guest time? See the module doc for the hardware model.
/// With `kvm_pause_in_guest` (PLE disabled) pass `enabled = false`.
pub fn ple_fires(p: &PleParams, window: u32, lp: &PauseLoop, enabled: bool) -> PleOutcome {
    if !enabled || lp.iterations == 0 || lp.cycles_per_iter == 0 {
        return PleOutcome::NoExit;
    }
    let at = match p.kind {
        PleKind::Vmx => {
            // VMX: gap 0 means PLE is off (vmx.c: `if (!ple_gap) ...` clears the control).
            if !lp.cpl0 || p.gap == 0 || lp.cycles_per_iter >= u64::from(p.gap) {
                return PleOutcome::NoExit;
            }
            // First PAUSE i with i * cpi > window.
            u64::from(window) / lp.cycles_per_iter + 1
        }
        PleKind::Svm => {
            if p.gap != 0 && lp.cycles_per_iter > u64::from(p.gap) {
                return PleOutcome::NoExit;
            }
            // The counter reaches zero on the window-th PAUSE; a count of 0
            // exits on the first PAUSE.
            u64::from(window).saturating_sub(1)
        }
    };
    if at >= lp.iterations {
        return PleOutcome::NoExit;
    }
    PleOutcome::Exit {
        at_iteration: at,
        after: cycles_to_ns(at.saturating_mul(lp.cycles_per_iter), lp.tsc_khz),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grow_multiplies_below_base_adds_otherwise_and_caps() {
        assert_eq!(__grow_ple_window(4096, 4096, 2, u32::MAX), 8192);
        assert_eq!(__grow_ple_window(4096, 4096, 5000, u32::MAX), 9096);
        assert_eq!(
            __grow_ple_window(3_000_000_000, 4096, 2, u32::MAX),
            u32::MAX
        );
        assert_eq!(__grow_ple_window(u32::MAX, 4096, 5000, u32::MAX), u32::MAX);
        assert_eq!(__grow_ple_window(40_000, 3000, 2, 65_535), 65_535);
        assert_eq!(__grow_ple_window(12_345, 4096, 0, u32::MAX), 4096);
    }

    #[test]
    fn shrink_divides_subtracts_floors_and_resets() {
        assert_eq!(__shrink_ple_window(65_536, 4096, 0, 4096), 4096);
        assert_eq!(__shrink_ple_window(65_536, 4096, 2, 4096), 32_768);
        assert_eq!(__shrink_ple_window(5000, 4096, 2, 4096), 4096);
        assert_eq!(__shrink_ple_window(20_000, 4096, 5000, 4096), 15_000);
        // C unsigned wrap when val < modifier (modifier >= base).
        assert_eq!(
            __shrink_ple_window(4096, 4096, 5000, 4096),
            4096u32.wrapping_sub(5000)
        );
    }

    #[test]
    fn default_params_grow_then_reset() {
        let p = PleParams::vmx_default();
        let mut w = p.window;
        for _ in 0..40 {
            w = p.grow_ple_window(w);
        }
        assert_eq!(w, u32::MAX);
        assert_eq!(p.shrink_ple_window(w), 4096);
        let s = PleParams::svm_default();
        let mut w = s.window;
        for _ in 0..10 {
            w = s.grow_ple_window(w);
        }
        assert_eq!(w, 65_535);
        assert_eq!(s.shrink_ple_window(w), 3000);
    }

    fn lp(iterations: u64, cpi: u64) -> PauseLoop {
        PauseLoop {
            iterations,
            cycles_per_iter: cpi,
            tsc_khz: 2_000_000,
            cpl0: true,
        }
    }

    #[test]
    fn vmx_exit_after_window() {
        let p = PleParams::vmx_default();
        // 40 cycles per iteration: exit at PAUSE 4096/40+1 = 103, 4120 cycles = 2060 ns at 2 GHz.
        assert_eq!(
            ple_fires(&p, 4096, &lp(1_000, 40), true),
            PleOutcome::Exit {
                at_iteration: 103,
                after: Nanos(2060)
            }
        );
        assert_eq!(ple_fires(&p, 4096, &lp(103, 40), true), PleOutcome::NoExit);
        assert_eq!(
            ple_fires(&p, 4096, &lp(1_000, 128), true),
            PleOutcome::NoExit
        );
        let mut user = lp(1_000_000, 40);
        user.cpl0 = false;
        assert_eq!(ple_fires(&p, 4096, &user, true), PleOutcome::NoExit);
        assert_eq!(
            ple_fires(&p, 4096, &lp(1_000_000, 40), false),
            PleOutcome::NoExit
        );
        // A grown window delays the exit.
        match ple_fires(&p, 8192, &lp(1_000, 40), true) {
            PleOutcome::Exit { at_iteration, .. } => assert_eq!(at_iteration, 205),
            o => panic!("{o:?}"),
        }
    }

    #[test]
    fn svm_exit_counts_pauses() {
        let p = PleParams::svm_default();
        assert_eq!(
            ple_fires(&p, 3000, &lp(10_000, 50), true),
            PleOutcome::Exit {
                at_iteration: 2999,
                after: Nanos(2999 * 25)
            }
        );
        assert_eq!(
            ple_fires(&p, 3000, &lp(10_000, 200), true),
            PleOutcome::NoExit
        );
    }

    #[test]
    fn cycles_to_ns_handles_zero_and_large() {
        assert_eq!(cycles_to_ns(1000, 0), Nanos::ZERO);
        assert_eq!(cycles_to_ns(u64::MAX, 1), Nanos(u64::MAX));
        assert_eq!(cycles_to_ns(3_000, 3_000_000), Nanos(1000));
    }
}
