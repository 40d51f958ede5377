//! Unit tests of the rt-app JSON front end (rtapp.rs).

use super::*;
use crate::workload::ir::{CounterId, Event, KlockId, QueueId, ThreadId};

fn prog(src: &str) -> Program {
    parse(src).unwrap_or_else(|e| panic!("{e}")).program
}

fn err(src: &str) -> String {
    parse(src).unwrap_err().to_string()
}

#[test]
fn provenance_is_accepted_as_documentation_and_must_be_an_object() {
    let with = prog(
        r#"{"provenance": {"command": "hackbench", "derivation": {"run": "mean burst"}},
            "global": {"duration": 1}, "tasks": {"t": {"run": 10, "sleep": 5}}}"#,
    );
    let without = prog(r#"{"global": {"duration": 1}, "tasks": {"t": {"run": 10, "sleep": 5}}}"#);
    assert_eq!(with, without);
    let e = parse(r#"{"provenance": 3, "global": {"duration": 1}, "tasks": {"t": {"run": 1}}}"#)
        .unwrap_err();
    assert_eq!(e.field, "provenance", "{e}");
}

#[test]
fn single_phase_task_loops_forever_with_phase_loop() {
    let p = prog(
        r#"{"global": {"duration": 2}, "tasks": {"t": {"loop": 3, "run": 1000, "sleep0": 500, "run1": 7}}}"#,
    );
    assert_eq!(p.duration, Some(Nanos::from_secs(2)));
    let t = &p.threads[0];
    assert_eq!(t.loops, None);
    assert_eq!(t.phases.len(), 1);
    assert_eq!(t.phases[0].loops, Some(3));
    // A task-level loop of -1 without phases: the phase repeats forever.
    let p = prog(r#"{"global": {"duration": 1}, "tasks": {"t": {"loop": -1, "run": 1}}}"#);
    assert_eq!(p.threads[0].phases[0].loops, None);
    // With duration -1, a phase that loops forever is refused.
    assert!(
        parse(r#"{"tasks": {"t": {"loop": 1, "phases": {"a": {"loop": -1, "run": 1}}}}}"#)
            .unwrap_err()
            .to_string()
            .contains("forever")
    );
    assert_eq!(
        t.phases[0].events,
        [
            Event::Run(Nanos::from_us(1000)),
            Event::Sleep(Nanos::from_us(500)),
            Event::Run(Nanos::from_us(7))
        ]
    );
}

#[test]
fn phases_instances_resources_and_timers() {
    let p = prog(
        r#"{
        /* two workers and a producer */
        "global": {"duration": -1, "calibration": "CPU0", "log_size": 0},
        "tasks": {
          "w": {"instance": 2, "priority": 5, "cpus": [1, 0, 1], "loop": 4, "phases": {
              "a": {"lock": "m", "wait": {"ref": "c", "mutex": "m"}, "unlock": "m", "run": 10},
              "b": {"loop": 2, "timer": {"ref": "unique", "period": 100}, "barrier": "B"}}},
          "p": {"loop": 1, "phases": {"x": {"lock": "m", "broad": "c", "unlock": "m", "barrier": "B",
                "timer": {"ref": "shared", "period": 50, "mode": "absolute"}}}}
        }}"#,
    );
    assert_eq!(p.duration, None);
    assert!(p.finite());
    let names: Vec<&str> = p.threads.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["w.0", "w.1", "p"]);
    assert_eq!(p.threads[0].nice, 5);
    assert_eq!(p.threads[0].cpus, Some(vec![0, 1]));
    assert_eq!(p.threads[1].loops, Some(4));
    assert_eq!(p.mutexes, ["m"]);
    assert_eq!(p.conds, ["c"]);
    // Three references: two instances of w and p.
    assert_eq!(p.barriers, [("B".to_string(), 3)]);
    // "unique" timers are per thread, others shared.
    assert_eq!(p.timers, ["unique@w.0", "unique@w.1", "shared"]);
    assert_eq!(p.fidelity.len(), 1, "{:?}", p.fidelity);
    assert_eq!(p.fidelity[0].at, "global.calibration");
}

#[test]
fn suspend_resume_lower_to_condition_variables() {
    let p = prog(
        r#"{"global": {"duration": 1}, "tasks": {"a": {"run": 1, "suspend": ""}, "b": {"run": 1, "resume": "a"}}}"#,
    );
    let a = &p.threads[0].phases[0].events;
    assert_eq!(a.len(), 4);
    assert!(matches!(a[2], Event::Wait { .. }));
    assert!(matches!(p.threads[1].phases[0].events[2], Event::Broad(_)));
    assert_eq!(p.conds, ["suspend:a"]);
}

#[test]
fn extensions_parse() {
    let p = prog(
        r#"{"global": {"duration": 1}, "tasks": {"t": {"syscall": {"lock": "dcache", "run": 2, "hold": 0.5},
           "munmap": {"run": 3, "pages": 16}, "smp_call": {"targets": 3, "handler": 1.5}}}}"#,
    );
    assert!(p.uses_kernel_extensions());
    assert_eq!(
        p.threads[0].phases[0].events,
        [
            Event::Syscall {
                lock: KlockId(0),
                run: Nanos::from_us(2),
                hold: Nanos(500)
            },
            Event::Munmap {
                run: Nanos::from_us(3),
                pages: 16,
                freed_tables: false
            },
            Event::SmpCall {
                targets: 3,
                handler: Nanos(1500),
                wait: true
            }
        ]
    );
}

