//! `latlab._latlab`: the Python package's native module (PyO3). Every function returns the
//! JSON text the CLI prints or writes (`python/latlab/__init__.py` turns it into dicts), so
//! Python and the CLI share one encoding. The job functions (`*_jobs`, `*_job`, `*_merge`)
//! are what `latlab.ray` spreads over a cluster: a job is one run, planned and merged by
//! `latlab_batch` exactly as the CLI plans and merges it.

#![forbid(unsafe_code)]

use latlab_batch::sweep::Sweep;
use latlab_batch::uncertainty::Plan;
use latlab_exp::Experiment;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::sync::Mutex;
use std::time::Instant;

fn value_err(e: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(e.to_string())
}

fn run_err(e: anyhow::Error) -> PyErr {
    PyRuntimeError::new_err(format!("{e:#}"))
}

fn json<T: serde::Serialize>(v: &T) -> PyResult<String> {
    serde_json::to_string(v).map_err(value_err)
}

fn builtin(name: &str) -> PyResult<Experiment> {
    latlab_exp::builtin_experiment(name).map_err(value_err)
}

/// `exp`'s runs on this machine's cores; with `progress`, a Python callable, it is called as
/// each run ends with a dict: `experiment`, `run` (its label), `done` and `runs` (how many of
/// how many), `simulated_s`, `elapsed_s`. An exception it raises stops the runs still going
/// and is raised again here.
fn run_here(py: Python<'_>, exp: &Experiment, progress: Option<PyObject>) -> PyResult<Vec<latlab_core::RunResult>> {
    let raised: Mutex<Option<PyErr>> = Mutex::new(None);
    let (count, t0) = (Mutex::new(0usize), Instant::now());
    let done = |run: &latlab_exp::Run, r: &latlab_core::RunResult| {
        let Some(cb) = &progress else {
            return ControlFlow::Continue(());
        };
        Python::with_gil(|py| {
            let mut n = count.lock().expect("not poisoned");
            *n += 1;
            let event = PyDict::new(py);
            let call = (|| {
                event.set_item("experiment", &exp.name)?;
                event.set_item("run", &run.label)?;
                event.set_item("done", *n)?;
                event.set_item("runs", exp.runs.len())?;
                event.set_item("simulated_s", r.meta.duration_ns as f64 / 1e9)?;
                event.set_item("elapsed_s", t0.elapsed().as_secs_f64())?;
                cb.call1(py, (event,))
            })();
            match call {
                Ok(_) => ControlFlow::Continue(()),
                Err(e) => {
                    raised.lock().expect("not poisoned").get_or_insert(e);
                    ControlFlow::Break(())
                }
            }
        })
    };
    let results = py.allow_threads(|| latlab_batch::run_all_here(exp, &done));
    if let Some(e) = raised.into_inner().expect("not poisoned") {
        return Err(e);
    }
    results.map_err(run_err)
}

/// Run an experiment given as text (built-in machines and variants by name, files by path
/// relative to the working directory), with `overrides` (`--vary` keys, one value each) and
/// an optional seed; the full result of every run by label, as `latlab run --out` writes it.
#[pyfunction]
#[pyo3(signature = (experiment_text, overrides, seed=None, progress=None))]
fn run(
    py: Python<'_>,
    experiment_text: &str,
    overrides: Vec<(String, String)>,
    seed: Option<u64>,
    progress: Option<PyObject>,
) -> PyResult<String> {
    let files = |p: &str| std::fs::read_to_string(p).map(|t| (p.to_string(), t));
    let mut exp = latlab_exp::load_with("experiment_text", experiment_text, &files).map_err(value_err)?;
    for (k, v) in &overrides {
        exp = latlab_exp::vary(&exp, "overrides", k, v).map_err(value_err)?;
    }
    if let Some(s) = seed {
        for r in &mut exp.runs {
            r.config.seed = s;
        }
    }
    let results = run_here(py, &exp, progress)?;
    let by_label: BTreeMap<&str, &latlab_core::RunResult> =
        exp.runs.iter().map(|r| r.label.as_str()).zip(&results).collect();
    json(&by_label)
}

