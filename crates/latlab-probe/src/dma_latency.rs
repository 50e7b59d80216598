//! Hold `/dev/cpu_dma_latency` at 0 for the run: the PM QoS request lives as long as the file
//! descriptor is open, so dropping the guard (closing the fd) restores the previous setting,
//! also when the run ends early.

use std::fs::{File, OpenOptions};
use std::io::Write;

pub const PATH: &str = "/dev/cpu_dma_latency";

/// While alive, the kernel keeps CPUs out of C-states with exit latency above `us`.
pub struct DmaLatencyGuard {
    _f: File,
}

impl DmaLatencyGuard {
    pub fn hold(us: i32) -> Result<Self, String> {
        let mut f = OpenOptions::new()
            .read(true)
            .write(true)
            .open(PATH)
            .map_err(|e| format!("open {PATH}: {e}"))?;
        f.write_all(&us.to_ne_bytes())
            .map_err(|e| format!("write {PATH}: {e}"))?;
        Ok(DmaLatencyGuard { _f: f })
    }
}

/// The current value (us), if readable.
pub fn current() -> Option<i32> {
    let mut b = [0u8; 4];
    let mut f = File::open(PATH).ok()?;
    std::io::Read::read_exact(&mut f, &mut b).ok()?;
    Some(i32::from_ne_bytes(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Descriptors of this process on [`PATH`]. No other test of this crate opens it (their
    /// runs pass `dma_latency: false`), so the guard's is the only one there can be.
    fn own_descriptors() -> usize {
        std::fs::read_dir("/proc/self/fd")
            .unwrap()
            .flatten()
            .filter(|e| std::fs::read_link(e.path()).is_ok_and(|t| t == std::path::Path::new(PATH)))
            .count()
    }

    /// The request lives as long as the guard's descriptor: open while it is held, closed
    /// when it drops (what the probe controls; the machine-wide value is every process's).
    #[test]
    fn the_guard_closes_its_descriptor_when_dropped() {
        let guard = match DmaLatencyGuard::hold(0) {
            Ok(g) => g,
            Err(e) => {
                eprintln!("skip: cannot hold {PATH} here ({e}): needs root and the device");
                return;
            }
        };
        assert_eq!(own_descriptors(), 1);
        drop(guard);
        assert_eq!(own_descriptors(), 0);
    }
}
