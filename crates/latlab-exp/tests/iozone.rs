//! iozone -i 0 -r 4 -Q in the model (seed 001's benchmark): every write(2) timed into the
//! `write` stream, the ten slowest kept with their offsets and explanation, each pass's
//! throughput as iozone computes it; the same seed gives the same bytes.

use latlab_core::RunResult;

const EXP: &str = r#"
name = "iozone-test"
title = "iozone"
seed_file = "001_1a6962ebe1945cca.txt"
machine = "p4-2006"
workload = "iozone"
seed = 1
table = "max-latency"

[[run]]
label = "2.4.18"
variant = "2.4.18"
# 2.4's scheduler is modelled on one CPU: boot one of the P4 HT's two.
maxcpus = 1
max_seconds = 60
"#;

fn run(file_mb: &str, seed: u64) -> RunResult {
    let exp = latlab_exp::load("t.toml", EXP).unwrap();
    let exp = latlab_exp::vary(&exp, "t", "iozone.file_mb", file_mb).unwrap();
    let mut cfg = exp.runs[0].config.clone();
    cfg.seed = seed;
    latlab_sim::simulate(&cfg, &mut |_, _| {}).unwrap().0
}

#[test]
fn every_record_is_timed_and_the_slowest_ten_explained() {
    let r = run("64", 1);
    let s = r.streams.iter().find(|s| s.name == "write").expect("a write stream");
    // 64 MB in 4 KB records, written (wol.dat) and rewritten (rwol.dat).
    assert_eq!(s.hist.count(), 64 * 256);
    let rw = r
        .streams
        .iter()
        .find(|s| s.name == "rewrite")
        .expect("a rewrite stream");
    assert_eq!(rw.hist.count(), 64 * 256);
    assert_eq!(s.worst.len(), 10);
    assert!(s.worst.windows(2).all(|w| w[0].latency_ns >= w[1].latency_ns));
    for w in &s.worst {
        let kb: u64 = w.tag["offset_kb"].parse().unwrap();
        assert!(kb < 64 * 1024 && kb.is_multiple_of(4), "{kb}");
        assert_eq!(w.tag["record_bytes"], "4096");
        assert!(
            w.attribution.note.contains("the writer's own time"),
            "{}",
            w.attribution.note
        );
        // The parts never exceed the whole.
        let a = &w.attribution;
        assert!(a.wakee_kernel_ns + a.ran_ahead_ns + a.sched_ns + a.blocked_ns <= w.latency_ns);
    }
    // The write pass appends a new file at page-cache speed until the dirty limits throttle
    // it: above the disk's 60 MB/s (iozone does not time the fsync after the loop), and far
    // from infinite.
    let w = r.throughput["write_MBps"];
    assert!(w > 30.0 && w < 5000.0, "{w}");
    assert!(r.throughput.contains_key("rewrite_MBps"));
    assert!(r.counters.contains_key("writes_over_100ms"));
}

#[test]
fn same_seed_same_bytes_and_a_bad_record_size_is_refused() {
    let a = serde_json::to_string(&run("16", 7)).unwrap();
    let b = serde_json::to_string(&run("16", 7)).unwrap();
    assert_eq!(a, b);
    let exp = latlab_exp::load("t.toml", EXP).unwrap();
    for (v, want) in [("0", "4..=16384"), ("6", "whole 4 KiB pages")] {
        let e = latlab_exp::vary(&exp, "t", "iozone.record_kb", v)
            .unwrap_err()
            .to_string();
        assert!(e.contains("iozone.record_kb") && e.contains(want), "{e}");
    }
}
