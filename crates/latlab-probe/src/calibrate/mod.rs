//! `latlab probe calibrate`: a machine file for the machine at hand. Every field of the
//! model's machine profile is measured (micro-benchmarks) or read (sysfs, procfs), with its
//! spread over repeated runs; the facts no profile field holds (topology, HZ, preemption
//! model, the micro-benchmarks' own costs, storage rates, the machine's noise) go in the
//! file's `[host]` tables. [`Calibration::toml`] writes it with a comment per field saying
//! how it was measured or read (docs/probe.md "Calibration").

mod bench;
mod disk;
mod idle;
mod noise;
mod stats;
mod sys;
mod write;

pub use stats::Stat;
use std::path::PathBuf;

/// What to calibrate and how long to take.
#[derive(Clone, Debug)]
pub struct Options {
    /// Fewer and shorter runs (seconds rather than a minute).
    pub quick: bool,
    /// Where the disk's files are written (in a private directory made there).
    pub dir: PathBuf,
    /// Most CPUs the model's profile may give (`cpus` is capped at it; the topology keeps
    /// them all).
    pub max_cpus: u32,
}

/// How far a field may be off, as the machine file's `[uncertainty]` states it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Spread {
    /// Read exactly (sysfs, procfs).
    Given,
    /// No measurement behind it: x2 either way.
    Estimate,
    /// The measured runs' p5 and p95.
    Bounds(f64, f64),
}

/// A field's value: whole (ns, MiB, counts) or not.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Num {
    Whole(u64),
    Real(f64),
}

impl Num {
    pub fn get(self) -> f64 {
        match self {
            Num::Whole(v) => v as f64,
            Num::Real(v) => v,
        }
    }
}

/// Where a value came from, for the summary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    Measured,
    Read,
    Estimate,
}

impl Source {
    fn name(self) -> &'static str {
        match self {
            Source::Measured => "measured",
            Source::Read => "read",
            Source::Estimate => "estimate",
        }
    }
}

/// One field of the machine profile (`disk.seq_mb_s` for the disk's).
#[derive(Clone, Debug)]
pub struct Field {
    pub key: &'static str,
    pub value: Num,
    pub spread: Spread,
    pub source: Source,
    /// How it was measured or read, with its spread, in words (the file's comment).
    pub how: String,
}

/// A measured cost of `[host.costs]`, or why it was not measured.
#[derive(Clone, Debug)]
pub struct Cost {
    pub key: &'static str,
    pub stat: Result<Stat, String>,
    pub how: String,
}

/// `[host.storage]`.
#[derive(Clone, Debug)]
pub struct StorageOut {
    pub device: String,
    pub rotational: bool,
    pub write_mb_s: Stat,
    pub fsync_us: Stat,
}

/// `[host.noise]`.
#[derive(Clone, Debug)]
pub struct NoiseOut {
    pub source: String,
    pub duration_s: f64,
    pub cpus: u32,
    pub threshold_us: f64,
    pub gaps: u64,
    pub gaps_per_s: f64,
    pub max_us: f64,
    pub lost_percent: f64,
    pub steal_percent: Option<f64>,
    /// Gaps per second of each CPU measured, in the order of their numbers.
    pub per_cpu_gaps_per_s: Vec<f64>,
    /// The gaps' lengths, p50, p90, p99 and p99.9, us; None when no gap was counted.
    pub lengths_us: Option<[f64; 4]>,
}

/// `[host.kernel]`.
#[derive(Clone, Debug)]
pub struct KernelOut {
    pub release: String,
    pub hz: u32,
    pub hz_how: String,
    pub preemption: String,
    pub preemption_how: String,
}

/// `[host.topology]`.
#[derive(Clone, Debug)]
pub struct TopologyOut {
    pub cpus: Vec<u32>,
    pub smt_siblings: Vec<Vec<u32>>,
    pub numa_nodes: Vec<Vec<u32>>,
    pub caches: Vec<sys::Cache>,
}

/// Everything calibrated.
#[derive(Clone, Debug)]
pub struct Calibration {
    pub name: String,
    pub description: String,
    pub fields: Vec<Field>,
    pub topology: TopologyOut,
    pub kernel: KernelOut,
    pub costs: Vec<Cost>,
    pub storage: StorageOut,
    pub noise: NoiseOut,
    /// What was left out or approximated, and why (printed).
    pub notes: Vec<String>,
    /// How long the calibration took, s.
    pub wall_s: f64,
}

