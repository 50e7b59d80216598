//! The CPU loop's side of PREEMPT_RT's sleeping locks: at a step boundary it asks
//! `kernel/rtmutex.rs` for the lock the next step needs (blocking the task when another owns
//! it), hands a released lock to its top waiter, and makes the priority changes the boost
//! and deboost ask (`rt_mutex_setprio`). Which locks sleep is the variant's
//! (`kernel::preempt::spins`).

use super::Kernel;
use crate::kernel::lock::Lock;
use crate::kernel::path::Chan;
use crate::kernel::rtmutex::{self, Acquire, Release, Setprio};
use crate::kernel::task::{Exec, TaskId, TaskState};
use crate::kernel::tracepoint::{self, Event};
use crate::kernel::SwitchReason;

impl<S: tracepoint::Sink> Kernel<S> {
    /// `rt_spin_lock(lock)` by the current task `t`, whose step needing it is set up: if
    /// another task owns the lock, `t` sleeps on it (its step runs once the lock is handed
    /// over) and the owners are boosted.
    pub(super) fn rt_lock(&mut self, t: TaskId, lock: Lock) {
        let Acquire::Blocked { owner, boosts } = self.st.rtmutex.lock(lock, t, self.tasks[t].cpu, &self.tasks) else {
            // Taken: `migrate_disable()` after `rtlock_lock()`.
            self.tasks[t].migration_disabled = true;
            return;
        };
        self.block_on(t, Chan::RtMutex(lock));
        trace_event!(self, PI_BLOCK, Event::PiBlock { task: t, lock, owner });
        self.setprio(&boosts);
        self.schedule(SwitchReason::Block);
    }

    /// `rt_spin_unlock(lock)` by task `t`.
    pub(super) fn rt_unlock(&mut self, t: TaskId, lock: Lock) {
        let r = self.st.rtmutex.unlock(lock, t, &self.tasks);
        // `migrate_enable()` once it owns none.
        self.tasks[t].migration_disabled = self.st.rtmutex.owns_any(t);
        self.released(r);
    }

    /// The sleeping locks task `t` still owns, released: its path blocks or ends.
    pub(super) fn rt_unlock_all(&mut self, t: TaskId) {
        if !self.st.rtmutex.owns_any(t) {
            return;
        }
        for r in self.st.rtmutex.unlock_all(t, &self.tasks) {
            self.released(r);
        }
        self.tasks[t].migration_disabled = false;
    }

    /// Deboost, and wake the new owner: its step starts now.
    fn released(&mut self, r: Release) {
        self.setprio(&r.setprio);
        if let Some(n) = r.next_owner {
            if let Exec::Kernel { step: Some(s), .. } = &mut self.tasks[n].exec {
                s.since = self.now;
            }
            trace_event!(self, SCHED_WAKING, Event::SchedWaking { task: n });
            self.tasks[n].state = TaskState::Runnable;
            // Woken in `rtlock_slowlock`, placed as any wakee; it disables migration once
            // the lock is its own, as it runs on.
            self.enqueue_woken(n, false, self.cpu);
            self.tasks[n].migration_disabled = true;
        }
    }

