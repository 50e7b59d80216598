//! The 2.4 buffer cache's LRU lists (fs/buffer.c, 2.4.17/2.4.18), as far as their lengths
//! decide how long `write_some_buffers`, `wait_for_buffers` and the journal commit walk.
//!
//! Data buffers are 4 KiB blocks (ext3 with 4 KiB blocks, research notes §4). A buffer is
//! dirtied by a write, written out by whoever comes first (the writer in `balance_dirty`,
//! bdflush, kupdated, sync, or kjournald's commit) and completes when the disk says so.
//! Writers always take the oldest dirty buffers first (the BUF_DIRTY list is in dirtying
//! order), and the disk completes requests in order, so the model keeps:
//! - dirty buffers as a FIFO of runs (file, transaction, count), so a deleted file's dirty
//!   buffers can be dropped (`journal_unmap_buffer` / `discard_buffer`);
//! - submitted buffers as sequence numbers handed out at submission, with every number below
//!   `done_hi` complete;
//! - the buffers still sitting on BUF_LOCKED, a FIFO of sequence ranges, until someone
//!   refiles them. Every writer of these workloads' buffers refiles them there as it submits
//!   them (`__mark_buffer_clean`: `write_some_buffers`, `ll_rw_block`, and page reclaim's
//!   `sync_page_buffers`), so BUF_DIRTY holds dirty buffers only. (Only
//!   `__block_write_full_page`, the writepage of a PG_dirty page, leaves locked buffers on
//!   BUF_DIRTY; write() never sets PG_dirty in 2.4, and the workloads map no files.)

use super::share;
use latlab_core::Nanos;
use std::collections::VecDeque;

/// A run of dirty, not yet submitted buffers of one file in one transaction.
#[derive(Clone, Copy, Debug)]
pub struct DirtyRun {
    pub file: u32,
    pub txn: u64,
    pub count: u64,
    pub dirtied_at: Nanos,
    /// Disk block of the run's first buffer.
    pub block: u64,
}

/// Submitted buffers `lo..hi` not yet refiled off the list they sit on.
#[derive(Clone, Copy, Debug)]
struct Span {
    lo: u64,
    hi: u64,
    /// The file whose buffers these are (a batch never spans two files).
    file: u32,
}

/// Who submitted a batch (all refile it to BUF_LOCKED).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Via {
    /// `write_some_buffers`, page reclaim's `sync_page_buffers`.
    Writer,
    /// kjournald's `ll_rw_block` of its commit's data buffers: on its datalist behind the
    /// commit's walk.
    Journal,
}

#[derive(Default)]
pub struct BufferCache {
    dirty: VecDeque<DirtyRun>,
    pub(super) nr_dirty: u64,
    next_seq: u64,
    pub(super) done_hi: u64,
    on_locked: VecDeque<Span>,
    nr_on_locked: u64,
    /// Buffers written out in all.
    pub(super) written: u64,
    /// Sequence ranges page reclaim wrote (`sync_page_buffers` sets BH_launder on them, and
    /// a reclaimer meeting one still locked waits for it), oldest first.
    launder: VecDeque<(u64, u64)>,
    /// Dirty, not yet submitted buffers by file (a rewrite of a page still dirty dirties no
    /// new buffer).
    pending: std::collections::BTreeMap<u32, u64>,
}

/// A batch just taken off the dirty FIFO for submission.
pub struct Batch {
    pub lo: u64,
    pub hi: u64,
    /// The file and transaction its buffers belong to.
    pub file: u32,
    pub txn: u64,
    /// Disk block of the first buffer.
    pub block: u64,
    /// When the buffers were dirtied.
    pub dirtied_at: Nanos,
}

fn count_completed(q: &VecDeque<Span>, done_hi: u64) -> u64 {
    let mut n = 0;
    for s in q {
        if s.lo >= done_hi {
            break;
        }
        n += s.hi.min(done_hi) - s.lo;
        if s.hi > done_hi {
            break;
        }
    }
    n
}

