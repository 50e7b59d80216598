//! An IDE disk behind the 2.4 request queue (drivers/block/ll_rw_blk.c, drivers/ide).
//!
//! Requests are served one at a time in submission order (the queue completes in order, which
//! the buffer cache relies on: a prefix of submitted buffers is complete). Service time is a
//! positioning time when the head must move (seek curve `track_to_track + (full_stroke -
//! track_to_track) * sqrt(distance / capacity)` plus half a rotation, all four from the
//! machine's [`DiskProfile`](crate::machine::DiskProfile)) and the media transfer time at the
//! sustained rate. The queue has `nr_requests` slots of at most
//! `max_request_kib` each; a submitter finding it full sleeps in `__get_request_wait`.
//!
//! Under `block = "queue-2.6"` (the default with page-based writeback) the queue is 2.6.17's
//! (block/ll_rw_blk.c, research notes writeback-2.6.17.md item 5):
//! - a write whose buffers continue the newest queued request's is merged into it
//!   (`__make_request`'s back merge) up to `max_request_kib`, one request per slot;
//! - reads and writes have their own pools of `nr_requests` (`rl->count[READ]`,
//!   `rl->count[WRITE]`): a read never waits for a write slot;
//! - `get_request`: the write queue is congested from `nr_requests - nr_requests/8 + 1`
//!   requests until it drops below `nr_requests - nr_requests/8 - nr_requests/16 - 1` (113
//!   and 103 of 128), and every completion that leaves it below that wakes
//!   `blk_congestion_wait`'s sleepers; the task whose request fills the queue, and every task
//!   woken in `get_request_wait`, gets `ioc_set_batching`: `BLK_BATCH_REQ` (32) requests
//!   past the full mark within `BLK_BATCH_TIME` (HZ/50), never more than `3 *
//!   nr_requests / 2` (192) in all; any other task finding the queue full sleeps in
//!   `get_request_wait`, and `freed_request` wakes one sleeper when a completion leaves
//!   room (`count + 1 <= nr_requests`);
//! - the elevator is the variant's: `noop` (service in submission order) or the
//!   anticipatory scheduler ([`crate::dev::as_iosched`]), which serves a read before the
//!   queued writes and may hold the drive idle for the reader's next one.
//!
//! Left out: plugging (a request is dispatched as soon as the disk is free) and the drive's
//! own write cache.
//!
//! Under 6.x's multi-queue block layer ([`crate::dev::blk_mq`]) the queue keeps 2.6's back
//! merges; its requests hold tags shared by both directions, there is no congestion and no
//! batching, and the scheduler (`none` or mq-deadline) picks the next request.

use crate::dev::as_iosched::{As, Pick};
use crate::dev::blk_mq::BlkMq;
use crate::kernel::path::Chan;
use crate::kernel::state::KReq;
use crate::machine::MachineProfile;
use latlab_core::Nanos;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// `BLK_BATCH_REQ`: requests a batching task may take past the full mark.
const BLK_BATCH_REQ: u64 = 32;
/// `BLK_BATCH_TIME` = HZ/50, as a divisor of HZ.
const BLK_BATCH_TIME_DIV: u64 = 50;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    Read,
    Write,
}

/// What a completed request means to the rest of the kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Payload {
    /// Buffer-cache write-out of buffers with sequence numbers `lo..hi`.
    Buffers { lo: u64, hi: u64 },
    /// Anything else (reads, journal blocks, swap).
    Other,
}

#[derive(Clone, Debug)]
pub struct Req {
    pub id: u64,
    pub dir: Dir,
    /// Disk block (4 KiB) where the request starts.
    pub block: u64,
    pub blocks: u64,
    pub payload: Payload,
    /// The task that submitted it (its `io_context`: AS's anticipation, request batching).
    pub pid: u32,
}

/// A task's `io_context` as the 2.6 queue keeps it: `nr_batch_requests`, `last_waited`.
#[derive(Clone, Copy, Debug, Default)]
struct Ioc {
    nr_batch: u64,
    last_waited: Nanos,
}

