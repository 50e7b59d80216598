//! Schedulers behind one trait. The CPU loop (`kernel`) never asks which scheduler it has.
//!
//! - [`goodness24`]: Linux 2.4's `goodness()` scheduler with epochs, SCHED_FIFO/RR on top.
//! - [`o1`]: Ingo Molnar's O(1) scheduler as in 2.6.11 kernel/sched.c (uniprocessor), with
//!   SCHED_FIFO/RR in priorities 0..99 above it.

pub mod goodness24;
pub mod o1;

use crate::kernel::task::{Task, TaskId};
use crate::machine::MachineProfile;
use latlab_core::Nanos;

/// A scheduler class with its own cost of deciding. `now` is the kernel's clock (what
/// `sched_clock()` reads), for schedulers that time sleeps and runs.
pub trait Scheduler {
    fn name(&self) -> &'static str;
    /// `t` became runnable (wake_up_process / new task).
    fn enqueue(&mut self, tasks: &[Task], t: TaskId, now: Nanos);
    /// `t` stopped being runnable (it sleeps or exited).
    fn dequeue(&mut self, tasks: &[Task], t: TaskId);
    /// schedule(): choose the next task; `prev` is still on the runqueue if runnable.
    /// Returns the choice and the time the decision took.
    fn pick(&mut self, tasks: &mut [Task], prev: TaskId, m: &MachineProfile, now: Nanos) -> (TaskId, Nanos);
    /// Timer tick charged to `curr`; true if `curr` should reschedule.
    fn tick(&mut self, tasks: &mut [Task], curr: TaskId) -> bool;
    /// Should waking `p` set need_resched on `curr`? Asked right after `enqueue(p)`.
    fn wakeup_preempt(&self, tasks: &[Task], p: TaskId, curr: TaskId) -> bool;
    /// do_fork(): share the parent's slice with the child (before the child's `enqueue`).
    fn fork(&mut self, tasks: &mut [Task], parent: TaskId, child: TaskId, now: Nanos);
    /// Runnable tasks (including the running one).
    fn nr_running(&self) -> usize;
}
