//! Periodic timer wakeups per CPU, as cyclictest: one thread per CPU, pinned, SCHED_FIFO,
//! `clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)`; latency = wakeup time - intended time.
//!
//! [`run_periodic`] is the shared harness (privileges, cpu_dma_latency, per-CPU threads, stop
//! conditions); [`run`] plugs the clock_nanosleep loop into it and [`crate::posix_timer`] the
//! timer_create loops.

use crate::caps::{self, DmaState, RunCaps, ThreadCaps};
use crate::clock::{mono_ns, sleep_until};
use crate::dma_latency::DmaLatencyGuard;
use crate::explain::Explainer;
use crate::sched_trace::{Recorded, SchedTrace};
use crate::signals;
use latlab_core::attribution::Attribution;
use latlab_core::result::{LatencySplit, Sample, Stream};
use latlab_core::LatencyHistogram;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};

/// Settings shared by the periodic probes (`timer`, `posix-timer`).
#[derive(Clone, Debug)]
pub struct PeriodicConfig {
    pub cpus: Vec<usize>,
    /// SCHED_FIFO priority of the measuring threads; 0 runs them SCHED_OTHER (as seed 004's
    /// wakeup-latency test ran).
    pub priority: i32,
    pub interval_ns: u64,
    /// Stop after this much wall time (whichever of duration/loops comes first).
    pub duration_ns: Option<u64>,
    /// Stop after this many wakeups per thread.
    pub loops: Option<u64>,
    /// Hold /dev/cpu_dma_latency at 0 during the run.
    pub dma_latency: bool,
    /// Lock memory (mlockall).
    pub mlock: bool,
    /// How many worst samples each stream keeps.
    pub keep_worst: usize,
    /// Samples above this (ns) get a /proc-based attribution (`--explain`).
    pub trace_above_ns: Option<u64>,
    /// Keep cyclictest's `-h N` histogram of each thread with this many 1 us buckets.
    pub histogram_us: Option<usize>,
    /// Stop every thread at the first sample of at least this (ns), freezing the trace
    /// (cyclictest's `-b`).
    pub break_above_ns: Option<u64>,
    /// Running figures for a live display, one per CPU of `cpus`, in its order.
    pub live: Option<Vec<Arc<LiveCpu>>>,
    /// A threaded cgroup every measuring thread joins before the run starts (`--cgroup`; a
    /// domain cgroup takes the whole process, which the caller moves).
    pub cgroup_threads: Option<crate::cgroup::Target>,
    /// A command to run when a sample crosses its threshold (`--on-threshold`).
    pub on_threshold: Option<crate::on_threshold::Action>,
}

/// The running figures of one measuring thread, for a live display: every sample stores
/// them with relaxed atomic writes (a reader may see one sample's figures half updated).
#[derive(Debug, Default)]
pub struct LiveCpu {
    pub last_ns: AtomicU64,
    pub count: AtomicU64,
    pub sum_ns: AtomicU64,
    pub max_ns: AtomicU64,
}

impl LiveCpu {
    /// Count one sample of `ns`.
    pub fn record(&self, ns: u64) {
        self.last_ns.store(ns, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
        self.sum_ns.fetch_add(ns, Ordering::Relaxed);
        self.max_ns.fetch_max(ns, Ordering::Relaxed);
    }
}

impl Default for PeriodicConfig {
    fn default() -> Self {
        PeriodicConfig {
            cpus: crate::parse::allowed_cpus(),
            priority: 95,
            interval_ns: 1_000_000,
            duration_ns: Some(10_000_000_000),
            loops: None,
            dma_latency: true,
            mlock: true,
            keep_worst: 10,
            trace_above_ns: None,
            histogram_us: None,
            break_above_ns: None,
            live: None,
            cgroup_threads: None,
            on_threshold: None,
        }
    }
}

/// One thread's histogram kept as cyclictest's `-h N` keeps it: the latency truncated to
/// whole microseconds counted in N buckets, samples of N us or more counted as overflows
/// with the cycle numbers (0-based) of the first N of them, and the sum of the truncated
/// latencies, whose integer division by the count is cyclictest's average.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CycleHistogram {
    pub buckets: Vec<u64>,
    pub overflow: u64,
    pub overflow_cycles: Vec<u64>,
    pub sum_us: u64,
}

