//! `latlab probe`: measure wakeup and write(2) latency on this machine (crates/latlab-probe),
//! optionally under real load, and print/write the shared result.
use crate::probe_spike::{self, SpikeOpts};
use crate::progress;
use anyhow::Context;
use clap::{Args, Subcommand};
use latlab_core::result::{RunResult, Stream};
use latlab_probe::load::{LoadOptions, LoadReport, LoadSpec, Loads};
use latlab_probe::posix_timer::Notify;
use latlab_probe::smi::SmiCount;
use latlab_probe::{output, parse, signals, timer, write};
use latlab_report::cyclictest::Column;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Most `--hist-buckets`: a second of 1 us buckets, 8 MB per stream.
const MAX_HIST_BUCKETS: u32 = 1_000_000;

#[derive(Args, Debug)]
pub struct ProbeArgs {
    #[command(subcommand)]
    pub cmd: ProbeCmd,
}

#[derive(Subcommand, Debug)]
pub enum ProbeCmd {
    /// Periodic clock_nanosleep wakeups per CPU (as cyclictest / realfeel).
    Timer(TimerArgs),
    /// POSIX timer (timer_create) wakeups, notified by signal or by a new thread (seed 004).
    PosixTimer(PosixTimerArgs),
    /// Time every 4 KiB write(2) of a file of half of RAM (seed 001's `iozone -Q`).
    Write(WriteArgs),
    /// Run cyclictest and `latlab probe timer` in alternation, idle and under load, and compare.
    VsCyclictest(crate::vs_cyclictest::VsArgs),
    /// Measure this machine and write it as a machine file the model loads (`-o FILE`).
    Calibrate(crate::probe_calibrate::CalibrateArgs),
    /// Run a scenario (scenarios/*.toml or rt-app JSON) for real: its tasks as threads, its
    /// periodic ones measured as the model measures them.
    Scenario(crate::probe_scenario::ScenarioArgs),
}

fn p_interval(s: &str) -> Result<u64, String> {
    let ns = parse::duration_ns(s, "us")?;
    // A measuring thread sleeps a whole period at a time: longer periods would also delay
    // stopping (Ctrl-C, --duration) by that much.
    if !(1_000..=1_000_000_000).contains(&ns) {
        return Err(format!("'{s}' is outside 1us..1s"));
    }
    Ok(ns)
}
pub(crate) fn p_duration(s: &str) -> Result<u64, String> {
    parse::run_duration_ns(s)
}
/// A `--cpus` list, one argument (a bare `Vec` would make clap expect several values).
#[derive(Clone, Debug)]
pub struct CpuList(pub Vec<usize>);

fn p_cpus(s: &str) -> Result<CpuList, String> {
    parse::cpu_list(s).map(CpuList)
}
pub(crate) fn p_us(s: &str) -> Result<u64, String> {
    parse::duration_ns(s, "us")
}
fn p_size(s: &str) -> Result<u64, String> {
    parse::size_bytes(s)
}
fn p_load(s: &str) -> Result<LoadSpec, String> {
    LoadSpec::parse(s)
}
fn p_notify(s: &str) -> Result<Notify, String> {
    Notify::parse(s)
}