#[test]
fn queues_parse_with_one_capacity_and_bad_ones_name_the_field() {
    let p = prog(
        r#"{"global": {"duration": 1}, "tasks": {
          "p": {"run": 1, "put": {"queue": "q", "items": 20, "capacity": 1048576}},
          "c": {"get": {"queue": "q", "items": 20, "capacity": 1048576}, "run": 1, "get1": {"queue": "r", "capacity": 4}},
          "d": {"put": {"queue": "r"}, "run": 1}}}"#,
    );
    assert_eq!(p.queues, [("q".to_string(), 1 << 20), ("r".to_string(), 4)]);
    assert_eq!(
        p.threads[1].phases[0].events[0],
        Event::Get {
            queue: QueueId(0),
            items: 20
        }
    );
    assert_eq!(
        p.threads[2].phases[0].events[0],
        Event::Put {
            queue: QueueId(1),
            items: 1,
            if_waited: None
        }
    );
    assert!(!p.uses_kernel_extensions(), "queues are user-space objects");
    for (src, want) in [
        (
            r#"{"global": {"duration": 1}, "tasks": {"t": {"put": {"queue": "q"}, "run": 1}}}"#,
            "tasks.t.put.capacity: queue \"q\" has no capacity",
        ),
        (
            r#"{"global": {"duration": 1}, "tasks": {"t": {"put": {"queue": "q", "capacity": 8}, "get": {"queue": "q", "capacity": 9}}}}"#,
            "tasks.t.get.capacity: 9: queue \"q\" has capacity 8 at tasks.t.put.capacity",
        ),
        (
            r#"{"global": {"duration": 1}, "tasks": {"t": {"put": {"queue": "q", "items": 0, "capacity": 8}}}}"#,
            "tasks.t.put.items: 0 is out of range: allowed 1 ..= 4294967295 items",
        ),
        (
            // One past u32: refused, not wrapped to a batch of 0.
            r#"{"global": {"duration": 1}, "tasks": {"t": {"put": {"queue": "q", "items": 4294967296, "capacity": 8}}}}"#,
            "tasks.t.put.items: 4294967296 is out of range: allowed 1 ..= 4294967295 items",
        ),
        (
            r#"{"global": {"duration": 1}, "tasks": {"t": {"put": {"queue": "q", "items": 9, "capacity": 8}}}}"#,
            "a batch of 9 items on queue \"q\" of capacity 8: allowed 1 ..= 8",
        ),
        (
            r#"{"global": {"duration": 1}, "tasks": {"t": {"put": {"queue": "q", "capacity": 0}}}}"#,
            "tasks.t.put.capacity: 0 is out of range",
        ),
        (
            r#"{"global": {"duration": 1}, "tasks": {"t": {"get": {"queue": "q", "capacity": 2, "batch": 1}}}}"#,
            "tasks.t.get.batch: unknown key: allowed queue, items, capacity",
        ),
        (
            // A rate and a kick are a put's only.
            r#"{"global": {"duration": 1}, "tasks": {"t": {"get": {"queue": "q", "capacity": 2, "if_waited": 0}}}}"#,
            "tasks.t.get.if_waited: unknown key: allowed queue, items, capacity",
        ),
        (
            r#"{"global": {"duration": 1}, "tasks": {"t": {"put": {"queue": "q", "capacity": 2, "times": 0}}}}"#,
            "tasks.t.put.times: 0 is out of range",
        ),
        (
            r#"{"global": {"duration": 1}, "tasks": {"t": {"get": {"items": 1}}}}"#,
            "tasks.t.get.queue: required",
        ),
    ] {
        let e = err(src);
        assert!(e.contains(want), "{e} (wanted {want})");
        assert_eq!(e.lines().count(), 1, "{e}");
    }
}

