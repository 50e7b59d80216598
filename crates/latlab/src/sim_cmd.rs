//! `latlab run` and `latlab reproduce`: the kernel model's commands.
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct RunArgs {}
#[derive(clap::Args, Debug)]
pub struct ReproduceArgs {}

pub fn run(_a: RunArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("not built yet")
}
pub fn reproduce(_a: ReproduceArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("not built yet")
}
