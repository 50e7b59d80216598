//! `latlab report plot`: SVG plots of one or more streams, drawn with `plotters`' SVG
//! backend (SVG 1.1; text is left to the viewer's fonts, so no font library is needed).
//!
//! - distribution: x = latency (us, log axis), y = samples per bucket (log axis), one
//!   series per stream, buckets a quarter octave wide ([`crate::buckets`], 4 per doubling).
//!   Empty buckets are not points on a log axis: each series is drawn as a line through its
//!   non-empty buckets, broken where a bucket is empty, with a dot per bucket.
//! - percentiles: x = the quantile on a "nines" axis (p50, p90, p99, p99.9 ... evenly
//!   spaced), y = latency (us, log axis); `max` is placed at quantile 1 - 1/count.

use crate::buckets;
use latlab_core::{RunResult, Stream};
use plotters::coord::ranged1d::ValueFormatter;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

/// One series: its legend label and its stream.
pub type Series<'a> = (String, &'a Stream);

/// A series per stream of each run (only the stream `only`, when given), labelled by its
/// run's label, followed by the stream's name when the run has several streams shown.
pub fn series<'a>(runs: &'a [RunResult], labels: &[String], only: Option<&str>) -> Vec<Series<'a>> {
    runs.iter()
        .zip(labels)
        .flat_map(|(r, l)| {
            let one = r.streams.len() == 1 || only.is_some();
            r.streams
                .iter()
                .filter(move |s| only.is_none_or(|n| n == s.name))
                .map(move |s| (if one { l.clone() } else { format!("{l} {}", s.name) }, s))
        })
        .collect()
}

const SIZE: (u32, u32) = (1000, 620);

fn colour(i: usize) -> RGBColor {
    const C: [RGBColor; 8] = [
        RGBColor(31, 119, 180),
        RGBColor(214, 39, 40),
        RGBColor(44, 160, 44),
        RGBColor(255, 127, 14),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
        RGBColor(227, 119, 194),
        RGBColor(23, 190, 207),
    ];
    C[i % C.len()]
}

/// A bucket's point on the log latency axis, in us: its geometric middle (the first
/// bucket, [0, 1 us), at 0.5 us).
fn bucket_x_us(b: &buckets::Bucket) -> f64 {
    if b.lo_ns == 0 {
        b.hi_ns as f64 / 2e3
    } else {
        (b.lo_ns as f64 * b.hi_ns as f64).sqrt() / 1e3
    }
}

/// Each series' non-empty buckets as runs of consecutive (x us, count) points; the line of
/// a series breaks between runs.
pub fn distribution_points(series: &[Series]) -> Vec<Vec<Vec<(f64, f64)>>> {
    series
        .iter()
        .map(|(_, s)| {
            let mut runs: Vec<Vec<(f64, f64)>> = Vec::new();
            let mut cur = Vec::new();
            for b in buckets::log_buckets(&s.hist, 4) {
                if b.count == 0 {
                    if !cur.is_empty() {
                        runs.push(std::mem::take(&mut cur));
                    }
                } else {
                    cur.push((bucket_x_us(&b), b.count as f64));
                }
            }
            if !cur.is_empty() {
                runs.push(cur);
            }
            runs
        })
        .collect()
}

/// The smallest and largest of `xs`, widened by `factor` either way (for a log axis).
fn log_range(xs: impl Iterator<Item = f64>, factor: f64) -> Option<std::ops::Range<f64>> {
    let (lo, hi) = xs.fold((f64::INFINITY, 0f64), |(a, b), x| (a.min(x), b.max(x)));
    (lo.is_finite() && lo > 0.0).then(|| lo / factor..hi * factor)
}

fn plot_err(e: impl std::fmt::Display) -> String {
    format!("plot: {e}")
}

/// An axis value without a needless `.0` (`1000`, `0.5`).
fn axis_label(v: &f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// What differs between the two plots: titles, the x axis and where the legend goes.
struct Frame<'a, X> {
    title: &'a str,
    x: X,
    x_desc: &'a str,
    x_labels: usize,
    x_label: &'a dyn Fn(&f64) -> String,
    y: std::ops::Range<f64>,
    y_desc: &'a str,
    legend: SeriesLabelPosition,
}

/// Draw `series` (per series: runs of points, each run one line with a dot per point) on a
/// log y axis, with a legend entry for every series that has points; the SVG document.
fn draw<X>(f: Frame<X>, labels: &[&str], series: &[Vec<Vec<(f64, f64)>>]) -> Result<String, String>
where
    X: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(f.title, ("sans-serif", 22))
            .margin(12)
            .x_label_area_size(48)
            .y_label_area_size(70)
            .build_cartesian_2d(f.x, f.y.log_scale())
            .map_err(plot_err)?;
        chart
            .configure_mesh()
            .x_desc(f.x_desc)
            .y_desc(f.y_desc)
            .x_labels(f.x_labels)
            .x_label_formatter(f.x_label)
            .y_label_formatter(&axis_label)
            .draw()
            .map_err(plot_err)?;
        for (i, (label, runs)) in labels.iter().zip(series).enumerate() {
            let c = colour(i);
            for (k, run) in runs.iter().enumerate() {
                let line = chart
                    .draw_series(LineSeries::new(run.iter().copied(), c.stroke_width(2)))
                    .map_err(plot_err)?;
                if k == 0 {
                    line.label(*label)
                        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
                }
                chart
                    .draw_series(run.iter().map(|&p| Circle::new(p, 3, c.filled())))
                    .map_err(plot_err)?;
            }
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .position(f.legend)
            .draw()
            .map_err(plot_err)?;
        root.present().map_err(plot_err)?;
    }
    Ok(svg)
}

