//! File system calls on ext3 (ordered data, 4 KiB blocks) over the 2.4 page cache
//! (mm/filemap.c `generic_file_write`, `do_generic_file_read`, `truncate_inode_pages`;
//! fs/ext3/inode.c `ext3_delete_inode` -> `ext3_truncate` under `lock_kernel()`; fs/namei.c).
//! Under the 2.6 kernels an append allocates its blocks group by group and reads a new
//! group's block bitmap in the writer ([`crate::fs::ext3_balloc`]), pays 2.6.17's per-block
//! allocation and inode journaling ([`append_cost26`]), and `write()` journals the inode's
//! mtime once a second, not on every call.

use crate::dev::disk::Dir;
use crate::fs::ext3_balloc::Alloc;
use crate::fs::flush::{chain, disk_io};
use crate::fs::state::FsState;
use crate::kernel::catalog::{Costs, Point};
use crate::kernel::lock::Lock;
use crate::kernel::path::{once, point, under_bkl, Chan, Ctx, LoopStep, Nested, Path, Script, Step, Work};
use crate::mm::FileRec;
use latlab_core::Nanos;
use smallvec::smallvec;

/// Pages per readahead request (2.4 `vm_max_readahead` 31 pages, rounded to 32).
const READAHEAD: u64 = 32;
/// Block pointers per indirect block (4 KiB / 4 bytes).
const PTRS_PER_BLOCK: u64 = 1024;

/// Get `n` free pages for the page cache, reclaiming first if the zone is low; `writer`: a
/// buffered write's allocation (`current->backing_dev_info` set, 2.6 mm/filemap.c).
pub(crate) fn need_pages(k: &mut FsState, sub: &mut Nested<FsState>, n: u64, writer: bool) -> bool {
    if k.mm.low() {
        let pid = k.kthreads.kswapd();
        k.wake_kthread(pid);
    }
    if !k.mm.can_alloc(n) {
        sub.start(k.reclaim.try_to_free_pages(writer));
        return true;
    }
    false
}

/// `ext3_journal_start` -> `start_this_handle`: with the running transaction full, the
/// caller asks kjournald to commit it and sleeps until the commit has begun.
pub(crate) fn journal_start(k: &mut FsState) -> Option<Step> {
    let pid = k.kthreads.kjournald();
    if pid == 0 || !k.jbd.handle_must_wait() {
        return None;
    }
    k.wake_kthread(pid);
    Some(Step::Block(Chan::TxnLocked))
}

/// `journal_stop` of a handle held open across a sleep ([`crate::fs::jbd::Journal::updates`]):
/// the last one a `T_LOCKED` commit waited for wakes kjournald (`j_wait_updates`).
pub(crate) fn journal_stop_slept(k: &mut FsState) {
    if k.jbd.handle_stopped() {
        k.wake(Chan::TxnUpdates);
    }
}

/// `mark_inode_dirty_sync(inode)` of an atime or mtime update on ext3: `__mark_inode_dirty`
/// calls `ext3_dirty_inode` (2.4.18 fs/ext3/inode.c) whether or not the inode is already
/// dirty, which under `lock_kernel()` journals the in-core inode into its inode-table block
/// (reached through bread(), a buffer-cache hit: mini-ll's `bread` point) in a one-credit
/// handle; the inode joins `s_dirty` for kupdated's `sync_unlocked_inodes`.
fn ext3_dirty_inode(k: &mut FsState, file: u32) -> Box<dyn Path<FsState>> {
    k.dcache.mark_inode_dirty(file);
    k.jbd.dirty_inode(file);
    let step = LoopStep::plain(
        "ext3_dirty_inode",
        1,
        k.c.dirty_inode,
        smallvec![point(Point::Bread, 1)],
    );
    under_bkl(Box::new(Script {
        name: "ext3_dirty_inode",
        steps: smallvec![step],
    }))
}

/// The filesystem's state beyond its journal and buffers: its block groups, and what the
/// generation's ext3 does that another's does not, as [`crate::assemble`] sets it.
#[derive(Default)]
pub struct Ext3 {
    /// ext3's block groups (2.6 kernels' allocation: [`crate::fs::ext3_balloc`]).
    pub(super) balloc: crate::fs::ext3_balloc::Balloc,
    /// 2.6.16's `file_update_time`: a write journals the inode's mtime once a second
    /// (`mtime_changes`); 2.4's `generic_file_write` on every call.
    pub(super) coarse_mtime: bool,
    /// 2.6's append allocates through the block groups ([`crate::fs::ext3_balloc`]) and
    /// pays the counted allocation path per page ([`append_cost26`]).
    pub(super) block_groups: bool,
}

impl Ext3 {
    /// 2.4's ext3, or (`gen26`) the 2.6 kernels': coarse mtime, appends through the block
    /// groups.
    pub fn new(gen26: bool) -> Self {
        Ext3 {
            coarse_mtime: gen26,
            block_groups: gen26,
            ..Ext3::default()
        }
    }
    /// 2.6's appends allocate through the block groups.
    pub fn block_groups(&self) -> bool {
        self.block_groups
    }
    /// 2.6's `file_update_time`: the mtime journalled at most once a second.
    pub fn coarse_mtime(&self) -> bool {
        self.coarse_mtime
    }
    /// Block-group bitmaps read by appends entering a group not touched since mount.
    pub fn bitmap_reads(&self) -> u64 {
        self.balloc.bitmap_reads
    }
}

