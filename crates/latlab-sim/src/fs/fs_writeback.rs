//! Inode writeback of 2.6.17 (fs/fs-writeback.c, fs/mpage.c; research notes
//! writeback-2.6.17.md items 2 and 4): `writeback_inodes(wbc)` -> `sync_sb_inodes` ->
//! `__writeback_single_inode` -> `do_writepages`, which for ext3 in ordered mode is
//! `generic_writepages` -> `mpage_writepages` calling `ext3_ordered_writepage` page by page.
//!
//! What decides seed 001's long writes is kept exactly:
//! - `sync_sb_inodes` splices `s_dirty` onto `s_io` and takes the inodes oldest first, only
//!   those dirtied before the call started (and before `older_than_this` for kupdate);
//! - a nonblocking caller (pdflush) stops at a congested queue (`encountered_congestion`),
//!   before the inode and at the end of the pagevec in which it met congestion; inside a
//!   page it blocks like any caller: `__make_request` sleeps in `get_request_wait` when the
//!   page needs a new request and the queue has none for it, and pdflush keeps the inode's
//!   `I_LOCK` (and `BDI_pdflush`) while it sleeps (2.6.17 fs/mpage.c, read: index id
//!   24136556650);
//! - a pdflush thread must own the disk's `BDI_pdflush` bit (`writeback_acquire`) while it
//!   writes an inode, so `writeback_in_progress()` is true only then;
//! - `__writeback_single_inode`: an inode another task holds `I_LOCK` on is skipped by a
//!   `WB_SYNC_NONE` caller, which then writes nothing of it.
//!
//! A task woken in `get_request_wait` batches (`ioc_set_batching`, see [`crate::dev::disk`]).
//!
//! The pages are the buffer cache's dirty runs ([`crate::fs::buffer`]): ext3 with 4 KiB
//! blocks has one buffer per page, dirtied and cleaned with it, so a file's dirty runs in
//! dirtying order are its `PAGECACHE_TAG_DIRTY` pages from `writeback_index` on (a
//! sequential writer's file). Each written page is filed on the running transaction's data
//! list as `journal_dirty_data` does.

use crate::dev::disk::Dir;
use crate::fs::buffer::Via;
use crate::fs::flush::submit;
use crate::fs::state::FsState;
use crate::kernel::catalog::Point;
use crate::kernel::lock::Lock;
use crate::kernel::path::{point, Chan, Ctx, LoopStep, Nested, Path, Step, Work};
use crate::mm::fs_ops::{Handed, Wbc};
use smallvec::smallvec;

/// PAGEVEC_SIZE: pages `mpage_writepages` looks up at a time, with `cond_resched()` after each.
pub const PAGEVEC_SIZE: u64 = 14;

/// `writeback_inodes(wbc)`; when it returns, `k.writeback.pwb_mut().wbc` holds the caller's `wbc`.
pub struct WritebackInodes {
    wbc: Wbc,
    pdflush: bool,
    /// `s_io`: the inodes to visit, oldest dirtied first (None until the splice).
    io: Option<std::collections::VecDeque<u32>>,
    /// The inode being written (holding its I_LOCK, and BDI_pdflush if pdflush).
    cur: Option<u32>,
    sub: Nested<FsState>,
    done: bool,
}

/// `writeback_inodes()` for `wbc`; `pdflush` when a pdflush thread runs it.
pub fn writeback_inodes(wbc: Wbc, pdflush: bool) -> Box<dyn Path<FsState>> {
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
    fn finish(&mut self, k: &mut FsState) -> Step {
        self.done = true;
        k.writeback.pwb_mut().wbc = self.wbc;
        Step::Done
    }

    /// The inode just written: drop I_LOCK (and BDI_pdflush), take its result.
    fn release(&mut self, k: &mut FsState, file: u32, cx: &Ctx) {
        k.writeback.pwb_mut().i_lock.remove(&file);
        if self.pdflush && k.writeback.pwb_mut().bdi_pdflush == Some(cx.pid) {
            k.writeback.pwb_mut().bdi_pdflush = None;
        }
        self.wbc = k.writeback.pwb_mut().wbc;
    }
}

impl Path<FsState> for WritebackInodes {
    fn name(&self) -> &'static str {
        "writeback_inodes"
    }
    fn next(&mut self, k: &mut FsState, cx: &Ctx) -> Step {
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
            if self.wbc.nonblocking && k.disk.congested() {
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
                if k.writeback.pwb_mut().bdi_pdflush.is_some_and(|p| p != cx.pid) {
                    return self.finish(k);
                }
            }
            if k.writeback.pwb_mut().i_lock.get(&file).is_some_and(|&p| p != cx.pid) {
                // __writeback_single_inode, WB_SYNC_NONE: I_LOCK held by someone else:
                // back to s_dirty, nothing written.
                k.writeback.pwb_mut().stats.ilock_skips += 1;
                continue;
            }
            if self.pdflush {
                k.writeback.pwb_mut().bdi_pdflush = Some(cx.pid);
            }
            k.writeback.pwb_mut().i_lock.insert(file, cx.pid);
            k.writeback.pwb_mut().wbc = self.wbc;
            self.cur = Some(file);
            self.sub.start(writepages(k, file));
        }
    }
    fn advanced(&mut self, k: &mut FsState, cx: &Ctx, done: u64) {
        self.sub.advanced(k, cx, done);
    }
}

