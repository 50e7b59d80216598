//! latlab-report: everything latlab prints or writes, from a [`latlab_core::RunResult`].
//!
//! - [`seed_table`]: the seeds' own table layouts with model and published figures side by
//!   side (seed 000's log histogram, seed 002's maxima), and the comparison rows.
//! - [`latency_trace`]: the worst sample as `/proc/latency_trace` text (seed 003's layout).
//! - [`summary`]: percentiles and attribution of the worst samples.
//! - [`cyclictest`]: `cyclictest -h` histogram files.
//!
//! **Architecture invariant.** Exporters only read results; they never run anything.

pub mod cyclictest;
pub mod latency_trace;
pub mod seed_table;
pub mod summary;
