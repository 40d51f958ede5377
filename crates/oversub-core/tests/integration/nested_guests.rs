//! Nested guests (`[[vm]] program`): the guest's own scheduler runs the
//! program's threads on the vCPUs. Effects checked: a thread on a preempted
//! vCPU makes no progress, steal time keeps the preempted time out of the
//! guest's accounting, a wakeup on an idle vCPU goes through HLT and a
//! reschedule IPI, and an undercommitted VM gives a program the shares it
//! gets host-only (issue 12, item 5b).

use crate::common::run_nested as run_toml;
use oversub::report::{GuestThreadReport, Report};
use oversub::scenario::Scenario;

fn dir() -> String {
    format!("{}/tests/nested", env!("CARGO_MANIFEST_DIR"))
}

fn threads(r: &Report) -> &[GuestThreadReport] {
    &r.vms[0].threads
}

fn thread<'a>(r: &'a Report, name: &str) -> &'a GuestThreadReport {
    threads(r)
        .iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("no guest thread {name}"))
}

/// A VM of 2 vCPUs pinned to CPUs 0 and 1, running `prog`, with a host hog
/// on CPU 1 when `contended`.
fn two_vcpus(prog: &str, contended: bool, steal_time: bool, secs: u32) -> Report {
    let hog = if contended {
        "[[task]]\nname = \"hog\"\nkind = \"hog\"\ncpus = [1]\n"
    } else {
        ""
    };
    run_toml(&format!(
        "[host]\ncpus = 2\nduration = \"{secs}s\"\n{hog}\
         [guest.pv]\nsteal_time = {steal_time}\n\
         [[vm]]\nname = \"g\"\nvcpus = 2\npin = [0, 1]\nprogram = \"{prog}\"\n"
    ))
}

#[test]
fn a_thread_on_a_preempted_vcpu_makes_no_progress() {
    // Two always-running guest threads, one per vCPU; vCPU 1 shares its
    // host CPU with a host hog (the VM's cgroup against the hog: about a
    // third of CPU 1), vCPU 0 has CPU 0 to itself.
    let r = two_vcpus("pinned_hogs.json", true, true, 2);
    let (a, b) = (thread(&r, "a"), thread(&r, "b"));
    let vcpu = |n: &str| r.tasks.iter().find(|t| t.name == n).unwrap().cpu_ns;
    let (v0, v1) = (vcpu("g.vcpu0"), vcpu("g.vcpu1"));
    assert!(v1 < 1_400_000_000, "vCPU 1 was hardly preempted: {v1} ns");
    // Progress (1 ms loops) follows each vCPU's host CPU time, not the wall
    // time its thread was current.
    let loops = b.phase_loops as f64 / a.phase_loops as f64;
    let cpu = v1 as f64 / v0 as f64;
    assert!(
        (loops - cpu).abs() < 0.05,
        "loops a {} b {}, vCPU ns {v0} {v1}",
        a.phase_loops,
        b.phase_loops
    );
    assert!(b.phase_loops * 1_000_000 <= v1, "{b:?} {v1}");
}

#[test]
fn steal_time_keeps_preempted_time_out_of_the_guest_accounting() {
    // With PV steal time the guest charges b only for the time its vCPU
    // ran; without it, for the wall time it was current.
    let with = two_vcpus("pinned_hogs.json", true, true, 2);
    let without = two_vcpus("pinned_hogs.json", true, false, 2);
    let vcpu1 = with.tasks.iter().find(|t| t.name == "g.vcpu1").unwrap();
    let b_with = thread(&with, "b").cpu_ns;
    let b_without = thread(&without, "b").cpu_ns;
    assert!(
        b_with.abs_diff(vcpu1.cpu_ns) < 50_000_000,
        "steal on: b charged {b_with}, vCPU ran {}",
        vcpu1.cpu_ns
    );
    assert!(
        b_without > 1_900_000_000,
        "steal off: b charged {b_without}"
    );
    // The program's progress does not depend on the guest's accounting.
    let (lw, lo) = (
        thread(&with, "b").phase_loops,
        thread(&without, "b").phase_loops,
    );
    assert!(lw.abs_diff(lo) * 20 <= lw, "{lw} vs {lo}");
}

#[test]
fn a_wakeup_on_an_idle_vcpu_halts_and_sends_a_reschedule_ipi() {
    // "a" on vCPU 0 signals "b" on vCPU 1 every ~1.2 ms; b runs 200 us per
    // signal, so vCPU 1 is idle (halted) most of the time.
    let r = two_vcpus("signal_pair.json", false, true, 1);
    let v = &r.vms[0];
    let (a, b) = (thread(&r, "a"), thread(&r, "b"));
    assert!(a.phase_loops > 700, "{a:?}");
    // Every signal found b waiting (rt-app drops a signal without a waiter):
    // b keeps pace with a, within the one in flight.
    assert!(a.phase_loops - b.phase_loops <= 1, "a {a:?} b {b:?}");
    assert!(v.halts >= b.phase_loops / 2, "halts {}", v.halts);
    assert!(
        v.ipis_sent >= b.phase_loops / 2,
        "reschedule IPIs {}",
        v.ipis_sent
    );
    // The halted vCPU gives its CPU back: it ran about b's share.
    let vcpu1 = r.tasks.iter().find(|t| t.name == "g.vcpu1").unwrap();
    assert!(vcpu1.cpu_ns < 400_000_000, "vCPU 1 ran {} ns", vcpu1.cpu_ns);
}

