//! Page reclaim, the subsystem a kernel variant names (`reclaim`): a task's direct reclaim,
//! the zone watermarks, kswapd, and what the generation's VM does that another's does not.
//! Callers ask [`PageReclaim`] for behaviour; [`crate::assemble`] builds the one a
//! variant names.
//!
//! - 2.4's `vmscan` ([`crate::mm::vmscan`]): `shrink_cache` and the virtual scan, kswapd.
//! - 2.6.9's rmap reclaim ([`crate::mm::vmscan26`]), kswapd0, the swap token
//!   ([`crate::mm::thrash`]), the OOM killer ([`crate::mm::oom_kill`]).
//! - 2.6.17's: 2.6.9's, writing dirty page-cache pages through `pageout()`, 2.6.17's
//!   watermarks.

use crate::kernel::path::Path;
use crate::kernel::state::Kthread;
use crate::mm::oom_kill::OomKiller;
use crate::mm::state::MmK;

/// The reclaim a kernel runs, with its state.
pub struct PageReclaim {
    kind: Kind,
    /// 2.6.9's out_of_memory() throttle ([`crate::mm::oom_kill`]).
    pub(super) oom: OomKiller,
}

/// The implementations behind [`PageReclaim`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// 2.4.17/2.4.18 mm/vmscan.c.
    Vmscan24,
    /// 2.6.9 mm/vmscan.c with object-based reverse mapping.
    Rmap269,
    /// 2.6.9's with 2.6.17's handling of dirty page-cache pages.
    Rmap2617,
}

impl PageReclaim {
    /// Tasks the OOM killer has killed.
    pub fn oom_kills(&self) -> u64 {
        self.oom.kills
    }
    pub fn new(kind: Kind) -> Self {
        PageReclaim {
            kind,
            oom: OomKiller::default(),
        }
    }

    /// A task's direct reclaim. `writer`: the task is in a buffered file write
    /// (`current->backing_dev_info` is the disk's).
    pub fn try_to_free_pages<K: MmK>(&self, writer: bool) -> Box<dyn Path<K>> {
        match self.kind {
            Kind::Vmscan24 => crate::mm::vmscan::try_to_free_pages(),
            Kind::Rmap269 | Kind::Rmap2617 => crate::mm::vmscan26::try_to_free_pages(writer),
        }
    }

    /// The zone watermarks [min, low, high] for `total` pages of low memory, the
    /// generation's `init_per_zone_pages_min`.
    pub fn watermarks(&self, total: u64) -> [u64; 3] {
        match self.kind {
            Kind::Vmscan24 => crate::mm::watermarks_24(total),
            Kind::Rmap269 => crate::mm::watermarks_269(total),
            Kind::Rmap2617 => crate::mm::watermarks_2617(total),
        }
    }

    /// Does a new anonymous page start on the active list (2.6's `do_anonymous_page`)?
    pub fn anon_starts_active(&self) -> bool {
        self.kind != Kind::Vmscan24
    }

    /// Does a task whose allocation still fails after its reclaim nap in
    /// `blk_congestion_wait` before trying again (2.6's `__alloc_pages`)?
    pub fn naps_after_reclaim(&self) -> bool {
        self.kind != Kind::Vmscan24
    }

    /// Does direct reclaim wake pdflush and nap in `blk_congestion_wait` after a priority
    /// that fell short (2.6.17's `try_to_free_pages`), rather than wait only when congested
    /// below `DEF_PRIORITY - 2` (2.6.9's)?
    pub fn wakes_pdflush_and_naps(&self) -> bool {
        self.kind == Kind::Rmap2617
    }

    /// Does a major fault grab the swap token (2.6.9's mm/thrash.c)?
    pub fn uses_swap_token(&self) -> bool {
        self.kind == Kind::Rmap269
    }

    /// Does `shrink_page_list` hand dirty page-cache pages to `pageout()` and skip
    /// PageWriteback ones (2.6.17), rather than leave them to writeback (2.6.9)?
    pub fn writes_dirty_pages(&self) -> bool {
        self.kind == Kind::Rmap2617
    }

    /// The reclaim's kernel thread: 2.4's `kswapd`, 2.6's per-node `kswapd0`.
    pub fn kswapd(&self) -> Kthread {
        match self.kind {
            Kind::Vmscan24 => Kthread::Kswapd,
            Kind::Rmap269 | Kind::Rmap2617 => Kthread::Kswapd0,
        }
    }
}
