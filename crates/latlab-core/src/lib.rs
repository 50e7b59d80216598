//! latlab-core: the contract between latlab's two engines (the kernel model and the host
//! probe) and its reports.
//!
//! A [`RunResult`] holds, per measurement stream (realfeel wakeups, POSIX-timer wakeups,
//! write(2) calls, ...), a [`LatencyHistogram`] with exact count/min/max/mean and
//! percentiles, the worst samples with their [`Attribution`], counters and throughput
//! figures, and the [`RunMeta`] needed to reproduce the run.
//!
//! **Invariant:** this crate does no I/O and knows nothing of the engines that fill it.

#![forbid(unsafe_code)]

pub mod attribution;
pub mod histogram;
pub mod result;
pub mod trace;
pub mod units;

pub use attribution::{Attribution, Cause, CgroupOf, Container, TaskSlice};
pub use histogram::{LatencyHistogram, Summary};
pub use result::{Engine, IoRecord, LatencySplit, LoadDeath, LoadFate, RunMeta, RunResult, Sample, Stream};
pub use trace::{FillRow, LatencyTrace, PreemptOff, RecordedEvent, RecordedEvents, TraceEntry};
pub use units::{covered, ms, us, Nanos};
