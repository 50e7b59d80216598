//! Page reclaim of 2.6.9 (mm/vmscan.c, read in 2.6.11 `Antonio-Zhou/Linux-2.6.11`, which
//! keeps 2.6.9's structure; seed 003; kernel-facts.md "The 2004 voluntary-preempt patch"):
//!
//! ```text
//! shrink_zone(zone, sc):                       priority DEF_PRIORITY 12 .. 0
//!     nr_active   = (zone->nr_active   >> priority) + 1
//!     nr_inactive = (zone->nr_inactive >> priority) + 1
//!     while (nr_active || nr_inactive)          in SWAP_CLUSTER_MAX (32) batches:
//!         refill_inactive_zone: isolate under zone->lru_lock (irqs off), then per page
//!             cond_resched(); page_referenced() -> back to the active or to the inactive list
//!         shrink_cache: isolate 32 inactive pages under zone->lru_lock (irqs off), drop it,
//!             shrink_list: per page cond_resched(); page_referenced() -> activate;
//!                 PageAnon && !PageSwapCache: add_to_swap() -> get_swap_page()
//!                     (swap_list_lock + swap_device_lock: scan_swap_map), else activate;
//!                 try_to_unmap() (rmap, the mm's page_table_lock); pageout() ->
//!                 swap_writepage(); clean page-cache pages are freed.
//! kswapd0: balance_pgdat: priorities 12 .. 0 until free pages reach pages_high.
//! direct reclaim (try_to_free_pages): until SWAP_CLUSTER_MAX pages are reclaimed;
//!     blk_congestion_wait(WRITE, HZ/10) after a priority below DEF_PRIORITY - 2 fell short;
//!     out_of_memory() when priority 0 fell short too ([`crate::mm::oom_kill`]).
//! ```
//!
//! Every `get_swap_page` is a critical section of its own: the slot comes from the
//! `latlab-swap` allocator the variant names, and the swap_map entries it read are charged
//! under `swap_list_lock` as `scan_swap_map`.
//!
//! Simplified (docs/fidelity.md, "Seed 003"): one zone (the box's low memory); the
//! `nr_scan_active`/`nr_scan_inactive` carries between calls are not kept (a batch count
//! below 32 still makes one batch); refill_inactive_zone keeps mapped pages on the active
//! list unless `reclaim_mapped` ([`reclaim_mapped`]: swap_tendency = mapped_ratio / 2 +
//! distress + vm_swappiness >= 100, distress from the last pass's priority), and a new
//! anonymous page starts on the active list (`do_anonymous_page` -> `lru_cache_add_active`),
//! but a mapped page's `page_referenced` is not tested there; `page_referenced` is the address space's
//! share of pages whose young bit is set; a swapped page is freed when its write is
//! submitted (the kernel frees it on a later pass, once the write completed); under
//! `rmap-2.6.9` dirty page-cache pages are left for the writeback the variant names.
//!
//! `rmap-2.6.17` (seed 001's kernels; 2.6.17/2.6.18 mm/vmscan.c, read in
//! `bronson/linux-2.6.18.8-ovz-xen`; docs/research/writeback-2.6.17.md section 8) adds what
//! 2.6.17 does with page-cache pages that are not clean:
//!
//! ```text
//! shrink_page_list, per page:
//!     PageWriteback -> keep (back to the inactive list's young end)
//!     PageDirty -> pageout() if may_write_to_queue(bdi):
//!         PF_SWAPWRITE (kswapd) || !bdi_write_congested(bdi) || bdi == current->backing_dev_info
//!         (generic_file_buffered_write sets it: the writer's own reclaim writes its disk's
//!         pages into a congested queue); clear_page_dirty_for_io, ->writepage
//!         (ext3_ordered_writepage, WB_SYNC_NONE; submit_bh sleeps in get_request_wait when
//!         the queue has no request); the page stays, under writeback -> keep
//!     otherwise keep
//! shrink_zone: ... throttle_vm_writeout(): while nr_writeback > dirty_thresh * 1.1,
//!     blk_congestion_wait(WRITE, HZ/10)
//! try_to_free_pages, after a priority that fell short:
//!     total_scanned > SWAP_CLUSTER_MAX * 3/2: wakeup_pdflush(total_scanned)
//!     priority < DEF_PRIORITY - 2: blk_congestion_wait(WRITE, HZ/10)
//! ```
//!
//! The model's inactive cache keeps its clean pages oldest, then the pages under writeback,
//! then the dirty ones (the writeback order is the dirtying order), then the pages under
//! writeback that reclaim already moved to the young end (`Mm::writeback_scanned_to`): of the
//! pages a batch meets past the clean ones, the writeback pages not yet rotated come first,
//! then dirty ones. Not kept: the
//! PG_referenced that `generic_file_buffered_write`'s `mark_page_accessed` leaves on a
//! written page (2.6.17 keeps a referenced dirty page once, clearing the bit; the model
//! writes it at the first meeting).

