//! Inline SVG line plots for the report (plotters' SVG backend).

use plotters::prelude::*;

/// One line: its name and (x, y, optional CI half-width) points.
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64, f64)>,
    pub dashed: bool,
    /// Index into `COLORS`; `None` draws black.
    pub color: Option<usize>,
}

pub const COLORS: [RGBColor; 12] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
    RGBColor(0, 0, 128),
    RGBColor(128, 128, 0),
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

/// Axis tick text with just enough digits for ticks `span / 8` apart:
/// 1234567 -> "1.23M", 312000 -> "312k", 0.995 -> "0.995".
fn tick(v: f64, span: f64) -> String {
    let step = (span / 8.0).max(1e-12);
    let digits = |unit: f64| (-(step / unit).log10()).ceil().clamp(0.0, 6.0) as usize;
    let big = v.abs().max(span);
    if big >= 1e6 && step >= 1e4 {
        format!("{:.*}M", digits(1e6), v / 1e6)
    } else if big >= 1e4 && step >= 10.0 {
        format!("{:.*}k", digits(1e3), v / 1e3)
    } else {
        format!("{:.*}", digits(1.0), v)
    }
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
        let span = y1 - y0;
        let yfmt = move |y: &f64| tick(*y, span);
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

/// Latency tails as an SVG string: for each series, the fraction of
/// samples slower than x (1 - the empirical CDF), both axes logarithmic, so
/// the body and a tail of one op in 10^5 are both readable. Each series'
/// points are its CDF steps, (x > 0, CDF at x, unused).
pub fn tails(title: &str, xlabel: &str, series: &[Series]) -> String {
    let mut buf = String::new();
    {
        let pts: Vec<(f64, f64)> = series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| (p.0, 1.0 - p.1)))
            .filter(|p| p.0.is_finite() && p.0 > 0.0 && p.1 > 0.0)
            .collect();
        if pts.is_empty() {
            return String::new();
        }
        let x0 = pts.iter().map(|p| p.0).fold(f64::MAX, f64::min) / 1.2;
        let x1 = (pts.iter().map(|p| p.0).fold(f64::MIN, f64::max) * 1.5).max(x0 * 10.0);
        let y0 = pts.iter().map(|p| p.1).fold(1.0, f64::min) / 2.0;
        let root = SVGBackend::with_string(&mut buf, (410, 290)).into_drawing_area();
        let _ = root.fill(&WHITE);
        let chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 15))
            .margin(10)
            .x_label_area_size(36)
            .y_label_area_size(56)
            .build_cartesian_2d((x0..x1).log_scale(), (y0..1.5).log_scale());
        let Ok(mut chart) = chart else {
            return String::new();
        };
        let _ = chart
            .configure_mesh()
            .x_desc(xlabel)
            .y_desc("fraction of ops slower")
            .x_label_formatter(&|x| tick(*x, *x * 8.0))
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
            let _ = chart.draw_series(LineSeries::new(line, style));
        }
        let _ = root.present();
    }
    buf
}
