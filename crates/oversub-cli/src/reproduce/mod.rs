//! `oversub reproduce`: the seeds' evaluation, the reviewers' topologies and
//! the s390 ping-pong, each a sweep file (`sweeps/reproduce.toml` lists
//! them), run and set beside the published figures (`data/published.toml`):
//! `DIR/results.csv`, `DIR/summary.md`, `DIR/report.html`, and each section's
//! sweep outputs under `DIR/<section>/`.
//!
//! Everything is defined by scenario files and `--set` overrides, so the
//! reproduction follows the model as it changes.

pub mod eevdf_latency;
pub mod flat;
pub mod history;
pub mod html;
pub mod plot;
mod preflight;
pub mod regimes;
pub mod verdict;
pub mod yield_throttle;

use crate::provenance::Provenance;
use crate::sweep_files;
use oversub::engine::Nanos;
use oversub::sweep::spec::SweepSpec;
use oversub::sweep::summary::{Cell, PointSummary};
use oversub::sweep::{self, Row};
use serde::Deserialize;
use std::fmt::Write as _;
use std::path::Path;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Manifest {
    published: String,
    #[serde(default)]
    section: Vec<RawSection>,
    /// The EEVDF latency talk (seed 004): real, simulated, published.
    eevdf_latency: Option<eevdf_latency::Config>,
    /// The sched_yield() throttle RFC (seed 003).
    yield_throttle: Option<yield_throttle::Config>,
    /// KVM's published history (issue 25).
    history: Option<history::Config>,
}

/// The seeds 003/004 figures of `data/published.toml` (optional tables).
#[derive(Deserialize, Default)]
struct PublishedExtra {
    eevdf_latency: Option<eevdf_latency::Published>,
    yield_throttle: Option<yield_throttle::Published>,
    history: Option<history::Published>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSection {
    name: String,
    title: String,
    sweep: String,
    seeds: Vec<u64>,
    duration: String,
    quick_seeds: Vec<u64>,
    quick_duration: String,
    /// Full mode: adaptive seeds for the headline cells (`sweep::adaptive`),
    /// up to this many per point; absent: the fixed `seeds`. Quick mode
    /// keeps `quick_seeds` and marks the cells the rule would not resolve.
    #[serde(default)]
    max_seeds: Option<usize>,
}

/// The published figures (`data/published.toml`).
#[derive(Deserialize, Clone, Debug)]
pub struct Published {
    pub v1: PublishedV1,
    pub s390: toml::Table,
}

#[derive(Deserialize, Clone, Debug)]
pub struct PublishedV1 {
    pub source: String,
    pub policy: String,
    pub baseline: String,
    pub metric: String,
    pub row: Vec<PublishedRow>,
}

#[derive(Deserialize, Clone, Debug)]
pub struct PublishedRow {
    pub workload: String,
    /// What the published row measures: part of the file's schema, not printed.
    #[allow(dead_code)]
    pub what: String,
    pub credited: String,
    pub vms: Vec<usize>,
    pub gain_pct: Vec<f64>,
}

/// One section's results.
pub struct Section {
    pub name: String,
    pub title: String,
    pub spec: SweepSpec,
    pub rows: Vec<Row>,
    pub summary: Vec<PointSummary>,
}

impl Section {
    /// The summary of the point with these labels (and workload/VM count).
    pub fn find(
        &self,
        workload: &str,
        vms: usize,
        labels: &[(&str, &str)],
    ) -> Option<&PointSummary> {
        self.summary.iter().find(|p| {
            p.workload == workload
                && p.vms == vms
                && labels
                    .iter()
                    .all(|(k, v)| p.labels.iter().any(|(a, b)| a == k && b == v))
        })
    }
}

pub fn cell<'a>(p: &'a PointSummary, metric: &str) -> Option<&'a Cell> {
    p.cells.iter().find(|c| c.metric == metric)
}

/// A manifest duration: the range of `[host].duration`.
fn dur(f: &str, v: &str) -> Result<Nanos, String> {
    oversub::scenario::parse_cli_duration(v).map_err(|m| format!("{f}: {m}"))
}

