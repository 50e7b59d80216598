//! Seed 004's wakeup-latency test program: a periodic CLOCK_MONOTONIC POSIX timer, and the
//! time from each expiry to the notify function running. SCHED_OTHER at nice 0 (an RT
//! thread would not have seen the CFS granularity the seed is about).
//!
//! - SIGEV_SIGNAL ([`Notify::Signal`]): the thread `pause()`s; the expiry queues the signal
//!   and wakes it; `do_signal` sets up the handler's frame on its way back to user space, and
//!   the handler is the notify function.
//! - SIGEV_THREAD ([`Notify::Thread`]), as glibc 2.11 does it (nptl/.../timer_routines.c):
//!   the timer signals glibc's helper thread, blocked in `sigwaitinfo`; the helper looks the
//!   timer up, `malloc`s the thread's arguments and `pthread_create`s a detached thread
//!   (`clone`), then waits again; the new thread (`timer_sigev_thread`) resets its signal
//!   mask (`rt_sigprocmask`), frees the arguments and calls the notify function, then exits.

use super::{Action, ProgCx, Program, TaskSpec};
use crate::kernel::posix_timer::{Notify, SigInfo};
use crate::measure::Mark;
use crate::workload::syscall::Syscall;
use latlab_core::Nanos;
use std::cell::Cell;
use std::rc::Rc;

/// The notify function's own work: read the clock, compare with the expected expiry, add to
/// the statistics: a few hundred instructions (as realfeel's per-sample work).
const NOTIFY_INSTR: f64 = 500.0;
/// glibc's helper between `sigwaitinfo` and `clone`: the `SI_TIMER` test, the active-timer
/// list walk under its mutex, `malloc` of the thread's arguments, and `pthread_create`'s
/// user side (a stack from the cache, the thread descriptor's set-up): about 3,000
/// instructions and 20 misses (arithmetic from glibc 2.11's timer_routines.c and
/// allocatestack.c).
pub(crate) const HELPER_INSTR: f64 = 3_000.0;
pub(crate) const HELPER_MISSES: f64 = 20.0;
/// The new thread's `start_thread` and `timer_sigev_thread` before the notify function,
/// besides the `rt_sigprocmask` system call: TLS and robust-list set-up, `free` of the
/// arguments: about 1,500 instructions, 10 misses (a new stack) (same sources).
pub(crate) const THREAD_START_INSTR: f64 = 1_500.0;
pub(crate) const THREAD_START_MISSES: f64 = 10.0;

/// The test's main thread (the signal target, or glibc's helper thread).
pub struct WakeupLatency {
    notify: Notify,
    period: Nanos,
    state: State,
    /// The siginfo a wait for the signal copies out.
    info: Rc<Cell<Option<SigInfo>>>,
}

#[derive(Clone, Copy)]
enum State {
    Start,
    /// Next: wait for the signal.
    Wait,
    /// Back in user space with the signal taken.
    Got,
    /// The helper's user work is done: clone() next, for the expiry due at the time held.
    Clone(Nanos),
    /// clone() returned: the thread exists.
    Spawn(Nanos),
}

impl WakeupLatency {
    pub fn new(notify: Notify, period: Nanos) -> Self {
        WakeupLatency {
            notify,
            period,
            state: State::Start,
            info: Rc::default(),
        }
    }
}

impl Program for WakeupLatency {
    fn next(&mut self, cx: &mut ProgCx) -> Action {
        match self.state {
            State::Start => {
                self.state = State::Wait;
                cx.marks.push(Mark::PosixTask);
                Action::TimerCreate { period: self.period }
            }
            State::Wait => {
                self.state = State::Got;
                let info = self.info.clone();
                Action::Call(match self.notify {
                    Notify::Signal => Syscall::Pause { info },
                    Notify::Thread => Syscall::Sigwaitinfo { info },
                })
            }
            State::Got => {
                let Some(s) = self.info.take() else {
                    // Interrupted without our signal: wait again.
                    self.state = State::Wait;
                    return Action::Compute(cx.m.syscall_ns);
                };
                match self.notify {
                    Notify::Signal => {
                        // In the handler: the notify function runs now.
                        self.state = State::Wait;
                        cx.marks.push(Mark::PosixSample { due: s.expiry });
                        Action::Compute(cx.m.cost(NOTIFY_INSTR, 0.0))
                    }
                    Notify::Thread => {
                        self.state = State::Clone(s.expiry);
                        Action::Compute(cx.m.cost(HELPER_INSTR, HELPER_MISSES))
                    }
                }
            }
            State::Clone(due) => {
                self.state = State::Spawn(due);
                Action::Call(Syscall::CloneThread)
            }
            State::Spawn(due) => {
                self.state = State::Wait;
                Action::Spawn(TaskSpec {
                    share_mm: true,
                    ..TaskSpec::user("timer-thread", Box::new(NotifyThread { due, step: 0 }))
                })
            }
        }
    }
}

/// A SIGEV_THREAD thread: start, run the notify function, exit.
struct NotifyThread {
    due: Nanos,
    step: u8,
}

impl Program for NotifyThread {
    fn next(&mut self, cx: &mut ProgCx) -> Action {
        self.step += 1;
        match self.step {
            1 => Action::Compute(cx.m.syscall_ns + cx.m.cost(THREAD_START_INSTR, THREAD_START_MISSES)),
            2 => {
                cx.marks.push(Mark::PosixSample { due: self.due });
                Action::Compute(cx.m.cost(NOTIFY_INSTR, 0.0))
            }
            _ => Action::Exit,
        }
    }
}
