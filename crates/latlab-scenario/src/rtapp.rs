//! rt-app's JSON task files (rt-app's doc/tutorial.txt) read as a [`Scenario`].
//!
//! The file is the JSON rt-app itself reads (after workgen): C comments and trailing commas
//! are allowed (json-c takes them), and a key may repeat (`"run" : 100, ... "run" : 200`) or carry a number to tell repeats apart
//! (`run0`, `run1`), as rt-app matches events by their name's prefix. Objects keep their
//! order: events run in the file's order.
//!
//! What maps: `global.duration` (seconds) the scenario's duration (-1 or none: a run gives
//! its own); `default_policy`; each
//! thread a task (`instance` its count, `policy`, `priority` (for SCHED_OTHER the nice
//! value, as rt-app sets it), `cpus` its affinity, `delay` (us) its start, `loop` (-1:
//! until the run ends), `phases` or the events directly); events `run` and `runtime` (us of
//! computing: a time here, not calibrated loops), `sleep` (us), `timer` (`period` us, `ref`,
//! `mode`: the phase becomes a measured periodic step whose body is the phase's other
//! events, so it must be the phase's last event; the body runs after each expiry where
//! rt-app runs it before), `suspend` / `resume` (a futex word per suspended thread). Global
//! keys that change nothing a run does here are accepted and listed in
//! [`Scenario::ignored`]: `calibration`, `pi_enabled`, `lock_pages`, `logdir`,
//! `log_basename`, `log_size`, `ftrace`, `gnuplot`, `io_device`, `mem_buffer_size`,
//! `cumulative_slack`. Anything else that would change the workload (SCHED_DEADLINE, locks,
//! condition variables, barriers, `mem`, `iorun`, `yield`, a timer shared between instances,
//! per-phase affinity) is refused, naming the key and the thread.

