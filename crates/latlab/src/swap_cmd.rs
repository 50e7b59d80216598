//! `latlab swap-bench`: owned by the swap-allocator work (issue 4). Placeholder until it lands.
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct SwapBenchArgs {}

pub fn run(_a: SwapBenchArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("latlab swap-bench is not built yet")
}
