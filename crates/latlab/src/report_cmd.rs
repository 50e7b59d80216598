//! `latlab report`: reports from saved results, never running anything. Reads RunResult
//! JSON files (either engine's: `run`/`reproduce --out`, `probe --json`) and hands them to
//! `latlab_report`'s `compare`, `plot`, `csv`, the trace exporters and `html`; output goes to stdout
//! or to `--out FILE`. See docs/reports.md.

use anyhow::{bail, Context};
use latlab_core::{Engine, RunResult};
use latlab_report::{chrome_trace, compare, csv, ftrace, html, input, plot, recorded, timeline};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct ReportArgs {
    #[command(subcommand)]
    verb: Verb,
}

#[derive(clap::Subcommand, Debug)]
enum Verb {
    /// Results side by side per stream: count, min, percentiles, max, missed, the ratio of
    /// each later run to the first, then the log-bucket histograms.
    Compare {
        /// Two or more RunResult JSON files; ratios are to the first.
        #[arg(required = true, num_args = 2.., value_name = "FILE")]
        files: Vec<PathBuf>,
    },
    /// An SVG plot of one or more results, one series per stream: the latency distribution
    /// (log-log), or with --percentiles latency by percentile.
    Plot {
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
        /// Plot latency by percentile (p50 ... max) instead of the distribution.
        #[arg(long)]
        percentiles: bool,
        /// Only this stream of each result.
        #[arg(long, value_name = "NAME")]
        stream: Option<String>,
        /// Write the SVG here instead of to stdout.
        #[arg(long, short, value_name = "FILE")]
        out: Option<PathBuf>,
    },
    /// A result's streams as CSV: log-bucket rows (stream,lo_ns,hi_ns,count), or with
    /// --percentiles one row of percentiles per stream.
    Csv {
        #[arg(value_name = "FILE")]
        file: PathBuf,
        /// Print the percentiles CSV instead of the buckets.
        #[arg(long)]
        percentiles: bool,
        /// Buckets per doubling of latency (1 = 0-1, 1-2, 2-4 ... us and ms).
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=16))]
        per_octave: u32,
        #[arg(long, short, value_name = "FILE")]
        out: Option<PathBuf>,
    },
    /// The worst samples as a trace: a probe result's recorded kernel events as they were
    /// recorded, a model result's timeline; ftrace text, or with --format chrome trace-event
    /// JSON (both written for Perfetto's importers).
    Trace {
        #[arg(value_name = "FILE")]
        file: PathBuf,
        #[arg(long, value_enum, default_value_t = TraceFormat::Ftrace)]
        format: TraceFormat,
        /// Only this stream (default: every stream, each on its CPU).
        #[arg(long, value_name = "NAME")]
        stream: Option<String>,
        /// Worst samples per stream to export (those whose window overlaps a worse one's
        /// are left out).
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=1000))]
        samples: u64,
        #[arg(long, short, value_name = "FILE")]
        out: Option<PathBuf>,
    },
    /// One self-contained HTML page (inline CSS and SVG, nothing fetched): each run's
    /// header, the compare tables, both plots, the worst samples with their attribution and
    /// the model's /proc/latency_trace.
    Html {
        /// One or more RunResult JSON files; ratios are to the first.
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
        /// Worst samples to show per run (over all its streams).
        #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..=1000))]
        samples: u64,
        /// Write the page here instead of to stdout.
        #[arg(long, short, value_name = "FILE")]
        out: Option<PathBuf>,
    },
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum TraceFormat {
    /// ftrace text (`# tracer: nop`, sched_switch/sched_waking/sched_wakeup/irq lines).
    Ftrace,
    /// Chrome trace-event JSON (`{"traceEvents": [...]}`).
    Chrome,
}

/// Longest result file the reports read: 256 MiB (a probe's with `--explain` is a few hundred
/// KiB).
const MAX_RESULT_BYTES: u64 = 256 << 20;

/// Read and parse one result; errors name the file. A result whose load died says so on
/// stderr, whatever the report (a CSV has no place for it).
fn load(path: &Path) -> anyhow::Result<RunResult> {
    let text =
        crate::read::bounded(path, MAX_RESULT_BYTES).with_context(|| format!("cannot read {}", path.display()))?;
    let r = input::parse_result(&text, &path.display().to_string()).with_context(|| path.display().to_string())?;
    for (name, d) in r.dead_loads() {
        errln!(
            "latlab report: warning: {}: load {name} died {:.1} s after it started ({}); the figures \
             were not all taken under it",
            path.display(),
            d.after_ns as f64 / 1e9,
            d.how
        );
    }
    Ok(r)
}

