//! The guest's cpuidle-haltpoll (`[guest] cpuidle_haltpoll`,
//! `guest::haltpoll`, `sim::vm::idle`): an idle guest CPU woken within its
//! poll window never HLTs and is woken without a reschedule IPI, sooner;
//! a CPU whose idles are longer than `guest_halt_poll_ns` keeps halting; the
//! polling vCPU is busy for the host and takes CPU from what shares its
//! pCPU.

use crate::common::run_nested as run_toml;
use oversub::report::{GuestThreadReport, Report, VmReport};
use oversub::scenario::Scenario;

/// `prog` on a VM of 2 vCPUs pinned to CPUs 0 and 1 (a host hog on CPU 1
/// when `hog`), with or without cpuidle-haltpoll, for 200 ms.
fn run(prog: &str, haltpoll: bool, hog: bool) -> Report {
    let hog = if hog {
        "[[task]]\nname = \"hog\"\nkind = \"hog\"\ncpus = [1]\n"
    } else {
        ""
    };
    run_toml(&format!(
        "[host]\ncpus = 2\nduration = \"200ms\"\n{hog}\
         [guest]\ncpuidle_haltpoll = {haltpoll}\n\
         [[vm]]\nname = \"g\"\nvcpus = 2\npin = [0, 1]\nprogram = \"{prog}\"\n"
    ))
}

fn thread<'a>(r: &'a Report, name: &str) -> &'a GuestThreadReport {
    r.vms[0].threads.iter().find(|t| t.name == name).unwrap()
}

fn task_cpu(r: &Report, name: &str) -> u64 {
    r.tasks.iter().find(|t| t.name == name).unwrap().cpu_ns
}

fn hp(v: &VmReport) -> &oversub::report::GuestHaltpollReport {
    v.guest_haltpoll.as_ref().expect("haltpoll on")
}

#[test]
fn a_short_idle_is_polled_through_without_hlt_or_ipi_and_woken_sooner() {
    let off = run("signal_pair_short.json", false, false);
    let on = run("signal_pair_short.json", true, false);
    let (voff, von) = (&off.vms[0], &on.vms[0]);
    assert!(voff.guest_haltpoll.is_none());
    let loops = thread(&on, "b").phase_loops;
    assert!(loops > 1000, "b looped {loops} times");
    // Without the driver every signal finds vCPU 1 halted: a HLT and a
    // reschedule IPI (an APIC-write exit) each.
    assert!(voff.halts >= thread(&off, "b").phase_loops / 2, "{voff:?}");
    assert!(voff.ipi_exits >= thread(&off, "b").phase_loops / 2);
    // With it, after the first short halt grew the window to 50 us, the
    // ~30 us idles end in the poll: almost no HLT, no IPI.
    let h = hp(von);
    assert!(h.polls_woken >= loops * 9 / 10, "{h:?} loops {loops}");
    assert!(h.wakeups_without_ipi >= loops * 9 / 10, "{h:?}");
    assert!(
        von.halts * 20 < voff.halts,
        "halts {} vs {}",
        von.halts,
        voff.halts
    );
    assert!(von.ipi_exits * 20 < voff.ipi_exits);
    assert!(h.polling_ns > 0);
    // The polling is a fifth part of the vCPUs' CPU time.
    let split =
        |v: &VmReport| v.guest_useful_ns + v.spinning_ns + v.halt_polling_ns + v.exit_overhead_ns;
    assert_eq!(split(voff), voff.cpu_ns);
    assert_eq!(split(von) + h.polling_ns, von.cpu_ns);
    // Woken sooner: no exit, host wakeup and interrupt on the way.
    let (woff, won) = (
        thread(&off, "b").wakeup_latency_ns.p50,
        thread(&on, "b").wakeup_latency_ns.p50,
    );
    assert!(won < woff, "median wakeup latency {won} ns vs {woff} ns");
    // The waker no longer pays the IPI's APIC-write exit: a loops faster.
    assert!(thread(&on, "a").phase_loops > thread(&off, "a").phase_loops);
    // arch_haltpoll_enable wrote MSR_KVM_POLL_CONTROL = 0: the host never
    // halt-polls these vCPUs (without the driver its dynamic halt polling
    // grows after vCPU 1's short halts).
    assert_eq!(von.halt_polling_ns, 0);
    assert!(voff.halt_polling_ns > 0, "{voff:?}");
}

