//! The shell running a workload's script: each command ([`CommandSpec`]) as a child process,
//! one after another. A command's program ([`Cmd`]) queues its work a batch at a time; what
//! each command does lives in its own module ([`super::cmd`], and `stress`, `iozone`,
//! `sysbench`, `hogs`, `video` beside it): this module only sequences. Sizes come from the
//! command's parameters; randomness (compile times, file sizes) from the run's seeded PRNG.

use super::cmd;
use super::ops::{Batches, Ops, Reg};
use super::sysbench::Fileio;
use super::{Action, ProgCx, Program, TaskSpec};
use latlab_core::Nanos;
use std::collections::VecDeque;

/// One command of a script. In a workload file (docs/experiments.md "Workload files") each is
/// a table with one key, the command's kind in kebab case, whose value holds its fields:
/// `{ dd = { mb = 400, bs_kb = 1024, group = "foo" } }`, `{ sync = {} }`. Every field is
/// required unless its doc says otherwise; unknown fields are refused.
#[derive(Clone, Debug, PartialEq, serde::Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub enum CommandSpec {
    /// `make -jN` of a kernel (`make-kernel`): `objects` compilations, each reading `headers`
    /// headers and its source (files of the tree), computing for `cc_ms` ms (uniform in
    /// `[lo, hi]`) and writing an object; then a link. `jobs`: make's `-j`. `tree_files`: the
    /// source tree's files, on disk and not cached at the start (2-40 KB each).
    /// `cc1_mib` (optional): each compiler's resident memory, uniform in `[lo, hi]` MiB, its
    /// working set touched again every timeslice of its compute (what swapped out comes back
    /// in: [`crate::mm::swap_in`]); without it, the 2.4-era 6 MB compiler that never touches
    /// its memory again (`KERNEL_CC1`).
    MakeKernel {
        jobs: u32,
        objects: u32,
        headers: u32,
        cc_ms: (u64, u64),
        tree_files: u32,
        #[serde(default)]
        cc1_mib: Option<(u64, u64)>,
    },
    /// `make clean` (`make-clean`): delete the objects the last `make-kernel` made.
    MakeClean,
    /// `tar xfz` of a tarball read over NFS (`tar-xfz`): `files` files of mean `mean_kb` KiB
    /// (a cubed uniform draw up to four times the mean), the `tarball_mb` MB tarball's share
    /// of each read over the network, gunzip at `gunzip_mb_s` MB/s; the files join `group`.
    TarXfz {
        files: u32,
        mean_kb: u64,
        tarball_mb: u64,
        gunzip_mb_s: u64,
        group: String,
    },
    /// `rm -rf` of a group of files (`rm-rf`): every file `group` holds.
    RmRf { group: String },
    /// `dd if=/dev/zero of=FILE bs=BS count=N` (`dd`): `mb` MiB in `bs_kb` KiB blocks into a
    /// new file of `group`.
    Dd { mb: u64, bs_kb: u64, group: String },
    /// `cvs co` over the network (`cvs-co`): `files` small files of `kb` KiB into `group`.
    CvsCo { files: u32, kb: u64, group: String },
    /// A small build (`make`): `objects` compilations of `cc_ms` ms each, one after another,
    /// reading the first three files of `group` and writing their objects into it.
    Make { objects: u32, cc_ms: u64, group: String },
    /// `dbench N` (`dbench`): `clients` clients, each replaying dbench's trace once
    /// ([`NETBENCH`]); client `i`'s files are group `{group}{i}`.
    Dbench { clients: u32, group: String },
    /// `sync`.
    Sync,
    /// Nothing happens for `ms` ms (a person typing the next command).
    Idle { ms: u64 },
    /// Commands run at the same time (`a & b & c; wait`): a list of commands.
    Parallel(Vec<CommandSpec>),
    /// A memory hog (`mem-hog`): allocate `mb` MiB of anonymous memory and touch all of it
    /// `passes` times, ~1 s of CPU per pass (a memory tester of the Cerberus kind).
    MemHog { mb: u64, passes: u32 },
    /// Red Hat's stress-kernel with the six tests Clark Williams ran (seed 002), side by side
    /// until NFS-COMPILE has done `runs` runs ([`super::stress`]) (`stress-kernel`).
    StressKernel { runs: u32 },
    /// `cat` of old files already on disk (`cat-old`), `file_kb` KiB each, `mb` MiB in all:
    /// each looked up once, read whole through the page cache and closed (its inode unused,
    /// its pages cached).
    CatOld { mb: u64, file_kb: u64 },
    /// updatedb's walk of the whole filesystem (slocate's cron.daily job of the era), `nights`
    /// nights running: an lstat() of each of `files` names ([`sys_lstat_tree`]).
    Updatedb { files: u64, nights: u32 },
    /// `tasks` CPU-bound SCHED_OTHER processes started together ([`super::hogs`])
    /// (`cpu-hogs`).
    CpuHogs { tasks: u32 },
    /// Video playback in a browser plugin through the X server, `fps` frames a second, each
    /// decoded in `decode_us` us and drawn in `x_us` us ([`super::video`]); runs until the
    /// run ends.
    Video { fps: u32, decode_us: u64, x_us: u64 },
    /// `iozone -i 0 -r RECORD_KB -s FILE_MB -Q`: write a new file of `file_mb` MB one
    /// `record_kb` KiB write(2) at a time, then rewrite it, each write timed
    /// ([`super::iozone`]).
    Iozone { file_mb: u64, record_kb: u64 },
    /// `sysbench --test=fileio --file-test-mode=rndrw prepare`, then `run`: two processes one
    /// after the other ([`super::sysbench`]); its options as [`Fileio`]'s fields.
    Sysbench(Fileio),
}

