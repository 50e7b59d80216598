//! Reading a [`RunResult`] back from the JSON either engine writes: the model's
//! `latlab run/reproduce --out DIR` files and the probe's `latlab probe ... --json FILE`
//! (the same object with an extra top-level `streams_summary` key, which is ignored, as is
//! any other key a later version adds).
//!
//! Pure: the caller reads the file and names it in the error it prints.

use latlab_core::{Engine, RunResult};
use std::fmt;

/// Why a text is not a usable result.
#[derive(Debug)]
pub enum InputError {
    /// Not JSON at all (with serde's line and column).
    NotJson(String),
    /// JSON, but not a `RunResult` (what is missing or malformed).
    NotRunResult(String),
    /// A `RunResult` with no measurement streams: nothing to report.
    NoStreams,
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InputError::NotJson(e) => write!(f, "not JSON: {e}"),
            InputError::NotRunResult(e) => write!(
                f,
                "not a latlab RunResult ({e}); expected the JSON of `latlab run --out`, \
                 `latlab reproduce --out` or `latlab probe ... --json`"
            ),
            InputError::NoStreams => write!(f, "a RunResult with no streams: nothing to report"),
        }
    }
}

impl std::error::Error for InputError {}

/// Parse one result. Unknown top-level keys (the probe's `streams_summary`) are ignored.
pub fn parse_result(text: &str) -> Result<RunResult, InputError> {
    let v: serde_json::Value = serde_json::from_str(text).map_err(|e| InputError::NotJson(e.to_string()))?;
    let Some(obj) = v.as_object() else {
        return Err(InputError::NotRunResult("the document is not a JSON object".into()));
    };
    let missing: Vec<&str> = ["meta", "streams"]
        .into_iter()
        .filter(|k| !obj.contains_key(*k))
        .collect();
    if !missing.is_empty() {
        return Err(InputError::NotRunResult(format!("no `{}` key", missing.join("`, `"))));
    }
    let r: RunResult = serde_json::from_value(v).map_err(|e| InputError::NotRunResult(e.to_string()))?;
    if r.streams.is_empty() {
        return Err(InputError::NoStreams);
    }
    Ok(r)
}

/// How reports name an engine: `model` or `probe`.
pub fn engine_name(e: Engine) -> &'static str {
    match e {
        Engine::Sim => "model",
        Engine::Probe => "probe",
    }
}

/// How a run is named in tables, plot legends and trace tracks: `kernel (engine)`, and
/// `kernel (probe; load dd:1G died)` when a load ended before the measurement did.
pub fn label(r: &RunResult) -> String {
    let dead: Vec<&str> = r.dead_loads().map(|(n, _)| n).collect();
    let died = match dead.len() {
        0 => String::new(),
        1 => format!("; load {} died", dead[0]),
        _ => format!("; loads {} died", dead.join(", ")),
    };
    format!("{} ({}{died})", r.meta.kernel, engine_name(r.meta.engine))
}

/// Labels for several runs, made unique by a `#n` suffix where two would read the same.
pub fn labels(runs: &[RunResult]) -> Vec<String> {
    let base: Vec<String> = runs.iter().map(label).collect();
    base.iter()
        .enumerate()
        .map(|(i, l)| {
            if base.iter().filter(|b| *b == l).count() > 1 {
                format!("{l} #{}", i + 1)
            } else {
                l.clone()
            }
        })
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use latlab_core::{RunMeta, Stream};

    /// A result with one stream `name` holding `values` (ns), for the crate's tests.
    pub(crate) fn result(engine: Engine, kernel: &str, name: &str, values: &[u64]) -> RunResult {
        let mut r = RunResult::new(RunMeta {
            engine,
            machine: "m".into(),
            kernel: kernel.into(),
            workload: "w".into(),
            seed: 1,
            duration_ns: 1_000_000_000,
            version: "0".into(),
            settings: Default::default(),
        });
        let mut s = Stream::new(name, "wakeup");
        for &v in values {
            s.hist.record(v);
        }
        r.streams.push(s);
        r
    }

    #[test]
    fn accepts_the_probe_json_with_streams_summary() {
        let r = result(Engine::Probe, "6.1.0", "cpu0", &[1_000, 2_000]);
        let mut v = serde_json::to_value(&r).unwrap();
        v.as_object_mut()
            .unwrap()
            .insert("streams_summary".into(), serde_json::json!([{"name": "cpu0"}]));
        let back = parse_result(&v.to_string()).unwrap();
        assert_eq!(back.streams[0].hist.count(), 2);
        assert_eq!(label(&back), "6.1.0 (probe)");
    }

    #[test]
    fn names_what_is_wrong() {
        assert!(matches!(parse_result("not json"), Err(InputError::NotJson(_))));
        let e = parse_result("[1, 2]").unwrap_err().to_string();
        assert!(e.contains("not a JSON object"), "{e}");
        let e = parse_result(r#"{"rows": []}"#).unwrap_err().to_string();
        assert!(e.contains("no `meta`, `streams` key"), "{e}");
        let e = parse_result(r#"{"meta": 1, "streams": []}"#).unwrap_err().to_string();
        assert!(e.starts_with("not a latlab RunResult"), "{e}");
        let mut r = result(Engine::Sim, "2.4.18", "realfeel", &[1]);
        r.streams.clear();
        let e = parse_result(&serde_json::to_string(&r).unwrap()).unwrap_err();
        assert!(matches!(e, InputError::NoStreams));
    }

    #[test]
    fn a_dead_load_is_in_the_label() {
        let mut r = result(Engine::Probe, "6.1", "cpu0", &[1]);
        let fate = |name: &str, died: bool| latlab_core::LoadFate {
            name: name.into(),
            died: died.then(|| latlab_core::LoadDeath {
                how: "exited with status 1".into(),
                after_ns: 1,
            }),
        };
        r.loads = vec![fate("tar", false)];
        assert_eq!(label(&r), "6.1 (probe)");
        r.loads.push(fate("dd:1G", true));
        assert_eq!(label(&r), "6.1 (probe; load dd:1G died)");
        r.loads.push(fate("sync", true));
        assert_eq!(label(&r), "6.1 (probe; loads dd:1G, sync died)");
    }

    #[test]
    fn labels_are_unique() {
        let a = result(Engine::Sim, "2.4.18", "realfeel", &[1]);
        let b = result(Engine::Probe, "6.1", "cpu0", &[1]);
        assert_eq!(
            labels(&[a.clone(), b, a]),
            ["2.4.18 (model) #1", "6.1 (probe)", "2.4.18 (model) #3"]
        );
    }
}
