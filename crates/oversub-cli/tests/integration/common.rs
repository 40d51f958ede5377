//! Helpers shared by the CLI's integration tests: where the workspace is,
//! how to run the built binaries, scratch files.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The workspace root: scenario paths in the tests are relative to it.
pub const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

/// The `oversub` binary under test.
pub const OVERSUB: &str = env!("CARGO_BIN_EXE_oversub");

/// The `oversub-bench` binary under test.
pub const BENCH: &str = env!("CARGO_BIN_EXE_oversub-bench");

/// `oversub` as a command run in the workspace root.
pub fn oversub_cmd() -> Command {
    let mut c = Command::new(OVERSUB);
    c.current_dir(ROOT);
    c
}

/// Runs `oversub ARGS` in the workspace root.
pub fn oversub(args: &[&str]) -> Output {
    oversub_cmd().args(args).output().expect("run oversub")
}

/// Runs `oversub ARGS` in the workspace root: (exit code, stdout, stderr).
pub fn oversub_text(args: &[&str]) -> (i32, String, String) {
    let o = oversub(args);
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// A JSON report without its wall-clock field (the only volatile one).
pub fn json_without_wall(out: &[u8]) -> serde_json::Value {
    let mut v: serde_json::Value = serde_json::from_slice(out).expect("one JSON object");
    v.as_object_mut().unwrap().remove("wall_ns");
    v
}

/// A fresh scratch directory for one test, `oversub-TAG-PID` in the
/// system's temporary directory.
pub fn scratch(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("oversub-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A path as a command-line argument.
pub fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The run `out` of `oversub ARGS` was refused as every bad input must be:
/// exit 2, one line on stderr holding every `must`, nothing on stdout.
/// Returns the line.
pub fn assert_refused(args: &[&str], out: &Output, must: &[&str]) -> String {
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(2), "{args:?}: exit 2, got {err}");
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "{args:?}: one line: {err}"
    );
    for m in must {
        assert!(err.contains(m), "{args:?}: {m:?} missing in {err}");
    }
    assert!(out.stdout.is_empty(), "{args:?}: nothing on stdout");
    err
}

/// `oversub ARGS` with its stdout on `/dev/full`: the failed write is an
/// error like any bad input (exit 2, one line naming it), not a panic.
pub fn assert_full_disk_refused(args: &[&str]) {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let out = Command::new(OVERSUB)
        .args(args)
        .stdout(full)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(err.contains("No space left"), "{args:?}: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
}
