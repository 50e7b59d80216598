//! A scenario file (`scenarios/*.toml`, docs/experiments.md "Scenarios"): a name, a
//! description, how long it runs, its tasks (`[[task]]`, the workload files' format:
//! [`crate::task`]), the loads that are not tasks (`[[load]]`: a build, a video decoder) and
//! the streams measured. Both engines run the same file: the model on a machine twin
//! (`latlab_exp::scenario`), the probe for real (`latlab_probe::scenario`). rt-app JSON files
//! ([`crate::rtapp`]) are read into the same [`Scenario`].

use crate::task::{self, TaskDef, TaskError};
use serde::Deserialize;
use std::path::Path;

/// A scenario, from either form.
#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    /// Its name (results' workload).
    pub name: String,
    /// The file it was read from, as errors name it.
    pub file: String,
    pub description: String,
    /// How long it runs by default, ns (a run may ask for another length); None for an
    /// rt-app file whose `global.duration` is -1 or missing (until the threads end): a run
    /// then needs a length given ([`Scenario::duration`]).
    pub duration_ns: Option<u64>,
    /// The tasks, started together when the run starts.
    pub tasks: Vec<TaskDef>,
    /// The loads beside them.
    pub loads: Vec<Load>,
    /// The streams measured, named as [`task::stream_names`] names them, in that order; a
    /// periodic task not named here runs unmeasured.
    pub measure: Vec<String>,
    /// What reading the file left out, for the run's settings (rt-app's keys that change
    /// nothing here: `logdir`, `calibration`, ...). Empty for a TOML file.
    pub ignored: Vec<String>,
    /// (task, line) of each task giving `count_per_cpu`, for [`Scenario::on_cpus`]'s errors.
    pub(crate) per_cpu_lines: Vec<(usize, usize)>,
}

impl Scenario {
    /// The scenario as an engine with `cpus` CPUs runs it: each task's `count_per_cpu`
    /// turned into its `count` (that many copies per CPU). Both engines call it before they
    /// run: the model with its machine file's CPUs, the probe with the CPUs it may run on.
    /// An error names the file, line and field when a task's copies exceed
    /// [`task::MAX_COPIES`].
    pub fn on_cpus(&self, cpus: u32) -> Result<Scenario, ScenarioError> {
        let mut out = self.clone();
        for &(i, line) in &self.per_cpu_lines {
            let t = &mut out.tasks[i];
            let Some(n) = t.count_per_cpu.take() else { continue };
            let copies = u64::from(n) * u64::from(cpus);
            if !(1..=u64::from(task::MAX_COPIES)).contains(&copies) {
                return Err(ScenarioError::Field {
                    file: self.file.clone(),
                    line,
                    field: "task.count_per_cpu".into(),
                    why: match copies {
                        0 => format!("task `{}`: the engine gives no CPU to run copies per CPU on", t.comm),
                        _ => format!(
                            "task `{}`: {n} per CPU on {cpus} CPU(s) is {copies} copies: more threads than the machine allows (1..={} copies of a task)",
                            t.comm,
                            task::MAX_COPIES
                        ),
                    },
                });
            }
            t.count = copies as u32;
        }
        out.per_cpu_lines.clear();
        Ok(out)
    }

    /// A run's length: `asked`, or the scenario's own; an error naming the scenario when
    /// neither is.
    pub fn duration(&self, asked: Option<u64>) -> Result<u64, String> {
        asked.or(self.duration_ns).ok_or_else(|| {
            format!(
                "scenario `{}` gives no duration (rt-app's `global.duration` -1 or missing: until the threads end), and none was asked for",
                self.name
            )
        })
    }
}

/// A load that is not naturally a task: a program the engines each have their own of.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub enum Load {
    /// `make -jN` of a C tree, again and again until the run ends. The probe builds its
    /// generated tree (60 files and a header, `probe --load make:N`); the model its
    /// `make-kernel` of as many objects, each compile taking `cc_ms` of CPU (a range drawn
    /// uniformly: this machine's compiler's time per file of that tree).
    Make { jobs: u32, cc_ms: [u64; 2] },
    /// A 25 fps video decoder: every 40 ms, 12 ms of computing (`probe --load video`; the
    /// model's `video` at 25 fps, 12 ms a frame, no X server).
    Video,
}

