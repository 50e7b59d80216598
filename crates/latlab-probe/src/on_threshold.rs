//! `--on-threshold CMD`: run a command when a sample crosses the threshold, as rtla's
//! `--on-threshold`, with the recording frozen so the command sees the trace as of the spike.
//!
//! The measuring thread that sees the crossing only checks two atomics, stops the ftrace
//! recording (one write to `tracing_on`, as `--break-above` does) and wakes the runner, a
//! SCHED_OTHER thread that runs the command and waits for it; a crossing while the command
//! runs, or inside the rate limit, is counted as skipped. After the command the recording
//! resumes (unless `--break-above` ends the run there). The command gets the sample in its
//! environment (`LATLAB_*`, [`Crossing::env`]), never on its command line; it runs without a
//! shell (its words split as a POSIX shell splits them, nothing expanded) unless the action
//! asks for `sh -c`. Its exit status and output (stdout and stderr merged, the first
//! [`OUTPUT_KEPT`] bytes) are kept in a [`Ran`] per run.

use crate::sched_trace::Freezer;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Bytes of a command's output kept for the report.
pub const OUTPUT_KEPT: usize = 4096;
/// How long the end of the run waits for a command still running before killing it.
pub const FINISH_WAIT: Duration = Duration::from_secs(10);

/// What to run, and when.
#[derive(Clone, Debug, PartialEq)]
pub struct Action {
    /// The command as the user gave it.
    pub command: String,
    /// The program and its arguments (`sh -c COMMAND` with `shell`).
    pub argv: Vec<String>,
    /// Samples of at least this (ns) fire it.
    pub threshold_ns: u64,
    /// `None`: once; `Some(gap)`: at every crossing, at most once per `gap`.
    pub every: Option<Duration>,
    /// Resume the recording after the command (false when the run ends at the crossing).
    pub resume: bool,
}

/// Whether `p` is a regular file this process may execute.
fn executable(p: &Path) -> bool {
    let Ok(c) = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()) else {
        return false;
    };
    // SAFETY: c is a valid NUL-terminated string.
    p.is_file() && unsafe { libc::access(c.as_ptr(), libc::X_OK) } == 0
}

/// Where `program` is: itself when it has a `/`, else the first match in `PATH`.
fn find_program(program: &str) -> Option<PathBuf> {
    if program.contains('/') {
        return executable(Path::new(program)).then(|| PathBuf::from(program));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| executable(p))
}

impl Action {
    /// The action for `command`: its words as a POSIX shell splits them (quotes and
    /// backslashes; no expansion, no redirection), or `sh -c COMMAND` with `shell`. The
    /// program must exist and be executable.
    pub fn new(
        command: &str,
        shell: bool,
        threshold_ns: u64,
        every: Option<Duration>,
        resume: bool,
    ) -> Result<Action, String> {
        let argv = match shell {
            true => vec!["/bin/sh".to_string(), "-c".to_string(), command.to_string()],
            false => shlex::split(command)
                .ok_or_else(|| format!("'{command}': an unclosed quote or a trailing backslash"))?,
        };
        let Some(program) = argv.first().filter(|p| !p.is_empty()) else {
            return Err(format!("'{command}': no command"));
        };
        if find_program(program).is_none() {
            return Err(match program.contains('/') {
                true => format!("'{command}': {program} is not an executable file"),
                false => format!("'{command}': no executable {program} in PATH"),
            });
        }
        if every.is_some_and(|g| g.is_zero()) {
            return Err("the rate limit must be longer than 0".into());
        }
        Ok(Action {
            command: command.to_string(),
            argv,
            threshold_ns,
            every,
            resume,
        })
    }

    /// `once`, or `at most once every 1.000 s`.
    pub fn rate(&self) -> String {
        match self.every {
            None => "once".into(),
            Some(g) => format!("at most once every {:.3} s", g.as_secs_f64()),
        }
    }
}

/// The sample that fired the command.
#[derive(Clone, Debug, PartialEq)]
pub struct Crossing {
    pub stream: String,
    /// The CPU it was measured on (a periodic stream's), or the one the writer was on.
    pub cpu: Option<usize>,
    /// Since the stream's start, as the result's samples.
    pub at_ns: u64,
    /// CLOCK_MONOTONIC of the sample's stimulus (the trace's clock, `trace_clock mono`).
    pub mono_ns: u64,
    pub latency_ns: u64,
}

