//! Sleeping locks with priority inheritance: PREEMPT_RT's `spinlock_t` as an rt_mutex
//! (kernel/locking/rtmutex.c, kernel/locking/spinlock_rt.c of 6.x;
//! Documentation/locking/rt-mutex-design.rst).
//!
//! Under a variant with `locks = "sleeping"`, a step that needs a sleeping lock
//! ([`Lock::kind`]) another task owns blocks on it (`rt_spin_lock` ->
//! `rtlock_slowlock_locked`): it joins the lock's waiters, ordered by priority
//! (`rt_mutex_waiter_less`: lower kernel `prio` first, FIFO among equals), and the owner is
//! boosted to its top waiter's priority (`rt_mutex_adjust_prio` -> `rt_mutex_setprio`). If
//! that owner is itself blocked on another lock, the boost walks on to that lock's owner
//! (`rt_mutex_adjust_prio_chain`, at most `max_lock_depth` 1024 links). The unlock
//! (`rt_spin_unlock` -> `rt_mutex_slowunlock`) deboosts the owner to what its remaining
//! locks' waiters ask, or its own priority, and wakes the top waiter, which the model hands
//! the lock to at once (the kernel's woken waiter takes it when it runs unless a task of
//! higher priority steals it first: a steal is not modelled).
//!
//! Priorities are the kernel's `prio`: `99 - rt_priority` for SCHED_FIFO/RR, `120 + nice`
//! for SCHED_OTHER; lower is higher. A boost into the RT range makes a SCHED_OTHER owner
//! SCHED_FIFO at the waiter's priority until it is deboosted. A fair waiter of better nice
//! than a fair owner changes nothing the model's fair class reads: 6.x's
//! `__setscheduler_prio` keeps such an owner in the fair class, and its weight comes from
//! `static_prio` (`set_load_weight`), not `prio`.
//!
//! The CPU loop asks this module only at step boundaries (`cpu/rtmutex.rs`): at a step's
//! start that needs a sleeping lock, at the end of the step that releases it, and when a
//! path blocks or ends (every lock it still owns is released). Locks held across steps
//! (`hold`) nest, so chains can form. Not modelled: `raw_spinlock_t`s the model has no
//! step for (`rq->lock`: schedule()'s time is charged as interrupts-off time), the
//! adaptive spin of `rtlock_slowlock` while the owner runs on another CPU. An owner's
//! `migrate_disable()` is the task's `migration_disabled` (kept by cpu/rtmutex.rs, read by
//! the SMP scheduler's balance, RT push and pull, and wakeup placement).

use super::lock::Lock;
use super::sched_class::Scheduler;
use super::task::{Policy, Task, TaskId, TaskState};
use latlab_core::Nanos;
use rustc_hash::FxHashMap;

/// `max_lock_depth` (kernel/locking/rtmutex.c): the longest boost chain walked.
const MAX_LOCK_DEPTH: usize = 1024;

/// A task waiting for a lock (`struct rt_mutex_waiter`).
#[derive(Clone, Copy, Debug)]
struct Waiter {
    task: TaskId,
    /// Its `prio` when it queued (or was requeued by a boost).
    prio: i32,
    /// Arrival order among waiters of equal `prio`.
    seq: u64,
}

/// A lock instance: the lock, and for a per-CPU one ([`Lock::per_cpu`]) the CPU's.
type Key = (Lock, Option<u8>);

/// One lock's owner and waiters (`struct rt_mutex_base`: owner, waiters tree).
#[derive(Clone, Debug)]
struct LockState {
    key: Key,
    owner: TaskId,
    /// By (`prio`, `seq`): the top waiter first.
    waiters: Vec<Waiter>,
}

/// A boosted task: its own policy and priority (`normal_prio`) and the `prio` it runs at.
#[derive(Clone, Copy, Debug)]
struct Boost {
    normal: (Policy, u32),
    prio: i32,
}

/// A priority change for the CPU loop to make (`rt_mutex_setprio`): task `task` runs with
/// `policy` at `rt_priority` from now on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Setprio {
    pub task: TaskId,
    pub policy: Policy,
    pub rt_priority: u32,
}

/// What `lock` found.
#[derive(Debug, PartialEq, Eq)]
pub enum Acquire {
    /// The task owns the lock (it was free, or the task already held it).
    Owned,
    /// Another task owns it: the caller sleeps until the unlock hands it over, after making
    /// the priority changes the boost asks.
    Blocked { owner: TaskId, boosts: Vec<Setprio> },
}

