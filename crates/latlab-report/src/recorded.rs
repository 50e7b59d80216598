//! A result's recorded kernel events around its worst samples
//! ([`latlab_core::RecordedEvents`]: what the probe's ftrace instance recorded, each event as
//! the kernel printed it, or what the model's event recorder kept of its tracepoints,
//! `latlab_sim::measure::recorder`, in the same form), exported as they were recorded: as
//! ftrace text and as trace-event JSON. Nothing is laid out, merged or added. A sample
//! without recorded events is named, with the reason, in the output's comments (ftrace) or
//! its `otherData` (JSON), and nothing is drawn for it.
//!
//! ftrace text: the `/sys/kernel/tracing/trace` layout (`# tracer: nop`, then
//! `comm-pid [cpu] flags secs.usecs: event: fields`, the columns as the kernel prints them,
//! timestamps truncated to microseconds as ftrace prints them), every event of every window
//! once, in time order. A kernel stack (`<stack trace>` and its ` => frame` lines) is
//! written as `#` comment lines, which Perfetto's text importer skips: its line pattern has
//! no place for them. Perfetto reads these files as its "Linux ftrace textual format"
//! (<https://perfetto.dev/docs/getting-started/other-formats>); its tokenizer takes the
//! five-character irq-info column of current kernels (`d.h2.`).
//!
//! Trace-event JSON: one process per CPU (`pid` = CPU + 1), whose tracks are built from the
//! recorded events only: the task on the CPU between `sched_switch`es (from a window's first
//! event on that CPU, whose line names the task current then, to its last), each matched
//! pair of `irq_handler_entry/exit`, `softirq_entry/exit` and `hrtimer_expire_entry/exit`,
//! every event as an instant with its fields, and the probe's measured sample (stimulus to
//! wakeup) on the stream's CPU (a sample of no CPU of its own, a write(2), on every CPU of
//! its window). Windows that overlap on a CPU are merged, so slices on one
//! track never overlap.

use crate::chrome_trace::{complete, cpu_tracks, instant};
use crate::ftrace::{timestamp, FLAGS_LEGEND};
use crate::summary;
use latlab_core::{RecordedEvent, RecordedEvents, RunResult, Sample, Stream};
use serde_json::{json, Value};
use std::fmt::Write;

/// One exported sample: its stream, the sample, and what was recorded around it.
#[derive(Clone, Debug)]
pub struct Picked<'a> {
    pub stream: &'a Stream,
    pub sample: &'a Sample,
    pub recorded: Option<&'a RecordedEvents>,
}

impl Picked<'_> {
    /// The CPU the sample was measured on (its `cpu` tag).
    fn cpu(&self) -> Option<u32> {
        self.sample.tag.get("cpu").and_then(|c| c.parse().ok())
    }

    /// `cpu0: 2.345 ms at t=1.234 s`.
    fn headline(&self) -> String {
        format!("{}: {}", self.stream.name, summary::headline(self.sample))
    }
}

/// The `per_stream` worst samples of every stream (or of `only`), worst first.
pub fn pick<'a>(r: &'a RunResult, only: Option<&str>, per_stream: usize) -> Vec<Picked<'a>> {
    r.streams
        .iter()
        .filter(|s| only.is_none_or(|n| n == s.name))
        .flat_map(|s| {
            s.worst.iter().take(per_stream).map(move |w| Picked {
                stream: s,
                sample: w,
                recorded: s.recorded_for(w),
            })
        })
        .collect()
}

/// Why nothing was recorded for a sample, from its attribution's note.
fn not_recorded(p: &Picked) -> String {
    let note = &p.sample.attribution.note;
    match note.is_empty() {
        true => {
            "no kernel events were recorded for it (the run had no --explain, or it was below --trace-above)".into()
        }
        false => format!("no kernel events were recorded for it ({note})"),
    }
}

