//! The CPU loop's side of timers: a task's `nanosleep` and POSIX timer armed on the timer
//! base the assembly built (`kernel::state::TimerBase`), and an hrtimer interrupt expiring
//! what the CPU's queue holds due (`kernel::hrtimer`: soft and hard expiries, timer slack).

use super::{Ev, Kernel};
use crate::kernel::path::Chan;
use crate::kernel::task::TaskId;
use crate::kernel::tracepoint::{self, Event};
use crate::kernel::{HrTimer, Irq};
use latlab_core::Nanos;

impl<S: tracepoint::Sink> Kernel<S> {
    /// Task `cur` sleeps `ns` (nanosleep): the channel its timer wakes.
    pub(super) fn arm_timer(&mut self, cur: TaskId, ns: Nanos) -> Chan {
        self.next_timer_token += 1;
        let chan = Chan::Timer(self.next_timer_token);
        let due = self.now + ns;
        if self.st.timers.own_interrupt() {
            // hrtimer_nanosleep: queued on this CPU from `due` to `due` + the task's timer
            // slack, the interrupt programmed for the latter (kernel/hrtimer.rs).
            let hard = due + self.st.timers.sleep_slack(self.tasks[cur].policy);
            let t = HrTimer::Sleep(chan);
            self.st.hrtimers.start(self.cpu, t, due, hard);
            self.q.schedule(hard, Ev::Irq(Irq::Hrtimer(t)));
        } else {
            // The 2.4 timer list: timers fire from the tick, at the next jiffy.
            self.q.schedule(self.st.timers.fires_at(due), Ev::Wake(chan));
        }
        chan
    }

    /// Arm POSIX timer `id` on CPU `cpu` for its expiry due at `due`: with hrtimers queued
    /// without a range (`common_hrtimer_arm`), on the 2.4-style timer list at the next tick.
    pub(super) fn arm_posix(&mut self, cpu: usize, id: usize, due: Nanos) {
        let t = HrTimer::Posix { id, due };
        if self.st.timers.own_interrupt() {
            self.st.hrtimers.start(cpu, t, due, due);
        }
        self.q.schedule(self.st.timers.fires_at(due), Ev::Irq(Irq::Hrtimer(t)));
    }

    /// `__hrtimer_run_queues` at `now` on CPU `cpu`'s queue (the interrupt of its timer
    /// `own`) or every CPU's (the tick): each timer expired runs its function.
    pub(super) fn run_hrtimers(&mut self, cpu: Option<usize>, now: Nanos, own: Option<HrTimer>) {
        while let Some((c, t)) = self.st.hrtimers.expire_next(cpu, now, own) {
            self.expire_hrtimer(c, t);
        }
    }

