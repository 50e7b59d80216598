//! The real-time class above a fair class (kernel/sched_rt.c, 2.6.2x-6.x; CPUs sharing one
//! queue exclude each other's running task from their picks):
//! SCHED_FIFO and SCHED_RR tasks in 100 priority lists (`rt_priority` 99 highest), always
//! picked before any fair task; a woken RT task preempts any fair one and any RT one of
//! lower priority. SCHED_RR tasks round-robin within their priority every `RR_TIMESLICE`
//! (100 ms: `#define RR_TIMESLICE (100 * HZ / 1000)`, include/linux/sched.h). The fair
//! class ([`FairClass`]: CFS or EEVDF) sees only SCHED_OTHER tasks and never learns that an
//! RT task ran, except as time its current task did not run (`put_prev`). With per-CPU
//! runqueues ([`super::smp`]) each CPU has one `WithRt` and RT push/pull move tasks between
//! them ([`super::rt_smp`]).

use super::rt_bandwidth::RtBandwidth;
use super::{Placement, Scheduler};
use crate::kernel::task::{Policy, Task, TaskId};
use crate::machine::MachineProfile;
use latlab_core::Nanos;
use std::collections::VecDeque;

/// `RR_TIMESLICE`: 100 ms (include/linux/sched.h, 2.6.2x-6.x).
pub const RR_TIMESLICE_NS: Nanos = 100_000_000;

/// Instructions of the RT class's pick beyond schedule()'s fixed part: `sched_find_first_bit`
/// over the 100-bit priority bitmap and the list head (as O(1)'s bitmap pick, `o1::PICK_INSTR`).
const RT_PICK_INSTR: f64 = 25.0;

/// A fair scheduling class under the RT class: what `struct sched_class` asks of
/// `fair_sched_class` (kernel/sched_fair.c), for SCHED_OTHER tasks only.
pub trait FairClass {
    fn name(&self) -> &'static str;
    /// `task_fork_fair` (parent `None`: a task the model starts itself).
    fn fork(&mut self, tasks: &[Task], parent: Option<TaskId>, child: TaskId, now: Nanos);
    /// `enqueue_task_fair`: `t` woke (or is new).
    fn enqueue(&mut self, tasks: &[Task], t: TaskId, now: Nanos);
    /// `dequeue_task_fair`: `t` sleeps or exited.
    fn dequeue(&mut self, tasks: &[Task], t: TaskId, now: Nanos);
    /// `put_prev_task_fair`: running task `prev` stops running (it may still be queued).
    fn put_prev(&mut self, tasks: &[Task], prev: TaskId, now: Nanos);
    /// `pick_next_task_fair`: the next task, if any, and what the pick cost (tree work).
    fn pick_next(&mut self, tasks: &[Task], m: &MachineProfile, now: Nanos) -> (Option<TaskId>, Nanos);
    /// `task_tick_fair` for running task `curr`: true to reschedule.
    fn tick(&mut self, tasks: &[Task], curr: TaskId, now: Nanos) -> bool;
    /// `check_preempt_wakeup`: fair `p` woke while fair `curr` runs.
    fn wakeup_preempt(&mut self, tasks: &[Task], p: TaskId, curr: TaskId, now: Nanos) -> bool;
    /// Fair tasks runnable, the running one included.
    fn nr_running(&self) -> usize;
    /// Where `t` stands in this class's order.
    fn placement(&self, t: TaskId) -> Option<Placement>;
    /// Can several CPUs run this class's tasks at once (one `curr` each)?
    fn smp(&self) -> bool {
        false
    }
    /// The first queued task, not running, that `ok` accepts, walking from the end of this
    /// class's order (`detach_tasks` walks `cfs_tasks` from its tail): a load balance's pick.
    fn find_queued(&self, ok: &mut dyn FnMut(TaskId) -> bool) -> Option<TaskId>;
    /// `t` (off this queue: asleep, new, or dequeued by a balance, `queued`) moves to another
    /// CPU's queue: its place relative to this one (`migrate_task_rq_fair`).
    fn migrate_out(&mut self, t: TaskId, queued: bool) -> Migrant;
    /// `t` arrives from another CPU's queue with place `m`.
    fn migrate_in(&mut self, tasks: &[Task], t: TaskId, m: Migrant);
}

/// A fair task's place carried from one CPU's queue to another's: its virtual time relative
/// to the queue it leaves (CFS: to `min_vruntime`, 2.6.35-3.2's `task_waking_fair` and
/// `ENQUEUE_MIGRATED`; EEVDF: to `avg_vruntime`, its `vlag` kept), its deadline relative to
/// its virtual time, and whether the arriving queue keeps that place (a new task's
/// START_DEBIT, a CFS task moved while queued) instead of placing it as a wakeup.
#[derive(Clone, Copy, Debug, Default)]
pub struct Migrant {
    pub rel: i128,
    pub deadline_rel: i128,
    pub vlag: i128,
    pub sum_exec: Nanos,
    pub keep_place: bool,
}

