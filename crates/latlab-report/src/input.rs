//! Reading a [`RunResult`] back from the JSON either engine writes: the model's
//! `latlab run/reproduce --out DIR` files and the probe's `latlab probe ... --json FILE`
//! (the same object with an extra top-level `streams_summary` key, which is ignored, as is
//! any other key a later version adds); and from rt-tests' cyclictest, its `--json FILE` and
//! its `-h N` histogram, as a result of engine `cyclictest` with a stream per thread.
//!
//! Pure: the caller reads the file and names it in the error it prints.

use crate::cyclictest;
use latlab_core::{Engine, RunMeta, RunResult, Stream};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt;

/// Why a text is not a usable result.
#[derive(Debug)]
pub enum InputError {
    /// Not JSON at all (with serde's line and column).
    NotJson(String),
    /// JSON, but not a `RunResult` (what is missing or malformed).
    NotRunResult(String),
    /// A `RunResult` with no measurement streams: nothing to report.
    NoStreams,
    /// A cyclictest `--json` or `-h` file that cannot be read as a result, and why.
    Cyclictest(String),
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InputError::NotJson(e) => write!(f, "not JSON: {e}"),
            InputError::NotRunResult(e) => write!(
                f,
                "not a latlab RunResult ({e}); expected the JSON of `latlab run --out`, \
                 `latlab reproduce --out` or `latlab probe ... --json`, or cyclictest's `--json` \
                 or `-h` histogram file"
            ),
            InputError::NoStreams => write!(f, "a RunResult with no streams: nothing to report"),
            InputError::Cyclictest(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for InputError {}

/// Parse one result: a latlab `RunResult`, cyclictest's `--json`, or a cyclictest `-h`
/// histogram (`source`, the file's name, describes the run of a histogram, which names none).
/// Unknown top-level keys (the probe's `streams_summary`) are ignored.
pub fn parse_result(text: &str, source: &str) -> Result<RunResult, InputError> {
    if cyclictest::looks_like_histogram(text) {
        return cyclictest::parse(text)
            .and_then(|cols| from_histogram(&cols, source))
            .map_err(|e| InputError::Cyclictest(format!("cyclictest histogram: {e}")));
    }
    let v: Value = serde_json::from_str(text).map_err(|e| InputError::NotJson(e.to_string()))?;
    let Some(obj) = v.as_object() else {
        return Err(InputError::NotRunResult("the document is not a JSON object".into()));
    };
    if obj.contains_key("thread") && obj.contains_key("num_threads") {
        return from_cyclictest_json(&v).map_err(|e| InputError::Cyclictest(format!("cyclictest --json: {e}")));
    }
    let missing: Vec<&str> = ["meta", "streams"]
        .into_iter()
        .filter(|k| !obj.contains_key(*k))
        .collect();
    if !missing.is_empty() {
        return Err(InputError::NotRunResult(format!("no `{}` key", missing.join("`, `"))));
    }
    let r: RunResult = serde_json::from_value(v).map_err(|e| InputError::NotRunResult(e.to_string()))?;
    if r.streams.is_empty() {
        return Err(InputError::NoStreams);
    }
    Ok(r)
}

/// What a cyclictest stream measures (its default loop: `clock_nanosleep`, absolute).
const CYCLICTEST_MEASURES: &str = "clock_nanosleep(TIMER_ABSTIME) wakeup (cyclictest)";

/// What reports say of a histogram's overflows, whose values the files do not keep.
fn overflow_note(cols: &[cyclictest::Column]) -> Option<String> {
    let n: u64 = cols.iter().map(|c| c.overflow).sum();
    (n > 0).then(|| {
        format!("{n} samples beyond the histogram's last bucket are counted at their thread's maximum (the file keeps no value for them)")
    })
}

/// A cyclictest `-h` histogram as a result: a stream `threadN` per column.
fn from_histogram(cols: &[cyclictest::Column], source: &str) -> Result<RunResult, String> {
    let mut settings = BTreeMap::new();
    settings.insert("source".into(), format!("cyclictest -h histogram {source}"));
    settings.insert("avg".into(), "whole microseconds, truncated (the file's)".into());
    if let Some(n) = overflow_note(cols) {
        settings.insert("overflows".into(), n);
    }
    let mut r = RunResult::new(RunMeta {
        engine: Engine::Cyclictest,
        machine: "not recorded".into(),
        kernel: "not recorded".into(),
        workload: format!("cyclictest histogram {source}"),
        seed: 0,
        duration_ns: 0,
        version: "not recorded".into(),
        settings,
    });
    for (i, c) in cols.iter().enumerate() {
        let mut s = Stream::new(format!("thread{i}"), CYCLICTEST_MEASURES);
        s.hist = c.to_histogram(c.avg_us as f64 * 1000.0);
        r.streams.push(s);
    }
    Ok(r)
}

/// Most buckets of a cyclictest `--json` histogram read: 10 s of 1 us buckets (cyclictest's
/// `-h` takes whole microseconds; a bucket's number names its microsecond, and a sparse map
/// could name any).
const MAX_JSON_BUCKETS: usize = 10_000_000;

/// cyclictest's `--json` (rt-tests 2.x, `file_version` 1) as a result: a stream per thread,
/// `cpuN` where the thread was pinned to CPU N, else `threadN`.
fn from_cyclictest_json(v: &Value) -> Result<RunResult, String> {
    let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("not recorded").to_string();
    if v.get("resolution_in_ns").and_then(Value::as_u64).unwrap_or(0) != 0 {
        return Err("`resolution_in_ns` is set (cyclictest -N): only microsecond results are read".into());
    }
    let threads = v["thread"].as_object().ok_or("`thread` is not an object of threads")?;
    let mut ids: Vec<(u64, &Value)> = threads
        .iter()
        .map(|(k, t)| {
            k.parse()
                .map(|n| (n, t))
                .map_err(|_| format!("thread `{k}`: not a thread number"))
        })
        .collect::<Result<_, _>>()?;
    ids.sort_by_key(|&(n, _)| n);
    let mut cols = Vec::new();
    let mut names = Vec::new();
    let mut means = Vec::new();
    // Every thread's cycles, summed: reports add the threads' samples in 64 bits.
    let mut total = 0u64;
    for &(n, t) in &ids {
        let num = |k: &str| {
            t.get(k)
                .and_then(Value::as_u64)
                .ok_or_else(|| format!("thread {n}: `{k}` missing or not a whole number"))
        };
        let (cycles, min, max) = (num("cycles")?, num("min")?, num("max")?);
        total = total.checked_add(cycles).ok_or_else(|| {
            format!(
                "thread {n}: the threads' cycles add up to more than {} samples",
                u64::MAX
            )
        })?;
        if cycles > 0 && min > max {
            return Err(format!("thread {n}: `max` {max} is below `min` {min}"));
        }
        if let Some(us) = [min, max].into_iter().find(|&us| us > cyclictest::MAX_LATENCY_US) {
            return Err(format!(
                "thread {n}: {us} us is beyond the longest latency read, {} us (2^64 ns)",
                cyclictest::MAX_LATENCY_US
            ));
        }
        let avg = t
            .get("avg")
            .and_then(Value::as_f64)
            .ok_or_else(|| format!("thread {n}: `avg` missing or not a number"))?;
        let hist = t
            .get("histogram")
            .and_then(Value::as_object)
            .ok_or_else(|| format!("thread {n}: no `histogram` object"))?;
        if hist.is_empty() && cycles > 0 {
            return Err(format!(
                "thread {n}: an empty histogram for {cycles} cycles; cyclictest keeps the distribution only with -h/--histogram N"
            ));
        }
        let mut buckets = Vec::new();
        for (us, count) in hist {
            let us: usize = us
                .parse()
                .map_err(|_| format!("thread {n}: histogram bucket `{us}` is not a number of microseconds"))?;
            if us >= MAX_JSON_BUCKETS {
                return Err(format!(
                    "thread {n}: histogram bucket {us} is beyond the {MAX_JSON_BUCKETS} us (10 s) of buckets read"
                ));
            }
            let count = count
                .as_u64()
                .ok_or_else(|| format!("thread {n}: histogram bucket {us} has no whole count"))?;
            if buckets.len() <= us {
                buckets.resize(us + 1, 0);
            }
            buckets[us] = count;
        }
        let in_range = buckets.iter().try_fold(0u64, |a, &b| a.checked_add(b));
        let overflow = in_range.and_then(|i| cycles.checked_sub(i)).ok_or_else(|| {
            let held = in_range.map_or(format!("more than {}", u64::MAX), |i| i.to_string());
            format!("thread {n}: the histogram holds {held} samples, more than its {cycles} cycles")
        })?;
        cols.push(cyclictest::Column {
            buckets,
            overflow,
            overflow_cycles: Vec::new(),
            min_us: min,
            avg_us: avg as u64,
            max_us: max,
        });
        names.push(match t.get("cpu").and_then(Value::as_i64) {
            Some(cpu) if cpu >= 0 => format!("cpu{cpu}"),
            _ => format!("thread{n}"),
        });
        means.push(avg * 1000.0);
    }
    // Two threads on one CPU (-t 4 on 2 CPUs) are told apart by their number.
    let names: Vec<String> = names
        .iter()
        .zip(&ids)
        .map(|(name, (n, _))| match names.iter().filter(|x| *x == name).count() {
            1 => name.clone(),
            _ => format!("thread{n}"),
        })
        .collect();
    let sys = &v["sysinfo"];
    let mut settings = BTreeMap::new();
    settings.insert("start_time".into(), text(v, "start_time"));
    settings.insert("end_time".into(), text(v, "end_time"));
    settings.insert(
        "preemption".into(),
        format!("not recorded (cyclictest's uname -v: {})", text(sys, "version")),
    );
    if let Some(n) = overflow_note(&cols) {
        settings.insert("overflows".into(), n);
    }
    let duration_ns = match (rfc2822_secs(&text(v, "start_time")), rfc2822_secs(&text(v, "end_time"))) {
        (Some(a), Some(b)) if b >= a => (b - a) as u64 * 1_000_000_000,
        _ => 0,
    };
    let mut r = RunResult::new(RunMeta {
        engine: Engine::Cyclictest,
        machine: format!("{} ({})", text(sys, "nodename"), text(sys, "machine")),
        kernel: text(sys, "release"),
        workload: text(v, "cmdline:"),
        seed: 0,
        duration_ns,
        version: text(v, "rt_test_version:"),
        settings,
    });
    for ((c, name), mean) in cols.iter().zip(names).zip(means) {
        let mut s = Stream::new(name, CYCLICTEST_MEASURES);
        s.hist = c.to_histogram(mean);
        r.streams.push(s);
    }
    Ok(r)
}

/// Seconds since the epoch of cyclictest's time stamps (`Wed, 25 Nov 2026 17:10:33 +0000`,
/// RFC 2822 as strftime's `%a, %d %b %Y %T %z`); `None` if the text is not one.
fn rfc2822_secs(t: &str) -> Option<i64> {
    let f: Vec<&str> = t.split_whitespace().collect();
    let [_, day, mon, year, hms, zone] = f[..] else {
        return None;
    };
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let m = MONTHS.iter().position(|&x| x == mon)? as i64 + 1;
    let (d, y): (i64, i64) = (day.parse().ok()?, year.parse().ok()?);
    let mut hms = hms.split(':').map(|x| x.parse::<i64>());
    let (h, mi, s) = (hms.next()?.ok()?, hms.next()?.ok()?, hms.next()?.ok()?);
    let z: i64 = zone.parse().ok()?;
    let offset = z.signum() * ((z.abs() / 100) * 3600 + (z.abs() % 100) * 60);
    // Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar (Howard Hinnant's
    // days_from_civil).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86_400 + h * 3600 + mi * 60 + s - offset)
}

/// How reports name an engine: `model`, `probe` or `cyclictest`.
pub fn engine_name(e: Engine) -> &'static str {
    match e {
        Engine::Sim => "model",
        Engine::Probe => "probe",
        Engine::Cyclictest => "cyclictest",
    }
}

/// How a run is named in tables, plot legends and trace tracks: `kernel (engine)`, and
/// `kernel (probe; load dd:1G died)` when a load ended before the measurement did.
pub fn label(r: &RunResult) -> String {
    let dead: Vec<&str> = r.dead_loads().map(|(n, _)| n).collect();
    let died = match dead.len() {
        0 => String::new(),
        1 => format!("; load {} died", dead[0]),
        _ => format!("; loads {} died", dead.join(", ")),
    };
    format!("{} ({}{died})", r.meta.kernel, engine_name(r.meta.engine))
}

/// Labels for several runs. Runs that would read the same (`kernel (engine)`) are told
/// apart by their workload (`6.1.0 (probe): timer under dd:64M`), and those still alike by
/// a `#n` suffix, their position on the command line.
pub fn labels(runs: &[RunResult]) -> Vec<String> {
    let dedup = |base: &[String], suffix: &dyn Fn(usize) -> String| -> Vec<String> {
        base.iter()
            .enumerate()
            .map(|(i, l)| match base.iter().filter(|b| *b == l).count() {
                1 => l.clone(),
                _ => format!("{l}{}", suffix(i)),
            })
            .collect()
    };
    let base: Vec<String> = runs.iter().map(label).collect();
    // The workload names a run only among alike runs whose workloads differ.
    let workload_tells = |i: usize| {
        let alike = |j: &usize| base[*j] == base[i];
        (0..runs.len())
            .filter(alike)
            .any(|j| runs[j].meta.workload != runs[i].meta.workload)
    };
    let named = dedup(&base, &|i| match workload_tells(i) {
        true => format!(": {}", runs[i].meta.workload),
        false => String::new(),
    });
    dedup(&named, &|i| format!(" #{}", i + 1))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use latlab_core::{RunMeta, Stream};

    /// A result with one stream `name` holding `values` (ns), for the crate's tests.
    pub(crate) fn result(engine: Engine, kernel: &str, name: &str, values: &[u64]) -> RunResult {
        let mut r = RunResult::new(RunMeta {
            engine,
            machine: "m".into(),
            kernel: kernel.into(),
            workload: "w".into(),
            seed: 1,
            duration_ns: 1_000_000_000,
            version: "0".into(),
            settings: Default::default(),
        });
        let mut s = Stream::new(name, "wakeup");
        for &v in values {
            s.hist.record(v);
        }
        r.streams.push(s);
        r
    }

    #[test]
    fn accepts_the_probe_json_with_streams_summary() {
        let r = result(Engine::Probe, "6.1.0", "cpu0", &[1_000, 2_000]);
        let mut v = serde_json::to_value(&r).unwrap();
        v.as_object_mut()
            .unwrap()
            .insert("streams_summary".into(), serde_json::json!([{"name": "cpu0"}]));
        let back = parse_result(&v.to_string(), "r.json").unwrap();
        assert_eq!(back.streams[0].hist.count(), 2);
        assert_eq!(label(&back), "6.1.0 (probe)");
    }

    #[test]
    fn names_what_is_wrong() {
        assert!(matches!(parse_result("not json", "x"), Err(InputError::NotJson(_))));
        let e = parse_result("[1, 2]", "x").unwrap_err().to_string();
        assert!(e.contains("not a JSON object"), "{e}");
        let e = parse_result(r#"{"rows": []}"#, "x").unwrap_err().to_string();
        assert!(e.contains("no `meta`, `streams` key"), "{e}");
        let e = parse_result(r#"{"meta": 1, "streams": []}"#, "x")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("not a latlab RunResult"), "{e}");
        let mut r = result(Engine::Sim, "2.4.18", "realfeel", &[1]);
        r.streams.clear();
        let e = parse_result(&serde_json::to_string(&r).unwrap(), "x").unwrap_err();
        assert!(matches!(e, InputError::NoStreams));
    }

    /// cyclictest 2.40's `--json` of a 2-thread run with `-h 22`, histograms shortened.
    const CYCLICTEST_JSON: &str = r##"{
  "file_version": 1,
  "cmdline:": "cyclictest -m -p 95 -i 1000 -l 300 -t 2 -a -h 22 -q --json=c2.json",
  "rt_test_version:": "2.40",
  "start_time": "Wed, 25 Nov 2026 17:10:33 +0000",
  "end_time": "Wed, 25 Nov 2026 17:10:34 +0000",
  "return_code": 0,
  "sysinfo": {"sysname": "Linux", "nodename": "vm", "release": "6.18.44-fc-v669",
              "version": "#1 SMP PREEMPT_DYNAMIC @0", "machine": "x86_64", "realtime": 0},
  "num_threads": 2,
  "resolution_in_ns": 0,
  "thread": {
    "0": {"histogram": {"16": 1, "20": 10, "21": 6}, "cycles": 300, "min": 16, "max": 1721,
          "avg": 38.00, "cpu": 0, "node": 0},
    "1": {"histogram": {"14": 1, "15": 1}, "cycles": 300, "min": 14, "max": 1895,
          "avg": 45.75, "cpu": 1, "node": 0}
  }
}"##;

    #[test]
    fn reads_cyclictest_json_as_a_stream_per_cpu() {
        let r = parse_result(CYCLICTEST_JSON, "c.json").unwrap();
        assert_eq!(r.meta.engine, Engine::Cyclictest);
        assert_eq!(label(&r), "6.18.44-fc-v669 (cyclictest)");
        assert_eq!(r.meta.duration_ns, 1_000_000_000);
        assert_eq!(
            r.meta.workload,
            "cyclictest -m -p 95 -i 1000 -l 300 -t 2 -a -h 22 -q --json=c2.json"
        );
        let names: Vec<&str> = r.streams.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["cpu0", "cpu1"]);
        let h = &r.streams[1].hist;
        assert_eq!((h.count(), h.min(), h.max()), (300, 14_000, 1_895_000));
        assert_eq!(h.mean(), 45_750.0);
        assert_eq!(h.count_between(15_000, 16_000), 1);
        assert_eq!(h.count_between(1_000_000, u64::MAX), 298);
        assert!(
            r.meta.settings["overflows"].starts_with("581 samples beyond"),
            "{:?}",
            r.meta.settings
        );
    }

    #[test]
    fn cyclictest_json_errors_say_what_is_missing() {
        let mut v: Value = serde_json::from_str(CYCLICTEST_JSON).unwrap();
        v["thread"]["1"]["histogram"] = serde_json::json!({});
        let e = parse_result(&v.to_string(), "c.json").unwrap_err().to_string();
        assert!(
            e.contains("thread 1: an empty histogram for 300 cycles; cyclictest keeps the distribution only with -h"),
            "{e}"
        );
        v["thread"]["1"]["histogram"] = serde_json::json!({"x1": 3});
        let e = parse_result(&v.to_string(), "c.json").unwrap_err().to_string();
        assert!(e.contains("histogram bucket `x1` is not a number"), "{e}");
        v["thread"]["1"]["histogram"] = serde_json::json!({"1": 301});
        let e = parse_result(&v.to_string(), "c.json").unwrap_err().to_string();
        assert!(e.contains("holds 301 samples, more than its 300 cycles"), "{e}");
        v["thread"]["1"]["histogram"] = serde_json::json!({"1": 3});
        v["thread"]["0"].as_object_mut().unwrap().remove("max");
        let e = parse_result(&v.to_string(), "c.json").unwrap_err().to_string();
        assert!(e.contains("thread 0: `max` missing"), "{e}");
    }

    #[test]
    fn reads_a_cyclictest_histogram_as_a_stream_per_thread() {
        let text = "# Histogram\n000000 000000\t000001\n000001 000002\t000000\n# Total: 000000002 000000001\n\
                    # Min Latencies: 00001 00000\n# Avg Latencies: 00004 00000\n# Max Latencies: 00009 00000\n\
                    # Histogram Overflows: 00001 00000\n";
        let r = parse_result(text, "h.txt").unwrap();
        assert_eq!(r.meta.workload, "cyclictest histogram h.txt");
        assert_eq!(r.streams.len(), 2);
        assert_eq!(r.streams[0].name, "thread0");
        let h = &r.streams[0].hist;
        assert_eq!((h.count(), h.min(), h.max()), (3, 1_000, 9_000));
        let e = parse_result("# Histogram\n000000 1\n000000 1\n", "h.txt")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("cyclictest histogram: line 3: expected the row of bucket 1"),
            "{e}"
        );
    }

