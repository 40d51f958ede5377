//! The seeds' evaluation per virtualization regime (the `regimes` section,
//! its sweep's `regime` axis: `oversub::sweep::regime`): the seed series'
//! policies over upstream with PV on or off and with APICv, AVIC or IPIv,
//! side by side, the published v1 gains beside, and which regime the
//! publication is consistent with. The seeds' setup (PV features, APICv) is
//! not published; the v3 figures were run "with APICv disabled". Everything
//! here is computed from the section's summary and `data/published.toml`.

use super::{cell, pct, Published, Section};
use oversub::sweep::summary::Cell;
use std::fmt::Write as _;

/// The section's name in the manifest.
pub const SECTION: &str = "regimes";

/// The seed series' policies shown per regime (the published one first).
const POLICIES: [&str; 2] = ["seed-v1", "seed-v3"];

/// The regimes of the section, in its axis order (empty without the axis).
fn regimes(s: &Section) -> Vec<&str> {
    s.spec
        .axes
        .iter()
        .find(|a| a.name == "regime")
        .map(|a| a.values.iter().map(|v| v.label.as_str()).collect())
        .unwrap_or_default()
}

/// The gain cell of `policy` under `regime` at a workload and VM count.
fn at<'a>(
    s: &'a Section,
    p: &Published,
    w: &str,
    vms: usize,
    policy: &str,
    regime: &str,
) -> Option<&'a Cell> {
    s.find(w, vms, &[("policy", policy), ("regime", regime)])
        .and_then(|pt| cell(pt, &p.v1.metric))
}

/// How one regime's simulated v1 gains meet the published ones.
#[derive(Debug, Clone, PartialEq)]
pub struct Score {
    pub regime: String,
    /// Cells with a published figure and a simulated gain.
    pub cells: usize,
    /// The published gain lies inside the simulated 95% CI (magnitude).
    pub in_ci: usize,
    /// The simulated gain has the published sign and its CI excludes 0.
    pub direction: usize,
    /// Both of the above.
    pub both: usize,
    /// Mean |simulated - published|, percentage points.
    pub mean_gap: f64,
}

/// Published figure inside the simulated interval, and direction: the
/// simulated CI excludes 0 on the published side (a deterministic or
/// one-seed cell has no interval: its mean decides alone).
fn judge(c: &Cell, published: f64) -> Option<(bool, bool, f64)> {
    let d = c.delta?.pct;
    if !d.mean.is_finite() || !published.is_finite() {
        return None;
    }
    let half = if d.half.is_finite() { d.half } else { 0.0 };
    let gap = d.mean - published;
    let in_ci = gap.abs() <= half;
    let direction = d.mean.signum() == published.signum() && d.mean.abs() > half;
    Some((in_ci, direction, gap))
}

/// Every regime's score against the published v1 gains.
pub fn scores(s: &Section, p: &Published) -> Vec<Score> {
    regimes(s)
        .into_iter()
        .map(|r| {
            let mut sc = Score {
                regime: r.to_string(),
                cells: 0,
                in_ci: 0,
                direction: 0,
                both: 0,
                mean_gap: f64::NAN,
            };
            let mut gaps = 0.0;
            for row in &p.v1.row {
                for (i, &vms) in row.vms.iter().enumerate() {
                    let published = row.gain_pct.get(i).copied().unwrap_or(f64::NAN);
                    let Some(c) = at(s, p, &row.workload, vms, &p.v1.policy, r) else {
                        continue;
                    };
                    let Some((in_ci, dir, gap)) = judge(c, published) else {
                        continue;
                    };
                    sc.cells += 1;
                    sc.in_ci += usize::from(in_ci);
                    sc.direction += usize::from(dir);
                    sc.both += usize::from(in_ci && dir);
                    gaps += gap.abs();
                }
            }
            if sc.cells > 0 {
                sc.mean_gap = gaps / sc.cells as f64;
            }
            sc
        })
        .collect()
}

