//! latlab-batch: an experiment's runs as independent jobs, and the merge of their figures
//! into the documents `latlab` prints: `reproduce --json`, a `--vary` sweep ([`sweep`]),
//! `latlab uncertainty` ([`uncertainty`]) and the bands `reproduce` lays beside its figures
//! ([`bands`]); and `reproduce`'s text report of an experiment ([`text`]).
//!
//! A job is one run of one kernel variant; it returns that run's comparison rows
//! ([`CompareRow`]). The CLI runs the jobs on this machine's cores (rayon), the Python
//! package's `latlab.ray` one Ray task each; both merge with the functions here, so both
//! print the same document, byte for byte.
//!
//! **Invariant.** A job depends only on its inputs (experiment, settings, index): any
//! machine that runs it gets the same rows (the model is deterministic).

#![forbid(unsafe_code)]

pub mod bands;
pub mod plot;
pub mod sweep;
pub mod text;
pub mod uncertainty;

use anyhow::Context;
use latlab_core::RunResult;
use latlab_exp::Experiment;
pub use latlab_report::seed_table::CompareRow;
use latlab_report::seed_table::{self, Published, RunView};
pub use latlab_report::verdict::Tally;
use latlab_sim::SimConfig;
use std::ops::ControlFlow;

/// The views `seed_table` renders: each run's result beside what its seed published.
pub fn views<'a>(exp: &'a Experiment, results: &'a [RunResult]) -> Vec<RunView<'a>> {
    exp.runs
        .iter()
        .zip(results)
        .map(|(run, r)| RunView {
            label: &run.label,
            case: run.case.as_deref(),
            result: r,
            published: Published {
                samples: run.published.samples,
                max_ms: run.published.max_ms,
                max_range_ms: run.published.max_range_ms,
                buckets: &run.published.buckets,
                listing: &run.published.listing,
                avg_ms: run.published.avg_ms,
                missed: run.published.missed,
                slowest_us: &run.published.slowest_us,
                over_100ms: run.published.over_100ms,
                throughput_gain: run.published.throughput_gain,
                swap_max_ms: run.published.swap_max_ms,
                task: run.published.task.as_deref(),
                function: run.published.function.as_deref(),
            },
        })
        .collect()
}

/// The comparison rows of `results` (`reproduce --json`'s `rows`), run by run.
pub fn rows(exp: &Experiment, results: &[RunResult]) -> Vec<CompareRow> {
    let views = views(exp, results);
    if exp.table == latlab_exp::TableKind::Percentiles {
        return text::percentile_rows(&views, &exp.seed_file);
    }
    seed_table::compare_rows(&views, &exp.seed_file)
}

/// The comparison rows of `results`, each with its stored band where the band was made with
/// the same figure (`bands`), and what the stored bands gave.
pub fn banded_rows(exp: &Experiment, results: &[RunResult]) -> Result<(Vec<CompareRow>, bands::Attached), String> {
    let mut rows = rows(exp, results);
    let attached = bands::attach(&exp.name, &mut rows)?;
    Ok((rows, attached))
}

/// Every run of `exp` on this machine's cores (rayon), in run order, `done` called with each
/// run and its result as it ends. A `Break` from `done` stops the runs still going at their
/// next simulated second, and the whole is an error saying so.
pub fn run_all_here(
    exp: &Experiment,
    done: &(dyn Fn(&latlab_exp::Run, &RunResult) -> ControlFlow<()> + Sync),
) -> anyhow::Result<Vec<RunResult>> {
    use rayon::prelude::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    let stop = AtomicBool::new(false);
    let results: Vec<RunResult> = exp
        .runs
        .par_iter()
        .map(|run| {
            let go_on = |_: u64, _: u64| match stop.load(Ordering::Relaxed) {
                true => ControlFlow::Break(()),
                false => ControlFlow::Continue(()),
            };
            let r = simulate(&run.config, &mut { go_on })
                .with_context(|| format!("experiment {}: run `{}`", exp.name, run.label))?;
            if done(run, &r).is_break() {
                stop.store(true, Ordering::Relaxed);
            }
            Ok(r)
        })
        .collect::<anyhow::Result<_>>()?;
    if stop.load(Ordering::Relaxed) {
        anyhow::bail!("experiment {}: stopped by its progress callback", exp.name);
    }
    Ok(results)
}

