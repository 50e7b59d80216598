//! The multi-queue block layer of 6.x kernels (block/blk-mq.c, block/blk-mq-tag.c,
//! lib/sbitmap.c, block/mq-deadline.c of 6.18), behind [`crate::dev::disk::Disk`]'s
//! interface (submit, complete, the request-slot wait).
//!
//! - **Tags, not request pools.** A request holds a tag from submission to completion; reads
//!   and writes share the `nr_requests` tags (no per-direction pools, no batching). Without
//!   an I/O scheduler `nr_requests` is the hardware queue depth (the tag set's
//!   `queue_depth`); with one, `blk_mq_init_sched` sets `2 * min(queue_depth,
//!   BLKDEV_DEFAULT_RQ)` scheduler tags.
//! - **No congestion.** The bdi congestion flags went in 5.18: a submitter that finds no free
//!   tag sleeps in `blk_mq_get_tag` (an sbitmap wait queue) until completions free tags.
//!   `sbitmap_queue` wakes in batches: every `wake_batch` frees seen while tasks wait wake
//!   `wake_batch` of them (`__sbitmap_queue_wake_up`), `wake_batch = clamp(depth /
//!   SBQ_WAIT_QUEUES, 1, SBQ_WAKE_BATCH)` (`sbq_calc_wake_batch`).
//! - **The scheduler** is `none` (dispatch in submission order) or mq-deadline
//!   ([`MqDeadline`]).
//!
//! The drive takes one request at a time, as the model's other queues: the scheduler picks
//! the next request when the drive is free. The hardware queue depth sets the tag count
//! only; a drive's own command queue (NCQ) and its reordering are left out. Also left out:
//! plugging, front merges (the model's write-out runs ascend, so a bio never ends where a
//! queued request starts; back merges into the newest queued request are
//! [`crate::dev::disk`]'s), mq-deadline's `async_depth` and I/O priority classes (every
//! task is best-effort), and the read paths' tag wait (the model's reads submit without
//! one, so a read finding every tag taken is queued all the same). A writer sleeps when no
//! tag is free, as a bio does; a caller that then hands over a run of several requests at
//! once (2.4-style `ll_rw_block` batches) may take more tags than are free, where the
//! kernel would sleep again at the bio that finds none. The page-writeback paths
//! (`write_dirty_run`, reclaim's pageout) take only what [`crate::dev::disk::Disk::room`]
//! and `uncongested_room` give, which count the free tags.

use crate::dev::disk::{Dir, Req};
use latlab_core::Nanos;
use std::collections::{BTreeMap, VecDeque};

/// `BLKDEV_DEFAULT_RQ` (include/linux/blkdev.h): 128.
const BLKDEV_DEFAULT_RQ: u64 = 128;
/// `SBQ_WAIT_QUEUES` (include/linux/sbitmap.h): 8.
const SBQ_WAIT_QUEUES: u64 = 8;
/// `SBQ_WAKE_BATCH` (include/linux/sbitmap.h): 8.
const SBQ_WAKE_BATCH: u64 = 8;

/// A multi-queue block layer's tags and scheduler.
#[derive(Debug)]
pub struct BlkMq {
    nr_requests: u64,
    wake_batch: u64,
    /// Tags freed while tasks wait, since the last batch of wake-ups.
    completions: u64,
    sched: Option<MqDeadline>,
}

impl BlkMq {
    /// A queue over a device of `queue_depth` commands, on a kernel of `hz`, with
    /// mq-deadline if `mq_deadline`, else no scheduler (`none`).
    pub fn new(queue_depth: u32, hz: u32, mq_deadline: bool) -> Self {
        let depth = u64::from(queue_depth.max(1));
        // blk_mq_init_sched: no elevator, the tag set's depth; else twice the smaller of it
        // and BLKDEV_DEFAULT_RQ.
        let nr_requests = if mq_deadline {
            2 * depth.min(BLKDEV_DEFAULT_RQ)
        } else {
            depth
        };
        BlkMq {
            nr_requests,
            wake_batch: (nr_requests / SBQ_WAIT_QUEUES).clamp(1, SBQ_WAKE_BATCH),
            completions: 0,
            sched: mq_deadline.then(|| MqDeadline::new(hz)),
        }
    }

