//! `latlab run` and `latlab reproduce`: the kernel model's commands. Reads experiment files,
//! runs their variants in parallel, prints the seed's table with the model beside it.

use anyhow::Context;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use latlab_core::RunResult;
use latlab_exp::Experiment;
use latlab_report::{seed_table, verdict};
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
    /// Write every timed write(2) of each run into this directory as iozone -Q's per-record
    /// files (`EXPERIMENT-LABEL-wol.dat`, `-rwol.dat`: offset KB, latency us, bytes; `sort
    /// -nk2 FILE | tail` gives seed 001's listing).
    #[arg(long, value_name = "DIR")]
    pub records: Option<PathBuf>,
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
    let mut summaries = Vec::new();
    for e in &exps {
        summaries.extend(execute(e, &a.opts)?);
    }
    // Several experiments' tables: their verdicts side by side at the end.
    if !a.opts.json && summaries.len() > 1 {
        out!("{}", verdict::render_summary(&summaries))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Run `exp` as `o` asks: once (its verdicts returned for `reproduce`'s summary), or once
/// per value of `--vary`.
fn execute(exp: &Experiment, o: &Opts) -> anyhow::Result<Option<verdict::SummaryRow>> {
    let Some(spec) = &o.vary else {
        return execute_one(exp, o);
    };
    let origin = latlab_batch::sweep::ORIGIN;
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
        let mut results: Vec<RunResult> = all.by_ref().take(e.runs.len()).collect();
        if let Some(dir) = &o.records {
            write_records(e, &mut results, dir, &format!("-{t}"))?;
        }
        if let Some(dir) = &o.out {
            write_out(e, &results, dir, &format!("-{t}"))?;
        }
        columns.push(latlab_batch::rows(e, &results));
    }
    if o.json {
        let doc = latlab_batch::sweep::doc(&exp.name, key, &values, &columns);
        outln!("{}", serde_json::to_string(&doc)?)?;
        return Ok(None);
    }
    out!(
        "{}",
        seed_table::render_sweep(&latlab_batch::text::heading(exp), key, &values, &columns)
    )?;
    outln!(
        "\n{} runs in {:.1} s",
        exps.iter().map(|e| e.runs.len()).sum::<usize>(),
        started.elapsed().as_secs_f64()
    )?;
    Ok(None)
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
            cfg.keep_records = o.records.is_some();
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
            let r = latlab_batch::simulate(&cfg, progress)
                .with_context(|| format!("experiment {}: run `{label}`", exp.name))?;
            if let Some(b) = bar {
                b.finish_and_clear();
            }
            Ok(r)
        })
        .collect();
    results.into_iter().collect()
}

/// A run's file in `dir`: `EXPERIMENT-LABEL[SUFFIX]TAIL`, with `/` and spaces as `_`.
fn run_file(dir: &Path, exp: &Experiment, run: &latlab_exp::Run, suffix: &str, tail: &str) -> PathBuf {
    dir.join(format!("{}-{}{suffix}{tail}", exp.name, run.label).replace(['/', ' '], "_"))
}

/// Each run's full result as `DIR/EXPERIMENT-LABEL[SUFFIX].json`.
fn write_out(exp: &Experiment, results: &[RunResult], dir: &Path, suffix: &str) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("--out: cannot create {}", dir.display()))?;
    for (run, r) in exp.runs.iter().zip(results) {
        let p = run_file(dir, exp, run, suffix, ".json");
        std::fs::write(&p, serde_json::to_vec_pretty(r)?)
            .with_context(|| format!("--out: cannot write {}", p.display()))?;
    }
    Ok(())
}

/// Each run's kept write(2) records as iozone -Q's per-record files,
/// `DIR/EXPERIMENT-LABEL[SUFFIX]-wol.dat` (and `-rwol.dat`, ...); the records leave the
/// results (they are not written into `--out`'s JSON).
fn write_records(exp: &Experiment, results: &mut [RunResult], dir: &Path, suffix: &str) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("--records: cannot create {}", dir.display()))?;
    let mut written = 0;
    for (run, r) in exp.runs.iter().zip(results) {
        for s in r.streams.iter_mut().filter(|s| !s.records.is_empty()) {
            let records = std::mem::take(&mut s.records);
            let tail = format!("-{}", latlab_report::iozone_q::file_name(&s.name));
            let p = run_file(dir, exp, run, suffix, &tail);
            std::fs::write(&p, latlab_report::iozone_q::records_file(&records))
                .with_context(|| format!("--records: cannot write {}", p.display()))?;
            written += 1;
        }
    }
    if written == 0 {
        errln!(
            "latlab: warning: --records: no run of {} times write(2) calls (only iozone and sysbench runs do); nothing written",
            exp.name
        );
    }
    Ok(())
}

/// Run every variant of `exp` (in parallel) and print its report; its verdicts for
/// `reproduce`'s closing summary.
fn execute_one(exp: &Experiment, o: &Opts) -> anyhow::Result<Option<verdict::SummaryRow>> {
    let started = Instant::now();
    let mut results = run_all(exp, o)?;
    if let Some(dir) = &o.records {
        write_records(exp, &mut results, dir, "")?;
    }
    if let Some(dir) = &o.out {
        write_out(exp, &results, dir, "")?;
    }
    // The stored bands, where this run's seed and figures are the ones they were made with.
    let (rows, attached) = if o.seed.is_none() {
        let (rows, attached) = latlab_batch::banded_rows(exp, &results).map_err(anyhow::Error::msg)?;
        (rows, Some(attached))
    } else {
        (latlab_batch::rows(exp, &results), None)
    };
    let summary = verdict::SummaryRow {
        seed: verdict::seed_of(&exp.seed_file),
        experiment: exp.name.clone(),
        tally: verdict::Tally::of(&rows),
    };
    if o.json {
        outln!("{}", serde_json::to_string(&latlab_batch::reproduce_doc(exp, &rows))?)?;
        return Ok(Some(summary));
    }
    out!(
        "{}",
        latlab_batch::text::report(exp, &results, &rows, attached.as_ref(), o.trace)
    )?;
    let sim: f64 = results.iter().map(|r| r.meta.duration_ns as f64 / 1e9).sum();
    outln!(
        "\n{} runs, {:.0} s simulated in {:.1} s",
        results.len(),
        sim,
        started.elapsed().as_secs_f64()
    )?;
    Ok(Some(summary))
}
