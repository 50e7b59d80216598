//! How long the script ran is reported apart from how long the run went on (a run idles
//! after its script until it is as long as the seed's run was), and dbench's clients run
//! their whole trace.

use latlab_sim::CommandSpec;

fn run(commands: Vec<CommandSpec>, min_s: u64, max_s: u64) -> latlab_core::RunResult {
    let exp = latlab_exp::builtin_experiment("mini-ll-fresh-boot").unwrap();
    let mut cfg = exp.runs[0].config.clone();
    cfg.workload.commands = commands;
    cfg.min_duration_ns = min_s * 1_000_000_000;
    cfg.max_duration_ns = max_s * 1_000_000_000;
    latlab_sim::simulate(&cfg, &mut |_, _| {}).unwrap().0
}

#[test]
fn the_script_length_is_counted_apart_from_the_idle_tail() {
    let r = run(vec![CommandSpec::Idle { ms: 1500 }, CommandSpec::Sync], 3, 10);
    let ms = r.counters["workload_ms"];
    assert!((1500..1600).contains(&ms), "{ms}");
    assert!(r.meta.duration_ns >= 3_000_000_000, "{}", r.meta.duration_ns);
    assert_eq!(r.meta.settings["workload_finished"], "true");
}

#[test]
fn a_script_cut_by_the_hard_stop_has_no_length() {
    let r = run(vec![CommandSpec::Idle { ms: 5000 }], 1, 2);
    assert!(!r.counters.contains_key("workload_ms"), "{:?}", r.counters);
    assert_eq!(r.meta.settings["workload_finished"], "false");
}

#[test]
fn a_dbench_client_replays_the_whole_trace() {
    let r = run(
        vec![CommandSpec::Dbench {
            clients: 2,
            group: "c".into(),
        }],
        0,
        600,
    );
    assert_eq!(r.meta.settings["workload_finished"], "true");
    // Per client ~74,000 writes of ~1.4 KB (100 MB), a read per nine writes, ~1,000 files
    // made and deleted, ~2,600 opens of its long-lived files.
    let calls = r.counters["syscalls"];
    assert!((160_000..200_000).contains(&calls), "{calls}");
}
