//! Coarse spike attribution from /proc (`--explain`, `--trace-above US`).
//!
//! For a sample above the threshold the measuring thread diffs the CPU's /proc/stat steal time
//! and its /proc/interrupts column against the previous snapshot, and lists the tasks that
//! were runnable on that CPU (/proc/PID/stat). The window is "since the previous spike or the
//! start", not the latency window itself, and reading /proc perturbs the next few samples, so
//! the result says so in `note`. At most [`BUDGET`] samples per thread are attributed.

use latlab_core::attribution::{Attribution, TaskSlice};
use std::collections::BTreeMap;

/// Attributed samples per thread (each costs a few /proc reads).
pub const BUDGET: usize = 32;

#[derive(Clone, Debug, Default)]
struct Snap {
    steal_ns: u64,
    irqs: BTreeMap<String, u64>,
}

pub struct Explainer {
    cpu: usize,
    threshold_ns: u64,
    last: Snap,
    budget: usize,
    /// Only the steal delta: the scheduler tracepoints explain the rest.
    steal_only: bool,
}

impl Explainer {
    pub fn new(cpu: usize, threshold_ns: u64) -> Self {
        Explainer {
            cpu,
            threshold_ns,
            last: snap(cpu),
            budget: BUDGET,
            steal_only: false,
        }
    }

    /// Beside the tracepoints, which cannot see the hypervisor: only the steal delta.
    pub fn steal_only(cpu: usize, threshold_ns: u64) -> Self {
        Explainer {
            steal_only: true,
            ..Explainer::new(cpu, threshold_ns)
        }
    }

    /// Attribution for a kept sample of latency `lat` (empty below the threshold).
    pub fn attribute(&mut self, lat: u64) -> Attribution {
        if lat < self.threshold_ns || self.budget == 0 {
            return Attribution::default();
        }
        self.budget -= 1;
        if self.steal_only {
            let now = steal_ns(self.cpu).unwrap_or(0);
            let steal_ns = now.saturating_sub(self.last.steal_ns);
            self.last.steal_ns = now;
            return Attribution {
                steal_ns,
                ..Default::default()
            };
        }
        let now = snap(self.cpu);
        let mut irqs: Vec<(String, u64)> = now
            .irqs
            .iter()
            .filter_map(|(k, &v)| {
                let d = v.saturating_sub(*self.last.irqs.get(k).unwrap_or(&0));
                (d > 0).then(|| (k.clone(), d))
            })
            .collect();
        irqs.sort_by_key(|b| std::cmp::Reverse(b.1));
        irqs.truncate(8);
        let steal_ns = now.steal_ns.saturating_sub(self.last.steal_ns);
        self.last = now;
        Attribution {
            irqs,
            steal_ns,
            tasks: runnable_on(self.cpu),
            note: format!(
                "coarse (/proc): interrupts and steal are deltas on CPU {} since the previous spike or the \
                 start, not the latency window; tasks are those runnable on the CPU just after the wakeup \
                 (ns unknown, 0); no kernel function or stack: that needs the scheduler tracepoints and \
                 their stacktrace trigger, in tracefs (root)",
                self.cpu
            ),
            ..Default::default()
        }
    }
}

fn snap(cpu: usize) -> Snap {
    Snap {
        steal_ns: steal_ns(cpu).unwrap_or(0),
        irqs: interrupts(cpu),
    }
}

/// Steal time of `cpu` from /proc/stat (USER_HZ ticks, converted to ns).
pub(crate) fn steal_ns(cpu: usize) -> Option<u64> {
    let s = std::fs::read_to_string("/proc/stat").ok()?;
    let key = format!("cpu{cpu} ");
    let line = s.lines().find(|l| l.starts_with(&key))?;
    let steal: u64 = line.split_whitespace().nth(8)?.parse().ok()?;
    // SAFETY: sysconf has no memory-safety preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    Some(steal * 1_000_000_000 / hz)
}

/// Per-interrupt counts in `cpu`'s column of /proc/interrupts, keyed by name.
pub(crate) fn interrupts(cpu: usize) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    let Ok(s) = std::fs::read_to_string("/proc/interrupts") else {
        return m;
    };
    let mut lines = s.lines();
    let Some(head) = lines.next() else { return m };
    let Some(col) = head.split_whitespace().position(|c| c == format!("CPU{cpu}")) else {
        return m;
    };
    for l in lines {
        let mut it = l.split_whitespace();
        let Some(irq) = it.next() else { continue };
        let fields: Vec<&str> = it.collect();
        if let Some(v) = fields.get(col).and_then(|v| v.parse::<u64>().ok()) {
            let desc = fields.last().copied().unwrap_or("");
            let name = format!(
                "{}{}",
                irq.trim_end_matches(':'),
                if desc.is_empty() {
                    String::new()
                } else {
                    format!(" {desc}")
                }
            );
            m.insert(name, v);
        }
    }
    m
}

/// Tasks in state R whose last CPU is `cpu` (threads of all processes).
pub fn runnable_on(cpu: usize) -> Vec<TaskSlice> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir("/proc") else { return out };
    for e in rd.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            continue;
        };
        for t in tasks.flatten() {
            let Ok(stat) = std::fs::read_to_string(t.path().join("stat")) else {
                continue;
            };
            let (Some(l), Some(r)) = (stat.find('('), stat.rfind(')')) else {
                continue;
            };
            let comm = &stat[l + 1..r];
            let rest: Vec<&str> = stat[r + 1..].split_whitespace().collect();
            // rest[0] = state (field 3); processor is field 39 -> rest[36].
            if rest.first() == Some(&"R") && rest.get(36).and_then(|c| c.parse::<usize>().ok()) == Some(cpu) {
                let tid = t.file_name().to_str().and_then(|s| s.parse().ok()).unwrap_or(pid);
                out.push(TaskSlice {
                    comm: comm.to_string(),
                    pid: tid,
                    ns: 0,
                });
            }
        }
    }
    out
}
