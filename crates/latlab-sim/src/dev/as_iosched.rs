//! The anticipatory I/O scheduler, 2.6.17's default elevator (block/as-iosched.c of
//! 2.6.16/2.6.17, read at commit 0a0fc0dd; research notes writeback-2.6.17.md item 5 and
//! seed001-stalls.md section 2.2).
//!
//! What the model keeps, with the kernel's names:
//! - two classes: SYNC (reads) and ASYNC (writes; no `PF_SYNCWRITE` writer here), served
//!   in batches (`batch_data_dir`): a write batch ends when `current_write_count` requests
//!   have been dispatched or `write_batch_expire` has passed (`as_batch_expired`), but only
//!   matters when a read waits; a read batch lasts while reads are queued;
//! - `changed_batch`: a switch of direction dispatches nothing until the requests already
//!   at the drive have completed (`nr_dispatched == 0`); the model's drive takes one
//!   request at a time (no NCQ before libata's in 2.6.18), so that is the one in service;
//! - `write_batch_count`, starting at `batch_expire[ASYNC] / 10` (at least 2) and adapted by
//!   `update_write_batch` when a read batch begins;
//! - anticipation (`as_antic_waitnext`): after a read completes with no other read queued,
//!   the drive is held idle up to `antic_expire` for the same process's next read, unless
//!   `as_can_break_anticipation` says not to wait (the process has requests queued, or it
//!   thinks longer than `antic_expire` between reads: `aic->ttime_mean`, capped at
//!   `MAX_THINKTIME`). A request from that process ends the wait at once.
//!
//! Left out: the sector-sorted lists and the one-way elevator with its `MAXBACK` backward
//! seeks (writes are served in arrival order, as the noop queue serves them: seed 001's
//! writes are one file's, in order), the FIFO expiries (`read_expire`, `write_expire`: one
//! read at a time never waits that long here), the seek-distance test of
//! `as_can_break_anticipation`, and `exit_prob`.

use super::disk::{Dir, Req};
use latlab_core::Nanos;
use std::collections::{BTreeMap, VecDeque};

/// `default_read_batch_expire` = HZ/2, `default_write_batch_expire` = HZ/8,
/// `default_antic_expire` = HZ/150 (at least one jiffy), `MAX_THINKTIME` = HZ/50
/// (as-iosched.c of 2.6.17), as divisors of HZ.
const READ_BATCH_EXPIRE_DIV: u64 = 2;
const WRITE_BATCH_EXPIRE_DIV: u64 = 8;
const ANTIC_EXPIRE_DIV: u64 = 150;
const MAX_THINKTIME_DIV: u64 = 50;

/// What the scheduler tells the drive to do next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pick {
    /// Dispatch the queued request at this index.
    Dispatch(usize),
    /// Hold the drive idle, anticipating, until the timer at this time.
    Anticipate(Nanos),
    /// Nothing to do.
    Idle,
}

/// Per-process think time (`struct as_io_context`): jiffies between a read's completion
/// and the process's next read, as AS averages it (fixed point, 256 = one sample).
#[derive(Clone, Copy, Debug, Default)]
struct Aic {
    last_end_request: Option<u64>,
    ttime_total: u64,
    ttime_samples: u64,
    ttime_mean: u64,
}

/// The anticipatory scheduler's state (`struct as_data`).
pub struct As {
    tick_ns: Nanos,
    /// The tunables, in jiffies.
    read_batch_expire: u64,
    write_batch_expire: u64,
    antic_expire: u64,
    max_thinktime: u64,
    /// `batch_data_dir`.
    batch: Dir,
    /// `current_batch_expires`, in jiffies.
    batch_expires: u64,
    /// `new_batch`: a read batch whose first completion sets its expiry.
    new_batch: bool,
    /// `current_write_count`, `write_batch_count`.
    current_write_count: u64,
    write_batch_count: u64,
    /// The process the last dispatched read came from (`ad->io_context`); None after a
    /// write.
    io_context: Option<u32>,
    /// An anticipation ran since the last dispatch (`ANTIC_FINISHED`).
    antic_finished: bool,
    aic: BTreeMap<u32, Aic>,
    /// `new_ttime_total`, `new_ttime_mean`: the think time of processes on their first
    /// sample, what a process without samples is judged by.
    new_ttime_total: u64,
    new_ttime_mean: u64,
    /// Reads dispatched, and anticipations held, for the run's counters.
    pub reads: u64,
    pub anticipations: u64,
}

