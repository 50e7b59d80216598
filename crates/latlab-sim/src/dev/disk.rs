//! An IDE disk behind the 2.4 request queue (drivers/block/ll_rw_blk.c, drivers/ide).
//!
//! Requests are served one at a time in submission order (the queue completes in order, which
//! the buffer cache relies on: a prefix of submitted buffers is complete). Service time is a
//! positioning time when the head must move (seek curve `track_to_track + (full_stroke -
//! track_to_track) * sqrt(distance / capacity)` plus half a rotation, all four from the
//! machine's [`DiskProfile`](crate::machine::DiskProfile)) and the media transfer time at the
//! sustained rate. The queue has `nr_requests` slots of at most
//! `max_request_kib` each; a submitter finding it full sleeps in `__get_request_wait`.

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
            track_to_track_ns: m.disk.track_to_track_ns as f64,
            full_stroke_ns: m.disk.full_stroke_ns as f64,
            half_rotation_ns: m.disk.half_rotation_ns as f64,
            capacity_blocks: m.disk.capacity_gb * 1e9 / 4096.0,
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
}