/// What `unlock` asks of the caller.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Release {
    /// The top waiter, now the lock's owner: to be woken.
    pub next_owner: Option<TaskId>,
    /// Deboosts (and the new owner's boost by the waiters left).
    pub setprio: Vec<Setprio>,
}

/// The sleeping locks owned and waited for.
#[derive(Debug, Default)]
pub struct RtMutexes {
    /// Owned locks (few at a time: a vector, searched by lock).
    held: Vec<LockState>,
    /// The lock each blocked task waits for (`task->pi_blocked_on`).
    blocked_on: FxHashMap<TaskId, Key>,
    /// Boosted tasks.
    boosted: FxHashMap<TaskId, Boost>,
    seq: u64,
    /// Priority inheritance off (a test's switch: no rt_mutex is without it).
    #[cfg(test)]
    pub(crate) no_pi: bool,
}

/// The kernel `prio` of a task running with `policy` at `rt_priority` and `nice`.
fn kprio(policy: Policy, rt_priority: u32, nice: i32) -> i32 {
    if policy == Policy::Other {
        120 + nice
    } else {
        99 - rt_priority.min(99) as i32
    }
}

impl RtMutexes {
    #[cfg(test)]
    fn pi_on(&self) -> bool {
        !self.no_pi
    }
    #[cfg(not(test))]
    fn pi_on(&self) -> bool {
        true
    }

    /// The owner of lock instance `key`, if owned.
    fn owner(&self, key: Key) -> Option<TaskId> {
        self.held.iter().find(|s| s.key == key).map(|s| s.owner)
    }

    /// Does `t` own any lock?
    pub fn owns_any(&self, t: TaskId) -> bool {
        self.held.iter().any(|s| s.owner == t)
    }

    /// `t`'s own policy and priority, whatever boost it runs under.
    fn normal(&self, t: TaskId, tasks: &[Task]) -> (Policy, u32) {
        self.boosted
            .get(&t)
            .map_or((tasks[t].policy, tasks[t].rt_priority), |b| b.normal)
    }

    /// The `prio` `t` runs at.
    fn prio(&self, t: TaskId, tasks: &[Task]) -> i32 {
        self.boosted.get(&t).map_or_else(
            || kprio(tasks[t].policy, tasks[t].rt_priority, tasks[t].nice),
            |b| b.prio,
        )
    }

    /// `rt_spin_lock` by task `t` on CPU `cpu`: take `lock` (the CPU's own, for a per-CPU
    /// lock) if free (or already `t`'s), else queue `t` by priority and boost the chain of
    /// owners.
    pub fn lock(&mut self, lock: Lock, t: TaskId, cpu: u8, tasks: &[Task]) -> Acquire {
        let key = (lock, lock.per_cpu().then_some(cpu));
        let prio = self.prio(t, tasks);
        let seq = self.seq;
        let Some(s) = self.held.iter_mut().find(|s| s.key == key) else {
            self.held.push(LockState {
                key,
                owner: t,
                waiters: Vec::new(),
            });
            return Acquire::Owned;
        };
        if s.owner == t {
            return Acquire::Owned;
        }
        let owner = s.owner;
        self.seq += 1;
        insert(&mut s.waiters, Waiter { task: t, prio, seq });
        self.blocked_on.insert(t, key);
        let mut boosts = Vec::new();
        self.adjust_chain(key, tasks, &mut boosts);
        Acquire::Blocked { owner, boosts }
    }

    /// `rt_spin_unlock` by owner `t`: the top waiter (if any) owns `lock` now; `t` runs at
    /// what its other locks' waiters ask, or its own priority.
    pub fn unlock(&mut self, lock: Lock, t: TaskId, tasks: &[Task]) -> Release {
        let mut r = Release::default();
        let Some(i) = self.held.iter().position(|s| s.key.0 == lock && s.owner == t) else {
            return r;
        };
        let s = &mut self.held[i];
        if s.waiters.is_empty() {
            self.held.swap_remove(i);
        } else {
            let w = s.waiters.remove(0);
            s.owner = w.task;
            self.blocked_on.remove(&w.task);
            r.next_owner = Some(w.task);
        }
        self.update_owner(t, tasks, &mut r.setprio);
        if let Some(n) = r.next_owner {
            self.update_owner(n, tasks, &mut r.setprio);
        }
        r
    }

