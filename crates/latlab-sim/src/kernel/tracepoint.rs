//! The kernel's tracepoints: typed events the CPU loop emits where Linux has its trace events
//! (include/trace/events/sched.h, irq.h, lock.h, preemptirq.h), and the [`Sink`]s that
//! subscribe to them. Every measurement of a run is a sink (`crate::measure`: realfeel, the
//! POSIX-timer test, timed write(2)s, the preempt-off tracer, the event recorder behind a
//! model run's ftrace text); the CPU loop names none of them.
//!
//! As with the kernel's static keys, an event whose kind no sink takes now costs one test of
//! a mask: the loop builds the event only when [`Tracepoints::on`] says a sink wants it. A
//! sink says when the kinds it takes may have changed (an event that opens or closes one of
//! its windows), so a measurement takes the hot events (CPU time, function entries) only
//! while it has a window open.

use super::lock::Lock;
use super::preempt::CauseSnap;
use super::sched_class::Scheduler;
use super::task::{Task, TaskId};
use super::{Irq, SwitchReason};
use crate::kernel::path::PathTable;
use latlab_core::{Nanos, RunResult};

/// Something a user program tells the measurement layer, at the moment it runs (the
/// timed-call marks a benchmark's own clock reads stand for; `trace_marker` writes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mark {
    /// The calling task is the realfeel reader.
    RealfeelReader,
    /// The reader is back in user space with the interrupt raised at `irq_at`; `coalesced`
    /// more interrupts were folded into the same read.
    RealfeelSample { irq_at: Nanos, coalesced: u64 },
    /// The calling task belongs to the POSIX-timer test (target, helper or notify thread).
    PosixTask,
    /// The notify function for the timer expiry due at `due` runs now.
    PosixSample { due: Nanos },
    /// The calling task waits in a periodic step of measured stream `stream` (its wakeups
    /// open a measurement window).
    PeriodicTask { stream: u32 },
    /// A workload task's periodic step is back in user space for its expiry due at `due`
    /// (cyclictest's sample), of measured stream `stream`; `missed` expiries passed since
    /// the last sample without one (overruns).
    PeriodicSample { stream: u32, missed: u32, due: Nanos },
    /// A timed call of a benchmark's pass (iozone `-Q`'s write(2), sysbench's requests) is
    /// about to be made.
    IoStart { pass: Pass },
    /// That call returned, having moved `bytes` at `offset_kb`.
    IoDone { offset_kb: u64, bytes: u64, op: IoOp },
}

/// A benchmark's timed pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pass {
    /// iozone's write pass (wol.dat).
    Write,
    /// iozone's rewrite pass (rwol.dat).
    Rewrite,
    /// sysbench fileio's `run` in `rndrw` mode.
    Rndrw,
}

/// What a timed call was: sysbench's request types (iozone's are all writes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoOp {
    Read,
    Write,
    /// Timed into its pass's span, not into its stream (sysbench's "Other" operations).
    Fsync,
}

