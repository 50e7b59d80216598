//! Tasks described as data (a workload's or a scenario's `[[task]]`s, docs/experiments.md
//! "Tasks"): each with its name, scheduling policy, priority, nice value, affinity, copies and
//! start delay, and a program of steps: compute, sleep, a periodic wait (cyclictest's
//! `clock_nanosleep` TIMER_ABSTIME loop, or a POSIX timer notifying by signal or by thread),
//! fork/exec of a child and wait, file read/write/fsync, a pipe or a futex shared with another
//! task, and loops. The format and its checks that need no machine ([`check`]); both engines
//! read it (the model: `latlab_sim::workload::task`; the probe: `latlab_probe::scenario`).
//!
//! A periodic step is measured as cyclictest measures its thread: the time from each expiry
//! to the task in user space again, one stream per task copy ([`stream_names`]).
//!
//! Pipes and futex words join the copies of the tasks naming them one by one: copy `i` of
//! `ping` writes to copy `i` of `pong` (tasks that meet have the same `count`, or the same
//! `count_per_cpu`).
//!
//! A scenario's task may give its copies per CPU (`count_per_cpu`): the engine that runs the
//! scenario turns it into a `count` for its CPUs (`Scenario::on_cpus`) before it runs; a
//! task with `count_per_cpu` left reaches no engine ([`check`] refuses it).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// `PIPE_BUF`: the largest pipe write that is atomic (include/uapi/linux/limits.h).
pub const PIPE_BUF: u64 = 4096;

/// One `[[task]]`: `count` copies of a task running `steps`. Every field but `comm` and
/// `steps` is optional.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TaskDef {
    /// The task's name (`comm`, at most 15 bytes); unique among the workload's tasks.
    pub comm: String,
    /// Scheduling policy (default `other`).
    #[serde(default)]
    pub policy: PolicyName,
    /// RT priority 1..=99, needed by `fifo` and `rr` (only they take one).
    #[serde(default)]
    pub priority: Option<u32>,
    /// Nice value -20..=19 (default 0).
    #[serde(default)]
    pub nice: i32,
    /// CPUs the task may run on (`sched_setaffinity`); default every CPU.
    #[serde(default)]
    pub affinity: Option<Vec<u32>>,
    /// Copies of the task (default 1), 1..=[`MAX_COPIES`].
    #[serde(default = "one")]
    pub count: u32,
    /// Copies per CPU of the engine that runs it, 1..=[`MAX_COPIES`], instead of `count`
    /// (a scenario's only; resolved into `count` by `Scenario::on_cpus`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count_per_cpu: Option<u32>,
    /// Delay from the run's start to the task's first step, ms (default 0).
    #[serde(default)]
    pub start_ms: f64,
    /// The task's program, run once; the task exits after its last step.
    pub steps: Vec<StepDef>,
}

impl TaskDef {
    /// A task named `comm` as a file gives it with only its name and steps: one
    /// SCHED_OTHER copy at nice 0 on every CPU, started with the run.
    pub fn new(comm: impl Into<String>, steps: Vec<StepDef>) -> Self {
        TaskDef {
            comm: comm.into(),
            policy: PolicyName::Other,
            priority: None,
            nice: 0,
            affinity: None,
            count: 1,
            count_per_cpu: None,
            start_ms: 0.0,
            steps,
        }
    }
}

fn one() -> u32 {
    1
}

/// How many copies a task asks for: a number, or a number per CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Copies {
    Count(u32),
    PerCpu(u32),
}

impl std::fmt::Display for Copies {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Copies::Count(n) => write!(f, "count {n}"),
            Copies::PerCpu(n) => write!(f, "count_per_cpu {n}"),
        }
    }
}

impl TaskDef {
    /// The copies it asks for (`count_per_cpu` when given).
    pub fn copies(&self) -> Copies {
        self.count_per_cpu.map_or(Copies::Count(self.count), Copies::PerCpu)
    }
}

/// Most copies of one task: as many as the model's `cpu-hogs` may start.
pub const MAX_COPIES: u32 = 4000;

/// A scheduling policy as `chrt` names it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PolicyName {
    #[default]
    Other,
    Batch,
    Idle,
    Fifo,
    Rr,
}

