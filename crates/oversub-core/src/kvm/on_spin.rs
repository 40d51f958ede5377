//! The directed-yield decision `kvm_vcpu_on_spin` (virt/kvm/kvm_main.c) as a
//! pure procedure over the VM's vCPU states and a `yield_to` callback that
//! stands for the host scheduler (`kvm_vcpu_yield_to` -> `yield_to(task, 1)`:
//! > 0 boosted, 0 failed, < 0 `-ESRCH`).
//!
//! Three forms, selected by [`OnSpinVariant`]:
//! * `V612TwoPass`: 6.12.117 (kvm_main.c:4059), two passes over
//!   `kvm_for_each_vcpu` around `last_boosted_vcpu`;
//! * `V613SingleLoop`: 6.13+ single loop (commit 7e513617da71) with the
//!   `last_boosted_vcpu = i` (loop offset) bug, or the `= idx` fix (6.19-rc1);
//! * `IpiAware`: the seed series' candidate selection (v1 patches 9/10 and
//!   10/10, semantics.md 2.4/2.5) on top of the 6.12 two-pass loop;
//! * `Historic(HistoricForm)`: the two-pass loop with the candidate filters
//!   of an earlier upstream kernel (2012 .. 2019, see [`HistoricForm`]);
//!   6.12's own filter is the last step of that line.

use super::vcpu::VcpuState;
use super::VcpuIdx;
use crate::sched::core::YieldTo;

/// `ESRCH` (errno 3): `yield_to` returns `-ESRCH` when both runqueues have
/// one task.
pub const ESRCH: i32 = 3;

/// The int `yield_to()` returns to `kvm_vcpu_yield_to()`: 1 when it
/// yielded, 0 when refused, `-ESRCH`. The model's `YieldTo` becomes a
/// number only here, at KVM's boundary.
pub fn yield_to_ret(r: YieldTo) -> i32 {
    match r {
        YieldTo::Yielded(_) => 1,
        YieldTo::Refused => 0,
        YieldTo::Esrch => -ESRCH,
    }
}

/// How the IPI-aware strict round orders its candidates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IpiOrder {
    /// As the v1/v2 patch code does it: `kvm_vcpu_is_good_yield_candidate`
    /// is an OR of the three priorities used as a filter inside the ordinary
    /// round-robin scan (verified patch text).
    FilterInScanOrder,
    /// The confirmed IPI receiver is tried before the round-robin scan (the
    /// "priority 1 first" reading); it is not retried in the scan.
    ReceiverFirst,
}

/// Which `kvm_vcpu_on_spin` is modelled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnSpinVariant {
    /// Linux 6.12.117.
    V612TwoPass,
    /// Linux 6.13..6.18 (`fixed_index = false`) or 6.19+ (`true`).
    V613SingleLoop { fixed_index: bool },
    /// docs/design.md section 2 (`ipi_hint`): the receiver that still owes
    /// the sender's IPI (passed as `receiver`) is tried first through
    /// upstream's own filter; then 6.12.117's two-pass loop, unchanged.
    IpiHint,
    /// An earlier upstream form of the two-pass loop (see [`HistoricForm`]).
    Historic(HistoricForm),
    /// The seed series' candidate selection on top of `base`'s loop.
    IpiAware {
        enable_relaxed_boost: bool,
        order: IpiOrder,
        base: IpiBase,
    },
}

