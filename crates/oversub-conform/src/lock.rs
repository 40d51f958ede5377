//! The machine-wide lock of real conform runs: two runs at once would each
//! give their workers weight 10000 and take half the machine from the
//! other, so real runs are serialised by an exclusive `flock` held until the
//! end of the run.

/// The machine-wide lock of real conform runs; waits for another run to end.
pub const LOCK_FILE: &str = "/tmp/oversub-conform.lock";

/// Takes the lock, waiting (with a line on stderr) while another run holds
/// it; the lock is released when the file is dropped.
pub fn machine_lock() -> Result<std::fs::File, String> {
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(LOCK_FILE)
        .map_err(|e| format!("{LOCK_FILE}: cannot open: {e}"))?;
    use rustix::fs::{flock, FlockOperation};
    if flock(&f, FlockOperation::NonBlockingLockExclusive).is_err() {
        eprintln!("conform: waiting for another oversub conform run to finish ({LOCK_FILE})");
        flock(&f, FlockOperation::LockExclusive)
            .map_err(|e| format!("{LOCK_FILE}: cannot lock: {e}"))?;
    }
    Ok(f)
}
