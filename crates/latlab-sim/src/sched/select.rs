//! Where a woken or new fair task goes (Linux 6.18 kernel/sched/fair.c:
//! `select_task_rq_fair`, `wake_affine`, `wake_affine_idle`, `wake_affine_weight`,
//! `select_idle_sibling`, `select_idle_core`, `select_idle_smt`, `select_idle_cpu`,
//! `sched_balance_find_dst_cpu`).
//!
//! A wakeup (WF_TTWU) from CPU `this` of a task that last ran on `prev`: if `this` may run
//! it and a domain of `this` spans `prev` (SD_WAKE_AFFINE is on every level), `wake_affine`
//! chooses between them (`this` if idle and sharing `prev`'s cache while `prev` is busy,
//! `prev` if idle, else by load); then `select_idle_sibling` looks near that target: the
//! target if idle, `prev` if idle and cache-sharing, an idle SMT sibling of `prev`, an idle
//! core of the target's LLC, an idle CPU of it, else the target. A new task (SD_BALANCE_FORK)
//! goes to the idlest CPU: an idle core's CPU, else an idle CPU, else the least loaded,
//! searched from the forking CPU.
//!
//! Approximated: load is runnable tasks (`nr_running`) where Linux uses PELT averages
//! (`cpu_load`, `task_h_load`); no wakeup is sync (WF_SYNC) or wide (`wake_wide`); the idle
//! scan is not cut short by SIS_UTIL; `recent_used_cpu` and the per-CPU-kthread stacking
//! case are not modelled; `has_idle_cores` is computed exactly instead of the cached hint.

use super::smp::Rqs;
use super::topology::Level;
use crate::kernel::task::TaskId;

/// `select_task_rq_fair` for task `p` last on `prev`, woken (or forked, `fork`) on `this`.
pub fn select_task_rq_fair(v: &impl Rqs, p: TaskId, prev: usize, this: usize, fork: bool) -> usize {
    if fork {
        return find_idlest_cpu(v, p, this);
    }
    let mut target = prev;
    // want_affine (`!wake_wide(p) && cpumask_test_cpu(cpu, p->cpus_ptr)`): the lowest
    // domain of `this` spanning `prev`.
    if this != prev && v.allowed(p, this) {
        if let Some(d) = v.topo().domains[this].iter().find(|d| d.span.contains(prev)) {
            target = wake_affine(v, this, prev, imbalance_pct(d.level));
        }
    }
    select_idle_sibling(v, p, prev, target)
}

/// `sd->imbalance_pct` (`sd_init`): 110 between SMT siblings, 117 above.
pub fn imbalance_pct(l: Level) -> usize {
    if l == Level::Smt {
        110
    } else {
        117
    }
}

/// `wake_affine` with WA_IDLE and WA_WEIGHT (sync never).
fn wake_affine(v: &impl Rqs, this: usize, prev: usize, pct: usize) -> usize {
    // wake_affine_idle.
    if v.idle(this) && v.topo().share_cache(this, prev) {
        return if v.idle(prev) { prev } else { this };
    }
    if v.idle(prev) {
        return prev;
    }
    // wake_affine_weight: `this_eff_load = load(this) + task_load` times 100 against
    // `prev_eff_load = load(prev) - task_load` times `100 + (imbalance_pct - 100) / 2` (the
    // sleeping task's load is not on `prev`'s count here).
    let this_eff = (v.nr(this) + 1) * 100;
    let prev_eff = v.nr(prev) * (100 + (pct - 100) / 2);
    if this_eff < prev_eff {
        this
    } else {
        prev
    }
}

/// `select_idle_sibling(p, prev, target)`.
fn select_idle_sibling(v: &impl Rqs, p: TaskId, prev: usize, target: usize) -> usize {
    let topo = v.topo();
    let ok = |c: usize| v.allowed(p, c) && v.idle(c);
    if ok(target) {
        return target;
    }
    if prev != target && topo.share_cache(prev, target) && ok(prev) {
        return prev;
    }
    let llc = topo.llc[target];
    if llc.len() <= 1 {
        return target;
    }
    let mut has_idle_core = false;
    if topo.smt_present {
        has_idle_core = llc.iter().any(|c| idle_core(v, p, c));
        // select_idle_smt: an idle sibling of `prev`.
        if !has_idle_core && topo.share_cache(prev, target) {
            if let Some(c) = topo.smt[prev].iter().find(|&c| c != prev && llc.contains(c) && ok(c)) {
                return c;
            }
        }
    }
    let start = (target + 1) % topo.ncpus();
    // select_idle_cpu: with an idle core somewhere, a whole idle core (select_idle_core);
    // else the first idle CPU, from the target's next.
    if has_idle_core {
        if let Some(c) = llc.iter_wrap(start).find(|&c| idle_core(v, p, c)) {
            return c;
        }
    }
    let idle = llc.and(&v.idle_cpus()).iter_wrap(start).find(|&c| v.allowed(p, c));
    idle.unwrap_or(target)
}

