//! Spike attribution from the kernel's scheduler, irq and timer tracepoints, recorded in a
//! private ftrace instance (`--trace-above US` when tracefs is usable).
//!
//! [`SchedTrace::start`] creates `instances/latlab-<pid>` in tracefs (mounting it at
//! /sys/kernel/tracing if needed, else using /sys/kernel/debug/tracing), sets `trace_clock` to
//! `mono` so event timestamps are CLOCK_MONOTONIC like the probe's own samples, limits it to
//! the measured CPUs (`tracing_cpumask`, and `per_cpu/cpuN/buffer_size_kb` so only they get the
//! large ring buffer) and enables `sched_switch`, `sched_waking`,
//! `irq_handler_entry/exit`, `softirq_entry/exit` and `hrtimer_expire_entry/exit`. See the
//! kernel's Documentation/trace/ftrace.rst (instances, trace_clock, per_cpu files, options) and
//! Documentation/trace/events.rst (enabling events, their formats).
//!
//! [`SchedTrace::finish`] stops tracing, reads each CPU's `per_cpu/cpuN/trace`, takes lost
//! events from `per_cpu/cpuN/stats` (`overrun`, `dropped events`) and removes the instance;
//! `Drop` removes it too on any early exit. The text output prints timestamps with 6 decimals
//! (µs) even with a nanosecond clock, so the buffer is read a second time with `options/raw`,
//! whose lines are `pid cpu ts_ns type: N` in the same order; when the two passes agree line by
//! line the events get those ns timestamps, else they keep µs resolution (the note says which).
//! The ring buffer overwrites its oldest events when full, so early spikes of a long run may
//! fall before the oldest recorded event; [`Recorded::attribute`] says so.
//!
//! [`Recorded::attribute`] decomposes one late wakeup `intended..woke` of thread T into: the
//! timer interrupt's delay (to `now` of T's `hrtimer_wakeup` expiry: the host's, `steal_ns`,
//! when the CPU was idle or in user space all along, where interrupts are on; else the
//! kernel's interrupts-off time), handler time (hard irqs,
//! hrtimer expiries, softirqs), the task current at the wakeup keeping the CPU (preempt wait),
//! other tasks switched in ahead of T, idle/scheduler time, and T's own kernel exit path after
//! its `sched_switch`. The parts add up to the latency.

use crate::guard::Held;
use latlab_core::attribution::{Attribution, Cause, TaskSlice};
use latlab_core::covered;
use latlab_core::trace::{RecordedEvent, RecordedEvents};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Where tracefs lives, and the legacy debugfs path.
const TRACEFS: &str = "/sys/kernel/tracing";
const DEBUGFS_TRACING: &str = "/sys/kernel/debug/tracing";

/// The tracepoints recorded (`events/<system>/<event>/enable`).
const EVENTS: [&str; 9] = [
    "sched/sched_switch",
    "sched/sched_waking",
    // A thread's first wakeup (clone): SIGEV_THREAD's notification thread is new each time.
    "sched/sched_wakeup_new",
    "irq/irq_handler_entry",
    "irq/irq_handler_exit",
    "irq/softirq_entry",
    "irq/softirq_exit",
    "timer/hrtimer_expire_entry",
    "timer/hrtimer_expire_exit",
];

/// Recorded when the kernel has them (a missing one is not an error).
const OPTIONAL_EVENTS: [&str; 1] = ["writeback/balance_dirty_pages"];

/// The kernel stack of the task a sleeper's timer interrupted: a `stacktrace` trigger on the
/// timer-expiry event (Documentation/trace/events.rst, "Event triggers"), which unwinds
/// through the interrupt into the interrupted context. Only for the expiries that wake a
/// sleeping thread (`clock_nanosleep`'s `hrtimer_wakeup`, a POSIX timer's `posix_timer_fn`),
/// and not when the CPU was idle: the unwinding costs a few µs inside the interrupt.
const STACK_TRIGGER_FILE: &str = "events/timer/hrtimer_expire_entry/trigger";
/// The trigger, then one for kernels whose filters refuse the `.function` modifier (a
/// function pointer matched by name): every expiry interrupting a task.
const STACK_TRIGGERS: [&str; 2] = [
    "stacktrace if (function.function == hrtimer_wakeup || function.function == posix_timer_fn) && common_pid != 0",
    "stacktrace if common_pid != 0",
];

/// Why the kernel refused the stack trigger, in words.
fn stack_refused(dir: &Path) -> String {
    match dir.join(STACK_TRIGGER_FILE).exists() {
        true => "the kernel refused the stacktrace trigger on timer:hrtimer_expire_entry".into(),
        false => "this kernel has no event triggers (CONFIG_EVENT_TRACING without triggers)".into(),
    }
}

/// Events this much before `intended` still count as the wakeup (µs rounding of the text).
const SLACK_NS: u64 = 1_000;
/// How far before the window to look for handler entries still open at its start.
const LOOKBACK_NS: u64 = 1_000_000;

/// Instances started by this process (the first is `latlab-<pid>`, later ones get a suffix).
static STARTED: AtomicUsize = AtomicUsize::new(0);

/// A private ftrace instance (`instances/latlab-<pid>`, later ones of the process with a
/// suffix), which the guardian knows of from before it exists; removed by
/// [`Instance::remove`] or on drop.
#[derive(Debug)]
pub(crate) struct Instance {
    pub(crate) dir: PathBuf,
    /// Until the instance is removed: the guardian removes it if the probe dies first.
    held: Option<Held>,
}

impl Instance {
    /// Create a fresh instance (mounting tracefs if needed).
    pub(crate) fn create() -> Result<Instance, String> {
        let root = tracefs_root()?;
        let n = STARTED.fetch_add(1, Ordering::Relaxed);
        let name = match n {
            0 => format!("latlab-{}", std::process::id()),
            _ => format!("latlab-{}-{n}", std::process::id()),
        };
        let dir = root.join("instances").join(name);
        // The guardian knows of it before it exists: a probe killed at any point after the
        // mkdir leaves nothing.
        let held = Held::ftrace(&dir);
        if let Err(e) = std::fs::create_dir(&dir) {
            // A leftover of an earlier process with the same pid: remove it and retry once.
            if e.kind() != std::io::ErrorKind::AlreadyExists
                || std::fs::remove_dir(&dir).is_err()
                || std::fs::create_dir(&dir).is_err()
            {
                return Err(format!("cannot create ftrace instance {}: {e}", dir.display()));
            }
        }
        Ok(Instance { dir, held: Some(held) })
    }

    /// Record `events` (`system/event`) on `cpus` (ascending, no repeats) with
    /// `trace_clock mono`, `buffer_kb` per CPU; recording stays off until `tracing_on`.
    pub(crate) fn setup(&self, cpus: &[usize], buffer_kb: usize, events: &[&str]) -> Result<(), String> {
        write(&self.dir, "tracing_on", "0")?;
        write(&self.dir, "trace_clock", "mono")?;
        // Only the traced CPUs get the large buffer (the instance has one per possible CPU).
        write(&self.dir, "buffer_size_kb", "4")?;
        for cpu in cpus {
            write(
                &self.dir,
                &format!("per_cpu/cpu{cpu}/buffer_size_kb"),
                &buffer_kb.to_string(),
            )?;
        }
        write(&self.dir, "tracing_cpumask", &cpumask(cpus))?;
        for e in events {
            write(&self.dir, &format!("events/{e}/enable"), "1")?;
        }
        Ok(())
    }

    /// Write through every page of `cpus`' buffers of `buffer_kb` once (`trace_marker`
    /// writes from a thread on each CPU), then empty them: the pages the kernel allocated
    /// for the buffers are touched before the run rather than during it. On a virtual
    /// machine that gives its free pages back to the host (free page reporting), a page's
    /// first touch stalls the vCPU while the host supplies it: a 144 MiB buffer's pages
    /// touched during a run stalled a ping-pong CPU of this guest for 23-33 ms.
    pub(crate) fn prefault(&self, cpus: &[usize], buffer_kb: usize) -> Result<(), String> {
        let marker = self.dir.join("trace_marker");
        self.record(true)?;
        let written: Result<(), String> = std::thread::scope(|sc| {
            let each: Vec<_> = cpus
                .iter()
                .map(|&cpu| {
                    let marker = &marker;
                    sc.spawn(move || -> Result<(), String> {
                        crate::caps::pin_to(cpu)?;
                        let mut f = std::fs::OpenOptions::new()
                            .write(true)
                            .open(marker)
                            .map_err(|e| format!("{}: {e}", marker.display()))?;
                        let line = [b'.'; PREFAULT_WRITE];
                        // Twice round: a write wraps to the buffer's first page when full.
                        for _ in 0..2 * buffer_kb * 1024 / PREFAULT_WRITE + 1 {
                            std::io::Write::write_all(&mut f, &line)
                                .map_err(|e| format!("{}: {e}", marker.display()))?;
                        }
                        Ok(())
                    })
                })
                .collect();
            each.into_iter()
                .try_for_each(|h| h.join().unwrap_or_else(|_| Err("a prefault thread panicked".into())))
        });
        self.record(false)?;
        written?;
        // Opened for writing with truncation, `trace` empties the buffers, keeping their pages.
        write(&self.dir, "trace", "")
    }

    /// Turn recording on (`true`) or off.
    pub(crate) fn record(&self, on: bool) -> Result<(), String> {
        write(&self.dir, "tracing_on", if on { "1" } else { "0" })
    }

    /// CPU `cpu`'s buffer in the `raw` layout, one `pid cpu ts_ns type: N` line per event
    /// (event ids as `events/.../id` gives them).
    pub(crate) fn raw(&self, cpu: usize) -> Result<String, String> {
        write(&self.dir, "options/raw", "1")?;
        let text = read(&self.dir.join(format!("per_cpu/cpu{cpu}/trace")));
        write(&self.dir, "options/raw", "0")?;
        text
    }

    /// Stop tracing and remove the instance.
    pub(crate) fn remove(&mut self) -> Result<(), String> {
        if self.held.is_none() {
            return Ok(());
        }
        remove_instance(&self.dir)?;
        self.held = None;
        Ok(())
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = self.remove();
    }
}

/// The id of tracepoint `event` (`system/event`) in the tracefs the instances live in, as
/// the `raw` layout's `type: N` names it.
pub(crate) fn event_id(inst: &Instance, event: &str) -> Result<u32, String> {
    let root = inst.dir.parent().and_then(Path::parent).unwrap_or(&inst.dir);
    let path = root.join(format!("events/{event}/id"));
    read(&path)?
        .trim()
        .parse()
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// A running private ftrace instance recording the scheduler's events.
#[derive(Debug)]
pub struct SchedTrace {
    inst: Instance,
    cpus: Vec<usize>,
    /// Why kernel stacks are not recorded, if they are not.
    stack_error: Option<String>,
}

impl SchedTrace {
    /// Start tracing on `cpus`, `buffer_kb` per CPU, with the kernel stacks at the expiries
    /// that wake a sleeper.
    pub fn start(cpus: &[usize], buffer_kb: usize) -> Result<SchedTrace, String> {
        SchedTrace::start_with(cpus, buffer_kb, true)
    }

    /// [`SchedTrace::start`], with `stacks` or without: the unwinding runs inside each such
    /// expiry's interrupt on a busy CPU and adds µs to every wakeup measured (on this guest a
    /// SCHED_FIFO thread's p50 beside a hog went from 12-13 to 19-21 µs with it, 13-14 µs
    /// without), so runs whose figures are compared (`latlab validate`) go without.
    pub fn start_with(cpus: &[usize], buffer_kb: usize, stacks: bool) -> Result<SchedTrace, String> {
        if cpus.is_empty() {
            return Err("no CPUs to trace".into());
        }
        let mut cpus = cpus.to_vec();
        cpus.sort_unstable();
        cpus.dedup();
        // From here on, Drop removes the instance if a step fails (the guardian if the probe
        // dies).
        let mut t = SchedTrace {
            inst: Instance::create()?,
            cpus,
            stack_error: None,
        };
        t.inst.setup(&t.cpus, buffer_kb, &EVENTS)?;
        t.inst.prefault(&t.cpus, buffer_kb)?;
        let dir = &t.inst.dir;
        for e in OPTIONAL_EVENTS {
            let _ = write(dir, &format!("events/{e}/enable"), "1");
        }
        t.stack_error = match stacks {
            true => STACK_TRIGGERS
                .iter()
                .map(|trigger| write(dir, STACK_TRIGGER_FILE, trigger))
                .find_map(Result::ok)
                .map_or_else(|| Some(stack_refused(dir)), |()| None),
            false => Some("not asked for (the unwinding would add µs to the wakeups measured)".into()),
        };
        t.inst.record(true)?;
        Ok(t)
    }

    /// A handle that stops the recording at once from any thread, leaving the buffers to
    /// [`SchedTrace::finish`] (`--break-above`: the window around the breaking sample stays
    /// as it was when it happened).
    pub fn freezer(&self) -> Freezer {
        Freezer(self.inst.dir.join("tracing_on"))
    }

    /// Stop, read and parse the buffers, remove the instance.
    pub fn finish(mut self) -> Result<Recorded, String> {
        self.inst.record(false)?;
        let cpus = read_cpus(&self.inst.dir, &self.cpus)?;
        self.inst.remove()?;
        Ok(Recorded::new(cpus, self.stack_error.take()))
    }
}

/// Stop tracing in the ftrace instance `dir` and rmdir it (disabling its events first if it is
/// busy); also what the guardian does with an instance a killed probe left
/// ([`crate::guard`]).
pub(crate) fn remove_instance(dir: &Path) -> Result<(), String> {
    let _ = write(dir, "tracing_on", "0");
    let mut result = std::fs::remove_dir(dir);
    for _ in 0..20 {
        match &result {
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                let _ = write(dir, "events/enable", "0");
                std::thread::sleep(std::time::Duration::from_millis(10));
                result = std::fs::remove_dir(dir);
            }
            _ => break,
        }
    }
    match result {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(format!("cannot remove ftrace instance {}: {e}", dir.display()))
        }
        _ => Ok(()),
    }
}

