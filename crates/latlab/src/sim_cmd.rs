//! `latlab run` and `latlab reproduce`: the kernel model's commands. Reads experiment files,
//! runs their variants in parallel, prints the seed's table with the model beside it.

use anyhow::Context;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use latlab_core::RunResult;
use latlab_exp::{Experiment, TableKind};
use latlab_report::seed_table::{self, CompareRow, Published, RunView};
use latlab_report::{latency_trace, summary};
use rayon::prelude::*;
use std::path::PathBuf;
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
}

pub fn run(a: RunArgs) -> anyhow::Result<ExitCode> {
    let origin = a.file.display().to_string();
    let text = std::fs::read_to_string(&a.file).with_context(|| format!("cannot read experiment file {origin}"))?;
    let exp = latlab_exp::load(&origin, &text)?;
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

/// Run every variant of `exp` (in parallel) and print its report.
fn execute(exp: &Experiment, o: &Opts) -> anyhow::Result<()> {
    let started = Instant::now();
    let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
    let style = ProgressStyle::with_template("{prefix:>28} [{bar:30}] {msg}")
        .expect("static template")
        .progress_chars("=> ");
    let results: Vec<anyhow::Result<RunResult>> = exp
        .runs
        .par_iter()
        .map(|run| {
            let mut cfg = run.config.clone();
            if let Some(s) = o.seed {
                cfg.seed = s;
            }
            let mut bar: Option<ProgressBar> = None;
            let t0 = Instant::now();
            let (r, _) = latlab_sim::simulate(&cfg, &mut |now, goal| {
                // A bar only for runs that take more than a second.
                if bar.is_none() && t0.elapsed() > Duration::from_secs(1) {
                    let b = multi.add(ProgressBar::new(goal.max(1) / 1_000_000_000));
                    b.set_style(style.clone());
                    b.set_prefix(run.label.clone());
                    bar = Some(b);
                }
                if let Some(b) = &bar {
                    b.set_length((goal / 1_000_000_000).max(now / 1_000_000_000));
                    b.set_position(now / 1_000_000_000);
                    b.set_message(format!("{} s simulated", now / 1_000_000_000));
                }
            })
            .with_context(|| format!("experiment {}: run `{}`", exp.name, run.label))?;
            if let Some(b) = bar {
                b.finish_and_clear();
            }
            Ok(r)
        })
        .collect();
    let results = results.into_iter().collect::<anyhow::Result<Vec<_>>>()?;
    if let Some(dir) = &o.out {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        for (run, r) in exp.runs.iter().zip(&results) {
            let p = dir.join(format!("{}-{}.json", exp.name, run.label.replace(['/', ' '], "_")));
            std::fs::write(&p, serde_json::to_vec_pretty(r)?)
                .with_context(|| format!("cannot write {}", p.display()))?;
        }
    }
    let views: Vec<RunView> = exp
        .runs
        .iter()
        .zip(&results)
        .map(|(run, r)| RunView {
            label: &run.label,
            result: r,
            published: Published {
                samples: run.published.samples,
                max_ms: run.published.max_ms,
                max_range_ms: run.published.max_range_ms,
                buckets: &run.published.buckets,
                listing: &run.published.listing,
            },
        })
        .collect();
    let rows: Vec<CompareRow> = seed_table::compare_rows(&views, &exp.seed_file);
    if o.json {
        let doc = serde_json::json!({ "experiment": exp.name, "rows": rows });
        println!("{}", serde_json::to_string(&doc)?);
        return Ok(());
    }
    let title = format!("== {} ({}) ==\n{}", exp.name, exp.seed_file, exp.title);
    print!(
        "{}",
        match exp.table {
            TableKind::LogHistogram => seed_table::render_log_histogram(&title, &exp.seed_file, &views),
            TableKind::MaxLatency => seed_table::render_max_latency(&title, &exp.seed_file, &views),
        }
    );
    let labels: Vec<(&str, &str)> = views.iter().map(|v| (v.result.meta.kernel.as_str(), v.label)).collect();
    print!("{}", seed_table::render_comparison(&rows, &labels));
    for v in &views {
        if !v.published.listing.is_empty() {
            print!("{}", seed_table::render_listing(v.label, v.result, v.published.listing));
        }
    }
    println!("\nPercentiles (realfeel wakeup latency)");
    for v in &views {
        print!("{}", summary::percentiles(v.label, v.result));
    }
    println!("\nSamples of 1 ms or more, by the code path that held the CPU longest while realfeel waited");
    for v in &views {
        print!("{}", summary::causes(v.label, v.result));
    }
    println!("\nWhy the worst sample of each run took so long");
    for v in &views {
        if let Some(w) = v.result.streams.first().and_then(|s| s.worst.first()) {
            println!("{}:", v.label);
            print!("{}", summary::explain(w));
        }
    }
    if o.trace {
        for v in &views {
            if let Some(t) = &v.result.trace {
                println!("\n{} — worst latency as /proc/latency_trace:", v.label);
                print!("{}", latency_trace::render(t));
            }
        }
    }
    for n in &exp.notes {
        println!("\nnote: {n}");
    }
    let sim: f64 = results.iter().map(|r| r.meta.duration_ns as f64 / 1e9).sum();
    println!(
        "\n{} runs, {:.0} s simulated in {:.1} s",
        results.len(),
        sim,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
