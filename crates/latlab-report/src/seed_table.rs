//! The seeds' tables with the model's figures beside the published ones.
//!
//! Seed 000 prints counts per logarithmic latency bucket (0-1, 1-2, 2-4 ... 128-256 ms) per
//! kernel and quotes worst cases in its text; seed 002 gives one maximum per kernel. Both
//! layouts are reproduced here, followed by the worst-case comparison the fidelity bar is
//! judged on: a published number within 1.5x, a published bucket within 2x of its edges.

use crate::verdict::{mark, Bar};
use latlab_core::{ms, RunResult};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write;

/// Log-bucket edges in ms: 0-1, 1-2, 2-4 ... 128-256, 256-512.
pub const BUCKET_EDGES_MS: [f64; 11] = [0.0, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0];

/// What a seed published for one run.
#[derive(Clone, Debug, Default)]
pub struct Published<'a> {
    pub samples: Option<f64>,
    pub max_ms: Option<f64>,
    pub max_range_ms: Option<[f64; 2]>,
    pub buckets: &'a [f64],
    pub listing: &'a [[f64; 2]],
    /// Average latency, ms (seed 004).
    pub avg_ms: Option<f64>,
    /// Missed timer events (seed 004).
    pub missed: Option<u64>,
    /// The slowest writes, us (seed 001's `sort -nk2 wol.dat | tail`).
    pub slowest_us: &'a [f64],
    /// Writes over 100 ms (seed 001).
    pub over_100ms: Option<u64>,
    /// Write throughput over the first run's of the same case (seed 001).
    pub throughput_gain: Option<f64>,
    /// The longest `get_swap_page` stretch, ms, and the worst trace's task and function
    /// (seed 003).
    pub swap_max_ms: Option<f64>,
    pub task: Option<&'a str>,
    pub function: Option<&'a str>,
}

/// One row of a reproduced table: a run's result and the seed's figures for it.
pub struct RunView<'a> {
    pub label: &'a str,
    /// What the run varies besides the kernel (seed 001's file size), if anything.
    pub case: Option<&'a str>,
    pub result: &'a RunResult,
    pub published: Published<'a>,
}

/// A figure compared with the seed (the `--json` rows of `latlab reproduce`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct CompareRow {
    /// The run's label: its row in the experiment's table (labels are unique in an
    /// experiment; runs may share a kernel and a case).
    #[serde(default)]
    pub run: String,
    pub variant: String,
    /// The measurement stream, where a run's kernel alone does not name the row
    /// (`posix_timer_thread`, `posix_timer_signal`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream: Option<String>,
    /// The run's case (seed 001's file size: `50%`), where the kernel alone does not name it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub case: Option<String>,
    pub figure: String,
    pub unit: String,
    pub model: f64,
    pub published: Option<f64>,
    pub published_range: Option<[f64; 2]>,
    pub source: String,
    /// The bar the published figure is judged by ([`Bar`]); none for a figure the seed did
    /// not publish, for the sample count (it sets the run's length) and for the slowest-writes
    /// listing (its worst is judged as `max_write_latency`).
    #[serde(default)]
    pub bar: Option<Bar>,
    /// The verdict: the model's figure inside its bar; none where nothing is judged.
    #[serde(default)]
    pub inside: Option<bool>,
    /// The figure's uncertainty band, p5 / p50 / p95 over the draws of its constants
    /// (`latlab uncertainty`; `reproduce` takes it from the experiment's stored bands).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub band: Option<[f64; 3]>,
    /// The published figure inside the band (p5 to p95): a number between them, a bucket
    /// overlapping them; none without a band or a published figure.
    #[serde(default)]
    pub published_in_band: Option<bool>,
}

impl CompareRow {
    /// The template of run `v`'s rows: its label, kernel and case, the measurement `stream`
    /// where the kernel alone does not name the row, the seed file; [`CompareRow::with`]
    /// fills in a figure.
    pub fn of_run(v: &RunView, stream: Option<String>, source: &str) -> CompareRow {
        CompareRow {
            run: v.label.to_string(),
            variant: v.result.meta.kernel.clone(),
            stream,
            case: v.case.map(str::to_string),
            figure: String::new(),
            unit: String::new(),
            model: 0.0,
            published: None,
            published_range: None,
            source: source.into(),
            bar: None,
            inside: None,
            band: None,
            published_in_band: None,
        }
    }

    /// This row's run with `figure` in `unit`: the model's value and the seed's, judged by
    /// `bar` where the seed published it.
    pub fn with(
        &self,
        figure: impl Into<String>,
        unit: &str,
        model: f64,
        published: Option<f64>,
        bar: Option<Bar>,
    ) -> CompareRow {
        let mut r = CompareRow {
            figure: figure.into(),
            unit: unit.into(),
            model,
            published,
            published_range: None,
            bar,
            band: None,
            published_in_band: None,
            ..self.clone()
        };
        r.judge();
        r
    }

    /// Set the verdict ([`CompareRow::inside`]) from the bar, the model's figure and the
    /// seed's: every row passes here once its figures are in.
    pub fn judge(&mut self) {
        self.inside = self
            .bar
            .and_then(|b| b.holds(self.model, self.published, self.published_range));
    }

    /// Lay `band` beside the figure, with whether the published figure lies inside it.
    pub fn set_band(&mut self, band: Option<[f64; 3]>) {
        self.band = band;
        self.published_in_band = band.and_then(|[lo, _, hi]| {
            if let Some(p) = self.published {
                return Some((lo..=hi).contains(&p));
            }
            self.published_range.map(|[a, b]| a <= hi && b >= lo)
        });
    }

    /// model / published (or / the bucket's geometric middle).
    pub fn ratio(&self) -> Option<f64> {
        self.published
            .or(self.published_range.map(|[lo, hi]| (lo * hi).sqrt()))
            .map(|p| self.model / p)
    }
}

fn realfeel(r: &RunResult) -> Option<&latlab_core::Stream> {
    r.stream("realfeel").or(r.streams.first())
}

