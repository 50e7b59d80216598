//! The sizes of a workload that a seed leaves open and an experiment may change (`--vary
//! KEY=...`, an experiment file's `hogs`): each names one field of a command kind
//! ([`CommandSpec`]), its unit and the range the model accepts. Setting one changes every
//! command of that kind in the script, those inside `a & b` groups too. Each states how far
//! the value a workload gives may be off (`spread`, docs/fidelity.md "Uncertainty").

use super::hogs::MAX_TASKS;
use super::script::CommandSpec;
use super::sysbench::Fileio;
use crate::spread::Spread;

/// One settable size.
pub struct Size {
    /// `--vary` key.
    pub key: &'static str,
    /// What it sizes, with its unit.
    pub what: &'static str,
    pub min: u64,
    pub max: u64,
    /// How far the value a built-in workload gives may be off: `Given` where the seed states
    /// it, else the class of the workload's estimate (crates/latlab-exp/src/builtin.rs).
    pub spread: Spread,
}

/// Sizes drawn together, as (size, the size whose draw it takes): the two ends of one
/// estimated range move as one, so they never cross.
pub const DRAWN_WITH: &[(&str, &str)] = &[
    ("make.cc_ms_max", "make.cc_ms_min"),
    ("make.cc1_mib_max", "make.cc1_mib_min"),
];

/// Every settable size. The ranges keep a run's work finite and its arithmetic in range; they
/// are not claims about real machines.
pub const SIZES: &[Size] = &[
    Size {
        key: "hogs",
        what: "CPU-bound tasks of `cpu-hogs`",
        min: 1,
        max: MAX_TASKS as u64,
        // The what-if's own parameter.
        spread: Spread::Given,
    },
    Size {
        key: "video.fps",
        what: "frames a second of the video",
        min: 1,
        max: 240,
        // Builtin.rs: "at 25-30 frames a second".
        spread: Spread::Between(25.0, 30.0),
    },
    Size {
        key: "video.decode_us",
        what: "plugin's decode time per frame, us",
        min: 0,
        max: 1_000_000,
        // Builtin.rs: the middle of an estimated share of the CPU.
        spread: Spread::Estimate,
    },
    Size {
        key: "video.x_us",
        what: "X server's drawing time per frame, us",
        min: 0,
        max: 1_000_000,
        // Likewise.
        spread: Spread::Estimate,
    },
    Size {
        key: "make.jobs",
        what: "parallel jobs of the kernel build (make -jN)",
        min: 1,
        max: 256,
        // The seeds' `make -jN`.
        spread: Spread::Given,
    },
    Size {
        key: "make.cc_ms_min",
        what: "shortest compile of one object, ms",
        min: 1,
        max: 60_000,
        // Builtin.rs: gcc's time per object, estimated.
        spread: Spread::Estimate,
    },
    Size {
        key: "make.cc_ms_max",
        what: "longest compile of one object, ms",
        min: 1,
        max: 60_000,
        // Drawn with make.cc_ms_min.
        spread: Spread::Estimate,
    },
    Size {
        key: "make.cc1_mib_min",
        what: "smallest compiler's resident memory of a sized build (cc1_mib), MiB",
        min: 1,
        max: 4096,
        // Builtin.rs: cc1's resident size per object, estimated.
        spread: Spread::Estimate,
    },
    Size {
        key: "make.cc1_mib_max",
        what: "largest compiler's resident memory of a sized build (cc1_mib), MiB",
        min: 1,
        max: 4096,
        // Drawn with make.cc1_mib_min.
        spread: Spread::Estimate,
    },
    Size {
        key: "iozone.file_mb",
        what: "iozone's file (-s), MB",
        min: 1,
        max: 1 << 20,
        // Seed 001's file size.
        spread: Spread::Given,
    },
    Size {
        key: "iozone.record_kb",
        what: "iozone's record (-r), KB, whole pages",
        min: 4,
        max: 16 << 10,
        // Seed 001's `-r 4`.
        spread: Spread::Given,
    },
    Size {
        key: "sysbench.file_mb",
        what: "sysbench fileio's --file-total-size, MB",
        min: 1,
        max: 1 << 20,
        // Seed 001's file sizes (50 % and 120 % of RAM).
        spread: Spread::Given,
    },
    Size {
        key: "sysbench.files",
        what: "sysbench fileio's --file-num",
        min: 1,
        max: 1 << 16,
        // sysbench 0.4's default (sb_fileio.c `fileio_args`); the seed gives no options.
        spread: Spread::Given,
    },
    Size {
        key: "sysbench.block_kb",
        what: "sysbench fileio's --file-block-size, KB, whole pages",
        min: 4,
        max: 16 << 10,
        // Likewise.
        spread: Spread::Given,
    },
    Size {
        key: "sysbench.rw_ratio_pct",
        what: "sysbench fileio's --file-rw-ratio in hundredths (reads per 100 writes)",
        min: 0,
        max: 1_000_000,
        // Likewise.
        spread: Spread::Given,
    },
    Size {
        key: "sysbench.fsync_freq",
        what: "sysbench fileio's --file-fsync-freq, requests (0: none)",
        min: 0,
        max: 1 << 30,
        // Likewise.
        spread: Spread::Given,
    },
    Size {
        key: "sysbench.requests",
        what: "sysbench's --max-requests",
        min: 1,
        max: 10_000_000,
        // Likewise.
        spread: Spread::Given,
    },
];