/// The mounted tracefs's `instances` directory, if there is one (nothing is mounted).
pub(crate) fn instances_dir() -> Option<PathBuf> {
    [TRACEFS, DEBUGFS_TRACING]
        .iter()
        .map(|p| Path::new(p).join("instances"))
        .find(|p| p.is_dir())
}

/// The instance's `tracing_on`: [`Freezer::freeze`] stops recording. It holds the path, not
/// an open file, which would keep the instance from being removed.
#[derive(Debug)]
pub struct Freezer(PathBuf);

impl Freezer {
    /// Stop recording (`0` to `tracing_on`); a failure leaves the recording running, which
    /// [`SchedTrace::finish`] stops anyway.
    pub fn freeze(&self) {
        let _ = std::fs::write(&self.0, "0");
    }

    /// Resume recording after [`Freezer::freeze`] (`--on-threshold` once its command ended).
    pub fn thaw(&self) {
        let _ = std::fs::write(&self.0, "1");
    }

    /// The instance's `trace` file: the recording as text, readable while it is frozen.
    pub fn trace_file(&self) -> PathBuf {
        self.0.with_file_name("trace")
    }
}

/// The tracefs mount to use, mounting tracefs at [`TRACEFS`] if it is not there yet.
fn tracefs_root() -> Result<PathBuf, String> {
    let primary = Path::new(TRACEFS);
    if primary.is_dir() && !primary.join("events").exists() {
        // SAFETY: all pointers are valid NUL-terminated strings; tracefs takes no data.
        unsafe {
            libc::mount(
                c"nodev".as_ptr(),
                c"/sys/kernel/tracing".as_ptr(),
                c"tracefs".as_ptr(),
                0,
                std::ptr::null(),
            )
        };
    }
    instances_dir()
        .and_then(|p| p.parent().map(Path::to_path_buf))
        .ok_or_else(|| format!("tracefs not available at {TRACEFS} or {DEBUGFS_TRACING} (not root?)"))
}

fn write(dir: &Path, file: &str, value: &str) -> Result<(), String> {
    let path = dir.join(file);
    std::fs::write(&path, value).map_err(|e| format!("cannot write {value:?} to {}: {e}", path.display()))
}

fn read(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

/// Bytes of each `trace_marker` write [`Instance::prefault`] makes: under a page, which is
/// what one marker event may hold.
const PREFAULT_WRITE: usize = 3000;

/// `tracing_cpumask` syntax: hex, comma-separated 32-bit groups, most significant first.
fn cpumask(cpus: &[usize]) -> String {
    let mut words = vec![0u32; cpus.iter().max().map_or(1, |m| m / 32 + 1)];
    for &c in cpus {
        words[c / 32] |= 1 << (c % 32);
    }
    let mut out = String::new();
    for (i, w) in words.iter().rev().enumerate() {
        match i {
            0 => out.push_str(&format!("{w:x}")),
            _ => out.push_str(&format!(",{w:08x}")),
        }
    }
    out
}

/// The CPUs' buffers: the raw pass (ns timestamps) of all, then the stats and the text pass
/// (fields) of each, parsed.
fn read_cpus(dir: &Path, cpus: &[usize]) -> Result<BTreeMap<usize, CpuTrace>, String> {
    let file = |cpu: usize, name: &str| dir.join(format!("per_cpu/cpu{cpu}/{name}"));
    write(dir, "options/raw", "1")?;
    let raw = each(cpus, |&cpu| read(&file(cpu, "trace")));
    write(dir, "options/raw", "0")?;
    let raws: Vec<(usize, String)> = cpus.iter().copied().zip(raw?).collect();
    let parsed = each(&raws, |(cpu, raw)| {
        let stats = read(&file(*cpu, "stats"))?;
        let lost = stat(&stats, "overrun") + stat(&stats, "dropped events");
        let text = read(&file(*cpu, "trace"))?;
        Ok((*cpu, CpuTrace::parse(&text, Some(raw), lost)))
    })?;
    Ok(parsed.into_iter().collect())
}

/// `f` on every item, a thread each: reading a full buffer is seconds of kernel formatting.
fn each<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> Result<R, String> + Sync) -> Result<Vec<R>, String> {
    std::thread::scope(|s| {
        let threads: Vec<_> = items.iter().map(|i| s.spawn(|| f(i))).collect();
        threads
            .into_iter()
            .map(|t| {
                t.join()
                    .unwrap_or_else(|_| Err("trace reader thread panicked".to_string()))
            })
            .collect()
    })
}

/// A `key: value` count from `per_cpu/cpuN/stats`.
fn stat(stats: &str, key: &str) -> u64 {
    stats
        .lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.trim() == key)
        .and_then(|(_, v)| v.trim().parse().ok())
        .unwrap_or(0)
}

/// What a parsed trace line recorded.
#[derive(Clone, Debug, PartialEq)]
enum Kind {
    Switch {
        prev_comm: String,
        prev_pid: u32,
        /// `R`/`R+` (preempted), `S`, `D`, ... (went to sleep).
        prev_state: String,
        next_comm: String,
        next_pid: u32,
    },
    /// A wakeup of `pid`, whose kernel priority is `prio` (0-99 real-time, 100-139 fair).
    Waking {
        pid: u32,
        prio: u32,
    },
    /// The first wakeup of a thread just created.
    WakeupNew {
        pid: u32,
        prio: u32,
    },
    IrqEntry {
        irq: u32,
        name: String,
    },
    IrqExit,
    SoftirqEntry {
        action: String,
    },
    SoftirqExit,
    TimerEntry {
        function: String,
        /// The hrtimer base's clock when the interrupt handler ran (ns, CLOCK_MONOTONIC).
        now: Option<u64>,
    },
    TimerExit,
    /// A kernel stack (the `stacktrace` trigger): frames innermost first, without offsets.
    Stack {
        frames: Vec<String>,
    },
    /// `writeback:balance_dirty_pages`: the current task was throttled for dirtying pages.
    Throttle {
        /// Pause imposed (ms).
        pause_ms: i64,
        /// Dirty pages, and the global dirty limit (pages).
        dirty: u64,
        limit: u64,
    },
}

/// One event: when (CLOCK_MONOTONIC ns), the task current on the CPU, and what happened.
#[derive(Clone, Debug, PartialEq)]
struct Event {
    ts: u64,
    pid: u32,
    comm: String,
    kind: Kind,
}

/// The leading columns of a text line: `comm-pid [cpu] flags secs.frac: event: fields`.
#[derive(Debug, PartialEq)]
struct Head<'a> {
    comm: &'a str,
    pid: u32,
    /// The irq-info column (`d.h2.`), empty when the line has none.
    flags: &'a str,
    ts: u64,
    event: &'a str,
    fields: &'a str,
}

/// Lines holding an event (not the `#` header, not a `CPU:N [LOST M EVENTS]` marker, not a
/// stack's frame), in both the text and the raw output.
fn is_event_line(line: &str) -> bool {
    !line.trim().is_empty() && !line.starts_with('#') && !line.starts_with("CPU:") && !is_stack_frame(line)
}

/// How the text output names a kernel stack (the `stacktrace` trigger's event).
const STACK_EVENT: &str = "<stack trace>";

/// A frame of a `<stack trace>` event: ` => function+0x1a/0x40` on a line of its own (the
/// raw output prints the event on one line, without them).
fn is_stack_frame(line: &str) -> bool {
    line.starts_with(" => ")
}

fn parse_head(line: &str) -> Option<Head<'_>> {
    // comm is right-aligned and may hold spaces, '-' and '[': try each " [" as the CPU column.
    line.match_indices(" [").find_map(|(i, _)| {
        let (comm, pid) = line[..i].trim().rsplit_once('-')?;
        let pid = pid.parse().ok()?;
        let (cpu, rest) = line[i + 2..].split_once(']')?;
        if cpu.is_empty() || !cpu.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        // The flags column (options/irq-info) is optional.
        let mut words = rest.split_whitespace();
        let first = words.next()?;
        let (flags, stamp) = match first.strip_suffix(':') {
            Some(s) => ("", s),
            None => (first, words.next()?.strip_suffix(':')?),
        };
        let ts = parse_secs(stamp)?;
        let after = rest[rest.find(stamp)? + stamp.len() + 1..].trim_start();
        let (event, fields) = match after.split_once(':') {
            _ if after.trim_end() == STACK_EVENT => (STACK_EVENT, ""),
            Some((event, fields)) if !event.is_empty() && !event.contains(' ') => (event, fields),
            _ => return None,
        };
        Some(Head {
            comm,
            pid,
            flags,
            ts,
            event,
            fields: fields.trim(),
        })
    })
}

/// `secs.frac` (1 to 9 decimals) to ns.
fn parse_secs(s: &str) -> Option<u64> {
    let (secs, frac) = s.split_once('.')?;
    if frac.is_empty() || frac.len() > 9 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let scale = 10u64.pow(9 - frac.len() as u32);
    Some(secs.parse::<u64>().ok()? * 1_000_000_000 + frac.parse::<u64>().ok()? * scale)
}

/// The value of ` key=` (the last one: comm values come first and could contain anything),
/// up to the next space.
fn value<'a>(fields: &'a str, key: &str) -> Option<&'a str> {
    let pat = format!("{key}=");
    let start = match fields.rfind(&format!(" {pat}")) {
        Some(i) => i + 1 + pat.len(),
        None if fields.starts_with(&pat) => pat.len(),
        None => return None,
    };
    fields[start..].split_whitespace().next()
}

/// The comm in `key=COMM <next>=`, which may hold spaces.
fn comm_between<'a>(fields: &'a str, key: &str, next: &str) -> Option<&'a str> {
    let start = fields.find(key)? + key.len();
    let end = fields.rfind(next)?;
    fields.get(start..end)
}

fn parse_kind(event: &str, fields: &str) -> Option<Kind> {
    Some(match event {
        "sched_switch" => {
            let (prev, next) = fields.split_once(" ==> ")?;
            Kind::Switch {
                prev_comm: comm_between(prev, "prev_comm=", " prev_pid=")?.to_string(),
                prev_pid: value(prev, "prev_pid")?.parse().ok()?,
                prev_state: value(prev, "prev_state").unwrap_or("?").to_string(),
                next_comm: comm_between(next, "next_comm=", " next_pid=")?.to_string(),
                next_pid: value(next, "next_pid")?.parse().ok()?,
            }
        }
        "sched_waking" => Kind::Waking {
            pid: value(fields, "pid")?.parse().ok()?,
            prio: value(fields, "prio")?.parse().ok()?,
        },
        "sched_wakeup_new" => Kind::WakeupNew {
            pid: value(fields, "pid")?.parse().ok()?,
            prio: value(fields, "prio")?.parse().ok()?,
        },
        "irq_handler_entry" => Kind::IrqEntry {
            irq: value(fields, "irq")?.parse().ok()?,
            name: fields.split_once(" name=")?.1.to_string(),
        },
        "irq_handler_exit" => Kind::IrqExit,
        "softirq_entry" => Kind::SoftirqEntry {
            action: match fields.split_once("[action=") {
                Some((_, a)) => a.trim_end_matches(']').to_string(),
                None => format!("vec {}", value(fields, "vec")?),
            },
        },
        "softirq_exit" => Kind::SoftirqExit,
        "hrtimer_expire_entry" => Kind::TimerEntry {
            function: value(fields, "function")?.to_string(),
            now: value(fields, "now").and_then(|n| n.parse().ok()),
        },
        "hrtimer_expire_exit" => Kind::TimerExit,
        STACK_EVENT => Kind::Stack { frames: Vec::new() },
        "balance_dirty_pages" => Kind::Throttle {
            pause_ms: value(fields, "pause")?.parse().ok()?,
            dirty: value(fields, "dirty")?.parse().ok()?,
            limit: value(fields, "limit")?.parse().ok()?,
        },
        _ => return None,
    })
}