/// Sizes of the runs.
struct Plan {
    runs: u32,
    syscalls: u64,
    switches: u64,
    spawns: u64,
    fault_pages: usize,
    threads: u64,
    signals: u64,
    chase_bytes: usize,
    chase_loads: u64,
    copy_bytes: usize,
    spin_ms: u64,
    loopback_bytes: usize,
    noise_ns: u64,
    /// Timer wakeups of a thread on an idle CPU, and their period (`idle.rs`).
    idle_wakeups: usize,
    idle_period_ns: u64,
    write_mib: usize,
    write_runs: u32,
    fsyncs: u32,
}

impl Plan {
    fn new(quick: bool) -> Plan {
        match quick {
            true => Plan {
                runs: 5,
                syscalls: 20_000,
                switches: 2_000,
                spawns: 5,
                fault_pages: 2048,
                threads: 50,
                signals: 5_000,
                chase_bytes: 64 << 20,
                chase_loads: 300_000,
                copy_bytes: 16 << 20,
                spin_ms: 50,
                loopback_bytes: 16 << 20,
                noise_ns: 500_000_000,
                idle_wakeups: 100,
                idle_period_ns: 2_000_000,
                write_mib: 16,
                write_runs: 3,
                fsyncs: 10,
            },
            false => Plan {
                runs: 15,
                syscalls: 200_000,
                switches: 20_000,
                spawns: 20,
                fault_pages: 16384,
                threads: 500,
                signals: 50_000,
                chase_bytes: 256 << 20,
                chase_loads: 2_000_000,
                copy_bytes: 64 << 20,
                spin_ms: 300,
                loopback_bytes: 128 << 20,
                noise_ns: 5_000_000_000,
                idle_wakeups: 1000,
                idle_period_ns: 2_000_000,
                write_mib: 256,
                write_runs: 5,
                fsyncs: 30,
            },
        }
    }
}

/// A whole field from a measured figure in `unit` (its median, at least 1), the runs' p5-p95
/// its bounds.
fn measured(key: &'static str, s: Stat, unit: &str, how: &str, whole: bool) -> Field {
    let (value, lo, hi) = match whole {
        true => {
            let v = s.median.round().max(1.0);
            (Num::Whole(v as u64), s.p5.floor().min(v), s.p95.ceil().max(v))
        }
        false => {
            let v = stats::round_sig(s.median);
            (
                Num::Real(v),
                stats::round_sig(s.p5).min(v),
                stats::round_sig(s.p95).max(v),
            )
        }
    };
    let spread = match lo > 0.0 {
        true => Spread::Bounds(lo, hi),
        // A p5 of 0 cannot bound a log-uniform draw: x2 either way instead.
        false => Spread::Estimate,
    };
    Field {
        key,
        value,
        spread,
        source: Source::Measured,
        how: format!("{how}: {}", s.describe(unit)),
    }
}

fn read_field(key: &'static str, value: Num, how: String) -> Field {
    Field {
        key,
        value,
        spread: Spread::Given,
        source: Source::Read,
        how,
    }
}

fn estimate(key: &'static str, value: Num, how: String) -> Field {
    Field {
        key,
        value,
        spread: Spread::Estimate,
        source: Source::Estimate,
        how,
    }
}

fn need(what: &str, s: Option<Stat>) -> Result<Stat, String> {
    stopped()?;
    s.ok_or_else(|| format!("{what}: no run gave a number"))
}

/// `Err` once SIGINT/SIGTERM/SIGHUP asked to stop ([`crate::signals`]); the guards
/// (scratch directory, ftrace instance) then drop on the way out.
fn stopped() -> Result<(), String> {
    match crate::signals::stop_requested() {
        true => Err("stopped by a signal before it finished; nothing written".into()),
        false => Ok(()),
    }
}

/// Tell `progress` of the next step, unless a signal asked to stop ([`stopped`]).
fn step(progress: &mut dyn FnMut(&str), what: &str) -> Result<(), String> {
    stopped()?;
    progress(what);
    Ok(())
}

