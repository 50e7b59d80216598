//! Fuzzing that stays on: every `cargo test` mutates the built-in files and example results
//! for a bounded time and feeds them to latlab's readers, and replays every input that ever
//! failed. The targets (fuzz/README.md):
//!
//! - `experiment`: an experiment file through `latlab_exp::load_with` to a validated
//!   experiment, a few `--vary` settings on it, and the seed tables `reproduce` prints for it;
//! - `variant`, `machine`: a kernel variant or machine profile file an experiment names by
//!   path, through the same parser and validation;
//! - `result`: a RunResult JSON through `latlab_report::input::parse_result` and every report
//!   (compare, plot, csv, trace, html, the text summaries);
//! - `cyclictest`: cyclictest's files (its standard output, `-h` histogram and `--json`)
//!   through the same reader and reports, and the histogram reader `probe vs-cyclictest` uses
//!   with its merge and quantiles.
//!
//! A check passes when the reader returns (an error, or a value the reports render) without
//! panicking and within [`CASE_LIMIT`]. Seeds come from `experiments/`, `variants/`,
//! `machines/`, `fuzz/seeds/result/` and `crates/latlab-report/tests/fixtures/cyclictest/`; `fuzz/regressions/TARGET/` holds the inputs that
//! failed once, replayed by [`regressions_stay_fixed`]. `LATLAB_FUZZ_SECS` sets each target's
//! budget (default [`DEFAULT_SECS`]; 0 replays only), `LATLAB_FUZZ_SEED` repeats a run.

use latlab_core::RunResult;
use latlab_exp::builtin;
use latlab_report::{chrome_trace, compare, csv, cyclictest, ftrace, html, input, latency_trace, plot, seed_table};
use latlab_report::{summary, timeline};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestError, TestRng, TestRunner};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Each target's default fuzzing time: five targets on CI's two cores take about a minute and a quarter.
const DEFAULT_SECS: u64 = 30;
/// Longest one input may take before it counts as a hang.
const CASE_LIMIT: Duration = Duration::from_secs(10);

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

/// What a fuzz target reads, and how.
struct Target {
    name: &'static str,
    /// Extension of its regression files.
    ext: &'static str,
    /// Directories (under the repository) whose files seed it.
    seed_dirs: &'static [&'static str],
    check: fn(&str) -> Result<(), String>,
}

const TARGETS: [Target; 5] = [
    Target {
        name: "experiment",
        ext: "toml",
        seed_dirs: &["experiments"],
        check: check_experiment,
    },
    Target {
        name: "variant",
        ext: "toml",
        seed_dirs: &["variants"],
        check: check_variant,
    },
    Target {
        name: "machine",
        ext: "toml",
        seed_dirs: &["machines"],
        check: check_machine,
    },
    Target {
        name: "result",
        ext: "json",
        seed_dirs: &["fuzz/seeds/result"],
        check: check_result,
    },
    Target {
        name: "cyclictest",
        ext: "txt",
        seed_dirs: &["crates/latlab-report/tests/fixtures/cyclictest"],
        check: check_cyclictest,
    },
];

/// An experiment naming `machine` and `variant`, with published figures of every kind.
fn experiment_naming(machine: &str, variant: &str) -> String {
    format!(
        "name = \"fuzz\"\ntitle = \"fuzz\"\nseed_file = \"000\"\nmachine = \"{machine}\"\n\
         workload = \"seed000-script\"\ntable = \"log-histogram\"\nrtc_hz = 2048\n\n[[run]]\n\
         label = \"Stock\"\nvariant = \"{variant}\"\nsamples = 1_200_861\npublished_samples = 1_200_861\n\
         published_max_ms = 84.0\npublished_buckets = [1.2e6, 365, 32]\n\
         published_listing = [[0.0, 1271218], [0.1, 5]]\nmax_seconds = 1200\n"
    )
}

