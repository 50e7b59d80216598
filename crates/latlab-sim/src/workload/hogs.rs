//! CPU-bound SCHED_OTHER tasks for the scheduler what-if (`experiments/sched-cost.toml`):
//! seed 002's "Duration of scheduling grows with number of processes — iteration over all
//! runnable processes to find maximal goodness", set against the O(1) scheduler's bitmap.
//! Each hog is a `for (;;);` loop in user space that never enters the kernel, so every
//! latency realfeel sees beside them comes from interrupts and schedule() itself (its scan
//! in 2.4's kernel/sched.c, its bitmap in 2.6.11's).
//!
//! The shell's command forks `tasks` hogs, which sleep until [`RELEASE_NS`] after the
//! command started and then all run at once (a start barrier, as benchmark harnesses such
//! as hackbench start their workers): the forks themselves meet almost nothing runnable, and
//! once released all N are on the runqueue together whatever the scheduler's fork policy
//! (2.6's child-runs-first would otherwise run each hog's first slice before the next fork).

use super::ops::Ops;
use super::{Action, ProgCx, Program, TaskSpec};
use latlab_core::Nanos;

/// When the hogs start running, after their command started: one simulated second.
/// Arithmetic: the shell forks 64 per dispatch round and then runs a tick of user time
/// (cpu/mod.rs), 10 ms at HZ 100, so [`MAX_TASKS`] forks take at most 4000 / 64 x 10 ms =
/// 0.63 s before scheduling overheads; a second leaves room for them.
pub const RELEASE_NS: Nanos = 1_000_000_000;

/// Most hogs one command may start (so the forks finish before [`RELEASE_NS`]).
pub const MAX_TASKS: u32 = 4000;

/// Fork `tasks` hogs released at `start + RELEASE_NS`, then wait for them (forever: the
/// run ends at the experiment's `max_seconds`).
pub(crate) fn spawn_all(o: &mut Ops, tasks: u32, start: Nanos) {
    let release = start + RELEASE_NS;
    for _ in 0..tasks {
        o.spawn(move |_| TaskSpec::user("hog", Box::new(Hog { release, step: 0 })));
    }
    o.push(|_| Some(Action::WaitChildren));
}

/// One hog: nanosleep() until the release, then `for (;;);`.
struct Hog {
    release: Nanos,
    step: u8,
}

impl Program for Hog {
    fn next(&mut self, cx: &mut ProgCx) -> Action {
        self.step = self.step.saturating_add(1);
        match self.step {
            // nanosleep()'s entry and exit, which `Action::Sleep` does not charge: the
            // machine's system-call cost, in which interrupts are enabled. (Without it the
            // forked hogs, each run in turn to go to sleep, would chain their schedule()
            // calls back to back with no moment for a pending interrupt.)
            1 => return Action::Compute(cx.m.syscall_ns),
            2 if cx.now < self.release => return Action::Sleep(self.release - cx.now),
            _ => {}
        }
        // An endless user-mode loop: one burst longer than any run.
        Action::Compute(Nanos::MAX / 4)
    }
}
