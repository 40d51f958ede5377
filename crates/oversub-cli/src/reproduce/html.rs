//! `report.html`: one self-contained page (inline SVG, no scripts, no
//! external resources): the verdict in words and the provenance first, then
//! the comparison to the published figures, forest plots of the gains,
//! per-workload plots, latency tails as small multiples, and every section's
//! tables. Readable from a phone's width up (viewport meta, scrolling
//! tables, plots that shrink).

use super::plot::{forest, forest_range, hex, lines, tail_frame, tails, ForestRow, Series};
use super::{cell, comparison_rows, pct_cell, Published, Section, COMPARE};
use crate::provenance::Provenance;
use oversub::sweep::summary::to_markdown;
use std::fmt::Write as _;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Markdown (as `to_markdown` writes it) to HTML: headings, tables, text.
fn md_to_html(md: &str) -> String {
    let mut o = String::new();
    let mut in_table = false;
    let mut header_done = false;
    for l in md.lines() {
        if l.starts_with('|') {
            if !in_table {
                o.push_str("<div class=scroll><table>\n");
                in_table = true;
                header_done = false;
            }
            if l.starts_with("|---") {
                header_done = true;
                continue;
            }
            let tag = if header_done { "td" } else { "th" };
            o.push_str("<tr>");
            for c in l.trim_matches('|').split(" | ") {
                let _ = write!(o, "<{tag}>{}</{tag}>", esc(c.trim()));
            }
            o.push_str("</tr>\n");
            continue;
        }
        if in_table {
            o.push_str("</table></div>\n");
            in_table = false;
        }
        if let Some(h) = l.strip_prefix("## ") {
            let _ = writeln!(o, "<h4>{}</h4>", esc(h));
        } else if l.starts_with("# ") {
            continue;
        } else if !l.trim().is_empty() {
            let _ = writeln!(o, "<p>{}</p>", esc(l));
        }
    }
    if in_table {
        o.push_str("</table></div>\n");
    }
    o
}

const STYLE: &str =
    "body{font-family:sans-serif;max-width:1320px;margin:20px auto;padding:0 16px;color:#222;line-height:1.4}\
table{border-collapse:collapse;margin:8px 0 16px;font-size:12px}\
td,th{border:1px solid #ccc;padding:3px 6px;text-align:right;white-space:nowrap}\
th{background:#f0f0f0}td:first-child,th:first-child{text-align:left}\
.grid{display:flex;flex-wrap:wrap;gap:10px}.grid div{flex:0 0 auto}\
.scroll{overflow-x:auto;max-width:100%}.note{color:#555;font-size:13px}details{margin:8px 0}summary{cursor:pointer;font-weight:bold}\
.legend span{margin-right:14px;font-size:13px;white-space:nowrap}.pos{color:#0072b2;font-weight:bold}.neg{color:#d55e00;font-weight:bold}\
svg{max-width:100%;height:auto}.verdict{background:#f6f8fa;border-left:4px solid #0072b2;padding:8px 16px}\
.verdict li{margin:4px 0}.prov{font-size:12px;color:#555;word-break:break-word}\
@media (max-width:600px){body{margin:8px auto;padding:0 8px}h1{font-size:22px}.grid div{flex:1 1 100%}}";

/// The provenance paragraph.
fn provenance(prov: &Provenance) -> String {
    format!(
        "<p class=prov>Made by oversub {} (commit {}) with <code>{}</code> on {}, {} ({} cores, Linux {}); kernel presets modelled: {}.</p>",
        esc(prov.version),
        esc(prov.commit),
        esc(&prov.command),
        esc(&prov.date),
        esc(&prov.machine.cpu),
        prov.machine.cores,
        esc(&prov.machine.kernel),
        esc(&prov.kernel_presets.join(", "))
    )
}