/// Most `make` jobs (the model's `make.jobs` and the probe's `make:N` both take this many).
pub const MAX_JOBS: u32 = 256;
/// Longest scenario, s: two hours (the model's longest run).
pub const MAX_DURATION_S: f64 = 7200.0;
/// Most compile time of one object, ms (the model's `make.cc_ms`).
pub const MAX_CC_MS: u64 = 60_000;

impl Load {
    /// The key it is written under.
    pub fn kind(&self) -> &'static str {
        match self {
            Load::Make { .. } => "make",
            Load::Video => "video",
        }
    }

    /// Its values checked: (field under `load.KIND`, why).
    fn check(&self) -> Result<(), (String, String)> {
        match self {
            Load::Make { jobs, cc_ms } => {
                if !(1..=MAX_JOBS).contains(jobs) {
                    return Err(("jobs".into(), format!("must be 1..={MAX_JOBS} (make -jN), got {jobs}")));
                }
                let [lo, hi] = *cc_ms;
                if !(1..=MAX_CC_MS).contains(&lo) || !(1..=MAX_CC_MS).contains(&hi) || lo > hi {
                    return Err((
                        "cc_ms".into(),
                        format!("must be [low, high] ms, 1 <= low <= high <= {MAX_CC_MS}, got [{lo}, {hi}]"),
                    ));
                }
                Ok(())
            }
            Load::Video => Ok(()),
        }
    }
}

/// A scenario file's mistake: the file, where, and why.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ScenarioError {
    /// Not readable, or not of the form (TOML or JSON syntax, an unknown key, a wrong type).
    #[error("{file}{}: {msg}", at(*line))]
    Syntax { file: String, line: usize, msg: String },
    /// A value out of its range, or a key that would change the workload and has no meaning
    /// here: the field (`task.priority`, `tasks.t1.phases.p1.lock`) and why.
    #[error("{file}{}: field `{field}`: {why}", at(*line))]
    Field {
        file: String,
        line: usize,
        field: String,
        why: String,
    },
}

/// `:LINE`, or nothing when the line is not known (0).
fn at(line: usize) -> String {
    match line {
        0 => String::new(),
        l => format!(":{l}"),
    }
}

/// A scenario file as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ScenarioRepr {
    name: String,
    #[serde(default)]
    description: String,
    duration_s: f64,
    #[serde(default)]
    task: Vec<TaskDef>,
    #[serde(default)]
    load: Vec<Load>,
    #[serde(default)]
    measure: Option<Vec<String>>,
}

/// Largest scenario file, bytes.
pub const MAX_FILE_BYTES: u64 = 1 << 20;

/// Read the scenario at `path`: rt-app JSON when it ends in `.json`, a scenario TOML file
/// otherwise. Errors name the path.
pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
    let file = path.display().to_string();
    let unreadable = |why: String| ScenarioError::Syntax {
        file: file.clone(),
        line: 0,
        msg: why,
    };
    let meta = std::fs::metadata(path).map_err(|e| unreadable(e.to_string()))?;
    if !meta.is_file() || meta.len() > MAX_FILE_BYTES {
        return Err(unreadable(format!(
            "not a scenario file: a regular file of at most {MAX_FILE_BYTES} bytes is needed"
        )));
    }
    let text = std::fs::read_to_string(path).map_err(|e| unreadable(e.to_string()))?;
    let stem = path
        .file_stem()
        .map_or("scenario".into(), |s| s.to_string_lossy().into_owned());
    match path.extension().and_then(|e| e.to_str()) {
        Some("json") => crate::rtapp::parse(&file, &stem, &text),
        _ => parse_toml(&file, &text),
    }
}

