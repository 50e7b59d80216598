//! Code paths: kernel work as data.
//!
//! A system call or kernel thread runs a [`Path`], a small state machine that hands the CPU
//! one [`Step`] at a time: straight-line work, a loop over a kernel data structure, a
//! sleep. Each step says which spinlock it holds and where its rescheduling points are;
//! whether a point exists, and whether kernel code is preemptible at all, is the variant's
//! business (`kernel::preempt`). A loop over N items is one step, however large N is: the
//! CPU loop computes where the next usable preemption opportunity lies instead of
//! simulating items one by one.
//!
//! A path runs on the state of its own layer and the layers beneath it, through the traits
//! each layer defines ([`CoreK`] here, `dev::DevK`, `mm::state::MmK`; the file system's
//! paths on `fs::state::FsState`, the state the CPU loop holds). Paths read their loop
//! lengths from that state at the moment the loop starts, so a loop that breaks its lock and restarts sees the state as
//! it is after the break, exactly like the kernel's `goto restart`.

use crate::kernel::catalog::Point;
use crate::kernel::lock::Lock;
use crate::kernel::state::Core;
use latlab_core::Nanos;
use smallvec::SmallVec;

/// A wait channel: what a sleeping task waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Chan {
    /// Completion of disk request `n`.
    Io(u64),
    /// A timeout (`schedule_timeout`, `nanosleep`); the token is unique per sleep.
    Timer(u64),
    /// `/dev/rtc` data became available (rtc_wait).
    Rtc,
    /// A child of task `pid` exited (wait4).
    Child(u32),
    /// A kernel thread's own wakeup (`wake_up_process(bdflush_tsk)`, ...).
    Kthread(u32),
    /// Free memory rose above the low watermark (kswapd_done).
    FreeMem,
    /// Network data arrived for the reader (NFS read, cvs).
    Net(u64),
    /// kjournald began committing the running transaction (`j_wait_transaction_locked`).
    TxnLocked,
    /// The last handle open on a `T_LOCKED` transaction was stopped (`j_wait_updates`).
    TxnUpdates,
    /// A signal was queued to thread `pid` (`signal_wake_up`).
    Signal(u32),
    /// `blk_congestion_wait`: a queue's congestion cleared, or the sleeper's own timeout
    /// (the token is unique per sleep).
    Congestion(u64),
    /// A dirtier's timed pause in 3.2's `balance_dirty_pages` (`io_schedule_timeout`).
    Throttle(u64),
    /// 2.6's `get_request_wait`: a free request on a full queue (the token is unique per
    /// sleep; `freed_request` wakes one sleeper).
    RequestSlot(u64),
    /// A pipe's wait queue (`pipe->rd_wait` or `pipe->wr_wait`, [`super::pipe`]).
    Pipe(u64),
    /// A futex's hash-bucket queue ([`super::futex`]).
    Futex(u64),
    /// A sleeping lock another task owns (PREEMPT_RT's `rt_spin_lock` -> `rt_mutex`,
    /// [`super::rtmutex`]): woken only by the owner's unlock handing it over.
    RtMutex(Lock),
}

impl Chan {
    /// What a task sleeping on the channel waits in, for attributions.
    pub fn wait_name(self) -> &'static str {
        match self {
            Chan::Io(_) => "I/O (a request slot or a buffer)",
            Chan::Timer(_) => "a timer",
            Chan::Rtc => "rtc_read",
            Chan::Child(_) => "wait4",
            Chan::Kthread(_) => "its wakeup",
            Chan::FreeMem => "free memory",
            Chan::Net(_) => "the network",
            Chan::TxnLocked => "start_this_handle",
            Chan::TxnUpdates => "j_wait_updates",
            Chan::Signal(_) => "a signal",
            Chan::Congestion(_) => "blk_congestion_wait",
            Chan::Throttle(_) => "balance_dirty_pages pause",
            Chan::RequestSlot(_) => "get_request_wait",
            Chan::Pipe(_) => "pipe_read/pipe_write",
            Chan::Futex(_) => "futex_wait",
            Chan::RtMutex(_) => "rt_spin_lock (a sleeping lock)",
        }
    }
}