impl Crossing {
    /// `cpu0's sample of 120.3 us at t=0.004 s`.
    pub fn describe(&self) -> String {
        crate::timer::describe_sample(&self.stream, self.latency_ns, self.at_ns)
    }

    /// The command's environment: the sample, the threshold, the run and the trace.
    pub fn env(&self, count: u64, threshold_ns: u64, trace: Option<&Path>) -> Vec<(String, String)> {
        let mut env = vec![
            ("LATLAB_LATENCY_NS", self.latency_ns.to_string()),
            ("LATLAB_LATENCY_US", format!("{:.3}", self.latency_ns as f64 / 1000.0)),
            ("LATLAB_THRESHOLD_NS", threshold_ns.to_string()),
            ("LATLAB_STREAM", self.stream.clone()),
            ("LATLAB_AT_NS", self.at_ns.to_string()),
            ("LATLAB_MONOTONIC_NS", self.mono_ns.to_string()),
            ("LATLAB_COUNT", count.to_string()),
            ("LATLAB_PROBE_PID", std::process::id().to_string()),
        ];
        if let Some(cpu) = self.cpu {
            env.push(("LATLAB_CPU", cpu.to_string()));
        }
        if let Some(t) = trace {
            env.push(("LATLAB_TRACE", t.display().to_string()));
        }
        env.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
    }
}

/// One run of the command.
#[derive(Clone, Debug, PartialEq)]
pub struct Ran {
    pub crossing: Crossing,
    /// `exited with status 0`, `killed by signal 9`, or why it could not start.
    pub how: String,
    /// Exited with status 0.
    pub ok: bool,
    /// Its stdout and stderr, merged, the first [`OUTPUT_KEPT`] bytes.
    pub output: String,
    pub took_ns: u64,
}

/// What the command did over the run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Report {
    pub ran: Vec<Ran>,
    /// Crossings that came while the command ran or inside the rate limit.
    pub skipped: u64,
}

#[derive(Debug)]
struct Shared {
    action: Action,
    freezer: Option<Freezer>,
    /// CLOCK_MONOTONIC before which a crossing is skipped (u64::MAX after a one-shot).
    next_ns: AtomicU64,
    /// Set by the measuring thread that wins a crossing, cleared by the runner after it.
    busy: AtomicBool,
    /// Set once `slot` holds the crossing: the runner locks `slot` only then.
    ready: AtomicBool,
    slot: Mutex<Option<Crossing>>,
    skipped: AtomicU64,
    stop: AtomicBool,
    /// The running command's process group, 0 when none runs.
    running: AtomicI32,
    ran: Mutex<Vec<Ran>>,
}