#[test]
fn idles_longer_than_guest_halt_poll_ns_keep_halting() {
    // signal_pair: vCPU 1 idles ~1 ms between signals, longer than
    // guest_halt_poll_ns (200 us): the limit never grows from 0.
    let off = run("signal_pair.json", false, false);
    let on = run("signal_pair.json", true, false);
    let (voff, von) = (&off.vms[0], &on.vms[0]);
    assert_eq!(hp(von).polls, 0, "{:?}", hp(von));
    assert_eq!(von.halts, voff.halts);
    assert_eq!(von.ipi_exits, voff.ipi_exits);
}

#[test]
fn the_polling_vcpu_is_busy_for_the_host_and_takes_cpu_from_a_neighbour() {
    let off = run("signal_pair_short.json", false, true);
    let on = run("signal_pair_short.json", true, true);
    // vCPU 1 polls instead of halting: the host runs it, and the hog on
    // its pCPU gets less.
    let (hog_off, hog_on) = (task_cpu(&off, "hog"), task_cpu(&on, "hog"));
    let (v_off, v_on) = (task_cpu(&off, "g.vcpu1"), task_cpu(&on, "g.vcpu1"));
    assert!(v_on > v_off + 20_000_000, "vCPU 1 ran {v_on} vs {v_off} ns");
    assert!(
        hog_on + 20_000_000 < hog_off,
        "hog ran {hog_on} vs {hog_off} ns"
    );
    assert!(hp(&on.vms[0]).polling_ns > 20_000_000);
}

#[test]
fn the_switch_without_a_program_vm_is_a_one_line_error() {
    let src = "[host]\ncpus = 2\n[guest]\ncpuidle_haltpoll = true\n\
               [[vm]]\nname = \"p\"\nvcpus = 2\nworkload = \"phase:dedup\"\n";
    let e = Scenario::parse("t.toml", src).unwrap_err().to_string();
    assert!(e.contains("guest.cpuidle_haltpoll"), "{e}");
    assert!(e.contains("program VMs only"), "{e}");
    assert!(!e.contains('\n'), "{e}");
}

#[test]
fn a_cross_cpu_call_to_a_polling_cpu_sends_no_ipi() {
    // send_call_function_single_ipi -> call_function_single_prep_ipi: the
    // idle vCPU 1 polls between the calls, so after the first short halt
    // grew its window each call reaches it without an IPI or an exit.
    let off = run("smp_call_idle.json", false, false);
    let on = run("smp_call_idle.json", true, false);
    let (voff, von) = (&off.vms[0], &on.vms[0]);
    let calls = thread(&on, "caller").phase_loops;
    assert!(calls > 2000, "{calls}");
    assert!(voff.ipi_exits >= thread(&off, "caller").phase_loops);
    let h = hp(von);
    assert!(
        h.wakeups_without_ipi >= calls * 9 / 10,
        "{h:?} calls {calls}"
    );
    assert!(
        von.ipi_exits * 20 < voff.ipi_exits,
        "{} vs {}",
        von.ipi_exits,
        voff.ipi_exits
    );
    // The calls are all waited for either way, and sooner when polled.
    assert!(von.csd_waits.abs_diff(calls) <= 1);
    let per_call = |v: &VmReport| v.csd_wait_ns / v.csd_waits.max(1);
    assert!(
        per_call(von) < per_call(voff),
        "{} vs {}",
        per_call(von),
        per_call(voff)
    );
}
