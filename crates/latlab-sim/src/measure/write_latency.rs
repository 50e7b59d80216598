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
//!
//! sysbench's `fileio` run ([`crate::workload::sysbench`]) is timed the same way as a third
//! pass, `rndrw`: each `pread`/`pwrite` request into the `sysbench-rndrw` stream (sysbench
//! 0.4's `sb_percentile_update` times reads and writes, not fsyncs), and its throughput as
//! sysbench prints it: bytes read and written over the whole run, the periodic and final
//! fsyncs included (its `cumulative_timer1` runs until the last request is done).

use super::Mark;
use crate::kernel::task::{Task, TaskId};
use crate::kernel::tracepoint::{kind, Cx, Event, Sink};
use crate::kernel::SwitchReason;
use latlab_core::{Attribution, IoRecord, Nanos, RunResult, Sample, Stream};
use std::collections::BTreeMap;

/// Slowest writes kept with their attribution: seed 001 lists ten.
pub const KEEP_WORST: usize = 10;
/// Seed 001's threshold of a long write: "> 0.1 sec write(2) latencies".
pub const LONG_WRITE_NS: Nanos = 100_000_000;

pub use crate::kernel::tracepoint::{IoOp, Pass};

impl Pass {
    pub const ALL: [Pass; 3] = [Pass::Write, Pass::Rewrite, Pass::Rndrw];

    fn index(self) -> usize {
        self as usize
    }
    /// The pass's name, as its throughput key has it (`write_MBps`).
    pub fn name(self) -> &'static str {
        match self {
            Pass::Write => "write",
            Pass::Rewrite => "rewrite",
            Pass::Rndrw => "rndrw",
        }
    }
    /// The stream its timed calls go to.
    pub fn stream(self) -> &'static str {
        match self {
            Pass::Rndrw => "sysbench-rndrw",
            p => p.name(),
        }
    }
    /// The counter of its calls over [`LONG_WRITE_NS`].
    pub fn over_counter(self) -> &'static str {
        match self {
            Pass::Write => "writes_over_100ms",
            Pass::Rewrite => "rewrites_over_100ms",
            Pass::Rndrw => "rndrw_requests_over_100ms",
        }
    }
    pub(crate) fn describe(self, bytes: u64) -> String {
        match self {
            Pass::Rndrw => format!("pread/pwrite of {bytes} B, sysbench fileio rndrw's requests"),
            p => format!("write(2) of {bytes} B, iozone -Q's {} pass", p.name()),
        }
    }
}

impl IoOp {
    /// In the order of a pass's call counts (`Measured::ops`).
    pub const ALL: [IoOp; 3] = [IoOp::Read, IoOp::Write, IoOp::Fsync];

    pub fn name(self) -> &'static str {
        match self {
            IoOp::Read => "read",
            IoOp::Write => "write",
            IoOp::Fsync => "fsync",
        }
    }
}

/// A timed call under way.
struct Open {
    task: TaskId,
    pass: Pass,
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

/// One pass: when its loop started and ended, bytes moved, calls by [`IoOp`], and the
/// context switches from its first call's start to its last call's end.
#[derive(Clone, Copy, Default)]
struct Span {
    start: Option<Nanos>,
    end: Nanos,
    bytes: u64,
    ops: [u64; 3],
    switches: Switches,
}

/// Context switches: all of the machine's (vmstat's `cs`), and the timed task's involuntary
/// ones (`/usr/bin/time -f %c`: switched out still runnable, by preemption or at a
/// rescheduling point).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Switches {
    pub all: u64,
    pub involuntary: u64,
}

impl Span {
    /// Seconds from its first call's start to its last call's end (0 if it made none).
    fn secs(&self) -> f64 {
        self.start.map_or(0.0, |t| (self.end - t) as f64 / 1e9)
    }
}

/// Measurement state of the passes' streams.
#[derive(Default)]
pub struct WriteTracker {
    /// Each pass's timed calls, by [`Pass`].
    streams: [Option<Stream>; 3],
    open: Option<Open>,
    passes: [Span; 3],
    long_writes: [u64; 3],
    /// Start of the measured run (samples' times are relative to it).
    epoch: Nanos,
    /// Keep every timed call in its stream's `records` (iozone `-Q`'s per-record files).
    keep_records: bool,
    /// Switches since the last timed call returned, for the pass that call's successor is of.
    pending: Switches,
    /// The pass of the last timed call.
    last_pass: Option<Pass>,
}

