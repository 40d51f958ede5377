//! `oversub conform` command-line behaviour that needs no real measurement.

use crate::common::{oversub_cmd as oversub, scratch, ROOT};
/// Runs `oversub conform` on a file `name` holding `src`, which it must
/// refuse before touching the machine: exit 2, nothing on stdout and one
/// line on stderr naming the file and carrying `error`.
fn conform_rejects(tag: &str, name: &str, src: &str, error: &str) {
    let dir = scratch(&format!("conform-{tag}"));
    let f = dir.join(name);
    std::fs::write(&f, src).unwrap();
    let out = oversub()
        .args(["conform", "--runs", "1", "--duration", "100ms"])
        .arg(&f)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains(name) && err.contains(error), "{err}");
}

#[test]
fn conform_rejects_messaging_in_one_line() {
    conform_rejects(
        "test",
        "hb.toml",
        "[[task]]\nname = \"hb\"\nkind = \"messaging\"\nfds = 2\nsend = \"10us\"\nrecv = \"10us\"\n",
        "task hb: kind messaging is not host-only",
    );
}

#[test]
fn conform_refuses_a_syntax_error_before_calibrating() {
    conform_rejects("syntax", "bad.toml", "x = [\n", "TOML syntax");
}

#[test]
fn conform_refuses_a_kernel_preset_of_another_scheduler_class() {
    // Judging the CFS model against an EEVDF kernel (or the reverse) would
    // judge one scheduler by another: ask for the other class than the
    // running kernel's (EEVDF from 6.6).
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    let mut v = release
        .trim()
        .split(['.', '-'])
        .map(|x| x.parse::<u32>().unwrap_or(0));
    let (major, minor) = (v.next().unwrap_or(0), v.next().unwrap_or(0));
    let running_eevdf = (major, minor) >= (6, 6);
    let (other, class) = if running_eevdf {
        ("6.1", "CFS")
    } else {
        ("6.12.117", "EEVDF")
    };
    let out = oversub()
        .args(["conform", "--kernel", other, "scenarios/default.toml"])
        .current_dir(ROOT)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(out.stdout.is_empty());
    assert_eq!(err.lines().count(), 1, "{err}");
    let want = format!("--kernel {other}: a {class} preset cannot be judged");
    assert!(err.contains(&want) && err.contains("allowed: "), "{err}");
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
        "global.duration -1",
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
            "--kernel: unknown preset \"6.15\": allowed 6.1, 6.12.0, 6.12.117, 6.18, 6.19, flat"
        ),
        "{err}"
    );
    assert!(out.stdout.is_empty());
}
