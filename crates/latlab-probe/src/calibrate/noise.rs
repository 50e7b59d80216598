//! Gaps in a busy CPU's execution: a user-space loop on each CPU reading the clock, which
//! counts every stretch it did not run (interrupts, the hypervisor's steal, SMIs, other
//! tasks), tells the ones where the scheduler ran another task (its context-switch counts
//! moved) from the others, and, with tracefs, which gaps held a local timer interrupt, with
//! the interrupt's handler time (`irq_vectors:local_timer_entry/exit`) and its timers'
//! (`timer:hrtimer_expire_entry/exit`).

use crate::clock::mono_ns;
use crate::sched_trace::{event_id, Instance};

/// One stretch the loop did not run.
#[derive(Clone, Copy, Debug)]
pub struct Gap {
    pub start_ns: u64,
    pub end_ns: u64,
    /// The thread was switched out meanwhile (another task ran: the scheduler's, not noise).
    pub switched: bool,
    /// It held a local timer interrupt (known only when traced: [`detect_traced`]).
    pub timer: bool,
}

impl Gap {
    pub fn len_ns(&self) -> u64 {
        self.end_ns - self.start_ns
    }
}

/// Most gaps kept per CPU (a tick every millisecond for 10 minutes).
const MAX_GAPS: usize = 600_000;

/// The thread's context switches so far (voluntary and involuntary).
fn switches() -> i64 {
    // SAFETY: a zeroed rusage filled by the kernel for the calling thread.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    ru.ru_nvcsw + ru.ru_nivcsw
}

/// The gaps of at least `threshold_ns` on the calling thread's CPU for `duration_ns`.
fn detect_here(duration_ns: u64, threshold_ns: u64) -> Vec<Gap> {
    let mut gaps = Vec::new();
    let end = mono_ns() + duration_ns;
    let mut sw = switches();
    let mut prev = mono_ns();
    loop {
        let now = mono_ns();
        if now - prev >= threshold_ns {
            let after = switches();
            if gaps.len() < MAX_GAPS {
                gaps.push(Gap {
                    start_ns: prev,
                    end_ns: now,
                    switched: after != sw,
                    timer: false,
                });
            }
            sw = after;
            // The check's own time is no gap.
            prev = mono_ns();
            continue;
        }
        if now >= end || crate::signals::stop_requested() {
            return gaps;
        }
        prev = now;
    }
}

/// Each measured CPU with its gaps.
pub type CpuGaps = Vec<(u32, Vec<Gap>)>;

/// The gaps on each of `cpus` (a pinned thread each, all at once) over `duration_ns`.
pub fn detect(cpus: &[u32], duration_ns: u64, threshold_ns: u64) -> Result<CpuGaps, String> {
    std::thread::scope(|s| {
        let threads: Vec<_> = cpus
            .iter()
            .map(|&cpu| {
                s.spawn(move || -> Result<(u32, Vec<Gap>), String> {
                    crate::caps::pin_to(cpu as usize)?;
                    Ok((cpu, detect_here(duration_ns, threshold_ns)))
                })
            })
            .collect();
        threads
            .into_iter()
            .map(|t| t.join().map_err(|_| "gap detector panicked".to_string())?)
            .collect()
    })
}

/// Without tracefs, tell the tick's gaps by their rhythm: mark as `timer` each gap not
/// switched out that has another such gap one tick `period_ns` before or after it on its CPU,
/// within `tol_ns`. `gaps` in time order, as [`detect`] gives them.
pub fn mark_ticks(gaps: &mut [Gap], period_ns: u64, tol_ns: u64) {
    let starts: Vec<u64> = gaps.iter().filter(|g| !g.switched).map(|g| g.start_ns).collect();
    let near = |t: u64| {
        let j = starts.partition_point(|&x| x < t.saturating_sub(tol_ns));
        j < starts.len() && starts[j] <= t + tol_ns
    };
    for g in gaps.iter_mut().filter(|g| !g.switched) {
        let s = g.start_ns;
        g.timer = near(s + period_ns) || (s >= period_ns && near(s - period_ns));
    }
}

/// The gap-length quantiles `[host.noise.lengths]` keeps, p50, p90, p99 and p99.9 of
/// `lens_ns`, us (by nearest rank, four significant digits); None when there is no gap.
pub fn length_quantiles(lens_ns: &[u64]) -> Option<[f64; 4]> {
    if lens_ns.is_empty() {
        return None;
    }
    let mut v = lens_ns.to_vec();
    v.sort_unstable();
    let at = |q: f64| {
        let rank = (q * v.len() as f64).ceil() as usize;
        super::stats::round_sig(v[rank.clamp(1, v.len()) - 1] as f64 / 1000.0)
    };
    Some([at(0.5), at(0.9), at(0.99), at(0.999)])
}

/// Handler spans of one CPU from a raw trace: (entry, exit) pairs of the events `entry` and
/// `exit` (ids), in time order.
pub fn spans(raw: &str, entry: u32, exit: u32) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    let mut open: Option<u64> = None;
    for line in raw.lines() {
        // `pid cpu ts_ns type: N`
        let mut w = line.split_whitespace();
        let (Some(_pid), Some(_cpu), Some(ts), Some("type:"), Some(ty)) =
            (w.next(), w.next(), w.next(), w.next(), w.next())
        else {
            continue;
        };
        let (Ok(ts), Ok(ty)) = (ts.parse::<u64>(), ty.parse::<u32>()) else {
            continue;
        };
        if ty == entry {
            open = Some(ts);
        } else if ty == exit {
            if let Some(start) = open.take() {
                out.push((start, ts));
            }
        }
    }
    out
}

