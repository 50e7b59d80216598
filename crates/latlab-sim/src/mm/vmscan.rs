//! Page reclaim of 2.4.17 (mm/vmscan.c; research notes §2): `try_to_free_pages` runs
//! `shrink_caches` at priority 6 down to 1 until SWAP_CLUSTER_MAX pages are freed:
//! `refill_inactive` (the active list's oldest pages to the inactive list; no point
//! anywhere), `shrink_cache` (stock lock-break per page; too many mapped pages ->
//! `swap_out`), `shrink_dcache_memory` -> `prune_dcache`,
//! `shrink_icache_memory` -> `prune_icache` (what these two free does not count toward the
//! goal: shrink_caches ignores their return). kswapd repeats rounds until free pages reach
//! pages_high.
//!
//! A page whose buffers are dirty (write() dirties buffers, never PG_dirty, in 2.4) goes from
//! shrink_cache to `try_to_release_page`: ext3's `journal_try_to_free_buffers` lets
//! `try_to_free_buffers` run when the VM may do I/O ("The VM wants us to do writeout"), and
//! its `sync_page_buffers` writes the dirty buffers with `__mark_buffer_clean` (a refile to
//! BUF_LOCKED) and BH_launder (2.4.18 fs/buffer.c, fs/jbd/transaction.c). A reclaimer that
//! meets a BH_launder buffer still locked waits for it (`wait_on_buffer`; every reclaimer
//! here, kswapd and the page-cache and fault allocations, may wait). The model's scan meets
//! the launder buffers when it gets past the clean cache into the dirty and locked pages,
//! where they are the oldest; it then sleeps on the oldest one still under write.

use crate::kernel::catalog::Point;
use crate::kernel::lock::Lock;
use crate::kernel::path::{point, Chan, Ctx, LoopStep, Nested, Path, Step};
use crate::mm::state::MmK;
use crate::mm::ScanLimits;
use latlab_core::Nanos;
use smallvec::smallvec;

/// SWAP_CLUSTER_MAX: pages a try_to_free_pages call aims to free.
pub const SWAP_CLUSTER_MAX: u64 = 32;
/// DEF_PRIORITY.
pub const DEF_PRIORITY: u64 = 6;
/// Slab bytes of a dentry (2.4 `struct dentry` with its inline name, i386).
pub const DENTRY_BYTES: u64 = 128;
/// Slab bytes of an in-core ext3 inode (`struct inode` with the ext3 union, 2.4 i386).
pub const INODE_BYTES: u64 = 480;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Stage {
    Refill,
    Shrink,
    SwapOut,
    SwapOutScan,
    Dcache,
    DcachePrune,
    Icache,
    Dispose,
    NextPriority,
}

pub struct TryToFreePages<K> {
    priority: u64,
    freed: u64,
    stage: Stage,
    /// Per-stage plan: (skipped, pruned) for dcache, (visited, freed) for icache.
    plan: (u64, u64),
    /// The shrink_cache scan just handed out, to be applied for the pages it got through.
    limits: Option<ScanLimits>,
    /// What is left of a shrink_cache call cut by its rescheduling point.
    resume: Option<ScanLimits>,
    sub: Nested<K>,
    swap_mm: Option<u32>,
    /// Items of the loop last handed out: fewer done means it stopped at a lock-break,
    /// and the walk resumes where it stopped (the kernel's `goto redo` / `continue`).
    planned: u64,
    /// prune_dcache's count still to go after a lock-break.
    dcache_left: Option<u64>,
    /// The shrink_cache scan met a BH_launder buffer still under write (this one).
    launder_wait: Option<u64>,
    /// The refill_inactive walk just handed out, to move this many pages.
    refill: Option<u64>,
}

pub fn try_to_free_pages<K: MmK>() -> Box<dyn Path<K>> {
    Box::new(TryToFreePages {
        priority: DEF_PRIORITY,
        freed: 0,
        stage: Stage::Refill,
        plan: (0, 0),
        sub: Nested::default(),
        swap_mm: None,
        limits: None,
        resume: None,
        planned: 0,
        dcache_left: None,
        launder_wait: None,
        refill: None,
    })
}

impl<K: MmK> TryToFreePages<K> {
    /// shrink_caches' `nr_pages`: what the call has still to free.
    fn nr_pages(&self) -> u64 {
        SWAP_CLUSTER_MAX.saturating_sub(self.freed).max(1)
    }

