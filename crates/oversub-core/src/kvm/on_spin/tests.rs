//! Unit tests of kvm_vcpu_on_spin and its historic forms (on_spin.rs).

use super::*;
use crate::kvm::vcpu::Cpl;
use crate::sched::TaskId;

/// `n` vCPUs, all preempted in guest kernel mode (ready).
fn vm(n: u32) -> Vec<VcpuState> {
    (0..n)
        .map(|i| {
            let mut v = VcpuState::new(VcpuIdx(i), Some(TaskId(i)));
            v.kvm_sched_out(true, false);
            v
        })
        .collect()
}

fn run(
    svm: &mut SpinVm,
    v: &mut [VcpuState],
    me: u32,
    variant: OnSpinVariant,
    receiver: Option<VcpuIdx>,
    res: impl FnMut(VcpuIdx) -> i32,
) -> OnSpinDecision {
    kvm_vcpu_on_spin(svm, v, VcpuIdx(me), true, variant, receiver, res)
}

fn targets(d: &OnSpinDecision) -> Vec<u32> {
    d.attempts.iter().map(|a| a.target.0).collect()
}

const V612: OnSpinVariant = OnSpinVariant::V612TwoPass;

#[test]
fn round_robin_starts_after_last_boosted_and_skips_me() {
    let mut v = vm(4);
    let mut s = SpinVm {
        last_boosted_vcpu: 1,
    };
    let d = run(&mut s, &mut v, 3, V612, None, |_| 0);
    // pass 0: 2 (3 = me); pass 1: 0, 1.
    assert_eq!(targets(&d), vec![2, 0, 1]);
    assert_eq!(d.target, None);
    let d = run(&mut s, &mut v, 3, V612, None, |t| i32::from(t.0 == 0));
    assert_eq!(d.target, Some(VcpuIdx(0)));
    assert_eq!(s.last_boosted_vcpu, 0);
    let d = run(&mut s, &mut v, 3, V612, None, |_| 1);
    assert_eq!(d.target, Some(VcpuIdx(1)));
}

#[test]
fn not_ready_and_blocking_not_runnable_are_skipped() {
    let mut v = vm(4);
    v[1].kvm_sched_in(); // running: not ready
    v[2].blocking = true; // halted, nothing pending
    v[3].blocking = true;
    v[3].pv_unhalted = true; // kicked: dy-runnable
    let mut s = SpinVm::default();
    let d = run(&mut s, &mut v, 0, V612, None, |_| 0);
    assert_eq!(targets(&d), vec![3]);
}

#[test]
fn preempted_in_user_rejected_unless_pending_interrupt() {
    let mut v = vm(3);
    v[1].cpl = Cpl::User;
    v[1].kvm_sched_out(true, false);
    v[2].cpl = Cpl::User;
    v[2].kvm_sched_out(true, false);
    v[2].apicv_active = true;
    v[2].pi_pending = true;
    let mut s = SpinVm::default();
    let d = run(&mut s, &mut v, 0, V612, None, |_| 0);
    assert_eq!(targets(&d), vec![2]);
    assert_eq!(d.attempts[0].tier, Tier::PendingInterrupt);
    // Without yield_to_kernel_mode the user-mode vCPU is a candidate.
    let d = kvm_vcpu_on_spin(&mut s, &mut v, VcpuIdx(0), false, V612, None, |_| 0);
    assert_eq!(targets(&d), vec![1, 2]);
}

#[test]
fn ready_not_preempted_passes_upstream_but_not_series_strict() {
    let mut v = vm(2);
    v[1].kvm_sched_in();
    v[1].kvm_vcpu_block();
    v[1].kvm_vcpu_wake_up();
    v[1].pending_request = true; // KVM_REQ_EVENT from the wakeup
    let mut s = SpinVm::default();
    let d = run(&mut s, &mut v, 0, V612, None, |_| 1);
    assert_eq!(d.tier, Some(Tier::ReadyNotPreempted));
    let strict_only = OnSpinVariant::IpiAware {
        enable_relaxed_boost: false,
        order: IpiOrder::FilterInScanOrder,
        base: IpiBase::V612TwoPass,
    };
    let d = run(&mut s, &mut v, 0, strict_only, None, |_| 1);
    assert!(d.attempts.is_empty());
    // ... unless it is the confirmed IPI receiver.
    let d = run(&mut s, &mut v, 0, strict_only, Some(VcpuIdx(1)), |_| 1);
    assert_eq!(d.tier, Some(Tier::IpiReceiver));
}

