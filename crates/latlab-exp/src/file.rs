//! The experiment file format (documented in docs/experiments.md) and its validation.

use crate::builtin;
use latlab_sim::{MachineProfile, SimConfig, Variant};
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
    #[error("{origin}:{line}: field `{field}`: {why}")]
    Field {
        origin: String,
        line: usize,
        field: String,
        why: String,
    },
    #[error("{origin}:{line}: unknown {what} `{name}`; valid: {valid}")]
    Unknown {
        origin: String,
        line: usize,
        what: &'static str,
        name: String,
        valid: String,
    },
}

/// Which of the seed's table layouts `reproduce` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TableKind {
    /// Seed 000: counts per logarithmic latency bucket, worst case.
    LogHistogram,
    /// Seed 002: one maximum latency per kernel.
    MaxLatency,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileRepr {
    name: String,
    title: String,
    seed_file: String,
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
    run: Vec<RunRepr>,
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
    /// Samples the seed's run collected: the model runs (idle after the workload) at least
    /// as long as that took at `rtc_hz`.
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
}

/// One run of an experiment, ready for the model.
#[derive(Clone, Debug)]
pub struct Run {
    pub label: String,
    pub config: SimConfig,
    pub published: Published,
}

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

fn syntax(origin: &str, text: &str, e: toml::de::Error) -> ExpError {
    let (line, col) = e.span().map_or((0, 0), |s| line_of(text, s.start));
    ExpError::Syntax {
        origin: origin.into(),
        line,
        col,
        msg: e.message().replace('\n', " "),
    }
}

/// Parse a built-in machine profile.
pub fn machine(origin: &str, name: &str, line: usize) -> Result<MachineProfile, ExpError> {
    let Some((n, text)) = builtin::MACHINES.iter().find(|(n, _)| *n == name) else {
        return Err(ExpError::Unknown {
            origin: origin.into(),
            line,
            what: "machine",
            name: name.into(),
            valid: builtin::MACHINES.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", "),
        });
    };
    let file = format!("machines/{n}.toml");
    let m: MachineProfile = toml::from_str(text).map_err(|e| syntax(&file, text, e))?;
    m.validate().map_err(|(field, why)| ExpError::Field {
        origin: file.clone(),
        line: line_of_value(text, field, "").max(1),
        field: field.into(),
        why,
    })?;
    Ok(m)
}

/// Parse a built-in kernel variant.
pub fn variant(origin: &str, name: &str, line: usize) -> Result<Variant, ExpError> {
    let Some((n, text)) = builtin::VARIANTS.iter().find(|(n, _)| *n == name) else {
        return Err(ExpError::Unknown {
            origin: origin.into(),
            line,
            what: "kernel variant",
            name: name.into(),
            valid: builtin::VARIANTS.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", "),
        });
    };
    let file = format!("variants/{n}.toml");
    let v: Variant = toml::from_str(text).map_err(|e| syntax(&file, text, e))?;
    v.validate().map_err(|(field, why)| ExpError::Field {
        origin: file.clone(),
        line: text
            .lines()
            .position(|l| l.trim_start().starts_with(field))
            .map_or(1, |i| i + 1),
        field: field.into(),
        why,
    })?;
    Ok(v)
}

