//! Tasks: user processes and kernel threads (include/linux/sched.h, 2.4).

use crate::kernel::path::{Chan, Step};
use latlab_core::Nanos;

pub type TaskId = usize;

/// Scheduling policy (SCHED_OTHER, SCHED_FIFO, SCHED_RR).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    Other,
    Fifo,
    Rr,
}

impl Policy {
    /// The kernel's numeric policy, as the latency tracer prints it.
    pub fn number(self) -> u32 {
        match self {
            Policy::Other => 0,
            Policy::Fifo => 1,
            Policy::Rr => 2,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskState {
    /// TASK_RUNNING: on the runqueue.
    Runnable,
    /// Sleeping on a wait channel.
    Sleeping(Chan),
    /// Exited.
    Zombie,
}

/// What the task is executing when it has the CPU.
pub enum Exec {
    /// A user-mode compute burst with `left` ns still to run.
    User { left: Nanos },
    /// Kernel mode: the current step of its path, if one is under way (the path itself,
    /// which runs on the state of the layer it belongs to, the CPU loop keeps: `cpu/`).
    Kernel {
        step: Option<Running>,
        /// Kernel entry of a user task (`false` for a kernel thread's own loop).
        from_user: bool,
    },
    /// Between actions: ask the program what to do next.
    Ready,
    /// The idle loop.
    Idle,
}

/// A step under way.
pub struct Running {
    pub step: Step,
    /// Time left in this step (for a loop: until its last item).
    pub left: Nanos,
    /// Total time of the step when it started.
    pub total: Nanos,
    /// When this step (or the lock it holds) started: the start of a non-preemptible stretch.
    pub since: Nanos,
    /// Its task was switched away from it with time left (kernel preemption; under
    /// PREEMPT_RT also a sleeping lock waited for as it began) and has not run it since: the
    /// end of the switch back to it resumes the step where it stopped.
    pub resume: bool,
}

pub struct Task {
    pub pid: u32,
    pub comm: String,
    pub policy: Policy,
    pub rt_priority: u32,
    pub nice: i32,
    pub state: TaskState,
    /// Kernel thread (no mm of its own).
    pub kthread: bool,
    /// Address-space id (0 for kernel threads), for goodness()'s same-mm bonus.
    pub mm: u32,
    /// A thread sharing its parent's address space (CLONE_VM): its exit leaves the mm.
    pub thread: bool,
    /// 2.4 `current->need_resched` (TIF_NEED_RESCHED).
    pub need_resched: bool,
    /// TIF_NEED_RESCHED_LAZY (lazy preemption): honoured at return to user space, promoted
    /// to `need_resched` at the next tick.
    pub need_resched_lazy: bool,
    pub exec: Exec,
    pub parent: Option<TaskId>,
    /// Live children (for wait4).
    pub children: u32,
    /// CPU time used, ns.
    pub cpu_ns: Nanos,
    /// In do_exit: the path's end makes the task a zombie.
    pub exiting: bool,
    /// Sent SIGKILL by the OOM killer (TIF_MEMDIE): exits at its next return to user space.
    pub oom_killed: bool,
    /// In wait4 until fewer children than this are alive.
    pub wait_below: Option<u32>,
    /// PREEMPT_RT: it owns a sleeping spinlock, taken with `migrate_disable()`
    /// (kernel/locking/spinlock_rt.c `rt_spin_lock`; `local_lock` likewise): no balance,
    /// push, pull or wakeup moves it off its CPU until it unlocks (`is_migration_disabled`
    /// in kernel/sched/{core,fair,rt}.c; switched out, its `cpus_ptr` is its CPU alone,
    /// `migrate_disable_switch`). Kept by cpu/rtmutex.rs.
    pub migration_disabled: bool,
    /// The CPU it last ran on (`task_cpu`), where a wakeup looks first (fewer than
    /// `machine::MAX_CPUS`).
    pub cpu: u8,
}

impl Task {
    /// `comm/pid`, as traces print a task.
    pub fn label(&self) -> String {
        format!("{}/{}", self.comm, self.pid)
    }
}

/// A SCHED_OTHER nice-0 user task with nothing to run, for scheduler unit tests.
#[cfg(test)]
pub(crate) fn tests_task() -> Task {
    Task {
        pid: 0,
        comm: "t".into(),
        policy: Policy::Other,
        rt_priority: 0,
        nice: 0,
        state: TaskState::Runnable,
        kthread: false,
        mm: 1,
        thread: false,
        need_resched: false,
        need_resched_lazy: false,
        exec: Exec::Ready,
        parent: None,
        children: 0,
        cpu_ns: 0,
        exiting: false,
        oom_killed: false,
        wait_below: None,
        migration_disabled: false,
        cpu: 0,
    }
}
