//! End-to-end: `latlab report` on results of both engines — a short model run written by
//! `latlab run --out`, and a probe result built here as `latlab probe --json` writes it
//! (RunResult plus `streams_summary`).

mod common;

use common::{latlab, path, Scratch};
use latlab_core::{Attribution, Engine, RecordedEvent, RecordedEvents, RunMeta, RunResult, Sample, Stream, TaskSlice};
use std::process::Output;

fn stdout(o: &Output) -> String {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout.clone()).unwrap()
}

/// A 3-second model run of seed 000's script on the stock kernel, as `latlab run --out`
/// writes it; its path.
fn model_result(dir: &Scratch) -> String {
    let exp = dir.file(
        "short.toml",
        "name = \"short\"\ntitle = \"a short run\"\nseed_file = \"000_5c157154d48a42ec.txt\"\nmachine = \"piii-850\"\nworkload = \"seed000-script\"\ntable = \"max-latency\"\n[[run]]\nlabel = \"stock\"\nvariant = \"2.4.18\"\nmax_seconds = 3\n",
    );
    let out = dir.path("out");
    stdout(&latlab(&["run", &exp, "--out", &out]));
    path(&dir.0.join("out").join("short-stock.json"))
}

/// A probe result of two CPUs, worst samples attributed, as `latlab probe timer --json`
/// writes it (with its `streams_summary`).
fn probe_result(dir: &Scratch) -> String {
    let mut r = RunResult::new(RunMeta {
        engine: Engine::Probe,
        machine: "host".into(),
        kernel: "6.1.0-test".into(),
        workload: "timer".into(),
        seed: 0,
        duration_ns: 10_000_000_000,
        version: "0".into(),
        settings: [
            (
                "preemption".to_string(),
                "none (CONFIG_PREEMPT_NONE in the kernel config)".to_string(),
            ),
            ("clocksource".to_string(), "tsc".to_string()),
            ("policy".to_string(), "SCHED_FIFO 95".to_string()),
        ]
        .into(),
    });
    for cpu in 0..2u32 {
        let mut s = Stream::new(format!("cpu{cpu}"), "timer wakeup");
        s.hist.record_n(3_000 + 1_000 * u64::from(cpu), 10_000);
        s.hist.record(250_000);
        s.missed = u64::from(cpu);
        s.worst.push(Sample {
            at_ns: 2_000_000_000,
            latency_ns: 250_000,
            tag: [
                ("cpu".to_string(), cpu.to_string()),
                ("tid".to_string(), (900 + cpu).to_string()),
            ]
            .into(),
            attribution: Attribution {
                handler_ns: 20_000,
                preempt_wait_ns: 200_000,
                wakee_kernel_ns: 2_000,
                tasks: vec![TaskSlice {
                    comm: "kworker/u8:2".into(),
                    pid: 77,
                    ns: 210_000,
                }],
                irqs: vec![("irq 39 virtio2-output.0".into(), 1)],
                ..Default::default()
            },
        });
        if cpu == 1 {
            // What the probe's ftrace instance recorded around cpu1's sample, as printed.
            let event = |ts: u64, comm: &str, pid: u32, flags: &str, event: &str, fields: &str| RecordedEvent {
                ts_ns: ts,
                cpu: 1,
                comm: comm.into(),
                pid,
                flags: flags.into(),
                event: event.into(),
                fields: fields.into(),
            };
            s.recorded.push(RecordedEvents {
                sample_at_ns: 2_000_000_000,
                clock: "mono (CLOCK_MONOTONIC), ns resolution".into(),
                stimulus_ns: 9_121_000_000_000,
                from_ns: 9_120_999_000_000,
                to_ns: 9_121_000_350_000,
                cpus: vec![1],
                left_out: 0,
                events: vec![
                    event(9_121_000_001_000, "kworker/u8:2", 77, "d.h1.", "hrtimer_expire_entry",
                          "hrtimer=00000000bc8869ca function=hrtimer_wakeup now=9121000000900"),
                    event(9_121_000_210_000, "kworker/u8:2", 77, "d..2.", "sched_switch",
                          "prev_comm=kworker/u8:2 prev_pid=77 prev_prio=120 prev_state=R+ ==> next_comm=latlab-cpu1 next_pid=901 next_prio=4"),
                ],
            });
        }
        r.streams.push(s);
    }
    let mut v = serde_json::to_value(&r).unwrap();
    v["streams_summary"] = serde_json::json!([{"name": "cpu0", "count": 10001}]);
    dir.file("probe.json", &serde_json::to_string_pretty(&v).unwrap())
}