#[test]
fn dy_eligible_alternates_for_spinning_candidates() {
    let mut v = vm(2);
    v[1].in_spin_loop = true;
    v[1].dy_eligible = false;
    let mut s = SpinVm::default();
    let d1 = run(&mut s, &mut v, 0, V612, None, |_| 1);
    assert!(d1.attempts.is_empty(), "first check: not eligible, toggled");
    let d2 = run(&mut s, &mut v, 0, V612, None, |_| 1);
    assert_eq!(d2.target, Some(VcpuIdx(1)));
    // me leaves the spin loop not eligible.
    assert!(!v[0].in_spin_loop && !v[0].dy_eligible);
}

#[test]
fn three_esrch_exhaust_the_budget() {
    let mut v = vm(6);
    let mut s = SpinVm::default();
    let d = run(&mut s, &mut v, 0, V612, None, |_| -ESRCH);
    assert_eq!(targets(&d), vec![1, 2, 3]);
    assert_eq!(d.tries_left, 0);
    // Failures (0) do not consume the budget.
    let d = run(&mut s, &mut v, 0, V612, None, |t| {
        if t.0 % 2 == 1 {
            0
        } else {
            -ESRCH
        }
    });
    assert_eq!(targets(&d), vec![1, 2, 3, 4, 5]);
    assert_eq!(d.tries_left, 1);
}

#[test]
fn v612_second_pass_skipped_when_last_attempt_was_esrch() {
    // yielded keeps the last result: a trailing -ESRCH in pass 0 ends the
    // outer loop (`!yielded`) even with budget left.
    let mut v = vm(4);
    let mut s = SpinVm {
        last_boosted_vcpu: 2,
    };
    let d = run(&mut s, &mut v, 1, V612, None, |_| -ESRCH);
    assert_eq!(targets(&d), vec![3]);
    assert_eq!(d.tries_left, 2);
    // The single loop of 6.13 goes on.
    let d = run(
        &mut s,
        &mut v,
        1,
        OnSpinVariant::V613SingleLoop { fixed_index: true },
        None,
        |_| -ESRCH,
    );
    assert_eq!(targets(&d), vec![3, 0, 2]);
}

#[test]
fn v613_index_bug_is_observable() {
    let mut v = vm(8);
    let buggy = OnSpinVariant::V613SingleLoop { fixed_index: false };
    let fixed = OnSpinVariant::V613SingleLoop { fixed_index: true };
    let mut s = SpinVm {
        last_boosted_vcpu: 4,
    };
    // start = 5; vCPU 5 is busy, vCPU 6 is boosted at offset i = 1.
    let d = run(&mut s, &mut v, 0, buggy, None, |t| i32::from(t.0 == 6));
    assert_eq!(d.target, Some(VcpuIdx(6)));
    assert_eq!(s.last_boosted_vcpu, 1, "stores the loop offset");
    let d = run(&mut s, &mut v, 0, buggy, None, |_| 1);
    assert_eq!(d.target, Some(VcpuIdx(2)), "restarts from the wrong vCPU");
    let mut s = SpinVm {
        last_boosted_vcpu: 4,
    };
    run(&mut s, &mut v, 0, fixed, None, |t| i32::from(t.0 == 6));
    assert_eq!(s.last_boosted_vcpu, 6);
    let d = run(&mut s, &mut v, 0, fixed, None, |_| 1);
    assert_eq!(d.target, Some(VcpuIdx(7)));
}

