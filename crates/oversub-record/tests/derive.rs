//! A profile folded from trace lines derives a program that the simulator's
//! rt-app loader accepts (provenance included), in which a wait that another
//! recorded thread ended is a `get` from its own queue into which that thread `put`s, and a wait a
//! timer ended is a sleep of the measured length.

use oversub_record::derive::derive;
use oversub_record::profile::Profile;

/// Thread 10 forks 11; 11 waits in futex and 10 wakes it, 50 times; 10
/// sleeps 1 ms in clock_nanosleep each time, ended from interrupt context.
fn trace() -> Vec<String> {
    let mut v = vec![
        "a-10 (10) [000] ..... 1.000000: sched_process_fork: comm=a pid=10 child_comm=b child_pid=11".to_string(),
    ];
    let mut t = 1_000_100u64; // us
    for _ in 0..50 {
        let ts = |us: u64| format!("{}.{:06}", us / 1_000_000, us % 1_000_000);
        v.push(format!("b-11 (10) [001] ..... {}: sys_futex(uaddr: 0x1000, op: 0x80, val: 0x0, utime: 0x0, uaddr2: 0x0, val3: 0x0)", ts(t)));
        v.push(format!("b-11 (10) [001] d..2. {}: sched_switch: prev_comm=b prev_pid=11 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120", ts(t + 1)));
        v.push(format!("a-10 (10) [000] ..... {}: sys_futex(uaddr: 0x1000, op: 0x81, val: 0x1, utime: 0x0, uaddr2: 0x0, val3: 0x0)", ts(t + 20)));
        v.push(format!(
            "a-10 (10) [000] d..3. {}: sched_waking: comm=b pid=11 prio=120 target_cpu=001",
            ts(t + 21)
        ));
        v.push(format!("<idle>-0 (-------) [001] d..2. {}: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=b next_pid=11 next_prio=120", ts(t + 25)));
        v.push(format!(
            "b-11 (10) [001] ..... {}: sys_futex -> 0x0",
            ts(t + 26)
        ));
        v.push(format!(
            "a-10 (10) [000] ..... {}: sys_futex -> 0x1",
            ts(t + 22)
        ));
        v.push(format!("a-10 (10) [000] ..... {}: sys_clock_nanosleep(which_clock: 0x1, flags: 0x0, rqtp: 0x7ff, rmtp: 0x0)", ts(t + 30)));
        v.push(format!("a-10 (10) [000] d..2. {}: sched_switch: prev_comm=a prev_pid=10 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120", ts(t + 31)));
        v.push(format!("<idle>-0 (-------) [000] d.h2. {}: sched_waking: comm=a pid=10 prio=120 target_cpu=000", ts(t + 1031)));
        v.push(format!("<idle>-0 (-------) [000] d..2. {}: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=a next_pid=10 next_prio=120", ts(t + 1033)));
        v.push(format!(
            "a-10 (10) [000] ..... {}: sys_clock_nanosleep -> 0x0",
            ts(t + 1034)
        ));
        t += 1100;
    }
    v
}

