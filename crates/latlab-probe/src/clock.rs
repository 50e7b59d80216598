//! CLOCK_MONOTONIC in nanoseconds, without allocation.

/// Now on CLOCK_MONOTONIC, in ns.
pub fn mono_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: ts is a valid, writable timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

pub fn to_timespec(ns: u64) -> libc::timespec {
    libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    }
}

/// Sleep until `ns` on CLOCK_MONOTONIC (TIMER_ABSTIME). Returns false if interrupted by a signal.
pub fn sleep_until(ns: u64) -> bool {
    let ts = to_timespec(ns);
    // SAFETY: ts is valid; remain may be null with TIMER_ABSTIME.
    let r = unsafe { libc::clock_nanosleep(libc::CLOCK_MONOTONIC, libc::TIMER_ABSTIME, &ts, std::ptr::null_mut()) };
    r == 0
}

/// The calling thread's kernel task id.
pub fn gettid() -> u32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::syscall(libc::SYS_gettid) as u32 }
}