#[test]
fn compare_model_with_probe() {
    let dir = Scratch::new("compare");
    let (m, p) = (model_result(&dir), probe_result(&dir));
    let out = stdout(&latlab(&["report", "compare", &m, &p]));
    assert!(
        out.contains("run 1: 2.4.18 (model)") && out.contains("run 2: 6.1.0-test (probe)"),
        "{out}"
    );
    assert!(out.contains("comparing the first stream of each"), "{out}");
    assert!(out.contains("stream realfeel vs cpu0"), "{out}");
    // The probe's system facts under its run line.
    assert!(
        out.contains("run 2: 6.1.0-test (probe)\n    preemption: none (CONFIG_PREEMPT_NONE in the kernel config)\n    clocksource: tsc\n"),
        "{out}"
    );
    let count: Vec<&str> = out
        .lines()
        .find(|l| l.starts_with("count"))
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!(count[2], "10001");
    assert!(count[3].ends_with('x'), "{out}");
    assert!(out.contains("128-256 us"), "the histogram rows: {out}");
    // Two probe results: paired by name, both CPUs.
    let out = stdout(&latlab(&["report", "compare", &p, &p]));
    assert!(out.contains("stream cpu0") && out.contains("stream cpu1"), "{out}");
    assert!(out.contains("6.1.0-test (probe) #2"), "{out}");
}

/// The model's own trace: the 3-second run of [`model_result`] with `--record-events`,
/// exported by `latlab report trace` from the events its recorder kept.
fn recorded_model_trace(dir: &Scratch, name: &str) -> String {
    let exp = dir.file(
        &format!("{name}.toml"),
        &format!("name = \"{name}\"\ntitle = \"a short run\"\nseed_file = \"000_5c157154d48a42ec.txt\"\nmachine = \"piii-850\"\nworkload = \"seed000-script\"\ntable = \"max-latency\"\n[[run]]\nlabel = \"stock\"\nvariant = \"2.4.18\"\nmax_seconds = 3\n"),
    );
    let out = dir.path(&format!("{name}-out"));
    stdout(&latlab(&["run", &exp, "--out", &out, "--record-events"]));
    let result = path(&dir.0.join(format!("{name}-out")).join(format!("{name}-stock.json")));
    stdout(&latlab(&["report", "trace", &result, "--samples", "3"]))
}

#[test]
fn a_model_trace_comes_from_its_recorded_events_in_the_6x_layout() {
    let dir = Scratch::new("recorded-model");
    let ft = recorded_model_trace(&dir, "rec");
    assert!(ft.starts_with("# tracer: nop\n"), "{ft}");
    assert!(ft.contains("model clock since boot"), "{ft}");
    assert!(ft.contains("| / _-=> migrate-disable"), "{ft}");
    let events: Vec<&str> = ft.lines().filter(|l| !l.starts_with('#')).collect();
    assert!(events.len() > 10, "{ft}");
    // Every line: `comm-pid [cpu] FLAGS secs.usecs: event: fields`, FLAGS five columns
    // (irqs-off, need-resched, hardirq/softirq, preempt-depth, migrate-disable).
    for l in &events {
        let (_, rest) = l.split_once(" [").unwrap_or_else(|| panic!("{l}"));
        let flags = rest[5..].split_whitespace().next().unwrap();
        assert_eq!(flags.len(), 5, "{l}");
        let f: Vec<char> = flags.chars().collect();
        assert!(
            matches!(f[0], 'd' | '.') && matches!(f[1], 'N' | 'L' | 'B' | '.'),
            "{l}"
        );
        assert!(
            matches!(f[2], 'h' | 's' | '.') && (f[3] == '.' || f[3].is_ascii_digit()) && f[4] == '.',
            "{l}"
        );
    }
    // Each switch to the reader follows a `sched_waking` of it, and a wakeup in the timer
    // or RTC interrupt is printed with the hardirq flag.
    let switch_in = events
        .iter()
        .position(|l| l.contains(": sched_switch: ") && l.contains("==> next_comm=realfeel"))
        .unwrap_or_else(|| panic!("{ft}"));
    let waking = events[..switch_in]
        .iter()
        .rposition(|l| l.contains(": sched_waking: comm=realfeel"))
        .unwrap_or_else(|| panic!("no sched_waking before the switch to realfeel: {ft}"));
    assert!(events[waking].contains("] d.h"), "{}", events[waking]);
    assert!(events[switch_in].contains("prev_state=R"), "{}", events[switch_in]);
    // Same seed, same trace.
    assert_eq!(recorded_model_trace(&dir, "again").replace("again", "rec"), ft);
}