/// Options of the periodic probes.
#[derive(Args, Debug, Clone)]
pub struct PeriodicOpts {
    /// CPUs to measure on (`0,1`, `0-3`, `all`); default: every CPU this process may use.
    #[arg(long, value_parser = p_cpus)]
    pub cpus: Option<CpuList>,
    /// SCHED_FIFO priority of the measuring threads; 0 measures as SCHED_OTHER.
    #[arg(long, default_value_t = 95, value_parser = clap::value_parser!(i32).range(0..=99))]
    pub priority: i32,
    /// Period (`1ms`, `250us`; a bare number is microseconds).
    #[arg(long, default_value = "1ms", value_parser = p_interval)]
    pub interval: u64,
    /// Run time (`10s`, `2m`; a bare number is seconds; at most 8760h). Default 10s unless
    /// --loops is given.
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

/// Real load to run while measuring.
#[derive(Args, Debug, Clone)]
pub struct LoadOpts {
    /// Load to run while measuring (repeatable): make:N, dd:SIZE, dbench:N, tar, sync, video, swap:SIZE.
    #[arg(long = "load", value_parser = p_load)]
    pub loads: Vec<LoadSpec>,
    /// Directory for the loads' scratch files (default: the system temp dir).
    #[arg(long)]
    pub scratch: Option<PathBuf>,
    /// Allow `swap:SIZE` to create a zram swap device when the machine has no swap (root; torn down after).
    #[arg(long)]
    pub zram: bool,
    /// Confine the loads (and all they start) to these CPUs (`0`, `0-1`); default: any CPU.
    /// `--cpus 0 --load-cpus 0` puts the measuring thread and the load on one CPU, as on a
    /// uniprocessor.
    #[arg(long, value_parser = p_cpus)]
    pub load_cpus: Option<CpuList>,
    /// Exit 0 even when a load died before the measurement ended (by default: exit 3, since
    /// the figures were not all taken under the load the result names).
    #[arg(long)]
    pub allow_load_failure: bool,
}

/// Output options shared by every probe.
#[derive(Args, Debug, Clone)]
pub struct OutputOpts {
    /// Write the RunResult (plus `streams_summary`) as JSON; `-` writes it to stdout (the
    /// table and spikes then go to stderr).
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Write a cyclictest `-h` histogram (one column per stream); `-` writes it to stdout.
    #[arg(long)]
    pub histfile: Option<PathBuf>,
    /// Buckets (us) in --histfile, 1..=1000000 (a second of 1 us buckets).
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..=MAX_HIST_BUCKETS as i64))]
    pub hist_buckets: u32,
    /// Exit with code 1 when the maximum latency exceeds this (`100`, `1ms`; bare = us).
    #[arg(long, value_parser = p_us)]
    pub fail_above: Option<u64>,
    /// Explain every sample above --trace-above (default 100us): scheduler and irq
    /// tracepoints when permitted, /proc deltas otherwise.
    #[arg(long)]
    pub explain: bool,
    /// Explain samples above this latency (`200us`; bare = us); implies --explain.
    #[arg(long, value_parser = p_us)]
    pub trace_above: Option<u64>,
    /// Stop at the first sample of at least this latency (`2ms`; bare = us), as cyclictest's
    /// -b: the recording stops there, the events recorded around the sample go to
    /// --break-trace, the result to --json; exits 1. Explains samples above it unless
    /// --explain/--trace-above say otherwise.
    #[arg(long, value_parser = p_us)]
    pub break_above: Option<u64>,
    /// Where --break-above writes the recorded events around the breaking sample (ftrace
    /// text, as `latlab report trace` writes it; `-` for stdout). Default: beside --json FILE
    /// (`r.json` -> `r.break.txt`), else `latlab-break.txt` in a new private directory in the
    /// temp dir; the probe prints the path.
    #[arg(long)]
    pub break_trace: Option<PathBuf>,
    /// Count System Management Interrupts on every CPU during the run (MSR_SMI_COUNT through
    /// /dev/cpu/N/msr: Intel, root, the msr driver); says what is missing otherwise.
    #[arg(long)]
    pub smi: bool,
}

impl OutputOpts {
    /// No output option given: the table only.
    pub fn none() -> OutputOpts {
        OutputOpts {
            json: None,
            histfile: None,
            hist_buckets: 1000,
            fail_above: None,
            explain: false,
            trace_above: None,
            break_above: None,
            break_trace: None,
            smi: false,
        }
    }

    fn trace_above_ns(&self) -> Option<u64> {
        match (self.explain, self.trace_above) {
            (_, Some(t)) => Some(t),
            (true, None) => Some(100_000),
            (false, None) => self.break_above,
        }
    }
}

#[derive(Args, Debug)]
pub struct TimerArgs {
    #[command(flatten)]
    pub periodic: PeriodicOpts,
    #[command(flatten)]
    pub load: LoadOpts,
    #[command(flatten)]
    pub out: OutputOpts,
    #[command(flatten)]
    pub spike: SpikeOpts,
}

#[derive(Args, Debug)]
pub struct PosixTimerArgs {
    /// How the timer notifies: `signal` (SIGEV_SIGNAL to the waiting thread) or `thread`
    /// (SIGEV_THREAD: a new thread per expiry).
    #[arg(long, default_value = "signal", value_parser = p_notify)]
    pub notify: Notify,
    /// The same period, CPUs, load and output options as `probe timer`.
    #[command(flatten)]
    pub timer: TimerArgs,
}

