//! Unit tests of the thread-program interpreter (program.rs).

use super::*;
use crate::workload::rtapp;

fn rt(src: &str) -> ProgramRt {
    ProgramRt::new(rtapp::parse(src).unwrap().program)
}

#[test]
fn a_syscall_runs_its_kernel_work_then_asks_for_its_lock() {
    let mut p = rt(r#"{"tasks": {"t": {"loop": 1, "phases": {"a": {"loop": 1,
        "syscall": {"lock": "k", "run": 5, "hold": 2},
        "syscall1": {"lock": "k", "run": 1, "hold": 1}}}}}}"#);
    let t = Time::ZERO;
    assert_eq!(p.step(0, t).1, Action::Run(Nanos::from_us(3)));
    let hold = Nanos::from_us(2);
    assert_eq!(
        p.step(0, t).1,
        Action::KernelLock {
            lock: KlockId(0),
            hold
        }
    );
    // All of the second syscall is under the lock: no run first.
    let hold = Nanos::from_us(1);
    assert_eq!(
        p.step(0, t).1,
        Action::KernelLock {
            lock: KlockId(0),
            hold
        }
    );
    assert_eq!(p.step(0, t).1, Action::Exit);
}

#[test]
fn rwsem_readers_share_a_writer_waits_and_a_mutex_reports_its_owner() {
    let mut p = rt(r#"{"global": {"duration": 1}, "tasks": {
          "r": {"instance": 2, "syscall": {"lock": "sem", "kind": "rwsem_read", "hold": 10}},
          "w": {"syscall": {"lock": "sem", "kind": "rwsem_write", "hold": 5}}}}"#);
    let t0 = Time::ZERO;
    let hold = |us| Action::Run(Nanos::from_us(us));
    assert_eq!(p.step(0, t0).1, hold(10));
    assert_eq!(p.step(1, t0).1, hold(10), "readers share");
    let busy = Action::Kernel(KernelOp::SleepingLockBusy {
        lock: KlockId(0),
        mode: SleepMode::Write,
        owner: None,
    });
    assert_eq!(p.step(2, t0).1, busy, "reader-owned: no owner to spin on");
    assert!(p.sleeping_lock_wait(2));
    assert!(
        !p.sleeping_lock_wait(0),
        "a reader that holds it waits for nothing"
    );
    // The first reader leaves: the second still holds it.
    let t1 = Time(10_000);
    let (w, _) = p.step(0, t1);
    assert!(w.is_empty() && !p.sleeping_lock_free(2));
    // The last reader wakes the writer, which takes it.
    let (w, _) = p.step(1, t1);
    assert_eq!(w, vec![2]);
    assert!(p.take_released());
    assert_eq!(p.step(2, t1).1, hold(5));
    assert!(!p.sleeping_lock_wait(2), "the holder waits for nothing");
    assert_eq!(p.stats(2).sleeping_lock_waits, 1);
    assert_eq!(p.stats(2).sleeping_lock_wait_ns, 10_000);
    // A reader behind the writer owner sees it as the owner.
    assert_eq!(
        p.step(0, t1).1,
        Action::Kernel(KernelOp::SleepingLockBusy {
            lock: KlockId(0),
            mode: SleepMode::Read,
            owner: Some(2),
        })
    );
    assert_eq!(p.sleeping_lock_owner(0), Some(2));
}