    /// Every lock `t` owns, released (a path that blocks or ends), in the order taken.
    pub fn unlock_all(&mut self, t: TaskId, tasks: &[Task]) -> Vec<Release> {
        let mine: Vec<Lock> = self.held.iter().filter(|s| s.owner == t).map(|s| s.key.0).collect();
        mine.into_iter().map(|l| self.unlock(l, t, tasks)).collect()
    }

    /// `rt_mutex_adjust_prio_chain`: from `lock`'s owner on, while a boost changes an
    /// owner's priority and that owner is blocked itself, requeue it and go on to the owner
    /// of what it waits for.
    fn adjust_chain(&mut self, mut key: Key, tasks: &[Task], out: &mut Vec<Setprio>) {
        for _ in 0..MAX_LOCK_DEPTH {
            let Some(o) = self.owner(key) else { return };
            if !self.update_owner(o, tasks, out) {
                return;
            }
            let Some(&next) = self.blocked_on.get(&o) else { return };
            let prio = self.prio(o, tasks);
            if let Some(s) = self.held.iter_mut().find(|s| s.key == next) {
                if let Some(i) = s.waiters.iter().position(|w| w.task == o) {
                    let w = s.waiters.remove(i);
                    insert(&mut s.waiters, Waiter { prio, ..w });
                }
            }
            key = next;
        }
    }

    /// `rt_mutex_adjust_prio` of owner `o`: the best of its own priority and its locks' top
    /// waiters'; true (and the change in `out`) if that differs from what it runs at.
    fn update_owner(&mut self, o: TaskId, tasks: &[Task], out: &mut Vec<Setprio>) -> bool {
        let normal = self.normal(o, tasks);
        let own = kprio(normal.0, normal.1, tasks[o].nice);
        let top = self
            .held
            .iter()
            .filter(|s| s.owner == o)
            .filter_map(|s| s.waiters.first())
            .map(|w| w.prio)
            .min();
        // Only a boost into the RT range changes anything the model's classes read.
        let target = match top {
            Some(p) if self.pi_on() && p < own && p < 100 => p,
            _ => own,
        };
        if target == self.prio(o, tasks) {
            return false;
        }
        if target == own {
            self.boosted.remove(&o);
            out.push(Setprio {
                task: o,
                policy: normal.0,
                rt_priority: normal.1,
            });
        } else {
            self.boosted.insert(o, Boost { normal, prio: target });
            out.push(Setprio {
                task: o,
                policy: if normal.0 == Policy::Other {
                    Policy::Fifo
                } else {
                    normal.0
                },
                rt_priority: (99 - target) as u32,
            });
        }
        true
    }
}

/// Queue `w` behind every waiter of its priority or better.
fn insert(waiters: &mut Vec<Waiter>, w: Waiter) {
    let at = waiters
        .iter()
        .position(|x| (x.prio, x.seq) > (w.prio, w.seq))
        .unwrap_or(waiters.len());
    waiters.insert(at, w);
}

