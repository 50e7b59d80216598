//! Hardware interrupts and what a high-resolution timer's expiry runs.

use crate::kernel::path::Chan;
use latlab_core::Nanos;

/// Hardware interrupts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Irq {
    /// The timer tick (IRQ 0).
    Tick,
    /// The RTC periodic interrupt (IRQ 8).
    Rtc,
    /// Disk request completion (IDE).
    Disk(u64),
    /// A high-resolution timer expiry (local APIC one-shot, `hrtimer_interrupt`).
    Hrtimer(HrTimer),
}

/// What an hrtimer expiry runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HrTimer {
    /// `hrtimer_wakeup` of a sleeper (nanosleep, schedule_hrtimeout).
    Sleep(Chan),
    /// `posix_timer_fn` of POSIX timer `id`, the expiry due at `due`.
    Posix { id: usize, due: Nanos },
}
