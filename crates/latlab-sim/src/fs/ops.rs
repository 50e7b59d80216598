//! The file system's side of what mm/ reaches ([`MmK`]): ext3 over the buffer cache, as
//! mm/'s writeback and reclaim call it, and the counts they read. The file system's state
//! runs every layer's paths: it implements each layer's trait.

use crate::dev::{DevK, DevState};
use crate::fs::buffer::Via;
use crate::fs::flush::{chain, wait_for_buffers, write_some_buffers, SubmitBatch};
use crate::fs::fs_writeback::{write_dirty_run, writeback_inodes};
use crate::fs::state::{FsState, NFRACT, NFRACT_SYNC};
use crate::kernel::path::{CoreK, Ctx, Path};
use crate::kernel::state::Core;
use crate::mm::fs_ops::{Handed, Wbc};
use crate::mm::state::MmK;
use crate::mm::{Scan, ScanLimits};

impl CoreK for FsState {
    #[inline(always)]
    fn core(&mut self) -> &mut Core {
        &mut self.vm.dev.core
    }
}

impl DevK for FsState {
    #[inline(always)]
    fn dev(&mut self) -> &mut DevState {
        &mut self.vm.dev
    }
}

/// ext3 (ordered journal) over the buffer cache.
impl MmK for FsState {
    fn writeback_inodes(wbc: Wbc, pdflush: bool) -> Box<dyn Path<FsState>> {
        writeback_inodes(wbc, pdflush)
    }
    fn flusher_writeback(&self, wbc: Wbc) -> Box<dyn Path<FsState>> {
        // 6.x's walk comes with 6.x's file system; the 3.2 variant keeps 2.6.17's.
        match self.ext4 {
            Some(_) => crate::fs::fs_writeback6::writeback_sb_inodes(wbc.nr_to_write),
            None => writeback_inodes(wbc, false),
        }
    }
    fn writepage_run(&mut self, cx: &Ctx, file: u32, block: u64, want: u64) -> Handed {
        write_dirty_run(self, cx, file, block, want)
    }
    fn balance_dirty(over_hard: bool) -> Box<dyn Path<FsState>> {
        let mut parts: Vec<Box<dyn Path<FsState>>> = vec![Box::new(write_some_buffers())];
        if over_hard {
            parts.push(Box::new(wait_for_buffers()));
        }
        chain("balance_dirty", parts)
    }
    fn launder(&mut self, n: u64) -> Option<Box<dyn Path<FsState>>> {
        let b = self.buf.take(n, None)?;
        self.buf.laundering(b.lo, b.hi);
        Some(Box::new(SubmitBatch::new(b, Via::Writer, None)))
    }
    fn apply_shrink(&mut self, lim: &ScanLimits, done: u64) -> Scan {
        let cache = self.vm.mm.cache();
        let done_hi = self.buf.done_hi();
        let jbd = &mut self.jbd;
        let sc = self
            .vm
            .mm
            .apply_shrink(lim, done, &mut |f, n, cached| jbd.pages_freed(f, n, cached, done_hi));
        self.buf.pages_freed(sc.freed, cache);
        self.dcache.pages_dropped(sc.emptied);
        sc
    }

    fn balance_dirty_state(&self) -> i32 {
        let dirty = self.buf.dirty_for_balance() * 100;
        let tot = self.buffer_pages();
        if dirty > tot * NFRACT {
            if dirty > tot * NFRACT_SYNC {
                1
            } else {
                0
            }
        } else {
            -1
        }
    }
    fn dirty_headroom(&self) -> u64 {
        (self.buffer_pages() * NFRACT / 100).saturating_sub(self.buf.dirty_for_balance())
    }
    #[inline]
    fn nr_dirty(&self) -> u64 {
        self.buf.nr_dirty()
    }
    #[inline]
    fn nr_writeback(&self) -> u64 {
        self.buf.in_flight()
    }
    #[inline]
    fn dirty_for_balance(&self) -> u64 {
        self.buf.dirty_for_balance()
    }
    fn pages_written(&self) -> u64 {
        self.buf.written()
    }
    fn oldest_dirty_page(&self) -> Option<(u32, u64)> {
        let file = self.buf.dirty_files().first().map(|&(f, _)| f);
        file.and_then(|f| Some((f, self.buf.first_dirty_block(f)?)))
    }
    fn buf_next_seq(&self) -> u64 {
        self.buf.next_seq()
    }
    fn buf_done_hi(&self) -> u64 {
        self.buf.done_hi()
    }
    fn launder_inflight(&mut self) -> Option<u64> {
        self.buf.launder_inflight()
    }
    fn nr_dirty_inodes(&self) -> u64 {
        self.dcache.nr_dirty_inodes()
    }
    fn dentries_unused(&self) -> u64 {
        self.dcache.dentries_unused()
    }
    fn dentries_referenced(&self) -> u64 {
        self.dcache.referenced()
    }
    fn inodes_unused(&self) -> u64 {
        self.dcache.inodes_unused()
    }
    fn plan_prune_dcache(&self, count: u64) -> (u64, u64) {
        let p = self.dcache.plan_prune_dcache(count);
        (p.skipped, p.pruned)
    }
    fn apply_prune_dcache(&mut self, skipped: u64, pruned: u64, with_pages_share: u64) {
        self.dcache.apply_prune_dcache(skipped, pruned, with_pages_share)
    }
    fn plan_prune_icache(&self, goal: u64) -> (u64, u64) {
        self.dcache.plan_prune_icache(goal)
    }
    fn apply_prune_icache(&mut self, freed: u64) {
        self.dcache.apply_prune_icache(freed)
    }
}
