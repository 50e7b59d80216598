//! Seed 000's scripted workload and the commands it is made of, as task programs.
//!
//! Each command is a [`Cmd`] program that emits its system calls lazily (an [`Ops`] queue of
//! closures), so a write can use the file its `creat()` just made. Sizes come from the
//! command's parameters (documented on [`CommandSpec`]); randomness (compile times, file
//! sizes) from the run's seeded PRNG.

use super::stress::{RunTest, StressTest};
use super::sysbench::{Fileio, Phase, Sysbench};
use super::{Action, ProgCx, Program, TaskSpec};
use crate::fs::ext3::{sys_create, sys_lookup, sys_lstat_tree, sys_read, sys_rewrite, sys_unlink, sys_write};
use crate::fs::flush::sys_sync;
use crate::kernel::catalog::Point;
use crate::kernel::path::{point, Chan, Ctx, LoopStep, Path, Step};
use crate::kernel::state::{KReq, KState};
use latlab_core::Nanos;
use rand::Rng as _;
use smallvec::smallvec;
use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, VecDeque};
use std::rc::Rc;

/// Files by group name, shared by the commands of one script (`make clean` deletes what
/// `make` built).
#[derive(Default)]
pub struct Registry {
    groups: BTreeMap<String, Vec<u32>>,
}

impl Registry {
    pub(crate) fn add(&mut self, group: &str, f: u32) {
        self.groups.entry(group.to_string()).or_default().push(f);
    }
    pub(crate) fn take(&mut self, group: &str) -> Vec<u32> {
        self.groups.remove(group).unwrap_or_default()
    }
    pub(crate) fn remove(&mut self, group: &str, f: u32) {
        if let Some(v) = self.groups.get_mut(group) {
            v.retain(|&x| x != f);
        }
    }
    pub(crate) fn get(&self, group: &str) -> &[u32] {
        self.groups.get(group).map_or(&[], |v| v.as_slice())
    }
}

pub type Reg = Rc<RefCell<Registry>>;
type Op = Box<dyn FnOnce(&mut ProgCx) -> Option<Action>>;

/// A queue of pending system calls and compute bursts.
#[derive(Default)]
pub struct Ops {
    q: VecDeque<Op>,
}

/// Pages a small I/O program (dd, iozone, sysbench) touches besides its I/O buffer: its text,
/// data and stack and the libc pages it writes. An estimate: 200 KiB, the resident size such
/// a program showed in `ps` of the era less the shared, already resident, libc text.
pub(crate) const PROGRAM_PAGES: u64 = 50;

impl Ops {
    pub(crate) fn push(&mut self, f: impl FnOnce(&mut ProgCx) -> Option<Action> + 'static) {
        self.q.push_back(Box::new(f));
    }
    pub(crate) fn compute(&mut self, ns: Nanos) {
        self.push(move |_| Some(Action::Compute(ns)));
    }
    pub(crate) fn grow(&mut self, pages: u64) {
        self.push(move |cx| Some(Action::Syscall(crate::kernel::catalog::fault_in(cx.mm, pages))));
    }
    pub(crate) fn lookup(&mut self, f: u32) {
        self.push(move |cx| Some(Action::Syscall(sys_lookup(cx.st, f))));
    }
    pub(crate) fn read(&mut self, f: u32, bytes: u64) {
        self.push(move |_| Some(Action::Syscall(sys_read(f, 0, bytes))));
    }
    /// creat() of a file of `pages` (its blocks reserved); it joins `group`. The cell holds
    /// the file once the creat() has run, for the calls queued after it.
    pub(crate) fn create(&mut self, reg: &Reg, group: &'static str, pages: u64) -> Rc<Cell<u32>> {
        let cur = Rc::new(Cell::new(0u32));
        let (c, r) = (cur.clone(), reg.clone());
        self.push(move |cx| {
            let f = cx.st.mm.create_file(pages);
            r.borrow_mut().add(group, f);
            c.set(f);
            Some(Action::Syscall(sys_create(f)))
        });
        cur
    }
    /// creat() + write() in `chunk`-byte calls + close(); the file joins `group`.
    pub(crate) fn create_write(&mut self, reg: &Reg, group: &'static str, bytes: u64, chunk: u64) {
        let cur = self.create(reg, group, bytes.div_ceil(4096));
        let mut left = bytes;
        while left > 0 {
            let n = left.min(chunk);
            left -= n;
            let c = cur.clone();
            self.push(move |_| Some(Action::Syscall(sys_write(c.get(), n))));
        }
    }
    pub(crate) fn unlink(&mut self, f: u32) {
        self.push(move |_| Some(Action::Syscall(sys_unlink(f))));
    }
    pub(crate) fn net(&mut self, bytes: u64) {
        self.push(move |cx| Some(Action::Syscall(net_read(cx.st, cx.m.net_ns(bytes)))));
    }
    pub(crate) fn spawn(&mut self, spec: impl FnOnce(&mut ProgCx) -> TaskSpec + 'static) {
        self.push(move |cx| Some(Action::Spawn(spec(cx))));
    }
    pub(crate) fn pop(&mut self, cx: &mut ProgCx) -> Option<Action> {
        while let Some(op) = self.q.pop_front() {
            if let Some(a) = op(cx) {
                return Some(a);
            }
        }
        None
    }
}

