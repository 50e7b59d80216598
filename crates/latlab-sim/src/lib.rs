//! latlab-sim: a deterministic discrete-event model of a uniprocessor Linux kernel, in
//! which each latency mechanism of the seeds is real, switchable code.
//!
//! A run ([`simulate`]) takes a [`SimConfig`]: a [`MachineProfile`] (hardware and costs), a
//! [`Variant`] (the kernel's switches: preemption model, rescheduling points, scheduler,
//! swap allocator), a workload (task programs) and the measurement (realfeel at a rate). It
//! returns a [`latlab_core::RunResult`], the same type the host probe produces.
//!
//! **Determinism.** Time is integer nanoseconds; events due at the same instant fire in the
//! order they were scheduled ([`engine`]); all randomness comes from one seeded ChaCha
//! stream. The same configuration and seed give a byte-identical result.
//!
//! **Architecture invariant.** This crate knows nothing of files, command lines or output
//! formats: configurations come in as values, results go out as values.

#![forbid(unsafe_code)]

pub mod assemble;
pub mod cpu;
pub mod dev;
pub mod engine;
pub mod fs;
pub mod kernel;
pub mod machine;
pub mod measure;
pub mod mm;
pub mod net;
pub mod sched;
pub mod spread;
pub mod variant;
pub mod workload;

pub use kernel::posix_timer::Notify;
pub use machine::{CostOverride, DiskProfile, MachineProfile};
pub use variant::{PreemptModel, SchedClass, Variant};
pub use workload::script::CommandSpec;

/// The most CPUs a kernel whose CPUs share one runqueue (goodness24, O(1)) is modelled on:
/// every CPU's pick walks the shared queue past the tasks the others run.
pub const MAX_SHARED_QUEUE_CPUS: u32 = 8;

use cpu::kthreads::KthreadProg;
use cpu::Kernel;
use fs::state::FsState;
use kernel::catalog::Point;
use kernel::state::Kthread;
use kernel::task::Policy;
use kernel::tracepoint;
use latlab_core::{Engine, Nanos, RunMeta, RunResult};
use std::collections::BTreeMap;
use std::ops::ControlFlow;
use workload::script::Shell;
use workload::TaskSpec;

/// A workload: a script of commands run by a shell, on a machine in a given state.
#[derive(Clone, Debug, PartialEq)]
pub struct Workload {
    pub name: String,
    pub commands: Vec<CommandSpec>,
    /// Idle time between commands (an unscripted run), ms.
    pub gap_ms: u64,
    pub preload: Preload,
    /// Tasks started with the run beside the script, running until it ends
    /// ([`workload::task`]).
    pub tasks: Vec<workload::task::TaskDef>,
}

/// The state the machine is in when the run starts.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Preload {
    /// Page cache full of clean pages of old files (a machine that has been up for a while).
    pub cache_full: bool,
    /// With `cache_full`: the cache filled the way it fills on a running box, by reading
    /// (`cat`) old files through the page cache, as much as the machine has RAM, so that the
    /// VM has reclaimed before the run begins (kswapd's first calls, with the dcache pruning
    /// and swap-out they bring, lie behind it) and the run starts from what the model's own
    /// VM made of the rest of this preload. Without: the cache is filled in place, free
    /// memory left at pages_high, and the first reclaim call of the box's life falls in the
    /// run.
    pub reclaimed_before: bool,
    /// Mean size of those old files, KiB.
    pub old_file_kb: u64,
    /// Unused dentries (with their inodes) left by earlier activity, e.g. updatedb's nightly
    /// walk of the whole filesystem.
    pub unused_dentries: u64,
    /// Those dentries carry DCACHE_REFERENCED: they were looked up again since they were
    /// created (updatedb's walk hits the dentries the previous night's walk left).
    pub referenced: bool,
    /// With `reclaimed_before`: the nightly updatedb ran after the page cache was last
    /// filled, so the `unused_dentries` are made by its walk in the box's history (an lstat()
    /// of each name, after the `cat`; a second night's walk if `referenced`) through the
    /// model's own VM, instead of being placed before the history, whose reclaim prunes most
    /// of them.
    pub updatedb_after: bool,
    /// Idle processes' anonymous memory, MiB (a desktop's X server and applications): mapped
    /// pages on the LRU that reclaim meets and swap_out can take.
    pub idle_anon_mib: u64,
    /// Idle processes' memory that earlier reclaim already swapped out, MiB. `swap_out`
    /// takes SWAP_CLUSTER_MAX (32) pages from one address space at a time, and the box has
    /// run short-lived processes meanwhile: the slots lie in runs of 32, every other run
    /// belonging to a process that has since exited (free again). So the swap map holds a
    /// fragmented region twice this size, which `scan_swap_map`'s search for an empty
    /// cluster walks.
    pub swapped_mib: u64,
}