use crate::dev::disk::Dir;
use crate::kernel::catalog::Point;
use crate::kernel::lock::Lock;
use crate::kernel::path::{point, Ctx, LoopStep, Nested, Path, Step, Work};
use crate::mm::fs_ops::Handed;
use crate::mm::lru::Run;
use crate::mm::page_writeback::{blk_congestion_wait, get_dirty_limits, jiffies_ns};
use crate::mm::pdflush::{pdflush_operation, Job};
use crate::mm::state::MmK;
use crate::mm::ScanLimits;
use smallvec::smallvec;
use std::collections::VecDeque;

/// `DEF_PRIORITY` (2.6.9 include/linux/mmzone.h).
pub const DEF_PRIORITY: u64 = 12;
/// `vm_swappiness`'s default (mm/vmscan.c: `int vm_swappiness = 60;`).
const VM_SWAPPINESS: u64 = 60;

/// `refill_inactive_zone`'s `reclaim_mapped` (2.6.9-2.6.17 mm/vmscan.c): `distress = 100 >>
/// zone->prev_priority; mapped_ratio = (nr_mapped * 100) / total_memory; swap_tendency =
/// mapped_ratio / 2 + distress + vm_swappiness; if (swap_tendency >= 100) reclaim_mapped = 1`.
/// The model's mapped pages are its anonymous ones (it maps no file).
fn reclaim_mapped(mm: &crate::mm::Mm) -> bool {
    let distress = 100u64 >> mm.prev_priority.min(63);
    let mapped_ratio = mm.anon * 100 / mm.total.max(1);
    mapped_ratio / 2 + distress + VM_SWAPPINESS >= 100
}
/// `SWAP_CLUSTER_MAX`.
pub const SWAP_CLUSTER_MAX: u64 = 32;
/// First 4 KiB block of the swap partition: after a 4 GiB root partition (an estimate of
/// the era's installer layout: root, then swap).
pub const SWAP_FIRST_BLOCK: u64 = 1 << 20;

/// Who reclaims, and until when.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Goal {
    /// kswapd0's `balance_pgdat`: until free pages reach pages_high.
    Kswapd,
    /// A task's `try_to_free_pages`: until SWAP_CLUSTER_MAX pages are reclaimed.
    Direct,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    /// Start a priority: size its refill and shrink work.
    Priority,
    /// The next refill batch, or on to shrinking.
    Refill,
    /// The next shrink_cache batch.
    Shrink,
    /// shrink_list over the isolated batch.
    List,
    /// The priority is done.
    Next,
}

/// One page of the isolated batch, as shrink_list will treat it.
#[derive(Clone, Copy, Debug)]
enum Page {
    /// An anonymous page of `mm` to swap out.
    SwapOut(u32),
    /// `n` page-cache pages of the batch (clean ones freed, dirty ones rotated).
    Cache(u64),
}

/// Steps of one swap-out still to hand out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Out {
    Referenced,
    Lock,
    /// After an unlocked scan: take the lock to claim the slot.
    Claim,
    Scan,
    Unmap,
    Write,
}

pub struct ShrinkZones<K> {
    goal: Goal,
    priority: u64,
    reclaimed: u64,
    stage: Stage,
    active_left: u64,
    inactive_left: u64,
    /// The refill batch just handed out (pages to move).
    /// The refill batch under way: pages to move, and whether mapped pages may move.
    refill: Option<(u64, bool)>,
    batch: VecDeque<Page>,
    /// The swap-out under way: its address space, slot and next step.
    out: Option<(u32, u64, Out, latlab_swap::Work)>,
    /// Slots written this batch (one request per contiguous run, as the elevator merges).
    writes: Vec<u64>,
    /// The cache pages of the batch just handed to shrink_list.
    cache: Option<u64>,
    /// rmap-2.6.9: a priority below DEF_PRIORITY - 2 fell short, so wait for the disk once;
    /// rmap-2.6.17 (`nap_26`): this priority's waits are done.
    congested: bool,
    /// `current->backing_dev_info` is the disk's: a buffered write's direct reclaim.
    writer: bool,
    /// rmap-2.6.17: dirty pages of the batch still to hand to pageout().
    pageout: u64,
    /// rmap-2.6.17: pages just submitted whose writepage CPU work is still to run.
    pageout_cpu: u64,
    /// Pages isolated so far (try_to_free_pages' `total_scanned`).
    scanned: u64,
    /// rmap-2.6.17's `blk_congestion_wait` naps.
    nap: Nested<K>,
    /// rmap-2.6.17: shrink_zone's throttle_vm_writeout is done for this priority.
    throttled: bool,
}

