//! Ingo Molnar's O(1) scheduler as in Linux 2.6.11 kernel/sched.c (the 2.6.0-2.6.22
//! design), uniprocessor: one runqueue with an `active` and an `expired` prio array (a
//! bitmap and a FIFO list per priority, `MAX_PRIO` 140 of them); schedule() takes the head
//! of the list of the first set bit, and swaps the arrays when `active` is empty. SCHED_OTHER
//! tasks get a timeslice from their nice level (`task_timeslice`) and a dynamic priority
//! from their sleep average (`effective_prio`); tasks the interactivity estimator rates
//! interactive go back on `active` when their slice expires (unless the expired ones
//! starve), the others to `expired`. SCHED_FIFO/RR tasks sit in priorities 0..99
//! (`99 - rt_priority`), above every SCHED_OTHER task. Names are the kernel's; each formula
//! is quoted above the code that follows it.
//!
//! On a machine of several logical CPUs they share this one runqueue (see `pick_excluding`:
//! 2.6.17's SMT domain for a Hyper-Threading pair); not modelled: per-CPU runqueues, load
//! balancing between busy CPUs, migration costs, `dependent_sleeper`, `sched_exit()` (an
//! exiting child's unused first slice back to its parent), `sched_yield`, `set_user_nice`,
//! and the two wakeup kinds the trait does not tell apart: an uninterruptible sleeper's
//! capped sleep_avg rise (`activated == -1`) and an interrupt wakeup's full on-runqueue
//! credit (`activated == 2`); every wakeup counts as an ordinary one (`activated == 1`).

use super::Scheduler;
use crate::kernel::task::{Policy, Task, TaskId};
use crate::machine::MachineProfile;
use latlab_core::Nanos;
use std::collections::VecDeque;

/// include/linux/sched.h (2.6.11): `MAX_USER_RT_PRIO 100`, `MAX_RT_PRIO MAX_USER_RT_PRIO`.
pub const MAX_RT_PRIO: i32 = 100;
/// include/linux/sched.h (2.6.11): `MAX_PRIO (MAX_RT_PRIO + 40)`.
pub const MAX_PRIO: i32 = MAX_RT_PRIO + 40;
/// kernel/sched.c (2.6.11): `MAX_USER_PRIO (USER_PRIO(MAX_PRIO))`, `USER_PRIO(p) ((p)-MAX_RT_PRIO)`.
const MAX_USER_PRIO: i32 = MAX_PRIO - MAX_RT_PRIO;
/// kernel/sched.c (2.6.11): `PRIO_BONUS_RATIO 25`.
const PRIO_BONUS_RATIO: i32 = 25;
/// kernel/sched.c (2.6.11): `MAX_BONUS (MAX_USER_PRIO * PRIO_BONUS_RATIO / 100)` = 10.
pub const MAX_BONUS: i32 = MAX_USER_PRIO * PRIO_BONUS_RATIO / 100;
/// kernel/sched.c (2.6.11): `INTERACTIVE_DELTA 2`.
const INTERACTIVE_DELTA: i32 = 2;
/// kernel/sched.c (2.6.11): `ON_RUNQUEUE_WEIGHT 30` (per cent of the on-runqueue wait
/// credited to an ordinary wakeup's sleep_avg).
const ON_RUNQUEUE_WEIGHT: u64 = 30;
/// kernel/sched.c (2.6.11): `CHILD_PENALTY 95`.
const CHILD_PENALTY: u64 = 95;
/// kernel/sched.c (2.6.11): `PARENT_PENALTY 100`.
const PARENT_PENALTY: u64 = 100;

/// Instructions of the O(1) pick beyond schedule()'s fixed part (`schedule_base_ns`, which
/// goodness24 pays too). Arithmetic from 2.6.11: `sched_find_first_bit`
/// (include/asm-i386/bitops.h) tests up to five bitmap words and runs one `bsfl` (about 12
/// instructions); `array->queue + idx`, `queue->next`, `list_entry` (4); the
/// `!array->nr_active` test and, when it holds, the active/expired pointer swap with
/// `expired_timestamp` and `best_expired_prio` reset (6): about 25 instructions, on the
/// runqueue's own cache lines, which every schedule() touches (no miss counted, as
/// goodness24's per-task cost counts a cache-hot task_struct). The same for any number of
/// runnable tasks.
pub const PICK_INSTR: f64 = 25.0;
/// Instructions of the on-runqueue credit schedule() gives a woken `next`
/// (`dequeue_task`, `recalc_task_prio`, `enqueue_task`): arithmetic from 2.6.11's code,
/// about 45 (a 64-bit multiply and divide, two list operations, two bitmap updates).
pub const RECALC_INSTR: f64 = 45.0;

/// Per-task scheduler state (the O(1) fields of 2.6.11's `task_struct`).
#[derive(Clone, Debug)]
struct PTask {
    static_prio: i32,
    prio: i32,
    /// ns, 0 ..= NS_MAX_SLEEP_AVG.
    sleep_avg: Nanos,
    /// Jiffies left.
    time_slice: u32,
    /// `sched_clock()` when it last slept, woke or was switched.
    timestamp: Nanos,
    /// Woken since it last ran (`activated > 0`).
    activated: bool,
    /// The prio array holding it (index into `O1::arrays`), if on the runqueue.
    array: Option<usize>,
    rt: bool,
    nice: i32,
    /// Has an address space (`p->mm`): kernel threads do not.
    mm: bool,
    policy: Policy,
}

/// `struct prio_array`.
#[derive(Clone, Debug)]
struct PrioArray {
    nr_active: usize,
    /// Bit `i` set iff `queue[i]` is not empty (192 bits for MAX_PRIO 140).
    bitmap: [u64; 3],
    queue: Vec<VecDeque<TaskId>>,
}

impl PrioArray {
    fn new() -> Self {
        PrioArray {
            nr_active: 0,
            bitmap: [0; 3],
            queue: vec![VecDeque::new(); MAX_PRIO as usize],
        }
    }

    /// `sched_find_first_bit(array->bitmap)`: the first word with a bit set, then `__ffs`.
    fn find_first_bit(&self) -> Option<usize> {
        self.bitmap
            .iter()
            .enumerate()
            .find(|(_, w)| **w != 0)
            .map(|(i, w)| i * 64 + w.trailing_zeros() as usize)
    }

    fn set_bit(&mut self, prio: usize) {
        self.bitmap[prio / 64] |= 1 << (prio % 64);
    }

    fn clear_bit(&mut self, prio: usize) {
        self.bitmap[prio / 64] &= !(1 << (prio % 64));
    }
}