/// The upstream forms of `kvm_vcpu_on_spin()`'s two-pass loop before
/// 6.12, each named after the commit that made it (virt/kvm/kvm_main.c of
/// that era; docs/kvm-model.md section 3b). Each form is the previous one plus
/// its commit; the next step after the last one is 6.12's filter
/// ([`OnSpinVariant::V612TwoPass`], which adds 52acd22faa1a "KVM: Boost vCPU
/// candidate in user mode which is delivering interrupt", 2021).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum HistoricForm {
    /// 2011, Linux 3.0-3.5: 217ece6129f2 "KVM: use yield_to instead of sleep
    /// in kvm_vcpu_on_spin" (Rik van Riel), the form the 2012 rework replaced:
    /// the same two passes, but pass 0 skips with `i < last_boosted_vcpu`
    /// (2012: `<=`). Both set `i = last_boosted_vcpu` and `continue`, and
    /// `kvm_for_each_vcpu`'s `idx++` then moves past it, so the two differ
    /// only when `last_boosted_vcpu == 0`: 2011's pass 0 visits vCPU 0 (and
    /// pass 1 visits it again), 2012's does not. No `in_spin_loop` /
    /// `dy_eligible`; halted vCPUs and vCPUs running the guest (`PF_VCPU`)
    /// skipped; `yield_to(task, 1)` as a bool, no budget. (The 3.0 loop as
    /// quoted in kernel trees of that era, found with the search tool's
    /// `find_string`; the id from the Fixes: tag of
    /// <https://lore.kernel.org/r/20240510092353.2261824-1-leitao@debian.org>.)
    Y2011YieldTo,
    /// 2012, Linux 3.6: 4c088493c8d0 "KVM: Note down when cpu relax
    /// intercepted or pause loop exited" (the id git blame gives for the
    /// `spin_loop` fields it adds) + "KVM: Choose better candidate for
    /// directed yield" (Raghavendra K T; `in_spin_loop` / `dy_eligible`;
    /// the second commit's id is not verified: the search tool finds only
    /// its LKML postings, lkml.iu.edu/hypermail/linux/kernel/1207.1/02687.html). Candidates: any
    /// other vCPU that is not halted (`waitqueue_active(&vcpu->wq)`, whatever
    /// is pending) and not running in guest mode (`task->flags & PF_VCPU` in
    /// `kvm_vcpu_yield_to`), then the `dy_eligible` check. `yield_to()`
    /// returned a bool: no `try` budget, every candidate is tried until one
    /// is boosted (a host -ESRCH counts as a plain failure).
    Y2012DyEligible,
    /// 2013, Linux 3.9: "kvm: Handle yield_to failure return code for
    /// potential undercommit case" (Raghavendra K T; its id is not verified:
    /// the search tool finds neither the commit nor its posting), with the
    /// scheduler's -ESRCH when both runqueues have one task: the loop has
    /// `try = 3`, decremented on `yielded < 0`, but `kvm_vcpu_yield_to()`
    /// still returned `bool` (`bool ret = yield_to(task, 1)` in the 3.10-era
    /// kvm_main.c found with `find_string`), so -ESRCH arrived as true: the
    /// loop takes it for a boost (`last_boosted_vcpu = i`, both loops end)
    /// and the budget is never used. The undercommit exit is therefore the
    /// first -ESRCH, not the third ([`HistoricForm::kvm_vcpu_yield_to_is_bool`]).
    Y2013TryBudget,
    /// 2014: only `vcpu->preempted` vCPUs (scheduled out while runnable, set
    /// by the `kvm_sched_out` preempt notifier; 3a08a8f9f093, Raghavendra K T,
    /// 2013-03-04, the id git blame gives for `bool preempted`; the filter
    /// itself is its series' "kvm: Iterate over only vcpus that are
    /// preempted", id not found) are candidates, and a halted vCPU is skipped
    /// only if `!kvm_arch_vcpu_runnable` (98f4a1467612 "KVM: add
    /// kvm_arch_vcpu_runnable() test to kvm_vcpu_on_spin() loop"): a kicked
    /// or interrupted halted vCPU may be boosted. `kvm_vcpu_yield_to()`
    /// returns `int` here, so the `try` budget works: assumed, not verified
    /// (the 3.10-era text has `bool`, a 4.1-era one `int`; the change between
    /// was not found).
    Y2014Preempted,
    /// 2017, Linux 4.14: 199b5763d329 "KVM: add spinlock optimization framework"
    /// (`yield_to_kernel_mode`): a candidate not in guest kernel mode
    /// (`kvm_arch_vcpu_in_kernel`, the CPL cached at sched-out) is skipped.
    Y2017KernelMode,
    /// 2019, Linux 5.3: d73eb57b80b9 "KVM: Boost vCPUs that are delivering
    /// interrupts": `vcpu->ready` replaces `vcpu->preempted` as the first
    /// filter, so a vCPU woken from halt (by an IPI or a PV kick) and not yet
    /// running is a candidate; with 17e433b54393 ("KVM: Fix leak vCPU's VMCS
    /// value into other pCPU") the halted test is `kvm_vcpu_dy_runnable`. The
    /// kernel-mode filter still applies to every candidate and reads the CPL
    /// cached at the vCPU's last preemption (stale for a woken vCPU).
    Y2019Ready,
    /// 2019, Linux 5.3: 046ddeed0461 "KVM: Check preempted_in_kernel for involuntary
    /// preemption": the kernel-mode filter applies only to `preempted`
    /// vCPUs; a woken vCPU always passes it.
    Y2019PreemptedInKernel,
}

