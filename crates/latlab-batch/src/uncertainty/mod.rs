//! `latlab uncertainty`: every figure of an experiment with the band its constants' sources
//! allow (issue 20; docs/fidelity.md "Uncertainty").
//!
//! [`Plan::new`] lists the constants the experiment rests on ([`constants`]) and draws `n`
//! joint settings of them: a Latin hypercube ([`lhs`]), each constant log-uniform within its
//! range. Each setting is a set of `--vary` overrides applied through `latlab_exp::vary`,
//! the path a sweep takes. The experiment runs as built (the figures `reproduce` prints)
//! and once per setting, every run one job ([`Plan::job`]); [`Plan::merge`] turns the jobs'
//! rows into a [`Report`]: per figure, its p5 / p50 / p95 band, whether the published figure
//! lies inside, and the constants that drive it ([`drivers`]).

pub mod constants;
pub mod drivers;
pub mod lhs;

use crate::{regroup, run_rows};
pub use constants::Constant;
pub use drivers::Driver;
use latlab_exp::{ExpError, Experiment};
use latlab_report::seed_table::CompareRow;
use latlab_report::verdict::mark;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::fmt::Write;

/// Where a draw's settings come from, in errors.
const ORIGIN: &str = "latlab uncertainty (a draw of the constants)";

/// Constants reported as a figure's drivers.
pub const TOP_DRIVERS: usize = 3;

/// An experiment and `n` draws of its constants.
pub struct Plan {
    pub seed: u64,
    pub constants: Vec<Constant>,
    /// `draws[i][k]`: constant `k` in draw `i`.
    pub draws: Vec<Vec<f64>>,
    /// The experiment as built.
    base: Experiment,
}

/// An experiment's figures with their bands: `latlab uncertainty --json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub experiment: String,
    pub samples: usize,
    /// The Latin hypercube's seed (the model runs with the experiment's own).
    pub seed: u64,
    pub constants: Vec<Constant>,
    /// `reproduce --json`'s rows, each with its band and whether the published figure lies
    /// in it (`published_in_band`), its drivers and its value in every draw.
    pub rows: Vec<BandRow>,
    /// `draws[i][k]`: constant `k` in draw `i`.
    pub draws: Vec<Vec<f64>>,
}

/// One figure with its band.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BandRow {
    #[serde(flatten)]
    pub row: CompareRow,
    pub drivers: Vec<Driver>,
    /// The figure in every draw.
    pub values: Vec<f64>,
}

impl Plan {
    /// `n` draws of `exp`'s constants from a Latin hypercube seeded with `seed`; an error
    /// says which constant or draw cannot be used.
    pub fn new(exp: &Experiment, n: usize, seed: u64) -> Result<Plan, String> {
        let constants = constants::constants(exp).map_err(|e| format!("experiment {}: {e}", exp.name))?;
        let design = lhs::design(n, constants.len(), seed);
        let draws: Vec<Vec<f64>> = design
            .iter()
            .map(|u| {
                constants
                    .iter()
                    .enumerate()
                    .map(|(k, c)| c.at(u[c.drawn_with.unwrap_or(k)]))
                    .collect()
            })
            .collect();
        Ok(Plan {
            seed,
            constants,
            draws,
            base: exp.clone(),
        })
    }

    /// The draws a stored report was made with, applied to `exp` by each constant's key (a
    /// constant the report does not list stays as built): re-running one shows whether the
    /// report still comes from today's model, whatever constants have joined the catalog
    /// since (a new one shifts a fresh design's draws of those after it).
    pub fn of_report(exp: &Experiment, report: &Report) -> Plan {
        Plan {
            seed: report.seed,
            constants: report.constants.clone(),
            draws: report.draws.clone(),
            base: exp.clone(),
        }
    }

    /// The experiment as built (`i` = 0) or with draw `i - 1` applied, each constant through
    /// `latlab_exp::vary` as a sweep's setting.
    pub fn experiment(&self, i: usize) -> Result<Experiment, String> {
        let Some(d) = i.checked_sub(1).map(|k| self.draws.get(k)) else {
            return Ok(self.base.clone());
        };
        let d = d.ok_or_else(|| format!("{} has {} draws, not {i}", self.base.name, self.draws.len()))?;
        let mut e = self.base.clone();
        for (c, v) in self.constants.iter().zip(d) {
            e = latlab_exp::vary(&e, ORIGIN, &c.key, &c.text(*v))
                .map_err(|err: ExpError| format!("experiment {}, draw {}: {err}", self.base.name, i - 1))?;
        }
        Ok(e)
    }

