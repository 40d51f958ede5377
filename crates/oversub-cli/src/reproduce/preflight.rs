//! The whole manifest checked before the first run: the self-contained
//! sections (`[eevdf_latency]`, `[yield_throttle]`, `[history]`) run after
//! the sweep sections, so a bad value in one of them would otherwise be
//! found only after every sweep had run. Every message is one line naming
//! the manifest, the field, the value and what is allowed.

use super::Manifest;
use oversub::engine::Nanos;
use oversub::limits::echo;
use oversub::scenario::{parse_cli_duration, Scenario};
use oversub::sweep::spec::{check_seeds, SweepSpec};
use std::path::Path;

/// A manifest duration (a section's `duration`, `quick_duration`): the
/// range of `[host].duration`.
pub(super) fn duration(mf: &str, field: &str, v: &str) -> Result<Nanos, String> {
    parse_cli_duration(v).map_err(|m| format!("{mf}: {field}: {m}"))
}

fn seeds(mf: &str, field: &str, s: &[u64]) -> Result<(), String> {
    check_seeds(s).map_err(|e| format!("{mf}: {field}: {e}"))
}

fn range(mf: &str, field: &str, v: u32, lo: u32, hi: u32) -> Result<(), String> {
    if (lo..=hi).contains(&v) {
        Ok(())
    } else {
        Err(format!(
            "{mf}: {field}: {v} is not allowed: allowed {lo} ..= {hi}"
        ))
    }
}

fn scenario(mf: &str, field: &str, dir: &Path, file: &str) -> Result<(), String> {
    Scenario::load(&dir.join(file))
        .map(|_| ())
        .map_err(|e| format!("{mf}: {field}: {e}"))
}

/// The seeds and durations of a section in both modes (`seeds`,
/// `quick_seeds`, `duration`, `quick_duration`), each field named as
/// `{at}{sep}{field}`: a manifest is right for `--quick` and the full run
/// alike.
fn both_modes(
    mf: &str,
    at: &str,
    sep: &str,
    seed_lists: [&[u64]; 2],
    durations: [&str; 2],
) -> Result<(), String> {
    seeds(mf, &format!("{at}{sep}seeds"), seed_lists[0])?;
    seeds(mf, &format!("{at}{sep}quick_seeds"), seed_lists[1])?;
    duration(mf, &format!("{at}{sep}duration"), durations[0])?;
    duration(mf, &format!("{at}{sep}quick_duration"), durations[1])?;
    Ok(())
}

