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
//!
//! The note also says what the sample waited for, the largest of: the timer's delivery
//! (expiry to wakeup), a sleeping lock it blocked on (PREEMPT_RT: the lock and its owner,
//! whose priority the rt_mutex raised), hard-interrupt handlers that ran in the window, a
//! higher-priority task, or another task's kernel stretch that could not be preempted (its
//! function and the spinlock it held), or a fair task in user space ahead of an RT wakee
//! (RT throttling lets one run there, or, on another CPU, the reschedule IPI's delay), or,
//! in a run replaying the machine's host noise, the host gaps between the expiry and the
//! sample (on CPU 0, which takes the interrupts, or on the task's CPU: `steal_ns`), which
//! the note always names when there were any.

use super::Mark;
use crate::kernel::lock::Lock;
use crate::kernel::task::{Policy, Task, TaskId};
use crate::kernel::tracepoint::{kind, Cx, Event, Sink};
use latlab_core::{Attribution, Nanos, RunResult, Sample, Stream};
use std::collections::BTreeMap;

/// Worst samples kept per stream.
const KEEP_WORST: usize = 10;

/// The kinds it takes always: a task's wakeups and the program's marks.
const ALWAYS: u32 = kind::MARK | kind::SCHED_WAKING | kind::HOST_GAP;
/// The kinds it takes while a window is open: what ran ahead of the woken task, the
/// interrupts taken, a sleeping lock it blocked on.
const IN_WINDOW: u32 = kind::RUNTIME | kind::SCHED_TIME | kind::IRQ_ENTRY | kind::PI_BLOCK;

/// Another task's CPU time in one kernel function holding one lock (or none).
type Stretch = (TaskId, &'static str, Option<Lock>);

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
    /// The same by task, function and lock held.
    stretches: Vec<(Stretch, Nanos)>,
    /// Hard-interrupt handlers' time.
    handlers: Nanos,
    /// The sleeping lock it blocked on and the lock's owner then, and when.
    pi: Option<(Lock, TaskId, Nanos)>,
}

/// The periodic steps' streams.
pub struct PeriodicTracker {
    streams: Vec<Stream>,
    /// Tasks waiting in periodic steps (whose wakeups open windows), by task id.
    measured: Vec<bool>,
    open: Vec<Window>,
    /// The replayed host gaps lately.
    gaps: super::HostGapLog,
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
            gaps: Default::default(),
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
            stretches: Vec::new(),
            handlers: 0,
            pi: None,
        });
    }

    fn on_run(&mut self, task: TaskId, ns: Nanos, func: &'static str, lock: Option<Lock>) {
        for w in &mut self.open {
            if w.task == task {
                w.own += ns;
            } else if task != 0 {
                super::tally(&mut w.others, task, ns);
                super::tally(&mut w.stretches, (task, func, lock), ns);
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
        let mut attribution = Attribution {
            steal_ns: self.gaps.within(due, cx.now, cx.cpu),
            ..Default::default()
        };
        let steal = attribution.steal_ns;
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
                attribution.handler_ns = w.handlers;
                attribution.ran_ahead_ns = ahead;
                attribution.sched_ns = w.sched;
                attribution.wakee_kernel_ns = w.own;
                attribution.tasks = super::task_slices(cx.tasks, &w.others);
                format!(
                    "model ({}): {} woken {:.3} ms after the expiry; waited for: {}; {} task(s) ran {:.3} ms before it: {}",
                    cx.sched.name(),
                    t.label(),
                    (w.woken - due) as f64 / 1e6,
                    waited_for(&w, due, steal, cx, t),
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
        if steal > 0 {
            attribution.note += &host_gaps_note(steal);
        }
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

/// The note's words for `steal` ns of replayed host gaps in a sample's window.
pub(super) fn host_gaps_note(steal: Nanos) -> String {
    format!(
        "; host gap (the machine's noise, replayed) {:.3} ms in the window",
        steal as f64 / 1e6
    )
}

/// What window `w` of task `t` (its expiry due at `due`, its sample now, `steal` ns of it
/// in host gaps) waited for most: one phrase for the note.
fn waited_for(w: &Window, due: Nanos, steal: Nanos, cx: &Cx, t: &Task) -> String {
    let ms = |ns: Nanos| ns as f64 / 1e6;
    // A host gap on CPU 0 holds the timer's interrupt: the delivery's share not the gaps'.
    let mut best = (
        (w.woken - due).saturating_sub(steal),
        format!("the timer's delivery {:.3} ms", ms(w.woken - due)),
    );
    let mut offer = |ns: Nanos, what: String| {
        if ns > best.0 {
            best = (ns, what);
        }
    };
    if let Some((lock, owner, at)) = w.pi {
        let o = &cx.tasks[owner];
        offer(
            cx.now.saturating_sub(at),
            format!(
                "a PI chain: sleeping lock {lock} owned by {} (boosted), {:.3} ms",
                o.label(),
                ms(cx.now.saturating_sub(at))
            ),
        );
    }
    offer(
        w.handlers,
        format!("hard-IRQ handlers (not threaded) {:.3} ms", ms(w.handlers)),
    );
    offer(steal, format!("a host gap {:.3} ms", ms(steal)));
    if let Some(&((o, func, lock), ns)) = w.stretches.iter().max_by_key(|(_, ns)| *ns) {
        let other = &cx.tasks[o];
        let rt = |x: &Task| x.policy != Policy::Other;
        let what = if rt(other) && other.rt_priority >= t.rt_priority {
            format!("higher-priority {} {:.3} ms", other.label(), ms(ns))
        } else if let Some(l) = lock {
            format!(
                "{l} held by {} in {func}, not preemptible, {:.3} ms",
                other.label(),
                ms(ns)
            )
        } else if func == "user" && rt(t) && !rt(other) {
            format!(
                "{} in user space {:.3} ms (RT throttling, or a reschedule IPI on its way)",
                other.label(),
                ms(ns)
            )
        } else {
            format!("{} in {func}, not preemptible, {:.3} ms", other.label(), ms(ns))
        };
        offer(ns, what);
    }
    best.1
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
            Event::Runtime { task, ns, func, lock } => self.on_run(task, ns, func, lock),
            Event::IrqEntry { len, .. } => {
                for w in &mut self.open {
                    w.handlers += len;
                }
            }
            Event::PiBlock { task, lock, owner } => {
                if let Some(w) = self.open.iter_mut().find(|w| w.task == task) {
                    w.pi = Some((lock, owner, cx.now));
                }
            }
            Event::SchedTime { ns } => {
                for w in &mut self.open {
                    w.sched += ns;
                }
            }
            Event::HostGap { cpu, start, ns } => self.gaps.push(cpu, start, ns),
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