/// `reproduce --json`'s document for one experiment: its rows, each with its verdict
/// (`bar`, `inside`, `published_in_band`), and their counts (`summary`: [`Tally`]).
pub fn reproduce_doc(exp: &Experiment, rows: &[CompareRow]) -> serde_json::Value {
    serde_json::json!({
        "experiment": exp.name,
        "seed": latlab_report::verdict::seed_of(&exp.seed_file),
        "rows": rows,
        "summary": Tally::of(rows),
    })
}

/// Run `cfg` in the model, `progress` asked after every simulated second whether to go on
/// (`latlab_sim::simulate_stoppable`). A panic inside the model is one of its invariants
/// broken (a count below zero stops release builds too): a bug in latlab, returned as an
/// error saying so.
pub fn simulate(cfg: &SimConfig, progress: latlab_sim::StoppableProgress) -> anyhow::Result<RunResult> {
    let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        latlab_sim::simulate_stoppable(cfg, progress)
    }))
    .map_err(|p| broken_invariant(p.as_ref(), cfg.seed))?;
    Ok(ran?.0)
}

/// Run `r` of `exp` (with the experiment's own seed) and its comparison rows: one job.
pub fn run_rows(exp: &Experiment, r: usize) -> anyhow::Result<Vec<CompareRow>> {
    let run = exp
        .runs
        .get(r)
        .with_context(|| format!("experiment {} has no run {r}", exp.name))?;
    let result = simulate(&run.config, &mut |_, _| ControlFlow::Continue(()))
        .with_context(|| format!("experiment {}: run `{}`", exp.name, run.label))?;
    let one = Experiment {
        runs: vec![run.clone()],
        ..exp.clone()
    };
    Ok(rows(&one, std::slice::from_ref(&result)))
}

/// The error for a run the model stopped with a panic: one of its invariants broke, a bug in
/// latlab rather than in the experiment.
pub fn broken_invariant(payload: &(dyn std::any::Any + Send), seed: u64) -> anyhow::Error {
    let why = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".into());
    anyhow::anyhow!(
        "the model broke one of its own invariants ({why}) with seed {seed}: a bug in latlab, not in the experiment; please report it with the experiment file"
    )
}

/// Jobs' rows put back together in job order: `per_job[j]` is job `j`'s rows; each group of
/// `exp`'s runs jobs makes one document's rows, with the figures across runs (`gain_rows`).
pub fn regroup(exp: &Experiment, per_job: Vec<Vec<CompareRow>>) -> Vec<Vec<CompareRow>> {
    let runs = exp.runs.len().max(1);
    let mut out = Vec::new();
    let mut it = per_job.into_iter();
    loop {
        let group: Vec<Vec<CompareRow>> = it.by_ref().take(runs).collect();
        if group.is_empty() {
            return out;
        }
        let mut rows = group.concat();
        // The figures across runs (seed 001's gains), as `compare_rows` ends with them.
        let gains = seed_table::gain_rows(&rows, |r| {
            exp.runs
                .iter()
                .find(|run| run.label == r.run)
                .and_then(|run| run.published.throughput_gain)
        });
        rows.extend(gains);
        out.push(rows);
    }
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

    #[test]
    fn one_runs_rows_are_its_share_of_the_experiments() {
        let exp = latlab_exp::builtin_experiment("sched-cost").unwrap();
        let results: Vec<RunResult> = exp
            .runs
            .iter()
            .map(|r| simulate(&r.config, &mut |_, _| ControlFlow::Continue(())).unwrap())
            .collect();
        let all = rows(&exp, &results);
        let jobs: Vec<Vec<CompareRow>> = (0..exp.runs.len()).map(|r| run_rows(&exp, r).unwrap()).collect();
        assert_eq!(regroup(&exp, jobs), vec![all]);
        assert!(run_rows(&exp, 99).unwrap_err().to_string().contains("no run 99"));
    }
}
