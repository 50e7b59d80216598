//! write(2) latency as `iozone -Q` measures it (iozone.c 3.222 `write_perf_test`): the time
//! from just before one `write()` to just after it returns, the writer's being preempted on
//! the way back included (iozone reads `gettimeofday` in user space on both sides). Seed 001
//! sorts these per-record times (`sort -nk2 wol.dat | tail`).
//!
//! Every timed write is explained: the writer's own kernel time by function (where a
//! throttled write spends its CPU: `balance_dirty`, `generic_file_write`, ...), the other
//! tasks that ran meanwhile (kjournald, the writeback threads), the time nobody ran, and
//! what the writer slept in (`blk_congestion_wait`, a request slot, a journal handle). One
//! stream per pass as iozone writes one file per pass: `write` (wol.dat, the probe's name)
//! and `rewrite` (rwol.dat).
//!
//! Each pass's throughput is iozone's: the file's bytes over the time of its record loop
//! (the `fsync` and `close` after it are not timed).

use crate::kernel::task::{Task, TaskId};
use latlab_core::{Attribution, Nanos, Sample, Stream};
use std::collections::BTreeMap;

/// Slowest writes kept with their attribution: seed 001 lists ten.
pub const KEEP_WORST: usize = 10;
/// Seed 001's threshold of a long write: "> 0.1 sec write(2) latencies".
pub const LONG_WRITE_NS: Nanos = 100_000_000;