/// One event's text in a CPU's buffer: its time and where its line (with a stack's `=>`
/// frame lines after it) lies in the text.
#[derive(Clone, Debug)]
struct Line {
    ts: u64,
    text: std::ops::Range<usize>,
}

/// One CPU's parsed buffer.
#[derive(Clone, Debug, Default)]
struct CpuTrace {
    /// Sorted by time.
    events: Vec<Event>,
    /// The text pass, kept for the events' own lines ([`CpuTrace::recorded`]).
    text: String,
    /// Every event line whose columns parsed, whatever its event, sorted by time.
    lines: Vec<Line>,
    /// Events the ring buffer overwrote or dropped.
    lost: u64,
    /// Event lines that did not parse.
    skipped: usize,
    /// Timestamps have ns resolution (from the raw pass), else µs.
    ns: bool,
}

impl CpuTrace {
    /// Parse the text output; `raw` (the same buffer read with `options/raw`) refines the
    /// timestamps to ns when it matches line by line.
    fn parse(text: &str, raw: Option<&str>, lost: u64) -> CpuTrace {
        let mut events = Vec::new();
        let mut lines_of_events = Vec::new();
        let mut heads = Vec::new();
        let mut lines: Vec<Line> = Vec::new();
        // For each of `lines`, its place among the event lines (to find its raw stamp).
        let mut line_index = Vec::new();
        let mut skipped = 0;
        let mut offset = 0;
        let mut n = 0;
        let mut kept_last = false;
        // The last event line was a `<stack trace>`, parsed: its frames follow.
        let mut stack_open = false;
        for l in text.split_inclusive('\n') {
            let at = offset;
            offset += l.len();
            let line = l.trim_end_matches(['\n', '\r']);
            if is_stack_frame(line) {
                // A frame of the stack the event line before printed (`<stack trace>`).
                if let Some(last) = lines.last_mut().filter(|_| kept_last) {
                    last.text.end = at + line.len();
                }
                if let Some(Event {
                    kind: Kind::Stack { frames },
                    ..
                }) = events.last_mut().filter(|_| stack_open)
                {
                    let frame = line[" => ".len()..].trim();
                    frames.push(frame.split_once('+').map_or(frame, |(f, _)| f).to_string());
                }
                continue;
            }
            if !is_event_line(line) {
                (kept_last, stack_open) = (false, false);
                continue;
            }
            stack_open = false;
            n += 1;
            let head = parse_head(line);
            heads.push(head.as_ref().map(|h| (h.pid, h.ts)));
            kept_last = head.is_some();
            if let Some(h) = &head {
                lines.push(Line {
                    ts: h.ts,
                    text: at..at + line.len(),
                });
                line_index.push(n - 1);
            }
            match head.and_then(|h| Some((parse_kind(h.event, h.fields)?, h))) {
                Some((kind, h)) => {
                    stack_open = matches!(kind, Kind::Stack { .. });
                    events.push(Event {
                        ts: h.ts,
                        pid: h.pid,
                        comm: h.comm.to_string(),
                        kind,
                    });
                    lines_of_events.push(n - 1);
                }
                None => skipped += 1,
            }
        }
        let stamps: Vec<Option<(u32, u64)>> = raw
            .unwrap_or("")
            .lines()
            .filter(|l| is_event_line(l))
            .map(|l| {
                let mut w = l.split_whitespace();
                let pid = w.next()?.parse().ok()?;
                let _cpu = w.next()?;
                Some((pid, w.next()?.parse().ok()?))
            })
            .collect();
        // Text rounds to the nearest µs: a matching raw stamp is within 500 ns of it.
        let ns = !heads.is_empty()
            && stamps.len() == heads.len()
            && heads.iter().zip(&stamps).all(|(h, s)| match (h, s) {
                (Some((pid, us)), Some((rpid, ns))) => pid == rpid && us.abs_diff(*ns) <= 500,
                (None, _) => true,
                (Some(_), None) => false,
            });
        if ns {
            for (e, &n) in events.iter_mut().zip(&lines_of_events) {
                if let Some((_, t)) = stamps[n] {
                    e.ts = t;
                }
            }
            for (l, &n) in lines.iter_mut().zip(&line_index) {
                if let Some((_, t)) = stamps[n] {
                    l.ts = t;
                }
            }
        }
        events.sort_by_key(|e| e.ts);
        lines.sort_by_key(|l| l.ts);
        CpuTrace {
            events,
            text: text.to_string(),
            lines,
            lost,
            skipped,
            ns,
        }
    }

    /// The event lines of `[from, to]` as the kernel printed them, on `cpu`.
    fn recorded(&self, cpu: usize, from: u64, to: u64) -> Vec<RecordedEvent> {
        let lo = self.lines.partition_point(|l| l.ts < from);
        self.lines[lo..]
            .iter()
            .take_while(|l| l.ts <= to)
            .filter_map(|l| {
                let text = &self.text[l.text.clone()];
                let (first, frames) = text.split_once('\n').unwrap_or((text, ""));
                let h = parse_head(first)?;
                Some(RecordedEvent {
                    ts_ns: l.ts,
                    cpu: cpu as u32,
                    comm: h.comm.to_string(),
                    pid: h.pid,
                    flags: h.flags.to_string(),
                    event: h.event.to_string(),
                    fields: match frames.is_empty() {
                        true => h.fields.to_string(),
                        false => frames.to_string(),
                    },
                })
            })
            .collect()
    }

    /// Index of the first event at or after `t`.
    fn at(&self, t: u64) -> usize {
        self.events.partition_point(|e| e.ts < t)
    }

    /// The last instant in `(from, to)` this CPU is known to have had interrupts on: a task
    /// switch (`finish_task_switch` enables them), a softirq (run with them on) or another
    /// interrupt taken (the local timer's vector outranks every device's, so a pending timer
    /// interrupt would have come first).
    fn last_irqs_on(&self, from: u64, to: u64) -> Option<u64> {
        self.events[self.at(from)..]
            .iter()
            .take_while(|e| e.ts < to)
            .filter(|e| {
                matches!(
                    e.kind,
                    Kind::Switch { .. } | Kind::SoftirqEntry { .. } | Kind::SoftirqExit | Kind::IrqEntry { .. }
                )
            })
            .map(|e| e.ts)
            .last()
            .filter(|&t| t > from)
    }

    /// Hard-irq handlers, hrtimer expiries and softirqs overlapping `[from, to]`, clipped to it.
    fn handlers(&self, from: u64, to: u64) -> Vec<Interval> {
        let mut open: [Option<(u64, String)>; 3] = [None, None, None];
        let mut out = Vec::new();
        for e in self.events[self.at(from.saturating_sub(LOOKBACK_NS))..]
            .iter()
            .take_while(|e| e.ts <= to)
        {
            let (slot, label) = match &e.kind {
                Kind::IrqEntry { irq, name } => (0, Some(format!("irq {irq} {name}"))),
                Kind::IrqExit => (0, None),
                Kind::SoftirqEntry { action } => (1, Some(format!("softirq {action}"))),
                Kind::SoftirqExit => (1, None),
                Kind::TimerEntry { function, .. } => (2, Some(format!("hrtimer {function}"))),
                Kind::TimerExit => (2, None),
                _ => continue,
            };
            match label {
                Some(l) => open[slot] = Some((e.ts, l)),
                None => {
                    if let Some((start, label)) = open[slot].take() {
                        out.push(Interval::new(start, e.ts, slot == 1, label));
                    }
                }
            }
        }
        for (slot, o) in open.into_iter().enumerate() {
            if let Some((start, label)) = o {
                out.push(Interval::new(start, to, slot == 1, label));
            }
        }
        out.into_iter()
            .filter_map(|iv| {
                let (start, end) = (iv.start.max(from), iv.end.min(to));
                (start < end).then_some(Interval { start, end, ..iv })
            })
            .collect()
    }

    /// Who held the CPU over `[from, to]`, from the `sched_switch` events, in order.
    fn slices(&self, from: u64, to: u64) -> Vec<Slice> {
        let i0 = self.at(from);
        // The task current at `from` is the one named on the next event (a switch's prev side).
        let Some(first) = self.events.get(i0) else {
            return Vec::new();
        };
        let (mut pid, mut comm) = match &first.kind {
            Kind::Switch {
                prev_pid, prev_comm, ..
            } => (*prev_pid, prev_comm.as_str()),
            _ => (first.pid, first.comm.as_str()),
        };
        let mut start = from;
        let mut out = Vec::new();
        for e in self.events[i0..].iter().take_while(|e| e.ts <= to) {
            if let Kind::Switch {
                next_pid, next_comm, ..
            } = &e.kind
            {
                out.push(Slice::new(pid, comm, start, e.ts));
                (pid, comm, start) = (*next_pid, next_comm.as_str(), e.ts);
            }
        }
        out.push(Slice::new(pid, comm, start, to));
        out
    }

    /// Hard irqs, hrtimer expiries and softirqs that began in `[from, to]`, most frequent first.
    fn irq_counts(&self, from: u64, to: u64) -> Vec<(String, u64)> {
        let mut counts: BTreeMap<String, u64> = BTreeMap::new();
        for e in self.events[self.at(from)..].iter().take_while(|e| e.ts <= to) {
            let name = match &e.kind {
                Kind::IrqEntry { irq, name } => format!("irq {irq} {name}"),
                Kind::SoftirqEntry { action } => format!("softirq {action}"),
                Kind::TimerEntry { function, .. } => format!("hrtimer {function}"),
                _ => continue,
            };
            *counts.entry(name).or_default() += 1;
        }
        let mut v: Vec<(String, u64)> = counts.into_iter().collect();
        v.sort_by_key(|(_, c)| std::cmp::Reverse(*c));
        v
    }

    /// Indices of the events in the window of a sample over `[intended, woke]`, widened by
    /// SLACK_NS on each side.
    fn window(&self, intended: u64, woke: u64) -> std::ops::Range<usize> {
        let lo = self.at(intended.saturating_sub(SLACK_NS));
        let hi = self.events.partition_point(|e| e.ts <= woke.saturating_add(SLACK_NS));
        lo..hi.max(lo)
    }

    /// Index of the wakeup of `tid` (sched_waking, or sched_wakeup_new for a thread just
    /// created) among `range`.
    fn wakeup_in(&self, tid: u32, mut range: std::ops::Range<usize>) -> Option<usize> {
        range.find(
            |&i| matches!(self.events[i].kind, Kind::Waking { pid, .. } | Kind::WakeupNew { pid, .. } if pid == tid),
        )
    }

    /// Index of the first switch to `tid` among `range`.
    fn switch_in(&self, tid: u32, mut range: std::ops::Range<usize>) -> Option<usize> {
        range.find(|&i| matches!(self.events[i].kind, Kind::Switch { next_pid, .. } if next_pid == tid))
    }

    /// The wakeup of `tid` in the window of a sample over `[intended, woke]`.
    fn wakeup_of(&self, tid: u32, intended: u64, woke: u64) -> Option<&Event> {
        self.wakeup_in(tid, self.window(intended, woke))
            .map(|i| &self.events[i])
    }

    /// Whether `tid` was switched in here during the window of a sample over `[intended, woke]`.
    fn switched_in(&self, tid: u32, intended: u64, woke: u64) -> bool {
        self.switch_in(tid, self.window(intended, woke)).is_some()
    }

    /// The expiry of the woken thread's timer among events `lo..w` (`w`: its wakeup): the last
    /// expiry of a sleeper's timer (`hrtimer_wakeup`) or of a POSIX timer (`posix_timer_fn`,
    /// which signals it) before the wakeup; for a thread `created` to be notified, the first
    /// POSIX timer expiry (the notification chain may span later ones). Its index and the
    /// clock its handler read.
    fn timer_fired(&self, lo: usize, w: usize, created: bool) -> Option<(usize, u64)> {
        let ev = &self.events;
        let timer = |i: usize| match &ev[i].kind {
            Kind::TimerEntry { function, now } if function == "hrtimer_wakeup" || function == "posix_timer_fn" => {
                Some((i, now.unwrap_or(ev[i].ts)))
            }
            _ => None,
        };
        match created {
            true => (lo..w).find_map(timer),
            false => (lo..w).rev().find_map(timer),
        }
    }

    /// rtla timerlat's split of one wakeup of `tid` over `[intended, woke]` recorded here:
    /// intended expiry to the timer's handler, handler to the thread switched in.
    fn split(&self, tid: u32, intended: u64, woke: u64) -> Option<(u64, u64)> {
        let r = self.window(intended, woke);
        let w = self.wakeup_in(tid, r.clone())?;
        let created = matches!(self.events[w].kind, Kind::WakeupNew { .. });
        let (_, now) = self.timer_fired(r.start, w, created)?;
        let s = self.switch_in(tid, w..r.end)?;
        Some((now.saturating_sub(intended), self.events[s].ts.saturating_sub(now)))
    }