/// The kinds the tracker takes inside a timed call: its time, sleeps and wakeups.
const IN_CALL: u32 = kind::SLEEP | kind::SCHED_WAKEUP | kind::RUNTIME | kind::SCHED_TIME;

impl Sink for WriteTracker {
    #[inline(always)]
    fn interest() -> u32 {
        kind::MARK | kind::SCHED_SWITCH | IN_CALL
    }

    fn kinds(&self) -> u32 {
        // Switches count from the first timed call on.
        let switches = if self.last_pass.is_some() {
            kind::SCHED_SWITCH
        } else {
            0
        };
        let call = if self.open.is_some() { IN_CALL } else { 0 };
        kind::MARK | switches | call
    }

    #[inline(always)]
    fn event(&mut self, cx: &Cx, ev: &Event) -> bool {
        match *ev {
            // A timed call's start and end open and close its measurement.
            Event::Mark {
                task,
                mark: Mark::IoStart { pass },
            } => {
                self.on_start(task, pass, cx.now);
                return true;
            }
            Event::Mark {
                mark: Mark::IoDone { offset_kb, bytes, op },
                ..
            } => {
                self.on_done(offset_kb, bytes, op, cx.now, cx.tasks);
                return true;
            }
            Event::Sleep { task, wait } => self.on_sleep(task, wait, cx.now),
            Event::SchedWakeup { task, new: false } => self.on_wake(task, cx.now),
            Event::Runtime { task, ns, func, .. } => self.on_run(task, ns, func),
            Event::SchedSwitch { prev, next, reason } if prev != next => {
                // nvcsw/nivcsw: a task leaving the CPU still runnable was switched
                // involuntarily.
                let involuntary = !matches!(reason, SwitchReason::Block | SwitchReason::Exit | SwitchReason::Idle);
                self.on_switch(prev, involuntary);
            }
            Event::SchedTime { ns } => self.on_sched(ns),
            _ => {}
        }
        false
    }

    fn finish(self: Box<Self>, _tasks: &[Task], r: &mut RunResult) {
        let Some(w) = self.measured() else { return };
        for (pass, n) in w.long_writes {
            r.counters.insert(pass.over_counter().into(), n);
        }
        for (pass, kb_s) in w.rates {
            // The benchmark's figure (KB/s over the timed loop), in MB/s.
            r.throughput
                .insert(format!("{}_MBps", pass.name()), kb_s * 1024.0 / 1e6);
        }
        for (pass, counts, secs) in w.ops {
            for (op, n) in IoOp::ALL.into_iter().zip(counts) {
                r.counters.insert(format!("{}_{}s", pass.name(), op.name()), n);
            }
            if secs > 0.0 {
                // sysbench's "Requests/sec executed": reads and writes, not fsyncs.
                let n = (counts[0] + counts[1]) as f64 / secs;
                r.throughput.insert(format!("{}_requests_per_s", pass.name()), n);
            }
        }
        for (pass, sw, secs) in w.switches {
            r.counters.insert(format!("{}_context_switches", pass.name()), sw.all);
            r.counters
                .insert(format!("{}_involuntary_switches", pass.name()), sw.involuntary);
            if secs > 0.0 {
                // vmstat's `cs` column over the pass.
                r.throughput
                    .insert(format!("{}_cs_per_s", pass.name()), sw.all as f64 / secs);
            }
        }
        r.streams.extend(w.streams);
    }
}

impl WriteTracker {
    /// The timed calls of a run starting at `epoch`; `keep_records`: every call into its
    /// stream's `records`.
    pub fn new(epoch: Nanos, keep_records: bool) -> Self {
        WriteTracker {
            epoch,
            keep_records,
            ..WriteTracker::default()
        }
    }

