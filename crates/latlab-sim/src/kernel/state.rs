//! The core's state ([`Core`]), beneath every subsystem's: each layer's state holds the one
//! below it (`dev::DevState` the core's, `mm::state::MmState` the devices',
//! `fs::state::FsState` mm's), so a code path reaches only its own layer and the ones
//! beneath it.
//!
//! Paths read and change this state; they never touch the CPU loop, the event queue or
//! other tasks directly. What they need from the kernel (wake a thread, arm a timer for a
//! disk completion) they put in [`Core::out`], which the CPU loop drains after each call.

use crate::kernel::catalog::Costs;
use crate::kernel::path::Chan;
use crate::kernel::task::Policy;
use crate::machine::MachineProfile;
use latlab_core::Nanos;

/// A request from a path to the CPU loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KReq {
    /// Wake every task sleeping on the channel.
    Wake(Chan),
    /// Raise a disk-completion interrupt for request `id` at the given time.
    DiskIrq { at: Nanos, id: u64 },
    /// Wake the channel at the given time (network arrival, timer-driven completion).
    WakeAt { at: Nanos, chan: Chan },
    /// out_of_memory() decided to kill: `oom_kill()` picks the victim ([`crate::mm::oom_kill`]).
    OomKill,
}

/// The core's state, beneath every subsystem: the requests paths leave for the CPU loop,
/// the clock and costs they read, the kernel threads they wake, timers.
pub struct Core {
    /// Requests for the CPU loop.
    pub out: Vec<KReq>,
    /// Well-known kernel-thread pids (bdflush, kupdated, kjournald, kswapd), 0 if absent.
    pub kthreads: KthreadPids,
    /// Jiffies since boot.
    pub jiffies: u64,
    /// Costs of this machine's code paths.
    pub c: Costs,
    /// When the workload's main task finished.
    pub workload_done: Option<Nanos>,
    /// Unique tokens for network waits.
    pub net_token: u64,
    /// Where timer expiries come from (the timer subsystem).
    pub timers: TimerBase,
    /// Each CPU's armed hrtimers (with `TimerBase::Hrtimer`).
    pub hrtimers: super::hrtimer::HrtimerBases,
    /// POSIX timers and the signals they queued.
    pub posix: super::posix_timer::PosixTimers,
    /// `current->mm` of the task whose path runs (0: a kernel thread's, none).
    pub current_mm: u32,
    /// Interrupt threads and ksoftirqd (HP, SP), and the work left for them.
    pub irq_threads: super::irq_thread::IrqThreads,
    /// Sleeping locks' owners and waiters (PREEMPT_RT, [`super::rtmutex`]).
    pub rtmutex: super::rtmutex::RtMutexes,
}

impl Core {
    /// The core's state on machine `m`, its timers from `timers`.
    pub fn new(m: &MachineProfile, timers: TimerBase) -> Self {
        Core {
            out: Vec::new(),
            kthreads: KthreadPids::default(),
            jiffies: 0,
            c: Costs::new(m),
            workload_done: None,
            net_token: 0,
            timers,
            hrtimers: Default::default(),
            posix: Default::default(),
            current_mm: 0,
            irq_threads: Default::default(),
            rtmutex: Default::default(),
        }
    }

    pub fn wake(&mut self, chan: Chan) {
        self.out.push(KReq::Wake(chan));
    }

    /// Wake a kernel thread by pid (no-op if it does not exist in this run).
    pub fn wake_kthread(&mut self, pid: u32) {
        if pid != 0 {
            self.out.push(KReq::Wake(Chan::Kthread(pid)));
        }
    }
}

/// pids of the kernel threads paths may wake.
#[derive(Clone, Copy, Debug, Default)]
pub struct KthreadPids {
    bdflush: u32,
    kjournald: u32,
    kswapd: u32,
    /// 3.2's per-device flusher (`flush-8:0`).
    flusher: u32,
    /// 6.x ext4's conversion kworker.
    ext4_rsv: u32,
}

impl KthreadPids {
    /// 2.4's bdflush (`wake_up_process(bdflush_tsk)`), 0 if absent.
    pub fn bdflush(&self) -> u32 {
        self.bdflush
    }
    /// kjournald (`journal->j_task`), 0 if absent.
    pub fn kjournald(&self) -> u32 {
        self.kjournald
    }
    /// kswapd (`kswapd_task`, 2.6's `pgdat->kswapd`), 0 if absent.
    pub fn kswapd(&self) -> u32 {
        self.kswapd
    }
    /// 3.2's per-device flusher (`bdi->wb.task`), 0 if absent.
    pub fn flusher(&self) -> u32 {
        self.flusher
    }
    /// ext4's `ext4-rsv-conversion` kworker (`queue_work(rsv_conversion_wq)`), 0 if absent.
    pub fn ext4_rsv(&self) -> u32 {
        self.ext4_rsv
    }
}

