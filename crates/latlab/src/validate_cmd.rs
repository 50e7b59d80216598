//! `latlab validate [SCENARIO...]`: each scenario run on this machine (the probe, `--runs`
//! times) and on the model's twin of it (a machine file calibrated on the spot, or
//! `--machine`), every stream's figures side by side with a verdict
//! (`latlab_report::validate`), and the suite's tally against issue 31's bar.
//!
//! The runs go one after another, never side by side: the model's own CPU time would be
//! load on the machine being measured. The model runs first (it is quick and deterministic),
//! then the machine's runs of each scenario.
use clap::Args;
use latlab_core::RunResult;
use latlab_probe::scenario::{self, ScenarioConfig};
use latlab_report::validate::{self, Noise, ScenarioRows, Tally};
use latlab_scenario::Scenario;
use latlab_sim::{MachineProfile, Variant};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct ValidateArgs {
    /// Scenario files (TOML or rt-app JSON, docs/experiments.md "Scenarios"); default every
    /// `.toml` and `.json` file in ./scenarios/, the suite.
    pub scenarios: Vec<PathBuf>,
    /// Runs of each scenario on this machine (its figure is their median).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub runs: u32,
    /// The model's machine file; default: calibrated on the spot (`latlab probe calibrate`).
    #[arg(long, value_name = "FILE")]
    pub machine: Option<PathBuf>,
    /// Calibrate with `--quick` (seconds, wider spreads) when no --machine is given.
    #[arg(long)]
    pub quick_calibrate: bool,
    /// The model's kernel variant (a built-in name or a file); default the twin's:
    /// `6.18-eevdf-` and the machine's preemption model, at its HZ.
    #[arg(long)]
    pub variant: Option<String>,
    /// Run time of each run (`5s`, `1m`; a bare number is seconds); default each scenario's
    /// `duration_s`.
    #[arg(long, value_parser = crate::probe_cmd::p_duration)]
    pub duration: Option<u64>,
    /// The model's PRNG seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Also run each scenario on the model with the machine's host noise replayed
    /// (`[host.noise]`: its gaps on every CPU), and show that figure beside each one the
    /// noise rule sets aside (not counted either way).
    #[arg(long)]
    pub replay_noise: bool,
    /// Run the machine's runs without recording the scheduler, irq and timer tracepoints.
    /// By default (root, tracefs) every run's kept worst samples are explained from them,
    /// the host's time in each (a late interrupt to a CPU idle or in a compute loop) apart
    /// from the kernel's, and a maximum is the noise's when that time decides its verdict;
    /// without, the calibration's noise rule decides.
    #[arg(long)]
    pub no_trace: bool,
    /// Print the rows and the tally as JSON instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Write an HTML page of the verdicts and every run (as `latlab report html` shows them).
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Write every run's RunResult into DIR (`SCENARIO-model.json`, `SCENARIO-machine-N.json`),
    /// for `latlab report compare` and the rest.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Directory for the scenarios' files and the loads' scratch, each run in a private (0700)
    /// directory made there (default: the system temp dir).
    #[arg(long)]
    pub scratch: Option<PathBuf>,
}

/// A scenario with the file it came from.
struct Named {
    file: PathBuf,
    s: Scenario,
}

/// The scenario files: those given, or every `.toml` and `.json` in ./scenarios/ in name
/// order.
fn scenario_files(given: &[PathBuf]) -> anyhow::Result<Vec<PathBuf>> {
    if !given.is_empty() {
        return Ok(given.to_vec());
    }
    let dir = Path::new("scenarios");
    let rd = std::fs::read_dir(dir).map_err(|e| {
        anyhow::anyhow!("no SCENARIO given and ./scenarios/ cannot be read ({e}): name scenario files, or run from the repository's top directory")
    })?;
    let mut files: Vec<PathBuf> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| matches!(p.extension().and_then(|e| e.to_str()), Some("toml" | "json")))
        .collect();
    files.sort();
    if files.is_empty() {
        anyhow::bail!("./scenarios/ holds no .toml or .json scenario file");
    }
    Ok(files)
}

