//! ext4 of Linux 6.18 in its default mount (data=ordered, delayed allocation,
//! dioread_nolock: the default since 5.6 for 4 KiB blocks), its regular files cached in large
//! folios (since 6.16), over the page cache of [`crate::mm::pagecache`] and the buffer lists
//! of [`crate::fs::buffer`] (a 4 KiB block a buffer_head, a page).
//!
//! The functions followed, as they stand in v6.18 (the stored index's copies of these files
//! are older, so the names and loops are 6.18's as that tree has them, not an index id):
//! - write: mm/filemap.c `generic_perform_write` (per folio: `write_begin` with
//!   `fgf_set_order(len)`, the copy, `write_end`, `cond_resched()`,
//!   `balance_dirty_pages_ratelimited`); fs/ext4/inode.c `ext4_da_write_begin` ->
//!   `__filemap_get_folio(FGP_WRITEBEGIN)` and `ext4_block_write_begin` with
//!   `ext4_da_get_block_prep` per buffer (a delayed block: reserved, not allocated);
//!   `ext4_da_do_write_end` (no journal handle: i_disksize waits for writeback).
//!   `file_update_time` journals the inode (`ext4_dirty_inode`) when the coarse clock
//!   (multigrain timestamps, 6.13+) moved: once a tick.
//! - writeback: fs/ext4/inode.c `ext4_do_writepages`: per extent of at most
//!   `MAX_WRITEPAGES_EXTENT_LEN` (2048) blocks, a jbd2 handle, `mpage_prepare_extent_to_map`
//!   (`filemap_get_folios_tag` batches of 31; per folio `folio_lock`, then per buffer
//!   `mpage_process_folio_bufs` -> `mpage_add_bh_to_extent`; `cond_resched()` after a whole
//!   batch), `mpage_map_and_submit_extent` (`ext4_map_blocks` allocating the extent
//!   unwritten under dioread_nolock, then `mpage_map_and_submit_buffers` ->
//!   `mpage_process_folio` and `mpage_submit_folio` -> fs/ext4/page-io.c
//!   `ext4_bio_write_folio` per buffer, no rescheduling point), `ext4_io_submit` with the
//!   handle still held. The flusher's walk over the inodes is [`crate::fs::fs_writeback6`].
//! - truncate: mm/truncate.c `truncate_inode_pages_range` (`find_lock_entries` batches of
//!   31; per folio `truncate_cleanup_folio` -> `block_invalidate_folio` -> `discard_buffer`
//!   per buffer (`lock_buffer`), then `filemap_release_folio` -> `ext4_release_folio` ->
//!   `jbd2_journal_try_to_free_buffers` -> fs/buffer.c `try_to_free_buffers`, which holds
//!   the mapping's `i_private_lock` around `drop_buffers` of the folio's buffers;
//!   `delete_from_page_cache_batch`; `cond_resched()` per batch), then `ext4_truncate`
//!   freeing the extents (fs/ext4/extents.c `ext4_ext_remove_space`).
//!
//! Which writes ask the journal to order their data: `ext4_map_blocks` puts an inode on the
//! running transaction's list (`ext4_jbd2_inode_add_wait`: the writeback submits the data
//! itself, the commit only waits) only for blocks it allocates *written*; under
//! dioread_nolock the writeback allocates them unwritten (converted when the I/O is done), so
//! the model's ext4 writes put no inode there ([`Ext4::dioread_nolock`]).
//!
//! The walks count pages: each loop item is a 4 KiB block (a buffer_head), with the folio's
//! own work spread over its `1 << order` blocks, and the points a folio has (its lock, its
//! batch's `cond_resched()`) checked every `1 << order` or `31 << order` items: a loop that
//! starts on a folio boundary meets them where the kernel does.
//!
//! - I/O completion: fs/ext4/page-io.c `ext4_end_bio` (in the disk interrupt) finds the
//!   io_end unwritten and queues it (`ext4_add_complete_io`) on the inode's conversion list
//!   for the `ext4-rsv-conversion` workqueue's kworker, woken when the list was empty;
//!   `ext4_end_io_rsv_work` -> `ext4_do_flush_completed_IO` takes the whole list and, with
//!   no rescheduling point between them, runs `ext4_end_io_end` per io_end:
//!   `ext4_convert_unwritten_io_end_vec` (a reserved handle: the conversion never waits for
//!   a commit) and `ext4_release_io_end` -> `ext4_finish_bio`, per folio under the folio's
//!   `b_uptodate_lock` (`spin_lock_irqsave`; the model keeps interrupts on inside it) over
//!   its buffers, then `folio_end_writeback`.
//!
//! Left out: readahead's large folios (a read keeps the file's order); a rewrite is charged
//! as an append; a sync waits for the disk, not for the kworker's `folio_end_writeback`.

use crate::fs::ext3::{drop_buffers, journal_start, need_pages};
use crate::fs::flush::{chain, effect};
use crate::fs::fs_writeback::write_dirty_run;
use crate::fs::state::FsState;
use crate::kernel::catalog::Point;
use crate::kernel::lock::Lock;
use crate::kernel::path::{point, Chan, Ctx, LoopStep, Nested, Path, Step, Work};
use crate::kernel::state::Kthread;
use crate::mm::fs_ops::Handed;
use crate::mm::pagecache::{write_folio_order, FOLIO_BATCH};
use latlab_core::Nanos;
use smallvec::smallvec;
use std::collections::{BTreeMap, VecDeque};

