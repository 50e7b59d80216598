//! POSIX interval timers and the signals they send (kernel/posix-timers.c, kernel/signal.c of
//! 2.6.35; glibc's SIGEV_THREAD in nptl/sysdeps/unix/sysv/linux/timer_routines.c;
//! kernel-facts.md, "POSIX timers and their notification").
//!
//! A `timer_create(CLOCK_MONOTONIC)` timer armed with a period expires in hard-IRQ context
//! (`posix_timer_fn` from `hrtimer_interrupt`, or from the tick on a `jiffies` kernel); each
//! expiry queues the timer's one preallocated sigqueue to its target thread (`send_sigqueue`)
//! and wakes it. An expiry while that sigqueue is still queued is an overrun
//! (`timer_getoverrun`): the missed timer event a test counts. The sigqueue leaves the queue
//! when the target dequeues the signal: in `do_signal` on its way back to user space
//! (SIGEV_SIGNAL, a handler) or in `sigwaitinfo` (glibc's SIGEV_THREAD helper thread).
//!
//! This module keeps the timers and the queued signals; the CPU loop (`kernel`) raises the
//! expiry interrupts, and the paths below are the system calls that wait for and take them.

use super::path::{Chan, CoreK, Ctx, Path, Step, Work};
use super::state::Core;
use latlab_core::Nanos;
use std::cell::Cell;
use std::collections::{BTreeMap, VecDeque};
use std::rc::Rc;

/// How a timer notifies (`sigev_notify`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Notify {
    /// SIGEV_SIGNAL (thread-directed, SIGEV_THREAD_ID): a handler runs in the target thread.
    Signal,
    /// SIGEV_THREAD: glibc's helper thread takes the signal and starts a thread per expiry.
    Thread,
}

impl Notify {
    /// The stream a measurement of this kind is reported as, named as the probe names it.
    pub fn stream(self) -> &'static str {
        match self {
            Notify::Signal => "posix_timer_signal",
            Notify::Thread => "posix_timer_thread",
        }
    }

    /// `sigev_notify`'s name.
    pub fn sigev(self) -> &'static str {
        match self {
            Notify::Signal => "SIGEV_SIGNAL",
            Notify::Thread => "SIGEV_THREAD",
        }
    }
}

/// One armed timer (`struct k_itimer`).
#[derive(Clone, Debug)]
pub struct KItimer {
    /// Thread the signal goes to.
    pub target: u32,
    pub period: Nanos,
    /// The sigqueue is queued and not yet taken.
    pub pending: bool,
    /// Expiries that found it still queued.
    pub overruns: u64,
}

/// A signal taken by its thread: which timer, and the expiry that queued it.
#[derive(Clone, Copy, Debug)]
pub struct SigInfo {
    pub timer: usize,
    pub expiry: Nanos,
}

/// The timers and the signals queued to threads.
#[derive(Default)]
pub struct PosixTimers {
    timers: Vec<KItimer>,
    queued: BTreeMap<u32, VecDeque<SigInfo>>,
}

impl PosixTimers {
    /// Timer `id`'s interval.
    pub fn period(&self, id: usize) -> Nanos {
        self.timers[id].period
    }
    /// `timer_create` + `timer_settime` with an interval: returns the timer id.
    pub fn create(&mut self, target: u32, period: Nanos) -> usize {
        self.timers.push(KItimer {
            target,
            period,
            pending: false,
            overruns: 0,
        });
        self.timers.len() - 1
    }

    /// `posix_timer_fn` for the expiry due at `expiry`: the thread to wake, or `None` when
    /// the previous signal is still queued (an overrun).
    pub fn expire(&mut self, id: usize, expiry: Nanos) -> Option<u32> {
        let t = &mut self.timers[id];
        if t.pending {
            t.overruns += 1;
            return None;
        }
        t.pending = true;
        let target = t.target;
        self.queued
            .entry(target)
            .or_default()
            .push_back(SigInfo { timer: id, expiry });
        Some(target)
    }

