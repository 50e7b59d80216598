//! The probing process's side of the loads: start each load as a re-executed `latlab` child in
//! its own process group (SCHED_OTHER, parent-death signal, stdin/stdout null, stderr to a file
//! in its private scratch directory, its `TMPDIR` inside it too), wait until it produces load,
//! watch for early deaths, and on stop (or drop) SIGTERM then SIGKILL each group, reap, collect
//! counters and notes, remove the scratch directories and any zram swap device.

use super::child::{ENV_DIR, ENV_SPEC};
use super::counters::{read_counters, read_notes, READY_FILE};
use super::zram::{self, Zram};
use super::LoadSpec;
use crate::guard::{kill_group, kill_group_until_gone, remove_retrying, Held};
use latlab_core::{LoadDeath, LoadFate};
use std::collections::BTreeMap;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long [`Loads::start`] waits for every load to produce load.
const READY_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a load may take to stop after SIGTERM before its group gets SIGKILL: a loaded
/// box (the loads themselves, and CI's parallel tests) has been seen to need more than 2 s
/// for a `tar` load blocked in writeback to get to its signal.
const TERM_GRACE: Duration = Duration::from_secs(5);
/// The child's stderr, inside its scratch directory.
const STDERR_FILE: &str = "stderr.log";
/// The child's `TMPDIR`, inside its scratch directory.
const TMP_DIR: &str = "tmp";

/// Where and how loads run.
#[derive(Clone, Debug)]
pub struct LoadOptions {
    /// The binary to re-execute as a load child (normally `/proc/self/exe`).
    pub exe: PathBuf,
    /// Parent directory for scratch; each load gets a fresh private `latlab-load-<pid>-<random>`
    /// in it (mode 0700), with its `TMPDIR` inside.
    pub scratch: PathBuf,
    /// May `swap:SIZE` create a zram swap device when the machine has no swap (root)?
    pub allow_zram: bool,
    /// CPUs the loads (and everything they start: make, the compilers) may run on; empty:
    /// wherever the probe itself may (`--load-cpus`).
    pub cpus: Vec<usize>,
}

/// What the loads did.
#[derive(Clone, Debug, Default)]
pub struct LoadReport {
    /// Counters keyed by load name, e.g. "make:2.builds", "dd:1G.bytes_written".
    pub counters: BTreeMap<String, u64>,
    /// Each load, in `--load` order: ran to the end, or died (how, when).
    pub fates: Vec<LoadFate>,
    /// Remarks, e.g. "dd:1G: child killed by signal 9 when stopped".
    pub notes: Vec<String>,
}

/// How a child ended, as seen by its watcher thread.
struct Exit {
    /// Time since the child started.
    at: Duration,
    /// It ended before [`Loads::stop`] began.
    early: bool,
    /// "exited with status 1" or "killed by signal 9".
    how: String,
    /// Exit status 0, or killed by the SIGTERM/SIGKILL a stop sends.
    clean: bool,
}

/// One running load child.
struct Child {
    name: String,
    proc: std::process::Child,
    pgid: libc::pid_t,
    dir: PathBuf,
    /// Blocks in waitid(WNOWAIT) until the child ends (leaves it unreaped).
    watch: JoinHandle<Option<Exit>>,
    /// Its process group and scratch directory, for the guardian should the probe die first;
    /// dropped once both are gone.
    _held: [Held; 2],
}

/// Running loads. Dropping it stops them (kill process groups, wait, remove scratch dirs, tear
/// down zram).
pub struct Loads {
    children: Vec<Child>,
    zrams: Vec<Zram>,
    notes: Vec<String>,
    stopping: Arc<AtomicBool>,
}

impl Loads {
    /// Start every load, wait until each is producing load (or 10 s passed), then return.
    pub fn start(specs: &[LoadSpec], opts: &LoadOptions) -> Result<Loads, String> {
        let mut loads = Loads {
            children: Vec::new(),
            zrams: Vec::new(),
            notes: Vec::new(),
            stopping: Arc::default(),
        };
        let scratch = std::path::absolute(&opts.scratch).map_err(|e| format!("{}: {e}", opts.scratch.display()))?;
        let mut names: Vec<String> = Vec::new();
        for spec in specs {
            let mut name = spec.name();
            let same = names
                .iter()
                .filter(|n| n.split('#').next() == Some(name.as_str()))
                .count();
            if same > 0 {
                name = format!("{name}#{}", same + 1);
            }
            names.push(name.clone());
            loads.precheck(spec, &name, &scratch, opts.allow_zram)?;
            let child = spawn(spec, &name, opts, &scratch, loads.stopping.clone())?;
            loads.children.push(child);
        }
        loads.wait_ready()?;
        Ok(loads)
    }

