//! The code-path catalog: every rescheduling point the model knows, and the cost of every
//! loop body, shared by all variants of an experiment.
//!
//! Costs are not tuned numbers: each loop body is described by the instructions and the
//! cache misses it takes (read off the 2.4 code it follows), and [`MachineProfile::cost`]
//! turns them into time with the machine's CPI, clock and memory latency. A cache miss is a
//! pointer dereference to a cold structure (a buffer_head, a journal_head, a list
//! neighbour); hot, sequential or just-touched data count as hits.

use crate::kernel::lock::Lock;
use crate::kernel::path::{Chan, CoreK, Ctx, Path, Step};
use crate::machine::MachineProfile;
use crate::spread::ItemSpread;
// The classes the `#[spread(...)]` lines name.
use crate::spread::Spread::{Counted, Estimate, Given, Measured};
use latlab_core::Nanos;

/// Where a rescheduling point comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// Already in stock 2.4.17/2.4.18.
    Stock,
    /// Andrew Morton's mini-ll patch (seed 000).
    MiniLl,
    /// Andrew Morton's full low-latency patch (research notes §1).
    LowLatency,
    /// Present in every kernel (a variant does not list it).
    Every,
    /// Stock 2.6 (read in 2.6.11 mm/vmscan.c, unchanged from 2.6.9 there): listed by the
    /// 2.6 variants.
    Stock26,
    /// Stock since 2.6.39 (read in 3.x mm/memory.c, unchanged in 6.x): listed by the 6.18
    /// variants.
    Stock339,
    /// Stock 6.x, read in 6.18's code (ext4, jbd2, the folio page cache): listed by the 6.18
    /// variants.
    Stock618,
    /// A `might_sleep()` check that Ingo Molnar's voluntary-preempt patch (seed 003) turns
    /// into a rescheduling point: on with the variant's `voluntary` (VP) or
    /// `preempt = "voluntary"`, never listed.
    Voluntary,
}

/// A rescheduling point or lock-break, named after its kernel function.
#[derive(Clone, Copy, Debug)]
pub struct PointInfo {
    pub point: Point,
    pub name: &'static str,
    pub file: &'static str,
    pub origin: Origin,
    /// Drops a spinlock to schedule (a lock-break) rather than calling schedule() lock-free.
    pub lock_break: Option<Lock>,
    pub what: &'static str,
}

/// Declares [`Point`], one variant per catalog entry, and [`POINTS`] in the same order.
macro_rules! points {
    ($($id:ident: $name:literal, $file:literal, $origin:ident, $lock:expr, $what:expr;)*) => {
        /// A rescheduling point or lock-break the model knows: a typed identifier, checked
        /// against [`POINTS`] when a variant is loaded.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Point {
            $($id),*
        }

        /// Every point the model knows, by kernel function (research notes §1 for the
        /// low-latency patch's list), indexed by [`Point`]. A variant lists the ones its
        /// kernel has. Points whose description says "no path in the model yet" are named so
        /// a variant can list its patch completely; no modelled code path checks them, so
        /// they change nothing until such a path exists.
        pub const POINTS: &[PointInfo] = &[
            $(PointInfo {
                point: Point::$id,
                name: $name,
                file: $file,
                origin: Origin::$origin,
                lock_break: $lock,
                what: $what,
            }),*
        ];
    };
}