#[test]
fn v613_needs_two_vcpus() {
    let mut v = vm(1);
    let mut s = SpinVm::default();
    let d = run(
        &mut s,
        &mut v,
        0,
        OnSpinVariant::V613SingleLoop { fixed_index: true },
        None,
        |_| 1,
    );
    assert!(d.attempts.is_empty());
}

#[test]
fn ipi_aware_relaxed_round_and_shared_budget() {
    let relaxed = OnSpinVariant::IpiAware {
        enable_relaxed_boost: true,
        order: IpiOrder::FilterInScanOrder,
        base: IpiBase::V612TwoPass,
    };
    let mut v = vm(4);
    for x in v.iter_mut().skip(1) {
        x.cpl = Cpl::User;
        x.kvm_sched_out(true, false);
    }
    let mut s = SpinVm::default();
    // Strict round rejects all user-mode vCPUs; relaxed takes vCPU 1.
    let d = run(&mut s, &mut v, 0, relaxed, None, |_| 1);
    assert_eq!(d.round, Some(Round::Relaxed));
    assert_eq!(d.tier, Some(Tier::Relaxed));
    assert_eq!(s.last_boosted_vcpu, 1);
    // Budget shared: two -ESRCH in strict (kernel-mode 2 and 3) leave one for relaxed.
    let mut v = vm(4);
    v[1].cpl = Cpl::User;
    v[1].kvm_sched_out(true, false);
    let mut s = SpinVm::default();
    let d = run(&mut s, &mut v, 0, relaxed, None, |_| -ESRCH);
    let rounds: Vec<Round> = d.attempts.iter().map(|a| a.round).collect();
    assert_eq!(targets(&d), vec![2, 3, 1]);
    assert_eq!(rounds, vec![Round::Strict, Round::Strict, Round::Relaxed]);
    assert_eq!(d.tries_left, 0);
}

#[test]
fn ipi_aware_receiver_first_order() {
    let first = OnSpinVariant::IpiAware {
        enable_relaxed_boost: false,
        order: IpiOrder::ReceiverFirst,
        base: IpiBase::V612TwoPass,
    };
    let scan = OnSpinVariant::IpiAware {
        enable_relaxed_boost: false,
        order: IpiOrder::FilterInScanOrder,
        base: IpiBase::V612TwoPass,
    };
    let mut v = vm(4);
    let mut s = SpinVm::default();
    let d = run(&mut s, &mut v, 0, scan, Some(VcpuIdx(3)), |_| 1);
    assert_eq!(
        (d.target, d.tier),
        (Some(VcpuIdx(1)), Some(Tier::Preempted))
    );
    let mut s = SpinVm::default();
    let d = run(&mut s, &mut v, 0, first, Some(VcpuIdx(3)), |_| 1);
    assert_eq!(
        (d.target, d.tier),
        (Some(VcpuIdx(3)), Some(Tier::IpiReceiver))
    );
    // A failed receiver is not retried in the scan.
    let mut s = SpinVm::default();
    let d = run(&mut s, &mut v, 0, first, Some(VcpuIdx(3)), |_| 0);
    assert_eq!(targets(&d), vec![3, 1, 2]);
}

#[test]
fn ipi_aware_single_loop_budget_goes_negative_in_relaxed_round() {
    let mk = |base| OnSpinVariant::IpiAware {
        enable_relaxed_boost: true,
        order: IpiOrder::FilterInScanOrder,
        base,
    };
    // vCPUs 1..=3 preempted in kernel, 4..=6 preempted in user.
    let setup = || {
        let mut v = vm(7);
        for x in v.iter_mut().skip(4) {
            x.cpl = Cpl::User;
            x.kvm_sched_out(true, false);
        }
        v
    };
    let mut v = setup();
    let mut s = SpinVm::default();
    let d = run(
        &mut s,
        &mut v,
        0,
        mk(IpiBase::V613SingleLoopFixed),
        None,
        |_| -ESRCH,
    );
    // Strict: 1, 2, 3 exhaust try; relaxed: all 6 preempted, try -> -6.
    assert_eq!(targets(&d), vec![1, 2, 3, 1, 2, 3, 4, 5, 6]);
    assert_eq!(d.tries_left, -6);
    let mut v = setup();
    let mut s = SpinVm::default();
    let d = run(&mut s, &mut v, 0, mk(IpiBase::V612TwoPass), None, |_| {
        -ESRCH
    });
    assert_eq!(targets(&d), vec![1, 2, 3]);
    assert_eq!(d.tries_left, 0);
    // Success in the single-loop base stores the index.
    let mut v = setup();
    let mut s = SpinVm {
        last_boosted_vcpu: 5,
    };
    let d = run(
        &mut s,
        &mut v,
        0,
        mk(IpiBase::V613SingleLoopFixed),
        None,
        |t| i32::from(t.0 == 2),
    );
    assert_eq!(d.target, Some(VcpuIdx(2)));
    assert_eq!(s.last_boosted_vcpu, 2);
}

