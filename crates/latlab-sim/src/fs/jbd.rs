//! ext3's journal in ordered-data mode (fs/jbd/transaction.c, fs/jbd/commit.c, 2.4.18).
//!
//! Every data buffer a write dirties joins the running transaction's `t_sync_datalist`.
//! kjournald commits the running transaction `j_commit_interval` (5 s) after it started, or
//! when someone forces a commit (`sync`). Commit phase 2 (`write_out_data`) walks the
//! datalist under `journal_datalist_lock`: buffers whose I/O has completed are unfiled one by
//! one, locked ones are skipped, dirty ones are gathered 64 at a time (`wbuf[64]`) and
//! submitted with the lock dropped. Each walk starts where the last batch ended ("Major
//! speedup: start here on the next scan"), so the commit's own written buffers are met again
//! only by the walk that gathers the last dirty ones and goes all the way round the list:
//! that walk unfiles everything written by then, in one stretch under the lock. Then it waits
//! on the last buffer it wrote and walks again. The walk's stretches are counts, not
//! item-by-item work: the list is kept as sequence ranges ahead of and behind the walk's
//! starting point (see [`crate::fs::buffer`] for the numbering).

use super::share;
use latlab_core::Nanos;
use std::collections::{BTreeMap, BTreeSet};

/// `j_commit_interval = HZ * 5` (research notes §2, JBD_DEFAULT_MAX_COMMIT_AGE).
pub const COMMIT_INTERVAL_NS: Nanos = 5_000_000_000;
/// `struct buffer_head *wbuf[64]` in journal_commit_transaction.
pub const WBUF: u64 = 64;

/// Submitted data buffers still on a datalist, as sequence ranges by first number, each of
/// one file: other writers' buffers (another transaction's, metadata, page write-out) take
/// the sequence numbers in between. The disk completes in order, so the locked ones are the
/// spans at and above `done_hi`.
#[derive(Clone, Debug, Default)]
struct Spans {
    map: BTreeMap<u64, (u64, u32)>,
    /// First numbers of each file's spans.
    by_file: BTreeMap<u32, BTreeSet<u64>>,
    /// Buffers in `map`.
    n: u64,
}

