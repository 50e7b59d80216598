//! `vaddr-chunks`: Andrew Morton's swapspace-layout patch, posted in seed 003 (LKML,
//! September 2004) and carried in -mm as `swapspace-layout-improvements.patch` (the
//! 2005-05-02 version was read: `mm/swapfile.c`, `mm/swap_state.c`, `mm/vmscan.c`).
//!
//! ```text
//! /* We divide the swapdev into 1024 kilobyte chunks.  We use the cookie and the
//!  * upper bits of the index to select a chunk and the rest of the index as the
//!  * offset into the selected chunk. */
//! #define CHUNK_SHIFT (20 - PAGE_SHIFT)
//! #define CHUNK_MASK  (-1UL << CHUNK_SHIFT)
//! nchunks = si->max >> CHUNK_SHIFT;
//! chunk = 0;
//! if (nchunks)
//!     chunk = hash_long((unsigned long)cookie + (index & CHUNK_MASK), BITS_PER_LONG) % nchunks;
//! block = (chunk << CHUNK_SHIFT) + (index & ~CHUNK_MASK);
//! for (scan = 0; scan < si->max; scan++, block++) {
//!     if (block == si->max) block = 0;
//!     if (block == 0) continue;
//!     if (si->swap_map[block]) continue;
//!     si->swap_map[block] = 1; ...; return block;
//! }
//! ```
//!
//! `cookie` is the page's anon_vma (`page->mapping`) and `index` its `page->index`, so a
//! process's virtually contiguous pages land in one 1 MB chunk in address order. The probe
//! runs under `swap_list_lock` + `swap_device_lock` from the unchanged `get_swap_page()`,
//! with no preemption point: a full or nearly full map costs up to `si->max` reads, as
//! Morton warned ("I don't think it'll help latency").
//!
//! The hash keeps the cookie's low bits. `GOLDEN_RATIO_PRIME` is 1 modulo 2^18, so when the
//! number of chunks is a power of two (a swap file of 256 MiB, 1 GiB, ...),
//! `hash_long(x) % nchunks` is just `x % nchunks`: the home chunk is the cookie plus 256
//! times the index's 1 MB region number, modulo `nchunks`. anon_vma cookies are 8-byte
//! aligned slab addresses, so only every 8th chunk is ever a home chunk, and on a 256 MiB
//! area (256 chunks) all of a process's pages share one. The model keeps this, since it
//! is what the patch does on such a device; on other sizes the modulo spreads the chunks.
//!
//! Model differences: the model has no header slot, so block 0 is usable; and when the
//! area is smaller than one chunk (`nchunks == 0`) the starting block is reduced modulo
//! the area (the patch would index past `si->max` there).

use crate::map::{get_swap_page_24, SwapInfo};
use crate::{check_request, check_slots, Alloc, AllocRequest, SwapAllocator, SwapError, Work};

/// `CHUNK_SHIFT` with 4 KiB pages: 256 slots per chunk.
pub const CHUNK_SHIFT: u32 = 20 - 12;
const CHUNK_MASK: u64 = u64::MAX << CHUNK_SHIFT;
/// `GOLDEN_RATIO_PRIME` for 64-bit longs in 2.6-era `include/linux/hash.h`
/// (2^63 + 2^61 - 2^57 + 2^54 - 2^51 - 2^18 + 1).
const GOLDEN_RATIO_PRIME: u64 = 0x9e37_ffff_fffc_0001;

/// `hash_long(val, BITS_PER_LONG)` on a 64-bit kernel: the shift-and-add sequence there
/// multiplies by `GOLDEN_RATIO_PRIME`, and a shift of `64 - 64` keeps every bit.
pub fn hash_long(val: u64) -> u64 {
    val.wrapping_mul(GOLDEN_RATIO_PRIME)
}

/// Morton's allocator.
#[derive(Debug, Clone)]
pub struct VaddrChunks {
    si: SwapInfo,
}

impl VaddrChunks {
    pub fn new(slots: u64) -> Result<Self, SwapError> {
        check_slots(slots)?;
        Ok(Self {
            si: SwapInfo::new(slots),
        })
    }

    /// The block the probe starts from for `(cookie, index)`.
    pub fn home_block(&self, cookie: u64, index: u64) -> u64 {
        let max = self.si.pages();
        let nchunks = max >> CHUNK_SHIFT;
        let chunk = if nchunks > 0 {
            hash_long(cookie.wrapping_add(index & CHUNK_MASK)) % nchunks
        } else {
            0
        };
        ((chunk << CHUNK_SHIFT) + (index & !CHUNK_MASK)) % max
    }
}

