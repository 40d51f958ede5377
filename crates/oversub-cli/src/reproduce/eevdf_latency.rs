//! Section `eevdf-latency` of `oversub reproduce`: the EEVDF latency talk
//! (seed 004: cyclictest wakeup latency at nice -19 / 0 / 19 under hackbench,
//! for CFS, EEVDF, its PREEMPT_SHORT patch, each with and without
//! RUN_TO_PARITY) three ways in one table:
//!
//! * real: this machine's running kernel with its default features, Debian's
//!   `cyclictest --policy=other` and `hackbench -p -T` (module [`real`]);
//! * simulated: `scenarios/latency/cyclictest-hackbench.toml` for the kernel
//!   presets and feature switches of [`VARIANTS`], with the host costs and
//!   hackbench's CPU per message measured on the machine in the same run;
//! * published: the talk's table (`data/published.toml`), its machine, not
//!   ours: only the shapes (orderings) are compared.
//!
//! The real rows are judged against the simulated preset of the running
//! kernel like `oversub conform` judges a latency median.

pub mod real;

use oversub::engine::Nanos;
use oversub::scenario::overrides::{parse_override, Override};
use oversub::scenario::{parse_duration, Scenario};
use oversub::sched::HostCosts;
use oversub_conform::host::HostInfo;
use oversub_conform::judge::{LAT_ABS_TOL_NS, LAT_REL_TOL};
use serde::Deserialize;
use std::fmt::Write as _;
use std::path::Path;

/// `[eevdf_latency]` of the reproduce manifest.
#[derive(Deserialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The scenario (relative to the manifest).
    pub scenario: String,
    pub seeds: Vec<u64>,
    pub duration: String,
    pub quick_seeds: Vec<u64>,
    pub quick_duration: String,
    /// Real runs per nice level, and cyclictest's `-D` (whole seconds).
    pub real_runs: u32,
    pub real_seconds: u32,
    pub quick_real_runs: u32,
    pub quick_real_seconds: u32,
    /// Exit 1 when a judged real row disagrees (`make test`); off for
    /// `make run`, whose figures are reported, not judged.
    #[serde(default)]
    pub judge: bool,
    /// Only the nice levels and variants the judge needs (`make test`).
    #[serde(default)]
    pub judge_only: bool,
    /// Disagreements written down with their cause, as conform's
    /// `conform-known` lines: `{ nice = 0, reason = "..." }`. A known row's
    /// failure is printed with the reason and not counted.
    #[serde(default)]
    pub known: Vec<Known>,
}

#[derive(Deserialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
pub struct Known {
    pub nice: i32,
    pub reason: String,
}

/// The talk's figures (`[eevdf_latency]` of `data/published.toml`).
#[derive(Deserialize, Clone, Debug)]
pub struct Published {
    pub source: String,
    pub machine: String,
    pub method: String,
    pub columns: Vec<String>,
    pub row: Vec<PublishedRow>,
}

#[derive(Deserialize, Clone, Debug)]
pub struct PublishedRow {
    pub nice: i32,
    /// Average latency per column, us.
    pub avg_us: Vec<f64>,
    /// Maximum latency per column, us (NaN-free: missing maxima are absent).
    #[serde(default)]
    pub max_us: Vec<f64>,
}

/// The nice levels of the talk.
pub const NICES: [i32; 3] = [-19, 0, 19];

/// One simulated column: a label, the preset and the switches turned off.
pub struct Variant {
    pub label: &'static str,
    pub preset: &'static str,
    pub off: &'static [&'static str],
    /// The talk's column this one stands for, if any.
    pub talk: Option<&'static str>,
}

