//! The kernel: the CPU loop, interrupts, wakeups, schedule().
//!
//! Follows Linux 2.4's structure (arch/i386/kernel/entry.S, kernel/sched.c): each CPU runs its
//! current task's user burst or kernel step; interrupts (timer tick at HZ, RTC, disk
//! completion) run their handler on top of whatever runs, may wake tasks and set
//! `need_resched`, and on return either reschedule (when the interrupted context allows it,
//! see [`preempt`]) or resume. Kernel code gives up the CPU only where the variant lets it:
//! blocking, return to user space, the rescheduling points it has, and, with kernel
//! preemption, IRQ return and the unlock that brings `preempt_count` to 0. A task preempted
//! in the middle of a step resumes it where it stopped when it runs again.
//!
//! On a machine of several logical CPUs (seed 001's Pentium 4 HT; 2.6.17 SMP facts in
//! docs/research/smp-ht-2.6.17.md) every CPU steps its own context and the earliest
//! boundary is taken first. Device interrupts go to CPU 0 (i386's in-kernel IRQ balancer
//! leaves them there on one package); each CPU's local timer runs `scheduler_tick`; a
//! wakeup goes to an idle CPU first (`wake_idle`) and a CPU told to reschedule by another
//! takes the reschedule IPI at once; an idle CPU pulls a waiting task at its
//! tick (`rebalance_tick`). Not modelled: spinning on a spinlock another CPU holds (the
//! model's paths take their state at step boundaries, so no two CPUs ever see it half
//! changed), the cost of the IPI. CFS and EEVDF on several CPUs have a runqueue per CPU
//! instead ([`crate::sched::smp`]; the CPU loop's side in cpu/smp.rs): placement by
//! `select_task_rq`, balancing by domain, and a reschedule IPI that takes time.

pub mod kthreads;
pub mod syscall;

use crate::engine::{EventQueue, Rng};
use crate::fs::state::FsState;
use crate::kernel::cpumask::CpuSet;
use crate::kernel::lock::Lock;
use crate::kernel::path::{self, Chan, Ctx, Path, Step};
use crate::kernel::posix_timer;
use crate::kernel::preempt::{self, Boundary};
use crate::kernel::sched_class::Scheduler;
use crate::kernel::state::KReq;
use crate::kernel::task::{Exec, Policy, Running, Task, TaskId, TaskState};
use crate::kernel::tracepoint::{self, Event, IrqCtx, Tracepoints};
use crate::kernel::{Irq, SwitchReason};
use crate::machine::MachineProfile;
use crate::variant::Variant;
use crate::workload::{Action, ProgCx, Program, TaskSpec};
use latlab_core::Nanos;
use rustc_hash::FxHashMap;
use smallvec::SmallVec;
use std::collections::BTreeMap;

/// Emit tracepoint event `$ev` of kind `$kind` (a [`tracepoint::kind`] constant) on the
/// current CPU, if a sink takes that kind; `$ev` is evaluated only then.
macro_rules! trace_event {
    ($k:ident, $kind:ident, $ev:expr) => {
        if $k.tp.on(tracepoint::kind::$kind) {
            let ev = $ev;
            let cx = tracepoint::Cx {
                now: $k.now,
                cpu: $k.cpu,
                cur: $k.cpus[$k.cpu].current,
                in_schedule: $k.cpus[$k.cpu].overhead > $k.cpus[$k.cpu].gap,
                irq: $k.irq_ctx,
                tasks: &$k.tasks,
                paths: &$k.paths,
                sched: &*$k.sched,
            };
            $k.tp.emit(&cx, &ev);
        }
    };
}

// Per-CPU runqueues' side of the CPU loop (after the macro, which it uses).
mod smp;
// Lazy stepping of several CPUs (after the macro, which `advance_cpu` uses).
mod lazy;
// Threaded interrupts and softirqs (HP, SP): declared after `trace_event!`, which it uses.
pub mod irq_thread;
// PREEMPT_RT's sleeping locks at step boundaries (after `trace_event!`, which it uses).
mod rtmutex;
// The replay of the machine's host noise (after `trace_event!`, which it uses).
mod host_gap;
// Arming and expiring timers: nanosleep, POSIX timers, the hrtimer queues (after
// `trace_event!`, which it uses).
mod hrtimer;

/// Queue events: interrupts and software wakeups.
#[derive(Clone, Copy, Debug)]
enum Ev {
    Irq(Irq),
    /// A timer or device-side completion that wakes a channel (delivered in softirq context at
    /// no modelled cost).
    Wake(Chan),
    /// A reschedule IPI reaching CPU `.0` (per-CPU runqueues only, cpu/smp.rs).
    Ipi(usize),
    /// CPU `.0`'s replayed host gap ends (cpu/host_gap.rs).
    GapEnd(usize),
}

/// Counters the kernel keeps for the result.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    pub context_switches: u64,
    pub irqs: u64,
    pub irq_ns: Nanos,
    pub schedule_calls: u64,
    pub sched_ns: Nanos,
    pub idle_ns: Nanos,
    pub syscalls: u64,
    pub tasks_created: u64,
    /// Replayed host gaps (cpu/host_gap.rs), and the CPU time they took.
    pub host_gaps: u64,
    pub host_gap_ns: Nanos,
}

/// One logical CPU's context.
#[derive(Clone, Copy, Debug)]
struct Cpu {
    /// The task it runs: its idle task (`swapper`, task id = the CPU's number) when none.
    current: TaskId,
    /// Time still owed to schedule()/context switch, run with interrupts off before the
    /// current task continues.
    overhead: Nanos,
    /// The share of `overhead` that is a replayed host gap (cpu/host_gap.rs), run first.
    gap: Nanos,
    /// When the current task last got the CPU or entered the kernel.
    ran_since: Nanos,
}

/// The simulated machine running one kernel variant, its tracepoints calling sink `S`.
pub struct Kernel<S = Box<dyn tracepoint::Sink>> {
    pub now: Nanos,
    q: EventQueue<Ev>,
    pub tasks: Vec<Task>,
    /// Each task's program (`None`: an idle task's, or one that exited), by task id.
    programs: Vec<Option<Box<dyn Program>>>,
    /// The kernel path each task runs (`None` outside the kernel), by task id: paths run on
    /// the state the loop holds, [`FsState`] (the file system's, holding every layer's
    /// beneath it), so the loop keeps them rather than [`Task`], which the core defines.
    paths: Vec<Option<Box<dyn Path<FsState>>>>,
    /// The machine's logical CPUs (`MachineProfile::cpus`); tasks `0..cpus.len()` are their
    /// idle tasks.
    cpus: Vec<Cpu>,
    /// The CPU whose context the code below runs in (0 on a uniprocessor).
    cpu: usize,
    /// Several CPUs at full speed each are stepped lazily (cpu/lazy.rs); None: every CPU's
    /// context is brought up to the present at every event.
    lazy: Option<Box<lazy::Lazy>>,
    /// The replay of the machine's host noise, when the run asks for it.
    host_gaps: Option<Box<host_gap::HostGaps>>,
    /// Each CPU's Hyper-Threading siblings, itself not included (`cpu_smt_mask`), when a
    /// busy sibling slows a CPU down (`sibling_speed` < 1); else empty.
    smt: Vec<CpuSet>,
    sched: Box<dyn Scheduler>,
    pub v: Variant,
    pub m: MachineProfile,
    pub st: FsState,
    /// Sleepers by channel, in the order they slept (looked up by key only, never walked).
    waiters: FxHashMap<Chan, SmallVec<[TaskId; 2]>>,
    tick_ns: Nanos,
    rtc_period: Option<Nanos>,
    next_timer_token: u64,
    pub rng: Rng,
    pub stats: Stats,
    /// The tracepoints and the measurements subscribed to them.
    pub tp: Tracepoints<S>,
    /// The context the code below runs in: a task's, or an interrupt handler's.
    irq_ctx: IrqCtx,
    /// Tasks by pid.
    pids: BTreeMap<u32, TaskId>,
    next_pid: u32,
    next_mm: u32,
    boundaries: u64,
}

impl<S: tracepoint::Sink> Kernel<S> {
    pub fn new(v: Variant, m: MachineProfile, sched: Box<dyn Scheduler>, st: FsState, rng: Rng) -> Self {
        let tick_ns = 1_000_000_000 / v.hz as Nanos;
        let ncpus = m.cpus.max(1) as usize;
        // Every CPU's idle task is pid 0, `swapper` (init_task and its per-CPU copies).
        let idle = |cpu: usize| Task {
            pid: 0,
            comm: "swapper".into(),
            policy: Policy::Other,
            rt_priority: 0,
            nice: 0,
            state: TaskState::Runnable,
            kthread: true,
            mm: 0,
            thread: false,
            need_resched: false,
            need_resched_lazy: false,
            exec: Exec::Idle,
            parent: None,
            children: 0,
            cpu_ns: 0,
            exiting: false,
            oom_killed: false,
            wait_below: None,
            migration_disabled: false,
            cpu: cpu as u8,
        };
        let tasks = (0..ncpus).map(idle).collect();
        let programs = (0..ncpus).map(|_| None).collect();
        let paths = (0..ncpus).map(|_| None).collect();
        let cpus = (0..ncpus)
            .map(|c| Cpu {
                current: c,
                overhead: 0,
                gap: 0,
                ran_since: 0,
            })
            .collect();
        let smt: Vec<CpuSet> = if m.sibling_speed < 1.0 {
            let core = m.cores(ncpus);
            (0..ncpus)
                .map(|c| {
                    let mut s = CpuSet::default();
                    (0..ncpus)
                        .filter(|&o| o != c && core[o] == core[c])
                        .for_each(|o| s.insert(o));
                    s
                })
                .collect()
        } else {
            Vec::new()
        };
        // A CPU's speed never depends on another's: each can be brought up to the present
        // when touched alone.
        let lazy = (ncpus >= lazy::LAZY_FROM_CPUS && smt.iter().all(|s| s.is_empty()))
            .then(|| Box::new(lazy::Lazy::new(ncpus)));
        let mut k = Kernel {
            now: 0,
            q: EventQueue::new(),
            tasks,
            programs,
            paths,
            cpus,
            cpu: 0,
            lazy,
            host_gaps: None,
            smt,
            sched,
            v,
            m,
            st,
            waiters: FxHashMap::default(),
            tick_ns,
            rtc_period: None,
            next_timer_token: 0,
            rng,
            stats: Stats::default(),
            tp: Tracepoints::default(),
            irq_ctx: IrqCtx::Task,
            pids: BTreeMap::new(),
            next_pid: 1,
            next_mm: 1,
            boundaries: 0,
        };
        k.pids.insert(0, 0);
        k.q.schedule(tick_ns, Ev::Irq(Irq::Tick));
        k.st.hrtimers.tick_armed(tick_ns);
        k
    }