    /// `q->nr_requests`: the tags submitters share.
    pub fn nr_requests(&self) -> u64 {
        self.nr_requests
    }

    /// A tag was freed with `waiting` tasks asleep in `blk_mq_get_tag`: how many of them
    /// `sbitmap_queue_clear` wakes now.
    pub(crate) fn tag_freed(&mut self, waiting: usize) -> usize {
        if waiting == 0 {
            // ws_active 0: nobody waits, nothing is counted.
            self.completions = 0;
            return 0;
        }
        self.completions += 1;
        if self.completions < self.wake_batch {
            return 0;
        }
        self.completions = 0;
        self.wake_batch as usize
    }

    /// Request `r` entered the queue at `now` (the scheduler's `insert_requests`).
    pub(crate) fn added(&mut self, r: &Req, now: Nanos) {
        if let Some(dd) = self.sched.as_mut() {
            dd.added(r, now);
        }
    }

    /// The drive is free: the index in `queue` (not empty) of the request to dispatch.
    pub(crate) fn pick(&mut self, queue: &VecDeque<Req>, now: Nanos) -> usize {
        match self.sched.as_mut() {
            None => 0,
            Some(dd) => dd.dispatch(queue, now),
        }
    }
}

/// `deadline_data` of block/mq-deadline.c (6.18) for one priority level.
#[derive(Debug)]
pub struct MqDeadline {
    /// `fifo_expire[READ]` (`read_expire`, HZ/2) and `fifo_expire[WRITE]` (`write_expire`,
    /// 5*HZ), ns.
    fifo_expire: [Nanos; 2],
    /// `writes_starved`: read batches a write may be passed over for (2).
    writes_starved: u32,
    /// `fifo_batch`: requests dispatched in a batch in sort order (16).
    fifo_batch: u32,
    starved: u32,
    batching: u32,
    last_dir: Option<Dir>,
    /// `latest_pos[dir]`: where the last dispatch in each direction started.
    latest_pos: [u64; 2],
    /// Each queued request's `fifo_time`, by request id.
    fifo_time: BTreeMap<u64, Nanos>,
}

fn dd_dir(dir: Dir) -> usize {
    match dir {
        Dir::Read => 0,
        Dir::Write => 1,
    }
}

impl MqDeadline {
    /// mq-deadline's defaults (`dd_init_sched`) on a kernel of `hz`.
    pub fn new(hz: u32) -> Self {
        let hz = u64::from(hz.max(1));
        let jiffy = 1_000_000_000 / hz;
        MqDeadline {
            // read_expire = HZ / 2, write_expire = 5 * HZ (jiffies).
            fifo_expire: [(hz / 2) * jiffy, 5 * hz * jiffy],
            writes_starved: 2,
            fifo_batch: 16,
            starved: 0,
            batching: 0,
            last_dir: None,
            latest_pos: [0; 2],
            fifo_time: BTreeMap::new(),
        }
    }

    /// `dd_insert_request`: the request's FIFO deadline.
    fn added(&mut self, r: &Req, now: Nanos) {
        self.fifo_time.insert(r.id, now + self.fifo_expire[dd_dir(r.dir)]);
    }

    /// `deadline_fifo_request`: the oldest queued request of `dir` (ids rise with
    /// submission).
    fn fifo_head(queue: &VecDeque<Req>, dir: Dir) -> Option<usize> {
        queue
            .iter()
            .enumerate()
            .filter(|(_, r)| r.dir == dir)
            .min_by_key(|(_, r)| r.id)
            .map(|(i, _)| i)
    }

    /// `deadline_next_request`: the first request of `dir` in sector order at or past
    /// `latest_pos[dir]`.
    fn next_in_sort(&self, queue: &VecDeque<Req>, dir: Dir) -> Option<usize> {
        let from = self.latest_pos[dd_dir(dir)];
        queue
            .iter()
            .enumerate()
            .filter(|(_, r)| r.dir == dir && r.block >= from)
            .min_by_key(|(_, r)| (r.block, r.id))
            .map(|(i, _)| i)
    }

