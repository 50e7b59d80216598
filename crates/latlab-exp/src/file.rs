//! The experiment file format (documented in docs/experiments.md) and its validation.

use crate::builtin;
use crate::workload::PreloadBase;
use latlab_sim::dev::rtc::periodic_rate_ok;
use latlab_sim::workload::sizes;
use latlab_sim::{MachineProfile, Notify, PosixTest, Preload, SimConfig, Variant};
use serde::Deserialize;

/// Everything that can be wrong with an experiment file.
#[derive(Debug, thiserror::Error)]
pub enum ExpError {
    #[error("{origin}:{line}:{col}: {msg}")]
    Syntax {
        origin: String,
        line: usize,
        col: usize,
        msg: String,
    },
    #[error("{origin}{}: field `{field}`: {why}", at(*line))]
    Field {
        origin: String,
        line: usize,
        field: String,
        why: String,
    },
    #[error("{origin}{}: unknown {what} `{name}`; valid: {valid}", at(*line))]
    Unknown {
        origin: String,
        line: usize,
        what: &'static str,
        name: String,
        valid: String,
    },
}

/// `:LINE` for errors that have one (0: the setting came from the command line).
fn at(line: usize) -> String {
    if line > 0 {
        format!(":{line}")
    } else {
        String::new()
    }
}

/// Which of the seed's table layouts `reproduce` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TableKind {
    /// Seed 000: counts per logarithmic latency bucket, worst case.
    LogHistogram,
    /// Seed 002: one maximum latency per kernel.
    MaxLatency,
    /// Seed 004: maximum and average latency and missed timer events per run.
    PosixTimer,
    /// Seed 001: write(2) latency and throughput of `iozone -Q` per kernel and file size;
    /// no realfeel runs beside it (the seed measured the writer alone).
    WriteLatency,
    /// Seed 003: the voluntary-preempt tracer's longest preemption-off stretch per run (in
    /// the run's window of swap fill), its `get_swap_page` stretch, and how that grows with
    /// swap fill.
    PreemptOff,
    /// A what-if's wakeup latency per run (rt-vs-lazy): p99, p99.99, maximum and missed
    /// periods of the first measured stream, and what each run's worst sample waited for.
    Percentiles,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileRepr {
    name: String,
    title: String,
    /// The seed the runs' published figures come from; optional for an experiment without
    /// any (a what-if of one's own), which reports [`NO_SEED_FILE`].
    #[serde(default)]
    seed_file: Option<String>,
    machine: String,
    workload: String,
    #[serde(default = "default_rtc")]
    rtc_hz: u32,
    #[serde(default = "default_prio")]
    rt_priority: u32,
    #[serde(default = "default_seed")]
    seed: u64,
    table: TableKind,
    #[serde(default)]
    notes: Vec<String>,
    #[serde(default)]
    preload: Option<PreloadRepr>,
    /// CPU-bound tasks of a workload that runs them (`cpu-hogs`), for every run.
    #[serde(default)]
    hogs: Option<u32>,
    /// Period of the POSIX timer of runs that measure one (`notify`), microseconds.
    #[serde(default)]
    timer_period_us: Option<u64>,
    run: Vec<RunRepr>,
}

/// `[preload]`: the machine's state when the script starts. In an experiment file it
/// overrides the workload's own (field by field; with `base`, starting from that named
/// state); one state for every run of the experiment: a variant cannot have its own. In a
/// workload file it is the workload's: a `base`, or every field. Fields as [`Preload`]'s.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PreloadRepr {
    /// A named state to start from ([`PreloadBase`]: `lived-in`, `fresh-boot`).
    pub base: Option<PreloadBase>,
    pub cache_full: Option<bool>,
    pub reclaimed_before: Option<bool>,
    pub old_file_kb: Option<u64>,
    pub unused_dentries: Option<u64>,
    pub referenced: Option<bool>,
    pub updatedb_after: Option<bool>,
    pub idle_anon_mib: Option<u64>,
    pub swapped_mib: Option<u64>,
}

impl PreloadRepr {
    /// `p` (or the `base` given here) with the fields given here replaced.
    pub fn apply(&self, p: &Preload) -> Preload {
        let p = self.base.map_or_else(|| p.clone(), PreloadBase::preload);
        Preload {
            cache_full: self.cache_full.unwrap_or(p.cache_full),
            reclaimed_before: self.reclaimed_before.unwrap_or(p.reclaimed_before),
            old_file_kb: self.old_file_kb.unwrap_or(p.old_file_kb),
            unused_dentries: self.unused_dentries.unwrap_or(p.unused_dentries),
            referenced: self.referenced.unwrap_or(p.referenced),
            updatedb_after: self.updatedb_after.unwrap_or(p.updatedb_after),
            idle_anon_mib: self.idle_anon_mib.unwrap_or(p.idle_anon_mib),
            swapped_mib: self.swapped_mib.unwrap_or(p.swapped_mib),
        }
    }

    /// Does this table set `field` (itself, or through its `base`)?
    pub fn sets(&self, field: &str) -> bool {
        self.base.is_some()
            || match field {
                "cache_full" => self.cache_full.is_some(),
                "reclaimed_before" => self.reclaimed_before.is_some(),
                "old_file_kb" => self.old_file_kb.is_some(),
                "unused_dentries" => self.unused_dentries.is_some(),
                "referenced" => self.referenced.is_some(),
                "updatedb_after" => self.updatedb_after.is_some(),
                "idle_anon_mib" => self.idle_anon_mib.is_some(),
                "swapped_mib" => self.swapped_mib.is_some(),
                _ => false,
            }
    }

    /// The state this table describes on its own: its `base` with the fields given here
    /// replaced, or, without a base, the fields given here; the first one missing if any.
    pub fn resolve(&self) -> Result<Preload, &'static str> {
        if self.base.is_some() {
            return Ok(self.apply(&Preload::default()));
        }
        Ok(Preload {
            cache_full: self.cache_full.ok_or("cache_full")?,
            reclaimed_before: self.reclaimed_before.ok_or("reclaimed_before")?,
            old_file_kb: self.old_file_kb.ok_or("old_file_kb")?,
            unused_dentries: self.unused_dentries.ok_or("unused_dentries")?,
            referenced: self.referenced.ok_or("referenced")?,
            updatedb_after: self.updatedb_after.ok_or("updatedb_after")?,
            idle_anon_mib: self.idle_anon_mib.ok_or("idle_anon_mib")?,
            swapped_mib: self.swapped_mib.ok_or("swapped_mib")?,
        })
    }
}

fn default_rtc() -> u32 {
    2048
}
fn default_prio() -> u32 {
    99
}
fn default_seed() -> u64 {
    1
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RunRepr {
    label: String,
    variant: String,
    /// This run's workload, where it is not the experiment's (seed 001's sysbench rows
    /// beside its iozone rows).
    #[serde(default)]
    workload: Option<String>,
    /// This run's machine, where it is not the experiment's (rt-vs-lazy's 2010 uniprocessor
    /// rows beside its rows on the twin of this box): a built-in name or a file's path.
    #[serde(default)]
    machine: Option<String>,
    /// The measurement window as a sample count: the model runs (idle after the workload)
    /// at least as long as collecting this many samples at `rtc_hz` takes. The built-in
    /// experiments give the seed's own count (the seed's run length); the model never reads
    /// `published_samples`, which is comparison data only.
    #[serde(default)]
    samples: Option<f64>,
    /// The measurement window in simulated seconds (instead of `samples`).
    #[serde(default)]
    duration_s: Option<f64>,
    /// Samples the seed's run collected: shown beside the model's count, never read by a run.
    #[serde(default)]
    published_samples: Option<f64>,
    #[serde(default)]
    published_max_ms: Option<f64>,
    #[serde(default)]
    published_max_range_ms: Option<[f64; 2]>,
    #[serde(default)]
    published_buckets: Vec<f64>,
    #[serde(default)]
    published_listing: Vec<[f64; 2]>,
    /// Stop the run here whatever happens, seconds.
    #[serde(default)]
    max_seconds: Option<u64>,
    /// Measure seed 004's POSIX-timer wakeup latency with this notification (`thread` or
    /// `signal`) instead of realfeel.
    #[serde(default)]
    notify: Option<String>,
    #[serde(default)]
    published_avg_ms: Option<f64>,
    #[serde(default)]
    published_missed: Option<u64>,
    /// Seed 001: the iozone file's size in percent of the machine's RAM (the run's `case`).
    #[serde(default)]
    file_pct_of_ram: Option<u32>,
    /// Seed 001: the slowest writes' latencies, us (`sort -nk2 wol.dat | tail`, column 2).
    #[serde(default)]
    published_slowest_us: Vec<f64>,
    /// Seed 001: writes over 100 ms.
    #[serde(default)]
    published_over_100ms: Option<u64>,
    /// Seed 001: this run's write throughput over the first run's of the same case.
    #[serde(default)]
    published_throughput_gain: Option<f64>,
    /// `preempt-off` tables: the window of swap fill (percent in use, [low, high]) the run's
    /// worst stretches are taken from; default the whole run.
    #[serde(default)]
    swap_fill_pct: Option<[u64; 2]>,
    /// The longest `get_swap_page` stretch the seed published for the window, ms.
    #[serde(default)]
    published_swap_max_ms: Option<f64>,
    /// The kernel's `maxcpus=` boot parameter: the logical CPUs of the machine it brings up.
    #[serde(default)]
    maxcpus: Option<u32>,
    /// The task and the function (where it ended) of the seed's worst trace.
    #[serde(default)]
    published_task: Option<String>,
    #[serde(default)]
    published_function: Option<String>,
}

/// What the seed published for one run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Published {
    pub samples: Option<f64>,
    pub max_ms: Option<f64>,
    pub max_range_ms: Option<[f64; 2]>,
    /// Counts per log bucket 0-1, 1-2, 2-4 ... ms.
    pub buckets: Vec<f64>,
    /// (ms, count) rows of a 0.1 ms listing.
    pub listing: Vec<[f64; 2]>,
    /// Average latency, ms.
    pub avg_ms: Option<f64>,
    /// Missed timer events.
    pub missed: Option<u64>,
    /// The slowest writes, us (seed 001).
    pub slowest_us: Vec<f64>,
    /// Writes over 100 ms (seed 001).
    pub over_100ms: Option<u64>,
    /// Write throughput over the first run's of the same case (seed 001).
    pub throughput_gain: Option<f64>,
    /// The longest `get_swap_page` stretch, ms (seed 003).
    pub swap_max_ms: Option<f64>,
    /// The task (`comm`) and the function of the worst trace (seed 003).
    pub task: Option<String>,
    pub function: Option<String>,
}

/// One run of an experiment, ready for the model.
#[derive(Clone, Debug)]
pub struct Run {
    pub label: String,
    /// What the run varies besides the kernel (seed 001's file size: `50%`), if anything.
    pub case: Option<String>,
    pub config: SimConfig,
    pub published: Published,
    /// The file's hard stop, if it gave one.
    pub max_seconds: Option<u64>,
}

impl Run {
    /// The stream that names this run's comparison rows beside its kernel and case, as
    /// `compare_rows` names it: the POSIX timer's, the tracer's window of swap fill, or
    /// sysbench's (seed 001's sysbench rows beside its iozone rows); None for the rest.
    pub fn stream(&self) -> Option<String> {
        let c = &self.config;
        let sysbench = c
            .workload
            .commands
            .iter()
            .any(|x| matches!(x, latlab_sim::CommandSpec::Sysbench(_)));
        c.posix_timer
            .as_ref()
            .map(|p| p.notify.stream().to_string())
            .or(c.preempt_off.map(|[lo, hi]| format!("swap {lo}-{hi}%")))
            .or(sysbench.then(|| latlab_sim::measure::write_latency::Pass::Rndrw.stream().to_string()))
    }
}

/// The longest run an experiment may imply without a `max_seconds` of its own, and the most
/// `max_seconds` may ask: two simulated hours (the seeds' runs last 10 to 41 minutes; two
/// hours take a few minutes of one core). A measurement window (`samples` at the file's
/// `rtc_hz`, or `duration_s`) that asks for more is refused unless the run gives
/// `max_seconds`, which cuts it there.
pub const MAX_RUN_SECONDS: u64 = 7200;

