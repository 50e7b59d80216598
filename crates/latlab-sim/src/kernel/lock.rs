//! The locks the model's code paths hold, as typed identifiers: the 2.4 spinlocks named after
//! their kernel variables, the big kernel lock, and softirq context (preemption is off there as
//! under a spinlock). A step holding one is not preemptible under any model; releasing it is an
//! opportunity under kernel preemption (`kernel::preempt`).
//!
//! Under PREEMPT_RT (a variant's `locks = "sleeping"`) a `spinlock_t` is an rt_mutex-based
//! sleeping lock (include/linux/spinlock_rt.h, kernel/locking/spinlock_rt.c): a step holding
//! one stays preemptible, and a task that needs one another task owns blocks on it with
//! priority inheritance ([`super::rtmutex`]). A `raw_spinlock_t` still spins with preemption
//! off. [`Lock::kind`] says which each modelled lock is in 6.x, with the file that declares
//! it; a 2.4-only lock is classed as its 6.x successor, and keeps its 2.4 meaning (a
//! spinlock) on every variant with spinning locks.

/// A lock a step can hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Lock {
    /// `pagemap_lru_lock` (mm/vmscan.c, mm/swap.c): the page LRU lists.
    PagemapLru,
    /// `zone->lru_lock` (2.6 mm/vmscan.c, mm/swap.c): a zone's page LRU lists, taken with
    /// interrupts off (`spin_lock_irq`).
    ZoneLru,
    /// `lru_list_lock` (fs/buffer.c): the buffer-cache LRU lists.
    LruList,
    /// `journal_datalist_lock` (fs/jbd/journal.c): jbd's buffer lists.
    JournalDatalist,
    /// `dcache_lock` (fs/dcache.c).
    Dcache,
    /// `inode_lock` (fs/inode.c).
    Inode,
    /// `mm->page_table_lock` (mm/memory.c).
    PageTable,
    /// `pagecache_lock` (mm/filemap.c).
    Pagecache,
    /// `swap_list_lock` (mm/swapfile.c), held with the device's `sdev_lock` by get_swap_page.
    SwapList,
    /// jbd2's `j_list_lock` (6.x fs/jbd2/commit.c): the committing transaction's lists, its
    /// `t_inode_list` among them.
    JList,
    /// A mapping's `i_private_lock` (6.x fs/buffer.c): its folios' buffer_head lists, held
    /// by `try_to_free_buffers` around `drop_buffers`.
    IPrivate,
    /// A folio's first buffer_head's `b_uptodate_lock` (6.x fs/ext4/page-io.c
    /// `ext4_finish_bio`: `spin_lock_irqsave` over the folio's buffers).
    BUptodate,
    /// A device's `wb->list_lock` (6.x fs/fs-writeback.c): its writeback's inode lists
    /// (`b_dirty`, `b_io`, `b_more_io`), held by the flusher's `queue_io` and around each
    /// inode's list step in `writeback_sb_inodes`.
    WbList,
    /// An inode's `i_lock` (6.x fs/fs-writeback.c): its `i_state`, held by
    /// `__writeback_single_inode` around the dirty flags after `do_writepages`.
    ILock,
    /// The big kernel lock (`lock_kernel()`).
    Bkl,
    /// Softirq context (`net_rx_action`): not a lock, but preemption is off as under one.
    Softirq,
    /// A lock of the unit tests' synthetic paths.
    #[cfg(test)]
    Test,
}

