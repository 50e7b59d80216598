//! Traces kept in a result.
//!
//! - [`LatencyTrace`]: the model's worst latency in the manner of `/proc/latency_trace`
//!   (voluntary-preempt v1.0.x, seed 003): a header naming the worst stretch and its task,
//!   and entries of `<preempt_count> <abs>ms (+<delta>ms): function (parent)`.
//! - [`PreemptOff`]: the voluntary-preempt tracer's own measure (seed 003): the longest
//!   preemption-off stretch of any task, and how the worst `get_swap_page` grows with swap
//!   fill.
//! - [`RecordedEvents`]: the kernel's own trace events (ftrace) the probe recorded around one
//!   sample, each as the kernel printed it.

use crate::units::Nanos;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencyTrace {
    /// Kernel the trace was taken on (`2.4.18+mini-ll (model)`).
    pub kernel: String,
    /// Length of the traced latency.
    pub latency_ns: Nanos,
    /// Task that was running (`comm/pid`), with its policy and rt priority.
    pub task: String,
    pub policy: u32,
    pub rt_prio: u32,
    /// Function where the stretch started and where it ended.
    pub started_at: String,
    pub ended_at: String,
    /// Variant flags as the tracer printed them: (name, on).
    pub flags: Vec<(String, bool)>,
    pub entries: Vec<TraceEntry>,
    /// The tracer's layout version (`1.0.6`, `1.0.7`); empty: the latest, 1.0.7.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub version: String,
    /// What the engine says about the flags it printed (the model: the switches it records
    /// but does not implement); empty: nothing to say.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub note: String,
}

/// The longest preemption-off (critical-section) stretches of a run, as the
/// voluntary-preempt patch's tracer kept them, within a window of swap fill.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PreemptOff {
    /// The swap fill (percent of the swap area in use, at the stretch's end) the worst
    /// stretches below were taken in: [low, high].
    pub fill_pct: [u64; 2],
    /// The longest stretch of any kind in that window, with its entries.
    pub worst: Option<LatencyTrace>,
    /// The longest stretch in `get_swap_page` in that window.
    pub worst_swap: Option<LatencyTrace>,
    /// Preemption-off stretches measured in the whole run.
    pub stretches: u64,
    /// Per 10 % of swap fill (whole run): the longest `get_swap_page` stretch and the
    /// longest of any kind.
    pub by_fill: Vec<FillRow>,
}

/// One row of the growth table: swap fill `fill_pct`..`fill_pct + 10` percent.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FillRow {
    pub fill_pct: u64,
    /// `get_swap_page` calls that ended in this bucket.
    pub swap_calls: u64,
    /// Their longest stretch, ns.
    pub get_swap_page_ns: Nanos,
    /// The longest stretch of any kind that ended in this bucket, ns.
    pub any_ns: Nanos,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceEntry {
    /// preempt_count layout: preempt bits 0-7, softirq 8-15, hardirq 16-27.
    pub preempt_count: u32,
    /// Time since the start of the trace.
    pub t_ns: Nanos,
    pub func: String,
    pub parent: String,
}

/// The kernel trace events recorded around one sample (the probe's ftrace instance), each as
/// the kernel printed it: a window of the recording, bounded, never added to.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RecordedEvents {
    /// The sample's `at_ns`: which of its stream's samples this window belongs to.
    pub sample_at_ns: Nanos,
    /// The trace clock and its resolution (`mono (CLOCK_MONOTONIC), ns`): the clock of every
    /// time below.
    pub clock: String,
    /// The sample's stimulus (the intended wakeup, the call's start) on the trace clock.
    pub stimulus_ns: Nanos,
    /// The window asked for, on the trace clock.
    pub from_ns: Nanos,
    pub to_ns: Nanos,
    /// The CPUs whose events the window holds.
    pub cpus: Vec<u32>,
    /// Events of the window left out, the earliest first, to stay within the bound.
    pub left_out: u64,
    /// In time order.
    pub events: Vec<RecordedEvent>,
}

/// One event line of the kernel's trace: `comm-pid [cpu] flags secs.usecs: event: fields`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordedEvent {
    pub ts_ns: Nanos,
    pub cpu: u32,
    /// The task current on the CPU (`<idle>` for pid 0).
    pub comm: String,
    pub pid: u32,
    /// The irq-info column (`d.h2.`: irqs off, need-resched, hardirq/softirq, preempt
    /// depth, ...) as printed; empty when the tracer printed none.
    pub flags: String,
    /// `sched_switch`, `irq_handler_entry`, ...; `<stack trace>` for a kernel stack.
    pub event: String,
    /// The event's fields as printed; a stack's frames, innermost first, one per line.
    pub fields: String,
}
