//! The Completely Fair Scheduler as in the tree seed 004 patches: Linux 2.6.35 / 2.6.36-rc
//! `kernel/sched_fair.c` (with `kernel/sched.c` and `kernel/sched_features.h`), one CPU's
//! runqueue (a kernel of several CPUs has one per CPU, [`super::smp`]; CPUs may also share
//! one, each with its running entity out of the tree), no group scheduling. The formula each function follows is quoted above its code.
//!
//! - Every fair task has a `vruntime`: its run time scaled by `NICE_0_LOAD / weight`
//!   (`calc_delta_fair`), weights from `prio_to_weight[]`. The runqueue keeps the queued
//!   tasks in a tree ordered by vruntime (the running one is out of it, as `cfs_rq->curr`)
//!   and a monotonic `min_vruntime`.
//! - `pick_next_entity` takes the leftmost, unless the LAST_BUDDY (the task a wakeup just
//!   preempted) is within the wakeup granularity of it.
//! - A new task starts at `max(parent's vruntime, min_vruntime + sched_vslice)`
//!   (START_DEBIT); a waking one at `max(its own, min_vruntime - sched_latency / 2)`
//!   (GENTLE_FAIR_SLEEPERS).
//! - A wakeup preempts when the running task is more than `wakeup_gran` (in the wakee's
//!   virtual time) right of the wakee (`check_preempt_wakeup`); the tick preempts a task
//!   that ran its `sched_slice`, or at least the granularity while more than a slice right
//!   of the leftmost (`check_preempt_tick`).
//! - Seed 004's patch ([`GranPatch`]): the period stretches only above
//!   `sched_nr_latency_max`, and `check_preempt_tick` tests `__sched_gran(nr_running)`
//!   (`sched_latency / nr` bounded below by `min_granularity`, `std_granularity` for
//!   `sched_nr_latency` tasks or fewer) instead of `min_granularity`.
//! - The tunables are the normalized ones times `1 + ilog2(min(ncpus, 8))` on a machine of
//!   several CPUs ([`Cfs::on_cpus`], `update_sysctl`).
//!
//! Features as 2.6.35's defaults: GENTLE_FAIR_SLEEPERS, START_DEBIT, WAKEUP_PREEMPT,
//! LAST_BUDDY on; NEXT_BUDDY off; HRTICK off (slices are checked at the tick). Not
//! modelled: group scheduling, SCHED_BATCH/SCHED_IDLE, the
//! CACHE_HOT_BUDDY and ASYM_GRAN refinements, `sched_yield`.

use super::rt::{FairClass, Migrant};
use super::Placement;
use crate::kernel::task::{Task, TaskId};
use crate::machine::MachineProfile;
use crate::variant::CfsTunables;
use latlab_core::Nanos;
use smallvec::SmallVec;
use std::collections::BTreeSet;

/// `NICE_0_LOAD` (kernel/sched.c): the weight of a nice-0 task.
pub const NICE_0_LOAD: u64 = 1024;

/// `prio_to_weight[]` (kernel/sched.c, 2.6.23+): nice -20 .. 19, each step ~1.25x.
pub const PRIO_TO_WEIGHT: [u64; 40] = [
    88761, 71755, 56483, 46273, 36291, 29154, 23254, 18705, 14949, 11916, 9548, 7620, 6100, 4904, 3906, 3121, 2501,
    1991, 1586, 1277, 1024, 820, 655, 526, 423, 335, 272, 215, 172, 137, 110, 87, 70, 56, 45, 36, 29, 23, 18, 15,
];

/// Weight of a task at `nice`.
pub fn weight(nice: i32) -> u64 {
    PRIO_TO_WEIGHT[(nice.clamp(-20, 19) + 20) as usize]
}

/// `calc_delta_fair(delta, se)`: `delta * NICE_0_LOAD / se->load.weight` (calc_delta_mine's
/// fixed-point inverse, to within its rounding).
pub fn calc_delta_fair(delta: Nanos, w: u64) -> Nanos {
    if w == NICE_0_LOAD {
        delta
    } else {
        ((delta as u128 * NICE_0_LOAD as u128) / w as u128) as Nanos
    }
}

