//! Which IPI a remote wakeup sends (`sched::ipis`, Linux 6.12.117): onto
//! an idle CPU, the wakelist's call-function-single IPI and no reschedule
//! IPI; onto a busy CPU whose current task it preempts, a reschedule IPI;
//! counted for the host scheduler (`sched_ipis`) and a program VM's guest
//! (`ipis_call_function_single`, `ipis_reschedule`), whatever the wakeup's
//! cost.

use crate::common::run_nested;
use oversub::report::Report;

/// The nested test program `prog` (tests/nested) run directly on a 2-CPU
/// host for 200 ms, with `remote` as `[host.costs] remote_wakeup`.
fn host(prog: &str, remote: &str) -> Report {
    let path = format!("{}/tests/nested/{prog}", env!("CARGO_MANIFEST_DIR"));
    let json = std::fs::read_to_string(&path).unwrap().replace(
        "\"global\": {\"duration\": 1},",
        "\"global\": {\"duration\": 1}, \"oversub\": {\"cpus\": 2},",
    );
    let mut sc = oversub::scenario::rtapp::scenario(&path, &json).unwrap();
    sc.host.duration = oversub::engine::Nanos(200_000_000);
    sc.host.costs = oversub::sched::HostCosts::ZERO;
    sc.host.costs.remote_wakeup = oversub::scenario::parse_duration(remote).unwrap().0;
    let mut sim = oversub::sim::Simulator::new(&sc);
    sim.set_check_invariants(true);
    sim.run_polled(sc.host.duration, &mut |_| true)
        .expect("the run finishes")
}

fn wakeups(r: &Report, name: &str) -> u64 {
    r.tasks.iter().find(|t| t.name == name).unwrap().nr_wakeups
}

#[test]
fn a_host_wakeup_onto_an_idle_cpu_sends_a_call_function_ipi_and_no_reschedule_ipi() {
    // "a" on CPU 0 wakes "b" on idle CPU 1 every 40 us: ttwu_queue_cond()
    // holds, so each wakeup is a wakelist IPI, with its cost (the task
    // activated when it arrives) or without (at once; counted the same).
    for remote in ["0ns", "20us"] {
        let r = host("signal_pair_short.json", remote);
        let woken = wakeups(&r, "b");
        assert!(woken > 1000, "{remote}: b woken {woken} times");
        let ipis = &r.sched_ipis;
        assert!(
            ipis.call_function_single + 2 >= woken && ipis.call_function_single <= woken,
            "{remote}: {ipis:?}, b woken {woken} times"
        );
        assert_eq!(ipis.reschedule, 0, "{remote}: {ipis:?}");
    }
}

#[test]
fn a_host_wakeup_that_preempts_a_busy_cpu_sends_a_reschedule_ipi() {
    // The same wakeups onto CPU 1 busy with the hog "h": never a wakelist
    // IPI; a reschedule IPI for each that preempts "h" (most of them: "b"
    // runs 10 us of every 40).
    for remote in ["0ns", "20us"] {
        let r = host("signal_busy.json", remote);
        let woken = wakeups(&r, "b");
        assert!(woken > 1000, "{remote}: b woken {woken} times");
        let ipis = &r.sched_ipis;
        assert_eq!(ipis.call_function_single, 0, "{remote}: {ipis:?}");
        assert!(
            ipis.reschedule > woken / 2 && ipis.reschedule <= woken,
            "{remote}: {ipis:?}, b woken {woken} times"
        );
    }
}

#[test]
fn a_guest_wakeup_onto_an_idle_vcpu_is_a_call_function_ipi_onto_a_busy_one_a_reschedule_ipi() {
    let vm = |prog: &str| {
        run_nested(&format!(
            "[host]\ncpus = 2\nduration = \"200ms\"\n\
             [[vm]]\nname = \"g\"\nvcpus = 2\npin = [0, 1]\nprogram = \"{prog}\"\n"
        ))
    };
    let r = vm("signal_pair_short.json");
    let v = &r.vms[0];
    let b = v.threads.iter().find(|t| t.name == "b").unwrap();
    let woken = b.wakeup_latency_ns.samples;
    assert!(woken > 1000, "b woken {woken} times");
    // vCPU 1 halted idle at each signal: the wakelist's IPI.
    assert!(
        v.ipis_call_function_single + 2 >= woken && v.ipis_call_function_single <= woken,
        "{v:?}"
    );
    assert_eq!(v.ipis_reschedule, 0, "{v:?}");
    let r = vm("signal_busy.json");
    let v = &r.vms[0];
    let b = v.threads.iter().find(|t| t.name == "b").unwrap();
    let woken = b.wakeup_latency_ns.samples;
    assert!(woken > 1000, "b woken {woken} times");
    assert_eq!(v.ipis_call_function_single, 0, "{v:?}");
    assert!(
        v.ipis_reschedule > woken / 2 && v.ipis_reschedule <= woken,
        "{v:?}"
    );
}
