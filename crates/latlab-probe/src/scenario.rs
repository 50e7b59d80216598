//! A scenario run for real (`latlab probe scenario FILE`): every copy of every task a thread
//! of this process, with the task's policy and priority (`sched_setscheduler`), nice
//! (`setpriority` on the thread) and affinity (`sched_setaffinity`), started together; its
//! steps run as the model runs them: `compute` a busy loop calibrated before the run (loops
//! per ns, the fastest of several tries), `sleep` a relative `nanosleep`, `periodic` the
//! probe's own cyclictest-exact measuring loops ([`crate::timer::nanosleep_loop`],
//! [`crate::posix_timer::signal_loop`] and [`crate::posix_timer::thread_loop`]), pipes made
//! before the run (copy i of the writer to copy i of the reader), futex words as glibc's
//! semaphores (a counter, `FUTEX_WAIT` while it is 0, `FUTEX_WAKE` when a waiter sleeps),
//! `write` / `read` / `fsync` on files in a private (0700) directory that goes with the run,
//! `spawn` a fork + exec of the probe's binary (`latlab`) running the child's steps
//! ([`child_main_if_requested`]) with its parent's policy, priority, nice and affinity,
//! `wait` a `wait4` of the copy's children. The scenario's loads are the probe's (`make:N`,
//! `video`). Each periodic task copy is a stream named as the model names it
//! ([`latlab_scenario::task::stream_names`]); the result is the same [`RunResult`] the model
//! produces. Nothing started outlives the run: a task's children still running at its end are
//! killed (and die with it, `PR_SET_PDEATHSIG`), the loads are stopped, the directory removed.

use crate::clock::{gettid, mono_ns};
use crate::load::{LoadOptions, LoadReport, LoadSpec, Loads};
use crate::posix_timer;
use crate::sched_trace::SchedTrace;
use crate::signals;
use crate::timer::{self, ThreadCtx, WakeupLog, TRACE_BUFFER_KB};
use latlab_core::result::{RunMeta, RunResult, Stream};
use latlab_scenario::task::{has_periodic, stream_names, PolicyName, StepDef, TaskDef, TimerKind};
use latlab_scenario::{Load, Scenario, ScenarioError};
use std::collections::BTreeMap;
use std::fs::File;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Condvar, Mutex};

/// How a scenario runs here.
#[derive(Clone, Debug)]
pub struct ScenarioConfig {
    /// How long, ns; None: the scenario's own duration.
    pub duration_ns: Option<u64>,
    /// Where the private directory for the scenario's files is made (and the loads' scratch).
    pub scratch: PathBuf,
    /// Worst samples each stream keeps.
    pub keep_worst: usize,
    /// The binary the loads re-execute (`/proc/self/exe` from `latlab`); None refuses a
    /// scenario with loads.
    pub exe: Option<PathBuf>,
    /// Explain the kept samples of at least this (ns) from the scheduler, irq and timer
    /// tracepoints recorded on every CPU during the run ([`crate::sched_trace`]), and split
    /// every wakeup as rtla timerlat does; a trace that cannot start is a warning.
    pub trace_above_ns: Option<u64>,
}

/// What a scenario run produced.
#[derive(Debug)]
pub struct ScenarioOutcome {
    /// The measured streams (the scenario's `measure`, in its order), counters, settings.
    pub result: RunResult,
    /// What the loads did (none without loads).
    pub loads: Option<LoadReport>,
    /// Stopped early by SIGINT/SIGTERM/SIGHUP.
    pub interrupted: bool,
    /// What the run could not get (a policy refused, a timer not created), each naming the
    /// task.
    pub warnings: Vec<String>,
}

/// Stack of a task's thread: its steps keep nothing large on it.
const TASK_STACK: usize = 256 * 1024;
/// How often a blocked step (pipe, futex) looks at the run's end, ms.
const POLL_MS: i32 = 100;

