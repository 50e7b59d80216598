//! Lazy stepping of a machine of several CPUs at full speed each (no Hyper-Threading
//! siblings slowing each other): the CPU loop's cost per event does not grow with the CPUs.
//!
//! The eager loop ([`Kernel::run_until`] on one CPU or on HT siblings) brings every CPU's
//! context up to the present at every event. Here a CPU's context is exact only up to its
//! `at`, in *virtual time* ([`Kernel::vnow`]: simulated time less the time every CPU stood
//! still while CPU 0 ran a hard interrupt handler, `Stats::irq_ns`, which is what the
//! eager loop does too). Whoever reads or changes a CPU's context settles it first
//! ([`Kernel::touch`]): its boundary, an interrupt, IPI or wakeup aimed at it, a scheduler
//! decision about its current task, the end of [`Kernel::run_until`]. Between two touches a
//! context runs linearly (a burst's or a step's time left falls by the time passed, its
//! boundary stays where it was), so settling it in one advance leaves it as the eager
//! loop's many advances would, and the next boundary over CPUs comes from a heap keyed by
//! each CPU's boundary (recomputed only for the CPUs touched since), lowest CPU first on a
//! tie as the eager scan takes them. The CPUs whose current task has a reschedule flag set
//! are kept in a set, so the checks at an interrupt's return and after a boundary visit
//! those alone, in increasing order, as the eager loop's visits of every CPU find them.
//!
//! CPU time reaches the sinks (`Event::Runtime`, `Event::SchedTime`) split as the eager
//! loop splits it: while a sink takes those kinds (a measurement's window is open) every
//! CPU is advanced at every event, as eagerly; when a sink starts taking them, the CPUs'
//! time before that moment is settled first without tracepoints (a sink took none of it).

use super::Kernel;
use crate::kernel::cpumask::CpuSet;
use crate::kernel::tracepoint::{self, kind};
use latlab_core::Nanos;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// The fewest CPUs stepped lazily: on fewer, the heap and the settling cost more than the
/// eager loop's scan (callgrind of benches/short/smp.toml, eager against lazy: 2 CPUs 22.4
/// against 27.2 M instructions, 4 CPUs 29.7 against 33.3 M, 8 CPUs 43.5 against 43.8 M,
/// 64 CPUs 414 against 139 M).
pub(super) const LAZY_FROM_CPUS: usize = 8;

/// The CPU-time event kinds, which the eager loop splits at every event.
const CPU_TIME: u32 = kind::RUNTIME | kind::SCHED_TIME;

/// The lazy loop's bookkeeping (see the module's text).
pub(super) struct Lazy {
    /// Each CPU's virtual time its context is exact at.
    at: Vec<Nanos>,
    /// Each CPU's next boundary (virtual time) as `dues` holds it; None: idle, not in it.
    due: Vec<Option<Nanos>>,
    /// Is that boundary the end of its schedule() and switch time?
    switch_end: Vec<bool>,
    /// The version of each CPU's entry in `dues`: older entries are stale, skipped.
    gen: Vec<u32>,
    /// (boundary, CPU, version), earliest first.
    dues: BinaryHeap<Reverse<(Nanos, u32, u32)>>,
    /// CPUs touched since their boundary was computed (in `touched` too).
    touched: Vec<u32>,
    touched_set: CpuSet,
    /// CPUs whose current task may have `need_resched` or `need_resched_lazy` set (every
    /// CPU whose task has one is in it).
    flagged: CpuSet,
    /// Did a sink take CPU time at the last look (every CPU then at `vnow`)?
    cpu_time: bool,
}

impl Lazy {
    /// For `n` CPUs.
    pub(super) fn new(n: usize) -> Self {
        Lazy {
            at: vec![0; n],
            due: vec![None; n],
            switch_end: vec![false; n],
            gen: vec![0; n],
            dues: BinaryHeap::new(),
            touched: Vec::new(),
            touched_set: CpuSet::default(),
            flagged: CpuSet::default(),
            cpu_time: false,
        }
    }
}

impl<S: tracepoint::Sink> Kernel<S> {
    /// Virtual time: simulated time less the time all CPUs stood still in CPU 0's hard
    /// interrupt handlers (`Kernel::hardirq_entry` adds a handler's time to both `now` and
    /// `irq_ns`).
    #[inline]
    fn vnow(&self) -> Nanos {
        self.now - self.stats.irq_ns
    }