/// Instructions per level of the red-black tree walked by `__enqueue_entity` (compare the
/// key, follow `rb_left`/`rb_right`) and by `rb_erase`'s rebalancing: about 10 (the
/// `entity_before` compare is a 64-bit subtract and sign test), with one cache miss per two
/// levels (another task's `sched_entity`; the top levels stay hot). Arithmetic from
/// lib/rbtree.c and `__enqueue_entity`.
pub const RB_LEVEL_INSTR: f64 = 10.0;
/// Cache misses per tree level (see [`RB_LEVEL_INSTR`]).
pub const RB_LEVEL_MISSES: f64 = 0.5;
/// Instructions of `pick_next_task_fair` / `put_prev_task_fair` besides the tree walks:
/// `update_curr` (a 64-bit multiply-divide in calc_delta_fair, the stats), the buddy
/// tests of `pick_next_entity`, `set_next_entity`'s bookkeeping: about 120 (arithmetic from
/// kernel/sched_fair.c 2.6.35).
pub const PICK_FIXED_INSTR: f64 = 120.0;

/// Per-task CFS state (`struct sched_entity`).
#[derive(Clone, Copy, Debug, Default)]
struct Entity {
    vruntime: Nanos,
    weight: u64,
    sum_exec_runtime: Nanos,
    prev_sum_exec_runtime: Nanos,
    exec_start: Nanos,
    on_rq: bool,
    /// Known to the scheduler (forked or enqueued once).
    known: bool,
    /// Forked and not yet enqueued: `wake_up_new_task` keeps its START_DEBIT place.
    new: bool,
}

/// One CPU's `struct cfs_rq`.
pub struct Cfs {
    tun: CfsTunables,
    se: Vec<Entity>,
    /// Queued entities but the running one, by (vruntime, enqueue order, task).
    tree: BTreeSet<(Nanos, u64, TaskId)>,
    /// Each queued task's key in `tree`.
    key: Vec<Option<(Nanos, u64)>>,
    seq: u64,
    min_vruntime: Nanos,
    /// `cfs_rq->load.weight`: the queued entities, the running one included.
    load: u64,
    nr_running: usize,
    /// `cfs_rq->curr`: the running entities, out of the tree (one per CPU running a fair
    /// task: the CPUs of a Hyper-Threading pair share this runqueue).
    curr: SmallVec<[TaskId; 2]>,
    /// `cfs_rq->last`: the task a wakeup preempted (LAST_BUDDY).
    last: Option<TaskId>,
}

/// Start vruntimes far from 0 so `min_vruntime - sched_latency/2` never underflows (the
/// kernel starts at `(u64)(-(1LL << 20))` and lets it wrap; the model uses a positive base).
const VRUNTIME_BASE: Nanos = 1 << 40;

impl Cfs {
    pub fn new(tun: CfsTunables) -> Self {
        Cfs {
            tun,
            se: Vec::new(),
            tree: BTreeSet::new(),
            key: Vec::new(),
            seq: 0,
            min_vruntime: VRUNTIME_BASE,
            load: 0,
            nr_running: 0,
            curr: SmallVec::new(),
            last: None,
        }
    }

    /// The queue of a machine with `ncpus` CPUs online: `update_sysctl()` (2.6.33+, as in
    /// 2.6.35's kernel/sched.c) sets `sysctl_sched_latency`, `sysctl_sched_min_granularity`
    /// and `sysctl_sched_wakeup_granularity` to the normalized values (the variant's `[cfs]`)
    /// times [`super::sysctl_factor`]; seed 004's patch declares its std granularity with a
    /// normalized twin too ("default: 2 msec * (1 + ilog(ncpus))"). `sched_nr_latency` keeps
    /// its ratio. One CPU: factor 1, the tunables as given.
    pub fn on_cpus(mut self, ncpus: u32) -> Self {
        let f = super::sysctl_factor(ncpus);
        self.tun.latency_ns *= f;
        self.tun.min_granularity_ns *= f;
        self.tun.wakeup_granularity_ns *= f;
        if let Some(g) = &mut self.tun.gran_patch {
            g.std_granularity_ns *= f;
        }
        self
    }

