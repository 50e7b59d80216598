//! Measurement tasks as the seeds ran them, and the bookkeeping that explains each sample.
//!
//! - [`realfeel`]: Andrew Morton's realfeel2 (seed 000) — RTC interrupts at a set rate waking
//!   a SCHED_FIFO reader of `/dev/rtc`; a sample is the time from the interrupt to the reader
//!   running in user space.
//! - [`preempt_off`]: the voluntary-preempt patch's tracer (seed 003): the longest
//!   preemption-off stretch of any task.

pub mod periodic;
pub mod posix_timer;
pub mod preempt_off;
pub mod realfeel;
pub mod recorder;
pub mod write_latency;

use crate::kernel::task::{Task, TaskId};
use crate::kernel::tracepoint::{Cx, Event, Sink};
use crate::SimConfig;
use latlab_core::{Nanos, RunResult, TaskSlice};
use std::collections::VecDeque;

pub use crate::kernel::tracepoint::Mark;

/// A run's measurements as the one sink the kernel calls (the kernel's sink type, so each
/// emitting site inlines the measurements that take its kind): each event goes to every
/// measurement that takes its kind, in the order they finish into the result (the order of
/// its streams). A measurement whose type never takes the event's kind ([`Sink::interest`])
/// costs nothing at that site; the others, one test of the kinds they take now.
///
/// `PERIODIC`: whether the run may have periodic streams ([`Sinks::with_periodic`]). A run
/// without (every built-in experiment's) runs `Sinks<false>`, whose emitting sites hold no
/// code of the periodic measurement: it takes the CPU-time events, the hottest, and its
/// test at each of their sites cost such a run 1.8 % of its instructions (callgrind,
/// seed 000's short run).
pub struct Sinks<const PERIODIC: bool> {
    posix: Option<Sub<posix_timer::PosixTracker>>,
    periodic: Option<Sub<periodic::PeriodicTracker>>,
    write: Sub<write_latency::WriteTracker>,
    realfeel: Sub<realfeel::Tracker>,
    preempt_off: Option<Sub<preempt_off::PreemptOffTracer>>,
    recorder: Option<Sub<recorder::Recorder>>,
}

impl<const PERIODIC: bool> Sinks<PERIODIC> {
    /// The measurements `cfg` asks for, their clocks starting at `epoch`.
    pub fn new(cfg: &SimConfig, epoch: Nanos) -> Self {
        let posix = cfg.posix_timer.map(|p| {
            Sub::new(posix_timer::PosixTracker::new(
                p.notify.stream(),
                p.notify.sigev(),
                epoch,
            ))
        });
        Sinks {
            posix,
            periodic: None,
            write: Sub::new(write_latency::WriteTracker::new(epoch, cfg.keep_records)),
            realfeel: Sub::new(realfeel::Tracker::new(epoch, &cfg.variant)),
            preempt_off: cfg
                .preempt_off
                .map(|w| Sub::new(preempt_off::PreemptOffTracer::new(w, &cfg.variant))),
            recorder: cfg.record_events.map(|n| {
                let posix = cfg.posix_timer.map(|p| p.notify.stream());
                Sub::new(recorder::Recorder::new(epoch, n, posix))
            }),
        }
    }
}

impl Sinks<true> {
    /// With the periodic tasks' streams `names` (none: no periodic measurement), their
    /// clocks starting at `epoch`.
    pub fn with_periodic(self, names: &[String], epoch: Nanos) -> Self {
        Sinks {
            periodic: (!names.is_empty()).then(|| Sub::new(periodic::PeriodicTracker::new(names, epoch))),
            ..self
        }
    }
}

impl<const PERIODIC: bool> Sink for Sinks<PERIODIC> {
    #[inline]
    fn kinds(&self) -> u32 {
        self.posix.as_ref().map_or(0, |s| s.kinds)
            | self.periodic.as_ref().map_or(0, |s| s.kinds)
            | self.write.kinds
            | self.realfeel.kinds
            | self.preempt_off.as_ref().map_or(0, |s| s.kinds)
            | self.recorder.as_ref().map_or(0, |s| s.kinds)
    }

    #[inline(always)]
    fn event(&mut self, cx: &Cx, ev: &Event) -> bool {
        let k = ev.kind();
        Sub::event_opt(&mut self.posix, cx, ev, k)
            | (PERIODIC && Sub::event_opt(&mut self.periodic, cx, ev, k))
            | self.write.event(cx, ev, k)
            | self.realfeel.event(cx, ev, k)
            | Sub::event_opt(&mut self.preempt_off, cx, ev, k)
            | Sub::event_opt(&mut self.recorder, cx, ev, k)
    }

    fn finish(self: Box<Self>, tasks: &[Task], r: &mut RunResult) {
        let Sinks {
            posix,
            periodic,
            write,
            realfeel,
            preempt_off,
            recorder,
        } = *self;
        if let Some(s) = posix {
            Box::new(s.sink).finish(tasks, r);
        }
        if let Some(s) = periodic {
            Box::new(s.sink).finish(tasks, r);
        }
        Box::new(write.sink).finish(tasks, r);
        Box::new(realfeel.sink).finish(tasks, r);
        if let Some(s) = preempt_off {
            Box::new(s.sink).finish(tasks, r);
        }
        if let Some(s) = recorder {
            Box::new(s.sink).finish(tasks, r);
        }
    }
}

