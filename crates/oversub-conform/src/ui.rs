//! What a conform run needs of its caller's terminal: somewhere to print and
//! a count of the real runs done (the CLI draws a progress bar from it). The
//! run itself knows nothing of terminals or bars.

use std::io::Write;

/// The caller's side of a conform run's output.
pub trait Ui {
    /// The run is about to start `steps` steps (the calibration and every
    /// real run); `real` is false when the machine cannot run them (the
    /// scenarios are skipped).
    fn begin(&mut self, steps: u64, real: bool);
    /// One step done.
    fn step(&self);
    /// Prints `text` (whole lines) to standard output, out of the way of any
    /// progress display; a closed stdout (`| head`) is ignored.
    fn print(&self, text: &str);
    /// No more steps.
    fn finish(&self);
}

/// Prints to standard output; counts nothing.
#[derive(Clone, Copy, Debug, Default)]
pub struct Plain;

impl Ui for Plain {
    fn begin(&mut self, _steps: u64, _real: bool) {}
    fn step(&self) {}
    fn print(&self, text: &str) {
        let _ = std::io::stdout().write_all(text.as_bytes());
    }
    fn finish(&self) {}
}
