//! The locks the model's code paths hold, as typed identifiers: the 2.4 spinlocks named after
//! their kernel variables, the big kernel lock, and softirq context (preemption is off there as
//! under a spinlock). A step holding one is not preemptible under any model; releasing it is an
//! opportunity under kernel preemption (`kernel::preempt`).

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

impl Lock {
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
            Lock::Bkl => "BKL",
            Lock::Softirq => "softirq",
            #[cfg(test)]
            Lock::Test => "test_lock",
        }
    }
}
