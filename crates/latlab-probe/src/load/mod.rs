//! Load generators for `latlab probe --load NAME[:ARGS]`: real, ordinary (SCHED_OTHER) child
//! processes that compile, stream-write, churn files, sync, decode video or swap while the probe
//! measures.
//!
//! The `latlab` binary re-executes itself as a load child (see [`child_main_if_requested`]);
//! [`Loads`] starts, watches and stops those children from the probing process. Each generator
//! lives in its own file and exposes a `run(dir, stop, counters, ..)` loop that the child calls.
//! Modules: `parent` (spawning, stopping, reporting), `child` (the child's entry point),
//! `counters` (the child's counters file), `zram` (a temporary zram swap device), and one
//! file per load.

mod child;
mod counters;
mod dbench;
mod dd;
mod make;
mod parent;
mod swap;
mod sync;
mod tar;
mod video;
pub(crate) mod zram;

pub use child::child_main_if_requested;
pub use parent::{LoadOptions, LoadReport, Loads};

/// The loads `--load` accepts, for error messages and help.
pub const VALID_LOADS: &str = "make:N, dd:SIZE, dbench:N, tar, sync, video, swap:SIZE";

/// One `--load` argument, parsed.
#[derive(Clone, Debug, PartialEq)]
pub enum LoadSpec {
    /// Compile a generated C tree with `make -jN` in a loop.
    Make { jobs: u32 },
    /// Stream-write a file of `bytes`, fsync, unlink, repeat.
    Dd { bytes: u64 },
    /// `clients` workers churning create/write/read/rename/unlink.
    Dbench { clients: u32 },
    /// Create a tree of many small files, remove it, repeat.
    Tar,
    /// Dirty 8 MiB, sync(2), sleep 200 ms, repeat.
    Sync,
    /// A 25 fps periodic CPU load (~12 ms of compute per 40 ms frame).
    Video,
    /// Touch more anonymous memory than is available so the kernel swaps (`bytes` of swap).
    Swap { bytes: u64 },
}

impl LoadSpec {
    /// Parse `make:N`, `dd:SIZE`, `dbench:N`, `tar`, `sync`, `video`, `swap:SIZE`.
    pub fn parse(s: &str) -> Result<LoadSpec, String> {
        let err = |why: String| format!("invalid load '{s}': {why} (valid loads: {VALID_LOADS})");
        let t = s.trim();
        let (name, arg) = match t.split_once(':') {
            Some((n, a)) => (n, Some(a)),
            None => (t, None),
        };
        let count = |what: &str| -> Result<u32, String> {
            let a = arg.ok_or_else(|| err(format!("{name} needs {what}, e.g. {name}:2")))?;
            match a.trim().parse::<u32>() {
                Ok(n) if (1..=1024).contains(&n) => Ok(n),
                _ => Err(err(format!("{what} must be a whole number from 1 to 1024, not '{a}'"))),
            }
        };
        let size = || -> Result<u64, String> {
            let a = arg.ok_or_else(|| err(format!("{name} needs a size, e.g. {name}:1G")))?;
            crate::parse::size_bytes(a).map_err(err)
        };
        let none = |spec: LoadSpec| match arg {
            Some(a) => Err(err(format!("{name} takes no argument, got '{a}'"))),
            None => Ok(spec),
        };
        match name {
            "make" => Ok(LoadSpec::Make {
                jobs: count("a job count")?,
            }),
            "dd" => Ok(LoadSpec::Dd { bytes: size()? }),
            "dbench" => Ok(LoadSpec::Dbench {
                clients: count("a client count")?,
            }),
            "swap" => Ok(LoadSpec::Swap { bytes: size()? }),
            "tar" => none(LoadSpec::Tar),
            "sync" => none(LoadSpec::Sync),
            "video" => none(LoadSpec::Video),
            _ => Err(err(format!("unknown load '{name}'"))),
        }
    }

    /// Canonical text, e.g. "make:2", "dd:1G"; [`LoadSpec::parse`] reads it back.
    pub fn name(&self) -> String {
        match self {
            LoadSpec::Make { jobs } => format!("make:{jobs}"),
            LoadSpec::Dd { bytes } => format!("dd:{}", size_text(*bytes)),
            LoadSpec::Dbench { clients } => format!("dbench:{clients}"),
            LoadSpec::Tar => "tar".into(),
            LoadSpec::Sync => "sync".into(),
            LoadSpec::Video => "video".into(),
            LoadSpec::Swap { bytes } => format!("swap:{}", size_text(*bytes)),
        }
    }
}