#[derive(Args, Debug)]
pub struct WriteArgs {
    /// File size (`2G`, `512M`); default half of RAM, as seed 001.
    #[arg(long, value_parser = p_size)]
    pub size: Option<u64>,
    /// Bytes per write(2).
    #[arg(long, default_value = "4K", value_parser = p_size)]
    pub record: u64,
    /// Directory to write the file in (default: the system temp dir).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Worst records to list.
    #[arg(long, default_value_t = 10)]
    pub worst: usize,
    /// Write every record's offset (KB), latency (us) and size (bytes) to FILE, as iozone -Q
    /// writes wol.dat (`sort -nk2 FILE | tail` gives seed 001's listing).
    #[arg(long, value_name = "FILE")]
    pub records: Option<PathBuf>,
    #[command(flatten)]
    pub load: LoadOpts,
    #[command(flatten)]
    pub out: OutputOpts,
    #[command(flatten)]
    pub spike: SpikeOpts,
}

/// Before the probe makes anything: remove what killed probes left in the temp dir and in
/// `dirs` (saying so), and start the guardian that undoes what this one makes should it be
/// killed too (docs/probe.md, "Nothing outlives the probe").
pub fn guard(dirs: &[Option<&Path>]) {
    let tmp = std::env::temp_dir();
    let mut all = vec![tmp.as_path()];
    all.extend(dirs.iter().flatten());
    for note in latlab_probe::guard::sweep(&all) {
        errln!("latlab probe: {note}");
    }
    if let Err(e) = latlab_probe::guard::start(Path::new("/proc/self/exe")) {
        errln!(
            "latlab probe: warning: no guardian ({e}): a SIGKILL would leave the loads and scratch \
             files until the next probe starts"
        );
    }
}

pub fn run(a: ProbeArgs) -> anyhow::Result<ExitCode> {
    signals::install();
    match &a.cmd {
        ProbeCmd::Timer(t) | ProbeCmd::PosixTimer(PosixTimerArgs { timer: t, .. }) => {
            guard(&[t.load.scratch.as_deref()])
        }
        ProbeCmd::Write(w) => guard(&[w.load.scratch.as_deref(), w.dir.as_deref()]),
        ProbeCmd::VsCyclictest(v) => guard(&[v.scratch.as_deref()]),
        ProbeCmd::Calibrate(c) => guard(&[c.dir.as_deref()]),
        ProbeCmd::Scenario(s) => guard(&[s.scratch.as_deref()]),
    }
    match a.cmd {
        ProbeCmd::Timer(t) => {
            let (cfg, cgroup) = periodic_config(&t)?;
            let name = "timer".to_string();
            run_with_loads(&name, &t.load, &t.out, cgroup.as_ref(), || {
                let _live = live_display(&cfg);
                periodic_result(&name, &cfg, timer::run(&cfg))
            })
        }
        ProbeCmd::PosixTimer(PosixTimerArgs { notify, timer: t }) => {
            let (cfg, cgroup) = periodic_config(&t)?;
            let min = latlab_probe::posix_timer::MIN_THREAD_INTERVAL_NS;
            if notify == latlab_probe::posix_timer::Notify::Thread && cfg.interval_ns < min {
                anyhow::bail!(
                    "--interval {}us is too short for --notify thread: glibc starts a thread for every \
                     expiry, and periods shorter than {}us pile them up faster than they finish",
                    cfg.interval_ns / 1000,
                    min / 1000
                );
            }
            let name = format!("posix-timer {}", notify.sigev_name());
            run_with_loads(&name, &t.load, &t.out, cgroup.as_ref(), || {
                let _live = live_display(&cfg);
                let out = latlab_probe::posix_timer::run(&cfg, notify);
                periodic_result(&name, &cfg, out)
            })
        }
        ProbeCmd::Write(w) => run_write(w),
        ProbeCmd::VsCyclictest(v) => crate::vs_cyclictest::run(v),
        ProbeCmd::Calibrate(c) => crate::probe_calibrate::run(&c),
        ProbeCmd::Scenario(s) => crate::probe_scenario::run(s),
    }
}

/// What a probe body returns: the result, whether a signal cut it short, lines to print
/// after the summary, and the streams' cyclictest histograms where they were kept exactly.
pub struct Measured {
    pub result: RunResult,
    pub interrupted: bool,
    pub extra: String,
    pub histograms: Vec<timer::CycleHistogram>,
    /// The sample that stopped the run (`--break-above`).
    pub broke: Option<timer::Break>,
}