#[test]
fn a_reader_queues_behind_a_waiting_writer_and_the_writer_leaves_the_list() {
    let mut p = rt(r#"{"global": {"duration": 1}, "tasks": {
          "a_w": {"syscall": {"lock": "sem", "kind": "rwsem_write", "hold": 5}, "run": 50},
          "b_r": {"instance": 2, "syscall": {"lock": "sem", "kind": "rwsem_read", "hold": 10}}}}"#);
    let t0 = Time::ZERO;
    let hold = |us| Action::Run(Nanos::from_us(us));
    let busy = |mode, owner| {
        Action::Kernel(KernelOp::SleepingLockBusy {
            lock: KlockId(0),
            mode,
            owner,
        })
    };
    assert_eq!(p.step(1, t0).1, hold(10), "reader 1 takes it");
    assert_eq!(p.step(0, t0).1, busy(SleepMode::Write, None));
    assert!(p.sleeping_lock_wait(0));
    assert!(p.sleeping_lock_is_waiter(0));
    // Free for readers, but a writer waits ahead: reader 2 is refused.
    assert_eq!(p.step(2, t0).1, busy(SleepMode::Read, None));
    assert!(p.sleeping_lock_wait(2));
    assert!(p.sleeping_lock_wait(2), "queued once, still waiting");
    let t1 = Time(10_000);
    let (w, _) = p.step(1, t1);
    assert_eq!(w, vec![0], "the last reader wakes the queue head");
    assert_eq!(p.step(0, t1).1, hold(5));
    assert!(
        !p.sleeping_lock_is_waiter(0),
        "off the list once it took it"
    );
    assert_eq!(p.step(1, t1).1, busy(SleepMode::Read, Some(0)));
    let t2 = Time(15_000);
    let (w, a) = p.step(0, t2);
    assert_eq!(w, vec![2], "only the queued reader is woken");
    assert_eq!(a, hold(50), "the writer runs on without the lock");
    // No writer waits any more: both readers take it.
    assert_eq!(p.step(2, t2).1, hold(10));
    assert_eq!(p.step(1, t2).1, hold(10));
    assert!(!p.sleeping_lock_is_waiter(2));
    assert_eq!(p.stats(2).sleeping_lock_waits, 1);
    assert_eq!(p.stats(2).sleeping_lock_wait_ns, 15_000);
}

#[test]
fn munmap_and_smp_call_ask_the_guest_kernel() {
    let mut p = rt(r#"{"global": {"duration": 1}, "tasks": {"t": {
          "munmap": {"run": 3, "pages": 4, "freed_tables": true}, "smp_call": {"targets": 2, "handler": 1, "wait": false}}}}"#);
    let t0 = Time::ZERO;
    assert_eq!(p.step(0, t0).1, Action::Run(Nanos::from_us(3)));
    assert_eq!(
        p.step(0, t0).1,
        Action::Kernel(KernelOp::TlbShootdown {
            pages: 4,
            freed_tables: true
        })
    );
    assert_eq!(
        p.step(0, t0).1,
        Action::Kernel(KernelOp::SmpCall {
            targets: 2,
            handler: Nanos::from_us(1),
            wait: false
        })
    );
    assert_eq!(p.stats(0).phase_loops, 0);
    assert_eq!(p.step(0, t0).1, Action::Run(Nanos::from_us(3)));
    assert_eq!(p.stats(0).phase_loops, 1);
}

/// A producer putting batches of `k` into queue "q" of capacity `cap`,
/// and `consumers` threads taking batches of `k`.
fn queue_prog(cap: u32, k: u32, consumers: u32) -> ProgramRt {
    rt(&format!(
        r#"{{"global": {{"duration": 1}}, "tasks": {{
          "c": {{"instance": {consumers}, "get": {{"queue": "q", "items": {k}}}, "run": 5}},
          "p": {{"run": 2, "put": {{"queue": "q", "items": {k}, "capacity": {cap}}}}}}}}}"#
    ))
}

#[test]
fn a_consumer_blocks_on_an_empty_queue_until_a_put_wakes_it() {
    let mut p = queue_prog(100, 1, 1);
    let t0 = Time::ZERO;
    // The consumer (thread 0) finds the queue empty and blocks.
    assert_eq!(p.step(0, t0), (vec![], Action::Sleep(None)));
    // The producer (thread 1) runs, then puts: the consumer is woken.
    assert_eq!(p.step(1, t0).1, Action::Run(Nanos::from_us(2)));
    let t1 = Time(2_000);
    assert_eq!(p.step(1, t1), (vec![0], Action::Run(Nanos::from_us(2))));
    assert_eq!(p.queue_len(QueueId(0)), 1);
    // The woken consumer takes the item and runs.
    let t2 = Time(3_000);
    assert_eq!(p.step(0, t2), (vec![], Action::Run(Nanos::from_us(5))));
    assert_eq!(p.queue_len(QueueId(0)), 0);
    assert_eq!(p.stats(0).queue_waits, 1);
    assert_eq!(p.stats(0).queue_wait_ns, 3_000);
}

