//! A sweep's finished runs, kept as they finish so that an interrupted
//! sweep loses none of them: `DIR/.oversub-runs.jsonl`, a header line (the
//! sweep file, the number of runs and a fingerprint of the code, the sweep
//! and every scenario it loads) and then one line per finished run, appended
//! whole by one write each. `oversub sweep FILE --out DIR --resume` and
//! `oversub.sweep(..., resume=DIR)` (the Python package) read it back, skip
//! those runs and give what an uninterrupted sweep gives (the CLI's
//! `results.jsonl` lines are kept verbatim, the metrics as the bits of each
//! number). The caller removes the file once the sweep is whole.
//!
//! The store writes files, so it lives here and not in the model crate
//! (`oversub-core` writes none); the CLI and the Python bindings share it.

use oversub::sweep::{self, Row};
use serde::{Deserialize, Serialize};
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

pub mod atomic;
pub mod lock;
use atomic::write_atomic;

/// The file of finished runs in `--out`.
pub const RUNS_FILE: &str = ".oversub-runs.jsonl";

/// Its format's version (the header's `oversub_runs`).
const FORMAT: u32 = 1;

/// The longest line read back (a run's `results.jsonl` line with its
/// scenario and histogram is some kilobytes).
const MAX_LINE: u64 = 64 << 20;
/// The largest runs file read back (100 000 runs of a few KiB each fit).
const MAX_FILE: u64 = 4 << 30;

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Header {
    oversub_runs: u32,
    sweep: String,
    runs: usize,
    fingerprint: String,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Record {
    slot: usize,
    point: usize,
    seed: u64,
    file: String,
    workload: String,
    vms: usize,
    labels: Vec<(String, String)>,
    /// (name, `f64::to_bits`): exact, NaN and infinities included.
    metrics: Vec<(String, u64)>,
    kernel: String,
    /// The run's `results.jsonl` line, without its newline.
    line: String,
}

/// The fingerprint of a sweep made by the code in the file `code` (the
/// `oversub` binary, or the Python package's native module): a hash of its
/// bytes (of `version` if it cannot be read) and the sweep's digest
/// ([`sweep::Batch::digest`], which is itself only comparable within one
/// build of that code).
pub fn fingerprint(code: std::io::Result<PathBuf>, version: &str, digest: u64) -> String {
    use std::hash::Hasher;
    let mut h = std::collections::hash_map::DefaultHasher::new();
    let exe = code.and_then(|p| {
        let mut r = std::io::BufReader::with_capacity(1 << 20, std::fs::File::open(p)?);
        loop {
            let buf = r.fill_buf()?;
            if buf.is_empty() {
                return Ok(());
            }
            h.write(buf);
            let n = buf.len();
            r.consume(n);
        }
    });
    if exe.is_err() {
        h.write(version.as_bytes());
    }
    format!("{:016x}{digest:016x}", h.finish())
}

/// The runs kept from an earlier invocation, by slot.
pub struct Kept {
    pub rows: Vec<Option<Row>>,
    pub lines: Vec<Option<String>>,
    pub count: usize,
    /// Whether the directory held a runs file at all.
    pub found: bool,
}

/// The open file of finished runs: [`Store::append`] adds one.
pub struct Store {
    path: PathBuf,
    file: Mutex<std::fs::File>,
}

/// Opens `dir`'s file of finished runs for the sweep `sweep` whose runs are
/// `runs` ((point, seed) by slot), made by this code with `fingerprint`.
/// Without `resume`, a file holding finished runs is refused (they would be
/// lost); with it, they are read back, checked against the fingerprint and
/// the runs, and returned. A last line cut short (the process was killed
/// while writing it) is dropped. `flag` is how the caller spells resuming
/// (`--resume`, `resume=DIR`), for the messages.
pub fn open(
    dir: &Path,
    sweep_file: &str,
    fingerprint: &str,
    runs: &[(usize, u64)],
    resume: bool,
    flag: &str,
) -> Result<(Store, Kept), String> {
    let path = dir.join(RUNS_FILE);
    let p = path.display();
    let mut kept = Kept {
        rows: (0..runs.len()).map(|_| None).collect(),
        lines: (0..runs.len()).map(|_| None).collect(),
        count: 0,
        found: false,
    };
    let mut good: Vec<String> = Vec::new();
    // A FIFO or device in its place would hang or never end: the one
    // regular-file check, and a cap on the whole file.
    let opened = match std::fs::symlink_metadata(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(
            oversub::limits::open_regular(&path, "the runs file oversub writes", MAX_FILE)
                .map_err(|m| format!("{p}: {m}"))?,
        ),
    };
    match opened {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(format!("{p}: cannot read: {e}")),
        Ok(f) => {
            kept.found = true;
            let lines = read_lines(f).map_err(|e| format!("{p}: cannot read: {e}"))?;
            let Some(head) = lines.first() else {
                return Err(format!(
                    "{p}: empty: allowed the header line oversub writes (remove the file to start the sweep over)"
                ));
            };
            let h: Header = serde_json::from_str(head).map_err(|e| {
                format!("{p}: line 1: not oversub's header ({e}): allowed the file oversub writes (remove it to start the sweep over)")
            })?;
            let records = lines.len() - 1;
            if !resume {
                if records > 0 {
                    return Err(format!(
                        "--out {}: holds {records} of {} finished runs of an interrupted sweep of {} ({RUNS_FILE}): \
                         allowed {flag} to finish them, or a new or empty directory",
                        dir.display(),
                        h.runs,
                        oversub::limits::echo(&h.sweep)
                    ));
                }
            } else {
                if h.oversub_runs != FORMAT || h.fingerprint != fingerprint || h.runs != runs.len()
                {
                    return Err(format!(
                        "{p}: fingerprint {} is not this sweep's {fingerprint}: allowed {flag} with the binary, \
                         sweep file and scenarios its {records} runs were made with (remove the file to start over)",
                        oversub::limits::echo(&h.fingerprint)
                    ));
                }
                good.push(head.clone());
                for (i, l) in lines.iter().enumerate().skip(1) {
                    let bad = |m: String| {
                        format!(
                            "{p}: line {}: {m} (remove the file to start the sweep over)",
                            i + 1
                        )
                    };
                    let r: Record = serde_json::from_str(l).map_err(|e| {
                        bad(format!(
                            "not a run oversub wrote ({e}): allowed the file oversub writes"
                        ))
                    })?;
                    match runs.get(r.slot) {
                        Some(&(point, seed)) if point == r.point && seed == r.seed => {}
                        _ => {
                            return Err(bad(format!(
                                "run {} (point {}, seed {}) is not one of this sweep's {} runs: allowed the file oversub writes",
                                r.slot, r.point, r.seed, runs.len()
                            )))
                        }
                    }
                    if kept.rows[r.slot].is_some() {
                        return Err(bad(format!("run {} twice: allowed each run once", r.slot)));
                    }
                    good.push(l.clone());
                    kept.lines[r.slot] = Some(format!("{}\n", r.line));
                    let slot = r.slot;
                    kept.rows[slot] = Some(row(r));
                    kept.count += 1;
                }
            }
        }
    }
    if good.is_empty() {
        let h = Header {
            oversub_runs: FORMAT,
            sweep: sweep_file.to_string(),
            runs: runs.len(),
            fingerprint: fingerprint.to_string(),
        };
        good.push(serde_json::to_string(&h).map_err(|e| format!("{p}: {e}"))?);
    }
    // Rewritten whole: a fresh header, or the lines read back without a
    // last line cut short.
    let mut text = good.join("\n");
    text.push('\n');
    write_atomic(&path, text.as_bytes())?;
    let file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .map_err(|e| format!("{p}: cannot write: {e}"))?;
    Ok((
        Store {
            path,
            file: Mutex::new(file),
        },
        kept,
    ))
}

/// The complete lines of `f` (each ended by a newline; a last line without
/// one was cut short and is dropped), each at most [`MAX_LINE`] bytes.
fn read_lines(f: std::fs::File) -> std::io::Result<Vec<String>> {
    let mut r = std::io::BufReader::new(f);
    let mut out = Vec::new();
    loop {
        let mut buf = Vec::new();
        let n = std::io::Read::take(&mut r, MAX_LINE + 1).read_until(b'\n', &mut buf)?;
        if n == 0 || buf.last() != Some(&b'\n') {
            if n as u64 > MAX_LINE {
                return Err(std::io::Error::other(format!(
                    "a line of more than {MAX_LINE} bytes"
                )));
            }
            return Ok(out);
        }
        buf.pop();
        // A header and one line per run at most.
        if out.len() as u64 > oversub::limits::MAX_SWEEP_RUNS {
            return Err(std::io::Error::other(format!(
                "more than {} lines",
                oversub::limits::MAX_SWEEP_RUNS + 1
            )));
        }
        out.push(String::from_utf8(buf).map_err(std::io::Error::other)?);
    }
}

/// A row as read back: what the CSV, the summary and the provenance need
/// (its `results.jsonl` line is kept apart, in [`Kept::lines`]).
fn row(r: Record) -> Row {
    Row {
        point: r.point,
        file: r.file,
        workload: r.workload,
        vms: r.vms,
        labels: r.labels,
        seed: r.seed,
        metrics: r
            .metrics
            .into_iter()
            .map(|(k, b)| (k, f64::from_bits(b)))
            .collect(),
        scenario: serde_json::Value::Null,
        op_latency: Default::default(),
        kernel: r.kernel,
    }
}

impl Store {
    /// Appends run `slot`'s row, one line in one write.
    pub fn append(&self, slot: usize, r: &Row) -> Result<(), String> {
        let mut line = sweep::jsonl_line(r);
        line.pop();
        let rec = Record {
            slot,
            point: r.point,
            seed: r.seed,
            file: r.file.clone(),
            workload: r.workload.clone(),
            vms: r.vms,
            labels: r.labels.clone(),
            metrics: r
                .metrics
                .iter()
                .map(|(k, v)| (k.clone(), v.to_bits()))
                .collect(),
            kernel: r.kernel.clone(),
            line,
        };
        let mut text = serde_json::to_string(&rec).map_err(|e| e.to_string())?;
        text.push('\n');
        let mut f = self.file.lock().map_err(|_| "runs file lock poisoned")?;
        f.write_all(text.as_bytes())
            .map_err(|e| format!("{}: cannot write: {e}", self.path.display()))
    }

    /// Where the runs are kept.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Removes the file (the sweep's files are written).
    pub fn remove(self) -> Result<(), String> {
        drop(self.file);
        std::fs::remove_file(&self.path)
            .map_err(|e| format!("{}: cannot remove: {e}", self.path.display()))
    }
}

/// Makes `dir` ready to hold a runs file: created if missing (with its
/// parents), refused in one line if it exists as anything but a directory
/// (a file, a FIFO). `what` names the argument (`resume`).
pub fn prepare_dir(dir: &Path, what: &str) -> Result<(), String> {
    let d = dir.display();
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(format!(
            "{what} {d}: exists and is not a directory: allowed a new or empty directory, or one holding this sweep's {RUNS_FILE}"
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(dir).map_err(|e| format!("{what} {d}: cannot create: {e}"))
        }
        Err(e) => Err(format!("{what} {d}: cannot read: {e}")),
    }
}