impl As {
    /// The scheduler at boot on a kernel of `hz`.
    pub fn new(hz: u32) -> Self {
        let hz = u64::from(hz.max(1));
        let write_batch_expire = hz / WRITE_BATCH_EXPIRE_DIV;
        As {
            tick_ns: 1_000_000_000 / hz,
            read_batch_expire: hz / READ_BATCH_EXPIRE_DIV,
            write_batch_expire,
            antic_expire: (hz / ANTIC_EXPIRE_DIV).max(1),
            max_thinktime: hz / MAX_THINKTIME_DIV,
            batch: Dir::Write,
            batch_expires: 0,
            new_batch: false,
            current_write_count: 0,
            // as_init_queue: batch_expire[REQ_ASYNC] / 10, at least 2.
            write_batch_count: (write_batch_expire / 10).max(2),
            io_context: None,
            antic_finished: false,
            aic: BTreeMap::new(),
            new_ttime_total: 0,
            new_ttime_mean: 0,
            reads: 0,
            anticipations: 0,
        }
    }

    fn jiffies(&self, now: Nanos) -> u64 {
        now / self.tick_ns
    }

    /// `as_batch_expired`.
    fn batch_expired(&self, now: Nanos) -> bool {
        let late = self.jiffies(now) > self.batch_expires;
        match self.batch {
            Dir::Read => late,
            Dir::Write => late || self.current_write_count == 0,
        }
    }

    /// A request of `pid` was queued (`as_add_request`): a read updates the process's think
    /// time (`as_update_thinktime`).
    pub fn added(&mut self, dir: Dir, pid: u32, now: Nanos) {
        if dir != Dir::Read {
            return;
        }
        let j = self.jiffies(now);
        let max = self.max_thinktime;
        let a = self.aic.entry(pid).or_default();
        if let Some(end) = a.last_end_request {
            let ttime = j.saturating_sub(end).min(max);
            if a.ttime_samples == 0 {
                self.new_ttime_total = (7 * self.new_ttime_total + 256 * ttime) / 8;
                self.new_ttime_mean = self.new_ttime_total / 256;
            }
            a.ttime_samples = (7 * a.ttime_samples + 256) / 8;
            a.ttime_total = (7 * a.ttime_total + 256 * ttime) / 8;
            a.ttime_mean = (a.ttime_total + 128) / a.ttime_samples;
        }
    }

    /// The request `r` completed (`as_completed_request`).
    pub fn completed(&mut self, r: &Req, now: Nanos) {
        if r.dir != Dir::Read {
            return;
        }
        let j = self.jiffies(now);
        if self.new_batch && self.batch == Dir::Read {
            self.update_write_batch(j);
            self.batch_expires = j + self.read_batch_expire;
            self.new_batch = false;
        }
        self.aic.entry(r.pid).or_default().last_end_request = Some(j);
    }

    /// `update_write_batch`: the write batch that a read batch ends took `write_time`
    /// jiffies against its `batch_expire`: shrink or grow the next one.
    fn update_write_batch(&mut self, j: u64) {
        let batch = self.write_batch_expire;
        let write_time = (j + batch).saturating_sub(self.batch_expires);
        if write_time > batch {
            if write_time > batch * 3 {
                self.write_batch_count /= 2;
            } else {
                self.write_batch_count = self.write_batch_count.saturating_sub(1);
            }
        } else if write_time < batch && self.current_write_count == 0 {
            if batch > write_time * 3 {
                self.write_batch_count *= 2;
            } else {
                self.write_batch_count += 1;
            }
        }
        self.write_batch_count = self.write_batch_count.max(1);
    }

