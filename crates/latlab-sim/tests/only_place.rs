//! The architecture invariants of docs/ARCHITECTURE.md that are statements about where code
//! lives, checked over the crate's source (test modules excluded): the model knows nothing of
//! files, command lines or output; one place asks which preemption model a variant names;
//! the assembly (`assemble.rs`) alone reads which scheduler, timers, block layer, writeback,
//! reclaim and journal; the sim's folders import each other only
//! along the edges listed here, which form a DAG; no bag of every subsystem's state sits
//! in the core.

use std::path::{Path, PathBuf};

/// Every `.rs` file under `src/`, with its non-test text ([`strip_tests`]).
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
            let code = strip_tests(&text);
            let rel = p.strip_prefix(&src).unwrap().to_string_lossy().replace('\\', "/");
            (rel, code)
        })
        .collect()
}

/// `text` without its `#[cfg(test)]` items: the item after each such line (a `mod tests`
/// block, a test helper's `fn` or `impl`, a `use ...;`) is dropped up to where its braces
/// close, and the code after it is kept.
fn strip_tests(text: &str) -> String {
    let mut out = String::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if line.trim() != "#[cfg(test)]" {
            out.push_str(line);
            out.push('\n');
            continue;
        }
        let (mut depth, mut opened) = (0i64, false);
        for item in lines.by_ref() {
            let code = item.split("//").next().unwrap();
            depth += code.matches('{').count() as i64 - code.matches('}').count() as i64;
            opened |= code.contains('{');
            if (opened && depth <= 0) || (!opened && code.trim_end().ends_with(';')) {
                break;
            }
        }
    }
    out
}