impl Preload {
    /// Can `machine` hold this state and still run a workload? Returns the offending field
    /// and why.
    pub fn validate(&self, machine: &MachineProfile) -> Result<(), (&'static str, String)> {
        if self.updatedb_after && !(self.cache_full && self.reclaimed_before) {
            return Err((
                "updatedb_after",
                "needs cache_full and reclaimed_before: the walk runs in the box's history, after the cache fill"
                    .into(),
            ));
        }
        if !(4..=1 << 20).contains(&self.old_file_kb) {
            return Err((
                "old_file_kb",
                format!("must be 4 KiB .. 1 GiB, got {}", self.old_file_kb),
            ));
        }
        // What the preload pins (idle anonymous memory, dentries with their inodes) must
        // leave a quarter of RAM for the kernel and the workload.
        let ram = machine.ram_mib.saturating_mul(1 << 20);
        let slab = self
            .unused_dentries
            .saturating_mul(mm::vmscan::DENTRY_BYTES + mm::vmscan::INODE_BYTES);
        let anon = self.idle_anon_mib.saturating_mul(1 << 20);
        let swap = machine.swap_mib.saturating_mul(1 << 20);
        // The fragmented region (twice what is swapped) must leave room to swap.
        if self.swapped_mib.saturating_mul(2 << 20) > swap / 4 * 3 {
            return Err((
                "swapped_mib",
                format!(
                    "twice the swapped memory ({} MiB) must fit in 3/4 of the machine's {} MiB of swap",
                    self.swapped_mib.saturating_mul(2),
                    machine.swap_mib
                ),
            ));
        }
        if anon.saturating_add(slab) > ram / 4 * 3 {
            let field = if anon > slab {
                "idle_anon_mib"
            } else {
                "unused_dentries"
            };
            return Err((
                field,
                format!(
                    "idle memory ({} MiB) and dentries with their inodes ({} MiB) must fit in 3/4 of the machine's {} MiB",
                    anon >> 20,
                    slab >> 20,
                    machine.ram_mib
                ),
            ));
        }
        Ok(())
    }
}

