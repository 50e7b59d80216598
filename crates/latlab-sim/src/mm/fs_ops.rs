//! What mm's writeback and reclaim call in the file system, as Linux reaches it: through
//! `mapping->a_ops->writepage` (2.6's `pageout()`), the super blocks' writeback
//! (`writeback_inodes`, fs/fs-writeback.c) and, in 2.4, the buffer layer's own write-out
//! (`balance_dirty()` and `page_launder`'s dirty buffers, fs/buffer.c). One ops table
//! ([`FsOps`]) the file system implements (`fs::ops::Ext3Ops`) and the assembly installs in
//! [`Mm`](crate::mm::Mm) (`Mm::install_fs_ops`), so nothing under mm/ names fs/'s code. Each
//! op is a call per writeback pass, pageout run or batch, never per page.

use crate::kernel::path::{Chan, Ctx, Path};
use crate::fs::state::FsState;
use latlab_core::Nanos;

/// The file system's operations mm/ calls.
pub trait FsOps {
    /// `writeback_inodes(wbc)` (fs/fs-writeback.c); `pdflush` when a pdflush thread runs it.
    /// When it returns, `k.writeback.pwb_mut().wbc` holds the caller's `wbc`.
    fn writeback_inodes(&self, wbc: Wbc, pdflush: bool) -> Box<dyn Path>;
    /// `->writepage` of up to `want` of `file`'s dirty pages from `block` on, as task `cx.pid`
    /// on the 2.6 queue (2.6.17 reclaim's `pageout()`).
    fn writepage_run(&self, k: &mut FsState, cx: &Ctx, file: u32, block: u64, want: u64) -> Handed;
    /// 2.4's `balance_dirty()` (fs/buffer.c) over the soft limit: a batch of the oldest dirty
    /// buffers written by the writer; `over_hard` also waits for some (`wait_for_some_buffers`).
    fn balance_dirty(&self, over_hard: bool) -> Box<dyn Path>;
    /// 2.4 `page_launder`: up to `n` dirty buffers met on the inactive list marked
    /// `BH_launder` and submitted (None: none dirty).
    fn launder(&self, k: &mut FsState, n: u64) -> Option<Box<dyn Path>>;
}

/// `struct writeback_control`: what a caller asks and what it reads back.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Wbc {
    /// Pages still to write (counts down).
    pub nr_to_write: u64,
    /// pdflush's callers: don't block on a congested queue.
    pub nonblocking: bool,
    pub encountered_congestion: bool,
    /// kupdate: only inodes dirtied before this.
    pub older_than_this: Option<Nanos>,
    /// Pages redirtied instead of written (`redirty_page_for_writepage`).
    pub pages_skipped: u64,
}

impl Wbc {
    /// A pass asking for `nr_to_write` pages.
    pub fn new(nr_to_write: u64, nonblocking: bool, older_than_this: Option<Nanos>) -> Self {
        Wbc {
            nr_to_write,
            nonblocking,
            older_than_this,
            ..Default::default()
        }
    }
}

/// What [`FsOps::writepage_run`] did.
pub enum Handed {
    /// No request free: sleep on this in `get_request_wait`.
    Sleep(Chan),
    /// This many pages went to the queue.
    Wrote(u64),
    /// The file had nothing dirty to take.
    Nothing,
}
