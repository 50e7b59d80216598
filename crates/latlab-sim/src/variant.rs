//! Kernel variant: a set of switches, nothing else. Named variants (`2.4.18`,
//! `2.4.18+mini-ll`, ...) are files of these switches (`variants/*.toml`); two variants
//! differ only in the mechanisms the corresponding patch changes.

use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// Where a woken task can get the CPU from kernel code (kernel-facts.md, "Preemption models").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PreemptModel {
    /// Stock 2.4: need_resched honoured at return to user space and at explicit schedule()
    /// (blocking, and the rescheduling points listed in `points`).
    None,
    /// Robert Love's preempt patch / CONFIG_PREEMPT: also on IRQ return to kernel code and on
    /// the preempt_enable() (spin_unlock) that brings preempt_count to 0.
    Kernel,
}

/// Which scheduler class runs SCHED_OTHER tasks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SchedClass {
    /// Linux 2.4 `goodness()` with epochs (kernel/sched.c, 2.4.x).
    Goodness24,
    /// Ingo Molnar's O(1) scheduler: active/expired prio arrays with a bitmap, timeslices
    /// by nice level, the sleep-average interactivity bonus (kernel/sched.c, 2.6.11).
    O1,
}

/// A kernel variant.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Variant {
    /// Name (`2.4.18+mini-ll`).
    pub name: String,
    /// What the variant is, with the patch it stands for.
    pub description: String,
    /// Kernel version the variant is based on (`2.4.18-pre1`).
    pub base: String,
    /// Preemption model.
    pub preempt: PreemptModel,
    /// Rescheduling points and lock-breaks present in this kernel, by kernel function name
    /// (see `kernel::catalog::POINTS` for the list and what each one does).
    pub points: BTreeSet<String>,
    /// Timer interrupt rate, Hz.
    pub hz: u32,
    /// Scheduler class.
    pub sched: SchedClass,
    /// Swap-slot allocator (a `latlab_swap` allocator name).
    pub swap_allocator: String,
}

impl Variant {
    /// Does this kernel have rescheduling point `name`?
    pub fn has_point(&self, name: &str) -> bool {
        self.points.contains(name)
    }

    /// Check names against the catalog; returns the offending field and why.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        let known: Vec<&str> = crate::kernel::catalog::POINTS.iter().map(|p| p.name).collect();
        for p in &self.points {
            if !known.contains(&p.as_str()) {
                return Err((
                    "points",
                    format!("unknown rescheduling point `{p}`; valid: {}", known.join(", ")),
                ));
            }
        }
        if !(10..=10_000).contains(&self.hz) {
            return Err(("hz", format!("must be 10..=10000, got {}", self.hz)));
        }
        Ok(())
    }
}
