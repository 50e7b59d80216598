//! The event recorder: a sink that keeps the kernel's trace events around the worst samples
//! of every stream, as the probe's ftrace instance does on a real kernel, into the same
//! [`RecordedEvents`] (`Stream::recorded`), so `latlab report trace` reads one typed trace
//! for both engines.
//!
//! Like ftrace's ring buffer it holds the latest events only (a bounded ring of `cap`
//! events, the oldest overwritten). A sample's window runs from a few events before its
//! stimulus (the RTC interrupt, the timer expiry, the timed call's start) to the sample;
//! what of it the ring no longer holds is counted as `left_out`, the earliest first. The
//! recorder ranks samples by its own reading of their latency (the stimulus to the sample)
//! and keeps windows for the [`KEEP`] worst of each stream; a stream's kept sample whose
//! window was not kept has none, and the exporters say so.
//!
//! Each event is kept with the irq-info column 6.x's `trace` prints (`d.h1.`: irqs off,
//! need-resched, hardirq/softirq, preempt depth, migrate-disable), taken when it happened.
//! Times are the model's clock since boot, as the kernel's `trace_clock` is.

use super::Mark;
use crate::kernel::lock::Lock;
use crate::kernel::path::Step;
use crate::kernel::task::{Exec, Policy, Task, TaskId};
use crate::kernel::tracepoint::{kind, Cx, Event, IoOp, IrqCtx, Pass, Sink};
use crate::kernel::{HrTimer, Irq, SwitchReason};
use latlab_core::{Nanos, RecordedEvent, RecordedEvents, RunResult};
use std::collections::VecDeque;

/// The ring's size a run asks for unless it has its own (`SimConfig::record_events`).
pub const RING_EVENTS: usize = 1024;
/// Windows kept per stream (a few more than the trackers keep worst samples: the recorder's
/// ranking may differ a little from theirs).
pub const KEEP: usize = 16;
/// Events of a window before its stimulus.
const BEFORE: u64 = 32;
/// Stimuli remembered until their sample comes.
const STIMULI: usize = 64;

/// What an event line says, decided when it happened.
#[derive(Clone, Copy, Debug)]
enum Line {
    Waking(TaskId),
    Wakeup(TaskId, bool),
    Fork(TaskId, TaskId),
    Switch(TaskId, TaskId, &'static str),
    IrqEntry(Irq),
    IrqExit(Irq),
    SoftirqEntry,
    SoftirqExit,
    PreemptDisable(&'static str, &'static str),
    PreemptEnable(&'static str, &'static str),
    LockAcquire(Lock),
    LockRelease(Lock),
    Mark(TaskId, Mark),
}

/// One recorded event: its place in the stream of events, time, CPU, the task current
/// then, the irq-info column.
#[derive(Clone, Copy, Debug)]
struct Rec {
    seq: u64,
    ts: Nanos,
    cpu: u32,
    task: TaskId,
    flags: [u8; 5],
    line: Line,
}

/// What started a sample's interval: the first RTC interrupt since realfeel's last sample
/// (the reader's read covers every interrupt since), a POSIX timer's expiry due then, a
/// task's timed call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stimulus {
    Rtc,
    Posix(Nanos),
    Io(TaskId),
}

/// A window kept for a sample.
struct Kept {
    stream: &'static str,
    at_ns: Nanos,
    latency: Nanos,
    stimulus_ns: Nanos,
    to_ns: Nanos,
    left_out: u64,
    recs: Vec<Rec>,
}

/// The recorder of one run.
pub struct Recorder {
    epoch: Nanos,
    cap: usize,
    ring: VecDeque<Rec>,
    /// Events recorded so far (the next one's `seq`).
    seq: u64,
    stimuli: VecDeque<(Stimulus, Nanos, u64, Option<Pass>)>,
    /// The POSIX-timer stream's name, if the run has one.
    posix: Option<&'static str>,
    /// Per CPU: the preempt-off stretch under way (its task) and the lock it holds.
    stretch: Vec<(Option<TaskId>, Option<Lock>)>,
    kept: Vec<Kept>,
}

impl Recorder {
    /// A recorder of a run starting at `epoch` keeping up to `cap` events per window; the
    /// run's POSIX-timer stream is named `posix`.
    pub fn new(epoch: Nanos, cap: usize, posix: Option<&'static str>) -> Self {
        Recorder {
            epoch,
            cap: cap.max(1),
            ring: VecDeque::new(),
            seq: 0,
            stimuli: VecDeque::new(),
            posix,
            stretch: Vec::new(),
            kept: Vec::new(),
        }
    }