#[test]
fn plot_csv_and_traces() {
    let dir = Scratch::new("export");
    let (m, p) = (model_result(&dir), probe_result(&dir));
    // Plots: one legend entry per run (the model) or stream (the probe's two CPUs).
    let svg_path = dir.path("dist.svg");
    stdout(&latlab(&["report", "plot", &m, &p, "--out", &svg_path]));
    let svg = std::fs::read_to_string(&svg_path).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("2.4.18 (model)"));
    assert!(svg.contains("6.1.0-test (probe) cpu0") && svg.contains("6.1.0-test (probe) cpu1"));
    let pct = stdout(&latlab(&["report", "plot", &p, "--percentiles", "--stream", "cpu1"]));
    assert!(pct.contains("\np99.9\n") && !pct.contains("cpu0"), "{pct}");

    // CSV: bucket counts add up to the stream's count; one percentile row per stream.
    let csv = stdout(&latlab(&["report", "csv", &p, "--per-octave", "2"]));
    assert_eq!(csv.lines().next(), Some("stream,lo_ns,hi_ns,count"));
    let cpu1: u64 = csv
        .lines()
        .filter(|l| l.starts_with("cpu1,"))
        .map(|l| l.rsplit(',').next().unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(cpu1, 10_001);
    let pcsv = stdout(&latlab(&["report", "csv", &p, "--percentiles"]));
    let rows: Vec<&str> = pcsv.lines().collect();
    assert_eq!(rows.len(), 3);
    assert!(rows[2].starts_with("cpu1,10001,1,4000,"), "{pcsv}");
    assert!(rows[2].ends_with(",250000"), "{pcsv}");

    // ftrace text of the model run: its worst sample, the switch to realfeel in it.
    let ft = stdout(&latlab(&["report", "trace", &m, "--samples", "3"]));
    assert!(ft.starts_with("# tracer: nop\n"), "{ft}");
    assert!(ft.contains("sched_waking: comm=realfeel"), "{ft}");
    assert!(ft.contains("==> next_comm=realfeel"), "{ft}");
    let switches = ft.lines().filter(|l| l.contains(": sched_switch: ")).count();
    assert!(switches >= 3, "{ft}");
    // The probe's: only the events recorded (cpu1's), as recorded; cpu0's sample, which has
    // none, is named and nothing is drawn for it.
    let ft = stdout(&latlab(&["report", "trace", &p]));
    let events: Vec<&str> = ft.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(
        events,
        [
            "    kworker/u8:2-77      [001] d.h1.  9121.000001: hrtimer_expire_entry: hrtimer=00000000bc8869ca function=hrtimer_wakeup now=9121000000900",
            "    kworker/u8:2-77      [001] d..2.  9121.000210: sched_switch: prev_comm=kworker/u8:2 prev_pid=77 prev_prio=120 prev_state=R+ ==> next_comm=latlab-cpu1 next_pid=901 next_prio=4",
        ],
        "{ft}"
    );
    assert!(
        ft.contains("\n# cpu0: 0.250 ms at t=2.000 s: no kernel events were recorded"),
        "{ft}"
    );
    let only0 = latlab(&["report", "trace", &p, "--stream", "cpu0"]);
    let text = stdout(&only0);
    assert!(text.lines().all(|l| l.starts_with('#')), "{text}");
    assert!(String::from_utf8_lossy(&only0.stderr).contains("no kernel events were recorded around these samples"));

    // Chrome JSON: a document with complete events on the CPU track, for the model's
    // worst sample (it has a latency_trace: its functions are instants).
    let out = dir.path("t.json");
    stdout(&latlab(&["report", "trace", &m, "--format", "chrome", "-o", &out]));
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let ev = v["traceEvents"].as_array().unwrap();
    assert!(ev.iter().any(|e| e["ph"] == "X" && e["tid"] == 1));
    assert!(ev
        .iter()
        .any(|e| e["ph"] == "X" && e["tid"] == 4 && e["args"]["attribution"].is_object()));
    assert!(
        ev.iter().any(|e| e["ph"] == "i" && e["tid"] == 5),
        "latency_trace functions"
    );
}

