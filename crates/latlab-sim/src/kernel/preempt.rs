//! Preemption: where a task with `need_resched` set actually gets to schedule().
//!
//! - Stock 2.4 (`PreemptModel::None`): at return to user space, when kernel code blocks, and
//!   at the rescheduling points the variant has (`conditional_schedule()` and the stock
//!   kernel's own `if (current->need_resched) schedule()` checks).
//! - Voluntary (`PreemptModel::Voluntary`, CONFIG_PREEMPT_VOLUNTARY): the same, with the
//!   might_sleep() points the variant lists among its `points`.
//! - Kernel preemption (`PreemptModel::Full`: Robert Love's patch, CONFIG_PREEMPT): also at
//!   IRQ return when `preempt_count == 0` (no spinlock held, interrupts on) and at the
//!   spin_unlock that brings the count to 0 (kernel-facts.md, "Kernel preemption patch").
//! - Lazy (`PreemptModel::Lazy`, 6.13+): kernel preemption as `Full` for a NEED_RESCHED; a
//!   fair-class wakeup or slice end sets only NEED_RESCHED_LAZY ([`resched_is_lazy`]),
//!   which return to user space honours and the next tick promotes (kernel/sched/core.c
//!   `resched_curr_lazy`, `sched_tick`).
//! - PREEMPT_RT (a variant's `locks = "sleeping"`, with `full` or `lazy`): as kernel
//!   preemption, except that a step holding a sleeping lock (`spinlock_t`, [`Lock::kind`])
//!   stays preemptible: `rt_spin_lock` takes `migrate_disable()` where `spin_lock` took
//!   `preempt_disable()` (kernel/locking/spinlock_rt.c). Only a `raw_spinlock_t` or an
//!   interrupts-off stretch is atomic. Who owns a sleeping lock and who waits for it is
//!   [`super::rtmutex`]'s.

use super::catalog::{Origin, Point};
use super::lock::{Lock, LockKind};
use super::path::{LoopStep, Step};
use super::task::{Exec, Task};
use crate::variant::{PreemptModel, Variant};
use latlab_core::Nanos;

/// Can the interrupted context reschedule on IRQ return?
pub enum Boundary {
    No,
    Yes(SwitchReason),
}

/// Length of a step that takes CPU time.
#[inline(always)]
pub fn step_len(s: &Step) -> Nanos {
    match s {
        Step::Work(w) => w.ns,
        Step::Loop(l) => l.items * l.per_item,
        Step::Block(_) | Step::Done => 0,
    }
}

/// Does releasing a spinlock reschedule (preempt_enable -> preempt_schedule)? Not while the
/// path still holds the big kernel lock (`bkl`): the count stays above 0.
pub fn unlock_preempts(v: &Variant, bkl: bool) -> bool {
    matches!(v.preempt, PreemptModel::Full | PreemptModel::Lazy) && !bkl
}

/// Does a reschedule request against a running task of policy SCHED_OTHER (`fair`) only set
/// NEED_RESCHED_LAZY? Under lazy preemption, for a fair-class current task
/// (`resched_curr_lazy` in kernel/sched/fair.c: wakeup preemption and slice expiry); an RT
/// wakeup or an idle CPU gets NEED_RESCHED at once.
pub fn resched_is_lazy(v: &Variant, curr_fair: bool, wakee_fair: bool) -> bool {
    v.preempt == PreemptModel::Lazy && curr_fair && wakee_fair
}

/// Does holding `lock` keep preemption off under variant `v`? Every lock does with spinning
/// locks; under PREEMPT_RT only a raw one.
#[inline(always)]
pub fn spins(v: &Variant, lock: Lock) -> bool {
    !v.sleeping_locks() || lock.kind() == LockKind::Raw
}

/// Is a step holding `lock` (if any), with `hold` (a lock stays held after it) and
/// `irqs_off`, atomic under variant `v`: no preemption inside it? A held lock not named is
/// taken to spin.
#[inline(always)]
pub fn atomic(v: &Variant, lock: Option<Lock>, hold: bool, irqs_off: bool) -> bool {
    irqs_off || lock.map_or(hold, |l| spins(v, l))
}

/// How a loop gets to schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resched {
    /// A rescheduling point (or lock-break) of the catalog.
    Point(Point),
    /// Kernel preemption at the per-item spin_unlock of this lock.
    Unlock(Lock),
    /// Kernel preemption of a loop holding no lock that spins, at an item's end: its task
    /// is preempted there as at an interrupt's return, and the loop resumes from that item.
    Preempt,
}

impl Resched {
    /// The function the trace names for it.
    pub fn name(self) -> &'static str {
        match self {
            Resched::Point(p) => p.name(),
            Resched::Unlock(_) => "spin_unlock",
            Resched::Preempt => "preempt",
        }
    }
}

/// A loop's rescheduling opportunity: checked after every `every`-th item.
#[derive(Clone, Copy, Debug)]
pub struct LoopChance {
    pub at: Resched,
    pub every: u64,
}

/// Does kernel `v` have rescheduling point `p`? Points every kernel has count always; the
/// `might_sleep()` points under voluntary preemption (VP).
fn has(v: &Variant, p: Point) -> bool {
    match p.info().origin {
        Origin::Every => true,
        Origin::Voluntary => v.might_sleep_points(),
        _ => v.points.contains(p),
    }
}

