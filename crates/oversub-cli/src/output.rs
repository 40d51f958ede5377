//! Every write the command line makes goes through here: standard output
//! with its errors kept (a closed pipe ends the command quietly with 141,
//! as `SIGPIPE` would; any other error, a full disk say, is one line and
//! exit 2), files written whole under a temporary name and renamed, and the
//! checks of output paths made before the first run.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Mutex;

/// The exit code after a closed standard output (128 + SIGPIPE).
pub const EXIT_BROKEN_PIPE: u8 = 141;

/// The first error writing standard output, if any.
static STDOUT_ERROR: Mutex<Option<std::io::Error>> = Mutex::new(None);

/// Writes `args` to standard output; an error is kept (the first) for
/// [`finish`] and later writes are skipped.
pub fn stdout_fmt(args: std::fmt::Arguments) {
    let Ok(mut slot) = STDOUT_ERROR.lock() else {
        return;
    };
    if slot.is_some() {
        return;
    }
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_fmt(args).and_then(|()| out.flush()) {
        *slot = Some(e);
    }
}

/// The command's exit code once its output is flushed: `code` if every
/// write to standard output went through; 141 without a word after a
/// closed pipe; else one line and 2 (a full disk: never exit 0 with the
/// output lost).
pub fn finish(code: ExitCode) -> ExitCode {
    let _ = std::io::stdout().flush().map_err(|e| {
        if let Ok(mut s) = STDOUT_ERROR.lock() {
            s.get_or_insert(e);
        }
    });
    let err = STDOUT_ERROR.lock().ok().and_then(|mut s| s.take());
    match err {
        None => code,
        Some(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::from(EXIT_BROKEN_PIPE),
        Some(e) => {
            eprintln!("standard output: cannot write: {e}");
            ExitCode::from(2)
        }
    }
}

pub use oversub_runs::atomic::{temp_name, write_atomic};

/// Checks the paths a command will write (before its first run): each is
/// new, a regular file (replaced whole) or a symbolic link (the link is
/// replaced, never what it points to), and its directory, where it exists,
/// is a directory. A directory, FIFO, socket or device there would fail
/// the rename only after the work (a directory) or be replaced in silence
/// (a FIFO another program reads). The one check of every output path:
/// `--trace`, a sweep's and a reproduction's files ([`write_set`]).
pub fn check_targets(paths: &[PathBuf]) -> Result<(), String> {
    for path in paths {
        let p = path.display();
        let allowed = "allowed a new file or a regular file it replaces";
        if let Some(d) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            if d.exists() && !d.is_dir() {
                return Err(format!(
                    "{p}: cannot write: {} is not a directory: {allowed}",
                    d.display()
                ));
            }
        }
        match std::fs::symlink_metadata(path) {
            Err(_) => {}
            Ok(m) if m.is_file() || m.file_type().is_symlink() => {}
            Ok(m) if m.is_dir() => {
                return Err(format!(
                    "{p}: cannot write: exists and is a directory: {allowed}"
                ))
            }
            Ok(_) => {
                return Err(format!(
                    "{p}: cannot write: exists and is not a regular file (a FIFO, socket or device): {allowed}"
                ))
            }
        }
    }
    Ok(())
}

/// Writes a set of files whole or not at all: every one to its temporary
/// name first; only when all are written are they renamed into place. On
/// error the temporary files are removed and no file of the set is new.
pub fn write_set(files: &[(PathBuf, String)]) -> Result<(), String> {
    check_targets(&files.iter().map(|(p, _)| p.clone()).collect::<Vec<_>>())?;
    let mut done: Vec<PathBuf> = Vec::new();
    let cleanup = |done: &[PathBuf]| {
        for t in done {
            let _ = std::fs::remove_file(t);
        }
    };
    for (path, text) in files {
        let tmp = temp_name(path);
        let r = (|| {
            if let Some(d) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(d)?;
            }
            let mut f = std::fs::File::create(&tmp)?;
            done.push(tmp.clone());
            f.write_all(text.as_bytes())?;
            f.sync_all()
        })();
        if let Err(e) = r {
            cleanup(&done);
            return Err(format!("{}: cannot write: {e}", path.display()));
        }
    }
    for (path, _) in files {
        if let Err(e) = std::fs::rename(temp_name(path), path) {
            cleanup(&done);
            return Err(format!("{}: cannot write: {e}", path.display()));
        }
    }
    Ok(())
}

