//! `latlab reproduce`'s text report of one experiment, from its results and its comparison
//! rows (the `--json` rows): the seed's table with the model beside it and each published
//! figure's verdict, `N of M published figures inside the bar`, the bands, percentiles, and
//! why each worst sample took so long. One function for the CLI and the tests, so a test can
//! hold the text against the JSON of the same run.

use crate::bands::Attached;
use latlab_core::RunResult;
use latlab_exp::{Experiment, TableKind};
use latlab_report::seed_table::{self, CompareRow, RunView};
use latlab_report::{latency_trace, preempt_off, summary, verdict};
use std::fmt::Write;

/// The report's first lines: `== NAME (SEED FILE) ==` and the experiment's title.
pub fn heading(exp: &Experiment) -> String {
    format!("== {} ({}) ==\n{}", exp.name, exp.seed_file, exp.title)
}

/// The seed's table of `exp` and everything `reproduce` prints under it; `rows` are
/// `results`' comparison rows, with their stored bands where `attached` says how those were
/// found (None: not looked for, the runs had another seed than the bands'); `trace` adds
/// each run's worst latency as `/proc/latency_trace`.
pub fn report(
    exp: &Experiment,
    results: &[RunResult],
    rows: &[CompareRow],
    attached: Option<&Attached>,
    trace: bool,
) -> String {
    let views = crate::views(exp, results);
    let title = heading(exp);
    let source = &exp.seed_file;
    let mut out = match exp.table {
        TableKind::LogHistogram | TableKind::MaxLatency => {
            let mut t = if exp.table == TableKind::LogHistogram {
                seed_table::render_log_histogram(&title, source, &views)
            } else {
                seed_table::render_max_latency(&title, source, &views)
            };
            t.push_str(&seed_table::render_comparison(rows));
            t.push_str(&verdict::summary_line(rows));
            t.push_str(&seed_table::render_run_lengths(&views));
            t
        }
        TableKind::PosixTimer => {
            let mut t = seed_table::render_posix_timer(&title, source, &views, rows);
            t.push_str(&verdict::summary_line(rows));
            t.push_str(&seed_table::render_bands(rows));
            t
        }
        TableKind::WriteLatency => {
            let mut t = seed_table::render_write_latency(&title, source, &views, rows);
            t.push_str(&verdict::summary_line(rows));
            t.push_str(&seed_table::render_bands(rows));
            t.push_str(&seed_table::render_slowest_writes(&views));
            t
        }
        TableKind::Percentiles => {
            let mut t = render_percentiles(&title, &views, rows);
            t.push_str(&verdict::summary_line(rows));
            t
        }
        TableKind::PreemptOff => {
            let mut t = preempt_off::render(&title, source, &views, rows);
            t.push_str(&verdict::summary_line(rows));
            t.push_str(&seed_table::render_bands(rows));
            t.push_str(&preempt_off::render_where(&views));
            t.push_str(&preempt_off::render_growth(&views));
            t
        }
    };
    let _ = match attached {
        Some(Attached::All { samples }) => writeln!(
            out,
            "(band: p5-p95 of the figure over {samples} draws of the constants within their sources' ranges, stored in experiments/bands/{}.json: `latlab uncertainty {}` for the drivers)",
            exp.name, exp.name
        ),
        Some(Attached::Stale(stale)) => writeln!(
            out,
            "(no band: the stored bands (experiments/bands/{}.json) were made with other figures for {}; redraw them: {})",
            exp.name,
            stale.join(", "),
            crate::bands::redraw_command(&exp.name)
        ),
        Some(Attached::NoneStored) => writeln!(
            out,
            "(no band stored for {}: `latlab uncertainty {}` draws one)",
            exp.name, exp.name
        ),
        None => Ok(()),
    };
    for v in &views {
        if !v.published.listing.is_empty() {
            out.push_str(&seed_table::render_listing(v.label, v.result, v.published.listing));
        }
    }
    let posix = exp.table == TableKind::PosixTimer;
    let writes = exp.table == TableKind::WriteLatency;
    // A workload whose tasks have periodic steps measures them instead of realfeel.
    let realfeel = !posix && !writes && views.iter().any(|v| v.result.stream("realfeel").is_some());
    let measured = if posix {
        "POSIX-timer wakeup latency"
    } else if writes {
        "write(2) latency, iozone's passes"
    } else if realfeel {
        "realfeel wakeup latency"
    } else {
        "the first periodic task's wakeup latency"
    };
    let _ = writeln!(out, "\nPercentiles ({measured})");
    let width = summary::percentiles_width(views.iter().map(|v| (v.label, v.result)));
    for v in &views {
        out.push_str(&summary::percentiles(v.label, v.result, width));
    }
    if realfeel {
        let _ = writeln!(
            out,
            "\nSamples of 1 ms or more, by the code path that held the CPU longest while realfeel waited"
        );
        for v in &views {
            out.push_str(&summary::causes(v.label, v.result));
        }
    }
    for v in views.iter().filter(|_| !writes) {
        if let Some(s) = v.result.stream("write") {
            let _ = writeln!(
                out,
                "\n{}: slowest records (offset_KB latency_us record_bytes, as `iozone -Q` sorted by column 2)",
                v.label
            );
            out.push_str(&summary::slowest_records(s));
        }
    }
    let _ = writeln!(out, "\nWhy the worst sample of each run took so long");
    for v in &views {
        if let Some(w) = v.result.streams.first().and_then(|s| s.worst.first()) {
            let _ = writeln!(out, "{}:", v.label);
            out.push_str(&summary::explain(w));
        }
    }
    if trace {
        for v in &views {
            if let Some(p) = &v.result.preempt_off {
                // The tracer's own view: the longest preemption-off stretch of the run's
                // window, and its longest get_swap_page stretch when that is another.
                for t in p
                    .worst
                    .iter()
                    .chain(p.worst_swap.iter().filter(|s| Some(*s) != p.worst.as_ref()))
                {
                    let _ = writeln!(
                        out,
                        "\n{} — longest preemption-off stretch as /proc/latency_trace:",
                        v.label
                    );
                    out.push_str(&latency_trace::render(t));
                }
            }
            if let Some(t) = &v.result.trace {
                let _ = writeln!(out, "\n{} — worst latency as /proc/latency_trace:", v.label);
                out.push_str(&latency_trace::render(t));
            }
        }
    }
    for n in &exp.notes {
        let _ = writeln!(out, "\nnote: {n}");
    }
    out
}

