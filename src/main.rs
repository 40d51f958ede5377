//! The `oversub` command line.

use clap::{Parser, Subcommand};
use oversub::scenario::overrides::parse_override;
use oversub::scenario::{parse_duration, Scenario};
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
        /// Override [host].seed.
        #[arg(long)]
        seed: Option<u64>,
        /// Override [host].duration ("5s", "250ms", ...).
        #[arg(long)]
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
    /// results.jsonl, summary.csv and summary.md to DIR (README, "Sweeps").
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
        /// Fewer seeds, shorter runs, same structure (about a minute).
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
        #[arg(long)]
        duration: Option<String>,
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

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.cmd {
        Cmd::Worker { args } => ExitCode::from(oversub::conform::worker::main(&args) as u8),
        Cmd::Conform {
            files,
            runs,
            json,
            duration,
        } => {
            let duration = match duration.as_deref().map(parse_duration) {
                None => None,
                Some(Ok(d)) if d.0 > 0 => Some(d.0),
                Some(Ok(_)) => {
                    eprintln!("--duration: must be positive");
                    return ExitCode::from(2);
                }
                Some(Err(m)) => {
                    eprintln!("--duration: {m}");
                    return ExitCode::from(2);
                }
            };
            let opts = oversub::conform::Options {
                files,
                runs,
                json,
                duration,
            };
            ExitCode::from(oversub::conform::run(&opts) as u8)
        }
        Cmd::Sweep { file, out } => {
            let spec = match oversub::sweep::spec::SweepSpec::load(&file) {
                Ok(s) => s,
                Err(m) => {
                    eprintln!("{m}");
                    return ExitCode::from(2);
                }
            };
            let tty = std::io::IsTerminal::is_terminal(&std::io::stderr());
            match oversub::sweep::sweep_to_dir(&spec, &out, tty) {
                Ok(md) => {
                    print!("{md}");
                    println!(
                        "\nwrote {}/results.csv, results.jsonl, summary.csv, summary.md",
                        out.display()
                    );
                    ExitCode::SUCCESS
                }
                Err(m) => {
                    eprintln!("{m}");
                    ExitCode::from(2)
                }
            }
        }
        Cmd::Reproduce {
            out,
            quick,
            manifest,
        } => {
            let tty = std::io::IsTerminal::is_terminal(&std::io::stderr());
            match oversub::reproduce::run(&manifest, &out, quick, tty) {
                Ok(text) => {
                    print!("{text}");
                    ExitCode::SUCCESS
                }
                Err(m) => {
                    eprintln!("{m}");
                    ExitCode::from(2)
                }
            }
        }
        Cmd::Check { file, sets } => match load(&file, &sets) {
            Ok(sc) => {
                println!(
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
            let dur = match duration.as_deref().map(parse_duration) {
                None => None,
                Some(Ok(d)) if d.0 > 0 => Some(d),
                Some(Ok(_)) => {
                    eprintln!("--duration: must be positive");
                    return ExitCode::from(2);
                }
                Some(Err(m)) => {
                    eprintln!("--duration: {m}");
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
                let mut sc = sc.clone();
                if let Some(s) = seed {
                    sc.host.seed = s;
                }
                let d = dur.unwrap_or(sc.host.duration);
                let (report, text) = oversub::run_traced(&sc, d, window);
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
            let report = if check {
                let mut sc = sc.clone();
                if let Some(s) = seed {
                    sc.host.seed = s;
                }
                let mut sim = oversub::sim::Simulator::new(&sc);
                sim.set_check_invariants(true);
                let mut r = sim.run(dur.unwrap_or(sc.host.duration));
                r.seed = sc.host.seed;
                r.record_scenario(&sc, dur);
                r
            } else {
                oversub::run_scenario(&sc, seed, dur)
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
