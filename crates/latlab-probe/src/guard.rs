//! Nothing outlives the probe, however it ends. The probe cleans up after itself on every exit
//! it lives through (SIGINT, SIGTERM, SIGHUP, errors); for the one it does not (SIGKILL, a
//! crash) a guardian does it:
//!
//! - [`start`] re-executes the `latlab` binary as a guardian (`LATLAB_PROBE_GUARD=<probe pid>`,
//!   its own process group, SIGINT/SIGHUP/SIGTERM ignored) reading a pipe whose only writer is
//!   the probe (close-on-exec, so no load inherits it).
//! - What needs undoing is [`Held`] while it exists: a load's process group, a scratch
//!   directory, an ftrace instance, a zram swap device. Creating a [`Held`] tells the guardian, dropping it (after
//!   the probe undid the thing itself) tells it that it is gone.
//! - When the pipe ends (the probe exited, whatever killed it) the guardian undoes what is
//!   still held: SIGKILL to each process group (a load and everything it started: make, the
//!   compilers), the ftrace instance's tracing off and the instance removed, the zram device
//!   swapped off and reset, the scratch directories removed; it says so on stderr, then exits.
//!
//! Backstop for a guardian that could not run (or was killed too): [`sweep`], at the probe's
//! start, removes the private scratch directories (the loads', probe write's) and ftrace
//! instances named after a probe pid that no longer exists, and says so.

use serde::{Deserialize, Serialize};
use std::io::{BufRead, Write};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Environment variable that makes the re-executed binary a guardian; its value is the
/// probe's pid.
pub const ENV_GUARD: &str = "LATLAB_PROBE_GUARD";

/// Something the probe made that must not outlive it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
enum Resource {
    /// A load's process group: SIGKILLed with everything in it.
    Group(i32),
    /// A scratch directory or file (path bytes): removed.
    Path(Vec<u8>),
    /// A private ftrace instance's directory (path bytes): tracing stopped, removed.
    Ftrace(Vec<u8>),
    /// A zram swap device (`/dev/zram0`) made for `swap:SIZE --zram`: swapped off, reset.
    Zram(String),
}

/// One line of the pipe.
#[derive(Serialize, Deserialize)]
enum Msg {
    Hold(Resource),
    Release(Resource),
}

/// The write end of the guardian's pipe, once started.
static PIPE: Mutex<Option<std::io::PipeWriter>> = Mutex::new(None);

/// Start the guardian by re-executing `exe` (the probe's own binary, `/proc/self/exe`). Once
/// per process; an error says why there is none (the probe still cleans up on every exit it
/// lives through).
pub fn start(exe: &Path) -> Result<(), String> {
    let mut pipe = PIPE.lock().unwrap_or_else(|e| e.into_inner());
    if pipe.is_some() {
        return Ok(());
    }
    let (reader, writer) = std::io::pipe().map_err(|e| format!("pipe: {e}"))?;
    Command::new(exe)
        .env(ENV_GUARD, std::process::id().to_string())
        .stdin(reader)
        .stdout(Stdio::null())
        .process_group(0)
        .spawn()
        .map_err(|e| format!("starting {}: {e}", exe.display()))?;
    *pipe = Some(writer);
    Ok(())
}

fn send(m: &Msg) {
    let mut pipe = PIPE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(w) = pipe.as_mut() {
        let line = serde_json::to_string(m).expect("a message serializes") + "\n";
        // A guardian that is gone cannot be helped: the probe still cleans up itself.
        let _ = w.write_all(line.as_bytes());
    }
}

/// Something the guardian undoes if the probe dies while this exists: make it just before
/// making the thing (a path) or just after (a process group), drop it once the probe has
/// undone the thing itself.
#[derive(Debug)]
pub struct Held(Resource);