#[test]
fn a_queue_batch_wakes_the_guest_consumer_once() {
    let r = two_vcpus("queue_batch.json", false, true, 1);
    let v = &r.vms[0];
    let (p, c) = (thread(&r, "prod"), thread(&r, "cons"));
    assert!(p.phase_loops > 900, "{p:?}");
    // Every batch is consumed: the consumer keeps pace, one batch behind.
    assert!(p.phase_loops - c.phase_loops <= 1, "prod {p:?} cons {c:?}");
    // One wakeup per batch of 20 (not per item): vCPU 1 halts after each
    // batch and is woken by one reschedule IPI.
    assert!(
        v.ipis_sent >= c.phase_loops / 2 && v.ipis_sent <= c.phase_loops + 2,
        "IPIs {} for {} batches",
        v.ipis_sent,
        c.phase_loops
    );
    assert!(v.halts >= c.phase_loops / 2, "halts {}", v.halts);
}

#[test]
fn a_full_queue_holds_the_guest_producer_to_the_consumer() {
    let r = two_vcpus("queue_bounded.json", false, true, 1);
    let (p, c) = (thread(&r, "prod"), thread(&r, "cons"));
    assert!(c.phase_loops > 900, "{c:?}");
    // At most the capacity (4) ahead, plus the item in hand.
    assert!(p.phase_loops <= c.phase_loops + 5, "prod {p:?} cons {c:?}");
    // So the producer's vCPU mostly idles: ~1000 items x 10 us.
    assert!(p.cpu_ns < 30_000_000, "prod ran {} ns", p.cpu_ns);
}

/// Host-only run of an rt-app file on 2 CPUs.
fn host_only(path: &str) -> Report {
    let src = std::fs::read_to_string(path).unwrap();
    let src = src.replacen('{', "{\"oversub\": {\"cpus\": 2},", 1);
    let sc = oversub::scenario::rtapp::scenario(path, &src).unwrap_or_else(|e| panic!("{e}"));
    let mut sim = oversub::sim::Simulator::new(&sc);
    sim.run_polled(sc.host.duration, &mut |_| true)
        .expect("the run finishes")
}

#[test]
fn an_undercommitted_vm_gives_a_program_its_host_only_shares() {
    // Issue 12 item 5b: 2 vCPUs on 2 otherwise idle CPUs.
    let conform = format!("{}/../../conform", env!("CARGO_MANIFEST_DIR"));
    let progs = [
        format!(
            "{}/../../conform/rtapp_mutex.json",
            env!("CARGO_MANIFEST_DIR")
        ),
        format!("{conform}/rtapp_nice.json"),
        format!("{conform}/rtapp_timer_vs_hog.json"),
        format!("{}/mutex4.json", dir()),
        format!("{}/signal_pair.json", dir()),
    ];
    for p in &progs {
        let h = host_only(p);
        let g = run_toml(&format!(
            "[host]\ncpus = 2\nduration = \"2s\"\n\
             [[vm]]\nname = \"g\"\nvcpus = 2\npin = [0, 1]\nprogram = \"{p}\"\n"
        ));
        let d = h.duration_ns as f64;
        assert_eq!(threads(&g).len(), h.tasks.len(), "{p}");
        for t in threads(&g) {
            let ht = h.tasks.iter().find(|x| x.name == t.name).unwrap();
            let (hs, gs) = (ht.cpu_ns as f64 / d, t.cpu_ns as f64 / d);
            assert!(
                (hs - gs).abs() < 0.05,
                "{p}: {} host {:.3} guest {:.3}",
                t.name,
                hs,
                gs
            );
        }
    }
}

#[test]
fn nested_runs_are_deterministic() {
    let a = two_vcpus("mutex4.json", true, true, 1);
    let b = two_vcpus("mutex4.json", true, true, 1);
    let s = |r: &Report| serde_json::to_string(&r.vms).unwrap();
    assert_eq!(s(&a), s(&b));
}

#[test]
fn bad_programs_are_one_line_errors() {
    let file = format!("{}/inline.toml", dir());
    for (vm, want) in [
        ("program = \"missing.json\"", "missing.json: cannot read"),
        (
            "program = \"mutex4.json\"\nworkload = \"phase:dedup\"",
            "program and workload/overrides are exclusive",
        ),
        (
            "program = \"pinned_hogs.json\"\nvcpus = 1",
            "allowed vCPUs 0..0",
        ),
        (
            "program = \"bad_lock_kind.json\"",
            "tasks.t.phases.p.syscall.kind: \"semaphore\": allowed spin, mutex, rwsem_read, rwsem_write",
        ),
        (
            "program = \"mixed_lock_kind.json\"",
            "kernel lock \"k\" is used as a spin and as a mutex",
        ),
    ] {
        let src = format!("[host]\ncpus = 2\n[[vm]]\nname = \"g\"\n{vm}\n");
        let src = if src.contains("vcpus") {
            src
        } else {
            src + "vcpus = 2\n"
        };
        let e = Scenario::parse(&file, &src).unwrap_err().to_string();
        assert!(e.contains(want), "{e}");
        assert!(!e.contains('\n'), "{e}");
    }
}