    /// `deadline_check_fifo`: the oldest request of `dir` is past its deadline.
    fn fifo_expired(&self, queue: &VecDeque<Req>, dir: Dir, now: Nanos) -> bool {
        Self::fifo_head(queue, dir)
            .and_then(|i| self.fifo_time.get(&queue[i].id))
            .is_some_and(|&t| now >= t)
    }

    /// `__dd_dispatch_request` over a non-empty `queue`: the index of the request to
    /// dispatch.
    fn dispatch(&mut self, queue: &VecDeque<Req>, now: Nanos) -> usize {
        // Still entitled to batch: the next request in sort order in the last direction.
        let batch = self
            .last_dir
            .filter(|_| self.batching < self.fifo_batch)
            .and_then(|d| self.next_in_sort(queue, d).map(|i| (d, i)));
        let (dir, i) = match batch {
            Some(b) => b,
            None => {
                let has = |d| queue.iter().any(|r| r.dir == d);
                let dir = if has(Dir::Read) && !(has(Dir::Write) && self.starve_writes()) {
                    Dir::Read
                } else {
                    // dispatch_writes.
                    self.starved = 0;
                    Dir::Write
                };
                let next = self.next_in_sort(queue, dir);
                let i = match next {
                    Some(i) if !self.fifo_expired(queue, dir, now) => i,
                    _ => Self::fifo_head(queue, dir).expect("a queued request of the chosen direction"),
                };
                self.batching = 0;
                (dir, i)
            }
        };
        self.last_dir = Some(dir);
        self.batching += 1;
        self.latest_pos[dd_dir(dir)] = queue[i].block;
        self.fifo_time.remove(&queue[i].id);
        i
    }