    /// Start the RTC's periodic interrupt at `hz` (RTC_IRQP_SET + RTC_PIE_ON).
    pub fn start_rtc(&mut self, hz: u32) {
        let period = 1_000_000_000 / hz as Nanos;
        self.rtc_period = Some(period);
        self.q.schedule(self.now + period, Ev::Irq(Irq::Rtc));
    }

    /// Events processed so far: queue events (interrupts, timers) plus segment boundaries
    /// (a step, burst or switch ending).
    pub fn events(&self) -> u64 {
        self.q.delivered() + self.boundaries
    }

    /// Create a task; it becomes runnable at once. Returns its pid.
    pub fn spawn(&mut self, spec: TaskSpec, parent: Option<TaskId>) -> u32 {
        let pid = self.next_pid;
        self.next_pid += 1;
        let mm = if spec.kthread {
            0
        } else if let (Some(p), true) = (parent, spec.share_mm) {
            self.tasks[p].mm
        } else {
            self.next_mm += 1;
            self.next_mm
        };
        let id = self.tasks.len();
        self.tasks.push(Task {
            pid,
            comm: spec.comm,
            policy: spec.policy,
            rt_priority: spec.rt_priority,
            nice: spec.nice,
            state: TaskState::Runnable,
            kthread: spec.kthread,
            mm,
            thread: spec.share_mm && parent.is_some(),
            need_resched: false,
            need_resched_lazy: false,
            exec: Exec::Ready,
            parent,
            children: 0,
            cpu_ns: 0,
            exiting: false,
            oom_killed: false,
            wait_below: None,
            migration_disabled: false,
            cpu: self.cpu as u8,
        });
        self.programs.push(Some(spec.program));
        self.paths.push(None);
        self.pids.insert(pid, id);
        self.stats.tasks_created += 1;
        if let Some(p) = parent {
            self.tasks[p].children += 1;
        }
        // sched_setaffinity before the task first runs (per-CPU runqueues honour it).
        if let Some(cpus) = &spec.affinity {
            self.sched.set_affinity(id, cpus);
        }
        self.sched.fork(&self.tasks, parent, id, self.now);
        if let Some(p) = parent {
            trace_event!(self, FORK, Event::Fork { parent: p, child: id });
        }
        self.enqueue_woken(id, true, self.cpu);
        pid
    }

    /// Run until simulated time `end` (or until nothing is left to do).
    pub fn run_until(&mut self, end: Nanos, mut progress: impl FnMut(Nanos)) {
        if self.lazy.is_some() {
            self.run_lazy(end, progress);
            return;
        }
        let mut next_report = self.now;
        while self.now < end {
            if self.now >= next_report {
                progress(self.now);
                next_report = self.now + 1_000_000_000;
            }
            // The CPU whose context reaches its boundary first (the lowest on a tie); every
            // interrupt goes to CPU 0, which takes none while its interrupts are off.
            let (seg, cpu) = self.next_boundary();
            if self.host_gaps.is_some() && self.host_gap_first(seg) {
                continue;
            }
            let irqs_off = self.irqs_off(0);
            match (seg, self.q.peek_time()) {
                (Some(d), Some(t)) if irqs_off || self.now + d <= t => {
                    self.advance(d);
                    self.cpu = cpu;
                    self.boundary();
                    self.ipi_others(cpu);
                }
                (Some(d), None) => {
                    self.advance(d);
                    self.cpu = cpu;
                    self.boundary();
                    self.ipi_others(cpu);
                }
                (_, Some(t)) => {
                    if t > self.now {
                        self.advance(t - self.now);
                    }
                    let (at, ev) = self.q.pop().expect("peeked");
                    self.cpu = 0;
                    self.event(at, ev);
                }
                (None, None) => break,
            }
        }
    }

    /// The task CPU `self.cpu` runs.
    fn cur(&self) -> TaskId {
        self.cpus[self.cpu].current
    }

    /// Is `t` a CPU's idle task?
    fn is_idle(&self, t: TaskId) -> bool {
        t < self.cpus.len()
    }

    /// The id schedulers and trackers know `t` by: every CPU's idle task is 0 to them.
    fn ext(&self, t: TaskId) -> TaskId {
        if self.is_idle(t) {
            0
        } else {
            t
        }
    }

    /// The first boundary of any CPU's context: how far off, and whose.
    fn next_boundary(&mut self) -> (Option<Nanos>, usize) {
        if self.cpus.len() == 1 {
            self.cpu = 0;
            return (self.segment_len(), 0);
        }
        let mut best = (None, 0);
        for c in 0..self.cpus.len() {
            self.cpu = c;
            if let Some(d) = self.segment_len() {
                if best.0.is_none_or(|b| d < b) {
                    best = (Some(d), c);
                }
            }
        }
        best
    }

    fn irqs_off(&self, cpu: usize) -> bool {
        let c = &self.cpus[cpu];
        if c.overhead > 0 {
            return true;
        }
        matches!(&self.tasks[c.current].exec,
            Exec::Kernel { step: Some(Running { step: Step::Work(w), .. }), .. } if w.irqs_off)
    }

    /// The share of its own speed CPU `self.cpu` runs at now: the machine's `sibling_speed`
    /// while a sibling is busy (Hyper-Threading siblings share one core's units: the CPUs of
    /// one of [`MachineProfile::cores`], as the scheduler's SMT domains group them), else 1.
    /// Out of line: the loop's hot functions call it only on such a machine.
    #[inline(never)]
    fn speed(&self) -> f64 {
        if self.m.sibling_speed >= 1.0 {
            return 1.0;
        }
        let other_busy = self.smt.get(self.cpu).is_some_and(|s| {
            s.iter().any(|o| {
                let c = &self.cpus[o];
                !self.is_idle(c.current) || c.overhead > 0
            })
        });
        if other_busy {
            self.m.sibling_speed
        } else {
            1.0
        }
    }

    /// Time until the current context reaches its next boundary; None when idle.
    fn segment_len(&self) -> Option<Nanos> {
        if self.m.sibling_speed >= 1.0 {
            return self.segment_work();
        }
        // A host gap passes in wall time, whatever the siblings do.
        let gap = self.cpus[self.cpu].gap;
        if gap > 0 {
            return Some(gap);
        }
        let work = self.segment_work()?;
        let s = self.speed();
        Some(if s < 1.0 {
            (work as f64 / s).ceil() as Nanos
        } else {
            work
        })
    }

    /// The CPU work left before the current context's next boundary; None when idle.
    #[inline]
    fn segment_work(&self) -> Option<Nanos> {
        let c = &self.cpus[self.cpu];
        if c.overhead > 0 {
            return Some(c.overhead);
        }
        let t = &self.tasks[c.current];
        match &t.exec {
            Exec::Idle => {
                if t.need_resched {
                    Some(0)
                } else {
                    None
                }
            }
            Exec::Ready => Some(0),
            Exec::User { left } => Some(*left),
            Exec::Kernel { step: None, .. } => Some(0),
            Exec::Kernel { step: Some(r), .. } => match &r.step {
                Step::Loop(l) if t.need_resched => match preempt::loop_point(l, &self.v, self.holds_bkl(c.current)) {
                    Some(p) => Some(preempt::to_next_point(r.total - r.left, l, p).min(r.left)),
                    None => Some(r.left),
                },
                _ => Some(r.left),
            },
        }
    }

    /// Let `d` ns pass on every CPU (none reaches its boundary before).
    fn advance(&mut self, d: Nanos) {
        self.now += d;
        if self.cpus.len() == 1 {
            self.cpu = 0;
            self.advance_cpu::<true>(d);
            return;
        }
        for c in 0..self.cpus.len() {
            self.cpu = c;
            self.advance_cpu::<true>(d);
        }
    }

