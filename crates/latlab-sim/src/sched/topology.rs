//! The machine's CPUs as the scheduler's domains see them (Linux 6.18
//! kernel/sched/topology.c: `sched_init_domains`, `build_sched_domains`, `sd_init`,
//! `sd_degenerate`; `default_topology[]`: SMT, CLS, MC, PKG, then `sched_init_numa`'s NUMA
//! levels).
//!
//! Each CPU gets its domains, lowest first: SMT (its core's hardware threads), MC (the CPUs
//! sharing its last-level cache, `cpu_coregroup_mask`), PKG (its NUMA node) and NUMA (every
//! CPU). A level whose span equals the one below is dropped, as `sd_degenerate` and
//! `sd_parent_degenerate` drop it. Built from `[host.topology]` when the machine file has it
//! (`smt_siblings`, the widest cache's `shared_cpus`, `numa_nodes`); otherwise from `cpus`
//! and `sibling_speed`: Hyper-Threading pairs (CPUs 2k and 2k+1) when `sibling_speed < 1`,
//! one shared cache and one node. Not modelled: CLS (cluster) domains, NUMA distances (one
//! NUMA level over every node), asymmetric CPU capacity.
//!
//! Balance intervals follow `sd_init`: `balance_interval = min_interval = sd_weight` ms,
//! times `busy_factor` (16) on a busy CPU, clamped by `get_sd_balance_interval` to 1 jiffy ..
//! `max_load_balance_interval` (`HZ * num_online_cpus() / 10` jiffies).

use crate::machine::MachineProfile;
use latlab_core::Nanos;

pub use crate::kernel::cpumask::{CpuSet, MAX_CPUS};

/// A scheduling domain level (`struct sched_domain_topology_level`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// Hardware threads of one core (SD_SHARE_CPUCAPACITY).
    Smt,
    /// The CPUs of one last-level cache (SD_SHARE_LLC).
    Mc,
    /// One NUMA node's CPUs.
    Pkg,
    /// Every node (SD_NUMA).
    Numa,
}

impl Level {
    pub fn name(self) -> &'static str {
        match self {
            Level::Smt => "SMT",
            Level::Mc => "MC",
            Level::Pkg => "PKG",
            Level::Numa => "NUMA",
        }
    }
}

/// One domain of one CPU.
#[derive(Clone, Copy, Debug)]
pub struct Domain {
    pub level: Level,
    pub span: CpuSet,
}

impl Domain {
    /// `get_sd_balance_interval(sd, cpu_busy)` at `hz`, in ns: `sd_weight` ms (`sd_init`'s
    /// `balance_interval`), times `busy_factor` = 16 while busy, clamped to 1 jiffy ..
    /// `max_load_balance_interval`.
    pub fn interval(&self, busy: bool, hz: u32, ncpus: usize) -> Nanos {
        let ms = self.span.len() as Nanos * if busy { 16 } else { 1 };
        let jiffy = 1_000_000_000 / Nanos::from(hz.max(1));
        let max = jiffy * (Nanos::from(hz) * ncpus as Nanos / 10).max(1);
        (ms * 1_000_000).clamp(jiffy, max)
    }
}

/// The CPUs, their cores, caches and nodes, and each CPU's domains.
#[derive(Clone, Debug)]
pub struct Topology {
    /// Each CPU's domains, lowest first (none on one CPU).
    pub domains: Vec<Vec<Domain>>,
    /// Each CPU's SMT siblings, itself included (`cpu_smt_mask`).
    pub smt: Vec<CpuSet>,
    /// Each CPU's last-level-cache CPUs (`sd_llc`'s span; every CPU when no MC level).
    pub llc: Vec<CpuSet>,
    /// Does some core have more than one hardware thread (`sched_smt_present`)?
    pub smt_present: bool,
}

