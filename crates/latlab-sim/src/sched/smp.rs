//! Per-CPU runqueues for the fair classes (CFS, EEVDF) under the RT class: each CPU has its
//! own [`WithRt`] queue, each task a `task_cpu` (Linux 6.18 kernel/sched/core.c:
//! `struct rq` per CPU, `set_task_cpu`, `try_to_wake_up` -> `select_task_rq`,
//! `__schedule` -> `pick_next_task`, `sched_balance_trigger` from `sched_tick`).
//!
//! - Wakeup and fork placement: [`super::select`] (`select_task_rq_fair`) and
//!   [`super::rt_smp`] (`select_task_rq_rt`, cpupri).
//! - A CPU about to go idle pulls fair work (`sched_balance_newidle`), a CPU whose RT
//!   priority drops pulls RT work (`pull_rt_task`), and after every pick a second RT task is
//!   pushed to a CPU of lower priority (`push_rt_tasks`): all in [`PerCpu::pick_on`].
//! - The tick balances each domain at its interval ([`super::balance`]).
//! - A move to another CPU that must preempt it is told by a reschedule IPI: the CPU loop
//!   delivers it ([`Scheduler::take_kick`]; its delay in cpu/smp.rs).
//!
//! The 2.4 (goodness) and O(1) schedulers keep one runqueue shared by every CPU
//! ([`Scheduler::pick_excluding`]); this module is not used for them.

use super::rt::{FairClass, WithRt};
use super::topology::{CpuSet, Topology};
use super::{balance, rt_smp, select, Placement, Scheduler};
use crate::kernel::task::{Policy, Task, TaskId};
use crate::machine::MachineProfile;
use latlab_core::Nanos;

/// What the placement and balancing code reads of the runqueues: a small per-CPU view.
pub trait Rqs {
    fn topo(&self) -> &Topology;
    /// The task CPU `c` runs (0: its idle task).
    fn curr(&self, c: usize) -> TaskId;
    /// Tasks runnable on CPU `c`'s queue, the running one included (`rq->nr_running`).
    fn nr(&self, c: usize) -> usize;
    /// Fair tasks of those (`rq->cfs.h_nr_running`).
    fn nr_fair(&self, c: usize) -> usize;
    /// The highest RT priority queued on `c` (`rq->rt.highest_prio.curr`).
    fn rt_top(&self, c: usize) -> Option<u32>;
    /// May task `t` run on CPU `c` (`p->cpus_ptr`)?
    fn allowed(&self, t: TaskId, c: usize) -> bool;
    /// How many CPUs `t` may run on (`p->nr_cpus_allowed`).
    fn nr_allowed(&self, t: TaskId) -> usize;
    /// `available_idle_cpu(c)`: running its idle task with nothing queued (a CPU a wakeup
    /// was just sent to is not).
    fn idle(&self, c: usize) -> bool {
        self.curr(c) == 0 && self.nr(c) == 0
    }
    /// The CPUs [`Rqs::idle`] holds for.
    fn idle_cpus(&self) -> CpuSet {
        let mut s = CpuSet::default();
        (0..self.topo().ncpus())
            .filter(|&c| self.idle(c))
            .for_each(|c| s.insert(c));
        s
    }
}

/// Is `t` of the RT class?
pub(crate) fn is_rt(tasks: &[Task], t: TaskId) -> bool {
    tasks[t].policy != Policy::Other
}

/// Per-CPU runqueues of fair class `F` under the RT class.
pub struct PerCpu<F> {
    pub(crate) rqs: Vec<WithRt<F>>,
    pub(crate) topo: Topology,
    pub(crate) hz: u32,
    /// `task_cpu(p)`, by task.
    task_cpu: Vec<u8>,
    /// Each CPU's running task (0: idle).
    curr: Vec<TaskId>,
    /// Each task's `cpus_allowed`, `None` for every CPU.
    affinity: Vec<Option<CpuSet>>,
    /// When each task last stopped running (`se.exec_start` as `task_hot` reads it; `None`:
    /// never ran, as a new task's 0 `exec_start` is never hot).
    last_ran: Vec<Option<Nanos>>,
    /// Per CPU and domain: when it balances next (`sd->last_balance + interval`) and how
    /// many balances in a row found an imbalance and moved nothing (`nr_balance_failed`).
    pub(crate) next_balance: Vec<Vec<Nanos>>,
    pub(crate) balance_failed: Vec<Vec<u32>>,
    /// CPUs to be sent a reschedule IPI.
    pub(crate) kicks: Vec<usize>,
    /// The idle CPUs ([`Rqs::idle`]), kept as their queues and current tasks change, so
    /// that a wakeup's search for one does not test every CPU.
    idle: CpuSet,
}

