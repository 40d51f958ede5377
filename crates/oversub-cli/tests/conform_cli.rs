//! `oversub conform` command-line behaviour that needs no real measurement.

use std::process::Command;

fn oversub() -> Command {
    Command::new(env!("CARGO_BIN_EXE_oversub"))
}

#[test]
fn conform_rejects_messaging_in_one_line() {
    let dir = std::env::temp_dir().join(format!("oversub-conform-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("hb.toml");
    std::fs::write(
        &f,
        "[[task]]\nname = \"hb\"\nkind = \"messaging\"\nfds = 2\nsend = \"10us\"\nrecv = \"10us\"\n",
    )
    .unwrap();
    let out = oversub()
        .args(["conform", "--runs", "1", "--duration", "100ms"])
        .arg(&f)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    let line = text.lines().find(|l| l.contains("hb.toml")).unwrap();
    assert!(
        line.contains("ERROR (rejected: task hb: kind messaging is not host-only"),
        "{line}"
    );
    assert!(text.contains("tolerances:"), "{text}");
    assert!(
        text.contains("0 passed, 0 failed, 0 skipped, 1 errors"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
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
    let dir = std::env::temp_dir().join(format!("oversub-conform-prog-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("finite.json");
    std::fs::write(
        &f,
        r#"{"global": {"duration": -1}, "tasks": {"t": {"loop": 2, "phases": {"p": {"run": 10}}}}}"#,
    )
    .unwrap();
    let out = oversub()
        .args(["conform", "--runs", "1", "--duration", "100ms"])
        .arg(&f)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    let line = text.lines().find(|l| l.contains("finite.json")).unwrap();
    assert!(
        line.contains("ERROR (rejected: global.duration -1"),
        "{line}"
    );
    let _ = std::fs::remove_dir_all(&dir);
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
