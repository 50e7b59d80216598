//! The kernel's core, beneath every subsystem: code paths as data ([`path`]), locks,
//! the catalog of rescheduling points and loop costs, tasks, preemption, the timer base,
//! POSIX timers, the tracepoints and the scheduler class the CPU loop ([`crate::cpu`]) sees.

pub mod catalog;
pub mod cpumask;
pub mod futex;
pub mod hrtimer;
pub mod irq;
pub mod irq_thread;
pub mod lock;
pub mod path;
pub mod pipe;
pub mod posix_timer;
pub mod preempt;
pub mod rtmutex;
pub mod sched_class;
pub mod state;
pub mod task;
pub mod tracepoint;

pub use irq::{HrTimer, Irq};
pub use preempt::SwitchReason;
