//! The kernel threads of an ext3 box: kjournald (fs/jbd/journal.c), the reclaim
//! implementation's kswapd (2.4's `kswapd`, 2.6's per-node `kswapd0`; mm/vmscan.c) and the
//! writeback implementation's own: 2.4's bdflush and kupdated (fs/buffer.c), 2.6's pdflush
//! pool (mm/pdflush.c), 3.2's per-device flusher (fs/fs-writeback.c). Each sleeps on
//! its own wait channel and runs one pass of its work per wakeup. Which threads a kernel
//! starts follows from its variant's subsystems ([`for_variant`]).

use super::{Action, ProgCx, Program};
use crate::fs::commit::journal_commit_transaction;
use crate::fs::flush::{bdflush_pass, kupdate_pass, KUPDATE_INTERVAL_NS};
use crate::fs::jbd::COMMIT_INTERVAL_NS;
use crate::kernel::catalog::Point;
use crate::kernel::catalog::WaitOn;
use crate::kernel::path::{point, Chan, LoopStep, Path};
use crate::kernel::state::KState;
use crate::mm::ioless::{over_bground_thresh, wb_writeback};
use crate::mm::page_writeback::{background_writeout, wb_kupdate, WRITEBACK_INTERVAL_NS};
use crate::mm::pdflush::{self, Job, Next};
use crate::mm::vmscan::try_to_free_pages;
use crate::variant::{Reclaim, Variant, Writeback};
use smallvec::smallvec;

/// Which kernel thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kthread {
    Kjournald,
    Bdflush,
    Kupdated,
    Kswapd,
    /// One of the pdflush pool's threads (2.6.0-2.6.31).
    Pdflush,
    /// 3.2's per-device flusher thread.
    Flusher,
    /// 2.6's kswapd of node 0: `balance_pgdat` per wakeup (mm/vmscan.c, 2.6.9).
    Kswapd0,
}

impl Kthread {
    /// The thread's `comm`.
    pub fn comm(self) -> &'static str {
        match self {
            Kthread::Kjournald => "kjournald",
            Kthread::Bdflush => "bdflush",
            Kthread::Kupdated => "kupdated",
            Kthread::Kswapd => "kswapd",
            Kthread::Pdflush => "pdflush",
            Kthread::Flusher => "flush-8:0",
            Kthread::Kswapd0 => "kswapd0",
        }
    }

    /// Record the thread's pid where the kernel's code finds it (`wake_up_process(kswapd_task)`).
    pub fn register(self, k: &mut KState, pid: u32) {
        let pids = &mut k.kthreads;
        match self {
            Kthread::Kswapd | Kthread::Kswapd0 => pids.kswapd = pid,
            Kthread::Bdflush => pids.bdflush = pid,
            Kthread::Kupdated => pids.kupdated = pid,
            Kthread::Kjournald => pids.kjournald = pid,
            Kthread::Flusher => pids.flusher = pid,
            Kthread::Pdflush => k.pwb.pool.register(pid),
        }
    }
}

/// The kernel threads variant `v`'s kernel starts, in start order: page reclaim's kswapd
/// (every generation, named as its reclaim names it), the writeback implementation's threads, and the journal thread of the
/// model's one filesystem, ext3.
pub fn for_variant(v: &Variant) -> Vec<Kthread> {
    let writeback: &[Kthread] = match v.writeback {
        Writeback::Bdflush24 => &[Kthread::Bdflush, Kthread::Kupdated],
        // MAX_PDFLUSH_THREADS spawned; the pool creates (wakes) more than two as it grows.
        Writeback::Pdflush2617 | Writeback::PdflushBalance => &[Kthread::Pdflush; pdflush::MAX_THREADS],
        Writeback::IoLess32 => &[Kthread::Flusher],
    };
    let mut threads = vec![match v.reclaim {
        Reclaim::Vmscan24 => Kthread::Kswapd,
        Reclaim::Rmap269 | Reclaim::Rmap2617 => Kthread::Kswapd0,
    }];
    threads.extend_from_slice(writeback);
    threads.push(Kthread::Kjournald);
    threads
}

pub struct KthreadProg {
    kind: Kthread,
    slept: bool,
    /// A pdflush job or flusher work just ran.
    ran: bool,
}

impl KthreadProg {
    pub fn new(kind: Kthread) -> Box<Self> {
        Box::new(KthreadProg {
            kind,
            slept: false,
            ran: false,
        })
    }
}

