//! Percentile summaries and the explanation of the worst samples.

use latlab_core::{ms, us, RunResult, Sample};
use std::fmt::Write;

/// One line per stream: count, min, p50, p90, p99, p99.9, max (us).
pub fn percentiles(label: &str, r: &RunResult) -> String {
    let mut out = String::new();
    for s in &r.streams {
        let m = s.hist.summary();
        let _ = writeln!(
            out,
            "{label:<28} n={:<9} min {:>7.1}  p50 {:>7.1}  p90 {:>7.1}  p99 {:>8.1}  p99.9 {:>9.1}  max {:>10.1} us  missed {}",
            m.count,
            us(m.min_ns),
            us(m.p50_ns),
            us(m.p90_ns),
            us(m.p99_ns),
            us(m.p999_ns),
            us(m.max_ns),
            s.missed
        );
    }
    out
}

/// Why one sample took as long as it did.
pub fn explain(s: &Sample) -> String {
    let a = &s.attribution;
    let mut out = String::new();
    let _ = writeln!(out, "  {:.3} ms at t={:.3} s", ms(s.latency_ns), s.at_ns as f64 / 1e9);
    if let Some(c) = &a.cause {
        let lock = c.lock.as_deref().map_or(String::new(), |l| format!(" holding {l}"));
        let _ = writeln!(
            out,
            "    running: {} in {}{lock}, non-preemptible since {:.3} s for {:.3} ms; ended by {}",
            c.task,
            c.path,
            c.since_ns as f64 / 1e9,
            ms(c.until_ns.saturating_sub(c.since_ns)),
            c.ended_by
        );
    }
    let parts = [
        a.irq_off_ns,
        a.handler_ns,
        a.preempt_wait_ns,
        a.ran_ahead_ns,
        a.sched_ns,
        a.wakee_kernel_ns,
    ];
    if parts.iter().any(|&p| p > 0) {
        let _ = writeln!(
            out,
            "    irq-off {:.3} ms, handlers {:.3} ms, waiting for preemption {:.3} ms, others ahead {:.3} ms, \
             scheduler {:.3} ms, wakee's own kernel work {:.3} ms",
            ms(a.irq_off_ns),
            ms(a.handler_ns),
            ms(a.preempt_wait_ns),
            ms(a.ran_ahead_ns),
            ms(a.sched_ns),
            ms(a.wakee_kernel_ns)
        );
    }
    if a.blocked_ns > 0 {
        let _ = writeln!(out, "    asleep inside the call {:.3} ms", ms(a.blocked_ns));
    }
    if !a.note.is_empty() {
        let _ = writeln!(out, "    {}", a.note);
    }
    if !a.tasks.is_empty() {
        let t: Vec<String> = a
            .tasks
            .iter()
            .map(|t| format!("{}/{} {:.3} ms", t.comm, t.pid, ms(t.ns)))
            .collect();
        let _ = writeln!(out, "    on the CPU meanwhile: {}", t.join(", "));
    }
    if !a.irqs.is_empty() {
        let i: Vec<String> = a.irqs.iter().map(|(n, c)| format!("{n} x{c}")).collect();
        let _ = writeln!(out, "    interrupts: {}", i.join(", "));
    }
    if a.steal_ns > 0 {
        let _ = writeln!(out, "    hypervisor steal: {:.3} ms", ms(a.steal_ns));
    }
    out
}

/// Where the samples of 1 ms or more came from: the code path running when the interrupt
/// arrived, with how many samples and the worst (from the model's `samples>=1ms:` and
/// `worst_us:` counters).
pub fn causes(label: &str, r: &RunResult) -> String {
    let mut rows: Vec<(&str, u64, u64)> = r
        .counters
        .iter()
        .filter_map(|(k, &n)| {
            let path = k.strip_prefix("samples>=1ms:")?;
            let worst = r.counters.get(&format!("worst_us:{path}")).copied().unwrap_or(0);
            Some((path, n, worst))
        })
        .collect();
    rows.sort_by_key(|r| std::cmp::Reverse(r.2));
    if rows.is_empty() {
        return format!("{label:<28} no sample reached 1 ms\n");
    }
    let list: Vec<String> = rows
        .iter()
        .map(|(p, n, w)| format!("{p} {n} (worst {:.1} ms)", *w as f64 / 1000.0))
        .collect();
    format!("{label:<28} {}\n", list.join(", "))
}