    fn push(&mut self, cx: &Cx, task: TaskId, line: Line) {
        if self.ring.len() == self.cap {
            self.ring.pop_front();
        }
        let mut flags = flags(cx);
        if matches!(line, Line::PreemptDisable(..) | Line::LockAcquire(_)) && flags[3] == b'.' {
            // Taken as the step that holds it starts: preemption is off from here.
            flags[3] = b'1';
        }
        self.ring.push_back(Rec {
            seq: self.seq,
            ts: cx.now,
            cpu: cx.cpu as u32,
            task,
            flags,
            line,
        });
        self.seq += 1;
    }

    fn stimulus(&mut self, s: Stimulus, at: Nanos, pass: Option<Pass>) {
        if self.stimuli.len() == STIMULI {
            self.stimuli.pop_front();
        }
        // The event just recorded is the stimulus's own.
        self.stimuli.push_back((s, at, self.seq.saturating_sub(1), pass));
    }

    /// A sample of `stream` at `now` whose interval `s` began: keep its window if it is among
    /// the stream's worst so far. The sample is known by its stimulus's time, or by `at` when
    /// its stream names it so (realfeel's, by the interrupt its read returned).
    fn sample(
        &mut self,
        s: Stimulus,
        now: Nanos,
        stream: impl FnOnce(Option<Pass>) -> Option<&'static str>,
        at: Option<Nanos>,
    ) {
        let Some(i) = self.stimuli.iter().rposition(|x| x.0 == s) else {
            return;
        };
        let (_, first, seq, pass) = self.stimuli.remove(i).expect("found");
        let Some(stream) = stream(pass) else { return };
        let at = at.unwrap_or(first);
        let latency = now - first.min(at);
        let mine = self.kept.iter().filter(|k| k.stream == stream);
        if mine.clone().count() >= KEEP {
            let (j, least) = self
                .kept
                .iter()
                .enumerate()
                .filter(|(_, k)| k.stream == stream)
                .min_by_key(|(_, k)| k.latency)
                .map(|(j, k)| (j, k.latency))
                .expect("KEEP > 0");
            if least >= latency {
                return;
            }
            self.kept.remove(j);
        }
        let want = seq.saturating_sub(BEFORE);
        let oldest = self.ring.front().map_or(self.seq, |r| r.seq);
        let from = want.max(oldest);
        let recs: Vec<Rec> = self.ring.iter().filter(|r| r.seq >= from).copied().collect();
        self.kept.push(Kept {
            stream,
            at_ns: at - self.epoch.min(at),
            latency,
            stimulus_ns: first.min(at),
            to_ns: now,
            left_out: from - want,
            recs,
        });
    }
}

/// The irq-info column of 6.x's `trace` (kernel/trace/trace_output.c,
/// `trace_print_lat_fmt`): irqs off (`d`), need-resched (`N`, `L` lazy, `B` both), hardirq
/// or softirq (`h`, `s`), preempt depth, migrate-disable (never, in the model: `.`).
fn flags(cx: &Cx) -> [u8; 5] {
    let t = &cx.tasks[cx.cur];
    let step = match &t.exec {
        Exec::Kernel { step: Some(r), .. } => Some(&r.step),
        _ => None,
    };
    let (irqs_off, locked) = match step {
        Some(Step::Work(w)) => (w.irqs_off, w.lock.is_some() || w.irqs_off || w.hold),
        Some(Step::Loop(l)) => (false, l.lock.is_some() || l.hold),
        _ => (false, false),
    };
    let d = if irqs_off || cx.in_schedule || cx.irq == IrqCtx::Hardirq {
        b'd'
    } else {
        b'.'
    };
    let n = match (t.need_resched, t.need_resched_lazy) {
        (true, true) => b'B',
        (true, false) => b'N',
        (false, true) => b'L',
        (false, false) => b'.',
    };
    let h = match cx.irq {
        IrqCtx::Hardirq => b'h',
        IrqCtx::Softirq => b's',
        IrqCtx::Task => b'.',
    };
    let depth = u8::from(locked) + u8::from(cx.in_schedule);
    let p = if depth == 0 { b'.' } else { b'0' + depth };
    [d, n, h, p, b'.']
}

impl Sink for Recorder {
    #[inline(always)]
    fn interest() -> u32 {
        kind::ALL & !(kind::RUNTIME | kind::SCHED_TIME | kind::SLEEP | kind::TIMER_OVERRUN | kind::RESCHED_POINT)
    }

    fn kinds(&self) -> u32 {
        Self::interest()
    }

