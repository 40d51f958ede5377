//! A profile folded from trace lines derives a program that the simulator's
//! rt-app loader accepts (provenance included), in which a wait that another
//! recorded thread ended is a wait on that thread's signal, and a wait a
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
    // b waits on its own condition, which a signals; a sleeps 1 ms.
    assert!(
        text.contains(r#""signal"#) && text.contains(r#""c_t1_b""#),
        "{text}"
    );
    assert!(text.contains(r#""wait"#), "{text}");
    assert!(
        text.contains(r#""sleep"#) && text.contains(":1000"),
        "{text}"
    );
    assert!(!text.contains(r#""c_t0_a""#), "nobody signals a: {text}");
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

/// The steady form starts every thread at slot 0 at once: a waker's
/// signals must open its pass, or a thread that waits in every slot (b)
/// waits at time 0 for a signal its waker (a) only sends at the end of its
/// first pass (the derived vips stalled so: every worker waited in slot 0
/// while the signals came last, and only the guards, every 0.2-8 s, ended
/// those waits). The recorded form keeps the end-of-pass placement.
#[test]
fn the_steady_form_opens_each_pass_with_its_rare_signals() {
    use oversub_record::derive::{derive_form, Form};
    let lines = rare_waker_trace();
    let p = feed(10, &lines.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(p.threads[&10].wakes[&11], 4);
    let first_phase = |form| {
        let (prog, _) = derive_form(&p, Some(64), 1, form);
        let v: serde_json::Value = serde_json::to_value(&prog).unwrap();
        let a = &v["tasks"]["t0_a"]["phases"];
        let n = a.as_object().unwrap().len();
        (a["p0"].to_string(), a[format!("p{}", n - 1)].to_string())
    };
    let (first, _) = first_phase(Form::Steady);
    assert!(
        first.contains("c_t1_b"),
        "steady: a signals b in its first slot: {first}"
    );
    let (first, last) = first_phase(Form::Recorded);
    assert!(
        !first.contains("c_t1_b") && last.contains("c_t1_b"),
        "recorded: last: {first} / {last}"
    );
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
