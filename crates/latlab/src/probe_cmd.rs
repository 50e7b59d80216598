//! `latlab probe`: measure wakeup and write(2) latency on this machine (crates/latlab-probe).
use anyhow::Context;
use clap::{Args, Subcommand};
use latlab_core::result::RunResult;
use latlab_probe::{output, parse, signals, timer};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct ProbeArgs {
    #[command(subcommand)]
    pub cmd: ProbeCmd,
}

#[derive(Subcommand, Debug)]
pub enum ProbeCmd {
    /// Periodic clock_nanosleep wakeups per CPU (as cyclictest).
    Timer(TimerArgs),
}

fn p_interval(s: &str) -> Result<u64, String> {
    parse::duration_ns(s, "us")
}
fn p_duration(s: &str) -> Result<u64, String> {
    parse::duration_ns(s, "s")
}
fn p_cpus(s: &str) -> Result<Vec<usize>, String> {
    parse::cpu_list(s)
}
fn p_us(s: &str) -> Result<u64, String> {
    parse::duration_ns(s, "us")
}

/// Options of the periodic probes.
#[derive(Args, Debug, Clone)]
pub struct PeriodicOpts {
    /// CPUs to measure on (`0,1`, `0-3`, `all`); default: every CPU this process may use.
    #[arg(long, value_parser = p_cpus)]
    pub cpus: Option<Vec<usize>>,
    /// SCHED_FIFO priority of the measuring threads.
    #[arg(long, default_value_t = 95, value_parser = clap::value_parser!(i32).range(1..=99))]
    pub priority: i32,
    /// Period (`1ms`, `250us`; a bare number is microseconds).
    #[arg(long, default_value = "1ms", value_parser = p_interval)]
    pub interval: u64,
    /// Run time (`10s`, `2m`; a bare number is seconds). Default 10s unless --loops is given.
    #[arg(long, value_parser = p_duration)]
    pub duration: Option<u64>,
    /// Stop after N wakeups per CPU.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub loops: Option<u64>,
    /// Leave /dev/cpu_dma_latency alone (by default it is held at 0 during the run).
    #[arg(long)]
    pub no_dma_latency: bool,
    /// Do not lock memory (mlockall).
    #[arg(long)]
    pub no_mlock: bool,
}

/// Output options shared by every probe.
#[derive(Args, Debug, Clone)]
pub struct OutputOpts {
    /// Write the RunResult (plus `streams_summary`) as JSON.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Write a cyclictest `-h` style histogram (one column per stream).
    #[arg(long)]
    pub histfile: Option<PathBuf>,
    /// Buckets (us) in --histfile.
    #[arg(long, default_value_t = 1000)]
    pub hist_buckets: usize,
    /// Exit with code 1 when the maximum latency exceeds this (`100`, `1ms`; bare = us).
    #[arg(long, value_parser = p_us)]
    pub fail_above: Option<u64>,
    /// Attribute samples above --trace-above from /proc (coarse).
    #[arg(long)]
    pub explain: bool,
    /// Threshold for --explain (`200us`; bare = us).
    #[arg(long, value_parser = p_us, default_value = "100us")]
    pub trace_above: u64,
}

#[derive(Args, Debug)]
pub struct TimerArgs {
    #[command(flatten)]
    pub periodic: PeriodicOpts,
    #[command(flatten)]
    pub out: OutputOpts,
}

pub fn run(a: ProbeArgs) -> anyhow::Result<ExitCode> {
    match a.cmd {
        ProbeCmd::Timer(t) => run_timer(t),
    }
}

fn periodic_config(p: &PeriodicOpts, out: &OutputOpts) -> timer::PeriodicConfig {
    let duration = match (p.duration, p.loops) {
        (None, None) => Some(10_000_000_000),
        (d, _) => d,
    };
    timer::PeriodicConfig {
        cpus: p.cpus.clone().unwrap_or_else(parse::allowed_cpus),
        priority: p.priority,
        interval_ns: p.interval,
        duration_ns: duration,
        loops: p.loops,
        dma_latency: !p.no_dma_latency,
        mlock: !p.no_mlock,
        keep_worst: 10,
        trace_above_ns: out.explain.then_some(out.trace_above),
    }
}

fn periodic_settings(cfg: &timer::PeriodicConfig) -> BTreeMap<String, String> {
    let mut s = BTreeMap::new();
    s.insert("cpus".into(), format!("{:?}", cfg.cpus));
    s.insert("priority".into(), cfg.priority.to_string());
    s.insert("interval_us".into(), format!("{}", cfg.interval_ns as f64 / 1000.0));
    if let Some(d) = cfg.duration_ns {
        s.insert("duration_s".into(), format!("{}", d as f64 / 1e9));
    }
    if let Some(l) = cfg.loops {
        s.insert("loops".into(), l.to_string());
    }
    s
}

fn run_timer(t: TimerArgs) -> anyhow::Result<ExitCode> {
    let cfg = periodic_config(&t.periodic, &t.out);
    let out = timer::run(&cfg);
    let mut settings = periodic_settings(&cfg);
    for (k, v) in out.caps.settings() {
        settings.insert(k, v);
    }
    let mut r = RunResult::new(latlab_probe::meta::new_meta("timer", out.wall_ns, settings));
    r.streams = out.streams;
    for w in out.caps.warnings() {
        eprintln!("latlab probe: warning: {w}");
    }
    finish(r, &t.out, out.interrupted)
}

/// Print, write the requested files, and choose the exit code.
fn finish(r: RunResult, o: &OutputOpts, interrupted: bool) -> anyhow::Result<ExitCode> {
    if interrupted {
        eprintln!("latlab probe: interrupted; the figures below cover the partial run");
    }
    output::print_summary(&r, &mut std::io::stdout())?;
    if let Some(p) = &o.json {
        output::write_json(&r, p).with_context(|| format!("--json {}", p.display()))?;
    }
    if let Some(p) = &o.histfile {
        let text = latlab_report::cyclictest::render_streams(&r.streams, o.hist_buckets);
        std::fs::write(p, text).with_context(|| format!("--histfile {}", p.display()))?;
    }
    if interrupted {
        return Ok(ExitCode::from(128 + signals::stopped_by().unwrap_or(2) as u8));
    }
    if let Some(limit) = o.fail_above {
        let max = output::max_ns(&r);
        if max > limit {
            eprintln!(
                "latlab probe: max latency {:.1} us exceeds --fail-above {:.1} us",
                max as f64 / 1000.0,
                limit as f64 / 1000.0
            );
            return Ok(ExitCode::from(1));
        }
    }
    Ok(ExitCode::SUCCESS)
}
