//! Progress and interruption of the long commands (`run`, `sweep`,
//! `reproduce`, `conform`): an indicatif bar on stderr that appears once a
//! command has taken about 2 s of wall time, only when stderr is a terminal
//! and never with `--json`; and Ctrl-C / SIGTERM, which set a flag that the
//! commands poll between simulated events and between real runs, so that
//! they stop cleanly (no partial output files, workers and cgroups removed)
//! and exit with 130. A second signal while the first is being served ends
//! the process at once with 130 (the usual escape when a clean stop takes
//! too long).

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use oversub::engine::{Nanos, Time};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// Wall time before a bar appears.
pub const SHOW_AFTER: Duration = Duration::from_secs(2);

/// The exit code of an interrupted command (128 + SIGINT).
pub const EXIT_INTERRUPTED: u8 = 130;

/// The core's stop flag ([`oversub::interrupt::flag`]), once the signal
/// handlers are on it.
static HANDLERS: OnceLock<Arc<AtomicBool>> = OnceLock::new();

/// The flag SIGINT and SIGTERM set. The handlers are installed on the first
/// call: only commands that poll the flag call it, because with the handlers
/// in place the first signal no longer ends the process by itself. The
/// conditional shutdown is registered first, so it sees the flag as it was
/// before this signal: set only by an earlier one.
pub fn interrupt_flag() -> Arc<AtomicBool> {
    Arc::clone(HANDLERS.get_or_init(|| {
        let stop = oversub::interrupt::flag();
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            let _ = signal_hook::flag::register_conditional_shutdown(
                sig,
                i32::from(EXIT_INTERRUPTED),
                Arc::clone(&stop),
            );
            let _ = signal_hook::flag::register(sig, Arc::clone(&stop));
        }
        stop
    }))
}

/// Has Ctrl-C or SIGTERM arrived (false if nothing installed the handlers)?
pub fn interrupted() -> bool {
    oversub::interrupt::interrupted()
}

/// Would a bar be drawn: wanted by the caller (not `--json`) and stderr a
/// terminal.
pub fn wanted(not_json: bool) -> bool {
    not_json && std::io::stderr().is_terminal()
}

/// A bar of counted steps (runs of a sweep, real runs of `conform`), hidden
/// for its first [`SHOW_AFTER`] of wall time. Cheap to clone and shared by
/// worker threads.
#[derive(Clone)]
pub struct Steps {
    bar: ProgressBar,
    done: Arc<AtomicBool>,
}

impl Steps {
    /// `len` steps of `unit` ("runs"), labelled `prefix`; drawn only when
    /// `show` (see [`wanted`]).
    pub fn new(len: u64, unit: &str, prefix: &str, show: bool) -> Steps {
        let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::hidden());
        let tpl = format!(
            "{{prefix}} [{{bar:30}}] {{pos}}/{{len}} {unit}, {{elapsed}} elapsed, ETA {{eta}}"
        );
        if let Ok(st) = ProgressStyle::with_template(&tpl) {
            bar.set_style(st.progress_chars("=> "));
        }
        bar.set_prefix(prefix.to_string());
        let done = Arc::new(AtomicBool::new(false));
        if show {
            // Reveal the bar after SHOW_AFTER unless it finished before.
            let (b, d) = (bar.clone(), Arc::clone(&done));
            std::thread::spawn(move || {
                let start = Instant::now();
                while start.elapsed() < SHOW_AFTER {
                    if d.load(Ordering::SeqCst) {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
                if !d.load(Ordering::SeqCst) {
                    b.set_draw_target(ProgressDrawTarget::stderr());
                    b.enable_steady_tick(Duration::from_millis(250));
                }
            });
        }
        Steps { bar, done }
    }

    /// One step done.
    pub fn inc(&self) {
        self.bar.inc(1);
    }

    /// Removes the bar (it will not appear afterwards).
    pub fn finish(&self) {
        self.done.store(true, Ordering::SeqCst);
        self.bar.finish_and_clear();
    }

    /// Runs `f` (which prints to the terminal) with the bar out of the way.
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        self.bar.suspend(f)
    }

    /// The steps done so far (for the tests).
    #[cfg(test)]
    pub fn position(&self) -> u64 {
        self.bar.position()
    }
}

/// The bar of one simulation (`oversub run`): simulated time, polled by the
/// simulator every few thousand events.
pub struct SimProgress {
    total: Nanos,
    show: bool,
    started: Instant,
    bar: Option<ProgressBar>,
    stop: Arc<AtomicBool>,
    reached: Time,
    /// The trace size estimate has been printed.
    estimated: bool,
}

/// A trace estimated larger than this gets a line on stderr with its size.
pub const LARGE_TRACE_BYTES: u64 = 64 << 20;

impl SimProgress {
    /// `not_json`: the caller would show a bar.
    pub fn new(total: Nanos, not_json: bool) -> SimProgress {
        SimProgress {
            total,
            show: wanted(not_json),
            started: Instant::now(),
            bar: None,
            stop: interrupt_flag(),
            reached: Time::ZERO,
            estimated: false,
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

    /// `run --trace`: once 1/64 of the run is simulated, the trace's size
    /// at the rate so far; printed (one line on stderr) when it is over
    /// [`LARGE_TRACE_BYTES`], so that a large trace is known early.
    pub fn trace_size(&mut self, now: Time, bytes: u64, out: &std::path::Path) {
        if self.estimated || now.0 < self.total.0 / 64 || now.0 == 0 {
            return;
        }
        self.estimated = true;
        let est = (u128::from(bytes) * u128::from(self.total.0) / u128::from(now.0)) as u64;
        if est > LARGE_TRACE_BYTES {
            let line = format!(
                "trace: {} will be about {} MiB ({} MiB by {} of {} simulated; --trace-window FROM..TO writes less)",
                out.display(),
                est >> 20,
                bytes >> 20,
                Nanos(now.0),
                self.total
            );
            match &self.bar {
                Some(b) => b.suspend(|| eprintln!("{line}")),
                None => eprintln!("{line}"),
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_count_and_finish_without_a_terminal() {
        let s = Steps::new(3, "runs", "x", false);
        s.inc();
        s.clone().inc();
        assert_eq!(s.position(), 2);
        s.finish();
        assert!(!interrupted() || HANDLERS.get().is_some());
    }
}
