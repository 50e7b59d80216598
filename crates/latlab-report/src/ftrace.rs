//! The worst samples' timelines ([`crate::timeline`]) as ftrace text, the format of
//! `/sys/kernel/tracing/trace` with the `nop` tracer: a `# tracer: nop` header, then one line
//! per event:
//!
//! ```text
//!              cc1-15      [000] d....  5892.513425: sched_switch: prev_comm=swapper/0 ...
//! ```
//!
//! `<comm>-<pid> [<cpu>] <flags> <secs>.<usecs>: <event>: <fields>`, the flags being 6.x's
//! five-column irq-info (irqs-off, need-resched, hardirq/softirq, preempt-depth,
//! migrate-disable: `d.h..`), with the events' fields as the kernel prints them
//! (sched_switch, sched_waking, sched_wakeup, irq_handler_entry/exit; a `sched_waking` comes
//! before the `sched_switch` to its task) and the non-preemptible stretch as an atrace slice
//! (`tracing_mark_write: B|pid|name` ... `E|pid`).
//!
//! This is the timeline a model result's attribution lays out ([`crate::timeline`]), for
//! results that recorded no events; a model run made with `--record-events` carries the
//! events its recorder kept, exported as they were recorded by [`crate::recorded`].
//!
//! Checked against Perfetto's importer of text traces (trace_processor's systrace tokenizer
//! and line parser, and <https://perfetto.dev/docs/getting-started/other-formats>, "Linux
//! ftrace textual format"): a file containing `# tracer` is read as systrace text; lines
//! starting with `#` are skipped; an event line matches
//! `-(\d+)\s+\(?\s*(\d+|-+)?\)?\s?\[(\d+)\]\s*[a-zA-Z0-9.]{0,5}\s+(\d+\.\d+):\s+(\S+):` (the
//! flags `{0,5}` since Perfetto reads 6.x's five columns; releases before took `{0,4}`), the
//! task being everything before it; fields are split on blanks and `=`. Perfetto builds
//! CPU scheduling slices from `sched_switch`, wakeups from `sched_waking`, and slices from
//! `tracing_mark_write` B/E; it skips `sched_wakeup` and the irq events, which are there for
//! other readers (the kernel's own text has them). Every line ends in `\n`:
//! Perfetto ignores a last line without one.

use crate::timeline::{Task, Window};
use latlab_core::Nanos;
use std::fmt::Write;

/// The legend of the five flag columns of ftrace's `trace` file header (kernel/trace/trace.c
/// `print_func_help_header_irq`, 6.x), shared by every trace this crate writes in that format.
pub(crate) const FLAGS_LEGEND: &str = "#\n#                                _-----=> irqs-off/BH-disabled\n\
     #                               / _----=> need-resched\n\
     #                              | / _---=> hardirq/softirq\n\
     #                              || / _--=> preempt-depth\n\
     #                              ||| / _-=> migrate-disable\n\
     #                              |||| /     delay\n";

/// `secs.usecs` as ftrace prints a timestamp (the result's ns truncated to us).
pub fn timestamp(ns: Nanos) -> String {
    format!("{}.{:06}", ns / 1_000_000_000, (ns % 1_000_000_000) / 1_000)
}

/// The task as the line prefix names it (`<idle>` for pid 0).
fn line_task(t: &Task) -> String {
    let comm = if t.is_idle() { "<idle>" } else { t.comm.as_str() };
    format!("{comm}-{}", t.pid)
}

/// One event line.
pub fn line(task: &Task, cpu: u32, flags: &str, ns: Nanos, event: &str, fields: &str) -> String {
    format!(
        "{:>22} [{cpu:03}] {flags:<5} {:>13}: {event}: {fields}\n",
        line_task(task),
        timestamp(ns)
    )
}

/// `sched_switch` fields (`prev_state`: `R` preempted, `S` asleep).
pub fn switch_fields(prev: &Task, prev_state: &str, next: &Task) -> String {
    format!(
        "prev_comm={} prev_pid={} prev_prio={} prev_state={prev_state} ==> next_comm={} next_pid={} next_prio={}",
        prev.comm, prev.pid, prev.prio, next.comm, next.pid, next.prio
    )
}

/// `sched_waking` / `sched_wakeup` fields.
pub fn wakeup_fields(t: &Task, cpu: u32) -> String {
    format!("comm={} pid={} prio={} target_cpu={cpu:03}", t.comm, t.pid, t.prio)
}