/// How long a run lasts: at least its measurement window (`samples` at `rtc_hz`, or
/// `duration_s`; the model idles after the workload), and at most `max_seconds` or, without
/// one, twice that (or twice 600 s). Without `max_seconds`, a window longer than
/// [`MAX_RUN_SECONDS`] is an error (the reason).
fn run_length(window_s: Option<f64>, max_seconds: Option<u64>) -> Result<(u64, u64), String> {
    let seed_s = window_s.unwrap_or(0.0);
    if let Some(max) = max_seconds {
        let max_ns = max.saturating_mul(1_000_000_000);
        // `as` saturates: a seed's run beyond u64 nanoseconds is cut at max_seconds anyway.
        return Ok((((seed_s * 1e9) as u64).min(max_ns), max_ns));
    }
    if seed_s > MAX_RUN_SECONDS as f64 {
        return Err(format!(
            "a measurement window of {seed_s:.0} simulated seconds is more than the {MAX_RUN_SECONDS} s \
             a run may last; give the run a `max_seconds` (at most {MAX_RUN_SECONDS}) to cut it there"
        ));
    }
    let min_ns = (seed_s * 1e9) as u64;
    Ok((min_ns, min_ns.max(600_000_000_000) * 2))
}

/// Highest latency a `published_listing` row may name, ms: an hour, the most a result's
/// histogram resolves.
const MAX_LISTING_MS: f64 = 3_600_000.0;

/// The `seed_file` of an experiment that names none (no run gives published figures): what
/// its heading and its rows' `source` show.
const NO_SEED_FILE: &str = "none";

/// A parsed, validated experiment.
#[derive(Clone, Debug)]
pub struct Experiment {
    pub name: String,
    pub title: String,
    pub seed_file: String,
    pub table: TableKind,
    pub notes: Vec<String>,
    pub runs: Vec<Run>,
}

/// 1-based line of byte offset `at`.
fn line_of(text: &str, at: usize) -> (usize, usize) {
    let before = &text[..at.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rfind('\n').map_or(before.len(), |i| before.len() - i - 1) + 1;
    (line, col)
}

/// Line where `key = "value"` (or the bare value) appears, for errors about resolved names.
fn line_of_value(text: &str, key: &str, value: &str) -> usize {
    text.lines()
        .position(|l| {
            let l = l.trim_start();
            l.starts_with(key) && l.contains(&format!("\"{value}\""))
        })
        .map_or(0, |i| i + 1)
}

/// A TOML or serde error. One about a value (`sched = "bfs"`, an unknown point in `points`)
/// names the field it sets, dotted with its table (`cfs.latency_ns`).
pub(crate) fn syntax(origin: &str, text: &str, e: toml::de::Error) -> ExpError {
    let mut msg = e.message().replace('\n', " ");
    if msg.trim().is_empty() {
        // The parser names no reason for some characters (a control character in a comment).
        msg = match e
            .span()
            .and_then(|s| text.get(s.start..))
            .and_then(|t| t.chars().next())
        {
            Some(c) if c.is_control() => format!(
                "control character U+{:04X} is not allowed here (TOML allows only tab among them, in comments too)",
                c as u32
            ),
            Some(c) => format!("unexpected character {c:?}"),
            None => "unexpected end of the file".into(),
        };
    }
    let Some(span) = e.span() else {
        return ExpError::Syntax {
            origin: origin.into(),
            line: 0,
            col: 0,
            msg,
        };
    };
    let (line, col) = line_of(text, span.start);
    match field_set_at(text, span.start) {
        Some(field) => ExpError::Field {
            origin: origin.into(),
            line,
            field,
            why: msg,
        },
        None => ExpError::Syntax {
            origin: origin.into(),
            line,
            col,
            msg,
        },
    }
}

/// The key whose value starts at byte `at` (`key = ` before it on its line), prefixed with the
/// table it sits in and the keys of the arrays it is an element of (`command = [` above it).
fn field_set_at(text: &str, at: usize) -> Option<String> {
    let (head, key) = path_at(text, at, 0)?;
    let bare = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.';
    if key.is_empty() || !key.chars().all(bare) {
        return None;
    }
    let table = text[..head]
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with('['))
        .map(|l| l.trim_matches(|c| c == '[' || c == ']').trim());
    Some(match table {
        Some(t) if !t.is_empty() => format!("{t}.{key}"),
        _ => key,
    })
}

/// The dotted key of the value starting at byte `at`, within its table (where that table's
/// part of the text begins, and the key): the key before it on its line, dotted with the
/// inline tables it sits in (`{ dd = { bs_kb = ` gives `dd.bs_kb`) and, for an element of an
/// array opened on a line above (`command = [`), with that array's own key, and so on out
/// (`depth` arrays out so far: a path deeper than any workload's is left unnamed).
fn path_at(text: &str, at: usize, depth: usize) -> Option<(usize, String)> {
    let at = at.min(text.len());
    let start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let before = text[start..at].trim_end().strip_suffix('=')?.trim_end();
    if before.contains('}') {
        return None;
    }
    let mut keys: Vec<&str> = Vec::new();
    for part in before.split('{') {
        let open = part.rsplit(',').next().unwrap_or(part).trim();
        // An array opened on this line (`command = [ { dd = ...`): its key.
        let open = open.strip_suffix('[').map_or(open, str::trim_end);
        if let Some(k) = open.strip_suffix('=') {
            keys.push(k.trim());
        } else if !open.is_empty() {
            keys.push(open);
        }
    }
    let key = keys.join(".");
    match open_array_above(text, start) {
        Some(_) if depth >= 8 => None,
        Some(bracket) => {
            let (head, outer) = path_at(text, bracket, depth + 1)?;
            Some((head, format!("{outer}.{key}")))
        }
        None => Some((start, key)),
    }
}

/// Where the line starting at byte `start` sits inside an array opened on a line above
/// (`command = [`): the byte of that array's `[`. None at a table header. Brackets in comments
/// and strings are not told apart (the files' arrays hold none).
fn open_array_above(text: &str, start: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut end = start;
    while end > 0 {
        // The line before `end` (which starts a line), without its newline.
        let line_start = text[..end - 1].rfind('\n').map_or(0, |i| i + 1);
        let line = &text[line_start..end - 1];
        end = line_start;
        let code = line.split('#').next().unwrap_or("");
        if depth == 0 && code.trim_start().starts_with('[') && !code.contains('=') {
            return None;
        }
        for (i, c) in code.char_indices().rev() {
            match c {
                ']' => depth += 1,
                '[' if depth > 0 => depth -= 1,
                '[' => return Some(line_start + i),
                _ => {}
            }
        }
    }
    None
}

/// Reads a file an experiment names by path (`variant = "./my-kernel.toml"`): given the path as
/// the experiment wrote it, returns the name to give the file in errors and its text. The CLI
/// supplies one that reads relative to the experiment file's directory; built-in experiments
/// get [`no_files`]. This crate itself never touches the file system.
pub type Files<'a> = &'a dyn Fn(&str) -> std::io::Result<(String, String)>;

/// The [`Files`] of built-in experiments: they name built-in machines and variants only.
pub fn no_files(_: &str) -> std::io::Result<(String, String)> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "only an experiment run from a file (latlab run FILE) can name machine, variant or workload files",
    ))
}

/// Does a `machine`, `variant` or `workload` value name a file (it has a `/` or ends in `.toml`) rather
/// than a built-in?
pub fn is_path(value: &str) -> bool {
    value.contains('/') || value.ends_with(".toml")
}

/// What a `machine`, `variant` or `workload` value can name: its field, its words in errors, the built-ins.
pub(crate) struct Kind {
    pub(crate) field: &'static str,
    pub(crate) what: &'static str,
    pub(crate) dir: &'static str,
    pub(crate) builtins: &'static [(&'static str, &'static str)],
}

const MACHINE: Kind = Kind {
    field: "machine",
    what: "machine",
    dir: "machines",
    builtins: builtin::MACHINES,
};

const VARIANT: Kind = Kind {
    field: "variant",
    what: "kernel variant",
    dir: "variants",
    builtins: builtin::VARIANTS,
};

/// The text of the machine profile, kernel variant or workload named by `value` at `origin:line`: built
/// in, or read through `files`; with the name to give it in errors.
pub(crate) fn read_named(
    k: &Kind,
    origin: &str,
    line: usize,
    value: &str,
    files: Files,
) -> Result<(String, String), ExpError> {
    if is_path(value) {
        return files(value).map_err(|e| ExpError::Field {
            origin: origin.into(),
            line,
            field: k.field.into(),
            why: format!("cannot read {} file `{value}`: {e}", k.what),
        });
    }
    match k.builtins.iter().find(|(n, _)| *n == value) {
        Some((n, text)) => Ok((format!("{}/{n}.toml", k.dir), text.to_string())),
        None => Err(ExpError::Unknown {
            origin: origin.into(),
            line,
            what: k.what,
            name: value.into(),
            valid: format!(
                "{}, or a {} file's path (a value with a `/` or ending in `.toml`)",
                k.builtins.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", "),
                k.what
            ),
        }),
    }
}

