//! A memory hog of the Cerberus kind (VA ctcs's memory testers): anonymous memory allocated
//! in 4 MiB steps, touched as it grows, then touched whole again pass after pass, ~1 s of CPU
//! a pass.

use crate::workload::ops::Ops;
use crate::workload::Action;

/// The allocation at `stage` 0, then a pass a stage; false after `passes`.
pub(crate) fn refill(o: &mut Ops, stage: u32, mb: u64, passes: u32) -> bool {
    if stage == 0 {
        // Allocate in 4 MiB steps (page faults), touching as it goes.
        for _ in 0..mb / 4 {
            o.grow(1024);
            o.compute(20_000_000);
        }
        return true;
    }
    if stage > passes {
        return false;
    }
    o.push(|cx| {
        cx.st.mm.reference(cx.mm);
        Some(Action::Compute(1_000_000_000))
    });
    true
}
