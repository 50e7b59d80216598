//! `latlab probe scenario FILE`: run a scenario (`scenarios/*.toml` or rt-app JSON) on this
//! machine (crates/latlab-probe's `scenario`), its periodic tasks measured as the model
//! measures them, and print/write the shared result.
use crate::probe_cmd::{add_load_report, finish, Measured, OutputOpts};
use clap::Args;
use latlab_probe::load::LoadSpec;
use latlab_probe::scenario::{self, ScenarioConfig};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct ScenarioArgs {
    /// The scenario: a scenario TOML file (docs/experiments.md "Scenarios") or an rt-app
    /// JSON file (`.json`), run by latlab itself, not by rt-app.
    pub file: PathBuf,
    /// Run time (`5s`, `2m`; a bare number is seconds); default the scenario's `duration_s`.
    #[arg(long, value_parser = crate::probe_cmd::p_duration)]
    pub duration: Option<u64>,
    /// Directory for the scenario's files and the loads' scratch, each in a private (0700)
    /// directory made there (default: the system temp dir).
    #[arg(long)]
    pub scratch: Option<PathBuf>,
    /// Write the RunResult as JSON (`-`: standard output; the table then goes to stderr).
    #[arg(short = 'o', long = "json", value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Exit 0 even when a load died before the run ended (by default: exit 3).
    #[arg(long)]
    pub allow_load_failure: bool,
    /// Explain the worst samples above this latency (`100us`; bare = us) from the scheduler,
    /// irq and timer tracepoints recorded on every CPU (root, tracefs), the host's time
    /// (the hypervisor's) apart from the kernel's, and split every wakeup as rtla timerlat.
    #[arg(long, value_parser = crate::probe_cmd::p_us)]
    pub trace_above: Option<u64>,
}

pub fn run(a: ScenarioArgs) -> anyhow::Result<ExitCode> {
    let s = latlab_scenario::load(&a.file)?;
    let scratch = a.scratch.clone().unwrap_or_else(std::env::temp_dir);
    let meta = std::fs::metadata(&scratch).map_err(|e| anyhow::anyhow!("--scratch {}: {e}", scratch.display()))?;
    if !meta.is_dir() {
        anyhow::bail!("--scratch {}: not a directory", scratch.display());
    }
    let cfg = ScenarioConfig {
        duration_ns: a.duration,
        scratch,
        keep_worst: 10,
        // The running binary through the kernel's own link to it (as `--load`).
        exe: Some("/proc/self/exe".into()),
        trace_above_ns: a.trace_above,
    };
    let duration = s
        .duration(cfg.duration_ns)
        .map_err(|e| anyhow::anyhow!("{}: {e}: give --duration", a.file.display()))?;
    errln!(
        "latlab probe: scenario {} ({} s): {} task(s){}",
        s.name,
        duration as f64 / 1e9,
        s.tasks.len(),
        match s.loads.len() {
            0 => String::new(),
            _ => format!(
                ", load {}",
                s.loads
                    .iter()
                    .map(|l| scenario::load_spec(l).name())
                    .collect::<Vec<_>>()
                    .join(" + ")
            ),
        }
    );
    let steal = latlab_probe::meta::Steal::start();
    let out = scenario::run(&s, &cfg).map_err(|e| anyhow::anyhow!("{}: {e}", a.file.display()))?;
    for w in &out.warnings {
        errln!("latlab probe: warning: {w}");
    }
    if s.measure.is_empty() {
        errln!(
            "latlab probe: warning: the scenario measures no stream: no task has a periodic step (an rt-app thread, a `timer`)"
        );
    }
    let mut result = out.result;
    result.meta.settings.insert("steal".into(), steal.finish());
    let specs: Vec<LoadSpec> = s.loads.iter().map(scenario::load_spec).collect();
    if let Some(rep) = &out.loads {
        add_load_report(&mut result, rep, &specs);
    }
    let o = OutputOpts {
        json: a.json,
        ..OutputOpts::none()
    };
    finish(
        Measured {
            result,
            interrupted: out.interrupted,
            extra: String::new(),
            histograms: Vec::new(),
            broke: None,
        },
        &o,
        a.allow_load_failure,
    )
}