/// Run `s` on this machine, its `count_per_cpu` tasks resolved for the CPUs this process may
/// run on (its affinity mask: [`Scenario::on_cpus`]).
pub fn run(s: &Scenario, cfg: &ScenarioConfig) -> Result<ScenarioOutcome, String> {
    let cpus = u32::try_from(crate::parse::allowed_cpus().len()).unwrap_or(u32::MAX);
    // The callers name the file before the error.
    let s = &s.on_cpus(cpus).map_err(|e| match e {
        ScenarioError::Field { line, field, why, .. } => {
            format!("line {line}: field `{field}`: {why} (the CPUs this process may run on)")
        }
        ScenarioError::Syntax { msg, .. } => msg,
    })?;
    refuse_unsupported(&s.tasks, cfg.exe.is_some())?;
    let duration = s.duration(cfg.duration_ns)?;
    signals::install();
    let (dir, _held) = crate::private::held_dir(&cfg.scratch, &format!("latlab-scenario-{}-", std::process::id()))
        .map_err(|e| {
            format!(
                "{}: a private directory for the scenario's files: {e}",
                cfg.scratch.display()
            )
        })?;
    let env = Env::new(s, &dir, cfg.exe.clone());
    let removed = DirGuard(dir.clone());
    let env = Arc::new(env?);
    let loads = match (s.loads.is_empty(), &cfg.exe) {
        (true, _) => None,
        (false, None) => return Err("the scenario has loads, and no binary to run them was given".into()),
        (false, Some(exe)) => {
            let specs: Vec<LoadSpec> = s.loads.iter().map(load_spec).collect();
            let opts = LoadOptions {
                exe: exe.clone(),
                scratch: cfg.scratch.clone(),
                allow_zram: false,
                cpus: Vec::new(),
            };
            Some(Loads::start(&specs, &opts).map_err(|e| format!("the scenario's loads: {e}"))?)
        }
    };
    let mut warnings = Vec::new();
    let traced_cpus = crate::parse::allowed_cpus();
    let tracer = match cfg
        .trace_above_ns
        .map(|_| SchedTrace::start_with(&traced_cpus, TRACE_BUFFER_KB, false))
    {
        Some(Err(e)) => {
            warnings.push(format!("samples not explained: {e}"));
            None
        }
        t => t.and_then(Result::ok),
    };
    let trace_above = cfg.trace_above_ns.filter(|_| tracer.is_some());
    let names = stream_names(&s.tasks);
    let gate = Arc::new(Gate::default());
    let mut handles = Vec::new();
    let mut stream = 0usize;
    let mut spawn_error = None;
    for (ti, t) in s.tasks.iter().enumerate() {
        let measured = has_periodic(&t.steps);
        for copy in 0..t.count {
            let name = measured.then(|| names[stream].clone());
            stream += usize::from(measured);
            let (env, gate, task) = (env.clone(), gate.clone(), t.clone());
            let keep_worst = cfg.keep_worst;
            let h = std::thread::Builder::new()
                .name(t.comm.clone())
                .stack_size(TASK_STACK)
                .spawn(move || {
                    task_thread(
                        &env,
                        &task,
                        (ti, copy),
                        name,
                        &gate,
                        (duration, keep_worst, trace_above),
                    )
                });
            match h {
                Ok(h) => handles.push(h),
                Err(e) => {
                    spawn_error = Some(format!(
                        "task `{}` copy {copy}: could not start its thread: {e}",
                        t.comm
                    ));
                    break;
                }
            }
        }
    }
    if let Some(e) = spawn_error {
        // The threads started wait at the gate: call the run off.
        gate.open(handles.len(), None);
        for h in handles {
            let _ = h.join();
        }
        return Err(e);
    }
    let t0 = mono_ns();
    gate.open(handles.len(), Some(t0));
    let mut streams: BTreeMap<String, (Stream, Option<WakeupLog>)> = BTreeMap::new();
    let mut counters: BTreeMap<String, u64> = BTreeMap::new();
    let mut user_space = Vec::new();
    for h in handles {
        match h.join() {
            Ok(done) => {
                warnings.extend(done.warnings);
                user_space.extend(done.user_space);
                for (k, v) in done.counters {
                    *counters.entry(format!("scenario {k}")).or_default() += v;
                }
                if let Some((s, log)) = done.stream {
                    streams.insert(s.name.clone(), (s, log));
                }
            }
            Err(_) => warnings.push("a task's thread panicked".into()),
        }
    }
    let wall_ns = mono_ns() - t0;
    // Stopped before the loads are, so their events after the run overwrite none of it.
    let recorded = match tracer.map(SchedTrace::finish) {
        Some(Err(e)) => {
            warnings.push(format!("samples not explained: {e}"));
            None
        }
        r => r.and_then(Result::ok).map(|mut rec| {
            rec.in_user_space(user_space);
            rec
        }),
    };
    let mut streams: BTreeMap<String, Stream> = streams
        .into_iter()
        .map(|(name, (mut s, log))| {
            if let (Some(rec), Some(above)) = (&recorded, trace_above) {
                // The task's first CPU (each sample's tag names the CPU it woke on).
                let cpu = s
                    .worst
                    .first()
                    .and_then(|w| w.tag.get("cpu")?.parse().ok())
                    .unwrap_or(0);
                timer::explain_from_trace(&mut s, rec, (cpu, t0), above, log.as_ref());
            }
            (name, s)
        })
        .collect();
    let loads = loads.map(Loads::stop);
    drop(removed);
    let mut settings = BTreeMap::new();
    settings.insert("scenario".into(), s.name.clone());
    settings.insert("duration_s".into(), format!("{}", duration as f64 / 1e9));
    settings.insert("compute_ns_per_loop".into(), format!("{:.4}", env.ns_per_loop));
    for t in &s.tasks {
        settings.insert(format!("task {}", t.comm), describe(t));
    }
    if !s.ignored.is_empty() {
        settings.insert("ignored".into(), s.ignored.join(", "));
    }
    if let (Some(above), Some(_)) = (trace_above, &recorded) {
        settings.insert(RunMeta::TRACED_ABOVE_US.into(), format!("{}", above as f64 / 1e3));
    }
    let mut result = RunResult::new(crate::meta::new_meta(
        &format!("scenario {}", s.name),
        wall_ns,
        settings,
    ));
    result.streams = s.measure.iter().filter_map(|n| streams.remove(n)).collect();
    result.counters.extend(counters);
    Ok(ScenarioOutcome {
        result,
        loads,
        interrupted: signals::stopped_by().is_some(),
        warnings,
    })
}

/// The probe's load for a scenario's.
pub fn load_spec(l: &Load) -> LoadSpec {
    match l {
        Load::Make { jobs, .. } => LoadSpec::Make { jobs: *jobs },
        Load::Video => LoadSpec::Video,
    }
}

/// A task as the result's settings show it: `2 x SCHED_FIFO 90, nice 0, CPUs [0]`.
fn describe(t: &TaskDef) -> String {
    let policy = match (t.policy, t.priority) {
        (PolicyName::Fifo, Some(p)) => format!("SCHED_FIFO {p}"),
        (PolicyName::Rr, Some(p)) => format!("SCHED_RR {p}"),
        _ => "SCHED_OTHER".into(),
    };
    let cpus = t.affinity.as_ref().map_or("any CPU".into(), |c| format!("CPUs {c:?}"));
    format!("{} x {policy}, nice {}, {cpus}", t.count, t.nice)
}