#[test]
fn a_batch_wakes_one_consumer_and_a_loser_waits_again() {
    let mut p = queue_prog(100, 20, 2);
    let t0 = Time::ZERO;
    assert_eq!(p.step(0, t0).1, Action::Sleep(None));
    assert_eq!(p.step(1, t0).1, Action::Sleep(None));
    assert_eq!(p.step(2, t0).1, Action::Run(Nanos::from_us(2)));
    // One batch of 20: one wakeup (the first waiter), not a broadcast.
    let t1 = Time(2_000);
    assert_eq!(p.step(2, t1), (vec![0], Action::Run(Nanos::from_us(2))));
    // The second batch wakes the other consumer.
    let t2 = Time(4_000);
    assert_eq!(p.step(2, t2), (vec![1], Action::Run(Nanos::from_us(2))));
    assert_eq!(p.queue_len(QueueId(0)), 40);
    // Both take their batch; a third get finds the queue empty again.
    assert_eq!(p.step(1, t2).1, Action::Run(Nanos::from_us(5)));
    assert_eq!(p.step(0, t2).1, Action::Run(Nanos::from_us(5)));
    assert_eq!(p.queue_len(QueueId(0)), 0);
    let t3 = Time(9_000);
    assert_eq!(p.step(0, t3), (vec![], Action::Sleep(None)));
    // A consumer woken for a batch another one took blocks again.
    assert_eq!(p.step(2, t3), (vec![0], Action::Run(Nanos::from_us(2))));
    assert_eq!(p.step(1, t3).1, Action::Run(Nanos::from_us(5)), "overtakes");
    assert_eq!(
        p.step(0, t3),
        (vec![], Action::Sleep(None)),
        "retries, waits"
    );
}

#[test]
fn a_full_queue_blocks_the_producer_until_a_get_makes_room() {
    let mut p = queue_prog(40, 20, 1);
    let t0 = Time::ZERO;
    // Two batches fill the queue of 40; the third put blocks.
    assert_eq!(p.step(1, t0).1, Action::Run(Nanos::from_us(2)));
    assert_eq!(p.step(1, t0).1, Action::Run(Nanos::from_us(2)));
    assert_eq!(p.step(1, t0).1, Action::Run(Nanos::from_us(2)));
    assert_eq!(p.step(1, t0), (vec![], Action::Sleep(None)));
    assert_eq!(p.queue_len(QueueId(0)), 40);
    // The consumer takes a batch: the producer is woken and puts.
    let t1 = Time(7_000);
    assert_eq!(p.step(0, t1), (vec![1], Action::Run(Nanos::from_us(5))));
    assert_eq!(p.step(1, t1).1, Action::Run(Nanos::from_us(2)));
    assert_eq!(p.queue_len(QueueId(0)), 40);
    assert_eq!(p.stats(1).queue_waits, 1);
    assert_eq!(p.stats(1).queue_wait_ns, 7_000);
}

/// Two workers counting on one counter (every 3, first 4) that puts into
/// queue "go" of capacity `cap`, and a writer taking from it.
fn count_prog(cap: u32) -> ProgramRt {
    rt(&format!(
        r#"{{"global": {{"duration": 1}}, "tasks": {{
          "w": {{"instance": 2, "count": {{"counter": "alloc", "every": 3, "first": 4, "queue": "go"}}, "run": 2}},
          "r": {{"get": {{"queue": "go", "capacity": {cap}}}, "run": 5}}}}}}"#
    ))
}

#[test]
fn a_count_puts_at_first_then_every_nth_count_whoever_counts() {
    let mut p = count_prog(100);
    let t0 = Time::ZERO;
    // The writer (thread 2) waits for go.
    assert_eq!(p.step(2, t0), (vec![], Action::Sleep(None)));
    // Counts 1, 2, 3 (both workers) put nothing.
    let run = Action::Run(Nanos::from_us(2));
    assert_eq!(p.step(0, t0), (vec![], run));
    assert_eq!(p.step(1, t0), (vec![], run));
    assert_eq!(p.step(0, Time(2_000)), (vec![], run));
    assert_eq!(p.counter(CounterId(0)), 3);
    assert_eq!(p.queue_len(QueueId(0)), 0);
    // Count 4 (`first`), by the other worker, puts and wakes the writer.
    assert_eq!(p.step(1, Time(2_000)), (vec![2], run));
    assert_eq!(p.queue_len(QueueId(0)), 1);
    // Counts 5 and 6 put nothing; 7 (first + every) puts again.
    for (t, at) in [(0, 4_000), (1, 4_000)] {
        assert_eq!(p.step(t, Time(at)), (vec![], run));
    }
    assert_eq!(p.queue_len(QueueId(0)), 1);
    assert_eq!(p.step(0, Time(6_000)), (vec![], run));
    assert_eq!(p.counter(CounterId(0)), 7);
    assert_eq!(p.queue_len(QueueId(0)), 2);
}

