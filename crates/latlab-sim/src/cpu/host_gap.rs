//! Replay of the machine's host noise (`SimConfig::replay_noise`): the gaps in a CPU's
//! execution that are not the kernel's (the hypervisor running something else on the vCPU's
//! core, an SMI), as `latlab probe calibrate` measured them (`[host.noise]`, turned into a
//! [`GapReplay`] by `machine::Noise::replay`). Off by default; a run without it never
//! reaches this code but for one test of an `Option` per turn of the CPU loop.
//!
//! On each CPU the gaps arrive as a Poisson process at that CPU's measured rate, each
//! gap's length drawn from the measured distribution, both from the run's own ChaCha stream
//! (`RngStream::HostNoise`: a run with the same seed replays the same gaps, and the
//! workloads' draws do not move). A gap stops its CPU and no other: it is time the CPU owes
//! before its context goes on, as schedule()'s and the switch's time is (`Cpu::overhead`,
//! of which `Cpu::gap` is the host's share, run first), so the eager and the lazy loop step
//! it as they step that time, and a CPU in a gap takes no interrupt (`Kernel::irqs_off`:
//! CPU 0's interrupts wait to its end). A reschedule asked of a CPU in a gap (a wakeup's
//! IPI) is acted on when the gap ends (`Ev::GapEnd`: the vCPU running again takes the
//! interrupts that came meanwhile). A gap arriving while its CPU is still in one follows
//! it.
//!
//! Left out: every CPU's `scheduler_tick` still comes with CPU 0's tick (the model fires
//! them together), so a gap on another CPU delays no tick of its own; CPU 0's hard
//! interrupt handlers hold every CPU still, a gapped one's gap too; a Hyper-Threading
//! sibling in a gap counts as busy for its sibling's speed.

use super::{Ev, Kernel};
use crate::engine::Rng;
use crate::kernel::tracepoint::{self, Event};
use crate::machine::GapReplay;
use latlab_core::Nanos;
use rand::Rng as _;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// The replay's state: each CPU's next gap, and the draws.
pub(super) struct HostGaps {
    replay: GapReplay,
    rng: Rng,
    /// Each CPU's next gap's arrival, earliest first (the lowest CPU on a tie); a CPU of
    /// rate 0 has none.
    next: BinaryHeap<Reverse<(Nanos, usize)>>,
}

impl HostGaps {
    /// For `cpus` CPUs from `now`: each CPU's first arrival drawn, in CPU order.
    fn new(replay: GapReplay, rng: Rng, cpus: usize, now: Nanos) -> Self {
        let mut h = HostGaps {
            replay,
            rng,
            next: BinaryHeap::with_capacity(cpus),
        };
        for c in 0..cpus {
            h.arrival_after(c, now);
        }
        h
    }

    /// Draw CPU `c`'s next arrival after `now`: an exponential wait at its rate.
    fn arrival_after(&mut self, c: usize, now: Nanos) {
        let per_ns = self.replay.rate(c) / 1e9;
        if per_ns <= 0.0 {
            return;
        }
        let u: f64 = self.rng.gen();
        let wait = -(1.0 - u).ln() / per_ns;
        let at = now.saturating_add(wait.ceil().max(1.0) as Nanos);
        self.next.push(Reverse((at, c)));
    }

    /// When the next gap arrives (None: never).
    fn first(&self) -> Option<Nanos> {
        self.next.peek().map(|Reverse((at, _))| *at)
    }

    /// The gap due first: its CPU and its length, drawn, and that CPU's next arrival after
    /// `now`.
    fn arrive(&mut self, now: Nanos) -> (usize, Nanos) {
        let Reverse((_, c)) = self.next.pop().expect("a gap is due");
        let u: f64 = self.rng.gen();
        let len = (self.replay.length_at(u).round() as Nanos).max(1);
        self.arrival_after(c, now);
        (c, len)
    }
}

impl<S: tracepoint::Sink> Kernel<S> {
    /// Replay `replay` from now on, its draws from `rng`.
    pub fn replay_host_noise(&mut self, replay: GapReplay, rng: Rng) {
        self.host_gaps = Some(Box::new(HostGaps::new(replay, rng, self.cpus.len(), self.now)));
    }

    /// Start the next host gap if it is due before the loop's next step: the boundary `seg`
    /// from now (None: no CPU has one), and the queue's next event when CPU 0 takes
    /// interrupts. True when it did (the loop then looks again). A tie goes to the loop's
    /// step.
    #[inline(never)]
    pub(super) fn host_gap_first(&mut self, seg: Option<Nanos>) -> bool {
        let Some(at) = self.host_gaps.as_ref().and_then(|h| h.first()) else {
            return false;
        };
        if seg.is_some_and(|d| self.now + d <= at) {
            return false;
        }
        if self.q.peek_time().is_some_and(|t| t <= at) && !self.cpu0_irqs_off_now() {
            return false;
        }
        let d = at.saturating_sub(self.now);
        match self.lazy.is_some() {
            true => self.pass(d),
            false => self.advance(d),
        }
        let (c, len) = self.host_gaps.as_mut().expect("replaying").arrive(self.now);
        self.start_host_gap(c, len);
        true
    }