/// The RT class over fair class `F`.
pub struct WithRt<F> {
    fair: F,
    /// Runnable RT tasks per `rt_priority` (index 0..=99), FIFO within a priority.
    queues: Vec<VecDeque<TaskId>>,
    /// Bit p set while `queues[p]` is not empty (`rt_prio_array.bitmap`, found with
    /// `sched_find_first_bit` in kernel/sched_rt.c).
    bitmap: u128,
    nr_rt: usize,
    /// RR slice left, by task.
    rr_left: Vec<Nanos>,
    /// When each running RT task's time was last charged, by task.
    rt_since: Vec<Nanos>,
    /// RT throttling (`sched/rt_bandwidth.rs`), if the kernel has it.
    bw: Option<RtBandwidth>,
}

fn is_rt(t: &Task) -> bool {
    t.policy != Policy::Other
}

impl<F: FairClass> WithRt<F> {
    pub fn new(fair: F) -> Self {
        WithRt {
            fair,
            queues: vec![VecDeque::new(); 100],
            bitmap: 0,
            nr_rt: 0,
            rr_left: Vec::new(),
            rt_since: Vec::new(),
            bw: None,
        }
    }

    /// The class throttled by `bw` (RT throttling, 2.6.25+).
    pub fn with_bandwidth(mut self, bw: RtBandwidth) -> Self {
        self.bw = Some(bw);
        self
    }

    /// Is the RT class throttled at `now`?
    fn throttled(&mut self, now: Nanos) -> bool {
        self.bw.as_mut().is_some_and(|b| b.throttled(now))
    }

    fn prio(t: &Task) -> usize {
        t.rt_priority.min(99) as usize
    }

    /// The highest `rt_priority` queued here (running task included), if any RT task is
    /// (`rq->rt.highest_prio.curr`).
    pub fn rt_top(&self) -> Option<u32> {
        u128::BITS.checked_sub(self.bitmap.leading_zeros() + 1)
    }

    /// RT tasks queued here (running one included).
    pub fn nr_rt(&self) -> usize {
        self.nr_rt
    }

    /// Fair tasks queued here (running one included).
    pub fn nr_fair(&self) -> usize {
        self.fair.nr_running()
    }

    /// The highest-priority queued RT task other than `running` that `ok` accepts
    /// (`pick_next_pushable_task` / `pick_highest_pushable_task`).
    pub fn pushable(&self, running: TaskId, ok: &mut dyn FnMut(TaskId) -> bool) -> Option<TaskId> {
        let top = self.rt_top()? as usize;
        (0..=top)
            .rev()
            .flat_map(|p| self.queues[p].iter())
            .copied()
            .find(|&t| t != running && ok(t))
    }

    /// The fair class's [`FairClass::find_queued`].
    pub fn fair_queued(&self, ok: &mut dyn FnMut(TaskId) -> bool) -> Option<TaskId> {
        self.fair.find_queued(ok)
    }

    /// Move `t` (not running; queued here if `queued`) to CPU queue `to`: off this queue,
    /// its place carried over, onto `to`'s if it was queued (`detach_task` /
    /// `attach_task`, `set_task_cpu`).
    pub fn migrate(&mut self, to: &mut Self, tasks: &[Task], t: TaskId, queued: bool, now: Nanos) {
        if queued {
            self.dequeue(tasks, t, now);
        }
        if is_rt(&tasks[t]) {
            let left = self.rr_left.get(t).copied().unwrap_or(RR_TIMESLICE_NS);
            if to.rr_left.len() <= t {
                to.rr_left.resize(t + 1, RR_TIMESLICE_NS);
            }
            to.rr_left[t] = left;
        } else {
            let m = self.fair.migrate_out(t, queued);
            to.fair.migrate_in(tasks, t, m);
        }
        if queued {
            to.enqueue(tasks, t, now);
        }
    }

    /// The first RT task of the highest priority no other CPU runs (`busy`).
    fn highest(&self, busy: &[TaskId]) -> Option<TaskId> {
        let p = u128::BITS.checked_sub(self.bitmap.leading_zeros() + 1)?;
        if busy.is_empty() {
            return self.queues[p as usize].front().copied();
        }
        (0..=p as usize)
            .rev()
            .flat_map(|p| self.queues[p].iter())
            .copied()
            .find(|t| !busy.contains(t))
    }
}