/// Every recorded event of `picked`, once each, in time order.
fn all_events<'a>(picked: &[Picked<'a>]) -> Vec<&'a RecordedEvent> {
    let mut v: Vec<&RecordedEvent> = picked
        .iter()
        .filter_map(|p| p.recorded)
        .flat_map(|r| r.events.iter())
        .collect();
    // Time order; events of one time and CPU keep the order they were recorded in (a
    // `sched_waking` before the `sched_switch` it causes), and a copy of one that two
    // overlapping windows hold is dropped.
    v.sort_by_key(|&e| (e.ts_ns, e.cpu));
    let mut out: Vec<&RecordedEvent> = Vec::with_capacity(v.len());
    let mut group = 0;
    for e in v {
        if out.last().is_none_or(|l| (l.ts_ns, l.cpu) != (e.ts_ns, e.cpu)) {
            group = out.len();
        }
        if !out[group..].contains(&e) {
            out.push(e);
        }
    }
    out
}

/// An event as ftrace prints it (`%16s-%-7d [%03d] FLAGS %5lu.%06lu: EVENT: FIELDS`,
/// kernel/trace/trace_output.c); a stack as comments.
fn event_line(e: &RecordedEvent) -> String {
    let head = format!(
        "{:>16}-{:<7} [{:03}] {} {:>5}.{:06}: ",
        e.comm,
        e.pid,
        e.cpu,
        e.flags,
        e.ts_ns / 1_000_000_000,
        e.ts_ns % 1_000_000_000 / 1_000
    );
    match e.fields.starts_with(" => ") {
        true => {
            let mut s = format!("#{head}{}\n", e.event);
            for frame in e.fields.lines() {
                let _ = writeln!(s, "#{frame}");
            }
            s
        }
        false => format!("{head}{}: {}\n", e.event, e.fields),
    }
}

/// The ftrace text of the recorded events around `picked`; `title` names the run.
/// `system` is the run's system facts ([`latlab_core::RunMeta::system`]), one comment line
/// each.
pub fn ftrace(title: &str, system: &[(&str, &str)], picked: &[Picked]) -> String {
    let mut out = String::from("# tracer: nop\n#\n");
    let _ = writeln!(out, "# latlab report trace: {title}");
    for (k, v) in system {
        let _ = writeln!(out, "# {k}: {v}");
    }
    out.push_str(
        "# kernel events as they were recorded around each sample (by the probe's ftrace instance, or by the \
         model's event recorder: each sample's clock says which); nothing added\n",
    );
    for p in picked {
        match p.recorded {
            Some(r) => {
                let _ = writeln!(
                    out,
                    "# {}: stimulus at {} ({}); {} events on CPUs {} from {} to {}{}",
                    p.headline(),
                    timestamp(r.stimulus_ns),
                    r.clock,
                    r.events.len(),
                    r.cpus.iter().map(u32::to_string).collect::<Vec<_>>().join(","),
                    timestamp(r.from_ns),
                    timestamp(r.to_ns),
                    match r.left_out {
                        0 => String::new(),
                        n => format!(" ({n} earlier events of the window left out)"),
                    }
                );
            }
            None => {
                let _ = writeln!(out, "# {}: {}", p.headline(), not_recorded(p));
            }
        }
    }
    let events = all_events(picked);
    if picked.iter().filter(|p| p.recorded.is_some()).count() > 1 {
        out.push_str("# the windows are apart in time: between them nothing was kept\n");
    }
    let ncpu = events.iter().map(|e| e.cpu + 1).max().unwrap_or(0);
    let _ = writeln!(
        out,
        "# entries-in-buffer/entries-written: {0}/{0}   #P:{ncpu}",
        events.len()
    );
    out.push_str(FLAGS_LEGEND);
    out.push_str(
        "#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION\n\
         #              | |         |   |||||     |         |\n",
    );
    for e in events {
        out.push_str(&event_line(e));
    }
    out
}

