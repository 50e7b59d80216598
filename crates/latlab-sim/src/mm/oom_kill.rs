//! The OOM killer of 2.6.9 (mm/oom_kill.c as of October 2004: the version Andrea
//! Arcangeli's "oom killer (Core)" patch of 2 Dec 2004 removes lines from, revision 1.31 of
//! 14 Oct 2004; `badness` and `select_bad_process` read in 2.6.11,
//! `Antonio-Zhou/Linux-2.6.11`, which keeps them). 2.6.9's `try_to_free_pages` calls
//! `out_of_memory()` when its priority loop (12 .. 0) ends without reclaiming
//! SWAP_CLUSTER_MAX pages, i.e. once RAM and swap are both full:
//!
//! ```text
//! out_of_memory(gfp_mask):                      throttled by four statics
//!     now = jiffies; since = now - last; last = now;
//!     if (since > 5*HZ) goto reset;             a long time since the last failure: not OOM
//!     if (now - first < HZ) goto out;           failing for less than a second: not OOM
//!     if (++count < 10) goto out;               fewer than ten failures: not OOM
//!     if (now - lastkill < HZ*5) goto out;      a victim was just killed: let it exit
//!     lastkill = now; oom_kill();
//! reset: if (time_after(now, first)) first = now; count = 0;
//! oom_kill: select_bad_process() -- the task (pid > 1, with an mm) of most badness();
//!     none while a victim is still exiting (TIF_MEMDIE / PF_EXITING);
//!     victim: time_slice = HZ, PF_MEMDIE, force_sig(SIGKILL)
//! badness(p): total_vm (+ children's with their own mm), / int_sqrt(cpu_time >> (SHIFT_HZ+3)),
//!     / int_sqrt(int_sqrt(run_time >> 10 s)), x2 if niced, /4 if root, /4 if CAP_SYS_RAWIO
//! ```
//!
//! Simplified (docs/fidelity.md, "Seed 003"): the model's compile job is one task (gcc's
//! driver and its cc1 folded), a child of make; in the kernel make's children are the gcc
//! drivers of a few MB each, so `badness` here leaves the children's share out (adding it
//! would charge make with every cc1). The victim exits at its next return to user space,
//! as SIGKILL does; PF_MEMDIE's access to the reserves is not modelled (the victim's
//! faults still wait for pages_min).

use crate::kernel::task::{Task, TaskId, TaskState};
use crate::mm::Mm;
use latlab_core::Nanos;

const SEC: Nanos = 1_000_000_000;

/// out_of_memory()'s four statics (`first`, `last`, `count`, `lastkill`), in ns.
#[derive(Clone, Debug, Default)]
pub struct OomKiller {
    first: Nanos,
    last: Nanos,
    count: u32,
    lastkill: Option<Nanos>,
    /// Victims killed so far.
    pub kills: u64,
}

impl OomKiller {
    /// `out_of_memory()` at `now`: true when the throttle lets it kill.
    pub fn out_of_memory(&mut self, now: Nanos) -> bool {
        let since = now - self.last.min(now);
        self.last = now;
        let kill = if since > 5 * SEC {
            false
        } else if now - self.first.min(now) < SEC {
            return false;
        } else {
            self.count += 1;
            if self.count < 10 || self.lastkill.is_some_and(|k| now - k < 5 * SEC) {
                return false;
            }
            self.lastkill = Some(now);
            self.kills += 1;
            true
        };
        // reset:
        self.first = self.first.max(now);
        self.count = 0;
        kill
    }
}

/// `int_sqrt` (lib/int_sqrt.c): the integer square root.
pub fn int_sqrt(x: u64) -> u64 {
    let mut r = (x as f64).sqrt() as u64;
    while r * r > x {
        r -= 1;
    }
    while (r + 1) * (r + 1) <= x {
        r += 1;
    }
    r
}

/// `badness()` of a user's task, not niced, whose address space maps `total_vm` pages and
/// which has used `cpu_ns` of CPU. "CPU time is in tens of seconds and run time is in
/// thousands of seconds": `cpu_time >> (SHIFT_HZ + 3)` jiffies is units of 8.192 s at HZ
/// 1000; `run_time >> 10` is 0 for a task younger than 1024 s, as every task of a model run
/// is, so its divisor is 1.
pub fn badness(total_vm: u64, cpu_ns: Nanos) -> u64 {
    total_vm
        .checked_div(int_sqrt(cpu_ns / 8_192_000_000))
        .unwrap_or(total_vm)
}