/// One step of a task's program: a table of one key, the step's kind.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub enum StepDef {
    /// Run in user space this long.
    Compute(Dur),
    /// `nanosleep` this long (relative).
    Sleep(Dur),
    /// Wait for a periodic expiry, then run `steps`; `loops` times or until the run ends.
    Periodic(PeriodicDef),
    /// `fork` + `execve` of a child named `comm` running `steps` (its policy, priority and
    /// nice the parent's, as a fork inherits them); the parent goes on at once.
    Spawn { comm: String, steps: Vec<StepDef> },
    /// `wait4` until every child has exited.
    Wait,
    /// `read()` of the next `kb` KiB of `file` (from its start again at its end). The file is
    /// one a `write` step of the workload makes, or, with `file_mb`, a file of that many MB
    /// on disk and not cached when the run starts.
    Read {
        file: String,
        kb: u64,
        #[serde(default)]
        file_mb: Option<u64>,
    },
    /// `write()` of `kb` KiB appended to `file` (created by its first write; shared by every
    /// task naming it).
    Write { file: String, kb: u64 },
    /// `fsync()` (the model's ext3 ordered fsync commits the running transaction).
    Fsync,
    /// `write()` of `bytes` (1..=PIPE_BUF) into the pipe to task `to`.
    PipeWrite { to: String, bytes: u64 },
    /// `read()` of up to `bytes` from the pipe from task `from`; sleeps while it is empty.
    PipeRead { from: String, bytes: u64 },
    /// `sem_wait` on futex word `word`: take a post, sleeping in `futex_wait` while none.
    FutexWait { word: String },
    /// `sem_post` on futex word `word`: add a post, `futex_wake` of one waiter if any.
    FutexWake { word: String },
    /// Run `steps` `times` times, or until the run ends without `times`.
    Loop {
        #[serde(default)]
        times: Option<u64>,
        steps: Vec<StepDef>,
    },
}

/// A length of time in one unit (`{ us = 500 }`), fixed or a uniform range (`{ ms = [1, 5]
/// }`).
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Dur {
    #[serde(default)]
    pub ns: Option<Amount>,
    #[serde(default)]
    pub us: Option<Amount>,
    #[serde(default)]
    pub ms: Option<Amount>,
    #[serde(default)]
    pub s: Option<Amount>,
}

/// A number, or a range `[low, high]` drawn from uniformly.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize, Serialize)]
#[serde(untagged)]
pub enum Amount {
    One(f64),
    Range([f64; 2]),
}

/// A periodic step: its period, how the expiry reaches the task, how many periods, and what
/// the task does after each expiry.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PeriodicDef {
    /// The period, us.
    pub period_us: f64,
    /// How the task waits (default `nanosleep`).
    #[serde(default)]
    pub timer: TimerKind,
    /// Periods before the step ends (default: until the run ends).
    #[serde(default)]
    pub loops: Option<u64>,
    /// What runs after each expiry (in the timer's new thread for `thread`).
    #[serde(default)]
    pub steps: Vec<StepDef>,
}

/// How a periodic step waits for its expiry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TimerKind {
    /// cyclictest's thread: `clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)` to each
    /// deadline, a period after the last.
    #[default]
    Nanosleep,
    /// A POSIX timer (`timer_create`) with SIGEV_SIGNAL: the task `pause()`s and its handler
    /// runs the steps.
    Signal,
    /// A POSIX timer with SIGEV_THREAD: glibc's helper thread starts a thread per expiry,
    /// which runs the steps.
    Thread,
}

/// A task's mistake: the task (index in the file), the key at fault and which of that
/// task's places setting it (from 0, in the file's order), the field (`task.steps.sleep.us`)
/// and why.
#[derive(Clone, Debug, PartialEq)]
pub struct TaskError {
    pub task: usize,
    pub key: &'static str,
    pub nth: usize,
    pub field: String,
    pub why: String,
}

/// Longest time a step may take, ns: an hour (a run lasts at most two).
const MAX_NS: f64 = 3.6e12;
/// Longest `read` or `write`, KiB (1 GiB).
const MAX_KB: u64 = 1 << 20;
/// Largest old file a `read` may name, MB (100 GB).
const MAX_FILE_MB: u64 = 100_000;

