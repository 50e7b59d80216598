//! realfeel2 (amlat.tar.gz, seed 000): the RTC raises IRQ 8 at a set rate (2048 Hz in the
//! seed); a SCHED_FIFO reader blocked in `read(/dev/rtc)` is woken by `rtc_interrupt`, and
//! the time from the interrupt to the reader running in user space is one sample.
//!
//! The [`Tracker`] follows every such window through the CPU loop's hooks and splits the
//! sample into its mechanisms: IRQ-off delay, handler time, waiting for a preemption
//! opportunity (in which code path, holding which lock, since when), tasks that ran ahead,
//! scheduler time, the reader's own return to user space. The worst window keeps its steps
//! as a `/proc/latency_trace`-style trace. Per-window bookkeeping reuses its buffers: a
//! sample costs no allocation unless it is among the worst.

use super::Mark;
use crate::kernel::lock::Lock;
use crate::kernel::preempt::CauseSnap;
use crate::kernel::task::{Task, TaskId};
use crate::kernel::tracepoint::{kind, Cx, Event, Sink};
use crate::kernel::{Irq, SwitchReason};
use crate::variant::Variant;
use latlab_core::{Attribution, Cause, LatencyTrace, Nanos, RunResult, Sample, Stream, TaskSlice, TraceEntry};
use std::collections::BTreeMap;

/// Entries kept per window for the trace of the worst sample.
const MAX_TRACE_ENTRIES: usize = 256;
/// Worst samples kept with their attribution.
const KEEP_WORST: usize = 10;
/// Samples at least this long are tallied by the code path that delayed them.
pub const CAUSE_THRESHOLD_NS: Nanos = 1_000_000;
/// preempt_count bits as the latency tracer prints them (kernel-facts.md).
const HARDIRQ: u32 = 0x10000;
/// Interrupt names, indexed as [`irq_index`].
const IRQ_NAMES: [&str; 4] = ["timer", "rtc", "ide0", "hrtimer"];

fn irq_index(irq: Irq) -> usize {
    match irq {
        Irq::Tick => 0,
        Irq::Rtc => 1,
        Irq::Disk(_) => 2,
        Irq::Hrtimer(_) => 3,
    }
}