#[test]
fn counts_parse_onto_a_shared_counter_and_bad_ones_name_the_field() {
    let p = prog(
        r#"{"global": {"duration": 1}, "tasks": {
          "w": {"instance": 2, "count": {"counter": "alloc", "every": 60, "first": 61, "queue": "go"}, "run": 1},
          "v": {"count": {"counter": "alloc", "every": 4, "queue": "go", "items": 2}, "run": 1},
          "r": {"get": {"queue": "go", "capacity": 8}, "run": 1}}}"#,
    );
    assert_eq!(p.counters, ["alloc".to_string()], "one counter, shared");
    assert_eq!(p.queues, [("go".to_string(), 8)]);
    let count = |t: usize| p.threads[t].phases[0].events[0];
    assert_eq!(
        count(0),
        Event::Count {
            counter: CounterId(0),
            every: 60,
            first: 61,
            queue: QueueId(0),
            items: 1
        }
    );
    assert_eq!(count(1), count(0), "instances share the counter");
    // `first` defaults to `every`: the counts 4, 8, ... put.
    assert_eq!(
        count(2),
        Event::Count {
            counter: CounterId(0),
            every: 4,
            first: 4,
            queue: QueueId(0),
            items: 2
        }
    );
    assert!(
        !p.uses_kernel_extensions(),
        "a counter is a user-space object"
    );
    let task = |count: &str| {
        format!(
            r#"{{"global": {{"duration": 1}}, "tasks": {{"t": {{"count": {count}, "run": 1, "get": {{"queue": "q", "capacity": 4}}}}}}}}"#
        )
    };
    for (count, want) in [
        (
            r#"{"counter": "c", "queue": "q"}"#,
            "tasks.t.count.every: required",
        ),
        (
            r#"{"every": 2, "queue": "q"}"#,
            "tasks.t.count.counter: required",
        ),
        (
            r#"{"counter": "c", "every": 2}"#,
            "tasks.t.count.queue: required",
        ),
        (
            r#"{"counter": "c", "every": 0, "queue": "q"}"#,
            "tasks.t.count.every: 0 is out of range: allowed 1 ..= 4294967295 counts",
        ),
        (
            r#"{"counter": "c", "every": 2, "first": 4294967296, "queue": "q"}"#,
            "tasks.t.count.first: 4294967296 is out of range: allowed 1 ..= 4294967295 counts",
        ),
        (
            r#"{"counter": "c", "every": 2, "queue": "q", "items": 5}"#,
            "a batch of 5 items on queue \"q\" of capacity 4: allowed 1 ..= 4",
        ),
        (
            r#"{"counter": "c", "every": 2, "queue": "q", "capacity": 4}"#,
            "tasks.t.count.capacity: unknown key: allowed counter, every, first, queue, items",
        ),
        (
            r#"{"counter": 3, "every": 2, "queue": "q"}"#,
            "tasks.t.count.counter:",
        ),
    ] {
        let e = err(&task(count));
        assert!(e.contains(want), "{e} (wanted {want})");
        assert_eq!(e.lines().count(), 1, "{e}");
    }
    // The queue a count puts into needs a capacity from a put or get.
    let e = err(
        r#"{"global": {"duration": 1}, "tasks": {"t": {"count": {"counter": "c", "every": 2, "queue": "g"}, "run": 1}}}"#,
    );
    assert!(
        e.contains("tasks.t.count.capacity: queue \"g\" has no capacity"),
        "{e}"
    );
}

