//! Buffer write-out paths of fs/buffer.c (2.4.17/2.4.18): `write_some_buffers`,
//! `wait_for_buffers`, `sync_buffers` as `sys_sync` runs it, and the passes of bdflush and
//! kupdated (research notes §2).

use crate::dev::disk::{Dir, Payload};
use crate::fs::buffer::{Batch, Via};
use crate::fs::state::FsState;
use crate::kernel::catalog::Point;
use crate::kernel::lock::Lock;
use crate::kernel::path::{point, Chan, Ctx, LoopStep, Nested, Path, Step, Work};
use crate::mm::state::MmK;
use latlab_core::Nanos;
use smallvec::smallvec;

/// NRSYNC: buffers written per write_some_buffers batch.
pub const NRSYNC: u64 = 32;
/// bdf_prm.age_buffer: kupdated writes buffers dirty for longer than this (30 s).
pub const AGE_BUFFER_NS: Nanos = 30_000_000_000;
/// bdf_prm.interval: kupdated's period (5 s).
pub const KUPDATE_INTERVAL_NS: Nanos = 5_000_000_000;

/// Record a submitted batch with the journal (its data buffers leave the dirty state).
fn account_submission(k: &mut FsState, b: &Batch, via: Via) {
    if let Some(t) = k.jbd.txn_mut(b.txn) {
        t.submitted(b.file, b.lo, b.hi - b.lo, via == Via::Journal);
    }
}

/// Hand a batch taken off the dirty list to the disk for task `pid`: the journal learns of
/// it, it moves to BUF_LOCKED, one write request (merged into the queue's newest under 2.6).
pub(crate) fn submit(k: &mut FsState, b: &Batch, via: Via, pid: u32, now: Nanos) {
    account_submission(k, b, via);
    k.buf.submitted(b);
    k.disk_submit_by(
        Dir::Write,
        b.block,
        b.hi - b.lo,
        Payload::Buffers { lo: b.lo, hi: b.hi },
        pid,
        now,
    );
}

/// Submit `batch` via `via`, then `submit_bh` per buffer (a loop with mini-ll's point and,
/// at its end, `end_point` if given).
pub struct SubmitBatch {
    batch: Option<Batch>,
    via: Via,
    n: u64,
    end_point: Option<Point>,
    looped: bool,
}

impl SubmitBatch {
    pub fn new(batch: Batch, via: Via, end_point: Option<Point>) -> Self {
        let n = batch.hi - batch.lo;
        SubmitBatch {
            batch: Some(batch),
            via,
            n,
            end_point,
            looped: false,
        }
    }
}

impl Path<FsState> for SubmitBatch {
    fn name(&self) -> &'static str {
        "ll_rw_block"
    }
    fn next(&mut self, k: &mut FsState, cx: &Ctx) -> Step {
        let block = self.batch.as_ref().map_or(0, |b| b.block);
        let wait = match self.batch {
            Some(_) => k.disk.get_request_wait(Dir::Write, block, self.n, cx.pid, cx.now),
            // The model's 2.4 path checks again after its submit_bh loop; 2.6's is done.
            None if k.disk.is_26() => None,
            None => k.disk.must_wait(block, self.n),
        };
        if let Some(chan) = wait {
            // __get_request_wait: no free request slot.
            return Step::Block(chan);
        }
        if let Some(b) = self.batch.take() {
            submit(k, &b, self.via, cx.pid, cx.now);
        }
        if self.looped {
            return Step::Done;
        }
        self.looped = true;
        let mut pts = smallvec![point(Point::SubmitBh, 1)];
        if let Some(p) = self.end_point {
            pts.push(point(p, self.n.max(1)));
        }
        LoopStep::plain("submit_bh", self.n, k.c.submit_bh, pts)
    }
}

/// `write_some_buffers(NODEV)`: under lru_list_lock take up to NRSYNC dirty buffers from the
/// head of BUF_DIRTY (which holds dirty buffers only: see [`crate::fs::buffer`]), drop the
/// lock and submit them. Returns (via `wrote`) how many it found.
pub struct WriteSomeBuffers {
    sub: Nested<FsState>,
    started: bool,
    pub wrote: u64,
}

pub fn write_some_buffers() -> WriteSomeBuffers {
    WriteSomeBuffers {
        sub: Nested::default(),
        started: false,
        wrote: 0,
    }
}

