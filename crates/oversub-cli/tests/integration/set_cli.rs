//! `oversub run|check FILE --set KEY=VALUE`: overrides by dotted path, the
//! same one-line errors as in a file (exit 2), and the effective scenario in
//! the JSON report.

use crate::common::oversub_text as oversub;
const F: &str = "scenarios/yield/cg-bystander.toml";

#[test]
fn set_changes_the_run_and_is_recorded() {
    let (rc, out, err) = oversub(&[
        "run",
        F,
        "--json",
        "--set",
        "host.duration=300ms",
        "--set",
        "host.yield.yield_to=deboost",
        "--set",
        "task.1.count=2",
    ]);
    assert_eq!(rc, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["duration_ns"], 300_000_000u64);
    assert_eq!(v["scenario_file"], F);
    assert_eq!(v["scenario"]["host"]["yield"]["yield_to"], "deboost");
    assert_eq!(v["scenario"]["task"][1]["count"], 2);
    // The override took effect: C was replicated, and the debooster ran.
    assert!(v["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t["name"] == "C.1"));
    assert!(v["yield_stats"]["deboosts_applied"].as_u64().unwrap() > 0);
}

#[test]
fn bad_overrides_are_one_line_errors() {
    for (set, want) in [
        ("host.nope=1", "host.nope: unknown key \"nope\""),
        (
            "host.yield.yield_to=bogus",
            "host.yield.yield_to: unknown policy \"bogus\"",
        ),
        ("vm.0.vcpus=8", "\"vm\" has 0 entries"),
        ("task.9.count=2", "\"task\" has 3 entries"),
        ("host.cpus.x=1", "is a value, not a table"),
        ("nokey", "expected KEY=VALUE"),
        ("host.cpus=0", "host.cpus: 0 is out of range"),
    ] {
        for cmd in ["run", "check"] {
            let (rc, out, err) = oversub(&[cmd, F, "--set", set]);
            assert_eq!(rc, 2, "{set}: {out}{err}");
            assert_eq!(err.trim_end().lines().count(), 1, "{set}: {err}");
            assert!(err.contains(want), "{set}: {err}");
            assert!(err.starts_with(F), "{set}: {err}");
        }
    }
}