/// Runs every section and writes the outputs; returns the terminal text.
pub fn run(manifest: &Path, out: &Path, quick: bool, progress: bool) -> Result<String, String> {
    let mf = manifest.display().to_string();
    let src = oversub::limits::read_text(manifest, "a TOML reproduction manifest")
        .map_err(|m| format!("{mf}: {m}"))?;
    let m: Manifest = toml::from_str(&src).map_err(|e| {
        format!(
            "{mf}: {}",
            e.to_string().lines().collect::<Vec<_>>().join(" ")
        )
    })?;
    check_sections(
        &mf,
        &m.section,
        m.eevdf_latency.is_some() || m.yield_throttle.is_some() || m.history.is_some(),
    )?;
    let dir = manifest.parent().unwrap_or(Path::new("."));
    let history_specs = preflight::check(&mf, &m, dir, quick)?;
    let pf = dir.join(&m.published);
    let psrc = oversub::limits::read_text(&pf, "a TOML file of published figures")
        .map_err(|e| format!("{}: {e}", pf.display()))?;
    let published: Published = toml::from_str(&psrc).map_err(|e| {
        format!(
            "{}: {}",
            pf.display(),
            e.to_string().lines().collect::<Vec<_>>().join(" ")
        )
    })?;
    let extra: PublishedExtra = toml::from_str(&psrc).map_err(|e| {
        format!(
            "{}: {}",
            pf.display(),
            e.to_string().lines().collect::<Vec<_>>().join(" ")
        )
    })?;
    let wall = std::time::Instant::now();
    let mut specs = Vec::new();
    for s in &m.section {
        let mut spec = SweepSpec::load(&dir.join(&s.sweep))?;
        let (seeds, d, df) = if quick {
            (&s.quick_seeds, &s.quick_duration, "quick_duration")
        } else {
            (&s.seeds, &s.duration, "duration")
        };
        let sf = if quick { "quick_seeds" } else { "seeds" };
        oversub::sweep::spec::check_seeds(seeds)
            .map_err(|e| format!("{mf}: section {}: {sf}: {e}", s.name))?;
        spec.seeds = seeds.clone();
        spec.duration = Some(dur(&format!("{mf}: section {}: {df}", s.name), d)?);
        if let (Some(max), false) = (s.max_seeds, quick) {
            let a = oversub::sweep::adaptive::Adaptive {
                max_seeds: max,
                metric: published.v1.metric.clone(),
            };
            a.check(spec.seeds.len(), sweep::points(&spec).len())
                .map_err(|e| format!("{mf}: section {}: max_seeds: {e}", s.name))?;
            spec.adaptive = Some(a);
        }
        specs.push(spec);
    }
    // The reproduction's runs, its history sweeps' too, capped as one.
    let runs = specs
        .iter()
        .chain(&history_specs)
        .fold(0u64, |n, s| n.saturating_add(s.run_count()));
    if runs > oversub::limits::MAX_SWEEP_RUNS {
        return Err(format!(
            "{mf}: its sections make {runs} runs (points x seeds): allowed at most {}",
            oversub::limits::MAX_SWEEP_RUNS
        ));
    }
    let _lock = crate::output::claim_out_dir(out, "--out", &mf)?;
    let top = [
        "results.csv",
        "results.csv.meta.json",
        "summary.md",
        "report.html",
    ];
    crate::output::check_targets(&top.map(|f| out.join(f)))?;
    for s in &m.section {
        sweep_files::check_outputs(&out.join(&s.name))?;
    }
    // Every section's runs in one batch: the cores stay busy to the end
    // instead of waiting at each section's last long run.
    let refs: Vec<&SweepSpec> = specs.iter().collect();
    let results = sweep_files::run_many(&refs, "reproduce", progress)?;
    let prov = Provenance::new(
        results
            .iter()
            .flat_map(|(_, rows)| rows.iter().map(|r| r.kernel.as_str())),
    );
    let mut sections = Vec::new();
    let mut files = Vec::new();
    for ((s, spec), (points, rows)) in m.section.iter().zip(specs).zip(results) {
        // The headline cells: adaptive seeds (full mode with max_seeds), or
        // the fixed seeds judged by the same rule, so that quick mode shows
        // what it leaves unresolved.
        let judged = |p: &PointSummary| s.name == "seeds" && headline(p, &published);
        let (rows, mut summary) = sweep_files::extend_adaptive_where(
            &spec,
            &points,
            rows,
            &judged,
            "reproduce",
            progress,
        )?;
        sweep::adaptive::mark(&mut summary, &published.v1.metric, &judged);
        files.extend(sweep_files::outputs(&spec, &summary, &rows, &out.join(&s.name), &prov).0);
        sections.push(Section {
            name: s.name.clone(),
            title: s.title.clone(),
            spec,
            rows,
            summary,
        });
    }
    // The seeds 004 and 003 sections (self-contained: their own real runs
    // and simulations, markdown appended to summary.md and report.html).
    let mut extra_md = String::new();
    let mut judged_fail = false;
    let mut costs = None;
    if let Some(c) = &m.eevdf_latency {
        let o = eevdf_latency::run(c, dir, extra.eevdf_latency.as_ref(), quick)?;
        extra_md += &o.markdown;
        costs = o.costs;
        judged_fail = o.failed && c.judge;
    }
    if let Some(c) = &m.yield_throttle {
        extra_md += &yield_throttle::run(c, dir, extra.yield_throttle.as_ref(), quick, costs)?;
    }
    let mut history_runs = None;
    if let Some(c) = &m.history {
        let o = history::run(c, dir, extra.history.as_ref(), out, quick, progress)?;
        extra_md += &o.markdown;
        files.extend(o.files);
        history_runs = Some(o.runs);
    }
    let wall_s = wall.elapsed().as_secs_f64();
    let mut w = |name: &str, text: &str| -> Result<(), String> {
        files.push((out.join(name), text.to_string()));
        Ok(())
    };
    w("results.csv", &combined_csv(&sections))?;
    w("results.csv.meta.json", &prov.sidecar("results.csv"))?;
    // A manifest of only the self-contained sections has no v1 table.
    let table = if sections.is_empty() {
        String::new()
    } else {
        comparison(&sections, &published)
    };
    let mut verdict = verdict::verdict(&sections, &published);
    // The regimes beside the publication, after its first sentence (the
    // simulation against the publication).
    if let Some(v) = regimes::verdict(&sections, &published) {
        verdict.insert(verdict.len().min(1), v);
    }
    // The seeds' evaluation per virtualization regime (section regimes;
    // empty without it).
    let regimes_table = regimes::table(&sections, &published);
    let mut regimes_md = String::new();
    if !regimes_table.is_empty() {
        let _ = writeln!(
            regimes_md,
            "## Per virtualization regime (PV, APICv, AVIC, IPIv)\n\n```\n{regimes_table}```\n"
        );
    }
    if let Some(c) = regimes::csv(&sections, &published) {
        w(&format!("{}/regimes.csv", regimes::SECTION), &c)?;
    }
    // The flat host beside the 6.12.117 host (sections seeds-flat,
    // topologies-flat; empty without them).
    let flat_seeds = flat::seeds_table(&sections, &published);
    let flat_topo = flat::topologies_table(&sections);
    let mut flat_md = String::new();
    if !flat_seeds.is_empty() || !flat_topo.is_empty() {
        let _ = writeln!(flat_md, "## On a flat host (sched/flat)\n");
        for t in [&flat_seeds, &flat_topo]
            .into_iter()
            .filter(|t| !t.is_empty())
        {
            let _ = writeln!(flat_md, "```\n{t}```\n");
        }
    }
    let mut md = String::new();
    let _ = writeln!(
        md,
        "# oversub reproduce{}\n",
        if quick { " --quick" } else { "" }
    );
    md.push_str(&prov.md_line());
    // A manifest of only the self-contained sections (eevdf-latency,
    // yield-throttle) has no sweep to judge: no empty verdict heading.
    if !verdict.is_empty() {
        let _ = writeln!(md, "\n## Verdict\n");
        for v in &verdict {
            let _ = writeln!(md, "* {v}");
        }
    }
    if !table.is_empty() {
        let _ = writeln!(md, "\n## Published v1 gains beside the simulation\n");
        let _ = writeln!(md, "```\n{table}```\n");
    }
    if !flat_md.is_empty() {
        let _ = writeln!(md, "\n{flat_md}");
    }
    if !regimes_md.is_empty() {
        let _ = writeln!(md, "\n{regimes_md}");
    }
    for s in &sections {
        let _ = writeln!(md, "# Section {}: {}\n", s.name, s.title);
        let body = sweep::summary::to_markdown(&s.spec, &s.summary);
        // Demote the section's headings under its title.
        for l in body.lines().skip(1) {
            if let Some(h) = l.strip_prefix("## ") {
                let _ = writeln!(md, "### {h}");
            } else {
                let _ = writeln!(md, "{l}");
            }
        }
        md.push('\n');
    }
    md += &extra_md;
    w("summary.md", &md)?;
    let page = html::render(&sections, &published, quick, &verdict, &prov);
    w(
        "report.html",
        &html::with_extra(&page, &format!("{flat_md}{regimes_md}{extra_md}")),
    )?;
    crate::output::write_set(&files)?;
    let mut text = String::new();
    if !verdict.is_empty() {
        let _ = writeln!(text, "Verdict:");
        for v in &verdict {
            let _ = writeln!(text, "* {v}");
        }
        let _ = writeln!(text);
    }
    if !table.is_empty() {
        let _ = writeln!(text, "{table}");
    }
    for t in [&flat_seeds, &flat_topo, &regimes_table]
        .into_iter()
        .filter(|t| !t.is_empty())
    {
        let _ = writeln!(text, "{t}");
    }
    let _ = writeln!(
        text,
        "{} runs in {:.1} s wall. Report: {}  Tables: {}  Rows: {}",
        sections.iter().map(|s| s.rows.len()).sum::<usize>(),
        wall_s,
        out.join("report.html").display(),
        out.join("summary.md").display(),
        out.join("results.csv").display()
    );
    if m.eevdf_latency.is_some() {
        let _ = writeln!(
            text,
            "eevdf-latency: cyclictest under hackbench, real and simulated beside the talk's table: {}",
            out.join("summary.md").display()
        );
    }
    if m.yield_throttle.is_some() {
        let _ = writeln!(
            text,
            "yield-throttle: the RFC's benchmark, real and simulated beside its figures: {}",
            out.join("summary.md").display()
        );
    }
    if let Some(n) = history_runs {
        let _ = writeln!(
            text,
            "history: {n} runs, KVM's published before/after beside the simulated deltas: {}",
            out.join("history").join("summary.csv").display()
        );
    }
    if judged_fail {
        return Err(format!(
            "{text}eevdf-latency: a real latency median disagrees with the simulated one beyond the tolerance (above; {})",
            out.join("summary.md").display()
        ));
    }
    Ok(text)
}

