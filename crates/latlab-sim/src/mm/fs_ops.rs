//! The data mm/ passes to the file system's operations ([`MmK`](crate::mm::state::MmK)):
//! `struct writeback_control`, and what a `->writepage` run did.

use crate::kernel::path::Chan;
use latlab_core::Nanos;

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

/// What [`MmK::writepage_run`](crate::mm::state::MmK::writepage_run) did.
pub enum Handed {
    /// No request free: sleep on this in `get_request_wait`.
    Sleep(Chan),
    /// This many pages went to the queue.
    Wrote(u64),
    /// The file had nothing dirty to take.
    Nothing,
}
