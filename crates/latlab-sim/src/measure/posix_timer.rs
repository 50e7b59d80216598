//! Seed 004's wakeup-latency test: a periodic POSIX timer, and the time from each expiry to
//! its notify function running (a SIGEV_SIGNAL handler, or the function a SIGEV_THREAD
//! thread runs). Streams are named as the probe names them (`posix_timer_signal`,
//! `posix_timer_thread`); expiries that found the previous signal still queued are the
//! stream's `missed` events.
//!
//! Each expiry opens a window, closed by the sample; SIGEV_THREAD windows overlap when a
//! thread waits longer than a period. While a window is open every task's CPU time is
//! tallied, so a sample says who ran ahead of the notify function and for how long, and the
//! scheduler says where it placed the woken or new task (`Scheduler::placement`). In a run
//! replaying the machine's host noise, the host gaps between the expiry and the sample are
//! its `steal_ns`, named in the note.

use super::Mark;
use crate::kernel::task::{Task, TaskId};
use crate::kernel::tracepoint::{kind, Cx, Event, Sink};
use crate::kernel::{HrTimer, Irq};
use crate::sched::Placement;
use latlab_core::{Attribution, Nanos, RunResult, Sample, Stream};
use std::collections::BTreeMap;

/// Worst samples kept with their attribution.
const KEEP_WORST: usize = 10;

/// An expiry whose notification has not run yet: its interval so far.
struct Window {
    due: Nanos,
    irq_delay: Nanos,
    handler: Nanos,
    sched: Nanos,
    /// CPU time of the measuring tasks (the target, the helper, the new thread).
    wakee: Nanos,
    /// Where the window's share of [`PosixTracker::ran`] begins.
    from: usize,
}

/// Measurement state of one POSIX-timer stream.
pub struct PosixTracker {
    stream: Stream,
    open: Vec<Window>,
    /// The test's threads (target, helper, notify threads).
    mine: Vec<bool>,
    /// Where the scheduler last placed each task when it was woken or created, by task id.
    placed: Vec<Option<Placement>>,
    /// Every other task's CPU stretches, in order, since the oldest open window opened: a
    /// window's tasks that ran ahead are summed from it when its sample is taken.
    ran: Vec<(TaskId, Nanos)>,
    /// The replayed host gaps lately.
    gaps: super::HostGapLog,
    epoch: Nanos,
}

/// The kinds the tracker takes at all times: an expiry opens a window and its notification
/// closes it.
const ALWAYS: u32 = kind::FORK | kind::MARK | kind::IRQ_ENTRY | kind::TIMER_OVERRUN | kind::HOST_GAP;
/// The kinds it takes only while a window is open: CPU time and placements.
const IN_WINDOW: u32 = kind::SCHED_WAKEUP | kind::RUNTIME | kind::SCHED_TIME;

impl Sink for PosixTracker {
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

    #[inline(always)]
    fn event(&mut self, cx: &Cx, ev: &Event) -> bool {
        match *ev {
            // An expiry opens a window, its notification closes it.
            Event::IrqEntry {
                irq: Irq::Hrtimer(HrTimer::Posix { due, .. }),
                len,
                ..
            } => {
                let was = self.open.is_empty();
                self.on_expiry(due, cx.now, len);
                return self.open.is_empty() != was;
            }
            Event::Mark {
                task,
                mark: Mark::PosixSample { due },
            } => {
                let was = self.open.is_empty();
                let steal = self.gaps.within(due, cx.now, cx.cpu);
                self.on_sample(due, cx.now, task, steal, cx.tasks, cx.sched.name());
                return self.open.is_empty() != was;
            }
            // A thread the test creates is the test's too (its notify thread).
            Event::Fork { parent, child } if self.owns(parent) => self.adopt(child),
            Event::SchedWakeup { task, .. } if self.watching(task) => {
                if let Some(how) = cx.sched.placement(task) {
                    self.on_placed(task, how);
                }
            }
            Event::IrqEntry { len, .. } => self.on_irq(len),
            Event::Runtime { task, ns, .. } if task != 0 => self.on_run(task, ns),
            Event::SchedTime { ns } => self.on_sched(ns),
            Event::TimerOverrun => self.on_overrun(),
            Event::HostGap { cpu, start, ns } => self.gaps.push(cpu, start, ns),
            Event::Mark {
                task,
                mark: Mark::PosixTask,
            } => self.adopt(task),
            _ => {}
        }
        false
    }

    fn finish(self: Box<Self>, _tasks: &[Task], r: &mut RunResult) {
        r.counters.insert("missed_timer_events".into(), self.stream.missed);
        r.streams.push(self.stream);
    }
}

impl PosixTracker {
    /// The stream `name` of a run starting at `epoch`, its timer notifying by `sigev`.
    pub fn new(name: &str, sigev: &str, epoch: Nanos) -> Self {
        PosixTracker {
            stream: Stream::new(name, format!("timer_create({sigev}) expiry to the notify function")),
            open: Vec::new(),
            mine: Vec::new(),
            placed: Vec::new(),
            ran: Vec::new(),
            gaps: Default::default(),
            epoch,
        }
    }