/// Whether `p` is a cell of the headline table: PV on, the baseline policy
/// or one of [`COMPARE`].
fn headline(p: &PointSummary, published: &Published) -> bool {
    let has = |k: &str, v: &str| p.labels.iter().any(|(a, b)| a == k && b == v);
    has("pv", "on")
        && (has("policy", &published.v1.baseline) || COMPARE.iter().any(|c| has("policy", c)))
}

/// Section names become directories under `--out`: safe names only
/// (letters, digits, `_`, `-`; not empty), each once; at least one section.
fn check_sections(mf: &str, sections: &[RawSection], others: bool) -> Result<(), String> {
    if sections.is_empty() && !others {
        return Err(format!(
            "{mf}: section: empty: allowed one or more [[section]] tables (or [eevdf_latency] / [yield_throttle] / [history])"
        ));
    }
    let mut seen = std::collections::BTreeSet::new();
    for (i, s) in sections.iter().enumerate() {
        let ok = !s.name.is_empty()
            && s.name.len() <= 64
            && s.name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !ok {
            return Err(format!(
                "{mf}: section[{i}].name: {:?} is not allowed: allowed 1 to 64 letters, digits, '_' or '-' (it names a directory under --out)",
                oversub::limits::echo(&s.name)
            ));
        }
        if !seen.insert(s.name.as_str()) {
            return Err(format!(
                "{mf}: section[{i}].name: \"{}\" is used twice: allowed each name once",
                s.name
            ));
        }
    }
    Ok(())
}

