//! Workload files (`workloads/*.toml`, format in docs/experiments.md "Workload files"): a name,
//! the commands a shell runs one after another ([`CommandSpec`]'s serde form), the idle gap
//! between them, the tasks started beside them (`[[task]]`, [`TaskDef`]'s serde form), and the
//! machine's state when the script starts (`[preload]`, from a named base state and/or field by
//! field). Errors name the file, the line and the field.

use crate::file::{read_named, syntax, ExpError, Files, Kind, PreloadRepr};
use latlab_scenario::scenario::{line_after, line_of_key};
use latlab_sim::workload::sizes;
use latlab_sim::workload::task::{self, TaskDef, TaskError};
use latlab_sim::{CommandSpec, MachineProfile, Preload, Workload};
use serde::Deserialize;

/// A workload file as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WorkloadRepr {
    /// The workload's name (a built-in's is its file's stem).
    name: String,
    /// Idle time between two commands (a person at the keyboard), ms; default 0.
    #[serde(default)]
    gap_ms: u64,
    /// The machine's state when the script starts.
    preload: PreloadRepr,
    /// The commands, run one after another (none: a workload of tasks only).
    #[serde(default)]
    command: Vec<CommandSpec>,
    /// Tasks started with the run, beside the commands.
    #[serde(default)]
    task: Vec<TaskDef>,
}

/// A named starting state a `[preload]` table can start from (`base = "lived-in"`), its
/// fields then overriding. `idle_anon_mib` is 0 in both: a file says what its desktop holds.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum PreloadBase {
    /// A desktop that has been up for days: page cache full of old 64 KiB files, and the
    /// dentries and inodes of updatedb's nightly walk (a 2002 developer's box: a distribution
    /// plus a few kernel trees, ~150,000 files). updatedb's walk looks every dentry up again
    /// each night, so they carry DCACHE_REFERENCED; the cache was filled by reading, so the
    /// VM reclaimed before the run begins.
    LivedIn,
    /// A box booted into the kernel under test just before the run: no old page cache, only
    /// the dentries of boot and login (~20,000, an estimate: init scripts, X, the session's
    /// files), none looked up twice, nothing swapped.
    FreshBoot,
}

impl PreloadBase {
    pub fn preload(self) -> Preload {
        match self {
            PreloadBase::LivedIn => Preload {
                cache_full: true,
                reclaimed_before: true,
                old_file_kb: 64,
                unused_dentries: 150_000,
                referenced: true,
                updatedb_after: false,
                idle_anon_mib: 0,
                swapped_mib: 0,
            },
            PreloadBase::FreshBoot => Preload {
                cache_full: false,
                reclaimed_before: false,
                old_file_kb: 64,
                unused_dentries: 20_000,
                referenced: false,
                updatedb_after: false,
                idle_anon_mib: 0,
                swapped_mib: 0,
            },
        }
    }
}

const WORKLOAD: Kind = Kind {
    field: "workload",
    what: "workload",
    dir: "workloads",
    builtins: crate::builtin::WORKLOADS,
};

/// A workload: built in (`seed000-script`) or a file's path (read through `files`), named at
/// `origin:line`.
pub fn workload(origin: &str, name: &str, line: usize, files: Files) -> Result<Workload, ExpError> {
    named(origin, name, line, files).map(|n| n.workload)
}

/// A workload with the file it came from, so that what is checked later (against the machine
/// and kernel of a run) is reported at the workload file's line.
#[derive(Clone, Debug)]
pub struct Named {
    pub workload: Workload,
    /// The file's name in errors (`workloads/NAME.toml` for a built-in).
    pub file: String,
    pub text: String,
}

/// [`workload`], with its file.
pub fn named(origin: &str, name: &str, line: usize, files: Files) -> Result<Named, ExpError> {
    let (file, text) = read_named(&WORKLOAD, origin, line, name, files)?;
    let workload = parse(&file, &text)?;
    Ok(Named { workload, file, text })
}

