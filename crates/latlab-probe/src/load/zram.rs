//! A temporary zram swap device for `swap:SIZE` on a machine without swap (`--zram`, root):
//! `modprobe zram` if needed, `zramctl --find --size SIZE`, `mkswap`, `swapon` at the highest
//! priority; torn down with `swapoff` and `zramctl --reset` once the load child is gone.

use std::path::Path;
use std::process::{Command, Stdio};

/// Swap space configured on the machine, from `/proc/meminfo`.
pub fn swap_total() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| super::swap::meminfo_bytes(&m, "SwapTotal"))
        .unwrap_or(0)
}

use crate::guard::Held;

/// An active zram swap device.
#[derive(Debug)]
pub struct Zram {
    dev: String,
    /// Until it is dropped: the guardian tears the device down if the probe dies first.
    _held: Held,
}

fn run(prog: &str, args: &[&str]) -> Result<String, String> {
    let out = Command::new(prog)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{prog}: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        let err = String::from_utf8_lossy(&out.stderr);
        Err(format!("{prog} {}: {} ({})", args.join(" "), err.trim(), out.status))
    }
}

impl Zram {
    /// Create, format and enable a `bytes` zram swap device.
    pub fn create(bytes: u64) -> Result<Zram, String> {
        if !Path::new("/sys/class/zram-control").exists() {
            run("modprobe", &["zram"])?;
        }
        let dev = run("zramctl", &["--find", "--size", &bytes.to_string()])?
            .trim()
            .to_string();
        if !dev.starts_with("/dev/") {
            return Err(format!("zramctl --find printed '{dev}', not a device"));
        }
        let z = Zram {
            _held: Held::zram(&dev),
            dev,
        };
        let on = run("mkswap", &[&z.dev]).and_then(|_| run("swapon", &["--priority", "32767", &z.dev]));
        match on {
            Ok(_) => Ok(z),
            Err(e) => {
                let _ = z.remove();
                Err(e)
            }
        }
    }

    /// The device path, e.g. `/dev/zram0`.
    pub fn dev(&self) -> &str {
        &self.dev
    }

    /// Disable and reset the device.
    pub fn remove(&self) -> Result<(), String> {
        teardown(&self.dev)
    }
}

/// `swapoff` and reset zram device `dev`; also what the guardian does with the device of a
/// killed probe ([`crate::guard`]).
pub(crate) fn teardown(dev: &str) -> Result<(), String> {
    let off = run("swapoff", &[dev]);
    let reset = run("zramctl", &["--reset", dev]);
    off.and(reset).map(|_| ())
}
