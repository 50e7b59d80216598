//! The disk under the calibration's directory: buffered write rate, the rate to the media
//! (write and fsync), and the latency of one small synchronous write. Every file lives in a
//! private 0700 directory made in the directory (`latlab-calibrate-PID-XXXXXXXXXXXX`) and
//! removed with it; the guardian removes it should the probe die first.

use std::io::Write;
use std::path::Path;
use std::time::Instant;

/// One run's figures.
pub struct WriteRun {
    /// Buffered write(2) of the file, MB/s (into the page cache).
    pub buffered_mb_s: f64,
    /// The file's bytes over the write and its fsync, MB/s (to the device).
    pub synced_mb_s: f64,
}

/// The private directory the files are made in, removed on drop.
pub struct Scratch {
    pub dir: std::path::PathBuf,
    _held: crate::guard::Held,
}

impl Scratch {
    pub fn new(parent: &Path) -> Result<Scratch, String> {
        let prefix = format!("latlab-calibrate-{}-", std::process::id());
        let (dir, held) = crate::private::held_dir(parent, &prefix)
            .map_err(|e| format!("cannot make a private directory in {}: {e}", parent.display()))?;
        Ok(Scratch { dir, _held: held })
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn create(s: &Scratch, name: &str) -> Result<std::fs::File, String> {
    use std::os::unix::fs::OpenOptionsExt;
    let path = s.dir.join(name);
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&path)
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// `mib` MiB written in 1 MiB records, then fsync; the file removed after.
pub fn write_run(s: &Scratch, mib: usize) -> Result<WriteRun, String> {
    let mut f = create(s, "write")?;
    let _ = std::fs::remove_file(s.dir.join("write"));
    let record = vec![0x5au8; 1 << 20];
    let t = Instant::now();
    for _ in 0..mib {
        f.write_all(&record).map_err(|e| format!("write: {e}"))?;
    }
    let written = t.elapsed().as_nanos().max(1) as f64;
    f.sync_all().map_err(|e| format!("fsync: {e}"))?;
    let synced = t.elapsed().as_nanos().max(1) as f64;
    let bytes = (mib << 20) as f64;
    Ok(WriteRun {
        buffered_mb_s: bytes / written * 1000.0,
        synced_mb_s: bytes / synced * 1000.0,
    })
}

/// fsync(2) of one freshly written 4 KiB block, `runs` times, each in us.
pub fn fsync_us(s: &Scratch, runs: u32) -> Result<Vec<f64>, String> {
    use std::os::unix::fs::FileExt;
    let f = create(s, "fsync")?;
    let _ = std::fs::remove_file(s.dir.join("fsync"));
    let block = [0xa5u8; 4096];
    let mut out = Vec::new();
    for i in 0..runs {
        f.write_all_at(&block, u64::from(i) * 4096)
            .map_err(|e| format!("write: {e}"))?;
        let t = Instant::now();
        f.sync_all().map_err(|e| format!("fsync: {e}"))?;
        out.push(t.elapsed().as_nanos() as f64 / 1000.0);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn the_files_live_in_a_private_directory_that_goes_with_the_run() {
        let s = Scratch::new(&std::env::temp_dir()).unwrap();
        let dir = s.dir.clone();
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode();
        assert_eq!(mode & 0o077, 0);
        let r = write_run(&s, 1).unwrap();
        assert!(r.buffered_mb_s > 0.0 && r.synced_mb_s > 0.0);
        assert_eq!(fsync_us(&s, 2).unwrap().len(), 2);
        // Both files were unlinked as soon as they were made.
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
        drop(s);
        assert!(!dir.exists());
    }
}
