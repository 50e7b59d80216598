//! `__alloc_pages` for the model's page-fault paths ([`Alloc`]), and swap-in: `do_swap_page` (2.6.9 mm/memory.c, mm/swap_state.c) for a task touching pages
//! that reclaim sent to swap. Each fault reads a cluster of `1 << page_cluster` slots
//! (`swapin_readahead`, page_cluster 3 on a box with more than 32 MiB: 8 pages) and sleeps
//! until the read completes; the pages then need memory (direct reclaim when short;
//! `__alloc_pages` naps `blk_congestion_wait(WRITE, HZ/50)` when reclaim freed nothing) and
//! are mapped, each slot freed when swap is more than half full (`vm_swap_full()` ->
//! `remove_exclusive_swap_page`), else kept as the swap cache.

use super::vmscan26::SWAP_FIRST_BLOCK;
use crate::dev::disk::{Dir, Payload};
use crate::kernel::catalog::Point;
use crate::kernel::path::{point, Chan, Ctx, LoopStep, Nested, Path, Step};
use crate::kernel::state::KReq;
use crate::mm::state::MmK;
use latlab_core::Nanos;
use smallvec::smallvec;

/// `1 << page_cluster`: pages read per fault (2.6.9 mm/swap.c `swap_setup`).
pub const READAHEAD_PAGES: u64 = 8;
/// `blk_congestion_wait(WRITE, HZ/50)` in 2.6.9's `__alloc_pages` before it retries after a
/// reclaim that freed nothing: 20 ms.
const ALLOC_RETRY_NS: Nanos = 20_000_000;

/// `__alloc_pages` for a path that needs `n` pages: wakes kswapd below pages_low, runs the
/// variant's direct reclaim when short, and under either 2.6 reclaim naps (HZ/50) when a reclaim
/// freed nothing before it tries again (2.4's allocator loops on reclaim without it).
pub struct Alloc<K> {
    sub: Nested<K>,
    reclaimed: bool,
    napped: bool,
}

impl<K> Default for Alloc<K> {
    fn default() -> Self {
        Alloc {
            sub: Nested::default(),
            reclaimed: false,
            napped: false,
        }
    }
}

impl<K: MmK> Alloc<K> {
    /// The step to run before `n` pages can be had, or None when they can now.
    pub fn need(&mut self, k: &mut K, cx: &Ctx, n: u64) -> Option<Step> {
        loop {
            if let Some(s) = self.sub.next(k, cx) {
                return Some(s);
            }
            if k.mm.low() {
                let pid = k.kthreads.kswapd();
                k.wake_kthread(pid);
            }
            if k.mm.can_alloc(n) {
                self.reclaimed = false;
                self.napped = false;
                return None;
            }
            if std::mem::take(&mut self.reclaimed) && k.reclaim.naps_after_reclaim() && !self.napped {
                self.napped = true;
                k.net_token += 1;
                let chan = Chan::Timer(u64::MAX - k.net_token);
                k.out.push(KReq::WakeAt {
                    at: cx.now + ALLOC_RETRY_NS,
                    chan,
                });
                return Some(Step::Block(chan));
            }
            self.napped = false;
            self.reclaimed = true;
            self.sub.start(k.reclaim.try_to_free_pages(false));
        }
    }

    /// Forward a loop's progress to the reclaim under way; false if none produced it.
    pub fn advanced(&mut self, k: &mut K, cx: &Ctx, done: u64) -> bool {
        self.sub.advanced(k, cx, done)
    }
}

/// A task touching its whole working set again: every page it has on swap comes back.
pub struct TouchWorkingSet<K> {
    mm: u32,
    /// Pages read and waiting for memory.
    pending: u64,
    alloc: Alloc<K>,
}

pub fn touch_working_set<K: MmK>(mm: u32) -> Box<dyn Path<K>> {
    Box::new(TouchWorkingSet {
        mm,
        pending: 0,
        alloc: Alloc::default(),
    })
}

impl<K: MmK> Path<K> for TouchWorkingSet<K> {
    fn name(&self) -> &'static str {
        "do_swap_page"
    }
    fn next(&mut self, k: &mut K, cx: &Ctx) -> Step {
        {
            if self.pending > 0 {
                if let Some(s) = self.alloc.need(k, cx, self.pending) {
                    return s;
                }
                return LoopStep::plain(
                    "do_swap_page",
                    self.pending,
                    k.c.swap_in_page,
                    smallvec![point(Point::AllocPages, 1)],
                );
            }
            let Some(r) = k.mm.mms.get(&self.mm) else {
                return Step::Done;
            };
            let Some(&slot) = r.swapped.last() else {
                k.mm.reference(self.mm);
                return Step::Done;
            };
            let n = (r.swapped.len() as u64).min(READAHEAD_PAGES);
            self.pending = n;
            // A major fault: grab_swap_token() (2.6.9's reclaim, [`crate::mm::thrash`]).
            if k.reclaim.uses_swap_token() {
                k.mm.token.grab(self.mm, cx.now);
            }
            let id = k.disk_submit(Dir::Read, SWAP_FIRST_BLOCK + slot, n, Payload::Other, cx.now);
            Step::Block(Chan::Io(id))
        }
    }
    fn advanced(&mut self, k: &mut K, cx: &Ctx, done: u64) {
        if self.alloc.advanced(k, cx, done) {
            return;
        }
        let n = k.mm.swap_in(self.mm, done.min(self.pending));
        self.pending -= n.min(self.pending);
        if n < done {
            // Memory went meanwhile: what is left waits for the next round.
            self.pending = self.pending.max(done - n).min(READAHEAD_PAGES);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::tests::kstate;
    use crate::fs::state::FsState;

    #[test]
    fn between_pages_min_and_pages_low_an_allocation_wakes_kswapd_and_reclaims_below_min() {
        let mut k = kstate();
        let total = k.mm.total;
        k.mm.set_watermarks(crate::mm::watermarks_269(total));
        k.reclaim = crate::mm::reclaim::PageReclaim::new(crate::mm::reclaim::Kind::Rmap269);
        k.register_kthread(crate::kernel::state::Kthread::Kswapd, 9);
        let cx = Ctx { now: 0, pid: 1 };
        let kswapd_woken = |k: &mut FsState| k.out.drain(..).any(|r| matches!(r, KReq::Wake(Chan::Kthread(9))));
        // Above pages_low: no kswapd.
        let (min, low) = (k.mm.pages_min, k.mm.pages_low);
        let free = k.mm.free;
        k.mm.grow(3, free - low);
        assert!(Alloc::default().need(&mut k, &cx, 1).is_none());
        assert!(!kswapd_woken(&mut k));
        // Below pages_low, above pages_min: kswapd is woken, the page is had at once.
        k.mm.grow(3, 1);
        assert!(k.mm.free > min && k.mm.free < low);
        assert!(Alloc::default().need(&mut k, &cx, 1).is_none());
        assert!(kswapd_woken(&mut k));
        // At pages_min: the task reclaims itself.
        let free = k.mm.free;
        k.mm.grow(3, free - min);
        assert!(Alloc::default().need(&mut k, &cx, 1).is_some());
    }
}
