//! Tearing down and growing a task's memory: `do_exit`'s `exit_mmap` and `munmap`, both
//! `zap_page_range` under the mm's page_table_lock (mm/memory.c, mm/mmap.c; 2.4 and 2.6.9),
//! and anonymous page faults (`do_anonymous_page`).

use crate::kernel::catalog::Point;
use crate::kernel::lock::Lock;
use crate::kernel::path::{point, Ctx, LoopStep, Path, Step, Work};
use crate::mm::state::MmK;
use smallvec::smallvec;

/// do_exit(): exit_mmap zaps every page under the mm's page_table_lock (the low-latency patch
/// cuts it into 256-page chunks), then the rest of the teardown.
pub struct DoExit {
    mm: u32,
    stage: u8,
}

pub fn do_exit<K: MmK>(mm: u32) -> Box<dyn Path<K>> {
    Box::new(DoExit { mm, stage: 0 })
}

/// zap_page_range over up to `limit` PTEs of `mm` (resident and swapped-out ones lie
/// interleaved by address: one walk, at the mean of the two per-PTE costs), under the mm's
/// page_table_lock; the low-latency patch cuts it every 256 pages, 2.6.9's `unmap_vmas`
/// (mm/memory.c, read in `HassebJ/linux-2.6.9`) every ZAP_BLOCK_SIZE: 8 pages under
/// CONFIG_PREEMPT, 1024 without; from 2.6.39 (Peter Zijlstra's preemptible mmu_gather, which
/// removed ZAP_BLOCK_SIZE) `zap_pmd_range` unlocks and calls `cond_resched()` after each page
/// table's PTEs, under every preemption model. A variant lists the one its kernel has.
fn zap_step<K: MmK>(k: &K, mm: u32, limit: u64) -> Step {
    let c = &k.c;
    let (rss, swapped) = k.mm.mms.get(&mm).map_or((0, 0), |r| (r.rss, r.swapped.len() as u64));
    let ptes = rss + swapped;
    let per = (rss * c.zap_pte + swapped * c.free_swap_entry)
        .checked_div(ptes)
        .unwrap_or(c.zap_pte);
    LoopStep::locked(
        "zap_page_range",
        ptes.min(limit),
        per,
        Lock::PageTable,
        smallvec![
            point(Point::ZapPageRange, 256),
            point(Point::UnmapVmas, 1024),
            point(Point::UnmapVmasPreempt, 8),
            point(Point::ZapPmdRange, PTRS_PER_PTE),
        ],
        false,
    )
}

/// PTEs per page table, so per `zap_pmd_range` round: i386 without PAE (two-level page
/// tables, the PMD folded into the PGD), as every machine profile of the model is a 32-bit
/// x86 (arch/x86/include/asm/pgtable-2level_types.h: `PTRS_PER_PTE 1024`).
const PTRS_PER_PTE: u64 = 1024;

impl<K: MmK> Path<K> for DoExit {
    fn name(&self) -> &'static str {
        "do_exit"
    }
    fn next(&mut self, k: &mut K, cx: &Ctx) -> Step {
        self.stage += 1;
        match self.stage {
            1 => zap_step(k, self.mm, u64::MAX),
            2 => {
                let t = k.c.exit_rest;
                k.mm.drop_mm(self.mm);
                // mmput(): put_swap_token() after exit_mmap.
                k.mm.token.put(self.mm, cx.now);
                Work::plain("exit_files", t)
            }
            _ => Step::Done,
        }
    }
    fn advanced(&mut self, k: &mut K, _cx: &Ctx, done: u64) {
        // Pages zapped so far are freed at once; a restart (after a lock-break) zaps the rest.
        if k.mm.zap(self.mm, done) > 0 {
            self.stage = 0;
        }
    }
}

/// munmap() of `pages` mapped pages of `mm`: zap_page_range over them.
pub struct Munmap {
    mm: u32,
    left: u64,
}

pub fn sys_munmap<K: MmK>(mm: u32, pages: u64) -> Box<dyn Path<K>> {
    Box::new(Munmap { mm, left: pages })
}

impl<K: MmK> Path<K> for Munmap {
    fn name(&self) -> &'static str {
        "sys_munmap"
    }
    fn next(&mut self, k: &mut K, _cx: &Ctx) -> Step {
        if self.left == 0 {
            return Step::Done;
        }
        match zap_step(k, self.mm, self.left) {
            Step::Loop(l) if l.items == 0 => Step::Done,
            s => s,
        }
    }
    fn advanced(&mut self, k: &mut K, _cx: &Ctx, done: u64) {
        k.mm.zap(self.mm, done);
        self.left -= done.min(self.left);
    }
}