/// Whether this `write()`'s mtime update journals the inode. 2.4's `generic_file_write`
/// sets `i_mtime = CURRENT_TIME` and calls `mark_inode_dirty_sync` on every call; 2.6.17's
/// `file_update_time` (fs/inode.c, 2.6.16) only when `current_fs_time` differs from
/// `i_mtime`, and ext3 keeps `alloc_super`'s `s_time_gran` of a second: once a second.
fn mtime_changes(k: &mut FsState, file: u32, now: u64) -> bool {
    if !k.ext3.coarse_mtime {
        return true;
    }
    let now_s = current_time(now);
    match k.mm.files_mut().get_mut(&file) {
        Some(f) if f.mtime_s != Some(now_s) => {
            f.mtime_s = Some(now_s);
            true
        }
        _ => false,
    }
}

/// What a 2.6.17 ext3 (ordered) append costs per page beyond a rewrite of a cached page
/// (fs/ext3/inode.c and fs/ext3/balloc.c of 2.6.16-2.6.18, mm/filemap.c): the page and its
/// buffer_head are new (`add_to_page_cache`), `ext3_get_block` allocates the block
/// (`ext3_get_block_alloc`, `ext3_new_block`), and the inode is journaled three times:
/// `DQUOT_ALLOC_BLOCK`'s `mark_inode_dirty` (i_blocks) through `ext3_dirty_inode`,
/// `ext3_splice_branch`'s (i_ctime), and `generic_commit_write`'s for the new i_size.
pub fn append_cost26(c: &Costs) -> Nanos {
    c.add_to_page_cache + c.ext3_get_block_alloc + c.ext3_new_block + 3 * c.ext3_mark_inode_dirty
}

/// `write(fd, buf, bytes)` appending to `file`, or rewriting its pages from `at` on.
pub struct FileWrite {
    file: u32,
    /// Page offset of a rewrite inside the file (None: append).
    at: Option<u64>,
    left: u64,
    sub: Nested<FsState>,
    looping: bool,
    /// generic_file_write's mtime update (`mark_inode_dirty_sync`) is done.
    stamped: bool,
    /// The page's journal handle is open over a block-bitmap read (`t_updates`).
    handle: bool,
}

pub fn sys_write(file: u32, bytes: u64) -> Box<dyn Path<FsState>> {
    file_write(file, None, bytes)
}

/// `pwrite(fd, buf, bytes, off)` over existing pages of `file` (`off_pages` on, as far as
/// the file goes): whole pages overwritten in the page cache (no read; a page not cached is
/// added), blocks already allocated, a page still dirty dirties no new buffer (the pages
/// rewritten are taken to be the file's still-dirty ones first).
pub fn sys_rewrite(file: u32, off_pages: u64, bytes: u64) -> Box<dyn Path<FsState>> {
    file_write(file, Some(off_pages), bytes)
}

fn file_write(file: u32, at: Option<u64>, bytes: u64) -> Box<dyn Path<FsState>> {
    Box::new(FileWrite {
        file,
        at,
        left: bytes.div_ceil(4096),
        sub: Nested::default(),
        looping: false,
        stamped: false,
        handle: false,
    })
}