/// Comparison rows of an experiment: worst case and sample count per run.
pub fn compare_rows(runs: &[RunView], source: &str) -> Vec<CompareRow> {
    let mut rows = Vec::new();
    for v in runs {
        if let Some(p) = &v.result.preempt_off {
            rows.extend(crate::preempt_off::rows(v, p, source));
            continue;
        }
        let Some(s) = realfeel(v.result) else { continue };
        if s.name == "write" {
            rows.extend(write_rows(v, source));
            continue;
        }
        if s.name == SYSBENCH_STREAM {
            rows.extend(sysbench_rows(v, s, source));
            continue;
        }
        if s.name.starts_with("posix_timer") {
            rows.extend(posix_rows(v, s, source));
            continue;
        }
        // Seed 000's and 002's worst case: a number within 1.5x, a bucket within 2x of its
        // edges. The sample count sets the run's length (the model runs until it has the
        // seed's): published beside the model's, not judged.
        let base = CompareRow::of_run(v, None, source);
        let (published, range, bar) = match (v.published.max_ms, v.published.max_range_ms) {
            (Some(m), _) => (Some(m), None, Some(Bar::Within(1.5))),
            (None, Some(r)) => (None, Some(r), Some(Bar::BucketWithin(2.0))),
            (None, None) => (None, None, Some(Bar::Within(1.5))),
        };
        let mut max = base.with("max_latency", "ms", ms(s.hist.max()), published, bar);
        max.published_range = range;
        max.judge();
        rows.push(max);
        rows.push(base.with("samples", "count", s.hist.count() as f64, v.published.samples, None));
        rows.push(base.with("p99_latency", "ms", ms(s.hist.quantile(0.99)), None, None));
    }
    let gains = gain_rows(&rows, |r| {
        runs.iter()
            .find(|v| v.label == r.run)
            .and_then(|v| v.published.throughput_gain)
    });
    rows.extend(gains);
    rows
}

/// Seed 004's three figures for a POSIX-timer run: maximum (bar: within 1.5x) and average
/// latency (within 2x), us, and missed timer events (equal).
fn posix_rows(v: &RunView, s: &latlab_core::Stream, source: &str) -> Vec<CompareRow> {
    let base = CompareRow::of_run(v, Some(s.name.clone()), source);
    vec![
        base.with(
            "max_latency",
            "us",
            s.hist.max() as f64 / 1e3,
            v.published.max_ms.map(|m| m * 1e3),
            Some(Bar::Within(1.5)),
        ),
        base.with(
            "avg_latency",
            "us",
            s.hist.mean() / 1e3,
            v.published.avg_ms.map(|m| m * 1e3),
            Some(Bar::Within(2.0)),
        ),
        base.with(
            "missed_events",
            "count",
            s.missed as f64,
            v.published.missed.map(|m| m as f64),
            Some(Bar::Equal),
        ),
        base.with("p99_latency", "us", s.hist.quantile(0.99) as f64 / 1e3, None, None),
    ]
}

/// Seed 001's figures for an iozone run: its worst write (ms; bar: within 1.5x), its ten
/// slowest (ms, slowest first; a listing beside the seed's, not judged), writes over 100 ms
/// (within 1.5x, none where the seed has none) and write throughput (MB/s). The gain over
/// another run is [`gain_rows`]'.
fn write_rows(v: &RunView, source: &str) -> Vec<CompareRow> {
    let Some(s) = v.result.stream("write") else {
        return Vec::new();
    };
    let base = CompareRow::of_run(v, None, source);
    let mbps = |r: &RunResult| r.throughput.get("write_MBps").copied();
    let mut rows = vec![base.with(
        "max_write_latency",
        "ms",
        ms(s.hist.max()),
        v.published.max_ms,
        Some(Bar::Within(1.5)),
    )];
    let mut slowest: Vec<u64> = s.worst.iter().map(|w| w.latency_ns).collect();
    slowest.sort_unstable_by(|a, b| b.cmp(a));
    let mut seed: Vec<f64> = v.published.slowest_us.to_vec();
    seed.sort_by(|a, b| b.total_cmp(a));
    for (i, ns) in slowest.iter().enumerate() {
        let published = seed.get(i).map(|us| us / 1e3);
        rows.push(base.with(format!("slowest_write_{}", i + 1), "ms", ms(*ns), published, None));
    }
    let over = v.result.counters.get("writes_over_100ms").copied().unwrap_or(0);
    rows.push(base.with(
        "writes_over_100ms",
        "count",
        over as f64,
        v.published.over_100ms.map(|n| n as f64),
        Some(Bar::Within(1.5)),
    ));
    if let Some(m) = mbps(v.result) {
        rows.push(base.with("write_throughput", "MB/s", m, None, None));
    }
    rows
}

/// The stream of sysbench's fileio requests (its rows' `stream`), and its counter of
/// requests over 100 ms (latlab_sim's `Pass::Rndrw`; this crate reads results only).
const SYSBENCH_STREAM: &str = "sysbench-rndrw";
const SYSBENCH_OVER: &str = "rndrw_requests_over_100ms";

/// Seed 001's figures for a sysbench `fileio` rndrw run: its slowest request (ms), its
/// requests a second and its "mix throughput" (MB/s read and written over the run, sysbench's
/// "Total transferred ... /sec"). The gain over another run is [`gain_rows`]'.
fn sysbench_rows(v: &RunView, s: &latlab_core::Stream, source: &str) -> Vec<CompareRow> {
    let base = CompareRow::of_run(v, Some(s.name.clone()), source);
    let mut rows = vec![base.with("max_request_latency", "ms", ms(s.hist.max()), None, None)];
    let t = &v.result.throughput;
    if let Some(&n) = t.get("rndrw_requests_per_s") {
        rows.push(base.with("requests_per_sec", "count/s", n, None, None));
    }
    if let Some(&m) = t.get("rndrw_MBps") {
        rows.push(base.with("mix_throughput", "MB/s", m, None, None));
    }
    rows
}

/// Run `v`'s row of `figure`: by the run's label, which no other run of the experiment has
/// (runs may share a kernel and a case).
pub(crate) fn run_row<'a>(rows: &'a [CompareRow], v: &RunView, figure: &str) -> Option<&'a CompareRow> {
    rows.iter().find(|r| r.figure == figure && r.run == v.label)
}

/// A figure for the table at `prec` decimals, `-` where there is none.
fn num(x: Option<f64>, prec: usize) -> String {
    x.map_or("-".to_string(), |x| format!("{x:.prec$}"))
}