pub fn render(
    sections: &[Section],
    p: &Published,
    quick: bool,
    verdict: &[String],
    prov: &Provenance,
) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "<!DOCTYPE html><html lang=en><head><meta charset=\"utf-8\"><meta name=viewport content=\"width=device-width, initial-scale=1\"><title>oversub reproduce</title><style>{STYLE}</style></head><body>"
    );
    let _ = writeln!(
        o,
        "<h1>oversub reproduce{}</h1>",
        if quick { " --quick" } else { "" }
    );
    let _ = writeln!(o, "<div class=verdict><h2>Verdict</h2><ul>");
    for v in verdict {
        let _ = writeln!(o, "<li>{}</li>", esc(v));
    }
    let _ = writeln!(o, "</ul></div>");
    o.push_str(&provenance(prov));
    let _ = writeln!(
        o,
        "<p class=note>Simulated (oversub) beside published. Each simulated number is the mean over seeds \
         with the half-width of its 95% confidence interval (Student t); gains are paired by seed against \
         <b>upstream</b> 6.12.117 on the same scenario. {}Each VM is a nested guest running its workload's \
         thread program (workloads/*.json, docs/workloads.md), built from the program's structure and measured \
         or estimated costs; nothing is tuned toward the published figures, so the gap is a finding.</p>",
        if quick {
            "This is the <b>--quick</b> run: few seeds and short runs, so intervals are wide; run without --quick for the full evaluation. "
        } else {
            ""
        }
    );
    if let Some(s) = sections.iter().find(|s| s.name == "seeds") {
        seeds_section(&mut o, s, p);
    }
    for s in sections {
        let _ = writeln!(
            o,
            "<h2 id=\"{}\">Section {}: {}</h2>",
            esc(&s.name),
            esc(&s.name),
            esc(&s.title)
        );
        let _ = writeln!(
            o,
            "<p class=note>Sweep file {}, seeds {:?}{}, duration {}. Raw rows: {}/results.csv.</p>",
            esc(&s.spec.file),
            s.spec.seeds,
            s.spec
                .adaptive
                .as_ref()
                .map(|a| format!(" (the table's cells: adaptive, up to {})", a.max_seeds))
                .unwrap_or_default(),
            s.spec.duration.map(|d| d.to_string()).unwrap_or_default(),
            esc(&s.name)
        );
        if s.name == "s390" {
            let _ = writeln!(
                o,
                "<p>Published: {} — {}.</p>",
                esc(p.s390.get("source").and_then(|v| v.as_str()).unwrap_or("")),
                esc(p.s390.get("note").and_then(|v| v.as_str()).unwrap_or(""))
            );
        }
        let md = to_markdown(&s.spec, &s.summary);
        let html = md_to_html(&md);
        if s.name == "seeds" {
            let _ = writeln!(
                o,
                "<details><summary>All tables of this section</summary>{html}</details>"
            );
        } else {
            o.push_str(&html);
        }
    }
    o.push_str("</body></html>\n");
    o
}

/// An open legend paragraph: one coloured line per (palette index, policy).
fn legend_of<'a>(items: impl Iterator<Item = (usize, &'a String)>) -> String {
    let mut l = String::from("<p class=legend>");
    for (i, pol) in items {
        let _ = write!(
            l,
            "<span><svg width=22 height=10><line x1=0 y1=5 x2=22 y2=5 stroke='{}' stroke-width=3/></svg> {}</span> ",
            hex(Some(i)),
            esc(pol)
        );
    }
    l
}

