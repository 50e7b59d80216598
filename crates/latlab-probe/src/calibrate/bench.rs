//! Micro-benchmarks: each returns one run's cost per operation in ns (or a rate), so a
//! caller repeats it for a median and spread ([`super::stats::Stat::repeat`]).

use std::io::{Read, Write};
use std::time::Instant;

fn per_op_ns(iters: u64, f: impl FnMut()) -> f64 {
    let mut f = f;
    let t = Instant::now();
    for _ in 0..iters {
        f();
    }
    t.elapsed().as_nanos() as f64 / iters as f64
}

/// A system call that does nothing: `getppid` by number (glibc caches nothing of it).
pub fn syscall_ns(iters: u64) -> f64 {
    // SAFETY: getppid takes no arguments and cannot fail.
    per_op_ns(iters, || unsafe {
        libc::syscall(libc::SYS_getppid);
    })
}

/// `sched_yield` with no other task to switch to on the CPU: schedule()'s fixed part and a
/// system call.
pub fn sched_yield_ns(iters: u64) -> f64 {
    // SAFETY: sched_yield has no preconditions.
    per_op_ns(iters, || unsafe {
        libc::sched_yield();
    })
}

/// `f` in a new thread pinned to `cpu` (so the caller's affinity stays as it is).
fn on_cpu<T: Send>(cpu: usize, f: impl FnOnce() -> T + Send) -> Result<T, String> {
    std::thread::scope(|s| {
        s.spawn(|| {
            crate::caps::pin_to(cpu)?;
            Ok(f())
        })
        .join()
        .map_err(|_| "benchmark thread panicked".to_string())?
    })
}

/// A pipe pair's round trip between two threads pinned to `cpu` (two context switches, two
/// writes, two reads) and, apart, a write and a read of one byte in one thread (the pipe's
/// own cost): the time of one switch is `(round trip - 2 * write+read) / 2`, as lmbench's
/// `lat_ctx` takes the pipe's cost off.
pub fn pipe_switch_ns(cpu: usize, iters: u64) -> Result<f64, String> {
    let (mut a_r, mut a_w) = std::io::pipe().map_err(|e| format!("pipe: {e}"))?;
    let (mut b_r, mut b_w) = std::io::pipe().map_err(|e| format!("pipe: {e}"))?;
    let overhead = on_cpu(cpu, || {
        let mut byte = [0u8];
        per_op_ns(iters, || {
            let _ = a_w.write_all(&byte);
            let _ = a_r.read_exact(&mut byte);
        })
    })?;
    let round_trip = std::thread::scope(|s| {
        let echo = s.spawn(|| -> Result<(), String> {
            crate::caps::pin_to(cpu)?;
            let mut byte = [0u8];
            for _ in 0..iters {
                a_r.read_exact(&mut byte).map_err(|e| e.to_string())?;
                b_w.write_all(&byte).map_err(|e| e.to_string())?;
            }
            Ok(())
        });
        let ping = s.spawn(|| -> Result<f64, String> {
            crate::caps::pin_to(cpu)?;
            let mut byte = [0u8];
            let t = Instant::now();
            for _ in 0..iters {
                a_w.write_all(&byte).map_err(|e| e.to_string())?;
                b_r.read_exact(&mut byte).map_err(|e| e.to_string())?;
            }
            Ok(t.elapsed().as_nanos() as f64 / iters as f64)
        });
        let rt = ping.join().map_err(|_| "ping thread panicked".to_string())?;
        echo.join().map_err(|_| "echo thread panicked".to_string())??;
        rt
    })?;
    Ok(((round_trip - 2.0 * overhead) / 2.0).max(1.0))
}

/// fork + exec of `/bin/true` to its exit (`std::process::Command`: posix_spawn, or
/// fork and exec, then waitpid).
pub fn fork_exec_ns(iters: u64) -> Result<f64, String> {
    let t = Instant::now();
    for _ in 0..iters {
        let st = std::process::Command::new("/bin/true")
            .stdin(std::process::Stdio::null())
            .status()
            .map_err(|e| format!("/bin/true: {e}"))?;
        if !st.success() {
            return Err(format!("/bin/true: {st}"));
        }
    }
    Ok(t.elapsed().as_nanos() as f64 / iters as f64)
}

