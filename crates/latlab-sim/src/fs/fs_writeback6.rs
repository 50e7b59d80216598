//! The 6.x flusher's walk over the dirty inodes (fs/fs-writeback.c; read in the stored
//! index's 6.x copy, torvalds/linux at 65e57574, whose `writeback_sb_inodes`, `queue_io`,
//! `move_expired_inodes`, `requeue_inode` and `wb_writeback` loops are 6.18's): one pass of
//! `wb_writeback`'s loop, `queue_io` then `__writeback_inodes_wb` -> `writeback_sb_inodes`,
//! with the file system's `->writepages` ([`crate::fs::ext4`]) per inode.
//!
//! - `queue_io`, only when `b_io` is empty: `b_more_io` spliced onto `b_io` (O(1)), then
//!   `move_expired_inodes` moves every inode of `b_dirty` dirtied before the pass (a
//!   background pass: `dirtied_before = jiffies`), one by one under `wb->list_lock`
//!   (`i_lock` around each move); one file system, so no sort by superblock.
//! - `writeback_sb_inodes`, per inode of `b_io`: under `wb->list_lock` and `i_lock` its
//!   state tests (an inode another task writes, `I_SYNC`, goes to `b_more_io`), `I_SYNC`
//!   set, both locks dropped; `__writeback_single_inode` -> `do_writepages` with
//!   `wbc.nr_to_write = writeback_chunk_size` (per inode, not per pass), then its `i_lock`
//!   section on the dirty flags; `cond_resched()` (after `blk_flush_plug`, when
//!   `need_resched()`); `wb->list_lock` and `i_lock` again around `requeue_inode` (still
//!   dirty with its chunk spent: `b_more_io`; still dirty otherwise: back to `b_dirty`;
//!   clean: off the lists) and `inode_sync_complete`. The pass returns to `wb_writeback`
//!   when `b_io` is empty or, once it wrote something, after `HZ / 10`.
//!
//! No spinlock is held across more than one inode's list step except `queue_io`'s move,
//! which 6.x still does in one stretch (2.6.17's `sync_sb_inodes` held `inode_lock` over
//! its whole visit, [`crate::fs::fs_writeback`]).
//!
//! Left out: the `work_list` test (no other work is queued in the model's runs), cgroup
//! writeback (`inode_to_wb_and_lock_list` finds the one root wb), kupdate passes, and the
//! `wb_writeback` wait on `b_more_io` when a pass wrote nothing (only the flusher writes
//! `WB_SYNC_NONE`).

use crate::fs::fs_writeback::writepages;
use crate::fs::state::FsState;
use crate::kernel::catalog::Point;
use crate::kernel::lock::Lock;
use crate::kernel::path::{point, Ctx, LoopStep, Nested, Path, Step, Work};
use crate::mm::fs_ops::Wbc;
use latlab_core::Nanos;
use smallvec::smallvec;

/// `HZ / 10`: a pass that wrote something returns to `wb_writeback` after this long.
const PASS_NS: Nanos = 100_000_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    /// `queue_io` if `b_io` is empty.
    Queue,
    /// The next inode's list step.
    Pick,
    /// `__writeback_single_inode`: its `do_writepages` runs (or is to start).
    Write,
    /// `__writeback_single_inode`'s `i_lock` section after `do_writepages`.
    Flags,
    /// `write_inode`, `wbc_detach_inode`, then `cond_resched()`.
    Resched,
    /// `requeue_inode` under `wb->list_lock`.
    Requeue,
    Done,
}

/// One `writeback_sb_inodes` pass of the 6.x flusher.
struct WritebackSbInodes {
    /// `writeback_chunk_size`: each inode's `wbc.nr_to_write`.
    chunk: u64,
    stage: Stage,
    /// The inode being written, holding its `I_SYNC`.
    cur: Option<u32>,
    start: Option<Nanos>,
    /// `total_wrote`: pages written and inodes cleaned.
    total_wrote: u64,
    /// Pages written in the pass.
    pages: u64,
    sub: Nested<FsState>,
}

/// One pass of 6.x's `wb_writeback` over the inodes, each inode's chunk `chunk` pages; when
/// it returns, `k.writeback.pwb().wbc.nr_to_write` holds `chunk` less the pages written.
pub fn writeback_sb_inodes(chunk: u64) -> Box<dyn Path<FsState>> {
    Box::new(WritebackSbInodes {
        chunk,
        stage: Stage::Queue,
        cur: None,
        start: None,
        total_wrote: 0,
        pages: 0,
        sub: Nested::default(),
    })
}

