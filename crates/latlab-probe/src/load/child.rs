//! The load child's side: when the `latlab` binary is re-executed with `LATLAB_LOAD_CHILD=<spec>`
//! and `LATLAB_LOAD_DIR=<state dir>`, it runs that load in `<state dir>/work` until SIGTERM or
//! SIGINT, keeping `<state dir>/counters.json` current, then exits.

use super::counters::Counters;
use super::{dbench, dd, make, swap, sync, tar, video, LoadSpec};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

/// Environment variable carrying the load spec to a child.
pub const ENV_SPEC: &str = "LATLAB_LOAD_CHILD";
/// Environment variable carrying the child's state directory.
pub const ENV_DIR: &str = "LATLAB_LOAD_DIR";

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_sig: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

/// If this process is a load child (`LATLAB_LOAD_CHILD` is set), run the load until SIGTERM or
/// SIGINT and exit the process (status 0, or 1 after printing an error to stderr); otherwise
/// return at once. Call it first thing in `main`.
pub fn child_main_if_requested() {
    let Some(spec) = std::env::var_os(ENV_SPEC) else { return };
    let spec = spec.to_string_lossy().into_owned();
    let code = match child_main(&spec) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("latlab load {spec}: {e}");
            1
        }
    };
    std::process::exit(code);
}

fn child_main(spec: &str) -> Result<(), String> {
    let load = LoadSpec::parse(spec)?;
    // Name the process after its load (`ll-dd:1G`), so traces and `ps` tell the loads apart.
    let comm = format!("ll-{spec}");
    if let Ok(c) = std::ffi::CString::new(comm.chars().take(15).collect::<String>()) {
        let _ = nix::sys::prctl::set_name(&c);
    }
    let spec = load;
    let dir = PathBuf::from(std::env::var_os(ENV_DIR).ok_or(format!("{ENV_DIR} is not set"))?);
    // Nothing this child starts (make, cc) should take itself for a load child.
    std::env::remove_var(ENV_SPEC);
    std::env::remove_var(ENV_DIR);
    use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};
    let act = SigAction::new(SigHandler::Handler(on_signal), SaFlags::empty(), SigSet::empty());
    for s in [Signal::SIGTERM, Signal::SIGINT] {
        // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
        unsafe { sigaction(s, &act) }.map_err(|e| format!("sigaction: {e}"))?;
    }
    let work = dir.join("work");
    std::fs::create_dir_all(&work).map_err(|e| format!("{}: {e}", work.display()))?;
    let counters = Counters::new(Some(dir));
    let r = run(&spec, &work, &STOP, &counters);
    counters.flush();
    r.map_err(|e| e.to_string())
}

/// Run the generator for `spec` in `work` until `stop`.
fn run(spec: &LoadSpec, work: &Path, stop: &AtomicBool, counters: &Counters) -> io::Result<()> {
    match *spec {
        LoadSpec::Make { jobs } => make::run(work, stop, counters, jobs),
        LoadSpec::Dd { bytes } => dd::run(work, stop, counters, bytes),
        LoadSpec::Dbench { clients } => dbench::run(work, stop, counters, clients),
        LoadSpec::Tar => tar::run(work, stop, counters),
        LoadSpec::Sync => sync::run(work, stop, counters),
        LoadSpec::Video => video::run(work, stop, counters),
        LoadSpec::Swap { bytes } => {
            swap::prefer_oom_kill();
            let meminfo = std::fs::read_to_string("/proc/meminfo")?;
            let sizes = swap::map_bytes(bytes, &meminfo).map_err(io::Error::other)?;
            swap::run(work, stop, counters, sizes)
        }
    }
}