    /// Stop all loads and return what they did.
    pub fn stop(mut self) -> LoadReport {
        self.shutdown()
    }

    /// Refuse loads that cannot run here; set up zram swap for `swap:` if allowed.
    fn precheck(&mut self, spec: &LoadSpec, name: &str, scratch: &Path, allow_zram: bool) -> Result<(), String> {
        match *spec {
            LoadSpec::Dd { bytes } => {
                let st =
                    nix::sys::statvfs::statvfs(scratch).map_err(|e| format!("{name}: {}: {e}", scratch.display()))?;
                let free = st.blocks_available() as u64 * st.fragment_size() as u64;
                if bytes > free / 2 {
                    return Err(format!(
                        "{name}: {} MiB is more than half of the {} MiB free in {}; use a smaller size or \
                         another scratch directory",
                        bytes >> 20,
                        free >> 20,
                        scratch.display()
                    ));
                }
            }
            LoadSpec::Swap { bytes } if zram::swap_total() == 0 => {
                if !allow_zram {
                    return Err(format!(
                        "{name}: no swap; pass --zram to create a zram swap device (root)"
                    ));
                }
                let z = Zram::create(bytes).map_err(|e| format!("{name}: creating a zram swap device failed: {e}"))?;
                self.notes.push(format!("{name}: created zram swap device {}", z.dev()));
                self.zrams.push(z);
            }
            _ => {}
        }
        Ok(())
    }

