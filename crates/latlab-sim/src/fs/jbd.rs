//! ext3's journal in ordered-data mode (fs/jbd/transaction.c, fs/jbd/commit.c, 2.4.18).
//!
//! Every data buffer a write dirties joins the running transaction's `t_sync_datalist`.
//! kjournald commits the running transaction `j_commit_interval` (5 s) after it started, or
//! when someone forces a commit (`sync`). Commit phase 2 (`write_out_data`) walks the
//! datalist under `journal_datalist_lock`: buffers whose I/O has completed are unfiled one by
//! one, locked ones are skipped, dirty ones are gathered 64 at a time (`wbuf[64]`) and
//! submitted with the lock dropped; then it waits on the last buffer it wrote and walks again.
//! The datalist holds, in order, completed then locked then dirty buffers (see
//! [`crate::fs::buffer`]), so the walk's stretches are counts, not item-by-item work.

use latlab_core::Nanos;
use std::collections::{BTreeSet, VecDeque};

/// `j_commit_interval = HZ * 5` (research notes §2, JBD_DEFAULT_MAX_COMMIT_AGE).
pub const COMMIT_INTERVAL_NS: Nanos = 5_000_000_000;
/// `struct buffer_head *wbuf[64]` in journal_commit_transaction.
pub const WBUF: u64 = 64;

#[derive(Clone, Debug, Default)]
pub struct Txn {
    pub tid: u64,
    pub started: Nanos,
    /// Data buffers of this transaction not yet submitted.
    pub dirty: u64,
    /// Its submitted data buffers still on the datalist, as sequence ranges, oldest first:
    /// other writers' buffers (another transaction's, metadata, page write-out) take the
    /// sequence numbers in between.
    spans: VecDeque<(u64, u64)>,
    /// Buffers in `spans`.
    on_list: u64,
    /// It has submitted buffers.
    pub submitted_any: bool,
    /// Sequence number after its last submitted buffer.
    pub sub_hi: u64,
    /// Sequence number after its last unfiled buffer.
    pub unfiled_hi: u64,
    /// Metadata blocks to write to the journal at commit.
    pub meta: u64,
    meta32: u64,
    /// Files whose inode (its share of an inode-table block) this transaction already holds.
    inodes: BTreeSet<u32>,
}

impl Txn {
    /// Completed, not yet unfiled buffers on the datalist.
    pub fn completed(&self, done_hi: u64) -> u64 {
        let mut n = 0;
        for &(lo, hi) in &self.spans {
            if lo >= done_hi {
                break;
            }
            n += hi.min(done_hi) - lo;
        }
        n
    }
    /// Submitted, still locked buffers on the datalist.
    pub fn locked(&self, done_hi: u64) -> u64 {
        self.on_list - self.completed(done_hi)
    }
    /// Record a submission of `n` of its buffers at `lo..lo+n`.
    pub fn submitted(&mut self, lo: u64, n: u64) {
        match self.spans.back_mut() {
            Some(last) if last.1 == lo => last.1 += n,
            _ => self.spans.push_back((lo, lo + n)),
        }
        self.on_list += n;
        self.submitted_any = true;
        self.sub_hi = self.sub_hi.max(lo + n);
        self.dirty -= n.min(self.dirty);
    }
    /// Unfile the next `n` completed buffers.
    pub fn unfile(&mut self, mut n: u64) {
        while n > 0 {
            let Some(s) = self.spans.front_mut() else { break };
            let take = n.min(s.1 - s.0);
            s.0 += take;
            self.unfiled_hi = s.0;
            self.on_list -= take;
            n -= take;
            if s.0 == s.1 {
                self.spans.pop_front();
            }
        }
    }
}

#[derive(Debug, Default)]
pub struct Journal {
    pub running: Txn,
    pub committing: Option<Txn>,
    next_tid: u64,
    /// A commit was asked for (sync, journal full) before the interval ran out.
    pub commit_requested: bool,
    /// Transactions committed so far.
    pub commits: u64,
    /// Next free block of the journal area (for disk positions).
    pub log_block: u64,
}

/// Disk block where the journal lives (an internal journal near the start of the fs).
pub const JOURNAL_START_BLOCK: u64 = 8_192;
/// `j_max_transaction_buffers = j_maxlen / 4`: a transaction this full is committed at once.
pub const MAX_TRANSACTION_BUFFERS: u64 = JOURNAL_BLOCKS / 4;
/// Journal size: 32 MiB (mke2fs -j default for large filesystems of the era), in blocks.
pub const JOURNAL_BLOCKS: u64 = 8_192;
/// Credits a handle asks for: `ext3_writepage_trans_blocks()` (fs/ext3/inode.c, 2.4.18) for
/// ordered data with one 4 KiB block per page, `2 * (bpp + indirects) + 2` = 2 * (1 + 3) + 2.
pub const HANDLE_CREDITS: u64 = 10;
/// An inode's share of its inode-table block: 4 KiB / 128-byte ext3 inodes = 32 a block.
const INODES_PER_BLOCK: u64 = 32;