/// The file that marks an output directory as a sweep's (its sweep file),
/// so that a second sweep into the same directory is refused.
pub const OWNER_FILE: &str = ".oversub-sweep";

pub use oversub_runs::lock::DirLock;

/// Claims `dir` for the outputs of `owner` (a sweep or manifest file):
/// [`check_out_dir`], holds it ([`DirLock`], for as long as the returned
/// lock lives), then refuses a directory marked as holding the results of
/// another one.
pub fn claim_out_dir(dir: &Path, what: &str, owner: &str) -> Result<DirLock, String> {
    check_out_dir(dir, what)?;
    let lock = DirLock::take(dir, what)?;
    let d = dir.display();
    let mark = dir.join(OWNER_FILE);
    if std::fs::symlink_metadata(&mark).is_ok() {
        // Read through the one regular-file check (a FIFO there would hang).
        let o = oversub::limits::read_text(&mark, "the mark oversub writes")
            .map_err(|m| format!("{what} {d}: {}: {m}", mark.display()))?;
        return if o.trim_end() == owner {
            Ok(lock)
        } else {
            Err(format!(
                "{what} {d}: holds the results of {}: allowed a new or empty directory, or one written for {owner}",
                oversub::limits::echo(o.trim_end())
            ))
        };
    }
    write_atomic(&mark, format!("{owner}\n").as_bytes()).map_err(|m| format!("{what} {m}"))?;
    Ok(lock)
}

/// Checks an output directory before any run: it is created if missing,
/// must be a directory, and must take a file (a probe is written and
/// removed). `what` names the flag (`--out`).
pub fn check_out_dir(dir: &Path, what: &str) -> Result<(), String> {
    let d = dir.display();
    if dir.exists() && !dir.is_dir() {
        return Err(format!(
            "{what} {d}: exists and is not a directory: allowed a new or empty directory, or one this command wrote"
        ));
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("{what} {d}: cannot create: {e}"))?;
    // The probe's name is this process's (two commands probing one
    // directory removed each other's).
    let probe = dir.join(format!(".probe-{}", std::process::id()));
    write_atomic(&probe, b"")
        .and_then(|()| std::fs::remove_file(&probe).map_err(|e| format!("{d}: cannot write: {e}")))
        .map_err(|m| format!("{what} {m}"))
}

/// A file written as it is produced (a trace): under [`temp_name`] until
/// [`Streamed::commit`] renames it; dropped uncommitted (an error, Ctrl-C),
/// the temporary file is removed.
pub struct Streamed {
    path: PathBuf,
    tmp: PathBuf,
    done: bool,
}

impl Streamed {
    /// Creates the temporary file now (so that an unwritable path fails
    /// before the run) and returns it for writing.
    pub fn create(path: &Path) -> Result<(Streamed, std::fs::File), String> {
        check_targets(&[path.to_path_buf()])?;
        let tmp = temp_name(path);
        let f = std::fs::File::create(&tmp)
            .map_err(|e| format!("{}: cannot write: {e}", path.display()))?;
        Ok((
            Streamed {
                path: path.to_path_buf(),
                tmp,
                done: false,
            },
            f,
        ))
    }

    /// Renames the whole file into place.
    pub fn commit(mut self) -> Result<(), String> {
        std::fs::rename(&self.tmp, &self.path)
            .map_err(|e| format!("{}: cannot write: {e}", self.path.display()))?;
        self.done = true;
        Ok(())
    }
}

impl Drop for Streamed {
    fn drop(&mut self) {
        if !self.done {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_writes_leave_nothing_on_error() {
        let d = std::env::temp_dir().join(format!("oversub-output-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        write_atomic(&d.join("a"), b"x").unwrap();
        assert_eq!(std::fs::read(d.join("a")).unwrap(), b"x");
        assert!(write_atomic(&d.join("no/such/dir/a"), b"x").is_err());
        let e = check_out_dir(&d.join("a"), "--out").unwrap_err();
        assert!(e.contains("not a directory"), "{e}");
        let names: Vec<_> = std::fs::read_dir(&d).unwrap().collect();
        assert_eq!(names.len(), 1, "only the file written: {names:?}");
        let _ = std::fs::remove_dir_all(&d);
    }
}
