//! `latlab run` and `latlab reproduce`: the kernel model's commands. Reads experiment files,
//! runs their variants in parallel, prints the seed's table with the model beside it.

use anyhow::Context;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use latlab_core::RunResult;
use latlab_exp::Experiment;
use latlab_probe::signals;
use latlab_report::{seed_table, verdict};
use rayon::prelude::*;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
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
    /// Print the comparison as JSON: {"experiment": NAME, "rows": [...]}; several
    /// experiments: one document, {"experiments": [{"experiment": NAME, ...}, ...]}.
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
    /// Record the model's kernel trace events (sched, irq, softirq, lock, preempt, marks)
    /// around each stream's worst samples into the results --out writes (`Stream.recorded`,
    /// what `latlab report trace` exports as 6.x ftrace text).
    #[arg(long, requires = "out")]
    pub record_events: bool,
    /// Replay the machine file's host noise in the model (`[host.noise]` of a machine
    /// `latlab probe calibrate` wrote: gaps that are not the kernel's, on every CPU, from
    /// its measured rates and lengths); each result says so in its settings (`host_noise`).
    #[arg(long)]
    pub replay_noise: bool,
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

pub(crate) fn read_bounded(path: &Path) -> std::io::Result<String> {
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
    if let Some(doc) = execute(&exp, &a.opts)?.doc {
        outln!("{}", serde_json::to_string(&doc)?)?;
    }
    Ok(interrupted().unwrap_or(ExitCode::SUCCESS))
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
    // Several experiments with --json: one document, {"experiments": [DOC, ...]}, each DOC
    // the one experiment's; written as each experiment ends.
    let several = a.opts.json && exps.len() > 1;
    if several {
        out!("{{\"experiments\":[")?;
    }
    let mut summaries = Vec::new();
    let mut first = true;
    for e in &exps {
        let done = execute(e, &a.opts)?;
        if let Some(doc) = done.doc {
            let text = serde_json::to_string(&doc)?;
            match (several, std::mem::take(&mut first)) {
                (false, _) => outln!("{text}")?,
                (true, true) => out!("{text}")?,
                (true, false) => out!(",{text}")?,
            }
        }
        summaries.extend(done.summary);
        if let Some(code) = interrupted() {
            // The document still closes: what ran is printed, the rest is not run.
            if several {
                outln!("]}}")?;
            }
            return Ok(code);
        }
    }
    if several {
        outln!("]}}")?;
    }
    // Several experiments' tables: their verdicts side by side at the end.
    if !a.opts.json && summaries.len() > 1 {
        out!("{}", verdict::render_summary(&summaries))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The exit status after a SIGINT/SIGTERM/SIGHUP stopped the runs (128 + the signal), once
/// the partial report is printed.
fn interrupted() -> Option<ExitCode> {
    signals::stopped_by().map(|s| ExitCode::from(128 + s as u8))
}

/// What running one experiment hands back: its `--json` document (the caller writes it, so
/// several experiments make one document) and its verdicts for `reproduce`'s closing summary
/// (a `--vary` sweep has none).
#[derive(Default)]
struct Done {
    doc: Option<serde_json::Value>,
    summary: Option<verdict::SummaryRow>,
}

/// Run `exp` as `o` asks: once, or once per value of `--vary`; print its report, or with
/// `--json` return its document.
fn execute(exp: &Experiment, o: &Opts) -> anyhow::Result<Done> {
    let Some(spec) = &o.vary else {
        return execute_one(exp, o);
    };
    let origin = latlab_batch::sweep::ORIGIN;
    let (key, values) = spec
        .split_once('=')
        .with_context(|| format!("{origin}: expected KEY=V1,V2,..., got `{spec}`"))?;
    let values = latlab_batch::sweep::values(key, values)?;
    let values: Vec<&str> = values.iter().map(String::as_str).collect();
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
        return Ok(Done {
            doc: Some(latlab_batch::sweep::doc(&exp.name, key, &values, &columns)),
            summary: None,
        });
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
    Ok(Done::default())
}

/// Run every variant of `exp` in parallel, with a progress bar on runs longer than a second.
fn run_all(exp: &Experiment, o: &Opts) -> anyhow::Result<Vec<RunResult>> {
    run_pool(&[(exp, "")], o)
}

/// Run every run of every experiment in `jobs` in one parallel pool; results in order, run by
/// run. The tag (a sweep's `key=value`) labels progress and errors. Progress goes to stderr
/// whatever stdout is: a bar per run longer than a second on a terminal, else a line per
/// finished run (and one a minute for a run still going). SIGINT, SIGTERM or SIGHUP stop
/// every run at its next simulated second: the results then cover the runs until there
/// (`stopped_by` in their settings) and [`interrupted`] gives the exit status.
fn run_pool(jobs: &[(&Experiment, &str)], o: &Opts) -> anyhow::Result<Vec<RunResult>> {
    let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
    let style = ProgressStyle::with_template("{prefix:>36} [{bar:30}] {msg}")
        .expect("static template")
        .progress_chars("=> ");
    let lines = !crate::progress::enabled();
    let runs: Vec<(&Experiment, &str, &latlab_exp::Run)> = jobs
        .iter()
        .flat_map(|&(e, tag)| e.runs.iter().map(move |r| (e, tag, r)))
        .collect();
    let done = AtomicUsize::new(0);
    let started = Instant::now();
    signals::install();
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
            cfg.record_events = o.record_events.then_some(latlab_sim::measure::recorder::RING_EVENTS);
            cfg.replay_noise = o.replay_noise;
            let mut bar: Option<ProgressBar> = None;
            let t0 = Instant::now();
            let mut said = t0;
            let mut stopped_at = None;
            let progress = &mut |now: u64, goal: u64| {
                let s = now / 1_000_000_000;
                if lines && said.elapsed() >= LINE_EVERY {
                    said = Instant::now();
                    errln!("latlab progress: {} `{label}`: {s} s simulated so far", exp.name);
                }
                // A bar only for runs that take more than a second.
                if !lines && bar.is_none() && t0.elapsed() > Duration::from_secs(1) {
                    let b = multi.add(ProgressBar::new(goal.max(1) / 1_000_000_000));
                    b.set_style(style.clone());
                    b.set_prefix(label.clone());
                    bar = Some(b);
                }
                if let Some(b) = &bar {
                    b.set_length((goal / 1_000_000_000).max(s));
                    b.set_position(s);
                    b.set_message(format!("{s} s simulated"));
                }
                if signals::stop_requested() {
                    stopped_at = Some(now);
                    return ControlFlow::Break(());
                }
                ControlFlow::Continue(())
            };
            let mut r = latlab_batch::simulate(&cfg, progress)
                .with_context(|| format!("experiment {}: run `{label}`", exp.name))?;
            if let Some(b) = bar {
                b.finish_and_clear();
            }
            if let Some(at) = stopped_at {
                r.meta.settings.insert(
                    "stopped_by".into(),
                    format!("a signal at {:.0} simulated s", at as f64 / 1e9),
                );
            }
            let n = done.fetch_add(1, Ordering::Relaxed) + 1;
            if lines {
                errln!(
                    "latlab progress: {} {n}/{} runs done ({:.1} s): `{label}`, {:.0} s simulated in {:.1} s",
                    exp.name,
                    runs.len(),
                    started.elapsed().as_secs_f64(),
                    r.meta.duration_ns as f64 / 1e9,
                    t0.elapsed().as_secs_f64()
                );
            }
            Ok(r)
        })
        .collect();
    let results = results.into_iter().collect::<anyhow::Result<Vec<_>>>()?;
    if let Some(sig) = signals::stopped_by() {
        errln!(
            "latlab: interrupted (signal {sig}); the figures below cover each run until then (`stopped_by` in its settings), and nothing further runs"
        );
    }
    Ok(results)
}

