//! Seed 003's figures: the voluntary-preempt tracer's longest preemption-off stretch per
//! run (in the run's window of swap fill) beside Lee Revell's and K.R. Foley's, and the
//! growth of the worst `get_swap_page` stretch with swap fill ("They get bigger as the
//! machine gets further into swap"), as a table and a plot.

use crate::seed_table::{run_row, CompareRow, RunView};
use crate::verdict::{mark, Bar};
use latlab_core::{LatencyTrace, PreemptOff, RunResult};
use std::fmt::Write;

/// The bar of seed 003's figures (issue 17): within 2x.
pub const BAR: Bar = Bar::Within(2.0);

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
    let mut out = vec![
        base.with(
            "max_latency",
            "us",
            p.worst.as_ref().map_or(0.0, |t| us(t.latency_ns)),
            v.published.max_ms.map(|m| m * 1e3),
            Some(BAR),
        ),
        base.with(
            "swap_max_latency",
            "us",
            p.worst_swap.as_ref().map_or(0.0, |t| us(t.latency_ns)),
            v.published.swap_max_ms.map(|m| m * 1e3),
            Some(BAR),
        ),
    ];
    if let Some(s) = v.result.stream("realfeel") {
        out.push(base.with("wakeup_max_latency", "us", us(s.hist.max()), None, None));
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

/// A row's ratio to the seed's figure and its verdict, `-` where the seed has none.
fn ratio(r: Option<&CompareRow>) -> String {
    match r
        .filter(|r| r.inside.is_some())
        .and_then(|r| Some((r.ratio()?, r.inside)))
    {
        Some((q, inside)) => format!("{q:.2}x {}", mark(inside)),
        None => "-".into(),
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
/// `get_swap_page` stretch with the seed's figures, the ratio and the verdict.
pub fn render(title: &str, source: &str, runs: &[RunView], rows: &[CompareRow]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{title}");
    let _ = writeln!(out, "(seed: {source})\n");
    let w = crate::column_width(runs.iter().map(|v| v.label.len() + 2), 8);
    let _ = writeln!(
        out,
        "{:<w$}{:>10}{:>12}{:>11}{:>16}{:>14}{:>11}{:>16}",
        "Run", "window", "max model", "seed", "", "swap model", "seed", ""
    );
    for v in runs {
        let Some(p) = &v.result.preempt_off else { continue };
        let (max, swap) = (run_row(rows, v, "max_latency"), run_row(rows, v, "swap_max_latency"));
        let model = |r: Option<&CompareRow>| r.map_or("-".into(), |r| fmt_us(r.model));
        let seed = |r: Option<&CompareRow>| r.and_then(|r| r.published).map_or("-".into(), fmt_us);
        let _ = writeln!(
            out,
            "{:<w$}{:>10}{:>12}{:>11}{:>16}{:>14}{:>11}{:>16}",
            v.label,
            format!("{}-{}%", p.fill_pct[0], p.fill_pct[1]),
            model(max),
            seed(max),
            ratio(max),
            model(swap),
            seed(swap),
            ratio(swap)
        );
    }
    out
}

/// Where each run's worst stretch ran, beside the seed's task and function.
pub fn render_where(runs: &[RunView]) -> String {
    let w = crate::column_width(runs.iter().map(|v| v.label.len() + 2), 8);
    let mut out = String::new();
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
    }

    #[test]
    fn seed_003s_figures_are_judged_within_2x() {
        let r = crate::testutil::realfeel_result(&[]);
        let v = RunView {
            label: "R6",
            case: None,
            result: &r,
            published: Default::default(),
        };
        let base = CompareRow::of_run(&v, None, "s");
        let at = |model: f64| base.with("max_latency", "us", model, Some(605.0), Some(BAR));
        assert_eq!(ratio(Some(&at(400.0))), "0.66x inside");
        assert_eq!(ratio(Some(&at(1210.0))), "2.00x inside");
        assert_eq!(ratio(Some(&at(200.0))), "0.33x OUTSIDE");
        assert_eq!(ratio(Some(&base.with("max_latency", "us", 1.0, None, Some(BAR)))), "-");
    }
}
