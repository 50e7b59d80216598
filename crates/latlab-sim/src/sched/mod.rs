//! Schedulers behind one trait. The CPU loop (`kernel`) never asks which scheduler it has;
//! [`crate::assemble::scheduler`] is the one place that turns a variant's `sched` switch
//! into one.
//!
//! - [`goodness24`]: Linux 2.4's `goodness()` scheduler with epochs, SCHED_FIFO/RR on top.
//! - [`o1`]: Ingo Molnar's O(1) scheduler as in 2.6.11 kernel/sched.c (uniprocessor), with
//!   SCHED_FIFO/RR in priorities 0..99 above it.
//! - [`cfs`]: the Completely Fair Scheduler of 2.6.35/2.6.36 kernel/sched_fair.c, with seed
//!   004's granularity patch as a switch; [`rt`] above it.
//! - [`eevdf`]: EEVDF of 6.6+ kernel/sched/fair.c; [`rt`] above it.
//!
//! On several CPUs, CFS and EEVDF get a runqueue per CPU ([`smp`]) with wakeup placement
//! ([`select`]), load balancing by domain ([`balance`], [`topology`]) and RT push/pull
//! ([`rt_smp`]); goodness24 and O(1) keep one runqueue the CPUs share (`pick_excluding`).
//!
//! Each scheduler keeps its own per-task state, indexed by [`TaskId`](crate::kernel::task::TaskId): a [`Task`](crate::kernel::task::Task) carries
//! only what every kernel generation has (policy, priority, nice).

pub mod balance;
pub mod cfs;
pub mod eevdf;
pub mod goodness24;
pub mod o1;
pub mod rt;
pub mod rt_bandwidth;
pub mod rt_smp;
pub mod select;
pub mod smp;
pub mod topology;

pub use crate::kernel::sched_class::{Placement, Scheduler};

/// `get_update_sysctl_factor()` under the default SCHED_TUNABLESCALING_LOG (kernel/sched/fair.c
/// since 2.6.33, unchanged in 6.18): `1 + ilog2(min(num_online_cpus(), 8))`, by which
/// `update_sysctl()` multiplies each normalized granularity at boot (CFS: latency, min and
/// wakeup granularity; EEVDF: the base slice).
pub fn sysctl_factor(ncpus: u32) -> latlab_core::Nanos {
    1 + latlab_core::Nanos::from(ncpus.clamp(1, 8).ilog2())
}