/// Seed 001's gains, figures across runs: each throughput row (iozone's `write_throughput`,
/// sysbench's `mix_throughput`) over the first one of the same figure, case and stream (the
/// stock kernel's), as `throughput_gain` rows after all others, with the seed's gain for
/// that row (`published`; bar: the gain above 1 within 2x of the seed's, 1.125-1.5 for its
/// "about 25 %"). Separate from the per-run rows so that runs made one at a time
/// (`latlab uncertainty`'s jobs) merge into the same rows.
pub fn gain_rows(rows: &[CompareRow], published: impl Fn(&CompareRow) -> Option<f64>) -> Vec<CompareRow> {
    let tput = |r: &&CompareRow| r.figure == "write_throughput" || r.figure == "mix_throughput";
    rows.iter()
        .filter(tput)
        .filter_map(|r| {
            let base = rows
                .iter()
                .filter(tput)
                .find(|b| b.figure == r.figure && b.case == r.case && b.stream == r.stream)?;
            (!std::ptr::eq(base, r) && base.model > 0.0).then(|| {
                r.with(
                    "throughput_gain",
                    "ratio",
                    r.model / base.model,
                    published(r),
                    Some(Bar::GainWithin(2.0)),
                )
            })
        })
        .collect()
}

/// A table's first lines: its title and the seed file (the bars its figures are judged by
/// close the table: [`crate::verdict::summary_line`]).
fn table_heading(title: &str, source: &str) -> String {
    format!("{title}\n(seed: {source})\n\n")
}

/// A judged figure's verdict cell: the ratio to the seed's figure (where `ratio` and the
/// seed's is not 0) and [`mark`]; empty where nothing is judged.
fn verdict_cell(r: Option<&CompareRow>, ratio: bool) -> String {
    let Some(r) = r.filter(|r| r.inside.is_some()) else {
        return String::new();
    };
    match r.ratio().filter(|q| ratio && q.is_finite()) {
        Some(q) => format!("{q:.2}x {}", mark(r.inside)),
        None => mark(r.inside).to_string(),
    }
}

/// Seed 001's table: per kernel and file size, the worst write and the writes over 100 ms,
/// iozone's write and rewrite throughput, and the gain over the first kernel of the same
/// size, the seed's figures beside the model's, each judged figure with its verdict; then
/// the context switches and sysbench's block. Each run's slowest records are
/// [`render_slowest_writes`]'.
pub fn render_write_latency(title: &str, source: &str, runs: &[RunView], rows: &[CompareRow]) -> String {
    let mut out = table_heading(title, source);
    let w = label_width(runs.iter().map(|v| v.label));
    let _ = writeln!(
        out,
        "{:<w$}{:>6}{:>32}{:>24}{:>18}{:>25}",
        "", "", "worst write (ms)", "writes >100 ms", "iozone MB/s", "write gain"
    );
    let _ = writeln!(
        out,
        "{:<w$}{:>6}{:>9}{:>9}{:>14}{:>7}{:>7}{:>10}{:>9}{:>9}{:>7}{:>7}{:>11}",
        "Run", "file", "seed", "model", "", "seed", "model", "", "write", "rewrite", "seed", "model", ""
    );
    for v in runs {
        let find = |f: &str| run_row(rows, v, f);
        if v.result.stream("write").is_none() {
            continue;
        }
        let Some(mx) = find("max_write_latency") else { continue };
        let over = find("writes_over_100ms");
        let gain = find("throughput_gain");
        let _ = writeln!(
            out,
            "{:<w$}{:>6}{:>9}{:>9}{:>14}{:>7}{:>7}{:>10}{:>9}{:>9}{:>7}{:>7}{:>11}",
            v.label,
            v.case.unwrap_or("-"),
            num(mx.published, 1),
            num(Some(mx.model), 1),
            verdict_cell(Some(mx), true),
            num(over.and_then(|r| r.published), 0),
            num(over.map(|r| r.model), 0),
            verdict_cell(over, false),
            num(v.result.throughput.get("write_MBps").copied(), 1),
            num(v.result.throughput.get("rewrite_MBps").copied(), 1),
            num(gain.and_then(|r| r.published), 2),
            num(gain.map(|r| r.model), 2),
            verdict_cell(gain, false),
        );
    }
    out.push_str(&render_switches(runs, w));
    out.push_str(&render_sysbench(runs, rows, w));
    out
}

/// Each write run's slowest records beside the seed's `sort -nk2 wol.dat | tail` (seed 001).
pub fn render_slowest_writes(runs: &[RunView]) -> String {
    let mut out = String::new();
    for v in runs {
        let Some(s) = v.result.stream("write") else { continue };
        let mut model: Vec<&latlab_core::Sample> = s.worst.iter().collect();
        model.sort_by_key(|x| x.latency_ns);
        let mut seed: Vec<f64> = v.published.slowest_us.to_vec();
        seed.sort_by(f64::total_cmp);
        let _ = writeln!(
            out,
            "\n{}: slowest writes as `sort -nk2 wol.dat | tail` (latency_us; the model's with offset_KB)",
            v.label
        );
        let _ = writeln!(out, "{:>12}   {:>12} {:>12}", "seed", "model", "offset_KB");
        for i in 0..model.len().max(seed.len()) {
            let sd = seed.get(i).map_or("-".to_string(), |u| format!("{u:.0}"));
            let (lat, off) = model.get(i).map_or(("-".to_string(), String::new()), |x| {
                (
                    (x.latency_ns / 1000).to_string(),
                    x.tag.get("offset_kb").cloned().unwrap_or_default(),
                )
            });
            let _ = writeln!(out, "{sd:>12}   {lat:>12} {off:>12}");
        }
    }
    out
}

/// Seed 001's context switches ("number of context switches increasing is inside variation
/// limits"; the seed gives no figure): per iozone run, the machine's switches a second over
/// each timed pass (vmstat's `cs`) and the writer's involuntary switches over both
/// (`/usr/bin/time -f %c`).
fn render_switches(runs: &[RunView], w: usize) -> String {
    let mut out = String::new();
    for v in runs.iter().filter(|v| v.result.stream("write").is_some()) {
        let (c, t) = (&v.result.counters, &v.result.throughput);
        if out.is_empty() {
            let _ = writeln!(
                out,
                "\ncontext switches in iozone's passes (machine-wide a second, as vmstat's cs; the writer's involuntary ones, as /usr/bin/time -f %c)\n{:<w$}{:>6}{:>12}{:>14}{:>20}",
                "Run", "file", "write cs/s", "rewrite cs/s", "writer involuntary"
            );
        }
        let invol = ["write_involuntary_switches", "rewrite_involuntary_switches"]
            .iter()
            .map(|k| c.get(*k).copied())
            .sum::<Option<u64>>();
        let _ = writeln!(
            out,
            "{:<w$}{:>6}{:>12}{:>14}{:>20}",
            v.label,
            v.case.unwrap_or("-"),
            num(t.get("write_cs_per_s").copied(), 0),
            num(t.get("rewrite_cs_per_s").copied(), 0),
            num(invol.map(|n| n as f64), 0),
        );
    }
    out
}

