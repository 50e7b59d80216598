//! Inode writeback of 2.6.17 (fs/fs-writeback.c, fs/mpage.c; research notes
//! writeback-2.6.17.md items 2 and 4): `writeback_inodes(wbc)` -> `sync_sb_inodes` ->
//! `__writeback_single_inode` -> `do_writepages`, which for ext3 in ordered mode is
//! `generic_writepages` -> `mpage_writepages` calling `ext3_ordered_writepage` page by page.
//!
//! What decides seed 001's long writes is kept exactly:
//! - `sync_sb_inodes` splices `s_dirty` onto `s_io` and takes the inodes oldest first, only
//!   those dirtied before the call started (and before `older_than_this` for kupdate);
//! - a nonblocking caller (pdflush) stops at a congested queue (`encountered_congestion`),
//!   before the inode and after each page;
//! - a pdflush thread must own the disk's `BDI_pdflush` bit (`writeback_acquire`) while it
//!   writes an inode, so `writeback_in_progress()` is true only then;
//! - `__writeback_single_inode`: an inode another task holds `I_LOCK` on is skipped by a
//!   `WB_SYNC_NONE` caller, which then writes nothing of it.
//!
//! A blocking caller (a writer in `balance_dirty_pages`) sleeps in `get_request_wait` when
//! the queue has no free request for it; woken, it batches (`ioc_set_batching`, see
//! [`crate::dev::disk`]).
//!
//! The pages are the buffer cache's dirty runs ([`crate::fs::buffer`]): ext3 with 4 KiB
//! blocks has one buffer per page, dirtied and cleaned with it, so a file's dirty runs in
//! dirtying order are its `PAGECACHE_TAG_DIRTY` pages from `writeback_index` on (a
//! sequential writer's file). Each written page is filed on the running transaction's data
//! list as `journal_dirty_data` does.

use crate::dev::disk::Dir;
use crate::fs::buffer::Via;
use crate::fs::flush::submit;
use crate::kernel::catalog::Point;
use crate::kernel::lock::Lock;
use crate::kernel::path::{point, Ctx, LoopStep, Nested, Path, Step, Work};
use crate::kernel::state::KState;
use latlab_core::Nanos;
use smallvec::smallvec;

/// PAGEVEC_SIZE: pages `mpage_writepages` looks up at a time, with `cond_resched()` after each.
pub const PAGEVEC_SIZE: u64 = 14;

/// `struct writeback_control`: what a caller asks and what it reads back.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Wbc {
    /// Pages still to write (counts down).
    pub nr_to_write: u64,
    /// pdflush's callers: don't block on a congested queue.
    pub nonblocking: bool,
    pub encountered_congestion: bool,
    /// kupdate: only inodes dirtied before this.
    pub older_than_this: Option<Nanos>,
    /// Pages redirtied instead of written (`redirty_page_for_writepage`).
    pub pages_skipped: u64,
}

impl Wbc {
    /// A pass asking for `nr_to_write` pages.
    pub fn new(nr_to_write: u64, nonblocking: bool, older_than_this: Option<Nanos>) -> Self {
        Wbc {
            nr_to_write,
            nonblocking,
            older_than_this,
            ..Default::default()
        }
    }
}

/// `writeback_inodes(wbc)`; when it returns, `k.pwb.wbc` holds the caller's `wbc`.
pub struct WritebackInodes {
    wbc: Wbc,
    pdflush: bool,
    /// `s_io`: the inodes to visit, oldest dirtied first (None until the splice).
    io: Option<std::collections::VecDeque<u32>>,
    /// The inode being written (holding its I_LOCK, and BDI_pdflush if pdflush).
    cur: Option<u32>,
    sub: Nested,
    done: bool,
}

/// `writeback_inodes()` for `wbc`; `pdflush` when a pdflush thread runs it.
pub fn writeback_inodes(wbc: Wbc, pdflush: bool) -> Box<dyn Path> {
    Box::new(WritebackInodes {
        wbc,
        pdflush,
        io: None,
        cur: None,
        sub: Nested::default(),
        done: false,
    })
}

impl WritebackInodes {
    fn finish(&mut self, k: &mut KState) -> Step {
        self.done = true;
        k.pwb.wbc = self.wbc;
        Step::Done
    }

    /// The inode just written: drop I_LOCK (and BDI_pdflush), take its result.
    fn release(&mut self, k: &mut KState, file: u32, cx: &Ctx) {
        k.pwb.i_lock.remove(&file);
        if self.pdflush && k.pwb.bdi_pdflush == Some(cx.pid) {
            k.pwb.bdi_pdflush = None;
        }
        self.wbc = k.pwb.wbc;
    }
}

