//! Workloads: task programs built from user compute bursts, system calls and sleeps.
//!
//! A [`Program`] is asked for its next [`Action`] each time its task is in user space (or,
//! for a kernel thread, between passes). A system call is one of a typed set ([`Syscall`])
//! with the sizes the program works on (bytes per write, files per directory); the kernel
//! turns it into its code path ([`Syscall::path`]), and the lengths of the kernel loops
//! inside come from kernel state when they run.

pub(crate) mod cmd;
pub mod hogs;
pub mod iozone;
pub(crate) mod ops;
pub mod posix_test;
mod prog_cx;
pub mod realfeel;
pub mod script;
pub mod sizes;
pub mod stress;
pub mod sysbench;
pub mod syscall;
pub mod task;
pub mod video;

use crate::fs::state::FsState;
use crate::kernel::path::Path;
use crate::kernel::task::Policy;
use crate::workload::syscall::Syscall;
use latlab_core::Nanos;
pub use prog_cx::ProgCx;

/// What a task does next.
pub enum Action {
    /// Run in user mode for this long.
    Compute(Nanos),
    /// Make this system call ([`Syscall`]: the kernel builds its path).
    Call(Syscall),
    /// Enter the kernel and run this path: a kernel thread's own work (a workload program
    /// makes an [`Action::Call`] instead).
    Syscall(Box<dyn Path<FsState>>),
    /// nanosleep / schedule_timeout.
    Sleep(Nanos),
    /// fork + exec a child running another program.
    Spawn(TaskSpec),
    /// wait4 until every child has exited.
    WaitChildren,
    /// wait4 until fewer than this many children are alive (make -jN).
    WaitChildrenBelow(u32),
    /// exit(): tear down the address space and become a zombie.
    Exit,
    /// `timer_create(CLOCK_MONOTONIC)` + `timer_settime` of a timer signalling the calling
    /// thread every `period` ns, the first expiry one period from now.
    TimerCreate { period: Nanos },
}

/// A task to create.
pub struct TaskSpec {
    pub comm: String,
    pub policy: Policy,
    pub rt_priority: u32,
    pub nice: i32,
    pub kthread: bool,
    /// Share the parent's mm (a thread) instead of getting its own.
    pub share_mm: bool,
    /// The CPUs it may run on (`sched_setaffinity`); `None`: every CPU.
    pub affinity: Option<Vec<u32>>,
    pub program: Box<dyn Program>,
}

impl TaskSpec {
    /// A SCHED_OTHER user process at nice 0.
    pub fn user(comm: impl Into<String>, program: Box<dyn Program>) -> Self {
        TaskSpec {
            comm: comm.into(),
            policy: Policy::Other,
            rt_priority: 0,
            nice: 0,
            kthread: false,
            share_mm: false,
            affinity: None,
            program,
        }
    }
    /// A kernel thread.
    pub fn kthread(comm: impl Into<String>, program: Box<dyn Program>) -> Self {
        TaskSpec {
            kthread: true,
            ..TaskSpec::user(comm, program)
        }
    }
}

/// A task's behaviour.
pub trait Program {
    fn next(&mut self, cx: &mut ProgCx) -> Action;
}

#[cfg(test)]
mod tests {
    /// Every workload program is on the typed system-call set: none builds a kernel path
    /// itself (`Action::Syscall` of a path). (Kernel state it reaches only through
    /// `ProgCx`'s named methods: its fields are private to `prog_cx.rs`.)
    #[test]
    fn programs_act_through_the_typed_system_calls() {
        for (name, text) in [
            ("ops.rs", include_str!("ops.rs")),
            ("script.rs", include_str!("script.rs")),
            ("cmd/cat.rs", include_str!("cmd/cat.rs")),
            ("cmd/memhog.rs", include_str!("cmd/memhog.rs")),
            ("cmd/dbench.rs", include_str!("cmd/dbench.rs")),
            ("cmd/dd.rs", include_str!("cmd/dd.rs")),
            ("cmd/cvs.rs", include_str!("cmd/cvs.rs")),
            ("cmd/make.rs", include_str!("cmd/make.rs")),
            ("cmd/rm.rs", include_str!("cmd/rm.rs")),
            ("cmd/sync.rs", include_str!("cmd/sync.rs")),
            ("cmd/tar.rs", include_str!("cmd/tar.rs")),
            ("cmd/updatedb.rs", include_str!("cmd/updatedb.rs")),
            ("stress.rs", include_str!("stress.rs")),
            ("iozone.rs", include_str!("iozone.rs")),
            ("sysbench.rs", include_str!("sysbench.rs")),
            ("realfeel.rs", include_str!("realfeel.rs")),
            ("hogs.rs", include_str!("hogs.rs")),
            ("video.rs", include_str!("video.rs")),
            ("posix_test.rs", include_str!("posix_test.rs")),
            ("task.rs", include_str!("task.rs")),
        ] {
            assert!(!text.contains("Action::Syscall("), "{name} builds a kernel path itself");
        }
    }
}
