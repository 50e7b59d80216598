//! The CPU loop's side of threaded interrupts (HP) and softirqs in a thread (SP): the
//! primary handler that only acknowledges the line and wakes its thread, the softirq raise
//! that wakes ksoftirqd, and the threads' programs. What the kernels did, and which one each
//! variant follows: `kernel/irq_thread.rs`.

use super::{Ev, Kernel};
use crate::fs::state::FsState;
use crate::kernel::catalog::WaitOn;
use crate::kernel::irq_thread::{IrqWork, Line};
use crate::kernel::path::{Chan, Ctx, Path, Step, Work};
use crate::kernel::task::Policy;
use crate::kernel::tracepoint::{self, Event, IrqCtx};
use crate::kernel::Irq;
use crate::workload::{Action, ProgCx, Program, TaskSpec};
use latlab_core::Nanos;

impl<S: tracepoint::Sink> Kernel<S> {
    /// Start HP's interrupt threads and SP's ksoftirqd, each SCHED_FIFO at its priority
    /// (none when both are off).
    pub fn start_irq_threads(&mut self) {
        for (comm, prio) in self.st.irq_threads.threads() {
            let spec = TaskSpec {
                policy: Policy::Fifo,
                rt_priority: prio,
                ..TaskSpec::kthread(comm, IrqThreadProg::new(comm))
            };
            let pid = self.spawn(spec, None);
            self.st.irq_threads.register(comm, pid);
        }
    }

    /// HP: when `irq`'s handler runs in a thread, its primary handler (VP's
    /// `redirect_hardirq`, 6.x's `irq_default_primary_handler`): the interrupt's entry and
    /// exit and the thread's wakeup, the handler's work left for the thread. False when the
    /// handler runs here in hard context (the tick and hrtimer expiry always do).
    #[inline(always)]
    pub(super) fn irq_to_thread(&mut self, at: Nanos, irq: Irq) -> bool {
        // One test on a kernel without threaded interrupts.
        self.st.irq_threads.any_threaded() && self.primary_handler(at, irq)
    }

    #[inline(never)]
    fn primary_handler(&mut self, at: Nanos, irq: Irq) -> bool {
        let (line, work) = match irq {
            Irq::Disk(id) => (Line::Ide, IrqWork::Disk(id)),
            Irq::Rtc => (Line::Rtc, IrqWork::Rtc(at)),
            Irq::Tick | Irq::Hrtimer(_) => return false,
        };
        let Some(pid) = self.st.irq_threads.defer(line, work) else {
            return false;
        };
        self.hardirq_entry(at, irq, self.m.irq_entry_exit_ns + self.st.irq_threads.wake_ns);
        if let Some(period) = self.rtc_period.filter(|_| irq == Irq::Rtc) {
            self.q.schedule(at + period, Ev::Irq(Irq::Rtc));
        }
        self.wake(Chan::Kthread(pid));
        trace_event!(self, IRQ_EXIT, Event::IrqExit { irq });
        self.irq_ctx = IrqCtx::Task;
        self.preempt_after_irq();
        true
    }

    /// SP: a softirq's wakeup of `chan` raised with softirqs in a thread: left for
    /// ksoftirqd, which is woken (`wakeup_softirqd`). False when softirqs run on interrupt
    /// exit.
    #[inline(always)]
    pub(super) fn softirq_to_thread(&mut self, chan: Chan) -> bool {
        self.st.irq_threads.softirqd.is_some() && self.wakeup_softirqd(chan)
    }

    #[inline(never)]
    fn wakeup_softirqd(&mut self, chan: Chan) -> bool {
        let Some(pid) = self.st.irq_threads.raise_softirq(chan) else {
            return false;
        };
        self.wake(Chan::Kthread(pid));
        self.preempt_after_irq();
        true
    }
}

/// An interrupt thread's loop (`irq_thread`: wait for the primary handler's wakeup, run the
/// handler for each interrupt left), or ksoftirqd's (run the pending softirqs).
pub struct IrqThreadProg {
    /// The line whose handler it runs; None: ksoftirqd.
    line: Option<Line>,
}

impl IrqThreadProg {
    /// The program of the thread named `comm` (an `irq/<n>-<name>` thread or ksoftirqd).
    pub fn new(comm: &str) -> Box<Self> {
        Box::new(IrqThreadProg {
            line: Line::ALL.into_iter().find(|l| l.comm() == comm),
        })
    }
}