impl Spans {
    fn locked(&self, done_hi: u64) -> u64 {
        let straddling = self
            .map
            .range(..done_hi)
            .next_back()
            .map_or(0, |(_, &(hi, _))| hi.saturating_sub(done_hi));
        straddling + self.map.range(done_hi..).map(|(&lo, &(hi, _))| hi - lo).sum::<u64>()
    }
    fn completed(&self, done_hi: u64) -> u64 {
        self.n - self.locked(done_hi)
    }
    fn add(&mut self, file: u32, lo: u64, n: u64) {
        match self.map.range_mut(..lo).next_back() {
            Some((_, (hi, f))) if *hi == lo && *f == file => *hi += n,
            _ => self.insert(lo, lo + n, file),
        }
        self.n += n;
    }
    fn insert(&mut self, lo: u64, hi: u64, file: u32) {
        self.map.insert(lo, (hi, file));
        self.by_file.entry(file).or_default().insert(lo);
    }
    /// Take up to `n` buffers off the span starting at `lo`, from its front; returns how many.
    fn cut(&mut self, lo: u64, n: u64) -> u64 {
        let Some((hi, file)) = self.map.remove(&lo) else {
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
        self.n -= take;
        take
    }
    /// Take the first `n` buffers (completed ones, as the caller counts them), adding their
    /// ranges to `out`.
    fn take_first(&mut self, mut n: u64, out: &mut Vec<(u64, u64)>) -> u64 {
        let mut took = 0;
        while n > 0 {
            let Some((&lo, _)) = self.map.first_key_value() else {
                break;
            };
            let take = self.cut(lo, n);
            out.push((lo, lo + take));
            n -= take;
            took += take;
        }
        took
    }
    /// Move every span at or above `done_hi` (the locked ones) into `to`.
    fn move_locked(&mut self, done_hi: u64, to: &mut Spans) {
        if let Some((&lo, &(hi, file))) = self.map.range(..done_hi).next_back() {
            if hi > done_hi {
                self.cut(lo, hi - lo);
                self.add(file, lo, done_hi - lo);
                to.add(file, done_hi, hi - done_hi);
            }
        }
        let locked: Vec<(u64, (u64, u32))> = self.map.range(done_hi..).map(|(&l, &v)| (l, v)).collect();
        for (lo, (hi, file)) in locked {
            self.cut(lo, hi - lo);
            to.add(file, lo, hi - lo);
        }
    }
    fn of_file(&self, file: u32, done_hi: u64) -> (u64, u64) {
        let mut all = 0;
        let mut done = 0;
        for lo in self.by_file.get(&file).into_iter().flatten() {
            let hi = self.map[lo].0;
            all += hi - lo;
            done += hi.min(done_hi).saturating_sub(*lo);
        }
        (all, done)
    }
    /// `n` of `file`'s buffers leave, its oldest first (those below `below` only); returns
    /// how many are left to take.
    fn take_file(&mut self, file: u32, mut n: u64, below: u64) -> u64 {
        while n > 0 {
            let Some(&lo) = self.by_file.get(&file).and_then(|s| s.first()) else {
                break;
            };
            if lo >= below {
                break;
            }
            let hi = self.map[&lo].0;
            n -= self.cut(lo, n.min(hi.min(below) - lo));
        }
        n
    }
}

#[derive(Clone, Debug, Default)]
pub struct Txn {
    pub tid: u64,
    pub started: Nanos,
    /// Data buffers of this transaction not yet submitted.
    pub dirty: u64,
    /// Submitted buffers the commit's walk has not passed yet: other writers' (bdflush,
    /// kupdated, `balance_dirty`), which write the oldest dirty buffers first, so they lie on
    /// the list between the walk's starting point and the dirty buffers it has yet to gather.
    ahead: Spans,
    /// Submitted buffers behind the walk's starting point: the commit's own batches ("Major
    /// speedup: start here on the next scan" moves `t_sync_datalist` past each batch) and
    /// those it passed while they were locked. A walk meets them only when it goes all the
    /// way round the list.
    behind: Spans,
    /// It has submitted buffers.
    pub submitted_any: bool,
    /// Sequence number after its last submitted buffer.
    pub sub_hi: u64,
    /// Metadata blocks to write to the journal at commit.
    pub meta: u64,
    meta32: u64,
    /// Files whose inode (its share of an inode-table block) this transaction already holds.
    inodes: BTreeSet<u32>,
    /// jbd2's `t_inode_list`: the inodes whose data the commit writes or waits for
    /// ([`crate::fs::jbd2`]); empty under jbd.
    pub(super) jinodes: BTreeMap<u32, crate::fs::jbd2::JInode>,
}

/// Which part of the datalist a commit walk passes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Region {
    /// From `t_sync_datalist` to the dirty buffers still to gather: the buffers other writers
    /// submitted.
    Ahead,
    /// All the way round: the walk that gathers the last dirty buffers, and every walk after.
    All,
}

impl Txn {
    fn sets(&self, r: Region) -> impl Iterator<Item = &Spans> {
        std::iter::once(&self.ahead).chain((r == Region::All).then_some(&self.behind))
    }
    /// Submitted, still locked buffers on the datalist in `r` (the disk completes in order,
    /// so these are the spans at and above `done_hi`: a few requests' worth).
    pub fn locked(&self, r: Region, done_hi: u64) -> u64 {
        self.sets(r).map(|s| s.locked(done_hi)).sum()
    }
    /// Completed, not yet unfiled buffers on the datalist in `r`.
    pub fn completed(&self, r: Region, done_hi: u64) -> u64 {
        self.sets(r).map(|s| s.completed(done_hi)).sum()
    }
    /// Record a submission of `n` buffers of `file` at `lo..lo+n`, by the commit itself
    /// (`own`) or another writer.
    pub fn submitted(&mut self, file: u32, lo: u64, n: u64, own: bool) {
        if n == 0 {
            return;
        }
        if own { &mut self.behind } else { &mut self.ahead }.add(file, lo, n);
        self.submitted_any = true;
        self.sub_hi = self.sub_hi.max(lo + n);
        self.dirty -= n.min(self.dirty);
    }
    /// Unfile the next `n` completed buffers a walk of `r` meets (those ahead first); returns
    /// their sequence ranges, for `refile_buffer`.
    pub fn unfile(&mut self, r: Region, n: u64, done_hi: u64) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        let left = n - self.ahead.take_first(n.min(self.ahead.completed(done_hi)), &mut out);
        if r == Region::All && left > 0 {
            self.behind
                .take_first(left.min(self.behind.completed(done_hi)), &mut out);
        }
        out
    }
    /// The walk passed the locked buffers ahead of it: they are behind it now.
    pub fn pass_locked(&mut self, done_hi: u64) {
        self.ahead.move_locked(done_hi, &mut self.behind);
    }
    /// Buffers of `file` on the datalist, and of those the completed ones.
    pub fn of_file(&self, file: u32, done_hi: u64) -> (u64, u64) {
        let (a, b) = (self.ahead.of_file(file, done_hi), self.behind.of_file(file, done_hi));
        (a.0 + b.0, a.1 + b.1)
    }
    /// `n` of `file`'s buffers leave the datalist (those below `below` only: completed ones
    /// for reclaim, any for a re-dirty): those behind the commit's walk first, then those
    /// ahead of it, each set's oldest first.
    pub fn take_file(&mut self, file: u32, n: u64, below: u64) {
        let n = self.behind.take_file(file, n, below);
        self.ahead.take_file(file, n, below);
    }
}