fn hist(f: HistoricForm) -> OnSpinVariant {
    OnSpinVariant::Historic(f)
}

/// vCPU 0's directed yield in historic form `f` from a fresh `SpinVm`
/// (no last boosted vCPU), no IPI receiver.
fn run_hist(
    v: &mut [VcpuState],
    f: HistoricForm,
    res: impl FnMut(VcpuIdx) -> i32,
) -> OnSpinDecision {
    run(&mut SpinVm::default(), v, 0, hist(f), None, res)
}

/// vCPU woken from halt (IPI / kick) and not yet running: `ready`, not
/// `preempted`; its cached `preempted_in_kernel` is from its last
/// preemption, at `last_cpl`.
fn woken(v: &mut VcpuState, last_cpl: Cpl) {
    v.cpl = last_cpl;
    v.kvm_sched_out(true, false);
    v.kvm_sched_in();
    v.cpl = Cpl::Kernel;
    v.kvm_vcpu_block();
    v.kvm_vcpu_wake_up();
    v.pending_request = true;
}

#[test]
fn historic_2012_skips_halted_and_running_without_a_scheduler_call() {
    let mut v = vm(4);
    v[1].kvm_sched_in(); // running the guest: PF_VCPU
    v[1].in_spin_loop = true; // ... and spinning itself
    v[2].kvm_sched_in();
    v[2].kvm_vcpu_block();
    v[2].pv_unhalted = true; // kicked but not woken: still on the queue
    v[3].cpl = Cpl::User; // preempted in user mode
    v[3].kvm_sched_out(true, false);
    let mut s = SpinVm::default();
    let mut calls = Vec::new();
    let d = run(
        &mut s,
        &mut v,
        0,
        hist(HistoricForm::Y2012DyEligible),
        None,
        |t| {
            calls.push(t.0);
            1
        },
    );
    // No kernel-mode filter: the user-mode vCPU is boosted; the running
    // one never reached the scheduler.
    assert_eq!(calls, vec![3]);
    assert_eq!(d.target, Some(VcpuIdx(3)));
    // The running vCPU went through the dy_eligible check (toggled).
    assert!(v[1].dy_eligible);
    // 2014: the kicked halted vCPU is runnable (kvm_arch_vcpu_runnable)
    // but not preempted: still skipped; the user-mode one is boosted.
    let mut s = SpinVm::default();
    let d = run(
        &mut s,
        &mut v,
        0,
        hist(HistoricForm::Y2014Preempted),
        None,
        |_| 1,
    );
    assert_eq!(targets(&d), vec![3]);
    assert!(v[1].dy_eligible, "filtered before the eligibility check");
    // 2017: yield_to_kernel_mode rejects it: nobody.
    let d = run(
        &mut s,
        &mut v,
        0,
        hist(HistoricForm::Y2017KernelMode),
        None,
        |_| 1,
    );
    assert!(d.attempts.is_empty());
}

