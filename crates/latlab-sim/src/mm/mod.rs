//! Memory: free pages, the page cache by file, process address spaces, swap
//! (mm/page_alloc.c, mm/filemap.c, mm/vmscan.c, mm/swapfile.c of 2.4.17/2.4.18).
//!
//! Only as much VM as the seeds' loops need: how many pages are free (whether an allocation
//! must reclaim, whether kswapd runs), which pages of each file are cached ([`pagecache`]:
//! what a read finds, what `prune_icache` skips, what `truncate_inode_pages` walks), each
//! address space's resident and recently referenced pages (what `swap_out_mm` scans, what
//! `exit_mmap` zaps), the swap map (what `scan_swap_map` searches, through the `latlab-swap`
//! allocators), and the two LRU lists in age order ([`lru`]: what `shrink_cache` and
//! `refill_inactive` meet, oldest first).
//!
//! The lists follow 2.4.18 (mm/swap.c, mm/filemap.c, mm/vmscan.c): `lru_cache_add` puts
//! every new page-cache page *and* every new anonymous page (`do_anonymous_page` calls
//! `lru_cache_add` then `mark_page_accessed`) at the head of the inactive list; nothing marks
//! an anonymous page accessed again while its process merely uses it, so an idle desktop's
//! pages sit at the tail, oldest, where `shrink_cache` meets them first. `mark_page_accessed`
//! moves a page that already has PG_referenced to the active list (`activate_page`) and sets
//! the bit on any other: a file page read after it was read or written
//! (`do_generic_file_read`; `generic_file_write` only sets the bit), an anonymous page whose
//! pte `swap_out` finds young. `refill_inactive` walks the active list from its tail: a
//! referenced page has the bit cleared and goes back to the active head, any other to the
//! inactive head with the bit set. `shrink_cache` ignores the bit. One model shortcut: a
//! rewritten inactive page moves to the inactive list's young end, because the scan takes
//! the newest inactive cache pages for the dirty ones (`ScanLimits::dirty`).

pub mod fs_ops;
pub mod ioless;
pub mod lru;
pub mod memory;
pub mod oom_kill;
pub mod page_writeback;
pub mod pagecache;
pub mod pdflush;
pub mod per_mm;
pub mod reclaim;
pub mod state;
pub mod swap_in;
pub mod thrash;
pub mod vmscan;
pub mod vmscan26;
pub mod writeback;

use crate::machine::MachineProfile;
use latlab_swap::{AllocRequest, SwapAllocator};
use lru::{List, Run};
use pagecache::PageSet;
use std::collections::BTreeMap;

/// A file's page-cache and on-disk state.
#[derive(Clone, Debug, Default)]
pub struct FileRec {
    /// Size in pages.
    pub size: u64,
    /// Which of its pages are in the page cache.
    pub pages: PageSet,
    /// First disk block (files are laid out contiguously in creation order).
    pub block: u64,
    /// Open or in use (inode not on the unused list).
    pub in_use: bool,
    /// `i_atime` in whole seconds of simulated time (`CURRENT_TIME` is `xtime.tv_sec`), as
    /// `update_atime` last set it; `None` before the run's first read of the file.
    pub atime_s: Option<u64>,
    /// `i_mtime` in whole seconds, as 2.6's `file_update_time` last set it (ext3's
    /// `s_time_gran` is a second); `None` before the run's first write under a 2.6 kernel.
    pub mtime_s: Option<u64>,
    /// The order of its folios (6.x: [`pagecache::write_folio_order`] of the write that
    /// created them; 0, a folio a page, in the 2.x page cache).
    pub folio_order: u8,
}

impl FileRec {
    /// Pages in the page cache.
    pub fn cached(&self) -> u64 {
        self.pages.count()
    }
    /// Pages per folio.
    pub fn folio_pages(&self) -> u64 {
        1 << self.folio_order
    }
}

/// The files by id (ids are handed out in order from 1, so a vector indexed by id; a
/// deleted file leaves its slot empty).
#[derive(Default)]
pub struct Files {
    recs: Vec<Option<FileRec>>,
}

impl Files {
    pub fn get(&self, id: &u32) -> Option<&FileRec> {
        self.recs.get(*id as usize).and_then(Option::as_ref)
    }
    pub fn get_mut(&mut self, id: &u32) -> Option<&mut FileRec> {
        self.recs.get_mut(*id as usize).and_then(Option::as_mut)
    }
    pub fn contains_key(&self, id: &u32) -> bool {
        self.get(id).is_some()
    }
    fn insert(&mut self, id: u32, f: FileRec) {
        let i = id as usize;
        if self.recs.len() <= i {
            self.recs.resize_with(i + 1, || None);
        }
        self.recs[i] = Some(f);
    }
    fn remove(&mut self, id: &u32) -> Option<FileRec> {
        self.recs.get_mut(*id as usize).and_then(Option::take)
    }
    /// The live files, by id.
    pub fn values(&self) -> impl Iterator<Item = &FileRec> {
        self.recs.iter().flatten()
    }
}

impl std::ops::Index<&u32> for Files {
    type Output = FileRec;
    fn index(&self, id: &u32) -> &FileRec {
        self.get(id).expect("no such file")
    }
}

/// What one `shrink_cache` scan meets, oldest page first.
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct Scan {
    /// Pages looked at.
    pub scanned: u64,
    /// Clean cache pages freed.
    pub freed: u64,
    /// Mapped (anonymous) pages met.
    pub mapped: u64,
    /// Dirty cache pages met (sent to writepage).
    pub dirty: u64,
    /// Stopped because more than `max_mapped` mapped pages were met: swap_out is due.
    pub swap: bool,
    /// Files whose last cached page went (and that nobody holds open).
    pub emptied: u64,
}

/// Limits of one `shrink_cache` call (mm/vmscan.c, 2.4.18).
#[derive(Clone, Copy, Debug)]
pub struct ScanLimits {
    /// Pages to free (`nr_pages`).
    pub want: u64,
    /// `max_scan = nr_inactive_pages / priority`.
    pub max_scan: u64,
    /// `max_mapped`: mapped pages tolerated before swap_out.
    pub max_mapped: u64,
    /// Dirty (or locked) cache pages: the newest cache pages on the list.
    pub dirty: u64,
}

/// An address space.
#[derive(Clone, Debug, Default)]
pub struct MmRec {
    /// Resident pages.
    pub rss: u64,
    /// Of those, referenced since swap_out last looked (pte young bit set).
    pub young: u64,
    /// Pages out on swap, with their slots.
    pub swapped: Vec<u64>,
    /// Resident pages that still hold their swap slot (2.6's swap cache: swapped in while
    /// swap was less than half full, `vm_swap_full()` false): reclaim writes them back to
    /// that slot without asking `get_swap_page` for one.
    pub swap_cache: Vec<u64>,
}