/// Touching `pages` new anonymous pages: one page fault each (every fault returns to user
/// space, so each is a rescheduling opportunity), reclaiming when memory is short.
pub struct FaultIn<K> {
    mm: u32,
    left: u64,
    alloc: crate::mm::swap_in::Alloc<K>,
}

pub fn fault_in<K: MmK>(mm: u32, pages: u64) -> Box<dyn Path<K>> {
    Box::new(FaultIn {
        mm,
        left: pages,
        alloc: Default::default(),
    })
}

impl<K: MmK> Path<K> for FaultIn<K> {
    fn name(&self) -> &'static str {
        "do_page_fault"
    }
    fn next(&mut self, k: &mut K, cx: &Ctx) -> Step {
        if self.left == 0 {
            return Step::Done;
        }
        if let Some(s) = self.alloc.need(k, cx, 1) {
            return s;
        }
        let n = self.left.min(k.mm.free - k.mm.pages_min);
        LoopStep::plain(
            "do_anonymous_page",
            n,
            k.c.page_fault,
            smallvec![point(Point::RetFromException, 1)],
        )
    }
    fn advanced(&mut self, k: &mut K, cx: &Ctx, done: u64) {
        if self.alloc.advanced(k, cx, done) {
            return;
        }
        self.left -= done.min(self.left);
        k.mm.grow(self.mm, done);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::tests::{kstate, run_to_sleep};

    #[test]
    fn the_exit_zap_breaks_its_lock_where_the_variants_kernel_does() {
        use crate::cpu::tests::variant_with;
        use crate::kernel::preempt::{loop_point, Resched};
        use crate::variant::{PreemptModel, SchedClass};
        let mut k = kstate();
        k.mm.grow(9, 5000);
        let Step::Loop(l) = zap_step(&k, 9, u64::MAX) else {
            panic!("a loop")
        };
        assert_eq!((l.items, l.lock), (5000, Some(Lock::PageTable)));
        // (kernel, points it lists, the break it gets)
        for (preempt, points, every) in [
            // 2.4 with the low-latency patch: zap_page_range every 256 PTEs.
            (
                PreemptModel::None,
                vec![Point::ZapPageRange],
                Some((Point::ZapPageRange, 256)),
            ),
            // 2.6.9: unmap_vmas every ZAP_BLOCK_SIZE, 1024 pages ...
            (
                PreemptModel::None,
                vec![Point::UnmapVmas],
                Some((Point::UnmapVmas, 1024)),
            ),
            // ... or 8 under CONFIG_PREEMPT.
            (
                PreemptModel::Full,
                vec![Point::UnmapVmasPreempt],
                Some((Point::UnmapVmasPreempt, 8)),
            ),
            // 2.6.39 and later: each page table's PTEs, preemptible or not.
            (
                PreemptModel::None,
                vec![Point::ZapPmdRange],
                Some((Point::ZapPmdRange, 1024)),
            ),
            (
                PreemptModel::Full,
                vec![Point::ZapPmdRange],
                Some((Point::ZapPmdRange, 1024)),
            ),
            // A kernel with none holds the lock over the whole zap.
            (PreemptModel::Full, vec![], None),
        ] {
            let v = variant_with(SchedClass::O1, preempt, &points);
            let got = loop_point(&l, &v, false).map(|c| match c.at {
                Resched::Point(p) => (p, c.every),
                other => panic!("{other:?}"),
            });
            assert_eq!(got, every, "{points:?}");
        }
    }

    #[test]
    fn munmap_zaps_the_pages_it_is_given_under_page_table_lock() {
        let mut k = kstate();
        k.mm.grow(9, 1000);
        let mut p = sys_munmap(9, 600);
        let cx = Ctx { now: 0, pid: 1 };
        let Step::Loop(l) = p.next(&mut k, &cx) else {
            panic!("a loop")
        };
        assert_eq!((l.items, l.lock), (600, Some(Lock::PageTable)));
        p.advanced(&mut k, &cx, 600);
        assert!(matches!(p.next(&mut k, &cx), Step::Done));
        assert_eq!(k.mm.mms[&9].rss, 400);
        assert_eq!(run_to_sleep(&mut k, sys_munmap(9, 5000)), None);
        assert_eq!(k.mm.mms[&9].rss, 0);
    }
}
