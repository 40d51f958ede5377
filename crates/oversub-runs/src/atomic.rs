//! Files written whole or not at all: to a hidden sibling in the same
//! directory, synced, then renamed over the target (the rename is atomic
//! within one file system). The runs store and the CLI's outputs share it.

use std::io::Write;
use std::path::{Path, PathBuf};

/// The temporary name `path` is written under until it is whole: a hidden
/// sibling in the same directory (so that the rename is atomic).
pub fn temp_name(path: &Path) -> PathBuf {
    let leaf = path
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "out".into());
    path.with_file_name(format!(".{leaf}.tmp-{}", std::process::id()))
}

/// Writes `bytes` to `path` whole or not at all: to [`temp_name`], flushed
/// and synced, then renamed over `path`. On error nothing is left behind.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let tmp = temp_name(path);
    let r = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    r.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        format!("{}: cannot write: {e}", path.display())
    })
}