    /// Task `t` belongs to the test.
    fn adopt(&mut self, t: TaskId) {
        if self.mine.len() <= t {
            self.mine.resize(t + 1, false);
        }
        self.mine[t] = true;
    }

    /// Does task `t` belong to the test?
    fn owns(&self, t: TaskId) -> bool {
        self.mine.get(t).copied().unwrap_or(false)
    }

    /// The timer due at `due` expired; its interrupt ran at `delivered` for `h` ns.
    #[cold]
    #[inline(never)]
    fn on_expiry(&mut self, due: Nanos, delivered: Nanos, h: Nanos) {
        for w in &mut self.open {
            w.handler += h;
        }
        self.open.push(Window {
            due,
            irq_delay: delivered.saturating_sub(due),
            handler: h,
            sched: 0,
            wakee: 0,
            from: self.ran.len(),
        });
    }

    /// An expiry found the previous signal still queued.
    #[cold]
    #[inline(never)]
    fn on_overrun(&mut self) {
        self.stream.missed += 1;
    }

    fn on_irq(&mut self, h: Nanos) {
        for w in &mut self.open {
            w.handler += h;
        }
    }

    fn on_run(&mut self, task: TaskId, d: Nanos) {
        if self.open.is_empty() {
            return;
        }
        if self.owns(task) {
            for w in &mut self.open {
                w.wakee += d;
            }
        } else {
            self.ran.push((task, d));
        }
    }

    fn on_sched(&mut self, d: Nanos) {
        for w in &mut self.open {
            w.sched += d;
        }
    }

    /// Is anything being measured right now (worth asking the scheduler to describe)?
    fn watching(&self, t: TaskId) -> bool {
        !self.open.is_empty() && self.owns(t)
    }

    /// The scheduler placed test task `t` so (on its wakeup or creation).
    #[cold]
    #[inline(never)]
    fn on_placed(&mut self, t: TaskId, how: Placement) {
        if self.placed.len() <= t {
            self.placed.resize(t + 1, None);
        }
        self.placed[t] = Some(how);
    }

    /// The notify function for the expiry due at `due` runs now, in task `cur`, `steal` ns of
    /// its window lost to host gaps.
    #[cold]
    #[inline(never)]
    fn on_sample(&mut self, due: Nanos, now: Nanos, cur: TaskId, steal: Nanos, tasks: &[Task], sched: &str) {
        let Some(i) = self.open.iter().position(|w| w.due == due) else {
            return;
        };
        let w = self.open.remove(i);
        let latency = now - due;
        self.stream.hist.record(latency);
        let enters =
            self.stream.worst.len() < KEEP_WORST || self.stream.worst.last().is_some_and(|s| s.latency_ns < latency);
        // Each task's CPU time inside the window, in the order the tasks first ran.
        let mut slices: Vec<(TaskId, Nanos)> = Vec::new();
        if enters {
            for &(task, d) in &self.ran[w.from..] {
                super::tally(&mut slices, task, d);
            }
        }
        if self.open.is_empty() {
            self.ran.clear();
        }
        if !enters {
            return;
        }
        slices.sort_by_key(|(_, ns)| std::cmp::Reverse(*ns));
        let ran_ahead: Nanos = slices.iter().map(|(_, ns)| ns).sum();
        let placed = match self.placed.get(cur) {
            Some(Some(how)) => format!("{} placed: {how}; ", tasks[cur].label()),
            _ => String::new(),
        };
        let ahead: Vec<String> = slices
            .iter()
            .take(6)
            .map(|&(t, ns)| format!("{} {:.3} ms", tasks[t].label(), ns as f64 / 1e6))
            .collect();
        let mut note = format!(
            "model ({sched}): {placed}{} task(s) ran {:.3} ms ahead of it: {}",
            slices.len(),
            ran_ahead as f64 / 1e6,
            if ahead.is_empty() {
                "none".into()
            } else {
                ahead.join(", ")
            }
        );
        if steal > 0 {
            note += &super::periodic::host_gaps_note(steal);
        }
        let attribution = Attribution {
            irq_off_ns: w.irq_delay,
            handler_ns: w.handler,
            preempt_wait_ns: 0,
            ran_ahead_ns: ran_ahead,
            sched_ns: w.sched,
            wakee_kernel_ns: w.wakee,
            blocked_ns: 0,
            cause: None,
            tasks: super::task_slices(tasks, &slices),
            irqs: Vec::new(),
            steal_ns: steal,
            note,
            cgroup: None,
        };
        let mut tag = BTreeMap::new();
        tag.insert("thread".into(), tasks[cur].label());
        self.stream.offer_worst(
            Sample {
                at_ns: due - self.epoch,
                latency_ns: latency,
                tag,
                attribution,
            },
            KEEP_WORST,
        );
    }
}
