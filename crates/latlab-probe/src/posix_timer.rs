//! POSIX interval timers as seed 004's wakeup-latency test used them: `timer_create` on
//! CLOCK_MONOTONIC, armed with an absolute first expiry and a period, notifying either
//!
//! - `signal`: SIGEV_SIGNAL aimed at the measuring thread (Linux's `SIGEV_THREAD_ID` form, so
//!   each CPU's thread gets its own timer's signal), which waits in `sigwaitinfo`; or
//! - `thread`: SIGEV_THREAD, where glibc starts a new thread for every expiry and runs the
//!   notification function in it (glibc `sysdeps/unix/sysv/linux/timer_routines.c`). The
//!   new thread inherits the measuring thread's CPU and, when it could get it, its SCHED_FIFO
//!   priority, through the `pthread_attr_t` passed in `sigev_notify_attributes`.
//!
//! A sample is the time from the intended expiry to the notified code running. Expiries the
//! kernel folded into one notification (`timer_getoverrun`) are counted as missed events.

use crate::clock::{gettid, mono_ns, to_timespec};
use crate::signals;
use crate::timer::{run_periodic, PeriodicConfig, PeriodicOutcome, StreamNaming, ThreadCtx};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

/// Shortest period for SIGEV_THREAD: glibc creates one thread per expiry (40-50 us each on
/// the 2-vCPU KVM guest of BENCHMARKS.md, p50 of `probe posix-timer --notify thread`, plus the
/// thread's own run); at 200 us the CPU still has three quarters of each period to spare.
pub const MIN_THREAD_INTERVAL_NS: u64 = 200_000;

/// How the timer notifies its expiry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Notify {
    Signal,
    Thread,
}

impl Notify {
    pub fn parse(s: &str) -> Result<Notify, String> {
        match s {
            "signal" => Ok(Notify::Signal),
            "thread" => Ok(Notify::Thread),
            _ => Err(format!("'{s}' is not a notification kind (use signal or thread)")),
        }
    }

    pub fn sigev_name(self) -> &'static str {
        match self {
            Notify::Signal => "SIGEV_SIGNAL",
            Notify::Thread => "SIGEV_THREAD",
        }
    }

    /// The stream name the model gives this measurement, so `report compare` pairs a model
    /// run with a probe run: the probe's streams are this name with one CPU measured, and
    /// `NAME.cpuN` with several.
    pub fn stream_name(self) -> &'static str {
        match self {
            Notify::Signal => "posix_timer_signal",
            Notify::Thread => "posix_timer_thread",
        }
    }
}

/// Run the POSIX-timer probe: one timer and one measuring thread per CPU, streams named as
/// the model's ([`Notify::stream_name`]).
pub fn run(cfg: &PeriodicConfig, notify: Notify) -> PeriodicOutcome {
    let measures = format!("timer_create({}) expiry to notification", notify.sigev_name());
    let naming = StreamNaming::Model(notify.stream_name());
    run_periodic(cfg, naming, &measures, move |ctx| match notify {
        Notify::Signal => signal_loop(ctx, &mut || {}),
        Notify::Thread => thread_loop(ctx, None),
    })
}

/// The real-time signal the timers raise (blocked in the measuring thread, taken by sigwaitinfo).
fn timer_signal() -> libc::c_int {
    libc::SIGRTMIN() + 1
}

/// A kernel timer that is deleted when dropped.
struct PosixTimer(libc::timer_t);

impl PosixTimer {
    /// Create a CLOCK_MONOTONIC timer for `ev`.
    fn create(ev: &mut libc::sigevent) -> Result<PosixTimer, String> {
        let mut id: libc::timer_t = std::ptr::null_mut();
        // SAFETY: ev and id are valid for the call.
        if unsafe { libc::timer_create(libc::CLOCK_MONOTONIC, ev, &mut id) } != 0 {
            return Err(format!("timer_create: {}", std::io::Error::last_os_error()));
        }
        Ok(PosixTimer(id))
    }

    /// Create a timer for `ev` and arm it to expire every `interval_ns` from one interval on;
    /// returns it and its first expiry.
    fn start(ev: &mut libc::sigevent, interval_ns: u64) -> Result<(PosixTimer, u64), String> {
        let timer = PosixTimer::create(ev)?;
        let first = mono_ns() + interval_ns;
        timer.arm(first, interval_ns)?;
        Ok((timer, first))
    }