/// What the memory manager counted over a run ([`Mm::counters`]).
#[derive(Clone, Copy, Debug)]
pub struct MmCounters {
    pub swapouts: u64,
    pub pageouts: u64,
    pub writeback_kept: u64,
    pub reclaims: u64,
    pub reclaims_to_priority_1: u64,
    pub peak_anon: u64,
    pub swap_token_grabs: u64,
}

pub struct Mm {
    total: u64,
    free: u64,
    /// Page-cache pages.
    cache: u64,
    /// Anonymous (process) pages.
    anon: u64,
    /// Zone watermarks: 2.4's ([`watermarks_24`]) unless the variant's reclaim sets its
    /// own ([`Mm::set_watermarks`]).
    pages_min: u64,
    pages_low: u64,
    pages_high: u64,
    files: Files,
    /// Files with pages in the page cache.
    files_with_pages: u64,
    /// The inactive list (what `shrink_cache` scans) and the active list, each in age order.
    inactive: List,
    active: List,
    /// Last stamp handed to a file run (inactive runs even, active runs odd).
    stamp: u64,
    /// Page-cache pages on the active list (the files' `pages.count_active()`).
    active_cache: u64,
    /// Anonymous pages on the active list, by address space, and in all.
    anon_active: per_mm::PerMm,
    active_anon: u64,
    next_file: u32,
    next_block: u64,
    mms: BTreeMap<u32, MmRec>,
    swap: Box<dyn SwapAllocator>,
    /// 2.6.9's swap token ([`thrash`]).
    token: thrash::SwapToken,
    /// Round-robin cursor of swap_out over address spaces.
    swap_cursor: u32,
    /// Pages swapped out in all.
    swapouts: u64,
    /// Dirty page-cache pages 2.6.17's reclaim handed to `pageout()`.
    pageouts: u64,
    /// PageWriteback pages 2.6.17's reclaim met and kept.
    writeback_kept: u64,
    /// 2.6.17's reclaim has moved the pages under writeback below this buffer sequence
    /// number to the inactive list's young end (kept, or just handed to pageout): they are
    /// behind the dirty pages now, so a later scan meets those first. Writes are submitted
    /// and complete in sequence order, and the scan meets them in that order too.
    writeback_scanned_to: u64,
    /// Most anonymous pages resident at once.
    peak_anon: u64,
    /// New anonymous pages join the active list (2.6's `do_anonymous_page` ->
    /// `lru_cache_add_active`); 2.4's join the inactive one, as the model has always had it.
    anon_starts_active: bool,
    /// `zone->prev_priority`: the priority the last reclaim pass reached (2.6's
    /// `refill_inactive_zone` reads its distress from it); DEF_PRIORITY before any.
    prev_priority: u64,
    /// try_to_free_pages calls.
    reclaims: u64,
    /// Of those, calls that went down to priority 1 (shrink_caches short at every priority).
    reclaims_to_priority_1: u64,
    /// Bytes of dentry and inode slab in use.
    slab_bytes: u64,
    /// Pages a truncate took out of the page cache whose dirty buffers the committing
    /// transaction still holds ("We are still using the page, but only because a
    /// transaction is pinning the page", `journal_flushpage`): off the cache, not free.
    pinned: u64,
}

/// Pages the kernel itself holds (image, mem_map, slab caches): 16 MiB, an estimate for a
/// 768 MiB 2.4 box (mem_map alone is 768 MiB / 4 KiB * 64 B = 12 MiB).
const KERNEL_PAGES: u64 = 4096;
/// First data block: after the superblock, group descriptors and the journal.
const FIRST_DATA_BLOCK: u64 = 16_384;

/// 2.4's zone watermarks [min, low, high] for a zone of `total` pages (mm/page_alloc.c,
/// 2.4.17/2.4.18): pages_min = realsize / zone_balance_ratio (128), clamped to
/// [zone_balance_min 20, zone_balance_max 255]; low = 2*min; high = 3*min.
pub fn watermarks_24(total: u64) -> [u64; 3] {
    let min = (total / 128).clamp(20, 255);
    [min, 2 * min, 3 * min]
}

/// 2.6.9's zone watermarks [min, low, high] for `lowmem` pages of low memory (mm/
/// page_alloc.c of 2.6.9, unchanged from 2.6.8 until Nick Piggin's "mm-restore-atomic-buffer"
/// of 10 Nov 2004 (linux-mm), whose removed lines are these):
///
/// ```text
/// init_per_zone_pages_min: lowmem_kbytes = nr_free_buffer_pages() * (PAGE_SIZE >> 10);
///     min_free_kbytes = int_sqrt(lowmem_kbytes), clamped to [128, 16384]
///     ("512MB: 724k" in its comment's table)
/// setup_per_zone_pages_min: pages_min = min_free_kbytes >> (PAGE_SHIFT - 10), shared
///     among the low-memory zones by size; pages_low = pages_min * 2;
///     pages_high = pages_min * 3
/// ```
///
/// At boot `nr_free_buffer_pages()` counts each zone's present pages above a pages_high
/// still 0: all of low memory. The model's one zone takes the whole share (DMA's 16 MiB
/// would hold 1/32 of it at 512 MiB). 512 MiB: 181 / 362 / 543 pages.
pub fn watermarks_269(lowmem: u64) -> [u64; 3] {
    let kbytes = lowmem * 4;
    let min_free_kbytes = oom_kill::int_sqrt(kbytes).clamp(128, 16384);
    let min = min_free_kbytes >> 2;
    [min, 2 * min, 3 * min]
}

/// 2.6.17's zone watermarks [min, low, high] for `lowmem` pages (mm/page_alloc.c of the
/// 2.6.17/2.6.18 line, read: index id 24248035265): `init_per_zone_pages_min` takes
/// min_free_kbytes = int_sqrt(lowmem_kbytes * 16), clamped to [128, 65536] ("1024MB: 4096k"
/// in its comment's table), and `setup_per_zone_pages_min` gives a low-memory zone
/// pages_min = its share of min_free_kbytes >> 2, pages_low = min + min/4, pages_high =
/// min + min/2 (that source's `tmp >> 2`, `tmp >> 1`; Nick Piggin's Nov 2004 form,
/// (min * 5) / 4 and (min * 3) / 2, gives the same for a low-memory zone). The model's one zone takes all of it, as
/// for 2.6.9; 1 GiB: 1,024 / 1,280 / 1,536 pages.
pub fn watermarks_2617(lowmem: u64) -> [u64; 3] {
    let min_free_kbytes = oom_kill::int_sqrt(lowmem * 4 * 16).clamp(128, 65536);
    let min = min_free_kbytes >> 2;
    [min, min + min / 4, min + min / 2]
}

/// One step of `refill_inactive` over `len` pages of one PG_referenced state, with `to_move`
/// pages still to move and `to_visit` still to look at: how many it looks at (a referenced
/// page is rotated, not moved).
fn refill_take(referenced: bool, len: u64, to_move: u64, to_visit: u64) -> u64 {
    let len = len.min(to_visit);
    if referenced {
        len
    } else {
        len.min(to_move)
    }
}