#[test]
fn historic_2011_ignores_dy_eligible_and_visits_vcpu_0_twice() {
    let mut v = vm(4);
    v[2].in_spin_loop = true; // a spinner: 2012 skips it on first look
    let mut s = SpinVm {
        last_boosted_vcpu: 2,
    };
    let d = run(
        &mut s,
        &mut v,
        0,
        hist(HistoricForm::Y2011YieldTo),
        None,
        |_| 0,
    );
    // `i < last`: i = 0 jumps to 2 and `continue` steps on to 3, so pass
    // 0 is 3 alone; pass 1: 1, 2 (me = 0 skipped); the spinner is tried.
    assert_eq!(targets(&d), vec![3, 1, 2]);
    // last_boosted_vcpu = 0: `0 < 0` is false, so 2011's pass 0 visits
    // vCPU 0, and pass 1 visits it again; 2012 (`<=`) skips it in pass 0.
    let mut w = vm(4);
    let mut s = SpinVm::default();
    let d = run(
        &mut s,
        &mut w,
        3,
        hist(HistoricForm::Y2011YieldTo),
        None,
        |_| 0,
    );
    assert_eq!(targets(&d), vec![0, 1, 2, 0]);
    let mut s = SpinVm::default();
    let d = run(
        &mut s,
        &mut w,
        3,
        hist(HistoricForm::Y2012DyEligible),
        None,
        |_| 0,
    );
    assert_eq!(targets(&d), vec![1, 2, 0]);
    let mut s = SpinVm {
        last_boosted_vcpu: 2,
    };
    let d = run(
        &mut s,
        &mut v,
        0,
        hist(HistoricForm::Y2012DyEligible),
        None,
        |_| 0,
    );
    // pass 0: 3; pass 1: 1, then 2 (its first look: ineligible).
    assert_eq!(targets(&d), vec![3, 1]);
    assert!(!v[0].in_spin_loop);
}

#[test]
fn historic_2012_has_no_try_budget_2013_stops_at_the_first_esrch_2014_after_three() {
    let mut v = vm(6);
    let d = run_hist(&mut v, HistoricForm::Y2012DyEligible, |_| -ESRCH);
    assert_eq!(targets(&d), vec![1, 2, 3, 4, 5]);
    assert_eq!(d.yielded, 0);
    // 2013: `bool kvm_vcpu_yield_to()` turns the first -ESRCH into true:
    // KVM takes it for a boost (yielded 1, last_boosted_vcpu = 1), nobody
    // was boosted, and the budget is untouched.
    let mut s = SpinVm {
        last_boosted_vcpu: 0,
    };
    let d = run(
        &mut s,
        &mut v,
        0,
        hist(HistoricForm::Y2013TryBudget),
        None,
        |_| -ESRCH,
    );
    assert_eq!(targets(&d), vec![1]);
    assert_eq!((d.yielded, d.target, d.tries_left), (1, None, 3));
    assert_eq!(s.last_boosted_vcpu, 1);
    // The next PAUSE exit starts after vCPU 1.
    let d = run(
        &mut s,
        &mut v,
        0,
        hist(HistoricForm::Y2013TryBudget),
        None,
        |t| if t.0 == 2 { 0 } else { -ESRCH },
    );
    assert_eq!(targets(&d), vec![2, 3]);
    assert_eq!((d.yielded, s.last_boosted_vcpu), (1, 3));
    // A refusal (0) is not converted: the loop goes on, as in every form.
    let d = run(
        &mut s,
        &mut v,
        0,
        hist(HistoricForm::Y2013TryBudget),
        None,
        |_| 0,
    );
    assert_eq!(d.yielded, 0);
    assert_eq!(d.attempts.len(), 5);
    // 2014 (int): three -ESRCH spend the budget, then the loop stops.
    let mut s = SpinVm::default();
    let d = run(
        &mut s,
        &mut v,
        0,
        hist(HistoricForm::Y2014Preempted),
        None,
        |_| -ESRCH,
    );
    assert_eq!(targets(&d), vec![1, 2, 3]);
    assert_eq!((d.yielded, d.tries_left), (-ESRCH, 0));
    assert_eq!(s.last_boosted_vcpu, 0);
}

