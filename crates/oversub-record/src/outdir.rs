//! `oversub record --out DIR`: the output directory, claimed before the
//! program runs and written whole or not at all. The files are written into
//! a hidden sibling (`.DIR.tmp-PID`) which is renamed to `DIR` when every
//! one is whole. `DIR` must be new or empty: a directory holding anything is
//! refused in one line (what it holds, and `--force`), since renaming over
//! it would lose it. With `--force` the sibling and `DIR` are swapped in one
//! step (`renameat2(RENAME_EXCHANGE)`) and the old contents removed after.

use std::path::{Path, PathBuf};

/// The staging directory of one recording; dropped uncommitted (an error,
/// Ctrl-C), it is removed with what it holds.
pub struct Staging {
    out: PathBuf,
    tmp: PathBuf,
    force: bool,
    done: bool,
}

/// Up to this many of an existing directory's entries are named.
const SHOWN: usize = 3;

/// What `dir` holds, as "a, b, c (and N more)"; `None` when it is empty.
fn holds(dir: &Path) -> Result<Option<String>, String> {
    let rd =
        std::fs::read_dir(dir).map_err(|e| format!("--out {}: cannot read: {e}", dir.display()))?;
    let mut names = Vec::new();
    let mut n = 0usize;
    for e in rd {
        let e = e.map_err(|e| format!("--out {}: cannot read: {e}", dir.display()))?;
        n += 1;
        names.push(e.file_name().to_string_lossy().into_owned());
    }
    if n == 0 {
        return Ok(None);
    }
    names.sort();
    let mut s = names
        .iter()
        .take(SHOWN)
        .map(|s| oversub::limits::echo_n(s, 80))
        .collect::<Vec<_>>()
        .join(", ");
    if n > SHOWN {
        s.push_str(&format!(" (and {} more)", n - SHOWN));
    }
    Ok(Some(s))
}

impl Staging {
    /// Checks `out` and creates the staging directory beside it, before
    /// the recording (so that a refused or unwritable `--out` costs no
    /// run). Refused: `out` as anything but a directory; a directory that
    /// holds anything, unless `force`.
    pub fn claim(out: &Path, force: bool) -> Result<Staging, String> {
        let d = out.display();
        match std::fs::symlink_metadata(out) {
            Ok(m) if m.is_dir() => {
                if let Some(what) = holds(out)? {
                    if !force {
                        return Err(format!(
                            "--out {d}: exists and holds {what}: allowed a new or empty directory, or --force to replace it"
                        ));
                    }
                }
            }
            Ok(_) => {
                return Err(format!(
                    "--out {d}: exists and is not a directory: allowed a new or empty directory (--force replaces directories only)"
                ))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(format!("--out {d}: cannot read: {e}")),
        }
        let leaf = out
            .file_name()
            .map(|s| s.to_string_lossy().into_owned())
            .ok_or_else(|| {
                format!("--out {d}: names no directory: allowed a path ending in a name")
            })?;
        let parent = out
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        std::fs::create_dir_all(parent)
            .map_err(|e| format!("--out {d}: cannot create {}: {e}", parent.display()))?;
        let tmp = parent.join(format!(".{leaf}.tmp-{}", std::process::id()));
        // A sibling of the same name is a crashed earlier process of the
        // same pid's: ours to remove.
        let _ = std::fs::remove_dir_all(&tmp);
        std::fs::create_dir(&tmp).map_err(|e| format!("--out {d}: cannot write: {e}"))?;
        Ok(Staging {
            out: out.to_path_buf(),
            tmp,
            force,
            done: false,
        })
    }

    /// Where the files are written until [`Staging::commit`].
    pub fn dir(&self) -> &Path {
        &self.tmp
    }

    /// Puts the staged directory in place of `out`: a rename (over a new or
    /// still empty `out`), or with `force` over a directory that holds
    /// files, a swap and the old contents removed.
    pub fn commit(mut self) -> Result<(), String> {
        let d = self.out.display();
        let r = match std::fs::rename(&self.tmp, &self.out) {
            Ok(()) => Ok(()),
            // Not empty (ENOTEMPTY, or EEXIST on some filesystems).
            Err(e) if self.force && self.out.is_dir() => self.swap().map_err(|_| e),
            Err(e) => Err(e),
        };
        r.map_err(|e| {
            format!(
                "--out {d}: cannot write: {e} (files appeared in it during the recording? allowed a new or empty directory, or --force)"
            )
        })?;
        self.done = true;
        Ok(())
    }

    /// `out` (holding files) and the staged directory swapped in one step;
    /// the old contents, now under the staging name, removed.
    fn swap(&self) -> std::io::Result<()> {
        use rustix::fs::{renameat_with, RenameFlags, CWD};
        renameat_with(CWD, &self.tmp, CWD, &self.out, RenameFlags::EXCHANGE)?;
        let _ = std::fs::remove_dir_all(&self.tmp);
        Ok(())
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if !self.done {
            let _ = std::fs::remove_dir_all(&self.tmp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("oversub-outdir-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn a_directory_holding_files_is_refused_and_force_replaces_it_whole() {
        let d = scratch("force");
        let out = d.join("rec");
        std::fs::create_dir(&out).unwrap();
        std::fs::write(out.join("profile.json"), "old").unwrap();
        std::fs::write(out.join("notes"), "mine").unwrap();
        let e = Staging::claim(&out, false).err().unwrap();
        assert!(
            e.contains("exists and holds notes, profile.json") && e.contains("--force"),
            "{e}"
        );
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 1, "no staging left");
        // Dropped before the commit (a failed recording): the old
        // directory as it was, no staging directory left.
        let s = Staging::claim(&out, true).unwrap();
        std::fs::write(s.dir().join("profile.json"), "new").unwrap();
        drop(s);
        assert_eq!(
            std::fs::read_to_string(out.join("profile.json")).unwrap(),
            "old"
        );
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 1);
        // Committed: the new set only, the old entries gone.
        let s = Staging::claim(&out, true).unwrap();
        std::fs::write(s.dir().join("profile.json"), "new").unwrap();
        s.commit().unwrap();
        assert_eq!(
            std::fs::read_to_string(out.join("profile.json")).unwrap(),
            "new"
        );
        assert!(!out.join("notes").exists());
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 1);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_new_or_empty_directory_is_written_by_one_rename() {
        let d = scratch("new");
        for out in [d.join("a/b"), d.join("empty")] {
            if out.ends_with("empty") {
                std::fs::create_dir(&out).unwrap();
            }
            let s = Staging::claim(&out, false).unwrap();
            std::fs::write(s.dir().join("workload.json"), "w").unwrap();
            assert!(!out.join("workload.json").exists(), "not before the commit");
            s.commit().unwrap();
            assert_eq!(
                std::fs::read_to_string(out.join("workload.json")).unwrap(),
                "w"
            );
        }
        // A file in its place is refused, force or not.
        std::fs::write(d.join("f"), "").unwrap();
        for force in [false, true] {
            let e = Staging::claim(&d.join("f"), force).err().unwrap();
            assert!(e.contains("is not a directory"), "{e}");
        }
        // Something written into an empty --out during the recording is
        // not lost: the commit is refused.
        let out = d.join("busy");
        std::fs::create_dir(&out).unwrap();
        let s = Staging::claim(&out, false).unwrap();
        std::fs::write(out.join("ops.txt"), "ops=1").unwrap();
        let e = s.commit().unwrap_err();
        assert!(e.contains("cannot write"), "{e}");
        assert!(out.join("ops.txt").exists());
        let _ = std::fs::remove_dir_all(&d);
    }
}