/// Everything one model run needs.
#[derive(Clone, Debug)]
pub struct SimConfig {
    pub machine: MachineProfile,
    pub variant: Variant,
    pub workload: Workload,
    /// RTC interrupt rate for realfeel, Hz.
    pub rtc_hz: u32,
    /// realfeel's SCHED_FIFO priority.
    pub rt_priority: u32,
    pub seed: u64,
    /// Keep running (idle) after the workload until this much simulated time has passed.
    pub min_duration_ns: Nanos,
    /// Stop here even if the workload is not done.
    pub max_duration_ns: Nanos,
    /// Measure seed 004's POSIX-timer wakeup latency instead of realfeel.
    pub posix_timer: Option<PosixTest>,
    /// Run realfeel (without `posix_timer`); off when only the workload's own write(2)
    /// times are measured (seed 001).
    pub realfeel: bool,
    /// Run the voluntary-preempt tracer (seed 003) beside the measurement, keeping the worst
    /// stretches that ended with the swap fill in this window, percent [low, high].
    pub preempt_off: Option<[u64; 2]>,
    /// The kernel's `maxcpus=` boot parameter: it brings up at most this many of the machine's
    /// logical CPUs (all of them when None).
    pub maxcpus: Option<u32>,
    /// Keep every timed write(2) of a write stream in the result (`Stream::records`, iozone
    /// `-Q`'s per-record files); off, only the histogram and the slowest are kept.
    pub keep_records: bool,
    /// Record the kernel's trace events around the worst samples of each stream, keeping at
    /// most this many events per sample (`Stream::recorded`, what `latlab report trace`
    /// exports); None: nothing is recorded.
    pub record_events: Option<usize>,
    /// Replay the machine's host noise (`[host.noise]`: gaps that are not the kernel's,
    /// `cpu/host_gap.rs`) from the run's start; off, the model never reads it. A run that
    /// replays it says so in its metadata (`host_noise`) and counts the gaps (`host_gaps`,
    /// `host_gap_us`).
    pub replay_noise: bool,
}

impl SimConfig {
    /// The logical CPUs the kernel runs on: the machine's, at most `maxcpus`.
    pub fn cpus(&self) -> u32 {
        self.maxcpus.map_or(self.machine.cpus, |n| n.min(self.machine.cpus))
    }
}

/// Seed 004's wakeup-latency test ([`workload::posix_test`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PosixTest {
    pub notify: Notify,
    /// The timer's period, ns.
    pub period_ns: Nanos,
}

#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error("machine profile `{profile}`: field `{field}`: {why}")]
    Machine {
        profile: String,
        field: &'static str,
        why: String,
    },
    #[error("kernel variant `{variant}`: field `{field}`: {why}")]
    Variant {
        variant: String,
        field: &'static str,
        why: String,
    },
    #[error("workload `{workload}`: preload field `{field}`: {why}")]
    Preload {
        workload: String,
        field: &'static str,
        why: String,
    },
    #[error("workload `{workload}`: `{field}`: {why}")]
    Workload {
        workload: String,
        field: &'static str,
        why: String,
    },
    #[error("workload `{workload}`: `{}`: {}", .err.field, .err.why)]
    Task {
        workload: String,
        err: workload::task::TaskError,
    },
    #[error("swap: {0}")]
    Swap(#[from] latlab_swap::SwapError),
    #[error("rtc_hz must be 2..=8192 (a power of two for the MC146818), got {0}")]
    RtcHz(u32),
    #[error(
        "kernel variant `{0}` has no POSIX timers: timer_create arrived in 2.6 (sched goodness24 is a 2.4 kernel)"
    )]
    NoPosixTimers(String),
    #[error("POSIX timer period must be 100 us ..= 10 s, got {0} ns")]
    TimerPeriod(Nanos),
}

/// Progress callback: simulated ns so far, target ns.
pub type Progress<'a> = &'a mut dyn FnMut(Nanos, Nanos);

/// Statistics of the engine itself (for benchmarks).
#[derive(Clone, Copy, Debug, Default)]
pub struct EngineStats {
    pub events: u64,
    pub simulated_ns: Nanos,
}

/// Run one model configuration.
pub fn simulate(cfg: &SimConfig, progress: Progress) -> Result<(RunResult, EngineStats), SimError> {
    simulate_stoppable(cfg, &mut |now, goal| {
        progress(now, goal);
        ControlFlow::Continue(())
    })
}

/// Progress callback that may end the run: simulated ns so far, target ns; `Break` stops the
/// run there (a SIGINT), and [`simulate_stoppable`] returns what it measured until then.
pub type StoppableProgress<'a> = &'a mut dyn FnMut(Nanos, Nanos) -> ControlFlow<()>;

