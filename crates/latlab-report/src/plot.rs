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
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
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

/// The series' colours: Tableau's ten, then six more, each pair at least 67 apart in RGB
/// (tested), so that 16 series are told apart; beyond that they repeat.
const PALETTE: [RGBColor; 16] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
    RGBColor(0xe3, 0x77, 0xc2),
    RGBColor(0x7f, 0x7f, 0x7f),
    RGBColor(0xbc, 0xbd, 0x22),
    RGBColor(0x17, 0xbe, 0xcf),
    RGBColor(0x00, 0x00, 0x00),
    RGBColor(0x4b, 0x00, 0x82),
    RGBColor(0x00, 0x00, 0xff),
    RGBColor(0xff, 0x00, 0xff),
    RGBColor(0xff, 0x14, 0x93),
    RGBColor(0x00, 0xff, 0x7f),
];

fn colour(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
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

/// Room right of the plot area, so that a label on the axis's last tick is not cut.
const RIGHT_MARGIN: u32 = 40;

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
            .margin_right(RIGHT_MARGIN)
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

/// The nines axis: linear in `nines`, its ticks exactly at p50, p90, p99 ... (plotters would
/// space them evenly from the range's start).
struct NinesAxis {
    range: RangedCoordf64,
    ticks: Vec<f64>,
}

impl Ranged for NinesAxis {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        self.range.map(v, limit)
    }

    fn key_points<H: KeyPointHint>(&self, _hint: H) -> Vec<f64> {
        self.ticks.clone()
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.range.range()
    }
}

/// `p50`, `p90`, `p99.9` for a position on the nines axis.
fn nines_label(x: &f64) -> String {
    let p = 100.0 * (1.0 - 10f64.powf(-x));
    let s = format!("{p:.5}");
    format!("p{}", s.trim_end_matches('0').trim_end_matches('.'))
}

/// How far past the last whole nine (in nines) the last point must lie for a tick of its own,
/// so that the two labels do not overlap.
const MAX_TICK_GAP: f64 = 0.3;

/// The percentile at a position between two nines, to the digits that tell it from both:
/// `p99.988` at 3.91.
fn max_label(x: f64) -> String {
    let p = 100.0 * (1.0 - 10f64.powf(-x));
    let digits = x.floor() as usize;
    format!("p{p:.digits$}")
}