/// The runner of an [`Action`] over one run: [`Hook::offer`] from the measuring threads,
/// [`Hook::finish`] after them.
#[derive(Debug)]
pub struct Hook {
    shared: Arc<Shared>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// Read at most [`OUTPUT_KEPT`] bytes from `r`, then drain it (the command must not block
/// on a full pipe).
fn read_output(mut r: impl Read) -> String {
    let mut kept = Vec::new();
    let _ = (&mut r).take(OUTPUT_KEPT as u64).read_to_end(&mut kept);
    let _ = std::io::copy(&mut r, &mut std::io::sink());
    String::from_utf8_lossy(&kept).into_owned()
}

/// `exited with status 3`, `killed by signal 9`.
fn describe(s: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (s.code(), s.signal()) {
        (Some(c), _) => format!("exited with status {c}"),
        (None, Some(sig)) => format!("killed by signal {sig}"),
        (None, None) => format!("ended ({s})"),
    }
}

/// A pipe whose read end is returned and whose write end takes both stdout and stderr.
fn output_pipe() -> std::io::Result<(std::fs::File, Stdio, Stdio)> {
    let mut fds = [0; 2];
    // SAFETY: fds is a valid array of two ints for pipe2 to fill.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    use std::os::fd::FromRawFd;
    // SAFETY: pipe2 returned two fresh descriptors this function now owns.
    let (r, w) = unsafe {
        (
            std::fs::File::from_raw_fd(fds[0]),
            std::os::fd::OwnedFd::from_raw_fd(fds[1]),
        )
    };
    let w2 = w.try_clone()?;
    Ok((r, Stdio::from(w), Stdio::from(w2)))
}

impl Shared {
    /// Run the command for `c`, the `count`th time.
    fn run(&self, c: Crossing, count: u64) -> Ran {
        let t0 = crate::clock::mono_ns();
        let trace = self.freezer.as_ref().map(Freezer::trace_file);
        let (how, ok, output) = match output_pipe() {
            Err(e) => (
                format!("could not start: a pipe for its output: {e}"),
                false,
                String::new(),
            ),
            Ok((r, out, err)) => {
                let mut cmd = Command::new(&self.action.argv[0]);
                cmd.args(&self.action.argv[1..])
                    .envs(c.env(count, self.action.threshold_ns, trace.as_deref()))
                    .stdin(Stdio::null())
                    .stdout(out)
                    .stderr(err)
                    .process_group(0);
                match cmd.spawn() {
                    Err(e) => (
                        format!("could not start {}: {e}", self.action.argv[0]),
                        false,
                        String::new(),
                    ),
                    Ok(mut child) => {
                        // Our copies of the write end go with `cmd`: the read ends when the
                        // command (and all it started) closes its own.
                        drop(cmd);
                        let pgid = child.id() as i32;
                        let _held = crate::guard::Held::group(pgid);
                        self.running.store(pgid, Ordering::Relaxed);
                        let output = read_output(r);
                        let status = child.wait();
                        self.running.store(0, Ordering::Relaxed);
                        match status {
                            Ok(s) => (describe(s), s.success(), output),
                            Err(e) => (format!("could not be waited for: {e}"), false, output),
                        }
                    }
                }
            }
        };
        Ran {
            crossing: c,
            how,
            ok,
            output,
            took_ns: crate::clock::mono_ns().saturating_sub(t0),
        }
    }
}

impl Hook {
    /// Start the runner; `freezer` is the recording to freeze at a crossing, when the run is
    /// traced.
    pub fn start(action: Action, freezer: Option<Freezer>) -> Result<Hook, String> {
        let shared = Arc::new(Shared {
            action,
            freezer,
            next_ns: AtomicU64::new(0),
            busy: AtomicBool::new(false),
            ready: AtomicBool::new(false),
            slot: Mutex::new(None),
            skipped: AtomicU64::new(0),
            stop: AtomicBool::new(false),
            running: AtomicI32::new(0),
            ran: Mutex::new(Vec::new()),
        });
        let s = shared.clone();
        let thread = std::thread::Builder::new()
            .name("latlab-on-threshold".into())
            .spawn(move || {
                crate::caps::set_normal();
                let mut count = 0;
                loop {
                    let c = match s.ready.swap(false, Ordering::Acquire) {
                        true => s.slot.lock().unwrap_or_else(|e| e.into_inner()).take(),
                        false => None,
                    };
                    match c {
                        Some(c) => {
                            count += 1;
                            let ran = s.run(c, count);
                            s.ran.lock().unwrap_or_else(|e| e.into_inner()).push(ran);
                            if s.action.resume {
                                if let Some(f) = &s.freezer {
                                    f.thaw();
                                }
                            }
                            s.busy.store(false, Ordering::Release);
                        }
                        None if s.stop.load(Ordering::Acquire) => break,
                        None => std::thread::park_timeout(Duration::from_millis(100)),
                    }
                }
            })
            .map_err(|e| format!("cannot start the --on-threshold thread: {e}"))?;
        Ok(Hook {
            shared,
            thread: Some(thread),
        })
    }

