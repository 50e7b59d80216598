//! Cgroups: which cgroup (and container) the task a spike is blamed on lives in (`--explain`,
//! [`Watch`]), and `--cgroup PATH`, the cgroup the measuring threads run in ([`Target`]).
//!
//! A task's cgroup is the `0::PATH` line of `/proc/TID/cgroup` (cgroup v2). The task that held
//! the CPU is known only once the trace is read after the run, by when it may have exited, so
//! a [`Watch`] thread (SCHED_OTHER) reads the cgroup of every task at the run's start and of
//! every task new since its last look each time a measuring thread reports a spike; the
//! attribution then takes the path seen for its task ([`Sightings::name`]).
//!
//! [`container_of`] reads the container out of the path shapes of the common runtimes
//! (docker, podman, containerd, CRI-O, Kubernetes, LXC, systemd machines).

use latlab_core::attribution::{Attribution, CgroupOf, Container};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The cgroup v2 path in the text of `/proc/PID/cgroup`: its `0::PATH` line.
pub fn v2_path(proc_cgroup: &str) -> Option<&str> {
    proc_cgroup.lines().find_map(|l| l.strip_prefix("0::"))
}

/// The cgroup v2 path of task `tid`, when it still exists and the kernel has cgroup v2.
pub fn of_task(tid: u32) -> Option<String> {
    let text = std::fs::read_to_string(format!("/proc/{tid}/cgroup")).ok()?;
    v2_path(&text).map(str::to_string)
}