/// How often a run still going says so when stderr is not a terminal.
const LINE_EVERY: Duration = Duration::from_secs(60);

/// `name` with only `[A-Za-z0-9._-]`, for a file name: `%` becomes `pct`, every other
/// character (a space, `,`, `+`, `(`, `/`, `=`, ...) `_`, a run of them one `_`, none at
/// either end. `2.6.17+pdflush-balance, 120% (what-if)` is `2.6.17_pdflush-balance_120pct_what-if`.
pub fn portable(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        match c {
            'A'..='Z' | 'a'..='z' | '0'..='9' | '.' | '-' => out.push(c),
            '%' => out.push_str("pct"),
            _ if out.is_empty() || out.ends_with('_') => {}
            _ => out.push('_'),
        }
    }
    out.truncate(out.trim_end_matches('_').len());
    out
}

/// A run's file in `dir`: `EXPERIMENT-LABEL[SUFFIX]TAIL`, [`portable`].
fn run_file(dir: &Path, exp: &Experiment, run: &latlab_exp::Run, suffix: &str, tail: &str) -> PathBuf {
    dir.join(format!(
        "{}{}",
        portable(&format!("{}-{}{suffix}", exp.name, run.label)),
        portable(tail)
    ))
}

/// Refuse to write two runs' files under one name (two labels that differ only in what
/// [`portable`] drops), naming both.
fn check_distinct(flag: &str, files: &[(PathBuf, &str)]) -> anyhow::Result<()> {
    for (i, (p, label)) in files.iter().enumerate() {
        if let Some((_, other)) = files[..i].iter().find(|(q, _)| q == p) {
            anyhow::bail!(
                "{flag}: runs `{other}` and `{label}` would both be written to {}; give them labels that differ in letters or digits",
                p.display()
            );
        }
    }
    Ok(())
}

