//! The `oversub` command line.

use clap::{CommandFactory, Parser, Subcommand};
use oversub::prelude::{RunError, RunOptions};
use oversub::scenario::overrides::parse_override;

#[macro_use]
mod out;
mod conform;
mod output;
mod progress;
mod provenance;
mod reproduce;
mod sweep_files;
use oversub::scenario::{check_cli_seed, parse_cli_duration, Scenario};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

#[derive(Parser)]
#[command(
    name = "oversub",
    version = provenance::VERSION,
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
        /// Print one JSON object instead of a table (errors too: {"error": ...}).
        #[arg(long, conflicts_with = "brief")]
        json: bool,
        /// Print the first screen only: the run's line, one line per VM and
        /// the CPUs (no per-thread, per-task or per-cgroup tables with VMs).
        #[arg(long)]
        brief: bool,
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
        /// Also print the per-task scheduling latency table (as `perf sched
        /// latency`: run time, switches, preemptions, yield_to, wakeup
        /// latency p50/p99/max); no trace file is needed.
        #[arg(long, conflicts_with = "json")]
        latency: bool,
    },
    /// Read traces written by `run --trace`.
    Trace {
        #[command(subcommand)]
        cmd: TraceCmd,
    },
    /// Run a scenario over axes x seeds in parallel; write results.csv,
    /// results.jsonl, summary.csv and summary.md to DIR (docs/usage.md,
    /// "Sweeps").
    Sweep {
        file: PathBuf,
        #[arg(long)]
        out: PathBuf,
        /// Finish an interrupted sweep: skip the runs DIR keeps from it
        /// (same sweep file, scenarios and binary, else exit 2) and write
        /// the files an uninterrupted sweep writes.
        #[arg(long)]
        resume: bool,
        /// Adaptive seeds: add seeds to each point (the sweep's count per
        /// round, continuing after its largest seed) until the 95% CI
        /// half-width of its --adaptive-metric is at most 1 point (of the
        /// paired delta in percent; without a baseline, of the value
        /// relative to its mean) or the point has MAX seeds (2 ..= 100, at
        /// least the sweep's); cells still wider are marked "unresolved".
        #[arg(long, value_name = "MAX")]
        adaptive: Option<String>,
        /// The metric the adaptive stop rule judges.
        #[arg(
            long,
            value_name = "METRIC",
            default_value = "throughput",
            requires = "adaptive"
        )]
        adaptive_metric: String,
        /// Test only: stop as Ctrl-C does once N runs finished.
        #[arg(long, hide = true, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
        stop_after_runs: Option<u64>,
    },
    /// The seeds' evaluation and the reviewers' cases side by side with the
    /// published figures: DIR/results.csv, summary.md, report.html.
    Reproduce {
        #[arg(long)]
        out: PathBuf,
        /// The manifest's quick seeds and durations (the default one: 3 seeds
        /// of 100 ms instead of 5 of 500 ms to 2 s), same structure.
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
        #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=1000))]
        runs: u32,
        /// Print one JSON object instead of tables.
        #[arg(long)]
        json: bool,
        /// Override each scenario's [host].duration ("2s", "500ms", ...).
        #[arg(long, allow_hyphen_values = true)]
        duration: Option<String>,
        /// Simulate with this kernel preset instead of the running kernel's
        /// (6.1 (CFS), 6.12.0, 6.12.117, 6.18, 6.19, flat (sched/flat)).
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
        #[arg(long, default_value = "10s", allow_hyphen_values = true)]
        duration: String,
        /// Operations the run did (for per-op figures; at least 1).
        #[arg(long, conflicts_with = "ops_from", value_parser = clap::value_parser!(u64).range(1..))]
        ops: Option<u64>,
        /// Read the ops from the number after this text in the program's output.
        #[arg(long)]
        ops_from: Option<String>,
        /// Stop (exit 2) after this many trace events (at least 1).
        #[arg(long, default_value_t = oversub_record::DEFAULT_MAX_EVENTS, value_parser = clap::value_parser!(u64).range(1..))]
        max_events: u64,
        /// Trace ring buffer per CPU, KiB.
        #[arg(long, default_value_t = oversub_record::DEFAULT_BUFFER_KB, value_parser = clap::value_parser!(u64).range(64..=1_048_576))]
        buffer_kb: u64,
        /// Replace --out when it is a directory that holds files (without
        /// it, such a directory is refused: only a new or empty one is
        /// written). The old contents go only once the new files are whole.
        #[arg(long)]
        force: bool,
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
    /// Re-derive DIR/workload.json from DIR/profile.json (an `oversub
    /// record` directory) with this version's derivation; no re-recording.
    Derive {
        dir: PathBuf,
        /// Operations the recorded run did (at least 1; default: the
        /// recording's, else DIR/ops.txt's).
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
        ops: Option<u64>,
    },
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell),
    /// e.g. `oversub completions bash > /etc/bash_completion.d/oversub`.
    Completions { shell: clap_complete::Shell },
    /// Write the man pages (oversub.1, oversub-run.1, ...) into DIR
    /// (`make man`).
    #[command(name = "__man", hide = true)]
    Man { dir: PathBuf },
    /// A real worker process of `conform` (internal).
    #[command(name = "__worker", hide = true)]
    Worker {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
}

