//! `latlab report compare`: two or more results side by side, per stream: count, min,
//! p50 ... p99.9, max and missed events for each run, the ratio of each later run to the
//! first, then the log-bucket histogram ([`crate::buckets`]) side by side.
//!
//! Streams are paired by name; a name with no exact match pairs with the same name plus or
//! less a `.cpuN` suffix, so the model's `posix_timer_thread` meets the probe's
//! `posix_timer_thread.cpu0` (the probe's name when it measured several CPUs). A model run
//! (`realfeel`) and a probe timer run (`cpu0`, `cpu1` ...) share no name: then the first
//! stream of each is compared, and the table says so.

use crate::buckets::{self, range_label};
use latlab_core::{Nanos, RunResult, Stream};
use std::fmt::Write;

/// Which streams of each run are compared: one group per compared stream, `group[i]` the
/// index of the stream in run `i`, and a note when the pairing is not by name.
#[derive(Debug, PartialEq)]
pub struct Pairing {
    pub groups: Vec<Vec<usize>>,
    pub note: Option<String>,
}

/// A stream's name without the probe's per-CPU suffix: `posix_timer_thread.cpu1` ->
/// `posix_timer_thread`; any other name as it is (`cpu0`, `realfeel`).
pub fn base_name(name: &str) -> &str {
    match name.rsplit_once('.') {
        Some((base, cpu))
            if !base.is_empty()
                && cpu
                    .strip_prefix("cpu")
                    .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())) =>
        {
            base
        }
        _ => name,
    }
}

/// Pair the runs' streams, each stream of a run in at most one group: by name where every run
/// has the name; then, for the first run's streams still unpaired, by [`base_name`] (the first
/// unpaired stream of that base in each run); else the first stream of each. Runs must each
/// have at least one stream.
pub fn pair_streams(runs: &[&RunResult]) -> Pairing {
    let Some(first) = runs.first() else {
        return Pairing {
            groups: vec![],
            note: None,
        };
    };
    // used[i][j]: stream j of run i is in a group already.
    let mut used: Vec<Vec<bool>> = runs.iter().map(|r| vec![false; r.streams.len()]).collect();
    let mut by_first: Vec<Option<Vec<usize>>> = vec![None; first.streams.len()];
    let exact = |a: &str, b: &str| a == b;
    let same_base = |a: &str, b: &str| base_name(a) == base_name(b);
    for matches in [&exact as &dyn Fn(&str, &str) -> bool, &same_base] {
        for (k, s) in first.streams.iter().enumerate() {
            if by_first[k].is_some() {
                continue;
            }
            let group: Option<Vec<usize>> = runs
                .iter()
                .enumerate()
                .map(|(i, r)| match i {
                    0 => Some(k),
                    _ => (0..r.streams.len()).find(|&j| !used[i][j] && matches(&s.name, &r.streams[j].name)),
                })
                .collect();
            if let Some(g) = group {
                for (i, &j) in g.iter().enumerate() {
                    used[i][j] = true;
                }
                by_first[k] = Some(g);
            }
        }
    }
    let groups: Vec<Vec<usize>> = by_first.into_iter().flatten().collect();
    let names = |r: &&RunResult| r.streams.iter().map(|s| s.name.as_str()).collect::<Vec<_>>().join(",");
    if groups.is_empty() {
        let all: Vec<String> = runs.iter().map(names).collect();
        return Pairing {
            groups: vec![vec![0; runs.len()]],
            note: Some(format!(
                "no stream name is in every run (streams: {}): comparing the first stream of each",
                all.join(" / ")
            )),
        };
    }
    let paired = &groups;
    let unpaired: Vec<String> = runs
        .iter()
        .enumerate()
        .flat_map(|(i, r)| {
            r.streams
                .iter()
                .enumerate()
                .filter(move |(j, _)| !paired.iter().any(|g| g[i] == *j))
                .map(|(_, s)| s.name.clone())
        })
        .collect();
    let note = (!unpaired.is_empty()).then(|| format!("not in every run, left out: {}", unpaired.join(", ")));
    Pairing { groups, note }
}

/// `later / first`, or `None` when the first is zero (no ratio to speak of).
pub fn ratio(first: f64, later: f64) -> Option<f64> {
    (first != 0.0).then(|| later / first)
}

