//! realfeel2's reader (amlat.tar.gz, seed 000): SCHED_FIFO, `read(/dev/rtc)` in a loop; each
//! return to user space is one sample, then a few microseconds of user work (reading the
//! cycle counter, updating the histogram) before the next read.

use super::{Action, ProgCx, Program};
use crate::measure::Mark;
use crate::workload::syscall::Syscall;
use latlab_core::Nanos;
use std::cell::Cell;
use std::rc::Rc;

/// realfeel's user work per sample: rdtsc, a subtraction and a histogram increment, a few
/// hundred instructions (2 us is generous on a PIII).
const USER_WORK_NS: Nanos = 2_000;

#[derive(Default)]
pub struct Realfeel {
    started: bool,
    in_read: bool,
    /// The buffer read(/dev/rtc) copies its data to.
    buf: Rc<Cell<Option<(Nanos, u64)>>>,
}

impl Program for Realfeel {
    fn next(&mut self, cx: &mut ProgCx) -> Action {
        if !self.started {
            self.started = true;
            cx.marks.push(Mark::RealfeelReader);
        }
        if self.in_read {
            self.in_read = false;
            if let Some((irq_at, coalesced)) = self.buf.take() {
                cx.marks.push(Mark::RealfeelSample { irq_at, coalesced });
            }
            return Action::Compute(USER_WORK_NS);
        }
        self.in_read = true;
        Action::Call(Syscall::RtcRead { buf: self.buf.clone() })
    }
}
