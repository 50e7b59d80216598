//! End-to-end: the model's per-CPU runqueues (CFS and EEVDF on several CPUs) through
//! `latlab run`, on the short SMP bench (crates/latlab-exp/benches/short/smp.toml: a FIFO
//! periodic thread beside 64 hogs on 6.18 EEVDF).

mod common;

use common::{latlab, Scratch};

const SMP: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../latlab-exp/benches/short/smp.toml");

/// `latlab run` of the SMP bench on `cpus` CPUs with `extra` arguments; its stdout.
fn run(cpus: u32, extra: &[&str]) -> Vec<u8> {
    let vary = format!("machine.cpus={cpus}");
    let mut args = vec!["run", SMP, "--vary", &vary];
    args.extend_from_slice(extra);
    let out = latlab(&args);
    assert!(out.status.success(), "{cpus}: {}", String::from_utf8_lossy(&out.stderr));
    out.stdout
}

/// The run's result (RunResult JSON) on `cpus` CPUs.
fn result(cpus: u32) -> serde_json::Value {
    let dir = Scratch::new(&format!("smp-{cpus}"));
    let out = dir.path("out");
    run(cpus, &["--out", &out]);
    let f = std::fs::read_dir(&out).unwrap().next().unwrap().unwrap().path();
    serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap()
}

#[test]
fn smp_runs_repeat_themselves_on_16_and_256_cpus() {
    for cpus in [16, 256] {
        let a = run(cpus, &["--json", "--seed", "5"]);
        assert_eq!(a, run(cpus, &["--json", "--seed", "5"]), "{cpus} CPUs");
    }
}

#[test]
fn hogs_spread_over_every_cpu_up_to_256() {
    // 64 hogs on 16 CPUs: none ever idles after the start.
    let r = result(16);
    assert_eq!(r["counters"]["idle_ms"], 0, "{}", r["counters"]);
    // 65 tasks on 256 CPUs for 2 s: about 191 CPUs idle the whole time, every task on a
    // CPU of its own (stacked tasks would leave more idle).
    let r = result(256);
    let idle = r["counters"]["idle_ms"].as_u64().unwrap();
    assert!((190 * 2000..=192 * 2000).contains(&idle), "{idle}");
    // The periodic thread woke every period and ran at once.
    let s = &r["streams"][0]["hist"];
    assert!(s["count"].as_u64().unwrap() >= 1990, "{s}");
    assert!(s["max_ns"].as_u64().unwrap() < 100_000, "{s}");
}

/// An experiment of the SMP bench's tasks (copied to `w.toml`, `edit` applied) on variant
/// `variant`, on the two-CPU p4-2006 (an experiment file's tasks are checked against its
/// machine's own CPUs, before `--vary machine.cpus`).
fn experiment(dir: &Scratch, variant: &str, edit: Option<(&str, &str)>) -> String {
    let mut tasks = std::fs::read_to_string(SMP.replace("smp.toml", "smp-tasks.toml")).unwrap();
    if let Some((from, to)) = edit {
        tasks = tasks.replace(from, to);
    }
    dir.file("w.toml", &tasks);
    dir.file(
        "e.toml",
        &format!(
            "name = \"e\"\ntitle = \"t\"\nmachine = \"p4-2006\"\nworkload = \"./w.toml\"\ntable = \"max-latency\"\n[[run]]\nlabel = \"r\"\nvariant = \"{variant}\"\nduration_s = 1\n"
        ),
    )
}

#[test]
fn affinity_and_cpu_limits_depend_on_the_runqueues() {
    let dir = Scratch::new("smp-affinity");
    let pin = Some(("priority = 90", "priority = 90\naffinity = [1]"));
    // A narrower affinity: per-CPU runqueues take it...
    let e = experiment(&dir, "6.18-eevdf-none", pin);
    let out = latlab(&["run", &e, "--vary", "machine.cpus=4"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // ...a shared runqueue (O(1)) refuses it, naming the field.
    let e = experiment(&dir, "2.6.17", pin);
    let out = latlab(&["run", &e, "--vary", "machine.cpus=4"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("task.affinity") && err.contains("share one runqueue"),
        "{err}"
    );
    // A shared runqueue runs on at most 8 CPUs; per-CPU ones on 256, not more.
    let e = experiment(&dir, "2.6.17", None);
    let out = latlab(&["run", &e, "--vary", "machine.cpus=16"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("`cpus`") && err.contains("up to 8"),
        "{err}"
    );
    let e = experiment(&dir, "6.18-eevdf-none", None);
    let out = latlab(&["run", &e, "--vary", "machine.cpus=257"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("cpus") && err.contains("256"),
        "{err}"
    );
}