/// Set the low (`low`) or high end of a `(min, max)` size pair; the pair if it crossed.
fn set_bound(pair: &mut (u64, u64), low: bool, value: u64) -> Option<(u64, u64)> {
    if low {
        pair.0 = value;
    } else {
        pair.1 = value;
    }
    (pair.0 > pair.1).then_some(*pair)
}

/// Set size `key` to `value` in every command it names. An error says why not: an unknown
/// key (with the valid ones), a value out of range, a compile-time range turned upside
/// down, or a workload without such a command.
pub fn set(commands: &mut [CommandSpec], key: &str, value: u64) -> Result<(), String> {
    let Some(size) = SIZES.iter().find(|s| s.key == key) else {
        let keys: Vec<&str> = SIZES.iter().map(|s| s.key).collect();
        return Err(format!("no workload size `{key}`; valid: {}", keys.join(", ")));
    };
    if !(size.min..=size.max).contains(&value) {
        return Err(format!(
            "must be {}..={} ({}), got {value}",
            size.min, size.max, size.what
        ));
    }
    let mut found = false;
    let mut err = None;
    each_mut(commands, &mut |c| {
        let hit = match (key, c) {
            ("hogs", CommandSpec::CpuHogs { tasks }) => {
                *tasks = value as u32;
                true
            }
            ("video.fps", CommandSpec::Video { fps, .. }) => {
                *fps = value as u32;
                true
            }
            ("video.decode_us", CommandSpec::Video { decode_us, .. }) => {
                *decode_us = value;
                true
            }
            ("video.x_us", CommandSpec::Video { x_us, .. }) => {
                *x_us = value;
                true
            }
            ("make.jobs", CommandSpec::MakeKernel { jobs, .. }) => {
                *jobs = value as u32;
                true
            }
            ("iozone.file_mb", CommandSpec::Iozone { file_mb, .. }) => {
                *file_mb = value;
                true
            }
            ("iozone.record_kb", CommandSpec::Iozone { record_kb, .. }) => {
                err = whole_pages(value);
                *record_kb = value;
                true
            }
            (_, CommandSpec::Sysbench(f)) => match sysbench_field(f, key) {
                Some(v) => {
                    if key == "sysbench.block_kb" {
                        err = whole_pages(value);
                    }
                    *v = value;
                    true
                }
                None => false,
            },
            ("make.cc_ms_min" | "make.cc_ms_max", CommandSpec::MakeKernel { cc_ms, .. }) => {
                err = set_bound(cc_ms, key.ends_with("_min"), value)
                    .map(|(lo, hi)| format!("the shortest compile ({lo} ms) would exceed the longest ({hi} ms)"));
                true
            }
            ("make.cc1_mib_min" | "make.cc1_mib_max", CommandSpec::MakeKernel { cc1_mib: Some(mib), .. }) => {
                err = set_bound(mib, key.ends_with("_min"), value)
                    .map(|(lo, hi)| format!("the smallest compiler ({lo} MiB) would exceed the largest ({hi} MiB)"));
                true
            }
            _ => false,
        };
        found |= hit;
    });
    if let Some(e) = err {
        return Err(e);
    }
    if !found {
        let kind = key.split('.').next().unwrap_or(key);
        return Err(format!("the workload has no `{kind}` command to size ({})", size.what));
    }
    Ok(())
}