    /// An expired timer's function, the timer on CPU `cpu`: `hrtimer_wakeup` of a sleeper, or
    /// `posix_timer_fn`.
    pub(super) fn expire_hrtimer(&mut self, cpu: usize, t: HrTimer) {
        match t {
            HrTimer::Sleep(chan) => self.wake(chan),
            HrTimer::Posix { id, due } => {
                // hrtimer_forward: the next expiry a period on, on the same CPU.
                self.arm_posix(cpu, id, due + self.st.posix.period(id));
                match self.st.posix.expire(id, due) {
                    Some(target) => self.wake(Chan::Signal(target)),
                    None => trace_event!(self, TIMER_OVERRUN, Event::TimerOverrun),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{machine, percpu_eevdf_kernel, variant_with, Log};
    use super::*;
    use crate::kernel::task::Policy;
    use crate::machine::MachineProfile;
    use crate::variant::{PreemptModel, SchedClass, TimerSubsystem, DEFAULT_TIMER_SLACK_NS};
    use crate::workload::{Action, ProgCx, Program, TaskSpec};
    use std::cell::RefCell;
    use std::rc::Rc;

    /// Every event a [`Log`] was given: its time, CPU, and the event.
    type Events = Rc<RefCell<Vec<(Nanos, usize, Event)>>>;

    /// Each interrupt (its raise time), each wakeup (the task and its time).
    type IrqsAndWakeups = (Vec<(Irq, Nanos)>, Vec<(TaskId, Nanos)>);

    /// A kernel of `base` with hrtimers (EEVDF under the RT class, one CPU of the test
    /// machine, HZ 250: ticks every 4 ms), its every event logged.
    fn hr_kernel(base: &str) -> (Kernel, Events) {
        let m = MachineProfile { cpus: 1, ..machine() };
        let mut v = variant_with(SchedClass::Eevdf, PreemptModel::None, &[]);
        v.timer = TimerSubsystem::Hrtimer;
        v.base = base.into();
        v.hz = 250;
        let mut k = percpu_eevdf_kernel(m, v);
        let log = Rc::new(RefCell::new(Vec::new()));
        k.tp.attach(Box::new(Log(log.clone())));
        (k, log)
    }

    /// Sleeps until `until` (from time 0, a nanosleep of that long), then exits.
    struct SleepOnce(Option<Nanos>);

    impl Program for SleepOnce {
        fn next(&mut self, cx: &mut ProgCx) -> Action {
            match self.0.take() {
                Some(until) => Action::Sleep(until - cx.now),
                None => Action::Exit,
            }
        }
    }

    /// Starts a POSIX timer of `period` (signal to itself), then computes.
    struct PosixOnce(Option<Nanos>);

    impl Program for PosixOnce {
        fn next(&mut self, _cx: &mut ProgCx) -> Action {
            match self.0.take() {
                Some(period) => Action::TimerCreate { period },
                None => Action::Compute(u64::MAX / 4),
            }
        }
    }

    fn sleeper(comm: &str, policy: Policy, until: Nanos) -> TaskSpec {
        TaskSpec {
            policy,
            rt_priority: if policy == Policy::Other { 0 } else { 50 },
            ..TaskSpec::user(comm, Box::new(SleepOnce(Some(until))))
        }
    }

    /// Each hrtimer or tick interrupt's raise time, and each wakeup's time (the task).
    fn interrupts_and_wakeups(log: &[(Nanos, usize, Event)]) -> IrqsAndWakeups {
        let irqs = log
            .iter()
            .filter_map(|&(_, _, e)| match e {
                Event::IrqEntry { irq, raised, .. } => Some((irq, raised)),
                _ => None,
            })
            .collect();
        let woken = log
            .iter()
            .filter_map(|&(now, _, e)| match e {
                Event::SchedWaking { task } => Some((task, now)),
                _ => None,
            })
            .collect();
        (irqs, woken)
    }

    fn hrtimer_irqs(irqs: &[(Irq, Nanos)]) -> Vec<Nanos> {
        irqs.iter()
            .filter(|(i, _)| matches!(i, Irq::Hrtimer(_)))
            .map(|&(_, at)| at)
            .collect()
    }

    #[test]
    fn a_fair_sleepers_timer_fires_its_slack_late_when_nothing_else_fires() {
        let (mut k, log) = hr_kernel("6.18");
        k.spawn(sleeper("other", Policy::Other, 1_500_000), None);
        k.run_until(3_000_000, |_| {});
        let (irqs, woken) = interrupts_and_wakeups(&log.borrow());
        assert_eq!(hrtimer_irqs(&irqs), [1_500_000 + DEFAULT_TIMER_SLACK_NS]);
        assert_eq!(woken.len(), 1);
        assert!(woken[0].1 > 1_550_000, "woken at {}", woken[0].1);
    }

    #[test]
    fn an_rt_sleeper_and_a_posix_timer_have_no_slack() {
        let (mut k, log) = hr_kernel("6.18");
        k.spawn(sleeper("fifo", Policy::Fifo, 1_500_000), None);
        k.spawn(TaskSpec::user("posix", Box::new(PosixOnce(Some(1_000_000)))), None);
        k.run_until(2_500_000, |_| {});
        let (irqs, _) = interrupts_and_wakeups(&log.borrow());
        let posix: Vec<Nanos> = irqs
            .iter()
            .filter_map(|&(i, at)| match i {
                Irq::Hrtimer(HrTimer::Posix { due, .. }) => Some(at - due),
                _ => None,
            })
            .collect();
        assert!(posix.len() >= 2 && posix.iter().all(|&late| late == 0), "{posix:?}");
        assert!(
            irqs.contains(&(Irq::Hrtimer(HrTimer::Sleep(Chan::Timer(1))), 1_500_000)),
            "{irqs:?}"
        );
    }

    #[test]
    fn another_timers_interrupt_inside_the_slack_expires_the_fair_sleeper_with_it() {
        let (mut k, log) = hr_kernel("6.18");
        // Soft 1.50 ms, hard 1.55 ms; the FIFO task's timer (no slack) at 1.52 ms.
        k.spawn(sleeper("other", Policy::Other, 1_500_000), None);
        k.spawn(sleeper("fifo", Policy::Fifo, 1_520_000), None);
        k.run_until(3_000_000, |_| {});
        let (irqs, woken) = interrupts_and_wakeups(&log.borrow());
        assert_eq!(hrtimer_irqs(&irqs), [1_520_000], "one interrupt, none at 1.55 ms");
        assert_eq!(woken.len(), 2);
        assert!(
            woken.iter().all(|&(_, at)| at > 1_520_000 && at < 1_550_000),
            "{woken:?}"
        );
    }

    #[test]
    fn the_tick_inside_the_slack_expires_the_fair_sleeper() {
        let (mut k, log) = hr_kernel("6.18");
        // Soft 3.98 ms, hard 4.03 ms; the tick (tick_sched_timer) at 4 ms.
        k.spawn(sleeper("other", Policy::Other, 3_980_000), None);
        k.run_until(6_000_000, |_| {});
        let (irqs, woken) = interrupts_and_wakeups(&log.borrow());
        assert!(hrtimer_irqs(&irqs).is_empty(), "{irqs:?}");
        assert!(irqs.contains(&(Irq::Tick, 4_000_000)));
        assert_eq!(woken.len(), 1);
        assert!(woken[0].1 > 4_000_000 && woken[0].1 < 4_030_000, "{woken:?}");
    }

    #[test]
    fn a_kernel_before_2_6_28_has_no_timer_slack() {
        let (mut k, log) = hr_kernel("2.6.20");
        k.spawn(sleeper("other", Policy::Other, 1_500_000), None);
        k.run_until(3_000_000, |_| {});
        let (irqs, _) = interrupts_and_wakeups(&log.borrow());
        assert_eq!(hrtimer_irqs(&irqs), [1_500_000]);
    }
}
