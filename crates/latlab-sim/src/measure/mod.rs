//! Measurement tasks as the seeds ran them, and the bookkeeping that explains each sample.
//!
//! - [`realfeel`]: Andrew Morton's realfeel2 (seed 000) — RTC interrupts at a set rate waking
//!   a SCHED_FIFO reader of `/dev/rtc`; a sample is the time from the interrupt to the reader
//!   running in user space.
//! - [`preempt_off`]: the voluntary-preempt patch's tracer (seed 003): the longest
//!   preemption-off stretch of any task.

pub mod posix_timer;
pub mod preempt_off;
pub mod realfeel;
pub mod recorder;
pub mod write_latency;

use crate::kernel::task::{Task, TaskId};
use latlab_core::{Nanos, TaskSlice};

pub use crate::kernel::tracepoint::Mark;

/// Add `d` to `k`'s tally in `v` (a handful of entries: a linear search), keeping the order
/// in which the keys first came.
pub(crate) fn tally<K: PartialEq>(v: &mut Vec<(K, Nanos)>, k: K, d: Nanos) {
    match v.iter_mut().find(|(x, _)| *x == k) {
        Some((_, n)) => *n += d,
        None => v.push((k, d)),
    }
}

/// Tasks' CPU times as the result's `TaskSlice`s, named as the tasks are.
pub(crate) fn task_slices(tasks: &[Task], times: &[(TaskId, Nanos)]) -> Vec<TaskSlice> {
    times
        .iter()
        .map(|&(t, ns)| TaskSlice {
            comm: tasks[t].comm.clone(),
            pid: tasks[t].pid,
            ns,
        })
        .collect()
}
