//! Tasks described as data (a workload file's `[[task]]`s, docs/experiments.md "Tasks"): each
//! with its name, scheduling policy, priority, nice value, affinity, copies and start delay,
//! and a program of steps: compute, sleep, a periodic wait (cyclictest's `clock_nanosleep`
//! TIMER_ABSTIME loop, or a POSIX timer notifying by signal or by thread), fork/exec of a
//! child and wait, file read/write/fsync, a pipe or a futex shared with another task, and
//! loops. The tasks start with the run, beside the workload's script, and run until the run
//! ends (a task whose steps end exits).
//!
//! A periodic step is measured as cyclictest measures its thread: the time from each expiry
//! to the task in user space again, one stream per task copy ([`stream_names`],
//! `measure::periodic`). A range of compute or sleep is drawn uniformly from the run's
//! workload stream of randomness.
//!
//! Pipes and futex words join the copies of the tasks naming them one by one: copy `i` of
//! `ping` writes to copy `i` of `pong` (tasks that meet have the same `count`).
//!
//! The format and its machine-free checks are `latlab_scenario::task`'s (the probe reads the
//! same); the model's part is here: [`check_machine`], and the tasks' programs ([`specs`]).

use super::posix_test::{HELPER_INSTR, HELPER_MISSES, THREAD_START_INSTR, THREAD_START_MISSES};
use super::{Action, ProgCx, Program, TaskSpec};
use crate::kernel::futex::Futex;
use crate::kernel::pipe::Pipe;
use crate::kernel::posix_timer::SigInfo;
use crate::kernel::task::Policy;
use crate::measure::Mark;
use crate::workload::syscall::Syscall;
use latlab_core::Nanos;
pub use latlab_scenario::task::{
    check, has_periodic, measures, stream_names, Amount, Dur, PeriodicDef, PolicyName, StepDef, TaskDef, TaskError,
    TimerKind, MAX_COPIES,
};
use rand::Rng as _;
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;

// The format's limits are the model's.
const _: () = assert!(MAX_COPIES == super::hogs::MAX_TASKS);
const _: () = assert!(latlab_scenario::task::PIPE_BUF == crate::kernel::pipe::PIPE_BUF);

/// Check the tasks against the kernel they run on: `cpus` CPUs up, with a runqueue per CPU
/// (`per_cpu`: an affinity may name any of them) or one they share (a task runs on any of
/// them, so an affinity must name them all), and POSIX timers for a periodic step's
/// `signal` or `thread` (none on a 2.4 kernel).
pub fn check_machine(tasks: &[TaskDef], cpus: u32, per_cpu: bool, posix_timers: bool) -> Result<(), TaskError> {
    for (i, t) in tasks.iter().enumerate() {
        let err = |key: &'static str, nth: usize, field: &str, why: String| TaskError {
            task: i,
            key,
            nth,
            field: format!("task.{field}"),
            why: format!("task `{}`: {why}", t.comm),
        };
        if let Some(cpus_asked) = &t.affinity {
            if let Some(c) = cpus_asked.iter().find(|&&c| c >= cpus) {
                return Err(err(
                    "affinity",
                    0,
                    "affinity",
                    format!(
                        "CPU {c}: the kernel runs on {cpus} CPU(s), 0..={}",
                        cpus.saturating_sub(1)
                    ),
                ));
            }
            if !per_cpu && cpus_asked.len() as u32 != cpus {
                return Err(err(
                    "affinity",
                    0,
                    "affinity",
                    format!(
                        "{cpus_asked:?}: this kernel's CPUs share one runqueue (goodness24, o1), so a task runs on any of them; an affinity must name all {cpus} CPUs (a run's `maxcpus = 1` boots the kernel on one; cfs and eevdf have a runqueue per CPU)"
                    ),
                ));
            }
        }
        if !posix_timers {
            let mut nth = 0;
            for s in &t.steps {
                if let StepDef::Periodic(p) = s {
                    if p.timer != TimerKind::Nanosleep {
                        return Err(err(
                            "timer",
                            nth,
                            "steps.periodic.timer",
                            "a 2.4 kernel has no POSIX timers (timer_create arrived in 2.6): use `nanosleep`".into(),
                        ));
                    }
                    nth += 1;
                }
            }
        }
    }
    Ok(())
}

