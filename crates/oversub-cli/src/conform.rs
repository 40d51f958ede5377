//! The `conform`, `calibrate` and `__worker` subcommands: glue over the
//! `oversub-conform` crate (the real-kernel harness), which gets the CLI's
//! interrupt flag and a progress bar of the real runs.

use crate::progress::{self, Steps};
use oversub_conform::{Options, Outcome, Ui};
use std::process::ExitCode;

/// The conform run's terminal: a bar of the real runs (after 2 s, on a
/// terminal, never with `--json`) that printing moves out of the way.
struct Bar {
    json: bool,
    steps: Option<Steps>,
}

impl Ui for Bar {
    fn begin(&mut self, steps: u64, real: bool) {
        let show = real && progress::wanted(!self.json);
        self.steps = Some(Steps::new(steps, "real runs", "conform", show));
    }
    fn step(&self) {
        if let Some(s) = &self.steps {
            s.inc();
        }
    }
    fn print(&self, text: &str) {
        match &self.steps {
            Some(s) => s.suspend(|| out!("{text}")),
            None => out!("{text}"),
        }
    }
    fn finish(&self) {
        if let Some(s) = &self.steps {
            s.finish();
        }
    }
}

/// `oversub conform`: 0 all agreed or skipped, 1 a disagreement or error,
/// 2 an input refused before anything ran, 130 interrupted.
pub fn conform(
    files: Vec<std::path::PathBuf>,
    runs: u32,
    json: bool,
    duration: Option<u64>,
    kernel: Option<oversub::sched::KernelPreset>,
) -> ExitCode {
    let opts = Options {
        files,
        runs,
        json,
        duration,
        kernel,
        stop: progress::interrupt_flag(),
    };
    let mut ui = Bar { json, steps: None };
    match oversub_conform::run(&opts, &mut ui) {
        Outcome::Agreed => ExitCode::SUCCESS,
        Outcome::Disagreed | Outcome::Failed => ExitCode::from(1),
        Outcome::Interrupted => ExitCode::from(progress::EXIT_INTERRUPTED),
        Outcome::BadInput => ExitCode::from(2),
    }
}

/// `oversub calibrate`: the `[host.costs]` table (or one JSON object).
pub fn calibrate(samples: u32, json: bool) -> ExitCode {
    let (cal, note) = oversub_conform::runner::calibrate(samples);
    if json {
        outln!("{}", cal.to_json());
    } else {
        if let Some(n) = note {
            outln!("{n}");
        }
        out!("{}", cal.table());
    }
    ExitCode::SUCCESS
}

/// `oversub __worker KIND key=value...`: a real worker of a conform run.
pub fn worker(args: &[String]) -> ExitCode {
    ExitCode::from(oversub_conform::worker::main(args) as u8)
}
