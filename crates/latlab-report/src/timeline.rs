//! The CPU timeline around a model result's worst samples, as the trace exporters
//! ([`crate::ftrace`], [`crate::chrome_trace`]) draw it: what is known from the result, and
//! what is laid out to make a viewable timeline. (A probe result's trace is the kernel's own
//! recorded events: [`crate::recorded`].)
//!
//! Exact, from the result: the stimulus (`at_ns`) and the moment the woken task reached user
//! space (`at_ns + latency_ns`); the interrupt's wait (`irq_off_ns`) from the stimulus; the
//! non-preemptible stretch (`cause`: task, since, until); the switch to the woken task
//! (`latency - wakee_kernel_ns`); and, when the run has a `/proc/latency_trace`
//! ([`latlab_core::LatencyTrace`]) of this very sample, the woken task, its wakeup and the
//! switch from the trace's own entries, and every traced kernel function.
//!
//! Laid out (synthesized): which task held the CPU when. The attribution gives each task's
//! *total* time in the window (`tasks`), not the order or number of its slices; the timeline
//! runs the cause's task first (it was running when the wakeup came) and the others one
//! after the other in the order listed, each for its total, the last one until the switch.
//! All handler time (`handler_ns`, every interrupt in `irqs`) is one span right after the
//! interrupt's wait. The window opens with a switch from the idle task to the first task
//! and closes with the woken task switching to idle: both mark the window, not real
//! switches.

use latlab_core::{Nanos, RunResult, Sample};

/// Pids at and above this are made up, for a woken task the result does not name (real
/// Linux pids stay below `PID_MAX_LIMIT`, 2^22).
pub const SYNTHETIC_PID_BASE: u32 = 1 << 30;

/// A task as the trace formats name it: a `comm` without blanks or `=` (ftrace's key=value
/// fields are split on both), and a pid.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Task {
    pub comm: String,
    pub pid: u32,
    /// ftrace's prio: 120 for a normal task, 99 - rt_priority for a real-time one.
    pub prio: i32,
}

impl Task {
    pub fn new(comm: &str, pid: u32) -> Task {
        let comm: String = comm
            .chars()
            .map(|c| if c.is_whitespace() || c == '=' { '_' } else { c })
            .collect();
        Task { comm, pid, prio: 120 }
    }

    /// `comm/pid` as latlab's results write a task (`kjournald/4`, `kworker/1:1/50`).
    pub fn parse(s: &str) -> Option<Task> {
        let (comm, pid) = s.rsplit_once('/')?;
        Some(Task::new(comm, pid.trim().parse().ok()?))
    }

    /// The idle task of `cpu` (ftrace: `<idle>-0`, `swapper/N` in sched_switch).
    pub fn idle(cpu: u32) -> Task {
        Task::new(&format!("swapper/{cpu}"), 0)
    }

    pub fn is_idle(&self) -> bool {
        self.pid == 0
    }
}

/// `[start, end)` on the CPU for `task`.
#[derive(Clone, Debug, PartialEq)]
pub struct Run {
    pub task: Task,
    pub start: Nanos,
    pub end: Nanos,
}

/// The non-preemptible stretch (exact times from the attribution).
#[derive(Clone, Debug, PartialEq)]
pub struct Stretch {
    pub task: Task,
    pub start: Nanos,
    pub end: Nanos,
    /// `path [lock]`.
    pub label: String,
    pub ended_by: String,
}

/// A span of interrupt context: the wait with interrupts off, or the handlers.
#[derive(Clone, Debug, PartialEq)]
pub struct IrqSpan {
    pub start: Nanos,
    pub end: Nanos,
    /// `irq=` in ftrace: from an `irq N name` interrupt name, else 0.
    pub irq: u32,
    pub name: String,
}

/// A function from the run's latency_trace, at its absolute time.
#[derive(Clone, Debug, PartialEq)]
pub struct Func {
    pub at: Nanos,
    pub func: String,
    pub parent: String,
    pub preempt_count: u32,
}