    /// Every draw applied (an error names the first that cannot be), as built first.
    pub fn experiments(&self) -> Result<Vec<Experiment>, String> {
        (0..=self.draws.len()).map(|i| self.experiment(i)).collect()
    }

    fn runs(&self) -> usize {
        self.base.runs.len().max(1)
    }

    /// Jobs: every run as built, then every run of every draw.
    pub fn jobs(&self) -> usize {
        (self.draws.len() + 1) * self.base.runs.len()
    }

    /// Job `j`'s rows.
    pub fn job(&self, j: usize) -> anyhow::Result<Vec<CompareRow>> {
        if j >= self.jobs() {
            anyhow::bail!("{} has {} jobs, not {}", self.base.name, self.jobs(), j + 1);
        }
        let exp = self.experiment(j / self.runs()).map_err(anyhow::Error::msg)?;
        run_rows(&exp, j % self.runs())
    }

    /// Every job on this machine's cores (rayon), `tick` called as each ends, then merged.
    pub fn run_here(&self, tick: &(dyn Fn() + Sync)) -> anyhow::Result<Report> {
        let exps = self.experiments().map_err(anyhow::Error::msg)?;
        let runs = self.runs();
        let per_job = (0..self.jobs())
            .into_par_iter()
            .map(|j| {
                let r = run_rows(&exps[j / runs], j % runs);
                tick();
                r
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        self.merge(per_job)
    }

    /// The report from every job's rows, in job order.
    pub fn merge(&self, per_job: Vec<Vec<CompareRow>>) -> anyhow::Result<Report> {
        if per_job.len() != self.jobs() {
            anyhow::bail!("{} jobs' rows for a plan of {} jobs", per_job.len(), self.jobs());
        }
        let mut groups = regroup(&self.base, per_job).into_iter();
        let nominal = groups.next().unwrap_or_default();
        let drawn: Vec<Vec<CompareRow>> = groups.collect();
        let keys: Vec<String> = self.constants.iter().map(|c| c.key.clone()).collect();
        let by_constant: Vec<Vec<f64>> = (0..keys.len())
            .map(|k| self.draws.iter().map(|d| d[k]).collect())
            .collect();
        let rows = nominal
            .into_iter()
            .enumerate()
            .map(|(r, row)| {
                let values: Vec<f64> = drawn
                    .iter()
                    .map(|g| {
                        g.get(r)
                            .filter(|x| x.variant == row.variant && x.figure == row.figure)
                            .map(|x| x.model)
                            .ok_or_else(|| anyhow::anyhow!("a draw's rows do not match the experiment's"))
                    })
                    .collect::<anyhow::Result<_>>()?;
                let band = (!values.is_empty()).then(|| [0.05, 0.5, 0.95].map(|q| drivers::quantile(&values, q)));
                let mut row = row;
                row.set_band(band);
                Ok(BandRow {
                    drivers: drivers::drivers(&keys, &by_constant, &values, TOP_DRIVERS),
                    values,
                    row,
                })
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        Ok(Report {
            experiment: self.base.name.clone(),
            samples: self.draws.len(),
            seed: self.seed,
            constants: self.constants.clone(),
            rows,
            draws: self.draws.clone(),
        })
    }
}

/// A number for the table, in the figure's unit.
fn num(v: f64) -> String {
    if v == 0.0 || v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

/// The terminal table: each figure as built (by its run's label), its band, the seed's
/// figure, the verdicts (the as-built figure inside its bar, the seed's inside the band)
/// and the drivers; the counts of both verdicts last.
pub fn render(r: &Report) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "== {}: uncertainty of every figure ({} draws of {} constants, Latin hypercube seed {}) ==",
        r.experiment,
        r.samples,
        r.constants.len(),
        r.seed
    );
    let d = r.constants.len();
    let noise = drivers::noise_level(d, r.samples);
    let _ = if noise < 1.0 {
        writeln!(
            out,
            "band: p5 / p50 / p95 over the draws; drivers: rank correlation with the figure (above {noise:.2}, what {d} unrelated constants reach by chance), and the figure's median in the constant's lowest -> highest quarter of draws\n"
        )
    } else {
        writeln!(
            out,
            "band: p5 / p50 / p95 over the draws; drivers: none can be named with {} draws: telling one of {d} constants from chance takes at least {} (--samples {})\n",
            r.samples,
            drivers::min_samples(d),
            drivers::min_samples(d)
        )
    };
    let w = r.rows.iter().map(|b| b.row.run.len()).max().unwrap_or(6).max(6) + 2;
    let _ = writeln!(
        out,
        "{:<w$}{:<20}{:>6}{:>10}{:>10}{:>10}{:>10}{:>12}  {:<8} {:<13}drivers",
        "Run", "figure", "unit", "model", "p5", "p50", "p95", "seed", "bar", "seed in band"
    );
    for b in &r.rows {
        let row = &b.row;
        let [p5, p50, p95] = row.band.unwrap_or([f64::NAN; 3]);
        let seed = match (row.published, row.published_range) {
            (Some(p), _) => num(p),
            (None, Some([lo, hi])) => format!("{}-{}", num(lo), num(hi)),
            _ => "-".into(),
        };
        let drivers: Vec<String> = b
            .drivers
            .iter()
            .map(|d| format!("{} ({:+.2}: {} -> {})", d.constant, d.rho, num(d.low), num(d.high)))
            .collect();
        let _ = writeln!(
            out,
            "{:<w$}{:<20}{:>6}{:>10}{:>10}{:>10}{:>10}{:>12}  {:<8} {:<13}{}",
            row.run,
            row.figure,
            row.unit,
            num(row.model),
            num(p5),
            num(p50),
            num(p95),
            seed,
            mark(row.inside),
            mark(row.published_in_band),
            drivers.join(", ")
        );
    }
    let rows: Vec<CompareRow> = r.rows.iter().map(|b| b.row.clone()).collect();
    out.push('\n');
    out.push_str(&latlab_report::verdict::summary_line(&rows));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_draws_every_constant_through_vary_and_merges_bands() {
        let exp = latlab_exp::builtin_experiment("sched-cost").unwrap();
        let plan = Plan::new(&exp, 4, 1).unwrap();
        assert_eq!(plan.jobs(), 5 * exp.runs.len());
        // The draw reached the runs: draw 0's machine has its draws.
        let k = plan
            .constants
            .iter()
            .position(|c| c.key == "machine.kernel_cpi")
            .unwrap();
        let first = plan.experiment(1).unwrap();
        assert_eq!(first.runs[0].config.machine.kernel_cpi, plan.draws[0][k]);
        let ui = plan
            .constants
            .iter()
            .position(|c| c.key == "catalog.unfile.misses")
            .unwrap();
        assert_eq!(
            first.runs[1].config.machine.catalog["unfile"].misses,
            Some(plan.draws[0][ui])
        );
        let report = plan.run_here(&|| {}).unwrap();
        // Job by job, as a Ray worker runs them: the same report.
        let per_job: Vec<_> = (0..plan.jobs()).map(|j| plan.job(j).unwrap()).collect();
        assert_eq!(plan.merge(per_job).unwrap(), report);
        assert!(plan.job(plan.jobs()).is_err());
        let again = Plan::new(&exp, 4, 1).unwrap().run_here(&|| {}).unwrap();
        assert_eq!(
            serde_json::to_string(&report).unwrap(),
            serde_json::to_string(&again).unwrap()
        );
        // The as-built figures are reproduce's.
        let results: Vec<_> = exp
            .runs
            .iter()
            .map(|r| crate::simulate(&r.config, &mut |_, _| std::ops::ControlFlow::Continue(())).unwrap())
            .collect();
        let rows = crate::rows(&exp, &results);
        assert_eq!(report.rows.len(), rows.len());
        for (b, r) in report.rows.iter().zip(&rows) {
            assert_eq!(
                CompareRow {
                    band: None,
                    ..b.row.clone()
                },
                *r
            );
            assert_eq!(b.values.len(), 4);
            let [p5, p50, p95] = b.row.band.unwrap();
            assert!(p5 <= p50 && p50 <= p95);
        }
        // The worst case of many hogs moves with the scheduler's per-task cost.
        let worst = report.rows.iter().find(|b| b.row.figure == "max_latency").unwrap();
        assert!(worst.values.iter().any(|v| *v != worst.row.model), "{worst:?}");
        // The JSON reads back as the same report.
        let text = serde_json::to_string(&report).unwrap();
        let back: Report = serde_json::from_str(&text).unwrap();
        assert_eq!(serde_json::to_string(&back).unwrap(), text);
        let t = render(&report);
        assert!(t.contains("max_latency") && t.contains("p95"), "{t}");
        assert!(plan.merge(vec![]).unwrap_err().to_string().contains("0 jobs' rows"));
    }
}