/// Wait for `ns` of network transfer (NFS read, cvs): the task sleeps until the data is in.
fn net_read(k: &mut KState, ns: Nanos) -> Box<dyn Path> {
    k.net_token += 1;
    let chan = Chan::Net(k.net_token);
    Box::new(NetRead {
        chan,
        ns,
        waited: false,
    })
}

struct NetRead {
    chan: Chan,
    ns: Nanos,
    waited: bool,
}

impl Path for NetRead {
    fn name(&self) -> &'static str {
        "sock_recvmsg"
    }
    fn next(&mut self, k: &mut KState, cx: &Ctx) -> Step {
        if self.waited {
            return Step::Done;
        }
        self.waited = true;
        k.out.push(KReq::WakeAt {
            at: cx.now + self.ns,
            chan: self.chan,
        });
        Step::Block(self.chan)
    }
}

/// read(/dev/zero) of `bytes`: clear_user page by page, with the stock need_resched check.
fn read_zero(bytes: u64) -> Box<dyn Path> {
    Box::new(ReadZero {
        pages: bytes.div_ceil(4096),
        done: false,
    })
}

struct ReadZero {
    pages: u64,
    done: bool,
}

impl Path for ReadZero {
    fn name(&self) -> &'static str {
        "read_zero"
    }
    fn next(&mut self, k: &mut KState, _cx: &Ctx) -> Step {
        if self.done {
            return Step::Done;
        }
        self.done = true;
        LoopStep::plain(
            "read_zero",
            self.pages,
            k.c.page_copy,
            smallvec![point(Point::ReadZero, 1)],
        )
    }
}

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

    /// Queue the command's next batch of work; false when it has nothing more to do.
    fn next_batch(&mut self, cx: &mut ProgCx) -> bool {
        let stage = self.stage;
        self.stage += 1;
        let reg = self.reg.clone();
        let o = &mut self.ops;
        match self.spec.clone() {
            CommandSpec::MakeKernel {
                jobs,
                objects,
                headers,
                cc_ms,
                tree_files,
                cc1_mib,
            } => {
                if stage == 0 {
                    // The source tree is on disk, not cached.
                    let mut r = reg.borrow_mut();
                    for _ in 0..tree_files {
                        let kb = cx.rng.gen_range(2..40);
                        let f = cx.st.mm.existing_file(kb / 4 + 1);
                        r.add("src", f);
                    }
                    o.grow(300);
                    return true;
                }
                let spawned = stage - 1;
                if spawned < objects {
                    // make: keep `jobs` compilers running.
                    o.push(move |_| Some(Action::WaitChildrenBelow(jobs)));
                    let r = reg.clone();
                    o.spawn(move |cx| {
                        let (lo, hi) = cc_ms;
                        let ms = cx.rng.gen_range(lo..=hi);
                        let srcs = r.borrow().get("src").to_vec();
                        let picks: Vec<u32> = (0..headers + 1)
                            .map(|_| srcs[cx.rng.gen_range(0..srcs.len())])
                            .collect();
                        let shape = match cc1_mib {
                            None => KERNEL_CC1,
                            Some((lo, hi)) => Cc1 {
                                rss_pages: cx.rng.gen_range(lo..=hi) * 256,
                                obj_kb: KERNEL_CC1.obj_kb,
                                touch_ns: Some(CC1_TOUCH_NS),
                            },
                        };
                        TaskSpec::user("cc1", Box::new(Cc::new(picks, ms, shape, "objs", r.clone())))
                    });
                    return true;
                }
                if spawned == objects {
                    o.push(|_| Some(Action::WaitChildren));
                    // Link vmlinux and build bzImage: read the objects, ~8 s of ld + gzip.
                    let objs = reg.borrow().get("objs").to_vec();
                    for f in objs {
                        o.read(f, 16 * 1024);
                    }
                    o.grow(4000);
                    o.compute(8_000_000_000);
                    o.create_write(&reg, "objs", 3 << 20, 64 * 1024);
                    return true;
                }
                false
            }
            CommandSpec::MakeClean | CommandSpec::RmRf { .. } => {
                if stage > 0 {
                    return false;
                }
                let group = match &self.spec {
                    CommandSpec::RmRf { group } => group.clone(),
                    _ => "objs".into(),
                };
                let files = reg.borrow_mut().take(&group);
                for (i, f) in files.into_iter().enumerate() {
                    if i % 32 == 0 {
                        // getdents of the next directory block and find/rm's own work.
                        o.compute(200_000);
                    }
                    o.lookup(f);
                    o.unlink(f);
                }
                true
            }
            CommandSpec::TarXfz {
                files,
                mean_kb,
                tarball_mb,
                gunzip_mb_s,
                group,
            } => {
                if stage == 0 {
                    o.grow(600);
                }
                if stage >= files {
                    return false;
                }
                // Per file: its share of the tarball over NFS, gunzip, creat + write.
                let kb = (cx.rng.gen_range(0.0f64..1.0).powi(3) * 4.0 * mean_kb as f64) as u64 + 1;
                o.net(tarball_mb * 1024 * 1024 / files as u64);
                o.compute(kb * 1024 * 1000 / gunzip_mb_s);
                let g: &'static str = Box::leak(group.into_boxed_str());
                o.create_write(&reg, g, kb * 1024, 10 * 1024);
                true
            }
            CommandSpec::CatOld { mb, file_kb } => {
                let file_kb = file_kb.max(4);
                if u64::from(stage) >= mb * 1024 / file_kb {
                    return false;
                }
                let pages = file_kb / 4;
                let f = cx.st.mm.existing_file(pages);
                cx.st.dcache.looked_up_once();
                o.read(f, pages * 4096);
                o.push(move |cx| {
                    if let Some(r) = cx.st.mm.files.get_mut(&f) {
                        r.in_use = false;
                    }
                    None
                });
                true
            }
            CommandSpec::Updatedb { files, nights } => {
                // A chunk of names per stage keeps the queue short.
                const CHUNK: u64 = 1024;
                if files == 0 {
                    return false;
                }
                let chunks = files.div_ceil(CHUNK);
                let (night, chunk) = (u64::from(stage) / chunks, u64::from(stage) % chunks);
                if night >= u64::from(nights) {
                    return false;
                }
                if chunk == 0 {
                    o.grow(100);
                }
                for nth in chunk * CHUNK..((chunk + 1) * CHUNK).min(files) {
                    o.push(move |cx| Some(Action::Syscall(sys_lstat_tree(cx.st, night == 0, nth))));
                }
                true
            }
            CommandSpec::Dd { mb, bs_kb, group } => {
                if stage == 0 {
                    o.grow(bs_kb / 4 + PROGRAM_PAGES);
                    let g: &'static str = Box::leak(group.into_boxed_str());
                    let cur = o.create(&reg, g, mb * 256);
                    for _ in 0..mb * 1024 / bs_kb {
                        o.push(move |_| Some(Action::Syscall(read_zero(bs_kb * 1024))));
                        let c = cur.clone();
                        o.push(move |_| Some(Action::Syscall(sys_write(c.get(), bs_kb * 1024))));
                    }
                    return true;
                }
                false
            }
            CommandSpec::CvsCo { files, kb, group } => {
                if stage > 0 {
                    return false;
                }
                o.grow(500);
                let g: &'static str = Box::leak(group.into_boxed_str());
                for _ in 0..files {
                    o.net(kb * 1024);
                    o.compute(2_000_000);
                    o.create_write(&reg, g, kb * 1024, 8 * 1024);
                }
                true
            }
            CommandSpec::Make { objects, cc_ms, group } => {
                if stage < objects {
                    o.push(|_| Some(Action::WaitChildren));
                    let r = reg.clone();
                    let g: &'static str = Box::leak(group.into_boxed_str());
                    o.spawn(move |_| {
                        let srcs = r.borrow().get(g).to_vec();
                        TaskSpec::user(
                            "cc1",
                            Box::new(Cc::new(
                                srcs.into_iter().take(3).collect(),
                                cc_ms,
                                DBENCH_CC1,
                                g,
                                r.clone(),
                            )),
                        )
                    });
                    return true;
                }
                if stage == objects {
                    o.push(|_| Some(Action::WaitChildren));
                    return true;
                }
                false
            }
            CommandSpec::Dbench { clients, group } => {
                if stage == 0 {
                    for i in 0..clients {
                        let r = reg.clone();
                        let g: &'static str = Box::leak(format!("{group}{i}").into_boxed_str());
                        o.spawn(move |_| TaskSpec::user("dbench", Box::new(DbenchClient::new(g, r))));
                    }
                    o.push(|_| Some(Action::WaitChildren));
                    return true;
                }
                false
            }
            CommandSpec::Iozone { file_mb, record_kb } => super::iozone::refill(o, &reg, stage, file_mb, record_kb),
            CommandSpec::Sysbench(f) => {
                let phase = match stage {
                    0 => Phase::Prepare,
                    1 => Phase::Run,
                    _ => return false,
                };
                o.spawn(move |_| TaskSpec::user("sysbench", Box::new(Sysbench::new(f, phase, reg))));
                o.push(|_| Some(Action::WaitChildren));
                true
            }
            CommandSpec::Sync => {
                if stage > 0 {
                    return false;
                }
                o.push(|cx| Some(Action::Syscall(sys_sync(cx.st.kthreads.kjournald))));
                true
            }
            CommandSpec::Idle { ms } => {
                if stage > 0 {
                    return false;
                }
                o.push(move |_| Some(Action::Sleep(ms * 1_000_000)));
                true
            }
            CommandSpec::Parallel(cmds) => {
                if stage > 0 {
                    return false;
                }
                for c in cmds {
                    let r = reg.clone();
                    o.spawn(move |_| {
                        let comm = c.label().split_whitespace().next().unwrap_or("sh").to_string();
                        TaskSpec::user(comm, Box::new(Cmd::new(c, r)))
                    });
                }
                o.push(|_| Some(Action::WaitChildren));
                true
            }
            CommandSpec::StressKernel { runs } => {
                if stage > 0 {
                    return false;
                }
                let stop = Rc::new(Cell::new(false));
                for t in StressTest::ALL {
                    let stop = stop.clone();
                    let main = t == StressTest::NfsCompile;
                    let n = if main { runs } else { t.ctcs_runs() };
                    o.spawn(move |_| TaskSpec::user(t.driver(), Box::new(RunTest::new(t, stop, n, main))));
                }
                o.push(|_| Some(Action::WaitChildren));
                true
            }
            CommandSpec::CpuHogs { tasks } => {
                if stage > 0 {
                    return false;
                }
                super::hogs::spawn_all(o, tasks, cx.now);
                true
            }
            CommandSpec::Video { fps, decode_us, x_us } => {
                if stage > 0 {
                    return false;
                }
                super::video::spawn(o, fps, decode_us * 1_000, x_us * 1_000, cx.now);
                o.push(|_| Some(Action::WaitChildren));
                true
            }
            CommandSpec::MemHog { mb, passes } => {
                if stage == 0 {
                    // Allocate in 4 MiB steps (page faults), touching as it goes.
                    for _ in 0..mb / 4 {
                        o.grow(1024);
                        o.compute(20_000_000);
                    }
                    return true;
                }
                if stage > passes {
                    return false;
                }
                o.push(|cx| {
                    cx.st.mm.reference(cx.mm);
                    Some(Action::Compute(1_000_000_000))
                });
                true
            }
        }
    }
}

