//! The architecture invariants of docs/ARCHITECTURE.md that are statements about where code
//! lives, checked over the crate's source (test modules excluded): the model knows nothing of
//! files, command lines or output; one place asks which preemption model and which timer
//! subsystem a variant names; the assembly (`assemble.rs`) alone reads which scheduler,
//! block layer, writeback, reclaim and journal; the sim's folders import each other only
//! along the edges listed here.

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
    offenders_in(sources(), pattern, allowed)
}

/// [`offenders`] among `sources` (file, code).
fn offenders_in(sources: Vec<(String, String)>, pattern: &str, allowed: &[&str]) -> Vec<String> {
    sources
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
fn one_place_asks_which_preemption_model_and_timer_subsystem() {
    // variant.rs defines and validates the names; the one place that acts on each follows.
    for (pattern, place) in [
        ("PreemptModel::", "kernel/preempt.rs"),
        // The CPU loop's arm_timer / timer_fires_at: where an expiry event is scheduled.
        ("TimerSubsystem::", "kernel/mod.rs"),
    ] {
        assert_eq!(
            offenders(pattern, &["variant.rs", place]),
            Vec::<String>::new(),
            "`{pattern}` outside {place} (docs/ARCHITECTURE.md, Architecture invariants)"
        );
    }
}

/// Issue 30, item 1: the assembly is the only code that reads which implementation of each
/// subsystem a variant names; everything else asks the subsystem's object for behaviour.
#[test]
fn only_the_assembly_reads_which_implementation_each_subsystem_uses() {
    for pattern in [
        "SchedClass::",
        "Writeback::",
        "Reclaim::",
        "Journal::Jbd",
        "Elevator::",
        "Block::",
        // The variant's capability questions by generation: callers ask the subsystem.
        ".page_based()",
        ".rmap()",
        ".kjournald_holds_bkl()",
        ".use_26_block_layer(",
        ".use_blk_mq(",
        "variant.writeback",
        "variant.reclaim",
        "variant.journal",
        "variant.elevator",
        "variant.block",
        "variant.sched",
    ] {
        assert_eq!(
            offenders(pattern, &["variant.rs", "assemble.rs"]),
            Vec::<String>::new(),
            "`{pattern}` outside assemble.rs (docs/ARCHITECTURE.md, Architecture invariants)"
        );
    }
}

#[test]
fn the_check_finds_a_generation_asked_at_a_call_site() {
    // What a regression looks like: a reclaim path comparing against a generation's name;
    // a comment that names one asks nothing.
    let src = |f: &str, code: &str| (f.to_string(), code.to_string());
    let tree = vec![
        src("assemble.rs", "Reclaim::Rmap2617 => reclaim::Kind::Rmap2617,"),
        src("mm/vmscan26.rs", "    if k.reclaim == Reclaim::Rmap2617 {"),
        src("mm/vmscan.rs", "    // unlike Reclaim::Vmscan24's"),
    ];
    assert_eq!(
        offenders_in(tree, "Reclaim::", &["variant.rs", "assemble.rs"]),
        ["mm/vmscan26.rs"]
    );
}