/// All sections' rows: `section`, then the sweep columns over the union of
/// the sections' axes (a `key = "file"` axis's label included, beside the
/// `file` column's path).
fn combined_csv(sections: &[Section]) -> String {
    let mut axes: Vec<String> = Vec::new();
    for s in sections {
        for a in &s.spec.axes {
            if !axes.contains(&a.name) {
                axes.push(a.name.clone());
            }
        }
    }
    let mut rows: Vec<Row> = Vec::new();
    let mut secs = Vec::new();
    for s in sections {
        for r in &s.rows {
            rows.push(r.clone());
            secs.push(s.name.clone());
        }
    }
    let body = sweep::to_csv(&axes, &rows);
    let mut o = String::new();
    for (i, l) in body.lines().enumerate() {
        let first = if i == 0 {
            "section"
        } else {
            secs[i - 1].as_str()
        };
        let _ = writeln!(o, "{first},{l}");
    }
    o
}

/// Signed percent with its CI ("det" when every seed gives the same
/// difference), or "-"; "?" appended when the cell is unresolved
/// ([`UNRESOLVED`]).
pub(crate) fn pct(c: Option<&Cell>) -> String {
    let mut t = match c.and_then(|c| c.delta.map(|d| (c, d))) {
        Some((c, d)) if d.pct.mean.is_finite() => {
            if c.deterministic() {
                format!("{:+.1} det", d.pct.mean)
            } else if d.pct.half.is_finite() {
                format!("{:+.1}±{:.1}", d.pct.mean, d.pct.half)
            } else {
                format!("{:+.1}", d.pct.mean)
            }
        }
        _ => "-".into(),
    };
    if c.is_some_and(|c| c.resolved == Some(false)) {
        t.push('?');
    }
    t
}