/// A program that queues its work a batch at a time (its [`Program`] impl below runs it).
pub(crate) trait Batches {
    fn ops(&mut self) -> &mut Ops;
    /// Queue the next batch of work; false when there is nothing more to do.
    fn refill(&mut self, cx: &mut ProgCx) -> bool;
}

impl Batches for Cmd {
    fn ops(&mut self) -> &mut Ops {
        &mut self.ops
    }
    fn refill(&mut self, cx: &mut ProgCx) -> bool {
        self.next_batch(cx)
    }
}

/// Every [`Batches`] program runs the same way: its queue's next action, refilled as it
/// runs dry; it exits once it has nothing more to do.
impl<T: Batches> Program for T {
    fn next(&mut self, cx: &mut ProgCx) -> Action {
        loop {
            if let Some(a) = self.ops().pop(cx) {
                return a;
            }
            if !self.refill(cx) {
                return Action::Exit;
            }
        }
    }
}

/// A compiler process's shape: resident pages, object size, and how often its compute
/// touches its whole working set again (None: never).
#[derive(Clone, Copy, Debug)]
struct Cc1 {
    rss_pages: u64,
    obj_kb: u64,
    touch_ns: Option<Nanos>,
}

/// Resident pages of a cc1 compiling a 2.4 kernel file (6 MB) and its object (16 KB):
/// an estimate for GCC 2.95 at -O2 (parse trees of the file and its ~40 headers plus RTL of
/// one function at a time); no measurement from the time was found. Shared by every variant.
const KERNEL_CC1: Cc1 = Cc1 {
    rss_pages: 1500,
    obj_kb: 16,
    touch_ns: None,
};
/// The same for dbench's few small files (4 MB, 8 KB objects).
const DBENCH_CC1: Cc1 = Cc1 {
    rss_pages: 1000,
    obj_kb: 8,
    touch_ns: None,
};
/// A sized compiler (`cc1_mib`) touches its working set again each O(1) default timeslice
/// of compute it gets (DEF_TIMESLICE 100 ms, kernel-facts.md): between two of its slices the
/// other jobs ran, and reclaim may have sent its pages to swap.
const CC1_TOUCH_NS: Nanos = 100_000_000;

