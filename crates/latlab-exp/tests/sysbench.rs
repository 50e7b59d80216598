//! sysbench fileio rndrw in the model (seed 001's "mix throughput"): prepare, then the run's
//! requests in sysbench's mix with its fsync series, each read and write timed into the
//! `sysbench-rndrw` stream, the run's bytes over its time (fsyncs included); the same seed
//! gives the same rows; bad options are named.

use latlab_core::RunResult;

const EXP: &str = r#"
name = "sysbench-test"
title = "sysbench"
seed_file = "001_1a6962ebe1945cca.txt"
machine = "p4-2006"
workload = "sysbench-rndrw"
seed = 1
table = "write-latency"

[[run]]
label = "2.6.17"
variant = "2.6.17"
max_seconds = 120
"#;

/// A 64 MB set of 128 files and 1,000 requests: every mechanism of the full run, in a
/// fraction of its time.
fn run(vary: &[(&str, &str)], seed: u64) -> RunResult {
    let mut exp = latlab_exp::load("t.toml", EXP).unwrap();
    for (k, v) in [("sysbench.file_mb", "64"), ("sysbench.requests", "1000")]
        .iter()
        .chain(vary)
    {
        exp = latlab_exp::vary(&exp, "t", k, v).unwrap();
    }
    let mut cfg = exp.runs[0].config.clone();
    cfg.seed = seed;
    latlab_sim::simulate(&cfg, &mut |_, _| {}).unwrap().0
}

#[test]
fn the_requests_follow_the_ratio_and_each_hundredth_is_followed_by_an_fsync_of_every_file() {
    let r = run(&[], 1);
    let c = &r.counters;
    // 1.5 reads a write; a series of 128 fsyncs after requests 100 ... 900 and at the end.
    assert_eq!((c["rndrw_reads"], c["rndrw_writes"]), (600, 400));
    assert_eq!(c["rndrw_fsyncs"], 10 * 128);
    // The stream times reads and writes, not fsyncs.
    let s = r.stream("sysbench-rndrw").expect("the requests' stream");
    assert_eq!(s.hist.count(), 1000);
    assert!(s.worst.iter().all(|w| w.tag["record_bytes"] == "16384"));
    // The run's time is mostly the fsyncs': its syncs write the random blocks and wait.
    let secs = 1000.0 / r.throughput["rndrw_requests_per_s"];
    let requests = s.hist.mean() * 1000.0 / 1e9;
    assert!(requests < 0.5 * secs, "requests {requests:.3} s of a {secs:.3} s run");
    // sysbench's figure: 16 KiB a request over the run's time.
    let mbps = 1000.0 * 16384.0 / 1e6 / secs;
    assert!((r.throughput["rndrw_MBps"] / mbps - 1.0).abs() < 1e-9);
    // Without periodic fsyncs only the final series.
    let r = run(&[("sysbench.fsync_freq", "0")], 1);
    assert_eq!(r.counters["rndrw_fsyncs"], 128);
    // A different mix.
    let r = run(&[("sysbench.rw_ratio_pct", "300")], 1);
    assert_eq!((r.counters["rndrw_reads"], r.counters["rndrw_writes"]), (750, 250));
}

#[test]
fn the_same_seed_gives_the_same_run_and_another_seed_other_offsets() {
    let a = serde_json::to_string(&run(&[], 3)).unwrap();
    let b = serde_json::to_string(&run(&[], 3)).unwrap();
    assert_eq!(a, b);
    let offsets = |r: &RunResult| {
        let mut v: Vec<String> = r
            .stream("sysbench-rndrw")
            .unwrap()
            .worst
            .iter()
            .map(|w| w.tag["offset_kb"].clone())
            .collect();
        v.sort();
        v
    };
    assert_ne!(offsets(&run(&[], 3)), offsets(&run(&[], 4)));
}

#[test]
fn bad_options_name_their_field() {
    let exp = latlab_exp::load("t.toml", EXP).unwrap();
    let err = |k: &str, v: &str| latlab_exp::vary(&exp, "cli", k, v).unwrap_err().to_string();
    let e = err("sysbench.block_kb", "0");
    assert!(
        e.contains("sysbench.block_kb") && e.contains("--file-block-size"),
        "{e}"
    );
    let e = err("sysbench.rw_ratio_pct", "-150");
    assert!(e.contains("sysbench.rw_ratio_pct") && e.contains("negative"), "{e}");
    let e = err("sysbench.files", "0");
    assert!(e.contains("sysbench.files") && e.contains("--file-num"), "{e}");
    // Sizes the model checks when the run starts: more files than the 250 GB disk holds, a
    // block larger than a file.
    let simulate = |k: &str, v: &str| {
        let e = latlab_exp::vary(&exp, "cli", k, v).unwrap();
        latlab_sim::simulate(&e.runs[0].config, &mut |_, _| {})
            .err()
            .unwrap()
            .to_string()
    };
    let e = simulate("sysbench.file_mb", "500000");
    assert!(e.contains("sysbench.file_mb") && e.contains("250 GB"), "{e}");
    let e = simulate("sysbench.file_mb", "1");
    assert!(e.contains("sysbench.block_kb") && e.contains("8192 bytes"), "{e}");
    // A run's own workload must be a built-in one.
    let text = EXP.replace("max_seconds = 120", "max_seconds = 120\nworkload = \"sysbnech\"");
    let e = latlab_exp::load("t.toml", &text).unwrap_err().to_string();
    assert!(
        e.contains("sysbnech") && e.contains("sysbench-rndrw") && e.contains("t.toml:"),
        "{e}"
    );
}
