//! Red Hat's stress-kernel (VA Cerberus ctcs 1.2.15 with Red Hat's tests), as Clark Williams
//! ran it for the figures of seed 002 ("Linux Scheduler Latency", March 2002, quoted on
//! eLinux.org's "Preemption Instrumentation" page): "I set up stress-kernel to run the
//! following programs: NFS-COMPILE, TTCP, FIFOS_MMAP, P3_FPU, FS, CRASHME".
//!
//! ctcs starts one `runtest` loop per test line (`bg N LABEL driver`), all at once; each runs
//! its driver N times, one run after another (sconklin/ctcs `runin/runtest`). The model runs
//! the six loops side by side until NFS-COMPILE has finished its runs, then stops the others.
//! What the tests do comes from Williams' one-line descriptions and the package's sources
//! (clearlinux-pkgs/stress-kernel: spec changelog and patches); what those leave open (most
//! sizes) is estimated below, each estimate next to its constant. The memory each test
//! reserves in ctcs's `make-tcf.sh` (NFS 48, TTCP 1, FIFO_MMAP 206, P3_FPU 10, FS 352,
//! CRASHME 1 MB) bounds the sizes.

use super::ops::{Ops, Reg};
use super::{Action, ProgCx, Program, TaskSpec};
use crate::fs::nfs::NfsFile;
use crate::workload::syscall::Syscall;
use latlab_core::Nanos;
use rand::Rng as _;
use std::cell::{Cell, RefCell};
use std::rc::Rc;

/// One of Williams' six tests (ctcs labels).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StressTest {
    NfsCompile,
    Ttcp,
    FifosMmap,
    P3Fpu,
    Fs,
    Crashme,
}

impl StressTest {
    pub const ALL: [StressTest; 6] = [
        StressTest::NfsCompile,
        StressTest::Ttcp,
        StressTest::FifosMmap,
        StressTest::P3Fpu,
        StressTest::Fs,
        StressTest::Crashme,
    ];
    /// Runs ctcs's default test file gives each (`bg N`: make-tcf.sh of January 2002, the
    /// same counts in a hell-hound file posted to LKML in May 2001).
    pub fn ctcs_runs(self) -> u32 {
        match self {
            StressTest::NfsCompile => 4,
            StressTest::Ttcp => 1024,
            StressTest::FifosMmap | StressTest::P3Fpu | StressTest::Crashme => 256,
            StressTest::Fs => 64,
        }
    }
    /// The driver script ctcs runs.
    pub fn driver(self) -> &'static str {
        match self {
            StressTest::NfsCompile => "nfstest.sh",
            StressTest::Ttcp => "ttcp_driver.sh",
            StressTest::FifosMmap => "dt_driver.sh",
            StressTest::P3Fpu => "P3-stress.sh",
            StressTest::Fs => "fs-test-driver.sh",
            StressTest::Crashme => "crashme_driver.sh",
        }
    }
}

/// The kernel tree nfstest.sh copies and builds (`/usr/src/linux-2.4`): the figures of
/// seed 000's 2.4.10 tarball, ~10,000 files of 11 KB mean, for the 2.4.17 tree of the same
/// size class.
const TREE_FILES: u32 = 10_000;
const TREE_MEAN_KB: u64 = 11;
/// Objects of a 2.4 i386 `make vmlinux` (as seed 000's build), their compile times (ms of
/// CPU) and headers read each.
const OBJECTS: u32 = 480;
const CC_MS: (u64, u64) = (200, 1000);
const HEADERS: u32 = 40;
/// make's parallelism: process listings of running stress-kernel show three gcc groups
/// under nfstest.sh's make at once (LKML, B. Matthews, 25 Sep 2001); the -j value itself
/// was not found.
const MAKE_JOBS: u32 = 3;
/// Linking vmlinux (no bzImage, per the spec's changelog "Make nfstest build vmlinux, not
/// bzImage"): seed 000's ~8 s of ld + gzip less the gzip, ~5 s (an estimate).
const LINK_MS: u64 = 5_000;
/// NFS transfer size: 8 KiB, the largest rsize/wsize 2.4's NFS client uses over UDP by
/// default (the mount options were not found).
const NFS_IO: u64 = 8192;
/// Resident pages and object KiB of a cc1 compiling a kernel file: seed 000's estimate.
const CC1: (u64, u64) = (1500, 16);

/// ttcp's defaults (`buflen = 8 * 1024`, `nbuf = 2048`, TCP): the driver's flags were not
/// found, so the program's defaults: 16 MiB over loopback TCP per run.
const TTCP_BUF: u64 = 8192;
const TTCP_NBUF: u64 = 2048;

