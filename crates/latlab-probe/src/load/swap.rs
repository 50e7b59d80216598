//! `swap:SIZE`: memory pressure that forces the kernel to swap. The child maps
//! MemAvailable + min(SIZE, SwapFree)/2 bytes of anonymous memory and keeps writing every page
//! in turn, so about SIZE/2 must live in swap at any time and every pass swaps pages in and out.
//! Each page gets 1 KiB of pseudo-random data (the rest stays zero) so zram compresses it
//! about 4:1 instead of storing it for free or not at all. The load counts as started once the
//! kernel swaps out (`pswpout` in /proc/vmstat grows), which takes a first pass over
//! MemAvailable. Counters: `pages_touched`, `system_pages_swapped_out` (machine-wide pswpout
//! since the child started).

use super::counters::Counters;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Pages between counter updates and stop checks.
const BATCH: usize = 256;
/// How often to look at /proc/vmstat.
const CHECK_SWAP_EVERY: Duration = Duration::from_millis(100);

/// Value of a `/proc/meminfo` field, in bytes.
pub fn meminfo_bytes(meminfo: &str, field: &str) -> Option<u64> {
    meminfo.lines().find_map(|l| {
        let rest = l.strip_prefix(field)?.strip_prefix(':')?;
        let kb: u64 = rest.trim().trim_end_matches("kB").trim().parse().ok()?;
        Some(kb * 1024)
    })
}

/// How much to map for `swap:<spec_bytes>`: MemAvailable + min(spec, SwapFree)/2.
pub fn map_bytes(spec_bytes: u64, meminfo: &str) -> Result<u64, String> {
    let avail = meminfo_bytes(meminfo, "MemAvailable").ok_or("no MemAvailable in /proc/meminfo")?;
    let free = meminfo_bytes(meminfo, "SwapFree").unwrap_or(0);
    if free == 0 {
        return Err("no free swap".into());
    }
    Ok(avail + spec_bytes.min(free) / 2)
}

/// Pages swapped out since boot (`pswpout` in /proc/vmstat), machine-wide.
fn pswpout() -> u64 {
    std::fs::read_to_string("/proc/vmstat")
        .ok()
        .and_then(|v| v.lines().find_map(|l| l.strip_prefix("pswpout ")?.trim().parse().ok()))
        .unwrap_or(0)
}

/// Make this process the OOM killer's first choice, so a misjudged size kills the load only.
pub fn prefer_oom_kill() {
    let _ = std::fs::write("/proc/self/oom_score_adj", "1000");
}

/// Touch every page of a `bytes` anonymous mapping, round and round, until `stop`.
pub fn run(_dir: &Path, stop: &AtomicBool, counters: &Counters, bytes: u64) -> std::io::Result<()> {
    counters.add("pages_touched", 0);
    counters.add("system_pages_swapped_out", 0);
    let swapped_before = pswpout();
    let mut checked = Instant::now();
    // SAFETY: sysconf has no memory-safety preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as usize;
    let len = (bytes as usize).max(page) / page * page;
    // SAFETY: a fresh private anonymous mapping; nothing else refers to it.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(std::io::Error::last_os_error());
    }
    let base = p as *mut u64;
    let words_per_page = page / 8;
    let pages = len / page;
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut i = 0usize;
    while !stop.load(Ordering::Relaxed) {
        for _ in 0..BATCH {
            // SAFETY: i < pages, so the 128 words at i * words_per_page lie inside the mapping.
            let pg = unsafe { base.add(i * words_per_page) };
            for w in 0..128 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                // SAFETY: see above; 128 words = 1 KiB <= one page.
                unsafe { pg.add(w).write_volatile(x) };
            }
            i = (i + 1) % pages;
        }
        counters.add("pages_touched", BATCH as u64);
        if checked.elapsed() >= CHECK_SWAP_EVERY {
            checked = Instant::now();
            let swapped = pswpout().saturating_sub(swapped_before);
            counters.set("system_pages_swapped_out", swapped);
            if swapped > 0 {
                counters.ready();
            }
        }
    }
    // SAFETY: unmapping exactly the mapping made above.
    unsafe { libc::munmap(p, len) };
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::testutil::run_for;

    const MEMINFO: &str = "MemTotal:       24000000 kB\nMemAvailable:   20000000 kB\n\
                           SwapTotal:       4194304 kB\nSwapFree:        1048576 kB\n";

    #[test]
    fn sizes_the_mapping_from_meminfo() {
        assert_eq!(meminfo_bytes(MEMINFO, "MemAvailable"), Some(20_000_000 * 1024));
        assert_eq!(meminfo_bytes(MEMINFO, "Mem"), None);
        // SIZE below SwapFree: half of SIZE beyond MemAvailable.
        assert_eq!(map_bytes(512 << 20, MEMINFO), Ok(20_000_000 * 1024 + (256 << 20)));
        // SIZE above SwapFree: capped at half of SwapFree.
        assert_eq!(map_bytes(8 << 30, MEMINFO), Ok(20_000_000 * 1024 + (512 << 20)));
        let no_swap = "MemAvailable: 1000 kB\nSwapTotal: 0 kB\nSwapFree: 0 kB\n";
        assert_eq!(map_bytes(1 << 30, no_swap), Err("no free swap".to_string()));
    }

    #[test]
    fn touches_pages() {
        let (_tmp, c, _) = run_for("swap", Duration::from_millis(300), |d, s, c| run(d, s, c, 32 << 20));
        assert!(c.get("pages_touched") >= BATCH as u64);
        assert!(pswpout() >= c.get("system_pages_swapped_out"));
    }
}