/// A write(2) under way.
struct Open {
    task: TaskId,
    pass: usize,
    started: Nanos,
    /// The writer's own CPU time in the call, by kernel function.
    own: Vec<(&'static str, Nanos)>,
    /// Other tasks' CPU time in the call, by task.
    others: Vec<(TaskId, Nanos)>,
    /// schedule() and context switches in the call.
    sched: Nanos,
    /// Where the writer slept, by what it waited in.
    slept: Vec<(&'static str, Nanos)>,
    /// The writer's current sleep: what it waits in, since when.
    asleep: Option<(&'static str, Nanos)>,
}

/// One pass of iozone's write test: when its record loop started and ended, bytes written.
#[derive(Clone, Copy, Default)]
struct Pass {
    start: Option<Nanos>,
    end: Nanos,
    bytes: u64,
}

/// Measurement state of the `write` stream.
#[derive(Default)]
pub struct WriteTracker {
    /// Write, rewrite: each pass's records.
    streams: [Option<Stream>; 2],
    open: Option<Open>,
    passes: [Pass; 2],
    long_writes: [u64; 2],
    /// Start of the measured run (samples' times are relative to it).
    pub epoch: Nanos,
}

/// The iozone passes, by index.
pub const PASS_NAMES: [&str; 2] = ["write", "rewrite"];

impl WriteTracker {
    /// True while a timed write is under way (the CPU loop reports time only then).
    pub fn measuring(&self) -> bool {
        self.open.is_some()
    }

    /// Task `task` is about to call write(2) for a record of pass `pass` (0 write, 1 rewrite).
    pub fn on_start(&mut self, task: TaskId, pass: usize, now: Nanos) {
        let p = &mut self.passes[pass.min(1)];
        p.start.get_or_insert(now);
        self.open = Some(Open {
            task,
            pass: pass.min(1),
            started: now,
            own: Vec::new(),
            others: Vec::new(),
            sched: 0,
            slept: Vec::new(),
            asleep: None,
        });
    }

    /// Task `task` went to sleep in `wait` (a [`crate::kernel::path::Chan::wait_name`]).
    pub fn on_sleep(&mut self, task: TaskId, wait: &'static str, now: Nanos) {
        if let Some(o) = self.open.as_mut().filter(|o| o.task == task) {
            o.asleep = Some((wait, now));
        }
    }

    /// Task `task` was woken.
    pub fn on_wake(&mut self, task: TaskId, now: Nanos) {
        if let Some(o) = self.open.as_mut().filter(|o| o.task == task) {
            if let Some((wait, since)) = o.asleep.take() {
                super::tally(&mut o.slept, wait, now - since);
            }
        }
    }

    /// `d` ns of CPU time in task `task`, in kernel function `func` ("user" in user space).
    pub fn on_run(&mut self, task: TaskId, d: Nanos, func: &'static str) {
        let Some(o) = self.open.as_mut() else { return };
        if task == o.task {
            super::tally(&mut o.own, func, d);
        } else if task != 0 {
            super::tally(&mut o.others, task, d);
        }
    }

    /// `d` ns of scheduler time.
    pub fn on_sched(&mut self, d: Nanos) {
        if let Some(o) = self.open.as_mut() {
            o.sched += d;
        }
    }

    /// The write(2) started last returned, having written `bytes` at `offset_kb`.
    pub fn on_done(&mut self, offset_kb: u64, bytes: u64, now: Nanos, tasks: &[Task]) {
        let Some(o) = self.open.take() else { return };
        let latency = now - o.started;
        let pass = &mut self.passes[o.pass];
        pass.end = now;
        pass.bytes += bytes;
        self.long_writes[o.pass] += u64::from(latency > LONG_WRITE_NS);
        let stream = self.streams[o.pass].get_or_insert_with(|| {
            Stream::new(
                PASS_NAMES[o.pass],
                format!("write(2) of {bytes} B, iozone -Q's {} pass", PASS_NAMES[o.pass]),
            )
        });
        stream.hist.record(latency);
        let enters = stream.worst.len() < KEEP_WORST || stream.worst.last().is_some_and(|s| s.latency_ns < latency);
        if !enters {
            return;
        }
        let mut own = o.own;
        own.sort_by_key(|(_, ns)| std::cmp::Reverse(*ns));
        let mut others = o.others;
        others.sort_by_key(|(_, ns)| std::cmp::Reverse(*ns));
        let own_ns: Nanos = own.iter().map(|(_, ns)| ns).sum();
        let others_ns: Nanos = others.iter().map(|(_, ns)| ns).sum();
        let idle = latency.saturating_sub(own_ns + others_ns + o.sched);
        let ms = |ns: Nanos| ns as f64 / 1e6;
        let funcs: Vec<String> = own
            .iter()
            .take(4)
            .map(|(f, ns)| format!("{f} {:.3} ms", ms(*ns)))
            .collect();
        let mut slept = o.slept;
        slept.sort_by_key(|(_, ns)| std::cmp::Reverse(*ns));
        let waits: Vec<String> = slept.iter().map(|(w, ns)| format!("{w} {:.3} ms", ms(*ns))).collect();
        let ran: Vec<String> = others
            .iter()
            .take(4)
            .map(|(t, ns)| format!("{} {:.3} ms", tasks[*t].label(), ms(*ns)))
            .collect();
        let note = format!(
            "model: {} of the record at {offset_kb} KB: the writer's own time {:.3} ms ({}); others ran {:.3} ms ({}); nobody ran {:.3} ms; the writer slept in {}",
            PASS_NAMES[o.pass],
            ms(own_ns),
            if funcs.is_empty() { "-".into() } else { funcs.join(", ") },
            ms(others_ns),
            if ran.is_empty() { "-".into() } else { ran.join(", ") },
            ms(idle),
            if waits.is_empty() { "nothing".into() } else { waits.join(", ") },
        );
        let mut tag = BTreeMap::new();
        tag.insert("offset_kb".into(), offset_kb.to_string());
        tag.insert("pass".into(), PASS_NAMES[o.pass].into());
        tag.insert("record_bytes".into(), bytes.to_string());
        stream.offer_worst(
            Sample {
                at_ns: o.started - self.epoch.min(o.started),
                latency_ns: latency,
                tag,
                attribution: Attribution {
                    ran_ahead_ns: others_ns,
                    sched_ns: o.sched,
                    wakee_kernel_ns: own_ns,
                    blocked_ns: idle,
                    tasks: super::task_slices(tasks, &others),
                    note,
                    ..Attribution::default()
                },
            },
            KEEP_WORST,
        );
    }

    /// What was measured; None if no write was timed.
    pub fn finish(self) -> Option<Measured> {
        let streams: Vec<Stream> = self.streams.into_iter().flatten().collect();
        if streams.is_empty() {
            return None;
        }
        let rates = self
            .passes
            .iter()
            .zip(PASS_NAMES)
            .filter_map(|(p, name)| {
                let start = p.start?;
                let secs = (p.end - start) as f64 / 1e9;
                (p.bytes > 0 && secs > 0.0).then(|| (name, p.bytes as f64 / 1024.0 / secs))
            })
            .collect();
        Some(Measured {
            streams,
            long_writes: self.long_writes,
            rates,
        })
    }
}

/// The `write` and `rewrite` streams and iozone's figures.
pub struct Measured {
    pub streams: Vec<Stream>,
    /// Writes over [`LONG_WRITE_NS`], per pass.
    pub long_writes: [u64; 2],
    /// Each pass's throughput in KB/s (iozone's figure: bytes over the record loop's time).
    pub rates: Vec<(&'static str, f64)>,
}