    #[inline]
    fn event(&mut self, cx: &Cx, ev: &Event) -> bool {
        let cur = cx.cur;
        if self.stretch.len() <= cx.cpu {
            self.stretch.resize(cx.cpu + 1, (None, None));
        }
        match *ev {
            Event::SchedWaking { task } => self.push(cx, cur, Line::Waking(task)),
            Event::SchedWakeup { task, new } => self.push(cx, cur, Line::Wakeup(task, new)),
            Event::Fork { parent, child } => self.push(cx, cur, Line::Fork(parent, child)),
            Event::SchedSwitch { prev, next, reason } if prev != next => {
                let state = match reason {
                    SwitchReason::Block => "S",
                    SwitchReason::Exit => "X",
                    SwitchReason::Idle => "R",
                    _ => "R+",
                };
                self.push(cx, prev, Line::Switch(prev, next, state));
            }
            Event::IrqEntry { irq, raised, .. } => {
                self.push(cx, cur, Line::IrqEntry(irq));
                match irq {
                    Irq::Rtc if !self.stimuli.iter().any(|x| x.0 == Stimulus::Rtc) => {
                        self.stimulus(Stimulus::Rtc, raised, None)
                    }
                    Irq::Hrtimer(HrTimer::Posix { due, .. }) => self.stimulus(Stimulus::Posix(due), due, None),
                    _ => {}
                }
            }
            Event::IrqExit { irq } => self.push(cx, cur, Line::IrqExit(irq)),
            Event::SoftirqEntry => self.push(cx, cur, Line::SoftirqEntry),
            Event::SoftirqExit => self.push(cx, cur, Line::SoftirqExit),
            Event::FuncEntry {
                task,
                func,
                path,
                lock,
                preempt_off,
            } => {
                let (open, held) = self.stretch[cx.cpu];
                if preempt_off && open != Some(task) {
                    self.push(cx, task, Line::PreemptDisable(func, path));
                }
                if let Some(l) = lock.filter(|&l| held != Some(l)) {
                    self.push(cx, task, Line::LockAcquire(l));
                }
                if preempt_off {
                    self.stretch[cx.cpu] = (Some(task), lock.or(held));
                }
            }
            Event::PreemptOn {
                task, func, path, lock, ..
            } => {
                if let Some(l) = lock {
                    self.push(cx, task, Line::LockRelease(l));
                }
                self.push(cx, task, Line::PreemptEnable(func, path));
                self.stretch[cx.cpu] = (None, None);
            }
            Event::Mark { task, mark } => {
                if !matches!(mark, Mark::RealfeelReader | Mark::PosixTask | Mark::PeriodicTask { .. }) {
                    self.push(cx, task, Line::Mark(task, mark));
                }
                match mark {
                    Mark::IoStart { pass } => self.stimulus(Stimulus::Io(task), cx.now, Some(pass)),
                    Mark::IoDone { op, .. } if op != IoOp::Fsync => {
                        self.sample(Stimulus::Io(task), cx.now, |p| p.map(Pass::stream), None)
                    }
                    Mark::RealfeelSample { irq_at, .. } => {
                        self.sample(Stimulus::Rtc, cx.now, |_| Some("realfeel"), Some(irq_at))
                    }
                    Mark::PosixSample { due } => {
                        let posix = self.posix;
                        self.sample(Stimulus::Posix(due), cx.now, |_| posix, None)
                    }
                    _ => {}
                }
            }
            _ => {}
        }
        false
    }

    fn finish(self: Box<Self>, tasks: &[Task], r: &mut RunResult) {
        let mut kept = self.kept;
        kept.sort_by_key(|k| std::cmp::Reverse(k.latency));
        for s in &mut r.streams {
            for w in &s.worst {
                let Some(k) = kept.iter().find(|k| k.stream == s.name && k.at_ns == w.at_ns) else {
                    continue;
                };
                let mut cpus: Vec<u32> = k.recs.iter().map(|r| r.cpu).collect();
                cpus.sort_unstable();
                cpus.dedup();
                s.recorded.push(RecordedEvents {
                    sample_at_ns: w.at_ns,
                    clock: "latlab model clock since boot, ns".into(),
                    stimulus_ns: k.stimulus_ns,
                    from_ns: k.recs.first().map_or(k.stimulus_ns, |r| r.ts.min(k.stimulus_ns)),
                    to_ns: k.to_ns,
                    cpus,
                    left_out: k.left_out,
                    events: k.recs.iter().map(|r| recorded(r, tasks)).collect(),
                });
            }
        }
    }
}

/// Linux's `prio` of a task as sched events print it: 120 + nice for SCHED_OTHER,
/// 99 - rt_priority for a real-time task.
fn prio(t: &Task) -> i32 {
    match t.policy {
        Policy::Other => 120 + t.nice,
        Policy::Fifo | Policy::Rr => 99 - t.rt_priority as i32,
    }
}

/// `comm` as the events print a task: `swapper/N` for CPU N's idle task.
fn comm(t: &Task, cpu: u32) -> String {
    if t.pid == 0 {
        format!("swapper/{cpu}")
    } else {
        t.comm.clone()
    }
}

