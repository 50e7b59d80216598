//! `sync` (coreutils): sys_sync, which starts writeback of every dirty buffer and, on ext3,
//! waits for kjournald's commit ([`crate::fs::flush::sys_sync`]).

use crate::fs::flush::sys_sync;
use crate::workload::ops::Ops;
use crate::workload::Action;

/// The one call at `stage` 0; false after it.
pub(crate) fn refill(o: &mut Ops, stage: u32) -> bool {
    if stage > 0 {
        return false;
    }
    o.push(|cx| Some(Action::Syscall(sys_sync(cx.st.kthreads.kjournald))));
    true
}
