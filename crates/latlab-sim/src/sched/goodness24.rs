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
}

impl Goodness24 {
    pub fn new(hz: u32) -> Self {
        Goodness24 { rq: Vec::new(), hz }
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

/// `goodness(p, this_mm)` of 2.4 on UP (no PROC_CHANGE_PENALTY).
pub fn goodness(p: &Task, this_mm: u32) -> i32 {
    match p.policy {
        Policy::Other => {
            let mut weight = p.counter;
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

impl Scheduler for Goodness24 {
    fn name(&self) -> &'static str {
        "goodness-2.4"
    }

    fn enqueue(&mut self, _tasks: &[Task], t: TaskId, _now: Nanos) {
        if !self.rq.contains(&t) {
            self.rq.insert(0, t);
        }
    }

    fn dequeue(&mut self, _tasks: &[Task], t: TaskId) {
        self.rq.retain(|&x| x != t);
    }

    fn pick(&mut self, tasks: &mut [Task], prev: TaskId, m: &MachineProfile, _now: Nanos) -> (TaskId, Nanos) {
        let prev_runnable = tasks[prev].state == TaskState::Runnable && prev != 0;
        // SCHED_RR with an exhausted slice: refill and move to the end of the queue.
        if prev_runnable && tasks[prev].policy == Policy::Rr && tasks[prev].counter <= 0 {
            tasks[prev].counter = self.nice_to_ticks(tasks[prev].nice);
            self.rq.retain(|&x| x != prev);
            self.rq.push(prev);
        }
        let this_mm = tasks[prev].mm;
        let mut cost = m.schedule_base_ns;
        loop {
            // The linear scan: every runnable task's goodness, strict > keeps the first best.
            let mut best: Option<(i32, TaskId)> = None;
            if prev_runnable {
                best = Some((goodness(&tasks[prev], this_mm), prev));
            }
            for &p in &self.rq {
                let w = goodness(&tasks[p], this_mm);
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
                    for t in tasks.iter_mut().skip(1) {
                        if t.state != TaskState::Zombie {
                            t.counter = (t.counter >> 1) + self.nice_to_ticks(t.nice);
                            live += 1;
                        }
                    }
                    cost += m.goodness_per_task_ns * live;
                }
                Some((_, p)) => return (p, cost),
            }
        }
    }

    fn tick(&mut self, tasks: &mut [Task], curr: TaskId) -> bool {
        let t = &mut tasks[curr];
        if curr == 0 || t.policy == Policy::Fifo {
            return false;
        }
        t.counter -= 1;
        if t.counter <= 0 {
            t.counter = 0;
            return true;
        }
        false
    }

    fn wakeup_preempt(&self, tasks: &[Task], p: TaskId, curr: TaskId) -> bool {
        if curr == 0 {
            return true;
        }
        let mm = tasks[curr].mm;
        goodness(&tasks[p], mm) - goodness(&tasks[curr], mm) > 0
    }

    fn fork(&mut self, tasks: &mut [Task], parent: TaskId, child: TaskId, _now: Nanos) {
        let pc = tasks[parent].counter;
        tasks[child].counter = (pc + 1) >> 1;
        tasks[parent].counter = pc >> 1;
    }

    fn nr_running(&self) -> usize {
        self.rq.len()
    }
}
