//! `dd if=/dev/zero of=FILE bs=BS count=N` (GNU fileutils' dd of the era): a read of
//! /dev/zero (2.4 drivers/char/mem.c `read_zero`: clear_user page by page) and a write of the
//! block to a new file, N times.

use crate::workload::ops::{Ops, Reg, PROGRAM_PAGES};
use crate::workload::syscall::Syscall;
use crate::workload::Action;

/// Queue the command's work (one batch: `stage` 0); false when it is done.
pub(crate) fn refill(o: &mut Ops, reg: &Reg, stage: u32, mb: u64, bs_kb: u64, group: String) -> bool {
    if stage > 0 {
        return false;
    }
    o.grow(bs_kb / 4 + PROGRAM_PAGES);
    let g: &'static str = Box::leak(group.into_boxed_str());
    let cur = o.create(reg, g, mb * 256);
    for _ in 0..mb * 1024 / bs_kb {
        o.call(Syscall::ReadZero { bytes: bs_kb * 1024 });
        let c = cur.clone();
        o.push(move |_| {
            Some(Action::Call(Syscall::Write {
                file: c.get(),
                bytes: bs_kb * 1024,
            }))
        });
    }
    true
}