/// A stream's `--histfile` column: from its cyclictest histogram, kept sample by sample as
/// cyclictest keeps it, where there is one; else from the stream's HDR histogram.
pub fn histfile_column(s: &Stream, kept: Option<&timer::CycleHistogram>, buckets: usize) -> Column {
    match kept {
        Some(h) => Column {
            buckets: h.buckets.clone(),
            overflow: h.overflow,
            overflow_cycles: h.overflow_cycles.clone(),
            min_us: s.hist.min() / 1000,
            avg_us: h.sum_us.checked_div(s.hist.count()).unwrap_or(0),
            max_us: s.hist.max() / 1000,
        },
        None => Column::from_stream(s, buckets),
    }
}

/// Start the loads, measure (inside `cgroup`, the process or the calling thread, when given),
/// stop the loads (also on error or signal), then report.
fn run_with_loads(
    name: &str,
    l: &LoadOpts,
    o: &OutputOpts,
    cgroup: Option<&latlab_probe::cgroup::Target>,
    body: impl FnOnce() -> anyhow::Result<Measured>,
) -> anyhow::Result<ExitCode> {
    check_outputs(o)?;
    let loads = start_loads(l)?;
    if !l.loads.is_empty() {
        errln!(
            "latlab probe: {name} under load {}{}",
            l.loads.iter().map(LoadSpec::name).collect::<Vec<_>>().join(" + "),
            l.load_cpus
                .as_ref()
                .map_or(String::new(), |c| format!(" on CPUs {}", cpu_list_text(&c.0)))
        );
    }
    let smi = o.smi.then(|| SmiCount::start(&parse::allowed_cpus()));
    let steal = latlab_probe::meta::Steal::start();
    let measured = cgroup.map(probe_spike::enter).transpose().and_then(|entered| {
        let m = body();
        // Back out of the cgroup as soon as the measurement ends.
        let at = entered.map(|(back, at)| {
            drop(back);
            at
        });
        m.map(|mut m| {
            if let Some(at) = at {
                m.result.meta.settings.insert("cgroup".into(), at);
            }
            m
        })
    });
    let report = loads.map(Loads::stop).unwrap_or_default();
    let mut m = measured?;
    m.result.meta.settings.insert("steal".into(), steal.finish());
    if let Some(smi) = smi {
        add_smi(&mut m.result, smi.and_then(|c| c.finish()));
    }
    add_load_report(&mut m.result, &report, &l.loads);
    if let (false, Some(c)) = (l.loads.is_empty(), &l.load_cpus) {
        m.result.meta.settings.insert("load_cpus".into(), format!("{:?}", c.0));
    }
    finish(m, o, l.allow_load_failure)
}

/// `--smi`: SMIs per CPU as counters (`smi cpuN`), or why they could not be counted.
fn add_smi(r: &mut RunResult, counted: Result<Vec<(usize, u64)>, String>) {
    match counted {
        Ok(per_cpu) => {
            for (cpu, n) in per_cpu {
                r.counters.insert(format!("smi cpu{cpu}"), n);
            }
        }
        Err(e) => {
            errln!("latlab probe: warning: --smi: SMIs not counted: {e}");
            r.meta.settings.insert("smi".into(), format!("not counted: {e}"));
        }
    }
}

/// A CPU list as `--cpus` takes it: `0`, `0,2`.
fn cpu_list_text(cpus: &[usize]) -> String {
    cpus.iter().map(usize::to_string).collect::<Vec<_>>().join(",")
}

pub fn start_loads(l: &LoadOpts) -> anyhow::Result<Option<Loads>> {
    if l.loads.is_empty() {
        if let Some(c) = &l.load_cpus {
            anyhow::bail!(
                "--load-cpus {}: there is no --load to confine (add --load NAME, e.g. --load make:2)",
                cpu_list_text(&c.0)
            );
        }
        return Ok(None);
    }
    if let Some(d) = &l.scratch {
        check_dir(d, "--scratch")?;
    }
    let opts = LoadOptions {
        // The running binary through the kernel's own link to it: no search permission on the
        // directories above it is needed (an unprivileged run of a binary in a 0700 checkout),
        // and a rebuild during the run cannot swap it.
        exe: "/proc/self/exe".into(),
        scratch: l.scratch.clone().unwrap_or_else(std::env::temp_dir),
        allow_zram: l.zram,
        cpus: l.load_cpus.clone().map(|c| c.0).unwrap_or_default(),
    };
    Loads::start(&l.loads, &opts)
        .map(Some)
        .map_err(|e| anyhow::anyhow!("--load: {e}"))
}

