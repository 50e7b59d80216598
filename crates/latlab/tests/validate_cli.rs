//! `latlab validate`: scenarios on this machine and on the model's twin, end to end. The
//! machine's figures are whatever this machine does: the tests check the table's and the
//! document's shape, the model's side (deterministic), and the errors, never a latency.

mod common;
use common::{latlab, Scratch};

/// A built-in machine with the `[host.kernel]` a calibration writes.
fn machine(s: &Scratch, preemption: &str) -> String {
    let base = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../machines/p4-2006.toml")).unwrap();
    s.file(
        &format!("m-{preemption}.toml"),
        &format!("{base}\n[host.kernel]\nrelease = \"6.18.0\"\nhz = 250\npreemption = \"{preemption}\"\n"),
    )
}

const IDLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios/idle.toml");

#[test]
fn a_scenario_is_judged_figure_by_figure_with_the_models_side_repeatable() {
    let s = Scratch::new("validate-json");
    let m = machine(&s, "none");
    let out_dir = s.path("out");
    let html = s.path("v.html");
    let args = [
        "validate",
        IDLE,
        "--runs",
        "2",
        "--duration",
        "300ms",
        "--machine",
        &m,
        "--json",
        "--out",
        &out_dir,
        "--html",
        &html,
    ];
    let o = latlab(&args);
    let stderr = String::from_utf8_lossy(&o.stderr);
    // Exit 1 is the suite outside its bar: a verdict on this machine, not a failure to run.
    assert!(matches!(o.status.code(), Some(0 | 1)), "{stderr}");
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).expect("--json prints JSON");
    assert_eq!(doc["variant"], "6.18-eevdf-none");
    assert_eq!(doc["runs"], 2);
    let rows = doc["scenarios"][0]["rows"].as_array().expect("rows");
    let figures: Vec<&str> = rows.iter().take(7).map(|r| r["figure"].as_str().unwrap()).collect();
    assert_eq!(figures, ["count", "p50", "p99", "p99.9", "max", "avg", "missed"]);
    for r in rows {
        let [lo, hi] = [
            r["machine_spread"][0].as_f64().unwrap(),
            r["machine_spread"][1].as_f64().unwrap(),
        ];
        let med = r["machine"].as_f64().unwrap();
        assert!(lo <= med && med <= hi, "the median lies within the runs' spread: {r}");
    }
    let judged = doc["tally"]["judged"].as_u64().unwrap() + doc["tally"]["noise"].as_u64().unwrap();
    assert!(
        judged >= 3,
        "p50, p99 and avg of every stream are judged or put down to noise: {doc}"
    );
    // The runs are written for the other reports, and the page holds the verdicts.
    for f in ["idle-model.json", "idle-machine-1.json", "idle-machine-2.json"] {
        assert!(std::path::Path::new(&s.path(&format!("out/{f}"))).exists(), "{f}");
    }
    // Traced machine runs (root, tracefs) carry every sample with the host's time out, and
    // the tails' rows show that figure; the body's do not.
    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(s.path("out/idle-machine-1.json")).unwrap()).unwrap();
    match run["meta"]["settings"].get("traced_above_us") {
        None => eprintln!("skipping the traced rows: the machine runs were not traced: {stderr}"),
        Some(_) => {
            for st in run["streams"].as_array().unwrap() {
                assert_eq!(st["host_out"]["count"], st["hist"]["count"], "{st}");
            }
            for r in rows {
                let tail = r["figure"] == "p99" || r["figure"] == "max";
                assert_eq!(r.get("machine_host_out").is_some(), tail, "{r}");
            }
        }
    }
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("Model beside machine") && page.contains("<a href=\"#sc-idle\">idle</a> / "),
        "{page}"
    );
    assert!(page.contains("<section class=\"scenario\" id=\"sc-idle\">"), "{page}");

    // The model's side is the same run again: its figures do not move.
    let again = latlab(&args[..args.len() - 4]);
    let doc2: serde_json::Value = serde_json::from_slice(&again.stdout).unwrap();
    let model = |d: &serde_json::Value| -> Vec<serde_json::Value> {
        d["scenarios"][0]["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["model"].clone())
            .collect()
    };
    assert_eq!(model(&doc), model(&doc2));
}

