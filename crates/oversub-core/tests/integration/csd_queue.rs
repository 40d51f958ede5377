//! Guest cross-CPU calls and interrupts against Linux 6.12: calls queued on
//! a CPU that has not yet run its `call_single_queue` are announced by no
//! new IPI and run by the one pending interrupt (`smp_call_function_many_cond`,
//! `__flush_smp_call_function_queue`), and a CPU waiting for a lock taken
//! with `spin_lock_irqsave()` takes no interrupt (`kvm_wait` halts with
//! IF=0, which only the kick ends).

use crate::common::run_nested as run_toml;
use oversub::report::Report;

/// 3 vCPUs pinned to CPUs 0..3 running `prog`, a host hog on `hog_cpu`,
/// PV TLB flush off (every shootdown IPIs every other vCPU).
fn three_vcpus(prog: &str, hog_cpu: u32) -> Report {
    run_toml(&format!(
        "[host]\ncpus = 3\nduration = \"500ms\"\n\
         [[task]]\nname = \"hog\"\nkind = \"hog\"\ncpus = [{hog_cpu}]\n\
         [guest.pv]\ntlb_flush = false\n\
         [[vm]]\nname = \"g\"\nvcpus = 3\npin = [0, 1, 2]\nprogram = \"{prog}\"\n"
    ))
}

#[test]
fn calls_queued_on_a_preempted_vcpu_share_one_ipi_and_one_interrupt() {
    // vCPU 2 shares its CPU with a hog: while it waits for the CPU, the
    // shootdowns of vCPUs 0 and 1 both queue on it; only the first finds
    // its queue empty and sends the IPI, and the one interrupt runs both.
    // With one IPI per call (the model before: 5 903 IPIs, the calls plus
    // the guest's 3 reschedule IPIs at its start) there are more IPIs than
    // calls; here one per preemption episode of vCPU 2 is saved (5 873).
    let r = three_vcpus("munmap_trio.json", 2);
    let v = &r.vms[0];
    let calls: u64 = v.threads.iter().map(|t| 2 * t.phase_loops).sum();
    assert!(calls > 2_000, "{calls}");
    assert!(
        v.ipis_sent + 20 < calls,
        "{} IPIs for {calls} calls",
        v.ipis_sent
    );
}

/// (halts, PV kicks) of the VM running `lock_waiter_LOCK.json`.
fn lock_waiter(lock: &str) -> (u64, u64) {
    let r = three_vcpus(&format!("lock_waiter_{lock}.json"), 0);
    let v = &r.vms[0];
    let u = v.threads.iter().find(|t| t.name == "u").expect("u");
    assert!(u.phase_loops > 1_000, "{u:?}");
    (v.halts, v.pv_kicks)
}

#[test]
fn a_zone_lock_waiter_takes_no_interrupt_until_it_has_the_lock() {
    // Every vCPU halts once at boot (its guest CPU is idle until its
    // thread is first scheduled): 3 halts that are not pv_wait.
    let boot = 3;
    // "dcache" is a spin_lock(): a shootdown IPI ends vCPU 1's pv_wait
    // (safe_halt), it runs the flush and spins SPIN_THRESHOLD again before
    // it halts again, so it halts more often than it is kicked (37 halts
    // for 16 kicks: 18 halts besides boot that no kick ended).
    let (halts_on, kicks_on) = lock_waiter("dcache");
    // zone->lock is spin_lock_irqsave(): halted with IF=0, vCPU 1 is woken
    // only by the kick, so each pv_wait halt ends in a kick (27 halts, 23
    // kicks: one idle halt of a guest CPU besides boot), and the shootdown
    // waits until it has taken and dropped the lock.
    let (halts_off, kicks_off) = lock_waiter("zone");
    assert!(
        kicks_on > 10 && kicks_off > 10,
        "kicks {kicks_on} {kicks_off}"
    );
    let unkicked_on = halts_on.saturating_sub(boot + kicks_on);
    let unkicked_off = halts_off.saturating_sub(boot + kicks_off);
    assert!(
        unkicked_on >= 10 && unkicked_off * 10 < unkicked_on,
        "IRQs on: {halts_on} halts, {kicks_on} kicks; IRQs off: {halts_off} halts, {kicks_off} kicks"
    );
}