/// Refuse `dir`, given as `flag`, unless it is a directory: the error names the flag, the
/// path and why.
fn check_dir(dir: &Path, flag: &str) -> anyhow::Result<()> {
    let meta = std::fs::metadata(dir).with_context(|| format!("{flag} {}", dir.display()))?;
    if !meta.is_dir() {
        anyhow::bail!("{flag} {}: not a directory", dir.display());
    }
    Ok(())
}

/// The loads' fates, counters and throughput into the result; the workload names each load,
/// with when it died if it did (`timer under dd:1G (died at 3.2 s) + tar`).
pub(crate) fn add_load_report(r: &mut RunResult, rep: &LoadReport, specs: &[LoadSpec]) {
    if specs.is_empty() {
        return;
    }
    r.loads = rep.fates.clone();
    r.meta.workload = format!(
        "{} under {}",
        r.meta.workload,
        rep.fates
            .iter()
            .map(|f| match &f.died {
                Some(d) => format!("{} (died at {:.1} s)", f.name, d.after_ns as f64 / 1e9),
                None => f.name.clone(),
            })
            .collect::<Vec<_>>()
            .join(" + ")
    );
    let secs = r.meta.duration_ns as f64 / 1e9;
    for (k, &v) in &rep.counters {
        r.counters.insert(format!("load {k}"), v);
        if secs > 0.0 {
            r.throughput.insert(format!("load {k} per s"), v as f64 / secs);
        }
    }
    for n in &rep.notes {
        errln!("latlab probe: load: {n}");
    }
}

/// The live per-CPU lines of a periodic run, when it keeps live figures (on a terminal).
fn live_display(cfg: &timer::PeriodicConfig) -> Option<progress::Display> {
    cfg.live.as_ref().map(|l| progress::probe(&cfg.cpus, l))
}

/// The periodic run's settings, and the cgroup the process enters for it (`--cgroup` with a
/// domain cgroup; a threaded one is joined by the measuring threads themselves).
fn periodic_config(t: &TimerArgs) -> anyhow::Result<(timer::PeriodicConfig, Option<latlab_probe::cgroup::Target>)> {
    let (p, out) = (&t.periodic, &t.out);
    let target = t.spike.target()?;
    let (cgroup_threads, process) = match target {
        Some(c) if c.threaded() => (Some(c), None),
        other => (None, other),
    };
    let on_threshold = t.spike.action(out.break_above, out.trace_above_ns())?;
    let duration = match (p.duration, p.loops) {
        (None, None) => Some(10_000_000_000),
        (d, _) => d,
    };
    let trace_above_ns = out.trace_above_ns();
    let cpus = p.cpus.clone().map_or_else(parse::allowed_cpus, |c| c.0);
    let cfg = timer::PeriodicConfig {
        live: progress::enabled().then(|| cpus.iter().map(|_| Default::default()).collect()),
        cpus,
        priority: p.priority,
        interval_ns: p.interval,
        duration_ns: duration,
        loops: p.loops,
        dma_latency: !p.no_dma_latency,
        mlock: !p.no_mlock,
        // With --explain keep enough samples to list every spike, not only the top ten.
        keep_worst: if trace_above_ns.is_some() { 100 } else { 10 },
        trace_above_ns,
        histogram_us: out.histfile.is_some().then_some(out.hist_buckets as usize),
        break_above_ns: out.break_above,
        cgroup_threads,
        on_threshold,
    };
    Ok((cfg, process))
}