    /// `rt_mutex_setprio` for each change; a runnable task raised above what its CPU runs
    /// gets that CPU rescheduled.
    fn setprio(&mut self, changes: &[Setprio]) {
        for &s in changes {
            rtmutex::setprio(&mut self.tasks, &mut *self.sched, s, self.now);
            let t = s.task;
            let c = usize::from(self.tasks[t].cpu);
            let cur = self.ext(self.cpus[c].current);
            if self.tasks[t].state == TaskState::Runnable
                && cur != t
                && self.sched.wakeup_preempt(&self.tasks, t, cur, self.now)
            {
                self.resched_curr(c, false);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{kstate_on, machine, variant_with, Log};
    use super::super::Kernel;
    use crate::kernel::lock::Lock;
    use crate::kernel::path::{Script, Work};
    use crate::kernel::task::Policy;
    use crate::kernel::task::TaskId;
    use crate::kernel::tracepoint::Event;
    use crate::sched::eevdf::Eevdf;
    use crate::sched::rt::WithRt;
    use crate::variant::{EevdfTunables, LockFlavour, PreemptModel, SchedClass};
    use crate::workload::{Action, ProgCx, Program, TaskSpec};
    use latlab_core::Nanos;
    use std::cell::Cell;
    use std::rc::Rc;

    /// Sleep `sleep` ns (0: none), then each action in turn; the time the last one returned
    /// goes to `done`.
    struct Prog {
        sleep: Nanos,
        then: Vec<Action>,
        done: Rc<Cell<Nanos>>,
        phase: usize,
    }

    impl Program for Prog {
        fn next(&mut self, cx: &mut ProgCx) -> Action {
            self.phase += 1;
            if self.phase == 1 && self.sleep > 0 {
                return Action::Sleep(self.sleep);
            }
            if self.then.is_empty() {
                self.done.set(cx.now);
                return Action::Exit;
            }
            self.then.remove(0)
        }
    }

    fn task(comm: &str, policy: Policy, prio: u32, sleep: Nanos, then: Vec<Action>) -> (TaskSpec, Rc<Cell<Nanos>>) {
        let done = Rc::new(Cell::new(0));
        let prog = Prog {
            sleep,
            then,
            done: done.clone(),
            phase: 0,
        };
        let spec = TaskSpec {
            policy,
            rt_priority: prio,
            ..TaskSpec::user(comm, Box::new(prog))
        };
        (spec, done)
    }

    fn locked(func: &'static str, ns: Nanos) -> Action {
        Action::Syscall(Box::new(Script {
            name: func,
            steps: smallvec::smallvec![Work::locked(func, ns, Lock::Test, false)],
        }))
    }

    /// How long a SCHED_FIFO 90 task, woken at the 10 ms tick, waits for a sleeping lock a
    /// SCHED_OTHER task has held since 0 for a 30 ms critical section, while a SCHED_FIFO 50
    /// task woken at the same tick computes for 200 ms; with or without priority
    /// inheritance, on one CPU under PREEMPT_RT. The `PiBlock` tracepoint names the lock and
    /// its owner.
    fn inversion(pi: bool) -> Nanos {
        let mut v = variant_with(SchedClass::Eevdf, PreemptModel::Full, &[]);
        let tun = EevdfTunables {
            base_slice_ns: 700_000,
            run_to_parity: true,
            place_lag: true,
        };
        v.eevdf = Some(tun);
        v.hardirq_threads = true;
        v.locks = LockFlavour::Sleeping;
        assert!(v.validate().is_ok(), "{:?}", v.validate());
        let m = machine();
        let mut st = kstate_on(&m, latlab_swap::by_name("scan-2.4", 16_384).unwrap());
        st.rtmutex.no_pi = !pi;
        let hz = v.hz;
        let mut k: Kernel = Kernel::new(
            v,
            m,
            Box::new(WithRt::new(Eevdf::new(tun, hz))),
            st,
            crate::engine::rng_for(7, crate::engine::RngStream::Workload),
        );
        let (low, _) = task("low", Policy::Other, 0, 0, vec![locked("low_cs", 30_000_000)]);
        let (high, high_done) = task("high", Policy::Fifo, 90, 1_000_000, vec![locked("high_cs", 10_000)]);
        let (hog, _) = task("hog", Policy::Fifo, 50, 1_000_000, vec![Action::Compute(200_000_000)]);
        let log = Rc::new(std::cell::RefCell::new(Vec::new()));
        k.tp.attach(Box::new(Log(log.clone())));
        let low = k.spawn(low, None);
        let high = k.spawn(high, None);
        k.spawn(hog, None);
        // 5 ms in, the low task owns the lock: its migration is disabled (rt_spin_lock's
        // migrate_disable()) until it unlocks.
        k.run_until(5_000_000, |_| {});
        assert!(k.tasks[k.pids[&low]].migration_disabled);
        k.run_until(2_000_000_000, |_| {});
        assert!(
            k.tasks.iter().all(|t| !t.migration_disabled),
            "every lock released, migration enabled"
        );
        // The high task blocked once, on the test lock, owned by the low one.
        let blocks: Vec<(TaskId, Lock, TaskId)> = log
            .borrow()
            .iter()
            .filter_map(|(_, _, e)| match *e {
                Event::PiBlock { task, lock, owner } => Some((task, lock, owner)),
                _ => None,
            })
            .collect();
        assert_eq!(blocks, [(k.pids[&high], Lock::Test, k.pids[&low])]);
        assert!(high_done.get() > 0, "the high task finished");
        // Woken at the first tick after its 1 ms sleep.
        high_done.get() - k.tick_ns
    }

    #[test]
    fn priority_inheritance_bounds_an_inversion_by_the_owners_critical_section() {
        let with = inversion(true);
        // The owner, boosted to FIFO 90, runs out the 20 ms left of its section before the hog.
        assert!((19_000_000..=31_000_000).contains(&with), "with PI: {with} ns");
        // Without PI the FIFO 50 hog runs first, all 200 ms of it, then the owner's 20 ms.
        let without = inversion(false);
        assert!(without >= 200_000_000, "without PI: {without} ns");
    }
}
