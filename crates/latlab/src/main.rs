//! `latlab`: the command line. Parses arguments and hands each subcommand to its module;
//! the engines and reports live in their own crates.

#![forbid(unsafe_code)]

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[macro_use]
mod out;
mod probe_calibrate;
mod probe_cmd;
mod probe_scenario;
mod probe_spike;
mod progress;
mod read;
mod report_cmd;
mod sim_cmd;
mod swap_cmd;
mod uncertainty_cmd;
mod validate_cmd;
mod vs_cyclictest;

// The model allocates a path per system call and a task per SIGEV_THREAD expiry; mimalloc
// serves that faster than glibc's malloc (BENCHMARKS.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser, Debug)]
#[command(name = "latlab", version, about = "A laboratory for Linux scheduling latency")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Run an experiment file in the kernel model and print its results.
    Run(sim_cmd::RunArgs),
    /// Reproduce a seed's table: model figures beside the published ones.
    Reproduce(sim_cmd::ReproduceArgs),
    /// Every figure of an experiment with its band: draws of the constants within their
    /// sources' ranges, the drivers of each figure.
    Uncertainty(uncertainty_cmd::UncertaintyArgs),
    /// Measure wakeup and write latency on this machine, under real load.
    Probe(Box<probe_cmd::ProbeArgs>),
    /// Compare the swap-slot allocators of seed 003 at every fill level.
    SwapBench(swap_cmd::SwapBenchArgs),
    /// Reports from saved results of either engine: compare, plot, csv, trace, html.
    Report(report_cmd::ReportArgs),
    /// Run scenarios on this machine and on the model's twin of it, and judge the model
    /// figure by figure (docs/validation.md).
    Validate(Box<validate_cmd::ValidateArgs>),
}

fn main() -> ExitCode {
    // A `--load` child and the probe's guardian re-execute this binary; each runs here and
    // never returns.
    latlab_probe::load::child_main_if_requested();
    latlab_probe::scenario::child_main_if_requested();
    latlab_probe::guard::main_if_requested();
    let cli = Cli::parse();
    // The model's commands print their report after minutes of work: standard output that
    // cannot take it is an error now. (The probe writes its files first, then the table.)
    let long = matches!(
        cli.cmd,
        Cmd::Run(_) | Cmd::Reproduce(_) | Cmd::Uncertainty(_) | Cmd::SwapBench(_)
    );
    let checked = if long { out::check() } else { Ok(()) };
    let r = checked.map_err(anyhow::Error::from).and_then(|()| match cli.cmd {
        Cmd::Run(a) => sim_cmd::run(a),
        Cmd::Reproduce(a) => sim_cmd::reproduce(a),
        Cmd::Uncertainty(a) => uncertainty_cmd::run(a),
        Cmd::Probe(a) => probe_cmd::run(*a),
        Cmd::SwapBench(a) => swap_cmd::run(a),
        Cmd::Report(a) => report_cmd::run(a),
        Cmd::Validate(a) => validate_cmd::run(*a),
    });
    match r.and_then(|code| Ok(out::flush().map(|()| code)?)) {
        Ok(code) => code,
        Err(e) => match e.chain().find_map(|c| c.downcast_ref::<out::StdoutError>()) {
            // The reader is gone (`latlab reproduce | head`): end quietly, with the status a
            // shell gives a tool that SIGPIPE ended (128 + 13).
            Some(w) if w.reader_gone() => ExitCode::from(141),
            Some(w) => {
                errln!("latlab: error: {w}");
                ExitCode::from(2)
            }
            None => {
                errln!("latlab: error: {e:#}");
                ExitCode::from(2)
            }
        },
    }
}