/// dt's file and FIFO transfer per run: 200 MiB, the 206 MB ctcs reserves for FIFO_MMAP less
/// dt's own few MB (the dt command line was not found).
const DT_MB: u64 = 200;
/// dt fills and verifies its pattern through the mapping at memory speed: two passes over
/// the file at ~400 MB/s (PC133 SDRAM), an estimate.
const DT_VERIFY_NS_PER_MB: Nanos = 5_000_000;

/// P3-stress.sh writes its data files (`makedatafiles`; ctcs reserves 10 MB for P3_FPU),
/// then runs its floating-point matrix program: 8 MiB of files and 60 s of CPU a run
/// (estimates; one measured run of the suite on a 2004 SMP box averaged 94 s).
const P3_DATA_KB: u64 = 8 * 1024;
const P3_CPU_NS: Nanos = 60_000_000_000;

/// fs-test-driver.sh's sub-tests, one after another. `holey`: files with holes, truncated
/// and extended; two 64 MiB extents around a hole (ctcs reserves 352 MB for FS; sizes not
/// found). `iogen`/`doio`: four 32 MiB files under 2,000 random 8 KiB reads and rewrites
/// (estimate). `exorcist` ("Ingo's directory hammer"): 2,000 small files created and
/// removed (estimate). `truncate` (from the package's patch): a 2 MiB file from
/// /dev/urandom, then `ftruncate(fd, pos); fstat()` for every pos from 2 MiB down to 0.
/// `ftruncate64` (from the package's patch): 1,000 open/ftruncate64/close/unlink cycles.
const HOLEY_EXTENT_KB: u64 = 64 * 1024;
const DOIO_FILES: u64 = 4;
const DOIO_FILE_KB: u64 = 32 * 1024;
const DOIO_OPS: u64 = 2_000;
const EXORCIST_FILES: u64 = 2_000;
const TRUNCATE_BYTES: u64 = 2 * 1024 * 1024;
const FTRUNCATE64_CYCLES: u64 = 1_000;

/// crashme's tries a run: VA's own ctcs crashme test runs `crashme +1024 <seed> 1000` (the
/// Red Hat driver's arguments were not found). A try fills 1,024 random bytes (~5 us) and
/// jumps into them, which faults within a few instructions.
const CRASHME_TRIES: u64 = 1_000;
const CRASHME_FILL_NS: Nanos = 5_000;

/// stress-kernel as ctcs starts it: one `runtest` loop per test, side by side, waited for;
/// NFS-COMPILE's `runs` runs end the others.
pub(crate) fn spawn_all(o: &mut Ops, runs: u32) {
    let stop = Rc::new(Cell::new(false));
    for t in StressTest::ALL {
        let stop = stop.clone();
        let main = t == StressTest::NfsCompile;
        let n = if main { runs } else { t.ctcs_runs() };
        o.spawn(move |_| TaskSpec::user(t.driver(), Box::new(RunTest::new(t, stop, n, main))));
    }
    o.push(|_| Some(Action::WaitChildren));
}

/// ctcs's `runtest` loop of one test: its runs one after another, until it has done them or
/// the main test (NFS-COMPILE, whose runs end the measurement) has done its own.
pub struct RunTest {
    test: StressTest,
    ops: Ops,
    reg: Reg,
    stop: Rc<Cell<bool>>,
    /// Runs to make.
    runs: u32,
    /// This test's end ends the others.
    main: bool,
    done: u32,
    /// Files a test keeps from run to run (the kernel tree, dt's file).
    kept: Rc<RefCell<Vec<u32>>>,
}

impl RunTest {
    pub fn new(test: StressTest, stop: Rc<Cell<bool>>, runs: u32, main: bool) -> Self {
        RunTest {
            test,
            ops: Ops::default(),
            reg: Reg::default(),
            stop,
            runs,
            main,
            done: 0,
            kept: Rc::default(),
        }
    }