impl Program for KthreadProg {
    fn next(&mut self, cx: &mut ProgCx) -> Action {
        let me = Chan::Kthread(cx.pid);
        let st = &mut *cx.st;
        match self.kind {
            Kthread::Kjournald => {
                if st.jbd.commit_due(cx.now) {
                    return Action::Syscall(journal_commit_transaction(st.jbd.generation));
                }
                let due = st.jbd.running.started + COMMIT_INTERVAL_NS;
                let wait = due.saturating_sub(cx.now).max(10_000_000);
                Action::Syscall(WaitOn::new(me, Some(wait)))
            }
            Kthread::Pdflush => {
                let after_job = std::mem::take(&mut self.ran);
                match pdflush::next(st, cx.pid, cx.now, after_job) {
                    Next::Run(job) => {
                        self.ran = true;
                        Action::Syscall(match job {
                            Job::Background { min_pages } => background_writeout(st, min_pages),
                            Job::Kupdate => wb_kupdate(st, cx.now),
                        })
                    }
                    Next::Sleep(timeout) => Action::Syscall(WaitOn::new(me, timeout)),
                }
            }
            Kthread::Flusher => {
                if !std::mem::take(&mut self.ran) && (st.pwb.ioless.background_requested || over_bground_thresh(st)) {
                    self.ran = true;
                    return Action::Syscall(wb_writeback(st, cx.pid));
                }
                // Sleep until woken, or dirty_writeback_interval for old data.
                Action::Syscall(WaitOn::new(me, Some(WRITEBACK_INTERVAL_NS)))
            }
            Kthread::Bdflush | Kthread::Kupdated | Kthread::Kswapd | Kthread::Kswapd0 => {
                self.slept = !self.slept;
                if self.slept {
                    let timeout = (self.kind == Kthread::Kupdated).then_some(KUPDATE_INTERVAL_NS);
                    return Action::Syscall(WaitOn::new(me, timeout));
                }
                Action::Syscall(match self.kind {
                    Kthread::Bdflush => bdflush_pass(),
                    Kthread::Kupdated => kupdate_pass(cx.now),
                    Kthread::Kswapd0 => crate::mm::vmscan26::balance_pgdat(),
                    _ => kswapd_pass(),
                })
            }
        }
    }
}

/// kswapd: try_to_free_pages rounds until free pages reach pages_high, with the stock
/// need_resched check between rounds.
struct KswapdPass {
    sub: crate::kernel::path::Nested,
    rounds: u32,
    checked: bool,
}

fn kswapd_pass() -> Box<dyn Path> {
    Box::new(KswapdPass {
        sub: Default::default(),
        rounds: 0,
        checked: true,
    })
}

/// Rounds per kswapd wakeup before it sleeps again regardless (it is woken again when needed).
const KSWAPD_MAX_ROUNDS: u32 = 64;

impl Path for KswapdPass {
    fn name(&self) -> &'static str {
        "kswapd"
    }
    fn next(
        &mut self,
        k: &mut crate::kernel::state::KState,
        cx: &crate::kernel::path::Ctx,
    ) -> crate::kernel::path::Step {
        loop {
            if let Some(s) = self.sub.next(k, cx) {
                return s;
            }
            if !self.checked {
                self.checked = true;
                return LoopStep::plain("kswapd_balance", 1, 0, smallvec![point(Point::KswapdBalance, 1)]);
            }
            if k.mm.free >= k.mm.pages_high || self.rounds >= KSWAPD_MAX_ROUNDS {
                return crate::kernel::path::Step::Done;
            }
            self.rounds += 1;
            self.checked = false;
            self.sub.start(try_to_free_pages());
        }
    }
    fn advanced(&mut self, k: &mut crate::kernel::state::KState, cx: &crate::kernel::path::Ctx, done: u64) {
        self.sub.advanced(k, cx, done);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::tests::variant_with;
    use crate::variant::{PreemptModel, SchedClass};

    #[test]
    fn the_threads_follow_the_writeback_choice_and_each_registers_its_pid() {
        let v = variant_with(SchedClass::Goodness24, PreemptModel::None, &[]);
        let threads = for_variant(&v);
        assert_eq!(
            threads,
            [Kthread::Kswapd, Kthread::Bdflush, Kthread::Kupdated, Kthread::Kjournald]
        );
        let mut k = crate::kernel::tests::kstate();
        for (i, t) in threads.iter().enumerate() {
            t.register(&mut k, 10 + i as u32);
        }
        let pids = k.kthreads;
        assert_eq!(
            (pids.kswapd, pids.bdflush, pids.kupdated, pids.kjournald),
            (10, 11, 12, 13)
        );
    }
}
