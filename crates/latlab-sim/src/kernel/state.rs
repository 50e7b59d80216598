//! The kernel's data: everything whose size decides how long a code path runs.
//!
//! Paths read and change this state; they never touch the CPU loop, the event queue or
//! other tasks directly. What they need from the kernel (wake a thread, arm a timer for a
//! disk completion) they put in [`KState::out`], which the CPU loop drains after each call.

use crate::dev::disk::Disk;
use crate::dev::rtc::Rtc;
use crate::fs::buffer::BufferCache;
use crate::fs::dcache::Dcache;
use crate::fs::jbd::Journal;
use crate::kernel::catalog::Costs;
use crate::kernel::path::Chan;
use crate::machine::MachineProfile;
use crate::mm::Mm;
use latlab_core::Nanos;

/// bdf_prm.nfract: percentage of buffer pages dirty that starts write-out (2.4.17, research §2).
pub const NFRACT: u64 = 40;
/// bdf_prm.nfract_sync: percentage at which writers are throttled (2.4.17).
pub const NFRACT_SYNC: u64 = 60;

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

/// Kernel state shared by all paths.
pub struct KState {
    /// The core's state ([`Core`]): what every layer reads.
    pub core: Core,
    pub rtc: Rtc,
    pub disk: Disk,
    pub buf: BufferCache,
    pub jbd: Journal,
    /// ext3's block groups and generation ([`crate::fs::ext3`]).
    pub ext3: crate::fs::ext3::Ext3,
    pub dcache: Dcache,
    pub mm: Mm,
    /// The kernel's dirty-page writeback, with its state ([`crate::mm::writeback`]).
    pub writeback: crate::mm::writeback::DirtyWriteback,
    /// The kernel's page reclaim, with its state ([`crate::mm::reclaim`]).
    pub reclaim: crate::mm::reclaim::PageReclaim,
}

impl std::ops::Deref for KState {
    type Target = Core;
    fn deref(&self) -> &Core {
        &self.core
    }
}

impl std::ops::DerefMut for KState {
    fn deref_mut(&mut self) -> &mut Core {
        &mut self.core
    }
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
    /// POSIX timers and the signals they queued.
    pub posix: super::posix_timer::PosixTimers,
    /// `current->mm` of the task whose path runs (0: a kernel thread's, none).
    pub current_mm: u32,
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
            posix: Default::default(),
            current_mm: 0,
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
}

/// Where timer expiries come from, as [`crate::assemble`] chose.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimerBase {
    /// The 2.4 timer list (kernel/timer.c): a timer fires from the tick after it is due.
    TimerList { tick_ns: Nanos },
    /// hrtimers (kernel/hrtimer.c): each timer has an expiry interrupt of its own, at the
    /// exact time.
    Hrtimer,
}

impl TimerBase {
    /// When a timer due at `due` fires.
    pub fn fires_at(self, due: Nanos) -> Nanos {
        match self {
            TimerBase::TimerList { tick_ns } => due.div_ceil(tick_ns) * tick_ns,
            TimerBase::Hrtimer => due,
        }
    }

    /// Does a timer's expiry raise an interrupt of its own, rather than run from the tick?
    pub fn own_interrupt(self) -> bool {
        self == TimerBase::Hrtimer
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
        }
    }

    /// Record the thread's pid where the kernel's code finds it (`wake_up_process(kswapd_task)`).
    pub fn register(self, k: &mut KState, pid: u32) {
        let pids = &mut k.core.kthreads;
        match self {
            Kthread::Kswapd | Kthread::Kswapd0 => pids.kswapd = pid,
            Kthread::Bdflush => pids.bdflush = pid,
            // kupdated runs from its own timer: nothing wakes it by pid.
            Kthread::Kupdated => {}
            Kthread::Kjournald => pids.kjournald = pid,
            Kthread::Flusher => pids.flusher = pid,
            Kthread::Pdflush => k.writeback.pwb_mut().pool.register(pid),
        }
    }
}

/// The subsystems whose implementation the variant chooses, as
/// [`crate::assemble`] builds them.
pub struct Subsystems {
    pub timers: TimerBase,
    pub disk: Disk,
    pub mm: Mm,
    pub jbd: Journal,
    pub ext3: crate::fs::ext3::Ext3,
    pub writeback: crate::mm::writeback::DirtyWriteback,
    pub reclaim: crate::mm::reclaim::PageReclaim,
}

impl KState {
    /// The kernel's state around the assembled subsystems.
    pub fn assembled(m: &MachineProfile, s: Subsystems) -> Self {
        KState {
            core: Core::new(m, s.timers),
            rtc: Rtc::default(),
            disk: s.disk,
            buf: BufferCache::default(),
            jbd: s.jbd,
            ext3: s.ext3,
            dcache: Dcache::default(),
            mm: s.mm,
            writeback: s.writeback,
            reclaim: s.reclaim,
        }
    }

    /// Queue a disk request (its completion interrupt is armed through `out`) of no task
    /// the elevator tells apart.
    pub fn disk_submit(
        &mut self,
        dir: crate::dev::disk::Dir,
        block: u64,
        blocks: u64,
        payload: crate::dev::disk::Payload,
        now: Nanos,
    ) -> u64 {
        self.disk_submit_by(dir, block, blocks, payload, 0, now)
    }

    /// Queue a disk request of task `pid` (its io_context: batching, anticipation).
    pub fn disk_submit_by(
        &mut self,
        dir: crate::dev::disk::Dir,
        block: u64,
        blocks: u64,
        payload: crate::dev::disk::Payload,
        pid: u32,
        now: Nanos,
    ) -> u64 {
        self.disk.submit(dir, block, blocks, payload, pid, now, &mut self.core.out)
    }

    /// A disk interrupt: the request is done; buffers complete, sleepers wake.
    pub fn disk_complete(&mut self, id: u64, now: Nanos) {
        let mut uncongested = false;
        if let Some(r) = self.disk.complete(id, now, &mut self.core.out, &mut uncongested) {
            if let crate::dev::disk::Payload::Buffers { hi, lo } = r.payload {
                self.buf.io_done(hi, hi - lo);
            }
            self.out.push(KReq::Wake(Chan::Io(id)));
        }
        if let (true, Some(pwb)) = (uncongested, self.writeback.pages_mut()) {
            pwb.congestion_cleared(&mut self.core.out);
        }
    }

    /// Total pages `balance_dirty_state()` measures against: `nr_free_buffer_pages()`, which
    /// since the 2.4.10 VM sums `zone->size - zone->pages_high` over the GFP_USER zones (mm/
    /// page_alloc.c, 2.4.17/2.4.18): all of low memory above the high watermark, however much
    /// of it is free, cached or anonymous. (The 2.4.9 VM summed free and inactive pages.)
    pub fn buffer_pages(&self) -> u64 {
        self.mm.buffer_pages()
    }

    /// `balance_dirty_state()` (2.4.17, bdf_prm nfract 40, nfract_sync 60): -1 below the soft
    /// limit, 0 above it, 1 above the hard limit.
    pub fn balance_dirty_state(&self) -> i32 {
        let dirty = self.buf.dirty_for_balance() * 100;
        let tot = self.buffer_pages();
        if dirty > tot * NFRACT {
            if dirty > tot * NFRACT_SYNC {
                1
            } else {
                0
            }
        } else {
            -1
        }
    }

    /// Dirty buffers that can still be added before crossing the soft limit.
    pub fn dirty_headroom(&self) -> u64 {
        (self.buffer_pages() * NFRACT / 100).saturating_sub(self.buf.dirty_for_balance())
    }
}