/// The tasks to start with the run: every copy of each, in the file's order.
pub fn specs(tasks: &[TaskDef]) -> Vec<TaskSpec> {
    let shared = Rc::new(RefCell::new(Shared::default()));
    let mut stream = 0u32;
    let mut out = Vec::new();
    for t in tasks {
        let (policy, rt_priority) = match t.policy {
            PolicyName::Fifo => (Policy::Fifo, t.priority.unwrap_or(1)),
            PolicyName::Rr => (Policy::Rr, t.priority.unwrap_or(1)),
            // Refused by `check`; never reached.
            PolicyName::Other | PolicyName::Batch | PolicyName::Idle => (Policy::Other, 0),
        };
        let measured = has_periodic(&t.steps);
        for copy in 0..t.count {
            let me = Rc::new(Me {
                comm: t.comm.clone(),
                copy,
                policy,
                rt_priority,
                nice: t.nice,
                stream: measured.then_some(stream),
                shared: shared.clone(),
            });
            if measured {
                stream += 1;
            }
            let mut r = Runner::new(me, t.steps.clone());
            r.start = (t.start_ms * 1e6) as Nanos;
            out.push(TaskSpec {
                policy,
                rt_priority,
                nice: t.nice,
                affinity: t.affinity.clone(),
                ..TaskSpec::user(t.comm.clone(), Box::new(r))
            });
        }
    }
    out
}

/// What the tasks share: their pipes, futex words and files, made when first used.
#[derive(Default)]
struct Shared {
    /// By (writer, reader, copy).
    pipes: BTreeMap<(String, String, u32), Rc<Pipe>>,
    /// By (word, copy).
    futexes: BTreeMap<(String, u32), Rc<Futex>>,
    /// By name: the file and its size in pages as far as written.
    files: BTreeMap<String, (u32, u64)>,
}

/// A task copy's identity.
struct Me {
    comm: String,
    copy: u32,
    policy: Policy,
    rt_priority: u32,
    nice: i32,
    /// Its measured stream, for a task with a periodic step.
    stream: Option<u32>,
    shared: Rc<RefCell<Shared>>,
}

impl Me {
    fn pipe(&self, writer: &str, reader: &str) -> Rc<Pipe> {
        let mut s = self.shared.borrow_mut();
        let id = s.pipes.len() as u64;
        s.pipes
            .entry((writer.to_string(), reader.to_string(), self.copy))
            .or_insert_with(|| Pipe::new(id))
            .clone()
    }
    fn futex(&self, word: &str) -> Rc<Futex> {
        let mut s = self.shared.borrow_mut();
        let id = s.futexes.len() as u32;
        s.futexes
            .entry((word.to_string(), self.copy))
            .or_insert_with(|| Futex::new(id))
            .clone()
    }
}

/// glibc's `sem_wait` / `sem_post` in user space without a system call: an atomic
/// compare-and-exchange on the word and its checks, ~30 instructions and a miss on the
/// word's line, shared with the other task (nptl/sem_waitcommon.c, sem_post.c).
const SEM_OP_INSTR: f64 = 30.0;
const SEM_OP_MISSES: f64 = 1.0;

/// A running task's program: its steps, frame by frame.
struct Runner {
    me: Rc<Me>,
    frames: Vec<Frame>,
    /// What the step under way does next.
    pend: Option<Pend>,
    /// Delay before the first step, ns (taken once).
    start: Nanos,
    /// Each read step's offset into its file, pages, by file name.
    offsets: BTreeMap<String, u64>,
}

struct Frame {
    steps: Vec<StepDef>,
    pc: usize,
    kind: FrameKind,
}

enum FrameKind {
    /// Run once.
    Once,
    /// A loop: passes left after this one (None: forever).
    Loop { left: Option<u64> },
    /// A periodic step: its timer's state, and periods left after this one.
    Periodic { t: Periodic, left: Option<u64> },
}

/// A periodic step's timer.
struct Periodic {
    kind: TimerKind,
    period: Nanos,
    /// The next expiry (its first: once the timer is set).
    due: Option<Nanos>,
    /// Waiting for the expiry (false: running the body after it).
    waiting: bool,
    /// Where a `pause` / `sigwaitinfo` puts the signal's info.
    info: Rc<Cell<Option<SigInfo>>>,
}

/// The second half of a step.
enum Pend {
    /// `sem_wait` again after `futex_wait` returned.
    FutexRetry(Rc<Futex>),
    /// The child's creation after `fork`'s system call.
    Spawn(TaskSpec),
    /// A write to the file `creat()` is making.
    Write {
        file: Rc<Cell<u32>>,
        name: String,
        bytes: u64,
    },
    /// The signal's wait returned (SIGEV_SIGNAL / SIGEV_THREAD).
    Signalled,
    /// glibc's helper is done with its user work: `clone()` of the thread for `due`.
    Clone { due: Nanos, missed: u32 },
    /// `clone()` returned: the thread for `due` starts.
    Thread { due: Nanos, missed: u32 },
    /// A SIGEV_THREAD thread's start (`start_thread`, `timer_sigev_thread`'s
    /// `rt_sigprocmask`) before the notify function.
    ThreadStart { due: Nanos, missed: u32 },
    /// The notify function runs: the sample.
    Sample { due: Nanos, missed: u32 },
}