points! {
    RetFromException: "ret_from_exception", "arch/i386/kernel/entry.S", Every, None,
        "return to user space after a page fault: every kernel has it, so no variant lists it";
    TruncateListPages: "truncate_list_pages", "mm/filemap.c", Stock, None,
        "need_resched check after each truncated page (pagecache_lock already dropped)";
    ShrinkCache: "shrink_cache", "mm/vmscan.c", Stock, Some(Lock::PagemapLru),
        "per inactive page scanned";
    SwapOut: "swap_out", "mm/vmscan.c", Stock, None,
        "before each address space scanned";
    JournalCommitTransaction: "journal_commit_transaction", "fs/jbd/commit.c", Stock, None,
        "after each wbuf[64] submission: if (current->need_resched) schedule()";
    KswapdBalance: "kswapd_balance", "mm/vmscan.c", Stock, None,
        "between kswapd's try_to_free_pages rounds";
    ReadZero: "read_zero", "drivers/char/mem.c", Stock, None,
        "per page cleared by read(/dev/zero)";
    ExtractEntropy: "extract_entropy", "drivers/char/random.c", Stock, None,
        "per 10 bytes handed to a reader of /dev/random or /dev/urandom (EXTRACT_ENTROPY_USER)";
    WaitForBuffers: "wait_for_buffers", "fs/buffer.c", MiniLl, Some(Lock::LruList),
        "per buffer walked, for a global sync (dev == NODEV)";
    Bread: "bread", "fs/buffer.c", MiniLl, None,
        "on a buffer-cache hit (the low-latency patch has it in getblk, which bread calls)";
    DentryIput: "dentry_iput", "fs/dcache.c", MiniLl, None,
        "after each dentry's inode is released";
    JournalCommitWriteOutData: "journal_commit:write_out_data", "fs/jbd/commit.c", MiniLl, Some(Lock::JournalDatalist),
        "after unfiling each clean data buffer";
    StatmPteRange: "statm_pte_range", "fs/proc/array.c", MiniLl, None,
        "per PTE of /proc/PID/statm";
    ProcFileRead: "proc_file_read", "fs/proc/generic.c", MiniLl, None,
        "per page of /proc output";
    FilemapFdatasync: "filemap_fdatasync", "mm/filemap.c", MiniLl, None,
        "per dirty page synced";
    DoGenericFileRead: "do_generic_file_read", "mm/filemap.c", MiniLl, None,
        "per page read";
    GenericFileWrite: "generic_file_write", "mm/filemap.c", MiniLl, None,
        "per page written";
    SubmitBh: "submit_bh", "drivers/block/ll_rw_blk.c", MiniLl, None,
        "after each buffer submitted";
    WriteSomeBuffers: "write_some_buffers", "fs/buffer.c", LowLatency, None,
        "after each 32-buffer batch";
    PruneDcache: "prune_dcache", "fs/dcache.c", LowLatency, Some(Lock::Dcache),
        "every 100 dentries walked (TEST_RESCHED_COUNT(100))";
    PruneIcache: "prune_icache", "fs/inode.c", LowLatency, Some(Lock::Inode),
        "per inode walked";
    DisposeList: "dispose_list", "fs/inode.c", LowLatency, None,
        "per inode freed";
    Ext3FreeData: "ext3_free_data", "fs/ext3/inode.c", LowLatency, None,
        "per block pointer freed";
    ZapPageRange: "zap_page_range", "mm/memory.c", LowLatency, Some(Lock::PageTable),
        "every 256 PTEs (MAX_ZAP_BYTES, 1 MB)";
    SwapOutPmd: "swap_out_pmd", "mm/vmscan.c", LowLatency, Some(Lock::PageTable),
        "every 4 present pages scanned";
    CloseFiles: "close_files", "kernel/exit.c", LowLatency, None,
        "per fd closed at exit (no path in the model yet)";
    Getblk: "getblk", "fs/buffer.c", LowLatency, None,
        "on a hash hit (the low-latency patch's form of mini-ll's bread point)";
    InvalidateBdev: "invalidate_bdev", "fs/buffer.c", LowLatency, Some(Lock::LruList),
        "per buffer, at most 10 breaks (no path in the model yet)";
    FsyncBuffersList: "fsync_buffers_list", "fs/buffer.c", LowLatency, Some(Lock::LruList),
        "per buffer and every 32 (no path in the model yet)";
    OsyncBuffersList: "osync_buffers_list", "fs/buffer.c", LowLatency, Some(Lock::LruList),
        "every 32 buffers (no path in the model yet)";
    InvalidateInodeBuffers: "invalidate_inode_buffers", "fs/buffer.c", LowLatency, Some(Lock::LruList),
        "per buffer (no path in the model yet)";
    SelectParent: "select_parent", "fs/dcache.c", LowLatency, Some(Lock::Dcache),
        "bails out every 500 dentries (no path in the model yet)";
    ShrinkDcacheParent: "shrink_dcache_parent", "fs/dcache.c", LowLatency, None,
        "per select/prune round (no path in the model yet)";
    SyncOne: "__sync_one", "fs/inode.c", LowLatency, None,
        "per inode written by sync_unlocked_inodes (kupdated) and sync_inodes (sync)";
    InvalidateList: "invalidate_list", "fs/inode.c", LowLatency, Some(Lock::Inode),
        "per inode at umount (no path in the model yet)";
    GetNewInode: "get_new_inode", "fs/inode.c", LowLatency, None,
        "after each inode allocation (no path in the model yet)";
    JournalCommitAsyncDatalist: "journal_commit:async_datalist", "fs/jbd/commit.c", LowLatency, Some(Lock::JournalDatalist),
        "per buffer of t_async_datalist (no path in the model yet)";
    JournalCommitIobufWait: "journal_commit:iobuf_wait", "fs/jbd/commit.c", LowLatency, None,
        "per metadata buffer waited on, phase 4 (no path in the model yet)";
    JournalCommitForget: "journal_commit:forget", "fs/jbd/commit.c", LowLatency, None,
        "per buffer of t_forget, phase 7 (no path in the model yet)";
    Ext3ClearBlocks: "ext3_clear_blocks", "fs/ext3/inode.c", LowLatency, None,
        "per pointer of a contiguous run (folded into ext3_free_data in the model)";
    Ext3FreeBlocks: "ext3_free_blocks", "fs/ext3/balloc.c", LowLatency, None,
        "per block bit cleared (folded into ext3_free_data in the model)";
    Ext3FindEntry: "ext3_find_entry", "fs/ext3/namei.c", LowLatency, None,
        "per directory block searched (no path in the model yet)";
    CopyStrings: "copy_strings", "fs/exec.c", LowLatency, None,
        "per 4 KB of argv/env copied (no path in the model yet)";
    InvalidateInodePages: "invalidate_inode_pages", "mm/filemap.c", LowLatency, Some(Lock::PagemapLru),
        "per page, at most 100 restarts (no path in the model yet)";
    DoBufferFdatasync: "do_buffer_fdatasync", "mm/filemap.c", LowLatency, None,
        "per page (no path in the model yet)";
    FilemapFdatawait: "filemap_fdatawait", "mm/filemap.c", LowLatency, Some(Lock::Pagecache),
        "every 32 locked pages (no path in the model yet)";
    PageCacheRead: "page_cache_read", "mm/filemap.c", LowLatency, None,
        "on a cache hit in readahead (no path in the model yet)";
    FindLockPageHelper: "__find_lock_page_helper", "mm/filemap.c", LowLatency, Some(Lock::Pagecache),
        "at entry and on repeat (no path in the model yet)";
    FilemapSyncPteRange: "filemap_sync_pte_range", "mm/filemap.c", LowLatency, Some(Lock::PageTable),
        "per PMD of msync (no path in the model yet)";
    GetUserPages: "get_user_pages", "mm/memory.c", LowLatency, None,
        "before each fault (no path in the model yet)";
    ZeromapPteRange: "zeromap_pte_range", "mm/memory.c", LowLatency, Some(Lock::PageTable),
        "per PMD of a /dev/zero mmap (no path in the model yet)";
    SwapOutMm: "swap_out_mm", "mm/vmscan.c", LowLatency, Some(Lock::PageTable),
        "per VMA, resuming from mm->swap_address (the model breaks in swap_out_pmd)";
    KmemCacheReap: "kmem_cache_reap", "mm/slab.c", LowLatency, None,
        "per slab destroyed (no path in the model yet)";
    MpageWritepages: "mpage_writepages", "fs/mpage.c", Every, None,
        "2.6: cond_resched() after each pagevec of 14 pages written (every 2.6 kernel has it; no 2.4 path reaches it)";
    ScanSwapMap: "scan_swap_map", "mm/swapfile.c", Every, None,
        "cond_resched() every LATENCY_LIMIT (256) entries of the allocator's unlocked scan (2.6.14's code: wherever that allocator runs)";
    ShrinkList: "shrink_list", "mm/vmscan.c", Stock26, None,
        "cond_resched() per page of the batch shrink_cache isolated (2.6.9), zone->lru_lock already dropped";
    RefillInactiveZone: "refill_inactive_zone", "mm/vmscan.c", Stock26, None,
        "cond_resched() per page of the page_referenced() pass (2.6.9), zone->lru_lock dropped";
    BalancePgdat: "balance_pgdat", "mm/vmscan.c", Stock26, None,
        "kswapd0: between shrink_zone rounds (try_to_freeze / cond_resched of the 2.6.9 loop)";
    UnmapVmas: "unmap_vmas", "mm/memory.c", Stock26, Some(Lock::PageTable),
        "2.6.9 without CONFIG_PREEMPT: every ZAP_BLOCK_SIZE (1024 pages), if need_resched, tlb_finish_mmu and cond_resched_lock(page_table_lock)";
    UnmapVmasPreempt: "unmap_vmas:preempt", "mm/memory.c", Stock26, Some(Lock::PageTable),
        "2.6.9 with CONFIG_PREEMPT: the same break every ZAP_BLOCK_SIZE of 8 pages";
    ZapPmdRange: "zap_pmd_range", "mm/memory.c", Stock339, Some(Lock::PageTable),
        "2.6.39 and later: zap_pte_range drops the page table's lock after each page table (PTRS_PER_PTE PTEs) and zap_pmd_range calls cond_resched()";
    AllocPages: "__alloc_pages", "mm/page_alloc.c", Voluntary, None,
        "might_sleep_if(wait) per page allocated (do_swap_page's pages in the model)";
    GenericPerformWrite: "generic_perform_write", "mm/filemap.c", Stock618, None,
        "6.x: cond_resched() after each folio a buffered write() copies (write_begin, copy, write_end)";
    MpagePrepareExtentToMap: "mpage_prepare_extent_to_map", "fs/ext4/inode.c", Stock618, None,
        "6.x: cond_resched() after each batch of FOLIO_BATCH_SIZE (31) dirty folios filemap_get_folios_tag returned, the batch released; reached only when the walk finishes a batch (it stops at an extent of 2048 blocks)";
    TruncateInodePagesRange: "truncate_inode_pages_range", "mm/truncate.c", Stock618, None,
        "6.x: cond_resched() after each batch of 31 folios find_lock_entries returned, cleaned, deleted from the page cache and released";
    WritebackSbInodes: "writeback_sb_inodes", "fs/fs-writeback.c", Stock618, None,
        "6.x: cond_resched() after each inode the flusher wrote (blk_flush_plug first when need_resched)";
    FolioLock: "folio_lock", "include/linux/pagemap.h", Voluntary, None,
        "6.x: might_sleep() in folio_lock(), per folio a walk locks (ext4's writeback walk)";
    FolioAllocBuffers: "folio_alloc_buffers", "fs/buffer.c", Voluntary, None,
        "6.x: might_sleep_if(__GFP_DIRECT_RECLAIM) of the slab allocation of each buffer_head a new folio gets (alloc_buffer_head, GFP_NOFS)";
    LockBuffer: "lock_buffer", "include/linux/buffer_head.h", Voluntary, None,
        "6.x: might_sleep() in lock_buffer(), per buffer_head block_invalidate_folio's discard_buffer locks";
    Jbd2JournalStart: "jbd2__journal_start", "fs/jbd2/transaction.c", Voluntary, None,
        "6.x: might_sleep via the handle's kmem_cache_zalloc(GFP_NOFS), per handle started (ext4's unwritten-extent conversion, one per io_end)";
    BioAlloc: "bio_alloc", "block/bio.c", Voluntary, None,
        "6.x: might_sleep via mempool_alloc(GFP_NOIO) when ext4's writeback starts a new bio (io_submit_init_bio), every BIO_MAX_VECS (256) folios";
}

impl std::fmt::Display for Point {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Point {
    /// The catalog entry.
    pub fn info(self) -> &'static PointInfo {
        &POINTS[self as usize]
    }

