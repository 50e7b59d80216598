//! updatedb's walk of the whole filesystem (slocate's cron.daily job of the era): an
//! lstat() of every name, night after night ([`Syscall::LstatTree`]).

use crate::workload::ops::Ops;
use crate::workload::syscall::Syscall;

/// A chunk of names a stage keeps the queue short.
const CHUNK: u64 = 1024;

/// The next chunk of names of the current night; false when the last night is done.
pub(crate) fn refill(o: &mut Ops, stage: u32, files: u64, nights: u32) -> bool {
    if files == 0 {
        return false;
    }
    let chunks = files.div_ceil(CHUNK);
    let (night, chunk) = (u64::from(stage) / chunks, u64::from(stage) % chunks);
    if night >= u64::from(nights) {
        return false;
    }
    if chunk == 0 {
        o.grow(100);
    }
    for nth in chunk * CHUNK..((chunk + 1) * CHUNK).min(files) {
        o.call(Syscall::LstatTree {
            first_night: night == 0,
            nth,
        });
    }
    true
}
