//! `cvs co` over the network (seed 000's script: dbench's ~30 sources): per file, its bytes
//! over the network, cvs's own work (~2 ms), then `creat()` and 8 KiB `write()`s.

use crate::workload::ops::{Ops, Reg};

/// Every file at `stage` 0; false when it is done.
pub(crate) fn refill(o: &mut Ops, reg: &Reg, stage: u32, files: u32, kb: u64, group: String) -> bool {
    if stage > 0 {
        return false;
    }
    o.grow(500);
    let g: &'static str = Box::leak(group.into_boxed_str());
    for _ in 0..files {
        o.net(kb * 1024);
        o.compute(2_000_000);
        o.create_write(reg, g, kb * 1024, 8 * 1024);
    }
    true
}
