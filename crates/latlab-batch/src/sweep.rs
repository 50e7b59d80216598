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
        check_values(key, values)?;
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

/// The values of `--vary KEY=V1,V2,...` (`list`, split at commas, each trimmed), checked as
/// [`check_values`] does.
pub fn values(key: &str, list: &str) -> Result<Vec<String>, ExpError> {
    let values: Vec<String> = list.split(',').map(|v| v.trim().to_string()).collect();
    check_values(key, &values)?;
    Ok(values)
}

/// A sweep's values: at least one, none empty, none twice (each would run the same runs
/// again); the error names `--vary`, the key and the value.
pub fn check_values(key: &str, values: &[String]) -> Result<(), ExpError> {
    let bad = |why: String| ExpError::Field {
        origin: ORIGIN.into(),
        line: 0,
        field: key.into(),
        why,
    };
    if values.is_empty() {
        return Err(bad("needs at least one value".into()));
    }
    for (i, v) in values.iter().enumerate() {
        if v.trim().is_empty() {
            return Err(bad(format!(
                "value {} of {} is empty (`{key}={}`)",
                i + 1,
                values.len(),
                values.join(",")
            )));
        }
        if values[..i].iter().any(|w| w.trim() == v.trim()) {
            return Err(bad(format!(
                "value `{}` is given twice (`{key}={}`): each value runs once",
                v.trim(),
                values.join(",")
            )));
        }
    }
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_and_repeated_values_are_refused_naming_vary_the_key_and_the_value() {
        assert_eq!(values("seed", " 1, 2 ").unwrap(), ["1", "2"]);
        let e = values("seed", "1,,2").unwrap_err().to_string();
        assert_eq!(
            e,
            "command line (--vary): field `seed`: value 2 of 3 is empty (`seed=1,,2`)"
        );
        let e = values("seed", "1, 1").unwrap_err().to_string();
        assert!(
            e.starts_with("command line (--vary): field `seed`: value `1` is given twice"),
            "{e}"
        );
        assert!(values("hogs", "")
            .unwrap_err()
            .to_string()
            .contains("value 1 of 1 is empty"));
        let exp = latlab_exp::builtin_experiment("sched-cost").unwrap();
        let twice = Sweep::new(&exp, "hogs", &["10".into(), "10".into()]).err().unwrap();
        assert!(twice.to_string().contains("given twice"), "{twice}");
    }
}