/// [`simulate`], asking `progress` after every simulated second whether to go on: a run it
/// stops returns its partial result (its `duration_ns` the simulated time it reached). The
/// question costs nothing in the run's loop between events.
pub fn simulate_stoppable(cfg: &SimConfig, progress: StoppableProgress) -> Result<(RunResult, EngineStats), SimError> {
    cfg.machine.validate().map_err(|(field, why)| SimError::Machine {
        profile: cfg.machine.name.clone(),
        field,
        why,
    })?;
    cfg.variant.validate().map_err(|(field, why)| SimError::Variant {
        variant: cfg.variant.name.clone(),
        field,
        why,
    })?;
    if !dev::rtc::periodic_rate_ok(cfg.rtc_hz.into()) {
        return Err(SimError::RtcHz(cfg.rtc_hz));
    }
    if let Some(p) = &cfg.posix_timer {
        if !cfg.variant.has_posix_timers() {
            return Err(SimError::NoPosixTimers(cfg.variant.name.clone()));
        }
        if !(100_000..=10_000_000_000).contains(&p.period_ns) {
            return Err(SimError::TimerPeriod(p.period_ns));
        }
    }
    cfg.workload
        .preload
        .validate(&cfg.machine)
        .map_err(|(field, why)| SimError::Preload {
            workload: cfg.workload.name.clone(),
            field,
            why,
        })?;
    for c in &cfg.workload.commands {
        let bad = |field, why| SimError::Workload {
            workload: cfg.workload.name.clone(),
            field,
            why,
        };
        let (field, file_mb) = match c {
            CommandSpec::Iozone { file_mb, .. } => ("iozone.file_mb", *file_mb),
            CommandSpec::Sysbench(f) => {
                if let Some((field, why)) = f.check() {
                    return Err(bad(field, why));
                }
                ("sysbench.file_mb", f.file_mb)
            }
            _ => continue,
        };
        let disk_mb = cfg.machine.disk.capacity_gb * 1e9 / (1 << 20) as f64;
        if file_mb as f64 > disk_mb {
            return Err(bad(
                field,
                format!(
                    "{file_mb} MB of files does not fit on machine `{}`'s {} GB disk",
                    cfg.machine.name, cfg.machine.disk.capacity_gb
                ),
            ));
        }
    }
    let cpus = cfg.cpus();
    workload::task::check(&cfg.workload.tasks)
        .and_then(|()| {
            workload::task::check_machine(
                &cfg.workload.tasks,
                cpus,
                cfg.variant.per_cpu_runqueues(),
                cfg.variant.has_posix_timers(),
            )
        })
        .map_err(|err| SimError::Task {
            workload: cfg.workload.name.clone(),
            err,
        })?;
    // The machine as booted: `maxcpus` of its CPUs (the scheduler's runqueues and domains).
    let machine = MachineProfile {
        cpus,
        ..cfg.machine.clone()
    };
    let assemble::Assembled {
        sched,
        mut st,
        kthreads,
    } = assemble::assemble(&cfg.variant, &machine)?;
    preload(&mut st, &cfg.workload.preload);
    if cfg.maxcpus == Some(0) {
        return Err(SimError::Workload {
            workload: cfg.workload.name.clone(),
            field: "maxcpus",
            why: "must be at least 1".into(),
        });
    }
    if cpus > 1 {
        let why = if !sched.smp() {
            Some(format!(
                "{cpus} CPUs, but variant `{}`'s `{}` scheduler is modelled on one CPU (`o1`, `cfs` and `eevdf` run on several; a run's `maxcpus = 1` boots it on one)",
                cfg.variant.name,
                sched.name()
            ))
        } else if !sched.per_cpu() && cpus > MAX_SHARED_QUEUE_CPUS {
            Some(format!(
                "{cpus} CPUs, but variant `{}`'s `{}` scheduler shares one runqueue among its CPUs, modelled up to {MAX_SHARED_QUEUE_CPUS} (`cfs` and `eevdf` have a runqueue per CPU, up to {})",
                cfg.variant.name,
                sched.name(),
                machine::MAX_CPUS
            ))
        } else if cfg.preempt_off.is_some() {
            Some(format!(
                "{cpus} CPUs, but the preemption-off latency tracer follows one CPU (a run's `maxcpus = 1` boots the kernel on one)"
            ))
        } else {
            None
        };
        if let Some(why) = why {
            return Err(SimError::Machine {
                profile: cfg.machine.name.clone(),
                field: "cpus",
                why,
            });
        }
    }
    let replay = match (
        cfg.replay_noise,
        cfg.machine.host.as_ref().and_then(|h| h.noise.as_ref()),
    ) {
        (false, _) => None,
        (true, Some(n)) => Some(n.replay().map_err(|(field, why)| SimError::Machine {
            profile: cfg.machine.name.clone(),
            field,
            why,
        })?),
        (true, None) => {
            return Err(SimError::Machine {
                profile: cfg.machine.name.clone(),
                field: "host.noise",
                why: "absent: the host noise to replay comes from a machine file `latlab probe calibrate` wrote".into(),
            })
        }
    };
    let rng = engine::rng_for(cfg.seed, engine::RngStream::Workload);
    // A run with periodic streams takes their measurement; one without runs a kernel whose
    // emitting sites hold none of its code (`measure::Sinks<false>`).
    let periodic = workload::task::stream_names(&cfg.workload.tasks);
    Ok(if periodic.is_empty() {
        let k = Kernel::new(cfg.variant.clone(), machine, sched, st, rng);
        run(
            cfg,
            k,
            kthreads,
            replay,
            |epoch| measure::Sinks::<false>::new(cfg, epoch),
            progress,
        )
    } else {
        let k = Kernel::new(cfg.variant.clone(), machine, sched, st, rng);
        let sinks = |epoch| measure::Sinks::<true>::new(cfg, epoch).with_periodic(&periodic, epoch);
        run(cfg, k, kthreads, replay, sinks, progress)
    })
}