fn periodic_result(name: &str, cfg: &timer::PeriodicConfig, out: timer::PeriodicOutcome) -> anyhow::Result<Measured> {
    if out.streams.iter().all(|s| s.hist.count() == 0) && !out.errors.is_empty() {
        anyhow::bail!("{}", out.errors.join("; "));
    }
    let mut settings = BTreeMap::new();
    settings.insert("cpus".into(), format!("{:?}", cfg.cpus));
    let (got, threads) = (out.caps.fifo_threads, out.caps.threads);
    settings.insert(
        "policy".into(),
        match cfg.priority {
            0 => "SCHED_OTHER".into(),
            p if got == threads => latlab_core::RunMeta::fifo_policy(p),
            p if got == 0 => format!("SCHED_OTHER (SCHED_FIFO {p} refused)"),
            p => format!("SCHED_FIFO {p} on {got} of {threads} threads, SCHED_OTHER on the rest"),
        },
    );
    settings.insert("interval_us".into(), format!("{}", cfg.interval_ns as f64 / 1000.0));
    if let Some(d) = cfg.duration_ns {
        settings.insert("duration_s".into(), format!("{}", d as f64 / 1e9));
    }
    if let Some(l) = cfg.loops {
        settings.insert("loops".into(), l.to_string());
    }
    settings.extend(out.caps.settings());
    if let Some(c) = probe_spike::threads_setting(&out.cgroup_threads) {
        settings.insert("cgroup".into(), c);
    }
    let mut r = RunResult::new(latlab_probe::meta::new_meta(name, out.wall_ns, settings));
    r.streams = out.streams;
    if let (Some(a), Some(rep)) = (&cfg.on_threshold, &out.on_threshold) {
        probe_spike::report(&mut r, a, rep);
    }
    for w in out.caps.warnings().into_iter().chain(out.errors) {
        errln!("latlab probe: warning: {w}");
    }
    let mut extra = String::new();
    if name.starts_with("posix-timer") {
        extra.push_str(&seed004_lines(&r.streams));
    }
    Ok(Measured {
        result: r,
        interrupted: out.interrupted,
        extra,
        histograms: out.histograms,
        broke: out.broke,
    })
}

/// Seed 004's three lines, over all streams.
fn seed004_lines(streams: &[Stream]) -> String {
    let max = streams.iter().map(|s| s.hist.max()).max().unwrap_or(0);
    let n: u64 = streams.iter().map(|s| s.hist.count()).sum();
    let sum: f64 = streams.iter().map(|s| s.hist.mean() * s.hist.count() as f64).sum();
    let missed: u64 = streams.iter().map(|s| s.missed).sum();
    format!(
        "\nmaximum latency: {:.1} µs\naverage latency: {:.1} µs\nmissed timer events: {missed}\n",
        max as f64 / 1000.0,
        if n > 0 { sum / n as f64 / 1000.0 } else { 0.0 }
    )
}

fn run_write(w: WriteArgs) -> anyhow::Result<ExitCode> {
    let dir = w.dir.clone().unwrap_or_else(std::env::temp_dir);
    check_dir(&dir, "--dir")?;
    let size = match w.size {
        Some(s) => s,
        None => write::mem_total().context("reading MemTotal from /proc/meminfo for the default --size")? / 2,
    };
    let record = usize::try_from(w.record)
        .ok()
        .filter(|&r| r <= 64 << 20)
        .ok_or_else(|| anyhow::anyhow!("--record {}: at most 64M", w.record))?;
    if record as u64 > size {
        anyhow::bail!("--record {record} is larger than the file (--size {size}): not one record would be written");
    }
    let cfg = write::WriteConfig {
        dir,
        size,
        record,
        keep_worst: w.worst,
        explain_above_ns: w.out.trace_above_ns(),
        break_above_ns: w.out.break_above,
        progress: progress::enabled().then(Default::default),
        keep_records: w.records.is_some(),
    };
    // Refuse before the loads start, so a full disk fails fast (the directory is known good).
    write::check_space(&cfg.dir, cfg.size).map_err(|e| anyhow::anyhow!("--size: {e}"))?;
    let cgroup = w.spike.target()?;
    let action = w.spike.action(w.out.break_above, w.out.trace_above_ns())?;
    run_with_loads("write", &w.load, &w.out, cgroup.as_ref(), || {
        let display = cfg.progress.clone().map(|p| progress::bytes(cfg.size, p));
        let out = write::run_acting(&cfg, action.clone()).map_err(|e| anyhow::anyhow!(e));
        drop(display);
        let mut out = out?;
        if let Some(p) = &w.records {
            // The records go to their file, not into the result's JSON.
            let records = std::mem::take(&mut out.stream.records);
            std::fs::write(p, latlab_report::iozone_q::records_file(&records))
                .with_context(|| format!("--records {}", p.display()))?;
        }
        if let Some(e) = &out.trace_error {
            errln!(
                "latlab probe: warning: no scheduler tracepoints ({e}): slow records are explained from \
                 /proc/vmstat only"
            );
        }
        let mut settings = BTreeMap::new();
        settings.insert("file_MiB".into(), (cfg.size >> 20).to_string());
        settings.insert("record_bytes".into(), cfg.record.to_string());
        settings.insert("dir".into(), cfg.dir.display().to_string());
        let mut r = RunResult::new(latlab_probe::meta::new_meta("write", out.write_ns, settings));
        r.counters.insert("bytes_written".into(), out.bytes);
        r.counters.insert("fsync_ms".into(), out.fsync_ns / 1_000_000);
        if out.write_ns > 0 {
            r.throughput.insert(
                "write_MBps".into(),
                out.bytes as f64 / 1e6 / (out.write_ns as f64 / 1e9),
            );
        }
        if let Some((all, involuntary)) = out.switches {
            // As the model names them, for `report compare`.
            r.counters.insert("write_context_switches".into(), all);
            r.counters.insert("write_involuntary_switches".into(), involuntary);
            if out.write_ns > 0 {
                r.throughput
                    .insert("write_cs_per_s".into(), all as f64 / (out.write_ns as f64 / 1e9));
            }
        }
        let extra = format!(
            "\nslowest records (offset_KB latency_us record_bytes, as `iozone -Q` sorted by column 2):\n{}",
            latlab_report::summary::slowest_records(&out.stream)
        );
        r.streams.push(out.stream);
        if let (Some(a), Some(rep)) = (&action, &out.on_threshold) {
            probe_spike::report(&mut r, a, rep);
        }
        Ok(Measured {
            result: r,
            interrupted: out.interrupted,
            extra,
            histograms: Vec::new(),
            broke: out.broke,
        })
    })
}