    /// Queue one run of the test.
    fn run(&mut self, cx: &mut ProgCx) {
        match self.test {
            StressTest::NfsCompile => self.nfs_compile(cx),
            StressTest::Ttcp => {
                for _ in 0..TTCP_NBUF {
                    self.ops.call(Syscall::TcpSend { bytes: TTCP_BUF });
                    self.ops.call(Syscall::TcpRecv { bytes: TTCP_BUF });
                }
            }
            StressTest::FifosMmap => self.dt(),
            StressTest::P3Fpu => {
                let reg = self.reg.clone();
                self.ops.create_write(&reg, "p3", P3_DATA_KB * 1024, 64 * 1024);
                self.ops.compute(P3_CPU_NS);
                self.ops.push(move |_| {
                    let f = reg.borrow_mut().take("p3");
                    f.first().map(|&file| Action::Call(Syscall::Unlink { file }))
                });
            }
            StressTest::Fs => self.fs(),
            StressTest::Crashme => {
                self.ops.spawn(|_| TaskSpec::user("crashme", crashme()));
                self.ops.push(|_| Some(Action::WaitChildren));
            }
        }
    }

    /// nfstest.sh: `cp -pRd` of the kernel tree onto the loopback NFS mount, `make vmlinux` on
    /// the copy, then the copy removed.
    fn nfs_compile(&mut self, cx: &mut ProgCx) {
        if self.kept.borrow().is_empty() {
            // The tree on the server's disk, not cached.
            let mut kept = self.kept.borrow_mut();
            for _ in 0..TREE_FILES {
                let kb = (cx.rng.gen_range(0.0f64..1.0).powi(3) * 4.0 * TREE_MEAN_KB as f64) as u64 + 1;
                kept.push(cx.file_on_disk(kb.div_ceil(4)));
            }
        }
        let copies: Rc<RefCell<Vec<NfsFile>>> = Rc::default();
        for &src in self.kept.borrow().iter() {
            let pages = cx.file_pages(src).unwrap_or(1);
            self.ops.lookup(src);
            self.ops.read(src, pages * 4096);
            nfs_create_write(&mut self.ops, &copies, pages * 4096);
        }
        let objects: Rc<RefCell<Vec<NfsFile>>> = Rc::default();
        for _ in 0..OBJECTS {
            self.ops.push(|_| Some(Action::WaitChildrenBelow(MAKE_JOBS)));
            let (srcs, objs) = (copies.clone(), objects.clone());
            self.ops.spawn(move |cx| {
                let all = srcs.borrow();
                let picks: Vec<(NfsFile, u64)> = (0..=HEADERS)
                    .map(|_| {
                        let f = all[cx.rng.gen_range(0..all.len())];
                        (f, cx.file_pages(f.server).unwrap_or(1))
                    })
                    .collect();
                let ms = cx.rng.gen_range(CC_MS.0..=CC_MS.1);
                TaskSpec::user("cc1", Box::new(NfsCc::new(picks, ms, objs.clone())))
            });
        }
        self.ops.push(|_| Some(Action::WaitChildren));
        // ld reads every object, writes vmlinux.
        for i in 0..OBJECTS as usize {
            let objs = objects.clone();
            nfs_read_all(&mut self.ops, CC1.1 / 4, move || objs.borrow().get(i).copied());
        }
        self.ops.compute(LINK_MS * 1_000_000);
        nfs_create_write(&mut self.ops, &objects, 3 << 20);
        // The copy, its objects and vmlinux removed over NFS (`rm -rf`), one unlink each.
        for (list, n) in [(copies, TREE_FILES), (objects, OBJECTS + 1)] {
            for _ in 0..n {
                let l = list.clone();
                self.ops.push(move |_| {
                    let f = l.borrow_mut().pop()?;
                    Some(Action::Call(Syscall::NfsUnlink { file: f }))
                });
            }
        }
    }

    /// dt through a FIFO, then through a mapping of its file.
    fn dt(&mut self) {
        let pages = DT_MB * 256;
        for _ in 0..pages {
            self.ops.call(Syscall::PipeWrite { bytes: 4096 });
            self.ops.call(Syscall::PipeRead { bytes: 4096 });
        }
        // open(O_CREAT|O_TRUNC) of the same file each run: the last run's file truncated.
        let kept = self.kept.clone();
        self.ops.push(move |_| {
            let first = kept.borrow().first().copied();
            Some(Action::Call(match first {
                Some(file) => Syscall::Ftruncate { file, pages: 0 },
                None => Syscall::Creat {
                    pages,
                    ret: Box::new(move |f| kept.borrow_mut().push(f)),
                },
            }))
        });
        // mmap, touch every page (a fault each), fill and verify the pattern, munmap; then
        // the pages, dirty in the page cache, are written back (fsync).
        self.ops.grow(pages);
        self.ops.compute(DT_MB * DT_VERIFY_NS_PER_MB);
        self.ops.call(Syscall::Munmap { pages });
        let kept = self.kept.clone();
        for _ in 0..pages / 16 {
            let kept = kept.clone();
            self.ops.push(move |_| {
                Some(Action::Call(Syscall::Write {
                    file: *kept.borrow().first()?,
                    bytes: 64 * 1024,
                }))
            });
        }
    }

