//! mm's state over the devices' ([`MmState`]), and what a memory-management path runs on
//! ([`MmK`]): that state, and the file system above it as Linux's mm reaches it, through
//! its operations (`mapping->a_ops->writepage`, the super blocks' writeback, the buffer
//! layer's write-out) and the counts its writeback and reclaim read. Nothing under mm/
//! names fs/'s code or types: the file system's state implements [`MmK`].

use crate::dev::{DevK, DevState};
use crate::kernel::path::{Ctx, Path};
use crate::kernel::state::Kthread;
use crate::mm::fs_ops::{Handed, Wbc};
use crate::mm::reclaim::PageReclaim;
use crate::mm::writeback::DirtyWriteback;
use crate::mm::Mm;
use crate::mm::{Scan, ScanLimits};

/// Memory, the dirty-page writeback and the page reclaim, over the devices' state (reached
/// through `Deref`, and through it the core's).
pub struct MmState {
    pub dev: DevState,
    pub mm: Mm,
    /// The kernel's dirty-page writeback, with its state ([`crate::mm::writeback`]).
    pub writeback: DirtyWriteback,
    /// The kernel's page reclaim, with its state ([`crate::mm::reclaim`]).
    pub reclaim: PageReclaim,
}

impl std::ops::Deref for MmState {
    type Target = DevState;
    fn deref(&self) -> &DevState {
        &self.dev
    }
}

impl std::ops::DerefMut for MmState {
    fn deref_mut(&mut self) -> &mut DevState {
        &mut self.dev
    }
}

/// What an mm path runs on: mm's state (`Deref`, and through it the devices' and the
/// core's) and the file system above it. Each op is a call per writeback pass, pageout run
/// or batch, never per page.
pub trait MmK: DevK + std::ops::DerefMut<Target = MmState> {
    /// `writeback_inodes(wbc)` (fs/fs-writeback.c); `pdflush` when a pdflush thread runs it.
    /// When it returns, `k.writeback.pwb_mut().wbc` holds the caller's `wbc`.
    fn writeback_inodes(wbc: Wbc, pdflush: bool) -> Box<dyn Path<Self>>;
    /// One pass of the IO-less flusher's `wb_writeback` over the inodes, `wbc.nr_to_write`
    /// its `writeback_chunk_size`: the kernel's file system's walk (2.6.17's
    /// `writeback_inodes`, or 6.x's `writeback_sb_inodes` with ext4-6.18). When it returns,
    /// `k.writeback.pwb_mut().wbc` holds what is left of `wbc`.
    fn flusher_writeback(&self, wbc: Wbc) -> Box<dyn Path<Self>>;
    /// `->writepage` of up to `want` of `file`'s dirty pages from `block` on, as task `cx.pid`
    /// on the 2.6 queue (2.6.17 reclaim's `pageout()`).
    fn writepage_run(&mut self, cx: &Ctx, file: u32, block: u64, want: u64) -> Handed;
    /// 2.4's `balance_dirty()` (fs/buffer.c) over the soft limit: a batch of the oldest dirty
    /// buffers written by the writer; `over_hard` also waits for some (`wait_for_some_buffers`).
    fn balance_dirty(over_hard: bool) -> Box<dyn Path<Self>>;
    /// 2.4 `page_launder`: up to `n` dirty buffers met on the inactive list marked
    /// `BH_launder` and submitted (None: none dirty).
    fn launder(&mut self, n: u64) -> Option<Box<dyn Path<Self>>>;
    /// `shrink_cache`'s page-cache pages of `lim` freed after `done` scanned
    /// ([`crate::mm::Mm::apply_shrink`]), with what they take from the file system: their
    /// journal entries, their written-out buffers and the inodes left with no pages.
    fn apply_shrink(&mut self, lim: &ScanLimits, done: u64) -> Scan;

    /// `balance_dirty_state()` (2.4.17, bdf_prm nfract 40, nfract_sync 60): -1 below the soft
    /// limit, 0 above it, 1 above the hard limit.
    fn balance_dirty_state(&self) -> i32;
    /// Dirty buffers that can still be added before crossing 2.4's soft limit.
    fn dirty_headroom(&self) -> u64;
    /// Dirty page-cache pages not yet under write-out (NR_FILE_DIRTY).
    fn nr_dirty(&self) -> u64;
    /// Pages under write-out (NR_WRITEBACK).
    fn nr_writeback(&self) -> u64;
    /// Dirty buffers as 2.4's `balance_dirty_state()` counts them (dirty and locked).
    fn dirty_for_balance(&self) -> u64;
    /// Pages whose write-out completed since boot (`bdi_stat(BDI_WRITTEN)`).
    fn pages_written(&self) -> u64;
    /// The file whose dirty page is oldest, and that page's block.
    fn oldest_dirty_page(&self) -> Option<(u32, u64)>;
    /// The buffer cache's next submission sequence number.
    fn buf_next_seq(&self) -> u64;
    /// Every buffer submitted below this sequence number is written.
    fn buf_done_hi(&self) -> u64;
    /// The oldest laundered buffer still in flight, which `page_launder` waits on.
    fn launder_inflight(&mut self) -> Option<u64>;
    /// Inodes with dirty pages (`sb->s_dirty`).
    fn nr_dirty_inodes(&self) -> u64;
    /// Dentries on the unused list (`dentry_stat.nr_unused`).
    fn dentries_unused(&self) -> u64;
    /// Unused dentries with DCACHE_REFERENCED.
    fn dentries_referenced(&self) -> u64;
    /// Inodes on the unused list (`inodes_stat.nr_unused`).
    fn inodes_unused(&self) -> u64;
    /// `prune_dcache(count)`'s walk: (dentries skipped, dentries pruned).
    fn plan_prune_dcache(&self, count: u64) -> (u64, u64);
    /// What `prune_dcache` did: `skipped` passed over, `pruned` freed.
    fn apply_prune_dcache(&mut self, skipped: u64, pruned: u64, with_pages_share: u64);
    /// `prune_icache(goal)`'s walk: (inodes visited, inodes it frees).
    fn plan_prune_icache(&self, goal: u64) -> (u64, u64);
    /// What `prune_icache` freed.
    fn apply_prune_icache(&mut self, freed: u64);
}

impl MmState {
    /// Record a kernel thread's pid where the kernel's code finds it
    /// (`wake_up_process(kswapd_task)`; a pdflush thread joins the pool).
    pub fn register_kthread(&mut self, kind: Kthread, pid: u32) {
        kind.register(&mut self.dev.core.kthreads, pid);
        if kind == Kthread::Pdflush {
            self.writeback.pwb_mut().pool.register(pid);
        }
    }

    /// Total pages `balance_dirty_state()` measures against: `nr_free_buffer_pages()`, which
    /// since the 2.4.10 VM sums `zone->size - zone->pages_high` over the GFP_USER zones (mm/
    /// page_alloc.c, 2.4.17/2.4.18): all of low memory above the high watermark, however much
    /// of it is free, cached or anonymous. (The 2.4.9 VM summed free and inactive pages.)
    pub fn buffer_pages(&self) -> u64 {
        self.mm.buffer_pages()
    }
}