/// How often each element opens and closes in `html`: equal for every element the page
/// emits (`<x ...>` against `</x>`).
fn assert_balanced(html: &str) {
    for el in [
        "html", "head", "body", "section", "table", "thead", "tbody", "tr", "th", "td", "details", "summary", "pre",
        "figure", "svg", "h1", "h2", "h3", "h4", "p", "footer", "style", "title",
    ] {
        let open = html.matches(&format!("<{el}>")).count() + html.matches(&format!("<{el} ")).count();
        let close = html.matches(&format!("</{el}>")).count();
        assert_eq!(open, close, "<{el}> opened {open} times, closed {close}");
    }
}

#[test]
fn html_page_of_both_engines() {
    let dir = Scratch::new("html");
    let (m, p) = (model_result(&dir), probe_result(&dir));
    // A kernel name from a file is text, never markup.
    let mut v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    v["meta"]["kernel"] = "<script>alert(1)</script>".into();
    let hostile = dir.file("hostile.json", &v.to_string());
    let out = dir.path("report.html");
    stdout(&latlab(&["report", "html", &m, &hostile, "--samples", "2", "-o", &out]));
    let html = std::fs::read_to_string(&out).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>\n") && html.trim_end().ends_with("</html>"));
    assert_balanced(&html);
    assert!(!html.contains("<script"), "{html}");
    assert!(
        html.contains("run 2: &lt;script&gt;alert(1)&lt;/script&gt; (probe)"),
        "{html}"
    );
    // The compare table's figures, both plots inline, the model's latency trace.
    assert!(html.contains("<h3>stream realfeel vs cpu0 ("), "{html}");
    assert!(
        html.contains("<tr><th>count</th>") && html.contains("<th>128-256 us</th>"),
        "{html}"
    );
    assert_eq!(html.matches("<figure>\n<svg").count(), 2);
    assert_eq!(html.matches("<pre>preemption latency trace").count(), 1);
    // Two worst samples per run: the probe's attributed ones name their task and interrupt.
    assert_eq!(html.matches("<h4>").count(), 4, "{html}");
    assert!(html.contains("<td>kworker/u8:2/77 0.210 ms</td>"), "{html}");
    assert!(html.contains("<td>irq 39 virtio2-output.0 x1</td>"), "{html}");
    // The system facts in the run's table, not hidden among the settings.
    assert!(
        html.contains("<tr><th>preemption</th><td>none (CONFIG_PREEMPT_NONE in the kernel config)</td></tr>"),
        "{html}"
    );
    assert!(html.contains("<summary>settings (1)</summary>"), "{html}");
    // One result, to stdout; no trace section for a probe result.
    let one = stdout(&latlab(&["report", "html", &p]));
    assert_balanced(&one);
    assert!(one.contains("6.1.0-test (probe)") && !one.contains("latency_trace"));
}

/// cyclictest's own standard output (`cyclictest -q -D 2 -h 100 > out.txt`), its first line
/// `# /dev/cpu_dma_latency set to 0us`, reads as a result.
#[test]
fn report_reads_cyclictest_standard_output() {
    let f = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../latlab-report/tests/fixtures/cyclictest/q-D2-h100.stdout"
    );
    let csv = stdout(&latlab(&["report", "csv", "--percentiles", f]));
    assert!(csv.lines().nth(1).unwrap().starts_with("thread0,1954,"), "{csv}");
}