/// Seed 001's sysbench block of its table (nothing without sysbench runs): per kernel and
/// total file size, the slowest request, requests over 100 ms, sysbench's requests a second
/// and mix throughput, and the gain over the first kernel of the same size beside the seed's.
fn render_sysbench(runs: &[RunView], rows: &[CompareRow], w: usize) -> String {
    let mut out = String::new();
    for v in runs {
        let Some(s) = v.result.stream(SYSBENCH_STREAM) else {
            continue;
        };
        let find = |f: &str| run_row(rows, v, f);
        if out.is_empty() {
            let _ = writeln!(
                out,
                "\nsysbench fileio rndrw, the seed's \"mix throughput\" ({})\n{:<w$}{:>6}{:>12}{:>10}{:>12}{:>12}{:>27}",
                s.measures,
                "",
                "",
                "worst",
                "reqs",
                "",
                "mix",
                "mix gain"
            );
            let _ = writeln!(
                out,
                "{:<w$}{:>6}{:>12}{:>10}{:>12}{:>12}{:>8}{:>8}{:>11}",
                "Run", "files", "req (ms)", ">100 ms", "reqs/s", "MB/s", "seed", "model", ""
            );
        }
        let gain = find("throughput_gain");
        let over = v.result.counters.get(SYSBENCH_OVER).copied();
        let _ = writeln!(
            out,
            "{:<w$}{:>6}{:>12}{:>10}{:>12}{:>12}{:>8}{:>8}{:>11}",
            v.label,
            v.case.unwrap_or("-"),
            num(find("max_request_latency").map(|r| r.model), 1),
            num(over.map(|n| n as f64), 0),
            num(find("requests_per_sec").map(|r| r.model), 1),
            num(find("mix_throughput").map(|r| r.model), 2),
            num(gain.and_then(|r| r.published), 2),
            num(gain.map(|r| r.model), 2),
            verdict_cell(gain, false),
        );
    }
    out
}

/// Seed 004's figures per run, the seed's beside the model's, each judged one with its
/// verdict: maximum latency, average latency, missed timer events.
pub fn render_posix_timer(title: &str, source: &str, runs: &[RunView], rows: &[CompareRow]) -> String {
    let mut out = table_heading(title, source);
    let w = label_width(runs.iter().map(|v| v.label));
    let _ = writeln!(
        out,
        "{:<w$}{:>36}{:>36}{:>26}",
        "", "maximum latency (us)", "average latency (us)", "missed events"
    );
    let _ = writeln!(
        out,
        "{:<w$}{:>11}{:>11}{:>14}{:>11}{:>11}{:>14}{:>8}{:>8}{:>10}",
        "Run", "seed", "model", "", "seed", "model", "", "seed", "model", ""
    );
    for v in runs {
        let find = |f: &str| run_row(rows, v, f);
        let (Some(mx), Some(av), Some(mi)) = (find("max_latency"), find("avg_latency"), find("missed_events")) else {
            continue;
        };
        let _ = writeln!(
            out,
            "{:<w$}{:>11}{:>11}{:>14}{:>11}{:>11}{:>14}{:>8}{:>8}{:>10}",
            v.label,
            num(mx.published, 1),
            num(Some(mx.model), 1),
            verdict_cell(Some(mx), true),
            num(av.published, 1),
            num(Some(av.model), 1),
            verdict_cell(Some(av), true),
            num(mi.published, 0),
            num(Some(mi.model), 0),
            verdict_cell(Some(mi), false),
        );
    }
    out
}

fn fmt_count(x: f64) -> String {
    if x >= 100_000.0 {
        format!("{x:.1e}")
    } else if x == 0.0 {
        String::new()
    } else {
        format!("{}", x.round() as u64)
    }
}

/// A figure in its unit: a count whole, anything else as [`fmt_ms`].
fn fmt_figure(x: f64, unit: &str) -> String {
    if unit == "count" {
        format!("{x:.0}")
    } else {
        fmt_ms(x)
    }
}