use crate::scenario::{Scenario, ScenarioError, MAX_DURATION_S};
use crate::task::{self, Amount, Dur, PeriodicDef, PolicyName, StepDef, TaskDef, TimerKind};
use serde::de::{Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use std::fmt;

/// A JSON value whose objects keep their keys' order and repeats.
#[derive(Clone, Debug, PartialEq)]
enum J {
    Null,
    Bool(bool),
    Num(f64),
    Str(String),
    Arr(Vec<J>),
    Obj(Vec<(String, J)>),
}

impl<'de> Deserialize<'de> for J {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<J, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = J;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_unit<E>(self) -> Result<J, E> {
                Ok(J::Null)
            }
            fn visit_bool<E>(self, b: bool) -> Result<J, E> {
                Ok(J::Bool(b))
            }
            fn visit_i64<E>(self, n: i64) -> Result<J, E> {
                Ok(J::Num(n as f64))
            }
            fn visit_u64<E>(self, n: u64) -> Result<J, E> {
                Ok(J::Num(n as f64))
            }
            fn visit_f64<E>(self, n: f64) -> Result<J, E> {
                Ok(J::Num(n))
            }
            fn visit_str<E>(self, s: &str) -> Result<J, E> {
                Ok(J::Str(s.into()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<J, A::Error> {
                let mut v = Vec::new();
                while let Some(x) = a.next_element()? {
                    v.push(x);
                }
                Ok(J::Arr(v))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<J, A::Error> {
                let mut v = Vec::new();
                while let Some(kv) = a.next_entry()? {
                    v.push(kv);
                }
                Ok(J::Obj(v))
            }
        }
        d.deserialize_any(V)
    }
}

impl J {
    fn kind(&self) -> &'static str {
        match self {
            J::Null => "null",
            J::Bool(_) => "a boolean",
            J::Num(_) => "a number",
            J::Str(_) => "a string",
            J::Arr(_) => "an array",
            J::Obj(_) => "an object",
        }
    }
}

/// `text` without its C comments (`/* */`, `//`) and the commas before a closing `}` or `]`
/// (json-c, rt-app's parser, takes both), strings left whole; a comment's newlines are kept
/// so that lines stay where they were.
fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut it = text.chars().peekable();
    let mut in_str = false;
    while let Some(c) = it.next() {
        if in_str {
            out.push(c);
            match c {
                '\\' => out.extend(it.next()),
                '"' => in_str = false,
                _ => {}
            }
            continue;
        }
        match (c, it.peek()) {
            ('"', _) => {
                in_str = true;
                out.push(c);
            }
            ('/', Some('*')) => {
                it.next();
                let mut last = ' ';
                for c in it.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                    }
                    if last == '*' && c == '/' {
                        break;
                    }
                    last = c;
                }
            }
            ('/', Some('/')) => {
                for c in it.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            ('}' | ']', _) => {
                // A trailing comma: the last non-blank character written.
                if let Some(i) = out
                    .rfind(|c: char| !c.is_whitespace())
                    .filter(|&i| out.as_bytes()[i] == b',')
                {
                    out.replace_range(i..=i, " ");
                }
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out
}

/// rt-app's global keys that change nothing a run does here (logging, calibration of `run`'s
/// loops, memory locking, the buffers of the refused `mem` and `iorun` events).
const IGNORED_GLOBALS: [&str; 11] = [
    "calibration",
    "pi_enabled",
    "lock_pages",
    "logdir",
    "log_basename",
    "log_size",
    "ftrace",
    "gnuplot",
    "io_device",
    "mem_buffer_size",
    "cumulative_slack",
];

/// Events that would change the workload and have no equivalent in the task format, and why.
const REFUSED_EVENTS: [(&str, &str); 10] = [
    ("lock", "pthread mutexes are not modelled"),
    ("unlock", "pthread mutexes are not modelled"),
    ("wait", "condition variables are not modelled"),
    ("signal", "condition variables are not modelled"),
    ("broad", "condition variables are not modelled"),
    ("sync", "condition variables are not modelled"),
    ("barrier", "barriers are not modelled"),
    ("mem", "memory-bound loops are not modelled"),
    (
        "iorun",
        "writes to io_device are not modelled (a scenario's `write` step writes a file)",
    ),
    ("yield", "sched_yield is not modelled"),
];

/// Parse rt-app JSON `text`; `file` names it in errors, `stem` (the file's name without
/// `.json`) is the scenario's name.
pub fn parse(file: &str, stem: &str, text: &str) -> Result<Scenario, ScenarioError> {
    let clean = strip_comments(text);
    let root: J = serde_json::from_str(&clean).map_err(|e| ScenarioError::Syntax {
        file: file.into(),
        line: e.line(),
        msg: e.to_string(),
    })?;
    let mut r = Reader {
        file,
        text: &clean,
        ignored: Vec::new(),
    };
    r.scenario(stem, root)
}

struct Reader<'a> {
    file: &'a str,
    text: &'a str,
    ignored: Vec<String>,
}

/// Where an error is: the dotted path in the file (`tasks.t1.phases.p1.lock`), and a search
/// for its line: the path's keys found one after another in the text.
fn line_of(text: &str, path: &str) -> usize {
    let mut from = 0;
    for key in path.split('.') {
        match text[from..].find(&format!("\"{key}")) {
            Some(i) => from += i + 1,
            None => break,
        }
    }
    text[..from].lines().count().max(1)
}

/// A key with rt-app's repeat number dropped (`run12` -> `run`).
fn base(key: &str) -> &str {
    key.trim_end_matches(|c: char| c.is_ascii_digit())
}

impl Reader<'_> {
    fn err(&self, path: &str, why: String) -> ScenarioError {
        ScenarioError::Field {
            file: self.file.into(),
            line: line_of(self.text, path),
            field: path.into(),
            why,
        }
    }

    fn num(&self, path: &str, v: &J) -> Result<f64, ScenarioError> {
        match v {
            J::Num(n) => Ok(*n),
            other => Err(self.err(path, format!("must be a number, got {}", other.kind()))),
        }
    }

    fn int(&self, path: &str, v: &J) -> Result<i64, ScenarioError> {
        let n = self.num(path, v)?;
        if n.fract() != 0.0 || n.abs() > 1e15 {
            return Err(self.err(path, format!("must be a whole number, got {n}")));
        }
        Ok(n as i64)
    }

    fn string<'j>(&self, path: &str, v: &'j J) -> Result<&'j str, ScenarioError> {
        match v {
            J::Str(s) => Ok(s),
            other => Err(self.err(path, format!("must be a string, got {}", other.kind()))),
        }
    }

    fn obj<'j>(&self, path: &str, v: &'j J) -> Result<&'j [(String, J)], ScenarioError> {
        match v {
            J::Obj(o) => Ok(o),
            other => Err(self.err(path, format!("must be an object, got {}", other.kind()))),
        }
    }

    fn scenario(&mut self, stem: &str, root: J) -> Result<Scenario, ScenarioError> {
        let top = self.obj("", &root)?;
        let mut duration = None;
        let mut default_policy = PolicyName::Other;
        let mut tasks_obj = None;
        for (k, v) in top {
            match k.as_str() {
                "tasks" => tasks_obj = Some(v),
                // Kept by rt-app for old files; resources are made as events name them.
                "resources" => self.ignored.push("resources".into()),
                "global" => {
                    for (g, gv) in self.obj("global", v)? {
                        let path = format!("global.{g}");
                        match g.as_str() {
                            "duration" => duration = Some(self.int(&path, gv)?),
                            "default_policy" => {
                                let s = self.string(&path, gv)?;
                                default_policy = self.policy(&path, s)?;
                            }
                            k if IGNORED_GLOBALS.contains(&k) => self.ignored.push(path),
                            _ => {
                                return Err(self.err(
                                    &path,
                                    format!(
                                    "not an rt-app global key this reader knows (known: duration, default_policy, {})",
                                    IGNORED_GLOBALS.join(", ")
                                ),
                                ))
                            }
                        }
                    }
                }
                _ => return Err(self.err(k, "rt-app's file has `tasks`, `global` and `resources` only".into())),
            }
        }
        let duration_ns = match duration {
            None | Some(-1) => None,
            Some(d) if d > 0 && (d as f64) <= MAX_DURATION_S => Some(d as u64 * 1_000_000_000),
            Some(d) => {
                return Err(self.err(
                    "global.duration",
                    format!("must be 1..={MAX_DURATION_S} s, or -1 (until the threads end: a run then needs its length given), got {d}"),
                ))
            }
        };
        let Some(tasks_obj) = tasks_obj else {
            return Err(self.err("tasks", "missing: rt-app's file needs a `tasks` object".into()));
        };
        let mut tasks = Vec::new();
        for (name, t) in self.obj("tasks", tasks_obj)? {
            tasks.push(self.task(name, t, default_policy)?);
        }
        task::check(&tasks).map_err(|e| {
            let name = &tasks[e.task].comm;
            let at = format!("tasks.{name}");
            self.err(&at, format!("{}: {}", e.field, e.why))
        })?;
        Ok(Scenario {
            name: stem.into(),
            file: self.file.into(),
            description: format!("rt-app file {}", self.file),
            duration_ns,
            measure: task::stream_names(&tasks),
            tasks,
            loads: Vec::new(),
            ignored: std::mem::take(&mut self.ignored),
            per_cpu_lines: Vec::new(),
        })
    }

    fn policy(&self, path: &str, s: &str) -> Result<PolicyName, ScenarioError> {
        match s {
            "SCHED_OTHER" => Ok(PolicyName::Other),
            "SCHED_FIFO" => Ok(PolicyName::Fifo),
            "SCHED_RR" => Ok(PolicyName::Rr),
            "SCHED_BATCH" => Ok(PolicyName::Batch),
            "SCHED_IDLE" => Ok(PolicyName::Idle),
            "SCHED_DEADLINE" => Err(self.err(path, "SCHED_DEADLINE is not modelled".into())),
            _ => Err(self.err(
                path,
                format!("`{s}`: rt-app's policies are SCHED_OTHER, SCHED_FIFO, SCHED_RR, SCHED_BATCH, SCHED_IDLE, SCHED_DEADLINE"),
            )),
        }
    }

    /// One thread object.
    fn task(&self, name: &str, t: &J, default_policy: PolicyName) -> Result<TaskDef, ScenarioError> {
        let at = format!("tasks.{name}");
        let mut def = TaskDef {
            policy: default_policy,
            ..TaskDef::new(name, Vec::new())
        };
        let mut priority = None;
        let mut thread_loop = -1;
        let mut phases = Vec::new();
        // Events written in the thread object itself: its one phase.
        let mut inline = Vec::new();
        for (k, v) in self.obj(&at, t)? {
            let path = format!("{at}.{k}");
            match k.as_str() {
                "instance" => {
                    let n = self.int(&path, v)?;
                    def.count = u32::try_from(n)
                        .ok()
                        .filter(|&n| n >= 1)
                        .ok_or_else(|| self.err(&path, format!("must be at least 1, got {n}")))?;
                }
                "loop" => thread_loop = self.int(&path, v)?,
                "policy" => def.policy = self.policy(&path, self.string(&path, v)?)?,
                "priority" => priority = Some(self.int(&path, v)?),
                "cpus" => def.affinity = Some(self.cpus(&path, v)?),
                "delay" => def.start_ms = self.num(&path, v)? / 1e3,
                "phases" => {
                    for (p, pv) in self.obj(&path, v)? {
                        phases.push((format!("{path}.{p}"), self.obj(&format!("{path}.{p}"), pv)?));
                    }
                }
                k if k.starts_with("dl-") => {
                    return Err(self.err(
                        &path,
                        "SCHED_DEADLINE's parameters: SCHED_DEADLINE is not modelled".into(),
                    ))
                }
                _ => inline.push((k.clone(), v.clone())),
            }
        }
        match (inline.is_empty(), phases.is_empty()) {
            (false, false) => {
                return Err(self.err(
                    &format!("{at}.{}", inline[0].0),
                    "events beside `phases`: put them in a phase".into(),
                ))
            }
            (true, true) => {
                return Err(self.err(&at, "no events: give `phases` or events (`run`, `timer`, ...)".into()))
            }
            _ => {}
        }
        let phases: Vec<(String, &[(String, J)])> = match phases.is_empty() {
            true => vec![(at.clone(), inline.as_slice())],
            false => phases,
        };
        match (def.policy, priority) {
            // rt-app sets a SCHED_OTHER thread's priority as its nice value.
            (PolicyName::Other | PolicyName::Batch | PolicyName::Idle, Some(p)) => {
                def.nice = i32::try_from(p).unwrap_or(i32::MAX);
            }
            // rt-app's default RT priority.
            (PolicyName::Fifo | PolicyName::Rr, None) => def.priority = Some(10),
            (PolicyName::Fifo | PolicyName::Rr, Some(p)) => def.priority = Some(u32::try_from(p).unwrap_or(0)),
            _ => {}
        }
        let one = phases.len() == 1;
        let mut steps = Vec::new();
        for (path, events) in &phases {
            steps.extend(self.phase(path, events, def.affinity.as_deref(), one.then_some(thread_loop))?);
        }
        def.steps = match (one, thread_loop) {
            // The one phase took the thread's loop.
            (true, _) => steps,
            (false, -1) => vec![StepDef::Loop { times: None, steps }],
            (false, n) if n >= 1 => vec![StepDef::Loop {
                times: Some(n as u64),
                steps,
            }],
            (false, n) => return Err(self.err(&format!("{at}.loop"), format!("must be -1 or at least 1, got {n}"))),
        };
        Ok(def)
    }

    fn cpus(&self, path: &str, v: &J) -> Result<Vec<u32>, ScenarioError> {
        let J::Arr(a) = v else {
            return Err(self.err(path, format!("must be an array of CPU numbers, got {}", v.kind())));
        };
        a.iter()
            .map(|c| {
                let n = self.int(path, c)?;
                u32::try_from(n).map_err(|_| self.err(path, format!("a CPU number is 0 or more, got {n}")))
            })
            .collect()
    }

    /// One phase's steps. `outer_loop`: the thread's loop when this is its only phase (the
    /// two loops then make one, so a periodic phase keeps one timer).
    fn phase(
        &self,
        at: &str,
        events: &[(String, J)],
        affinity: Option<&[u32]>,
        outer_loop: Option<i64>,
    ) -> Result<Vec<StepDef>, ScenarioError> {
        let mut phase_loop = 1i64;
        let mut steps = Vec::new();
        let mut timer: Option<(String, f64)> = None;
        for (k, v) in events {
            let path = format!("{at}.{k}");
            if let Some((t, _)) = &timer {
                return Err(self.err(
                    &path,
                    format!("an event after the timer `{t}`: a phase's timer makes it a periodic step here, so the timer must be its last event"),
                ));
            }
            let us = |r: &Self| -> Result<Option<Dur>, ScenarioError> {
                let n = r.num(&path, v)?;
                if !(n.is_finite() && n >= 0.0) {
                    return Err(r.err(&path, format!("must be 0 or more us, got {n}")));
                }
                Ok((n > 0.0).then(|| Dur {
                    us: Some(Amount::One(n)),
                    ..Dur::default()
                }))
            };
            match base(k) {
                "loop" => phase_loop = self.int(&path, v)?,
                "cpus" => {
                    let mine = self.cpus(&path, v)?;
                    if Some(mine.as_slice()) != affinity {
                        return Err(self.err(&path, "an affinity per phase has no equivalent (a task has one affinity): give the thread `cpus`".into()));
                    }
                }
                "run" | "runtime" => steps.extend(us(self)?.map(StepDef::Compute)),
                "sleep" => steps.extend(us(self)?.map(StepDef::Sleep)),
                "timer" => {
                    let mut period = None;
                    for (tk, tv) in self.obj(&path, v)? {
                        let tp = format!("{path}.{tk}");
                        match tk.as_str() {
                            "period" => period = Some(self.num(&tp, tv)?),
                            "ref" => {
                                let r = self.string(&tp, tv)?;
                                if !r.starts_with("unique") {
                                    return Err(self.err(&tp, format!("`{r}`: a timer shared by the thread's instances has no equivalent (each copy here has its own): name it `unique...`")));
                                }
                            }
                            "mode" => match self.string(&tp, tv)? {
                                "relative" | "absolute" => {}
                                m => return Err(self.err(&tp, format!("`{m}`: rt-app's modes are relative and absolute"))),
                            },
                            _ => return Err(self.err(&tp, "a timer takes `ref`, `period` and `mode`".into())),
                        }
                    }
                    match period {
                        None => return Err(self.err(&path, "missing `period` (us)".into())),
                        // rt-app's way to turn a timer off (tune_json.py).
                        Some(0.0) => {}
                        Some(p) => timer = Some((k.clone(), p)),
                    }
                }
                "suspend" => steps.push(StepDef::FutexWait { word: resume_word(at_thread(at)) }),
                "resume" => {
                    let whom = self.string(&path, v)?;
                    steps.push(StepDef::FutexWake { word: resume_word(whom) });
                }
                b => match REFUSED_EVENTS.iter().find(|(e, _)| *e == b) {
                    Some((_, why)) => return Err(self.err(&path, format!("rt-app's `{b}` has no equivalent: {why}"))),
                    None => return Err(self.err(&path, "not an rt-app key this reader knows (thread keys: instance, loop, policy, priority, cpus, delay, phases; events: run, runtime, sleep, timer, suspend, resume, loop)".into())),
                },
            }
        }
        let loops = match (phase_loop, outer_loop) {
            (p, _) if p == 0 || p < -1 => {
                return Err(self.err(&format!("{at}.loop"), format!("must be -1 or at least 1, got {p}")))
            }
            (_, Some(o)) if o == 0 || o < -1 => {
                return Err(self.err(
                    &format!("{}.loop", at_thread_path(at)),
                    format!("must be -1 or at least 1, got {o}"),
                ))
            }
            (-1, _) | (_, Some(-1)) => None,
            (p, o) => Some(p as u64 * o.unwrap_or(1) as u64),
        };
        Ok(match timer {
            Some((_, period_us)) => vec![StepDef::Periodic(PeriodicDef {
                period_us,
                timer: TimerKind::Nanosleep,
                loops,
                steps,
            })],
            None if steps.is_empty() => {
                return Err(self.err(
                    at,
                    "no events that run anything (run, runtime, sleep, timer, suspend, resume)".into(),
                ))
            }
            None if loops == Some(1) => steps,
            None => vec![StepDef::Loop { times: loops, steps }],
        })
    }
}