impl Runner {
    fn new(me: Rc<Me>, steps: Vec<StepDef>) -> Self {
        Runner {
            me,
            frames: vec![Frame {
                steps,
                pc: 0,
                kind: FrameKind::Once,
            }],
            pend: None,
            start: 0,
            offsets: BTreeMap::new(),
        }
    }

    fn sample(&self, cx: &mut ProgCx, due: Nanos, missed: u32) {
        if let Some(stream) = self.me.stream {
            cx.marks.push(Mark::PeriodicSample { stream, missed, due });
        }
    }

    /// The action the pending half-step makes, if any.
    fn pending(&mut self, cx: &mut ProgCx, p: Pend) -> Option<Action> {
        match p {
            Pend::FutexRetry(f) => Some(self.sem_wait(cx, f)),
            Pend::Spawn(spec) => Some(Action::Spawn(spec)),
            Pend::Write { file, name, bytes } => {
                let f = file.get();
                self.grow(&name, f, bytes);
                Some(Action::Call(Syscall::Write { file: f, bytes }))
            }
            Pend::Signalled => self.signalled(cx),
            Pend::Clone { due, missed } => {
                self.pend = Some(Pend::Thread { due, missed });
                Some(Action::Call(Syscall::CloneThread))
            }
            Pend::Thread { due, missed } => {
                let top = self.frames.last_mut()?;
                let FrameKind::Periodic { left, .. } = &mut top.kind else {
                    return None;
                };
                let mut r = Runner::new(self.me.clone(), top.steps.clone());
                r.pend = Some(Pend::ThreadStart { due, missed });
                // The helper counts the expiries it handed to threads.
                match left {
                    Some(0) => {
                        self.frames.pop();
                    }
                    Some(n) => *n -= 1,
                    None => {}
                }
                Some(Action::Spawn(TaskSpec {
                    share_mm: true,
                    ..self.spec("timer-thread", r)
                }))
            }
            Pend::ThreadStart { due, missed } => {
                self.pend = Some(Pend::Sample { due, missed });
                Some(Action::Compute(
                    cx.m.syscall_ns + cx.m.cost(THREAD_START_INSTR, THREAD_START_MISSES),
                ))
            }
            Pend::Sample { due, missed } => {
                self.sample(cx, due, missed);
                None
            }
        }
    }

    /// The file `name` is `f` and grew by `bytes`.
    fn grow(&self, name: &str, f: u32, bytes: u64) {
        let mut s = self.me.shared.borrow_mut();
        let e = s.files.entry(name.to_string()).or_insert((f, 0));
        e.1 += bytes.div_ceil(4096);
    }

    /// A task spec for a child or thread of this task: its policy, priority and nice.
    fn spec(&self, comm: &str, r: Runner) -> TaskSpec {
        TaskSpec {
            policy: self.me.policy,
            rt_priority: self.me.rt_priority,
            nice: self.me.nice,
            ..TaskSpec::user(comm, Box::new(r))
        }
    }

    fn sem_wait(&mut self, cx: &mut ProgCx, f: Rc<Futex>) -> Action {
        if f.try_take() {
            return Action::Compute(cx.m.cost(SEM_OP_INSTR, SEM_OP_MISSES));
        }
        self.pend = Some(Pend::FutexRetry(f.clone()));
        Action::Call(Syscall::FutexWait { futex: f })
    }

    /// The signal's wait of a periodic step returned.
    fn signalled(&mut self, cx: &mut ProgCx) -> Option<Action> {
        let FrameKind::Periodic { t, .. } = &mut self.frames.last_mut()?.kind else {
            return None;
        };
        let Some(SigInfo { expiry, .. }) = t.info.take() else {
            // Woken without the signal: wait again.
            return Some(self.wait_signal());
        };
        // Expiries between the one expected and this one found the signal queued: overruns.
        let expected = t.due.unwrap_or(expiry);
        let missed = ((expiry.saturating_sub(expected)) / t.period) as u32;
        t.due = Some(expiry + t.period);
        match t.kind {
            TimerKind::Thread => {
                // glibc's helper: its user work, then clone() of the thread.
                self.pend = Some(Pend::Clone { due: expiry, missed });
                Some(Action::Compute(cx.m.cost(HELPER_INSTR, HELPER_MISSES)))
            }
            _ => {
                // The handler runs the steps now.
                t.waiting = false;
                self.sample(cx, expiry, missed);
                None
            }
        }
    }