#[test]
fn the_guest_kernel_has_its_own_features() {
    // rtapp_timer_vs_hog in a 1-vCPU VM: the timer thread preempts the hog
    // on wakeup, unless the guest kernel (not the host) runs without
    // WAKEUP_PREEMPTION, when it waits for the hog's tick. How long that is
    // depends on where the thread's start (a seeded jitter below one tick)
    // puts its timer against the guest tick, so it is averaged over seeds.
    let p = format!(
        "{}/../../conform/rtapp_timer_vs_hog.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let run = |seed: u64, extra: &str| {
        run_toml(&format!(
            "[host]\ncpus = 1\nduration = \"1s\"\nseed = {seed}\n\
             [[vm]]\nname = \"g\"\nvcpus = 1\nprogram = \"{p}\"\n{extra}"
        ))
    };
    let lat = |r: &Report| thread(r, "tick").wakeup_latency_ns.p50;
    let seeds = 1..=8u64;
    let mut off_sum = 0;
    for seed in seeds.clone() {
        let on = run(seed, "");
        assert!(
            lat(&on) < 100_000,
            "seed {seed}, with wakeup preemption: p50 {}",
            lat(&on)
        );
        off_sum += lat(&run(seed, "[vm.features]\nWAKEUP_PREEMPTION = false\n"));
    }
    // Uniform start phases wait half a 4 ms tick on average.
    let off_mean = off_sum / seeds.count() as u64;
    assert!(off_mean > 500_000, "without: mean p50 {off_mean}");
    let file = format!("{}/inline.toml", dir());
    let e = Scenario::parse(
        &file,
        "[host]\ncpus = 1\n[[vm]]\nname = \"g\"\nvcpus = 1\nworkload = \"phase:dedup\"\nkernel = \"6.19\"\n",
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("vm[0].kernel: the guest kernel applies to program VMs only"),
        "{e}"
    );
}

#[test]
fn shipped_nested_scenarios_run() {
    let d = format!("{}/../../scenarios/nested", env!("CARGO_MANIFEST_DIR"));
    for entry in std::fs::read_dir(&d).unwrap() {
        let p = entry.unwrap().path();
        if p.extension().is_some_and(|e| e == "toml") {
            let sc = Scenario::load(&p).unwrap_or_else(|e| panic!("{e}"));
            let mut sim = oversub::sim::Simulator::new(&sc);
            sim.set_check_invariants(true);
            let r = sim
                .run_polled(oversub::engine::Nanos::from_ms(200), &mut |_| true)
                .expect("the run finishes");
            for v in &r.vms {
                assert!(!v.threads.is_empty(), "{}: {}", p.display(), v.name);
                assert!(
                    v.threads.iter().all(|t| t.phase_loops > 0),
                    "{}",
                    p.display()
                );
            }
        }
    }
}

#[test]
fn a_syscall_kernel_lock_serialises_and_its_waiter_spins() {
    let r = two_vcpus("syscall_pair.json", false, true, 2);
    let v = &r.vms[0];
    let loops: u64 = threads(&r).iter().map(|t| t.phase_loops).sum();
    // 150 us held per loop: at most 2 s / 150 us loops in all (unserialised
    // the two threads would do 2 x 2 s / 200 us = 20000).
    assert!(loops <= 13_400 && loops > 10_000, "loops {loops}");
    // Every loop took and released the lock once.
    assert!(v.ops.abs_diff(loops) <= 2, "ops {} loops {loops}", v.ops);
    // The waiter burns its vCPU in the PAUSE loop.
    assert!(v.spinning_ns > 300_000_000, "spin {}", v.spinning_ns);
    assert!(v.lock_wait_ns.p50 > 0, "{:?}", v.lock_wait_ns);
    // The total behind the percentiles: at least half the sections waited
    // at least the median.
    assert!(
        v.spinlock_wait_total_ns >= v.lock_wait_ns.p50 * (v.ops / 2),
        "{} {:?}",
        v.spinlock_wait_total_ns,
        v.lock_wait_ns
    );
    let p = v.program.as_ref().expect("a program VM has a summary");
    assert_eq!(p.phase_loops, loops);
    assert_eq!(p.finished_ns, None, "the threads loop until the end");
}

/// Two vCPUs pinned to CPUs 0 and 1 with a host hog on CPU 1, running
/// `prog`, with `pv` as the `[guest.pv]` table body.
fn contended(prog: &str, pv: &str, secs: u32) -> Report {
    run_toml(&format!(
        "[host]\ncpus = 2\nduration = \"{secs}s\"\n\
         [[task]]\nname = \"hog\"\nkind = \"hog\"\ncpus = [1]\n\
         [guest.pv]\n{pv}\n\
         [[vm]]\nname = \"g\"\nvcpus = 2\npin = [0, 1]\nprogram = \"{prog}\"\n"
    ))
}

#[test]
fn a_mutex_waiter_spins_on_a_running_owner_and_sleeps_on_a_preempted_one() {
    // Uncontended host: the owner is always on a CPU, so the waiter spins
    // (mutex_spin_on_owner) and takes the mutex when it is released,
    // without sleeping: its vCPU hardly halts.
    let free = two_vcpus("mutex_pair.json", false, true, 1);
    let v = &free.vms[0];
    let (a, b) = (thread(&free, "a"), thread(&free, "b"));
    assert!(a.sleeping_lock_waits > 1_000, "{a:?}");
    assert!(b.sleeping_lock_waits > 1_000, "{b:?}");
    assert!(v.spinning_ns > 200_000_000, "spin {}", v.spinning_ns);
    assert!(v.halts * 20 < a.phase_loops, "halts {} {a:?}", v.halts);
    let p = v.program.as_ref().unwrap();
    assert_eq!(
        p.sleeping_lock_wait_ns,
        a.sleeping_lock_wait_ns + b.sleeping_lock_wait_ns
    );
    // vCPU 1 shares CPU 1 with a host hog. With PV steal time the guest
    // sees the owner's vCPU preempted (vcpu_is_preempted) and the waiter
    // sleeps, halting its vCPU; without it the waiter spins on.
    let pv = contended("mutex_pair.json", "steal_time = true", 2);
    let nopv = contended("mutex_pair.json", "steal_time = false", 2);
    let (vp, vn) = (&pv.vms[0], &nopv.vms[0]);
    assert!(
        vp.halts > 4 * vn.halts.max(1),
        "halts: steal time {} without {}",
        vp.halts,
        vn.halts
    );
    assert!(
        vp.spinning_ns * 2 < vn.spinning_ns,
        "spin: steal time {} without {}",
        vp.spinning_ns,
        vn.spinning_ns
    );
    // The sleeping waiter gives vCPU 0's CPU back to the host: vCPU 0 runs
    // less when it can sleep.
    let vcpu0 = |r: &Report| r.tasks.iter().find(|t| t.name == "g.vcpu0").unwrap().cpu_ns;
    assert!(vcpu0(&pv) < vcpu0(&nopv), "{} {}", vcpu0(&pv), vcpu0(&nopv));
}