impl Path<FsState> for WriteSomeBuffers {
    fn name(&self) -> &'static str {
        "write_some_buffers"
    }
    fn next(&mut self, k: &mut FsState, cx: &Ctx) -> Step {
        if let Some(s) = self.sub.next(k, cx) {
            return s;
        }
        if std::mem::replace(&mut self.started, true) {
            return Step::Done;
        }
        let Some(b) = k.buf.take(NRSYNC, None) else {
            return Work::locked("write_some_buffers", 0, Lock::LruList, false);
        };
        let n = b.hi - b.lo;
        self.wrote = n;
        self.sub.start(Box::new(SubmitBatch::new(
            b,
            Via::Writer,
            Some(Point::WriteSomeBuffers),
        )));
        Work::locked("write_some_buffers", n * k.c.collect, Lock::LruList, false)
    }
    fn advanced(&mut self, k: &mut FsState, cx: &Ctx, done: u64) {
        self.sub.advanced(k, cx, done);
    }
}

/// `wait_for_buffers(NODEV, BUF_LOCKED, refile=1)`: under lru_list_lock refile the completed
/// buffers at the head of BUF_LOCKED (mini-ll's lock-break), then sleep on the first locked
/// one. `found_locked` says whether it had to wait (the caller's -EAGAIN).
pub struct WaitForBuffers {
    stage: u8,
    pub found_locked: bool,
}

pub fn wait_for_buffers() -> WaitForBuffers {
    WaitForBuffers {
        stage: 0,
        found_locked: false,
    }
}

impl Path<FsState> for WaitForBuffers {
    fn name(&self) -> &'static str {
        "wait_for_buffers"
    }
    fn next(&mut self, k: &mut FsState, _cx: &Ctx) -> Step {
        match self.stage {
            0 => {
                self.stage = 1;
                let n = k.buf.locked_list_completed();
                LoopStep::locked(
                    "wait_for_buffers",
                    n,
                    k.c.refile,
                    Lock::LruList,
                    smallvec![point(Point::WaitForBuffers, 1)],
                    false,
                )
            }
            1 => {
                self.stage = 2;
                match k.buf.locked_list_first_inflight().and_then(|s| k.disk.req_of_seq(s)) {
                    Some(id) => {
                        self.found_locked = true;
                        Step::Block(Chan::Io(id))
                    }
                    None => Step::Done,
                }
            }
            _ => Step::Done,
        }
    }
    fn advanced(&mut self, k: &mut FsState, _cx: &Ctx, done: u64) {
        k.buf.refile_locked(done);
        if self.stage == 1 && k.buf.locked_list_completed() > 0 {
            // Stopped at the lock-break: restart the walk from the head.
            self.stage = 0;
        }
    }
}

/// Run `make()` repeatedly as a sub-path while `again(state)` holds.
struct Repeat<F, G> {
    make: F,
    again: G,
    sub: Nested<FsState>,
    name: &'static str,
}

impl<F: FnMut() -> Box<dyn Path<FsState>>, G: FnMut(&FsState) -> bool> Path<FsState> for Repeat<F, G> {
    fn name(&self) -> &'static str {
        self.name
    }
    fn next(&mut self, k: &mut FsState, cx: &Ctx) -> Step {
        loop {
            if let Some(s) = self.sub.next(k, cx) {
                return s;
            }
            if !(self.again)(k) {
                return Step::Done;
            }
            self.sub.start((self.make)());
        }
    }
    fn advanced(&mut self, k: &mut FsState, cx: &Ctx, done: u64) {
        self.sub.advanced(k, cx, done);
    }
}

fn repeat(
    name: &'static str,
    make: impl FnMut() -> Box<dyn Path<FsState>> + 'static,
    again: impl FnMut(&FsState) -> bool + 'static,
) -> Box<dyn Path<FsState>> {
    Box::new(Repeat {
        make,
        again,
        sub: Nested::default(),
        name,
    })
}

/// Run paths one after another (holding the big kernel lock while the running one does).
pub struct Chain {
    name: &'static str,
    parts: std::collections::VecDeque<Box<dyn Path<FsState>>>,
    sub: Nested<FsState>,
}

pub fn chain(name: &'static str, parts: Vec<Box<dyn Path<FsState>>>) -> Box<dyn Path<FsState>> {
    Box::new(Chain {
        name,
        parts: parts.into(),
        sub: Nested::default(),
    })
}

impl Path<FsState> for Chain {
    fn name(&self) -> &'static str {
        self.name
    }
    fn next(&mut self, k: &mut FsState, cx: &Ctx) -> Step {
        loop {
            if let Some(s) = self.sub.next(k, cx) {
                return s;
            }
            match self.parts.pop_front() {
                Some(p) => self.sub.start(p),
                None => return Step::Done,
            }
        }
    }
    fn advanced(&mut self, k: &mut FsState, cx: &Ctx, done: u64) {
        self.sub.advanced(k, cx, done);
    }
    fn holds_bkl(&self) -> bool {
        self.sub.holds_bkl()
    }
}

