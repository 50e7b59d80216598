//! The MC146818 RTC as drivers/char/rtc.c (2.4) drives it for realfeel: periodic interrupts;
//! `rtc_interrupt` adds one to `rtc_irq_data` and wakes `rtc_wait`; `read()` returns the
//! count accumulated since the last read and clears it.

use crate::dev::DevK;
use crate::kernel::path::{Chan, Ctx, Path, Step, Work};
use latlab_core::Nanos;
use std::cell::Cell;
use std::rc::Rc;

/// Can the MC146818 interrupt periodically at `hz`? Its rates are the powers of two from
/// 2 to 8192 Hz (rate-select bits of register A).
pub fn periodic_rate_ok(hz: u64) -> bool {
    (2..=8192).contains(&hz) && hz.is_power_of_two()
}

#[derive(Default, Debug)]
pub struct Rtc {
    /// Interrupts since the last read (`rtc_irq_data >> 8`).
    pending: u64,
    /// When the first of them was raised.
    first_at: Nanos,
}

impl Rtc {
    pub fn interrupt(&mut self, at: Nanos) {
        if self.pending == 0 {
            self.first_at = at;
        }
        self.pending += 1;
    }

    pub fn has_data(&self) -> bool {
        self.pending > 0
    }

    /// rtc_read(): consume the pending count. Returns the first interrupt's time and how many
    /// more were folded into this read.
    pub fn read(&mut self) -> Option<(Nanos, u64)> {
        if self.pending == 0 {
            return None;
        }
        let r = (self.first_at, self.pending - 1);
        self.pending = 0;
        Some(r)
    }
}

/// read(/dev/rtc): sleep until an interrupt has arrived, then copy the data (when the
/// interrupt came, how many it counts) out to the reader's buffer.
pub struct RtcRead {
    copied: bool,
    buf: Rc<Cell<Option<(Nanos, u64)>>>,
}

pub fn rtc_read<K: DevK>(buf: Rc<Cell<Option<(Nanos, u64)>>>) -> Box<dyn Path<K>> {
    Box::new(RtcRead { copied: false, buf })
}

impl<K: DevK> Path<K> for RtcRead {
    fn name(&self) -> &'static str {
        "rtc_read"
    }
    fn next(&mut self, k: &mut K, _cx: &Ctx) -> Step {
        let k = k.dev();
        if self.copied {
            self.buf.set(k.rtc.read());
            return Step::Done;
        }
        if !k.rtc.has_data() {
            return Step::Block(Chan::Rtc);
        }
        self.copied = true;
        Work::plain("rtc_read", k.c.rtc_read)
    }
}