/// Boot kernel `k` (its subsystems' threads `kthreads`), run the box's history if it has
/// one, attach the run's measurements (`sinks`, their clocks from the run's start), start the
/// host noise's `replay` if asked, the measuring task and the workload, and run.
fn run<S: tracepoint::Sink>(
    cfg: &SimConfig,
    mut k: Kernel<S>,
    kthreads: Vec<Kthread>,
    replay: Option<machine::GapReplay>,
    sinks: impl FnOnce(Nanos) -> S,
    progress: StoppableProgress,
) -> (RunResult, EngineStats) {
    // The subsystems' kernel threads, then the measurement task, then the workload's shell.
    for kind in kthreads {
        let pid = k.spawn(TaskSpec::kthread(kind.comm(), KthreadProg::new(kind)), None);
        k.st.register_kthread(kind, pid);
    }
    k.start_irq_threads();
    if cfg.workload.preload.cache_full && cfg.workload.preload.reclaimed_before {
        run_history(&mut k, cfg);
    }
    let epoch = k.now;
    let before = counters(&k);
    // The measurements, subscribed to the kernel's tracepoints.
    k.tp.attach(sinks(epoch));
    if let Some(r) = replay {
        k.replay_host_noise(r, engine::rng_for(cfg.seed, engine::RngStream::HostNoise));
    }
    match cfg.posix_timer {
        Some(p) => {
            k.spawn(
                TaskSpec::user(
                    "wakeup-latency",
                    Box::new(workload::posix_test::WakeupLatency::new(p.notify, p.period_ns)),
                ),
                None,
            );
        }
        None if !cfg.realfeel => {}
        None => {
            k.spawn(
                TaskSpec {
                    policy: Policy::Fifo,
                    rt_priority: cfg.rt_priority,
                    ..TaskSpec::user("realfeel", Box::<workload::realfeel::Realfeel>::default())
                },
                None,
            );
            k.start_rtc(cfg.rtc_hz);
        }
    }
    for spec in workload::task::specs(&cfg.workload.tasks) {
        k.spawn(spec, None);
    }
    k.spawn(
        TaskSpec::user(
            "sh",
            Box::new(Shell::new(
                cfg.workload.commands.clone(),
                cfg.workload.gap_ms * 1_000_000,
            )),
        ),
        None,
    );

    let end = epoch.saturating_add(cfg.max_duration_ns);
    let target = epoch.saturating_add(cfg.min_duration_ns.min(cfg.max_duration_ns));
    while k.now < end && !(k.st.workload_done.is_some() && k.now >= target) {
        let until = (k.now + 1_000_000_000).min(end);
        let goal = target.max(k.now);
        k.run_until(until, |_| {});
        if progress(k.now - epoch, goal - epoch).is_break() {
            break;
        }
    }
    finish(cfg, k, epoch, &before)
}

