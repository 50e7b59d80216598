//! The architecture invariants of docs/ARCHITECTURE.md that are statements about where code
//! lives, checked over the crate's source (test modules excluded): the model knows nothing of
//! files, command lines or output; one place asks which preemption model, which scheduler
//! and which timer subsystem a variant names.

use std::path::{Path, PathBuf};

/// Every `.rs` file under `src/`, with its non-test text (cut at `#[cfg(test)]`: the
/// crate keeps its unit tests in a `mod tests` at the end of a file).
fn sources() -> Vec<(String, String)> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    walk(&src, &mut files);
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            let code = text.split("#[cfg(test)]").next().unwrap().to_string();
            let rel = p.strip_prefix(&src).unwrap().to_string_lossy().replace('\\', "/");
            (rel, code)
        })
        .collect()
}

/// The files (other than `allowed`) whose code, comments aside, contains `pattern`.
fn offenders(pattern: &str, allowed: &[&str]) -> Vec<String> {
    sources()
        .into_iter()
        .filter(|(f, _)| !allowed.contains(&f.as_str()))
        .filter(|(_, code)| {
            code.lines()
                .map(|l| l.split("//").next().unwrap())
                .any(|l| l.contains(pattern))
        })
        .map(|(f, _)| f)
        .collect()
}

#[test]
fn the_model_knows_nothing_of_files_command_lines_or_output() {
    for pattern in [
        "std::fs",
        "std::env",
        "std::io",
        "println!",
        "eprintln!",
        "print!(",
        "File::",
    ] {
        assert_eq!(
            offenders(pattern, &[]),
            Vec::<String>::new(),
            "`{pattern}` in the model"
        );
    }
}

#[test]
fn one_place_asks_which_preemption_model_scheduler_and_timer_subsystem() {
    // variant.rs defines and validates the names; the one place that acts on each follows.
    for (pattern, place) in [
        ("PreemptModel::", "kernel/preempt.rs"),
        ("SchedClass::", "sched/mod.rs"),
        ("TimerSubsystem::", "kernel/mod.rs"),
    ] {
        assert_eq!(
            offenders(pattern, &["variant.rs", place]),
            Vec::<String>::new(),
            "`{pattern}` outside {place} (docs/ARCHITECTURE.md, Architecture invariants)"
        );
    }
}

#[test]
fn the_cpu_loop_names_no_measurement() {
    // The kernel emits tracepoint events (kernel/tracepoint.rs); the measurements are sinks
    // registered in lib.rs. Nothing under kernel/ names one.
    let kernel: Vec<String> = sources()
        .into_iter()
        .map(|(f, _)| f)
        .filter(|f| !f.starts_with("kernel/"))
        .collect();
    let allowed: Vec<&str> = kernel.iter().map(String::as_str).collect();
    for pattern in ["measure::", "Tracker", "PreemptOffTracer", "Recorder"] {
        assert_eq!(
            offenders(pattern, &allowed),
            Vec::<String>::new(),
            "`{pattern}` under kernel/ (docs/ARCHITECTURE.md, Architecture invariants)"
        );
    }
}