    /// `dd->starved++ >= dd->writes_starved`, asked when reads and writes are both queued.
    fn starve_writes(&mut self) -> bool {
        let s = self.starved;
        self.starved += 1;
        s >= self.writes_starved
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dev::disk::{Disk, Payload};
    use crate::kernel::path::Chan;
    use crate::kernel::state::KReq;

    fn req(id: u64, dir: Dir, block: u64) -> Req {
        Req {
            id,
            dir,
            block,
            blocks: 1,
            payload: Payload::Other,
            pid: 1,
        }
    }

    #[test]
    fn nr_requests_is_the_queue_depth_without_a_scheduler_and_as_blk_mq_init_sched_sets_it_with_one() {
        assert_eq!(BlkMq::new(32, 250, false).nr_requests(), 32);
        assert_eq!(BlkMq::new(32, 250, true).nr_requests(), 64);
        assert_eq!(BlkMq::new(1, 250, true).nr_requests(), 2);
        // min(queue_depth, BLKDEV_DEFAULT_RQ): a deep device gets 256, not 2 * 1024.
        assert_eq!(BlkMq::new(1024, 250, true).nr_requests(), 256);
        assert_eq!(BlkMq::new(1024, 250, false).nr_requests(), 1024);
    }

    #[test]
    fn sbitmap_wakes_a_batch_of_waiters_every_wake_batch_frees() {
        // 64 tags: wake_batch 8.
        let mut mq = BlkMq::new(32, 250, true);
        assert_eq!((0..7).map(|_| mq.tag_freed(20)).sum::<usize>(), 0);
        assert_eq!(mq.tag_freed(20), 8);
        // 2 tags: every free wakes one.
        let mut mq = BlkMq::new(1, 250, true);
        assert_eq!(mq.tag_freed(3), 1);
        assert_eq!(mq.tag_freed(0), 0, "nobody waits");
    }

    /// A blk-mq disk of `queue_depth` and `mq_deadline`, one 4 KiB block per request.
    fn disk(queue_depth: u32, mq_deadline: bool) -> Disk {
        let mut m = crate::cpu::tests::machine();
        m.disk.max_request_kib = 4;
        let mut d = Disk::new(&m);
        d.use_blk_mq(BlkMq::new(queue_depth, 250, mq_deadline));
        d
    }

    #[test]
    fn a_submitter_with_no_free_tag_sleeps_and_a_completion_wakes_it() {
        // none on a depth-2 device: 2 tags shared by reads and writes.
        let mut d = disk(2, false);
        let mut out = Vec::new();
        assert!(d.get_request_wait(Dir::Write, 100, 1, 1, 0).is_none());
        let first = d.submit(Dir::Write, 100, 1, Payload::Other, 1, 0, &mut out);
        d.submit(Dir::Read, 500, 1, Payload::Other, 2, 0, &mut out);
        assert_eq!(d.room(900, 3, 0, 8), 0, "both tags taken");
        let chan = d.get_request_wait(Dir::Write, 900, 1, 3, 0).expect("no tag: sleeps");
        assert!(matches!(chan, Chan::RequestSlot(_)));
        assert!(!d.congested, "no congestion in blk-mq");
        out.clear();
        let mut cleared = false;
        d.complete(first, 1_000_000, &mut out, &mut cleared);
        assert!(
            out.contains(&KReq::Wake(chan)),
            "the freed tag wakes the sleeper: {out:?}"
        );
        assert!(!cleared, "no congestion to clear");
        assert!(d.get_request_wait(Dir::Write, 900, 1, 3, 1_000_000).is_none());
    }

    #[test]
    fn mq_deadline_serves_reads_until_writes_have_starved_twice() {
        let mut dd = MqDeadline::new(250);
        dd.fifo_batch = 1; // one request per batch, to see each direction choice
        let mut q: VecDeque<Req> = VecDeque::new();
        for (id, dir, block) in [(1, Dir::Write, 10), (2, Dir::Write, 11), (3, Dir::Read, 50)] {
            q.push_back(req(id, dir, block));
            dd.added(&q[q.len() - 1], 0);
        }
        for id in 4..8 {
            q.push_back(req(id, Dir::Read, 50 + id));
            dd.added(&q[q.len() - 1], 0);
        }
        let mut order = Vec::new();
        for _ in 0..5 {
            let i = dd.dispatch(&q, 1_000);
            order.push(q.remove(i).unwrap().id);
        }
        // Reads first although the writes are older; the third choice with writes queued
        // goes to a write (starved 2 >= writes_starved), then reads again.
        assert_eq!(order, [3, 4, 1, 5, 6]);
    }

    #[test]
    fn mq_deadline_serves_an_expired_write_from_its_fifo_head() {
        let mut dd = MqDeadline::new(250);
        let mut q: VecDeque<Req> = VecDeque::new();
        // A write at a high sector, then a write at a low one: in sort order from 0 the low
        // one is next; past write_expire (5 s) the FIFO's head, the older, goes first.
        for (id, block) in [(1, 900), (2, 10)] {
            q.push_back(req(id, Dir::Write, block));
            dd.added(&q[q.len() - 1], 0);
        }
        let mut fresh = MqDeadline::new(250);
        for r in &q {
            fresh.added(r, 0);
        }
        assert_eq!(q[fresh.dispatch(&q, 4_999_999_999)].id, 2, "not expired: sort order");
        assert_eq!(q[dd.dispatch(&q, 5_000_000_000)].id, 1, "expired: FIFO head");
        // read_expire HZ/2 and write_expire 5*HZ at HZ 250.
        assert_eq!(dd.fifo_expire, [500_000_000, 5_000_000_000]);
    }

    #[test]
    fn the_drive_dispatches_what_mq_deadline_picks() {
        let mut d = disk(1, true);
        let mut out = Vec::new();
        let r1 = d.submit(Dir::Read, 30, 1, Payload::Other, 2, 0, &mut out);
        d.submit(Dir::Write, 10, 1, Payload::Other, 1, 0, &mut out);
        d.submit(Dir::Write, 20, 1, Payload::Other, 1, 0, &mut out);
        let r2 = d.submit(Dir::Read, 40, 1, Payload::Other, 2, 0, &mut out);
        out.clear();
        let mut cleared = false;
        d.complete(r1, 1_000_000, &mut out, &mut cleared);
        // The read batch goes on in sector order: the second read passes the older writes.
        let next = out.iter().find_map(|k| match k {
            KReq::DiskIrq { id, .. } => Some(*id),
            _ => None,
        });
        assert_eq!(next, Some(r2));
    }
}