/// Refuse what the probe does not run, naming the task: a `spawn` without a binary to
/// execute, a pipe step in a spawned child (its pipes are made for task copies only).
fn refuse_unsupported(tasks: &[TaskDef], exe: bool) -> Result<(), String> {
    fn find(steps: &[StepDef], child: bool) -> Option<&'static str> {
        steps.iter().find_map(|s| match s {
            StepDef::Spawn { steps, .. } => find(steps, true),
            StepDef::PipeWrite { .. } if child => Some("pipe-write"),
            StepDef::PipeRead { .. } if child => Some("pipe-read"),
            StepDef::Loop { steps, .. } => find(steps, child),
            StepDef::Periodic(p) => find(&p.steps, child),
            _ => None,
        })
    }
    fn spawns(steps: &[StepDef]) -> bool {
        steps.iter().any(|s| match s {
            StepDef::Spawn { .. } => true,
            StepDef::Loop { steps, .. } => spawns(steps),
            StepDef::Periodic(p) => spawns(&p.steps),
            _ => false,
        })
    }
    for t in tasks {
        if let Some(k) = find(&t.steps, false) {
            return Err(format!(
                "task `{}`: a spawned child's `{k}`: the probe makes pipes between task copies only (the model runs it)",
                t.comm
            ));
        }
        if !exe && spawns(&t.steps) {
            return Err(format!(
                "task `{}`: a `spawn` step, and no binary to execute for it was given",
                t.comm
            ));
        }
    }
    Ok(())
}

/// Where the task threads wait, once set up, for the run's start time (all together), or
/// for the run to be called off.
#[derive(Default)]
struct Gate {
    /// (threads arrived, the decision: None pending, Some(None) off, Some(Some(t0)) go).
    state: Mutex<(usize, Option<Option<u64>>)>,
    cv: Condvar,
}