    /// [`Kernel::run_until`] on a lazily stepped machine.
    #[inline(never)]
    pub(super) fn run_lazy(&mut self, end: Nanos, mut progress: impl FnMut(Nanos)) {
        // Anything may have changed since the last run: every CPU's boundary afresh.
        for c in 0..self.cpus.len() {
            self.touch(c);
        }
        let mut next_report = self.now;
        while self.now < end {
            if self.now >= next_report {
                progress(self.now);
                next_report = self.now + 1_000_000_000;
            }
            // The CPU whose context reaches its boundary first (the lowest on a tie); every
            // interrupt goes to CPU 0, which takes none while its interrupts are off.
            let first = self.first_boundary();
            if self.host_gaps.is_some() && self.host_gap_first(first.map(|(d, _)| d)) {
                continue;
            }
            match (first, self.q.peek_time()) {
                (Some((d, cpu)), t) if t.is_none_or(|t| self.now + d <= t) || self.cpu0_irqs_off() => {
                    self.pass(d);
                    self.cpu = cpu;
                    self.touch(cpu);
                    self.boundary();
                    self.ipi_others(cpu);
                }
                (_, Some(t)) => {
                    if t > self.now {
                        self.pass(t - self.now);
                    }
                    let (at, ev) = self.q.pop().expect("peeked");
                    self.cpu = 0;
                    if !matches!(ev, super::Ev::Ipi(_) | super::Ev::GapEnd(_)) {
                        self.touch(0);
                    }
                    self.event(at, ev);
                }
                (_, None) => break,
            }
        }
        for c in 0..self.cpus.len() {
            self.settle(c);
        }
    }

    /// Are CPU 0's interrupts off now (it takes every interrupt)?
    pub(super) fn cpu0_irqs_off(&mut self) -> bool {
        self.settle(0);
        self.irqs_off(0)
    }

    /// Let `d` ns pass: on every CPU at once while a sink takes CPU time, else on none yet.
    pub(super) fn pass(&mut self, d: Nanos) {
        if self.cpu_time_taken() {
            self.advance(d);
            let v = self.vnow();
            self.lazy.as_mut().expect("lazy").at.fill(v);
        } else {
            self.now += d;
        }
    }

    /// Does a sink take CPU time now? When it has started to since the last look, every
    /// CPU is first brought up to now without tracepoints (no sink took that time).
    fn cpu_time_taken(&mut self) -> bool {
        let on = self.tp.on(CPU_TIME);
        let l = self.lazy.as_mut().expect("lazy");
        if on && !l.cpu_time {
            let me = self.cpu;
            let v = self.vnow();
            for c in 0..self.cpus.len() {
                let l = self.lazy.as_mut().expect("lazy");
                let d = v - std::mem::replace(&mut l.at[c], v);
                if d > 0 {
                    self.cpu = c;
                    self.advance_cpu::<false>(d);
                }
            }
            self.cpu = me;
        }
        self.lazy.as_mut().expect("lazy").cpu_time = on;
        on
    }

    /// Bring CPU `c`'s context up to now.
    fn settle(&mut self, c: usize) {
        if self.cpu_time_taken() {
            // Every CPU is advanced at every event then.
            return;
        }
        let v = self.vnow();
        let l = self.lazy.as_mut().expect("lazy");
        let d = v - std::mem::replace(&mut l.at[c], v);
        if d > 0 {
            let me = std::mem::replace(&mut self.cpu, c);
            self.advance_cpu::<true>(d);
            self.cpu = me;
        }
    }

    /// CPU `c`'s context is about to be read or changed: settle it, and compute its
    /// boundary again before the next one is taken. Nothing on an eagerly stepped machine.
    #[inline]
    pub(super) fn touch(&mut self, c: usize) {
        if self.lazy.is_some() {
            self.touch_lazy(c);
        }
    }

    #[inline(never)]
    fn touch_lazy(&mut self, c: usize) {
        self.settle(c);
        let l = self.lazy.as_mut().expect("lazy");
        if !l.touched_set.contains(c) {
            l.touched_set.insert(c);
            l.touched.push(c as u32);
        }
    }

    /// CPU `c`'s task is about to get a reschedule flag: [`Kernel::touch`], and remember
    /// `c` for the checks at interrupt return.
    #[inline]
    pub(super) fn flag(&mut self, c: usize) {
        if self.lazy.is_some() {
            self.flag_lazy(c);
        }
    }

    #[inline(never)]
    fn flag_lazy(&mut self, c: usize) {
        self.touch_lazy(c);
        self.lazy.as_mut().expect("lazy").flagged.insert(c);
    }