fn fmt_ms(x: f64) -> String {
    if x >= 10.0 {
        format!("{x:.1}")
    } else if x >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

/// Seed 000's table: counts per log bucket, model row under each published row.
pub fn render_log_histogram(title: &str, source: &str, runs: &[RunView]) -> String {
    let mut out = String::new();
    let last_bucket = runs
        .iter()
        .filter_map(|v| realfeel(v.result).map(|s| ms(s.hist.max())))
        .map(|m| BUCKET_EDGES_MS.iter().rposition(|&e| e <= m).unwrap_or(0))
        .chain(runs.iter().map(|v| v.published.buckets.len().saturating_sub(1)))
        .max()
        .unwrap_or(0)
        .clamp(8, BUCKET_EDGES_MS.len() - 2);
    let heads: Vec<String> = (0..=last_bucket)
        .map(|i| format!("{}-{}", BUCKET_EDGES_MS[i], BUCKET_EDGES_MS[i + 1]))
        .collect();
    let widths: Vec<usize> = heads.iter().map(|h| h.len().max(7) + 1).collect();
    let _ = writeln!(out, "{title}");
    let _ = writeln!(
        out,
        "(seed: {source}; model = latlab's kernel model, seed = published)\n"
    );
    let label_w = label_width(runs.iter().map(|v| v.label));
    let _ = write!(out, "{:<label_w$}{:<7}", "", "");
    let _ = writeln!(out, "Latency (milliseconds)");
    let _ = write!(out, "{:<label_w$}{:<7}", "Kernel", "");
    for (h, w) in heads.iter().zip(&widths) {
        let _ = write!(out, "{h:<w$}");
    }
    let _ = writeln!(out, "{:>9}", "worst");
    for v in runs {
        let Some(s) = realfeel(v.result) else { continue };
        let _ = write!(out, "\n{:<label_w$}{:<7}", v.label, "seed");
        for (i, w) in widths.iter().enumerate() {
            let c = v.published.buckets.get(i).copied().unwrap_or(0.0);
            let _ = write!(out, "{:<w$}", fmt_count(c));
        }
        let worst = match (v.published.max_ms, v.published.max_range_ms) {
            (Some(m), _) => format!("{} ms", fmt_ms(m)),
            (None, Some([lo, hi])) => format!("{lo}-{hi} ms"),
            _ => String::new(),
        };
        let _ = writeln!(out, "{worst:>9}");
        let _ = write!(out, "{:<label_w$}{:<7}", "", "model");
        for (i, w) in widths.iter().enumerate() {
            let lo = (BUCKET_EDGES_MS[i] * 1e6) as u64;
            let hi = if i == last_bucket {
                u64::MAX
            } else {
                (BUCKET_EDGES_MS[i + 1] * 1e6) as u64
            };
            let c = s.hist.count_between(lo, hi) as f64;
            let _ = write!(out, "{:<w$}", fmt_count(c));
        }
        let _ = writeln!(out, "{:>9}", format!("{} ms", fmt_ms(ms(s.hist.max()))));
    }
    out
}

/// Seed 002's figures: one maximum per kernel.
pub fn render_max_latency(title: &str, source: &str, runs: &[RunView]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{title}");
    let _ = writeln!(out, "(seed: {source})\n");
    let label_w = label_width(runs.iter().map(|v| v.label));
    let _ = writeln!(out, "{:<label_w$}{:>16}{:>16}", "Kernel", "Max. latency", "model");
    for v in runs {
        let Some(s) = realfeel(v.result) else { continue };
        let p = v
            .published
            .max_ms
            .map_or(String::from("-"), |m| format!("{} ms", fmt_ms(m)));
        let _ = writeln!(
            out,
            "{:<label_w$}{:>16}{:>16}",
            v.label,
            p,
            format!("{} ms", fmt_ms(ms(s.hist.max())))
        );
    }
    out
}

/// The worst-case comparison: model beside seed, ratio, and whether it is inside the bar;
/// with stored bands, the band and whether the seed's figure lies inside it.
pub fn render_comparison(rows: &[CompareRow]) -> String {
    let mut out = String::new();
    let worst: Vec<&CompareRow> = rows.iter().filter(|r| r.figure == "max_latency").collect();
    let w = label_width(worst.iter().map(|r| r.run.as_str()));
    let _ = writeln!(out, "\nWorst case, model vs seed");
    let banded = worst.iter().any(|r| r.band.is_some());
    let _ = write!(
        out,
        "{:<w$}{:>12}{:>16}{:>9}{:>9}",
        "Kernel", "model", "seed", "ratio", "bar"
    );
    let _ = writeln!(out, "{}", if banded { "   band p5-p95 ms  seed in band" } else { "" });
    for r in worst {
        let seed = match (r.published, r.published_range) {
            (Some(p), _) => format!("{} ms", fmt_ms(p)),
            (None, Some([lo, hi])) => format!("{lo}-{hi} ms"),
            _ => "-".into(),
        };
        let ratio = r.ratio().map_or(String::from("-"), |x| format!("{x:.2}x"));
        let _ = write!(
            out,
            "{:<w$}{:>12}{:>16}{:>9}{:>9}",
            r.run,
            format!("{} ms", fmt_ms(r.model)),
            seed,
            ratio,
            mark(r.inside),
        );
        let _ = match (banded, r.band) {
            (false, _) => writeln!(out),
            (true, Some([lo, _, hi])) => writeln!(
                out,
                "{:>18}{:>14}",
                format!("{}-{}", fmt_ms(lo), fmt_ms(hi)),
                mark(r.published_in_band)
            ),
            (true, None) => writeln!(out, "{:>18}{:>14}", "-", "-"),
        };
    }
    out
}

/// Every published figure beside its stored uncertainty band (`latlab uncertainty`): for the
/// tables whose comparison has no band column (seeds 001, 003 and 004). Empty when no row
/// has a band.
pub fn render_bands(rows: &[CompareRow]) -> String {
    let mut out = String::new();
    if !rows.iter().any(|r| r.band.is_some()) {
        return out;
    }
    let published: Vec<&CompareRow> = rows
        .iter()
        .filter(|r| r.published.is_some() || r.published_range.is_some())
        .collect();
    let w = label_width(published.iter().map(|r| r.run.as_str()));
    let _ = writeln!(out, "\nPublished figures beside the model's uncertainty band (p5-p95)");
    let _ = writeln!(
        out,
        "{:<w$}{:<22}{:>12}{:>22}{:>12}  seed in band",
        "Run", "figure", "model", "band", "seed"
    );
    for r in published {
        let band = r
            .band
            .map_or("-".into(), |[lo, _, hi]| format!("{}-{}", fmt_ms(lo), fmt_ms(hi)));
        let seed = match (r.published, r.published_range) {
            (Some(p), _) => fmt_ms(p),
            (None, Some([lo, hi])) => format!("{lo}-{hi}"),
            _ => "-".into(),
        };
        let _ = writeln!(
            out,
            "{:<w$}{:<22}{:>12}{:>22}{:>12}{:>14}",
            r.run,
            format!("{} ({})", r.figure, r.unit),
            fmt_ms(r.model),
            band,
            seed,
            mark(r.published_in_band)
        );
    }
    out
}

/// How long each run lasted beside the seed's run: the model's script (counter
/// `workload_ms`), the whole run (the model idles after its script until it has as many
/// samples as the seed), and the seed's run as its sample count at the RTC rate. Empty when
/// the seed gives no sample counts.
pub fn render_run_lengths(runs: &[RunView]) -> String {
    let mut out = String::new();
    let w = label_width(runs.iter().map(|v| v.label));
    // The box's history before the run (`preload.reclaimed_before`), where there was one.
    let history = |v: &RunView| v.result.counters.get("history_ms").copied();
    let with_history = runs.iter().any(|v| history(v).is_some());
    let mut reclaims = Vec::new();
    for v in runs {
        let Some(samples) = v.published.samples else { continue };
        let hz: f64 = v
            .result
            .meta
            .settings
            .get("rtc_hz")
            .and_then(|h| h.parse().ok())
            .unwrap_or(0.0);
        if hz <= 0.0 {
            continue;
        }
        if out.is_empty() {
            let _ = writeln!(
                out,
                "\nRun length, model vs seed (s; the seed's: its sample count at the RTC rate)"
            );
            let _ = write!(out, "{:<w$}", "Kernel");
            if with_history {
                let _ = write!(out, "{:>12}", "history");
            }
            let _ = writeln!(out, "{:>12}{:>12}{:>12}", "script", "run", "seed run");
        }
        let script = v
            .result
            .counters
            .get("workload_ms")
            .map_or(String::from("unfinished"), |&t| format!("{:.0}", t as f64 / 1000.0));
        let _ = write!(out, "{:<w$}", v.label);
        if with_history {
            let h = history(v).map_or(String::from("-"), |ms| format!("{:.0}", ms as f64 / 1000.0));
            let _ = write!(out, "{h:>12}");
            if let Some(&n) = v.result.counters.get("history_reclaim_calls") {
                reclaims.push(n.to_string());
            }
        }
        let _ = writeln!(
            out,
            "{:>12}{:>12.0}{:>12.0}",
            script,
            v.result.meta.duration_ns as f64 / 1e9,
            samples / hz
        );
    }
    if !reclaims.is_empty() {
        let _ = writeln!(
            out,
            "history: the box filling its page cache before the run, not measured \
             (preload.reclaimed_before); its reclaim calls: {}",
            reclaims.join(" / ")
        );
    }
    out
}

/// A row's worst case: realfeel's or a POSIX timer's `max_latency`, or seed 001's
/// `max_write_latency`.
fn is_worst(r: &CompareRow) -> bool {
    r.figure == "max_latency" || r.figure == "max_write_latency" || r.figure == "max_request_latency"
}

/// The figures a sweep shows besides the worst case, where the runs have them: (figure,
/// what the table's heading calls it).
const SWEEP_EXTRAS: &[(&str, &str)] = &[
    ("avg_latency", "Average latency"),
    ("writes_over_100ms", "Writes over 100 ms"),
    ("write_throughput", "iozone write"),
    ("mix_throughput", "sysbench mix"),
    ("throughput_gain", "Write gain over the stock kernel"),
];

/// A sweep: each run's worst case (model) for every value of `key`, beside the seed's
/// figure, with its verdict where the seed published one; then, where the runs have them,
/// the other figures a seed's table shows ([`SWEEP_EXTRAS`]) the same way. `columns[i]`
/// holds the comparison rows of the runs with `values[i]`; the rows are the runs' (by label,
/// in run order).
pub fn render_sweep(title: &str, key: &str, values: &[&str], columns: &[Vec<CompareRow>]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{title}");
    let mut labels: Vec<&str> = Vec::new();
    for r in columns.iter().flatten() {
        if !labels.contains(&r.run.as_str()) {
            labels.push(&r.run);
        }
    }
    let sweep = Sweep {
        key,
        values,
        columns,
        labels: &labels,
    };
    sweep_table(&mut out, &sweep, "Worst case", &is_worst, true);
    for (figure, what) in SWEEP_EXTRAS {
        let has = |r: &CompareRow| r.figure == *figure;
        if columns.iter().flatten().any(has) {
            out.push('\n');
            sweep_table(&mut out, &sweep, what, &has, false);
        }
    }
    out
}

/// What every table of one sweep shares: the key, its values, each value's rows, the runs'
/// labels.
struct Sweep<'a> {
    key: &'a str,
    values: &'a [&'a str],
    columns: &'a [Vec<CompareRow>],
    labels: &'a [&'a str],
}

