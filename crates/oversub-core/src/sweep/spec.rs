//! The sweep file: a base scenario, axes over scenario keys (each value is a
//! `--set` override, or a bundle of them under a label), seeds, and the
//! baseline each point is compared with.
//!
//! ```toml
//! base = "../scenarios/overcommit/dbench-2x16.toml"  # relative to this file
//! seeds = [1, 2, 3, 4, 5]
//! duration = "1s"                    # optional: overrides host.duration
//! set = ["kvm.apicv=true"]           # optional: applied to every run
//! baseline = { "host.yield.yield_to" = "upstream" }  # optional
//!
//! [[axis]]                           # plain axis: one key, its values
//! key = "host.yield.yield_to"
//! values = ["upstream", "deboost", "borrow"]
//!
//! [[axis]]                           # the scenario file itself: its
//! key = "file"                       # column is FILE_AXIS ("scenario",
//! values = ["../scenarios/overcommit/dbench-2x16.toml", "..."]  # the stem)
//!
//! [[axis]]                           # named bundles of overrides
//! name = "pv"
//! values = [ { label = "on", set = [] },
//!            { label = "off", set = ["guest.pv.spinlock=false"] } ]
//!
//! [[axis]]                           # virtualization regimes (regime.rs):
//! key = "regime"                     # each sets [guest.pv] and
//! values = ["pv-on", "ipiv"]         # kvm.{apicv,avic,ipiv}
//! ```

use crate::engine::Nanos;
use crate::scenario::overrides::{parse_override, Override};
use serde::Deserialize;
use std::path::{Path, PathBuf};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSweep {
    base: Option<String>,
    seeds: Vec<u64>,
    duration: Option<String>,
    #[serde(default)]
    set: Vec<String>,
    baseline: Option<toml::Table>,
    #[serde(default)]
    axis: Vec<RawAxis>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAxis {
    key: Option<String>,
    name: Option<String>,
    values: Vec<toml::Value>,
}

/// One value of an axis.
#[derive(Clone, Debug)]
pub struct AxisValue {
    /// How the value appears in results (CSV cell, summary row).
    pub label: String,
    /// Overrides it applies.
    pub sets: Vec<Override>,
    /// For the `file` axis: the scenario file.
    pub file: Option<PathBuf>,
}

/// The name of a `key = "file"` axis without `name`: its column holds the
/// file's stem (the label), beside the results' own `file` column, which
/// holds the path of every run's scenario file.
pub const FILE_AXIS: &str = "scenario";

#[derive(Clone, Debug)]
pub struct Axis {
    /// Column name: `name`, else `key` ([`FILE_AXIS`] for `key = "file"`).
    pub name: String,
    pub values: Vec<AxisValue>,
}

/// A validated sweep.
#[derive(Clone, Debug)]
pub struct SweepSpec {
    pub file: String,
    pub base: Option<PathBuf>,
    pub seeds: Vec<u64>,
    pub duration: Option<Nanos>,
    pub sets: Vec<Override>,
    pub axes: Vec<Axis>,
    /// Axis name -> label of the baseline value.
    pub baseline: Vec<(String, String)>,
    /// Adaptive seeds (`oversub sweep --adaptive MAX`; none from a file).
    pub adaptive: Option<Adaptive>,
}

/// A label for a TOML scalar as `--set` would spell it.
fn label_of(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        o => o.to_string(),
    }
}

impl SweepSpec {
    /// Its runs (points x seeds), counted without building a point
    /// (saturating).
    pub fn run_count(&self) -> u64 {
        self.axes.iter().fold(self.seeds.len() as u64, |n, a| {
            n.saturating_mul(a.values.len() as u64)
        })
    }

    pub fn load(path: &Path) -> Result<SweepSpec, String> {
        let f = path.display().to_string();
        let src =
            crate::limits::read_text(path, "a TOML sweep file").map_err(|m| format!("{f}: {m}"))?;
        SweepSpec::parse(&f, &src, path.parent().unwrap_or(Path::new(".")))
    }

