//! `latlab`: the command line. Parses arguments and hands each subcommand to its module;
//! the engines and reports live in their own crates.

use clap::{Parser, Subcommand};
use std::process::ExitCode;

mod probe_cmd;
mod progress;
mod report_cmd;
mod sim_cmd;
mod swap_cmd;
mod vs_cyclictest;

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
    /// Measure wakeup and write latency on this machine, under real load.
    Probe(probe_cmd::ProbeArgs),
    /// Compare the swap-slot allocators of seed 003 at every fill level.
    SwapBench(swap_cmd::SwapBenchArgs),
    /// Reports from saved results of either engine: compare, plot, csv, trace, html.
    Report(report_cmd::ReportArgs),
}

fn main() -> ExitCode {
    // A `--load` child re-executes this binary; it runs its load here and never returns.
    latlab_probe::load::child_main_if_requested();
    let cli = Cli::parse();
    let r = match cli.cmd {
        Cmd::Run(a) => sim_cmd::run(a),
        Cmd::Reproduce(a) => sim_cmd::reproduce(a),
        Cmd::Probe(a) => probe_cmd::run(a),
        Cmd::SwapBench(a) => swap_cmd::run(a),
        Cmd::Report(a) => report_cmd::run(a),
    };
    match r {
        Ok(code) => code,
        Err(e) => {
            eprintln!("latlab: error: {e:#}");
            ExitCode::from(2)
        }
    }
}
