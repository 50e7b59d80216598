//! Fair-class load balancing between per-CPU runqueues (Linux 6.18 kernel/sched/fair.c:
//! `sched_balance_newidle`, `sched_balance_domains`, `sched_balance_rq`,
//! `should_we_balance`, `sched_balance_find_src_group` / `sched_balance_find_src_rq`,
//! `detach_tasks`, `can_migrate_task`, `task_hot`; kernel/sched/topology.c `sd_init`).
//!
//! - Newly idle: a CPU with nothing left to run tries its domains lowest first and stops at
//!   the first that gives it a task (`sched_balance_newidle`), if some runqueue has a task
//!   waiting (`rd->overloaded`).
//! - Periodic: at each tick, each domain whose interval has passed ([`Domain::interval`]:
//!   `sd_weight` ms, x16 while busy) is balanced by one CPU of the local group: its first
//!   idle CPU, or its first CPU when none is idle (`should_we_balance`).
//! - A balance pulls from the runqueue of the domain (outside the local group) with the
//!   most runnable tasks, half the difference (at least one when this CPU is idle), only if
//!   that runqueue has a fair task waiting and, between busy CPUs, its count exceeds this
//!   one's by `imbalance_pct` (110 SMT, 117 above) and by two tasks. It takes waiting fair
//!   tasks from the end of that queue's order, allowed here and not cache-hot: ran within
//!   `sysctl_sched_migration_cost` (500 us) — never hot between SMT siblings, and hot tasks
//!   go after `cache_nice_tries` failed balances (0 SMT, 1 MC/PKG, 2 NUMA).
//!
//! Left out: group statistics (`update_sg_lb_stats`' group types, capacities and PELT
//! loads: runqueues are compared one by one by task count), `avg_idle` and
//! `max_newidle_lb_cost` cutting a newly-idle balance short, active balance (stopping a
//! running task to move it), NUMA balancing and misfit tasks, the NOHZ idle balancer (every
//! CPU's tick runs here, idle or not). A periodic balance's own time is not charged (it runs
//! in SCHED_SOFTIRQ); a newly idle one's is, in schedule().
//!
//! [`Domain::interval`]: super::topology::Domain::interval

use super::rt::FairClass;
use super::select::imbalance_pct;
use super::smp::{PerCpu, Rqs};
use super::topology::{CpuSet, Level};
use crate::kernel::task::{Task, TaskId};
use crate::machine::MachineProfile;
use latlab_core::Nanos;
use smallvec::SmallVec;

/// `sysctl_sched_migration_cost`: 500 us (kernel/sched/fair.c, 6.18 default).
pub const MIGRATION_COST_NS: Nanos = 500_000;

/// Instructions per runqueue a balance looks at (`update_sg_lb_stats` reading its counts
/// and load, `sched_balance_find_src_rq`): about 40, with one cache miss (the remote
/// runqueue's line). Arithmetic from 6.18 kernel/sched/fair.c.
const LB_CPU_INSTR: f64 = 40.0;
const LB_CPU_MISSES: f64 = 1.0;
/// Instructions of moving one task (`detach_task` and `attach_task`: dequeue, `set_task_cpu`,
/// enqueue under both runqueue locks): about 300, with 4 misses (the task's entity, the
/// remote runqueue's lock and tree). Arithmetic from 6.18 kernel/sched/fair.c.
const LB_MOVE_INSTR: f64 = 300.0;
const LB_MOVE_MISSES: f64 = 4.0;

/// `sd->cache_nice_tries` (`sd_init`).
fn cache_nice_tries(l: Level) -> u32 {
    match l {
        Level::Smt => 0,
        Level::Mc | Level::Pkg => 1,
        Level::Numa => 2,
    }
}

/// Why a CPU balances (`enum cpu_idle_type`: CPU_NEWLY_IDLE, CPU_IDLE, CPU_NOT_IDLE).
#[derive(Clone, Copy, PartialEq, Eq)]
enum CpuIdle {
    Newly,
    Idle,
    Not,
}

/// `sched_balance_newidle` on CPU `cpu`: the time it took (charged to schedule()).
pub fn newidle<F: FairClass>(s: &mut PerCpu<F>, tasks: &[Task], cpu: usize, m: &MachineProfile, now: Nanos) -> Nanos {
    // `if (!READ_ONCE(this_rq->rd->overloaded)) goto out;`
    let n = s.topo.ncpus();
    if !(0..n).any(|c| s.nr_fair(c) > 1) {
        return 0;
    }
    let mut cost = 0;
    for di in 0..s.topo.domains[cpu].len() {
        let span = s.topo.domains[cpu][di].span.len() as f64;
        cost += m.cost(LB_CPU_INSTR * span, LB_CPU_MISSES * span);
        let moved = balance_rq(s, tasks, cpu, di, CpuIdle::Newly, now).len();
        if moved > 0 {
            return cost + moved as Nanos * m.cost(LB_MOVE_INSTR, LB_MOVE_MISSES);
        }
    }
    cost
}