#[derive(Subcommand)]
enum TraceCmd {
    /// Print the per-task scheduling summary of a trace (the table of
    /// `run --latency` for the same run).
    Report { file: PathBuf },
}

fn load(file: &std::path::Path, sets: &[String]) -> Result<Scenario, String> {
    let mut parsed = Vec::new();
    for s in sets {
        match parse_override(s) {
            Ok(o) => parsed.push(o),
            Err(m) => return Err(format!("{}: {m}", file.display())),
        }
    }
    Scenario::load_with(file, &parsed).map_err(|e| e.to_string())
}

/// The defaults a reader should know about, on stderr: a program VM
/// without `ops` counts its guest kernel lock sections.
fn notes(file: &std::path::Path, sc: &Scenario) {
    for v in sc.vms.iter().filter(|v| v.ops_default) {
        eprintln!(
            "note: {}: vm {}: no ops: its ops (ops/s, op_p50/p99) are its guest kernel lock sections; \
             write ops = \"lock-sections\" to say so, or ops = \"TASK\" to count a program task's loops \
             (docs/workloads.md, \"ops\")",
            file.display(),
            v.name
        );
    }
}

/// A refused input: exit 2 with its one line, on stderr, or under `--json`
/// as one JSON object `{"error": LINE, "exit": 2}` on stdout (where the
/// result would have been).
fn refuse(json: bool, m: &str) -> ExitCode {
    if json {
        outln!("{}", serde_json::json!({ "error": m, "exit": 2 }));
    } else {
        eprintln!("{m}");
    }
    ExitCode::from(2)
}

/// The man pages of `cmd` and its visible subcommands into `dir`.
fn write_man(dir: &std::path::Path) -> Result<(), String> {
    output::check_out_dir(dir, "__man")?;
    let cmd = Cli::command();
    let mut files = Vec::new();
    let mut pages = vec![(String::from("oversub"), cmd.clone())];
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = format!("oversub-{}", sub.get_name());
        let bin = format!("oversub {}", sub.get_name());
        pages.push((name.clone(), sub.clone().display_name(name).bin_name(bin)));
    }
    for (name, c) in pages {
        let mut buf = Vec::new();
        clap_mangen::Man::new(c)
            .render(&mut buf)
            .map_err(|e| format!("{name}.1: {e}"))?;
        let text = String::from_utf8(buf).map_err(|e| format!("{name}.1: {e}"))?;
        files.push((dir.join(format!("{name}.1")), text));
    }
    output::write_set(&files)
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
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            use clap::error::ErrorKind;
            let json = std::env::args().any(|a| a == "--json");
            let shown = matches!(
                e.kind(),
                ErrorKind::DisplayHelp
                    | ErrorKind::DisplayVersion
                    | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            );
            // Help and version go through the checked standard output
            // (clap's own print ignores a failed write: exit 0 with
            // nothing written); a terminal keeps clap's colours.
            if shown && !e.use_stderr() {
                use std::io::IsTerminal;
                if !std::io::stdout().is_terminal() {
                    out!("{}", e.render());
                    return output::finish(ExitCode::SUCCESS);
                }
            }
            if json && !shown {
                let msg = e.kind().as_str().map_or_else(
                    || e.to_string().lines().next().unwrap_or("").to_string(),
                    |k| {
                        let first = e.to_string();
                        let first = first.lines().next().unwrap_or(k);
                        first.strip_prefix("error: ").unwrap_or(first).to_string()
                    },
                );
                return refuse(true, &msg);
            }
            e.exit()
        }
    };
    // The environment the tool honours, checked before any work.
    if let Err(m) =
        oversub::limits::check_threads_env().and_then(|()| provenance::source_date_epoch())
    {
        return output::finish(refuse(std::env::args().any(|a| a == "--json"), &m));
    }
    let code = command(cli);
    output::finish(code)
}

