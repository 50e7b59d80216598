//! Dirty-data writeback, the subsystem a kernel variant names (`writeback`): what a writer
//! does after dirtying pages, and (through `workload::kthreads::for_variant`) which kernel
//! threads write them out. The fs write path asks only here.
//!
//! - `bdflush-2.4`: 2.4's `balance_dirty()` (fs/buffer.c, 2.4.17/2.4.18). Over the soft limit
//!   (`balance_dirty_state()` 0) the writer submits a batch of the oldest dirty buffers
//!   itself; over the hard limit (1) it also waits for some (`wait_for_some_buffers`) and
//!   wakes bdflush: "This will throttle heavy writers". kupdated writes buffers older than
//!   30 s every 5 s (`fs/flush.rs`).
//! - `pdflush-2.6.17` and seed 001's `pdflush-balance`: `balance_dirty_pages_ratelimited`
//!   ([`crate::mm::page_writeback`]), pdflush threads ([`crate::mm::pdflush`]).
//! - `io-less-3.2`: the writer's pauses and the flusher thread ([`crate::mm::ioless`]).

use crate::fs::flush::{chain, wait_for_buffers, write_some_buffers};
use crate::kernel::path::{Ctx, Path};
use crate::kernel::state::KState;
use crate::variant::Writeback;

/// Pages the writer may dirty before it must ask [`after_dirtying`] again.
pub fn headroom(k: &KState, pid: u32) -> u64 {
    match k.writeback {
        Writeback::Bdflush24 => k.dirty_headroom(),
        Writeback::Pdflush2617 | Writeback::PdflushBalance => k.pwb.ratelimit_headroom(),
        Writeback::IoLess32 => crate::mm::ioless::headroom(k, pid),
    }
}

/// The writer wrote `n` pages over existing ones, `new` of them not dirty before, or
/// appended them (`new` None). True when the writeback wants [`after_dirtying`] asked: 2.4's
/// `mark_buffer_dirty` calls `balance_dirty()` for a buffer it dirtied (an append always
/// does); 2.6's `generic_file_buffered_write` counts every page written towards the
/// ratelimit (`balance_dirty_pages_ratelimited`).
pub fn dirtied(k: &mut KState, pid: u32, n: u64, new: Option<u64>) -> bool {
    match k.writeback {
        Writeback::Bdflush24 => new.is_none_or(|new| new > 0),
        Writeback::Pdflush2617 | Writeback::PdflushBalance => k.pwb.dirtied(n),
        Writeback::IoLess32 => crate::mm::ioless::dirtied(k, pid, n),
    }
}

/// The path a writer runs after a `write()` dirtied pages and its ratelimit fired, if the
/// writeback throttles it.
pub fn after_dirtying(k: &mut KState, cx: &Ctx) -> Option<Box<dyn Path>> {
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
        Writeback::Pdflush2617 | Writeback::PdflushBalance => Some(crate::mm::page_writeback::balance_dirty_pages(k)),
        Writeback::IoLess32 => crate::mm::ioless::balance_dirty_pages(k, cx),
    }
}
