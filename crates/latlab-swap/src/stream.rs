//! Request streams: swap-out under memory pressure, swap-in frees with locality, random
//! frees, and fills to a set level. Seeded ChaCha, so a seed replays the same stream.
//!
//! The workload is a set of processes (owners) whose anonymous pages are either resident
//! or swapped. Reclaim (kswapd or a direct reclaimer on one CPU) swaps out bursts of
//! `SWAP_CLUSTER_MAX` (32) pages from a few processes at a time, either
//!
//! - in virtual-address order ([`Order::Vaddr`]): each process's pages in address order,
//!   one process after another, as 2.4's `swap_out()` walked page tables; or
//! - in LRU order ([`Order::Lru`]): short runs of pages that were faulted in together,
//!   from several processes, interleaved, as 2.6's rmap reclaim takes them off the
//!   inactive list. Morton (seed 003): "swap blocks are now physically clustered
//!   according to the page lru ordering, which doesn't have much relationship to
//!   process-virtual-address-ordering".
//!
//! Frees are either swap-ins with locality (a fault brings back the aligned window of
//! `1 << page_cluster` = 8 virtual pages around a swapped page and their slots are freed)
//! or random frees (a page unmapped or its process exiting).
//!
//! Which pages are swapped depends only on the seed and on which allocations succeeded,
//! never on which slots the allocator chose: every allocator sees the same requests.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::{check_slots, AllocRequest, SwapAllocator, SwapError, MAX_CPUS};

/// The order reclaim hands pages to the swap allocator in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// Each process's pages in virtual-address order (2.4's page-table walk).
    Vaddr,
    /// Runs of pages from several processes, interleaved (2.6's LRU lists).
    Lru,
}

/// Shape of the workload.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamConfig {
    /// Processes competing for memory.
    pub owners: u32,
    /// Order of the pages within a swap-out burst.
    pub order: Order,
    /// Pages per swap-out burst (`SWAP_CLUSTER_MAX`).
    pub burst: usize,
    /// Processes a burst takes pages from.
    pub procs_per_burst: u32,
    /// Pages a swap-in brings back (`1 << page_cluster`), and the longest LRU run.
    pub readahead: u64,
    /// CPUs reclaim runs on (each burst comes from one of them).
    pub cpus: u32,
    /// Fraction of frees that are swap-ins with locality; the rest are random frees.
    pub swapin_share: f64,
}

impl Default for StreamConfig {
    fn default() -> Self {
        Self {
            owners: 16,
            order: Order::Lru,
            burst: 32,
            procs_per_burst: 3,
            readahead: 8,
            cpus: 4,
            swapin_share: 0.5,
        }
    }
}

impl StreamConfig {
    pub fn validate(&self) -> Result<(), SwapError> {
        let bad = |what: &str| Err(SwapError::BadConfig(what.to_string()));
        if self.owners == 0 {
            return bad("the workload needs at least one process");
        }
        if self.burst == 0 {
            return bad("a swap-out burst needs at least one page");
        }
        if self.procs_per_burst == 0 || self.procs_per_burst > self.owners {
            return bad("processes per burst must be between 1 and the number of processes");
        }
        if self.readahead == 0 || !self.readahead.is_power_of_two() {
            return bad("readahead must be a power of two (1 << page_cluster)");
        }
        if self.cpus == 0 || self.cpus > MAX_CPUS {
            return bad("cpus must be between 1 and 8192");
        }
        if !(0.0..=1.0).contains(&self.swapin_share) {
            return bad("the swap-in share of frees must be in [0, 1]");
        }
        Ok(())
    }
}

const NONE: u32 = u32::MAX;
const PENDING: u32 = u32::MAX - 1;