    /// fs-test-driver.sh's sub-tests in order.
    fn fs(&mut self) {
        let reg = self.reg.clone();
        // The last run's files are gone (each sub-test removes its own).
        reg.borrow_mut().take("fs");
        // holey: an extent, a hole, an extent; truncated into the hole, extended, removed.
        let file = self.ops.create(&reg, "fs", 2 * HOLEY_EXTENT_KB / 4);
        for _ in 0..2 * HOLEY_EXTENT_KB / 64 {
            let f = file.clone();
            self.ops.push(move |_| {
                Some(Action::Call(Syscall::Write {
                    file: f.get(),
                    bytes: 64 * 1024,
                }))
            });
        }
        let f = file.clone();
        self.ops.push(move |_| {
            Some(Action::Call(Syscall::Ftruncate {
                file: f.get(),
                pages: HOLEY_EXTENT_KB / 4,
            }))
        });
        self.ops
            .push(move |_| Some(Action::Call(Syscall::Unlink { file: file.get() })));
        // iogen/doio: random reads and rewrites over a few files.
        let files: Vec<Rc<Cell<u32>>> = (0..DOIO_FILES)
            .map(|_| {
                let f = self.ops.create(&reg, "fs", DOIO_FILE_KB / 4);
                for _ in 0..DOIO_FILE_KB / 64 {
                    let c = f.clone();
                    self.ops.push(move |_| {
                        Some(Action::Call(Syscall::Write {
                            file: c.get(),
                            bytes: 64 * 1024,
                        }))
                    });
                }
                f
            })
            .collect();
        for i in 0..DOIO_OPS {
            let f = files[(i % DOIO_FILES) as usize].clone();
            self.ops.push(move |cx| {
                let page = cx.rng.gen_range(0..DOIO_FILE_KB / 4 - 2);
                let file = f.get();
                Some(Action::Call(if cx.rng.gen_bool(0.5) {
                    Syscall::Rewrite {
                        file,
                        page,
                        bytes: 8192,
                    }
                } else {
                    Syscall::Read {
                        file,
                        page,
                        bytes: 8192,
                    }
                }))
            });
        }
        for f in files {
            self.ops
                .push(move |_| Some(Action::Call(Syscall::Unlink { file: f.get() })));
        }
        // exorcist: small files made and removed in one directory.
        for _ in 0..EXORCIST_FILES {
            let f = self.ops.create(&reg, "fs", 1);
            let g = f.clone();
            self.ops.push(move |_| {
                Some(Action::Call(Syscall::Write {
                    file: g.get(),
                    bytes: 4096,
                }))
            });
            self.ops
                .push(move |_| Some(Action::Call(Syscall::Unlink { file: f.get() })));
        }
        // truncate: 2 MiB from /dev/urandom in 1 KiB blocks (dd bs=1024), then the loop.
        let file = self.ops.create(&reg, "fs", TRUNCATE_BYTES / 4096);
        for _ in 0..TRUNCATE_BYTES / 1024 {
            let f = file.clone();
            self.ops.call(Syscall::UrandomRead { bytes: 1024 });
            self.ops.push(move |_| {
                Some(Action::Call(Syscall::Write {
                    file: f.get(),
                    bytes: 1024,
                }))
            });
        }
        let f = file.clone();
        self.ops
            .spawn(move |_| TaskSpec::user("truncate", truncate_loop(f.get())));
        self.ops.push(|_| Some(Action::WaitChildren));
        self.ops
            .push(move |_| Some(Action::Call(Syscall::Unlink { file: file.get() })));
        // ftruncate64: files made sparse past 4 GiB (no blocks) and removed.
        for _ in 0..FTRUNCATE64_CYCLES {
            let f = self.ops.create(&reg, "fs", 0);
            self.ops.call(Syscall::Setattr);
            self.ops
                .push(move |_| Some(Action::Call(Syscall::Unlink { file: f.get() })));
        }
        // The driver syncs (a process listing of September 2001 shows fs-test-driver.sh
        // waiting in `sync`; when in the run it does was not found: at its end here).
        self.ops.call(Syscall::Sync);
    }
}

