//! `/proc/latency_trace` text in the voluntary-preempt v1.0.7 layout (seed 003), or v1.0.6
//! (the R series: 50 dashes, no `|` before the switches) when the trace says so:
//!
//! ```text
//! preemption latency trace v1.0.7 on 2.4.18 (latlab model)
//! -------------------------------------------------------
//!  latency: 6032 us, entries: 550 (550) | [VP:1 KP:1 SP:1 HP:1 #CPUS:1]
//!     -----------------
//!     | task: xfs/1098, uid:0 nice:0 policy:0 rt_prio:0
//!     -----------------
//!  => started at: rtc_interrupt
//!  => ended at:   get_swap_page
//! =======>
//! 00010002 0.000ms (+0.000ms): touch_preempt_timing (rtc_interrupt)
//! ```

use latlab_core::LatencyTrace;
use std::fmt::Write;

pub fn render(t: &LatencyTrace) -> String {
    let mut s = String::new();
    let flags: Vec<String> = t.flags.iter().map(|(n, on)| format!("{n}:{}", u8::from(*on))).collect();
    let n = t.entries.len();
    // v1.0.6 (the R series, Revell's first trace): 50 dashes, no bar before the switches.
    let (version, dashes, bar) = match t.version.as_str() {
        "1.0.6" => ("1.0.6", 50, ""),
        _ => ("1.0.7", 55, "| "),
    };
    let _ = writeln!(s, "preemption latency trace v{version} on {}", t.kernel);
    let _ = writeln!(s, "{}", "-".repeat(dashes));
    let _ = writeln!(
        s,
        " latency: {} us, entries: {n} ({n}) {bar}[{} #CPUS:1]",
        t.latency_ns / 1000,
        flags.join(" ")
    );
    if !t.note.is_empty() {
        let _ = writeln!(s, "    ({})", t.note);
    }
    let _ = writeln!(s, "    -----------------");
    let _ = writeln!(
        s,
        "    | task: {}, uid:0 nice:0 policy:{} rt_prio:{}",
        t.task, t.policy, t.rt_prio
    );
    let _ = writeln!(s, "    -----------------");
    let _ = writeln!(s, " => started at: {}", t.started_at);
    let _ = writeln!(s, " => ended at:   {}", t.ended_at);
    let _ = writeln!(s, "=======>");
    for (i, e) in t.entries.iter().enumerate() {
        let next = t.entries.get(i + 1).map_or(t.latency_ns, |x| x.t_ns);
        let delta = next.saturating_sub(e.t_ns);
        let _ = writeln!(
            s,
            "{:08x} {:.3}ms (+{:.3}ms): {} ({})",
            e.preempt_count,
            e.t_ns as f64 / 1e6,
            delta as f64 / 1e6,
            e.func,
            e.parent
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use latlab_core::TraceEntry;

    #[test]
    fn layout_matches_seed_003() {
        let t = LatencyTrace {
            kernel: "2.4.18 (latlab model)".into(),
            latency_ns: 6_032_000,
            task: "kswapd/35".into(),
            policy: 0,
            rt_prio: 0,
            started_at: "get_swap_page".into(),
            ended_at: "get_swap_page".into(),
            flags: vec![("VP".into(), false), ("KP".into(), true)],
            entries: vec![
                TraceEntry {
                    preempt_count: 0x10002,
                    t_ns: 0,
                    func: "touch_preempt_timing".into(),
                    parent: "rtc_interrupt".into(),
                },
                TraceEntry {
                    preempt_count: 1,
                    t_ns: 606_000,
                    func: "sub_preempt_count".into(),
                    parent: "get_swap_page".into(),
                },
            ],
            version: String::new(),
            note: String::new(),
        };
        let out = render(&t);
        assert!(
            out.contains(" latency: 6032 us, entries: 2 (2) | [VP:0 KP:1 #CPUS:1]"),
            "{out}"
        );
        assert!(
            out.contains("00010002 0.000ms (+0.606ms): touch_preempt_timing (rtc_interrupt)"),
            "{out}"
        );
        assert!(
            out.contains("00000001 0.606ms (+5.426ms): sub_preempt_count (get_swap_page)"),
            "{out}"
        );
        let noted = render(&LatencyTrace {
            note: "SP: softirqs run in ksoftirqd/0".into(),
            ..t.clone()
        });
        assert!(
            noted.contains("[VP:0 KP:1 #CPUS:1]\n    (SP: softirqs run in ksoftirqd/0)\n"),
            "{noted}"
        );
        let old = render(&LatencyTrace {
            version: "1.0.6".into(),
            ..t
        });
        assert!(old.starts_with("preemption latency trace v1.0.6 on "), "{old}");
        assert!(old.contains(&format!("\n{}\n", "-".repeat(50))), "{old}");
        assert!(
            old.contains(" latency: 6032 us, entries: 2 (2) [VP:0 KP:1 #CPUS:1]"),
            "{old}"
        );
    }
}