/// The box's life before the run ([`Preload::reclaimed_before`]): `cat` of old files until
/// as much as RAM has been read, so the page cache is full and the VM has reclaimed before
/// (kswapd's first calls, with the pruning and swap-out they bring, lie behind it). The box
/// then idles to the next whole second, where the run starts.
fn run_history<S: tracepoint::Sink>(k: &mut Kernel<S>, cfg: &SimConfig) {
    let p = &cfg.workload.preload;
    let mut cmds = vec![CommandSpec::CatOld {
        mb: cfg.machine.ram_mib,
        file_kb: p.old_file_kb,
    }];
    if p.updatedb_after {
        cmds.push(CommandSpec::Updatedb {
            files: p.unused_dentries,
            nights: if p.referenced { 2 } else { 1 },
        });
    }
    k.spawn(TaskSpec::user("sh", Box::new(Shell::new(cmds, 0))), None);
    // Reading RAM's worth takes a minute or so on any disk; an hour bounds a machine profile
    // too slow to finish it (the run then starts where the history stopped).
    while k.st.workload_done.is_none() && k.now < HISTORY_LIMIT_NS {
        let until = k.now + 1_000_000_000;
        k.run_until(until, |_| {});
    }
    k.st.workload_done = None;
}

/// Longest the box's history before the run may take.
const HISTORY_LIMIT_NS: Nanos = 3_600_000_000_000;

/// The kernel's event counts so far (a run reports what happened after its start).
fn counters<S: tracepoint::Sink>(k: &Kernel<S>) -> [(&'static str, u64); 14] {
    [
        ("context_switches", k.stats.context_switches),
        ("interrupts", k.stats.irqs),
        ("syscalls", k.stats.syscalls),
        ("schedule_calls", k.stats.schedule_calls),
        ("tasks_created", k.stats.tasks_created),
        ("disk_requests", k.st.disk.served().0),
        ("disk_blocks", k.st.disk.served().1),
        ("disk_blocks_read", k.st.disk.served().2),
        ("buffers_written", k.st.buf.written()),
        ("journal_commits", k.st.jbd.commits()),
        ("pages_swapped_out", k.st.mm.counters().swapouts),
        ("idle_ms", k.stats.idle_ns / 1_000_000),
        ("reclaim_calls", k.st.mm.counters().reclaims),
        ("reclaim_calls_to_priority_1", k.st.mm.counters().reclaims_to_priority_1),
    ]
}

fn preload(st: &mut FsState, p: &Preload) {
    // Idle desktop processes: four address spaces (X, window manager, panel, browser) whose
    // pages nobody has touched lately; mm ids above any the kernel hands out.
    for i in 0..4u32 {
        let id = u32::MAX - i;
        st.mm.grow(id, p.idle_anon_mib * 256 / 4);
        if let Some(r) = st.mm.mm_struct_mut(id) {
            r.young = 0;
        }
    }
    swapped_history(st, p.swapped_mib * 256);
    if !p.updatedb_after {
        for _ in 0..p.unused_dentries {
            st.dcache.touch_new();
        }
        st.mm
            .take_slab(p.unused_dentries * (mm::vmscan::DENTRY_BYTES + mm::vmscan::INODE_BYTES));
        if !p.referenced {
            st.dcache.forget_references();
        }
    }
    if p.cache_full && !p.reclaimed_before {
        let pages = (p.old_file_kb / 4).max(1);
        while st.mm.free() > st.mm.pages_high() + pages {
            let f = st.mm.existing_file(pages);
            st.mm.add_pages(f, 0, pages);
            if let Some(r) = st.mm.files_mut().get_mut(&f) {
                r.in_use = false;
            }
            // The old files' dentries were used once, long ago.
            st.dcache.looked_up_once();
        }
    }
}

/// `pages` of the idle processes already out on swap ([`Preload::swapped_mib`]): allocated
/// through the variant's allocator in runs of SWAP_CLUSTER_MAX, alternating with runs of a
/// process that then exited and gave its slots back.
fn swapped_history(st: &mut FsState, pages: u64) {
    let run = mm::vmscan::SWAP_CLUSTER_MAX;
    let mut owner = 0u32;
    let mut left = pages;
    // Stops early only if swap fills (validation leaves room): what was taken stays taken.
    'history: while left > 0 {
        let n = left.min(run);
        let idle = u32::MAX - owner % 4;
        for _ in 0..n {
            if st.mm.swapped_out(idle).is_none() {
                break 'history;
            }
        }
        for _ in 0..run {
            if st.mm.swapped_out(TRANSIENT_MM).is_none() {
                break 'history;
            }
        }
        left -= n;
        owner += 1;
    }
    st.mm.drop_mm(TRANSIENT_MM);
}

