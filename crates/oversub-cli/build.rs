//! Embeds the source's git commit (`git describe --always --dirty`) as
//! `OVERSUB_COMMIT` for `oversub --version` and the outputs' provenance;
//! "unknown (not a git checkout)" when the source is not a checkout or git
//! is missing.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!s.is_empty()).then_some(s)
}

fn main() {
    let commit = git(&["describe", "--always", "--dirty"])
        .unwrap_or_else(|| "unknown (not a git checkout)".into());
    println!("cargo:rustc-env=OVERSUB_COMMIT={commit}");
    // A new commit or a staged change re-runs this script; an edit to a
    // tracked file that is not staged does not (cargo cannot watch the
    // whole tree cheaply), so "-dirty" can lag until the next build that
    // rebuilds this crate for another reason.
    if let Some(dir) = git(&["rev-parse", "--git-dir"]) {
        println!("cargo:rerun-if-changed={dir}/HEAD");
        println!("cargo:rerun-if-changed={dir}/index");
    }
    if let Some(dir) = git(&["rev-parse", "--git-common-dir"]) {
        println!("cargo:rerun-if-changed={dir}/refs/heads");
        println!("cargo:rerun-if-changed={dir}/packed-refs");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
