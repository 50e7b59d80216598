//! Seed 003's figures: the voluntary-preempt tracer's longest preemption-off stretch per
//! run (in the run's window of swap fill) beside Lee Revell's and K.R. Foley's, and the
//! growth of the worst `get_swap_page` stretch with swap fill ("They get bigger as the
//! machine gets further into swap"), as a table and a plot.

use crate::seed_table::{CompareRow, RunView};
use latlab_core::{LatencyTrace, PreemptOff, RunResult};
use std::fmt::Write;

/// The fidelity bar of seed 003's rows (issue 17): within 2x.
pub const BAR: f64 = 2.0;

fn us(ns: u64) -> f64 {
    ns as f64 / 1e3
}

/// The row's stream: its window of swap fill (as the CLI's sweeps name it too).
fn window(p: &PreemptOff) -> String {
    format!("swap {}-{}%", p.fill_pct[0], p.fill_pct[1])
}

/// The comparison rows of one run (the `--json` rows): the longest stretch and the longest
/// `get_swap_page` stretch in the run's window, µs; the realfeel stream's worst wakeup beside
/// them, with no published figure.
pub fn rows(v: &RunView, p: &PreemptOff, source: &str) -> Vec<CompareRow> {
    let base = CompareRow::of_run(v, Some(window(p)), source);
    let row = |figure: &str, model: f64, published: Option<f64>| base.with(figure, "us", model, published);
    let mut out = vec![
        row(
            "max_latency",
            p.worst.as_ref().map_or(0.0, |t| us(t.latency_ns)),
            v.published.max_ms.map(|m| m * 1e3),
        ),
        row(
            "swap_max_latency",
            p.worst_swap.as_ref().map_or(0.0, |t| us(t.latency_ns)),
            v.published.swap_max_ms.map(|m| m * 1e3),
        ),
    ];
    if let Some(s) = v.result.stream("realfeel") {
        out.push(row("wakeup_max_latency", us(s.hist.max()), None));
    }
    out
}

/// The function a trace names as its longest entry (the one with the largest delta to the
/// next), as the seed's reader picks `scan_swap_map` out of 550 entries.
pub fn longest_entry(t: &LatencyTrace) -> Option<&str> {
    let n = t.entries.len();
    (0..n)
        .max_by_key(|&i| {
            let next = t.entries.get(i + 1).map_or(t.latency_ns, |e| e.t_ns);
            next.saturating_sub(t.entries[i].t_ns)
        })
        .map(|i| t.entries[i].func.as_str())
}

fn ratio(model: f64, published: Option<f64>) -> String {
    match published {
        Some(p) if p > 0.0 => {
            let r = model / p;
            let ok = (1.0 / BAR..=BAR).contains(&r);
            format!("{r:.2}x {}", if ok { "ok" } else { "OFF" })
        }
        _ => "-".into(),
    }
}

fn fmt_us(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0} us")
    } else {
        format!("{x:.1} us")
    }
}

fn describe(t: Option<&LatencyTrace>) -> String {
    t.map_or("-".into(), |t| {
        format!(
            "{} -> {} in {} (longest entry {})",
            t.started_at,
            t.ended_at,
            t.task,
            longest_entry(t).unwrap_or("-")
        )
    })
}

/// The rows beside the seed's: per run its window, the longest stretch and the longest
/// `get_swap_page` stretch with the seed's figures and the ratio (bar: 2x), and where each
/// worst stretch ran.
pub fn render(title: &str, source: &str, runs: &[RunView]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{title}");
    let _ = writeln!(out, "(seed: {source}; bar: within {BAR}x)\n");
    let w = crate::column_width(runs.iter().map(|v| v.label.len() + 2), 8);
    let _ = writeln!(
        out,
        "{:<w$}{:>14}{:>12}{:>11}{:>14}{:>14}{:>11}{:>12}",
        "Run", "window", "max model", "seed", "ratio", "swap model", "seed", "ratio"
    );
    for v in runs {
        let Some(p) = &v.result.preempt_off else { continue };
        let max = p.worst.as_ref().map_or(0.0, |t| us(t.latency_ns));
        let swap = p.worst_swap.as_ref().map_or(0.0, |t| us(t.latency_ns));
        let pmax = v.published.max_ms.map(|m| m * 1e3);
        let pswap = v.published.swap_max_ms.map(|m| m * 1e3);
        let seed = |x: Option<f64>| x.map_or("-".into(), fmt_us);
        let _ = writeln!(
            out,
            "{:<w$}{:>14}{:>12}{:>11}{:>14}{:>14}{:>11}{:>12}",
            v.label,
            format!("{}-{}%", p.fill_pct[0], p.fill_pct[1]),
            fmt_us(max),
            seed(pmax),
            ratio(max, pmax),
            fmt_us(swap),
            seed(pswap),
            ratio(swap, pswap)
        );
    }
    let _ = writeln!(
        out,
        "\nWhere each run's worst stretch ran (seed's task and function beside)"
    );
    for v in runs {
        let Some(p) = &v.result.preempt_off else { continue };
        let seed = match (&v.published.task, &v.published.function) {
            (Some(t), Some(f)) => format!("   [seed: {t}, {f}]"),
            (None, Some(f)) => format!("   [seed: {f}]"),
            _ => String::new(),
        };
        let _ = writeln!(out, "{:<w$}{}{seed}", v.label, describe(p.worst.as_ref()));
    }
    out
}

