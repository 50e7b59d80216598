//! Terminal summary and JSON output of a probe run.

use latlab_core::result::{RunMeta, RunResult};
use serde::Serialize;
use std::io::Write;

/// Flat per-stream figures in microseconds, for scripts (`streams_summary` in the JSON).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct StreamSummary {
    pub name: String,
    pub count: u64,
    pub missed: u64,
    pub min_us: f64,
    pub mean_us: f64,
    pub p50_us: f64,
    pub p90_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub p9999_us: f64,
    pub max_us: f64,
}

fn us(ns: u64) -> f64 {
    (ns as f64 / 1000.0 * 1000.0).round() / 1000.0
}

pub fn summaries(r: &RunResult) -> Vec<StreamSummary> {
    r.streams.iter().map(|s| summary(&s.name, &s.hist, s.missed)).collect()
}

/// Rows of the streams' IRQ / thread split (`cpu0 irq`, `cpu0 thread`), where they have one.
pub fn split_summaries(r: &RunResult) -> Vec<StreamSummary> {
    r.streams
        .iter()
        .filter_map(|s| Some((s, s.split.as_ref()?)))
        .flat_map(|(s, p)| {
            [
                summary(&format!("{} irq", s.name), &p.irq, 0),
                summary(&format!("{} thread", s.name), &p.thread, 0),
            ]
        })
        .collect()
}

/// One row: a histogram's figures in microseconds.
fn summary(name: &str, h: &latlab_core::LatencyHistogram, missed: u64) -> StreamSummary {
    let m = h.summary();
    StreamSummary {
        name: name.to_string(),
        count: m.count,
        missed,
        min_us: us(m.min_ns),
        mean_us: (m.mean_ns / 1000.0 * 1000.0).round() / 1000.0,
        p50_us: us(m.p50_ns),
        p90_us: us(m.p90_ns),
        p99_us: us(m.p99_ns),
        p999_us: us(m.p999_ns),
        p9999_us: us(m.p9999_ns),
        max_us: us(m.max_ns),
    }
}

/// The run's maximum latency over all streams (ns).
pub fn max_ns(r: &RunResult) -> u64 {
    r.streams.iter().map(|s| s.hist.max()).max().unwrap_or(0)
}

/// Print the per-stream table (us), then counters and throughput. The stream column is as
/// wide as the longest name (`cpu0`, `posix_timer_thread.cpu1`).
pub fn print_summary(r: &RunResult, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(
        out,
        "# {} on {} ({}), {}",
        r.meta.workload,
        r.meta.machine,
        r.meta.kernel,
        settings_line(r)
    )?;
    for (k, v) in r.meta.system() {
        writeln!(out, "# {k}: {v}")?;
    }
    let split = split_summaries(r);
    let rows: Vec<StreamSummary> = summaries(r).into_iter().chain(split.iter().cloned()).collect();
    let w = rows.iter().map(|s| s.name.chars().count()).max().unwrap_or(0).max(10);
    writeln!(
        out,
        "{:<w$} {:>9} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>10}",
        "stream", "count", "missed", "min", "mean", "p50", "p90", "p99", "p99.9", "p99.99", "max (us)"
    )?;
    for s in rows {
        writeln!(
            out,
            "{:<w$} {:>9} {:>7} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>10.1}",
            s.name,
            s.count,
            s.missed,
            s.min_us,
            s.mean_us,
            s.p50_us,
            s.p90_us,
            s.p99_us,
            s.p999_us,
            s.p9999_us,
            s.max_us
        )?;
    }
    if !split.is_empty() {
        writeln!(
            out,
            "(irq: timer expiry to its handler; thread: handler to the thread switched in, as rtla timerlat splits them)"
        )?;
    }
    for (k, v) in &r.counters {
        writeln!(out, "counter {k} = {v}")?;
    }
    for (k, v) in &r.throughput {
        writeln!(out, "throughput {k} = {v:.2}")?;
    }
    Ok(())
}

/// The run's settings as `key=value`, less the system facts (printed a line each).
fn settings_line(r: &RunResult) -> String {
    r.meta
        .settings
        .iter()
        .filter(|(k, _)| !RunMeta::SYSTEM.contains(&k.as_str()))
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The RunResult as JSON with a top-level `streams_summary` beside its own fields, and
/// `split_summary` (the IRQ / thread rows) when the streams have a split.
pub fn json_value(r: &RunResult) -> serde_json::Value {
    let mut v = serde_json::to_value(r).expect("RunResult serializes");
    if let Some(o) = v.as_object_mut() {
        o.insert(
            "streams_summary".into(),
            serde_json::to_value(summaries(r)).expect("summary serializes"),
        );
        let split = split_summaries(r);
        if !split.is_empty() {
            o.insert(
                "split_summary".into(),
                serde_json::to_value(split).expect("summary serializes"),
            );
        }
    }
    v
}

/// The `--json` text: [`json_value`], pretty-printed, ending in a newline.
pub fn json_text(r: &RunResult) -> String {
    serde_json::to_string_pretty(&json_value(r)).expect("a JSON value serializes") + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;
    use latlab_core::result::Stream;

    #[test]
    fn json_has_flat_summary() {
        let mut r = RunResult::new(crate::meta::new_meta("t", 1, Default::default()));
        let mut s = Stream::new("cpu0", "x");
        s.hist.record(1500);
        s.hist.record(2500);
        r.streams.push(s);
        let v = json_value(&r);
        assert!(v.get("split_summary").is_none());
        let ss = &v["streams_summary"][0];
        assert_eq!(ss["name"], "cpu0");
        assert_eq!(ss["count"], 2);
        assert_eq!(ss["min_us"], 1.5);
        assert_eq!(ss["max_us"], 2.5);
        assert!(v["streams"][0]["hist"].is_object());
    }

    #[test]
    fn table_columns_line_up_with_long_stream_names() {
        let mut r = RunResult::new(crate::meta::new_meta("t", 1, Default::default()));
        for name in ["posix_timer_thread.cpu0", "cpu1"] {
            let mut s = Stream::new(name, "x");
            s.hist.record(1500);
            s.missed = 3;
            r.streams.push(s);
        }
        let mut buf = Vec::new();
        print_summary(&r, &mut buf).unwrap();
        let text = String::from_utf8(buf).unwrap();
        // The header line, the system facts (a `#` line each), then the table.
        assert!(text.contains("\n# clocksource: "), "{text}");
        let lines: Vec<&str> = text.lines().skip_while(|l| l.starts_with('#')).take(3).collect();
        assert!(lines[1].starts_with("posix_timer_thread.cpu0 "), "{text}");
        // Every row ends at the same column (the max), and the count column starts after the name.
        assert!(lines.iter().all(|l| l.len() == lines[0].len()), "{text}");
        let count_end = lines[0].find("count").unwrap() + "count".len();
        assert_eq!(&lines[1][count_end - 1..count_end], "1", "{text}");
        assert_eq!(&lines[2][count_end - 1..count_end], "1", "{text}");
    }
}
