//! Every scenario of the suite (`scenarios/`, TOML and rt-app JSON) reads, and the model runs
//! it: a short run on the 2-CPU built-in machine under 6.18's EEVDF gives the scenario's
//! measured streams, each with samples.

use latlab_exp::{machine, no_files, scenario, variant};
use std::path::Path;

#[test]
fn every_scenario_reads_and_the_model_runs_it() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| matches!(p.extension().and_then(|e| e.to_str()), Some("toml" | "json")))
        .collect();
    files.sort();
    assert!(files.len() >= 12, "the suite: {files:?}");
    let json = files
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .count();
    assert!(json >= 2, "rt-app files in the suite: {json}");
    let m = machine("test", "p4-2006", 0, &no_files).unwrap();
    assert_eq!(m.cpus, 2);
    let v = variant("test", "6.18-eevdf-none", 0, &no_files).unwrap();
    for f in &files {
        let s = latlab_scenario::load(f).unwrap_or_else(|e| panic!("{e}"));
        assert!(!s.measure.is_empty(), "{}: measures nothing", f.display());
        assert!(
            s.duration_ns.is_some_and(|d| d <= 10_000_000_000),
            "{}: the suite's scenarios are short",
            f.display()
        );
        let cfg = scenario::config(&s, m.clone(), v.clone(), Some(200_000_000), 1).unwrap();
        let (mut r, _) = latlab_sim::simulate(&cfg, &mut |_, _| {})
            .unwrap_or_else(|e| panic!("{}: the model refused it: {e}", f.display()));
        scenario::keep_measured(&s, &mut r);
        let names: Vec<&str> = r.streams.iter().map(|x| x.name.as_str()).collect();
        assert_eq!(names, s.measure, "{}", f.display());
        for x in &r.streams {
            assert!(x.hist.count() > 0, "{}: stream {} has no sample", f.display(), x.name);
        }
    }
}

#[test]
/// p4-2006 has two CPUs: a task pinned to CPU 7 cannot run.
fn a_scenario_the_model_cannot_run_is_refused_naming_it_and_the_field() {
    let s = latlab_scenario::parse_toml(
        "pinned.toml",
        "name = \"pinned\"\nduration_s = 1\n[[task]]\ncomm = \"t\"\naffinity = [7]\nsteps = [{ periodic = { period_us = 1000 } }]\n",
    )
    .unwrap();
    let m = machine("test", "p4-2006", 0, &no_files).unwrap();
    let v = variant("test", "6.18-eevdf-none", 0, &no_files).unwrap();
    let e = latlab_sim::simulate(&scenario::config(&s, m, v, None, 1).unwrap(), &mut |_, _| {})
        .unwrap_err()
        .to_string();
    assert!(e.contains("pinned") && e.contains("task.affinity"), "{e}");
}

/// The model runs `count_per_cpu` as that many copies per CPU of its machine file
/// (`hogs-2pc`: 2 per CPU), and refuses, naming the file and field, more than a task may have.
#[test]
fn copies_per_cpu_follow_the_machine_files_cpus() {
    let s =
        latlab_scenario::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/hogs-2pc.toml")).unwrap();
    let v = variant("test", "6.18-eevdf-none", 0, &no_files).unwrap();
    let mut m = machine("test", "p4-2006", 0, &no_files).unwrap();
    let hogs = |m: &latlab_sim::MachineProfile| {
        let cfg = scenario::config(&s, m.clone(), v.clone(), None, 1).unwrap();
        let t = cfg.workload.tasks.iter().find(|t| t.comm == "hog").unwrap();
        (t.count, t.count_per_cpu)
    };
    assert_eq!(hogs(&m), (4, None));
    m.cpus = 64;
    assert_eq!(hogs(&m), (128, None));
    m.cpus = 2001;
    let e = scenario::config(&s, m, v, None, 1).unwrap_err().to_string();
    assert!(
        e.contains("hogs-2pc.toml:") && e.contains("field `task.count_per_cpu`") && e.contains("4002 copies"),
        "{e}"
    );
}
