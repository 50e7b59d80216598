//! `cluster-6.x`: the swap cluster allocator of Linux 6.12-6.15 (Chris Li's per-order
//! cluster lists in 6.12, reworked by Kairui Song through 6.14/6.15), `mm/swapfile.c`.
//! Read in a later tree that keeps the same structure (`CachyOS/linux`,
//! `cluster_alloc_swap_entry`, `alloc_swap_scan_cluster`, `alloc_swap_scan_list`,
//! `isolate_lock_cluster`, `relocate_cluster`, `partial_free_cluster`,
//! `swap_reclaim_full_clusters`, `swap_alloc_fast`):
//!
//! ```text
//! folio_alloc_swap:   local_lock(&percpu_swap_cluster.lock);
//!                     if (!swap_alloc_fast(folio)) swap_alloc_slow(folio);
//! swap_alloc_fast:    offset = this_cpu_read(percpu_swap_cluster.offset[order]);
//!                     ci = swap_cluster_lock(si, offset);
//!                     if (cluster_is_usable(ci, order)) { if (cluster_is_empty(ci))
//!                         offset = cluster_offset(si, ci); alloc_swap_scan_cluster(...); }
//! alloc_swap_scan_cluster:  scan [offset, end of cluster) one entry at a time, claim the
//!                     first free one; next = offset + 1 if the cluster is not full;
//!                     relocate_cluster(); unlock; this_cpu_write(...offset[order], next);
//! cluster_alloc_swap_entry (slow path):
//!                     nonfull_clusters[order] (scan_all) -> free_clusters ->
//!                     if (vm_swap_full()) swap_reclaim_full_clusters(si, false) ->
//!                     frag_clusters[order] (one cluster) -> steal from higher orders
//! relocate_cluster:   count 0 -> free list; 0 < count < full -> frag list; full -> full list
//! free:               count 0 -> free_cluster(); else partial_free_cluster() -> nonfull
//! ```
//!
//! The model: one solid-state swap device (`SWP_SOLIDSTATE`, so the per-CPU fast path and
//! no global cluster lock), no discard, order-0 pages only (so no higher-order lists to
//! steal from), `SWAPFILE_CLUSTER` = `HPAGE_PMD_NR` = 512 as on x86-64 with THP swap. The
//! tail of a last, partial cluster is marked unusable as `setup_clusters()` does. With no
//! swap cache in the model, `swap_reclaim_full_clusters()` scans one full cluster and
//! reclaims nothing, which is the work the kernel does when nothing is reclaimable.
//!
//! All of an allocation runs under `local_lock()` (preemption disabled) and a cluster
//! lock, so it is one locked stretch; the scan is bounded by a cluster or two. Work counts
//! swap_map entries read plus each `swap_cluster_info` examined.

use crate::map::SwapMap;
use crate::meter::Meter;
use crate::{check_free, check_request, check_slots, corrupt, Alloc, AllocRequest, SwapAllocator, SwapError, Work};

/// `SWAPFILE_CLUSTER` = `HPAGE_PMD_NR` on x86-64 with `CONFIG_THP_SWAP`.
pub const SWAPFILE_CLUSTER: u64 = 512;
const NIL: u32 = u32::MAX;

/// `enum swap_cluster_flags` (less `DISCARD`, which the model does not use). Each flag but
/// `None` names the list the cluster is on; `None` means isolated (off-list).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flag {
    None,
    Free,
    Nonfull,
    Frag,
    Full,
}

impl Flag {
    const LISTS: [Flag; 4] = [Flag::Free, Flag::Nonfull, Flag::Frag, Flag::Full];

    fn list(self) -> Option<usize> {
        Self::LISTS.iter().position(|&f| f == self)
    }

    /// `cluster_is_usable()` for order 0: `flags <= CLUSTER_FLAG_USABLE` (= `FRAG`).
    fn usable(self) -> bool {
        !matches!(self, Flag::Full)
    }
}

/// `struct swap_cluster_info` with its `list_head` as indices.
#[derive(Debug, Clone, Copy)]
struct ClusterInfo {
    count: u32,
    flag: Flag,
    prev: u32,
    next: u32,
}

#[derive(Debug, Clone, Copy)]
struct ListHead {
    first: u32,
    last: u32,
}

/// The 6.12-6.15 allocator.
#[derive(Debug, Clone)]
pub struct Cluster6 {
    map: SwapMap,
    slots: u64,
    used: u64,
    ci: Vec<ClusterInfo>,
    lists: [ListHead; 4],
    /// `percpu_swap_cluster.offset[0]`: where each CPU's next allocation starts.
    percpu: Vec<Option<u64>>,
}

