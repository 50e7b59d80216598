//! `dd:SIZE`: a streaming writer. Writes a SIZE file in 1 MiB write(2)s, fsyncs it, unlinks it
//! and starts over, like `dd if=/dev/zero of=f bs=1M count=N conv=fsync` in a loop.
//! Counter: `bytes_written`.

use super::counters::Counters;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

/// The size of one write(2).
const CHUNK: usize = 1 << 20;

/// Write, fsync and unlink a `bytes` file in `dir` until `stop`.
pub fn run(dir: &Path, stop: &AtomicBool, counters: &Counters, bytes: u64) -> std::io::Result<()> {
    counters.add("bytes_written", 0);
    // Not zeros: some file systems compress or skip zero pages.
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let buf: Vec<u8> = (0..CHUNK).map(|_| super::xorshift64(&mut x) as u8).collect();
    let path = dir.join("dd.bin");
    let r = (|| {
        while !stop.load(Ordering::Relaxed) {
            let mut f = std::fs::File::create(&path)?;
            let mut done = 0u64;
            while done < bytes && !stop.load(Ordering::Relaxed) {
                let n = (bytes - done).min(CHUNK as u64) as usize;
                f.write_all(&buf[..n])?;
                done += n as u64;
                counters.add("bytes_written", n as u64);
                counters.ready();
            }
            if done == bytes {
                f.sync_all()?;
            }
            drop(f);
            std::fs::remove_file(&path)?;
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
    use std::time::Duration;

    #[test]
    fn writes_and_removes_its_file() {
        let (tmp, c, _) = run_for("dd", Duration::from_millis(500), |d, s, c| run(d, s, c, 4 << 20));
        assert!(c.get("bytes_written") >= 1 << 20, "{}", c.get("bytes_written"));
        assert!(!tmp.work().join("dd.bin").exists());
        let m = crate::load::counters::read_counters(&tmp.0);
        assert_eq!(m.get("bytes_written"), Some(&c.get("bytes_written")));
    }
}
