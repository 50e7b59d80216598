//! `latlab run` and `latlab reproduce`: the kernel model's commands. Reads experiment files,
//! runs their variants in parallel, prints the seed's table with the model beside it.

use anyhow::Context;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use latlab_core::RunResult;
use latlab_exp::{Experiment, TableKind};
use latlab_report::seed_table::{self, CompareRow, Published, RunView};
use latlab_report::{latency_trace, preempt_off, summary};
use rayon::prelude::*;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// Experiment file (format: docs/experiments.md).
    pub file: PathBuf,
    #[command(flatten)]
    pub opts: Opts,
}

#[derive(clap::Args, Debug)]
pub struct ReproduceArgs {
    /// Experiments to reproduce (default: every built-in one).
    pub names: Vec<String>,
    #[command(flatten)]
    pub opts: Opts,
}

#[derive(clap::Args, Debug)]
pub struct Opts {
    /// Print the comparison as JSON: {"experiment": NAME, "rows": [...]}.
    #[arg(long)]
    pub json: bool,
    /// Override the experiment's PRNG seed.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Print the worst sample of every run as a /proc/latency_trace-style trace.
    #[arg(long)]
    pub trace: bool,
    /// Write each run's full result (RunResult JSON) into this directory.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Run the experiment once per value of a setting, the same for every kernel, and print
    /// each kernel's worst case per value: `seed`, `rtc_hz`, `hz`, `timer_period_us`, a
    /// workload size (`hogs`, `video.fps`, `video.decode_us`, `video.x_us`, `make.jobs`,
    /// `make.cc_ms_min`, `make.cc_ms_max`), a preload field (`preload.unused_dentries=50000,100000`), a
    /// machine profile field (`machine.cpu_mhz=500,1000`, `machine.disk.seq_mb_s=20,40`) or a
    /// code-path catalog cost (`catalog.unfile.misses=3,6,9`, `catalog.sync_one.instr=...`).
    #[arg(long, value_name = "KEY=V1,V2,...")]
    pub vary: Option<String>,
}

/// Longest experiment, machine or variant file `latlab run` reads: 1 MiB (the built-ins are a
/// few KiB). A longer one, or an endless one (`/dev/zero`), is refused.
const MAX_FILE_BYTES: u64 = 1 << 20;

fn read_bounded(path: &Path) -> std::io::Result<String> {
    crate::read::bounded(path, MAX_FILE_BYTES)
}

pub fn run(a: RunArgs) -> anyhow::Result<ExitCode> {
    let origin = a.file.display().to_string();
    let text = read_bounded(&a.file).with_context(|| format!("cannot read experiment file {origin}"))?;
    // Machine and variant files the experiment names by path are read relative to it.
    let dir = a.file.parent().unwrap_or(Path::new(""));
    let files = |p: &str| {
        let path = dir.join(p);
        let name = path.display().to_string();
        read_bounded(&path)
            .map(|text| (name.clone(), text))
            .map_err(|e| std::io::Error::new(e.kind(), format!("{name}: {e}")))
    };
    let exp = latlab_exp::load_with(&origin, &text, &files)?;
    execute(&exp, &a.opts)?;
    Ok(ExitCode::SUCCESS)
}