#[test]
fn task_timer_slack_extension_parses_and_bad_values_name_the_field() {
    let p = prog(
        r#"{"global": {"duration": 1}, "tasks": {
            "a": {"oversub": {"timer_slack": 0.001}, "loop": 1, "phases": {"p": {"run": 1, "sleep": 5}}},
            "b": {"oversub": {"timer_slack": 300}, "run": 1, "sleep": 5},
            "c": {"run": 1, "sleep": 5}}}"#,
    );
    let slack: Vec<_> = p.threads.iter().map(|t| t.timer_slack).collect();
    assert_eq!(slack, vec![Some(Nanos(1)), Some(Nanos(300_000)), None]);
    for (ext, want) in [
        (
            r#"{"timer_slack": 0}"#,
            "tasks.t.oversub.timer_slack: 0 is out of range: allowed 0.001 ..= 1000000 us",
        ),
        (
            r#"{"timer_slack": 0.0004}"#,
            "tasks.t.oversub.timer_slack: 0.0004 is out of range",
        ),
        (
            r#"{"timer_slack": 1000001}"#,
            "tasks.t.oversub.timer_slack: 1000001 is out of range",
        ),
        (
            r#"{"timer_slack": "1ns"}"#,
            "tasks.t.oversub.timer_slack: expected a number of us",
        ),
        (
            r#"{"slack": 1}"#,
            "tasks.t.oversub.slack: unknown key: allowed timer_slack, ops_per_loop",
        ),
        (
            r#"{"timer_slack": 1, "timer_slack": 2}"#,
            "tasks.t.oversub.timer_slack: repeated key",
        ),
        ("3", "tasks.t.oversub"),
    ] {
        for t in [
            format!(r#"{{"oversub": {ext}, "run": 1}}"#),
            format!(r#"{{"oversub": {ext}, "loop": 1, "phases": {{"p": {{"run": 1}}}}}}"#),
        ] {
            let e = err(&format!(
                r#"{{"global": {{"duration": 1}}, "tasks": {{"t": {t}}}}}"#
            ));
            assert!(e.contains(want), "{e} (wanted {want})");
            assert_eq!(e.lines().count(), 1, "{e}");
        }
    }
}

#[test]
fn errors_are_one_line_and_name_the_field() {
    for (src, want) in [
        (
            r#"{"tasks": {"t": {"run": 1, "slep": 2}}, "global": {"duration": 1}}"#,
            "tasks.t.slep: unknown key",
        ),
        (
            r#"{"tasks": {"t": {"run": 1, "run": 2}}, "global": {"duration": 1}}"#,
            "tasks.t.run: repeated key",
        ),
        (
            r#"{"tasks": {"t": {"run": -1}}, "global": {"duration": 1}}"#,
            "tasks.t.run: -1 is out of range",
        ),
        (
            r#"{"tasks": {"t": {"run": 1, "policy": "SCHED_FIFO"}}, "global": {"duration": 1}}"#,
            "SCHED_FIFO is not modelled",
        ),
        (
            r#"{"tasks": {"t": {"mem": 100}}, "global": {"duration": 1}}"#,
            "tasks.t.mem: mem and iorun are not modelled",
        ),
        (r#"{"tasks": {"t": {"run": 1}}}"#, "global.duration: -1"),
        (
            r#"{"tasks": {"t": {"unlock": "m"}}, "global": {"duration": 1}}"#,
            "does not hold",
        ),
        (
            r#"{"tasks": {"t": {"lock": "m", "run": 1}}, "global": {"duration": 1}}"#,
            "still held",
        ),
        (
            r#"{"tasks": {"t": {"run": 1, "barrier": "b"}}, "global": {"duration": 1}}"#,
            "needs at least 2",
        ),
        (
            r#"{"tasks": {"t": {"timer": {"ref": "x"}}}, "global": {"duration": 1}}"#,
            "tasks.t.timer.period: required",
        ),
        (
            r#"{"tasks": {"t": {"loop": 2, "phases": {"p": {"run": 1}}, "run": 3}}}"#,
            "tasks.t.run: unknown key beside phases",
        ),
        (
            r#"{"tasks": {"t": {"phases": {"p": {"run": 1, "cpus": [1]}}}}, "global": {"duration": 1}}"#,
            "phase-level affinity",
        ),
        (r#"{"tasks": {}, "global": {"duration": 1}}"#, "no tasks"),
        (r#"{"task": {}}"#, "task: unknown key"),
        (
            "{\"tasks\": \n {\"t\": {\"run\": 1 \"sleep\": 2}}}",
            "line 2 column",
        ),
    ] {
        let e = err(src);
        assert!(e.contains(want), "{src}\n  -> {e}\n  want {want}");
        assert!(!e.contains('\n'), "{e}");
    }
}

#[test]
fn prefix_rule_matches_rtapp() {
    assert_eq!(event_kind("runtime3"), Some("runtime"));
    assert_eq!(event_kind("run_x"), Some("run"));
    assert_eq!(event_kind("unlock2"), Some("unlock"));
    assert_eq!(event_kind("synchronise"), Some("sync"));
    assert_eq!(event_kind("syscall"), Some("syscall"));
    assert_eq!(event_kind("smp_call1"), Some("smp_call"));
    assert_eq!(event_kind("loop"), None);
    // No extension is prefixed by an rt-app event (rt-app would read it).
    for e in EXT_EVENTS {
        assert!(!EVENTS.iter().any(|r| e.starts_with(r)), "{e}");
    }
}

/// `irqsave` is a kernel spinlock's attribute: given once, it holds for
/// every event naming the lock; absent, the lock is a `spin_lock()`.
#[test]
fn irqsave_is_an_attribute_of_the_lock() {
    let p = prog(
        r#"{"global": {"duration": 1}, "tasks": {"t": {
            "syscall": {"lock": "zone", "run": 2, "hold": 1, "irqsave": true},
            "syscall1": {"lock": "dcache", "run": 2, "hold": 1},
            "syscall2": {"irqsave": true, "lock": "zone", "run": 2, "hold": 1}}}}"#,
    );
    assert_eq!(p.klocks, ["zone", "dcache"]);
    assert_eq!(p.klock_irqsave, [true, false]);
}

/// Refused with one line naming the field: two ways for one lock, irqsave
/// on a sleeping lock, and a `zone` spinlock that does not say (files from
/// before the attribute meant irqsave by that name).
#[test]
fn irqsave_conflicts_and_the_old_zone_rule_are_refused() {
    let e = parse(
        r#"{"global": {"duration": 1}, "tasks": {"t": {
            "syscall": {"lock": "pi", "run": 2, "hold": 1, "irqsave": true},
            "syscall1": {"lock": "pi", "run": 2, "hold": 1, "irqsave": false}}}}"#,
    )
    .unwrap_err();
    assert!(e.field.ends_with("syscall1.irqsave"), "{e}");
    assert!(e.to_string().contains("one lock is taken one way"), "{e}");
    let e = parse(
        r#"{"global": {"duration": 1}, "tasks": {"t": {
            "syscall": {"lock": "m", "kind": "mutex", "run": 2, "hold": 1, "irqsave": true}}}}"#,
    )
    .unwrap_err();
    assert!(e.field.ends_with("syscall.irqsave"), "{e}");
    let e = err(r#"{"global": {"duration": 1}, "tasks": {"t": {
            "syscall": {"lock": "zone", "run": 2, "hold": 1}}}}"#);
    assert!(e.contains("\"irqsave\": true (or false)"), "{e}");
    assert!(!e.contains('\n'), "{e}");
}