    /// Explain one late wakeup of `tid` on this CPU; `foreign` is its wakeup when another
    /// CPU recorded it (a waker running there).
    fn attribute(&self, tid: u32, intended: u64, woke: u64, foreign: Option<&Event>, known: &Known) -> Attribution {
        let ev = &self.events;
        let std::ops::Range { start: lo, end: hi } = self.window(intended, woke);
        // The wakeup: its time, whether it created the thread, and the first local event at
        // or after it.
        let waking = match foreign {
            Some(f) => Some((ev.partition_point(|e| e.ts < f.ts).max(lo), f)),
            None => self.wakeup_in(tid, lo..hi).map(|i| (i, &ev[i])),
        };
        // A new thread (SIGEV_THREAD) was created by another task after the timer fired.
        let created = waking.is_some_and(|(_, w)| matches!(w.kind, Kind::WakeupNew { .. }));
        // T's own timer: the last expiry before its wakeup of a sleeper (hrtimer_wakeup) or of a
        // POSIX timer (posix_timer_fn, which signals T). A created thread's timer is the first
        // POSIX timer expiry of the window: the notification chain may span later expiries.
        let fired = waking.and_then(|(w, _)| self.timer_fired(lo, w, created));
        let expiry = fired.map(|(_, now)| now);
        // The kernel stack the stacktrace trigger took in that expiry: what it interrupted.
        let stack = fired.and_then(|(i, _)| {
            ev[i + 1..].iter().take(4).find_map(|e| match &e.kind {
                Kind::Stack { frames } => Some((e.pid, interrupted(frames))),
                _ => None,
            })
        });
        let switch_in = waking.and_then(|(w, _)| self.switch_in(tid, w..hi));
        let e = expiry
            .or(waking.map(|(_, w)| w.ts))
            .unwrap_or(intended)
            .clamp(intended, woke);
        let s = switch_in.map_or(woke, |i| ev[i].ts).clamp(e, woke);

        let handlers = self.handlers(intended, s);
        let spans: Vec<(u64, u64)> = handlers.iter().map(|h| (h.start, h.end)).collect();
        let busy = |a: u64, b: u64| covered(&spans, a, b);
        let slices = self.slices(intended, s);
        let mut a = Attribution {
            handler_ns: busy(intended, s),
            tasks: task_list(&slices, tid),
            irqs: self.irq_counts(intended, woke),
            ..Attribution::default()
        };
        let mut warnings = Vec::new();
        match waking {
            Some((w, wake)) => {
                let woken_at = wake.ts.clamp(e, s);
                // The expiry's delay: the host's up to the last instant the CPU is known to
                // have had interrupts on (the timer's, pending, would have come then), the
                // kernel's interrupts-off time after it.
                let stack = stack.as_ref();
                let (on_until, context) = match interrupts_on(&slices, (stack, known), intended, e) {
                    Some(context) => (e, context),
                    None => match self.last_irqs_on(intended, e) {
                        // After the last such instant, idle or in user space to the expiry.
                        Some(t) if interrupts_on(&slices, (stack, known), t, e).is_some() => (
                            e,
                            "that switched tasks or took other interrupts, then ran idle or in user space",
                        ),
                        t => (
                            t.unwrap_or(intended),
                            "that switched tasks or took other interrupts meanwhile",
                        ),
                    },
                };
                let host = (on_until - intended) - busy(intended, on_until);
                a.steal_ns = host;
                a.irq_off_ns = (e - intended) - busy(intended, e) - host;
                if host > 0 {
                    warnings.push(format!(
                        "the timer's interrupt came {:.1} us late to a CPU {context}, where \
                         interrupts are on: time outside the kernel (the hypervisor's or \
                         firmware's), counted as the host's",
                        host as f64 / 1e3
                    ));
                }
                a.wakee_kernel_ns = woke - s;
                // Until the first switch after the wakeup, the task current at the wakeup kept
                // the CPU: the idle loop's exit (scheduler) or a wait for a preemption point.
                let first_switch = (w..hi)
                    .find(|&i| matches!(ev[i].kind, Kind::Switch { .. }))
                    .map_or(s, |i| ev[i].ts)
                    .clamp(e, s);
                // A created thread's wait starts at its creation: from the expiry until then,
                // the tasks that ran (the notifying thread among them) ran ahead of it.
                let from = if created || foreign.is_some() { woken_at } else { e };
                // Time in [x0, y0] outside handlers: the idle task's is the scheduler's (idle
                // exit), any other task's ran ahead of the woken one.
                let split = |a: &mut Attribution, x0: u64, y0: u64| {
                    for sl in &slices {
                        let (x, y) = (sl.start.max(x0), sl.end.min(y0));
                        if x < y {
                            let t = (y - x) - busy(x, y);
                            match sl.pid {
                                0 => a.sched_ns += t,
                                _ => a.ran_ahead_ns += t,
                            }
                        }
                    }
                };
                if foreign.is_some() {
                    // The waker ran on another CPU: this CPU's tasks do not describe it.
                    a.ran_ahead_ns += (woken_at - e) - busy(e, woken_at);
                    a.tasks.push(TaskSlice {
                        comm: format!("{} (waker, another CPU)", wake.comm),
                        pid: wake.pid,
                        ns: woken_at - e,
                    });
                } else if created {
                    split(&mut a, e, woken_at);
                }
                let kept = (first_switch - from) - busy(from, first_switch);
                // A real-time wakeup preempts a fair task in user space at the interrupt's
                // return to it (need_resched is checked there under every preemption
                // model): waiting for one that runs only in user space takes the kernel no
                // longer than its median over the recording; the excess is the host's.
                let rt_woken = matches!(wake.kind, Kind::Waking { prio, .. } if prio < 100);
                match slices.iter().find(|sl| sl.start <= woken_at && woken_at <= sl.end) {
                    Some(sl) if rt_woken && !created && foreign.is_none() && known.user_space.contains(&sl.pid) => {
                        let host = known.user_preempt.map_or(0, |m| kept.saturating_sub(m));
                        a.preempt_wait_ns += kept - host;
                        a.steal_ns += host;
                        if host > 0 {
                            warnings.push(format!(
                                "woken with real-time priority, it waited {:.1} us for {}/{}, a fair task \
                                 running a user-space loop that the interrupt's return to user space \
                                 preempts at once, {:.1} us more than the median: counted as the host's",
                                kept as f64 / 1e3,
                                sl.comm,
                                sl.pid,
                                host as f64 / 1e3
                            ));
                        }
                    }
                    Some(sl) if sl.pid != 0 => a.preempt_wait_ns += kept,
                    _ => {
                        // An idle CPU's exit takes the kernel no longer than its median over
                        // the recording: the excess is the time the host took to run it
                        // (a halted vCPU woken, its IPI delivered) or the idle state's.
                        let host = known.idle_wakeup.map_or(0, |m| kept.saturating_sub(m));
                        a.sched_ns += kept - host;
                        a.steal_ns += host;
                        if host > 0 {
                            warnings.push(format!(
                                "the idle CPU took {:.1} us to switch it in, {:.1} us more than its \
                                 median over the recording: counted as the host's",
                                kept as f64 / 1e3,
                                host as f64 / 1e3
                            ));
                        }
                    }
                }
                split(&mut a, first_switch, s);
                a.cause = cause(&slices, &handlers, woken_at, s, woke - intended, stack);
                if a.cause.as_ref().is_some_and(|c| c.path == IN_KERNEL) {
                    warnings.push(match stack {
                        None => "no kernel stack recorded at the timer's expiry".to_string(),
                        Some((_, None)) => "the stack at the timer's expiry has no interrupt entry frame to tell the interrupted context by".to_string(),
                        Some(_) => "the stack at the timer's expiry is another task's".to_string(),
                    });
                }
                if switch_in.is_none() {
                    warnings.push(format!("no sched_switch to tid {tid} after its wakeup"));
                }
            }
            None => warnings.push(format!("no sched_waking of tid {tid} in the window")),
        }
        if self.lost > 0 {
            match ev.first() {
                Some(f) if f.ts <= intended => warnings.push(format!(
                    "{} older events overwritten on this CPU (window recorded)",
                    self.lost
                )),
                _ => warnings.push(format!(
                    "window precedes the oldest recorded event ({} events overwritten)",
                    self.lost
                )),
            }
        }
        if self.skipped > 0 {
            warnings.push(format!("{} trace lines did not parse", self.skipped));
        }
        a.note = note(self.ns, &warnings);
        a
    }
}

fn note(ns: bool, warnings: &[String]) -> String {
    let mut s = format!(
        "ftrace sched/irq/timer tracepoints, trace_clock mono, {} resolution",
        if ns { "ns" } else { "µs" }
    );
    for w in warnings {
        s.push_str("; ");
        s.push_str(w);
    }
    s
}

/// A handler's run: hard irq or hrtimer expiry, or softirq.
#[derive(Clone, Debug)]
struct Interval {
    start: u64,
    end: u64,
    softirq: bool,
    label: String,
}

impl Interval {
    fn new(start: u64, end: u64, softirq: bool, label: String) -> Self {
        Interval {
            start,
            end,
            softirq,
            label,
        }
    }
}

/// A stretch one task held the CPU.
#[derive(Clone, Debug)]
struct Slice {
    pid: u32,
    comm: String,
    start: u64,
    end: u64,
}

impl Slice {
    fn new(pid: u32, comm: &str, start: u64, end: u64) -> Self {
        let comm = if pid == 0 { "<idle>" } else { comm };
        Slice {
            pid,
            comm: comm.to_string(),
            start,
            end,
        }
    }
}

/// CPU time per task other than `tid`, longest first.
fn task_list(slices: &[Slice], tid: u32) -> Vec<TaskSlice> {
    let mut by_pid: BTreeMap<u32, TaskSlice> = BTreeMap::new();
    for sl in slices.iter().filter(|sl| sl.pid != tid && sl.end > sl.start) {
        by_pid
            .entry(sl.pid)
            .or_insert_with(|| TaskSlice {
                comm: sl.comm.clone(),
                pid: sl.pid,
                ns: 0,
            })
            .ns += sl.end - sl.start;
    }
    let mut v: Vec<TaskSlice> = by_pid.into_values().collect();
    v.sort_by_key(|t| std::cmp::Reverse(t.ns));
    v
}

/// Whether the CPU had interrupts on while its timer's interrupt was late (`[intended,
/// expiry]`): one task held the CPU all along and it was the idle loop (which halts with
/// interrupts on), a task the expiry's stack shows interrupted in user space, or one of
/// `known.user_space`, the threads known to run only there. Then the delay is not the kernel's
/// but the host's (a hypervisor that had not run the vCPU or had not injected the
/// interrupt, firmware, the idle state's exit; the idle loop's own irqs-off instants before
/// it halts, and an interrupt's return to user space, are a few µs): `Some` of the context,
/// in words. `None` when the kernel may have had interrupts off (a task in the kernel, or
/// nothing to tell).
fn interrupts_on(
    slices: &[Slice],
    (stack, known): (Option<&Interrupted>, &Known),
    intended: u64,
    expiry: u64,
) -> Option<&'static str> {
    let mut across = slices.iter().filter(|sl| sl.start < expiry && sl.end > intended);
    let held = across.next()?;
    if across.next().is_some() {
        return None;
    }
    match stack {
        _ if held.pid == 0 => Some("idle"),
        _ if known.user_space.contains(&held.pid) => Some("running a user-space loop"),
        Some((pid, Some(frames))) if *pid == held.pid && frames.is_empty() => Some("in user space"),
        _ => None,
    }
}

/// The median time, over every wakeup recorded on `cpus` whose woken task's priority
/// `woken` accepts, from the wakeup (its `sched_waking` on any CPU) to the woken task's
/// switch in from a task `from` accepts: the kernel's path from one to the other (an idle
/// exit, an interrupt's return to user space), with whatever the host adds. `None` when
/// fewer than [`WAKEUPS_FOR_A_MEDIAN`] were recorded.
fn switch_in_median(
    cpus: &BTreeMap<usize, CpuTrace>,
    from: impl Fn(u32) -> bool,
    woken: impl Fn(u32) -> bool,
) -> Option<u64> {
    let mut wakings: BTreeMap<u32, Vec<(u64, u32)>> = BTreeMap::new();
    for c in cpus.values() {
        for e in &c.events {
            if let Kind::Waking { pid, prio } | Kind::WakeupNew { pid, prio } = e.kind {
                wakings.entry(pid).or_default().push((e.ts, prio));
            }
        }
    }
    for v in wakings.values_mut() {
        v.sort_unstable();
    }
    let mut spans: Vec<u64> = cpus
        .values()
        .flat_map(|c| &c.events)
        .filter_map(|e| match e.kind {
            Kind::Switch { prev_pid, next_pid, .. } if from(prev_pid) => {
                let w = wakings.get(&next_pid)?;
                let (t, prio) = w[w.partition_point(|&(t, _)| t <= e.ts).checked_sub(1)?];
                woken(prio).then_some(e.ts - t)
            }
            _ => None,
        })
        .collect();
    if spans.len() < WAKEUPS_FOR_A_MEDIAN {
        return None;
    }
    spans.sort_unstable();
    spans.get((spans.len() - 1) / 2).copied()
}