/// The first buffer of `q` still under write, if any.
fn first_inflight(q: &VecDeque<Span>, done_hi: u64) -> Option<u64> {
    q.iter().find(|s| s.hi > done_hi).map(|s| s.lo.max(done_hi))
}

fn pop_front_n(q: &mut VecDeque<Span>, total: &mut u64, mut n: u64) {
    while n > 0 {
        let Some(s) = q.front_mut() else { break };
        let len = s.hi - s.lo;
        if len <= n {
            n -= len;
            *total -= len;
            q.pop_front();
        } else {
            s.lo += n;
            *total -= n;
            n = 0;
        }
    }
}

/// Take the buffers `lo..hi` off `q` (in sequence order, spans disjoint), wherever they sit.
fn remove_range(q: &mut VecDeque<Span>, total: &mut u64, lo: u64, hi: u64) {
    let mut i = q.partition_point(|s| s.hi <= lo);
    while i < q.len() && q[i].lo < hi {
        let s = q[i];
        if s.hi <= lo {
            i += 1;
            continue;
        }
        let (a, b) = (s.lo.max(lo), s.hi.min(hi));
        *total -= b - a;
        match (s.lo < a, b < s.hi) {
            (false, false) => {
                q.remove(i);
            }
            (true, false) => {
                q[i].hi = a;
                i += 1;
            }
            (false, true) => {
                q[i].lo = b;
                i += 1;
            }
            (true, true) => {
                q[i].hi = a;
                q.insert(i + 1, Span { lo: b, ..s });
                i += 2;
            }
        }
    }
}

/// Completed buffers of `file` in `q`.
fn completed_of(q: &VecDeque<Span>, file: u32, done_hi: u64) -> u64 {
    q.iter()
        .take_while(|s| s.lo < done_hi)
        .filter(|s| s.file == file)
        .map(|s| s.hi.min(done_hi) - s.lo)
        .sum()
}

/// Take up to `n` completed buffers of `file` off `q`, its oldest first.
fn drop_completed_of(q: &mut VecDeque<Span>, total: &mut u64, file: u32, mut n: u64, done_hi: u64) {
    let mut i = 0;
    while n > 0 && i < q.len() && q[i].lo < done_hi {
        let s = q[i];
        if s.file != file {
            i += 1;
            continue;
        }
        let take = (s.hi.min(done_hi) - s.lo).min(n);
        n -= take;
        *total -= take;
        if s.lo + take == s.hi {
            q.remove(i);
        } else {
            q[i].lo += take;
            i += 1;
        }
    }
}

impl BufferCache {
    /// `nr_buffers_type[BUF_DIRTY]`: dirty buffers not yet submitted.
    pub fn nr_dirty(&self) -> u64 {
        self.nr_dirty
    }
    /// The sequence number below which every submitted buffer is written.
    pub fn done_hi(&self) -> u64 {
        self.done_hi
    }
    /// The last of `file`'s submitted buffers still under write, if any (what a wait for
    /// the file's writeback sleeps on).
    pub fn last_inflight_of(&self, file: u32) -> Option<u64> {
        let done_hi = self.done_hi;
        self.on_locked
            .iter()
            .rev()
            .find(|s| s.file == file && s.hi > done_hi)
            .map(|s| s.hi - 1)
    }
    /// Buffers written to disk so far.
    pub fn written(&self) -> u64 {
        self.written
    }
    /// A write dirtied `n` new buffers of `file` in transaction `txn`.
    pub fn dirty(&mut self, file: u32, txn: u64, n: u64, block: u64, now: Nanos) {
        if n == 0 {
            return;
        }
        self.nr_dirty += n;
        *self.pending.entry(file).or_default() += n;
        if let Some(last) = self.dirty.back_mut() {
            if last.file == file && last.txn == txn && last.block + last.count == block {
                last.count += n;
                return;
            }
        }
        self.dirty.push_back(DirtyRun {
            file,
            txn,
            count: n,
            dirtied_at: now,
            block,
        });
    }

