//! The PV qspinlock's wait/kick path in a program guest and the queue-head
//! boost (266e85a5ec91 "KVM: X86: Boost queue head vCPU to mitigate lock
//! waiter preemption", 2019, Linux 5.3; `[kvm] kick_yield`): who spins, who
//! halts in `pv_wait`, who is kicked at unlock, and who the releaser's
//! `kvm_sched_yield` hands its host CPU to. The program
//! (tests/nested/queue_head_pair.json) has a lock holder that holds a guest
//! kernel spinlock almost all the time and a waiter that takes it briefly,
//! on two vCPUs sharing one host CPU, PLE off (no `kvm_vcpu_on_spin`: the
//! only directed yields are the kick's), on the CFS host (Linux 6.1, the
//! history rows' host: a woken vCPU preempts the current one only beyond
//! the wakeup granularity, so without the boost the kicked head waits for
//! the releaser's slice to end).

use crate::common::run_nested;
use oversub::report::{Report, TaskReport};

fn pair(kick_yield: bool) -> Report {
    run_nested(&format!(
        r#"
[host]
cpus = 1
kernel = "6.1"
duration = "500ms"
[kvm]
ple = "off"
kick_yield = {kick_yield}
[guest.pv]
steal_time = true
spinlock = true
[[vm]]
name = "g"
vcpus = 2
pin = [0, 0]
program = "queue_head_pair.json"
"#
    ))
}

fn vcpu(r: &Report, i: u32) -> &TaskReport {
    crate::common::task(r, &format!("g.vcpu{i}"))
}

fn loops(r: &Report, name: &str) -> u64 {
    r.vms[0]
        .threads
        .iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("no guest thread {name}"))
        .phase_loops
}

#[test]
fn the_waiter_spins_then_halts_and_the_holders_unlock_kicks_it() {
    for kick_yield in [false, true] {
        let r = pair(kick_yield);
        let v = &r.vms[0];
        // The waiter spun (its vCPU burnt host CPU in the PAUSE loop) and
        // then halted in pv_wait: HLT exits and a KVM_HC_KICK_CPU per halt
        // that the holder's unlock ended (`_Q_SLOW_VAL`).
        assert!(v.spinning_ns > 0, "{v:?}");
        assert!(v.halts > 0 && v.pv_kicks > 0, "{v:?}");
        assert!(v.pv_kicks <= v.halts, "a kick per halted queue head: {v:?}");
        // Who halts: the waiter's vCPU blocks (a halt is a voluntary
        // switch of its host task); the holder's hardly ever waits.
        let (h, w) = (vcpu(&r, 0), vcpu(&r, 1));
        assert!(
            w.nr_voluntary_switches >= 10 * h.nr_voluntary_switches.max(1),
            "waiter {} holder {} voluntary switches",
            w.nr_voluntary_switches,
            h.nr_voluntary_switches
        );
    }
}

#[test]
fn with_the_boost_the_releaser_yields_its_cpu_to_the_kicked_queue_head() {
    let (off, on) = (pair(false), pair(true));
    // Before 266e85a5ec91 the kick only wakes: no directed yield at all
    // (PLE is off).
    assert_eq!(off.vms[0].directed_yield_attempted, 0, "{:?}", off.vms[0]);
    assert_eq!(vcpu(&off, 0).nr_yield_to, 0);
    // With it, every kick is followed by kvm_sched_yield from the releaser
    // (mostly vCPU 0, the holder) towards the kicked vCPU, which then
    // runs on the shared host CPU; the waiter yields only when it released
    // the lock to a halted holder (the holder rarely waits).
    let v = &on.vms[0];
    assert_eq!(v.directed_yield_attempted, v.pv_kicks, "{v:?}");
    let (h, w) = (vcpu(&on, 0), vcpu(&on, 1));
    assert!(h.nr_yield_to_target_ran > 0, "{h:?}");
    assert!(
        h.nr_yield_to >= 10 * w.nr_yield_to.max(1),
        "holder {h:?} waiter {w:?}"
    );
    assert_eq!(h.nr_yield_to + w.nr_yield_to, v.pv_kicks);
    // The effect: with the boost the kicked head runs at once and takes
    // the lock, so the waiter spends less time waiting (spinning, then
    // halted) and halts less often, and does more of its loops.
    let (a, b) = (&off.vms[0], &on.vms[0]);
    assert!(
        b.spinlock_wait_total_ns * 4 < a.spinlock_wait_total_ns * 3,
        "lock wait with {} without {}",
        b.spinlock_wait_total_ns,
        a.spinlock_wait_total_ns
    );
    assert!(
        b.halts < a.halts,
        "halts with {} without {}",
        b.halts,
        a.halts
    );
    let (w_off, w_on) = (loops(&off, "w"), loops(&on, "w"));
    assert!(w_on > w_off, "waiter loops with {w_on} without {w_off}");
}
