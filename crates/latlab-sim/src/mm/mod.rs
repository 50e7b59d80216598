//! Memory: free pages, the page cache by file, process address spaces, swap
//! (mm/page_alloc.c, mm/filemap.c, mm/vmscan.c, mm/swapfile.c of 2.4.17/2.4.18).
//!
//! Only as much VM as the seeds' loops need: how many pages are free (whether an allocation
//! must reclaim, whether kswapd runs), which files still have cached pages (what
//! `prune_icache` skips, what `truncate_inode_pages` walks), each address space's resident
//! and recently referenced pages (what `swap_out_mm` scans, what `exit_mmap` zaps), and the
//! swap map (what `scan_swap_map` searches, through the `latlab-swap` allocators).

pub mod vmscan;

use crate::machine::MachineProfile;
use latlab_swap::{AllocRequest, SwapAllocator};
use std::collections::{BTreeMap, VecDeque};

/// A file's page-cache and on-disk state.
#[derive(Clone, Debug, Default)]
pub struct FileRec {
    /// Size in pages.
    pub size: u64,
    /// Pages in the page cache.
    pub cached: u64,
    /// First disk block (files are laid out contiguously in creation order).
    pub block: u64,
    /// Open or in use (inode not on the unused list).
    pub in_use: bool,
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
}

pub struct Mm {
    pub total: u64,
    pub free: u64,
    /// Page-cache pages.
    pub cache: u64,
    /// Anonymous (process) pages.
    pub anon: u64,
    /// Zone watermarks (2.4 `zone_balance_ratio` 128, clamped to [20, 255]).
    pub pages_min: u64,
    pub pages_low: u64,
    pub pages_high: u64,
    pub files: BTreeMap<u32, FileRec>,
    /// Files in order of last use, oldest first (lazily deduplicated).
    lru: VecDeque<u32>,
    next_file: u32,
    next_block: u64,
    pub mms: BTreeMap<u32, MmRec>,
    pub swap: Box<dyn SwapAllocator>,
    /// Round-robin cursor of swap_out over address spaces.
    pub swap_cursor: u32,
    /// Pages swapped out in all.
    pub swapouts: u64,
    /// Most anonymous pages resident at once.
    pub peak_anon: u64,
    /// try_to_free_pages calls.
    pub reclaims: u64,
    /// Bytes of dentry and inode slab in use.
    pub slab_bytes: u64,
}

/// Pages the kernel itself holds (image, mem_map, slab caches): 16 MiB, an estimate for a
/// 768 MiB 2.4 box (mem_map alone is 768 MiB / 4 KiB * 64 B = 12 MiB).
const KERNEL_PAGES: u64 = 4096;
/// First data block: after the superblock, group descriptors and the journal.
const FIRST_DATA_BLOCK: u64 = 16_384;

impl Mm {
    pub fn new(m: &MachineProfile, swap: Box<dyn SwapAllocator>) -> Self {
        let total = m.ram_pages();
        // mm/page_alloc.c (2.4): pages_min = realsize / zone_balance_ratio, clamped to
        // [zone_balance_min 20, zone_balance_max 255]; low = 2*min; high = 3*min.
        let min = (total / 128).clamp(20, 255);
        Mm {
            total,
            free: total - KERNEL_PAGES.min(total / 2),
            cache: 0,
            anon: 0,
            pages_min: min,
            pages_low: 2 * min,
            pages_high: 3 * min,
            files: BTreeMap::new(),
            lru: VecDeque::new(),
            next_file: 1,
            next_block: FIRST_DATA_BLOCK,
            mms: BTreeMap::new(),
            swap,
            swap_cursor: 0,
            swapouts: 0,
            peak_anon: 0,
            reclaims: 0,
            slab_bytes: 0,
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
                cached: 0,
                block: self.next_block,
                in_use: true,
            },
        );
        self.next_block += size.max(1);
        self.lru.push_back(id);
        id
    }

    /// A file that exists on disk but is not cached (a source tree already on disk).
    pub fn existing_file(&mut self, size: u64) -> u32 {
        let id = self.create_file(size);
        self.files.get_mut(&id).expect("just created").size = size;
        id
    }

    pub fn touch(&mut self, file: u32) {
        self.lru.push_back(file);
        if self.lru.len() > 4 * self.files.len() + 64 {
            let files = &self.files;
            let mut seen = std::collections::BTreeSet::new();
            let mut v: Vec<u32> = self
                .lru
                .iter()
                .rev()
                .copied()
                .filter(|f| files.contains_key(f) && seen.insert(*f))
                .collect();
            v.reverse();
            self.lru = v.into();
        }
    }

    /// Can `n` pages be allocated without reclaim (above pages_min)?
    pub fn can_alloc(&self, n: u64) -> bool {
        self.free >= n + self.pages_min
    }

    /// Below pages_low: kswapd should run.
    pub fn low(&self) -> bool {
        self.free < self.pages_low
    }

    pub fn add_cache(&mut self, file: u32, n: u64) {
        let take = n.min(self.free);
        self.free -= take;
        self.cache += take;
        if let Some(f) = self.files.get_mut(&file) {
            f.cached += take;
        }
    }

    /// Pages the inactive list could give back now: clean, unmapped cache pages.
    pub fn reclaimable(&self, dirty_or_locked: u64) -> u64 {
        self.cache.saturating_sub(dirty_or_locked)
    }

    /// shrink_cache freed `n` clean cache pages from the least recently used files.
    /// Returns how many files lost their last cached page.
    pub fn free_cache(&mut self, mut n: u64) -> u64 {
        let mut emptied = 0;
        while n > 0 {
            let Some(&id) = self.lru.front() else { break };
            let Some(f) = self.files.get_mut(&id) else {
                self.lru.pop_front();
                continue;
            };
            let take = f.cached.min(n);
            f.cached -= take;
            self.cache -= take;
            self.free += take;
            n -= take;
            if f.cached == 0 {
                self.lru.pop_front();
                if !f.in_use {
                    emptied += 1;
                }
            }
        }
        emptied
    }

    /// Share of `cached_inodes` inodes that still have page-cache pages, in 1/1024: files
    /// with cached pages over all inodes the caches hold.
    pub fn cached_share(&self, cached_inodes: u64) -> u64 {
        if cached_inodes == 0 {
            return 0;
        }
        let with = self.files.values().filter(|f| f.cached > 0).count() as u64;
        (with * 1024 / cached_inodes).min(1024)
    }

    /// Remove a file: its cached pages are freed (the truncate walk has been paid by the path).
    pub fn delete_file(&mut self, file: u32) -> Option<FileRec> {
        let f = self.files.remove(&file)?;
        self.cache -= f.cached.min(self.cache);
        self.free += f.cached;
        Some(f)
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
        if let Some(r) = self.mms.remove(&mm) {
            self.anon -= r.rss.min(self.anon);
            self.free += r.rss;
            for s in r.swapped {
                // A slot we handed out ourselves cannot be unknown to the allocator.
                let _ = self.swap.free(s);
            }
        }
    }

    /// try_to_swap_out of one old page of `mm`: allocate a slot (get_swap_page). Returns the
    /// allocator's longest locked stretch and total work, or None when swap is full.
    pub fn swap_out_page(&mut self, mm: u32) -> Option<latlab_swap::Work> {
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
        r.rss -= 1;
        self.anon -= 1;
        self.free += 1;
        self.swapouts += 1;
        Some(a.work)
    }
}
