//! The files a recording directory gets: workload.json and guest.json
//! derived from a profile with their provenance, and a set of files written
//! whole or not at all.

use crate::failure::{fail, Failure};
use crate::options::MAX_DURATION;
use crate::{derive, profile};
use serde_json::{json, Value};
use std::io::Write;
use std::path::Path;

/// Writes files as one set: all to temporary names first, renamed when
/// all are whole; on error the temporary files are removed.
pub(crate) fn write_set(files: &[(&Path, &str)]) -> Result<(), Failure> {
    let tmp = |p: &Path| p.with_extension("json.partial");
    let cleanup = || {
        for (p, _) in files {
            let _ = std::fs::remove_file(tmp(p));
        }
    };
    for (p, t) in files {
        let r = std::fs::File::create(tmp(p))
            .and_then(|mut f| f.write_all(t.as_bytes()).and_then(|_| f.sync_all()));
        if let Err(e) = r {
            cleanup();
            return Err(fail(format!("{}: cannot write: {e}", p.display())));
        }
    }
    for (p, _) in files {
        if let Err(e) = std::fs::rename(tmp(p), p) {
            cleanup();
            return Err(fail(format!("{}: cannot write: {e}", p.display())));
        }
    }
    Ok(())
}

/// workload.json: the program derived from `prof` with its provenance
/// (the recording's, plus the derivation record).
pub(crate) fn workload_text(
    prof: &profile::Profile,
    ops: Option<u64>,
    wall_s: f64,
    provenance: Value,
    form: derive::Form,
) -> Result<String, Failure> {
    // A program of no thread is no workload (the loader refuses it): say so
    // here instead of writing it.
    if !prof.threads.values().any(|t| t.cpu_ns > 0) {
        return Err(fail(format!(
            "profile: {} threads, none with CPU time: nothing to derive; allowed a profile with at least one thread that ran",
            prof.threads.len()
        )));
    }
    let secs = (3.0 * wall_s)
        .ceil()
        .clamp(1.0, 3.0 * MAX_DURATION.as_secs_f64()) as u64;
    let (program, derivation) = derive::derive_form(prof, ops, secs, form);
    let mut prov = provenance;
    if let Value::Object(m) = &mut prov {
        m.insert("profile".into(), json!("profile.json (same directory)"));
        m.insert("derivation".into(), derivation);
    }
    let workload = match program {
        derive::Ordered::O(mut kv) => {
            kv.insert(0, ("provenance".into(), derive::Ordered::V(prov)));
            derive::Ordered::O(kv)
        }
        v => v,
    };
    Ok(serde_json::to_string(&workload).map_err(|e| fail(e.to_string()))? + "\n")
}
