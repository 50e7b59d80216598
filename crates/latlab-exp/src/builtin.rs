//! Built-in machines, variants, workloads and experiments, compiled into the binary from the
//! repository's `machines/`, `variants/` and `experiments/` directories: the registries are
//! built from the folders by `build.rs` (every file there is a built-in; no hand-kept list).

use latlab_sim::workload::script::{seed000_script, CommandSpec};
use latlab_sim::workload::sysbench::Fileio;
use latlab_sim::{Preload, Workload};

include!(concat!(env!("OUT_DIR"), "/registry.rs"));

pub const WORKLOADS: &[&str] = &[
    "seed000-script",
    "seed000-fresh-boot",
    "heavy-2002",
    "stress-kernel-2002",
    "cpu-hogs",
    "video-make-j10",
    "iozone",
    "sysbench-rndrw",
    "make-j32-swap-storm",
];

/// A desktop that has been up for days: page cache full of old files, and the dentries and
/// inodes of updatedb's nightly walk (a 2002 developer's box: a distribution plus a few kernel
/// trees, ~150,000 files). updatedb's walk looks every dentry up again each night, so they
/// carry DCACHE_REFERENCED. Its X server and desktop applications hold `idle_anon_mib` of
/// anonymous memory nobody touches while the benchmark runs (seed 000 tests for
/// "mouse-no-jerky": a desktop). The same for every variant of an experiment.
fn lived_in(unused_dentries: u64, idle_anon_mib: u64) -> Preload {
    Preload {
        cache_full: true,
        reclaimed_before: true,
        old_file_kb: 64,
        unused_dentries,
        referenced: true,
        updatedb_after: false,
        idle_anon_mib,
        swapped_mib: 0,
    }
}

/// A box booted into the kernel under test just before the run: no old page cache, only the
/// dentries of boot and login (~20,000, an estimate: init scripts, X, the session's files),
/// none looked up twice, nothing swapped; its desktop's `idle_anon_mib` untouched.
fn fresh_boot(idle_anon_mib: u64) -> Preload {
    Preload {
        cache_full: false,
        reclaimed_before: false,
        old_file_kb: 64,
        unused_dentries: 20_000,
        referenced: false,
        updatedb_after: false,
        idle_anon_mib,
        swapped_mib: 0,
    }
}