#[test]
fn historic_2012_boosts_a_woken_vcpu_2014_does_not() {
    let mut v = vm(3);
    woken(&mut v[1], Cpl::Kernel);
    v[2].kvm_sched_in(); // running
    let d = run_hist(&mut v, HistoricForm::Y2012DyEligible, |_| 1);
    assert_eq!(d.target, Some(VcpuIdx(1)));
    let d = run_hist(&mut v, HistoricForm::Y2014Preempted, |_| 1);
    assert!(d.attempts.is_empty(), "not preempted: no candidate");
}

#[test]
fn historic_2019_ready_boosts_woken_vcpus_the_kernel_filter_reads_a_stale_cpl() {
    let mut v = vm(3);
    woken(&mut v[1], Cpl::Kernel);
    woken(&mut v[2], Cpl::User);
    let mut s = SpinVm::default();
    let d = run(
        &mut s,
        &mut v,
        0,
        hist(HistoricForm::Y2017KernelMode),
        None,
        |_| 0,
    );
    assert!(d.attempts.is_empty(), "2017: preempted only");
    // 2019 `ready`: woken vCPUs are candidates, but the one last
    // preempted in user mode fails the (stale) kernel-mode filter.
    let d = run(
        &mut s,
        &mut v,
        0,
        hist(HistoricForm::Y2019Ready),
        None,
        |_| 0,
    );
    assert_eq!(targets(&d), vec![1]);
    // "Check preempted_in_kernel for involuntary preemption": only
    // preempted vCPUs are filtered by mode: both are tried.
    let d = run(
        &mut s,
        &mut v,
        0,
        hist(HistoricForm::Y2019PreemptedInKernel),
        None,
        |_| 0,
    );
    assert_eq!(targets(&d), vec![1, 2]);
    assert!(d.attempts.iter().all(|a| a.tier == Tier::ReadyNotPreempted));
}

#[test]
fn historic_2019_rejects_user_mode_vcpu_with_pending_interrupt_6_12_boosts_it() {
    let mut v = vm(2);
    v[1].cpl = Cpl::User;
    v[1].kvm_sched_out(true, false);
    v[1].apicv_active = true;
    v[1].pi_pending = true;
    let mut s = SpinVm::default();
    let d = run(
        &mut s,
        &mut v,
        0,
        hist(HistoricForm::Y2019PreemptedInKernel),
        None,
        |_| 1,
    );
    assert!(d.attempts.is_empty());
    let d = run(&mut s, &mut v, 0, V612, None, |_| 1);
    assert_eq!(d.target, Some(VcpuIdx(1)));
    assert_eq!(d.tier, Some(Tier::PendingInterrupt));
}

#[test]
fn historic_forms_keep_the_round_robin_and_dy_eligible() {
    for f in HistoricForm::ALL {
        assert_eq!(HistoricForm::from_name(f.name()), Some(f));
        if f == HistoricForm::Y2011YieldTo {
            continue; // its own test
        }
        let mut v = vm(4);
        let mut s = SpinVm {
            last_boosted_vcpu: 1,
        };
        let d = run(&mut s, &mut v, 3, hist(f), None, |_| 0);
        assert_eq!(targets(&d), vec![2, 0, 1], "{f:?}");
        let d = run(&mut s, &mut v, 3, hist(f), None, |t| i32::from(t.0 == 0));
        assert_eq!(
            (d.target, s.last_boosted_vcpu),
            (Some(VcpuIdx(0)), 0),
            "{f:?}"
        );
        let mut v = vm(2);
        v[1].in_spin_loop = true;
        let mut s = SpinVm::default();
        let d = run(&mut s, &mut v, 0, hist(f), None, |_| 1);
        assert!(d.attempts.is_empty(), "{f:?}: spinner skipped once");
        let d = run(&mut s, &mut v, 0, hist(f), None, |_| 1);
        assert_eq!(d.target, Some(VcpuIdx(1)), "{f:?}");
    }
    assert_eq!(HistoricForm::from_name("6.12"), None);
}

#[test]
fn bad_me_index_is_harmless() {
    let mut v = vm(2);
    let mut s = SpinVm::default();
    let d = run(&mut s, &mut v, 9, V612, None, |_| 1);
    assert!(d.attempts.is_empty() && d.target.is_none());
}