/// `MAX_WRITEPAGES_EXTENT_LEN` (fs/ext4/inode.c): the blocks one writeback extent maps.
pub const MAX_WRITEPAGES_EXTENT_LEN: u64 = 2048;
/// `BIO_MAX_VECS`: bio_vecs a bio holds (a folio's blocks merge into one).
const BIO_MAX_VECS: u64 = 256;
/// Blocks an ext4 extent maps at most (`EXT_INIT_MAX_LEN`, 32768).
const EXT_MAX_LEN: u64 = 32_768;

/// The transaction id ext4's data pages carry on the buffer lists: they belong to no
/// transaction (jbd2 orders data by inode, [`crate::fs::jbd2`]).
pub use crate::fs::commit::NO_TXN;

/// ext4's state beyond the journal and the page cache.
#[derive(Debug)]
pub struct Ext4 {
    /// The `dioread_nolock` mount option (the default since 5.6 for 4 KiB blocks):
    /// writeback allocates unwritten extents, converted at I/O completion, and so puts no
    /// inode on the journal's ordered-data list.
    pub(crate) dioread_nolock: bool,
    /// Pages of each file whose blocks are allocated (the rest of its data is delayed).
    allocated: BTreeMap<u32, u64>,
    /// The coarse-clock tick of each file's last `file_update_time`.
    mtime_tick: BTreeMap<u32, u64>,
    /// Unwritten io_ends submitted, their I/O not done, in submission order.
    in_flight: VecDeque<IoEnd>,
    /// `i_rsv_conversion_list`: io_ends whose I/O is done, for the kworker.
    completed: VecDeque<IoEnd>,
}

/// An `ext4_io_end` of unwritten blocks: one writeback extent's I/O.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct IoEnd {
    file: u32,
    /// The sequence number past its last buffer (done when the disk is past it).
    hi: u64,
    blocks: u64,
    /// Blocks per folio of its file.
    folio_pages: u64,
}

impl Ext4 {
    /// ext4 as 6.18 mounts it by default.
    pub fn new() -> Self {
        Ext4 {
            dioread_nolock: true,
            allocated: BTreeMap::new(),
            mtime_tick: BTreeMap::new(),
            in_flight: VecDeque::new(),
            completed: VecDeque::new(),
        }
    }
    /// The kernel thread ext4 starts: its conversion workqueue's kworker.
    pub fn thread(&self) -> Kthread {
        Kthread::Ext4RsvConversion
    }
    /// The disk wrote every buffer below `done_hi`: `ext4_end_bio` of the io_ends that
    /// ends queues them for conversion. True when the list was empty (`queue_work`).
    pub fn io_done(&mut self, done_hi: u64) -> bool {
        let was_empty = self.completed.is_empty();
        let mut queued = false;
        while self.in_flight.front().is_some_and(|e| e.hi <= done_hi) {
            self.completed.extend(self.in_flight.pop_front());
            queued = true;
        }
        queued && was_empty
    }
    /// Completed io_ends wait for the kworker.
    pub fn conversions_pending(&self) -> bool {
        !self.completed.is_empty()
    }
    /// Pages of `file` with blocks allocated.
    pub fn allocated(&self, file: u32) -> u64 {
        self.allocated.get(&file).copied().unwrap_or(0)
    }
}

impl Default for Ext4 {
    fn default() -> Self {
        Self::new()
    }
}

/// The ext4 mounted (`k.ext4`), on a path only an ext4 kernel runs.
fn ext4(k: &mut FsState) -> &mut Ext4 {
    k.ext4.as_mut().expect("an ext4 path on an ext3 kernel")
}

/// `ext4_dirty_inode`: a one-credit handle journaling the in-core inode (no big kernel lock).
fn ext4_dirty_inode(k: &mut FsState, file: u32) -> Box<dyn Path<FsState>> {
    k.dcache.mark_inode_dirty(file);
    k.jbd.dirty_inode(file);
    crate::kernel::path::once("ext4_dirty_inode", k.c.dirty_inode)
}

/// `write(fd, buf, bytes)` appending to `file`, or (`at`) rewriting its pages from there.
pub struct Ext4Write {
    file: u32,
    at: Option<u64>,
    bytes: u64,
    left: u64,
    sub: Nested<FsState>,
    looping: bool,
    stamped: bool,
    /// The order of the folios it writes, from its size and where it starts.
    order: Option<u8>,
}

/// `write()` on ext4: append `bytes` to `file`, or rewrite from page `at`.
pub fn ext4_write(file: u32, at: Option<u64>, bytes: u64) -> Box<dyn Path<FsState>> {
    Box::new(Ext4Write {
        file,
        at,
        bytes,
        left: bytes.div_ceil(4096),
        sub: Nested::default(),
        looping: false,
        stamped: false,
        order: None,
    })
}

impl Ext4Write {
    /// `file_update_time` would change `i_mtime`: the coarse clock ticked since the last.
    fn mtime_changes(&self, k: &mut FsState, now: Nanos) -> bool {
        let tick = now / k.writeback.pwb().tick_ns;
        let ext4 = ext4(k);
        ext4.mtime_tick.get(&self.file) != Some(&tick) && {
            ext4.mtime_tick.insert(self.file, tick);
            true
        }
    }
}

