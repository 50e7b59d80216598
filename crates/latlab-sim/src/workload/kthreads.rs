//! The kernel threads of a 2.4 ext3 box: kjournald (fs/jbd/journal.c), bdflush and kupdated
//! (fs/buffer.c), kswapd (mm/vmscan.c). Each sleeps on its own wait channel and runs one pass
//! of its work per wakeup.

use super::{Action, ProgCx, Program};
use crate::fs::commit::journal_commit_transaction;
use crate::fs::flush::{bdflush_pass, kupdate_pass, KUPDATE_INTERVAL_NS};
use crate::fs::jbd::COMMIT_INTERVAL_NS;
use crate::kernel::catalog::Point;
use crate::kernel::catalog::WaitOn;
use crate::kernel::path::{point, Chan, LoopStep, Path};
use crate::mm::vmscan::try_to_free_pages;
use smallvec::smallvec;

/// Which kernel thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kthread {
    Kjournald,
    Bdflush,
    Kupdated,
    Kswapd,
}

pub struct KthreadProg {
    kind: Kthread,
    slept: bool,
}

impl KthreadProg {
    pub fn new(kind: Kthread) -> Box<Self> {
        Box::new(KthreadProg { kind, slept: false })
    }
}

impl Program for KthreadProg {
    fn next(&mut self, cx: &mut ProgCx) -> Action {
        let me = Chan::Kthread(cx.pid);
        let st = &mut *cx.st;
        match self.kind {
            Kthread::Kjournald => {
                if st.jbd.commit_due(cx.now) {
                    return Action::Syscall(journal_commit_transaction());
                }
                let due = st.jbd.running.started + COMMIT_INTERVAL_NS;
                let wait = due.saturating_sub(cx.now).max(10_000_000);
                Action::Syscall(WaitOn::new(me, Some(wait)))
            }
            Kthread::Bdflush | Kthread::Kupdated | Kthread::Kswapd => {
                self.slept = !self.slept;
                if self.slept {
                    let timeout = (self.kind == Kthread::Kupdated).then_some(KUPDATE_INTERVAL_NS);
                    return Action::Syscall(WaitOn::new(me, timeout));
                }
                Action::Syscall(match self.kind {
                    Kthread::Bdflush => bdflush_pass(),
                    Kthread::Kupdated => kupdate_pass(cx.now),
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