/// The simulated columns. "CFS" is the 6.1 preset (Linux 6.1, CFS,
/// docs/model.md). There is no 6.6 preset: "6.6-era" is 6.12.0 with
/// the 6.12 additions that are switches turned off (PREEMPT_SHORT,
/// DELAY_DEQUEUE, PLACE_REL_DEADLINE); what else changed between 6.6 and
/// 6.12 is not switched (docs/reproduce.md).
pub const VARIANTS: [Variant; 8] = [
    Variant {
        label: "CFS",
        preset: "6.1",
        off: &[],
        talk: Some("CFS"),
    },
    Variant {
        label: "6.6-era",
        preset: "6.12.0",
        off: &["PREEMPT_SHORT", "DELAY_DEQUEUE", "PLACE_REL_DEADLINE"],
        talk: Some("EEVDF"),
    },
    Variant {
        label: "6.6-era NO_RTP",
        preset: "6.12.0",
        off: &[
            "PREEMPT_SHORT",
            "DELAY_DEQUEUE",
            "PLACE_REL_DEADLINE",
            "RUN_TO_PARITY",
        ],
        talk: Some("EEVDF no parity"),
    },
    Variant {
        label: "6.12",
        preset: "6.12.117",
        off: &[],
        talk: Some("PATCH"),
    },
    Variant {
        label: "6.12 NO_RTP",
        preset: "6.12.117",
        off: &["RUN_TO_PARITY"],
        talk: Some("PATCH no parity"),
    },
    Variant {
        label: "6.12 NO_PS",
        preset: "6.12.117",
        off: &["PREEMPT_SHORT"],
        talk: None,
    },
    Variant {
        label: "6.12 NO_RTP NO_PS",
        preset: "6.12.117",
        off: &["RUN_TO_PARITY", "PREEMPT_SHORT"],
        talk: None,
    },
    Variant {
        label: "6.18",
        preset: "6.18",
        off: &[],
        talk: None,
    },
];

/// Simulated latency of one (variant, nice): means over the seeds whose
/// cyclictest ran after a wakeup at least once, us (NaN when none did).
#[derive(Clone, Copy, Debug, Default)]
pub struct SimCell {
    pub avg_us: f64,
    pub p50_us: f64,
    pub max_us: f64,
    /// Seeds in which no wakeup of cyclictest was followed by its running
    /// (starved for the whole run: no latency sample at all).
    pub starved: usize,
    pub seeds: usize,
}

impl SimCell {
    /// `v` (one of the cell's figures) for a table, saying when seeds gave
    /// no sample instead of averaging their absence in as 0.
    fn show(&self, v: f64) -> String {
        if self.starved == self.seeds {
            "none ran (starved)".into()
        } else if self.starved > 0 {
            format!(
                "{} ({} of {} seeds starved)",
                fmt_us(v),
                self.starved,
                self.seeds
            )
        } else {
            fmt_us(v)
        }
    }
}

/// The section's result.
pub struct Outcome {
    pub markdown: String,
    pub failed: bool,
    /// The host costs calibrated in this run, if the real side ran.
    pub costs: Option<HostCosts>,
}

fn dur(f: &str, v: &str) -> Result<Nanos, String> {
    match parse_duration(v) {
        Ok(d) if d.0 > 0 => Ok(d),
        Ok(_) => Err(format!("{f}: must be positive")),
        Err(m) => Err(format!("{f}: {m}")),
    }
}

fn sets(list: &[String]) -> Result<Vec<Override>, String> {
    list.iter().map(|s| parse_override(s)).collect()
}

/// The scenario for one variant and nice level, with the machine's costs
/// and hackbench's measured CPU per message when there are any.
fn scenario(file: &Path, v: &Variant, nice: i32, m: &Measured) -> Result<Scenario, String> {
    let mut s = vec![
        format!("host.kernel={}", v.preset),
        format!("task.1.nice={nice}"),
    ];
    for f in v.off {
        s.push(format!("host.features.{f}=false"));
    }
    if let Some(c) = m.msg_cpu_ns {
        let half = (c / 2).max(1);
        s.push(format!("task.0.send={half}ns"));
        s.push(format!("task.0.recv={half}ns"));
    }
    let mut sc = Scenario::load_with(file, &sets(&s)?).map_err(|e| e.to_string())?;
    if let Some(h) = &m.host {
        sc.host.cpus = h.cpus;
        sc.host.hz = h.hz;
    }
    if let Some(c) = m.costs {
        sc.host.costs = c;
    }
    Ok(sc)
}

