//! The latency–throughput curve as an SVG file, written by hand: three
//! panels over the offered rate (TTFT p95, TPOT p95, goodput), one line per
//! server. A few hundred bytes of markup need no plotting crate (and no
//! font or raster stack to build on a 2-core machine).

use std::fmt::Write as _;

use super::report::{RateReport, Slo};

const PANEL_W: f64 = 380.0;
const PANEL_H: f64 = 300.0;
const MARGIN_L: f64 = 58.0;
const MARGIN_R: f64 = 16.0;
const MARGIN_T: f64 = 34.0;
const MARGIN_B: f64 = 46.0;
const LEGEND_H: f64 = 28.0;
const COLOURS: &[&str] = &[
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
];

/// One panel: what it plots and the SLO line it draws, if any.
struct Panel {
    title: &'static str,
    value: fn(&RateReport) -> Option<f64>,
    limit: Option<f64>,
    /// Draw `y = x` (goodput can at best equal the offered rate).
    diagonal: bool,
}

/// The chart of `series` (a label and its rates each).
pub fn chart(series: &[(String, Vec<RateReport>)], slo: Slo) -> String {
    let panels = [
        Panel {
            title: "TTFT p95 (s)",
            value: |r| (r.ttft.count > 0).then_some(r.ttft.p95),
            limit: Some(slo.ttft_ms / 1000.0),
            diagonal: false,
        },
        Panel {
            title: "time per output token p95 (ms)",
            value: |r| (r.tpot.count > 0).then_some(r.tpot.p95 * 1000.0),
            limit: Some(slo.tpot_ms),
            diagonal: false,
        },
        Panel {
            title: "goodput (req/s within the SLO)",
            value: |r| Some(r.goodput),
            limit: None,
            diagonal: true,
        },
    ];
    let width = PANEL_W * panels.len() as f64;
    let height = PANEL_H + LEGEND_H;
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">"#
    );
    let _ = write!(
        svg,
        r#"<rect width="{width}" height="{height}" fill="white"/>"#
    );
    legend(&mut svg, series);
    let x_max = series
        .iter()
        .flat_map(|(_, rs)| rs.iter().map(|r| r.rate))
        .fold(0.0, f64::max);
    for (i, panel) in panels.iter().enumerate() {
        draw_panel(&mut svg, i as f64 * PANEL_W, panel, series, x_max, slo);
    }
    svg.push_str("</svg>\n");
    svg
}

fn legend(svg: &mut String, series: &[(String, Vec<RateReport>)]) {
    let mut x = MARGIN_L;
    for (i, (label, _)) in series.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let _ = write!(
            svg,
            r#"<line x1="{x}" y1="14" x2="{}" y2="14" stroke="{colour}" stroke-width="2"/><text x="{}" y="18">{}</text>"#,
            x + 18.0,
            x + 22.0,
            escape(label)
        );
        x += 30.0 + 6.5 * label.chars().count() as f64;
    }
}