impl Held {
    fn new(r: Resource) -> Held {
        send(&Msg::Hold(r.clone()));
        Held(r)
    }
    /// A load's process group.
    pub fn group(pgid: libc::pid_t) -> Held {
        Held::new(Resource::Group(pgid))
    }
    /// A scratch directory or file.
    pub fn path(p: &Path) -> Held {
        Held::new(Resource::Path(p.as_os_str().as_bytes().to_vec()))
    }
    /// A private ftrace instance.
    pub fn ftrace(dir: &Path) -> Held {
        Held::new(Resource::Ftrace(dir.as_os_str().as_bytes().to_vec()))
    }
    /// A zram swap device.
    pub fn zram(dev: &str) -> Held {
        Held::new(Resource::Zram(dev.to_string()))
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        send(&Msg::Release(self.0.clone()));
    }
}

fn path_of(bytes: &[u8]) -> PathBuf {
    PathBuf::from(std::ffi::OsString::from_vec(bytes.to_vec()))
}

/// If this process is a guardian (`LATLAB_PROBE_GUARD` is set), keep track of what the probe
/// holds until its pipe ends, undo what is left and exit; otherwise return at once. Call it
/// first thing in `main`.
pub fn main_if_requested() {
    let Some(probe) = std::env::var_os(ENV_GUARD) else {
        return;
    };
    let probe = probe.to_string_lossy().into_owned();
    use nix::sys::signal::{signal, SigHandler, Signal};
    for s in [Signal::SIGINT, Signal::SIGHUP, Signal::SIGTERM] {
        // SAFETY: SIG_IGN installs no handler code.
        let _ = unsafe { signal(s, SigHandler::SigIgn) };
    }
    let mut held = std::collections::BTreeSet::new();
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        match serde_json::from_str(&line) {
            Ok(Msg::Hold(r)) => {
                held.insert(r);
            }
            Ok(Msg::Release(r)) => {
                held.remove(&r);
            }
            Err(_) => {}
        }
    }
    if !held.is_empty() {
        let done = undo(&held);
        let mut err = std::io::stderr().lock();
        let _ = writeln!(
            err,
            "latlab probe guard: probe {probe} ended without cleaning up; {}",
            done.join("; ")
        );
    }
    std::process::exit(0);
}

/// Undo `held`: process groups first (their processes may still write into the scratch
/// directories), then ftrace instances and paths. Returns what was done, one phrase each.
fn undo(held: &std::collections::BTreeSet<Resource>) -> Vec<String> {
    let mut done = Vec::new();
    for r in held {
        if let Resource::Group(pgid) = *r {
            kill_group_until_gone(pgid, Duration::from_secs(5));
            done.push(format!("killed load process group {pgid}"));
        }
    }
    // The probe holds a path just before making it: one it never made is not mentioned.
    let made = |r: &Resource| match r {
        Resource::Ftrace(p) | Resource::Path(p) => path_of(p).exists(),
        _ => true,
    };
    for r in held.iter().filter(|r| made(r)) {
        match r {
            Resource::Ftrace(dir) => {
                let dir = path_of(dir);
                done.push(match crate::sched_trace::remove_instance(&dir) {
                    Ok(()) => format!("removed ftrace instance {}", dir.display()),
                    Err(e) => e,
                });
            }
            Resource::Path(p) => {
                let p = path_of(p);
                done.push(match remove_retrying(&p) {
                    Ok(()) => format!("removed {}", p.display()),
                    Err(e) => format!("removing {}: {e}", p.display()),
                });
            }
            Resource::Zram(dev) => done.push(match crate::load::zram::teardown(dev) {
                Ok(()) => format!("tore down zram swap device {dev}"),
                Err(e) => format!("tearing down zram swap device {dev}: {e}"),
            }),
            Resource::Group(_) => {}
        }
    }
    done
}