/// `select_bad_process()`: the task of most badness, None while an earlier victim is still
/// exiting (or when no task has an address space).
pub fn select_bad_process(tasks: &[Task], mm: &Mm) -> Option<TaskId> {
    let live = |t: &Task| t.state != TaskState::Zombie && !t.kthread && t.mm != 0 && t.pid > 1;
    if tasks.iter().any(|t| live(t) && t.oom_killed) {
        return None;
    }
    let mut chosen: Option<(TaskId, u64)> = None;
    for (id, t) in tasks.iter().enumerate().filter(|(_, t)| live(t) && !t.thread) {
        let total_vm = mm.mms.get(&t.mm).map_or(0, |r| r.rss + r.swapped.len() as u64);
        let points = badness(total_vm, t.cpu_ns);
        if chosen.is_none_or(|(_, p)| points > p) {
            chosen = Some((id, points));
        }
    }
    chosen.map(|(id, _)| id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_throttle_kills_after_a_second_and_ten_failures_then_waits_five_seconds() {
        let mut o = OomKiller::default();
        let ms = 1_000_000;
        // The first failure only starts the clock (it comes "a long time" after none).
        assert!(!o.out_of_memory(10 * SEC));
        // Failures every 50 ms: none kills within the first second.
        let mut t = 10 * SEC;
        // Fail every 50 ms, at most `n` times; when the first kill came, if one did.
        let mut fail_until_kill = |o: &mut OomKiller, n: u32| {
            (0..n).find_map(|_| {
                t += 50 * ms;
                o.out_of_memory(t).then_some(t)
            })
        };
        let k = fail_until_kill(&mut o, 100).expect("a kill");
        assert!(k >= 11 * SEC, "{k}");
        assert_eq!(o.kills, 1);
        // Going on failing: no second kill within five seconds of the first.
        let s = fail_until_kill(&mut o, 400).expect("a second kill");
        assert!(s - k >= 5 * SEC, "{}", s - k);
        // A pause of more than five seconds resets: the next failure does not kill.
        assert!(!o.out_of_memory(s + 6 * SEC));
        assert!(!o.out_of_memory(s + 6 * SEC + 10 * ms));
    }

    #[test]
    fn badness_is_the_address_space_divided_by_cpu_time() {
        assert_eq!(badness(16_384, 0), 16_384);
        // 8.192 s of CPU is 1 unit: sqrt(1) = 1; 4 units divide by 2.
        assert_eq!(badness(16_384, 8_192_000_000), 16_384);
        assert_eq!(badness(16_384, 4 * 8_192_000_000), 8_192);
        assert_eq!(int_sqrt(15), 3);
        assert_eq!(int_sqrt(16), 4);
    }

    #[test]
    fn the_victim_is_the_largest_address_space_and_none_while_one_is_exiting() {
        let mut k = crate::cpu::tests::kstate();
        k.mm.grow(3, 1000);
        k.mm.grow(4, 3000);
        k.mm.grow(5, 2000);
        let task = |pid: u32, mm: u32| Task {
            pid,
            mm,
            ..crate::kernel::task::tests_task()
        };
        let mut kthread = task(2, 0);
        kthread.kthread = true;
        let mut tasks = vec![task(1, 5), kthread, task(10, 3), task(11, 4), task(12, 5)];
        // pid 1 (init) is never chosen, nor a kernel thread: the 3000-page mm's task.
        assert_eq!(select_bad_process(&tasks, &k.mm), Some(3));
        // Swapped-out pages count: total_vm, not rss.
        for _ in 0..1500 {
            k.mm.swap_out_26(5).expect("a slot");
        }
        assert_eq!(select_bad_process(&tasks, &k.mm), Some(3));
        k.mm.grow(5, 1500);
        assert_eq!(select_bad_process(&tasks, &k.mm), Some(4));
        // A victim still exiting: wait for it.
        tasks[3].oom_killed = true;
        assert_eq!(select_bad_process(&tasks, &k.mm), None);
        tasks[3].state = TaskState::Zombie;
        assert_eq!(select_bad_process(&tasks, &k.mm), Some(4));
    }

    #[test]
    fn direct_reclaim_that_fails_at_every_priority_asks_for_a_kill_once_the_throttle_lets_it() {
        use crate::kernel::path::{Ctx, Step};
        use crate::kernel::state::KReq;
        // Memory full of anonymous pages and swap full: nothing can be reclaimed.
        let mut k = crate::cpu::tests::kstate();
        let slots = k.mm.swap.slots();
        for _ in 0..slots {
            k.mm.swapped_out(7).expect("a free slot");
        }
        let n = k.mm.free - k.mm.pages_min;
        k.mm.grow(3, n);
        k.mm.mms.get_mut(&3).expect("mm").young = 0;
        let mut kills = 0;
        for i in 0..40u64 {
            let cx = Ctx {
                now: i * 100_000_000,
                pid: 1,
            };
            let mut p = crate::mm::vmscan26::try_to_free_pages(false);
            for _ in 0..100_000 {
                match p.next(&mut k, &cx) {
                    Step::Loop(l) => p.advanced(&mut k, &cx, l.items),
                    Step::Done => break,
                    Step::Work(_) | Step::Block(_) => {}
                }
            }
            kills += k.out.drain(..).filter(|r| matches!(r, KReq::OomKill)).count();
            // Ten failures over more than a second: the first kill at 1.1 s at the earliest.
            if i < 11 {
                assert_eq!(kills, 0, "killed at failure {i}");
            }
        }
        // Failures for 4 s: one kill, the next waits 5 s after it.
        assert_eq!(kills, 1);
        assert_eq!(k.reclaim.oom.kills, 1);
    }
}