impl Path<FsState> for WritebackSbInodes {
    fn name(&self) -> &'static str {
        "writeback_sb_inodes"
    }
    fn next(&mut self, k: &mut FsState, cx: &Ctx) -> Step {
        loop {
            if let Some(s) = self.sub.next(k, cx) {
                return s;
            }
            match self.stage {
                Stage::Queue => {
                    self.start = Some(cx.now);
                    self.stage = Stage::Pick;
                    let io = &k.vm.writeback.pwb().ioless;
                    if !io.b_io.is_empty() {
                        continue;
                    }
                    // list_splice_init(&wb->b_more_io, &wb->b_io), then move_expired_inodes
                    // of b_dirty, oldest first, dequeued after b_more_io's.
                    let mut b_io = std::mem::take(&mut k.vm.writeback.pwb_mut().ioless.b_more_io);
                    let more: std::collections::BTreeSet<u32> = b_io.iter().copied().collect();
                    let expired: Vec<u32> = k
                        .buf
                        .dirty_files()
                        .into_iter()
                        .filter(|&(f, when)| when <= cx.now && !more.contains(&f))
                        .map(|(f, _)| f)
                        .collect();
                    let moved = expired.len() as u64;
                    b_io.extend(expired);
                    k.vm.writeback.pwb_mut().ioless.b_io = b_io;
                    return Work::locked("move_expired_inodes", moved * k.c.queue_io_inode, Lock::WbList, false);
                }
                Stage::Pick => {
                    let Some(file) = k.vm.writeback.pwb_mut().ioless.b_io.pop_front() else {
                        self.stage = Stage::Done;
                        continue;
                    };
                    if k.buf.pending_of(file) == 0 {
                        // Cleaned behind the flusher's back (a sync, a truncate).
                        continue;
                    }
                    let pwb = k.vm.writeback.pwb_mut();
                    if pwb.i_lock.get(&file).is_some_and(|&p| p != cx.pid) {
                        // I_SYNC under WB_SYNC_NONE: requeue_io, on to the next inode.
                        pwb.ioless.b_more_io.push_back(file);
                        return Work::locked("writeback_sb_inodes", k.c.wb_pick_inode, Lock::WbList, false);
                    }
                    pwb.i_lock.insert(file, cx.pid);
                    pwb.wbc = Wbc::new(self.chunk, false, None);
                    self.cur = Some(file);
                    self.stage = Stage::Write;
                    return Work::locked("writeback_sb_inodes", k.c.wb_pick_inode, Lock::WbList, false);
                }
                Stage::Write => {
                    let file = self.cur.expect("an inode under I_SYNC");
                    self.stage = Stage::Flags;
                    self.sub.start(writepages(k, file));
                }
                Stage::Flags => {
                    self.stage = Stage::Resched;
                    return Work::locked("__writeback_single_inode", k.c.wb_inode_flags, Lock::ILock, false);
                }
                Stage::Resched => {
                    self.stage = Stage::Requeue;
                    let wrote = self.chunk - k.writeback.pwb().wbc.nr_to_write.min(self.chunk);
                    self.pages += wrote;
                    self.total_wrote += wrote;
                    return LoopStep::plain(
                        "writeback_sb_inodes",
                        1,
                        k.c.wb_inode_done,
                        smallvec![point(Point::WritebackSbInodes, 1)],
                    );
                }
                Stage::Requeue => {
                    let file = self.cur.take().expect("an inode under I_SYNC");
                    let chunk_spent = k.writeback.pwb().wbc.nr_to_write == 0;
                    let dirty = k.buf.pending_of(file) > 0;
                    let pwb = k.vm.writeback.pwb_mut();
                    pwb.i_lock.remove(&file);
                    match (dirty, chunk_spent) {
                        // requeue_io: its next chunk after b_io's other inodes.
                        (true, true) => pwb.ioless.b_more_io.push_back(file),
                        // redirty_tail: back on b_dirty, where the next queue_io finds it.
                        (true, false) => {}
                        // Clean: off the lists, and counted.
                        (false, _) => self.total_wrote += 1,
                    }
                    let late = self.start.is_some_and(|s| cx.now.saturating_sub(s) > PASS_NS);
                    self.stage = if self.total_wrote > 0 && late {
                        Stage::Done
                    } else {
                        Stage::Pick
                    };
                    return Work::locked("writeback_sb_inodes", k.c.wb_requeue_inode, Lock::WbList, false);
                }
                Stage::Done => {
                    k.writeback.pwb_mut().wbc = Wbc::new(self.chunk.saturating_sub(self.pages), false, None);
                    return Step::Done;
                }
            }
        }
    }
    fn advanced(&mut self, k: &mut FsState, cx: &Ctx, done: u64) {
        self.sub.advanced(k, cx, done);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::tests::run_to_sleep;
    use crate::fs::ext4::ext4_write;
    use crate::fs::ext4::tests::{kstate618, variant618};
    use crate::kernel::path::Work;
    use crate::kernel::preempt::{loop_point, LoopChance, Resched};
    use crate::mm::state::MmK;
    use crate::variant::PreemptModel;

    const FILES: u64 = 12;

    /// A 6.18 kernel with `FILES` files of 2 dirty 4 KiB pages each.
    fn dirty_files() -> (FsState, Vec<u32>) {
        let mut k = kstate618();
        let files = (0..FILES)
            .map(|_| {
                let f = k.mm.create_file(2);
                assert_eq!(run_to_sleep(&mut k, ext4_write(f, None, 8192)), None);
                f
            })
            .collect();
        (k, files)
    }

    /// The steps `p` runs to its end (no time passing): its works and loops.
    fn steps(k: &mut FsState, mut p: Box<dyn Path<FsState>>) -> (Vec<Work>, Vec<LoopStep>) {
        let cx = Ctx { now: 1, pid: 1 };
        let (mut works, mut loops) = (Vec::new(), Vec::new());
        for _ in 0..100_000 {
            match p.next(k, &cx) {
                Step::Work(w) => works.push(w),
                Step::Loop(l) => {
                    p.advanced(k, &cx, l.items);
                    loops.push(l);
                }
                Step::Block(c) => panic!("{} slept on {c:?}", p.name()),
                Step::Done => return (works, loops),
            }
        }
        panic!("{} did not finish", p.name())
    }

    #[test]
    fn the_flusher_is_6xs_walk_with_ext4_and_2617s_with_ext3() {
        let (k, _) = dirty_files();
        assert_eq!(
            k.flusher_writeback(Wbc::new(1024, false, None)).name(),
            "writeback_sb_inodes"
        );
        let k = crate::cpu::tests::kstate();
        assert_eq!(
            k.flusher_writeback(Wbc::new(1024, false, None)).name(),
            "writeback_inodes"
        );
    }

    #[test]
    fn the_6x_flusher_holds_a_spinlock_over_one_inodes_list_step_and_reschedules_per_inode() {
        let (mut k, files) = dirty_files();
        let (works, loops) = steps(&mut k, writeback_sb_inodes(1024));
        assert!(files.iter().all(|&f| k.buf.pending_of(f) == 0), "every inode written");
        assert!(k.writeback.pwb().ioless.b_io.is_empty() && k.writeback.pwb().i_lock.is_empty());
        assert_eq!(k.writeback.pwb().wbc.nr_to_write, 1024 - 2 * FILES);
        // queue_io moves the FILES inodes in one stretch under wb->list_lock; after it, each
        // spinlock is held over one inode's list step, and released at the step's end.
        let c = &k.c;
        let locked: Vec<&Work> = works.iter().filter(|w| w.lock.is_some()).collect();
        assert_eq!(
            (locked[0].func, locked[0].ns, locked[0].lock),
            ("move_expired_inodes", FILES * c.queue_io_inode, Some(Lock::WbList))
        );
        let per_inode = [
            ("writeback_sb_inodes", c.wb_pick_inode, Lock::WbList),
            ("__writeback_single_inode", c.wb_inode_flags, Lock::ILock),
            ("writeback_sb_inodes", c.wb_requeue_inode, Lock::WbList),
        ];
        let rest: Vec<_> = locked[1..]
            .iter()
            .filter(|w| matches!(w.lock, Some(Lock::WbList | Lock::ILock)))
            .map(|w| (w.func, w.ns, w.lock.unwrap()))
            .collect();
        assert_eq!(rest, per_inode.repeat(FILES as usize));
        assert!(locked.iter().all(|w| !w.hold));
        // A cond_resched() per inode, under none too.
        let resched: Vec<&LoopStep> = loops.iter().filter(|l| l.func == "writeback_sb_inodes").collect();
        assert_eq!(resched.len() as u64, FILES);
        let v = variant618(PreemptModel::None);
        assert_eq!(
            loop_point(resched[0], &v, false).map(|LoopChance { at, every }| (at, every)),
            Some((Resched::Point(Point::WritebackSbInodes), 1))
        );
        assert_eq!(resched[0].lock, None);
        // 2.6.17's sync_sb_inodes on the same inodes: inode_lock over all of them at once.
        let (mut k, _) = dirty_files();
        let mut old = crate::fs::fs_writeback::writeback_inodes(Wbc::new(1024, false, None), false);
        let Step::Work(w) = old.next(&mut k, &Ctx { now: 1, pid: 1 }) else {
            panic!("sync_sb_inodes starts with its walk under inode_lock")
        };
        assert_eq!((w.ns, w.lock), (FILES * k.c.sync_one, Some(Lock::Inode)));
    }

    #[test]
    fn an_inode_whose_chunk_ran_out_waits_on_b_more_io_behind_the_others() {
        let mut k = kstate618();
        let big = k.mm.create_file(48);
        assert_eq!(run_to_sleep(&mut k, ext4_write(big, None, 48 * 4096)), None);
        let small = k.mm.create_file(2);
        assert_eq!(run_to_sleep(&mut k, ext4_write(small, None, 8192)), None);
        // A chunk of 16 pages: big's first 16, then small, then the pass ends with big on
        // b_more_io, which the next queue_io puts first.
        steps(&mut k, writeback_sb_inodes(16));
        assert_eq!((k.buf.pending_of(big), k.buf.pending_of(small)), (32, 0));
        assert_eq!(k.writeback.pwb().ioless.b_more_io, [big]);
        steps(&mut k, writeback_sb_inodes(16));
        assert_eq!(k.buf.pending_of(big), 16);
        assert_eq!(k.writeback.pwb().ioless.b_more_io, [big]);
    }
}
