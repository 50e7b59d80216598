//! End-to-end: `latlab probe ... --on-threshold CMD` (a command run at a spike, with the
//! sample in its environment and the recording frozen) and `--cgroup PATH` (the measuring
//! threads in a real cgroup made here), and the spikes' cgroups. Files go to private 0700
//! directories; cgroups are made under the cgroup v2 mount and removed.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod common;

use common::{as_nobody, is_root, latlab};

/// A private (0700, mkdtemp) directory, removed when dropped.
struct Private(PathBuf);

impl Private {
    fn new() -> Private {
        let tmpl = std::env::temp_dir().join("latlab-spike-test-XXXXXX");
        let mut bytes = tmpl.into_os_string().into_encoded_bytes();
        bytes.push(0);
        // SAFETY: bytes is a writable NUL-terminated template that mkdtemp fills in.
        let p = unsafe { libc::mkdtemp(bytes.as_mut_ptr().cast()) };
        assert!(!p.is_null(), "mkdtemp: {}", std::io::Error::last_os_error());
        bytes.pop();
        // SAFETY: mkdtemp returned the template filled in, valid UTF-8 as the temp dir is.
        Private(PathBuf::from(unsafe { String::from_utf8_unchecked(bytes) }))
    }
    fn join(&self, name: &str) -> String {
        self.0.join(name).to_str().unwrap().to_string()
    }
}

impl Drop for Private {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn json(p: &str) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{p}: {e}"))).unwrap()
}

/// The first CPU this process may run on, as `--cpus` takes it.
fn first_cpu() -> String {
    latlab_first_cpu().to_string()
}

fn latlab_first_cpu() -> usize {
    // SAFETY: a zeroed cpu_set_t is valid; sched_getaffinity fills it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: set is a valid cpu_set_t of the size given.
    unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    // SAFETY: set was filled above.
    (0..libc::CPU_SETSIZE as usize)
        .find(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .unwrap_or(0)
}

/// `KEY=VALUE` lines as a map.
fn env_file(p: &str) -> std::collections::BTreeMap<String, String> {
    std::fs::read_to_string(p)
        .unwrap_or_else(|e| panic!("{p}: {e}"))
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The timestamps (s) of the events in an ftrace text file.
fn trace_times(text: &str) -> Vec<f64> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            l.split_whitespace()
                .find_map(|w| w.strip_suffix(':').filter(|t| t.contains('.'))?.parse::<f64>().ok())
        })
        .collect()
}