/// One tracepoint hit. Task ids are the kernel's, every CPU's idle task being 0.
#[derive(Clone, Copy, Debug)]
pub enum Event {
    /// `sched_waking`: try_to_wake_up of `task` begins.
    SchedWaking {
        task: TaskId,
    },
    /// `sched_wakeup` (`sched_wakeup_new` for a new task): `task` is on the runqueue; the
    /// scheduler has not yet been asked whether it preempts (`check_preempt_curr`), so
    /// [`Scheduler::placement`] still says where the wakeup put it.
    SchedWakeup {
        task: TaskId,
        new: bool,
    },
    /// `sched_process_fork`.
    Fork {
        parent: TaskId,
        child: TaskId,
    },
    /// A task goes to sleep waiting for `wait` (a `Chan::wait_name`); its `sched_switch`
    /// follows.
    Sleep {
        task: TaskId,
        wait: &'static str,
    },
    /// `sched_switch`, at every schedule(): `prev == next` when schedule() kept the task (the
    /// kernel's tracepoint fires only when they differ).
    SchedSwitch {
        prev: TaskId,
        next: TaskId,
        reason: SwitchReason,
    },
    /// schedule() and the context switch ran `ns` (interrupts off).
    SchedTime {
        ns: Nanos,
    },
    /// `sched_stat_runtime`: `task` ran `ns` in kernel function `func` (`user` in user space,
    /// `cpu_idle` idle) holding `lock`.
    Runtime {
        task: TaskId,
        ns: Nanos,
        func: &'static str,
        lock: Option<Lock>,
    },
    /// `irq_handler_entry`: `irq`, raised at `raised`, is taken now and runs `len` ns;
    /// the task it interrupted got the CPU or entered the kernel at `ran_since`
    /// ([`Cx::interrupted`] says what it was doing).
    IrqEntry {
        irq: Irq,
        raised: Nanos,
        len: Nanos,
        ran_since: Nanos,
    },
    /// `irq_handler_exit`.
    IrqExit {
        irq: Irq,
    },
    /// `softirq_entry` / `softirq_exit` of the timer softirq (run_timer_softirq).
    SoftirqEntry,
    SoftirqExit,
    /// A POSIX timer expired while its previous signal was still queued (an overrun).
    TimerOverrun,
    /// A kernel step of `task` begins: function `func` in code path `path`, holding `lock`;
    /// `preempt_off` when preemption is off for it (a lock, interrupts off, a held lock).
    FuncEntry {
        task: TaskId,
        func: &'static str,
        path: &'static str,
        lock: Option<Lock>,
        preempt_off: bool,
    },
    /// A loop of `func` reached rescheduling point `point` with need_resched set.
    ReschedPoint {
        task: TaskId,
        point: &'static str,
        func: &'static str,
        locked: bool,
    },
    /// `preempt_enable` (`lock_release`): the step of `func` in code path `path` that ended
    /// released its lock or turned interrupts back on, with the swap area `swap_fill_pct`
    /// percent full.
    PreemptOn {
        task: TaskId,
        func: &'static str,
        path: &'static str,
        lock: Option<Lock>,
        swap_fill_pct: u64,
    },
    /// `task` blocks on sleeping lock `lock`, owned by `owner` (PREEMPT_RT's rt_mutex; the
    /// kernel's `contention_begin` in include/trace/events/lock.h); its `Sleep` came first.
    PiBlock {
        task: TaskId,
        lock: Lock,
        owner: TaskId,
    },
    /// A user program's mark (`tracing_mark_write`).
    Mark {
        task: TaskId,
        mark: Mark,
    },
    /// A replayed gap of the machine's host noise (hypervisor steal, an SMI: not the
    /// kernel's): CPU `cpu` stands still from `start` for `ns` (no task progress, no
    /// interrupt taken on it). Emitted when the gap arrives, `start` being later than now
    /// when the CPU is still in an earlier gap.
    HostGap {
        cpu: usize,
        start: Nanos,
        ns: Nanos,
    },
}

/// Event kinds as mask bits ([`Sink::kinds`]).
pub mod kind {
    pub const SCHED_WAKING: u32 = 1 << 0;
    pub const SCHED_WAKEUP: u32 = 1 << 1;
    pub const FORK: u32 = 1 << 2;
    pub const SLEEP: u32 = 1 << 3;
    pub const SCHED_SWITCH: u32 = 1 << 4;
    pub const SCHED_TIME: u32 = 1 << 5;
    pub const RUNTIME: u32 = 1 << 6;
    pub const IRQ_ENTRY: u32 = 1 << 7;
    pub const IRQ_EXIT: u32 = 1 << 8;
    pub const SOFTIRQ: u32 = 1 << 9;
    pub const TIMER_OVERRUN: u32 = 1 << 10;
    pub const FUNC_ENTRY: u32 = 1 << 11;
    pub const RESCHED_POINT: u32 = 1 << 12;
    pub const PREEMPT_ON: u32 = 1 << 13;
    pub const MARK: u32 = 1 << 14;
    pub const PI_BLOCK: u32 = 1 << 15;
    pub const HOST_GAP: u32 = 1 << 16;
    pub const ALL: u32 = (1 << 17) - 1;
}

impl Event {
    /// Its [`kind`] bit.
    pub fn kind(&self) -> u32 {
        match self {
            Event::SchedWaking { .. } => kind::SCHED_WAKING,
            Event::SchedWakeup { .. } => kind::SCHED_WAKEUP,
            Event::Fork { .. } => kind::FORK,
            Event::Sleep { .. } => kind::SLEEP,
            Event::SchedSwitch { .. } => kind::SCHED_SWITCH,
            Event::SchedTime { .. } => kind::SCHED_TIME,
            Event::Runtime { .. } => kind::RUNTIME,
            Event::IrqEntry { .. } => kind::IRQ_ENTRY,
            Event::IrqExit { .. } => kind::IRQ_EXIT,
            Event::SoftirqEntry | Event::SoftirqExit => kind::SOFTIRQ,
            Event::TimerOverrun => kind::TIMER_OVERRUN,
            Event::FuncEntry { .. } => kind::FUNC_ENTRY,
            Event::ReschedPoint { .. } => kind::RESCHED_POINT,
            Event::PreemptOn { .. } => kind::PREEMPT_ON,
            Event::Mark { .. } => kind::MARK,
            Event::PiBlock { .. } => kind::PI_BLOCK,
            Event::HostGap { .. } => kind::HOST_GAP,
        }
    }
}

