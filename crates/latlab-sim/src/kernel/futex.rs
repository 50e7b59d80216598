//! Futexes between tasks (kernel/futex/waitwake.c, 6.x; kernel/futex.c before 5.16), as a
//! glibc semaphore uses them (nptl/sem_waitcommon.c, sem_post.c): the word counts posts;
//! `sem_wait` takes one in user space when the count is above zero and otherwise calls
//! `futex_wait`, which checks the word again under the hash bucket's lock and sleeps only if
//! it is still zero (so no wake-up is lost); `sem_post` adds one and, when a waiter is
//! queued, calls `futex_wake` for one of them. Waiters are woken in the order of the bucket's
//! plist: by priority, `min(normal_prio, MAX_RT_PRIO)` (`futex_q_init`/`__futex_queue`), so an
//! RT waiter before every SCHED_OTHER one and a higher RT priority first, and in the order
//! they queued among equals.
//!
//! The futex word and its queue live here, shared by the tasks that use the word (as they
//! share the memory it is in); the paths below are the system calls.

use super::path::{Chan, CoreK, Ctx, Path, Step, Work};
use super::state::KReq;
use super::task::Policy;
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;

/// A futex word and the tasks queued on it (`struct futex_q`s in its hash bucket).
#[derive(Debug)]
pub struct Futex {
    id: u64,
    /// The word: posts not yet taken.
    val: Cell<u32>,
    /// The queued waiters' plist priorities and wait channels, in wake order.
    queue: RefCell<VecDeque<(u32, Chan)>>,
    /// Waits so far (each sleeper gets a channel of its own, so a wake of one wakes one).
    waits: Cell<u64>,
}

impl Futex {
    /// Futex number `id` (unique in the run: its waiters' channels derive from it).
    pub fn new(id: u32) -> Rc<Futex> {
        Rc::new(Futex {
            id: u64::from(id),
            val: Cell::new(0),
            queue: RefCell::default(),
            waits: Cell::new(0),
        })
    }
    /// `sem_wait`'s user-space fast path: take a post if there is one.
    pub fn try_take(&self) -> bool {
        let v = self.val.get();
        if v == 0 {
            return false;
        }
        self.val.set(v - 1);
        true
    }
    /// `sem_post`'s user-space part: add a post; true when a waiter is queued (the caller
    /// then makes the `futex_wake` call).
    pub fn post(&self) -> bool {
        self.val.set(self.val.get() + 1);
        !self.queue.borrow().is_empty()
    }
}

/// A waiter's place in the bucket's plist (`__futex_queue`: `min(current->normal_prio,
/// MAX_RT_PRIO)`, lower first): `99 - rt_priority` for a SCHED_FIFO/RR task, 100
/// (MAX_RT_PRIO) for any SCHED_OTHER one, whatever its nice.
pub fn plist_prio(policy: Policy, rt_priority: u32) -> u32 {
    match policy {
        Policy::Fifo | Policy::Rr => 99u32.saturating_sub(rt_priority),
        Policy::Other => 100,
    }
}

/// `futex(FUTEX_WAIT_PRIVATE, 0)` by a task of plist priority `prio` ([`plist_prio`]):
/// sleep unless a post came meanwhile (-EAGAIN); the caller then tries to take a post again.
pub fn sys_futex_wait<K: CoreK>(futex: Rc<Futex>, prio: u32) -> Box<dyn Path<K>> {
    Box::new(FutexWait { futex, prio, stage: 0 })
}

/// `futex(FUTEX_WAKE_PRIVATE, n)`: wake up to `n` queued waiters, the plist's first.
pub fn sys_futex_wake<K: CoreK>(futex: Rc<Futex>, n: u32) -> Box<dyn Path<K>> {
    Box::new(FutexWake { futex, n, woke: false })
}

struct FutexWait {
    futex: Rc<Futex>,
    prio: u32,
    stage: u8,
}