#[test]
fn on_threshold_runs_the_command_with_the_sample_and_the_frozen_trace() {
    let d = Private::new();
    let cpu = first_cpu();
    // The command waits 200 ms before copying the trace: were the recording still running,
    // the measuring thread's wakeups every ms would be in it up to then.
    let cmd = format!(
        "sh -c 'env > {}; sleep 0.2; cat \"$LATLAB_TRACE\" > {} 2>/dev/null; echo hello from the command'",
        d.join("env"),
        d.join("trace")
    );
    let json_path = d.join("r.json");
    let out = latlab(&[
        "probe",
        "timer",
        "--cpus",
        &cpu,
        "--duration",
        "1s",
        "--trace-above",
        "1us",
        "--on-threshold",
        &cmd,
        "--json",
        &json_path,
    ]);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    let env = env_file(&d.join("env"));
    let get = |k: &str| env.get(k).unwrap_or_else(|| panic!("{k} in {env:?}")).clone();
    let latency: u64 = get("LATLAB_LATENCY_NS").parse().unwrap();
    assert!(latency >= 1000, "{latency}");
    assert_eq!(get("LATLAB_LATENCY_US"), format!("{:.3}", latency as f64 / 1000.0));
    assert_eq!(get("LATLAB_THRESHOLD_NS"), "1000");
    assert_eq!(get("LATLAB_CPU"), cpu);
    assert_eq!(get("LATLAB_STREAM"), format!("cpu{cpu}"));
    assert_eq!(get("LATLAB_COUNT"), "1");
    let at: u64 = get("LATLAB_AT_NS").parse().unwrap();
    let mono: u64 = get("LATLAB_MONOTONIC_NS").parse().unwrap();
    assert!(mono > at, "{mono} {at}");
    let v = json(&json_path);
    let max = v["streams_summary"][0]["max_us"].as_f64().unwrap();
    assert!(latency as f64 / 1000.0 <= max + 0.001, "{latency} above the max {max}");
    let setting = v["meta"]["settings"]["on_threshold"].as_str().unwrap();
    assert!(
        setting.starts_with(&format!("`{cmd}` (once, at 1.0 us): ran 1 time")),
        "{setting}"
    );
    assert!(
        err.contains(&format!("--on-threshold `{cmd}` for cpu{cpu}'s sample of "))
            && err.contains(": exited with status 0 after "),
        "{err}"
    );
    assert!(err.contains("\n    | hello from the command\n"), "{err}");
    match env.get("LATLAB_TRACE") {
        Some(t) => {
            assert!(
                t.starts_with('/') && t.ends_with("/trace") && t.contains("/instances/latlab-"),
                "{t}"
            );
            let times = trace_times(&std::fs::read_to_string(d.join("trace")).unwrap());
            assert!(!times.is_empty(), "the command read an empty trace");
            let crossing_s = mono as f64 / 1e9;
            let last = times.iter().copied().fold(0.0, f64::max);
            assert!(
                last < crossing_s + 0.1,
                "events up to {last} s in the trace the command read, the crossing at {crossing_s} s: not frozen"
            );
            // The recording resumed after the command: spikes well after it have their events.
            let later = v["streams"][0]["recorded"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|r| r["sample_at_ns"].as_u64().unwrap() > at + 400_000_000)
                .filter(|r| !r["events"].as_array().unwrap().is_empty())
                .count();
            assert!(later > 0, "no events recorded after the command ended");
        }
        None => assert!(
            err.contains("no scheduler tracepoints"),
            "no LATLAB_TRACE, yet traced: {err}"
        ),
    }
}