impl Cluster6 {
    pub fn new(slots: u64) -> Result<Self, SwapError> {
        check_slots(slots)?;
        let nclusters = slots.div_ceil(SWAPFILE_CLUSTER);
        let mut a = Self {
            map: SwapMap::new(nclusters * SWAPFILE_CLUSTER),
            slots,
            used: 0,
            ci: vec![
                ClusterInfo {
                    count: 0,
                    flag: Flag::None,
                    prev: NIL,
                    next: NIL,
                };
                nclusters as usize
            ],
            lists: [ListHead { first: NIL, last: NIL }; 4],
            percpu: Vec::new(),
        };
        // setup_clusters(): the tail past the last slot is unusable, and a cluster with
        // unusable slots starts on the nonfull list instead of the free list.
        for phantom in slots..a.map.len() {
            a.map.set_used(phantom);
            a.ci[(phantom / SWAPFILE_CLUSTER) as usize].count += 1;
        }
        let mut setup = Meter::default();
        for idx in 0..nclusters as u32 {
            let flag = if a.ci[idx as usize].count > 0 {
                Flag::Nonfull
            } else {
                Flag::Free
            };
            a.move_cluster(idx, flag, &mut setup);
        }
        Ok(a)
    }

    fn start(idx: u32) -> u64 {
        idx as u64 * SWAPFILE_CLUSTER
    }

    fn list_del(&mut self, idx: u32, list: usize) {
        let ClusterInfo { prev, next, .. } = self.ci[idx as usize];
        match prev {
            NIL => self.lists[list].first = next,
            p => self.ci[p as usize].next = next,
        }
        match next {
            NIL => self.lists[list].last = prev,
            n => self.ci[n as usize].prev = prev,
        }
    }

    fn list_add_tail(&mut self, idx: u32, list: usize) {
        let last = self.lists[list].last;
        self.ci[idx as usize].prev = last;
        self.ci[idx as usize].next = NIL;
        match last {
            NIL => self.lists[list].first = idx,
            l => self.ci[l as usize].next = idx,
        }
        self.lists[list].last = idx;
    }

    /// `move_cluster()`: under `si->lock`, move to the tail of the flag's list.
    fn move_cluster(&mut self, idx: u32, flag: Flag, m: &mut Meter) {
        m.lock();
        if let Some(old) = self.ci[idx as usize].flag.list() {
            self.list_del(idx, old);
        }
        if let Some(new) = flag.list() {
            self.list_add_tail(idx, new);
        }
        m.unlock();
        self.ci[idx as usize].flag = flag;
    }

    /// `isolate_lock_cluster()`: take the first cluster off `list` and return it locked.
    fn isolate_lock_cluster(&mut self, flag: Flag, m: &mut Meter) -> Option<u32> {
        let list = flag.list().expect("a list flag");
        m.lock(); // si->lock
        let first = self.lists[list].first;
        let found = (first != NIL).then(|| {
            m.lock(); // spin_trylock(&ci->lock)
            m.read(1);
            self.list_del(first, list);
            self.ci[first as usize].flag = Flag::None;
            first
        });
        m.unlock(); // si->lock
        found
    }

    /// `relocate_cluster()`: after an allocation, file the cluster by its count.
    fn relocate_cluster(&mut self, idx: u32, m: &mut Meter) {
        let ClusterInfo { count, flag, .. } = self.ci[idx as usize];
        let want = match count as u64 {
            0 => Flag::Free,
            SWAPFILE_CLUSTER => Flag::Full,
            _ => Flag::Frag,
        };
        if flag != want {
            self.move_cluster(idx, want, m);
        }
    }

    /// `alloc_swap_scan_cluster()`: called with the cluster locked, unlocks it.
    fn alloc_swap_scan_cluster(&mut self, idx: u32, offset: u64, cpu: usize, m: &mut Meter) -> Option<u64> {
        let end = Self::start(idx) + SWAPFILE_CLUSTER;
        let mut found = None;
        let mut next = None;
        if (self.ci[idx as usize].count as u64) < SWAPFILE_CLUSTER {
            let (free, n) = self.map.find_free(offset, end);
            m.read(n);
            if let Some(o) = free {
                self.map.set_used(o);
                self.used += 1;
                let ci = &mut self.ci[idx as usize];
                ci.count += 1;
                found = Some(o);
                if (ci.count as u64) < SWAPFILE_CLUSTER && o + 1 < end {
                    next = Some(o + 1);
                }
            }
        }
        self.relocate_cluster(idx, m);
        m.unlock(); // ci->lock
        self.percpu[cpu] = next;
        found
    }

    /// `alloc_swap_scan_list()`.
    fn alloc_swap_scan_list(&mut self, flag: Flag, scan_all: bool, cpu: usize, m: &mut Meter) -> Option<u64> {
        loop {
            let idx = self.isolate_lock_cluster(flag, m)?;
            let found = self.alloc_swap_scan_cluster(idx, Self::start(idx), cpu, m);
            if found.is_some() || !scan_all {
                return found;
            }
        }
    }