/// What a trace entry's parent column names.
#[derive(Clone, Copy)]
enum Parent {
    Func(&'static str),
    Task(TaskId),
}

#[derive(Clone, Copy)]
struct RawEntry {
    pc: u32,
    t: Nanos,
    func: &'static str,
    parent: Parent,
}

type FuncLock = (&'static str, Option<Lock>);

#[derive(Default)]
struct Window {
    open: bool,
    irq_at: Nanos,
    irq_off: Nanos,
    handler: Nanos,
    preempt_wait: Nanos,
    ran_ahead: Nanos,
    sched: Nanos,
    wakee: Nanos,
    cause: Option<CauseSnap>,
    /// The first switch away from the interrupted context: when, and why.
    left_at: Option<(Nanos, SwitchReason)>,
    /// CPU time of every task other than the reader inside the window.
    slices: Vec<(TaskId, Nanos)>,
    /// Time the interrupted context spent per (kernel function, lock held) before it let go.
    spent: Vec<(FuncLock, Nanos)>,
    irqs: [u64; 4],
    entries: Vec<RawEntry>,
}

impl Window {
    fn reset(&mut self, irq_at: Nanos, irq_off: Nanos, handler: Nanos, cause: Option<CauseSnap>) {
        self.open = true;
        self.irq_at = irq_at;
        self.irq_off = irq_off;
        self.handler = handler;
        self.preempt_wait = 0;
        self.ran_ahead = 0;
        self.sched = 0;
        self.wakee = 0;
        self.cause = cause;
        self.left_at = None;
        self.slices.clear();
        self.spent.clear();
        self.irqs = [0, 1, 0, 0];
        self.entries.clear();
    }

    fn push(&mut self, now: Nanos, pc: u32, func: &'static str, parent: Parent) {
        if self.open && self.entries.len() < MAX_TRACE_ENTRIES {
            self.entries.push(RawEntry {
                pc,
                t: now.saturating_sub(self.irq_at),
                func,
                parent,
            });
        }
    }
}

fn add<K: PartialEq>(v: &mut Vec<(K, Nanos)>, k: K, d: Nanos) {
    match v.iter_mut().find(|(x, _)| *x == k) {
        Some((_, n)) => *n += d,
        None => v.push((k, d)),
    }
}

/// Measurement state of one realfeel stream.
pub struct Tracker {
    stream: Stream,
    reader: Option<TaskId>,
    win: Window,
    /// Trace entries of the worst window so far.
    worst_entries: Vec<TraceEntry>,
    /// Who ran the worst stretch: (task label, policy, rt_prio).
    worst_task: Option<(String, u32, u32)>,
    /// Samples of at least CAUSE_THRESHOLD_NS by the function that held the CPU longest
    /// while the reader waited: (count, worst).
    causes: BTreeMap<&'static str, (u64, Nanos)>,
    /// When the run began: sample times are reported from here.
    epoch: Nanos,
    /// The worst sample's trace header: the kernel, its flags and what the model says of them.
    kernel: String,
    flags: Vec<(String, bool)>,
    note: String,
}

/// The kinds the tracker takes at all times: an interrupt opens a window and the reader's
/// mark closes it.
const ALWAYS: u32 = kind::IRQ_ENTRY | kind::MARK;
/// The kinds it takes only inside a window.
const IN_WINDOW: u32 =
    kind::RUNTIME | kind::SCHED_TIME | kind::RESCHED_POINT | kind::FUNC_ENTRY | kind::SCHED_WAKEUP | kind::SCHED_SWITCH;

impl Sink for Tracker {
    #[inline(always)]
    fn interest() -> u32 {
        ALWAYS | IN_WINDOW
    }

    fn kinds(&self) -> u32 {
        if self.win.open {
            ALWAYS | IN_WINDOW
        } else {
            ALWAYS
        }
    }

    #[inline(always)]
    fn event(&mut self, cx: &Cx, ev: &Event) -> bool {
        match *ev {
            // The interrupt opens a window, the reader's sample closes it.
            Event::IrqEntry {
                irq: Irq::Rtc,
                raised,
                len,
                ran_since,
            } => {
                let was = self.win.open;
                self.on_rtc_irq(raised, cx.now, len, || cx.interrupted(ran_since));
                return self.win.open != was;
            }
            Event::Mark { task, mark } => {
                let was = self.win.open;
                self.on_mark(mark, cx.now, task, cx.tasks);
                return self.win.open != was;
            }
            Event::IrqEntry { irq, len, .. } => self.on_other_irq(irq, len),
            Event::Runtime { task, ns, func, lock } => self.on_run(task, ns, (func, lock)),
            Event::SchedTime { ns } => self.on_sched(ns),
            Event::ReschedPoint {
                task,
                point,
                func,
                locked,
            } => self.on_step(cx.now, task, point, func, locked),
            Event::FuncEntry {
                task,
                func,
                path,
                preempt_off,
                ..
            } => self.on_step(cx.now, task, func, path, preempt_off),
            Event::SchedWakeup { task, new: false } => self.on_wake(cx.now, task),
            Event::SchedSwitch { prev, next, reason } => self.on_switch(cx.now, prev, next, reason),
            _ => {}
        }
        false
    }

    fn finish(mut self: Box<Self>, _tasks: &[Task], r: &mut RunResult) {
        for (path, (n, worst)) in &self.causes {
            r.counters.insert(format!("samples>=1ms:{path}"), *n);
            r.counters.insert(format!("worst_us:{path}"), worst / 1000);
        }
        if self.reader.is_none() {
            return;
        }
        let s = std::mem::replace(&mut self.stream, Stream::new("realfeel", ""));
        r.counters.insert("rtc_missed".into(), s.missed);
        if let (Some(w), Some((task, policy, rt))) = (s.worst.first(), self.worst_task.take()) {
            let cause = w.attribution.cause.clone();
            r.trace = Some(LatencyTrace {
                kernel: self.kernel,
                latency_ns: w.latency_ns,
                task,
                policy,
                rt_prio: rt,
                started_at: cause.as_ref().map_or("rtc_interrupt".into(), |c| c.path.clone()),
                ended_at: cause.as_ref().map_or("schedule".into(), |c| c.ended_by.clone()),
                flags: self.flags,
                entries: self.worst_entries,
                version: String::new(),
                note: self.note,
            });
        }
        r.streams.push(s);
    }
}

impl Tracker {
    /// realfeel's measurement of a run starting at `epoch` on kernel `v`.
    pub fn new(epoch: Nanos, v: &Variant) -> Self {
        Tracker {
            stream: Stream::new("realfeel", "RTC interrupt to reader in user space"),
            reader: None,
            win: Window::default(),
            worst_entries: Vec::new(),
            worst_task: None,
            causes: BTreeMap::new(),
            epoch,
            kernel: format!("{} (latlab model)", v.name),
            flags: v.trace_flags(),
            note: v.trace_note(),
        }
    }

    /// An RTC interrupt raised at `at` ran at `delivered` for `h` ns, over the stretch
    /// `cause` says.
    #[cold]
    #[inline(never)]
    fn on_rtc_irq(&mut self, at: Nanos, delivered: Nanos, h: Nanos, cause: impl FnOnce() -> Option<CauseSnap>) {
        if self.reader.is_none() {
            return;
        }
        let w = &mut self.win;
        if w.open {
            w.handler += h;
            w.irqs[1] += 1;
            return;
        }
        let cause = cause();
        let pc = u32::from(cause.as_ref().is_some_and(|c| c.lock.is_some()));
        let func = cause.as_ref().map_or("cpu_idle", |c| c.func);
        w.reset(at, delivered - at, h, cause);
        w.push(delivered, HARDIRQ | pc, "do_IRQ", Parent::Func(func));
        w.push(delivered, HARDIRQ | pc, "rtc_interrupt", Parent::Func("do_IRQ"));
    }

    fn on_other_irq(&mut self, irq: Irq, h: Nanos) {
        let w = &mut self.win;
        if w.open {
            w.handler += h;
            w.irqs[irq_index(irq)] += 1;
        }
    }

    /// `task` ran `d` ns in kernel function `at.0` (holding `at.1`).
    fn on_run(&mut self, task: TaskId, d: Nanos, at: FuncLock) {
        let w = &mut self.win;
        if !w.open {
            return;
        }
        if Some(task) == self.reader {
            w.wakee += d;
            return;
        }
        if w.left_at.is_some() {
            w.ran_ahead += d;
        } else {
            w.preempt_wait += d;
            add(&mut w.spent, at, d);
        }
        add(&mut w.slices, task, d);
    }

    fn on_sched(&mut self, d: Nanos) {
        if self.win.open {
            self.win.sched += d;
        }
    }

    fn on_step(&mut self, now: Nanos, task: TaskId, func: &'static str, parent: &'static str, locked: bool) {
        if Some(task) != self.reader {
            self.win.push(now, u32::from(locked), func, Parent::Func(parent));
        }
    }

    fn on_wake(&mut self, now: Nanos, t: TaskId) {
        self.win.push(now, HARDIRQ, "wake_up_process", Parent::Task(t));
    }

    fn on_switch(&mut self, now: Nanos, prev: TaskId, next: TaskId, why: SwitchReason) {
        let w = &mut self.win;
        if !w.open {
            return;
        }
        if prev != next && w.left_at.is_none() && Some(prev) != self.reader {
            w.left_at = Some((now, why));
        }
        let f = match why {
            SwitchReason::Point(p) => p.name(),
            SwitchReason::Unlock(_) | SwitchReason::IrqExit => "preempt_schedule",
            _ => "schedule",
        };
        w.push(now, 0, f, Parent::Task(prev));
        w.push(now, 0, "schedule", Parent::Func(f));
        w.push(now, 0, "__switch_to", Parent::Task(next));
    }

    #[cold]
    #[inline(never)]
    fn on_mark(&mut self, mark: Mark, now: Nanos, cur: TaskId, tasks: &[Task]) {
        match mark {
            Mark::RealfeelReader => self.reader = Some(cur),
            Mark::RealfeelSample { irq_at, coalesced } => {
                self.stream.missed += coalesced;
                if !self.win.open {
                    return;
                }
                self.win.open = false;
                self.finish(irq_at, now, tasks);
            }
            // The POSIX-timer test's, the periodic tasks' and the I/O benchmarks' marks go to
            // their own trackers.
            Mark::PosixTask
            | Mark::PosixSample { .. }
            | Mark::PeriodicTask { .. }
            | Mark::PeriodicSample { .. }
            | Mark::IoStart { .. }
            | Mark::IoDone { .. } => {}
        }
    }

    fn finish(&mut self, irq_at: Nanos, now: Nanos, tasks: &[Task]) {
        let w = &mut self.win;
        let latency = now - irq_at.min(w.irq_at);
        self.stream.hist.record(latency);
        // The function that held the CPU longest while the reader waited.
        let dominant = w.spent.iter().max_by_key(|(_, ns)| *ns).map(|(k, _)| *k);
        if latency >= CAUSE_THRESHOLD_NS {
            let e = self.causes.entry(dominant.map_or("user", |(f, _)| f)).or_default();
            e.0 += 1;
            e.1 = e.1.max(latency);
        }
        let enters =
            self.stream.worst.len() < KEEP_WORST || self.stream.worst.last().is_some_and(|s| s.latency_ns < latency);
        if !enters {
            return;
        }
        let label = |t: TaskId| tasks[t].label();
        let (ended_at, why) = w.left_at.unwrap_or((now, SwitchReason::UserReturn));
        let cause = w.cause.as_ref().filter(|c| !c.user).map(|c| {
            let (func, lock) = dominant.unwrap_or((c.func, c.lock));
            Cause {
                task: label(c.task),
                path: if func == c.path {
                    func.to_string()
                } else {
                    format!("{func} <- {}", c.path)
                },
                lock: lock.map(|l| l.name().to_string()),
                since_ns: c.since.saturating_sub(self.epoch),
                until_ns: ended_at - self.epoch,
                ended_by: why.describe(),
            }
        });
        w.spent.sort_by_key(|(_, ns)| std::cmp::Reverse(*ns));
        let breakdown: Vec<String> = w
            .spent
            .iter()
            .take(4)
            .map(|((f, l), ns)| match l {
                Some(l) => format!("{f} [{l}] {:.3} ms", *ns as f64 / 1e6),
                None => format!("{f} {:.3} ms", *ns as f64 / 1e6),
            })
            .collect();
        let attribution = Attribution {
            irq_off_ns: w.irq_off,
            handler_ns: w.handler,
            preempt_wait_ns: w.preempt_wait,
            ran_ahead_ns: w.ran_ahead,
            sched_ns: w.sched,
            wakee_kernel_ns: w.wakee,
            blocked_ns: 0,
            cause,
            tasks: w
                .slices
                .iter()
                .map(|&(t, ns)| TaskSlice {
                    comm: tasks[t].comm.clone(),
                    pid: tasks[t].pid,
                    ns,
                })
                .collect(),
            irqs: IRQ_NAMES
                .iter()
                .zip(w.irqs)
                .filter(|(_, n)| *n > 0)
                .map(|(s, n)| (s.to_string(), n))
                .collect(),
            steal_ns: 0,
            note: if breakdown.is_empty() {
                "model: exact decomposition; the interrupted context ran no kernel code (user space or idle)".into()
            } else {
                format!(
                    "model: exact decomposition; the interrupted context ran {}",
                    breakdown.join(", ")
                )
            },
            cgroup: None,
        };
        if self.stream.hist.max() == latency {
            let mut entries: Vec<TraceEntry> = w
                .entries
                .iter()
                .map(|e| TraceEntry {
                    preempt_count: e.pc,
                    t_ns: e.t,
                    func: e.func.to_string(),
                    parent: match e.parent {
                        Parent::Func(f) => f.to_string(),
                        Parent::Task(t) => label(t),
                    },
                })
                .collect();
            entries.push(TraceEntry {
                preempt_count: 0,
                t_ns: latency,
                func: "sys_read".into(),
                parent: "rtc_read".into(),
            });
            self.worst_entries = entries;
            self.worst_task = w.cause.as_ref().map(|c| {
                let t = &tasks[c.task];
                (t.label(), t.policy.number(), t.rt_priority)
            });
        }
        self.stream.offer_worst(
            Sample {
                at_ns: irq_at - self.epoch,
                latency_ns: latency,
                tag: BTreeMap::new(),
                attribution,
            },
            KEEP_WORST,
        );
    }
}