#[test]
fn a_count_whose_put_finds_the_queue_full_waits_and_counts_once() {
    let mut p = count_prog(1);
    let run = Action::Run(Nanos::from_us(2));
    // Counts 1 ..= 4: the 4th fills go (capacity 1).
    for (t, at) in [(0, 0), (1, 0), (0, 2_000), (1, 2_000)] {
        assert_eq!(p.step(t, Time(at)).1, run);
    }
    assert_eq!(p.queue_len(QueueId(0)), 1);
    // Counts 5, 6, then 7 must put into the full queue: the worker waits.
    assert_eq!(p.step(0, Time(4_000)).1, run);
    assert_eq!(p.step(1, Time(4_000)).1, run);
    assert_eq!(p.step(0, Time(6_000)), (vec![], Action::Sleep(None)));
    assert_eq!(p.counter(CounterId(0)), 7);
    // The writer takes go: the waiting worker is woken; its retry puts
    // without counting again.
    assert_eq!(
        p.step(2, Time(7_000)),
        (vec![0], Action::Run(Nanos::from_us(5)))
    );
    assert_eq!(p.step(0, Time(8_000)), (vec![], run));
    assert_eq!(p.counter(CounterId(0)), 7, "counted once");
    assert_eq!(p.queue_len(QueueId(0)), 1);
    assert_eq!(p.stats(0).queue_waits, 1);
    assert_eq!(p.stats(0).queue_wait_ns, 2_000);
}

#[test]
fn run_sleep_loop_and_exit() {
    let mut p =
        rt(r#"{"tasks": {"t": {"loop": 2, "phases": {"a": {"loop": 2, "run": 10, "sleep": 5}}}}}"#);
    let mut now = Time::ZERO;
    let mut runs = 0;
    loop {
        let (w, a) = p.step(0, now);
        assert!(w.is_empty());
        match a {
            Action::Run(d) => {
                runs += 1;
                now += d;
            }
            Action::Sleep(Some(at)) => now = at,
            Action::Exit => break,
            a => panic!("{a:?}"),
        }
    }
    assert_eq!(runs, 4);
    assert_eq!(now, Time(4 * 15_000));
    assert_eq!(p.stats(0).phase_loops, 4);
    assert_eq!(p.stats(0).finished_at, Some(now));
    assert!(p.all_done());
}

#[test]
fn mutex_waiter_is_woken_and_a_runner_can_steal() {
    let mut p = rt(
        r#"{"global": {"duration": 1}, "tasks": {"a": {"lock": "m", "run": 10, "unlock": "m", "run1": 1}, "b": {"lock": "m", "run": 10, "unlock": "m", "run1": 1}}}"#,
    );
    let t0 = Time::ZERO;
    assert_eq!(p.step(0, t0), (vec![], Action::Run(Nanos::from_us(10))));
    // b finds the mutex taken and blocks.
    assert_eq!(p.step(1, t0), (vec![], Action::Sleep(None)));
    // a unlocks: b is woken; a runs on.
    let t1 = Time(10_000);
    assert_eq!(p.step(0, t1), (vec![1], Action::Run(Nanos::from_us(1))));
    // a comes back and takes the free mutex before b ran (steal).
    let t2 = Time(11_000);
    assert_eq!(p.step(0, t2), (vec![], Action::Run(Nanos::from_us(10))));
    // b retries, loses, queues again.
    assert_eq!(p.step(1, t2), (vec![], Action::Sleep(None)));
    let t3 = Time(21_000);
    assert_eq!(p.step(0, t3), (vec![1], Action::Run(Nanos::from_us(1))));
    assert_eq!(p.step(1, t3), (vec![], Action::Run(Nanos::from_us(10))));
    assert_eq!(p.stats(1).lock_waits, 1);
    assert_eq!(p.stats(1).lock_wait_ns, 21_000);
}

#[test]
fn condition_wait_releases_and_reacquires_the_mutex() {
    let mut p = rt(r#"{"global": {"duration": 1}, "tasks": {
          "c": {"lock": "m", "wait": {"ref": "q", "mutex": "m"}, "unlock": "m", "run": 5},
          "p": {"lock": "m", "signal": "q", "run": 3, "unlock": "m", "sleep": 100}}}"#);
    let t0 = Time::ZERO;
    assert_eq!(
        p.step(0, t0),
        (vec![], Action::Sleep(None)),
        "waits, mutex released"
    );
    // The producer gets the mutex, signals (waking c) and runs holding it.
    assert_eq!(p.step(1, t0), (vec![0], Action::Run(Nanos::from_us(3))));
    // c wakes while p holds the mutex: it blocks on the mutex.
    assert_eq!(p.step(0, t0), (vec![], Action::Sleep(None)));
    // p unlocks: c is woken again, now takes it and runs.
    let t1 = Time(3_000);
    assert_eq!(p.step(1, t1), (vec![0], Action::Sleep(Some(Time(103_000)))));
    assert_eq!(p.step(0, t1), (vec![], Action::Run(Nanos::from_us(5))));
}