/// The mark of an unresolved headline cell and its legend.
pub const UNRESOLVED: &str = "? = unresolved";

/// The headline cells the stop rule judged and how many it left
/// unresolved (`sweep::adaptive`), and the most seeds a cell had.
pub fn unresolved_count(s: &Section, p: &Published) -> (usize, usize, usize) {
    let metric = p.v1.metric.as_str();
    let cells: Vec<&Cell> = s
        .summary
        .iter()
        .filter(|pt| headline(pt, p))
        .filter_map(|pt| cell(pt, metric))
        .filter(|c| c.resolved.is_some())
        .collect();
    let open = cells.iter().filter(|c| c.resolved == Some(false)).count();
    let most = cells.iter().map(|c| c.ci.n).max().unwrap_or(0);
    (open, cells.len(), most)
}

/// The legend line of the unresolved marks: the rule, and how many cells
/// it left open.
pub fn unresolved_line(s: &Section, p: &Published) -> String {
    let (open, n, most) = unresolved_count(s, p);
    let how = match &s.spec.adaptive {
        Some(a) => format!(
            "adaptive seeds, {} to {} per cell (most used: {most})",
            s.spec.seeds.len(),
            a.max_seeds
        ),
        None => format!("fixed seeds {:?}", s.spec.seeds),
    };
    format!(
        "{UNRESOLVED}: 95% CI half-width above {} point ({how}); {open} of {n} headline cells (upstream included) unresolved",
        sweep::adaptive::RESOLVE_POINTS
    )
}

/// The HTML cell of a gain, coloured when it is a change (Holm-adjusted,
/// `Cell::changed`).
pub fn pct_cell(c: Option<&Cell>) -> String {
    let t = pct(c);
    match c.and_then(|c| c.delta.map(|d| (c, d))) {
        Some((c, d)) if c.changed() && d.pct.mean > 0.0 => {
            format!("<span class=pos>{t}</span>")
        }
        Some((c, _)) if c.changed() => format!("<span class=neg>{t}</span>"),
        _ => t,
    }
}

/// Policies shown beside v1 in the comparison table.
pub const COMPARE: [&str; 6] = [
    "seed-v1",
    "seed-v3",
    "series",
    "borrow",
    "series-penalty",
    "kpn-walk",
];

