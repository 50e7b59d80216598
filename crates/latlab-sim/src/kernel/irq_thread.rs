//! Threaded interrupt handlers and softirqs in a thread: what the hard interrupt leaves for
//! its thread (the CPU loop's side is `cpu/irq_thread.rs`).
//!
//! **Hard interrupts in threads** (the variant's `hardirq_threads`, HP). Ingo Molnar's
//! voluntary-preempt patch took Scott Wood's irq threads in 2.6.8-rc2-M5 and kept them
//! through the R and S releases seed 003 ran: with `hardirq_preemption` on, `do_IRQ` only
//! masks and acknowledges the line and wakes the line's thread (`redirect_hardirq`), which
//! runs the handlers. The threads were named `IRQ <n>` and ran at SCHED_FIFO 50 by default,
//! settable per thread with `chrt`; a handler marked SA_NODELAY (the timer's, the RTC's)
//! stayed in hard context, and `/proc/irq/<n>/<handler>/threaded` moved a handler back
//! (lkml, "[patch] voluntary-preempt-2.6.8-rc2-M5", Ingo Molnar, 2004-07-29:
//! <https://lkml.org/lkml/2004/7/29/298>). Mainline took the idea as `request_threaded_irq`
//! (2.6.30) and the `threadirqs` boot option (2.6.39; always on under PREEMPT_RT, in
//! mainline since 6.12): `irq_forced_thread_fn` runs a forced-threaded handler in
//! `irq/<n>-<name>` at SCHED_FIFO 50 (`sched_set_fifo`, kernel/irq/manage.c `irq_thread`);
//! the timer interrupts (IRQF_TIMER: the tick, hrtimer expiry) and IPIs are never threaded.
//! The model names the thread as 6.x does (`irq/14-ide0`) for both.
//!
//! Which lines are threaded follows the kernel: under the voluntary-preempt patch the IDE
//! line only (the RTC's handler is SA_NODELAY); on a `cfs`/`eevdf` kernel (`threadirqs`)
//! the RTC's too. The tick, the hrtimer expiry and IPIs stay in hard context in both. The
//! `6.18-rt` variant (PREEMPT_RT) is `hardirq_threads = true` on an `eevdf` kernel.
//!
//! **Softirqs in a thread** (the variant's `softirq_threads`, SP). With VP's
//! `softirq_preemption` every softirq runs in `ksoftirqd/0`, never on the way out of an
//! interrupt. Its successor in the -rt patch (CONFIG_PREEMPT_SOFTIRQS, kernel/softirq.c
//! `ksoftirqd`) set the thread to SCHED_FIFO 24 (`sched_priority = 24`; listed in C.
//! Hallinan, *Embedded Linux Primer*, 2006, listing 17-3, beside `set_user_nice(current, -10)`
//! without it); the model runs VP's ksoftirqd at that priority, as the patch's line did
//! (VP's own setting was not found: an assumption). 6.x PREEMPT_RT instead runs a softirq in
//! the task that raised it under the per-CPU BH lock (kernel/softirq.c, `softirq_ctrl.lock`,
//! a `local_lock_t`): the model's one softirq raised in a task, `net_rx_action` on a
//! loopback send (net/mod.rs), runs in the sender's path holding `Lock::Softirq`, which is
//! a per-CPU sleeping lock under `locks = "sleeping"` (kernel/rtmutex.rs), so it stays
//! preemptible there. The softirq work the model runs as wakeups at no modelled cost (the
//! timer softirq's and a network arrival's, `Ev::Wake`) goes to ksoftirqd under SP only.

use crate::kernel::path::Chan;
use crate::machine::MachineProfile;
use latlab_core::Nanos;
use std::collections::VecDeque;

/// The default priority of an interrupt thread: SCHED_FIFO 50 (VP's, and 6.x's
/// `sched_set_fifo`, `MAX_RT_PRIO / 2`).
pub const IRQ_THREAD_PRIORITY: u32 = 50;

/// ksoftirqd's priority under SP: SCHED_FIFO 24 (see the module comment).
pub const KSOFTIRQD_PRIORITY: u32 = 24;

/// `wake_up_process` of the interrupt's thread from the primary handler: 2.6.9's
/// `try_to_wake_up` (task_rq_lock, `activate_task`'s `recalc_task_prio` and enqueue, the
/// preemption test): ~300 instructions, 4 misses (the thread's task_struct, the runqueue,
/// its priority array's list head and bitmap). An estimate from the code path; the
/// masking and acknowledging the primary handler does is every interrupt's entry and
/// exit (`irq_entry_exit_ns`).
const WAKE_THREAD: (f64, f64) = (300.0, 4.0);

/// A device interrupt a thread can take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Line {
    /// IDE (IRQ 14).
    Ide,
    /// The RTC (IRQ 8).
    Rtc,
}