impl<F: FairClass> PerCpu<F> {
    /// One queue per CPU of machine `m` (`new_rq()` builds each), at `hz`.
    pub fn new(m: &MachineProfile, hz: u32, mut new_rq: impl FnMut() -> WithRt<F>) -> Self {
        let topo = Topology::of(m);
        let n = topo.ncpus();
        PerCpu {
            rqs: (0..n).map(|_| new_rq()).collect(),
            next_balance: topo.domains.iter().map(|d| vec![0; d.len()]).collect(),
            balance_failed: topo.domains.iter().map(|d| vec![0; d.len()]).collect(),
            topo,
            hz,
            task_cpu: Vec::new(),
            curr: vec![0; n],
            affinity: Vec::new(),
            last_ran: Vec::new(),
            kicks: Vec::new(),
            idle: CpuSet::first(n),
        }
    }

    /// CPU `c`'s queue or current task changed: is it idle now?
    fn sync_idle(&mut self, c: usize) {
        if self.curr[c] == 0 && self.rqs[c].nr_running() == 0 {
            self.idle.insert(c);
        } else {
            self.idle.remove(c);
        }
    }

    fn grow(&mut self, t: TaskId) {
        if self.task_cpu.len() <= t {
            self.task_cpu.resize(t + 1, 0);
            self.affinity.resize(t + 1, None);
            self.last_ran.resize(t + 1, None);
        }
    }

    /// `task_cpu(t)`.
    pub fn cpu_of(&self, t: TaskId) -> usize {
        usize::from(self.task_cpu.get(t).copied().unwrap_or(0))
    }

    /// Move `t` (not running; queued on its CPU if `queued`) to CPU `to`'s queue.
    pub(crate) fn move_task(&mut self, tasks: &[Task], t: TaskId, to: usize, queued: bool, now: Nanos) {
        let from = self.cpu_of(t);
        if from == to {
            return;
        }
        let (a, b) = if from < to {
            let (l, r) = self.rqs.split_at_mut(to);
            (&mut l[from], &mut r[0])
        } else {
            let (l, r) = self.rqs.split_at_mut(from);
            (&mut r[0], &mut l[to])
        };
        a.migrate(b, tasks, t, queued, now);
        self.task_cpu[t] = to as u8;
        self.sync_idle(from);
        self.sync_idle(to);
    }

    /// `task_hot`: did `t` run within `sysctl_sched_migration_cost` of `now`?
    pub(crate) fn cache_hot(&self, t: TaskId, now: Nanos) -> bool {
        self.last_ran
            .get(t)
            .copied()
            .flatten()
            .is_some_and(|r| now.saturating_sub(r) < balance::MIGRATION_COST_NS)
    }

    /// A task moved to CPU `c` by a balance: `wakeup_preempt` against what `c` runs, and a
    /// reschedule IPI when it should preempt (`attach_task` -> `wakeup_preempt`,
    /// `push_rt_task` -> `resched_curr`).
    pub(crate) fn attached(&mut self, tasks: &[Task], t: TaskId, c: usize, now: Nanos) -> bool {
        let curr = self.curr[c];
        self.rqs[c].wakeup_preempt(tasks, t, curr, now)
    }
}