    /// The kernel function the point is named after.
    pub fn name(self) -> &'static str {
        self.info().name
    }

    /// The point named `name`, if the catalog knows it (used when a variant loads).
    pub fn from_name(name: &str) -> Option<Point> {
        POINTS.iter().find(|p| p.name == name).map(|p| p.point)
    }
}

/// A set of points, one bit per [`Point`]: what a variant's kernel has. It reads and writes
/// as a list of kernel function names; reading refuses a name the catalog does not know, and
/// the points every kernel has, with the valid names in the message.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PointSet(u128);

const _: () = assert!(POINTS.len() <= 128, "PointSet holds at most 128 points");

impl PointSet {
    pub fn contains(self, p: Point) -> bool {
        self.0 & (1 << p as u32) != 0
    }

    pub fn insert(&mut self, p: Point) {
        self.0 |= 1 << p as u32;
    }

    /// The points in catalog order.
    pub fn iter(self) -> impl Iterator<Item = Point> {
        POINTS.iter().map(|i| i.point).filter(move |p| self.contains(*p))
    }

    /// The set of the points named, or the reason a name is refused.
    pub fn from_names<S: AsRef<str>>(names: impl IntoIterator<Item = S>) -> Result<PointSet, String> {
        let mut set = PointSet::default();
        for n in names {
            let n = n.as_ref();
            match Point::from_name(n) {
                Some(p) if p.info().origin == Origin::Voluntary => {
                    return Err(format!(
                        "`{n}` is a might_sleep() point of the voluntary-preempt patch: `voluntary = true` turns them on; do not list it"
                    ))
                }
                Some(p) if p.info().origin != Origin::Every => set.insert(p),
                Some(_) => return Err(format!("`{n}` is a point every kernel has; do not list it")),
                None => {
                    let valid: Vec<&str> = POINTS
                        .iter()
                        .filter(|i| !matches!(i.origin, Origin::Every | Origin::Voluntary))
                        .map(|i| i.name)
                        .collect();
                    return Err(format!("unknown rescheduling point `{n}`; valid: {}", valid.join(", ")));
                }
            }
        }
        Ok(set)
    }
}

impl serde::Serialize for PointSet {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter().map(Point::name))
    }
}

impl<'de> serde::Deserialize<'de> for PointSet {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let names = Vec::<String>::deserialize(d)?;
        PointSet::from_names(&names).map_err(serde::de::Error::custom)
    }
}

/// One per-item cost of the catalog: a loop body or an operation as the instructions and cache
/// misses it takes, with where those numbers come from. [`MachineProfile::cost`] turns it into
/// time; a machine profile's `catalog` table (and `--vary catalog.NAME.instr|misses=...`)
/// can replace either number.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CostItem {
    pub name: &'static str,
    pub instructions: f64,
    pub misses: f64,
    /// The code it follows and the arithmetic (the doc comment of the [`Costs`] field).
    pub source: &'static str,
    /// How far its two numbers may be off, by the kind of source (`#[spread(...)]` beside
    /// the item: one class for both, or `instr = ..., misses = ...`); `None` for an item
    /// that states none, which a test refuses.
    pub spread: Option<ItemSpread>,
}

/// An item's `#[spread(...)]`: one class for both numbers, or each its own.
macro_rules! item_spread {
    () => {
        None
    };
    (instr = $i:expr, misses = $m:expr) => {
        Some(ItemSpread { instr: $i, misses: $m })
    };
    ($both:expr) => {
        Some(ItemSpread {
            instr: $both,
            misses: $both,
        })
    };
}