impl<K: MmK> ShrinkZones<K> {
    fn new(goal: Goal, writer: bool) -> Box<Self> {
        Box::new(ShrinkZones {
            goal,
            priority: DEF_PRIORITY,
            reclaimed: 0,
            stage: Stage::Priority,
            active_left: 0,
            inactive_left: 0,
            refill: None,
            batch: VecDeque::new(),
            out: None,
            writes: Vec::new(),
            cache: None,
            congested: false,
            writer,
            pageout: 0,
            pageout_cpu: 0,
            scanned: 0,
            nap: Nested::default(),
            throttled: false,
        })
    }

    /// 2.6.17's `pageout()` of the batch's dirty pages, oldest first, while
    /// `may_write_to_queue()` allows: kswapd (PF_SWAPWRITE) and the writer on its own queue
    /// always, any other task while the queue is not congested. A run of pages goes to the
    /// queue as the loop reaches them (merged there into requests), each page's
    /// `ext3_ordered_writepage` then runs; with no free request the task sleeps in
    /// `get_request_wait`. Pages not written stay dirty on the list (`keep`).
    fn pageout_step(&mut self, k: &mut K, cx: &Ctx) -> Option<Step> {
        if self.pageout_cpu > 0 {
            return Some(LoopStep::plain(
                "pageout",
                self.pageout_cpu,
                k.c.writepage,
                smallvec![point(Point::ShrinkList, 1)],
            ));
        }
        if self.pageout == 0 {
            return None;
        }
        let swapwrite = self.goal == Goal::Kswapd || self.writer;
        let Some((file, block)) = k.oldest_dirty_page() else {
            self.pageout = 0;
            return None;
        };
        let mut n = self.pageout;
        if !swapwrite {
            // bdi_write_congested() before each page.
            n = n.min(k.disk.uncongested_room(block));
            if n == 0 {
                self.pageout = 0;
                return None;
            }
        }
        let written = match k.writepage_run(cx, file, block, n) {
            Handed::Sleep(chan) => return Some(Step::Block(chan)),
            Handed::Wrote(written) => written,
            Handed::Nothing => {
                self.pageout = 0;
                return None;
            }
        };
        k.mm.pageouts += written;
        k.mm.writeback_scanned_to = k.buf_next_seq();
        self.pageout -= written.min(self.pageout);
        self.pageout_cpu = written;
        self.pageout_step(k, cx)
    }

    /// 2.6.17's waits after a priority fell short (rmap-2.6.17): `throttle_vm_writeout()`
    /// at the end of shrink_zone, then try_to_free_pages' `wakeup_pdflush(total_scanned)`
    /// and its `blk_congestion_wait(WRITE, HZ/10)` below DEF_PRIORITY - 2 (balance_pgdat
    /// naps alike). Returns the nap, if any.
    fn nap_26(&mut self, k: &mut K, cx: &Ctx) -> Option<Step> {
        let ten = jiffies_ns(k, 10);
        if !self.throttled {
            let l = get_dirty_limits(k);
            if l.nr_writeback > l.dirty + l.dirty / 10 {
                self.nap.start(blk_congestion_wait(ten));
                return self.nap.next(k, cx);
            }
            self.throttled = true;
        }
        if self.congested {
            return None;
        }
        self.congested = true;
        if self.goal == Goal::Direct && self.scanned > SWAP_CLUSTER_MAX + SWAP_CLUSTER_MAX / 2 {
            pdflush_operation(
                k,
                Job::Background {
                    min_pages: self.scanned,
                },
                cx.now,
            );
        }
        if self.priority < DEF_PRIORITY - 2 {
            self.nap.start(blk_congestion_wait(ten));
            return self.nap.next(k, cx);
        }
        None
    }

    /// The pass ends: `zone->prev_priority = zone->temp_priority`, the priority it reached.
    fn finish(&self, k: &mut K) -> Step {
        k.mm.prev_priority = self.priority;
        Step::Done
    }

    fn done(&self, k: &K) -> bool {
        match self.goal {
            Goal::Kswapd => k.mm.free >= k.mm.pages_high,
            Goal::Direct => self.reclaimed >= SWAP_CLUSTER_MAX,
        }
    }