    fn wait_signal(&mut self) -> Action {
        let Some(FrameKind::Periodic { t, .. }) = self.frames.last().map(|f| &f.kind) else {
            unreachable!("only a periodic step waits for its signal")
        };
        let info = t.info.clone();
        let thread = t.kind == TimerKind::Thread;
        self.pend = Some(Pend::Signalled);
        Action::Call(if thread {
            Syscall::Sigwaitinfo { info }
        } else {
            Syscall::Pause { info }
        })
    }

    /// The periodic step on top waits for its next expiry: the action, or None when the
    /// expiry has passed (the sample is taken at once: clock_nanosleep returns at once).
    fn wait_expiry(&mut self, cx: &mut ProgCx) -> Option<Action> {
        let stream = self.me.stream;
        let FrameKind::Periodic { t, .. } = &mut self.frames.last_mut()?.kind else {
            return None;
        };
        match (t.kind, t.due) {
            (TimerKind::Nanosleep, None) => {
                // cyclictest: the first deadline a period after the clock read.
                t.due = Some(cx.now + t.period);
                Some(Action::Sleep(t.period))
            }
            (TimerKind::Nanosleep, Some(due)) if due > cx.now && t.waiting => Some(Action::Sleep(due - cx.now)),
            (TimerKind::Nanosleep, Some(due)) => {
                // Back from the sleep (or the deadline had passed): the sample, and the next
                // deadline after now; those passed meanwhile are missed.
                let mut next = due + t.period;
                let mut missed = 0u32;
                while next <= cx.now {
                    next += t.period;
                    missed += 1;
                }
                t.due = Some(next);
                t.waiting = false;
                if let Some(stream) = stream {
                    cx.marks.push(Mark::PeriodicSample { stream, missed, due });
                }
                None
            }
            (_, None) => {
                // timer_create + timer_settime: the first expiry a period from now.
                t.due = Some(cx.now + t.period);
                Some(Action::TimerCreate { period: t.period })
            }
            (_, Some(_)) => Some(self.wait_signal()),
        }
    }

    /// The next action of the step at `pc` of the top frame (None: the step needed none).
    fn step(&mut self, cx: &mut ProgCx, s: StepDef) -> Option<Action> {
        let draw = |cx: &mut ProgCx, d: &Dur| {
            let (_, lo, hi) = d.bounds().expect("checked at load");
            if lo == hi {
                lo
            } else {
                cx.rng.gen_range(lo..=hi)
            }
        };
        Some(match s {
            StepDef::Compute(d) => Action::Compute(draw(cx, &d)),
            StepDef::Sleep(d) => Action::Sleep(draw(cx, &d)),
            StepDef::Periodic(p) => {
                if let Some(stream) = self.me.stream {
                    cx.marks.push(Mark::PeriodicTask { stream });
                }
                let period = (p.period_us * 1e3) as Nanos;
                self.frames.push(Frame {
                    steps: p.steps,
                    pc: 0,
                    kind: FrameKind::Periodic {
                        t: Periodic {
                            kind: p.timer,
                            period,
                            due: None,
                            waiting: true,
                            info: Rc::default(),
                        },
                        left: p.loops.map(|n| n - 1),
                    },
                });
                return None;
            }
            StepDef::Spawn { comm, steps } => {
                let child = Runner::new(self.me.clone(), steps);
                self.pend = Some(Pend::Spawn(self.spec(&comm, child)));
                Action::Call(Syscall::ForkExec)
            }
            StepDef::Wait => Action::WaitChildren,
            StepDef::Fsync => Action::Call(Syscall::Fsync),
            StepDef::Write { file, kb } => {
                let bytes = kb * 1024;
                let known = self.me.shared.borrow().files.get(&file).map(|&(f, _)| f);
                match known {
                    Some(f) => {
                        self.grow(&file, f, bytes);
                        Action::Call(Syscall::Write { file: f, bytes })
                    }
                    None => {
                        // creat() hands the file back as its path is built, before any
                        // other task runs: another writer of the name then finds it.
                        let cell = Rc::new(Cell::new(0));
                        let (c, shared, name) = (cell.clone(), self.me.shared.clone(), file.clone());
                        self.pend = Some(Pend::Write {
                            file: cell,
                            name: file,
                            bytes,
                        });
                        Action::Call(Syscall::Creat {
                            pages: 0,
                            ret: Box::new(move |f| {
                                c.set(f);
                                shared.borrow_mut().files.insert(name, (f, 0));
                            }),
                        })
                    }
                }
            }
            StepDef::Read { file, kb, file_mb } => {
                let known = self.me.shared.borrow().files.get(&file).copied();
                let (f, pages) = match (known, file_mb) {
                    (Some(fp), _) => fp,
                    (None, Some(mb)) => {
                        let pages = (mb << 20) / 4096;
                        let f = cx.file_on_disk(pages);
                        self.me.shared.borrow_mut().files.insert(file.clone(), (f, pages));
                        (f, pages)
                    }
                    // Not written yet: read() returns 0 (end of file) at once.
                    (None, None) => return Some(Action::Compute(cx.m.syscall_ns)),
                };
                let at = self.offsets.entry(file).or_default();
                if *at >= pages {
                    *at = 0;
                }
                let page = *at;
                *at += (kb * 1024).div_ceil(4096);
                Action::Call(Syscall::Read {
                    file: f,
                    page,
                    bytes: kb * 1024,
                })
            }
            StepDef::PipeWrite { to, bytes } => Action::Call(Syscall::PipeSend {
                pipe: self.me.pipe(&self.me.comm, &to),
                bytes,
            }),
            StepDef::PipeRead { from, bytes } => Action::Call(Syscall::PipeRecv {
                pipe: self.me.pipe(&from, &self.me.comm),
                bytes,
            }),
            StepDef::FutexWait { word } => {
                let f = self.me.futex(&word);
                self.sem_wait(cx, f)
            }
            StepDef::FutexWake { word } => {
                let f = self.me.futex(&word);
                if f.post() {
                    Action::Call(Syscall::FutexWake { futex: f, n: 1 })
                } else {
                    Action::Compute(cx.m.cost(SEM_OP_INSTR, SEM_OP_MISSES))
                }
            }
            StepDef::Loop { times, steps } => {
                self.frames.push(Frame {
                    steps,
                    pc: 0,
                    kind: FrameKind::Loop {
                        left: times.map(|n| n - 1),
                    },
                });
                return None;
            }
        })
    }
}