#[derive(Debug, Default)]
pub struct Journal {
    /// kjournald commits under the big kernel lock (2.4's jbd; 2.6's takes none), as
    /// [`crate::assemble`] sets it.
    pub(super) commit_holds_bkl: bool,
    /// jbd2: data is ordered by inode (`t_inode_list`), not by buffer, as
    /// [`crate::assemble`] sets it.
    pub(super) by_inode: bool,
    pub(super) running: Txn,
    pub(super) committing: Option<Txn>,
    next_tid: u64,
    /// A commit was asked for (sync, journal full) before the interval ran out.
    pub(super) commit_requested: bool,
    /// Transactions committed so far.
    pub(super) commits: u64,
    /// Next free block of the journal area (for disk positions).
    pub(super) log_block: u64,
    /// `t_updates` of the running transaction, as far as the model counts it: handles held
    /// open across a sleep (a page's handle in `ext3_ordered_writepage` while its buffer waits
    /// for a request, an append's while it reads a block bitmap). A handle held over CPU work
    /// alone is stopped before kjournald could begin a commit and is not counted.
    pub(super) updates: u32,
    /// `T_LOCKED`: kjournald has begun the commit and waits for `updates` to drain; new
    /// handles wait until it has taken the transaction.
    pub(super) locked: bool,
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
    /// kjournald's commit runs under the big kernel lock (2.4's jbd).
    pub fn commit_holds_bkl(&self) -> bool {
        self.commit_holds_bkl
    }
    /// The running transaction's `t_expires`: when the commit timer wakes kjournald.
    pub fn commit_expires(&self) -> Nanos {
        self.running.started + COMMIT_INTERVAL_NS
    }
    /// Transactions committed so far.
    pub fn commits(&self) -> u64 {
        self.commits
    }
    /// An empty journal; `commit_holds_bkl`: kjournald commits under the big kernel lock;
    /// `by_inode`: jbd2's ordered data by inode.
    pub fn new(commit_holds_bkl: bool, by_inode: bool) -> Self {
        Journal {
            commit_holds_bkl,
            by_inode,
            ..Default::default()
        }
    }