fn load_all(paths: &[PathBuf]) -> anyhow::Result<Vec<RunResult>> {
    paths.iter().map(|p| load(p)).collect()
}

/// Check that `name`, when given, is a stream of every result.
fn check_stream(name: Option<&str>, runs: &[RunResult], paths: &[PathBuf]) -> anyhow::Result<()> {
    let Some(n) = name else { return Ok(()) };
    for (r, p) in runs.iter().zip(paths) {
        if r.stream(n).is_none() {
            let names: Vec<&str> = r.streams.iter().map(|s| s.name.as_str()).collect();
            bail!("{}: no stream `{n}` (streams: {})", p.display(), names.join(", "));
        }
    }
    Ok(())
}

fn emit(text: &str, out: Option<&Path>) -> anyhow::Result<ExitCode> {
    match out {
        Some(p) => std::fs::write(p, text).with_context(|| format!("cannot write {}", p.display()))?,
        None => out!("{text}")?,
    }
    Ok(ExitCode::SUCCESS)
}

pub fn run(a: ReportArgs) -> anyhow::Result<ExitCode> {
    match a.verb {
        Verb::Compare { files } => {
            let runs = load_all(&files)?;
            let labels = input::labels(&runs);
            let l: Vec<&str> = labels.iter().map(String::as_str).collect();
            let r: Vec<&RunResult> = runs.iter().collect();
            emit(&compare::render(&l, &r), None)
        }
        Verb::Plot {
            files,
            percentiles,
            stream,
            out,
        } => {
            let runs = load_all(&files)?;
            check_stream(stream.as_deref(), &runs, &files)?;
            let labels = input::labels(&runs);
            let series = plot::series(&runs, &labels, stream.as_deref());
            let svg = if percentiles {
                plot::percentiles_svg("Latency by percentile", &series)
            } else {
                plot::distribution_svg("Latency distribution", &series)
            };
            let svg = svg.map_err(|e| anyhow::anyhow!("{e} in {}", names(&files)))?;
            emit(&svg, out.as_deref())
        }
        Verb::Csv {
            file,
            percentiles,
            per_octave,
            out,
        } => {
            let r = load(&file)?;
            let text = if percentiles {
                csv::percentiles(&r)
            } else {
                csv::buckets(&r, per_octave)
            };
            emit(&text, out.as_deref())
        }
        Verb::Trace {
            file,
            format,
            stream,
            samples,
            out,
        } => {
            let r = load(&file)?;
            check_stream(stream.as_deref(), std::slice::from_ref(&r), std::slice::from_ref(&file))?;
            let none = || {
                anyhow::anyhow!(
                    "{}: the result keeps no worst samples (Stream.worst is empty): nothing to export",
                    file.display()
                )
            };
            let title = input::label(&r);
            // A model run that recorded its trace events exports them as the probe's are.
            let recorded = r.streams.iter().any(|s| !s.recorded.is_empty());
            let text = match r.meta.engine {
                Engine::Sim if !recorded => {
                    let w = timeline::windows(&r, stream.as_deref(), samples as usize);
                    if w.is_empty() {
                        return Err(none());
                    }
                    match format {
                        TraceFormat::Ftrace => ftrace::render(&title, &w),
                        TraceFormat::Chrome => chrome_trace::render(&title, &w).to_string() + "\n",
                    }
                }
                Engine::Probe | Engine::Sim => {
                    let picked = recorded::pick(&r, stream.as_deref(), samples as usize);
                    if picked.is_empty() {
                        return Err(none());
                    }
                    if picked.iter().all(|p| p.recorded.is_none()) {
                        errln!(
                            "latlab report trace: {}: no kernel events were recorded around these samples \
                             (record them with {}); the trace says so and draws nothing",
                            file.display(),
                            match r.meta.engine {
                                Engine::Sim => "`latlab run|reproduce ... --out DIR --record-events`",
                                _ => "`latlab probe ... --explain` as root",
                            }
                        );
                    }
                    match format {
                        TraceFormat::Ftrace => recorded::ftrace(&title, &r.meta.system(), &picked),
                        TraceFormat::Chrome => recorded::chrome(&title, &r.meta.system(), &picked).to_string() + "\n",
                    }
                }
                Engine::Cyclictest => bail!(
                    "{}: a cyclictest result records no kernel events and no samples: nothing to export",
                    file.display()
                ),
            };
            emit(&text, out.as_deref())
        }
        Verb::Html { files, samples, out } => {
            let runs = load_all(&files)?;
            emit(&html::render(&runs, samples as usize), out.as_deref())
        }
    }
}

fn names(files: &[PathBuf]) -> String {
    files
        .iter()
        .map(|f| f.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}
