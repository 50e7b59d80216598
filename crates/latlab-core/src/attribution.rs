//! Why a latency sample took as long as it did.
//!
//! The model fills every field exactly from its mechanisms; the probe fills what the real
//! kernel exposes (tracepoints or /proc deltas) and says how coarse that was in `note`.

use crate::units::Nanos;
use serde::{Deserialize, Serialize};

/// What kept the woken task from running, as a decomposition of one latency sample.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Attribution {
    /// Time the interrupt waited because interrupts were disabled.
    pub irq_off_ns: Nanos,
    /// Time spent in interrupt handlers (the wakeup's own and any nested/following ones).
    pub handler_ns: Nanos,
    /// Time waiting for a usable preemption opportunity in the interrupted context.
    pub preempt_wait_ns: Nanos,
    /// Time other tasks ran ahead of the woken one (higher priority or not preemptible).
    pub ran_ahead_ns: Nanos,
    /// Time in the scheduler itself (selection plus context switch).
    pub sched_ns: Nanos,
    /// The woken task's own kernel work before it reached user space (finishing its
    /// system call, e.g. `rtc_read` and the syscall return path).
    pub wakee_kernel_ns: Nanos,
    /// Time the measured task slept inside the measured call (a timed system call that
    /// blocked, e.g. a write(2) throttled or waiting for I/O; probe only).
    #[serde(default)]
    pub blocked_ns: Nanos,
    /// The non-preemptible stretch that was running when the wakeup came.
    pub cause: Option<Cause>,
    /// Tasks that ran on the CPU between wakeup and the woken task running.
    pub tasks: Vec<TaskSlice>,
    /// Interrupts and softirqs that fired in the window: (name, count).
    pub irqs: Vec<(String, u64)>,
    /// Hypervisor steal time in the window (probe only).
    pub steal_ns: Nanos,
    /// How the attribution was obtained, and how precise it is.
    pub note: String,
}

/// The code path that held the CPU without a preemption opportunity.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cause {
    /// Task running the path (`comm/pid`).
    pub task: String,
    /// Kernel function of the path (`journal_commit_transaction`, `scan_swap_map`, ...).
    pub path: String,
    /// Spinlock held, if that is what made it non-preemptible.
    pub lock: Option<String>,
    /// When the non-preemptible stretch began (run-relative ns).
    pub since_ns: Nanos,
    /// When it ended (the first usable opportunity).
    pub until_ns: Nanos,
    /// Why it ended: the rescheduling point, unlock or return that let the task in.
    pub ended_by: String,
}

/// One task's share of the CPU inside a latency window.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskSlice {
    pub comm: String,
    pub pid: u32,
    pub ns: Nanos,
}