impl Dur {
    /// The unit given and its amount (exactly one must be).
    fn unit(&self) -> Result<(&'static str, Amount, f64), String> {
        let given: Vec<_> = [
            ("ns", self.ns, 1.0),
            ("us", self.us, 1e3),
            ("ms", self.ms, 1e6),
            ("s", self.s, 1e9),
        ]
        .into_iter()
        .filter_map(|(k, a, scale)| a.map(|a| (k, a, scale)))
        .collect();
        match given.as_slice() {
            [one] => Ok(*one),
            [] => Err("give the length in one unit: ns, us, ms or s".into()),
            _ => Err("give the length in one unit only (ns, us, ms or s)".into()),
        }
    }
    /// Its unit and bounds in ns, checked: finite, above zero, at most an hour, low <= high.
    pub fn bounds(&self) -> Result<(&'static str, u64, u64), (&'static str, String)> {
        let (k, a, scale) = self.unit().map_err(|why| ("", why))?;
        let (lo, hi) = match a {
            Amount::One(v) => (v, v),
            Amount::Range([lo, hi]) => (lo, hi),
        };
        for v in [lo, hi] {
            if !(v.is_finite() && v > 0.0 && v * scale <= MAX_NS) {
                return Err((
                    k,
                    format!("must be a length above 0 and at most an hour, got {v:?} {k}"),
                ));
            }
        }
        if lo > hi {
            return Err((k, format!("[{lo}, {hi}]: the low end exceeds the high end")));
        }
        Ok((k, ((lo * scale) as u64).max(1), ((hi * scale) as u64).max(1)))
    }
}

/// Check the tasks an engine runs, on their own (what the machine decides is each engine's:
/// the model's `check_machine`): every count resolved (no `count_per_cpu`).
pub fn check(tasks: &[TaskDef]) -> Result<(), TaskError> {
    check_tasks(tasks, false)
}

/// Check a scenario file's tasks as written: as [`check`], with `count_per_cpu` allowed.
pub fn check_per_cpu(tasks: &[TaskDef]) -> Result<(), TaskError> {
    check_tasks(tasks, true)
}

fn check_tasks(tasks: &[TaskDef], per_cpu: bool) -> Result<(), TaskError> {
    let comms: BTreeMap<&str, (usize, Copies)> = tasks
        .iter()
        .enumerate()
        .map(|(i, t)| (t.comm.as_str(), (i, t.copies())))
        .collect();
    let written: Vec<&str> = tasks.iter().flat_map(|t| files_written(&t.steps)).collect();
    // Futex words by name: the first task naming each, for the count check.
    let mut words: BTreeMap<String, (String, Copies)> = BTreeMap::new();
    for (i, t) in tasks.iter().enumerate() {
        let mut c = Checker {
            task: i,
            comm: &t.comm,
            count: t.copies(),
            per_cpu,
            seen: BTreeMap::new(),
            comms: &comms,
            written: &written,
            words: &mut words,
        };
        c.task(t, i)?;
    }
    Ok(())
}

/// Names of the files `steps` write, nested steps too.
fn files_written(steps: &[StepDef]) -> Vec<&str> {
    let mut out = Vec::new();
    for s in steps {
        match s {
            StepDef::Write { file, .. } => out.push(file.as_str()),
            StepDef::Periodic(p) => out.extend(files_written(&p.steps)),
            StepDef::Spawn { steps, .. } | StepDef::Loop { steps, .. } => out.extend(files_written(steps)),
            _ => {}
        }
    }
    out
}

struct Checker<'a> {
    task: usize,
    comm: &'a str,
    count: Copies,
    /// May a task give `count_per_cpu` (a scenario file as written)?
    per_cpu: bool,
    /// Places met so far in this task, by key.
    seen: BTreeMap<&'static str, usize>,
    comms: &'a BTreeMap<&'a str, (usize, Copies)>,
    written: &'a [&'a str],
    words: &'a mut BTreeMap<String, (String, Copies)>,
}