/// Calibrate this machine; `progress` is told of each step as it starts. A signal
/// ([`crate::signals`]) ends it at the next step.
pub fn run(opts: &Options, progress: &mut dyn FnMut(&str)) -> Result<Calibration, String> {
    let started = std::time::Instant::now();
    let p = Plan::new(opts.quick);
    let mut notes = Vec::new();
    let mut fields = Vec::new();

    step(progress, "reading sysfs and procfs")?;
    let cpus = sys::online_cpus();
    let topology = TopologyOut {
        smt_siblings: sys::smt_siblings(&cpus),
        numa_nodes: sys::numa_nodes(&cpus),
        caches: sys::caches(&cpus),
        cpus: cpus.clone(),
    };
    let model = sys::cpu_model();
    let allowed = crate::parse::allowed_cpus();
    let bench_cpu = allowed.first().copied().unwrap_or(0);

    let (mhz, mhz_from) = sys::cpu_mhz(&cpus).ok_or("no CPU clock in /proc/cpuinfo or cpufreq")?;
    let mhz = need("cpu MHz", Stat::of(&mhz))?;
    let mut f = measured("cpu_mhz", mhz, "MHz", "", false);
    f.source = Source::Read;
    f.how = format!(
        "read: {mhz_from}, the median of {} CPUs, p5-p95 {}-{} MHz",
        mhz.runs, mhz.p5, mhz.p95
    );
    if mhz.p5 == mhz.p95 {
        f.spread = Spread::Given;
    }
    fields.push(f);

    let online = cpus.len() as u32;
    fields.push(read_field(
        "cpus",
        Num::Whole(u64::from(online.min(opts.max_cpus))),
        match online > opts.max_cpus {
            true => format!(
                "read: {online} CPUs online (/sys/devices/system/cpu/online), capped at the model's {}; [host.topology] keeps them all",
                opts.max_cpus
            ),
            false => "read: the CPUs online (/sys/devices/system/cpu/online)".into(),
        },
    ));

    match topology.smt_siblings.iter().find(|s| s.len() > 1) {
        Some(pair) => {
            step(progress, "sibling speed (busy loops on SMT siblings)")?;
            let (a, b) = (pair[0] as usize, pair[1] as usize);
            let s = need(
                "sibling speed",
                Stat::repeat(p.runs.min(7), || {
                    bench::sibling_speed(a, b, p.spin_ms).unwrap_or(f64::NAN)
                }),
            )?;
            fields.push(measured(
                "sibling_speed",
                s,
                "",
                &format!(
                    "measured: a busy loop's rate on CPU {a} beside one on its SMT sibling {b}, over its rate alone"
                ),
                false,
            ));
        }
        None => fields.push(read_field(
            "sibling_speed",
            Num::Real(1.0),
            "read: no CPU has an SMT sibling (topology/thread_siblings_list): separate cores keep their speed".into(),
        )),
    }

    fields.push(estimate(
        "kernel_cpi",
        Num::Real(1.0),
        "estimate: not measured (latlab counts no instructions: no performance counters are read); 1.0 for a modern out-of-order core".into(),
    ));

    step(progress, "memory latency (pointer chase)")?;
    let avail = sys::meminfo_kib("MemAvailable").unwrap_or(0) as usize * 1024;
    let llc = topology
        .caches
        .iter()
        .map(|c| c.size_kib as usize * 1024)
        .max()
        .unwrap_or(0);
    let chase = match opts.quick {
        true => p.chase_bytes,
        false => (4 * llc).clamp(p.chase_bytes, 1 << 30),
    }
    .min((avail / 4).max(16 << 20));
    let lat = need(
        "memory latency",
        Stat::repeat(p.runs.min(7), || {
            bench::mem_latency_ns(chase, p.chase_loads).unwrap_or(f64::NAN)
        }),
    )?;
    fields.push(measured(
        "mem_latency_ns",
        lat,
        "ns",
        &format!("measured: a pointer chase through a random cycle of {} MiB, one load per 64-byte line (lmbench lat_mem_rd), in huge pages where the kernel gives them (MADV_HUGEPAGE), as its own memory is mapped", chase >> 20),
        false,
    ));
    let copy = need(
        "page copy",
        Stat::repeat(p.runs.min(7), || bench::page_copy_mb_s(p.copy_bytes)),
    )?;
    fields.push(measured(
        "copy_mb_s",
        copy,
        "MB/s",
        &format!(
            "measured: 4 KiB copies out of a {} MiB buffer in user space (memcpy)",
            p.copy_bytes >> 20
        ),
        false,
    ));

    let kib = |k: &str| sys::meminfo_kib(k).ok_or_else(|| format!("/proc/meminfo has no {k}"));
    let ram = kib("MemTotal")? / 1024;
    fields.push(read_field(
        "ram_mib",
        Num::Whole(ram.clamp(16, 1 << 20)),
        match ram > 1 << 20 {
            true => format!("read: /proc/meminfo MemTotal ({ram} MiB), capped at the model's 1 TiB"),
            false => "read: /proc/meminfo MemTotal".into(),
        },
    ));
    let swap = kib("SwapTotal")? / 1024;
    fields.push(read_field(
        "swap_mib",
        Num::Whole(swap.min(1 << 16)),
        match swap > 1 << 16 {
            true => format!("read: /proc/meminfo SwapTotal ({swap} MiB), capped at the model's 64 GiB"),
            false => "read: /proc/meminfo SwapTotal".into(),
        },
    ));

    step(
        progress,
        "system call, sched_yield, signal, thread, fork+exec, page fault, pipe switch",
    )?;
    let syscall = need("syscall", Stat::repeat(p.runs, || bench::syscall_ns(p.syscalls)))?;
    let yield_ = need(
        "sched_yield",
        Stat::repeat(p.runs, || bench::sched_yield_ns(p.syscalls)),
    )?;
    let signal = need(
        "signal",
        Stat::repeat(p.runs, || bench::signal_ns(p.signals).unwrap_or(f64::NAN)),
    )?;
    let thread = need(
        "thread",
        Stat::repeat(p.runs, || bench::thread_create_exit_ns(p.threads).unwrap_or(f64::NAN)),
    )?;
    let fork_exec = Stat::repeat(p.runs, || bench::fork_exec_ns(p.spawns).unwrap_or(f64::NAN))
        .ok_or_else(|| "fork+exec of /bin/true failed".to_string());
    let fault = Stat::repeat(p.runs, || bench::page_fault_ns(p.fault_pages).unwrap_or(f64::NAN))
        .ok_or_else(|| "mmap failed".to_string());
    let switch = Stat::repeat(p.runs, || {
        bench::pipe_switch_ns(bench_cpu, p.switches).unwrap_or(f64::NAN)
    })
    .ok_or_else(|| format!("the pipe ping-pong on CPU {bench_cpu} failed"));

    fields.push(measured(
        "syscall_ns",
        syscall,
        "ns",
        &format!("measured: syscall(SYS_getppid) in a loop of {}", p.syscalls),
        true,
    ));
    let sw = switch.clone()?;
    fields.push(measured(
        "ctx_switch_ns",
        sw,
        "ns",
        &format!("measured: a pipe pair's ping-pong between two threads pinned to CPU {bench_cpu}, less the pipe's own write+read (lmbench lat_ctx)"),
        true,
    ));
    fields.push(measured(
        "schedule_base_ns",
        yield_.less(syscall.median, 1.0),
        "ns",
        "measured: sched_yield() with nothing else to run, less a system call",
        true,
    ));
    fields.push(measured(
        "signal_deliver_ns",
        signal.less(syscall.median, 1.0),
        "ns",
        "measured: raise(SIGUSR1) caught by an empty handler (lmbench lat_sig catch), less a system call",
        true,
    ));
    fields.push(measured(
        "thread_create_exit_ns",
        thread,
        "ns",
        "measured: a thread created, exiting and joined (pthread_create/pthread_join)",
        true,
    ));

    step(progress, "timer interrupts and noise (a busy loop on every CPU)")?;
    let threshold_ns = 1_000;
    let loc_before: Vec<Option<u64>> = cpus.iter().map(|&c| sys::local_timer_interrupts(c)).collect();
    let steal_before = sys::steal_ns(&cpus);
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let traced = match root {
        true => noise::detect_traced(&cpus, p.noise_ns, threshold_ns),
        false => Err("not root: tracefs is not used".into()),
    };
    let (mut gaps, trace) = match traced {
        Ok((g, t)) => (g, Some(t)),
        Err(why) => {
            notes.push(format!(
                "timer interrupts not traced ({why}): the handler's share is estimated"
            ));
            (noise::detect(&cpus, p.noise_ns, threshold_ns)?, None)
        }
    };
    let steal_after = sys::steal_ns(&cpus);
    let secs = p.noise_ns as f64 / 1e9;
    let loc_rate: Vec<f64> = cpus
        .iter()
        .zip(&loc_before)
        .filter_map(|(&c, b)| Some((sys::local_timer_interrupts(c)? - (*b)?) as f64 / secs))
        .collect();

    let hz = match sys::config_hz() {
        Some(hz) => (
            hz,
            "read: CONFIG_HZ of the kernel config (/proc/config.gz or /boot)".to_string(),
        ),
        None => {
            let r = need("local timer interrupts", Stat::of(&loc_rate))?;
            (
                r.median.round().clamp(10.0, 10_000.0) as u32,
                format!(
                    "measured: local timer interrupts (/proc/interrupts LOC) per second on a busy CPU, {}",
                    r.describe("/s")
                ),
            )
        }
    };
    let preempt = crate::meta::preemption(&std::fs::read_to_string("/proc/cmdline").unwrap_or_default());
    let (mode, from) = preempt.split_once(" (").unwrap_or((&preempt, ")"));
    let kernel = KernelOut {
        release: crate::meta::kernel(),
        hz: hz.0,
        hz_how: hz.1,
        preemption: mode.to_string(),
        preemption_how: format!("read: {}", from.trim_end_matches(')')),
    };

    if trace.is_none() {
        // Within 20 us of the period: a stray gap lands there by chance some 2 % of the time
        // at the hundreds of gaps a second a busy guest sees.
        for (_, g) in &mut gaps {
            noise::mark_ticks(g, 1_000_000_000 / u64::from(kernel.hz), 20_000);
        }
    }
    let quiet: Vec<&noise::Gap> = gaps.iter().flat_map(|(_, g)| g).filter(|g| !g.switched).collect();
    // Each figure from the trace where it gave one, else from the gaps alone: a busy machine
    // may leave no gap holding exactly one timer interrupt in a short run.
    let traced = |f: fn(&noise::TimerTrace) -> &Vec<f64>| trace.as_ref().and_then(|t| Stat::of(f(t)));
    let lens = |tick: bool| -> Vec<f64> {
        quiet
            .iter()
            .filter(|g| g.timer || !tick)
            .map(|g| g.len_ns() as f64)
            .collect()
    };
    let gap = Stat::of(&lens(true)).or_else(|| Stat::of(&lens(false))).ok_or_else(|| {
        format!("no gap of 1 us or more on any CPU in {secs} s: nothing to time the timer interrupt by")
    });
    let entry_exit = match traced(|t| &t.entry_exit_ns) {
        Some(s) => {
            fields.push(measured(
                "irq_entry_exit_ns",
                s,
                "ns",
                "measured: of each gap a busy loop saw holding one local timer interrupt, the gap less the interrupt's handler (irq_vectors:local_timer_entry to exit, traced on the same clock); the figure's runs are the gaps",
                true,
            ));
            s.median
        }
        None => {
            let ee = syscall.median.min(gap.clone()?.median / 2.0).max(1.0).round();
            fields.push(estimate(
                "irq_entry_exit_ns",
                Num::Whole(ee as u64),
                "estimate: a system call's entry and exit (measured above; interrupts take the same path), as no traced gap held one timer interrupt alone".into(),
            ));
            ee
        }
    };
    if root {
        step(
            progress,
            "interrupt entry and exit on an idle CPU (timer wakeups, traced)",
        )?;
        let schedule_ns = yield_.less(syscall.median, 1.0).median;
        let idle = idle::measure(bench_cpu as u32, p.idle_wakeups, p.idle_period_ns, schedule_ns);
        match idle.as_ref().map(|(c, n)| (Stat::of(c), c.len(), *n)) {
            Ok((Some(s), idle_n, n)) => fields.push(measured(
                "idle_irq_entry_exit_ns",
                s,
                "ns",
                &format!(
                    "measured: {idle_n} of {n} timer wakeups of a thread pinned to CPU {bench_cpu} (clock_nanosleep TIMER_ABSTIME every {} ms, timer slack 1 ns) whose interrupt found the CPU idle: the intended expiry to irq_vectors:local_timer_entry, plus local_timer_exit to the switch from the idle task less a schedule() (schedule_base_ns), traced on the same clock; the figure's runs are the wakeups",
                    p.idle_period_ns / 1_000_000
                ),
                true,
            )),
            Ok((None, _, n)) => notes.push(format!(
                "idle_irq_entry_exit_ns not measured: none of {n} timer wakeups on CPU {bench_cpu} found it idle (the machine is busy); the model charges an idle CPU irq_entry_exit_ns"
            )),
            Err(why) => notes.push(format!(
                "idle_irq_entry_exit_ns not measured ({why}); the model charges an idle CPU irq_entry_exit_ns"
            )),
        }
    }
    let handler = match traced(|t| &t.handler_ns) {
        Some(s) => measured(
            "tick_handler_ns",
            s,
            "ns",
            "measured: irq_vectors:local_timer_entry to local_timer_exit on busy CPUs (tracefs); the figure's runs are the interrupts",
            true,
        ),
        None => measured(
            "tick_handler_ns",
            gap.clone()?.less(entry_exit, 1.0),
            "ns",
            "measured: the gaps a busy loop saw one tick period apart (the tick, told by its rhythm; not traced), less irq_entry_exit_ns; the figure's runs are the gaps",
            true,
        ),
    };
    fields.push(match traced(|t| &t.hrtimer_ns) {
        Some(s) => measured(
            "hrtimer_handler_ns",
            s,
            "ns",
            "measured: timer:hrtimer_expire_entry to exit (mostly tick_sched_timer) on busy CPUs (tracefs); the figure's runs are the expiries",
            true,
        ),
        None => estimate(
            "hrtimer_handler_ns",
            handler.value,
            "estimate: tick_handler_ns (the tick is an hrtimer expiry, tick_sched_timer), as no expiry was traced".into(),
        ),
    });
    fields.push(handler);
    let timer_cost = match traced(|t| &t.whole_ns) {
        Some(s) => (
            Ok(s),
            "the gap a busy loop saw around one local timer interrupt (tracefs), whole",
        ),
        None => (
            gap,
            "the gaps a busy loop saw one tick period apart, without a context switch (the tick, told by its rhythm; not traced)",
        ),
    };
    let tick = fields
        .iter()
        .find(|f| f.key == "tick_handler_ns")
        .map_or(1, |f| f.value.get() as u64);
    let hrtimer = fields
        .iter()
        .find(|f| f.key == "hrtimer_handler_ns")
        .map_or(1, |f| f.value.get() as u64);
    fields.push(estimate(
        "rtc_handler_ns",
        Num::Whole(hrtimer),
        "estimate: hrtimer_handler_ns (rtc-cmos runs the RTC's periodic interrupt as an hrtimer on this kernel; the RTC is not timed)".into(),
    ));
    fields.push(estimate(
        "disk_handler_ns",
        Num::Whole(tick),
        "estimate: tick_handler_ns (the disk's completion interrupt is not timed)".into(),
    ));
    let cycles_per_ns = fields[0].value.get() / 1000.0;
    fields.push(estimate(
        "goodness_per_task_ns",
        Num::Whole((30.0 / cycles_per_ns).round().max(1.0) as u64),
        "estimate: ~30 instructions at kernel_cpi and cpu_mhz (2.4's goodness(); no kernel of today has it)".into(),
    ));

    let lost: u64 = quiet.iter().filter(|g| !g.timer).map(|g| g.len_ns()).sum();
    let noise_gaps: Vec<&&noise::Gap> = quiet.iter().filter(|g| !g.timer).collect();
    let lens: Vec<u64> = noise_gaps.iter().map(|g| g.len_ns()).collect();
    let mut by_cpu: Vec<(u32, usize)> = gaps
        .iter()
        .map(|(c, g)| (*c, g.iter().filter(|g| !g.switched && !g.timer).count()))
        .collect();
    by_cpu.sort_unstable();
    let span_s = secs * cpus.len() as f64;
    let steal_percent = match (steal_before, steal_after) {
        (Some(a), Some(b)) => Some(stats::round_sig((b.saturating_sub(a)) as f64 / 1e9 / span_s * 100.0)),
        _ => None,
    };
    let tracers = std::fs::read_to_string("/sys/kernel/tracing/available_tracers").unwrap_or_default();
    let kernel_has: Vec<&str> = tracers
        .split_whitespace()
        .filter(|t| ["hwlat", "osnoise"].contains(t))
        .collect();
    let noise = NoiseOut {
        source: format!(
            "user-space gap detector: a loop reading CLOCK_MONOTONIC on every CPU, gaps of 1 us or more without a context switch{}; hwlat and osnoise {}",
            match trace {
                Some(_) => ", less those holding a local timer interrupt (tracefs)",
                None => ", less those recurring one tick period apart (the tick, told by its rhythm: not traced)",
            },
            match kernel_has.is_empty() {
                true => "are not in this kernel's available_tracers".to_string(),
                false => format!("({}) are in this kernel but not driven by latlab yet", kernel_has.join(", ")),
            }
        ),
        duration_s: secs,
        cpus: cpus.len() as u32,
        threshold_us: threshold_ns as f64 / 1000.0,
        gaps: noise_gaps.len() as u64,
        gaps_per_s: stats::round_sig(noise_gaps.len() as f64 / span_s),
        max_us: stats::round_sig(noise_gaps.iter().map(|g| g.len_ns()).max().unwrap_or(0) as f64 / 1000.0),
        lost_percent: stats::round_sig(lost as f64 / 1e9 / span_s * 100.0),
        steal_percent,
        per_cpu_gaps_per_s: by_cpu.iter().map(|&(_, n)| stats::round_sig(n as f64 / secs)).collect(),
        lengths_us: noise::length_quantiles(&lens),
    };

    step(progress, "disk: buffered writes, fsync")?;
    let scratch = disk::Scratch::new(&opts.dir)?;
    let mut writes = Vec::new();
    for _ in 0..p.write_runs {
        stopped()?;
        writes.push(disk::write_run(&scratch, p.write_mib)?);
    }
    let fsyncs = disk::fsync_us(&scratch, p.fsyncs)?;
    drop(scratch);
    let buffered = need(
        "write",
        Stat::of(&writes.iter().map(|w| w.buffered_mb_s).collect::<Vec<_>>()),
    )?;
    let synced = need(
        "write+fsync",
        Stat::of(&writes.iter().map(|w| w.synced_mb_s).collect::<Vec<_>>()),
    )?;
    let fsync = need("fsync", Stat::of(&fsyncs))?;
    let dev = sys::block_device(&opts.dir);
    let dev_name = dev.as_ref().map_or_else(
        || format!("none ({} is on no block device: tmpfs or overlay)", opts.dir.display()),
        |d| d.name.clone(),
    );
    let half = fsync.scaled(500.0);
    let access = format!(
        "measured: half the fsync of one freshly written 4 KiB block on {dev_name} ({}); {}",
        fsync.describe("us"),
        match dev.as_ref().is_some_and(|d| d.rotational) {
            true => "the seek curve is not measured: flat, and the rest of the access in half_rotation_ns",
            false => "the device does not rotate (queue/rotational 0): the access is split evenly between a flat seek curve and this field, so each access costs the fsync's time",
        }
    );
    for key in ["disk.track_to_track_ns", "disk.full_stroke_ns", "disk.half_rotation_ns"] {
        let mut f = measured(key, half, "ns", "", true);
        f.how = access.clone();
        fields.push(f);
    }
    let capacity = dev.as_ref().map(|d| d.capacity_gb).filter(|&c| c > 0.0);
    fields.push(match capacity {
        Some(c) => read_field(
            "disk.capacity_gb",
            Num::Real(stats::round_sig(c).max(0.001)),
            format!("read: /sys/block/{dev_name}/size"),
        ),
        None => estimate(
            "disk.capacity_gb",
            Num::Real(100.0),
            "estimate: no block device to read".into(),
        ),
    });
    fields.push(measured(
        "disk.seq_mb_s",
        synced,
        "MB/s",
        &format!(
            "measured: {} MiB written in 1 MiB records and fsync'd, over the write and the fsync",
            p.write_mib
        ),
        false,
    ));
    let from_dev = |key: &'static str, v: Option<u64>, lo: u64, hi: u64, file: &str, default: u64| match v {
        Some(v) => read_field(
            key,
            Num::Whole(v.clamp(lo, hi)),
            format!("read: /sys/block/{dev_name}/{file}"),
        ),
        None => estimate(
            key,
            Num::Whole(default),
            format!("estimate: no /sys/block/.../{file} to read"),
        ),
    };
    let d = dev.clone().unwrap_or_default();
    fields.push(from_dev(
        "disk.max_request_kib",
        d.max_sectors_kb,
        4,
        1 << 20,
        "queue/max_sectors_kb",
        512,
    ));
    fields.push(from_dev(
        "disk.nr_requests",
        d.nr_requests,
        1,
        1 << 20,
        "queue/nr_requests",
        128,
    ));
    let (qd, qd_file) = d
        .queue_depth
        .map_or((None, "device/queue_depth"), |(v, f)| (Some(v), f));
    fields.push(from_dev("disk.queue_depth", qd, 1, 10_240, qd_file, 1));
    let storage = StorageOut {
        device: dev_name,
        rotational: d.rotational,
        write_mb_s: buffered,
        fsync_us: fsync,
    };

    step(progress, "loopback TCP")?;
    let net = need(
        "loopback",
        Stat::repeat(p.runs.min(5), || {
            bench::loopback_mb_s(p.loopback_bytes).unwrap_or(f64::NAN)
        }),
    )?;
    fields.push(measured(
        "net_mb_s",
        net,
        "MB/s",
        &format!(
            "measured: {} MiB over a loopback TCP connection (the model's NFS runs over loopback)",
            p.loopback_bytes >> 20
        ),
        false,
    ));

    let costs = vec![
        Cost {
            key: "syscall_ns",
            stat: Ok(syscall),
            how: format!("syscall(SYS_getppid), {} per run", p.syscalls),
        },
        Cost {
            key: "ctx_switch_ns",
            stat: switch,
            how: format!(
                "pipe ping-pong of two threads pinned to CPU {bench_cpu}, per switch, less the pipe's own cost"
            ),
        },
        Cost {
            key: "fork_exec_ns",
            stat: fork_exec,
            how: format!(
                "/bin/true spawned (posix_spawn or fork+exec) and waited for, {} per run",
                p.spawns
            ),
        },
        Cost {
            key: "page_fault_ns",
            stat: fault,
            how: format!(
                "{} fresh anonymous pages (MADV_NOHUGEPAGE) each written once, per page",
                p.fault_pages
            ),
        },
        Cost {
            key: "timer_interrupt_ns",
            stat: timer_cost.0,
            how: timer_cost.1.into(),
        },
    ];
    for c in &costs {
        if let Err(why) = &c.stat {
            notes.push(format!("{} not measured: {why}", c.key));
        }
    }

    order_like_the_profile(&mut fields);
    let ram_gib = ram as f64 / 1024.0;
    Ok(Calibration {
        name: sys::hostname(),
        description: format!(
            "{model}, {online} CPUs, {ram_gib:.1} GiB, disk {} (latlab probe calibrate{}, Linux {})",
            storage.device,
            if opts.quick { " --quick" } else { "" },
            kernel.release
        ),
        fields,
        topology,
        kernel,
        costs,
        storage,
        noise,
        notes,
        wall_s: started.elapsed().as_secs_f64(),
    })
}