fn draw_panel(
    svg: &mut String,
    left: f64,
    panel: &Panel,
    series: &[(String, Vec<RateReport>)],
    x_max: f64,
    slo: Slo,
) {
    let top = LEGEND_H;
    let (x0, x1) = (left + MARGIN_L, left + PANEL_W - MARGIN_R);
    let (y0, y1) = (top + PANEL_H - MARGIN_B, top + MARGIN_T);
    let values = series
        .iter()
        .flat_map(|(_, rs)| rs.iter().filter_map(panel.value));
    let mut y_max = values.fold(0.0, f64::max);
    if let Some(limit) = panel.limit {
        y_max = y_max.max(limit * 1.2);
    }
    if panel.diagonal {
        y_max = y_max.max(x_max);
    }
    let x_ticks = ticks(x_max);
    let y_ticks = ticks(y_max);
    let x_top = x_ticks.last().copied().unwrap_or(1.0);
    let y_top = y_ticks.last().copied().unwrap_or(1.0);
    let px = |x: f64| x0 + (x1 - x0) * x / x_top;
    let py = |y: f64| y0 - (y0 - y1) * y / y_top;
    let _ = write!(
        svg,
        r#"<text x="{}" y="{}" text-anchor="middle" font-weight="bold">{}</text>"#,
        (x0 + x1) / 2.0,
        top + 18.0,
        panel.title
    );
    for &t in &y_ticks {
        let y = py(t);
        let _ = write!(
            svg,
            r##"<line x1="{x0}" y1="{y}" x2="{x1}" y2="{y}" stroke="#e5e5e5"/><text x="{}" y="{}" text-anchor="end">{}</text>"##,
            x0 - 4.0,
            y + 4.0,
            label(t)
        );
    }
    for &t in &x_ticks {
        let x = px(t);
        let _ = write!(
            svg,
            r##"<line x1="{x}" y1="{y0}" x2="{x}" y2="{}" stroke="#999"/><text x="{x}" y="{}" text-anchor="middle">{}</text>"##,
            y0 + 4.0,
            y0 + 16.0,
            label(t)
        );
    }
    let _ = write!(
        svg,
        r##"<path d="M{x0},{y1} L{x0},{y0} L{x1},{y0}" fill="none" stroke="#333"/><text x="{}" y="{}" text-anchor="middle">offered rate (req/s)</text>"##,
        (x0 + x1) / 2.0,
        y0 + 34.0
    );
    if let Some(limit) = panel.limit {
        let y = py(limit);
        let unit = if panel.title.starts_with("TTFT") {
            format!("SLO {} ms", slo.ttft_ms)
        } else {
            format!("SLO {} ms", slo.tpot_ms)
        };
        let _ = write!(
            svg,
            r##"<line x1="{x0}" y1="{y}" x2="{x1}" y2="{y}" stroke="#555" stroke-dasharray="5,4"/><text x="{}" y="{}" text-anchor="end" fill="#555">{unit}</text>"##,
            x1,
            y - 4.0
        );
    }
    if panel.diagonal {
        let top = x_top.min(y_top);
        let _ = write!(
            svg,
            r##"<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="#bbb" stroke-dasharray="2,3"/>"##,
            px(0.0),
            py(0.0),
            px(top),
            py(top)
        );
    }
    for (i, (_, rates)) in series.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let points: Vec<(f64, f64)> = rates
            .iter()
            .filter_map(|r| (panel.value)(r).map(|v| (px(r.rate), py(v))))
            .collect();
        if points.len() > 1 {
            let path: Vec<String> = points
                .iter()
                .map(|(x, y)| format!("{x:.1},{y:.1}"))
                .collect();
            let _ = write!(
                svg,
                r#"<polyline points="{}" fill="none" stroke="{colour}" stroke-width="2"/>"#,
                path.join(" ")
            );
        }
        for (x, y) in points {
            let _ = write!(
                svg,
                r#"<circle cx="{x:.1}" cy="{y:.1}" r="3" fill="{colour}"/>"#
            );
        }
    }
}

/// Round tick values from 0 to at least `max` (about five steps of 1, 2 or
/// 5 × 10^k).
fn ticks(max: f64) -> Vec<f64> {
    let max = if max.is_finite() && max > 0.0 {
        max
    } else {
        1.0
    };
    let rough = max / 5.0;
    let power = 10f64.powf(rough.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * power)
        .find(|s| *s >= rough)
        .unwrap_or(10.0 * power);
    let steps = (max / step).ceil().max(1.0) as usize;
    (0..=steps).map(|i| i as f64 * step).collect()
}

fn label(v: f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn ticks_are_round_and_cover_the_maximum() {
        let near = |got: Vec<f64>, want: &[f64]| {
            got.len() == want.len() && got.iter().zip(want).all(|(g, w)| (g - w).abs() < 1e-9)
        };
        assert!(near(ticks(1.0), &[0.0, 0.2, 0.4, 0.6, 0.8, 1.0]));
        assert!(near(ticks(7.0), &[0.0, 2.0, 4.0, 6.0, 8.0]));
        assert!(near(ticks(230.0), &[0.0, 50.0, 100.0, 150.0, 200.0, 250.0]));
        assert_eq!(ticks(0.0), ticks(1.0));
        assert_eq!(ticks(f64::NAN), ticks(1.0));
        assert_eq!(label(0.2), "0.2");
        assert_eq!(label(150.0), "150");
    }

    #[test]
    fn the_chart_has_a_line_per_series_and_escapes_labels() {
        let slo = Slo {
            ttft_ms: 2000.0,
            tpot_ms: 200.0,
        };
        let rates: Vec<RateReport> = [0.5, 1.0, 2.0]
            .iter()
            .map(|&rate| RateReport::new(rate, Duration::from_secs(10), slo, &[]))
            .collect();
        let series = vec![
            ("a<b & c".to_string(), rates.clone()),
            ("llama-server".to_string(), rates),
        ];
        let svg = chart(&series, slo);
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>\n"));
        assert!(svg.contains("a&lt;b &amp; c"));
        assert!(!svg.contains("a<b"));
        // Goodput is plotted for every rate (0 here); latencies have no
        // samples, so only the goodput panel draws lines.
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert_eq!(svg.matches("<circle").count(), 6);
        assert!(svg.contains("SLO 2000 ms") && svg.contains("SLO 200 ms"));
    }
}