/// A compiler process: read headers and source, compute, write the object, exit.
struct Cc {
    ops: Ops,
}

impl Cc {
    fn new(files: Vec<u32>, ms: u64, shape: Cc1, group: &'static str, reg: Reg) -> Self {
        let mut o = Ops::default();
        let rss = shape.rss_pages;
        o.grow(rss / 4);
        for f in files {
            o.lookup(f);
            o.read(f, 64 * 1024);
        }
        // cc1's working set grows while it compiles.
        o.grow(rss - rss / 4);
        let mut left = ms * 1_000_000;
        match shape.touch_ns {
            None => o.compute(left),
            Some(slice) => {
                while left > 0 {
                    let n = left.min(slice);
                    left -= n;
                    o.push(|cx| Some(Action::Syscall(crate::mm::swap_in::touch_working_set(cx.mm))));
                    o.compute(n);
                }
            }
        }
        o.create_write(&reg, group, shape.obj_kb * 1024, 16 * 1024);
        Cc { ops: o }
    }
}

impl Program for Cc {
    fn next(&mut self, cx: &mut ProgCx) -> Action {
        self.ops.pop(cx).unwrap_or(Action::Exit)
    }
}

/// What one dbench client does: dbench 1.x replays `client.txt`, a NetBench client's trace,
/// once per client. Its README (Tridgell, kept unchanged since dbench 1.0): the trace holds
/// "the 90 thousand operations that a netbench client does", the client writes "over a
/// hundred megabytes of data ... in a few minutes", "nearly 90% of the read/write IO
/// operations in netbench are writes", and a run needs "at least 25MB free per simulated
/// client". The 1.x trace itself is not at hand. Its shape comes from the NetBench trace
/// dbench 4 ships (`/usr/share/dbench/client.txt` of Debian's dbench 4.0, 458,344 lines),
/// measured by replaying its opens, writes, unlinks and renames (`cargo run --release -p
/// latlab-exp --example netbench_trace`; docs/fidelity.md): a
/// long-lived set of 56 files (20 MB) the client opens again and again and rewrites in place,
/// and short-lived files (created, written, deleted a few lines later).
pub struct NetBench {
    /// Bytes written: the README's "over a hundred megabytes" (its lower bound).
    pub written: u64,
    /// Lines of the trace: "90 thousand operations".
    pub lines: u64,
    /// Writes per read: "nearly 90%" of reads and writes are writes.
    pub writes_per_read: u64,
    /// Files opened: ~3,700. dbench 1.x prints a dot every 100 opens of each client; a
    /// 4-client run of 2002 (D. Sarma, linux-mm, 17 Oct 2002) printed 147.
    pub opens: u64,
    /// The long-lived files, (count, KiB), created first: the 4.x trace's set half-way
    /// through (48 documents of 254 KiB, one of 320 KiB, one of 1,824 KiB, six of 1 MiB of
    /// which five are dbench's filler files).
    pub documents: &'static [(u64, u64)],
    /// Of the opens after the first creation, those of a new short-lived file, per 1000
    /// (4.x trace: 3,142 unlinked files per 11,426 opens).
    pub temp_per_1000: u64,
    /// Of the bytes written after the first creation, those rewriting long-lived files in
    /// place, per 1000 (4.x trace: 104.5 of 190.3 MB; the rest extends new files).
    pub rewrite_per_1000: u64,
    /// CPU to parse one trace line (fgets, split, strcmp dispatch): ~4,000 instructions at
    /// ~1 per cycle on the PIII-850, ~5 us (an estimate).
    pub parse_ns: Nanos,
}