/// A machine profile or kernel variant file's text parsed and validated: errors name the
/// file, its line, the field and why.
fn parse_checked<T: serde::de::DeserializeOwned>(
    file: &str,
    text: &str,
    validate: impl Fn(&T) -> Result<(), (&'static str, String)>,
) -> Result<T, ExpError> {
    let v: T = toml::from_str(text).map_err(|e| syntax(file, text, e))?;
    validate(&v).map_err(|(field, why)| ExpError::Field {
        line: line_of_field(text, field),
        origin: file.into(),
        field: field.into(),
        why,
    })?;
    Ok(v)
}

/// 1-based line where `field` (dotted for a nested table's: `disk.seq_mb_s`) is set, or of
/// the table it names (`[catalog...]`); 1 if neither is found.
pub(crate) fn line_of_field(text: &str, field: &str) -> usize {
    find_field(text, field).unwrap_or(1)
}

/// 1-based line where `field` is set, or of the table it names; `None` if neither is found.
pub(crate) fn find_field(text: &str, field: &str) -> Option<usize> {
    let (table, key) = field.rsplit_once('.').unwrap_or(("", field));
    let sets = |l: &str| {
        l.trim_start()
            .strip_prefix(key)
            .is_some_and(|rest| rest.trim_start().starts_with('='))
    };
    let header = |l: &str| {
        l.trim_start()
            .starts_with(&format!("[{}", if table.is_empty() { key } else { table }))
    };
    let lines: Vec<&str> = text.lines().collect();
    let start = if table.is_empty() {
        0
    } else {
        lines.iter().position(|l| header(l)).unwrap_or(0)
    };
    // An array of tables (`[[host.topology.caches]]`) is named by its first header.
    let array = format!("[[{field}]]");
    lines[start..]
        .iter()
        .position(|l| sets(l))
        .map(|i| start + i + 1)
        .or_else(|| {
            lines
                .iter()
                .position(|l| l.trim_start().starts_with(&array))
                .map(|i| i + 1)
        })
        .or_else(|| lines.iter().position(|l| header(l)).map(|i| i + 1))
}

/// A machine profile: built in (`piii-850`) or a file's path (read through `files`).
pub fn machine(origin: &str, name: &str, line: usize, files: Files) -> Result<MachineProfile, ExpError> {
    let (file, text) = read_named(&MACHINE, origin, line, name, files)?;
    parse_checked(&file, &text, |m: &MachineProfile| {
        m.validate()?;
        check_uncertainty(m)
    })
}

/// A kernel variant: built in (`2.4.18+mini-ll`) or a file's path (read through `files`),
/// with the bases it `extends` ([`crate::extends`]).
pub fn variant(origin: &str, name: &str, line: usize, files: Files) -> Result<Variant, ExpError> {
    let layers = crate::extends::chain(origin, line, name, &|o: &str, l: usize, v: &str| {
        read_named(&VARIANT, o, l, v, files)
    })?;
    // Checked here too (the model checks it when a run starts), so a variant file's mistake
    // is reported with its file and line.
    match layers.as_slice() {
        [only] => parse_checked(&only.file, &only.text, Variant::validate),
        _ => crate::extends::resolve(&layers),
    }
}

pub(crate) fn parse(origin: &str, text: &str, files: Files) -> Result<Experiment, ExpError> {
    let f: FileRepr = toml::from_str(text).map_err(|e| syntax(origin, text, e))?;
    let field = |name: &str, why: String| ExpError::Field {
        origin: origin.into(),
        line: text
            .lines()
            .position(|l| l.trim_start().starts_with(name))
            .map_or(0, |i| i + 1),
        field: name.into(),
        why,
    };
    if !periodic_rate_ok(f.rtc_hz.into()) {
        return Err(field(
            "rtc_hz",
            format!(
                "must be a power of two in 2..=8192 (the RTC's periodic rates), got {}",
                f.rtc_hz
            ),
        ));
    }
    if !(1..=99).contains(&f.rt_priority) {
        return Err(field("rt_priority", format!("must be 1..=99, got {}", f.rt_priority)));
    }
    if f.run.is_empty() {
        return Err(field("run", "an experiment needs at least one [[run]]".into()));
    }
    let machine = machine(origin, &f.machine, line_of_value(text, "machine", &f.machine), files)?;
    // A workload, built in or a file, with the experiment's [preload] and hogs (for every run).
    let workload_named = |name: &str| -> Result<crate::workload::Named, ExpError> {
        let mut n = crate::workload::named(origin, name, line_of_value(text, "workload", name), files)?;
        let w = &mut n.workload;
        if let Some(p) = &f.preload {
            w.preload = p.apply(&w.preload);
        }
        if let Some(n) = f.hogs {
            sizes::set(&mut w.commands, "hogs", n.into()).map_err(|why| field("hogs", why))?;
        }
        // A preload too big for the machine: the error where the value was set, the
        // experiment's [preload] or the workload file's.
        match n.workload.preload.validate(&machine) {
            Err((name, why)) if f.preload.as_ref().is_some_and(|p| p.sets(name)) => Err(field(name, why)),
            Err((name, why)) => Err(n.preload_error(name, why)),
            Ok(()) => Ok(n),
        }
    };
    let workload = workload_named(&f.workload)?;
    let mut runs: Vec<Run> = Vec::new();
    for r in f.run {
        // A label names the run's row in every table, JSON document and file it writes.
        if runs.iter().any(|x| x.label == r.label) {
            return Err(ExpError::Field {
                origin: origin.into(),
                line: text
                    .lines()
                    .enumerate()
                    .filter(|(_, l)| l.trim_start().starts_with("label") && l.contains(&format!("\"{}\"", r.label)))
                    .nth(1)
                    .map_or(0, |(i, _)| i + 1),
                field: "label".into(),
                why: format!(
                    "`{}` names another run already; each run needs its own label (it names the run's row in the tables and --json)",
                    r.label
                ),
            });
        }
        let v = variant(origin, &r.variant, line_of_value(text, "variant", &r.variant), files)?;
        for (name, n) in [("published_samples", r.published_samples), ("samples", r.samples)] {
            if let Some(s) = n.filter(|s| !(s.is_finite() && (0.0..1e12).contains(s))) {
                return Err(field(name, format!("must be a count from 0 to 10^12, got {s:?}")));
            }
        }
        let window = match (r.samples, r.duration_s) {
            (Some(_), Some(_)) => {
                return Err(field(
                    "duration_s",
                    "give the measurement window once: `samples` (at rtc_hz) or `duration_s`, not both".into(),
                ))
            }
            (Some(s), None) => Some(("samples", s / f.rtc_hz as f64)),
            (None, Some(d)) if !(d.is_finite() && d >= 0.0) => {
                return Err(field(
                    "duration_s",
                    format!("must be a finite number of simulated seconds >= 0, got {d}"),
                ))
            }
            (None, Some(d)) => Some(("duration_s", d)),
            (None, None) => None,
        };
        if let Some([lo, hi]) = r.published_max_range_ms {
            if !(lo.is_finite() && hi.is_finite() && 0.0 <= lo && lo < hi) {
                return Err(field(
                    "published_max_range_ms",
                    format!("must be [low, high] with 0 <= low < high, got [{lo}, {hi}]"),
                ));
            }
        }
        if let Some(ms) = r.published_max_ms {
            if !(ms.is_finite() && ms > 0.0) {
                return Err(field("published_max_ms", format!("must be a latency > 0 ms, got {ms}")));
            }
        }
        if let Some(ms) = r.published_avg_ms {
            if !(ms.is_finite() && ms >= 0.0) {
                return Err(field(
                    "published_avg_ms",
                    format!("must be a latency >= 0 ms, got {ms}"),
                ));
            }
        }
        if let Some(c) = r.published_buckets.iter().find(|c| !(c.is_finite() && **c >= 0.0)) {
            return Err(field(
                "published_buckets",
                format!("every bucket must be a count >= 0, got {c}"),
            ));
        }
        if let Some([at, n]) = r
            .published_listing
            .iter()
            .find(|[at, n]| !(at.is_finite() && (0.0..=MAX_LISTING_MS).contains(at) && n.is_finite() && *n >= 0.0))
        {
            return Err(field(
                "published_listing",
                format!(
                    "every row must be [ms, count] with 0 <= ms <= {MAX_LISTING_MS} (an hour) and count >= 0, got [{at}, {n}]"
                ),
            ));
        }
        if let Some(max) = r.max_seconds.filter(|&m| m > MAX_RUN_SECONDS) {
            return Err(field(
                "max_seconds",
                format!("a run lasts at most {MAX_RUN_SECONDS} simulated seconds (two hours), got {max}"),
            ));
        }
        let (min_ns, max_ns) = run_length(window.map(|(_, s)| s), r.max_seconds)
            .map_err(|why| field(window.map_or("max_seconds", |(name, _)| name), why))?;
        let posix_timer = match r.notify.as_deref() {
            None => None,
            Some(n) => {
                let notify = match n {
                    "thread" => Notify::Thread,
                    "signal" => Notify::Signal,
                    _ => {
                        return Err(ExpError::Unknown {
                            origin: origin.into(),
                            line: line_of_value(text, "notify", n),
                            what: "notify kind",
                            name: n.into(),
                            valid: "thread, signal".into(),
                        })
                    }
                };
                let Some(us) = f.timer_period_us else {
                    return Err(field(
                        "timer_period_us",
                        "runs with `notify` need the timer's period".into(),
                    ));
                };
                check_timer_period(us).map_err(|why| field("timer_period_us", why))?;
                if v.sched == latlab_sim::SchedClass::Goodness24 {
                    return Err(field(
                        "notify",
                        format!(
                            "kernel variant `{}` is a 2.4 kernel: no POSIX timers (timer_create arrived in 2.6)",
                            v.name
                        ),
                    ));
                }
                Some(PosixTest {
                    notify,
                    period_ns: us * 1_000,
                })
            }
        };
        if let Some(us) = r
            .published_slowest_us
            .iter()
            .find(|us| !(us.is_finite() && **us >= 0.0))
        {
            return Err(field(
                "published_slowest_us",
                format!("every entry must be a latency >= 0 us, got {us}"),
            ));
        }
        if let Some(g) = r.published_throughput_gain.filter(|g| !(g.is_finite() && *g > 0.0)) {
            return Err(field(
                "published_throughput_gain",
                format!("must be a ratio > 0, got {g}"),
            ));
        }
        let named = match &r.workload {
            None => workload.clone(),
            Some(name) => workload_named(name)?,
        };
        let machine = match &r.machine {
            None => machine.clone(),
            Some(name) => {
                let m = self::machine(origin, name, line_of_value(text, "machine", name), files)?;
                named.workload.preload.validate(&m).map_err(|(f, why)| {
                    field(
                        "machine",
                        format!("the starting state's preload.{f} does not fit `{name}`: {why}"),
                    )
                })?;
                m
            }
        };
        // The tasks on this run's kernel: the CPUs it brings up, its POSIX timers.
        named.check_kernel(
            r.maxcpus.unwrap_or(machine.cpus).clamp(1, machine.cpus.max(1)),
            v.per_cpu_runqueues(),
            v.has_posix_timers(),
        )?;
        let measured = latlab_sim::workload::task::measures(&named.workload.tasks);
        if named.workload.commands.is_empty() && window.is_none() {
            return Err(field(
                "duration_s",
                format!(
                    "workload `{}` is tasks only (no [[command]]), which run until the run ends: give the run a window, `duration_s` or `samples`",
                    named.workload.name
                ),
            ));
        }
        let mut run_workload = named.workload;
        let case = match r.file_pct_of_ram {
            None => None,
            Some(pct) => {
                let mb = machine.ram_mib * u64::from(pct) / 100;
                // The benchmark's total file size: iozone's file or sysbench's files.
                let key = FILE_SIZES
                    .iter()
                    .copied()
                    .find(|k| sizes::get(&run_workload.commands, k).is_some())
                    .unwrap_or(FILE_SIZES[0]);
                sizes::set(&mut run_workload.commands, key, mb).map_err(|why| {
                    field(
                        "file_pct_of_ram",
                        format!("{pct} % of the machine's {} MiB is {mb} MB: {why}", machine.ram_mib),
                    )
                })?;
                Some(format!("{pct}%"))
            }
        };
        if r.swap_fill_pct.is_some() && f.table != TableKind::PreemptOff {
            return Err(field(
                "swap_fill_pct",
                "only a table = \"preempt-off\" experiment has a window of swap fill".into(),
            ));
        }
        let window = r.swap_fill_pct.unwrap_or([0, 100]);
        if !(window[0] <= window[1] && window[1] <= 100) {
            return Err(field(
                "swap_fill_pct",
                format!("must be [low, high] percent with low <= high <= 100, got {window:?}"),
            ));
        }
        if let Some(ms) = r.published_swap_max_ms {
            if !(ms.is_finite() && ms > 0.0) {
                return Err(field(
                    "published_swap_max_ms",
                    format!("must be a latency > 0 ms, got {ms}"),
                ));
            }
        }
        if let Some(n) = r.maxcpus.filter(|n| !(1..=machine.cpus).contains(n)) {
            return Err(field(
                "maxcpus",
                format!(
                    "must be 1..={} (machine `{}`'s logical CPUs), got {n}",
                    machine.cpus, machine.name
                ),
            ));
        }
        runs.push(Run {
            label: r.label,
            case,
            max_seconds: r.max_seconds,
            config: SimConfig {
                machine,
                variant: v,
                workload: run_workload,
                rtc_hz: f.rtc_hz,
                rt_priority: f.rt_priority,
                seed: f.seed,
                min_duration_ns: min_ns,
                max_duration_ns: max_ns,
                // A workload whose tasks have periodic steps measures them instead.
                realfeel: posix_timer.is_none() && f.table != TableKind::WriteLatency && !measured,
                posix_timer,
                preempt_off: (f.table == TableKind::PreemptOff).then_some(window),
                maxcpus: r.maxcpus,
                keep_records: false,
                record_events: None,
                replay_noise: false,
            },
            published: Published {
                samples: r.published_samples,
                max_ms: r.published_max_ms,
                max_range_ms: r.published_max_range_ms,
                buckets: r.published_buckets,
                listing: r.published_listing,
                avg_ms: r.published_avg_ms,
                missed: r.published_missed,
                slowest_us: r.published_slowest_us,
                over_100ms: r.published_over_100ms,
                throughput_gain: r.published_throughput_gain,
                swap_max_ms: r.published_swap_max_ms,
                task: r.published_task,
                function: r.published_function,
            },
        });
    }
    let seed_file = match f.seed_file {
        Some(s) => s,
        None => {
            if let Some(r) = runs.iter().find(|r| r.published != Published::default()) {
                return Err(field(
                    "seed_file",
                    format!(
                        "run `{}` gives published figures: name the seed file they come from (`seed_file = \"...\"`), or drop them for a what-if of your own",
                        r.label
                    ),
                ));
            }
            NO_SEED_FILE.into()
        }
    };
    Ok(Experiment {
        name: f.name,
        title: f.title,
        seed_file,
        table: f.table,
        notes: f.notes,
        runs,
    })
}

/// The workload sizes `file_pct_of_ram` sets, the first the run's workload has.
const FILE_SIZES: [&str; 2] = ["iozone.file_mb", "sysbench.file_mb"];

/// A POSIX timer's period in us: 100 us (below it every expiry of a loaded box is an
/// overrun) to 10 s (a run sees a few).
fn check_timer_period(us: u64) -> Result<(), String> {
    if (100..=10_000_000).contains(&us) {
        Ok(())
    } else {
        Err(format!("must be 100 ..= 10,000,000 us, got {us}"))
    }
}

/// What `--vary` can change besides the workload's sizes ([`sizes::SIZES`]: `hogs`,
/// `video.*`, `make.*`, `iozone.*`): the PRNG seed, realfeel's RTC rate, every kernel's HZ,
/// the POSIX timer's period, every page-based kernel's dirty ratios, or one field of the
/// preload (the machine's state when the script starts).
pub const VARY_KEYS: &[&str] = &[
    "seed",
    "rtc_hz",
    "hz",
    "timer_period_us",
    "dirty_ratio",
    "dirty_background_ratio",
    "preload.unused_dentries",
    "preload.idle_anon_mib",
    "preload.swapped_mib",
    "preload.old_file_kb",
    "preload.cache_full",
    "preload.reclaimed_before",
    "preload.referenced",
    "preload.updatedb_after",
];

/// `exp` with `key` set to `value` in every run (the same value for every variant), checked
/// as the file's own fields are. `origin` names where the setting came from in errors.
///
/// Besides [`VARY_KEYS`], `key` may be `machine.FIELD` (any number or flag of the machine
/// profile, `disk.*` included: [`machine_fields`]) or `catalog.NAME.instr` /
/// `catalog.NAME.misses` (one item of the code-path catalog, `latlab_sim::kernel::catalog::
/// COST_ITEMS`): each run's machine changed.
pub fn vary(exp: &Experiment, origin: &str, key: &str, value: &str) -> Result<Experiment, ExpError> {
    let bad = |why: String| ExpError::Field {
        origin: origin.into(),
        line: 0,
        field: key.into(),
        why,
    };
    if key.starts_with("machine.") || key.starts_with("catalog.") {
        let mut out = exp.clone();
        // Each run's own machine (an experiment may run on more than one).
        for run in &mut out.runs {
            let m = if let Some(field) = key.strip_prefix("machine.") {
                set_machine_field(origin, &run.config.machine, field, value)?
            } else {
                set_catalog_cost(origin, &run.config.machine, key, value)?
            };
            // A smaller machine may no longer hold the starting state.
            run.config
                .workload
                .preload
                .validate(&m)
                .map_err(|(f, why)| bad(format!("the starting state's preload.{f} no longer fits: {why}")))?;
            run.config.machine = m;
        }
        return Ok(out);
    }
    let setting = Setting::parse(origin, key, value)?;
    let mut out = exp.clone();
    // A size reaches the runs whose workload has its command (seed 001's iozone runs, not
    // its sysbench runs); it is an error only if none has.
    let sized = |c: &SimConfig| sizes::get(&c.workload.commands, key).is_some();
    let some_sized = exp.runs.iter().any(|r| sized(&r.config));
    for run in &mut out.runs {
        let c = &mut run.config;
        if matches!(setting, Setting::Size(..)) && some_sized && !sized(c) {
            continue;
        }
        match &setting {
            Setting::Seed(seed) => c.seed = *seed,
            // The run lasts as long as the seed's did (its samples at the file's own rate),
            // whatever rate realfeel now samples at.
            Setting::RtcHz(hz) => c.rtc_hz = *hz,
            Setting::Size(key, n) => {
                sizes::set(&mut c.workload.commands, key, *n).map_err(bad)?;
            }
            Setting::Hz(hz) => {
                c.variant.hz = *hz;
                c.variant.validate().map_err(|(_, why)| bad(why))?;
            }
            Setting::DirtyRatio(hard, pct) => match &mut c.variant.dirty {
                Some(d) if *hard => d.dirty_ratio = *pct,
                Some(d) => d.dirty_background_ratio = *pct,
                None => {
                    return Err(bad(format!(
                        "kernel variant `{}` has 2.4's bdflush writeback: no vm.dirty_* ratios (only page-based writeback's kernels have them)",
                        c.variant.name
                    )))
                }
            },
            Setting::TimerPeriod(ns) => match &mut c.posix_timer {
                Some(p) => p.period_ns = *ns,
                None => return Err(bad("the run has no POSIX timer (only runs with `notify` do)".into())),
            },
            Setting::Preload(p) => {
                let w = &mut c.workload;
                w.preload = p.apply(&w.preload);
                w.preload.validate(&c.machine).map_err(|(f, why)| ExpError::Field {
                    origin: origin.into(),
                    line: 0,
                    field: format!("preload.{f}"),
                    why,
                })?;
            }
        }
    }
    Ok(out)
}

/// The machine profile's fields `--vary machine.FIELD` can set: every number and flag, nested
/// tables' as `disk.seq_mb_s` (the catalog overrides have their own keys, `catalog.*`).
pub fn machine_fields(m: &MachineProfile) -> Vec<String> {
    machine_values(m).into_iter().map(|(f, _)| f).collect()
}

/// A machine field's value: a number (whole or not) or a flag.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FieldValue {
    Whole(i64),
    Number(f64),
    Flag(bool),
}

