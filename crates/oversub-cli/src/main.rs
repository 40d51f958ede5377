//! The `oversub` command line.

use clap::{Parser, Subcommand};
use oversub::prelude::{RunError, RunOptions};
use oversub::scenario::overrides::parse_override;

#[macro_use]
mod out;
mod conform;
mod progress;
mod reproduce;
mod sweep_files;
use oversub::scenario::{check_cli_seed, parse_cli_duration, Scenario};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "oversub",
    version,
    about = "Deterministic simulator of an oversubscribed KVM host"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run a scenario and print its results.
    Run {
        file: PathBuf,
        /// Override [host].seed (0 ..= 2^63-1).
        #[arg(long, allow_hyphen_values = true)]
        seed: Option<String>,
        /// Override [host].duration ("5s", "250ms", ...; 1us ..= 3600s).
        #[arg(long, allow_hyphen_values = true)]
        duration: Option<String>,
        /// Print one JSON object instead of a table.
        #[arg(long)]
        json: bool,
        /// Check the scheduler invariants after every event (slow).
        #[arg(long)]
        check: bool,
        /// Override a scenario key by its dotted path (repeatable):
        /// host.yield.yield_to=deboost, kvm.on_spin=ipi_aware, vm.0.vcpus=8.
        #[arg(long = "set", value_name = "KEY=VALUE")]
        sets: Vec<String>,
        /// Write a Chrome/Perfetto JSON trace (open it in ui.perfetto.dev).
        #[arg(long, value_name = "OUT.json")]
        trace: Option<PathBuf>,
        /// Trace only this virtual-time window, e.g. 100ms..200ms.
        #[arg(long, value_name = "FROM..TO", requires = "trace")]
        trace_window: Option<String>,
    },
    /// Run a scenario over axes x seeds in parallel; write results.csv,
    /// results.jsonl, summary.csv and summary.md to DIR (docs/usage.md,
    /// "Sweeps").
    Sweep {
        file: PathBuf,
        #[arg(long)]
        out: PathBuf,
    },
    /// The seeds' evaluation and the reviewers' cases side by side with the
    /// published figures: DIR/results.csv, summary.md, report.html.
    Reproduce {
        #[arg(long)]
        out: PathBuf,
        /// The manifest's quick seeds and durations (the default one: 3 seeds
        /// of 100 ms instead of 5 of 500 ms), same structure.
        #[arg(long)]
        quick: bool,
        /// The manifest of sections.
        #[arg(long, default_value = "sweeps/reproduce.toml")]
        manifest: PathBuf,
    },
    /// Validate a scenario file only.
    Check {
        file: PathBuf,
        /// Override a scenario key by its dotted path (repeatable).
        #[arg(long = "set", value_name = "KEY=VALUE")]
        sets: Vec<String>,
    },
    /// Run host-only scenarios on the real kernel and in the simulator and
    /// compare CPU shares and wakeup latencies (docs/conformance.md).
    Conform {
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Real runs per scenario (the run-to-run spread needs >= 2).
        #[arg(long, default_value_t = 3)]
        runs: u32,
        /// Print one JSON object instead of tables.
        #[arg(long)]
        json: bool,
        /// Override each scenario's [host].duration ("2s", "500ms", ...).
        #[arg(long, allow_hyphen_values = true)]
        duration: Option<String>,
        /// Simulate with this kernel preset instead of the running kernel's
        /// (6.12.0, 6.12.117, 6.18, 6.19).
        #[arg(long)]
        kernel: Option<String>,
    },
    /// Measure this machine's wake-path and switch costs and print them as a
    /// `[host.costs]` table to paste into scenarios.
    Calibrate {
        /// Samples per probe (medians are reported).
        #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u32).range(1..=100_000))]
        samples: u32,
        /// Print one JSON object instead of the table.
        #[arg(long)]
        json: bool,
    },
    /// Run a real program under tracing; write DIR/profile.json (measured)
    /// and DIR/workload.json (a program the simulator runs) (docs/workloads.md).
    Record {
        #[arg(long, default_value = "recording")]
        out: PathBuf,
        /// Longest recording ("500ms", "5s", "2m"); the program is ended then.
        #[arg(long, default_value = "10s")]
        duration: String,
        /// Operations the run did (for per-op figures).
        #[arg(long, conflicts_with = "ops_from")]
        ops: Option<u64>,
        /// Read the ops from the number after this text in the program's output.
        #[arg(long)]
        ops_from: Option<String>,
        /// Stop (exit 2) after this many trace events.
        #[arg(long, default_value_t = oversub_record::DEFAULT_MAX_EVENTS)]
        max_events: u64,
        /// Trace ring buffer per CPU, KiB.
        #[arg(long, default_value_t = oversub_record::DEFAULT_BUFFER_KB, value_parser = clap::value_parser!(u64).range(64..=1_048_576))]
        buffer_kb: u64,
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
    /// A real worker process of `conform` (internal).
    #[command(name = "__worker", hide = true)]
    Worker {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
}

fn load(file: &std::path::Path, sets: &[String]) -> Result<Scenario, ExitCode> {
    let mut parsed = Vec::new();
    for s in sets {
        match parse_override(s) {
            Ok(o) => parsed.push(o),
            Err(m) => {
                eprintln!("{}: {m}", file.display());
                return Err(ExitCode::from(2));
            }
        }
    }
    Scenario::load_with(file, &parsed).map_err(|e| {
        eprintln!("{e}");
        ExitCode::from(2)
    })
}

/// A long command's error: exit 130 after Ctrl-C / SIGTERM, else 2.
fn failed(m: &str) -> ExitCode {
    eprintln!("{m}");
    if crate::progress::interrupted() {
        ExitCode::from(crate::progress::EXIT_INTERRUPTED)
    } else {
        ExitCode::from(2)
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.cmd {
        Cmd::Calibrate { samples, json } => conform::calibrate(samples, json),
        Cmd::Record {
            out,
            duration,
            ops,
            ops_from,
            max_events,
            buffer_kb,
            command,
        } => {
            let duration = match oversub_record::parse_duration(&duration) {
                Ok(d) => d,
                Err(m) => {
                    eprintln!("{m}");
                    return ExitCode::from(2);
                }
            };
            let opts = oversub_record::Options {
                out,
                duration,
                command,
                ops,
                ops_from,
                max_events,
                buffer_kb,
                progress: true,
            };
            match oversub_record::record(&opts, &crate::progress::interrupt_flag()) {
                Ok(text) => {
                    println!("{text}");
                    ExitCode::SUCCESS
                }
                Err(f) => {
                    eprintln!("{}", f.message);
                    ExitCode::from(f.code)
                }
            }
        }
        Cmd::Worker { args } => conform::worker(&args),
        Cmd::Conform {
            files,
            runs,
            json,
            duration,
            kernel,
        } => {
            let kernel = match kernel.as_deref() {
                None => None,
                Some(k) => match oversub::sched::KernelPreset::parse(k) {
                    Some(p) => Some(p),
                    None => {
                        eprintln!(
                            "--kernel: unknown preset {k:?}: allowed {}",
                            oversub::sched::KernelPreset::names()
                        );
                        return ExitCode::from(2);
                    }
                },
            };
            let duration = match duration.as_deref().map(parse_cli_duration) {
                None => None,
                Some(Ok(d)) => Some(d.0),
                Some(Err(m)) => {
                    eprintln!("--duration: {m}");
                    return ExitCode::from(2);
                }
            };
            conform::conform(files, runs, json, duration, kernel)
        }
        Cmd::Sweep { file, out } => {
            let spec = match oversub::sweep::spec::SweepSpec::load(&file) {
                Ok(s) => s,
                Err(m) => {
                    eprintln!("{m}");
                    return ExitCode::from(2);
                }
            };
            let _ = crate::progress::interrupt_flag();
            match sweep_files::sweep_to_dir(&spec, &out, crate::progress::wanted(true)) {
                Ok(md) => {
                    print!("{md}");
                    println!(
                        "\nwrote {}/results.csv, results.jsonl, summary.csv, summary.md",
                        out.display()
                    );
                    ExitCode::SUCCESS
                }
                Err(m) => failed(&m),
            }
        }
        Cmd::Reproduce {
            out,
            quick,
            manifest,
        } => {
            let _ = crate::progress::interrupt_flag();
            match reproduce::run(&manifest, &out, quick, crate::progress::wanted(true)) {
                Ok(text) => {
                    print!("{text}");
                    ExitCode::SUCCESS
                }
                Err(m) => failed(&m),
            }
        }
        Cmd::Check { file, sets } => match load(&file, &sets) {
            Ok(sc) => {
                outln!(
                    "{}: ok ({} task entries, {} cgroups)",
                    file.display(),
                    sc.tasks.len(),
                    sc.cgroups.len()
                );
                ExitCode::SUCCESS
            }
            Err(c) => c,
        },
        Cmd::Run {
            file,
            seed,
            duration,
            json,
            check,
            sets,
            trace,
            trace_window,
        } => {
            let sc = match load(&file, &sets) {
                Ok(s) => s,
                Err(c) => return c,
            };
            let dur = match duration.as_deref().map(parse_cli_duration) {
                None => None,
                Some(Ok(d)) => Some(d),
                Some(Err(m)) => {
                    eprintln!("--duration: {m}");
                    return ExitCode::from(2);
                }
            };
            let seed = match seed.as_deref().map(check_cli_seed) {
                None => None,
                Some(Ok(s)) => Some(s),
                Some(Err(m)) => {
                    eprintln!("--seed: {m}");
                    return ExitCode::from(2);
                }
            };
            if let Some(out) = trace {
                let window = match trace_window.as_deref().map(oversub::trace::parse_window) {
                    None => (0, u64::MAX),
                    Some(Ok(w)) => w,
                    Some(Err(m)) => {
                        eprintln!("{m}");
                        return ExitCode::from(2);
                    }
                };
                // A traced run records its duration even when it is the
                // scenario's own (as `oversub run --trace` always has).
                let d = dur.unwrap_or(sc.host.duration);
                let opts = RunOptions::default()
                    .seed(seed)
                    .duration(Some(d))
                    .check_invariants(check);
                let (report, text) = match oversub::run_traced(&sc, opts, window) {
                    Ok(r) => r,
                    Err(e) => return run_failed(&file, &e),
                };
                if let Err(e) = std::fs::write(&out, text) {
                    eprintln!("{}: cannot write: {e}", out.display());
                    return ExitCode::from(2);
                }
                eprintln!(
                    "trace: {} (open it in https://ui.perfetto.dev)",
                    out.display()
                );
                let text = if json {
                    format!("{}\n", report.to_json())
                } else {
                    report.to_table()
                };
                let _ = std::io::Write::write_all(&mut std::io::stdout(), text.as_bytes());
                return ExitCode::SUCCESS;
            }
            let d = dur.unwrap_or(sc.host.duration);
            let mut progress = crate::progress::SimProgress::new(d, !json);
            let mut poll = |t| progress.poll(t);
            let opts = RunOptions::default()
                .seed(seed)
                .duration(dur)
                .check_invariants(check)
                .poll(&mut poll);
            let result = oversub::run(&sc, opts);
            progress.finish();
            let report = match result {
                Ok(r) => r,
                Err(RunError::Interrupted { .. }) => {
                    eprintln!(
                        "{}: interrupted at {} of {} simulated; no results",
                        file.display(),
                        progress.reached(),
                        d
                    );
                    return ExitCode::from(crate::progress::EXIT_INTERRUPTED);
                }
                Err(e) => return run_failed(&file, &e),
            };
            let text = if json {
                format!("{}\n", report.to_json())
            } else {
                report.to_table()
            };
            // A closed pipe (`| head`) is not an error worth a panic.
            let _ = std::io::Write::write_all(&mut std::io::stdout(), text.as_bytes());
            ExitCode::SUCCESS
        }
    }
}

/// A run that ended without a report: one line naming the scenario and why.
/// An interrupted run exits as an interrupted command does; a broken
/// invariant is a bug of the model (exit 1).
fn run_failed(file: &std::path::Path, e: &RunError) -> ExitCode {
    eprintln!("{}: {e}; no results", file.display());
    match e {
        RunError::Interrupted { .. } => ExitCode::from(crate::progress::EXIT_INTERRUPTED),
        _ => ExitCode::from(1),
    }
}