impl Journal {
    pub fn txn_mut(&mut self, tid: u64) -> Option<&mut Txn> {
        if self.running.tid == tid {
            return Some(&mut self.running);
        }
        self.committing.as_mut().filter(|t| t.tid == tid)
    }

    /// A write dirtied `n` data buffers: they join the running transaction.
    pub fn add_data(&mut self, n: u64) -> u64 {
        self.running.dirty += n;
        self.running.tid
    }

    /// Metadata blocks newly journaled in the running transaction, in 32nds of a block (a
    /// block already in the transaction costs nothing more: `journal_get_write_access` on a
    /// buffer the running transaction holds adds nothing to it).
    pub fn add_meta32(&mut self, n32: u64) {
        self.running.meta32 += n32;
        self.running.meta = self.running.meta32 / 32;
    }

    /// `ext3_mark_inode_dirty` of `file`'s inode: its inode-table block joins the running
    /// transaction, 1/32 of a block the first time the transaction meets this inode.
    pub fn dirty_inode(&mut self, file: u32) {
        if self.running.inodes.insert(file) {
            self.add_meta32(32 / INODES_PER_BLOCK);
        }
    }

    /// `start_this_handle` (fs/jbd/transaction.c, 2.4.18): a handle that would take the
    /// running transaction's credits past `j_max_transaction_buffers` starts its commit
    /// (`log_start_commit`) and sleeps on `j_wait_transaction_locked` until kjournald has
    /// begun committing it (while the previous commit runs, that is when it ends). The
    /// transaction's outstanding credits are taken as its metadata blocks plus this handle's.
    pub fn handle_must_wait(&mut self) -> bool {
        let full = self.running.meta + HANDLE_CREDITS > MAX_TRANSACTION_BUFFERS;
        self.commit_requested |= full;
        full
    }

    /// Dirty buffers of a deleted file leave their transactions.
    pub fn drop_data(&mut self, dropped: &[(u64, u64)]) {
        for &(tid, n) in dropped {
            if let Some(t) = self.txn_mut(tid) {
                t.dirty -= n.min(t.dirty);
            }
        }
    }

    /// Should kjournald start a commit now?
    pub fn commit_due(&self, now: Nanos) -> bool {
        self.committing.is_none()
            && (self.running.dirty + self.running.meta > 0 || self.running.submitted_any)
            && (self.commit_requested
                || now >= self.running.started + COMMIT_INTERVAL_NS
                || self.running.meta >= MAX_TRANSACTION_BUFFERS)
    }

    /// journal_commit_transaction() begins: the running transaction becomes the committing one.
    pub fn start_commit(&mut self, now: Nanos) {
        self.next_tid += 1;
        let fresh = Txn {
            tid: self.next_tid,
            started: now,
            ..Txn::default()
        };
        let old = std::mem::replace(&mut self.running, fresh);
        self.committing = Some(old);
        self.commit_requested = false;
    }

    pub fn finish_commit(&mut self) {
        self.committing = None;
        self.commits += 1;
    }

    /// Next journal block for `n` blocks of log (wrapping).
    pub fn log_alloc(&mut self, n: u64) -> u64 {
        if self.log_block + n > JOURNAL_BLOCKS {
            self.log_block = 0;
        }
        let b = JOURNAL_START_BLOCK + self.log_block;
        self.log_block += n;
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn datalist_counts() {
        let mut t = Txn {
            dirty: 100,
            ..Txn::default()
        };
        t.submitted(10, 64);
        t.submitted(74, 20);
        assert_eq!(t.dirty, 16);
        assert_eq!(t.completed(50), 40);
        assert_eq!(t.locked(50), 44);
        t.unfile(30);
        assert_eq!(t.completed(50), 10);
        assert_eq!(t.locked(94), 0);
        assert_eq!(t.completed(94), 54);
        assert_eq!(t.unfiled_hi, 40);
    }

    #[test]
    fn an_inode_is_journaled_once_a_transaction() {
        let mut j = Journal::default();
        for _ in 0..3 {
            j.dirty_inode(7);
        }
        for f in 100..131 {
            j.dirty_inode(f);
        }
        // 32 inodes: one inode-table block's worth.
        assert_eq!(j.running.meta, 1);
        j.start_commit(0);
        j.dirty_inode(7);
        assert_eq!((j.running.meta32, j.running.meta), (1, 0));
    }

    #[test]
    fn a_handle_waits_once_the_transaction_is_full() {
        let mut j = Journal::default();
        j.add_meta32(32 * (MAX_TRANSACTION_BUFFERS - HANDLE_CREDITS));
        assert!(!j.handle_must_wait() && !j.commit_requested);
        j.add_meta32(32);
        assert!(j.handle_must_wait() && j.commit_requested);
        assert!(j.commit_due(0), "a requested commit starts at once");
    }

    #[test]
    fn other_writers_buffers_between_its_own_are_not_its_own() {
        let mut t = Txn::default();
        t.submitted(0, 10);
        // bdflush and page write-out took 90 sequence numbers in between.
        t.submitted(100, 10);
        assert_eq!((t.completed(105), t.locked(105)), (15, 5));
        t.unfile(12);
        assert_eq!((t.completed(110), t.unfiled_hi), (8, 102));
    }
}