    /// `as_can_break_anticipation` with no read queued: true when waiting for `pid`'s next
    /// read is pointless.
    fn can_break(&self, pid: u32, queue: &VecDeque<Req>) -> bool {
        if queue.iter().any(|r| r.pid == pid) {
            // The process anticipated on has I/O queued.
            return true;
        }
        match self.aic.get(&pid) {
            Some(a) if a.ttime_samples > 0 => a.ttime_mean > self.antic_expire,
            _ => self.new_ttime_mean > self.antic_expire,
        }
    }

    /// `as_dispatch_request` on a drive with nothing in service: which request goes next.
    pub fn pick(&mut self, queue: &VecDeque<Req>, now: Nanos) -> Pick {
        let read = queue.iter().position(|r| r.dir == Dir::Read);
        let write = queue.iter().position(|r| r.dir == Dir::Write);
        let j = self.jiffies(now);
        let both = read.is_some() && write.is_some();
        if !(both && self.batch_expired(now)) {
            // The batch goes on (or only one direction has requests).
            if self.batch == Dir::Read && read.is_none() {
                if let Some(pid) = self.io_context.filter(|_| !self.antic_finished) {
                    if !self.can_break(pid, queue) {
                        // as_antic_waitnext: mod_timer(jiffies + antic_expire).
                        self.antic_finished = true;
                        self.anticipations += 1;
                        return Pick::Anticipate((j + self.antic_expire) * self.tick_ns);
                    }
                }
            } else if let Some(i) = if self.batch == Dir::Read { read } else { write } {
                if read.is_some() && write.is_none() {
                    self.batch_expires = j + self.read_batch_expire;
                }
                return self.dispatch(queue, i, j);
            }
        }
        // A new direction.
        if let Some(i) = read {
            if write.is_some() && self.batch == Dir::Read {
                // The last batch was a read: now writes.
                return self.start_writes(queue, write, j);
            }
            if self.batch == Dir::Write {
                // changed_batch: the drive is free, so the read batch begins at once, its
                // expiry set by its first completion.
                self.new_batch = true;
            }
            self.batch = Dir::Read;
            return self.dispatch(queue, i, j);
        }
        self.start_writes(queue, write, j)
    }

    fn start_writes(&mut self, queue: &VecDeque<Req>, write: Option<usize>, j: u64) -> Pick {
        let Some(i) = write else {
            return Pick::Idle;
        };
        if self.batch == Dir::Read {
            self.new_batch = false;
        }
        self.batch = Dir::Write;
        self.current_write_count = self.write_batch_count;
        self.batch_expires = j + self.write_batch_expire;
        self.dispatch(queue, i, j)
    }

    /// `as_move_to_dispatch`.
    fn dispatch(&mut self, queue: &VecDeque<Req>, i: usize, _j: u64) -> Pick {
        let r = &queue[i];
        self.antic_finished = false;
        match r.dir {
            Dir::Read => {
                self.io_context = Some(r.pid);
                self.reads += 1;
            }
            Dir::Write => {
                self.io_context = None;
                self.current_write_count = self.current_write_count.saturating_sub(1);
            }
        }
        Pick::Dispatch(i)
    }