impl Line {
    /// The thread's name (6.x's `irq/<n>-<name>`).
    pub fn comm(self) -> &'static str {
        match self {
            Line::Ide => "irq/14-ide0",
            Line::Rtc => "irq/8-rtc0",
        }
    }

    /// The name a variant's `irq_thread_priority` table uses for the line.
    pub fn name(self) -> &'static str {
        match self {
            Line::Ide => "ide0",
            Line::Rtc => "rtc0",
        }
    }

    pub const ALL: [Line; 2] = [Line::Ide, Line::Rtc];
}

/// Handler work a primary handler left for its thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IrqWork {
    /// `ide_intr` of disk request `id`.
    Disk(u64),
    /// `rtc_interrupt` of the interrupt raised at the time given.
    Rtc(Nanos),
}

/// One threaded line: its thread and the work left for it.
#[derive(Clone, Debug)]
pub struct Threaded {
    /// The thread's pid (0 until it is started).
    pub pid: u32,
    /// Its SCHED_FIFO priority.
    pub prio: u32,
    pending: VecDeque<IrqWork>,
}

/// The interrupt threads and ksoftirqd of a run (none with HP and SP off).
#[derive(Clone, Debug, Default)]
pub struct IrqThreads {
    /// The IDE line's thread, if threaded.
    pub ide: Option<Threaded>,
    /// The RTC line's thread, if threaded.
    pub rtc: Option<Threaded>,
    /// ksoftirqd/0 with SP: its pid and the wakeups its softirqs owe.
    pub softirqd: Option<(u32, Vec<Chan>)>,
    /// The primary handler's wakeup of a thread.
    pub wake_ns: Nanos,
}

impl IrqThreads {
    /// The threads a kernel runs on machine `m` (built by [`crate::assemble`]): the IDE and
    /// RTC lines' threads at the SCHED_FIFO priority given (None: the handler runs in hard
    /// context), and ksoftirqd if `softirqd`.
    pub fn new(ide: Option<u32>, rtc: Option<u32>, softirqd: bool, m: &MachineProfile) -> Self {
        let threaded = |prio: Option<u32>| {
            prio.map(|prio| Threaded {
                pid: 0,
                prio,
                pending: VecDeque::new(),
            })
        };
        IrqThreads {
            ide: threaded(ide),
            rtc: threaded(rtc),
            softirqd: softirqd.then(|| (0, Vec::new())),
            wake_ns: m.cost(WAKE_THREAD.0, WAKE_THREAD.1),
        }
    }

    /// The threads to start: their names and SCHED_FIFO priorities.
    pub fn threads(&self) -> Vec<(&'static str, u32)> {
        let mut out: Vec<(&'static str, u32)> = Line::ALL
            .into_iter()
            .filter_map(|l| self.line(l).map(|t| (l.comm(), t.prio)))
            .collect();
        if self.softirqd.is_some() {
            out.push(("ksoftirqd/0", KSOFTIRQD_PRIORITY));
        }
        out
    }

    /// Does any device interrupt's handler run in a thread?
    #[inline]
    pub fn any_threaded(&self) -> bool {
        self.ide.is_some() || self.rtc.is_some()
    }

    /// Record a started thread's pid by its name.
    pub fn register(&mut self, comm: &str, pid: u32) {
        if let Some(t) = Line::ALL.into_iter().find(|l| l.comm() == comm) {
            if let Some(th) = self.line_mut(t) {
                th.pid = pid;
            }
        } else if let Some(s) = &mut self.softirqd {
            s.0 = pid;
        }
    }

    pub fn line(&self, l: Line) -> Option<&Threaded> {
        match l {
            Line::Ide => self.ide.as_ref(),
            Line::Rtc => self.rtc.as_ref(),
        }
    }

    fn line_mut(&mut self, l: Line) -> Option<&mut Threaded> {
        match l {
            Line::Ide => self.ide.as_mut(),
            Line::Rtc => self.rtc.as_mut(),
        }
    }

    /// Leave `work` for line `l`'s thread; its pid to wake, or None when the line's handler
    /// runs in hard context (or its thread has not started).
    pub fn defer(&mut self, l: Line, work: IrqWork) -> Option<u32> {
        let th = self.line_mut(l).filter(|t| t.pid != 0)?;
        th.pending.push_back(work);
        Some(th.pid)
    }

    /// The next work left for line `l`'s thread.
    pub fn take(&mut self, l: Line) -> Option<IrqWork> {
        self.line_mut(l)?.pending.pop_front()
    }

    /// Leave a softirq's wakeup of `chan` for ksoftirqd: its pid to wake, or None when
    /// softirqs run on interrupt exit.
    pub fn raise_softirq(&mut self, chan: Chan) -> Option<u32> {
        let (pid, pending) = self.softirqd.as_mut().filter(|s| s.0 != 0)?;
        pending.push(chan);
        Some(*pid)
    }

    /// The wakeups ksoftirqd owes, taken.
    pub fn take_softirqs(&mut self) -> Vec<Chan> {
        self.softirqd
            .as_mut()
            .map(|s| std::mem::take(&mut s.1))
            .unwrap_or_default()
    }
}