impl Program for Runner {
    fn next(&mut self, cx: &mut ProgCx) -> Action {
        if self.start > 0 {
            return Action::Sleep(std::mem::take(&mut self.start));
        }
        if let Some(p) = self.pend.take() {
            if let Some(a) = self.pending(cx, p) {
                return a;
            }
        }
        loop {
            let Some(top) = self.frames.last_mut() else {
                return Action::Exit;
            };
            if let FrameKind::Periodic { t, .. } = &top.kind {
                if t.waiting {
                    if let Some(a) = self.wait_expiry(cx) {
                        return a;
                    }
                    continue;
                }
            }
            let top = self.frames.last_mut().expect("a frame");
            if top.pc == top.steps.len() {
                // The frame's end: again, or back to the one below.
                match &mut top.kind {
                    FrameKind::Once | FrameKind::Loop { left: Some(0) } | FrameKind::Periodic { left: Some(0), .. } => {
                        self.frames.pop();
                    }
                    FrameKind::Loop { left } => {
                        if let Some(n) = left {
                            *n -= 1;
                        }
                        top.pc = 0;
                    }
                    FrameKind::Periodic { t, left } => {
                        if let Some(n) = left {
                            *n -= 1;
                        }
                        t.waiting = true;
                        top.pc = 0;
                    }
                }
                continue;
            }
            let s = top.steps[top.pc].clone();
            top.pc += 1;
            if let Some(a) = self.step(cx, s) {
                return a;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::variant::{SchedClass, TimerSubsystem};
    use crate::{PreemptModel, SimConfig};
    use latlab_core::RunResult;

    fn us(v: f64) -> Dur {
        Dur {
            us: Some(Amount::One(v)),
            ..Dur::default()
        }
    }

    fn task(comm: &str, steps: Vec<StepDef>) -> TaskDef {
        TaskDef::new(comm, steps)
    }

    fn forever(steps: Vec<StepDef>) -> StepDef {
        StepDef::Loop { times: None, steps }
    }

    /// cyclictest's thread: a 1 ms clock_nanosleep period, 20 us of work after each.
    fn cyclic(policy: PolicyName, priority: Option<u32>, timer: TimerKind) -> TaskDef {
        TaskDef {
            policy,
            priority,
            ..task(
                "cyclic",
                vec![StepDef::Periodic(PeriodicDef {
                    period_us: 1000.0,
                    timer,
                    loops: None,
                    steps: vec![StepDef::Compute(us(20.0))],
                })],
            )
        }
    }

    /// CPU hogs: `n` copies computing 50 ms at a time.
    fn hogs(n: u32) -> TaskDef {
        TaskDef {
            count: n,
            ..task("hog", vec![forever(vec![StepDef::Compute(us(50_000.0))])])
        }
    }

    /// A run of `tasks` on the test machine under 6.x's EEVDF with hrtimers, HZ 250, no kernel
    /// preemption, `ms` simulated ms, seed `seed`.
    fn config(tasks: Vec<TaskDef>, ms: u64, seed: u64) -> SimConfig {
        let mut variant = crate::cpu::tests::variant_with(SchedClass::Eevdf, PreemptModel::None, &[]);
        variant.timer = TimerSubsystem::Hrtimer;
        variant.hz = 250;
        // 6.18's defaults (variants/6.18-eevdf-none.toml).
        variant.eevdf = Some(crate::variant::EevdfTunables {
            base_slice_ns: 700_000,
            run_to_parity: true,
            place_lag: true,
        });
        SimConfig {
            machine: crate::cpu::tests::machine(),
            variant,
            workload: crate::Workload {
                name: "tasks".into(),
                commands: vec![],
                gap_ms: 0,
                preload: crate::Preload {
                    old_file_kb: 64,
                    ..Default::default()
                },
                tasks,
            },
            rtc_hz: 2048,
            rt_priority: 99,
            seed,
            min_duration_ns: ms * 1_000_000,
            max_duration_ns: ms * 1_000_000,
            posix_timer: None,
            realfeel: false,
            preempt_off: None,
            maxcpus: None,
            keep_records: false,
            record_events: None,
            replay_noise: false,
        }
    }

    fn run(cfg: &SimConfig) -> RunResult {
        crate::simulate(cfg, &mut |_, _| {}).unwrap().0
    }

    #[test]
    fn a_fifo_periodic_thread_beside_hogs_has_a_lower_worst_case_than_a_sched_other_one() {
        let worst = |t: TaskDef| {
            let r = run(&config(vec![t, hogs(4)], 2_000, 1));
            let s = r.stream("cyclic").expect("the periodic task's stream").clone();
            assert!(s.hist.count() > 1_500, "about one sample a period: {}", s.hist.count());
            // The worst sample's parts: the expiry to the wakeup, then what ran before it;
            // together no more than the latency.
            let w = &s.worst[0];
            let a = &w.attribution;
            assert!(
                a.irq_off_ns + a.ran_ahead_ns + a.sched_ns + a.wakee_kernel_ns <= w.latency_ns,
                "{w:?}"
            );
            (s.hist.max(), a.clone())
        };
        let (fifo, _) = worst(cyclic(PolicyName::Fifo, Some(90), TimerKind::Nanosleep));
        let (other, why) = worst(cyclic(PolicyName::Other, None, TimerKind::Nanosleep));
        assert!(fifo < other, "SCHED_FIFO 90 worst {fifo} ns, SCHED_OTHER {other} ns");
        // The SCHED_OTHER thread waited behind the hogs, named.
        assert!(
            why.tasks.iter().any(|t| t.comm == "hog") && why.ran_ahead_ns > other / 2,
            "{why:?}"
        );
    }

    #[test]
    fn posix_timer_steps_give_samples_by_signal_and_by_thread() {
        for timer in [TimerKind::Signal, TimerKind::Thread] {
            let r = run(&config(vec![cyclic(PolicyName::Fifo, Some(50), timer)], 200, 1));
            let s = r.stream("cyclic").expect("the stream");
            assert!((190..=200).contains(&s.hist.count()), "{timer:?}: {}", s.hist.count());
            assert!(s.hist.min() > 0, "{timer:?}: the wakeup takes time");
        }
    }

    #[test]
    fn futex_and_pipe_ping_pong_make_progress_through_context_switches() {
        let futex = vec![
            task(
                "ping",
                vec![forever(vec![
                    StepDef::FutexWake { word: "a".into() },
                    StepDef::FutexWait { word: "b".into() },
                ])],
            ),
            task(
                "pong",
                vec![forever(vec![
                    StepDef::FutexWait { word: "a".into() },
                    StepDef::FutexWake { word: "b".into() },
                ])],
            ),
        ];
        let pipe = vec![
            task(
                "ping",
                vec![forever(vec![
                    StepDef::PipeWrite {
                        to: "pong".into(),
                        bytes: 64,
                    },
                    StepDef::PipeRead {
                        from: "pong".into(),
                        bytes: 64,
                    },
                ])],
            ),
            task(
                "pong",
                vec![forever(vec![
                    StepDef::PipeRead {
                        from: "ping".into(),
                        bytes: 64,
                    },
                    StepDef::PipeWrite {
                        to: "ping".into(),
                        bytes: 64,
                    },
                ])],
            ),
        ];
        for (what, tasks) in [("futex", futex), ("pipe", pipe)] {
            let r = run(&config(tasks, 100, 1));
            let switches = r.counters["context_switches"];
            let calls = r.counters["syscalls"];
            // Each round trip: both tasks sleep once, two switches; 100 ms holds thousands.
            assert!(switches > 2_000, "{what}: {switches} context switches");
            assert!(calls >= switches, "{what}: {calls} system calls, {switches} switches");
        }
    }

    #[test]
    fn same_seed_same_bytes_and_a_range_draws_from_the_seed() {
        let ranged = |seed| {
            let mut t = cyclic(PolicyName::Other, None, TimerKind::Nanosleep);
            let StepDef::Periodic(p) = &mut t.steps[0] else {
                unreachable!()
            };
            p.steps = vec![StepDef::Compute(Dur {
                us: Some(Amount::Range([10.0, 900.0])),
                ..Dur::default()
            })];
            serde_json::to_string(&run(&config(vec![t, hogs(2)], 300, seed))).unwrap()
        };
        assert_eq!(ranged(7), ranged(7), "same seed, same result");
        assert_ne!(ranged(7), ranged(8), "the range is drawn from the seed's stream");
    }

    #[test]
    fn spawn_and_wait_run_a_child_and_files_are_written_read_and_synced() {
        let t = task(
            "parent",
            vec![
                StepDef::Spawn {
                    comm: "child".into(),
                    steps: vec![StepDef::Write {
                        file: "log".into(),
                        kb: 64,
                    }],
                },
                StepDef::Wait,
                StepDef::Read {
                    file: "log".into(),
                    kb: 64,
                    file_mb: None,
                },
                StepDef::Fsync,
            ],
        );
        let r = run(&config(vec![t], 2_000, 1));
        assert_eq!(r.counters["tasks_created"], 3, "sh, the parent and its child");
        assert!(r.counters["buffers_written"] >= 16, "{:?}", r.counters);
    }

    fn check_err(tasks: &[TaskDef]) -> TaskError {
        check(tasks).expect_err("refused")
    }

    #[test]
    fn bad_tasks_are_refused_naming_the_field() {
        let ok = cyclic(PolicyName::Fifo, Some(90), TimerKind::Nanosleep);
        check(std::slice::from_ref(&ok)).unwrap();
        for p in [0, 100] {
            let e = check_err(&[TaskDef {
                priority: Some(p),
                ..ok.clone()
            }]);
            assert_eq!((e.field.as_str(), e.key), ("task.priority", "priority"), "{e:?}");
        }
        let e = check_err(&[TaskDef {
            priority: None,
            ..ok.clone()
        }]);
        assert!(
            e.field == "task.priority" && e.why.contains("need a `priority`"),
            "{e:?}"
        );
        let e = check_err(&[TaskDef { nice: 20, ..ok.clone() }]);
        assert_eq!(e.field, "task.nice");
        let e = check_err(&[TaskDef {
            policy: PolicyName::Batch,
            ..ok.clone()
        }]);
        assert!(e.field == "task.policy" && e.why.contains("SCHED_BATCH"), "{e:?}");
        for v in [-1.0, f64::NAN, 0.0] {
            let e = check_err(&[task("t", vec![StepDef::Sleep(us(v))])]);
            assert_eq!((e.field.as_str(), e.key), ("task.steps.sleep.us", "us"), "{v}: {e:?}");
        }
        let e = check_err(&[task(
            "t",
            vec![StepDef::PipeWrite {
                to: "nobody".into(),
                bytes: 1,
            }],
        )]);
        assert!(
            e.field == "task.steps.pipe-write.to" && e.why.contains("`nobody`"),
            "{e:?}"
        );
        let e = check_machine(
            &[TaskDef {
                affinity: Some(vec![1]),
                ..ok.clone()
            }],
            1,
            true,
            true,
        )
        .unwrap_err();
        assert!(e.field == "task.affinity" && e.why.contains("CPU 1"), "{e:?}");
        let pinned = [TaskDef {
            affinity: Some(vec![0]),
            ..ok
        }];
        let e = check_machine(&pinned, 2, false, true).unwrap_err();
        assert!(e.why.contains("share one runqueue"), "{e:?}");
        // Per-CPU runqueues take a narrower set.
        check_machine(&pinned, 2, true, true).unwrap();
    }

    /// The test machine with a `[host.noise]` of `gaps_per_s` gaps a second on each CPU,
    /// `lo_us` (the threshold) to `hi_us` long, half of them `mid_us` or less.
    fn noisy(gaps_per_s: f64, lo_us: f64, mid_us: f64, hi_us: f64) -> crate::MachineProfile {
        let noise = crate::machine::Noise {
            source: "test".into(),
            duration_s: 5.0,
            cpus: 1,
            threshold_us: lo_us,
            gaps: 100,
            gaps_per_s,
            max_us: hi_us,
            lost_percent: 0.1,
            steal_percent: None,
            per_cpu_gaps_per_s: vec![gaps_per_s],
            lengths: Some(crate::machine::GapLengths {
                p50_us: mid_us,
                p90_us: mid_us,
                p99_us: hi_us,
                p999_us: hi_us,
            }),
        };
        crate::MachineProfile {
            host: Some(crate::machine::HostFacts {
                noise: Some(noise),
                ..Default::default()
            }),
            ..crate::cpu::tests::machine()
        }
    }

    fn json(r: &RunResult) -> String {
        serde_json::to_string(r).unwrap()
    }

    #[test]
    fn a_run_replaying_the_host_noise_is_the_same_for_a_seed_and_says_so() {
        let tasks = vec![cyclic(PolicyName::Fifo, Some(90), TimerKind::Nanosleep), hogs(1)];
        let mut cfg = config(tasks, 500, 7);
        cfg.machine = noisy(2_000.0, 1.0, 5.0, 200.0);
        let off = run(&cfg);
        cfg.replay_noise = true;
        let on = run(&cfg);
        assert_eq!(json(&on), json(&run(&cfg)), "same seed, same gaps");
        assert!(
            on.meta.settings["host_noise"].starts_with("replayed (test)"),
            "{:?}",
            on.meta
        );
        // 2,000 a second for half a second.
        let gaps = on.counters["host_gaps"];
        assert!((800..1200).contains(&gaps), "{gaps}");
        assert!(on.counters["host_gap_us"] > 0);
        cfg.seed = 8;
        assert_ne!(run(&cfg).counters["host_gaps"], gaps, "another seed, other gaps");
        // Off, the noise is not read: the run is the machine's without it.
        assert!(!off.meta.settings.contains_key("host_noise") && !off.counters.contains_key("host_gaps"));
        cfg.replay_noise = false;
        cfg.seed = 7;
        cfg.machine.host = None;
        assert_eq!(json(&off), json(&run(&cfg)));
    }

    #[test]
    fn a_long_host_gap_is_in_a_timer_threads_latency_and_named_in_its_attribution() {
        let mut cfg = config(vec![cyclic(PolicyName::Fifo, Some(90), TimerKind::Nanosleep)], 1_000, 3);
        let quiet = run(&cfg);
        let worst = |r: &RunResult| r.streams.iter().find(|s| s.name == "cyclic").unwrap().worst[0].clone();
        let w = worst(&quiet);
        assert!(w.latency_ns < 500_000, "{w:?}");
        assert_eq!(w.attribution.steal_ns, 0);
        assert!(!w.attribution.note.contains("host gap"), "{}", w.attribution.note);
        // Twenty gaps a second of exactly 3 ms: each holds the expiries due in it.
        cfg.machine = noisy(20.0, 3_000.0, 3_000.0, 3_000.0);
        cfg.replay_noise = true;
        let w = worst(&run(&cfg));
        assert!(w.latency_ns > 2_000_000, "{w:?}");
        assert!(w.attribution.steal_ns > 2_000_000, "{w:?}");
        assert!(
            w.attribution.note.contains("waited for: a host gap"),
            "{}",
            w.attribution.note
        );
        assert!(w.attribution.note.contains("host gap (the machine's noise, replayed)"));
    }

    #[test]
    fn the_posix_timer_tests_worst_sample_names_the_host_gap_too() {
        let mut cfg = config(vec![], 1_000, 3);
        cfg.posix_timer = Some(crate::PosixTest {
            notify: crate::Notify::Signal,
            period_ns: 1_000_000,
        });
        cfg.machine = noisy(20.0, 3_000.0, 3_000.0, 3_000.0);
        cfg.replay_noise = true;
        let r = run(&cfg);
        let s = r.streams.iter().find(|s| s.name == "posix_timer_signal").unwrap();
        let w = &s.worst[0];
        assert!(w.latency_ns > 2_000_000 && w.attribution.steal_ns > 2_000_000, "{w:?}");
        assert!(
            w.attribution.note.contains("host gap (the machine's noise, replayed)"),
            "{w:?}"
        );
    }

    #[test]
    fn replaying_a_machine_without_the_gaps_lengths_is_refused_naming_the_field() {
        let mut cfg = config(vec![hogs(1)], 10, 1);
        cfg.replay_noise = true;
        let e = crate::simulate(&cfg, &mut |_, _| {}).unwrap_err().to_string();
        assert!(e.contains("`host.noise`") && e.contains("absent"), "{e}");
        cfg.machine = noisy(20.0, 1.0, 2.0, 3.0);
        if let Some(n) = cfg.machine.host.as_mut().and_then(|h| h.noise.as_mut()) {
            n.lengths = None;
        }
        let e = crate::simulate(&cfg, &mut |_, _| {}).unwrap_err().to_string();
        assert!(
            e.contains("`host.noise.lengths`") && e.contains("re-run `latlab probe calibrate`"),
            "{e}"
        );
    }
}