pub fn reproduce(a: ReproduceArgs) -> anyhow::Result<ExitCode> {
    let names: Vec<String> = if a.names.is_empty() {
        latlab_exp::builtin::EXPERIMENTS
            .iter()
            .map(|(n, _)| n.to_string())
            .collect()
    } else {
        a.names.clone()
    };
    // Resolve every name before running anything.
    let exps = names
        .iter()
        .map(|n| latlab_exp::builtin_experiment(n))
        .collect::<Result<Vec<_>, _>>()?;
    for e in &exps {
        execute(e, &a.opts)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Run `exp` as `o` asks: once, or once per value of `--vary`.
fn execute(exp: &Experiment, o: &Opts) -> anyhow::Result<()> {
    let Some(spec) = &o.vary else {
        return execute_one(exp, o);
    };
    let origin = "command line (--vary)";
    let (key, values) = spec
        .split_once('=')
        .with_context(|| format!("{origin}: expected KEY=V1,V2,..., got `{spec}`"))?;
    let values: Vec<&str> = values.split(',').map(str::trim).filter(|v| !v.is_empty()).collect();
    if values.is_empty() {
        anyhow::bail!("{origin}: `{key}` needs at least one value");
    }
    if o.seed.is_some() && key == "seed" {
        anyhow::bail!("{origin}: --seed and --vary seed=... both set the seed; give one");
    }
    if o.trace {
        anyhow::bail!("{origin}: --trace prints one run's worst sample; run without --vary for it");
    }
    // Check every value before running anything.
    let exps = values
        .iter()
        .map(|v| latlab_exp::vary(exp, origin, key, v))
        .collect::<Result<Vec<_>, _>>()?;
    let started = Instant::now();
    // Every (value, kernel) run in one parallel pool, so a long run of one value overlaps
    // the others'.
    let tagged: Vec<String> = values.iter().map(|v| format!("{key}={v}")).collect();
    let jobs: Vec<(&Experiment, &str)> = exps.iter().zip(&tagged).map(|(e, t)| (e, t.as_str())).collect();
    let mut all = run_pool(&jobs, o)?.into_iter();
    let mut columns = Vec::new();
    for (e, t) in &jobs {
        let results: Vec<RunResult> = all.by_ref().take(e.runs.len()).collect();
        if let Some(dir) = &o.out {
            write_out(e, &results, dir, &format!("-{t}"))?;
        }
        columns.push(compare(e, &results).0);
    }
    if o.json {
        let doc = serde_json::json!({
            "experiment": exp.name,
            "vary": key,
            "runs": values.iter().zip(&columns).map(|(v, rows)| serde_json::json!({"value": v, "rows": rows})).collect::<Vec<_>>(),
        });
        outln!("{}", serde_json::to_string(&doc)?)?;
        return Ok(());
    }
    let labels: Vec<seed_table::SweepRow> = exp
        .runs
        .iter()
        .map(|r| seed_table::SweepRow {
            variant: r.config.variant.name.clone(),
            // The row's stream as compare_rows names it: the POSIX timer's, or the tracer's
            // window of swap fill.
            stream: r
                .config
                .posix_timer
                .as_ref()
                .map(|p| p.notify.stream().to_string())
                .or(r.config.preempt_off.map(|[lo, hi]| format!("swap {lo}-{hi}%"))),
            label: r.label.clone(),
        })
        .collect();
    out!(
        "{}",
        seed_table::render_sweep(&heading(exp), key, &values, &columns, &labels)
    )?;
    outln!(
        "\n{} runs in {:.1} s",
        exps.iter().map(|e| e.runs.len()).sum::<usize>(),
        started.elapsed().as_secs_f64()
    )?;
    Ok(())
}

/// Run every variant of `exp` in parallel, with a progress bar on runs longer than a second.
fn run_all(exp: &Experiment, o: &Opts) -> anyhow::Result<Vec<RunResult>> {
    run_pool(&[(exp, "")], o)
}

/// Run every run of every experiment in `jobs` in one parallel pool; results in order, run by
/// run. The tag (a sweep's `key=value`) labels progress bars and errors.
fn run_pool(jobs: &[(&Experiment, &str)], o: &Opts) -> anyhow::Result<Vec<RunResult>> {
    let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
    let style = ProgressStyle::with_template("{prefix:>36} [{bar:30}] {msg}")
        .expect("static template")
        .progress_chars("=> ");
    let runs: Vec<(&Experiment, &str, &latlab_exp::Run)> = jobs
        .iter()
        .flat_map(|&(e, tag)| e.runs.iter().map(move |r| (e, tag, r)))
        .collect();
    let results: Vec<anyhow::Result<RunResult>> = runs
        .par_iter()
        .map(|&(exp, tag, run)| {
            let label = if tag.is_empty() {
                run.label.clone()
            } else {
                format!("{} {tag}", run.label)
            };
            let mut cfg = run.config.clone();
            if let Some(s) = o.seed {
                cfg.seed = s;
            }
            let mut bar: Option<ProgressBar> = None;
            let t0 = Instant::now();
            let progress = &mut |now: u64, goal: u64| {
                // A bar only for runs that take more than a second.
                if bar.is_none() && t0.elapsed() > Duration::from_secs(1) {
                    let b = multi.add(ProgressBar::new(goal.max(1) / 1_000_000_000));
                    b.set_style(style.clone());
                    b.set_prefix(label.clone());
                    bar = Some(b);
                }
                if let Some(b) = &bar {
                    b.set_length((goal / 1_000_000_000).max(now / 1_000_000_000));
                    b.set_position(now / 1_000_000_000);
                    b.set_message(format!("{} s simulated", now / 1_000_000_000));
                }
            };
            // A panic inside the model is one of its invariants broken (a count below zero
            // stops release builds too): a bug in latlab, reported as such, not a crash.
            let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| latlab_sim::simulate(&cfg, progress)))
                .map_err(|p| broken_invariant(p.as_ref(), cfg.seed));
            let (r, _) = ran
                .and_then(|r| Ok(r?))
                .with_context(|| format!("experiment {}: run `{label}`", exp.name))?;
            if let Some(b) = bar {
                b.finish_and_clear();
            }
            Ok(r)
        })
        .collect();
    results.into_iter().collect()
}