/// Address-space id of the short-lived processes of the swap history (never a live one).
const TRANSIENT_MM: u32 = u32::MAX - 4;

fn finish<S: tracepoint::Sink>(
    cfg: &SimConfig,
    mut k: Kernel<S>,
    epoch: Nanos,
    before: &[(&'static str, u64)],
) -> (RunResult, EngineStats) {
    let mut settings = BTreeMap::new();
    settings.insert("rtc_hz".into(), cfg.rtc_hz.to_string());
    settings.insert("cpus_online".into(), cfg.cpus().to_string());
    // The measured task's policy, in the probe's words.
    settings.insert("policy".into(), RunMeta::fifo_policy(cfg.rt_priority));
    settings.insert("preempt".into(), format!("{:?}", cfg.variant.preempt));
    settings.insert(
        "points".into(),
        cfg.variant.points.iter().map(Point::name).collect::<Vec<_>>().join(","),
    );
    settings.insert("workload_finished".into(), k.st.workload_done.is_some().to_string());
    // Catalog items the machine (or a sweep) gave other numbers.
    for (name, o) in &cfg.machine.catalog {
        for (what, v) in [("instr", o.instr), ("misses", o.misses)] {
            if let Some(v) = v {
                settings.insert(format!("catalog.{name}.{what}"), v.to_string());
            }
        }
    }
    // The starting state: an experiment's [preload] or a sweep may have changed it.
    let p = &cfg.workload.preload;
    for (key, v) in [
        ("cache_full", p.cache_full.to_string()),
        ("reclaimed_before", p.reclaimed_before.to_string()),
        ("updatedb_after", p.updatedb_after.to_string()),
        ("old_file_kb", p.old_file_kb.to_string()),
        ("unused_dentries", p.unused_dentries.to_string()),
        ("referenced", p.referenced.to_string()),
        ("idle_anon_mib", p.idle_anon_mib.to_string()),
        ("swapped_mib", p.swapped_mib.to_string()),
    ] {
        settings.insert(format!("preload.{key}"), v);
    }
    let meta = RunMeta {
        engine: Engine::Sim,
        machine: cfg.machine.name.clone(),
        kernel: cfg.variant.name.clone(),
        workload: cfg.workload.name.clone(),
        seed: cfg.seed,
        duration_ns: k.now - epoch,
        version: env!("CARGO_PKG_VERSION").to_string(),
        settings,
    };
    let mut r = RunResult::new(meta);
    let c = &mut r.counters;
    for ((key, now), &(_, then)) in counters(&k).into_iter().zip(before) {
        c.insert(key.into(), now - then);
        if epoch > 0 {
            // What the box's history before the run did ([`Preload::reclaimed_before`]).
            c.insert(format!("history_{key}"), then);
        }
    }
    if epoch > 0 {
        c.insert("history_ms".into(), epoch / 1_000_000);
    }
    c.insert("peak_anon_pages".into(), k.st.mm.counters().peak_anon);
    if k.st.reclaim.oom_kills() > 0 {
        // Tasks 2.6.9's OOM killer sent SIGKILL ([`mm::oom_kill`]); none on a box that never
        // fills RAM and swap.
        c.insert("oom_kills".into(), k.st.reclaim.oom_kills());
    }
    if let Some(n) = cfg
        .machine
        .host
        .as_ref()
        .and_then(|h| h.noise.as_ref())
        .filter(|_| cfg.replay_noise)
    {
        // The machine's noise was replayed: its gaps are in every figure of this run.
        r.meta.settings.insert(
            "host_noise".into(),
            format!(
                "replayed ({}): {} gaps/s per CPU, {} % of the time lost, the longest {} us",
                n.source, n.gaps_per_s, n.lost_percent, n.max_us
            ),
        );
        c.insert("host_gaps".into(), k.stats.host_gaps);
        c.insert("host_gap_us".into(), k.stats.host_gap_ns / 1000);
    }
    if let Some(t) = k.st.workload_done {
        // How long the script itself ran (the run may idle on to the seed's length).
        c.insert("workload_ms".into(), (t - epoch) / 1_000_000);
    }
    let secs = (k.now - epoch) as f64 / 1e9;
    r.throughput.insert(
        "disk_MBps".into(),
        c["disk_blocks"] as f64 * 4096.0 / 1e6 / secs.max(1e-9),
    );
    if let Some(t) = &cfg.posix_timer {
        r.counters.insert("timer_overruns".into(), k.st.posix.overruns());
        r.meta
            .settings
            .insert("timer_period_us".into(), (t.period_ns / 1000).to_string());
        r.meta.settings.insert("notify".into(), t.notify.sigev().into());
        r.meta.settings.insert("policy".into(), "SCHED_OTHER".into());
        r.meta.settings.remove("rtc_hz");
    }
    if let Some(pwb) = k.st.writeback.pages() {
        let s = pwb.stats;
        for (name, n) in [
            ("balance_dirty_pages_calls", s.balance_calls),
            ("pages_written_by_writers", s.writer_pages),
            ("writer_throttle_sleeps", s.writer_waits),
            ("pdflush_operation_busy", s.pdflush_busy),
            ("pdflush_request_waits", s.nonblocking_request_waits),
            ("writer_ilock_skips", s.ilock_skips),
            ("ext3_bitmap_reads", k.st.ext3.bitmap_reads()),
        ] {
            r.counters.insert(name.into(), n);
        }
        if k.st.reclaim.writes_dirty_pages() {
            r.counters
                .insert("reclaim_pageout_pages".into(), k.st.mm.counters().pageouts);
            r.counters
                .insert("reclaim_writeback_kept".into(), k.st.mm.counters().writeback_kept);
        }
        if let Some((reads, antic)) = k.st.disk.as_counts() {
            r.counters.insert("as_reads".into(), reads);
            r.counters.insert("as_anticipations".into(), antic);
        }
    }
    if k.st.reclaim.uses_swap_token() {
        // Major faults that took 2.6.9's swap token (mm/thrash.c's grab_swap_token).
        r.counters
            .insert("swap_token_grabs".into(), k.st.mm.counters().swap_token_grabs);
    }
    // What the measurements saw: their streams, counters and traces.
    k.tp.finish(&k.tasks, &mut r);
    let stats = EngineStats {
        events: k.events(),
        simulated_ns: k.now,
    };
    (r, stats)
}
