//! The waker of a FUTEX_WAKE is preempted at the system call's return
//! (`syscall_exit_to_user_mode()` -> `exit_to_user_mode_loop()`, Linux 6.12
//! and 6.18) when the wakeup's `check_preempt_wakeup_fair()` picks the
//! thread it woke: conform's `rtapp_mutex` layout, where ftrace on the
//! 6.18 host shows the holder switched out runnable right after its
//! unlock's `sys_exit_futex`, for the taker's whole critical section.

use oversub::trace::{TraceEvent, TraceSink};
use std::sync::{Arc, Mutex};

struct Shared(Arc<Mutex<Vec<TraceEvent>>>);

impl TraceSink for Shared {
    fn record(&mut self, ev: TraceEvent) {
        self.0.lock().unwrap().push(ev);
    }
}

/// conform/rtapp_mutex.json's program (one CPU, holder and taker), 1 s on
/// `kernel` with every host cost zero: (report, switches of CPU 0 as
/// (t, prev, prev runnable, next) with task ids).
#[allow(clippy::type_complexity)]
fn mutex_layout(
    kernel: &str,
) -> (
    oversub::report::Report,
    Vec<(u64, Option<u32>, bool, Option<u32>)>,
) {
    let json = r#"{"global": {"duration": 1}, "tasks": {
        "holder": {"cpus": [0], "lock": "m", "run": 900, "sleep": 3000, "unlock": "m", "timer": {"ref": "t", "period": 7000}},
        "taker": {"cpus": [0], "lock": "m", "run": 600, "unlock": "m", "sleep": 1200}}}"#;
    let mut sc = oversub::scenario::rtapp::scenario("mutex.json", json).unwrap();
    sc.host.kernel = oversub::sched::KernelPreset::parse(kernel).unwrap();
    sc.host.features = sc.host.kernel.features();
    sc.host.costs = oversub::sched::HostCosts::ZERO;
    let ev = Arc::new(Mutex::new(Vec::new()));
    let mut never = |_| true;
    let opts = oversub::run::RunOptions::default()
        .check_invariants(true)
        .poll(&mut never)
        .trace(Box::new(Shared(ev.clone())));
    let r = oversub::run::run(&sc, opts).expect("the run finishes");
    let sw = ev
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match *e {
            TraceEvent::SchedSwitch {
                t,
                cpu: 0,
                prev,
                prev_runnable,
                next,
                ..
            } => Some((t, prev, prev_runnable, next)),
            _ => None,
        })
        .collect();
    (r, sw)
}

/// Each unlock wakes the taker blocked on the futex, which was placed
/// with the lag it kept while blocked, so the holder is no longer eligible
/// and loses the CPU at once (runnable), to the taker; it gets it back
/// only when the taker sleeps after its 600 us critical section. Without
/// the return to user mode between the unlock and the holder's timer sleep
/// the holder would block at the unlock: no involuntary switch, no wait.
#[test]
fn the_woken_taker_preempts_the_holder_at_its_unlocks_return() {
    for kernel in ["6.12.117", "6.18"] {
        let (r, sw) = mutex_layout(kernel);
        let names: Vec<&str> = r.tasks.iter().map(|t| t.name.as_str()).collect();
        let (h, k) = (
            names.iter().position(|&n| n == "holder").unwrap() as u32,
            names.iter().position(|&n| n == "taker").unwrap() as u32,
        );
        let loops = r.program.as_ref().unwrap().threads[h as usize].phase_loops;
        assert!(
            (140..=143).contains(&loops),
            "{kernel}: {loops} holder loops"
        );
        // Who loses the CPU to whom: the holder, runnable, to the taker.
        let preempted: Vec<usize> = sw
            .iter()
            .enumerate()
            .filter(|(_, &(_, p, runnable, _))| p == Some(h) && runnable)
            .map(|(i, _)| i)
            .collect();
        assert!(
            preempted.len() as u64 >= loops - 1,
            "{kernel}: holder preempted {} times in {loops} loops",
            preempted.len()
        );
        for &i in &preempted {
            let (t0, _, _, next) = sw[i];
            assert_eq!(
                next,
                Some(k),
                "{kernel}: at {t0} the holder lost the CPU to {next:?}"
            );
            // The taker keeps it for its critical section, then sleeps
            // and the holder runs again.
            let (t1, prev, runnable, back) = sw[i + 1];
            assert_eq!(
                (prev, runnable, back),
                (Some(k), false, Some(h)),
                "{kernel}: at {t1}"
            );
            assert!(
                (599_000..=601_000).contains(&(t1 - t0)),
                "{kernel}: the taker ran {} ns before the holder went on",
                t1 - t0
            );
        }
        let holder = r.tasks.iter().find(|t| t.name == "holder").unwrap();
        assert_eq!(holder.nr_involuntary_switches, preempted.len() as u64);
    }
}