#[test]
fn barrier_releases_on_the_last_arrival() {
    let mut p = rt(
        r#"{"global": {"duration": 1}, "tasks": {"w": {"instance": 3, "barrier": "b", "run": 1}}}"#,
    );
    let t0 = Time::ZERO;
    assert_eq!(p.step(0, t0).1, Action::Sleep(None));
    assert_eq!(p.step(1, t0).1, Action::Sleep(None));
    assert_eq!(p.step(2, t0), (vec![0, 1], Action::Run(Nanos::from_us(1))));
    assert_eq!(p.step(0, t0).1, Action::Run(Nanos::from_us(1)));
    assert_eq!(p.step(1, t0).1, Action::Run(Nanos::from_us(1)));
    // Next round needs all three again.
    let t1 = Time(1_000);
    assert_eq!(p.step(2, t1).1, Action::Sleep(None));
    assert_eq!(p.step(0, t1).1, Action::Sleep(None));
    assert_eq!(p.step(1, t1), (vec![2, 0], Action::Run(Nanos::from_us(1))));
}

/// The last arrival at a barrier in a loop of nothing else passes
/// again at once (the threads it woke have not run yet): the step stops
/// after the zero-time bound, parks the thread and names it.
#[test]
fn a_barrier_passed_alone_in_a_loop_stops_at_the_zero_time_bound() {
    let mut p = rt(
        r#"{"global": {"duration": 1}, "tasks": {"a": {"instance": 1, "barrier0": "b", "run1": 1}, "w": {"loop": -1, "instance": 2, "barrier0": "b"}}}"#,
    );
    let t0 = Time(5_000);
    assert_eq!(p.step(0, t0).1, Action::Sleep(None));
    assert_eq!(p.step(1, t0).1, Action::Sleep(None));
    assert_eq!(p.zero_time_loop(), None);
    assert_eq!(p.step(2, t0), (vec![0, 1], Action::Sleep(None)));
    let (name, at) = p.zero_time_loop().expect("stuck");
    assert_eq!((name, at), (p.program().threads[2].name.as_str(), t0));
    // The others still step normally; the record stays the first one.
    assert_eq!(p.step(0, t0).1, Action::Run(Nanos::from_us(1)));
    assert_eq!(p.zero_time_loop().map(|(_, at)| at), Some(t0));
}

#[test]
fn relative_timer_rebases_when_late_absolute_does_not() {
    for (mode, late_sleep) in [("relative", 110_000), ("absolute", 100_000)] {
        let src = format!(
            r#"{{"global": {{"duration": 1}}, "tasks": {{"t": {{"timer": {{"ref": "x", "period": 50, "mode": "{mode}"}}, "run": 10}}}}}}"#
        );
        let mut p = rt(&src);
        assert_eq!(p.step(0, Time::ZERO).1, Action::Sleep(Some(Time(50_000))));
        assert_eq!(p.step(0, Time(50_000)).1, Action::Run(Nanos::from_us(10)));
        // Late: the run ended at 110 us, past the 100 us expiry.
        assert_eq!(
            p.step(0, Time(110_000)).1,
            Action::Run(Nanos::from_us(10)),
            "{mode}"
        );
        // Next expiry: relative 110 + 50 = 160 us; absolute 150 us.
        let next = Time(late_sleep + 50_000);
        assert_eq!(
            p.step(0, Time(120_000)).1,
            Action::Sleep(Some(next)),
            "{mode}"
        );
    }
}