/// The built-in variants and machines by path (`./2.4.18.toml`), as `latlab run` reads files.
fn builtin_file(path: &str) -> std::io::Result<(String, String)> {
    let name = path.trim_start_matches("./").trim_end_matches(".toml");
    builtin::VARIANTS
        .iter()
        .chain(builtin::MACHINES)
        .find(|(n, _)| *n == name)
        .map(|(n, t)| (format!("{n}.toml"), t.to_string()))
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::NotFound, format!("{path}: not found")))
}

/// `text` as the file `name`, the built-ins for any other path.
fn one_file<'a>(name: &'a str, text: &'a str) -> impl Fn(&str) -> std::io::Result<(String, String)> + 'a {
    move |p: &str| {
        if p == name {
            Ok((name.to_string(), text.to_string()))
        } else {
            builtin_file(p)
        }
    }
}

/// An error must say something: the file it names and why.
fn names(e: &latlab_exp::ExpError, file: &str) -> Result<(), String> {
    let e = e.to_string();
    if e.contains(file) || e.contains(".toml") {
        Ok(())
    } else {
        Err(format!("an error that names no file: {e}"))
    }
}

fn check_experiment(text: &str) -> Result<(), String> {
    let exp = match latlab_exp::load_with("fuzz.toml", text, &builtin_file) {
        Ok(exp) => exp,
        Err(e) => return names(&e, "fuzz.toml"),
    };
    for r in &exp.runs {
        let c = &r.config;
        if r.max_seconds.is_none() && c.min_duration_ns > latlab_exp::MAX_RUN_SECONDS * 1_000_000_000 {
            return Err(format!("run `{}` accepted at {} ns", r.label, c.min_duration_ns));
        }
        if r.max_seconds.is_some_and(|m| m > latlab_exp::MAX_RUN_SECONDS) {
            return Err(format!(
                "run `{}` accepted with max_seconds {:?}",
                r.label, r.max_seconds
            ));
        }
        if c.min_duration_ns > c.max_duration_ns {
            return Err(format!("run `{}` lasts at least longer than at most", r.label));
        }
    }
    for (key, value) in [
        ("rtc_hz", "2"),
        ("seed", "18446744073709551615"),
        ("hogs", "4000"),
        ("machine.ram_mib", "16"),
        ("machine.cpu_mhz", "1e6"),
        ("catalog.unfile.misses", "1e6"),
        ("preload.unused_dentries", "18446744073709551615"),
        ("preload.swapped_mib", "0"),
    ] {
        if let Err(e) = latlab_exp::vary(&exp, "cli", key, value) {
            names(&e, "cli")?;
        }
    }
    render_seed_tables(&exp);
    Ok(())
}

/// What `reproduce` prints after the runs, each run's result a stand-in with a few samples.
fn render_seed_tables(exp: &latlab_exp::Experiment) {
    let results: Vec<RunResult> = exp
        .runs
        .iter()
        .map(|run| {
            let mut r = RunResult::new(latlab_core::RunMeta {
                engine: latlab_core::Engine::Sim,
                machine: run.config.machine.name.clone(),
                kernel: run.config.variant.name.clone(),
                workload: "fuzz".into(),
                seed: run.config.seed,
                duration_ns: run.config.min_duration_ns,
                version: "0".into(),
                settings: [("rtc_hz".to_string(), run.config.rtc_hz.to_string())].into(),
            });
            let mut s = latlab_core::Stream::new("realfeel", "wakeup");
            for v in [40_000, 1_500_000, 84_000_000] {
                s.hist.record(v);
            }
            r.streams.push(s);
            r.counters.insert("workload_ms".into(), 1000);
            r
        })
        .collect();
    let views = latlab_batch::views(exp, &results);
    let rows = seed_table::compare_rows(&views, &exp.seed_file);
    latlab_report::preempt_off::render(&exp.title, &exp.seed_file, &views, &rows);
    latlab_report::preempt_off::render_where(&views);
    latlab_report::preempt_off::render_growth(&views);
    seed_table::render_log_histogram(&exp.title, &exp.seed_file, &views);
    seed_table::render_max_latency(&exp.title, &exp.seed_file, &views);
    seed_table::render_posix_timer(&exp.title, &exp.seed_file, &views, &rows);
    seed_table::render_write_latency(&exp.title, &exp.seed_file, &views, &rows);
    seed_table::render_slowest_writes(&views);
    seed_table::render_comparison(&rows);
    seed_table::render_bands(&rows);
    seed_table::render_run_lengths(&views);
    latlab_report::verdict::summary_line(&rows);
    for v in &views {
        seed_table::render_listing(v.label, v.result, v.published.listing);
    }
    latlab_batch::text::report(exp, &results, &rows, None, true);
    seed_table::render_sweep(&exp.title, "seed", &["1", "2"], &[rows.clone(), rows]);
}