impl Checker<'_> {
    /// The key `key` is set once more here.
    fn see(&mut self, key: &'static str) {
        *self.seen.entry(key).or_default() += 1;
    }
    /// An error at the last place `key` was set (its first, if never seen).
    fn err(&self, key: &'static str, field: &str, why: String) -> TaskError {
        TaskError {
            task: self.task,
            key,
            nth: self.seen.get(key).map_or(0, |n| n.saturating_sub(1)),
            field: format!("task.{field}"),
            why: format!("task `{}`: {why}", self.comm),
        }
    }

    fn task(&mut self, t: &TaskDef, index: usize) -> Result<(), TaskError> {
        self.see("comm");
        comm_ok(&t.comm).map_err(|why| self.err("comm", "comm", why))?;
        if self.comms.get(t.comm.as_str()).is_some_and(|&(i, _)| i != index) {
            return Err(self.err(
                "comm",
                "comm",
                "names another task already: each task needs its own comm (pipes name their partner by it, streams are named after it)".into(),
            ));
        }
        self.see("policy");
        match (t.policy, t.priority) {
            (PolicyName::Batch | PolicyName::Idle, _) => {
                return Err(self.err(
                    "policy",
                    "policy",
                    format!(
                        "SCHED_{} is not modelled: the model's schedulers run `other`, `fifo` and `rr`",
                        if t.policy == PolicyName::Batch { "BATCH" } else { "IDLE" }
                    ),
                ))
            }
            (PolicyName::Fifo | PolicyName::Rr, None) => {
                return Err(self.err(
                    "policy",
                    "priority",
                    "policy `fifo` and `rr` need a `priority`, 1..=99".into(),
                ))
            }
            (PolicyName::Fifo | PolicyName::Rr, Some(p)) if !(1..=99).contains(&p) => {
                self.see("priority");
                return Err(self.err("priority", "priority", format!("must be 1..=99, got {p}")));
            }
            (PolicyName::Other, Some(p)) => {
                self.see("priority");
                return Err(self.err(
                    "priority",
                    "priority",
                    format!("only `fifo` and `rr` take a priority (SCHED_OTHER's is its nice value), got {p}"),
                ));
            }
            _ => {}
        }
        self.see("nice");
        if !(-20..=19).contains(&t.nice) {
            return Err(self.err("nice", "nice", format!("must be -20..=19, got {}", t.nice)));
        }
        match t.count_per_cpu {
            None => {
                self.see("count");
                if !(1..=MAX_COPIES).contains(&t.count) {
                    return Err(self.err("count", "count", format!("must be 1..={MAX_COPIES}, got {}", t.count)));
                }
            }
            Some(n) => {
                self.see("count_per_cpu");
                let why = if !self.per_cpu {
                    "copies per CPU are a scenario file's, resolved for the engine's CPUs before it runs: give `count`"
                        .into()
                } else if t.count != 1 {
                    "give `count` or `count_per_cpu`, not both".into()
                } else if !(1..=MAX_COPIES).contains(&n) {
                    format!("must be 1..={MAX_COPIES}, got {n}")
                } else if has_periodic(&t.steps) {
                    "a task with a periodic step is measured, one stream per copy (COMM, COMM.N): copies per CPU would name other streams on another machine, and `measure` and `latlab validate` hold the model's streams against the machine's by name; give `count`".into()
                } else {
                    String::new()
                };
                if !why.is_empty() {
                    return Err(self.err("count_per_cpu", "count_per_cpu", why));
                }
            }
        }
        self.see("start_ms");
        if !(t.start_ms.is_finite() && (0.0..=MAX_NS / 1e6).contains(&t.start_ms)) {
            return Err(self.err(
                "start_ms",
                "start_ms",
                format!("must be 0 ..= 3600000 ms, got {:?}", t.start_ms),
            ));
        }
        if let Some(cpus) = &t.affinity {
            self.see("affinity");
            let mut sorted = cpus.clone();
            sorted.sort_unstable();
            sorted.dedup();
            if cpus.is_empty() || sorted.len() != cpus.len() {
                return Err(self.err(
                    "affinity",
                    "affinity",
                    format!("must list CPUs by number, each once, got {cpus:?}"),
                ));
            }
        }
        self.steps(&t.steps, "steps", Nest::Task)
    }

    fn steps(&mut self, steps: &[StepDef], at: &str, nest: Nest) -> Result<(), TaskError> {
        self.see("steps");
        if steps.is_empty() && nest != Nest::Periodic {
            return Err(self.err("steps", at, "needs at least one step".into()));
        }
        for s in steps {
            self.step(s, at, nest)?;
        }
        Ok(())
    }

    fn step(&mut self, s: &StepDef, at: &str, nest: Nest) -> Result<(), TaskError> {
        let dur = |c: &mut Self, kind: &'static str, d: &Dur| {
            c.see(kind);
            d.bounds().map(|_| ()).map_err(|(k, why)| {
                let key = if k.is_empty() { kind } else { k };
                if !k.is_empty() {
                    c.see(k);
                }
                c.err(
                    key,
                    &format!("{at}.{kind}{}{k}", if k.is_empty() { "" } else { "." }),
                    why,
                )
            })
        };
        let within = |c: &mut Self, kind: &'static str, key: &'static str, v: u64, lo: u64, hi: u64, unit: &str| {
            c.see(kind);
            c.see(key);
            if (lo..=hi).contains(&v) {
                Ok(())
            } else {
                Err(c.err(
                    key,
                    &format!("{at}.{kind}.{key}"),
                    format!("must be {lo}..={hi} ({unit}), got {v}"),
                ))
            }
        };
        match s {
            StepDef::Compute(d) => dur(self, "compute", d),
            StepDef::Sleep(d) => dur(self, "sleep", d),
            StepDef::Periodic(p) => {
                self.see("periodic");
                self.see("period_us");
                let field = format!("{at}.periodic");
                if nest != Nest::Task {
                    return Err(self.err(
                        "periodic",
                        &field,
                        "a periodic step is measured as its task's stream: it may not sit inside another periodic step or a spawned child (give it a [[task]] of its own)".into(),
                    ));
                }
                if !(p.period_us.is_finite() && (10.0..=1e7).contains(&p.period_us)) {
                    return Err(self.err(
                        "period_us",
                        &format!("{field}.period_us"),
                        format!("must be 10 ..= 10000000 us, got {:?}", p.period_us),
                    ));
                }
                if p.loops == Some(0) {
                    self.see("loops");
                    return Err(self.err("loops", &format!("{field}.loops"), "must be at least 1".into()));
                }
                self.steps(&p.steps, &format!("{field}.steps"), Nest::Periodic)
            }
            StepDef::Spawn { comm, steps } => {
                self.see("spawn");
                self.see("comm");
                comm_ok(comm).map_err(|why| self.err("comm", &format!("{at}.spawn.comm"), why))?;
                self.steps(steps, &format!("{at}.spawn.steps"), Nest::Child)
            }
            StepDef::Wait | StepDef::Fsync => Ok(()),
            StepDef::Read { file, kb, file_mb } => {
                within(self, "read", "kb", *kb, 1, MAX_KB, "KiB")?;
                self.see("file");
                if file.trim().is_empty() {
                    return Err(self.err("file", &format!("{at}.read.file"), "must name a file".into()));
                }
                match file_mb {
                    Some(mb) => within(self, "read", "file_mb", *mb, 1, MAX_FILE_MB, "MB"),
                    None if !self.written.contains(&file.as_str()) => Err(self.err(
                        "file",
                        &format!("{at}.read.file"),
                        format!("no `write` step makes `{file}`: give `file_mb` for a file on disk before the run"),
                    )),
                    None => Ok(()),
                }
            }
            StepDef::Write { file, kb } => {
                within(self, "write", "kb", *kb, 1, MAX_KB, "KiB")?;
                self.see("file");
                if file.trim().is_empty() {
                    return Err(self.err("file", &format!("{at}.write.file"), "must name a file".into()));
                }
                Ok(())
            }
            StepDef::PipeWrite { to, bytes } => {
                within(
                    self,
                    "pipe-write",
                    "bytes",
                    *bytes,
                    1,
                    PIPE_BUF,
                    "bytes: PIPE_BUF's atomic write",
                )?;
                self.partner("pipe-write", "to", to, at)
            }
            StepDef::PipeRead { from, bytes } => {
                within(self, "pipe-read", "bytes", *bytes, 1, PIPE_BUF, "bytes")?;
                self.partner("pipe-read", "from", from, at)
            }
            StepDef::FutexWait { word } | StepDef::FutexWake { word } => {
                let kind = if matches!(s, StepDef::FutexWait { .. }) {
                    "futex-wait"
                } else {
                    "futex-wake"
                };
                self.see(kind);
                self.see("word");
                let field = format!("{at}.{kind}.word");
                if word.trim().is_empty() {
                    return Err(self.err("word", &field, "must name a futex word".into()));
                }
                if nest == Nest::Child {
                    return Err(self.err(
                        "word",
                        &field,
                        "a spawned child shares no futex word (copies are paired by their task's count): use it in a [[task]]".into(),
                    ));
                }
                let first = self
                    .words
                    .entry(word.clone())
                    .or_insert_with(|| (self.comm.to_string(), self.count));
                if first.1 != self.count {
                    let why = format!(
                        "word `{word}` is shared with task `{}`, which has {}, this task {}: copy i of each meets copy i of the other, so the counts must be equal",
                        first.0, first.1, self.count
                    );
                    return Err(self.err("word", &field, why));
                }
                Ok(())
            }
            StepDef::Loop { times, steps } => {
                self.see("loop");
                if *times == Some(0) {
                    self.see("times");
                    return Err(self.err("times", &format!("{at}.loop.times"), "must be at least 1".into()));
                }
                self.steps(steps, &format!("{at}.loop.steps"), nest)
            }
        }
    }

    /// A pipe's other end: another task of the same count.
    fn partner(&mut self, kind: &'static str, key: &'static str, name: &str, at: &str) -> Result<(), TaskError> {
        self.see(key);
        let field = format!("{at}.{kind}.{key}");
        match self.comms.get(name) {
            None => Err(self.err(
                key,
                &field,
                format!(
                    "no task is named `{name}` (the tasks: {})",
                    self.comms.keys().copied().collect::<Vec<_>>().join(", ")
                ),
            )),
            Some(_) if name == self.comm => Err(self.err(key, &field, "a pipe joins two tasks: name the other one".into())),
            Some(&(_, n)) if n != self.count => Err(self.err(
                key,
                &field,
                format!(
                    "task `{name}` has {n}, this task {}: copy i of each meets copy i of the other, so the counts must be equal",
                    self.count
                ),
            )),
            Some(_) => Ok(()),
        }
    }
}