#[test]
fn a_synchronous_cross_cpu_call_waits_for_a_preempted_target() {
    // Every call is waited for (csd_lock_wait) and runs its handler on
    // vCPU 1.
    let free = two_vcpus("smp_call.json", false, true, 1);
    let (v, c) = (&free.vms[0], thread(&free, "caller"));
    assert!(c.phase_loops > 5_000, "{c:?}");
    assert!(
        v.csd_waits.abs_diff(c.phase_loops) <= 1,
        "{} {c:?}",
        v.csd_waits
    );
    assert!(v.ipis_sent >= c.phase_loops, "ipis {}", v.ipis_sent);
    let per_call = |v: &oversub::report::VmReport| v.csd_wait_ns / v.csd_waits.max(1);
    // At least the 20 us handler, well below the 100 us of work per loop.
    assert!((20_000..60_000).contains(&per_call(v)), "{}", per_call(v));
    // vCPU 1 loses CPU 1 to a hog for host slices: the caller spins until
    // it runs again, so it waits longer per call and makes less progress.
    let busy = contended("smp_call.json", "steal_time = true", 1);
    let (vb, cb) = (&busy.vms[0], thread(&busy, "caller"));
    assert!(
        per_call(vb) > 3 * per_call(v),
        "per call: contended {} free {}",
        per_call(vb),
        per_call(v)
    );
    assert!(cb.phase_loops * 3 < c.phase_loops * 2, "{cb:?} vs {c:?}");
    assert!(vb.spinning_ns > 200_000_000, "spin {}", vb.spinning_ns);
}

#[test]
fn pv_tlb_flush_skips_a_preempted_vcpu_and_native_shootdowns_wait_for_it() {
    // A munmap shoots down vCPU 1's TLB (it runs a thread of the mm). With
    // PV TLB flush the guest skips vCPU 1 while it is preempted (it flushes
    // on entry); natively it IPIs it and waits.
    let pv = contended("munmap_pair.json", "steal_time = true\ntlb_flush = true", 1);
    let native = contended(
        "munmap_pair.json",
        "steal_time = true\ntlb_flush = false",
        1,
    );
    let (up, un) = (thread(&pv, "unmapper"), thread(&native, "unmapper"));
    let (vp, vn) = (&pv.vms[0], &native.vms[0]);
    assert!(
        vp.csd_waits * 10 < up.phase_loops * 9,
        "PV: {} waits {up:?}",
        vp.csd_waits
    );
    assert!(
        vn.csd_waits.abs_diff(un.phase_loops) <= 1,
        "native: {} waits {un:?}",
        vn.csd_waits
    );
    assert!(
        vp.csd_wait_ns * 2 < vn.csd_wait_ns,
        "wait: PV {} native {}",
        vp.csd_wait_ns,
        vn.csd_wait_ns
    );
    assert!(up.phase_loops > un.phase_loops, "{up:?} vs {un:?}");
    // A CPU with no thread of the mm (lazy TLB) gets no shootdown: with
    // "busy" gone, nothing is sent.
    let alone = run_toml(&format!(
        "[host]\ncpus = 2\nduration = \"200ms\"\n\
         [[vm]]\nname = \"g\"\nvcpus = 2\npin = [0, 1]\nprogram = \"{}/munmap_alone.json\"\n",
        dir()
    ));
    assert!(thread(&alone, "unmapper").phase_loops > 500);
    assert_eq!(alone.vms[0].csd_waits, 0);
    assert_eq!(alone.vms[0].ipis_sent, 0);
}

/// A TLB shootdown reaches only the CPUs of the flushing thread's mm
/// (`mm_cpumask`): each process its own, threads of one process sharing
/// it. vCPU 2 runs a thread of another process and loses its host CPU to
/// a hog; native flushes (no PV TLB flush) wait for every target. The
/// mutant this kills: one mm per program (every vCPU running any of its
/// threads a target), which IPIs vCPU 2 too (two call-function IPIs per
/// flush) and waits for it while it is preempted (ms per flush).
#[test]
fn a_shootdown_reaches_only_its_own_processs_vcpus() {
    let r = run_toml(&format!(
        "[host]\ncpus = 3\nduration = \"500ms\"\n\
         [[task]]\nname = \"hog\"\nkind = \"hog\"\ncpus = [2]\n\
         [guest.pv]\nsteal_time = true\ntlb_flush = false\n\
         [[vm]]\nname = \"g\"\nvcpus = 3\npin = [0, 1, 2]\nprogram = \"{}/munmap_procs.json\"\n",
        dir()
    ));
    let (v, u) = (&r.vms[0], thread(&r, "unmapper"));
    assert!(u.phase_loops > 1_000, "{u:?}");
    // Each munmap flushed remotely and waited for vCPU 1 (the sibling).
    let remote = v.program.as_ref().expect("a program VM").tlb_shootdowns;
    assert!(
        remote.abs_diff(u.phase_loops) <= 1,
        "{remote} flushes, {u:?}"
    );
    assert!(
        v.csd_waits.abs_diff(u.phase_loops) <= 1,
        "{} waits {u:?}",
        v.csd_waits
    );
    // One target per flush: vCPU 2 (the other process) is never sent one.
    let calls = v.ipis_sent - v.ipis_reschedule;
    assert!(
        calls <= v.csd_waits + 2,
        "{calls} call IPIs for {} waits",
        v.csd_waits
    );
    // vCPU 1 always runs: a wait is an IPI's delivery and entry, not a
    // host slice of the hog's.
    let per_wait = v.csd_wait_ns / v.csd_waits.max(1);
    assert!(per_wait < 50_000, "{per_wait} ns per flush");
    // The other process ran on vCPU 2 (it was current there, unflushed).
    let other = thread(&r, "launcher/other");
    assert!(other.cpu_ns > 50_000_000, "{other:?}");
}