    /// A sample of `latency_ns` on `stream`: at or above the threshold, outside the rate
    /// limit and with no command running, freeze the recording and hand it to the runner.
    /// Never blocks; allocates only when it fires.
    pub fn offer(&self, stream: &str, cpu: Option<usize>, at_ns: u64, mono_ns: u64, latency_ns: u64) {
        let s = &self.shared;
        if latency_ns < s.action.threshold_ns {
            return;
        }
        let now = crate::clock::mono_ns();
        if now < s.next_ns.load(Ordering::Relaxed)
            || s.busy
                .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_err()
        {
            s.skipped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let next = s
            .action
            .every
            .map_or(u64::MAX, |g| now.saturating_add(g.as_nanos() as u64));
        s.next_ns.store(next, Ordering::Relaxed);
        if let Some(f) = &s.freezer {
            f.freeze();
        }
        let c = Crossing {
            stream: stream.to_string(),
            cpu,
            at_ns,
            mono_ns,
            latency_ns,
        };
        // Only the thread that set `busy` gets here, and the runner locks the slot only after
        // `ready`: the lock is free.
        *s.slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(c);
        s.ready.store(true, Ordering::Release);
        if let Some(t) = &self.thread {
            t.thread().unpark();
        }
    }

    /// After the measuring threads ended: wait for a command still running (at most
    /// [`FINISH_WAIT`], none when the run was stopped by a signal), killing its process group
    /// after that, and say what ran.
    pub fn finish(mut self) -> Report {
        let s = self.shared.clone();
        s.stop.store(true, Ordering::Release);
        let t0 = std::time::Instant::now();
        let wait = match crate::signals::stop_requested() {
            true => Duration::ZERO,
            false => FINISH_WAIT,
        };
        while s.busy.load(Ordering::Acquire) {
            if t0.elapsed() >= wait {
                let pg = s.running.load(Ordering::Relaxed);
                if pg > 0 {
                    // SAFETY: kill has no memory-safety preconditions; a negative pid names
                    // the command's own process group.
                    unsafe { libc::kill(-pg, libc::SIGKILL) };
                }
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
        let ran = std::mem::take(&mut *s.ran.lock().unwrap_or_else(|e| e.into_inner()));
        Report {
            ran,
            skipped: s.skipped.load(Ordering::Relaxed),
        }
    }
}

/// A hook dropped without [`Hook::finish`] (the run failed): kill a command still running
/// and stop the runner.
impl Drop for Hook {
    fn drop(&mut self) {
        let Some(t) = self.thread.take() else { return };
        self.shared.stop.store(true, Ordering::Release);
        let pg = self.shared.running.load(Ordering::Relaxed);
        if pg > 0 {
            // SAFETY: kill has no memory-safety preconditions; -pg is the command's group.
            unsafe { libc::kill(-pg, libc::SIGKILL) };
        }
        t.thread().unpark();
        let _ = t.join();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actions_split_words_without_a_shell_or_run_sh_c() {
        let a = Action::new("env -u 'A B' x\\ y", false, 5, None, true).unwrap();
        assert_eq!(a.argv, ["env", "-u", "A B", "x y"]);
        assert_eq!(a.rate(), "once");
        // `$X`, `;` and `>` are words, not shell syntax.
        let a = Action::new("echo $HOME; > f", false, 5, None, true).unwrap();
        assert_eq!(a.argv, ["echo", "$HOME;", ">", "f"]);
        let a = Action::new("echo $HOME > f", true, 5, Some(Duration::from_secs(2)), true).unwrap();
        assert_eq!(a.argv, ["/bin/sh", "-c", "echo $HOME > f"]);
        assert_eq!(a.rate(), "at most once every 2.000 s");
    }

    #[test]
    fn bad_actions_are_refused_with_the_reason() {
        let e = |cmd: &str| Action::new(cmd, false, 5, None, true).unwrap_err();
        assert_eq!(e(""), "'': no command");
        assert_eq!(e("  "), "'  ': no command");
        assert_eq!(e("echo 'x"), "'echo 'x': an unclosed quote or a trailing backslash");
        assert_eq!(
            e("latlab-no-such-program-x1 a"),
            "'latlab-no-such-program-x1 a': no executable latlab-no-such-program-x1 in PATH"
        );
        assert_eq!(
            e("/nonexistent/x"),
            "'/nonexistent/x': /nonexistent/x is not an executable file"
        );
        assert_eq!(
            e("/proc/self/status"),
            "'/proc/self/status': /proc/self/status is not an executable file"
        );
        let zero = Action::new("true", false, 5, Some(Duration::ZERO), true).unwrap_err();
        assert_eq!(zero, "the rate limit must be longer than 0");
    }

    fn crossing(latency_ns: u64) -> Crossing {
        Crossing {
            stream: "cpu0".into(),
            cpu: Some(0),
            at_ns: 4_000_000,
            mono_ns: 123,
            latency_ns,
        }
    }

    #[test]
    fn the_environment_carries_the_sample() {
        let env = crossing(120_300).env(2, 100_000, Some(Path::new("/t/trace")));
        let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(get("LATLAB_LATENCY_NS"), Some("120300"));
        assert_eq!(get("LATLAB_LATENCY_US"), Some("120.300"));
        assert_eq!(get("LATLAB_CPU"), Some("0"));
        assert_eq!(get("LATLAB_STREAM"), Some("cpu0"));
        assert_eq!(get("LATLAB_AT_NS"), Some("4000000"));
        assert_eq!(get("LATLAB_MONOTONIC_NS"), Some("123"));
        assert_eq!(get("LATLAB_COUNT"), Some("2"));
        assert_eq!(get("LATLAB_THRESHOLD_NS"), Some("100000"));
        assert_eq!(get("LATLAB_TRACE"), Some("/t/trace"));
        let none = Crossing {
            cpu: None,
            ..crossing(1)
        }
        .env(1, 1, None);
        assert!(!none.iter().any(|(k, _)| k == "LATLAB_CPU" || k == "LATLAB_TRACE"));
        assert_eq!(crossing(120_300).describe(), "cpu0's sample of 120.3 us at t=0.004 s");
    }

    /// Offer crossings until the runner has taken one (it may be running the last).
    fn offer_until_ran(h: &Hook, n: usize, c: Crossing) {
        for _ in 0..2000 {
            if h.shared.ran.lock().unwrap().len() >= n {
                return;
            }
            h.offer(&c.stream, c.cpu, c.at_ns, c.mono_ns, c.latency_ns);
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn runs_once_by_default_and_reports_status_and_output() {
        let a = Action::new(
            "sh -c 'echo at $LATLAB_LATENCY_NS; echo err >&2; exit 3'",
            false,
            100,
            None,
            true,
        )
        .unwrap();
        let h = Hook::start(a, None).unwrap();
        h.offer("cpu0", Some(0), 1, 1, 99);
        offer_until_ran(&h, 1, crossing(150));
        for _ in 0..5 {
            h.offer("cpu0", Some(0), 1, 1, 150);
        }
        let r = h.finish();
        assert_eq!(r.ran.len(), 1);
        let ran = &r.ran[0];
        assert_eq!(ran.how, "exited with status 3");
        assert!(!ran.ok);
        assert_eq!(ran.output, "at 150\nerr\n");
        assert_eq!(ran.crossing.latency_ns, 150);
        assert!(r.skipped >= 5, "{r:?}");
    }

    #[test]
    fn every_runs_again_after_the_gap() {
        let a = Action::new("true", false, 100, Some(Duration::from_millis(1)), true).unwrap();
        let h = Hook::start(a, None).unwrap();
        offer_until_ran(&h, 2, crossing(150));
        let r = h.finish();
        assert!(r.ran.len() >= 2, "{r:?}");
        assert!(r.ran.iter().all(|x| x.ok && x.how == "exited with status 0"));
    }

    #[test]
    fn output_beyond_the_kept_bytes_is_drained() {
        let a = Action::new("sh -c 'head -c 100000 /dev/zero | tr \"\\0\" x'", false, 1, None, true).unwrap();
        let h = Hook::start(a, None).unwrap();
        offer_until_ran(&h, 1, crossing(5));
        let r = h.finish();
        assert_eq!(r.ran[0].output.len(), OUTPUT_KEPT);
        assert!(r.ran[0].ok, "{:?}", r.ran[0]);
    }

    #[test]
    fn a_hook_dropped_unfinished_kills_its_command() {
        let a = Action::new("sleep 30", false, 1, None, true).unwrap();
        let h = Hook::start(a, None).unwrap();
        h.offer("cpu0", Some(0), 1, 1, 5);
        let mut pg = 0;
        for _ in 0..2000 {
            pg = h.shared.running.load(Ordering::Relaxed);
            if pg > 0 {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(pg > 0, "the command never started");
        drop(h);
        // SAFETY: kill with signal 0 only checks that the group exists.
        assert_eq!(unsafe { libc::kill(-pg, 0) }, -1, "process group {pg} still exists");
    }
}
