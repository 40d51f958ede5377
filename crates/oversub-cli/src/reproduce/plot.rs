//! Inline SVG plots for the report (plotters' SVG backend): line plots
//! with error bars, forest plots of paired gains, and latency tails as small
//! multiples (one policy against the baseline per panel). Colours are the
//! Okabe-Ito palette (distinct under the common colour-vision deficiencies);
//! each plot draws at most eight series.

use plotters::prelude::*;

/// One line: its name and (x, y, optional CI half-width) points.
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64, f64)>,
    pub dashed: bool,
    /// Index into `COLORS`; `None` draws black.
    pub color: Option<usize>,
}

/// Okabe & Ito (2008), "Color Universal Design": distinguishable with
/// protanopia, deuteranopia and tritanopia. Index 0 (grey) is the baseline;
/// yellow comes last (low contrast on white).
pub const COLORS: [RGBColor; 8] = [
    RGBColor(110, 110, 110),
    RGBColor(230, 159, 0),
    RGBColor(86, 180, 233),
    RGBColor(0, 158, 115),
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(204, 121, 167),
    RGBColor(240, 228, 66),
];

/// "#rrggbb" of palette entry `i` (for the HTML legend).
pub fn hex(i: Option<usize>) -> String {
    match i {
        Some(i) => {
            let c = COLORS[i % COLORS.len()];
            format!("#{:02x}{:02x}{:02x}", c.0, c.1, c.2)
        }
        None => "#000000".into(),
    }
}

/// Axis tick text for a linear axis spanning `lo ..= hi`: one unit (none,
/// k, M) for the whole axis, chosen by its largest magnitude, and just
/// enough digits for ticks a tenth of the span apart: 1234567 -> "1.23M",
/// 312000 -> "312k", 0.995 -> "0.995".
fn tick(v: f64, lo: f64, hi: f64) -> String {
    let span = (hi - lo).abs().max(1e-12);
    let step = span / 10.0;
    let big = lo.abs().max(hi.abs());
    let unit = if big >= 1e6 {
        1e6
    } else if big >= 1e4 {
        1e3
    } else {
        1.0
    };
    let digits = (-(step / unit).log10()).ceil().clamp(0.0, 6.0) as usize;
    if v == 0.0 {
        return "0".into();
    }
    let suffix = match unit as u64 {
        1_000_000 => "M",
        1_000 => "k",
        _ => "",
    };
    format!("{:.*}{suffix}", digits, v / unit)
}

/// Tick text on a logarithmic axis: 0.5, 5, 50, 500, 5k, 50k, 5M.
fn log_tick(v: f64) -> String {
    let a = v.abs();
    if a >= 1e6 {
        format!("{}M", trim(v / 1e6))
    } else if a >= 1e3 {
        format!("{}k", trim(v / 1e3))
    } else {
        trim(v)
    }
}

fn trim(v: f64) -> String {
    let s = format!("{v:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

/// A line chart as an SVG string; error bars show each point's CI, clipped
/// to `clip` when given (an index bounded by definition). The legend is the
/// caller's (one for a grid of plots).
pub fn lines(
    title: &str,
    xlabel: &str,
    ylabel: &str,
    series: &[Series],
    xs_int: bool,
    clip: Option<(f64, f64)>,
) -> String {
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (410, 290)).into_drawing_area();
        let _ = root.fill(&WHITE);
        let all: Vec<(f64, f64, f64)> = series
            .iter()
            .flat_map(|s| s.points.iter().copied())
            .filter(|p| p.1.is_finite())
            .collect();
        if all.is_empty() {
            return String::new();
        }
        let (mut x0, mut x1) = (f64::MAX, f64::MIN);
        let (mut y0, mut y1) = (f64::MAX, f64::MIN);
        let clipped = |y: f64| match clip {
            Some((lo, hi)) => y.clamp(lo, hi),
            None => y,
        };
        for &(x, y, h) in &all {
            let h = if h.is_finite() { h } else { 0.0 };
            x0 = x0.min(x);
            x1 = x1.max(x);
            y0 = y0.min(clipped(y - h));
            y1 = y1.max(clipped(y + h));
        }
        if x1 <= x0 {
            x1 = x0 + 1.0;
        }
        let pad = ((y1 - y0) * 0.08).max(y1.abs() * 0.01).max(1e-9);
        let (y0, y1) = (y0 - pad, y1 + pad);
        let xpad = if xs_int { 0.25 } else { (x1 - x0) * 0.02 };
        let chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 15))
            .margin(10)
            .x_label_area_size(36)
            .y_label_area_size(64)
            .build_cartesian_2d(x0 - xpad..x1 + xpad, y0..y1);
        let Ok(mut chart) = chart else {
            return String::new();
        };
        let yfmt = move |y: &f64| tick(*y, y0, y1);
        let mut mesh = chart.configure_mesh();
        mesh.x_desc(xlabel)
            .y_desc(ylabel)
            .y_label_formatter(&yfmt)
            .light_line_style(WHITE.mix(0.0));
        if xs_int {
            mesh.x_labels((x1 - x0) as usize + 1)
                .x_label_formatter(&|x| format!("{:.0}", x));
        }
        let _ = mesh.draw();
        for s in series {
            let c = match s.color {
                Some(k) => COLORS[k % COLORS.len()],
                None => BLACK,
            };
            let style = ShapeStyle::from(&c).stroke_width(2);
            let pts: Vec<(f64, f64)> = s
                .points
                .iter()
                .filter(|p| p.1.is_finite())
                .map(|p| (p.0, p.1))
                .collect();
            let drawn = if s.dashed {
                chart.draw_series(DashedLineSeries::new(pts.clone(), 6, 4, style))
            } else {
                chart.draw_series(LineSeries::new(pts.clone(), style))
            };
            if let Ok(a) = drawn {
                a.label(s.name.clone()).legend(move |(x, y)| {
                    PathElement::new(
                        vec![(x, y), (x + 16, y)],
                        ShapeStyle::from(&c).stroke_width(2),
                    )
                });
            }
            let _ = chart.draw_series(pts.iter().map(|&(x, y)| Circle::new((x, y), 3, c.filled())));
            let _ = chart.draw_series(
                s.points
                    .iter()
                    .filter(|p| p.1.is_finite() && p.2.is_finite() && p.2 > 0.0)
                    .map(|&(x, y, h)| {
                        ErrorBar::new_vertical(x, clipped(y - h), y, clipped(y + h), c, 6)
                    }),
            );
        }
        let _ = root.present();
    }
    buf
}