/// What was measured on the machine in this run and feeds the simulation.
#[derive(Clone, Debug, Default)]
pub struct Measured {
    pub host: Option<HostInfo>,
    pub costs: Option<HostCosts>,
    /// hackbench's CPU per message (both sides), ns.
    pub msg_cpu_ns: Option<u64>,
}

/// Runs `v` at `nice` over `seeds`: the means of the cyclictest task's
/// latency mean, median and maximum.
pub fn simulate(
    file: &Path,
    v: &Variant,
    nice: i32,
    m: &Measured,
    seeds: &[u64],
    d: Nanos,
) -> Result<SimCell, String> {
    let sc = scenario(file, v, nice, m)?;
    let mut acc = SimCell::default();
    for &seed in seeds {
        let opts = oversub::RunOptions::default()
            .seed(Some(seed))
            .duration(Some(d));
        let r = oversub::run(&sc, opts).map_err(|e| format!("{}: {e}", file.display()))?;
        let t = r
            .tasks
            .iter()
            .find(|t| t.name == "cyclictest")
            .ok_or_else(|| format!("{}: no task \"cyclictest\"", file.display()))?;
        let l = &t.wakeup_latency_ns;
        if l.samples == 0 {
            acc.starved += 1;
            continue;
        }
        acc.avg_us += l.mean as f64 / 1e3;
        acc.p50_us += l.p50 as f64 / 1e3;
        acc.max_us += l.max as f64 / 1e3;
    }
    let n = (seeds.len() - acc.starved) as f64;
    let mean = |v: f64| if n > 0.0 { v / n } else { f64::NAN };
    Ok(SimCell {
        avg_us: mean(acc.avg_us),
        p50_us: mean(acc.p50_us),
        max_us: mean(acc.max_us),
        starved: acc.starved,
        seeds: seeds.len(),
    })
}

/// The ordering of two figures as text ("<", ">" or "=").
fn ord(a: f64, b: f64) -> &'static str {
    if a < b {
        "<"
    } else if a > b {
        ">"
    } else {
        "="
    }
}