/// `sched_balance_domains` of CPU `cpu` at its tick: true when it pulled a task that
/// should preempt what it runs.
pub fn periodic<F: FairClass>(s: &mut PerCpu<F>, tasks: &[Task], cpu: usize, now: Nanos) -> bool {
    let n = s.topo.ncpus();
    let mut resched = false;
    for di in 0..s.topo.domains[cpu].len() {
        if now < s.next_balance[cpu][di] {
            continue;
        }
        let idle = if s.idle(cpu) { CpuIdle::Idle } else { CpuIdle::Not };
        let d = s.topo.domains[cpu][di];
        s.next_balance[cpu][di] = now + d.interval(idle == CpuIdle::Not, s.hz, n);
        if !should_we_balance(s, cpu, di, idle) {
            continue;
        }
        for t in balance_rq(s, tasks, cpu, di, idle, now) {
            // attach_task -> wakeup_preempt (an idle CPU: always).
            resched |= s.attached(tasks, t, cpu, now);
        }
    }
    resched
}

/// The local group of CPU `cpu` in its domain `di`: the domain below's span (`sd->groups`).
fn local_group<F>(s: &PerCpu<F>, cpu: usize, di: usize) -> CpuSet {
    match di {
        0 => {
            let mut g = CpuSet::default();
            g.insert(cpu);
            g
        }
        _ => s.topo.domains[cpu][di - 1].span,
    }
}

/// `should_we_balance`: a newly idle CPU always; else the local group's first idle CPU, or
/// its first CPU when none is idle.
fn should_we_balance<F: FairClass>(s: &PerCpu<F>, cpu: usize, di: usize, idle: CpuIdle) -> bool {
    if idle == CpuIdle::Newly {
        return true;
    }
    let g = local_group(s, cpu, di);
    let first_idle = g.iter().find(|&c| s.idle(c));
    let first = g.iter().next();
    first_idle.or(first) == Some(cpu)
}

/// `sched_balance_rq` of CPU `cpu` over its domain `di`, simplified (module comment): the
/// tasks it moved here.
fn balance_rq<F: FairClass>(
    s: &mut PerCpu<F>,
    tasks: &[Task],
    cpu: usize,
    di: usize,
    idle: CpuIdle,
    now: Nanos,
) -> SmallVec<[TaskId; 2]> {
    let d = s.topo.domains[cpu][di];
    let local = local_group(s, cpu, di);
    let this_nr = s.nr(cpu);
    // The busiest runqueue outside the local group with a fair task waiting.
    let busiest = d
        .span
        .iter_wrap(cpu)
        .filter(|&c| !local.contains(c) && s.nr_fair(c) > 0 && s.nr(c) > 1)
        .max_by_key(|&c| (s.nr(c), std::cmp::Reverse(c)));
    let Some(src) = busiest else {
        return SmallVec::new();
    };
    let b = s.nr(src);
    let want = if idle == CpuIdle::Not {
        if b * 100 <= this_nr * imbalance_pct(d.level) || b < this_nr + 2 {
            return SmallVec::new();
        }
        (b - this_nr) / 2
    } else {
        ((b - this_nr) / 2).max(1)
    };
    let hot_ok = d.level == Level::Smt || s.balance_failed[cpu][di] > cache_nice_tries(d.level);
    let mut moved = SmallVec::new();
    while moved.len() < want {
        let running = s.curr(src);
        let sv = &*s;
        // can_migrate_task: allowed here, migration not disabled, not running, not cache-hot
        // (`task_hot`).
        let pick = sv.rqs[src].fair_queued(&mut |t| {
            t != running && sv.allowed(t, cpu) && !tasks[t].migration_disabled && (hot_ok || !sv.cache_hot(t, now))
        });
        let Some(t) = pick else { break };
        s.move_task(tasks, t, cpu, true, now);
        moved.push(t);
    }
    if idle != CpuIdle::Newly {
        s.balance_failed[cpu][di] = if moved.is_empty() {
            s.balance_failed[cpu][di] + 1
        } else {
            0
        };
    }
    moved
}