    /// Wait until every child created its ready file; fail if one dies first.
    fn wait_ready(&mut self) -> Result<(), String> {
        let t0 = Instant::now();
        let mut pending: Vec<usize> = (0..self.children.len()).collect();
        while !pending.is_empty() {
            pending.retain(|&i| !self.children[i].dir.join(READY_FILE).exists());
            for &i in &pending {
                let c = &self.children[i];
                if c.watch.is_finished() {
                    return Err(format!(
                        "{}: load child {} while starting{}",
                        c.name,
                        exited_how(c),
                        stderr_tail(&c.dir)
                    ));
                }
            }
            if t0.elapsed() >= READY_TIMEOUT {
                for &i in &pending {
                    let n = &self.children[i].name;
                    self.notes.push(format!(
                        "{n}: still not producing load after {} s",
                        READY_TIMEOUT.as_secs()
                    ));
                }
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Ok(())
    }

    /// Stop every child and collect the report; idempotent.
    fn shutdown(&mut self) -> LoadReport {
        let mut rep = LoadReport {
            notes: std::mem::take(&mut self.notes),
            ..Default::default()
        };
        self.stopping.store(true, Ordering::SeqCst);
        for c in &self.children {
            kill_group(c.pgid, libc::SIGTERM);
        }
        let deadline = Instant::now() + TERM_GRACE;
        for c in self.children.drain(..) {
            while !c.watch.is_finished() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
            if !c.watch.is_finished() {
                rep.notes.push(format!(
                    "{}: did not stop within {} s of SIGTERM; killed",
                    c.name,
                    TERM_GRACE.as_secs()
                ));
            }
            finish(c, &mut rep);
        }
        for z in self.zrams.drain(..) {
            if let Err(e) = z.remove() {
                rep.notes.push(format!("removing zram swap device {}: {e}", z.dev()));
            }
        }
        rep
    }
}

impl Drop for Loads {
    fn drop(&mut self) {
        if !self.children.is_empty() || !self.zrams.is_empty() {
            let _ = self.shutdown();
        }
    }
}

/// Kill what is left of `c`'s group, reap it, and move its fate, counters and notes into `rep`.
fn finish(mut c: Child, rep: &mut LoadReport) {
    // The leader is unreaped until `wait` below, so the group id cannot be reused meanwhile.
    kill_group(c.pgid, libc::SIGKILL);
    let exit = c.watch.join().ok().flatten();
    let _ = c.proc.wait();
    // Grandchildren (cc1, busy loops) may outlive the leader by a moment.
    kill_group_until_gone(c.pgid, Duration::from_secs(1));
    let mut fate = LoadFate {
        name: c.name.clone(),
        died: None,
    };
    match exit {
        // Any end before the stop, even status 0: the load stopped loading.
        Some(e) if e.early => {
            fate.died = Some(LoadDeath {
                how: format!("{}{}", e.how, stderr_tail(&c.dir)),
                after_ns: e.at.as_nanos() as u64,
            })
        }
        Some(e) if !e.clean => rep.notes.push(format!(
            "{}: child {} when stopped{}",
            c.name,
            e.how,
            stderr_tail(&c.dir)
        )),
        _ => {}
    }
    rep.fates.push(fate);
    for (k, v) in read_counters(&c.dir) {
        rep.counters.insert(format!("{}.{k}", c.name), v);
    }
    rep.notes
        .extend(read_notes(&c.dir).into_iter().map(|n| format!("{}: {n}", c.name)));
    if let Err(e) = remove_retrying(&c.dir) {
        rep.notes.push(format!("removing {}: {e}", c.dir.display()));
    }
}

/// "exited with status 1" / "killed by signal 9" for a finished child, for start errors.
fn exited_how(c: &Child) -> String {
    match wait_nowait(c.proc.id() as libc::pid_t, libc::WNOHANG) {
        Some((how, _)) => how,
        None => "ended".into(),
    }
}

/// The last lines of a child's stderr, as " (stderr: ...)", or "".
fn stderr_tail(dir: &Path) -> String {
    let s = std::fs::read_to_string(dir.join(STDERR_FILE)).unwrap_or_default();
    let lines: Vec<&str> = s.lines().filter(|l| !l.trim().is_empty()).collect();
    if lines.is_empty() {
        return String::new();
    }
    let mut tail = lines[lines.len().saturating_sub(3)..].join(" | ");
    if tail.len() > 300 {
        let cut = (0..=300).rev().find(|&i| tail.is_char_boundary(i)).unwrap_or(0);
        tail.truncate(cut);
        tail.push_str("...");
    }
    format!(" (stderr: {tail})")
}

/// waitid(P_PID, pid, WEXITED | WNOWAIT | extra): how it ended and whether that was clean,
/// without reaping; None if it has not ended (with WNOHANG) or on error.
fn wait_nowait(pid: libc::pid_t, extra: libc::c_int) -> Option<(String, bool)> {
    loop {
        // SAFETY: an all-zero siginfo_t is valid; waitid fills it.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: valid pointer; WNOWAIT leaves the child for `Child::wait` to reap.
        let r = unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT | extra,
            )
        };
        if r != 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return None;
        }
        // SAFETY: waitid succeeded, so si_pid/si_status are set (si_pid 0 means WNOHANG, no exit).
        let (spid, status) = unsafe { (info.si_pid(), info.si_status()) };
        if spid == 0 {
            return None;
        }
        return Some(match info.si_code {
            libc::CLD_EXITED => (format!("exited with status {status}"), status == 0),
            _ => (
                format!("killed by signal {status}"),
                status == libc::SIGTERM || status == libc::SIGKILL,
            ),
        });
    }
}

/// The affinity mask of `cpus`, or None for an empty list (no confinement).
fn cpu_set(cpus: &[usize]) -> Result<Option<nix::sched::CpuSet>, String> {
    if cpus.is_empty() {
        return Ok(None);
    }
    let mut set = nix::sched::CpuSet::new();
    for &c in cpus {
        set.set(c).map_err(|_| {
            format!(
                "CPU {c} is beyond the {} an affinity mask holds",
                nix::sched::CpuSet::count()
            )
        })?;
    }
    Ok(Some(set))
}

