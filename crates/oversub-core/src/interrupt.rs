//! The stop request every run polls between events. The core only reads it;
//! who sets it is the caller's business (the CLI installs SIGINT/SIGTERM
//! handlers on it, `oversub-cli/src/progress.rs`), so the library has no
//! signal or terminal side effects of its own.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

static STOP: OnceLock<Arc<AtomicBool>> = OnceLock::new();

/// The process-wide stop flag (created on first use, false): set it to make
/// every run in progress stop at its next poll.
pub fn flag() -> Arc<AtomicBool> {
    Arc::clone(STOP.get_or_init(|| Arc::new(AtomicBool::new(false))))
}

/// Whether a stop was requested.
pub fn interrupted() -> bool {
    STOP.get().is_some_and(|s| s.load(Ordering::SeqCst))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_fresh_process_is_not_interrupted() {
        // The flag exists only once somebody asks for it, and starts false.
        assert!(!super::flag().load(std::sync::atomic::Ordering::SeqCst));
    }
}