/// Checks a `--trace` path before the run: a `.json` file (the one format
/// written), in a directory that exists.
fn check_trace_path(out: &std::path::Path) -> Result<(), String> {
    if out.extension().is_none_or(|e| e != "json") {
        return Err(format!(
            "--trace {}: unsupported trace format: allowed OUT.json (Chrome/Perfetto JSON; ui.perfetto.dev opens it)",
            out.display()
        ));
    }
    Ok(())
}

fn command(cli: Cli) -> ExitCode {
    match cli.cmd {
        Cmd::Completions { shell } => {
            // Into memory first, then through the checked standard output
            // (clap_complete panics on a failed write: a full disk, a pipe).
            let mut buf = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "oversub", &mut buf);
            out!("{}", String::from_utf8_lossy(&buf));
            ExitCode::SUCCESS
        }
        Cmd::Man { dir } => match write_man(&dir) {
            Ok(()) => ExitCode::SUCCESS,
            Err(m) => refuse(false, &m),
        },
        Cmd::Calibrate { samples, json } => conform::calibrate(samples, json),
        Cmd::Record {
            out,
            duration,
            ops,
            ops_from,
            max_events,
            buffer_kb,
            force,
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
                force,
            };
            match oversub_record::record(&opts, &crate::progress::interrupt_flag()) {
                Ok(text) => {
                    outln!("{text}");
                    ExitCode::SUCCESS
                }
                Err(f) => {
                    eprintln!("{}", f.message);
                    ExitCode::from(f.code)
                }
            }
        }
        Cmd::Derive { dir, ops } => match oversub_record::derive_dir(&dir, ops) {
            Ok(text) => {
                outln!("{text}");
                ExitCode::SUCCESS
            }
            Err(f) => {
                eprintln!("{}", f.message);
                ExitCode::from(f.code)
            }
        },
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
                        return refuse(
                            json,
                            &format!(
                                "--kernel: unknown preset {k:?}: allowed {}",
                                oversub::sched::KernelPreset::names()
                            ),
                        );
                    }
                },
            };
            let duration = match duration.as_deref().map(parse_cli_duration) {
                None => None,
                Some(Ok(d)) => Some(d.0),
                Some(Err(m)) => return refuse(json, &format!("--duration: {m}")),
            };
            conform::conform(files, runs, json, duration, kernel)
        }
        Cmd::Sweep {
            file,
            out,
            resume,
            adaptive,
            adaptive_metric,
            stop_after_runs,
        } => {
            let mut spec = match oversub::sweep::spec::SweepSpec::load(&file) {
                Ok(s) => s,
                Err(m) => {
                    eprintln!("{m}");
                    return ExitCode::from(2);
                }
            };
            if let Some(max) = adaptive {
                match sweep_files::adaptive(&spec, &max, &adaptive_metric) {
                    Ok(a) => spec.adaptive = Some(a),
                    Err(m) => {
                        eprintln!("{m}");
                        return ExitCode::from(2);
                    }
                }
            }
            let _ = crate::progress::interrupt_flag();
            let keep = sweep_files::Keep {
                resume,
                stop_after: stop_after_runs,
            };
            match sweep_files::sweep_to_dir(&spec, &out, crate::progress::wanted(true), keep) {
                Ok(text) => {
                    out!("{text}");
                    outln!(
                        "full tables: {0}/summary.md, {0}/summary.csv; rows: {0}/results.csv, {0}/results.jsonl",
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
                    out!("{text}");
                    ExitCode::SUCCESS
                }
                Err(m) => failed(&m),
            }
        }
        Cmd::Trace {
            cmd: TraceCmd::Report { file },
        } => {
            let f = match oversub::limits::open_regular(
                &file,
                "a trace written by oversub run --trace",
                oversub::trace::report::MAX_BYTES,
            ) {
                Ok(f) => f,
                Err(m) => return refuse(false, &format!("{}: {m}", file.display())),
            };
            let r = std::io::BufReader::with_capacity(1 << 16, f);
            match oversub::trace::report::read(&file.display().to_string(), r) {
                Ok(l) => {
                    out!("{}", l.table());
                    ExitCode::SUCCESS
                }
                Err(m) => refuse(false, &m),
            }
        }
        Cmd::Check { file, sets } => match load(&file, &sets).map_err(|m| refuse(false, &m)) {
            Ok(sc) => {
                notes(&file, &sc);
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
            brief,
            check,
            sets,
            trace,
            trace_window,
            latency,
        } => {
            let sc = match load(&file, &sets) {
                Ok(s) => s,
                Err(m) => return refuse(json, &m),
            };
            notes(&file, &sc);
            let dur = match duration.as_deref().map(parse_cli_duration) {
                None => None,
                Some(Ok(d)) => Some(d),
                Some(Err(m)) => return refuse(json, &format!("--duration: {m}")),
            };
            let seed = match seed.as_deref().map(check_cli_seed) {
                None => None,
                Some(Ok(s)) => Some(s),
                Some(Err(m)) => return refuse(json, &format!("--seed: {m}")),
            };
            let d = dur.unwrap_or(sc.host.duration);
            let names = if trace.is_some() || latency {
                oversub::sim::Simulator::new(&sc).task_names()
            } else {
                Vec::new()
            };
            let lat = latency.then(|| {
                Arc::new(Mutex::new(Some(oversub::trace::latency::Latency::new(
                    names.clone(),
                ))))
            });
            if let Some(out) = trace {
                let window = match trace_window.as_deref().map(oversub::trace::parse_window) {
                    None => (0, u64::MAX),
                    Some(Ok(w)) => w,
                    Some(Err(m)) => return refuse(json, &m),
                };
                let t = Traced {
                    names,
                    seed,
                    d,
                    check,
                    window,
                    latency: lat.clone(),
                };
                let report = match trace_run(&sc, &t, &out, !json) {
                    Ok(r) => r,
                    Err(m) => return failed(&format!("{}: {m}", file.display())),
                };
                eprintln!(
                    "trace: {} (open it in https://ui.perfetto.dev)",
                    out.display()
                );
                if json {
                    outln!("{}", report.to_json());
                } else if brief {
                    out!("{}", report.to_brief());
                } else {
                    out!("{}", report.to_table());
                }
                print_latency(lat, d);
                return ExitCode::SUCCESS;
            }
            let mut progress = crate::progress::SimProgress::new(d, !json);
            let mut poll = |t| progress.poll(t);
            let mut opts = RunOptions::default()
                .seed(seed)
                .duration(dur)
                .check_invariants(check);
            if let Some(l) = &lat {
                opts = opts.trace(Box::new(oversub::trace::SharedSink(Arc::clone(l))));
            }
            let result = oversub::run(&sc, opts.poll(&mut poll));
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
            if json {
                outln!("{}", report.to_json());
            } else if brief {
                out!("{}", report.to_brief());
            } else {
                out!("{}", report.to_table());
            }
            print_latency(lat, d);
            ExitCode::SUCCESS
        }
    }
}