    fn ensure(&mut self, tasks: &[Task], t: TaskId) {
        if self.se.len() <= t {
            self.se.resize(t + 1, Entity::default());
            self.key.resize(t + 1, None);
        }
        if !self.se[t].known {
            self.se[t] = Entity {
                vruntime: self.min_vruntime,
                weight: weight(tasks[t].nice),
                known: true,
                ..Entity::default()
            };
        }
    }

    /// `__sched_period(nr_running)`. Unpatched: `nr > sched_nr_latency ? min_granularity *
    /// nr : sched_latency`. Seed 004's patch: the same test against `sched_nr_latency_max`.
    pub fn sched_period(&self, nr: u64) -> Nanos {
        let limit = self.tun.gran_patch.map_or(self.tun.nr_latency, |g| g.nr_latency_max);
        if nr > limit {
            self.tun.min_granularity_ns * nr
        } else {
            self.tun.latency_ns
        }
    }

    /// The granularity `check_preempt_tick` asks a task to have run before it compares
    /// vruntimes. Unpatched: `sysctl_sched_min_granularity`. Seed 004's patch,
    /// `__sched_gran(nr)`: `nr > sched_nr_latency ? max(sched_latency / nr,
    /// min_granularity) : std_granularity`.
    pub fn sched_gran(&self, nr: u64) -> Nanos {
        match self.tun.gran_patch {
            None => self.tun.min_granularity_ns,
            Some(_) if nr > self.tun.nr_latency => (self.tun.latency_ns / nr.max(1)).max(self.tun.min_granularity_ns),
            Some(g) => g.std_granularity_ns,
        }
    }

    /// `sched_slice(cfs_rq, se)`: `__sched_period(nr_running + !se->on_rq) * se->load.weight
    /// / (cfs_rq->load.weight + (se->on_rq ? 0 : se->load.weight))`.
    fn sched_slice(&self, t: TaskId) -> Nanos {
        let e = &self.se[t];
        let nr = self.nr_running as u64 + u64::from(!e.on_rq);
        let load = self.load + if e.on_rq { 0 } else { e.weight };
        let period = self.sched_period(nr);
        ((period as u128 * e.weight as u128) / load.max(1) as u128) as Nanos
    }

    /// `sched_vslice`: `calc_delta_fair(sched_slice(cfs_rq, se), se)`.
    fn sched_vslice(&self, t: TaskId) -> Nanos {
        calc_delta_fair(self.sched_slice(t), self.se[t].weight)
    }

    /// `update_curr`: charge each running task its run time since `exec_start`.
    fn update_curr(&mut self, now: Nanos) {
        if self.curr.is_empty() {
            return;
        }
        for &c in &self.curr {
            let e = &mut self.se[c];
            let delta = now.saturating_sub(e.exec_start);
            e.sum_exec_runtime += delta;
            e.vruntime += calc_delta_fair(delta, e.weight);
            e.exec_start = now;
        }
        self.update_min_vruntime();
    }

    /// `update_min_vruntime`: `max(min_vruntime, min(curr->vruntime, leftmost->vruntime))`.
    fn update_min_vruntime(&mut self) {
        let curr = self.curr.iter().map(|&c| self.se[c].vruntime).min();
        let left = self.tree.first().map(|k| k.0);
        let v = match (curr, left) {
            (Some(c), Some(l)) => c.min(l),
            (Some(c), None) => c,
            (None, Some(l)) => l,
            (None, None) => return,
        };
        self.min_vruntime = self.min_vruntime.max(v);
    }

