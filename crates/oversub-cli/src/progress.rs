//! Progress of `oversub run`: an indicatif bar of simulated time on stderr,
//! shown once a run has taken about 2 s of wall time and only when stderr
//! is a terminal (never with `--json`), and Ctrl-C / SIGTERM, which stop the
//! run between events so that it ends cleanly.

use indicatif::{ProgressBar, ProgressStyle};
use oversub::engine::{Nanos, Time};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Wall time before the bar appears.
const SHOW_AFTER: Duration = Duration::from_secs(2);

pub struct Progress {
    total: Nanos,
    show: bool,
    started: Instant,
    bar: Option<ProgressBar>,
    stop: Arc<AtomicBool>,
    reached: Time,
}

impl Progress {
    /// `wanted`: the caller would show a bar (not `--json`).
    pub fn new(total: Nanos, wanted: bool) -> Progress {
        let stop = Arc::new(AtomicBool::new(false));
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            let _ = signal_hook::flag::register(sig, Arc::clone(&stop));
        }
        Progress {
            total,
            show: wanted && std::io::stderr().is_terminal(),
            started: Instant::now(),
            bar: None,
            stop,
            reached: Time::ZERO,
        }
    }

    /// Called by the simulator every few thousand events: false stops it.
    pub fn poll(&mut self, now: Time) -> bool {
        self.reached = now;
        if self.stop.load(Ordering::Relaxed) {
            return false;
        }
        if self.show && self.bar.is_none() && self.started.elapsed() >= SHOW_AFTER {
            let bar = ProgressBar::new(self.total.0.max(1));
            bar.set_style(
                ProgressStyle::with_template(
                    "{elapsed_precise} [{bar:40}] {percent:>3}% simulated, eta {eta}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
            );
            self.bar = Some(bar);
        }
        if let Some(b) = &self.bar {
            b.set_position(now.0.min(self.total.0));
        }
        true
    }

    /// How far the run got (simulated).
    pub fn reached(&self) -> Nanos {
        Nanos(self.reached.0)
    }

    /// Removes the bar.
    pub fn finish(&mut self) {
        if let Some(b) = self.bar.take() {
            b.finish_and_clear();
        }
    }
}