/// The catalog's costs as data, and the struct of times a run reads them from, from one list:
/// each entry is `name: instructions, misses;` under its doc comment (the source) and its
/// `#[spread(...)]` (how far the source lets the numbers be off: `crate::spread`).
macro_rules! catalog_costs {
    ($($(#[doc = $doc:literal])* $(#[spread($($spread:tt)+)])? $name:ident: $instr:expr, $misses:expr;)*) => {
        /// Every per-item cost of the catalog, in [`Costs`]' order.
        pub const COST_ITEMS: &[CostItem] = &[$(CostItem {
            name: stringify!($name),
            instructions: $instr,
            misses: $misses,
            source: concat!($($doc, "\n",)*),
            spread: item_spread!($($($spread)+)?),
        },)*];

        /// Per-operation costs of one machine, derived once per run from the profile (and its
        /// catalog overrides); paths read the fields.
        #[derive(Clone, Debug)]
        pub struct Costs {
            $($(#[doc = $doc])* pub $name: Nanos,)*
            /// A 4 KiB copy to or from user space: not a catalog item, the machine's
            /// `copy_mb_s` (vary that: `--vary machine.copy_mb_s=...`).
            pub page_copy: Nanos,
            /// Taking a signal for a handler on the way to user space: `do_signal`,
            /// `dequeue_signal`, `setup_rt_frame`, and the handler's `sigreturn`: not a
            /// catalog item, the machine's `signal_deliver_ns` (lmbench "sig hndl").
            pub signal_deliver: Nanos,
            /// `clone()` of a thread (`do_fork` with CLONE_VM: copy_process without an mm
            /// copy): half of the machine's `thread_create_exit_ns` (NPTL create + exit).
            pub clone_thread: Nanos,
            /// A thread's `do_exit` (no `exit_mmap`: the mm lives on): the other half.
            pub exit_thread: Nanos,
        }

        impl Costs {
            /// The costs on machine `m`: each item's instructions and misses, or the
            /// profile's `catalog` override of either, at the machine's CPI, clock and memory
            /// latency.
            pub fn new(m: &MachineProfile) -> Self {
                let mut items = COST_ITEMS.iter();
                let mut next = || {
                    let it = items.next().expect("one item per field");
                    let o = m.catalog.get(it.name).copied().unwrap_or_default();
                    m.cost(o.instr.unwrap_or(it.instructions), o.misses.unwrap_or(it.misses))
                };
                Costs {
                    $($name: next(),)*
                    page_copy: m.copy_ns(4096),
                    signal_deliver: m.signal_deliver_ns,
                    clone_thread: m.thread_create_exit_ns / 2,
                    exit_thread: m.thread_create_exit_ns - m.thread_create_exit_ns / 2,
                }
            }
        }
    };
}

catalog_costs! {
    /// jbd write_out_data, clean buffer: __journal_unfile_buffer, __journal_remove_journal_head,
    /// refile_buffer, __brelse: ~150 instructions; misses on the journal_head, two lines of
    /// the buffer_head, both LRU neighbours and the slab page: 6.
    #[spread(Counted)]
    unfile: 150.0, 6.0;
    /// Any buffer-list walk passing a locked buffer: test of b_state, follow b_next_free:
    /// ~20 instructions, 1 miss (the buffer_head).
    #[spread(Counted)]
    skip_locked: 20.0, 1.0;
    /// __refile_buffer of a completed buffer: unlink + relink on another LRU list: ~50
    /// instructions, 3 misses (buffer_head, prev and next neighbours).
    #[spread(Counted)]
    refile: 50.0, 3.0;
    /// write_some_buffers taking a dirty buffer: test_and_set lock, clean, refile, get_bh:
    /// ~60 instructions, 3 misses.
    #[spread(Counted)]
    collect: 60.0, 3.0;
    /// submit_bh -> generic_make_request -> __make_request (elevator merge at the queue
    /// tail): ~300 instructions, 2 misses.
    #[spread(Counted)]
    submit_bh: 300.0, 2.0;
    /// prune_dcache passing a referenced dentry: flag clear, list_del + list_add: ~25
    /// instructions, 2 misses (dentry, list neighbour).
    #[spread(Counted)]
    dcache_skip: 25.0, 2.0;
    /// prune_one_dentry: d_free, dentry_iput, list and hash unlinks: ~300 instructions, 6 misses.
    #[spread(Counted)]
    prune_dentry: 300.0, 6.0;
    /// prune_icache visiting an inode: i_state, i_data.nrpages, i_count, list step: ~20
    /// instructions, 2 misses.
    #[spread(Counted)]
    icache_visit: 20.0, 2.0;
    /// dispose_list freeing one inode (clear_inode, destroy): ~400 instructions, 5 misses.
    #[spread(Counted)]
    dispose_inode: 400.0, 5.0;
    /// zap_pte_range per present PTE, freeing an anonymous page (2.4.18 UP path:
    /// tlb_remove_page -> __free_pte -> free_page_and_swap_cache -> __free_pages ->
    /// __free_pages_ok): loop and pte tests ~15 instructions, __free_pte/set_page_dirty ~20,
    /// put_page_testzero ~10, lru_cache_del ~25 (anonymous pages are on the LRU since
    /// do_anonymous_page's lru_cache_add in 2.4.10), __free_pages_ok ~70 with zone->lock
    /// irqsave and one buddy test, list_add ~10: ~150 instructions. Misses: the struct page
    /// and its two LRU neighbours (list_del writes both; they are whatever was added around
    /// the same fault); the 12 KiB order-0 buddy bitmap and the free-list head stay in L2, and
    /// buddies rarely merge (a busy box hands out scattered pages): 3.
    #[spread(Counted)]
    zap_pte: 150.0, 3.0;
    /// zap_pte_range per swap PTE (2.4.17/2.4.18 mm/memory.c: `free_swap_and_cache`):
    /// swap_info_get (swap_list_lock, swap_device_lock), swap_entry_free (the count, lowest/
    /// highest bit, nr_swap_pages), find_trylock_page on swapper_space (pagecache_lock, page
    /// hash), swap_info_put, pte_clear: ~130 instructions. Misses: the swap_map entry, the
    /// page-hash bucket, the swap_info fields the entry's device line shares with nothing
    /// hot: 3.
    #[spread(Counted)]
    free_swap_entry: 130.0, 3.0;
    /// swap_out_pmd per present PTE: ptep_test_and_clear_young: ~20 instructions, 1 miss
    /// (struct page).
    #[spread(Counted)]
    swap_scan_pte: 20.0, 1.0;
    /// try_to_swap_out of an old page besides the slot search: add_to_swap_cache, set the
    /// swap pte, flush: ~600 instructions, 6 misses.
    #[spread(Counted)]
    swap_out_page: 600.0, 6.0;
    /// __sync_one (fs/inode.c, 2.4.17/2.4.18) per dirty inode, for ext3: move it to
    /// s_locked_inodes, set I_LOCK, drop inode_lock, filemap_fdatasync and filemap_fdatawait
    /// (pagecache_lock, empty dirty/locked page lists: ext3 dirties buffers, not pages),
    /// ext3_write_inode (returns at once when not asked to wait), re-take inode_lock, file the
    /// inode on its list, wake_up(i_wait): ~250 instructions. Misses: the inode's list line,
    /// its state/mapping line, its wait queue, the two list neighbours: 5.
    #[spread(Counted)]
    sync_one: 250.0, 5.0;
    /// scan_swap_map per swap_map entry read: ~5 instructions; 16 two-byte entries per
    /// 32-byte PIII cache line, so 1/16 miss.
    #[spread(instr = Counted, misses = Given)]
    swap_map_entry: 5.0, 1.0 / 16.0;
    /// get_swap_page's own part around scan_swap_map (2.6.9 mm/swapfile.c): swap_list_lock,
    /// the nr_swap_pages test, the device's flags, swap_device_lock, and on return the
    /// nr_swap_pages and swap_list.next updates: ~60 instructions, 2 misses (swap_info and
    /// swap_list lines).
    #[spread(Counted)]
    get_swap_page: 60.0, 2.0;
    /// shrink_cache's isolation of one page from the inactive (or refill's from the active)
    /// list under zone->lru_lock, interrupts off (2.6.9 mm/vmscan.c): TestClearPageLRU,
    /// list_del, get_page_testone, list_add: ~25 instructions; `prefetchw_prev_lru_page`
    /// hides half the page struct's miss: 0.5.
    #[spread(Counted)]
    isolate_page: 25.0, 0.5;
    /// shrink_list per page besides swap-out (2.6.9): TestSetPageLocked, page_referenced
    /// through rmap (page_lock_anon_vma, one vma, page_check_address's pgd/pmd/pte walk,
    /// ptep_clear_flush_young), page_mapping, the free or keep bookkeeping: ~300
    /// instructions; misses: page struct, anon_vma, vma, three page-table levels: 6.
    #[spread(Counted)]
    shrink_list_page: 300.0, 6.0;
    /// try_to_unmap of an anonymous page (2.6.9 mm/rmap.c try_to_unmap_anon ->
    /// try_to_unmap_one) under the mm's page_table_lock: page_check_address (3 levels),
    /// flush_cache_page, ptep_clear_flush (an invlpg), the swap pte, page_remove_rmap,
    /// mm counters: ~400 instructions, 5 misses.
    #[spread(Counted)]
    try_to_unmap: 400.0, 5.0;
    /// add_to_swap's swap-cache insertion and pageout -> swap_writepage (2.6.9
    /// mm/swap_state.c, mm/page_io.c): radix_tree_insert under swapper_space.tree_lock,
    /// SetPageWriteback, get_swap_bio, submit_bio through the elevator: ~1,500 instructions,
    /// 15 misses.
    #[spread(Counted)]
    swap_writepage: 1_500.0, 15.0;
    /// do_swap_page per page besides its read (2.6.9 mm/memory.c): lookup_swap_cache,
    /// read_swap_cache_async's page allocation and swap-cache insertion, the pte and rmap
    /// (page_add_anon_rmap), swap_free or remove_exclusive_swap_page: ~1,200 instructions,
    /// 12 misses.
    #[spread(Counted)]
    swap_in_page: 1_200.0, 12.0;
    /// shrink_cache per inactive page: lock tests, page_count, mapping checks,
    /// __remove_inode_page for clean ones: ~100 instructions, 3 misses.
    #[spread(Counted)]
    shrink_page: 100.0, 3.0;
    /// refill_inactive per active page moved: ~30 instructions, 2 misses.
    #[spread(Counted)]
    refill_page: 30.0, 2.0;
    /// truncate_complete_page + page_cache_release + list restart: ~200 instructions, 4 misses.
    #[spread(Counted)]
    truncate_page: 200.0, 4.0;
    /// ext3_free_blocks per block of a run: clear bit, count: ~30 instructions, bitmap is hot.
    #[spread(Counted)]
    free_block: 30.0, 0.0;
    /// ext3_clear_blocks per block pointer (2.4.18 fs/ext3/inode.c): zero the pointer, look
    /// the block up in the buffer hash (`sb_get_hash_table`, so journal_forget can drop a
    /// cached copy) and call ext3_forget, which returns at once for an ordered-mode data
    /// block: ~60 instructions. Misses: the hash bucket (buffer_init sizes the table for
    /// 768 MiB at order 6: 65,536 buckets, 256 KiB, as large as the PIII's L2) and one chain
    /// entry (the page cache's buffer_heads spread about one per bucket): 2.
    #[spread(Counted)]
    clear_block: 60.0, 2.0;
    /// ext3_free_branches per indirect block: bread hit + journal_get_write_access +
    /// ext3_free_data bookkeeping: ~1500 instructions, 10 misses.
    #[spread(Counted)]
    free_indirect: 1500.0, 10.0;
    /// 2.6.17 mpage_writepages per page (fs/mpage.c, fs/ext3/inode.c 2.6.17/2.6.18):
    /// the pagevec lookup by PAGECACHE_TAG_DIRTY (1/14 of it), lock_page,
    /// clear_page_dirty_for_io (tree_lock, radix tag, nr_dirty) ~150 instructions;
    /// ext3_ordered_writepage: ext3_journal_start ~300, walk_page_buffers bget_one ~50,
    /// block_write_full_page (set_page_writeback under tree_lock ~150, mark the buffer for
    /// async write, submit_bh -> generic_make_request -> __make_request back merge ~400),
    /// journal_dirty_data filing the buffer on t_sync_datalist ~250, bput_one and
    /// ext3_journal_stop ~250, unlock_page ~50: ~1,600 instructions. Misses: struct page,
    /// the radix-tree node, the buffer_head (2), the journal_head (2), the handle's slab,
    /// the transaction, the request or bio: 9.
    #[spread(Counted)]
    writepage: 1_600.0, 9.0;
    /// 2.6.17 get_dirty_limits with its caller's bookkeeping: read_page_state summing the
    /// per-CPU page_state (~40 counters, one CPU) ~150 instructions, the ratio arithmetic
    /// ~50: ~200 instructions; misses: the page_state lines: 2.
    #[spread(Counted)]
    dirty_limits: 200.0, 2.0;
    /// generic_file_write per page besides the copy: __grab_cache_page, ext3_prepare_write
    /// (block allocation, journal_start, get_write_access), commit_write (journal_dirty_data,
    /// mark dirty, balance_dirty): ~2000 instructions, 15 misses. The 2.6 kernels' ext3
    /// charges it for the part a rewrite of a cached page also runs (2.6.17
    /// generic_file_buffered_write: find_lock_page ~100, ext3_journal_start ~250,
    /// block_prepare_write over a mapped buffer ~100, journal_dirty_data attaching a
    /// journal_head ~350, mark_buffer_dirty -> __set_page_dirty_nobuffers ~250,
    /// ext3_journal_stop ~250, unlock/mark_page_accessed/release, balance_dirty_pages_ratelimited
    /// and cond_resched ~200: ~1,500, inside the spread) and an append's page insertion and
    /// block allocation on top (`add_to_page_cache`, `ext3_get_block_alloc`,
    /// `ext3_new_block`, `ext3_mark_inode_dirty`); 2.4's path charges it alone for both.
    #[spread(Counted)]
    write_page: 2000.0, 15.0;
    /// 2.6.17 __grab_cache_page missing the page (mm/filemap.c): page_cache_alloc_cold ->
    /// buffered_rmqueue from the per-CPU list ~200, add_to_page_cache_lru (radix_tree_preload,
    /// tree_lock, radix_tree_insert, nrpages) ~150, the LRU pagevec and its drain every 14
    /// pages ~80; then block_prepare_write's create_empty_buffers (alloc_buffer_head from the
    /// slab, recalc_bh_state, attach_page_buffers under private_lock) ~170: ~600
    /// instructions. Misses: the new page's struct page and the new buffer_head: 2 (the
    /// radix-tree node changes every 64 pages).
    #[spread(Counted)]
    add_to_page_cache: 600.0, 2.0;
    /// 2.6.17 ext3_get_block -> ext3_get_blocks_handle allocating one block (fs/ext3/inode.c
    /// of 2.6.18, the same code), besides ext3_new_blocks and the inode update:
    /// ext3_block_to_path ~40; ext3_get_branch's sb_bread of the indirect and double-indirect
    /// blocks (a file past 4 MiB: two bh_lru hits) ~250; truncate_mutex, verify_chain,
    /// ext3_find_goal (the sequential i_block_alloc_info hit), ext3_blks_to_allocate,
    /// ext3_alloc_blocks ~150; ext3_splice_branch's journal_get_write_access of the indirect
    /// block ~150 and its journal_dirty_metadata ~100; map_bh, set_buffer_new, the chain's
    /// brelse ~60; block_prepare_write's unmap_underlying_metadata for the new block
    /// (__find_get_block on the block device: a bh_lru miss, then find_get_page on the bdev's
    /// radix tree, not cached) ~300: ~1,050 instructions. Misses: the indirect block's pointer
    /// line (1 in 16 blocks) and the bdev radix-tree walk (2): 2.
    #[spread(Counted)]
    ext3_get_block_alloc: 1_050.0, 2.0;
    /// 2.6.17 ext3_new_blocks for one block inside the inode's reservation window
    /// (fs/ext3/balloc.c), besides the inode update DQUOT_ALLOC_BLOCK asks for:
    /// DQUOT_ALLOC_BLOCK's lock_kernel, inode_add_bytes under i_lock, unlock_kernel ~60; the
    /// nested ext3_journal_start/stop (h_ref) of ext3_dirty_inode and __mark_inode_dirty's
    /// fast path ~90; ext3_has_free_blocks and ext3_get_group_desc ~50; read_block_bitmap's
    /// sb_bread (a bh_lru hit) ~100; journal_get_undo_access of the bitmap (journal_head
    /// lookup, do_get_write_access's fast path for a buffer of the running transaction, the
    /// b_committed_data test) ~250; the reservation seqlock and goal_in_my_reservation ~50;
    /// ext3_try_to_allocate's ext3_test_allocatable and claim_block (set bit under the
    /// blockgroup lock, test in b_committed_data) ~140; journal_dirty_metadata of the bitmap
    /// ~100; journal_get_write_access of the group descriptor block ~150 and its
    /// journal_dirty_metadata ~100; bg_free_blocks_count under the lock, percpu_counter_mod of
    /// s_freeblocks_counter ~60; brelse ~20: ~1,170 instructions. Misses: the bitmap's
    /// journal_head and the reservation node, reloaded after the copy: 2.
    #[spread(Counted)]
    ext3_new_block: 1_170.0, 2.0;
    /// 2.6.17 ext3_mark_inode_dirty under an open handle (fs/ext3/inode.c):
    /// ext3_reserve_inode_write (ext3_get_inode_loc: the group descriptor, sb_getblk of the
    /// inode-table block, a bh_lru hit ~150; journal_get_write_access of a buffer already in
    /// the running transaction ~150), ext3_do_update_inode copying ~30 fields and i_block[15]
    /// into the raw inode ~220, journal_dirty_metadata's fast path ~60, brelse ~20: ~600
    /// instructions. Misses: the in-core inode's and the raw inode's lines: 2 (the buffer and
    /// journal_head stay hot between an append's three calls).
    #[spread(Counted)]
    ext3_mark_inode_dirty: 600.0, 2.0;
    /// ext3_dirty_inode (2.4.18 fs/ext3/inode.c), run by `mark_inode_dirty_sync` for an atime
    /// or mtime update: ext3_journal_start of a one-credit handle (kmalloc, start_this_handle)
    /// ~350 instructions; ext3_mark_inode_dirty: ext3_get_inode_loc (group descriptor, bread of
    /// the inode-table block, a buffer-hash hit) ~250, journal_get_write_access ~250,
    /// ext3_do_update_inode copying ~20 fields into the raw inode ~200, journal_dirty_metadata
    /// ~150; journal_stop and kfree ~300: ~1,500 instructions. Misses: the handle's slab, the
    /// in-core inode (2), the group descriptor, the hash bucket and buffer_head (2), the
    /// journal_head (2), the raw inode, the transaction and journal (3), the slab on free: 14.
    #[spread(Counted)]
    dirty_inode: 1_500.0, 14.0;
    /// do_generic_file_read per cached page besides the copy: __find_page_nolock, mark
    /// accessed, file_read_actor setup: ~300 instructions, 4 misses.
    #[spread(Counted)]
    read_page: 300.0, 4.0;
    /// Path lookup of one component pair (open/stat): ~1000 instructions, 8 misses.
    #[spread(Estimate)]
    lookup: 1000.0, 8.0;
    /// ext3_create / mkdir: inode allocation, directory entry, journal handles: ~4000
    /// instructions, 30 misses.
    #[spread(Estimate)]
    create: 4000.0, 30.0;
    /// ext3_unlink + iput bookkeeping besides truncation: ~3000 instructions, 25 misses.
    #[spread(Estimate)]
    unlink: 3000.0, 25.0;
    /// journal_write_metadata_buffer per metadata block: ~400 instructions, 4 misses.
    #[spread(Counted)]
    journal_meta: 400.0, 4.0;
    /// getdents per entry: ~300 instructions, 2 misses.
    #[spread(Estimate)]
    readdir_entry: 300.0, 2.0;
    /// do_fork + execve besides page-table copies: ~60000 instructions, 300 misses
    /// (lmbench on a PIII-868 gives fork+exec ~0.8 ms with page faults; the kernel part is
    /// a fraction).
    #[spread(Estimate)]
    fork_exec: 60000.0, 300.0;
    /// rtc_read: copy the count out, clear rtc_irq_data: ~200 instructions, 2 misses.
    #[spread(Counted)]
    rtc_read: 200.0, 2.0;
    /// Rest of do_exit besides exit_mmap: files, fs, signals, notify parent: ~5000
    /// instructions, 40 misses.
    #[spread(Estimate)]
    exit_rest: 5000.0, 40.0;
    /// One NFS call over the loopback device besides its data copies, both trips: the
    /// client's XDR encode and `rpc_call_sync`/`xprt_transmit`, `udp_sendmsg`,
    /// `ip_build_xmit`, `loopback_xmit` and `netif_rx`; `net_rx_action`, `ip_rcv`, `udp_rcv`;
    /// nfsd's `svc_recv`, `svc_process` and XDR decode; the reply back the same way. About six
    /// stages of ~2,000 instructions each and ~10 misses (an estimate from the code path;
    /// no measurement of the era was found): 12,000 instructions, 60 misses.
    #[spread(Estimate)]
    rpc_call: 12_000.0, 60.0;
    /// ftruncate() besides the pages and blocks it frees: do_truncate, notify_change,
    /// ext3_setattr, inode_setattr, vmtruncate, ext3_block_truncate_page zeroing the tail of
    /// the last page, the journal handle: ~2,000 instructions, 15 misses (an estimate).
    #[spread(Estimate)]
    setattr: 2_000.0, 15.0;
    /// fstat(): fget, cp_new_stat, copy to user: ~400 instructions, 3 misses.
    #[spread(Counted)]
    fstat: 400.0, 3.0;
    /// One SHA-1 transform of extract_entropy (2.4 drivers/char/random.c, USE_SHA), mixing
    /// the result back into the pool, per 10 bytes handed out: ~1,200 instructions, the pool
    /// in cache.
    #[spread(Counted)]
    sha_transform: 1_200.0, 0.0;
    /// A fault that becomes a signal and its handler's return: exception entry,
    /// do_page_fault or do_invalid_op, force_sig_info, do_signal, setup_frame, and
    /// sys_sigreturn: ~3,000 instructions, 20 misses.
    #[spread(Counted)]
    signal_fault: 3_000.0, 20.0;
    /// One TCP segment over the loopback device besides its data copies, both sides:
    /// `tcp_sendmsg`'s segment set-up, `tcp_transmit_skb`, `ip_queue_xmit`, `loopback_xmit`,
    /// `netif_rx`; `net_rx_action`, `ip_rcv`, `tcp_v4_rcv`, `tcp_rcv_established` with its
    /// ACK: ~5,000 instructions, ~30 misses (an estimate from the code path).
    #[spread(Estimate)]
    tcp_segment: 5_000.0, 30.0;
    /// pipe_write or pipe_read besides the copy: the semaphore, the wait queue, the wake-up
    /// of the other end, `tcp_recvmsg`'s queue handling likewise: ~500 instructions, 4 misses.
    #[spread(Counted)]
    pipe_op: 500.0, 4.0;
    /// An anonymous page fault: exception entry, do_anonymous_page, clear_page, return:
    /// lmbench "page fault" ~2 us on a PIII-868 (research notes §4), i.e. ~1000
    /// instructions and ~4 misses here.
    #[spread(Measured)]
    page_fault: 1000.0, 4.0;
    /// `sigwaitinfo` taking a queued signal: `dequeue_signal` (collect_signal, the sigqueue
    /// freed back to its timer) and `copy_siginfo_to_user`: ~300 instructions, 3 misses (the
    /// sigpending list, the sigqueue, the user siginfo line). Arithmetic from kernel/signal.c.
    #[spread(Counted)]
    signal_dequeue: 300.0, 3.0;
    /// `futex_wait` of a private futex up to its sleep (kernel/futex/waitwake.c, 6.x):
    /// `get_futex_key` (mm and address, no page lookup), `futex_q_lock` (the hash, the
    /// bucket's spinlock), `futex_get_value_locked`, `futex_queue` (plist_add) and
    /// `set_current_state`; after the wakeup `futex_unqueue`: ~400 instructions, 5 misses
    /// (the bucket, the futex word's line, the futex_q, the plist neighbours). An estimate
    /// from the code path.
    #[spread(Estimate)]
    futex_wait: 400.0, 5.0;
    /// `futex_wake` (kernel/futex/waitwake.c): `get_futex_key`, the bucket's spinlock, the
    /// walk of its plist for matching keys, `futex_wake_mark` of the waiter and
    /// `wake_up_q`'s `try_to_wake_up`: ~600 instructions, 6 misses (the bucket, the
    /// futex_q, the woken task's struct and runqueue lines). An estimate from the code path.
    #[spread(Estimate)]
    futex_wake: 600.0, 6.0;
    /// 6.18 buffered write, per folio besides its blocks (mm/filemap.c
    /// `generic_perform_write`, fs/ext4/inode.c `ext4_da_write_begin`/`ext4_da_do_write_end`):
    /// `fault_in_iov_iter_readable` ~50; `__filemap_get_folio(FGP_WRITEBEGIN |
    /// fgf_set_order(len))` missing the folio: `filemap_alloc_folio` from the buddy
    /// (`__alloc_pages` of the order, prep_compound for a large one) ~500,
    /// `filemap_add_folio` (memcg charge ~200, `__filemap_add_folio` xas_store of a
    /// multi-index entry under xa_lock_irq ~250, `folio_add_lru` ~100) ~550; write_end's
    /// `folio_mark_dirty` -> `filemap_dirty_folio` (xa tag, dirty accounting) ~200,
    /// i_size update, `folio_unlock`/`folio_put` ~80; `balance_dirty_pages_ratelimited`
    /// ~100: ~1,500 instructions. Misses: the new folio's head and second struct page
    /// lines, the xarray node, the lruvec and memcg counters, the inode: 6.
    #[spread(Estimate)]
    ext4_write_folio: 1_500.0, 6.0;
    /// 6.18 buffered write, per 4 KiB block of a new folio under delalloc (fs/buffer.c
    /// `folio_alloc_buffers`, fs/ext4/inode.c `ext4_block_write_begin`,
    /// `ext4_da_get_block_prep` -> `ext4_da_map_blocks`, fs/ext4/extents_status.c,
    /// `block_write_end`): `alloc_buffer_head` from the slab and its init ~120; the
    /// per-buffer loop of ext4_block_write_begin ~50; ext4_da_map_blocks: the
    /// extent-status lookup (`ext4_es_lookup_extent`, read_lock i_es_lock, a short rb-tree)
    /// ~150, `ext4_map_query_blocks` finding the hole in the in-inode extent tree ~250,
    /// `ext4_insert_delayed_blocks`: `ext4_da_reserve_space` (quota reservation,
    /// i_block_reservation_lock, the percpu dirty-clusters counter) ~200 and
    /// `ext4_es_insert_delayed_extent` merging into the previous delayed extent under
    /// write_lock i_es_lock ~250; `map_bh`/`set_buffer_new`/`set_buffer_delay` ~30;
    /// write_end's `__block_commit_write` per buffer (uptodate, `mark_buffer_dirty` of a
    /// folio already dirty) ~50: ~1,100 instructions. Misses: the new buffer_head's two
    /// lines, the extent-status node: 3 (the inode's lines stay hot across a folio).
    #[spread(Estimate)]
    ext4_write_bh: 1_100.0, 3.0;
    /// 6.18 ext4 writeback, per folio (fs/ext4/inode.c `mpage_prepare_extent_to_map`,
    /// `mpage_map_and_submit_buffers`, `mpage_submit_folio`; fs/ext4/page-io.c
    /// `ext4_bio_write_folio`): its share of `filemap_get_folios_tag` ~40, `folio_lock` ~20,
    /// the dirty/writeback/mapping tests and `folio_wait_writeback` ~40; in the submit
    /// walk the folio lookup again ~40, `folio_clear_dirty_for_io` (xa dirty tag under
    /// xa_lock_irq, the dirty counters of node, memcg and wb) ~250,
    /// `__folio_start_writeback` (writeback tag, counters) ~250, `bio_add_folio` ~60,
    /// `folio_unlock` ~20: ~720 instructions. Misses: struct folio (2), the xarray node,
    /// the memcg and wb counter lines: 5.
    #[spread(Estimate)]
    ext4_wb_folio: 720.0, 5.0;
    /// 6.18 ext4 writeback, per buffer_head of a delalloc folio (fs/ext4/inode.c
    /// `mpage_process_folio_bufs` -> `mpage_add_bh_to_extent`, `mpage_process_folio`;
    /// fs/ext4/page-io.c `ext4_bio_write_folio`'s two loops and `io_submit_add_bh`):
    /// adding the block to the extent ~30; mapping it (`clear_buffer_delay`,
    /// `set_buffer_mapped`, `set_buffer_unwritten`, `b_blocknr`) ~40; the write loops
    /// (`buffer_dirty`, `clear_buffer_dirty`, `set_buffer_async_write`, then
    /// `io_submit_add_bh` merging the block into the folio's bio_vec) ~90: ~160
    /// instructions. Misses: the buffer_head's two lines on the prepare walk's first touch
    /// (written seconds ago, long out of cache; the submit walk finds them in L2): 2.
    #[spread(Estimate)]
    ext4_wb_bh: 160.0, 2.0;
    /// 6.18 ext4 block allocation at writeback, per mapped extent (fs/ext4/inode.c
    /// `mpage_map_one_extent` -> `ext4_map_blocks` with EXT4_GET_BLOCKS_IO_CREATE_EXT,
    /// fs/ext4/extents.c `ext4_ext_map_blocks`, fs/ext4/mballoc.c `ext4_mb_new_blocks`):
    /// the jbd2 handle (`ext4_journal_start_with_reserve`, `ext4_init_io_end`) ~800;
    /// mballoc (`ext4_mb_regular_allocator`: the group's buddy scan, `ext4_lock_group`,
    /// `mb_mark_used`, the preallocation bookkeeping) ~3,000; the bitmap, group
    /// descriptor and extent-tree journal accesses (`ext4_journal_get_write_access`,
    /// `ext4_handle_dirty_metadata`) 3 x ~400; `ext4_ext_insert_extent` of an unwritten
    /// extent ~800; the extent-status update ~300; `ext4_update_disksize`'s
    /// `ext4_mark_inode_dirty` ~1,500; `ext4_journal_stop` ~300: ~8,000 instructions,
    /// 40 misses (handle, transaction, group info and buddy pages, bitmap, descriptor,
    /// extent block, journal heads, inode).
    #[spread(Estimate)]
    ext4_map_extent: 8_000.0, 40.0;
    /// 6.18 truncate, per folio besides its buffers (mm/truncate.c
    /// `truncate_inode_pages_range`): its share of `find_lock_entries` (xas walk,
    /// `folio_trylock`) ~60; `truncate_cleanup_folio` (`folio_mapped`, `folio_invalidate`
    /// dispatch, `folio_cancel_dirty`) ~100; `filemap_release_folio` ->
    /// `ext4_release_folio` -> `jbd2_journal_try_to_free_buffers` ~60;
    /// `delete_from_page_cache_batch`'s `page_cache_delete_batch` (xas_store) and
    /// `filemap_unaccount_folio` ~250; `folio_unlock` and the batch's `folios_put`
    /// freeing it to the buddy with memcg uncharge ~450: ~920 instructions. Misses:
    /// struct folio (2), the xarray node, the memcg counters: 4.
    #[spread(Estimate)]
    trunc_folio: 920.0, 4.0;
    /// 6.18 truncate, per buffer_head outside `i_private_lock` (fs/buffer.c
    /// `block_invalidate_folio` -> `discard_buffer`: `lock_buffer`, `clear_buffer_dirty`,
    /// `b_bdev = NULL`, the seven flags cleared, `unlock_buffer` ~80;
    /// `jbd2_journal_try_to_free_buffers`' per-buffer pass, no journal_head ~20; after
    /// the lock `free_buffer_head` -> `kmem_cache_free`, `recalc_bh_state` ~80): ~180
    /// instructions. Misses: the buffer_head's two lines, cold since the write: 2.
    #[spread(Estimate)]
    trunc_bh: 180.0, 2.0;
    /// 6.18 `try_to_free_buffers` -> `drop_buffers` per buffer_head, under the mapping's
    /// `i_private_lock` (fs/buffer.c): `buffer_busy` test, `b_assoc_map` test, the walk to
    /// `b_this_page` ~25 instructions; the buffer_head was just touched by
    /// discard_buffer: 0 misses.
    #[spread(Estimate)]
    drop_bh: 25.0, 0.0;
    /// 6.18 ext4_truncate / evict, per extent freed (fs/ext4/extents.c
    /// `ext4_ext_remove_space` -> `ext4_ext_rm_leaf` -> `ext4_free_blocks`, fs/ext4/mballoc.c
    /// `ext4_mb_clear_bb`: the group's bitmap and buddy bits for the run, the journal
    /// accesses of bitmap and descriptor, the extent-status removal): ~4,000 instructions,
    /// 25 misses (an estimate from the code path).
    #[spread(Estimate)]
    ext4_free_extent: 4_000.0, 25.0;
    /// jbd2 `journal_submit_data_buffers` / `journal_finish_inode_data_buffers` per inode,
    /// under `j_list_lock` (fs/jbd2/commit.c): the list step to the next `jbd2_inode`, the
    /// `JI_COMMIT_RUNNING` flag set or cleared, ~60 instructions; misses: the jbd2_inode and
    /// its list neighbour: 2.
    #[spread(Counted)]
    jbd2_inode_step: 60.0, 2.0;
    /// 6.x flusher `queue_io` -> `move_expired_inodes` per inode moved from `b_dirty` to
    /// `b_io`, under `wb->list_lock` (fs/fs-writeback.c): `wb_inode(delaying_queue->prev)`,
    /// `inode_dirtied_after` ~10; `spin_lock(&inode->i_lock)`, `list_move`, `moved++`,
    /// `I_SYNC_QUEUED` set, `spin_unlock` ~30 (two atomics); the `sb_is_blkdev_sb` and
    /// `i_sb` tests ~10: ~50 instructions. One file system: no sort by superblock, the list
    /// is spliced whole onto `b_io` (O(1)). Misses: the inode's `dirtied_when`/`i_io_list`
    /// line, its `i_lock`/`i_state` line, its `i_sb` line (the list neighbour is the next
    /// inode's, counted there): 3.
    #[spread(Counted)]
    queue_io_inode: 50.0, 3.0;
    /// 6.x `writeback_sb_inodes` per inode before its write, under `wb->list_lock`
    /// (fs/fs-writeback.c): `wb_inode(wb->b_io.prev)`, the `i_sb` test,
    /// `spin_lock(&inode->i_lock)`, the `I_NEW`/`I_FREEING`/`I_SYNC` tests,
    /// `spin_unlock(&wb->list_lock)`, `I_SYNC` set, `wbc_attach_and_unlock_inode` (no cgroup
    /// writeback: the unlock), `writeback_chunk_size` ~60 instructions. Misses: the inode's
    /// `i_io_list` and `i_state` lines, cold since `queue_io`: 2.
    #[spread(Counted)]
    wb_pick_inode: 60.0, 2.0;
    /// 6.x `__writeback_single_inode` after `do_writepages`, its `i_lock` section
    /// (fs/fs-writeback.c): `spin_lock(&inode->i_lock)`, the `I_DIRTY` flags read and
    /// cleared, `smp_mb()`, `mapping_tagged(PAGECACHE_TAG_DIRTY)`, `spin_unlock` ~40
    /// instructions; the inode is hot from the write, the mapping's xarray flags line: 1.
    #[spread(Counted)]
    wb_inode_flags: 40.0, 1.0;
    /// 6.x `writeback_sb_inodes` between `__writeback_single_inode`'s `i_lock` section and
    /// the requeue, no lock held: `write_inode` (ext4_write_inode returns at once for
    /// `WB_SYNC_NONE`), `wbc_detach_inode` (no cgroup), the `nr_pages`/`wrote` accounting,
    /// the `need_resched()` test: ~50 instructions, 0 misses (all just touched).
    #[spread(Counted)]
    wb_inode_done: 50.0, 0.0;
    /// 6.x `writeback_sb_inodes` per inode after its write, under `wb->list_lock`
    /// (fs/fs-writeback.c): `inode_to_wb_and_lock_list`, `spin_lock(&inode->i_lock)`,
    /// `requeue_inode` (`mapping_tagged`, the list move or `inode_cgwb_move_to_attached`'s
    /// `list_del_init`) ~60; `inode_sync_complete`: `I_SYNC` cleared, `inode_add_lru`
    /// (`list_lru_add` of an unused clean inode: its node lock, the list) ~70, `smp_mb`,
    /// `wake_up_bit` (hashed wait queue, nobody waiting) ~30; the unlock and the `HZ / 10`
    /// bail-out test ~10: ~170 instructions. Misses: the `b_io`/`b_dirty` list neighbour,
    /// the sb's `list_lru` node, the bit wait-queue bucket: 3.
    #[spread(Counted)]
    wb_requeue_inode: 170.0, 3.0;
    /// 6.18 `ext4_convert_unwritten_io_end_vec` per io_end (fs/ext4/page-io.c,
    /// fs/ext4/extents.c `ext4_convert_unwritten_extents` -> `ext4_map_blocks` with
    /// EXT4_GET_BLOCKS_IO_CONVERT_EXT): the reserved handle started ~600; the extent
    /// lookup, `ext4_ext_convert_to_initialized`'s split or flag flip and merge ~1,200; the
    /// extent block's journal access and dirtying ~600; the extent-status update ~300;
    /// `ext4_mark_inode_dirty` ~1,500; `ext4_journal_stop` ~300: ~4,500 instructions, 30
    /// misses (handle, transaction, extent block, journal head, es tree, inode).
    #[spread(Estimate)]
    ext4_convert_extent: 4_500.0, 30.0;
    /// 6.18 `ext4_finish_bio` per folio besides its buffers (fs/ext4/page-io.c): the
    /// bio_for_each_folio_all step ~20, `spin_lock_irqsave(&head->b_uptodate_lock)` and its
    /// release ~40, `folio_end_writeback` (`__folio_end_writeback`: the writeback tag cleared
    /// under xa_lock_irqsave, the node, memcg and wb counters ~250; `folio_wake_bit` ~40):
    /// ~350 instructions. Misses: struct folio, the xarray node, the counters: 3.
    #[spread(Estimate)]
    end_io_folio: 350.0, 3.0;
    /// 6.18 `ext4_finish_bio` per buffer_head, under the folio's `b_uptodate_lock`: the
    /// offset test and `clear_buffer_async_write` ~20 instructions; the buffer_head's line,
    /// last touched at submission milliseconds before: 1 miss.
    #[spread(Estimate)]
    end_io_bh: 20.0, 1.0;
}

impl Costs {
    /// Copying `bytes` to or from user space (or between kernel buffers): the page copy's rate.
    pub fn copy(&self, bytes: u64) -> Nanos {
        bytes * self.page_copy / 4096
    }
}

/// A path that sleeps on `chan` (optionally with a timeout) and returns.
pub struct WaitOn {
    pub chan: Chan,
    pub timeout: Option<Nanos>,
    slept: bool,
}

impl WaitOn {
    pub fn new(chan: Chan, timeout: Option<Nanos>) -> Box<Self> {
        Box::new(WaitOn {
            chan,
            timeout,
            slept: false,
        })
    }
}

impl<K: CoreK> Path<K> for WaitOn {
    fn name(&self) -> &'static str {
        "interruptible_sleep_on"
    }
    fn next(&mut self, k: &mut K, cx: &Ctx) -> Step {
        let k = k.core();
        if self.slept {
            return Step::Done;
        }
        self.slept = true;
        if let Some(t) = self.timeout {
            k.out.push(crate::kernel::state::KReq::WakeAt {
                at: cx.now + t,
                chan: self.chan,
            });
        }
        Step::Block(self.chan)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every cost states how far it may be off (issue 20): an item added without a
    /// `#[spread(...)]` line fails here, by name.
    #[test]
    fn every_cost_item_states_its_spread() {
        let missing: Vec<&str> = COST_ITEMS
            .iter()
            .filter(|i| i.spread.is_none())
            .map(|i| i.name)
            .collect();
        assert!(
            missing.is_empty(),
            "catalog items without a #[spread(...)] line (docs/fidelity.md \"Uncertainty\": \
             counted from the code +-30 %, an estimate x2, measured +-10 %): {missing:?}"
        );
        let unfile = COST_ITEMS.iter().find(|i| i.name == "unfile").unwrap();
        assert_eq!(unfile.spread.unwrap().misses, crate::spread::Spread::Counted);
        let e = COST_ITEMS
            .iter()
            .find(|i| i.name == "swap_map_entry")
            .unwrap()
            .spread
            .unwrap();
        assert_eq!((e.instr, e.misses), (Counted, Given));
    }

    #[test]
    fn costs_are_the_table_at_the_machines_rates_unless_the_machine_overrides_them() {
        let mut m = crate::cpu::tests::machine();
        let c = Costs::new(&m);
        // The table's numbers for every field (and the fields in the table's order).
        let unfile = COST_ITEMS.iter().find(|i| i.name == "unfile").unwrap();
        assert_eq!((unfile.instructions, unfile.misses), (150.0, 6.0));
        assert!(unfile.source.contains("__journal_unfile_buffer"), "{}", unfile.source);
        assert_eq!(c.unfile, m.cost(150.0, 6.0));
        assert_eq!(c.pipe_op, m.cost(500.0, 4.0));
        assert_eq!(c.page_copy, m.copy_ns(4096));
        let mut names: Vec<&str> = COST_ITEMS.iter().map(|i| i.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), COST_ITEMS.len());
        // An override replaces the number it gives, for that item only.
        m.catalog.insert(
            "unfile".into(),
            crate::CostOverride {
                instr: None,
                misses: Some(3.0),
            },
        );
        m.catalog.insert(
            "sync_one".into(),
            crate::CostOverride {
                instr: Some(500.0),
                misses: None,
            },
        );
        let o = Costs::new(&m);
        assert_eq!(o.unfile, m.cost(150.0, 3.0));
        assert_eq!(o.sync_one, m.cost(500.0, 5.0));
        assert_ne!(o.unfile, c.unfile);
        assert_eq!((o.refile, o.prune_dentry), (c.refile, c.prune_dentry));
    }

    #[test]
    fn a_machines_catalog_overrides_are_checked() {
        let mut m = crate::cpu::tests::machine();
        let set = |m: &mut MachineProfile, name: &str, instr: Option<f64>, misses: Option<f64>| {
            m.catalog.clear();
            m.catalog.insert(name.into(), crate::CostOverride { instr, misses });
            m.validate()
        };
        assert!(set(&mut m, "unfile", Some(0.0), Some(3.5)).is_ok());
        let (f, why) = set(&mut m, "unfle", None, Some(3.0)).unwrap_err();
        assert!(
            f == "catalog" && why.contains("unknown catalog item `unfle`") && why.contains("sync_one"),
            "{why}"
        );
        let (_, why) = set(&mut m, "page_copy", Some(1.0), None).unwrap_err();
        assert!(why.contains("copy_mb_s"), "{why}");
        for bad in [-1.0, f64::NAN, f64::INFINITY, 2e9] {
            let (_, why) = set(&mut m, "unfile", Some(bad), None).unwrap_err();
            assert!(why.contains("unfile.instr"), "{why}");
        }
        let (_, why) = set(&mut m, "unfile", None, Some(1e7)).unwrap_err();
        assert!(why.contains("unfile.misses") && why.contains("0..=1000000"), "{why}");
    }
}