fn fmt_us(v: f64) -> String {
    if !v.is_finite() {
        "-".into()
    } else if v >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// Runs the section; `out` gets its outputs under `eevdf-latency/`.
pub fn run(
    cfg: &Config,
    manifest_dir: &Path,
    published: Option<&Published>,
    quick: bool,
) -> Result<Outcome, String> {
    let file = manifest_dir.join(&cfg.scenario);
    let (seeds, d, runs, secs) = if quick {
        (
            &cfg.quick_seeds,
            dur("eevdf_latency.quick_duration", &cfg.quick_duration)?,
            cfg.quick_real_runs,
            cfg.quick_real_seconds,
        )
    } else {
        (
            &cfg.seeds,
            dur("eevdf_latency.duration", &cfg.duration)?,
            cfg.real_runs,
            cfg.real_seconds,
        )
    };
    if seeds.is_empty() {
        return Err("eevdf_latency: no seeds".into());
    }
    if !(1..=60).contains(&secs) || !(1..=20).contains(&runs) {
        return Err(format!(
            "eevdf_latency: real runs {runs} of {secs} s: allowed 1..=20 runs of 1..=60 s"
        ));
    }
    // Check the scenario before any real run.
    Scenario::load(&file).map_err(|e| e.to_string())?;
    let nices: Vec<i32> = if cfg.judge_only {
        vec![0]
    } else {
        NICES.to_vec()
    };
    let mut md = String::new();
    let _ = writeln!(
        md,
        "# Section eevdf-latency: cyclictest wakeup latency under hackbench (seed 004, the EEVDF latency talk)\n"
    );
    let realres = real::measure(&nices, runs, secs);
    let measured = match &realres {
        Ok(r) => r.measured.clone(),
        Err(_) => Measured::default(),
    };
    match &realres {
        Ok(r) => md += &r.notes,
        Err(e) => {
            let _ = writeln!(
                md,
                "real: not run ({e}); simulated with the scenario's costs.\n"
            );
        }
    }
    let variants: Vec<&Variant> = if cfg.judge_only {
        VARIANTS.iter().filter(|v| v.label == "6.18").collect()
    } else {
        VARIANTS.iter().collect()
    };
    // sim[variant][nice], the runs spread over the cores.
    let jobs: Vec<(usize, i32)> = (0..variants.len())
        .flat_map(|vi| nices.iter().map(move |&n| (vi, n)))
        .collect();
    let cells: Vec<SimCell> = {
        use rayon::prelude::*;
        jobs.par_iter()
            .map(|&(vi, n)| simulate(&file, variants[vi], n, &measured, seeds, d))
            .collect::<Result<_, String>>()?
    };
    let sim: Vec<Vec<SimCell>> = cells.chunks(nices.len()).map(|c| c.to_vec()).collect();
    let _ = writeln!(
        md,
        "Simulated: {} s per run, seeds {:?}; figures are the means over seeds of the cyclictest task's mean / median / maximum latency (expiry to running), us.\n",
        d.0 as f64 / 1e9,
        seeds
    );
    // Judge: the real kernel against its own preset, with the probe-derived
    // timer wake (as conform).
    let mut failed = false;
    if let Ok(r) = &realres {
        let (jmd, f) = judge(r, &file, &nices, secs, &cfg.known)?;
        md += &jmd;
        failed = f;
    }
    // The comparison table: real, simulated, talk.
    let _ = writeln!(
        md,
        "## Average latency, us: real (this machine), simulated, the talk (its machine)\n"
    );
    let mut head = String::from("| nice | real 6.18 (median of runs) |");
    let mut sep = String::from("|---|---|");
    for v in &variants {
        let _ = write!(head, " sim {} |", v.label);
        sep.push_str("---|");
    }
    if let Some(p) = published {
        for c in &p.columns {
            let _ = write!(head, " talk {c} |");
            sep.push_str("---|");
        }
    }
    let _ = writeln!(md, "{head}\n{sep}");
    for (i, &n) in nices.iter().enumerate() {
        let realv = realres
            .as_ref()
            .ok()
            .and_then(|r| r.by_nice.get(i))
            .map_or("not run".to_string(), |x| fmt_us(x.avg_median()));
        let _ = write!(md, "| {n} | {realv} |");
        for row in &sim {
            let _ = write!(md, " {} |", row[i].show(row[i].avg_us));
        }
        if let Some(p) = published {
            match p.row.iter().find(|r| r.nice == n) {
                Some(r) => {
                    for a in &r.avg_us {
                        let _ = write!(md, " {} |", fmt_us(*a));
                    }
                }
                None => {
                    for _ in &p.columns {
                        md.push_str(" - |");
                    }
                }
            }
        }
        md.push('\n');
    }
    md.push('\n');
    let _ = writeln!(
        md,
        "## Median and maximum latency, us (simulated; the real medians are above)\n"
    );
    let _ = writeln!(md, "| variant | nice | p50 | max |\n|---|---|---|---|");
    for (v, row) in variants.iter().zip(&sim) {
        for (i, &n) in nices.iter().enumerate() {
            let _ = writeln!(
                md,
                "| {} | {n} | {} | {} |",
                v.label,
                row[i].show(row[i].p50_us),
                row[i].show(row[i].max_us)
            );
        }
    }
    md.push('\n');
    if let Some(p) = published.filter(|_| !cfg.judge_only) {
        md += &shapes(p, &variants, &sim, &nices);
    }
    Ok(Outcome {
        markdown: md,
        failed,
        costs: measured.costs,
    })
}

/// The real rows judged against the simulated running-kernel preset.
fn judge(
    r: &real::RealResult,
    file: &Path,
    nices: &[i32],
    secs: u32,
    known: &[Known],
) -> Result<(String, bool), String> {
    let mut md = String::new();
    let mut failed = false;
    let Some(h) = &r.measured.host else {
        return Ok((md, false));
    };
    let v = Variant {
        label: "running kernel",
        preset: h.preset.name(),
        off: &[],
        talk: None,
    };
    let _ = writeln!(
        md,
        "## Real against simulated on this machine (preset {}; judged like `oversub conform`)\n",
        h.preset
    );
    let _ = writeln!(md, "{}\n", oversub_conform::table::tolerance_line());
    let _ = writeln!(
        md,
        "| nice | real p50 per run, us | real median | sim p50 | tolerance | verdict | real avg (median) | sim avg | real max per run (info) |\n|---|---|---|---|---|---|---|---|---|"
    );
    for (i, &n) in nices.iter().enumerate() {
        let Some(x) = r.by_nice.get(i) else { continue };
        // The simulated timer wake from this nice level's probe batches.
        let mut m = r.measured.clone();
        let probe = real::median(&x.probes_ns);
        if let Some(c) = &mut m.costs {
            c.timer_wake = probe.saturating_sub(c.context_switch);
        }
        let s = simulate(
            file,
            &v,
            n,
            &m,
            &[1],
            Nanos(u64::from(secs) * 1_000_000_000),
        )?;
        let p50s: Vec<f64> = x.runs.iter().filter_map(|r| r.p50_us).collect();
        let avgs: Vec<f64> = x.runs.iter().map(|r| r.avg_us).collect();
        let (verdict, tol_txt, med) = if p50s.is_empty() {
            (
                "not judged (no median: histogram overflow)".to_string(),
                "-".into(),
                f64::NAN,
            )
        } else {
            let med = real::median_f(&p50s);
            let spread = p50s.iter().cloned().fold(f64::MIN, f64::max)
                - p50s.iter().cloned().fold(f64::MAX, f64::min);
            let pspread = (x.probes_ns.iter().max().copied().unwrap_or(0)
                - x.probes_ns.iter().min().copied().unwrap_or(0)) as f64
                / 1e3;
            let tol = (LAT_REL_TOL * med).max(LAT_ABS_TOL_NS / 1e3).max(spread) + pspread;
            let v = if tol >= med {
                "not judged (tolerance wider than the value)".to_string()
            } else if (s.p50_us - med).abs() <= tol {
                "ok".to_string()
            } else if let Some(k) = known.iter().find(|k| k.nice == n) {
                format!("known: {}", k.reason)
            } else {
                failed = true;
                "FAIL".to_string()
            };
            (v, format!("±{}", fmt_us(tol)), med)
        };
        let _ = writeln!(
            md,
            "| {n} | {} | {} | {} | {tol_txt} | {verdict} | {} | {} | {} |",
            p50s.iter()
                .map(|v| fmt_us(*v))
                .collect::<Vec<_>>()
                .join(", "),
            fmt_us(med),
            s.show(s.p50_us),
            fmt_us(real::median_f(&avgs)),
            s.show(s.avg_us),
            x.runs
                .iter()
                .map(|r| fmt_us(r.max_us))
                .collect::<Vec<_>>()
                .join(", "),
        );
    }
    md.push('\n');
    Ok((md, failed))
}

/// The talk's orderings against the simulated ones: across nice levels in
/// each column, and between the columns the talk compares at each level.
fn shapes(p: &Published, variants: &[&Variant], sim: &[Vec<SimCell>], nices: &[i32]) -> String {
    let mut md = String::new();
    let _ = writeln!(
        md,
        "## Shapes against the talk ({}; {}; its machine, not ours: orderings only)\n",
        p.machine, p.method
    );
    let _ = writeln!(
        md,
        "The talk's maxima, us (not compared: a maximum is noise on a VM host):\n"
    );
    let _ = writeln!(
        md,
        "| nice | {} |\n|---|{}",
        p.columns.join(" | "),
        "---|".repeat(p.columns.len())
    );
    for r in &p.row {
        let cells: Vec<String> = (0..p.columns.len())
            .map(|i| r.max_us.get(i).map_or("-".into(), |v| fmt_us(*v)))
            .collect();
        let _ = writeln!(md, "| {} | {} |", r.nice, cells.join(" | "));
    }
    md.push('\n');
    let col = |name: &str| p.columns.iter().position(|c| c == name);
    let talk = |c: usize, n: i32| {
        p.row
            .iter()
            .find(|r| r.nice == n)
            .and_then(|r| r.avg_us.get(c).copied())
    };
    let simv = |label: &str, n: i32| {
        let vi = variants.iter().position(|v| v.talk == Some(label))?;
        let ni = nices.iter().position(|&x| x == n)?;
        // A starved cell has no average to order.
        Some(sim[vi][ni].avg_us).filter(|v| v.is_finite())
    };
    let _ = writeln!(
        md,
        "| comparison | talk | simulated | same shape? |\n|---|---|---|---|"
    );
    let mut same = 0;
    let mut total = 0;
    let mut line = |what: String, t: Option<(f64, f64)>, s: Option<(f64, f64)>| {
        if let (Some((ta, tb)), Some((sa, sb))) = (t, s) {
            let (to, so) = (ord(ta, tb), ord(sa, sb));
            total += 1;
            if to == so {
                same += 1;
            }
            let _ = writeln!(
                md,
                "| {what} | {} {to} {} | {} {so} {} | {} |",
                fmt_us(ta),
                fmt_us(tb),
                fmt_us(sa),
                fmt_us(sb),
                if to == so { "yes" } else { "no" }
            );
        }
    };
    // Across nice levels, per talk column with a simulated counterpart.
    for v in variants.iter().filter(|v| v.talk.is_some()) {
        let name = v.talk.unwrap_or_default();
        let Some(c) = col(name) else { continue };
        for w in nices.windows(2) {
            line(
                format!("{name} ({}): nice {} vs {}", v.label, w[0], w[1]),
                talk(c, w[0]).zip(talk(c, w[1])),
                simv(name, w[0]).zip(simv(name, w[1])),
            );
        }
    }
    // Between columns at each nice level.
    let pairs = [
        ("CFS", "EEVDF"),
        ("EEVDF", "EEVDF no parity"),
        ("PATCH", "PATCH no parity"),
        ("EEVDF", "PATCH"),
        ("EEVDF no parity", "PATCH no parity"),
    ];
    for &n in nices {
        for (a, b) in pairs {
            let (Some(ca), Some(cb)) = (col(a), col(b)) else {
                continue;
            };
            line(
                format!("nice {n}: {a} vs {b}"),
                talk(ca, n).zip(talk(cb, n)),
                simv(a, n).zip(simv(b, n)),
            );
        }
    }
    let _ = writeln!(
        md,
        "\n{same} of {total} orderings as in the talk. The talk's PATCH is its own check in update_curr() (v2); what was merged in 6.12 as PREEMPT_SHORT only preempts for a wakee with a shorter slice, and every task here has the default slice, so the simulated 6.12 columns stand for the merged kernel, not the talk's patch. The simulated CFS column is the 6.1 preset (CFS of Linux 6.1 LTS), not necessarily the talk's CFS kernel. Published: {}\n",
        p.source
    );
    md
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file() -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../scenarios/latency/cyclictest-hackbench.toml")
    }

    fn variant(label: &str) -> &'static Variant {
        VARIANTS.iter().find(|v| v.label == label).unwrap()
    }

    /// The simulated columns differ where the kernels do: without
    /// RUN_TO_PARITY the nice -19 wakee preempts a running hackbench task
    /// sooner; PREEMPT_SHORT needs a shorter slice, and every task here has
    /// the default one, so turning it off changes nothing.
    #[test]
    fn run_to_parity_delays_the_wakee_and_preempt_short_needs_a_shorter_slice() {
        let m = Measured::default();
        let d = Nanos::from_ms(500);
        let sim = |label: &str| simulate(&file(), variant(label), -19, &m, &[1, 2], d).unwrap();
        let (rtp, no_rtp, no_ps) = (sim("6.12"), sim("6.12 NO_RTP"), sim("6.12 NO_PS"));
        assert!(no_rtp.avg_us < rtp.avg_us, "{no_rtp:?} vs {rtp:?}");
        assert_eq!(no_ps.avg_us, rtp.avg_us);
    }

    #[test]
    fn published_table_parses_and_has_every_nice_level() {
        let src = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/published.toml"),
        )
        .unwrap();
        #[derive(Deserialize)]
        struct P {
            eevdf_latency: Published,
        }
        let p: P = toml::from_str(&src).unwrap();
        for n in NICES {
            let r = p.eevdf_latency.row.iter().find(|r| r.nice == n).unwrap();
            assert_eq!(r.avg_us.len(), p.eevdf_latency.columns.len());
        }
    }
}