/// Wakeups a recording needs before their median says what the kernel's path takes: a
/// second of a 1 ms cyclictest thread gives a thousand.
const WAKEUPS_FOR_A_MEDIAN: usize = 100;

/// The task a timer's expiry interrupted and its kernel frames below the interrupt's entry
/// ([`interrupted`]; empty frames: user space, `None`: no entry frame to tell by).
type Interrupted = (u32, Option<Vec<String>>);

/// The parts of a probe's attribution, the host's time among them: the sample's latency
/// when its wakeup was recorded (the invariant the tests hold [`Recorded::attribute`] to).
#[cfg(test)]
pub(crate) fn parts_sum(a: &Attribution) -> u64 {
    a.irq_off_ns + a.steal_ns + a.handler_ns + a.preempt_wait_ns + a.ran_ahead_ns + a.sched_ns + a.wakee_kernel_ns
}

/// What a task running in the kernel without a preemption point is said to be doing when no
/// stack tells the function.
const IN_KERNEL: &str = "kernel (non-preemptible section)";

/// An interrupt's entry frame: `asm_sysvec_*`, `asm_common_interrupt` on x86-64;
/// `ret_from_intr`, `apic_timer_interrupt` before 5.8.
fn is_entry(f: &str) -> bool {
    f.starts_with("asm_sysvec_")
        || f.starts_with("asm_common_interrupt")
        || f == "ret_from_intr"
        || f == "apic_timer_interrupt"
}

/// The frames of the context an interrupt interrupted, innermost first: those below the
/// interrupt's entry, up to the next entry frame when that context was itself an interrupt's
/// (softirqs run at an earlier interrupt's exit: `handle_softirqs <- __irq_exit_rcu <-
/// sysvec_apic_timer_interrupt`); empty when it interrupted user space. `None` when the stack
/// has no entry frame known here.
fn interrupted(frames: &[String]) -> Option<Vec<String>> {
    let entry = frames.iter().position(|f| is_entry(f))?;
    let below = &frames[entry + 1..];
    let end = below.iter().position(|f| is_entry(f)).unwrap_or(below.len());
    Some(below[..end].to_vec())
}

/// A stack as a code path, as the model prints its paths: the innermost frames,
/// `copy_folio_from_iter_atomic <- generic_perform_write <- ext4_buffered_write_iter <- vfs_write`.
fn path_of(frames: &[String]) -> String {
    frames
        .iter()
        .take(PATH_FRAMES)
        .cloned()
        .collect::<Vec<_>>()
        .join(" <- ")
}

/// Frames of a stack named in a cause's path (the recorded window keeps the whole stack).
const PATH_FRAMES: usize = 4;

/// The task that held the CPU between the wakeup and the switch to the woken task for more
/// than half the latency, and what it was doing as far as the tracepoints tell: where the
/// task was running at the wakeup, its kernel stack when the timer fired (`stack`: the
/// interrupted task's pid and frames), when one was recorded.
fn cause(
    slices: &[Slice],
    handlers: &[Interval],
    woken_at: u64,
    switch_at: u64,
    latency: u64,
    stack: Option<&Interrupted>,
) -> Option<Cause> {
    let clipped: Vec<(&Slice, u64, u64)> = slices
        .iter()
        .map(|sl| (sl, sl.start.max(woken_at), sl.end.min(switch_at)))
        .filter(|(_, x, y)| x < y)
        .collect();
    let mut per_pid: BTreeMap<u32, u64> = BTreeMap::new();
    for (sl, x, y) in &clipped {
        *per_pid.entry(sl.pid).or_default() += y - x;
    }
    let (&pid, &held) = per_pid.iter().max_by_key(|(_, &t)| t)?;
    if held * 2 <= latency {
        return None;
    }
    let mine: Vec<&(&Slice, u64, u64)> = clipped.iter().filter(|(sl, _, _)| sl.pid == pid).collect();
    // Handler time inside the task's stretches, per label, split hard/soft.
    let mut by_label: BTreeMap<(bool, &str), u64> = BTreeMap::new();
    for h in handlers {
        let t: u64 = mine.iter().map(|(_, x, y)| covered(&[(h.start, h.end)], *x, *y)).sum();
        *by_label.entry((h.softirq, h.label.as_str())).or_default() += t;
    }
    let class = |soft: bool| {
        let total: u64 = by_label.iter().filter(|((s, _), _)| *s == soft).map(|(_, t)| t).sum();
        let top = by_label.iter().filter(|((s, _), _)| *s == soft).max_by_key(|(_, &t)| t);
        (total, top.map(|((_, l), _)| l.to_string()))
    };
    let (soft_ns, soft_top) = class(true);
    let (hard_ns, hard_top) = class(false);
    let first = mine.first()?;
    let path = if soft_ns * 2 > held {
        soft_top?
    } else if hard_ns * 2 > held {
        hard_top?
    } else if pid == 0 {
        return None;
    } else if first.0.comm.starts_with("ksoftirqd") {
        "softirq (ksoftirqd)".to_string()
    } else if first.1 == woken_at {
        match stack {
            Some((p, Some(frames))) if *p == pid && !frames.is_empty() => path_of(frames),
            _ => IN_KERNEL.to_string(),
        }
    } else {
        "ran ahead of the woken task (higher priority or woken earlier)".to_string()
    };
    Some(Cause {
        task: format!("{}/{}", first.0.comm, pid),
        path,
        lock: None,
        since_ns: first.1,
        until_ns: mine.last()?.2,
        ended_by: "sched_switch".to_string(),
    })
}

/// Everything recorded: parsed events per traced CPU.
#[derive(Clone, Debug, Default)]
pub struct Recorded {
    cpus: BTreeMap<usize, CpuTrace>,
    /// Why no kernel stacks were recorded, if none were.
    stack_error: Option<String>,
    /// What the whole recording tells beyond one CPU's events.
    known: Known,
}

/// What a recording tells of the machine beyond one CPU's events, for its attributions.
#[derive(Clone, Debug, Default)]
struct Known {
    /// Threads known to run in user space whenever they hold a CPU ([`Recorded::in_user_space`]).
    user_space: BTreeSet<u32>,
    /// The median time from a wakeup to the switch in of the woken task on an idle CPU, over
    /// every such wakeup recorded ([`switch_in_median`]).
    idle_wakeup: Option<u64>,
    /// The same from a real-time task's wakeup to its switch in from one of `user_space`.
    user_preempt: Option<u64>,
}

impl Recorded {
    /// What was recorded on `cpus`, `stack_error` why no stacks were.
    fn new(cpus: BTreeMap<usize, CpuTrace>, stack_error: Option<String>) -> Recorded {
        let known = Known {
            idle_wakeup: switch_in_median(&cpus, |p| p == 0, |_| true),
            ..Known::default()
        };
        Recorded {
            cpus,
            stack_error,
            known,
        }
    }

    /// Threads `tids` are fair (SCHED_OTHER, BATCH, IDLE) tasks that run only in user space
    /// whenever they hold a CPU (a scenario's compute loops, which make no system call): an
    /// expiry late while one of them held the CPU all along came late with interrupts on, as
    /// to an idle CPU, and a real-time task it woke would have preempted it at once.
    pub fn in_user_space(&mut self, tids: impl IntoIterator<Item = u32>) {
        let k = &mut self.known;
        k.user_space.extend(tids);
        k.user_preempt = switch_in_median(&self.cpus, |p| k.user_space.contains(&p), |prio| prio < 100);
    }

    /// Lost events (ring buffer overruns) on `cpu`.
    pub fn lost(&self, cpu: usize) -> u64 {
        self.cpus.get(&cpu).map_or(0, |c| c.lost)
    }

    /// Where a wakeup of thread `tid` measured on `cpu` over `[intended, woke]` is recorded:
    /// the CPU it was switched in on (a notification thread may not run where its stream is
    /// pinned), and its wakeup with that wakeup's CPU when another CPU recorded it (a waker
    /// running there). `None` when `cpu` was not traced.
    fn locate(&self, cpu: usize, tid: u32, intended: u64, woke: u64) -> Option<(usize, Option<(usize, &Event)>)> {
        let c = self.cpus.get(&cpu)?;
        let ran_on = match c.switched_in(tid, intended, woke) {
            true => cpu,
            false => self
                .cpus
                .iter()
                .find(|(_, o)| o.switched_in(tid, intended, woke))
                .map_or(cpu, |(&k, _)| k),
        };
        let foreign = match self.cpus[&ran_on].wakeup_of(tid, intended, woke) {
            Some(_) => None,
            None => self
                .cpus
                .iter()
                .filter(|(&other, _)| other != ran_on)
                .find_map(|(&k, o)| Some((k, o.wakeup_of(tid, intended, woke)?))),
        };
        Some((ran_on, foreign))
    }

    /// Explain one late wakeup of thread `tid` on `cpu`.
    pub fn attribute(&self, cpu: usize, tid: u32, intended_ns: u64, woke_ns: u64) -> Attribution {
        let woke_ns = woke_ns.max(intended_ns);
        match self.locate(cpu, tid, intended_ns, woke_ns) {
            Some((ran_on, foreign)) => {
                let c = &self.cpus[&ran_on];
                let mut a = c.attribute(tid, intended_ns, woke_ns, foreign.map(|(_, e)| e), &self.known);
                if let Some(e) = self.stack_error.as_ref().filter(|_| a.cause.is_some()) {
                    a.note.push_str(&format!("; kernel stacks not recorded: {e}"));
                }
                if ran_on != cpu {
                    a.note = format!("ran on CPU {ran_on}, not CPU {cpu}; {}", a.note);
                }
                a
            }
            None => Attribution {
                note: note(false, &[format!("CPU {cpu} was not traced")]),
                ..Attribution::default()
            },
        }
    }

    /// rtla timerlat's split of one wakeup of thread `tid` measured on `cpu` over
    /// `[intended, woke]`: intended expiry to the timer's handler, handler to the thread
    /// switched in; `None` unless the timer, the wakeup and the switch were all recorded on
    /// the CPU the thread ran on.
    pub fn split(&self, cpu: usize, tid: u32, intended_ns: u64, woke_ns: u64) -> Option<(u64, u64)> {
        let woke_ns = woke_ns.max(intended_ns);
        let (ran_on, _) = self.locate(cpu, tid, intended_ns, woke_ns)?;
        self.cpus[&ran_on].split(tid, intended_ns, woke_ns)
    }

    /// The CPUs whose events tell a wakeup of `tid` measured on `cpu` over `[intended,
    /// woke]`: its own, the one the thread ran on, the waker's.
    pub fn wakeup_cpus(&self, cpu: usize, tid: u32, intended_ns: u64, woke_ns: u64) -> Vec<usize> {
        let mut v = vec![cpu];
        if let Some((ran_on, foreign)) = self.locate(cpu, tid, intended_ns, woke_ns.max(intended_ns)) {
            v.push(ran_on);
            v.extend(foreign.map(|(k, _)| k));
        }
        v.sort_unstable();
        v.dedup();
        v
    }

    /// The traced CPUs on which thread `tid` ran, was switched or woken during `[start,
    /// end]`; every traced CPU when none recorded it.
    pub fn cpus_of(&self, tid: u32, start: u64, end: u64) -> Vec<usize> {
        let seen: Vec<usize> = self
            .cpus
            .iter()
            .filter(|(_, c)| {
                c.events[c.at(start)..].iter().take_while(|e| e.ts <= end).any(|e| {
                    e.pid == tid
                        || matches!(e.kind, Kind::Switch { prev_pid, next_pid, .. } if prev_pid == tid || next_pid == tid)
                        || matches!(e.kind, Kind::Waking { pid, .. } if pid == tid)
                })
            })
            .map(|(&k, _)| k)
            .collect();
        match seen.is_empty() {
            true => self.cpus.keys().copied().collect(),
            false => seen,
        }
    }