impl HistoricForm {
    /// Every form, oldest first.
    pub const ALL: [HistoricForm; 7] = [
        HistoricForm::Y2011YieldTo,
        HistoricForm::Y2012DyEligible,
        HistoricForm::Y2013TryBudget,
        HistoricForm::Y2014Preempted,
        HistoricForm::Y2017KernelMode,
        HistoricForm::Y2019Ready,
        HistoricForm::Y2019PreemptedInKernel,
    ];

    /// The `kvm.on_spin` name.
    pub fn name(self) -> &'static str {
        match self {
            HistoricForm::Y2011YieldTo => "2011-yield-to",
            HistoricForm::Y2012DyEligible => "2012-dy-eligible",
            HistoricForm::Y2013TryBudget => "2013-try-budget",
            HistoricForm::Y2014Preempted => "2014-preempted",
            HistoricForm::Y2017KernelMode => "2017-kernel-mode",
            HistoricForm::Y2019Ready => "2019-ready",
            HistoricForm::Y2019PreemptedInKernel => "2019-preempted-in-kernel",
        }
    }

    /// The form named `name`, if any.
    pub fn from_name(name: &str) -> Option<HistoricForm> {
        HistoricForm::ALL.into_iter().find(|f| f.name() == name)
    }

    /// Whether `kvm_vcpu_yield_to`'s negative result is counted against a
    /// `try` budget of 3 (from 2013 on).
    fn has_try_budget(self) -> bool {
        self >= HistoricForm::Y2013TryBudget
    }

    /// Whether the form has `kvm_vcpu_eligible_for_directed_yield` (2012 on).
    fn has_dy_eligible(self) -> bool {
        self >= HistoricForm::Y2012DyEligible
    }

    /// Whether `kvm_vcpu_yield_to()` returned `bool` while the scheduler's
    /// `yield_to()` could return -ESRCH (2013, see
    /// [`HistoricForm::Y2013TryBudget`]): the -ESRCH converts to true and
    /// `kvm_vcpu_on_spin()` takes it for a boost.
    pub fn kvm_vcpu_yield_to_is_bool(self) -> bool {
        self == HistoricForm::Y2013TryBudget
    }

    /// The form's filter for one candidate `v` (already known not to be
    /// `me`), before `kvm_vcpu_eligible_for_directed_yield`. `None`: skip.
    /// `Some((tier, true))`: the candidate runs the guest right now, which
    /// 2012/2013's `kvm_vcpu_yield_to` refuses (`PF_VCPU`) after the
    /// eligibility check, without calling the scheduler.
    fn filter(self, v: &VcpuState, ytkm: bool) -> Option<(Tier, bool)> {
        use HistoricForm as H;
        match self {
            H::Y2011YieldTo | H::Y2012DyEligible | H::Y2013TryBudget => {
                // waitqueue_active: halted and not yet woken, whatever is
                // pending (kvm_vcpu_block's DEFINE_WAIT entry is removed by
                // the wakeup, so a woken vCPU is no longer on the queue).
                if v.blocking && !v.ready {
                    return None;
                }
            }
            H::Y2014Preempted | H::Y2017KernelMode => {
                if !v.preempted {
                    return None;
                }
                if v.blocking && !v.vcpu_dy_runnable() {
                    return None;
                }
            }
            H::Y2019Ready | H::Y2019PreemptedInKernel => {
                if !v.ready {
                    return None;
                }
                if v.blocking && !v.vcpu_dy_runnable() {
                    return None;
                }
            }
        }
        let in_kernel = v.preempted_in_kernel;
        let kernel_filter = match self {
            H::Y2011YieldTo | H::Y2012DyEligible | H::Y2013TryBudget | H::Y2014Preempted => false,
            H::Y2017KernelMode | H::Y2019Ready => ytkm,
            H::Y2019PreemptedInKernel => ytkm && v.preempted,
        };
        if kernel_filter && !in_kernel {
            return None;
        }
        // PF_VCPU: on a CPU, running the guest (neither preempted nor woken).
        let pf_vcpu = !v.preempted && !v.ready;
        let tier = if !v.preempted {
            Tier::ReadyNotPreempted
        } else {
            Tier::Preempted
        };
        Some((tier, pf_vcpu))
    }
}