/// True for the path `-`: standard output.
fn is_stdout(p: Option<&std::path::Path>) -> bool {
    p == Some(std::path::Path::new("-"))
}

impl OutputOpts {
    /// The options whose file goes to standard output (`-`).
    fn to_stdout(&self) -> Vec<&'static str> {
        [
            ("--json", self.json.as_deref()),
            ("--histfile", self.histfile.as_deref()),
            ("--break-trace", self.break_above.and(self.break_trace.as_deref())),
        ]
        .into_iter()
        .filter(|(_, p)| is_stdout(*p))
        .map(|(name, _)| name)
        .collect()
    }
}

/// Refuse output options that cannot all be honoured, before anything runs.
fn check_outputs(o: &OutputOpts) -> anyhow::Result<()> {
    let named = o.to_stdout();
    if named.len() > 1 {
        anyhow::bail!(
            "{} all ask for standard output (`-`): give all but one of them a file",
            named.join(" and ")
        );
    }
    Ok(())
}

/// Write `text` to `path`, or to standard output for `-`.
fn write_out(path: &std::path::Path, text: &str, what: &str) -> anyhow::Result<()> {
    if path == std::path::Path::new("-") {
        let mut out = std::io::stdout().lock();
        out.write_all(text.as_bytes())
            .and_then(|()| out.flush())
            .with_context(|| format!("{what} -: writing to standard output"))
    } else {
        std::fs::write(path, text).with_context(|| format!("{what} {}", path.display()))
    }
}

