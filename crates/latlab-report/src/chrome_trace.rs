//! The worst samples' timelines ([`crate::timeline`]) as Chrome trace-event JSON, written for
//! Perfetto's JSON importer (docs/reports.md says which viewers were tried).
//!
//! Format: the Trace Event Format (the JSON Object Format: `{"traceEvents": [...],
//! "displayTimeUnit": "ns"}`;
//! <https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU>), as
//! Perfetto reads it (<https://perfetto.dev/docs/getting-started/other-formats>, "Chrome
//! JSON format"): complete events (`"ph": "X"`, `ts` and `dur` in microseconds) for slices,
//! thread-scoped instant events (`"ph": "i"`, `"s": "t"`) for moments, metadata events
//! (`"ph": "M"`: `process_name`, `thread_name`, `thread_sort_index`) for names. Perfetto
//! requires the X events of one thread to nest or not overlap; here each track's slices
//! follow one another, and instants carry no duration.
//!
//! Layout: one process per CPU (`pid` = CPU + 1), with five tracks (threads):
//! 1 `CPU (task order synthesized)` — who held the CPU ([`crate::timeline`] says what is
//! laid out); 2 `non-preemptible stretch` — the cause (exact); 3 `interrupts` — the wait
//! with interrupts off and the handlers; 4 `latency` — each sample from stimulus to user
//! space, with its whole attribution in `args`, and the wakeup and switch as instants;
//! 5 `latency_trace` — the traced kernel functions as instants, where the run has them.

use crate::timeline::Window;
use latlab_core::Nanos;
use serde_json::{json, Value};

const TRACK_CPU: u32 = 1;
const TRACK_STRETCH: u32 = 2;
const TRACK_IRQ: u32 = 3;
const TRACK_LATENCY: u32 = 4;
const TRACK_FUNCS: u32 = 5;

/// ns as the format's microseconds (fractional: ns precision kept).
pub fn us(ns: Nanos) -> f64 {
    ns as f64 / 1e3
}

/// A complete event.
pub fn complete(pid: u32, tid: u32, name: &str, cat: &str, start: Nanos, end: Nanos, args: Value) -> Value {
    json!({
        "name": name, "cat": cat, "ph": "X", "pid": pid, "tid": tid,
        "ts": us(start), "dur": us(end.saturating_sub(start)), "args": args,
    })
}

/// A thread-scoped instant event.
pub fn instant(pid: u32, tid: u32, name: &str, cat: &str, at: Nanos, args: Value) -> Value {
    json!({
        "name": name, "cat": cat, "ph": "i", "s": "t", "pid": pid, "tid": tid,
        "ts": us(at), "args": args,
    })
}

/// A metadata event (`process_name`, `thread_name`, `thread_sort_index`).
fn metadata(pid: u32, tid: Option<u32>, name: &str, args: Value) -> Value {
    let mut m = json!({"name": name, "ph": "M", "pid": pid, "args": args});
    if let Some(t) = tid {
        m["tid"] = json!(t);
    }
    m
}

/// The metadata naming CPU `cpu`'s process (`CPU n: title`) and its tracks, in order.
pub fn cpu_tracks(cpu: u32, title: &str, tracks: &[(u32, &str)], out: &mut Vec<Value>) {
    let pid = cpu + 1;
    out.push(metadata(
        pid,
        None,
        "process_name",
        json!({"name": format!("CPU {cpu}: {title}")}),
    ));
    for &(tid, name) in tracks {
        out.push(metadata(pid, Some(tid), "thread_name", json!({"name": name})));
        out.push(metadata(
            pid,
            Some(tid),
            "thread_sort_index",
            json!({"sort_index": tid}),
        ));
    }
}

fn window_events(w: &Window, out: &mut Vec<Value>) {
    let pid = w.cpu + 1;
    for r in &w.runs {
        let name = format!("{}/{}", r.task.comm, r.task.pid);
        let role = if r.task == w.woken {
            "the woken task, from the switch to user space"
        } else if r.task.is_idle() {
            "idle"
        } else {
            "held the CPU (position synthesized from the task's total)"
        };
        out.push(complete(
            pid,
            TRACK_CPU,
            &name,
            "cpu",
            r.start,
            r.end,
            json!({"role": role}),
        ));
    }
    if let Some(s) = &w.stretch {
        out.push(complete(
            pid,
            TRACK_STRETCH,
            &s.label,
            "non-preemptible",
            s.start,
            s.end,
            json!({"task": format!("{}/{}", s.task.comm, s.task.pid), "ended_by": s.ended_by}),
        ));
    }
    for h in w.irq_off.iter().chain(&w.handlers) {
        out.push(complete(pid, TRACK_IRQ, &h.name, "irq", h.start, h.end, json!({})));
    }
    let a = &w.sample.attribution;
    out.push(complete(
        pid,
        TRACK_LATENCY,
        &format!("{} latency {:.3} ms", w.stream, w.sample.latency_ns as f64 / 1e6),
        "latency",
        w.at,
        w.end,
        json!({"stream": w.stream, "tag": w.sample.tag, "attribution": a}),
    ));
    let woken = format!("{}/{}", w.woken.comm, w.woken.pid);
    let wake_source = if w.traced {
        "latency_trace"
    } else {
        "end of the handlers"
    };
    out.push(instant(
        pid,
        TRACK_LATENCY,
        &format!("wakeup {woken}"),
        "sched",
        w.wake,
        json!({"from": wake_source}),
    ));
    out.push(instant(
        pid,
        TRACK_LATENCY,
        &format!("switch to {woken}"),
        "sched",
        w.switch,
        json!({}),
    ));
    for f in &w.funcs {
        out.push(instant(
            pid,
            TRACK_FUNCS,
            &f.func,
            "latency_trace",
            f.at,
            json!({"parent": f.parent, "preempt_count": format!("{:08x}", f.preempt_count)}),
        ));
    }
}