fn check_variant(text: &str) -> Result<(), String> {
    let exp = experiment_naming("piii-850", "./fuzz-variant.toml");
    match latlab_exp::load_with("fuzz.toml", &exp, &one_file("./fuzz-variant.toml", text)) {
        Ok(exp) => {
            simulate_briefly(&exp);
            Ok(())
        }
        Err(e) => names(&e, "fuzz-variant.toml"),
    }
}

/// A variant or machine that reads runs: 50 simulated ms of seed 000's script on a freshly
/// booted box (no history to replay first), which must not panic.
fn simulate_briefly(exp: &latlab_exp::Experiment) {
    let mut cfg = exp.runs[0].config.clone();
    cfg.workload = latlab_exp::workload::workload("fuzz", "seed000-fresh-boot", 0, &latlab_exp::no_files)
        .expect("built-in workload");
    cfg.min_duration_ns = 0;
    cfg.max_duration_ns = 50_000_000;
    let _ = latlab_sim::simulate(&cfg, &mut |_, _| {});
}

fn check_machine(text: &str) -> Result<(), String> {
    let exp = experiment_naming("./fuzz-machine.toml", "2.4.18");
    match latlab_exp::load_with("fuzz.toml", &exp, &one_file("./fuzz-machine.toml", text)) {
        Ok(exp) => {
            // A machine that reads must also take the sweeps' changes without panicking.
            for key in ["machine.ram_mib", "machine.disk.capacity_gb", "catalog.unfile.instr"] {
                let _ = latlab_exp::vary(&exp, "cli", key, "1");
            }
            simulate_briefly(&exp);
            Ok(())
        }
        Err(e) => names(&e, "fuzz-machine.toml"),
    }
}

fn check_result(text: &str) -> Result<(), String> {
    let Ok(r) = input::parse_result(text, "fuzz-result.json") else {
        return Ok(());
    };
    let runs = vec![r.clone(), r];
    let labels = input::labels(&runs);
    let l: Vec<&str> = labels.iter().map(String::as_str).collect();
    let refs: Vec<&RunResult> = runs.iter().collect();
    compare::render(&l, &refs);
    let mut only: Vec<Option<&str>> = runs[0].streams.iter().map(|s| Some(s.name.as_str())).collect();
    only.push(None);
    for stream in only {
        let series = plot::series(&runs, &labels, stream);
        let _ = plot::distribution_svg("Latency distribution", &series);
        let _ = plot::percentiles_svg("Latency by percentile", &series);
        let w = timeline::windows(&runs[0], stream, 3);
        ftrace::render(&labels[0], &w);
        chrome_trace::render(&labels[0], &w);
    }
    csv::percentiles(&runs[0]);
    for per_octave in [1, 4, 16] {
        csv::buckets(&runs[0], per_octave);
    }
    html::render(&runs, 5);
    summary::percentiles(&labels[0], &runs[0], 28);
    summary::causes(&labels[0], &runs[0]);
    for s in &runs[0].streams {
        for w in &s.worst {
            summary::explain(w);
        }
    }
    if let Some(t) = &runs[0].trace {
        latency_trace::render(t);
    }
    cyclictest::render_streams(&runs[0].streams, 1000);
    Ok(())
}