/// One step of kernel work.
#[derive(Clone, Debug)]
pub enum Step {
    /// Straight-line code.
    Work(Work),
    /// A loop over a kernel data structure.
    Loop(LoopStep),
    /// Sleep on a wait channel: calls schedule().
    Block(Chan),
    /// The path is finished: return to user space (or, for a kernel thread, to its loop).
    Done,
}

/// Straight-line kernel code.
#[derive(Clone, Debug)]
pub struct Work {
    /// Kernel function, for traces and attribution.
    pub func: &'static str,
    pub ns: Nanos,
    /// Spinlock held for the whole stretch (not preemptible under any model).
    pub lock: Option<Lock>,
    /// Interrupts disabled for the whole stretch.
    pub irqs_off: bool,
    /// The lock (or an outer one) stays held after the step.
    pub hold: bool,
}

/// A loop of `items` iterations, `per_item` each.
#[derive(Clone, Debug)]
pub struct LoopStep {
    pub func: &'static str,
    pub items: u64,
    pub per_item: Nanos,
    /// Spinlock held across the loop.
    pub lock: Option<Lock>,
    /// Rescheduling points checked inside the loop; the CPU loop uses the most frequent one
    /// the variant has.
    pub points: Points,
    /// The loop body drops and re-takes `lock` once per item (e.g. `dentry_iput` inside
    /// `prune_dcache`): under kernel preemption each item end is an opportunity.
    pub unlock_each: bool,
    /// The lock (or an outer one) stays held after the loop: its end is no opportunity.
    pub hold: bool,
}

/// A rescheduling point used inside a loop: `conditional_schedule()` every `every` items.
/// If the loop holds a lock, the point is a lock-break: it drops the lock, schedules, and
/// the path restarts the loop from the kernel state it then finds.
#[derive(Clone, Copy, Debug)]
pub struct PointUse {
    pub point: Point,
    pub every: u32,
}

/// The points a loop checks (no loop of the model checks more than two).
pub type Points = SmallVec<[PointUse; 2]>;

/// Context a path sees when asked for its next step.
pub struct Ctx {
    pub now: Nanos,
    /// pid of the task running the path.
    pub pid: u32,
}

/// The state every path may reach: the core's ([`Core`]). Each layer's state implements it
/// (`'static`: a path over it goes in a box).
pub trait CoreK: 'static {
    fn core(&mut self) -> &mut Core;
}

impl CoreK for Core {
    #[inline(always)]
    fn core(&mut self) -> &mut Core {
        self
    }
}

/// A running system call or kernel-thread pass, on state `K` (its layer's and the ones
/// beneath it).
pub trait Path<K> {
    /// Entry function (`sys_write`, `journal_commit_transaction`).
    fn name(&self) -> &'static str;
    /// The next step, built from the kernel state as it is now.
    fn next(&mut self, k: &mut K, cx: &Ctx) -> Step;
    /// The last [`Step::Loop`] stopped after `done` of its items (all of them, or fewer
    /// when it stopped at a rescheduling point); apply what those items did.
    fn advanced(&mut self, _k: &mut K, _cx: &Ctx, _done: u64) {}
    /// The path runs holding the big kernel lock (`lock_kernel()`), which 2.4's schedule()
    /// drops while the task sleeps and re-takes when it runs (`release_kernel_lock` /
    /// `reacquire_kernel_lock`). Under kernel preemption the lock keeps `preempt_count`
    /// above 0 for the whole path, so only blocking and explicit rescheduling points let
    /// the CPU go; no spin_unlock inside it and no IRQ return preempts.
    fn holds_bkl(&self) -> bool {
        false
    }
}

impl Work {
    pub fn plain(func: &'static str, ns: Nanos) -> Step {
        Step::Work(Work {
            func,
            ns,
            lock: None,
            irqs_off: false,
            hold: false,
        })
    }
    /// Under `lock`, released at the end (`hold` false) or kept.
    pub fn locked(func: &'static str, ns: Nanos, lock: Lock, hold: bool) -> Step {
        Step::Work(Work {
            func,
            ns,
            lock: Some(lock),
            irqs_off: false,
            hold,
        })
    }
}

