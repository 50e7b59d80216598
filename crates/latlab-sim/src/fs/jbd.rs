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

use super::share;
use latlab_core::Nanos;
use std::collections::{BTreeMap, BTreeSet};

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
    /// Its submitted data buffers still on the datalist, as sequence ranges by first number,
    /// each of one file: other writers' buffers (another transaction's, metadata, page
    /// write-out) take the sequence numbers in between.
    spans: BTreeMap<u64, (u64, u32)>,
    /// First numbers of each file's spans.
    by_file: BTreeMap<u32, BTreeSet<u64>>,
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
    /// Submitted, still locked buffers on the datalist (the disk completes in order, so
    /// these are the spans at and above `done_hi`: a few requests' worth).
    pub fn locked(&self, done_hi: u64) -> u64 {
        let straddling = self
            .spans
            .range(..done_hi)
            .next_back()
            .map_or(0, |(_, &(hi, _))| hi.saturating_sub(done_hi));
        straddling + self.spans.range(done_hi..).map(|(&lo, &(hi, _))| hi - lo).sum::<u64>()
    }
    /// Completed, not yet unfiled buffers on the datalist.
    pub fn completed(&self, done_hi: u64) -> u64 {
        self.on_list - self.locked(done_hi)
    }
    /// Record a submission of `n` buffers of `file` at `lo..lo+n`.
    pub fn submitted(&mut self, file: u32, lo: u64, n: u64) {
        if n == 0 {
            return;
        }
        match self.spans.range_mut(..lo).next_back() {
            Some((_, (hi, f))) if *hi == lo && *f == file => *hi += n,
            _ => self.insert(lo, lo + n, file),
        }
        self.on_list += n;
        self.submitted_any = true;
        self.sub_hi = self.sub_hi.max(lo + n);
        self.dirty -= n.min(self.dirty);
    }
    fn insert(&mut self, lo: u64, hi: u64, file: u32) {
        self.spans.insert(lo, (hi, file));
        self.by_file.entry(file).or_default().insert(lo);
    }
    /// Take up to `n` buffers off the span starting at `lo`, from its front; returns how many.
    fn cut(&mut self, lo: u64, n: u64) -> u64 {
        let Some((hi, file)) = self.spans.remove(&lo) else {
            return 0;
        };
        if let Some(set) = self.by_file.get_mut(&file) {
            set.remove(&lo);
            if set.is_empty() {
                self.by_file.remove(&file);
            }
        }
        let take = n.min(hi - lo);
        if lo + take < hi {
            self.insert(lo + take, hi, file);
        }
        self.on_list -= take;
        take
    }
    /// Unfile the next `n` completed buffers (the commit's walk, from the list's head).
    pub fn unfile(&mut self, mut n: u64) {
        while n > 0 {
            let Some((&lo, _)) = self.spans.first_key_value() else {
                break;
            };
            let take = self.cut(lo, n);
            self.unfiled_hi = lo + take;
            n -= take;
        }
    }
    /// Buffers of `file` on the datalist, and of those the completed ones.
    pub fn of_file(&self, file: u32, done_hi: u64) -> (u64, u64) {
        let mut all = 0;
        let mut done = 0;
        for lo in self.by_file.get(&file).into_iter().flatten() {
            let hi = self.spans[lo].0;
            all += hi - lo;
            done += hi.min(done_hi).saturating_sub(*lo);
        }
        (all, done)
    }
    /// `n` of `file`'s buffers leave the datalist, its oldest first (those below `below`
    /// only: completed ones for reclaim, any for a re-dirty).
    pub fn take_file(&mut self, file: u32, mut n: u64, below: u64) {
        while n > 0 {
            let Some(&lo) = self.by_file.get(&file).and_then(|s| s.first()) else {
                break;
            };
            if lo >= below {
                break;
            }
            let hi = self.spans[&lo].0;
            n -= self.cut(lo, n.min(hi.min(below) - lo));
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

    /// Truncation dropped `n` of `file`'s `cached` pages (`n >= cached`: all). Their dirty
    /// buffers left their transactions with the dirty list (`dropped`: per transaction);
    /// `journal_unmap_buffer` takes the rest of their buffers off the running transaction's
    /// datalist, whatever their state (the dropped pages taken to be spread evenly over the
    /// file's). Those on the committing transaction's stay until its commit unfiles them
    /// ("If it is committing, we simply cannot touch it").
    pub fn pages_truncated(&mut self, file: u32, n: u64, cached: u64, dropped: &[(u64, u64)]) {
        for &(tid, n) in dropped {
            if let Some(t) = self.txn_mut(tid) {
                t.dirty -= n.min(t.dirty);
            }
        }
        let (on, _) = self.running.of_file(file, 0);
        self.running.take_file(file, share(on, n, cached), u64::MAX);
    }

    /// Reclaim freed `n` of `file`'s `cached` pages: `journal_try_to_free_buffers` unfiles
    /// the completed data buffers among them from whichever transaction holds them. The freed
    /// pages are taken to be spread evenly over the file's cached pages.
    pub fn pages_freed(&mut self, file: u32, n: u64, cached: u64, done_hi: u64) {
        for t in std::iter::once(&mut self.running).chain(self.committing.as_mut()) {
            let (_, done) = t.of_file(file, done_hi);
            t.take_file(file, share(done, n, cached), done_hi);
        }
    }

    /// A write dirtied `n` clean buffers of `file`, which has `clean` pages not dirty. Those
    /// already on the running transaction's datalist keep their one entry
    /// (`journal_dirty_data` finds the buffer on its own list): the model takes them off and
    /// lets their next submission put them back. The rewritten pages are taken to be spread
    /// evenly over the file's clean pages.
    pub fn redirty(&mut self, file: u32, n: u64, clean: u64) {
        let (on, _) = self.running.of_file(file, 0);
        self.running.take_file(file, share(on, n, clean).min(n), u64::MAX);
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
        t.submitted(1, 10, 64);
        t.submitted(2, 74, 20);
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
        t.submitted(1, 0, 10);
        // bdflush and page write-out took 90 sequence numbers in between.
        t.submitted(1, 100, 10);
        assert_eq!((t.completed(105), t.locked(105)), (15, 5));
        t.unfile(12);
        assert_eq!((t.completed(110), t.unfiled_hi), (8, 102));
    }

    #[test]
    fn a_deleted_file_leaves_the_running_transaction_not_the_committing_one() {
        let mut j = Journal::default();
        j.running.submitted(1, 0, 10);
        j.running.submitted(2, 10, 10);
        j.start_commit(0);
        j.running.submitted(1, 20, 10);
        j.running.submitted(2, 30, 5);
        j.running.submitted(1, 35, 5);
        j.pages_truncated(1, 1, 1, &[]);
        assert_eq!(j.running.of_file(1, 0), (0, 0));
        assert_eq!((j.running.completed(40), j.running.locked(0)), (5, 5));
        let c = j.committing.as_ref().expect("committing");
        assert_eq!((c.of_file(1, 40), c.completed(40)), ((10, 10), 20));
    }

    #[test]
    fn reclaim_unfiles_a_files_completed_buffers_in_both_transactions() {
        let mut j = Journal::default();
        j.running.submitted(1, 0, 40);
        j.start_commit(0);
        j.running.submitted(1, 40, 40);
        // Half of file 1's 100 cached pages freed; buffers up to 60 are written.
        j.pages_freed(1, 50, 100, 60);
        let c = j.committing.as_ref().expect("committing");
        assert_eq!(c.of_file(1, 60), (20, 20));
        // Of the running transaction's 40, 20 are written: half of those go, none in flight.
        assert_eq!(j.running.of_file(1, 60), (30, 10));
        assert_eq!(j.running.locked(60), 20);
    }

    #[test]
    fn a_buffer_dirtied_again_keeps_one_entry() {
        let mut j = Journal::default();
        j.running.submitted(3, 0, 64);
        // 16 of the file's 64 clean pages written again: all of them are on the list.
        j.redirty(3, 16, 64);
        j.add_data(16);
        j.running.submitted(3, 100, 16);
        assert_eq!(j.running.of_file(3, 200), (64, 64));
        // Half the file's pages were never on this transaction's list.
        j.redirty(3, 10, 128);
        assert_eq!(j.running.of_file(3, 200).0, 59);
    }
}
