//! `latlab uncertainty EXPERIMENT`: the experiment as built and once per draw of its
//! constants within their sources' ranges (`latlab_batch::uncertainty`), in parallel on this
//! machine's cores with a progress bar on stderr; every figure's band and drivers as a table,
//! `--json`, and a plot per figure (`--plot DIR`).

use anyhow::Context;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use latlab_batch::uncertainty::{self, Plan};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct UncertaintyArgs {
    /// A built-in experiment (`mini-ll`, `cfs-granularity`, ...).
    pub name: String,
    /// Draws of the constants (a Latin hypercube: each constant's range cut into this many
    /// strata, one draw in each).
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub samples: u64,
    /// Seed of the draws (the model runs with the experiment's own seed).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Re-run the draws the experiment's stored bands were made with
    /// (experiments/bands/NAME.json, by each constant's key) instead of a fresh design: the
    /// bands of today's model from the same draws, which is how a change of mechanism
    /// refreshes them (`--json > experiments/bands/NAME.json`).
    #[arg(long, conflicts_with_all = ["samples", "seed"])]
    pub stored_draws: bool,
    /// Print the report as JSON: `reproduce --json`'s rows, each with `band` [p5, p50, p95],
    /// `published_in_band`, `drivers` and `values` (the figure in every draw), and the draws.
    #[arg(long)]
    pub json: bool,
    /// Write a plot per figure into this directory (SVG): the figure in every draw against
    /// its strongest driver, with the band and the published figure.
    #[arg(long, value_name = "DIR")]
    pub plot: Option<PathBuf>,
}

pub fn run(a: UncertaintyArgs) -> anyhow::Result<ExitCode> {
    let exp = latlab_exp::builtin_experiment(&a.name)?;
    let plan = if a.stored_draws {
        let stored = latlab_batch::bands::stored(&exp.name)
            .ok_or_else(|| anyhow::anyhow!("--stored-draws: {} has no stored bands (experiments/bands/)", exp.name))?
            .map_err(anyhow::Error::msg)?;
        Plan::of_report(&exp, &stored)
    } else {
        Plan::new(&exp, a.samples as usize, a.seed).map_err(anyhow::Error::msg)?
    };
    let least = uncertainty::drivers::min_samples(plan.constants.len());
    if a.plot.is_some() && plan.draws.len() < least {
        anyhow::bail!(
            "--plot: a plot shows a figure against its strongest driver, and with {} draws none of {}'s {} constants can be told from chance: give --samples {least} or more",
            plan.draws.len(),
            exp.name,
            plan.constants.len()
        );
    }
    let bar = ProgressBar::with_draw_target(Some(plan.jobs() as u64), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} runs, {elapsed} ({eta} left)")
            .expect("static template")
            .progress_chars("=> "),
    );
    bar.set_prefix(format!(
        "{}: {} draws x {} kernels",
        exp.name,
        plan.draws.len(),
        exp.runs.len()
    ));
    let report = match crate::progress::enabled() {
        true => plan.run_here(&|| bar.inc(1))?,
        false => plan.run_here(&crate::progress::tenths(exp.name.clone(), "runs", plan.jobs() as u64))?,
    };
    bar.finish_and_clear();
    let label_of = |r: &latlab_report::seed_table::CompareRow| r.run.clone();
    if let Some(dir) = &a.plot {
        std::fs::create_dir_all(dir).with_context(|| format!("--plot: cannot create {}", dir.display()))?;
        let (mut written, mut undriven) = (0, Vec::new());
        for (i, b) in report.rows.iter().enumerate() {
            let title = format!("{} {}: {}", exp.name, label_of(&b.row), b.row.figure);
            // A figure no constant moves has nothing to plot against.
            match latlab_batch::plot::svg(&report, i, &title) {
                Ok(svg) => {
                    let name = crate::sim_cmd::portable(&format!("{}-{}-{}", exp.name, label_of(&b.row), b.row.figure));
                    let p = dir.join(format!("{name}.svg"));
                    std::fs::write(&p, svg).with_context(|| format!("--plot: cannot write {}", p.display()))?;
                    written += 1;
                }
                Err(_) => undriven.push(format!("{} {}", label_of(&b.row), b.row.figure)),
            }
        }
        errln!("latlab uncertainty: --plot: {written} plots in {}", dir.display());
        if !undriven.is_empty() {
            errln!(
                "latlab uncertainty: --plot: no plot for {} figures no constant drives above chance: {}",
                undriven.len(),
                undriven.join("; ")
            );
        }
    }
    if a.json {
        outln!("{}", serde_json::to_string(&report)?)?;
    } else {
        out!("{}", uncertainty::render(&report))?;
    }
    Ok(ExitCode::SUCCESS)
}