/// A cyclictest file: through [`check_result`]; a histogram's error names its line (or the
/// line missing), and what reads as one also goes through `vs-cyclictest`'s merge and quantiles.
fn check_cyclictest(text: &str) -> Result<(), String> {
    check_result(text)?;
    if !cyclictest::looks_like_histogram(text) {
        return Ok(());
    }
    match cyclictest::parse(text) {
        Ok(cols) => {
            let m = cyclictest::merge(&cols);
            for q in [0.0, 0.5, 0.999, 1.0] {
                cyclictest::column_quantile(&m, q);
            }
            cyclictest::render(&cols);
            Ok(())
        }
        Err(e) if e.starts_with("line ") || e.starts_with("no ") => Ok(()),
        Err(e) => Err(format!("an error that names no line: {e}")),
    }
}

/// Values that have broken parsers: extremes, wrong types, non-numbers.
const DICT: &[&str] = &[
    "0",
    "-1",
    "1",
    "2",
    "-0.0",
    "0.5",
    "1e308",
    "-1e308",
    "1e-300",
    "nan",
    "inf",
    "-inf",
    "2e10",
    "65536",
    "4294967295",
    "9223372036854775807",
    "-9223372036854775808",
    "18446744073709551615",
    "99999999999999999999999",
    "true",
    "false",
    "null",
    "\"\"",
    "\"x\"",
    "\"./x.toml\"",
    "[]",
    "{}",
    "[[]]",
    "[0.0, 1.0]",
    "[[1e300, 1]]",
    "[[inf, 1]]",
    "[1.0, nan]",
];

/// Characters inserted at random places.
const INSERT: &[char] = &[
    '"', '[', ']', '{', '}', '=', ',', '\n', '.', '-', '9', 'e', '#', '\\', 'é', ' ', ':',
];

#[derive(Clone, Debug)]
enum Mutation {
    /// The n-th token (number, string, keyword) replaced by a dictionary word.
    Token(usize, usize),
    /// The n-th value set by a key (`key = V`, `"key": V`) replaced by a dictionary word: a
    /// field, where `Token` mostly hits the long arrays.
    Value(usize, usize),
    /// The n-th string replaced by one of 70,000 letters.
    LongString(usize),
    DeleteLine(usize),
    DuplicateLine(usize),
    SwapLines(usize, usize),
    Insert(usize, Vec<char>),
    Truncate(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        3 => (any::<usize>(), 0..DICT.len()).prop_map(|(n, w)| Mutation::Token(n, w)),
        4 => (any::<usize>(), 0..DICT.len()).prop_map(|(n, w)| Mutation::Value(n, w)),
        1 => any::<usize>().prop_map(Mutation::LongString),
        2 => any::<usize>().prop_map(Mutation::DeleteLine),
        2 => any::<usize>().prop_map(Mutation::DuplicateLine),
        1 => (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Mutation::SwapLines(a, b)),
        2 => (any::<usize>(), prop::collection::vec(prop::sample::select(INSERT), 1..6))
            .prop_map(|(at, cs)| Mutation::Insert(at, cs)),
        1 => any::<usize>().prop_map(Mutation::Truncate),
    ]
}

/// Byte ranges of the values in `text`: quoted strings, numbers, bare words after `=` / `:`.
fn tokens(text: &str) -> Vec<std::ops::Range<usize>> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' && b[j] != b'\n' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            let end = (j + 1).min(b.len());
            out.push(i..end);
            i = end;
        } else if c.is_ascii_alphanumeric() || c == b'-' {
            let mut j = i;
            while j < b.len() && (b[j].is_ascii_alphanumeric() || b"_.+-".contains(&b[j])) {
                j += 1;
            }
            out.push(i..j);
            i = j;
        } else {
            i += 1;
        }
    }
    out
}

/// The tokens of `text` that a key sets: right after `=` or `:`.
fn values(text: &str) -> Vec<std::ops::Range<usize>> {
    tokens(text)
        .into_iter()
        .filter(|r| text[..r.start].trim_end().ends_with(['=', ':']))
        .collect()
}

/// The largest char boundary of `s` at or below `at`.
fn boundary(s: &str, at: usize) -> usize {
    (0..=at.min(s.len()))
        .rev()
        .find(|&i| s.is_char_boundary(i))
        .unwrap_or(0)
}