pub const NETBENCH: NetBench = NetBench {
    written: 100 << 20,
    lines: 90_000,
    writes_per_read: 9,
    opens: 3_700,
    documents: &[(48, 254), (1, 320), (1, 1824), (6, 1024)],
    temp_per_1000: 275,
    rewrite_per_1000: 549,
    parse_ns: 5_000,
};

impl NetBench {
    fn document_bytes(&self) -> u64 {
        self.documents.iter().map(|&(n, kb)| n * kb * 1024).sum()
    }
    fn document_count(&self) -> u64 {
        self.documents.iter().map(|&(n, _)| n).sum()
    }
    /// Size in bytes of long-lived file `i` (in creation order).
    fn document(&self, i: usize) -> u64 {
        let mut left = i as u64;
        for &(n, kb) in self.documents {
            if left < n {
                return kb * 1024;
            }
            left -= n;
        }
        0
    }
    /// Mean bytes a write() carries: the bytes written over the trace's writes, its reads
    /// and writes being its lines less an open and a close per file, nine in ten of them
    /// writes (100 MB / 74,340 ~ 1.4 KB).
    fn write_bytes(&self) -> u64 {
        let io = self.lines - 2 * self.opens;
        self.written / (io * self.writes_per_read / (self.writes_per_read + 1))
    }
    /// Opens after the first creation: (of a short-lived file, of a long-lived one).
    fn sessions(&self) -> (u64, u64) {
        let n = self.opens - self.document_count();
        let temp = n * self.temp_per_1000 / 1000;
        (temp, n - temp)
    }
    /// Mean bytes of a short-lived file, and rewritten per open of a long-lived one.
    fn session_bytes(&self) -> (u64, u64) {
        let rest = self.written - self.document_bytes();
        let rewrite = rest * self.rewrite_per_1000 / 1000;
        let (temp, docs) = self.sessions();
        ((rest - rewrite) / temp.max(1), rewrite / docs.max(1))
    }
}

