//! `journal_commit_transaction()` (fs/jbd/commit.c, 2.4.18) in ordered-data mode, phase 2
//! (`write_out_data`) and the metadata/commit-block phases, as kjournald runs it.
//!
//! Phase 2 holds `journal_datalist_lock` while it walks the committing transaction's data
//! list from `t_sync_datalist`: completed buffers are unfiled (mini-ll's lock-break sits
//! here), locked ones skipped, up to 64 dirty ones gathered, the lock dropped and the batch
//! submitted (stock's `if (current->need_resched) schedule()` follows); the next walk starts
//! at the batch's last buffer. So a walk meets the other writers' buffers ahead of it, and
//! the commit's own only when it gathers the last dirty ones and goes all the way round (read
//! in 2.4.18's fs/jbd/commit.c). With nothing dirty left it waits on the last buffer written
//! and walks again.
//!
//! The commit begins `T_LOCKED`: new handles wait, and kjournald sleeps until the handles
//! still open on the transaction are stopped (the model counts those held across a sleep,
//! [`crate::fs::jbd::Journal::updates`]); then the transaction is the committing one.
//!
//! kjournald holds the big kernel lock throughout (it takes it at start-up): under kernel
//! preemption the commit is preemptible only where it sleeps or calls schedule().
//!
//! When the commit is done, the pages a truncate could not free because this transaction
//! held their buffers (`journal_flushpage`) rejoin the LRU as clean pages (`Mm::unpin_all`).

use crate::dev::disk::Dir;
use crate::fs::buffer::Via;
use crate::fs::flush::{disk_io, SubmitBatch};
use crate::fs::jbd::{Region, WBUF};
use crate::fs::state::FsState;
use crate::kernel::catalog::Point;
use crate::kernel::lock::Lock;
use crate::kernel::path::{point, Chan, Ctx, LoopStep, Nested, Path, Points, Step, Work};
use latlab_core::Nanos;
use smallvec::smallvec;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Walk {
    Unfile(Region),
    Skip(Region),
    None,
}

pub struct Commit {
    /// kjournald runs it under the big kernel lock (2.4's jbd).
    bkl: bool,
    started: bool,
    sub: Nested<FsState>,
    walk: Walk,
    /// This walk has passed its region (unfiled the completed buffers, skipped the locked).
    passed: bool,
    meta_done: bool,
}

/// kjournald's commit; `bkl`: under the big kernel lock (2.4's jbd).
pub fn journal_commit_transaction(bkl: bool) -> Box<dyn Path<FsState>> {
    Box::new(Commit {
        bkl,
        started: false,
        sub: Nested::default(),
        walk: Walk::None,
        passed: false,
        meta_done: false,
    })
}

/// A stretch of a `write_out_data` walk: `items` buffers at `per` each, under
/// `journal_datalist_lock` (kept after it if `hold`).
fn datalist_walk(items: u64, per: Nanos, points: Points, hold: bool) -> Step {
    LoopStep::locked(
        "journal_commit_transaction",
        items,
        per,
        Lock::JournalDatalist,
        points,
        hold,
    )
}

/// Transaction id the checkpointed metadata buffers carry (they belong to no running one).
pub const NO_TXN: u64 = u64::MAX;