/// The loop the IPI-aware selection is applied to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IpiBase {
    /// 6.12.117's two-pass loop (this project's base kernel).
    V612TwoPass,
    /// The single loop with the `= idx` fix, which the series patches
    /// (upstream 6.18/6.19). There the shared `try` can go negative in the
    /// relaxed round (`!--try` never true again), so an exhausted budget no
    /// longer limits -ESRCH attempts.
    V613SingleLoopFixed,
}

/// Why a candidate passed the filter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tier {
    /// Series P1: `kvm_vcpu_is_ipi_receiver(me, vcpu)`.
    IpiReceiver,
    /// Series P2 / upstream exemption: `kvm_arch_dy_has_pending_interrupt`.
    PendingInterrupt,
    /// Preempted (in kernel mode when that was asked).
    Preempted,
    /// Upstream only: `ready` but not `preempted` (e.g. woken from halt).
    ReadyNotPreempted,
    /// Series relaxed round: any preempted vCPU.
    Relaxed,
}

/// Which round of the IPI-aware form (upstream forms use `Strict` only).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Round {
    Strict,
    Relaxed,
}

/// One `kvm_vcpu_yield_to` call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Attempt {
    pub target: VcpuIdx,
    pub tier: Tier,
    pub round: Round,
    pub result: i32,
}

/// What one `kvm_vcpu_on_spin` call did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OnSpinDecision {
    /// The vCPU that was boosted (yield_to > 0), if any. None also when
    /// 2013's `bool kvm_vcpu_yield_to()` turned a -ESRCH into `yielded = 1`.
    pub target: Option<VcpuIdx>,
    pub tier: Option<Tier>,
    pub round: Option<Round>,
    /// Every yield attempt, in order.
    pub attempts: Vec<Attempt>,
    /// The final `yielded` value, as KVM saw it.
    pub yielded: i32,
    /// Remaining `try` budget (starts at 3).
    pub tries_left: i32,
}

/// Per-VM state read and written by `kvm_vcpu_on_spin`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SpinVm {
    /// `kvm->last_boosted_vcpu` (zero-initialised with the VM).
    pub last_boosted_vcpu: i64,
}

/// Upstream filter 4 (6.12.117 kvm_main.c:4098): reject a preempted vCPU in
/// user mode when `yield_to_kernel_mode`, unless it has a pending interrupt.
fn upstream_filter(v: &VcpuState, ytkm: bool) -> Option<Tier> {
    let pi = v.kvm_arch_dy_has_pending_interrupt();
    let pik = v.kvm_arch_vcpu_preempted_in_kernel();
    if v.preempted && ytkm && !pi && !pik {
        return None;
    }
    Some(if !v.preempted {
        Tier::ReadyNotPreempted
    } else if ytkm && !pik {
        Tier::PendingInterrupt
    } else {
        Tier::Preempted
    })
}

/// The series' `kvm_vcpu_is_good_yield_candidate` (v1 9/10).
fn good_yield_candidate(v: &VcpuState, is_receiver: bool, ytkm: bool) -> Option<Tier> {
    if is_receiver {
        return Some(Tier::IpiReceiver);
    }
    if v.kvm_arch_dy_has_pending_interrupt() {
        return Some(Tier::PendingInterrupt);
    }
    if !v.preempted {
        return None;
    }
    if ytkm && !v.kvm_arch_vcpu_preempted_in_kernel() {
        return None;
    }
    Some(Tier::Preempted)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Filter {
    Upstream,
    /// Upstream's filter for the hinted receiver (tier `IpiReceiver`).
    HintUpstream,
    Strict,
    Relaxed,
    Historic(HistoricForm),
}

struct Ctx<'a, F: FnMut(VcpuIdx) -> i32> {
    vcpus: &'a mut [VcpuState],
    me: usize,
    ytkm: bool,
    receiver: Option<VcpuIdx>,
    skip_receiver: bool,
    yield_to: F,
    tries: i32,
    attempts: Vec<Attempt>,
    /// 2013's `bool kvm_vcpu_yield_to()`: the vCPU whose -ESRCH the loop
    /// took for a boost.
    esrch_as_boost: Option<VcpuIdx>,
}

