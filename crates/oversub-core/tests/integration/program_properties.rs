//! Property tests of the rt-app front end and the program interpreter: no
//! input makes the parser panic; every program it accepts is valid and runs
//! on the simulated host with the scheduler invariants checked after every
//! event, deterministically.

use oversub::scenario::rtapp::scenario;
use proptest::prelude::*;

/// One random event of a phase, as rt-app JSON (key, value). Mutex and
/// condition use is kept well-formed only some of the time on purpose.
fn event(kind: u8, a: u16, well_formed: bool) -> Vec<(String, String)> {
    let m = format!("\"m{}\"", a % 2);
    let c = format!("\"c{}\"", a % 2);
    match kind % 10 {
        0 => vec![("run".into(), (a % 3000).to_string())],
        1 => vec![("sleep".into(), (a % 3000).to_string())],
        2 => vec![(
            "timer".into(),
            format!(
                "{{\"ref\": \"t{}\", \"period\": {}}}",
                a % 3,
                100 + a % 5000
            ),
        )],
        3 if well_formed => vec![
            ("lock".into(), m.clone()),
            ("run".into(), (a % 500).to_string()),
            ("unlock".into(), m),
        ],
        3 => vec![("unlock".into(), m)],
        4 if well_formed => vec![
            ("lock".into(), m.clone()),
            ("wait".into(), format!("{{\"ref\": {c}, \"mutex\": {m}}}")),
            ("unlock".into(), m),
        ],
        4 => vec![("wait".into(), format!("{{\"ref\": {c}, \"mutex\": {m}}}"))],
        5 => vec![("signal".into(), c)],
        6 => vec![("broad".into(), c)],
        7 => vec![("yield".into(), "\"\"".into())],
        8 => vec![("barrier".into(), format!("\"b{}\"", a % 2))],
        // Queues (extension): a batch above the capacity is refused.
        _ => vec![(
            if a % 2 == 0 { "put" } else { "get" }.into(),
            format!(
                "{{\"queue\": \"q{}\", \"items\": {}, \"capacity\": 8}}",
                a % 3,
                if well_formed { 1 + a % 3 } else { 9 }
            ),
        )],
    }
}

fn program(tasks: &[(u8, Vec<(u8, u16)>)], well_formed: bool, cpus: u8) -> String {
    let mut ts = Vec::new();
    for (i, (inst, evs)) in tasks.iter().enumerate() {
        let mut kv = Vec::new();
        let mut n = 0;
        for &(k, a) in evs {
            for (key, v) in event(k, a, well_formed) {
                kv.push(format!("\"{key}{n}\": {v}"));
                n += 1;
            }
        }
        // Every thread also runs, so that a loop always uses CPU time.
        kv.push(format!("\"run{n}\": 50"));
        ts.push(format!(
            "\"t{i}\": {{\"instance\": {}, \"cpus\": [{}], {}}}",
            1 + inst % 3,
            i as u8 % cpus,
            kv.join(", ")
        ));
    }
    format!(
        "{{\"oversub\": {{\"cpus\": {cpus}}}, \"global\": {{\"duration\": 1}}, \"tasks\": {{{}}}}}",
        ts.join(", ")
    )
}

proptest! {
    #![proptest_config(crate::common::proptest_config(32))]

    #[test]
    fn parser_never_panics_on_arbitrary_text(s in "\\PC{0,300}") {
        let _ = scenario("p.json", &s);
    }

    #[test]
    fn parser_never_panics_on_mutated_programs(
        tasks in prop::collection::vec((any::<u8>(), prop::collection::vec((any::<u8>(), any::<u16>()), 1..6)), 1..4),
        cut in any::<prop::sample::Index>(),
        byte in any::<u8>(),
    ) {
        let src = program(&tasks, true, 2);
        let mut b = src.into_bytes();
        let i = cut.index(b.len());
        b[i] = byte;
        let s = String::from_utf8_lossy(&b);
        if let Err(e) = scenario("p.json", &s) {
            prop_assert!(!e.to_string().contains('\n'));
        }
    }

    #[test]
    fn accepted_programs_run_with_invariants_and_deterministically(
        tasks in prop::collection::vec((any::<u8>(), prop::collection::vec((any::<u8>(), any::<u16>()), 1..6)), 1..4),
        well_formed in any::<bool>(),
        cpus in 1u8..4,
    ) {
        let src = program(&tasks, well_formed, cpus);
        let Ok(sc) = scenario("p.json", &src) else {
            // Refused (a lone unlock, a one-user barrier...): fine.
            return Ok(());
        };
        prop_assert!(sc.program.as_ref().unwrap().validate().is_ok());
        let run = || {
            let mut sim = oversub::sim::Simulator::new(&sc);
            sim.set_check_invariants(true);
            let mut r = sim.run_polled(oversub::engine::Nanos::from_ms(50), &mut |_| true).expect("the run finishes");
            r.wall_ns = 0;
            r.to_json()
        };
        prop_assert_eq!(run(), run());
    }
}