/// A scenario TOML file's text parsed and checked; `file` names it in errors.
pub fn parse_toml(file: &str, text: &str) -> Result<Scenario, ScenarioError> {
    let r: ScenarioRepr = toml::from_str(text).map_err(|e| ScenarioError::Syntax {
        file: file.into(),
        line: e.span().map_or(0, |s| {
            text.as_bytes()[..s.start.min(text.len())]
                .iter()
                .filter(|&&b| b == b'\n')
                .count()
                + 1
        }),
        msg: e.message().replace('\n', " "),
    })?;
    let field = |field: &str, key: &str, nth: usize, why: String| ScenarioError::Field {
        file: file.into(),
        line: line_of_key(text, key, nth),
        field: field.into(),
        why,
    };
    if r.name.trim().is_empty() {
        return Err(field("name", "name", 0, "must not be empty".into()));
    }
    if !(r.duration_s.is_finite() && r.duration_s > 0.0 && r.duration_s <= MAX_DURATION_S) {
        return Err(field(
            "duration_s",
            "duration_s",
            0,
            format!("must be above 0 and at most {MAX_DURATION_S} s, got {}", r.duration_s),
        ));
    }
    if r.task.is_empty() && r.load.is_empty() {
        return Err(field(
            "task",
            "name",
            0,
            "a scenario needs at least one [[task]] or [[load]] (an idle machine: a task that sleeps, measured by a periodic one)".into(),
        ));
    }
    task::check_per_cpu(&r.task).map_err(|e| task_error(file, text, e))?;
    let per_cpu_lines = per_cpu_lines(file, text, &r.task)?;
    for (i, l) in r.load.iter().enumerate() {
        let nth = r.load[..i].iter().filter(|o| o.kind() == l.kind()).count();
        l.check().map_err(|(f, why)| {
            let start = line_of_key(text, l.kind(), nth);
            ScenarioError::Field {
                file: file.into(),
                line: line_after(text, start, &f),
                field: format!("load.{}.{f}", l.kind()),
                why,
            }
        })?;
    }
    let streams = task::stream_names(&r.task);
    let measure = match r.measure {
        None => streams,
        Some(m) => {
            if let Some(bad) = m.iter().find(|s| !streams.contains(s)) {
                return Err(field(
                    "measure",
                    "measure",
                    0,
                    format!(
                        "`{bad}` is not a stream of the scenario: the streams are {} (a periodic task's comm, or COMM.N for copy N of several)",
                        if streams.is_empty() { "none (no task has a periodic step)".into() } else { streams.join(", ") }
                    ),
                ));
            }
            // In the streams' order, each once.
            streams.into_iter().filter(|s| m.contains(s)).collect()
        }
    };
    Ok(Scenario {
        name: r.name,
        file: file.into(),
        description: r.description,
        duration_ns: Some((r.duration_s * 1e9) as u64),
        tasks: r.task,
        loads: r.load,
        measure,
        ignored: Vec::new(),
        per_cpu_lines,
    })
}

/// (task, line) of each task giving `count_per_cpu`; an error when one gives `count` too
/// (even `count = 1`, the default, which the checks cannot tell from none).
fn per_cpu_lines(file: &str, text: &str, tasks: &[TaskDef]) -> Result<Vec<(usize, usize)>, ScenarioError> {
    // The file as written (it parsed already): which keys each task sets.
    let raw: toml::Table = toml::from_str(text).unwrap_or_default();
    let sets_count = |i: usize| {
        raw.get("task")
            .and_then(|t| t.as_array())
            .and_then(|a| a.get(i))
            .and_then(|t| t.as_table())
            .is_some_and(|t| t.contains_key("count"))
    };
    let mut out = Vec::new();
    for (i, t) in tasks.iter().enumerate().filter(|(_, t)| t.count_per_cpu.is_some()) {
        let line = TaskError {
            task: i,
            key: "count_per_cpu",
            nth: 0,
            field: String::new(),
            why: String::new(),
        }
        .line(text);
        if sets_count(i) {
            return Err(ScenarioError::Field {
                file: file.into(),
                line,
                field: "task.count_per_cpu".into(),
                why: format!("task `{}`: give `count` or `count_per_cpu`, not both", t.comm),
            });
        }
        out.push((i, line));
    }
    Ok(out)
}

/// A task's mistake as a scenario error at its line.
fn task_error(file: &str, text: &str, e: TaskError) -> ScenarioError {
    ScenarioError::Field {
        file: file.into(),
        line: e.line(text),
        field: e.field,
        why: e.why,
    }
}