impl Path<FsState> for Ext4Write {
    fn name(&self) -> &'static str {
        "sys_write"
    }
    fn next(&mut self, k: &mut FsState, cx: &Ctx) -> Step {
        loop {
            if let Some(s) = self.sub.next(k, cx) {
                return s;
            }
            let Some(f) = k.mm.files().get(&self.file) else {
                return Step::Done;
            };
            let (size, order) = (f.size, f.folio_order);
            if std::mem::take(&mut self.looping) {
                if let Some(p) = crate::mm::writeback::after_dirtying(k, cx) {
                    self.sub.start(p);
                    continue;
                }
            }
            if let Some(at) = self.at {
                self.left = self.left.min(size.saturating_sub(at));
            }
            if self.left == 0 {
                return Step::Done;
            }
            if need_pages(k, &mut self.sub, 1, true) {
                continue;
            }
            if !self.stamped {
                // file_update_time -> ext4_dirty_inode, in a handle of its own.
                if let Some(s) = journal_start(k) {
                    return s;
                }
                self.stamped = true;
                if self.mtime_changes(k, cx.now) {
                    self.sub.start(ext4_dirty_inode(k, self.file));
                    continue;
                }
            }
            let order = *self.order.get_or_insert_with(|| match self.at {
                Some(_) => order,
                // The folios this append creates: the order of its first one.
                None => write_folio_order(size, self.bytes, true),
            });
            if let Some(f) = k.mm.files_mut().get_mut(&self.file) {
                f.folio_order = order;
            }
            let per_folio = 1u64 << order;
            // Whole folios: the ratelimit (balance_dirty_pages_ratelimited) is asked after
            // each.
            let room = k.mm.free().saturating_sub(k.mm.pages_min()).max(1);
            let n = self.left.min(room).min(
                crate::mm::writeback::headroom(k, cx.pid)
                    .max(1)
                    .next_multiple_of(per_folio),
            );
            self.looping = true;
            // Per block: its buffer_head and delayed block, the copy, the folio's share.
            let per = k.c.ext4_write_bh + k.c.page_copy + k.c.ext4_write_folio / per_folio;
            return LoopStep::plain(
                "generic_perform_write",
                n,
                per,
                smallvec![
                    point(Point::GenericPerformWrite, per_folio),
                    point(Point::FolioAllocBuffers, 1)
                ],
            );
        }
    }
    fn advanced(&mut self, k: &mut FsState, cx: &Ctx, done: u64) {
        if self.sub.advanced(k, cx, done) {
            return;
        }
        let Some(f) = k.mm.files_mut().get_mut(&self.file) else {
            return;
        };
        self.left -= done.min(self.left);
        let (from, done) = match self.at.as_mut() {
            Some(at) => {
                let done = done.min(f.size.saturating_sub(*at));
                let from = *at;
                *at += done;
                (from, done)
            }
            None => {
                let from = f.size;
                f.size += done;
                (from, done)
            }
        };
        let block = f.block + from;
        k.mm.write_pages(self.file, from, done);
        // A rewritten page still dirty dirties no new buffer; an append's pages are new.
        let rewrite = self
            .at
            .map(|_| done - done.min(k.buf.dirty_in(self.file, block, block + done)));
        k.buf.dirty(self.file, NO_TXN, rewrite.unwrap_or(done), block, cx.now);
        self.looping &= crate::mm::writeback::dirtied(k, cx.pid, done, rewrite);
    }
}

/// Which of a file's dirty pages an `ext4_do_writepages` pass writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// The flusher's `WB_SYNC_NONE` pass: up to the caller's `wbc.nr_to_write`.
    Background,
    /// An integrity sync (`WB_SYNC_ALL`): all of them.
    Sync,
    /// jbd2's `ext4_journal_submit_inode_data_buffers` (`can_map = 0`): only pages whose
    /// blocks are already allocated; delayed ones stay dirty.
    MappedOnly,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    /// Between extents: look up the next one.
    Idle,
    /// `mpage_prepare_extent_to_map`, blocks of the extent still to walk.
    Prepare(u64),
    /// `ext4_map_blocks` of the extent.
    Map,
    /// `mpage_map_and_submit_buffers`, blocks still to walk.
    Submit(u64),
    /// `ext4_io_submit`: blocks still to hand to the block layer.
    Hand(u64),
    Done,
}

/// `ext4_do_writepages` of one inode (under I_SYNC, the caller's `wbc` in
/// `k.writeback.pwb().wbc` for [`Mode::Background`]).
pub struct Ext4Writepages {
    file: u32,
    mode: Mode,
    stage: Stage,
    extent: u64,
    /// The extent's handle is held across a sleep for a request.
    handle: bool,
    /// The sequence number past the extent's last buffer handed to the block layer.
    hand_hi: u64,
}

/// `ext4_writepages` of `file` in `mode`.
pub fn ext4_writepages(file: u32, mode: Mode) -> Box<dyn Path<FsState>> {
    Box::new(Ext4Writepages {
        file,
        mode,
        stage: Stage::Idle,
        extent: 0,
        handle: false,
        hand_hi: 0,
    })
}

impl Ext4Writepages {
    /// The next extent's blocks, taken off the caller's budget; 0 when done.
    fn next_extent(&self, k: &mut FsState) -> u64 {
        let pending = k.buf.pending_of(self.file);
        let n = match self.mode {
            Mode::Sync => pending,
            Mode::Background => pending.min(k.writeback.pwb().wbc.nr_to_write),
            Mode::MappedOnly => {
                let allocated = k.ext4.as_ref().map_or(0, |e| e.allocated(self.file));
                let first = k.mm.files().get(&self.file).map_or(0, |f| f.block);
                k.buf.dirty_in(self.file, first, first + allocated)
            }
        }
        .min(MAX_WRITEPAGES_EXTENT_LEN);
        if self.mode == Mode::Background {
            let wbc = &mut k.writeback.pwb_mut().wbc;
            wbc.nr_to_write -= n.min(wbc.nr_to_write);
        }
        n
    }