impl Path<FsState> for Commit {
    fn name(&self) -> &'static str {
        "journal_commit_transaction"
    }
    /// 2.4's kjournald (fs/jbd/journal.c) calls `lock_kernel()` before `daemonize()` and
    /// never unlocks it: the whole commit runs under the big kernel lock; 2.6's takes none
    /// ([`crate::variant::Journal`]).
    fn holds_bkl(&self) -> bool {
        self.bkl
    }
    fn next(&mut self, k: &mut FsState, cx: &Ctx) -> Step {
        if let Some(s) = self.sub.next(k, cx) {
            return s;
        }
        if !self.started {
            // T_LOCKED: `while (commit_transaction->t_updates)` sleep on j_wait_updates.
            if k.jbd.updates > 0 {
                k.jbd.locked = true;
                return Step::Block(Chan::TxnUpdates);
            }
            k.jbd.locked = false;
            self.started = true;
            k.jbd.start_commit(cx.now);
            // A fresh running transaction: handles waiting for room can start.
            k.wake(Chan::TxnLocked);
            if k.jbd.orders_by_inode() {
                // jbd2: the data phase goes by the transaction's inodes
                // (crate::fs::jbd2); its datalist is empty.
                self.sub.start(crate::fs::jbd2::commit_data_phase(k));
            }
            return Work::plain("journal_commit_transaction", k.c.journal_meta);
        }
        let done_hi = k.buf.done_hi;
        let Some(t) = k.jbd.committing.as_ref() else {
            return Step::Done;
        };
        let (tid, dirty) = (t.tid, t.dirty);
        // A walk that gathers the last dirty buffers (fewer than wbuf holds) goes all the way
        // round the list; so does every walk once none are left.
        let region = if dirty > WBUF { Region::Ahead } else { Region::All };
        self.walk = Walk::None;
        if !self.passed {
            let (completed, locked) = (t.completed(region, done_hi), t.locked(region, done_hi));
            let hold = dirty > 0 || locked > 0;
            if completed > 0 {
                self.walk = Walk::Unfile(region);
                let pts = smallvec![point(Point::JournalCommitWriteOutData, 1)];
                return datalist_walk(completed, k.c.unfile, pts, hold);
            }
            self.passed = true;
            if locked > 0 {
                self.walk = Walk::Skip(region);
                return datalist_walk(locked, k.c.skip_locked, smallvec![], dirty > 0);
            }
        }
        self.passed = false;
        if dirty > 0 {
            if let Some(b) = k.buf.take(WBUF, Some(tid)) {
                let n = b.hi - b.lo;
                // The next walk starts afresh from `t_sync_datalist`, unless this one goes on
                // gathering: the model's batches stop at a file boundary, wbuf does not.
                self.passed = region == Region::All && dirty > n;
                self.sub.start(Box::new(SubmitBatch::new(
                    b,
                    Via::Journal,
                    Some(Point::JournalCommitTransaction),
                )));
                return Work::locked(
                    "journal_commit_transaction",
                    n * k.c.collect,
                    Lock::JournalDatalist,
                    false,
                );
            }
        }
        if t.locked(Region::All, done_hi) > 0 {
            // wait_on_buffer(last written), then `goto write_out_data`.
            let last = t.sub_hi.saturating_sub(1);
            if let Some(id) = k.disk.req_of_seq(last) {
                return Step::Block(Chan::Io(id));
            }
            return Work::plain("journal_commit_transaction", 0);
        }
        if !self.meta_done {
            // Phases 3-6: metadata blocks and descriptor to the log, then the commit record.
            self.meta_done = true;
            let meta = k.jbd.committing.as_ref().map_or(0, |t| t.meta);
            let at = k.jbd.log_alloc(meta + 2);
            let parts: Vec<Box<dyn Path<FsState>>> = vec![
                Box::new(disk_io(Dir::Write, at, meta + 1)),
                Box::new(disk_io(Dir::Write, at + meta + 1, 1)),
            ];
            self.sub.start(crate::fs::flush::chain("journal_write_metadata", parts));
            // Stock: `if (current->need_resched) schedule()` after each batch of 64.
            return LoopStep::plain(
                "journal_write_metadata_buffer",
                meta,
                k.c.journal_meta,
                smallvec![point(Point::JournalCommitTransaction, WBUF)],
            );
        }
        // Checkpoint: the metadata is now dirty in place, for bdflush/kupdated to write.
        let meta = k.jbd.committing.as_ref().map_or(0, |t| t.meta);
        k.buf.dirty(
            0,
            NO_TXN,
            meta,
            crate::fs::jbd::JOURNAL_START_BLOCK - meta.min(4096),
            cx.now,
        );
        k.jbd.finish_commit();
        k.mm.unpin_all();
        Step::Done
    }
    fn advanced(&mut self, k: &mut FsState, cx: &Ctx, done: u64) {
        if self.sub.advanced(k, cx, done) {
            return;
        }
        let done_hi = k.buf.done_hi;
        let Some(t) = k.jbd.committing.as_mut() else {
            return;
        };
        match self.walk {
            Walk::Unfile(r) => {
                let ranges = t.unfile(r, done, done_hi);
                k.buf.refile_ranges(&ranges);
            }
            Walk::Skip(Region::Ahead) => t.pass_locked(done_hi),
            Walk::Skip(Region::All) | Walk::None => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::variant::{Journal, PreemptModel, SchedClass};

    #[test]
    fn only_2_4s_kjournald_commits_under_the_big_kernel_lock() {
        let mut v = crate::cpu::tests::variant_with(SchedClass::O1, PreemptModel::None, &[]);
        let m = crate::cpu::tests::machine();
        for (journal, bkl) in [(Journal::Jbd24, true), (Journal::Jbd26, false)] {
            v.journal = journal;
            let swap = latlab_swap::by_name("scan-2.4", m.swap_slots()).unwrap();
            let jbd = crate::assemble::subsystems(&v, &m, swap).jbd;
            assert_eq!(jbd.commit_holds_bkl, bkl);
            assert_eq!(journal_commit_transaction(jbd.commit_holds_bkl).holds_bkl(), bkl);
        }
    }
}
