//! realfeel2 (amlat.tar.gz, seed 000): the RTC raises IRQ 8 at a set rate (2048 Hz in the
//! seed); a SCHED_FIFO reader blocked in `read(/dev/rtc)` is woken by `rtc_interrupt`, and
//! the time from the interrupt to the reader running in user space is one sample.
//!
//! The [`Tracker`] follows every such window through the CPU loop's hooks and splits the
//! sample into its mechanisms: IRQ-off delay, handler time, waiting for a preemption
//! opportunity (in which path, holding which lock, since when), tasks that ran ahead,
//! scheduler time, the reader's own return to user space. The worst window keeps its steps
//! as a `/proc/latency_trace`-style trace.

use super::Mark;
use crate::kernel::preempt::CauseSnap;
use crate::kernel::task::{Task, TaskId};
use crate::kernel::{Irq, SwitchReason};
use latlab_core::{Attribution, Cause, Nanos, Sample, Stream, TaskSlice, TraceEntry};
use std::collections::BTreeMap;

/// Entries kept per window for the trace of the worst sample.
const MAX_TRACE_ENTRIES: usize = 256;
/// Worst samples kept with their attribution.
const KEEP_WORST: usize = 10;
/// Samples at least this long are tallied by the code path that delayed them.
pub const CAUSE_THRESHOLD_NS: Nanos = 1_000_000;
/// preempt_count bits as the latency tracer prints them (kernel-facts.md).
const HARDIRQ: u32 = 0x10000;

#[derive(Default)]
struct Window {
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
    slices: BTreeMap<TaskId, Nanos>,
    /// Time the interrupted context spent per (kernel function, lock held) before it let go.
    spent: BTreeMap<(&'static str, Option<&'static str>), Nanos>,
    irqs: BTreeMap<&'static str, u64>,
    entries: Vec<TraceEntry>,
}

/// Measurement state of one realfeel stream.
pub struct Tracker {
    stream: Stream,
    reader: Option<TaskId>,
    win: Option<Window>,
    /// Trace entries of the worst window so far.
    pub worst_entries: Vec<TraceEntry>,
    /// Who ran the worst stretch: (task label, policy, rt_prio).
    pub worst_task: Option<(String, u32, u32)>,
    /// Samples of at least CAUSE_THRESHOLD_NS by the function running when the interrupt
    /// came: (count, worst).
    pub causes: BTreeMap<&'static str, (u64, Nanos)>,
}

impl Default for Tracker {
    fn default() -> Self {
        Tracker {
            stream: Stream::new("realfeel", "RTC interrupt to reader in user space"),
            reader: None,
            win: None,
            worst_entries: Vec::new(),
            worst_task: None,
            causes: BTreeMap::new(),
        }
    }
}

impl Tracker {
    fn push(&mut self, now: Nanos, pc: u32, func: &str, parent: &str) {
        if let Some(w) = &mut self.win {
            if w.entries.len() < MAX_TRACE_ENTRIES {
                w.entries.push(TraceEntry {
                    preempt_count: pc,
                    t_ns: now.saturating_sub(w.irq_at),
                    func: func.to_string(),
                    parent: parent.to_string(),
                });
            }
        }
    }

    pub fn on_rtc_irq(&mut self, at: Nanos, delivered: Nanos, h: Nanos, cause: Option<CauseSnap>) {
        if self.reader.is_none() {
            return;
        }
        if let Some(w) = &mut self.win {
            w.handler += h;
            *w.irqs.entry("rtc").or_default() += 1;
            return;
        }
        let pc = u32::from(cause.as_ref().is_some_and(|c| c.lock.is_some()));
        let func = cause.as_ref().map_or("cpu_idle", |c| c.func);
        let mut w = Window {
            irq_at: at,
            irq_off: delivered - at,
            handler: h,
            cause,
            ..Window::default()
        };
        w.irqs.insert("rtc", 1);
        self.win = Some(w);
        self.push(delivered, HARDIRQ | pc, "do_IRQ", func);
        self.push(delivered, HARDIRQ | pc, "rtc_interrupt", "do_IRQ");
    }

    pub fn on_other_irq(&mut self, irq: Irq, h: Nanos) {
        if let Some(w) = &mut self.win {
            w.handler += h;
            let name = match irq {
                Irq::Tick => "timer",
                Irq::Rtc => "rtc",
                Irq::Disk(_) => "ide0",
            };
            *w.irqs.entry(name).or_default() += 1;
        }
    }

    /// `task` ran `d` ns in kernel function `at.0` (holding `at.1`).
    pub fn on_run(&mut self, task: TaskId, d: Nanos, at: (&'static str, Option<&'static str>)) {
        let reader = self.reader;
        if let Some(w) = &mut self.win {
            if Some(task) == reader {
                w.wakee += d;
                return;
            }
            if w.left_at.is_some() {
                w.ran_ahead += d;
            } else {
                w.preempt_wait += d;
                *w.spent.entry(at).or_default() += d;
            }
            *w.slices.entry(task).or_default() += d;
        }
    }

    pub fn on_sched(&mut self, d: Nanos) {
        if let Some(w) = &mut self.win {
            w.sched += d;
        }
    }