impl Path<FsState> for FileWrite {
    fn name(&self) -> &'static str {
        "sys_write"
    }
    fn next(&mut self, k: &mut FsState, cx: &Ctx) -> Step {
        loop {
            if let Some(s) = self.sub.next(k, cx) {
                return s;
            }
            if std::mem::take(&mut self.handle) {
                // The bitmap is read; the page's journal_stop follows its CPU work, which a
                // commit cannot begin inside.
                journal_stop_slept(k);
            }
            if !k.mm.files().contains_key(&self.file) {
                return Step::Done;
            }
            if self.looping {
                // After the page(s) just written, the writer throttles itself as the
                // variant's writeback has it.
                self.looping = false;
                if let Some(p) = crate::mm::writeback::after_dirtying(k, cx) {
                    self.sub.start(p);
                    continue;
                }
            }
            // A rewrite stops at the end of the file.
            let size = k.mm.files().get(&self.file).map_or(0, |f| f.size);
            if let Some(at) = self.at {
                self.left = self.left.min(size.saturating_sub(at));
            }
            if self.left == 0 {
                return Step::Done;
            }
            if need_pages(k, &mut self.sub, 1, true) {
                continue;
            }
            // Each page's ext3_prepare_write starts a handle.
            if let Some(s) = journal_start(k) {
                return s;
            }
            if !self.stamped {
                // generic_file_write's mtime update (`mark_inode_dirty_sync`).
                self.stamped = true;
                if mtime_changes(k, self.file, cx.now) {
                    self.sub.start(ext3_dirty_inode(k, self.file));
                    continue;
                }
            }
            let room = k.mm.free().saturating_sub(k.mm.pages_min()).max(1);
            let mut n = self
                .left
                .min(room)
                .min(crate::mm::writeback::headroom(k, cx.pid).max(1));
            // 2.6 ext3's append: block groups and the counted allocation path.
            let append26 = self.at.is_none() && k.ext3.block_groups;
            if append26 {
                // ext3_prepare_write -> ext3_new_blocks: a page whose block lies in a group
                // not yet touched reads that group's bitmap first, in the writer.
                let (first, size) = k.mm.files().get(&self.file).map_or((0, 0), |f| (f.block, f.size));
                match k.ext3.balloc.next_append(self.file, first, size, n) {
                    Alloc::Fits(m) => n = m.max(1),
                    Alloc::ReadBitmap { group } => {
                        k.ext3.balloc.bitmap_read(self.file, first, size, group);
                        // The page's handle (ext3_prepare_write's) stays open over the read.
                        k.jbd.handle_sleeps();
                        self.handle = true;
                        self.sub.start(Box::new(disk_io(Dir::Read, first + size, 1)));
                        continue;
                    }
                }
            }
            self.looping = true;
            let mut per_page = k.c.write_page + k.c.page_copy;
            if append26 {
                per_page += append_cost26(&k.c);
            }
            return LoopStep::plain(
                "generic_file_write",
                n,
                per_page,
                smallvec![point(Point::GenericFileWrite, 1)],
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
        if let Some(at) = self.at.as_mut() {
            // Inside the file: the pages not cached come back, the rest are written over.
            let done = done.min(f.size.saturating_sub(*at));
            let block = f.block + *at;
            let from = *at;
            *at += done;
            let size = f.size;
            k.mm.write_pages(self.file, from, done);
            let pending = k.buf.pending_of(self.file);
            // Pages already dirty dirty no new buffer. 2.6's page cache knows which pages
            // are dirty; 2.4's model takes the file's still-dirty ones to be rewritten
            // first (crate::workload::iozone says why it stays).
            let already = if k.writeback.counts_dirty_pages() {
                k.buf.dirty_in(self.file, block, block + done)
            } else {
                pending
            };
            let new = done - done.min(already);
            self.looping &= crate::mm::writeback::dirtied(k, cx.pid, done, Some(new));
            k.jbd.redirty(self.file, new, size.saturating_sub(pending));
            let txn = k.jbd.add_data(new);
            k.buf.dirty(self.file, txn, new, block, cx.now);
            return;
        }
        let first = f.block;
        let block = f.block + f.size;
        let from = f.size;
        f.size += done;
        k.mm.write_pages(self.file, from, done);
        if k.ext3.block_groups {
            k.ext3.balloc.appended(self.file, first, from, done);
        }
        let txn = k.jbd.add_data(done);
        k.buf.dirty(self.file, txn, done, block, cx.now);
        // Block allocation: a new indirect block every 1024 data blocks (the block bitmap,
        // one per 32768 blocks, and the group descriptor are shared by everything the
        // transaction allocates); i_size goes into the inode, already journaled above.
        k.jbd.dirty_inode(self.file);
        k.jbd.add_meta32(done * 32 / PTRS_PER_BLOCK);
        self.looping &= crate::mm::writeback::dirtied(k, cx.pid, done, None);
    }
}

/// `read(fd, buf, bytes)` from offset `off` (pages) of `file`.
pub struct FileRead {
    file: u32,
    off: u64,
    left: u64,
    sub: Nested<FsState>,
    /// `UPDATE_ATIME(inode)` at the end of `do_generic_file_read` is still to come.
    atime: bool,
}

/// A `read()` on ext3: the page-cache read, then the access-time update.
pub fn sys_read(file: u32, off_pages: u64, bytes: u64) -> Box<dyn Path<FsState>> {
    file_read(file, off_pages, bytes, true)
}

/// A read the page cache answers without ext3's access-time update: the NFS client's
/// `nfs_file_read` (the file's times are the server's, updated by nfsd's own read).
pub fn cached_read(file: u32, off_pages: u64, bytes: u64) -> Box<dyn Path<FsState>> {
    file_read(file, off_pages, bytes, false)
}

fn file_read(file: u32, off: u64, bytes: u64, atime: bool) -> Box<dyn Path<FsState>> {
    Box::new(FileRead {
        file,
        off,
        left: bytes.div_ceil(4096),
        sub: Nested::default(),
        atime,
    })
}

/// `CURRENT_TIME` (`xtime.tv_sec`) at simulated time `now`.
fn current_time(now: u64) -> u64 {
    now / 1_000_000_000
}

impl Path<FsState> for FileRead {
    fn name(&self) -> &'static str {
        "sys_read"
    }
    fn next(&mut self, k: &mut FsState, cx: &Ctx) -> Step {
        loop {
            if let Some(s) = self.sub.next(k, cx) {
                return s;
            }
            let Some(f) = k.mm.files().get(&self.file) else {
                return Step::Done;
            };
            let (size, fblock, atime_s) = (f.size, f.block, f.atime_s);
            if self.left == 0 || self.off >= size {
                // update_atime (fs/inode.c, 2.4): nothing if i_atime is already this second.
                let now_s = current_time(cx.now);
                if !self.atime || atime_s == Some(now_s) {
                    return Step::Done;
                }
                if let Some(s) = journal_start(k) {
                    return s;
                }
                self.atime = false;
                if let Some(f) = k.mm.files_mut().get_mut(&self.file) {
                    f.atime_s = Some(now_s);
                }
                self.sub.start(ext3_dirty_inode(k, self.file));
                continue;
            }
            let cached = k.mm.cached_run(self.file, self.off).min(size - self.off);
            if cached > 0 {
                let n = self.left.min(cached);
                return LoopStep::plain(
                    "do_generic_file_read",
                    n,
                    k.c.read_page + k.c.page_copy,
                    smallvec![point(Point::DoGenericFileRead, 1)],
                );
            }
            // Page-cache miss: readpage + readahead of the pages missing from here on,
            // sleep on the I/O.
            let n = k.mm.uncached_run(self.file, self.off, READAHEAD.min(size - self.off));
            if need_pages(k, &mut self.sub, n, false) {
                continue;
            }
            let n = k.mm.add_pages(self.file, self.off, n);
            self.sub.start(Box::new(disk_io(Dir::Read, fblock + self.off, n)));
        }
    }
    fn advanced(&mut self, k: &mut FsState, cx: &Ctx, done: u64) {
        if self.sub.advanced(k, cx, done) {
            return;
        }
        // mark_page_accessed() of each page read.
        k.mm.mark_accessed(self.file, self.off, done);
        self.off += done;
        self.left -= done.min(self.left);
    }
}