/// One dbench client replaying [`NETBENCH`]: first its long-lived files, then opens of a new
/// short-lived file (created, written, read back one write in ten, deleted) or of a
/// long-lived one (looked up, part of it rewritten in place and read back), in the trace's
/// proportions, until it has written what the trace writes; then it deletes what it made.
/// Sizes and offsets are drawn uniformly around the trace's means.
struct DbenchClient {
    group: &'static str,
    reg: Reg,
    ops: Ops,
    stage: ClientStage,
    written: u64,
    /// Writes since the last read.
    since_read: u64,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum ClientStage {
    Start,
    /// Creating the long-lived files, the next one this: queued one at a time, as the
    /// queue runs dry, so a client never holds the whole 20 MiB's calls at once.
    Documents(usize),
    Sessions,
    Cleanup,
}

impl DbenchClient {
    fn new(group: &'static str, reg: Reg) -> Self {
        DbenchClient {
            group,
            reg,
            ops: Ops::default(),
            stage: ClientStage::Start,
            written: 0,
            since_read: 0,
        }
    }

    /// The writes (and the reads among them) of `bytes` from byte `from` of the file the
    /// cell will hold: appends or rewrites. Returns the trace lines they take.
    fn writes(&mut self, file: &Rc<Cell<u32>>, from: u64, bytes: u64, rewrite: bool) -> u64 {
        let nb = &NETBENCH;
        let chunk = nb.write_bytes();
        let (mut off, end, mut lines) = (from, from + bytes, 0);
        while off < end {
            let n = chunk.min(end - off);
            // Pages this write reaches first (a write inside the page the last one reached
            // adds none).
            let page = off.div_ceil(4096);
            let pages = (off + n).div_ceil(4096) - page;
            let c = file.clone();
            self.ops.push(move |_| {
                let f = c.get();
                Some(Action::Syscall(if rewrite {
                    sys_rewrite(f, page, pages * 4096)
                } else {
                    sys_write(f, pages * 4096)
                }))
            });
            self.since_read += 1;
            if self.since_read == nb.writes_per_read {
                self.since_read = 0;
                let c = file.clone();
                self.ops
                    .push(move |_| Some(Action::Syscall(sys_read(c.get(), off / 4096, n))));
                lines += 1;
            }
            off += n;
            lines += 1;
        }
        self.written += bytes;
        lines
    }