/// The model's machine: `--machine`'s file, or this machine calibrated now.
fn twin_machine(a: &ValidateArgs) -> anyhow::Result<MachineProfile> {
    if let Some(p) = &a.machine {
        let name = p.display().to_string();
        let files = |_: &str| crate::sim_cmd::read_bounded(p).map(|t| (name.clone(), t));
        return latlab_exp::machine("command line (--machine)", &name, 0, &files).map_err(anyhow::Error::from);
    }
    let opts = latlab_probe::calibrate::Options {
        quick: a.quick_calibrate,
        dir: a.scratch.clone().unwrap_or_else(std::env::temp_dir),
        max_cpus: latlab_sim::machine::MAX_CPUS,
    };
    let cal = latlab_probe::calibrate::run(&opts, &mut |step| errln!("latlab validate: calibrating: {step}"))
        .map_err(|e| anyhow::anyhow!("latlab validate: calibrating this machine: {e}"))?;
    crate::probe_calibrate::check(Path::new("calibrated.toml"), &cal.toml()).map_err(|e| {
        anyhow::anyhow!("the calibrated machine file does not load (a bug in latlab probe calibrate): {e}")
    })
}

/// The model's kernel: `--variant`, or the twin's, `6.18-eevdf-` and the machine's
/// preemption model (`[host.kernel]`), with the machine's HZ.
fn twin_variant(a: &ValidateArgs, m: &MachineProfile) -> anyhow::Result<Variant> {
    let files = |name: &str| crate::sim_cmd::read_bounded(Path::new(name)).map(|t| (name.to_string(), t));
    if let Some(v) = &a.variant {
        return latlab_exp::variant("command line (--variant)", v, 0, &files).map_err(anyhow::Error::from);
    }
    let Some(k) = m.host.as_ref().and_then(|h| h.kernel.as_ref()) else {
        anyhow::bail!(
            "{}: no [host.kernel] (the machine's preemption model and HZ): give --variant, or a machine file from `latlab probe calibrate`",
            machine_name(a)
        );
    };
    let name = match k.preemption.as_str() {
        p @ ("none" | "full" | "lazy") => format!("6.18-eevdf-{p}"),
        p => anyhow::bail!(
            "{}: field `host.kernel.preemption`: `{p}`, which no built-in 6.18 variant models yet (none, full, lazy): give --variant",
            machine_name(a)
        ),
    };
    let mut v = latlab_exp::variant("the machine's [host.kernel]", &name, 0, &latlab_exp::no_files)?;
    v.hz = k.hz;
    Ok(v)
}

/// The machine file's name in errors.
fn machine_name(a: &ValidateArgs) -> String {
    match &a.machine {
        Some(p) => format!("--machine {}", p.display()),
        None => "the calibrated machine".into(),
    }
}

/// The machine's noise as `[host.noise]` measured it.
fn noise(m: &MachineProfile) -> Option<Noise> {
    let n = m.host.as_ref()?.noise.as_ref()?;
    Some(Noise {
        max_gap_ns: (n.max_us * 1e3).round() as u64,
        lost_fraction: n.lost_percent / 100.0,
    })
}

/// The `--json` document.
#[derive(Serialize)]
struct Doc<'a> {
    machine: &'a str,
    variant: &'a str,
    runs: u32,
    scenarios: &'a [ScenarioRows],
    tally: Tally,
}