impl TaskError {
    /// Its 1-based line in the TOML `text` it came from: the `nth` line setting `key` in the
    /// `task`-th `[[task]]` table (the table's first line without one; 1 when the tasks are
    /// written as one array).
    pub fn line(&self, text: &str) -> usize {
        let lines: Vec<&str> = text.lines().collect();
        let header = |l: &str| l.trim_start().starts_with('[') && !l.trim_start().starts_with("[task.");
        match lines
            .iter()
            .enumerate()
            .filter(|(_, l)| l.trim_start().starts_with("[[task]]"))
            .nth(self.task)
        {
            Some((start, _)) => lines[start + 1..]
                .iter()
                .take_while(|l| !header(l))
                .enumerate()
                .filter(|(_, l)| !l.trim_start().starts_with('#') && key_at(l, self.key))
                .nth(self.nth)
                .map_or(start + 1, |(i, _)| start + i + 2),
            // Written as one array (`task = [ ... ]`).
            None => line_of_key(text, "task", 0),
        }
    }
}

/// 1-based line of the `nth` (from 0) place where `key` is set in TOML `text` (`key =`,
/// `key.`, or a `[...key]` header), 1 if there is none.
pub fn line_of_key(text: &str, key: &str, nth: usize) -> usize {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim_start().starts_with('#') && key_at(l, key))
        .nth(nth)
        .map_or(1, |(i, _)| i + 1)
}

/// The first line from `start` (1-based) on that sets `key`; `start` if none does (the key
/// is on a line the search cannot tell apart, or inherited).
pub fn line_after(text: &str, start: usize, key: &str) -> usize {
    text.lines()
        .enumerate()
        .skip(start.saturating_sub(1))
        .find(|(_, l)| key_at(l, key))
        .map_or(start, |(i, _)| i + 1)
}