fn apply(seed: &str, muts: &[Mutation]) -> String {
    let mut s = seed.to_string();
    for m in muts {
        let lines = || s.split_inclusive('\n').map(str::to_string).collect::<Vec<_>>();
        match m {
            Mutation::Token(n, _) | Mutation::LongString(n) if !tokens(&s).is_empty() => {
                let word = match m {
                    Mutation::Token(_, w) => DICT[*w].to_string(),
                    _ => format!("\"{}\"", "L".repeat(70_000)),
                };
                let t = tokens(&s);
                s.replace_range(t[n % t.len()].clone(), &word);
            }
            Mutation::Value(n, w) if !values(&s).is_empty() => {
                let v = values(&s);
                s.replace_range(v[n % v.len()].clone(), DICT[*w]);
            }
            Mutation::DeleteLine(n) | Mutation::DuplicateLine(n) if !s.is_empty() => {
                let mut l = lines();
                let i = n % l.len();
                if matches!(m, Mutation::DeleteLine(_)) {
                    l.remove(i);
                } else {
                    l.insert(i, l[i].clone());
                }
                s = l.concat();
            }
            Mutation::SwapLines(a, b) if !s.is_empty() => {
                let mut l = lines();
                let n = l.len();
                l.swap(a % n, b % n);
                s = l.concat();
            }
            Mutation::Insert(at, cs) => {
                let at = boundary(&s, at % (s.len() + 1));
                s.insert_str(at, &cs.iter().collect::<String>());
            }
            Mutation::Truncate(at) => {
                let at = boundary(&s, at % (s.len() + 1));
                s.truncate(at);
            }
            _ => {}
        }
    }
    s
}

fn files_in(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.is_file())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn seeds(t: &Target) -> Vec<String> {
    let mut out: Vec<String> = t
        .seed_dirs
        .iter()
        .flat_map(|d| files_in(&Path::new(ROOT).join(d)))
        .map(|p| std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display())))
        .collect();
    if t.name == "experiment" {
        // One that names its machine and variant by path, as a user's does.
        out.push(experiment_naming("./piii-850.toml", "./2.4.18+mini-ll.toml"));
    }
    out.extend(regressions(t).into_iter().map(|(_, text)| text));
    assert!(!out.is_empty(), "no seeds for {}", t.name);
    out
}

fn regressions(t: &Target) -> Vec<(PathBuf, String)> {
    files_in(&Path::new(ROOT).join("fuzz/regressions").join(t.name))
        .into_iter()
        .map(|p| {
            let text = std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            (p, String::from_utf8_lossy(&text).into_owned())
        })
        .collect()
}

/// Run `check` on `text`: a panic, an error or a case over [`CASE_LIMIT`] is a failure.
fn run_case(check: fn(&str) -> Result<(), String>, text: &str) -> Result<(), String> {
    let t0 = Instant::now();
    let r = std::panic::catch_unwind(|| check(text)).unwrap_or_else(|p| {
        let why = p
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        Err(format!("panicked: {why}"))
    });
    match r {
        Ok(()) if t0.elapsed() > CASE_LIMIT => Err(format!("took {:?}", t0.elapsed())),
        r => r,
    }
}