    pub fn has_pending(&self, pid: u32) -> bool {
        self.queued.get(&pid).is_some_and(|q| !q.is_empty())
    }

    /// `dequeue_signal`: the oldest signal queued to `pid`; its timer's sigqueue is free
    /// again.
    pub fn dequeue(&mut self, pid: u32) -> Option<SigInfo> {
        let s = self.queued.get_mut(&pid)?.pop_front()?;
        self.timers[s.timer].pending = false;
        Some(s)
    }

    /// Overruns of every timer.
    pub fn overruns(&self) -> u64 {
        self.timers.iter().map(|t| t.overruns).sum()
    }
}

/// Waiting for a timer's signal and taking it: `pause()`/`sigsuspend()` followed by
/// `do_signal`'s frame set-up for a handler (SIGEV_SIGNAL), or `sigwaitinfo()` (glibc's
/// SIGEV_THREAD helper). The signal is dequeued on the way out into the caller's `info`
/// (the siginfo its next user step reads).
pub struct SigWait {
    /// Cost of taking the signal (`do_signal` + `setup_rt_frame`, or `dequeue_signal` and the
    /// siginfo copy of `sigwaitinfo`).
    take_ns: Nanos,
    func: &'static str,
    done: bool,
    info: Rc<Cell<Option<SigInfo>>>,
}

/// `pause()` until a signal, then `do_signal` sets up the handler's frame.
pub fn sys_pause<K: CoreK>(k: &Core, info: Rc<Cell<Option<SigInfo>>>) -> Box<dyn Path<K>> {
    Box::new(SigWait {
        take_ns: k.c.signal_deliver,
        func: "do_signal",
        done: false,
        info,
    })
}

/// `sigwaitinfo()` for the timer signal.
pub fn sys_sigwaitinfo<K: CoreK>(k: &Core, info: Rc<Cell<Option<SigInfo>>>) -> Box<dyn Path<K>> {
    Box::new(SigWait {
        take_ns: k.c.signal_dequeue,
        func: "dequeue_signal",
        done: false,
        info,
    })
}

impl<K: CoreK> Path<K> for SigWait {
    fn name(&self) -> &'static str {
        "sys_rt_sigtimedwait"
    }
    fn next(&mut self, k: &mut K, cx: &Ctx) -> Step {
        let k = k.core();
        if self.done {
            return Step::Done;
        }
        if !k.posix.has_pending(cx.pid) {
            return Step::Block(Chan::Signal(cx.pid));
        }
        self.done = true;
        let s = k.posix.dequeue(cx.pid);
        self.info.set(s);
        Work::plain(self.func, self.take_ns)
    }
}

/// `clone(CLONE_VM | CLONE_THREAD | ...)` for pthread_create: `do_fork` without an mm copy.
pub fn sys_clone_thread<K: CoreK>(k: &Core) -> Box<dyn Path<K>> {
    super::path::once("do_fork", k.c.clone_thread)
}

/// A thread's `exit()`: `do_exit` with the mm still used by the other threads (no
/// `exit_mmap`), as a detached SIGEV_THREAD thread ends.
pub fn sys_exit_thread<K: CoreK>(k: &Core) -> Box<dyn Path<K>> {
    super::path::once("do_exit", k.c.exit_thread)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_expiry_while_the_signal_is_queued_is_an_overrun() {
        let mut p = PosixTimers::default();
        let t = p.create(7, 10_000_000);
        assert_eq!(p.expire(t, 10), Some(7));
        assert!(p.has_pending(7));
        assert_eq!(p.expire(t, 20), None, "still queued: overrun");
        assert_eq!(p.overruns(), 1);
        let s = p.dequeue(7).unwrap();
        assert_eq!(s.expiry, 10, "the first expiry's signal");
        assert!(!p.has_pending(7));
        assert_eq!(p.expire(t, 30), Some(7), "free again");
    }
}
