//! `scan-2.4`: the swap-slot allocator of Linux 2.4 and 2.6.9, `scan_swap_map()` in
//! `mm/swapfile.c` (read in 2.6.11, `Antonio-Zhou/Linux-2.6.11`, which still has the
//! 2.4-era function unchanged; `get_swap_page()` wraps it).
//!
//! ```text
//! get_swap_page:  swap_list_lock(); if (nr_swap_pages <= 0) goto out;
//!                 swap_device_lock(p); offset = scan_swap_map(p); swap_device_unlock(p);
//! scan_swap_map:  if (si->cluster_nr)                      -- SWAPFILE_CLUSTER 256
//!                     while (si->cluster_next <= si->highest_bit) {
//!                         offset = si->cluster_next++;
//!                         if (si->swap_map[offset]) continue;
//!                         si->cluster_nr--; goto got_page; }
//!                 si->cluster_nr = SWAPFILE_CLUSTER;
//!                 /* try to find an empty (even not aligned) cluster. */
//!                 offset = si->lowest_bit; check_next_cluster: ...restart after a used entry
//!                 /* No luck, so now go finegrined as usual. -Andrea */
//!                 for (offset = si->lowest_bit; offset <= si->highest_bit; offset++) ...
//! ```
//!
//! Everything happens under `swap_list_lock` and `swap_device_lock`, both spinlocks, with
//! no preemption point: the whole of every allocation is one locked stretch, and when the
//! map has no free run of 256 the run search and the fine-grained search each read up to
//! the whole map. That is Ingo Molnar's "near linear search" of seed 003.

use crate::map::{get_swap_page_24, SwapInfo};
use crate::meter::Meter;
use crate::{check_request, check_slots, Alloc, AllocRequest, SwapAllocator, SwapError, Work};

/// `#define SWAPFILE_CLUSTER 256`.
pub const SWAPFILE_CLUSTER: u64 = 256;

/// The 2.4 / 2.6.9 allocator.
#[derive(Debug, Clone)]
pub struct Scan24 {
    si: SwapInfo,
}

impl Scan24 {
    pub fn new(slots: u64) -> Result<Self, SwapError> {
        check_slots(slots)?;
        Ok(Self {
            si: SwapInfo::new(slots),
        })
    }

    /// `scan_swap_map()`, called with both locks held.
    fn scan_swap_map(&mut self, m: &mut Meter) -> Option<u64> {
        let si = &mut self.si;
        let highest = si.bounds.highest;
        if si.cluster_nr > 0 {
            let (found, n) = si.map.find_free(si.cluster_next, highest + 1);
            m.read(n);
            if let Some(offset) = found {
                si.cluster_nr -= 1;
                return Some(si.take(offset));
            }
            si.cluster_next = si.cluster_next.max(highest + 1);
        }
        si.cluster_nr = SWAPFILE_CLUSTER;

        let (run, n) = si.map.find_free_run(si.bounds.lowest, highest, SWAPFILE_CLUSTER);
        m.read(n);
        if let Some(offset) = run {
            return Some(si.take(offset));
        }

        let (found, n) = si.map.find_free(si.bounds.lowest, highest + 1);
        m.read(n);
        let offset = found?;
        si.bounds.lowest = offset + 1;
        Some(si.take(offset))
    }
}

impl SwapAllocator for Scan24 {
    fn name(&self) -> &'static str {
        "scan-2.4"
    }

    fn alloc(&mut self, req: &AllocRequest) -> Result<Alloc, SwapError> {
        check_request(req)?;
        let full = self.si.full();
        Ok(get_swap_page_24(self, full, |a, m| a.scan_swap_map(m)))
    }

    crate::map::swap_info_methods!(2);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TEST_REQ as REQ;

    #[test]
    fn hands_out_sequential_slots_from_a_fresh_map() {
        let mut a = Scan24::new(1024).unwrap();
        for want in 0..600 {
            let r = a.alloc(&REQ).unwrap();
            assert_eq!(r.slot, Some(want));
            // all of the work is done under the two spinlocks
            assert_eq!(r.work.max_locked, r.work.entries);
            assert_eq!(r.work.lock_acquisitions, 2);
        }
    }

    #[test]
    fn a_fragmented_map_costs_a_full_scan_under_the_lock() {
        let slots = 4096;
        let mut a = Scan24::new(slots).unwrap();
        for _ in 0..slots {
            a.alloc(&REQ).unwrap();
        }
        // free every 64th slot: no run of 256 anywhere
        for s in (0..slots).step_by(64) {
            a.free(s).unwrap();
        }
        // cluster_next is past the end, so the run search reads the map up to the last
        // place a run could start, finds none, and the fine-grained scan takes slot 0.
        let r = a.alloc(&REQ).unwrap();
        assert_eq!(r.slot, Some(0));
        assert!(r.work.max_locked >= slots - 2 * 256, "{:?}", r.work);
        assert_eq!(r.work.max_locked, r.work.entries);
        a.check_invariants().unwrap();
    }

    #[test]
    fn full_map_fails_cheaply_and_a_free_makes_the_slot_reusable() {
        let mut a = Scan24::new(256).unwrap();
        for _ in 0..256 {
            assert!(a.alloc(&REQ).unwrap().slot.is_some());
        }
        let r = a.alloc(&REQ).unwrap();
        assert_eq!(r.slot, None);
        assert_eq!(r.work.entries, 0);
        a.free(77).unwrap();
        assert_eq!(a.alloc(&REQ).unwrap().slot, Some(77));
    }
}