/// Resident and swapped pages of every process, and the generator of requests.
#[derive(Debug, Clone)]
pub struct Workload {
    cfg: StreamConfig,
    rng: ChaCha8Rng,
    vspace: u64,
    /// Each process's anon_vma cookie: an 8-byte-aligned kernel slab address.
    cookies: Vec<u64>,
    /// owner -> virtual page -> slot, `NONE` (resident) or `PENDING` (being swapped out).
    ptes: Vec<Vec<u32>>,
    /// Virtual-address scan position per owner.
    cursor: Vec<u64>,
    /// Swapped pages as (owner, vpage), in an order set by the stream alone.
    live: Vec<(u32, u32)>,
    /// slot -> index in `live`.
    live_pos: Vec<u32>,
    pairs: u64,
    adjacent: u64,
}

impl Workload {
    /// A workload for a swap area of `slots` slots. The processes' address spaces add up
    /// to 1.25 times the swap area, so even a 99.9 % full swap leaves pages to reclaim.
    pub fn new(slots: u64, cfg: StreamConfig, seed: u64) -> Result<Self, SwapError> {
        check_slots(slots)?;
        cfg.validate()?;
        let vspace = (slots + slots / 4).div_ceil(cfg.owners as u64);
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut cookies: Vec<u64> = Vec::with_capacity(cfg.owners as usize);
        while cookies.len() < cfg.owners as usize {
            let cookie = 0xffff_8800_0000_0000 + (rng.gen_range(0..1u64 << 28) << 3);
            if !cookies.contains(&cookie) {
                cookies.push(cookie);
            }
        }
        Ok(Self {
            rng,
            cookies,
            ptes: vec![vec![NONE; vspace as usize]; cfg.owners as usize],
            cursor: vec![0; cfg.owners as usize],
            live: Vec::new(),
            live_pos: vec![NONE; slots as usize],
            pairs: 0,
            adjacent: 0,
            vspace,
            cfg,
        })
    }

    /// Pages currently swapped out.
    pub fn swapped(&self) -> u64 {
        self.live.len() as u64
    }

    /// The next swap-out burst: resident pages, now marked as being swapped out. Each
    /// must be passed back through [`Workload::complete`].
    pub fn swapout_burst(&mut self) -> Vec<AllocRequest> {
        let cpu = self.rng.gen_range(0..self.cfg.cpus);
        let procs = rand::seq::index::sample(
            &mut self.rng,
            self.cfg.owners as usize,
            self.cfg.procs_per_burst as usize,
        )
        .into_vec();
        let mut out = Vec::with_capacity(self.cfg.burst);
        let mut dry = 0;
        while out.len() < self.cfg.burst && dry < procs.len() {
            let owner = match self.cfg.order {
                Order::Vaddr => procs[(out.len() * procs.len() / self.cfg.burst + dry) % procs.len()],
                Order::Lru => procs[self.rng.gen_range(0..procs.len())],
            };
            let want = match self.cfg.order {
                Order::Vaddr => 1,
                Order::Lru => self.rng.gen_range(1..=self.cfg.readahead),
            }
            .min((self.cfg.burst - out.len()) as u64);
            let before = out.len();
            self.take_resident_run(owner, want, cpu, &mut out);
            dry = if out.len() == before { dry + 1 } else { 0 };
        }
        // the chosen processes are wholly swapped out: take from any process that is not
        for owner in 0..self.cfg.owners as usize {
            if !out.is_empty() {
                break;
            }
            self.take_resident_run(owner, self.cfg.burst as u64, cpu, &mut out);
        }
        out
    }

    /// Append up to `want` resident pages of `owner` in address order: from its VA scan
    /// cursor (VA order) or from a random page (LRU order).
    fn take_resident_run(&mut self, owner: usize, want: u64, cpu: u32, out: &mut Vec<AllocRequest>) {
        let ptes = &mut self.ptes[owner];
        let mut v = match self.cfg.order {
            Order::Vaddr => self.cursor[owner],
            Order::Lru => self.rng.gen_range(0..self.vspace),
        };
        let mut taken = 0;
        // find the first resident page, then take the run of resident pages from there
        for _ in 0..self.vspace {
            let resident = ptes[v as usize] == NONE;
            if resident {
                ptes[v as usize] = PENDING;
                out.push(AllocRequest {
                    owner: self.cookies[owner],
                    vpage: v,
                    cpu,
                });
                taken += 1;
            }
            v = (v + 1) % self.vspace;
            if taken == want || (taken > 0 && !resident) {
                break;
            }
        }
        if self.cfg.order == Order::Vaddr {
            self.cursor[owner] = v;
        }
    }