impl Program for IrqThreadProg {
    fn next(&mut self, cx: &mut ProgCx) -> Action {
        let me = Chan::Kthread(cx.pid);
        let m = cx.m;
        let st = cx.kthread_state();
        let path: Box<dyn Path<FsState>> = match self.line {
            Some(line) => match st.irq_threads.take(line) {
                Some(work) => {
                    let ns = match work {
                        IrqWork::Disk(_) => m.disk_handler_ns,
                        IrqWork::Rtc(_) => m.rtc_handler_ns,
                    };
                    Box::new(Handler { work, ns, ran: false })
                }
                None => WaitOn::new(me, None),
            },
            None => {
                let chans = st.irq_threads.take_softirqs();
                if chans.is_empty() {
                    WaitOn::new(me, None)
                } else {
                    Box::new(Softirqs { chans })
                }
            }
        };
        Action::Syscall(path)
    }
}

/// One interrupt's handler run in its thread (`irq_forced_thread_fn`): the handler's time,
/// then what it does at its end, as in hard context.
struct Handler {
    work: IrqWork,
    ns: Nanos,
    ran: bool,
}

impl Path<FsState> for Handler {
    fn name(&self) -> &'static str {
        "irq_thread"
    }
    fn next(&mut self, k: &mut FsState, cx: &Ctx) -> Step {
        if !std::mem::replace(&mut self.ran, true) {
            return Work::plain(
                match self.work {
                    IrqWork::Disk(_) => "ide_intr",
                    IrqWork::Rtc(_) => "rtc_interrupt",
                },
                self.ns,
            );
        }
        match self.work {
            IrqWork::Disk(id) => k.disk_complete(id, cx.now),
            IrqWork::Rtc(at) => {
                k.rtc.interrupt(at);
                k.wake(Chan::Rtc);
            }
        }
        Step::Done
    }
}

/// ksoftirqd's pass: the softirqs' wakeups (the timer softirq's expired timers, the network
/// receive's), at the model's softirq cost (none, as on interrupt exit).
struct Softirqs {
    chans: Vec<Chan>,
}