impl Gate {
    /// Arrive; the run's start time, or None when it is called off.
    fn arrive_and_wait(&self) -> Option<u64> {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        st.0 += 1;
        self.cv.notify_all();
        loop {
            if let Some(d) = st.1 {
                return d;
            }
            st = self.cv.wait(st).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Wait for `threads` arrivals (when going), then start them at `t0` or call them off.
    fn open(&self, threads: usize, t0: Option<u64>) {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        while t0.is_some() && st.0 < threads {
            st = self.cv.wait(st).unwrap_or_else(|e| e.into_inner());
        }
        st.1 = Some(t0);
        self.cv.notify_all();
    }
}

/// Removes the scenario's private directory when the run ends, whatever way.
struct DirGuard(PathBuf);

impl Drop for DirGuard {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// What the task threads share: pipes, futex words, files, the compute calibration.
struct Env {
    /// By (writer, reader, copy): (read end, write end).
    pipes: BTreeMap<(String, String, u32), (OwnedFd, OwnedFd)>,
    /// By (word, copy).
    words: BTreeMap<(String, u32), Sem>,
    /// By name: its path and the file (appended to by `write`, read at offsets by `read`).
    files: BTreeMap<String, (PathBuf, File)>,
    /// The directory holding them (fsync'd by an `fsync` before any write).
    dir: (PathBuf, File),
    /// ns per round of the busy loop.
    ns_per_loop: f64,
    /// The binary a `spawn` executes.
    exe: Option<PathBuf>,
}

impl Env {
    fn new(s: &Scenario, dir: &Path, exe: Option<PathBuf>) -> Result<Env, String> {
        let mut env = Env {
            pipes: BTreeMap::new(),
            words: BTreeMap::new(),
            files: BTreeMap::new(),
            dir: (
                dir.into(),
                File::open(dir).map_err(|e| format!("{}: {e}", dir.display()))?,
            ),
            ns_per_loop: calibrate(),
            exe,
        };
        for t in &s.tasks {
            env.add(t, &t.steps, dir)?;
        }
        Ok(env)
    }

    /// Make what `steps` of task `t` name.
    fn add(&mut self, t: &TaskDef, steps: &[StepDef], dir: &Path) -> Result<(), String> {
        for s in steps {
            match s {
                StepDef::PipeWrite { to, .. } => self.pipes_for(t, &t.comm, to)?,
                StepDef::PipeRead { from, .. } => self.pipes_for(t, from, &t.comm)?,
                StepDef::FutexWait { word } | StepDef::FutexWake { word } => {
                    for copy in 0..t.count {
                        self.words.entry((word.clone(), copy)).or_default();
                    }
                }
                StepDef::Write { file, .. } | StepDef::Read { file, .. } if !self.files.contains_key(file) => {
                    let path = dir.join(format!("file{}", self.files.len()));
                    let f = std::fs::OpenOptions::new()
                        .read(true)
                        .append(true)
                        .create_new(true)
                        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
                        .open(&path)
                        .map_err(|e| format!("task `{}`: file `{file}` ({}): {e}", t.comm, path.display()))?;
                    if let StepDef::Read { file_mb: Some(mb), .. } = s {
                        fill_uncached(&f, *mb)
                            .map_err(|e| format!("task `{}`: file `{file}` of {mb} MB: {e}", t.comm))?;
                    }
                    self.files.insert(file.clone(), (path, f));
                }
                StepDef::Periodic(p) => self.add(t, &p.steps, dir)?,
                StepDef::Loop { steps, .. } | StepDef::Spawn { steps, .. } => self.add(t, steps, dir)?,
                _ => {}
            }
        }
        Ok(())
    }

    /// The pipes from `writer` to `reader`, one a copy of task `t`.
    fn pipes_for(&mut self, t: &TaskDef, writer: &str, reader: &str) -> Result<(), String> {
        for copy in 0..t.count {
            if let std::collections::btree_map::Entry::Vacant(e) =
                self.pipes.entry((writer.to_string(), reader.to_string(), copy))
            {
                let ends = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)
                    .map_err(|e| format!("task `{}`: pipe: {e}", t.comm))?;
                e.insert(ends);
            }
        }
        Ok(())
    }
}

/// Write `mb` MB to `f`, sync it and drop it from the page cache: a file on disk, not cached,
/// when the run starts.
fn fill_uncached(f: &File, mb: u64) -> std::io::Result<()> {
    use std::io::Write;
    let buf = vec![0x5au8; 1 << 20];
    let mut w = f;
    for _ in 0..mb {
        w.write_all(&buf)?;
    }
    f.sync_all()?;
    // SAFETY: the fd is open; advice on the whole file.
    unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    Ok(())
}

/// The busy loop `compute` runs: `n` rounds of an xorshift no compiler can fold.
#[inline(never)]
fn spin(n: u64) -> u64 {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    std::hint::black_box(x)
}

/// ns per round of [`spin`]: the fastest of 20 tries of 100,000 rounds (a try a preemption
/// or an interrupt slowed counts no more).
fn calibrate() -> f64 {
    const N: u64 = 100_000;
    (0..20)
        .map(|_| {
            let t = mono_ns();
            spin(N);
            (mono_ns() - t) as f64 / N as f64
        })
        .fold(f64::INFINITY, f64::min)
        .max(1e-3)
}

/// glibc's semaphore on a futex word: a post count, and whether anyone sleeps on it.
#[derive(Default)]
struct Sem {
    value: AtomicU32,
    waiters: AtomicU32,
}

impl Sem {
    /// `sem_wait`: take a post, sleeping in `futex_wait` while there is none; false when the
    /// run ended first.
    fn wait(&self, over: &dyn Fn() -> bool) -> bool {
        loop {
            let v = self.value.load(Ordering::SeqCst);
            if v > 0 {
                if self
                    .value
                    .compare_exchange(v, v - 1, Ordering::SeqCst, Ordering::SeqCst)
                    .is_ok()
                {
                    return true;
                }
                continue;
            }
            if over() {
                return false;
            }
            self.waiters.fetch_add(1, Ordering::SeqCst);
            let ts = crate::clock::to_timespec(POLL_MS as u64 * 1_000_000);
            // SAFETY: the word is a live u32; a relative timeout; FUTEX_WAIT returns at once
            // if the word is no longer 0.
            unsafe {
                libc::syscall(
                    libc::SYS_futex,
                    self.value.as_ptr(),
                    libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
                    0u32,
                    &ts as *const libc::timespec,
                )
            };
            self.waiters.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// `sem_post`: add a post, and `futex_wake` one waiter if one sleeps.
    fn post(&self) {
        self.value.fetch_add(1, Ordering::SeqCst);
        if self.waiters.load(Ordering::SeqCst) > 0 {
            // SAFETY: the word is a live u32.
            unsafe {
                libc::syscall(
                    libc::SYS_futex,
                    self.value.as_ptr(),
                    libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
                    1,
                )
            };
        }
    }
}

/// What a task's thread leaves.
struct Done {
    stream: Option<(Stream, Option<WakeupLog>)>,
    /// The thread's id when it is a fair task whose steps run only in user space
    /// ([`user_space_only`]): [`crate::sched_trace::Recorded::in_user_space`].
    user_space: Option<u32>,
    warnings: Vec<String>,
    counters: BTreeMap<&'static str, u64>,
}

/// Set the calling thread's affinity, policy and nice as task `t` asks; what was refused,
/// naming the task and copy, and what is missing.
fn set_up(t: &TaskDef, copy: u32) -> Vec<String> {
    let who = format!("task `{}` copy {copy}", t.comm);
    let mut out = Vec::new();
    if let Some(cpus) = &t.affinity {
        let mut set = nix::sched::CpuSet::new();
        let r = cpus
            .iter()
            .try_for_each(|&c| set.set(c as usize))
            .and_then(|()| nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set));
        if let Err(e) = r {
            out.push(format!("{who}: affinity {cpus:?} not set: sched_setaffinity: {e}"));
        }
    }
    let rt = match t.policy {
        PolicyName::Fifo => Some((libc::SCHED_FIFO, "SCHED_FIFO")),
        PolicyName::Rr => Some((libc::SCHED_RR, "SCHED_RR")),
        _ => None,
    };
    if let (Some((policy, name)), Some(prio)) = (rt, t.priority) {
        let p = libc::sched_param {
            sched_priority: prio as i32,
        };
        // SAFETY: p is a valid sched_param; pid 0 is the calling thread.
        if unsafe { libc::sched_setscheduler(0, policy, &p) } != 0 {
            let e = std::io::Error::last_os_error();
            out.push(format!(
                "{who}: {name} {prio} refused ({e}): it ran SCHED_OTHER; real-time policies need root, CAP_SYS_NICE or an RLIMIT_RTPRIO of at least {prio}"
            ));
        }
    }
    if t.nice != 0 {
        // SAFETY: setpriority on this thread's id (Linux: nice is per thread).
        if unsafe { libc::setpriority(libc::PRIO_PROCESS, gettid(), t.nice) } != 0 {
            let e = std::io::Error::last_os_error();
            out.push(format!(
                "{who}: nice {} refused ({e}): a negative nice needs root or CAP_SYS_NICE",
                t.nice
            ));
        }
    }
    out
}

/// One task copy's thread: set up, wait for the others, then run its steps until they end or
/// the run does.
fn task_thread(
    env: &Arc<Env>,
    t: &TaskDef,
    (task, copy): (usize, u32),
    stream: Option<String>,
    gate: &Gate,
    (duration, keep_worst, trace_above): (u64, usize, Option<u64>),
) -> Done {
    let warnings = set_up(t, copy);
    let Some(t0) = gate.arrive_and_wait() else {
        return Done {
            stream: None,
            user_space: None,
            warnings,
            counters: BTreeMap::new(),
        };
    };
    let deadline = t0.saturating_add(duration);
    let cpu = t.affinity.as_ref().and_then(|c| c.first()).map_or(0, |&c| c as usize);
    let affinity = t.affinity.iter().flatten().map(|&c| c as usize).collect();
    let ctx = stream.map(|name| {
        let measures = format!("{name}: {} expiry to the task in user space", timer_text(&t.steps));
        let ctx = ThreadCtx::plain(name, measures, (cpu, affinity), gettid(), (t0, deadline), keep_worst);
        match trace_above {
            Some(above) => ctx.traced(above),
            None => ctx,
        }
    });
    let seed = ((task as u64) << 32 | copy as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let mut x = Exec::new(env.clone(), t.clone(), copy, deadline, seed);
    x.ctx = ctx;
    x.warnings = warnings;
    if !x.over() {
        sleep_ns(((t.start_ms * 1e6) as u64).min(deadline.saturating_sub(mono_ns())));
        x.steps(&t.steps);
    }
    x.end_children();
    let mut warnings = std::mem::take(&mut x.warnings);
    let stream = x.ctx.take().map(|c| {
        let (s, errors, log) = c.finish();
        warnings.extend(
            errors
                .into_iter()
                .map(|e| format!("task `{}` copy {copy}: {e}", t.comm)),
        );
        (s, log)
    });
    Done {
        stream,
        user_space: (user_space_only(&t.steps) && !matches!(t.policy, PolicyName::Fifo | PolicyName::Rr)).then(gettid),
        warnings,
        counters: x.counters,
    }
}

/// Do `steps` run only in user space: compute loops, no system call (the loop's clock is
/// the vDSO's)? Such a thread holding a CPU is in user space, interrupts on.
fn user_space_only(steps: &[StepDef]) -> bool {
    steps.iter().all(|s| match s {
        StepDef::Compute(_) => true,
        StepDef::Loop { steps, .. } => user_space_only(steps),
        _ => false,
    })
}

/// How the first periodic step of `steps` waits, for its stream's description.
fn timer_text(steps: &[StepDef]) -> &'static str {
    steps
        .iter()
        .find_map(|s| match s {
            StepDef::Periodic(p) => Some(match p.timer {
                TimerKind::Nanosleep => "clock_nanosleep(TIMER_ABSTIME)",
                TimerKind::Signal => "timer_create(SIGEV_SIGNAL)",
                TimerKind::Thread => "timer_create(SIGEV_THREAD)",
            }),
            StepDef::Loop { steps, .. } => Some(timer_text(steps)),
            _ => None,
        })
        .unwrap_or("periodic")
}

fn sleep_ns(ns: u64) {
    if ns > 0 {
        std::thread::sleep(std::time::Duration::from_nanos(ns));
    }
}

/// A task copy running its steps.
struct Exec {
    env: Arc<Env>,
    task: TaskDef,
    copy: u32,
    deadline: u64,
    /// xorshift64 state for ranges.
    rng: u64,
    /// Each read step's offset into its file, by name.
    offsets: BTreeMap<String, u64>,
    /// The file this copy last wrote (what its `fsync` syncs).
    written: Option<String>,
    /// Its measuring context, for a task with a periodic step.
    ctx: Option<ThreadCtx>,
    buf: Vec<u8>,
    warnings: Vec<String>,
    /// The children its `spawn`s started and no `wait` has reaped.
    children: Vec<std::process::Child>,
    /// What its steps did: `spawns`, `children_exited_ok`, `bytes_written`, `bytes_read`,
    /// `fsyncs`, `pipe_messages`, `futex_posts`.
    counters: BTreeMap<&'static str, u64>,
}

impl Exec {
    fn new(env: Arc<Env>, task: TaskDef, copy: u32, deadline: u64, seed: u64) -> Exec {
        Exec {
            env,
            task,
            copy,
            deadline,
            rng: 0x2545_f491_4f6c_dd1d ^ seed | 1,
            offsets: BTreeMap::new(),
            written: None,
            ctx: None,
            buf: vec![0x5a; 4096],
            warnings: Vec::new(),
            children: Vec::new(),
            counters: BTreeMap::new(),
        }
    }

    fn count(&mut self, what: &'static str, n: u64) {
        *self.counters.entry(what).or_default() += n;
    }

    /// Kill and reap the children still running: nothing outlives the run.
    fn end_children(&mut self) {
        for mut c in self.children.drain(..) {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// `fork` + `execve` of the probe's binary running `steps` as the child `comm`.
    fn spawn(&mut self, comm: &str, steps: &[StepDef]) {
        let Some(exe) = &self.env.exe else { return };
        let spec = ChildSpec {
            comm: comm.into(),
            steps: steps.to_vec(),
            files: self
                .env
                .files
                .iter()
                .map(|(k, (p, _))| (k.clone(), p.clone()))
                .collect(),
            dir: self.env.dir.0.clone(),
            exe: exe.clone(),
            deadline_ns: self.deadline,
            ns_per_loop: self.env.ns_per_loop,
            seed: crate::load::xorshift64(&mut self.rng),
        };
        let spec = serde_json::to_string(&spec).expect("a child's spec serialises");
        match std::process::Command::new(exe)
            .env(CHILD_ENV, spec)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .spawn()
        {
            Ok(c) => {
                self.children.push(c);
                self.count("spawns", 1);
            }
            Err(e) => self.warn(format!("spawn of `{comm}` ({}): {e}", exe.display())),
        }
    }

    fn over(&self) -> bool {
        mono_ns() >= self.deadline || signals::stop_requested()
    }

    /// Run `steps` once (false: the run ended).
    fn steps(&mut self, steps: &[StepDef]) -> bool {
        for s in steps {
            if self.over() || !self.step(s) {
                return false;
            }
        }
        true
    }

    /// A length drawn: fixed, or uniform in its range.
    fn draw(&mut self, d: &latlab_scenario::task::Dur) -> u64 {
        let (_, lo, hi) = d.bounds().expect("checked when read");
        if lo == hi {
            return lo;
        }
        lo + crate::load::xorshift64(&mut self.rng) % (hi - lo + 1)
    }

    fn step(&mut self, s: &StepDef) -> bool {
        match s {
            StepDef::Compute(d) => {
                let ns = self.draw(d);
                spin((ns as f64 / self.env.ns_per_loop) as u64);
            }
            StepDef::Sleep(d) => {
                let ns = self.draw(d);
                sleep_ns(ns.min(self.deadline.saturating_sub(mono_ns())));
            }
            StepDef::Loop { times, steps } => {
                let mut n = 0;
                while times.is_none_or(|t| n < t) {
                    if !self.steps(steps) {
                        return false;
                    }
                    n += 1;
                }
            }
            StepDef::Periodic(p) => self.periodic(p),
            StepDef::PipeWrite { to, bytes } => {
                let env = self.env.clone();
                let (_, w) = &env.pipes[&(self.task.comm.clone(), to.clone(), self.copy)];
                let n = (*bytes as usize).min(self.buf.len());
                let sent = self.poll(w.as_raw_fd(), libc::POLLOUT) && nix::unistd::write(w, &self.buf[..n]).is_ok();
                self.count("pipe_messages", u64::from(sent));
                return sent;
            }
            StepDef::PipeRead { from, bytes } => {
                let env = self.env.clone();
                let (r, _) = &env.pipes[&(from.clone(), self.task.comm.clone(), self.copy)];
                let n = (*bytes as usize).min(self.buf.len());
                return self.poll(r.as_raw_fd(), libc::POLLIN)
                    && nix::unistd::read(r.as_raw_fd(), &mut self.buf[..n]).is_ok();
            }
            StepDef::FutexWait { word } => {
                let env = self.env.clone();
                let over = || self.over();
                return env.words[&(word.clone(), self.copy)].wait(&over);
            }
            StepDef::FutexWake { word } => {
                self.env.words[&(word.clone(), self.copy)].post();
                self.count("futex_posts", 1);
            }
            StepDef::Write { file, kb } => {
                use std::io::Write;
                let env = self.env.clone();
                let mut f: &File = &env.files[file].1;
                let chunk = vec![0x5au8; (*kb as usize * 1024).min(1 << 20)];
                let mut left = *kb * 1024;
                while left > 0 {
                    let n = left.min(chunk.len() as u64) as usize;
                    if let Err(e) = f.write_all(&chunk[..n]) {
                        self.warn(format!("write to `{file}`: {e}"));
                        return false;
                    }
                    left -= n as u64;
                    self.count("bytes_written", n as u64);
                }
                self.written = Some(file.clone());
            }
            StepDef::Read { file, kb, .. } => {
                let f = &self.env.files[file].1;
                let len = f.metadata().map_or(0, |m| m.len());
                let at = self.offsets.entry(file.clone()).or_default();
                if *at >= len {
                    *at = 0;
                }
                let mut buf = vec![0u8; (*kb as usize * 1024).min(1 << 20)];
                let mut left = *kb * 1024;
                while left > 0 && *at < len {
                    let n = left.min(buf.len() as u64) as usize;
                    match f.read_at(&mut buf[..n], *at) {
                        Ok(0) => break,
                        Ok(got) => {
                            *at += got as u64;
                            left -= got as u64;
                            *self.counters.entry("bytes_read").or_default() += got as u64;
                        }
                        Err(_) => break,
                    }
                }
            }
            StepDef::Fsync => {
                let r = match &self.written {
                    Some(f) => self.env.files[f].1.sync_all(),
                    None => self.env.dir.1.sync_all(),
                };
                match r {
                    Ok(()) => self.count("fsyncs", 1),
                    Err(e) => self.warn(format!("fsync: {e}")),
                }
            }
            StepDef::Spawn { comm, steps } => self.spawn(comm, steps),
            StepDef::Wait => {
                let ok = self
                    .children
                    .drain(..)
                    .filter_map(|mut c| c.wait().ok())
                    .filter(|s| s.success())
                    .count();
                self.count("children_exited_ok", ok as u64);
            }
        }
        true
    }

    fn warn(&mut self, why: String) {
        let w = format!("task `{}` copy {}: {why}", self.task.comm, self.copy);
        if !self.warnings.contains(&w) {
            self.warnings.push(w);
        }
    }

    /// Wait until `fd` is ready for `events` (false: the run ended first).
    fn poll(&self, fd: i32, events: libc::c_short) -> bool {
        loop {
            let mut p = libc::pollfd { fd, events, revents: 0 };
            // SAFETY: one valid pollfd.
            let r = unsafe { libc::poll(&mut p, 1, POLL_MS) };
            if r > 0 {
                return true;
            }
            if self.over() {
                return false;
            }
        }
    }

    /// A periodic step: the probe's measuring loop for its timer, the step's own steps after
    /// each expiry.
    fn periodic(&mut self, p: &latlab_scenario::task::PeriodicDef) {
        let Some(mut ctx) = self.ctx.take() else { return };
        ctx.begin((p.period_us * 1e3) as u64, p.loops);
        match p.timer {
            TimerKind::Nanosleep => timer::nanosleep_loop(&mut ctx, &mut || {
                self.steps(&p.steps);
            }),
            TimerKind::Signal => posix_timer::signal_loop(&mut ctx, &mut || {
                self.steps(&p.steps);
            }),
            TimerKind::Thread => {
                let after: Option<posix_timer::After> = (!p.steps.is_empty()).then(|| {
                    let (env, task, copy, deadline, steps) = (
                        self.env.clone(),
                        self.task.clone(),
                        self.copy,
                        self.deadline,
                        p.steps.clone(),
                    );
                    let after: posix_timer::After = Arc::new(move || {
                        if task.nice != 0 {
                            // SAFETY: setpriority on this (notification) thread.
                            unsafe { libc::setpriority(libc::PRIO_PROCESS, gettid(), task.nice) };
                        }
                        let mut x = Exec::new(env.clone(), task.clone(), copy, deadline, mono_ns());
                        x.steps(&steps);
                        x.end_children();
                    });
                    after
                });
                posix_timer::thread_loop(&mut ctx, after)
            }
        }
        self.ctx = Some(ctx);
    }
}

/// The environment variable that makes the probe's binary a scenario's spawned child.
pub const CHILD_ENV: &str = "LATLAB_SCENARIO_CHILD";

/// What a spawned child runs: its name and steps, the run's files by name, its end.
#[derive(serde::Serialize, serde::Deserialize)]
struct ChildSpec {
    comm: String,
    steps: Vec<StepDef>,
    files: BTreeMap<String, PathBuf>,
    dir: PathBuf,
    exe: PathBuf,
    deadline_ns: u64,
    ns_per_loop: f64,
    seed: u64,
}

/// Call first thing in `main`: when this process is a scenario's spawned child, run its
/// steps and exit: status 0 when they all ran, 2 when the run ended first, 1 (saying why) on
/// a spec it cannot read; otherwise return.
pub fn child_main_if_requested() {
    let Some(spec) = std::env::var_os(CHILD_ENV) else {
        return;
    };
    // What the child execs (its own spawns) is told apart by its own spec.
    std::env::remove_var(CHILD_ENV);
    let code = match child_main(&spec.to_string_lossy()) {
        Ok(true) => 0,
        Ok(false) => 2,
        Err(e) => {
            eprintln!("latlab scenario child: {e}");
            1
        }
    };
    std::process::exit(code);
}

/// The child's steps run: true when they all did.
fn child_main(spec: &str) -> Result<bool, String> {
    // SAFETY: prctl with integer arguments; the child dies with the thread that spawned it.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) };
    let c: ChildSpec = serde_json::from_str(spec).map_err(|e| format!("{CHILD_ENV}: {e}"))?;
    if let Ok(name) = std::ffi::CString::new(c.comm.chars().take(15).collect::<String>()) {
        let _ = nix::sys::prctl::set_name(&name);
    }
    let mut files = BTreeMap::new();
    for (name, p) in c.files {
        let f = std::fs::OpenOptions::new()
            .read(true)
            .append(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&p)
            .map_err(|e| format!("{}: {e}", p.display()))?;
        files.insert(name, (p, f));
    }
    let dir = File::open(&c.dir).map_err(|e| format!("{}: {e}", c.dir.display()))?;
    let env = Env {
        pipes: BTreeMap::new(),
        words: BTreeMap::new(),
        files,
        dir: (c.dir, dir),
        ns_per_loop: c.ns_per_loop,
        exe: Some(c.exe),
    };
    let task = TaskDef::new(c.comm, Vec::new());
    let mut x = Exec::new(Arc::new(env), task, 0, c.deadline_ns, c.seed);
    let done = x.steps(&c.steps);
    x.end_children();
    for w in &x.warnings {
        eprintln!("latlab scenario child: {w}");
    }
    Ok(done && x.warnings.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(text: &str) -> Scenario {
        latlab_scenario::parse_toml("t.toml", text).unwrap()
    }

    fn cfg(ms: u64) -> ScenarioConfig {
        ScenarioConfig {
            duration_ns: Some(ms * 1_000_000),
            scratch: std::env::temp_dir(),
            keep_worst: 5,
            exe: None,
            trace_above_ns: None,
        }
    }

    #[test]
    fn only_compute_loops_run_only_in_user_space() {
        let s = scenario(
            r#"name = "t"
duration_s = 1
[[task]]
comm = "hog"
steps = [{ loop = { steps = [{ compute = { ms = 5 } }, { loop = { times = 2, steps = [{ compute = { us = 5 } }] } }] } }]
[[task]]
comm = "napper"
steps = [{ loop = { steps = [{ compute = { ms = 5 } }, { sleep = { ms = 1 } }] } }]
"#,
        );
        assert!(user_space_only(&s.tasks[0].steps));
        assert!(!user_space_only(&s.tasks[1].steps));
    }

    #[test]
    fn a_traced_run_explains_its_samples_from_the_tracepoints() {
        if let Err(e) = SchedTrace::start(&[0], 64) {
            eprintln!("skipping: the run cannot be traced here: {e}");
            return;
        }
        let s = scenario(
            r#"name = "t"
duration_s = 1
[[task]]
comm = "cyc"
steps = [{ periodic = { period_us = 1000, loops = 100 } }]
"#,
        );
        let out = run(
            &s,
            &ScenarioConfig {
                trace_above_ns: Some(0),
                ..cfg(1000)
            },
        )
        .unwrap();
        assert_eq!(
            out.result.meta.settings[RunMeta::TRACED_ABOVE_US],
            "0",
            "{:?}",
            out.warnings
        );
        let st = &out.result.streams[0];
        assert_eq!(st.worst.len(), 5);
        for w in &st.worst {
            let a = &w.attribution;
            assert!(a.note.starts_with("ftrace"), "{}", a.note);
            // The parts, the host's time among them, add up to the latency.
            assert_eq!(crate::sched_trace::parts_sum(a), w.latency_ns, "{a:?}");
        }
        let split = st.split.as_ref().expect("every wakeup split");
        assert!(split.irq.count() > 0 && split.irq.count() <= 100, "{}", split.note);
        // Every sample again with its host time out: as many, none longer.
        let own = st.host_out.as_ref().expect("the samples with the host's time out");
        assert_eq!(own.count(), st.hist.count());
        assert!(own.max() <= st.hist.max() && own.mean() <= st.hist.mean());
    }

    /// `count_per_cpu` runs as many copies per CPU as this process may use: each copy posts
    /// once.
    #[test]
    fn copies_per_cpu_are_per_cpu_this_process_may_run_on() {
        let s = scenario(
            r#"name = "t"
duration_s = 1
[[task]]
comm = "post"
count_per_cpu = 3
steps = [{ futex-wake = { word = "w" } }]
"#,
        );
        let out = run(&s, &cfg(50)).unwrap();
        let copies = 3 * crate::parse::allowed_cpus().len();
        assert_eq!(
            out.result.counters.get("scenario futex_posts"),
            Some(&(copies as u64)),
            "{:?}",
            out.warnings
        );
        assert!(
            out.result.meta.settings["task post"].starts_with(&format!("{copies} x ")),
            "{:?}",
            out.result.meta.settings
        );
    }

    #[test]
    fn periodic_tasks_are_streams_named_as_the_model_names_them() {
        let s = scenario(
            r#"name = "t"
duration_s = 1
[[task]]
comm = "cyc"
count = 2
steps = [{ periodic = { period_us = 1000, steps = [{ compute = { us = 20 } }] } }]
[[task]]
comm = "sig"
steps = [{ periodic = { period_us = 2000, timer = "signal", loops = 50 } }]
[[task]]
comm = "thr"
steps = [{ periodic = { period_us = 2000, timer = "thread", loops = 50, steps = [{ compute = { us = 10 } }] } }]
[[task]]
comm = "hog"
steps = [{ loop = { steps = [{ compute = { ms = 5 } }] } }]
"#,
        );
        let out = run(&s, &cfg(300)).unwrap();
        let names: Vec<&str> = out.result.streams.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["cyc.0", "cyc.1", "sig", "thr"], "{:?}", out.warnings);
        let count = |i: usize| out.result.streams[i].hist.count();
        // A 300 ms run of 1 ms periods: samples for most of them (not a timing bound: at
        // least one, at most one a period of the run's wall time, samples and missed ones
        // together; a last wakeup late by several periods counts them missed past the 300 ms).
        let periods = out.result.meta.duration_ns / 1_000_000 + 1;
        for i in 0..2 {
            let s = &out.result.streams[i];
            assert!(
                count(i) >= 1 && count(i) + s.missed <= periods,
                "{}: {} + {} in {periods} periods",
                s.name,
                count(i),
                s.missed
            );
        }
        // `loops` counts the expiries measured, as cyclictest's `-l` (overruns are missed
        // events beside them).
        assert_eq!(count(2), 50, "signal: its 50 loops");
        assert_eq!(count(3), 50, "thread: its 50 loops");
        assert!(out.result.streams[2].measures.contains("SIGEV_SIGNAL"));
        assert_eq!(out.result.meta.settings["task hog"], "1 x SCHED_OTHER, nice 0, any CPU");
    }

    #[test]
    fn pipe_and_futex_ping_pong_and_writes_with_fsync_run() {
        let s = scenario(
            r#"name = "t"
duration_s = 1
measure = ["ping", "tick"]
[[task]]
comm = "ping"
steps = [{ loop = { times = 200, steps = [
    { pipe-write = { to = "pong", bytes = 64 } },
    { pipe-read = { from = "pong", bytes = 64 } },
    { futex-wake = { word = "a" } },
    { futex-wait = { word = "b" } },
] } }, { periodic = { period_us = 1000, loops = 5 } }]
[[task]]
comm = "pong"
steps = [{ loop = { times = 200, steps = [
    { pipe-read = { from = "ping", bytes = 64 } },
    { pipe-write = { to = "ping", bytes = 64 } },
    { futex-wait = { word = "a" } },
    { futex-wake = { word = "b" } },
] } }]
[[task]]
comm = "tick"
steps = [{ periodic = { period_us = 1000, loops = 3 } }]
[[task]]
comm = "writer"
steps = [{ loop = { times = 3, steps = [{ write = { file = "log", kb = 64 } }, { fsync = {} }, { read = { file = "log", kb = 4 } }] } }]
"#,
        );
        let out = run(&s, &cfg(60_000)).unwrap();
        // `ping`'s periodic step comes after its 200 round trips: it reaches it only if every
        // pipe and futex step returned (a step cut short by the run's end stops the task).
        let names: Vec<&str> = out.result.streams.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["ping", "tick"]);
        assert_eq!(
            out.result.streams[0].hist.count(),
            5,
            "ping's 5 periods after the round trips"
        );
        assert_eq!(out.result.streams[1].hist.count(), 3);
        assert!(!out.interrupted);
        assert!(out.warnings.is_empty(), "{:?}", out.warnings);
    }

    #[test]
    fn spawn_and_loads_need_a_binary_and_a_child_has_no_pipes() {
        let s = scenario(
            "name = \"t\"\nduration_s = 1\n[[task]]\ncomm = \"p\"\nsteps = [{ spawn = { comm = \"c\", steps = [{ compute = { us = 5 } }] } }]\n",
        );
        let e = run(&s, &cfg(10)).unwrap_err();
        assert!(
            e.contains("task `p`") && e.contains("`spawn`") && e.contains("no binary"),
            "{e}"
        );
        let s = scenario(
            "name = \"t\"\nduration_s = 1\n[[task]]\ncomm = \"p\"\nsteps = [{ spawn = { comm = \"c\", steps = [{ pipe-read = { from = \"q\", bytes = 5 } }] } }]\n[[task]]\ncomm = \"q\"\nsteps = [{ pipe-write = { to = \"p\", bytes = 5 } }]\n",
        );
        let e = run(&s, &cfg(10)).unwrap_err();
        assert!(e.contains("task `p`: a spawned child's `pipe-read`"), "{e}");
        let s = scenario("name = \"t\"\nduration_s = 1\n[[load]]\nvideo = {}\n");
        assert!(run(&s, &cfg(10)).unwrap_err().contains("no binary"));
    }

    #[test]
    fn a_fifo_task_gets_its_policy_or_says_what_is_missing() {
        let s = scenario(
            "name = \"t\"\nduration_s = 1\n[[task]]\ncomm = \"rt\"\npolicy = \"fifo\"\npriority = 10\nnice = 0\nsteps = [{ periodic = { period_us = 1000, loops = 3 } }]\n",
        );
        let out = run(&s, &cfg(1_000)).unwrap();
        assert_eq!(out.result.streams[0].hist.count(), 3, "measured whatever the policy");
        match out.warnings.as_slice() {
            [] => {}
            [w] => {
                assert!(
                    w.starts_with("task `rt` copy 0: SCHED_FIFO 10 refused") && w.contains("RLIMIT_RTPRIO"),
                    "{w}"
                );
                eprintln!("SCHED_FIFO not granted here, so only its refusal was checked: {w}");
            }
            more => panic!("{more:?}"),
        }
    }
}