/// The heading of a `percentiles` table's block of figures.
pub const PERCENTILES_HEAD: &str = "Wakeup latency (us)";

/// A `percentiles` table's rows, run by run: the first measured stream's p99, p99.99 and
/// maximum (us) and its missed periods.
pub fn percentile_rows(views: &[RunView], source: &str) -> Vec<CompareRow> {
    let mut rows = Vec::new();
    for v in views {
        let Some(s) = v.result.streams.first() else { continue };
        let base = CompareRow::of_run(v, None, source);
        let us = |ns: u64| ns as f64 / 1e3;
        rows.push(base.with("p99_latency", "us", us(s.hist.quantile(0.99)), None, None));
        rows.push(base.with("p9999_latency", "us", us(s.hist.quantile(0.9999)), None, None));
        rows.push(base.with("max_latency", "us", us(s.hist.max()), None, None));
        rows.push(base.with("missed_events", "count", s.missed as f64, None, None));
    }
    rows
}

/// A `percentiles` table: a row of figures per run (its `rows`; the maximum's band where one
/// is stored), then what each run's worst sample waited for (the model's attribution says
/// it after `waited for: `).
fn render_percentiles(title: &str, views: &[RunView], rows: &[CompareRow]) -> String {
    let mut out = format!("{title}\n\n{PERCENTILES_HEAD}\n");
    // A width beyond u16::MAX is a formatting error (a label that long is a user's file).
    let width = (views.iter().map(|v| v.label.len()).max().unwrap_or(0).max(3) + 2).min(u16::MAX as usize);
    let _ = writeln!(
        out,
        "{:<width$}{:>10}{:>10}{:>12}{:>8}  max's band (p5-p95)",
        "Run", "p99", "p99.99", "max", "missed"
    );
    let row = |run: &str, f: &str| rows.iter().find(|r| r.run == run && r.figure == f);
    let figure = |run: &str, f: &str| row(run, f).map_or(f64::NAN, |r| r.model);
    for v in views {
        let band = row(v.label, "max_latency")
            .and_then(|r| r.band)
            .map_or("-".to_string(), |[lo, _, hi]| format!("{lo:.1}-{hi:.1}"));
        let _ = writeln!(
            out,
            "{:<width$}{:>10.1}{:>10.1}{:>12.1}{:>8}  {band}",
            v.label,
            figure(v.label, "p99_latency"),
            figure(v.label, "p9999_latency"),
            figure(v.label, "max_latency"),
            figure(v.label, "missed_events"),
        );
    }
    let _ = writeln!(out, "\nWhat each run's worst sample waited for");
    for v in views {
        let waited = v
            .result
            .streams
            .first()
            .and_then(|s| s.worst.first())
            .and_then(|w| w.attribution.note.split_once("waited for: "))
            .map_or("(not attributed)", |(_, rest)| rest.split("; ").next().unwrap_or(rest));
        let _ = writeln!(out, "{:<width$}{waited}", format!("{}:", v.label));
    }
    out.push('\n');
    out
}