/// Each run's full result as `DIR/EXPERIMENT-LABEL[SUFFIX].json`.
fn write_out(exp: &Experiment, results: &[RunResult], dir: &Path, suffix: &str) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("--out: cannot create {}", dir.display()))?;
    let files: Vec<(PathBuf, &str)> = exp
        .runs
        .iter()
        .map(|run| (run_file(dir, exp, run, suffix, ".json"), run.label.as_str()))
        .collect();
    check_distinct("--out", &files)?;
    for ((p, _), r) in files.iter().zip(results) {
        std::fs::write(p, serde_json::to_vec_pretty(r)?)
            .with_context(|| format!("--out: cannot write {}", p.display()))?;
    }
    Ok(())
}

/// Each run's kept write(2) records as iozone -Q's per-record files,
/// `DIR/EXPERIMENT-LABEL[SUFFIX]-wol.dat` (and `-rwol.dat`, ...); the records leave the
/// results (they are not written into `--out`'s JSON).
fn write_records(exp: &Experiment, results: &mut [RunResult], dir: &Path, suffix: &str) -> anyhow::Result<()> {
    let mut files = Vec::new();
    for (run, r) in exp.runs.iter().zip(results) {
        for s in r.streams.iter_mut().filter(|s| !s.records.is_empty()) {
            let records = std::mem::take(&mut s.records);
            let tail = format!("-{}", latlab_report::iozone_q::file_name(&s.name));
            files.push((run_file(dir, exp, run, suffix, &tail), run.label.as_str(), records));
        }
    }
    let names: Vec<(PathBuf, &str)> = files.iter().map(|(p, l, _)| (p.clone(), *l)).collect();
    check_distinct("--records", &names)?;
    if !files.is_empty() {
        std::fs::create_dir_all(dir).with_context(|| format!("--records: cannot create {}", dir.display()))?;
    }
    for (p, _, records) in &files {
        std::fs::write(p, latlab_report::iozone_q::records_file(records))
            .with_context(|| format!("--records: cannot write {}", p.display()))?;
    }
    if files.is_empty() {
        errln!(
            "latlab: warning: --records: no run of {} times write(2) calls (only iozone and sysbench runs do); nothing written",
            exp.name
        );
    }
    Ok(())
}

/// Run every variant of `exp` (in parallel) and print its report, or with `--json` return
/// its document; with its verdicts for `reproduce`'s closing summary.
fn execute_one(exp: &Experiment, o: &Opts) -> anyhow::Result<Done> {
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
        return Ok(Done {
            doc: Some(latlab_batch::reproduce_doc(exp, &rows)),
            summary: Some(summary),
        });
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
    Ok(Done {
        doc: None,
        summary: Some(summary),
    })
}