    /// Parses sweep text; relative paths are resolved against `dir`.
    pub fn parse(f: &str, src: &str, dir: &Path) -> Result<SweepSpec, String> {
        let raw: RawSweep = toml::from_str(src).map_err(|e| {
            format!(
                "{f}: {}",
                e.to_string().lines().collect::<Vec<_>>().join(" ")
            )
        })?;
        let err = |field: &str, m: String| format!("{f}: {field}: {m}");
        if raw.seeds.is_empty() {
            return Err(err("seeds", "empty: give at least one seed".into()));
        }
        check_seeds(&raw.seeds).map_err(|m| err("seeds", m))?;
        let duration = match &raw.duration {
            None => None,
            // The range of [host].duration, checked here (it was "must be
            // positive" for 0, and 10^5 s was blamed on each point's file).
            Some(d) => {
                Some(crate::scenario::parse_cli_duration(d).map_err(|m| err("duration", m))?)
            }
        };
        let sets = raw
            .set
            .iter()
            .map(|s| parse_override(s).map_err(|m| err("set", m)))
            .collect::<Result<Vec<_>, _>>()?;
        let mut axes = Vec::new();
        for (i, a) in raw.axis.iter().enumerate() {
            let field = format!("axis[{i}]");
            let name = match (&a.name, a.key.as_deref()) {
                (Some(n), _) => n.clone(),
                (None, Some("file")) => FILE_AXIS.to_string(),
                (None, Some(k)) => k.to_string(),
                (None, None) => {
                    return Err(err(
                        &field,
                        "needs key = \"dotted.key\" or name = \"...\"".into(),
                    ))
                }
            };
            if a.values.is_empty() {
                return Err(err(&format!("{field}.values"), "empty".into()));
            }
            let mut values = Vec::new();
            for v in &a.values {
                let av = match (v, a.key.as_deref()) {
                    (toml::Value::Table(t), _) => bundle(t).map_err(|m| err(&format!("{field}.values"), m))?,
                    (v, Some("file")) => {
                        let toml::Value::String(p) = v else {
                            return Err(err(&format!("{field}.values"), format!("{v} is not a path")));
                        };
                        AxisValue {
                            label: Path::new(p)
                                .file_stem()
                                .map(|s| s.to_string_lossy().into_owned())
                                .unwrap_or_else(|| p.clone()),
                            sets: Vec::new(),
                            file: Some(clean(&dir.join(p))),
                        }
                    }
                    (v, Some("regime")) => {
                        let toml::Value::String(r) = v else {
                            return Err(err(&format!("{field}.values"), format!("{v} is not a regime name: allowed {}", super::regime::names())));
                        };
                        AxisValue {
                            label: r.clone(),
                            sets: super::regime::overrides(r)
                                .map_err(|m| err(&format!("{field}.values"), m))?,
                            file: None,
                        }
                    }
                    (v, Some(k)) => AxisValue {
                        label: label_of(v),
                        sets: vec![Override {
                            arg: format!("{k}={}", label_of(v)),
                            path: k.split('.').map(str::to_string).collect(),
                            value: v.clone(),
                            raw: label_of(v),
                        }],
                        file: None,
                    },
                    (v, None) => {
                        return Err(err(
                            &format!("{field}.values"),
                            format!("{v}: an axis without key takes {{ label = \"..\", set = [..] }} values"),
                        ))
                    }
                };
                if values.iter().any(|x: &AxisValue| x.label == av.label) {
                    return Err(err(
                        &format!("{field}.values"),
                        format!("\"{}\" appears twice", crate::limits::echo(&av.label)),
                    ));
                }
                values.push(av);
            }
            if axes.iter().any(|x: &Axis| x.name == name) {
                return Err(err(
                    &field,
                    format!("axis \"{}\" appears twice", crate::limits::echo(&name)),
                ));
            }
            axes.push(Axis { name, values });
        }
        // What the sweep sets itself may not also be an axis or a `set`:
        // the sweep's value would win silently (identical rows labelled
        // differently).
        let own = |path: &[String]| -> Option<&'static str> {
            match path {
                [h, k] if h == "host" && k == "seed" => Some("seeds"),
                [h, k] if h == "host" && k == "duration" && raw.duration.is_some() => {
                    Some("duration")
                }
                _ => None,
            }
        };
        for o in &sets {
            if let Some(by) = own(&o.path) {
                return Err(err(
                    "set",
                    format!(
                        "{}: the sweep's own {by} sets {}: allowed one of them",
                        o.arg,
                        o.path.join(".")
                    ),
                ));
            }
        }
        // A regime owns its keys (regime::KEYS): neither `set` nor another
        // axis may set one of them (which one would win is not obvious).
        if let Some(r) = raw
            .axis
            .iter()
            .position(|a| a.key.as_deref() == Some("regime"))
        {
            let owned = |o: &Override| super::regime::KEYS.contains(&o.path.join(".").as_str());
            if let Some(o) = sets.iter().find(|o| owned(o)) {
                return Err(err(
                    "set",
                    format!(
                        "{}: axis[{r}] \"regime\" sets {} for every run: allowed the regime or this key, not both",
                        o.arg,
                        o.path.join(".")
                    ),
                ));
            }
            for (i, a) in axes.iter().enumerate().filter(|(i, _)| *i != r) {
                if let Some(o) = a.values.iter().flat_map(|v| &v.sets).find(|o| owned(o)) {
                    return Err(err(
                        &format!("axis[{i}]"),
                        format!(
                            "\"{}\" sets {}, which axis[{r}] \"regime\" sets: allowed the regime or this key, not both",
                            crate::limits::echo(&a.name),
                            o.path.join(".")
                        ),
                    ));
                }
            }
        }
        for (i, a) in axes.iter().enumerate() {
            for v in &a.values {
                for o in &v.sets {
                    if let Some(by) = own(&o.path) {
                        return Err(err(
                            &format!("axis[{i}]"),
                            format!(
                                "\"{}\" sets {}, which the sweep's own {by} sets for every run: allowed {by} = ... or this axis, not both",
                                crate::limits::echo(&a.name),
                                o.path.join(".")
                            ),
                        ));
                    }
                }
            }
            if super::FIXED_COLUMNS.contains(&a.name.as_str())
                || super::metrics::GLOBAL_METRICS.contains(&a.name.as_str())
            {
                return Err(err(
                    &format!("axis[{i}].name"),
                    format!(
                        "\"{}\" is a column of the results already: allowed a name other than {} and the metric names",
                        crate::limits::echo(&a.name),
                        super::FIXED_COLUMNS.join(", ")
                    ),
                ));
            }
        }
        // The runs, counted before any point is built.
        let mut runs: u64 = raw.seeds.len() as u64;
        for a in &axes {
            runs = runs.saturating_mul(a.values.len() as u64);
        }
        if runs > crate::limits::MAX_SWEEP_RUNS {
            return Err(err(
                "axis",
                format!(
                    "{} axes x {} seeds make {runs} runs: allowed at most {}",
                    axes.len(),
                    raw.seeds.len(),
                    crate::limits::MAX_SWEEP_RUNS
                ),
            ));
        }
        let has_file_axis = raw.axis.iter().any(|a| a.key.as_deref() == Some("file"));
        let base = raw.base.as_ref().map(|b| clean(&dir.join(b)));
        if base.is_none() && !has_file_axis {
            return Err(err(
                "base",
                "missing: give base = \"scenario.toml\" or a key = \"file\" axis".into(),
            ));
        }
        let mut baseline = Vec::new();
        for (k, v) in raw.baseline.iter().flatten() {
            let Some(ax) = axes.iter().find(|a| &a.name == k) else {
                // The `key = "file"` axis is named FILE_AXIS, not "file".
                let hint = if k == "file" && axes.iter().any(|a| a.name == FILE_AXIS) {
                    format!(" (the key = \"file\" axis is named \"{FILE_AXIS}\")")
                } else {
                    String::new()
                };
                return Err(err(
                    "baseline",
                    format!(
                        "\"{}\" is not an axis: allowed {}{hint}",
                        crate::limits::echo(k),
                        axes.iter()
                            .map(|a| a.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ));
            };
            let l = label_of(v);
            if !ax.values.iter().any(|x| x.label == l) {
                return Err(err(
                    "baseline",
                    format!(
                        "\"{l}\" is not a value of axis \"{k}\": allowed {}",
                        ax.values
                            .iter()
                            .map(|x| x.label.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ));
            }
            baseline.push((k.clone(), l));
        }
        Ok(SweepSpec {
            file: f.to_string(),
            base,
            seeds: raw.seeds,
            duration,
            sets,
            axes,
            baseline,
            adaptive: None,
        })
    }
}

/// A seed list: not empty, no seed twice (a repeated seed would count one
/// run twice and narrow the confidence intervals falsely).
pub fn check_seeds(seeds: &[u64]) -> Result<(), String> {
    if seeds.is_empty() {
        return Err("empty: give at least one seed".into());
    }
    let mut seen = std::collections::BTreeSet::new();
    for s in seeds {
        if !seen.insert(s) {
            return Err(format!("seed {s} is listed twice: allowed each seed once"));
        }
    }
    Ok(())
}

fn bundle(t: &toml::Table) -> Result<AxisValue, String> {
    let label = match t.get("label") {
        Some(toml::Value::String(s)) => s.clone(),
        _ => return Err("a bundle needs label = \"...\"".into()),
    };
    let mut sets = Vec::new();
    for (k, v) in t {
        match (k.as_str(), v) {
            ("label", _) => {}
            ("set", toml::Value::Array(a)) => {
                for s in a {
                    let toml::Value::String(s) = s else {
                        return Err(format!("{label}: set takes \"KEY=VALUE\" strings, not {s}"));
                    };
                    sets.push(parse_override(s)?);
                }
            }
            (k, _) => {
                return Err(format!(
                    "{label}: unknown field \"{k}\": allowed label, set"
                ))
            }
        }
    }
    Ok(AxisValue {
        label,
        sets,
        file: None,
    })
}

/// `a/b/../c` -> `a/c` (lexically, so results name files as a person would).
pub fn clean(p: &Path) -> PathBuf {
    use std::path::Component;
    let mut out: Vec<Component> = Vec::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir if matches!(out.last(), Some(Component::Normal(_))) => {
                out.pop();
            }
            c => out.push(c),
        }
    }
    if out.is_empty() {
        return PathBuf::from(".");
    }
    out.iter().collect()
}

/// The adaptive mode's stop rule threshold, in points of percent: a point
/// is resolved when the 95% CI half-width of its judged metric is at most
/// this. (The adaptive mode's settings live with the spec that holds them;
/// `sweep::adaptive` runs the rounds.)
pub const RESOLVE_POINTS: f64 = 1.0;

/// The largest cap the adaptive mode accepts (seeds per point).
pub const MAX_SEEDS_LIMIT: usize = 100;

/// The adaptive mode of a sweep.
#[derive(Clone, Debug, PartialEq)]
pub struct Adaptive {
    /// Seeds per point at most (the cap), counting the sweep's own.
    pub max_seeds: usize,
    /// The metric the stop rule judges.
    pub metric: String,
}

impl Adaptive {
    /// Checks the cap against the sweep: at least its seed count, at most
    /// [`MAX_SEEDS_LIMIT`], and `points * max_seeds` runs within the
    /// sweep limit. The message names the value and what is allowed.
    pub fn check(&self, seeds: usize, points: usize) -> Result<(), String> {
        let m = self.max_seeds;
        if m < seeds.max(2) || m > MAX_SEEDS_LIMIT {
            return Err(format!(
                "{m} is not allowed: allowed {} ..= {MAX_SEEDS_LIMIT} (seeds per point at most: at least the sweep's {seeds} seeds, and 2)",
                seeds.max(2)
            ));
        }
        let runs = (points as u64).saturating_mul(m as u64);
        if runs > crate::limits::MAX_SWEEP_RUNS {
            return Err(format!(
                "{m} seeds x {points} points make {runs} runs: allowed at most {}",
                crate::limits::MAX_SWEEP_RUNS
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = "base = \"s.toml\"\nseeds = [1]\n";

    fn parse(src: &str) -> Result<SweepSpec, String> {
        SweepSpec::parse("t.toml", &format!("{HEAD}{src}"), Path::new("."))
    }

    #[test]
    fn regime_axis_expands_to_the_regimes_keys() {
        let s = parse("[[axis]]\nkey = \"regime\"\nvalues = [\"pv-off\", \"ipiv\"]\n").unwrap();
        let a = &s.axes[0];
        assert_eq!(a.name, "regime");
        let args =
            |i: usize| -> Vec<&str> { a.values[i].sets.iter().map(|o| o.arg.as_str()).collect() };
        assert_eq!(a.values[0].label, "pv-off");
        assert_eq!(
            args(0),
            [
                "guest.pv.steal_time=false",
                "guest.pv.spinlock=false",
                "guest.pv.sched_yield=false",
                "guest.pv.tlb_flush=false",
                "guest.pv.send_ipi=false",
                "kvm.apicv=false",
                "kvm.avic=false",
                "kvm.ipiv=false",
            ]
        );
        assert_eq!(a.values[1].label, "ipiv");
        assert!(args(1).contains(&"kvm.apicv=true") && args(1).contains(&"kvm.ipiv=true"));
        assert!(args(1).contains(&"guest.pv.send_ipi=true") && args(1).contains(&"kvm.avic=false"));
    }

    #[test]
    fn regime_refuses_an_unknown_name_and_its_keys_set_elsewhere() {
        let e = parse("[[axis]]\nkey = \"regime\"\nvalues = [\"x2apic\"]\n").unwrap_err();
        assert_eq!(
            e,
            "t.toml: axis[0].values: \"x2apic\" is not a regime: allowed pv-on, pv-off, apicv, avic, ipiv"
        );
        let e = parse("[[axis]]\nkey = \"regime\"\nvalues = [1]\n").unwrap_err();
        assert!(
            e.starts_with("t.toml: axis[0].values: 1 is not a regime name"),
            "{e}"
        );
        // Another axis setting a regime key, by bundle or plain key.
        let e = parse(
            "[[axis]]\nkey = \"regime\"\nvalues = [\"apicv\"]\n[[axis]]\nname = \"accel\"\nvalues = [{ label = \"x\", set = [\"kvm.ipiv=true\"] }]\n",
        )
        .unwrap_err();
        assert_eq!(
            e,
            "t.toml: axis[1]: \"accel\" sets kvm.ipiv, which axis[0] \"regime\" sets: allowed the regime or this key, not both"
        );
        let e = parse("[[axis]]\nkey = \"guest.pv.spinlock\"\nvalues = [true]\n[[axis]]\nkey = \"regime\"\nvalues = [\"avic\"]\n")
            .unwrap_err();
        assert!(
            e.starts_with("t.toml: axis[0]: \"guest.pv.spinlock\" sets guest.pv.spinlock"),
            "{e}"
        );
        // The sweep's own `set`.
        let e = parse(
            "set = [\"kvm.apicv=false\"]\n[[axis]]\nkey = \"regime\"\nvalues = [\"pv-on\"]\n",
        )
        .unwrap_err();
        assert_eq!(
            e,
            "t.toml: set: kvm.apicv=false: axis[0] \"regime\" sets kvm.apicv for every run: allowed the regime or this key, not both"
        );
        // Keys the regime does not own are fine.
        parse("set = [\"kvm.on_spin=ipi_v1\"]\n[[axis]]\nkey = \"regime\"\nvalues = [\"pv-on\"]\n")
            .unwrap();
    }
}
