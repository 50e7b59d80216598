//! The probe's options around its measuring threads and its spikes: `--cgroup PATH` (the
//! cgroup they run in) and `--on-threshold CMD` (a command run at a spike), with what they
//! add to the result and the terminal.
use clap::Args;
use latlab_core::RunResult;
use latlab_probe::cgroup::{Entered, Target};
use latlab_probe::on_threshold::{Action, Report};
use latlab_probe::parse;
use std::path::PathBuf;
use std::time::Duration;

fn p_every(s: &str) -> Result<Duration, String> {
    parse::duration_ns(s, "s").map(Duration::from_nanos)
}

#[derive(Args, Debug, Clone)]
pub struct SpikeOpts {
    /// Run the measuring threads in this cgroup v2 directory: a threaded cgroup takes each
    /// measuring thread (cgroup.threads), any other the probe's process (cgroup.procs: the
    /// loads and the guardian stay where they are), moved back when the run ends.
    #[arg(long, value_name = "PATH")]
    pub cgroup: Option<PathBuf>,
    /// Run CMD when a sample reaches the threshold (--break-above when given, else
    /// --trace-above, or --explain's 100us), with the ftrace recording stopped until it ends;
    /// once, unless --on-threshold-every. The sample is in its environment (LATLAB_LATENCY_NS,
    /// LATLAB_CPU, LATLAB_STREAM, LATLAB_AT_NS, LATLAB_TRACE ...). CMD's words are split as a
    /// shell splits them, nothing expanded; see --on-threshold-shell.
    #[arg(long, value_name = "CMD")]
    pub on_threshold: Option<String>,
    /// Run --on-threshold's CMD with `/bin/sh -c CMD` (variables, pipes, redirection).
    #[arg(long, requires = "on_threshold")]
    pub on_threshold_shell: bool,
    /// Run --on-threshold's CMD at every crossing, at most once per DURATION (`1s`, `500ms`;
    /// bare = seconds), not only the first; crossings while it runs are skipped.
    #[arg(long, value_name = "DURATION", requires = "on_threshold", value_parser = p_every)]
    pub on_threshold_every: Option<Duration>,
}

impl SpikeOpts {
    /// The checked `--cgroup` directory.
    pub fn target(&self) -> anyhow::Result<Option<Target>> {
        self.cgroup
            .as_deref()
            .map(|p| Target::open(p).map_err(|e| anyhow::anyhow!("--cgroup {e}")))
            .transpose()
    }

    /// The checked `--on-threshold` action, its threshold `--break-above` (the run then ends
    /// at the crossing, so the recording stays stopped) or else `trace_above_ns`.
    pub fn action(&self, break_above: Option<u64>, trace_above_ns: Option<u64>) -> anyhow::Result<Option<Action>> {
        let Some(cmd) = &self.on_threshold else { return Ok(None) };
        if break_above.is_some() && self.on_threshold_every.is_some() {
            anyhow::bail!(
                "--on-threshold-every: the run ends at --break-above's first crossing, so the command runs once \
                 (drop one of them)"
            );
        }
        let threshold = break_above.or(trace_above_ns).ok_or_else(|| {
            anyhow::anyhow!(
                "--on-threshold needs a threshold: --trace-above US, --explain (100 us) or --break-above US"
            )
        })?;
        Action::new(
            cmd,
            self.on_threshold_shell,
            threshold,
            self.on_threshold_every,
            break_above.is_none(),
        )
        .map(Some)
        .map_err(|e| anyhow::anyhow!("--on-threshold {e}"))
    }
}

/// Move the process (a domain cgroup) or the calling thread (a threaded one) into `target`,
/// recording where it landed as the `cgroup` setting, read back from /proc.
pub fn enter(target: &Target) -> anyhow::Result<(Entered, String)> {
    let entered = target.enter().map_err(|e| anyhow::anyhow!("--cgroup {e}"))?;
    let who = match target.threaded() {
        true => latlab_probe::clock::gettid(),
        false => std::process::id(),
    };
    let path = latlab_probe::cgroup::of_task(who).unwrap_or_default();
    let what = if target.threaded() {
        "the measuring thread"
    } else {
        "the probe's process"
    };
    Ok((entered, format!("{path} ({what})")))
}

/// The `cgroup` setting of measuring threads that joined a threaded cgroup: the paths they
/// were read back in.
pub fn threads_setting(paths: &[String]) -> Option<String> {
    let mut p = paths.to_vec();
    p.sort();
    p.dedup();
    (!p.is_empty()).then(|| format!("{} (the measuring threads)", p.join(", ")))
}

/// Say what the command did (a line per run on stderr, its output indented) and record it as
/// the `on_threshold` setting.
pub fn report(r: &mut RunResult, action: &Action, rep: &Report) {
    for ran in &rep.ran {
        errln!(
            "latlab probe: --on-threshold `{}` for {}: {} after {:.1} ms{}",
            action.command,
            ran.crossing.describe(),
            ran.how,
            ran.took_ns as f64 / 1e6,
            if ran.output.is_empty() { "" } else { "; its output:" }
        );
        for line in ran.output.lines() {
            errln!("    | {line}");
        }
    }
    let failed = rep.ran.iter().filter(|x| !x.ok).count();
    let mut s = format!(
        "`{}` ({}, at {:.1} us): ran {} time{}",
        action.command,
        action.rate(),
        action.threshold_ns as f64 / 1000.0,
        rep.ran.len(),
        if rep.ran.len() == 1 { "" } else { "s" }
    );
    if failed > 0 {
        s.push_str(&format!(", {failed} of them failed"));
    }
    if rep.skipped > 0 {
        s.push_str(&format!(
            "; {} crossing{} skipped (while it ran or inside the rate limit)",
            rep.skipped,
            if rep.skipped == 1 { "" } else { "s" }
        ));
    }
    if failed > 0 {
        errln!("latlab probe: warning: --on-threshold: {s}");
    }
    r.meta.settings.insert("on_threshold".into(), s);
}