/// The axes of a latency-tail plot: x from `x0` to `x1` (log), the
/// fraction slower from `y0` to 1.5 (log). Shared by a row of small
/// multiples so that their panels compare.
#[derive(Clone, Copy)]
pub struct TailFrame {
    pub x0: f64,
    pub x1: f64,
    pub y0: f64,
}

/// The frame that holds every series (None when none has a point).
pub fn tail_frame<'a>(series: impl Iterator<Item = &'a Series>) -> Option<TailFrame> {
    let pts: Vec<(f64, f64)> = series
        .flat_map(|s| s.points.iter().map(|p| (p.0, 1.0 - p.1)))
        .filter(|p| p.0.is_finite() && p.0 > 0.0 && p.1 > 0.0)
        .collect();
    if pts.is_empty() {
        return None;
    }
    let x0 = pts.iter().map(|p| p.0).fold(f64::MAX, f64::min) / 1.2;
    let x1 = (pts.iter().map(|p| p.0).fold(f64::MIN, f64::max) * 1.5).max(x0 * 10.0);
    let y0 = pts.iter().map(|p| p.1).fold(1.0, f64::min) / 2.0;
    Some(TailFrame { x0, x1, y0 })
}

/// Latency tails as an SVG string of `size` pixels: for each series, the
/// fraction of samples slower than x (1 - the empirical CDF), both axes
/// logarithmic, so the body and a tail of one op in 10^5 are both readable.
/// Each series' points are its CDF steps, (x > 0, CDF at x, unused); later
/// series are drawn over earlier ones.
pub fn tails(
    title: &str,
    xlabel: &str,
    series: &[Series],
    f: TailFrame,
    size: (u32, u32),
) -> String {
    let mut buf = String::new();
    {
        let TailFrame { x0, x1, y0 } = f;
        let root = SVGBackend::with_string(&mut buf, size).into_drawing_area();
        let _ = root.fill(&WHITE);
        let chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 13))
            .margin(6)
            .x_label_area_size(32)
            .y_label_area_size(44)
            .build_cartesian_2d((x0..x1).log_scale(), (y0..1.5).log_scale());
        let Ok(mut chart) = chart else {
            return String::new();
        };
        let _ = chart
            .configure_mesh()
            .x_desc(xlabel)
            .y_desc("fraction slower")
            .x_labels(4)
            .y_labels(4)
            .x_label_formatter(&|x| log_tick(*x))
            .y_label_formatter(&|y| format!("{y:.0e}"))
            .light_line_style(WHITE.mix(0.0))
            .draw();
        for s in series {
            let c = match s.color {
                Some(k) => COLORS[k % COLORS.len()],
                None => BLACK,
            };
            let style = ShapeStyle::from(&c).stroke_width(2);
            // Steps: the tail holds until the next bucket's bound.
            let mut line: Vec<(f64, f64)> = Vec::new();
            let mut last = 1.0;
            for p in s.points.iter().filter(|p| p.0 > 0.0 && p.1.is_finite()) {
                let tail = 1.0 - p.1;
                line.push((p.0, last));
                if tail <= 0.0 {
                    break;
                }
                line.push((p.0, tail));
                last = tail;
            }
            if s.dashed {
                let _ = chart.draw_series(DashedLineSeries::new(line, 5, 3, style));
            } else {
                let _ = chart.draw_series(LineSeries::new(line, style));
            }
        }
        let _ = root.present();
    }
    buf
}