    /// Task `task` is about to make a timed call of pass `pass`.
    #[cold]
    #[inline(never)]
    fn on_start(&mut self, task: TaskId, pass: Pass, now: Nanos) {
        if self.last_pass != Some(pass) {
            // Switches between two passes (the fsync and close) belong to neither.
            self.pending = Switches::default();
            self.last_pass = Some(pass);
        }
        let p = &mut self.passes[pass.index()];
        p.start.get_or_insert(now);
        self.open = Some(Open {
            task,
            pass,
            started: now,
            own: Vec::new(),
            others: Vec::new(),
            sched: 0,
            slept: Vec::new(),
            asleep: None,
        });
    }

    /// Task `task` went to sleep in `wait` (a [`crate::kernel::path::Chan::wait_name`]).
    fn on_sleep(&mut self, task: TaskId, wait: &'static str, now: Nanos) {
        if let Some(o) = self.open.as_mut().filter(|o| o.task == task) {
            o.asleep = Some((wait, now));
        }
    }

    /// Task `task` was woken.
    fn on_wake(&mut self, task: TaskId, now: Nanos) {
        if let Some(o) = self.open.as_mut().filter(|o| o.task == task) {
            if let Some((wait, since)) = o.asleep.take() {
                super::tally(&mut o.slept, wait, now - since);
            }
        }
    }

    /// `d` ns of CPU time in task `task`, in kernel function `func` ("user" in user space).
    fn on_run(&mut self, task: TaskId, d: Nanos, func: &'static str) {
        let Some(o) = self.open.as_mut() else { return };
        if task == o.task {
            super::tally(&mut o.own, func, d);
        } else if task != 0 {
            super::tally(&mut o.others, task, d);
        }
    }

    /// A context switch away from `prev`, `involuntary` if it stayed runnable.
    fn on_switch(&mut self, prev: TaskId, involuntary: bool) {
        if self.last_pass.is_none() {
            return;
        }
        self.pending.all += 1;
        let timed = self.open.as_ref().is_some_and(|o| o.task == prev);
        self.pending.involuntary += u64::from(timed && involuntary);
    }

    /// `d` ns of scheduler time.
    fn on_sched(&mut self, d: Nanos) {
        if let Some(o) = self.open.as_mut() {
            o.sched += d;
        }
    }

    /// The call started last returned, having moved `bytes` at `offset_kb` (an `op`).
    #[cold]
    #[inline(never)]
    fn on_done(&mut self, offset_kb: u64, bytes: u64, op: IoOp, now: Nanos, tasks: &[Task]) {
        let Some(o) = self.open.take() else { return };
        let latency = now - o.started;
        let i = o.pass.index();
        let pass = &mut self.passes[i];
        pass.end = now;
        pass.bytes += bytes;
        pass.ops[op as usize] += 1;
        let sw = std::mem::take(&mut self.pending);
        pass.switches.all += sw.all;
        pass.switches.involuntary += sw.involuntary;
        if op == IoOp::Fsync {
            return;
        }
        self.long_writes[i] += u64::from(latency > LONG_WRITE_NS);
        let stream = self.streams[i].get_or_insert_with(|| Stream::new(o.pass.stream(), o.pass.describe(bytes)));
        stream.hist.record(latency);
        if self.keep_records {
            stream.records.push(IoRecord {
                offset_kb,
                latency_ns: latency,
                bytes,
            });
        }
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
            match o.pass {
                Pass::Rndrw => op.name(),
                p => p.name(),
            },
            ms(own_ns),
            if funcs.is_empty() { "-".into() } else { funcs.join(", ") },
            ms(others_ns),
            if ran.is_empty() { "-".into() } else { ran.join(", ") },
            ms(idle),
            if waits.is_empty() { "nothing".into() } else { waits.join(", ") },
        );
        let mut tag = BTreeMap::new();
        tag.insert("offset_kb".into(), offset_kb.to_string());
        tag.insert("pass".into(), o.pass.name().into());
        if o.pass == Pass::Rndrw {
            tag.insert("op".into(), op.name().into());
        }
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
    fn measured(self) -> Option<Measured> {
        let timed: Vec<Pass> = Pass::ALL
            .into_iter()
            .filter(|p| self.streams[p.index()].is_some())
            .collect();
        if timed.is_empty() {
            return None;
        }
        let rates = Pass::ALL
            .into_iter()
            .filter_map(|pass| {
                let p = &self.passes[pass.index()];
                let secs = p.secs();
                (p.bytes > 0 && secs > 0.0).then(|| (pass, p.bytes as f64 / 1024.0 / secs))
            })
            .collect();
        Some(Measured {
            long_writes: timed.iter().map(|p| (*p, self.long_writes[p.index()])).collect(),
            // Only sysbench's pass has a mix of reads, writes and fsyncs to report.
            ops: timed
                .iter()
                .filter(|p| **p == Pass::Rndrw)
                .map(|p| {
                    let s = &self.passes[p.index()];
                    (*p, s.ops, s.secs())
                })
                .collect(),
            switches: timed
                .iter()
                .map(|p| {
                    let s = &self.passes[p.index()];
                    (*p, s.switches, s.secs())
                })
                .collect(),
            streams: self.streams.into_iter().flatten().collect(),
            rates,
        })
    }
}