    /// Arm: first expiry at absolute `first_ns`, then every `interval_ns`.
    fn arm(&self, first_ns: u64, interval_ns: u64) -> Result<(), String> {
        let spec = libc::itimerspec {
            it_interval: to_timespec(interval_ns),
            it_value: to_timespec(first_ns),
        };
        // SAFETY: the timer id is live; spec is valid; old value may be null.
        if unsafe { libc::timer_settime(self.0, libc::TIMER_ABSTIME, &spec, std::ptr::null_mut()) } != 0 {
            return Err(format!("timer_settime: {}", std::io::Error::last_os_error()));
        }
        Ok(())
    }

    /// Expiries folded into the last notification.
    fn overrun(&self) -> u64 {
        // SAFETY: the timer id is live.
        unsafe { libc::timer_getoverrun(self.0) }.max(0) as u64
    }
}

impl Drop for PosixTimer {
    fn drop(&mut self) {
        // SAFETY: the id came from timer_create and is deleted once.
        unsafe { libc::timer_delete(self.0) };
    }
}

/// Block `sig` in the calling thread; returns the set holding it.
fn block_signal(sig: libc::c_int) -> libc::sigset_t {
    // SAFETY: set is initialised by sigemptyset before use.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, sig);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        set
    }
}

/// SIGEV_SIGNAL's measuring loop: a timer signalling the calling thread, taken by
/// `sigtimedwait`; each expiry recorded, its overruns counted as missed, then `after` runs (a
/// scenario's steps after each expiry); until [`ThreadCtx::finished`].
pub fn signal_loop(ctx: &mut ThreadCtx, after: &mut dyn FnMut()) {
    let sig = timer_signal();
    let set = block_signal(sig);
    // SAFETY: an all-zero sigevent is valid; the fields used are set below.
    let mut ev: libc::sigevent = unsafe { std::mem::zeroed() };
    ev.sigev_notify = libc::SIGEV_THREAD_ID;
    ev.sigev_signo = sig;
    ev.sigev_notify_thread_id = ctx.tid as libc::c_int;
    let interval = ctx.interval_ns;
    let (timer, mut next) = match PosixTimer::start(&mut ev, interval) {
        Ok(t) => t,
        Err(e) => return ctx.fail(e),
    };
    let wait = to_timespec(1_000_000_000);
    loop {
        // SAFETY: set and wait are valid; info may be null.
        let r = unsafe { libc::sigtimedwait(&set, std::ptr::null_mut(), &wait) };
        let now = mono_ns();
        if r == sig {
            let over = timer.overrun();
            ctx.record(next, now);
            ctx.missed(over);
            next += interval * (1 + over);
            after();
        }
        if ctx.finished(mono_ns()) {
            break;
        }
    }
}

/// What the glibc-started notification threads share with the measuring thread.
struct ThreadShared {
    timer: Mutex<Option<PosixTimer>>,
    /// (overrun, time the notification function started, its thread id)
    tx: Mutex<mpsc::Sender<(u64, u64, u32)>>,
    /// What each notification thread runs once it has sent its sample.
    after: Option<After>,
    /// Notification threads inside [`on_expiry`].
    running: std::sync::atomic::AtomicUsize,
}

/// A scenario's steps after each SIGEV_THREAD expiry, run in the notification thread.
pub type After = Arc<dyn Fn() + Send + Sync>;

// SAFETY: timer_t is a kernel id (a pointer-sized handle glibc owns); the timer calls made
// through it (timer_getoverrun, timer_delete) are thread-safe, and access goes through a Mutex.
unsafe impl Send for PosixTimer {}

extern "C" fn on_expiry(v: libc::sigval) {
    let now = mono_ns();
    // SAFETY: sival_ptr is the Arc<ThreadShared> pointer the measuring thread keeps alive
    // until after timer_delete plus a grace period, and then while `running` (see
    // thread_loop).
    let shared = unsafe { &*(v.sival_ptr as *const ThreadShared) };
    shared.running.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let over = shared
        .timer
        .lock()
        .ok()
        .and_then(|t| t.as_ref().map(PosixTimer::overrun))
        .unwrap_or(0);
    if let Ok(tx) = shared.tx.lock() {
        let _ = tx.send((over, now, gettid()));
    }
    if let Some(after) = &shared.after {
        after();
    }
    shared.running.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
}

/// glibc's sigevent with the SIGEV_THREAD union member (`_sigev_thread`), which the libc
/// crate does not expose: value, signo, notify, then function and attributes pointers,
/// padded to the kernel's 64-byte sigevent.
#[repr(C)]
struct SigEventThread {
    value: libc::sigval,
    signo: libc::c_int,
    notify: libc::c_int,
    function: extern "C" fn(libc::sigval),
    attributes: *mut libc::pthread_attr_t,
    _pad: [u64; 4],
}