impl Ioc {
    /// `ioc_set_batching`: a task that just waited for a slot may take `BLK_BATCH_REQ` more.
    fn set_batching(now: Nanos) -> Self {
        Ioc {
            nr_batch: BLK_BATCH_REQ,
            last_waited: now,
        }
    }

    /// `ioc_batching`: a full batch left, or some left within `batch_time` of the wait.
    fn batching(&self, now: Nanos, batch_time: Nanos) -> bool {
        self.nr_batch == BLK_BATCH_REQ || (self.nr_batch > 0 && now < self.last_waited + batch_time)
    }
}

pub struct Disk {
    queue: VecDeque<Req>,
    /// Request slots the queued requests take (2.4: each request takes one per
    /// `max_request_kib`), kept as they are queued and completed.
    slots_queued: u64,
    busy: Option<u64>,
    head: u64,
    next_id: u64,
    nr_requests: u64,
    max_request_blocks: u64,
    xfer_ns_per_block: f64,
    /// The seek curve (machine profile): shortest and longest seek, half a rotation, ns; the
    /// capacity in 4 KiB blocks.
    track_to_track_ns: f64,
    full_stroke_ns: f64,
    half_rotation_ns: f64,
    capacity_blocks: f64,
    /// 2.6's block layer: back merges, one request per slot, congestion.
    merge: bool,
    /// `BDI_write_congested`, and the thresholds that set and clear it.
    pub(super) congested: bool,
    congestion_on: u64,
    congestion_off: u64,
    /// Requests served, blocks moved.
    pub(super) served: u64,
    pub(super) blocks_moved: u64,
    /// Of those, read.
    pub(super) blocks_read: u64,
    /// 2.6's request pools: `rl->count[READ]`, `rl->count[WRITE]` (queued and in service).
    count: [u64; 2],
    /// `blk_queue_full(q, WRITE)`.
    full: bool,
    /// Tasks' io_contexts (batching), and the tasks asleep in `get_request_wait` with their
    /// wait tokens, oldest first (an exclusive wait queue).
    ioc: BTreeMap<u32, Ioc>,
    slot_waiters: VecDeque<(u32, u64)>,
    woken: BTreeSet<u32>,
    batch_time_ns: Nanos,
    /// The anticipatory scheduler, when the variant's elevator is it.
    elv: Option<As>,
    /// The anticipation timer armed (its token), while the drive idles for a reader.
    antic: Option<u64>,
    /// 6.x's multi-queue block layer, when the variant's block layer is it.
    mq: Option<BlkMq>,
}

fn dir_index(dir: Dir) -> usize {
    match dir {
        Dir::Read => 0,
        Dir::Write => 1,
    }
}

impl Disk {
    /// `bdi_write_congested()`: the queue is congested for writes.
    pub fn congested(&self) -> bool {
        self.congested
    }
    /// Requests the disk has completed, the blocks they moved and of those the blocks read
    /// (/proc/diskstats).
    pub fn served(&self) -> (u64, u64, u64) {
        (self.served, self.blocks_moved, self.blocks_read)
    }
    pub fn new(m: &MachineProfile) -> Self {
        // blk_queue_congestion_threshold() (2.6.17 block/ll_rw_blk.c).
        let nr = m.disk.nr_requests as u64;
        let on = (nr - nr / 8 + 1).min(nr);
        let off = (nr - nr / 8).saturating_sub(nr / 16 + 1).max(1);
        Disk {
            queue: VecDeque::new(),
            slots_queued: 0,
            busy: None,
            head: 0,
            next_id: 1,
            nr_requests: m.disk.nr_requests as u64,
            max_request_blocks: (m.disk.max_request_kib / 4).max(1),
            xfer_ns_per_block: 4096.0 * 1000.0 / m.disk.seq_mb_s,
            track_to_track_ns: m.disk.track_to_track_ns as f64,
            full_stroke_ns: m.disk.full_stroke_ns as f64,
            half_rotation_ns: m.disk.half_rotation_ns as f64,
            capacity_blocks: m.disk.capacity_gb * 1e9 / 4096.0,
            merge: false,
            congested: false,
            congestion_on: on,
            congestion_off: off,
            served: 0,
            blocks_moved: 0,
            blocks_read: 0,
            count: [0; 2],
            full: false,
            ioc: BTreeMap::new(),
            slot_waiters: VecDeque::new(),
            woken: BTreeSet::new(),
            batch_time_ns: 0,
            elv: None,
            antic: None,
            mq: None,
        }
    }