/// The value of size `key` in the first command it names (`None`: the workload has no such
/// command, or no such size exists).
pub fn get(commands: &[CommandSpec], key: &str) -> Option<u64> {
    commands.iter().find_map(|c| match (key, c) {
        (_, CommandSpec::Parallel(v)) => get(v, key),
        ("hogs", CommandSpec::CpuHogs { tasks }) => Some(u64::from(*tasks)),
        ("video.fps", CommandSpec::Video { fps, .. }) => Some(u64::from(*fps)),
        ("video.decode_us", CommandSpec::Video { decode_us, .. }) => Some(*decode_us),
        ("video.x_us", CommandSpec::Video { x_us, .. }) => Some(*x_us),
        ("make.jobs", CommandSpec::MakeKernel { jobs, .. }) => Some(u64::from(*jobs)),
        ("make.cc_ms_min", CommandSpec::MakeKernel { cc_ms, .. }) => Some(cc_ms.0),
        ("make.cc_ms_max", CommandSpec::MakeKernel { cc_ms, .. }) => Some(cc_ms.1),
        ("make.cc1_mib_min", CommandSpec::MakeKernel { cc1_mib: Some(m), .. }) => Some(m.0),
        ("make.cc1_mib_max", CommandSpec::MakeKernel { cc1_mib: Some(m), .. }) => Some(m.1),
        ("iozone.file_mb", CommandSpec::Iozone { file_mb, .. }) => Some(*file_mb),
        ("iozone.record_kb", CommandSpec::Iozone { record_kb, .. }) => Some(*record_kb),
        (_, CommandSpec::Sysbench(f)) => sysbench_field(&mut f.clone(), key).map(|v| *v),
        _ => None,
    })
}

/// An error unless `kb` is whole 4 KiB pages.
fn whole_pages(kb: u64) -> Option<String> {
    (!kb.is_multiple_of(4)).then(|| format!("{kb} KB is not whole 4 KiB pages"))
}

/// The field of sysbench's options that size `key` names.
fn sysbench_field<'a>(f: &'a mut Fileio, key: &str) -> Option<&'a mut u64> {
    Some(match key {
        "sysbench.file_mb" => &mut f.file_mb,
        "sysbench.files" => &mut f.files,
        "sysbench.block_kb" => &mut f.block_kb,
        "sysbench.rw_ratio_pct" => &mut f.rw_ratio_pct,
        "sysbench.fsync_freq" => &mut f.fsync_freq,
        "sysbench.requests" => &mut f.requests,
        _ => return None,
    })
}