impl<F: FairClass> Scheduler for WithRt<F> {
    fn name(&self) -> &'static str {
        self.fair.name()
    }

    fn fork(&mut self, tasks: &[Task], parent: Option<TaskId>, child: TaskId, now: Nanos) {
        if self.rr_left.len() <= child {
            self.rr_left.resize(child + 1, RR_TIMESLICE_NS);
        }
        if !is_rt(&tasks[child]) {
            // The fair class only knows fair parents (an RT parent's child is placed alone).
            let parent = parent.filter(|&p| !is_rt(&tasks[p]) && p != 0);
            self.fair.fork(tasks, parent, child, now);
        }
    }

    fn enqueue(&mut self, tasks: &[Task], t: TaskId, now: Nanos) {
        if is_rt(&tasks[t]) {
            let p = Self::prio(&tasks[t]);
            let q = &mut self.queues[p];
            if !q.contains(&t) {
                q.push_back(t);
                self.bitmap |= 1 << p;
                self.nr_rt += 1;
            }
        } else {
            self.fair.enqueue(tasks, t, now);
        }
    }

    fn dequeue(&mut self, tasks: &[Task], t: TaskId, now: Nanos) {
        if is_rt(&tasks[t]) {
            let p = Self::prio(&tasks[t]);
            let q = &mut self.queues[p];
            if let Some(i) = q.iter().position(|&x| x == t) {
                q.remove(i);
                if q.is_empty() {
                    self.bitmap &= !(1 << p);
                }
                self.nr_rt -= 1;
            }
        } else {
            self.fair.dequeue(tasks, t, now);
        }
    }

    fn pick(&mut self, tasks: &[Task], prev: TaskId, m: &MachineProfile, now: Nanos) -> (TaskId, Nanos) {
        self.pick_excluding(tasks, prev, &[], m, now)
    }

    fn smp(&self) -> bool {
        self.fair.smp()
    }

    /// On several CPUs: the RT class takes the highest RT task no other CPU runs; the fair
    /// class's running tasks are out of its tree, so its pick never finds another CPU's.
    fn pick_excluding(
        &mut self,
        tasks: &[Task],
        prev: TaskId,
        busy: &[TaskId],
        m: &MachineProfile,
        now: Nanos,
    ) -> (TaskId, Nanos) {
        if prev != 0 && !is_rt(&tasks[prev]) {
            self.fair.put_prev(tasks, prev, now);
        }
        let mut cost = m.schedule_base_ns + m.cost(RT_PICK_INSTR, 0.0);
        // RT throttling: a throttled class is passed over for the fair class's task (or,
        // before 6.12, for none: the CPU idles).
        let rt_ok = !self.throttled(now)
            || (!self.bw.as_ref().is_some_and(|b| b.idle_when_throttled) && self.fair.nr_running() == 0);
        if let Some(t) = self.highest(busy).filter(|_| rt_ok) {
            if self.rt_since.len() <= t {
                self.rt_since.resize(t + 1, 0);
            }
            self.rt_since[t] = now;
            return (t, cost);
        }
        let (next, c) = self.fair.pick_next(tasks, m, now);
        cost += c;
        (next.unwrap_or(0), cost)
    }

    fn tick(&mut self, tasks: &[Task], curr: TaskId, now: Nanos) -> bool {
        // RT throttling's period timer: a lifted throttle lets waiting RT tasks run.
        let freed = self.nr_rt > 0 && self.bw.as_mut().is_some_and(|b| b.period_timer(now));
        if curr == 0 {
            return freed;
        }
        if !is_rt(&tasks[curr]) {
            return self.fair.tick(tasks, curr, now) || freed;
        }
        let since = self.rt_since.get(curr).copied().unwrap_or(0);
        let ran = now.saturating_sub(since);
        if self.rt_since.len() <= curr {
            self.rt_since.resize(curr + 1, 0);
        }
        self.rt_since[curr] = now;
        // sched_rt_runtime_exceeded: the class used its runtime; resched_task(curr).
        if self.bw.as_mut().is_some_and(|b| b.charge(ran, now)) {
            return true;
        }
        if tasks[curr].policy != Policy::Rr {
            return false;
        }
        // task_tick_rt: `if (--p->rt.time_slice) return; p->rt.time_slice = DEF_TIMESLICE;
        // if more than one on the list: requeue_task_rt(rq, p, 0); set_tsk_need_resched(p)`.
        let left = self.rr_left[curr].saturating_sub(ran);
        if left > 0 {
            self.rr_left[curr] = left;
            return false;
        }
        self.rr_left[curr] = RR_TIMESLICE_NS;
        let q = &mut self.queues[Self::prio(&tasks[curr])];
        if q.len() > 1 {
            if let Some(i) = q.iter().position(|&x| x == curr) {
                q.remove(i);
                q.push_back(curr);
            }
            return true;
        }
        false
    }

    fn wakeup_preempt(&mut self, tasks: &[Task], p: TaskId, curr: TaskId, now: Nanos) -> bool {
        if curr == 0 || p == curr {
            return curr == 0;
        }
        match (is_rt(&tasks[p]), is_rt(&tasks[curr])) {
            // check_preempt_curr_rt: `if (p->prio < rq->curr->prio) resched_task`.
            (true, true) => tasks[p].rt_priority > tasks[curr].rt_priority,
            (true, false) => !self.throttled(now),
            (false, true) => false,
            (false, false) => self.fair.wakeup_preempt(tasks, p, curr, now),
        }
    }

    fn nr_running(&self) -> usize {
        self.nr_rt + self.fair.nr_running()
    }

    fn placement(&self, t: TaskId) -> Option<Placement> {
        self.fair.placement(t)
    }
}
