//! End-to-end: `latlab reproduce` and `latlab run` as a user runs them.

mod common;

use common::{latlab, Scratch};

#[test]
fn reproduce_json_has_the_documented_rows() {
    let out = latlab(&["reproduce", "preempt-vs-lowlatency", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    assert_eq!(v["experiment"], "preempt-vs-lowlatency");
    let rows = v["rows"].as_array().unwrap();
    let max: Vec<&serde_json::Value> = rows.iter().filter(|r| r["figure"] == "max_latency").collect();
    assert_eq!(max.len(), 3);
    for r in &max {
        assert_eq!(r["unit"], "ms");
        assert_eq!(r["source"], "002_73612da962bd36dd.txt");
        assert!(r["model"].as_f64().unwrap() > 0.0);
        assert!(r["published"].is_number());
        assert!(r["published_range"].is_null());
        assert!(r["variant"].is_string());
        // Each figure's run, bar and verdicts.
        assert!(r["run"].is_string());
        assert_eq!(r["bar"], serde_json::json!({"within": 1.5}));
        assert!(r["inside"].is_boolean() && r["published_in_band"].is_boolean(), "{r}");
    }
    // The counts of the verdicts, as the table's last line says them.
    let judged = rows.iter().filter(|r| r["inside"].is_boolean()).count();
    let inside = rows.iter().filter(|r| r["inside"] == true).count();
    assert_eq!(v["summary"]["judged"], judged);
    assert_eq!(v["summary"]["inside"], inside);
    assert_eq!(v["seed"], "002");
    let fig = |v: &str, f: &str| {
        rows.iter().find(|r| r["variant"] == v && r["figure"] == f).unwrap()["model"]
            .as_f64()
            .unwrap()
    };
    // Kernel preemption cuts the stretches no lock holds, which are most of the vanilla
    // kernel's long ones: its 99th percentile falls. (Its worst case need not: the two runs'
    // timings differ, and with them how much a lock-held walk has to do.) The low-latency
    // points cut what preemption cannot.
    assert!(fig("2.4.17+preempt", "p99_latency") < 0.2 * fig("2.4.17", "p99_latency"));
    assert!(fig("2.4.17+preempt", "max_latency") > 10.0 * fig("2.4.17+low-latency", "max_latency"));
}

#[test]
fn reproduce_mini_ll_prints_the_seed_table_and_bucket_rows() {
    let out = latlab(&["reproduce", "mini-ll", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = v["rows"].as_array().unwrap();
    let preempt = rows
        .iter()
        .find(|r| r["variant"] == "2.4.18+rml-preempt" && r["figure"] == "max_latency")
        .unwrap();
    assert!(preempt["published"].is_null());
    assert_eq!(preempt["published_range"], serde_json::json!([128.0, 256.0]));
    let samples = rows
        .iter()
        .find(|r| r["variant"] == "2.4.18+rml-preempt" && r["figure"] == "samples")
        .unwrap();
    // The run lasts as long as the seed's did: ~5.0e6 samples at 2048 Hz. The count sets the
    // run's length: published beside the model's, not judged.
    assert!(samples["model"].as_f64().unwrap() > 4.5e6);
    assert!(samples["published"].is_number() && samples["inside"].is_null() && samples["bar"].is_null());
    // A bucket's bar: within 2x of its edges.
    assert_eq!(preempt["bar"], serde_json::json!({"bucket_within": 2.0}));
    assert_eq!(preempt["inside"], true);
}

/// Several experiments: each table ends with its count, and a summary table closes the
/// report with each experiment's seed and counts.
#[test]
fn reproduce_of_several_experiments_ends_with_their_verdicts() {
    let out = latlab(&["reproduce", "sched-cost", "cfs-granularity"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("no published figures (a what-if)")
            && text.contains("published figures inside the bar (the bar: max_latency within 1.5x; avg_latency within 2x; missed_events equal)"),
        "{text}"
    );
    let summary = text
        .split("\nSummary: published figures inside the bar")
        .nth(1)
        .expect(&text);
    let cells = |name: &str| {
        summary
            .lines()
            .find(|l| l.contains(name))
            .unwrap_or_else(|| panic!("{name}: {summary}"))
            .split_whitespace()
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    assert_eq!(cells("sched-cost"), ["002", "sched-cost", "-", "-"]);
    let cfs = cells("cfs-granularity");
    assert_eq!(cfs[..2], ["004", "cfs-granularity"]);
    assert_eq!((cfs[3].as_str(), cfs[4].as_str()), ("of", "12"), "{summary}");
    // One notation: no mark of the old ones.
    assert!(
        !text.contains(" ok ") && !text.contains("OFF") && !text.contains("x!"),
        "{text}"
    );
    // One experiment: no summary table.
    let one = latlab(&["reproduce", "sched-cost"]);
    assert!(!String::from_utf8_lossy(&one.stdout).contains("Summary:"));
}

#[test]
fn reproduce_text_reads_like_the_seed() {
    let out = latlab(&["reproduce", "preempt-vs-lowlatency", "--trace"]);
    assert!(out.status.success());
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(s.contains("Max. latency"), "{s}");
    assert!(s.contains("232.7 ms"), "{s}");
    assert!(s.contains("Worst case, model vs seed"), "{s}");
    assert!(s.contains("preemption latency trace v1.0.7 on 2.4.17"), "{s}");
    assert!(s.contains("=> started at:"), "{s}");
}

#[test]
fn unknown_experiment_lists_valid_ones() {
    let out = latlab(&["reproduce", "nope"]);
    assert!(!out.status.success());
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(
        e.contains("unknown experiment `nope`") && e.contains("mini-ll") && e.contains("preempt-vs-lowlatency"),
        "{e}"
    );
}

#[test]
fn replaying_the_noise_of_a_machine_without_it_is_refused_naming_the_field() {
    let out = latlab(&["reproduce", "sched-cost", "--replay-noise"]);
    assert!(!out.status.success());
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(
        e.contains("field `host.noise`") && e.contains("latlab probe calibrate"),
        "{e}"
    );
}

#[test]
fn run_reports_file_line_and_field() {
    let dir = Scratch::new("run");
    let f = dir.file(
        "bad.toml",
        "name = \"x\"\ntitle = \"x\"\nseed_file = \"s\"\nmachine = \"piii-850\"\nworkload = \"seed000-script\"\ntable = \"max-latency\"\ncolour = \"red\"\n[[run]]\nlabel = \"a\"\nvariant = \"2.4.18\"\n",
    );
    let out = latlab(&["run", &f]);
    assert!(!out.status.success());
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(e.contains("bad.toml:7:") && e.contains("colour"), "{e}");

    let f = dir.file("bad.toml", "name = \"x\"\ntitle = \"x\"\nseed_file = \"s\"\nmachine = \"vax\"\nworkload = \"seed000-script\"\ntable = \"max-latency\"\n[[run]]\nlabel = \"a\"\nvariant = \"2.4.18\"\n");
    let e = String::from_utf8_lossy(&latlab(&["run", &f]).stderr).to_string();
    assert!(
        e.contains("bad.toml:4:") && e.contains("unknown machine `vax`") && e.contains("piii-850"),
        "{e}"
    );

    let missing = dir.0.join("missing.toml");
    let e = String::from_utf8_lossy(&latlab(&["run", missing.to_str().unwrap()]).stderr).to_string();
    assert!(
        e.contains("cannot read experiment file") && e.contains("missing.toml"),
        "{e}"
    );
}

#[test]
fn run_a_short_custom_experiment() {
    let dir = Scratch::new("run2");
    let f = dir.file(
        "short.toml",
        "name = \"short\"\ntitle = \"a short run\"\nseed_file = \"000_5c157154d48a42ec.txt\"\nmachine = \"piii-850\"\nworkload = \"seed000-script\"\ntable = \"max-latency\"\n[[run]]\nlabel = \"stock\"\nvariant = \"2.4.18\"\nmax_seconds = 10\npublished_max_ms = 84.0\n",
    );
    let out = latlab(&["run", &f, "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["experiment"], "short");
}

#[test]
fn vary_prints_each_kernel_per_value() {
    let dir = Scratch::new("vary");
    let file = &dir.file(
        "sweep.toml",
        "name = \"sweep\"\ntitle = \"a sweep\"\nseed_file = \"000_5c157154d48a42ec.txt\"\nmachine = \"piii-850\"\nworkload = \"seed000-script\"\ntable = \"max-latency\"\n[preload]\nunused_dentries = 1000\nreclaimed_before = false\n[[run]]\nlabel = \"stock\"\nvariant = \"2.4.18\"\nmax_seconds = 10\npublished_max_ms = 84.0\n[[run]]\nlabel = \"ll\"\nvariant = \"2.4.18+low-latency\"\nmax_seconds = 10\npublished_max_ms = 3.2\n",
    );
    let out = latlab(&["run", file, "--vary", "preload.unused_dentries=0,100000", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["vary"], "preload.unused_dentries");
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    let worst = |i: usize, kernel: &str| {
        runs[i]["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["variant"] == kernel && r["figure"] == "max_latency")
            .unwrap()["model"]
            .as_f64()
            .unwrap()
    };
    // With the box's first reclaim in the run, the lived-in dcache's flag walk is the stock
    // kernel's worst case; the low-latency patch breaks it.
    assert!(worst(1, "2.4.18") > 5.0 * worst(0, "2.4.18"));
    assert!(worst(1, "2.4.18+low-latency") < 1.0);

    let out = latlab(&["run", file, "--vary", "preload.unused_dentries=0,100000"]);
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(s.contains("Worst case (ms) by preload.unused_dentries"), "{s}");
    assert!(s.contains("100000") && s.contains("inside the bar"), "{s}");

    let e = String::from_utf8_lossy(&latlab(&["run", file, "--vary", "preload.dentries=1"]).stderr).to_string();
    assert!(
        e.contains("unknown setting to vary") && e.contains("preload.unused_dentries"),
        "{e}"
    );
    let e = String::from_utf8_lossy(&latlab(&["run", file, "--vary", "seed=1", "--seed", "2"]).stderr).to_string();
    assert!(e.contains("--seed and --vary seed"), "{e}");
}

#[test]
fn sched_cost_shows_the_goodness_scan_growing_and_explains_a_user_space_wait() {
    let out = latlab(&["reproduce", "sched-cost", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    let worst = |variant: &str| {
        v["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["variant"] == variant && r["figure"] == "max_latency")
            .unwrap()["model"]
            .as_f64()
            .unwrap()
    };
    // 1000 runnable tasks: goodness() scans them all at every schedule(), the bitmap does not.
    assert!(worst("2.4.18") > 4.0 * worst("2.4.18+o1"), "{v}");
    assert!(
        v["rows"][0]["published"].is_null(),
        "a what-if has no published figures"
    );
    // The hogs run in user space: the worst wakeups interrupted no kernel code, and the
    // explanation says so instead of naming an empty list.
    let text = latlab(&["reproduce", "sched-cost"]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("ran no kernel code (user space or idle)"), "{text}");
    assert!(!text.contains("context ran \n"), "{text}");
}

/// A built-in profile's text from the repository (`variants/2.4.18.toml`).
fn builtin(kind: &str, name: &str) -> String {
    std::fs::read_to_string(format!("{}/../../{kind}/{name}.toml", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

#[test]
fn run_reads_user_variant_and_machine_files_beside_the_experiment() {
    let dir = Scratch::new("userfiles");
    let kernel =
        builtin("variants", "2.4.18+low-latency").replace("name = \"2.4.18+low-latency\"", "name = \"my-kernel\"");
    dir.file("my-kernel.toml", &kernel);
    let machine = builtin("machines", "piii-850").replace("name = \"piii-850\"", "name = \"my-box\"")
        + "\n[catalog.unfile]\nmisses = 3\n";
    dir.file("my-box.toml", &machine);
    let exp = "name = \"mine\"\ntitle = \"user files\"\nseed_file = \"000_5c157154d48a42ec.txt\"\nmachine = \"./my-box.toml\"\nworkload = \"seed000-script\"\ntable = \"max-latency\"\n[[run]]\nlabel = \"mine\"\nvariant = \"./my-kernel.toml\"\nmax_seconds = 5\n";
    let f = dir.file("exp.toml", exp);
    let out_dir = dir.path("out");
    let out = latlab(&["run", &f, "--json", "--out", &out_dir]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        v["rows"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["variant"] == "my-kernel"),
        "{v}"
    );
    let saved = std::fs::read_to_string(dir.0.join("out").join("mine-mine.json")).unwrap();
    let r: serde_json::Value = serde_json::from_str(&saved).unwrap();
    assert_eq!(r["meta"]["machine"], "my-box");
    assert_eq!(r["meta"]["kernel"], "my-kernel");
    // The machine's catalog override is in force and recorded.
    assert_eq!(r["meta"]["settings"]["catalog.unfile.misses"], "3");

    // A typo'd field in the user's variant (one that extends a built-in): that file, its
    // line, the field; exit 2.
    let typo = format!("{kernel}premept = \"none\"\n");
    let line = typo.lines().position(|l| l.starts_with("premept")).unwrap() + 1;
    dir.file("my-kernel.toml", &typo);
    let out = latlab(&["run", &f]);
    assert_eq!(out.status.code(), Some(2));
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(
        e.contains(&format!("my-kernel.toml:{line}:")) && e.contains("premept"),
        "{e}"
    );

    // A missing file: the experiment file, its line, the field and the path.
    std::fs::remove_file(dir.0.join("my-kernel.toml")).unwrap();
    let out = latlab(&["run", &f]);
    assert_eq!(out.status.code(), Some(2));
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(
        e.contains("exp.toml:9: field `variant`: cannot read kernel variant file `./my-kernel.toml`")
            && e.contains(&dir.path("./my-kernel.toml"))
            && e.contains("No such file"),
        "{e}"
    );
}

#[test]
fn run_reads_a_user_workload_file_beside_the_experiment() {
    let dir = Scratch::new("userload");
    // A workload of one's own: a `dd` and a sync on a freshly booted box, its idle desktop
    // from the file.
    let load = "name = \"my-load\"\ngap_ms = 100\n\n[preload]\nbase = \"fresh-boot\"\nidle_anon_mib = 7\n\n[[command]]\ndd = { mb = 8, bs_kb = 64, group = \"out\" }\n\n[[command]]\nsync = {}\n";
    dir.file("my-load.toml", load);
    let exp = "name = \"mine\"\ntitle = \"a user workload\"\nmachine = \"piii-850\"\nworkload = \"./my-load.toml\"\ntable = \"max-latency\"\n[[run]]\nlabel = \"mine\"\nvariant = \"2.4.18\"\nmax_seconds = 5\n";
    let f = dir.file("exp.toml", exp);
    let out_dir = dir.path("out");
    let out = latlab(&["run", &f, "--json", "--out", &out_dir]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let saved = std::fs::read_to_string(dir.0.join("out").join("mine-mine.json")).unwrap();
    let r: serde_json::Value = serde_json::from_str(&saved).unwrap();
    assert_eq!(r["meta"]["workload"], "my-load");
    assert_eq!(r["meta"]["settings"]["preload.idle_anon_mib"], "7");
    // The dd's 8 MiB went through write(2): 128 writes of 64 KiB.
    assert!(r["counters"]["syscalls"].as_u64().unwrap() >= 128, "{}", r["counters"]);

    // Each mistake: the workload file, its line and the field; exit 2.
    for (from, to, line, says) in [
        ("dd = {", "ddd = {", 9, "unknown variant `ddd`"),
        ("bs_kb = 64", "bz_kb = 64", 9, "bz_kb"),
        ("bs_kb = 64", "bs_kb = 0", 9, "field `command.dd.bs_kb`: must be 1..="),
        ("bs_kb = 64", "bs_kb = -1", 9, "field `command.dd.bs_kb`"),
    ] {
        dir.file("my-load.toml", &load.replace(from, to));
        let out = latlab(&["run", &f]);
        assert_eq!(out.status.code(), Some(2), "{to}");
        let e = String::from_utf8_lossy(&out.stderr);
        assert!(
            e.contains(&format!("my-load.toml:{line}:")) && e.contains(says),
            "{to}: {e}"
        );
    }
}

#[test]
fn vary_sweeps_machine_fields_and_catalog_costs() {
    let dir = Scratch::new("vary-machine");
    let file = &dir.file(
        "sweep.toml",
        "name = \"sweep\"\ntitle = \"a sweep\"\nseed_file = \"000_5c157154d48a42ec.txt\"\nmachine = \"piii-850\"\nworkload = \"seed000-script\"\ntable = \"max-latency\"\n[preload]\nunused_dentries = 100000\nreclaimed_before = false\n[[run]]\nlabel = \"stock\"\nvariant = \"2.4.18\"\nmax_seconds = 10\npublished_max_ms = 84.0\n",
    );
    let worst = |args: &[&str]| -> Vec<f64> {
        let out = latlab(&[&["run", file, "--json"], args].concat());
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        v["runs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|run| {
                run["rows"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|r| r["figure"] == "max_latency")
                    .unwrap()["model"]
                    .as_f64()
                    .unwrap()
            })
            .collect()
    };
    // The worst case here is kswapd's first prune of the lived-in dcache (prune_dcache,
    // prune_icache, dispose_list, none with a rescheduling point in 2.4.18): a slower CPU or
    // dearer dentries make it longer.
    let w = worst(&["--vary", "machine.cpu_mhz=425,850,1700"]);
    assert!(w[0] > w[1] && w[1] > w[2], "{w:?}");
    let w = worst(&["--vary", "catalog.prune_dentry.misses=3,12"]);
    assert!(w[1] > 1.2 * w[0], "{w:?}");
    let out = latlab(&["run", file, "--vary", "machine.disk.seq_mb_s=20,40"]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("Worst case (ms) by machine.disk.seq_mb_s"));

    for (arg, want) in [
        ("machine.cpu=1", "unknown machine field `cpu`; valid: "),
        (
            "machine.cpu_mhz=fast",
            "field `machine.cpu_mhz`: `fast` is not a number",
        ),
        (
            "catalog.unfle.misses=3",
            "unknown catalog item `unfle`; valid: unfile, ",
        ),
        ("catalog.unfile.misses=-1", "field `catalog.unfile.misses`"),
    ] {
        let out = latlab(&["run", file, "--vary", arg]);
        assert_eq!(out.status.code(), Some(2), "{arg}");
        let e = String::from_utf8_lossy(&out.stderr);
        assert!(e.contains(want), "{arg}: {e}");
    }
}

#[test]
fn a_full_or_closed_standard_output_is_an_error_or_a_quiet_end_not_a_panic() {
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_latlab"))
        .args(["reproduce", "sched-cost"])
        .stdout(full)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(
        err.trim_end(),
        "latlab: error: cannot write to standard output: No space left on device (os error 28)"
    );
    // Found before anything runs: every experiment asked, no run done (no progress line).
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_latlab"))
        .args(["reproduce", "--json"])
        .stdout(full)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim_end(),
        "latlab: error: cannot write to standard output: No space left on device (os error 28)"
    );
    // The reader goes away before the report is printed: no message but the runs' progress,
    // the status of a tool SIGPIPE ended.
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_latlab"))
        .args(["reproduce", "sched-cost"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(141), "{}", String::from_utf8_lossy(&out.stderr));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.lines().all(|l| l.starts_with("latlab progress: ")), "{err}");
}

#[test]
fn endless_files_and_endless_runs_are_refused_by_name() {
    let out = latlab(&["run", "/dev/zero"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("cannot read experiment file /dev/zero: longer than 1048576 bytes"),
        "{err}"
    );
    let dir = Scratch::new("endless");
    let f = dir.file(
        "long.toml",
        "name = \"long\"\ntitle = \"t\"\nseed_file = \"s\"\nmachine = \"piii-850\"\nworkload = \"seed000-script\"\ntable = \"max-latency\"\nrtc_hz = 2\n[[run]]\nlabel = \"stock\"\nvariant = \"2.4.18\"\nsamples = 2e10\n",
    );
    let out = latlab(&["run", &f]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("long.toml:11: field `samples`") && err.contains("7200 s"),
        "{err}"
    );
}

#[test]
fn uncertainty_gives_every_figure_a_band_from_its_draws_and_says_what_drives_it() {
    let out = latlab(&["uncertainty", "sched-cost", "--samples", "4", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    assert_eq!(v["samples"], 4);
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 6);
    for r in rows {
        let band: Vec<f64> = r["band"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect();
        assert!(band[0] <= band[1] && band[1] <= band[2], "{r}");
        assert_eq!(r["values"].as_array().unwrap().len(), 4);
        assert!(r["drivers"].is_array());
    }
    // Every draw lies within its constant's range.
    let constants = v["constants"].as_array().unwrap();
    for d in v["draws"].as_array().unwrap() {
        for (x, c) in d.as_array().unwrap().iter().zip(constants) {
            let x = x.as_f64().unwrap();
            assert!(
                c["low"].as_f64().unwrap() <= x && x <= c["high"].as_f64().unwrap(),
                "{c} {x}"
            );
        }
    }
    let text = latlab(&["uncertainty", "sched-cost", "--samples", "4"]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("p95") && text.contains("in band") && text.contains("2.4.18+o1"),
        "{text}"
    );
    // Four draws cannot tell a driver from chance among the catalog's constants: said, not a threshold
    // above 1; --plot is refused before anything runs.
    // (The count of constants grows with the catalog: the sentence's shape is what is tested.)
    let said = text
        .split("drivers: none can be named with 4 draws: telling one of ")
        .nth(1)
        .and_then(|rest| rest.split_once(" constants from chance takes at least "))
        .and_then(|(n, rest)| Some((n.parse::<u32>().ok()?, rest.split_once(" (--samples ")?)))
        .and_then(|(n, (k, rest))| Some((n, k.parse::<u32>().ok()?, rest.split_once(')')?.0.parse::<u32>().ok()?)));
    assert!(matches!(said, Some((n, k, s)) if n > 100 && k > 4 && k == s), "{text}");
    let plot = latlab(&[
        "uncertainty",
        "sched-cost",
        "--samples",
        "4",
        "--plot",
        "/nonexistent/plots",
    ]);
    assert_eq!(plot.status.code(), Some(2));
    let err = String::from_utf8_lossy(&plot.stderr);
    assert!(
        err.contains(
            "--plot: a plot shows a figure against its strongest driver, and with 4 draws none of sched-cost's "
        ) && err.contains(" constants can be told from chance: give --samples 13 or more"),
        "{err}"
    );
    let bad = latlab(&["uncertainty", "nope"]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("mini-ll"));
    let bad = latlab(&["uncertainty", "sched-cost", "--samples", "0"]);
    assert!(!bad.status.success());
}

/// `--records DIR`: every timed write(2) of each iozone run as iozone -Q's per-record file,
/// one line per record in file order, whose `sort -nk2 | tail` is the table's slowest
/// listing; `--out`'s JSON does not carry them; a run without write streams says so.
#[test]
fn records_writes_iozones_per_record_files() {
    let dir = Scratch::new("records");
    let recs = dir.path("recs");
    let out_dir = dir.path("out");
    // The experiment on an 8 MB file: every run in a fraction of a second.
    let small = |more: &[&str]| {
        let mut args = vec!["reproduce", "pdflush-balance", "--vary", "iozone.file_mb=8"];
        args.extend_from_slice(more);
        latlab(&args)
    };
    let out = small(&["--records", &recs, "--out", &out_dir]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let read = |name: &str| std::fs::read_to_string(dir.0.join("recs").join(name)).unwrap();
    let wol = read("pdflush-balance-2.6.17_50pct-iozone.file_mb_8-wol.dat");
    let mut lines = wol.lines();
    assert_eq!(lines.next(), Some(latlab_report::iozone_q::HEADER));
    let rows: Vec<[u64; 3]> = lines
        .map(|l| {
            let c: Vec<u64> = l.split_whitespace().map(|w| w.parse().unwrap()).collect();
            [c[0], c[1], c[2]]
        })
        .collect();
    // 8 MB in 4 KiB records, in file order.
    assert_eq!(rows.len(), 2048);
    assert!(rows
        .iter()
        .enumerate()
        .all(|(i, r)| r[0] == 4 * i as u64 && r[2] == 4096));
    // The rewrite pass has its own file; sysbench's requests theirs.
    assert_eq!(
        read("pdflush-balance-2.6.17_50pct-iozone.file_mb_8-rwol.dat")
            .lines()
            .count(),
        2049
    );
    assert!(
        read("pdflush-balance-sysbench_2.6.17_50pct-iozone.file_mb_8-sysbench-rndrw.dat")
            .lines()
            .count()
            > 1
    );
    // The saved result keeps its slowest ten, not every record: the same ten as the file's.
    let saved = std::fs::read_to_string(
        dir.0
            .join("out")
            .join("pdflush-balance-2.6.17_50pct-iozone.file_mb_8.json"),
    )
    .unwrap();
    let r: latlab_core::RunResult = serde_json::from_str(&saved).unwrap();
    let w = r.stream("write").unwrap();
    assert!(w.records.is_empty() && !saved.contains("\"records\""));
    let mut slowest: Vec<u64> = rows.iter().map(|r| r[1]).collect();
    slowest.sort_unstable();
    let mut worst: Vec<u64> = w.worst.iter().map(|s| s.latency_ns / 1000).collect();
    worst.sort_unstable();
    assert_eq!(slowest[slowest.len() - 10..], worst[..]);

    // An experiment without write streams writes nothing and says so.
    let out = latlab(&["reproduce", "sched-cost", "--records", &dir.path("none")]);
    assert!(out.status.success());
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(e.contains("--records") && e.contains("nothing written"), "{e}");
    assert!(!dir.0.join("none").exists(), "not even the directory");
    // Every file name keeps to [A-Za-z0-9._-].
    for d in ["recs", "out"] {
        for f in std::fs::read_dir(dir.0.join(d)).unwrap() {
            let name = f.unwrap().file_name().into_string().unwrap();
            assert!(
                name.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c)),
                "{name}"
            );
        }
    }
    // A directory that cannot be made: the option and the path named, exit 2.
    let file = dir.file("plain", "x");
    let out = small(&["--records", &format!("{file}/sub")]);
    assert_eq!(out.status.code(), Some(2));
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(e.contains("--records") && e.contains("plain/sub"), "{e}");
}

/// Progress goes to stderr whatever stdout is: off a terminal, a line per finished run.
#[test]
fn progress_is_a_line_per_finished_run_when_stderr_is_not_a_terminal() {
    let out = latlab(&["reproduce", "sched-cost", "--json"]);
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "{err}");
    assert!(
        lines[0].starts_with("latlab progress: sched-cost 1/2 runs done"),
        "{err}"
    );
    assert!(
        lines[1].starts_with("latlab progress: sched-cost 2/2 runs done"),
        "{err}"
    );
    assert!(lines.iter().all(|l| l.contains("s simulated in")), "{err}");
}

/// Several experiments with `--json`: one document, each element the experiment's own.
#[test]
fn several_experiments_with_json_are_one_document() {
    let one = latlab(&["reproduce", "sched-cost", "--json"]);
    let two = latlab(&["reproduce", "sched-cost", "sched-cost", "--json"]);
    assert!(one.status.success() && two.status.success());
    let one: serde_json::Value = serde_json::from_slice(&one.stdout).unwrap();
    let two: serde_json::Value = serde_json::from_slice(&two.stdout).expect("one JSON document");
    assert_eq!(two, serde_json::json!({ "experiments": [one, one] }));
}

#[test]
fn empty_and_repeated_vary_values_are_refused_naming_vary() {
    for (spec, want) in [
        (
            "seed=1,,2",
            "command line (--vary): field `seed`: value 2 of 3 is empty (`seed=1,,2`)",
        ),
        (
            "seed=1,1",
            "command line (--vary): field `seed`: value `1` is given twice",
        ),
    ] {
        let out = latlab(&["reproduce", "sched-cost", "--vary", spec]);
        assert_eq!(out.status.code(), Some(2), "{spec}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.starts_with(&format!("latlab: error: {want}")), "{spec}: {err}");
    }
}

/// A what-if of one's own needs no seed file; SIGINT stops its runs at the next simulated
/// second and prints the report of what ran, as the probe does; `max_seconds` is bounded.
#[test]
fn sigint_prints_the_partial_report_of_a_what_if_without_a_seed_file() {
    let dir = Scratch::new("sigint");
    let what_if = "name = \"long\"\ntitle = \"a long what-if\"\nmachine = \"piii-850\"\nworkload = \"seed000-script\"\ntable = \"max-latency\"\n[[run]]\nlabel = \"stock, 100% (mine)\"\nvariant = \"2.4.18\"\nmax_seconds = 7200\n";
    let file = dir.file("long.toml", what_if);
    let out_dir = dir.path("out");
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_latlab"))
        .args(["run", &file, "--out", &out_dir])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Signal once the handler is in place (SIGINT's bit in SigCgt), not before.
    let caught = || {
        let status = std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("SigCgt:"))
            .and_then(|m| u64::from_str_radix(m.trim(), 16).ok())
            .is_some_and(|m| m & (1 << (libc::SIGINT - 1)) != 0)
    };
    let t0 = std::time::Instant::now();
    while !caught() {
        assert!(t0.elapsed().as_secs() < 60, "no SIGINT handler");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // SAFETY: kill has no memory preconditions; the pid is our child's.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    let (stdout, err) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(128 + libc::SIGINT), "{err}");
    assert!(err.contains("latlab: interrupted (signal 2)"), "{err}");
    assert!(
        stdout.starts_with("== long (none) ==\n") && stdout.contains("\n1 runs, "),
        "{stdout}"
    );
    let saved = std::fs::read_to_string(dir.0.join("out").join("long-stock_100pct_mine.json")).unwrap();
    let r: latlab_core::RunResult = serde_json::from_str(&saved).unwrap();
    assert!(
        r.meta.settings["stopped_by"].starts_with("a signal at "),
        "{:?}",
        r.meta.settings
    );
    assert!(r.meta.duration_ns < 7200 * 1_000_000_000);

    let too_long = dir.file("longer.toml", &what_if.replace("7200", "7201"));
    let err = String::from_utf8_lossy(&latlab(&["run", &too_long]).stderr).to_string();
    assert!(
        err.contains("longer.toml:9: field `max_seconds`: a run lasts at most 7200 simulated seconds"),
        "{err}"
    );
}

/// Output files keep to [A-Za-z0-9._-]; two labels that would share a name are refused.
#[test]
fn out_files_have_portable_names_and_never_collide() {
    let dir = Scratch::new("names");
    let exp = "name = \"n\"\ntitle = \"t\"\nmachine = \"piii-850\"\nworkload = \"seed000-script\"\ntable = \"max-latency\"\n[[run]]\nlabel = \"a, 50% (x)\"\nvariant = \"2.4.18\"\nmax_seconds = 1\n[[run]]\nlabel = \"a 50pct x\"\nvariant = \"2.4.18\"\nmax_seconds = 1\n";
    let file = dir.file("n.toml", exp);
    let out = latlab(&["run", &file, "--out", &dir.path("out")]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--out: runs `a, 50% (x)` and `a 50pct x` would both be written to")
            && err.contains("n-a_50pct_x.json"),
        "{err}"
    );
    let file = dir.file("m.toml", &exp.replace("a 50pct x", "b+c/d"));
    let out = latlab(&["run", &file, "--out", &dir.path("out")]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut names: Vec<String> = std::fs::read_dir(dir.0.join("out"))
        .unwrap()
        .map(|f| f.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["n-a_50pct_x.json", "n-b_c_d.json"]);
}

/// An experiment running the user's workload file `w.toml` (beside it) for a second on the
/// 6.18 EEVDF kernel, `--out` into `out/`.
const TASKS_EXPERIMENT: &str = "name = \"tasks\"\ntitle = \"a periodic thread beside hogs\"\nmachine = \"piii-850\"\nworkload = \"./w.toml\"\ntable = \"max-latency\"\n[[run]]\nlabel = \"6.18\"\nvariant = \"6.18-eevdf-none\"\nduration_s = 1\n";

#[test]
fn run_a_user_workload_of_tasks_reports_the_periodic_thread_s_wakeup_latencies() {
    let dir = Scratch::new("tasks");
    let workload = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../workloads/fifo-beside-hogs.toml"
    ))
    .unwrap()
    .replace("name = \"fifo-beside-hogs\"", "name = \"mine\"");
    dir.file("w.toml", &workload);
    let f = dir.file("e.toml", TASKS_EXPERIMENT);
    let out_dir = dir.path("out");
    let out = latlab(&["run", &f, "--out", &out_dir]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("Percentiles (the first periodic task's wakeup latency)"),
        "{text}"
    );
    assert!(text.contains("cyclic/"), "the worst sample names the thread: {text}");
    let json = std::fs::read_to_string(dir.path("out/tasks-6.18.json")).unwrap();
    let r: serde_json::Value = serde_json::from_str(&json).unwrap();
    let streams = r["streams"].as_array().unwrap();
    assert_eq!(streams.len(), 1, "the periodic task's stream, no realfeel: {streams:?}");
    assert_eq!(streams[0]["name"], "cyclic");
    assert_eq!(r["meta"]["workload"], "mine");
    // One sample a period of 1 ms for a second, each an expiry to user space later.
    let n = streams[0]["hist"]["count"].as_u64().unwrap();
    assert!((990..=1000).contains(&n), "{n} samples");
    assert!(streams[0]["hist"]["min_ns"].as_u64().unwrap() > 0);
    // Same seed, same bytes.
    let json = || latlab(&["run", &f, "--json", "--seed", "3"]).stdout;
    assert_eq!(json(), json());
}

#[test]
fn run_refuses_a_bad_task_naming_the_workload_file_s_line_and_field() {
    let dir = Scratch::new("tasks-bad");
    let f = dir.file("e.toml", TASKS_EXPERIMENT);
    let good = "name = \"w\"\n[preload]\nbase = \"fresh-boot\"\n[[task]]\ncomm = \"rt\"\npolicy = \"fifo\"\npriority = 50\nsteps = [{ sleep = { ms = 1 } }]\n";
    for (from, to, at) in [
        ("priority = 50", "priority = 100", "w.toml:7: field `task.priority`"),
        ("{ sleep = { ms = 1 } }", "{ doze = { ms = 1 } }", "w.toml:8:"),
        ("ms = 1", "ms = -1", "w.toml:8: field `task.steps.sleep.ms`"),
    ] {
        dir.file("w.toml", &good.replace(from, to));
        let out = latlab(&["run", &f]);
        assert!(!out.status.success(), "{to}");
        let e = String::from_utf8_lossy(&out.stderr);
        assert!(e.contains(at), "{to}: {e}");
    }
}
