//! `dd if=/dev/zero of=FILE bs=BS count=N` (GNU fileutils' dd of the era): a read of
//! /dev/zero (2.4 drivers/char/mem.c `read_zero`: clear_user page by page) and a write of the
//! block to a new file, N times.

use crate::fs::ext3::sys_write;
use crate::kernel::catalog::Point;
use crate::kernel::path::{point, Ctx, LoopStep, Path, Step};
use crate::kernel::state::KState;
use crate::workload::ops::{Ops, Reg, PROGRAM_PAGES};
use crate::workload::Action;
use smallvec::smallvec;

/// Queue the command's work (one batch: `stage` 0); false when it is done.
pub(crate) fn refill(o: &mut Ops, reg: &Reg, stage: u32, mb: u64, bs_kb: u64, group: String) -> bool {
    if stage > 0 {
        return false;
    }
    o.grow(bs_kb / 4 + PROGRAM_PAGES);
    let g: &'static str = Box::leak(group.into_boxed_str());
    let cur = o.create(reg, g, mb * 256);
    for _ in 0..mb * 1024 / bs_kb {
        o.push(move |_| Some(Action::Syscall(read_zero(bs_kb * 1024))));
        let c = cur.clone();
        o.push(move |_| Some(Action::Syscall(sys_write(c.get(), bs_kb * 1024))));
    }
    true
}

/// read(/dev/zero) of `bytes`: clear_user page by page, with the stock need_resched check.
fn read_zero(bytes: u64) -> Box<dyn Path> {
    Box::new(ReadZero {
        pages: bytes.div_ceil(4096),
        done: false,
    })
}

struct ReadZero {
    pages: u64,
    done: bool,
}

impl Path for ReadZero {
    fn name(&self) -> &'static str {
        "read_zero"
    }
    fn next(&mut self, k: &mut KState, _cx: &Ctx) -> Step {
        if self.done {
            return Step::Done;
        }
        self.done = true;
        LoopStep::plain(
            "read_zero",
            self.pages,
            k.c.page_copy,
            smallvec![point(Point::ReadZero, 1)],
        )
    }
}
