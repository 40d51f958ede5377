//! The `oversub` command line.

use clap::{Parser, Subcommand};
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
    },
    /// Validate a scenario file only.
    Check { file: PathBuf },
}

fn load(file: &std::path::Path) -> Result<Scenario, ExitCode> {
    Scenario::load(file).map_err(|e| {
        eprintln!("{e}");
        ExitCode::from(2)
    })
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.cmd {
        Cmd::Check { file } => match load(&file) {
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
        } => {
            let sc = match load(&file) {
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
            let report = if check {
                let mut sc = sc.clone();
                if let Some(s) = seed {
                    sc.host.seed = s;
                }
                let mut sim = oversub::sim::Simulator::new(&sc);
                sim.set_check_invariants(true);
                let mut r = sim.run(dur.unwrap_or(sc.host.duration));
                r.seed = sc.host.seed;
                r
            } else {
                oversub::run_scenario(&sc, seed, dur)
            };
            if json {
                println!("{}", report.to_json());
            } else {
                print!("{}", report.to_table());
            }
            ExitCode::SUCCESS
        }
    }
}