/// creat() of a new file of `bytes` on the NFS mount, which joins `list`, and its writes, one
/// wsize a call (the NFS twin of `Ops::create_write`).
fn nfs_create_write(ops: &mut Ops, list: &Rc<RefCell<Vec<NfsFile>>>, bytes: u64) {
    let cur = Rc::new(Cell::new(None));
    let (l, made) = (list.clone(), cur.clone());
    ops.call(Syscall::NfsCreate {
        pages: bytes.div_ceil(4096),
        ret: Box::new(move |f| {
            l.borrow_mut().push(f);
            made.set(Some(f));
        }),
    });
    let mut left = bytes;
    while left > 0 {
        let n = left.min(NFS_IO);
        left -= n;
        let c = cur.clone();
        ops.push(move |_| {
            Some(Action::Call(Syscall::NfsWrite {
                file: c.get()?,
                bytes: n,
            }))
        });
    }
}

/// read() of the first `pages` of the NFS file `file()` names when the reads run, one rsize a
/// call.
fn nfs_read_all(ops: &mut Ops, pages: u64, file: impl Fn() -> Option<NfsFile> + Clone + 'static) {
    for off in (0..pages).step_by((NFS_IO / 4096) as usize) {
        let f = file.clone();
        ops.push(move |_| {
            Some(Action::Call(Syscall::NfsRead {
                file: f()?,
                page: off,
                bytes: NFS_IO,
            }))
        });
    }
}

impl Program for RunTest {
    fn next(&mut self, cx: &mut ProgCx) -> Action {
        loop {
            if !self.main && self.stop.get() {
                return Action::Exit;
            }
            if let Some(a) = self.ops.pop(cx) {
                return a;
            }
            if self.done == self.runs {
                if self.main {
                    self.stop.set(true);
                }
                return Action::Exit;
            }
            self.done += 1;
            self.run(cx);
        }
    }
}

/// A cc1 of the NFS build: headers and source read over NFS, compile, object written back.
struct NfsCc {
    ops: Ops,
}

impl NfsCc {
    /// `files`: the headers and source with their sizes in pages.
    fn new(files: Vec<(NfsFile, u64)>, ms: u64, objects: Rc<RefCell<Vec<NfsFile>>>) -> Self {
        let (rss, obj_kb) = CC1;
        let mut o = Ops::default();
        o.grow(rss / 4);
        for (f, pages) in files {
            o.call(Syscall::NfsLookup { file: f });
            nfs_read_all(&mut o, pages, move || Some(f));
        }
        o.grow(rss - rss / 4);
        o.compute(ms * 1_000_000);
        nfs_create_write(&mut o, &objects, obj_kb * 1024);
        NfsCc { ops: o }
    }
}

impl Program for NfsCc {
    fn next(&mut self, cx: &mut ProgCx) -> Action {
        self.ops.pop(cx).unwrap_or(Action::Exit)
    }
}

/// A program of `rounds` rounds of two actions each (`act(cx, round, second)`), then exit.
struct Rounds<F> {
    rounds: u64,
    round: u64,
    second: bool,
    act: F,
}

fn rounds<F: FnMut(&mut ProgCx, u64, bool) -> Action + 'static>(rounds: u64, act: F) -> Box<dyn Program> {
    Box::new(Rounds {
        rounds,
        round: 0,
        second: false,
        act,
    })
}

impl<F: FnMut(&mut ProgCx, u64, bool) -> Action> Program for Rounds<F> {
    fn next(&mut self, cx: &mut ProgCx) -> Action {
        if self.round == self.rounds {
            return Action::Exit;
        }
        let a = (self.act)(cx, self.round, self.second);
        self.second = !self.second;
        if !self.second {
            self.round += 1;
        }
        a
    }
}

/// crashme: random bytes executed until they fault; the signal handler longjmps back.
fn crashme() -> Box<dyn Program> {
    rounds(CRASHME_TRIES, |_, _, fault| {
        if fault {
            Action::Call(Syscall::BadInstruction)
        } else {
            Action::Compute(CRASHME_FILL_NS)
        }
    })
}

/// truncate.c of the FS suite: `for (pos = size; pos >= 0; pos--) { ftruncate(fd, pos);
/// fstat(fd, &st); }`, a page and its block freed each time pos crosses a page boundary.
fn truncate_loop(file: u32) -> Box<dyn Program> {
    rounds(TRUNCATE_BYTES + 1, move |_, round, fstat| {
        if fstat {
            Action::Call(Syscall::Fstat)
        } else {
            Action::Call(Syscall::Ftruncate {
                file,
                pages: (TRUNCATE_BYTES - round).div_ceil(4096),
            })
        }
    })
}