/// The thread's name in a phase's path (`tasks.NAME` or `tasks.NAME.phases.P`).
fn at_thread(at: &str) -> &str {
    at.split('.').nth(1).unwrap_or(at)
}

/// `tasks.NAME` of a phase's path.
fn at_thread_path(at: &str) -> String {
    format!("tasks.{}", at_thread(at))
}

/// The futex word a `suspend` of thread `name` waits on and a `resume` of it posts.
fn resume_word(name: &str) -> String {
    format!("resume:{name}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<Scenario, ScenarioError> {
        parse("t.json", "t", text)
    }

    /// (line, field, why) of a field error.
    fn field(e: ScenarioError) -> (usize, String, String) {
        match e {
            ScenarioError::Field { line, field, why, .. } => (line, field, why),
            other => panic!("not a field error: {other}"),
        }
    }

    fn us(v: f64) -> Dur {
        Dur {
            us: Some(Amount::One(v)),
            ..Dur::default()
        }
    }

    const TEMPLATE: &str = r#"{
	/* rt-app's template: 10% load for 6 s */
	"tasks" : {
		"thread0" : {
			"instance" : 2,
			"loop" : -1,
			"run" :   10000,
			"sleep" : 0,
			"timer" : { "ref" : "unique", "period" : 100000 }
		},
		"hog" : { "priority" : 19, "run0" : 5000, "run1" : 5000 }
	},
	"global" : {
		"duration" : 6,
		"calibration" : "CPU0",
		"default_policy" : "SCHED_OTHER",
		"pi_enabled" : false,
		"lock_pages" : false,
		"logdir" : "./",
		"log_basename" : "rt-app2",
		"gnuplot" : true
	}
}"#;

    #[test]
    fn the_template_maps_to_a_periodic_task_and_ignores_logging() {
        let s = read(TEMPLATE).unwrap();
        assert_eq!(s.duration_ns, Some(6_000_000_000));
        assert_eq!(s.tasks.len(), 2);
        let t = &s.tasks[0];
        assert_eq!((t.comm.as_str(), t.count, t.policy), ("thread0", 2, PolicyName::Other));
        assert_eq!(
            t.steps,
            [StepDef::Periodic(PeriodicDef {
                period_us: 100_000.0,
                timer: TimerKind::Nanosleep,
                loops: None,
                steps: vec![StepDef::Compute(us(10_000.0))],
            })],
            "one timer for the thread's endless loop; `sleep: 0` dropped"
        );
        let hog = &s.tasks[1];
        assert_eq!(hog.nice, 19, "a SCHED_OTHER thread's priority is its nice value");
        assert_eq!(
            hog.steps,
            [StepDef::Loop {
                times: None,
                steps: vec![StepDef::Compute(us(5000.0)), StepDef::Compute(us(5000.0))]
            }],
            "the thread's default loop, -1: until the run ends"
        );
        assert_eq!(s.measure, ["thread0.0", "thread0.1"]);
        assert!(
            s.ignored.contains(&"global.logdir".to_string()) && s.ignored.contains(&"global.calibration".to_string())
        );
    }

    #[test]
    fn phases_fifo_priorities_cpus_delay_and_suspend_resume_map() {
        let s = read(
            r#"{ "global": { "duration": 2, "default_policy": "SCHED_FIFO" },
                 "tasks": {
                   "rt": { "priority": 80, "cpus": [0, 1], "delay": 1500, "loop": 3,
                           "phases": { "p1": { "loop": 2, "runtime": 100, "sleep": 200 },
                                       "p2": { "run": 50, "resume": "waiter" } } },
                   "waiter": { "policy": "SCHED_OTHER", "suspend": "", "run": 10 }
                 } }"#,
        )
        .unwrap();
        let rt = &s.tasks[0];
        assert_eq!((rt.policy, rt.priority, rt.start_ms), (PolicyName::Fifo, Some(80), 1.5));
        assert_eq!(rt.affinity, Some(vec![0, 1]));
        assert_eq!(
            rt.steps,
            [StepDef::Loop {
                times: Some(3),
                steps: vec![
                    StepDef::Loop {
                        times: Some(2),
                        steps: vec![StepDef::Compute(us(100.0)), StepDef::Sleep(us(200.0))]
                    },
                    StepDef::Compute(us(50.0)),
                    StepDef::FutexWake {
                        word: "resume:waiter".into()
                    },
                ]
            }]
        );
        let w = &s.tasks[1];
        assert_eq!((w.policy, w.priority), (PolicyName::Other, None));
        assert_eq!(
            w.steps,
            [StepDef::Loop {
                times: None,
                steps: vec![
                    StepDef::FutexWait {
                        word: "resume:waiter".into()
                    },
                    StepDef::Compute(us(10.0))
                ]
            }]
        );
        assert!(s.measure.is_empty());
    }

    #[test]
    fn keys_that_would_change_the_workload_are_refused_by_name() {
        let base = |task: &str| format!(r#"{{ "global": {{ "duration": 1 }}, "tasks": {{ "t1": {task} }} }}"#);
        let cases = [
            (base(r#"{ "run": 10, "lock": "m" }"#), "tasks.t1.lock", "mutexes"),
            (base(r#"{ "phases": { "p": { "run": 10, "barrier": "b" } } }"#), "tasks.t1.phases.p.barrier", "barriers"),
            (base(r#"{ "dl-runtime": 100, "run": 10 }"#), "tasks.t1.dl-runtime", "SCHED_DEADLINE"),
            (base(r#"{ "policy": "SCHED_DEADLINE", "run": 10 }"#), "tasks.t1.policy", "SCHED_DEADLINE"),
            (base(r#"{ "run": 10, "taskgroup": "/a" }"#), "tasks.t1.taskgroup", "not an rt-app key"),
            (base(r#"{ "timer": { "ref": "shared", "period": 1000 } }"#), "tasks.t1.timer.ref", "shared by the thread's instances"),
            (base(r#"{ "timer": { "ref": "unique", "period": 1000 }, "run": 5 }"#), "tasks.t1.run", "must be its last event"),
            (base(r#"{ "priority": 100, "policy": "SCHED_FIFO", "run": 5 }"#), "tasks.t1", "must be 1..=99, got 100"),
            (base(r#"{ "instance": 0, "run": 5 }"#), "tasks.t1.instance", "at least 1"),
            (base(r#"{ "run": -5 }"#), "tasks.t1.run", "0 or more"),
            (
                r#"{ "global": { "duration": 1, "io_device": "/dev/null", "frobnicate": 1 }, "tasks": { "t1": { "run": 5 } } }"#.into(),
                "global.frobnicate",
                "not an rt-app global key",
            ),
            (r#"{ "global": { "duration": 0 }, "tasks": { "t1": { "run": 5 } } }"#.into(), "global.duration", "got 0"),
        ];
        for (text, want_field, want_why) in cases {
            let (line, f, why) = field(read(&text).expect_err(&text));
            assert_eq!(f, want_field, "{text}: {why}");
            assert!(why.contains(want_why), "{text}: {why}");
            assert!(line >= 1, "{text}");
        }
        // Not JSON: the parser's line.
        let e = read("{\n \"tasks\": {\n  \"t\": { \"run\": }\n }\n}").unwrap_err();
        assert!(
            matches!(&e, ScenarioError::Syntax { line: 3, file, .. } if file == "t.json"),
            "{e}"
        );
    }

    #[test]
    fn an_error_names_the_line_of_the_key() {
        let text = "{\n  \"global\": { \"duration\": 1 },\n  \"tasks\": {\n    \"a\": { \"run\": 5 },\n    \"b\": {\n      \"run\": 5,\n      \"yield\": \"\"\n    }\n  }\n}";
        let (line, f, _) = field(read(text).unwrap_err());
        assert_eq!((line, f.as_str()), (7, "tasks.b.yield"));
    }

    #[test]
    fn comments_and_trailing_commas_go_and_strings_stay() {
        assert_eq!(
            strip_comments("a /* x\ny */ b // c\n\"/* s */\""),
            "a \n b \n\"/* s */\""
        );
    }
}