    /// shrink_cache's isolation of the inactive list's oldest `n` pages, as shrink_list
    /// will treat them: anonymous pages whose young bit is set are activated now
    /// (page_referenced), the others queued for swap-out, page-cache pages counted.
    fn isolate(&mut self, k: &mut K, n: u64) -> u64 {
        let mut met: Vec<(Option<u32>, u64)> = Vec::new();
        let mut left = n;
        for (r, live) in k.mm.inactive_runs() {
            if left == 0 {
                break;
            }
            let take = live.min(left);
            left -= take;
            match r {
                Run::Anon { mm, .. } => met.push((Some(mm), take)),
                Run::File { .. } => met.push((None, take)),
            }
        }
        for (owner, n) in met {
            match owner {
                Some(mm) => {
                    // page_referenced(): the young share, or every page of the swap token's
                    // holder when another reclaims ([`crate::mm::thrash`]).
                    let young = if k.mm.token.protects(mm, k.current_mm) {
                        n
                    } else {
                        k.mm.mms
                            .get(&mm)
                            .map_or(0, |r| (n * r.young).div_ceil(r.rss.max(1)).min(n))
                    };
                    if young > 0 {
                        if let Some(r) = k.mm.mms.get_mut(&mm) {
                            r.young -= young.min(r.young);
                        }
                        k.mm.activate_anon(mm, young);
                    }
                    for _ in young..n {
                        self.batch.push_back(Page::SwapOut(mm));
                    }
                }
                None => self.batch.push_back(Page::Cache(n)),
            }
        }
        n - left
    }

    /// Submit this batch's swap writes, one request per run of consecutive slots (as the
    /// elevator merges them); with the queue full, sleep in `get_request_wait` (2.6's queue:
    /// woken by a freed request, then batching; 2.4's: until a request completes). Returns
    /// the sleep, if any.
    fn submit_writes(&mut self, k: &mut K, cx: &Ctx) -> Option<Step> {
        self.writes.sort_unstable();
        while !self.writes.is_empty() {
            let run = 1 + self.writes.windows(2).take_while(|w| w[1] == w[0] + 1).count();
            let block = SWAP_FIRST_BLOCK + self.writes[0];
            if let Some(chan) = k.disk.get_request_wait(Dir::Write, block, run as u64, cx.pid, cx.now) {
                return Some(Step::Block(chan));
            }
            k.disk_submit_by(
                Dir::Write,
                block,
                run as u64,
                crate::dev::disk::Payload::Other,
                cx.pid,
                cx.now,
            );
            self.writes.drain(..run);
        }
        None
    }

    /// The next step of the swap-out under way, if any.
    fn swap_out_step(&mut self, k: &mut K) -> Option<Step> {
        let (mm, slot, at, work) = self.out?;
        let c = &k.c;
        let (step, next) = match at {
            // The loop's cond_resched() and page_referenced().
            Out::Referenced => (
                LoopStep::plain(
                    "shrink_list",
                    1,
                    c.shrink_list_page,
                    smallvec![point(Point::ShrinkList, 1)],
                ),
                Some(Out::Lock),
            ),
            Out::Lock => {
                if work.lock_acquisitions == 0 {
                    // A swap-cache page keeps its slot: no get_swap_page.
                    self.out = Some((mm, slot, Out::Unmap, work));
                    return self.swap_out_step(k);
                }
                let unlocked = work.entries - work.max_locked.min(work.entries);
                if unlocked > 0 {
                    // An allocator that scans with its lock dropped (2.6.14's), with its
                    // cond_resched() every LATENCY_LIMIT entries.
                    self.out = Some((mm, slot, Out::Claim, work));
                    return Some(LoopStep::plain(
                        "scan_swap_map",
                        unlocked,
                        c.swap_map_entry,
                        smallvec![point(Point::ScanSwapMap, latlab_swap::lockless::LATENCY_LIMIT)],
                    ));
                }
                // swap_list_lock, then the device's lock, both kept for the scan.
                (
                    Work::locked("get_swap_page", c.get_swap_page, Lock::SwapList, true),
                    Some(Out::Scan),
                )
            }
            Out::Claim => (
                Work::locked("get_swap_page", c.get_swap_page, Lock::SwapList, true),
                Some(Out::Scan),
            ),
            // The allocator's work done under the lock (all of it for the 2.4 scan and
            // Morton's), released at its end.
            Out::Scan => (
                Work::locked(
                    "scan_swap_map",
                    work.max_locked * c.swap_map_entry,
                    Lock::SwapList,
                    false,
                ),
                Some(Out::Unmap),
            ),
            Out::Unmap => (
                Work::locked("try_to_unmap", c.try_to_unmap, Lock::PageTable, false),
                Some(Out::Write),
            ),
            Out::Write => {
                self.writes.push(slot);
                self.reclaimed += 1;
                (Work::plain("swap_writepage", c.swap_writepage), None)
            }
        };
        self.out = next.map(|n| (mm, slot, n, work));
        Some(step)
    }

