//! The wakeup latency of a workload task's periodic step (`workload::task`), as cyclictest
//! measures its thread's: from the expiry the step waits for (a `clock_nanosleep`
//! TIMER_ABSTIME deadline, or a POSIX timer's expiry) to the task running in user space
//! again. One stream per periodic task (`COMM`, or `COMM.N` for copy N of a task with
//! `count`); expiries that passed without a sample are the stream's `missed` events.
//!
//! A sample's attribution splits the latency at the task's wakeup (`sched_waking`): the
//! expiry to the wakeup (timer delivery: the next tick on a `jiffies` kernel; an interrupt
//! held off), then, from the wakeup to user space, the CPU time of the tasks that ran first
//! (each by name), schedule()'s, and the woken task's own kernel return. A window opens at
//! the wakeup of a task waiting in a periodic step (`Mark::PeriodicTask`) and closes at its
//! next sample; CPU time is tallied only while one is open.

use super::Mark;
use crate::kernel::task::{Task, TaskId};
use crate::kernel::tracepoint::{kind, Cx, Event, Sink};
use latlab_core::{Attribution, Nanos, RunResult, Sample, Stream};
use std::collections::BTreeMap;

/// Worst samples kept per stream.
const KEEP_WORST: usize = 10;

/// The kinds it takes always: a task's wakeups and the program's marks.
const ALWAYS: u32 = kind::MARK | kind::SCHED_WAKING;
/// The kinds it takes while a window is open: what ran ahead of the woken task.
const IN_WINDOW: u32 = kind::RUNTIME | kind::SCHED_TIME;

/// A measured task's wait from its wakeup to its sample.
struct Window {
    task: TaskId,
    woken: Nanos,
    /// schedule() and the context switches meanwhile.
    sched: Nanos,
    /// The task's own CPU time (its kernel's return to user space).
    own: Nanos,
    /// Every other task's CPU time, in the order they first ran.
    others: Vec<(TaskId, Nanos)>,
}

/// The periodic steps' streams.
pub struct PeriodicTracker {
    streams: Vec<Stream>,
    /// Tasks waiting in periodic steps (whose wakeups open windows), by task id.
    measured: Vec<bool>,
    open: Vec<Window>,
    epoch: Nanos,
}

impl PeriodicTracker {
    /// Streams `names` (in the order of [`Mark::PeriodicSample`]'s `stream`), for a run
    /// starting at `epoch`.
    pub fn new(names: &[String], epoch: Nanos) -> Self {
        PeriodicTracker {
            streams: names
                .iter()
                .map(|n| Stream::new(n.as_str(), format!("{n}: periodic expiry to the task in user space")))
                .collect(),
            measured: Vec::new(),
            open: Vec::new(),
            epoch,
        }
    }

    #[cold]
    #[inline(never)]
    fn on_waking(&mut self, task: TaskId, now: Nanos) {
        if !self.measured.get(task).copied().unwrap_or(false) {
            return;
        }
        self.open.retain(|w| w.task != task);
        self.open.push(Window {
            task,
            woken: now,
            sched: 0,
            own: 0,
            others: Vec::new(),
        });
    }

    fn on_run(&mut self, task: TaskId, ns: Nanos) {
        for w in &mut self.open {
            if w.task == task {
                w.own += ns;
            } else if task != 0 {
                super::tally(&mut w.others, task, ns);
            }
        }
    }

    /// Task `task` waits in a periodic step.
    fn adopt(&mut self, task: TaskId) {
        if self.measured.len() <= task {
            self.measured.resize(task + 1, false);
        }
        self.measured[task] = true;
    }

    #[cold]
    #[inline(never)]
    fn on_sample(&mut self, stream: u32, missed: u32, due: Nanos, cx: &Cx, task: TaskId) {
        let window = self
            .open
            .iter()
            .position(|w| w.task == task)
            .map(|i| self.open.swap_remove(i))
            .filter(|w| w.woken >= due);
        let Some(s) = self.streams.get_mut(stream as usize) else {
            return;
        };
        s.missed += u64::from(missed);
        let latency = cx.now.saturating_sub(due);
        s.hist.record(latency);
        if s.worst.len() >= KEEP_WORST && s.worst.last().is_some_and(|w| w.latency_ns >= latency) {
            return;
        }
        let t = &cx.tasks[task];
        let mut attribution = Attribution::default();
        attribution.note = match window {
            Some(mut w) => {
                w.others.sort_by_key(|(_, ns)| std::cmp::Reverse(*ns));
                let ahead: Nanos = w.others.iter().map(|(_, ns)| ns).sum();
                let names: Vec<String> = w
                    .others
                    .iter()
                    .take(6)
                    .map(|&(o, ns)| format!("{} {:.3} ms", cx.tasks[o].label(), ns as f64 / 1e6))
                    .collect();
                attribution.irq_off_ns = w.woken - due;
                attribution.ran_ahead_ns = ahead;
                attribution.sched_ns = w.sched;
                attribution.wakee_kernel_ns = w.own;
                attribution.tasks = super::task_slices(cx.tasks, &w.others);
                format!(
                    "model ({}): {} woken {:.3} ms after the expiry; {} task(s) ran {:.3} ms before it: {}",
                    cx.sched.name(),
                    t.label(),
                    (w.woken - due) as f64 / 1e6,
                    w.others.len(),
                    ahead as f64 / 1e6,
                    if names.is_empty() {
                        "none".into()
                    } else {
                        names.join(", ")
                    }
                )
            }
            // A SIGEV_THREAD thread is new (no wakeup of its own), or the wakeup came before
            // the expiry (it had not slept).
            None => format!("model ({}): {} in user space", cx.sched.name(), t.label()),
        };
        let mut tag = BTreeMap::new();
        tag.insert("thread".into(), t.label());
        s.offer_worst(
            Sample {
                at_ns: due.saturating_sub(self.epoch),
                latency_ns: latency,
                tag,
                attribution,
            },
            KEEP_WORST,
        );
    }
}

impl Sink for PeriodicTracker {
    #[inline(always)]
    fn interest() -> u32 {
        ALWAYS | IN_WINDOW
    }

    fn kinds(&self) -> u32 {
        if self.open.is_empty() {
            ALWAYS
        } else {
            ALWAYS | IN_WINDOW
        }
    }

    #[inline]
    fn event(&mut self, cx: &Cx, ev: &Event) -> bool {
        // The kinds it takes follow whether a window is open.
        let was = self.open.is_empty();
        match *ev {
            Event::SchedWaking { task } => self.on_waking(task, cx.now),
            Event::Runtime { task, ns, .. } => self.on_run(task, ns),
            Event::SchedTime { ns } => {
                for w in &mut self.open {
                    w.sched += ns;
                }
            }
            Event::Mark {
                task,
                mark: Mark::PeriodicTask { .. },
            } => self.adopt(task),
            Event::Mark {
                task,
                mark: Mark::PeriodicSample { stream, missed, due },
            } => self.on_sample(stream, missed, due, cx, task),
            _ => {}
        }
        self.open.is_empty() != was
    }

    fn finish(self: Box<Self>, _tasks: &[Task], r: &mut RunResult) {
        r.streams.extend(self.streams);
    }
}