/// Latency by percentile for `series` as an SVG document.
pub fn percentiles_svg(title: &str, series: &[Series]) -> Result<String, String> {
    let pts = percentile_points(series);
    let all = || pts.iter().flatten();
    let Some(y) = log_range(all().map(|p| p.1), 1.5) else {
        return Err("no samples to plot".into());
    };
    // Ticks at p50, p90, p99 ... up to the last point (`max`); the axis begins a little
    // before p50 (the first point) and ends a little after the last point.
    let xmax = all().map(|p| p.0).fold(1.0f64, f64::max);
    let mut ticks: Vec<f64> = std::iter::once(nines(0.5))
        .chain((1..=(xmax + 1e-9).floor() as u32).map(f64::from))
        .collect();
    // The last point (the longest series' max) gets a tick of its own where it lies clear of
    // the last nine's: 8,191 samples end at p99.988, past p99.9.
    if xmax - ticks.last().copied().unwrap_or(0.0) > MAX_TICK_GAP {
        ticks.push(xmax);
    }
    let label = |x: &f64| match x.fract() > 1e-9 && *x > 1.0 {
        true => max_label(*x),
        false => nines_label(x),
    };
    let frame = Frame {
        title,
        x: NinesAxis {
            range: (nines(0.5) - 0.15..xmax + 0.15).into(),
            ticks: ticks.clone(),
        },
        x_desc: "percentile",
        x_labels: ticks.len(),
        x_label: &label,
        y,
        y_desc: "latency (us)",
        legend: SeriesLabelPosition::UpperLeft,
    };
    // One line per series (an empty series: no line, no legend entry).
    let runs: Vec<Vec<Vec<(f64, f64)>>> = pts
        .into_iter()
        .map(|p| if p.is_empty() { vec![] } else { vec![p] })
        .collect();
    draw::<NinesAxis>(frame, &labels(series), &runs)
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
        // The nines axis labels up to the last point (101 samples: max at p99.0099), no p0,
        // and no legend entry for the empty stream.
        assert!(
            p.contains("\np50\n") && p.contains("\np90\n") && p.contains("\np99\n"),
            "{p}"
        );
        assert!(!p.contains("\np99.9\n") && !p.contains("\np0\n"), "{p}");
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
        assert_eq!(nines_label(&nines(0.5)), "p50");
    }

    /// The `<text>` elements of an SVG: (x, text).
    fn texts(svg: &str) -> Vec<(f64, String)> {
        svg.split("<text")
            .skip(1)
            .filter_map(|t| {
                let x = t.split("x=\"").nth(1)?.split('"').next()?.parse().ok()?;
                let body = t.split_once('>')?.1.split("</text>").next()?.trim().to_string();
                Some((x, body))
            })
            .collect()
    }

    #[test]
    fn percentile_ticks_are_the_nines_and_the_last_fits() {
        let a = stream(&[(5_000, 100_000), (90_000, 1)]);
        let svg = percentiles_svg("t", &[("a".into(), &a)]).unwrap();
        let ticks: Vec<(f64, String)> = texts(&svg)
            .into_iter()
            .filter(|(_, t)| t.starts_with('p') && t != "percentile")
            .collect();
        let names: Vec<&str> = ticks.iter().map(|(_, t)| t.as_str()).collect();
        assert_eq!(names, ["p50", "p90", "p99", "p99.9", "p99.99", "p99.999"], "{svg}");
        // The last label's middle (plotters centres it on x) leaves room for half its width
        // (about 4 px a character at 12 px) inside the picture.
        let (x, t) = ticks.last().unwrap();
        assert!(x + 4.0 * t.len() as f64 <= f64::from(SIZE.0), "{x} {t}");
    }

    #[test]
    fn the_last_point_past_the_last_nine_has_its_label() {
        // 8,191 samples (a model run's realfeel at 2048 Hz for 4 s): max at p99.988.
        let a = stream(&[(5_000, 8_190), (90_000, 1)]);
        let svg = percentiles_svg("t", &[("a".into(), &a)]).unwrap();
        let names: Vec<String> = texts(&svg)
            .into_iter()
            .map(|(_, t)| t)
            .filter(|t| t.starts_with('p') && t != "percentile")
            .collect();
        assert_eq!(names, ["p50", "p90", "p99", "p99.9", "p99.988"], "{svg}");
        assert_eq!(max_label(nines(1.0 - 1.0 / 1.2e6)), "p99.999917");
    }

    #[test]
    fn sixteen_series_get_sixteen_distinct_colours() {
        for (i, a) in PALETTE.iter().enumerate() {
            for b in &PALETTE[i + 1..] {
                let d = [(a.0, b.0), (a.1, b.1), (a.2, b.2)]
                    .iter()
                    .map(|&(x, y)| (f64::from(x) - f64::from(y)).powi(2))
                    .sum::<f64>()
                    .sqrt();
                assert!(d >= 67.0, "{a:?} {b:?} {d}");
            }
        }
        let streams: Vec<Stream> = (0..12).map(|i| stream(&[(1_000 * (i + 1), 10)])).collect();
        let series: Vec<Series> = streams.iter().enumerate().map(|(i, s)| (format!("s{i}"), s)).collect();
        let svg = distribution_svg("t", &series).unwrap();
        let strokes: std::collections::BTreeSet<&str> = svg
            .split("stroke=\"")
            .skip(1)
            .filter_map(|t| t.split('"').next())
            .collect();
        assert!(strokes.len() >= 12, "{strokes:?}");
    }
}