#[test]
fn with_the_noise_replayed_its_figures_stand_beside_those_the_noise_decides() {
    let s = Scratch::new("validate-noise");
    let base = std::fs::read_to_string(machine(&s, "none")).unwrap();
    // 2 % of the time lost: every p99 is the noise's.
    let m = s.file(
        "m-noise.toml",
        &format!(
            "{base}\n[host.noise]\nsource = \"test\"\nduration_s = 5.0\ncpus = 2\nthreshold_us = 1.0\ngaps = 5000\n\
             gaps_per_s = 500.0\nmax_us = 2000.0\nlost_percent = 2.0\nper_cpu_gaps_per_s = [400.0, 600.0]\n\n\
             [host.noise.lengths]\np50_us = 5.0\np90_us = 20.0\np99_us = 300.0\np999_us = 1500.0\n"
        ),
    );
    let out_dir = s.path("out");
    // Untraced, so that the calibration's noise decides.
    let args = [
        "validate",
        IDLE,
        "--runs",
        "1",
        "--duration",
        "300ms",
        "--machine",
        &m,
        "--json",
        "--replay-noise",
        "--no-trace",
        "--out",
        &out_dir,
    ];
    let o = latlab(&args);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{stderr}");
    assert!(
        stderr.contains("on the model with the machine's noise replayed"),
        "{stderr}"
    );
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).expect("--json prints JSON");
    let rows = doc["scenarios"][0]["rows"].as_array().expect("rows");
    let mut beside = 0;
    for r in rows {
        // Beside every figure the noise decides, and no other.
        assert_eq!(r["verdict"] == "noise", r.get("model_replayed").is_some(), "{r}");
        beside += usize::from(r["verdict"] == "noise");
    }
    assert!(beside >= 2, "each stream's p99: {doc}");
    let replayed = std::fs::read_to_string(s.path("out/idle-model-noise.json")).unwrap();
    let r: serde_json::Value = serde_json::from_str(&replayed).unwrap();
    assert!(r["meta"]["settings"]["host_noise"]
        .as_str()
        .unwrap()
        .starts_with("replayed (test)"));
    assert!(r["counters"]["host_gaps"].as_u64().unwrap() > 0);
    let kernel_only: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(s.path("out/idle-model.json")).unwrap()).unwrap();
    assert!(kernel_only["meta"]["settings"].get("host_noise").is_none());

    // A machine without [host.noise] has nothing to replay.
    let bare = machine(&s, "full");
    let o = latlab(&["validate", IDLE, "--machine", &bare, "--replay-noise"]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(e.contains("field `host.noise`") && e.contains("absent"), "{e}");
}

#[test]
fn the_table_ends_with_the_tally_against_the_bar() {
    let s = Scratch::new("validate-table");
    let m = machine(&s, "lazy");
    let o = latlab(&["validate", IDLE, "--runs", "1", "--duration", "200ms", "--machine", &m]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("scenario / stream") && out.contains("idle / cyc-fifo"),
        "{out}"
    );
    let last = out.lines().last().unwrap_or("");
    assert!(
        last.contains("p50/p99/avg figures within 2x") && last.contains("bar 75 %"),
        "{out}"
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("6.18-eevdf-lazy"));
}

#[test]
fn what_cannot_be_validated_is_refused_naming_the_file_and_field() {
    let s = Scratch::new("validate-bad");
    let vol = machine(&s, "voluntary");
    let o = latlab(&["validate", IDLE, "--machine", &vol]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(
        e.contains(&vol) && e.contains("host.kernel.preemption") && e.contains("--variant"),
        "{e}"
    );

    let bare = concat!(env!("CARGO_MANIFEST_DIR"), "/../../machines/p4-2006.toml");
    let e = String::from_utf8_lossy(&latlab(&["validate", IDLE, "--machine", bare]).stderr).to_string();
    assert!(e.contains("no [host.kernel]") && e.contains("p4-2006.toml"), "{e}");

    let bad = s.file(
        "bad.toml",
        "name = \"bad\"\nduration_s = 1\n[[task]]\ncomm = \"x\"\npriority = 100\npolicy = \"fifo\"\nsteps = []\n",
    );
    let e = String::from_utf8_lossy(&latlab(&["validate", &bad, "--machine", &vol]).stderr).to_string();
    assert!(e.contains("bad.toml") && e.contains("priority"), "{e}");

    let o = latlab(&["validate", IDLE, "--runs", "0"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--runs"));
}