#[test]
fn zero_sleep_does_not_block() {
    let mut p = rt(r#"{"global": {"duration": 1}, "tasks": {"t": {"run": 3, "sleep": 0}}}"#);
    assert_eq!(p.step(0, Time::ZERO).1, Action::Run(Nanos::from_us(3)));
    assert_eq!(p.step(0, Time(3_000)).1, Action::Run(Nanos::from_us(3)));
    assert_eq!(p.stats(0).phase_loops, 1);
}

#[test]
fn zero_period_timer_never_sleeps() {
    let mut p = rt(
        r#"{"global": {"duration": 1}, "tasks": {"t": {"run": 3, "timer": {"ref": "x", "period": 0}}}}"#,
    );
    assert_eq!(p.step(0, Time::ZERO).1, Action::Run(Nanos::from_us(3)));
    assert_eq!(p.step(0, Time(3_000)).1, Action::Run(Nanos::from_us(3)));
}

#[test]
fn delay_and_yield() {
    let mut p =
        rt(r#"{"global": {"duration": 1}, "tasks": {"t": {"delay": 7, "yield": "", "run": 2}}}"#);
    assert_eq!(p.step(0, Time::ZERO).1, Action::Sleep(Some(Time(7_000))));
    assert_eq!(p.step(0, Time(7_000)).1, Action::Yield);
    assert_eq!(p.step(0, Time(7_000)).1, Action::Run(Nanos::from_us(2)));
}

/// fork: the parent blocks until its child exits and the child's exit
/// wakes it; the child is handed to the level as a fork (a new task) and
/// restarts at its first event at every fork. vfork: the parent is woken
/// once at the child's exec (its first event done) and again at its exit.
#[test]
fn a_parent_waits_for_its_forked_child_and_its_exit_wakes_it() {
    let mut p = rt(r#"{"global": {"duration": 1}, "tasks": {
        "job": {"run": 1, "fork": "cc", "vfork": "as"},
        "cc": {"run": 10, "run1": 20}, "as": {"run": 5, "run1": 6}}}"#);
    let (job, cc, asm) = (0, 1, 2);
    let t = Time::ZERO;
    let mut forks = Vec::new();
    assert_eq!(p.step(job, t).1, Action::Run(Nanos::from_us(1)));
    let (w, a) = p.step(job, t);
    assert!(w.is_empty() && a == Action::Sleep(None), "wait4 blocks");
    p.take_forks(&mut forks);
    assert_eq!(forks, [cc], "the child is handed to the level as a fork");
    assert_eq!(p.step(job, t).1, Action::Sleep(None), "not woken: waits on");
    assert_eq!(p.step(cc, t).1, Action::Run(Nanos::from_us(10)));
    let (w, a) = p.step(cc, t);
    assert!(
        w.is_empty() && a == Action::Run(Nanos::from_us(20)),
        "fork is no vfork"
    );
    let (w, a) = p.step(cc, t);
    assert_eq!(
        (w, a),
        (vec![job], Action::Exit),
        "the exit wakes the parent once"
    );
    assert_eq!(p.step(cc, t), (vec![], Action::Exit));
    // Woken: on to the vfork of `as`.
    assert_eq!(p.step(job, t).1, Action::Sleep(None));
    forks.clear();
    p.take_forks(&mut forks);
    assert_eq!(forks, [asm]);
    assert_eq!(p.step(asm, t).1, Action::Run(Nanos::from_us(5)));
    let (w, a) = p.step(asm, t);
    assert_eq!(
        (w, a),
        (vec![job], Action::Run(Nanos::from_us(6))),
        "exec wakes the vfork parent"
    );
    assert_eq!(
        p.step(job, t).1,
        Action::Sleep(None),
        "then it waits for the exit"
    );
    assert_eq!(p.step(asm, t), (vec![job], Action::Exit));
    // The next pass forks cc again: it restarts at its first event.
    assert_eq!(p.step(job, t).1, Action::Run(Nanos::from_us(1)));
    assert_eq!(p.step(job, t).1, Action::Sleep(None));
    assert_eq!(p.step(cc, t).1, Action::Run(Nanos::from_us(10)));
    assert_eq!(p.stats(cc).phase_loops, 1, "one pass per fork, counted");
    assert!(!p.all_done());
}

/// A FUTEX_WAKE that woke a thread ends the waker's step at the system
/// call's return (`syscall_exit_to_user_mode()`): the unlock comes back as
/// a run of no CPU with the waiter to wake, and the waker's next event (its
/// timer sleep) only on the next step. An unlock that woke nobody (no
/// FUTEX_WAKE) and a runtime without the switch (a guest level) go on in
/// the same step.
#[test]
fn a_waking_unlock_returns_to_user_mode_before_the_next_event() {
    let src = r#"{"global": {"duration": 1}, "tasks": {
        "holder": {"lock": "m", "run": 100, "unlock": "m", "timer": {"ref": "t", "period": 1000}},
        "taker": {"lock": "m", "run": 50, "unlock": "m", "sleep": 300}}}"#;
    let t0 = Time::ZERO;
    let t1 = Time(100_000);
    for exit in [true, false] {
        let mut p = rt(src).preempt_at_syscall_exit(exit);
        assert_eq!(p.step(0, t0).1, Action::Run(Nanos::from_us(100)));
        // The taker finds the mutex taken and waits on the futex.
        assert_eq!(p.step(1, t0).1, Action::Sleep(None));
        let (woken, action) = p.step(0, t1);
        assert_eq!(woken, vec![1]);
        assert_eq!(p.take_futex_wakes(), 1);
        let timer = Action::Sleep(Some(Time(1_000_000)));
        if exit {
            assert_eq!(action, Action::Run(Nanos::ZERO));
            // Back in user mode: the timer, and no second FUTEX_WAKE.
            let (woken, action) = p.step(0, t1);
            assert!(woken.is_empty());
            assert_eq!((action, p.take_futex_wakes()), (timer, 0));
        } else {
            assert_eq!(action, timer);
        }
        // The taker takes the mutex; its unlock wakes nobody, so its step
        // goes on to the sleep.
        assert_eq!(p.step(1, t1).1, Action::Run(Nanos::from_us(50)));
        let (woken, action) = p.step(1, Time(150_000));
        assert!(woken.is_empty());
        assert_eq!(action, Action::Sleep(Some(Time(450_000))));
    }
}

