//! latlab-report: everything latlab prints or writes, from a [`latlab_core::RunResult`].
//!
//! - [`seed_table`]: the seeds' own table layouts with model and published figures side by
//!   side (seed 000's log histogram, seed 002's maxima), and the comparison rows.
//! - [`verdict`]: each published figure inside its bar or not, in one notation, and the
//!   counts every table and `--json` document ends with.
//! - [`latency_trace`]: the worst sample as `/proc/latency_trace` text (seed 003's layout).
//! - [`summary`]: percentiles and attribution of the worst samples.
//! - [`cyclictest`]: `cyclictest -h` histogram files.
//! - [`iozone_q`]: a write stream's records as iozone `-Q`'s per-record files (`wol.dat`).
//! - [`input`]: a result read back from either engine's JSON, with errors that say why not.
//! - [`buckets`]: log buckets and percentile points shared by the exports below.
//! - [`compare`]: several results side by side (`latlab report compare`).
//! - [`csv`]: buckets and percentiles as CSV (`latlab report csv`).
//! - [`plot`]: SVG latency distribution and percentile plots (`latlab report plot`).
//! - [`timeline`]: the CPU around the model's worst samples, exact where the result is, laid
//!   out where it is not; [`ftrace`] and [`chrome_trace`] write it for trace viewers
//!   (`latlab report trace`).
//! - [`recorded`]: the kernel events the probe recorded around its worst samples, exported
//!   as they were recorded (`latlab report trace` of a probe result).
//! - [`validate`]: a scenario on the model beside the machine, figure by figure, with
//!   issue 31's bar (`latlab validate`).
//! - [`html`]: one self-contained HTML page of all the above for saved results
//!   (`latlab report html`).
//!
//! **Architecture invariant.** Exporters only read results; they never run anything.

#![forbid(unsafe_code)]

pub mod buckets;
pub mod chrome_trace;
pub mod compare;
pub mod csv;
pub mod cyclictest;
pub mod ftrace;
pub mod html;
pub mod input;
pub mod iozone_q;
pub mod latency_trace;
pub mod plot;
pub mod preempt_off;
pub mod recorded;
pub mod seed_table;
pub mod summary;
#[cfg(test)]
mod testutil;
pub mod timeline;
pub mod validate;
pub mod verdict;

/// Width of a text column whose cells are `lens` long, at least `min`: the widest cell, capped
/// at the most a format width can be (`u16::MAX`; a longer cell, a 64 KiB label, then prints
/// whole and unpadded instead of stopping the formatter).
pub(crate) fn column_width(lens: impl Iterator<Item = usize>, min: usize) -> usize {
    lens.max().unwrap_or(0).max(min).min(u16::MAX as usize)
}