/// Where timer expiries come from, as [`crate::assemble`] chose.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimerBase {
    /// The 2.4 timer list (kernel/timer.c): a timer fires from the tick after it is due.
    TimerList { tick_ns: Nanos },
    /// hrtimers (kernel/time/hrtimer.c): each CPU's queue of timers by expiry
    /// ([`super::hrtimer`]), the interrupt programmed for the first; a SCHED_OTHER sleeper's
    /// timer has the range `slack_ns` (the timer slack every task inherits from init, 2.6.28+;
    /// `None` before).
    Hrtimer { slack_ns: Option<Nanos> },
}

impl TimerBase {
    /// When a timer due at `due` fires: at the next tick on the timer list; with hrtimers at
    /// its (hard) expiry.
    pub fn fires_at(self, due: Nanos) -> Nanos {
        match self {
            TimerBase::TimerList { tick_ns } => due.div_ceil(tick_ns) * tick_ns,
            TimerBase::Hrtimer { .. } => due,
        }
    }

    /// The range of a `nanosleep` timer armed by a task of `policy`: its timer slack, none for
    /// an RT task (`hrtimer_nanosleep`: `if (rt_task(current)) slack = 0;`, read in a
    /// 2.6.29-2.6.32 tree, with `dl_task` beside it once SCHED_DEADLINE came; since
    /// ed4fb6d7ef68, 6.12, `__setscheduler_params` sets an RT or deadline task's
    /// `timer_slack_ns` to 0, kernel/sched/syscalls.c, and hrtimer_nanosleep takes
    /// `current->timer_slack_ns` as it is).
    pub fn sleep_slack(self, policy: Policy) -> Nanos {
        match self {
            TimerBase::Hrtimer { slack_ns: Some(ns) } if policy == Policy::Other => ns,
            _ => 0,
        }
    }

    /// Does a timer's expiry raise an interrupt of its own, rather than run from the tick?
    pub fn own_interrupt(self) -> bool {
        matches!(self, TimerBase::Hrtimer { .. })
    }
}

/// Which kernel thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kthread {
    Kjournald,
    Bdflush,
    Kupdated,
    Kswapd,
    /// One of the pdflush pool's threads (2.6.0-2.6.31).
    Pdflush,
    /// 3.2's per-device flusher thread.
    Flusher,
    /// 2.6's kswapd of node 0: `balance_pgdat` per wakeup (mm/vmscan.c, 2.6.9).
    Kswapd0,
    /// The kworker of 6.x ext4's `ext4-rsv-conversion` workqueue (fs/ext4/page-io.c
    /// `ext4_end_io_rsv_work`): unwritten-extent conversion and the end of writeback.
    Ext4RsvConversion,
}

impl Kthread {
    /// The thread's `comm`.
    pub fn comm(self) -> &'static str {
        match self {
            Kthread::Kjournald => "kjournald",
            Kthread::Bdflush => "bdflush",
            Kthread::Kupdated => "kupdated",
            Kthread::Kswapd => "kswapd",
            Kthread::Pdflush => "pdflush",
            Kthread::Flusher => "flush-8:0",
            Kthread::Kswapd0 => "kswapd0",
            Kthread::Ext4RsvConversion => "kworker/u:ext4-rsv-conversion",
        }
    }

    /// Record the thread's pid where the kernel's code finds it (`wake_up_process(kswapd_task)`).
    /// The pdflush pool's threads register with the pool
    /// (`mm::state::MmState::register_kthread`).
    pub fn register(self, pids: &mut KthreadPids, pid: u32) {
        match self {
            Kthread::Kswapd | Kthread::Kswapd0 => pids.kswapd = pid,
            Kthread::Bdflush => pids.bdflush = pid,
            // kupdated runs from its own timer: nothing wakes it by pid.
            Kthread::Kupdated => {}
            Kthread::Kjournald => pids.kjournald = pid,
            Kthread::Flusher => pids.flusher = pid,
            Kthread::Ext4RsvConversion => pids.ext4_rsv = pid,
            Kthread::Pdflush => {}
        }
    }
}