/// Are CPU `c` and all its SMT siblings idle, `c` allowed to `p`?
fn idle_core(v: &impl Rqs, p: TaskId, c: usize) -> bool {
    v.allowed(p, c) && v.topo().smt[c].iter().all(|s| v.idle(s))
}

/// `sched_balance_find_dst_cpu` over the top domain, simplified: a CPU of an idle core,
/// else an idle CPU, else the one with the fewest runnable tasks, the first found from
/// `this` (`find_idlest_group_cpu` starts at `this_cpu`).
fn find_idlest_cpu(v: &impl Rqs, p: TaskId, this: usize) -> usize {
    let n = v.topo().ncpus();
    let all = (0..n).map(|i| (this + i) % n).filter(|&c| v.allowed(p, c));
    let rank = |c: usize| {
        if idle_core(v, p, c) {
            (0, 0)
        } else if v.idle(c) {
            (1, 0)
        } else {
            (2, v.nr(c))
        }
    };
    all.min_by_key(|&c| rank(c)).unwrap_or(this)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::topology::{CpuSet, Topology};

    /// A view of `n` CPUs: `busy[c]` tasks runnable on each, all running one if any.
    struct View {
        topo: Topology,
        nr: Vec<usize>,
        allowed: Option<CpuSet>,
    }

    impl Rqs for View {
        fn topo(&self) -> &Topology {
            &self.topo
        }
        fn curr(&self, c: usize) -> TaskId {
            if self.nr[c] > 0 {
                100 + c
            } else {
                0
            }
        }
        fn nr(&self, c: usize) -> usize {
            self.nr[c]
        }
        fn nr_fair(&self, c: usize) -> usize {
            self.nr[c]
        }
        fn rt_top(&self, _c: usize) -> Option<u32> {
            None
        }
        fn allowed(&self, _t: TaskId, c: usize) -> bool {
            self.allowed.is_none_or(|s| s.contains(c))
        }
        fn nr_allowed(&self, _t: TaskId) -> usize {
            self.allowed.map_or(self.nr.len(), |s| s.len())
        }
    }

    fn view(nr: &[usize], sibling_speed: f64) -> View {
        let m = crate::machine::MachineProfile {
            cpus: nr.len() as u32,
            sibling_speed,
            ..crate::cpu::tests::machine()
        };
        View {
            topo: Topology::of(&m),
            nr: nr.to_vec(),
            allowed: None,
        }
    }

    #[test]
    fn an_idle_prev_keeps_its_task() {
        let v = view(&[1, 0, 0, 0], 1.0);
        assert_eq!(select_task_rq_fair(&v, 1, 2, 0, false), 2);
    }

    #[test]
    fn a_busy_prev_sends_the_task_to_an_idle_cpu_of_the_llc() {
        // Waker on 0, prev 1 busy, 2 idle: wake_affine keeps prev (this is busy), then the
        // LLC scan from prev's next finds 2.
        let v = view(&[1, 1, 0, 1], 1.0);
        assert_eq!(select_task_rq_fair(&v, 1, 1, 0, false), 2);
        // Everything busy alike: stays on prev.
        let v = view(&[1, 1, 1, 1], 1.0);
        assert_eq!(select_task_rq_fair(&v, 1, 1, 0, false), 1);
        // prev has a task waiting, the waker's CPU none: wake_affine_weight moves it there.
        let v = view(&[1, 2, 1, 1], 1.0);
        assert_eq!(select_task_rq_fair(&v, 1, 1, 0, false), 0);
    }

    #[test]
    fn an_idle_core_is_preferred_to_an_idle_sibling() {
        // Cores (0,1) (2,3) (4,5): 1 idle beside busy 0; core (4,5) wholly idle.
        let v = view(&[1, 0, 1, 0, 0, 0], 0.5);
        assert_eq!(select_task_rq_fair(&v, 1, 2, 2, false), 4);
        // No idle core: prev's idle sibling.
        let v = view(&[1, 0, 1, 0, 1, 1], 0.5);
        assert_eq!(select_task_rq_fair(&v, 1, 2, 2, false), 3);
    }

    #[test]
    fn affinity_limits_the_choice() {
        let mut v = view(&[1, 1, 0, 0], 1.0);
        let mut s = CpuSet::default();
        s.insert(1);
        s.insert(3);
        v.allowed = Some(s);
        assert_eq!(select_task_rq_fair(&v, 1, 1, 0, false), 3);
        assert_eq!(select_task_rq_fair(&v, 1, 0, 0, true), 3);
    }

    #[test]
    fn a_fork_goes_to_the_idlest_cpu() {
        let v = view(&[2, 1, 3, 1], 1.0);
        assert_eq!(select_task_rq_fair(&v, 1, 0, 2, true), 3);
        let v = view(&[1, 1, 0, 1], 1.0);
        assert_eq!(select_task_rq_fair(&v, 1, 0, 0, true), 2);
    }
}