/// A size in the largest binary unit that divides it exactly: 1G, 16M, 4K, 1000.
fn size_text(b: u64) -> String {
    for (unit, shift) in [("T", 40), ("G", 30), ("M", 20), ("K", 10)] {
        if b >= 1 << shift && b.is_multiple_of(1 << shift) {
            return format!("{}{unit}", b >> shift);
        }
    }
    b.to_string()
}

/// The next word of a xorshift64 stream (Marsaglia 2003): the generators' non-zero,
/// incompressible data and their reproducible choices.
pub(crate) fn xorshift64(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

/// Helpers shared by the generators' tests.
#[cfg(test)]
pub(crate) mod testutil {
    use super::counters::Counters;
    use std::path::{Path, PathBuf};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::{Duration, Instant};

    /// A fresh, empty private directory under the system temp dir; removed when dropped.
    pub struct TempDir(pub PathBuf);

    impl TempDir {
        pub fn new(tag: &str) -> TempDir {
            let p = crate::private::dir(&std::env::temp_dir(), &format!("latlab-loadtest-{tag}-")).unwrap();
            std::fs::create_dir(p.join("work")).unwrap();
            TempDir(p)
        }
        pub fn work(&self) -> PathBuf {
            self.0.join("work")
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// Run `f(work_dir, stop, counters)` with a thread raising `stop` after `d`; returns the
    /// counters (flushed to `<tmp>/counters.json`) and the wall time the run took.
    pub fn run_for<F>(tag: &str, d: Duration, f: F) -> (TempDir, Counters, Duration)
    where
        F: FnOnce(&Path, &AtomicBool, &Counters) -> std::io::Result<()>,
    {
        let tmp = TempDir::new(tag);
        let counters = Counters::new(Some(tmp.0.clone()));
        let stop = AtomicBool::new(false);
        let t0 = Instant::now();
        std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(d);
                stop.store(true, Ordering::SeqCst);
            });
            f(&tmp.work(), &stop, &counters).unwrap();
        });
        counters.flush();
        let took = t0.elapsed();
        (tmp, counters, took)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_load() {
        assert_eq!(LoadSpec::parse("make:2"), Ok(LoadSpec::Make { jobs: 2 }));
        assert_eq!(LoadSpec::parse("dd:1G"), Ok(LoadSpec::Dd { bytes: 1 << 30 }));
        assert_eq!(LoadSpec::parse("dd:16M"), Ok(LoadSpec::Dd { bytes: 16 << 20 }));
        assert_eq!(LoadSpec::parse("dbench:4"), Ok(LoadSpec::Dbench { clients: 4 }));
        assert_eq!(LoadSpec::parse("tar"), Ok(LoadSpec::Tar));
        assert_eq!(LoadSpec::parse("sync"), Ok(LoadSpec::Sync));
        assert_eq!(LoadSpec::parse(" video "), Ok(LoadSpec::Video));
        assert_eq!(LoadSpec::parse("swap:512M"), Ok(LoadSpec::Swap { bytes: 512 << 20 }));
    }

    #[test]
    fn names_round_trip() {
        for s in [
            "make:2",
            "dd:1G",
            "dd:1000",
            "dd:3K",
            "dbench:8",
            "tar",
            "sync",
            "video",
            "swap:512M",
        ] {
            let spec = LoadSpec::parse(s).unwrap();
            assert_eq!(spec.name(), s);
            assert_eq!(LoadSpec::parse(&spec.name()).unwrap(), spec);
        }
        assert_eq!(LoadSpec::parse("dd:1024M").unwrap().name(), "dd:1G");
    }

    #[test]
    fn rejects_bad_specs_with_clear_messages() {
        let cases = [
            ("bogus", "unknown load 'bogus'"),
            ("make", "make needs a job count"),
            ("make:0", "from 1 to 1024"),
            ("make:x", "not 'x'"),
            ("dd", "dd needs a size"),
            ("dd:12Q", "unknown size unit"),
            ("swap:", "is not a size"),
            ("tar:5", "tar takes no argument"),
            ("dbench:-1", "from 1 to 1024"),
        ];
        for (s, want) in cases {
            let e = LoadSpec::parse(s).unwrap_err();
            assert!(e.contains(&format!("invalid load '{s}'")), "{e}");
            assert!(e.contains(want), "{s}: {e}");
            assert!(e.contains(VALID_LOADS), "{e}");
        }
    }
}
