//! The byte-per-slot `swap_map` shared by the scan-based allocators (2.4, Morton's
//! chunks, 2.6.14, and the 6.x clusters), with the scans the kernel does over it.
//!
//! The scans return exactly how many entries the kernel's byte-at-a-time loops would
//! read; they use a SIMD byte search (`memchr`) only to run faster, which changes the
//! wall time but not the count.

use crate::meter::Meter;
use crate::{corrupt, SwapError, Work};

/// A free entry.
const FREE: u8 = 0;
/// An entry in use (the kernel stores a use count; the model's counts are 0 or 1).
const USED: u8 = 1;

#[derive(Debug, Clone)]
pub(crate) struct SwapMap {
    map: Vec<u8>,
}

impl SwapMap {
    /// `len` free entries, written out as swapon's setup does (not left as lazily mapped
    /// zero pages, whose first-touch faults would land in the measured allocations).
    pub(crate) fn new(len: u64) -> Self {
        let mut map = Vec::with_capacity(len as usize);
        map.resize(len as usize, FREE);
        Self { map }
    }

    pub(crate) fn len(&self) -> u64 {
        self.map.len() as u64
    }

    pub(crate) fn is_used(&self, i: u64) -> bool {
        self.map[i as usize] != FREE
    }

    pub(crate) fn set_used(&mut self, i: u64) {
        debug_assert!(!self.is_used(i));
        self.map[i as usize] = USED;
    }

    pub(crate) fn set_free(&mut self, i: u64) {
        debug_assert!(self.is_used(i));
        self.map[i as usize] = FREE;
    }

    /// Entries in use in `[from, to)`.
    pub(crate) fn count_used(&self, from: u64, to: u64) -> u64 {
        self.map[from as usize..to as usize]
            .iter()
            .filter(|&&b| b != FREE)
            .count() as u64
    }

    /// The kernel's `for (o = from; o < to; o++) if (!swap_map[o]) break;`: the first free
    /// entry in `[from, to)` and how many entries were read to find it (or to give up).
    pub(crate) fn find_free(&self, from: u64, to: u64) -> (Option<u64>, u64) {
        if from >= to {
            return (None, 0);
        }
        let hay = &self.map[from as usize..to as usize];
        match memchr::memchr(FREE, hay) {
            Some(i) => (Some(from + i as u64), i as u64 + 1),
            None => (None, hay.len() as u64),
        }
    }

    /// The search for an empty (even not aligned) cluster that 2.4, 2.6.9 and 2.6.14 share:
    /// starting at `from`, look for `len` consecutive free entries ending at or before
    /// `highest`, restarting just past every used entry met (and giving up once a run
    /// starting there could no longer fit). Every entry is read at most once, in order, so
    /// this is the kernel's loop itself. Returns the start of the run and the entries read.
    pub(crate) fn find_free_run(&self, from: u64, highest: u64, len: u64) -> (Option<u64>, u64) {
        // The kernel reads the candidate run entry by entry and restarts just past the first
        // used one: the same reads, the used entry found by a byte search (every entry is
        // FREE or USED).
        let mut start = from;
        loop {
            let end = start + len;
            if end - 1 > highest {
                return (None, start - from);
            }
            match memchr::memchr(USED, &self.map[start as usize..end as usize]) {
                None => return (Some(start), end - from),
                Some(i) => start += i as u64 + 1,
            }
        }
    }
}

/// `lowest_bit` / `highest_bit`: every free slot lies in `[lowest, highest]`. When the
/// device is full the kernel parks them at `(max, 0)`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bounds {
    pub(crate) lowest: u64,
    pub(crate) highest: u64,
    max: u64,
}

impl Bounds {
    pub(crate) fn new(slots: u64) -> Self {
        Self {
            lowest: 0,
            highest: slots - 1,
            max: slots,
        }
    }

    /// After handing out `offset`: `if (offset == lowest_bit) lowest_bit++; if (offset ==
    /// highest_bit) highest_bit--;` and park the bounds once nothing is free.
    pub(crate) fn on_alloc(&mut self, offset: u64, now_full: bool) {
        if now_full {
            self.lowest = self.max;
            self.highest = 0;
            return;
        }
        if offset == self.lowest {
            self.lowest += 1;
        }
        if offset == self.highest {
            self.highest = self.highest.saturating_sub(1);
        }
    }