fn budget() -> Duration {
    let secs = std::env::var("LATLAB_FUZZ_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(DEFAULT_SECS);
    Duration::from_secs(secs)
}

/// Mutate `t`'s seeds for the time budget; on a failure, shrink it, save it where the message
/// says and fail.
fn fuzz(t: &Target) {
    let seeds = seeds(t);
    let seed: u64 = std::env::var("LATLAB_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    let mut key = [0u8; 32];
    for (i, b) in key.iter_mut().enumerate() {
        *b = (seed >> (8 * (i % 8))) as u8 ^ i as u8;
    }
    let config = Config {
        failure_persistence: None,
        max_shrink_time: 30_000,
        ..Config::default()
    };
    let mut runner = TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &key));
    let strategy =
        (0..seeds.len(), prop::collection::vec(mutation(), 1..5)).prop_map(move |(i, muts)| apply(&seeds[i], &muts));
    let deadline = Instant::now() + budget();
    let mut cases = 0u64;
    // Panics are caught and reported by `run_case`; the default hook would print each one.
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let outcome = loop {
        if Instant::now() >= deadline {
            break Ok(());
        }
        let tree = strategy.new_tree(&mut runner).expect("the strategy always generates");
        cases += 1;
        let check = t.check;
        match runner.run_one(tree, |text| run_case(check, &text).map_err(TestCaseError::fail)) {
            Ok(_) => {}
            Err(e) => break Err(e),
        }
    };
    std::panic::set_hook(hook);
    eprintln!(
        "fuzz {}: {cases} inputs in {:?} (LATLAB_FUZZ_SEED={seed})",
        t.name,
        budget()
    );
    if let Err(e) = outcome {
        let (why, input) = match e {
            TestError::Fail(why, input) => (why.to_string(), input),
            TestError::Abort(why) => panic!("fuzz {}: aborted: {why}", t.name),
        };
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join("fuzz-failures")
            .join(t.name);
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join(format!("{seed}.{}", t.ext));
        std::fs::write(&file, &input).unwrap();
        panic!(
            "fuzz {}: {why}\nthe input (shrunk) is in {}; once fixed, add it to fuzz/regressions/{}/ \
             (LATLAB_FUZZ_SEED={seed} repeats this run)",
            t.name,
            file.display(),
            t.name
        );
    }
}

#[test]
fn fuzz_experiment_files() {
    fuzz(&TARGETS[0]);
}

#[test]
fn fuzz_variant_files() {
    fuzz(&TARGETS[1]);
}

#[test]
fn fuzz_machine_files() {
    fuzz(&TARGETS[2]);
}

#[test]
fn fuzz_result_files() {
    fuzz(&TARGETS[3]);
}

#[test]
fn fuzz_cyclictest_files() {
    fuzz(&TARGETS[4]);
}

/// Every input that failed once, and every seed, passes its target's check.
#[test]
fn regressions_stay_fixed() {
    let mut failed = Vec::new();
    let mut replayed = 0;
    for t in &TARGETS {
        let regs = regressions(t);
        assert!(!regs.is_empty(), "{}: no regressions", t.name);
        let seeded = seeds(t);
        for (name, text) in regs
            .iter()
            .map(|(p, text)| (p.display().to_string(), text.as_str()))
            .chain(seeded.iter().map(|s| ("a seed".to_string(), s.as_str())))
        {
            replayed += 1;
            if let Err(e) = run_case(t.check, text) {
                failed.push(format!("{} {name}: {e}", t.name));
            }
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
    assert!(replayed > 20, "{replayed}");
}

#[test]
fn mutations_change_what_they_say() {
    let s = "a = 1\nb = \"x\"\n";
    assert_eq!(apply(s, &[Mutation::Token(0, 9)]), "nan = 1\nb = \"x\"\n");
    assert_eq!(apply(s, &[Mutation::Token(1, 10)]), "a = inf\nb = \"x\"\n");
    assert_eq!(apply(s, &[Mutation::Value(1, 0)]), "a = 1\nb = 0\n");
    // A key's value, not an array's element.
    assert_eq!(
        apply("{\"k\": [1, 2], \"m\": 7}", &[Mutation::Value(0, 9)]),
        "{\"k\": [1, 2], \"m\": nan}"
    );
    assert_eq!(apply(s, &[Mutation::DeleteLine(1)]), "a = 1\n");
    assert_eq!(apply(s, &[Mutation::DuplicateLine(0)]), "a = 1\na = 1\nb = \"x\"\n");
    assert_eq!(apply(s, &[Mutation::SwapLines(0, 1)]), "b = \"x\"\na = 1\n");
    assert_eq!(apply(s, &[Mutation::Truncate(3)]), "a =");
    assert_eq!(apply(s, &[Mutation::Insert(1, vec!['[', 'é'])]), "a[é = 1\nb = \"x\"\n");
    assert_eq!(apply(s, &[Mutation::LongString(3)]).len(), s.len() - 3 + 70_002);
    // The checks fail on what they guard against.
    assert!(run_case(|_| panic!("boom"), "").unwrap_err().contains("boom"));
}