/// A minor fault on a fresh anonymous page: `pages` pages mapped (no huge pages), each
/// written once, the time divided by the pages.
pub fn page_fault_ns(pages: usize) -> Result<f64, String> {
    let page = 4096usize;
    let len = pages * page;
    let map = AnonMap::new(len, libc::MADV_NOHUGEPAGE)?;
    let base = map.ptr.cast::<u8>();
    let t = Instant::now();
    for i in 0..pages {
        // SAFETY: i * page < len, inside the mapping.
        unsafe { base.add(i * page).write_volatile(1) };
    }
    Ok(t.elapsed().as_nanos() as f64 / pages as f64)
}

/// A thread created and joined (`pthread_create`, its exit, `pthread_join`).
pub fn thread_create_exit_ns(iters: u64) -> Result<f64, String> {
    let t = Instant::now();
    for _ in 0..iters {
        std::thread::spawn(|| {})
            .join()
            .map_err(|_| "empty thread panicked".to_string())?;
    }
    Ok(t.elapsed().as_nanos() as f64 / iters as f64)
}

extern "C" fn on_signal(_: libc::c_int) {}

/// A signal caught by a handler: `raise(SIGUSR1)` (tgkill), the handler's entry and
/// `sigreturn`, as lmbench's `lat_sig catch`; the system call's own cost is in it.
pub fn signal_ns(iters: u64) -> Result<f64, String> {
    // SAFETY: the sigaction structs are zeroed and filled; the previous handler is put back
    // before returning, and the handler does nothing.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_signal as *const () as usize;
        libc::sigemptyset(&mut sa.sa_mask);
        let mut old: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(libc::SIGUSR1, &sa, &mut old) != 0 {
            return Err(format!("sigaction(SIGUSR1): {}", std::io::Error::last_os_error()));
        }
        let ns = per_op_ns(iters, || {
            libc::raise(libc::SIGUSR1);
        });
        libc::sigaction(libc::SIGUSR1, &old, std::ptr::null_mut());
        Ok(ns)
    }
}

/// A load that misses every cache: a pointer chase through a random cycle over `bytes`
/// (one pointer per 64-byte line, Sattolo's shuffle), as lmbench's `lat_mem_rd` at a large
/// size; the buffer in huge pages where the kernel gives them (MADV_HUGEPAGE), as the
/// kernel's own memory is mapped, so few of the loads also miss the TLB.
pub fn mem_latency_ns(bytes: usize, loads: u64) -> Result<f64, String> {
    const LINE: usize = 8; // usizes per 64-byte line
    let lines = (bytes / 64).max(2);
    let len = lines * 64;
    // A refusal of huge pages (no THP) leaves small pages.
    let map = AnonMap::new(len, libc::MADV_HUGEPAGE)?;
    // SAFETY: the mapping is `len` bytes of zeroed, writable, usize-aligned memory, used only
    // through this slice, which does not outlive `map`.
    let next = unsafe { std::slice::from_raw_parts_mut(map.ptr.cast::<usize>(), lines * LINE) };
    let mut order: Vec<usize> = (0..lines).collect();
    let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ crate::clock::mono_ns();
    for i in (1..lines).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let j = (x % i as u64) as usize;
        order.swap(i, j);
    }
    for w in 0..lines {
        next[order[w] * LINE] = order[(w + 1) % lines] * LINE;
    }
    drop(order);
    let mut at = 0usize;
    let t = Instant::now();
    for _ in 0..loads {
        at = next[at];
    }
    let ns = t.elapsed().as_nanos() as f64 / loads as f64;
    std::hint::black_box(at);
    Ok(ns)
}

/// An anonymous private read-write mapping of `len` bytes, with `madvise` advice (a refusal
/// changes nothing), unmapped when dropped.
struct AnonMap {
    ptr: *mut libc::c_void,
    len: usize,
}