    /// The first boundary of any CPU's context: how far off, and whose (the lowest CPU on a
    /// tie).
    ///
    /// A boundary that is the end of a CPU's schedule() and switch time, reached by the time
    /// passed to another CPU's boundary, is no boundary: as in the eager loop, that CPU goes
    /// on with its task's context (settled, its boundary computed again).
    fn first_boundary(&mut self) -> Option<(Nanos, usize)> {
        let v = self.vnow();
        loop {
            let mut touched = std::mem::take(&mut self.lazy.as_mut().expect("lazy").touched);
            for &c in &touched {
                let c = c as usize;
                self.cpu = c;
                let due = self.segment_len().map(|s| v + s);
                let switch_end = self.cpus[c].overhead > 0;
                let l = self.lazy.as_mut().expect("lazy");
                l.touched_set.remove(c);
                l.switch_end[c] = switch_end;
                if l.due[c] != due {
                    l.due[c] = due;
                    l.gen[c] += 1;
                    if let Some(due) = due {
                        l.dues.push(Reverse((due, c as u32, l.gen[c])));
                    }
                }
            }
            touched.clear();
            let l = self.lazy.as_mut().expect("lazy");
            l.touched = touched;
            let first = loop {
                let &Reverse((due, c, gen)) = l.dues.peek()?;
                if gen == l.gen[c as usize] {
                    debug_assert!(due >= v, "CPU {c}'s boundary {due} passed ({v})");
                    break (due - v, c as usize);
                }
                l.dues.pop();
            };
            if first.0 > 0 || !l.switch_end[first.1] {
                return Some(first);
            }
            // Its entry is gone: computed afresh after the touch.
            l.dues.pop();
            l.due[first.1] = None;
            l.gen[first.1] += 1;
            self.touch(first.1);
        }
    }

    /// The checks at interrupt return (`from` None) or after CPU `from`'s boundary (of the
    /// CPUs whose task has `need_resched`, `from` excepted) on the flagged CPUs only.
    #[inline(never)]
    pub(super) fn preempt_flagged(&mut self, from: Option<usize>) {
        let mut c = 0;
        while let Some(x) = self.next_flagged(c) {
            if from.is_none_or(|f| x != f && self.tasks[self.cpus[x].current].need_resched) {
                self.touch(x);
                self.cpu = x;
                self.maybe_preempt_after_irq();
            }
            c = x + 1;
        }
    }