/// Call `f` on every command of `commands`, descending into `Parallel` groups.
fn each_mut(commands: &mut [CommandSpec], f: &mut impl FnMut(&mut CommandSpec)) {
    for c in commands {
        match c {
            CommandSpec::Parallel(v) => each_mut(v, f),
            c => f(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn script() -> Vec<CommandSpec> {
        vec![CommandSpec::Parallel(vec![
            CommandSpec::Video {
                fps: 30,
                decode_us: 20_000,
                x_us: 5_000,
            },
            CommandSpec::MakeKernel {
                jobs: 10,
                objects: 10,
                headers: 4,
                cc_ms: (250, 750),
                tree_files: 10,
                cc1_mib: None,
            },
        ])]
    }

    #[test]
    fn a_size_reaches_nested_commands_and_only_its_kind() {
        let mut s = script();
        set(&mut s, "video.decode_us", 9_000).unwrap();
        set(&mut s, "make.jobs", 4).unwrap();
        set(&mut s, "make.cc_ms_max", 900).unwrap();
        let CommandSpec::Parallel(v) = &s[0] else { panic!() };
        assert_eq!(
            v[0],
            CommandSpec::Video {
                fps: 30,
                decode_us: 9_000,
                x_us: 5_000
            }
        );
        assert!(matches!(
            v[1],
            CommandSpec::MakeKernel {
                jobs: 4,
                cc_ms: (250, 900),
                ..
            }
        ));
    }

    #[test]
    fn get_reads_what_set_wrote_for_every_size() {
        let mut s = script();
        s.push(CommandSpec::CpuHogs { tasks: 3 });
        s.push(CommandSpec::Iozone {
            file_mb: 64,
            record_kb: 4,
        });
        s.push(CommandSpec::Sysbench(Fileio::defaults(64)));
        assert_eq!(get(&s, "make.cc_ms_max"), Some(750));
        assert_eq!(get(&s, "sysbench.rw_ratio_pct"), Some(150));
        // A sized build (seed 003's), so the cc1 sizes have something to set.
        if let CommandSpec::Parallel(v) = &mut s[0] {
            for c in v.iter_mut() {
                if let CommandSpec::MakeKernel { cc1_mib, .. } = c {
                    *cc1_mib = Some((8, 64));
                }
            }
        }
        for (i, size) in SIZES.iter().enumerate() {
            let v = match size.key {
                "iozone.record_kb" | "sysbench.block_kb" => 8,
                "make.cc_ms_min" => 300,
                "make.cc_ms_max" => 900,
                "make.cc1_mib_min" => 16,
                "make.cc1_mib_max" => 48,
                _ => size.min.max(2) + i as u64 % 2,
            };
            set(&mut s, size.key, v).unwrap();
            assert_eq!(get(&s, size.key), Some(v), "{}", size.key);
        }
        assert_eq!(get(&script(), "hogs"), None);
        assert_eq!(get(&script(), "nope"), None);
    }

    #[test]
    fn size_spreads_fit_their_ranges_and_tied_sizes_share_a_class() {
        for s in SIZES {
            if let Spread::Between(lo, hi) = s.spread {
                assert!(lo >= s.min as f64 && hi <= s.max as f64 && lo < hi, "{}", s.key);
            }
        }
        for (a, b) in DRAWN_WITH {
            let (a, b) = (
                SIZES.iter().find(|s| s.key == *a).unwrap(),
                SIZES.iter().find(|s| s.key == *b).unwrap(),
            );
            assert_eq!(a.spread, b.spread, "{} is drawn with {}: one class", a.key, b.key);
        }
    }

    #[test]
    fn bad_sizes_say_why() {
        let mut s = script();
        let e = set(&mut s, "video.colour", 1).unwrap_err();
        assert!(e.contains("video.colour") && e.contains("video.fps"), "{e}");
        let e = set(&mut s, "video.fps", 0).unwrap_err();
        assert!(e.contains("1..=240"), "{e}");
        let e = set(&mut s, "make.cc_ms_min", 800).unwrap_err();
        assert!(e.contains("800 ms") && e.contains("750 ms"), "{e}");
        let e = set(&mut s, "hogs", 3).unwrap_err();
        assert!(e.contains("no `hogs` command"), "{e}");
        // sysbench's options: a block of 0 or of part of a page, no files.
        let mut s = vec![CommandSpec::Sysbench(Fileio::defaults(512))];
        let e = set(&mut s, "sysbench.block_kb", 0).unwrap_err();
        assert!(e.contains("4..=16384") && e.contains("--file-block-size"), "{e}");
        let e = set(&mut s, "sysbench.block_kb", 6).unwrap_err();
        assert!(e.contains("whole 4 KiB pages"), "{e}");
        let e = set(&mut s, "sysbench.files", 0).unwrap_err();
        assert!(e.contains("1..=65536") && e.contains("--file-num"), "{e}");
    }
}