    /// `swap_entry_free`: widen the bounds to cover the freed slot.
    pub(crate) fn on_free(&mut self, offset: u64) {
        self.lowest = self.lowest.min(offset);
        self.highest = self.highest.max(offset);
    }

    /// The invariant, checked against the map.
    pub(crate) fn check(&self, map: &SwapMap, used: u64) -> Result<(), String> {
        if used == map.len() {
            return Ok(());
        }
        if self.lowest > self.highest || self.highest >= self.max {
            return Err(format!(
                "bounds [{}, {}] with {} free slots",
                self.lowest,
                self.highest,
                map.len() - used
            ));
        }
        let outside = self.lowest - map.count_used(0, self.lowest) + (self.max - 1 - self.highest)
            - map.count_used(self.highest + 1, self.max);
        if outside != 0 {
            return Err(format!(
                "{outside} free slots outside lowest_bit {} .. highest_bit {}",
                self.lowest, self.highest
            ));
        }
        Ok(())
    }
}

/// 2.4's `get_swap_page()` around a device search: `swap_list_lock`, then, unless the device
/// is `full`, `swap_device_lock` held for `search`.
pub(crate) fn get_swap_page_24<A>(
    a: &mut A,
    full: bool,
    search: impl FnOnce(&mut A, &mut Meter) -> Option<u64>,
) -> crate::Alloc {
    let mut m = Meter::default();
    m.lock(); // swap_list_lock
    let mut slot = None;
    if !full {
        m.lock(); // swap_device_lock
        slot = search(a, &mut m);
        m.unlock();
    }
    m.unlock();
    crate::Alloc { slot, work: m.finish() }
}

/// The `slots`, `used`, `free`, `is_allocated` and `check_invariants` of a `SwapAllocator`
/// whose state is a [`SwapInfo`] in `self.si`; `$locks` is how many nested locks its
/// `swap_free` takes.
macro_rules! swap_info_methods {
    ($locks:expr) => {
        fn slots(&self) -> u64 {
            self.si.pages()
        }

        fn used(&self) -> u64 {
            self.si.inuse
        }

        fn free(&mut self, slot: u64) -> Result<Work, SwapError> {
            crate::check_free(self, slot)?;
            Ok(self.si.swap_free(slot, $locks))
        }

        fn is_allocated(&self, slot: u64) -> bool {
            self.si.is_allocated(slot)
        }

        fn check_invariants(&self) -> Result<(), SwapError> {
            self.si.check(self.name())
        }
    };
}
pub(crate) use swap_info_methods;

/// The parts of `struct swap_info_struct` the scan-based allocators share: the map,
/// `inuse_pages`, `lowest_bit`/`highest_bit`, and the `cluster_next`/`cluster_nr` cursor.
#[derive(Debug, Clone)]
pub(crate) struct SwapInfo {
    pub(crate) map: SwapMap,
    pub(crate) bounds: Bounds,
    pub(crate) inuse: u64,
    pub(crate) cluster_next: u64,
    pub(crate) cluster_nr: u64,
}

impl SwapInfo {
    pub(crate) fn new(slots: u64) -> Self {
        Self {
            map: SwapMap::new(slots),
            bounds: Bounds::new(slots),
            inuse: 0,
            cluster_next: 0,
            cluster_nr: 0,
        }
    }

    pub(crate) fn pages(&self) -> u64 {
        self.map.len()
    }

    pub(crate) fn full(&self) -> bool {
        self.inuse == self.pages()
    }

    /// Claim `offset` (the `got_page:` / `checks:` tail of `scan_swap_map`).
    pub(crate) fn take(&mut self, offset: u64) -> u64 {
        self.map.set_used(offset);
        self.inuse += 1;
        let full = self.full();
        self.bounds.on_alloc(offset, full);
        self.cluster_next = offset + 1;
        offset
    }