    /// The flagged CPUs from `from` on, in increasing order, each looked up after the one
    /// before was handled (a CPU flagged meanwhile is visited if it comes later, as in the
    /// eager loop's visit of every CPU); CPUs whose task has no flag left are dropped.
    fn next_flagged(&mut self, from: usize) -> Option<usize> {
        loop {
            let l = self.lazy.as_mut().expect("lazy");
            let c = l.flagged.next_from(from)?;
            let t = &self.tasks[self.cpus[c].current];
            if t.need_resched || t.need_resched_lazy {
                return Some(c);
            }
            self.lazy.as_mut().expect("lazy").flagged.remove(c);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{machine, percpu_eevdf_kernel, periodic, variant_with};
    use super::*;
    use crate::kernel::task::{Policy, Task, TaskId};
    use crate::kernel::tracepoint::{Cx, Event, Sink};
    use crate::machine::MachineProfile;
    use crate::variant::{PreemptModel, SchedClass, TimerSubsystem};
    use crate::workload::TaskSpec;
    use std::cell::RefCell;
    use std::rc::Rc;

    /// Every event (time, CPU, current task, the event), CPU time only while a window is open:
    /// from a wakeup of `watched` to its next sleep.
    struct Window {
        log: Rc<RefCell<Vec<String>>>,
        watched: TaskId,
        open: bool,
    }

    impl Sink for Window {
        fn kinds(&self) -> u32 {
            if self.open {
                kind::ALL
            } else {
                kind::ALL & !CPU_TIME
            }
        }
        fn event(&mut self, cx: &Cx, ev: &Event) -> bool {
            self.log
                .borrow_mut()
                .push(format!("{} {} {} {ev:?}", cx.now, cx.cpu, cx.cur));
            let was = self.open;
            match *ev {
                Event::SchedWaking { task } if task == self.watched => self.open = true,
                Event::Sleep { task, .. } if task == self.watched => self.open = false,
                _ => {}
            }
            was != self.open
        }
        fn finish(self: Box<Self>, _tasks: &[Task], _r: &mut latlab_core::RunResult) {}
    }

    /// What a run of 300 ms on `cpus` CPUs of a 6.x-style kernel (EEVDF per-CPU runqueues
    /// under the RT class, `preempt`, `timer` expiries) shows: its events, counters, each
    /// task's CPU time and the kernel itself; stepped lazily when `lazy`.
    /// The tasks: a SCHED_FIFO thread waking every 2 ms (watched by a [`Window`]), 80 hogs
    /// and 100 tasks computing and sleeping for various times, so that wakeups are placed
    /// and the CPUs balance. With `noise`, host gaps are replayed on every CPU (3,000 a
    /// second, 1 to 400 us long).
    fn run(
        cpus: u32,
        preempt: PreemptModel,
        timer: TimerSubsystem,
        noise: bool,
        lazy: bool,
    ) -> (Vec<String>, String, Kernel) {
        let m = MachineProfile { cpus, ..machine() };
        let mut v = variant_with(SchedClass::Eevdf, preempt, &[]);
        v.timer = timer;
        // A 6.x kernel: with hrtimers, the sleepers' timers have the default timer slack.
        v.base = "6.18".into();
        let mut k = percpu_eevdf_kernel(m, v);
        assert_eq!(k.lazy.is_some(), cpus as usize >= LAZY_FROM_CPUS);
        k.lazy = lazy.then(|| Box::new(Lazy::new(cpus as usize)));
        let log = Rc::new(RefCell::new(Vec::new()));
        let rt = TaskSpec {
            policy: Policy::Fifo,
            rt_priority: 90,
            ..TaskSpec::user("cyclic", periodic(20_000, 2_000_000))
        };
        k.spawn(rt, None);
        let watched = k.pids[&1];
        k.tp.attach(Box::new(Window {
            log: log.clone(),
            watched,
            open: false,
        }));
        for i in 0..80 {
            k.spawn(TaskSpec::user("hog", periodic(5_000_000 + i * 1_000, 0)), None);
        }
        for i in 0..100 {
            let spec = TaskSpec::user("sleeper", periodic(100_000 + i * 7_000, 1_000_000 + i * 13_000));
            k.spawn(spec, None);
        }
        if noise {
            let replay = super::super::host_gap::tests::replay(3_000.0, 1.0, 400.0);
            k.replay_host_noise(replay, crate::engine::rng_for(7, crate::engine::RngStream::HostNoise));
        }
        k.run_until(300_000_000, |_| {});
        let counts = format!("{:?} {} {}", k.stats, k.events(), k.now);
        let log = log.borrow().clone();
        (log, counts, k)
    }

    #[test]
    fn a_lazily_stepped_run_is_the_eager_one() {
        for (preempt, timer, noise) in [
            (PreemptModel::None, TimerSubsystem::Jiffies, false),
            (PreemptModel::Full, TimerSubsystem::Hrtimer, false),
            (PreemptModel::Lazy, TimerSubsystem::Hrtimer, false),
            // With the machine's host noise replayed (cpu/host_gap.rs).
            (PreemptModel::Full, TimerSubsystem::Hrtimer, true),
            (PreemptModel::None, TimerSubsystem::Jiffies, true),
        ] {
            for cpus in [2, 8, 64] {
                let (lazy_log, lazy_counts, lk) = run(cpus, preempt, timer, noise, true);
                let (eager_log, eager_counts, ek) = run(cpus, preempt, timer, noise, false);
                let what = format!("{cpus} CPUs, {preempt:?}, {timer:?}, noise {noise}");
                if let Some(i) = (0..lazy_log.len().min(eager_log.len())).find(|&i| lazy_log[i] != eager_log[i]) {
                    panic!(
                        "{what}: event {i}: {} against {}\n{:#?}",
                        lazy_log[i],
                        eager_log[i],
                        &eager_log[i.saturating_sub(30)..i + 1]
                    );
                }
                assert_eq!(lazy_counts, eager_counts, "{what}");
                let cpu_ns = |k: &Kernel| k.tasks.iter().map(|t| t.cpu_ns).collect::<Vec<_>>();
                assert_eq!(cpu_ns(&lk), cpu_ns(&ek), "{what}");
                assert!(lk.stats.context_switches > 100, "{what}: {:?}", lk.stats);
                assert_eq!(
                    lk.stats.host_gaps > 100 * u64::from(cpus),
                    noise,
                    "{what}: {:?}",
                    lk.stats
                );
                let windows = lazy_log.iter().filter(|e| e.contains("Runtime")).count();
                assert!(windows > 100, "{what}: {windows} CPU-time events in the windows");
                assert_eq!(lazy_log.len(), eager_log.len(), "{what}");
            }
        }
    }

    #[test]
    fn every_cpu_accounts_for_all_its_time() {
        for noise in [false, true] {
            let (_, _, k) = run(64, PreemptModel::None, TimerSubsystem::Hrtimer, noise, true);
            // Each CPU's time goes to a task (its idle task included), to schedule() or to a
            // host gap, except while CPU 0's hard interrupt handlers hold every CPU still.
            let tasks: Nanos = k.tasks.iter().map(|t| t.cpu_ns).sum();
            let s = &k.stats;
            assert_eq!(tasks + s.sched_ns + s.host_gap_ns, 64 * (k.now - s.irq_ns));
            assert!(s.idle_ns > 0 && s.idle_ns < 64 * k.now, "{s:?}");
            assert_eq!(s.host_gap_ns > 0, noise, "{s:?}");
        }
    }
}
