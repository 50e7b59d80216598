//! A load child's counters and state files: u64 counters kept in memory and written to
//! `<state dir>/counters.json` (tmp + rename, at most every 100 ms and at exit) so the parent can
//! read them even after a SIGKILL; `ready` marks that real load is being produced; `notes.txt`
//! carries remarks for the report.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The counters file inside a load's state directory.
pub const COUNTERS_FILE: &str = "counters.json";
/// Created once the load is producing load.
pub const READY_FILE: &str = "ready";
/// One remark per line, for the report.
pub const NOTES_FILE: &str = "notes.txt";

/// How often [`Counters::add`] may rewrite the counters file.
const FLUSH_EVERY: Duration = Duration::from_millis(100);

struct State {
    values: BTreeMap<String, u64>,
    last_flush: Option<Instant>,
}

/// Named u64 counters, shared by a load's threads.
pub struct Counters {
    dir: Option<PathBuf>,
    state: Mutex<State>,
    ready: AtomicBool,
}

impl Counters {
    /// Counters written under `dir` (none are written without one).
    pub fn new(dir: Option<PathBuf>) -> Counters {
        Counters {
            dir,
            state: Mutex::new(State {
                values: BTreeMap::new(),
                last_flush: None,
            }),
            ready: AtomicBool::new(false),
        }
    }

    /// Add `n` to `key` (0 just makes the key appear) and rewrite the file if it is due.
    pub fn add(&self, key: &str, n: u64) {
        self.update(key, |v| *v += n);
    }

    /// Set `key` to `v` (for totals gathered elsewhere).
    pub fn set(&self, key: &str, v: u64) {
        self.update(key, |x| *x = v);
    }

    /// Change `key`'s value and rewrite the file if it is due.
    fn update(&self, key: &str, f: impl FnOnce(&mut u64)) {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        f(st.values.entry(key.to_string()).or_insert(0));
        if st.last_flush.is_none_or(|t| t.elapsed() >= FLUSH_EVERY) {
            self.write(&mut st);
        }
    }

    /// The current value of `key` (0 if never added).
    #[cfg(test)]
    pub fn get(&self, key: &str) -> u64 {
        let st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        st.values.get(key).copied().unwrap_or(0)
    }

    /// Write the counters file now.
    pub fn flush(&self) {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        self.write(&mut st);
    }

    /// Mark the load as producing load (creates the ready file once).
    pub fn ready(&self) {
        if !self.ready.swap(true, Ordering::SeqCst) {
            self.flush();
            if let Some(d) = &self.dir {
                let _ = std::fs::write(d.join(READY_FILE), b"");
            }
        }
    }

    /// Record a remark for the report (also echoed to stderr).
    pub fn note(&self, msg: &str) {
        eprintln!("{msg}");
        if let Some(d) = &self.dir {
            if let Ok(mut f) = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(d.join(NOTES_FILE))
            {
                let _ = writeln!(f, "{msg}");
            }
        }
    }

    fn write(&self, st: &mut State) {
        st.last_flush = Some(Instant::now());
        let Some(d) = &self.dir else { return };
        let Ok(json) = serde_json::to_vec(&st.values) else {
            return;
        };
        let tmp = d.join(format!("{COUNTERS_FILE}.tmp"));
        if std::fs::write(&tmp, json).is_ok() {
            let _ = std::fs::rename(&tmp, d.join(COUNTERS_FILE));
        }
    }
}

/// Read a counters file written by [`Counters`]; empty if missing or unreadable.
pub fn read_counters(dir: &Path) -> BTreeMap<String, u64> {
    std::fs::read(dir.join(COUNTERS_FILE))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

/// Read the notes a child left; empty if none.
pub fn read_notes(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(dir.join(NOTES_FILE))
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::testutil::TempDir;

    #[test]
    fn counters_round_trip_through_the_file() {
        let tmp = TempDir::new("counters");
        let c = Counters::new(Some(tmp.0.clone()));
        c.add("builds", 0);
        c.add("builds", 2);
        c.set("cpu_loops", 7);
        c.note("hello");
        assert!(!tmp.0.join(READY_FILE).exists());
        c.ready();
        assert!(tmp.0.join(READY_FILE).exists());
        c.flush();
        let m = read_counters(&tmp.0);
        assert_eq!(m.get("builds"), Some(&2));
        assert_eq!(m.get("cpu_loops"), Some(&7));
        assert_eq!(read_notes(&tmp.0), vec!["hello".to_string()]);
        assert_eq!(c.get("builds"), 2);
        assert!(read_counters(&tmp.0.join("missing")).is_empty());
    }
}