#[test]
fn a_repeat_runs_its_event_at_its_rate_spread_over_the_loops() {
    // 5 munmaps every 2 loops and a syscall once every 3 loops, after a
    // 10 us run: per loop 2, 3, 2, 3, ... munmaps (floor((k+1) 5/2) -
    // floor(k 5/2)), the syscall on loops 2, 5, 8, ...
    let mut p = rt(r#"{"tasks": {"t": {"loop": 6, "phases": {"a": {"loop": 1,
        "run": 10,
        "munmap": {"run": 0, "pages": 4, "times": 5, "per_loops": 2},
        "syscall": {"lock": "k", "kind": "rwsem_read", "hold": 2, "times": 1, "per_loops": 3}}}}}}"#);
    let t = Time::ZERO;
    let mut munmaps = Vec::new();
    let mut syscalls = Vec::new();
    let mut first = p.step(0, t).1;
    for l in 0..6 {
        assert_eq!(first, Action::Run(Nanos::from_us(10)), "loop {l}");
        let (mut m, mut s) = (0, 0);
        loop {
            let a = p.step(0, t).1;
            if p.stats(0).phase_loops > l {
                first = a;
                break;
            }
            match a {
                Action::Kernel(KernelOp::TlbShootdown { pages: 4, .. }) => m += 1,
                Action::Run(d) if d == Nanos::from_us(2) => s += 1,
                other => panic!("loop {l}: {other:?}"),
            }
        }
        munmaps.push(m);
        syscalls.push(s);
    }
    assert_eq!(munmaps, [2, 3, 2, 3, 2, 3]);
    assert_eq!(syscalls, [0, 0, 1, 0, 0, 1]);
}