/// The error for a run the model stopped with a panic: one of its invariants broke (a count
/// below zero stops release builds too), a bug in latlab rather than in the experiment.
fn broken_invariant(payload: &(dyn std::any::Any + Send), seed: u64) -> anyhow::Error {
    let why = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".into());
    anyhow::anyhow!(
        "the model broke one of its own invariants ({why}) with seed {seed}: a bug in latlab, not in the experiment; please report it with the experiment file"
    )
}

/// Each run's full result as `DIR/EXPERIMENT-LABEL[SUFFIX].json`.
fn write_out(exp: &Experiment, results: &[RunResult], dir: &Path, suffix: &str) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    for (run, r) in exp.runs.iter().zip(results) {
        let name = format!("{}-{}{suffix}.json", exp.name, run.label).replace(['/', ' '], "_");
        let p = dir.join(name);
        std::fs::write(&p, serde_json::to_vec_pretty(r)?).with_context(|| format!("cannot write {}", p.display()))?;
    }
    Ok(())
}

/// The views `seed_table` renders, and the comparison rows.
fn compare<'a>(exp: &'a Experiment, results: &'a [RunResult]) -> (Vec<CompareRow>, Vec<RunView<'a>>) {
    let views: Vec<RunView> = exp
        .runs
        .iter()
        .zip(results)
        .map(|(run, r)| RunView {
            label: &run.label,
            result: r,
            published: Published {
                samples: run.published.samples,
                max_ms: run.published.max_ms,
                max_range_ms: run.published.max_range_ms,
                buckets: &run.published.buckets,
                listing: &run.published.listing,
                avg_ms: run.published.avg_ms,
                missed: run.published.missed,
                swap_max_ms: run.published.swap_max_ms,
                task: run.published.task.as_deref(),
                function: run.published.function.as_deref(),
            },
        })
        .collect();
    (seed_table::compare_rows(&views, &exp.seed_file), views)
}

/// The report's first lines: `== NAME (SEED FILE) ==` and the experiment's title.
fn heading(exp: &Experiment) -> String {
    format!("== {} ({}) ==\n{}", exp.name, exp.seed_file, exp.title)
}