#[test]
fn a_forked_task_is_copied_per_parent_and_started_by_its_forks() {
    let p = prog(
        r#"{"global": {"duration": 1}, "tasks": {
            "job": {"instance": 2, "run": 1, "vfork": "sh"},
            "sh": {"run": 2, "fork": "gcc", "fork1": "rm"},
            "gcc": {"vfork": "cc1", "vfork1": "cc1"},
            "cc1": {"run": 100}, "rm": {"run": 3}}}"#,
    );
    let names: Vec<&str> = p.threads.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "job.0",
            "job.1",
            "job.0/sh",
            "job.1/sh",
            "job.0/sh/gcc",
            "job.0/sh/rm",
            "job.1/sh/gcc",
            "job.1/sh/rm",
            "job.0/sh/gcc/cc1",
            "job.1/sh/gcc/cc1",
        ]
    );
    let id = |n: &str| ThreadId(names.iter().position(|x| *x == n).unwrap() as u32);
    assert_eq!(p.threads[id("job.1/sh").idx()].parent, Some(id("job.1")));
    assert_eq!(p.threads[id("job.1/sh").idx()].loops, Some(1));
    assert!(p.threads[0].parent.is_none() && p.uses_fork());
    assert_eq!(
        p.threads[id("job.1").idx()].phases[0].events[1],
        Event::Fork {
            child: id("job.1/sh"),
            vfork: true
        }
    );
    // One child per (parent, task): gcc's two forks of cc1 share it.
    let g = &p.threads[id("job.0/sh/gcc").idx()].phases[0].events;
    assert_eq!(g[0], g[1]);
    assert!(
        !p.uses_kernel_extensions(),
        "fork is a scheduler path: host-only runs it"
    );
}