#[test]
fn bad_input_is_named_and_explained() {
    let dir = Scratch::new("bad");
    let p = probe_result(&dir);
    let fail = |args: &[&str], want: &[&str]| {
        let o = latlab(args);
        let e = String::from_utf8_lossy(&o.stderr).to_string();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {e}");
        assert!(!e.contains("panicked"), "{e}");
        for w in want {
            assert!(e.contains(w), "{args:?}: want {w:?} in {e}");
        }
    };
    let missing = dir.path("missing.json");
    fail(&["report", "csv", &missing], &["cannot read", "missing.json"]);
    let text = dir.file("notes.txt", "hello\n");
    fail(&["report", "compare", &p, &text], &["notes.txt", "not JSON"]);
    fail(&["report", "html", &p, &text], &["notes.txt", "not JSON"]);
    fail(&["report", "html", &missing], &["cannot read", "missing.json"]);
    let rows = dir.file("rows.json", r#"{"experiment": "x", "rows": []}"#);
    fail(
        &["report", "plot", &rows],
        &["rows.json", "not a latlab RunResult", "no `meta`, `streams` key"],
    );
    let broken = dir.file("broken.json", r#"{"meta": {"engine": "sim"}, "streams": []}"#);
    fail(
        &["report", "trace", &broken],
        &["broken.json", "not a latlab RunResult", "missing field"],
    );
    let mut empty: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    empty["streams"] = serde_json::json!([]);
    let empty = dir.file("empty.json", &empty.to_string());
    fail(&["report", "csv", &empty], &["empty.json", "no streams"]);
    fail(
        &["report", "trace", &p, "--stream", "cpu9"],
        &["probe.json", "no stream `cpu9`", "cpu0, cpu1"],
    );
    let mut unattributed: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    for s in unattributed["streams"].as_array_mut().unwrap() {
        s["worst"] = serde_json::json!([]);
    }
    let unattributed = dir.file("noworst.json", &unattributed.to_string());
    fail(
        &["report", "trace", &unattributed],
        &["noworst.json", "no worst samples"],
    );
    // compare needs two results; the usage error comes from the argument parser.
    fail(&["report", "compare", &p], &["FILE"]);
    let zero = dir.file("zero.json", &{
        let mut v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        for s in v["streams"].as_array_mut().unwrap() {
            s["hist"] = serde_json::json!({"count": 0, "min_ns": 0, "max_ns": 0, "sum_ns": 0, "buckets": []});
        }
        v.to_string()
    });
    fail(&["report", "plot", &zero], &["no samples to plot", "zero.json"]);
    // A histogram no recording could make (it once panicked in a clamp in every verb below),
    // and a file without end.
    let inverted = dir.file("inverted.json", &{
        let mut v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        let h = &mut v["streams"][0]["hist"];
        h["min_ns"] = serde_json::json!(h["max_ns"].as_u64().unwrap() + 1);
        v.to_string()
    });
    for verb in [
        &["report", "compare", &p, &inverted][..],
        &["report", "csv", "--percentiles", &inverted],
        &["report", "plot", "--percentiles", &inverted],
        &["report", "html", &inverted],
    ] {
        fail(verb, &["inverted.json", "min_ns", "above max_ns"]);
    }
    fail(
        &["report", "compare", &p, "/dev/zero"],
        &["cannot read /dev/zero", "longer than 268435456 bytes"],
    );
    // A cyclictest histogram whose counts overflow when summed (it once panicked).
    let overflowing = dir.file(
        "overflow.txt",
        "# Histogram\n000000 18446744073709551615\n000001 000001\n# Min Latencies: 00000\n\
         # Avg Latencies: 00000\n# Max Latencies: 00001\n# Histogram Overflows: 00000\n",
    );
    fail(
        &["report", "csv", "--percentiles", &overflowing],
        &[
            "overflow.txt",
            "cyclictest histogram: line 3: the counts add up to more than 18446744073709551615 samples",
        ],
    );
    // Empty streams still compare (zero counts, no ratio to them).
    let out = stdout(&latlab(&["report", "compare", &zero, &p]));
    let count = out.lines().find(|l| l.starts_with("count")).unwrap();
    assert_eq!(
        count.split_whitespace().collect::<Vec<_>>(),
        ["count", "0", "10001", "-"],
        "{out}"
    );
}
