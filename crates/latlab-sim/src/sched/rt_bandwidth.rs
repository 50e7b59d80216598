//! RT throttling (`rt_bandwidth`, kernel/sched_rt.c from 2.6.25, `sched_rt_runtime_us` 950000
//! and `sched_rt_period_us` 1000000 by default): the RT class may run `runtime` of every
//! `period`; once its tasks used that (`sched_rt_runtime_exceeded`), the class is throttled
//! (`rt_rq->rt_throttled`) and its tasks are not picked until the period timer
//! (`do_sched_rt_period_timer`) has paid the time back (`rt_time -= min(rt_time, runtime)`
//! each period).
//!
//! Two generations: 2.6.25-6.11 throttle the class even when no fair task waits (the CPU
//! idles the rest of the period: `idle_when_throttled`); 6.12+ replaced that with the fair
//! deadline server (`dl_server`, kernel/sched/deadline.c, `fair_server` 50 ms of every
//! 1 s), which runs fair tasks for their share and lets the RT class run on when none
//! waits. The model's 6.x (`eevdf`) kernels follow the latter as this same budget without
//! the idling; the deadline server's own EDF placement against other deadline tasks is
//! not modelled (no variant has SCHED_DEADLINE tasks).
//!
//! The RT class's time is charged at each tick from when the task was picked (as
//! `update_curr_rt` from `task_tick_rt`); an RT task that runs and sleeps between two ticks
//! is not charged (the model's `rt_since` only starts at a pick).

use latlab_core::Nanos;

/// `sched_rt_runtime_us` default: 950 ms.
pub const RT_RUNTIME_NS: Nanos = 950_000_000;
/// `sched_rt_period_us` default: 1 s.
pub const RT_PERIOD_NS: Nanos = 1_000_000_000;

/// The RT class's bandwidth on one runqueue.
#[derive(Clone, Debug)]
pub struct RtBandwidth {
    runtime: Nanos,
    period: Nanos,
    /// 2.6.25-6.11: a throttled class leaves the CPU idle when no fair task waits.
    pub idle_when_throttled: bool,
    /// RT time used, not yet paid back (`rt_rq->rt_time`).
    rt_time: Nanos,
    /// The period `rt_time` was last paid back in.
    period_no: u64,
    throttled: bool,
}

impl RtBandwidth {
    /// The defaults (950 ms of every 1 s).
    pub fn new(idle_when_throttled: bool) -> Self {
        RtBandwidth {
            runtime: RT_RUNTIME_NS,
            period: RT_PERIOD_NS,
            idle_when_throttled,
            rt_time: 0,
            period_no: 0,
            throttled: false,
        }
    }

    /// The period timer up to `now`: pay back `runtime` for every period begun since;
    /// true when that lifted the throttle.
    pub fn period_timer(&mut self, now: Nanos) -> bool {
        let no = now / self.period;
        if no <= self.period_no {
            return false;
        }
        let overrun = no - self.period_no;
        self.period_no = no;
        self.rt_time -= self.rt_time.min(overrun.saturating_mul(self.runtime));
        if self.throttled && self.rt_time < self.runtime {
            self.throttled = false;
            return true;
        }
        false
    }

    /// Charge `ran` ns of RT time at `now`; true when the class just became throttled.
    pub fn charge(&mut self, ran: Nanos, now: Nanos) -> bool {
        self.period_timer(now);
        self.rt_time += ran;
        if !self.throttled && self.rt_time > self.runtime {
            self.throttled = true;
            return true;
        }
        false
    }

    /// Is the class throttled at `now`?
    pub fn throttled(&mut self, now: Nanos) -> bool {
        self.period_timer(now);
        self.throttled
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_class_is_throttled_past_its_runtime_and_freed_by_the_next_period() {
        let mut b = RtBandwidth::new(true);
        assert!(!b.charge(900_000_000, 900_000_000));
        assert!(b.charge(60_000_000, 960_000_000));
        assert!(b.throttled(990_000_000));
        assert!(!b.throttled(1_000_000_000));
        assert!(!b.charge(10_000_000, 1_010_000_000));
    }

    /// CPU time of a SCHED_FIFO 50 hog and a SCHED_OTHER hog over 3 s on one CPU, the RT
    /// class throttled by `bw` or not.
    fn hogs(bw: Option<RtBandwidth>) -> (Nanos, Nanos) {
        use crate::cpu::tests::{kstate, machine, variant_with};
        use crate::cpu::Kernel;
        use crate::kernel::task::Policy;
        use crate::sched::rt::WithRt;
        use crate::variant::{PreemptModel, SchedClass};
        use crate::workload::{Action, ProgCx, Program, TaskSpec};
        struct Hog;
        impl Program for Hog {
            fn next(&mut self, _cx: &mut ProgCx) -> Action {
                Action::Compute(1_000_000)
            }
        }
        let s = WithRt::new(crate::sched::cfs::Cfs::new(crate::sched::cfs::tests::unpatched()));
        let s = match bw {
            Some(b) => s.with_bandwidth(b),
            None => s,
        };
        let v = variant_with(SchedClass::Cfs, PreemptModel::Full, &[]);
        let rng = crate::engine::rng_for(7, crate::engine::RngStream::Workload);
        let mut k: Kernel = Kernel::new(v, machine(), Box::new(s), kstate(), rng);
        let rt = TaskSpec {
            policy: Policy::Fifo,
            rt_priority: 50,
            ..TaskSpec::user("fifo", Box::new(Hog))
        };
        k.spawn(rt, None);
        k.spawn(TaskSpec::user("other", Box::new(Hog)), None);
        k.run_until(3 * RT_PERIOD_NS, |_| {});
        let cpu = |comm: &str| k.tasks.iter().find(|t| t.comm == comm).map_or(0, |t| t.cpu_ns);
        (cpu("fifo"), cpu("other"))
    }

    #[test]
    fn a_throttled_fifo_hog_leaves_a_fair_task_the_rest_of_each_period() {
        let (rt, fair) = hogs(Some(RtBandwidth::new(true)));
        // 50 ms of each of the 3 periods, less the tick the throttle is noticed at (10 ms).
        assert!((100_000_000..=160_000_000).contains(&fair), "fair {fair} ns");
        assert!(rt <= 3 * (RT_RUNTIME_NS + 10_000_000), "rt {rt} ns");
        // Without throttling the FIFO hog keeps the CPU.
        let (_, fair) = hogs(None);
        assert_eq!(fair, 0);
    }
}