/// The task on the CPU at `ns` in a window (the idle task outside its runs).
fn current(w: &Window, ns: Nanos) -> Task {
    w.runs
        .iter()
        .find(|r| r.start <= ns && ns < r.end)
        .or(w.runs.last().filter(|r| r.end == ns))
        .map_or(Task::idle(w.cpu), |r| r.task.clone())
}

/// The events of one window as (time, rank, order within the window, line). At one time
/// a stretch's end comes first, then switches and other events, then a stretch's begin, so
/// the atrace slice stays inside its task's run.
fn window_lines(w: &Window) -> Vec<(Nanos, u8, usize, String)> {
    let mut v: Vec<(Nanos, u8, usize, String)> = Vec::new();
    let mut push = |ns: Nanos, rank: u8, task: &Task, flags: &str, event: &str, fields: String| {
        let n = v.len();
        v.push((ns, rank, n, line(task, w.cpu, flags, ns, event, &fields)));
    };
    // The wakeup first: at one time, a `sched_waking` comes before the switch it causes.
    let waker = current(w, w.wake);
    push(
        w.wake,
        1,
        &waker,
        "d.h..",
        "sched_waking",
        wakeup_fields(&w.woken, w.cpu),
    );
    push(
        w.wake,
        1,
        &waker,
        "d.h..",
        "sched_wakeup",
        wakeup_fields(&w.woken, w.cpu),
    );
    let idle = Task::idle(w.cpu);
    let mut prev = idle.clone();
    for r in &w.runs {
        if r.task != prev {
            let state = if prev.is_idle() { "R" } else { "R+" };
            push(
                r.start,
                1,
                &prev,
                "d....",
                "sched_switch",
                switch_fields(&prev, state, &r.task),
            );
        }
        prev = r.task.clone();
    }
    push(
        w.end,
        1,
        &prev,
        "d....",
        "sched_switch",
        switch_fields(&prev, "S", &idle),
    );
    if let Some(s) = &w.stretch {
        let (pid, label) = (s.task.pid, &s.label);
        push(
            s.start,
            2,
            &s.task,
            ".....",
            "tracing_mark_write",
            format!("B|{pid}|{label}"),
        );
        push(s.end, 0, &s.task, ".....", "tracing_mark_write", format!("E|{pid}"));
    }
    if let Some(h) = &w.handlers {
        let name = h.name.replace(' ', "_");
        let entry = format!("irq={} name={name}", h.irq);
        push(h.start, 1, &current(w, h.start), "d.h..", "irq_handler_entry", entry);
        let exit = format!("irq={} ret=handled", h.irq);
        push(h.end, 1, &current(w, h.end), "d.h..", "irq_handler_exit", exit);
    }
    v
}