#[test]
fn bad_forks_are_refused_in_one_line() {
    let cases = [
        (
            r#"{"global": {"duration": 1}, "tasks": {"a": {"run": 1, "fork": "nope"}}}"#,
            "tasks.a.fork: \"nope\": no such task",
        ),
        (
            r#"{"global": {"duration": 1}, "tasks": {"a": {"run": 1, "fork": "b"}, "b": {"run": 1, "fork": "c"}, "c": {"run": 1, "fork": "b"}}}"#,
            "forks form a cycle (a -> b -> c -> b)",
        ),
        (
            r#"{"global": {"duration": 1}, "tasks": {"a": {"run": 1, "fork": "b"}, "b": {"instance": 2, "run": 1}}}"#,
            "tasks.b.instance: a forked task",
        ),
        (
            r#"{"global": {"duration": 1}, "tasks": {"a": {"run": 1, "fork": "b"}, "b": {"delay": 5, "run": 1}}}"#,
            "tasks.b.delay: a forked task starts when it is forked",
        ),
        (
            r#"{"global": {"duration": 1}, "tasks": {"a": {"run": 1, "fork": "b"}, "b": {"loop": -1, "run": 1}}}"#,
            "tasks.b.loop: -1",
        ),
        (
            r#"{"global": {"duration": 1}, "tasks": {"a": {"run": 1, "fork": "a"}}}"#,
            "every task is forked by another",
        ),
        (
            r#"{"global": {"duration": 1}, "tasks": {"a": {"run": 1, "fork": 3}}}"#,
            "tasks.a.fork",
        ),
    ];
    for (src, want) in cases {
        let e = err(src);
        assert!(e.contains(want), "{src}\n  gave: {e}\n  want: {want}");
        assert!(!e.contains('\n'), "one line: {e}");
    }
    // A chain deeper than the bound.
    let mut tasks = String::from(r#""t0": {"run": 1, "fork": "t1"}"#);
    for i in 1..=fork::MAX_FORK_DEPTH {
        tasks.push_str(&format!(r#", "t{i}": {{"run": 1, "fork": "t{}"}}"#, i + 1));
    }
    tasks.push_str(&format!(
        r#", "t{}": {{"run": 1}}"#,
        fork::MAX_FORK_DEPTH + 1
    ));
    let e = err(&format!(
        r#"{{"global": {{"duration": 1}}, "tasks": {{{tasks}}}}}"#
    ));
    assert!(e.contains("allowed at most 16"), "{e}");
}

/// `Program::validate`'s fork rules (the interpreter's contract): a fork
/// names a child of the forking thread, a child runs once per fork, and
/// parents form no cycle.
#[test]
fn validate_refuses_forks_of_non_children_and_parent_cycles() {
    let ok = prog(
        r#"{"global": {"duration": 1}, "tasks": {"a": {"run": 1, "fork": "b"}, "b": {"run": 2}}}"#,
    );
    assert!(ok.validate().is_ok());
    let mut p = ok.clone();
    p.threads[1].parent = None;
    assert!(p
        .validate()
        .unwrap_err()
        .contains("not a child process of this thread"));
    let mut p = ok.clone();
    p.threads[1].loops = None;
    assert!(p.validate().unwrap_err().contains("once per fork"));
    let mut p = ok.clone();
    p.threads[0].parent = Some(ThreadId(1));
    assert!(p.validate().unwrap_err().contains("cycle"));
    let mut p = ok;
    p.threads[0].parent = Some(ThreadId(7));
    assert!(p.validate().unwrap_err().contains("not another thread"));
}

#[test]
fn repeats_and_flushes_parse_and_bad_ones_name_the_field() {
    let p = prog(
        r#"{"global": {"duration": 1}, "tasks": {"t": {"run": 10,
        "syscall": {"lock": "m", "kind": "rwsem_read", "hold": 2, "flush": 1, "times": 7, "per_loops": 3},
        "munmap": {"run": 0, "per_loops": 4}}}}"#,
    );
    assert_eq!(
        p.threads[0].phases[0].events[1..],
        [
            Event::Repeat {
                times: 7,
                per_loops: 3
            },
            Event::SleepingLock {
                lock: KlockId(0),
                mode: crate::workload::ir::SleepMode::Read,
                run: Nanos::ZERO,
                hold: Nanos::from_us(2),
                flush: 1
            },
            Event::Repeat {
                times: 1,
                per_loops: 4
            },
            Event::Munmap {
                run: Nanos::ZERO,
                pages: 1,
                freed_tables: false
            },
        ]
    );
    let e = err(
        r#"{"global": {"duration": 1}, "tasks": {"t": {"run": 1, "syscall": {"lock": "k", "hold": 1, "flush": 1}}}}"#,
    );
    assert!(
        e.contains("tasks.t.syscall.flush") && e.contains("allowed only with kind"),
        "{e}"
    );
    let e = err(
        r#"{"global": {"duration": 1}, "tasks": {"t": {"run": 1, "munmap": {"run": 1, "times": 0}}}}"#,
    );
    assert!(e.contains("tasks.t.munmap.times: 0 is out of range"), "{e}");
    let e = err(
        r#"{"global": {"duration": 1}, "tasks": {"t": {"run": 1, "munmap": {"run": 1, "times": 200001, "per_loops": 2}}}}"#,
    );
    assert!(
        e.contains("tasks.t.munmap.times") && e.contains("at most 100000 per loop"),
        "{e}"
    );
    let e = err(
        r#"{"global": {"duration": 1}, "tasks": {"t": {"run": 1, "syscall": {"lock": "k", "hold": 0, "times": 2}}}}"#,
    );
    assert!(e.contains("a repeat applies to the next event"), "{e}");
    // A repeated event that may not run in a loop does not make it take time.
    let e = err(
        r#"{"global": {"duration": 1}, "tasks": {"t": {"munmap": {"run": 5, "times": 1, "per_loops": 2}}}}"#,
    );
    assert!(e.contains("without advancing simulated time"), "{e}");
}

