//! The interrupt entry and exit an idle CPU pays (`idle_irq_entry_exit_ns`).
//!
//! `irq_entry_exit_ns` is timed on busy CPUs (a busy loop's gap around a local timer
//! interrupt, less the handler): on a KVM guest that gap holds the vCPU's exit to the host
//! for the emulated LAPIC timer and its re-entry. A CPU in its idle loop takes another
//! path: a halted vCPU is woken by the host (halt-polling, a posted interrupt), a bare-metal
//! one leaves its C-state (cpuidle's exit latency), and the tick is restarted on the way out
//! of NOHZ idle. So this is measured apart, where the model charges it: a thread pinned to
//! one CPU sleeps to absolute times (`clock_nanosleep(TIMER_ABSTIME)`, timer slack 1 ns), and
//! tracefs records that CPU's `irq_vectors:local_timer_entry`/`exit` and `sched:sched_switch`
//! on the same clock (`trace_clock mono`). For every wakeup whose timer interrupt found the
//! CPU in its idle task (the event's pid 0), the cost is the entry (the intended expiry to
//! `local_timer_entry`) plus the exit (`local_timer_exit` to the switch from the idle task,
//! less a `schedule()`, which the model charges apart as `schedule_base_ns`). The handler
//! between them is `hrtimer_handler_ns`'s; the switch and the return to user space are the
//! model's own costs. Wakeups that found the CPU running another task are not counted.

use crate::clock::{mono_ns, sleep_until};
use crate::sched_trace::{event_id, Instance};

const EVENTS: [&str; 3] = [
    "irq_vectors/local_timer_entry",
    "irq_vectors/local_timer_exit",
    "sched/sched_switch",
];

/// One traced event of the measured CPU: (pid of the task it interrupted or switched from,
/// time ns, event id).
type Ev = (u32, u64, u32);

/// `pid cpu ts_ns type: N` lines of a raw trace as events, in order.
fn events(raw: &str) -> Vec<Ev> {
    raw.lines()
        .filter_map(|line| {
            let mut w = line.split_whitespace();
            let (Some(pid), Some(_cpu), Some(ts), Some("type:"), Some(ty)) =
                (w.next(), w.next(), w.next(), w.next(), w.next())
            else {
                return None;
            };
            Some((pid.parse().ok()?, ts.parse().ok()?, ty.parse().ok()?))
        })
        .collect()
}

/// The idle entry+exit of each wakeup `(intended, woke)` of `log` whose timer interrupt
/// found the CPU idle, from its events `evs` (ids `[entry, exit, switch]`), less
/// `schedule_ns`; ns.
fn costs(evs: &[Ev], ids: [u32; 3], log: &[(u64, u64)], schedule_ns: f64) -> Vec<f64> {
    let [entry, exit, switch] = ids;
    let mut out = Vec::new();
    for &(due, woke) in log {
        let mut after = evs.iter().filter(|e| e.1 >= due && e.1 <= woke);
        let Some(&(pid, t_entry, _)) = after.find(|e| e.2 == entry) else {
            continue;
        };
        if pid != 0 {
            continue;
        }
        let Some(&(_, t_exit, _)) = after.find(|e| e.2 == exit) else {
            continue;
        };
        let Some(&(0, t_switch, _)) = after.find(|e| e.2 == switch) else {
            continue;
        };
        let cost = (t_entry - due) as f64 + ((t_switch - t_exit) as f64 - schedule_ns).max(0.0);
        out.push(cost);
    }
    out
}

/// `wakeups` timer wakeups `period_ns` apart of a thread pinned to `cpu`, traced: the idle
/// entry+exit of each that found the CPU idle (see the module), and how many wakeups ran.
/// `Err` when tracefs or its events are not usable, or the thread could not be pinned.
pub fn measure(cpu: u32, wakeups: usize, period_ns: u64, schedule_ns: f64) -> Result<(Vec<f64>, usize), String> {
    let mut inst = Instance::create()?;
    inst.setup(&[cpu as usize], 1024, &EVENTS)?;
    let ids: Vec<u32> = EVENTS.iter().map(|e| event_id(&inst, e)).collect::<Result<_, _>>()?;
    inst.record(true)?;
    let log = std::thread::spawn(move || -> Result<Vec<(u64, u64)>, String> {
        crate::caps::pin_to(cpu as usize)?;
        // SAFETY: prctl(PR_SET_TIMERSLACK) takes a value and changes only this thread's slack:
        // a SCHED_OTHER thread's timers may otherwise fire up to 50 us late, on purpose.
        unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
        let mut log = Vec::with_capacity(wakeups);
        let mut next = mono_ns() + period_ns;
        for _ in 0..wakeups {
            if !sleep_until(next) && crate::signals::stop_requested() {
                break;
            }
            log.push((next, mono_ns()));
            next = mono_ns() + period_ns;
        }
        Ok(log)
    })
    .join()
    .map_err(|_| "the idle-wakeup thread panicked".to_string())?;
    inst.record(false)?;
    let raw = inst.raw(cpu as usize);
    inst.remove()?;
    let log = log?;
    Ok((
        costs(&events(&raw?), [ids[0], ids[1], ids[2]], &log, schedule_ns),
        log.len(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_wakeups_whose_interrupt_found_the_cpu_idle_count() {
        // ids: entry 1, exit 2, switch 3. Wakeup A (due 1000): the interrupt finds the idle
        // task (pid 0): entry 1500, exit 4500, switch from idle 5200; B (due 10000): the
        // interrupt finds task 77 running: not counted; C (due 20000): no switch before the
        // thread woke (the trace lost it): not counted.
        let raw = "\
0 1 1500 type: 1
0 1 4500 type: 2
0 1 5200 type: 3
77 1 10300 type: 1
77 1 11000 type: 2
77 1 12000 type: 3
0 1 20100 type: 1
0 1 20900 type: 2
";
        let log = [(1000, 6000), (10_000, 13_000), (20_000, 22_000)];
        let evs = events(raw);
        assert_eq!(evs.len(), 8);
        // A: entry 500 + (switch - exit 700 - schedule 200) = 1000.
        assert_eq!(costs(&evs, [1, 2, 3], &log, 200.0), vec![1000.0]);
        // The exit part never goes below zero.
        assert_eq!(costs(&evs, [1, 2, 3], &log, 5000.0), vec![500.0]);
    }
}