impl SwapAllocator for VaddrChunks {
    fn name(&self) -> &'static str {
        "vaddr-chunks"
    }

    fn alloc(&mut self, req: &AllocRequest) -> Result<Alloc, SwapError> {
        check_request(req)?;
        let full = self.si.full();
        Ok(get_swap_page_24(self, full, |a, m| {
            let block = a.home_block(req.owner, req.vpage);
            let max = a.si.pages();
            let (mut found, n) = a.si.map.find_free(block, max);
            m.read(n);
            if found.is_none() {
                let (wrapped, n) = a.si.map.find_free(0, block);
                m.read(n);
                found = wrapped;
            }
            found.map(|b| a.si.take(b))
        }))
    }

    crate::map::swap_info_methods!(2);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(owner: u64, vpage: u64) -> AllocRequest {
        AllocRequest { owner, vpage, cpu: 0 }
    }

    #[test]
    fn hash_long_is_the_kernels_shift_and_add_sequence() {
        for val in [1u64, 0xdead_beef, u64::MAX, 0x1234_5678_9abc_def0] {
            let mut hash = val;
            let mut n = val;
            n <<= 18;
            hash = hash.wrapping_sub(n);
            n <<= 33;
            hash = hash.wrapping_sub(n);
            n <<= 3;
            hash = hash.wrapping_add(n);
            n <<= 3;
            hash = hash.wrapping_sub(n);
            n <<= 4;
            hash = hash.wrapping_add(n);
            n <<= 2;
            hash = hash.wrapping_add(n);
            assert_eq!(hash_long(val), hash);
        }
    }

    #[test]
    fn virtually_contiguous_pages_land_contiguously_in_one_chunk() {
        let mut a = VaddrChunks::new(1 << 16).unwrap();
        let owner = 0xffff_8800_1234_5000;
        let base = 3 << CHUNK_SHIFT; // a chunk-aligned virtual index
        let first = a.alloc(&req(owner, base + 5)).unwrap().slot.unwrap();
        assert_eq!(first % 256, 5);
        assert_eq!(first, a.home_block(owner, base + 5));
        // out of order (LRU order) still lays them out by address
        for v in [9, 6, 8, 7] {
            let s = a.alloc(&req(owner, base + v)).unwrap().slot.unwrap();
            assert_eq!(s, first - 5 + v);
        }
    }

    #[test]
    fn with_a_power_of_two_chunk_count_the_hash_keeps_the_cookies_low_bits() {
        let owner = 0xffff_8800_0abc_def8;
        // 256 chunks: every 1 MB region of the process has the same home chunk
        let small = VaddrChunks::new(1 << 16).unwrap();
        let home = small.home_block(owner, 0) >> CHUNK_SHIFT;
        assert_eq!(home, owner % 256);
        for region in 1..10 {
            assert_eq!(small.home_block(owner, region << CHUNK_SHIFT) >> CHUNK_SHIFT, home);
        }
        // 4096 chunks: the next region is 256 chunks further on
        let big = VaddrChunks::new(1 << 20).unwrap();
        let c0 = big.home_block(owner, 0) >> CHUNK_SHIFT;
        assert_eq!(
            big.home_block(owner, 1 << CHUNK_SHIFT) >> CHUNK_SHIFT,
            (c0 + 256) % 4096
        );
        // a size that is not a power of two spreads the regions
        let odd = VaddrChunks::new(1_000_000).unwrap();
        let chunks: std::collections::BTreeSet<u64> = (0..64)
            .map(|r| odd.home_block(owner, r << CHUNK_SHIFT) >> CHUNK_SHIFT)
            .collect();
        assert!(chunks.len() > 48, "{}", chunks.len());
    }

    #[test]
    fn collisions_probe_linearly_and_wrap() {
        let slots = 512;
        let mut a = VaddrChunks::new(slots).unwrap();
        let home = a.home_block(7, 255);
        let mut expect = home;
        for _ in 0..slots {
            let r = a.alloc(&req(7, 255)).unwrap();
            assert_eq!(r.slot, Some(expect));
            assert_eq!(r.work.entries, (expect + slots - home) % slots + 1);
            assert_eq!(r.work.max_locked, r.work.entries);
            expect = (expect + 1) % slots;
        }
        assert_eq!(a.alloc(&req(7, 255)).unwrap().slot, None);
        a.check_invariants().unwrap();
    }
}
