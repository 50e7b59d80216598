//! The kernel threads of an ext3 box: kjournald (fs/jbd/journal.c), the reclaim
//! implementation's kswapd (2.4's `kswapd`, 2.6's per-node `kswapd0`; mm/vmscan.c) and the
//! writeback implementation's own: 2.4's bdflush and kupdated (fs/buffer.c), 2.6's pdflush
//! pool (mm/pdflush.c), 3.2's per-device flusher (fs/fs-writeback.c), and 6.x ext4's
//! `ext4-rsv-conversion` kworker (fs/ext4/page-io.c). Each sleeps on
//! its own wait channel and runs one pass of its work per wakeup. Which threads a kernel
//! starts, the subsystems that own them say ([`crate::assemble`]).

use crate::fs::commit::journal_commit_transaction;
use crate::fs::flush::{bdflush_pass, kupdate_pass, KUPDATE_INTERVAL_NS};
use crate::fs::state::FsState;
use crate::kernel::catalog::Point;
use crate::kernel::catalog::WaitOn;
use crate::kernel::path::{point, Chan, LoopStep, Path};
use crate::kernel::state::Kthread;
use crate::mm::ioless::{over_bground_thresh, wb_writeback};
use crate::mm::page_writeback::{background_writeout, wb_kupdate, WRITEBACK_INTERVAL_NS};
use crate::mm::pdflush::{self, Job, Next};
use crate::mm::vmscan::try_to_free_pages;
use crate::workload::{Action, ProgCx, Program};
use smallvec::smallvec;

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
        let (pid, now) = (cx.pid, cx.now);
        let st = cx.kthread_state();
        match self.kind {
            Kthread::Kjournald => {
                if st.jbd.commit_due(now) {
                    return Action::Syscall(journal_commit_transaction(st.jbd.commit_holds_bkl()));
                }
                let due = st.jbd.commit_expires();
                let wait = due.saturating_sub(now).max(10_000_000);
                Action::Syscall(WaitOn::new(me, Some(wait)))
            }
            Kthread::Pdflush => {
                let after_job = std::mem::take(&mut self.ran);
                match pdflush::next(st, pid, now, after_job) {
                    Next::Run(job) => {
                        self.ran = true;
                        Action::Syscall(match job {
                            Job::Background { min_pages } => background_writeout(st, min_pages),
                            Job::Kupdate => wb_kupdate(st, now),
                        })
                    }
                    Next::Sleep(timeout) => Action::Syscall(WaitOn::new(me, timeout)),
                }
            }
            Kthread::Flusher => {
                if !std::mem::take(&mut self.ran)
                    && (st.writeback.pwb().ioless.background_requested || over_bground_thresh(st))
                {
                    self.ran = true;
                    return Action::Syscall(wb_writeback(st, pid));
                }
                // Sleep until woken, or dirty_writeback_interval for old data.
                Action::Syscall(WaitOn::new(me, Some(WRITEBACK_INTERVAL_NS)))
            }
            Kthread::Ext4RsvConversion => {
                if st.ext4.as_ref().is_some_and(|e| e.conversions_pending()) {
                    return Action::Syscall(crate::fs::ext4::ext4_end_io_rsv_work(st));
                }
                Action::Syscall(WaitOn::new(me, None))
            }
            Kthread::Bdflush | Kthread::Kupdated | Kthread::Kswapd | Kthread::Kswapd0 => {
                self.slept = !self.slept;
                if self.slept {
                    let timeout = (self.kind == Kthread::Kupdated).then_some(KUPDATE_INTERVAL_NS);
                    return Action::Syscall(WaitOn::new(me, timeout));
                }
                Action::Syscall(match self.kind {
                    Kthread::Bdflush => bdflush_pass(),
                    Kthread::Kupdated => kupdate_pass(now),
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
    sub: crate::kernel::path::Nested<FsState>,
    rounds: u32,
    checked: bool,
}

fn kswapd_pass() -> Box<dyn Path<FsState>> {
    Box::new(KswapdPass {
        sub: Default::default(),
        rounds: 0,
        checked: true,
    })
}

/// Rounds per kswapd wakeup before it sleeps again regardless (it is woken again when needed).
const KSWAPD_MAX_ROUNDS: u32 = 64;

impl Path<FsState> for KswapdPass {
    fn name(&self) -> &'static str {
        "kswapd"
    }
    fn next(&mut self, k: &mut crate::fs::state::FsState, cx: &crate::kernel::path::Ctx) -> crate::kernel::path::Step {
        loop {
            if let Some(s) = self.sub.next(k, cx) {
                return s;
            }
            if !self.checked {
                self.checked = true;
                return LoopStep::plain("kswapd_balance", 1, 0, smallvec![point(Point::KswapdBalance, 1)]);
            }
            if k.mm.free() >= k.mm.pages_high() || self.rounds >= KSWAPD_MAX_ROUNDS {
                return crate::kernel::path::Step::Done;
            }
            self.rounds += 1;
            self.checked = false;
            self.sub.start(try_to_free_pages());
        }
    }
    fn advanced(&mut self, k: &mut crate::fs::state::FsState, cx: &crate::kernel::path::Ctx, done: u64) {
        self.sub.advanced(k, cx, done);
    }
}
