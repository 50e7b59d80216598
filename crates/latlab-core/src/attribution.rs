//! Why a latency sample took as long as it did.
//!
//! The model fills every field exactly from its mechanisms; the probe fills what the real
//! kernel exposes (tracepoints or /proc deltas) and says how coarse that was in `note`.

use crate::units::Nanos;
use serde::{Deserialize, Serialize};

/// What kept the woken task from running, as a decomposition of one latency sample.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Attribution {
    /// Time the interrupt waited because interrupts were disabled.
    pub irq_off_ns: Nanos,
    /// Time spent in interrupt handlers (the wakeup's own and any nested/following ones).
    pub handler_ns: Nanos,
    /// Time waiting for a usable preemption opportunity in the interrupted context.
    pub preempt_wait_ns: Nanos,
    /// Time other tasks ran ahead of the woken one (higher priority or not preemptible).
    pub ran_ahead_ns: Nanos,
    /// Time in the scheduler itself (selection plus context switch).
    pub sched_ns: Nanos,
    /// The woken task's own kernel work before it reached user space (finishing its
    /// system call, e.g. `rtc_read` and the syscall return path).
    pub wakee_kernel_ns: Nanos,
    /// Time the measured task slept inside the measured call (a timed system call that
    /// blocked, e.g. a write(2) throttled or waiting for I/O; probe only).
    #[serde(default)]
    pub blocked_ns: Nanos,
    /// The non-preemptible stretch that was running when the wakeup came.
    pub cause: Option<Cause>,
    /// Tasks that ran on the CPU between wakeup and the woken task running.
    pub tasks: Vec<TaskSlice>,
    /// Interrupts and softirqs that fired in the window: (name, count).
    pub irqs: Vec<(String, u64)>,
    /// Time in the window outside the kernel: the host's (a hypervisor that did not run the
    /// vCPU or held its interrupt back, firmware). The model's replayed host gaps; the probe's
    /// timer interrupt late to a CPU idle or in user space (interrupts on), or /proc/stat's
    /// steal delta when no trace tells.
    pub steal_ns: Nanos,
    /// How the attribution was obtained, and how precise it is.
    pub note: String,
    /// The cgroup (and container) of the task that held the CPU or ran ahead longest
    /// (probe only; the model leaves it empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cgroup: Option<CgroupOf>,
}

/// The cgroup of the task a spike is blamed on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CgroupOf {
    /// The task (`comm/pid`): the one running in `cause`, else the one that ran ahead longest.
    pub task: String,
    /// Its cgroup v2 path (`/system.slice/docker-<id>.scope`); empty when it could not be read.
    pub path: String,
    /// The container the path shows, when it shows one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container: Option<Container>,
    /// Where `path` was read (`/proc/PID/cgroup at the spike`), or why it is empty.
    pub source: String,
}

/// A container as its cgroup path names it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Container {
    /// `docker`, `podman`, `containerd`, `cri-o`, `kubernetes`, `lxc`, `machine`, `nspawn`.
    pub runtime: String,
    /// The container's id or name (a machine's or an LXC container's name).
    pub id: String,
    /// The Kubernetes pod's uid, when the path shows one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod: Option<String>,
}

impl Container {
    /// `docker 4f2d6c1a9b0e` (ids cut to 12 characters, as `docker ps` shows them), with
    /// `pod UID` first for a Kubernetes container.
    pub fn label(&self) -> String {
        let id: String = match self.id.len() == 64 && self.id.bytes().all(|b| b.is_ascii_hexdigit()) {
            true => self.id[..12].to_string(),
            false => self.id.clone(),
        };
        match &self.pod {
            Some(pod) if id.is_empty() => format!("{} pod {pod}", self.runtime),
            Some(pod) => format!("{} pod {pod} {id}", self.runtime),
            None => format!("{} {id}", self.runtime),
        }
    }
}

/// The code path that held the CPU without a preemption opportunity.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cause {
    /// Task running the path (`comm/pid`).
    pub task: String,
    /// Kernel function of the path (`journal_commit_transaction`, `scan_swap_map`, ...).
    pub path: String,
    /// Spinlock held, if that is what made it non-preemptible.
    pub lock: Option<String>,
    /// When the non-preemptible stretch began (run-relative ns).
    pub since_ns: Nanos,
    /// When it ended (the first usable opportunity).
    pub until_ns: Nanos,
    /// Why it ended: the rescheduling point, unlock or return that let the task in.
    pub ended_by: String,
}

/// One task's share of the CPU inside a latency window.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskSlice {
    pub comm: String,
    pub pid: u32,
    pub ns: Nanos,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_without_a_cgroup_load_and_write_none() {
        let old = r#"{"irq_off_ns":1,"handler_ns":0,"preempt_wait_ns":0,"ran_ahead_ns":0,"sched_ns":0,
            "wakee_kernel_ns":0,"cause":null,"tasks":[],"irqs":[],"steal_ns":0,"note":""}"#;
        let a: Attribution = serde_json::from_str(old).unwrap();
        assert_eq!((a.irq_off_ns, a.cgroup.clone()), (1, None));
        assert!(!serde_json::to_string(&a).unwrap().contains("cgroup"));
        let with = Attribution {
            cgroup: Some(CgroupOf {
                task: "dd/7".into(),
                path: "/lxc.payload.web".into(),
                container: Some(Container {
                    runtime: "lxc".into(),
                    id: "web".into(),
                    pod: None,
                }),
                source: "s".into(),
            }),
            ..a
        };
        let back: Attribution = serde_json::from_str(&serde_json::to_string(&with).unwrap()).unwrap();
        assert_eq!(back, with);
    }
}