impl Topology {
    /// The topology of machine `m` on its `m.cpus` CPUs.
    pub fn of(m: &MachineProfile) -> Self {
        let n = (m.cpus.max(1) as usize).min(MAX_CPUS);
        let host = m.host.as_ref().and_then(|h| h.topology.as_ref());
        let groups = |lists: &[Vec<u32>]| crate::machine::cpu_groups(lists, n);
        let all = vec![0; n];
        let core = m.cores(n);
        let (llc, node) = match host {
            Some(t) => {
                // The last-level cache: the highest level's caches (their `shared_cpus`).
                let top = t.caches.iter().map(|c| c.level).max();
                let llcs: Vec<Vec<u32>> = t
                    .caches
                    .iter()
                    .filter(|c| Some(c.level) == top && c.kind != "instruction")
                    .map(|c| c.shared_cpus.clone())
                    .collect();
                let llc = if llcs.is_empty() { all.clone() } else { groups(&llcs) };
                let node = if t.numa_nodes.is_empty() {
                    all.clone()
                } else {
                    groups(&t.numa_nodes)
                };
                (llc, node)
            }
            None => (all.clone(), all),
        };
        let span_of = |ids: &[usize], c: usize| {
            let mut s = CpuSet::default();
            (0..n).filter(|&o| ids[o] == ids[c]).for_each(|o| s.insert(o));
            s
        };
        let mut domains = Vec::with_capacity(n);
        let (mut smt, mut llcs) = (Vec::with_capacity(n), Vec::with_capacity(n));
        for c in 0..n {
            let mut ds: Vec<Domain> = Vec::new();
            let mut below = CpuSet::default();
            below.insert(c);
            for (level, span) in [
                (Level::Smt, span_of(&core, c)),
                (Level::Mc, span_of(&llc, c).and(&span_of(&node, c))),
                (Level::Pkg, span_of(&node, c)),
                (Level::Numa, CpuSet::first(n)),
            ] {
                // A level no wider than the one below degenerates (`sd_degenerate`).
                if span.len() > below.len() {
                    ds.push(Domain { level, span });
                    below = span;
                }
            }
            smt.push(span_of(&core, c));
            llcs.push(
                ds.iter()
                    .rev()
                    .find(|d| d.level <= Level::Mc)
                    .map_or(CpuSet::first(n), |d| d.span),
            );
            domains.push(ds);
        }
        let smt_present = smt.iter().any(|s| s.len() > 1);
        Topology {
            domains,
            smt,
            llc: llcs,
            smt_present,
        }
    }

    pub fn ncpus(&self) -> usize {
        self.domains.len()
    }

    /// `cpus_share_cache(a, b)`.
    pub fn share_cache(&self, a: usize, b: usize) -> bool {
        self.llc[a].contains(b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::{Cache, HostFacts, Topology as HostTopology};

    fn machine(cpus: u32, sibling_speed: f64) -> MachineProfile {
        MachineProfile {
            cpus,
            sibling_speed,
            ..crate::cpu::tests::machine()
        }
    }

    #[test]
    fn without_host_facts_siblings_pair_up_under_one_cache() {
        let t = Topology::of(&machine(8, 0.6));
        let levels: Vec<Level> = t.domains[3].iter().map(|d| d.level).collect();
        assert_eq!(levels, [Level::Smt, Level::Mc]);
        assert_eq!(t.domains[3][0].span.iter().collect::<Vec<_>>(), [2, 3]);
        assert_eq!(t.domains[3][1].span.len(), 8);
        // Full-speed CPUs: no SMT level, one LLC.
        let t = Topology::of(&machine(4, 1.0));
        assert_eq!(t.domains[0].len(), 1);
        assert_eq!(t.domains[0][0].level, Level::Mc);
        assert!(!t.smt_present);
        // One CPU: no domain at all.
        assert!(Topology::of(&machine(1, 1.0)).domains[0].is_empty());
    }

    #[test]
    fn host_topology_gives_smt_llc_and_numa_levels() {
        // Two nodes of two LLCs of two 2-thread cores: 16 CPUs.
        let mut m = machine(16, 1.0);
        let smt = (0..8).map(|c| vec![c, c + 8]).collect();
        let caches = (0..4)
            .map(|l| Cache {
                level: 3,
                kind: "unified".into(),
                size_kib: 8192,
                shared_cpus: vec![2 * l, 2 * l + 1, 2 * l + 8, 2 * l + 9],
            })
            .collect();
        m.host = Some(HostFacts {
            topology: Some(HostTopology {
                cpus_online: 16,
                smt_siblings: smt,
                numa_nodes: vec![vec![0, 1, 2, 3, 8, 9, 10, 11], vec![4, 5, 6, 7, 12, 13, 14, 15]],
                caches,
            }),
            ..HostFacts::default()
        });
        let t = Topology::of(&m);
        let d = &t.domains[1];
        let spans: Vec<(Level, Vec<usize>)> = d.iter().map(|d| (d.level, d.span.iter().collect())).collect();
        assert_eq!(
            spans,
            [
                (Level::Smt, vec![1, 9]),
                (Level::Mc, vec![0, 1, 8, 9]),
                (Level::Pkg, vec![0, 1, 2, 3, 8, 9, 10, 11]),
                (Level::Numa, (0..16).collect()),
            ]
        );
        assert!(t.share_cache(1, 8) && !t.share_cache(1, 2));
    }

    #[test]
    fn balance_intervals_follow_sd_init() {
        let t = Topology::of(&machine(256, 1.0));
        let d = t.domains[0][0];
        // 256 ms idle, 16 x that busy capped at HZ * 256 / 10 jiffies.
        assert_eq!(d.interval(false, 1000, 256), 256_000_000);
        assert_eq!(d.interval(true, 1000, 256), 4_096_000_000);
        // Two CPUs at HZ 100: 2 ms x 16, within 1 .. 20 jiffies.
        assert_eq!(
            Topology::of(&machine(2, 1.0)).domains[0][0].interval(true, 100, 2),
            32_000_000
        );
        let wrap: Vec<usize> = CpuSet::first(5).iter_wrap(3).collect();
        assert_eq!(wrap, [3, 4, 0, 1, 2]);
    }
}