impl Path for WritebackInodes {
    fn name(&self) -> &'static str {
        "writeback_inodes"
    }
    fn next(&mut self, k: &mut KState, cx: &Ctx) -> Step {
        loop {
            if self.done {
                return Step::Done;
            }
            if let Some(s) = self.sub.next(k, cx) {
                return s;
            }
            if let Some(file) = self.cur.take() {
                self.release(k, file, cx);
                if self.wbc.nr_to_write == 0 || self.wbc.encountered_congestion {
                    return self.finish(k);
                }
            }
            let io = match self.io.as_mut() {
                Some(io) => io,
                None => {
                    // list_splice_init(&sb->s_dirty, &sb->s_io): the inodes dirtied before
                    // this call, oldest first, visited under inode_lock.
                    let files: std::collections::VecDeque<u32> = k
                        .buf
                        .dirty_files()
                        .into_iter()
                        .filter(|&(_, when)| when <= cx.now)
                        .map(|(f, _)| f)
                        .collect();
                    let n = files.len() as u64;
                    self.io = Some(files);
                    return Work::locked("sync_sb_inodes", n * k.c.sync_one, Lock::Inode, false);
                }
            };
            let Some(file) = io.pop_front() else {
                return self.finish(k);
            };
            if k.buf.pending_of(file) == 0 {
                continue;
            }
            if self.wbc.nonblocking && k.disk.congested {
                self.wbc.encountered_congestion = true;
                return self.finish(k);
            }
            if let (Some(t), Some(when)) = (self.wbc.older_than_this, k.buf.dirtied_when(file)) {
                if when > t {
                    return self.finish(k);
                }
            }
            if self.pdflush {
                // writeback_acquire(bdi): another pdflush is on this disk.
                if k.pwb.bdi_pdflush.is_some_and(|p| p != cx.pid) {
                    return self.finish(k);
                }
            }
            if k.pwb.i_lock.get(&file).is_some_and(|&p| p != cx.pid) {
                // __writeback_single_inode, WB_SYNC_NONE: I_LOCK held by someone else:
                // back to s_dirty, nothing written.
                continue;
            }
            if self.pdflush {
                k.pwb.bdi_pdflush = Some(cx.pid);
            }
            k.pwb.i_lock.insert(file, cx.pid);
            k.pwb.wbc = self.wbc;
            self.cur = Some(file);
            self.sub.start(Box::new(MpageWritepages { file, cpu_left: 0 }));
        }
    }
    fn advanced(&mut self, k: &mut KState, cx: &Ctx, done: u64) {
        self.sub.advanced(k, cx, done);
    }
}

/// `mpage_writepages` of one inode under I_LOCK: the caller's `wbc` travels in `k.pwb.wbc`.
/// Each page: `lock_page`, `clear_page_dirty_for_io`, `ext3_ordered_writepage` (a journal
/// handle, `block_write_full_page` -> `submit_bh`, `journal_dirty_data`); the pages are
/// handed to the queue as the loop reaches them, merged there into requests.
struct MpageWritepages {
    file: u32,
    /// Pages submitted whose CPU work is still to run.
    cpu_left: u64,
}

impl Path for MpageWritepages {
    fn name(&self) -> &'static str {
        "mpage_writepages"
    }
    fn next(&mut self, k: &mut KState, cx: &Ctx) -> Step {
        if self.cpu_left > 0 {
            return LoopStep::plain(
                "mpage_writepages",
                self.cpu_left,
                k.c.writepage,
                smallvec![point(Point::MpageWritepages, PAGEVEC_SIZE)],
            );
        }
        let wbc = &mut k.pwb.wbc;
        let pending = k.buf.pending_of(self.file);
        if pending == 0 || wbc.nr_to_write == 0 {
            return Step::Done;
        }
        if wbc.nonblocking && k.disk.congested {
            wbc.encountered_congestion = true;
            return Step::Done;
        }
        let Some(block) = k.buf.first_dirty_block(self.file) else {
            return Step::Done;
        };
        let blocking = !wbc.nonblocking;
        let want = pending.min(wbc.nr_to_write);
        if blocking {
            k.disk.woke(cx.pid, cx.now);
        }
        let room = k.disk.room(block, blocking, cx.pid, cx.now, want);
        if room == 0 {
            if !blocking {
                wbc.encountered_congestion = true;
                return Step::Done;
            }
            // get_request_wait: sleep until a request is freed.
            if let Some(chan) = k.disk.get_request_wait(Dir::Write, block, 1, cx.pid, cx.now) {
                return Step::Block(chan);
            }
        }
        let n = want.min(room.max(1));
        wbc.nr_to_write -= n;
        let Some(b) = k.buf.take_file(self.file, n) else {
            return Step::Done;
        };
        submit(k, &b, Via::Writer, cx.pid, cx.now);
        self.cpu_left = b.hi - b.lo;
        self.next(k, cx)
    }
    fn advanced(&mut self, _k: &mut KState, _cx: &Ctx, done: u64) {
        self.cpu_left -= done.min(self.cpu_left);
    }
}
