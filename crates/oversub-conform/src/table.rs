//! The text `oversub conform` prints: one table per scenario (real mean,
//! min..max, simulated, relative error, tolerance, verdict), the result line
//! above it and the statement of the tolerances. The JSON form is the
//! serialised [`ScenarioResult`]s (`runner`).

use crate::judge::{
    Row, ScenarioResult, LAT_ABS_TOL_NS, LAT_REL_TOL, SHARE_ABS_TOL, SHARE_REL_TOL,
};
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

/// The table of one scenario's rows.
pub fn table(rows: &[Row]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "  {:<6} {:<22} {:<7} {:>9} {:>19} {:>9} {:>8} {:>8}  verdict",
        "what", "name", "metric", "real", "real min..max", "sim", "rel.err", "tol"
    );
    for r in rows {
        let verdict = match (r.pass, &r.known) {
            (Some(true), _) => "ok",
            (Some(false), None) => "FAIL",
            (Some(false), Some(_)) => "known (see below)",
            (None, _) => "info",
        };
        let _ = writeln!(
            s,
            "  {:<6} {:<22} {:<7} {:>9} {:>19} {:>9} {:>7.1}% {:>8}  {verdict}",
            r.kind,
            r.name,
            r.metric,
            fmt_val(&r.metric, r.real_mean),
            format!(
                "{}..{}",
                fmt_val(&r.metric, r.real_min),
                fmt_val(&r.metric, r.real_max)
            ),
            fmt_val(&r.metric, r.sim),
            r.rel_err * 100.0,
            fmt_val(&r.metric, r.tolerance),
        );
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
        "tolerances: CPU share |sim-real| <= max({:.0}% of real, real spread max-min, {:.1} points, one tick of the run); latency p50 <= max({:.0}% of real, {:.0}us, real spread) + the spread of the timer-wake probe batches before the runs; p99 informational",
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