    fn next_step(&mut self, k: &mut K, cx: &Ctx) -> Step {
        loop {
            if let Some(s) = self.nap.next(k, cx) {
                return s;
            }
            if let Some(s) = self.swap_out_step(k) {
                return s;
            }
            if let Some(s) = self.pageout_step(k, cx) {
                return s;
            }
            match self.stage {
                Stage::Priority => {
                    if self.done(k) {
                        return self.finish(k);
                    }
                    // shrink_caches / balance_pgdat: `zone->temp_priority = priority; if
                    // (zone->prev_priority > priority) zone->prev_priority = priority`.
                    k.mm.prev_priority = k.mm.prev_priority.min(self.priority);
                    self.active_left = (k.mm.nr_active() >> self.priority) + 1;
                    self.inactive_left = (k.mm.inactive_pages() >> self.priority) + 1;
                    self.stage = Stage::Refill;
                    if self.priority == DEF_PRIORITY {
                        k.mm.reclaims += 1;
                    }
                }
                Stage::Refill => {
                    self.stage = Stage::Shrink;
                    let n = self.active_left.min(SWAP_CLUSTER_MAX);
                    if n == 0 || k.mm.nr_active() == 0 {
                        continue;
                    }
                    self.active_left -= n;
                    let mapped = reclaim_mapped(&k.mm);
                    self.refill = Some((n, mapped));
                    return LoopStep::plain(
                        "refill_inactive_zone",
                        k.mm.plan_refill(n, mapped),
                        k.c.isolate_page + k.c.refill_page,
                        smallvec![point(Point::RefillInactiveZone, 1)],
                    );
                }
                Stage::Shrink => {
                    let n = self.inactive_left.min(SWAP_CLUSTER_MAX);
                    if n == 0 || k.mm.inactive_pages() == 0 {
                        let refill = self.active_left > 0 && k.mm.nr_active() > 0;
                        self.stage = if refill { Stage::Refill } else { Stage::Next };
                        continue;
                    }
                    self.inactive_left -= n;
                    let got = self.isolate(k, n);
                    self.scanned += got;
                    self.stage = Stage::List;
                    return Step::Work(Work {
                        func: "shrink_cache",
                        ns: got * k.c.isolate_page,
                        lock: Some(Lock::ZoneLru),
                        irqs_off: true,
                        hold: false,
                    });
                }
                Stage::List => {
                    match self.batch.pop_front() {
                        Some(Page::SwapOut(mm)) => match k.mm.swap_out_26(mm) {
                            Some((slot, work)) => self.out = Some((mm, slot, Out::Referenced, work)),
                            // add_to_swap failed (swap full: get_swap_page returns at its
                            // nr_swap_pages test): activate_locked, the page examined all
                            // the same.
                            None => {
                                // Swap stays full for the rest of the batch: every page
                                // without a swap-cache slot fails alike (one loop for them),
                                // activated page after page, counted per address space.
                                let (mut m, mut pages, mut n) = (mm, 1, 0);
                                loop {
                                    while let Some(&Page::SwapOut(next)) = self.batch.front() {
                                        if next != m {
                                            break;
                                        }
                                        self.batch.pop_front();
                                        pages += 1;
                                    }
                                    k.mm.activate_anon_each(m, pages);
                                    n += pages;
                                    match self.batch.front() {
                                        Some(&Page::SwapOut(next))
                                            if k.mm.mms.get(&next).is_none_or(|r| r.swap_cache.is_empty()) =>
                                        {
                                            self.batch.pop_front();
                                            (m, pages) = (next, 1);
                                        }
                                        _ => break,
                                    }
                                }
                                return LoopStep::plain(
                                    "shrink_list",
                                    n,
                                    k.c.shrink_list_page + k.c.get_swap_page,
                                    smallvec![point(Point::ShrinkList, 1)],
                                );
                            }
                        },
                        Some(Page::Cache(n)) => {
                            self.cache = Some(n);
                            return LoopStep::plain(
                                "shrink_list",
                                n,
                                k.c.shrink_list_page,
                                smallvec![point(Point::ShrinkList, 1)],
                            );
                        }
                        None => {
                            if let Some(sleep) = self.submit_writes(k, cx) {
                                return sleep;
                            }
                            self.stage = if self.done(k) { Stage::Next } else { Stage::Refill };
                        }
                    }
                }
                Stage::Next => {
                    if self.done(k) {
                        return self.finish(k);
                    }
                    if k.reclaim.wakes_pdflush_and_naps() {
                        if let Some(s) = self.nap_26(k, cx) {
                            return s;
                        }
                    } else if self.priority < DEF_PRIORITY - 2 && !self.congested {
                        // blk_congestion_wait(WRITE, HZ/10): until a request completes.
                        if let Some(chan) = k.disk.oldest() {
                            self.congested = true;
                            return Step::Block(chan);
                        }
                    }
                    self.congested = false;
                    self.throttled = false;
                    if self.priority == 0 {
                        // try_to_free_pages fell short at every priority: out_of_memory()
                        // (kswapd's balance_pgdat never calls it).
                        if self.goal == Goal::Direct && k.reclaim.oom.out_of_memory(cx.now) {
                            k.out.push(crate::kernel::state::KReq::OomKill);
                        }
                        return self.finish(k);
                    }
                    self.priority -= 1;
                    self.stage = Stage::Priority;
                }
            }
        }
    }
}