/// `do_writepages` of `file` for a `WB_SYNC_NONE` walk, the caller's `wbc` in
/// `k.writeback.pwb().wbc`: the inode's `->writepages`, ext4's, or ext3's generic
/// `mpage_writepages`.
pub(crate) fn writepages(k: &FsState, file: u32) -> Box<dyn Path<FsState>> {
    match k.ext4 {
        Some(_) => crate::fs::ext4::ext4_writepages(file, crate::fs::ext4::Mode::Background),
        None => Box::new(MpageWritepages::new(file)),
    }
}

/// `->writepage` of up to `want` of `file`'s dirty pages from `block` on, as task `cx.pid`
/// on the 2.6 queue (`submit_bh` -> `__make_request`): back from `get_request_wait` it
/// batches (`ioc_set_batching`); what merges into the newest request and what `get_request`
/// gives go to the queue; with no request free it sleeps until `freed_request` leaves room.
/// Pdflush's and the writer's `mpage_writepages` and 2.6.17 reclaim's `pageout()` write so.
pub(crate) fn write_dirty_run(k: &mut FsState, cx: &Ctx, file: u32, block: u64, want: u64) -> Handed {
    k.disk.woke(cx.pid, cx.now);
    let room = k.disk.room(block, cx.pid, cx.now, want);
    if room == 0 {
        if let Some(chan) = k.disk.get_request_wait(Dir::Write, block, 1, cx.pid, cx.now) {
            return Handed::Sleep(chan);
        }
    }
    let Some(b) = k.buf.take_file(file, want.min(room.max(1))) else {
        return Handed::Nothing;
    };
    submit(k, &b, Via::Writer, cx.pid, cx.now);
    Handed::Wrote(b.hi - b.lo)
}

/// `mpage_writepages` of one inode under I_LOCK (2.6.17 fs/mpage.c with `get_block` NULL:
/// ext3 ordered has no `->writepages`), the caller's `wbc` in `k.writeback.pwb_mut().wbc`. It takes the
/// dirty pages a pagevec (14) at a time; each page is locked, cleaned for I/O and written by
/// `ext3_ordered_writepage` (a journal handle, `block_write_full_page` -> `submit_bh`,
/// `journal_dirty_data`), whose buffer `__make_request` merges into the newest queued
/// request or puts in a new one from `get_request`, sleeping in `get_request_wait` when
/// none is free: for every caller, a nonblocking one too, whose congestion test comes only
/// between pages. That test follows each page, but it sets `done`, which ends the `while`
/// over pagevecs, not the `for` over the pagevec's pages; `cond_resched()` follows each
/// pagevec. The model runs a pagevec's CPU work, then hands its pages to the queue, then
/// tests congestion: the same order seen from the queue, since the test only ends the loop
/// at the pagevec's end.
struct MpageWritepages {
    file: u32,
    /// Pages of the current pagevec still to hand to the queue.
    pvec: u64,
    /// Of those, pages whose CPU work is still to run.
    cpu_left: u64,
    /// `done`: no further pagevec (the caller's `nr_to_write` spent).
    done: bool,
    /// The page waiting for a request holds its `ext3_ordered_writepage` handle open.
    handle: bool,
}

impl MpageWritepages {
    fn new(file: u32) -> Self {
        MpageWritepages {
            file,
            pvec: 0,
            cpu_left: 0,
            done: false,
            handle: false,
        }
    }

    /// The waiting page's buffer went to the queue: its handle is stopped.
    fn stop_handle(&mut self, k: &mut FsState) {
        if std::mem::take(&mut self.handle) {
            crate::fs::ext3::journal_stop_slept(k);
        }
    }
}