    /// Let `d` ns of CPU time pass in CPU `self.cpu`'s context (its CPU-time tracepoints
    /// with `TRACE`).
    fn advance_cpu<const TRACE: bool>(&mut self, d: Nanos) {
        // The work `d` ns of this CPU's time does (less than `d` on a busy HT core).
        let work = if self.m.sibling_speed >= 1.0 {
            d
        } else {
            (d as f64 * self.speed()).ceil() as Nanos
        };
        let c = &mut self.cpus[self.cpu];
        if c.overhead > 0 {
            if c.gap > 0 {
                self.pass_host_gap::<TRACE>(d);
                return;
            }
            // `d` never runs past the overhead's end: it is all schedule() time.
            let x = d;
            c.overhead -= work.min(c.overhead);
            self.stats.sched_ns += x;
            if TRACE {
                trace_event!(self, SCHED_TIME, Event::SchedTime { ns: x });
            }
            return;
        }
        let cur = self.cur();
        let idle = self.is_idle(cur);
        let t = &mut self.tasks[cur];
        t.cpu_ns += d;
        let mut at: (&'static str, Option<Lock>) = ("user", None);
        match &mut t.exec {
            Exec::User { left } => *left -= work.min(*left),
            Exec::Kernel { step: Some(r), .. } => {
                r.left -= work.min(r.left);
                // Running again: a boundary from here on is the step's own.
                r.resume = false;
                at = match &r.step {
                    Step::Work(w) => (w.func, w.lock),
                    Step::Loop(l) => (l.func, l.lock),
                    _ => ("schedule", None),
                };
            }
            Exec::Idle => {
                self.stats.idle_ns += d;
                at = ("cpu_idle", None);
            }
            _ => {}
        }
        if TRACE {
            trace_event!(
                self,
                RUNTIME,
                Event::Runtime {
                    task: if idle { 0 } else { cur },
                    ns: d,
                    func: at.0,
                    lock: at.1,
                }
            );
        }
    }

    // ----- boundaries -------------------------------------------------------------------

    fn boundary(&mut self) {
        self.boundaries += 1;
        if self.cpus[self.cpu].overhead > 0 {
            return;
        }
        let cur = self.cur();
        // A user burst with time left goes on (the commonest boundary: an interrupt's end),
        // without moving the Exec out and back.
        if matches!(self.tasks[cur].exec, Exec::User { left } if left > 0) {
            return;
        }
        // So does a kernel step its task was switched away from in the middle, reached again
        // at the end of the switch back to it; a loop kernel preemption stops at an item's
        // end is left there, to resume. (A step with no time left is at its end: one test.)
        if matches!(&self.tasks[cur].exec, Exec::Kernel { step: Some(r), .. } if r.left > 0)
            && (self.resumes(cur) || self.preempted_in_loop(cur))
        {
            return;
        }
        let exec = std::mem::replace(&mut self.tasks[cur].exec, Exec::Ready);
        match exec {
            Exec::Idle => {
                self.tasks[cur].exec = Exec::Idle;
                if self.tasks[cur].need_resched {
                    self.schedule(SwitchReason::Idle);
                }
            }
            Exec::Ready => self.dispatch(),
            Exec::User { .. } => self.dispatch(),
            Exec::Kernel { step, from_user } => {
                // The path stays in its slot (`path!`), borrowed beside the state it runs on.
                macro_rules! path {
                    () => {
                        self.paths[cur]
                            .as_mut()
                            .expect("a task in the kernel runs a path")
                    };
                }
                let cx = Ctx {
                    now: self.now,
                    pid: self.tasks[cur].pid,
                };
                self.st.current_mm = self.tasks[cur].mm;
                // Finish the step under way.
                let mut resched_here: Option<SwitchReason> = None;
                let bkl = path!().holds_bkl();
                if let Some(r) = step {
                    // PREEMPT_RT: a sleeping lock's step that ran to its end unlocks it (a
                    // loop stopped early at a point keeps it).
                    if let Some(l) = step_lock(&r.step).filter(|&l| !preempt::spins(&self.v, l)) {
                        if r.left == 0 && step_releases(&r.step, 0) {
                            self.rt_unlock(cur, l);
                        }
                    }
                    if step_releases(&r.step, r.left) {
                        trace_event!(
                            self,
                            PREEMPT_ON,
                            Event::PreemptOn {
                                task: cur,
                                func: step_func(&r.step),
                                path: path!().name(),
                                lock: step_lock(&r.step),
                                swap_fill_pct: self.st.mm.swap_fill_pct(),
                            }
                        );
                    }
                    match &r.step {
                        Step::Loop(l) => {
                            let done_ns = r.total - r.left;
                            let done = if r.left == 0 {
                                l.items
                            } else {
                                (done_ns / l.per_item.max(1)).min(l.items)
                            };
                            path!().advanced(&mut self.st, &cx, done);
                            // A point is checked after every `every`-th item, the last one too.
                            let at_point =
                                preempt::loop_point(l, &self.v, bkl).filter(|p| done > 0 && done % p.every == 0);
                            if let (Some(p), true) = (at_point, self.tasks[cur].need_resched) {
                                trace_event!(
                                    self,
                                    RESCHED_POINT,
                                    Event::ReschedPoint {
                                        task: cur,
                                        point: p.at.name(),
                                        func: l.func,
                                        locked: l.lock.is_some(),
                                    }
                                );
                                resched_here = Some(match p.at {
                                    preempt::Resched::Unlock(lock) => SwitchReason::Unlock(lock),
                                    preempt::Resched::Preempt => SwitchReason::IrqExit,
                                    preempt::Resched::Point(p) => SwitchReason::Point(p),
                                });
                            } else if let (Some(lock), false, true) =
                                (l.lock, l.hold, preempt::unlock_preempts(&self.v, bkl))
                            {
                                resched_here = Some(SwitchReason::Unlock(lock));
                            }
                        }
                        Step::Work(w) => {
                            if let (Some(lock), false, true) = (w.lock, w.hold, preempt::unlock_preempts(&self.v, bkl))
                            {
                                resched_here = Some(SwitchReason::Unlock(lock));
                            }
                        }
                        Step::Block(_) | Step::Done => {}
                    }
                }
                self.drain_requests();
                if let Some(reason) = resched_here {
                    if self.tasks[cur].need_resched {
                        self.tasks[cur].exec = Exec::Kernel { step: None, from_user };
                        self.schedule(reason);
                        return;
                    }
                }
                // Next step.
                let next = path!().next(&mut self.st, &cx);
                self.drain_requests();
                if matches!(next, Step::Block(_) | Step::Done) {
                    self.rt_unlock_all(cur);
                }
                match next {
                    Step::Block(chan) => {
                        self.tasks[cur].exec = Exec::Kernel { step: None, from_user };
                        self.sleep_on(cur, chan);
                        self.schedule(SwitchReason::Block);
                    }
                    Step::Done => {
                        self.paths[cur] = None;
                        if self.tasks[cur].exiting {
                            self.finish_exit(cur);
                            return;
                        }
                        self.tasks[cur].exec = Exec::Ready;
                        let t = &self.tasks[cur];
                        if from_user && (t.need_resched || t.need_resched_lazy) {
                            self.schedule(SwitchReason::UserReturn);
                        }
                    }
                    s => {
                        let total = preempt::step_len(&s);
                        let since = self.now;
                        trace_event!(
                            self,
                            FUNC_ENTRY,
                            Event::FuncEntry {
                                task: cur,
                                func: step_func(&s),
                                path: path!().name(),
                                lock: step_lock(&s),
                                preempt_off: step_locked(&s),
                            }
                        );
                        let lock = step_lock(&s);
                        self.tasks[cur].exec = Exec::Kernel {
                            step: Some(Running {
                                step: s,
                                left: total,
                                total,
                                since,
                                resume: false,
                            }),
                            from_user,
                        };
                        // PREEMPT_RT: a sleeping lock is taken, or waited for (cpu/rtmutex.rs).
                        if let Some(l) = lock.filter(|&l| !preempt::spins(&self.v, l)) {
                            self.rt_lock(cur, l);
                        }
                    }
                }
            }
        }
    }

    /// Give task `t` the context `e`. What it replaces owns something only when it is a
    /// kernel step: any other is forgotten, not dropped, since the assignment would call the
    /// context's drop glue out of line at every action of every program.
    #[inline(always)]
    fn set_exec(&mut self, t: TaskId, e: Exec) {
        let old = std::mem::replace(&mut self.tasks[t].exec, e);
        if matches!(old, Exec::Kernel { .. }) {
            drop(old);
        } else {
            std::mem::forget(old);
        }
    }

    /// Task `t` enters the kernel to run `path`, from `step` on.
    #[inline(always)]
    fn enter_kernel(&mut self, t: TaskId, path: Box<dyn Path<FsState>>, step: Option<Running>, from_user: bool) {
        self.set_exec(t, Exec::Kernel { step, from_user });
        self.paths[t] = Some(path);
    }

    /// The kernel path task `t` runs holds the big kernel lock.
    fn holds_bkl(&self, t: TaskId) -> bool {
        self.paths[t].as_ref().is_some_and(|p| p.holds_bkl())
    }

    /// The current task is in user space (or between kernel-thread passes): run its program.
    fn dispatch(&mut self) {
        let cur = self.cur();
        for _ in 0..64 {
            if let Some(n) = self.tasks[cur].wait_below {
                if self.tasks[cur].children >= n {
                    let chan = Chan::Child(self.tasks[cur].pid);
                    self.sleep_on(cur, chan);
                    self.schedule(SwitchReason::Block);
                    return;
                }
                self.tasks[cur].wait_below = None;
            }
            let Some(mut prog) = self.programs[cur].take() else {
                // A task without a program (idle) has nothing to do.
                self.set_exec(cur, Exec::Idle);
                return;
            };
            let mut marks = SmallVec::new();
            let action = if self.tasks[cur].oom_killed {
                // SIGKILL, taken at this return to user space: do_exit.
                Action::Exit
            } else {
                let (pid, mm) = (self.tasks[cur].pid, self.tasks[cur].mm);
                let mut cx = ProgCx::new(self.now, &self.m, &mut self.rng, pid, &mut marks, mm, &mut self.st);
                prog.next(&mut cx)
            };
            self.programs[cur] = Some(prog);
            for &mark in &marks {
                trace_event!(self, MARK, Event::Mark { task: cur, mark });
            }
            // A system call becomes its code path here, in the one match on the action.
            let path = match action {
                Action::Call(call) => call.path(&mut self.st, &self.m, &self.tasks[cur]),
                Action::Syscall(path) => path,
                action => {
                    self.drain_requests();
                    if self.act(cur, action) {
                        return;
                    }
                    continue;
                }
            };
            self.drain_requests();
            self.stats.syscalls += 1;
            self.cpus[self.cpu].ran_since = self.now;
            let from_user = !self.tasks[cur].kthread;
            let entry = if from_user { self.m.syscall_ns } else { 0 };
            let s = path::Work::plain("system_call", entry);
            let step = Some(Running {
                step: s,
                left: entry,
                total: entry,
                since: self.now,
                resume: false,
            });
            self.enter_kernel(cur, path, step, from_user);
            return;
        }
        // A program that only spawns and never runs: give it a tick of compute.
        self.set_exec(cur, Exec::User { left: self.tick_ns });
    }

    /// Runs an action other than a system call of the current task's program; true when the
    /// task leaves user space (it sleeps, exits or computes), false when its program is asked
    /// again.
    fn act(&mut self, cur: TaskId, action: Action) -> bool {
        match action {
            Action::Compute(ns) => {
                self.set_exec(cur, Exec::User { left: ns });
                // A burst owns nothing: forgotten, not dropped (the drop glue of an action
                // is called out of line, at every burst of every program).
                std::mem::forget(action);
                return true;
            }
            Action::Call(_) | Action::Syscall(_) => unreachable!("dispatch enters system calls"),
            Action::Sleep(ns) => {
                let chan = self.arm_timer(cur, ns);
                self.set_exec(cur, Exec::Ready);
                self.sleep_on(cur, chan);
                self.schedule(SwitchReason::Block);
                return true;
            }
            Action::Spawn(spec) => {
                self.spawn(spec, Some(cur));
            }
            Action::TimerCreate { period } => {
                let pid = self.tasks[cur].pid;
                let id = self.st.posix.create(pid, period.max(1));
                self.arm_posix(self.cpu, id, self.now + period.max(1));
            }
            Action::WaitChildren => self.tasks[cur].wait_below = Some(1),
            Action::WaitChildrenBelow(n) => self.tasks[cur].wait_below = Some(n.max(1)),
            Action::Exit => {
                self.tasks[cur].exiting = true;
                let t = &self.tasks[cur];
                let path = if t.thread {
                    posix_timer::sys_exit_thread(&self.st)
                } else {
                    crate::mm::memory::do_exit(t.mm)
                };
                self.enter_kernel(cur, path, None, false);
                return true;
            }
        }
        false
    }

    fn finish_exit(&mut self, cur: TaskId) {
        self.tasks[cur].state = TaskState::Zombie;
        self.programs[cur] = None;
        self.tasks[cur].exec = Exec::Ready;
        self.sched.dequeue(&self.tasks, cur, self.now);
        if let Some(p) = self.tasks[cur].parent {
            self.tasks[p].children -= 1;
            let chan = Chan::Child(self.tasks[p].pid);
            self.wake(chan);
        }
        self.schedule(SwitchReason::Exit);
    }

    /// Task `t` goes to sleep on `chan` and leaves its runqueue; who wakes it is the
    /// caller's (a wait queue, [`Kernel::sleep_on`]; an rt_mutex's hand-off).
    fn block_on(&mut self, t: TaskId, chan: Chan) {
        trace_event!(
            self,
            SLEEP,
            Event::Sleep {
                task: t,
                wait: chan.wait_name()
            }
        );
        self.tasks[t].state = TaskState::Sleeping(chan);
        self.sched.dequeue(&self.tasks, t, self.now);
    }

    /// Task `t` sleeps on wait channel `chan` until [`Kernel::wake`] wakes it.
    fn sleep_on(&mut self, t: TaskId, chan: Chan) {
        self.block_on(t, chan);
        self.waiters.entry(chan).or_default().push(t);
    }

    fn wake(&mut self, chan: Chan) {
        let Some(list) = self.waiters.remove(&chan) else {
            return;
        };
        for t in list {
            if self.tasks[t].state != TaskState::Sleeping(chan) {
                continue;
            }
            trace_event!(self, SCHED_WAKING, Event::SchedWaking { task: t });
            self.tasks[t].state = TaskState::Runnable;
            let from = self.waker_cpu(chan, t);
            self.enqueue_woken(t, false, from);
        }
    }

    /// `t` became runnable (woken from CPU `from`, or `new`): onto the runqueue, and
    /// `check_preempt_curr`.
    fn enqueue_woken(&mut self, t: TaskId, new: bool, from: usize) {
        // Per-CPU runqueues place the task first and tell a remote CPU by IPI (cpu/smp.rs).
        if self.cpus.len() > 1 && self.sched.per_cpu() {
            self.enqueue_woken_per_cpu(t, new, from);
            return;
        }
        self.sched.enqueue(&self.tasks, t, self.now);
        trace_event!(self, SCHED_WAKEUP, Event::SchedWakeup { task: t, new });
        let target = self.wake_cpu(t);
        let cur = self.ext(self.cpus[target].current);
        if self.sched.wakeup_preempt(&self.tasks, t, cur, self.now) {
            let fair = |x: TaskId| x != 0 && self.tasks[x].policy == Policy::Other;
            self.resched_curr(target, preempt::resched_is_lazy(&self.v, fair(cur), fair(t)));
        }
    }

    /// The CPU a wakeup of `t` asks to run it (2.6.17's try_to_wake_up on an SMT domain):
    /// the CPU it last ran on, unless that one is busy and another is idle (`wake_idle`,
    /// SD_WAKE_IDLE); `wake_affine`'s move towards the waker is not modelled. The runqueue
    /// is shared, so this only decides whose current task the preemption test is against.
    fn wake_cpu(&self, t: TaskId) -> usize {
        let last = usize::from(self.tasks[t].cpu);
        if self.cpus.len() == 1 || self.idle_unasked(last) {
            return last;
        }
        (0..self.cpus.len()).find(|&c| self.idle_unasked(c)).unwrap_or(last)
    }

    /// Is CPU `c` idle and not yet asked to reschedule?
    fn idle_unasked(&self, c: usize) -> bool {
        let t = self.cpus[c].current;
        self.is_idle(t) && !self.tasks[t].need_resched
    }

    /// At a tick, an idle CPU pulls a task left waiting on the runqueue (2.6.17's
    /// `rebalance_tick` on an idle CPU of an SMT domain, every tick: docs/research/
    /// smp-ht-2.6.17.md section 3). A CPU about to idle takes a waiting task at once
    /// (`idle_balance`): the shared runqueue does that in `schedule()`.
    fn pull_to_idle_cpu(&mut self) {
        let running = self.cpus.iter().filter(|c| !self.is_idle(c.current)).count();
        if self.sched.nr_running() <= running {
            return;
        }
        if let Some(c) = (0..self.cpus.len()).find(|&c| self.idle_unasked(c)) {
            self.resched_curr(c, false);
        }
    }

    /// `resched_curr` / `resched_curr_lazy` of CPU `cpu`'s current task (on another CPU than
    /// the waker's, 2.6's `resched_task` sends it a reschedule IPI, which the CPU loop's
    /// check after every event stands for).
    fn resched_curr(&mut self, cpu: usize, lazy: bool) {
        self.flag(cpu);
        let c = &mut self.tasks[self.cpus[cpu].current];
        if lazy {
            c.need_resched_lazy = true;
        } else {
            c.need_resched = true;
        }
    }

    /// Carry out what the code that just ran asked of the kernel (most often nothing: one
    /// test, inlined at the call).
    #[inline(always)]
    fn drain_requests(&mut self) {
        if !self.st.out.is_empty() {
            self.carry_out_requests();
        }
    }

    #[inline(never)]
    fn carry_out_requests(&mut self) {
        let reqs = std::mem::take(&mut self.st.out);
        for r in reqs {
            match r {
                KReq::Wake(chan) => self.wake(chan),
                KReq::DiskIrq { at, id } => self.q.schedule(at.max(self.now), Ev::Irq(Irq::Disk(id))),
                KReq::WakeAt { at, chan } => self.q.schedule(at.max(self.now), Ev::Wake(chan)),
                KReq::OomKill => {
                    // oom_kill(): SIGKILL to the task of most badness.
                    if let Some(v) = crate::mm::oom_kill::select_bad_process(&self.tasks, &self.st.mm) {
                        self.tasks[v].oom_killed = true;
                    }
                }
            }
        }
    }

    /// schedule(): pick the next task and charge the decision and switch as IRQ-off time.
    fn schedule(&mut self, reason: SwitchReason) {
        let prev = self.cur();
        self.tasks[prev].need_resched = false;
        self.tasks[prev].need_resched_lazy = false;
        // A kernel step left in the middle (kernel preemption; PREEMPT_RT: a sleeping lock
        // waited for as the step begins) resumes where it stopped when the task runs again.
        if let Exec::Kernel { step: Some(r), .. } = &mut self.tasks[prev].exec {
            r.resume = r.left > 0;
        }
        self.stats.schedule_calls += 1;
        let (next, cost) = if self.cpus.len() == 1 {
            self.sched.pick(&self.tasks, self.ext(prev), &self.m, self.now)
        } else if self.sched.per_cpu() {
            // This CPU's own runqueue (newly-idle balance and RT pull/push inside).
            self.sched
                .pick_on(&self.tasks, self.cpu, self.ext(prev), &self.m, self.now)
        } else {
            // The tasks the other CPUs run stay on the shared runqueue but cannot be taken.
            let busy: SmallVec<[TaskId; 2]> = (0..self.cpus.len())
                .filter(|&c| c != self.cpu)
                .map(|c| self.cpus[c].current)
                .filter(|&t| !self.is_idle(t))
                .collect();
            self.sched
                .pick_excluding(&self.tasks, self.ext(prev), &busy, &self.m, self.now)
        };
        let next = if next == 0 { self.cpu } else { next };
        let mut overhead = cost;
        if next != prev {
            overhead += self.m.ctx_switch_ns;
            self.stats.context_switches += 1;
            self.cpus[self.cpu].current = next;
            self.tasks[next].cpu = self.cpu as u8;
        }
        if self.is_idle(next) {
            self.tasks[next].exec = Exec::Idle;
        }
        let c = &mut self.cpus[self.cpu];
        c.ran_since = self.now + overhead;
        c.overhead = overhead;
        let (prev, next) = (self.ext(prev), self.ext(next));
        trace_event!(self, SCHED_SWITCH, Event::SchedSwitch { prev, next, reason });
        // The CPUs a pick pushed RT tasks to (per-CPU runqueues).
        if self.cpus.len() > 1 {
            self.send_kicks();
        }
    }

    // ----- interrupts and timers -----------------------------------------------------------

    fn event(&mut self, at: Nanos, ev: Ev) {
        match ev {
            // SP: the softirq runs in ksoftirqd instead (cpu/irq_thread.rs).
            Ev::Wake(chan) if self.softirq_to_thread(chan) => {}
            Ev::Wake(chan) => {
                self.irq_ctx = IrqCtx::Softirq;
                trace_event!(self, SOFTIRQ, Event::SoftirqEntry);
                self.wake(chan);
                trace_event!(self, SOFTIRQ, Event::SoftirqExit);
                self.irq_ctx = IrqCtx::Task;
                self.preempt_after_irq();
            }
            Ev::Irq(irq) => self.irq(at, irq),
            Ev::Ipi(cpu) => self.resched_ipi(cpu),
            Ev::GapEnd(cpu) => self.host_gap_end(cpu),
        }
    }

    /// A hard interrupt raised at `at` taken now: its handler runs `h` (entry, the handler's
    /// body, exit) in hard context, charged as interrupt time.
    fn hardirq_entry(&mut self, at: Nanos, irq: Irq, h: Nanos) {
        self.stats.irqs += 1;
        self.irq_ctx = IrqCtx::Hardirq;
        trace_event!(
            self,
            IRQ_ENTRY,
            Event::IrqEntry {
                irq,
                raised: at,
                len: h,
                ran_since: self.cpus[self.cpu].ran_since,
            }
        );
        self.now += h;
        self.stats.irq_ns += h;
    }

    fn irq(&mut self, at: Nanos, irq: Irq) {
        // HP: a threaded line's primary handler only acknowledges and wakes its thread
        // (cpu/irq_thread.rs).
        if self.irq_to_thread(at, irq) {
            return;
        }
        // An hrtimer expired early, in another's interrupt: the device was programmed past
        // it, and no interrupt comes for it.
        let base = match irq {
            Irq::Hrtimer(t) if self.st.timers.own_interrupt() => match self.st.hrtimers.base_of(t) {
                None => return,
                c => c,
            },
            _ => None,
        };
        // hrtimer_interrupt's `now`, read on entry.
        let entry = self.now;
        let body = match irq {
            Irq::Tick => self.m.tick_handler_ns,
            Irq::Rtc => self.m.rtc_handler_ns,
            Irq::Disk(_) => self.m.disk_handler_ns,
            Irq::Hrtimer(_) => self.m.hrtimer_handler_ns,
        };
        // An interrupt that finds the CPU idle leaves the idle state on its way in.
        let entry_exit = self.m.irq_entry_exit(self.is_idle(self.cpus[self.cpu].current));
        self.hardirq_entry(at, irq, entry_exit + body);
        match irq {
            Irq::Tick => {
                self.st.jiffies += 1;
                self.q.schedule(at + self.tick_ns, Ev::Irq(Irq::Tick));
                self.st.hrtimers.tick_armed(at + self.tick_ns);
                // scheduler_tick on every CPU: on SMP each CPU's local APIC timer runs
                // update_process_times at HZ; the model fires them with CPU 0's tick (one
                // handler's time stands for all).
                for c in 0..self.cpus.len() {
                    let cur = self.cpus[c].current;
                    // Lazy preemption: a NEED_RESCHED_LAZY left from before is promoted.
                    if self.tasks[cur].need_resched_lazy {
                        self.flag(c);
                        self.tasks[cur].need_resched_lazy = false;
                        self.tasks[cur].need_resched = true;
                    }
                    let cur = self.ext(cur);
                    if self.sched.tick(&self.tasks, cur, self.now) {
                        let fair = cur != 0 && self.tasks[cur].policy == Policy::Other;
                        self.resched_curr(c, preempt::resched_is_lazy(&self.v, fair, fair));
                    }
                }
                // Per-CPU runqueues balance by domain (cpu/smp.rs); a shared one is pulled from.
                if self.cpus.len() > 1 {
                    if self.sched.per_cpu() {
                        self.balance_ticks();
                    } else {
                        self.pull_to_idle_cpu();
                    }
                }
                // High-resolution mode: the tick is `tick_sched_timer`, and its interrupt runs
                // every other timer due (each CPU's, at its own tick).
                if self.st.timers.own_interrupt() {
                    self.run_hrtimers(None, entry, None);
                }
            }
            Irq::Rtc => {
                let period = self.rtc_period.expect("RTC interrupts only when started");
                self.q.schedule(at + period, Ev::Irq(Irq::Rtc));
                self.st.rtc.interrupt(at);
                self.wake(Chan::Rtc);
            }
            Irq::Disk(id) => {
                self.st.disk_complete(id, self.now);
                self.drain_requests();
            }
            Irq::Hrtimer(t) => match base {
                Some(c) => self.run_hrtimers(Some(c), entry, Some(t)),
                // A POSIX timer from the tick (the timer list): only its own expiry.
                None => self.expire_hrtimer(0, t),
            },
        }
        trace_event!(self, IRQ_EXIT, Event::IrqExit { irq });
        self.irq_ctx = IrqCtx::Task;
        self.preempt_after_irq();
    }

    /// CPU `from`'s code may have asked another CPU to reschedule (`resched_task` on a
    /// remote CPU sends the reschedule IPI): that CPU takes the interrupt now and reschedules
    /// if its context allows it.
    #[inline]
    fn ipi_others(&mut self, from: usize) {
        if self.cpus.len() == 1 {
            return;
        }
        if self.lazy.is_some() {
            self.preempt_flagged(Some(from));
            return;
        }
        for c in (0..self.cpus.len()).filter(|&c| c != from) {
            if self.tasks[self.cpus[c].current].need_resched {
                self.cpu = c;
                self.maybe_preempt_after_irq();
            }
        }
    }

    /// After an interrupt (CPU 0's ret_from_intr, and the reschedule IPI a wakeup sent any
    /// other CPU), each CPU reschedules if it must and its context allows it.
    fn preempt_after_irq(&mut self) {
        if self.cpus.len() == 1 {
            self.cpu = 0;
            self.maybe_preempt_after_irq();
            return;
        }
        if self.lazy.is_some() {
            self.preempt_flagged(None);
            return;
        }
        for c in 0..self.cpus.len() {
            self.cpu = c;
            self.maybe_preempt_after_irq();
        }
    }

    /// ret_from_intr: reschedule if need_resched and the interrupted context allows it.
    fn maybe_preempt_after_irq(&mut self) {
        if let Some(reason) = self.preemption() {
            // The interrupted step stays where it is, to resume (`boundary`); the task is
            // still runnable.
            self.schedule(reason);
        }
    }

    /// Would the current context be left here for a reschedule, as at an interrupt's
    /// return: why, or None.
    fn preemption(&self) -> Option<SwitchReason> {
        let cur = self.cur();
        let t = &self.tasks[cur];
        // Return to user space honours NEED_RESCHED_LAZY too (exit_to_user_mode_loop).
        let to_user = matches!(t.exec, Exec::User { .. } | Exec::Ready);
        if self.cpus[self.cpu].overhead > 0 || !(t.need_resched || (to_user && t.need_resched_lazy)) {
            return None;
        }
        match preempt::at_irq_return(&t.exec, &self.v, || self.holds_bkl(cur)) {
            Boundary::No => None,
            Boundary::Yes(reason) => Some(reason),
        }
    }

    /// Does task `cur`, back on the CPU, come back to a kernel step it was switched away
    /// from in the middle (`Running::resume`) with work left before the step's next
    /// boundary? Then it goes on where it stopped: a preempted task resumes where it was
    /// interrupted, the rest of the step still to run, and no step, lock or
    /// non-preemptible stretch starts anew. (Any other boundary of a step is its own: its
    /// end, or a loop's rescheduling opportunity.)
    #[inline(never)]
    fn resumes(&self, cur: TaskId) -> bool {
        matches!(&self.tasks[cur].exec, Exec::Kernel { step: Some(r), .. } if r.resume)
            && self.segment_work().is_some_and(|w| w > 0)
    }

    /// Task `cur`'s loop stopped at an item's end with items left, `need_resched` set and no
    /// interrupt returning to it (the waker's own `preempt_enable` in the kernel; the loop's
    /// chance `preempt::loop_point`): under kernel preemption, where the loop's context may
    /// be left as at an interrupt's return, the task is preempted there and the loop resumes
    /// where it stopped. True when it was. (A loop stopped at a rescheduling point, or at
    /// the per-item unlock of a lock that spins, ends there and its path goes on from the
    /// items done: `Path::advanced`.)
    #[inline(never)]
    fn preempted_in_loop(&mut self, cur: TaskId) -> bool {
        let Exec::Kernel {
            step:
                Some(Running {
                    step: Step::Loop(l),
                    left,
                    ..
                }),
            ..
        } = &self.tasks[cur].exec
        else {
            return false;
        };
        if *left == 0 {
            return false;
        }
        let Some(reason) = self.preemption() else {
            return false;
        };
        let (func, locked) = (l.func, l.lock.is_some());
        trace_event!(
            self,
            RESCHED_POINT,
            Event::ReschedPoint {
                task: cur,
                point: preempt::Resched::Preempt.name(),
                func,
                locked,
            }
        );
        self.schedule(reason);
        true
    }

    /// pid of a running task by comm (first match).
    pub fn pid_of(&self, comm: &str) -> Option<u32> {
        self.tasks.iter().find(|t| t.comm == comm).map(|t| t.pid)
    }
}

/// The lock a step holds.
fn step_lock(s: &Step) -> Option<Lock> {
    match s {
        Step::Work(w) => w.lock,
        Step::Loop(l) => l.lock,
        _ => None,
    }
}

fn step_func(s: &Step) -> &'static str {
    match s {
        Step::Work(w) => w.func,
        Step::Loop(l) => l.func,
        Step::Block(_) => "schedule",
        Step::Done => "ret_from_sys_call",
    }
}