/// One worst sample's window on one CPU.
#[derive(Clone, Debug)]
pub struct Window<'a> {
    pub cpu: u32,
    pub stream: &'a str,
    pub sample: &'a Sample,
    /// Where the window begins: the stimulus, or the stretch's start when it began earlier.
    pub start: Nanos,
    pub at: Nanos,
    pub wake: Nanos,
    pub switch: Nanos,
    pub end: Nanos,
    pub woken: Task,
    /// Who held the CPU, in order; the last run is the woken task's `[switch, end)`.
    pub runs: Vec<Run>,
    pub stretch: Option<Stretch>,
    pub irq_off: Option<IrqSpan>,
    pub handlers: Option<IrqSpan>,
    pub funcs: Vec<Func>,
    /// True when the woken task, its wakeup and the switch come from a latency_trace.
    pub traced: bool,
}

/// The interrupt number in a name like `irq 39 virtio2-output.0`, else 0.
fn irq_number(name: &str) -> u32 {
    name.strip_prefix("irq ")
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// ftrace's prio of the measured task, from the run's `policy` setting when every measuring
/// thread had it (`SCHED_FIFO 95`, as the probe and the model record it): 99 - rt_priority.
fn measured_prio(r: &RunResult) -> Option<i32> {
    let rt = r.meta.measured_fifo_priority()?;
    Some(99 - rt.min(99) as i32)
}

/// The woken task of a latency_trace: the task its first `wake_up_process` woke.
fn traced_wakee(r: &RunResult) -> Option<(Task, Nanos, Option<Nanos>)> {
    let t = r.trace.as_ref()?;
    let wake = t
        .entries
        .iter()
        .find(|e| e.func == "wake_up_process" && Task::parse(&e.parent).is_some())?;
    let task = Task::parse(&wake.parent)?;
    let switch = t
        .entries
        .iter()
        .find(|e| e.func == "__switch_to" && e.parent == wake.parent)
        .map(|e| e.t_ns);
    Some((task, wake.t_ns, switch))
}

/// Build the window of one sample. `woken` names the measured task; `trace` is the run's
/// latency_trace when it is this sample's.
fn window<'a>(cpu: u32, stream: &'a str, sample: &'a Sample, woken: Task, r: &RunResult, traced: bool) -> Window<'a> {
    let a = &sample.attribution;
    let at = sample.at_ns;
    let end = at.saturating_add(sample.latency_ns);
    let h0 = at.saturating_add(a.irq_off_ns).min(end);
    let h1 = h0.saturating_add(a.handler_ns).min(end);
    let from_trace = traced.then(|| traced_wakee(r)).flatten();
    let mut switch = end.saturating_sub(a.wakee_kernel_ns).max(at);
    let mut wake = h1;
    if let Some((_, w, s)) = &from_trace {
        wake = at.saturating_add(*w).min(end);
        if let Some(s) = s {
            switch = at.saturating_add(*s).min(end);
        }
    }
    let wake = wake.min(switch);
    let names: Vec<String> = a.irqs.iter().map(|(n, c)| format!("{n} x{c}")).collect();
    let handlers = (h1 > h0).then(|| IrqSpan {
        start: h0,
        end: h1,
        irq: a.irqs.first().map_or(0, |(n, _)| irq_number(n)),
        name: if names.is_empty() {
            "interrupts".into()
        } else {
            names.join(", ")
        },
    });
    let irq_off = (h0 > at).then(|| IrqSpan {
        start: at,
        end: h0,
        irq: 0,
        name: "interrupt waiting, interrupts off".into(),
    });
    let stretch = a.cause.as_ref().and_then(|c| {
        Some(Stretch {
            task: Task::parse(&c.task)?,
            start: c.since_ns,
            end: c.until_ns.max(c.since_ns),
            label: match &c.lock {
                Some(l) => format!("{} [{l}]", c.path),
                None => c.path.clone(),
            },
            ended_by: c.ended_by.clone(),
        })
    });
    let running_at_wakeup = stretch.as_ref().filter(|s| s.start <= at).map(|s| s.task.clone());
    let start = running_at_wakeup
        .as_ref()
        .and(stretch.as_ref())
        .map_or(at, |s| s.start.min(at));
    // Who held the CPU: the stretch's task first when it was running at the wakeup, then
    // the attribution's tasks in their order, each for its total time.
    let mut order: Vec<(Task, Nanos)> = Vec::new();
    if let Some(t) = &running_at_wakeup {
        let ns = a
            .tasks
            .iter()
            .find(|x| x.pid == t.pid)
            .map_or(switch.saturating_sub(at), |x| x.ns);
        order.push((t.clone(), ns));
    }
    for x in &a.tasks {
        if !order.iter().any(|(t, _)| t.pid == x.pid) {
            order.push((Task::new(&x.comm, x.pid), x.ns));
        }
    }
    let traced_task = r.trace.as_ref().filter(|_| traced).and_then(|t| {
        let mut task = Task::parse(&t.task)?;
        if t.policy != 0 {
            task.prio = 99 - t.rt_prio.min(99) as i32;
        }
        Some(task)
    });
    let mut runs: Vec<Run> = Vec::new();
    let mut cursor = at;
    for (mut task, ns) in order {
        if cursor >= switch {
            break;
        }
        if let Some(tt) = traced_task.as_ref().filter(|tt| tt.pid == task.pid) {
            task.prio = tt.prio;
        }
        let s = if runs.is_empty() { start } else { cursor };
        let e = cursor.saturating_add(ns).min(switch);
        if e > s {
            runs.push(Run { task, start: s, end: e });
        }
        cursor = e;
    }
    match runs.last_mut() {
        Some(last) => last.end = switch,
        None => runs.push(Run {
            task: Task::idle(cpu),
            start,
            end: switch,
        }),
    }
    runs.retain(|r| r.end > r.start);
    runs.push(Run {
        task: woken.clone(),
        start: switch,
        end,
    });
    let funcs = match (&r.trace, traced) {
        (Some(t), true) => t
            .entries
            .iter()
            .map(|e| Func {
                at: at.saturating_add(e.t_ns),
                func: e.func.clone(),
                parent: e.parent.clone(),
                preempt_count: e.preempt_count,
            })
            .collect(),
        _ => Vec::new(),
    };
    Window {
        cpu,
        stream,
        sample,
        start,
        at,
        wake,
        switch,
        end,
        woken,
        runs,
        stretch,
        irq_off,
        handlers,
        funcs,
        traced: from_trace.is_some(),
    }
}

/// The windows of the worst samples of every stream (or of `only`), at most `per_stream`
/// each, worst first, leaving out a sample whose window overlaps a worse one's on the same
/// CPU (a long stretch delays many samples). A stream's CPU is its samples' `cpu` tag, else
/// its index.
pub fn windows<'a>(r: &'a RunResult, only: Option<&str>, per_stream: usize) -> Vec<Window<'a>> {
    let traced = traced_wakee(r);
    let prio = measured_prio(r);
    let mut out: Vec<Window> = Vec::new();
    for (si, s) in r.streams.iter().enumerate() {
        if only.is_some_and(|n| n != s.name) {
            continue;
        }
        // The run's latency_trace is its worst sample's: the first stream whose worst sample
        // has the trace's latency owns it.
        let owns_trace = r
            .trace
            .as_ref()
            .is_some_and(|t| s.worst.first().is_some_and(|w| w.latency_ns == t.latency_ns))
            && !out.iter().any(|w| w.traced);
        let mut kept = 0;
        for (k, sample) in s.worst.iter().enumerate() {
            if kept == per_stream {
                break;
            }
            let cpu = sample.tag.get("cpu").and_then(|c| c.parse().ok()).unwrap_or(si as u32);
            let mut woken = match (&traced, owns_trace, sample.tag.get("tid").and_then(|t| t.parse().ok())) {
                (_, _, Some(tid)) => Task::new(&s.name, tid),
                (Some((t, _, _)), true, None) => t.clone(),
                _ => Task::new(&s.name, SYNTHETIC_PID_BASE.saturating_add(si as u32)),
            };
            woken.prio = prio.unwrap_or(woken.prio);
            let w = window(cpu, &s.name, sample, woken, r, owns_trace && k == 0);
            if out.iter().any(|o| o.cpu == w.cpu && o.start < w.end && w.start < o.end) {
                continue;
            }
            out.push(w);
            kept += 1;
        }
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::input::tests::result;
    use latlab_core::{Attribution, Cause, Engine, LatencyTrace, TaskSlice, TraceEntry};

    /// The model's worst sample of a short run: cc1 exiting under page_table_lock, realfeel
    /// woken by the RTC, with the run's latency_trace.
    pub(crate) fn model_result() -> RunResult {
        let mut r = result(Engine::Sim, "2.4.18", "realfeel", &[20_000, 1_152_384]);
        let attribution = Attribution {
            handler_ns: 10_500,
            preempt_wait_ns: 1_139_141,
            sched_ns: 2_040,
            wakee_kernel_ns: 703,
            cause: Some(Cause {
                task: "cc1/15".into(),
                path: "zap_page_range <- do_exit".into(),
                lock: Some("page_table_lock".into()),
                since_ns: 5_892_513_425,
                until_ns: 5_893_724_749,
                ended_by: "do_exit".into(),
            }),
            tasks: vec![TaskSlice {
                comm: "cc1".into(),
                pid: 15,
                ns: 1_139_141,
            }],
            irqs: vec![("rtc".into(), 3)],
            ..Default::default()
        };
        let worst = Sample {
            at_ns: 5_892_575_108,
            latency_ns: 1_152_384,
            tag: Default::default(),
            attribution: attribution.clone(),
        };
        // A second sample inside the same stretch, and a third well after it.
        let inside = Sample {
            at_ns: 5_892_575_108 + 488_000,
            latency_ns: 660_000,
            ..worst.clone()
        };
        let later = Sample {
            at_ns: 7_000_000_000,
            latency_ns: 500_000,
            tag: Default::default(),
            attribution: Attribution {
                handler_ns: 3_500,
                wakee_kernel_ns: 700,
                ..Default::default()
            },
        };
        r.streams[0].worst = vec![worst, inside, later];
        let e = |t_ns, func: &str, parent: &str| TraceEntry {
            preempt_count: 0x10001,
            t_ns,
            func: func.into(),
            parent: parent.into(),
        };
        r.trace = Some(LatencyTrace {
            kernel: "2.4.18 (latlab model)".into(),
            latency_ns: 1_152_384,
            task: "cc1/15".into(),
            policy: 0,
            rt_prio: 0,
            started_at: "zap_page_range <- do_exit".into(),
            ended_at: "do_exit".into(),
            flags: vec![],
            entries: vec![
                e(0, "do_IRQ", "zap_page_range"),
                e(3_500, "wake_up_process", "realfeel/7"),
                e(1_149_641, "wake_up_process", "make/9"),
                e(1_149_641, "__switch_to", "realfeel/7"),
                e(1_152_384, "sys_read", "rtc_read"),
            ],
            version: String::new(),
            note: String::new(),
        });
        r
    }

    #[test]
    fn task_names_fit_ftrace_fields() {
        assert_eq!(Task::parse("kworker/1:1/50"), Some(Task::new("kworker/1:1", 50)));
        assert_eq!(
            Task::new("make (waker, another CPU)", 3).comm,
            "make_(waker,_another_CPU)"
        );
        assert_eq!(Task::new("a=b", 3).comm, "a_b");
        assert_eq!(Task::parse("nopid"), None);
        assert_eq!(irq_number("irq 39 virtio2-output.0"), 39);
        assert_eq!(irq_number("rtc"), 0);
    }

    #[test]
    fn the_model_window_follows_its_trace() {
        let r = model_result();
        let w = windows(&r, None, 5);
        // The sample inside the worst one's stretch is left out; the later one is kept.
        assert_eq!(w.len(), 2);
        let first = &w[0];
        assert!(first.traced);
        assert_eq!(first.woken, Task::new("realfeel", 7));
        assert_eq!(first.start, 5_892_513_425, "opens where the stretch began");
        assert_eq!(first.wake, 5_892_575_108 + 3_500);
        assert_eq!(first.switch, 5_892_575_108 + 1_149_641);
        assert_eq!(first.end, 5_892_575_108 + 1_152_384);
        let runs: Vec<(&str, Nanos, Nanos)> = first
            .runs
            .iter()
            .map(|r| (r.task.comm.as_str(), r.start, r.end))
            .collect();
        assert_eq!(
            runs,
            [
                ("cc1", first.start, first.switch),
                ("realfeel", first.switch, first.end)
            ]
        );
        assert_eq!(
            first.stretch.as_ref().unwrap().label,
            "zap_page_range <- do_exit [page_table_lock]"
        );
        assert_eq!(first.handlers.as_ref().unwrap().name, "rtc x3");
        assert_eq!(first.funcs.len(), 5);
        // The later sample has no trace: the same woken task, the idle CPU before it.
        let second = &w[1];
        assert!(!second.traced && second.funcs.is_empty());
        assert_eq!(second.woken, Task::new("realfeel", 7));
        assert_eq!(second.runs[0].task, Task::idle(0));
        assert_eq!(second.switch, 7_000_000_000 + 500_000 - 700);
        assert_eq!(windows(&r, Some("other"), 5).len(), 0);
        assert_eq!(windows(&r, None, 1).len(), 1);
    }

    #[test]
    fn tasks_laid_out_in_order_within_the_window() {
        let mut r = result(Engine::Probe, "6.1", "cpu2", &[100_000]);
        let mut tag = std::collections::BTreeMap::new();
        tag.insert("cpu".to_string(), "2".to_string());
        tag.insert("tid".to_string(), "4242".to_string());
        r.streams[0].worst.push(Sample {
            at_ns: 1_000_000,
            latency_ns: 100_000,
            tag,
            attribution: Attribution {
                irq_off_ns: 5_000,
                handler_ns: 10_000,
                wakee_kernel_ns: 5_000,
                tasks: vec![
                    TaskSlice {
                        comm: "a".into(),
                        pid: 10,
                        ns: 50_000,
                    },
                    TaskSlice {
                        comm: "b".into(),
                        pid: 11,
                        ns: 80_000,
                    },
                ],
                irqs: vec![("irq 39 eth0".into(), 2)],
                ..Default::default()
            },
        });
        let w = &windows(&r, None, 1)[0];
        assert_eq!((w.cpu, w.woken.pid, w.woken.comm.as_str()), (2, 4242, "cpu2"));
        let runs: Vec<(u32, Nanos, Nanos)> = w.runs.iter().map(|r| (r.task.pid, r.start, r.end)).collect();
        // a for its 50 us, b for the rest until the switch (its 80 us do not fit), then the
        // woken task.
        assert_eq!(
            runs,
            [
                (10, 1_000_000, 1_050_000),
                (11, 1_050_000, 1_095_000),
                (4242, 1_095_000, 1_100_000)
            ]
        );
        assert_eq!(w.irq_off.as_ref().unwrap().end, 1_005_000);
        assert_eq!(
            w.handlers.as_ref().map(|h| (h.irq, h.start, h.end)),
            Some((39, 1_005_000, 1_015_000))
        );
    }

    #[test]
    fn the_measured_task_runs_at_its_recorded_priority() {
        let mut r = model_result();
        assert_eq!(
            windows(&r, None, 5)[0].woken.prio,
            120,
            "no policy recorded: a normal task"
        );
        r.meta.settings.insert("policy".into(), "SCHED_FIFO 99".into());
        assert!(windows(&r, None, 5).iter().all(|w| w.woken.prio == 0));
        // The probe's mixed case names no one priority for every thread.
        r.meta.settings.insert(
            "policy".into(),
            "SCHED_FIFO 95 on 1 of 2 threads, SCHED_OTHER on the rest".into(),
        );
        assert_eq!(windows(&r, None, 5)[0].woken.prio, 120);
    }

    #[test]
    fn absurd_numbers_do_not_overflow() {
        let mut r = result(Engine::Probe, "6.1", "cpu0", &[1]);
        r.streams[0].worst.push(Sample {
            at_ns: u64::MAX - 5,
            latency_ns: u64::MAX,
            tag: Default::default(),
            attribution: Attribution {
                irq_off_ns: u64::MAX,
                handler_ns: u64::MAX,
                wakee_kernel_ns: u64::MAX,
                tasks: vec![TaskSlice {
                    comm: "x".into(),
                    pid: 1,
                    ns: u64::MAX,
                }],
                ..Default::default()
            },
        });
        let w = windows(&r, None, 1);
        assert_eq!(w.len(), 1);
        assert!(w[0].runs.iter().all(|r| r.start <= r.end));
    }
}