impl std::fmt::Display for Lock {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What a lock is under PREEMPT_RT.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockKind {
    /// `raw_spinlock_t`, or the big kernel lock in its own meaning: spins with preemption
    /// off under every model.
    Raw,
    /// `spinlock_t` (or a `local_lock_t`): an rt_mutex under PREEMPT_RT.
    Sleeping,
}

impl Lock {
    /// What the lock (or its 6.x successor) is declared as in 6.x.
    pub fn kind(self) -> LockKind {
        match self {
            // 6.x: `spinlock_t lru_lock` in `struct lruvec` (include/linux/mmzone.h), which
            // replaced zone->lru_lock in 5.11 and 2.4's global pagemap_lru_lock.
            Lock::PagemapLru | Lock::ZoneLru => LockKind::Sleeping,
            // 2.4's buffer LRU is gone; a mapping's buffer list is guarded by
            // `spinlock_t i_private_lock` (include/linux/fs.h `struct address_space`).
            Lock::LruList => LockKind::Sleeping,
            // jbd2's `spinlock_t j_list_lock` (include/linux/jbd2.h `struct journal_s`).
            Lock::JournalDatalist => LockKind::Sleeping,
            // dcache_lock left in 2.6.38: `d_lock`, a `spinlock_t` in each dentry's lockref
            // (include/linux/dcache.h).
            Lock::Dcache => LockKind::Sleeping,
            // inode_lock left in 2.6.39: `spinlock_t i_lock` (include/linux/fs.h) and
            // `sb->s_inode_list_lock` (include/linux/fs.h `struct super_block`).
            Lock::Inode => LockKind::Sleeping,
            // `spinlock_t page_table_lock` (include/linux/mm_types.h `struct mm_struct`) and
            // the split PTE locks (`ptlock_ptr`, include/linux/mm.h), both `spinlock_t`.
            Lock::PageTable => LockKind::Sleeping,
            // pagecache_lock became the mapping's `i_pages` xarray lock, a `spinlock_t xa_lock`
            // (include/linux/xarray.h).
            Lock::Pagecache => LockKind::Sleeping,
            // mm/swapfile.c: `static DEFINE_SPINLOCK(swap_lock)`, and the per-device
            // `spinlock_t lock` of `struct swap_info_struct` (include/linux/swap.h).
            Lock::SwapList => LockKind::Sleeping,
            // `spinlock_t j_list_lock` in `struct journal_s` (include/linux/jbd2.h, 6.18).
            Lock::JList => LockKind::Sleeping,
            // `spinlock_t i_private_lock` in `struct address_space` (include/linux/fs.h, 6.18).
            Lock::IPrivate => LockKind::Sleeping,
            // `spinlock_t b_uptodate_lock` in `struct buffer_head` (include/linux/buffer_head.h).
            Lock::BUptodate => LockKind::Sleeping,
            // `spinlock_t list_lock` in `struct bdi_writeback` (include/linux/backing-dev-defs.h).
            Lock::WbList => LockKind::Sleeping,
            // `spinlock_t i_lock` in `struct inode` (include/linux/fs.h).
            Lock::ILock => LockKind::Sleeping,
            // The big kernel lock left in 2.6.39; it keeps the meaning its kernels gave it.
            Lock::Bkl => LockKind::Raw,
            // 6.x PREEMPT_RT: `local_bh_disable()` takes the per-CPU `softirq_ctrl.lock`, a
            // `local_lock_t` (kernel/softirq.c), itself a `spinlock_t` under RT.
            Lock::Softirq => LockKind::Sleeping,
            #[cfg(test)]
            Lock::Test => LockKind::Sleeping,
        }
    }

    /// One lock per CPU (`local_lock_t`), not one for the machine: the softirq context's
    /// BH lock.
    pub fn per_cpu(self) -> bool {
        self == Lock::Softirq
    }

    /// The kernel's name for it, as traces print it.
    pub fn name(self) -> &'static str {
        match self {
            Lock::PagemapLru => "pagemap_lru_lock",
            Lock::ZoneLru => "zone->lru_lock",
            Lock::LruList => "lru_list_lock",
            Lock::JournalDatalist => "journal_datalist_lock",
            Lock::Dcache => "dcache_lock",
            Lock::Inode => "inode_lock",
            Lock::PageTable => "page_table_lock",
            Lock::Pagecache => "pagecache_lock",
            Lock::SwapList => "swap_list_lock",
            Lock::JList => "j_list_lock",
            Lock::IPrivate => "i_private_lock",
            Lock::BUptodate => "b_uptodate_lock",
            Lock::WbList => "wb->list_lock",
            Lock::ILock => "i_lock",
            Lock::Bkl => "BKL",
            Lock::Softirq => "softirq",
            #[cfg(test)]
            Lock::Test => "test_lock",
        }
    }
}