/// Run every variant of `exp` (in parallel) and print its report.
fn execute_one(exp: &Experiment, o: &Opts) -> anyhow::Result<()> {
    let started = Instant::now();
    let results = run_all(exp, o)?;
    if let Some(dir) = &o.out {
        write_out(exp, &results, dir, "")?;
    }
    let (rows, views) = compare(exp, &results);
    if o.json {
        let doc = serde_json::json!({ "experiment": exp.name, "rows": rows });
        outln!("{}", serde_json::to_string(&doc)?)?;
        return Ok(());
    }
    let title = heading(exp);
    out!(
        "{}",
        match exp.table {
            TableKind::LogHistogram => seed_table::render_log_histogram(&title, &exp.seed_file, &views),
            TableKind::MaxLatency => seed_table::render_max_latency(&title, &exp.seed_file, &views),
            TableKind::PosixTimer => seed_table::render_posix_timer(&title, &exp.seed_file, &views, &rows),
            TableKind::PreemptOff => preempt_off::render(&title, &exp.seed_file, &views),
        }
    )?;
    let posix = exp.table == TableKind::PosixTimer;
    if exp.table == TableKind::PreemptOff {
        out!("{}", preempt_off::render_growth(&views))?;
    } else if !posix {
        let labels: Vec<(&str, &str)> = views.iter().map(|v| (v.result.meta.kernel.as_str(), v.label)).collect();
        out!("{}", seed_table::render_comparison(&rows, &labels))?;
        out!("{}", seed_table::render_run_lengths(&views))?;
    }
    for v in &views {
        if !v.published.listing.is_empty() {
            out!("{}", seed_table::render_listing(v.label, v.result, v.published.listing))?;
        }
    }
    let measured = if posix {
        "POSIX-timer wakeup latency"
    } else {
        "realfeel wakeup latency"
    };
    outln!("\nPercentiles ({measured})")?;
    for v in &views {
        out!("{}", summary::percentiles(v.label, v.result))?;
    }
    if !posix {
        outln!("\nSamples of 1 ms or more, by the code path that held the CPU longest while realfeel waited")?;
        for v in &views {
            out!("{}", summary::causes(v.label, v.result))?;
        }
    }
    for v in &views {
        if let Some(s) = v.result.stream("write") {
            outln!(
                "\n{}: slowest records (offset_KB latency_us record_bytes, as `iozone -Q` sorted by column 2)",
                v.label
            )?;
            out!("{}", summary::slowest_records(s))?;
        }
    }
    outln!("\nWhy the worst sample of each run took so long")?;
    for v in &views {
        if let Some(w) = v.result.streams.first().and_then(|s| s.worst.first()) {
            outln!("{}:", v.label)?;
            out!("{}", summary::explain(w))?;
        }
    }
    if o.trace {
        for v in &views {
            if let Some(p) = &v.result.preempt_off {
                // The tracer's own view: the longest preemption-off stretch of the run's
                // window, and its longest get_swap_page stretch when that is another.
                for t in p
                    .worst
                    .iter()
                    .chain(p.worst_swap.iter().filter(|s| Some(*s) != p.worst.as_ref()))
                {
                    outln!("\n{} — longest preemption-off stretch as /proc/latency_trace:", v.label)?;
                    out!("{}", latency_trace::render(t))?;
                }
            }
            if let Some(t) = &v.result.trace {
                outln!("\n{} — worst latency as /proc/latency_trace:", v.label)?;
                out!("{}", latency_trace::render(t))?;
            }
        }
    }
    for n in &exp.notes {
        outln!("\nnote: {n}")?;
    }
    let sim: f64 = results.iter().map(|r| r.meta.duration_ns as f64 / 1e9).sum();
    outln!(
        "\n{} runs, {:.0} s simulated in {:.1} s",
        results.len(),
        sim,
        started.elapsed().as_secs_f64()
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_in_the_model_becomes_an_error_naming_the_bug_and_the_seed() {
        let hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        let p = std::panic::catch_unwind(|| {
            let v: Vec<u64> = Vec::new();
            v.iter().sum::<u64>() - 1
        })
        .unwrap_err();
        let q = std::panic::catch_unwind(|| panic!("count {} below zero", 3)).unwrap_err();
        std::panic::set_hook(hook);
        let e = broken_invariant(p.as_ref(), 7).to_string();
        assert!(
            e.contains("attempt to subtract with overflow") && e.contains("seed 7"),
            "{e}"
        );
        assert!(e.contains("a bug in latlab"), "{e}");
        assert!(broken_invariant(q.as_ref(), 1)
            .to_string()
            .contains("count 3 below zero"));
    }
}