/// A built-in workload by name.
pub fn workload(name: &str) -> Option<Workload> {
    Some(match name {
        // Seed 000's script, as Morton ran it.
        "seed000-script" => Workload {
            name: name.into(),
            commands: seed000_script(),
            gap_ms: 0,
            // A 2002 desktop: XFree86 ~40 MB, a GNOME/KDE session ~60 MB, Mozilla ~50 MB.
            preload: lived_in(150_000, 150),
        },
        // The same script on a box just booted into the kernel under test, with the same
        // desktop logged in (`fresh_boot`).
        "seed000-fresh-boot" => Workload {
            name: name.into(),
            commands: seed000_script(),
            gap_ms: 0,
            preload: fresh_boot(150),
        },
        // latlab's first stand-in for seed 002's load (before stress-kernel-2002 below), in
        // the spirit of the Cerberus suite: a parallel kernel build
        // beside a dbench run and a memory hog that pushes the box into swap, then a large file
        // copy.
        "heavy-2002" => Workload {
            name: name.into(),
            commands: vec![
                CommandSpec::Parallel(vec![
                    CommandSpec::MakeKernel {
                        jobs: 4,
                        objects: 480,
                        headers: 40,
                        cc_ms: (200, 1000),
                        tree_files: 1200,
                        cc1_mib: None,
                    },
                    CommandSpec::MemHog { mb: 448, passes: 12 },
                    CommandSpec::Dbench {
                        clients: 16,
                        group: "dbench-clients".into(),
                    },
                ]),
                CommandSpec::Dd {
                    mb: 600,
                    bs_kb: 1024,
                    group: "big".into(),
                },
                CommandSpec::Sync,
                CommandSpec::RmRf { group: "big".into() },
            ],
            gap_ms: 0,
            preload: lived_in(150_000, 0),
        },
        // Seed 002's load as Williams ran it: Red Hat's stress-kernel with NFS-COMPILE, TTCP,
        // FIFOS_MMAP, P3_FPU, FS and CRASHME side by side (workload/stress.rs), for one run
        // of NFS-COMPILE, on the same lived-in box as heavy-2002.
        "stress-kernel-2002" => Workload {
            name: name.into(),
            commands: vec![CommandSpec::StressKernel { runs: 1 }],
            gap_ms: 0,
            preload: lived_in(150_000, 0),
        },
        // The scheduler what-if (experiments/sched-cost.toml): CPU-bound processes started
        // together (workload/hogs.rs), 100 unless the experiment's `hogs` or `--vary hogs=`
        // says otherwise, on a box with nothing else to do: no old page cache, no idle
        // desktop, nothing swapped.
        "cpu-hogs" => Workload {
            name: name.into(),
            commands: vec![CommandSpec::CpuHogs { tasks: 100 }],
            gap_ms: 0,
            preload: Preload {
                cache_full: false,
                reclaimed_before: false,
                old_file_kb: 64,
                unused_dentries: 0,
                referenced: false,
                updatedb_after: false,
                idle_anon_mib: 0,
                swapped_mib: 0,
            },
        },
        // Seed 004's load: "youtube video and make -j10" on the Pentium M. Sizes the seed
        // leaves open, estimated (research notes; each is a field to change in a file):
        // - make -j10 of a 2.6.35 i386 defconfig, ~1,400 objects; gcc on a 2 GHz Pentium M
        //   ~0.5 s of CPU per file (a 10-15 min single-threaded build): 0.25-0.75 s each;
        //   headers as seed 000's build (40 distinct per object; they are cached after the
        //   first objects); the tree (1,400 sources) not cached at the start.
        // - a 2010 YouTube video in the Flash plugin: 60-90 % of a 2 GHz core in all, X's
        //   share 10-20 %, at 25-30 frames a second: 30 fps, 20 ms decode (60 %) and 5 ms
        //   in X (15 %) a frame, the middle of those ranges.
        // The box as booted for the test (`fresh_boot`: the dentries of boot and login, no
        // old page cache), its desktop's idle memory untouched.
        "video-make-j10" => Workload {
            name: name.into(),
            commands: vec![CommandSpec::Parallel(vec![
                CommandSpec::Video {
                    fps: 30,
                    decode_us: 20_000,
                    x_us: 5_000,
                },
                CommandSpec::MakeKernel {
                    jobs: 10,
                    objects: 1400,
                    headers: 40,
                    cc_ms: (250, 750),
                    tree_files: 1400,
                    cc1_mib: None,
                },
            ])],
            gap_ms: 0,
            preload: fresh_boot(100),
        },
        // Seed 001's benchmark: `iozone -i 0 -r 4 -s SIZE -Q` with the file at 50 % of the
        // 1 GiB box's RAM (the seed's wol.dat; `--vary iozone.file_mb=1229` for its 120 %
        // case, Ananiev's 1200m), on a box booted for the test: no old page cache, the
        // dentries of boot and login, a small idle desktop.
        "iozone" => Workload {
            name: name.into(),
            commands: vec![CommandSpec::Iozone {
                file_mb: 512,
                record_kb: 4,
            }],
            gap_ms: 0,
            preload: fresh_boot(50),
        },
        // Seed 001's other benchmark: `sysbench --test=fileio --file-total-size=SIZE
        // --file-test-mode=rndrw prepare` then `run`, with sysbench 0.4's defaults for every
        // option the seed does not give (workload::sysbench cites them), the files at 50 % of
        // the 1 GiB box's RAM, on the same freshly booted box as iozone's.
        "sysbench-rndrw" => Workload {
            name: name.into(),
            commands: vec![CommandSpec::Sysbench(Fileio::defaults(512))],
            gap_ms: 0,
            preload: fresh_boot(50),
        },
        // Seed 003's storm: Lee Revell's "make -j32" of a kernel tree driving the box into
        // swap, further as it runs, until RAM and swap are both full. Sizes the seed leaves
        // open, estimated: a 2.6.8 i386 tree (~1,400 objects and as many sources); gcc 3.3
        // at -O2 on a 2.8 GHz P4 (CPI 2.0 on NetBurst) about 0.2-0.6 s of CPU a file (a 2.6
        // defconfig build of ~8 minutes), so on Revell's 600 MHz C3 (c3-2004, CPI 1.5)
        // (1.5 / 600) / (2.0 / 2800) = 3.5 times that, 0.7-2.1 s (a build of ~28 minutes;
        // the C3's smaller L2 and slower memory would add more); each cc1 8-64 MiB resident (parse trees and RTL of a 2.6 source with
        // its ~40 headers; the large drivers at the top), so 32 of them need more than the
        // 512 MiB box has. The box as booted for the test, its desktop logged in: X, GNOME,
        // a mail client and a browser, and the audio applications Revell tests with, ~300
        // MiB of anonymous memory nobody touches during the build (an estimate).
        // Searched for sources (issue 17; docs/fidelity.md Seed 003 lists what was read):
        // none of the era gives a kernel file's cc1 size, the object count or the per-file
        // time, nor Revell's RAM, swap or desktop, so every size here stays an estimate.
        // Bounds found: gcc 3.3's collector (ggc_min_heapsize_heuristic, gcc-3_3-branch,
        // gcc-cvs 23 Feb 2003) does not collect below RAM/8 grown by 30% + 70% of RAM/1GB,
        // ~106 MiB on the 512 MiB box, so a cc1 holds its file's whole allocation (8-64
        // MiB not contradicted); a bare GNOME desktop of 2004-2005 needed 110-192 MB in all
        // (OSNews story 9779; Fedora Core 2's "minimum for graphical: 192MB"), so 300 MiB
        // of idle anonymous memory is the high side unless Revell's audio apps add it.
        "make-j32-swap-storm" => Workload {
            name: name.into(),
            commands: vec![CommandSpec::MakeKernel {
                jobs: 32,
                objects: 1400,
                headers: 40,
                cc_ms: (700, 2100),
                tree_files: 1400,
                cc1_mib: Some((8, 64)),
            }],
            gap_ms: 0,
            preload: fresh_boot(300),
        },
        _ => return None,
    })
}