pub fn run(a: ValidateArgs) -> anyhow::Result<ExitCode> {
    latlab_probe::signals::install();
    // Every file is read and checked before anything runs.
    let mut scenarios = Vec::new();
    for file in scenario_files(&a.scenarios)? {
        let s = latlab_scenario::load(&file)?;
        scenarios.push(Named { file, s });
    }
    let scratch = a.scratch.clone().unwrap_or_else(std::env::temp_dir);
    if !scratch.is_dir() {
        anyhow::bail!("--scratch {}: not a directory", scratch.display());
    }
    if let Some(d) = &a.out {
        std::fs::create_dir_all(d).map_err(|e| anyhow::anyhow!("--out {}: {e}", d.display()))?;
    }
    let machine = twin_machine(&a)?;
    let variant = twin_variant(&a, &machine)?;
    let noise = noise(&machine);
    errln!(
        "latlab validate: {} scenario(s), {} run(s) each on this machine, the model's twin `{}` under `{}`",
        scenarios.len(),
        a.runs,
        machine.name,
        variant.name
    );

    // Each scenario's model run, and with --replay-noise the one replaying the noise.
    let mut models = Vec::new();
    for n in &scenarios {
        let mut cfg = latlab_exp::scenario::config(&n.s, machine.clone(), variant.clone(), a.duration, a.seed)?;
        let mut pair = Vec::new();
        for replay in [false, true].into_iter().take(1 + usize::from(a.replay_noise)) {
            cfg.replay_noise = replay;
            let how = if replay {
                " with the machine's noise replayed"
            } else {
                ""
            };
            errln!("latlab validate: {} on the model{how}", n.s.name);
            let mut go_on = |_, _| match latlab_probe::signals::stop_requested() {
                true => std::ops::ControlFlow::Break(()),
                false => std::ops::ControlFlow::Continue(()),
            };
            let mut r = latlab_batch::simulate(&cfg, &mut go_on)
                .map_err(|e| anyhow::anyhow!("{}: the model{how}: {e:#}", n.file.display()))?;
            if let Some(sig) = latlab_probe::signals::stopped_by() {
                errln!("latlab validate: stopped by signal {sig}; nothing judged");
                return Ok(ExitCode::from((128 + sig) as u8));
            }
            latlab_exp::scenario::keep_measured(&n.s, &mut r);
            pair.push(r);
        }
        let replayed = (pair.len() == 2).then(|| pair.pop()).flatten();
        models.push((pair.pop().expect("the kernel-only run"), replayed));
    }

    let cfg = ScenarioConfig {
        duration_ns: a.duration,
        scratch,
        keep_worst: 10,
        // The running binary through the kernel's own link to it (as `--load`).
        exe: Some("/proc/self/exe".into()),
        trace_above_ns: (!a.no_trace).then_some(0),
    };
    let mut rows = Vec::new();
    // Each scenario's runs, the model's first, for the HTML page.
    let mut saved: Vec<(String, Vec<RunResult>)> = Vec::new();
    for (n, (model, replayed)) in scenarios.iter().zip(models) {
        let mut runs = Vec::new();
        for i in 1..=a.runs {
            errln!("latlab validate: {} on this machine, run {i} of {}", n.s.name, a.runs);
            let out = scenario::run(&n.s, &cfg).map_err(|e| anyhow::anyhow!("{}: {e}", n.file.display()))?;
            for w in &out.warnings {
                errln!("latlab validate: warning: {}: {w}", n.s.name);
            }
            if out.interrupted {
                let sig = latlab_probe::signals::stopped_by().unwrap_or(2);
                errln!("latlab validate: stopped by signal {sig}; nothing judged");
                return Ok(ExitCode::from((128 + sig) as u8));
            }
            runs.push(out.result);
        }
        let mut sc = validate::scenario_rows(&n.s.name, &model, &runs, noise);
        if let Some(r) = &replayed {
            validate::with_replayed(&mut sc, r);
        }
        rows.push(sc);
        if let Some(d) = &a.out {
            write_json(&d.join(format!("{}-model.json", n.s.name)), &model)?;
            if let Some(r) = &replayed {
                write_json(&d.join(format!("{}-model-noise.json", n.s.name)), r)?;
            }
            for (i, r) in runs.iter().enumerate() {
                write_json(&d.join(format!("{}-machine-{}.json", n.s.name, i + 1)), r)?;
            }
        }
        saved.push((
            n.s.name.clone(),
            std::iter::once(model).chain(replayed).chain(runs).collect(),
        ));
    }

    let all: Vec<_> = rows.iter().flat_map(|s| s.rows.iter().cloned()).collect();
    let tally = Tally::of(&all);
    let table = validate::render(&rows, a.runs as usize);
    if a.json {
        let doc = Doc {
            machine: &machine.name,
            variant: &variant.name,
            runs: a.runs,
            scenarios: &rows,
            tally,
        };
        outln!("{}", serde_json::to_string_pretty(&doc)?)?;
    } else {
        out!("{table}")?;
    }
    if let Some(p) = &a.html {
        let title = format!("{} beside {}", variant.name, machine.name);
        let verdicts = validate::render_html(&rows, a.runs as usize);
        let page = latlab_report::html::render_validate(&title, &verdicts, &saved, 10);
        std::fs::write(p, page).map_err(|e| anyhow::anyhow!("--html {}: {e}", p.display()))?;
    }
    Ok(match tally.passes() {
        Some(false) => ExitCode::from(1),
        _ => ExitCode::SUCCESS,
    })
}

/// A result as pretty JSON at `path`.
fn write_json(path: &Path, r: &RunResult) -> anyhow::Result<()> {
    std::fs::write(path, serde_json::to_vec_pretty(r)?).map_err(|e| anyhow::anyhow!("--out {}: {e}", path.display()))
}
