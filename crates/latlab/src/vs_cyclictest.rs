//! `latlab probe vs-cyclictest`: cyclictest (rt-tests) and `latlab probe timer` in alternation
//! with the same settings, idle and under load, each tool's histograms merged over rounds and
//! CPUs and bucketed the same way (whole microseconds, cyclictest's `-h`), then compared. The
//! question it answers: does the probe add latency of its own?
use crate::probe_cmd::{p_duration, start_loads, LoadOpts};
use clap::Args;
use latlab_probe::load::LoadSpec;
use latlab_probe::{parse, signals, timer};
use latlab_report::cyclictest::{column_quantile, merge, parse as parse_hist, Column};
use std::process::{Command, ExitCode};

fn p_load(s: &str) -> Result<LoadSpec, String> {
    LoadSpec::parse(s)
}

#[derive(Args, Debug)]
pub struct VsArgs {
    /// Length of each tool's run in a round (whole seconds, as cyclictest -D).
    #[arg(long, default_value = "10s", value_parser = p_duration)]
    pub duration: u64,
    /// Alternations per condition (cyclictest, latlab, cyclictest, latlab, ...).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..))]
    pub rounds: u32,
    /// Loaded condition to compare besides idle (`--under none` for idle only).
    #[arg(long, default_value = "make:2")]
    pub under: String,
    /// SCHED_FIFO priority for both tools.
    #[arg(long, default_value_t = 95, value_parser = clap::value_parser!(i32).range(1..=99))]
    pub priority: i32,
    /// Period in microseconds for both tools.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(50..=1_000_000))]
    pub interval_us: u64,
    /// Directory for the load's scratch files.
    #[arg(long)]
    pub scratch: Option<std::path::PathBuf>,
}

/// Histogram range in microseconds; later samples count as overflows (at their max).
const HIST_US: usize = 20_000;

pub fn run(a: VsArgs) -> anyhow::Result<ExitCode> {
    if Command::new("cyclictest").arg("--help").output().is_err() {
        anyhow::bail!("cyclictest not found: install rt-tests (scripts/install-deps does, as root)");
    }
    let secs = (a.duration / 1_000_000_000).max(1);
    let cpus = parse::allowed_cpus();
    let mut conditions: Vec<Option<LoadSpec>> = vec![None];
    if a.under != "none" {
        conditions.push(Some(p_load(&a.under).map_err(|e| anyhow::anyhow!("--under: {e}"))?));
    }
    outln!(
        "# cyclictest vs latlab probe timer: {} CPUs, SCHED_FIFO {}, {} us period, {} x {} s per tool per condition",
        cpus.len(),
        a.priority,
        a.interval_us,
        a.rounds,
        secs
    )?;
    outln!(
        "{:<10} {:<12} {:>9} {:>6} {:>6} {:>6} {:>6} {:>7} {:>8}",
        "condition",
        "tool",
        "count",
        "min",
        "p50",
        "p90",
        "p99",
        "p99.9",
        "max (us)"
    )?;
    let mut load_died = false;
    for cond in conditions {
        let label = cond.as_ref().map(LoadSpec::name).unwrap_or_else(|| "idle".into());
        let loads = start_loads(&LoadOpts {
            loads: cond.into_iter().collect(),
            scratch: a.scratch.clone(),
            zram: false,
            load_cpus: None,
            allow_load_failure: false,
        })?;
        let (mut ct, mut ll) = (Vec::new(), Vec::new());
        for _ in 0..a.rounds {
            if signals::stop_requested() {
                break;
            }
            ct.extend(run_cyclictest(&a, &cpus, secs)?);
            ll.extend(run_latlab(&a, &cpus, secs));
        }
        let report = loads.map(|l| l.stop());
        let (c, l) = (merge(&ct), merge(&ll));
        let rc = row(&c);
        let rl = row(&l);
        print_row(&label, "cyclictest", &rc)?;
        print_row(&label, "latlab", &rl)?;
        let ratio: Vec<f64> = rl
            .iter()
            .zip(&rc)
            .map(|(x, y)| *x as f64 / (*y).max(1) as f64)
            .collect();
        outln!(
            "{:<10} {:<12} {:>9.2} {:>6.2} {:>6.2} {:>6.2} {:>6.2} {:>7.2} {:>8.2}",
            label,
            "ratio",
            ratio[0],
            ratio[1],
            ratio[2],
            ratio[3],
            ratio[4],
            ratio[5],
            ratio[6]
        )?;
        if let Some(r) = report {
            for (k, v) in r.counters {
                outln!("{:<10} load {k} = {v}", label)?;
            }
            for f in &r.fates {
                outln!(
                    "{:<10} load {}: {}",
                    label,
                    f.name,
                    latlab_report::summary::load_fate(f)
                )?;
            }
            load_died |= r.fates.iter().any(|f| f.died.is_some());
        }
    }
    if load_died {
        errln!("latlab: a load died before its condition's runs ended: its figures were not all taken under it");
        return Ok(ExitCode::from(3));
    }
    if signals::stop_requested() {
        errln!("latlab: interrupted");
        return Ok(ExitCode::from(130));
    }
    Ok(ExitCode::SUCCESS)
}

/// count, min, p50, p90, p99, p99.9, max in microseconds.
fn row(c: &Column) -> [u64; 7] {
    [
        c.buckets.iter().sum::<u64>() + c.overflow,
        c.min_us,
        column_quantile(c, 0.5),
        column_quantile(c, 0.9),
        column_quantile(c, 0.99),
        column_quantile(c, 0.999),
        c.max_us,
    ]
}

fn print_row(cond: &str, tool: &str, r: &[u64; 7]) -> Result<(), crate::out::StdoutError> {
    outln!(
        "{:<10} {:<12} {:>9} {:>6} {:>6} {:>6} {:>6} {:>7} {:>8}",
        cond,
        tool,
        r[0],
        r[1],
        r[2],
        r[3],
        r[4],
        r[5],
        r[6]
    )
}

fn run_cyclictest(a: &VsArgs, cpus: &[usize], secs: u64) -> anyhow::Result<Vec<Column>> {
    let list = cpus.iter().map(usize::to_string).collect::<Vec<_>>().join(",");
    let out = Command::new("cyclictest")
        .args(["-m", "-q"])
        .arg(format!("-p{}", a.priority))
        .arg(format!("-i{}", a.interval_us))
        .arg(format!("-t{}", cpus.len()))
        .arg(format!("-a{list}"))
        .arg(format!("-D{secs}"))
        .arg(format!("-h{HIST_US}"))
        .output()?;
    parse_hist(&String::from_utf8_lossy(&out.stdout)).map_err(|e| {
        anyhow::anyhow!(
            "cyclictest printed no usable histogram ({e}; exit {}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )
    })
}

fn run_latlab(a: &VsArgs, cpus: &[usize], secs: u64) -> Vec<Column> {
    let cfg = timer::PeriodicConfig {
        cpus: cpus.to_vec(),
        priority: a.priority,
        interval_ns: a.interval_us * 1000,
        duration_ns: Some(secs * 1_000_000_000),
        histogram_us: Some(HIST_US),
        ..Default::default()
    };
    let out = timer::run(&cfg);
    out.streams
        .iter()
        .zip(&out.histograms)
        .map(|(s, h)| crate::probe_cmd::histfile_column(s, Some(h), HIST_US))
        .collect()
}
