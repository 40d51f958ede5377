//! `oversub conform` command-line behaviour that needs no real measurement.

use crate::common::{oversub_cmd as oversub, scratch};
/// Runs `oversub conform` on a file `name` holding `src`, which it must
/// reject: exit 1 and the file's result line carrying `error`. Returns the
/// whole stdout.
fn conform_rejects(tag: &str, name: &str, src: &str, error: &str) -> String {
    let dir = scratch(&format!("conform-{tag}"));
    let f = dir.join(name);
    std::fs::write(&f, src).unwrap();
    let out = oversub()
        .args(["conform", "--runs", "1", "--duration", "100ms"])
        .arg(&f)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(out.status.code(), Some(1), "{text}");
    let line = text.lines().find(|l| l.contains(name)).unwrap();
    assert!(line.contains(error), "{line}");
    text
}

#[test]
fn conform_rejects_messaging_in_one_line() {
    let text = conform_rejects(
        "test",
        "hb.toml",
        "[[task]]\nname = \"hb\"\nkind = \"messaging\"\nfds = 2\nsend = \"10us\"\nrecv = \"10us\"\n",
        "ERROR (rejected: task hb: kind messaging is not host-only",
    );
    assert!(text.contains("tolerances:"), "{text}");
    assert!(
        text.contains("0 passed, 0 failed, 0 skipped, 1 errors"),
        "{text}"
    );
}

#[test]
fn periodic_worker_reports_latency_line() {
    let out = oversub()
        .args([
            "__worker",
            "periodic",
            "start=0",
            "end=0",
            "period=1000000",
            "run=1000",
            "phase=0",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("latency samples=0"), "{err}");
}

#[test]
fn conform_refuses_programs_that_end_by_themselves() {
    conform_rejects(
        "prog",
        "finite.json",
        r#"{"global": {"duration": -1}, "tasks": {"t": {"loop": 2, "phases": {"p": {"run": 10}}}}}"#,
        "ERROR (rejected: global.duration -1",
    );
}

#[test]
fn timer_probe_worker_reports_its_median() {
    // One small batch of conform's per-run timer-wake probe on CPU 0.
    let out = oversub()
        .args([
            "__worker",
            "timer_probe",
            "start=0",
            "end=0",
            "cpu=0",
            "samples=5",
            // Shaped like a periodic task: 0.5-1.5 ms sleeps, 50 us burnt.
            "sleep=500000",
            "burn=50000",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let v: u64 = text
        .trim()
        .strip_prefix("timer_probe p50=")
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{text}"));
    // A timer cannot fire before its expiry; 0 would mean no sample taken.
    assert!(v > 0, "{text}");
}

#[test]
fn conform_rejects_an_unknown_kernel_preset_in_one_line() {
    let out = oversub()
        .args(["conform", "--kernel", "6.15", "conform/weights.toml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(
            "--kernel: unknown preset \"6.15\": allowed 6.1, 6.12.0, 6.12.117, 6.18, 6.19"
        ),
        "{err}"
    );
    assert!(out.stdout.is_empty());
}