/// `latlab reproduce NAME --json`'s document; `progress` as [`run_here`] calls it.
#[pyfunction]
#[pyo3(signature = (name, progress=None))]
fn reproduce(py: Python<'_>, name: &str, progress: Option<PyObject>) -> PyResult<String> {
    let exp = builtin(name)?;
    let results = run_here(py, &exp, progress)?;
    let (rows, _) = latlab_batch::banded_rows(&exp, &results).map_err(value_err)?;
    json(&latlab_batch::reproduce_doc(&exp, &rows))
}

fn plan(name: &str, samples: usize, seed: u64) -> PyResult<Plan> {
    Plan::new(&builtin(name)?, samples, seed).map_err(value_err)
}

/// `latlab uncertainty NAME --samples N --seed S --json`, run on this machine's cores.
#[pyfunction]
fn uncertainty(py: Python<'_>, name: &str, samples: usize, seed: u64) -> PyResult<String> {
    let p = plan(name, samples, seed)?;
    let report = py.allow_threads(|| p.run_here(&|| {})).map_err(run_err)?;
    json(&report)
}

/// The number of jobs (runs) of an uncertainty plan.
#[pyfunction]
fn uncertainty_jobs(name: &str, samples: usize, seed: u64) -> PyResult<usize> {
    Ok(plan(name, samples, seed)?.jobs())
}

/// Job `job` of an uncertainty plan: its rows, as JSON.
#[pyfunction]
fn uncertainty_job(py: Python<'_>, name: &str, samples: usize, seed: u64, job: usize) -> PyResult<String> {
    let p = plan(name, samples, seed)?;
    json(&py.allow_threads(|| p.job(job)).map_err(run_err)?)
}

/// Every job's rows (in job order) merged as `latlab uncertainty --json` prints them.
#[pyfunction]
fn uncertainty_merge(name: &str, samples: usize, seed: u64, rows: Vec<String>) -> PyResult<String> {
    let p = plan(name, samples, seed)?;
    json(&p.merge(parse_rows(&rows)?).map_err(run_err)?)
}

fn sweep(name: &str, key: &str, values: Vec<String>) -> PyResult<Sweep> {
    Sweep::new(&builtin(name)?, key, &values).map_err(value_err)
}

/// The number of jobs (runs) of a sweep of `key` over `values`.
#[pyfunction]
fn sweep_jobs(name: &str, key: &str, values: Vec<String>) -> PyResult<usize> {
    Ok(sweep(name, key, values)?.jobs())
}

/// Job `job` of a sweep: its rows, as JSON.
#[pyfunction]
fn sweep_job(py: Python<'_>, name: &str, key: &str, values: Vec<String>, job: usize) -> PyResult<String> {
    let s = sweep(name, key, values)?;
    json(&py.allow_threads(|| s.job(job)).map_err(run_err)?)
}

/// Every job's rows merged as `latlab reproduce NAME --vary KEY=V1,... --json` prints them.
#[pyfunction]
fn sweep_merge(name: &str, key: &str, values: Vec<String>, rows: Vec<String>) -> PyResult<String> {
    let s = sweep(name, key, values)?;
    json(&s.merge(parse_rows(&rows)?))
}

fn parse_rows(rows: &[String]) -> PyResult<Vec<Vec<latlab_batch::CompareRow>>> {
    rows.iter()
        .map(|r| serde_json::from_str(r).map_err(value_err))
        .collect()
}

/// The built-in experiments' names.
#[pyfunction]
fn experiments() -> Vec<&'static str> {
    latlab_exp::builtin::EXPERIMENTS.iter().map(|(n, _)| *n).collect()
}

#[pymodule]
fn _latlab(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(reproduce, m)?)?;
    m.add_function(wrap_pyfunction!(uncertainty, m)?)?;
    m.add_function(wrap_pyfunction!(uncertainty_jobs, m)?)?;
    m.add_function(wrap_pyfunction!(uncertainty_job, m)?)?;
    m.add_function(wrap_pyfunction!(uncertainty_merge, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_jobs, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_job, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_merge, m)?)?;
    m.add_function(wrap_pyfunction!(experiments, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
