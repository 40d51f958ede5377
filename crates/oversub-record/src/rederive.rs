//! `oversub derive DIR`: the derived programs written again from a
//! recording directory's profile.json, without re-recording.

use crate::failure::{fail, Failure};
use crate::write::{workload_text, write_set};
use crate::{derive, profile};
use serde_json::{json, Value};
use std::path::Path;

/// The largest profile.json `oversub derive` reads.
pub const MAX_PROFILE_BYTES: u64 = 256 << 20;

/// The op count of a recording directory's `ops.txt` (`make measure`:
/// lines `program=NAME unit=UNIT ops=N seconds=S`, the last one counts).
fn ops_txt(dir: &Path) -> Result<Option<u64>, Failure> {
    let path = dir.join("ops.txt");
    if !path.exists() && path.symlink_metadata().is_err() {
        return Ok(None);
    }
    // Present but unreadable (a directory, a FIFO, not UTF-8) is refused, not
    // taken as no count: the derived ops would be silently absent.
    let text = oversub::limits::read_text(&path, "make measure's ops.txt")
        .map_err(|m| fail(format!("{}: {m}", path.display())))?;
    let Some(line) = text.lines().rev().find(|l| !l.trim().is_empty()) else {
        return Ok(None);
    };
    line.split_whitespace()
        .find_map(|w| w.strip_prefix("ops="))
        .and_then(|n| n.parse().ok())
        .filter(|&n: &u64| n > 0)
        .map(Some)
        .ok_or_else(|| {
            fail(format!(
                "{}: {:?} has no ops=N: allowed program=NAME unit=UNIT ops=N seconds=S (N >= 1)",
                path.display(),
                oversub::limits::echo(line)
            ))
        })
}

/// `oversub derive DIR`: re-derives DIR/workload.json from DIR/profile.json
/// (after a change to the derivation; no re-recording). The op count is
/// `ops` if given, else the recording's (`provenance.ops`), else the last
/// line of DIR/ops.txt. The profile is left as it is.
pub fn derive_dir(dir: &Path, ops: Option<u64>) -> Result<String, Failure> {
    let ppath = dir.join("profile.json");
    let text =
        oversub::limits::read_text_max(&ppath, "oversub record's profile.json", MAX_PROFILE_BYTES)
            .map_err(|m| fail(format!("{}: {m}", ppath.display())))?;
    let v: Value = serde_json::from_str(&text)
        .map_err(|e| fail(format!("{}: not JSON: {e}", ppath.display())))?;
    if v.get("schema").and_then(Value::as_str) != Some("oversub-profile/1") {
        return Err(fail(format!(
            "{}: schema: allowed \"oversub-profile/1\" (oversub record's profile.json)",
            ppath.display()
        )));
    }
    let prof =
        profile::Profile::from_json(&v).map_err(|m| fail(format!("{}: {m}", ppath.display())))?;
    let mut provenance = v.get("provenance").cloned().unwrap_or_else(|| json!({}));
    let wall_s = provenance
        .get("wall_s")
        .and_then(Value::as_f64)
        .filter(|w| w.is_finite() && *w >= 0.0)
        .unwrap_or(prof.wall_ns() as f64 / 1e9);
    let recorded = provenance.get("ops").and_then(Value::as_u64);
    let (ops, source) = match (ops, recorded) {
        (Some(n), _) => (Some(n), "oversub derive --ops".to_string()),
        (None, Some(n)) => (Some(n), String::new()),
        (None, None) => match ops_txt(dir)? {
            Some(n) => (
                Some(n),
                "ops.txt (same directory): the program's whole-run count (make measure)".into(),
            ),
            None => (None, String::new()),
        },
    };
    if let Value::Object(m) = &mut provenance {
        if !source.is_empty() {
            m.insert("ops".into(), json!(ops));
            m.insert("ops_source".into(), json!(source));
        }
        m.insert(
            "derived_by".into(),
            json!(format!(
                "oversub derive (oversub {}), from profile.json (same directory)",
                env!("CARGO_PKG_VERSION")
            )),
        );
    }
    let in_file = |f: Failure| fail(format!("{}: {}", ppath.display(), f.message));
    let wtext = workload_text(
        &prof,
        ops,
        wall_s,
        provenance.clone(),
        derive::Form::Recorded,
    )
    .map_err(in_file)?;
    let gtext =
        workload_text(&prof, ops, wall_s, provenance, derive::Form::Steady).map_err(in_file)?;
    let out = dir.join("workload.json");
    let gout = dir.join("guest.json");
    write_set(&[(&out, &wtext), (&gout, &gtext)])?;
    Ok(format!(
        "derived {} and {} from {} ({} threads{})",
        out.display(),
        gout.display(),
        ppath.display(),
        prof.threads.len(),
        ops.map(|n| format!(", {n} ops")).unwrap_or_default()
    ))
}