/// The verdict's sentence on the regimes (None without the section). A
/// regime is consistent with the publication when, in every cell, the
/// published figure lies inside the simulated 95% CI and the simulated CI
/// excludes 0 on the published side; otherwise the sentence gives the most
/// cells any regime matches, by both and by direction alone, and the
/// smallest mean |gap|.
pub fn verdict(sections: &[Section], p: &Published) -> Option<String> {
    let s = sections.iter().find(|s| s.name == SECTION)?;
    let sc: Vec<Score> = scores(s, p).into_iter().filter(|x| x.cells > 0).collect();
    let cells = sc.iter().map(|x| x.cells).max()?;
    let each = sc
        .iter()
        .map(|x| {
            format!(
                "{} {}/{} in CI, {}/{} direction, mean |gap| {:.1} pp",
                x.regime, x.in_ci, x.cells, x.direction, x.cells, x.mean_gap
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    let pol = &p.v1.policy;
    let consistent: Vec<&str> = sc
        .iter()
        .filter(|x| x.both == x.cells)
        .map(|x| x.regime.as_str())
        .collect();
    let head = if !consistent.is_empty() {
        format!(
            "the published {pol} gains are consistent with {} (in every cell the published figure lies inside the simulated 95% CI and the simulated gain excludes 0 on its side)",
            consistent.join(" and ")
        )
    } else {
        // Who reaches the most cells of a kind ("" when none reaches one).
        let most = |f: &dyn Fn(&Score) -> usize| {
            let m = sc.iter().map(f).max().unwrap_or(0);
            let who: Vec<&str> = sc
                .iter()
                .filter(|x| m > 0 && f(x) == m)
                .map(|x| x.regime.as_str())
                .collect();
            if who.is_empty() {
                format!("{m}")
            } else {
                format!("{m} ({})", who.join(", "))
            }
        };
        let out = |x: &Score| x.cells - x.in_ci;
        let lo = sc.iter().map(out).min().unwrap_or(0);
        let hi = sc.iter().map(out).max().unwrap_or(0);
        let closest = sc
            .iter()
            .min_by(|a, b| a.mean_gap.total_cmp(&b.mean_gap))
            .map_or(String::new(), |x| {
                format!("; smallest mean |gap|: {} ({:.1} pp)", x.regime, x.mean_gap)
            });
        format!(
            "no regime is consistent with the published {pol} gains: a cell matches (published figure inside the simulated 95% CI and the simulated CI excluding 0 on its side) in at most {} of {} cells; the direction alone in at most {}; the published figure lies outside the simulated CI in {} of {} cells per regime (the others' intervals are wide enough to hold it){closest}. Per-cell intervals, not adjusted for the {} cells",
            most(&|x: &Score| x.both),
            cells,
            most(&|x: &Score| x.direction),
            if lo == hi { lo.to_string() } else { format!("{lo} to {hi}") },
            cells,
            sc.iter().map(|x| x.cells).sum::<usize>()
        )
    };
    Some(format!(
        "Regimes (PV, APICv, AVIC, IPIv; the seeds' setup is unpublished): {head}. Per regime: {each}."
    ))
}

/// The table: per workload and VM count, the published v1 gain and each
/// policy's gain over upstream in each regime (one block per policy), then
/// the scores. Empty without the section.
pub fn table(sections: &[Section], p: &Published) -> String {
    let Some(s) = sections.iter().find(|s| s.name == SECTION) else {
        return String::new();
    };
    let rs = regimes(s);
    let mut o = String::new();
    let _ = writeln!(
        o,
        "Throughput gain over upstream 6.12.117 per virtualization regime, % (mean ± 95% CI over seeds {:?}, paired; det = same at every seed)",
        s.spec.seeds
    );
    for pol in POLICIES {
        let _ = write!(
            o,
            "{:<8} {:>3} {:>9} {:<8}",
            "workload", "vms", "published", "policy"
        );
        for r in &rs {
            let _ = write!(o, " {r:>12}");
        }
        let _ = writeln!(o);
        for row in &p.v1.row {
            for (i, &vms) in row.vms.iter().enumerate() {
                let published = if pol == p.v1.policy {
                    row.gain_pct
                        .get(i)
                        .map_or("-".into(), |g| format!("{g:.1}"))
                } else {
                    "-".into()
                };
                let _ = write!(o, "{:<8} {vms:>3} {published:>9} {pol:<8}", row.workload);
                for r in &rs {
                    let _ = write!(o, " {:>12}", pct(at(s, p, &row.workload, vms, pol, r)));
                }
                let _ = writeln!(o);
            }
        }
    }
    let sc = scores(s, p);
    for (what, f) in [
        (
            "in CI",
            &(|x: &Score| format!("{}/{}", x.in_ci, x.cells)) as &dyn Fn(&Score) -> String,
        ),
        ("direction", &|x: &Score| {
            format!("{}/{}", x.direction, x.cells)
        }),
        ("|gap| pp", &|x: &Score| format!("{:.1}", x.mean_gap)),
    ] {
        let _ = write!(o, "{:<8} {:>3} {:>9} {:<8}", p.v1.policy, "", "", what);
        for x in &sc {
            let _ = write!(o, " {:>12}", f(x));
        }
        let _ = writeln!(o);
    }
    let _ = writeln!(
        o,
        "published: {}\nin CI = published figure inside the simulated 95% CI; direction = simulated CI excludes 0 on the published side; |gap| = mean |simulated - published|\nregimes: pv-on = every PV feature, no APIC acceleration; pv-off = no PV feature; apicv / avic / ipiv = PV on with kvm.apicv (enable_apicv), kvm.avic (avic), kvm.ipiv (enable_ipiv) (docs/reproduce.md, \"regimes\")",
        p.v1.source
    );
    o.lines().map(|l| format!("{}\n", l.trim_end())).collect()
}

/// `DIR/regimes/regimes.csv`: one row per workload, VM count, regime and
/// policy: the published gain (v1 only), the simulated one, its CI, the gap.
pub fn csv(sections: &[Section], p: &Published) -> Option<String> {
    let s = sections.iter().find(|s| s.name == SECTION)?;
    let mut o = String::from(
        "workload,vms,regime,policy,published_pct,simulated_pct,ci95,gap_pp,in_ci,direction\n",
    );
    let num = |x: f64| {
        if x.is_finite() {
            format!("{x:.3}")
        } else {
            String::new()
        }
    };
    for row in &p.v1.row {
        for (i, &vms) in row.vms.iter().enumerate() {
            for r in regimes(s) {
                for pol in POLICIES {
                    let published = if pol == p.v1.policy {
                        row.gain_pct.get(i).copied().unwrap_or(f64::NAN)
                    } else {
                        f64::NAN
                    };
                    let c = at(s, p, &row.workload, vms, pol, r);
                    let d = c.and_then(|c| c.delta).map(|d| d.pct);
                    let j = c.and_then(|c| judge(c, published));
                    let _ = writeln!(
                        o,
                        "{},{vms},{r},{pol},{},{},{},{},{},{}",
                        row.workload,
                        num(published),
                        d.map_or(String::new(), |d| num(d.mean)),
                        d.map_or(String::new(), |d| num(d.half)),
                        j.map_or(String::new(), |j| num(j.2)),
                        j.map_or(String::new(), |j| j.0.to_string()),
                        j.map_or(String::new(), |j| j.1.to_string()),
                    );
                }
            }
        }
    }
    Some(o)
}