/// One measurement of [`Sinks`] with the kinds it takes now.
struct Sub<S> {
    kinds: u32,
    sink: S,
}

impl<S: Sink> Sub<S> {
    fn new(sink: S) -> Sub<S> {
        let kinds = sink.kinds();
        debug_assert_eq!(
            kinds & !S::interest(),
            0,
            "it takes a kind its type said it never takes"
        );
        Sub { kinds, sink }
    }

    /// Give it `ev` (of kind `k`) if it takes that kind; true when the kinds it takes may
    /// have changed.
    #[inline(always)]
    fn event(&mut self, cx: &Cx, ev: &Event, k: u32) -> bool {
        if S::interest() & k == 0 || self.kinds & k == 0 {
            return false;
        }
        if !self.sink.event(cx, ev) {
            debug_assert_eq!(
                self.sink.kinds(),
                self.kinds,
                "its kinds changed at an event that said not"
            );
            return false;
        }
        self.kinds = self.sink.kinds();
        debug_assert_eq!(
            self.kinds & !S::interest(),
            0,
            "it takes a kind its type said it never takes"
        );
        true
    }

    /// [`Sub::event`] of a measurement the run may not have.
    #[inline(always)]
    fn event_opt(s: &mut Option<Sub<S>>, cx: &Cx, ev: &Event, k: u32) -> bool {
        if S::interest() & k == 0 {
            return false;
        }
        match s {
            Some(s) => s.event(cx, ev, k),
            None => false,
        }
    }
}

/// Add `d` to `k`'s tally in `v` (a handful of entries: a linear search), keeping the order
/// in which the keys first came.
pub(crate) fn tally<K: PartialEq>(v: &mut Vec<(K, Nanos)>, k: K, d: Nanos) {
    match v.iter_mut().find(|(x, _)| *x == k) {
        Some((_, n)) => *n += d,
        None => v.push((k, d)),
    }
}

/// Tasks' CPU times as the result's `TaskSlice`s, named as the tasks are.
pub(crate) fn task_slices(tasks: &[Task], times: &[(TaskId, Nanos)]) -> Vec<TaskSlice> {
    times
        .iter()
        .map(|&(t, ns)| TaskSlice {
            comm: tasks[t].comm.clone(),
            pid: tasks[t].pid,
            ns,
        })
        .collect()
}

/// The replayed host gaps (`Event::HostGap`, cpu/host_gap.rs) a measurement saw lately, to
/// tell how much of a sample's window the machine's noise took (`Attribution::steal_ns`).
/// Empty in a run that does not replay the noise.
#[derive(Default)]
pub(crate) struct HostGapLog {
    /// Each CPU's gaps, (start, end) in time order (a CPU's gap follows the one before);
    /// those that ended more than [`HOST_GAP_HORIZON`] before its latest began are dropped.
    by_cpu: Vec<VecDeque<(Nanos, Nanos)>>,
}

/// How far back a sample's window is looked for host gaps.
const HOST_GAP_HORIZON: Nanos = 1_000_000_000;

impl HostGapLog {
    /// CPU `cpu` stands still from `start` for `ns`.
    #[cold]
    #[inline(never)]
    pub(crate) fn push(&mut self, cpu: usize, start: Nanos, ns: Nanos) {
        if self.by_cpu.len() <= cpu {
            self.by_cpu.resize_with(cpu + 1, VecDeque::new);
        }
        let gaps = &mut self.by_cpu[cpu];
        while gaps.front().is_some_and(|g| g.1 + HOST_GAP_HORIZON < start) {
            gaps.pop_front();
        }
        gaps.push_back((start, start + ns));
    }

    /// The time in `[from, to]` that CPU 0 (which takes the interrupts) or CPU `cpu` (where
    /// the sample ran) stood still in a host gap, each instant counted once.
    pub(crate) fn within(&self, from: Nanos, to: Nanos, cpu: usize) -> Nanos {
        let spans: Vec<(Nanos, Nanos)> = [0, cpu]
            .iter()
            .take(if cpu == 0 { 1 } else { 2 })
            .filter_map(|&c| self.by_cpu.get(c))
            // From the latest back to the first that ended before the window.
            .flat_map(|gaps| gaps.iter().rev().take_while(|g| g.1 > from).copied())
            .collect();
        latlab_core::covered(&spans, from, to)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_windows_host_gaps_are_those_of_cpu_0_and_its_own_counted_once() {
        let mut log = HostGapLog::default();
        log.push(0, 100, 50); // 100..150
        log.push(2, 120, 60); // 120..180, overlapping CPU 0's
        log.push(1, 130, 1_000); // another CPU's: not this sample's
        log.push(2, 400, 100); // 400..500, half inside
        assert_eq!(log.within(90, 450, 0), 50, "CPU 0's own");
        assert_eq!(log.within(90, 450, 2), 80 + 50);
        assert_eq!(log.within(90, 450, 3), 50, "CPU 0's only");
        assert_eq!(log.within(200, 300, 2), 0);
        // A gap long past is forgotten.
        log.push(2, 3 * HOST_GAP_HORIZON, 10);
        assert_eq!(log.within(0, 600, 2), 50);
    }
}