/// One row of a forest plot: a label, the gain and its CI half-width
/// (NaN without one), whether it is a change, and an optional reference
/// value (a published figure) drawn as a black cross.
pub struct ForestRow {
    pub label: String,
    pub mean: f64,
    pub half: f64,
    pub changed: bool,
    pub reference: Option<f64>,
}

/// The x range that holds every row's interval (and reference), padded, 0
/// included.
pub fn forest_range<'a>(rows: impl Iterator<Item = &'a ForestRow>) -> (f64, f64) {
    let (mut lo, mut hi) = (0.0f64, 0.0f64);
    for r in rows {
        let h = if r.half.is_finite() { r.half } else { 0.0 };
        if r.mean.is_finite() {
            lo = lo.min(r.mean - h);
            hi = hi.max(r.mean + h);
        }
        if let Some(x) = r.reference.filter(|x| x.is_finite()) {
            lo = lo.min(x);
            hi = hi.max(x);
        }
    }
    let pad = ((hi - lo) * 0.06).max(0.5);
    (lo - pad, hi + pad)
}

/// A forest plot as an SVG string: one row per entry, top to bottom, the
/// gain as a dot with its 95% interval, filled in colour `color` when it
/// is a change, hollow grey otherwise; a vertical line at 0; x from `xr`.
pub fn forest(
    title: &str,
    xlabel: &str,
    rows: &[ForestRow],
    color: usize,
    xr: (f64, f64),
) -> String {
    let mut buf = String::new();
    if rows.is_empty() {
        return buf;
    }
    {
        let n = rows.len();
        let h = 70 + 22 * n as u32;
        let root = SVGBackend::with_string(&mut buf, (330, h)).into_drawing_area();
        let _ = root.fill(&WHITE);
        let ny = n as f64;
        let chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 14))
            .margin(8)
            .x_label_area_size(34)
            .y_label_area_size(92)
            .build_cartesian_2d(xr.0..xr.1, -0.6..ny - 0.4);
        let Ok(mut chart) = chart else {
            return String::new();
        };
        let labels: Vec<String> = rows.iter().map(|r| r.label.clone()).collect();
        let yfmt = move |y: &f64| {
            let k = y.round();
            if (y - k).abs() < 1e-6 && k >= 0.0 && (k as usize) < labels.len() {
                labels[labels.len() - 1 - k as usize].clone()
            } else {
                String::new()
            }
        };
        let (a, b) = xr;
        let xfmt = move |x: &f64| tick(*x, a, b);
        let _ = chart
            .configure_mesh()
            .x_desc(xlabel)
            .x_labels(6)
            .y_labels(2 * n + 2)
            .y_label_formatter(&yfmt)
            .x_label_formatter(&xfmt)
            .disable_y_mesh()
            .light_line_style(WHITE.mix(0.0))
            .draw();
        let _ = chart.draw_series(LineSeries::new(
            vec![(0.0, -0.6), (0.0, ny - 0.4)],
            ShapeStyle::from(&BLACK.mix(0.5)).stroke_width(1),
        ));
        let c = COLORS[color % COLORS.len()];
        let grey = COLORS[0];
        for (i, r) in rows.iter().enumerate() {
            let y = ny - 1.0 - i as f64;
            if !r.mean.is_finite() {
                continue;
            }
            let col = if r.changed { c } else { grey };
            if r.half.is_finite() && r.half > 0.0 {
                let _ = chart.draw_series(std::iter::once(ErrorBar::new_horizontal(
                    y,
                    (r.mean - r.half).max(xr.0),
                    r.mean,
                    (r.mean + r.half).min(xr.1),
                    ShapeStyle::from(&col).stroke_width(2),
                    6,
                )));
            }
            let dot = if r.changed {
                Circle::new((r.mean, y), 4, col.filled())
            } else {
                Circle::new((r.mean, y), 4, ShapeStyle::from(&col).stroke_width(2))
            };
            let _ = chart.draw_series(std::iter::once(dot));
            if let Some(x) = r.reference.filter(|x| x.is_finite()) {
                let _ = chart.draw_series(std::iter::once(Cross::new(
                    (x, y),
                    5,
                    ShapeStyle::from(&BLACK).stroke_width(2),
                )));
            }
        }
        let _ = root.present();
    }
    buf
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_use_one_unit_per_axis() {
        // An axis from 0 to 2500: every label in plain numbers, none "2k".
        let t: Vec<String> = [0.0, 500.0, 1000.0, 2000.0]
            .iter()
            .map(|&v| tick(v, 0.0, 2500.0))
            .collect();
        assert_eq!(t, ["0", "500", "1000", "2000"]);
        let t: Vec<String> = [0.0, 5000.0, 20000.0]
            .iter()
            .map(|&v| tick(v, 0.0, 25000.0))
            .collect();
        assert_eq!(t, ["0", "5k", "20k"]);
        assert_eq!(log_tick(5000.0), "5k");
        assert_eq!(log_tick(0.5), "0.5");
    }
}