/// One row of the comparison with the published v1 figures: the numbers
/// both the terminal table and report.html format.
pub struct ComparisonRow<'a> {
    pub workload: &'a str,
    pub credited: &'a str,
    pub vms: usize,
    /// Published v1 gain, %.
    pub published: f64,
    /// Each `COMPARE` policy's cell (PV on), in `COMPARE` order.
    pub cells: Vec<Option<&'a Cell>>,
    /// Simulated v1 gain minus the published one, percentage points.
    pub gap: Option<f64>,
    /// The baseline's throughput (ops/s).
    pub upstream: Option<oversub::stats::Ci>,
    /// Whether the stop rule resolved the baseline's cell (None: not judged).
    pub upstream_resolved: Option<bool>,
}

/// The comparison rows of the "seeds" section `s` against `p`'s v1 figures.
pub fn comparison_rows<'a>(s: &'a Section, p: &'a Published) -> Vec<ComparisonRow<'a>> {
    let metric = p.v1.metric.as_str();
    let at = |w: &str, vms: usize, pol: &str| {
        s.find(w, vms, &[("policy", pol), ("pv", "on")])
            .and_then(|pt| cell(pt, metric))
    };
    let mut rows = Vec::new();
    for r in &p.v1.row {
        for (i, &vms) in r.vms.iter().enumerate() {
            let published = r.gain_pct.get(i).copied().unwrap_or(f64::NAN);
            let gap = at(&r.workload, vms, &p.v1.policy)
                .and_then(|c| c.delta)
                .map(|d| d.pct.mean - published);
            rows.push(ComparisonRow {
                workload: &r.workload,
                credited: &r.credited,
                vms,
                published,
                cells: COMPARE.iter().map(|c| at(&r.workload, vms, c)).collect(),
                gap,
                upstream: at(&r.workload, vms, &p.v1.baseline).map(|c| c.ci),
                upstream_resolved: at(&r.workload, vms, &p.v1.baseline).and_then(|c| c.resolved),
            });
        }
    }
    rows
}

/// The terminal table: per workload and VM count, the published v1 gain, the
/// simulated gains (PV on) of each policy over upstream, and v1's gap.
pub fn comparison(sections: &[Section], p: &Published) -> String {
    let Some(s) = sections.iter().find(|s| s.name == "seeds") else {
        return "No headline table: the manifest has no section named \"seeds\" (the seeds' evaluation; docs/reproduce.md).\n".into();
    };
    let mut o = String::new();
    let seeds = match &s.spec.adaptive {
        Some(a) => format!(
            "seeds {:?} and more, up to {} per cell (adaptive)",
            s.spec.seeds, a.max_seeds
        ),
        None => format!("seeds {:?}", s.spec.seeds),
    };
    let _ = writeln!(
        o,
        "Throughput gain over upstream 6.12.117, % (mean ± 95% CI over {seeds}, paired; PV on; det = same at every seed)"
    );
    let _ = write!(o, "{:<8} {:>3} {:>9} ", "workload", "vms", "published");
    for c in COMPARE {
        let _ = write!(o, "{:>12} ", c);
    }
    let _ = writeln!(o, "{:>9} {:>12}", "v1 gap", "upstream");
    let _ = write!(o, "{:<8} {:>3} {:>9} ", "", "", "v1 %");
    for _ in COMPARE {
        let _ = write!(o, "{:>12} ", "%");
    }
    let _ = writeln!(o, "{:>9} {:>12}", "pp", "ops/s");
    for r in comparison_rows(s, p) {
        let _ = write!(o, "{:<8} {:>3} {:>9.1} ", r.workload, r.vms, r.published);
        for c in &r.cells {
            let _ = write!(o, "{:>12} ", pct(*c));
        }
        let gap = r.gap.map_or("-".into(), |g| format!("{g:+.1}"));
        let mut base = r.upstream.map_or("-".into(), |c| format!("{:.0}", c.mean));
        if r.upstream_resolved == Some(false) {
            base.push('?');
        }
        let _ = writeln!(o, "{gap:>9} {base:>12}");
    }
    let _ = writeln!(
        o,
        "published: {}\ngap = simulated seed-v1 gain - published gain (percentage points)\n{}",
        p.v1.source,
        unresolved_line(s, p)
    );
    o
}
