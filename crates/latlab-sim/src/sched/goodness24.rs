//! The Linux 2.4 scheduler (kernel/sched.c, kernel/timer.c of 2.4.18/2.4.22; see
//! `kernel-facts.md`): one global runqueue, `goodness()` computed for every runnable task at
//! every schedule() (O(nr_running)), epochs that end when every runnable task has used its
//! `counter`, then a recalculation over all tasks (O(nr_tasks)). Real-time tasks get
//! `1000 + rt_priority`, so SCHED_FIFO/RR always win over SCHED_OTHER.

use super::Scheduler;
use crate::kernel::task::{Policy, Task, TaskId, TaskState};
use crate::machine::MachineProfile;
use latlab_core::Nanos;

/// Goodness 2.4 scheduler.
pub struct Goodness24 {
    /// The runqueue, in list order (`add_to_runqueue` adds at the head).
    rq: Vec<TaskId>,
    /// HZ, for NICE_TO_TICKS.
    hz: u32,
    /// 2.4 `p->counter` by task: ticks left in this epoch.
    counter: Vec<i32>,
}

impl Goodness24 {
    pub fn new(hz: u32) -> Self {
        Goodness24 {
            rq: Vec::new(),
            hz,
            counter: Vec::new(),
        }
    }

    /// `NICE_TO_TICKS(nice)`: `TICK_SCALE(20-nice) + 1`, `TICK_SCALE(x) = x >> 2` at HZ < 200
    /// (x >> 1 below 400, x at 400 and above... 2.4 scales to keep ~50 ms at nice 0).
    pub fn nice_to_ticks(&self, nice: i32) -> i32 {
        let x = 20 - nice;
        let scaled = if self.hz < 200 {
            x >> 2
        } else if self.hz < 400 {
            x >> 1
        } else if self.hz < 800 {
            x
        } else {
            x << 1
        };
        scaled + 1
    }
}

/// `goodness(p, this_mm)` of 2.4 on UP (no PROC_CHANGE_PENALTY); `counter` is `p->counter`.
pub fn goodness(p: &Task, counter: i32, this_mm: u32) -> i32 {
    match p.policy {
        Policy::Other => {
            let mut weight = counter;
            if weight == 0 {
                return 0;
            }
            if p.mm == this_mm || p.mm == 0 {
                weight += 1;
            }
            weight + 20 - p.nice
        }
        Policy::Fifo | Policy::Rr => 1000 + p.rt_priority as i32,
    }
}

impl Goodness24 {
    /// `p->counter` of task `t` (0 for a task not seen yet: the idle task).
    fn counter(&self, t: TaskId) -> i32 {
        self.counter.get(t).copied().unwrap_or(0)
    }
}

impl Scheduler for Goodness24 {
    fn name(&self) -> &'static str {
        "goodness-2.4"
    }

    fn enqueue(&mut self, _tasks: &[Task], t: TaskId, _now: Nanos) {
        if !self.rq.contains(&t) {
            self.rq.insert(0, t);
        }
    }

    fn dequeue(&mut self, _tasks: &[Task], t: TaskId, _now: Nanos) {
        self.rq.retain(|&x| x != t);
    }

    fn pick(&mut self, tasks: &[Task], prev: TaskId, m: &MachineProfile, _now: Nanos) -> (TaskId, Nanos) {
        if self.counter.len() < tasks.len() {
            self.counter.resize(tasks.len(), 0);
        }
        let prev_runnable = tasks[prev].state == TaskState::Runnable && prev != 0;
        // SCHED_RR with an exhausted slice: refill and move to the end of the queue.
        if prev_runnable && tasks[prev].policy == Policy::Rr && self.counter(prev) <= 0 {
            self.counter[prev] = self.nice_to_ticks(tasks[prev].nice);
            self.rq.retain(|&x| x != prev);
            self.rq.push(prev);
        }
        let this_mm = tasks[prev].mm;
        let mut cost = m.schedule_base_ns;
        loop {
            // The linear scan: every runnable task's goodness, strict > keeps the first best.
            let mut best: Option<(i32, TaskId)> = None;
            if prev_runnable {
                best = Some((goodness(&tasks[prev], self.counter(prev), this_mm), prev));
            }
            for &p in &self.rq {
                let w = goodness(&tasks[p], self.counter(p), this_mm);
                if best.is_none_or(|(c, _)| w > c) {
                    best = Some((w, p));
                }
            }
            cost += m.goodness_per_task_ns * self.rq.len() as Nanos;
            match best {
                None => return (0, cost),
                Some((0, _)) => {
                    // Epoch over: recharge every task on the task list, sleepers too
                    // (O(nr_tasks)). The model keeps exited tasks as zombies; their parents
                    // reap them at once (wait4 -> release_task unlinks them), so they are not
                    // walked.
                    let mut live: Nanos = 0;
                    for (i, t) in tasks.iter().enumerate().skip(1) {
                        if t.state != TaskState::Zombie {
                            let c = self.counter(i);
                            self.counter[i] = (c >> 1) + self.nice_to_ticks(t.nice);
                            live += 1;
                        }
                    }
                    cost += m.goodness_per_task_ns * live;
                }
                Some((_, p)) => return (p, cost),
            }
        }
    }

    fn tick(&mut self, tasks: &[Task], curr: TaskId, _now: Nanos) -> bool {
        if curr == 0 || tasks[curr].policy == Policy::Fifo {
            return false;
        }
        let c = self.counter(curr) - 1;
        self.counter[curr] = c.max(0);
        c <= 0
    }

    fn wakeup_preempt(&mut self, tasks: &[Task], p: TaskId, curr: TaskId, _now: Nanos) -> bool {
        if curr == 0 {
            return true;
        }
        let mm = tasks[curr].mm;
        goodness(&tasks[p], self.counter(p), mm) - goodness(&tasks[curr], self.counter(curr), mm) > 0
    }

    fn fork(&mut self, tasks: &[Task], parent: Option<TaskId>, child: TaskId, _now: Nanos) {
        if self.counter.len() <= child {
            self.counter.resize(child + 1, 0);
        }
        match parent {
            // do_fork: `p->counter = (current->counter + 1) >> 1; current->counter >>= 1`.
            Some(parent) => {
                let pc = self.counter(parent);
                self.counter[child] = (pc + 1) >> 1;
                self.counter[parent] = pc >> 1;
            }
            // A task the model starts itself: a fresh first slice, NICE_TO_TICKS(nice).
            None => self.counter[child] = self.nice_to_ticks(tasks[child].nice),
        }
    }

    fn nr_running(&self) -> usize {
        self.rq.len()
    }
}