/// Does `line` set `key` (as a bare key: not part of a longer one)?
pub fn key_at(line: &str, key: &str) -> bool {
    let bare = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    line.match_indices(key).any(|(i, _)| {
        let before = line[..i].chars().next_back();
        let after = line[i + key.len()..].trim_start().chars().next();
        !before.is_some_and(bare) && matches!(after, Some('=' | '.' | ']'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::task::{PolicyName, StepDef, TimerKind};

    const OK: &str = r#"name = "timer-beside-make"
description = "a SCHED_FIFO timer thread beside make -j2"
duration_s = 2

[[task]]
comm = "cyclic"
policy = "fifo"
priority = 90
steps = [{ periodic = { period_us = 1000, timer = "signal" } }]

[[task]]
comm = "video"
steps = [{ periodic = { period_us = 40000, steps = [{ compute = { ms = 12 } }] } }]

[[load]]
make = { jobs = 2, cc_ms = [50, 200] }
"#;

    fn err(text: &str) -> ScenarioError {
        parse_toml("s.toml", text).expect_err("refused")
    }

    /// (line, field, why) of a field error.
    fn field(e: &ScenarioError) -> (usize, &str, &str) {
        match e {
            ScenarioError::Field { line, field, why, .. } => (*line, field.as_str(), why.as_str()),
            other => panic!("not a field error: {other}"),
        }
    }

    #[test]
    fn a_scenario_reads_its_tasks_loads_and_streams() {
        let s = parse_toml("s.toml", OK).unwrap();
        assert_eq!(s.name, "timer-beside-make");
        assert_eq!(s.duration(None), Ok(2_000_000_000));
        assert_eq!(s.duration(Some(5)), Ok(5), "a run's own length first");
        assert_eq!(s.tasks.len(), 2);
        assert_eq!((s.tasks[0].policy, s.tasks[0].priority), (PolicyName::Fifo, Some(90)));
        let StepDef::Periodic(p) = &s.tasks[0].steps[0] else {
            panic!("{:?}", s.tasks[0])
        };
        assert_eq!(p.timer, TimerKind::Signal);
        assert_eq!(
            s.loads,
            [Load::Make {
                jobs: 2,
                cc_ms: [50, 200]
            }]
        );
        assert_eq!(s.measure, ["cyclic", "video"], "every periodic task without `measure`");
        let only = parse_toml(
            "s.toml",
            &OK.replace("duration_s = 2", "duration_s = 2\nmeasure = [\"cyclic\"]"),
        )
        .unwrap();
        assert_eq!(only.measure, ["cyclic"]);
    }

    #[test]
    fn errors_name_the_file_line_field_and_reason() {
        let e = err(&OK.replace("priority = 90", "priority = 100"));
        assert_eq!(
            field(&e),
            (8, "task.priority", "task `cyclic`: must be 1..=99, got 100")
        );
        assert!(e.to_string().starts_with("s.toml:8: field `task.priority`: "), "{e}");
        let e = err(&OK.replace("period_us = 1000,", "period_us = -1,"));
        assert_eq!(field(&e).1, "task.steps.periodic.period_us");
        assert!(field(&e).2.contains("got -1"), "{e}");
        // A huge number is said as written, not as 300 digits.
        let e = err(&OK.replace("period_us = 1000,", "period_us = 1e300,"));
        assert!(field(&e).2.ends_with("got 1e300"), "{e}");
        let e = err(&OK.replace("jobs = 2", "jobs = 0"));
        assert_eq!(field(&e), (16, "load.make.jobs", "must be 1..=256 (make -jN), got 0"));
        let e = err(&OK.replace("cc_ms = [50, 200]", "cc_ms = [300, 200]"));
        assert_eq!(field(&e).1, "load.make.cc_ms");
        let e = err(&OK.replace("duration_s = 2", "duration_s = 0"));
        assert_eq!((field(&e).0, field(&e).1), (3, "duration_s"), "{e}");
        let e = err(&OK.replace("duration_s = 2", "duration_s = 2\nmeasure = [\"nobody\"]"));
        assert!(field(&e).1 == "measure" && field(&e).2.contains("cyclic, video"), "{e}");
        // An unknown key: the form's error, at its line, naming the key.
        let e = err(&OK.replace("priority = 90", "prio = 90"));
        assert!(
            matches!(&e, ScenarioError::Syntax { line: 8, msg, .. } if msg.contains("unknown field `prio`")),
            "{e}"
        );
        let e = err(&OK.replace("make = {", "ninja = {"));
        assert!(e.to_string().contains("ninja"), "{e}");
        let e = err("name = \"x\"\nduration_s = 1\n");
        assert!(field(&e).2.contains("at least one [[task]] or [[load]]"), "{e}");
    }

    const PER_CPU: &str = r#"name = "hogs"
duration_s = 1

[[task]]
comm = "cyc"
steps = [{ periodic = { period_us = 1000 } }]

[[task]]
comm = "hog"
count_per_cpu = 2
steps = [{ loop = { steps = [{ compute = { ms = 50 } }] } }]
"#;

    #[test]
    fn count_per_cpu_is_read_and_refused_naming_file_line_field_and_reason() {
        let s = parse_toml("s.toml", PER_CPU).unwrap();
        assert_eq!(s.tasks[1].count_per_cpu, Some(2));
        assert_eq!(s.measure, ["cyc"]);
        let refused = |to: &str| err(&PER_CPU.replace("count_per_cpu = 2", to));
        for both in ["count = 3\ncount_per_cpu = 2", "count = 1\ncount_per_cpu = 2"] {
            assert_eq!(
                field(&refused(both)),
                (
                    11,
                    "task.count_per_cpu",
                    "task `hog`: give `count` or `count_per_cpu`, not both"
                ),
                "{both}"
            );
        }
        assert_eq!(
            field(&refused("count_per_cpu = 0")),
            (10, "task.count_per_cpu", "task `hog`: must be 1..=4000, got 0")
        );
        assert_eq!(
            field(&refused("count_per_cpu = 4001")),
            (10, "task.count_per_cpu", "task `hog`: must be 1..=4000, got 4001")
        );
        let e = err(&PER_CPU.replace("comm = \"cyc\"", "comm = \"cyc\"\ncount_per_cpu = 1"));
        assert_eq!((field(&e).0, field(&e).1), (6, "task.count_per_cpu"), "{e}");
        assert!(field(&e).2.contains("a task with a periodic step is measured"), "{e}");
        assert!(
            e.to_string().starts_with("s.toml:6: field `task.count_per_cpu`: "),
            "{e}"
        );
    }

    #[test]
    fn tasks_that_meet_need_the_same_copies_on_every_machine() {
        let pair = |ping: &str, pong: &str| {
            format!(
                "name = \"p\"\nduration_s = 1\n[[task]]\ncomm = \"ping\"\n{ping}\nsteps = [{{ futex-wake = {{ word = \"w\" }} }}]\n[[task]]\ncomm = \"pong\"\n{pong}\nsteps = [{{ futex-wait = {{ word = \"w\" }} }}]\n"
            )
        };
        let s = parse_toml("p.toml", &pair("count_per_cpu = 1", "count_per_cpu = 1")).unwrap();
        assert_eq!(
            s.on_cpus(3).unwrap().tasks.iter().map(|t| t.count).collect::<Vec<_>>(),
            [3, 3]
        );
        // Equal on 2 CPUs only: refused.
        let e = err(&pair("count_per_cpu = 1", "count = 2"));
        assert!(
            field(&e)
                .2
                .contains("shared with task `ping`, which has count_per_cpu 1, this task count 2"),
            "{e}"
        );
    }

    #[test]
    fn count_per_cpu_resolves_to_copies_per_cpu_within_the_cap() {
        let s = parse_toml("s.toml", PER_CPU).unwrap();
        for (cpus, copies) in [(1, 2), (2, 4), (64, 128)] {
            let r = s.on_cpus(cpus).unwrap();
            assert_eq!(
                (r.tasks[1].count, r.tasks[1].count_per_cpu),
                (copies, None),
                "{cpus} CPUs"
            );
            assert_eq!(r.tasks[0], s.tasks[0], "a task with a count is left alone");
            // Resolved: what an engine's own check takes.
            crate::task::check(&r.tasks).unwrap();
        }
        // Unresolved: no engine takes it.
        let e = crate::task::check(&s.tasks).unwrap_err();
        assert_eq!(e.field, "task.count_per_cpu");
        assert!(e.why.contains("resolved for the engine's CPUs"), "{}", e.why);
        // 100 per CPU on 64 CPUs is 6400 threads of one task, past the cap.
        let many = parse_toml("s.toml", &PER_CPU.replace("count_per_cpu = 2", "count_per_cpu = 100")).unwrap();
        assert_eq!(many.on_cpus(40).unwrap().tasks[1].count, 4000);
        let e = many.on_cpus(64).unwrap_err();
        assert_eq!(
            field(&e),
            (
                10,
                "task.count_per_cpu",
                "task `hog`: 100 per CPU on 64 CPU(s) is 6400 copies: more threads than the machine allows (1..=4000 copies of a task)"
            )
        );
        assert!(e.to_string().starts_with("s.toml:10: "), "{e}");
        assert!(field(&many.on_cpus(0).unwrap_err()).2.contains("no CPU"));
    }

    /// The suite's per-CPU scenarios on 2 CPUs are the files as they were written for the
    /// 2-CPU machine (`count` = 2 x `count_per_cpu`), but for their description.
    #[test]
    fn the_suite_on_two_cpus_is_its_old_two_cpu_files() {
        let files = [
            ("hogs-1pc", include_str!("../../../scenarios/hogs-1pc.toml")),
            (
                "hogs-1pc-nice19",
                include_str!("../../../scenarios/hogs-1pc-nice19.toml"),
            ),
            ("hogs-2pc", include_str!("../../../scenarios/hogs-2pc.toml")),
            (
                "hogs-2pc-nice19",
                include_str!("../../../scenarios/hogs-2pc-nice19.toml"),
            ),
            ("hogs-8pc", include_str!("../../../scenarios/hogs-8pc.toml")),
            (
                "hogs-8pc-nice19",
                include_str!("../../../scenarios/hogs-8pc-nice19.toml"),
            ),
            (
                "fifo-prios-beside-hogs",
                include_str!("../../../scenarios/fifo-prios-beside-hogs.toml"),
            ),
        ];
        for (name, text) in files {
            let now = parse_toml(name, text).unwrap();
            let n: u32 = text
                .lines()
                .find_map(|l| l.strip_prefix("count_per_cpu = "))
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("{name}: no count_per_cpu"));
            let old = parse_toml(
                name,
                &text.replace(&format!("count_per_cpu = {n}\n"), &format!("count = {}\n", 2 * n)),
            )
            .unwrap();
            let two = now.on_cpus(2).unwrap();
            assert_eq!(
                Scenario {
                    description: old.description.clone(),
                    ..two
                },
                old,
                "{name}"
            );
        }
    }

    #[test]
    fn a_file_is_read_by_its_extension_and_a_missing_one_is_named() {
        let e = load(Path::new("/nonexistent/x.toml")).unwrap_err();
        assert!(e.to_string().starts_with("/nonexistent/x.toml: "), "{e}");
        let e = load(Path::new("/")).unwrap_err();
        assert!(e.to_string().contains("not a scenario file"), "{e}");
    }
}