    /// `place_entity(cfs_rq, se, initial)`.
    fn place_entity(&mut self, t: TaskId, initial: bool) {
        let mut v = self.min_vruntime;
        if initial {
            // START_DEBIT: "the tasks' slice is assumed to be already used".
            v += self.sched_vslice(t);
        } else {
            // GENTLE_FAIR_SLEEPERS: "sleeps up to a single latency don't count", halved.
            v = v.saturating_sub(self.tun.latency_ns / 2);
        }
        // "ensure we never gain time by being placed backwards."
        let e = &mut self.se[t];
        e.vruntime = e.vruntime.max(v);
    }

    fn tree_insert(&mut self, t: TaskId) {
        self.seq += 1;
        let k = (self.se[t].vruntime, self.seq);
        self.tree.insert((k.0, k.1, t));
        self.key[t] = Some(k);
    }

    fn tree_remove(&mut self, t: TaskId) {
        if let Some((v, s)) = self.key[t].take() {
            self.tree.remove(&(v, s, t));
        }
    }

    /// `wakeup_preempt_entity(curr, se)`: -1 if `se` is not left of `curr`, 1 if it is
    /// more than `wakeup_gran` (converted to `se`'s virtual time) left of it, else 0.
    fn wakeup_preempt_entity(&self, curr: TaskId, se: TaskId) -> i32 {
        let (c, s) = (&self.se[curr], &self.se[se]);
        if c.vruntime <= s.vruntime {
            return -1;
        }
        let gran = calc_delta_fair(self.tun.wakeup_granularity_ns, s.weight);
        i32::from(c.vruntime - s.vruntime > gran)
    }

    /// Cost of one tree insertion or erase among `n` entities: ⌈log2(n+1)⌉ levels.
    fn tree_cost(m: &MachineProfile, n: usize) -> Nanos {
        let levels = (usize::BITS - n.leading_zeros()) as f64;
        m.cost(RB_LEVEL_INSTR * levels, RB_LEVEL_MISSES * levels)
    }
}

