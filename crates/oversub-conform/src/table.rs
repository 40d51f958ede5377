//! The text `oversub conform` prints: one table per scenario (real mean and
//! min..max, the simulated seeds' median and min..max, relative error,
//! tolerance, verdict, and the modes of a multimodal row), the result line
//! above it and the statement of the tolerances. The JSON form is the
//! serialised [`ScenarioResult`]s (`runner`).

use crate::distribution::Mode;
use crate::judge::{
    Row, ScenarioResult, LAT_ABS_TOL_NS, LAT_REL_TOL, SHARE_ABS_TOL, SHARE_REL_TOL,
};
use crate::simulated::SIM_SEEDS;
use std::fmt::Write;

fn fmt_val(metric: &str, v: f64) -> String {
    if metric == "share" {
        format!("{:.2}%", v * 100.0)
    } else if metric.ends_with("/s") {
        format!("{v:.1}/s")
    } else {
        format!("{:.1}us", v / 1000.0)
    }
}

fn fmt_modes(metric: &str, modes: &[Mode]) -> String {
    let m: Vec<String> = modes
        .iter()
        .map(|m| format!("{} x{}", fmt_val(metric, m.center), m.count))
        .collect();
    m.join(", ")
}

/// The verdict word of a row.
pub fn verdict(r: &Row) -> &'static str {
    match (r.pass, &r.known) {
        (Some(true), _) => "ok",
        (Some(false), None) => "FAIL",
        (Some(false), Some(_)) => "known (see below)",
        (None, _) if r.not_judged => "not judged",
        (None, _) => "info",
    }
}

/// Whether `n` values fell into modes worth a line: more than one mode, and
/// at least one holding two values or more (values each a mode of their
/// own are just the values, shown by min..max).
fn clustered(modes: &[Mode], n: usize) -> bool {
    modes.len() > 1 && modes.len() < n
}

/// The table of one scenario's rows: one line per row, and below a row
/// whose simulated or real values cluster into more than one mode
/// ([`clustered`]), a line with the modes (center x count) of the seeds and,
/// with several real runs, of the runs.
pub fn table(rows: &[Row]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "  {:<6} {:<22} {:<7} {:>9} {:>19} {:>11} {:>19} {:>8} {:>8}  verdict",
        "what",
        "name",
        "metric",
        "real",
        "real min..max",
        "sim median",
        "sim min..max",
        "rel.err",
        "tol"
    );
    let range = |m: &str, lo: f64, hi: f64| format!("{}..{}", fmt_val(m, lo), fmt_val(m, hi));
    for r in rows {
        let m = r.metric.as_str();
        let _ = writeln!(
            s,
            "  {:<6} {:<22} {:<7} {:>9} {:>19} {:>11} {:>19} {:>7.1}% {:>8}  {}",
            r.kind,
            r.name,
            m,
            fmt_val(m, r.real_mean),
            range(m, r.real_min, r.real_max),
            fmt_val(m, r.sim_median),
            range(m, r.sim_min, r.sim_max),
            r.rel_err * 100.0,
            fmt_val(m, r.tolerance),
            verdict(r),
        );
        if clustered(&r.sim_modes, r.sims.len()) || clustered(&r.real_modes, r.real.len()) {
            let mut line = format!("sim {}", fmt_modes(m, &r.sim_modes));
            if r.real.len() > 1 {
                let _ = write!(line, "; real {}", fmt_modes(m, &r.real_modes));
            }
            let _ = writeln!(
                s,
                "         modes (gap > {}): {line}",
                fmt_val(m, r.mode_gap)
            );
        }
    }
    let mut seen: Vec<String> = Vec::new();
    for r in rows.iter().filter(|r| r.pass == Some(false)) {
        if let Some(k) = &r.known {
            if !seen.contains(k) {
                let _ = writeln!(s, "  known disagreement: {k}");
                seen.push(k.clone());
            }
        }
    }
    s
}

/// The one-line statement of the tolerances.
pub fn tolerance_line() -> String {
    format!(
        "tolerances: the real mean passes inside [sim min - tol, sim max + tol] over {SIM_SEEDS} simulated seeds (task start orders); a row whose tol exceeds its real value is not judged; CPU share tol = max({:.0}% of real, real spread max-min, {:.1} points, one tick of the run); latency p50 tol = max({:.0}% of real, {:.0}us, real spread) + the spread of the timer-wake probe batches before the runs; p99 informational",
        SHARE_REL_TOL * 100.0,
        SHARE_ABS_TOL * 100.0,
        LAT_REL_TOL * 100.0,
        LAT_ABS_TOL_NS / 1000.0
    )
}

/// A scenario's result line and its table.
pub fn result_text(r: &ScenarioResult) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{}: {}{}",
        r.file,
        r.status.to_uppercase(),
        if r.message.is_empty() {
            String::new()
        } else {
            format!(" ({})", r.message)
        }
    );
    if !r.rows.is_empty() {
        s += &table(&r.rows);
    }
    s
}