    /// cyclictest 2.40's standard output and `--json` of one run (`cyclictest -q -D 2 -h 100
    /// -t 2 -a --json=...` on a busy 2-vCPU guest), and the standard output of `cyclictest -q
    /// -D 2 -h 100`, each beginning with `# /dev/cpu_dma_latency set to 0us`.
    const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/cyclictest/");

    fn fixture(name: &str) -> String {
        std::fs::read_to_string(format!("{FIXTURES}{name}")).unwrap()
    }

    #[test]
    fn reads_cyclictest_standard_output_as_its_json_of_the_same_run() {
        let one = parse_result(&fixture("q-D2-h100.stdout"), "out.txt").unwrap();
        let h = &one.streams[0].hist;
        assert_eq!(
            (one.streams.len(), h.count(), h.min(), h.max()),
            (1, 1954, 28_000, 7_261_000)
        );
        let text = fixture("q-D2-h100-t2-a.stdout");
        assert!(text.starts_with("# /dev/cpu_dma_latency set to 0us\n"));
        let stdout = parse_result(&text, "out.txt").unwrap();
        let json = parse_result(&fixture("q-D2-h100-t2-a.json"), "c.json").unwrap();
        assert_eq!(stdout.streams.len(), 2);
        for (a, b) in stdout.streams.iter().zip(&json.streams) {
            let (x, y) = (&a.hist, &b.hist);
            assert_eq!(
                (x.count(), x.min(), x.max()),
                (y.count(), y.min(), y.max()),
                "{}",
                b.name
            );
            for us in 0..100 {
                let (lo, hi) = (us * 1000, us * 1000 + 1000);
                assert_eq!(x.count_between(lo, hi), y.count_between(lo, hi), "{} {us} us", b.name);
            }
        }
        assert_eq!(json.streams[0].hist.count(), 1952);
        // Without -q, cyclictest prints status lines (terminal escapes included) first.
        let chatty = format!(
            "policy: other/other: loadavg: 4.61 2.23 1.02 8/137 10758\n\nT: 0 (10758) P: 0 I:1000 C: 9              Min: 70 Act: 70 Avg: 81 Max: 96\n\u{1b}[3A{text}"
        );
        let read = parse_result(&chatty, "out.txt").unwrap();
        let hists = |r: &RunResult| r.streams.iter().map(|s| s.hist.summary()).collect::<Vec<_>>();
        assert_eq!(hists(&read), hists(&stdout));
    }

