//! SIGINT, SIGTERM and SIGHUP (a dropped SSH session) stop the run: the handler only sets a
//! flag; every measuring loop checks it,
//! then the partial result is written and guards (scratch files, cpu_dma_latency, loads) drop.
//! The handler is installed without SA_RESTART, so a sleeping thread that takes the signal
//! wakes at once; the others see the flag at their next wakeup.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

static STOP: AtomicBool = AtomicBool::new(false);
static SIGNO: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
    SIGNO.store(sig, Ordering::SeqCst);
}

/// Install the SIGINT/SIGTERM/SIGHUP handler (idempotent).
pub fn install() {
    use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};
    let act = SigAction::new(SigHandler::Handler(on_signal), SaFlags::empty(), SigSet::empty());
    for s in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
        // SAFETY: the handler only touches atomics, which is async-signal-safe.
        let _ = unsafe { sigaction(s, &act) };
    }
}

/// True once SIGINT/SIGTERM/SIGHUP arrived (or [`request_stop`] was called).
pub fn stop_requested() -> bool {
    STOP.load(Ordering::Relaxed)
}

/// Ask every loop to stop (used by the main thread when the duration ends).
pub fn request_stop() {
    STOP.store(true, Ordering::SeqCst);
}

/// The signal that stopped the run, if any.
pub fn stopped_by() -> Option<i32> {
    match SIGNO.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}