const _: () = assert!(std::mem::size_of::<SigEventThread>() == std::mem::size_of::<libc::sigevent>());

/// Stack of a notification thread: the function only reads the clock and sends a message.
const NOTIFY_STACK: usize = 64 * 1024;

/// Attributes for glibc's notification threads: these CPUs, and the measuring thread's
/// SCHED_FIFO or SCHED_RR policy and priority when it got one, else SCHED_OTHER (so thread
/// creation cannot fail). Both are set, not inherited: glibc's helper thread, which creates
/// them, was started by whichever thread made the process's first SIGEV_THREAD timer, with
/// that thread's policy and CPUs (a scenario's tasks differ in both).
struct ThreadAttr(libc::pthread_attr_t);

impl ThreadAttr {
    fn new(cpus: &[usize], rt: Option<(libc::c_int, i32)>) -> ThreadAttr {
        // SAFETY: attr is initialised by pthread_attr_init before any other use; cpuset is
        // zeroed then filled by CPU_SET.
        unsafe {
            let mut attr: libc::pthread_attr_t = std::mem::zeroed();
            libc::pthread_attr_init(&mut attr);
            // The probe locks its memory (MCL_FUTURE), which populates every new thread's whole
            // stack: keep the per-expiry threads' stacks small.
            libc::pthread_attr_setstacksize(&mut attr, NOTIFY_STACK);
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            for &cpu in cpus {
                libc::CPU_SET(cpu, &mut set);
            }
            libc::pthread_attr_setaffinity_np(&mut attr, std::mem::size_of::<libc::cpu_set_t>(), &set);
            let (policy, p) = rt.unwrap_or((libc::SCHED_OTHER, 0));
            libc::pthread_attr_setinheritsched(&mut attr, libc::PTHREAD_EXPLICIT_SCHED);
            libc::pthread_attr_setschedpolicy(&mut attr, policy);
            let param = libc::sched_param { sched_priority: p };
            libc::pthread_attr_setschedparam(&mut attr, &param);
            ThreadAttr(attr)
        }
    }
}

impl Drop for ThreadAttr {
    fn drop(&mut self) {
        // SAFETY: initialised in new, destroyed once.
        unsafe { libc::pthread_attr_destroy(&mut self.0) };
    }
}

