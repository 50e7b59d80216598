//! `make` (GNU make 3.79 of the era) running the compiler: `make -jN bzImage` of a kernel
//! tree (seed 000's script, its sizes in workloads/seed000-script.toml) keeping N `cc1`s
//! running, then the link; and the small build of dbench's sources, one `cc1` at a time. A
//! compiler reads its headers and source, grows to its resident size, computes and writes
//! its object.

use crate::workload::ops::{Ops, Reg};
use crate::workload::syscall::Syscall;
use crate::workload::{Action, ProgCx, Program, TaskSpec};
use latlab_core::Nanos;
use rand::Rng as _;

/// `make -jN bzImage` (`make-kernel`): at `stage` 0 the source tree (on disk, not cached),
/// then one compiler a stage, then the link; false when it is done.
#[allow(clippy::too_many_arguments)]
pub(crate) fn kernel(
    o: &mut Ops,
    reg: &Reg,
    stage: u32,
    cx: &mut ProgCx,
    (jobs, objects, headers): (u32, u32, u32),
    cc_ms: (u64, u64),
    tree_files: u32,
    cc1_mib: Option<(u64, u64)>,
) -> bool {
    if stage == 0 {
        // The source tree is on disk, not cached.
        let mut r = reg.borrow_mut();
        for _ in 0..tree_files {
            let kb = cx.rng.gen_range(2..40);
            let f = cx.file_on_disk(kb / 4 + 1);
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
        o.create_write(reg, "objs", 3 << 20, 64 * 1024);
        return true;
    }
    false
}

/// A small build (`make`): one compiler a stage, each waited for; false when it is done.
pub(crate) fn small(o: &mut Ops, reg: &Reg, stage: u32, objects: u32, cc_ms: u64, group: String) -> bool {
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
                    o.call(Syscall::TouchWorkingSet);
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