impl Named {
    /// Its `[preload]` field `field` is wrong for the machine: the error at the field's line
    /// in the workload file (its `[preload]` table's when the field comes from its base).
    pub fn preload_error(&self, field: &str, why: String) -> ExpError {
        let field = format!("preload.{field}");
        ExpError::Field {
            origin: self.file.clone(),
            line: crate::file::line_of_field(&self.text, &field),
            field,
            why,
        }
    }

    /// Its tasks on a kernel with `cpus` CPUs up, a runqueue per CPU or not, with POSIX
    /// timers or not.
    pub fn check_kernel(&self, cpus: u32, per_cpu: bool, posix_timers: bool) -> Result<(), ExpError> {
        task::check_machine(&self.workload.tasks, cpus, per_cpu, posix_timers)
            .map_err(|e| task_error(&self.file, &self.text, e))
    }

    /// Its machine-dependent checks: the preload fits the machine.
    pub fn check_machine(&self, machine: &MachineProfile) -> Result<(), ExpError> {
        self.workload
            .preload
            .validate(machine)
            .map_err(|(field, why)| self.preload_error(field, why))
    }
}

/// A task's mistake at its line ([`TaskError::line`]).
fn task_error(file: &str, text: &str, e: TaskError) -> ExpError {
    ExpError::Field {
        origin: file.into(),
        line: e.line(text),
        field: e.field,
        why: e.why,
    }
}

/// A workload file's text parsed and checked; `file` names it in errors.
pub fn parse(file: &str, text: &str) -> Result<Workload, ExpError> {
    let w: WorkloadRepr = toml::from_str(text).map_err(|e| syntax(file, text, e))?;
    let field_error = |field: String, line: usize, why: String| ExpError::Field {
        origin: file.into(),
        line,
        field,
        why,
    };
    if w.name.trim().is_empty() {
        return Err(field_error(
            "name".into(),
            line_of_key(text, "name", 0),
            "must not be empty".into(),
        ));
    }
    if w.command.is_empty() && w.task.is_empty() {
        return Err(field_error(
            "command".into(),
            line_of_key(text, "name", 0),
            "a workload needs at least one [[command]] or [[task]]".into(),
        ));
    }
    let preload = w.preload.resolve().map_err(|missing| {
        field_error(
            format!("preload.{missing}"),
            crate::file::line_of_field(text, "preload"),
            "missing: give it, or `base = \"lived-in\"` or `\"fresh-boot\"` to start from".into(),
        )
    })?;
    let mut seen = Vec::new();
    for c in &w.command {
        check(c, text, &mut seen).map_err(|(field, line, why)| field_error(field, line, why))?;
    }
    task::check(&w.task).map_err(|e| task_error(file, text, e))?;
    Ok(Workload {
        name: w.name,
        commands: w.command,
        gap_ms: w.gap_ms,
        preload,
        tasks: w.task,
    })
}

/// The kebab-case key a command is written under (`make-kernel`).
fn kind(c: &CommandSpec) -> &'static str {
    match c {
        CommandSpec::MakeKernel { .. } => "make-kernel",
        CommandSpec::MakeClean => "make-clean",
        CommandSpec::TarXfz { .. } => "tar-xfz",
        CommandSpec::RmRf { .. } => "rm-rf",
        CommandSpec::Dd { .. } => "dd",
        CommandSpec::CvsCo { .. } => "cvs-co",
        CommandSpec::Make { .. } => "make",
        CommandSpec::Dbench { .. } => "dbench",
        CommandSpec::Sync => "sync",
        CommandSpec::Idle { .. } => "idle",
        CommandSpec::Parallel(_) => "parallel",
        CommandSpec::MemHog { .. } => "mem-hog",
        CommandSpec::StressKernel { .. } => "stress-kernel",
        CommandSpec::CatOld { .. } => "cat-old",
        CommandSpec::Updatedb { .. } => "updatedb",
        CommandSpec::CpuHogs { .. } => "cpu-hogs",
        CommandSpec::Video { .. } => "video",
        CommandSpec::Iozone { .. } => "iozone",
        CommandSpec::Sysbench(_) => "sysbench",
    }
}