/// A name that becomes a directory under `--out`: as a section's name.
pub(super) fn safe_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// Checks `[eevdf_latency]`, `[yield_throttle]` and `[history]` as their
/// runs would (seeds each once, durations, real run counts and lengths,
/// the scenario and program files, the history sweeps and their names),
/// and returns the history sweeps' specs with the manifest's seeds, so
/// that the caller counts their runs with the sections'.
pub(super) fn check(
    mf: &str,
    m: &Manifest,
    dir: &Path,
    quick: bool,
) -> Result<Vec<SweepSpec>, String> {
    for s in &m.section {
        let f = format!("section {}", s.name);
        if m.history.is_some() && s.name == "history" {
            return Err(format!(
                "{mf}: {f}: name: \"history\" is the [history] section's directory under --out: allowed another name"
            ));
        }
        both_modes(
            mf,
            &f,
            ": ",
            [&s.seeds, &s.quick_seeds],
            [&s.duration, &s.quick_duration],
        )?;
    }
    if let Some(c) = &m.eevdf_latency {
        let f = "eevdf_latency";
        both_modes(
            mf,
            f,
            ".",
            [&c.seeds, &c.quick_seeds],
            [&c.duration, &c.quick_duration],
        )?;
        range(mf, &format!("{f}.real_runs"), c.real_runs, 1, 20)?;
        range(
            mf,
            &format!("{f}.quick_real_runs"),
            c.quick_real_runs,
            1,
            20,
        )?;
        range(mf, &format!("{f}.real_seconds"), c.real_seconds, 1, 60)?;
        range(
            mf,
            &format!("{f}.quick_real_seconds"),
            c.quick_real_seconds,
            1,
            60,
        )?;
        scenario(mf, &format!("{f}.scenario"), dir, &c.scenario)?;
    }
    if let Some(c) = &m.yield_throttle {
        let f = "yield_throttle";
        both_modes(
            mf,
            f,
            ".",
            [&c.seeds, &c.quick_seeds],
            [&c.duration, &c.quick_duration],
        )?;
        range(mf, &format!("{f}.real_seconds"), c.real_seconds, 1, 60)?;
        range(
            mf,
            &format!("{f}.quick_real_seconds"),
            c.quick_real_seconds,
            1,
            60,
        )?;
        scenario(mf, &format!("{f}.scenario"), dir, &c.scenario)?;
        let p = dir.join(&c.program);
        oversub::limits::read_text(&p, "the benchmark's C source")
            .map_err(|e| format!("{mf}: {f}.program: {}: {e}", p.display()))?;
    }
    let mut specs = Vec::new();
    if let Some(c) = &m.history {
        both_modes(
            mf,
            "history",
            ".",
            [&c.seeds, &c.quick_seeds],
            [&c.duration, &c.quick_duration],
        )?;
        if c.sweeps.is_empty() {
            return Err(format!(
                "{mf}: history.sweeps: empty: allowed one or more sweep files"
            ));
        }
        let mut names = std::collections::BTreeSet::new();
        let mut stems = Vec::new();
        for (i, s) in c.sweeps.iter().enumerate() {
            // Each sweep's outputs go to DIR/history/<its file stem>/.
            let path = dir.join(s);
            let stem = path
                .file_stem()
                .map(|x| x.to_string_lossy().into_owned())
                .unwrap_or_default();
            if !safe_name(&stem) {
                return Err(format!(
                    "{mf}: history.sweeps[{i}]: {:?}: its file name without .toml names a directory under --out: allowed 1 to 64 letters, digits, '_' or '-'",
                    echo(s)
                ));
            }
            if !names.insert(stem.clone()) {
                return Err(format!(
                    "{mf}: history.sweeps[{i}]: {:?}: another sweep has the name \"{stem}\" (its outputs' directory): allowed each file name once",
                    echo(s)
                ));
            }
            stems.push(stem);
            let mut spec = SweepSpec::load(&path)?;
            spec.seeds = if quick { &c.quick_seeds } else { &c.seeds }.clone();
            specs.push(spec);
        }
        // A sweep's own durations name one of the sweeps (by file stem)
        // and are durations, in both modes.
        for (field, map) in [
            ("sweep_durations", &c.sweep_durations),
            ("quick_sweep_durations", &c.quick_sweep_durations),
        ] {
            for (k, v) in map {
                let f = format!("history.{field}.{}", echo(k));
                if !names.contains(k) {
                    let all: Vec<&str> = names.iter().map(String::as_str).collect();
                    return Err(format!(
                        "{mf}: {f}: not a [history] sweep: allowed the file stem of one of history.sweeps ({})",
                        all.join(", ")
                    ));
                }
                duration(mf, &f, v)?;
            }
        }
        // The adaptive caps (full mode; checked in both): a known sweep,
        // at least the section's seeds and 2, at most the limit.
        for k in c.sweep_max_seeds.keys() {
            if !names.contains(k) {
                let all: Vec<&str> = names.iter().map(String::as_str).collect();
                return Err(format!(
                    "{mf}: history.sweep_max_seeds.{}: not a [history] sweep: allowed the file stem of one of history.sweeps ({})",
                    echo(k),
                    all.join(", ")
                ));
            }
        }
        for (spec, name) in specs.iter().zip(&stems) {
            if let Some((field, max)) = c.max_seeds_of(name) {
                let a = oversub::sweep::adaptive::Adaptive {
                    max_seeds: max,
                    metric: String::new(),
                };
                a.check(c.seeds.len(), oversub::sweep::points(spec).len())
                    .map_err(|e| format!("{mf}: history.{field}: {e}"))?;
            }
        }
    }
    Ok(specs)
}
