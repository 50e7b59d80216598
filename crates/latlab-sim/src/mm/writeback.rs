//! Dirty-data writeback, the subsystem a kernel variant names (`writeback`): what a writer
//! does after dirtying pages, and which kernel threads write them out. The fs write path
//! asks only here; [`crate::assemble`] builds the one a variant names.
//!
//! - `bdflush-2.4`: 2.4's `balance_dirty()` (fs/buffer.c, 2.4.17/2.4.18). Over the soft limit
//!   (`balance_dirty_state()` 0) the writer submits a batch of the oldest dirty buffers
//!   itself; over the hard limit (1) it also waits for some (`wait_for_some_buffers`) and
//!   wakes bdflush: "This will throttle heavy writers". kupdated writes buffers older than
//!   30 s every 5 s (`fs/flush.rs`).
//! - `pdflush-2.6.17` and seed 001's `pdflush-balance`: `balance_dirty_pages_ratelimited`
//!   ([`crate::mm::page_writeback`]), pdflush threads ([`crate::mm::pdflush`]).
//! - `io-less-3.2`: the writer's pauses and the flusher thread ([`crate::mm::ioless`]).
//!
//! The page-based implementations own their state ([`PageWriteback`]); 2.4's has none beyond
//! the buffer cache it shares with the filesystem.

use crate::kernel::path::{Ctx, Path};
use crate::kernel::state::Kthread;
use crate::mm::page_writeback::PageWriteback;
use crate::mm::pdflush;
use crate::mm::state::MmK;

/// The writeback a kernel runs, with its state.
pub struct DirtyWriteback {
    kind: Kind,
}

/// The implementations behind [`DirtyWriteback`].
enum Kind {
    Bdflush24,
    /// 2.6.17's pdflush writeback; `balance_patch`: seed 001's patch to
    /// `balance_dirty_pages()` and `background_writeout()`.
    Pdflush {
        pwb: Box<PageWriteback>,
        balance_patch: bool,
    },
    IoLess32 {
        pwb: Box<PageWriteback>,
    },
}

impl DirtyWriteback {
    /// 2.4's bdflush and kupdated.
    pub fn bdflush24() -> Self {
        DirtyWriteback { kind: Kind::Bdflush24 }
    }

    /// 2.6.17's pdflush writeback over `pwb`, with seed 001's `balance_patch` or stock.
    pub fn pdflush(pwb: PageWriteback, balance_patch: bool) -> Self {
        DirtyWriteback {
            kind: Kind::Pdflush {
                pwb: Box::new(pwb),
                balance_patch,
            },
        }
    }

    /// Stock 2.6.17 pdflush writeback for unit tests of its paths: 40/10 ratios over one
    /// page (the ratelimit's floor) at 100 Hz.
    #[cfg(test)]
    pub fn pdflush_for_tests() -> Self {
        let t = crate::variant::DirtyTunables {
            dirty_ratio: 40,
            dirty_background_ratio: 10,
        };
        Self::pdflush(PageWriteback::new(t, 1, 100), false)
    }

    /// 3.2's IO-less throttling and per-device flusher over `pwb`.
    pub fn io_less(pwb: PageWriteback) -> Self {
        DirtyWriteback {
            kind: Kind::IoLess32 { pwb: Box::new(pwb) },
        }
    }

    /// Page-based writeback's state (`vm.dirty_*`, the ratelimit, pdflush's pool, 3.2's
    /// bandwidth estimates), None under 2.4's bdflush.
    pub fn pages(&self) -> Option<&PageWriteback> {
        match &self.kind {
            Kind::Bdflush24 => None,
            Kind::Pdflush { pwb, .. } | Kind::IoLess32 { pwb } => Some(pwb),
        }
    }

    /// [`Self::pages`], mutable.
    pub fn pages_mut(&mut self) -> Option<&mut PageWriteback> {
        match &mut self.kind {
            Kind::Bdflush24 => None,
            Kind::Pdflush { pwb, .. } | Kind::IoLess32 { pwb } => Some(pwb),
        }
    }

