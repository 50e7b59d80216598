//! `sync` (coreutils): sys_sync, which starts writeback of every dirty buffer and, on ext3,
//! waits for kjournald's commit ([`crate::fs::flush::sys_sync`]).

use crate::workload::ops::Ops;
use crate::workload::syscall::Syscall;

/// The one call at `stage` 0; false after it.
pub(crate) fn refill(o: &mut Ops, stage: u32) -> bool {
    if stage > 0 {
        return false;
    }
    o.call(Syscall::Sync);
    true
}