fn labels<'a>(series: &'a [Series]) -> Vec<&'a str> {
    series.iter().map(|(l, _)| l.as_str()).collect()
}

/// The latency distribution of `series` as an SVG document.
pub fn distribution_svg(title: &str, series: &[Series]) -> Result<String, String> {
    let pts = distribution_points(series);
    let all = || pts.iter().flatten().flatten();
    let (Some(x), Some(y)) = (log_range(all().map(|p| p.0), 1.5), log_range(all().map(|p| p.1), 2.0)) else {
        return Err("no samples to plot".into());
    };
    let frame = Frame {
        title,
        x: x.log_scale().into(),
        x_desc: "latency (us)",
        x_labels: 10,
        x_label: &axis_label,
        y,
        y_desc: "samples per bucket (quarter octave)",
        legend: SeriesLabelPosition::UpperRight,
    };
    draw::<LogCoord<f64>>(frame, &labels(series), &pts)
}

/// Quantile `q` on the nines axis: `-log10(1 - q)` (p90 at 1, p99 at 2 ...).
pub fn nines(q: f64) -> f64 {
    -(1.0 - q).log10()
}

/// Each series' percentile points as (nines, latency us); `max` at quantile 1 - 1/count.
pub fn percentile_points(series: &[Series]) -> Vec<Vec<(f64, f64)>> {
    series
        .iter()
        .map(|(_, s)| {
            let n = s.hist.count() as f64;
            buckets::percentile_points(s)
                .into_iter()
                .map(|(_, q, v)| {
                    let x = if q >= 1.0 { n.log10() } else { nines(q) };
                    (x, (v as f64 / 1e3).max(1e-3))
                })
                .collect()
        })
        .collect()
}

/// `p50`, `p90`, `p99.9` for a position on the nines axis.
fn nines_label(x: &f64) -> String {
    let p = 100.0 * (1.0 - 10f64.powf(-x));
    let s = format!("{p:.5}");
    format!("p{}", s.trim_end_matches('0').trim_end_matches('.'))
}

/// Latency by percentile for `series` as an SVG document.
pub fn percentiles_svg(title: &str, series: &[Series]) -> Result<String, String> {
    let pts = percentile_points(series);
    let all = || pts.iter().flatten();
    let Some(y) = log_range(all().map(|p| p.1), 1.5) else {
        return Err("no samples to plot".into());
    };
    let xmax = all().map(|p| p.0).fold(1.0f64, f64::max).ceil();
    let frame = Frame {
        title,
        x: (0f64..xmax).into(),
        x_desc: "percentile",
        x_labels: xmax as usize + 1,
        x_label: &nines_label,
        y,
        y_desc: "latency (us)",
        legend: SeriesLabelPosition::UpperLeft,
    };
    // One line per series (an empty series: no line, no legend entry).
    let runs: Vec<Vec<Vec<(f64, f64)>>> = pts
        .into_iter()
        .map(|p| if p.is_empty() { vec![] } else { vec![p] })
        .collect();
    draw::<RangedCoordf64>(frame, &labels(series), &runs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream(values: &[(u64, u64)]) -> Stream {
        let mut s = Stream::new("s", "x");
        for &(v, n) in values {
            s.hist.record_n(v, n);
        }
        s
    }

    #[test]
    fn empty_buckets_break_the_line() {
        let s = stream(&[(1_500, 10), (1_600, 1), (300_000, 2)]);
        let pts = distribution_points(&[("a".into(), &s)]);
        assert_eq!(pts[0].len(), 2, "{pts:?}");
        assert_eq!(pts[0][0].iter().map(|p| p.1).sum::<f64>(), 11.0);
        assert_eq!(pts[0][1], vec![(((256_000f64 * 304_437f64).sqrt() / 1e3), 2.0)]);
        assert!(pts.iter().flatten().flatten().all(|p| p.0 > 0.0 && p.1 > 0.0));
    }

    #[test]
    fn svg_has_one_legend_entry_per_series_and_survives_empty_streams() {
        let a = stream(&[(5_000, 100), (90_000, 1)]);
        let b = stream(&[(700, 3)]);
        let empty = Stream::new("e", "x");
        let series = [
            ("2.4.18 (model)".to_string(), &a),
            ("6.1 (probe)".to_string(), &b),
            ("e".into(), &empty),
        ];
        let svg = distribution_svg("t", &series).unwrap();
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert!(svg.contains("2.4.18 (model)") && svg.contains("6.1 (probe)"));
        assert!(!svg.contains("NaN") && !svg.contains("inf"), "non-finite coordinates");
        let p = percentiles_svg("t", &series).unwrap();
        // The nines axis labels, and no legend entry for the empty stream.
        assert!(p.contains("\np90\n") && p.contains("\np99.9\n"), "{p}");
        assert!(!p.contains("\ne\n"), "{p}");
        assert_eq!(
            distribution_svg("t", &[("e".into(), &empty)]).unwrap_err(),
            "no samples to plot"
        );
        assert!(percentiles_svg("t", &[("e".into(), &empty)]).is_err());
    }

    #[test]
    fn nines_axis() {
        assert!((nines(0.99) - 2.0).abs() < 1e-9);
        assert_eq!(nines_label(&3.0), "p99.9");
        assert_eq!(nines_label(&1.0), "p90");
    }
}