impl Mm {
    /// Physical pages (`totalram_pages`).
    pub fn total(&self) -> u64 {
        self.total
    }
    /// Free pages (`nr_free_pages()`).
    pub fn free(&self) -> u64 {
        self.free
    }
    /// Page-cache pages.
    pub fn cache(&self) -> u64 {
        self.cache
    }
    /// The zone's `pages_min` watermark.
    pub fn pages_min(&self) -> u64 {
        self.pages_min
    }
    /// The zone's `pages_low` watermark.
    pub fn pages_low(&self) -> u64 {
        self.pages_low
    }
    /// The zone's `pages_high` watermark.
    pub fn pages_high(&self) -> u64 {
        self.pages_high
    }
    /// Cache pages pinned by a read or write in progress (not reclaimable).
    pub fn pinned(&self) -> u64 {
        self.pinned
    }
    /// The page cache by file: each file's `address_space`.
    pub fn files(&self) -> &Files {
        &self.files
    }
    /// The page cache by file, to change a file's record.
    pub fn files_mut(&mut self) -> &mut Files {
        &mut self.files
    }
    /// Address space `id`'s counts (its `mm_struct`), if it exists.
    pub fn mm_struct_mut(&mut self, id: u32) -> Option<&mut MmRec> {
        self.mms.get_mut(&id)
    }
    /// New anonymous pages go on the active list (2.6's `lru_cache_add_active`).
    pub fn anon_starts_active(&self) -> bool {
        self.anon_starts_active
    }
    /// Set by the assembly from the reclaim it chose.
    pub fn set_anon_starts_active(&mut self, on: bool) {
        self.anon_starts_active = on;
    }
    /// The run's counters: pages swapped out, pages written by reclaim's pageout, dirty pages
    /// reclaim kept for writeback, reclaim calls, those that reached priority 1, the peak of
    /// anonymous pages, swap-token grabs.
    pub fn counters(&self) -> MmCounters {
        MmCounters {
            swapouts: self.swapouts,
            pageouts: self.pageouts,
            writeback_kept: self.writeback_kept,
            reclaims: self.reclaims,
            reclaims_to_priority_1: self.reclaims_to_priority_1,
            peak_anon: self.peak_anon,
            swap_token_grabs: self.token.grabs,
        }
    }
    pub fn new(m: &MachineProfile, swap: Box<dyn SwapAllocator>) -> Self {
        let total = m.ram_pages();
        let [min, low, high] = watermarks_24(total);
        Mm {
            total,
            free: total - KERNEL_PAGES.min(total / 2),
            cache: 0,
            anon: 0,
            pages_min: min,
            pages_low: low,
            pages_high: high,
            files: Files::default(),
            files_with_pages: 0,
            inactive: List::default(),
            active: List::default(),
            stamp: 0,
            active_cache: 0,
            anon_active: per_mm::PerMm::default(),
            active_anon: 0,
            next_file: 1,
            next_block: FIRST_DATA_BLOCK,
            mms: BTreeMap::new(),
            swap,
            token: Default::default(),
            swap_cursor: 0,
            swapouts: 0,
            pageouts: 0,
            writeback_kept: 0,
            writeback_scanned_to: 0,
            peak_anon: 0,
            anon_starts_active: false,
            prev_priority: 12,
            reclaims: 0,
            reclaims_to_priority_1: 0,
            slab_bytes: 0,
            pinned: 0,
        }
    }

    /// Create a file of `size` pages reserved on disk (blocks allocated contiguously).
    pub fn create_file(&mut self, size: u64) -> u32 {
        let id = self.next_file;
        self.next_file += 1;
        self.files.insert(
            id,
            FileRec {
                size: 0,
                pages: PageSet::default(),
                block: self.next_block,
                in_use: true,
                atime_s: None,
                mtime_s: None,
                folio_order: 0,
            },
        );
        self.next_block += size.max(1);
        id
    }

    /// A file that exists on disk but is not cached (a source tree already on disk).
    pub fn existing_file(&mut self, size: u64) -> u32 {
        let id = self.create_file(size);
        self.files.get_mut(&id).expect("just created").size = size;
        id
    }

    /// The stamp for pages of `file` in `lo..hi` going to the young end of the active or
    /// inactive list.
    fn young_run(&mut self, file: u32, lo: u64, hi: u64, active: bool) -> u64 {
        // The stamp a new run would get: the next one of the list's parity.
        let mut fresh = self.stamp + 1;
        if pagecache::is_active(fresh) != active {
            fresh += 1;
        }
        let list = if active { &mut self.active } else { &mut self.inactive };
        let s = list.young_file(file, lo, hi, fresh, &self.files);
        self.stamp = self.stamp.max(s);
        s
    }

    /// Move the pages of `file` in `ranges` (each `(lo, hi, stamp)`: the held pages there
    /// carrying that stamp, at most `max` of them) to the young end of the active or inactive
    /// list, with PG_referenced `referenced` if given.
    fn move_young(&mut self, file: u32, ranges: &[(u64, u64, u64)], active: bool, max: u64, referenced: Option<bool>) {
        let (Some(first), Some(last)) = (ranges.first(), ranges.last()) else {
            return;
        };
        let stamp = self.young_run(file, first.0, last.1, active);
        self.with_pages(file, |p| {
            for &(a, b, old) in ranges {
                p.restamp(a, b, Some(old), stamp, max, referenced);
            }
        });
    }

    /// Change `file`'s pages with `change`, keeping the counts over all files in step: pages
    /// cached (taken from or given back to the free ones), files with cached pages, cached
    /// pages on the active list. None if there is no such file.
    fn with_pages<T>(&mut self, file: u32, change: impl FnOnce(&mut PageSet) -> T) -> Option<T> {
        let f = self.files.get_mut(&file)?;
        let (count, active) = (f.pages.count(), f.pages.count_active());
        let out = change(&mut f.pages);
        let (count2, active2) = (f.pages.count(), f.pages.count_active());
        self.active_cache = self.active_cache + active2 - active;
        self.cache = self.cache + count2 - count;
        self.free = self.free + count - count2;
        match (count, count2) {
            (0, 1..) => self.files_with_pages += 1,
            (1.., 0) => self.files_with_pages -= 1,
            _ => {}
        }
        Some(out)
    }

    /// `mark_page_accessed` of the cached pages of `file` in `lo..lo+n` (a read): an inactive
    /// page with PG_referenced goes to the active list (`activate_page`, the bit cleared);
    /// any other gets PG_referenced.
    pub fn mark_accessed(&mut self, file: u32, lo: u64, n: u64) {
        let hi = lo.saturating_add(n);
        let Some(f) = self.files.get(&file) else { return };
        // Pages already active and referenced stay as they are.
        if f.pages.all(lo, hi, |t| t.referenced && pagecache::is_active(t.stamp)) {
            return;
        }
        let ranges = f.pages.tagged(lo, hi);
        let mut to_active = Vec::new();
        for (a, b, t) in ranges {
            if t.referenced && !pagecache::is_active(t.stamp) {
                to_active.push((a, b, t.stamp));
            } else if !t.referenced {
                self.with_pages(file, |p| p.set_referenced(a, b, true));
            }
        }
        self.move_young(file, &to_active, true, u64::MAX, Some(false));
    }