/// Print, write the requested files, and choose the exit code: 128 + the signal that cut the
/// run short, 1 when `--break-above` stopped it, 3 when a load died (unless
/// `allow_load_failure`), 1 above `--fail-above`. When a file goes to standard output, the
/// table and spike list go to standard error, so standard output holds the file alone.
pub(crate) fn finish(mut m: Measured, o: &OutputOpts, allow_load_failure: bool) -> anyhow::Result<ExitCode> {
    let break_above = o
        .break_above
        .map_or(String::new(), |a| format!("--break-above {:.1} us", a as f64 / 1000.0));
    if let Some(b) = &m.broke {
        let why = format!("{break_above}: {}", b.describe());
        m.result.meta.settings.insert("stopped_by".into(), why);
    }
    let r = &m.result;
    if m.interrupted {
        errln!("latlab probe: interrupted; the figures below cover the partial run");
    }
    // The files first: a closed standard output still leaves them written.
    if let Some(p) = &o.json {
        write_out(p, &output::json_text(r), "--json")?;
    }
    if let Some(p) = &o.histfile {
        let cols: Vec<Column> = r
            .streams
            .iter()
            .enumerate()
            .map(|(i, s)| histfile_column(s, m.histograms.get(i), o.hist_buckets as usize))
            .collect();
        write_out(p, &latlab_report::cyclictest::render(&cols), "--histfile")?;
    }
    let break_path = match &m.broke {
        Some(b) => Some(write_break_trace(o, &break_trace(r, b))?),
        None => None,
    };
    let table = |w: &mut dyn Write| -> std::io::Result<()> {
        output::print_summary(r, w)?;
        write!(w, "{}", m.extra)?;
        if let Some(t) = o.trace_above_ns() {
            write!(w, "{}", spikes(r, t))?;
        }
        write!(w, "{}", latlab_report::summary::loads(r))?;
        w.flush()
    };
    if o.to_stdout().is_empty() {
        table(&mut std::io::stdout().lock()).map_err(crate::out::StdoutError)?;
    } else {
        table(&mut std::io::stderr().lock())?;
    }
    if let (Some(b), Some(path)) = (&m.broke, &break_path) {
        errln!(
            "latlab probe: stopped at {} ({break_above}); the events recorded around it are in {}",
            b.describe(),
            path.display()
        );
        return Ok(ExitCode::from(1));
    }
    if m.interrupted {
        return Ok(ExitCode::from(128 + signals::stopped_by().unwrap_or(2) as u8));
    }
    if r.dead_loads().next().is_some() && !allow_load_failure {
        errln!(
            "latlab probe: a load died before the measurement ended, so not all of it ran under the \
             load it names (exit 3; --allow-load-failure accepts that)"
        );
        return Ok(ExitCode::from(3));
    }
    if let Some(limit) = o.fail_above {
        let max = output::max_ns(r);
        if max > limit {
            errln!(
                "latlab probe: max latency {:.1} us exceeds --fail-above {:.1} us",
                max as f64 / 1000.0,
                limit as f64 / 1000.0
            );
            return Ok(ExitCode::from(1));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Write the `--break-above` trace where [`OutputOpts::break_trace`] says; the path written.
/// Beside `--json FILE` the file is opened O_NOFOLLOW (a planted symlink is refused, not
/// followed); with neither option it goes in a new private directory (0700, a random name) in
/// the temp dir, never at a predictable path in a shared one.
fn write_break_trace(o: &OutputOpts, text: &str) -> anyhow::Result<PathBuf> {
    if let Some(p) = &o.break_trace {
        write_out(p, text, "--break-trace")?;
        return Ok(p.clone());
    }
    if let Some(json) = o.json.as_deref().filter(|j| !is_stdout(Some(j))) {
        let p = json.with_extension("break.txt");
        latlab_probe::private::create_nofollow(&p)
            .and_then(|mut f| f.write_all(text.as_bytes()))
            .with_context(|| format!("--break-above: writing the trace beside --json, to {}", p.display()))?;
        return Ok(p);
    }
    let tmp = std::env::temp_dir();
    let dir = latlab_probe::private::dir(&tmp, "latlab-break-")
        .with_context(|| format!("--break-above: creating a private directory in {}", tmp.display()))?;
    let p = dir.join("latlab-break.txt");
    write_out(&p, text, "--break-above: the trace")?;
    Ok(p)
}

/// The ftrace text of the events recorded around the sample that stopped the run.
fn break_trace(r: &RunResult, b: &timer::Break) -> String {
    let picked: Vec<latlab_report::recorded::Picked> = r
        .streams
        .iter()
        .filter(|s| s.name == b.stream)
        .flat_map(|s| {
            s.worst
                .iter()
                .filter(|w| w.at_ns == b.at_ns)
                .map(move |w| latlab_report::recorded::Picked {
                    stream: s,
                    sample: w,
                    recorded: s.recorded_for(w),
                })
        })
        .collect();
    latlab_report::recorded::ftrace(&latlab_report::input::label(r), &r.meta.system(), &picked)
}

/// The readable list of explained spikes, worst first per stream.
fn spikes(r: &RunResult, threshold: u64) -> String {
    let mut out = format!("\nspikes above {:.1} us:\n", threshold as f64 / 1000.0);
    let mut any = false;
    for s in &r.streams {
        for w in s.worst.iter().filter(|w| w.latency_ns >= threshold) {
            any = true;
            out.push_str(&format!("{}:", s.name));
            out.push_str(&latlab_report::summary::explain(w));
        }
    }
    if !any {
        out.push_str("  none\n");
    }
    out.push_str(&latlab_report::summary::cgroups(r));
    out
}