impl<F: FnMut(VcpuIdx) -> i32> Ctx<'_, F> {
    /// The per-vCPU body of the loop. Returns `Some(yielded)` if
    /// `kvm_vcpu_yield_to` was called.
    fn candidate(&mut self, idx: usize, filter: Filter, round: Round) -> Option<i32> {
        let v = self.vcpus.get(idx)?;
        if let Filter::Historic(form) = filter {
            // Each form has its own first filters (`preempted`, `ready`, or
            // neither) and halted test.
            if idx == self.me {
                return None;
            }
            let (tier, pf_vcpu) = form.filter(v, self.ytkm)?;
            if !form.has_dy_eligible() {
                if pf_vcpu {
                    return Some(0);
                }
                return self.call_yield_to(idx, tier, round);
            }
            if pf_vcpu {
                // kvm_vcpu_eligible_for_directed_yield runs (and toggles
                // dy_eligible), then kvm_vcpu_yield_to refuses a running
                // vCPU: no scheduler call, a plain failure.
                let eligible = self
                    .vcpus
                    .get_mut(idx)?
                    .kvm_vcpu_eligible_for_directed_yield();
                return eligible.then_some(0);
            }
            return self.attempt(idx, tier, round);
        }
        if !v.ready || idx == self.me {
            return None;
        }
        if v.blocking && !v.vcpu_dy_runnable() {
            return None;
        }
        let is_rcv = self.receiver == Some(v.idx);
        if is_rcv && self.skip_receiver {
            return None;
        }
        let tier = match filter {
            Filter::Upstream => upstream_filter(v, self.ytkm)?,
            Filter::HintUpstream => {
                upstream_filter(v, self.ytkm)?;
                Tier::IpiReceiver
            }
            Filter::Strict => good_yield_candidate(v, is_rcv, self.ytkm)?,
            Filter::Relaxed => {
                if !v.preempted {
                    return None;
                }
                Tier::Relaxed
            }
            Filter::Historic(_) => return None,
        };
        self.attempt(idx, tier, round)
    }

    /// `kvm_vcpu_eligible_for_directed_yield`, then `kvm_vcpu_yield_to`.
    fn attempt(&mut self, idx: usize, tier: Tier, round: Round) -> Option<i32> {
        if !self
            .vcpus
            .get_mut(idx)?
            .kvm_vcpu_eligible_for_directed_yield()
        {
            return None;
        }
        self.call_yield_to(idx, tier, round)
    }

    /// `kvm_vcpu_yield_to`: the scheduler's `yield_to`, recorded.
    fn call_yield_to(&mut self, idx: usize, tier: Tier, round: Round) -> Option<i32> {
        let target = self.vcpus.get(idx)?.idx;
        let result = (self.yield_to)(target);
        self.attempts.push(Attempt {
            target,
            tier,
            round,
            result,
        });
        Some(result)
    }

    /// The 6.12.117 two-pass loop (kvm_main.c:4078-4115), with `yielded`
    /// as its running value. Returns the final `yielded`.
    fn two_pass(&mut self, last: i64, filter: Filter, round: Round, mut yielded: i32) -> i32 {
        let n = self.vcpus.len();
        let budget = match filter {
            Filter::Historic(form) => form.has_try_budget(),
            _ => true,
        };
        let bool_ret = matches!(filter, Filter::Historic(form) if form.kvm_vcpu_yield_to_is_bool());
        // 2011 skips `i < last` in pass 0, 2012 on `i <= last`; after the
        // skip `i = last; continue` steps past `last` in both, so only a
        // `last` of 0 is visited in 2011's pass 0.
        let visit_zero = filter == Filter::Historic(HistoricForm::Y2011YieldTo) && last == 0;
        let mut pass = 0;
        while pass < 2 && yielded == 0 && self.tries != 0 {
            for i in 0..n {
                let ii = i as i64;
                if pass == 0 && ii <= last && !visit_zero {
                    continue;
                } else if pass == 1 && ii > last {
                    break;
                }
                if let Some(y) = self.candidate(i, filter, round) {
                    if !budget {
                        // 2012: `if (kvm_vcpu_yield_to(vcpu))` on a bool;
                        // a failure of any kind moves on.
                        if y > 0 {
                            return y;
                        }
                        continue;
                    }
                    if bool_ret && y < 0 {
                        // 2013: `(bool)-ESRCH` is true: "boosted".
                        self.esrch_as_boost = self.vcpus.get(i).map(|v| v.idx);
                        return 1;
                    }
                    yielded = y;
                    if y > 0 {
                        return y;
                    } else if y < 0 {
                        self.tries -= 1;
                        if self.tries == 0 {
                            break;
                        }
                    }
                }
            }
            pass += 1;
        }
        yielded
    }

    /// The 6.13+ single loop body (kvm_main.c since 7e513617da71). Returns
    /// the final `yielded` and, on success, `(i, idx)`.
    fn single_loop(
        &mut self,
        last: i64,
        filter: Filter,
        round: Round,
    ) -> (i32, Option<(usize, usize)>) {
        let n = self.vcpus.len();
        let mut yielded = 0;
        let start = last.saturating_add(1);
        for i in 0..n {
            let idx = start.saturating_add(i as i64).rem_euclid(n as i64) as usize;
            if idx == self.me {
                continue;
            }
            if let Some(y) = self.candidate(idx, filter, round) {
                yielded = y;
                if y > 0 {
                    return (y, Some((i, idx)));
                } else if y < 0 {
                    // `!--try`: stops only when it hits exactly 0.
                    self.tries -= 1;
                    if self.tries == 0 {
                        break;
                    }
                }
            }
        }
        (yielded, None)
    }
}