    fn next_step(&mut self, k: &mut K, cx: &Ctx) -> Step {
        loop {
            if let Some(s) = self.sub.next(k, cx) {
                return s;
            }
            if let Some(id) = self.launder_wait.take().and_then(|seq| k.disk.req_of_seq(seq)) {
                return Step::Block(Chan::Io(id));
            }
            match self.stage {
                Stage::Refill => {
                    self.stage = Stage::Shrink;
                    if self.priority == DEF_PRIORITY {
                        k.mm.reclaims += 1;
                    }
                    // shrink_caches: "try to keep the active list 2/3 of the size of the
                    // cache": ratio = nr_pages * nr_active / ((nr_inactive + 1) * 2).
                    let ratio = self.nr_pages() * k.mm.nr_active() / ((k.mm.inactive_pages() + 1) * 2);
                    self.refill = Some(ratio);
                    return LoopStep::locked(
                        "refill_inactive",
                        k.mm.plan_refill(ratio, true),
                        k.c.refill_page,
                        Lock::PagemapLru,
                        smallvec![],
                        false,
                    );
                }
                Stage::Shrink => {
                    self.stage = Stage::Dcache;
                    // The inactive list, oldest first, as the workload built it (mm/mod.rs):
                    // clean cache is freed, dirty cache goes to writepage, mapped pages count
                    // against max_mapped = min(nr_pages << (10 - priority), max_scan / 10);
                    // meeting more makes shrink_cache call swap_out and return short of its
                    // goal, so shrink_caches goes on to the dcache and icache.
                    // After a lock-break the same call goes on (the kernel's `continue`): what
                    // is left of its scan, mapped-page and freeing budgets.
                    let lim = self.resume.take().unwrap_or_else(|| {
                        let inactive = k.mm.inactive_pages().max(1);
                        let max_scan = inactive / self.priority;
                        ScanLimits {
                            want: self.nr_pages(),
                            max_scan,
                            max_mapped: (SWAP_CLUSTER_MAX << (10 - self.priority)).min(max_scan / 10),
                            dirty: k.dirty_for_balance(),
                        }
                    });
                    let plan = k.mm.plan_shrink(&lim);
                    if plan.swap {
                        self.stage = Stage::SwapOut;
                    }
                    self.limits = Some(lim);
                    return LoopStep::locked(
                        "shrink_cache",
                        plan.scanned,
                        k.c.shrink_page,
                        Lock::PagemapLru,
                        smallvec![point(Point::ShrinkCache, 1)],
                        false,
                    );
                }
                Stage::SwapOut => {
                    // swap_out(): stock need_resched check before each address space.
                    self.stage = Stage::SwapOutScan;
                    self.swap_mm = Some(0);
                    return LoopStep::plain("swap_out", 1, k.c.refill_page, smallvec![point(Point::SwapOut, 1)]);
                }
                Stage::SwapOutScan => {
                    self.stage = Stage::Dcache;
                    // The next address space on the mm list.
                    let mms = &k.mm.mms;
                    let mm = (k.mm.swap_cursor.checked_add(1))
                        .and_then(|from| mms.range(from..).next())
                        .or_else(|| mms.iter().next())
                        .map(|(id, r)| (*id, r.rss, r.young));
                    let Some((id, rss, young)) = mm else { continue };
                    k.mm.swap_cursor = id;
                    let old = rss - young.min(rss);
                    // Scan until SWAP_CLUSTER_MAX old pages are found or the mm ends.
                    let scan = if old == 0 {
                        rss
                    } else {
                        (SWAP_CLUSTER_MAX * rss).div_ceil(old).min(rss)
                    };
                    self.sub.start(Box::new(SwapOutMm { mm: id, scan, stage: 0 }));
                    continue;
                }
                Stage::Dcache => {
                    self.stage = Stage::Icache;
                    if self.freed >= SWAP_CLUSTER_MAX {
                        // shrink_caches returns as soon as shrink_cache freed enough.
                        self.stage = Stage::NextPriority;
                        continue;
                    }
                    let count = self.dcache_left.take().unwrap_or(k.dentries_unused() / self.priority);
                    let (skipped, pruned) = k.plan_prune_dcache(count);
                    if pruned == 0 {
                        continue;
                    }
                    self.plan = (skipped, pruned);
                    let unref = k.dentries_unused() - k.dentries_referenced();
                    if unref < pruned && skipped > 0 {
                        // Every flag is cleared before anything can be freed: one walk.
                        self.stage = Stage::DcachePrune;
                        return LoopStep::locked(
                            "prune_dcache",
                            skipped,
                            k.c.dcache_skip,
                            Lock::Dcache,
                            smallvec![point(Point::PruneDcache, 100)],
                            true,
                        );
                    }
                    // Interleaved: each freed dentry drops dcache_lock in dentry_iput.
                    let gap = skipped / pruned;
                    return Step::Loop(crate::kernel::path::LoopStep {
                        func: "prune_dcache",
                        items: pruned,
                        per_item: gap * k.c.dcache_skip + k.c.prune_dentry,
                        lock: Some(Lock::Dcache),
                        points: smallvec![
                            point(Point::DentryIput, 1),
                            point(Point::PruneDcache, (100 / (gap + 1)).max(1))
                        ],
                        unlock_each: true,
                        hold: false,
                    });
                }
                Stage::DcachePrune => {
                    self.stage = Stage::Icache;
                    let pruned = self.plan.1;
                    self.plan = (0, pruned);
                    return Step::Loop(crate::kernel::path::LoopStep {
                        func: "prune_dcache",
                        items: pruned,
                        per_item: k.c.prune_dentry,
                        lock: Some(Lock::Dcache),
                        points: smallvec![point(Point::DentryIput, 1)],
                        unlock_each: true,
                        hold: false,
                    });
                }
                Stage::Icache => {
                    self.stage = Stage::Dispose;
                    let goal = k.inodes_unused() / self.priority;
                    let (visited, freed) = k.plan_prune_icache(goal);
                    self.plan = (visited, freed);
                    if visited == 0 {
                        continue;
                    }
                    return LoopStep::locked(
                        "prune_icache",
                        visited,
                        k.c.icache_visit,
                        Lock::Inode,
                        smallvec![point(Point::PruneIcache, 1)],
                        false,
                    );
                }
                Stage::Dispose => {
                    self.stage = Stage::NextPriority;
                    let freed = self.plan.1;
                    if freed == 0 {
                        continue;
                    }
                    return LoopStep::plain(
                        "dispose_list",
                        freed,
                        k.c.dispose_inode,
                        smallvec![point(Point::DisposeList, 1)],
                    );
                }
                Stage::NextPriority => {
                    // try_to_free_pages_zone: priorities 6 down to 1 until shrink_caches reaches
                    // its goal; free memory above pages_high does not end the call.
                    if self.freed >= SWAP_CLUSTER_MAX || self.priority == 1 {
                        return Step::Done;
                    }
                    self.priority -= 1;
                    if self.priority == 1 {
                        k.mm.reclaims_to_priority_1 += 1;
                    }
                    self.stage = Stage::Refill;
                }
            }
        }
    }
}