/// A 64-digit hex container id (docker's, containerd's, CRI-O's, podman's).
fn is_id(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// systemd's unit-name escaping undone: `qemu\x2d1\x2dvm` -> `qemu-1-vm`.
fn unescape(s: &str) -> String {
    let mut out = Vec::with_capacity(s.len());
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let hex = b.get(i..i + 4).filter(|h| h[0] == b'\\' && h[1] == b'x');
        match hex.and_then(|h| u8::from_str_radix(std::str::from_utf8(&h[2..]).ok()?, 16).ok()) {
            Some(c) => {
                out.push(c);
                i += 4;
            }
            None => {
                out.push(b[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn container(runtime: &str, id: &str) -> Container {
    Container {
        runtime: runtime.to_string(),
        id: id.to_string(),
        pod: None,
    }
}

/// The container one path component names, given the component above it.
fn component(parent: &str, c: &str) -> Option<Container> {
    let scope = c.strip_suffix(".scope").unwrap_or(c);
    for (prefix, runtime) in [
        ("docker-", "docker"),
        ("libpod-", "podman"),
        ("cri-containerd-", "containerd"),
        ("crio-", "cri-o"),
    ] {
        if let Some(id) = scope.strip_prefix(prefix).filter(|id| is_id(id)) {
            return Some(container(runtime, id));
        }
    }
    if parent == "docker" && is_id(c) {
        return Some(container("docker", c));
    }
    if let Some(name) = c.strip_prefix("lxc.payload.").filter(|n| !n.is_empty()) {
        return Some(container("lxc", name));
    }
    if parent == "lxc" || parent == "lxc.payload" {
        return Some(container("lxc", c));
    }
    if parent == "machine.slice" {
        if let Some(name) = c.strip_prefix("machine-").and_then(|n| n.strip_suffix(".scope")) {
            return Some(container("machine", &unescape(name)));
        }
        if let Some(name) = c
            .strip_prefix("systemd-nspawn@")
            .and_then(|n| n.strip_suffix(".service"))
        {
            return Some(container("nspawn", &unescape(name)));
        }
    }
    None
}

/// A Kubernetes pod's uid in a component: `kubepods-burstable-pod12ab_34cd.slice` (systemd
/// driver, `-` escaped as `_`) or `pod12ab-34cd` (cgroupfs driver).
fn pod_uid(c: &str) -> Option<String> {
    let c = c.strip_suffix(".slice").unwrap_or(c);
    let uid = match c.starts_with("kubepods") {
        true => c.rsplit_once("-pod")?.1,
        false => c.strip_prefix("pod")?,
    };
    (!uid.is_empty() && uid.bytes().all(|b| b.is_ascii_hexdigit() || b == b'_' || b == b'-'))
        .then(|| uid.replace('_', "-"))
}

/// The container a cgroup v2 path shows, the innermost when containers nest: docker
/// (`docker-ID.scope`, `/docker/ID`), podman (`libpod-ID.scope`), containerd and CRI-O
/// (`cri-containerd-ID.scope`, `crio-ID.scope`), a Kubernetes pod (`kubepods...podUID...`,
/// with its container's id where the path goes below the pod), LXC (`lxc.payload.NAME`,
/// `/lxc/NAME`), systemd machines (`machine.slice/machine-NAME.scope`,
/// `machine.slice/systemd-nspawn@NAME.service`). Monitors (`libpod-conmon-`, `crio-conmon-`,
/// `lxc.monitor.`) are not containers.
pub fn container_of(path: &str) -> Option<Container> {
    let parts: Vec<&str> = path.split('/').filter(|c| !c.is_empty()).collect();
    // Kubernetes first: its container's own component is one of the runtimes' below.
    if let Some(k) = parts.iter().position(|c| c.starts_with("kubepods")) {
        if let Some((i, uid)) = parts[k..]
            .iter()
            .enumerate()
            .find_map(|(i, c)| Some((k + i, pod_uid(c)?)))
        {
            let id = parts.get(i + 1).map_or(String::new(), |c| {
                component("", c).map_or_else(|| c.strip_suffix(".scope").unwrap_or(c).to_string(), |x| x.id)
            });
            return Some(Container {
                runtime: "kubernetes".into(),
                id,
                pod: Some(uid),
            });
        }
    }
    (0..parts.len())
        .rev()
        .find_map(|i| component(if i == 0 { "" } else { parts[i - 1] }, parts[i]))
}

/// What a [`Watch`] saw of one task.
#[derive(Clone, Debug)]
struct Seen {
    path: String,
    /// Read at the run's start (false: after a spike).
    at_start: bool,
}

#[derive(Debug, Default)]
struct Shared {
    seen: Mutex<HashMap<u32, Seen>>,
    pending: AtomicBool,
    stop: AtomicBool,
}

/// Reads the cgroup of every task on the machine at the run's start, then of every task new
/// since its last look whenever a measuring thread reports a spike ([`Spotter::spike`]), at
/// most every [`RESCAN_GAP`], from a SCHED_OTHER thread.
#[derive(Debug)]
pub struct Watch {
    shared: Arc<Shared>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// Shortest time between two looks after spikes (spikes in between share the later look).
pub const RESCAN_GAP: Duration = Duration::from_millis(20);

/// A measuring thread's handle on a [`Watch`]: [`Spotter::spike`] never blocks.
#[derive(Clone, Debug)]
pub struct Spotter {
    shared: Arc<Shared>,
    thread: std::thread::Thread,
}

impl Spotter {
    /// A spike was seen: the watch looks at the tasks again (a futex wake, once per look).
    pub fn spike(&self) {
        if !self.shared.pending.swap(true, Ordering::Relaxed) {
            self.thread.unpark();
        }
    }
}

/// Read the cgroup of every task not yet in `seen`.
fn look(seen: &Mutex<HashMap<u32, Seen>>, at_start: bool) {
    let Ok(procs) = std::fs::read_dir("/proc") else { return };
    let tids: Vec<u32> = procs
        .flatten()
        .filter_map(|p| p.file_name().to_str()?.parse::<u32>().ok())
        .flat_map(|pid| {
            std::fs::read_dir(format!("/proc/{pid}/task"))
                .into_iter()
                .flatten()
                .flatten()
                .filter_map(|t| t.file_name().to_str()?.parse::<u32>().ok())
        })
        .collect();
    let new: Vec<u32> = {
        let s = seen.lock().unwrap_or_else(|e| e.into_inner());
        tids.into_iter().filter(|t| !s.contains_key(t)).collect()
    };
    let read: Vec<(u32, String)> = new.into_iter().filter_map(|t| Some((t, of_task(t)?))).collect();
    let mut s = seen.lock().unwrap_or_else(|e| e.into_inner());
    for (tid, path) in read {
        s.insert(tid, Seen { path, at_start });
    }
}

impl Watch {
    /// Look at every task now, then start the thread that looks again after spikes.
    pub fn start() -> Result<Watch, String> {
        let shared = Arc::new(Shared::default());
        look(&shared.seen, true);
        let s = shared.clone();
        let thread = std::thread::Builder::new()
            .name("latlab-cgroups".into())
            .spawn(move || {
                crate::caps::set_normal();
                while !s.stop.load(Ordering::Relaxed) {
                    std::thread::park_timeout(Duration::from_millis(200));
                    if s.pending.swap(false, Ordering::Relaxed) {
                        look(&s.seen, false);
                        std::thread::sleep(RESCAN_GAP);
                    }
                }
            })
            .map_err(|e| format!("cannot start the cgroup watch thread: {e}"))?;
        Ok(Watch {
            shared,
            thread: Some(thread),
        })
    }

    /// The handle measuring threads report spikes through.
    pub fn spotter(&self) -> Option<Spotter> {
        Some(Spotter {
            shared: self.shared.clone(),
            thread: self.thread.as_ref()?.thread().clone(),
        })
    }

    /// Stop the thread; what it saw.
    pub fn finish(mut self) -> Sightings {
        self.stop();
        let seen = std::mem::take(&mut *self.shared.seen.lock().unwrap_or_else(|e| e.into_inner()));
        Sightings(seen)
    }

    fn stop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The cgroups a [`Watch`] saw, by task id.
#[derive(Debug, Default)]
pub struct Sightings(HashMap<u32, Seen>);

/// The task a spike is blamed on: the one running in `cause`, else the one that ran ahead
/// longest (with the /proc fallback's times all 0, the first runnable one), never `woken`.
pub fn culprit(a: &Attribution, woken: u32) -> Option<(String, u32)> {
    if let Some(c) = &a.cause {
        if let Some(pid) = c.task.rsplit_once('/').and_then(|(_, p)| p.parse::<u32>().ok()) {
            return Some((c.task.clone(), pid));
        }
    }
    a.tasks
        .iter()
        .filter(|t| t.pid != 0 && t.pid != woken)
        .fold(None, |best: Option<&latlab_core::TaskSlice>, t| match best {
            Some(b) if b.ns >= t.ns => Some(b),
            _ => Some(t),
        })
        .map(|t| (format!("{}/{}", t.comm, t.pid), t.pid))
}

impl Sightings {
    /// Name the cgroup of the task `a` blames (see [`culprit`]; `woken` is the measured
    /// thread), from what the watch saw, else from /proc now; nothing when no task is blamed.
    pub fn name(&self, a: &mut Attribution, woken: u32) {
        let Some((task, tid)) = culprit(a, woken) else { return };
        let (path, source) = match self.0.get(&tid) {
            Some(s) => (
                s.path.clone(),
                format!(
                    "/proc/{tid}/cgroup, read {}",
                    if s.at_start {
                        "at the run's start"
                    } else {
                        "after the spike"
                    }
                ),
            ),
            None => match of_task(tid) {
                Some(p) => (p, format!("/proc/{tid}/cgroup, read after the run")),
                None => (
                    String::new(),
                    format!(
                        "unknown: task {tid} ended before its cgroup was read (the trace records only its \
                         comm and pid)"
                    ),
                ),
            },
        };
        a.cgroup = Some(CgroupOf {
            task,
            container: container_of(&path),
            path,
            source,
        });
    }
}

/// `statfs` magic of cgroup v2 and v1 hierarchies.
const CGROUP2_SUPER_MAGIC: i64 = 0x6367_7270;
const CGROUP_SUPER_MAGIC: i64 = 0x0027_e0eb;

/// Where cgroup v2 is mounted (`/proc/self/mountinfo`), with the root of the hierarchy the
/// mount shows.
pub fn v2_mount() -> Option<(PathBuf, String)> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    info.lines().find_map(|l| {
        let (pre, post) = l.split_once(" - ")?;
        if post.split_whitespace().next()? != "cgroup2" {
            return None;
        }
        let f: Vec<&str> = pre.split_whitespace().collect();
        Some((PathBuf::from(f.get(4)?), f.get(3)?.to_string()))
    })
}

/// The directory of this process's cgroup v2 cgroup.
fn own_dir() -> Result<PathBuf, String> {
    let (mount, root) = v2_mount().ok_or("cgroup v2 is not mounted (no cgroup2 line in /proc/self/mountinfo)")?;
    let path = of_task(std::process::id()).ok_or("/proc/self/cgroup has no cgroup v2 (0::) line")?;
    let rel = path.strip_prefix(root.trim_end_matches('/')).unwrap_or(&path);
    Ok(mount.join(rel.trim_start_matches('/')))
}

/// `cgroup.type` of the cgroup at `dir` (the root has none: `domain`).
fn cgroup_type(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("cgroup.type")).map_or_else(|_| "domain".into(), |t| t.trim().to_string())
}

/// The threaded domain of the cgroup at `dir`: itself unless it is threaded, else its
/// nearest ancestor that is not.
fn threaded_domain(dir: &Path) -> PathBuf {
    let mut d = dir.to_path_buf();
    while cgroup_type(&d) == "threaded" {
        match d.parent() {
            Some(p) => d = p.to_path_buf(),
            None => break,
        }
    }
    d
}

/// `--cgroup PATH`: a cgroup v2 directory the measuring threads run in: a threaded cgroup
/// takes each measuring thread (`cgroup.threads`), any other the whole process
/// (`cgroup.procs`).
#[derive(Clone, Debug)]
pub struct Target {
    dir: PathBuf,
    threaded: bool,
}

/// What a failed write into `file` means, in words.
fn write_error(file: &Path, e: &std::io::Error) -> String {
    let why = match e.raw_os_error() {
        Some(libc::EACCES) | Some(libc::EPERM) => {
            "permission denied (root, or the owner of the cgroup and of the cgroup.procs of the nearest \
             cgroup above both it and this process's, may move tasks into it)"
        }
        Some(libc::EBUSY) => {
            "the cgroup has controllers enabled for its children (cgroup.subtree_control), and cgroup v2 lets \
             no process live in such a cgroup: give a leaf cgroup"
        }
        Some(libc::EOPNOTSUPP) => {
            "a thread may join only a threaded cgroup of its own process's threaded domain: move the probe \
             into that domain first, or give a domain cgroup"
        }
        Some(libc::ENOENT) | Some(libc::ENODEV) => "the cgroup was removed",
        _ => "",
    };
    match why {
        "" => format!("writing {}: {e}", file.display()),
        w => format!("writing {}: {e}: {w}", file.display()),
    }
}

fn write_id(file: &Path, id: u32) -> Result<(), String> {
    std::fs::write(file, id.to_string()).map_err(|e| write_error(file, &e))
}

impl Target {
    /// Check that `path` is a cgroup v2 directory this process can run in, saying what is
    /// wrong otherwise.
    pub fn open(path: &Path) -> Result<Target, String> {
        let shown = path.display();
        let meta = std::fs::metadata(path).map_err(|e| format!("{shown}: {e}"))?;
        if !meta.is_dir() {
            return Err(format!(
                "{shown} is not a directory (a cgroup is one, under the cgroup2 mount)"
            ));
        }
        let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes())
            .map_err(|_| format!("{shown}: a path with a NUL byte"))?;
        // SAFETY: c is a valid NUL-terminated string and st a zeroed statfs the call fills.
        let mut st: libc::statfs = unsafe { std::mem::zeroed() };
        if unsafe { libc::statfs(c.as_ptr(), &mut st) } != 0 {
            return Err(format!("{shown}: statfs: {}", std::io::Error::last_os_error()));
        }
        let mounted = v2_mount().map_or("cgroup v2 is not mounted".into(), |(m, _)| {
            format!("cgroup v2 is mounted at {}", m.display())
        });
        match st.f_type as i64 {
            CGROUP2_SUPER_MAGIC => {}
            CGROUP_SUPER_MAGIC => return Err(format!("{shown} is a cgroup v1 directory, not cgroup v2 ({mounted})")),
            _ => {
                return Err(format!(
                    "{shown} is not a cgroup: it is not on a cgroup2 file system ({mounted})"
                ))
            }
        }
        let ty = cgroup_type(path);
        let threaded = match ty.as_str() {
            "threaded" => true,
            "domain" | "domain threaded" => false,
            other => {
                return Err(format!(
                    "{shown} is of cgroup.type '{other}': it can hold no process (a domain whose children are \
                     threaded and that is not their threaded domain)"
                ))
            }
        };
        let file = path.join(if threaded { "cgroup.threads" } else { "cgroup.procs" });
        // SAFETY: the path is a valid NUL-terminated string.
        let cf = std::ffi::CString::new(file.as_os_str().as_encoded_bytes()).map_err(|_| format!("{shown}: NUL"))?;
        if unsafe { libc::access(cf.as_ptr(), libc::W_OK) } != 0 {
            return Err(write_error(&file, &std::io::Error::last_os_error()));
        }
        if !threaded && path.parent().is_some_and(|p| p.join("cgroup.procs").exists()) {
            let sub = std::fs::read_to_string(path.join("cgroup.subtree_control")).unwrap_or_default();
            if !sub.trim().is_empty() {
                return Err(format!(
                    "{shown} has controllers enabled for its children (cgroup.subtree_control: {}), and cgroup v2 \
                     lets no process live in such a cgroup: give a leaf cgroup",
                    sub.trim()
                ));
            }
        }
        if threaded {
            let own = own_dir()?;
            let (theirs, ours) = (threaded_domain(path), threaded_domain(&own));
            if theirs != ours {
                return Err(format!(
                    "{shown} is a threaded cgroup of the threaded domain {}, but this process lives in {}: a thread \
                     may join only a threaded cgroup of its own process's domain (move the probe into {} first, or \
                     give a domain cgroup)",
                    theirs.display(),
                    own.display(),
                    theirs.display()
                ));
            }
        }
        Ok(Target {
            dir: path.to_path_buf(),
            threaded,
        })
    }

    /// A threaded cgroup: each measuring thread joins it; else the process does.
    pub fn threaded(&self) -> bool {
        self.threaded
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Move thread `tid` of this process into the (threaded) cgroup.
    pub fn enter_thread(&self, tid: u32) -> Result<(), String> {
        write_id(&self.dir.join("cgroup.threads"), tid)
    }

    /// Move this process (every thread of it; its children keep their cgroups) into the
    /// cgroup until the returned guard is dropped, when it goes back where it was.
    pub fn enter_process(&self) -> Result<Entered, String> {
        let back = own_dir()?.join("cgroup.procs");
        write_id(&self.dir.join("cgroup.procs"), std::process::id())?;
        Ok(Entered {
            back,
            id: std::process::id(),
        })
    }

    /// Move the calling thread into the (threaded) cgroup until the returned guard is
    /// dropped, when it goes back to its process's cgroup.
    pub fn enter_this_thread(&self) -> Result<Entered, String> {
        let back = own_dir()?.join("cgroup.threads");
        let tid = crate::clock::gettid();
        self.enter_thread(tid)?;
        Ok(Entered { back, id: tid })
    }

    /// Enter with the process (a domain cgroup) or the calling thread (a threaded one).
    pub fn enter(&self) -> Result<Entered, String> {
        match self.threaded {
            true => self.enter_this_thread(),
            false => self.enter_process(),
        }
    }
}

/// The process, or a thread, inside a [`Target`]; dropping it moves it back.
#[derive(Debug)]
pub struct Entered {
    /// The `cgroup.procs` or `cgroup.threads` of the cgroup it came from.
    back: PathBuf,
    id: u32,
}

impl Drop for Entered {
    fn drop(&mut self) {
        let _ = write_id(&self.back, self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use latlab_core::attribution::{Cause, TaskSlice};

    const ID: &str = "4f2d6c1a9b0e7d3c5a8f1e2b4c6d8e0f1a3b5c7d9e1f2a4b6c8d0e2f4a6b8c0d";
    const INNER: &str = "0a2d6c1a9b0e7d3c5a8f1e2b4c6d8e0f1a3b5c7d9e1f2a4b6c8d0e2f4a6b8c01";

    fn c(runtime: &str, id: &str, pod: Option<&str>) -> Option<Container> {
        Some(Container {
            runtime: runtime.into(),
            id: id.into(),
            pod: pod.map(str::to_string),
        })
    }

    #[test]
    fn v2_path_is_the_0_line() {
        let hybrid = "9:name=systemd:/\n4:memory:/x\n1:cpu:/\n0::/user.slice/user-1000.slice\n";
        assert_eq!(v2_path(hybrid), Some("/user.slice/user-1000.slice"));
        assert_eq!(v2_path("0::/\n"), Some("/"));
        assert_eq!(v2_path("4:memory:/x\n"), None);
    }

    #[test]
    fn container_paths_of_the_common_runtimes() {
        let cases: Vec<(String, Option<Container>)> = vec![
            (format!("/system.slice/docker-{ID}.scope"), c("docker", ID, None)),
            (format!("/docker/{ID}"), c("docker", ID, None)),
            (format!("/machine.slice/libpod-{ID}.scope"), c("podman", ID, None)),
            (
                format!("/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-{ID}.scope/container"),
                c("podman", ID, None),
            ),
            (format!("/machine.slice/libpod-conmon-{ID}.scope"), None),
            (format!("/libpod_parent/libpod-{ID}"), c("podman", ID, None)),
            (format!("/system.slice/cri-containerd-{ID}.scope"), c("containerd", ID, None)),
            (format!("/system.slice/crio-conmon-{ID}.scope"), None),
            (
                format!(
                    "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0f1e2d3c_4b5a_6978_8a9b_0c1d2e3f4a5b.slice/cri-containerd-{ID}.scope"
                ),
                c("kubernetes", ID, Some("0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b")),
            ),
            (
                format!("/kubepods.slice/kubepods-pod0f1e2d3c_4b5a.slice/crio-{ID}.scope"),
                c("kubernetes", ID, Some("0f1e2d3c-4b5a")),
            ),
            (
                format!("/kubepods/besteffort/pod0f1e2d3c-4b5a-6978/{ID}"),
                c("kubernetes", ID, Some("0f1e2d3c-4b5a-6978")),
            ),
            (
                "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod0f1e.slice".into(),
                c("kubernetes", "", Some("0f1e")),
            ),
            // kind: a Kubernetes node in a docker container; the innermost is the pod's.
            (
                format!("/system.slice/docker-{ID}.scope/kubepods/pod0a1b/{INNER}"),
                c("kubernetes", INNER, Some("0a1b")),
            ),
            ("/lxc.payload.web1".into(), c("lxc", "web1", None)),
            ("/lxc.payload.web1/system.slice/cron.service".into(), c("lxc", "web1", None)),
            ("/lxc.monitor.web1".into(), None),
            ("/lxc/web1".into(), c("lxc", "web1", None)),
            (
                "/machine.slice/machine-qemu\\x2d1\\x2dguest.scope/libvirt/vcpu0".into(),
                c("machine", "qemu-1-guest", None),
            ),
            ("/machine.slice/systemd-nspawn@box.service/payload".into(), c("nspawn", "box", None)),
            ("/user.slice/user-1000.slice/session-3.scope".into(), None),
            ("/system.slice/docker.service".into(), None),
            (format!("/system.slice/docker-{}.scope", &ID[..20]), None),
            ("/".into(), None),
            ("".into(), None),
        ];
        for (path, want) in cases {
            assert_eq!(container_of(&path), want, "{path}");
        }
    }

    #[test]
    fn container_labels_cut_ids_as_docker_ps() {
        assert_eq!(c("docker", ID, None).unwrap().label(), "docker 4f2d6c1a9b0e");
        assert_eq!(c("lxc", "web1", None).unwrap().label(), "lxc web1");
        assert_eq!(
            c("kubernetes", ID, Some("0a1b")).unwrap().label(),
            "kubernetes pod 0a1b 4f2d6c1a9b0e"
        );
        assert_eq!(
            c("kubernetes", "", Some("0a1b")).unwrap().label(),
            "kubernetes pod 0a1b"
        );
    }

    fn slice(comm: &str, pid: u32, ns: u64) -> TaskSlice {
        TaskSlice {
            comm: comm.into(),
            pid,
            ns,
        }
    }

    #[test]
    fn the_culprit_is_the_running_task_else_the_longest_ahead() {
        let mut a = Attribution {
            tasks: vec![slice("cc1", 10, 5), slice("dd", 11, 9), slice("latlab-cpu0", 12, 99)],
            ..Default::default()
        };
        assert_eq!(culprit(&a, 12), Some(("dd/11".into(), 11)));
        a.cause = Some(Cause {
            task: "kworker/0:1/40".into(),
            path: "f".into(),
            lock: None,
            since_ns: 0,
            until_ns: 1,
            ended_by: "sched_switch".into(),
        });
        assert_eq!(culprit(&a, 12), Some(("kworker/0:1/40".into(), 40)));
        // The /proc fallback's tasks have no times: the first that is not the woken thread.
        let b = Attribution {
            tasks: vec![slice("latlab-cpu0", 12, 0), slice("make", 7, 0), slice("cc1", 8, 0)],
            ..Default::default()
        };
        assert_eq!(culprit(&b, 12), Some(("make/7".into(), 7)));
        assert_eq!(culprit(&Attribution::default(), 12), None);
    }

    #[test]
    fn sightings_name_the_cgroup_seen_or_say_why_not() {
        let mut seen = HashMap::new();
        seen.insert(
            11,
            Seen {
                path: format!("/system.slice/docker-{ID}.scope"),
                at_start: false,
            },
        );
        let s = Sightings(seen);
        let mut a = Attribution {
            tasks: vec![slice("dd", 11, 9)],
            ..Default::default()
        };
        s.name(&mut a, 1);
        let g = a.cgroup.unwrap();
        assert_eq!(g.task, "dd/11");
        assert_eq!(g.container, c("docker", ID, None));
        assert_eq!(g.source, "/proc/11/cgroup, read after the spike");
        // A task the watch never saw and that no longer exists (pid_max is at most 2^22).
        let mut gone = Attribution {
            tasks: vec![slice("cc1", 1 << 23, 9)],
            ..Default::default()
        };
        s.name(&mut gone, 1);
        let g = gone.cgroup.unwrap();
        assert_eq!((g.path.as_str(), g.container), ("", None));
        assert!(g.source.starts_with("unknown: task 8388608 ended"), "{}", g.source);
        // No task blamed: no cgroup.
        let mut none = Attribution::default();
        s.name(&mut none, 1);
        assert_eq!(none.cgroup, None);
    }

    #[test]
    fn a_watch_sees_this_process_at_the_start() {
        let w = Watch::start().unwrap();
        w.spotter().unwrap().spike();
        let s = w.finish();
        let me = crate::clock::gettid();
        if let Some(path) = of_task(me) {
            assert_eq!(s.0.get(&me).map(|x| x.path.clone()), Some(path));
        }
    }

    #[test]
    fn open_refuses_what_is_not_a_cgroup_v2_directory() {
        let e = Target::open(Path::new("/nonexistent-latlab")).unwrap_err();
        assert!(e.starts_with("/nonexistent-latlab: "), "{e}");
        let e = Target::open(Path::new("/proc/self/status")).unwrap_err();
        assert!(e.contains("is not a directory"), "{e}");
        let e = Target::open(Path::new("/proc")).unwrap_err();
        assert!(e.contains("is not a cgroup: it is not on a cgroup2 file system"), "{e}");
    }
}