/// SIGKILL process group `pgid` until it is empty, or `limit` passed.
pub(crate) fn kill_group_until_gone(pgid: libc::pid_t, limit: Duration) {
    let t0 = Instant::now();
    while kill_group(pgid, libc::SIGKILL) && t0.elapsed() < limit {
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Signal a whole process group; false once the group is empty (ESRCH).
pub(crate) fn kill_group(pgid: libc::pid_t, sig: libc::c_int) -> bool {
    // SAFETY: kill(2) has no memory-safety preconditions; pgid > 1 is a load's group.
    pgid > 1 && unsafe { libc::kill(-pgid, sig) } == 0
}

/// Remove a scratch directory or file, retrying for half a second while dying processes may
/// still add files to it.
pub(crate) fn remove_retrying(p: &Path) -> std::io::Result<()> {
    for attempt in 0.. {
        let r = if p.is_dir() {
            std::fs::remove_dir_all(p)
        } else {
            std::fs::remove_file(p)
        };
        match r {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) if attempt == 19 => return Err(e),
            Err(_) => std::thread::sleep(Duration::from_millis(25)),
        }
    }
    unreachable!("the loop returns by its 20th attempt")
}

/// Is process `pid` gone (no such process)?
fn gone(pid: u32) -> bool {
    // SAFETY: signal 0 only checks existence.
    let r = unsafe { libc::kill(pid as libc::pid_t, 0) };
    r != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
}

/// What a probe leaves that [`sweep`] looks for.
#[derive(Debug, PartialEq)]
enum Left {
    /// In a scratch directory: `latlab-load-PID-<random>` (a load's private directory) or
    /// `latlab-write-PID-<random>` (the private directory of probe write's file) or
    /// `latlab-calibrate-PID-<random>` (probe calibrate's disk files) or
    /// `latlab-scenario-PID-<random>` (a scenario's files), made by
    /// [`crate::private`].
    Scratch,
    /// In tracefs: `latlab-PID` or `latlab-PID-N`, a private ftrace instance.
    Instance,
}

/// What kind of leftover `name` is and the pid of the probe that made it.
fn owner(name: &str) -> Option<(Left, u32)> {
    fn digits(s: &str) -> bool {
        !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
    }
    let (left, pid) = if let Some(rest) = name
        .strip_prefix("latlab-load-")
        .or_else(|| name.strip_prefix("latlab-write-"))
        .or_else(|| name.strip_prefix("latlab-calibrate-"))
        .or_else(|| name.strip_prefix("latlab-scenario-"))
    {
        let (pid, suffix) = rest.split_once('-')?;
        (Left::Scratch, Some(pid).filter(|_| crate::private::is_suffix(suffix))?)
    } else {
        let rest = name.strip_prefix("latlab-")?;
        let pid = rest
            .split_once('-')
            .filter(|(_, n)| digits(n))
            .map_or(rest, |(pid, _)| pid);
        (Left::Instance, pid)
    };
    Some((left, pid.parse().ok().filter(|_| digits(pid))?))
}

/// Remove `p` if its name says a probe that no longer runs left it as `want`: the line saying
/// so, or why it could not be removed.
fn sweep_one(p: &Path, want: Left, remove: impl Fn(&Path) -> Result<(), String>) -> Option<String> {
    let (left, pid) = p.file_name()?.to_str().and_then(owner)?;
    if left != want || !gone(pid) {
        return None;
    }
    Some(match remove(p) {
        Ok(()) => format!(
            "removed {}, left by latlab probe {pid}, which no longer runs",
            p.display()
        ),
        Err(e) => format!("cannot remove {} (left by latlab probe {pid}): {e}", p.display()),
    })
}

/// Remove what probes that no longer run left behind: their private scratch directories in
/// `dirs` (this user's only; root: anyone's), and their ftrace instances.
/// Returns one line per thing removed (or that could not be).
pub fn sweep(dirs: &[&Path]) -> Vec<String> {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    let entries = |d: &Path| -> Vec<std::fs::DirEntry> {
        std::fs::read_dir(d).map(|r| r.flatten().collect()).unwrap_or_default()
    };
    let mut notes: Vec<String> = dirs
        .iter()
        .flat_map(|d| entries(d))
        .filter(|e| e.metadata().is_ok_and(|m| uid == 0 || m.uid() == uid))
        .filter_map(|e| {
            sweep_one(&e.path(), Left::Scratch, |p| {
                remove_retrying(p).map_err(|e| e.to_string())
            })
        })
        .collect();
    if let Some(instances) = crate::sched_trace::instances_dir() {
        notes.extend(
            entries(&instances)
                .iter()
                .filter_map(|e| sweep_one(&e.path(), Left::Instance, crate::sched_trace::remove_instance)),
        );
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_latlab_leaves_say_whose_they_are() {
        assert_eq!(owner("latlab-load-1234-aZ09aZ09aZ09"), Some((Left::Scratch, 1234)));
        assert_eq!(owner("latlab-write-77-000000000000"), Some((Left::Scratch, 77)));
        assert_eq!(owner("latlab-calibrate-8-aZ09aZ09aZ09"), Some((Left::Scratch, 8)));
        assert_eq!(owner("latlab-scenario-8-aZ09aZ09aZ09"), Some((Left::Scratch, 8)));
        assert_eq!(owner("latlab-99"), Some((Left::Instance, 99)));
        assert_eq!(owner("latlab-99-2"), Some((Left::Instance, 99)));
        for other in [
            "latlab-loadtest-1-x-0",
            "latlab-load-12",
            "latlab-load-12-0",
            "latlab-probe-test-gate-5",
            "latlab-write-7.dat",
            "latlab-write-7-aZ09aZ09aZ0.",
            "latlab-",
            "latlab-x",
            "latlab-1-x",
            "latlab-load-1-2-3",
            "latlab-load-x-aZ09aZ09aZ09",
            "other-12",
        ] {
            assert_eq!(owner(other), None, "{other}");
        }
    }

    /// The pid of a process that has exited and been reaped.
    fn dead_pid() -> u32 {
        let mut c = Command::new("true").spawn().unwrap();
        let pid = c.id();
        c.wait().unwrap();
        pid
    }

    #[test]
    fn sweep_removes_only_what_dead_probes_left() {
        let tmp = crate::load::testutil::TempDir::new("sweep");
        let dir = tmp.work();
        let dead = dead_pid();
        let me = std::process::id();
        let left = dir.join(format!("latlab-load-{dead}-aZ09aZ09aZ09"));
        std::fs::create_dir_all(left.join("work/sub")).unwrap();
        std::fs::write(left.join("work/sub/f.o"), "x").unwrap();
        let file = dir.join(format!("latlab-write-{dead}-000000000000"));
        std::fs::create_dir_all(&file).unwrap();
        std::fs::write(file.join("data"), "x").unwrap();
        let live = dir.join(format!("latlab-load-{me}-aZ09aZ09aZ09"));
        std::fs::create_dir_all(&live).unwrap();
        let unrelated = dir.join(format!("latlab-{dead}"));
        std::fs::create_dir_all(&unrelated).unwrap();
        let notes = sweep(&[&dir]);
        assert!(!left.exists() && !file.exists(), "{notes:?}");
        assert!(
            live.exists() && unrelated.exists(),
            "a running probe's and a non-load name stay"
        );
        let mine: Vec<&String> = notes
            .iter()
            .filter(|n| n.contains(&dir.display().to_string()))
            .collect();
        assert_eq!(mine.len(), 2, "{notes:?}");
        assert!(
            mine.iter()
                .all(|n| n.contains(&format!("left by latlab probe {dead}, which no longer runs"))),
            "{notes:?}"
        );
    }

    #[test]
    fn undo_kills_the_groups_and_removes_the_paths() {
        let tmp = crate::load::testutil::TempDir::new("undo");
        let d = tmp.work().join("scratch");
        std::fs::create_dir_all(&d).unwrap();
        // A group of two: a shell and the sleep it started, as make and a compiler.
        let mut sh = Command::new("sh")
            .args(["-c", "sleep 60 & wait"])
            .process_group(0)
            .spawn()
            .unwrap();
        let pgid = sh.id() as libc::pid_t;
        // Reaped as soon as it dies, as init reaps a dead probe's load.
        let reaper = std::thread::spawn(move || sh.wait());
        std::thread::sleep(Duration::from_millis(100));
        let held = [Resource::Group(pgid), Resource::Path(d.as_os_str().as_bytes().to_vec())]
            .into_iter()
            .collect();
        let done = undo(&held);
        assert_eq!(
            done,
            [
                format!("killed load process group {pgid}"),
                format!("removed {}", d.display())
            ]
        );
        let _ = reaper.join();
        assert!(!kill_group(pgid, 0), "the whole group is gone");
        assert!(!d.exists());
    }
}