impl<K: MmK> Path<K> for ShrinkZones<K> {
    fn name(&self) -> &'static str {
        match self.goal {
            Goal::Kswapd => "balance_pgdat",
            Goal::Direct => "try_to_free_pages",
        }
    }
    fn next(&mut self, k: &mut K, cx: &Ctx) -> Step {
        self.next_step(k, cx)
    }
    fn advanced(&mut self, k: &mut K, _cx: &Ctx, done: u64) {
        if self.pageout_cpu > 0 {
            self.pageout_cpu -= done.min(self.pageout_cpu);
            return;
        }
        if let Some((n, mapped)) = self.refill.take() {
            k.mm.refill_inactive(n, done, mapped);
            return;
        }
        if let Some(n) = self.cache.take() {
            // The batch's page-cache pages, oldest first: clean ones are freed, dirty ones
            // go back to the list (`keep`). Under rmap-2.6.17 the pages not clean are
            // PG_dirty and PG_writeback ones (2.6's counts), and the dirty ones go to
            // pageout() before they are kept.
            let pageout = k.reclaim.writes_dirty_pages();
            let dirty = if pageout {
                k.nr_dirty() + k.nr_writeback()
            } else {
                k.dirty_for_balance()
            };
            let lim = ScanLimits {
                want: n,
                max_scan: done.min(n),
                max_mapped: 0,
                dirty,
            };
            let sc = k.apply_shrink(&lim, done.min(n));
            self.reclaimed += sc.freed;
            if pageout {
                // Past the clean pages: the writeback pages not yet rotated, then the dirty.
                let from = k.mm.writeback_scanned_to.max(k.buf_done_hi());
                let writeback = sc.dirty.min(k.buf_next_seq() - from);
                k.mm.writeback_kept += writeback;
                k.mm.writeback_scanned_to = from + writeback;
                self.pageout = sc.dirty - writeback;
            }
        }
    }
}

/// kswapd0's pass: `balance_pgdat` until free pages reach pages_high.
pub fn balance_pgdat<K: MmK>() -> Box<dyn Path<K>> {
    ShrinkZones::new(Goal::Kswapd, false)
}