    /// The folio's and its blocks' work per block, half of it in each of the two walks
    /// (each touches every folio and buffer_head once).
    fn per_block(&self, k: &FsState) -> (Nanos, u64) {
        let per_folio = k.mm.files().get(&self.file).map_or(1, |f| f.folio_pages());
        ((k.c.ext4_wb_bh + k.c.ext4_wb_folio / per_folio) / 2, per_folio)
    }
}

impl Path<FsState> for Ext4Writepages {
    fn name(&self) -> &'static str {
        "ext4_writepages"
    }
    fn next(&mut self, k: &mut FsState, cx: &Ctx) -> Step {
        loop {
            match self.stage {
                Stage::Idle => {
                    // ext4_journal_start_with_reserve: a T_LOCKED commit makes it wait.
                    if k.jbd.locked {
                        return Step::Block(Chan::TxnLocked);
                    }
                    let n = self.next_extent(k);
                    if n == 0 {
                        self.stage = Stage::Done;
                        continue;
                    }
                    self.extent = n;
                    self.stage = Stage::Prepare(n);
                }
                Stage::Prepare(0) => self.stage = Stage::Map,
                Stage::Prepare(left) => {
                    let (per, b) = self.per_block(k);
                    return LoopStep::plain(
                        "mpage_prepare_extent_to_map",
                        left,
                        per,
                        smallvec![
                            point(Point::MpagePrepareExtentToMap, FOLIO_BATCH * b),
                            point(Point::FolioLock, b)
                        ],
                    );
                }
                Stage::Map => {
                    self.stage = Stage::Submit(self.extent);
                    if self.mode == Mode::MappedOnly {
                        // can_map = 0: the blocks are mapped already.
                        continue;
                    }
                    // The extent's blocks are allocated (unwritten under dioread_nolock):
                    // the inode's size, a share of a block bitmap (32768 blocks), the group
                    // descriptor and the extent tree go into the running transaction.
                    let (file, n) = (self.file, self.extent);
                    let e = ext4(k);
                    *e.allocated.entry(file).or_default() += n;
                    let ordered = !e.dioread_nolock;
                    if ordered {
                        // ext4_jbd2_inode_add_wait (EXT4_GET_BLOCKS_IO_SUBMIT).
                        k.jbd.add_inode(file, false);
                    }
                    k.jbd.dirty_inode(file);
                    k.jbd.add_meta32(1 + n * 32 / EXT_MAX_LEN);
                    return Work::plain("ext4_map_blocks", k.c.ext4_map_extent);
                }
                Stage::Submit(0) => self.stage = Stage::Hand(self.extent),
                Stage::Submit(left) => {
                    let (per, b) = self.per_block(k);
                    return LoopStep::plain(
                        "mpage_map_and_submit_buffers",
                        left,
                        per,
                        smallvec![point(Point::BioAlloc, BIO_MAX_VECS * b)],
                    );
                }
                Stage::Hand(0) => {
                    if std::mem::take(&mut self.handle) {
                        crate::fs::ext3::journal_stop_slept(k);
                    }
                    self.stage = Stage::Idle;
                    // The extent's io_end: unwritten (to convert at completion) when the
                    // writeback allocated it under dioread_nolock.
                    let b = self.per_block(k).1;
                    let (file, blocks, hi) = (self.file, self.extent, self.hand_hi);
                    let e = ext4(k);
                    if self.mode != Mode::MappedOnly && e.dioread_nolock && hi > 0 {
                        e.in_flight.push_back(IoEnd {
                            file,
                            hi,
                            blocks,
                            folio_pages: b,
                        });
                    }
                    self.hand_hi = 0;
                }
                Stage::Hand(left) => {
                    let Some(block) = k.buf.first_dirty_block(self.file) else {
                        self.stage = Stage::Hand(0);
                        continue;
                    };
                    match write_dirty_run(k, cx, self.file, block, left) {
                        Handed::Sleep(chan) => {
                            // The bio goes to the block layer with the extent's handle held.
                            if !std::mem::replace(&mut self.handle, true) {
                                k.jbd.handle_sleeps();
                            }
                            return Step::Block(chan);
                        }
                        Handed::Wrote(m) => {
                            self.hand_hi = k.buf.next_seq();
                            self.stage = Stage::Hand(left - m.min(left));
                        }
                        Handed::Nothing => self.stage = Stage::Hand(0),
                    }
                }
                Stage::Done => return Step::Done,
            }
        }
    }
    fn advanced(&mut self, _k: &mut FsState, _cx: &Ctx, done: u64) {
        match &mut self.stage {
            Stage::Prepare(left) | Stage::Submit(left) => *left -= done.min(*left),
            _ => {}
        }
    }
}

/// `ext4_end_io_rsv_work`: the kworker converts and ends every io_end queued so far.
pub fn ext4_end_io_rsv_work(k: &mut FsState) -> Box<dyn Path<FsState>> {
    let ends = std::mem::take(&mut ext4(k).completed);
    Box::new(EndIoWork { ends, finish: None })
}

struct EndIoWork {
    ends: VecDeque<IoEnd>,
    /// Folios of the front io_end still to finish (None: its conversion is next).
    finish: Option<u64>,
}

