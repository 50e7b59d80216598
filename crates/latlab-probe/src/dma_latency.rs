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