impl LoopStep {
    /// A loop without a lock.
    pub fn plain(func: &'static str, items: u64, per_item: Nanos, points: Points) -> Step {
        Step::Loop(LoopStep {
            func,
            items,
            per_item,
            lock: None,
            points,
            unlock_each: false,
            hold: false,
        })
    }
    /// A loop under `lock`; `hold` keeps the lock after the last item.
    pub fn locked(func: &'static str, items: u64, per_item: Nanos, lock: Lock, points: Points, hold: bool) -> Step {
        Step::Loop(LoopStep {
            func,
            items,
            per_item,
            lock: Some(lock),
            points,
            unlock_each: false,
            hold,
        })
    }
}

/// `conditional_schedule()` at `point`, checked every `every` items.
pub fn point(point: Point, every: u64) -> PointUse {
    // u32 keeps a loop step (and so every Exec) small; a point every 2^32 items is none.
    PointUse {
        point,
        every: u32::try_from(every).unwrap_or(u32::MAX),
    }
}

/// A path that runs a fixed list of steps (for simple system calls and tests).
pub struct Script {
    pub name: &'static str,
    /// In order; inline up to two (most scripts: one allocation, the path's box).
    pub steps: SmallVec<[Step; 2]>,
}

impl<K> Path<K> for Script {
    fn name(&self) -> &'static str {
        self.name
    }
    fn next(&mut self, _k: &mut K, _cx: &Ctx) -> Step {
        if self.steps.is_empty() {
            return Step::Done;
        }
        self.steps.remove(0)
    }
}

/// A sub-path a path is running on its behalf (a write running `balance_dirty`, a sync
/// running `write_some_buffers`). The parent asks it first; when it returns `Done` the
/// parent continues.
pub struct Nested<K> {
    sub: Option<Box<dyn Path<K>>>,
}

impl<K> Default for Nested<K> {
    fn default() -> Self {
        Nested { sub: None }
    }
}

impl<K> Nested<K> {
    pub fn start(&mut self, p: Box<dyn Path<K>>) {
        self.sub = Some(p);
    }
    pub fn active(&self) -> bool {
        self.sub.is_some()
    }
    /// The sub-path's next step, or None once it is done (or none is running).
    pub fn next(&mut self, k: &mut K, cx: &Ctx) -> Option<Step> {
        let s = self.sub.as_mut()?.next(k, cx);
        if matches!(s, Step::Done) {
            self.sub = None;
            return None;
        }
        Some(s)
    }
    /// The running sub-path holds the big kernel lock.
    pub fn holds_bkl(&self) -> bool {
        self.sub.as_ref().is_some_and(|s| s.holds_bkl())
    }
    /// Forward a loop's progress to the sub-path if it produced the loop.
    pub fn advanced(&mut self, k: &mut K, cx: &Ctx, done: u64) -> bool {
        match self.sub.as_mut() {
            Some(s) => {
                s.advanced(k, cx, done);
                true
            }
            None => false,
        }
    }
}

/// A path run under `lock_kernel()` throughout (nfsd's work on a request).
pub struct UnderBkl<K>(Box<dyn Path<K>>);

pub fn under_bkl<K: 'static>(p: Box<dyn Path<K>>) -> Box<dyn Path<K>> {
    Box::new(UnderBkl(p))
}

impl<K> Path<K> for UnderBkl<K> {
    fn name(&self) -> &'static str {
        self.0.name()
    }
    fn next(&mut self, k: &mut K, cx: &Ctx) -> Step {
        self.0.next(k, cx)
    }
    fn advanced(&mut self, k: &mut K, cx: &Ctx, done: u64) {
        self.0.advanced(k, cx, done);
    }
    fn holds_bkl(&self) -> bool {
        true
    }
}

/// A path of one plain work step.
pub fn once<K>(func: &'static str, ns: Nanos) -> Box<dyn Path<K>> {
    Box::new(Script {
        name: func,
        steps: smallvec::smallvec![Work::plain(func, ns)],
    })
}

/// The name and big-kernel-lock state of the path each task runs, by task id: what a
/// tracepoint's sink asks of the current task's path ([`crate::kernel::tracepoint::Cx`]),
/// whatever state the paths run on.
pub trait PathTable {
    /// Task `t`'s path's name and whether it holds the big kernel lock (None: it runs none).
    fn info(&self, t: usize) -> Option<(&'static str, bool)>;
}

impl<K> PathTable for Vec<Option<Box<dyn Path<K>>>> {
    fn info(&self, t: usize) -> Option<(&'static str, bool)> {
        self.get(t)?.as_ref().map(|p| (p.name(), p.holds_bkl()))
    }
}
