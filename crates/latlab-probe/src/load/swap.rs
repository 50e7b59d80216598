//! `swap:SIZE`: swap traffic, and the swap-slot allocation and page-fault paths behind it.
//!
//! Two ways to make it, chosen at start:
//! - **pageout** (Linux 5.4+): map min(SIZE, SwapFree/2) of anonymous memory and walk it in
//!   2 MiB chunks: dirty every page of a chunk (which first faults it back in from swap), then
//!   push the chunk out with `madvise(MADV_PAGEOUT)`. Each pass swaps SIZE out and in again,
//!   at once, whatever the machine's RAM (reclaim of a given range, without waiting for kswapd).
//! - **pressure** (when MADV_PAGEOUT is refused): overcommit RAM. Map MemAvailable +
//!   min(SIZE, SwapFree)/2 and keep writing every page in turn, so about SIZE/2 must live in swap
//!   and every pass swaps pages in and out through kswapd and direct reclaim; on a big machine
//!   this needs a first pass over MemAvailable before any swapping starts.
//!
//! Each page gets 1 KiB of pseudo-random data (the rest stays zero) so zram compresses it about
//! 4:1 instead of storing it for free or not at all. The load counts as started once the kernel
//! swaps out (`pswpout` in /proc/vmstat grows). Counters: `pages_touched`,
//! `system_pages_swapped_out` (machine-wide pswpout since the child started).

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

/// The two mapping sizes for `swap:<spec_bytes>`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sizes {
    /// Pageout mode: min(spec, SwapFree/2), so half the swap area stays free for others.
    pub pageout: u64,
    /// Pressure mode: MemAvailable + min(spec, SwapFree)/2.
    pub pressure: u64,
}

/// How much to map for `swap:<spec_bytes>`, from /proc/meminfo.
pub fn map_bytes(spec_bytes: u64, meminfo: &str) -> Result<Sizes, String> {
    let avail = meminfo_bytes(meminfo, "MemAvailable").ok_or("no MemAvailable in /proc/meminfo")?;
    let free = meminfo_bytes(meminfo, "SwapFree").unwrap_or(0);
    if free == 0 {
        return Err("no free swap".into());
    }
    Ok(Sizes {
        pageout: spec_bytes.min(free / 2),
        pressure: avail + spec_bytes.min(free) / 2,
    })
}

/// Pages per `MADV_PAGEOUT` chunk (2 MiB of 4 KiB pages).
const CHUNK_PAGES: usize = 512;

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

/// Make swap traffic of `sizes` until `stop`: pageout mode, or pressure mode if the kernel
/// refuses MADV_PAGEOUT.
pub fn run(_dir: &Path, stop: &AtomicBool, counters: &Counters, sizes: Sizes) -> std::io::Result<()> {
    counters.add("pages_touched", 0);
    counters.add("system_pages_swapped_out", 0);
    let pageout = Mapping::new(sizes.pageout)?;
    if pageout.page_out(0, 1).is_ok() {
        counters.note(&format!(
            "swap: pageout mode, {} MiB dirtied and pushed out with MADV_PAGEOUT per pass",
            sizes.pageout >> 20
        ));
        return pageout.churn(stop, counters, true);
    }
    drop(pageout);
    counters.note(&format!(
        "swap: MADV_PAGEOUT refused ({}), so pressure mode: {} MiB mapped against MemAvailable",
        std::io::Error::last_os_error(),
        sizes.pressure >> 20
    ));
    Mapping::new(sizes.pressure)?.churn(stop, counters, false)
}

/// A private anonymous mapping, unmapped on drop.
struct Mapping {
    base: *mut u64,
    len: usize,
    page: usize,
}

impl Mapping {
    fn new(bytes: u64) -> std::io::Result<Mapping> {
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
        Ok(Mapping {
            base: p as *mut u64,
            len,
            page,
        })
    }

    fn pages(&self) -> usize {
        self.len / self.page
    }

    /// `madvise(MADV_PAGEOUT)` on pages `first..first + n` (clipped to the mapping).
    fn page_out(&self, first: usize, n: usize) -> Result<(), ()> {
        let n = n.min(self.pages().saturating_sub(first));
        // SAFETY: the range lies inside the mapping; MADV_PAGEOUT only changes residency.
        let r = unsafe {
            libc::madvise(
                self.base.cast::<u8>().add(first * self.page).cast(),
                n * self.page,
                libc::MADV_PAGEOUT,
            )
        };
        if r == 0 {
            Ok(())
        } else {
            Err(())
        }
    }

    /// Write 1 KiB of xorshift data into page `i`.
    fn dirty(&self, i: usize, x: &mut u64) {
        let words_per_page = self.page / 8;
        // SAFETY: i < pages, so the 128 words at i * words_per_page lie inside the mapping.
        let pg = unsafe { self.base.add(i * words_per_page) };
        for w in 0..128 {
            let v = super::xorshift64(x);
            // SAFETY: see above; 128 words = 1 KiB <= one page.
            unsafe { pg.add(w).write_volatile(v) };
        }
    }

    /// Dirty every page in turn until `stop`; with `page_out`, push each finished chunk out.
    fn churn(&self, stop: &AtomicBool, counters: &Counters, page_out: bool) -> std::io::Result<()> {
        let swapped_before = pswpout();
        let mut checked = Instant::now();
        let pages = self.pages();
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut i = 0usize;
        while !stop.load(Ordering::Relaxed) {
            for _ in 0..BATCH {
                self.dirty(i, &mut x);
                i = (i + 1) % pages;
                if page_out && i.is_multiple_of(CHUNK_PAGES) {
                    let first = if i == 0 {
                        (pages - 1) / CHUNK_PAGES * CHUNK_PAGES
                    } else {
                        i - CHUNK_PAGES
                    };
                    // A refusal here leaves the chunk resident; the next pass tries again.
                    let _ = self.page_out(first, CHUNK_PAGES);
                }
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
        Ok(())
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly the mapping made in `new`.
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
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
        let s = map_bytes(512 << 20, MEMINFO).unwrap();
        assert_eq!(s.pressure, 20_000_000 * 1024 + (256 << 20));
        assert_eq!(s.pageout, 512 << 20);
        // SIZE above SwapFree: capped at half of SwapFree.
        let s = map_bytes(8 << 30, MEMINFO).unwrap();
        assert_eq!(s.pressure, 20_000_000 * 1024 + (512 << 20));
        assert_eq!(s.pageout, 512 << 20);
        let no_swap = "MemAvailable: 1000 kB\nSwapTotal: 0 kB\nSwapFree: 0 kB\n";
        assert_eq!(map_bytes(1 << 30, no_swap), Err("no free swap".to_string()));
    }

    #[test]
    fn touches_pages() {
        let (_tmp, c, _) = run_for("swap", Duration::from_millis(300), |d, s, c| {
            run(
                d,
                s,
                c,
                Sizes {
                    pageout: 32 << 20,
                    pressure: 32 << 20,
                },
            )
        });
        assert!(c.get("pages_touched") >= BATCH as u64);
        assert!(pswpout() >= c.get("system_pages_swapped_out"));
    }
}
