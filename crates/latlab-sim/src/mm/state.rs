//! mm's state over the devices' ([`MmState`]): what a memory-management path reaches.

use crate::dev::DevState;
use crate::kernel::state::Kthread;
use crate::mm::reclaim::PageReclaim;
use crate::mm::writeback::DirtyWriteback;
use crate::mm::Mm;

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
