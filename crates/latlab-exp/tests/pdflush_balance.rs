//! Seed 001's kernels in the model: 2.6.17's writer throttling itself in
//! balance_dirty_pages, Ananiev's patch leaving the writing to pdflush, 3.2's IO-less pauses;
//! the `pdflush-balance` experiment's runs; bad input named.

use latlab_core::RunResult;

/// A smaller box's worth of the seed's run: the dirty limit low enough for a 96 MB file
/// to cross it (the mechanism is the same at 400 MB; the test runs in a fraction of the time).
fn run(variant: &str, dirty_ratio: &str, seed: u64) -> RunResult {
    let exp = latlab_exp::builtin_experiment("pdflush-balance").unwrap();
    let exp = latlab_exp::vary(&exp, "t", "iozone.file_mb", "96").unwrap();
    let exp = latlab_exp::vary(&exp, "t", "dirty_ratio", dirty_ratio).unwrap();
    let exp = latlab_exp::vary(&exp, "t", "dirty_background_ratio", "2").unwrap();
    let run = exp.runs.iter().find(|r| r.config.variant.name == variant).unwrap();
    let mut cfg = run.config.clone();
    cfg.seed = seed;
    latlab_sim::simulate(&cfg, &mut |_, _| {}).unwrap().0
}

fn slowest_note(r: &RunResult) -> String {
    r.stream("write").unwrap().worst[0].attribution.note.clone()
}

#[test]
fn the_experiment_has_both_kernels_at_both_sizes_and_no_realfeel() {
    let exp = latlab_exp::builtin_experiment("pdflush-balance").unwrap();
    let rows: Vec<(String, Option<String>, Option<String>)> = exp
        .runs
        .iter()
        .map(|r| (r.config.variant.name.clone(), r.case.clone(), r.stream()))
        .collect();
    // iozone's rows and sysbench's.
    for v in ["2.6.17", "2.6.17+pdflush-balance", "3.2+io-less"] {
        for c in ["50%", "120%"] {
            for s in [None, Some("sysbench-rndrw".to_string())] {
                assert!(
                    rows.contains(&(v.into(), Some(c.into()), s.clone())),
                    "{v} {c} {s:?}: {rows:?}"
                );
            }
        }
    }
    for r in &exp.runs {
        assert!(!r.config.realfeel, "the seed timed the writer alone");
        let mb = match r.config.workload.commands[0] {
            latlab_sim::CommandSpec::Iozone { file_mb, .. } => file_mb,
            latlab_sim::CommandSpec::Sysbench(f) => f.file_mb,
            _ => panic!("iozone or sysbench"),
        };
        // 50 % and 120 % of the P4's 1 GiB.
        assert_eq!(mb, if r.case.as_deref() == Some("50%") { 512 } else { 1228 });
    }
    let stock = &exp.runs[0].published;
    assert_eq!(stock.slowest_us.len(), 10);
    assert_eq!(stock.over_100ms, Some(9));
}

#[test]
fn the_stock_writer_writes_and_waits_itself_and_the_patched_one_never_writes() {
    let stock = run("2.6.17", "5", 1);
    // balance_dirty_pages ran writeback_inodes in the writer's context.
    assert!(stock.counters["pages_written_by_writers"] > 0, "{:?}", stock.counters);
    let note = slowest_note(&stock);
    assert!(
        note.contains("mpage_writepages") || note.contains("blk_congestion_wait"),
        "{note}"
    );
    let patched = run("2.6.17+pdflush-balance", "5", 1);
    assert_eq!(patched.counters["pages_written_by_writers"], 0);
    assert!(patched.counters["balance_dirty_pages_calls"] > 0);
    // Its only wait is blk_congestion_wait(HZ/50), 20 ms: nothing near 100 ms.
    assert_eq!(patched.counters["writes_over_100ms"], 0, "{}", slowest_note(&patched));
    assert!(patched.stream("write").unwrap().hist.max() < stock.stream("write").unwrap().hist.max());
}

#[test]
fn the_io_less_writer_only_sleeps_pauses_of_at_most_200_ms() {
    let r = run("3.2+io-less", "5", 1);
    assert_eq!(r.counters["pages_written_by_writers"], 0);
    assert!(r.counters["writer_throttle_sleeps"] > 0);
    let w = &r.stream("write").unwrap().worst[0];
    assert!(
        w.attribution.note.contains("balance_dirty_pages pause"),
        "{}",
        w.attribution.note
    );
    // MAX_PAUSE 200 ms, rounded up to a tick, plus the writer's own few microseconds and the
    // flusher running ahead of it.
    assert!(w.latency_ns < 230_000_000, "{}", w.latency_ns);
}