/// A task's direct reclaim: `try_to_free_pages` until SWAP_CLUSTER_MAX pages are reclaimed;
/// `writer`: the task is in a buffered write to the disk (`current->backing_dev_info`).
pub fn try_to_free_pages<K: MmK>(writer: bool) -> Box<dyn Path<K>> {
    ShrinkZones::new(Goal::Direct, writer)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::tests::{kstate, run_to_sleep};
    use crate::fs::buffer::Via;
    use crate::fs::state::FsState;
    use crate::kernel::path::Chan;

    #[test]
    fn mapped_pages_leave_the_active_list_only_when_the_swap_tendency_reaches_100() {
        let mut k = kstate();
        // 10 % of memory mapped: 5 + 60 + distress; no distress before any reclaim. And 79 %:
        // 39 + 60, still short.
        k.mm.anon = k.mm.total / 10;
        k.mm.prev_priority = DEF_PRIORITY;
        assert!(!reclaim_mapped(&k.mm));
        let ten = k.mm.anon;
        k.mm.anon = k.mm.total * 80 / 100 - 1;
        assert!(!reclaim_mapped(&k.mm));
        k.mm.anon = ten;
        // A pass that had to go down to priority 1: distress 50, 115.
        k.mm.prev_priority = 1;
        assert!(reclaim_mapped(&k.mm));
        // 81 % mapped (the swap storm): 40 + 60 with no distress at all.
        k.mm.anon = k.mm.total * 82 / 100;
        k.mm.prev_priority = DEF_PRIORITY;
        assert!(reclaim_mapped(&k.mm));
    }

    #[test]
    fn a_reclaim_pass_leaves_prev_priority_at_the_priority_it_reached() {
        let mut k = anon_full();
        k.reclaim = crate::mm::reclaim::PageReclaim::new(crate::mm::reclaim::Kind::Rmap269);
        k.mm.prev_priority = DEF_PRIORITY;
        let _ = run_to_sleep(&mut k, try_to_free_pages(false));
        assert!(k.mm.prev_priority < DEF_PRIORITY, "{}", k.mm.prev_priority);
    }

    /// Memory filled with idle anonymous pages of two address spaces.
    fn anon_full() -> FsState {
        let mut k = kstate();
        let n = k.mm.free - k.mm.pages_min;
        k.mm.grow(3, n / 2);
        k.mm.grow(4, n - n / 2);
        for mm in [3, 4] {
            k.mm.mms.get_mut(&mm).expect("mm").young = 0;
        }
        k
    }

    /// rmap-2.6.17 over page-based writeback and 2.6's queue: memory filled with one file's
    /// dirty cache, its oldest `writeback` pages submitted by task 99 (under writeback);
    /// the queue congested by task 99's writes elsewhere if `congest`.
    fn dirty_full(writeback: u64, congest: bool) -> FsState {
        let mut k = kstate();
        k.reclaim = crate::mm::reclaim::PageReclaim::new(crate::mm::reclaim::Kind::Rmap2617);
        let w = k.reclaim.watermarks(k.mm.total);
        k.mm.set_watermarks(w);
        k.writeback = crate::mm::writeback::DirtyWriteback::pdflush_for_tests();
        k.disk.use_26_block_layer(250, false);
        let n = k.mm.free - k.mm.pages_min;
        let f = k.mm.create_file(n);
        k.mm.add_pages(f, 0, n);
        let block = k.mm.files[&f].block;
        k.buf.dirty(f, 1, n, block, 0);
        if writeback > 0 {
            let b = k.buf.take(writeback, None).expect("dirty pages");
            crate::fs::flush::submit(&mut k, &b, Via::Writer, 99, 0);
        }
        let mut at = SWAP_FIRST_BLOCK;
        while congest && !k.disk.congested() {
            k.disk_submit_by(Dir::Write, at, 1, crate::dev::disk::Payload::Other, 99, 0);
            at += 2;
        }
        k
    }

    #[test]
    fn the_writers_reclaim_writes_its_dirty_pages_into_a_congested_queue_another_tasks_does_not() {
        // Another task's direct reclaim: may_write_to_queue() is false, nothing is written,
        // and it naps in blk_congestion_wait once below DEF_PRIORITY - 2.
        let mut k = dirty_full(0, true);
        let dirty = k.buf.nr_dirty();
        let sleep = run_to_sleep(&mut k, try_to_free_pages(false));
        assert!(matches!(sleep, Some(Chan::Congestion(_))), "{sleep:?}");
        assert_eq!((k.mm.pageouts, k.buf.nr_dirty()), (0, dirty));
        // The writer's own (current->backing_dev_info is the disk's): pageout() writes every
        // dirty page it meets into the congested queue (merged into a few requests), then
        // naps alike: the pages are under writeback, none freed yet.
        let mut k = dirty_full(0, true);
        let sleep = run_to_sleep(&mut k, try_to_free_pages(true));
        assert!(matches!(sleep, Some(Chan::Congestion(_))), "{sleep:?}");
        assert!(k.mm.pageouts >= SWAP_CLUSTER_MAX, "{}", k.mm.pageouts);
        assert_eq!(k.buf.nr_dirty(), dirty - k.mm.pageouts);
        assert_eq!(k.buf.in_flight(), k.mm.pageouts);
    }

    #[test]
    fn pages_under_writeback_are_kept_and_the_dirty_ones_behind_them_written() {
        // The oldest 128 pages are under writeback: kswapd's first four batches keep them
        // (no page freed, none written), the fifth meets dirty pages and writes them.
        let mut k = dirty_full(4 * SWAP_CLUSTER_MAX, false);
        let free = k.mm.free;
        let mut p = balance_pgdat();
        let cx = Ctx { now: 0, pid: 2 };
        for _ in 0..10_000 {
            if k.mm.pageouts > 0 {
                break;
            }
            match p.next(&mut k, &cx) {
                Step::Loop(l) => p.advanced(&mut k, &cx, l.items),
                Step::Done | Step::Block(_) => break,
                Step::Work(_) => {}
            }
        }
        assert_eq!(k.mm.writeback_kept, 4 * SWAP_CLUSTER_MAX);
        assert_eq!(k.mm.free, free);
        assert!(k.mm.pageouts > 0);
        // Still under writeback, the kept pages are behind the scan now.
        assert_eq!(k.mm.writeback_scanned_to, k.buf.next_seq());
    }

    #[test]
    fn the_same_state_reclaims_the_same_way() {
        let run = || {
            let mut k = dirty_full(SWAP_CLUSTER_MAX, true);
            let sleep = run_to_sleep(&mut k, try_to_free_pages(true));
            (sleep, k.mm.pageouts, k.mm.writeback_kept, k.mm.free, k.buf.in_flight())
        };
        assert_eq!(run(), run());
    }

    #[test]
    fn direct_reclaim_swaps_out_old_anonymous_pages_through_get_swap_page() {
        let mut k = anon_full();
        let free = k.mm.free;
        let mut p = try_to_free_pages(false);
        let cx = Ctx { now: 0, pid: 1 };
        let mut scans = 0;
        for _ in 0..10_000 {
            match p.next(&mut k, &cx) {
                Step::Work(w) if w.func == "scan_swap_map" => {
                    assert_eq!(w.lock, Some(Lock::SwapList));
                    scans += 1;
                }
                Step::Loop(l) => p.advanced(&mut k, &cx, l.items),
                Step::Work(_) | Step::Block(_) => {}
                Step::Done => break,
            }
        }
        assert!(scans >= SWAP_CLUSTER_MAX, "{scans}");
        assert_eq!(k.mm.swap.used(), scans);
        assert_eq!(k.mm.free - free, scans);
        assert_eq!(k.mm.swapouts, scans);
    }

    #[test]
    fn a_page_back_from_swap_keeps_its_slot_until_swap_is_half_full() {
        let mut k = anon_full();
        assert_eq!(run_to_sleep(&mut k, try_to_free_pages(false)), None);
        let out = k.mm.mms[&3].swapped.len() as u64;
        assert!(out > 0);
        let used = k.mm.swap.used();
        assert_eq!(k.mm.swap_in(3, out), out);
        // Swap is far from half full: the slots stay, as the swap cache.
        assert_eq!(k.mm.swap.used(), used);
        assert_eq!(k.mm.mms[&3].swap_cache.len() as u64, out);
        // Out again: the same slots, no allocation.
        let (slot, work) = k.mm.swap_out_26(3).expect("a swap-cache slot");
        assert!(k.mm.mms[&3].swapped.contains(&slot));
        assert_eq!(work.entries, 0);
        assert_eq!(k.mm.swap.used(), used);
    }

    /// Direct reclaim by `current_mm` until it is done: the address spaces' pages swapped.
    fn reclaim_by(k: &mut FsState, current_mm: u32) -> (usize, usize) {
        k.current_mm = current_mm;
        assert_eq!(run_to_sleep(k, try_to_free_pages(false)), None);
        (k.mm.mms[&3].swapped.len(), k.mm.mms[&4].swapped.len())
    }

    #[test]
    fn the_swap_token_keeps_its_holders_pages_from_other_reclaimers_but_not_from_itself() {
        // Without the token mm 3's pages, the older, go first.
        let mut k = anon_full();
        let (three, four) = reclaim_by(&mut k, 4);
        assert!(three > 0 && four == 0, "{three} {four}");
        // mm 3 holds it: mm 4's reclaim, and kswapd's, pass over mm 3's pages.
        for reclaimer in [4, 0] {
            let mut k = anon_full();
            k.mm.token.grab(3, 1);
            let (three, four) = reclaim_by(&mut k, reclaimer);
            assert!(three == 0 && four > 0, "{reclaimer}: {three} {four}");
        }
        // The holder's own reclaim takes its own pages.
        let mut k = anon_full();
        k.mm.token.grab(3, 1);
        let (three, _) = reclaim_by(&mut k, 3);
        assert!(three > 0);
    }

    #[test]
    fn referenced_pages_are_activated_not_swapped() {
        let mut k = anon_full();
        for mm in [3, 4] {
            k.mm.reference(mm);
        }
        let active = k.mm.nr_active();
        let mut p = try_to_free_pages(false);
        let cx = Ctx { now: 0, pid: 1 };
        // The first batch meets only young pages: activated.
        for _ in 0..4 {
            if let Step::Loop(l) = p.next(&mut k, &cx) {
                p.advanced(&mut k, &cx, l.items);
            }
        }
        assert!(k.mm.nr_active() > active);
        assert_eq!(k.mm.swap.used(), 0);
    }
}