impl<K: CoreK> Path<K> for FutexWait {
    fn name(&self) -> &'static str {
        "futex_wait"
    }
    fn next(&mut self, k: &mut K, _cx: &Ctx) -> Step {
        let k = k.core();
        self.stage += 1;
        match self.stage {
            // futex_wait_setup and futex_queue.
            1 => Work::plain("futex_wait_setup", k.c.futex_wait),
            // The value check under the bucket lock, then schedule().
            2 if self.futex.val.get() == 0 => {
                let f = &self.futex;
                f.waits.set(f.waits.get() + 1);
                let chan = Chan::Futex((f.id << 32) | (f.waits.get() & 0xffff_ffff));
                // plist_add: after every waiter of the same or a higher priority.
                let mut q = f.queue.borrow_mut();
                let at = q.partition_point(|&(p, _)| p <= self.prio);
                q.insert(at, (self.prio, chan));
                Step::Block(chan)
            }
            // -EAGAIN, or woken (futex_wake took it off the queue).
            _ => Step::Done,
        }
    }
}

struct FutexWake {
    futex: Rc<Futex>,
    n: u32,
    woke: bool,
}

impl<K: CoreK> Path<K> for FutexWake {
    fn name(&self) -> &'static str {
        "futex_wake"
    }
    fn next(&mut self, k: &mut K, _cx: &Ctx) -> Step {
        let k = k.core();
        if std::mem::replace(&mut self.woke, true) {
            return Step::Done;
        }
        let mut q = self.futex.queue.borrow_mut();
        for _ in 0..self.n {
            let Some((_, c)) = q.pop_front() else { break };
            k.out.push(KReq::Wake(c));
        }
        Work::plain("futex_wake", k.c.futex_wake)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::tests::{kstate, run_to_sleep};

    #[test]
    fn a_wait_sleeps_only_while_the_word_is_zero_and_a_wake_wakes_one_waiter() {
        let mut k = kstate();
        let f = Futex::new(2);
        let other = plist_prio(Policy::Other, 0);
        let first = run_to_sleep(&mut k, sys_futex_wait(f.clone(), other)).expect("zero: sleeps");
        let second = run_to_sleep(&mut k, sys_futex_wait(f.clone(), other)).expect("sleeps");
        assert_ne!(first, second, "each waiter on a channel of its own");
        assert!(f.post(), "waiters queued: post calls futex_wake");
        assert_eq!(run_to_sleep(&mut k, sys_futex_wake(f.clone(), 1)), None);
        assert!(
            matches!(k.out.as_slice(), [KReq::Wake(c)] if *c == first),
            "the oldest waiter only"
        );
        // A post already there: futex_wait returns at once (-EAGAIN), the post stays.
        let g = Futex::new(3);
        assert!(!g.post(), "no waiter: no system call");
        assert_eq!(run_to_sleep(&mut k, sys_futex_wait(g.clone(), other)), None);
        assert!(g.try_take() && !g.try_take());
    }

    #[test]
    fn a_wake_takes_the_highest_priority_waiter_and_equals_in_queue_order() {
        let mut k = kstate();
        let f = Futex::new(4);
        let wait = |k: &mut _, p| run_to_sleep(k, sys_futex_wait(f.clone(), p)).expect("sleeps");
        let other = wait(&mut k, plist_prio(Policy::Other, 0));
        let fifo10 = wait(&mut k, plist_prio(Policy::Fifo, 10));
        let fifo90 = wait(&mut k, plist_prio(Policy::Fifo, 90));
        let rr10 = wait(&mut k, plist_prio(Policy::Rr, 10));
        let mut woken = Vec::new();
        for _ in 0..4 {
            assert!(f.post());
            k.out.clear();
            assert_eq!(run_to_sleep(&mut k, sys_futex_wake(f.clone(), 1)), None);
            let [KReq::Wake(c)] = k.out.as_slice() else {
                panic!("one wake: {:?}", k.out)
            };
            woken.push(*c);
        }
        assert_eq!(woken, [fifo90, fifo10, rr10, other]);
    }
}