/// A child between `fork()` (sched_fork) and its first `enqueue` (wake_up_new_task).
#[derive(Clone, Copy, Debug)]
struct NewChild {
    child: TaskId,
    parent: TaskId,
    /// No CLONE_VM: child-runs-first.
    run_first: bool,
    /// sched_fork's scheduler_tick() expired the parent's slice.
    resched_parent: bool,
}

/// The O(1) scheduler's runqueue (`struct runqueue`, one CPU).
pub struct O1 {
    hz: u32,
    arrays: [PrioArray; 2],
    /// Index of `rq->active`; `rq->expired` is the other one.
    active: usize,
    nr_running: usize,
    /// `rq->expired_timestamp` (jiffies), None for 0.
    expired_timestamp: Option<u64>,
    best_expired_prio: i32,
    /// Timer ticks seen (the kernel's `jiffies`: `tick` is called on every one, on each CPU).
    jiffies: u64,
    /// When the last tick came: every CPU's `scheduler_tick` runs at the same instant.
    last_tick: Option<Nanos>,
    st: Vec<Option<PTask>>,
    new_child: Option<NewChild>,
    /// The task the last `enqueue` activated and whether waking it reschedules the current
    /// task regardless of priority (wake_up_new_task's `set_need_resched()`).
    last_enqueued: Option<(TaskId, Option<bool>)>,
}

impl O1 {
    pub fn new(hz: u32) -> Self {
        O1 {
            hz,
            arrays: [PrioArray::new(), PrioArray::new()],
            active: 0,
            nr_running: 0,
            expired_timestamp: None,
            best_expired_prio: MAX_PRIO,
            jiffies: 0,
            last_tick: None,
            st: Vec::new(),
            new_child: None,
            last_enqueued: None,
        }
    }

    // ----- the kernel's tuning macros, in jiffies at this HZ ------------------------------

    fn ns_per_jiffy(&self) -> Nanos {
        1_000_000_000 / self.hz as Nanos
    }
    /// `NS_TO_JIFFIES(TIME) ((TIME) / (1000000000 / HZ))`
    fn ns_to_jiffies(&self, ns: Nanos) -> u64 {
        ns / self.ns_per_jiffy()
    }
    /// `JIFFIES_TO_NS(TIME) ((TIME) * (1000000000 / HZ))`
    fn jiffies_to_ns(&self, j: u64) -> Nanos {
        j * self.ns_per_jiffy()
    }
    /// `MIN_TIMESLICE max(5 * HZ / 1000, 1)`
    pub fn min_timeslice(&self) -> u32 {
        (5 * self.hz / 1000).max(1)
    }
    /// `DEF_TIMESLICE (100 * HZ / 1000)`
    pub fn def_timeslice(&self) -> u32 {
        100 * self.hz / 1000
    }
    /// `MAX_SLEEP_AVG (DEF_TIMESLICE * MAX_BONUS)`, jiffies.
    fn max_sleep_avg(&self) -> u64 {
        self.def_timeslice() as u64 * MAX_BONUS as u64
    }
    /// `NS_MAX_SLEEP_AVG (JIFFIES_TO_NS(MAX_SLEEP_AVG))`
    pub fn ns_max_sleep_avg(&self) -> Nanos {
        self.jiffies_to_ns(self.max_sleep_avg())
    }
    /// `STARVATION_LIMIT (MAX_SLEEP_AVG)`, jiffies.
    fn starvation_limit(&self) -> u64 {
        self.max_sleep_avg()
    }
    /// `GRANULARITY (10 * HZ / 1000 ? : 1)`
    fn granularity(&self) -> u32 {
        (10 * self.hz / 1000).max(1)
    }

    /// `SCALE_PRIO(x, prio) max(x * (MAX_PRIO - prio) / (MAX_USER_PRIO/2), MIN_TIMESLICE)`
    fn scale_prio(&self, x: u32, prio: i32) -> u32 {
        (x * (MAX_PRIO - prio) as u32 / (MAX_USER_PRIO / 2) as u32).max(self.min_timeslice())
    }

    /// `task_timeslice(p)`: `static_prio < NICE_TO_PRIO(0) ? SCALE_PRIO(DEF_TIMESLICE*4,
    /// static_prio) : SCALE_PRIO(DEF_TIMESLICE, static_prio)`, jiffies: 800 ms at nice
    /// -20, 100 ms at 0, 5 ms (or one jiffy, whichever is longer) at +19.
    pub fn task_timeslice(&self, static_prio: i32) -> u32 {
        if static_prio < nice_to_prio(0) {
            self.scale_prio(self.def_timeslice() * 4, static_prio)
        } else {
            self.scale_prio(self.def_timeslice(), static_prio)
        }
    }

    /// `CURRENT_BONUS(p) (NS_TO_JIFFIES((p)->sleep_avg) * MAX_BONUS / MAX_SLEEP_AVG)`
    pub fn current_bonus(&self, sleep_avg: Nanos) -> i32 {
        (self.ns_to_jiffies(sleep_avg) * MAX_BONUS as u64 / self.max_sleep_avg()) as i32
    }

    /// `INTERACTIVE_SLEEP(p) (JIFFIES_TO_NS(MAX_SLEEP_AVG * (MAX_BONUS / 2 + DELTA((p)) + 1)
    /// / MAX_BONUS - 1))`
    fn interactive_sleep(&self, nice: i32) -> Nanos {
        let j = self.max_sleep_avg() as i64 * (MAX_BONUS / 2 + delta(nice) + 1) as i64 / MAX_BONUS as i64 - 1;
        self.jiffies_to_ns(j.max(0) as u64)
    }

    /// `TIMESLICE_GRANULARITY(p) (GRANULARITY * (1 << (((MAX_BONUS - CURRENT_BONUS(p)) ? :
    /// 1) - 1)))` (UP: no `num_online_cpus()` factor).
    fn timeslice_granularity(&self, sleep_avg: Nanos) -> u32 {
        let b = MAX_BONUS - self.current_bonus(sleep_avg);
        self.granularity() * (1 << (b.max(1) - 1))
    }

    /// `effective_prio(p)`: RT tasks keep `prio`; otherwise `bonus = CURRENT_BONUS(p) -
    /// MAX_BONUS / 2; prio = static_prio - bonus`, clamped to [MAX_RT_PRIO, MAX_PRIO-1].
    fn effective_prio(&self, p: &PTask) -> i32 {
        if p.rt {
            return p.prio;
        }
        let bonus = self.current_bonus(p.sleep_avg) - MAX_BONUS / 2;
        (p.static_prio - bonus).clamp(MAX_RT_PRIO, MAX_PRIO - 1)
    }

