//! A plot per figure of an uncertainty report (`latlab uncertainty --plot DIR`): the figure in
//! every draw against its strongest driver, the band's p5 and p95 and the published figure as
//! lines, the as-built figure as a cross.

use crate::uncertainty::{BandRow, Report};
use plotters::prelude::*;

const SIZE: (u32, u32) = (720, 440);

/// Row `row`'s plot as an SVG document; `Err` when the row has no draws or no driver.
pub fn svg(report: &Report, row: usize, title: &str) -> Result<String, String> {
    let b: &BandRow = report.rows.get(row).ok_or("no such row")?;
    let d = b.drivers.first().ok_or("no constant moves this figure")?;
    let k = report
        .constants
        .iter()
        .position(|c| c.key == d.constant)
        .ok_or("driver not among the constants")?;
    let c = &report.constants[k];
    let pts: Vec<(f64, f64)> = report
        .draws
        .iter()
        .map(|x| x[k])
        .zip(b.values.iter().copied())
        .collect();
    let mut ys: Vec<f64> = pts.iter().map(|p| p.1).collect();
    ys.push(b.row.model);
    ys.extend(b.row.published);
    ys.extend(b.row.published_range.into_iter().flatten());
    let (ylo, yhi) = ys.iter().fold((f64::MAX, f64::MIN), |(a, z), &y| (a.min(y), z.max(y)));
    let pad = ((yhi - ylo) * 0.08).max(yhi.abs() * 0.01).max(1e-9);
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 16))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(64)
            .build_cartesian_2d((c.low..c.high).log_scale(), (ylo - pad)..(yhi + pad))
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .x_desc(format!("{} ({}, as built {})", c.key, c.spread, c.value))
            .y_desc(format!("{} ({})", b.row.figure, b.row.unit))
            .draw()
            .map_err(|e| e.to_string())?;
        let hline = |y: f64| vec![(c.low, y), (c.high, y)];
        if let Some([p5, _, p95]) = b.row.band {
            for y in [p5, p95] {
                chart
                    .draw_series(LineSeries::new(hline(y), BLUE.mix(0.5)))
                    .map_err(|e| e.to_string())?;
            }
        }
        for y in b
            .row
            .published
            .into_iter()
            .chain(b.row.published_range.into_iter().flatten())
        {
            chart
                .draw_series(LineSeries::new(hline(y), RED.stroke_width(2)))
                .map_err(|e| e.to_string())?;
        }
        chart
            .draw_series(pts.iter().map(|&p| Circle::new(p, 3, BLACK.filled())))
            .map_err(|e| e.to_string())?;
        chart
            .draw_series(std::iter::once(Cross::new(
                (c.value, b.row.model),
                6,
                GREEN.stroke_width(2),
            )))
            .map_err(|e| e.to_string())?;
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(out)
}