    pub fn on_step(&mut self, now: Nanos, task: TaskId, func: &str, parent: &str, locked: bool) {
        if self.win.is_some() && Some(task) != self.reader {
            self.push(now, u32::from(locked), func, parent);
        }
    }

    pub fn on_wake(&mut self, now: Nanos, t: TaskId, tasks: &[Task]) {
        if self.win.is_some() {
            let who = tasks[t].label();
            self.push(now, HARDIRQ, "wake_up_process", &who);
        }
    }

    pub fn on_switch(&mut self, now: Nanos, prev: TaskId, next: TaskId, why: SwitchReason, tasks: &[Task]) {
        let reader = self.reader;
        let Some(w) = &mut self.win else { return };
        if prev != next && w.left_at.is_none() && Some(prev) != reader {
            w.left_at = Some((now, why));
        }
        let f = match why {
            SwitchReason::Point(p) => p,
            SwitchReason::Unlock(_) => "preempt_schedule",
            SwitchReason::IrqExit => "preempt_schedule",
            _ => "schedule",
        };
        let prev_l = tasks[prev].label();
        self.push(now, 0, f, &prev_l);
        self.push(now, 0, "schedule", f);
        let next_l = tasks[next].label();
        self.push(now, 0, "__switch_to", &next_l);
    }

    pub fn on_mark(&mut self, mark: Mark, now: Nanos, cur: TaskId, tasks: &[Task]) {
        match mark {
            Mark::RealfeelReader => self.reader = Some(cur),
            Mark::RealfeelSample { irq_at, coalesced } => {
                self.stream.missed += coalesced;
                let Some(mut w) = self.win.take() else { return };
                let latency = now - irq_at.min(w.irq_at);
                self.stream.hist.record(latency);
                // The function that held the CPU longest while the reader waited.
                let dominant = w.spent.iter().max_by_key(|(_, &ns)| ns).map(|(&k, _)| k);
                if latency >= CAUSE_THRESHOLD_NS {
                    let key = dominant.map_or("user", |(f, _)| f);
                    let e = self.causes.entry(key).or_default();
                    e.0 += 1;
                    e.1 = e.1.max(latency);
                }
                let worst_so_far = self.stream.hist.max() == latency;
                let enters = self.stream.worst.len() < KEEP_WORST
                    || self.stream.worst.last().is_some_and(|s| s.latency_ns < latency);
                if !enters {
                    return;
                }
                let (ended_at, why) = w.left_at.unwrap_or((now, SwitchReason::UserReturn));
                let cause = w.cause.as_ref().filter(|c| !c.user).map(|c| {
                    let (func, lock) = dominant.unwrap_or((c.func, c.lock));
                    Cause {
                        task: c.task.clone(),
                        path: if func == c.path {
                            func.to_string()
                        } else {
                            format!("{func} <- {}", c.path)
                        },
                        lock: lock.map(str::to_string),
                        since_ns: c.since,
                        until_ns: ended_at,
                        ended_by: why.describe(),
                    }
                });
                let mut spent: Vec<_> = w.spent.iter().collect();
                spent.sort_by(|a, b| b.1.cmp(a.1));
                let breakdown: Vec<String> = spent
                    .iter()
                    .take(4)
                    .map(|((f, l), ns)| match l {
                        Some(l) => format!("{f} [{l}] {:.3} ms", **ns as f64 / 1e6),
                        None => format!("{f} {:.3} ms", **ns as f64 / 1e6),
                    })
                    .collect();
                let attribution = Attribution {
                    irq_off_ns: w.irq_off,
                    handler_ns: w.handler,
                    preempt_wait_ns: w.preempt_wait,
                    ran_ahead_ns: w.ran_ahead,
                    sched_ns: w.sched,
                    wakee_kernel_ns: w.wakee,
                    cause,
                    tasks: w
                        .slices
                        .iter()
                        .map(|(&t, &ns)| TaskSlice {
                            comm: tasks[t].comm.clone(),
                            pid: tasks[t].pid,
                            ns,
                        })
                        .collect(),
                    irqs: w.irqs.iter().map(|(n, c)| (n.to_string(), *c)).collect(),
                    steal_ns: 0,
                    note: format!(
                        "model: exact decomposition; the interrupted context ran {}",
                        breakdown.join(", ")
                    ),
                };
                if worst_so_far {
                    w.entries.push(TraceEntry {
                        preempt_count: 0,
                        t_ns: latency,
                        func: "sys_read".into(),
                        parent: "rtc_read".into(),
                    });
                    self.worst_entries = std::mem::take(&mut w.entries);
                    self.worst_task = w.cause.as_ref().map(|c| {
                        let t = tasks.iter().find(|t| t.label() == c.task);
                        (
                            c.task.clone(),
                            t.map_or(0, |t| t.policy.number()),
                            t.map_or(0, |t| t.rt_priority),
                        )
                    });
                }
                self.stream.offer_worst(
                    Sample {
                        at_ns: irq_at,
                        latency_ns: latency,
                        tag: BTreeMap::new(),
                        attribution,
                    },
                    KEEP_WORST,
                );
            }
        }
    }

    pub fn take_stream(&mut self) -> Option<Stream> {
        self.reader?;
        Some(std::mem::replace(&mut self.stream, Stream::new("realfeel", "")))
    }
}
