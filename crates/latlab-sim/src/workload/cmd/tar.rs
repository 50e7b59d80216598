//! `tar xfz` of a tarball read over NFS (GNU tar 1.13 piping through gzip, seed 000's script:
//! the 2.4.10 tarball): per file, its share of the tarball over the network, gunzip's CPU,
//! then `creat()` and `write()`s of 10 KiB (tar's 20-block records).

use crate::workload::ops::{Ops, Reg};
use crate::workload::ProgCx;
use rand::Rng as _;

/// One file a stage (the first also grows tar's memory); false when all are out.
#[allow(clippy::too_many_arguments)]
pub(crate) fn refill(
    o: &mut Ops,
    reg: &Reg,
    stage: u32,
    cx: &mut ProgCx,
    files: u32,
    mean_kb: u64,
    tarball_mb: u64,
    gunzip_mb_s: u64,
    group: String,
) -> bool {
    if stage == 0 {
        o.grow(600);
    }
    if stage >= files {
        return false;
    }
    // Per file: its share of the tarball over NFS, gunzip, creat + write.
    let kb = (cx.rng.gen_range(0.0f64..1.0).powi(3) * 4.0 * mean_kb as f64) as u64 + 1;
    o.net(tarball_mb * 1024 * 1024 / files as u64);
    o.compute(kb * 1024 * 1000 / gunzip_mb_s);
    let g: &'static str = Box::leak(group.into_boxed_str());
    o.create_write(reg, g, kb * 1024, 10 * 1024);
    true
}