    /// Truncation dropped the last `n` of `file`'s `cached` pages (`truncate_inode_pages` ->
    /// `block_flushpage` -> `discard_buffer` and `try_to_free_buffers` for each page's
    /// buffers; `n >= cached`: all of them). Its dirty buffers, its newest pages, are cleaned
    /// and leave BUF_DIRTY first; its written-out buffers nobody has refiled yet leave
    /// BUF_LOCKED, the rest of the dropped pages taken to be spread evenly over its clean
    /// ones. Dirty buffers of transaction `pinned` (the committing one) stay dirty:
    /// `journal_unmap_buffer` "simply cannot touch" them, and the commit writes them out
    /// (fs/jbd/transaction.c, 2.4.18). Returns the dirty ones dropped, per transaction, and
    /// how many of the dropped pages were kept for `pinned` (never more than `n` or
    /// `cached`: with `pinned`, `cached` must be the file's cached pages).
    pub fn pages_truncated(&mut self, file: u32, n: u64, cached: u64, pinned: Option<u64>) -> (Vec<(u64, u64)>, u64) {
        let pending = self.pending_of(file);
        let mut left = if n >= cached { pending } else { n.min(pending) };
        let mut dropped: Vec<(u64, u64)> = Vec::new();
        let mut kept = 0;
        for i in (0..self.dirty.len()).rev() {
            if left == 0 {
                break;
            }
            let r = &mut self.dirty[i];
            if r.file != file {
                continue;
            }
            let take = r.count.min(left);
            left -= take;
            if Some(r.txn) == pinned {
                kept += take;
                continue;
            }
            r.count -= take;
            match dropped.iter_mut().find(|(t, _)| *t == r.txn) {
                Some(d) => d.1 += take,
                None => dropped.push((r.txn, take)),
            }
            if r.count == 0 {
                self.dirty.remove(i);
            }
        }
        // A pinned run stays on the dirty list, so a later chunk of the same truncate meets
        // it again: no more pages are pinned than this call drops.
        let kept = kept.min(n.min(cached));
        let gone: u64 = dropped.iter().map(|d| d.1).sum();
        self.nr_dirty -= gone;
        self.unpend(file, gone);
        let (clean_n, clean) = if n >= cached {
            (1, 1)
        } else {
            (n - (gone + kept).min(n), cached - pending.min(cached))
        };
        let done_hi = self.done_hi;
        let k = share(completed_of(&self.on_locked, file, done_hi), clean_n, clean);
        drop_completed_of(&mut self.on_locked, &mut self.nr_on_locked, file, k, done_hi);
        (dropped, kept)
    }

    /// `n` of `file`'s dirty buffers were submitted or discarded.
    fn unpend(&mut self, file: u32, n: u64) {
        if let Some(p) = self.pending.get_mut(&file) {
            *p -= n.min(*p);
            if *p == 0 {
                self.pending.remove(&file);
            }
        }
    }

    /// Dirty buffers of `file` not yet submitted.
    pub fn pending_of(&self, file: u32) -> u64 {
        self.pending.get(&file).copied().unwrap_or(0)
    }

    /// When the buffer at the head of BUF_DIRTY was dirtied (kupdated compares its
    /// `b_flushtime`).
    pub fn oldest_dirty(&self) -> Option<Nanos> {
        self.dirty.front().map(|r| r.dirtied_at)
    }

    /// Take up to `max` of the oldest dirty buffers (only of transaction `only_txn` if given)
    /// for submission. Contiguous disk blocks only: a batch stops at a file boundary.
    pub fn take(&mut self, max: u64, only_txn: Option<u64>) -> Option<Batch> {
        let idx = match only_txn {
            Some(t) => self.dirty.iter().position(|r| r.txn == t)?,
            None => 0,
        };
        self.take_at(idx, max)
    }