impl FairClass for Cfs {
    fn name(&self) -> &'static str {
        if self.tun.gran_patch.is_some() {
            "cfs (seed 004 granularity patch)"
        } else {
            "cfs"
        }
    }

    fn fork(&mut self, tasks: &[Task], parent: Option<TaskId>, child: TaskId, now: Nanos) {
        self.ensure(tasks, child);
        // task_fork_fair: `update_curr(cfs_rq); if (curr) se->vruntime = curr->vruntime;
        // place_entity(cfs_rq, se, 1);`. The child's `on_rq` is 0, so its slice is taken
        // from a period of nr_running + 1 tasks.
        self.update_curr(now);
        // The parent runs (it forks): its CPU's `curr`.
        let running_parent = parent.filter(|p| self.curr.contains(p));
        self.se[child].vruntime = running_parent.map_or(0, |c| self.se[c].vruntime);
        self.place_entity(child, true);
        // sched_child_runs_first: swap so the child is left of the parent.
        if let (true, Some(c)) = (self.tun.child_runs_first, running_parent) {
            if self.se[c].vruntime < self.se[child].vruntime {
                let (a, b) = (self.se[c].vruntime, self.se[child].vruntime);
                self.se[c].vruntime = b;
                self.se[child].vruntime = a;
            }
        }
        // The child is enqueued by wake_up_new_task without GENTLE placement.
        self.se[child].exec_start = now;
        self.se[child].new = true;
    }

    fn enqueue(&mut self, tasks: &[Task], t: TaskId, now: Nanos) {
        self.ensure(tasks, t);
        if self.se[t].on_rq {
            return;
        }
        // enqueue_entity: `update_curr(cfs_rq)`; a wakeup is placed (`place_entity(.., 0)`);
        // a new task (marked by fork) keeps its START_DEBIT place.
        self.update_curr(now);
        if !std::mem::take(&mut self.se[t].new) {
            self.place_entity(t, false);
        }
        self.se[t].on_rq = true;
        self.load += self.se[t].weight;
        self.nr_running += 1;
        if !self.curr.contains(&t) {
            self.tree_insert(t);
        }
        self.update_min_vruntime();
    }

    fn dequeue(&mut self, _tasks: &[Task], t: TaskId, now: Nanos) {
        if !self.se.get(t).is_some_and(|e| e.on_rq) {
            return;
        }
        // dequeue_entity: `update_curr(cfs_rq)`, clear buddies, off the tree, load down.
        self.update_curr(now);
        if self.last == Some(t) {
            self.last = None;
        }
        self.tree_remove(t);
        let e = &mut self.se[t];
        e.on_rq = false;
        self.load -= e.weight;
        self.nr_running -= 1;
        self.update_min_vruntime();
    }

    fn put_prev(&mut self, _tasks: &[Task], prev: TaskId, now: Nanos) {
        // put_prev_entity: `if (prev->on_rq) update_curr(cfs_rq); ... __enqueue_entity`.
        let Some(i) = self.curr.iter().position(|&c| c == prev) else {
            return;
        };
        if self.se[prev].on_rq {
            self.update_curr(now);
            self.tree_insert(prev);
        }
        self.curr.remove(i);
    }

    fn pick_next(&mut self, _tasks: &[Task], m: &MachineProfile, now: Nanos) -> (Option<TaskId>, Nanos) {
        let n = self.tree.len();
        let Some(&(_, _, left)) = self.tree.first() else {
            return (None, 0);
        };
        // pick_next_entity: "Prefer last buddy, try to return the CPU to a preempted task."
        let mut se = left;
        if let Some(l) = self.last.filter(|&l| self.key[l].is_some()) {
            if self.wakeup_preempt_entity(l, left) < 1 {
                se = l;
            }
        }
        self.last = None;
        // set_next_entity: off the tree, `prev_sum_exec_runtime = sum_exec_runtime`.
        self.tree_remove(se);
        let e = &mut self.se[se];
        e.exec_start = now;
        e.prev_sum_exec_runtime = e.sum_exec_runtime;
        self.curr.push(se);
        // One erase here, and the insertion `put_prev` made of the previous task.
        let cost = m.cost(PICK_FIXED_INSTR, 0.0) + 2 * Self::tree_cost(m, n);
        (Some(se), cost)
    }

    fn tick(&mut self, _tasks: &[Task], c: TaskId, now: Nanos) -> bool {
        if !self.curr.contains(&c) {
            return false;
        }
        // entity_tick: `update_curr(cfs_rq); if (cfs_rq->nr_running > 1)
        // check_preempt_tick(cfs_rq, curr)`.
        self.update_curr(now);
        if self.nr_running <= 1 {
            return false;
        }
        // check_preempt_tick.
        let ideal_runtime = self.sched_slice(c);
        let e = &self.se[c];
        let delta_exec = e.sum_exec_runtime - e.prev_sum_exec_runtime;
        if delta_exec > ideal_runtime {
            if self.last == Some(c) {
                self.last = None;
            }
            return true;
        }
        // "Ensure that a task that missed wakeup preemption by a narrow margin doesn't have
        // to wait for a full slice."
        if delta_exec < self.sched_gran(self.nr_running as u64) {
            return false;
        }
        match self.tree.first() {
            Some(&(v, _, _)) => e.vruntime > v && e.vruntime - v > ideal_runtime,
            None => false,
        }
    }

    fn wakeup_preempt(&mut self, tasks: &[Task], p: TaskId, curr: TaskId, now: Nanos) -> bool {
        self.ensure(tasks, p);
        if !self.curr.contains(&curr) {
            return false;
        }
        // check_preempt_wakeup: `update_curr(cfs_rq); if (wakeup_preempt_entity(se, pse)
        // == 1) goto preempt;` and at `preempt:` LAST_BUDDY when `nr_running >=
        // sched_nr_latency` ("scale").
        self.update_curr(now);
        if self.wakeup_preempt_entity(curr, p) == 1 {
            if self.nr_running as u64 >= self.tun.nr_latency && self.se[curr].on_rq {
                self.last = Some(curr);
            }
            return true;
        }
        false
    }

    fn nr_running(&self) -> usize {
        self.nr_running
    }

    fn smp(&self) -> bool {
        true
    }

    fn find_queued(&self, ok: &mut dyn FnMut(TaskId) -> bool) -> Option<TaskId> {
        self.tree.iter().rev().map(|k| k.2).find(|&t| ok(t))
    }

    fn migrate_out(&mut self, t: TaskId, queued: bool) -> Migrant {
        // `vruntime -= cfs_rq->min_vruntime` (task_waking_fair / dequeue without SLEEP).
        if self.last == Some(t) {
            self.last = None;
        }
        let e = &mut self.se[t];
        e.known = false;
        Migrant {
            rel: e.vruntime as i128 - self.min_vruntime as i128,
            sum_exec: e.sum_exec_runtime,
            keep_place: e.new || queued,
            ..Migrant::default()
        }
    }

    fn migrate_in(&mut self, tasks: &[Task], t: TaskId, m: Migrant) {
        // `vruntime += cfs_rq->min_vruntime` on the new queue; a wakeup is then placed.
        self.ensure(tasks, t);
        let e = &mut self.se[t];
        e.vruntime = (self.min_vruntime as i128 + m.rel).max(0) as Nanos;
        e.sum_exec_runtime = m.sum_exec;
        e.prev_sum_exec_runtime = m.sum_exec;
        e.new = m.keep_place;
    }

    fn placement(&self, t: TaskId) -> Option<Placement> {
        let e = self.se.get(t).filter(|e| e.known)?;
        Some(Placement::Cfs {
            vruntime_rel: e.vruntime as i64 - self.min_vruntime as i64,
            slice: self.sched_slice(t),
        })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::variant::GranPatch;

    const MS: Nanos = 1_000_000;

    /// The tunables of the tree seed 004 patches (its diff's removed lines).
    pub fn unpatched() -> CfsTunables {
        CfsTunables {
            latency_ns: 6 * MS,
            min_granularity_ns: 2 * MS,
            wakeup_granularity_ns: MS,
            nr_latency: 3,
            gran_patch: None,
            child_runs_first: false,
        }
    }

    fn patched() -> CfsTunables {
        CfsTunables {
            min_granularity_ns: 750_000,
            gran_patch: Some(GranPatch {
                std_granularity_ns: 2 * MS,
                nr_latency_max: 8,
            }),
            ..unpatched()
        }
    }

    #[test]
    fn period_and_granularity_follow_the_seed_diff() {
        let u = Cfs::new(unpatched());
        assert_eq!(u.sched_period(3), 6 * MS);
        assert_eq!(u.sched_period(4), 8 * MS, "2 ms x 4");
        assert_eq!(u.sched_period(12), 24 * MS);
        assert_eq!(u.sched_gran(12), 2 * MS);
        let p = Cfs::new(patched());
        assert_eq!(p.sched_period(8), 6 * MS, "stretches only above 8");
        assert_eq!(p.sched_period(12), 9 * MS, "0.75 ms x 12");
        assert_eq!(p.sched_gran(3), 2 * MS, "std granularity up to sched_nr_latency");
        assert_eq!(p.sched_gran(4), 1_500_000, "6 ms / 4");
        assert_eq!(p.sched_gran(12), 750_000, "floor at min_granularity");
    }

    fn tasks(n: usize) -> Vec<Task> {
        (0..=n).map(|_| crate::kernel::task::tests_task()).collect()
    }

    #[test]
    fn new_tasks_pay_start_debit_and_sleepers_get_half_a_latency() {
        let ts = tasks(4);
        let mut c = Cfs::new(unpatched());
        let m = crate::cpu::tests::machine();
        for t in 1..=3 {
            c.fork(&ts, None, t, 0);
            c.enqueue(&ts, t, 0);
        }
        let (first, _) = c.pick_next(&ts, &m, 0);
        let first = first.unwrap();
        // It runs 10 ms: min_vruntime follows the leftmost waiting task.
        c.tick(&ts, first, 10 * MS);
        let min = c.min_vruntime;
        // A fork by the running task: max(parent's vruntime, min_vruntime + vslice); with 4
        // tasks (3 + the child) the period is 2 ms x 4 and the vslice 2 ms.
        c.fork(&ts, Some(first), 4, 10 * MS);
        assert_eq!(c.se[4].vruntime, (min + 2 * MS).max(c.se[first].vruntime));
        // A task asleep long enough comes back at min_vruntime - sched_latency / 2.
        c.dequeue(&ts, 2, 10 * MS);
        c.se[2].vruntime = 0;
        c.enqueue(&ts, 2, 20 * MS);
        assert_eq!(c.se[2].vruntime, c.min_vruntime - 3 * MS);
    }

    #[test]
    fn the_tunables_scale_with_the_cpus_online() {
        let one = Cfs::new(patched()).on_cpus(1);
        assert_eq!(one.tun, patched(), "one CPU: factor 1");
        let two = Cfs::new(patched()).on_cpus(2);
        assert_eq!(two.sched_period(8), 12 * MS, "6 ms x (1 + ilog2 2)");
        assert_eq!(two.tun.wakeup_granularity_ns, 2 * MS);
        assert_eq!(two.sched_gran(3), 4 * MS, "the patch's std granularity too");
        let many = Cfs::new(patched()).on_cpus(64);
        assert_eq!(many.tun.min_granularity_ns, 4 * 750_000, "capped at 8 CPUs: 1 + 3");
    }

    #[test]
    fn a_wakeup_preempts_only_past_the_wakeup_granularity() {
        let ts = tasks(2);
        let m = crate::cpu::tests::machine();
        let mut c = Cfs::new(unpatched());
        for t in 1..=2 {
            c.fork(&ts, None, t, 0);
            c.enqueue(&ts, t, 0);
        }
        let (cur, _) = c.pick_next(&ts, &m, 0);
        let (cur, other) = (cur.unwrap(), if cur == Some(1) { 2 } else { 1 });
        c.dequeue(&ts, other, 0);
        // The other sleeps, then wakes 0.5 ms of curr's run later: placed at
        // min_vruntime - 3 ms but never before its own vruntime, so within 1 ms of curr.
        c.se[other].vruntime = c.se[cur].vruntime;
        c.enqueue(&ts, other, 500_000);
        assert!(
            !c.wakeup_preempt(&ts, other, cur, 500_000),
            "0.5 ms apart: no preemption"
        );
        // 1.5 ms later the gap passes the 1 ms granularity.
        assert!(c.wakeup_preempt(&ts, other, cur, 1_600_000));
    }

    #[test]
    fn the_patch_lets_the_tick_preempt_after_the_shrunk_granularity() {
        // Twelve tasks: unpatched, the slice is 2 ms of a 24 ms period; patched, 0.75 ms of 9.
        for (tun, slice) in [(unpatched(), 2 * MS), (patched(), 750_000)] {
            let ts = tasks(12);
            let m = crate::cpu::tests::machine();
            let mut c = Cfs::new(tun);
            for t in 1..=12 {
                c.fork(&ts, None, t, 0);
                c.enqueue(&ts, t, 0);
            }
            let cur = c.pick_next(&ts, &m, 0).0.unwrap();
            assert_eq!(c.sched_slice(cur), slice);
            assert!(!c.tick(&ts, cur, slice), "not past the slice yet");
            assert!(c.tick(&ts, cur, slice + 1), "past it");
        }
    }

    #[test]
    fn weights_and_virtual_time() {
        assert_eq!(weight(0), 1024);
        assert_eq!(weight(-20), 88761);
        assert_eq!(weight(19), 15);
        assert_eq!(calc_delta_fair(MS, 1024), MS);
        assert_eq!(calc_delta_fair(MS, 2048), MS / 2);
    }
}
