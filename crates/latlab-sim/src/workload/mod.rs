//! Workloads: task programs built from user compute bursts, system calls and sleeps.
//!
//! A [`Program`] is asked for its next [`Action`] each time its task is in user space (or,
//! for a kernel thread, between passes). System calls are code paths from the catalog, built
//! by the program with the sizes it works on (bytes per write, files per directory); the
//! lengths of the kernel loops inside them come from kernel state when they run.

pub(crate) mod cmd;
pub mod hogs;
pub mod iozone;
pub mod kthreads;
pub(crate) mod ops;
pub mod posix_test;
pub mod realfeel;
pub mod script;
pub mod sizes;
pub mod stress;
pub mod sysbench;
pub mod video;

use crate::engine::Rng;
use crate::kernel::path::Path;
use crate::kernel::state::KState;
use crate::kernel::task::Policy;
use crate::machine::MachineProfile;
use crate::measure::Mark;
use latlab_core::Nanos;

/// What a task does next.
pub enum Action {
    /// Run in user mode for this long.
    Compute(Nanos),
    /// Enter the kernel and run this path.
    Syscall(Box<dyn Path>),
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

/// What a program sees when it decides.
pub struct ProgCx<'a> {
    pub now: Nanos,
    pub m: &'a MachineProfile,
    pub st: &'a mut KState,
    pub rng: &'a mut Rng,
    pub pid: u32,
    /// Measurement marks of this step (at most a couple; inline, no allocation).
    pub marks: &'a mut smallvec::SmallVec<[Mark; 2]>,
    /// The task's address space (its pages live in `st.mm.mms`).
    pub mm: u32,
}

/// A task's behaviour.
pub trait Program {
    fn next(&mut self, cx: &mut ProgCx) -> Action;
}