/// open()/stat(): path lookup through the dcache.
pub fn sys_lookup(k: &mut FsState, file: u32) -> Box<dyn Path<FsState>> {
    k.dcache.touch_existing(file);
    crate::kernel::path::once("path_lookup", k.c.lookup)
}

/// ext3 block group size with 4 KiB blocks (`EXT3_BLOCKS_PER_GROUP` = 8 * block size).
const BLOCKS_PER_GROUP: u64 = 32_768;
/// Inodes per group (mke2fs's default of one inode per 8 KiB, so 16,384 a group).
const INODES_PER_GROUP: u64 = 16_384;
/// 128-byte ext3 inodes in a 4 KiB inode-table block.
const INODES_PER_TABLE_BLOCK: u64 = 32;

/// lstat() of the `nth` name of a walk over the whole filesystem, outside the workload's
/// files (updatedb's nightly walk). The first night the name is not cached: `real_lookup`
/// calls `ext3_lookup` under the BKL, which makes the dentry (`d_alloc`, no
/// DCACHE_REFERENCED) and reads the inode (`iget`): dentry and inode join the slab, and every
/// 32nd name a 4 KiB inode-table block is read, in its block group's table (names are walked
/// in inode order, a group's inodes together). A later night finds the dentry cached and
/// `d_lookup` sets DCACHE_REFERENCED.
pub fn sys_lstat_tree(k: &mut FsState, first_night: bool, nth: u64) -> Box<dyn Path<FsState>> {
    let cost = k.c.lookup + k.c.fstat;
    if !first_night {
        k.dcache.hit_unused();
        return once("sys_lstat", cost);
    }
    k.dcache.looked_up_once();
    k.mm.take_slab(crate::mm::vmscan::DENTRY_BYTES + crate::mm::vmscan::INODE_BYTES);
    let mut parts = vec![under_bkl(once("ext3_lookup", cost))];
    if nth.is_multiple_of(INODES_PER_TABLE_BLOCK) {
        let group = nth / INODES_PER_GROUP;
        let table_block = (nth % INODES_PER_GROUP) / INODES_PER_TABLE_BLOCK;
        // The table follows the group's superblock copy, descriptors and two bitmaps.
        let block = group * BLOCKS_PER_GROUP + 4 + table_block;
        parts.push(Box::new(disk_io(Dir::Read, block, 1)));
    }
    chain("sys_lstat", parts)
}

/// creat(): a new inode and directory entry (the caller made the file record `file`).
pub fn sys_create(file: u32) -> Box<dyn Path<FsState>> {
    Box::new(Create { file: Some(file) })
}

struct Create {
    /// Taken when the inode is made.
    file: Option<u32>,
}

impl Path<FsState> for Create {
    fn name(&self) -> &'static str {
        "sys_create"
    }
    fn next(&mut self, k: &mut FsState, _cx: &Ctx) -> Step {
        if let Some(s) = journal_start(k) {
            return s;
        }
        let Some(file) = self.file.take() else {
            return Step::Done;
        };
        k.dcache.created(file);
        k.dcache.mark_inode_dirty(file);
        k.mm.take_slab(crate::mm::vmscan::DENTRY_BYTES + crate::mm::vmscan::INODE_BYTES);
        // The new inode's table block; its directory block (a 4 KiB block holds ~100 of
        // dbench's entries) with the inode bitmap and group descriptor (shared by a group's
        // 16,384 inodes): ~1/32 more.
        k.jbd.dirty_inode(file);
        k.jbd.add_meta32(1);
        Work::plain("ext3_create", k.c.create)
    }
}

/// unlink() of a file whose last link goes, or ftruncate() to a smaller size:
/// truncate_inode_pages over the pages past the new end, ext3_truncate freeing the blocks
/// past it (under the big kernel lock: `ext3_delete_inode` takes it, and 2.4's
/// `notify_change` holds it around `->setattr`), and for unlink dentry_iput.
pub struct Truncate {
    file: u32,
    /// New size in pages.
    to: u64,
    unlink: bool,
    stage: u8,
}

/// The buffers of `n` of `file`'s `cached` pages a truncate drops leave the buffer lists and
/// their transactions (`block_flushpage` -> `journal_flushpage`); returns how many of those
/// pages the committing transaction pins (its buffers stay dirty, for the commit to write).
pub(crate) fn drop_buffers(k: &mut FsState, file: u32, n: u64, cached: u64) -> u64 {
    let committing = k.jbd.committing_tid();
    let (dropped, kept) = k.buf.pages_truncated(file, n, cached, committing);
    k.jbd.pages_truncated(file, n, cached, &dropped);
    kept
}