/// Does the step, ending with `left` ns of it not run, release the lock it held: it holds
/// one and does not keep it, or a loop stopped early at a lock-break?
fn step_releases(s: &Step, left: Nanos) -> bool {
    match s {
        Step::Work(w) => (w.lock.is_some() || w.irqs_off) && !w.hold,
        Step::Loop(l) => l.lock.is_some() && (!l.hold || left > 0),
        _ => false,
    }
}

fn step_locked(s: &Step) -> bool {
    match s {
        Step::Work(w) => w.lock.is_some() || w.irqs_off || w.hold,
        Step::Loop(l) => l.lock.is_some() || l.hold,
        _ => false,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::kernel::catalog::{Point, PointSet};
    use crate::kernel::path::{Chan, Ctx, LoopStep, Path, Script, Step};
    use crate::machine::{DiskProfile, MachineProfile};
    use crate::sched::goodness24::Goodness24;
    use crate::variant::{PreemptModel, SchedClass, TimerSubsystem, Variant, Writeback};
    use crate::workload::{Program, TaskSpec};

    /// A synthetic machine for engine tests (values irrelevant to what is tested).
    pub(crate) fn machine() -> MachineProfile {
        MachineProfile {
            name: "test".into(),
            description: String::new(),
            cpu_mhz: 1000.0,
            cpus: 1,
            sibling_speed: 1.0,
            kernel_cpi: 1.0,
            mem_latency_ns: 100.0,
            copy_mb_s: 1000.0,
            ram_mib: 256,
            swap_mib: 64,
            irq_entry_exit_ns: 1000,
            idle_irq_entry_exit_ns: None,
            tick_handler_ns: 1000,
            rtc_handler_ns: 1000,
            disk_handler_ns: 1000,
            syscall_ns: 100,
            ctx_switch_ns: 1000,
            schedule_base_ns: 1000,
            goodness_per_task_ns: 10,
            hrtimer_handler_ns: 1000,
            signal_deliver_ns: 1000,
            thread_create_exit_ns: 10_000,
            disk: DiskProfile {
                track_to_track_ns: 1_000_000,
                full_stroke_ns: 10_000_000,
                half_rotation_ns: 4_000_000,
                capacity_gb: 20.0,
                seq_mb_s: 50.0,
                max_request_kib: 64,
                nr_requests: 128,
                queue_depth: 1,
            },
            net_mb_s: 10.0,
            catalog: Default::default(),
            uncertainty: Default::default(),
            host: None,
        }
    }

    /// A 2.4-style test kernel: `sched` at HZ 100, jiffies timers, bdflush.
    pub(crate) fn variant_with(sched: SchedClass, preempt: PreemptModel, points: &[Point]) -> Variant {
        Variant {
            name: "t".into(),
            description: String::new(),
            base: "t".into(),
            preempt,
            points: points.iter().fold(PointSet::default(), |mut s, p| {
                s.insert(*p);
                s
            }),
            hz: 100,
            sched,
            timer: TimerSubsystem::Jiffies,
            writeback: Writeback::Bdflush24,
            dirty: None,
            swap_allocator: "scan-2.4".into(),
            cfs: None,
            eevdf: None,
            block: None,
            elevator: Default::default(),
            reclaim: Default::default(),
            journal: Default::default(),
            fs: Default::default(),
            vp_patch: None,
            voluntary: false,
            softirq_threads: false,
            hardirq_threads: false,
            irq_thread_priority: Default::default(),
            rt_throttling: None,
            locks: Default::default(),
            timer_slack_ns: None,
        }
    }

    fn variant(preempt: PreemptModel, points: &[Point]) -> Variant {
        variant_with(SchedClass::Goodness24, preempt, points)
    }

    /// One system call running a single loop of `items` x `per_item` ns.
    struct OneLoop {
        items: u64,
        per_item: Nanos,
        point: Option<Point>,
        lock: Option<Lock>,
        /// Run the loop under the big kernel lock.
        bkl: bool,
        done: bool,
    }

    impl Program for OneLoop {
        fn next(&mut self, _cx: &mut ProgCx) -> Action {
            if self.done {
                return Action::Compute(u64::MAX / 4);
            }
            self.done = true;
            let points = self
                .point
                .map(|p| smallvec::smallvec![path::point(p, 1)])
                .unwrap_or_default();
            let step = match self.lock {
                Some(l) => LoopStep::locked("test_loop", self.items, self.per_item, l, points, false),
                None => LoopStep::plain("test_loop", self.items, self.per_item, points),
            };
            let script = Script {
                name: "sys_test",
                steps: smallvec::smallvec![step],
            };
            if self.bkl {
                return Action::Syscall(path::under_bkl(Box::new(script)));
            }
            Action::Syscall(Box::new(script))
        }
    }

    /// Run a kernel path, every loop to its end with no time passing (so no write
    /// completes): the first sleep it takes, if any.
    pub(crate) fn run_to_sleep(k: &mut FsState, p: Box<dyn Path<FsState>>) -> Option<Chan> {
        run_to_sleep_as(k, p, &Ctx { now: 0, pid: 1 })
    }

    /// [`run_to_sleep`] as the task `cx.pid`, at `cx.now`.
    pub(crate) fn run_to_sleep_as(k: &mut FsState, mut p: Box<dyn Path<FsState>>, cx: &Ctx) -> Option<Chan> {
        for _ in 0..10_000 {
            match p.next(k, cx) {
                Step::Loop(l) => p.advanced(k, cx, l.items),
                Step::Work(_) => {}
                Step::Block(c) => return Some(c),
                Step::Done => return None,
            }
        }
        panic!("{} did not finish", p.name())
    }

    /// Kernel state on the test machine, scan-2.4 swap over the machine's swap area.
    /// A 2.4 kernel's state: [`crate::assemble`] of a 2.4.18 variant's subsystems.
    pub(crate) fn kstate_on(m: &MachineProfile, swap: Box<dyn latlab_swap::SwapAllocator>) -> FsState {
        let v = variant_with(SchedClass::Goodness24, PreemptModel::None, &[]);
        FsState::assembled(m, crate::assemble::subsystems(&v, m, swap))
    }

    pub(crate) fn kstate() -> FsState {
        let m = machine();
        kstate_on(&m, latlab_swap::by_name("scan-2.4", m.swap_slots()).unwrap())
    }

    pub(crate) fn kernel(v: Variant) -> Kernel {
        let m = machine();
        let swap = latlab_swap::by_name("scan-2.4", 16_384).unwrap();
        let st = kstate_on(&m, swap);
        Kernel::new(
            v,
            m,
            Box::new(Goodness24::new(100)),
            st,
            crate::engine::rng_for(7, crate::engine::RngStream::Workload),
        )
    }

    /// Computes for `compute` ns, then sleeps `sleep` ns, for ever (`sleep` 0: computes for
    /// ever).
    pub(crate) struct Periodic {
        compute: Nanos,
        sleep: Nanos,
        awake: bool,
    }

    impl Program for Periodic {
        fn next(&mut self, _cx: &mut ProgCx) -> Action {
            self.awake = !self.awake || self.sleep == 0;
            if self.awake {
                Action::Compute(self.compute)
            } else {
                Action::Sleep(self.sleep)
            }
        }
    }

    /// A [`Periodic`] program, starting with its computation.
    pub(crate) fn periodic(compute: Nanos, sleep: Nanos) -> Box<Periodic> {
        Box::new(Periodic {
            compute,
            sleep,
            awake: false,
        })
    }

    /// A 6.x-style kernel of variant `v` on machine `m`: its own subsystems, an EEVDF
    /// runqueue per CPU (3 ms base slice) under the RT class, at `v.hz`.
    pub(crate) fn percpu_eevdf_kernel(m: MachineProfile, v: Variant) -> Kernel {
        use crate::sched::rt::WithRt;
        let swap = latlab_swap::by_name("scan-2.4", 16_384).unwrap();
        let st = FsState::assembled(&m, crate::assemble::subsystems(&v, &m, swap));
        let tun = crate::variant::EevdfTunables {
            base_slice_ns: 3_000_000,
            run_to_parity: true,
            place_lag: true,
        };
        let hz = v.hz;
        let sched = crate::sched::smp::PerCpu::new(&m, hz, || WithRt::new(crate::sched::eevdf::Eevdf::new(tun, hz)));
        Kernel::new(
            v,
            m,
            Box::new(sched),
            st,
            crate::engine::rng_for(7, crate::engine::RngStream::Workload),
        )
    }

    fn events_for(items: u64, per_item: Nanos) -> u64 {
        let mut k = kernel(variant(PreemptModel::None, &[]));
        k.spawn(
            TaskSpec::user(
                "loop",
                Box::new(OneLoop {
                    items,
                    per_item,
                    point: None,
                    lock: None,
                    bkl: false,
                    done: false,
                }),
            ),
            None,
        );
        k.run_until(2_000_000_000, |_| {});
        k.events()
    }

    #[test]
    fn loop_events_do_not_grow_with_items() {
        // Both loops take one simulated second.
        let small = events_for(1_000, 1_000_000);
        let large = events_for(10_000_000, 100);
        assert_eq!(
            small, large,
            "a 10^7-item loop must cost as many events as a 10^3-item one"
        );
        assert!(small < 1_000, "{small}");
    }

    /// Latency a SCHED_FIFO task woken by a timer sees while another task runs a loop.
    fn wake_latency(v: Variant, point: Option<Point>, lock: Option<Lock>, bkl: bool) -> Nanos {
        wake_latency_on(kernel(v), point, lock, bkl)
    }

    /// [`wake_latency`] on the kernel `k`.
    fn wake_latency_on(mut k: Kernel, point: Option<Point>, lock: Option<Lock>, bkl: bool) -> Nanos {
        struct Sleeper {
            woke: std::rc::Rc<std::cell::Cell<Nanos>>,
            phase: u8,
        }
        impl Program for Sleeper {
            fn next(&mut self, cx: &mut ProgCx) -> Action {
                self.phase += 1;
                match self.phase {
                    1 => Action::Sleep(50_000_000),
                    2 => {
                        self.woke.set(cx.now);
                        Action::Exit
                    }
                    _ => Action::Exit,
                }
            }
        }
        let woke = std::rc::Rc::new(std::cell::Cell::new(0));
        k.spawn(
            TaskSpec {
                policy: Policy::Fifo,
                rt_priority: 50,
                ..TaskSpec::user(
                    "rt",
                    Box::new(Sleeper {
                        woke: woke.clone(),
                        phase: 0,
                    }),
                )
            },
            None,
        );
        // 200 ms of loop in 1 us items, starting right away.
        k.spawn(
            TaskSpec::user(
                "hog",
                Box::new(OneLoop {
                    items: 200_000,
                    per_item: 1_000,
                    point,
                    lock,
                    bkl,
                    done: false,
                }),
            ),
            None,
        );
        k.run_until(1_000_000_000, |_| {});
        // The 50 ms sleep started just after 0 and expires on the next tick: 60 ms.
        woke.get().saturating_sub(60_000_000)
    }

    /// A sink keeping every event it is given, with its time and CPU.
    pub(crate) struct Log(pub(crate) std::rc::Rc<std::cell::RefCell<Vec<(Nanos, usize, Event)>>>);

    impl tracepoint::Sink for Log {
        fn kinds(&self) -> u32 {
            tracepoint::kind::ALL
        }
        fn event(&mut self, cx: &tracepoint::Cx, ev: &Event) -> bool {
            self.0.borrow_mut().push((cx.now, cx.cur, *ev));
            false
        }
        fn finish(self: Box<Self>, _tasks: &[Task], _r: &mut latlab_core::RunResult) {}
    }

    #[test]
    fn a_sink_sees_the_tracepoints_in_the_order_they_happen() {
        struct Sleeper(bool);
        impl Program for Sleeper {
            fn next(&mut self, _cx: &mut ProgCx) -> Action {
                if std::mem::replace(&mut self.0, true) {
                    Action::Exit
                } else {
                    Action::Sleep(5_000_000)
                }
            }
        }
        let mut k = kernel(variant(PreemptModel::None, &[]));
        let log = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
        k.tp.attach(Box::new(Log(log.clone())));
        let rt = TaskSpec {
            policy: Policy::Fifo,
            rt_priority: 50,
            ..TaskSpec::user("rt", Box::new(Sleeper(false)))
        };
        k.spawn(rt, None);
        // 20 ms of loop holding a lock, with no point to stop at.
        let hog = OneLoop {
            items: 20_000,
            per_item: 1_000,
            point: None,
            lock: Some(Lock::Test),
            bkl: false,
            done: false,
        };
        k.spawn(TaskSpec::user("hog", Box::new(hog)), None);
        k.run_until(100_000_000, |_| {});
        let log = log.borrow();
        assert!(log.windows(2).all(|w| w[0].0 <= w[1].0), "time goes forward");
        let (rt, hog) = (1, 2);
        let at = |f: &dyn Fn(&Event) -> bool| {
            log.iter()
                .position(|(_, _, e)| f(e))
                .unwrap_or_else(|| panic!("missing event in {log:#?}"))
        };
        let forked = at(&|e| matches!(e, Event::SchedWakeup { task: 2, new: true }));
        let locked = at(&|e| {
            matches!(
                e,
                Event::FuncEntry {
                    task: 2,
                    func: "test_loop",
                    lock: Some(Lock::Test),
                    preempt_off: true,
                    ..
                }
            )
        });
        // The 5 ms sleep ends at the next tick (10 ms), in the timer softirq.
        let softirq = at(&|e| matches!(e, Event::SoftirqEntry));
        let waking = at(&|e| matches!(e, Event::SchedWaking { task: 1 }));
        let woken = at(&|e| matches!(e, Event::SchedWakeup { task: 1, new: false }));
        let softirq_done = at(&|e| matches!(e, Event::SoftirqExit));
        let unlocked = at(&|e| {
            matches!(
                e,
                Event::PreemptOn {
                    task: 2,
                    lock: Some(Lock::Test),
                    ..
                }
            )
        });
        let switched = at(&|e| {
            matches!(
                e,
                Event::SchedSwitch {
                    prev: 2,
                    next: 1,
                    reason: SwitchReason::UserReturn
                }
            )
        });
        let exited = at(&|e| {
            matches!(
                e,
                Event::SchedSwitch {
                    prev: 1,
                    reason: SwitchReason::Exit,
                    ..
                }
            )
        });
        assert!(
            forked < locked
                && locked < softirq
                && softirq < waking
                && waking < woken
                && woken < softirq_done
                && softirq_done < unlocked
                && unlocked < switched
                && switched < exited,
            "{log:#?}"
        );
        // After the 10 ms tick's handler (2 us on the test machine).
        assert_eq!(log[waking].0, 10_002_000);
        // The switch waits for the loop: 20 ms of it from about 0.
        assert!(log[switched].0 >= 20_000_000, "{}", log[switched].0);
        // Each event names the task current then: the hog, while it holds the CPU.
        assert_eq!((log[waking].1, log[switched].1), (hog, rt));
    }

    #[test]
    fn preemption_mechanisms_decide_the_wait() {
        // Stock: the woken task waits for the whole loop (ends ~200 ms after start).
        let stock = wake_latency(variant(PreemptModel::None, &[]), None, None, false);
        assert!(stock > 100_000_000, "{stock}");
        // A rescheduling point every item the variant has: microseconds.
        let pt = wake_latency(
            variant(PreemptModel::None, &[Point::ReadZero]),
            Some(Point::ReadZero),
            None,
            false,
        );
        assert!(pt < 100_000, "{pt}");
        // The point exists in the code but not in this kernel: no help.
        let absent = wake_latency(variant(PreemptModel::None, &[]), Some(Point::ReadZero), None, false);
        assert_eq!(absent, stock);
        // Kernel preemption: no lock held, preempted at IRQ return.
        let kp = wake_latency(variant(PreemptModel::Full, &[]), None, None, false);
        assert!(kp < 100_000, "{kp}");
        // Kernel preemption cannot help inside a spinlock.
        let locked = wake_latency(variant(PreemptModel::Full, &[]), None, Some(Lock::Test), false);
        assert!(locked > 100_000_000, "{locked}");
        // Nor in a path holding the big kernel lock (kjournald), though no spinlock is held...
        let bkl = wake_latency(variant(PreemptModel::Full, &[]), None, None, true);
        assert!(bkl > 100_000_000, "{bkl}");
        // ...where an explicit rescheduling point still works (schedule() drops the BKL).
        let bkl_pt = wake_latency(
            variant(PreemptModel::Full, &[Point::ReadZero]),
            Some(Point::ReadZero),
            None,
            true,
        );
        assert!(bkl_pt < 100_000, "{bkl_pt}");
    }

    /// A 2.6-style kernel (O(1) at HZ 100, no preemption) on the test machine with `cpus` CPUs.
    fn smp_kernel(cpus: u32) -> Kernel {
        smp_kernel_on(MachineProfile { cpus, ..machine() })
    }

    /// [`smp_kernel`] on machine `m`.
    fn smp_kernel_on(m: MachineProfile) -> Kernel {
        let st = kstate_on(&m, latlab_swap::by_name("scan-2.4", 16_384).unwrap());
        let v = variant_with(SchedClass::O1, PreemptModel::None, &[]);
        Kernel::new(
            v,
            m,
            Box::new(crate::sched::o1::O1::new(100)),
            st,
            crate::engine::rng_for(7, crate::engine::RngStream::Workload),
        )
    }

    /// A kernel of a fair class under the RT class on two CPUs of the test machine.
    fn fair_kernel(sched: Box<dyn crate::sched::Scheduler>, class: SchedClass) -> Kernel {
        let m = MachineProfile { cpus: 2, ..machine() };
        let st = kstate_on(&m, latlab_swap::by_name("scan-2.4", 16_384).unwrap());
        let v = variant_with(class, PreemptModel::None, &[]);
        Kernel::new(
            v,
            m,
            sched,
            st,
            crate::engine::rng_for(7, crate::engine::RngStream::Workload),
        )
    }

    #[test]
    fn cfs_and_eevdf_share_two_cpus_fairly_among_three_hogs() {
        use crate::sched::rt::WithRt;
        let cfs = WithRt::new(crate::sched::cfs::Cfs::new(crate::sched::cfs::tests::unpatched()));
        let tun = crate::variant::EevdfTunables {
            base_slice_ns: 3_000_000,
            run_to_parity: true,
            place_lag: true,
        };
        let eevdf = WithRt::new(crate::sched::eevdf::Eevdf::new(tun, 100));
        for mut k in [
            fair_kernel(Box::new(cfs), SchedClass::Cfs),
            fair_kernel(Box::new(eevdf), SchedClass::Eevdf),
        ] {
            let pids: Vec<u32> = ["a", "b", "c"]
                .iter()
                .map(|n| k.spawn(TaskSpec::user(*n, Box::new(Hog)), None))
                .collect();
            k.run_until(1_000_000_000, |_| {});
            // Two CPUs' second among three: about 2/3 s each, within a few slices.
            for pid in pids {
                let ns = k.tasks[k.pids[&pid]].cpu_ns;
                assert!(
                    (600_000_000..=730_000_000).contains(&ns),
                    "{}: {pid}: {ns}",
                    k.sched.name()
                );
            }
        }
    }

    /// A task that computes in user space for ever.
    struct Hog;

    impl Program for Hog {
        fn next(&mut self, _cx: &mut ProgCx) -> Action {
            Action::Compute(u64::MAX / 4)
        }
    }

    /// CPU time each of two hogs got in a second on `cpus` CPUs, and the engine's events.
    fn two_hogs(cpus: u32) -> (Nanos, Nanos, u64) {
        let mut k = smp_kernel(cpus);
        let a = k.spawn(TaskSpec::user("a", Box::new(Hog)), None);
        let b = k.spawn(TaskSpec::user("b", Box::new(Hog)), None);
        k.run_until(1_000_000_000, |_| {});
        let ns = |pid| k.tasks[k.pids[&pid]].cpu_ns;
        (ns(a), ns(b), k.events())
    }

    #[test]
    fn two_cpus_run_two_hogs_at_once() {
        let (a, b, _) = two_hogs(1);
        assert!(a + b <= 1_000_000_000, "one CPU shares a second: {a} + {b}");
        assert!(
            a > 300_000_000 && b > 300_000_000,
            "O(1) timeslices share it: {a} / {b}"
        );
        let (a, b, _) = two_hogs(2);
        assert!(a > 990_000_000 && b > 990_000_000, "each hog has a CPU: {a} / {b}");
    }

    #[test]
    fn busy_siblings_share_one_core() {
        let mut k = smp_kernel_on(MachineProfile {
            cpus: 2,
            sibling_speed: 0.6,
            ..machine()
        });
        let a = k.spawn(TaskSpec::user("a", Box::new(Hog)), None);
        let b = k.spawn(
            TaskSpec::user(
                "b",
                Box::new(OneLoop {
                    items: 100,
                    per_item: 1_000_000,
                    point: None,
                    lock: None,
                    bkl: false,
                    done: false,
                }),
            ),
            None,
        );
        k.run_until(1_000_000_000, |_| {});
        // b's 100 ms system call takes 100 / 0.6 ms while a runs beside it; both then
        // compute for the rest of the second, each at 0.6 of a core: CPU time is wall time.
        let ns = |pid| k.tasks[k.pids[&pid]].cpu_ns;
        assert!(ns(a) > 990_000_000 && ns(b) > 990_000_000, "{} / {}", ns(a), ns(b));
        let user_left = |pid| match k.tasks[k.pids[&pid]].exec {
            Exec::User { left } => left,
            _ => 0,
        };
        // a's burst got 0.6 s of work done in the second, not 1 s.
        let done = u64::MAX / 4 - user_left(a);
        assert!((590_000_000..=610_000_000).contains(&done), "{done}");
    }

    #[test]
    fn an_smp_run_repeats_itself() {
        assert_eq!(two_hogs(2), two_hogs(2));
    }

    #[test]
    fn a_wakeup_goes_to_the_idle_cpu() {
        // One CPU: the woken SCHED_FIFO task waits for the hog's 200 ms non-preemptible loop.
        let up = wake_latency_on(smp_kernel(1), None, None, false);
        assert!(up > 100_000_000, "{up}");
        // Two: the other CPU is idle and runs it at once (wake_idle, a reschedule IPI).
        let smp = wake_latency_on(smp_kernel(2), None, None, false);
        assert!(smp < 100_000, "{smp}");
    }

    /// A system call of one step (its kernel thread woken as the step starts, when `wake`),
    /// recording the items each end of its loop reports done.
    struct OneStep {
        step: Option<Step>,
        wake: Option<Chan>,
        done: std::rc::Rc<std::cell::RefCell<Vec<u64>>>,
    }

    impl Path<FsState> for OneStep {
        fn name(&self) -> &'static str {
            "sys_test"
        }
        fn next(&mut self, k: &mut FsState, _cx: &Ctx) -> Step {
            if let Some(c) = self.wake.take() {
                k.out.push(KReq::Wake(c));
            }
            self.step.take().unwrap_or(Step::Done)
        }
        fn advanced(&mut self, _k: &mut FsState, _cx: &Ctx, done: u64) {
            self.done.borrow_mut().push(done);
        }
    }

    /// Runs its actions in turn, then exits.
    struct Actions(Vec<Action>);

    impl Program for Actions {
        fn next(&mut self, _cx: &mut ProgCx) -> Action {
            if self.0.is_empty() {
                Action::Exit
            } else {
                self.0.remove(0)
            }
        }
    }

    /// What a task running `step` in one system call went through (see [`preempted`]).
    struct Preempted {
        /// CPU time the step got (its `Runtime` events).
        ran: Nanos,
        /// Its CPU time before its task was first switched away inside it.
        ran_before_switch: Nanos,
        /// Why its task was switched away while the step was under way.
        switches: Vec<SwitchReason>,
        /// The items its loop reported done, at each end.
        advanced: Vec<u64>,
        /// From the step's entry to the end of its last CPU time, less the time its task was
        /// off the CPU.
        on_cpu: Nanos,
    }

    /// A task running `step` in one system call on kernel `k`, while another task of
    /// `policy` (priority 50 when real-time) wakes beside it: from a 5 ms sleep (at the
    /// 10 ms tick), or, with `woken_by_step`, from its kernel thread's channel as the step
    /// starts; it then computes for 3 ms.
    fn preempted(mut k: Kernel, step: Step, policy: Policy, woken_by_step: bool) -> Preempted {
        let func = step_func(&step);
        let log = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
        k.tp.attach(Box::new(Log(log.clone())));
        let chan = Chan::Kthread(999);
        let first = if woken_by_step {
            Action::Syscall(Box::new(Script {
                name: "sys_wait",
                steps: smallvec::smallvec![Step::Block(chan)],
            }))
        } else {
            Action::Sleep(5_000_000)
        };
        k.spawn(
            TaskSpec {
                policy,
                rt_priority: if policy == Policy::Other { 0 } else { 50 },
                ..TaskSpec::user("waker", Box::new(Actions(vec![first, Action::Compute(3_000_000)])))
            },
            None,
        );
        let advanced = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
        let path = OneStep {
            step: Some(step),
            wake: woken_by_step.then_some(chan),
            done: advanced.clone(),
        };
        k.spawn(
            TaskSpec::user("hog", Box::new(Actions(vec![Action::Syscall(Box::new(path))]))),
            None,
        );
        k.run_until(1_000_000_000, |_| {});
        let hog = 2;
        let log = log.borrow();
        let mut p = Preempted {
            ran: 0,
            ran_before_switch: 0,
            switches: Vec::new(),
            advanced: advanced.borrow().clone(),
            on_cpu: 0,
        };
        // The step runs from its entry to the end of its last stretch of CPU time (a
        // `Runtime` event comes at the end of the time it counts).
        let mine = |e: &Event| {
            matches!(*e, Event::FuncEntry { task, func: f, .. } | Event::Runtime { task, func: f, .. }
                if task == hog && f == func)
        };
        let start = log
            .iter()
            .find(|(_, _, e)| matches!(e, Event::FuncEntry { .. }) && mine(e))
            .expect("the step started")
            .0;
        let end = log.iter().rfind(|(_, _, e)| mine(e)).expect("the step ran").0;
        let mut left_at = None;
        for &(now, _, ev) in log.iter().filter(|&&(t, _, _)| (start..=end).contains(&t)) {
            match ev {
                Event::Runtime { task, ns, func: f, .. } if task == hog && f == func => {
                    p.ran += ns;
                    if p.switches.is_empty() {
                        p.ran_before_switch += ns;
                    }
                }
                Event::SchedSwitch { prev, reason, .. } if prev == hog && now < end => {
                    p.switches.push(reason);
                    left_at = Some(now);
                }
                Event::SchedSwitch { next, .. } if next == hog => {
                    if let Some(t) = left_at.take() {
                        p.on_cpu += now - t;
                    }
                }
                _ => {}
            }
        }
        p.on_cpu = end - start - p.on_cpu;
        p
    }

    #[test]
    fn a_step_preempted_at_interrupt_return_still_does_all_its_work() {
        let work = 30_000_000;
        // A loop of items of 997 ns: the 10 ms tick's return comes in the middle of one.
        let (items, per_item) = (30_000, 997);
        for model in [PreemptModel::None, PreemptModel::Full, PreemptModel::Lazy] {
            let w = preempted(
                kernel(variant(model, &[])),
                path::Work::plain("long_work", work),
                Policy::Fifo,
                false,
            );
            assert_eq!(w.ran, work, "{model:?}: the work step's CPU time");
            // Interrupts (the ticks) steal some time from the step without being its own.
            assert!((work..work + 100_000).contains(&w.on_cpu), "{model:?}: {}", w.on_cpu);
            let l = preempted(
                kernel(variant(model, &[])),
                LoopStep::plain("long_loop", items, per_item, Default::default()),
                Policy::Fifo,
                false,
            );
            assert_eq!(l.ran, items * per_item, "{model:?}: the loop's CPU time");
            assert_eq!(l.advanced, [items], "{model:?}: every item, reported once at the end");
            if model == PreemptModel::None {
                // No kernel preemption: the woken task waits for the path's end.
                assert!(w.switches.is_empty() && l.switches.is_empty(), "{model:?}");
            } else {
                // Preempted at the tick's return that woke the task, in the middle of an item.
                assert_eq!(w.switches, [SwitchReason::IrqExit], "{model:?}");
                assert_eq!(l.switches, [SwitchReason::IrqExit], "{model:?}");
                assert!(w.ran_before_switch < work / 2, "{model:?}: {}", w.ran_before_switch);
                assert_ne!(l.ran_before_switch % per_item, 0, "{model:?}: {}", l.ran_before_switch);
            }
        }
    }

    #[test]
    fn a_loop_preempted_at_an_items_end_resumes_from_there() {
        // The step's own start wakes the real-time task: with no interrupt returning, kernel
        // preemption takes the loop at its first item's end; the loop goes on from there.
        let (items, per_item) = (30_000, 997);
        for model in [PreemptModel::None, PreemptModel::Full, PreemptModel::Lazy] {
            let l = preempted(
                kernel(variant(model, &[])),
                LoopStep::plain("long_loop", items, per_item, Default::default()),
                Policy::Fifo,
                true,
            );
            assert_eq!(l.ran, items * per_item, "{model:?}: the loop's CPU time");
            assert_eq!(l.advanced, [items], "{model:?}");
            if model == PreemptModel::None {
                assert!(l.switches.is_empty(), "{model:?}");
            } else {
                assert_eq!(l.switches, [SwitchReason::IrqExit], "{model:?}");
                assert_eq!(l.ran_before_switch, per_item, "{model:?}");
            }
        }
    }

    #[test]
    fn a_step_preempted_after_a_lazy_resched_is_promoted_at_the_tick_still_does_all_its_work() {
        // On EEVDF, a SCHED_OTHER wakeup or slice end only sets NEED_RESCHED_LAZY against a
        // SCHED_OTHER task in the kernel: the tick after promotes it, and its return
        // preempts the step.
        let work = 50_000_000;
        let tun = crate::variant::EevdfTunables {
            base_slice_ns: 3_000_000,
            run_to_parity: true,
            place_lag: true,
        };
        let mut v = variant_with(SchedClass::Eevdf, PreemptModel::Lazy, &[]);
        v.eevdf = Some(tun);
        let k = Kernel::new(
            v,
            machine(),
            Box::new(crate::sched::rt::WithRt::new(crate::sched::eevdf::Eevdf::new(tun, 100))),
            kstate(),
            crate::engine::rng_for(7, crate::engine::RngStream::Workload),
        );
        let w = preempted(k, path::Work::plain("long_work", work), Policy::Other, false);
        assert_eq!(w.switches.first(), Some(&SwitchReason::IrqExit));
        // Set at a tick, promoted at the next, well inside the step.
        assert!(
            (10_000_000..40_000_000).contains(&w.ran_before_switch),
            "{}",
            w.ran_before_switch
        );
        assert_eq!(w.ran, work);
    }
}