impl CycleHistogram {
    pub fn new(buckets: usize) -> Self {
        CycleHistogram {
            buckets: vec![0; buckets],
            overflow_cycles: Vec::with_capacity(buckets),
            ..Default::default()
        }
    }

    /// Count cycle `cycle`'s latency.
    pub fn record(&mut self, cycle: u64, latency_ns: u64) {
        let us = latency_ns / 1000;
        self.sum_us += us;
        match self.buckets.get_mut(us as usize) {
            Some(b) => *b += 1,
            None => {
                self.overflow += 1;
                if self.overflow_cycles.len() < self.buckets.len() {
                    self.overflow_cycles.push(cycle);
                }
            }
        }
    }
}

/// A thread's last wakeups (intended, woke, woken tid), kept while the run is traced so
/// that every sample the trace buffer still covers can be split after the run. A ring of
/// [`WAKEUP_LOG`] entries, allocated before the run starts.
#[derive(Debug)]
pub(crate) struct WakeupLog {
    entries: Vec<(u64, u64, u32)>,
    next: usize,
}

/// Wakeups a [`WakeupLog`] keeps: more than the trace buffer holds the events of (each
/// wakeup takes at least four: the expiry's entry and exit, the wakeup, the switch in).
const WAKEUP_LOG: usize = 1 << 16;

impl WakeupLog {
    fn new() -> Self {
        WakeupLog {
            entries: Vec::with_capacity(WAKEUP_LOG),
            next: 0,
        }
    }

    fn push(&mut self, e: (u64, u64, u32)) {
        match self.entries.len() < WAKEUP_LOG {
            true => self.entries.push(e),
            false => self.entries[self.next] = e,
        }
        self.next = (self.next + 1) % WAKEUP_LOG;
    }

    /// The wakeups the log still holds (the last [`WAKEUP_LOG`]).
    fn kept(&self) -> &[(u64, u64, u32)] {
        &self.entries
    }
}

/// The sample that stopped a run with `break_above_ns`.
#[derive(Clone, Debug, PartialEq)]
pub struct Break {
    pub stream: String,
    /// The sample's `at_ns` and latency.
    pub at_ns: u64,
    pub latency_ns: u64,
}

impl Break {
    /// `cpu1's sample of 2058.4 us at t=0.001 s`.
    pub fn describe(&self) -> String {
        describe_sample(&self.stream, self.latency_ns, self.at_ns)
    }
}

/// A sample named as the probe's messages name one: `cpu1's sample of 2058.4 us at t=0.001 s`
/// (its stream, its latency, its time since the stream's start).
pub fn describe_sample(stream: &str, latency_ns: u64, at_ns: u64) -> String {
    format!(
        "{stream}'s sample of {:.1} us at t={:.3} s",
        latency_ns as f64 / 1000.0,
        at_ns as f64 / 1e9
    )
}

/// `--break-above`: the threshold, the first sample above it, and the recording to freeze.
#[derive(Debug)]
struct Breaker {
    above_ns: u64,
    tripped: std::sync::OnceLock<Break>,
    freezer: Option<crate::sched_trace::Freezer>,
}

impl Breaker {
    /// Stop the run at `s` if it is the first sample above the threshold.
    fn offer(&self, stream: &str, at_ns: u64, latency_ns: u64) {
        if latency_ns < self.above_ns || self.tripped.get().is_some() {
            return;
        }
        let b = Break {
            stream: stream.to_string(),
            at_ns,
            latency_ns,
        };
        if self.tripped.set(b).is_ok() {
            if let Some(f) = &self.freezer {
                f.freeze();
            }
        }
    }
}

/// What a periodic run produced.
#[derive(Debug)]
pub struct PeriodicOutcome {
    /// The sample that stopped the run (`break_above_ns`).
    pub broke: Option<Break>,
    /// One stream per CPU, in `cpus` order.
    pub streams: Vec<Stream>,
    /// Each stream's cyclictest histogram, when `histogram_us` asked for them.
    pub histograms: Vec<CycleHistogram>,
    pub caps: RunCaps,
    /// Wall time from the first thread's start to the last one's end.
    pub wall_ns: u64,
    /// Stopped early by SIGINT/SIGTERM.
    pub interrupted: bool,
    /// Measuring loops that could not run, and why.
    pub errors: Vec<String>,
    /// The cgroup v2 path each measuring thread was in, read back from /proc once it joined
    /// `cgroup_threads` (empty without it).
    pub cgroup_threads: Vec<String>,
    /// What the `on_threshold` command did.
    pub on_threshold: Option<crate::on_threshold::Report>,
}