pub(crate) fn parse(origin: &str, text: &str) -> Result<Experiment, ExpError> {
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
    if !(2..=8192).contains(&f.rtc_hz) || !f.rtc_hz.is_power_of_two() {
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
    let machine = machine(origin, &f.machine, line_of_value(text, "machine", &f.machine))?;
    let Some(workload) = builtin::workload(&f.workload) else {
        return Err(ExpError::Unknown {
            origin: origin.into(),
            line: line_of_value(text, "workload", &f.workload),
            what: "workload",
            name: f.workload.clone(),
            valid: builtin::WORKLOADS.join(", "),
        });
    };
    let mut runs = Vec::new();
    for r in f.run {
        let v = variant(origin, &r.variant, line_of_value(text, "variant", &r.variant))?;
        if let Some(s) = r.published_samples {
            if !(s.is_finite() && (0.0..1e12).contains(&s)) {
                return Err(field("published_samples", format!("must be a count >= 0, got {s}")));
            }
        }
        if let Some([lo, hi]) = r.published_max_range_ms {
            if !(lo.is_finite() && hi.is_finite() && 0.0 <= lo && lo < hi) {
                return Err(field(
                    "published_max_range_ms",
                    format!("must be [low, high] with 0 <= low < high, got [{lo}, {hi}]"),
                ));
            }
        }
        let min_ns = r.published_samples.map_or(0, |s| (s / f.rtc_hz as f64 * 1e9) as u64);
        let max_ns = r
            .max_seconds
            .map_or(min_ns.max(600_000_000_000) * 2, |s| s.saturating_mul(1_000_000_000));
        runs.push(Run {
            label: r.label,
            config: SimConfig {
                machine: machine.clone(),
                variant: v,
                workload: workload.clone(),
                rtc_hz: f.rtc_hz,
                rt_priority: f.rt_priority,
                seed: f.seed,
                min_duration_ns: min_ns,
                max_duration_ns: max_ns,
            },
            published: Published {
                samples: r.published_samples,
                max_ms: r.published_max_ms,
                max_range_ms: r.published_max_range_ms,
                buckets: r.published_buckets,
                listing: r.published_listing,
            },
        });
    }
    Ok(Experiment {
        name: f.name,
        title: f.title,
        seed_file: f.seed_file,
        table: f.table,
        notes: f.notes,
        runs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
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
    fn builtins_parse() {
        for (n, _) in builtin::EXPERIMENTS {
            crate::builtin_experiment(n).unwrap();
        }
        for (n, _) in builtin::MACHINES {
            machine("t", n, 0).unwrap();
        }
        for (n, _) in builtin::VARIANTS {
            variant("t", n, 0).unwrap();
        }
    }

    #[test]
    fn good_file_parses() {
        let e = parse("x.toml", GOOD).unwrap();
        assert_eq!(e.runs.len(), 1);
        assert_eq!(e.runs[0].published.max_ms, Some(84.0));
    }

    #[test]
    fn unknown_field_names_file_line_and_field() {
        let bad = GOOD.replace("table = \"log-histogram\"", "table = \"log-histogram\"\nbogus = 3");
        let e = parse("x.toml", &bad).unwrap_err().to_string();
        assert!(e.starts_with("x.toml:8:"), "{e}");
        assert!(e.contains("bogus"), "{e}");
    }

    #[test]
    fn unknown_variant_lists_valid_ones() {
        let bad = GOOD.replace("variant = \"2.4.18\"", "variant = \"2.4.99\"");
        let e = parse("x.toml", &bad).unwrap_err().to_string();
        assert!(e.contains("x.toml:11:"), "{e}");
        assert!(
            e.contains("unknown kernel variant `2.4.99`") && e.contains("2.4.18+mini-ll"),
            "{e}"
        );
    }

    #[test]
    fn unknown_workload_lists_valid_ones() {
        let bad = GOOD.replace("seed000-script", "nope");
        let e = parse("x.toml", &bad).unwrap_err().to_string();
        assert!(e.contains("x.toml:6:") && e.contains("seed000-script"), "{e}");
    }

    #[test]
    fn wrong_type_and_bad_values_are_errors() {
        let bad = GOOD.replace("published_max_ms = 84.0", "published_max_ms = \"fast\"");
        assert!(parse("x.toml", &bad).unwrap_err().to_string().contains("x.toml:12:"));
        let bad = GOOD.replace("table = \"log-histogram\"", "table = \"log-histogram\"\nrtc_hz = 1000");
        let e = parse("x.toml", &bad).unwrap_err().to_string();
        assert!(e.contains("rtc_hz") && e.contains("power of two"), "{e}");
        assert!(parse("x.toml", "").is_err());
        assert!(parse("x.toml", "[[[").is_err());
        assert!(parse("x.toml", &GOOD.replace("[[run]]", "[[runs]]")).is_err());
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
            if let Err(e) = parse("x.toml", &out.join("\n")) {
                let e = e.to_string();
                proptest::prop_assert!(e.contains("x.toml"), "{}", e);
            }
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic() {
        // A cheap stand-in for fuzzing: every prefix and many mutations of a good file.
        for i in 0..GOOD.len() {
            let _ = parse("x.toml", &GOOD[..i]);
        }
        let bytes = GOOD.as_bytes();
        for i in 0..bytes.len() {
            for b in [b'"', b'[', b'=', b'\n', b'9', b'x'] {
                let mut v = bytes.to_vec();
                v[i] = b;
                if let Ok(s) = std::str::from_utf8(&v) {
                    let _ = parse("x.toml", s);
                }
            }
        }
    }
}