fn seeds_section(o: &mut String, s: &Section, p: &Published) {
    let _ = writeln!(o, "<h2>Published v1 gains beside the simulation</h2>");
    let _ = writeln!(o, "<p class=note>Published: {}.</p>", esc(&p.v1.source));
    let _ = write!(
        o,
        "<div class=scroll><table><tr><th>workload</th><th>VMs</th><th>credited to</th><th>published v1 (%)</th>"
    );
    for c in COMPARE {
        let _ = write!(o, "<th>{c} (%)</th>");
    }
    let _ = writeln!(o, "<th>v1 gap (pp)</th><th>upstream (ops/s)</th></tr>");
    for r in comparison_rows(s, p) {
        let _ = write!(
            o,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{:+.1}</td>",
            esc(r.workload),
            r.vms,
            esc(r.credited),
            r.published
        );
        for c in &r.cells {
            let _ = write!(o, "<td>{}</td>", pct_cell(*c));
        }
        let gap = r.gap.map_or("-".into(), |g| format!("{g:+.1}"));
        let mut base = r.upstream.map_or("-".into(), |c| c.fmt(0));
        if r.upstream_resolved == Some(false) {
            base.push('?');
        }
        let _ = writeln!(o, "<td>{gap}</td><td>{base}</td></tr>");
    }
    let _ = writeln!(o, "</table></div>");
    let _ = writeln!(
        o,
        "<p class=note>Cells: gain over upstream in percent, mean ± 95% CI over seeds (paired); \
         <span class=pos>blue</span> = a gain, <span class=neg>orange</span> = a loss, each a change \
         after Holm's adjustment (paired t, p<sub>Holm</sub> &lt; 0.05 over the throughput column); \
         \"det\" = the same difference at every seed. \
         gap = simulated seed-v1 gain minus the published gain, in percentage points. \
         PV features on (as the seeds' guests had). {}.</p>",
        esc(&super::unresolved_line(s, p))
    );
    forests(o, s, p);

    // Upstream and the table's policies only (at most eight series a plot),
    // each with its colour throughout the page.
    let policies: Vec<String> = std::iter::once(p.v1.baseline.clone())
        .chain(COMPARE.iter().map(|c| c.to_string()))
        .filter(|pol| {
            s.spec
                .axes
                .iter()
                .any(|a| a.name == "policy" && a.values.iter().any(|v| &v.label == pol))
        })
        .collect();
    let legend = legend_of(policies.iter().enumerate());
    let published_key = "<span><svg width=22 height=10><line x1=0 y1=5 x2=22 y2=5 stroke='#000' stroke-width=2 stroke-dasharray='6,4'/></svg> published v1</span>";
    for pv in ["on", "off"] {
        let _ = writeln!(
            o,
            "<h3>Per workload, guest PV features {pv}</h3><p class=note>Left: throughput (ops/s as the \
             workload defines them, summed over VMs); middle: gain over upstream (paired, % with 95% CI){}; \
             right: Jain's index over VMs of CPU time per vCPU (1 = equal; error bars clipped to 1).</p>{legend}{}</p><div class=grid>",
            if pv == "on" { ", published v1 dashed" } else { "" },
            if pv == "on" { published_key } else { "" }
        );
        for r in &p.v1.row {
            let series_of = |metric: &str, delta: bool| -> Vec<Series> {
                policies
                    .iter()
                    .enumerate()
                    .map(|(ci, pol)| Series {
                        name: pol.clone(),
                        dashed: false,
                        color: Some(ci),
                        points: r
                            .vms
                            .iter()
                            .filter_map(|&v| {
                                let c = cell(
                                    s.find(&r.workload, v, &[("policy", pol), ("pv", pv)])?,
                                    metric,
                                )?;
                                if delta {
                                    let d = c.delta?;
                                    Some((v as f64, d.pct.mean, d.pct.half))
                                } else {
                                    Some((v as f64, c.ci.mean, c.ci.half))
                                }
                            })
                            .collect(),
                    })
                    .filter(|x| !x.points.is_empty())
                    .collect()
            };
            let t = series_of(&p.v1.metric, false);
            o.push_str(&format!(
                "<div>{}</div>",
                lines(
                    &format!("{}: throughput", r.workload),
                    "VMs (16 vCPUs each)",
                    "ops/s",
                    &t,
                    true,
                    Some((0.0, f64::INFINITY))
                )
            ));
            let mut g = series_of(&p.v1.metric, true);
            if pv == "on" {
                g.push(Series {
                    name: "published v1".into(),
                    dashed: true,
                    color: None,
                    points: r
                        .vms
                        .iter()
                        .zip(&r.gain_pct)
                        .map(|(&v, &x)| (v as f64, x, f64::NAN))
                        .collect(),
                });
            }
            o.push_str(&format!(
                "<div>{}</div>",
                lines(
                    &format!("{}: gain over upstream", r.workload),
                    "VMs (16 vCPUs each)",
                    "% (paired, 95% CI)",
                    &g,
                    true,
                    None
                )
            ));
            let j = series_of("jain_vms_cpu", false);
            o.push_str(&format!(
                "<div>{}</div>",
                lines(
                    &format!("{}: fairness between VMs", r.workload),
                    "VMs (16 vCPUs each)",
                    "Jain's index of CPU per vCPU",
                    &j,
                    true,
                    Some((0.0, 1.0))
                )
            ));
        }
        let _ = writeln!(o, "</div>");
    }
    // Per-op latency tails, pooled over seeds, from the rows' histograms:
    // small multiples, one policy against upstream per panel.
    let _ = writeln!(
        o,
        "<h3>Per-op latency (PV on)</h3><p class=note>Distribution of the time each op takes \
         (a vCPU's work unit from its start to its end with preemption and spinning included, \
         as the scenario's <code>ops</code> defines it), all VMs and seeds pooled: the fraction of \
         ops slower than x (1 - CDF), both axes logarithmic. One row per workload and VM count, one \
         panel per policy: the policy in colour, upstream dashed grey over it, the axes shared along a row. \
         Histogram buckets are within 1.6%.</p>"
    );
    let hist = |w: &str, vms: usize, pol: &str| {
        let mut h = oversub::stats::hist::LogHist::default();
        for row in s.rows.iter().filter(|row| {
            row.workload == w
                && row.vms == vms
                && row.labels.iter().any(|(k, v)| k == "policy" && v == pol)
                && row.labels.iter().any(|(k, v)| k == "pv" && v == "on")
        }) {
            h.merge(&row.op_latency);
        }
        h.cdf()
            .into_iter()
            .map(|(x, f)| (x as f64 / 1e3, f, f64::NAN))
            .collect::<Vec<_>>()
    };
    for r in &p.v1.row {
        for &vms in &r.vms {
            let series: Vec<Series> = policies
                .iter()
                .enumerate()
                .map(|(ci, pol)| Series {
                    name: pol.clone(),
                    dashed: false,
                    color: Some(ci),
                    points: hist(&r.workload, vms, pol),
                })
                .collect();
            let Some(frame) = tail_frame(series.iter()) else {
                continue;
            };
            let _ = writeln!(
                o,
                "<h4>{}, {vms} VMs</h4><div class=grid>",
                esc(&r.workload)
            );
            let base = &series[0];
            for sr in series.iter().skip(1).filter(|x| !x.points.is_empty()) {
                // Upstream dashed over the policy: both stay visible where
                // they coincide.
                let pair = [
                    Series {
                        name: sr.name.clone(),
                        dashed: false,
                        color: sr.color,
                        points: sr.points.clone(),
                    },
                    Series {
                        name: base.name.clone(),
                        dashed: true,
                        color: base.color,
                        points: base.points.clone(),
                    },
                ];
                o.push_str(&format!(
                    "<div>{}</div>",
                    tails(&sr.name, "per-op latency (us)", &pair, frame, (250, 190))
                ));
            }
            let _ = writeln!(o, "</div>");
        }
    }
}