#[test]
fn cross_cpu_call_ipis_go_through_the_lapic_tracker() {
    // The calls' unicast ICR writes reach the series' IPI tracker, so the
    // IPI-aware directed yield knows the spinning caller's receiver; with
    // 6.12's on_spin nothing is tracked.
    let run = |on_spin: &str| {
        run_toml(&format!(
            "[host]\ncpus = 2\nduration = \"1s\"\n\
             [[task]]\nname = \"hog\"\nkind = \"hog\"\ncpus = [1]\n\
             [kvm]\non_spin = \"{on_spin}\"\n\
             [[vm]]\nname = \"g\"\nvcpus = 2\npin = [0, 1]\nprogram = \"smp_call.json\"\n"
        ))
    };
    let (base, aware) = (run("6.12"), run("ipi_aware"));
    let (b, a) = (&base.vms[0], &aware.vms[0]);
    assert_eq!(b.ipis_tracked, 0);
    assert!(
        a.ipis_tracked >= a.csd_waits,
        "{} {}",
        a.ipis_tracked,
        a.csd_waits
    );
    assert!(a.csd_waits > 1_000, "{}", a.csd_waits);
}

/// Guest HRTICK: with the guest kernel's HRTICK feature on, a guest CPU
/// shared by two always-running threads switches when a slice ends (the
/// LAPIC timer `hrtick_start()` armed in the guest), not only on its ticks
/// (100 Hz here). The mutant: HRTICK requests of a guest dropped.
#[test]
fn guest_hrtick_preempts_at_the_slice_end() {
    let run = |hrtick: bool| {
        run_toml(&format!(
            "[host]\ncpus = 1\nduration = \"1s\"\n[kvm]\nguest_hz = 100\n\
             [[vm]]\nname = \"g\"\nvcpus = 1\nprogram = \"shared_cpu_hogs.json\"\n\
             [vm.features]\nHRTICK = {hrtick}\n"
        ))
    };
    let switches = |r: &Report| threads(r).iter().map(|t| t.nr_switches).sum::<u64>();
    let (off, on) = (switches(&run(false)), switches(&run(true)));
    // Without HRTICK a switch needs a tick: at most one per 10 ms.
    assert!(off <= 110, "{off} switches in 1 s without HRTICK");
    // With it, each slice (0.75 ms base) ends on time.
    assert!(
        on >= 4 * off.max(1),
        "{on} switches with HRTICK, {off} without"
    );
}

/// `prog` on `n` vCPUs pinned to CPUs 0.., `[guest] osq = osq`, PV steal
/// time `steal_time`, and a host hog on CPU 1 when `hog`.
fn osq_run(prog: &str, n: u32, osq: bool, steal_time: bool, hog: bool) -> Report {
    let hog = if hog {
        "[[task]]\nname = \"hog\"\nkind = \"hog\"\ncpus = [1]\n"
    } else {
        ""
    };
    let pin: Vec<String> = (0..n).map(|c| c.to_string()).collect();
    run_toml(&format!(
        "[host]\ncpus = {n}\nduration = \"1s\"\n{hog}\
         [guest]\nosq = {osq}\n[guest.pv]\nsteal_time = {steal_time}\n\
         [[vm]]\nname = \"g\"\nvcpus = {n}\npin = [{}]\nprogram = \"{prog}\"\n",
        pin.join(", ")
    ))
}

#[test]
fn the_osq_lets_one_spinner_at_a_time_take_the_mutex_in_queue_order() {
    // Four vCPUs on idle CPUs, one thread each, one mutex held 100 us of
    // every 110 us: three waiters at a time, all of them spinning (their
    // owner always runs).
    let with = osq_run("mutex_quad.json", 4, true, true, false);
    let without = osq_run("mutex_quad.json", 4, false, true, false);
    let loops = |r: &Report| -> Vec<u64> { threads(r).iter().map(|t| t.phase_loops).collect() };
    // With the OSQ only its holder spins on the owner and takes the freed
    // mutex; the others wait their turn on the queue, so the mutex goes
    // round the four threads.
    let l = loops(&with);
    let (min, max) = (*l.iter().min().unwrap(), *l.iter().max().unwrap());
    assert!(min > 2_000 && max - min < max / 20, "with the OSQ: {l:?}");
    // Without it every waiter spins on the owner and the first to look
    // takes the mutex: two threads take turns, two starve.
    let l = loops(&without);
    assert!(
        l.iter().filter(|&&n| n < 100).count() == 2,
        "without: {l:?}"
    );
    // The queued spinners still burn their vCPUs: nobody sleeps.
    for r in [&with, &without] {
        let v = &r.vms[0];
        assert!(v.spinning_ns > 2_500_000_000, "spin {}", v.spinning_ns);
        assert!(v.halts < 10, "halts {}", v.halts);
    }
}