    /// Record the outcome of one request from [`Workload::swapout_burst`].
    pub fn complete(&mut self, req: &AllocRequest, slot: Option<u64>) -> Result<(), SwapError> {
        let foreign = SwapError::ForeignRequest {
            owner: req.owner,
            vpage: req.vpage,
        };
        let Some(owner) = self.cookies.iter().position(|&c| c == req.owner) else {
            return Err(foreign);
        };
        let v = req.vpage as usize;
        if self.ptes[owner].get(v) != Some(&PENDING) {
            return Err(foreign);
        }
        let Some(slot) = slot else {
            self.ptes[owner][v] = NONE;
            return Ok(());
        };
        if v > 0 && self.ptes[owner][v - 1] < PENDING {
            self.pairs += 1;
            if self.ptes[owner][v - 1] as u64 + 1 == slot {
                self.adjacent += 1;
            }
        }
        self.ptes[owner][v] = slot as u32;
        self.live_pos[slot as usize] = self.live.len() as u32;
        self.live.push((owner as u32, v as u32));
        Ok(())
    }

    /// Choose `n` swapped pages to bring back or drop, unmap them from the workload and
    /// return their slots.
    pub fn pick_frees(&mut self, n: usize) -> Vec<u64> {
        let mut out = Vec::with_capacity(n);
        while out.len() < n && !self.live.is_empty() {
            let (owner, v) = self.live[self.rng.gen_range(0..self.live.len())];
            if self.rng.gen_bool(self.cfg.swapin_share) {
                // swap-in fault: the aligned readahead window around the page
                let start = v as u64 & !(self.cfg.readahead - 1);
                let end = (start + self.cfg.readahead).min(self.vspace);
                for w in start..end {
                    if out.len() == n {
                        break;
                    }
                    let slot = self.ptes[owner as usize][w as usize];
                    if slot < PENDING {
                        out.push(self.unmap(slot));
                    }
                }
            } else {
                let slot = self.ptes[owner as usize][v as usize];
                out.push(self.unmap(slot));
            }
        }
        out
    }

    fn unmap(&mut self, slot: u32) -> u64 {
        let pos = self.live_pos[slot as usize] as usize;
        let (owner, v) = self.live.swap_remove(pos);
        if let Some(&moved) = self.live.get(pos) {
            let moved_slot = self.ptes[moved.0 as usize][moved.1 as usize];
            self.live_pos[moved_slot as usize] = pos as u32;
        }
        self.ptes[owner as usize][v as usize] = NONE;
        self.live_pos[slot as usize] = NONE;
        slot as u64
    }

    /// Swap out until the allocator holds `target` slots (or is full). Returns how many
    /// allocations failed.
    pub fn fill(&mut self, a: &mut dyn SwapAllocator, target: u64) -> Result<u64, SwapError> {
        let mut failed = 0;
        while a.used() < target {
            let mut burst = self.swapout_burst();
            if burst.is_empty() {
                return Err(SwapError::BadConfig(
                    "the processes have no resident page left to swap out".to_string(),
                ));
            }
            let keep = (target - a.used()).min(burst.len() as u64) as usize;
            for req in burst.drain(keep..) {
                self.complete(&req, None)?;
            }
            for req in &burst {
                let slot = a.alloc(req)?.slot;
                failed += u64::from(slot.is_none());
                self.complete(req, slot)?;
            }
            if failed > 0 {
                break;
            }
        }
        Ok(failed)
    }

    /// Free (swap-ins and random frees) until the allocator holds `target` slots.
    pub fn drain(&mut self, a: &mut dyn SwapAllocator, target: u64) -> Result<(), SwapError> {
        while a.used() > target && !self.live.is_empty() {
            for slot in self.pick_frees((a.used() - target) as usize) {
                a.free(slot)?;
            }
        }
        Ok(())
    }

