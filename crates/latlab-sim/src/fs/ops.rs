//! The file system's side of [`FsOps`]: ext3 over the buffer cache, as mm/'s writeback and
//! reclaim call it (the assembly installs [`Ext3Ops`] in the page cache).

use crate::fs::buffer::Via;
use crate::fs::flush::{chain, wait_for_buffers, write_some_buffers, SubmitBatch};
use crate::fs::fs_writeback::{write_dirty_run, writeback_inodes};
use crate::kernel::path::{Ctx, Path};
use crate::fs::state::FsState;
use crate::mm::fs_ops::{FsOps, Handed, Wbc};

/// ext3 (ordered journal) over the buffer cache.
pub struct Ext3Ops;

impl FsOps for Ext3Ops {
    fn writeback_inodes(&self, wbc: Wbc, pdflush: bool) -> Box<dyn Path> {
        writeback_inodes(wbc, pdflush)
    }
    fn writepage_run(&self, k: &mut FsState, cx: &Ctx, file: u32, block: u64, want: u64) -> Handed {
        write_dirty_run(k, cx, file, block, want)
    }
    fn balance_dirty(&self, over_hard: bool) -> Box<dyn Path> {
        let mut parts: Vec<Box<dyn Path>> = vec![Box::new(write_some_buffers())];
        if over_hard {
            parts.push(Box::new(wait_for_buffers()));
        }
        chain("balance_dirty", parts)
    }
    fn launder(&self, k: &mut FsState, n: u64) -> Option<Box<dyn Path>> {
        let b = k.buf.take(n, None)?;
        k.buf.laundering(b.lo, b.hi);
        Some(Box::new(SubmitBatch::new(b, Via::Writer, None)))
    }
}