/// Start one load child in a fresh scratch directory under `scratch`, confined to
/// `opts.cpus` when given (the children it starts inherit the mask).
fn spawn(
    spec: &LoadSpec,
    name: &str,
    opts: &LoadOptions,
    scratch: &Path,
    stopping: Arc<AtomicBool>,
) -> Result<Child, String> {
    let exe = &opts.exe;
    let affinity = cpu_set(&opts.cpus).map_err(|e| format!("{name}: {e}"))?;
    // A private directory (0700, a random name made by mkdir, [`crate::private`]): nothing
    // in it can be planted by another user, and the guardian holds it from just before it
    // exists, so a probe killed after the mkdir leaves nothing.
    let prefix = format!("latlab-load-{}-", std::process::id());
    let (dir, held_dir) = crate::private::held_dir(scratch, &prefix)
        .map_err(|e| format!("{name}: creating a private directory in {}: {e}", scratch.display()))?;
    let fail = |e: String| {
        let _ = std::fs::remove_dir_all(&dir);
        e
    };
    // The load's temporary files (the compilers' cc*.s under make) go in its directory too.
    let tmp = dir.join(TMP_DIR);
    std::fs::create_dir(&tmp).map_err(|e| fail(format!("{name}: creating {}: {e}", tmp.display())))?;
    let stderr = std::fs::File::create(dir.join(STDERR_FILE)).map_err(|e| fail(format!("{name}: {e}")))?;
    let parent = std::process::id() as libc::pid_t;
    let mut cmd = Command::new(exe);
    cmd.env(ENV_SPEC, spec.name())
        .env(ENV_DIR, &dir)
        .env("TMPDIR", &tmp)
        .current_dir(&dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr)
        .process_group(0);
    // SAFETY: the closure only makes async-signal-safe syscalls (prctl, getppid, sched_setscheduler,
    // sched_setaffinity, _exit) and reads `affinity`, built before the fork.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The parent may have died before the prctl took effect.
            if libc::getppid() != parent {
                libc::_exit(1);
            }
            // Loads are ordinary processes, even if the spawning thread runs SCHED_FIFO.
            let p = libc::sched_param { sched_priority: 0 };
            libc::sched_setscheduler(0, libc::SCHED_OTHER, &p);
            if let Some(set) = &affinity {
                nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), set)?;
            }
            Ok(())
        });
    }
    let started = Instant::now();
    let proc = cmd
        .spawn()
        .map_err(|e| fail(format!("{name}: starting {}: {e}", exe.display())))?;
    let pid = proc.id() as libc::pid_t;
    let watch = std::thread::Builder::new()
        .name(format!("load-watch-{pid}"))
        .spawn(move || {
            let (how, clean) = wait_nowait(pid, 0)?;
            let early = !stopping.load(Ordering::SeqCst);
            Some(Exit {
                at: started.elapsed(),
                early,
                how,
                clean,
            })
        });
    match watch {
        Ok(watch) => Ok(Child {
            name: name.to_string(),
            proc,
            pgid: pid,
            _held: [Held::group(pid), held_dir],
            dir,
            watch,
        }),
        Err(e) => {
            let mut proc = proc;
            kill_group(pid, libc::SIGKILL);
            let _ = proc.wait();
            Err(fail(format!("{name}: starting a watcher thread: {e}")))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::testutil::TempDir;

    /// Entry point when the test binary is re-executed as a load child (see [`options`]);
    /// a no-op in an ordinary test run.
    #[test]
    fn child_entry() {
        crate::load::child_main_if_requested();
    }

    /// Options whose `exe` re-executes this test binary into [`child_entry`].
    fn options(tmp: &TempDir) -> LoadOptions {
        let harness = std::env::current_exe().unwrap();
        let script = format!(
            "#!/bin/sh\nexec '{}' load::parent::tests::child_entry --exact --test-threads=1 --nocapture -q\n",
            harness.display()
        );
        script_options(tmp, &script)
    }

    fn script_options(tmp: &TempDir, script: &str) -> LoadOptions {
        use std::os::unix::fs::PermissionsExt;
        let exe = tmp.0.join("latlab-child.sh");
        std::fs::write(&exe, script).unwrap();
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
        LoadOptions {
            exe,
            scratch: tmp.work(),
            allow_zram: false,
            cpus: Vec::new(),
        }
    }

    fn scratch_is_empty(tmp: &TempDir) -> bool {
        std::fs::read_dir(tmp.work()).unwrap().count() == 0
    }

    #[test]
    fn runs_real_children_and_reports_their_counters() {
        let tmp = TempDir::new("loads");
        let specs = [
            LoadSpec::Tar,
            LoadSpec::Dd { bytes: 4 << 20 },
            LoadSpec::Video,
            LoadSpec::Tar,
            LoadSpec::Make { jobs: 1 },
        ];
        let loads = Loads::start(&specs, &options(&tmp)).unwrap();
        assert_eq!(std::fs::read_dir(tmp.work()).unwrap().count(), 5);
        // Until every load has shown progress in the counters it flushes (every 100 ms):
        // 0.4 s on a quiet box, longer on a loaded one; the asserts below say what is missing.
        let seen = |i: usize, k: &str| read_counters(&loads.children[i].dir).get(k).copied().unwrap_or(0);
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        std::thread::sleep(Duration::from_millis(400));
        while !(seen(0, "files_created") > 0
            && seen(3, "files_created") > 0
            && seen(1, "bytes_written") >= 1 << 20
            && seen(2, "frames") >= 1)
            && std::time::Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(50));
        }
        let rep = loads.stop();
        assert!(rep.notes.is_empty(), "{:?}", rep.notes);
        let names: Vec<&str> = rep.fates.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["tar", "dd:4M", "video", "tar#2", "make:1"]);
        assert!(rep.fates.iter().all(|f| f.died.is_none()), "{:?}", rep.fates);
        assert!(rep.counters["tar.files_created"] > 0, "{:?}", rep.counters);
        assert!(rep.counters["tar#2.files_created"] > 0, "{:?}", rep.counters);
        assert!(rep.counters["dd:4M.bytes_written"] >= 1 << 20, "{:?}", rep.counters);
        assert!(rep.counters["video.frames"] >= 1, "{:?}", rep.counters);
        assert!(rep.counters.contains_key("video.frames_late"));
        // Mid-build: make and its compilers were killed with the group, nothing left to count yet.
        assert!(rep.counters.contains_key("make:1.builds") || rep.counters.contains_key("make:1.cpu_loops"));
        assert!(scratch_is_empty(&tmp));
    }

    /// The CPUs `pid` may run on, from /proc (`Cpus_allowed_list`, e.g. "0" or "0-1").
    fn allowed_list(pid: u32) -> String {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
            .unwrap()
            .trim()
            .to_string()
    }

    /// Another user's symlinks at the names loads once used (`latlab-load-PID-N`) are never
    /// followed: the directories they point to stay as they were. Each load runs in a 0700
    /// directory of its own, with its `TMPDIR` inside it.
    #[test]
    fn loads_run_in_private_directories_and_follow_no_planted_symlink() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = TempDir::new("planted");
        let victim = TempDir::new("victim");
        std::fs::write(victim.work().join("precious"), "keep me").unwrap();
        let pid = std::process::id();
        for n in 0..8 {
            let link = tmp.work().join(format!("latlab-load-{pid}-{n}"));
            std::os::unix::fs::symlink(victim.work(), link).unwrap();
        }
        let loads = Loads::start(&[LoadSpec::Sync, LoadSpec::Video], &options(&tmp)).unwrap();
        for c in &loads.children {
            let meta = std::fs::symlink_metadata(&c.dir).unwrap();
            assert!(meta.is_dir(), "{}", c.dir.display());
            assert_eq!(meta.permissions().mode() & 0o777, 0o700, "{}", c.dir.display());
            let env = std::fs::read(format!("/proc/{}/environ", c.proc.id())).unwrap();
            let want = format!("TMPDIR={}", c.dir.join(TMP_DIR).display());
            assert!(
                env.split(|&b| b == 0).any(|kv| kv == want.as_bytes()),
                "{}: no {want}",
                c.name
            );
            assert!(c.dir.join(TMP_DIR).is_dir());
        }
        let rep = loads.stop();
        assert!(rep.notes.is_empty(), "{:?}", rep.notes);
        let names = |d: &Path| {
            let mut v: Vec<String> = std::fs::read_dir(d)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            v.sort();
            v
        };
        assert_eq!(names(&victim.work()), ["precious"]);
        assert_eq!(
            std::fs::read_to_string(victim.work().join("precious")).unwrap(),
            "keep me"
        );
        // The planted links stay (they are not the probe's); the loads' directories are gone.
        assert_eq!(names(&tmp.work()).len(), 8);
        assert!(names(&tmp.work()).iter().all(|n| tmp.work().join(n).is_symlink()));
    }

    #[test]
    fn load_cpus_confine_the_children() {
        let tmp = TempDir::new("cpus");
        let cpu = *crate::parse::allowed_cpus().last().unwrap();
        let opts = LoadOptions {
            cpus: vec![cpu],
            ..options(&tmp)
        };
        let loads = Loads::start(&[LoadSpec::Video, LoadSpec::Sync], &opts).unwrap();
        for c in &loads.children {
            assert_eq!(allowed_list(c.proc.id()), cpu.to_string(), "{}", c.name);
        }
        let rep = loads.stop();
        assert!(rep.notes.is_empty(), "{:?}", rep.notes);
        assert!(scratch_is_empty(&tmp));
        // Unconfined, a child may run wherever this process may.
        let loads = Loads::start(&[LoadSpec::Sync], &options(&tmp)).unwrap();
        assert_eq!(
            allowed_list(loads.children[0].proc.id()),
            allowed_list(std::process::id())
        );
        drop(loads);
        assert_eq!(
            cpu_set(&[usize::MAX]).unwrap_err(),
            format!("CPU {} is beyond the 1024 an affinity mask holds", usize::MAX)
        );
    }

    #[test]
    fn notes_a_child_that_died_early() {
        let tmp = TempDir::new("killed");
        let loads = Loads::start(&[LoadSpec::Dbench { clients: 1 }], &options(&tmp)).unwrap();
        let pid = loads.children[0].proc.id() as libc::pid_t;
        // SAFETY: our own child.
        unsafe { libc::kill(pid, libc::SIGKILL) };
        std::thread::sleep(Duration::from_millis(100));
        let rep = loads.stop();
        assert!(rep.notes.is_empty(), "{:?}", rep.notes);
        let died = rep.fates[0].died.as_ref().expect("dbench:1 died");
        assert_eq!(
            (rep.fates[0].name.as_str(), died.how.as_str()),
            ("dbench:1", "killed by signal 9")
        );
        assert!(died.after_ns > 0 && died.after_ns < 60_000_000_000, "{died:?}");
        assert!(rep.counters["dbench:1.ops"] > 0, "{:?}", rep.counters);
        assert!(scratch_is_empty(&tmp));
    }

    #[test]
    fn drop_stops_and_cleans_up() {
        let tmp = TempDir::new("drop");
        let loads = Loads::start(&[LoadSpec::Sync], &options(&tmp)).unwrap();
        let pid = loads.children[0].proc.id() as libc::pid_t;
        drop(loads);
        assert!(scratch_is_empty(&tmp));
        // SAFETY: signal 0 only checks existence; the pid was reaped, so it is gone.
        assert_ne!(unsafe { libc::kill(pid, 0) }, 0);
    }

    #[test]
    fn start_fails_when_a_child_dies_while_starting() {
        let tmp = TempDir::new("fails");
        let opts = script_options(&tmp, "#!/bin/sh\necho cannot run this load >&2\nexit 3\n");
        let e = Loads::start(&[LoadSpec::Tar], &opts).err().unwrap();
        assert!(
            e.starts_with("tar: load child exited with status 3 while starting"),
            "{e}"
        );
        assert!(e.contains("cannot run this load"), "{e}");
        assert!(scratch_is_empty(&tmp));
    }

    #[test]
    fn refuses_loads_that_cannot_run() {
        let tmp = TempDir::new("refuse");
        let opts = options(&tmp);
        let e = Loads::start(&[LoadSpec::Dd { bytes: 1 << 50 }], &opts).err().unwrap();
        assert!(e.starts_with("dd:1024T: ") && e.contains("more than half"), "{e}");
        if zram::swap_total() == 0 {
            let e = Loads::start(&[LoadSpec::Tar, LoadSpec::Swap { bytes: 1 << 30 }], &opts)
                .err()
                .unwrap();
            assert_eq!(e, "swap:1G: no swap; pass --zram to create a zram swap device (root)");
        }
        assert!(scratch_is_empty(&tmp));
    }
}