/// The passes' streams and the benchmarks' figures.
struct Measured {
    pub streams: Vec<Stream>,
    /// Timed calls over [`LONG_WRITE_NS`], per pass that timed any.
    pub long_writes: Vec<(Pass, u64)>,
    /// Each pass's throughput in KB/s (iozone's figure: bytes over the record loop's time;
    /// sysbench's: bytes read and written over the run).
    pub rates: Vec<(Pass, f64)>,
    /// Calls by [`IoOp`] (reads, writes, fsyncs) of sysbench's pass, if it ran, and the
    /// seconds from its first call's start to its last call's end.
    pub ops: Vec<(Pass, [u64; 3], f64)>,
    /// Each timed pass's context switches from its first call's start to its last call's
    /// end, and that span in seconds.
    pub switches: Vec<(Pass, Switches, f64)>,
}

#[cfg(test)]
mod tests {
    use super::*;

    const WRITER: TaskId = 5;
    const PDFLUSH: TaskId = 6;

    /// A timed call of `pass` by the writer at `t` ms, `d` ms long, with `f` run inside it.
    fn call(w: &mut WriteTracker, pass: Pass, t: u64, d: u64, f: impl FnOnce(&mut WriteTracker)) {
        w.on_start(WRITER, pass, t * 1_000_000);
        f(w);
        w.on_done(4 * t, 4096, IoOp::Write, (t + d) * 1_000_000, &[]);
    }

    #[test]
    fn switches_count_per_pass_and_the_writers_involuntary_ones_only() {
        let mut w = WriteTracker::default();
        // Before any timed call: not counted.
        w.on_switch(PDFLUSH, false);
        call(&mut w, Pass::Write, 0, 1, |w| {
            w.on_switch(WRITER, false); // it sleeps: voluntary
            w.on_switch(PDFLUSH, true); // pdflush preempted: not the writer's
            w.on_switch(WRITER, true); // the writer preempted
        });
        // Between two calls of a pass: the next call's.
        w.on_switch(PDFLUSH, false);
        call(&mut w, Pass::Write, 2, 1, |_| {});
        // After the pass (its fsync): neither pass's.
        w.on_switch(WRITER, false);
        call(&mut w, Pass::Rewrite, 10, 1, |w| w.on_switch(WRITER, true));
        let m = w.measured().unwrap();
        let of = |p: Pass| m.switches.iter().find(|s| s.0 == p).map(|s| (s.1, s.2)).unwrap();
        assert_eq!(of(Pass::Write), (Switches { all: 4, involuntary: 1 }, 0.003));
        assert_eq!(of(Pass::Rewrite).0, Switches { all: 1, involuntary: 1 });
    }

    #[test]
    fn records_are_kept_only_when_asked() {
        for keep in [false, true] {
            let mut w = WriteTracker::new(0, keep);
            call(&mut w, Pass::Write, 0, 3, |_| {});
            call(&mut w, Pass::Write, 3, 1, |_| {});
            let m = w.measured().unwrap();
            let r = &m.streams[0].records;
            if keep {
                let want = |kb, ms: u64| IoRecord {
                    offset_kb: kb,
                    latency_ns: ms * 1_000_000,
                    bytes: 4096,
                };
                assert_eq!(r[..], [want(0, 3), want(12, 1)]);
            } else {
                assert!(r.is_empty());
            }
        }
    }
}