    /// Take up to `max` of `file`'s oldest dirty buffers (2.6's `mpage_writepages` of one
    /// inode) for submission.
    pub fn take_file(&mut self, file: u32, max: u64) -> Option<Batch> {
        let idx = self.dirty.iter().position(|r| r.file == file)?;
        self.take_at(idx, max)
    }

    /// The files with dirty buffers, each with when its oldest was dirtied, in that order
    /// (2.6's `s_dirty` of inodes with dirty pages, oldest `dirtied_when` first).
    pub fn dirty_files(&self) -> Vec<(u32, Nanos)> {
        let mut out: Vec<(u32, Nanos)> = Vec::new();
        for r in &self.dirty {
            if !out.iter().any(|&(f, _)| f == r.file) {
                out.push((r.file, r.dirtied_at));
            }
        }
        out.sort_by_key(|&(_, t)| t);
        out
    }

    /// Dirty buffers of `file` at disk blocks `lo..hi`.
    pub fn dirty_in(&self, file: u32, lo: u64, hi: u64) -> u64 {
        self.dirty
            .iter()
            .filter(|r| r.file == file)
            .map(|r| (r.block + r.count).min(hi).saturating_sub(r.block.max(lo)))
            .sum()
    }

    /// When `file`'s oldest dirty buffer was dirtied.
    pub fn dirtied_when(&self, file: u32) -> Option<Nanos> {
        self.dirty.iter().find(|r| r.file == file).map(|r| r.dirtied_at)
    }

    /// Disk block of `file`'s oldest dirty buffer.
    pub fn first_dirty_block(&self, file: u32) -> Option<u64> {
        self.dirty.iter().find(|r| r.file == file).map(|r| r.block)
    }

    /// Buffers submitted whose I/O has not completed (2.6's `nr_writeback`).
    pub fn in_flight(&self) -> u64 {
        self.next_seq.saturating_sub(self.done_hi)
    }

    fn take_at(&mut self, idx: usize, max: u64) -> Option<Batch> {
        let run = self.dirty.get_mut(idx)?;
        let n = run.count.min(max);
        let block = run.block;
        let txn = run.txn;
        let dirtied_at = run.dirtied_at;
        let file = run.file;
        run.count -= n;
        run.block += n;
        if run.count == 0 {
            self.dirty.remove(idx);
        }
        self.unpend(file, n);
        self.nr_dirty -= n;
        let lo = self.next_seq;
        self.next_seq += n;
        Some(Batch {
            lo,
            hi: lo + n,
            file,
            txn,
            block,
            dirtied_at,
        })
    }

    /// A batch went to the disk, refiled to BUF_LOCKED. The list is kept in sequence order
    /// (a batch numbered earlier may reach the disk later, its writer having waited for a
    /// request slot).
    pub fn submitted(&mut self, b: &Batch) {
        let span = Span {
            lo: b.lo,
            hi: b.hi,
            file: b.file,
        };
        let at = self.on_locked.partition_point(|s| s.lo < span.lo);
        self.on_locked.insert(at, span);
        self.nr_on_locked += b.hi - b.lo;
    }

    /// Disk completion of buffers `lo..hi` (completions arrive in order).
    pub fn io_done(&mut self, hi: u64, n: u64) {
        self.done_hi = self.done_hi.max(hi);
        self.written += n;
    }

    /// BUF_LOCKED: completed buffers at the head (what `wait_for_buffers(.., BUF_LOCKED, 1)`
    /// refiles before it meets a locked one).
    pub fn locked_list_completed(&self) -> u64 {
        count_completed(&self.on_locked, self.done_hi)
    }

    /// The first still-locked buffer on BUF_LOCKED, if any.
    pub fn locked_list_first_inflight(&self) -> Option<u64> {
        first_inflight(&self.on_locked, self.done_hi)
    }

