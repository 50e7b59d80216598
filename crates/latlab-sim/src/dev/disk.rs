//! An IDE disk behind the 2.4 request queue (drivers/block/ll_rw_blk.c, drivers/ide).
//!
//! Requests are served one at a time in submission order (the queue completes in order, which
//! the buffer cache relies on: a prefix of submitted buffers is complete). Service time is a
//! positioning time when the head must move (seek curve `track_to_track + (full_stroke -
//! track_to_track) * sqrt(distance / capacity)` plus half a rotation) and the media transfer
//! time at the sustained rate. The queue has `nr_requests` slots of at most
//! `max_request_kib` each; a submitter finding it full sleeps in `__get_request_wait`.

use crate::kernel::path::Chan;
use crate::kernel::state::KReq;
use crate::machine::MachineProfile;
use latlab_core::Nanos;
use std::collections::VecDeque;

/// IBM DTLA-307020 spec: head switch 1.2 ms (track-to-track stand-in), full stroke 14.7 ms,
/// 7200 rpm (half rotation 4.17 ms) — research notes, kernel-facts.md "Costs of the era".
const TRACK_TO_TRACK_NS: f64 = 1.2e6;
const FULL_STROKE_NS: f64 = 14.7e6;
const HALF_ROTATION_NS: f64 = 4.17e6;
/// Capacity used for seek distances: a 20 GB drive in 4 KiB blocks.
const CAPACITY_BLOCKS: f64 = 20e9 / 4096.0;

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
    busy: Option<u64>,
    head: u64,
    next_id: u64,
    nr_requests: u64,
    max_request_blocks: u64,
    xfer_ns_per_block: f64,
    /// Requests served, blocks moved.
    pub served: u64,
    pub blocks_moved: u64,
    /// Of those, read.
    pub blocks_read: u64,
}

impl Disk {
    pub fn new(m: &MachineProfile) -> Self {
        Disk {
            queue: VecDeque::new(),
            busy: None,
            head: 0,
            next_id: 1,
            nr_requests: m.disk.nr_requests as u64,
            max_request_blocks: (m.disk.max_request_kib / 4).max(1),
            xfer_ns_per_block: 4096.0 * 1000.0 / m.disk.seq_mb_s,
            served: 0,
            blocks_moved: 0,
            blocks_read: 0,
        }
    }

    /// Request slots a transfer of `blocks` takes.
    fn slots(&self, blocks: u64) -> u64 {
        blocks.div_ceil(self.max_request_blocks).max(1)
    }

    fn slots_used(&self) -> u64 {
        self.queue.iter().map(|r| self.slots(r.blocks)).sum()
    }

    /// Would a submission of `blocks` have to wait for a free request slot? Returns the
    /// channel to sleep on (completion of the oldest request) if so.
    pub fn must_wait(&self, blocks: u64) -> Option<Chan> {
        if self.slots_used() + self.slots(blocks) > self.nr_requests && !self.queue.is_empty() {
            self.queue.front().map(|r| Chan::Io(r.id))
        } else {
            None
        }
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
        let id = self.next_id;
        self.next_id += 1;
        self.queue.push_back(Req {
            id,
            dir,
            block,
            blocks,
            payload,
        });
        if self.busy.is_none() {
            self.start(now, out);
        }
        id
    }

    fn service_ns(&self, r: &Req) -> Nanos {
        let dist = self.head.abs_diff(r.block) as f64;
        let position = if dist == 0.0 {
            0.0
        } else {
            TRACK_TO_TRACK_NS
                + (FULL_STROKE_NS - TRACK_TO_TRACK_NS) * (dist / CAPACITY_BLOCKS).min(1.0).sqrt()
                + HALF_ROTATION_NS
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

    /// The request `id` finished: returns it and starts the next one.
    pub fn complete(&mut self, id: u64, now: Nanos, out: &mut Vec<KReq>) -> Option<Req> {
        if self.busy != Some(id) {
            return None;
        }
        let r = self.queue.pop_front()?;
        self.busy = None;
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
