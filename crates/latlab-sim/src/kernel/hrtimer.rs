//! The hrtimer bases (kernel/time/hrtimer.c): each CPU's queue of armed high-resolution
//! timers, and which of them an hrtimer interrupt expires.
//!
//! A timer has a soft expiry (`_softexpires`, the time asked) and a hard one (`node.expires`,
//! the soft expiry plus the timer's range: `hrtimer_set_expires_range_ns`). Since 2.6.28 a
//! sleeper's range is its task's timer slack (`hrtimer_nanosleep`:
//! `hrtimer_set_expires_range_ns(&t.timer, rqtp, current->timer_slack_ns)`, 50 us by
//! default, none for an RT task); a POSIX timer has none (`common_hrtimer_arm`,
//! kernel/time/posix-timers.c: `hrtimer_set_expires`). A CPU's queue is ordered by hard
//! expiry (`timerqueue_add`: an equal key goes right of those queued) and the CPU's clock
//! event device is programmed for the first. Its interrupt (`hrtimer_interrupt`; in
//! high-resolution mode the tick is one of the queue's timers too, `tick_sched_timer`) runs
//! `__hrtimer_run_queues`, which takes the queue in order and expires every timer until the
//! first whose soft expiry has not passed (`if (basenow < hrtimer_get_softexpires_tv64(timer))
//! break;`). So a timer with slack fires at its hard expiry, unless an interrupt of the same
//! CPU comes between its soft and hard expiry with nothing unexpired queued before it (the
//! tick's next expiry included), and then it expires in that one. (6.18 kernel/time/hrtimer.c,
//! read in the index: `__hrtimer_run_queues`, `hrtimer_interrupt`, `hrtimer_nanosleep`; a
//! 2.6.29-2.6.32 kernel/hrtimer.c, also read there, has `if (rt_task(current)) slack = 0;`
//! in `hrtimer_nanosleep`.)
//!
//! The model's interrupts all run on CPU 0 (docs/ARCHITECTURE.md); each CPU's queue holds the
//! timers armed there (`switch_hrtimer_base` keeps a timer on the CPU that starts it while that
//! CPU is busy, as the sleeper's is), and an expiry is taken from its own queue only.

use super::irq::HrTimer;
use latlab_core::Nanos;

/// One armed timer.
#[derive(Clone, Copy, Debug)]
struct Armed {
    timer: HrTimer,
    /// `_softexpires`: the time asked.
    soft: Nanos,
    /// `node.expires`: the soft expiry plus the range, what the device is programmed for.
    hard: Nanos,
}

/// Every CPU's CLOCK_MONOTONIC hrtimer queue (`hrtimer_bases`: nanosleep's and
/// `timer_create(CLOCK_MONOTONIC)`'s timers).
#[derive(Debug, Default)]
pub struct HrtimerBases {
    /// Each CPU's armed timers by hard expiry, then arming order.
    cpus: Vec<Vec<Armed>>,
    /// When the tick's timer (`tick_sched_timer`, every CPU's at the same time as the model's
    /// tick) expires next: it re-arms itself a period on each time it runs.
    tick_due: Nanos,
}

impl HrtimerBases {
    /// `hrtimer_start_range_ns` on CPU `cpu`: `timer` queued to expire from `soft` to `hard`.
    pub fn start(&mut self, cpu: usize, timer: HrTimer, soft: Nanos, hard: Nanos) {
        if self.cpus.len() <= cpu {
            self.cpus.resize_with(cpu + 1, Vec::new);
        }
        let q = &mut self.cpus[cpu];
        let at = q.partition_point(|a| a.hard <= hard);
        q.insert(at, Armed { timer, soft, hard });
    }

    /// The tick's timer was re-armed for `due`.
    pub fn tick_armed(&mut self, due: Nanos) {
        self.tick_due = due;
    }

    /// The CPU whose queue holds `timer`; `None` once it has expired.
    pub fn base_of(&self, timer: HrTimer) -> Option<usize> {
        self.cpus.iter().position(|q| q.iter().any(|a| a.timer == timer))
    }

