//! A `--vary KEY=V1,V2,...` sweep: the experiment once per value, every value's runs one job
//! each, and the document `reproduce --vary --json` prints.

use crate::{regroup, run_rows};
use latlab_exp::{ExpError, Experiment};
use latlab_report::seed_table::CompareRow;

/// Where a sweep's settings come from, in errors.
pub const ORIGIN: &str = "command line (--vary)";

/// A sweep, every value checked.
pub struct Sweep {
    pub name: String,
    pub key: String,
    pub values: Vec<String>,
    /// The experiment with `key` set to each value.
    pub exps: Vec<Experiment>,
}

impl Sweep {
    /// `exp` once per value of `key` (each checked as the experiment file's own fields are).
    pub fn new(exp: &Experiment, key: &str, values: &[String]) -> Result<Sweep, ExpError> {
        let exps = values
            .iter()
            .map(|v| latlab_exp::vary(exp, ORIGIN, key, v))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Sweep {
            name: exp.name.clone(),
            key: key.into(),
            values: values.to_vec(),
            exps,
        })
    }

    /// Jobs: every run of every value, value by value.
    pub fn jobs(&self) -> usize {
        self.exps.iter().map(|e| e.runs.len()).sum()
    }

    /// Job `j`'s rows.
    pub fn job(&self, j: usize) -> anyhow::Result<Vec<CompareRow>> {
        let runs = self.exps.first().map_or(1, |e| e.runs.len()).max(1);
        let exp = self
            .exps
            .get(j / runs)
            .ok_or_else(|| anyhow::anyhow!("sweep of {} has {} jobs, not {}", self.name, self.jobs(), j + 1))?;
        run_rows(exp, j % runs)
    }

    /// Every job's rows (in job order) as the sweep's document.
    pub fn merge(&self, per_job: Vec<Vec<CompareRow>>) -> serde_json::Value {
        let columns = match self.exps.first() {
            Some(e) => regroup(e, per_job),
            None => Vec::new(),
        };
        doc(&self.name, &self.key, &self.values, &columns)
    }
}

/// `reproduce --vary --json`'s document: each value with its rows.
pub fn doc(name: &str, key: &str, values: &[impl AsRef<str>], columns: &[Vec<CompareRow>]) -> serde_json::Value {
    serde_json::json!({
        "experiment": name,
        "vary": key,
        "runs": values
            .iter()
            .zip(columns)
            .map(|(v, rows)| serde_json::json!({"value": v.as_ref(), "rows": rows}))
            .collect::<Vec<_>>(),
    })
}