    /// CPU 0's interrupts are off now (its context settled first when stepped lazily).
    fn cpu0_irqs_off_now(&mut self) -> bool {
        match self.lazy.is_some() {
            true => self.cpu0_irqs_off(),
            false => self.irqs_off(0),
        }
    }

    /// CPU `c` stands still for `len` ns more, after any gap it is still in.
    fn start_host_gap(&mut self, c: usize, len: Nanos) {
        self.touch(c);
        let cpu = &mut self.cpus[c];
        let start = self.now + cpu.gap;
        if cpu.gap == 0 {
            // (A gap that follows another is found at the first one's end, below.)
            self.q.schedule(start + len, Ev::GapEnd(c));
        }
        cpu.gap += len;
        cpu.overhead += len;
        self.stats.host_gaps += 1;
        let me = std::mem::replace(&mut self.cpu, c);
        trace_event!(self, HOST_GAP, Event::HostGap { cpu: c, start, ns: len });
        self.cpu = me;
    }

    /// `d` ns of CPU `self.cpu`'s time pass while it owes a host gap: the gap's first,
    /// then schedule()'s time (a Hyper-Threading sibling's boundary is the gap's end, so it
    /// passes no further: the rest is at full speed).
    #[inline(never)]
    pub(super) fn pass_host_gap<const TRACE: bool>(&mut self, d: Nanos) {
        let c = &mut self.cpus[self.cpu];
        let g = d.min(c.gap);
        c.gap -= g;
        c.overhead -= g;
        self.stats.host_gap_ns += g;
        let x = d - g;
        if x > 0 {
            c.overhead -= x.min(c.overhead);
            self.stats.sched_ns += x;
            if TRACE {
                trace_event!(self, SCHED_TIME, Event::SchedTime { ns: x });
            }
        }
    }

