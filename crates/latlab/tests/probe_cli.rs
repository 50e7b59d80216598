//! End-to-end: `latlab probe` on this machine, as root and as an unprivileged user (through
//! `setpriv`), with and without loads. Every run is short (about a second of measuring) and
//! asserts real content: samples counted, min <= p50 <= p99 <= max, the load did its work,
//! nothing left behind.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Mutex, RwLock};
use std::time::Duration;

mod common;

use common::{as_nobody, is_root};

/// Who runs the probe in a test.
#[derive(Clone, Copy, Debug, PartialEq)]
enum As {
    Invoker,
    /// uid/gid 65534 with no capabilities (only possible when the tests run as root).
    Nobody,
}

fn command(who: As, args: &[&str]) -> Command {
    let exe = env!("CARGO_BIN_EXE_latlab");
    let mut c = match who {
        As::Invoker => Command::new(exe),
        As::Nobody => as_nobody(exe),
    };
    c.args(args);
    c
}

/// Every probe sweeps what dead probes left at its start: every probe a test runs holds this
/// for reading, and the tests that kill a probe or check that a probe sweeps a leftover take
/// it for writing, so no other probe runs meanwhile.
static DMA_LATENCY: RwLock<()> = RwLock::new(());

fn latlab(who: As, args: &[&str]) -> Output {
    let _shared = DMA_LATENCY.read().unwrap_or_else(|e| e.into_inner());
    command(who, args).output().expect("latlab runs")
}

/// The users to test as: the invoker, and nobody when we can switch to it.
fn users() -> Vec<As> {
    if !is_root() {
        eprintln!("skip: not root, so the probe is tested only as the invoking (unprivileged) user");
        return vec![As::Invoker];
    }
    if Command::new("setpriv").arg("--version").output().is_err() {
        eprintln!("skip: setpriv (util-linux) missing, so the unprivileged run is not tested");
        return vec![As::Invoker];
    }
    vec![As::Invoker, As::Nobody]
}

/// A scratch directory anyone may write (the unprivileged run writes its JSON there).
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("latlab-probe-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::set_permissions(&d, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    d
}

fn json(p: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_str(&text).unwrap()
}

/// Every stream has samples and ordered percentiles; returns the total count.
fn check_streams(v: &serde_json::Value) -> u64 {
    let ss = v["streams_summary"].as_array().expect("streams_summary");
    assert!(!ss.is_empty());
    let mut total = 0;
    for s in ss {
        let f = |k: &str| s[k].as_f64().unwrap_or_else(|| panic!("{k} in {s}"));
        assert!(s["name"].is_string());
        assert!(f("count") > 0.0, "{s}");
        assert!(
            f("min_us") <= f("p50_us") && f("p50_us") <= f("p99_us") && f("p99_us") <= f("max_us"),
            "{s}"
        );
        total += f("count") as u64;
    }
    total
}

fn ok(out: &Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "exit {:?}: {err}", out.status);
    err
}

/// `args` with `{dir}` replaced by `d`, then `--json d/r.json`.
fn args_in(d: &Path, args: &[&str]) -> Vec<String> {
    let dir = d.to_str().unwrap();
    let mut v: Vec<String> = args.iter().map(|a| a.replace("{dir}", dir)).collect();
    v.extend(["--json".to_string(), d.join("r.json").to_str().unwrap().to_string()]);
    v
}

/// A finished probe run in its own scratch directory.
struct Run {
    out: Output,
    v: serde_json::Value,
    dir: PathBuf,
}

/// `latlab ARGS --json` as `who` in a fresh scratch directory (`{dir}` in ARGS names it).
fn probe(who: As, name: &str, args: &[&str]) -> Run {
    let dir = scratch(name);
    let a = args_in(&dir, args);
    let out = latlab(who, &a.iter().map(String::as_str).collect::<Vec<_>>());
    let v = match out.status.code() {
        Some(0 | 1) => json(&dir.join("r.json")),
        _ => panic!("exit {:?}: {}", out.status, String::from_utf8_lossy(&out.stderr)),
    };
    Run { out, v, dir }
}

/// Assert that only one file (the JSON result, the machine file) is left in `d`, then remove it.
fn only_one_left(d: &Path, what: &str) {
    let left: Vec<_> = std::fs::read_dir(d).unwrap().flatten().map(|e| e.file_name()).collect();
    assert_eq!(left.len(), 1, "{what}: scratch left behind: {left:?}");
    std::fs::remove_dir_all(d).unwrap();
}

#[test]
fn timer_runs_as_root_and_as_nobody() {
    for who in users() {
        let Run { out, v, dir: d } = probe(
            who,
            &format!("timer-{who:?}"),
            &[
                "probe",
                "timer",
                "--duration",
                "1s",
                "--histfile",
                "{dir}/h.txt",
                "--hist-buckets",
                "30",
            ],
        );
        let err = ok(&out);
        let h = d.join("h.txt");
        let n = check_streams(&v);
        // 1 ms period for 1 s on every CPU: each period is a sample or, when a late wakeup
        // passed it (a loaded box, SCHED_OTHER as nobody), a missed period (as cyclictest).
        let streams = v["streams"].as_array().unwrap();
        let cpus = streams.len() as u64;
        let missed: u64 = streams.iter().map(|s| s["missed"].as_u64().unwrap()).sum();
        assert!(
            n + missed >= 900 * cpus,
            "{n} samples and {missed} missed periods on {cpus} CPUs"
        );
        assert!(n >= 100 * cpus, "{n} samples on {cpus} CPUs");
        let fifo = v["meta"]["settings"]["sched_fifo_threads"]
            .as_str()
            .unwrap()
            .to_string();
        let policy = v["meta"]["settings"]["policy"].as_str().unwrap();
        if who == As::Nobody {
            assert!(err.contains("could not get SCHED_FIFO"), "{err}");
            assert!(fifo.starts_with("0/"), "{fifo}");
            assert!(
                policy.starts_with("SCHED_OTHER") && policy.contains("refused"),
                "{policy}"
            );
        } else if is_root() {
            assert_eq!(fifo, format!("{cpus}/{cpus}"));
            assert_eq!(policy, "SCHED_FIFO 95");
            assert_eq!(v["meta"]["settings"]["mlockall"], "current+future");
        }
        let hist = std::fs::read_to_string(&h).unwrap();
        check_histfile(&hist, streams);
        std::fs::remove_dir_all(d).unwrap();
    }
}

/// The numbers after `label` on the histfile's line that starts with it.
fn hist_line(hist: &str, label: &str) -> Vec<u64> {
    let l = hist
        .lines()
        .find(|l| l.starts_with(label))
        .unwrap_or_else(|| panic!("{label} in {hist}"));
    l[label.len()..]
        .split('#')
        .next()
        .unwrap()
        .split_whitespace()
        .map(|x| x.parse().unwrap())
        .collect()
}

/// A `--histfile` of 30 buckets in cyclictest's layout, holding every sample of `streams`:
/// `# Total` counts the rows (overflows not), the overflow cycle numbers are listed up to
/// 30 per thread with `# N others` for the rest, and the file ends in an empty line.
fn check_histfile(hist: &str, streams: &[serde_json::Value]) {
    assert!(hist.starts_with("# Histogram\n000000 "), "{}", &hist[..40]);
    let rows: Vec<Vec<u64>> = hist
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| l.split_whitespace().map(|x| x.parse().unwrap()).collect())
        .collect();
    assert_eq!(rows.len(), 30);
    let (total, over) = (hist_line(hist, "# Total:"), hist_line(hist, "# Histogram Overflows:"));
    assert!(hist.contains("\n# Histogram Overflow at cycle number:\n"), "{hist}");
    for (j, s) in streams.iter().enumerate() {
        let in_rows: u64 = rows.iter().map(|r| r[j + 1]).sum();
        assert_eq!(total[j], in_rows, "column {j}: # Total counts the rows");
        assert_eq!(total[j] + over[j], s["hist"]["count"].as_u64().unwrap(), "column {j}");
        let cycles = hist_line(hist, &format!("# Thread {j}:"));
        assert_eq!(cycles.len() as u64, over[j].min(30), "{hist}");
        assert!(cycles.windows(2).all(|w| w[0] < w[1]), "{cycles:?}");
        let thread = hist.lines().find(|l| l.starts_with(&format!("# Thread {j}:"))).unwrap();
        assert_eq!(
            thread.ends_with(&format!("# {:05} others", over[j].saturating_sub(30))),
            over[j] > 30,
            "{thread}"
        );
    }
    // cyclictest's average: the truncated latencies' sum divided by the count, truncated.
    let avg = hist_line(hist, "# Avg Latencies:");
    let max = hist_line(hist, "# Max Latencies:");
    for (j, s) in streams.iter().enumerate() {
        let mean = s["hist"]["sum_ns"].as_f64().unwrap() / s["hist"]["count"].as_f64().unwrap() / 1000.0;
        assert!(
            avg[j] as f64 <= mean && mean < avg[j] as f64 + 2.0,
            "{} vs {mean}",
            avg[j]
        );
        assert_eq!(max[j], s["hist"]["max_ns"].as_u64().unwrap() / 1000);
    }
    assert!(hist.ends_with("\n\n"));
}

