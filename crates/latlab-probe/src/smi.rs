//! System Management Interrupts (`--smi`): firmware code the kernel cannot see or preempt,
//! a classic source of latency it cannot explain. Intel CPUs count them in `MSR_SMI_COUNT`
//! (0x34, Intel SDM vol. 4, "MSRs in processors based on Nehalem and later"), which the
//! kernel's msr driver exposes as 8 bytes at offset 0x34 of `/dev/cpu/N/msr` (root; `modprobe
//! msr`). The count is read on each CPU before and after the run; where it cannot be read,
//! [`SmiCount::start`] says why in words.

use std::os::unix::fs::FileExt;

/// The MSR holding the SMI count (Intel).
pub const MSR_SMI_COUNT: u64 = 0x34;

/// SMI counts at the start of a run, per CPU.
#[derive(Debug)]
pub struct SmiCount {
    start: Vec<(usize, u64)>,
}

/// `MSR_SMI_COUNT` of `cpu`.
fn read(cpu: usize) -> Result<u64, String> {
    let path = format!("/dev/cpu/{cpu}/msr");
    let f = std::fs::File::open(&path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => format!("{path} does not exist (the msr driver is not loaded: modprobe msr)"),
        std::io::ErrorKind::PermissionDenied => format!("{path}: permission denied (reading MSRs needs root)"),
        _ => format!("{path}: {e}"),
    })?;
    let mut b = [0u8; 8];
    f.read_exact_at(&mut b, MSR_SMI_COUNT).map_err(|e| {
        format!(
            "{path}: reading MSR_SMI_COUNT (0x34) failed ({e}): {} does not count SMIs there \
             (the MSR is Intel's; a hypervisor may not pass it through)",
            cpu_vendor()
        )
    })?;
    // The count is the low 32 bits.
    Ok(u64::from_le_bytes(b) & 0xffff_ffff)
}

/// The CPU's vendor as /proc/cpuinfo names it (`GenuineIntel`, `AuthenticAMD`).
fn cpu_vendor() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("vendor_id"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "this CPU".into())
}

impl SmiCount {
    /// Read the count on every CPU of `cpus`; an error says what is missing.
    pub fn start(cpus: &[usize]) -> Result<SmiCount, String> {
        let start = cpus.iter().map(|&c| Ok((c, read(c)?))).collect::<Result<_, String>>()?;
        Ok(SmiCount { start })
    }

    /// SMIs per CPU since [`SmiCount::start`] (the 32-bit counter may wrap once).
    pub fn finish(&self) -> Result<Vec<(usize, u64)>, String> {
        self.start
            .iter()
            .map(|&(c, s)| Ok((c, read(c)?.wrapping_sub(s) & 0xffff_ffff)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn says_what_is_missing_or_counts() {
        match SmiCount::start(&[0]) {
            Ok(c) => {
                let d = c.finish().unwrap();
                assert_eq!(d.len(), 1);
                assert_eq!(d[0].0, 0);
                eprintln!("SMIs counted on this machine: {d:?}");
            }
            Err(e) => {
                eprintln!("skip counting: {e}");
                assert!(e.starts_with("/dev/cpu/0/msr"), "{e}");
                assert!(
                    e.contains("modprobe msr") || e.contains("needs root") || e.contains("does not count SMIs"),
                    "{e}"
                );
            }
        }
        assert!(SmiCount::start(&[usize::MAX >> 1]).is_err());
    }
}