impl CommandSpec {
    pub fn label(&self) -> String {
        match self {
            CommandSpec::MakeKernel { jobs, .. } => format!("make -j{jobs} bzImage"),
            CommandSpec::MakeClean => "make clean".into(),
            CommandSpec::TarXfz { .. } => "tar xfz (NFS)".into(),
            CommandSpec::RmRf { group } => format!("rm -rf {group}"),
            CommandSpec::Dd { mb, bs_kb, .. } => format!("dd bs={bs_kb}k count={}", mb * 1024 / bs_kb),
            CommandSpec::CvsCo { .. } => "cvs co".into(),
            CommandSpec::Make { .. } => "make".into(),
            CommandSpec::Dbench { clients, .. } => format!("dbench {clients}"),
            CommandSpec::Sync => "sync".into(),
            CommandSpec::Idle { ms } => format!("idle {ms} ms"),
            CommandSpec::Parallel(v) => v.iter().map(|c| c.label()).collect::<Vec<_>>().join(" & "),
            CommandSpec::MemHog { mb, .. } => format!("memhog {mb}M"),
            CommandSpec::StressKernel { runs } => format!("stress-kernel (NFS-COMPILE x{runs})"),
            CommandSpec::CatOld { mb, file_kb } => format!("cat {mb} MB of old {file_kb} KB files"),
            CommandSpec::Updatedb { files, nights } => format!("updatedb ({files} names, {nights} nights)"),
            CommandSpec::CpuHogs { tasks } => format!("hogs x{tasks}"),
            CommandSpec::Video { fps, .. } => format!("video {fps} fps"),
            CommandSpec::Iozone { file_mb, record_kb } => format!("iozone -i 0 -r {record_kb} -s {file_mb}m -Q"),
            CommandSpec::Sysbench(f) => f.label(),
        }
    }
}

/// The shell running a script: each command as a child, one after another, `gap` of idle
/// between commands.
pub struct Shell {
    cmds: VecDeque<CommandSpec>,
    reg: Reg,
    spawned: bool,
    gap: Nanos,
}

impl Shell {
    pub fn new(cmds: Vec<CommandSpec>, gap: Nanos) -> Self {
        Shell {
            cmds: cmds.into(),
            reg: Reg::default(),
            spawned: false,
            gap,
        }
    }
}

impl Program for Shell {
    fn next(&mut self, cx: &mut ProgCx) -> Action {
        if self.spawned {
            self.spawned = false;
            return Action::WaitChildren;
        }
        let Some(c) = self.cmds.pop_front() else {
            cx.st.workload_done = Some(cx.now);
            return Action::Exit;
        };
        if let CommandSpec::Idle { ms } = c {
            return Action::Sleep(ms * 1_000_000);
        }
        if self.gap > 0 && !self.cmds.is_empty() {
            // After this command, the person at the keyboard takes a while.
            self.cmds.push_front(CommandSpec::Idle {
                ms: self.gap / 1_000_000,
            });
        }
        self.spawned = true;
        let comm = c.label().split_whitespace().next().unwrap_or("sh").to_string();
        Action::Spawn(TaskSpec::user(comm, Box::new(Cmd::new(c, self.reg.clone()))))
    }
}