impl Path<FsState> for MpageWritepages {
    fn name(&self) -> &'static str {
        "mpage_writepages"
    }
    fn next(&mut self, k: &mut FsState, cx: &Ctx) -> Step {
        loop {
            if self.cpu_left > 0 {
                // lock_page .. ext3_ordered_writepage per page, cond_resched() per pagevec.
                return LoopStep::plain(
                    "mpage_writepages",
                    self.cpu_left,
                    k.c.writepage,
                    smallvec![point(Point::MpageWritepages, PAGEVEC_SIZE)],
                );
            }
            if self.pvec > 0 {
                let Some(block) = k.buf.first_dirty_block(self.file) else {
                    return Step::Done;
                };
                match write_dirty_run(k, cx, self.file, block, self.pvec) {
                    // get_request_wait, I_LOCK and the page's journal handle held.
                    Handed::Sleep(chan) => {
                        if k.writeback.pwb_mut().wbc.nonblocking {
                            k.writeback.pwb_mut().stats.nonblocking_request_waits += 1;
                        }
                        if !std::mem::replace(&mut self.handle, true) {
                            k.jbd.handle_sleeps();
                        }
                        return Step::Block(chan);
                    }
                    Handed::Wrote(n) => {
                        self.stop_handle(k);
                        self.pvec -= n;
                    }
                    Handed::Nothing => {
                        self.stop_handle(k);
                        return Step::Done;
                    }
                }
                continue;
            }
            let wbc = &mut k.vm.writeback.pwb_mut().wbc;
            if self.done {
                return Step::Done;
            }
            // Before the loop and between pagevecs (the kernel tests after each page, but a
            // hit ends the loop only at the pagevec's end): a nonblocking caller stops here.
            if wbc.nonblocking && k.vm.dev.disk.congested() {
                wbc.encountered_congestion = true;
                return Step::Done;
            }
            // Each page's ext3_ordered_writepage starts a handle: while a commit is T_LOCKED
            // it waits in start_this_handle, still under I_LOCK (checked a pagevec at a time).
            if k.jbd.locked {
                return Step::Block(Chan::TxnLocked);
            }
            let wbc = &mut k.vm.writeback.pwb_mut().wbc;
            // pagevec_lookup_tag(PAGECACHE_TAG_DIRTY, PAGEVEC_SIZE).
            let n = k.buf.pending_of(self.file).min(wbc.nr_to_write).min(PAGEVEC_SIZE);
            if n == 0 {
                return Step::Done;
            }
            wbc.nr_to_write -= n;
            self.done = wbc.nr_to_write == 0;
            self.pvec = n;
            self.cpu_left = n;
        }
    }
    fn advanced(&mut self, _k: &mut FsState, _cx: &Ctx, done: u64) {
        self.cpu_left -= done.min(self.cpu_left);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::tests::{kstate, machine, run_to_sleep_as};
    use crate::dev::disk::{Disk, Payload};
    use crate::kernel::path::Chan;

    const FILE: u32 = 1;
    const PDFLUSH: u32 = 2;
    const WRITER: u32 = 3;
    const OTHER: u32 = 9;

    /// 2.6.17's queue (128 requests of 512 KiB, congested from 113) holding `queued` one-block
    /// writes of another task, and `FILE` with 4,096 dirty pages.
    fn setup(queued: u64) -> FsState {
        let mut k = kstate();
        k.writeback = crate::mm::writeback::DirtyWriteback::pdflush_for_tests();
        let mut m = machine();
        m.disk.nr_requests = 128;
        m.disk.max_request_kib = 512;
        k.disk = Disk::new(&m);
        k.disk.use_26_block_layer(250, false);
        other_writes(&mut k, queued);
        k.buf.dirty(FILE, 0, 4_096, 1_000_000, 0);
        k
    }

    /// `n` one-block writes of task `OTHER`, none merging.
    fn other_writes(k: &mut FsState, n: u64) {
        for i in 0..n {
            k.disk_submit_by(Dir::Write, 10 * i + 10, 1, Payload::Other, OTHER, 0);
        }
    }

    #[test]
    fn a_nonblocking_writeback_sleeps_inside_a_page_holding_i_lock_and_the_writer_skips_the_inode() {
        // 112 requests queued: not congested, so pdflush takes the inode and looks up its
        // first pagevec; while it runs that pagevec's CPU work, another task fills the queue
        // past 128 (its batch), so the pagevec's first page finds no request.
        let mut k = setup(112);
        let cx = Ctx { now: 0, pid: PDFLUSH };
        let mut pdflush = writeback_inodes(Wbc::new(1_024, true, None), true);
        let mut first = pdflush.next(&mut k, &cx);
        while !matches!(first, Step::Loop(_)) {
            first = pdflush.next(&mut k, &cx);
        }
        assert_eq!(k.writeback.pwb_mut().i_lock.get(&FILE), Some(&PDFLUSH));
        other_writes(&mut k, 20);
        pdflush.advanced(&mut k, &cx, PAGEVEC_SIZE);
        let Step::Block(Chan::RequestSlot(_)) = pdflush.next(&mut k, &cx) else {
            panic!("pdflush sleeps in get_request_wait")
        };
        assert_eq!(k.writeback.pwb_mut().stats.nonblocking_request_waits, 1);
        assert_eq!(
            (k.writeback.pwb().i_lock.get(&FILE), k.writeback.pwb().bdi_pdflush),
            (Some(&PDFLUSH), Some(PDFLUSH))
        );
        // ext3_ordered_writepage's handle stays open over the sleep: a commit now waits for it.
        assert_eq!(k.jbd.updates, 1);
        // The throttled writer's WB_SYNC_NONE pass skips the inode: it writes nothing.
        let wcx = Ctx { now: 1, pid: WRITER };
        let writer = writeback_inodes(Wbc::new(1_536, false, None), false);
        assert_eq!(run_to_sleep_as(&mut k, writer, &wcx), None);
        assert_eq!(
            (
                k.writeback.pwb_mut().wbc.nr_to_write,
                k.writeback.pwb_mut().stats.ilock_skips
            ),
            (1_536, 1)
        );
    }

    #[test]
    fn a_nonblocking_writeback_finishes_the_pagevec_that_met_congestion_and_stops() {
        // 111 queued: pdflush's own second request makes the queue congested (113); it writes
        // to the end of that pagevec, then stops with I_LOCK dropped.
        let mut k = setup(111);
        let cx = Ctx { now: 0, pid: PDFLUSH };
        let pdflush = writeback_inodes(Wbc::new(1_024, true, None), true);
        assert_eq!(run_to_sleep_as(&mut k, pdflush, &cx), None);
        let w = k.writeback.pwb_mut().wbc;
        assert!(w.encountered_congestion);
        // 128 pages fill its first request; the second opens in the tenth pagevec (pages
        // 127-140), which is written whole.
        assert_eq!(1_024 - w.nr_to_write, 140);
        assert!(k.writeback.pwb_mut().i_lock.is_empty() && k.writeback.pwb_mut().bdi_pdflush.is_none());
        // Not congested, with the same queue, a blocking caller would have written on.
        let mut k = setup(111);
        let writer = writeback_inodes(Wbc::new(1_024, false, None), false);
        assert_eq!(run_to_sleep_as(&mut k, writer, &Ctx { now: 0, pid: WRITER }), None);
        assert_eq!(k.writeback.pwb_mut().wbc.nr_to_write, 0);
    }

    #[test]
    fn a_commit_waits_in_t_locked_for_the_handle_pdflush_holds_asleep_and_new_handles_wait_for_it() {
        use crate::fs::commit::journal_commit_transaction;
        let mut k = setup(112);
        k.register_kthread(crate::kernel::state::Kthread::Kjournald, 4);
        let cx = Ctx { now: 0, pid: PDFLUSH };
        let mut pdflush = writeback_inodes(Wbc::new(1_024, true, None), true);
        let mut first = pdflush.next(&mut k, &cx);
        while !matches!(first, Step::Loop(_)) {
            first = pdflush.next(&mut k, &cx);
        }
        other_writes(&mut k, 20);
        pdflush.advanced(&mut k, &cx, PAGEVEC_SIZE);
        assert!(matches!(pdflush.next(&mut k, &cx), Step::Block(Chan::RequestSlot(_))));
        // kjournald begins a commit: T_LOCKED, asleep until the handle is stopped.
        let kj = Ctx { now: 1, pid: 4 };
        let mut commit = journal_commit_transaction(false);
        assert!(matches!(commit.next(&mut k, &kj), Step::Block(Chan::TxnUpdates)));
        assert!(k.jbd.locked && k.jbd.committing.is_none());
        // Meanwhile a write(2) waits in start_this_handle.
        let f = k.mm.create_file(0);
        let w = crate::fs::ext3::sys_write(f, 4096);
        assert_eq!(
            run_to_sleep_as(&mut k, w, &Ctx { now: 2, pid: WRITER }),
            Some(Chan::TxnLocked)
        );
        // The queue drains: pdflush's page gets its request and its handle is stopped, which
        // wakes kjournald; its next pagevec waits for the commit to take the transaction.
        k.disk = Disk::new(&machine());
        k.disk.use_26_block_layer(250, false);
        k.out.clear();
        let next = pdflush.next(&mut k, &cx);
        assert!(k
            .out
            .iter()
            .any(|r| matches!(r, crate::kernel::state::KReq::Wake(Chan::TxnUpdates))));
        assert_eq!(k.jbd.updates, 0);
        let mut next = next;
        while let Step::Loop(l) = next {
            pdflush.advanced(&mut k, &cx, l.items);
            next = pdflush.next(&mut k, &cx);
        }
        assert!(matches!(next, Step::Block(Chan::TxnLocked)));
        // kjournald runs: the transaction is the committing one, T_LOCKED is over.
        assert!(!matches!(commit.next(&mut k, &kj), Step::Block(_)));
        assert!(!k.jbd.locked && k.jbd.committing.is_some());
    }
}