/// Per-thread state handed to a measuring loop: stop conditions and recording.
pub struct ThreadCtx {
    pub cpu: usize,
    /// The CPUs a SIGEV_THREAD notification thread may run on (empty: the measuring
    /// thread's).
    pub affinity: Vec<usize>,
    /// The measuring thread's kernel task id.
    pub tid: u32,
    pub interval_ns: u64,
    pub run_start_ns: u64,
    deadline_ns: Option<u64>,
    loops: Option<u64>,
    keep_worst: usize,
    pub stream: Stream,
    histogram: Option<CycleHistogram>,
    breaker: Option<Arc<Breaker>>,
    wakeups: Option<WakeupLog>,
    live: Option<Arc<LiveCpu>>,
    explainer: Option<Explainer>,
    /// Tells the cgroup watch of samples of at least `spike_ns`.
    spotter: Option<crate::cgroup::Spotter>,
    spike_ns: u64,
    on_threshold: Option<Arc<crate::on_threshold::Hook>>,
    done: u64,
    errors: Vec<String>,
}

impl ThreadCtx {
    /// A measuring loop's context outside [`run_periodic`]: its stream `name`, measuring
    /// `measures`, on `cpu` (its tag; `affinity` for notification threads), thread `tid`,
    /// times counted from `run_start_ns`, ending at `deadline_ns`, keeping `keep_worst`
    /// samples; no histogram, trace, live display or threshold action. Each periodic step
    /// sets its period and loops with [`ThreadCtx::begin`].
    pub fn plain(
        name: String,
        measures: String,
        (cpu, affinity): (usize, Vec<usize>),
        tid: u32,
        (run_start_ns, deadline_ns): (u64, u64),
        keep_worst: usize,
    ) -> ThreadCtx {
        ThreadCtx {
            cpu,
            affinity,
            tid,
            interval_ns: 0,
            run_start_ns,
            deadline_ns: Some(deadline_ns),
            loops: None,
            keep_worst,
            stream: Stream::new(name, measures),
            histogram: None,
            breaker: None,
            wakeups: None,
            live: None,
            explainer: None,
            spotter: None,
            spike_ns: u64::MAX,
            on_threshold: None,
            done: 0,
            errors: Vec::new(),
        }
    }

    /// A periodic step starts: `interval_ns` its period, `loops` its expiries (None: until
    /// the run ends).
    pub fn begin(&mut self, interval_ns: u64, loops: Option<u64>) {
        self.interval_ns = interval_ns;
        self.loops = loops.map(|n| self.done + n);
    }

    /// Log every wakeup for the trace recorded beside the run ([`explain_from_trace`]), the
    /// samples of at least `above_ns` to be explained from it.
    pub(crate) fn traced(mut self, above_ns: u64) -> ThreadCtx {
        self.wakeups = Some(WakeupLog::new());
        self.spike_ns = above_ns;
        self
    }

    /// Its stream, the errors its loops met, and its wakeups when [`ThreadCtx::traced`].
    pub(crate) fn finish(self) -> (Stream, Vec<String>, Option<WakeupLog>) {
        (self.stream, self.errors, self.wakeups)
    }

    /// True when the loop should end (loops done, duration over, or a stop signal).
    pub fn finished(&self, now_ns: u64) -> bool {
        signals::stop_requested()
            || self.breaker.as_ref().is_some_and(|b| b.tripped.get().is_some())
            || self.loops.is_some_and(|l| self.done >= l)
            || self.deadline_ns.is_some_and(|d| now_ns >= d)
    }

    /// Record one wakeup of the measuring thread, intended at `intended_ns`, at `woke_ns`.
    pub fn record(&mut self, intended_ns: u64, woke_ns: u64) {
        self.record_woken(intended_ns, woke_ns, self.tid);
    }