/// The built-in experiment's run of `variant` at `case`, as built.
fn built(variant: &str, case: &str) -> RunResult {
    let exp = latlab_exp::builtin_experiment("pdflush-balance").unwrap();
    let run = exp
        .runs
        .iter()
        .find(|r| r.config.variant.name == variant && r.case.as_deref() == Some(case))
        .unwrap();
    latlab_sim::simulate(&run.config, &mut |_, _| {}).unwrap().0
}

#[test]
fn a_write_entering_a_new_block_group_reads_its_bitmap_and_is_among_the_slowest() {
    // The 512 MB file starts at block 16,384, half-way into group 0: it fills groups 0-4.
    // Where its allocation enters each (ext3_balloc's layout: 16,368 data blocks left in
    // group 0, then 31,192 in backup group 1, 32,217 in group 2, 31,192 in backup group 3).
    let crossings_kb = [0u64, 65_468, 190_236, 319_104, 443_872];
    for variant in ["2.6.17", "2.6.17+pdflush-balance"] {
        let r = built(variant, "50%");
        assert_eq!(r.counters["ext3_bitmap_reads"], 5, "{variant}: {:?}", r.counters);
        assert!(r.counters["as_reads"] >= 5, "{variant}: the reads went through AS");
        let w = r.stream("write").unwrap();
        for kb in crossings_kb {
            let s = w
                .worst
                .iter()
                .find(|s| s.tag["offset_kb"] == kb.to_string())
                .unwrap_or_else(|| panic!("{variant}: the write at {kb} KB is not among the slowest"));
            // The writer slept on the bitmap's READ; the patch leaves it under 100 ms.
            assert!(s.attribution.note.contains("I/O"), "{}", s.attribution.note);
            assert!(s.latency_ns > 3_000_000, "{variant} {kb} KB: {}", s.latency_ns);
            if variant != "2.6.17" {
                assert!(s.latency_ns < 100_000_000, "{kb} KB: {}", s.latency_ns);
            }
        }
    }
}

#[test]
fn same_seed_same_bytes() {
    let a = serde_json::to_string(&run("2.6.17", "5", 3)).unwrap();
    let b = serde_json::to_string(&run("2.6.17", "5", 3)).unwrap();
    assert_eq!(a, b);
}

#[test]
fn bad_ratios_a_file_beyond_the_disk_and_a_2_4_kernel_are_refused_by_name() {
    let exp = latlab_exp::builtin_experiment("pdflush-balance").unwrap();
    let e = latlab_exp::vary(&exp, "cli", "dirty_ratio", "101")
        .unwrap_err()
        .to_string();
    assert!(e.contains("dirty_ratio") && e.contains("0..=100"), "{e}");
    let e = latlab_exp::vary(&exp, "cli", "dirty_background_ratio", "-1")
        .unwrap_err()
        .to_string();
    assert!(e.contains("dirty_background_ratio"), "{e}");
    // A 2.4 kernel has no vm.dirty_* sysctls.
    let seed000 = latlab_exp::builtin_experiment("mini-ll").unwrap();
    let e = latlab_exp::vary(&seed000, "cli", "dirty_ratio", "20")
        .unwrap_err()
        .to_string();
    assert!(e.contains("bdflush"), "{e}");
    // A file larger than the 250 GB disk.
    let big = latlab_exp::vary(&exp, "cli", "iozone.file_mb", "500000").unwrap();
    let e = latlab_sim::simulate(&big.runs[0].config, &mut |_, _| {})
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("iozone.file_mb") && e.contains("250 GB"), "{e}");
    // A variant file's ratio out of range.
    let text = latlab_exp::builtin::VARIANTS
        .iter()
        .find(|(n, _)| *n == "2.6.17")
        .unwrap()
        .1
        .replace("dirty_ratio = 40", "dirty_ratio = 140");
    let v: latlab_sim::Variant = toml::from_str(&text).unwrap();
    let (field, why) = v.validate().unwrap_err();
    assert_eq!(field, "dirty.dirty_ratio");
    assert!(why.contains("0..=100"), "{why}");
    // An I/O scheduler on a 2.4 kernel (whose queue the model keeps as a FIFO).
    let text = latlab_exp::builtin::VARIANTS
        .iter()
        .find(|(n, _)| *n == "2.4.18")
        .unwrap()
        .1
        .to_string()
        + "elevator = \"anticipatory\"\n";
    let v: latlab_sim::Variant = toml::from_str(&text).unwrap();
    assert_eq!(v.validate().unwrap_err().0, "elevator");
}