    /// Switch to 6.x's multi-queue block layer `mq` (2.6's back merges, `mq`'s tags and
    /// scheduler).
    pub fn use_blk_mq(&mut self, mq: BlkMq) {
        self.merge = true;
        self.nr_requests = mq.nr_requests();
        self.mq = Some(mq);
    }

    /// Switch to 2.6's block layer (page-based writeback's kernels) on a kernel of `hz`,
    /// with the anticipatory scheduler if `anticipatory`, else noop.
    pub fn use_26_block_layer(&mut self, hz: u32, anticipatory: bool) {
        self.merge = true;
        let hz = u64::from(hz.max(1));
        self.batch_time_ns = (hz / BLK_BATCH_TIME_DIV).max(1) * (1_000_000_000 / hz);
        self.elv = anticipatory.then(|| As::new(hz as u32));
    }

    /// Requests (2.6's per direction) or tags (blk-mq's, shared) the queue has.
    pub fn nr_requests(&self) -> u64 {
        self.nr_requests
    }

    /// The queue is 2.6's or later (back merges, a request per slot).
    pub fn is_26(&self) -> bool {
        self.merge
    }

    /// Reads dispatched and anticipations held by the anticipatory scheduler.
    pub fn as_counts(&self) -> Option<(u64, u64)> {
        self.elv.as_ref().map(|a| (a.reads, a.anticipations))
    }

    /// `ioc_batching(q, ioc)`.
    fn batching(&self, pid: u32, now: Nanos) -> bool {
        self.ioc.get(&pid).is_some_and(|i| i.batching(now, self.batch_time_ns))
    }

    /// `ioc_set_batching(q, ioc)`.
    fn set_batching(&mut self, pid: u32, now: Nanos) {
        self.ioc.insert(pid, Ioc::set_batching(now));
    }

    /// Write requests `pid` could allocate now without sleeping (`get_request` repeated),
    /// at most `want`.
    fn allocatable(&self, pid: u32, now: Nanos, want: u64) -> u64 {
        let nr = self.nr_requests;
        if self.mq.is_some() {
            // blk-mq: the free tags, both directions'.
            return nr.saturating_sub(self.count[0] + self.count[1]).min(want);
        }
        let mut count = self.count[1];
        let mut full = self.full;
        let mut ioc = self.ioc.get(&pid).copied();
        let batching = |ioc: &Option<Ioc>| ioc.is_some_and(|i| i.batching(now, self.batch_time_ns));
        let mut n = 0;
        while n < want {
            if count + 1 >= nr {
                if !full {
                    ioc = Some(Ioc::set_batching(now));
                    full = true;
                } else if !batching(&ioc) {
                    break;
                }
            }
            if count >= 3 * nr / 2 {
                break;
            }
            if batching(&ioc) {
                if let Some(i) = ioc.as_mut() {
                    i.nr_batch -= 1;
                }
            }
            count += 1;
            n += 1;
        }
        n
    }

    /// 2.6's `get_request`, for a request just allocated by `pid` in direction `dir`.
    fn allocated(&mut self, dir: Dir, pid: u32, now: Nanos) {
        let d = dir_index(dir);
        if dir == Dir::Write && self.mq.is_none() {
            let c = self.count[d];
            if c + 1 >= self.congestion_on {
                if c + 1 >= self.nr_requests && !self.full {
                    self.set_batching(pid, now);
                    self.full = true;
                }
                self.congested = true;
            }
            if self.batching(pid, now) {
                if let Some(i) = self.ioc.get_mut(&pid) {
                    i.nr_batch -= 1;
                }
            }
        }
        self.count[d] += 1;
    }