    /// Of the pages swapped out whose previous virtual page was already in swap, the
    /// fraction placed in the slot right after it (Morton's goal). `None` before any pair.
    pub fn layout(&self) -> Option<f64> {
        (self.pairs > 0).then(|| self.adjacent as f64 / self.pairs as f64)
    }

    /// Start counting layout afresh (after a fill).
    pub fn reset_layout(&mut self) {
        self.pairs = 0;
        self.adjacent = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::by_name;

    fn cfg(order: Order) -> StreamConfig {
        StreamConfig {
            order,
            ..StreamConfig::default()
        }
    }

    #[test]
    fn bursts_take_distinct_resident_pages_and_replay_from_a_seed() {
        for order in [Order::Vaddr, Order::Lru] {
            let mut a = Workload::new(4096, cfg(order), 7).unwrap();
            let mut b = Workload::new(4096, cfg(order), 7).unwrap();
            for _ in 0..50 {
                let ra = a.swapout_burst();
                assert_eq!(ra, b.swapout_burst());
                assert_eq!(ra.len(), 32);
                let mut seen: Vec<_> = ra.iter().map(|r| (r.owner, r.vpage)).collect();
                seen.sort_unstable();
                seen.dedup();
                assert_eq!(seen.len(), 32);
                assert!(ra.iter().all(|r| r.cpu == ra[0].cpu));
                for r in &ra {
                    a.complete(r, None).unwrap();
                    b.complete(r, None).unwrap();
                }
            }
        }
    }

    #[test]
    fn vaddr_order_walks_each_process_upwards() {
        let mut w = Workload::new(4096, cfg(Order::Vaddr), 1).unwrap();
        let burst = w.swapout_burst();
        for pair in burst.windows(2) {
            if pair[0].owner == pair[1].owner {
                assert_eq!(pair[1].vpage, pair[0].vpage + 1);
            }
        }
    }

    #[test]
    fn fill_and_drain_reach_their_targets_with_the_same_requests_for_every_allocator() {
        let mut frees = Vec::new();
        for name in ["scan-2.4", "blist"] {
            let mut a = by_name(name, 8192).unwrap();
            let mut w = Workload::new(8192, StreamConfig::default(), 99).unwrap();
            assert_eq!(w.fill(a.as_mut(), 6000).unwrap(), 0);
            assert_eq!(a.used(), 6000);
            assert_eq!(w.swapped(), 6000);
            w.drain(a.as_mut(), 4000).unwrap();
            assert_eq!(a.used(), 4000);
            assert_eq!(w.swapped(), 4000);
            a.check_invariants().unwrap();
            // the pages (not the slots) chosen are the allocator's business only
            let mut pages: Vec<_> = w.live.clone();
            pages.sort_unstable();
            frees.push(pages);
        }
        assert_eq!(frees[0], frees[1]);
    }

    #[test]
    fn layout_counts_adjacent_slots_of_consecutive_pages() {
        let mut w = Workload::new(1024, cfg(Order::Vaddr), 3).unwrap();
        let burst = w.swapout_burst();
        for (i, r) in burst.iter().enumerate() {
            w.complete(r, Some(i as u64 * 2)).unwrap(); // never adjacent
        }
        assert_eq!(w.layout(), Some(0.0));
        // a request this workload did not issue, or one completed twice
        assert!(w.complete(&burst[0], Some(999)).is_err());
        let stranger = AllocRequest { owner: 1, ..burst[0] };
        assert!(matches!(
            w.complete(&stranger, None),
            Err(SwapError::ForeignRequest { .. })
        ));
        w.reset_layout();
        assert_eq!(w.layout(), None);
    }

    #[test]
    fn bad_configs_are_rejected() {
        let bad = [
            StreamConfig {
                owners: 0,
                ..StreamConfig::default()
            },
            StreamConfig {
                readahead: 3,
                ..StreamConfig::default()
            },
            StreamConfig {
                swapin_share: 1.5,
                ..StreamConfig::default()
            },
        ];
        for c in bad {
            assert!(matches!(Workload::new(1024, c, 0), Err(SwapError::BadConfig(_))));
        }
    }
}