/// The interrupt's number and name (`/proc/interrupts` of the model's PC).
fn irq_name(irq: Irq) -> (u32, &'static str) {
    match irq {
        Irq::Tick => (0, "timer"),
        Irq::Rtc => (8, "rtc0"),
        Irq::Disk(_) => (14, "ide0"),
        Irq::Hrtimer(_) => (236, "local_timer"),
    }
}

fn hrtimer_function(irq: Irq) -> &'static str {
    match irq {
        Irq::Hrtimer(HrTimer::Posix { .. }) => "posix_timer_fn",
        _ => "hrtimer_wakeup",
    }
}

/// A record as the line the kernel would print.
fn recorded(r: &Rec, tasks: &[Task]) -> RecordedEvent {
    let t = &tasks[r.task];
    let who = |id: TaskId| {
        let x = &tasks[id];
        format!(
            "comm={} pid={} prio={} target_cpu={:03}",
            comm(x, r.cpu),
            x.pid,
            prio(x),
            x.cpu
        )
    };
    let (event, fields) = match r.line {
        Line::Waking(x) => ("sched_waking", who(x)),
        Line::Wakeup(x, false) => ("sched_wakeup", who(x)),
        Line::Wakeup(x, true) => ("sched_wakeup_new", who(x)),
        Line::Fork(p, c) => (
            "sched_process_fork",
            format!(
                "comm={} pid={} child_comm={} child_pid={}",
                tasks[p].comm, tasks[p].pid, tasks[c].comm, tasks[c].pid
            ),
        ),
        Line::Switch(p, n, state) => {
            let (p, n) = (&tasks[p], &tasks[n]);
            (
                "sched_switch",
                format!(
                    "prev_comm={} prev_pid={} prev_prio={} prev_state={state} ==> next_comm={} next_pid={} next_prio={}",
                    comm(p, r.cpu),
                    p.pid,
                    prio(p),
                    comm(n, r.cpu),
                    n.pid,
                    prio(n)
                ),
            )
        }
        Line::IrqEntry(irq @ Irq::Hrtimer(_)) => (
            "hrtimer_expire_entry",
            format!("function={} now={}", hrtimer_function(irq), r.ts),
        ),
        Line::IrqExit(Irq::Hrtimer(_)) => ("hrtimer_expire_exit", String::new()),
        Line::IrqEntry(irq) => {
            let (n, name) = irq_name(irq);
            ("irq_handler_entry", format!("irq={n} name={name}"))
        }
        Line::IrqExit(irq) => ("irq_handler_exit", format!("irq={} ret=handled", irq_name(irq).0)),
        Line::SoftirqEntry => ("softirq_entry", "vec=1 [action=TIMER]".into()),
        Line::SoftirqExit => ("softirq_exit", "vec=1 [action=TIMER]".into()),
        Line::PreemptDisable(f, p) => ("preempt_disable", format!("caller={f} parent={p}")),
        Line::PreemptEnable(f, p) => ("preempt_enable", format!("caller={f} parent={p}")),
        Line::LockAcquire(l) => ("lock_acquire", l.name().to_string()),
        Line::LockRelease(l) => ("lock_release", l.name().to_string()),
        Line::Mark(x, m) => ("tracing_mark_write", mark_fields(tasks[x].pid, m, r.ts)),
    };
    RecordedEvent {
        ts_ns: r.ts,
        cpu: r.cpu,
        comm: if t.pid == 0 { "<idle>".into() } else { t.comm.clone() },
        pid: t.pid,
        flags: String::from_utf8_lossy(&r.flags).into_owned(),
        event: event.into(),
        fields,
    }
}

/// A user mark as `tracing_mark_write` text Perfetto reads (atrace): a timed call as a slice
/// (`B|pid|name` ... `E|pid`), a sample as a counter of its latency in us (`C|pid|name|value`).
fn mark_fields(pid: u32, m: Mark, now: Nanos) -> String {
    let us = |from: Nanos| (now - from) / 1_000;
    match m {
        Mark::RealfeelSample { irq_at, .. } => format!("C|{pid}|realfeel_latency_us|{}", us(irq_at)),
        Mark::PosixSample { due } => format!("C|{pid}|timer_latency_us|{}", us(due)),
        Mark::PeriodicSample { due, .. } => format!("C|{pid}|periodic_latency_us|{}", us(due)),
        Mark::IoStart { pass } => format!("B|{pid}|timed {} call", pass.name()),
        Mark::IoDone { .. } => format!("E|{pid}"),
        // Not recorded: they say who measures, not when.
        Mark::RealfeelReader | Mark::PosixTask | Mark::PeriodicTask { .. } => String::new(),
    }
}