/// The ftrace text of `windows`, with a header saying what it is. `title` goes into the
/// header's comment lines.
pub fn render(title: &str, windows: &[Window]) -> String {
    let mut lines: Vec<(Nanos, usize, u8, usize, String)> = windows
        .iter()
        .enumerate()
        .flat_map(|(i, w)| window_lines(w).into_iter().map(move |(t, k, n, l)| (t, i, k, n, l)))
        .collect();
    lines.sort_by_key(|(t, i, k, n, _)| (*t, *i, *k, *n));
    let mut out = String::from("# tracer: nop\n#\n");
    let _ = writeln!(out, "# latlab report trace: {title}");
    let _ = writeln!(
        out,
        "# {} window(s) around the worst samples; task order inside a window is synthesized from per-task totals (docs/reports.md)",
        windows.len()
    );
    let _ = writeln!(
        out,
        "# entries-in-buffer/entries-written: {0}/{0}   #P:{1}",
        lines.len(),
        { windows.iter().map(|w| w.cpu + 1).max().unwrap_or(1) }
    );
    out.push_str(FLAGS_LEGEND);
    out.push_str(
        "#                TASK-PID  CPU#  |||||   TIMESTAMP  FUNCTION\n\
         #                   | |      |   |||||      |         |\n",
    );
    for (_, _, _, _, l) in lines {
        out.push_str(&l);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::{tests::model_result, windows};

    /// Perfetto's systrace tokenizer, by hand: (task, pid, cpu, flags, ts, event, args).
    fn tokenize(l: &str) -> Option<(String, u32, u32, String, f64, String, String)> {
        let open = l.find(" [")?;
        let (head, rest) = l.split_at(open);
        let (task, pid) = head.trim().rsplit_once('-')?;
        let close = rest.find(']')?;
        let cpu = rest[2..close].parse().ok()?;
        let mut it = rest[close + 1..].split_whitespace();
        let flags = it.next()?.to_string();
        if flags.len() > 5 || !flags.chars().all(|c| c.is_ascii_alphanumeric() || c == '.') {
            return None;
        }
        let ts = it.next()?.strip_suffix(':')?;
        let (secs, frac) = ts.split_once('.')?;
        if secs.is_empty() || frac.is_empty() || !(secs.chars().chain(frac.chars()).all(|c| c.is_ascii_digit())) {
            return None;
        }
        let event = it.next()?.strip_suffix(':')?.to_string();
        let args: Vec<&str> = it.collect();
        Some((
            task.into(),
            pid.parse().ok()?,
            cpu,
            flags,
            ts.parse().ok()?,
            event,
            args.join(" "),
        ))
    }

    #[test]
    fn line_layout() {
        let t = Task::new("kjournald", 4);
        let l = line(
            &t,
            0,
            "d....",
            339_525_000_123,
            "sched_switch",
            &switch_fields(&t, "R+", &Task::new("realfeel", 7)),
        );
        assert_eq!(
            l,
            "           kjournald-4 [000] d....    339.525000: sched_switch: prev_comm=kjournald prev_pid=4 \
             prev_prio=120 prev_state=R+ ==> next_comm=realfeel next_pid=7 next_prio=120\n"
        );
        assert_eq!(timestamp(5_000_001_999), "5.000001");
        assert_eq!(
            wakeup_fields(&Task::new("realfeel", 7), 1),
            "comm=realfeel pid=7 prio=120 target_cpu=001"
        );
        assert!(line(&Task::idle(3), 3, "d....", 0, "x", "y")
            .trim_start()
            .starts_with("<idle>-0 [003]"));
    }

    #[test]
    fn every_event_line_parses_as_perfetto_reads_it_and_switches_chain() {
        let r = model_result();
        let w = windows(&r, None, 5);
        let text = render("2.4.18 (model)", &w);
        assert!(text.starts_with("# tracer: nop\n"));
        assert!(text.ends_with('\n'));
        let events: Vec<_> = text
            .lines()
            .filter(|l| !l.starts_with('#'))
            .map(|l| tokenize(l).unwrap_or_else(|| panic!("does not tokenize: {l}")))
            .collect();
        // Time order.
        assert!(events.windows(2).all(|p| p[0].4 <= p[1].4));
        // Each sched_switch's prev is the task the previous one switched to (per CPU), and the
        // line is printed by the task switching out.
        let mut on_cpu: Option<(String, u32)> = None;
        let mut switches = 0;
        for (task, pid, _, _, _, ev, args) in &events {
            if ev != "sched_switch" {
                continue;
            }
            let f = |k: &str| {
                args.split_whitespace()
                    .find_map(|kv| kv.strip_prefix(&format!("{k}=")))
                    .unwrap()
                    .to_string()
            };
            let prev = (f("prev_comm"), f("prev_pid").parse::<u32>().unwrap());
            assert_eq!(prev.1, *pid);
            assert!(prev.1 == 0 && task == "<idle>" || prev.0 == *task, "{task} {args}");
            if let Some(c) = &on_cpu {
                assert_eq!(&prev, c);
            }
            on_cpu = Some((f("next_comm"), f("next_pid").parse().unwrap()));
            switches += 1;
        }
        // Window 1: idle -> cc1 -> realfeel -> idle; window 2: idle -> realfeel -> idle.
        assert_eq!(switches, 5);
        let count = |e: &str| events.iter().filter(|x| x.5 == e).count();
        assert_eq!((count("sched_waking"), count("sched_wakeup")), (2, 2));
        assert_eq!(count("tracing_mark_write"), 2, "B and E of the one stretch");
        assert_eq!((count("irq_handler_entry"), count("irq_handler_exit")), (2, 2));
        assert!(text.contains("tracing_mark_write: B|15|zap_page_range <- do_exit [page_table_lock]\n"));
        // The stretch ends (5.893724749 s) exactly at the switch to realfeel: its E comes
        // first, printed by cc1 while cc1 still runs.
        let e = text.find("tracing_mark_write: E|15").unwrap();
        let sw = text.find("next_comm=realfeel").unwrap();
        assert!(e < sw, "{text}");
        assert!(text.contains("sched_waking: comm=realfeel pid=7 prio=120 target_cpu=000\n"));
        assert!(text.contains("irq_handler_entry: irq=0 name=rtc_x3\n"));
    }
}