#[test]
fn a_long_object_names_its_first_repeated_key() {
    // More keys than the linear check takes: the hashed one must name the
    // first key that repeats an earlier one (run3 at place 21), not a later
    // repeat (run1 at 22) nor the first of the pair.
    let mut events: Vec<String> = (0..20).map(|i| format!(r#""run{i}": 1"#)).collect();
    events.push(r#""run3": 2"#.into());
    events.push(r#""run1": 2"#.into());
    let src = format!(
        r#"{{"global": {{"duration": 1}}, "tasks": {{"t": {{"loop": 1, "phases": {{"p": {{{}}}}}}}}}}}"#,
        events.join(", ")
    );
    let e = parse(&src).unwrap_err();
    assert_eq!(e.field, "tasks.t.phases.p.run3", "{e}");
    assert!(e.to_string().contains("repeated key"), "{e}");
}

#[test]
fn instances_without_timers_or_barriers_share_their_first_phases() {
    // The shared copy must be what each instance would have read: the same
    // events and resources, notes kept once.
    let p = parse(
        r#"{"global": {"duration": 1}, "tasks": {
              "w": {"instance": 3, "loop": -1, "phases": {
                "a": {"lock": "m", "runtime": 5, "unlock": "m",
                      "syscall": {"lock": "mmap_lock", "kind": "rwsem_read", "run": 1.5, "hold": 2}},
                "b": {"put": {"queue": "q", "capacity": 4}, "get": {"queue": "q"}, "sleep": 3}}}}}"#,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let p = p.program;
    let t = &p.threads;
    assert_eq!(t.len(), 3);
    assert_eq!(t[1].phases, t[0].phases);
    assert_eq!(t[2].phases, t[0].phases);
    assert_eq!(t[2].name, "w.2");
    assert_eq!(t[0].phases[0].events.len(), 4);
    assert_eq!(p.mutexes, ["m"]);
    let runtime_notes = p
        .fidelity
        .iter()
        .filter(|n| n.at.ends_with(".runtime"))
        .count();
    assert_eq!(runtime_notes, 1, "{:?}", p.fidelity);
}