#[test]
fn an_osq_waiter_behind_a_preempted_vcpu_gives_up_and_sleeps() {
    // Three vCPUs, one thread each on one mutex; vCPU 1 shares its CPU
    // with a host hog. A waiter queued on the OSQ behind vCPU 1's node
    // cancels when vCPU 1 is preempted (vcpu_is_preempted(prev), PV steal
    // time) and sleeps: vCPUs 0 and 2 halt and their threads switch out.
    let osq = osq_run("mutex_trio.json", 3, true, true, true);
    let spin_all = osq_run("mutex_trio.json", 3, false, true, true);
    let switches = |r: &Report, n: &str| thread(r, n).nr_switches;
    let (h_osq, h_all) = (osq.vms[0].halts, spin_all.vms[0].halts);
    assert!(
        h_osq > 10 * h_all.max(1),
        "halts: osq {h_osq} without {h_all}"
    );
    for n in ["a", "c"] {
        assert!(
            switches(&osq, n) > 10 * switches(&spin_all, n).max(1),
            "{n}: {} vs {}",
            switches(&osq, n),
            switches(&spin_all, n)
        );
    }
    // b, on the preempted vCPU, is never behind a preempted node: it
    // keeps spinning.
    assert!(switches(&osq, "b") < 10, "b {}", switches(&osq, "b"));
    // Without steal time the guest cannot see the preemption: the queued
    // waiters spin on, and the vCPUs hardly halt.
    let blind = osq_run("mutex_trio.json", 3, true, false, true);
    assert!(blind.vms[0].halts < 10, "halts {}", blind.vms[0].halts);
    assert!(
        blind.vms[0].spinning_ns > 2 * osq.vms[0].spinning_ns,
        "spin: blind {} seeing {}",
        blind.vms[0].spinning_ns,
        osq.vms[0].spinning_ns
    );
}

/// `futex_churn.json` on 2 vCPUs pinned to idle CPUs, with `[guest]
/// wakeup_locks = on` and the PV (or test-and-set) qspinlock.
fn churn(wakeup_locks: bool, pv_spinlock: bool) -> Report {
    run_toml(&format!(
        "[host]\ncpus = 2\nduration = \"1s\"\n\
         [guest]\nwakeup_locks = {wakeup_locks}\n[guest.pv]\nspinlock = {pv_spinlock}\n\
         [[vm]]\nname = \"g\"\nvcpus = 2\npin = [0, 1]\nprogram = \"futex_churn.json\"\nops = \"a\"\n"
    ))
}

#[test]
fn futex_waits_and_wakes_take_the_hash_bucket_and_pi_locks_and_contend() {
    let on = churn(true, true);
    let off = churn(false, true);
    let (v_on, v_off) = (&on.vms[0], &off.vms[0]);
    // Without the switch the futex path takes no guest spinlock (the
    // program has no kernel lock of its own).
    assert_eq!(v_off.lock_wait_ns.samples, 0);
    assert_eq!(v_off.spinning_ns, 0);
    // With it, every FUTEX_WAIT and FUTEX_WAKE takes the mutex's bucket
    // lock and every wakeup the wakee's pi_lock: at least one section per
    // loop of the contended threads ...
    let loops: u64 = threads(&on).iter().map(|t| t.phase_loops).sum();
    let sections = v_on.lock_wait_ns.samples;
    assert!(sections > loops / 2, "sections {sections} loops {loops}");
    // ... held the model's times: the bucket lock 0.5 us, the pi_lock
    // 1.5 us (the hold percentiles are those values, to the histogram's
    // bucket).
    let h = &v_on.lock_hold_ns;
    assert!((500..=510).contains(&h.p50), "{h:?}");
    assert!((1_500..=1_520).contains(&h.p99), "{h:?}");
    // The two vCPUs meet on the bucket lock: a waiter spins up to a hold.
    assert!(v_on.lock_wait_ns.p99 >= 500, "{:?}", v_on.lock_wait_ns);
    assert!(v_on.spinning_ns > 1_000_000, "spin {}", v_on.spinning_ns);
    // A thread woken while its own path still ran (before its futex wait
    // blocked it) is not lost: every thread keeps going, at the pace it
    // has without the locks.
    for (t, u) in threads(&on).iter().zip(threads(&off)) {
        assert!(t.phase_loops * 10 > u.phase_loops * 8, "{t:?} vs {u:?}");
    }
    // The sections are not the VM's ops (its ops are a's loops).
    let a: u64 = ["a.0", "a.1"]
        .iter()
        .map(|n| thread(&on, n).phase_loops)
        .sum();
    assert_eq!(v_on.ops, a);
}

#[test]
fn a_thread_woken_during_its_own_wakeup_path_does_not_sleep_through_it() {
    // 16 pool workers (a mutex, a barrier per tile) on 8 vCPUs over 4
    // CPUs: wakeup paths get preempted, so a worker that wakes others and
    // then waits is often woken back before its own path has ended. Its
    // futex wait must then not block (the wakeup is not lost): the
    // workers keep most of the pace they have without the locks.
    let run = |wl: bool| {
        run_toml(&format!(
            "[host]\ncpus = 4\nduration = \"300ms\"\n[guest]\nwakeup_locks = {wl}\n\
             [[vm]]\nname = \"g\"\nvcpus = 8\nprogram = \"strip_barrier_pool.json\"\nops = \"worker\"\n"
        ))
    };
    let (on, off) = (run(true), run(false));
    let (a, b) = (on.vms[0].ops, off.vms[0].ops);
    assert!(a * 4 > b * 3, "ops with the locks {a}, without {b}");
    assert!(
        threads(&on).iter().all(|t| t.phase_loops * 4 > b / 16 * 3),
        "{:?}",
        threads(&on)
            .iter()
            .map(|t| t.phase_loops)
            .collect::<Vec<_>>()
    );
}