    /// The events recorded on `cpus` around a sample whose stimulus was at `start` and
    /// which ended at `end` (CLOCK_MONOTONIC), as the kernel printed them: from
    /// [`WINDOW_BEFORE_NS`] before to [`WINDOW_AFTER_NS`] after, at most
    /// [`MAX_WINDOW_EVENTS`] (the earliest left out). `sample_at_ns` names the sample.
    pub fn window(&self, cpus: &[usize], sample_at_ns: u64, start: u64, end: u64) -> RecordedEvents {
        let (from, to) = (start.saturating_sub(WINDOW_BEFORE_NS), end.max(start) + WINDOW_AFTER_NS);
        let mut events: Vec<RecordedEvent> = cpus
            .iter()
            .filter_map(|cpu| Some(self.cpus.get(cpu)?.recorded(*cpu, from, to)))
            .flatten()
            .collect();
        events.sort_by_key(|e| (e.ts_ns, e.cpu));
        let left_out = events.len().saturating_sub(MAX_WINDOW_EVENTS);
        events.drain(..left_out);
        let ns = cpus.iter().filter_map(|c| self.cpus.get(c)).all(|c| c.ns);
        RecordedEvents {
            sample_at_ns,
            clock: format!("mono (CLOCK_MONOTONIC), {} resolution", if ns { "ns" } else { "µs" }),
            stimulus_ns: start,
            from_ns: from,
            to_ns: to,
            cpus: cpus.iter().map(|&c| c as u32).collect(),
            left_out: left_out as u64,
            events,
        }
    }
}

/// A sample's recorded window starts this long before its stimulus (the task that held the
/// CPU is usually switched in inside it) ...
pub const WINDOW_BEFORE_NS: u64 = 1_000_000;
/// ... and ends this long after the sample.
pub const WINDOW_AFTER_NS: u64 = 100_000;
/// At most this many events are kept per sample (about 150 bytes each in the JSON).
pub const MAX_WINDOW_EVENTS: usize = 1000;

/// Where the measured thread was during a timed call, in [`Recorded::off_cpu`]'s walk.
#[derive(Clone, Copy, PartialEq)]
enum Where {
    OnCpu,
    /// Switched out while runnable, on this CPU.
    Preempted(usize),
    Asleep,
    /// Woken, waiting for a CPU.
    Runnable(usize),
}