impl Path<FsState> for EndIoWork {
    fn name(&self) -> &'static str {
        "ext4_end_io_rsv_work"
    }
    fn next(&mut self, k: &mut FsState, _cx: &Ctx) -> Step {
        loop {
            let Some(&e) = self.ends.front() else {
                return Step::Done;
            };
            match self.finish {
                None => {
                    // ext4_convert_unwritten_io_end_vec: its handle's allocation may sleep.
                    return LoopStep::plain(
                        "ext4_convert_unwritten_io_end_vec",
                        1,
                        k.c.ext4_convert_extent,
                        smallvec![point(Point::Jbd2JournalStart, 1)],
                    );
                }
                Some(0) => {
                    self.ends.pop_front();
                    self.finish = None;
                }
                Some(folios) => {
                    // ext4_finish_bio: each folio's buffers under its b_uptodate_lock, then
                    // folio_end_writeback; no rescheduling point.
                    return Step::Loop(LoopStep {
                        func: "ext4_finish_bio",
                        items: folios,
                        per_item: e.folio_pages * k.c.end_io_bh + k.c.end_io_folio,
                        lock: Some(Lock::BUptodate),
                        points: smallvec![],
                        unlock_each: true,
                        hold: false,
                    });
                }
            }
        }
    }
    fn advanced(&mut self, k: &mut FsState, _cx: &Ctx, done: u64) {
        match (self.finish.as_mut(), self.ends.front()) {
            (Some(f), _) => *f -= done.min(*f),
            (None, Some(&e)) if done > 0 => {
                // The extent converted: its inode and extent block in the running
                // transaction; its folios' writeback to end.
                if k.mm.files().contains_key(&e.file) {
                    k.jbd.dirty_inode(e.file);
                }
                k.jbd.add_meta32(1);
                self.finish = Some(e.blocks.div_ceil(e.folio_pages));
            }
            (None, _) => {}
        }
    }
}

/// `sync()` / `fsync()` on ext4: every dirty inode's `ext4_writepages(WB_SYNC_ALL)`, then a
/// wait for all the data written, then the journal's commit asked for (`sync_fs` ->
/// `jbd2_journal_start_commit`; the model's sync, as 2.4's, does not wait for it).
pub fn ext4_sync(k: &FsState) -> Box<dyn Path<FsState>> {
    let mut parts: Vec<Box<dyn Path<FsState>>> = k
        .buf
        .dirty_files()
        .into_iter()
        .map(|(f, _)| ext4_writepages(f, Mode::Sync))
        .collect();
    parts.push(Box::new(WaitWritten { upto: None }));
    let kjournald = k.kthreads.kjournald();
    parts.push(effect(move |k| {
        k.jbd.commit_requested = true;
        k.wake_kthread(kjournald);
    }));
    chain("ext4_sync_file", parts)
}

/// `filemap_fdatawait`: wait until everything submitted before it began is written.
struct WaitWritten {
    upto: Option<u64>,
}

impl Path<FsState> for WaitWritten {
    fn name(&self) -> &'static str {
        "filemap_fdatawait"
    }
    fn next(&mut self, k: &mut FsState, cx: &Ctx) -> Step {
        let upto = *self.upto.get_or_insert(k.buf.next_seq());
        let at = k.buf.done_hi();
        if at >= upto {
            return Step::Done;
        }
        match k.disk.req_of_seq(at) {
            Some(id) => Step::Block(Chan::Io(id)),
            // Its writer still waits for a request: wait a tick and look again.
            None => Step::Block(wait_a_tick(k, cx)),
        }
    }
}

/// Sleep a tick (`io_schedule_timeout`), for a wait on data not yet queued.
fn wait_a_tick(k: &mut FsState, cx: &Ctx) -> Chan {
    let token = k.writeback.pwb_mut().token();
    let at = k.writeback.pwb().timer_expiry(cx.now, 1);
    let chan = Chan::Throttle(token);
    k.out.push(crate::kernel::state::KReq::WakeAt { at, chan });
    chan
}