/// Where a list of steps sits.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Nest {
    /// A task's own program (or a loop in it).
    Task,
    /// A periodic step's body.
    Periodic,
    /// A spawned child's program.
    Child,
}

fn comm_ok(comm: &str) -> Result<(), String> {
    if comm.trim().is_empty() || comm.len() > 15 || comm.contains(char::is_whitespace) {
        return Err(format!(
            "must be 1..=15 bytes without spaces (TASK_COMM_LEN), got {comm:?}"
        ));
    }
    Ok(())
}

/// Does a task of `tasks` have a periodic step (a measured stream)?
pub fn measures(tasks: &[TaskDef]) -> bool {
    !stream_names(tasks).is_empty()
}

/// The measured streams of `tasks`, in the engines' numbering (the model's
/// `Mark::PeriodicSample`, the probe's streams): one per copy of
/// each task with a periodic step (`COMM`, or `COMM.N` for copy N of several).
pub fn stream_names(tasks: &[TaskDef]) -> Vec<String> {
    let mut out = Vec::new();
    for t in tasks.iter().filter(|t| has_periodic(&t.steps)) {
        if t.count == 1 {
            out.push(t.comm.clone());
        } else {
            out.extend((0..t.count).map(|i| format!("{}.{i}", t.comm)));
        }
    }
    out
}

/// Do `steps` (or a loop in them) hold a periodic step?
pub fn has_periodic(steps: &[StepDef]) -> bool {
    steps.iter().any(|s| match s {
        StepDef::Periodic(_) => true,
        StepDef::Loop { steps, .. } => has_periodic(steps),
        _ => false,
    })
}