    /// `generic_file_write` over pages `lo..lo+n` of `file`: the pages not cached come in
    /// (as many as free memory holds; returns how many), and every page written gets
    /// PG_referenced (`SetPageReferenced`; a write does not activate). They are dirty now,
    /// and the model's page scan takes the newest inactive cache pages for the dirty ones
    /// (`ScanLimits::dirty`): those on the inactive list move to its young end.
    pub fn write_pages(&mut self, file: u32, lo: u64, n: u64) -> u64 {
        let added = self.add_tagged(file, lo, n, true);
        let hi = lo.saturating_add(n);
        let young = match self.inactive.youngest() {
            Some(Run::File { id, stamp, .. }) if id == file => Some(stamp),
            _ => None,
        };
        let Some(f) = self.files.get(&file) else { return added };
        // Most writes find their pages just added or written: nothing more to do.
        if f.pages.all(lo, hi, |t| {
            t.referenced && (pagecache::is_active(t.stamp) || Some(t.stamp) == young)
        }) {
            return added;
        }
        let inactive: Vec<(u64, u64, u64)> = f
            .pages
            .tagged(lo, hi)
            .into_iter()
            .filter(|(_, _, t)| !pagecache::is_active(t.stamp))
            .map(|(a, b, t)| (a, b, t.stamp))
            .collect();
        self.with_pages(file, |p| p.set_referenced(lo, hi, true));
        self.move_young(file, &inactive, false, u64::MAX, None);
        added
    }

    /// Anonymous pages of `mm` on the active list.
    fn active_of(&self, mm: u32) -> u64 {
        self.anon_active.get(mm)
    }

    fn count_anon_active(&mut self, mm: u32, add: u64, sub: u64) {
        let e = self.anon_active.get_mut(mm);
        *e = *e + add - sub;
        self.active_anon = self.active_anon + add - sub;
    }

    /// `n` pages of `mm` whose ptes `swap_out` found young: `mark_page_accessed` activates
    /// them (`do_anonymous_page` left them referenced).
    pub fn activate_anon(&mut self, mm: u32, n: u64) {
        self.activate(mm, n, false);
    }

    /// `n` pages of `mm` activated one by one (shrink_list's `activate_locked`, page after
    /// page): what `n` calls of `activate_anon(mm, 1)` do, computed at once.
    pub fn activate_anon_each(&mut self, mm: u32, n: u64) {
        self.activate(mm, n, true);
    }

    fn activate(&mut self, mm: u32, n: u64, each: bool) {
        let rss = self.mms.get(&mm).map_or(0, |r| r.rss);
        let m = n.min(rss.saturating_sub(self.active_of(mm)));
        if m == 0 {
            return;
        }
        let live = self.inactive_pages();
        if each {
            // Each page's activation leaves the inactive list one page shorter.
            self.inactive.forget_anon_each(mm, m, live, &self.files);
        } else {
            self.inactive.forget_anon(mm, m, live, &self.files);
        }
        self.count_anon_active(mm, m, 0);
        self.active.push_anon(mm, m, &self.files);
    }

    /// `n` anonymous pages of `mm` left the LRU (freed elsewhere; `rss` already lowered):
    /// taken off the inactive list first, the rest off the active list, lazily.
    fn forget_anon(&mut self, mm: u32, n: u64) {
        if n == 0 {
            return;
        }
        let act = self.active_of(mm);
        let rss = self.mms.get(&mm).map_or(0, |r| r.rss);
        let off_inactive = n.min((rss + n).saturating_sub(act));
        let off_active = (n - off_inactive).min(act);
        self.count_anon_active(mm, 0, off_active);
        let (live_i, live_a) = (self.inactive_pages(), self.nr_active());
        self.inactive.forget_anon(mm, off_inactive, live_i, &self.files);
        self.active.forget_anon(mm, off_active, live_a, &self.files);
    }

    /// Pages on the LRU lists (cache and anonymous).
    pub fn lru_pages(&self) -> u64 {
        self.cache + self.anon
    }