#[test]
fn on_threshold_every_runs_it_again_and_break_above_runs_it_at_the_break() {
    let d = Private::new();
    let cpu = first_cpu();
    let counts = d.join("counts");
    let cmd = format!("echo $LATLAB_COUNT >> {counts}");
    let json_path = d.join("r.json");
    let out = latlab(&[
        "probe",
        "timer",
        "--cpus",
        &cpu,
        "--duration",
        "1s",
        "--trace-above",
        "1us",
        "--on-threshold",
        &cmd,
        "--on-threshold-shell",
        "--on-threshold-every",
        "100ms",
        "--json",
        &json_path,
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let runs: Vec<u64> = std::fs::read_to_string(&counts)
        .unwrap()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    assert!(runs.len() >= 2, "{runs:?}");
    assert_eq!(runs, (1..=runs.len() as u64).collect::<Vec<_>>());
    let setting = json(&json_path)["meta"]["settings"]["on_threshold"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        setting.contains(&format!(
            "(at most once every 0.100 s, at 1.0 us): ran {} times",
            runs.len()
        )),
        "{setting}"
    );

    // With --break-above: once, at the sample that stops the run.
    let env = d.join("env");
    let cmd = format!("sh -c 'env > {env}'");
    let trace = d.join("break.txt");
    let out = latlab(&[
        "probe",
        "timer",
        "--cpus",
        &cpu,
        "--duration",
        "2s",
        "--break-above",
        "1us",
        "--break-trace",
        &trace,
        "--on-threshold",
        &cmd,
        "--json",
        &json_path,
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let e = env_file(&env);
    let stopped = json(&json_path)["meta"]["settings"]["stopped_by"]
        .as_str()
        .unwrap()
        .to_string();
    let lat: u64 = e["LATLAB_LATENCY_NS"].parse().unwrap();
    let at: u64 = e["LATLAB_AT_NS"].parse().unwrap();
    assert!(
        stopped.ends_with(&format!(
            "cpu{cpu}'s sample of {:.1} us at t={:.3} s",
            lat as f64 / 1000.0,
            at as f64 / 1e9
        )),
        "{stopped} vs {e:?}"
    );
}

#[test]
fn on_threshold_mistakes_get_clear_errors() {
    let cpu = first_cpu();
    let run = |extra: &[&str]| {
        let mut a = vec!["probe", "timer", "--cpus", &cpu, "--loops", "5"];
        a.extend(extra);
        latlab(&a)
    };
    for (extra, want) in [
        (
            &["--trace-above", "1us", "--on-threshold", "latlab-no-such-command-x"][..],
            "--on-threshold 'latlab-no-such-command-x': no executable latlab-no-such-command-x in PATH",
        ),
        (&["--on-threshold", "true"][..], "--on-threshold needs a threshold"),
        (&["--explain", "--on-threshold", "echo 'x"][..], "an unclosed quote"),
        (
            &["--explain", "--on-threshold", "true", "--on-threshold-every", "0"][..],
            "must be greater than zero",
        ),
        (
            &[
                "--break-above",
                "1ms",
                "--on-threshold",
                "true",
                "--on-threshold-every",
                "1s",
            ][..],
            "--on-threshold-every: the run ends at --break-above's first crossing",
        ),
        (&["--on-threshold-every", "1s"][..], "--on-threshold"),
    ] {
        let out = run(extra);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {err}");
        assert!(err.contains(want), "{extra:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    // A command that fails: the run goes on, the failure is said.
    let out = run(&[
        "--trace-above",
        "1us",
        "--on-threshold",
        "sh -c 'echo broken >&2; exit 4'",
    ]);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains(": exited with status 4 after ") && err.contains("    | broken\n"),
        "{err}"
    );
    assert!(
        err.contains("warning: --on-threshold: ") && err.contains("1 of them failed"),
        "{err}"
    );
}

/// A cgroup v2 directory made for a test under the cgroup2 mount, removed when dropped;
/// `None`, with the reason printed, when there is no cgroup v2 or it is not writable.
struct Cgroup {
    dir: PathBuf,
    /// The path /proc/PID/cgroup shows for it.
    shown: String,
}

fn v2_mount() -> Option<(PathBuf, String)> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    info.lines().find_map(|l| {
        let (pre, post) = l.split_once(" - ")?;
        (post.split_whitespace().next()? == "cgroup2").then_some(())?;
        let f: Vec<&str> = pre.split_whitespace().collect();
        Some((PathBuf::from(f.get(4)?), f.get(3)?.to_string()))
    })
}

impl Cgroup {
    fn make(name: &str) -> Option<Cgroup> {
        let Some((mount, root)) = v2_mount() else {
            eprintln!("skip: cgroup v2 is not mounted");
            return None;
        };
        let name = format!("{name}-{}", std::process::id());
        let dir = mount.join(&name);
        if let Err(e) = std::fs::create_dir(&dir) {
            eprintln!("skip: cannot make a cgroup under {} ({e})", mount.display());
            return None;
        }
        let shown = format!("{}/{name}", root.trim_end_matches('/'));
        Some(Cgroup { dir, shown })
    }

    fn child(&self, name: &str) -> Cgroup {
        let dir = self.dir.join(name);
        std::fs::create_dir(&dir).unwrap();
        Cgroup {
            dir,
            shown: format!("{}/{name}", self.shown),
        }
    }

    fn path(&self) -> &str {
        self.dir.to_str().unwrap()
    }

    fn members(&self, file: &str) -> String {
        std::fs::read_to_string(self.dir.join(file)).unwrap()
    }

    /// The members once the probe's helpers have gone: the guardian process outlives the
    /// probe by the moment it takes to see its pipe close and clean up, so a member may
    /// linger briefly after `latlab` exits (up to 10 s on a loaded machine).
    fn members_when_settled(&self, file: &str) -> String {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let m = self.members(file);
            if m.is_empty() || std::time::Instant::now() > deadline {
                return m;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.dir);
    }
}

fn path_str(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn cgroup_runs_the_probe_process_in_a_domain_cgroup_and_leaves_it_empty() {
    let Some(cg) = Cgroup::make("latlab-test-domain") else {
        return;
    };
    let d = Private::new();
    let json_path = d.join("r.json");
    let out = latlab(&[
        "probe",
        "timer",
        "--cpus",
        &first_cpu(),
        "--loops",
        "50",
        "--cgroup",
        cg.path(),
        "--json",
        &json_path,
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v = json(&json_path);
    assert_eq!(
        v["meta"]["settings"]["cgroup"],
        format!("{} (the probe's process)", cg.shown)
    );
    assert_eq!(
        cg.members_when_settled("cgroup.procs"),
        "",
        "the probe left its process in the cgroup"
    );
    std::fs::remove_dir(&cg.dir).expect("the cgroup is empty and removable");
}

#[test]
fn cgroup_takes_the_measuring_threads_into_a_threaded_cgroup() {
    let Some(domain) = Cgroup::make("latlab-test-threaded") else {
        return;
    };
    let threads = domain.child("measuring");
    std::fs::write(threads.dir.join("cgroup.type"), "threaded").unwrap();
    let d = Private::new();
    let json_path = d.join("r.json");
    // The probe must live in the threaded cgroup's domain for its threads to join it.
    let script = format!(
        "echo $$ > {}/cgroup.procs && exec \"$0\" probe timer --cpus {} --loops 50 --cgroup {} --json {json_path}",
        domain.path(),
        first_cpu(),
        threads.path()
    );
    let out = Command::new("sh")
        .args(["-c", &script, env!("CARGO_BIN_EXE_latlab")])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let v = json(&json_path);
    assert_eq!(
        v["meta"]["settings"]["cgroup"],
        format!("{} (the measuring threads)", threads.shown)
    );
    assert_eq!(threads.members_when_settled("cgroup.threads"), "");
    assert_eq!(domain.members_when_settled("cgroup.procs"), "");

    // From outside the domain the threads cannot join it: said before anything runs.
    let out = latlab(&["probe", "timer", "--loops", "5", "--cgroup", threads.path()]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "--cgroup {} is a threaded cgroup of the threaded domain {}",
            threads.path(),
            domain.path()
        )),
        "{err}"
    );
    drop(threads);
}

#[test]
fn cgroup_mistakes_get_clear_errors() {
    let d = Private::new();
    let missing = d.join("nothing");
    for (path, want) in [
        (
            missing.as_str(),
            format!("--cgroup {missing}: No such file or directory"),
        ),
        (
            "/proc",
            "--cgroup /proc is not a cgroup: it is not on a cgroup2 file system".to_string(),
        ),
        (
            "/proc/self/status",
            "--cgroup /proc/self/status is not a directory".to_string(),
        ),
    ] {
        let out = latlab(&["probe", "timer", "--loops", "5", "--cgroup", path]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{path}: {err}");
        assert!(err.contains(&want), "{path}: {err}");
    }
    if !is_root() || Command::new("setpriv").arg("--version").output().is_err() {
        eprintln!("skip: the permission case needs root and setpriv");
        return;
    }
    let Some(cg) = Cgroup::make("latlab-test-perm") else {
        return;
    };
    let out = as_nobody(env!("CARGO_BIN_EXE_latlab"))
        .args(["probe", "timer", "--loops", "5", "--cgroup", cg.path()])
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "--cgroup writing {}/cgroup.procs: Permission denied",
            cg.path()
        )) && err.contains("permission denied (root"),
        "{err}"
    );
}

#[test]
fn spikes_name_the_cgroup_and_container_of_the_task_on_the_cpu() {
    if !is_root() {
        eprintln!("skip: making a cgroup and moving a task into it needs root");
        return;
    }
    // An LXC-shaped cgroup, so the container is read from a real path.
    let Some(cg) = Cgroup::make("lxc.payload.latlab-test") else {
        return;
    };
    let cpu = first_cpu();
    // A busy loop on the measured CPU, in that cgroup, favoured over the machine's other tasks.
    let script = format!(
        "echo $$ > {}/cgroup.procs && exec taskset -c {cpu} nice -n -10 sh -c 'while :; do :; done'",
        cg.path()
    );
    let mut busy = Command::new("sh").args(["-c", &script]).spawn().unwrap();
    // Wait until it is in the cgroup.
    for _ in 0..200 {
        if !cg.members("cgroup.procs").is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let d = Private::new();
    let json_path = d.join("r.json");
    let out = latlab(&[
        "probe",
        "timer",
        "--cpus",
        &cpu,
        "--duration",
        "1s",
        "--trace-above",
        "1us",
        "--json",
        &json_path,
    ]);
    let _ = busy.kill();
    let _ = busy.wait();
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    let v = json(&json_path);
    let id = cg.shown.rsplit_once("lxc.payload.").unwrap().1.to_string();
    let named: Vec<&serde_json::Value> = v["streams"][0]["worst"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|w| w["attribution"].get("cgroup"))
        .collect();
    assert!(!named.is_empty(), "no spike names a cgroup");
    let ours: Vec<&&serde_json::Value> = named.iter().filter(|g| g["path"] == cg.shown.as_str()).collect();
    assert!(
        !ours.is_empty(),
        "no spike blames the busy loop's cgroup {}: {named:?}",
        cg.shown
    );
    for g in &ours {
        assert_eq!(g["container"], serde_json::json!({"runtime": "lxc", "id": id}));
        assert!(g["task"].as_str().unwrap().starts_with("sh/"), "{g}");
    }
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("\nspikes by cgroup:\ncgroup "), "{text}");
    let row = text
        .lines()
        .find(|l| l.starts_with(&cg.shown))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        row.contains(&format!("lxc {id}")) && row.contains(&format!("  {}  ", ours.len())),
        "{row}"
    );
    assert!(text.contains(&format!(", container lxc {id} (/proc/")), "{text}");

    // report compare groups them as the probe did.
    let out = latlab(&["report", "compare", &json_path, &json_path]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(text.contains("\nspikes by cgroup\nrun "), "{text}");
    assert_eq!(text.lines().filter(|l| l.contains(&cg.shown)).count(), 2, "{text}");
}

#[test]
fn write_takes_on_threshold_and_cgroup_too() {
    let d = Private::new();
    let env = d.join("env");
    let json_path = d.join("r.json");
    let cmd = format!("sh -c 'env > {env}'");
    let mut args = vec![
        "probe",
        "write",
        "--size",
        "4M",
        "--dir",
        path_str(&d.0),
        "--trace-above",
        "1us",
        "--on-threshold",
        &cmd,
        "--json",
        &json_path,
    ];
    let cg = Cgroup::make("latlab-test-write");
    if let Some(c) = &cg {
        args.extend(["--cgroup", c.path()]);
    }
    let out = latlab(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    let e = env_file(&env);
    assert_eq!(e["LATLAB_STREAM"], "write");
    assert!(e["LATLAB_LATENCY_NS"].parse::<u64>().unwrap() >= 1000, "{e:?}");
    assert!(e["LATLAB_CPU"].parse::<usize>().is_ok(), "{e:?}");
    if let Some(c) = &cg {
        assert_eq!(
            json(&json_path)["meta"]["settings"]["cgroup"],
            format!("{} (the probe's process)", c.shown)
        );
        assert_eq!(c.members("cgroup.procs"), "");
    }
}
