//! A latency trace in the manner of `/proc/latency_trace` (voluntary-preempt v1.0.x, seed 003):
//! a header naming the worst stretch and its task, and entries of
//! `<preempt_count> <abs>ms (+<delta>ms): function (parent)`.

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
