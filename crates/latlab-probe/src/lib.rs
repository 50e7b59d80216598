//! The host probe: measures wakeup and write(2) latency on the running Linux kernel and
//! returns the same [`latlab_core::result::RunResult`] the model produces.
//!
//! Modules by concept: [`timer`] (clock_nanosleep loop per CPU, as cyclictest), [`posix_timer`]
//! (timer_create with signal or thread notification), [`write`](mod@write) (per-record write(2) latency),
//! [`load`] (built-in load generators), [`scenario`] (a scenario's tasks run for real, measured
//! by the same loops), [`caps`] (what privileges the run got), [`dma_latency`]
//! (the `/dev/cpu_dma_latency` guard), [`signals`] (SIGINT/SIGTERM/SIGHUP stop the run
//! cleanly), [`guard`] (the guardian that undoes what a killed probe leaves), [`output`]
//! (terminal summary and JSON), [`parse`] (option values), [`private`] (the 0700
//! directories, made as mkdtemp makes them, that hold whatever the probe creates in a shared
//! directory), [`explain`] (coarse spike attribution from /proc), [`smi`] (SMI counts from
//! MSR_SMI_COUNT), [`cgroup`] (the cgroup of a spike's culprit, `--cgroup`), [`on_threshold`]
//! (`--on-threshold`: a command run at a spike).

pub mod calibrate;
pub mod caps;
pub mod cgroup;
pub mod clock;
pub mod dma_latency;
pub mod explain;
pub mod guard;
pub mod load;
pub mod meta;
pub mod on_threshold;
pub mod output;
pub mod parse;
pub mod posix_timer;
pub mod private;
pub mod scenario;
pub mod sched_trace;
pub mod signals;
pub mod smi;
pub mod timer;
pub mod write;
