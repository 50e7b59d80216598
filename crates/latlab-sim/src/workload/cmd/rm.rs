//! `rm -rf DIR` and `make clean` (GNU fileutils' rm, make's `clean` target): every file of a
//! group looked up and unlinked, with getdents and rm's own work once a directory block.

use crate::workload::ops::{Ops, Reg};

/// Delete every file of `group` (at `stage` 0); false when it is done.
pub(crate) fn refill(o: &mut Ops, reg: &Reg, stage: u32, group: &str) -> bool {
    if stage > 0 {
        return false;
    }
    let files = reg.borrow_mut().take(group);
    for (i, f) in files.into_iter().enumerate() {
        if i % 32 == 0 {
            // getdents of the next directory block and find/rm's own work.
            o.compute(200_000);
        }
        o.lookup(f);
        o.unlink(f);
    }
    true
}