    /// `swap_reclaim_full_clusters(si, false)`: look at one full cluster for slots held
    /// only by the swap cache. The model has no swap cache, so it reclaims nothing.
    fn swap_reclaim_full_clusters(&mut self, m: &mut Meter) {
        if let Some(idx) = self.isolate_lock_cluster(Flag::Full, m) {
            let start = Self::start(idx);
            m.read((start + SWAPFILE_CLUSTER).min(self.slots) - start);
            self.relocate_cluster(idx, m);
            m.unlock();
        }
    }

    /// `vm_swap_full()`: less than half the swap area free.
    fn vm_swap_full(&self) -> bool {
        (self.slots - self.used) * 2 < self.slots
    }

    /// `swap_alloc_fast()`: the CPU's current cluster.
    fn swap_alloc_fast(&mut self, cpu: usize, m: &mut Meter) -> Option<u64> {
        let offset = self.percpu[cpu]?;
        let idx = (offset / SWAPFILE_CLUSTER) as u32;
        m.lock(); // swap_cluster_lock
        m.read(1);
        let ci = self.ci[idx as usize];
        if !ci.flag.usable() {
            m.unlock();
            return None;
        }
        let offset = if ci.count == 0 { Self::start(idx) } else { offset };
        self.alloc_swap_scan_cluster(idx, offset, cpu, m)
    }

    /// `cluster_alloc_swap_entry()` for an order-0 page on a solid-state device.
    fn cluster_alloc_swap_entry(&mut self, cpu: usize, m: &mut Meter) -> Option<u64> {
        if let Some(s) = self.alloc_swap_scan_list(Flag::Nonfull, true, cpu, m) {
            return Some(s);
        }
        if let Some(s) = self.alloc_swap_scan_list(Flag::Free, false, cpu, m) {
            return Some(s);
        }
        if self.vm_swap_full() {
            self.swap_reclaim_full_clusters(m);
        }
        self.alloc_swap_scan_list(Flag::Frag, false, cpu, m)
    }

    fn cpu_slot(&mut self, req: &AllocRequest) -> Result<usize, SwapError> {
        check_request(req)?;
        let cpu = req.cpu as usize;
        if self.percpu.len() <= cpu {
            self.percpu.resize(cpu + 1, None);
        }
        Ok(cpu)
    }
}