/// unlink() of a file whose last link goes, or ftruncate() to `to` pages, on ext4.
pub struct Ext4Truncate {
    file: u32,
    to: u64,
    unlink: bool,
    stage: TStage,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TStage {
    Start,
    /// A batch of `find_lock_entries`: blocks still to clean, and its folios.
    Clean {
        left: u64,
        folios: u64,
    },
    /// The batch's folios still to free of their buffers (`try_to_free_buffers`).
    Release {
        left: u64,
        folios: u64,
    },
    Blocks,
    Evict,
    Done,
}

/// `unlink()` of `file` on ext4.
pub fn ext4_unlink(file: u32) -> Box<dyn Path<FsState>> {
    Box::new(Ext4Truncate {
        file,
        to: 0,
        unlink: true,
        stage: TStage::Start,
    })
}

/// `ftruncate()` of `file` to `to` pages on ext4 (nothing past its end).
pub fn ext4_ftruncate(file: u32, to: u64) -> Box<dyn Path<FsState>> {
    Box::new(Ext4Truncate {
        file,
        to,
        unlink: false,
        stage: TStage::Start,
    })
}

impl Ext4Truncate {
    /// The next batch of up to 31 folios past the new end, or the extents' turn.
    fn next_batch(&mut self, k: &FsState) {
        let past = k.mm.cached_from(self.file, self.to);
        let b = k.mm.files().get(&self.file).map_or(1, |f| f.folio_pages());
        self.stage = if past == 0 {
            TStage::Blocks
        } else {
            let left = past.min(FOLIO_BATCH * b);
            TStage::Clean {
                left,
                folios: left.div_ceil(b),
            }
        };
    }
}

impl Path<FsState> for Ext4Truncate {
    fn name(&self) -> &'static str {
        if self.unlink {
            "sys_unlink"
        } else {
            "sys_ftruncate"
        }
    }
    fn next(&mut self, k: &mut FsState, _cx: &Ctx) -> Step {
        loop {
            let Some(f) = k.mm.files().get(&self.file) else {
                return Step::Done;
            };
            let (size, b) = (f.size, f.folio_pages());
            match self.stage {
                TStage::Start => {
                    if let Some(s) = journal_start(k) {
                        return s;
                    }
                    self.next_batch(k);
                    return match self.unlink {
                        true => Work::plain("ext4_unlink", k.c.unlink),
                        false => Work::plain("ext4_setattr", k.c.setattr),
                    };
                }
                TStage::Clean { left: 0, folios } => {
                    self.stage = TStage::Release { left: folios, folios };
                }
                TStage::Clean { left, .. } => {
                    // truncate_cleanup_folio -> block_invalidate_folio: per buffer
                    // discard_buffer (lock_buffer), the folio's own work spread over it.
                    return LoopStep::plain(
                        "truncate_cleanup_folio",
                        left,
                        k.c.trunc_bh + k.c.trunc_folio / b,
                        smallvec![point(Point::LockBuffer, 1)],
                    );
                }
                TStage::Release { left: 0, .. } => self.next_batch(k),
                TStage::Release { left, folios } => {
                    // try_to_free_buffers: drop_buffers of each folio under i_private_lock,
                    // taken and dropped per folio. The kernel cleans and releases folio by
                    // folio; the model cleans the batch first, which leaves each stretch as
                    // long: between two folios' drop_buffers comes the next one's
                    // discard_buffer and its lock_buffer (the point per item), and the
                    // batch ends in cond_resched().
                    return Step::Loop(LoopStep {
                        func: "try_to_free_buffers",
                        items: left,
                        per_item: b * k.c.drop_bh,
                        lock: Some(Lock::IPrivate),
                        points: smallvec![
                            point(Point::LockBuffer, 1),
                            point(Point::TruncateInodePagesRange, left.min(folios))
                        ],
                        unlock_each: true,
                        hold: false,
                    });
                }
                TStage::Blocks => {
                    self.stage = TStage::Evict;
                    let allocated = k.ext4.as_ref().map_or(0, |e| e.allocated(self.file));
                    let freed = allocated.saturating_sub(self.to);
                    if size <= self.to || freed == 0 {
                        continue;
                    }
                    // ext4_truncate: the extents past the new end, each freed whole.
                    let extents = freed.div_ceil(EXT_MAX_LEN);
                    let file = self.file;
                    let to = self.to;
                    ext4(k).allocated.insert(file, allocated.min(to));
                    k.jbd.dirty_inode(file);
                    k.jbd.add_meta32(32 * extents);
                    return Work::plain("ext4_truncate", extents * k.c.ext4_free_extent);
                }
                TStage::Evict => {
                    self.stage = TStage::Done;
                    if !self.unlink {
                        if let Some(f) = k.mm.files_mut().get_mut(&self.file) {
                            f.size = f.size.min(self.to);
                        }
                        k.jbd.dirty_inode(self.file);
                        return Step::Done;
                    }
                    // ext4_evict_inode: what truncation left (nothing, unless reclaim raced
                    // it), the inode freed; the inode and directory blocks journaled.
                    let cached = k.mm.cached_from(self.file, 0);
                    drop_buffers(k, self.file, u64::MAX, cached);
                    k.mm.delete_file(self.file);
                    k.dcache.delete_file(self.file);
                    let e = ext4(k);
                    e.allocated.remove(&self.file);
                    e.mtime_tick.remove(&self.file);
                    k.jbd.dirty_inode(self.file);
                    k.jbd.add_meta32(1);
                    return LoopStep::plain(
                        "dentry_iput",
                        1,
                        k.c.prune_dentry,
                        smallvec![point(Point::DentryIput, 1)],
                    );
                }
                TStage::Done => return Step::Done,
            }
        }
    }
    fn advanced(&mut self, k: &mut FsState, _cx: &Ctx, done: u64) {
        match &mut self.stage {
            TStage::Clean { left, .. } => *left -= done.min(*left),
            TStage::Release { left, .. } => {
                *left -= done.min(*left);
                // delete_from_page_cache_batch: the released folios leave the cache.
                let b = k.mm.files().get(&self.file).map_or(1, |f| f.folio_pages());
                let cached = k.mm.cached_from(self.file, 0);
                let n = (done * b).min(k.mm.cached_from(self.file, self.to));
                drop_buffers(k, self.file, n, cached);
                k.mm.drop_pages_from(self.file, self.to, n);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::cpu::tests::{machine, run_to_sleep};
    use crate::kernel::path::LoopStep;
    use crate::kernel::preempt::{atomic, loop_point, LoopChance, Resched};
    use crate::variant::{Fs, Journal, PreemptModel, Variant};

    /// A 6.18 kernel under preemption model `p` ([`crate::variant::tests::variant_618`]: EEVDF,
    /// IO-less writeback, blk-mq; here at HZ 250, ext4 over jbd2), with the 6.18 points this
    /// module's walks check.
    pub(crate) fn variant618(p: PreemptModel) -> Variant {
        let mut v = crate::variant::tests::variant_618();
        v.preempt = p;
        for pt in [
            Point::GenericPerformWrite,
            Point::MpagePrepareExtentToMap,
            Point::TruncateInodePagesRange,
            Point::WritebackSbInodes,
        ] {
            v.points.insert(pt);
        }
        v.hz = 250;
        (v.journal, v.fs) = (Journal::Jbd2, Fs::Ext4);
        v.validate().expect("a valid 6.18 variant");
        v
    }

    /// The state of a 6.18 kernel assembled from [`variant618`].
    pub(crate) fn kstate618() -> FsState {
        let mut m = machine();
        // Requests large enough that no writer here waits for a tag (no time passes in the
        // tests).
        (m.disk.queue_depth, m.disk.max_request_kib) = (128, 1024);
        let swap = latlab_swap::by_name("cluster-6.x", m.swap_slots().max(latlab_swap::MIN_SLOTS)).unwrap();
        FsState::assembled(
            &m,
            crate::assemble::subsystems(&variant618(PreemptModel::None), &m, swap),
        )
    }

    /// A file of `pages` written by `bytes`-sized writes (all dirty, none written back).
    fn written(k: &mut FsState, pages: u64, bytes: u64) -> u32 {
        let f = k.mm.create_file(pages);
        for _ in 0..pages * 4096 / bytes {
            assert_eq!(run_to_sleep(k, ext4_write(f, None, bytes)), None);
        }
        f
    }

    /// The loop steps `p` runs to its end (no time passing), by function.
    fn loops(k: &mut FsState, mut p: Box<dyn Path<FsState>>) -> Vec<LoopStep> {
        let cx = Ctx { now: 0, pid: 1 };
        let mut out = Vec::new();
        for _ in 0..100_000 {
            match p.next(k, &cx) {
                Step::Loop(l) => {
                    p.advanced(k, &cx, l.items);
                    out.push(l);
                }
                Step::Work(_) => {}
                Step::Block(c) => panic!("{} slept on {c:?}", p.name()),
                Step::Done => return out,
            }
        }
        panic!("{} did not finish", p.name())
    }

    fn chance(l: &LoopStep, p: PreemptModel) -> Option<(Resched, u64)> {
        loop_point(l, &variant618(p), false).map(|LoopChance { at, every }| (at, every))
    }

    #[test]
    fn a_writes_folios_take_the_order_of_its_size() {
        let mut k = kstate618();
        let big = written(&mut k, 512, 1 << 20);
        let small = written(&mut k, 8, 4096);
        assert_eq!(k.mm.files()[&big].folio_order, 8, "1 MiB writes: order-8 folios");
        assert_eq!(k.mm.files()[&small].folio_order, 0, "4 KiB writes: order 0");
        // Delayed allocation: nothing is allocated or journaled as data at write time.
        assert_eq!(k.ext4.as_ref().unwrap().allocated(big), 0);
        assert_eq!((k.buf.pending_of(big), k.jbd.committing_tid()), (512, None));
        // The write walk checks cond_resched() per folio, might_sleep() per buffer_head.
        let f = k.mm.create_file(256);
        let w = loops(&mut k, ext4_write(f, None, 1 << 20));
        let w: Vec<_> = w.iter().filter(|l| l.func == "generic_perform_write").collect();
        assert_eq!(
            chance(w[0], PreemptModel::None),
            Some((Resched::Point(Point::GenericPerformWrite), 256))
        );
        assert_eq!(
            chance(w[0], PreemptModel::Voluntary),
            Some((Resched::Point(Point::FolioAllocBuffers), 1))
        );
    }

    #[test]
    fn a_large_folio_files_writeback_walk_reschedules_per_batch_under_none_per_folio_under_voluntary() {
        let mut k = kstate618();
        let big = written(&mut k, 4096, 1 << 20);
        let walks = loops(&mut k, ext4_writepages(big, Mode::Sync));
        let prepare: Vec<&LoopStep> = walks
            .iter()
            .filter(|l| l.func == "mpage_prepare_extent_to_map")
            .collect();
        // 16 MiB in extents of 2048 blocks: 8 folios each, fewer than a batch of 31.
        assert_eq!(prepare.iter().map(|l| l.items).collect::<Vec<_>>(), [2048, 2048]);
        let l = prepare[0];
        assert_eq!(
            chance(l, PreemptModel::None),
            Some((Resched::Point(Point::MpagePrepareExtentToMap), 31 * 256)),
            "cond_resched() once per 31 folios: never inside an extent of 8"
        );
        assert_eq!(
            chance(l, PreemptModel::Voluntary),
            Some((Resched::Point(Point::FolioLock), 256)),
            "folio_lock's might_sleep() per folio"
        );
        assert_eq!(chance(l, PreemptModel::Full), Some((Resched::Preempt, 1)));
        for p in [PreemptModel::None, PreemptModel::Voluntary, PreemptModel::Full] {
            let v = variant618(p);
            assert!(
                walks.iter().all(|l| !atomic(&v, l.lock, l.hold, false)),
                "no spinlock held: {p:?}"
            );
        }
        // The submit walk has no cond_resched(); a new bio's might_sleep() every 256 folios.
        let submit = walks.iter().find(|l| l.func == "mpage_map_and_submit_buffers").unwrap();
        assert_eq!(chance(submit, PreemptModel::None), None);
        assert_eq!(
            chance(submit, PreemptModel::Voluntary),
            Some((Resched::Point(Point::BioAlloc), 256 * 256))
        );
        // The whole file went to the disk, its blocks allocated (unwritten: no ordered inode).
        assert_eq!(k.buf.pending_of(big), 0);
        assert_eq!(k.ext4.as_ref().unwrap().allocated(big), 4096);
        assert!(k.jbd.running.jinodes.is_empty());
        // A file of 4 KiB folios: the batch of 31 is met inside an extent.
        let small = written(&mut k, 2048, 4096);
        let walks = loops(&mut k, ext4_writepages(small, Mode::Sync));
        let l = walks.iter().find(|l| l.func == "mpage_prepare_extent_to_map").unwrap();
        assert_eq!(
            chance(l, PreemptModel::None),
            Some((Resched::Point(Point::MpagePrepareExtentToMap), 31))
        );
        assert_eq!(
            chance(l, PreemptModel::Voluntary),
            Some((Resched::Point(Point::FolioLock), 1))
        );
    }

    #[test]
    fn unwritten_extents_are_converted_and_ended_by_the_kworker_folio_by_folio_under_b_uptodate_lock() {
        let mut k = kstate618();
        let f = written(&mut k, 4096, 1 << 20);
        loops(&mut k, ext4_writepages(f, Mode::Sync));
        let hi = k.buf.next_seq();
        let e = k.ext4.as_mut().unwrap();
        assert!(!e.conversions_pending(), "nothing is done before the disk says so");
        // ext4_end_bio queues both extents' io_ends; only the first queueing wakes the worker.
        assert!(e.io_done(hi));
        assert!(!e.io_done(hi));
        let work = ext4_end_io_rsv_work(&mut k);
        let steps = loops(&mut k, work);
        let funcs: Vec<(&str, u64)> = steps.iter().map(|l| (l.func, l.items)).collect();
        assert_eq!(
            funcs,
            [
                ("ext4_convert_unwritten_io_end_vec", 1),
                ("ext4_finish_bio", 8),
                ("ext4_convert_unwritten_io_end_vec", 1),
                ("ext4_finish_bio", 8)
            ]
        );
        assert!(!k.ext4.as_ref().unwrap().conversions_pending());
        let (convert, finish) = (&steps[0], &steps[1]);
        // none: no point in the whole run; voluntary: the next handle's allocation;
        // full: each folio's spin_unlock.
        assert_eq!(chance(convert, PreemptModel::None), None);
        assert_eq!(chance(finish, PreemptModel::None), None);
        assert_eq!(
            chance(convert, PreemptModel::Voluntary),
            Some((Resched::Point(Point::Jbd2JournalStart), 1))
        );
        assert_eq!(
            chance(finish, PreemptModel::Full),
            Some((Resched::Unlock(Lock::BUptodate), 1))
        );
        assert_eq!(finish.per_item, 256 * k.c.end_io_bh + k.c.end_io_folio);
    }

    #[test]
    fn a_truncate_holds_i_private_lock_only_for_each_folios_drop_buffers() {
        let mut k = kstate618();
        // 33 dirty folios of 2 MiB (a 2 MiB writer's file, set up directly).
        let n = 33 * 512;
        let f = k.mm.create_file(n);
        let block = {
            let rec = k.mm.files_mut().get_mut(&f).unwrap();
            (rec.size, rec.folio_order) = (n, 9);
            rec.block
        };
        k.mm.write_pages(f, 0, n);
        k.buf.dirty(f, NO_TXN, n, block, 0);
        let walks = loops(&mut k, ext4_unlink(f));
        assert!(!k.mm.files().contains_key(&f));
        assert_eq!(k.buf.pending_of(f), 0);
        let clean: Vec<&LoopStep> = walks.iter().filter(|l| l.func == "truncate_cleanup_folio").collect();
        let release: Vec<&LoopStep> = walks.iter().filter(|l| l.func == "try_to_free_buffers").collect();
        // Batches of 31 and 2 folios.
        assert_eq!(release.iter().map(|l| l.items).collect::<Vec<_>>(), [31, 2]);
        assert_eq!(clean[0].items, 31 * 512);
        for p in [PreemptModel::None, PreemptModel::Voluntary, PreemptModel::Full] {
            let v = variant618(p);
            assert!(!atomic(&v, clean[0].lock, clean[0].hold, false), "{p:?}");
            assert!(atomic(&v, release[0].lock, release[0].hold, false), "{p:?}");
        }
        // none: cond_resched() after the batch; voluntary: lock_buffer per buffer and
        // between folios; full: preempted at each folio's spin_unlock.
        assert_eq!(
            chance(release[0], PreemptModel::None),
            Some((Resched::Point(Point::TruncateInodePagesRange), 31))
        );
        assert_eq!(chance(clean[0], PreemptModel::None), None);
        assert_eq!(
            chance(clean[0], PreemptModel::Voluntary),
            Some((Resched::Point(Point::LockBuffer), 1))
        );
        assert_eq!(
            chance(release[0], PreemptModel::Voluntary),
            Some((Resched::Point(Point::LockBuffer), 1))
        );
        assert_eq!(chance(clean[0], PreemptModel::Full), Some((Resched::Preempt, 1)));
        assert_eq!(
            chance(release[0], PreemptModel::Full),
            Some((Resched::Unlock(Lock::IPrivate), 1))
        );
        // Under PREEMPT_RT i_private_lock is a sleeping lock.
        let mut rt = variant618(PreemptModel::Full);
        rt.hardirq_threads = true;
        rt.locks = crate::variant::LockFlavour::Sleeping;
        assert!(!atomic(&rt, release[0].lock, release[0].hold, false));
    }
}