    /// One open of the trace after the first creation.
    fn session(&mut self, cx: &mut ProgCx) {
        let nb = &NETBENCH;
        let (temp, docs) = nb.sessions();
        let (temp_bytes, rewrite_bytes) = nb.session_bytes();
        let lines = if cx.rng.gen_range(0..temp + docs) < temp {
            // A short-lived file: creat(), written, deleted.
            let bytes = cx.rng.gen_range(0..=2 * temp_bytes);
            let cur = self.ops.create(&self.reg, self.group, bytes.div_ceil(4096));
            let lines = self.writes(&cur, 0, bytes, false);
            let (g, r) = (self.group, self.reg.clone());
            self.ops.push(move |_| {
                let f = cur.get();
                r.borrow_mut().remove(g, f);
                Some(Action::Syscall(sys_unlink(f)))
            });
            lines + 3
        } else {
            // A long-lived file: opened (path lookup), part of it rewritten.
            let which = cx.rng.gen_range(0..nb.document_count() as usize);
            let size = nb.document(which);
            let bytes = cx.rng.gen_range(0..=2 * rewrite_bytes).min(size);
            let from = cx.rng.gen_range(0..=size - bytes) & !4095;
            let cur = Rc::new(Cell::new(0));
            let (g, r, c) = (self.group, self.reg.clone(), cur.clone());
            self.ops.push(move |cx| {
                let f = *r.borrow().get(g).get(which)?;
                c.set(f);
                Some(Action::Syscall(sys_lookup(cx.st, f)))
            });
            self.writes(&cur, from, bytes, true) + 2
        };
        // The client's parsing of those lines of the trace.
        self.ops.compute(lines * nb.parse_ns);
    }
}

impl Program for DbenchClient {
    fn next(&mut self, cx: &mut ProgCx) -> Action {
        loop {
            if let Some(a) = self.ops.pop(cx) {
                return a;
            }
            match self.stage {
                ClientStage::Start => {
                    self.stage = ClientStage::Documents(0);
                    self.ops.grow(200);
                }
                ClientStage::Documents(i) if i < NETBENCH.document_count() as usize => {
                    self.stage = ClientStage::Documents(i + 1);
                    let bytes = NETBENCH.document(i);
                    let cur = self.ops.create(&self.reg, self.group, bytes.div_ceil(4096));
                    let lines = self.writes(&cur, 0, bytes, false) + 2;
                    self.ops.compute(lines * NETBENCH.parse_ns);
                }
                ClientStage::Documents(_) => self.stage = ClientStage::Sessions,
                ClientStage::Sessions if self.written < NETBENCH.written => self.session(cx),
                ClientStage::Sessions => {
                    self.stage = ClientStage::Cleanup;
                    for f in self.reg.borrow_mut().take(self.group) {
                        self.ops.unlink(f);
                    }
                }
                ClientStage::Cleanup => return Action::Exit,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn netbench_figures_follow_from_the_sources() {
        let nb = &NETBENCH;
        // 56 long-lived files, 20 MiB; 90,000 lines less 2 x 3,700 opens and closes, nine
        // in ten of them writes, carry 100 MB: ~1.4 KB a write.
        assert_eq!((nb.document_count(), nb.document_bytes() >> 10), (56, 20_480));
        assert_eq!(nb.write_bytes(), 1410);
        assert_eq!(nb.document(0), 254 * 1024);
        assert_eq!(nb.document(49), 1824 * 1024);
        assert_eq!(nb.document(55), 1024 * 1024);
        // The other 3,644 opens: 27.5 % new short-lived files.
        assert_eq!(nb.sessions(), (1002, 2642));
        let (temp, rewrite) = nb.session_bytes();
        // The 80 MiB after the first creation: 55 % rewrites, the rest new files.
        assert_eq!((temp >> 10, rewrite >> 10), (36, 17));
    }
}