impl SwapAllocator for Cluster6 {
    fn name(&self) -> &'static str {
        "cluster-6.x"
    }

    fn slots(&self) -> u64 {
        self.slots
    }

    fn used(&self) -> u64 {
        self.used
    }

    fn alloc(&mut self, req: &AllocRequest) -> Result<Alloc, SwapError> {
        let cpu = self.cpu_slot(req)?;
        let mut m = Meter::default();
        m.lock(); // local_lock(&percpu_swap_cluster.lock)
        let mut slot = self.swap_alloc_fast(cpu, &mut m);
        // swap_alloc_slow(): a full device is off the swap_avail list
        if slot.is_none() && self.used < self.slots {
            slot = self.cluster_alloc_swap_entry(cpu, &mut m);
        }
        m.unlock();
        Ok(Alloc { slot, work: m.finish() })
    }

    fn free(&mut self, slot: u64) -> Result<Work, SwapError> {
        check_free(self, slot)?;
        let idx = (slot / SWAPFILE_CLUSTER) as u32;
        let mut m = Meter::default();
        m.lock(); // swap_cluster_lock
        m.read(2); // the entry and the cluster's count
        self.map.set_free(slot);
        self.used -= 1;
        self.ci[idx as usize].count -= 1;
        let ci = self.ci[idx as usize];
        if ci.count == 0 {
            self.move_cluster(idx, Flag::Free, &mut m); // free_cluster()
        } else if ci.flag != Flag::Nonfull {
            self.move_cluster(idx, Flag::Nonfull, &mut m); // partial_free_cluster()
        }
        m.unlock();
        Ok(m.finish())
    }

    fn is_allocated(&self, slot: u64) -> bool {
        slot < self.slots && self.map.is_used(slot)
    }

    fn check_invariants(&self) -> Result<(), SwapError> {
        let bad = |d: String| corrupt("cluster-6.x", d);
        let counted = self.map.count_used(0, self.slots);
        if counted != self.used {
            return Err(bad(format!("used {} but {counted} entries in use", self.used)));
        }
        let mut seen = vec![false; self.ci.len()];
        for (list, flag) in Flag::LISTS.iter().enumerate() {
            let mut prev = NIL;
            let mut cur = self.lists[list].first;
            while cur != NIL {
                let ci = self.ci[cur as usize];
                if seen[cur as usize] || ci.flag != *flag || ci.prev != prev {
                    return Err(bad(format!("cluster {cur} misfiled on the {flag:?} list")));
                }
                seen[cur as usize] = true;
                prev = cur;
                cur = ci.next;
            }
            if self.lists[list].last != prev {
                return Err(bad(format!("{flag:?} list tail is wrong")));
            }
        }
        for (idx, ci) in self.ci.iter().enumerate() {
            let start = idx as u64 * SWAPFILE_CLUSTER;
            let count = self.map.count_used(start, start + SWAPFILE_CLUSTER);
            let full = SWAPFILE_CLUSTER as u32;
            let filed = match ci.flag {
                Flag::Free => ci.count == 0,
                Flag::Full => ci.count == full,
                Flag::Nonfull | Flag::Frag => ci.count > 0 && ci.count < full,
                Flag::None => false,
            };
            if count != ci.count as u64 || !filed || !seen[idx] {
                return Err(bad(format!(
                    "cluster {idx}: count {} flag {:?} on-list {} but {count} entries in use",
                    ci.count, ci.flag, seen[idx]
                )));
            }
        }
        if let Some(off) = self.percpu.iter().flatten().find(|&&o| o >= self.map.len()) {
            return Err(bad(format!("per-CPU offset {off} past the end")));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn on(cpu: u32) -> AllocRequest {
        AllocRequest {
            owner: 1,
            vpage: 0,
            cpu,
        }
    }

    #[test]
    fn each_cpu_fills_its_own_cluster_on_the_fast_path() {
        let mut a = Cluster6::new(8 * SWAPFILE_CLUSTER).unwrap();
        let first0 = a.alloc(&on(0)).unwrap().slot.unwrap();
        let first1 = a.alloc(&on(1)).unwrap().slot.unwrap();
        assert_ne!(first0 / SWAPFILE_CLUSTER, first1 / SWAPFILE_CLUSTER);
        for i in 1..100 {
            let r0 = a.alloc(&on(0)).unwrap();
            let r1 = a.alloc(&on(1)).unwrap();
            assert_eq!(r0.slot, Some(first0 + i));
            assert_eq!(r1.slot, Some(first1 + i));
            // fast path: the cluster descriptor and one entry
            assert_eq!(r0.work.entries, 2);
            assert_eq!(r0.work.max_locked, r0.work.entries);
        }
        a.check_invariants().unwrap();
    }

    #[test]
    fn frees_refile_clusters_and_a_full_device_fails() {
        let slots = 4 * SWAPFILE_CLUSTER;
        let mut a = Cluster6::new(slots).unwrap();
        for _ in 0..slots {
            assert!(a.alloc(&on(0)).unwrap().slot.is_some());
        }
        assert_eq!(a.alloc(&on(0)).unwrap().slot, None);
        a.check_invariants().unwrap();
        a.free(700).unwrap();
        assert_eq!(a.ci[1].flag, Flag::Nonfull);
        a.check_invariants().unwrap();
        // another CPU has no current cluster: the slow path takes the nonfull one
        assert_eq!(a.alloc(&on(3)).unwrap().slot, Some(700));
        for s in 0..SWAPFILE_CLUSTER {
            a.free(s).unwrap();
        }
        assert_eq!(a.ci[0].flag, Flag::Free);
        a.check_invariants().unwrap();
    }

    #[test]
    fn worst_case_is_bounded_by_a_few_clusters_however_big_the_device() {
        let slots = 256 * SWAPFILE_CLUSTER;
        let mut a = Cluster6::new(slots).unwrap();
        for _ in 0..slots {
            a.alloc(&on(0)).unwrap();
        }
        // one free slot at the very end of every cluster
        for c in 0..256 {
            a.free(c * SWAPFILE_CLUSTER + SWAPFILE_CLUSTER - 1).unwrap();
        }
        let mut worst = 0;
        for cpu in 0..8 {
            for _ in 0..20 {
                let r = a.alloc(&on(cpu)).unwrap();
                assert!(r.slot.is_some());
                worst = worst.max(r.work.max_locked);
            }
        }
        assert!(worst <= 3 * SWAPFILE_CLUSTER, "{worst}");
        assert!(worst >= SWAPFILE_CLUSTER, "{worst}");
        a.check_invariants().unwrap();
    }

    #[test]
    fn a_partial_last_cluster_is_usable_only_up_to_the_end() {
        let slots = SWAPFILE_CLUSTER + 100;
        let mut a = Cluster6::new(slots).unwrap();
        let mut got = Vec::new();
        while let Some(s) = a.alloc(&on(0)).unwrap().slot {
            got.push(s);
        }
        got.sort_unstable();
        assert_eq!(got, (0..slots).collect::<Vec<_>>());
        a.check_invariants().unwrap();
    }
}