/// Check `c`'s values ([`sizes::check`]) and those of the commands inside it; `seen` counts
/// the commands of each kind met so far, in the file's order, to find the line of the one
/// at fault. An error is (field `command.KIND.FIELD`, line, why).
fn check(c: &CommandSpec, text: &str, seen: &mut Vec<&'static str>) -> Result<(), (String, usize, String)> {
    let k = kind(c);
    let nth = seen.iter().filter(|s| **s == k).count();
    seen.push(k);
    if let CommandSpec::Parallel(v) = c {
        return v.iter().try_for_each(|c| check(c, text, seen));
    }
    sizes::check(c).map_err(|(field, why)| {
        let at = line_of_key(text, k, nth);
        let key = field.rsplit('.').next().unwrap_or(&field);
        // The field's own line: on the command's line (an inline table) or below it.
        let line = line_after(text, at, key);
        (format!("command.{field}"), line, why)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtin;

    const MINE: &str = r#"# a user's workload
name = "mine"
gap_ms = 500

[preload]
base = "fresh-boot"
idle_anon_mib = 20

[[command]]
dd = { mb = 16, bs_kb = 64, group = "out" }

[[command]]
parallel = [
    { idle = { ms = 100 } },
    { make-kernel = { jobs = 2, objects = 4, headers = 3, cc_ms = [10, 20], tree_files = 10 } },
]

[[command]]
sync = {}
"#;

    #[test]
    fn every_builtin_workload_parses_and_is_named_by_its_file() {
        assert_eq!(builtin::WORKLOADS.len(), 11);
        for (n, text) in builtin::WORKLOADS {
            let w = parse(&format!("workloads/{n}.toml"), text).unwrap();
            assert_eq!(&w.name, n);
            assert!(!w.commands.is_empty() || !w.tasks.is_empty(), "{n}");
        }
    }

    #[test]
    fn the_documented_example_parses() {
        let doc = include_str!("../../../docs/experiments.md");
        let at = doc.find("## Workload files").expect("the section");
        let example = doc[at..].split("```toml\n").nth(1).and_then(|b| b.split("```").next());
        let example = example.expect("an example");
        let w = parse("my-load.toml", example).unwrap();
        assert_eq!((w.name.as_str(), w.commands.len()), ("my-load", 4));
        // The error the section shows for `bs_kb = 0`, as it shows it.
        let e = parse("my-load.toml", &example.replace("bs_kb = 1024", "bs_kb = 0")).unwrap_err();
        assert!(doc[at..].contains(&format!("\n{e}\n")), "{e}");
    }

    #[test]
    fn a_workload_file_gives_commands_gap_and_preload() {
        let w = parse("mine.toml", MINE).unwrap();
        assert_eq!(w.gap_ms, 500);
        assert_eq!(
            w.preload,
            Preload {
                idle_anon_mib: 20,
                ..PreloadBase::FreshBoot.preload()
            }
        );
        assert_eq!(w.commands.len(), 3);
        assert_eq!(
            w.commands[0],
            CommandSpec::Dd {
                mb: 16,
                bs_kb: 64,
                group: "out".into()
            }
        );
        let CommandSpec::Parallel(v) = &w.commands[1] else {
            panic!("{:?}", w.commands[1])
        };
        assert_eq!(v[0], CommandSpec::Idle { ms: 100 });
        assert!(matches!(v[1], CommandSpec::MakeKernel { cc1_mib: None, .. }));
        assert_eq!(w.commands[2], CommandSpec::Sync);
    }

    fn err(text: &str) -> String {
        parse("mine.toml", text).unwrap_err().to_string()
    }

    #[test]
    fn an_unknown_command_names_file_line_and_the_valid_ones() {
        let e = err(&MINE.replace("dd = {", "ddd = {"));
        assert!(e.starts_with("mine.toml:10:"), "{e}");
        assert!(e.contains("unknown variant `ddd`") && e.contains("make-kernel"), "{e}");
        // Inside a parallel group too.
        let e = err(&MINE.replace("{ idle =", "{ sleep ="));
        assert!(e.starts_with("mine.toml:14:") && e.contains("`sleep`"), "{e}");
    }

    #[test]
    fn an_unknown_field_names_file_line_and_field() {
        let e = err(&MINE.replace("bs_kb = 64", "bz_kb = 64"));
        assert!(
            e.starts_with("mine.toml:10:") && e.contains("bz_kb") && e.contains("bs_kb"),
            "{e}"
        );
        let e = err(&MINE.replace("gap_ms = 500", "gap = 500"));
        assert!(e.starts_with("mine.toml:3:") && e.contains("`gap`"), "{e}");
        let e = err(&MINE.replace("idle_anon_mib = 20", "idle_mib = 20"));
        assert!(e.starts_with("mine.toml:7:") && e.contains("`idle_mib`"), "{e}");
    }

    #[test]
    fn a_bad_value_names_file_line_and_field() {
        // Of the wrong type: the parser's error, at the field.
        let e = err(&MINE.replace("bs_kb = 64", "bs_kb = \"big\""));
        assert!(e.starts_with("mine.toml:10: field `command.dd.bs_kb`"), "{e}");
        // Out of range: the command's field and why.
        let e = err(&MINE.replace("bs_kb = 64", "bs_kb = 0"));
        assert!(
            e.starts_with("mine.toml:10: field `command.dd.bs_kb`") && e.contains("1..="),
            "{e}"
        );
        let e = err(&MINE.replace("cc_ms = [10, 20]", "cc_ms = [30, 20]"));
        assert!(
            e.starts_with("mine.toml:15: field `command.make-kernel.cc_ms`") && e.contains("[30, 20]"),
            "{e}"
        );
        let e = err(&MINE.replace("tree_files = 10", "tree_files = 0"));
        assert!(e.contains("make-kernel.tree_files"), "{e}");
        let e = err(&MINE.replace("base = \"fresh-boot\"", "base = \"old\""));
        assert!(
            e.starts_with("mine.toml:6: field `preload.base`") && e.contains("lived-in"),
            "{e}"
        );
        // Without a base, every field of [preload] is needed.
        let e = err(&MINE.replace("base = \"fresh-boot\"\n", ""));
        assert!(
            e.starts_with("mine.toml:5: field `preload.cache_full`") && e.contains("missing"),
            "{e}"
        );
    }
}

#[cfg(test)]
mod task_tests {
    use super::*;
    use crate::file::tests::{builtin_text, user_files};
    use crate::file::{no_files, parse as parse_experiment};
    use latlab_sim::workload::task::{PolicyName, StepDef};

    /// A workload of tasks, as a user writes one (line numbers matter below).
    const TASKS: &str = r#"name = "pair"

[preload]
base = "fresh-boot"

[[task]]
comm = "ping"
policy = "fifo"
priority = 80
steps = [
    { loop = { times = 100, steps = [
        { pipe-write = { to = "pong", bytes = 64 } },
        { pipe-read = { from = "pong", bytes = 64 } },
        { sleep = { us = 500 } },
    ] } },
]

[[task]]
comm = "pong"
nice = 5
steps = [
    { loop = { steps = [
        { pipe-read = { from = "ping", bytes = 64 } },
        { compute = { us = [10, 20] } },
        { pipe-write = { to = "ping", bytes = 64 } },
    ] } },
]
"#;

    fn err(text: &str) -> String {
        parse("mine.toml", text).unwrap_err().to_string()
    }

    #[test]
    fn a_workload_of_tasks_parses() {
        let w = parse("mine.toml", TASKS).unwrap();
        assert!(w.commands.is_empty());
        assert_eq!(w.tasks.len(), 2);
        assert_eq!((w.tasks[0].policy, w.tasks[0].priority), (PolicyName::Fifo, Some(80)));
        assert_eq!(w.tasks[1].nice, 5);
        let StepDef::Loop { times, steps } = &w.tasks[0].steps[0] else {
            panic!("{:?}", w.tasks[0].steps)
        };
        assert_eq!((*times, steps.len()), (Some(100), 3));
    }

    #[test]
    fn bad_tasks_name_file_line_and_field() {
        for (from, to, at) in [
            // An unknown step: the parser's error, at its line.
            ("{ sleep = { us = 500 } }", "{ nap = { us = 500 } }", "mine.toml:14:"),
            ("priority = 80", "priority = 0", "mine.toml:9: field `task.priority`"),
            ("priority = 80", "priority = 100", "mine.toml:9: field `task.priority`"),
            ("nice = 5", "nice = 20", "mine.toml:20: field `task.nice`"),
            ("priority = 80\n", "", "mine.toml:8: field `task.priority`"),
            (
                "policy = \"fifo\"",
                "policy = \"batch\"",
                "mine.toml:8: field `task.policy`",
            ),
            (
                "sleep = { us = 500 }",
                "sleep = { us = -5 }",
                "mine.toml:14: field `task.steps.loop.steps.sleep.us`",
            ),
            (
                "sleep = { us = 500 }",
                "sleep = { us = nan }",
                "mine.toml:14: field `task.steps.loop.steps.sleep.us`",
            ),
            (
                "compute = { us = [10, 20] }",
                "compute = { us = [30, 20] }",
                "mine.toml:24: field `task.steps.loop.steps.compute.us`",
            ),
            (
                "{ pipe-read = { from = \"ping\"",
                "{ pipe-read = { from = \"pingg\"",
                "mine.toml:23: field `task.steps.loop.steps.pipe-read.from`",
            ),
            // A value of the wrong type, inside the steps array: the same field path.
            (
                "bytes = 64 } },\n        { pipe-read = { from = \"pong\"",
                "bytes = \"x\" } },\n        { pipe-read = { from = \"pong\"",
                "mine.toml:12: field `task.steps.loop.steps.pipe-write.bytes`",
            ),
        ] {
            let text = TASKS.replacen(from, to, 1);
            assert_ne!(text, TASKS, "{from}");
            let e = err(&text);
            assert!(e.starts_with(at), "{to}: {e}");
        }
        let e = err(&TASKS
            .replace("{ nap", "{ sleep")
            .replace("{ sleep = { us = 500 } }", "{ nap = {} }"));
        assert!(e.contains("unknown variant `nap`") && e.contains("periodic"), "{e}");
        let e = err(&TASKS.replace("{ pipe-read = { from = \"pong\"", "{ pipe-read = { from = \"nobody\""));
        assert!(e.contains("`nobody`") && e.contains("ping, pong"), "{e}");
    }

    /// An experiment running `workload` (a file beside it) on `machine`, variant `variant`.
    fn experiment(workload: &str, machine: &str, variant: &str, extra: &str) -> Result<crate::Experiment, String> {
        let text = format!(
            "name = \"t\"\ntitle = \"t\"\nmachine = \"{machine}\"\nworkload = \"./w.toml\"\ntable = \"max-latency\"\n{extra}\n[[run]]\nlabel = \"a\"\nvariant = \"{variant}\"\nduration_s = 1\n"
        );
        let map = [("w.toml", workload.to_string())];
        let files = user_files(&map);
        parse_experiment("e.toml", &text, &files).map_err(|e| e.to_string())
    }

    #[test]
    fn tasks_are_checked_against_the_run_s_kernel_at_the_workload_file_s_line() {
        let e = experiment(TASKS, "piii-850", "6.18-eevdf-none", "").unwrap();
        let c = &e.runs[0].config;
        assert!(c.realfeel, "no periodic step: realfeel measures beside the tasks");
        let cpu1 = TASKS.replace("nice = 5", "nice = 5\naffinity = [1]");
        let e = experiment(&cpu1, "piii-850", "6.18-eevdf-none", "").unwrap_err();
        assert!(
            e.starts_with("dir/w.toml:21: field `task.affinity`") && e.contains("CPU 1"),
            "{e}"
        );
        // On the two-CPU machine one CPU of two is honoured by a per-CPU-runqueue kernel, and
        // refused, saying why, by one whose CPUs share a runqueue (O(1)).
        experiment(&cpu1, "p4-2006", "6.18-eevdf-none", "").unwrap();
        let e = experiment(&cpu1, "p4-2006", "2.6.17", "").unwrap_err();
        assert!(e.contains("share one runqueue"), "{e}");
        let both = TASKS.replace("nice = 5", "nice = 5\naffinity = [0, 1]");
        experiment(&both, "p4-2006", "6.18-eevdf-none", "").unwrap();
        // A POSIX timer on a 2.4 kernel.
        let signal = builtin_text(crate::builtin::WORKLOADS, "fifo-beside-hogs").replace("\"nanosleep\"", "\"signal\"");
        let e = experiment(&signal, "piii-850", "2.4.18", "").unwrap_err();
        assert!(e.contains("w.toml:") && e.contains("task.steps.periodic.timer"), "{e}");
    }

    #[test]
    fn a_periodic_task_is_the_run_s_measurement() {
        let text = builtin_text(crate::builtin::WORKLOADS, "fifo-beside-hogs");
        let e = experiment(&text, "piii-850", "6.18-eevdf-none", "").unwrap();
        assert!(!e.runs[0].config.realfeel, "the periodic task measures instead");
        let e = crate::file::parse(
            "e.toml",
            "name = \"t\"\ntitle = \"t\"\nmachine = \"piii-850\"\nworkload = \"fifo-beside-hogs\"\ntable = \"max-latency\"\n[[run]]\nlabel = \"a\"\nvariant = \"6.18-eevdf-none\"\n",
            &no_files,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("tasks only") && e.contains("duration_s"), "{e}");
    }

    #[test]
    fn a_preload_too_big_is_named_where_it_was_set() {
        let text = TASKS.replace("base = \"fresh-boot\"", "base = \"fresh-boot\"\nidle_anon_mib = 100000");
        let e = experiment(&text, "piii-850", "6.18-eevdf-none", "").unwrap_err();
        assert!(e.starts_with("dir/w.toml:5: field `preload.idle_anon_mib`"), "{e}");
        // Set by the experiment's own [preload]: the experiment's line.
        let e = experiment(
            TASKS,
            "piii-850",
            "6.18-eevdf-none",
            "[preload]\nidle_anon_mib = 100000",
        )
        .unwrap_err();
        assert!(e.starts_with("e.toml:7: field `idle_anon_mib`"), "{e}");
    }

    #[test]
    fn a_type_error_in_a_command_array_names_the_field_as_the_range_error_does() {
        let io = builtin_text(crate::builtin::WORKLOADS, "iozone");
        let typed = err(&io.replace("file_mb = 512", "file_mb = \"big\""));
        let ranged = err(&io.replace("record_kb = 4", "record_kb = 0"));
        assert!(typed.contains("field `command.iozone.file_mb`"), "{typed}");
        assert!(ranged.contains("field `command.iozone.record_kb`"), "{ranged}");
    }

    #[test]
    fn the_documented_task_examples_are_the_built_in_and_parse() {
        let doc = include_str!("../../../docs/experiments.md");
        let at = doc.find("### Tasks").expect("the section");
        let blocks: Vec<&str> = doc[at..]
            .split("```toml\n")
            .skip(1)
            .filter_map(|b| b.split("```").next())
            .take(2)
            .collect();
        assert_eq!(blocks[0], builtin_text(crate::builtin::WORKLOADS, "fifo-beside-hogs"));
        let pair = format!("name = \"pair\"\n[preload]\nbase = \"fresh-boot\"\n{}", blocks[1]);
        let w = parse("pair.toml", &pair).unwrap();
        assert_eq!(w.tasks.len(), 2);
        // The error the section shows, as it shows it.
        let rt = "name = \"w\"\n[preload]\nbase = \"fresh-boot\"\n[[task]]\ncomm = \"rt\"\npolicy = \"fifo\"\npriority = 100\nsteps = [{ sleep = { ms = 1 } }]\n";
        let e = parse("w.toml", rt).unwrap_err();
        assert!(doc[at..].contains(&format!("\n{e}\n")), "{e}");
    }
}