type SharedLatency = Arc<Mutex<Option<oversub::trace::latency::Latency>>>;

/// `run --latency`: the table after the run's own output.
fn print_latency(lat: Option<SharedLatency>, d: oversub::engine::Nanos) {
    if let Some(mut l) = lat.and_then(|l| l.lock().ok().and_then(|mut g| g.take())) {
        l.finish(d.0);
        outln!("");
        out!("{}", l.table());
    }
}

/// How `run --trace` runs.
struct Traced {
    /// The host tasks' names, by task id.
    names: Vec<String>,
    seed: Option<u64>,
    d: oversub::engine::Nanos,
    check: bool,
    window: (u64, u64),
    /// `--latency`'s summary, fed the same events.
    latency: Option<SharedLatency>,
}

/// `run --trace`: the run with the Chrome/Perfetto JSON streamed to a
/// temporary file next to `out` (created before the run, so an unwritable
/// path fails first), renamed into place when whole.
fn trace_run(
    sc: &Scenario,
    t: &Traced,
    out: &std::path::Path,
    progress_bar: bool,
) -> Result<oversub::report::Report, String> {
    use oversub::trace::{chrome::ChromeWriter, SharedSink, TraceSink};
    check_trace_path(out)?;
    let (file, f) = output::Streamed::create(out)?;
    let d = t.d;
    let vms = sc.vms.iter().map(|v| v.name.clone()).collect();
    let writer = ChromeWriter::new(
        std::io::BufWriter::new(f),
        t.names.clone(),
        sc.host.cpus,
        t.window.0,
        t.window.1,
    )
    .with_vm_names(vms);
    let shared = Arc::new(Mutex::new(Some(writer)));
    let mut sink: Box<dyn TraceSink> = Box::new(SharedSink(Arc::clone(&shared)));
    if let Some(l) = &t.latency {
        let lat = Box::new(SharedSink(Arc::clone(l)));
        sink = Box::new(oversub::trace::Tee(vec![sink, lat]));
    }
    let mut progress = crate::progress::SimProgress::new(d, progress_bar);
    let mut poll = |now| {
        let bytes = shared
            .lock()
            .ok()
            .and_then(|g| g.as_ref().map(|w| w.bytes))
            .unwrap_or(0);
        progress.trace_size(now, bytes, out);
        progress.poll(now)
    };
    // A traced run records its duration even when it is the scenario's
    // own (as `oversub run --trace` always has).
    let opts = RunOptions::default()
        .seed(t.seed)
        .duration(Some(d))
        .check_invariants(t.check)
        .trace(sink)
        .poll(&mut poll);
    let r = oversub::run(sc, opts);
    progress.finish();
    let report = match r {
        Ok(report) => report,
        Err(RunError::Interrupted { at }) => {
            return Err(format!(
                "interrupted at {} of {d} simulated; no trace written",
                oversub::engine::Nanos(at.0)
            ))
        }
        Err(e) => return Err(e.to_string()),
    };
    let writer = shared
        .lock()
        .ok()
        .and_then(|mut g| g.take())
        .ok_or_else(|| format!("--trace {}: the trace writer was lost", out.display()))?;
    writer
        .finish(t.window.1.min(d.0))
        .map_err(|e| format!("--trace {}: cannot write: {e}", out.display()))?;
    file.commit()?;
    Ok(report)
}

/// A run that ended without a report: one line naming the scenario and why.
/// A broken invariant is a bug of the model (exit 1); a run over its event
/// budget is refused input (exit 2).
fn run_failed(file: &std::path::Path, e: &RunError) -> ExitCode {
    eprintln!("{}: {e}; no results", file.display());
    match e {
        RunError::Interrupted { .. } => ExitCode::from(crate::progress::EXIT_INTERRUPTED),
        RunError::InvariantBroken { .. } => ExitCode::from(1),
        _ => ExitCode::from(2),
    }
}
