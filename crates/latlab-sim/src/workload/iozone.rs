//! `iozone -i 0 -r RECORD -s SIZE -Q`, seed 001's benchmark, as iozone 3.222's
//! `write_perf_test` runs it: a write pass that creates the file and writes it one record
//! per `write()`, then a rewrite pass over the same file from offset 0. With `-Q` each
//! `write()` is timed on its own (`gettimeofday` just before and after; the `lseek` that
//! records the offset is outside), one line per record in `wol.dat` / `rwol.dat`
//! ([`crate::measure::write_latency`] keeps them as the `write` stream). Each pass's
//! throughput is timed over its record loop only: the `fsync` and `close` after it (iozone
//! without `-e`/`-c`) are not, so the rewrite starts with the file clean.
//!
//! Under 2.4's writeback (`bdflush-2.4`) the rewrite pass is not yet right: `sys_rewrite`
//! takes a rewritten page to be one of the file's still-dirty ones first (made for dbench's
//! scattered rewrites), so after the first record of a sequential rewrite every later page
//! counts as already dirty and dirties no buffer. Counting the dirty buffers that lie in the
//! rewritten range instead moves seed 000's figures (stock 88.5 -> 138 ms) and waits on
//! its own study; seed 001's kernels (2.6.17's page-based writeback) track pages.

use super::ops::{Ops, Reg};
use super::{Action, ProgCx};
use crate::measure::write_latency::{IoOp, Pass};
use crate::measure::Mark;
use crate::workload::syscall::Syscall;

/// The registry group holding the test file.
const GROUP: &str = "iozone";
/// Records queued per refill, so a 1 GB file does not queue 2^18 closures at once.
const BATCH: u64 = 1024;

/// Queue iozone's next batch of work at `stage` (0, 1, 2, ...); false when it is done.
pub(crate) fn refill(o: &mut Ops, reg: &Reg, stage: u32, file_mb: u64, record_kb: u64) -> bool {
    let records = file_mb * 1024 / record_kb;
    let batches = records.div_ceil(BATCH);
    let stage = u64::from(stage);
    if stage == 0 {
        // The record buffer, then creat() (the file's blocks reserved as it is written).
        o.grow(record_kb / 4 + crate::workload::ops::PROGRAM_PAGES);
        o.create(reg, GROUP, file_mb * 256);
        return true;
    }
    // Stages 1..=batches: the write pass; then its untimed fsync and close; then the
    // rewrite pass; then its fsync and close.
    let (pass, batch) = match stage - 1 {
        s if s < batches => (Pass::Write, s),
        s if s == batches => return sync(o),
        s if s <= 2 * batches => (Pass::Rewrite, s - batches - 1),
        s if s == 2 * batches + 1 => return sync(o),
        _ => return false,
    };
    let Some(&file) = reg.borrow().get(GROUP).first() else {
        return false;
    };
    let bytes = record_kb * 1024;
    for rec in batch * BATCH..((batch + 1) * BATCH).min(records) {
        timed(o, pass, IoOp::Write, rec * record_kb, bytes, move |_| match pass {
            Pass::Write => Syscall::Write { file, bytes },
            _ => Syscall::Rewrite {
                file,
                page: rec * record_kb / 4,
                bytes,
            },
        });
    }
    true
}

/// A call of `pass` timed on its own (a `gettimeofday` on either side in the benchmark):
/// the [`Mark::IoStart`] and the system call, then the [`Mark::IoDone`] once it returned
/// having moved `bytes` at `offset_kb`. iozone's and sysbench's timed calls alike.
pub(crate) fn timed(
    o: &mut Ops,
    pass: Pass,
    op: IoOp,
    offset_kb: u64,
    bytes: u64,
    call: impl FnOnce(&mut ProgCx) -> Syscall + 'static,
) {
    o.push(move |cx| {
        cx.marks.push(Mark::IoStart { pass });
        Some(Action::Call(call(cx)))
    });
    o.push(move |cx| {
        cx.marks.push(Mark::IoDone { offset_kb, bytes, op });
        None
    });
}

/// The untimed `fsync(fd); close(fd)` after a pass.
fn sync(o: &mut Ops) -> bool {
    o.call(Syscall::Fsync);
    true
}