/// A latency for a table cell: `12.3 us` below a millisecond, `4.56 ms` above.
pub fn fmt_latency(ns: Nanos) -> String {
    if ns < 1_000_000 {
        format!("{:.1} us", ns as f64 / 1e3)
    } else {
        format!("{:.2} ms", ns as f64 / 1e6)
    }
}

/// Right-aligned columns after a left-aligned first one, two spaces apart.
pub(crate) fn render_table(rows: &[Vec<String>]) -> String {
    let ncol = rows.iter().map(Vec::len).max().unwrap_or(0);
    let width: Vec<usize> = (0..ncol)
        .map(|c| crate::column_width(rows.iter().filter_map(|r| r.get(c)).map(|s| s.chars().count()), 0))
        .collect();
    let mut out = String::new();
    for r in rows {
        let mut line = String::new();
        for (c, cell) in r.iter().enumerate() {
            if c == 0 {
                let _ = write!(line, "{cell:<w$}", w = width[0]);
            } else {
                let _ = write!(line, "  {cell:>w$}", w = width[c]);
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// Header row: the first column's title, then each run's label and, after the first, a
/// ratio column.
fn header(first: &str, labels: &[&str]) -> Vec<String> {
    let mut h = vec![first.to_string()];
    for (i, l) in labels.iter().enumerate() {
        h.push(l.to_string());
        if i > 0 {
            h.push("ratio".into());
        }
    }
    h
}

/// One row of figures: each run's value, and its ratio to the first after the first.
fn figure_row(name: &str, values: &[f64], fmt: &dyn Fn(f64) -> String) -> Vec<String> {
    let values: Vec<Option<f64>> = values.iter().copied().map(Some).collect();
    partial_row(name, &values, fmt)
}

/// [`figure_row`] where a run may have no value: `-` for it, and for its ratio.
fn partial_row(name: &str, values: &[Option<f64>], fmt: &dyn Fn(f64) -> String) -> Vec<String> {
    let mut row = vec![name.to_string()];
    for (i, v) in values.iter().enumerate() {
        row.push(v.map_or("-".into(), fmt));
        if i > 0 {
            let r = values[0].zip(*v).and_then(|(a, b)| ratio(a, b));
            row.push(r.map_or("-".into(), |x| format!("{x:.2}x")));
        }
    }
    row
}

/// The figures of one group of streams as table cells: a header row (see [`Group`]), then
/// count, min, p50, p90, p99, p99.9, max and missed.
fn figures_rows(labels: &[&str], streams: &[&Stream]) -> Vec<Vec<String>> {
    let sums: Vec<_> = streams.iter().map(|s| s.hist.summary()).collect();
    let count = |v: f64| format!("{}", v as u64);
    let lat = |v: f64| fmt_latency(v as Nanos);
    let col = |f: &dyn Fn(&latlab_core::Summary) -> Nanos| sums.iter().map(|m| f(m) as f64).collect::<Vec<_>>();
    vec![
        header("", labels),
        figure_row("count", &col(&|m| m.count), &count),
        figure_row("min", &col(&|m| m.min_ns), &lat),
        figure_row("p50", &col(&|m| m.p50_ns), &lat),
        figure_row("p90", &col(&|m| m.p90_ns), &lat),
        figure_row("p99", &col(&|m| m.p99_ns), &lat),
        figure_row("p99.9", &col(&|m| m.p999_ns), &lat),
        figure_row("max", &col(&|m| m.max_ns), &lat),
        figure_row(
            "missed",
            &streams.iter().map(|s| s.missed as f64).collect::<Vec<_>>(),
            &count,
        ),
    ]
}

/// The log-bucket histogram (one bucket per octave) of a group of streams side by side as
/// table cells, from the first bucket any of them has samples in to the last.
fn histogram_rows(labels: &[&str], streams: &[&Stream]) -> Vec<Vec<String>> {
    let max = streams.iter().map(|s| s.hist.max()).max().unwrap_or(0);
    let edges = buckets::edges(max, 1);
    let per: Vec<Vec<buckets::Bucket>> = streams.iter().map(|s| buckets::count(&s.hist, &edges)).collect();
    let rows_idx: Vec<usize> = (0..edges.len() - 1).collect();
    let kept = buckets::trim(&rows_idx, |&i| per.iter().any(|b| b[i].count > 0));
    let mut rows = vec![header("latency", labels)];
    for &i in kept {
        let counts: Vec<f64> = per.iter().map(|b| b[i].count as f64).collect();
        rows.push(figure_row(&range_label(&per[0][i]), &counts, &|v| {
            format!("{}", v as u64)
        }));
    }
    rows
}

/// One compared stream: its title (`realfeel`, or `realfeel vs cpu0` where the names
/// differ), what it measures, and its two tables as cells. A table's first row is its
/// header (the first column's title, then each run's label and, after the first, `ratio`);
/// every other row starts with the figure's or bucket's name.
#[derive(Debug, PartialEq)]
pub struct Group {
    pub title: String,
    pub measures: String,
    pub figures: Vec<Vec<String>>,
    pub histogram: Vec<Vec<String>>,
}

/// The whole comparison, for the text table ([`render`]) and the HTML report to lay out.
#[derive(Debug, PartialEq)]
pub struct Comparison {
    /// How the streams were paired, when not simply by name.
    pub note: Option<String>,
    /// The runs' rates (`RunResult::throughput`: iozone's MB/s, context switches a second)
    /// side by side: a header row, then one row per rate any run has; empty when none has.
    pub rates: Vec<Vec<String>>,
    pub groups: Vec<Group>,
    /// The explained spikes of every run by the cgroup of the task blamed: a header row
    /// (`run`, `cgroup`, `container`, `spikes`, `worst`), then the rows; empty when no spike
    /// names a cgroup.
    pub cgroups: Vec<Vec<String>>,
}

/// A rate's key as a table row's name: `write_MBps` -> `write MB/s`, `write_cs_per_s` ->
/// `write context switches/s`.
fn rate_label(key: &str) -> String {
    for (suffix, unit) in [
        ("_MBps", " MB/s"),
        ("_cs_per_s", " context switches/s"),
        ("_per_s", "/s"),
    ] {
        if let Some(stem) = key.strip_suffix(suffix) {
            return format!("{}{unit}", stem.replace('_', " "));
        }
    }
    key.to_string()
}

/// Every rate any run has, by key, each run's value or `-`, with the ratio to the first
/// where both have it.
fn rates_rows(labels: &[&str], runs: &[&RunResult]) -> Vec<Vec<String>> {
    let keys: std::collections::BTreeSet<&String> = runs.iter().flat_map(|r| r.throughput.keys()).collect();
    if keys.is_empty() {
        return Vec::new();
    }
    let mut rows = vec![header("rate", labels)];
    for k in keys {
        let vals: Vec<Option<f64>> = runs.iter().map(|r| r.throughput.get(k.as_str()).copied()).collect();
        rows.push(partial_row(&rate_label(k), &vals, &|v| format!("{v:.1}")));
    }
    rows
}

/// Compare `runs` (labelled `labels`): per compared stream, its figures and histogram.
pub fn compare(labels: &[&str], runs: &[&RunResult]) -> Comparison {
    let p = pair_streams(runs);
    let groups = p
        .groups
        .iter()
        .map(|g| {
            let streams: Vec<&Stream> = g.iter().zip(runs).map(|(&j, r)| &r.streams[j]).collect();
            let names: Vec<&str> = streams.iter().map(|s| s.name.as_str()).collect();
            let mut title = names.first().copied().unwrap_or_default().to_string();
            if names.iter().any(|n| *n != title) {
                title = names.join(" vs ");
            }
            let mut measures: Vec<&str> = streams.iter().map(|s| s.measures.as_str()).collect();
            measures.dedup();
            Group {
                title,
                measures: measures.join(" / "),
                figures: figures_rows(labels, &streams),
                histogram: histogram_rows(labels, &streams),
            }
        })
        .collect();
    let mut cgroups: Vec<Vec<String>> = labels
        .iter()
        .zip(runs)
        .flat_map(|(l, r)| crate::summary::cgroup_rows(r, &[l]))
        .collect();
    if !cgroups.is_empty() {
        cgroups.insert(0, crate::summary::cgroup_header(&["run"]));
    }
    Comparison {
        note: p.note,
        rates: rates_rows(labels, runs),
        groups,
        cgroups,
    }
}

/// The whole comparison as text: per compared stream, its figures then its histogram.
pub fn render(labels: &[&str], runs: &[&RunResult]) -> String {
    let c = compare(labels, runs);
    let mut out = String::new();
    for (i, (l, r)) in labels.iter().zip(runs).enumerate() {
        let first = if i == 0 { "  (first: ratios are to it)" } else { "" };
        let _ = writeln!(out, "run {}: {l}{first}", i + 1);
        for f in &r.loads {
            let _ = writeln!(out, "  load {}: {}", f.name, crate::summary::load_fate(f));
        }
        for (k, v) in r.meta.system() {
            let _ = writeln!(out, "    {k}: {v}");
        }
    }
    if let Some(n) = &c.note {
        let _ = writeln!(out, "note: {n}");
    }
    if !c.rates.is_empty() {
        out.push('\n');
        out.push_str(&render_table(&c.rates));
    }
    for g in &c.groups {
        let _ = writeln!(out, "\nstream {} ({})", g.title, g.measures);
        out.push_str(&render_table(&g.figures));
        out.push('\n');
        out.push_str(&render_table(&g.histogram));
    }
    if !c.cgroups.is_empty() {
        out.push_str("\nspikes by cgroup\n");
        out.push_str(&render_table(&c.cgroups));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::tests::result;
    use latlab_core::Engine;

    #[test]
    fn ratio_of_later_to_first() {
        assert_eq!(ratio(2.0, 5.0), Some(2.5));
        assert_eq!(ratio(0.0, 5.0), None);
        assert_eq!(ratio(4.0, 0.0), Some(0.0));
    }

    #[test]
    fn pairs_by_name_and_falls_back_to_the_first_stream() {
        let mut a = result(Engine::Sim, "2.4.18", "realfeel", &[1_000]);
        let b = result(Engine::Sim, "2.4.18+ll", "realfeel", &[2_000]);
        let p = pair_streams(&[&a, &b]);
        assert_eq!(p.groups, vec![vec![0, 0]]);
        assert_eq!(p.note, None);
        a.streams.insert(0, latlab_core::Stream::new("other", "x"));
        let p = pair_streams(&[&a, &b]);
        assert_eq!(p.groups, vec![vec![1, 0]]);
        assert_eq!(p.note.as_deref(), Some("not in every run, left out: other"));
        let probe = result(Engine::Probe, "6.1", "cpu0", &[3_000]);
        let p = pair_streams(&[&b, &probe]);
        assert_eq!(p.groups, vec![vec![0, 0]]);
        assert!(p.note.unwrap().contains("realfeel / cpu0"));
    }

    #[test]
    fn base_name_drops_only_a_cpu_suffix() {
        assert_eq!(base_name("posix_timer_thread.cpu0"), "posix_timer_thread");
        assert_eq!(base_name("posix_timer_signal.cpu12"), "posix_timer_signal");
        for same in [
            "posix_timer_thread",
            "cpu0",
            "realfeel",
            "a.cpu",
            "a.cpux",
            ".cpu0",
            "a.b",
        ] {
            assert_eq!(base_name(same), same);
        }
    }

    /// A result with streams `names`, one sample each.
    fn streams(engine: Engine, names: &[&str]) -> RunResult {
        let mut r = result(engine, "k", names[0], &[1_000]);
        for n in &names[1..] {
            let mut s = latlab_core::Stream::new(*n, "x");
            s.hist.record(2_000);
            r.streams.push(s);
        }
        r
    }

    #[test]
    fn pairs_a_model_stream_with_the_probe_stream_of_its_name_and_a_cpu_suffix() {
        let model = streams(Engine::Sim, &["posix_timer_signal", "posix_timer_thread"]);
        let probe = streams(Engine::Probe, &["posix_timer_thread.cpu0", "posix_timer_thread.cpu1"]);
        let p = pair_streams(&[&model, &probe]);
        assert_eq!(p.groups, vec![vec![1, 0]]);
        assert_eq!(
            p.note.as_deref(),
            Some("not in every run, left out: posix_timer_signal, posix_timer_thread.cpu1")
        );
        // Either way round: each stream is paired at most once.
        let p = pair_streams(&[&probe, &model]);
        assert_eq!(p.groups, vec![vec![0, 1]]);
        // An exact name wins over a suffixed one, wherever it stands.
        let probe2 = streams(Engine::Probe, &["posix_timer_thread.cpu1", "posix_timer_thread"]);
        assert_eq!(pair_streams(&[&model, &probe2]).groups, vec![vec![1, 1]]);
        let p = pair_streams(&[&probe2, &probe]);
        assert_eq!(p.groups, vec![vec![0, 1], vec![1, 0]]);
        assert_eq!(p.note, None);
        // No shared base: the first stream of each, as before.
        let timer = streams(Engine::Probe, &["cpu0", "cpu1"]);
        let p = pair_streams(&[&model, &timer]);
        assert_eq!(p.groups, vec![vec![0, 0]]);
        assert!(p.note.unwrap().starts_with("no stream name is in every run"));
        // The compared stream's title names both.
        let c = compare(&["model", "probe"], &[&model, &probe]);
        assert_eq!(c.groups.len(), 1);
        assert_eq!(c.groups[0].title, "posix_timer_thread vs posix_timer_thread.cpu0");
        assert_eq!(c.groups[0].figures[1], ["count", "1", "1", "1.00x"]);
    }

    #[test]
    fn side_by_side_with_ratios() {
        let a = result(Engine::Sim, "2.4.18", "realfeel", &[10_000, 20_000, 40_000]);
        let b = result(Engine::Probe, "6.1", "cpu0", &[10_000, 20_000, 80_000, 80_000]);
        let out = render(&["A (model)", "B (probe)"], &[&a, &b]);
        let line = |k: &str| -> Vec<String> {
            out.lines()
                .find(|l| l.starts_with(k))
                .unwrap_or_else(|| panic!("{k} in {out}"))
                .split("  ")
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .map(String::from)
                .collect()
        };
        assert_eq!(line("count"), ["count", "3", "4", "1.33x"]);
        assert_eq!(line("max"), ["max", "40.0 us", "80.0 us", "2.00x"]);
        assert_eq!(line("missed"), ["missed", "0", "0", "-"]);
        assert!(out.contains("stream realfeel vs cpu0 (wakeup)\n"), "{out}");
        // Histogram rows: 8-16 us first, 64-128 us last, nothing outside.
        assert_eq!(line("8-16 us"), ["8-16 us", "1", "1", "1.00x"]);
        assert_eq!(line("64-128 us"), ["64-128 us", "0", "2", "-"]);
        assert!(!out.contains("4-8 us") && !out.contains("128-256 us"), "{out}");
    }

    #[test]
    fn rates_side_by_side_with_a_dash_where_a_run_has_none() {
        let mut a = streams(Engine::Sim, &["write"]);
        let mut b = streams(Engine::Probe, &["write"]);
        a.throughput.insert("write_MBps".into(), 80.0);
        a.throughput.insert("write_cs_per_s".into(), 30.0);
        b.throughput.insert("write_MBps".into(), 200.0);
        let c = compare(&["model", "probe"], &[&a, &b]);
        assert_eq!(c.rates[0], ["rate", "model", "probe", "ratio"]);
        // By key: `write_MBps` sorts before `write_cs_per_s`.
        assert_eq!(c.rates[1], ["write MB/s", "80.0", "200.0", "2.50x"]);
        assert_eq!(c.rates[2], ["write context switches/s", "30.0", "-", "-"]);
        assert!(render(&["model", "probe"], &[&a, &b]).contains("write MB/s"));
        // No rates anywhere: no table.
        let plain = streams(Engine::Sim, &["write"]);
        assert!(compare(&["a", "b"], &[&plain, &plain]).rates.is_empty());
    }

    #[test]
    fn the_comparison_groups_each_runs_spikes_by_cgroup() {
        let a = result(Engine::Sim, "2.4.18", "realfeel", &[1_000]);
        let b = crate::summary::tests::with_cgroups(&[("/lxc.payload.web", Some(("lxc", "web")), 250_000)]);
        let c = compare(&["model", "probe"], &[&a, &b]);
        assert_eq!(
            c.cgroups,
            [
                vec!["run", "cgroup", "container", "spikes", "worst"],
                vec!["probe", "/lxc.payload.web", "lxc web", "1", "250.0 us"],
            ]
        );
        let text = render(&["model", "probe"], &[&a, &b]);
        assert!(text.contains("\nspikes by cgroup\nrun "), "{text}");
        assert!(compare(&["model"], &[&a]).cgroups.is_empty());
        assert!(!render(&["model"], &[&a]).contains("by cgroup"));
    }
}
