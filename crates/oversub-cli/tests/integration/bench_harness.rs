//! `oversub-bench` (make bench): its generated scaling scenarios are valid
//! scenario files and each measurement child reports a sample. No timing is
//! asserted (figures depend on the machine).

use crate::common::{scratch, BENCH, OVERSUB, ROOT};
use std::process::Command;

fn sample(spec: &str) -> Vec<u64> {
    let out = Command::new(BENCH)
        .current_dir(ROOT)
        .args(["--one", spec])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{spec}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .split_whitespace()
        .map(|x| x.parse().unwrap())
        .collect()
}

#[test]
fn generated_scenario_is_a_valid_file_with_the_asked_size() {
    let out = Command::new(BENCH)
        .current_dir(ROOT)
        .args(["--toml", "4:16:50"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let dir = scratch("bench-test");
    let f = dir.join("gen.toml");
    std::fs::write(&f, &out.stdout).unwrap();
    let check = Command::new(OVERSUB)
        .current_dir(ROOT)
        .arg("check")
        .arg(&f)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    let s = sample("gen:4:16:50");
    // events, simulated ns, cpu ns, wall ns, peak KiB, tasks
    assert_eq!(s.len(), 6);
    assert!(s[0] > 0);
    assert_eq!(s[1], 50_000_000);
    assert!(s[4] > 0);
    assert_eq!(s[5], 16);
}

#[test]
fn a_scenario_file_runs_in_a_child_with_its_vcpus_counted() {
    let s = sample("scenarios/overcommit/dedup-2x16.toml");
    assert_eq!(s.len(), 6);
    assert!(s[0] > 0);
    assert!(s[5] >= 32, "2 VMs x 16 vCPUs at least: {}", s[5]);
}

#[test]
fn bad_arguments_exit_2() {
    let out = Command::new(BENCH)
        .current_dir(ROOT)
        .args(["--one", "gen:x"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = Command::new(BENCH)
        .current_dir(ROOT)
        .arg("--bogus")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}