pub fn sys_unlink(file: u32) -> Box<dyn Path<FsState>> {
    Box::new(Truncate {
        file,
        to: 0,
        unlink: true,
        stage: 0,
    })
}

/// ftruncate() of `file` to `to_pages` (no effect past its end).
pub fn sys_ftruncate(file: u32, to_pages: u64) -> Box<dyn Path<FsState>> {
    Box::new(Truncate {
        file,
        to: to_pages,
        unlink: false,
        stage: 0,
    })
}

impl Path<FsState> for Truncate {
    fn name(&self) -> &'static str {
        if self.unlink {
            "sys_unlink"
        } else {
            "sys_ftruncate"
        }
    }
    fn next(&mut self, k: &mut FsState, _cx: &Ctx) -> Step {
        let Some(f) = k.mm.files().get(&self.file) else {
            return Step::Done;
        };
        let size = f.size;
        let past = k.mm.cached_from(self.file, self.to);
        if self.stage == 0 {
            if let Some(s) = journal_start(k) {
                return s;
            }
        }
        self.stage += 1;
        // Nothing cached or allocated past the new end: those walks have nothing to walk.
        if self.stage == 2 && past == 0 {
            self.stage = 3;
        }
        if self.stage == 3 && size <= self.to {
            self.stage = 4;
        }
        match self.stage {
            1 if self.unlink => Work::plain("ext3_unlink", k.c.unlink),
            1 => Work::locked("ext3_setattr", k.c.setattr, Lock::Bkl, false),
            2 => LoopStep::plain(
                "truncate_inode_pages",
                past,
                k.c.truncate_page,
                smallvec![point(Point::TruncateListPages, 1)],
            ),
            3 => {
                // ext3_truncate: per block ext3_clear_blocks' hash lookup and
                // ext3_free_blocks' bit, plus an indirect block read (bread hit) every 1024
                // blocks. A rescheduling point under the BKL is a plain schedule(), which
                // releases and re-takes it.
                let per = k.c.clear_block + k.c.free_block + k.c.free_indirect / PTRS_PER_BLOCK;
                LoopStep::locked(
                    "ext3_truncate",
                    size.saturating_sub(self.to),
                    per,
                    Lock::Bkl,
                    smallvec![point(Point::Ext3FreeData, 1), point(Point::Bread, PTRS_PER_BLOCK)],
                    false,
                )
            }
            4 if self.unlink => {
                // What truncation left (nothing, unless reclaim raced it).
                let cached = k.mm.cached_from(self.file, 0);
                let kept = drop_buffers(k, self.file, u64::MAX, cached);
                k.mm.delete_file(self.file);
                k.mm.pin(kept);
                k.dcache.delete_file(self.file);
                k.ext3.balloc.deleted(self.file);
                // The inode, the directory block (as for creat), the indirect blocks freed.
                k.jbd.dirty_inode(self.file);
                k.jbd.add_meta32(1 + 32 * size / PTRS_PER_BLOCK);
                LoopStep::plain(
                    "dentry_iput",
                    1,
                    k.c.prune_dentry,
                    smallvec![point(Point::DentryIput, 1)],
                )
            }
            4 => {
                k.jbd.dirty_inode(self.file);
                Step::Done
            }
            _ => Step::Done,
        }
    }
    fn advanced(&mut self, k: &mut FsState, _cx: &Ctx, done: u64) {
        if self.stage == 2 {
            // Each page's buffers go with it (block_flushpage / journal_flushpage).
            let cached = k.mm.files().get(&self.file).map_or(0, FileRec::cached);
            let kept = drop_buffers(k, self.file, done, cached);
            k.mm.drop_pages_from(self.file, self.to, done);
            k.mm.pin(kept);
        }
        let Some(f) = k.mm.files_mut().get_mut(&self.file) else {
            return;
        };
        match self.stage {
            2 if f.pages.count_from(self.to) > 0 => self.stage = 1,
            3 => {
                f.size -= done.min(f.size);
                if f.size > self.to {
                    self.stage = 2;
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::tests::{kstate, run_to_sleep};
    use crate::fs::jbd::MAX_TRANSACTION_BUFFERS;
    use crate::mm::state::MmK;
    use latlab_core::units::Nanos;

    /// Kernel state with `share` percent of the buffer pages dirty, and a file to write.
    fn dirty_to(share: u64) -> (FsState, u32) {
        let mut k = kstate();
        let n = k.buffer_pages() * share / 100;
        let old = k.mm.create_file(n);
        let txn = k.jbd.add_data(n);
        k.buf.dirty(old, txn, n, 0, 0);
        let f = k.mm.create_file(16);
        (k, f)
    }

    /// Run `p` at `now` to its end without sleeping; its loop steps' functions and per-item
    /// costs.
    fn steps_at(k: &mut FsState, mut p: Box<dyn Path<FsState>>, now: Nanos) -> Vec<(&'static str, Nanos)> {
        let cx = Ctx { now, pid: 1 };
        let mut steps = Vec::new();
        loop {
            match p.next(k, &cx) {
                Step::Loop(l) => {
                    steps.push((l.func, l.per_item));
                    p.advanced(k, &cx, l.items);
                }
                Step::Work(_) => {}
                Step::Block(c) => panic!("{} slept on {c:?}", p.name()),
                Step::Done => return steps,
            }
        }
    }

    /// Run `p` at `now` to its end without sleeping; the functions of its loop steps.
    fn loops_at(k: &mut FsState, p: Box<dyn Path<FsState>>, now: Nanos) -> Vec<&'static str> {
        steps_at(k, p, now).into_iter().map(|(f, _)| f).collect()
    }

    /// Kernel state under 2.6.17's page-based writeback (the model's 2.6 ext3), and a new
    /// file whose first block group's bitmap is already cached.
    fn kstate26() -> (FsState, u32) {
        let mut k = kstate();
        let t = crate::variant::DirtyTunables {
            dirty_ratio: 40,
            dirty_background_ratio: 10,
        };
        let pwb = crate::mm::page_writeback::PageWriteback::new(t, k.buffer_pages(), 250);
        k.writeback = crate::mm::writeback::DirtyWriteback::pdflush(pwb, false);
        k.ext3.coarse_mtime = true;
        k.ext3.block_groups = true;
        let f = k.mm.create_file(64);
        let first = k.mm.files().get(&f).unwrap().block;
        if let Alloc::ReadBitmap { group } = k.ext3.balloc.next_append(f, first, 0, 1) {
            k.ext3.balloc.bitmap_read(f, first, 0, group);
        }
        (k, f)
    }

    #[test]
    fn an_append_holds_its_handle_open_over_a_bitmap_read() {
        let (mut k, f) = kstate26();
        // A box whose first group's bitmap is not cached yet: the append reads it first.
        let mut fresh = kstate();
        std::mem::swap(&mut fresh.ext3.balloc, &mut k.ext3.balloc);
        let mut w = sys_write(f, 4096);
        let cx = Ctx { now: 0, pid: 1 };
        let mut step = w.next(&mut k, &cx);
        for _ in 0..100 {
            match step {
                Step::Loop(l) => w.advanced(&mut k, &cx, l.items),
                Step::Block(_) | Step::Done => break,
                Step::Work(_) => {}
            }
            step = w.next(&mut k, &cx);
        }
        assert!(matches!(step, Step::Block(Chan::Io(_))));
        assert_eq!(k.jbd.updates, 1);
        // A commit begun now would wait for it: the read's end stops the handle and wakes it.
        k.jbd.locked = true;
        k.out.clear();
        let _ = w.next(&mut k, &cx);
        assert_eq!(k.jbd.updates, 0);
        assert!(k
            .out
            .iter()
            .any(|r| matches!(r, crate::kernel::state::KReq::Wake(Chan::TxnUpdates))));
        // With the bitmap cached, an append holds no handle across anything.
        k.jbd.locked = false;
        std::mem::swap(&mut fresh.ext3.balloc, &mut k.ext3.balloc);
        assert_eq!(run_to_sleep(&mut k, sys_write(f, 4096)), None);
        assert_eq!(k.jbd.updates, 0);
    }

    /// The per-page cost of `p`'s page-cache loop (`generic_file_write`).
    fn per_page(k: &mut FsState, p: Box<dyn Path<FsState>>, now: Nanos) -> Nanos {
        let steps = steps_at(k, p, now);
        let costs: Vec<Nanos> = steps
            .iter()
            .filter(|(f, _)| *f == "generic_file_write")
            .map(|&(_, c)| c)
            .collect();
        assert!(!costs.is_empty(), "no page was written: {steps:?}");
        assert!(costs.windows(2).all(|w| w[0] == w[1]), "{costs:?}");
        costs[0]
    }

    #[test]
    fn under_2_6_an_append_costs_more_than_a_rewrite_by_its_counted_allocation() {
        let (mut k, f) = kstate26();
        let extra = append_cost26(&k.c);
        assert_eq!(
            extra,
            k.c.add_to_page_cache + k.c.ext3_get_block_alloc + k.c.ext3_new_block + 3 * k.c.ext3_mark_inode_dirty
        );
        assert!(extra > 0);
        let append = per_page(&mut k, sys_write(f, 8 * 4096), SEC);
        let rewrite = per_page(&mut k, sys_rewrite(f, 0, 8 * 4096), SEC);
        assert_eq!(rewrite, k.c.write_page + k.c.page_copy);
        assert_eq!(append - rewrite, extra);
        // 2.4's path charges an append as a rewrite.
        let mut k = kstate();
        let f = k.mm.create_file(16);
        let append = per_page(&mut k, sys_write(f, 8 * 4096), SEC);
        assert_eq!(append, per_page(&mut k, sys_rewrite(f, 0, 8 * 4096), SEC));
        assert_eq!(append, k.c.write_page + k.c.page_copy);
    }

    #[test]
    fn under_2_6_a_write_journals_the_inode_for_its_mtime_once_a_second() {
        let (mut k, f) = kstate26();
        let dirtied = |funcs: Vec<&str>| funcs.iter().filter(|&&x| x == "ext3_dirty_inode").count();
        assert_eq!(dirtied(loops_at(&mut k, sys_write(f, 4096), 5 * SEC)), 1);
        assert_eq!(dirtied(loops_at(&mut k, sys_write(f, 4096), 6 * SEC - 1)), 0);
        assert_eq!(dirtied(loops_at(&mut k, sys_rewrite(f, 0, 4096), 6 * SEC - 1)), 0);
        assert_eq!(dirtied(loops_at(&mut k, sys_rewrite(f, 0, 4096), 6 * SEC)), 1);
        // 2.4's generic_file_write journals it on every call.
        let mut k = kstate();
        let f = k.mm.create_file(16);
        assert_eq!(dirtied(loops_at(&mut k, sys_write(f, 4096), 5 * SEC)), 1);
        assert_eq!(dirtied(loops_at(&mut k, sys_write(f, 4096), 5 * SEC)), 1);
    }

    const SEC: Nanos = 1_000_000_000;

    /// A cached file of 4 pages.
    fn cached_file(k: &mut FsState) -> u32 {
        let f = k.mm.existing_file(4);
        k.mm.add_pages(f, 0, 4);
        f
    }

    #[test]
    fn a_read_updates_the_access_time_at_most_once_a_second() {
        let mut k = kstate();
        let f = cached_file(&mut k);
        assert!(
            ext3_dirty_inode(&mut k, f).holds_bkl(),
            "ext3_dirty_inode runs under lock_kernel()"
        );
        k.dcache.synced(1);
        let read = loops_at(&mut k, sys_read(f, 0, 4096), 5 * SEC);
        assert_eq!(read, ["do_generic_file_read", "ext3_dirty_inode"]);
        assert!(k.dcache.dirty_inodes.contains(&f), "the inode is not on s_dirty");
        k.dcache.synced(1); // kupdated's __sync_one
                            // The same second: i_atime is current, nothing is journaled.
        assert_eq!(
            loops_at(&mut k, sys_read(f, 1, 4096), 6 * SEC - 1),
            ["do_generic_file_read"]
        );
        assert!(k.dcache.dirty_inodes.is_empty());
        // The next second, even for a read at the end of the file: dirty again.
        assert_eq!(loops_at(&mut k, sys_read(f, 9, 4096), 6 * SEC), ["ext3_dirty_inode"]);
        assert!(k.dcache.dirty_inodes.contains(&f));
    }

    #[test]
    fn a_read_the_nfs_clients_cache_answers_updates_no_ext3_inode() {
        let mut k = kstate();
        let f = cached_file(&mut k);
        assert_eq!(
            loops_at(&mut k, cached_read(f, 0, 4096), 5 * SEC),
            ["do_generic_file_read"]
        );
        assert!(k.dcache.dirty_inodes.is_empty());
    }

    #[test]
    fn a_write_journals_the_inode_for_its_mtime_once_per_call() {
        let mut k = kstate();
        let f = k.mm.create_file(16);
        let funcs = loops_at(&mut k, sys_write(f, 3 * 4096), SEC);
        assert_eq!(funcs.iter().filter(|&&x| x == "ext3_dirty_inode").count(), 1);
        assert_eq!(
            funcs[0], "ext3_dirty_inode",
            "the mtime update comes before the first page"
        );
        assert!(k.dcache.dirty_inodes.contains(&f));
    }

    #[test]
    fn a_one_page_write_over_the_soft_limit_writes_a_batch_itself() {
        let (mut k, f) = dirty_to(50);
        assert_eq!(k.balance_dirty_state(), 0);
        assert_eq!(run_to_sleep(&mut k, sys_write(f, 4096)), None);
        assert!(k.buf.next_seq() > 0, "balance_dirty() submitted nothing");
    }

    #[test]
    fn a_write_over_the_hard_limit_waits_for_some_buffers() {
        let (mut k, f) = dirty_to(70);
        assert_eq!(k.balance_dirty_state(), 1);
        // wait_for_some_buffers sleeps on the first buffer still under write on BUF_LOCKED:
        // the batch the writer just submitted.
        let Some(Chan::Io(id)) = run_to_sleep(&mut k, sys_write(f, 4096)) else {
            panic!("the writer did not wait")
        };
        assert_eq!(k.disk.req_of_seq(0), Some(id));
    }

    #[test]
    fn a_write_below_the_limits_does_not_write_out() {
        let (mut k, f) = dirty_to(10);
        assert_eq!(run_to_sleep(&mut k, sys_write(f, 3 * 4096)), None);
        assert_eq!(k.buf.next_seq(), 0);
        assert_eq!(k.mm.files()[&f].size, 3);
    }

    #[test]
    fn handles_wait_for_the_commit_of_a_full_transaction() {
        let mut k = kstate();
        k.register_kthread(crate::kernel::state::Kthread::Kjournald, 4);
        let f = k.mm.create_file(16);
        k.jbd.add_meta32(32 * (MAX_TRANSACTION_BUFFERS - 5));
        let mut w = sys_write(f, 4096);
        let cx = Ctx { now: 0, pid: 1 };
        assert!(matches!(w.next(&mut k, &cx), Step::Block(Chan::TxnLocked)));
        assert!(k.jbd.commit_requested);
        assert!(k
            .out
            .iter()
            .any(|r| matches!(r, crate::kernel::state::KReq::Wake(Chan::Kthread(4)))));
        assert_eq!(run_to_sleep(&mut k, sys_create(f + 1)), Some(Chan::TxnLocked));
        assert_eq!(run_to_sleep(&mut k, sys_unlink(f)), Some(Chan::TxnLocked));
        // kjournald begins the commit: a fresh transaction has room.
        k.jbd.start_commit(0);
        assert!(matches!(w.next(&mut k, &cx), Step::Loop(_)));
    }

    #[test]
    fn deleting_a_file_the_commit_still_writes_pins_its_pages_until_the_commit_ends() {
        let mut k = kstate();
        let f = k.mm.create_file(10);
        assert_eq!(run_to_sleep(&mut k, sys_write(f, 10 * 4096)), None);
        let free = k.mm.free();
        // kjournald begins committing the transaction that holds the file's dirty buffers.
        k.jbd.start_commit(0);
        assert_eq!(run_to_sleep(&mut k, sys_unlink(f)), None);
        // The pages left the cache, but the commit still holds their buffers: not free.
        assert_eq!((k.mm.cached_from(f, 0), k.mm.pinned()), (0, 10));
        assert_eq!(k.buf.pending_of(f), 10, "the commit still has them to write");
        assert!(k.mm.free() <= free);
        // The commit ends: they are clean pages on the inactive list for reclaim to free.
        let (free, cache) = (k.mm.free(), k.mm.cache());
        k.mm.unpin_all();
        assert_eq!((k.mm.pinned(), k.mm.free(), k.mm.cache()), (0, free, cache + 10));
    }

    #[test]
    fn a_truncate_cut_into_chunks_pins_each_page_once() {
        let mut k = kstate();
        let f = k.mm.create_file(10);
        assert_eq!(run_to_sleep(&mut k, sys_write(f, 10 * 4096)), None);
        k.jbd.start_commit(0);
        let cx = Ctx { now: 0, pid: 1 };
        let mut p = sys_unlink(f);
        let mut first = true;
        for _ in 0..100 {
            match p.next(&mut k, &cx) {
                // truncate_list_pages' rescheduling point cuts the walk after 4 pages.
                Step::Loop(l) if l.func == "truncate_inode_pages" && std::mem::take(&mut first) => {
                    p.advanced(&mut k, &cx, 4.min(l.items))
                }
                Step::Loop(l) => p.advanced(&mut k, &cx, l.items),
                Step::Work(_) | Step::Block(_) => {}
                Step::Done => break,
            }
        }
        assert!(!first, "the walk was not cut");
        assert_eq!((k.mm.cached_from(f, 0), k.mm.pinned()), (0, 10));
    }

    #[test]
    fn a_rewrite_cut_before_its_first_page_goes_on() {
        let mut k = kstate();
        let f = k.mm.create_file(10);
        assert_eq!(run_to_sleep(&mut k, sys_write(f, 10 * 4096)), None);
        let pending = k.buf.pending_of(f);
        k.buf.pages_truncated(f, u64::MAX, 0, None);
        let cx = Ctx { now: 0, pid: 1 };
        let mut w = sys_rewrite(f, 2, 3 * 4096);
        assert!(matches!(w.next(&mut k, &cx), Step::Loop(_)));
        // Preempted (or cut at a rescheduling point) before the first page was done.
        w.advanced(&mut k, &cx, 0);
        assert!(matches!(w.next(&mut k, &cx), Step::Loop(_)), "the rewrite was dropped");
        assert_eq!(run_to_sleep(&mut k, w), None);
        assert_eq!((pending, k.buf.pending_of(f)), (10, 3));
        // A rewrite past the end of the file has nothing to do.
        assert_eq!(run_to_sleep(&mut k, sys_rewrite(f, 10, 4096)), None);
        assert_eq!(k.buf.pending_of(f), 3);
    }

    #[test]
    fn reads_hit_the_pages_the_cache_holds_wherever_they_are() {
        let mut k = kstate();
        let f = k.mm.create_file(20);
        assert_eq!(run_to_sleep(&mut k, sys_write(f, 20 * 4096)), None);
        // The first half of the file left the cache; the pages just written are still there.
        assert_eq!(k.mm.drop_pages_from(f, 0, 10), 10);
        assert_eq!(run_to_sleep(&mut k, sys_read(f, 12, 4 * 4096)), None);
        // A page that left is read back from disk, with the rest of the gap as readahead.
        assert!(matches!(run_to_sleep(&mut k, sys_read(f, 3, 4096)), Some(Chan::Io(_))));
        assert_eq!((k.mm.cached_run(f, 0), k.mm.cached_run(f, 3)), (0, 17));
    }

    #[test]
    fn ftruncate_frees_what_lies_past_the_new_end_and_keeps_the_file() {
        let mut k = kstate();
        let f = k.mm.create_file(100);
        assert_eq!(run_to_sleep(&mut k, sys_write(f, 100 * 4096)), None);
        assert_eq!((k.mm.files()[&f].size, k.mm.files()[&f].cached()), (100, 100));
        assert_eq!(run_to_sleep(&mut k, sys_ftruncate(f, 30)), None);
        assert_eq!((k.mm.files()[&f].size, k.mm.files()[&f].cached()), (30, 30));
        // The dropped pages' dirty buffers went with them, from the lists and the journal.
        assert_eq!((k.buf.pending_of(f), k.buf.nr_dirty, k.jbd.running.dirty), (30, 30, 30));
        // Past the end: nothing to do.
        assert_eq!(run_to_sleep(&mut k, sys_ftruncate(f, 50)), None);
        assert_eq!(k.mm.files()[&f].size, 30);
        assert_eq!(run_to_sleep(&mut k, sys_unlink(f)), None);
        assert!(!k.mm.files().contains_key(&f));
    }
}
