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
    let plan = Plan::new(&exp, a.samples as usize, a.seed).map_err(anyhow::Error::msg)?;
    let bar = ProgressBar::with_draw_target(Some(plan.jobs() as u64), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} runs, {elapsed} ({eta} left)")
            .expect("static template")
            .progress_chars("=> "),
    );
    bar.set_prefix(format!(
        "{}: {} draws x {} kernels",
        exp.name,
        a.samples,
        exp.runs.len()
    ));
    let report = plan.run_here(&|| bar.inc(1))?;
    bar.finish_and_clear();
    let label_of = |r: &latlab_report::seed_table::CompareRow| r.run.clone();
    if let Some(dir) = &a.plot {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        for (i, b) in report.rows.iter().enumerate() {
            let title = format!("{} {}: {}", exp.name, label_of(&b.row), b.row.figure);
            // A figure no constant moves has nothing to plot against.
            if let Ok(svg) = latlab_batch::plot::svg(&report, i, &title) {
                let name = format!("{}-{}-{}.svg", exp.name, label_of(&b.row), b.row.figure).replace(['/', ' '], "_");
                let p = dir.join(name);
                std::fs::write(&p, svg).with_context(|| format!("cannot write {}", p.display()))?;
            }
        }
    }
    if a.json {
        outln!("{}", serde_json::to_string(&report)?)?;
    } else {
        out!("{}", uncertainty::render(&report))?;
    }
    Ok(ExitCode::SUCCESS)
}