/// A command's program.
pub struct Cmd {
    spec: CommandSpec,
    reg: Reg,
    ops: Ops,
    stage: u32,
}

impl Cmd {
    pub fn new(spec: CommandSpec, reg: Reg) -> Self {
        Cmd {
            spec,
            reg,
            ops: Ops::default(),
            stage: 0,
        }
    }

    /// Queue the command's next batch of work (its module's `refill`); false when it has
    /// nothing more to do.
    fn next_batch(&mut self, cx: &mut ProgCx) -> bool {
        let stage = self.stage;
        self.stage += 1;
        let reg = &self.reg;
        let o = &mut self.ops;
        match self.spec.clone() {
            CommandSpec::MakeKernel {
                jobs,
                objects,
                headers,
                cc_ms,
                tree_files,
                cc1_mib,
            } => cmd::make::kernel(o, reg, stage, cx, (jobs, objects, headers), cc_ms, tree_files, cc1_mib),
            CommandSpec::MakeClean => cmd::rm::refill(o, reg, stage, "objs"),
            CommandSpec::RmRf { group } => cmd::rm::refill(o, reg, stage, &group),
            CommandSpec::TarXfz {
                files,
                mean_kb,
                tarball_mb,
                gunzip_mb_s,
                group,
            } => cmd::tar::refill(o, reg, stage, cx, files, mean_kb, tarball_mb, gunzip_mb_s, group),
            CommandSpec::CatOld { mb, file_kb } => cmd::cat::refill(o, stage, cx, mb, file_kb),
            CommandSpec::Updatedb { files, nights } => cmd::updatedb::refill(o, stage, files, nights),
            CommandSpec::Dd { mb, bs_kb, group } => cmd::dd::refill(o, reg, stage, mb, bs_kb, group),
            CommandSpec::CvsCo { files, kb, group } => cmd::cvs::refill(o, reg, stage, files, kb, group),
            CommandSpec::Make { objects, cc_ms, group } => cmd::make::small(o, reg, stage, objects, cc_ms, group),
            CommandSpec::Dbench { clients, group } => cmd::dbench::refill(o, reg, stage, clients, group),
            CommandSpec::Iozone { file_mb, record_kb } => super::iozone::refill(o, reg, stage, file_mb, record_kb),
            CommandSpec::Sysbench(f) => super::sysbench::refill(o, reg, stage, f),
            CommandSpec::Sync => cmd::sync::refill(o, stage),
            CommandSpec::Idle { ms } => once(stage, || o.push(move |_| Some(Action::Sleep(ms * 1_000_000)))),
            CommandSpec::Parallel(cmds) => once(stage, || {
                for c in cmds {
                    let r = reg.clone();
                    o.spawn(move |_| {
                        let comm = c.label().split_whitespace().next().unwrap_or("sh").to_string();
                        TaskSpec::user(comm, Box::new(Cmd::new(c, r)))
                    });
                }
                o.push(|_| Some(Action::WaitChildren));
            }),
            CommandSpec::StressKernel { runs } => once(stage, || super::stress::spawn_all(o, runs)),
            CommandSpec::CpuHogs { tasks } => once(stage, || super::hogs::spawn_all(o, tasks, cx.now)),
            CommandSpec::Video { fps, decode_us, x_us } => once(stage, || {
                super::video::spawn(o, fps, decode_us * 1_000, x_us * 1_000, cx.now);
                o.push(|_| Some(Action::WaitChildren));
            }),
            CommandSpec::MemHog { mb, passes } => cmd::memhog::refill(o, stage, mb, passes),
        }
    }
}

/// A command whose work is one batch: `queue` it at stage 0; false after.
fn once(stage: u32, queue: impl FnOnce()) -> bool {
    if stage > 0 {
        return false;
    }
    queue();
    true
}

impl Batches for Cmd {
    fn ops(&mut self) -> &mut Ops {
        &mut self.ops
    }
    fn refill(&mut self, cx: &mut ProgCx) -> bool {
        self.next_batch(cx)
    }
}
