//! `sync`: dirties 8 MiB of page cache, calls sync(2) (which writes back every dirty page on the
//! machine), sleeps 200 ms and repeats. Counter: `syncs`.

use super::counters::Counters;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Dirty data written before each sync.
const DIRTY: usize = 8 << 20;

/// Dirty, sync, sleep until `stop`.
pub fn run(dir: &Path, stop: &AtomicBool, counters: &Counters) -> std::io::Result<()> {
    counters.add("syncs", 0);
    let path = dir.join("dirty.bin");
    let mut chunk = vec![0u8; 1 << 20];
    let r = (|| {
        let mut round = 0u8;
        while !stop.load(Ordering::Relaxed) {
            round = round.wrapping_add(1);
            chunk.iter_mut().enumerate().for_each(|(i, b)| *b = (i as u8) ^ round);
            let mut f = std::fs::File::create(&path)?;
            for _ in 0..DIRTY / chunk.len() {
                f.write_all(&chunk)?;
            }
            drop(f);
            counters.ready();
            // SAFETY: sync(2) takes no arguments and cannot fail.
            unsafe { libc::sync() };
            counters.add("syncs", 1);
            for _ in 0..10 {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        Ok(())
    })();
    let _ = std::fs::remove_file(&path);
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::testutil::run_for;

    #[test]
    fn syncs_repeatedly() {
        let (tmp, c, _) = run_for("sync", Duration::from_millis(500), run);
        assert!(c.get("syncs") >= 1);
        assert!(!tmp.work().join("dirty.bin").exists());
    }
}
