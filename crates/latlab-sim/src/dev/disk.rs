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
//! Under page-based (2.6+) writeback the queue is 2.6.17's (block/ll_rw_blk.c, research
//! notes writeback-2.6.17.md item 5) with the noop elevator (block/noop-iosched.c): service
//! in submission order, a write whose buffers continue the newest queued request's is merged
//! into it (`__make_request`'s back merge) up to `max_request_kib`, one request per slot;
//! the queue is congested from `nr_requests - nr_requests/8 + 1` requests until it drops
//! below `nr_requests - nr_requests/8 - nr_requests/16 - 1` (113 and 103 of 128); every
//! completion that leaves it below that wakes `blk_congestion_wait`'s sleepers. Left out: plugging (a request is
//! dispatched as soon as the disk is free), the anticipatory scheduler's sorting,
//! anticipation and read/write batches (one sequential writer issues no reads to sort),
//! and `ioc_batching`'s 32 requests past the limit for a task that just waited.

use crate::kernel::path::Chan;
use crate::kernel::state::KReq;
use crate::machine::MachineProfile;
use latlab_core::Nanos;
use std::collections::VecDeque;

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
    pub congested: bool,
    congestion_on: u64,
    congestion_off: u64,
    /// Requests served, blocks moved.
    pub served: u64,
    pub blocks_moved: u64,
    /// Of those, read.
    pub blocks_read: u64,
}

impl Disk {
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
        }
    }

    /// Switch to 2.6's block layer (page-based writeback's kernels).
    pub fn use_26_block_layer(&mut self) {
        self.merge = true;
    }

    /// Request slots a transfer of `blocks` takes.
    fn slots(&self, blocks: u64) -> u64 {
        blocks.div_ceil(self.max_request_blocks).max(1)
    }

    fn slots_used(&self) -> u64 {
        if self.merge {
            return self.queue.len() as u64;
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

    /// Blocks a writer at `block` can submit before the queue is congested (a nonblocking
    /// writer's `bdi_write_congested` test after each page), or, `blocking`, before it is full.
    pub fn room(&self, block: u64, blocking: bool) -> u64 {
        let limit = if blocking {
            self.nr_requests
        } else if self.congested {
            return 0;
        } else {
            // The page that allocates the congestion_on-th request makes it congested.
            self.congestion_on - 1
        };
        let free = limit.saturating_sub(self.slots_used());
        self.tail_room(block) + free * self.max_request_blocks + u64::from(!blocking && free == 0)
    }

    /// The oldest request's completion, if any is queued (what `blk_congestion_wait` ends on
    /// in the model).
    pub fn oldest(&self) -> Option<Chan> {
        self.queue.front().map(|r| Chan::Io(r.id))
    }

    /// Queue a request; returns its id. Starts the disk if idle.
    pub fn submit(
        &mut self,
        dir: Dir,
        block: u64,
        blocks: u64,
        payload: Payload,
        now: Nanos,
        out: &mut Vec<KReq>,
    ) -> u64 {
        if let (true, Payload::Buffers { lo, hi }) = (self.merge, payload) {
            return self.submit_merging(dir, block, lo, hi, now, out);
        }
        self.push(dir, block, blocks, payload, now, out)
    }

    fn push(&mut self, dir: Dir, block: u64, blocks: u64, payload: Payload, now: Nanos, out: &mut Vec<KReq>) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.slots_queued += self.slots(blocks);
        self.queue.push_back(Req {
            id,
            dir,
            block,
            blocks,
            payload,
        });
        if self.merge && self.queue.len() as u64 >= self.congestion_on {
            self.congested = true;
        }
        if self.busy.is_none() {
            self.start(now, out);
        }
        id
    }

    /// 2.6's `__make_request` for buffers `lo..hi` at `block`: back-merged into the newest
    /// queued request as far as it has room, the rest in new requests of at most
    /// `max_request_kib`. Returns the id of the request holding the last buffer.
    fn submit_merging(&mut self, dir: Dir, block: u64, lo: u64, hi: u64, now: Nanos, out: &mut Vec<KReq>) -> u64 {
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
            id = self.push(dir, block, n, Payload::Buffers { lo, hi: lo + n }, now, out);
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

    fn start(&mut self, now: Nanos, out: &mut Vec<KReq>) {
        if let Some(r) = self.queue.front() {
            let at = now + self.service_ns(r);
            self.busy = Some(r.id);
            out.push(KReq::DiskIrq { at, id: r.id });
        }
    }

    /// The request `id` finished: returns it and starts the next one. `uncongested` is set
    /// when this completion ran `clear_queue_congested` (2.6's queue below its off threshold).
    pub fn complete(&mut self, id: u64, now: Nanos, out: &mut Vec<KReq>, uncongested: &mut bool) -> Option<Req> {
        if self.busy != Some(id) {
            return None;
        }
        let r = self.queue.pop_front()?;
        self.slots_queued -= self.slots(r.blocks);
        self.busy = None;
        // freed_request(): below the off threshold `clear_queue_congested` runs at every
        // completion, waking `blk_congestion_wait`'s sleepers whether or not the queue had
        // been congested.
        if self.merge && (self.queue.len() as u64) < self.congestion_off {
            self.congested = false;
            *uncongested = true;
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
        d.submit(Dir::Read, block, blocks, Payload::Other, 0, &mut out);
        match out[..] {
            [KReq::DiskIrq { at, .. }] => at,
            _ => panic!("one completion armed: {out:?}"),
        }
    }

    #[test]
    fn the_seek_curve_comes_from_the_machine_profile() {
        let mut m = crate::kernel::tests::machine();
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
        let mut m = crate::kernel::tests::machine();
        m.disk.nr_requests = 128;
        m.disk.max_request_kib = 128;
        let mut d = Disk::new(&m);
        d.use_26_block_layer();
        let mut out = Vec::new();
        // The first request goes to the disk at once; the next ones merge behind it up to
        // 32 blocks (128 KiB) each.
        d.submit(Dir::Write, 0, 1, Payload::Buffers { lo: 0, hi: 1 }, 0, &mut out);
        let mut seq = 1;
        while d.queued() < 113 {
            assert!(!d.congested);
            d.submit(
                Dir::Write,
                seq,
                8,
                Payload::Buffers { lo: seq, hi: seq + 8 },
                0,
                &mut out,
            );
            seq += 8;
        }
        assert!(d.congested);
        // Every queued request but the one in service and the newest holds 32 blocks.
        assert_eq!((seq - 1).div_ceil(32) + 1, d.queued() as u64);
        assert_eq!(d.room(seq, false), 0, "a nonblocking writer stops at congestion");
        assert!(d.room(seq, true) > 0, "a blocking one may fill the queue");
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
}