/// SIGEV_THREAD's measuring loop: glibc starts a thread per expiry, which takes the sample
/// (sent back to the calling thread, which records it and its overruns) and then runs
/// `after` (a scenario's steps); until [`ThreadCtx::finished`].
pub fn thread_loop(ctx: &mut ThreadCtx, after: Option<After>) {
    let (tx, rx) = mpsc::channel();
    let shared = Arc::new(ThreadShared {
        timer: Mutex::new(None),
        tx: Mutex::new(tx),
        after,
        running: Default::default(),
    });
    let cpus = match ctx.affinity.is_empty() {
        true => crate::parse::allowed_cpus(),
        false => ctx.affinity.clone(),
    };
    let mut attr = ThreadAttr::new(&cpus, current_rt_policy());
    let mut ev = SigEventThread {
        value: libc::sigval {
            sival_ptr: Arc::as_ptr(&shared) as *mut libc::c_void,
        },
        signo: 0,
        notify: libc::SIGEV_THREAD,
        function: on_expiry,
        attributes: &mut attr.0,
        _pad: [0; 4],
    };
    // SAFETY: SigEventThread has sigevent's size and glibc's layout for SIGEV_THREAD.
    let interval = ctx.interval_ns;
    let started = PosixTimer::start(
        unsafe { &mut *(&mut ev as *mut SigEventThread as *mut libc::sigevent) },
        interval,
    );
    let (timer, mut next) = match started {
        Ok(t) => t,
        Err(e) => return ctx.fail(e),
    };
    if let Ok(mut t) = shared.timer.lock() {
        *t = Some(timer);
    }
    loop {
        match rx.recv_timeout(Duration::from_secs(1)) {
            Ok((over, at, tid)) => {
                let back = periods_past(next, at, interval);
                next -= back * interval;
                ctx.missed_not(back);
                ctx.record_woken(next, at, tid);
                ctx.missed(over);
                next += interval * (1 + over);
                if ctx.finished(at) {
                    break;
                }
            }
            Err(_) if ctx.finished(mono_ns()) || signals::stop_requested() => break,
            Err(_) => {}
        }
    }
    if let Ok(mut t) = shared.timer.lock() {
        t.take();
    }
    // Notification threads already started may still run: let them finish before `shared`
    // (which they point to) is freed.
    std::thread::sleep(Duration::from_nanos(2 * interval).max(Duration::from_millis(20)));
    // ... and those still running their steps end.
    while shared.running.load(std::sync::atomic::Ordering::SeqCst) > 0 {
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// How many periods `next` (the expiry the next notification is paired with) ran past a
/// notification that came at `at`. glibc's helper thread starts a notification thread per
/// expiry signal, and each reads the timer's overrun count when it runs: when the helper
/// falls behind, two can read the same count, and `next` moves past expiries that did fire.
/// A notification never comes before its expiry, so one that would is paired with the latest
/// expiry at or before it (and the expiries skipped were not missed).
fn periods_past(next: u64, at: u64, interval: u64) -> u64 {
    if at < next {
        (next - at).div_ceil(interval.max(1))
    } else {
        0
    }
}

/// The calling thread's real-time policy (SCHED_FIFO or SCHED_RR) and priority, if it runs
/// one.
fn current_rt_policy() -> Option<(libc::c_int, i32)> {
    let mut policy = 0;
    // SAFETY: param and policy are valid out-parameters for the calling thread.
    unsafe {
        let mut param: libc::sched_param = std::mem::zeroed();
        if libc::pthread_getschedparam(libc::pthread_self(), &mut policy, &mut param) == 0
            && (policy == libc::SCHED_FIFO || policy == libc::SCHED_RR)
        {
            return Some((policy, param.sched_priority));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_notification_before_its_paired_expiry_goes_back_to_the_latest_one_before_it() {
        // Paired with the expiry at 3000 (period 1000) but come at 2100: the expiry at 2000.
        assert_eq!(periods_past(3000, 2100, 1000), 1);
        assert_eq!(periods_past(5000, 2000, 1000), 3);
        // On or after its expiry: stays.
        assert_eq!(periods_past(3000, 3000, 1000), 0);
        assert_eq!(periods_past(3000, 9000, 1000), 0);
    }

    fn cfg() -> PeriodicConfig {
        PeriodicConfig {
            cpus: vec![crate::parse::allowed_cpus()[0]],
            loops: Some(40),
            duration_ns: None,
            dma_latency: false,
            mlock: false,
            ..Default::default()
        }
    }

    #[test]
    fn signal_notification_counts_every_expiry() {
        let out = run(&cfg(), Notify::Signal);
        let s = &out.streams[0];
        assert_eq!(s.name, "posix_timer_signal");
        let cpu = cfg().cpus[0];
        assert_eq!(
            s.measures,
            format!("timer_create(SIGEV_SIGNAL) expiry to notification on CPU {cpu}")
        );
        assert_eq!(s.hist.count(), 40, "errors: {:?}", out.errors);
        assert!(s.hist.min() <= s.hist.quantile(0.5) && s.hist.quantile(0.99) <= s.hist.max());
    }

    #[test]
    fn thread_notification_runs_in_new_threads() {
        let out = run(&cfg(), Notify::Thread);
        let s = &out.streams[0];
        assert_eq!(s.name, "posix_timer_thread");
        assert_eq!(s.hist.count(), 40, "errors: {:?}", out.errors);
        assert!(s.hist.max() > 0);
    }

    #[test]
    fn several_cpus_get_a_cpu_suffix() {
        let cpus = crate::parse::allowed_cpus();
        if cpus.len() < 2 {
            eprintln!("skip: one CPU allowed, so no run measures several");
            return;
        }
        let out = run(
            &PeriodicConfig {
                cpus: cpus[..2].to_vec(),
                loops: Some(5),
                ..cfg()
            },
            Notify::Signal,
        );
        let names: Vec<&str> = out.streams.iter().map(|s| s.name.as_str()).collect();
        let want: Vec<String> = cpus[..2].iter().map(|c| format!("posix_timer_signal.cpu{c}")).collect();
        assert_eq!(names, want);
        assert!(out.streams[1].measures.ends_with(&format!(" on CPU {}", cpus[1])));
    }

    #[test]
    fn notify_names() {
        assert_eq!(Notify::Thread.stream_name(), "posix_timer_thread");
        assert_eq!(Notify::Signal.stream_name(), "posix_timer_signal");
        assert_eq!(Notify::parse("thread"), Ok(Notify::Thread));
        assert!(Notify::parse("sigev").unwrap_err().contains("signal or thread"));
    }
}
