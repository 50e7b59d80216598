//! The lived-in desktop against a freshly booted one (seed 000's script, stock 2.4.18): the
//! lived-in box's first reclaim meets the desktop's anonymous pages at the inactive list's
//! tail, swaps and prunes the dcache, and by default that happens in the box's history,
//! before the run; the fresh box has no memory pressure at all.

fn first_seconds(experiment: &str, secs: u64) -> latlab_core::RunResult {
    first_seconds_at(experiment, secs, None, true)
}

fn first_seconds_at(experiment: &str, secs: u64, rtc_hz: Option<u32>, history: bool) -> latlab_core::RunResult {
    let exp = latlab_exp::builtin_experiment(experiment).unwrap();
    let mut cfg = exp.runs[0].config.clone();
    if let Some(hz) = rtc_hz {
        cfg.rtc_hz = hz;
    }
    cfg.workload.preload.reclaimed_before = history;
    cfg.min_duration_ns = 0;
    cfg.max_duration_ns = secs * 1_000_000_000;
    latlab_sim::simulate(&cfg, &mut |_, _| {}).unwrap().0
}

#[test]
fn the_lived_in_desktops_first_reclaim_swaps_and_prunes_the_dcache() {
    // The cache filled in place: the box's first reclaim falls in the run. Also when
    // realfeel's faster interrupts cut shrink_cache at its rescheduling point more often:
    // the call goes on with what is left of its budgets, so it still meets max_mapped.
    for hz in [2048, 8192] {
        let r = first_seconds_at("mini-ll", 5, Some(hz), false);
        assert!(r.counters["reclaim_calls"] > 0);
        assert!(r.counters["pages_swapped_out"] > 0, "{hz} Hz: {:?}", r.counters);
        // prune_dcache's walk over the referenced dentries holds the CPU for tens of ms.
        let prune = r.counters.get("worst_us:prune_dcache").copied().unwrap_or(0);
        assert!(prune > 10_000, "{hz} Hz: {:?}", r.counters);
        // shrink_caches does not count what the dcache and icache shrinkers free, so a call
        // whose shrink_cache keeps meeting the desktop's pages goes down to priority 1.
        assert!(
            r.counters["reclaim_calls_to_priority_1"] > 0,
            "{hz} Hz: {:?}",
            r.counters
        );
    }
}

#[test]
fn a_box_that_has_reclaimed_before_starts_the_run_past_its_first_reclaim() {
    let r = first_seconds("mini-ll", 5);
    // The history read RAM's worth of old files: the first reclaim call went down to
    // priority 1, pruning the dcache, and the desktop's pages met swap_out.
    assert!(r.counters["history_ms"] > 10_000, "{:?}", r.counters);
    assert!(r.counters["history_reclaim_calls"] > 100, "{:?}", r.counters);
    assert!(
        r.counters["history_reclaim_calls_to_priority_1"] > 0,
        "{:?}",
        r.counters
    );
    assert!(r.counters["history_pages_swapped_out"] > 0, "{:?}", r.counters);
    assert_eq!(r.meta.settings["preload.reclaimed_before"], "true");
    // The run is reported from its own start (the history took longer than the run), and
    // its first seconds meet no
    // referenced dentries to walk.
    assert!(r.meta.duration_ns < 6_000_000_000, "{}", r.meta.duration_ns);
    assert!(
        r.counters.get("worst_us:prune_dcache").copied().unwrap_or(0) < 10_000,
        "{:?}",
        r.counters
    );
    let s = r.stream("realfeel").expect("realfeel");
    assert!(s.worst.iter().all(|w| w.at_ns <= r.meta.duration_ns));
}

#[test]
fn updatedb_after_the_fill_walks_every_name_in_the_history() {
    let run = |updatedb: bool| {
        let exp = latlab_exp::builtin_experiment("mini-ll").unwrap();
        let mut cfg = exp.runs[0].config.clone();
        cfg.workload.preload.updatedb_after = updatedb;
        cfg.min_duration_ns = 0;
        cfg.max_duration_ns = 1_000_000_000;
        latlab_sim::simulate(&cfg, &mut |_, _| {}).unwrap().0
    };
    let (without, with) = (run(false), run(true));
    assert_eq!(with.meta.settings["preload.updatedb_after"], "true");
    // One inode-table block read per 32 names the first night, none the second (the
    // dentries and inodes are cached by then): 150,000 names, 4,688 blocks.
    let extra = with.counters["history_disk_blocks_read"] - without.counters["history_disk_blocks_read"];
    assert_eq!(extra, 150_000_u64.div_ceil(32), "{:?}", with.counters);
    // Two nights of lstat() calls.
    let calls = with.counters["history_syscalls"] - without.counters["history_syscalls"];
    assert!(calls >= 300_000, "{calls}");
}

#[test]
fn a_freshly_booted_box_does_not_reclaim_in_the_same_time() {
    let r = first_seconds("mini-ll-fresh-boot", 5);
    assert_eq!(r.counters["reclaim_calls"], 0);
    assert_eq!(r.counters["pages_swapped_out"], 0);
    assert_eq!(r.counters["reclaim_calls_to_priority_1"], 0);
    assert!(!r.counters.contains_key("worst_us:prune_dcache"));
}

#[test]
fn a_fragmented_swap_map_makes_scan_swap_map_walk_it() {
    // The low-latency kernel (it has no point in scan_swap_map): the first new-cluster search
    // walks the fragmented region the swap history left, ~20 ns a slot on the PIII-850.
    let exp = latlab_exp::builtin_experiment("mini-ll").unwrap();
    let ll = exp
        .runs
        .iter()
        .find(|r| r.config.variant.name == "2.4.18+low-latency")
        .unwrap();
    let scan_us = |swapped_mib: u64| {
        let mut cfg = ll.config.clone();
        cfg.workload.preload.swapped_mib = swapped_mib;
        // The first reclaim in the run, not in the box's history.
        cfg.workload.preload.reclaimed_before = false;
        cfg.min_duration_ns = 0;
        cfg.max_duration_ns = 5_000_000_000;
        let r = latlab_sim::simulate(&cfg, &mut |_, _| {}).unwrap().0;
        assert!(r.counters["pages_swapped_out"] > 0, "{:?}", r.counters);
        r.counters.get("worst_us:scan_swap_map").copied().unwrap_or(0)
    };
    assert_eq!(scan_us(0), 0, "an empty map is searched in microseconds");
    let (a, b) = (scan_us(150), scan_us(300));
    // 150 MiB out, as much freed around it: 76,800 slots (1.5 ms); twice that for 300 MiB.
    // The longest search of the first seconds may start a little way into the region, so
    // the walks are at most the region and roughly double with it.
    assert!((1_000..2_000).contains(&a), "{a}");
    assert!((2_000..3_300).contains(&b), "{b}");
    assert!((1_800..2_500).contains(&(b * 1000 / a)), "{a} {b}");
}