/// A path from a closure run once at its start (state changes with no CPU cost of their own).
pub struct Effect<F>(Option<F>);

pub fn effect(f: impl FnOnce(&mut FsState) + 'static) -> Box<dyn Path<FsState>> {
    Box::new(Effect(Some(f)))
}

impl<F: FnOnce(&mut FsState)> Path<FsState> for Effect<F> {
    fn name(&self) -> &'static str {
        "effect"
    }
    fn next(&mut self, k: &mut FsState, _cx: &Ctx) -> Step {
        if let Some(f) = self.0.take() {
            f(k);
        }
        Step::Done
    }
}

/// `write_unlocked_buffers(NODEV)`: write_some_buffers until BUF_DIRTY has nothing dirty.
pub fn write_unlocked_buffers() -> Box<dyn Path<FsState>> {
    repeat(
        "write_unlocked_buffers",
        || Box::new(write_some_buffers()),
        |k| k.buf.nr_dirty > 0,
    )
}

/// `wait_for_locked_buffers(NODEV, BUF_DIRTY, 0)`: walk BUF_DIRTY from the head past the
/// unlocked buffers (not refiled), looking for a locked one to sleep on. BUF_DIRTY holds no
/// locked buffers here (see [`crate::fs::buffer`]), so it is one walk over the dirty ones
/// (mini-ll's lock-break applies: a global sync; `nr` goes on counting down after it).
struct WalkDirtyList {
    left: Option<u64>,
}

impl Path<FsState> for WalkDirtyList {
    fn name(&self) -> &'static str {
        "wait_for_buffers"
    }
    fn next(&mut self, k: &mut FsState, _cx: &Ctx) -> Step {
        let left = *self.left.get_or_insert(k.buf.nr_dirty);
        if left == 0 {
            return Step::Done;
        }
        LoopStep::locked(
            "wait_for_buffers",
            left,
            k.c.skip_locked,
            Lock::LruList,
            smallvec![point(Point::WaitForBuffers, 1)],
            false,
        )
    }
    fn advanced(&mut self, _k: &mut FsState, _cx: &Ctx, done: u64) {
        if let Some(l) = self.left.as_mut() {
            *l -= done.min(*l);
        }
    }
}

/// `sync_unlocked_inodes` (kupdated) and `sync_inodes` (sync) under the big kernel lock (both
/// callers take `lock_kernel()` around them): `sync_list(&sb->s_dirty)`, i.e. `__sync_one` of
/// the oldest inode on `s_dirty` until the list is empty (2.4.18 fs/inode.c: `while ((tmp =
/// head->prev) != head)`), dropping `inode_lock` around each but never the BKL. Inodes
/// dirtied while the walk has let the CPU go (the low-latency patch's point) are synced by
/// the same walk.
pub struct SyncInodes {
    func: &'static str,
}

pub fn sync_inodes(func: &'static str) -> SyncInodes {
    SyncInodes { func }
}

impl Path<FsState> for SyncInodes {
    fn name(&self) -> &'static str {
        self.func
    }
    fn next(&mut self, k: &mut FsState, _cx: &Ctx) -> Step {
        let n = k.dcache.dirty_inodes.len() as u64;
        if n == 0 {
            return Step::Done;
        }
        LoopStep::locked(
            self.func,
            n,
            k.c.sync_one,
            Lock::Bkl,
            smallvec![point(Point::SyncOne, 1)],
            false,
        )
    }
    fn advanced(&mut self, k: &mut FsState, _cx: &Ctx, done: u64) {
        k.dcache.synced(done);
    }
}

/// `sys_sync` = `fsync_dev(0)`: sync_buffers(0, 0); sync_inodes; sync_supers (ext3 starts a
/// commit); sync_buffers(0, 1) = write_unlocked + wait(BUF_DIRTY) + write_unlocked +
/// wait(BUF_LOCKED, refile).
pub fn sys_sync(kjournald: u32) -> Box<dyn Path<FsState>> {
    chain(
        "sys_sync",
        vec![
            write_unlocked_buffers(),
            Box::new(sync_inodes("sync_inodes")),
            effect(move |k| {
                k.jbd.commit_requested = true;
                k.wake_kthread(kjournald);
            }),
            write_unlocked_buffers(),
            Box::new(WalkDirtyList { left: None }),
            write_unlocked_buffers(),
            repeat(
                "wait_for_locked_buffers",
                || Box::new(wait_for_buffers()),
                |k| k.buf.locked_list_first_inflight().is_some() || k.buf.locked_list_completed() > 0,
            ),
        ],
    )
}

