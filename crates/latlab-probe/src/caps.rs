//! What the run could get: memory locking, SCHED_FIFO, CPU pinning. Without root or RT limits
//! the probe still runs and says plainly what that costs.

use std::fmt;

/// What one measuring thread obtained.
#[derive(Clone, Debug, Default)]
pub struct ThreadCaps {
    pub pinned: bool,
    pub fifo: bool,
    pub errors: Vec<String>,
}

/// Pin the calling thread to `cpu`.
pub fn pin_to(cpu: usize) -> Result<(), String> {
    use nix::sched::{sched_setaffinity, CpuSet};
    use nix::unistd::Pid;
    let mut set = CpuSet::new();
    set.set(cpu).map_err(|e| format!("CPU {cpu}: {e}"))?;
    sched_setaffinity(Pid::from_raw(0), &set).map_err(|e| format!("sched_setaffinity(CPU {cpu}): {e}"))
}

/// Make the calling thread SCHED_FIFO at `prio`.
pub fn set_fifo(prio: i32) -> Result<(), String> {
    let p = libc::sched_param { sched_priority: prio };
    // SAFETY: p is a valid sched_param; pid 0 is the calling thread.
    let r = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) };
    if r == 0 {
        Ok(())
    } else {
        Err(format!(
            "sched_setscheduler(SCHED_FIFO, {prio}): {}",
            std::io::Error::last_os_error()
        ))
    }
}

/// Run the calling thread as SCHED_OTHER (a helper thread of a probe started under a
/// real-time policy must not compete with the measuring threads); a refusal leaves it as it is.
pub fn set_normal() {
    let p = libc::sched_param { sched_priority: 0 };
    // SAFETY: p is a valid sched_param; pid 0 is the calling thread.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_OTHER, &p) };
}

/// What `mlockall` locked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Locked {
    /// MCL_CURRENT | MCL_FUTURE.
    CurrentAndFuture,
    /// MCL_CURRENT only, within RLIMIT_MEMLOCK.
    Current,
}

impl Locked {
    /// As the `mlockall` setting of the result.
    pub fn as_str(self) -> &'static str {
        match self {
            Locked::CurrentAndFuture => "current+future",
            Locked::Current => "current",
        }
    }
}

/// Lock all current and future memory (mlockall).
///
/// With CAP_IPC_LOCK or an unlimited RLIMIT_MEMLOCK both current and future pages are locked.
/// Otherwise only the current ones: under MCL_FUTURE every later mapping beyond the limit
/// (a thread stack, a growing histogram) would fail with EAGAIN, which is worse than a fault.
pub fn lock_memory() -> Result<Locked, String> {
    use nix::sys::mman::{mlockall, MlockAllFlags};
    use nix::sys::resource::{getrlimit, Resource, RLIM_INFINITY};
    let soft = getrlimit(Resource::RLIMIT_MEMLOCK).map_or(0, |(soft, _)| soft);
    if soft == RLIM_INFINITY || has_cap_ipc_lock() {
        mlockall(MlockAllFlags::MCL_CURRENT | MlockAllFlags::MCL_FUTURE)
            .map(|()| Locked::CurrentAndFuture)
            .map_err(|e| format!("mlockall: {e}"))
    } else {
        mlockall(MlockAllFlags::MCL_CURRENT)
            .map(|()| Locked::Current)
            .map_err(|e| format!("mlockall(MCL_CURRENT) within RLIMIT_MEMLOCK {} KiB: {e}", soft / 1024))
    }
}

/// CAP_IPC_LOCK (capability 14) in the effective set, from /proc/self/status.
fn has_cap_ipc_lock() -> bool {
    const CAP_IPC_LOCK: u32 = 14;
    std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix("CapEff:"))
            .and_then(|h| u64::from_str_radix(h.trim(), 16).ok())
            .is_some_and(|caps| caps >> CAP_IPC_LOCK & 1 == 1)
    })
}

/// Undo [`lock_memory`].
pub fn unlock_memory() {
    let _ = nix::sys::mman::munlockall();
}

/// The whole run's privileges, for the report.
#[derive(Clone, Debug, Default)]
pub struct RunCaps {
    /// What mlockall locked, if it succeeded.
    pub mlocked: Option<Locked>,
    pub mlock_error: Option<String>,
    pub fifo_threads: usize,
    pub threads: usize,
    /// SCHED_FIFO was asked for (priority > 0).
    pub fifo_requested: bool,
    pub fifo_error: Option<String>,
    pub pin_error: Option<String>,
    pub dma_latency: DmaState,
    /// Why the tracepoint-based spike attribution was not available (then /proc is used).
    pub trace_error: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub enum DmaState {
    Held,
    #[default]
    NotRequested,
    Failed(String),
}

impl RunCaps {
    pub fn add_thread(&mut self, t: &ThreadCaps) {
        self.threads += 1;
        if t.fifo {
            self.fifo_threads += 1;
        }
        for e in &t.errors {
            if e.starts_with("sched_setscheduler") && self.fifo_error.is_none() {
                self.fifo_error = Some(e.clone());
            } else if e.starts_with("sched_setaffinity") && self.pin_error.is_none() {
                self.pin_error = Some(e.clone());
            }
        }
    }

    /// Plain-language warnings about what the run could not get and what it means.
    pub fn warnings(&self) -> Vec<String> {
        let mut w = Vec::new();
        if let Some(e) = &self.mlock_error {
            w.push(format!(
                "could not lock memory ({e}): page faults may add latency; run as root or raise `ulimit -l`"
            ));
        }
        if self.mlocked == Some(Locked::Current) {
            w.push(
                "memory locked as it was at the start only (no CAP_IPC_LOCK, finite RLIMIT_MEMLOCK): pages \
                 the run allocates later may fault"
                    .to_string(),
            );
        }
        if self.fifo_requested && self.fifo_threads < self.threads {
            w.push(format!(
                "could not get SCHED_FIFO ({}): measured as SCHED_OTHER, so the figures include waiting for \
                 other tasks and are not comparable with cyclictest -p; run as root or grant RLIMIT_RTPRIO",
                self.fifo_error.as_deref().unwrap_or("unknown error")
            ));
        }
        if let Some(e) = &self.pin_error {
            w.push(format!(
                "could not pin a thread ({e}): its samples may come from another CPU"
            ));
        }
        if let Some(e) = &self.trace_error {
            w.push(format!(
                "no scheduler tracepoints ({e}): spikes are attributed from /proc deltas, which is coarser, \
                 and no kernel stacks, recorded events or IRQ/thread split are kept"
            ));
        }
        if let DmaState::Failed(e) = &self.dma_latency {
            w.push(format!(
                "could not hold /dev/cpu_dma_latency at 0 ({e}): deep C-state exits may add latency"
            ));
        }
        w
    }

    pub fn settings(&self) -> Vec<(String, String)> {
        vec![
            ("mlockall".into(), self.mlocked.map_or("no", Locked::as_str).to_string()),
            (
                "sched_fifo_threads".into(),
                format!("{}/{}", self.fifo_threads, self.threads),
            ),
            (
                "cpu_dma_latency".into(),
                match &self.dma_latency {
                    DmaState::Held => "0".into(),
                    DmaState::NotRequested => "untouched".into(),
                    DmaState::Failed(e) => format!("failed: {e}"),
                },
            ),
        ]
    }
}

impl fmt::Display for RunCaps {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (k, v) in self.settings() {
            write!(f, "{k}={v} ")?;
        }
        Ok(())
    }
}