/// One table of a sweep: the figure `is_figure` picks, per run and value, beside the seed's,
/// each judged one with its verdict and a last row counting them per value; runs without
/// the figure left out unless `all_rows` (the worst case's: `-` where a run has none).
fn sweep_table(out: &mut String, sweep: &Sweep, what: &str, is_figure: &dyn Fn(&CompareRow) -> bool, all_rows: bool) {
    let Sweep {
        key,
        values,
        columns,
        labels,
    } = *sweep;
    let find = |rows: &'_ [CompareRow], label: &str| rows.iter().find(|r| r.run == label && is_figure(r)).cloned();
    let rows: Vec<&str> = labels
        .iter()
        .copied()
        .filter(|label| all_rows || columns.iter().any(|c| find(c, label).is_some()))
        .collect();
    // The figures judged (published, with a bar), as the first value's rows have them.
    let judged: Vec<CompareRow> = rows
        .iter()
        .filter_map(|label| columns.first().and_then(|c| find(c, label)))
        .filter(|r| r.inside.is_some())
        .collect();
    // The rows' own unit (seed 004's are us); a table is drawn only for a figure some row
    // has, but for the worst case's, which says ms when no run has one.
    let unit = columns
        .iter()
        .flatten()
        .find(|r| is_figure(r))
        .map_or("ms", |r| r.unit.as_str());
    let what = if unit.is_empty() || unit == "count" || unit == "ratio" {
        what.to_string()
    } else {
        format!("{what} ({unit})")
    };
    if judged.is_empty() {
        let _ = writeln!(out, "{what} by {key}; no published figures (a what-if)\n");
    } else {
        let _ = writeln!(
            out,
            "{what} by {key}; each published figure inside its bar or OUTSIDE (the bar: {})\n",
            crate::verdict::bars_text(&judged)
        );
    }
    let w = label_width(rows.iter().copied().chain(["inside the bar"]));
    let cw = crate::column_width(values.iter().map(|v| v.len() + 2), 17);
    let _ = write!(out, "{:<w$}{:>14}", "Run", "seed");
    for v in values {
        let _ = write!(out, "{v:>cw$}");
    }
    let _ = writeln!(out);
    let mut met = vec![0usize; values.len()];
    for label in rows {
        let first = columns.first().and_then(|c| find(c, label));
        let seed = match first.as_ref().map(|r| (r.published, r.published_range)) {
            Some((Some(p), _)) => fmt_figure(p, unit),
            Some((None, Some([lo, hi]))) => format!("{lo}-{hi}"),
            _ => "-".into(),
        };
        let _ = write!(out, "{label:<w$}{seed:>14}");
        for (i, col) in columns.iter().enumerate() {
            let cell = match find(col, label) {
                Some(r) => {
                    met[i] += usize::from(r.inside == Some(true));
                    match r.inside {
                        Some(_) => format!("{} {:<7}", fmt_figure(r.model, unit), mark(r.inside)),
                        None => format!("{}{:8}", fmt_figure(r.model, unit), ""),
                    }
                }
                None => format!("-{:8}", ""),
            };
            let _ = write!(out, "{cell:>cw$}");
        }
        let _ = writeln!(out);
    }
    if !judged.is_empty() {
        let _ = write!(out, "{:<w$}{:>14}", "inside the bar", "");
        for m in met {
            let _ = write!(out, "{:>cw$}", format!("{m} of {}{:8}", judged.len(), ""));
        }
        let _ = writeln!(out);
    }
}