/// bdflush's pass: write batches while above nfract, then `wait_for_some_buffers`.
pub fn bdflush_pass() -> Box<dyn Path<FsState>> {
    chain(
        "bdflush",
        vec![
            repeat(
                "bdflush",
                || Box::new(write_some_buffers()),
                |k| k.balance_dirty_state() >= 0 && k.buf.nr_dirty > 0,
            ),
            Box::new(wait_for_buffers()),
        ],
    )
}

/// kupdated's pass (`sync_old_buffers`, 2.4.17-2.4.19 fs/buffer.c): `sync_unlocked_inodes`
/// under the BKL, then write batches while the oldest dirty buffer is older than
/// age_buffer. (It does not wait for buffers; bdflush does.)
pub fn kupdate_pass(now: Nanos) -> Box<dyn Path<FsState>> {
    chain(
        "kupdate",
        vec![
            Box::new(sync_inodes("sync_unlocked_inodes")),
            repeat(
                "sync_old_buffers",
                || Box::new(write_some_buffers()),
                move |k| k.buf.oldest_dirty().is_some_and(|t| t + AGE_BUFFER_NS <= now),
            ),
        ],
    )
}

/// Submit a plain disk request (journal blocks, reads) and wait for it.
pub struct DiskIo {
    pub dir: Dir,
    pub block: u64,
    pub blocks: u64,
    id: Option<u64>,
}

pub fn disk_io(dir: Dir, block: u64, blocks: u64) -> DiskIo {
    DiskIo {
        dir,
        block,
        blocks,
        id: None,
    }
}

impl Path<FsState> for DiskIo {
    fn name(&self) -> &'static str {
        "ll_rw_block"
    }
    fn next(&mut self, k: &mut FsState, cx: &Ctx) -> Step {
        if self.id.is_some() {
            return Step::Done;
        }
        if let Some(chan) = k
            .disk
            .get_request_wait(self.dir, self.block, self.blocks, cx.pid, cx.now)
        {
            return Step::Block(chan);
        }
        let id = k.disk_submit_by(self.dir, self.block, self.blocks, Payload::Other, cx.pid, cx.now);
        self.id = Some(id);
        Step::Block(Chan::Io(id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::cpu::tests::kstate;

    #[test]
    fn dirty_limits_are_a_share_of_low_memory_whatever_holds_it() {
        // nr_free_buffer_pages() (2.4.10 VM on): zone size minus pages_high, not free + cache.
        let mut k = kstate();
        let base = k.buffer_pages();
        assert_eq!(base, k.mm.total() - k.mm.pages_high());
        let before = k.dirty_headroom();
        k.mm.grow(7, 10_000); // anonymous memory takes free pages
        assert_eq!(k.buffer_pages(), base);
        assert_eq!(k.dirty_headroom(), before);
        assert_eq!(k.balance_dirty_state(), -1);
    }

    #[test]
    fn inode_sync_walks_the_dirty_inodes_under_the_bkl() {
        let mut k = kstate();
        for f in 1..=100 {
            k.dcache.mark_inode_dirty(f);
        }
        k.dcache.mark_inode_dirty(7); // dirtied twice, on s_dirty once
        k.dcache.delete_file(100); // iput of a freed inode takes it off
        let cx = Ctx { now: 0, pid: 1 };
        let mut p = sync_inodes("sync_unlocked_inodes");
        let Step::Loop(l) = p.next(&mut k, &cx) else {
            panic!("a loop")
        };
        assert_eq!((l.items, l.lock, l.per_item), (99, Some(Lock::Bkl), k.c.sync_one));
        assert_eq!(l.points.iter().map(|p| p.point).collect::<Vec<_>>(), [Point::SyncOne]);
        // Cut after 40 by the low-latency patch's point: the walk goes on with the rest.
        p.advanced(&mut k, &cx, 40);
        k.dcache.mark_inode_dirty(500); // dirtied meanwhile: sync_list goes on until s_dirty is empty
        let Step::Loop(l) = p.next(&mut k, &cx) else {
            panic!("a loop")
        };
        assert_eq!(l.items, 60);
        p.advanced(&mut k, &cx, 60);
        assert!(matches!(p.next(&mut k, &cx), Step::Done));
        assert!(k.dcache.dirty_inodes.is_empty());
    }
}