impl<F: FairClass> Rqs for PerCpu<F> {
    fn topo(&self) -> &Topology {
        &self.topo
    }
    fn curr(&self, c: usize) -> TaskId {
        self.curr[c]
    }
    fn nr(&self, c: usize) -> usize {
        self.rqs[c].nr_running()
    }
    fn nr_fair(&self, c: usize) -> usize {
        self.rqs[c].nr_fair()
    }
    fn rt_top(&self, c: usize) -> Option<u32> {
        self.rqs[c].rt_top()
    }
    fn allowed(&self, t: TaskId, c: usize) -> bool {
        self.affinity.get(t).copied().flatten().is_none_or(|s| s.contains(c))
    }
    fn nr_allowed(&self, t: TaskId) -> usize {
        self.affinity
            .get(t)
            .copied()
            .flatten()
            .map_or(self.topo.ncpus(), |s| s.len())
    }
    fn idle_cpus(&self) -> CpuSet {
        self.idle
    }
}

impl<F: FairClass> Scheduler for PerCpu<F> {
    fn name(&self) -> &'static str {
        self.rqs[0].name()
    }

    /// `sched_fork` on the parent's CPU (CPU 0 for a task the model starts itself);
    /// `wake_up_new_task` then places it ([`Scheduler::select_task_rq`] with `fork`).
    fn fork(&mut self, tasks: &[Task], parent: Option<TaskId>, child: TaskId, now: Nanos) {
        self.grow(child);
        let cpu = parent.map_or(0, |p| self.cpu_of(p));
        self.task_cpu[child] = cpu as u8;
        self.rqs[cpu].fork(tasks, parent, child, now);
        self.sync_idle(cpu);
    }

    fn enqueue(&mut self, tasks: &[Task], t: TaskId, now: Nanos) {
        let c = self.cpu_of(t);
        self.rqs[c].enqueue(tasks, t, now);
        self.sync_idle(c);
    }

    fn dequeue(&mut self, tasks: &[Task], t: TaskId, now: Nanos) {
        let c = self.cpu_of(t);
        self.rqs[c].dequeue(tasks, t, now);
        self.sync_idle(c);
    }

    fn pick(&mut self, tasks: &[Task], prev: TaskId, m: &MachineProfile, now: Nanos) -> (TaskId, Nanos) {
        let cpu = if prev == 0 { 0 } else { self.cpu_of(prev) };
        self.pick_on(tasks, cpu, prev, m, now)
    }

    fn smp(&self) -> bool {
        true
    }

    fn tick(&mut self, tasks: &[Task], curr: TaskId, now: Nanos) -> bool {
        if curr == 0 {
            return false;
        }
        let c = self.cpu_of(curr);
        self.rqs[c].tick(tasks, curr, now)
    }

    /// `wakeup_preempt` on the woken task's CPU; then `task_woken_rt`: an RT task that does
    /// not preempt the RT task running there is pushed to a CPU of lower priority.
    fn wakeup_preempt(&mut self, tasks: &[Task], p: TaskId, curr: TaskId, now: Nanos) -> bool {
        let c = self.cpu_of(p);
        let preempt = self.rqs[c].wakeup_preempt(tasks, p, curr, now);
        if !preempt && is_rt(tasks, p) && curr != 0 && is_rt(tasks, curr) && self.nr_allowed(p) > 1 {
            rt_smp::push_rt_tasks(self, tasks, c, now);
        }
        preempt
    }

    fn nr_running(&self) -> usize {
        self.rqs.iter().map(|r| r.nr_running()).sum()
    }

    fn placement(&self, t: TaskId) -> Option<Placement> {
        self.rqs[self.cpu_of(t)].placement(t)
    }

    fn per_cpu(&self) -> bool {
        true
    }

    fn select_task_rq(&mut self, tasks: &[Task], p: TaskId, this_cpu: usize, fork: bool, now: Nanos) -> usize {
        self.grow(p);
        let prev = self.cpu_of(p);
        // `select_task_rq`: a task whose migration is disabled stays where it is.
        let mut target = if tasks[p].migration_disabled {
            prev
        } else if is_rt(tasks, p) {
            rt_smp::select_task_rq_rt(self, tasks, p, prev)
        } else {
            select::select_task_rq_fair(self, p, prev, this_cpu, fork)
        };
        // `is_cpu_allowed` else `select_fallback_rq`: the first allowed CPU.
        if !self.allowed(p, target) {
            target = (0..self.topo.ncpus()).find(|&c| self.allowed(p, c)).unwrap_or(prev);
        }
        self.move_task(tasks, p, target, false, now);
        target
    }

    fn pick_on(&mut self, tasks: &[Task], cpu: usize, prev: TaskId, m: &MachineProfile, now: Nanos) -> (TaskId, Nanos) {
        let mut cost = 0;
        if prev != 0 {
            self.last_ran[prev] = Some(now);
            // balance_rt: a CPU whose RT priority drops pulls RT work (`need_pull_rt_task`).
            let lowered = |top: Option<u32>| top.is_none_or(|p| p < tasks[prev].rt_priority);
            if is_rt(tasks, prev) && lowered(self.rqs[cpu].rt_top()) {
                cost += rt_smp::pull_rt_task(self, tasks, cpu, m, now);
            }
        }
        // balance_fair: nothing left to run here, `sched_balance_newidle`.
        if self.rqs[cpu].nr_running() == 0 {
            cost += balance::newidle(self, tasks, cpu, m, now);
        }
        let (next, c) = self.rqs[cpu].pick(tasks, prev, m, now);
        self.curr[cpu] = next;
        self.sync_idle(cpu);
        // The balance callback `set_next_task_rt` queues: push the RT tasks left waiting.
        if self.rqs[cpu].nr_rt() > 1 {
            rt_smp::push_rt_tasks(self, tasks, cpu, now);
        }
        (next, cost + c)
    }

    fn balance_tick(&mut self, tasks: &[Task], cpu: usize, now: Nanos) -> bool {
        balance::periodic(self, tasks, cpu, now)
    }

    fn take_kick(&mut self) -> Option<usize> {
        self.kicks.pop()
    }

    fn set_affinity(&mut self, t: TaskId, cpus: &[u32]) {
        self.grow(t);
        let mut s = CpuSet::default();
        cpus.iter()
            .map(|&c| c as usize)
            .filter(|&c| c < self.topo.ncpus())
            .for_each(|c| s.insert(c));
        self.affinity[t] = (s.len() < self.topo.ncpus() && !s.is_empty()).then_some(s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::cfs::{tests::unpatched, Cfs};
    use crate::sched::eevdf::Eevdf;

    const MS: Nanos = 1_000_000;

    /// Task 0 (the idle task) and `n` fair tasks.
    fn tasks(n: usize) -> Vec<Task> {
        (0..=n).map(|_| crate::kernel::task::tests_task()).collect()
    }

    fn fifo(ts: &mut [Task], t: TaskId, prio: u32) {
        ts[t].policy = Policy::Fifo;
        ts[t].rt_priority = prio;
    }

    fn machine(cpus: u32) -> MachineProfile {
        MachineProfile {
            cpus,
            ..crate::cpu::tests::machine()
        }
    }

    fn cfs(cpus: u32) -> PerCpu<Cfs> {
        PerCpu::new(&machine(cpus), 1000, || WithRt::new(Cfs::new(unpatched())))
    }

    /// Start task `t` (`fork`, placed from CPU `from`, enqueued): its CPU.
    fn start<F: FairClass>(s: &mut PerCpu<F>, ts: &[Task], t: TaskId, from: usize, now: Nanos) -> usize {
        s.fork(ts, None, t, now);
        let c = s.select_task_rq(ts, t, from, true, now);
        s.enqueue(ts, t, now);
        c
    }

    /// Wake sleeping task `t` from CPU `from`: its CPU.
    fn wake<F: FairClass>(s: &mut PerCpu<F>, ts: &[Task], t: TaskId, from: usize, now: Nanos) -> usize {
        let c = s.select_task_rq(ts, t, from, false, now);
        s.enqueue(ts, t, now);
        c
    }

    #[test]
    fn new_and_woken_tasks_spread_over_idle_cpus() {
        let ts = tasks(5);
        let mut s = cfs(4);
        let m = machine(4);
        // Four tasks forked from CPU 0, each picked up at once: one per CPU.
        let mut cpus: Vec<usize> = (1..=4)
            .map(|t| {
                let c = start(&mut s, &ts, t, 0, 0);
                assert_eq!(s.pick_on(&ts, c, 0, &m, 0).0, t);
                c
            })
            .collect();
        cpus.sort();
        assert_eq!(cpus, [0, 1, 2, 3]);
        // Task 1 sleeps; CPU 1 goes idle... task 5 starts there (the idlest).
        let c1 = s.cpu_of(1);
        s.dequeue(&ts, 1, MS);
        assert_eq!(s.pick_on(&ts, c1, 1, &m, MS).0, 0);
        assert_eq!(start(&mut s, &ts, 5, 0, MS), c1);
        assert_eq!(s.pick_on(&ts, c1, 0, &m, MS).0, 5);
        // ...so task 1, woken with its CPU busy and every CPU busy, stays there.
        assert_eq!(wake(&mut s, &ts, 1, 0, 2 * MS), c1);
        // Task 2 sleeps: its CPU, going idle, pulls task 1 waiting behind task 5.
        let c2 = s.cpu_of(2);
        s.dequeue(&ts, 2, 3 * MS);
        assert_eq!(s.pick_on(&ts, c2, 2, &m, 3 * MS).0, 1);
        assert_eq!(s.cpu_of(1), c2);
        // Task 3 sleeps (its CPU idles: nothing waits anywhere); task 2, woken from CPU c1
        // with its own CPU busy, goes to that idle CPU (select_idle_cpu).
        let c3 = s.cpu_of(3);
        s.dequeue(&ts, 3, 4 * MS);
        assert_eq!(s.pick_on(&ts, c3, 3, &m, 4 * MS).0, 0);
        assert_eq!(wake(&mut s, &ts, 2, c1, 5 * MS), c3);
    }

    #[test]
    fn a_cpu_going_idle_pulls_a_waiting_task_unless_cache_hot_or_pinned() {
        let ts = tasks(4);
        let m = machine(2);
        let mut s = cfs(2);
        // Three tasks pinned to CPU 0, then free to run anywhere but still queued there.
        for t in 1..=3 {
            s.set_affinity(t, &[0]);
            assert_eq!(start(&mut s, &ts, t, 0, 0), 0);
        }
        let first = s.pick_on(&ts, 0, 0, &m, 0).0;
        for t in 1..=3 {
            s.set_affinity(t, &[0, 1]);
        }
        // CPU 1 idles at once: the waiting tasks never ran, so none is cache-hot.
        let (got, cost) = s.pick_on(&ts, 1, 0, &m, 100_000);
        assert!(got != 0 && got != first, "{got}");
        assert_eq!(s.cpu_of(got), 1);
        assert!(cost > 0, "the newly-idle balance takes time");
        // A task that ran 0.1 ms ago is hot for 0.5 ms (sysctl_sched_migration_cost)...
        let ts4 = tasks(4);
        let mut s = cfs(4);
        let m = machine(4);
        for t in 1..=3 {
            s.set_affinity(t, &[0]);
            start(&mut s, &ts4, t, 0, 0);
        }
        let a = s.pick_on(&ts4, 0, 0, &m, 0).0;
        let b = s.pick_on(&ts4, 0, a, &m, 10 * MS).0;
        for t in 1..=3 {
            s.set_affinity(t, &[0, 1, 2, 3]);
        }
        // `a` stopped at 10 ms; the third never ran; at 10.1 ms CPU 1 takes the third.
        let third = (1..=3).find(|&t| t != a && t != b).unwrap();
        assert_eq!(s.pick_on(&ts4, 1, 0, &m, 10 * MS + 100_000).0, third);
        // CPU 2 finds only `a` waiting, hot: nothing; after 0.5 ms it takes it.
        assert_eq!(s.pick_on(&ts4, 2, 0, &m, 10 * MS + 200_000).0, 0);
        assert_eq!(s.pick_on(&ts4, 2, 0, &m, 10 * MS + 600_000).0, a);
        // A task pinned to CPU 0 waiting there is never pulled.
        s.set_affinity(4, &[0]);
        start(&mut s, &ts4, 4, 0, 11 * MS);
        assert_eq!(s.nr(0), 2);
        assert_eq!(s.pick_on(&ts4, 3, 0, &m, 20 * MS).0, 0);
    }

    #[test]
    fn affinity_decides_placement() {
        let ts = tasks(3);
        let m = machine(4);
        let mut s = cfs(4);
        s.set_affinity(1, &[2]);
        assert_eq!(start(&mut s, &ts, 1, 0, 0), 2);
        s.pick_on(&ts, 2, 0, &m, 0);
        s.set_affinity(2, &[2, 3]);
        assert_eq!(start(&mut s, &ts, 2, 0, 0), 3);
        // Woken from CPU 0 with CPUs 0 and 1 idle: still only 2 or 3.
        s.pick_on(&ts, 3, 0, &m, 0);
        s.dequeue(&ts, 2, MS);
        s.pick_on(&ts, 3, 2, &m, MS);
        assert_eq!(wake(&mut s, &ts, 2, 0, 2 * MS), 3);
    }

    #[test]
    fn a_preempted_fifo_task_is_pushed_to_a_lower_priority_cpu() {
        let mut ts = tasks(3);
        fifo(&mut ts, 1, 40);
        fifo(&mut ts, 2, 50);
        let m = machine(2);
        let mut s = cfs(2);
        // CPU 1 runs a fair task; FIFO 40 runs on CPU 0.
        assert_eq!(start(&mut s, &ts, 3, 1, 0), 1);
        s.pick_on(&ts, 1, 0, &m, 0);
        assert_eq!(start(&mut s, &ts, 1, 0, 0), 0);
        s.pick_on(&ts, 0, 0, &m, 0);
        // FIFO 50 wakes on CPU 0 (it outranks what runs there) and preempts FIFO 40...
        s.fork(&ts, Some(1), 2, MS);
        assert_eq!(s.select_task_rq(&ts, 2, 0, false, MS), 0);
        s.enqueue(&ts, 2, MS);
        assert!(s.wakeup_preempt(&ts, 2, 1, MS));
        assert_eq!(s.pick_on(&ts, 0, 1, &m, MS).0, 2);
        // ...which is pushed to CPU 1, told by IPI.
        assert_eq!(s.cpu_of(1), 1);
        assert_eq!(s.take_kick(), Some(1));
        assert_eq!(s.pick_on(&ts, 1, 3, &m, MS).0, 1);
        // A second FIFO task woken behind an equal one goes to a lower CPU at once.
        let mut ts = tasks(2);
        fifo(&mut ts, 1, 50);
        fifo(&mut ts, 2, 50);
        let mut s = cfs(2);
        start(&mut s, &ts, 1, 0, 0);
        s.pick_on(&ts, 0, 0, &m, 0);
        assert_eq!(start(&mut s, &ts, 2, 0, 0), 1);
    }

    #[test]
    fn a_task_whose_migration_is_disabled_stays_on_its_cpu() {
        // PREEMPT_RT: a preempted owner of a sleeping lock (migrate_disable()) waits on
        // CPU 0 beside the task running there; CPU 1 goes idle and pulls nothing, and a
        // wakeup leaves it where it was. Without the flag CPU 1 pulls it.
        let m = machine(2);
        for disabled in [true, false] {
            let mut ts = tasks(2);
            let mut s = cfs(2);
            for t in 1..=2 {
                s.set_affinity(t, &[0]);
                start(&mut s, &ts, t, 0, 0);
            }
            let running = s.pick_on(&ts, 0, 0, &m, 0).0;
            let waiting = 3 - running;
            for t in 1..=2 {
                s.set_affinity(t, &[0, 1]);
            }
            ts[waiting].migration_disabled = disabled;
            let got = s.pick_on(&ts, 1, 0, &m, MS).0;
            assert_eq!(got == waiting, !disabled, "disabled {disabled}");
            if disabled {
                assert_eq!(s.cpu_of(waiting), 0);
                s.dequeue(&ts, waiting, MS);
                assert_eq!(s.select_task_rq(&ts, waiting, 1, false, 2 * MS), 0, "a wakeup keeps it");
            }
        }
    }

    #[test]
    fn a_cpu_whose_rt_task_sleeps_pulls_a_waiting_one() {
        let mut ts = tasks(3);
        fifo(&mut ts, 1, 60);
        fifo(&mut ts, 2, 30);
        fifo(&mut ts, 3, 50);
        let m = machine(2);
        let mut s = PerCpu::new(&m, 1000, || {
            WithRt::new(Eevdf::new(
                crate::variant::EevdfTunables {
                    base_slice_ns: 3 * MS,
                    run_to_parity: true,
                    place_lag: true,
                },
                1000,
            ))
        });
        // FIFO 60 and FIFO 30 on CPU 1 (30 waits), FIFO 50 on CPU 0.
        for t in [1, 2] {
            s.set_affinity(t, &[1]);
            start(&mut s, &ts, t, 1, 0);
        }
        assert_eq!(s.pick_on(&ts, 1, 0, &m, 0).0, 1);
        s.set_affinity(2, &[0, 1]);
        start(&mut s, &ts, 3, 0, 0);
        assert_eq!(s.pick_on(&ts, 0, 0, &m, 0).0, 3);
        // FIFO 50 sleeps: CPU 0's priority drops and it pulls FIFO 30.
        s.dequeue(&ts, 3, MS);
        assert_eq!(s.pick_on(&ts, 0, 3, &m, MS).0, 2);
        assert_eq!(s.cpu_of(2), 0);
    }

    #[test]
    fn the_tick_balances_busy_cpus() {
        let ts = tasks(5);
        let m = machine(2);
        let mut s = cfs(2);
        // Four tasks queued on CPU 0 (pinned, then freed), one on CPU 1.
        for t in 1..=4 {
            s.set_affinity(t, &[0]);
            start(&mut s, &ts, t, 0, 0);
        }
        s.pick_on(&ts, 0, 0, &m, 0);
        for t in 1..=4 {
            s.set_affinity(t, &[0, 1]);
        }
        start(&mut s, &ts, 5, 1, 0);
        s.pick_on(&ts, 1, 0, &m, 0);
        assert_eq!((s.nr(0), s.nr(1)), (4, 1));
        // CPU 0 is the first of its group; CPU 1 balances its domain (busy: every 32 ms).
        s.balance_tick(&ts, 1, MS);
        assert_eq!((s.nr(0), s.nr(1)), (3, 2), "half the difference, rounded down");
        s.balance_tick(&ts, 1, 2 * MS);
        assert_eq!((s.nr(0), s.nr(1)), (3, 2), "not before the interval");
    }

    #[test]
    fn the_idle_cpus_are_kept_as_the_queues_change() {
        let mut ts = tasks(12);
        fifo(&mut ts, 12, 50);
        let mut s = cfs(8);
        let m = machine(8);
        let check = |s: &PerCpu<Cfs>| {
            let mut want = CpuSet::default();
            (0..8)
                .filter(|&c| s.curr(c) == 0 && s.nr(c) == 0)
                .for_each(|c| want.insert(c));
            assert_eq!(s.idle_cpus(), want);
        };
        check(&s);
        for t in 1..=12 {
            let c = start(&mut s, &ts, t, t % 3, 0);
            check(&s);
            if t % 2 == 0 {
                s.pick_on(&ts, c, s.curr(c), &m, 0);
                check(&s);
            }
        }
        // The running tasks of half the CPUs sleep; each CPU picks again and balances.
        for c in 0..8 {
            let t = s.curr(c);
            if t != 0 && c % 2 == 0 {
                s.dequeue(&ts, t, MS);
                check(&s);
                s.pick_on(&ts, c, t, &m, MS);
                check(&s);
            }
        }
        for c in 0..8 {
            s.balance_tick(&ts, c, 50 * MS);
            check(&s);
            let prev = s.curr(c);
            s.pick_on(&ts, c, prev, &m, 50 * MS);
            check(&s);
        }
    }
}
