//! Dirty-page writeback, the subsystem a kernel variant names (`writeback`): what a writer
//! does after dirtying pages, and (through `workload::kthreads::for_variant`) which kernel
//! threads write them out.
//!
//! - `bdflush-2.4`: 2.4's `balance_dirty()` (fs/buffer.c, 2.4.17/2.4.18). Over the soft limit
//!   (`balance_dirty_state()` 0) the writer submits a batch of the oldest dirty buffers
//!   itself; over the hard limit (1) it also waits for some (`wait_for_some_buffers`) and
//!   wakes bdflush: "This will throttle heavy writers". kupdated writes buffers older than
//!   30 s every 5 s (`fs/flush.rs`).
//!
//! 2.6.17's page-based writeback (`balance_dirty_pages_ratelimited`, pdflush; issue 16,
//! docs/research/writeback-2.6.17.md) is to be another arm of [`after_dirtying`].

use crate::fs::flush::{chain, wait_for_buffers, write_some_buffers};
use crate::kernel::path::Path;
use crate::kernel::state::KState;
use crate::variant::Writeback;

/// The path a writer runs after a `write()` dirtied buffers, if the writeback throttles it.
pub fn after_dirtying(k: &mut KState) -> Option<Box<dyn Path>> {
    match k.writeback {
        Writeback::Bdflush24 => {
            let state = k.balance_dirty_state();
            if state < 0 {
                return None;
            }
            let mut parts: Vec<Box<dyn Path>> = vec![Box::new(write_some_buffers())];
            if state > 0 {
                parts.push(Box::new(wait_for_buffers()));
                let pid = k.kthreads.bdflush;
                k.wake_kthread(pid);
            }
            Some(chain("balance_dirty", parts))
        }
    }
}