impl<K: MmK> Path<K> for TryToFreePages<K> {
    fn name(&self) -> &'static str {
        "try_to_free_pages"
    }
    fn next(&mut self, k: &mut K, cx: &Ctx) -> Step {
        let step = self.next_step(k, cx);
        if let Step::Loop(l) = &step {
            self.planned = l.items;
        }
        step
    }
    fn advanced(&mut self, k: &mut K, cx: &Ctx, done: u64) {
        if self.sub.advanced(k, cx, done) {
            return;
        }
        if let Some(n) = self.refill.take() {
            k.mm.refill_inactive(n, done, true);
            return;
        }
        let cut = done < self.planned;
        match self.stage {
            // The shrink_cache loop just ran (stage already moved on).
            Stage::Dcache | Stage::SwapOut if self.limits.is_some() && self.swap_mm.is_none() => {
                let lim = self.limits.take().expect("checked");
                let sc = k.apply_shrink(&lim, done);
                // Dirty pages met have their buffers written (sync_page_buffers: refiled to
                // BUF_LOCKED), SWAP_CLUSTER_MAX at most per call.
                let dirty_met = sc.dirty.min(SWAP_CLUSTER_MAX);
                if sc.dirty > 0 && !k.writeback.counts_dirty_pages() {
                    // Past the clean pages: the oldest locked ones are earlier launder pages.
                    // (2.6's shrink_list hands a dirty page to pageout() and goes on: no
                    // BH_launder, no wait for the write.)
                    self.launder_wait = k.launder_inflight();
                }
                if dirty_met > 0 {
                    if let Some(p) = k.launder(dirty_met) {
                        self.sub.start(p);
                    }
                }
                self.freed += sc.freed;
                if cut && sc.freed < lim.want {
                    // shrink_cache's lock-break: the scan goes on after schedule().
                    self.stage = Stage::Shrink;
                    self.resume = Some(ScanLimits {
                        want: lim.want - sc.freed,
                        max_scan: lim.max_scan - sc.scanned.min(lim.max_scan),
                        max_mapped: lim.max_mapped - sc.mapped.min(lim.max_mapped),
                        dirty: k.dirty_for_balance(),
                    });
                }
            }
            Stage::Icache | Stage::DcachePrune => {
                let share = k.mm.cached_share(k.dentries_unused() + k.inodes_unused());
                if self.stage == Stage::DcachePrune && self.plan.0 > 0 {
                    // The flag-clearing walk: skips only.
                    k.apply_prune_dcache(done, 0, share);
                    self.plan.0 = 0;
                    if cut {
                        self.dcache_left = Some(self.plan.1);
                        self.stage = Stage::Dcache;
                    }
                } else {
                    let (skipped, pruned) = self.plan;
                    let sk = (skipped * done).checked_div(pruned).unwrap_or(0);
                    k.apply_prune_dcache(sk, done, share);
                    // kmem_cache_shrink(dentry_cache) hands the slabs back, but shrink_caches
                    // ignores what shrink_dcache_memory returns (2.4.17/2.4.18): the call's
                    // goal is no nearer, and it goes on to the next priority.
                    k.mm.free_slab(done * DENTRY_BYTES);
                    if cut {
                        self.dcache_left = Some(pruned - done);
                        self.stage = Stage::Dcache;
                    }
                }
            }
            Stage::Dispose if cut => {
                // prune_icache's lock-break (low-latency): the walk stops and what it found
                // goes to dispose_list. Resuming it would re-walk the inodes it skipped (those
                // with cached pages stay in place), and with a goal above what is freeable
                // every resumed walk would be cut again before the end: a livelock the
                // low-latency kernel did not show (seed 000's run completed).
                let (visited, freed) = self.plan;
                let found = (freed * done).checked_div(visited).unwrap_or(0);
                self.plan = (done, found);
            }
            Stage::NextPriority => {
                k.apply_prune_icache(done);
                k.mm.free_slab(done * INODE_BYTES);
                if cut {
                    // Preempted, or cut at dispose_list's point: the inodes prune_icache took
                    // off the list are still to be freed; the loop goes on after schedule().
                    self.plan.1 -= done.min(self.plan.1);
                    self.stage = Stage::Dispose;
                }
            }
            _ => {}
        }
        self.swap_mm = None;
    }
}