/// A VM of 3 vCPUs pinned to CPUs 0-2, PV TLB flush off, with a host hog
/// on CPU 2 (vCPU 2, the flushes' target, is preempted for host slices).
fn three_vcpus_target_preempted(prog: &str) -> Report {
    run_toml(&format!(
        "[host]\ncpus = 3\nduration = \"1s\"\n\
         [[task]]\nname = \"hog\"\nkind = \"hog\"\ncpus = [2]\n\
         [guest.pv]\nsteal_time = true\ntlb_flush = false\n\
         [[vm]]\nname = \"g\"\nvcpus = 3\npin = [0, 1, 2]\nprogram = \"{prog}\"\n"
    ))
}

#[test]
fn a_flush_inside_the_read_section_holds_the_writer_for_its_ipis() {
    // madvise's flush inside its mmap_lock read section: while its IPI
    // waits for the preempted vCPU 2, the writer waits for the lock. With
    // the flush after the unlock, the writer waits for the 20 us hold only.
    let inside = three_vcpus_target_preempted("zap_in_section.json");
    let after = three_vcpus_target_preempted("zap_then_flush.json");
    let (zi, za) = (thread(&inside, "zapper"), thread(&after, "zapper"));
    // Both zap about as often (the zapper waits for the same IPIs).
    assert!(
        zi.phase_loops > 1000 && za.phase_loops > 1000,
        "{zi:?} {za:?}"
    );
    assert!(
        inside.vms[0].csd_waits > 1000 && after.vms[0].csd_waits > 1000,
        "{} {}",
        inside.vms[0].csd_waits,
        after.vms[0].csd_waits
    );
    let (wi, wa) = (thread(&inside, "writer"), thread(&after, "writer"));
    assert!(
        wi.sleeping_lock_wait_ns > 2 * wa.sleeping_lock_wait_ns,
        "writer's mmap_lock waits: flush inside {} ns, after {} ns",
        wi.sleeping_lock_wait_ns,
        wa.sleeping_lock_wait_ns
    );
    // The writer gets less done when it waits through the flushes.
    assert!(
        2 * wi.phase_loops < wa.phase_loops,
        "writer loops: flush inside {}, after {}",
        wi.phase_loops,
        wa.phase_loops
    );
}

#[test]
fn wakeup_ipis_are_the_wakeups_not_the_shootdowns() {
    // munmap_pair.json: every shootdown IPIs vCPU 1 and no thread blocks:
    // the shootdowns' call-function IPIs only, none of them counted as a
    // reschedule or a call-function-single IPI of a wakeup.
    let m = two_vcpus("munmap_pair.json", false, true, 1);
    let v = &m.vms[0];
    assert!(v.csd_waits > 1000 && v.ipis_sent >= v.csd_waits, "{v:?}");
    assert_eq!(v.ipis_reschedule, 0, "ipis_sent {}", v.ipis_sent);
    assert_eq!(v.ipis_call_function_single, 0, "{v:?}");
    // signal_pair.json: b's wakeups on the halted vCPU 1 are the wakelist's
    // call-function-single IPIs (6.12's ttwu_queue_cond: an idle target),
    // and nothing else sends an IPI.
    let s = two_vcpus("signal_pair.json", false, true, 1);
    let w = &s.vms[0];
    assert!(
        w.ipis_call_function_single >= thread(&s, "b").phase_loops / 2,
        "{w:?}"
    );
    assert_eq!(w.ipis_call_function_single, w.ipis_sent);
    assert_eq!(w.ipis_reschedule, 0, "{w:?}");
}

/// `prog` (with `FREED` replaced by `freed`) as the guest of 2 vCPUs
/// pinned to CPUs 0 and 1 for `secs` s, `[guest] lazy_mm_cpumask =
/// lazy`, no PV TLB flush (every target is interrupted).
fn tlb_run(name: &str, prog: &str, lazy: bool, freed: bool, secs: u32) -> Report {
    let dir = std::env::temp_dir().join(format!("oversub-tlb-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(format!("{name}-{lazy}-{freed}.json"));
    std::fs::write(&p, prog.replace("FREED", &freed.to_string())).unwrap();
    run_toml(&format!(
        "[host]\ncpus = 2\nduration = \"{secs}s\"\n\
         [guest]\nlazy_mm_cpumask = {lazy}\n[guest.pv]\ntlb_flush = false\n\
         [[vm]]\nname = \"g\"\nvcpus = 2\npin = [0, 1]\nprogram = \"{}\"\n",
        p.display()
    ))
}

/// Two processes: "unmapper" (vCPU 0) flushes after every 100 us of work;
/// "launcher", a thread of its process, runs on vCPU 1 first (vCPU 1
/// loads its mm), then forks "other", another process, which runs on
/// vCPU 1 from then on.
const MUNMAP_LEFT: &str = r#"{"global": {"duration": 10}, "tasks": {
    "unmapper": {"cpus": [0], "munmap": {"run": 20, "pages": 16, "freed_tables": FREED}, "run": 100},
    "launcher": {"cpus": [1], "run": 10, "fork": "other"},
    "other": {"cpus": [1], "run": 5000000}}}"#;