/// `kvm_vcpu_on_spin(me, yield_to_kernel_mode)`: see the module doc.
///
/// * `vcpus`: the VM's vCPUs in `vcpu_idx` order (`vcpus[i].idx == i`);
///   `dy_eligible` / `in_spin_loop` are updated as the kernel does.
/// * `receiver`: for the IPI-aware form, the vCPU `v` for which
///   `kvm_vcpu_is_ipi_receiver(me, v)` holds now (see `lapic`), if any.
/// * `yield_to`: the host scheduler's `yield_to` result for that vCPU's task.
///
/// An out-of-range `me` makes no attempt.
pub fn kvm_vcpu_on_spin<F: FnMut(VcpuIdx) -> i32>(
    vm: &mut SpinVm,
    vcpus: &mut [VcpuState],
    me: VcpuIdx,
    yield_to_kernel_mode: bool,
    variant: OnSpinVariant,
    receiver: Option<VcpuIdx>,
    yield_to: F,
) -> OnSpinDecision {
    let call = OnSpinCall {
        me,
        yield_to_kernel_mode,
        variant,
        receiver,
    };
    kvm_vcpu_on_spin_into(Vec::new(), vm, vcpus, call, yield_to)
}

/// The arguments of `kvm_vcpu_on_spin()` other than the VM, its vCPUs and
/// the scheduler's `yield_to`.
#[derive(Clone, Copy, Debug)]
pub struct OnSpinCall {
    pub me: VcpuIdx,
    pub yield_to_kernel_mode: bool,
    pub variant: OnSpinVariant,
    pub receiver: Option<VcpuIdx>,
}