#[test]
fn the_test_stripper_keeps_the_code_after_a_test_item() {
    let text = "use a;\n#[cfg(test)]\nuse b;\nfn f() {}\n#[cfg(test)]\nimpl X {\n    fn g() {\n    }\n}\nfn h() {}\n#[cfg(test)]\nmod tests {\n    use crate::x;\n}\n";
    assert_eq!(strip_tests(text), "use a;\nfn f() {}\nfn h() {}\n");
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
fn one_place_asks_which_preemption_model() {
    // variant.rs defines and validates the names; preempt.rs acts on them.
    assert_eq!(
        offenders("PreemptModel::", &["variant.rs", "kernel/preempt.rs"]),
        Vec::<String>::new(),
        "`PreemptModel::` outside kernel/preempt.rs (docs/ARCHITECTURE.md, Architecture invariants)"
    );
    // Whether spinlocks sleep (PREEMPT_RT) is part of the same rule (`preempt::spins`).
    for pattern in ["LockFlavour::", ".sleeping_locks()"] {
        assert_eq!(
            offenders(pattern, &["variant.rs", "kernel/preempt.rs"]),
            Vec::<String>::new(),
            "`{pattern}` outside kernel/preempt.rs (docs/ARCHITECTURE.md, Architecture invariants)"
        );
    }
}

/// Issue 30, item 1: the assembly is the only code that reads which implementation of each
/// subsystem a variant names; everything else asks the subsystem's object for behaviour.
#[test]
fn only_the_assembly_reads_which_implementation_each_subsystem_uses() {
    for pattern in [
        "SchedClass::",
        "TimerSubsystem::",
        "Writeback::",
        "Reclaim::",
        "Journal::Jbd",
        "Fs::Ext",
        "Elevator::",
        "Block::",
        // The variant's capability questions by generation: callers ask the subsystem.
        ".page_based()",
        ".rmap()",
        ".kjournald_holds_bkl()",
        ".use_26_block_layer(",
        ".use_blk_mq(",
        ".timer_slack(",
        "variant.writeback",
        "variant.reclaim",
        "variant.journal",
        "variant.elevator",
        "variant.block",
        "variant.sched",
        "variant.timer",
        "v.timer",
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

/// The sim's folders (subsystems), and `cpu/`, the CPU loop and the system-call table above
/// them. A folder's module file at the crate root (`kernel.rs`) belongs to its folder.
const FOLDERS: [&str; 9] = [
    "cpu", "dev", "fs", "kernel", "mm", "measure", "net", "sched", "workload",
];

/// The crate-root modules that assemble the folders: nothing under a folder imports them.
const TOP: [&str; 2] = ["assemble", "lib"];

/// The folder (or crate-root module) a source file belongs to.
fn node(file: &str) -> &str {
    match file.split_once('/') {
        Some((folder, _)) => folder,
        None => file.trim_end_matches(".rs"),
    }
}

/// The imports between the sim's folders in `sources`: (from, to) for each `crate::to` path
/// (a `use` line or a path in code, comments aside) in a file of folder `from`, `to` a
/// folder or a [`TOP`] module. The crate-root modules other than a folder's own are not
/// nodes (`lib.rs`, `assemble.rs` above everything; `engine`, `machine`, `spread`, `variant`
/// the data every folder reads).
fn folder_edges(sources: Vec<(String, String)>) -> std::collections::BTreeSet<(String, String)> {
    let mut edges = std::collections::BTreeSet::new();
    for (file, code) in sources {
        let from = node(&file);
        if !FOLDERS.contains(&from) {
            continue;
        }
        for line in code.lines().map(|l| l.split("//").next().unwrap()) {
            for (i, _) in line.match_indices("crate::") {
                let rest = &line[i + "crate::".len()..];
                let to: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if to != from && (FOLDERS.contains(&to.as_str()) || TOP.contains(&to.as_str())) {
                    edges.insert((from.to_string(), to));
                }
            }
        }
    }
    edges
}

/// A cycle among `edges` (its nodes in order, the first repeated at the end), if there is
/// one: a depth-first search that meets a node still on its stack.
fn find_cycle(edges: &[(&str, &str)]) -> Option<Vec<String>> {
    use std::collections::BTreeMap;
    let mut next: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for &(a, b) in edges {
        next.entry(a).or_default().push(b);
        next.entry(b).or_default();
    }
    // 0: not seen, 1: on the stack, 2: done.
    let mut mark: BTreeMap<&str, u8> = next.keys().map(|&n| (n, 0)).collect();
    fn visit<'a>(
        n: &'a str,
        next: &BTreeMap<&'a str, Vec<&'a str>>,
        mark: &mut BTreeMap<&'a str, u8>,
        stack: &mut Vec<&'a str>,
    ) -> Option<Vec<String>> {
        mark.insert(n, 1);
        stack.push(n);
        for &m in &next[n] {
            match mark[m] {
                1 => {
                    let at = stack.iter().position(|&s| s == m).unwrap();
                    let mut cycle: Vec<String> = stack[at..].iter().map(|s| s.to_string()).collect();
                    cycle.push(m.to_string());
                    return Some(cycle);
                }
                0 => {
                    if let Some(c) = visit(m, next, mark, stack) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        stack.pop();
        mark.insert(n, 2);
        None
    }
    let nodes: Vec<&str> = next.keys().copied().collect();
    for n in nodes {
        if mark[n] == 0 {
            if let Some(c) = visit(n, &next, &mut mark, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

/// The imports between the sim's folders, a DAG (checked below): `cpu/` (the CPU loop and
/// the system-call table) imports the subsystems, which import `kernel/`'s core (code paths,
/// locks, the catalog, tasks, preemption, tracepoints, the scheduler class, the core's
/// state); the subsystems are layered dev < mm < fs, each layer's state holding the one
/// below and its paths reaching that layer and the ones beneath; `measure/` takes the
/// tracepoints, and `workload/` programs make typed system calls.
const ALLOWED_EDGES: &[(&str, &str)] = &[
    ("cpu", "dev"),
    ("cpu", "fs"),
    ("cpu", "kernel"),
    ("cpu", "mm"),
    ("cpu", "net"),
    ("cpu", "workload"),
    ("dev", "kernel"),
    ("fs", "dev"),
    ("fs", "kernel"),
    ("fs", "mm"),
    ("measure", "kernel"),
    ("measure", "sched"),
    ("mm", "dev"),
    ("mm", "kernel"),
    ("net", "kernel"),
    ("sched", "kernel"),
    ("workload", "fs"),
    ("workload", "kernel"),
    ("workload", "measure"),
];

#[test]
fn the_allowed_imports_between_the_sims_folders_form_a_dag() {
    assert_eq!(find_cycle(ALLOWED_EDGES), None);
}

#[test]
fn the_cycle_check_finds_a_cycle() {
    let cycle = find_cycle(&[("a", "d"), ("b", "c"), ("c", "a"), ("a", "b")]).expect("a -> b -> c -> a");
    assert_eq!(cycle, ["a", "b", "c", "a"]);
    assert_eq!(find_cycle(&[("fs", "fs")]).expect("a self-loop").len(), 2);
    assert_eq!(find_cycle(&[("a", "b"), ("a", "c"), ("b", "c")]), None);
}

#[test]
fn the_sims_folders_import_each_other_only_along_the_listed_edges() {
    // The check reads one path per `crate::`: a grouped `use crate::{..}` would hide edges.
    assert_eq!(
        offenders("crate::{", &[]),
        Vec::<String>::new(),
        "grouped `use crate::{{..}}`"
    );
    let edges = folder_edges(sources());
    let allowed: std::collections::BTreeSet<(String, String)> = ALLOWED_EDGES
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    let new: Vec<_> = edges.difference(&allowed).collect();
    assert!(
        new.is_empty(),
        "imports between the sim's folders not in ALLOWED_EDGES (docs/ARCHITECTURE.md, Architecture invariants): {new:?}"
    );
    let gone: Vec<_> = allowed.difference(&edges).collect();
    assert!(
        gone.is_empty(),
        "ALLOWED_EDGES lists imports the code no longer has; take them off the list: {gone:?}"
    );
}

#[test]
fn the_edge_check_reads_use_lines_and_paths_and_skips_comments_and_the_crate_root() {
    let src = |f: &str, code: &str| (f.to_string(), code.to_string());
    let edges = folder_edges(vec![
        src("mm/a.rs", "use crate::kernel::path::Path;\nuse crate::mm::lru;"),
        src("fs/b.rs", "    let x = crate::dev::disk::Dir::Read; // crate::sched::y"),
        src("net/c.rs", "/// [`crate::workload`]"),
        src("lib.rs", "use crate::kernel::Kernel;"),
        src("sched/d.rs", "use crate::variant::Variant; use crate::kernels_like::X;"),
        src("kernel.rs", "pub use crate::sched::Scheduler;"),
        src("dev/e.rs", "let s = crate::assemble::subsystems(v, m);"),
    ]);
    let want: std::collections::BTreeSet<(String, String)> = [
        ("dev", "assemble"),
        ("fs", "dev"),
        ("kernel", "sched"),
        ("mm", "kernel"),
    ]
    .iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    assert_eq!(edges, want);
}

/// Issue 30, item 2: no struct holds every subsystem's state in the core. `kernel/` names
/// nothing of the layers above it (the edge check above, said here as the invariant), and
/// the old bag, `KState`, is defined nowhere: the state the CPU loop runs paths on is the
/// file system's, `fs::state::FsState`, which holds mm's (`mm::state::MmState`), which
/// holds the devices' (`dev::DevState`), which holds the core's (`kernel::state::Core`).
#[test]
fn no_bag_of_every_subsystems_state_in_the_core() {
    let core: Vec<String> = sources()
        .into_iter()
        .map(|(f, _)| f)
        .filter(|f| node(f) != "kernel")
        .collect();
    let others: Vec<&str> = core.iter().map(String::as_str).collect();
    for layer in [
        "crate::dev",
        "crate::fs",
        "crate::mm",
        "crate::net",
        "crate::workload",
        "crate::cpu",
    ] {
        assert_eq!(
            offenders(layer, &others),
            Vec::<String>::new(),
            "`{layer}` under kernel/: the core names no layer above it (docs/ARCHITECTURE.md, Architecture invariants)"
        );
    }
    assert_eq!(
        offenders("struct KState", &[]),
        Vec::<String>::new(),
        "the shared kernel-state bag is back"
    );
    // Each layer's state holds the one beneath it and nothing above.
    for (file, ty, below) in [
        ("dev/mod.rs", "DevState", "core: Core"),
        ("mm/state.rs", "MmState", "dev: DevState"),
        ("fs/state.rs", "FsState", "vm: MmState"),
    ] {
        let code = &sources().into_iter().find(|(f, _)| f == file).expect(file).1;
        let start = code
            .find(&format!("pub struct {ty} {{\n"))
            .unwrap_or_else(|| panic!("no `pub struct {ty}` in {file}"));
        let body = &code[start..code[start..].find("\n}\n").unwrap() + start];
        assert!(body.contains(below), "{file}: {ty} holds `{below}`");
    }
}

#[test]
fn the_cpu_loop_names_no_measurement() {
    // The kernel emits tracepoint events (kernel/tracepoint.rs); the measurements are sinks
    // registered in lib.rs. Nothing under kernel/ or cpu/ names one.
    let kernel: Vec<String> = sources()
        .into_iter()
        .map(|(f, _)| f)
        .filter(|f| !["kernel", "cpu"].contains(&node(f)))
        .collect();
    let allowed: Vec<&str> = kernel.iter().map(String::as_str).collect();
    for pattern in ["measure::", "Tracker", "PreemptOffTracer", "Recorder"] {
        assert_eq!(
            offenders(pattern, &allowed),
            Vec::<String>::new(),
            "`{pattern}` under kernel/ or cpu/ (docs/ARCHITECTURE.md, Architecture invariants)"
        );
    }
}

#[test]
fn only_the_kernels_own_threads_reach_kernel_state_from_a_program() {
    // A workload's program reaches the kernel through `ProgCx`'s named methods and its typed
    // system calls (ProgCx's state is private to workload/prog_cx.rs); the kernel threads'
    // loops (the subsystems' threads', the interrupt threads' and ksoftirqd's), kernel code,
    // take the state themselves.
    assert_eq!(
        offenders(".kthread_state()", &["cpu/kthreads.rs", "cpu/irq_thread.rs"]),
        Vec::<String>::new(),
        "a program reaching kernel state (docs/ARCHITECTURE.md, Architecture invariants)"
    );
}

/// Subsystem state that only its own folder reaches: its fields are private or `pub(super)`
/// (the folder's), and other folders call methods named after what the kernel does
/// (`BufferCache::nr_dirty`, `Dcache::inodes_unused`, `Journal::commit_expires`,
/// `Mm::free`).
const STATE_BEHIND_METHODS: &[(&str, &str)] = &[
    ("dev/disk.rs", "Disk"),
    ("dev/rtc.rs", "Rtc"),
    ("fs/buffer.rs", "BufferCache"),
    ("fs/dcache.rs", "Dcache"),
    ("fs/ext3.rs", "Ext3"),
    ("fs/jbd.rs", "Journal"),
    ("kernel/posix_timer.rs", "PosixTimers"),
    ("kernel/state.rs", "KthreadPids"),
    ("mm/mod.rs", "Mm"),
    ("mm/reclaim.rs", "PageReclaim"),
    ("mm/writeback.rs", "DirtyWriteback"),
];

/// The fields of `pub struct ty { .. }` in `code` that any folder may reach (`pub name:`).
fn public_fields(code: &str, ty: &str) -> Option<Vec<String>> {
    let start = code.find(&format!("pub struct {ty} {{\n"))?;
    let body = &code[start..];
    let body = &body[..body.find("\n}\n")?];
    Some(
        body.lines()
            .filter_map(|l| l.strip_prefix("    pub "))
            .map(|l| l.split(':').next().unwrap().to_string())
            .collect(),
    )
}

#[test]
fn subsystem_state_is_reached_through_its_methods() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    for (file, ty) in STATE_BEHIND_METHODS {
        // The whole file: a struct may follow a `#[cfg(test)]` item.
        let code = std::fs::read_to_string(src.join(file)).unwrap();
        let fields = public_fields(&code, ty).unwrap_or_else(|| panic!("no `pub struct {ty}` in {file}"));
        assert_eq!(
            fields,
            Vec::<String>::new(),
            "{file}: public fields of {ty} (docs/ARCHITECTURE.md, Architecture invariants)"
        );
    }
}

#[test]
fn the_field_check_finds_a_public_field() {
    let code = "/// A cache.\npub struct Cache {\n    pub(super) n: u64,\n    pub dirty: u64,\n    lo: u64,\n}\n";
    assert_eq!(public_fields(code, "Cache"), Some(vec!["dirty".to_string()]));
    assert_eq!(public_fields(code, "Other"), None);
}