    /// `TASK_INTERACTIVE(p) ((p)->prio <= (p)->static_prio - DELTA(p))`
    fn task_interactive(p: &PTask) -> bool {
        p.prio <= p.static_prio - delta(p.nice)
    }

    /// `EXPIRED_STARVING(rq)`: `(STARVATION_LIMIT && (rq->expired_timestamp && (jiffies -
    /// rq->expired_timestamp >= STARVATION_LIMIT * (rq->nr_running) + 1))) ||
    /// (rq->curr->static_prio > rq->best_expired_prio)` (`>= x + 1` written `> x`)
    fn expired_starving(&self, curr_static_prio: i32) -> bool {
        let waited = self
            .expired_timestamp
            .is_some_and(|t| self.jiffies - t > self.starvation_limit() * self.nr_running as u64);
        waited || curr_static_prio > self.best_expired_prio
    }

    // ----- per-task state --------------------------------------------------------------

    fn p(&self, t: TaskId) -> &PTask {
        self.st[t].as_ref().expect("task known to the O(1) scheduler")
    }

    fn pm(&mut self, t: TaskId) -> &mut PTask {
        self.st[t].as_mut().expect("task known to the O(1) scheduler")
    }

    /// A task's scheduler fields from its policy and nice level: `static_prio =
    /// NICE_TO_PRIO(nice)`; RT (`sched_setscheduler`): `prio = MAX_USER_RT_PRIO-1 -
    /// rt_priority`; a fresh `task_timeslice`.
    fn fresh(&self, task: &Task, now: Nanos) -> PTask {
        let static_prio = nice_to_prio(task.nice);
        let rt = task.policy != Policy::Other;
        PTask {
            static_prio,
            prio: if rt {
                MAX_RT_PRIO - 1 - task.rt_priority as i32
            } else {
                static_prio
            },
            sleep_avg: 0,
            time_slice: self.task_timeslice(static_prio),
            timestamp: now,
            activated: false,
            array: None,
            rt,
            nice: task.nice,
            mm: task.mm != 0,
            policy: task.policy,
        }
    }

    fn ensure(&mut self, tasks: &[Task], t: TaskId, now: Nanos) {
        if self.st.len() <= t {
            self.st.resize(t + 1, None);
        }
        if self.st[t].is_none() {
            let mut p = self.fresh(&tasks[t], now);
            p.prio = self.effective_prio(&p);
            self.st[t] = Some(p);
        }
    }

    // ----- prio arrays -----------------------------------------------------------------

    /// The task schedule() takes: the head of `active`'s first non-empty priority list,
    /// switching the arrays when `active` is empty (`rq->expired` becomes `rq->active`);
    /// on SMP, the first task in that order that no other CPU runs (`busy`), switching
    /// when `active` holds none.
    fn first_eligible(&mut self, busy: &[TaskId]) -> Option<TaskId> {
        let first = |arr: &PrioArray| -> Option<TaskId> {
            if busy.is_empty() {
                let idx = arr.find_first_bit()?;
                return Some(*arr.queue[idx].front().expect("bit set: list not empty"));
            }
            arr.queue.iter().flatten().copied().find(|t| !busy.contains(t))
        };
        if let Some(t) = first(&self.arrays[self.active]) {
            return Some(t);
        }
        // Switch the active and expired arrays.
        let t = first(&self.arrays[1 - self.active])?;
        self.active = 1 - self.active;
        self.expired_timestamp = None;
        self.best_expired_prio = MAX_PRIO;
        Some(t)
    }

    /// `enqueue_task(p, array)`: `list_add_tail` on `queue[p->prio]`, set the bit.
    fn enqueue_task(&mut self, t: TaskId, a: usize) {
        let prio = self.p(t).prio as usize;
        let arr = &mut self.arrays[a];
        arr.queue[prio].push_back(t);
        arr.set_bit(prio);
        arr.nr_active += 1;
        self.pm(t).array = Some(a);
    }

    /// `dequeue_task(p, array)`: `list_del`, clear the bit if the list emptied.
    fn dequeue_task(&mut self, t: TaskId, a: usize) {
        let prio = self.p(t).prio as usize;
        let arr = &mut self.arrays[a];
        if let Some(i) = arr.queue[prio].iter().position(|&x| x == t) {
            arr.queue[prio].remove(i);
        }
        if arr.queue[prio].is_empty() {
            arr.clear_bit(prio);
        }
        arr.nr_active -= 1;
        self.pm(t).array = None;
    }

    /// `requeue_task(p, array)`: `list_move_tail` within its priority.
    fn requeue_task(&mut self, t: TaskId, a: usize) {
        let prio = self.p(t).prio as usize;
        let q = &mut self.arrays[a].queue[prio];
        if let Some(i) = q.iter().position(|&x| x == t) {
            q.remove(i);
            q.push_back(t);
        }
    }

    /// `__activate_task(p, rq)`: enqueue on the active array.
    fn activate(&mut self, t: TaskId) {
        self.enqueue_task(t, self.active);
        self.nr_running += 1;
    }

    /// `recalc_task_prio(p, now)`: credit the sleep since `p->timestamp` to sleep_avg and
    /// recompute the dynamic priority.
    fn recalc_task_prio(&mut self, t: TaskId, now: Nanos) {
        let ns_max = self.ns_max_sleep_avg();
        let p = self.p(t).clone();
        // `__sleep_time = now - p->timestamp`, capped at NS_MAX_SLEEP_AVG.
        let mut sleep_time = now.saturating_sub(p.timestamp).min(ns_max);
        let mut sleep_avg = p.sleep_avg;
        if sleep_time > 0 {
            if p.mm && sleep_time > self.interactive_sleep(p.nice) {
                // A user task asleep longer than INTERACTIVE_SLEEP: `p->sleep_avg =
                // JIFFIES_TO_NS(MAX_SLEEP_AVG - DEF_TIMESLICE)` (just interactive).
                sleep_avg = self.jiffies_to_ns(self.max_sleep_avg() - self.def_timeslice() as u64);
            } else {
                // `sleep_time *= (MAX_BONUS - CURRENT_BONUS(p)) ? : 1;` then
                // `p->sleep_avg += sleep_time`, capped at NS_MAX_SLEEP_AVG.
                sleep_time *= (MAX_BONUS - self.current_bonus(sleep_avg)).max(1) as u64;
                sleep_avg = (sleep_avg + sleep_time).min(ns_max);
            }
        }
        let pm = self.pm(t);
        pm.sleep_avg = sleep_avg;
        let prio = self.effective_prio(self.p(t));
        self.pm(t).prio = prio;
    }