impl AnonMap {
    fn new(len: usize, advice: libc::c_int) -> Result<AnonMap, String> {
        // SAFETY: an anonymous private mapping, unmapped on drop; no file, no fixed address.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(format!("mmap of {len} bytes: {}", std::io::Error::last_os_error()));
        }
        // SAFETY: the range is the mapping just made.
        unsafe { libc::madvise(ptr, len, advice) };
        Ok(AnonMap { ptr, len })
    }
}

impl Drop for AnonMap {
    fn drop(&mut self) {
        // SAFETY: the mapping `new` made, not used after.
        unsafe { libc::munmap(self.ptr, self.len) };
    }
}

/// Copies of 4 KiB pages from a `bytes` buffer (larger than the caches) into one page, MB/s:
/// the memory's copy rate, as the kernel's copy_to_user of a page cache page meets it.
pub fn page_copy_mb_s(bytes: usize) -> f64 {
    let src = vec![1u8; bytes.max(8192)];
    let mut dst = [0u8; 4096];
    let t = Instant::now();
    for page in src.chunks_exact(4096) {
        dst.copy_from_slice(page);
        std::hint::black_box(&mut dst);
    }
    let copied = (src.len() / 4096 * 4096) as f64;
    copied / t.elapsed().as_nanos().max(1) as f64 * 1000.0
}

/// A busy loop's rate (thousands of iterations per ms) over `ms` on the calling thread's CPU.
pub fn spin_rate(ms: u64) -> f64 {
    let end = Instant::now() + std::time::Duration::from_millis(ms);
    let mut n = 0u64;
    let mut x = 1u64;
    while Instant::now() < end {
        for _ in 0..1000 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
        n += 1;
    }
    std::hint::black_box(x);
    n as f64 / ms as f64
}

/// The share of its speed CPU `a` keeps while CPU `b` runs a busy loop: the rate of a busy
/// loop on `a` beside one on `b`, over its rate alone.
pub fn sibling_speed(a: usize, b: usize, ms: u64) -> Result<f64, String> {
    let alone = on_cpu(a, || spin_rate(ms))?;
    let stop = std::sync::atomic::AtomicBool::new(false);
    let beside = std::thread::scope(|s| {
        s.spawn(|| {
            if crate::caps::pin_to(b).is_ok() {
                let mut x = 1u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
                }
            }
        });
        let r = on_cpu(a, || spin_rate(ms));
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        r
    })?;
    Ok((beside / alone).clamp(0.05, 1.0))
}

/// Bytes sent over a loopback TCP connection, MB/s.
pub fn loopback_mb_s(bytes: usize) -> Result<f64, String> {
    use std::net::{TcpListener, TcpStream};
    let l = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("bind 127.0.0.1: {e}"))?;
    let addr = l.local_addr().map_err(|e| e.to_string())?;
    let reader = std::thread::spawn(move || -> std::io::Result<usize> {
        let (mut s, _) = l.accept()?;
        let mut buf = vec![0u8; 1 << 16];
        let mut total = 0;
        loop {
            match s.read(&mut buf)? {
                0 => return Ok(total),
                n => total += n,
            }
        }
    });
    let chunk = vec![7u8; 1 << 16];
    let t = Instant::now();
    {
        let mut s = TcpStream::connect(addr).map_err(|e| format!("connect {addr}: {e}"))?;
        let mut left = bytes;
        while left > 0 {
            let n = left.min(chunk.len());
            s.write_all(&chunk[..n]).map_err(|e| e.to_string())?;
            left -= n;
        }
    }
    let got = reader
        .join()
        .map_err(|_| "loopback reader panicked".to_string())?
        .map_err(|e| e.to_string())?;
    let ns = t.elapsed().as_nanos().max(1) as f64;
    if got != bytes {
        return Err(format!("loopback: {got} of {bytes} bytes arrived"));
    }
    Ok(bytes as f64 / ns * 1000.0)
}