    pub fn nr_locked_list(&self) -> u64 {
        self.nr_on_locked
    }

    /// Refile `n` completed buffers off the head of BUF_LOCKED.
    pub fn refile_locked(&mut self, n: u64) {
        pop_front_n(&mut self.on_locked, &mut self.nr_on_locked, n);
    }

    /// The buffers of these sequence ranges were refiled to BUF_CLEAN (the journal commit
    /// unfiling them).
    pub fn refile_ranges(&mut self, ranges: &[(u64, u64)]) {
        for &(lo, hi) in ranges {
            remove_range(&mut self.on_locked, &mut self.nr_on_locked, lo, hi);
        }
    }

    /// Buffers `balance_dirty_state()` counts as dirty: BUF_DIRTY + BUF_LOCKED (2.4.17).
    pub fn dirty_for_balance(&self) -> u64 {
        self.nr_dirty + self.nr_on_locked
    }

    /// Sequence number the next submitted buffer gets.
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// `shrink_cache` sent buffers `lo..hi` to writepage (SetPageLaunder).
    pub fn laundering(&mut self, lo: u64, hi: u64) {
        self.launder.push_back((lo, hi));
    }

    /// The oldest BH_launder buffer still under write, if any (completed ranges are dropped
    /// on the way). Unlike [`Self::locked_list_first_inflight`] this counts a batch whose
    /// request is not queued yet (its writer waiting for a request slot).
    pub fn launder_inflight(&mut self) -> Option<u64> {
        while let Some(&(lo, hi)) = self.launder.front() {
            if hi > self.done_hi {
                return Some(lo.max(self.done_hi));
            }
            self.launder.pop_front();
        }
        None
    }