/// The value of `key=` in an event's fields (up to the next blank).
fn field<'a>(fields: &'a str, key: &str) -> Option<&'a str> {
    let pat = format!("{key}=");
    let at = fields
        .match_indices(&pat)
        .find(|(i, _)| *i == 0 || fields.as_bytes()[i - 1] == b' ')?
        .0;
    fields[at + pat.len()..].split_whitespace().next()
}

/// The task a `sched_switch` switched to: `comm/pid` (a comm may hold blanks).
fn next_task(fields: &str) -> Option<String> {
    let (_, next) = fields.split_once(" ==> ")?;
    let comm = next.strip_prefix("next_comm=")?.rsplit_once(" next_pid=")?.0;
    Some(format!("{comm}/{}", field(next, "next_pid")?))
}

/// Track of each kind of handler, and how an entry names its slice; `None` for an exit.
fn handler(e: &RecordedEvent) -> Option<(u32, Option<String>)> {
    Some(match e.event.as_str() {
        "irq_handler_entry" => (
            TRACK_IRQ,
            Some(format!(
                "irq {} {}",
                field(&e.fields, "irq").unwrap_or("?"),
                e.fields.split_once(" name=").map_or("", |(_, n)| n)
            )),
        ),
        "irq_handler_exit" => (TRACK_IRQ, None),
        "softirq_entry" => (
            TRACK_SOFTIRQ,
            Some(match e.fields.split_once("[action=") {
                Some((_, a)) => format!("softirq {}", a.trim_end_matches(']')),
                None => format!("softirq {}", e.fields),
            }),
        ),
        "softirq_exit" => (TRACK_SOFTIRQ, None),
        "hrtimer_expire_entry" => (
            TRACK_HRTIMER,
            Some(format!("hrtimer {}", field(&e.fields, "function").unwrap_or("?"))),
        ),
        "hrtimer_expire_exit" => (TRACK_HRTIMER, None),
        _ => return None,
    })
}

const TRACK_TASK: u32 = 1;
const TRACK_IRQ: u32 = 2;
const TRACK_SOFTIRQ: u32 = 3;
const TRACK_HRTIMER: u32 = 4;
const TRACK_EVENTS: u32 = 5;
const TRACK_SAMPLE: u32 = 6;

/// The slices and instants of one stretch of recorded events on one CPU.
fn segment_events(cpu: u32, evs: &[&RecordedEvent], out: &mut Vec<Value>) {
    let pid = cpu + 1;
    let Some(first) = evs.first() else { return };
    let mut current = (format!("{}/{}", first.comm, first.pid), first.ts_ns);
    let mut open: [Option<(String, u64)>; 3] = [None, None, None];
    for e in evs {
        let mut args = json!({"comm": e.comm, "pid": e.pid, "flags": e.flags, "fields": e.fields});
        if e.event == "sched_switch" {
            if let Some(next) = next_task(&e.fields) {
                out.push(complete(
                    pid,
                    TRACK_TASK,
                    &current.0,
                    "sched",
                    current.1,
                    e.ts_ns,
                    json!({}),
                ));
                current = (next, e.ts_ns);
            }
        }
        if let Some((track, entry)) = handler(e) {
            let slot = &mut open[(track - TRACK_IRQ) as usize];
            match entry {
                Some(name) => *slot = Some((name, e.ts_ns)),
                None => {
                    if let Some((name, start)) = slot.take() {
                        out.push(complete(pid, track, &name, "irq", start, e.ts_ns, json!({})));
                    }
                }
            }
        }
        args["event"] = json!(e.event);
        out.push(instant(pid, TRACK_EVENTS, &e.event, "ftrace", e.ts_ns, args));
    }
    let last = evs.last().map_or(current.1, |e| e.ts_ns);
    out.push(complete(
        pid,
        TRACK_TASK,
        &current.0,
        "sched",
        current.1,
        last,
        json!({}),
    ));
}