/// The rescheduling opportunity inside loop `l` under variant `v`: the most frequent point the
/// variant has, or, under kernel preemption, every item of a loop that drops its lock per item
/// (or holds none) in a path that does not hold the big kernel lock (`bkl`).
pub fn loop_point(l: &LoopStep, v: &Variant, bkl: bool) -> Option<LoopChance> {
    if unlock_preempts(v, bkl) && (l.unlock_each || !l.lock.is_some_and(|k| spins(v, k))) {
        // A lock that spins is dropped per item (preempted at that spin_unlock); a sleeping
        // one is kept, preempted inside it.
        let at = match l.lock {
            Some(k) if spins(v, k) => Resched::Unlock(k),
            _ => Resched::Preempt,
        };
        return Some(LoopChance { at, every: 1 });
    }
    l.points
        .iter()
        .filter(|p| has(v, p.point))
        .min_by_key(|p| p.every)
        .map(|p| LoopChance {
            at: Resched::Point(p.point),
            every: u64::from(p.every),
        })
}

/// Time from `elapsed` ns into loop `l` until its next rescheduling opportunity `p`: it is
/// checked after every `p.every`-th item. Zero when the loop sits exactly on a point.
pub fn to_next_point(elapsed: Nanos, l: &LoopStep, p: LoopChance) -> Nanos {
    let per = l.per_item.max(1);
    let every = p.every.max(1);
    let items_begun = elapsed.div_ceil(per);
    let next = items_begun.div_ceil(every).max(1) * every;
    (next * per).saturating_sub(elapsed)
}

/// ret_from_intr with need_resched set: may the interrupted context be left now?
/// `bkl` says whether the kernel path the task runs holds the big kernel lock (asked only
/// of one in the kernel).
pub fn at_irq_return(e: &Exec, v: &Variant, bkl: impl FnOnce() -> bool) -> Boundary {
    match e {
        Exec::User { .. } | Exec::Ready => Boundary::Yes(SwitchReason::UserReturn),
        Exec::Idle => Boundary::Yes(SwitchReason::Idle),
        Exec::Kernel { step, .. } => {
            if !unlock_preempts(v, bkl()) {
                return Boundary::No;
            }
            let atomic = match step {
                Some(r) => match &r.step {
                    Step::Work(w) => atomic(v, w.lock, w.hold, w.irqs_off),
                    Step::Loop(l) => atomic(v, l.lock, l.hold, false),
                    _ => false,
                },
                None => false,
            };
            if atomic {
                Boundary::No
            } else {
                Boundary::Yes(SwitchReason::IrqExit)
            }
        }
    }
}

/// What was running when an interrupt came: the stretch a wakeup will have to wait out.
#[derive(Clone, Copy, Debug)]
pub struct CauseSnap {
    pub task: super::task::TaskId,
    pub path: &'static str,
    pub func: &'static str,
    pub lock: Option<Lock>,
    pub since: Nanos,
    pub user: bool,
}

/// The stretch running on `t`: a lock-held step counts from the step's start, anything else
/// from when the task got the CPU or entered the kernel (`ran_since`). `path` is the name of
/// the kernel path it runs and whether that holds the big kernel lock.
pub fn cause_of(
    t: &Task,
    id: super::task::TaskId,
    idle: bool,
    ran_since: Nanos,
    path: Option<(&'static str, bool)>,
) -> Option<CauseSnap> {
    if idle {
        return None;
    }
    match &t.exec {
        Exec::Kernel { step, .. } => {
            let (name, bkl) = path.expect("a task in the kernel runs a path");
            let (func, lock, since) = match step {
                Some(r) => match &r.step {
                    Step::Work(w) => (w.func, w.lock, if w.lock.is_some() { r.since } else { ran_since }),
                    Step::Loop(l) => (l.func, l.lock, if l.lock.is_some() { r.since } else { ran_since }),
                    _ => (name, None, ran_since),
                },
                None => (name, None, ran_since),
            };
            let lock = lock.or(bkl.then_some(Lock::Bkl));
            Some(CauseSnap {
                task: id,
                path: name,
                func,
                lock,
                since,
                user: false,
            })
        }
        _ => Some(CauseSnap {
            task: id,
            path: "user",
            func: "user",
            lock: None,
            since: 0,
            user: true,
        }),
    }
}

/// Why the CPU left a context: recorded for attribution and traces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SwitchReason {
    Point(Point),
    Unlock(Lock),
    IrqExit,
    UserReturn,
    Block,
    Exit,
    Idle,
}

impl SwitchReason {
    pub fn describe(&self) -> String {
        match self {
            SwitchReason::Point(p) => format!("rescheduling point in {p}"),
            SwitchReason::Unlock(l) => format!("spin_unlock({l}) -> preempt_schedule"),
            SwitchReason::IrqExit => "IRQ return (kernel preemption)".into(),
            SwitchReason::UserReturn => "return to user space".into(),
            SwitchReason::Block => "schedule() (task blocked)".into(),
            SwitchReason::Exit => "do_exit".into(),
            SwitchReason::Idle => "idle loop".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lp(items: u64, per: Nanos) -> LoopStep {
        LoopStep {
            func: "f",
            items,
            per_item: per,
            lock: None,
            points: Default::default(),
            unlock_each: false,
            hold: false,
        }
    }

    #[test]
    fn next_point_lands_on_multiples_of_every() {
        let l = lp(1000, 10);
        let p = LoopChance {
            at: Resched::Preempt,
            every: 100,
        };
        assert_eq!(to_next_point(0, &l, p), 1000); // after item 100
        assert_eq!(to_next_point(5, &l, p), 995);
        assert_eq!(to_next_point(1000, &l, p), 0); // exactly on the point
        assert_eq!(to_next_point(1001, &l, p), 999); // next one after item 200
        let p1 = LoopChance {
            at: Resched::Preempt,
            every: 1,
        };
        assert_eq!(to_next_point(0, &l, p1), 10);
        assert_eq!(to_next_point(15, &l, p1), 5);
    }
}
