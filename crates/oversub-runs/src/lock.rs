//! One writer per output directory: an exclusive lock file holding the
//! writer's process id, taken by `oversub sweep`/`reproduce --out DIR` and
//! by `oversub.sweep(..., resume=DIR)`, so that two of them never share one
//! directory's results or runs store.

use std::io::Write;
use std::path::{Path, PathBuf};

/// The file that holds an output directory for one command at a time: the
/// writer's process id.
pub const LOCK_FILE: &str = ".oversub-lock";

/// One command's hold on an output directory (the CLI's `claim_out_dir`,
/// the Python package's `sweep(resume=DIR)`): the
/// lock file, created exclusively (`O_EXCL`) and removed when dropped.
/// Two sweeps into one `--out` at the same time both passed the check of
/// the directory's mark, shared the runs store and overwrote each other's
/// files (one exit 0 over the other's results). A lock left by a process
/// that is gone (killed) is taken over; one whose process still runs is
/// refused.
#[must_use = "the directory is held while the lock lives"]
pub struct DirLock {
    path: PathBuf,
}

impl DirLock {
    /// Takes `dir`'s lock for `what` (the refusal's first words).
    pub fn take(dir: &Path, what: &str) -> Result<DirLock, String> {
        let path = dir.join(LOCK_FILE);
        let d = dir.display();
        for _ in 0..2 {
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
            {
                Ok(mut f) => {
                    f.write_all(format!("{}\n", std::process::id()).as_bytes())
                        .map_err(|e| format!("{what} {d}: cannot write: {e}"))?;
                    return Ok(DirLock { path });
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    let pid = oversub::limits::read_text(&path, "the lock oversub writes")
                        .ok()
                        .and_then(|s| s.trim().parse::<u32>().ok());
                    match pid {
                        // Its writer is gone: a stale lock.
                        Some(p) if !Path::new(&format!("/proc/{p}")).exists() => {
                            let _ = std::fs::remove_file(&path);
                        }
                        _ => {
                            let by = pid.map_or_else(
                                || "another command (remove the lock if none runs)".into(),
                                |p| format!("process {p}"),
                            );
                            return Err(format!(
                                "{what} {d}: {by} is writing it ({}): allowed one command per directory at a time",
                                path.display()
                            ));
                        }
                    }
                }
                Err(e) => return Err(format!("{what} {d}: cannot write: {e}")),
            }
        }
        Err(format!(
            "{what} {d}: {} is taken again as it is freed: allowed one command per directory at a time",
            path.display()
        ))
    }
}

impl Drop for DirLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}