/// Forest plots: per policy of the table, its gain over upstream (PV on)
/// per workload and VM count, on one x axis for every panel; then seed-v1
/// beside the published v1 figures on an axis that holds both.
fn forests(o: &mut String, s: &Section, p: &Published) {
    let rows = comparison_rows(s, p);
    let per: Vec<(usize, &str, Vec<ForestRow>)> = COMPARE
        .iter()
        .enumerate()
        .map(|(k, pol)| {
            let fr = rows
                .iter()
                .map(|r| {
                    let c = r.cells[k];
                    let d = c.and_then(|c| c.delta);
                    ForestRow {
                        label: format!("{} {}", r.workload, r.vms),
                        mean: d.map_or(f64::NAN, |d| d.pct.mean),
                        half: d.map_or(f64::NAN, |d| d.pct.half),
                        changed: c.is_some_and(|c| c.changed()),
                        reference: None,
                    }
                })
                .collect();
            (k + 1, *pol, fr)
        })
        .collect();
    let xr = forest_range(per.iter().flat_map(|x| x.2.iter()));
    let _ = writeln!(
        o,
        "<h3>Gains at a glance</h3><p class=note>Each panel one policy: its throughput gain over \
         upstream (paired by seed, %, PV on) per workload and VM count, the dot the mean over seeds, \
         the bar its 95% CI; filled in colour = a change after Holm's adjustment, hollow grey = not. \
         Every panel has the same x axis. The last panel sets seed-v1 beside the published v1 gains \
         (black crosses) on an axis that holds both.</p><div class=grid>"
    );
    for (color, pol, fr) in &per {
        let _ = write!(
            o,
            "<div>{}</div>",
            forest(pol, "gain over upstream (%)", fr, *color, xr)
        );
    }
    if let Some((color, pol, fr)) = per.iter().find(|x| x.1 == p.v1.policy) {
        let with_pub: Vec<ForestRow> = fr
            .iter()
            .zip(&rows)
            .map(|(f, r)| ForestRow {
                label: f.label.clone(),
                mean: f.mean,
                half: f.half,
                changed: f.changed,
                reference: Some(r.published),
            })
            .collect();
        let xr = forest_range(with_pub.iter());
        let _ = write!(
            o,
            "<div>{}</div>",
            forest(
                &format!("{pol} vs published (x)"),
                "gain over upstream (%)",
                &with_pub,
                *color,
                xr
            )
        );
    }
    let _ = writeln!(o, "</div>");
}

/// `page` with the markdown of the self-contained sections (eevdf-latency,
/// yield-throttle) rendered before the end of its body; each `# ` line of
/// `md` becomes a section heading.
pub fn with_extra(page: &str, md: &str) -> String {
    if md.is_empty() {
        return page.to_string();
    }
    let mut frag = String::new();
    let mut chunk = String::new();
    let flush = |frag: &mut String, chunk: &mut String| {
        frag.push_str(&md_to_html(chunk));
        chunk.clear();
    };
    for l in md.lines() {
        if let Some(h) = l.strip_prefix("# ") {
            flush(&mut frag, &mut chunk);
            let _ = writeln!(frag, "<h2>{}</h2>", esc(h));
        } else {
            chunk.push_str(l);
            chunk.push('\n');
        }
    }
    flush(&mut frag, &mut chunk);
    match page.rfind("</body>") {
        Some(i) => format!("{}{frag}{}", &page[..i], &page[i..]),
        None => format!("{page}{frag}"),
    }
}