/// The growth table and plot: per 10 % of swap fill, each kernel's longest `get_swap_page`
/// stretch (one column per kernel, a run of the same kernel shown once), then a bar per
/// kernel and fill on a log scale from 1 us to 10 ms.
pub fn render_growth(runs: &[RunView]) -> String {
    let mut out = String::new();
    let mut kernels: Vec<(&str, &RunResult)> = Vec::new();
    for v in runs {
        if v.result.preempt_off.is_some() && !kernels.iter().any(|(_, r)| r.meta.kernel == v.result.meta.kernel) {
            kernels.push((v.label, v.result));
        }
    }
    if kernels.is_empty() {
        return out;
    }
    let col = kernels.iter().map(|(l, _)| l.len() + 2).max().unwrap_or(12).max(12);
    let _ = writeln!(
        out,
        "\nWorst get_swap_page stretch by swap fill (whole run; calls in brackets)"
    );
    let _ = write!(out, "{:<10}", "swap fill");
    for (l, _) in &kernels {
        let _ = write!(out, "{l:>col$}");
    }
    let _ = writeln!(out);
    for b in 0..10 {
        let _ = write!(out, "{:<10}", format!("{}-{}%", b * 10, b * 10 + 10));
        for (_, r) in &kernels {
            let row = &r.preempt_off.as_ref().expect("filtered").by_fill[b];
            let cell = if row.swap_calls == 0 {
                "-".into()
            } else {
                format!("{} ({})", fmt_us(us(row.get_swap_page_ns)), row.swap_calls)
            };
            let _ = write!(out, "{cell:>col$}");
        }
        let _ = writeln!(out);
    }
    let _ = writeln!(
        out,
        "\nPlot: worst get_swap_page stretch against swap fill (log scale, 1 us .. 10 ms)"
    );
    let _ = writeln!(out, "{:<10}|1us      |10us     |100us    |1ms      |10ms", "swap fill");
    for (l, r) in &kernels {
        let _ = writeln!(out, "{l}");
        for (b, row) in r.preempt_off.as_ref().expect("filtered").by_fill.iter().enumerate() {
            if row.swap_calls == 0 {
                continue;
            }
            let x = us(row.get_swap_page_ns).max(1.0).log10();
            let n = ((x * 10.0).round() as usize).min(40);
            let fill = format!("  {}-{}%", b * 10, b * 10 + 10);
            let _ = writeln!(out, "{fill:<10}|{}", "#".repeat(n.max(1)));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use latlab_core::TraceEntry;

    fn entry(t_ns: u64, func: &str) -> TraceEntry {
        TraceEntry {
            preempt_count: 1,
            t_ns,
            func: func.into(),
            parent: "x".into(),
        }
    }

    #[test]
    fn the_longest_entry_is_the_one_with_the_largest_delta() {
        let t = LatencyTrace {
            latency_ns: 6_000_000,
            entries: vec![
                entry(0, "get_swap_page"),
                entry(1_000, "scan_swap_map"),
                entry(2_000_000, "do_IRQ"),
                entry(2_010_000, "scan_swap_map"),
            ],
            ..LatencyTrace::default()
        };
        // 1 us, 1.999 ms, 10 us, then 3.99 ms to the end.
        assert_eq!(longest_entry(&t), Some("scan_swap_map"));
        assert_eq!(ratio(400.0, Some(605.0)), "0.66x ok");
        assert_eq!(ratio(200.0, Some(605.0)), "0.33x OFF");
    }
}