    /// A request of `pid` arrived while the drive anticipates `pid`'s next read: the wait
    /// ends at once (`as_update_arq` -> `as_antic_stop`).
    pub fn breaks_anticipation(&self, pid: u32) -> bool {
        self.io_context == Some(pid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dev::disk::Payload;

    fn req(id: u64, dir: Dir, pid: u32) -> Req {
        Req {
            id,
            dir,
            block: id * 100,
            blocks: 1,
            payload: Payload::Other,
            pid,
        }
    }

    #[test]
    fn a_read_goes_before_queued_writes_unless_a_fresh_write_batch_runs() {
        let mut a = As::new(250);
        let mut q: VecDeque<Req> = (1..=5).map(|i| req(i, Dir::Write, 9)).collect();
        assert_eq!(a.pick(&q, 0), Pick::Dispatch(0));
        q.pop_front();
        // A write-only stream leaves `current_write_count` at 0: a read goes next.
        q.push_back(req(10, Dir::Read, 7));
        a.added(Dir::Read, 7, 1_000_000);
        assert_eq!(a.pick(&q, 1_000_000), Pick::Dispatch(4));
        let r = q.remove(4).expect("read");
        a.completed(&r, 2_000_000);
        // The reader has nothing queued and is new: the drive anticipates it once.
        assert!(matches!(a.pick(&q, 2_000_000), Pick::Anticipate(_)));
        // Then a write batch of `write_batch_count` (3) requests: a read waits for it.
        assert_eq!(a.pick(&q, 4_000_000), Pick::Dispatch(0));
        q.pop_front();
        q.push_back(req(11, Dir::Read, 7));
        a.added(Dir::Read, 7, 4_000_000);
        for _ in 0..2 {
            assert_eq!(q[0].dir, Dir::Write);
            assert_eq!(a.pick(&q, 5_000_000), Pick::Dispatch(0));
            q.pop_front();
        }
        assert_eq!(a.pick(&q, 6_000_000), Pick::Dispatch(q.len() - 1));
    }

    #[test]
    fn after_a_read_the_drive_anticipates_once_unless_the_reader_has_io_queued() {
        let mut a = As::new(250);
        let mut q: VecDeque<Req> = VecDeque::new();
        q.push_back(req(1, Dir::Read, 7));
        q.push_back(req(2, Dir::Write, 9));
        a.added(Dir::Read, 7, 0);
        // A write batch long expired (the boot state): the read goes first.
        assert_eq!(a.pick(&q, 400_000_000), Pick::Dispatch(0));
        let r = q.pop_front().expect("read");
        a.completed(&r, 405_000_000);
        // No read queued: hold the drive for pid 7 until the next tick (HZ 250: 4 ms).
        assert_eq!(a.pick(&q, 405_000_000), Pick::Anticipate(408_000_000));
        assert!(a.breaks_anticipation(7) && !a.breaks_anticipation(9));
        // Once finished, the writes go.
        assert_eq!(a.pick(&q, 408_000_000), Pick::Dispatch(0));
        // A reader with a write of its own queued is not waited for.
        let mut b = As::new(250);
        let mut q: VecDeque<Req> = VecDeque::new();
        q.push_back(req(1, Dir::Read, 7));
        q.push_back(req(2, Dir::Write, 7));
        assert_eq!(b.pick(&q, 400_000_000), Pick::Dispatch(0));
        let r = q.pop_front().expect("read");
        b.completed(&r, 405_000_000);
        assert_eq!(b.pick(&q, 405_000_000), Pick::Dispatch(0));
    }

    #[test]
    fn a_process_that_thinks_longer_than_antic_expire_is_not_waited_for() {
        let mut a = As::new(250);
        let mut q: VecDeque<Req> = VecDeque::new();
        for (n, t) in [(1u64, 400_000_000u64), (3, 2_000_000_000)] {
            q.push_back(req(n, Dir::Read, 7));
            q.push_back(req(n + 1, Dir::Write, 9));
            a.added(Dir::Read, 7, t);
            let i = q.iter().position(|r| r.id == n).expect("read");
            assert_eq!(a.pick(&q, t), Pick::Dispatch(i));
            let r = q.remove(i).expect("read");
            a.completed(&r, t + 5_000_000);
            let p = a.pick(&q, t + 5_000_000);
            if n == 1 {
                assert!(matches!(p, Pick::Anticipate(_)), "a new process is anticipated");
                assert_eq!(a.pick(&q, t + 8_000_000), Pick::Dispatch(0));
            } else {
                // 1.6 s since its last read: capped at MAX_THINKTIME (5 jiffies) > 1.
                assert_eq!(p, Pick::Dispatch(0));
            }
            q.pop_front();
        }
    }
}
