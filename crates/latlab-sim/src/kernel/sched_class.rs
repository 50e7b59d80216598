//! The scheduler class the CPU loop and the tracepoints see (`struct sched_class`,
//! kernel/sched/sched.h): one trait, implemented by the schedulers of [`crate::sched`].

use crate::kernel::task::{Task, TaskId};
use crate::machine::MachineProfile;
use latlab_core::Nanos;

/// A scheduler class with its own cost of deciding. `now` is the kernel's clock (what
/// `sched_clock()` reads), passed to every call.
pub trait Scheduler {
    fn name(&self) -> &'static str;
    /// A new task (`sched_fork`): forked by `parent`, or started by the model itself with
    /// no parent (kernel threads, the measurement task, the shell). Called before its first
    /// `enqueue`.
    fn fork(&mut self, tasks: &[Task], parent: Option<TaskId>, child: TaskId, now: Nanos);
    /// `t` became runnable (wake_up_process / wake_up_new_task).
    fn enqueue(&mut self, tasks: &[Task], t: TaskId, now: Nanos);
    /// `t` stopped being runnable (it sleeps or exited).
    fn dequeue(&mut self, tasks: &[Task], t: TaskId, now: Nanos);
    /// schedule(): choose the next task; `prev` is still on the runqueue if runnable.
    /// Returns the choice and the time the decision took.
    fn pick(&mut self, tasks: &[Task], prev: TaskId, m: &MachineProfile, now: Nanos) -> (TaskId, Nanos);
    /// Can several CPUs share this runqueue ([`Scheduler::pick_excluding`])?
    fn smp(&self) -> bool {
        false
    }
    /// schedule() on one of several CPUs sharing the runqueue: as `pick`, but never a task
    /// of `busy` (those the other CPUs run). Only a scheduler whose `smp()` is true is given
    /// a machine of more than one CPU (checked when a run is built).
    fn pick_excluding(
        &mut self,
        tasks: &[Task],
        prev: TaskId,
        busy: &[TaskId],
        m: &MachineProfile,
        now: Nanos,
    ) -> (TaskId, Nanos) {
        debug_assert!(busy.is_empty(), "{} models one CPU", self.name());
        self.pick(tasks, prev, m, now)
    }
    /// Timer tick charged to `curr`; true if `curr` should reschedule.
    fn tick(&mut self, tasks: &[Task], curr: TaskId, now: Nanos) -> bool;
    /// Should waking `p` set need_resched on `curr`? Asked right after `enqueue(p)`.
    fn wakeup_preempt(&mut self, tasks: &[Task], p: TaskId, curr: TaskId, now: Nanos) -> bool;
    /// Runnable tasks (including the running one).
    fn nr_running(&self) -> usize;
    /// Where runnable task `t` stands in this scheduler's order, in the kernel's terms, for
    /// explaining a late wakeup. Numbers only: it is taken at every wakeup of a watched task
    /// and formatted only for the samples a result keeps.
    fn placement(&self, _t: TaskId) -> Option<Placement> {
        None
    }

    // ----- per-CPU runqueues (crate::sched::smp); the shared-queue schedulers keep the
    // defaults and the CPU loop never calls these for them.

    /// Does each CPU have its own runqueue? Then the CPU loop places a woken task with
    /// [`Scheduler::select_task_rq`], picks with [`Scheduler::pick_on`], balances at the
    /// tick ([`Scheduler::balance_tick`]) and tells the CPUs [`Scheduler::take_kick`] names.
    fn per_cpu(&self) -> bool {
        false
    }
    /// `select_task_rq`: the CPU whose runqueue task `p` (asleep or new: `fork`) joins, woken
    /// from CPU `this_cpu`; `p` is moved there before its `enqueue`.
    fn select_task_rq(&mut self, tasks: &[Task], p: TaskId, _this_cpu: usize, _fork: bool, _now: Nanos) -> usize {
        usize::from(tasks[p].cpu)
    }
    /// schedule() on CPU `cpu` (its runqueue only; balancing when it would go idle).
    fn pick_on(
        &mut self,
        tasks: &[Task],
        _cpu: usize,
        prev: TaskId,
        m: &MachineProfile,
        now: Nanos,
    ) -> (TaskId, Nanos) {
        self.pick(tasks, prev, m, now)
    }
    /// The periodic balance of CPU `cpu` at its tick; true if it pulled a task that should
    /// preempt what it runs.
    fn balance_tick(&mut self, _tasks: &[Task], _cpu: usize, _now: Nanos) -> bool {
        false
    }
    /// A CPU the scheduler moved a task to that must reschedule (`resched_curr` on a remote
    /// runqueue: a reschedule IPI), one at a time until none.
    fn take_kick(&mut self) -> Option<usize> {
        None
    }
    /// `sched_setaffinity`: task `t` may run on `cpus` only.
    fn set_affinity(&mut self, _t: TaskId, _cpus: &[u32]) {}
}

/// Where a fair-class scheduler put a task when it was woken or created.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Placement {
    /// CFS: vruntime relative to the queue's `min_vruntime` and the task's `sched_slice`.
    Cfs { vruntime_rel: i64, slice: Nanos },
    /// EEVDF: lag (`V - vruntime`) and virtual deadline relative to the weighted average
    /// vruntime `V`, and whether the task is eligible (lag >= 0).
    Eevdf {
        lag: i64,
        deadline_rel: i64,
        eligible: bool,
    },
}

impl std::fmt::Display for Placement {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        let ms = |ns: i64| ns as f64 / 1e6;
        match *self {
            Placement::Cfs { vruntime_rel, slice } => write!(
                f,
                "vruntime {:+.3} ms from min_vruntime, slice {:.3} ms",
                ms(vruntime_rel),
                ms(slice as i64)
            ),
            Placement::Eevdf {
                lag,
                deadline_rel,
                eligible,
            } => write!(
                f,
                "lag {:+.3} ms, deadline {:+.3} ms from V, {}",
                ms(lag),
                ms(deadline_rel),
                if eligible { "eligible" } else { "not eligible" }
            ),
        }
    }
}