    /// `pid` runs again after sleeping in `get_request_wait`: `ioc_set_batching`.
    pub fn woke(&mut self, pid: u32, now: Nanos) {
        if self.woken.remove(&pid) {
            self.set_batching(pid, now);
        }
    }

    /// `get_request_wait` before `pid` submits `blocks` at `block` in direction `dir`: the
    /// channel to sleep on if it must wait for a request. Under 2.4's queue as
    /// [`Self::must_wait`]; under 2.6's, reads have their own pool, a task woken here gets
    /// `ioc_set_batching`, and a sleeper is woken by `freed_request` alone.
    pub fn get_request_wait(&mut self, dir: Dir, block: u64, blocks: u64, pid: u32, now: Nanos) -> Option<Chan> {
        if !self.merge {
            return self.must_wait(block, blocks);
        }
        self.woke(pid, now);
        if dir == Dir::Read {
            return None;
        }
        if self.mq.is_some() {
            // blk_mq_get_tag: a bio that finds no free tag sleeps on the sbitmap's wait queue.
            if self.allocatable(pid, now, 1) > 0 || self.slots_for(block, blocks) == 0 {
                return None;
            }
            self.next_id += 1;
            self.slot_waiters.push_back((pid, self.next_id));
            return Some(Chan::RequestSlot(self.next_id));
        }
        let want = self.slots_for(block, blocks);
        if self.allocatable(pid, now, want) >= want {
            return None;
        }
        self.next_id += 1;
        let token = self.next_id;
        self.slot_waiters.push_back((pid, token));
        self.woken.insert(pid);
        Some(Chan::RequestSlot(token))
    }

    /// Request slots a transfer of `blocks` takes.
    fn slots(&self, blocks: u64) -> u64 {
        blocks.div_ceil(self.max_request_blocks).max(1)
    }

    fn slots_used(&self) -> u64 {
        if self.merge {
            return self.count[1];
        }
        self.slots_queued
    }

    /// Blocks of a write at `block` the newest queued request can still take (2.6 only).
    fn tail_room(&self, block: u64) -> u64 {
        match self.queue.back() {
            Some(r)
                if self.merge
                    && self.busy != Some(r.id)
                    && r.dir == Dir::Write
                    && matches!(r.payload, Payload::Buffers { .. })
                    && r.block + r.blocks == block =>
            {
                self.max_request_blocks - r.blocks.min(self.max_request_blocks)
            }
            _ => 0,
        }
    }

    /// Request slots a write of `blocks` at `block` needs beyond what merges.
    fn slots_for(&self, block: u64, blocks: u64) -> u64 {
        if !self.merge {
            return self.slots(blocks);
        }
        blocks
            .saturating_sub(self.tail_room(block))
            .div_ceil(self.max_request_blocks)
    }

    /// Would a submission of `blocks` at `block` have to wait for a free request slot?
    /// Returns the channel to sleep on (completion of the oldest request) if so.
    pub fn must_wait(&self, block: u64, blocks: u64) -> Option<Chan> {
        if self.slots_used() + self.slots_for(block, blocks) > self.nr_requests && !self.queue.is_empty() {
            self.queue.front().map(|r| Chan::Io(r.id))
        } else {
            None
        }
    }

    /// Blocks of a write at `block` task `pid` can hand to the queue now without sleeping
    /// in `get_request_wait` (at most about `want`; 2.6's queue): what merges into the
    /// newest request, and the requests `get_request` would give it.
    pub fn room(&self, block: u64, pid: u32, now: Nanos, want: u64) -> u64 {
        let tail = self.tail_room(block);
        let reqs = want.saturating_sub(tail).div_ceil(self.max_request_blocks);
        tail + self.allocatable(pid, now, reqs) * self.max_request_blocks
    }