impl Recorded {
    /// Why one timed system call of thread `tid` over `[start, end]` took so long: its own
    /// time on a CPU (`wakee_kernel_ns`), time runnable but off the CPU while others ran
    /// (`ran_ahead_ns`, with those tasks), time asleep (`blocked_ns`) and who woke it, and the
    /// dirty-page throttling (`writeback:balance_dirty_pages`) it met. Follows the thread
    /// across CPUs.
    pub fn off_cpu(&self, tid: u32, start: u64, end: u64) -> Attribution {
        let mut evs: Vec<(usize, &Event)> = self
            .cpus
            .iter()
            .flat_map(|(&cpu, c)| {
                c.events[c.at(start)..]
                    .iter()
                    .take_while(move |e| e.ts <= end)
                    .map(move |e| (cpu, e))
            })
            .filter(|(_, e)| match &e.kind {
                Kind::Switch { prev_pid, next_pid, .. } => *prev_pid == tid || *next_pid == tid,
                Kind::Waking { pid, .. } => *pid == tid,
                Kind::Throttle { .. } => e.pid == tid,
                _ => false,
            })
            .collect();
        evs.sort_by_key(|(_, e)| e.ts);
        let mut a = Attribution::default();
        let (mut at, mut t) = (Where::OnCpu, start);
        let mut others: Vec<Slice> = Vec::new();
        let (mut sleeps, mut preemptions) = (0u32, 0u32);
        let mut wakers: Vec<String> = Vec::new();
        let mut throttle: Option<(u32, i64, u64, u64)> = None;
        let close = |at: Where, from: u64, to: u64, a: &mut Attribution, others: &mut Vec<Slice>| match at {
            Where::OnCpu => a.wakee_kernel_ns += to - from,
            Where::Asleep => a.blocked_ns += to - from,
            Where::Preempted(cpu) | Where::Runnable(cpu) => {
                a.ran_ahead_ns += to - from;
                if let Some(c) = self.cpus.get(&cpu) {
                    others.extend(c.slices(from, to));
                }
            }
        };
        for (cpu, e) in evs {
            match &e.kind {
                Kind::Switch {
                    prev_pid, prev_state, ..
                } if *prev_pid == tid && at == Where::OnCpu => {
                    close(at, t, e.ts, &mut a, &mut others);
                    at = if prev_state.starts_with('R') {
                        preemptions += 1;
                        Where::Preempted(cpu)
                    } else {
                        sleeps += 1;
                        Where::Asleep
                    };
                    t = e.ts;
                }
                Kind::Switch { next_pid, .. } if *next_pid == tid && at != Where::OnCpu => {
                    close(at, t, e.ts, &mut a, &mut others);
                    (at, t) = (Where::OnCpu, e.ts);
                }
                Kind::Waking { .. } if at == Where::Asleep => {
                    close(at, t, e.ts, &mut a, &mut others);
                    wakers.push(format!("{}/{}", e.comm, e.pid));
                    (at, t) = (Where::Runnable(cpu), e.ts);
                }
                Kind::Throttle { pause_ms, dirty, limit } => {
                    let (n, p, _, _) = throttle.unwrap_or((0, 0, 0, 0));
                    throttle = Some((n + 1, p + pause_ms.max(&0), *dirty, *limit));
                }
                _ => {}
            }
        }
        close(at, t, end, &mut a, &mut others);
        a.tasks = task_list(&others, tid);
        wakers.dedup();
        let mut parts = Vec::new();
        if sleeps > 0 {
            parts.push(format!("slept {sleeps}x, woken by {}", wakers.join(", ")));
        }
        if preemptions > 0 {
            parts.push(format!("preempted {preemptions}x"));
        }
        if let Some((n, pause, dirty, limit)) = throttle {
            parts.push(format!(
                "throttled by balance_dirty_pages {n}x for {pause} ms (dirty {} MiB, limit {} MiB)",
                dirty * 4 / 1024,
                limit * 4 / 1024
            ));
        }
        let mut warnings = Vec::new();
        if self
            .cpus
            .values()
            .any(|c| c.events.first().is_some_and(|f| f.ts > start) && c.lost > 0)
        {
            warnings.push("window precedes the oldest recorded event on some CPU".to_string());
        }
        let head = match parts.is_empty() {
            true => "ran through without leaving the CPU".to_string(),
            false => parts.join("; "),
        };
        a.note = format!("{head}; {}", note(self.cpus.values().all(|c| c.ns), &warnings));
        a
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = include_str!("../tests/fixtures/sched_trace/cpu0.txt");
    const RAW: &str = include_str!("../tests/fixtures/sched_trace/cpu0.raw");

    use super::parts_sum as sum;

    fn recorded(text: &str) -> Recorded {
        Recorded::new(BTreeMap::from([(0, CpuTrace::parse(text, None, 0))]), None)
    }

    #[test]
    fn parses_captured_lines() {
        let h = parse_head(
            "        my co-mm-15523   [000] d..2.  9121.117263: sched_switch: prev_comm=my co-mm prev_pid=15523 \
             prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120",
        )
        .unwrap();
        assert_eq!(
            (h.comm, h.pid, h.ts, h.event),
            ("my co-mm", 15523, 9_121_117_263_000, "sched_switch")
        );
        assert_eq!(
            parse_kind(h.event, h.fields),
            Some(Kind::Switch {
                prev_comm: "my co-mm".into(),
                prev_pid: 15523,
                prev_state: "S".into(),
                next_comm: "swapper/0".into(),
                next_pid: 0
            })
        );
        let h = parse_head(
            "          <idle>-0       [000] d.h1.  9121.128102: hrtimer_expire_entry: hrtimer=00000000bc8869ca \
             function=hrtimer_wakeup now=9121128101321",
        )
        .unwrap();
        assert_eq!((h.comm, h.pid), ("<idle>", 0));
        assert_eq!(
            parse_kind(h.event, h.fields),
            Some(Kind::TimerEntry {
                function: "hrtimer_wakeup".into(),
                now: Some(9_121_128_101_321)
            })
        );
        let h = parse_head(
            "          <idle>-0       [000] d.h1.  9121.135601: irq_handler_entry: irq=39 name=virtio2-output.0",
        )
        .unwrap();
        assert_eq!(
            parse_kind(h.event, h.fields),
            Some(Kind::IrqEntry {
                irq: 39,
                name: "virtio2-output.0".into()
            })
        );
        let h =
            parse_head("        my co-mm-15523   [000] ..s..  9121.116027: softirq_entry: vec=9 [action=RCU]").unwrap();
        assert_eq!(
            parse_kind(h.event, h.fields),
            Some(Kind::SoftirqEntry { action: "RCU".into() })
        );
        let h = parse_head(
            "          <idle>-0       [000] d.h3.  9121.120318: sched_waking: comm=my co-mm pid=15523 prio=120 \
             target_cpu=000",
        )
        .unwrap();
        assert_eq!(
            parse_kind(h.event, h.fields),
            Some(Kind::Waking { pid: 15523, prio: 120 })
        );
        // Without the irq-info flags column, with 9 decimals, and a comm with " [" in it.
        let h =
            parse_head("  a [b]-c-77 [003] 12.000000123: sched_waking: comm=x pid=5 prio=1 target_cpu=003").unwrap();
        assert_eq!((h.comm, h.pid, h.ts), ("a [b]-c", 77, 12_000_000_123));
        assert_eq!(parse_head("# tracer: nop"), None);
        assert_eq!(parse_head("CPU:0 [LOST 12 EVENTS]"), None);
    }

    #[test]
    fn parses_captured_buffer_with_ns_from_raw_pass() {
        let c = CpuTrace::parse(TEXT, Some(RAW), 0);
        assert!(c.ns);
        assert_eq!(c.skipped, 0);
        assert_eq!(c.events.len(), 152);
        assert_eq!(c.events[0].ts, 9_121_096_662_043);
        assert!(c.events.windows(2).all(|w| w[0].ts <= w[1].ts));
        let us = CpuTrace::parse(TEXT, None, 0);
        assert!(!us.ns);
        assert_eq!(us.events[0].ts, 9_121_096_662_000);
        // A raw pass that does not match line by line leaves µs timestamps.
        let short: String = RAW.lines().take(100).map(|l| format!("{l}\n")).collect();
        assert!(!CpuTrace::parse(TEXT, Some(&short), 0).ns);
    }

    #[test]
    fn clean_wakeup_from_idle() {
        // Captured: `chrt -f 50 sleep 0.005` (pid 15524) woken from idle on CPU 0.
        let rec = Recorded::new(BTreeMap::from([(0, CpuTrace::parse(TEXT, Some(RAW), 0))]), None);
        let intended = 9_121_128_100_000;
        let woke = 9_121_128_140_000;
        let a = rec.attribute(0, 15524, intended, woke);
        assert_eq!(sum(&a), woke - intended, "{a:?}");
        // The expiry came 1.3 us late to the idle loop, which halts with interrupts on: the
        // host's time (here the halted vCPU's wakeup), not the kernel's interrupts-off time.
        assert_eq!((a.irq_off_ns, a.steal_ns), (0, 1_321));
        assert!(a.note.contains("came 1.3 us late to a CPU idle"), "{}", a.note);
        assert_eq!(a.preempt_wait_ns + a.ran_ahead_ns, 0);
        assert!(a.sched_ns > 0 && a.handler_ns > 0 && a.wakee_kernel_ns > 0, "{a:?}");
        assert_eq!(a.tasks.len(), 1);
        assert_eq!((a.tasks[0].comm.as_str(), a.tasks[0].pid), ("<idle>", 0));
        assert!(a.irqs.contains(&("hrtimer hrtimer_wakeup".to_string(), 1)));
        assert_eq!(a.cause, None);
        assert!(
            a.note.contains("ns resolution") && !a.note.contains("no sched_"),
            "{}",
            a.note
        );
    }

    const KWORKER_HELD: &str = "\
          <idle>-0       [000] d..2.   100.000000: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=kworker/0:1 next_pid=42 next_prio=120
     kworker/0:1-42      [000] d.h1.   100.000050: hrtimer_expire_entry: hrtimer=00000000ef75f1b4 function=hrtimer_wakeup now=100000049000
     kworker/0:1-42      [000] d.h3.   100.000051: sched_waking: comm=latlab-cpu0 pid=777 prio=49 target_cpu=000
     kworker/0:1-42      [000] d.h1.   100.000052: hrtimer_expire_exit: hrtimer=00000000ef75f1b4
     kworker/0:1-42      [000] d.h1.   100.000060: irq_handler_entry: irq=39 name=virtio2-output.0
     kworker/0:1-42      [000] d.h1.   100.000064: irq_handler_exit: irq=39 ret=handled
     kworker/0:1-42      [000] ..s..   100.000064: softirq_entry: vec=3 [action=NET_RX]
     kworker/0:1-42      [000] ..s..   100.000070: softirq_exit: vec=3 [action=NET_RX]
     kworker/0:1-42      [000] d..2.   100.000250: sched_switch: prev_comm=kworker/0:1 prev_pid=42 prev_prio=120 prev_state=R ==> next_comm=latlab-cpu0 next_pid=777 next_prio=49
";

    #[test]
    fn non_preemptible_kworker_with_irq_in_window() {
        let (intended, woke) = (100_000_040_000, 100_000_255_000);
        let a = recorded(KWORKER_HELD).attribute(0, 777, intended, woke);
        assert_eq!(sum(&a), woke - intended, "{a:?}");
        assert_eq!(a.irq_off_ns, 9_000);
        assert_eq!(a.handler_ns, 12_000);
        assert_eq!(a.preempt_wait_ns, 189_000);
        assert_eq!((a.ran_ahead_ns, a.sched_ns, a.wakee_kernel_ns), (0, 0, 5_000));
        assert_eq!(
            a.tasks,
            vec![TaskSlice {
                comm: "kworker/0:1".into(),
                pid: 42,
                ns: 210_000
            }]
        );
        assert_eq!(a.irqs.len(), 3);
        assert!(a.irqs.contains(&("irq 39 virtio2-output.0".to_string(), 1)));
        assert!(a.irqs.contains(&("softirq NET_RX".to_string(), 1)));
        let c = a.cause.expect("cause");
        assert_eq!(c.task, "kworker/0:1/42");
        assert_eq!(c.path, "kernel (non-preemptible section)");
        assert_eq!((c.since_ns, c.until_ns), (100_000_051_000, 100_000_250_000));
        assert!(a.note.contains("µs resolution"), "{}", a.note);
        assert!(
            a.note.contains("no kernel stack recorded at the timer's expiry"),
            "{}",
            a.note
        );
    }

    #[test]
    fn splits_a_wakeup_as_timerlat() {
        let rec = recorded(KWORKER_HELD);
        // Expiry due at 40 us, its handler read 49 us; the thread switched in at 250 us.
        assert_eq!(
            rec.split(0, 777, 100_000_040_000, 100_000_255_000),
            Some((9_000, 201_000))
        );
        assert_eq!(rec.split(0, 778, 100_000_040_000, 100_000_255_000), None);
        assert_eq!(rec.split(5, 777, 100_000_040_000, 100_000_255_000), None);
    }

    /// KWORKER_HELD with the stack the stacktrace trigger takes in the expiry: dd's write,
    /// as this kernel printed it under `--load dd`.
    fn kworker_with_stack(frames_after_entry: &str) -> String {
        let (head, tail) = KWORKER_HELD.split_at(KWORKER_HELD.find("     kworker/0:1-42      [000] d.h3.").unwrap());
        format!(
            "{head}     kworker/0:1-42      [000] d.h1.   100.000050: <stack trace>
 => trace_event_raw_event_hrtimer_expire_entry
 => __hrtimer_run_queues
 => hrtimer_interrupt
 => __sysvec_apic_timer_interrupt
 => sysvec_apic_timer_interrupt
 => asm_sysvec_apic_timer_interrupt
{frames_after_entry}{tail}"
        )
    }

    #[test]
    fn the_stack_at_the_expiry_names_the_function_that_held_the_cpu() {
        let text = kworker_with_stack(
            " => copy_folio_from_iter_atomic+0x1a/0x40\n => generic_perform_write\n => ext4_buffered_write_iter\n \
             => vfs_write\n => ksys_write\n => do_syscall_64\n",
        );
        let (intended, woke) = (100_000_040_000, 100_000_255_000);
        let rec = recorded(&text);
        assert_eq!(rec.cpus[&0].skipped, 0);
        let a = rec.attribute(0, 777, intended, woke);
        assert_eq!(sum(&a), woke - intended, "{a:?}");
        let c = a.cause.expect("cause");
        assert_eq!(
            format!("{} in {}", c.task, c.path),
            "kworker/0:1/42 in copy_folio_from_iter_atomic <- generic_perform_write <- ext4_buffered_write_iter <- vfs_write"
        );
        assert!(!a.note.contains("stack"), "{}", a.note);
        // The recorded window keeps the whole stack, frames as printed.
        let w = rec.window(&[0], 40_000, intended, woke);
        let stack = w.events.iter().find(|e| e.event == "<stack trace>").expect("the stack");
        assert_eq!(stack.fields.lines().count(), 12);
        assert_eq!(
            stack.fields.lines().nth(6),
            Some(" => copy_folio_from_iter_atomic+0x1a/0x40")
        );
        assert_eq!(w.events.len(), 10);
        // The expiry interrupted kernel code: its 9 us delay may be the kernel's
        // interrupts-off time.
        assert_eq!((a.irq_off_ns, a.steal_ns), (9_000, 0));
        // Interrupted in user space: no kernel function to name, and the delay, with the
        // interrupted task in user space all along (interrupts on), is the host's.
        let a = recorded(&kworker_with_stack("")).attribute(0, 777, intended, woke);
        assert_eq!((a.irq_off_ns, a.steal_ns), (0, 9_000));
        assert!(a.note.contains("came 9.0 us late to a CPU in user space"), "{}", a.note);
        // Due while the CPU was idle, 10 us before the kworker switched in, 59 us before the
        // expiry: up to the switch, after which interrupts were on, the timer's interrupt was
        // not pending (it would have come then): the host's; after it, in the kernel's
        // vfs_write, the kernel's may be ...
        let a = recorded(&kworker_with_stack(" => vfs_write\n")).attribute(0, 777, 99_999_990_000, woke);
        assert_eq!((a.irq_off_ns, a.steal_ns), (49_000, 10_000));
        assert!(
            a.note.contains("came 10.0 us late to a CPU that switched tasks"),
            "{}",
            a.note
        );
        // ... and in user space to the expiry, not.
        let a = recorded(&kworker_with_stack("")).attribute(0, 777, 99_999_990_000, woke);
        assert_eq!((a.irq_off_ns, a.steal_ns), (0, 59_000));
        assert_eq!(a.cause.unwrap().path, "kernel (non-preemptible section)");
        // Without a stack nothing tells user space from the kernel: the kernel's ...
        let mut rec = recorded(KWORKER_HELD);
        let a = rec.attribute(0, 777, intended, woke);
        assert_eq!((a.irq_off_ns, a.steal_ns), (9_000, 0));
        // ... unless the task is known to be a fair one running only in user space. Its 189
        // us of holding the CPU after waking a real-time task (prio 49) stay the kernel's:
        // one such wakeup tells no median of the interrupt's return to user space.
        rec.in_user_space([42]);
        let a = rec.attribute(0, 777, intended, woke);
        assert_eq!((a.irq_off_ns, a.preempt_wait_ns, a.steal_ns), (0, 189_000, 9_000));
        assert_eq!(sum(&a), woke - intended, "{a:?}");
        assert!(a.note.contains("late to a CPU running a user-space loop"), "{}", a.note);
        // Due while the CPU was idle, then that task from the switch to the expiry: interrupts
        // on all along, the whole delay the host's.
        let a = rec.attribute(0, 777, 99_999_990_000, woke);
        assert_eq!((a.irq_off_ns, a.steal_ns), (0, 59_000), "{a:?}");
        assert!(a.note.contains("then ran idle or in user space"), "{}", a.note);
        // Interrupted while running softirqs at an earlier interrupt's exit: that context,
        // cut at the earlier interrupt's entry.
        let nested = kworker_with_stack(
            " => handle_softirqs\n => __irq_exit_rcu\n => sysvec_apic_timer_interrupt\n \
             => asm_sysvec_apic_timer_interrupt\n => vfs_write\n",
        );
        let a = recorded(&nested).attribute(0, 777, intended, woke);
        assert_eq!(
            a.cause.unwrap().path,
            "handle_softirqs <- __irq_exit_rcu <- sysvec_apic_timer_interrupt"
        );
    }

    #[test]
    fn a_stack_keeps_the_raw_pass_in_step() {
        let text = kworker_with_stack(" => vfs_write\n");
        // The raw pass prints the stack as one line, as the kernel does (`type: 4`).
        let raw: String = text
            .lines()
            .filter(|l| is_event_line(l))
            .map(|l| {
                let h = parse_head(l).unwrap();
                format!("{} 0 {} type: 4\n", h.pid, h.ts + 300)
            })
            .collect();
        let c = CpuTrace::parse(&text, Some(&raw), 0);
        assert!(c.ns);
        assert_eq!(c.events.len(), 10);
        assert!(c.events.iter().all(|e| e.ts % 1000 == 300));
    }

    /// SIGEV_THREAD: posix_timer_fn signals glibc's helper thread (500), which creates the
    /// notification thread (778) with clone().
    const THREAD_CREATED: &str = "\
          <idle>-0       [000] d.h1.   300.000010: hrtimer_expire_entry: hrtimer=00000000ef75f1b4 function=posix_timer_fn now=300000010000
          <idle>-0       [000] d.h3.   300.000011: sched_waking: comm=latlab-posix pid=500 prio=4 target_cpu=000
          <idle>-0       [000] d.h1.   300.000012: hrtimer_expire_exit: hrtimer=00000000ef75f1b4
          <idle>-0       [000] d..2.   300.000014: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=latlab-posix next_pid=500 next_prio=4
    latlab-posix-500     [000] d..2.   300.000074: sched_wakeup_new: comm=latlab-posix pid=778 prio=4 target_cpu=000
    latlab-posix-500     [000] d..2.   300.000084: sched_switch: prev_comm=latlab-posix prev_pid=500 prev_prio=4 prev_state=S ==> next_comm=latlab-posix next_pid=778 next_prio=4
";

    /// `spans.len()` expiries from `base_us`, 10 ms apart, each waking thread 777 (kernel
    /// priority `prio`) on time (its expiry 10 us into its 10 ms, the handler 10-12 us) on a
    /// CPU `held` holds (`(comm, pid)`; `("swapper/0", 0)`: idle), the thread switched in
    /// `span` us after its `sched_waking` at 11 us and out again 30 us later.
    fn wakeups(held: (&str, u32), prio: u32, base_us: u64, spans: &[u64]) -> String {
        let f = |us: u64| format!("{}.{:06}", us / 1_000_000, us % 1_000_000);
        let (comm, pid) = held;
        let head = match pid {
            0 => "<idle>-0".to_string(),
            _ => format!("{comm}-{pid}"),
        };
        let mut out = String::new();
        for (k, span) in spans.iter().enumerate() {
            let t = base_us + 10_000 * k as u64;
            out += &format!(
                "{head} [000] d.h1. {}: hrtimer_expire_entry: hrtimer=00000000ef75f1b4 function=hrtimer_wakeup now={}\n\
                 {head} [000] d.h3. {}: sched_waking: comm=cyc pid=777 prio={prio} target_cpu=000\n\
                 {head} [000] d.h1. {}: hrtimer_expire_exit: hrtimer=00000000ef75f1b4\n\
                 {head} [000] d..2. {}: sched_switch: prev_comm={comm} prev_pid={pid} prev_prio=120 prev_state=R ==> next_comm=cyc next_pid=777 next_prio={prio}\n\
                 cyc-777 [000] d..2. {}: sched_switch: prev_comm=cyc prev_pid=777 prev_prio={prio} prev_state=S ==> next_comm={comm} next_pid={pid} next_prio=120\n",
                f(t + 10),
                (t + 10) * 1000,
                f(t + 11),
                f(t + 12),
                f(t + 11 + span),
                f(t + 41 + span),
            );
        }
        out
    }

    /// [`wakeups`] of a SCHED_OTHER thread from idle, from 500 s.
    fn idle_exits(spans: &[u64]) -> String {
        wakeups(("swapper/0", 0), 120, 500_000_000, spans)
    }

    /// [`wakeups`] of a SCHED_FIFO thread (prio 49) while a hog (42) runs, from 600 s.
    fn hog_preemptions(spans: &[u64]) -> String {
        wakeups(("hog", 42), 49, 600_000_000, spans)
    }

    #[test]
    fn a_wait_for_a_user_space_hog_beyond_the_recordings_median_is_the_hosts() {
        // 100 preemptions 5 to 9 us after the wakeup, then one after 500 us.
        let mut spans: Vec<u64> = (0..100).map(|k| 5 + k % 5).collect();
        spans.push(500);
        let mut rec = recorded(&hog_preemptions(&spans));
        let t = 600_000_000_000 + 10_000_000 * 100;
        let (intended, woke) = (t + 10_000, t + 515_000);
        // Not known to run in user space: the hog's hold is a wait for a preemption point.
        let a = rec.attribute(0, 777, intended, woke);
        assert_eq!((a.preempt_wait_ns, a.steal_ns), (499_000, 0), "{a:?}");
        // Known: the kernel's share is the recording's median from such a wakeup to the
        // switch (7 us), the rest the host's.
        rec.in_user_space([42]);
        assert_eq!(rec.known.user_preempt, Some(7_000));
        let a = rec.attribute(0, 777, intended, woke);
        assert_eq!(sum(&a), woke - intended, "{a:?}");
        assert_eq!((a.preempt_wait_ns, a.steal_ns), (7_000, 492_000), "{a:?}");
        assert!(a.note.contains("it waited 499.0 us for hog/42"), "{}", a.note);
        // A quick one is all the kernel's.
        let a = rec.attribute(0, 777, 600_000_010_000, 600_000_025_000);
        assert_eq!(a.steal_ns, 0, "{a:?}");
    }

    #[test]
    fn an_idle_exit_beyond_the_recordings_median_is_the_hosts() {
        // 100 wakeups switched in 10 to 19 us after their wakeup, then one after 1 ms.
        let mut spans: Vec<u64> = (0..100).map(|k| 10 + k % 10).collect();
        spans.push(1_000);
        let rec = recorded(&idle_exits(&spans));
        assert_eq!(rec.known.idle_wakeup, Some(15_000), "the median of 101 spans");
        // The slow one: expiry on time at 10 us, handler 10-12 us, switch at 1011 us.
        let t = 500_000_000_000 + 10_000_000 * 100;
        let (intended, woke) = (t + 10_000, t + 1_015_000);
        let a = rec.attribute(0, 777, intended, woke);
        assert_eq!(sum(&a), woke - intended, "{a:?}");
        assert_eq!((a.irq_off_ns, a.handler_ns), (0, 2_000));
        assert_eq!((a.sched_ns, a.steal_ns), (15_000, 984_000), "{a:?}");
        assert!(
            a.note
                .contains("the idle CPU took 999.0 us to switch it in, 984.0 us more"),
            "{}",
            a.note
        );
        // A quick one (switched in 11 us after its wakeup: 12 us after its expiry, 2 of them
        // its handler's) is all the kernel's.
        let a = rec.attribute(0, 777, 500_010_010_000, 500_010_025_000);
        assert_eq!((a.sched_ns, a.steal_ns), (10_000, 0), "{a:?}");
        // Fewer than 100 idle wakeups tell no typical exit: all of it the kernel's.
        let rec = recorded(&idle_exits(&spans[90..]));
        assert_eq!(rec.known.idle_wakeup, None);
        let t = 500_000_000_000 + 10_000_000 * 10;
        let a = rec.attribute(0, 777, t + 10_000, t + 1_015_000);
        assert_eq!((a.sched_ns, a.steal_ns), (999_000, 0), "{a:?}");
    }

    #[test]
    fn a_thread_created_to_notify_waits_for_its_creator() {
        let (intended, woke) = (300_000_005_000, 300_000_090_000);
        let a = recorded(THREAD_CREATED).attribute(0, 778, intended, woke);
        assert_eq!(sum(&a), woke - intended, "{a:?}");
        // Late expiry 5 us (to an idle CPU: the host's), handler 2 us, idle exit 2 us, the
        // helper's 60 us up to the clone and 10 us after it, 6 us in the new thread.
        assert_eq!((a.steal_ns, a.irq_off_ns, a.handler_ns), (5_000, 0, 2_000), "{a:?}");
        assert_eq!((a.sched_ns, a.ran_ahead_ns), (2_000, 60_000), "{a:?}");
        assert_eq!((a.preempt_wait_ns, a.wakee_kernel_ns), (10_000, 6_000), "{a:?}");
        assert!(!a.note.contains("no sched_waking"), "{}", a.note);
        assert_eq!(a.tasks[0].comm, "latlab-posix");
    }

    /// The same, with glibc's helper thread on CPU 1: the timer fires on CPU 0, the helper
    /// creates the notification thread from CPU 1, which then runs on CPU 0.
    const HELPER_ELSEWHERE_CPU0: &str = "\
          <idle>-0       [000] d.h1.   400.000010: hrtimer_expire_entry: hrtimer=00000000ef75f1b4 function=posix_timer_fn now=400000010000
          <idle>-0       [000] d.h3.   400.000011: sched_waking: comm=latlab-posix pid=500 prio=4 target_cpu=001
          <idle>-0       [000] d.h1.   400.000012: hrtimer_expire_exit: hrtimer=00000000ef75f1b4
          <idle>-0       [000] d..2.   400.000090: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=latlab-posix next_pid=778 next_prio=4
";
    const HELPER_ELSEWHERE_CPU1: &str = "\
          <idle>-0       [001] d..2.   400.000020: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=latlab-posix next_pid=500 next_prio=4
    latlab-posix-500     [001] d..2.   400.000080: sched_wakeup_new: comm=latlab-posix pid=778 prio=4 target_cpu=000
";

    #[test]
    fn a_wakeup_recorded_on_another_cpu_is_found_there() {
        let rec = Recorded::new(
            BTreeMap::from([
                (0, CpuTrace::parse(HELPER_ELSEWHERE_CPU0, None, 0)),
                (1, CpuTrace::parse(HELPER_ELSEWHERE_CPU1, None, 0)),
            ]),
            None,
        );
        let (intended, woke) = (400_000_010_000, 400_000_095_000);
        let a = rec.attribute(0, 778, intended, woke);
        assert_eq!(sum(&a), woke - intended, "{a:?}");
        // Expiry on time; the helper's 68 us (less CPU 0's 2 us handler) up to the clone on
        // CPU 1; CPU 0 leaves idle 10 us later; 5 us in the new thread.
        assert_eq!(
            (a.irq_off_ns, a.handler_ns, a.ran_ahead_ns),
            (0, 2_000, 68_000),
            "{a:?}"
        );
        assert_eq!((a.sched_ns, a.wakee_kernel_ns), (10_000, 5_000), "{a:?}");
        assert!(
            a.tasks.iter().any(|t| t.pid == 500 && t.comm.contains("another CPU")),
            "{:?}",
            a.tasks
        );
        assert!(!a.note.contains("no sched_waking"), "{}", a.note);
    }

    const RAN_AHEAD: &str = "\
          <idle>-0       [000] d.h1.   200.000010: hrtimer_expire_entry: hrtimer=00000000ef75f1b4 function=hrtimer_wakeup now=200000010000
          <idle>-0       [000] d.h3.   200.000011: sched_waking: comm=kworker/0:1 pid=42 prio=120 target_cpu=000
          <idle>-0       [000] d.h3.   200.000012: sched_waking: comm=latlab-cpu0 pid=777 prio=49 target_cpu=000
          <idle>-0       [000] d.h1.   200.000013: hrtimer_expire_exit: hrtimer=00000000ef75f1b4
          <idle>-0       [000] d..2.   200.000015: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=kworker/0:1 next_pid=42 next_prio=120
     kworker/0:1-42      [000] d..2.   200.000115: sched_switch: prev_comm=kworker/0:1 prev_pid=42 prev_prio=120 prev_state=S ==> next_comm=latlab-cpu0 next_pid=777 next_prio=49
";

    #[test]
    fn task_switched_in_ahead_of_the_wakee() {
        let (intended, woke) = (200_000_010_000, 200_000_120_000);
        let a = recorded(RAN_AHEAD).attribute(0, 777, intended, woke);
        assert_eq!(sum(&a), woke - intended, "{a:?}");
        assert_eq!((a.irq_off_ns, a.handler_ns, a.sched_ns), (0, 3_000, 2_000));
        assert_eq!(
            (a.ran_ahead_ns, a.preempt_wait_ns, a.wakee_kernel_ns),
            (100_000, 0, 5_000)
        );
        assert_eq!(a.tasks[0].comm, "kworker/0:1");
        assert_eq!(a.tasks[1].comm, "<idle>");
        let c = a.cause.expect("cause");
        assert_eq!(c.task, "kworker/0:1/42");
        assert!(c.path.starts_with("ran ahead"), "{}", c.path);
        // A thread never woken in the window is reported as such.
        let a = recorded(RAN_AHEAD).attribute(0, 999, intended, woke);
        assert!(a.note.contains("no sched_waking of tid 999"), "{}", a.note);
        assert!(recorded(RAN_AHEAD)
            .attribute(1, 777, intended, woke)
            .note
            .contains("CPU 1 was not traced"));
    }

    #[test]
    fn lost_events_are_reported() {
        let mut rec = recorded(RAN_AHEAD);
        rec.cpus.get_mut(&0).unwrap().lost = 7;
        assert_eq!(rec.lost(0), 7);
        let a = rec.attribute(0, 777, 100_000_000_000, 100_000_100_000);
        assert!(
            a.note.contains("window precedes the oldest recorded event (7 events"),
            "{}",
            a.note
        );
    }

    #[test]
    fn cpumask_groups() {
        assert_eq!(cpumask(&[0]), "1");
        assert_eq!(cpumask(&[1, 3]), "a");
        assert_eq!(cpumask(&[0, 33]), "2,00000001");
    }

    #[test]
    fn traces_a_sleeping_thread_on_cpu0() {
        let t = match SchedTrace::start(&[0], 1024) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("skipping live ftrace test: {e}");
                return;
            }
        };
        let dir = t.inst.dir.clone();
        assert!(dir.is_dir());
        let (tid, samples) = std::thread::spawn(|| {
            let _ = crate::caps::pin_to(0);
            let _ = crate::caps::set_fifo(80);
            let mut samples = Vec::new();
            let mut next = crate::clock::mono_ns() + 1_000_000;
            for _ in 0..200 {
                crate::clock::sleep_until(next);
                samples.push((next, crate::clock::mono_ns()));
                next += 1_000_000;
            }
            (crate::clock::gettid(), samples)
        })
        .join()
        .expect("sleeper");
        let rec = t.finish().expect("finish");
        assert!(!dir.exists(), "instance {} not removed", dir.display());
        let cpu0 = &rec.cpus[&0];
        assert!(!cpu0.events.is_empty());
        assert!(cpu0.ns, "raw pass did not match the text pass");
        let (intended, woke) = samples[samples.len() - 2];
        let a = rec.attribute(0, tid, intended, woke);
        assert!(!a.note.contains("no sched_"), "{}", a.note);
        assert_eq!(sum(&a), woke - intended, "{a:?}");
    }

    #[test]
    fn drop_removes_the_instance() {
        let Ok(t) = SchedTrace::start(&[0], 64) else {
            eprintln!("skipping live ftrace test: tracefs unavailable");
            return;
        };
        let dir = t.inst.dir.clone();
        drop(t);
        assert!(!dir.exists());
    }

    /// A write(2) over 10.000000-10.015000 s: 0.1 ms on CPU 0, preempted by cc1 for 4 ms,
    /// back for 0.2 ms (throttled), asleep 10 ms, woken by a kworker, 0.1 ms until CPU 1
    /// runs it, then 0.6 ms to the end.
    #[test]
    fn off_cpu_splits_a_slow_write_into_running_preempted_and_asleep() {
        let cpu0 = "\
          writer-100   [000] d..2.   10.000100: sched_switch: prev_comm=writer prev_pid=100 prev_prio=120 prev_state=R+ ==> next_comm=cc1 next_pid=200 next_prio=120
             cc1-200   [000] d..2.   10.004100: sched_switch: prev_comm=cc1 prev_pid=200 prev_prio=120 prev_state=R ==> next_comm=writer next_pid=100 next_prio=120
          writer-100   [000] .....   10.004200: balance_dirty_pages: bdi 253:0: limit=262144 setpoint=200000 dirty=269824 wb_setpoint=1 wb_dirty=1 dirty_ratelimit=1 task_ratelimit=1 dirtied=1 dirtied_pause=1 paused=0 pause=10 period=10 think=0 cgroup_ino=1
          writer-100   [000] d..2.   10.004300: sched_switch: prev_comm=writer prev_pid=100 prev_prio=120 prev_state=D ==> next_comm=swapper/0 next_pid=0 next_prio=120
";
        let cpu1 = "\
     kworker/1:1-50      [001] d..2.   10.014300: sched_waking: comm=writer pid=100 prio=120 target_cpu=001
          <idle>-0       [001] d..2.   10.014400: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=writer next_pid=100 next_prio=120
";
        let rec = Recorded::new(
            BTreeMap::from([(0, CpuTrace::parse(cpu0, None, 0)), (1, CpuTrace::parse(cpu1, None, 0))]),
            None,
        );
        let (start, end) = (10_000_000_000, 10_015_000_000);
        let a = rec.off_cpu(100, start, end);
        assert_eq!(a.wakee_kernel_ns, 900_000, "{a:?}");
        assert_eq!(a.ran_ahead_ns, 4_100_000, "{a:?}");
        assert_eq!(a.blocked_ns, 10_000_000, "{a:?}");
        assert_eq!(a.wakee_kernel_ns + a.ran_ahead_ns + a.blocked_ns, end - start);
        assert_eq!((a.tasks[0].comm.as_str(), a.tasks[0].ns), ("cc1", 4_000_000));
        assert!(a.note.contains("woken by kworker/1:1/50"), "{}", a.note);
        assert!(a.note.contains("preempted 1x"), "{}", a.note);
        assert!(
            a.note
                .contains("throttled by balance_dirty_pages 1x for 10 ms (dirty 1054 MiB, limit 1024 MiB)"),
            "{}",
            a.note
        );
        // A call that never left the CPU says so.
        let quiet = rec.off_cpu(100, 9_000_000_000, 9_500_000_000);
        assert_eq!(quiet.wakee_kernel_ns, 500_000_000);
        assert!(quiet.note.starts_with("ran through"), "{}", quiet.note);
    }
}