/// The trace-event JSON of the recorded events around `picked`; `title` names the run,
/// `system` its system facts (in `otherData.system`).
pub fn chrome(title: &str, system: &[(&str, &str)], picked: &[Picked]) -> Value {
    let mut cpus: Vec<u32> = picked
        .iter()
        .filter_map(|p| p.recorded)
        .flat_map(|r| r.events.iter().map(|e| e.cpu).chain(r.cpus.iter().copied()))
        .chain(picked.iter().filter(|p| p.recorded.is_some()).filter_map(Picked::cpu))
        .collect();
    cpus.sort_unstable();
    cpus.dedup();
    let mut events: Vec<Value> = Vec::new();
    for &cpu in &cpus {
        cpu_tracks(
            cpu,
            title,
            &[
                (TRACK_TASK, "task (sched_switch)"),
                (TRACK_IRQ, "hard irqs"),
                (TRACK_SOFTIRQ, "softirqs"),
                (TRACK_HRTIMER, "hrtimer expiries"),
                (TRACK_EVENTS, "recorded events"),
                (TRACK_SAMPLE, "measured sample"),
            ],
            &mut events,
        );
    }
    let mut timed: Vec<Value> = Vec::new();
    let all = all_events(picked);
    for &cpu in &cpus {
        // The windows on this CPU, merged where they overlap.
        let mut spans: Vec<(u64, u64)> = picked
            .iter()
            .filter_map(|p| p.recorded)
            .filter(|r| r.cpus.contains(&cpu))
            .map(|r| (r.from_ns, r.to_ns))
            .collect();
        spans.sort_unstable();
        let mut merged: Vec<(u64, u64)> = Vec::new();
        for (a, b) in spans {
            match merged.last_mut() {
                Some(last) if a <= last.1 => last.1 = last.1.max(b),
                _ => merged.push((a, b)),
            }
        }
        for (a, b) in merged {
            let evs: Vec<&RecordedEvent> = all
                .iter()
                .copied()
                .filter(|e| e.cpu == cpu && a <= e.ts_ns && e.ts_ns <= b)
                .collect();
            segment_events(cpu, &evs, &mut timed);
        }
    }
    let mut notes = Vec::new();
    for p in picked {
        let Some(r) = p.recorded else {
            notes.push(format!("{}: {}", p.headline(), not_recorded(p)));
            continue;
        };
        // On the sample's CPU; a sample of no CPU of its own (a write(2), which may move) on
        // every CPU its window holds.
        let on: Vec<u32> = p.cpu().map_or_else(|| r.cpus.clone(), |c| vec![c]);
        let end = r.stimulus_ns + p.sample.latency_ns;
        let args = json!({
            "stream": p.stream.name,
            "latency_ns": p.sample.latency_ns,
            "tags": p.sample.tag,
            "attribution": p.sample.attribution,
            "clock": r.clock,
        });
        for cpu in on {
            timed.push(complete(
                cpu + 1,
                TRACK_SAMPLE,
                &p.headline(),
                "latency",
                r.stimulus_ns,
                end,
                args.clone(),
            ));
        }
    }
    let key = |v: &Value| (v["ts"].as_f64().unwrap_or(0.0), -v["dur"].as_f64().unwrap_or(0.0));
    timed.sort_by(|a, b| key(a).partial_cmp(&key(b)).unwrap_or(std::cmp::Ordering::Equal));
    events.extend(timed);
    json!({
        "traceEvents": events,
        "displayTimeUnit": "ns",
        "otherData": {
            "run": title,
            "system": system.iter().map(|(k, v)| (k.to_string(), json!(v))).collect::<serde_json::Map<String, Value>>(),
            "source": "kernel events recorded by the probe's ftrace instance; nothing added",
            "not_recorded": notes,
        },
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::input::tests::result;
    use latlab_core::{Attribution, Engine};

    fn ev(ts: u64, cpu: u32, comm: &str, pid: u32, flags: &str, event: &str, fields: &str) -> RecordedEvent {
        RecordedEvent {
            ts_ns: ts,
            cpu,
            comm: comm.into(),
            pid,
            flags: flags.into(),
            event: event.into(),
            fields: fields.into(),
        }
    }

    /// A probe result of two CPUs: cpu0's worst sample has events recorded on CPUs 0 and 1
    /// (a kworker on CPU 1, a softirq and an hrtimer on CPU 0, a stack); cpu1's none.
    pub(crate) fn probe_with_events() -> RunResult {
        let mut r = result(Engine::Probe, "6.1.0", "cpu0", &[20_000, 2_000_000]);
        let mut s1 = latlab_core::Stream::new("cpu1", "wakeup");
        s1.hist.record(900_000);
        let sample = |cpu: &str, at: u64, lat: u64, note: &str| Sample {
            at_ns: at,
            latency_ns: lat,
            tag: [
                ("cpu".to_string(), cpu.to_string()),
                ("tid".to_string(), "900".to_string()),
            ]
            .into(),
            attribution: Attribution {
                note: note.into(),
                ..Default::default()
            },
        };
        r.streams[0].worst.push(sample("0", 5_000_000, 2_000_000, "ftrace"));
        s1.worst.push(sample("1", 7_000_000, 900_000, ""));
        let base = 100_000_000_000;
        let switch = "prev_comm=dd prev_pid=31677 prev_prio=120 prev_state=R+ ==> next_comm=latlab cpu0 next_pid=900 next_prio=4";
        r.streams[0].recorded.push(RecordedEvents {
            sample_at_ns: 5_000_000,
            clock: "mono (CLOCK_MONOTONIC), ns resolution".into(),
            stimulus_ns: base,
            from_ns: base - 1_000_000,
            to_ns: base + 2_100_000,
            cpus: vec![0, 1],
            left_out: 0,
            events: vec![
                ev(
                    base - 500_000,
                    0,
                    "dd",
                    31677,
                    "....",
                    "softirq_entry",
                    "vec=9 [action=RCU]",
                ),
                ev(
                    base - 400_000,
                    0,
                    "dd",
                    31677,
                    "..s..",
                    "softirq_exit",
                    "vec=9 [action=RCU]",
                ),
                ev(
                    base - 300_000,
                    1,
                    "kworker/1:1",
                    50,
                    "d..2.",
                    "sched_waking",
                    "comm=x pid=5 prio=120 target_cpu=001",
                ),
                ev(
                    base + 10,
                    0,
                    "dd",
                    31677,
                    "d.h1.",
                    "hrtimer_expire_entry",
                    "hrtimer=0000 function=hrtimer_wakeup now=1",
                ),
                ev(
                    base + 20,
                    0,
                    "dd",
                    31677,
                    "d.h1.",
                    "<stack trace>",
                    " => hrtimer_wakeup\n => ext4_buffered_write_iter",
                ),
                ev(
                    base + 900,
                    0,
                    "dd",
                    31677,
                    "d.h1.",
                    "hrtimer_expire_exit",
                    "hrtimer=0000",
                ),
                ev(base + 1_990_000, 0, "dd", 31677, "d..2.", "sched_switch", switch),
            ],
        });
        r.streams.push(s1);
        r
    }

    #[test]
    fn ftrace_text_holds_the_recorded_events_only() {
        let r = probe_with_events();
        let text = ftrace("6.1.0 (probe)", &[("clocksource", "tsc")], &pick(&r, None, 1));
        let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(lines.len(), 6, "{text}");
        assert_eq!(
            lines[0],
            "              dd-31677   [000] ....    99.999500: softirq_entry: vec=9 [action=RCU]"
        );
        assert!(lines[2].contains("[001] d..2.    99.999700: sched_waking:"), "{text}");
        assert!(
            lines.iter().all(|l| !l.contains("<idle>") && !l.contains("1073741824")),
            "{text}"
        );
        assert!(text.contains("\n#              dd-31677   [000] d.h1.   100.000000: <stack trace>\n# => hrtimer_wakeup\n# => ext4_buffered_write_iter\n"), "{text}");
        assert!(
            text.contains(
                "# cpu1: 0.900 ms at t=0.007 s: no kernel events were recorded for it (the run had no --explain"
            ),
            "{text}"
        );
        assert!(
            text.contains("# cpu0: 2.000 ms at t=0.005 s: stimulus at 100.000000"),
            "{text}"
        );
        // Perfetto's line pattern (with the 5-character flags column).
        for l in lines {
            let (_, rest) = l.split_once(" [").unwrap();
            let mut w = rest.split_whitespace().skip(1);
            let flags = w.next().unwrap();
            assert!(
                flags.len() <= 5 && flags.chars().all(|c| c.is_ascii_alphanumeric() || c == '.'),
                "{l}"
            );
            assert!(
                w.next().unwrap().strip_suffix(':').unwrap().parse::<f64>().is_ok(),
                "{l}"
            );
        }
    }

    #[test]
    fn chrome_json_tracks_come_from_recorded_events() {
        let r = probe_with_events();
        let doc = chrome("6.1.0 (probe)", &[("clocksource", "tsc")], &pick(&r, None, 1));
        assert_eq!(doc["otherData"]["system"]["clocksource"], "tsc");
        let ev = doc["traceEvents"].as_array().unwrap();
        let slices = |tid: u32| -> Vec<(&str, u64, f64, f64)> {
            ev.iter()
                .filter(|e| e["ph"] == "X" && e["tid"] == tid && e["pid"] == 1)
                .map(|e| {
                    (
                        e["name"].as_str().unwrap(),
                        e["pid"].as_u64().unwrap(),
                        e["ts"].as_f64().unwrap(),
                        e["dur"].as_f64().unwrap(),
                    )
                })
                .collect()
        };
        // dd held CPU 0 from its first recorded event to its switch; the woken task's slice
        // ends at the last event recorded on CPU 0.
        assert_eq!(slices(TRACK_TASK)[0], ("dd/31677", 1, 99_999_500.0, 2_490.0));
        assert_eq!(slices(TRACK_TASK)[1].0, "latlab cpu0/900");
        // The kworker's event stays on CPU 1 (pid 2).
        assert!(ev.iter().any(|e| e["name"] == "sched_waking" && e["pid"] == 2), "{doc}");
        assert_eq!(slices(TRACK_SOFTIRQ), [("softirq RCU", 1, 99_999_500.0, 100.0)]);
        assert_eq!(
            slices(TRACK_HRTIMER),
            [("hrtimer hrtimer_wakeup", 1, 100_000_000.01, 0.89)]
        );
        assert!(slices(TRACK_IRQ).is_empty());
        let sample = slices(TRACK_SAMPLE);
        assert_eq!(sample.len(), 1);
        assert_eq!((sample[0].1, sample[0].2, sample[0].3), (1, 100_000_000.0, 2_000.0));
        let notes = doc["otherData"]["not_recorded"].as_array().unwrap();
        assert_eq!(notes.len(), 1);
        assert!(notes[0].as_str().unwrap().starts_with("cpu1: 0.900 ms"), "{doc}");
        // A sample of no CPU of its own (a write(2)) is drawn on each CPU its window holds.
        let mut r = probe_with_events();
        r.streams[0].worst[0].tag.remove("cpu");
        let doc = chrome("6.1.0 (probe)", &[], &pick(&r, None, 1));
        let on: Vec<u64> = doc["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["tid"] == TRACK_SAMPLE && e["ph"] == "X")
            .map(|e| e["pid"].as_u64().unwrap())
            .collect();
        assert_eq!(on, [1, 2]);
    }
}