    /// The next timer `__hrtimer_run_queues` at `now` expires on CPU `cpu` (an hrtimer
    /// interrupt for `own`) or on any CPU (`None`: the tick, which each CPU takes at the same
    /// time), removed from its queue with its CPU; `None` when the run is over. Called until
    /// then, as the kernel's loop takes its queue's first timer again after each: a timer an
    /// expiry re-arms due already is taken in the same run.
    ///
    /// A CPU's queue is taken in order until a timer whose soft expiry has not passed, or one
    /// queued behind the tick's timer while that has not expired (a timer due no earlier than
    /// the tick's next expiry: an equal one taken as armed after the tick's, which re-armed a
    /// period before). A POSIX timer found due that is not `own` is left queued for its own
    /// interrupt, raised at once after this one (in the kernel this interrupt would run it):
    /// the measurements take a POSIX expiry from its interrupt's entry.
    pub fn expire_next(&mut self, cpu: Option<usize>, now: Nanos, own: Option<HrTimer>) -> Option<(usize, HrTimer)> {
        let tick = self.tick_due;
        let (first, end) = match cpu {
            Some(c) => (c, (c + 1).min(self.cpus.len())),
            None => (0, self.cpus.len()),
        };
        for c in first..end {
            let q = &mut self.cpus[c];
            for (i, a) in q.iter().enumerate() {
                if now < a.soft || (now < tick && a.hard >= tick) {
                    break;
                }
                if matches!(a.timer, HrTimer::Posix { .. }) && Some(a.timer) != own {
                    continue;
                }
                let t = a.timer;
                q.remove(i);
                return Some((c, t));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::path::Chan;

    fn sleep(n: u64) -> HrTimer {
        HrTimer::Sleep(Chan::Timer(n))
    }

    /// What one run of the queues expires, in order.
    fn run(b: &mut HrtimerBases, cpu: Option<usize>, now: Nanos, own: Option<HrTimer>) -> Vec<(usize, HrTimer)> {
        std::iter::from_fn(|| b.expire_next(cpu, now, own)).collect()
    }

    #[test]
    fn an_interrupt_expires_every_timer_whose_soft_expiry_has_passed_in_hard_order() {
        let mut b = HrtimerBases::default();
        b.tick_armed(4_000_000);
        b.start(0, sleep(1), 1_000_000, 1_050_000);
        b.start(0, sleep(2), 1_010_000, 1_020_000);
        b.start(0, sleep(3), 1_030_000, 1_080_000);
        // sleep(2)'s hard expiry: sleep(1) is due too (soft passed), sleep(3) not yet.
        assert_eq!(
            run(&mut b, Some(0), 1_020_000, Some(sleep(2))),
            [(0, sleep(2)), (0, sleep(1))]
        );
        assert_eq!(b.base_of(sleep(1)), None, "expired early: its own interrupt is gone");
        assert_eq!(b.base_of(sleep(3)), Some(0));
    }

    #[test]
    fn the_first_timer_not_yet_due_stops_the_run_even_if_later_ones_are() {
        let mut b = HrtimerBases::default();
        b.tick_armed(4_000_000);
        // By hard expiry: A (soft 1.00 ms, hard 1.02), B (no slack, 1.03), C (soft 1.00, hard 1.05).
        b.start(0, sleep(1), 1_000_000, 1_020_000);
        b.start(0, sleep(2), 1_030_000, 1_030_000);
        b.start(0, sleep(3), 1_000_000, 1_050_000);
        assert_eq!(
            run(&mut b, Some(0), 1_020_000, Some(sleep(1))),
            [(0, sleep(1))],
            "B is not due: C waits behind it"
        );
    }

    #[test]
    fn a_timer_behind_the_ticks_next_expiry_waits_for_the_tick() {
        let mut b = HrtimerBases::default();
        b.tick_armed(1_040_000);
        b.start(0, sleep(1), 1_000_000, 1_050_000);
        b.start(0, sleep(2), 1_010_000, 1_010_000);
        assert_eq!(run(&mut b, Some(0), 1_010_000, Some(sleep(2))), [(0, sleep(2))]);
        // The tick at 1.04 ms: it re-arms 4 ms on, and then sleep(1) is due.
        b.tick_armed(5_040_000);
        assert_eq!(run(&mut b, None, 1_040_000, None), [(0, sleep(1))]);
    }

    #[test]
    fn each_cpu_expires_only_its_own_timers_and_the_tick_every_cpus() {
        let mut b = HrtimerBases::default();
        b.tick_armed(4_000_000);
        b.start(0, sleep(1), 1_000_000, 1_050_000);
        b.start(1, sleep(2), 1_010_000, 1_010_000);
        b.start(1, sleep(3), 1_000_000, 1_050_000);
        assert_eq!(
            run(&mut b, Some(1), 1_010_000, Some(sleep(2))),
            [(1, sleep(2)), (1, sleep(3))]
        );
        assert_eq!(b.base_of(sleep(1)), Some(0), "CPU 0's timer stays");
        b.start(1, sleep(4), 1_900_000, 1_950_000);
        b.tick_armed(8_000_000);
        assert_eq!(run(&mut b, None, 4_000_000, None), [(0, sleep(1)), (1, sleep(4))]);
    }

    #[test]
    fn a_due_posix_timer_is_left_for_its_own_interrupt() {
        let mut b = HrtimerBases::default();
        b.tick_armed(4_000_000);
        let p = HrTimer::Posix { id: 0, due: 1_000_000 };
        b.start(0, p, 1_000_000, 1_000_000);
        b.start(0, sleep(1), 1_000_000, 1_000_000);
        assert_eq!(run(&mut b, Some(0), 1_000_000, Some(sleep(1))), [(0, sleep(1))]);
        assert_eq!(run(&mut b, Some(0), 1_000_000, Some(p)), [(0, p)]);
    }
}