    /// Record one wakeup where the woken thread was `tid` (SIGEV_THREAD's fresh threads).
    pub fn record_woken(&mut self, intended_ns: u64, woke_ns: u64, tid: u32) {
        let lat = woke_ns.saturating_sub(intended_ns);
        if let Some(h) = self.histogram.as_mut() {
            h.record(self.done, lat);
        }
        self.done += 1;
        self.stream.hist.record(lat);
        if let Some(log) = self.wakeups.as_mut() {
            log.push((intended_ns, woke_ns, tid));
        }
        if let Some(l) = &self.live {
            l.record(lat);
        }
        let at_ns = intended_ns.saturating_sub(self.run_start_ns);
        if let Some(b) = &self.breaker {
            b.offer(&self.stream.name, at_ns, lat);
        }
        if let Some(h) = &self.on_threshold {
            h.offer(&self.stream.name, Some(self.cpu), at_ns, intended_ns, lat);
        }
        if let Some(sp) = self.spotter.as_ref().filter(|_| lat >= self.spike_ns) {
            sp.spike();
        }
        let worth_keeping =
            self.stream.worst.len() < self.keep_worst || self.stream.worst.last().is_some_and(|w| w.latency_ns < lat);
        if worth_keeping {
            let mut tag = BTreeMap::new();
            // A thread free to run anywhere (a scenario's task without affinity) is tagged
            // with the CPU it woke on.
            let cpu = match self.affinity.is_empty() {
                // SAFETY: sched_getcpu has no arguments; -1 is an error.
                true => usize::try_from(unsafe { libc::sched_getcpu() }).unwrap_or(self.cpu),
                false => self.cpu,
            };
            tag.insert("cpu".to_string(), cpu.to_string());
            tag.insert("tid".to_string(), tid.to_string());
            let attribution = match self.explainer.as_mut() {
                Some(ex) => ex.attribute(lat),
                None => Attribution::default(),
            };
            let s = Sample {
                at_ns,
                latency_ns: lat,
                tag,
                attribution,
            };
            self.stream.offer_worst(s, self.keep_worst);
        }
    }

    /// Count `n` expected wakeups that never happened (overruns).
    pub fn missed(&mut self, n: u64) {
        self.stream.missed += n;
    }

    /// `n` expiries counted as missed fired after all (their notifications came).
    pub fn missed_not(&mut self, n: u64) {
        self.stream.missed = self.stream.missed.saturating_sub(n);
    }

    /// The loop could not run (a timer could not be created): report why and stop.
    pub fn fail(&mut self, e: String) {
        self.errors.push(format!("CPU {}: {e}", self.cpu));
    }
}

/// Stack of a measuring thread: its loop keeps histograms on the heap, so 256 KiB is ample, and
/// a small stack stays inside RLIMIT_MEMLOCK when memory is locked.
const MEASURING_STACK: usize = 256 * 1024;

/// Lets the measuring threads start together once all are set up, or not at all if one of
/// them could not be spawned.
#[derive(Default)]
struct StartGate {
    /// (the task ids of the threads arrived, decision: None = pending, Some(go)).
    state: Mutex<(Vec<u32>, Option<bool>)>,
    cv: Condvar,
}