    #[test]
    fn counts_that_overflow_when_summed_are_refused_with_the_line() {
        let hist = |a: u64, b: u64, over: u64| {
            format!(
                "# Histogram\n000000 {a:06}\t000000\n000001 000000\t{b:06}\n# Total: 0 0\n\
                 # Min Latencies: 00000 00001\n# Avg Latencies: 00000 00001\n# Max Latencies: 00001 00001\n\
                 # Histogram Overflows: {over:05} 00000\n"
            )
        };
        let max = u64::MAX;
        let e = parse_result(&hist(max, 1, 0), "h.txt").unwrap_err().to_string();
        assert_eq!(
            e,
            "cyclictest histogram: line 3: the counts add up to more than 18446744073709551615 samples"
        );
        let e = parse_result(&hist(max - 1, 1, 1), "h.txt").unwrap_err().to_string();
        assert_eq!(
            e,
            "cyclictest histogram: line 8: the counts add up to more than 18446744073709551615 samples"
        );
        // Up to the limit, every report's arithmetic holds.
        let r = parse_result(&hist(max - 2, 1, 1), "h.txt").unwrap();
        assert_eq!(r.streams[0].hist.count(), max - 1);
        let e = parse_result(
            &hist(1, 1, 0).replace("Max Latencies: 00001", "Max Latencies: 99999999999999999"),
            "h",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("line 7: 99999999999999999 us is beyond the longest latency read"),
            "{e}"
        );
        let mut v: Value = serde_json::from_str(CYCLICTEST_JSON).unwrap();
        v["thread"]["1"]["cycles"] = serde_json::json!(max);
        let e = parse_result(&v.to_string(), "c.json").unwrap_err().to_string();
        assert_eq!(
            e,
            "cyclictest --json: thread 1: the threads' cycles add up to more than 18446744073709551615 samples"
        );
        v["thread"]["1"]["cycles"] = serde_json::json!(300);
        v["thread"]["1"]["max"] = serde_json::json!(13);
        let e = parse_result(&v.to_string(), "c.json").unwrap_err().to_string();
        assert_eq!(e, "cyclictest --json: thread 1: `max` 13 is below `min` 14");
        v["thread"]["1"]["max"] = serde_json::json!(1895);
        v["thread"]["1"]["histogram"] = serde_json::json!({"1": max, "2": 1});
        let e = parse_result(&v.to_string(), "c.json").unwrap_err().to_string();
        assert!(
            e.contains("thread 1: the histogram holds more than 18446744073709551615 samples"),
            "{e}"
        );
        v["thread"]["1"]["histogram"] = serde_json::json!({"18446744073709551615": 1});
        let e = parse_result(&v.to_string(), "c.json").unwrap_err().to_string();
        assert!(
            e.contains("bucket 18446744073709551615 is beyond the 10000000 us (10 s)"),
            "{e}"
        );
    }