/// The trace document for `windows`; `title` names the run in each CPU's process name.
pub fn render(title: &str, windows: &[Window]) -> Value {
    let mut events: Vec<Value> = Vec::new();
    let mut cpus: Vec<u32> = windows.iter().map(|w| w.cpu).collect();
    cpus.sort_unstable();
    cpus.dedup();
    for &cpu in &cpus {
        cpu_tracks(
            cpu,
            title,
            &[
                (TRACK_CPU, "CPU (task order synthesized)"),
                (TRACK_STRETCH, "non-preemptible stretch"),
                (TRACK_IRQ, "interrupts"),
                (TRACK_LATENCY, "latency"),
                (TRACK_FUNCS, "latency_trace"),
            ],
            &mut events,
        );
    }
    let mut timed: Vec<Value> = Vec::new();
    for w in windows {
        window_events(w, &mut timed);
    }
    // Time order; at the same time, the longer slice first (so slices nest).
    let key = |v: &Value| (v["ts"].as_f64().unwrap_or(0.0), -v["dur"].as_f64().unwrap_or(0.0));
    timed.sort_by(|a, b| key(a).partial_cmp(&key(b)).unwrap_or(std::cmp::Ordering::Equal));
    events.extend(timed);
    json!({"traceEvents": events, "displayTimeUnit": "ns"})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::{tests::model_result, windows};

    #[test]
    fn document_shape_and_nesting() {
        let r = model_result();
        let w = windows(&r, None, 5);
        let doc = render("2.4.18 (model)", &w);
        let ev = doc["traceEvents"].as_array().unwrap();
        assert_eq!(doc["displayTimeUnit"], "ns");
        for e in ev {
            let ph = e["ph"].as_str().unwrap();
            assert!(["X", "i", "M"].contains(&ph), "{e}");
            assert!(e["pid"].is_u64() && e["name"].is_string(), "{e}");
            if ph != "M" {
                assert!(e["ts"].as_f64().unwrap() >= 0.0 && e["tid"].is_u64(), "{e}");
            }
            if ph == "X" {
                assert!(e["dur"].as_f64().unwrap() >= 0.0, "{e}");
            }
            if ph == "i" {
                assert_eq!(e["s"], "t");
            }
        }
        // X events of one track never partly overlap.
        let xs: Vec<(u64, u64, f64, f64)> = ev
            .iter()
            .filter(|e| e["ph"] == "X")
            .map(|e| {
                let ts = e["ts"].as_f64().unwrap();
                (
                    e["pid"].as_u64().unwrap(),
                    e["tid"].as_u64().unwrap(),
                    ts,
                    ts + e["dur"].as_f64().unwrap(),
                )
            })
            .collect();
        for a in &xs {
            for b in &xs {
                if (a.0, a.1) == (b.0, b.1) && a.2 < b.2 {
                    assert!(b.2 >= a.3 - 1e-6 || b.3 <= a.3 + 1e-6, "{a:?} {b:?}");
                }
            }
        }
        // The CPU track: cc1 then realfeel in the worst window; the latency slice carries the
        // attribution; the trace's functions are instants.
        let names = |tid: u64| -> Vec<&str> {
            ev.iter()
                .filter(|e| e["ph"] == "X" && e["tid"] == tid)
                .map(|e| e["name"].as_str().unwrap())
                .collect()
        };
        assert_eq!(names(1)[..2], ["cc1/15", "realfeel/7"]);
        assert_eq!(names(2), ["zap_page_range <- do_exit [page_table_lock]"]);
        let lat = ev.iter().find(|e| e["tid"] == 4 && e["ph"] == "X").unwrap();
        assert_eq!(lat["ts"].as_f64().unwrap(), 5_892_575.108);
        assert_eq!(lat["dur"].as_f64().unwrap(), 1_152.384);
        assert_eq!(lat["args"]["attribution"]["preempt_wait_ns"], 1_139_141);
        assert_eq!(ev.iter().filter(|e| e["tid"] == 5 && e["ph"] == "i").count(), 5);
        let thread_names: Vec<&str> = ev
            .iter()
            .filter(|e| e["name"] == "thread_name")
            .map(|e| e["args"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(thread_names.len(), 5);
    }
}