impl Path<FsState> for Softirqs {
    fn name(&self) -> &'static str {
        "ksoftirqd"
    }
    fn next(&mut self, k: &mut FsState, _cx: &Ctx) -> Step {
        for chan in self.chans.drain(..) {
            k.wake(chan);
        }
        Step::Done
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{kernel, machine, variant_with, Log};
    use super::*;
    use crate::kernel::irq_thread::IrqThreads;
    use crate::kernel::task::TaskId;
    use crate::variant::{PreemptModel, SchedClass};
    use std::cell::{Cell, RefCell};
    use std::rc::Rc;

    /// The events a [`Log`] keeps: time, the current task, the event.
    type Events = Rc<RefCell<Vec<(Nanos, usize, Event)>>>;

    /// A kernel whose RTC line is threaded (HP) at `prio`, or not, and with ksoftirqd (SP)
    /// or not, its threads started, the RTC at 1024 Hz, logging every event.
    fn threaded_kernel(rtc_prio: Option<u32>, softirqd: bool) -> (crate::cpu::Kernel, Events) {
        let mut v = variant_with(SchedClass::Goodness24, PreemptModel::Full, &[]);
        v.hardirq_threads = rtc_prio.is_some();
        v.softirq_threads = softirqd;
        let mut k = kernel(v);
        k.st.irq_threads = IrqThreads::new(None, rtc_prio, softirqd, &machine());
        k.start_irq_threads();
        let log = Rc::new(RefCell::new(Vec::new()));
        k.tp.attach(Box::new(Log(log.clone())) as Box<dyn tracepoint::Sink>);
        k.start_rtc(1024);
        (k, log)
    }

    struct Hog;
    impl Program for Hog {
        fn next(&mut self, _cx: &mut ProgCx) -> Action {
            Action::Compute(1_000_000)
        }
    }

    fn spawn_hog(k: &mut crate::cpu::Kernel, policy: Policy, prio: u32) {
        k.spawn(
            TaskSpec {
                policy,
                rt_priority: prio,
                ..TaskSpec::user("hog", Box::new(Hog))
            },
            None,
        );
    }

    fn task(k: &crate::cpu::Kernel, comm: &str) -> TaskId {
        k.tasks.iter().position(|t| t.comm == comm).expect("task exists")
    }

    #[test]
    fn with_hp_the_rtc_handler_runs_in_its_thread_and_the_interrupt_only_wakes_it() {
        let m = machine();
        let (mut k, log) = threaded_kernel(Some(50), false);
        spawn_hog(&mut k, Policy::Other, 0);
        k.run_until(100_000_000, |_| {});
        let th = task(&k, "irq/8-rtc0");
        let rtcs = log
            .borrow()
            .iter()
            .filter(|(_, _, e)| matches!(e, Event::IrqEntry { irq: Irq::Rtc, .. }))
            .count() as u64;
        assert!(rtcs >= 100, "{rtcs} RTC interrupts in 100 ms at 1024 Hz");
        // The handler's time is the thread's, in `rtc_interrupt`; the interrupt's own is
        // the entry, exit and wakeup only.
        let handler_ns: Nanos = log
            .borrow()
            .iter()
            .filter_map(|(_, _, e)| match e {
                Event::Runtime {
                    task,
                    ns,
                    func: "rtc_interrupt",
                    ..
                } if *task == th => Some(*ns),
                _ => None,
            })
            .sum();
        assert!(handler_ns + m.rtc_handler_ns >= rtcs * m.rtc_handler_ns, "{handler_ns}");
        assert!(k.tasks[th].cpu_ns >= handler_ns);
        let wake = k.st.irq_threads.wake_ns;
        let ticks = k.stats.irqs - rtcs;
        assert_eq!(
            k.stats.irq_ns,
            rtcs * (m.irq_entry_exit_ns + wake) + ticks * (m.irq_entry_exit_ns + m.tick_handler_ns)
        );
        // Without HP the handler runs in the interrupt, no thread's.
        let (mut k, _) = threaded_kernel(None, false);
        spawn_hog(&mut k, Policy::Other, 0);
        k.run_until(100_000_000, |_| {});
        assert!(k.tasks.iter().all(|t| !t.comm.starts_with("irq/")));
        assert!(k.stats.irq_ns >= rtcs * (m.irq_entry_exit_ns + m.rtc_handler_ns));
    }

    #[test]
    fn a_higher_priority_fifo_task_keeps_the_interrupt_thread_off_the_cpu() {
        let ran = |rtc_prio: u32| {
            let (mut k, _) = threaded_kernel(Some(rtc_prio), false);
            spawn_hog(&mut k, Policy::Fifo, 60);
            k.run_until(50_000_000, |_| {});
            k.tasks[task(&k, "irq/8-rtc0")].cpu_ns
        };
        // FIFO 60 beats the thread's default 50: no handler runs while it hogs the CPU.
        assert_eq!(ran(50), 0);
        // At 99 (`irq_thread_priority`) the thread preempts the hog at each interrupt.
        assert!(ran(99) > 0);
    }

    #[test]
    fn with_sp_a_timer_softirq_wakes_its_sleeper_from_ksoftirqd() {
        struct Sleeper(Rc<Cell<Nanos>>, bool);
        impl Program for Sleeper {
            fn next(&mut self, cx: &mut ProgCx) -> Action {
                if std::mem::replace(&mut self.1, true) {
                    self.0.set(cx.now);
                    return Action::Exit;
                }
                Action::Sleep(5_000_000)
            }
        }
        let woken_by = |sp: bool| {
            let (mut k, log) = threaded_kernel(None, sp);
            let woke = Rc::new(Cell::new(0));
            k.spawn(TaskSpec::user("sleeper", Box::new(Sleeper(woke.clone(), false))), None);
            k.run_until(50_000_000, |_| {});
            let sleeper = task(&k, "sleeper");
            let waker = log.borrow().iter().find_map(|(_, cur, e)| match e {
                Event::SchedWaking { task } if *task == sleeper => Some(*cur),
                _ => None,
            });
            (waker.expect("the sleeper was woken"), woke.get(), k)
        };
        let (waker, woke_sp, k) = woken_by(true);
        assert_eq!(waker, task(&k, "ksoftirqd/0"));
        let (waker, woke, k) = woken_by(false);
        assert!(k.tasks.iter().all(|t| t.comm != "ksoftirqd/0"));
        assert_ne!(k.tasks[waker].comm, "ksoftirqd/0");
        // The switch to ksoftirqd and back is on the sleeper's way.
        assert!(woke_sp > woke && woke > 0, "{woke_sp} {woke}");
    }
}