    /// `scheduler_tick()` for `curr` (also run by sched_fork when the parent's slice
    /// halves to nothing). True: set need_resched.
    fn scheduler_tick(&mut self, curr: TaskId) -> bool {
        let active = self.active;
        let p = self.p(curr).clone();
        // "Task might have expired already, but not scheduled off yet".
        if p.array != Some(active) {
            return true;
        }
        if p.rt {
            // RR tasks: `if ((p->policy == SCHED_RR) && !--p->time_slice)` refill
            // `task_timeslice(p)` and requeue at the tail. FIFO tasks have no timeslice.
            if p.policy == Policy::Rr {
                let left = p.time_slice.saturating_sub(1);
                self.pm(curr).time_slice = left;
                if left == 0 {
                    let ts = self.task_timeslice(p.static_prio);
                    self.pm(curr).time_slice = ts;
                    self.requeue_task(curr, active);
                    return true;
                }
            }
            return false;
        }
        let left = p.time_slice.saturating_sub(1);
        self.pm(curr).time_slice = left;
        if left == 0 {
            // Slice used up: `dequeue_task(p, rq->active); p->prio = effective_prio(p);
            // p->time_slice = task_timeslice(p);` then back on active if
            // `TASK_INTERACTIVE(p) && !EXPIRED_STARVING(rq)`, else on expired.
            self.dequeue_task(curr, active);
            let prio = self.effective_prio(self.p(curr));
            let ts = self.task_timeslice(p.static_prio);
            {
                let pm = self.pm(curr);
                pm.prio = prio;
                pm.time_slice = ts;
            }
            if self.expired_timestamp.is_none() {
                self.expired_timestamp = Some(self.jiffies);
            }
            let q = self.p(curr).clone();
            if !Self::task_interactive(&q) || self.expired_starving(q.static_prio) {
                self.enqueue_task(curr, 1 - active);
                self.best_expired_prio = self.best_expired_prio.min(q.static_prio);
            } else {
                self.enqueue_task(curr, active);
            }
            return true;
        }
        // Round-robin among interactive tasks of one priority: `if (TASK_INTERACTIVE(p) &&
        // !((task_timeslice(p) - p->time_slice) % TIMESLICE_GRANULARITY(p)) &&
        // (p->time_slice >= TIMESLICE_GRANULARITY(p)) && (p->array == rq->active))`
        // requeue it at the tail and reschedule.
        let gran = self.timeslice_granularity(p.sleep_avg);
        if Self::task_interactive(&p)
            && self
                .task_timeslice(p.static_prio)
                .saturating_sub(left)
                .is_multiple_of(gran)
            && left >= gran
        {
            self.requeue_task(curr, active);
            return true;
        }
        false
    }

    /// `wake_up_new_task(p, clone_flags)` on the parent's CPU; returns whether the parent
    /// must reschedule.
    fn wake_up_new_task(&mut self, nc: NewChild) -> bool {
        let msa = self.max_sleep_avg();
        // `p->sleep_avg = JIFFIES_TO_NS(CURRENT_BONUS(p) * CHILD_PENALTY / 100 *
        // MAX_SLEEP_AVG / MAX_BONUS); p->prio = effective_prio(p);`
        let cb = self.current_bonus(self.p(nc.child).sleep_avg) as u64;
        let sa = self.jiffies_to_ns(cb * CHILD_PENALTY / 100 * msa / MAX_BONUS as u64);
        self.pm(nc.child).sleep_avg = sa;
        let prio = self.effective_prio(self.p(nc.child));
        self.pm(nc.child).prio = prio;
        let resched = if nc.run_first {
            // Child-runs-first: `p->prio = current->prio; list_add_tail(&p->run_list,
            // &current->run_list)` (just ahead of the parent, in the parent's array), then
            // `set_need_resched()`. A parent off the runqueue: plain __activate_task.
            match self.p(nc.parent).array {
                None => self.activate(nc.child),
                Some(a) => {
                    let pprio = self.p(nc.parent).prio;
                    self.pm(nc.child).prio = pprio;
                    let q = &mut self.arrays[a].queue[pprio as usize];
                    let at = q.iter().position(|&x| x == nc.parent).unwrap_or(q.len());
                    q.insert(at, nc.child);
                    self.arrays[a].nr_active += 1;
                    self.pm(nc.child).array = Some(a);
                    self.nr_running += 1;
                }
            }
            true
        } else {
            // CLONE_VM: "Run child last".
            self.activate(nc.child);
            nc.resched_parent
        };
        // `current->sleep_avg = JIFFIES_TO_NS(CURRENT_BONUS(current) * PARENT_PENALTY / 100 *
        // MAX_SLEEP_AVG / MAX_BONUS)`
        let pb = self.current_bonus(self.p(nc.parent).sleep_avg) as u64;
        let psa = self.jiffies_to_ns(pb * PARENT_PENALTY / 100 * msa / MAX_BONUS as u64);
        self.pm(nc.parent).sleep_avg = psa;
        resched
    }

    /// The task's dynamic priority; the idle task (and one not yet seen) `MAX_PRIO`.
    fn prio(&self, t: TaskId) -> i32 {
        match self.st.get(t) {
            Some(Some(p)) if t != 0 => p.prio,
            _ => MAX_PRIO,
        }
    }
}

/// `NICE_TO_PRIO(nice) (MAX_RT_PRIO + (nice) + 20)`
pub fn nice_to_prio(nice: i32) -> i32 {
    MAX_RT_PRIO + nice + 20
}

/// `DELTA(p) (SCALE(TASK_NICE(p), 40, MAX_BONUS) + INTERACTIVE_DELTA)`, `SCALE(v1,v1_max,
/// v2_max) (v1) * (v2_max) / (v1_max)` (C division, truncating toward zero as Rust's).
pub fn delta(nice: i32) -> i32 {
    nice * MAX_BONUS / 40 + INTERACTIVE_DELTA
}