    /// The journal's kernel thread.
    pub fn thread(&self) -> crate::kernel::state::Kthread {
        crate::kernel::state::Kthread::Kjournald
    }

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
        full || self.locked
    }

    /// A handle of the running transaction stays open while its task sleeps.
    pub fn handle_sleeps(&mut self) {
        self.updates += 1;
    }

    /// `journal_stop` of a handle counted by [`Self::handle_sleeps`]; true when it was the
    /// last one a `T_LOCKED` commit waited for (the caller wakes `j_wait_updates`).
    pub fn handle_stopped(&mut self) -> bool {
        self.updates = self.updates.saturating_sub(1);
        self.locked && self.updates == 0
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

    /// The committing transaction's id, if a commit runs.
    pub fn committing_tid(&self) -> Option<u64> {
        self.committing.as_ref().map(|t| t.tid)
    }

    /// Should kjournald start a commit now?
    pub fn commit_due(&self, now: Nanos) -> bool {
        self.committing.is_none()
            && (self.running.dirty + self.running.meta > 0
                || self.running.submitted_any
                || !self.running.jinodes.is_empty())
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
        t.submitted(1, 10, 64, false);
        t.submitted(2, 74, 20, false);
        assert_eq!(t.dirty, 16);
        assert_eq!(t.completed(Region::All, 50), 40);
        assert_eq!(t.locked(Region::All, 50), 44);
        assert_eq!(t.unfile(Region::All, 30, 50), vec![(10, 40)]);
        assert_eq!(t.completed(Region::All, 50), 10);
        assert_eq!(t.locked(Region::All, 94), 0);
        assert_eq!(t.completed(Region::All, 94), 54);
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
        t.submitted(1, 0, 10, false);
        // bdflush and page write-out took 90 sequence numbers in between.
        t.submitted(1, 100, 10, false);
        assert_eq!((t.completed(Region::All, 105), t.locked(Region::All, 105)), (15, 5));
        assert_eq!(t.unfile(Region::All, 12, 110), vec![(0, 10), (100, 102)]);
        assert_eq!(t.completed(Region::All, 110), 8);
    }

    #[test]
    fn the_commits_own_batches_are_met_only_by_a_walk_all_the_way_round() {
        let mut t = Txn {
            dirty: 1000,
            ..Txn::default()
        };
        // bdflush wrote 32, then the commit 64 of its own, then bdflush 32 more.
        t.submitted(1, 0, 32, false);
        t.submitted(1, 32, 64, true);
        t.submitted(1, 96, 32, false);
        // All written but the last 16.
        assert_eq!(t.completed(Region::Ahead, 112), 48);
        assert_eq!(t.completed(Region::All, 112), 112);
        // A walk gathering more dirty buffers unfiles only those ahead of it...
        assert_eq!(t.unfile(Region::Ahead, 100, 112), vec![(0, 32), (96, 112)]);
        // ...and passes the locked ones, which are then behind it.
        assert_eq!(t.locked(Region::Ahead, 112), 16);
        t.pass_locked(112);
        assert_eq!((t.locked(Region::Ahead, 112), t.locked(Region::All, 112)), (0, 16));
        // The walk all the way round unfiles its own batch, then the passed ones.
        assert_eq!(t.unfile(Region::All, 80, 128), vec![(32, 96), (112, 128)]);
        assert_eq!(t.of_file(1, 128), (0, 0));
    }

    #[test]
    fn a_deleted_file_leaves_the_running_transaction_not_the_committing_one() {
        let mut j = Journal::default();
        j.running.submitted(1, 0, 10, false);
        j.running.submitted(2, 10, 10, false);
        j.start_commit(0);
        j.running.submitted(1, 20, 10, false);
        j.running.submitted(2, 30, 5, false);
        j.running.submitted(1, 35, 5, false);
        j.pages_truncated(1, 1, 1, &[]);
        assert_eq!(j.running.of_file(1, 0), (0, 0));
        let r = &j.running;
        assert_eq!((r.completed(Region::All, 40), r.locked(Region::All, 0)), (5, 5));
        let c = j.committing.as_ref().expect("committing");
        assert_eq!((c.of_file(1, 40), c.completed(Region::All, 40)), ((10, 10), 20));
    }

    #[test]
    fn reclaim_unfiles_a_files_completed_buffers_in_both_transactions() {
        let mut j = Journal::default();
        j.running.submitted(1, 0, 40, false);
        j.start_commit(0);
        j.running.submitted(1, 40, 40, false);
        // Half of file 1's 100 cached pages freed; buffers up to 60 are written.
        j.pages_freed(1, 50, 100, 60);
        let c = j.committing.as_ref().expect("committing");
        assert_eq!(c.of_file(1, 60), (20, 20));
        // Of the running transaction's 40, 20 are written: half of those go, none in flight.
        assert_eq!(j.running.of_file(1, 60), (30, 10));
        assert_eq!(j.running.locked(Region::All, 60), 20);
    }

    #[test]
    fn a_buffer_dirtied_again_keeps_one_entry() {
        let mut j = Journal::default();
        j.running.submitted(3, 0, 64, false);
        // 16 of the file's 64 clean pages written again: all of them are on the list.
        j.redirty(3, 16, 64);
        j.add_data(16);
        j.running.submitted(3, 100, 16, false);
        assert_eq!(j.running.of_file(3, 200), (64, 64));
        // Half the file's pages were never on this transaction's list.
        j.redirty(3, 10, 128);
        assert_eq!(j.running.of_file(3, 200).0, 59);
    }
}