/// The profile's own field order (machine.rs), so the file reads like machines/*.toml.
const ORDER: [&str; 29] = [
    "cpu_mhz",
    "cpus",
    "sibling_speed",
    "kernel_cpi",
    "mem_latency_ns",
    "copy_mb_s",
    "ram_mib",
    "swap_mib",
    "irq_entry_exit_ns",
    "idle_irq_entry_exit_ns",
    "tick_handler_ns",
    "rtc_handler_ns",
    "disk_handler_ns",
    "syscall_ns",
    "ctx_switch_ns",
    "schedule_base_ns",
    "goodness_per_task_ns",
    "hrtimer_handler_ns",
    "signal_deliver_ns",
    "thread_create_exit_ns",
    "net_mb_s",
    "disk.track_to_track_ns",
    "disk.full_stroke_ns",
    "disk.half_rotation_ns",
    "disk.capacity_gb",
    "disk.seq_mb_s",
    "disk.max_request_kib",
    "disk.nr_requests",
    "disk.queue_depth",
];

fn order_like_the_profile(fields: &mut [Field]) {
    fields.sort_by_key(|f| ORDER.iter().position(|k| *k == f.key).unwrap_or(ORDER.len()));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat(median: f64, p5: f64, p95: f64) -> Stat {
        Stat {
            median,
            p5,
            p95,
            runs: 5,
        }
    }

    /// The `[uncertainty]` bounds a measured field gets hold its value (the loader refuses
    /// bounds that do not), whole or not, and a p5 of 0 falls back to `estimate`.
    #[test]
    fn a_measured_fields_bounds_hold_its_value() {
        let f = measured("syscall_ns", stat(95.4, 95.4, 120.2), "ns", "m", true);
        assert_eq!(f.value, Num::Whole(95));
        assert_eq!(f.spread, Spread::Bounds(95.0, 121.0));
        let f = measured("syscall_ns", stat(0.3, 0.2, 0.4), "ns", "m", true);
        assert_eq!(f.value, Num::Whole(1));
        assert_eq!(f.spread, Spread::Estimate);
        let f = measured("copy_mb_s", stat(12345.678, 12000.04, 13000.0), "MB/s", "m", false);
        assert_eq!(f.value, Num::Real(12350.0));
        assert_eq!(f.spread, Spread::Bounds(12000.0, 13000.0));
        assert!(
            f.how.starts_with("m: median of 5 runs, p5-p95 12000-13000 MB/s"),
            "{}",
            f.how
        );
        let mut fields = vec![
            measured("disk.seq_mb_s", stat(1.0, 1.0, 1.0), "", "", false),
            measured("syscall_ns", stat(1.0, 1.0, 1.0), "", "", true),
            measured("cpu_mhz", stat(1.0, 1.0, 1.0), "", "", false),
        ];
        order_like_the_profile(&mut fields);
        let keys: Vec<&str> = fields.iter().map(|f| f.key).collect();
        assert_eq!(keys, ["cpu_mhz", "syscall_ns", "disk.seq_mb_s"]);
    }
}