    /// `swap_free()`: `swap_info_get()` reads the entry before locking, then takes
    /// `locks` nested locks (2.4: `swap_list_lock` + `swap_device_lock`; 2.6.14: the one
    /// `swap_lock`), and `swap_entry_free()` reads it again, clears it and widens the
    /// bounds. The caller has checked that `offset` is allocated.
    pub(crate) fn swap_free(&mut self, offset: u64, locks: u32) -> Work {
        let mut m = Meter::default();
        m.read(1);
        for _ in 0..locks {
            m.lock();
        }
        m.read(1);
        self.map.set_free(offset);
        self.inuse -= 1;
        self.bounds.on_free(offset);
        for _ in 0..locks {
            m.unlock();
        }
        m.finish()
    }

    pub(crate) fn is_allocated(&self, slot: u64) -> bool {
        slot < self.pages() && self.map.is_used(slot)
    }

    /// The count matches the map and the bounds cover every free slot.
    pub(crate) fn check(&self, name: &'static str) -> Result<(), SwapError> {
        let counted = self.map.count_used(0, self.pages());
        if counted != self.inuse {
            return Err(corrupt(
                name,
                format!("inuse_pages {} but {counted} entries in use", self.inuse),
            ));
        }
        self.bounds.check(&self.map, self.inuse).map_err(|d| corrupt(name, d))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map_of(bits: &str) -> SwapMap {
        let mut m = SwapMap::new(bits.len() as u64);
        for (i, c) in bits.chars().enumerate() {
            if c == '1' {
                m.set_used(i as u64);
            }
        }
        m
    }

    #[test]
    fn scans_count_every_entry_read() {
        let m = map_of("1111111111110111111");
        assert_eq!(m.find_free(0, 19), (Some(12), 13));
        assert_eq!(m.find_free(13, 19), (None, 6));
        assert_eq!(m.find_free(5, 5), (None, 0));
    }

    #[test]
    fn free_run_search_restarts_after_each_used_entry() {
        //             0123456789012345
        let m = map_of("0010001000000111");
        // run of 4: tries 0 (reads 0,1,2 -> used at 2), 3 (reads 3,4,5,6 -> used at 6),
        // 7 (reads 7..=10 -> free run)
        assert_eq!(m.find_free_run(0, 15, 4), (Some(7), 3 + 4 + 4));
        // run of 8 cannot fit below highest 12
        let (r, n) = m.find_free_run(0, 12, 8);
        assert_eq!(r, None);
        assert_eq!(n, 3 + 4);
    }

    /// The kernel's loop, entry by entry (2.6.9 scan_swap_map's "try to find an empty (even
    /// not aligned) cluster").
    fn free_run_entry_by_entry(m: &SwapMap, from: u64, highest: u64, len: u64) -> (Option<u64>, u64) {
        let mut start = from;
        if start + len - 1 > highest {
            return (None, 0);
        }
        for offset in from..=highest {
            if m.is_used(offset) {
                start = offset + 1;
                if start + len - 1 > highest {
                    return (None, offset - from + 1);
                }
            } else if offset == start + len - 1 {
                return (Some(start), offset - from + 1);
            }
        }
        (None, highest + 1 - from)
    }

    #[test]
    fn the_free_run_search_reads_what_the_kernels_loop_reads() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        for _ in 0..2000 {
            let size = rng.gen_range(1..600u64);
            let density = rng.gen_range(0.0..0.2);
            let mut m = SwapMap::new(size);
            for i in 0..size {
                if rng.gen_bool(density) {
                    m.set_used(i);
                }
            }
            let from = rng.gen_range(0..size);
            let highest = rng.gen_range(from..size);
            let len = rng.gen_range(1..300);
            assert_eq!(
                m.find_free_run(from, highest, len),
                free_run_entry_by_entry(&m, from, highest, len),
                "{size} {from} {highest} {len}"
            );
        }
    }

    #[test]
    fn bounds_follow_the_kernel_rules() {
        let mut m = SwapMap::new(4);
        let mut b = Bounds::new(4);
        for (i, s) in [0u64, 3, 1, 2].iter().enumerate() {
            m.set_used(*s);
            b.on_alloc(*s, i == 3);
            b.check(&m, i as u64 + 1).unwrap();
        }
        assert_eq!((b.lowest, b.highest), (4, 0));
        m.set_free(2);
        b.on_free(2);
        assert_eq!((b.lowest, b.highest), (2, 2));
        b.check(&m, 3).unwrap();
    }
}