/// Width of the label column: the longest label and two spaces, at least 8.
fn label_width<'a>(labels: impl Iterator<Item = &'a str>) -> usize {
    crate::column_width(labels.map(|l| l.len() + 2), 8)
}

/// A 0.1 ms listing (seed 000's low-latency histogram) beside the seed's.
pub fn render_listing(label: &str, r: &RunResult, published: &[[f64; 2]]) -> String {
    let mut out = String::new();
    let Some(s) = realfeel(r) else { return out };
    let _ = writeln!(out, "\n{label}: 0.1 ms listing (ms  seed  model)");
    // Only the 0.1 ms rows that hold something, however far apart: (seed, model) by row.
    let mut rows: BTreeMap<u64, (Option<f64>, u64)> = BTreeMap::new();
    for (b, n) in s.hist.bins(100_000) {
        rows.entry(b).or_default().1 = n;
    }
    for p in published {
        let seed = &mut rows.entry((p[0] * 10.0).round() as u64).or_default().0;
        seed.get_or_insert(p[1]);
    }
    for (b, (seed, model)) in rows {
        let _ = writeln!(
            out,
            "{:>5.1} {:>9} {:>9}",
            b as f64 / 10.0,
            seed.map_or(String::new(), |x| format!("{}", x as u64)),
            if model == 0 { String::new() } else { model.to_string() }
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A worst case of run `v` judged as seed 000's: a number within 1.5x, a bucket within 2x.
    fn row(model: f64, p: Option<f64>, r: Option<[f64; 2]>) -> CompareRow {
        let mut row = CompareRow {
            run: "v".into(),
            variant: "v".into(),
            stream: None,
            case: None,
            figure: "max_latency".into(),
            unit: "ms".into(),
            model,
            published: p,
            published_range: r,
            source: "s".into(),
            bar: Some(if r.is_some() {
                Bar::BucketWithin(2.0)
            } else {
                Bar::Within(1.5)
            }),
            inside: None,
            band: None,
            published_in_band: None,
        };
        row.judge();
        row
    }

    #[test]
    fn a_published_figure_is_in_the_band_between_p5_and_p95_a_bucket_when_they_overlap() {
        let band = |mut r: CompareRow, b: [f64; 3]| {
            r.set_band(Some(b));
            r.published_in_band
        };
        assert_eq!(row(88.5, Some(84.0), None).published_in_band, None);
        assert_eq!(band(row(88.5, Some(84.0), None), [60.0, 88.0, 130.0]), Some(true));
        assert_eq!(band(row(88.5, Some(36.0), None), [4.0, 6.5, 11.0]), Some(false));
        let bucket = |b| band(row(91.6, None, Some([128.0, 256.0])), b);
        assert_eq!(bucket([60.0, 90.0, 130.0]), Some(true));
        assert_eq!(bucket([60.0, 90.0, 127.0]), Some(false));
        assert_eq!(band(row(1.0, None, None), [0.5, 1.0, 2.0]), None);
    }

    #[test]
    fn run_lengths_beside_the_seeds() {
        let mut r = crate::testutil::realfeel_result(&[]);
        r.meta.duration_ns = 586_000_000_000;
        r.meta.settings.insert("rtc_hz".into(), "2048".into());
        r.counters.insert("workload_ms".into(), 340_400);
        let view = |samples| RunView {
            case: None,
            label: "Stock",
            result: &r,
            published: Published {
                samples,
                ..Default::default()
            },
        };
        let t = render_run_lengths(&[view(Some(1_200_861.0))]);
        let line = t.lines().find(|l| l.starts_with("Stock")).unwrap();
        assert_eq!(
            line.split_whitespace().collect::<Vec<_>>(),
            ["Stock", "340", "586", "586"]
        );
        assert!(!t.contains("history"), "{t}");
        assert_eq!(render_run_lengths(&[view(None)]), "");
        // A box with a history before the run: its length and reclaim calls.
        let mut h = r.clone();
        h.counters.insert("history_ms".into(), 37_000);
        h.counters.insert("history_reclaim_calls".into(), 1338);
        let t = render_run_lengths(&[RunView {
            result: &h,
            ..view(Some(1_200_861.0))
        }]);
        let line = t.lines().find(|l| l.starts_with("Stock")).unwrap();
        assert_eq!(
            line.split_whitespace().collect::<Vec<_>>(),
            ["Stock", "37", "340", "586", "586"]
        );
        assert!(t.contains("its reclaim calls: 1338"), "{t}");
    }

    #[test]
    fn a_label_beyond_a_format_width_prints_whole() {
        let r = crate::testutil::realfeel_result(&[500_000, 3_000_000]);
        let label = "L".repeat(70_000);
        let view = RunView {
            case: None,
            label: &label,
            result: &r,
            published: Published {
                max_ms: Some(2.0),
                samples: Some(2.0),
                ..Default::default()
            },
        };
        let views = [view];
        for t in [
            render_log_histogram("t", "s", &views),
            render_max_latency("t", "s", &views),
            render_comparison(&compare_rows(&views, "s")),
        ] {
            assert!(t.contains(&label), "{}", &t[..200.min(t.len())]);
        }
    }

    #[test]
    fn a_listing_prints_only_the_rows_that_hold_something_however_far_apart() {
        let r = crate::testutil::realfeel_result(&[50_000, 50_000, 3_600_000_000_000]);
        let t0 = std::time::Instant::now();
        let t = render_listing("LL", &r, &[[0.0, 7.0], [0.3, 1.0], [3_600_000.0, 2.0]]);
        assert!(t0.elapsed() < std::time::Duration::from_secs(1));
        let rows: Vec<Vec<&str>> = t.lines().skip(2).map(|l| l.split_whitespace().collect()).collect();
        // The hour-long sample lands where HDR's 3 digits put it, a little below the hour.
        assert_eq!(rows.len(), 4, "{t}");
        assert_eq!(rows[..2], [vec!["0.0", "7", "2"], vec!["0.3", "1"]], "{t}");
        assert_eq!(rows[2].len(), 2, "{t}");
        assert_eq!(rows[3], ["3600000.0", "2"], "{t}");
    }

    #[test]
    fn a_sweep_counts_only_the_rows_the_bar_can_judge() {
        let col = |a: CompareRow, b: CompareRow| {
            vec![CompareRow { run: "A".into(), ..a }, CompareRow { run: "B".into(), ..b }]
        };
        // One published row (inside the bar), one what-if row: 1 of 1, not 1 of 2.
        let t = render_sweep(
            "t",
            "seed",
            &["1"],
            &[col(row(84.0, Some(84.0), None), row(1.0, None, None))],
        );
        let last = t.lines().find(|l| l.starts_with("inside the bar")).unwrap();
        assert_eq!(
            last.split_whitespace().collect::<Vec<_>>(),
            ["inside", "the", "bar", "1", "of", "1"],
            "{t}"
        );
        assert!(t.contains("(the bar: max_latency within 1.5x)"), "{t}");
        let line = |l: &str| t.lines().find(|x| x.starts_with(l)).unwrap().to_string();
        assert!(line("A ").ends_with("84.0 inside "), "{t}");
        assert!(!line("B ").contains("inside") && !line("B ").contains("OUTSIDE"), "{t}");
        // Nothing published: no bar row, and the header says so.
        let t = render_sweep(
            "t",
            "hogs",
            &["1", "10"],
            &vec![col(row(1.0, None, None), row(2.0, None, None)); 2],
        );
        assert!(
            !t.contains("inside the bar") && t.contains("no published figures"),
            "{t}"
        );
    }

    #[test]
    fn a_sweep_shows_seed_001s_counts_rates_and_gains_by_their_own_rows() {
        let fig = |run: &str, figure: &str, unit: &str, model: f64, p: Option<f64>| CompareRow {
            run: run.into(),
            variant: "2.6.17".into(),
            case: Some("50%".into()),
            figure: figure.into(),
            unit: unit.into(),
            ..row(model, p, None)
        };
        let col = vec![
            fig("iozone", "max_write_latency", "ms", 268.0, Some(400.0)),
            fig("iozone", "writes_over_100ms", "count", 0.0, Some(0.0)),
            fig("iozone", "write_throughput", "MB/s", 234.4, None),
            fig("sysbench", "max_request_latency", "ms", 0.03, None),
            fig("sysbench", "mix_throughput", "MB/s", 6.8, None),
        ];
        let t = render_sweep("t", "machine.cpus", &["2"], &[col]);
        let table = |head: &str| {
            t.split("\n\n")
                .skip_while(|p| !p.starts_with(head))
                .nth(1)
                .unwrap_or("")
                .to_string()
        };
        // A count is whole, and 0 where the seed has 0 is inside the bar.
        assert!(
            table("Writes over 100 ms").contains("iozone") && table("Writes over 100 ms").contains(" 0 inside"),
            "{t}"
        );
        // Each rate in its own table, on its own run's row only.
        let iozone = table("iozone write (MB/s)");
        assert!(iozone.contains("234.4") && !iozone.contains("sysbench"), "{t}");
        let mix = table("sysbench mix (MB/s)");
        assert!(mix.contains("6.80") && !mix.contains("iozone"), "{t}");
    }

    #[test]
    fn a_sweep_keeps_apart_the_runs_of_one_kernel_in_their_unit() {
        let posix = |run: &str, model: f64, p: f64| CompareRow {
            run: run.into(),
            variant: "2.6.35".into(),
            unit: "us".into(),
            ..row(model, Some(p), None)
        };
        let col = vec![posix("THREAD", 46001.3, 50107.8), posix("SIGNAL", 4000.4, 8608.3)];
        let t = render_sweep("t", "hz", &["250"], &[col]);
        assert!(t.contains("Worst case (us) by hz"), "{t}");
        let line = |l: &str| t.lines().find(|x| x.starts_with(l)).unwrap().to_string();
        assert!(
            line("THREAD").contains("50107.8") && line("THREAD").contains("46001.3 inside"),
            "{t}"
        );
        assert!(
            line("SIGNAL").contains("8608.3") && line("SIGNAL").contains("4000.4 OUTSIDE"),
            "{t}"
        );
    }

    /// Two runs of one kernel and case (a file's 1-CPU rows beside the 2-CPU ones): each row
    /// of the table and of the JSON is its own run's.
    #[test]
    fn runs_sharing_a_kernel_and_a_case_each_show_their_own_figures() {
        let write = |worst_ns: u64, over: u64, mbps: f64| {
            let mut r = crate::testutil::realfeel_result(&[1_000_000, worst_ns]);
            r.streams[0].name = "write".into();
            r.counters.insert("writes_over_100ms".into(), over);
            r.throughput.insert("write_MBps".into(), mbps);
            r
        };
        let (two, one) = (write(505_100_000, 25, 85.0), write(558_700_000, 22, 84.9));
        let view = |label, result| RunView {
            label,
            case: Some("120%"),
            result,
            published: Published::default(),
        };
        let views = [view("2.6.17, 120%", &two), view("2.6.17, 120%, 1 CPU", &one)];
        let rows = compare_rows(&views, "s");
        let worst: Vec<(&str, f64)> = rows
            .iter()
            .filter(|r| r.figure == "max_write_latency")
            .map(|r| (r.run.as_str(), r.model))
            .collect();
        assert_eq!(worst, [("2.6.17, 120%", 505.1), ("2.6.17, 120%, 1 CPU", 558.7)]);
        let t = render_write_latency("t", "s", &views, &rows);
        let line = |l: &str| {
            t.lines()
                .find(|x| x.starts_with(&format!("{l}  ")))
                .unwrap()
                .split_whitespace()
                .map(str::to_string)
                .collect::<Vec<_>>()
        };
        // Label, file, then the seed's and the model's worst write and writes over 100 ms.
        assert_eq!(line("2.6.17, 120%, 1 CPU")[5..9], ["-", "558.7", "-", "22"], "{t}");
        assert_eq!(line("2.6.17, 120%")[3..7], ["-", "505.1", "-", "25"], "{t}");
    }

    #[test]
    fn a_row_carries_its_verdict() {
        assert_eq!(row(84.0, Some(84.0), None).inside, Some(true));
        assert_eq!(row(126.0, Some(84.0), None).inside, Some(true));
        assert_eq!(row(127.0, Some(84.0), None).inside, Some(false));
        assert_eq!(row(55.0, Some(84.0), None).inside, Some(false));
        assert_eq!(row(64.0, None, Some([128.0, 256.0])).inside, Some(true));
        assert_eq!(row(63.0, None, Some([128.0, 256.0])).inside, Some(false));
        assert_eq!(row(1.0, None, None).inside, None);
    }
}