/// The lazy mm_cpumask (`[guest] lazy_mm_cpumask`, 6.14+): vCPU 1, which
/// left the unmapper's mm for another process's, stays in its cpumask, so
/// every flush is remote (counted) yet sends nothing (another mm loaded,
/// not lazy) until the first flush more than a second after the mm's
/// creation trims the mask: one IPI, which clears vCPU 1's bit, and the
/// flushes are local again. With 6.12's eager clearing no flush is remote.
/// A flush that freed page tables IPIs the whole mask: the first one
/// clears the bit at once. Mutants: the switch ignored (no remote flush),
/// no trim (remote for the whole 2.5 s, no IPI), the bit not cleared by
/// the IPI (remote after the trim too), freed_tables ignored (thousands of
/// remote flushes with it).
#[test]
fn the_lazy_mm_cpumask_keeps_a_cpu_that_left_until_a_flush_ipi_trims_it() {
    let remote = |r: &Report| {
        r.vms[0]
            .program
            .as_ref()
            .expect("a program VM")
            .tlb_shootdowns
    };
    let eager = tlb_run("left", MUNMAP_LEFT, false, false, 2);
    let flushes = thread(&eager, "unmapper").phase_loops;
    assert!(flushes > 10_000, "{flushes} loops");
    // (Remote only in the moment vCPU 1 idles with the mm loaded between
    // the launcher's fork and the other process's start: lazy, no IPI.)
    assert!(remote(&eager) <= 10, "{}", remote(&eager));
    assert_eq!(eager.vms[0].csd_waits, 0);
    let lazy = tlb_run("left", MUNMAP_LEFT, true, false, 2);
    let (u, v) = (thread(&lazy, "unmapper"), &lazy.vms[0]);
    // Remote for the first second (the flushes of about 1 s of the 2),
    // then local.
    let r = remote(&lazy);
    assert!(
        r * 10 > u.phase_loops * 4 && r * 10 < u.phase_loops * 6,
        "{r} remote of {} flushes",
        u.phase_loops
    );
    // One IPI: the trim's, to vCPU 1, which runs the other process.
    assert_eq!(v.csd_waits, 1, "{v:?}");
    assert!(thread(&lazy, "launcher/other").cpu_ns > 1_900_000_000);
    // freed_tables: the first flush after vCPU 1 left IPIs it and clears
    // its bit; eagerly, vCPU 1 is not in the mask to be sent one.
    let freed = tlb_run("left", MUNMAP_LEFT, true, true, 2);
    assert!(remote(&freed) <= 4, "{}", remote(&freed));
    assert_eq!(freed.vms[0].csd_waits, remote(&freed));
    let eager_freed = tlb_run("left", MUNMAP_LEFT, false, true, 2);
    assert!(remote(&eager_freed) <= 1, "{}", remote(&eager_freed));
    assert_eq!(eager_freed.vms[0].csd_waits, remote(&eager_freed));
}

/// One process: "unmapper" (vCPU 0) flushes after every 100 us of work;
/// "napper", a thread of its process, runs 50 us on vCPU 1 every 2 ms,
/// idle in between with the mm loaded (lazy TLB).
const MUNMAP_NAPPER: &str = r#"{"global": {"duration": 10}, "tasks": {
    "unmapper": {"cpus": [0], "munmap": {"run": 20, "pages": 16, "freed_tables": FREED}, "run": 100},
    "napper": {"cpus": [1], "run": 50, "sleep": 2000}}}"#;

/// `should_flush_tlb()` skips a lazy CPU unless the flush freed page
/// tables (`native_flush_tlb_multi()`): then the idle vCPU 1 is woken
/// from HLT for the IPI (its host CPU time and the halts grow) and drops
/// the mm (switch to init_mm), so it takes one such IPI per idle period:
/// about one per nap beyond the IPIs while the napper runs. With the lazy
/// mm_cpumask the CPU keeps its bit after that switch and the next
/// freed_tables flush IPIs it again to clear it: two per nap. Mutants:
/// freed_tables ignored (no extra IPIs), lazy CPUs always interrupted
/// (an IPI per flush), the init_mm switch left out (an IPI per flush).
#[test]
fn flushes_that_freed_page_tables_wake_a_lazy_vcpu_once_per_idle_period() {
    let base = tlb_run("napper", MUNMAP_NAPPER, false, false, 1);
    let freed = tlb_run("napper", MUNMAP_NAPPER, false, true, 1);
    let lazy_freed = tlb_run("napper", MUNMAP_NAPPER, true, true, 1);
    let naps = thread(&freed, "napper").phase_loops;
    let flushes = thread(&freed, "unmapper").phase_loops;
    assert!(
        naps > 400 && flushes > 5_000,
        "{naps} naps {flushes} flushes"
    );
    let (b, f, l) = (&base.vms[0], &freed.vms[0], &lazy_freed.vms[0]);
    // Without freed_tables only the napper's running time draws IPIs.
    assert!(b.csd_waits * 10 < flushes, "{} of {flushes}", b.csd_waits);
    let extra = f.csd_waits - b.csd_waits;
    assert!(
        extra * 10 > naps * 8 && extra * 10 < naps * 12,
        "{extra} more IPIs for {naps} naps"
    );
    let extra_lazy = l.csd_waits - b.csd_waits;
    assert!(
        extra_lazy * 10 > naps * 18 && extra_lazy * 10 < naps * 22,
        "{extra_lazy} more IPIs (lazy mask) for {naps} naps"
    );
    // Who loses CPU: vCPU 1 leaves HLT for each of them.
    let vcpu1 = |r: &Report| r.tasks.iter().find(|t| t.name == "g.vcpu1").unwrap().cpu_ns;
    assert!(
        f.halts > b.halts + naps * 8 / 10,
        "halts {} vs {}",
        f.halts,
        b.halts
    );
    assert!(
        vcpu1(&freed) > vcpu1(&base),
        "{} vs {}",
        vcpu1(&freed),
        vcpu1(&base)
    );
}