/// Interrupt context of the code emitting an event.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IrqCtx {
    #[default]
    Task,
    Hardirq,
    Softirq,
}

/// Where and when an event happened, and read-only views of the kernel a sink may look at.
pub struct Cx<'a> {
    pub now: Nanos,
    pub cpu: usize,
    /// The task current on `cpu` (its idle task: the CPU's number).
    pub cur: TaskId,
    /// `cur` runs schedule() / the context switch (interrupts off; not while its CPU
    /// stands still in a host gap).
    pub in_schedule: bool,
    pub irq: IrqCtx,
    pub tasks: &'a [Task],
    /// The path each task runs in the kernel.
    pub paths: &'a dyn PathTable,
    pub sched: &'a dyn Scheduler,
}

impl Cx<'_> {
    /// The stretch the current task is in, running since `ran_since` (None: the idle loop).
    pub fn interrupted(&self, ran_since: Nanos) -> Option<CauseSnap> {
        let t = &self.tasks[self.cur];
        super::preempt::cause_of(t, self.cur, t.pid == 0, ran_since, self.paths.info(self.cur))
    }
}

/// A subscriber to the tracepoints.
pub trait Sink {
    /// Every [`kind`] of event it may ever take (a mask holding every value of
    /// [`Sink::kinds`]), known from its type: a fan-out of sinks
    /// (`crate::measure::Sinks`) does not look at it for the other kinds.
    #[inline(always)]
    fn interest() -> u32
    where
        Self: Sized,
    {
        kind::ALL
    }
    /// The [`kind`]s of event it takes now (a mask), asked when it is attached.
    fn kinds(&self) -> u32;
    /// One event of a kind it takes; true when the kinds it takes may have changed (the
    /// caller then asks [`Sink::kinds`] again). An emitting site that inlines the sink knows
    /// the event's kind, so the answer is a constant there for every kind but the few that
    /// open or close a measurement.
    fn event(&mut self, cx: &Cx, ev: &Event) -> bool;
    /// The run is over: put what was measured into the result.
    fn finish(self: Box<Self>, tasks: &[Task], r: &mut RunResult);
}

/// `S`, the run's sink (one: a run's measurements fan out behind it statically,
/// `crate::measure::Sinks`), and the kinds it takes now. A concrete `S` lets an emitting site
/// inline the sink, so the event's kind is known where the sink matches on it.
pub struct Tracepoints<S> {
    mask: u32,
    sink: Option<S>,
}

impl<S> Default for Tracepoints<S> {
    fn default() -> Self {
        Tracepoints { mask: 0, sink: None }
    }
}

impl<S: Sink> Tracepoints<S> {
    /// Subscribe `s` to the tracepoints (in place of any sink before it).
    pub fn attach(&mut self, s: S) {
        self.mask = s.kinds();
        self.sink = Some(s);
    }

    /// Does the sink take events of kind `k`?
    #[inline(always)]
    pub fn on(&self, k: u32) -> bool {
        self.mask & k != 0
    }

    /// Give `ev` to the sink (called only when [`Tracepoints::on`] said it takes its kind).
    #[inline(always)]
    pub fn emit(&mut self, cx: &Cx, ev: &Event) {
        if let Some(s) = &mut self.sink {
            if s.event(cx, ev) {
                self.mask = s.kinds();
            }
        }
    }

    /// Finish the sink into `r`.
    pub fn finish(&mut self, tasks: &[Task], r: &mut RunResult) {
        self.mask = 0;
        if let Some(s) = self.sink.take() {
            Box::new(s).finish(tasks, r);
        }
    }
}

/// A sink chosen at run time (the kernel's default: its unit tests' sinks).
impl Sink for Box<dyn Sink> {
    fn kinds(&self) -> u32 {
        (**self).kinds()
    }

    fn event(&mut self, cx: &Cx, ev: &Event) -> bool {
        (**self).event(cx, ev)
    }

    fn finish(self: Box<Self>, tasks: &[Task], r: &mut RunResult) {
        (*self).finish(tasks, r)
    }
}