#[test]
fn a_derived_program_loads_and_keeps_who_waits_for_whom() {
    let lines = trace();
    let p = feed(10, &lines.iter().map(String::as_str).collect::<Vec<_>>());
    let a = &p.threads[&10];
    let b = &p.threads[&11];
    assert_eq!(b.switches_blocked, 50);
    assert_eq!(a.wakes[&11], 50);
    assert_eq!(a.blocks["sleep"].count(), 50);
    assert_eq!(a.blocks["sleep"].summary().mean_ns, 1_000_000);
    let t = p.totals();
    assert_eq!((t.futex_waits, t.futex_blocked), (50, 50));

    let (prog, derivation) = derive(&p, Some(50), 1);
    let mut text = serde_json::to_string(&prog).unwrap();
    // As `oversub record` writes it: provenance first.
    text = text.replacen(
        '{',
        &format!("{{\"provenance\": {{\"derivation\": {derivation}}},"),
        1,
    );
    let loaded = oversub::workload::rtapp::parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let names: Vec<&str> = loaded
        .program
        .threads
        .iter()
        .map(|t| t.name.as_str())
        .collect();
    assert!(
        names.contains(&"t0_a") && names.contains(&"t1_b"),
        "{names:?}"
    );
    assert!(
        names.contains(&"guard_t1_b"),
        "b waits on a: it has a guard {names:?}"
    );
    assert!(!names.contains(&"guard_t0_a"), "a only sleeps {names:?}");
    // b waits on its own queue, into which a puts; a sleeps 1 ms. No
    // mutex or condition variable is left: the waker takes no lock.
    assert!(
        text.contains(r#""put"#) && text.contains(r#""get"#) && text.contains(r#""q_t1_b""#),
        "{text}"
    );
    let tasks = serde_json::to_value(&prog).unwrap()["tasks"].to_string();
    for k in [r#""lock"#, r#""signal"#, r#""wait"#, r#""unlock"#] {
        assert!(!tasks.contains(k), "{k}: {tasks}");
    }
    assert!(
        text.contains(r#""sleep"#) && text.contains(":1000"),
        "{text}"
    );
    assert!(!text.contains(r#""q_t0_a""#), "nobody wakes a: {text}");
}

/// Thread 10 sleeps 64 times (1 ms, ended from interrupt context) and
/// wakes 11 in every 16th of those cycles; 11 blocks only on 10 (4 times).
fn rare_waker_trace() -> Vec<String> {
    let ts = |us: u64| format!("{}.{:06}", us / 1_000_000, us % 1_000_000);
    let mut v = vec![
        "a-10 (10) [000] ..... 1.000000: sched_process_fork: comm=a pid=10 child_comm=b child_pid=11".to_string(),
    ];
    let mut t = 1_000_100u64;
    for i in 0..64 {
        if i % 16 == 0 {
            v.push(format!("b-11 (10) [001] ..... {}: sys_futex(uaddr: 0x1000, op: 0x80, val: 0x0, utime: 0x0, uaddr2: 0x0, val3: 0x0)", ts(t)));
            v.push(format!("b-11 (10) [001] d..2. {}: sched_switch: prev_comm=b prev_pid=11 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120", ts(t + 1)));
            v.push(format!(
                "a-10 (10) [000] d..3. {}: sched_waking: comm=b pid=11 prio=120 target_cpu=001",
                ts(t + 21)
            ));
            v.push(format!("<idle>-0 (-------) [001] d..2. {}: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=b next_pid=11 next_prio=120", ts(t + 25)));
            v.push(format!(
                "b-11 (10) [001] ..... {}: sys_futex -> 0x0",
                ts(t + 26)
            ));
        }
        v.push(format!("a-10 (10) [000] ..... {}: sys_clock_nanosleep(which_clock: 0x1, flags: 0x0, rqtp: 0x7ff, rmtp: 0x0)", ts(t + 30)));
        v.push(format!("a-10 (10) [000] d..2. {}: sched_switch: prev_comm=a prev_pid=10 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120", ts(t + 31)));
        v.push(format!("<idle>-0 (-------) [000] d.h2. {}: sched_waking: comm=a pid=10 prio=120 target_cpu=000", ts(t + 1031)));
        v.push(format!("<idle>-0 (-------) [000] d..2. {}: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=a next_pid=10 next_prio=120", ts(t + 1033)));
        v.push(format!(
            "a-10 (10) [000] ..... {}: sys_clock_nanosleep -> 0x0",
            ts(t + 1034)
        ));
        t += 1100;
    }
    v
}

/// A rare wakeup is in every slot at its measured rate (a `put` 4 times
/// per 64 loops), inside the burst (a run before and after it), in both
/// forms: the steady form's threads start at slot 0 at once, so a wakeup
/// rounded to the end of a pass (as the old derivation did) left its
/// wakee waiting for a whole pass; and the waker's run after the wakeup is
/// the CPU it has left when the woken thread is placed.
#[test]
fn a_rare_wakeup_is_inside_every_burst_at_its_rate() {
    use oversub_record::derive::{derive_form, Form};
    let lines = rare_waker_trace();
    let p = feed(10, &lines.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(p.threads[&10].wakes[&11], 4);
    for form in [Form::Steady, Form::Recorded] {
        let (prog, _) = derive_form(&p, Some(64), 1, form);
        // Serialized in event order (the put's own object sorted).
        let text = serde_json::to_string(&prog).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let a = v["tasks"]["t0_a"]["phases"].as_object().unwrap();
        let put = r#","put1":{"if_waited":0,"per_loops":64,"queue":"q_t1_b","times":4},"run2":"#;
        assert_eq!(
            text.matches(put).count(),
            a.len(),
            "{form:?}: every phase of a wakes b 4 times per 64 loops between two runs: {text}"
        );
        assert!(a.values().all(|ph| ph["run0"].is_number()), "{form:?}");
    }
}

/// The finished profile of process `root` folded from `lines`.
fn feed(root: u32, lines: &[&str]) -> Profile {
    Profile::from_trace_lines(root, lines.iter().copied()).unwrap()
}

/// A profile.json read back derives the same program as the profile it was
/// written from (Profile::to_json, then Profile::from_json).
#[test]
fn a_profile_json_derives_the_program_its_recording_did() {
    let p = feed(
        10,
        &[
            "sh-10 (10) [000] ..... 1.000000: sched_process_fork: comm=sh pid=10 child_comm=w child_pid=11",
            "sh-10 (10) [000] ..... 1.000010: sys_futex(uaddr: 1000, op: 80, val: 0, utime: 0, uaddr2: 0, val3: 0)",
            "sh-10 (10) [000] d..2. 1.000020: sched_switch: prev_comm=sh prev_pid=10 prev_prio=120 prev_state=S ==> next_comm=w next_pid=11 next_prio=120",
            "w-11 (10) [000] ..... 1.000100: sys_futex(uaddr: 1000, op: 81, val: 1, utime: 0, uaddr2: 0, val3: 0)",
            "w-11 (10) [000] d..3. 1.000110: sched_waking: comm=sh pid=10 prio=120 target_cpu=000",
            "w-11 (10) [000] ..... 1.000120: sys_sched_yield()",
            "w-11 (10) [000] ..... 1.000130: sys_sched_yield -> 0x0",
            "w-11 (10) [000] d..2. 1.000200: sched_switch: prev_comm=w prev_pid=11 prev_prio=120 prev_state=S ==> next_comm=sh next_pid=10 next_prio=120",
            "sh-10 (10) [000] ..... 1.000210: sys_futex -> 0x0",
            "sh-10 (10) [000] d.h2. 1.000900: sched_waking: comm=w pid=11 prio=120 target_cpu=000",
            "sh-10 (10) [000] d..2. 1.001000: sched_switch: prev_comm=sh prev_pid=10 prev_prio=120 prev_state=R ==> next_comm=w next_pid=11 next_prio=120",
        ],
    );
    let j = p.to_json(Some(4));
    let q = Profile::from_json(&j).unwrap();
    assert_eq!(q.first_ns, p.first_ns);
    assert_eq!(q.threads[&11].syscall_count("sched_yield"), 1);
    let a = derive(&p, Some(4), 3);
    let b = derive(&q, Some(4), 3);
    assert_eq!(
        serde_json::to_value(&a.0).unwrap(),
        serde_json::to_value(&b.0).unwrap()
    );
    assert_eq!(a.1, b.1);
    // Every derived thread sleeps with 1 ns of slack (its sleeps replay
    // measured blocked times), and the program parses as rt-app.
    let text = serde_json::to_string(&a.0).unwrap();
    let prog = oversub::workload::rtapp::parse(&text).unwrap().program;
    assert!(!prog.threads.is_empty());
    for t in prog
        .threads
        .iter()
        .filter(|t| !t.name.starts_with("guard_"))
    {
        assert_eq!(t.timer_slack, Some(oversub::engine::Nanos(1)), "{}", t.name);
    }
    // A broken file names its field.
    let mut bad = j.clone();
    bad["threads"][1]["woken_by"][0]["waker"] = serde_json::json!("cpu:3");
    let e = Profile::from_json(&bad).err().unwrap();
    assert!(
        e.starts_with("threads[1].woken_by[0].waker: \"cpu:3\""),
        "{e}"
    );
}