    #[test]
    fn rfc2822_time_stamps() {
        assert_eq!(rfc2822_secs("Thu, 01 Jan 1970 00:00:00 +0000"), Some(0));
        assert_eq!(rfc2822_secs("Wed, 25 Nov 2026 17:10:33 +0000"), Some(1_795_626_633));
        assert_eq!(rfc2822_secs("Wed, 25 Nov 2026 18:10:33 +0100"), Some(1_795_626_633));
        assert_eq!(rfc2822_secs("yesterday"), None);
    }

    #[test]
    fn a_dead_load_is_in_the_label() {
        let mut r = result(Engine::Probe, "6.1", "cpu0", &[1]);
        let fate = |name: &str, died: bool| latlab_core::LoadFate {
            name: name.into(),
            died: died.then(|| latlab_core::LoadDeath {
                how: "exited with status 1".into(),
                after_ns: 1,
            }),
        };
        r.loads = vec![fate("tar", false)];
        assert_eq!(label(&r), "6.1 (probe)");
        r.loads.push(fate("dd:1G", true));
        assert_eq!(label(&r), "6.1 (probe; load dd:1G died)");
        r.loads.push(fate("sync", true));
        assert_eq!(label(&r), "6.1 (probe; loads dd:1G, sync died)");
    }

    #[test]
    fn labels_are_unique() {
        let a = result(Engine::Sim, "2.4.18", "realfeel", &[1]);
        let b = result(Engine::Probe, "6.1", "cpu0", &[1]);
        assert_eq!(
            labels(&[a.clone(), b, a.clone()]),
            ["2.4.18 (model) #1", "6.1 (probe)", "2.4.18 (model) #3"]
        );
        // Runs of one kernel under different loads are named by their workload.
        let load = |w: &str| {
            let mut r = result(Engine::Probe, "6.1", "cpu0", &[1]);
            r.meta.workload = w.into();
            r
        };
        assert_eq!(
            labels(&[
                load("timer"),
                load("timer under dd:64M"),
                load("timer under make:2"),
                load("timer")
            ]),
            [
                "6.1 (probe): timer #1",
                "6.1 (probe): timer under dd:64M",
                "6.1 (probe): timer under make:2",
                "6.1 (probe): timer #4"
            ]
        );
    }
}