#[test]
fn json_dash_writes_the_result_to_stdout_alone() {
    for who in users() {
        let out = latlab(who, &["probe", "timer", "--loops", "50", "--cpus", "0", "--json", "-"]);
        let err = ok(&out);
        let v: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)));
        assert_eq!(check_streams(&v), 50);
        // The table went to stderr, and no file named `-` was made.
        assert!(err.contains("stream ") && err.contains("cpu0 "), "{err}");
        assert!(!Path::new("-").exists());
    }
    let out = latlab(
        As::Invoker,
        &["probe", "timer", "--loops", "5", "--json", "-", "--histfile", "-"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--json and --histfile all ask for standard output"));
}

#[test]
fn cpus_chooses_the_measured_cpus() {
    let Run { out, v, dir } = probe(
        As::Invoker,
        "cpus",
        &["probe", "timer", "--loops", "100", "--cpus", "0"],
    );
    ok(&out);
    assert_eq!(check_streams(&v), 100);
    let names: Vec<&str> = v["streams"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["cpu0"]);
    std::fs::remove_dir_all(dir).unwrap();
    // A posix-timer stream on one CPU carries the model's name, and the CPU in what it measures.
    let Run { out, v, dir } = probe(
        As::Invoker,
        "cpus-posix",
        &[
            "probe",
            "posix-timer",
            "--notify",
            "thread",
            "--loops",
            "50",
            "--cpus",
            "0",
        ],
    );
    ok(&out);
    assert_eq!(v["streams"].as_array().unwrap().len(), 1);
    assert_eq!(v["streams"][0]["name"], "posix_timer_thread");
    assert_eq!(
        v["streams"][0]["measures"],
        "timer_create(SIGEV_THREAD) expiry to notification on CPU 0"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn posix_timer_signal_and_thread() {
    for who in users() {
        for notify in ["signal", "thread"] {
            let Run { out, v, dir: d } = probe(
                who,
                &format!("posix-{notify}-{who:?}"),
                &["probe", "posix-timer", "--notify", notify, "--loops", "300"],
            );
            ok(&out);
            check_streams(&v);
            // Named as the model names the stream; with several CPUs, `.cpuN` after it.
            let names: Vec<&str> = v["streams"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s["name"].as_str().unwrap())
                .collect();
            let base = format!("posix_timer_{notify}");
            let want: Vec<String> = match names.len() {
                1 => vec![base.clone()],
                _ => v["meta"]["settings"]["cpus"]
                    .as_str()
                    .unwrap()
                    .trim_matches(['[', ']'])
                    .split(", ")
                    .map(|c| format!("{base}.cpu{c}"))
                    .collect(),
            };
            assert_eq!(names, want);
            for s in v["streams_summary"].as_array().unwrap() {
                // Every expiry was either notified or counted as missed.
                assert!(s["count"].as_u64().unwrap() >= 300, "{s}");
            }
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(text.contains("missed timer events:"), "{text}");
            assert!(text.contains(if notify == "thread" {
                "SIGEV_THREAD"
            } else {
                "SIGEV_SIGNAL"
            }));
            std::fs::remove_dir_all(d).unwrap();
        }
    }
}

/// A model result for `report compare`: the probe's JSON as the model would write it (engine
/// `sim`, one stream named `name`).
fn as_model(probe: &serde_json::Value, name: &str) -> serde_json::Value {
    let mut m = probe.clone();
    m["meta"]["engine"] = "sim".into();
    m.as_object_mut().unwrap().remove("streams_summary");
    let mut s = m["streams"][0].clone();
    s["name"] = name.into();
    m["streams"] = serde_json::json!([s]);
    m
}

#[test]
fn report_compare_pairs_a_model_stream_with_the_probe_streams_of_its_name() {
    let Run { out, v, dir } = probe(
        As::Invoker,
        "compare-posix",
        &["probe", "posix-timer", "--notify", "signal", "--loops", "50"],
    );
    ok(&out);
    let model = dir.join("model.json");
    std::fs::write(&model, as_model(&v, "posix_timer_signal").to_string()).unwrap();
    // Against the model's other stream kind and a timer run's names there is no pairing.
    let other = dir.join("other.json");
    std::fs::write(&other, as_model(&v, "posix_timer_thread").to_string()).unwrap();
    let compare = |b: &Path| {
        let o = latlab(
            As::Invoker,
            &["report", "compare", model.to_str().unwrap(), b.to_str().unwrap()],
        );
        ok(&o);
        String::from_utf8_lossy(&o.stdout).to_string()
    };
    let text = compare(&dir.join("r.json"));
    let probe_first = v["streams"][0]["name"].as_str().unwrap();
    let title = match probe_first {
        "posix_timer_signal" => "stream posix_timer_signal (".to_string(),
        n => format!("stream posix_timer_signal vs {n} ("),
    };
    assert!(text.contains(&title), "{text}");
    assert!(!text.contains("comparing the first stream of each"), "{text}");
    let text = compare(&other);
    assert!(text.contains("comparing the first stream of each"), "{text}");
    std::fs::remove_dir_all(dir).unwrap();
}

/// The CPUs `pid` may run on (`Cpus_allowed_list` in /proc/PID/status), if it still runs.
fn cpus_allowed(pid: u32) -> Option<String> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let l = status.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?;
    Some(l.trim().to_string())
}

#[test]
fn load_cpus_put_the_loads_on_the_measured_cpu() {
    let cpu = *latlab_probe::parse::allowed_cpus().last().unwrap();
    let d = scratch("load-cpus");
    let c = cpu.to_string();
    let args = args_in(
        &d,
        &[
            "probe",
            "posix-timer",
            "--duration",
            "4s",
            "--cpus",
            &c,
            "--load-cpus",
            &c,
            "--load",
            "video",
            "--load",
            "make:2",
            "--scratch",
            "{dir}",
        ],
    );
    let child = {
        let _shared = DMA_LATENCY.read().unwrap_or_else(|e| e.into_inner());
        let child = command(As::Invoker, &args.iter().map(String::as_str).collect::<Vec<_>>())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The loads (and make's compilers) while the probe measures.
        std::thread::sleep(Duration::from_millis(2500));
        let pids = load_children_in(&d);
        assert!(!pids.is_empty(), "loads running");
        for pid in pids {
            if let Some(allowed) = cpus_allowed(pid) {
                assert_eq!(allowed, c, "load process {pid}");
            }
        }
        child.wait_with_output().unwrap()
    };
    ok(&child);
    let err = String::from_utf8_lossy(&child.stderr);
    assert!(err.contains(&format!("under load video + make:2 on CPUs {c}")), "{err}");
    let v = json(&d.join("r.json"));
    check_streams(&v);
    assert_eq!(v["meta"]["settings"]["load_cpus"], format!("[{c}]"));
    assert_eq!(v["meta"]["settings"]["cpus"], format!("[{c}]"));
    only_one_left(&d, "load-cpus");
}

#[test]
fn write_lists_the_slowest_records_and_removes_its_file() {
    for who in users() {
        let Run { out, v, dir: d } = probe(
            who,
            &format!("write-{who:?}"),
            &[
                "probe",
                "write",
                "--size",
                "32M",
                "--dir",
                "{dir}",
                "--trace-above",
                "1ns",
            ],
        );
        let err = ok(&out);
        assert_eq!(check_streams(&v), 8192);
        // Every kept record is explained: from the tracepoints when root can use them.
        let note = v["streams"][0]["worst"][0]["attribution"]["note"].as_str().unwrap();
        assert!(note.contains("dirty"), "{note}");
        if err.contains("no scheduler tracepoints") {
            assert_ne!((who, is_root()), (As::Invoker, true), "root could not trace: {err}");
        } else {
            assert!(note.contains("tracepoints"), "{note}");
        }
        assert_eq!(v["counters"]["bytes_written"], 32 << 20);
        let text = String::from_utf8_lossy(&out.stdout);
        let listing: Vec<&str> = text
            .lines()
            .skip_while(|l| !l.starts_with("slowest records"))
            .skip(1)
            .take_while(|l| !l.is_empty())
            .collect();
        assert_eq!(listing.len(), 10, "{text}");
        let lat: Vec<u64> = listing
            .iter()
            .map(|l| l.split(' ').nth(1).unwrap().parse().unwrap())
            .collect();
        assert!(lat.windows(2).all(|w| w[0] <= w[1]), "sorted by latency: {lat:?}");
        only_one_left(&d, "write");
    }
}

#[test]
fn write_refuses_to_fill_the_disk() {
    let out = latlab(As::Invoker, &["probe", "write", "--size", "1T", "--dir", "/tmp"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--size") && err.contains("free"), "{err}");
}

/// Each load generator runs under the timer probe and reports that it did its work.
#[test]
fn loads_start_from_a_binary_in_a_private_directory() {
    // A fresh clone under `mktemp -d` is mode 0700: an unprivileged probe there must still be
    // able to start its load children (they re-execute the running binary).
    if !users().contains(&As::Nobody) {
        eprintln!("skip: needs root and setpriv to run the probe as nobody");
        return;
    }
    let private = std::env::temp_dir().join(format!("latlab-private-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&private);
    std::fs::create_dir_all(&private).unwrap();
    std::fs::set_permissions(&private, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    let exe = private.join("latlab");
    std::fs::copy(env!("CARGO_BIN_EXE_latlab"), &exe).unwrap();
    let scratch_dir = scratch("private");
    let mut c = as_nobody(&exe);
    c.args(["probe", "timer", "--loops", "200", "--load", "sync", "--scratch"])
        .arg(&scratch_dir);
    let out = {
        let _shared = DMA_LATENCY.read().unwrap_or_else(|e| e.into_inner());
        c.output().expect("setpriv runs")
    };
    let _ = std::fs::remove_dir_all(&private);
    let _ = std::fs::remove_dir_all(&scratch_dir);
    let err = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() && err.starts_with("setpriv:") {
        eprintln!("skip: this setpriv cannot execute a binary in a 0700 directory as nobody: {err}");
        return;
    }
    assert!(out.status.success(), "exit {:?}: {err}", out.status);
    assert!(err.contains("under load sync"), "{err}");
}

#[test]
fn every_load_does_its_work() {
    let loads = ["make:2", "dd:64M", "dbench:2", "tar", "sync", "video"];
    for who in users() {
        for load in loads {
            let Run { out, v, dir: d } = probe(
                who,
                &format!("load-{}-{who:?}", load.replace(':', "-")),
                &[
                    "probe",
                    "timer",
                    "--duration",
                    "1s",
                    "--load",
                    load,
                    "--scratch",
                    "{dir}",
                ],
            );
            ok(&out);
            check_streams(&v);
            let counters = v["counters"].as_object().unwrap();
            let work: u64 = counters
                .iter()
                .filter(|(k, _)| k.starts_with(&format!("load {load}.")))
                .map(|(_, v)| v.as_u64().unwrap())
                .sum();
            assert!(work > 0, "{load} as {who:?} did nothing: {counters:?}");
            only_one_left(&d, load);
        }
    }
}

/// Held by the tests that depend on whether the machine has swap (one of them adds zram swap).
static SWAP: Mutex<()> = Mutex::new(());

#[test]
fn swap_load_with_zram_swaps_and_tears_the_device_down() {
    let _swap = SWAP.lock().unwrap_or_else(|e| e.into_inner());
    if !is_root() {
        eprintln!("skip: not root, so no zram swap device can be made");
        return;
    }
    let zram = Path::new("/sys/class/zram-control").exists()
        || Command::new("modprobe").arg("zram").status().is_ok_and(|s| s.success());
    if !zram {
        eprintln!("skip: no zram support in this kernel");
        return;
    }
    let swaps_before = std::fs::read_to_string("/proc/swaps").unwrap();
    let Run { out, v, dir: d } = probe(
        As::Invoker,
        "swap-zram",
        &[
            "probe",
            "timer",
            "--duration",
            "1s",
            "--load",
            "swap:256M",
            "--zram",
            "--scratch",
            "{dir}",
        ],
    );
    ok(&out);
    check_streams(&v);
    let swapped = v["counters"]["load swap:256M.system_pages_swapped_out"]
        .as_u64()
        .unwrap();
    assert!(swapped > 0, "nothing swapped out: {}", v["counters"]);
    assert_eq!(
        std::fs::read_to_string("/proc/swaps").unwrap(),
        swaps_before,
        "zram swap left behind"
    );
    only_one_left(&d, "swap");
}

#[test]
fn swap_load_without_swap_says_what_is_missing() {
    let _swap = SWAP.lock().unwrap_or_else(|e| e.into_inner());
    let has_swap = std::fs::read_to_string("/proc/swaps").is_ok_and(|s| s.lines().count() > 1);
    if has_swap {
        eprintln!("skip: this machine has swap, so the no-swap message cannot be shown");
        return;
    }
    let out = latlab(
        As::Invoker,
        &["probe", "timer", "--duration", "1s", "--load", "swap:256M"],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--zram"), "{err}");
}

/// Processes whose environment marks them as latlab load children of `scratch`.
fn load_children_in(scratch: &Path) -> Vec<u32> {
    let mut found = Vec::new();
    let needle = scratch.to_str().unwrap().as_bytes();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        if let Ok(env) = std::fs::read(format!("/proc/{pid}/environ")) {
            if env
                .split(|&b| b == 0)
                .any(|kv| kv.starts_with(b"LATLAB_LOAD_DIR=") && contains(kv, needle))
            {
                found.push(pid);
            }
        }
        if let Ok(cwd) = std::fs::read_link(format!("/proc/{pid}/cwd")) {
            if cwd.starts_with(scratch) {
                found.push(pid);
            }
        }
    }
    found
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// Does process `pid` hold a descriptor of its own on /dev/cpu_dma_latency (the PM QoS request
/// the probe makes, which lives exactly as long as that descriptor)?
fn holds_dma_latency(pid: u32) -> bool {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .into_iter()
        .flatten()
        .flatten()
        .any(|e| std::fs::read_link(e.path()).is_ok_and(|t| t == Path::new("/dev/cpu_dma_latency")))
}

/// SIGINT and SIGTERM end the run: the loads stop, the partial result is written, the exit
/// status names the signal. While it measures, the probe (root) holds its own request on
/// /dev/cpu_dma_latency; that the request ends with the run is the guard's own test
/// (`dma_latency::tests`), as the machine-wide value is shared with every other process.
#[test]
fn sigint_and_sigterm_stop_loads_and_write_the_partial_result() {
    let _shared = DMA_LATENCY.read().unwrap_or_else(|e| e.into_inner());
    for sig in [libc::SIGINT, libc::SIGTERM] {
        let d = scratch(&format!("signal-{sig}"));
        let args = args_in(
            &d,
            &[
                "probe",
                "timer",
                "--duration",
                "60s",
                "--load",
                "dd:256M",
                "--load",
                "make:2",
                "--scratch",
                "{dir}",
            ],
        );
        let mut child = command(As::Invoker, &args.iter().map(String::as_str).collect::<Vec<_>>())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let pid = child.id();
        // The loads start first, then the measuring, which holds the request.
        if is_root() {
            assert!(
                within(20, || holds_dma_latency(pid)),
                "no descriptor on /dev/cpu_dma_latency"
            );
        } else {
            std::thread::sleep(Duration::from_millis(2500));
        }
        assert!(!load_children_in(&d).is_empty(), "loads running");
        // SAFETY: kill has no memory preconditions; the pid is our child's.
        unsafe { libc::kill(pid as i32, sig) };
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(128 + sig), "signal {sig}");
        let v = json(&d.join("r.json"));
        check_streams(&v);
        let held = v["meta"]["settings"]["cpu_dma_latency"].as_str().unwrap();
        if is_root() {
            assert_eq!(held, "0", "root held the request");
        }
        assert!(load_children_in(&d).is_empty(), "a load outlived the probe");
        only_one_left(&d, "signal");
    }
}

#[test]
fn fail_above_gates_and_explain_lists_spikes() {
    let Run { out, v, dir: d } = probe(
        As::Invoker,
        "gate",
        &[
            "probe",
            "timer",
            "--loops",
            "200",
            "--fail-above",
            "1ns",
            "--trace-above",
            "1ns",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("spikes above"), "{text}");
    let worst = &v["streams"][0]["worst"][0]["attribution"];
    assert!(
        !worst["note"].as_str().unwrap().is_empty(),
        "every listed spike says how it was attributed"
    );
    std::fs::remove_dir_all(d).unwrap();
}

/// Root with tracefs keeps the kernel's events around every explained sample, and `report
/// trace` writes those and nothing else; without tracefs (nobody) nothing is kept, and the
/// export says so.
#[test]
fn explain_keeps_recorded_events_and_report_trace_exports_only_those() {
    let tracefs = is_root() && Path::new("/sys/kernel/tracing/instances").is_dir();
    if !tracefs {
        eprintln!("skip (recording half): no tracefs instances as this user");
    }
    for who in users() {
        let Run { out, v, dir: d } = probe(
            who,
            &format!("recorded-{who:?}"),
            &[
                "probe",
                "timer",
                "--loops",
                "300",
                "--cpus",
                "0",
                "--trace-above",
                "1ns",
            ],
        );
        let err = ok(&out);
        let s = &v["streams"][0];
        let recorded = s["recorded"].as_array().cloned().unwrap_or_default();
        let trace = latlab(
            As::Invoker,
            &["report", "trace", d.join("r.json").to_str().unwrap(), "--samples", "3"],
        );
        let text = String::from_utf8_lossy(&trace.stdout).to_string();
        ok(&trace);
        let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
        if who == As::Invoker && tracefs {
            // One window per kept sample, most holding the measuring thread's switch-in (on
            // this guest one window in a few lacks it: the kernel's buffer holds the thread's
            // wakeup and its switch-out but not the switch between them, cause not found).
            assert_eq!(recorded.len(), s["worst"].as_array().unwrap().len());
            let mut switched_in = 0;
            for r in &recorded {
                let w = s["worst"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|w| w["at_ns"] == r["sample_at_ns"])
                    .expect("a window names its sample");
                let tid = w["tag"]["tid"].as_str().unwrap();
                let (from, to) = (r["from_ns"].as_u64().unwrap(), r["to_ns"].as_u64().unwrap());
                let events = r["events"].as_array().unwrap();
                assert!(events.iter().all(|e| {
                    let ts = e["ts_ns"].as_u64().unwrap();
                    from <= ts && ts <= to && e["cpu"] == 0
                }));
                switched_in += usize::from(events.iter().any(|e| {
                    e["event"] == "sched_switch" && e["fields"].as_str().unwrap().contains(&format!("next_pid={tid} "))
                }));
            }
            assert!(
                switched_in * 2 >= recorded.len(),
                "{switched_in} of {} windows hold the thread's switch-in: {recorded:?}",
                recorded.len()
            );
            // Every sample the trace covered is split as timerlat splits it.
            let split = &s["split"];
            let n = split["irq"]["count"].as_u64().unwrap();
            assert!(n > 0 && n <= s["hist"]["count"].as_u64().unwrap(), "{split}");
            assert_eq!(split["thread"]["count"].as_u64(), Some(n));
            let rows: Vec<&str> = v["split_summary"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r["name"].as_str().unwrap())
                .collect();
            assert_eq!(rows, ["cpu0 irq", "cpu0 thread"]);
            let out_text = String::from_utf8_lossy(&out.stdout);
            assert!(
                out_text.contains("\ncpu0 irq ") && out_text.contains("\ncpu0 thread "),
                "{out_text}"
            );
            // The export: event lines in the kernel's layout, all on CPU 0, nothing made up.
            assert!(!lines.is_empty(), "{text}");
            assert!(lines.iter().all(|l| l.contains(" [000] ")), "{text}");
            assert!(
                !text.contains("1073741824") && !text.contains("no kernel events were recorded"),
                "{text}"
            );
        } else {
            assert!(recorded.is_empty());
            assert!(s["split"].is_null());
            assert!(
                err.contains("no kernel stacks, recorded events or IRQ/thread split are kept"),
                "{err}"
            );
            assert!(lines.is_empty(), "{text}");
            assert!(text.contains("no kernel events were recorded for it"), "{text}");
        }
        std::fs::remove_dir_all(d).unwrap();
    }
}

/// Under dd on the measured CPU, the stacktrace trigger records the kernel stacks of the
/// tasks the timers interrupted, and spikes where dd kept the CPU name its kernel function.
#[test]
fn explain_records_kernel_stacks_under_load() {
    if !(is_root() && Path::new("/sys/kernel/tracing/instances").is_dir()) {
        eprintln!("skip: kernel stacks need tracefs (root)");
        return;
    }
    let Run { out, v, dir: d } = probe(
        As::Invoker,
        "stacks",
        &[
            "probe",
            "timer",
            "--duration",
            "2s",
            "--cpus",
            "0",
            "--load-cpus",
            "0",
            "--load",
            "dd:64M",
            "--scratch",
            "{dir}",
            "--trace-above",
            "1ns",
        ],
    );
    ok(&out);
    let s = &v["streams"][0];
    let stacks: Vec<&serde_json::Value> = s["recorded"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| r["events"].as_array().unwrap())
        .filter(|e| e["event"] == "<stack trace>")
        .collect();
    assert!(!stacks.is_empty(), "no kernel stack recorded under dd");
    for e in &stacks {
        let frames = e["fields"].as_str().unwrap();
        assert!(frames.lines().all(|l| l.starts_with(" => ")), "{frames}");
        assert!(frames.contains("hrtimer_interrupt"), "{frames}");
    }
    // A cause named from a stack is its frames below the interrupt entry.
    let paths: Vec<&str> = s["worst"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|w| w["attribution"]["cause"]["path"].as_str())
        .collect();
    eprintln!("causes: {paths:?}");
    for p in paths.iter().filter(|p| p.contains(" <- ")) {
        assert!(!p.contains("asm_sysvec") && !p.contains("hrtimer_interrupt"), "{p}");
    }
    std::fs::remove_dir_all(d).unwrap();
}

/// `--break-above` stops at the first sample above it (here the first of all), writes the
/// result and the events recorded around that sample, and exits 1.
#[test]
fn break_above_stops_and_writes_the_trace() {
    let tracefs = is_root() && Path::new("/sys/kernel/tracing/instances").is_dir();
    for who in users() {
        let Run { out, v, dir: d } = probe(
            who,
            &format!("break-{who:?}"),
            &[
                "probe",
                "timer",
                "--loops",
                "5000",
                "--cpus",
                "0",
                "--break-above",
                "1ns",
                "--break-trace",
                "{dir}/break.txt",
            ],
        );
        assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("stopped at cpu0's sample of"), "{err}");
        let s = &v["streams"][0];
        let count = s["hist"]["count"].as_u64().unwrap();
        assert!((1..5000).contains(&count), "stopped early: {count} samples");
        let stopped = v["meta"]["settings"]["stopped_by"].as_str().unwrap();
        assert!(
            stopped.starts_with("--break-above 0.0 us: cpu0's sample of"),
            "{stopped}"
        );
        let trace = std::fs::read_to_string(d.join("break.txt")).unwrap();
        assert!(trace.starts_with("# tracer: nop\n"), "{trace}");
        let events = trace.lines().filter(|l| !l.starts_with('#')).count();
        if who == As::Invoker && tracefs {
            // The first sample's window: the measuring thread's wakeup and switch-in.
            let tid = s["worst"][0]["tag"]["tid"].as_str().unwrap();
            assert!(trace.contains(&format!("next_pid={tid} ")), "{trace}");
            assert!(events > 0);
        } else {
            assert_eq!(events, 0, "{trace}");
            assert!(trace.contains("no kernel events were recorded"), "{trace}");
        }
        std::fs::remove_dir_all(d).unwrap();
    }
}

/// Without --break-trace the trace goes beside --json FILE, else into a new private directory
/// in the temp dir, and the probe says where; nothing is written in the working directory, and
/// a symlink planted where the trace goes is refused, not followed.
#[test]
fn break_above_writes_its_trace_beside_the_result_or_in_a_private_directory() {
    let d = scratch("break-default");
    let victim = d.join("victim");
    std::fs::write(&victim, "keep me").unwrap();
    // The name earlier versions wrote in the working directory.
    std::os::unix::fs::symlink(&victim, d.join("latlab-break.txt")).unwrap();
    let run = |json: &str| {
        let _shared = DMA_LATENCY.read().unwrap_or_else(|e| e.into_inner());
        command(
            As::Invoker,
            &[
                "probe",
                "timer",
                "--loops",
                "2000",
                "--cpus",
                "0",
                "--break-above",
                "1ns",
                "--json",
                json,
            ],
        )
        .current_dir(&d)
        .output()
        .unwrap()
    };
    let said = |out: &Output| -> PathBuf {
        assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
        let err = String::from_utf8_lossy(&out.stderr);
        let line = err
            .lines()
            .find(|l| l.contains("the events recorded around it are in "))
            .unwrap_or_else(|| panic!("no path said: {err}"));
        PathBuf::from(line.rsplit("are in ").next().unwrap())
    };
    // Beside --json.
    let out = run(d.join("r.json").to_str().unwrap());
    let p = said(&out);
    assert_eq!(p, d.join("r.break.txt"));
    assert!(std::fs::read_to_string(&p).unwrap().starts_with("# tracer: nop\n"));
    // --json to stdout: a private directory in the temp dir.
    let out = run("-");
    let p = said(&out);
    let private = p.parent().unwrap();
    assert_eq!(private.parent().unwrap(), std::env::temp_dir(), "{}", p.display());
    let name = private.file_name().unwrap().to_str().unwrap();
    assert!(
        name.starts_with("latlab-break-") && name.len() == "latlab-break-".len() + 12,
        "{name}"
    );
    let mode = std::fs::symlink_metadata(private).unwrap().permissions().mode();
    assert_eq!(mode & 0o077, 0, "{}: mode {mode:o}", private.display());
    assert!(std::fs::read_to_string(&p).unwrap().starts_with("# tracer: nop\n"));
    std::fs::remove_dir_all(private).unwrap();
    // A symlink where the trace would go beside --json is refused.
    std::os::unix::fs::symlink(&victim, d.join("s.break.txt")).unwrap();
    let out = run(d.join("s.json").to_str().unwrap());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--break-above: writing the trace beside --json, to "),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep me");
    assert!(d.join("latlab-break.txt").is_symlink());
    std::fs::remove_dir_all(d).unwrap();
}

/// `latlab ARGS` on a pseudo-terminal (util-linux `script`): what the terminal showed.
fn on_a_terminal(args: &str) -> Option<String> {
    let cmd = format!("{} {args}", env!("CARGO_BIN_EXE_latlab"));
    let out = Command::new("script").args(["-qec", &cmd, "/dev/null"]).output().ok()?;
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// On a terminal the probe shows a live line per CPU (current, average, maximum, samples),
/// `probe write` its bytes and `swap-bench` its cells; with output to pipes, nothing of it.
#[test]
fn live_progress_on_a_terminal_only() {
    let Some(tty) = on_a_terminal("probe timer --loops 700 --cpus 0") else {
        eprintln!("skip (terminal half): util-linux `script` is not installed");
        return;
    };
    let live = tty
        .split(['\r', '\n'])
        .find(|l| l.contains("samples") && l.contains("cpu0"))
        .unwrap_or("");
    assert!(
        live.contains(" now ") && live.contains(" avg ") && live.contains(" max "),
        "no live line in {tty:?}"
    );
    assert!(tty.contains("\nstream "), "the table follows: {tty:?}");
    let d = scratch("write-tty");
    let tty = on_a_terminal(&format!("probe write --size 64M --dir {}", d.display())).unwrap();
    assert!(tty.contains("write ["), "{tty:?}");
    std::fs::remove_dir_all(d).unwrap();
    let tty = on_a_terminal("swap-bench --slots 65536 --fill 0.5").unwrap();
    assert!(tty.contains("swap-bench [") && tty.contains(" cells"), "{tty:?}");
    // Piped: no progress, no terminal escapes.
    let out = latlab(As::Invoker, &["probe", "timer", "--loops", "300", "--cpus", "0"]);
    let err = ok(&out);
    for text in [err.as_str(), &String::from_utf8_lossy(&out.stdout)] {
        assert!(
            !text.contains("samples") && !text.contains('\x1b') && !text.contains('\r'),
            "{text}"
        );
    }
}

#[test]
fn bad_options_get_clear_errors() {
    for (args, expect) in [
        (vec!["probe", "timer", "--cpus", "9999"], "not online"),
        (vec!["probe", "timer", "--load", "bogus"], "make:N"),
        (vec!["probe", "timer", "--interval", "fast"], "not a duration"),
        (vec!["probe", "timer", "--interval", "100000s"], "outside 1us..1s"),
        (vec!["probe", "posix-timer", "--notify", "pigeon"], "signal or thread"),
        (
            vec!["probe", "timer", "--load-cpus", "9999", "--load", "video"],
            "not online",
        ),
        (
            vec!["probe", "timer", "--load-cpus", "0"],
            "--load-cpus 0: there is no --load",
        ),
        (vec!["probe", "write", "--size", "12parsecs"], "size"),
        // Near 2^64 ns: refused with the flag and its limit, not added to the clock.
        (
            vec!["probe", "timer", "--duration", "18446744073709551615"],
            "'18446744073709551615' for '--duration <DURATION>': '18446744073709551615' is too long (at most 584 years)",
        ),
        (
            vec!["probe", "timer", "--duration", "18000000000000000000ns"],
            "is longer than a run may be: at most 8760h (365 days)",
        ),
        (
            vec!["probe", "posix-timer", "--duration", "8761h"],
            "'8761h' is longer than a run may be: at most 8760h (365 days)",
        ),
        (
            vec!["probe", "vs-cyclictest", "--duration", "99999999999999999999999"],
            "is too long (at most 584 years)",
        ),
        (
            vec!["probe", "write", "--dir", "/nonexistent", "--size", "1M"],
            "--dir /nonexistent: No such file or directory",
        ),
        (
            vec!["probe", "write", "--dir", "/dev/null", "--size", "1M"],
            "--dir /dev/null: not a directory",
        ),
        (
            vec!["probe", "timer", "--load", "sync", "--scratch", "/nonexistent"],
            "--scratch /nonexistent: No such file or directory",
        ),
    ] {
        let out = latlab(As::Invoker, &args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(expect), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        if args.contains(&"--dir") {
            assert!(!err.contains("--size"), "{args:?} blames --size: {err}");
        }
    }
    // The longest run accepted runs, and stops at --loops: its deadline did not wrap.
    let out = latlab(
        As::Invoker,
        &["probe", "timer", "--duration", "8760h", "--loops", "20", "--cpus", "0"],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr)); // Refused before any thread starts: a thread per expiry every 50 us would pile up.
    let out = latlab(
        As::Invoker,
        &[
            "probe",
            "posix-timer",
            "--notify",
            "thread",
            "--interval",
            "50us",
            "--loops",
            "10",
        ],
    );
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("too short for --notify thread"));
}

#[test]
fn side_by_side_with_cyclictest() {
    if Command::new("cyclictest").arg("--help").output().is_err() {
        eprintln!("skip: cyclictest (rt-tests) not installed; scripts/install-deps installs it as root");
        return;
    }
    if !is_root() {
        eprintln!("skip: cyclictest needs root for SCHED_FIFO and mlockall");
        return;
    }
    let out = latlab(
        As::Invoker,
        &[
            "probe",
            "vs-cyclictest",
            "--duration",
            "1s",
            "--rounds",
            "1",
            "--under",
            "none",
        ],
    );
    ok(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    let row = |tool: &str| {
        text.lines()
            .find(|l| l.starts_with("idle") && l.split_whitespace().nth(1) == Some(tool))
            .unwrap_or_else(|| panic!("{tool} row in {text}"))
            .split_whitespace()
            .skip(2)
            .map(|x| x.parse::<f64>().unwrap())
            .collect::<Vec<f64>>()
    };
    let (c, l) = (row("cyclictest"), row("latlab"));
    assert!(c[0] > 500.0 && l[0] > 500.0, "both counted samples: {c:?} {l:?}");
    assert!(row("ratio").len() == 7);
}

/// Poll `cond` every 50 ms for up to `secs`; whether it held.
fn within(secs: u64, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + Duration::from_secs(secs);
    while std::time::Instant::now() < deadline {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    cond()
}

fn entries(d: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(d)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// The probe's private ftrace instance, if tracefs is mounted.
fn ftrace_instance(pid: u32) -> Option<PathBuf> {
    ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"]
        .iter()
        .map(|r| Path::new(r).join("instances"))
        .find(|p| p.is_dir())
        .map(|p| p.join(format!("latlab-{pid}")))
}

/// The pid of a process that has exited and been reaped: a probe that no longer runs.
fn dead_pid() -> u32 {
    let mut c = Command::new("true").spawn().unwrap();
    let pid = c.id();
    c.wait().unwrap();
    pid
}

#[test]
fn sigkill_and_sighup_leave_no_load_scratch_file_or_ftrace_instance() {
    let _alone = DMA_LATENCY.write().unwrap_or_else(|e| e.into_inner());
    for who in users() {
        for sig in [libc::SIGKILL, libc::SIGHUP] {
            let d = scratch(&format!("kill-{who:?}-{sig}"));
            let args = args_in(
                &d,
                &[
                    "probe",
                    "timer",
                    "--duration",
                    "60s",
                    "--load",
                    "make:2",
                    "--load",
                    "dd:64M",
                    "--scratch",
                    "{dir}",
                    "--explain",
                ],
            );
            let mut child = command(who, &args.iter().map(String::as_str).collect::<Vec<_>>())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            // As nobody, setpriv execs the probe in place: the pid is the probe's.
            let pid = child.id();
            let traced = who == As::Invoker && is_root();
            let ready = within(20, || {
                let loads_ready = entries(&d).iter().filter(|n| n.starts_with("latlab-load-")).count() == 2
                    && entries(&d)
                        .iter()
                        .all(|n| !n.starts_with("latlab-load-") || d.join(n).join("ready").exists());
                loads_ready && (!traced || ftrace_instance(pid).is_some_and(|p| p.exists()))
            });
            assert!(ready, "{who:?}: loads and tracing never started: {:?}", entries(&d));
            assert!(!load_children_in(&d).is_empty(), "loads running");
            // SAFETY: kill has no memory preconditions; the pid is our child's.
            unsafe { libc::kill(pid as i32, sig) };
            let status = child.wait().unwrap();
            let mut err = String::new();
            std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
            if sig == libc::SIGHUP {
                assert_eq!(status.code(), Some(128 + sig), "{who:?}: {err}");
                check_streams(&json_at(&d));
            }
            let left = |d: &Path| -> Vec<String> { entries(d).into_iter().filter(|n| n != "r.json").collect() };
            let clean = within(15, || {
                load_children_in(&d).is_empty()
                    && left(&d).is_empty()
                    && ftrace_instance(pid).is_none_or(|p| !p.exists())
            });
            assert!(
                clean,
                "{who:?} signal {sig}: left processes {:?}, files {:?}, instance {:?}; stderr: {err}",
                load_children_in(&d),
                left(&d),
                ftrace_instance(pid).filter(|p| p.exists())
            );
            std::fs::remove_dir_all(&d).unwrap();
        }
    }
}

/// A `make` load's compilers write their temporary files (cc*.s) in the load's own private
/// directory (its `TMPDIR`), not in the probe's `TMPDIR`: a SIGKILLed probe leaves none there.
#[test]
fn sigkill_with_a_make_load_leaves_no_compiler_files_in_tmpdir() {
    let _alone = DMA_LATENCY.write().unwrap_or_else(|e| e.into_inner());
    let d = scratch("make-tmpdir");
    let tmpdir = scratch("make-tmpdir-env");
    let mut child = command(
        As::Invoker,
        &[
            "probe",
            "timer",
            "--duration",
            "60s",
            "--load",
            "make:2",
            "--scratch",
            d.to_str().unwrap(),
        ],
    )
    .env("TMPDIR", &tmpdir)
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    // The compilers' files, seen in the load's TMPDIR while they work.
    let in_load_tmp = || {
        entries(&d)
            .iter()
            .filter(|n| n.starts_with("latlab-load-"))
            .flat_map(|n| std::fs::read_dir(d.join(n).join("tmp")).into_iter().flatten().flatten())
            .any(|e| e.file_name().to_string_lossy().starts_with("cc"))
    };
    let mut seen = false;
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !seen && std::time::Instant::now() < deadline {
        seen = in_load_tmp();
        std::thread::sleep(Duration::from_millis(5));
    }
    // SAFETY: kill has no memory preconditions; the pid is our child's.
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    child.wait().unwrap();
    assert!(seen, "no compiler file ever appeared in the load's TMPDIR");
    assert!(
        within(15, || load_children_in(&d).is_empty() && entries(&d).is_empty()),
        "left: {:?}",
        entries(&d)
    );
    assert_eq!(entries(&tmpdir), Vec::<String>::new(), "left in the probe's TMPDIR");
    std::fs::remove_dir_all(&d).unwrap();
    std::fs::remove_dir_all(&tmpdir).unwrap();
}

fn json_at(d: &Path) -> serde_json::Value {
    json(&d.join("r.json"))
}

#[test]
fn write_leaves_no_name_for_its_file_while_it_writes() {
    let _shared = DMA_LATENCY.read().unwrap_or_else(|e| e.into_inner());
    let d = scratch("write-unlinked");
    let child = command(
        As::Invoker,
        &[
            "probe",
            "write",
            "--size",
            "2G",
            "--record",
            "4K",
            "--dir",
            d.to_str().unwrap(),
        ],
    )
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let pid = child.id();
    // Its descriptor to the file, open while it writes; the file has no name meanwhile.
    let writing = within(10, || {
        std::fs::read_dir(format!("/proc/{pid}/fd"))
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| std::fs::read_link(e.path()).ok())
            .any(|t| t.to_string_lossy().contains("latlab-write-") && t.to_string_lossy().ends_with("(deleted)"))
    });
    let names = entries(&d);
    // SAFETY: kill has no memory preconditions; the pid is our child's.
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    let out = child.wait_with_output().unwrap();
    if !writing && String::from_utf8_lossy(&out.stderr).contains("would leave less than") {
        eprintln!("skip: not 2 GB free in the temp dir for a write run");
        std::fs::remove_dir_all(&d).unwrap();
        return;
    }
    assert!(
        writing,
        "no open, unlinked latlab-write file: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(names.is_empty(), "a name while writing: {names:?}");
    assert!(entries(&d).is_empty(), "left after SIGKILL: {:?}", entries(&d));
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn a_new_probe_removes_what_killed_probes_left_and_says_so() {
    let _alone = DMA_LATENCY.write().unwrap_or_else(|e| e.into_inner());
    let d = scratch("leftovers");
    let dead = dead_pid();
    let load_dir = d.join(format!("latlab-load-{dead}-aZ09aZ09aZ09"));
    std::fs::create_dir_all(load_dir.join("work/tree")).unwrap();
    std::fs::write(load_dir.join("work/tree/a.o"), "x").unwrap();
    let write_file = d.join(format!("latlab-write-{dead}-000000000000"));
    std::fs::create_dir_all(&write_file).unwrap();
    std::fs::write(write_file.join("data"), "x").unwrap();
    // A running probe's, and anything else, stays.
    let live = d.join(format!("latlab-load-{}-aZ09aZ09aZ09", std::process::id()));
    std::fs::create_dir_all(&live).unwrap();
    let instance = if is_root() {
        ftrace_instance(dead).filter(|p| std::fs::create_dir(p).is_ok())
    } else {
        eprintln!("skip: not root, so no leftover ftrace instance can be made");
        None
    };
    let out = command(
        As::Invoker,
        &[
            "probe",
            "timer",
            "--loops",
            "50",
            "--load",
            "sync",
            "--scratch",
            d.to_str().unwrap(),
        ],
    )
    .output()
    .unwrap();
    let err = ok(&out);
    for p in [&load_dir, &write_file].into_iter().chain(instance.as_ref()) {
        assert!(!p.exists(), "{} left: {err}", p.display());
        let said = format!(
            "latlab probe: removed {}, left by latlab probe {dead}, which no longer runs",
            p.display()
        );
        assert!(err.contains(&said), "{err}");
    }
    assert!(live.exists(), "a running probe's scratch directory was removed");
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn a_load_that_dies_is_in_the_result_every_report_and_the_exit_status() {
    let _shared = DMA_LATENCY.read().unwrap_or_else(|e| e.into_inner());
    let report = |args: &[&str]| command(As::Invoker, args).output().unwrap();
    for allow in [false, true] {
        let d = scratch(&format!("dies-{allow}"));
        let mut args = args_in(
            &d,
            &[
                "probe",
                "timer",
                "--duration",
                "4s",
                "--load",
                "sync",
                "--scratch",
                "{dir}",
            ],
        );
        if allow {
            args.push("--allow-load-failure".into());
        }
        let child = command(As::Invoker, &args.iter().map(String::as_str).collect::<Vec<_>>())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        assert!(
            within(10, || !load_children_in(&d).is_empty()),
            "the load never started"
        );
        std::thread::sleep(Duration::from_millis(500));
        for pid in load_children_in(&d) {
            // SAFETY: kill has no memory preconditions; these are the probe's load children.
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
        }
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(if allow { 0 } else { 3 }), "{err}");
        if !allow {
            assert!(err.contains("--allow-load-failure"), "{err}");
        }
        let v = json_at(&d);
        let fate = &v["loads"][0];
        assert_eq!(fate["name"], "sync", "{v}");
        assert_eq!(fate["died"]["how"], "killed by signal 9", "{v}");
        assert!(fate["died"]["after_ns"].as_u64().unwrap() > 0);
        assert!(
            v["meta"]["workload"]
                .as_str()
                .unwrap()
                .starts_with("timer under sync (died at "),
            "{}",
            v["meta"]["workload"]
        );
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("load sync: died "), "{text}");
        let r = d.join("r.json");
        let r = r.to_str().unwrap();
        let cmp = report(&["report", "compare", r, r]);
        let text = String::from_utf8_lossy(&cmp.stdout);
        assert!(
            text.contains("(probe; load sync died) #1") && text.contains("  load sync: died "),
            "{text}"
        );
        let csv = report(&["report", "csv", r]);
        assert!(
            String::from_utf8_lossy(&csv.stderr).contains("warning") && csv.status.success(),
            "{}",
            String::from_utf8_lossy(&csv.stderr)
        );
        let html = report(&["report", "html", r]);
        assert!(String::from_utf8_lossy(&html.stdout).contains("load sync"));
        std::fs::remove_dir_all(&d).unwrap();
    }
}

/// cyclictest's own `--json` and `-h` files, read by `latlab report` beside a probe result.
#[test]
fn report_reads_cyclictest_files() {
    if Command::new("cyclictest").arg("--help").output().is_err() {
        eprintln!("skip: cyclictest (rt-tests) not installed; scripts/install-deps installs it as root");
        return;
    }
    if !is_root() {
        eprintln!("skip: cyclictest needs root for SCHED_FIFO and mlockall");
        return;
    }
    let d = scratch("cyclictest-files");
    let (cj, ch) = (d.join("c.json"), d.join("h.txt"));
    // -h1000: buckets up to 1 ms, so a VM's 20-40 us wakeups land in the histogram (with
    // -h20 most overflow, and cyclictest's JSON then holds no distribution to read).
    let ct = Command::new("cyclictest")
        .args(["-m", "-q", "-p95", "-i1000", "-l300", "-t1", "-a0", "-h1000"])
        .arg(format!("--json={}", cj.display()))
        .arg(format!("--histfile={}", ch.display()))
        .output()
        .unwrap();
    assert!(ct.status.success(), "{}", String::from_utf8_lossy(&ct.stderr));
    let p = d.join("p.json");
    ok(&latlab(
        As::Invoker,
        &[
            "probe",
            "timer",
            "--loops",
            "300",
            "--cpus",
            "0",
            "--json",
            p.to_str().unwrap(),
        ],
    ));
    let out = latlab(
        As::Invoker,
        &["report", "compare", cj.to_str().unwrap(), p.to_str().unwrap()],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    ok(&out);
    assert!(text.contains("(cyclictest)") && text.contains("stream cpu0 "), "{text}");
    let count = text.lines().find(|l| l.starts_with("count ")).unwrap();
    assert_eq!(
        count.split_whitespace().take(3).collect::<Vec<_>>(),
        ["count", "300", "300"],
        "{text}"
    );
    let out = latlab(As::Invoker, &["report", "csv", "--percentiles", ch.to_str().unwrap()]);
    let csv = String::from_utf8_lossy(&out.stdout);
    ok(&out);
    assert!(csv.lines().nth(1).unwrap().starts_with("thread0,300,"), "{csv}");
    std::fs::remove_dir_all(d).unwrap();
}

#[test]
fn sighup_with_standard_error_gone_still_writes_the_result_and_cleans_up() {
    let _shared = DMA_LATENCY.read().unwrap_or_else(|e| e.into_inner());
    let d = scratch("hup-no-stderr");
    let args = args_in(
        &d,
        &[
            "probe",
            "timer",
            "--duration",
            "60s",
            "--load",
            "sync",
            "--scratch",
            "{dir}",
        ],
    );
    // /dev/full fails every write, as the terminal of a dropped SSH session does.
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
    let mut child = command(As::Invoker, &args.iter().map(String::as_str).collect::<Vec<_>>())
        .stdout(Stdio::null())
        .stderr(full)
        .spawn()
        .unwrap();
    assert!(
        within(20, || !load_children_in(&d).is_empty()),
        "the load never started"
    );
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: kill has no memory preconditions; the pid is our child's.
    unsafe { libc::kill(child.id() as i32, libc::SIGHUP) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(128 + libc::SIGHUP), "no panic on the failed writes");
    check_streams(&json_at(&d));
    assert!(
        within(10, || load_children_in(&d).is_empty()),
        "a load outlived the probe"
    );
    only_one_left(&d, "sighup");
}

/// `probe calibrate --quick` writes a machine file that the experiment loader takes as a
/// machine and `latlab run` runs on; every number in it is finite and positive; each field
/// says how it was measured or read; FILE is never overwritten without `--force`; nothing is
/// left in `--dir`. As root and as nobody (no tracefs: the timer interrupt's split is then
/// estimated, and the output says so).
#[test]
fn calibrate_writes_a_machine_file_the_model_runs() {
    for who in users() {
        let dir = scratch(&format!("calibrate-{who:?}"));
        let file = dir.join("m.toml");
        let (f, d) = (file.to_str().unwrap(), dir.to_str().unwrap());
        let out = latlab(who, &["probe", "calibrate", "-o", f, "--quick", "--dir", d]);
        let err = ok(&out);
        let table = String::from_utf8_lossy(&out.stdout).to_string();
        for row in [
            "syscall_ns",
            "disk.seq_mb_s",
            "host.costs.fork_exec_ns",
            "host.noise.gaps_per_s",
            "noise source:",
        ] {
            assert!(table.contains(row), "{who:?}: {row} missing from the summary:\n{table}");
        }
        assert!(
            err.contains("latlab probe calibrate: disk"),
            "{who:?}: progress on stderr: {err}"
        );
        if who == As::Nobody {
            assert!(table.contains("not traced (not root"), "{who:?}: {table}");
        }

        // The loader's machine reader takes it, by path.
        let text = std::fs::read_to_string(&file).unwrap();
        let files = |_: &str| Ok((f.to_string(), text.clone()));
        let m = latlab_exp::machine("test", "./m.toml", 1, &files).unwrap_or_else(|e| panic!("{who:?}: {e}\n{text}"));
        for (field, v) in latlab_exp::machine_values(&m) {
            let x = match v {
                latlab_exp::FieldValue::Whole(i) => i as f64,
                latlab_exp::FieldValue::Number(x) => x,
                latlab_exp::FieldValue::Flag(_) => continue,
            };
            // A machine without swap has none to read.
            let least = if field == "swap_mib" { 0.0 } else { f64::MIN_POSITIVE };
            assert!(x.is_finite() && x >= least, "{who:?}: {field} = {x}");
            assert!(m.uncertainty.get(&field).is_some(), "{who:?}: {field} has no spread");
        }
        let host = m.host.as_ref().expect("[host]");
        let costs = host.costs.as_ref().expect("[host.costs]");
        for c in [
            costs.syscall_ns,
            costs.ctx_switch_ns,
            costs.fork_exec_ns,
            costs.page_fault_ns,
        ] {
            let c = c.expect("measured");
            assert!(c.p5 > 0.0 && c.median.is_finite() && c.runs > 0, "{who:?}: {c:?}");
        }
        let storage = host.storage.as_ref().expect("[host.storage]");
        assert!(storage.write_mb_s.median > 0.0 && storage.fsync_us.median > 0.0);
        let noise = host.noise.as_ref().expect("[host.noise]");
        assert!(noise.duration_s > 0.0 && noise.gaps_per_s.is_finite() && !noise.source.is_empty());
        // A rate for every CPU measured; the lengths whenever a gap was counted.
        assert_eq!(noise.per_cpu_gaps_per_s.len(), noise.cpus as usize);
        assert_eq!(noise.lengths.is_some(), noise.gaps > 0, "{noise:?}");
        assert!(host.kernel.as_ref().expect("[host.kernel]").hz >= 10);
        let topo = host.topology.as_ref().expect("[host.topology]");
        assert_eq!(
            topo.smt_siblings.iter().map(Vec::len).sum::<usize>(),
            topo.cpus_online as usize
        );
        // Every field of the profile says where it came from, in the comment above it.
        let lines: Vec<&str> = text.lines().collect();
        let in_profile = |i: usize| {
            !lines[..i]
                .iter()
                .any(|l| l.starts_with("[uncertainty]") || l.starts_with("[host"))
        };
        for (i, l) in lines.iter().enumerate().skip(3) {
            if l.contains(" = ") && !l.starts_with('#') && in_profile(i) {
                let above = lines[i - 1];
                assert!(
                    ["# measured:", "# read:", "# estimate:"]
                        .iter()
                        .any(|p| above.starts_with(p)),
                    "{who:?}: no source above `{l}`: `{above}`"
                );
            }
        }

        // The model runs on it.
        let exp = dir.join("exp.toml");
        std::fs::write(
            &exp,
            format!(
                "name = \"on-this-machine\"\ntitle = \"realfeel beside hogs on the calibrated machine\"\n\
                 machine = \"{f}\"\nworkload = \"cpu-hogs\"\nhogs = 2\ntable = \"max-latency\"\n\n\
                 [[run]]\nlabel = \"6.18 EEVDF none\"\nvariant = \"6.18-eevdf-none\"\nmax_seconds = 1\n"
            ),
        )
        .unwrap();
        let run = common::latlab(&["run", exp.to_str().unwrap()]);
        assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
        assert!(String::from_utf8_lossy(&run.stdout).contains("6.18 EEVDF none"));
        // And replays the noise measured (none, if no gap was counted).
        let replayed = common::latlab(&["run", exp.to_str().unwrap(), "--replay-noise"]);
        let e = String::from_utf8_lossy(&replayed.stderr);
        assert!(replayed.status.success(), "{who:?}: {e}");
        std::fs::remove_file(&exp).unwrap();

        // No overwriting without --force; --force replaces the file (a new inode: renamed
        // into place, never written in place).
        use std::os::unix::fs::MetadataExt;
        let ino = std::fs::metadata(&file).unwrap().ino();
        let again = latlab(who, &["probe", "calibrate", "-o", f, "--quick", "--dir", d]);
        assert_eq!(again.status.code(), Some(2));
        let e = String::from_utf8_lossy(&again.stderr);
        assert!(e.contains(&format!("-o {f}: exists (--force replaces it)")), "{e}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), text);
        let forced = latlab(who, &["probe", "calibrate", "-o", f, "--quick", "--dir", d, "--force"]);
        ok(&forced);
        assert_ne!(std::fs::metadata(&file).unwrap().ino(), ino);
        // A symlink at FILE is refused without --force, its target untouched.
        let victim = dir.join("victim");
        std::fs::write(&victim, "keep").unwrap();
        let link = dir.join("link.toml");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        let refused = latlab(
            who,
            &[
                "probe",
                "calibrate",
                "-o",
                link.to_str().unwrap(),
                "--quick",
                "--dir",
                d,
            ],
        );
        assert_eq!(refused.status.code(), Some(2));
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        for name in ["victim", "link.toml"] {
            std::fs::remove_file(dir.join(name)).unwrap();
        }
        // Only the machine file is left: no private directory, no temporary file.
        only_one_left(&dir, &format!("calibrate as {who:?}"));
    }
}

/// Bad `-o` and `--dir` are refused before anything is measured, naming the option; a
/// SIGINT ends a calibration at its next step with 128 + the signal, writing nothing and
/// leaving nothing in `--dir`.
#[test]
fn calibrate_refuses_bad_paths_and_stops_on_sigint() {
    let dir = scratch("calibrate-bad");
    let d = dir.to_str().unwrap();
    let f = dir.join("m.toml");
    let out = latlab(
        As::Invoker,
        &[
            "probe",
            "calibrate",
            "-o",
            f.to_str().unwrap(),
            "--dir",
            "/nonexistent/x",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--dir /nonexistent/x: not a directory"));
    let out = latlab(
        As::Invoker,
        &["probe", "calibrate", "-o", "/nonexistent/m.toml", "--dir", d],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("-o /nonexistent/m.toml: /nonexistent is not a directory"));

    let _shared = DMA_LATENCY.read().unwrap_or_else(|e| e.into_inner());
    // The full calibration takes tens of seconds: the signal comes well before its end.
    let child = command(
        As::Invoker,
        &["probe", "calibrate", "-o", f.to_str().unwrap(), "--dir", d],
    )
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: the child's pid, which has not been waited for.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(err.contains("stopped by a signal"), "{err}");
    assert!(!f.exists());
    let left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A scenario of every step kind the probe runs: a SCHED_FIFO timer thread, a SCHED_OTHER one
/// on a POSIX timer (thread notification), a pipe ping-pong pair, a writer with fsync, a hog,
/// a parent spawning children (fork + exec) that write, and waiting for them.
const SCENARIO: &str = r#"name = "cli"
duration_s = 30
[[task]]
comm = "cyc"
policy = "fifo"
priority = 90
steps = [{ periodic = { period_us = 1000, steps = [{ compute = { us = 10 } }] } }]
[[task]]
comm = "posix"
steps = [{ periodic = { period_us = 1000, timer = "thread", steps = [{ compute = { us = 10 } }] } }]
[[task]]
comm = "ping"
steps = [{ loop = { steps = [{ pipe-write = { to = "pong", bytes = 8 } }, { pipe-read = { from = "pong", bytes = 8 } }] } }]
[[task]]
comm = "pong"
steps = [{ loop = { steps = [{ pipe-read = { from = "ping", bytes = 8 } }, { pipe-write = { to = "ping", bytes = 8 } }] } }]
[[task]]
comm = "writer"
steps = [{ loop = { steps = [{ write = { file = "out", kb = 256 } }, { fsync = {} }] } }]
[[task]]
comm = "hog"
nice = 19
steps = [{ loop = { steps = [{ compute = { ms = 5 } }] } }]
[[task]]
comm = "make"
steps = [{ loop = { steps = [
    { spawn = { comm = "cc", steps = [{ compute = { ms = 2 } }, { write = { file = "obj", kb = 4 } }] } },
    { wait = {} },
] } }]
"#;

#[test]
fn scenario_runs_its_tasks_as_root_and_as_nobody_and_leaves_nothing() {
    for who in users() {
        let dir = scratch(&format!("scenario-{who:?}"));
        let file = dir.join("s.toml");
        std::fs::write(&file, SCENARIO).unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        let f = file.to_str().unwrap();
        let a = args_in(
            &dir,
            &["probe", "scenario", f, "--duration", "1s", "--scratch", "{dir}"],
        );
        let out = latlab(who, &a.iter().map(String::as_str).collect::<Vec<_>>());
        let err = ok(&out);
        let v = json(&dir.join("r.json"));
        check_streams(&v);
        let names: Vec<&str> = v["streams"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["cyc", "posix"], "the model's names: one stream a periodic task");
        assert_eq!(v["meta"]["settings"]["scenario"], "cli");
        assert_eq!(
            v["meta"]["settings"]["duration_s"], "1",
            "--duration over the file's 30 s"
        );
        assert_eq!(v["meta"]["settings"]["task cyc"], "1 x SCHED_FIFO 90, nice 0, any CPU");
        let c = |k: &str| v["counters"][format!("scenario {k}")].as_u64().unwrap_or(0);
        for k in ["pipe_messages", "fsyncs", "spawns", "children_exited_ok"] {
            assert!(c(k) > 0, "{k}: {}", v["counters"]);
        }
        // A child exits 0 only when its steps all ran (its write included): they did.
        let refused = err.contains("task `cyc` copy 0: SCHED_FIFO 90 refused");
        match who {
            As::Nobody => assert!(refused && err.contains("RLIMIT_RTPRIO"), "{err}"),
            As::Invoker if is_root() => assert!(!refused, "{err}"),
            As::Invoker => {}
        }
        // The scenario's private directory (its pipes' writer's file) went with the run.
        let mut left: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        left.sort();
        assert_eq!(left, ["r.json", "s.toml"], "{who:?}");
        std::fs::remove_dir_all(dir).unwrap();
    }
}

#[test]
fn scenario_runs_an_rt_app_file_of_the_suite_and_its_loads() {
    let suite = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let Run { out, v, dir } = probe(
        As::Invoker,
        "scenario-rtapp",
        &[
            "probe",
            "scenario",
            suite.join("rtapp-fifo-beside-hogs.json").to_str().unwrap(),
            "--duration",
            "1s",
        ],
    );
    ok(&out);
    check_streams(&v);
    assert_eq!(v["streams"][0]["name"], "rt");
    assert!(
        v["meta"]["settings"]["ignored"]
            .as_str()
            .unwrap()
            .contains("global.logdir"),
        "{v}"
    );
    std::fs::remove_dir_all(dir).unwrap();
    // A scenario with a load: the probe's own (`--load video`), stopped with the run.
    let dir = scratch("scenario-load");
    let file = dir.join("v.toml");
    std::fs::write(
        &file,
        "name = \"v\"\nduration_s = 1\n[[task]]\ncomm = \"cyc\"\nsteps = [{ periodic = { period_us = 1000 } }]\n[[load]]\nvideo = {}\n",
    )
    .unwrap();
    let a = args_in(
        &dir,
        &["probe", "scenario", file.to_str().unwrap(), "--scratch", "{dir}"],
    );
    let out = latlab(As::Invoker, &a.iter().map(String::as_str).collect::<Vec<_>>());
    ok(&out);
    let v = json(&dir.join("r.json"));
    assert!(
        v["counters"]["load video.frames"].as_u64().unwrap() > 0,
        "{}",
        v["counters"]
    );
    assert!(load_children_in(&dir).is_empty());
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_bad_scenario_is_refused_naming_the_file_line_and_field() {
    let dir = scratch("scenario-bad");
    let file = dir.join("bad.toml");
    std::fs::write(&file, SCENARIO.replace("priority = 90", "priority = 100")).unwrap();
    let out = latlab(As::Invoker, &["probe", "scenario", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "{}:6: field `task.priority`: task `cyc`: must be 1..=99, got 100",
            file.display()
        )),
        "{err}"
    );
    let json = dir.join("bad.json");
    std::fs::write(
        &json,
        r#"{ "global": { "duration": 1 }, "tasks": { "t": { "run": 5, "lock": "m" } } }"#,
    )
    .unwrap();
    let out = latlab(As::Invoker, &["probe", "scenario", json.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.code() == Some(2) && err.contains("bad.json:1: field `tasks.t.lock`") && err.contains("mutexes"),
        "{err}"
    );
    std::fs::remove_dir_all(dir).unwrap();
}