/// `rt_mutex_setprio` (kernel/sched/core.c): task `s.task` leaves its queue under its old
/// class and priority and rejoins it under the new (a task not runnable only changes).
pub fn setprio(tasks: &mut [Task], sched: &mut dyn Scheduler, s: Setprio, now: Nanos) {
    let queued = tasks[s.task].state == TaskState::Runnable;
    if queued {
        sched.dequeue(tasks, s.task, now);
    }
    tasks[s.task].policy = s.policy;
    tasks[s.task].rt_priority = s.rt_priority;
    if queued {
        sched.enqueue(tasks, s.task, now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::task::tests_task;

    /// Tasks 0..4: 0 SCHED_OTHER nice 0, 1 FIFO 10, 2 FIFO 50, 3 FIFO 90.
    fn tasks() -> Vec<Task> {
        (0..4)
            .map(|i| {
                let mut t = tests_task();
                if i > 0 {
                    t.policy = Policy::Fifo;
                    t.rt_priority = [0, 10, 50, 90][i];
                }
                t
            })
            .collect()
    }

    fn apply(ts: &mut [Task], s: &[Setprio]) {
        for x in s {
            ts[x.task].policy = x.policy;
            ts[x.task].rt_priority = x.rt_priority;
        }
    }

    #[test]
    fn waiters_queue_by_priority_and_the_top_one_is_handed_the_lock() {
        let mut ts = tasks();
        let mut m = RtMutexes::default();
        assert_eq!(m.lock(Lock::Dcache, 0, 0, &ts), Acquire::Owned);
        assert_eq!(m.lock(Lock::Dcache, 0, 0, &ts), Acquire::Owned, "the owner again");
        for w in [1, 3, 2] {
            let Acquire::Blocked { owner, boosts } = m.lock(Lock::Dcache, w, 0, &ts) else {
                panic!("owned by 0")
            };
            assert_eq!(owner, 0);
            apply(&mut ts, &boosts);
        }
        // Boosted to the top waiter's FIFO 90.
        assert_eq!((ts[0].policy, ts[0].rt_priority), (Policy::Fifo, 90));
        let r = m.unlock(Lock::Dcache, 0, &ts);
        assert_eq!(r.next_owner, Some(3));
        // Task 0 deboosted to SCHED_OTHER; task 3 needs no boost (FIFO 90 > 50 waiting).
        assert_eq!(
            r.setprio,
            vec![Setprio {
                task: 0,
                policy: Policy::Other,
                rt_priority: 0
            }]
        );
        apply(&mut ts, &r.setprio);
        assert_eq!(m.owner((Lock::Dcache, None)), Some(3));
        assert_eq!(m.unlock(Lock::Dcache, 3, &ts).next_owner, Some(2));
        assert_eq!(m.unlock(Lock::Dcache, 2, &ts).next_owner, Some(1));
        assert_eq!(m.unlock(Lock::Dcache, 1, &ts).next_owner, None);
        assert_eq!(m.owner((Lock::Dcache, None)), None);
    }

    #[test]
    fn a_boost_walks_the_chain_of_owners_blocked_on_other_locks() {
        let mut ts = tasks();
        let mut m = RtMutexes::default();
        // 0 owns Inode; 1 owns Dcache and blocks on Inode; 3 (FIFO 90) blocks on Dcache.
        assert_eq!(m.lock(Lock::Inode, 0, 0, &ts), Acquire::Owned);
        assert_eq!(m.lock(Lock::Dcache, 1, 0, &ts), Acquire::Owned);
        let Acquire::Blocked { boosts, .. } = m.lock(Lock::Inode, 1, 0, &ts) else {
            panic!()
        };
        apply(&mut ts, &boosts);
        assert_eq!((ts[0].policy, ts[0].rt_priority), (Policy::Fifo, 10));
        let Acquire::Blocked { owner, boosts } = m.lock(Lock::Dcache, 3, 0, &ts) else {
            panic!()
        };
        assert_eq!(owner, 1);
        apply(&mut ts, &boosts);
        assert_eq!(ts[1].rt_priority, 90);
        assert_eq!(ts[0].rt_priority, 90, "the owner at the chain's end: {boosts:?}");
        // 0 releases Inode: deboosted to SCHED_OTHER; 1 owns Inode, still boosted by 3.
        let r = m.unlock(Lock::Inode, 0, &ts);
        apply(&mut ts, &r.setprio);
        assert_eq!(r.next_owner, Some(1));
        assert_eq!((ts[0].policy, ts[1].rt_priority), (Policy::Other, 90));
        // 1 ends its path: both locks go, Dcache to 3; 1 back to FIFO 10.
        let rs = m.unlock_all(1, &ts);
        for r in &rs {
            apply(&mut ts, &r.setprio);
        }
        assert_eq!(ts[1].rt_priority, 10);
        assert_eq!(m.owner((Lock::Dcache, None)), Some(3));
        assert_eq!(m.owner((Lock::Inode, None)), None);
    }

    #[test]
    fn the_bh_lock_is_one_per_cpu() {
        let ts = tasks();
        let mut m = RtMutexes::default();
        assert_eq!(m.lock(Lock::Softirq, 0, 0, &ts), Acquire::Owned);
        assert_eq!(m.lock(Lock::Softirq, 1, 1, &ts), Acquire::Owned, "CPU 1's own");
        assert!(matches!(
            m.lock(Lock::Softirq, 2, 0, &ts),
            Acquire::Blocked { owner: 0, .. }
        ));
        assert_eq!(m.unlock(Lock::Softirq, 0, &ts).next_owner, Some(2));
        assert_eq!(m.owner((Lock::Softirq, Some(1))), Some(1));
    }

    #[test]
    fn without_priority_inheritance_the_owner_keeps_its_priority() {
        let ts = tasks();
        let mut m = RtMutexes {
            no_pi: true,
            ..Default::default()
        };
        m.lock(Lock::Dcache, 0, 0, &ts);
        let Acquire::Blocked { boosts, .. } = m.lock(Lock::Dcache, 3, 0, &ts) else {
            panic!()
        };
        assert!(boosts.is_empty());
    }
}