    /// Blocks of a write at `block` a caller that tests `bdi_write_congested()` before each
    /// page (2.6 reclaim's `may_write_to_queue`) hands to the queue before it finds the queue
    /// congested: none once congested, else up to the page that allocates the
    /// `congestion_on`-th request, which makes it congested.
    pub fn uncongested_room(&self, block: u64) -> u64 {
        if self.mq.is_some() {
            // No congestion since 5.18: what the free tags take.
            let free = self.allocatable(0, 0, u64::MAX);
            return self.tail_room(block) + free * self.max_request_blocks;
        }
        if self.congested {
            return 0;
        }
        let free = (self.congestion_on - 1).saturating_sub(self.slots_used());
        self.tail_room(block) + free * self.max_request_blocks + u64::from(free == 0)
    }

    /// The oldest request's completion, if any is queued (what `blk_congestion_wait` ends on
    /// in the model).
    pub fn oldest(&self) -> Option<Chan> {
        self.queue.front().map(|r| Chan::Io(r.id))
    }

    /// Queue a request of task `pid`; returns its id. Starts the disk if idle.
    #[allow(clippy::too_many_arguments)]
    pub fn submit(
        &mut self,
        dir: Dir,
        block: u64,
        blocks: u64,
        payload: Payload,
        pid: u32,
        now: Nanos,
        out: &mut Vec<KReq>,
    ) -> u64 {
        if let (true, Payload::Buffers { lo, hi }) = (self.merge, payload) {
            return self.submit_merging(dir, block, lo, hi, pid, now, out);
        }
        let r = Req {
            id: 0,
            dir,
            block,
            blocks,
            payload,
            pid,
        };
        self.push(r, now, out)
    }