    /// The inactive list's runs, oldest first, with the pages each still holds; runs at the
    /// old end with nothing left are dropped first (as `apply_shrink`'s walk drops them), so
    /// a batch taken off the old end does not walk them again and again.
    pub fn inactive_runs(&mut self) -> impl Iterator<Item = (Run, u64)> + '_ {
        while let Some(r) = self.inactive.pop_oldest() {
            let live = match r {
                Run::File { .. } => List::file_live(&r, &self.files),
                Run::Anon { mm, n } => self.inactive.take_stale(mm, n),
            };
            if live > 0 {
                self.inactive.push_oldest(match r {
                    Run::Anon { mm, .. } => Run::Anon { mm, n: live },
                    f => f,
                });
                break;
            }
        }
        self.inactive.live_runs(&self.files)
    }

    /// Pages on the active list.
    pub fn nr_active(&self) -> u64 {
        self.active_cache + self.active_anon
    }

    /// Pages on the inactive list (what `shrink_cache`'s `max_scan` divides).
    pub fn inactive_pages(&self) -> u64 {
        self.lru_pages().saturating_sub(self.nr_active())
    }

    /// What `refill_inactive(n, mapped)` would walk: the active list's pages it looks at,
    /// oldest first, until it has moved `n` (a referenced page is only rotated, its bit
    /// cleared; a mapped one too unless `mapped`), or it has looked at every page on the
    /// list once.
    pub fn plan_refill(&self, n: u64, mapped: bool) -> u64 {
        let limit = self.nr_active();
        let (mut visited, mut moved) = (0, 0);
        for (r, live) in self.active.live_runs(&self.files) {
            if moved == n || visited == limit {
                break;
            }
            match r {
                Run::File { id, lo, hi, stamp } => {
                    let Some(f) = self.files.get(&id) else { continue };
                    for (a, b, referenced) in f.pages.live_ranges(lo, hi, stamp) {
                        let take = refill_take(referenced, b - a, n - moved, limit - visited);
                        visited += take;
                        if !referenced {
                            moved += take;
                        }
                        if moved == n || visited == limit {
                            break;
                        }
                    }
                }
                Run::Anon { .. } => {
                    let take = refill_take(!mapped, live, n - moved, limit - visited);
                    visited += take;
                    if mapped {
                        moved += take;
                    }
                }
            }
        }
        visited
    }

    /// `refill_inactive`: walk the active list's first `visit` pages, oldest first: a page
    /// with PG_referenced has it cleared and goes to the active list's young end, any other
    /// goes to the inactive list's young end with PG_referenced set, until `n` have moved.
    /// Unless `mapped` (2.6's `reclaim_mapped`), a mapped (anonymous) page goes back to the
    /// active list's young end too. Returns how many moved.
    pub fn refill_inactive(&mut self, n: u64, visit: u64, mapped: bool) -> u64 {
        let (mut visited, mut moved) = (0, 0);
        while moved < n && visited < visit {
            let Some(r) = self.active.pop_oldest() else { break };
            match r {
                Run::File { id, lo, hi, stamp } => {
                    let Some(f) = self.files.get(&id) else { continue };
                    let ranges = f.pages.live_ranges(lo, hi, stamp);
                    let mut left = false;
                    for (a, b, referenced) in ranges {
                        if moved == n || visited == visit {
                            left = true;
                            break;
                        }
                        let take = refill_take(referenced, b - a, n - moved, visit - visited);
                        // Rotated on the active list with the bit cleared, or moved to the
                        // inactive list with it set.
                        self.move_young(id, &[(a, a + take, stamp)], referenced, take, Some(!referenced));
                        visited += take;
                        if !referenced {
                            moved += take;
                        }
                        if take < b - a {
                            left = true;
                            break;
                        }
                    }
                    if left {
                        self.active.push_oldest(r);
                    }
                }
                Run::Anon { mm, n: k } => {
                    let live = self.active.take_stale(mm, k);
                    let take = refill_take(!mapped, live, n - moved, visit - visited);
                    if take < live {
                        self.active.push_oldest(Run::Anon { mm, n: live - take });
                    }
                    visited += take;
                    if !mapped {
                        // `list_add(&page->lru, &l_active)`: back to the young end.
                        self.active.push_anon(mm, take, &self.files);
                        continue;
                    }
                    self.count_anon_active(mm, 0, take);
                    self.inactive.push_anon(mm, take, &self.files);
                    moved += take;
                }
            }
        }
        moved
    }

    /// Page-cache pages on the inactive list.
    fn inactive_cache(&self) -> u64 {
        self.cache.saturating_sub(self.active_cache)
    }

    /// What a `shrink_cache` scan under `lim` would meet, without changing anything.
    pub fn plan_shrink(&self, lim: &ScanLimits) -> Scan {
        let mut cache_seen = 0;
        let mut sc = Scan::default();
        let cache = self.inactive_cache();
        for (r, live) in self.inactive.live_runs(&self.files) {
            if !Self::meet(&mut sc, &mut cache_seen, cache, lim, &r, live) {
                break;
            }
        }
        sc
    }

    /// Classify `n` live pages of run `r` met by the scan; false once the scan stops.
    fn meet(sc: &mut Scan, cache_seen: &mut u64, cache: u64, lim: &ScanLimits, r: &Run, n: u64) -> bool {
        let room = lim.max_scan - sc.scanned;
        let n = n.min(room);
        match r {
            Run::Anon { .. } => {
                let budget = lim.max_mapped + 1 - sc.mapped;
                if n >= budget {
                    sc.scanned += budget;
                    sc.mapped += budget;
                    sc.swap = true;
                    return false;
                }
                sc.scanned += n;
                sc.mapped += n;
            }
            Run::File { .. } => {
                // The newest `dirty` cache pages are the dirty ones.
                let clean_left = cache.saturating_sub(lim.dirty).saturating_sub(*cache_seen);
                let clean = n.min(clean_left);
                let take = clean.min(lim.want - sc.freed);
                if take < clean {
                    sc.scanned += take;
                    sc.freed += take;
                    *cache_seen += take;
                    return false;
                }
                sc.scanned += n;
                sc.freed += clean;
                sc.dirty += n - clean;
                *cache_seen += n;
                if sc.freed == lim.want {
                    return false;
                }
            }
        }
        sc.scanned < lim.max_scan
    }

    /// Run the scan for its first `scanned` pages: clean cache pages are freed, the rest
    /// rotate to the young end (shrink_cache's `list_add(entry, &inactive_list)`).
    /// `freed(file, n, cached)` hears of each file that lost `n` of its `cached` pages.
    pub fn apply_shrink(&mut self, lim: &ScanLimits, scanned: u64, freed: &mut dyn FnMut(u32, u64, u64)) -> Scan {
        let lim = ScanLimits {
            max_scan: scanned.min(lim.max_scan),
            ..*lim
        };
        let mut cache_seen = 0;
        let mut sc = Scan::default();
        // Pages the scan met and left on the list: they rotate to the young end.
        let mut rotated: Vec<(Run, u64)> = Vec::new();
        let cache = self.inactive_cache();
        while sc.scanned < lim.max_scan {
            let Some(r) = self.inactive.pop_oldest() else { break };
            let live = match r {
                Run::File { .. } => List::file_live(&r, &self.files),
                Run::Anon { mm, n } => self.inactive.take_stale(mm, n),
            };
            let before = sc;
            let go_on = Self::meet(&mut sc, &mut cache_seen, cache, &lim, &r, live);
            let met = sc.scanned - before.scanned;
            let gone = sc.freed - before.freed;
            match r {
                Run::File { id, lo, hi, stamp } => {
                    if gone > 0 {
                        let cached = self.files.get(&id).map_or(0, FileRec::cached);
                        self.with_pages(id, |p| p.remove_first(lo, hi, Some(stamp), gone));
                        freed(id, gone, cached);
                        if self.files.get(&id).is_some_and(|f| f.cached() == 0 && !f.in_use) {
                            sc.emptied += 1;
                        }
                    }
                    if met < live {
                        self.inactive.push_oldest(r);
                    }
                }
                Run::Anon { mm, .. } => {
                    if met < live {
                        self.inactive.push_oldest(Run::Anon { mm, n: live - met });
                    }
                }
            }
            if met > gone {
                rotated.push((r, met - gone));
            }
            if !go_on {
                break;
            }
        }
        for (r, n) in rotated {
            match r {
                Run::File { id, lo, hi, stamp } => self.move_young(id, &[(lo, hi, stamp)], false, n, None),
                Run::Anon { mm, .. } => self.inactive.push_anon(mm, n, &self.files),
            }
        }
        sc
    }

    /// `nr_free_buffer_pages()`: low memory above the high watermark
    /// ([`crate::fs::state::FsState::buffer_pages`]).
    pub fn buffer_pages(&self) -> u64 {
        self.total.saturating_sub(self.pages_high)
    }

    /// The variant's reclaim keeps its own watermarks [min, low, high].
    pub fn set_watermarks(&mut self, [min, low, high]: [u64; 3]) {
        self.pages_min = min;
        self.pages_low = low;
        self.pages_high = high;
    }

    /// Can `n` pages be allocated without reclaim (above pages_min)?
    pub fn can_alloc(&self, n: u64) -> bool {
        self.free >= n + self.pages_min
    }

    /// Below pages_low: kswapd should run.
    pub fn low(&self) -> bool {
        self.free < self.pages_low
    }

    /// Pages `lo..lo+n` of `file` that are not cached come into the page cache, as many
    /// as free memory holds, lowest first, at the young end (`add_to_page_cache` ->
    /// `lru_cache_add`). Returns how many did.
    pub fn add_pages(&mut self, file: u32, lo: u64, n: u64) -> u64 {
        self.add_tagged(file, lo, n, false)
    }

    /// [`Self::add_pages`] with the new pages' PG_referenced `referenced`.
    fn add_tagged(&mut self, file: u32, lo: u64, n: u64, referenced: bool) -> u64 {
        let max = n.min(self.free);
        if max == 0 || !self.files.contains_key(&file) {
            return 0;
        }
        let hi = lo.saturating_add(n);
        let stamp = self.young_run(file, lo, hi, false);
        self.with_pages(file, |p| p.add_missing(lo, hi, stamp, max, referenced))
            .unwrap_or(0)
    }

    /// The first `n` cached pages of `file` at page `from` and above were truncated away
    /// (the walk is paid by the path). Returns how many went.
    pub fn drop_pages_from(&mut self, file: u32, from: u64, n: u64) -> u64 {
        self.with_pages(file, |p| p.remove_first(from, u64::MAX, None, n))
            .unwrap_or(0)
    }

    /// Cached pages of `file` at page `from` and above.
    pub fn cached_from(&self, file: u32, from: u64) -> u64 {
        self.files.get(&file).map_or(0, |f| f.pages.count_from(from))
    }

    /// How many pages of `file` from `from` on are cached without a gap.
    pub fn cached_run(&self, file: u32, from: u64) -> u64 {
        self.files.get(&file).map_or(0, |f| f.pages.run_from(from))
    }

    /// How many pages of `file` from `from` on are not cached, up to `limit`.
    pub fn uncached_run(&self, file: u32, from: u64, limit: u64) -> u64 {
        self.files.get(&file).map_or(0, |f| f.pages.gap_from(from, limit))
    }

    /// Share of `cached_inodes` inodes that still have page-cache pages, in 1/1024: files
    /// with cached pages over all inodes the caches hold.
    pub fn cached_share(&self, cached_inodes: u64) -> u64 {
        if cached_inodes == 0 {
            return 0;
        }
        let with = self.files_with_pages;
        (with * 1024 / cached_inodes).min(1024)
    }

    /// Remove a file: its cached pages are freed (the truncate walk has been paid by the path).
    pub fn delete_file(&mut self, file: u32) {
        self.drop_pages_from(file, 0, u64::MAX);
        self.files.remove(&file);
    }

    /// `n` pages just freed by a truncate stay held by the committing transaction's buffers.
    pub fn pin(&mut self, n: u64) {
        let n = n.min(self.free);
        self.free -= n;
        self.pinned += n;
    }

    /// The commit that pinned them is done: the pages, without a mapping, their buffers
    /// clean and their referenced bit cleared (`journal_flushpage`), are clean pages on the
    /// inactive list that reclaim frees when its scan reaches them. The model gives them a
    /// record of their own at the list's young end (it has no inode: kept "in use", so no
    /// unused inode is counted when reclaim empties it).
    pub fn unpin_all(&mut self) {
        let n = std::mem::take(&mut self.pinned);
        self.free += n;
        if n > 0 {
            let f = self.existing_file(n);
            self.add_pages(f, 0, n);
        }
    }

    /// Slab memory (dentries, inodes) taken from free pages.
    pub fn take_slab(&mut self, bytes: u64) {
        let pages = (self.slab_bytes + bytes) / 4096 - self.slab_bytes / 4096;
        self.slab_bytes += bytes;
        self.free -= pages.min(self.free);
    }

    /// Slab objects freed: their pages go back (objects packed, no fragmentation modelled).
    /// Returns the pages freed.
    pub fn free_slab(&mut self, bytes: u64) -> u64 {
        let bytes = bytes.min(self.slab_bytes);
        let pages = self.slab_bytes / 4096 - (self.slab_bytes - bytes) / 4096;
        self.slab_bytes -= bytes;
        self.free += pages;
        pages
    }

    /// A process touched `n` new anonymous pages.
    pub fn grow(&mut self, mm: u32, n: u64) -> u64 {
        let take = n.min(self.free.saturating_sub(self.pages_min));
        self.free -= take;
        self.anon += take;
        self.peak_anon = self.peak_anon.max(self.anon);
        let r = self.mms.entry(mm).or_default();
        r.rss += take;
        r.young += take;
        if self.anon_starts_active {
            self.count_anon_active(mm, take, 0);
            self.active.push_anon(mm, take, &self.files);
        } else {
            self.inactive.push_anon(mm, take, &self.files);
        }
        take
    }

    /// A process referenced its whole working set again (pte young bits set).
    pub fn reference(&mut self, mm: u32) {
        if let Some(r) = self.mms.get_mut(&mm) {
            r.young = r.rss;
        }
    }

    /// exit_mmap finished: pages and swap slots of `mm` are freed.
    pub fn drop_mm(&mut self, mm: u32) {
        self.unmap(mm, u64::MAX);
        if let Some(r) = self.mms.remove(&mm) {
            self.free_slots(r.swapped);
            self.free_slots(r.swap_cache);
        }
    }

    /// `vm_swap_full()` (2.6.9 include/linux/swap.h): more than half the swap area in use.
    pub fn vm_swap_full(&self) -> bool {
        self.swap.used() * 2 > self.swap.slots()
    }

    /// Swap fill in percent (0-100).
    pub fn swap_fill_pct(&self) -> u64 {
        self.swap.used() * 100 / self.swap.slots().max(1)
    }

    /// shrink_list's swap-out of one old anonymous page of `mm` (2.6.9): a page still in
    /// the swap cache goes back to its slot; any other asks `get_swap_page` for one
    /// (`add_to_swap`). Then it is unmapped and freed (its write is the caller's).
    /// Returns the slot and the allocator's work (none for a swap-cache page), or None when
    /// swap is full (add_to_swap fails: the page is activated).
    pub fn swap_out_26(&mut self, mm: u32) -> Option<(u64, latlab_swap::Work)> {
        let r = self.mms.get_mut(&mm)?;
        let (slot, work) = match r.swap_cache.pop() {
            Some(slot) => {
                r.swapped.push(slot);
                (slot, latlab_swap::Work::default())
            }
            None => self.take_slot(mm)?,
        };
        self.unmap(mm, 1);
        self.swapouts += 1;
        Some((slot, work))
    }

    /// do_swap_page brought `n` swapped pages of `mm` back (the caller has checked they fit
    /// above pages_min): resident and referenced again; each slot is freed if swap is more
    /// than half full (`remove_exclusive_swap_page`), else kept in the swap cache. Returns the
    /// pages brought in.
    pub fn swap_in(&mut self, mm: u32, n: u64) -> u64 {
        let full = self.vm_swap_full();
        let room = self.free.saturating_sub(self.pages_min);
        let Some(r) = self.mms.get_mut(&mm) else { return 0 };
        let k = (n.min(room) as usize).min(r.swapped.len());
        let at = r.swapped.len() - k;
        let slots: Vec<u64> = r.swapped.drain(at..).collect();
        if full {
            self.free_slots(slots);
        } else {
            r.swap_cache.extend(slots);
        }
        self.grow(mm, k as u64)
    }

    /// Swap slots given back (swap_entry_free).
    fn free_slots(&mut self, slots: impl IntoIterator<Item = u64>) {
        for s in slots {
            // A slot we handed out ourselves cannot be unknown to the allocator.
            let _ = self.swap.free(s);
        }
    }

    /// zap_page_range went through `n` PTEs of `mm`, resident and swapped in proportion
    /// (the walk is paid by the path): pages and swap slots are freed. Returns the PTEs left.
    pub fn zap(&mut self, mm: u32, n: u64) -> u64 {
        let Some(r) = self.mms.get_mut(&mm) else { return 0 };
        let (rss, sw) = (r.rss, r.swapped.len() as u64);
        let slots = (n * sw).checked_div(rss + sw).unwrap_or(0);
        let gone: Vec<u64> = r.swapped.drain(..slots as usize).collect();
        self.free_slots(gone);
        self.unmap(mm, n - slots) + sw - slots
    }

    /// zap_page_range freed `n` resident pages of `mm` (the walk is paid by the path).
    /// Returns the resident pages left.
    pub fn unmap(&mut self, mm: u32, n: u64) -> u64 {
        let Some(r) = self.mms.get_mut(&mm) else { return 0 };
        let d = n.min(r.rss);
        r.rss -= d;
        r.young = r.young.min(r.rss);
        self.anon -= d.min(self.anon);
        self.free += d;
        let left = r.rss;
        self.forget_anon(mm, d);
        left
    }

    /// try_to_swap_out of one old page of `mm`: allocate a slot (get_swap_page). Returns the
    /// allocator's longest locked stretch and total work, or None when swap is full.
    pub fn swap_out_page(&mut self, mm: u32) -> Option<latlab_swap::Work> {
        let (_, work) = self.take_slot(mm)?;
        self.unmap(mm, 1);
        self.swapouts += 1;
        Some(work)
    }

    /// A page of `mm` that was swapped out before the run began (not resident): its slot.
    /// Creates the address space if needed. None when swap is full.
    pub fn swapped_out(&mut self, mm: u32) -> Option<u64> {
        self.mms.entry(mm).or_default();
        self.take_slot(mm).map(|(slot, _)| slot)
    }

    /// get_swap_page for the next page of `mm` (which must exist): the slot and the
    /// allocator's work.
    fn take_slot(&mut self, mm: u32) -> Option<(u64, latlab_swap::Work)> {
        let r = self.mms.get_mut(&mm)?;
        let vpage = r.swapped.len() as u64;
        let a = self
            .swap
            .alloc(&AllocRequest {
                owner: mm as u64,
                vpage,
                cpu: 0,
            })
            .ok()?;
        let slot = a.slot?;
        r.swapped.push(slot);
        Some((slot, a.work))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watermarks_of_2_6_follow_min_free_kbytes_and_2_4_keeps_its_own() {
        // 512 MiB: int_sqrt(524288 KiB) = 724 KiB ("512MB: 724k") = 181 pages.
        assert_eq!(watermarks_269(131_072), [181, 362, 543]);
        // The comment's table: 16MB: 128k, 1024MB: 1024k; the floor of 128 KiB below.
        assert_eq!(watermarks_269(4_096)[0], 32);
        assert_eq!(watermarks_269(262_144)[0], 256);
        assert_eq!(watermarks_269(1_024)[0], 32);
        // 2.6.17's table ("16MB: 512k", "1024MB: 4096k"), low and high at 5/4 and 3/2 of min.
        assert_eq!(watermarks_2617(262_144), [1024, 1280, 1536]);
        assert_eq!(watermarks_2617(4_096)[0], 128);
        assert_eq!(watermarks_24(131_072), [255, 510, 765]);
    }

    fn mm() -> Mm {
        let m = crate::cpu::tests::machine();
        Mm::new(&m, latlab_swap::by_name("scan-2.4", m.swap_slots()).expect("allocator"))
    }

    fn limits(want: u64, max_scan: u64, max_mapped: u64, dirty: u64) -> ScanLimits {
        ScanLimits {
            want,
            max_scan,
            max_mapped,
            dirty,
        }
    }

    #[test]
    fn anonymous_pages_at_the_tail_send_shrink_cache_to_swap_out() {
        let mut m = mm();
        m.grow(7, 2000);
        let f = m.create_file(5000);
        m.add_pages(f, 0, 5000);
        let sc = m.plan_shrink(&limits(32, 10_000, 512, 0));
        assert_eq!(
            sc,
            Scan {
                scanned: 513,
                mapped: 513,
                swap: true,
                ..Scan::default()
            }
        );
        // The pages met rotate to the young end: the next scan meets the rest first.
        m.apply_shrink(&limits(32, 10_000, 512, 0), sc.scanned, &mut |_, _, _| {});
        let sc = m.plan_shrink(&limits(32, 10_000, 2000, 0));
        assert_eq!((sc.mapped, sc.freed, sc.swap), (2000 - 513, 32, false));
    }

    #[test]
    fn clean_cache_at_the_tail_is_freed_and_dirty_cache_is_the_newest() {
        let mut m = mm();
        let f = m.create_file(100);
        m.add_pages(f, 0, 100);
        let free = m.free;
        // 60 of the 100 pages are dirty: the newest ones.
        let lim = limits(50, 1000, 512, 60);
        assert_eq!(
            m.plan_shrink(&lim),
            Scan {
                scanned: 100,
                freed: 40,
                dirty: 60,
                ..Scan::default()
            }
        );
        let sc = m.apply_shrink(&lim, 100, &mut |_, _, _| {});
        assert_eq!((sc.freed, m.free - free, m.cache), (40, 40, 60));
        assert_eq!(m.files[&f].cached(), 60);
    }

    #[test]
    fn pages_that_left_are_never_met_again() {
        let mut m = mm();
        let f = m.create_file(300);
        m.add_pages(f, 0, 300);
        m.grow(3, 100);
        let g = m.create_file(50);
        m.add_pages(g, 0, 50);
        m.delete_file(f);
        m.unmap(3, 40);
        let sc = m.plan_shrink(&limits(1000, 10_000, 10_000, 0));
        assert_eq!((sc.scanned, sc.mapped, sc.freed), (110, 60, 50));
        m.drop_mm(3);
        let sc = m.apply_shrink(&limits(1000, 10_000, 10_000, 0), 10_000, &mut |_, _, _| {});
        assert_eq!((sc.scanned, sc.freed, sc.emptied), (50, 50, 0));
        assert_eq!((m.cache, m.anon), (0, 0));
    }

    #[test]
    fn exit_frees_swapped_entries_with_the_resident_pages() {
        let mut m = mm();
        m.grow(5, 300);
        m.reference(5);
        m.mms.get_mut(&5).expect("mm").young = 0;
        for _ in 0..100 {
            m.swap_out_page(5).expect("a free slot");
        }
        let used = m.swap.used();
        // 200 resident + 100 swapped PTEs; half the walk frees 100 pages and 50 slots.
        assert_eq!(m.zap(5, 150), 150);
        assert_eq!((m.mms[&5].rss, m.mms[&5].swapped.len()), (100, 50));
        assert_eq!(m.swap.used(), used - 50);
        assert_eq!(m.zap(5, 150), 0);
        assert_eq!((m.anon, m.swap.used()), (0, used - 100));
    }

    #[test]
    fn on_2_6_a_new_anonymous_page_is_active_and_stays_there_unless_reclaim_takes_mapped_pages() {
        let mut m = mm();
        m.anon_starts_active = true;
        m.grow(3, 40);
        let f = m.create_file(20);
        m.add_pages(f, 0, 20);
        m.mark_accessed(f, 0, 20);
        m.mark_accessed(f, 0, 20);
        assert_eq!(m.nr_active(), 60);
        // reclaim_mapped off: the anonymous pages go round to the active list's young end;
        // only the page cache moves.
        let visit = m.plan_refill(60, false);
        assert_eq!(m.refill_inactive(60, visit, false), 20);
        assert_eq!((m.nr_active(), m.active_of(3)), (40, 40));
        // reclaim_mapped on: they move too.
        let visit = m.plan_refill(60, true);
        assert_eq!(m.refill_inactive(60, visit, true), 40);
        assert_eq!(m.nr_active(), 0);
        // 2.4's model: a new anonymous page joins the inactive list.
        let mut m = mm();
        m.grow(3, 40);
        assert_eq!(m.nr_active(), 0);
    }

    #[test]
    fn a_page_read_again_goes_active_and_refill_brings_back_the_unreferenced() {
        let mut m = mm();
        let f = m.create_file(100);
        m.add_pages(f, 0, 100);
        m.grow(3, 50);
        // The first read only sets PG_referenced; the second activates what it read.
        m.mark_accessed(f, 0, 100);
        assert_eq!(m.nr_active(), 0);
        m.mark_accessed(f, 0, 60);
        assert_eq!((m.nr_active(), m.inactive_pages()), (60, 90));
        // shrink_cache meets only the inactive list: 40 cache pages, then the anonymous ones.
        let sc = m.plan_shrink(&limits(1000, 10_000, 10_000, 0));
        assert_eq!((sc.freed, sc.mapped), (40, 50));
        // refill_inactive moves the oldest active pages (0..25) back, PG_referenced set.
        assert_eq!(m.plan_refill(25, true), 25);
        assert_eq!(m.refill_inactive(25, 25, true), 25);
        assert_eq!((m.nr_active(), m.inactive_pages()), (35, 115));
        // Pages 30..40, still active, are read again: referenced. The next refill of 10
        // moves 25..30, rotates 30..40 (clearing the bit) and moves 40..45.
        m.mark_accessed(f, 30, 10);
        assert_eq!(m.plan_refill(10, true), 20);
        assert_eq!(m.refill_inactive(10, 20, true), 10);
        assert_eq!(m.nr_active(), 25);
        let back: Vec<(u64, u64, bool)> = m.files[&f]
            .pages
            .tagged(25, 45)
            .into_iter()
            .map(|(a, b, t)| (a, b, pagecache::is_active(t.stamp)))
            .collect();
        assert_eq!(back, vec![(25, 30, false), (30, 40, true), (40, 45, false)]);
        // swap_out finding young ptes activates anonymous pages.
        m.activate_anon(3, 20);
        assert_eq!(m.nr_active(), 45);
        assert_eq!(m.plan_shrink(&limits(1000, 10_000, 10_000, 0)).mapped, 30);
    }

    #[test]
    fn the_lists_always_hold_exactly_the_live_pages() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let mut m = mm();
        let free0 = m.free;
        let mut files = Vec::new();
        for step in 0..6000 {
            match rng.gen_range(0..12) {
                11 => {
                    // A truncate's pages held by a commit, and the commit's end.
                    if rng.gen_bool(0.5) {
                        m.pin(rng.gen_range(0..50));
                    } else {
                        m.unpin_all();
                    }
                }
                0 => {
                    let f = m.create_file(64);
                    m.add_pages(f, 0, rng.gen_range(1..64));
                    files.push(f);
                }
                6 if !files.is_empty() => {
                    let f = files[rng.gen_range(0..files.len())];
                    let from = rng.gen_range(0..64);
                    if rng.gen_bool(0.5) {
                        m.add_pages(f, from, rng.gen_range(1..64));
                    } else {
                        m.drop_pages_from(f, from, rng.gen_range(1..64));
                    }
                }
                1 => {
                    m.grow(rng.gen_range(1..5), rng.gen_range(1..200));
                }
                2 if !files.is_empty() => {
                    let f = files.swap_remove(rng.gen_range(0..files.len()));
                    m.delete_file(f);
                }
                3 => {
                    m.unmap(rng.gen_range(1..5), rng.gen_range(1..100));
                }
                4 if !files.is_empty() => m.mark_accessed(
                    files[rng.gen_range(0..files.len())],
                    rng.gen_range(0..64),
                    rng.gen_range(1..64),
                ),
                7 if !files.is_empty() => {
                    m.write_pages(
                        files[rng.gen_range(0..files.len())],
                        rng.gen_range(0..64),
                        rng.gen_range(1..64),
                    );
                }
                8 => m.activate_anon(rng.gen_range(1..5), rng.gen_range(1..100)),
                9 => {
                    let n = rng.gen_range(1..300);
                    let mapped = rng.gen_bool(0.5);
                    let visit = m.plan_refill(n, mapped);
                    assert!(m.refill_inactive(n, visit, mapped) <= n);
                }
                5 => m.drop_mm(rng.gen_range(1..5)),
                _ => {
                    let lim = limits(32, rng.gen_range(1..2000), rng.gen_range(0..600), 0);
                    let n = m.plan_shrink(&lim).scanned;
                    m.apply_shrink(&lim, n, &mut |_, _, _| {});
                }
            }
            // The inactive list holds every page not counted active, the active list the rest.
            let everything = limits(u64::MAX / 2, u64::MAX / 2, u64::MAX / 2, 0);
            let sc = m.plan_shrink(&everything);
            assert_eq!(
                (sc.freed, sc.mapped),
                (m.cache - m.active_cache, m.anon - m.active_anon),
                "step {step}"
            );
            let on_active: u64 = m.active.live_runs(&m.files).map(|(_, n)| n).sum();
            assert_eq!(on_active, m.nr_active(), "step {step}");
            let active_cache: u64 = m.files.values().map(|f| f.pages.count_active()).sum();
            assert_eq!(active_cache, m.active_cache, "step {step}");
            let cached: u64 = m.files.values().map(FileRec::cached).sum();
            assert_eq!(cached, m.cache);
            let with = m.files.values().filter(|f| f.cached() > 0).count() as u64;
            assert_eq!(with, m.files_with_pages, "step {step}");
            assert_eq!(m.free + m.cache + m.anon + m.slab_bytes / 4096 + m.pinned, free0);
        }
    }
}