/// What the trace of the timer interrupts on the measured CPUs gave.
#[derive(Debug, Default)]
pub struct TimerTrace {
    /// local_timer_entry to exit, ns, every one.
    pub handler_ns: Vec<f64>,
    /// hrtimer_expire_entry to exit, ns, every one.
    pub hrtimer_ns: Vec<f64>,
    /// Of each gap that held exactly one timer interrupt: the gap less its handler (the
    /// interrupt's entry and exit as the interrupted code felt them), ns.
    pub entry_exit_ns: Vec<f64>,
    /// Those gaps whole, ns.
    pub whole_ns: Vec<f64>,
}

const TIMER_EVENTS: [&str; 4] = [
    "irq_vectors/local_timer_entry",
    "irq_vectors/local_timer_exit",
    "timer/hrtimer_expire_entry",
    "timer/hrtimer_expire_exit",
];

/// [`detect`] with the timer interrupts traced on the same CPUs: the gaps, and the
/// handlers' times matched to them. `Err` when tracefs or its events are not usable (not
/// root, no tracefs, no `irq_vectors` events: not x86), with the reason.
pub fn detect_traced(cpus: &[u32], duration_ns: u64, threshold_ns: u64) -> Result<(CpuGaps, TimerTrace), String> {
    let mut inst = Instance::create()?;
    let list: Vec<usize> = cpus.iter().map(|&c| c as usize).collect();
    inst.setup(&list, 4096, &TIMER_EVENTS)?;
    let ids: Vec<u32> = TIMER_EVENTS
        .iter()
        .map(|e| event_id(&inst, e))
        .collect::<Result<_, _>>()?;
    inst.record(true)?;
    let gaps = detect(cpus, duration_ns, threshold_ns);
    inst.record(false)?;
    let mut gaps = gaps?;
    let mut t = TimerTrace::default();
    for (cpu, cpu_gaps) in &mut gaps {
        let raw = inst.raw(*cpu as usize)?;
        let irqs = spans(&raw, ids[0], ids[1]);
        t.handler_ns.extend(irqs.iter().map(|(a, b)| (b - a) as f64));
        t.hrtimer_ns
            .extend(spans(&raw, ids[2], ids[3]).iter().map(|(a, b)| (b - a) as f64));
        for g in cpu_gaps.iter_mut().filter(|g| !g.switched) {
            let inside: Vec<&(u64, u64)> = irqs
                .iter()
                .filter(|(a, b)| *a >= g.start_ns && *b <= g.end_ns)
                .collect();
            g.timer = !inside.is_empty();
            if let [(a, b)] = inside[..] {
                t.whole_ns.push(g.len_ns() as f64);
                t.entry_exit_ns.push((g.len_ns() - (b - a)) as f64);
            }
        }
    }
    inst.remove()?;
    Ok((gaps, t))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_lines_pair_into_spans() {
        let raw = "# tracer: nop\n21262 0 1000 type: 165\n21262 0 3500 type: 164\n\
                   1 0 4000 type: 164\n1 0 5000 type: 165\n1 0 5100 type: 7\n1 0 9000 type: 164\n";
        assert_eq!(spans(raw, 165, 164), vec![(1000, 3500), (5000, 9000)]);
        assert!(spans("garbage\n", 1, 2).is_empty());
    }

    #[test]
    fn gap_lengths_give_their_quantiles_by_nearest_rank() {
        // 1..=1000 us: p50 the 500th, p90 the 900th, p99 the 990th, p99.9 the 999th.
        let lens: Vec<u64> = (1..=1000u64).rev().map(|us| us * 1000).collect();
        assert_eq!(length_quantiles(&lens), Some([500.0, 900.0, 990.0, 999.0]));
        // Few gaps: every quantile at or below the longest, in order.
        assert_eq!(length_quantiles(&[3_000, 1_500]), Some([1.5, 3.0, 3.0, 3.0]));
        assert_eq!(length_quantiles(&[1_234_567]), Some([1235.0; 4]));
        assert_eq!(length_quantiles(&[]), None);
    }

    #[test]
    fn the_ticks_are_the_gaps_one_period_apart() {
        let gap = |start_ns: u64, switched: bool| Gap {
            start_ns,
            end_ns: start_ns + 2_000,
            switched,
            timer: false,
        };
        // Ticks every 4 ms (one of them switched out), and stray gaps between.
        let mut gaps = vec![
            gap(1_000_000, false),
            gap(2_500_000, false),
            gap(5_000_010, false),
            gap(9_000_000, true),
            gap(11_000_000, false),
            gap(13_000_005, false),
            gap(17_000_000, false),
        ];
        mark_ticks(&mut gaps, 4_000_000, 20_000);
        let ticks: Vec<bool> = gaps.iter().map(|g| g.timer).collect();
        assert_eq!(ticks, [true, false, true, false, false, true, true]);
    }

    #[test]
    fn a_busy_loop_keeps_gaps_in_order_and_above_the_threshold() {
        let cpu = crate::parse::allowed_cpus()[0] as u32;
        let gaps = detect(&[cpu], 20_000_000, 1_000).unwrap();
        assert_eq!(gaps.len(), 1);
        for w in gaps[0].1.windows(2) {
            assert!(w[0].end_ns <= w[1].start_ns);
        }
        assert!(gaps[0].1.iter().all(|g| g.len_ns() >= 1_000));
    }
}