    /// Queue `r` under a fresh id.
    fn push(&mut self, mut r: Req, now: Nanos, out: &mut Vec<KReq>) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        r.id = id;
        let (dir, pid) = (r.dir, r.pid);
        if self.merge {
            self.allocated(dir, pid, now);
        }
        self.slots_queued += self.slots(r.blocks);
        if let Some(mq) = self.mq.as_mut() {
            mq.added(&r, now);
        }
        self.queue.push_back(r);
        if let Some(a) = self.elv.as_mut() {
            a.added(dir, pid, now);
            if self.antic.is_some() && a.breaks_anticipation(pid) {
                // as_antic_stop: the process anticipated on submitted.
                self.antic = None;
            }
        }
        self.start(now, out);
        id
    }

    /// 2.6's `__make_request` for buffers `lo..hi` at `block`: back-merged into the newest
    /// queued request as far as it has room, the rest in new requests of at most
    /// `max_request_kib`. Returns the id of the request holding the last buffer.
    #[allow(clippy::too_many_arguments)]
    fn submit_merging(
        &mut self,
        dir: Dir,
        block: u64,
        lo: u64,
        hi: u64,
        pid: u32,
        now: Nanos,
        out: &mut Vec<KReq>,
    ) -> u64 {
        let mut lo = lo;
        let mut block = block;
        let room = self.tail_room(block).min(hi - lo);
        let mut id = 0;
        if room > 0 {
            if let Some(r) = self.queue.back_mut() {
                if let Payload::Buffers { hi: ref mut rhi, .. } = r.payload {
                    if *rhi == lo {
                        *rhi += room;
                        r.blocks += room;
                        lo += room;
                        block += room;
                        id = r.id;
                    }
                }
            }
        }
        while lo < hi {
            let n = (hi - lo).min(self.max_request_blocks);
            let r = Req {
                id: 0,
                dir,
                block,
                blocks: n,
                payload: Payload::Buffers { lo, hi: lo + n },
                pid,
            };
            id = self.push(r, now, out);
            lo += n;
            block += n;
        }
        id
    }

    fn service_ns(&self, r: &Req) -> Nanos {
        let dist = self.head.abs_diff(r.block) as f64;
        let position = if dist == 0.0 {
            0.0
        } else {
            self.track_to_track_ns
                + (self.full_stroke_ns - self.track_to_track_ns) * (dist / self.capacity_blocks).min(1.0).sqrt()
                + self.half_rotation_ns
        };
        (position + r.blocks as f64 * self.xfer_ns_per_block).round() as Nanos
    }

    /// The drive is free: dispatch the next request (the front one, or the elevator's pick),
    /// or hold it idle anticipating a read.
    fn start(&mut self, now: Nanos, out: &mut Vec<KReq>) {
        if self.busy.is_some() || self.antic.is_some() || self.queue.is_empty() {
            return;
        }
        let i = match self.elv.as_mut().map(|a| a.pick(&self.queue, now)) {
            None => self.mq.as_mut().map_or(0, |mq| mq.pick(&self.queue, now)),
            Some(Pick::Dispatch(i)) => i,
            Some(Pick::Anticipate(at)) => {
                self.next_id += 1;
                self.antic = Some(self.next_id);
                out.push(KReq::DiskIrq { at, id: self.next_id });
                return;
            }
            Some(Pick::Idle) => return,
        };
        let r = &self.queue[i];
        let at = now + self.service_ns(r);
        self.busy = Some(r.id);
        out.push(KReq::DiskIrq { at, id: r.id });
    }

    /// The request `id` finished (or the anticipation timer `id` ran out): returns the
    /// request and starts the next one. `uncongested` is set when this completion ran
    /// `clear_queue_congested` (2.6's queue below its off threshold).
    pub fn complete(&mut self, id: u64, now: Nanos, out: &mut Vec<KReq>, uncongested: &mut bool) -> Option<Req> {
        if self.antic == Some(id) {
            // as_antic_timeout: the process did not come back; serve the others.
            self.antic = None;
            self.start(now, out);
            return None;
        }
        if self.busy != Some(id) {
            return None;
        }
        let i = self.queue.iter().position(|r| r.id == id)?;
        let r = self.queue.remove(i)?;
        self.slots_queued -= self.slots(r.blocks);
        self.busy = None;
        if self.merge {
            self.freed(&r, out, uncongested);
        }
        if let Some(a) = self.elv.as_mut() {
            a.completed(&r, now);
        }
        self.head = r.block + r.blocks;
        self.served += 1;
        self.blocks_moved += r.blocks;
        if r.dir == Dir::Read {
            self.blocks_read += r.blocks;
        }
        self.start(now, out);
        Some(r)
    }

    /// 2.6's `freed_request`: below the off threshold `clear_queue_congested` runs at every
    /// completion, waking `blk_congestion_wait`'s sleepers whether or not the queue had
    /// been congested; with room for one more request the queue is no longer full and one
    /// `get_request_wait` sleeper is woken.
    fn freed(&mut self, r: &Req, out: &mut Vec<KReq>, uncongested: &mut bool) {
        let d = dir_index(r.dir);
        self.count[d] -= 1;
        if let Some(mq) = self.mq.as_mut() {
            // blk_mq_put_tag -> sbitmap_queue_clear: a batch of the tag's waiters wakes.
            let n = mq.tag_freed(self.slot_waiters.len());
            for (_, token) in self.slot_waiters.drain(..n.min(self.slot_waiters.len())) {
                out.push(KReq::Wake(Chan::RequestSlot(token)));
            }
            return;
        }
        if r.dir != Dir::Write {
            return;
        }
        if self.count[d] < self.congestion_off {
            self.congested = false;
            *uncongested = true;
        }
        if self.count[d] < self.nr_requests {
            self.full = false;
            if let Some((_, token)) = self.slot_waiters.pop_front() {
                out.push(KReq::Wake(Chan::RequestSlot(token)));
            }
        }
    }

    /// Newest queued request (the one a `wait_on_buffer` of the last submitted buffer waits on).
    pub fn last_id(&self) -> Option<u64> {
        self.queue.back().map(|r| r.id)
    }

    /// Request holding buffer sequence number `seq`, if still queued.
    pub fn req_of_seq(&self, seq: u64) -> Option<u64> {
        self.queue.iter().find_map(|r| match r.payload {
            Payload::Buffers { lo, hi } if (lo..hi).contains(&seq) => Some(r.id),
            _ => None,
        })
    }

    pub fn queued(&self) -> usize {
        self.queue.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Completion time of one read of `blocks` at `block` on an idle disk whose head is at 0.
    fn service(m: &MachineProfile, block: u64, blocks: u64) -> Nanos {
        let mut d = Disk::new(m);
        let mut out = Vec::new();
        d.submit(Dir::Read, block, blocks, Payload::Other, 1, 0, &mut out);
        match out[..] {
            [KReq::DiskIrq { at, .. }] => at,
            _ => panic!("one completion armed: {out:?}"),
        }
    }

    #[test]
    fn the_seek_curve_comes_from_the_machine_profile() {
        let mut m = crate::cpu::tests::machine();
        m.disk.track_to_track_ns = 1_000_000;
        m.disk.full_stroke_ns = 9_000_000;
        m.disk.half_rotation_ns = 4_000_000;
        m.disk.capacity_gb = 4096.0 * 1e-9 * 10_000.0; // 10,000 blocks
        let xfer = (4096.0 * 1000.0 / m.disk.seq_mb_s).round() as Nanos;
        // No move: the transfer only.
        assert_eq!(service(&m, 0, 1), xfer);
        // A quarter of the platter: 1 + 8 * sqrt(1/4) + 4 ms.
        assert_eq!(service(&m, 2_500, 1), 9_000_000 + xfer);
        // Beyond the capacity: a full stroke.
        assert_eq!(service(&m, 50_000, 1), 13_000_000 + xfer);
        m.disk.half_rotation_ns = 0;
        assert_eq!(service(&m, 50_000, 1), 9_000_000 + xfer);
    }

    #[test]
    fn the_26_queue_merges_back_and_is_congested_from_113_to_below_103_of_128() {
        let mut m = crate::cpu::tests::machine();
        m.disk.nr_requests = 128;
        m.disk.max_request_kib = 128;
        let mut d = Disk::new(&m);
        d.use_26_block_layer(250, false);
        let mut out = Vec::new();
        // The first request goes to the disk at once; the next ones merge behind it up to
        // 32 blocks (128 KiB) each.
        d.submit(Dir::Write, 0, 1, Payload::Buffers { lo: 0, hi: 1 }, 1, 0, &mut out);
        let mut seq = 1;
        while d.queued() < 113 {
            assert!(!d.congested);
            d.submit(
                Dir::Write,
                seq,
                8,
                Payload::Buffers { lo: seq, hi: seq + 8 },
                1,
                0,
                &mut out,
            );
            seq += 8;
        }
        assert!(d.congested);
        // Every queued request but the one in service and the newest holds 32 blocks.
        assert_eq!((seq - 1).div_ceil(32) + 1, d.queued() as u64);
        assert!(
            d.room(seq, 1, 0, 64) > 0,
            "congested is not full: a writer still gets requests"
        );
        let mut cleared = false;
        let mut now = 0;
        while !cleared {
            let Some(KReq::DiskIrq { at, id }) = out.pop() else {
                panic!("the disk is busy")
            };
            now = at;
            d.complete(id, now, &mut out, &mut cleared);
        }
        assert_eq!(d.queued(), 102);
        assert!(!d.congested && now > 0);
    }

    /// A 2.6 queue of `nr` request slots of one block each, and a submitter of pid 1.
    fn queue_26(nr: u32) -> (Disk, Vec<KReq>) {
        let mut m = crate::cpu::tests::machine();
        m.disk.nr_requests = nr;
        m.disk.max_request_kib = 4;
        let mut d = Disk::new(&m);
        d.use_26_block_layer(250, true);
        (d, Vec::new())
    }

    /// Submit `n` one-block writes of `pid` at distinct blocks (no merges).
    fn writes(d: &mut Disk, out: &mut Vec<KReq>, pid: u32, n: u64, now: Nanos) {
        for _ in 0..n {
            let b = d.next_id * 10;
            d.submit(Dir::Write, b, 1, Payload::Other, pid, now, out);
        }
    }

    #[test]
    fn the_task_that_fills_the_queue_batches_to_32_past_it_and_never_past_192() {
        let (mut d, mut out) = queue_26(128);
        // pid 1 takes 128 requests: the 128th makes the queue full (count + 1 >= 128) and
        // gives pid 1 its batch of 32, one of them used by that request.
        writes(&mut d, &mut out, 1, 128, 0);
        assert_eq!(d.room(1_000_000, 2, 0, 1000), 0, "another task must wait");
        assert!(d.get_request_wait(Dir::Write, 1_000_000, 1, 2, 0).is_some());
        // pid 1 still has its batch: 31 more requests within 20 ms (HZ/50), none after.
        assert_eq!(d.room(1_000_000, 1, 1_000_000, 1000), 31);
        assert_eq!(d.room(1_000_000, 1, 30_000_000, 1000), 0);
        // A read has its own pool.
        assert!(d.get_request_wait(Dir::Read, 5, 1, 2, 0).is_none());
        // Batching never goes past 3/2 of nr_requests.
        let (mut d, mut out) = queue_26(16);
        writes(&mut d, &mut out, 1, 16, 0);
        assert_eq!(d.room(1_000_000, 1, 0, 1000), 24 - 16);
    }

    #[test]
    fn freed_request_wakes_one_sleeper_which_then_batches() {
        let (mut d, mut out) = queue_26(16);
        writes(&mut d, &mut out, 1, 20, 0);
        let a = d.get_request_wait(Dir::Write, 1_000_000, 1, 2, 0).expect("pid 2 waits");
        let b = d.get_request_wait(Dir::Write, 1_000_000, 1, 3, 0).expect("pid 3 waits");
        out.clear();
        // Completions down to 16 wake nobody; the one leaving 15 wakes pid 2 alone.
        let mut now = 0;
        let mut cleared = false;
        let mut woken = Vec::new();
        while woken.is_empty() {
            let id = d.busy.expect("in service");
            now += 1_000_000;
            d.complete(id, now, &mut out, &mut cleared);
            woken.extend(out.iter().filter_map(|r| match r {
                KReq::Wake(c) => Some(*c),
                _ => None,
            }));
            out.clear();
        }
        assert_eq!((woken, d.count[1]), (vec![a], 15));
        assert_ne!(a, b);
        // Woken, pid 2 batches: 32 requests past the full mark, up to the cap of 24.
        assert!(d.get_request_wait(Dir::Write, 1_000_000, 1, 2, now).is_none());
        assert_eq!(d.room(1_000_000, 2, now, 1000), 24 - 15);
    }

    #[test]
    fn the_anticipatory_queue_serves_a_read_after_the_write_in_service() {
        let (mut d, mut out) = queue_26(128);
        writes(&mut d, &mut out, 1, 5, 0);
        let first = d.busy.expect("a write in service");
        let read = d.submit(Dir::Read, 1, 1, Payload::Other, 2, 0, &mut out);
        let mut cleared = false;
        d.complete(first, 1_000_000, &mut out, &mut cleared);
        assert_eq!(d.busy, Some(read), "the read jumps the queued writes");
        d.complete(read, 2_000_000, &mut out, &mut cleared);
        // The reader is new and has nothing queued: the drive waits for it (one jiffy).
        assert_eq!((d.busy, d.antic.is_some()), (None, true));
        // Its next request ends the wait at once.
        d.submit(Dir::Write, 3, 1, Payload::Other, 2, 2_500_000, &mut out);
        assert!(d.busy.is_some() && d.antic.is_none());
        assert_eq!(d.as_counts(), Some((1, 1)));
    }
}