/// `swap_out_mm`: walk the address space's PTEs under its page_table_lock, clearing young
/// bits and swapping out old pages (each through get_swap_page -> the swap-slot allocator,
/// under swap_list_lock, with the page_table_lock still held).
struct SwapOutMm {
    mm: u32,
    scan: u64,
    stage: u8,
}

impl<K: MmK> Path<K> for SwapOutMm {
    fn name(&self) -> &'static str {
        "swap_out_mm"
    }
    fn next(&mut self, k: &mut K, _cx: &Ctx) -> Step {
        self.stage += 1;
        match self.stage {
            1 => LoopStep::locked(
                "swap_out_pmd",
                self.scan,
                k.c.swap_scan_pte,
                Lock::PageTable,
                smallvec![point(Point::SwapOutPmd, 4)],
                true,
            ),
            2 => {
                // The old pages found: allocate their slots. The allocator's scan is charged
                // per swap_map entry (or tree node) read, all under the locks.
                let Some(r) = k.mm.mms.get(&self.mm) else {
                    return Step::Done;
                };
                let old = (r.rss - r.young.min(r.rss)).min(SWAP_CLUSTER_MAX);
                let mut entries: u64 = 0;
                let mut longest: u64 = 0;
                for _ in 0..old {
                    match k.mm.swap_out_page(self.mm) {
                        Some(w) => {
                            entries += w.entries;
                            longest = longest.max(w.max_locked);
                        }
                        None => break,
                    }
                }
                let ns: Nanos = entries * k.c.swap_map_entry + old * k.c.swap_out_page;
                let _ = longest;
                crate::kernel::path::Work::locked("scan_swap_map", ns, Lock::SwapList, false)
            }
            _ => Step::Done,
        }
    }
    fn advanced(&mut self, k: &mut K, _cx: &Ctx, done: u64) {
        if self.stage == 1 {
            if let Some(r) = k.mm.mms.get_mut(&self.mm) {
                // Young pages met lose their bit, and try_to_swap_out's mark_page_accessed
                // activates them (do_anonymous_page left them referenced).
                let cleared = (done * r.young / r.rss.max(1)).min(r.young);
                r.young -= cleared;
                k.mm.activate_anon(self.mm, cleared);
            }
            if done < self.scan {
                // Lock-break (low-latency): the scan resumes from mm->swap_address later.
                self.stage = 3;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::state::FsState;

    use crate::cpu::tests::{kstate, run_to_sleep};
    use crate::kernel::path::{Ctx, Step};

    /// Memory filled with one file's cache, all of it dirty or all of it clean.
    fn filled(dirty: bool) -> FsState {
        let mut k = kstate();
        let n = k.mm.free - k.mm.pages_min;
        let f = k.mm.create_file(n);
        k.mm.add_pages(f, 0, n);
        if dirty {
            k.buf.dirty(f, 1, n, 0, 0);
        }
        k
    }

    #[test]
    fn reclaim_sleeps_on_a_buffer_it_wrote_earlier() {
        let mut k = filled(true);
        // Priority 6 meets only dirty pages, writes the oldest buffers and goes on; at
        // priority 5 the scan meets them still locked and waits for the first.
        let sleep = run_to_sleep(&mut k, try_to_free_pages());
        let Some(Chan::Io(id)) = sleep else {
            panic!("no wait on the launder buffer: {sleep:?}")
        };
        assert_eq!(k.disk.req_of_seq(0), Some(id));
        // sync_page_buffers refiled them to BUF_LOCKED, where wait_for_buffers walks.
        assert_eq!(k.buf.locked_list_first_inflight(), Some(0));
        assert!(k.buf.nr_locked_list() >= SWAP_CLUSTER_MAX);
    }

    /// Run a reclaim call over memory full of idle anonymous pages and 10,000 freeable
    /// unused inodes, cutting its first `dispose_list` loop half-way if `cut` (preemption or
    /// a point); returns the inodes left unused and the dispose_list items run.
    fn icache_reclaim(cut: bool) -> (u64, u64) {
        let mut k = kstate();
        let n = k.mm.free - k.mm.pages_min;
        k.mm.grow(7, n);
        k.dcache.set_inodes_unused(10_000);
        let mut p = try_to_free_pages();
        let cx = Ctx { now: 0, pid: 1 };
        let (mut disposed, mut cut_left) = (0, cut);
        for _ in 0..10_000 {
            match p.next(&mut k, &cx) {
                Step::Loop(l) if l.func == "dispose_list" => {
                    let done = if std::mem::take(&mut cut_left) {
                        l.items / 2
                    } else {
                        l.items
                    };
                    disposed += done;
                    p.advanced(&mut k, &cx, done);
                }
                Step::Loop(l) => p.advanced(&mut k, &cx, l.items),
                Step::Work(_) | Step::Block(_) => {}
                Step::Done => return (k.dcache.inodes_unused(), disposed),
            }
        }
        panic!("reclaim did not finish")
    }

    #[test]
    fn a_cut_dispose_list_goes_on_until_every_pruned_inode_is_freed() {
        let whole = icache_reclaim(false);
        assert!(whole.1 > 0, "no inode was pruned: {whole:?}");
        assert_eq!(icache_reclaim(true), whole);
    }

    #[test]
    fn reclaim_over_clean_cache_does_not_sleep() {
        let mut k = filled(false);
        assert_eq!(run_to_sleep(&mut k, try_to_free_pages()), None);
        assert!(k.buf.launder_inflight().is_none());
    }
}