impl Scheduler for O1 {
    fn name(&self) -> &'static str {
        "o1"
    }

    fn enqueue(&mut self, tasks: &[Task], t: TaskId, now: Nanos) {
        if let Some(nc) = self.new_child.filter(|c| c.child == t) {
            self.new_child = None;
            let resched = self.wake_up_new_task(nc);
            self.last_enqueued = Some((t, Some(resched)));
            return;
        }
        self.last_enqueued = Some((t, None));
        if self.st.get(t).is_some_and(|p| p.is_some()) {
            // try_to_wake_up: already on a runqueue -> nothing to do.
            if self.p(t).array.is_some() {
                return;
            }
            // activate_task(): `recalc_task_prio(p, now)`; an ordinary wakeup is credited
            // for its wait on the runqueue at its first schedule (`p->activated = 1`);
            // `p->timestamp = now`; `__activate_task`.
            self.recalc_task_prio(t, now);
            let p = self.pm(t);
            p.activated = true;
            p.timestamp = now;
            self.activate(t);
        } else {
            // A task the model starts without a parent (kernel threads, the measurement
            // task, the shell): fresh fields, onto the active array.
            self.ensure(tasks, t, now);
            self.activate(t);
        }
    }

    fn dequeue(&mut self, _tasks: &[Task], t: TaskId, _now: Nanos) {
        // deactivate_task(): `rq->nr_running--; dequeue_task(p, p->array)`.
        if let Some(a) = self.st.get(t).and_then(|p| p.as_ref()).and_then(|p| p.array) {
            self.dequeue_task(t, a);
            self.nr_running -= 1;
        }
    }

    fn pick(&mut self, tasks: &[Task], prev: TaskId, m: &MachineProfile, now: Nanos) -> (TaskId, Nanos) {
        self.pick_excluding(tasks, prev, &[], m, now)
    }

    fn smp(&self) -> bool {
        true
    }

    /// Two logical CPUs share this one runqueue. 2.6.17's SMT domain balances siblings at
    /// once where it matters here: a wakeup goes to an idle sibling (SD_WAKE_IDLE, the
    /// kernel's choice of CPU) and a CPU about to idle pulls a queued task
    /// (SD_BALANCE_NEWIDLE, `idle_balance`), which a shared queue does by construction. Not
    /// modelled: per-CPU arrays and timeslice expiry, the periodic balancing of two busy
    /// siblings, `dependent_sleeper`.
    fn pick_excluding(
        &mut self,
        _tasks: &[Task],
        prev: TaskId,
        busy: &[TaskId],
        m: &MachineProfile,
        now: Nanos,
    ) -> (TaskId, Nanos) {
        let mut cost = m.schedule_base_ns + m.cost(PICK_INSTR, 0.0);
        let ns_max = self.ns_max_sleep_avg();
        let known = |s: &Self, t: TaskId| t != 0 && s.st.get(t).is_some_and(|p| p.is_some());
        // `run_time = min(now - prev->timestamp, NS_MAX_SLEEP_AVG) / (CURRENT_BONUS(prev) ? : 1)`
        let run_time = if known(self, prev) {
            let p = self.p(prev);
            now.saturating_sub(p.timestamp).min(ns_max) / self.current_bonus(p.sleep_avg).max(1) as u64
        } else {
            0
        };
        let next = if self.nr_running == 0 {
            self.expired_timestamp = None;
            0
        } else if let Some(next) = self.first_eligible(busy) {
            let a = self.active;
            let n = self.p(next).clone();
            if !n.rt && n.activated {
                // `delta = now - next->timestamp`, for an ordinary wakeup `delta * (
                // ON_RUNQUEUE_WEIGHT * 128 / 100) / 128`; `recalc_task_prio(next,
                // next->timestamp + delta)`, re-queued on its array at its new priority.
                let delta = now.saturating_sub(n.timestamp) * (ON_RUNQUEUE_WEIGHT * 128 / 100) / 128;
                self.dequeue_task(next, a);
                self.recalc_task_prio(next, n.timestamp + delta);
                self.enqueue_task(next, a);
                cost += m.cost(RECALC_INSTR, 0.0);
            }
            self.pm(next).activated = false;
            next
        } else {
            // Every runnable task runs on another CPU.
            0
        };
        if known(self, prev) {
            // `prev->sleep_avg -= run_time` (not below 0); `prev->timestamp = now`.
            let p = self.pm(prev);
            p.sleep_avg = p.sleep_avg.saturating_sub(run_time);
            p.timestamp = now;
        }
        if next != prev && next != 0 {
            self.pm(next).timestamp = now;
        }
        (next, cost)
    }

    fn tick(&mut self, _tasks: &[Task], curr: TaskId, now: Nanos) -> bool {
        if self.last_tick != Some(now) {
            self.last_tick = Some(now);
            self.jiffies += 1;
        }
        if curr == 0 || !self.st.get(curr).is_some_and(|p| p.is_some()) {
            return false;
        }
        self.scheduler_tick(curr)
    }

    fn wakeup_preempt(&mut self, _tasks: &[Task], p: TaskId, curr: TaskId, _now: Nanos) -> bool {
        if let Some((t, Some(resched))) = self.last_enqueued {
            if t == p {
                // wake_up_new_task: no priority test on the parent's CPU.
                return resched;
            }
        }
        // `TASK_PREEMPTS_CURR(p, rq) ((p)->prio < (rq)->curr->prio)`; the idle task has
        // prio MAX_PRIO.
        self.prio(p) < self.prio(curr)
    }

    fn fork(&mut self, tasks: &[Task], parent: Option<TaskId>, child: TaskId, now: Nanos) {
        // A task the model starts itself gets fresh fields at its first enqueue.
        let Some(parent) = parent else { return };
        self.ensure(tasks, parent, now);
        let mut c = self.fresh(&tasks[child], now);
        let par = self.p(parent).clone();
        // dup_task_struct copies the parent's sleep_avg and prio (an RT child keeps its own).
        c.sleep_avg = par.sleep_avg;
        if !c.rt {
            c.prio = par.prio;
        }
        // sched_fork: `p->time_slice = (current->time_slice + 1) >> 1; current->time_slice
        // >>= 1; p->timestamp = sched_clock();` and if the parent is left with nothing,
        // `current->time_slice = 1; scheduler_tick();`.
        c.time_slice = (par.time_slice + 1) >> 1;
        let left = par.time_slice >> 1;
        self.pm(parent).time_slice = left;
        let resched_parent = if left == 0 {
            self.pm(parent).time_slice = 1;
            self.scheduler_tick(parent)
        } else {
            false
        };
        if self.st.len() <= child {
            self.st.resize(child + 1, None);
        }
        self.st[child] = Some(c);
        self.new_child = Some(NewChild {
            child,
            parent,
            // `!(clone_flags & CLONE_VM)`: the child has an address space of its own.
            run_first: tasks[child].mm != tasks[parent].mm,
            resched_parent,
        });
    }

    fn nr_running(&self) -> usize {
        self.nr_running
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::goodness24::Goodness24;

    const MS: Nanos = 1_000_000;

    /// A task of the given policy; `mm` 0 is a kernel thread.
    fn task(policy: Policy, rt_priority: u32, nice: i32, mm: u32) -> Task {
        Task {
            policy,
            rt_priority,
            nice,
            kthread: mm == 0,
            mm,
            ..crate::kernel::task::tests_task()
        }
    }

    /// The idle task and then `specs`, each with its own mm.
    fn tasks(specs: &[(Policy, u32, i32)]) -> Vec<Task> {
        let mut v = vec![task(Policy::Other, 0, 0, 0)];
        for (i, &(p, rt, nice)) in specs.iter().enumerate() {
            v.push(task(p, rt, nice, i as u32 + 1));
        }
        v
    }

    fn m() -> MachineProfile {
        crate::cpu::tests::machine()
    }

    fn p(s: &O1, t: TaskId) -> &PTask {
        s.st[t].as_ref().unwrap()
    }

    /// Each of `ids` becomes runnable, runs and goes to sleep, all at time 0: known to the
    /// scheduler, sleep_avg 0, timestamp 0.
    fn asleep_at_0(s: &mut O1, ts: &mut [Task], ids: &[TaskId]) {
        for &t in ids {
            s.enqueue(ts, t, 0);
            s.pick(ts, 0, &m(), 0);
            s.dequeue(ts, t, 0);
        }
    }

    #[test]
    fn pick_order_rt_first_then_lower_prio_then_fifo_within_a_priority() {
        let ts = tasks(&[
            (Policy::Other, 0, 0),
            (Policy::Other, 0, -5),
            (Policy::Fifo, 10, 0),
            (Policy::Fifo, 50, 0),
            (Policy::Rr, 50, 0),
        ]);
        let mut s = O1::new(1000);
        for t in 1..=5 {
            s.enqueue(&ts, t, 0);
        }
        // prio 99 - rt_priority: 4 and 5 at 49 (4 queued first), 3 at 89; the SCHED_OTHER
        // ones with no sleep credit at static_prio + 5: 2 at 120, 1 at 125.
        assert_eq!(
            (p(&s, 4).prio, p(&s, 3).prio, p(&s, 2).prio, p(&s, 1).prio),
            (49, 89, 120, 125)
        );
        let mut order = Vec::new();
        for _ in 0..5 {
            let (next, _) = s.pick(&ts, 0, &m(), 0);
            order.push(next);
            s.dequeue(&ts, next, 0);
        }
        assert_eq!(order, vec![4, 5, 3, 2, 1]);
        assert_eq!(s.pick(&ts, 0, &m(), 0).0, 0, "nothing runnable: idle");
    }

    #[test]
    fn timeslices_scale_with_nice() {
        // HZ 1000: a jiffy is a millisecond.
        let s = O1::new(1000);
        assert_eq!(s.task_timeslice(nice_to_prio(-20)), 800);
        assert_eq!(s.task_timeslice(nice_to_prio(0)), 100);
        assert_eq!(s.task_timeslice(nice_to_prio(19)), 5);
        // SCALE_PRIO(400, 110) = 400 * 30 / 20; SCALE_PRIO(100, 130) = 100 * 10 / 20.
        assert_eq!(s.task_timeslice(nice_to_prio(-10)), 600);
        assert_eq!(s.task_timeslice(nice_to_prio(10)), 50);
        // HZ 100: whole jiffies, MIN_TIMESLICE one jiffy (10 ms) at +19.
        let s = O1::new(100);
        assert_eq!([-20, 0, 19].map(|n| s.task_timeslice(nice_to_prio(n))), [80, 10, 1]);
    }

    #[test]
    fn interactivity_arithmetic_follows_the_kernel() {
        let s = O1::new(1000);
        // MAX_SLEEP_AVG = 100 jiffies * 10 = 1 s; CURRENT_BONUS = ms * 10 / 1000.
        assert_eq!(s.ns_max_sleep_avg(), 1_000 * MS);
        assert_eq!(
            [0, 99, 500, 999, 1000].map(|ms| s.current_bonus(ms * MS)),
            [0, 0, 5, 9, 10]
        );
        // DELTA(nice) = nice * 10 / 40 + 2, C division: -20 -> -3, -3 -> 2, 0 -> 2, 19 -> 6.
        assert_eq!([-20, -3, 0, 19].map(delta), [-3, 2, 2, 6]);
        // INTERACTIVE_SLEEP(nice 0) = 1000 * (5 + 2 + 1) / 10 - 1 = 799 jiffies.
        assert_eq!(s.interactive_sleep(0), 799 * MS);

        let mut ts = tasks(&[(Policy::Other, 0, 0)]);
        ts.push(task(Policy::Other, 0, 0, 0)); // task 2: a kernel thread
        let mut s = O1::new(1000);
        asleep_at_0(&mut s, &mut ts, &[1, 2]);
        // A 100 ms sleep from sleep_avg 0 counts ten times over (`sleep_time *=
        // MAX_BONUS - CURRENT_BONUS`): 1 s, bonus 10, prio 120 - 5 = 115, interactive.
        s.enqueue(&ts, 1, 100 * MS);
        assert_eq!((p(&s, 1).sleep_avg, p(&s, 1).prio), (1_000 * MS, 115));
        assert!(O1::task_interactive(p(&s, 1)));
        // It runs 300 ms: debited 300 / CURRENT_BONUS (10) = 30 ms -> 970 ms, bonus 9.
        s.pick(&ts, 0, &m(), 100 * MS);
        s.dequeue(&ts, 1, 0);
        s.pick(&ts, 1, &m(), 400 * MS);
        assert_eq!(p(&s, 1).sleep_avg, 970 * MS);
        // A user task asleep longer than INTERACTIVE_SLEEP gets just interactive status:
        // MAX_SLEEP_AVG - DEF_TIMESLICE = 900 ms, bonus 9, prio 116 (interactive: <= 118).
        let mut s2 = O1::new(1000);
        asleep_at_0(&mut s2, &mut ts, &[1]);
        s2.enqueue(&ts, 1, 900 * MS);
        assert_eq!((p(&s2, 1).sleep_avg, p(&s2, 1).prio), (900 * MS, 116));
        // A kernel thread (no mm) has no such cap: 900 ms x 10, capped at 1 s.
        s.enqueue(&ts, 2, 900 * MS);
        assert_eq!((p(&s, 2).sleep_avg, p(&s, 2).prio), (1_000 * MS, 115));
        // Non-interactive at nice 0 below bonus 7: prio 119 > 118.
        let q = PTask {
            prio: 119,
            ..p(&s, 1).clone()
        };
        assert!(!O1::task_interactive(&q));
    }

    #[test]
    fn expired_tasks_wait_for_the_array_switch() {
        // Two CPU hogs at nice +19 (5 ms slices at HZ 1000), never interactive.
        let ts = tasks(&[(Policy::Other, 0, 19), (Policy::Other, 0, 19)]);
        let mut s = O1::new(1000);
        s.enqueue(&ts, 1, 0);
        s.enqueue(&ts, 2, 0);
        let (a, _) = s.pick(&ts, 0, &m(), 0);
        assert_eq!(a, 1);
        let ticks = (0..5).map(|_| s.tick(&ts, a, 0)).collect::<Vec<_>>();
        assert_eq!(ticks, [false, false, false, false, true]);
        assert_eq!(p(&s, 1).array, Some(1 - s.active), "on the expired array");
        assert_eq!(p(&s, 1).time_slice, 5, "refilled on expiry");
        // The other one is still active and runs before any expired task.
        let (b, _) = s.pick(&ts, a, &m(), 5 * MS);
        assert_eq!(b, 2);
        for _ in 0..5 {
            s.tick(&ts, b, 0);
        }
        // Active is empty: schedule() switches the arrays and task 1 runs again, 2 behind it.
        let before = s.active;
        let (c, _) = s.pick(&ts, b, &m(), 10 * MS);
        assert_eq!((c, s.active), (1, 1 - before));
        let q = &s.arrays[s.active].queue[MAX_PRIO as usize - 1];
        assert_eq!(q.iter().copied().collect::<Vec<_>>(), [1, 2]);
        assert_eq!(s.arrays[1 - s.active].nr_active, 0, "the new expired array is empty");
    }

    #[test]
    fn interactive_tasks_stay_active_unless_the_expired_starve() {
        let mut ts = tasks(&[(Policy::Other, 0, 0), (Policy::Other, 0, 5)]);
        let mut s = O1::new(1000);
        asleep_at_0(&mut s, &mut ts, &[1]);
        s.enqueue(&ts, 1, 500 * MS); // sleep_avg 1 s: prio 115, interactive
        s.pick(&ts, 0, &m(), 500 * MS);
        for _ in 0..99 {
            s.tick(&ts, 1, 0);
        }
        // Every TIMESLICE_GRANULARITY (10 jiffies at bonus 10) it was requeued; the slice
        // ends on the 100th tick and it goes back on the *active* array.
        assert!(s.tick(&ts, 1, 0));
        assert_eq!(p(&s, 1).array, Some(s.active));
        // EXPIRED_STARVING's second clause: a better static_prio already expired.
        s.best_expired_prio = 110;
        s.pm(1).time_slice = 1;
        assert!(s.tick(&ts, 1, 0));
        assert_eq!(p(&s, 1).array, Some(1 - s.active), "starving expired array: 1 expires");
        // Task 2 (nice 5, sleep_avg 0) is never interactive: DELTA = 3, prio 130 > 122.
        s.enqueue(&ts, 2, 0);
        assert!(!O1::task_interactive(p(&s, 2)));
    }

    #[test]
    fn interactive_round_robin_every_granularity() {
        let mut ts = tasks(&[(Policy::Other, 0, 0), (Policy::Other, 0, 0)]);
        let mut s = O1::new(1000);
        asleep_at_0(&mut s, &mut ts, &[1, 2]);
        s.enqueue(&ts, 1, 500 * MS);
        s.enqueue(&ts, 2, 500 * MS);
        assert_eq!((p(&s, 1).prio, p(&s, 2).prio), (115, 115));
        let (a, _) = s.pick(&ts, 0, &m(), 500 * MS);
        assert_eq!(a, 1);
        // TIMESLICE_GRANULARITY at bonus 10: GRANULARITY (10 jiffies) << 0.
        assert_eq!(s.timeslice_granularity(p(&s, 1).sleep_avg), 10);
        let resched: Vec<bool> = (0..10).map(|_| s.tick(&ts, 1, 0)).collect();
        assert_eq!(resched.iter().filter(|&&r| r).count(), 1);
        assert!(resched[9], "the 10th tick requeues it behind its peer");
        assert_eq!(s.pick(&ts, 1, &m(), 510 * MS).0, 2);
    }

    #[test]
    fn sched_rr_round_robins_fifo_does_not() {
        let ts = tasks(&[(Policy::Rr, 10, 0), (Policy::Rr, 10, 0), (Policy::Fifo, 10, 0)]);
        let mut s = O1::new(1000);
        for t in 1..=3 {
            s.enqueue(&ts, t, 0);
        }
        assert_eq!(s.pick(&ts, 0, &m(), 0).0, 1);
        let resched: Vec<bool> = (0..100).map(|_| s.tick(&ts, 1, 0)).collect();
        assert_eq!(
            resched.iter().position(|&r| r),
            Some(99),
            "task_timeslice(nice 0): 100 ticks"
        );
        assert_eq!(s.pick(&ts, 1, &m(), 100 * MS).0, 2);
        let fifo = (0..1000).any(|_| s.tick(&ts, 3, 0));
        assert!(!fifo, "SCHED_FIFO has no timeslice");
    }

    #[test]
    fn fork_splits_the_slice_and_the_child_runs_first() {
        // Parent (1), a child with its own mm (2), and a thread of that child (3).
        let mut ts = tasks(&[(Policy::Other, 0, 0), (Policy::Other, 0, 0)]);
        ts.push(task(Policy::Other, 0, 0, 2));
        let mut s = O1::new(1000);
        s.enqueue(&ts, 1, 0);
        assert_eq!(s.pick(&ts, 0, &m(), 0).0, 1);
        s.pm(1).time_slice = 7;
        s.fork(&ts, Some(1), 2, MS);
        // `p->time_slice = (current->time_slice + 1) >> 1; current->time_slice >>= 1`
        assert_eq!((p(&s, 2).time_slice, p(&s, 1).time_slice), (4, 3));
        s.enqueue(&ts, 2, MS);
        assert!(s.wakeup_preempt(&ts, 2, 1, 0), "child-runs-first: parent reschedules");
        assert_eq!(s.pick(&ts, 1, &m(), MS).0, 2, "the child is queued ahead of the parent");
        // A CLONE_VM child goes to the tail and does not preempt.
        s.fork(&ts, Some(2), 3, 2 * MS);
        s.enqueue(&ts, 3, 2 * MS);
        assert!(!s.wakeup_preempt(&ts, 3, 2, 0));
        let q = &s.arrays[s.active].queue[p(&s, 2).prio as usize];
        assert_eq!(q.iter().copied().collect::<Vec<_>>(), [2, 1, 3]);
        // A parent left with no slice: `current->time_slice = 1; scheduler_tick()` expires
        // it at once, and it must reschedule even for a CLONE_VM child.
        let mut ts2 = tasks(&[(Policy::Other, 0, 0)]);
        ts2.push(task(Policy::Other, 0, 0, 1));
        let mut s = O1::new(1000);
        s.enqueue(&ts2, 1, 0);
        s.pick(&ts2, 0, &m(), 0);
        s.pm(1).time_slice = 1;
        s.fork(&ts2, Some(1), 2, 0);
        s.enqueue(&ts2, 2, 0);
        assert_eq!((p(&s, 2).time_slice, p(&s, 1).time_slice), (1, 100));
        assert_eq!(p(&s, 1).array, Some(1 - s.active), "the parent expired");
        assert!(s.wakeup_preempt(&ts2, 2, 1, 0));
    }

    #[test]
    fn wakeup_preempts_only_a_worse_priority() {
        let mut ts = tasks(&[(Policy::Other, 0, 0), (Policy::Other, 0, 0), (Policy::Fifo, 1, 0)]);
        let mut s = O1::new(1000);
        asleep_at_0(&mut s, &mut ts, &[1, 2, 3]);
        s.enqueue(&ts, 1, 0);
        s.enqueue(&ts, 2, 0);
        // Equal prio (125): no preemption; RT over anything; anything over idle.
        assert!(!s.wakeup_preempt(&ts, 2, 1, 0));
        s.enqueue(&ts, 3, 0);
        assert!(s.wakeup_preempt(&ts, 3, 1, 0));
        assert!(!s.wakeup_preempt(&ts, 1, 3, 0));
        assert!(s.wakeup_preempt(&ts, 1, 0, 0));
        // After a 100 ms sleep task 1 is at 115 and preempts task 2 at 125.
        s.dequeue(&ts, 1, 0);
        s.enqueue(&ts, 1, 100 * MS);
        assert!(s.wakeup_preempt(&ts, 1, 2, 0));
        assert!(!s.wakeup_preempt(&ts, 2, 1, 0));
    }

    /// The decision cost with `n` runnable nice-0 tasks, through the trait.
    fn cost_with(sched: &mut dyn Scheduler, n: usize) -> Nanos {
        let ts = tasks(&vec![(Policy::Other, 0, 0); n]);
        for t in 1..=n {
            sched.fork(&ts, None, t, 0);
            sched.enqueue(&ts, t, 0);
        }
        sched.pick(&ts, 0, &m(), 0).1
    }

    #[test]
    fn decision_cost_is_constant_for_o1_and_linear_for_goodness() {
        let mach = m();
        let o1 = [10, 1000].map(|n| cost_with(&mut O1::new(100), n));
        assert_eq!(o1[0], o1[1], "O(1): the same cost for 10 and 1000 runnable tasks");
        assert_eq!(o1[0], mach.schedule_base_ns + mach.cost(PICK_INSTR, 0.0));
        let g = [10, 1000].map(|n| cost_with(&mut Goodness24::new(100), n));
        assert_eq!(
            g[1] - g[0],
            990 * mach.goodness_per_task_ns,
            "goodness: one evaluation per task"
        );
        assert!(g[1] > o1[1]);
    }

    /// A short run of CPU hogs beside realfeel on the test machine: 1 s of forks, then 2 s
    /// with every hog runnable.
    fn run(sched: crate::variant::SchedClass, hogs: u32, seed: u64) -> latlab_core::RunResult {
        crate::simulate(&config(sched, hogs, seed), &mut |_, _| {}).unwrap().0
    }

    fn config(sched: crate::variant::SchedClass, hogs: u32, seed: u64) -> crate::SimConfig {
        crate::SimConfig {
            machine: m(),
            variant: crate::cpu::tests::variant_with(sched, crate::PreemptModel::None, &[]),
            workload: crate::Workload {
                name: "hogs".into(),
                commands: vec![crate::CommandSpec::CpuHogs { tasks: hogs }],
                gap_ms: 0,
                tasks: vec![],
                preload: crate::Preload {
                    old_file_kb: 64,
                    ..Default::default()
                },
            },
            rtc_hz: 2048,
            rt_priority: 99,
            seed,
            min_duration_ns: 0,
            max_duration_ns: 3_000_000_000,
            posix_timer: None,
            realfeel: true,
            preempt_off: None,
            maxcpus: None,
            keep_records: false,
            record_events: None,
            replay_noise: false,
        }
    }

    #[test]
    fn two_cpus_run_o1_only_and_maxcpus_boots_one() {
        use crate::variant::SchedClass::{Goodness24 as G, O1 as B};
        let two = |s| crate::SimConfig {
            machine: MachineProfile { cpus: 2, ..m() },
            ..config(s, 20, 1)
        };
        let e = crate::simulate(&two(G), &mut |_, _| {}).unwrap_err().to_string();
        assert!(e.contains("field `cpus`") && e.contains("goodness"), "{e}");
        let r = crate::simulate(&two(B), &mut |_, _| {}).unwrap().0;
        assert_eq!(r.meta.settings["cpus_online"], "2");
        let one = crate::SimConfig {
            maxcpus: Some(1),
            ..two(G)
        };
        let r = crate::simulate(&one, &mut |_, _| {}).unwrap().0;
        assert_eq!(r.meta.settings["cpus_online"], "1");
    }

    #[test]
    fn runs_are_deterministic_and_o1_wakeups_do_not_grow_with_hogs() {
        use crate::variant::SchedClass::{Goodness24 as G, O1 as B};
        let a = serde_json::to_string(&run(B, 200, 3)).unwrap();
        assert_eq!(
            a,
            serde_json::to_string(&run(B, 200, 3)).unwrap(),
            "same seed, same bytes"
        );
        // realfeel's median wakeup latency with 20 and 400 hogs running.
        let p50 = |s, n| run(s, n, 1).streams[0].hist.quantile(0.5);
        let (o_few, o_many) = (p50(B, 20), p50(B, 400));
        let (g_few, g_many) = (p50(G, 20), p50(G, 400));
        // O(1): the same within 0.1 us (samples differ by what the interrupt lands on).
        assert!(o_many.abs_diff(o_few) < 100, "O(1): {o_few} vs {o_many} ns");
        // goodness24 scans the 380 extra runnable tasks on every wakeup (10 ns each here).
        assert!(
            g_many >= g_few + 380 * m().goodness_per_task_ns,
            "{g_few} vs {g_many} ns"
        );
    }
}