#[test]
fn a_flush_in_a_sleeping_lock_section_comes_before_the_release() {
    // The zap's flush inside the read section: a writer asking while the
    // flush is out finds the lock taken.
    let mut p = rt(r#"{"global": {"duration": 1}, "tasks": {
        "z": {"loop": 1, "syscall": {"lock": "m", "kind": "rwsem_read", "hold": 20, "flush": 8}},
        "w": {"loop": 1, "syscall": {"lock": "m", "kind": "rwsem_write", "hold": 5}}}}"#);
    let t = Time::ZERO;
    assert_eq!(p.step(0, t).1, Action::Run(Nanos::from_us(20)));
    assert_eq!(
        p.step(0, t).1,
        Action::Kernel(KernelOp::TlbShootdown {
            pages: 8,
            freed_tables: false
        })
    );
    assert!(
        matches!(
            p.step(1, t).1,
            Action::Kernel(KernelOp::SleepingLockBusy { .. })
        ),
        "the writer waits while the flush's IPIs are out"
    );
}

/// A `put` with `if_waited` 0 wakes a consumer waiting in `get` (one
/// FUTEX_WAKE) and, when none waits, does nothing: no item is kept, so the
/// consumer's next `get` blocks (a plain `put` would have left it an item).
#[test]
fn a_put_if_waited_0_wakes_only_a_waiting_consumer_and_keeps_nothing() {
    let src = r#"{"global": {"duration": 1}, "tasks": {
        "w": {"run": 100, "put": {"queue": "q", "if_waited": 0}, "run1": 100},
        "c": {"get": {"queue": "q", "capacity": 8}, "run": 500}}}"#;
    let us = |n: u64| Time(n * 1000);
    let mut p = rt(src);
    assert_eq!(p.step(0, us(0)).1, Action::Run(Nanos::from_us(100)));
    assert_eq!(p.step(1, us(0)).1, Action::Sleep(None), "c waits");
    // c waits: the put wakes it, then w runs on.
    let (woken, action) = p.step(0, us(100));
    assert_eq!((woken, action), (vec![1], Action::Run(Nanos::from_us(100))));
    assert_eq!(p.take_futex_wakes(), 1);
    assert_eq!(p.step(1, us(100)).1, Action::Run(Nanos::from_us(500)));
    // c runs: w's next put finds nobody waiting and does nothing.
    assert_eq!(p.step(0, us(200)).1, Action::Run(Nanos::from_us(100)));
    let (woken, _) = p.step(0, us(300));
    assert!(woken.is_empty());
    assert_eq!(p.take_futex_wakes(), 0);
    assert_eq!(p.queue_len(QueueId(0)), 0, "no item kept");
    assert_eq!(p.step(1, us(600)).1, Action::Sleep(None), "c waits again");
    // A plain put keeps its item: the consumer's get does not block.
    let mut p = rt(&src.replace(r#", "if_waited": 0"#, ""));
    p.step(0, us(0));
    p.step(0, us(100));
    assert_eq!(p.queue_len(QueueId(0)), 1);
    assert_eq!(p.step(1, us(100)).1, Action::Run(Nanos::from_us(500)));
}

/// A kick (`if_waited` d) wakes a consumer only once it has waited d: a
/// guard's timer before that does nothing and leaves no item.
#[test]
fn a_kick_wakes_a_consumer_only_after_it_waited_its_period() {
    let src = r#"{"global": {"duration": 1}, "tasks": {
        "c": {"get": {"queue": "q", "capacity": 8}, "run": 50},
        "g": {"timer": {"ref": "t", "period": 1000}, "put": {"queue": "q", "if_waited": 1000}}}}"#;
    let us = |n: u64| Time(n * 1000);
    let mut p = rt(src);
    assert_eq!(
        p.step(0, us(400)).1,
        Action::Sleep(None),
        "c waits from 400 us"
    );
    assert_eq!(p.step(1, us(0)).1, Action::Sleep(Some(us(1000))));
    // At 1000 us c has waited 600 us: nothing.
    let (woken, action) = p.step(1, us(1000));
    assert!(woken.is_empty());
    assert_eq!(action, Action::Sleep(Some(us(2000))));
    assert_eq!(p.queue_len(QueueId(0)), 0);
    // At 2000 us it has waited 1600 us: kicked.
    let (woken, _) = p.step(1, us(2000));
    assert_eq!(woken, vec![0]);
    assert_eq!(p.step(0, us(2000)).1, Action::Run(Nanos::from_us(50)));
}
