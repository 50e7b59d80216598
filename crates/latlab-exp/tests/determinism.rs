//! Same configuration and seed: byte-identical results. Another seed: a different run.

/// Run `idx` of built-in experiment `name`, stopped after `secs` simulated seconds.
fn config(name: &str, idx: usize, secs: u64) -> latlab_sim::SimConfig {
    let exp = latlab_exp::builtin_experiment(name).unwrap();
    let mut cfg = exp.runs[idx].config.clone();
    cfg.min_duration_ns = 0;
    cfg.max_duration_ns = secs * 1_000_000_000;
    cfg
}

fn short(variant_idx: usize, seed: u64) -> latlab_sim::SimConfig {
    latlab_sim::SimConfig {
        seed,
        ..config("mini-ll", variant_idx, 15)
    }
}

fn json(cfg: &latlab_sim::SimConfig) -> String {
    let (r, _) = latlab_sim::simulate(cfg, &mut |_, _| {}).unwrap();
    serde_json::to_string(&r).unwrap()
}

#[test]
fn same_seed_same_bytes() {
    for idx in [0, 1] {
        let a = json(&short(idx, 42));
        let b = json(&short(idx, 42));
        assert_eq!(a, b, "run {idx} is not deterministic");
    }
}

#[test]
fn another_seed_another_run() {
    assert_ne!(json(&short(0, 1)), json(&short(0, 2)));
}

#[test]
fn results_are_consistent() {
    let (r, stats) = latlab_sim::simulate(&short(0, 3), &mut |_, _| {}).unwrap();
    let s = r.stream("realfeel").expect("realfeel stream");
    let m = s.hist.summary();
    // 15 s at 2048 Hz: one sample per read; interrupts folded into a read count as missed.
    assert!(
        m.count + s.missed >= 30_000 && m.count + s.missed <= 30_720,
        "{} + {}",
        m.count,
        s.missed
    );
    assert!(m.min_ns <= m.p50_ns && m.p50_ns <= m.p99_ns && m.p99_ns <= m.max_ns);
    assert!(stats.events > m.count);
    // The worst sample's decomposition adds up to its latency.
    let w = &s.worst[0];
    let a = &w.attribution;
    let parts = a.irq_off_ns + a.handler_ns + a.preempt_wait_ns + a.ran_ahead_ns + a.sched_ns + a.wakee_kernel_ns;
    assert_eq!(parts, w.latency_ns, "{a:?}");
}

/// Seed 002's stress-kernel load (six test loops, NFS over loopback, children spawned and
/// reaped): the same seed gives the same bytes here too.
#[test]
fn stress_kernel_same_seed_same_bytes() {
    let cfg = config("preempt-vs-lowlatency", 1, 30);
    let (r, _) = latlab_sim::simulate(&cfg, &mut |_, _| {}).unwrap();
    assert_eq!(serde_json::to_string(&r).unwrap(), json(&cfg));
    // The shell, ctcs's six test loops and their children (cc1s, crashme) have run.
    assert!(r.counters["tasks_created"] > 10, "{:?}", r.counters);
}

/// ctcs's loops stop when the main test (NFS-COMPILE) has done its runs: with none to do,
/// the other five stop at their next step and the load ends at once.
#[test]
fn stress_kernel_loops_stop_with_the_main_test() {
    let mut cfg = config("preempt-vs-lowlatency", 0, 600);
    cfg.workload.commands = vec![latlab_sim::CommandSpec::StressKernel { runs: 0 }];
    let (r, _) = latlab_sim::simulate(&cfg, &mut |_, _| {}).unwrap();
    assert!(r.counters["workload_ms"] < 1_000, "{:?}", r.counters);
    // With one run the load lasts as long as NFS-COMPILE's copy, build and removal.
    cfg.workload.commands = vec![latlab_sim::CommandSpec::StressKernel { runs: 1 }];
    cfg.max_duration_ns = 60_000_000_000;
    let (r, _) = latlab_sim::simulate(&cfg, &mut |_, _| {}).unwrap();
    assert!(
        !r.counters.contains_key("workload_ms"),
        "done within a minute: {:?}",
        r.counters
    );
}