    /// CPU `c` runs again after a gap (`Ev::GapEnd`): a reschedule asked of it meanwhile is
    /// acted on at the return from the interrupt that asked it, now. A CPU still in a gap
    /// (one that followed, or CPU 0's handlers held it still meanwhile) is looked at again
    /// at its end.
    pub(super) fn host_gap_end(&mut self, c: usize) {
        self.cpu = c;
        self.touch(c);
        let left = self.cpus[c].gap;
        if left > 0 {
            self.q.schedule(self.now + left, Ev::GapEnd(c));
            return;
        }
        self.maybe_preempt_after_irq();
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::super::tests::{kernel, machine, percpu_eevdf_kernel, periodic, variant_with};
    use super::*;
    use crate::kernel::task::{Policy, Task};
    use crate::kernel::tracepoint::{kind, Cx, Sink};
    use crate::kernel::Irq;
    use crate::machine::MachineProfile;
    use crate::variant::{PreemptModel, SchedClass, TimerSubsystem};
    use crate::workload::TaskSpec;
    use std::cell::RefCell;
    use std::rc::Rc;

    /// A replay of `per_s` gaps a second on every CPU, `lo_us` to `hi_us` long.
    pub(in crate::cpu) fn replay(per_s: f64, lo_us: f64, hi_us: f64) -> GapReplay {
        let mid = (lo_us * hi_us).sqrt() * 1e3;
        GapReplay {
            rate_per_s: Vec::new(),
            mean_per_s: per_s,
            quantiles: [
                (0.0, lo_us * 1e3),
                (0.5, mid),
                (0.9, mid),
                (0.99, hi_us * 1e3),
                (0.999, hi_us * 1e3),
                (1.0, hi_us * 1e3),
            ],
        }
    }

    /// Every event: (time, CPU, the event).
    type Events = Rc<RefCell<Vec<(Nanos, usize, Event)>>>;

    /// A sink keeping [`Events`].
    struct Log(Events);

    impl Sink for Log {
        fn kinds(&self) -> u32 {
            kind::ALL & !(kind::RUNTIME | kind::SCHED_TIME)
        }
        fn event(&mut self, cx: &Cx, ev: &Event) -> bool {
            self.0.borrow_mut().push((cx.now, cx.cpu, *ev));
            false
        }
        fn finish(self: Box<Self>, _tasks: &[Task], _r: &mut latlab_core::RunResult) {}
    }

    /// A 6.x-style kernel (EEVDF runqueue per CPU, hrtimers) on `cpus` CPUs, logging its
    /// events, with a hog pinned to each CPU.
    fn smp(cpus: u32) -> (Kernel, Events) {
        let m = MachineProfile { cpus, ..machine() };
        let mut v = variant_with(SchedClass::Eevdf, PreemptModel::Full, &[]);
        v.timer = TimerSubsystem::Hrtimer;
        let mut k = percpu_eevdf_kernel(m, v);
        let log = Rc::new(RefCell::new(Vec::new()));
        k.tp.attach(Box::new(Log(log.clone())));
        for c in 0..cpus {
            let hog = TaskSpec {
                affinity: Some(vec![c]),
                ..TaskSpec::user("hog", periodic(u64::MAX / 4, 0))
            };
            k.spawn(hog, None);
        }
        (k, log)
    }

    /// Replay one gap of `len` ns on CPU `cpu` at `at`, and no other.
    fn one_gap(k: &mut Kernel, cpu: usize, at: Nanos, len: Nanos) {
        let us = len as f64 / 1e3;
        k.replay_host_noise(
            replay(0.0, us, us),
            crate::engine::rng_for(1, crate::engine::RngStream::HostNoise),
        );
        let h = k.host_gaps.as_mut().unwrap();
        assert!(h.next.is_empty(), "rate 0: no arrival drawn");
        h.next.push(Reverse((at, cpu)));
    }

    /// The CPU time of the task named `comm` pinned to CPU `cpu`.
    fn cpu_ns(k: &Kernel, comm: &str, cpu: usize) -> Nanos {
        let t = k
            .tasks
            .iter()
            .find(|t| t.comm == comm && usize::from(t.cpu) == cpu)
            .unwrap();
        t.cpu_ns
    }

    #[test]
    fn a_gap_stops_its_cpu_and_no_other() {
        let run = |gap: bool| {
            let (mut k, _) = smp(2);
            if gap {
                one_gap(&mut k, 1, 20_000_000, 7_000_000);
            }
            k.run_until(60_000_000, |_| {});
            (cpu_ns(&k, "hog", 0), cpu_ns(&k, "hog", 1), k.stats.clone())
        };
        let (quiet0, quiet1, _) = run(false);
        let (noisy0, noisy1, stats) = run(true);
        assert_eq!(noisy0, quiet0, "CPU 0's hog runs on through CPU 1's gap");
        assert_eq!(noisy1 + 7_000_000, quiet1, "CPU 1's hog loses the gap");
        assert_eq!((stats.host_gaps, stats.host_gap_ns), (1, 7_000_000));
    }

    #[test]
    fn an_interrupt_due_in_a_gap_of_cpu_0_is_taken_at_its_end() {
        let mut k = kernel(variant_with(SchedClass::Goodness24, PreemptModel::None, &[]));
        let log = Rc::new(RefCell::new(Vec::new()));
        k.tp.attach(Box::new(Log(log.clone())));
        k.spawn(TaskSpec::user("hog", periodic(u64::MAX / 4, 0)), None);
        // HZ 100: the tick is raised at 10 ms, inside a gap of 9 to 12 ms.
        one_gap(&mut k, 0, 9_000_000, 3_000_000);
        k.run_until(15_000_000, |_| {});
        let ticks: Vec<(Nanos, Nanos)> = log
            .borrow()
            .iter()
            .filter_map(|&(now, _, ev)| match ev {
                Event::IrqEntry {
                    irq: Irq::Tick, raised, ..
                } => Some((raised, now)),
                _ => None,
            })
            .collect();
        assert_eq!(ticks[0], (10_000_000, 12_000_000));
        let gap = log
            .borrow()
            .iter()
            .find(|e| matches!(e.2, Event::HostGap { .. }))
            .map(|e| e.2);
        assert!(
            matches!(
                gap,
                Some(Event::HostGap {
                    cpu: 0,
                    start: 9_000_000,
                    ns: 3_000_000
                })
            ),
            "{gap:?}"
        );
    }

    #[test]
    fn a_wakeup_for_a_cpu_in_a_gap_runs_when_the_gap_ends() {
        let (mut k, log) = smp(2);
        // An RT task on CPU 1 waking every 2 ms, beside CPU 1's hog.
        let rt = TaskSpec {
            policy: Policy::Fifo,
            rt_priority: 90,
            affinity: Some(vec![1]),
            ..TaskSpec::user("rt", periodic(10_000, 2_000_000))
        };
        k.spawn(rt, None);
        let rt = k.tasks.iter().position(|t| t.comm == "rt").unwrap();
        // A gap of 5 ms on CPU 1 holds two of its wakeups.
        let (from, to) = (21_000_000, 26_000_000);
        one_gap(&mut k, 1, from, to - from);
        k.run_until(40_000_000, |_| {});
        let log = log.borrow();
        let woken = log
            .iter()
            .filter(|e| matches!(e.2, Event::SchedWaking { task } if task == rt))
            .map(|e| e.0)
            .find(|&t| t > from)
            .unwrap();
        assert!(woken < to, "woken at {woken}, inside the gap");
        let ran = log
            .iter()
            .filter(|e| matches!(e.2, Event::SchedSwitch { next, .. } if next == rt))
            .map(|e| e.0)
            .find(|&t| t > from)
            .unwrap();
        // CPU 0's handlers meanwhile held every CPU still, the gap too.
        let held: Nanos = log
            .iter()
            .filter(|e| (from..ran).contains(&e.0))
            .filter_map(|e| match e.2 {
                Event::IrqEntry { len, .. } => Some(len),
                _ => None,
            })
            .sum();
        assert!(held > 0);
        assert_eq!(ran, to + held, "it runs the moment CPU 1 does again");
    }
}