/// Every field of [`machine_fields`] with its value, in the profile's order.
pub fn machine_values(m: &MachineProfile) -> Vec<(String, FieldValue)> {
    fn walk(prefix: &str, t: &toml::Table, out: &mut Vec<(String, FieldValue)>) {
        for (k, v) in t {
            let path = format!("{prefix}{k}");
            match v {
                // The catalog and the spreads have keys of their own; the calibrated host's
                // facts are not the model's constants.
                toml::Value::Table(_) if ["catalog", "uncertainty", "host"].contains(&path.as_str()) => {}
                toml::Value::Table(sub) => walk(&format!("{path}."), sub, out),
                toml::Value::Integer(i) => out.push((path, FieldValue::Whole(*i))),
                toml::Value::Float(x) => out.push((path, FieldValue::Number(*x))),
                toml::Value::Boolean(b) => out.push((path, FieldValue::Flag(*b))),
                _ => {}
            }
        }
    }
    let mut out = Vec::new();
    if let Ok(toml::Value::Table(t)) = toml::Value::try_from(m) {
        walk("", &t, &mut out);
    }
    out
}

/// A machine's `[uncertainty]` table names only its number fields, each with a spread its
/// value fits (`latlab_sim::spread`). Returns the offending field (`uncertainty.NAME`) and why.
fn check_uncertainty(m: &MachineProfile) -> Result<(), (&'static str, String)> {
    let values = machine_values(m);
    for (field, spread) in &m.uncertainty.0 {
        let value = match values.iter().find(|(f, _)| f == field) {
            Some((_, FieldValue::Whole(i))) => *i as f64,
            Some((_, FieldValue::Number(x))) => *x,
            _ => {
                return Err((
                    "uncertainty",
                    format!(
                        "`{field}` is not a number field of the profile; valid: {}",
                        values
                            .iter()
                            .filter(|(_, v)| !matches!(v, FieldValue::Flag(_)))
                            .map(|(f, _)| f.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ))
            }
        };
        spread
            .check(value)
            .map_err(|why| ("uncertainty", format!("{field}: {why}")))?;
    }
    Ok(())
}

/// `m` with `field` (dotted, `disk.seq_mb_s`) set to `value` parsed as the field's own type,
/// read back as a profile and validated: the profile's own checks, whatever the field.
fn set_machine_field(origin: &str, m: &MachineProfile, field: &str, value: &str) -> Result<MachineProfile, ExpError> {
    let key = format!("machine.{field}");
    let bad = |why: String| ExpError::Field {
        origin: origin.into(),
        line: 0,
        field: key.clone(),
        why,
    };
    let fields = machine_fields(m);
    if !fields.iter().any(|f| f == field) {
        return Err(ExpError::Unknown {
            origin: origin.into(),
            line: 0,
            what: "machine field",
            name: field.into(),
            valid: fields.join(", "),
        });
    }
    let mut doc = toml::Value::try_from(m).map_err(|e| bad(e.to_string()))?;
    let mut slot = &mut doc;
    for part in field.split('.') {
        slot = slot.get_mut(part).ok_or_else(|| bad("not in the profile".into()))?;
    }
    *slot = match slot {
        toml::Value::Integer(_) => toml::Value::Integer(
            value
                .parse::<i64>()
                .map_err(|_| bad(format!("`{value}` is not a whole number")))?,
        ),
        toml::Value::Float(_) => toml::Value::Float(
            value
                .parse::<f64>()
                .map_err(|_| bad(format!("`{value}` is not a number")))?,
        ),
        _ => toml::Value::Boolean(
            value
                .parse::<bool>()
                .map_err(|_| bad(format!("`{value}` is not true or false")))?,
        ),
    };
    let out: MachineProfile = doc
        .try_into()
        .map_err(|e: toml::de::Error| bad(format!("`{value}`: {}", e.message().trim())))?;
    out.validate().map_err(|(f, why)| ExpError::Field {
        origin: origin.into(),
        line: 0,
        field: format!("machine.{f}"),
        why,
    })?;
    Ok(out)
}

/// `m` with one catalog item's instructions or misses replaced: `key` is
/// `catalog.NAME.instr` or `catalog.NAME.misses`.
fn set_catalog_cost(origin: &str, m: &MachineProfile, key: &str, value: &str) -> Result<MachineProfile, ExpError> {
    let bad = |why: String| ExpError::Field {
        origin: origin.into(),
        line: 0,
        field: key.into(),
        why,
    };
    let rest = &key["catalog.".len()..];
    let (name, what) = rest.rsplit_once('.').unwrap_or((rest, ""));
    let v = value
        .parse::<f64>()
        .map_err(|_| bad(format!("`{value}` is not a number")))?;
    let mut out = m.clone();
    let o = out.catalog.entry(name.into()).or_default();
    match what {
        "instr" => o.instr = Some(v),
        "misses" => o.misses = Some(v),
        _ => {
            return Err(bad(format!(
                "expected catalog.NAME.instr or catalog.NAME.misses (each item's instructions and cache misses), got `{key}`"
            )))
        }
    }
    // The profile's own check names an unknown item (listing the valid ones) or a bad number.
    out.validate().map_err(|(_, why)| bad(why))?;
    Ok(out)
}

/// One `--vary` value, parsed and checked once for all runs.
enum Setting {
    Seed(u64),
    RtcHz(u32),
    Hz(u32),
    /// In ns.
    TimerPeriod(u64),
    /// `vm.dirty_ratio` (true) or `dirty_background_ratio` of every page-based kernel.
    DirtyRatio(bool, u32),
    Size(&'static str, u64),
    Preload(PreloadRepr),
}

impl Setting {
    fn parse(origin: &str, key: &str, value: &str) -> Result<Setting, ExpError> {
        let bad = |why: String| ExpError::Field {
            origin: origin.into(),
            line: 0,
            field: key.into(),
            why,
        };
        let int = || {
            value.parse::<u64>().map_err(|_| {
                bad(if value.trim_start().starts_with('-') && value.parse::<f64>().is_ok() {
                    format!("`{value}` is negative: must be a whole number >= 0")
                } else {
                    format!("`{value}` is not a whole number")
                })
            })
        };
        let flag = || {
            value
                .parse::<bool>()
                .map_err(|_| bad(format!("`{value}` is not true or false")))
        };
        if let Some(size) = sizes::SIZES.iter().find(|s| s.key == key) {
            return Ok(Setting::Size(size.key, int()?));
        }
        let mut p = PreloadRepr::default();
        match key {
            "seed" => return Ok(Setting::Seed(int()?)),
            "rtc_hz" => {
                let hz = int()?;
                if !periodic_rate_ok(hz) {
                    return Err(bad(format!("must be a power of two in 2..=8192, got {hz}")));
                }
                return Ok(Setting::RtcHz(hz as u32));
            }
            "hz" => {
                let hz = int()?;
                return Ok(Setting::Hz(u32::try_from(hz).unwrap_or(u32::MAX)));
            }
            "timer_period_us" => {
                let us = int()?;
                check_timer_period(us).map_err(bad)?;
                return Ok(Setting::TimerPeriod(us * 1_000));
            }
            "dirty_ratio" | "dirty_background_ratio" => {
                let pct = int()?;
                if pct > 100 {
                    return Err(bad(format!("a percentage of memory: must be 0..=100, got {pct}")));
                }
                return Ok(Setting::DirtyRatio(key == "dirty_ratio", pct as u32));
            }
            "preload.unused_dentries" => p.unused_dentries = Some(int()?),
            "preload.idle_anon_mib" => p.idle_anon_mib = Some(int()?),
            "preload.swapped_mib" => p.swapped_mib = Some(int()?),
            "preload.old_file_kb" => p.old_file_kb = Some(int()?),
            "preload.cache_full" => p.cache_full = Some(flag()?),
            "preload.reclaimed_before" => p.reclaimed_before = Some(flag()?),
            "preload.referenced" => p.referenced = Some(flag()?),
            "preload.updatedb_after" => p.updatedb_after = Some(flag()?),
            _ => {
                return Err(ExpError::Unknown {
                    origin: origin.into(),
                    line: 0,
                    what: "setting to vary",
                    name: key.into(),
                    valid: format!(
                        "{}, {}, machine.FIELD (a machine profile field: machine.cpu_mhz, machine.disk.seq_mb_s, ...), catalog.NAME.instr, catalog.NAME.misses (a code-path catalog item: catalog.unfile.misses, ...)",
                        VARY_KEYS.join(", "),
                        sizes::SIZES.iter().map(|s| s.key).collect::<Vec<_>>().join(", ")
                    ),
                })
            }
        }
        Ok(Setting::Preload(p))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use latlab_sim::CommandSpec;

    pub(crate) const GOOD: &str = r#"
name = "t"
title = "t"
seed_file = "000_5c157154d48a42ec.txt"
machine = "piii-850"
workload = "seed000-script"
table = "log-histogram"

[[run]]
label = "Stock"
variant = "2.4.18"
published_max_ms = 84.0
"#;

    #[test]
    fn a_run_may_name_its_own_machine_and_vary_changes_each_runs() {
        let two = format!("{GOOD}\n[[run]]\nlabel = \"UP 2010\"\nvariant = \"2.6.35\"\nmachine = \"pentium-m-2000\"\n");
        let e = crate::load("x.toml", &two).unwrap();
        let names: Vec<&str> = e.runs.iter().map(|r| r.config.machine.name.as_str()).collect();
        assert_eq!(names, ["piii-850", "pentium-m-2000"]);
        let v = vary(&e, "--vary", "machine.cpu_mhz", "1000").unwrap();
        let names: Vec<&str> = v.runs.iter().map(|r| r.config.machine.name.as_str()).collect();
        assert_eq!(names, ["piii-850", "pentium-m-2000"], "each run keeps its own machine");
        assert!(v.runs.iter().all(|r| r.config.machine.cpu_mhz == 1000.0));
        let bad = two.replace("machine = \"pentium-m-2000\"", "machine = \"pentium-n\"");
        let err = crate::load("x.toml", &bad).unwrap_err().to_string();
        assert!(err.contains("pentium-n") && err.contains("pentium-m-2000"), "{err}");
    }

    #[test]
    fn builtins_parse() {
        for (n, _) in builtin::EXPERIMENTS {
            crate::builtin_experiment(n).unwrap();
        }
        for (n, _) in builtin::MACHINES {
            machine("t", n, 0, &no_files).unwrap();
        }
        for (n, _) in builtin::VARIANTS {
            variant("t", n, 0, &no_files).unwrap();
        }
        for (n, _) in builtin::WORKLOADS {
            crate::workload::workload("t", n, 0, &no_files).unwrap();
        }
    }

    #[test]
    fn good_file_parses() {
        let e = parse("x.toml", GOOD, &no_files).unwrap();
        assert_eq!(e.runs.len(), 1);
        assert_eq!(e.runs[0].published.max_ms, Some(84.0));
    }

    #[test]
    fn unknown_field_names_file_line_and_field() {
        let bad = GOOD.replace("table = \"log-histogram\"", "table = \"log-histogram\"\nbogus = 3");
        let e = parse("x.toml", &bad, &no_files).unwrap_err().to_string();
        assert!(e.starts_with("x.toml:8:"), "{e}");
        assert!(e.contains("bogus"), "{e}");
    }

    #[test]
    fn unknown_variant_lists_valid_ones() {
        let bad = GOOD.replace("variant = \"2.4.18\"", "variant = \"2.4.99\"");
        let e = parse("x.toml", &bad, &no_files).unwrap_err().to_string();
        assert!(e.contains("x.toml:11:"), "{e}");
        assert!(
            e.contains("unknown kernel variant `2.4.99`") && e.contains("2.4.18+mini-ll"),
            "{e}"
        );
    }

    #[test]
    fn unknown_workload_lists_valid_ones() {
        let bad = GOOD.replace("seed000-script", "nope");
        let e = parse("x.toml", &bad, &no_files).unwrap_err().to_string();
        assert!(e.contains("x.toml:6:") && e.contains("seed000-script"), "{e}");
    }

    #[test]
    fn wrong_type_and_bad_values_are_errors() {
        let bad = GOOD.replace("published_max_ms = 84.0", "published_max_ms = \"fast\"");
        assert!(parse("x.toml", &bad, &no_files)
            .unwrap_err()
            .to_string()
            .contains("x.toml:12:"));
        let bad = GOOD.replace("table = \"log-histogram\"", "table = \"log-histogram\"\nrtc_hz = 1000");
        let e = parse("x.toml", &bad, &no_files).unwrap_err().to_string();
        assert!(e.contains("rtc_hz") && e.contains("power of two"), "{e}");
        assert!(parse("x.toml", "", &no_files).is_err());
        assert!(parse("x.toml", "[[[", &no_files).is_err());
        assert!(parse("x.toml", &GOOD.replace("[[run]]", "[[runs]]"), &no_files).is_err());
    }

    /// Files as a user's directory holds them: `./NAME` read from the map, named `dir/NAME`.
    pub(crate) fn user_files<'a>(
        map: &'a [(&'a str, String)],
    ) -> impl Fn(&str) -> std::io::Result<(String, String)> + 'a {
        move |p: &str| {
            let name = p.trim_start_matches("./");
            map.iter()
                .find(|(n, _)| *n == name)
                .map(|(n, t)| (format!("dir/{n}"), t.clone()))
                .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::NotFound, format!("dir/{name}: not found")))
        }
    }

    pub(crate) fn builtin_text(list: &[(&str, &'static str)], name: &str) -> String {
        list.iter().find(|(n, _)| *n == name).unwrap().1.to_string()
    }

    #[test]
    fn a_variant_or_machine_named_by_path_is_read_through_files_and_checked_as_a_builtin() {
        let kernel = builtin_text(builtin::VARIANTS, "2.4.18").replace("name = \"2.4.18\"", "name = \"mine\"");
        let mut box_ = builtin_text(builtin::MACHINES, "piii-850").replace("cpu_mhz = 850.0", "cpu_mhz = 500.0");
        box_ += "\n[catalog.unfile]\nmisses = 3\n";
        let text = GOOD
            .replace("machine = \"piii-850\"", "machine = \"./box.toml\"")
            .replace("variant = \"2.4.18\"", "variant = \"./kernel.toml\"");
        let map = [("kernel.toml", kernel.clone()), ("box.toml", box_.clone())];
        let files = user_files(&map);
        let e = parse("x.toml", &text, &files).unwrap();
        let c = &e.runs[0].config;
        assert_eq!((c.variant.name.as_str(), c.machine.cpu_mhz), ("mine", 500.0));
        assert_eq!(c.variant.points, variant("t", "2.4.18", 0, &no_files).unwrap().points);
        assert_eq!(c.machine.catalog["unfile"].misses, Some(3.0));

        // A typo'd field: the user's file, its line, the field.
        let typo = kernel.replace("preempt = ", "premept = ");
        let line = typo.lines().position(|l| l.starts_with("premept")).unwrap() + 1;
        let map = [("kernel.toml", typo), ("box.toml", box_.clone())];
        let err = parse("x.toml", &text, &user_files(&map)).unwrap_err().to_string();
        assert!(
            err.starts_with(&format!("dir/kernel.toml:{line}:")) && err.contains("premept"),
            "{err}"
        );
        // A bad value: the same, with the valid range.
        let bad = kernel.replace("scan-2.4", "scan-9");
        let line = bad.lines().position(|l| l.starts_with("swap_allocator")).unwrap() + 1;
        let map = [("kernel.toml", bad), ("box.toml", box_.clone())];
        let err = parse("x.toml", &text, &user_files(&map)).unwrap_err().to_string();
        assert!(
            err.starts_with(&format!("dir/kernel.toml:{line}: field `swap_allocator`")) && err.contains("cluster-6.x"),
            "{err}"
        );
        let bad = kernel.replace("hz = 100", "hz = 5");
        let line = bad.lines().position(|l| l.starts_with("hz")).unwrap() + 1;
        let map = [("kernel.toml", bad), ("box.toml", box_.clone())];
        let err = parse("x.toml", &text, &user_files(&map)).unwrap_err().to_string();
        assert_eq!(
            err,
            format!("dir/kernel.toml:{line}: field `hz`: must be 10..=10000, got 5")
        );
        // A machine's nested field: the line in its table.
        let bad = box_.replace("seq_mb_s = 28.0", "seq_mb_s = -1.0");
        let line = bad.lines().position(|l| l.starts_with("seq_mb_s")).unwrap() + 1;
        let map = [("kernel.toml", kernel.clone()), ("box.toml", bad)];
        let err = parse("x.toml", &text, &user_files(&map)).unwrap_err().to_string();
        assert!(
            err.starts_with(&format!("dir/box.toml:{line}: field `disk.seq_mb_s`")),
            "{err}"
        );
        let bad = box_.replace("[catalog.unfile]", "[catalog.unfle]");
        let line = bad.lines().position(|l| l.starts_with("[catalog")).unwrap() + 1;
        let map = [("kernel.toml", kernel.clone()), ("box.toml", bad)];
        let err = parse("x.toml", &text, &user_files(&map)).unwrap_err().to_string();
        assert!(
            err.starts_with(&format!("dir/box.toml:{line}: field `catalog`")) && err.contains("`unfle`"),
            "{err}"
        );

        // A missing file: the experiment file, its line, the field and the path.
        let map = [("box.toml", box_)];
        let err = parse("x.toml", &text, &user_files(&map)).unwrap_err().to_string();
        assert!(
            err.starts_with("x.toml:11: field `variant`: cannot read kernel variant file `./kernel.toml`")
                && err.contains("dir/kernel.toml: not found"),
            "{err}"
        );
        // Built-in experiments (and `load`) read no files.
        let err = crate::load("x.toml", &text).unwrap_err().to_string();
        assert!(
            err.starts_with("x.toml:5: field `machine`: cannot read machine file `./box.toml`"),
            "{err}"
        );
        assert!(err.contains("latlab run FILE"), "{err}");
        // A name that is no path is a built-in name, as before.
        let err = parse("x.toml", &GOOD.replace("2.4.18\"", "my-kernel\""), &files)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("unknown kernel variant `my-kernel`") && err.contains("ending in `.toml`"),
            "{err}"
        );
        assert!(is_path("k.toml") && is_path("a/b") && !is_path("2.4.18+mini-ll"));
    }

    #[test]
    fn a_variant_files_unknown_subsystem_point_or_impossible_kernel_names_line_field_and_valid_values() {
        let kernel = builtin_text(builtin::VARIANTS, "2.4.18");
        let text = GOOD.replace("variant = \"2.4.18\"", "variant = \"./kernel.toml\"");
        let err_for = |from: &str, to: &str| {
            let bad = kernel.replacen(from, to, 1);
            assert_ne!(bad, kernel, "{from}");
            let map = [("kernel.toml", bad.clone())];
            let key = to.split([' ', '=']).next().unwrap().to_string();
            let line = bad.lines().position(|l| l.starts_with(&key)).unwrap() + 1;
            let err = parse("x.toml", &text, &user_files(&map)).unwrap_err().to_string();
            (err, line)
        };
        for (from, to, field, want) in [
            ("sched = \"goodness24\"", "sched = \"bfs\"", "sched", ["`bfs`", "eevdf"]),
            ("preempt = \"none\"", "preempt = \"rt\"", "preempt", ["`rt`", "lazy"]),
            ("timer = \"jiffies\"", "timer = \"tsc\"", "timer", ["`tsc`", "hrtimer"]),
            (
                "writeback = \"bdflush-2.4\"",
                "writeback = \"pdflush\"",
                "writeback",
                ["`pdflush`", "bdflush-2.4"],
            ),
            (
                "points = [",
                "points = [\"bred\", ",
                "points",
                ["unknown rescheduling point `bred`", "dentry_iput"],
            ),
            (
                "points = [",
                "points = [\"ret_from_exception\", ",
                "points",
                ["every kernel has", "ret_from_exception"],
            ),
            (
                "preempt = \"none\"",
                "preempt = \"lazy\"",
                "preempt",
                ["6.13", "none, voluntary, full"],
            ),
            (
                "timer = \"jiffies\"",
                "timer = \"hrtimer\"",
                "timer",
                ["2.6.16", "jiffies"],
            ),
            (
                "writeback = \"bdflush-2.4\"",
                "block = \"blk-sq\"\nwriteback = \"bdflush-2.4\"",
                "block",
                ["`blk-sq`", "blk-mq"],
            ),
            (
                "writeback = \"bdflush-2.4\"",
                "block = \"blk-mq\"\nwriteback = \"bdflush-2.4\"",
                "block",
                ["bdflush", "ide-2.4"],
            ),
            (
                "writeback = \"bdflush-2.4\"",
                "elevator = \"mq-deadline\"\nwriteback = \"bdflush-2.4\"",
                "elevator",
                ["FIFO", "mq-deadline"],
            ),
        ] {
            let (err, line) = err_for(from, to);
            assert!(
                err.starts_with(&format!("dir/kernel.toml:{line}: field `{field}`: "))
                    && want.iter().all(|w| err.contains(w)),
                "{to}: {err}"
            );
        }
    }

    #[test]
    fn preload_table_overrides_the_workload_for_every_run() {
        let text = GOOD.replace(
            "[[run]]",
            "[preload]\nunused_dentries = 1234\nreferenced = false\n\n[[run]]",
        ) + "\n[[run]]\nlabel = \"LL\"\nvariant = \"2.4.18+low-latency\"\n";
        let e = parse("x.toml", &text, &no_files).unwrap();
        let stock = crate::workload::workload("t", "seed000-script", 0, &no_files)
            .unwrap()
            .preload;
        for r in &e.runs {
            let p = &r.config.workload.preload;
            assert_eq!(p.unused_dentries, 1234);
            assert!(!p.referenced);
            // Fields not given keep the workload's values.
            assert_eq!(p.idle_anon_mib, stock.idle_anon_mib);
            assert_eq!(p.cache_full, stock.cache_full);
        }
        // With a base, the fields given over that named state instead of the workload's.
        let text = GOOD.replace(
            "[[run]]",
            "[preload]\nbase = \"fresh-boot\"\nidle_anon_mib = 9\n\n[[run]]",
        );
        let e = parse("x.toml", &text, &no_files).unwrap();
        assert_eq!(
            e.runs[0].config.workload.preload,
            latlab_sim::Preload {
                idle_anon_mib: 9,
                ..PreloadBase::FreshBoot.preload()
            }
        );
    }

    #[test]
    fn preload_errors_name_file_line_and_field() {
        let with = |body: &str| GOOD.replace("[[run]]", &format!("[preload]\n{body}\n\n[[run]]"));
        let e = parse("x.toml", &with("dentries = 5"), &no_files)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("x.toml:10:") && e.contains("dentries"), "{e}");
        let e = parse("x.toml", &with("unused_dentries = 99999999999"), &no_files)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("x.toml:10:") && e.contains("`unused_dentries`") && e.contains("768 MiB"),
            "{e}"
        );
        let e = parse(
            "x.toml",
            &with("updatedb_after = true\nreclaimed_before = false"),
            &no_files,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("`updatedb_after`") && e.contains("reclaimed_before"), "{e}");
        let e = parse("x.toml", &with("old_file_kb = 0"), &no_files)
            .unwrap_err()
            .to_string();
        assert!(e.contains("`old_file_kb`") && e.contains("4 KiB"), "{e}");
        let e = parse("x.toml", &with("swapped_mib = 1000"), &no_files)
            .unwrap_err()
            .to_string();
        assert!(e.contains("`swapped_mib`") && e.contains("1536 MiB of swap"), "{e}");
        let e = parse("x.toml", &with("idle_anon_mib = -3"), &no_files)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("x.toml:10:"), "{e}");
    }

    #[test]
    fn vary_sets_one_value_for_every_run() {
        let text = GOOD.to_string() + "samples = 2048\n\n[[run]]\nlabel = \"LL\"\nvariant = \"2.4.18+low-latency\"\n";
        let e = parse("x.toml", &text, &no_files).unwrap();
        let v = vary(&e, "cli", "preload.unused_dentries", "777").unwrap();
        assert!(v.runs.iter().all(|r| r.config.workload.preload.unused_dentries == 777));
        assert_eq!(v.runs[0].config.variant, e.runs[0].config.variant);
        let s = vary(&e, "cli", "seed", "9").unwrap();
        assert!(s.runs.iter().all(|r| r.config.seed == 9));
        // The run's window is its sample count at the file's rate: 2048 samples at 2048 Hz,
        // 1 s, at 1024 Hz or 2 Hz too.
        for rate in [1024, 2] {
            let hz = vary(&e, "cli", "rtc_hz", &rate.to_string()).unwrap();
            assert_eq!(hz.runs[0].config.rtc_hz, rate);
            assert_eq!(hz.runs[0].config.min_duration_ns, 1_000_000_000);
            assert_eq!(hz.runs[0].config.max_duration_ns, e.runs[0].config.max_duration_ns);
        }
        for (k, val, want) in [
            ("rtc_hz", "1000", "power of two"),
            ("seed", "-1", "whole number"),
            ("preload.referenced", "yes", "true or false"),
            ("preload.unused_dentries", "99999999999", "768 MiB"),
        ] {
            let err = vary(&e, "cli", k, val).unwrap_err().to_string();
            assert!(err.starts_with("cli: field") && err.contains(want), "{err}");
        }
        // Every key the error lists is one vary accepts (the workload sizes with a workload
        // that has them, `timer_period_us` with a POSIX-timer run:
        // workload_sizes_hz_and_the_timer_period_vary_by_name; the dirty ratios with a
        // page-based kernel: tests/pdflush_balance.rs).
        let elsewhere = ["timer_period_us", "dirty_ratio", "dirty_background_ratio"];
        for k in VARY_KEYS.iter().filter(|k| !elsewhere.contains(k)) {
            assert!(
                ["4", "true", "100"].iter().any(|v| vary(&e, "cli", k, v).is_ok()),
                "{k}"
            );
        }
        let err = vary(&e, "cli", "hertz", "100").unwrap_err().to_string();
        assert!(
            err.contains("unknown setting to vary `hertz`")
                && err.contains("preload.unused_dentries")
                && err.contains("video.decode_us"),
            "{err}"
        );
    }

    #[test]
    fn run_lengths_beyond_the_bound_need_max_seconds() {
        let with = |fields: &str| {
            GOOD.replace("table = \"log-histogram\"", "table = \"log-histogram\"\nrtc_hz = 2")
                .replace("published_max_ms = 84.0", fields)
        };
        // 2e10 samples at 2 Hz: 1e10 s, once an overflow; now refused by name with the bound.
        let e = parse("x.toml", &with("samples = 2e10"), &no_files)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("x.toml:13: field `samples`") && e.contains("7200 s") && e.contains("max_seconds"),
            "{e}"
        );
        let e = parse("x.toml", &with("duration_s = 1e5"), &no_files)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("x.toml:13: field `duration_s`") && e.contains("7200 s"),
            "{e}"
        );
        // At the bound it runs; max_seconds lets a longer window through, cut at it.
        let ok = parse("x.toml", &with("samples = 14400"), &no_files).unwrap();
        assert_eq!(ok.runs[0].config.min_duration_ns, MAX_RUN_SECONDS * 1_000_000_000);
        let ok = parse("x.toml", &with("duration_s = 30"), &no_files).unwrap();
        assert_eq!(ok.runs[0].config.min_duration_ns, 30_000_000_000);
        let cut = parse("x.toml", &with("samples = 2e10\nmax_seconds = 10"), &no_files).unwrap();
        let c = &cut.runs[0].config;
        assert_eq!((c.min_duration_ns, c.max_duration_ns), (10_000_000_000, 10_000_000_000));
        let huge = parse(
            "x.toml",
            &with("samples = 9e11\nmax_seconds = 18446744073709551615"),
            &no_files,
        );
        assert!(huge.is_err(), "max_seconds above i64 is not TOML");
        // Both forms of the window, or a negative one, are refused by name.
        let e = parse("x.toml", &with("samples = 4\nduration_s = 2"), &no_files)
            .unwrap_err()
            .to_string();
        assert!(e.contains("field `duration_s`") && e.contains("not both"), "{e}");
        let e = parse("x.toml", &with("duration_s = -1"), &no_files)
            .unwrap_err()
            .to_string();
        assert!(e.contains("field `duration_s`") && e.contains(">= 0"), "{e}");
        for (fields, field, want) in [
            ("duration_s = inf", "duration_s", "finite"),
            ("duration_s = nan", "duration_s", "got NaN"),
            ("samples = 1e300", "samples", "0 to 10^12, got 1e300"),
            ("samples = -5", "samples", "got -5.0"),
        ] {
            let e = parse("x.toml", &with(fields), &no_files).unwrap_err().to_string();
            assert!(
                e.contains(&format!("field `{field}`")) && e.contains(want),
                "{fields}: {e}"
            );
        }
    }

    /// Published figures are comparison data: a run's length, and so its result, does not
    /// move when one of them is edited.
    #[test]
    fn a_published_figure_never_sets_a_run() {
        let base = GOOD.replace("published_max_ms = 84.0", "samples = 4096");
        let a = parse("x.toml", &base, &no_files).unwrap();
        let b = parse("x.toml", &format!("{base}published_samples = 9e9\n"), &no_files).unwrap();
        let (ca, cb) = (&a.runs[0].config, &b.runs[0].config);
        assert_eq!(
            (ca.min_duration_ns, ca.max_duration_ns),
            (cb.min_duration_ns, cb.max_duration_ns)
        );
        assert_eq!(ca.min_duration_ns, 2_000_000_000);
    }

    #[test]
    fn a_control_character_in_a_comment_is_named() {
        let text = GOOD.replace("title = \"t\"", "title = \"t\"\n# a\u{1}b");
        let e = parse("x.toml", &text, &no_files).unwrap_err().to_string();
        assert_eq!(
            e,
            "x.toml:4:4: control character U+0001 is not allowed here (TOML allows only tab among them, in comments too)"
        );
    }

    #[test]
    fn seed_file_is_needed_only_with_published_figures() {
        let what_if = GOOD
            .replace("seed_file = \"000_5c157154d48a42ec.txt\"\n", "")
            .replace("published_max_ms = 84.0\n", "max_seconds = 5\n");
        let e = parse("x.toml", &what_if, &no_files).unwrap();
        assert_eq!(e.seed_file, NO_SEED_FILE);
        let published = GOOD.replace("seed_file = \"000_5c157154d48a42ec.txt\"\n", "");
        let err = parse("x.toml", &published, &no_files).unwrap_err().to_string();
        assert!(
            err.contains("field `seed_file`") && err.contains("run `Stock` gives published figures"),
            "{err}"
        );
    }

    #[test]
    fn max_seconds_is_bounded_by_name() {
        let with = |max: u64| GOOD.replace("published_max_ms = 84.0", &format!("max_seconds = {max}"));
        let ok = parse("x.toml", &with(MAX_RUN_SECONDS), &no_files).unwrap();
        assert_eq!(ok.runs[0].config.max_duration_ns, MAX_RUN_SECONDS * 1_000_000_000);
        for max in [MAX_RUN_SECONDS + 1, 1 << 40] {
            let e = parse("x.toml", &with(max), &no_files).unwrap_err().to_string();
            assert!(
                e.starts_with("x.toml:")
                    && e.contains("field `max_seconds`")
                    && e.contains("at most 7200")
                    && e.contains(&max.to_string()),
                "{e}"
            );
        }
    }

    #[test]
    fn published_figures_are_checked_like_published_max_range_ms() {
        for (fields, field, want) in [
            ("published_max_ms = nan", "published_max_ms", "> 0 ms, got NaN"),
            ("published_max_ms = 0.0", "published_max_ms", "> 0 ms, got 0"),
            ("published_max_ms = -3.0", "published_max_ms", "got -3"),
            ("published_max_ms = inf", "published_max_ms", "got inf"),
            ("published_avg_ms = -1.0", "published_avg_ms", ">= 0 ms"),
            (
                "published_buckets = [1.0, nan]",
                "published_buckets",
                "count >= 0, got NaN",
            ),
            (
                "published_listing = [[0.0, 5.0], [inf, 1.0]]",
                "published_listing",
                "got [inf, 1]",
            ),
            ("published_listing = [[1e300, 1.0]]", "published_listing", "an hour"),
            ("published_listing = [[0.5, -1.0]]", "published_listing", "count >= 0"),
        ] {
            let text = GOOD.replace("published_max_ms = 84.0", fields);
            let e = parse("x.toml", &text, &no_files).unwrap_err().to_string();
            assert!(
                e.starts_with(&format!("x.toml:12: field `{field}`")) && e.contains(want),
                "{fields}: {e}"
            );
        }
        let text = GOOD.replace(
            "published_max_ms = 84.0",
            "published_listing = [[0.0, 5.0], [3600000.0, 1.0]]",
        );
        assert!(parse("x.toml", &text, &no_files).is_ok());
    }

    #[test]
    fn the_builtin_kernels_name_their_generations_journal() {
        for (name, _) in builtin::VARIANTS {
            let v = variant("t", name, 1, &no_files).unwrap();
            let want = if v.base.starts_with("2.4") {
                latlab_sim::variant::Journal::Jbd24
            } else if v.base.starts_with("6.") {
                latlab_sim::variant::Journal::Jbd2
            } else {
                latlab_sim::variant::Journal::Jbd26
            };
            assert_eq!(v.journal, want, "{name}");
        }
        let text = "name = \"x\"\ndescription = \"\"\nbase = \"2.6.9\"\npreempt = \"none\"\npoints = []\nhz = 1000\nsched = \"o1\"\ntimer = \"jiffies\"\nwriteback = \"bdflush-2.4\"\nswap_allocator = \"scan-2.4\"\njournal = \"jbd-3\"\n";
        let e = toml::from_str::<Variant>(text).unwrap_err().to_string();
        assert!(e.contains("journal") && e.contains("jbd-2.6"), "{e}");
    }

    #[test]
    fn a_label_used_twice_is_refused_with_its_line() {
        let text = GOOD.to_string() + "\n[[run]]\nlabel = \"Stock\"\nvariant = \"2.4.18+low-latency\"\n";
        let e = parse("x.toml", &text, &no_files).unwrap_err().to_string();
        let line = text
            .lines()
            .collect::<Vec<_>>()
            .iter()
            .rposition(|l| l.starts_with("label"))
            .unwrap()
            + 1;
        assert!(
            e.starts_with(&format!("x.toml:{line}: field `label`")) && e.contains("`Stock` names another run"),
            "{e}"
        );
    }

    #[test]
    fn maxcpus_boots_the_kernel_on_some_of_the_machines_cpus() {
        // piii-850 has one CPU: maxcpus 1 is all of it, 0 and 2 are refused by name.
        let ok = GOOD.replace("published_max_ms = 84.0", "maxcpus = 1");
        assert_eq!(parse("x.toml", &ok, &no_files).unwrap().runs[0].config.cpus(), 1);
        for n in ["0", "2"] {
            let text = GOOD.replace("published_max_ms = 84.0", &format!("maxcpus = {n}"));
            let e = parse("x.toml", &text, &no_files).unwrap_err().to_string();
            assert!(
                e.starts_with("x.toml:12: field `maxcpus`") && e.contains("must be 1..=1") && e.contains("piii-850"),
                "{n}: {e}"
            );
        }
        // The two logical CPUs of seed 001's P4 HT: all by default.
        let exp = crate::builtin_experiment("pdflush-balance").unwrap();
        assert!(exp.runs.iter().all(|r| r.config.cpus() == 2));
    }

    /// GOOD with a second run, on another kernel.
    fn two_runs() -> Experiment {
        let text = GOOD.to_string() + "\n[[run]]\nlabel = \"LL\"\nvariant = \"2.4.18+low-latency\"\n";
        parse("x.toml", &text, &no_files).unwrap()
    }

    #[test]
    fn vary_sets_any_machine_field_for_every_run() {
        let e = two_runs();
        let stock = e.runs[0].config.machine.clone();
        let v = vary(&e, "cli", "machine.cpu_mhz", "500").unwrap();
        let v = vary(&v, "cli", "machine.disk.seq_mb_s", "20").unwrap();
        let v = vary(&v, "cli", "machine.ram_mib", "1024").unwrap();
        for r in &v.runs {
            let m = &r.config.machine;
            assert_eq!((m.cpu_mhz, m.disk.seq_mb_s, m.ram_mib), (500.0, 20.0, 1024));
            assert_eq!(
                (m.kernel_cpi, m.disk.nr_requests),
                (stock.kernel_cpi, stock.disk.nr_requests)
            );
        }
        assert_ne!(v.runs[0].config.variant, v.runs[1].config.variant);
        // Every field, nested ones included, is found, and set to its own value is a no-op:
        // the generic path reads back exactly what it wrote.
        let fields = machine_fields(&stock);
        for f in [
            "cpu_mhz",
            "kernel_cpi",
            "mem_latency_ns",
            "ram_mib",
            "disk.seq_mb_s",
            "disk.full_stroke_ns",
        ] {
            assert!(fields.iter().any(|x| x == f), "{f}: {fields:?}");
        }
        assert!(
            !fields
                .iter()
                .any(|x| x == "name" || x == "disk" || x.starts_with("catalog")),
            "{fields:?}"
        );
        let doc = toml::Value::try_from(&stock).unwrap();
        for f in &fields {
            let mut at = &doc;
            for part in f.split('.') {
                at = &at[part];
            }
            let same = at.to_string();
            let v = vary(&e, "cli", &format!("machine.{f}"), &same).unwrap_or_else(|err| panic!("{f}={same}: {err}"));
            assert_eq!(v.runs[0].config.machine, stock, "{f}");
        }
    }

    #[test]
    fn vary_refuses_bad_machine_keys_and_values_by_name() {
        let e = two_runs();
        let err = |k: &str, val: &str| vary(&e, "cli", k, val).unwrap_err().to_string();
        let e1 = err("machine.cpu", "500");
        assert!(
            e1.contains("unknown machine field `cpu`") && e1.contains("cpu_mhz") && e1.contains("disk.seq_mb_s"),
            "{e1}"
        );
        for (k, val, want) in [
            ("machine.cpu_mhz", "fast", "`fast` is not a number"),
            ("machine.ram_mib", "1.5", "not a whole number"),
            ("machine.ram_mib", "-3", "u64"),
            ("machine.cpu_mhz", "0", "1..=1000000"),
            ("machine.disk.seq_mb_s", "nan", "0.01..="),
            ("machine.disk.track_to_track_ns", "99000000", "disk.full_stroke_ns"),
            ("machine.ram_mib", "64", "no longer fits"),
        ] {
            let got = err(k, val);
            assert!(
                got.starts_with(&format!("cli: field `{k}`")) && got.contains(want),
                "{k}={val}: {got}"
            );
        }
        let got = err("cpu_mhz", "500");
        assert!(
            got.contains("unknown setting to vary") && got.contains("machine.FIELD"),
            "{got}"
        );
    }

    #[test]
    fn vary_sets_a_catalog_items_cost_for_every_run() {
        let e = two_runs();
        let v = vary(&e, "cli", "catalog.unfile.misses", "3").unwrap();
        let v = vary(&v, "cli", "catalog.unfile.instr", "300").unwrap();
        let v = vary(&v, "cli", "catalog.sync_one.misses", "2.5").unwrap();
        for r in &v.runs {
            let m = &r.config.machine;
            let c = latlab_sim::kernel::catalog::Costs::new(m);
            assert_eq!(c.unfile, m.cost(300.0, 3.0));
            assert_eq!(c.sync_one, m.cost(250.0, 2.5));
            assert_eq!(c.refile, m.cost(50.0, 3.0));
        }
        let stock = latlab_sim::kernel::catalog::Costs::new(&e.runs[0].config.machine);
        assert_ne!(
            stock.unfile,
            latlab_sim::kernel::catalog::Costs::new(&v.runs[0].config.machine).unfile
        );
        let err = |k: &str, val: &str| vary(&e, "cli", k, val).unwrap_err().to_string();
        for (k, val, want) in [
            ("catalog.unfle.misses", "3", "unknown catalog item `unfle`"),
            ("catalog.page_copy.misses", "3", "copy_mb_s"),
            (
                "catalog.unfile.cycles",
                "3",
                "catalog.NAME.instr or catalog.NAME.misses",
            ),
            ("catalog.unfile", "3", "catalog.NAME.instr or catalog.NAME.misses"),
            ("catalog.unfile.misses", "many", "`many` is not a number"),
            ("catalog.unfile.misses", "-1", "0..=1000000"),
            ("catalog.unfile.instr", "inf", "0..=1000000000"),
        ] {
            let got = err(k, val);
            assert!(
                got.starts_with(&format!("cli: field `{k}`")) && got.contains(want),
                "{k}={val}: {got}"
            );
        }
        assert!(err("catalog.unfle.misses", "3").contains("sync_one, "));
    }

    #[test]
    fn workload_sizes_hz_and_the_timer_period_vary_by_name() {
        let exp = crate::builtin_experiment("cfs-granularity").unwrap();
        let video = |e: &Experiment| -> Vec<(u32, u64, u64)> {
            let mut out = Vec::new();
            for r in &e.runs {
                if let CommandSpec::Parallel(v) = &r.config.workload.commands[0] {
                    for c in v {
                        if let CommandSpec::Video { fps, decode_us, x_us } = c {
                            out.push((*fps, *decode_us, *x_us));
                        }
                    }
                }
            }
            out
        };
        let v = vary(&exp, "cli", "video.decode_us", "9000").unwrap();
        assert_eq!(video(&v), vec![(30, 9_000, 5_000); exp.runs.len()]);
        let v = vary(&exp, "cli", "hz", "1000").unwrap();
        assert!(v.runs.iter().all(|r| r.config.variant.hz == 1000));
        assert_ne!(exp.runs[0].config.variant.hz, 1000);
        let v = vary(&exp, "cli", "timer_period_us", "5000").unwrap();
        assert!(v
            .runs
            .iter()
            .all(|r| r.config.posix_timer.as_ref().unwrap().period_ns == 5_000_000));
        for (k, val, want) in [
            ("hz", "5", "10..=10000"),
            ("timer_period_us", "50", "100 ..= 10,000,000"),
            ("make.cc_ms_min", "800", "exceed the longest (750 ms)"),
            ("make.jobs", "0", "1..=256"),
            ("video.fps", "x", "whole number"),
        ] {
            let err = vary(&exp, "cli", k, val).unwrap_err().to_string();
            assert!(
                err.starts_with(&format!("cli: field `{k}`")) && err.contains(want),
                "{err}"
            );
        }
        let stock = parse("x.toml", GOOD, &no_files).unwrap();
        let err = vary(&stock, "cli", "timer_period_us", "5000").unwrap_err().to_string();
        assert!(err.contains("no POSIX timer"), "{err}");
        let err = vary(&stock, "cli", "video.fps", "25").unwrap_err().to_string();
        assert!(err.contains("no `video` command"), "{err}");
    }

    #[test]
    fn hogs_set_the_cpu_bound_tasks_and_refuse_bad_input() {
        let hogs = |e: &Experiment| -> Vec<CommandSpec> {
            e.runs.iter().map(|r| r.config.workload.commands[0].clone()).collect()
        };
        let text = GOOD
            .replace("seed000-script", "cpu-hogs")
            .replace("[[run]]", "hogs = 250\n\n[[run]]")
            + "\n[[run]]\nlabel = \"O1\"\nvariant = \"2.4.18+o1\"\n";
        let exp = parse("x.toml", &text, &no_files).unwrap();
        assert_eq!(hogs(&exp), vec![CommandSpec::CpuHogs { tasks: 250 }; 2]);
        let v = vary(&exp, "cli", "hogs", "7").unwrap();
        assert_eq!(hogs(&v), vec![CommandSpec::CpuHogs { tasks: 7 }; 2]);
        // The file's field: line, field and reason.
        let e = parse("x.toml", &text.replace("hogs = 250", "hogs = 0"), &no_files)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("x.toml:9:") && e.contains("`hogs`") && e.contains("1..=4000"),
            "{e}"
        );
        let e = parse("x.toml", &GOOD.replace("[[run]]", "hogs = 5\n\n[[run]]"), &no_files)
            .unwrap_err()
            .to_string();
        assert!(e.contains("`hogs`") && e.contains("no `hogs` command"), "{e}");
        // --vary: the same checks.
        for (val, want) in [
            ("4001", "1..=4000"),
            ("-3", "whole number"),
            ("99999999999", "1..=4000"),
        ] {
            let err = vary(&exp, "cli", "hogs", val).unwrap_err().to_string();
            assert!(err.starts_with("cli: field `hogs`") && err.contains(want), "{err}");
        }
        let err = vary(&parse("x.toml", GOOD, &no_files).unwrap(), "cli", "hogs", "10")
            .unwrap_err()
            .to_string();
        assert!(err.contains("`hogs`") && err.contains("no `hogs` command"), "{err}");
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]
        /// Any [preload] values: the parser either names the field or hands the model a state
        /// it can run without panicking (one simulated second, the heaviest set-up included).
        #[test]
        fn any_preload_is_refused_by_name_or_runs(
            dentries in proptest::prop_oneof![6 => 0u64..400_000, 1 => proptest::prelude::any::<u64>()],
            anon in proptest::prop_oneof![6 => 0u64..300, 1 => proptest::prelude::any::<u64>()],
            swapped in proptest::prop_oneof![6 => 0u64..600, 1 => proptest::prelude::any::<u64>()],
            file_kb in proptest::prop_oneof![6 => 0u64..256, 1 => proptest::prelude::any::<u64>()],
            full in proptest::prelude::any::<bool>(),
        ) {
            let text = GOOD.replace(
                "[[run]]",
                &format!(
                    "[preload]\nunused_dentries = {}\nidle_anon_mib = {}\nswapped_mib = {}\nold_file_kb = {}\ncache_full = {full}\n\n[[run]]",
                    dentries.min(i64::MAX as u64), anon.min(i64::MAX as u64),
                    swapped.min(i64::MAX as u64), file_kb.min(i64::MAX as u64)
                ),
            );
            match parse("x.toml", &text, &no_files) {
                Err(e) => {
                    let e = e.to_string();
                    proptest::prop_assert!(e.starts_with("x.toml:") && e.contains("field `"), "{}", e);
                }
                Ok(exp) => {
                    let mut cfg = exp.runs[0].config.clone();
                    cfg.min_duration_ns = 0;
                    cfg.max_duration_ns = 1_000_000_000;
                    let ran = latlab_sim::simulate(&cfg, &mut |_, _| ()).map(|_| ());
                    proptest::prop_assert!(ran.is_ok(), "{:?}", ran.err());
                }
            }
        }
    }

    proptest::proptest! {
        /// Any value replaced by an extreme or ill-typed one, any line dropped or doubled: the
        /// parser returns, and an error names the file.
        #[test]
        fn mutated_files_fail_cleanly(
            line in 0usize..64,
            value in proptest::sample::select(vec![
                "0", "-1", "1e308", "-1e308", "nan", "inf", "18446744073709551615",
                "99999999999999999999999", "\"\"", "[]", "[1.0]", "[[]]", "{}", "true", "0.0",
            ]),
            op in 0u8..3,
        ) {
            let lines: Vec<&str> = GOOD.lines().collect();
            let i = line % lines.len();
            let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
            match op {
                0 => match lines[i].split_once('=') {
                    Some((k, _)) => out[i] = format!("{k}= {value}"),
                    None => out[i] = format!("{} = {value}", lines[i].trim_matches(|c| c == '[' || c == ']')),
                },
                1 => { out.remove(i); }
                _ => out.insert(i, lines[i].to_string()),
            }
            if let Err(e) = parse("x.toml", &out.join("\n"), &no_files) {
                let e = e.to_string();
                proptest::prop_assert!(e.contains("x.toml"), "{}", e);
            }
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic() {
        // A cheap stand-in for fuzzing: every prefix and many mutations of a good file.
        for i in 0..GOOD.len() {
            let _ = parse("x.toml", &GOOD[..i], &no_files);
        }
        let bytes = GOOD.as_bytes();
        for i in 0..bytes.len() {
            for b in [b'"', b'[', b'=', b'\n', b'9', b'x'] {
                let mut v = bytes.to_vec();
                v[i] = b;
                if let Ok(s) = std::str::from_utf8(&v) {
                    let _ = parse("x.toml", s, &no_files);
                }
            }
        }
    }

    /// Every built-in machine states how far each of its number fields may be off (issue 20):
    /// a field added to the profile, or a machine added, without its line in `[uncertainty]`
    /// fails here, by machine and field.
    #[test]
    fn every_builtin_machine_states_a_spread_for_every_number_field() {
        let mut missing = Vec::new();
        for (name, _) in crate::builtin::MACHINES {
            let m = machine("test", name, 1, &no_files).unwrap();
            for (f, v) in machine_values(&m) {
                if !matches!(v, FieldValue::Flag(_)) && m.uncertainty.get(&f).is_none() {
                    missing.push(format!("machines/{name}.toml: {f}"));
                }
            }
        }
        assert!(
            missing.is_empty(),
            "fields without a line in their machine's [uncertainty] table (docs/fidelity.md \"Uncertainty\"): {missing:?}"
        );
    }

    /// The `[host]` tables `latlab probe calibrate` writes, on a built-in machine's text.
    const HOST: &str = r#"
[host.kernel]
release = "6.18.44"
hz = 250
preemption = "none"

[host.topology]
cpus_online = 2
smt_siblings = [[0], [1]]
numa_nodes = [[0, 1]]

[[host.topology.caches]]
level = 3
kind = "unified"
size_kib = 32768
shared_cpus = [0, 1]

[host.costs]
syscall_ns = { median = 95.0, p5 = 90.0, p95 = 120.0, runs = 15 }
timer_interrupt_ns = { median = 2000.0, p5 = 1500.0, p95 = 4000.0, runs = 60 }

[host.storage]
device = "vda"
rotational = false
write_mb_s = { median = 1400.0, p5 = 700.0, p95 = 1800.0, runs = 5 }
fsync_us = { median = 400.0, p5 = 230.0, p95 = 900.0, runs = 30 }

[host.noise]
source = "user-space gap detector"
duration_s = 5.0
cpus = 2
threshold_us = 1.0
gaps = 30
gaps_per_s = 3.0
max_us = 76.5
lost_percent = 0.02
steal_percent = 0.0
per_cpu_gaps_per_s = [2.0, 4.0]

[host.noise.lengths]
p50_us = 3.0
p90_us = 12.0
p99_us = 40.0
p999_us = 70.0
"#;

    #[test]
    fn a_machines_host_tables_are_kept_and_not_the_models_constants() {
        let text = builtin_text(crate::builtin::MACHINES, "piii-850") + HOST;
        let files = move |_: &str| Ok(("my.toml".to_string(), text.clone()));
        let m = machine("exp.toml", "./my.toml", 3, &files).unwrap();
        let host = m.host.as_ref().unwrap();
        assert_eq!(host.kernel.as_ref().unwrap().hz, 250);
        assert_eq!(host.topology.as_ref().unwrap().caches[0].size_kib, 32768);
        assert_eq!(host.costs.as_ref().unwrap().syscall_ns.unwrap().median, 95.0);
        assert!(host.costs.as_ref().unwrap().fork_exec_ns.is_none());
        assert_eq!(host.noise.as_ref().unwrap().gaps, 30);
        let replay = host.noise.as_ref().unwrap().replay().unwrap();
        assert_eq!(
            (replay.rate(1), replay.rate(5)),
            (4.0, 3.0),
            "a CPU not measured: the mean"
        );
        assert_eq!(replay.quantiles[3], (0.99, 40_000.0));
        // Neither `--vary machine.host...` nor `[uncertainty]` sees them.
        assert!(machine_fields(&m).iter().all(|f| !f.starts_with("host")));
        let stock = machine("t", "piii-850", 0, &no_files).unwrap();
        assert_eq!(machine_fields(&m), machine_fields(&stock));
    }

    #[test]
    fn a_bad_host_table_is_named_by_file_line_and_field() {
        let base = builtin_text(crate::builtin::MACHINES, "piii-850") + HOST;
        let read = |from: &str, to: &str| {
            assert!(base.contains(from), "{from}");
            let text = base.replace(from, to);
            let line = text
                .lines()
                .position(|l| l.contains(to.lines().next().unwrap()))
                .unwrap()
                + 1;
            let files = move |_: &str| Ok(("my.toml".to_string(), text.clone()));
            let e = machine("exp.toml", "./my.toml", 3, &files)
                .map(|_| ())
                .unwrap_err()
                .to_string();
            (e, line)
        };
        for (from, to, field, why) in [
            // A bad type.
            ("hz = 250", "hz = \"fast\"", "host.kernel.hz", "invalid type"),
            ("p5 = 90.0", "p5 = \"x\"", "host.costs.syscall_ns.p5", "invalid type"),
            // Negative or out-of-range values.
            ("hz = 250", "hz = -250", "host.kernel.hz", ""),
            ("hz = 250", "hz = 5", "host.kernel.hz", "must be 10..=10000, got 5"),
            ("median = 95.0", "median = -95.0", "host.costs.syscall_ns", "at least 0"),
            (
                "p95 = 120.0",
                "p95 = 50.0",
                "host.costs.syscall_ns",
                "p5 <= median <= p95",
            ),
            ("runs = 15", "runs = 0", "host.costs.syscall_ns", "at least 1"),
            ("median = 400.0", "median = -4.0", "host.storage.fsync_us", "at least 0"),
            ("max_us = 76.5", "max_us = -1.0", "host.noise.max_us", "at least 0"),
            (
                "lost_percent = 0.02",
                "lost_percent = nan",
                "host.noise.lost_percent",
                "NaN",
            ),
            (
                "duration_s = 5.0",
                "duration_s = 0.0",
                "host.noise.duration_s",
                "more than 0",
            ),
            (
                "per_cpu_gaps_per_s = [2.0, 4.0]",
                "per_cpu_gaps_per_s = [2.0]",
                "host.noise.per_cpu_gaps_per_s",
                "one rate per CPU measured (2), got 1",
            ),
            (
                "per_cpu_gaps_per_s = [2.0, 4.0]",
                "per_cpu_gaps_per_s = [2.0, -4.0]",
                "host.noise.per_cpu_gaps_per_s",
                "at least 0",
            ),
            (
                "per_cpu_gaps_per_s = [2.0, 4.0]",
                "per_cpu_gaps_per_s = [2.0, 1e300]",
                "host.noise.per_cpu_gaps_per_s",
                "gaps of at least 1 us fit at most 1000000 times in a second",
            ),
            (
                "gaps_per_s = 3.0",
                "gaps_per_s = 2e6",
                "host.noise.gaps_per_s",
                "fit at most 1000000 times",
            ),
            (
                "lost_percent = 0.02",
                "lost_percent = 250",
                "host.noise.lost_percent",
                "at most 100",
            ),
            (
                "max_us = 76.5",
                "max_us = 1e30",
                "host.noise.max_us",
                "at most the measurement's 5 s",
            ),
            (
                "p99_us = 40.0",
                "p99_us = 4.0",
                "host.noise.lengths.p99_us",
                "must be at least p90_us (12), got 4",
            ),
            ("p50_us = 3.0", "p50_us = nan", "host.noise.lengths.p50_us", "NaN"),
            (
                "p50_us = 3.0",
                "p50_us = 0.5",
                "host.noise.lengths.p50_us",
                "must be at least threshold_us (1)",
            ),
            (
                "size_kib = 32768",
                "size_kib = 0",
                "host.topology.caches",
                "size_kib must be at least 1",
            ),
            (
                "kind = \"unified\"",
                "kind = \"l3\"",
                "host.topology.caches",
                "data, instruction or unified",
            ),
            (
                "cpus_online = 2",
                "cpus_online = 0",
                "host.topology.cpus_online",
                "1..=65536",
            ),
            (
                "smt_siblings = [[0], [1]]",
                "smt_siblings = [[0], []]",
                "host.topology.smt_siblings",
                "empty",
            ),
        ] {
            let (e, mut line) = read(from, to);
            if field == "host.topology.caches" {
                // The cache's own table.
                line = base.lines().position(|l| l == "[[host.topology.caches]]").unwrap() + 1;
            }
            let at = format!("my.toml:{line}: field `{field}`: ");
            assert!(e.starts_with(&at) && e.contains(why), "{to}: {e} (wanted {at}...{why})");
        }
        // Unknown keys: the file, the line and the key, with the valid ones (as every unknown
        // key of a machine, variant or experiment file is named).
        for (from, to, key, valid) in [
            ("hz = 250", "hz = 250\ntick = 4", "tick", "preemption"),
            ("gaps = 30", "gaps = 30\njitter = 4.0", "jitter", "max_us"),
            (
                "[host.costs]",
                "[host.costs]\nforkk_ns = { median = 1.0, p5 = 1.0, p95 = 1.0, runs = 1 }",
                "forkk_ns",
                "fork_exec_ns",
            ),
            ("[host.noise]", "[host.nosie]", "nosie", "noise"),
        ] {
            let (e, _) = read(from, to);
            let text = base.replace(from, to);
            let line = text
                .lines()
                .position(|l| l.starts_with(&format!("{key} =")) || l.ends_with(&format!(".{key}]")))
                .unwrap()
                + 1;
            assert!(
                e.starts_with(&format!("my.toml:{line}:")) && e.contains(&format!("`{key}`")) && e.contains(valid),
                "{to}: {e}"
            );
        }
    }

    #[test]
    fn a_machines_uncertainty_table_is_checked_by_field() {
        let base = builtin_text(crate::builtin::MACHINES, "piii-850");
        let read = |from: &str, to: &str| {
            assert!(base.contains(from));
            let text = base.replace(from, to);
            let files = move |_: &str| Ok(("my.toml".to_string(), text.clone()));
            machine("exp.toml", "./my.toml", 3, &files)
                .map(|_| ())
                .unwrap_err()
                .to_string()
        };
        let e = read("ram_mib = \"given\"", "colour = \"given\"");
        assert!(
            e.contains("my.toml") && e.contains("`colour` is not a number field") && e.contains("cpu_mhz"),
            "{e}"
        );
        let e = read("disk.seq_mb_s = \"measured\"", "disk.seq_mb_s = [30.0, 40.0]");
        assert!(
            e.contains("disk.seq_mb_s: bounds [30, 40] do not hold the value 28"),
            "{e}"
        );
        let e = read("syscall_ns = \"measured\"", "syscall_ns = \"guess\"");
        assert!(e.contains("unknown spread `guess`"), "{e}");
    }
}
