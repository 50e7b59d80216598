//! The wakeup latency of a workload task's periodic step (`workload::task`), as cyclictest
//! measures its thread's: from the expiry the step waits for (a `clock_nanosleep`
//! TIMER_ABSTIME deadline, or a POSIX timer's expiry) to the task running in user space
//! again. One stream per periodic task (`COMM`, or `COMM.N` for copy N of a task with
//! `count`); expiries that passed without a sample are the stream's `missed` events.
//!
//! A sample's attribution splits the latency at the task's wakeup (`sched_waking`): the
//! expiry to the wakeup (timer delivery: the tick on a `jiffies` kernel, interrupts off),
//! and the wakeup to user space (tasks that ran first, schedule(), the return).

use super::Mark;
use crate::kernel::task::{Task, TaskId};
use crate::kernel::tracepoint::{kind, Cx, Event, Sink};
use latlab_core::{Attribution, Nanos, RunResult, Sample, Stream};
use std::collections::BTreeMap;

/// Worst samples kept per stream.
const KEEP_WORST: usize = 10;

/// The periodic steps' streams.
pub struct PeriodicTracker {
    streams: Vec<Stream>,
    /// Each task's last `sched_waking`, by task id.
    woken: Vec<Nanos>,
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
            woken: Vec::new(),
            epoch,
        }
    }

    #[cold]
    #[inline(never)]
    fn on_sample(&mut self, stream: u32, missed: u32, due: Nanos, cx: &Cx, task: TaskId) {
        let Some(s) = self.streams.get_mut(stream as usize) else {
            return;
        };
        s.missed += u64::from(missed);
        let latency = cx.now.saturating_sub(due);
        s.hist.record(latency);
        if s.worst.len() >= KEEP_WORST && s.worst.last().is_some_and(|w| w.latency_ns >= latency) {
            return;
        }
        // The wakeup that ended this wait, if it came after the expiry (a SIGEV_THREAD
        // thread is new: no wakeup of its own).
        let woken = self.woken.get(task).copied().filter(|&w| w >= due && w <= cx.now);
        let t = &cx.tasks[task];
        let note = match woken {
            Some(w) => format!(
                "model ({}): {} woken {:.3} ms after the expiry, in user space {:.3} ms after its wakeup",
                cx.sched.name(),
                t.label(),
                (w - due) as f64 / 1e6,
                (cx.now - w) as f64 / 1e6
            ),
            None => format!("model ({}): {} in user space", cx.sched.name(), t.label()),
        };
        let attribution = Attribution {
            irq_off_ns: woken.map_or(0, |w| w - due),
            ran_ahead_ns: woken.map_or(latency, |w| cx.now - w),
            note,
            ..Attribution::default()
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
    fn kinds(&self) -> u32 {
        kind::MARK | kind::SCHED_WAKING
    }

    #[inline]
    fn event(&mut self, cx: &Cx, ev: &Event) -> u32 {
        match *ev {
            Event::SchedWaking { task } => {
                if self.woken.len() <= task {
                    self.woken.resize(task + 1, 0);
                }
                self.woken[task] = cx.now;
            }
            Event::Mark {
                task,
                mark: Mark::PeriodicSample { stream, missed, due },
            } => self.on_sample(stream, missed, due, cx, task),
            _ => {}
        }
        self.kinds()
    }

    fn finish(self: Box<Self>, _tasks: &[Task], r: &mut RunResult) {
        r.streams.extend(self.streams);
    }
}
