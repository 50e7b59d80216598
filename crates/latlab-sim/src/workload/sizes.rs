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
    /// it, else the class of the workload's estimate (workloads/*.toml).
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
        // The workload file: "at 25-30 frames a second".
        spread: Spread::Between(25.0, 30.0),
    },
    Size {
        key: "video.decode_us",
        what: "plugin's decode time per frame, us",
        min: 0,
        max: 1_000_000,
        // The workload file: the middle of an estimated share of the CPU.
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
        // The workload file: gcc's time per object, estimated.
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
        // The workload file: cc1's resident size per object, estimated.
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

/// Why a command's values cannot run, as (its field in a workload file, dotted with the
/// command's kind: `dd.bs_kb`, why), or `Ok`. A field `--vary` can set has that size's range
/// ([`SIZES`]); the others a range that keeps the run's work finite and its arithmetic in
/// range (not a claim about real machines). A `parallel` group's commands are checked too.
pub fn check(c: &CommandSpec) -> Result<(), (String, String)> {
    // `field` of `kind` within `lo..=hi`, `what` saying its unit.
    let within = |kind: &str, field: &str, v: u64, lo: u64, hi: u64, what: &str| {
        if (lo..=hi).contains(&v) {
            Ok(())
        } else {
            Err((
                format!("{kind}.{field}"),
                format!("must be {lo}..={hi} ({what}), got {v}"),
            ))
        }
    };
    // A field `--vary` sizes: its range and unit from [`SIZES`].
    let sized = |kind: &str, field: &str, key: &str, v: u64| {
        let s = SIZES.iter().find(|s| s.key == key).expect("a size of SIZES");
        within(kind, field, v, s.min, s.max, s.what)
    };
    let pages = |kind: &str, field: &str, kb: u64| match whole_pages(kb) {
        Some(why) => Err((format!("{kind}.{field}"), why)),
        None => Ok(()),
    };
    let ordered = |kind: &str, field: &str, (lo, hi): (u64, u64)| {
        if lo <= hi {
            Ok(())
        } else {
            Err((
                format!("{kind}.{field}"),
                format!("[{lo}, {hi}]: the low end exceeds the high end"),
            ))
        }
    };
    const MIB: u64 = 1 << 20;
    const COUNT: u64 = 10_000_000;
    match c {
        CommandSpec::MakeKernel {
            jobs,
            objects,
            headers,
            cc_ms,
            tree_files,
            cc1_mib,
        } => {
            let k = "make-kernel";
            sized(k, "jobs", "make.jobs", (*jobs).into())?;
            within(k, "objects", (*objects).into(), 0, COUNT, "compilations")?;
            within(
                k,
                "headers",
                (*headers).into(),
                0,
                100_000,
                "files each compilation reads",
            )?;
            within(
                k,
                "tree_files",
                (*tree_files).into(),
                1,
                COUNT,
                "files of the source tree",
            )?;
            sized(k, "cc_ms", "make.cc_ms_min", cc_ms.0)?;
            sized(k, "cc_ms", "make.cc_ms_max", cc_ms.1)?;
            ordered(k, "cc_ms", *cc_ms)?;
            if let Some(mib) = cc1_mib {
                sized(k, "cc1_mib", "make.cc1_mib_min", mib.0)?;
                sized(k, "cc1_mib", "make.cc1_mib_max", mib.1)?;
                ordered(k, "cc1_mib", *mib)?;
            }
        }
        CommandSpec::MakeClean | CommandSpec::Sync | CommandSpec::RmRf { .. } => {}
        CommandSpec::TarXfz {
            files,
            mean_kb,
            tarball_mb,
            gunzip_mb_s,
            ..
        } => {
            let k = "tar-xfz";
            within(k, "files", (*files).into(), 1, COUNT, "files in the tarball")?;
            within(k, "mean_kb", *mean_kb, 1, MIB, "KiB")?;
            within(k, "tarball_mb", *tarball_mb, 0, MIB, "MB")?;
            within(k, "gunzip_mb_s", *gunzip_mb_s, 1, MIB, "MB/s")?;
        }
        CommandSpec::Dd { mb, bs_kb, .. } => {
            within("dd", "mb", *mb, 0, MIB, "MiB")?;
            within("dd", "bs_kb", *bs_kb, 1, MIB, "KiB")?;
        }
        CommandSpec::CvsCo { files, kb, .. } => {
            within("cvs-co", "files", (*files).into(), 0, COUNT, "files")?;
            within("cvs-co", "kb", *kb, 0, MIB, "KiB")?;
        }
        CommandSpec::Make { objects, cc_ms, .. } => {
            within("make", "objects", (*objects).into(), 0, COUNT, "compilations")?;
            within("make", "cc_ms", *cc_ms, 0, 3_600_000, "ms")?;
        }
        CommandSpec::Dbench { clients, .. } => {
            within("dbench", "clients", (*clients).into(), 0, MAX_TASKS.into(), "processes")?;
        }
        CommandSpec::Idle { ms } => within("idle", "ms", *ms, 0, 1 << 40, "ms")?,
        CommandSpec::Parallel(v) => v.iter().try_for_each(check)?,
        CommandSpec::MemHog { mb, passes } => {
            within("mem-hog", "mb", *mb, 0, MIB, "MiB")?;
            within(
                "mem-hog",
                "passes",
                (*passes).into(),
                0,
                1_000_000,
                "passes over its memory",
            )?;
        }
        CommandSpec::StressKernel { runs } => within(
            "stress-kernel",
            "runs",
            (*runs).into(),
            0,
            10_000,
            "runs of NFS-COMPILE",
        )?,
        CommandSpec::CatOld { mb, file_kb } => {
            within("cat-old", "mb", *mb, 0, MIB, "MiB")?;
            within("cat-old", "file_kb", *file_kb, 4, MIB, "KiB")?;
        }
        CommandSpec::Updatedb { files, nights } => {
            within("updatedb", "files", *files, 0, 1 << 30, "names")?;
            within("updatedb", "nights", (*nights).into(), 0, 10_000, "nights")?;
        }
        CommandSpec::CpuHogs { tasks } => sized("cpu-hogs", "tasks", "hogs", (*tasks).into())?,
        CommandSpec::Video { fps, decode_us, x_us } => {
            sized("video", "fps", "video.fps", (*fps).into())?;
            sized("video", "decode_us", "video.decode_us", *decode_us)?;
            sized("video", "x_us", "video.x_us", *x_us)?;
        }
        CommandSpec::Iozone { file_mb, record_kb } => {
            sized("iozone", "file_mb", "iozone.file_mb", *file_mb)?;
            sized("iozone", "record_kb", "iozone.record_kb", *record_kb)?;
            pages("iozone", "record_kb", *record_kb)?;
        }
        CommandSpec::Sysbench(f) => {
            for s in SIZES.iter().filter(|s| s.key.starts_with("sysbench.")) {
                let field = &s.key["sysbench.".len()..];
                let v = *sysbench_field(&mut f.clone(), s.key).expect("a sysbench size");
                sized("sysbench", field, s.key, v)?;
            }
            pages("sysbench", "block_kb", f.block_kb)?;
            if let Some((key, why)) = f.check() {
                return Err((key.into(), why));
            }
        }
    }
    Ok(())
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