/// [`kvm_vcpu_on_spin`] recording its attempts into `attempts` (cleared
/// first; returned in the decision), so a caller that keeps the buffer
/// allocates nothing per PAUSE exit.
pub fn kvm_vcpu_on_spin_into<F: FnMut(VcpuIdx) -> i32>(
    mut attempts: Vec<Attempt>,
    vm: &mut SpinVm,
    vcpus: &mut [VcpuState],
    call: OnSpinCall,
    yield_to: F,
) -> OnSpinDecision {
    let OnSpinCall {
        me,
        yield_to_kernel_mode,
        variant,
        receiver,
    } = call;
    attempts.clear();
    let me_i = me.idx();
    let n = vcpus.len();
    if me_i >= n {
        return OnSpinDecision {
            target: None,
            tier: None,
            round: None,
            attempts,
            yielded: 0,
            tries_left: 3,
        };
    }
    let mut ctx = Ctx {
        vcpus,
        me: me_i,
        ytkm: yield_to_kernel_mode,
        receiver,
        skip_receiver: false,
        yield_to,
        tries: 3,
        attempts,
        esrch_as_boost: None,
    };
    let mut yielded = 0;
    match variant {
        OnSpinVariant::V613SingleLoop { fixed_index } => {
            if n >= 2 {
                ctx.vcpus[me_i].in_spin_loop = true;
                let (y, hit) =
                    ctx.single_loop(vm.last_boosted_vcpu, Filter::Upstream, Round::Strict);
                yielded = y;
                if let Some((i, idx)) = hit {
                    vm.last_boosted_vcpu = if fixed_index { idx as i64 } else { i as i64 };
                }
            }
        }
        OnSpinVariant::V612TwoPass => {
            ctx.vcpus[me_i].in_spin_loop = true;
            let last = vm.last_boosted_vcpu;
            yielded = ctx.two_pass(last, Filter::Upstream, Round::Strict, 0);
        }
        OnSpinVariant::Historic(form) => {
            // kvm_vcpu_set_in_spin_loop() came with dy_eligible (2012).
            ctx.vcpus[me_i].in_spin_loop = form.has_dy_eligible();
            let last = vm.last_boosted_vcpu;
            yielded = ctx.two_pass(last, Filter::Historic(form), Round::Strict, 0);
        }
        OnSpinVariant::IpiHint => {
            ctx.vcpus[me_i].in_spin_loop = true;
            if let Some(r) = receiver {
                if let Some(y) = ctx.candidate(r.idx(), Filter::HintUpstream, Round::Strict) {
                    yielded = y;
                    if y < 0 {
                        ctx.tries -= 1;
                    }
                }
            }
            if yielded <= 0 {
                let last = vm.last_boosted_vcpu;
                yielded = ctx.two_pass(last, Filter::Upstream, Round::Strict, 0);
            }
        }
        OnSpinVariant::IpiAware {
            enable_relaxed_boost,
            order,
            base,
        } => {
            let single = base == IpiBase::V613SingleLoopFixed;
            if !single || n >= 2 {
                ctx.vcpus[me_i].in_spin_loop = true;
                let last = vm.last_boosted_vcpu;
                let scan = |ctx: &mut Ctx<'_, F>, filter, round| {
                    if single {
                        ctx.single_loop(last, filter, round).0
                    } else {
                        ctx.two_pass(last, filter, round, 0)
                    }
                };
                if order == IpiOrder::ReceiverFirst {
                    if let Some(r) = receiver {
                        if let Some(y) = ctx.candidate(r.idx(), Filter::Strict, Round::Strict) {
                            yielded = y;
                            if y < 0 {
                                ctx.tries -= 1;
                            }
                        }
                        ctx.skip_receiver = true;
                    }
                }
                if yielded <= 0 {
                    // A failed receiver-first attempt does not stop the scan.
                    yielded = scan(&mut ctx, Filter::Strict, Round::Strict);
                }
                ctx.skip_receiver = false;
                if enable_relaxed_boost && yielded <= 0 {
                    yielded = scan(&mut ctx, Filter::Relaxed, Round::Relaxed);
                }
            }
        }
    }
    let winner = if yielded > 0 {
        ctx.attempts.last().copied().filter(|a| a.result > 0)
    } else {
        None
    };
    if let (
        Some(w),
        OnSpinVariant::V612TwoPass
        | OnSpinVariant::Historic(_)
        | OnSpinVariant::IpiAware { .. }
        | OnSpinVariant::IpiHint,
    ) = (winner, variant)
    {
        // 6.12: `last_boosted_vcpu = i`, and i is the vCPU index there; the
        // series' single loop stores `idx` (fixed).
        vm.last_boosted_vcpu = i64::from(w.target.0);
    }
    if let Some(t) = ctx.esrch_as_boost {
        // 2013: `kvm->last_boosted_vcpu = i` for the -ESRCH read as true.
        vm.last_boosted_vcpu = i64::from(t.0);
    }
    if let Some(m) = ctx.vcpus.get_mut(me_i) {
        m.in_spin_loop = false;
        m.dy_eligible = false;
    }
    OnSpinDecision {
        target: winner.map(|a| a.target),
        tier: winner.map(|a| a.tier),
        round: winner.map(|a| a.round),
        attempts: ctx.attempts,
        yielded,
        tries_left: ctx.tries,
    }
}

#[cfg(test)]
mod tests;
