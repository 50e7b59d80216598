//! The RT class across per-CPU runqueues (Linux 6.18 kernel/sched/rt.c:
//! `select_task_rq_rt`, `find_lowest_rq`, `push_rt_task` / `push_rt_tasks`,
//! `pull_rt_task`, `task_woken_rt`, `balance_rt`; kernel/sched/cpupri.c `cpupri_find`).
//!
//! - cpupri: a CPU's priority is the highest RT priority queued on it, or CPUPRI_NORMAL
//!   when none (idle and fair-running CPUs are one class since CPUPRI_IDLE went, 5.11).
//!   `find_lowest_rq`: the CPUs of the lowest priority below the task's that it may run on;
//!   its own CPU if among them, else the first of them in its CPU's lowest domain that has
//!   one, searched from its CPU (Linux takes `this_cpu` if there, then
//!   `cpumask_any_and_distribute`).
//! - A woken RT task stays on its CPU unless an RT task of equal or higher priority runs
//!   there; then it goes to `find_lowest_rq`'s CPU if it outranks that CPU.
//! - Push: after each pick, and when a woken RT task does not preempt the RT task on its
//!   CPU, the highest waiting RT task that may run elsewhere moves to `find_lowest_rq`'s CPU
//!   if it outranks it, and that CPU is sent a reschedule IPI; repeated while one moves.
//! - Pull: when a CPU's RT priority drops (an RT task stops running there), it takes from
//!   each CPU with RT tasks waiting the highest one that may run here and outranks what is
//!   queued here, unless it outranks that CPU's running task (it runs there soon).
//!
//! Not modelled: RT throttling (`sched_rt_runtime_us`), the rto IPI chain (RT_PUSH_IPI:
//! the overloaded CPUs are searched directly), deadline tasks, capacity fitness.

use super::rt::FairClass;
use super::smp::{is_rt, PerCpu, Rqs};
use crate::kernel::task::{Task, TaskId};
use crate::machine::MachineProfile;
use latlab_core::Nanos;

/// Instructions of looking at one runqueue in `pull_rt_task` (`rt_overloaded` mask walk,
/// `pick_highest_pushable_task`): about 40, one cache miss. Arithmetic from 6.18
/// kernel/sched/rt.c.
const PULL_CPU_INSTR: f64 = 40.0;
const PULL_CPU_MISSES: f64 = 1.0;

/// cpupri of CPU `c`: 0 (CPUPRI_NORMAL) without RT tasks, else 1 + its highest RT priority.
fn cpupri(v: &impl Rqs, c: usize) -> u32 {
    v.rt_top(c).map_or(0, |p| p + 1)
}

/// `find_lowest_rq` for RT task `p` whose CPU is `cpu`.
pub fn find_lowest_rq(v: &impl Rqs, tasks: &[Task], p: TaskId, cpu: usize) -> Option<usize> {
    let pp = tasks[p].rt_priority + 1;
    let n = v.topo().ncpus();
    let lowest = (0..n)
        .filter(|&c| v.allowed(p, c))
        .map(|c| cpupri(v, c))
        .filter(|&q| q < pp)
        .min()?;
    let in_mask = |c: usize| v.allowed(p, c) && cpupri(v, c) == lowest;
    if in_mask(cpu) {
        return Some(cpu);
    }
    v.topo().domains[cpu]
        .iter()
        .find_map(|d| d.span.iter_wrap(cpu).find(|&c| in_mask(c)))
        .or_else(|| (0..n).find(|&c| in_mask(c)))
}

/// `select_task_rq_rt` for RT task `p` last on `cpu`.
pub fn select_task_rq_rt(v: &impl Rqs, tasks: &[Task], p: TaskId, cpu: usize) -> usize {
    let curr = v.curr(cpu);
    let test =
        curr != 0 && is_rt(tasks, curr) && (v.nr_allowed(curr) < 2 || tasks[curr].rt_priority >= tasks[p].rt_priority);
    if test {
        if let Some(t) = find_lowest_rq(v, tasks, p, cpu) {
            if tasks[p].rt_priority + 1 > cpupri(v, t) {
                return t;
            }
        }
    }
    cpu
}

/// `push_rt_tasks` from CPU `cpu`.
pub fn push_rt_tasks<F: FairClass>(s: &mut PerCpu<F>, tasks: &[Task], cpu: usize, now: Nanos) {
    for _ in 0..s.rqs[cpu].nr_rt() {
        let running = s.curr(cpu);
        let sv = &*s;
        // `pick_next_pushable_task`: a task that can run elsewhere (`nr_cpus_allowed > 1`,
        // migration not disabled).
        let Some(t) = sv.rqs[cpu].pushable(running, &mut |t| sv.nr_allowed(t) > 1 && !tasks[t].migration_disabled)
        else {
            return;
        };
        // "the task should preempt the current one": reschedule here instead.
        if running == 0 || !is_rt(tasks, running) || tasks[t].rt_priority > tasks[running].rt_priority {
            s.kicks.push(cpu);
            return;
        }
        let Some(dst) = find_lowest_rq(s, tasks, t, cpu) else {
            return;
        };
        if dst == cpu || tasks[t].rt_priority < cpupri(s, dst) {
            return;
        }
        s.move_task(tasks, t, dst, true, now);
        s.kicks.push(dst);
    }
}

/// `pull_rt_task` to CPU `cpu`: the time it took.
pub fn pull_rt_task<F: FairClass>(
    s: &mut PerCpu<F>,
    tasks: &[Task],
    cpu: usize,
    m: &MachineProfile,
    now: Nanos,
) -> Nanos {
    let n = s.topo.ncpus();
    let mut cost = 0;
    for src in (1..n).map(|i| (cpu + i) % n) {
        // rto_mask: CPUs with an RT task waiting.
        if s.rqs[src].nr_rt() < 2 {
            continue;
        }
        cost += m.cost(PULL_CPU_INSTR, PULL_CPU_MISSES);
        let running = s.curr(src);
        let sv = &*s;
        let Some(t) = sv.rqs[src].pushable(running, &mut |t| sv.allowed(t, cpu) && !tasks[t].migration_disabled) else {
            continue;
        };
        let prio = tasks[t].rt_priority;
        if s.rt_top(cpu).is_some_and(|top| top >= prio) {
            continue;
        }
        // `if (p->prio < src_rq->curr->prio) goto skip;`: it preempts there soon.
        if running == 0 || !is_rt(tasks, running) || prio > tasks[running].rt_priority {
            continue;
        }
        s.move_task(tasks, t, cpu, true, now);
    }
    cost
}