    /// Page-based writeback's state, on a path only page-based writeback runs (pdflush's
    /// and the flusher's work, `balance_dirty_pages`, `fs/fs-writeback.c`).
    pub fn pwb(&self) -> &PageWriteback {
        self.pages().expect("a page-based writeback path under 2.4's bdflush")
    }

    /// [`Self::pwb`], mutable.
    pub fn pwb_mut(&mut self) -> &mut PageWriteback {
        self.pages_mut()
            .expect("a page-based writeback path under 2.4's bdflush")
    }

    /// Does the writeback count dirty *pages* (2.6's page cache knows which of a file's pages
    /// are dirty, `vm.dirty_*` applies, reclaim hands a dirty page to `pageout()`), rather
    /// than 2.4's dirty buffers (`bdf_prm`, BH_launder)?
    pub fn counts_dirty_pages(&self) -> bool {
        self.pages().is_some()
    }

    /// Does `balance_dirty_pages()` only hand the work to pdflush (seed 001's patch), and
    /// `background_writeout(0)` write what is dirty?
    pub fn balance_hands_to_pdflush(&self) -> bool {
        matches!(
            self.kind,
            Kind::Pdflush {
                balance_patch: true,
                ..
            }
        )
    }

    /// The kernel threads this writeback starts, in start order.
    pub fn threads(&self) -> Vec<Kthread> {
        match self.kind {
            Kind::Bdflush24 => vec![Kthread::Bdflush, Kthread::Kupdated],
            // MAX_PDFLUSH_THREADS spawned; the pool creates (wakes) more than two as it grows.
            Kind::Pdflush { .. } => vec![Kthread::Pdflush; pdflush::MAX_THREADS],
            Kind::IoLess32 { .. } => vec![Kthread::Flusher],
        }
    }
}

/// Pages the writer may dirty before it must ask [`after_dirtying`] again.
pub fn headroom<K: MmK>(k: &K, pid: u32) -> u64 {
    match &k.writeback.kind {
        Kind::Bdflush24 => k.dirty_headroom(),
        Kind::Pdflush { pwb, .. } => pwb.ratelimit_headroom(),
        Kind::IoLess32 { .. } => crate::mm::ioless::headroom(k, pid),
    }
}

/// The writer wrote `n` pages over existing ones, `new` of them not dirty before, or
/// appended them (`new` None). True when the writeback wants [`after_dirtying`] asked: 2.4's
/// `mark_buffer_dirty` calls `balance_dirty()` for a buffer it dirtied (an append always
/// does); 2.6's `generic_file_buffered_write` counts every page written towards the
/// ratelimit (`balance_dirty_pages_ratelimited`).
pub fn dirtied<K: MmK>(k: &mut K, pid: u32, n: u64, new: Option<u64>) -> bool {
    match &mut k.writeback.kind {
        Kind::Bdflush24 => new.is_none_or(|new| new > 0),
        Kind::Pdflush { pwb, .. } => pwb.dirtied(n),
        Kind::IoLess32 { .. } => crate::mm::ioless::dirtied(k, pid, n),
    }
}

/// The path a writer runs after a `write()` dirtied pages and its ratelimit fired, if the
/// writeback throttles it.
pub fn after_dirtying<K: MmK>(k: &mut K, cx: &Ctx) -> Option<Box<dyn Path<K>>> {
    match k.writeback.kind {
        Kind::Bdflush24 => {
            let state = k.balance_dirty_state();
            if state < 0 {
                return None;
            }
            if state > 0 {
                let pid = k.kthreads.bdflush();
                k.wake_kthread(pid);
            }
            Some(K::balance_dirty(state > 0))
        }
        Kind::Pdflush { .. } => Some(crate::mm::page_writeback::balance_dirty_pages(k)),
        Kind::IoLess32 { .. } => crate::mm::ioless::balance_dirty_pages(k, cx),
    }
}
