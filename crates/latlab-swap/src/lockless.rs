//! `lockless-2.6.14`: Hugh Dickins' rewrite of `scan_swap_map()`, merged for 2.6.14 from
//! his July 2005 series ("[PATCH 10/13] scan_swap_map drop swap_device_lock", LKML
//! 2005-07-09). Read in the 2.6.2x `mm/swapfile.c` that carries it unchanged:
//!
//! ```text
//! #define LATENCY_LIMIT 256
//! if (unlikely(!si->cluster_nr)) {
//!     si->cluster_nr = SWAPFILE_CLUSTER - 1;
//!     if (si->pages - si->inuse_pages < SWAPFILE_CLUSTER) goto lowest;
//!     spin_unlock(&swap_lock);
//!     offset = si->lowest_bit; last_in_cluster = offset + SWAPFILE_CLUSTER - 1;
//!     /* Locate the first empty (unaligned) cluster */
//!     for (; last_in_cluster <= si->highest_bit; offset++) {
//!         if (si->swap_map[offset]) last_in_cluster = offset + SWAPFILE_CLUSTER;
//!         else if (offset == last_in_cluster) { spin_lock(&swap_lock);
//!             si->cluster_next = offset-SWAPFILE_CLUSTER+1; goto cluster; }
//!         if (unlikely(--latency_ration < 0)) { cond_resched(); latency_ration = LATENCY_LIMIT; }
//!     }
//!     spin_lock(&swap_lock); goto lowest;
//! }
//! si->cluster_nr--;
//! cluster: offset = si->cluster_next; if (offset > si->highest_bit) lowest: offset = si->lowest_bit;
//! checks:  if (!si->swap_map[offset]) { ...claim it...; return offset; }
//!          spin_unlock(&swap_lock);
//!          while (++offset <= si->highest_bit) {
//!              if (!si->swap_map[offset]) { spin_lock(&swap_lock); goto checks; }
//!              if (unlikely(--latency_ration < 0)) { cond_resched(); ... } }
//!          spin_lock(&swap_lock); goto lowest;
//! ```
//!
//! The long scans run with `swap_lock` dropped and a `cond_resched()` every
//! `LATENCY_LIMIT` entries, and the lock is re-taken only to re-check and claim one entry.
//! So the locked stretch stays at a couple of entries however full the map is, while the
//! total work per allocation is the same near-linear search as 2.4 (on a kernel without
//! `CONFIG_PREEMPT` the unlocked scan is non-preemptible for at most `LATENCY_LIMIT + 1`
//! entries at a time).

use crate::map::SwapInfo;
use crate::meter::Meter;
use crate::scan24::SWAPFILE_CLUSTER;
use crate::{check_request, check_slots, Alloc, AllocRequest, SwapAllocator, SwapError, Work};

/// `#define LATENCY_LIMIT 256`: entries scanned between `cond_resched()` calls.
pub const LATENCY_LIMIT: u64 = 256;

/// The 2.6.14 allocator.
#[derive(Debug, Clone)]
pub struct Lockless {
    si: SwapInfo,
}

impl Lockless {
    pub fn new(slots: u64) -> Result<Self, SwapError> {
        check_slots(slots)?;
        Ok(Self {
            si: SwapInfo::new(slots),
        })
    }

    /// `scan_swap_map()`: entered and left with `swap_lock` held, drops it to scan.
    fn scan_swap_map(&mut self, m: &mut Meter) -> Option<u64> {
        let si = &mut self.si;
        let highest = si.bounds.highest;
        let mut offset;
        if si.cluster_nr == 0 {
            si.cluster_nr = SWAPFILE_CLUSTER - 1;
            offset = si.bounds.lowest;
            if si.pages() - si.inuse >= SWAPFILE_CLUSTER {
                m.unlock();
                let (run, n) = si.map.find_free_run(offset, highest, SWAPFILE_CLUSTER);
                m.read(n);
                m.lock();
                if let Some(start) = run {
                    si.cluster_next = start;
                    offset = start;
                }
            }
        } else {
            si.cluster_nr -= 1;
            offset = si.cluster_next;
            if offset > highest {
                offset = si.bounds.lowest;
            }
        }
        // checks: at most a scan from `offset` and one from `lowest_bit`; every free slot
        // lies in [lowest_bit, highest_bit], so the second always finds one.
        for _ in 0..2 {
            m.read(1);
            if !si.map.is_used(offset) {
                return Some(si.take(offset));
            }
            m.unlock();
            let (found, n) = si.map.find_free(offset + 1, highest + 1);
            m.read(n);
            m.lock();
            offset = found.unwrap_or(si.bounds.lowest);
        }
        m.read(1);
        (!si.map.is_used(offset)).then(|| si.take(offset))
    }
}

impl SwapAllocator for Lockless {
    fn name(&self) -> &'static str {
        "lockless-2.6.14"
    }

    fn alloc(&mut self, req: &AllocRequest) -> Result<Alloc, SwapError> {
        check_request(req)?;
        let mut m = Meter::default();
        m.lock(); // swap_lock in get_swap_page
        let slot = if self.si.full() {
            None
        } else {
            self.scan_swap_map(&mut m)
        };
        m.unlock();
        Ok(Alloc { slot, work: m.finish() })
    }

    crate::map::swap_info_methods!(1);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scan24::Scan24;
    use crate::TEST_REQ as REQ;

    #[test]
    fn same_search_as_2_4_but_the_lock_is_held_for_two_entries_at_most() {
        let slots = 8192;
        let mut old = Scan24::new(slots).unwrap();
        let mut new = Lockless::new(slots).unwrap();
        for a in [&mut old as &mut dyn SwapAllocator, &mut new] {
            for _ in 0..slots {
                a.alloc(&REQ).unwrap();
            }
            for s in (0..slots).step_by(16) {
                a.free(s).unwrap();
            }
        }
        let (mut old_worst, mut new_worst) = (0, 0);
        for _ in 0..300 {
            let o = old.alloc(&REQ).unwrap();
            let n = new.alloc(&REQ).unwrap();
            assert!(o.slot.is_some() && n.slot.is_some());
            assert!(n.work.max_locked <= 2, "{:?}", n.work);
            old_worst = old_worst.max(o.work.entries);
            new_worst = new_worst.max(n.work.entries);
        }
        // within 256 allocations both search the map for a free run and read most of it:
        // Dickins moved the scan out of the lock, he did not make it shorter
        assert!(
            old_worst > slots / 2 && new_worst > slots / 2,
            "{old_worst} {new_worst}"
        );
        new.check_invariants().unwrap();
    }

    #[test]
    fn takes_a_free_run_found_without_the_lock() {
        let mut a = Lockless::new(2048).unwrap();
        for _ in 0..1024 {
            a.alloc(&REQ).unwrap();
        }
        a.free(10).unwrap();
        // force a new cluster search: it skips the lone hole and claims the run at 1024
        a.si.cluster_nr = 0;
        let r = a.alloc(&REQ).unwrap();
        assert_eq!(r.slot, Some(1024));
        assert_eq!(r.work.lock_acquisitions, 2);
    }
}
