//! `latlab probe`: owned by the probe work (issue 3). Placeholder until it lands.
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct ProbeArgs {}

pub fn run(_a: ProbeArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("latlab probe is not built yet")
}