impl StartGate {
    /// Thread `tid` is set up; block until the run starts (true) or is called off (false).
    fn arrive_and_wait(&self, tid: u32) -> bool {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        st.0.push(tid);
        self.cv.notify_all();
        loop {
            if let Some(go) = st.1 {
                return go;
            }
            st = self.cv.wait(st).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Wait for `threads` arrivals, `prepare` them (by task id) and start them; call the run
    /// off at once if `!go`, or if `prepare` fails, with its error.
    fn open(&self, threads: usize, go: bool, prepare: impl FnOnce(&[u32]) -> Result<(), String>) -> Result<(), String> {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        while go && st.0.len() < threads {
            st = self.cv.wait(st).unwrap_or_else(|e| e.into_inner());
        }
        let prepared = match go {
            true => prepare(&st.0),
            false => Ok(()),
        };
        st.1 = Some(go && prepared.is_ok());
        self.cv.notify_all();
        prepared
    }
}

/// How a periodic probe names its streams (one per measured CPU).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamNaming {
    /// `cpu0`, `cpu1` ..., one per CPU whatever their number (`probe timer`, as cyclictest's
    /// per-thread columns).
    PerCpu,
    /// The model's name for the same measurement: `NAME` when one CPU is measured, `NAME.cpuN`
    /// when several are; what the stream measures says which CPU (`... on CPU 0`).
    Model(&'static str),
}

impl StreamNaming {
    /// The stream measuring on `cpu`, when `ncpus` CPUs are measured.
    pub fn name(self, cpu: usize, ncpus: usize) -> String {
        match self {
            StreamNaming::PerCpu => format!("cpu{cpu}"),
            StreamNaming::Model(base) if ncpus == 1 => base.to_string(),
            StreamNaming::Model(base) => format!("{base}.cpu{cpu}"),
        }
    }

    /// What the stream on `cpu` measures: `measures`, and the CPU where the name lacks it.
    pub fn measures(self, measures: &str, cpu: usize) -> String {
        match self {
            StreamNaming::PerCpu => measures.to_string(),
            StreamNaming::Model(_) => format!("{measures} on CPU {cpu}"),
        }
    }
}

/// Run `body` on one pinned SCHED_FIFO thread per CPU and collect the streams, named by
/// `naming`.
///
/// `body` gets the thread's context after pinning and priority setup, and returns when
/// [`ThreadCtx::finished`] says so.
pub fn run_periodic<F>(cfg: &PeriodicConfig, naming: StreamNaming, measures: &str, body: F) -> PeriodicOutcome
where
    F: Fn(&mut ThreadCtx) + Send + Sync + 'static,
{
    signals::install();
    let mut rc = RunCaps {
        fifo_requested: cfg.priority > 0,
        ..Default::default()
    };
    let _dma = if cfg.dma_latency {
        match DmaLatencyGuard::hold(0) {
            Ok(g) => {
                rc.dma_latency = DmaState::Held;
                Some(g)
            }
            Err(e) => {
                rc.dma_latency = DmaState::Failed(e);
                None
            }
        }
    } else {
        None
    };
    if cfg.mlock {
        match caps::lock_memory() {
            Ok(scope) => rc.mlocked = Some(scope),
            Err(e) => rc.mlock_error = Some(e),
        }
    }
    let tracer = match cfg.trace_above_ns {
        Some(_) => match SchedTrace::start(&cfg.cpus, TRACE_BUFFER_KB) {
            Ok(t) => Some(t),
            Err(e) => {
                rc.trace_error = Some(e);
                None
            }
        },
        None => None,
    };
    let with_tracer = tracer.is_some();
    let mut errors = Vec::new();
    let watch = match cfg.trace_above_ns.map(|_| crate::cgroup::Watch::start()) {
        Some(Ok(w)) => Some(w),
        Some(Err(e)) => {
            errors.push(format!("spikes name no cgroup: {e}"));
            None
        }
        None => None,
    };
    let spotter = watch.as_ref().and_then(crate::cgroup::Watch::spotter);
    let hook = match cfg
        .on_threshold
        .clone()
        .map(|a| crate::on_threshold::Hook::start(a, tracer.as_ref().map(SchedTrace::freezer)))
    {
        Some(Ok(h)) => Some(Arc::new(h)),
        Some(Err(e)) => {
            errors.push(format!("--on-threshold: {e}"));
            None
        }
        None => None,
    };
    let breaker = cfg.break_above_ns.map(|above_ns| {
        Arc::new(Breaker {
            above_ns,
            tripped: std::sync::OnceLock::new(),
            freezer: tracer.as_ref().map(SchedTrace::freezer),
        })
    });
    let body = Arc::new(body);
    let gate = Arc::new(StartGate::default());
    let t0 = mono_ns();
    let mut handles = Vec::new();
    let before_spawning = errors.len();
    for (i, &cpu) in cfg.cpus.iter().enumerate() {
        let body = body.clone();
        let gate = gate.clone();
        let cfg = cfg.clone();
        let breaker = breaker.clone();
        let spotter = spotter.clone();
        let hook = hook.clone();
        let name = naming.name(cpu, cfg.cpus.len());
        let measures = naming.measures(measures, cpu);
        let spawned = std::thread::Builder::new()
            .name(format!("latlab-cpu{cpu}"))
            .stack_size(MEASURING_STACK)
            .spawn(move || {
                let mut tc = ThreadCaps::default();
                match caps::pin_to(cpu) {
                    Ok(()) => tc.pinned = true,
                    Err(e) => tc.errors.push(e),
                }
                if cfg.priority > 0 {
                    match caps::set_fifo(cfg.priority) {
                        Ok(()) => tc.fifo = true,
                        Err(e) => tc.errors.push(e),
                    }
                }
                let tid = crate::clock::gettid();
                if !gate.arrive_and_wait(tid) {
                    return None;
                }
                let start = mono_ns();
                let mut ctx = ThreadCtx {
                    cpu,
                    affinity: vec![cpu],
                    tid,
                    interval_ns: cfg.interval_ns,
                    run_start_ns: start,
                    deadline_ns: cfg.duration_ns.map(|d| start.saturating_add(d)),
                    loops: cfg.loops,
                    keep_worst: cfg.keep_worst,
                    stream: Stream::new(name, measures),
                    histogram: cfg.histogram_us.map(CycleHistogram::new),
                    breaker,
                    wakeups: with_tracer.then(WakeupLog::new),
                    live: cfg.live.as_ref().and_then(|l| l.get(i).cloned()),
                    explainer: cfg.trace_above_ns.map(|t| match with_tracer {
                        true => Explainer::steal_only(cpu, t),
                        false => Explainer::new(cpu, t),
                    }),
                    spotter,
                    spike_ns: cfg.trace_above_ns.unwrap_or(u64::MAX),
                    on_threshold: hook,
                    done: 0,
                    errors: Vec::new(),
                };
                body(&mut ctx);
                Some((ctx.stream, ctx.histogram, ctx.wakeups, tc, ctx.errors, start))
            });
        match spawned {
            Ok(h) => handles.push((cpu, h)),
            Err(e) => {
                errors.push(format!("CPU {cpu}: could not start the measuring thread: {e}"));
                break;
            }
        }
    }
    let mut cgroup_threads = Vec::new();
    let opened = gate.open(handles.len(), errors.len() == before_spawning, |tids| {
        let Some(t) = &cfg.cgroup_threads else { return Ok(()) };
        for &tid in tids {
            t.enter_thread(tid).map_err(|e| format!("--cgroup: {e}"))?;
            cgroup_threads.push(crate::cgroup::of_task(tid).unwrap_or_default());
        }
        Ok(())
    });
    errors.extend(opened.err());
    let mut streams = Vec::new();
    let mut histograms = Vec::new();
    let mut logs = Vec::new();
    let mut starts = Vec::new();
    for (cpu, h) in handles {
        match h.join() {
            Ok(Some((s, hist, log, tc, e, start))) => {
                rc.add_thread(&tc);
                streams.push(s);
                histograms.extend(hist);
                logs.push(log);
                errors.extend(e);
                starts.push(start);
            }
            Ok(None) => {}
            Err(p) => {
                let why = p
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| p.downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                errors.push(format!("CPU {cpu}: the measuring thread panicked: {why}"));
            }
        }
    }
    // The command reads the frozen recording: wait for it before the instance goes.
    let on_threshold = hook.and_then(Arc::into_inner).map(crate::on_threshold::Hook::finish);
    let sightings = watch.map(crate::cgroup::Watch::finish);
    if let (Some(t), Some(threshold)) = (tracer, cfg.trace_above_ns) {
        match t.finish() {
            Ok(rec) => {
                for (((s, &cpu), &start), log) in streams.iter_mut().zip(&cfg.cpus).zip(&starts).zip(&logs) {
                    explain_from_trace(s, &rec, (cpu, start), threshold, log.as_ref());
                }
            }
            Err(e) => rc.trace_error = Some(e),
        }
    }
    if let (Some(seen), Some(threshold)) = (sightings, cfg.trace_above_ns) {
        for w in streams
            .iter_mut()
            .flat_map(|s| &mut s.worst)
            .filter(|w| w.latency_ns >= threshold)
        {
            let woken = w.tag.get("tid").and_then(|t| t.parse().ok()).unwrap_or(0);
            seen.name(&mut w.attribution, woken);
        }
    }
    let wall_ns = mono_ns() - t0;
    if rc.mlocked.is_some() {
        caps::unlock_memory();
    }
    PeriodicOutcome {
        broke: breaker.and_then(|b| b.tripped.get().cloned()),
        streams,
        histograms,
        caps: rc,
        wall_ns,
        interrupted: signals::stopped_by().is_some(),
        errors,
        cgroup_threads,
        on_threshold,
    }
}

/// Per-CPU ring buffer for the scheduler/irq tracepoints: about 100 bytes per event in the
/// buffer, so 32 MiB holds some 300 k events, over a minute of a busy CPU's switches and irqs.
pub(crate) const TRACE_BUFFER_KB: usize = 32 * 1024;

/// Stream `s`, measured on `cpu` from `start` (CLOCK_MONOTONIC), explained from the trace
/// recorded beside it: its kept samples of at least `threshold` attributed, and with its
/// wakeup log every logged wakeup split as rtla timerlat splits them.
pub(crate) fn explain_from_trace(
    s: &mut Stream,
    rec: &Recorded,
    (cpu, start): (usize, u64),
    threshold: u64,
    log: Option<&WakeupLog>,
) {
    attribute_from_trace(s, rec, cpu, start, threshold);
    if let Some(log) = log {
        s.split = Some(split_from_trace(s.hist.count(), log.kept(), rec, cpu));
        s.host_out = host_out_from_trace(s.hist.count(), log.kept(), rec, cpu);
    }
}

/// Every logged wakeup with the host's time the trace shows in it taken out, when the log
/// holds every one of the stream's `count` samples (a sample the recording no longer covers
/// counts whole).
fn host_out_from_trace(count: u64, log: &[(u64, u64, u32)], rec: &Recorded, cpu: usize) -> Option<LatencyHistogram> {
    if log.len() as u64 != count {
        return None;
    }
    let mut h = LatencyHistogram::new();
    for &(intended, woke, tid) in log {
        let a = rec.attribute(cpu, tid, intended, woke);
        h.record(woke.saturating_sub(intended).saturating_sub(a.steal_ns));
    }
    Some(h)
}

/// Kept samples above `threshold` get their attribution from the trace. Which thread was
/// woken is in the sample's `tid` tag.
fn attribute_from_trace(s: &mut Stream, rec: &Recorded, cpu: usize, start: u64, threshold: u64) {
    for w in s.worst.iter_mut().filter(|w| w.latency_ns >= threshold) {
        let tid = w.tag.get("tid").and_then(|t| t.parse().ok()).unwrap_or(0);
        let cpu = w.tag.get("cpu").and_then(|c| c.parse().ok()).unwrap_or(cpu);
        let intended = start + w.at_ns;
        let steal_ns = w.attribution.steal_ns;
        w.attribution = rec.attribute(cpu, tid, intended, intended + w.latency_ns);
        let cpus = rec.wakeup_cpus(cpu, tid, intended, intended + w.latency_ns);
        s.recorded
            .push(rec.window(&cpus, w.at_ns, intended, intended + w.latency_ns));
        // The trace speaks CLOCK_MONOTONIC; the result speaks time since the stream began.
        if let Some(c) = w.attribution.cause.as_mut() {
            c.since_ns = c.since_ns.saturating_sub(start);
            c.until_ns = c.until_ns.saturating_sub(start);
        }
        // The trace's host time (`steal_ns`) is the sample's own; /proc's steal is since the
        // previous spike, so only the note gives it.
        if steal_ns > 0 {
            w.attribution.note.push_str(&format!(
                "; steal {:.1} ms on CPU {cpu} since the previous spike (/proc/stat, 1/USER_HZ resolution)",
                steal_ns as f64 / 1e6
            ));
        }
    }
}

/// rtla timerlat's split of every logged wakeup the trace covers: intended expiry to the
/// timer's handler, handler to the thread switched in. `count` is the stream's samples.
fn split_from_trace(count: u64, log: &[(u64, u64, u32)], rec: &Recorded, cpu: usize) -> LatencySplit {
    let mut split = LatencySplit {
        irq: LatencyHistogram::new(),
        thread: LatencyHistogram::new(),
        note: String::new(),
    };
    for &(intended, woke, tid) in log {
        if let Some((irq, thread)) = rec.split(cpu, tid, intended, woke) {
            split.irq.record(irq);
            split.thread.record(thread);
        }
    }
    split.note = format!(
        "{} of {count} samples split from the ftrace recording (timer:hrtimer_expire_entry's clock, \
         sched_waking, sched_switch); the others fell outside what the trace buffer kept",
        split.irq.count()
    );
    split
}

/// The cyclictest loop: sleep to an absolute time, measure how late the wakeup was.
pub fn run(cfg: &PeriodicConfig) -> PeriodicOutcome {
    run_periodic(
        cfg,
        StreamNaming::PerCpu,
        "clock_nanosleep(TIMER_ABSTIME) wakeup",
        |ctx| nanosleep_loop(ctx, &mut || {}),
    )
}

/// cyclictest's measuring loop: `clock_nanosleep(TIMER_ABSTIME)` to each deadline, a period
/// after the last; each wakeup recorded, the periods a late one passed counted as missed,
/// then `after` runs (a scenario's steps after each expiry); until [`ThreadCtx::finished`].
pub fn nanosleep_loop(ctx: &mut ThreadCtx, after: &mut dyn FnMut()) {
    let interval = ctx.interval_ns;
    let mut next = mono_ns() + interval;
    loop {
        if !sleep_until(next) && signals::stop_requested() {
            break;
        }
        let now = mono_ns();
        ctx.record(next, now);
        next += interval;
        // As cyclictest: skip the periods the late wakeup already passed.
        let mut skipped = 0;
        while now > next {
            next += interval;
            skipped += 1;
        }
        ctx.missed(skipped);
        after();
        if ctx.finished(mono_ns()) {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_run_produces_samples() {
        let cfg = PeriodicConfig {
            cpus: vec![crate::parse::allowed_cpus()[0]],
            loops: Some(50),
            duration_ns: None,
            dma_latency: false,
            mlock: false,
            ..Default::default()
        };
        let out = run(&cfg);
        assert_eq!(out.streams.len(), 1);
        let s = &out.streams[0];
        assert_eq!(s.name, format!("cpu{}", cfg.cpus[0]));
        assert_eq!(s.measures, "clock_nanosleep(TIMER_ABSTIME) wakeup");
        assert_eq!(s.hist.count(), 50);
        assert!(s.hist.min() <= s.hist.quantile(0.5) && s.hist.quantile(0.5) <= s.hist.max());
        assert!(!s.worst.is_empty());
        assert_eq!(s.worst[0].latency_ns, s.hist.max());
    }

    #[test]
    fn cycle_histogram_counts_as_cyclictest() {
        let mut h = CycleHistogram::new(3);
        for (cycle, ns) in [999, 2_999, 3_000, 1_500, 80_000, 4_000, 5_000, 6_000]
            .into_iter()
            .enumerate()
        {
            h.record(cycle as u64, ns);
        }
        assert_eq!(h.buckets, [1, 1, 1]);
        assert_eq!(h.overflow, 5);
        // At most as many cycle numbers as buckets, as cyclictest keeps.
        assert_eq!(h.overflow_cycles, [2, 4, 5]);
        assert_eq!(h.sum_us, 2 + 3 + 1 + 80 + 4 + 5 + 6);
    }

    #[test]
    fn wakeup_log_keeps_the_last_entries() {
        let mut log = WakeupLog::new();
        for i in 0..WAKEUP_LOG as u64 + 3 {
            log.push((i, i + 1, 7));
        }
        assert_eq!(log.kept().len(), WAKEUP_LOG);
        assert_eq!(log.kept()[0], (WAKEUP_LOG as u64, WAKEUP_LOG as u64 + 1, 7));
        assert_eq!(log.kept()[3], (3, 4, 7));
        assert!(!log.kept().iter().any(|e| e.0 < 3));
    }

    #[test]
    fn short_run_keeps_the_cyclictest_histogram_when_asked() {
        let cfg = PeriodicConfig {
            cpus: vec![crate::parse::allowed_cpus()[0]],
            loops: Some(40),
            duration_ns: None,
            dma_latency: false,
            mlock: false,
            histogram_us: Some(5),
            ..Default::default()
        };
        let out = run(&cfg);
        let h = &out.histograms[0];
        assert_eq!(h.buckets.len(), 5);
        assert_eq!(h.buckets.iter().sum::<u64>() + h.overflow, 40);
        assert_eq!(h.overflow_cycles.len() as u64, h.overflow.min(5));
        assert!(h.overflow_cycles.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn streams_are_named_per_cpu_or_as_the_model_names_them() {
        assert_eq!(StreamNaming::PerCpu.name(0, 1), "cpu0");
        assert_eq!(StreamNaming::PerCpu.name(3, 4), "cpu3");
        let m = StreamNaming::Model("posix_timer_thread");
        assert_eq!(m.name(1, 1), "posix_timer_thread");
        assert_eq!(m.name(0, 2), "posix_timer_thread.cpu0");
        assert_eq!(m.name(1, 2), "posix_timer_thread.cpu1");
        assert_eq!(m.measures("x", 1), "x on CPU 1");
        assert_eq!(StreamNaming::PerCpu.measures("x", 1), "x");
    }
}