    /// `freed` of the `cache` cached pages were reclaimed: their buffers leave whatever list
    /// they sit on (`try_to_free_buffers`). Written-out buffers nobody has refiled yet still
    /// sit on BUF_LOCKED; their pages are taken to be spread evenly over the cache, so a
    /// share of them goes.
    pub fn pages_freed(&mut self, freed: u64, cache: u64) {
        if cache == 0 || freed == 0 {
            return;
        }
        let n = share(count_completed(&self.on_locked, self.done_hi), freed, cache);
        pop_front_n(&mut self.on_locked, &mut self.nr_on_locked, n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fifo_submission_and_completion() {
        let mut b = BufferCache::default();
        b.dirty(1, 1, 100, 1000, 0);
        b.dirty(2, 1, 50, 5000, 0);
        let x = b.take(32, None).unwrap();
        assert_eq!((x.lo, x.hi, x.block), (0, 32, 1000));
        b.submitted(&x);
        let y = b.take(64, None).unwrap();
        assert_eq!((y.lo, y.hi), (32, 96));
        b.submitted(&y);
        assert_eq!(b.nr_dirty, 54);
        b.io_done(40, 40);
        assert_eq!((b.locked_list_completed(), b.nr_locked_list()), (40, 96));
        assert_eq!(b.locked_list_first_inflight(), Some(40));
        b.refile_locked(32);
        assert_eq!(b.nr_locked_list(), 64);
        b.refile_ranges(&[(32, 60)]);
        assert_eq!((b.locked_list_completed(), b.nr_locked_list()), (0, 36));
        // A range in the middle of a span splits it.
        b.refile_ranges(&[(70, 80)]);
        assert_eq!(b.nr_locked_list(), 26);
        b.io_done(96, 56);
        assert_eq!((b.locked_list_completed(), b.locked_list_first_inflight()), (26, None));
        assert_eq!((b.pending_of(1), b.pending_of(2)), (4, 50));
        assert_eq!(b.pages_truncated(2, 50, 50, None), (vec![(1, 50)], 0));
        assert_eq!(b.nr_dirty, 4);
        // A file with nothing left dirty: nothing to drop.
        assert_eq!((b.pending_of(2), b.pages_truncated(2, 50, 50, None)), (0, (vec![], 0)));
    }

    #[test]
    fn a_batch_submitted_late_keeps_the_locked_list_in_order() {
        let mut b = BufferCache::default();
        b.dirty(1, 1, 96, 0, 0);
        let (x, y, z) = (
            b.take(32, None).unwrap(),
            b.take(32, None).unwrap(),
            b.take(32, None).unwrap(),
        );
        // The first batch's writer waited for a request slot: it reaches the disk last.
        b.submitted(&y);
        b.submitted(&z);
        b.submitted(&x);
        b.io_done(96, 96);
        assert_eq!((b.locked_list_completed(), b.nr_locked_list()), (96, 96));
        b.refile_ranges(&[(16, 48), (80, 90)]);
        assert_eq!((b.locked_list_completed(), b.nr_locked_list()), (54, 54));
        b.refile_locked(54);
        assert_eq!(b.nr_locked_list(), 0);
    }

    #[test]
    fn truncation_cleans_the_dropped_pages_dirty_buffers_and_unlists_their_written_ones() {
        let mut b = BufferCache::default();
        b.dirty(1, 1, 100, 0, 0);
        b.dirty(2, 1, 100, 500, 0);
        let x = b.take(100, None).unwrap();
        b.submitted(&x);
        let y = b.take(60, None).unwrap();
        b.submitted(&y);
        b.io_done(160, 160);
        b.dirty(1, 2, 20, 100, 0);
        // File 1: 120 cached pages, its newest 20 dirty. Dropping its last 70: the 20 dirty
        // ones, and 50 of its 100 clean pages, so half its 100 written buffers.
        assert_eq!(b.pages_truncated(1, 70, 120, None), (vec![(2, 20)], 0));
        assert_eq!((b.pending_of(1), b.nr_dirty), (0, 40));
        assert_eq!((b.locked_list_completed(), b.nr_locked_list()), (110, 110));
        // File 2's buffers are untouched; deleting it takes its 60 written and 40 dirty ones.
        assert_eq!(b.pages_truncated(2, u64::MAX, 0, None), (vec![(1, 40)], 0));
        assert_eq!((b.nr_dirty, b.nr_locked_list()), (0, 50));
    }

    #[test]
    fn truncation_leaves_the_committing_transactions_dirty_buffers_dirty() {
        let mut b = BufferCache::default();
        b.dirty(1, 7, 30, 0, 0);
        b.dirty(1, 8, 10, 30, 0);
        // Transaction 7 commits: deleting the file (its 40 cached pages), its 30 stay dirty
        // for the commit to write and their pages pinned; 8's 10 go.
        assert_eq!(b.pages_truncated(1, u64::MAX, 40, Some(7)), (vec![(8, 10)], 30));
        assert_eq!((b.pending_of(1), b.nr_dirty), (30, 30));
        let x = b.take(64, Some(7)).expect("the commit still finds them");
        assert_eq!((x.lo, x.hi, x.txn), (0, 30, 7));
    }

    #[test]
    fn freed_pages_take_their_written_buffers_off_the_lists() {
        let mut b = BufferCache::default();
        b.dirty(1, 1, 400, 0, 0);
        let x = b.take(200, None).unwrap();
        b.submitted(&x);
        let y = b.take(200, None).unwrap();
        b.submitted(&y);
        // Completions come in order: the first 300 are written, the last 100 still under write.
        b.io_done(300, 300);
        assert_eq!((b.locked_list_completed(), b.nr_locked_list()), (300, 400));
        // A quarter of the cache freed: a quarter of the written buffers go, none in flight.
        b.pages_freed(250, 1000);
        assert_eq!((b.locked_list_completed(), b.nr_locked_list()), (225, 325));
        b.pages_freed(0, 1000);
        b.pages_freed(10, 0);
        assert_eq!(b.nr_locked_list(), 325);
    }
}
