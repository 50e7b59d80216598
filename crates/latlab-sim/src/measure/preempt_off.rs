//! The voluntary-preempt patch's latency tracer (seed 003; kernel-facts.md, "Latency
//! tracer output"): it times every preemption-off stretch (critical section) of any task,
//! not only a woken real-time task's wait, and keeps the longest with the function entries
//! it went through, as `/proc/latency_trace` printed them.
//!
//! In the model a stretch is a run of one task's steps that hold a lock (`preempt_count`
//! above 0: a spinlock, softirq context), from the step that takes it to the end of the
//! step that releases it; interrupts taken meanwhile lengthen it, as they did the patch's
//! (their entries carry the hardirq count, 0x10000). Each stretch is filed by the swap fill
//! when it ended: the growth table's row, and the row's window (`fill_pct`) for the worst
//! ones. Under a kernel without kernel preemption the same stretches are measured (the
//! patch's tracer counted preempt_count whatever the model); that such a kernel cannot be
//! preempted outside them either is what the realfeel stream beside it shows.

use crate::kernel::task::Task;
use crate::kernel::tracepoint::{kind, Cx, Event, Sink};
use crate::kernel::Irq;
use latlab_core::{FillRow, LatencyTrace, Nanos, PreemptOff, RunResult, TraceEntry};

/// Entries kept per stretch (the patch kept up to its buffer's size).
const MAX_ENTRIES: usize = 256;
/// preempt_count's hardirq unit (bits 16-27).
const HARDIRQ: u32 = 0x10000;

/// The caller the trace names beside a function: the model's steps carry their own name
/// and their path's; where the kernel's caller is another function, it is named here.
fn caller(func: &'static str, path: &'static str) -> &'static str {
    match func {
        "get_swap_page" => "add_to_swap",
        "scan_swap_map" => "get_swap_page",
        "try_to_unmap" => "shrink_list",
        "shrink_cache" | "refill_inactive_zone" => "shrink_zone",
        _ => path,
    }
}

/// One function entry of the stretch under way (a [`TraceEntry`] once the stretch is kept).
#[derive(Clone, Copy)]
struct Entry {
    preempt_count: u32,
    t_ns: Nanos,
    func: &'static str,
    parent: &'static str,
}

impl Entry {
    fn traced(&self) -> TraceEntry {
        TraceEntry {
            preempt_count: self.preempt_count,
            t_ns: self.t_ns,
            func: self.func.into(),
            parent: self.parent.into(),
        }
    }
}

/// The stretch under way.
#[derive(Default)]
struct Open {
    task: usize,
    start: Nanos,
    first: &'static str,
    last: (&'static str, &'static str),
    steps: u32,
    entries: Vec<Entry>,
}

/// The tracer of one run.
pub struct PreemptOffTracer {
    fill_pct: [u64; 2],
    open: Option<Open>,
    spare: Vec<Entry>,
    out: PreemptOff,
    /// The kernel the trace headers name, with its switches and layout version.
    kernel: String,
    flags: Vec<(String, bool)>,
    note: String,
    version: &'static str,
}

impl Sink for PreemptOffTracer {
    #[inline(always)]
    fn interest() -> u32 {
        kind::FUNC_ENTRY | kind::IRQ_ENTRY | kind::PREEMPT_ON
    }

    fn kinds(&self) -> u32 {
        // A locked step opens a stretch; interrupts and the release count only inside one.
        match self.open {
            Some(_) => kind::FUNC_ENTRY | kind::IRQ_ENTRY | kind::PREEMPT_ON,
            None => kind::FUNC_ENTRY,
        }
    }

    #[inline(always)]
    fn event(&mut self, cx: &Cx, ev: &Event) -> bool {
        match *ev {
            // A locked step opens a stretch, the release closes it.
            Event::FuncEntry {
                task,
                func,
                path,
                preempt_off,
                ..
            } => {
                let was = self.open.is_some();
                self.on_step(cx.now, task, func, path, preempt_off);
                return self.open.is_some() != was;
            }
            Event::IrqEntry { irq, len, .. } => self.on_irq(cx.now, len, irq),
            Event::PreemptOn { swap_fill_pct, .. } => {
                let was = self.open.is_some();
                self.on_unlock(cx.now, swap_fill_pct, cx.tasks);
                return self.open.is_some() != was;
            }
            _ => {}
        }
        false
    }

    fn finish(self: Box<Self>, _tasks: &[Task], r: &mut RunResult) {
        r.preempt_off = Some(self.out);
    }
}

impl PreemptOffTracer {
    pub fn new(fill_pct: [u64; 2], v: &crate::variant::Variant) -> Self {
        PreemptOffTracer {
            fill_pct,
            open: None,
            spare: Vec::new(),
            out: PreemptOff {
                fill_pct,
                by_fill: (0..10)
                    .map(|i| FillRow {
                        fill_pct: i * 10,
                        ..FillRow::default()
                    })
                    .collect(),
                ..PreemptOff::default()
            },
            kernel: format!("{} (latlab model)", v.name),
            flags: v.trace_flags(),
            note: v.trace_note(),
            version: v.tracer_version(),
        }
    }

    fn push(o: &mut Open, now: Nanos, pc: u32, func: &'static str, parent: &'static str) {
        if o.entries.len() < MAX_ENTRIES {
            o.entries.push(Entry {
                preempt_count: pc,
                t_ns: now - o.start,
                func,
                parent,
            });
        }
    }

    /// Task `task` starts a step of `func` in `path`, holding a lock or not.
    fn on_step(&mut self, now: Nanos, task: usize, func: &'static str, path: &'static str, locked: bool) {
        if !locked {
            return;
        }
        let parent = caller(func, path);
        match &mut self.open {
            Some(o) if o.task == task => {
                o.steps += 1;
                o.last = (func, parent);
                Self::push(o, now, 1, func, parent);
            }
            _ => {
                let mut o = Open {
                    task,
                    start: now,
                    first: func,
                    last: (func, parent),
                    steps: 1,
                    entries: std::mem::take(&mut self.spare),
                };
                o.entries.clear();
                Self::push(&mut o, now, 1, func, parent);
                self.open = Some(o);
            }
        }
    }

    /// An interrupt arrived at `now` and took `h` ns (its handler runs in hard-IRQ context,
    /// or with threaded interrupts only acknowledges and wakes its thread: `threaded`). The
    /// patch's tracer logs function entries only, so the time after an interrupt would show
    /// against the handler's last entry; the model logs the interrupted function again where
    /// the interrupt returns to it, so each entry's delta is time spent in that function.
    fn on_irq(&mut self, now: Nanos, h: Nanos, irq: Irq) {
        let Some(o) = &mut self.open else { return };
        let (running, parent) = o.last;
        Self::push(o, now, HARDIRQ | 1, "do_IRQ", running);
        // The line's handler; with HP its thread runs the handler's body, and this entry's
        // time (`h`) is only the acknowledgement and the thread's wakeup (cpu/irq_thread.rs).
        let handler = match irq {
            Irq::Tick => "timer_interrupt",
            Irq::Rtc => "rtc_interrupt",
            Irq::Disk(_) => "ide_intr",
            Irq::Hrtimer(_) => "hrtimer_interrupt",
        };
        Self::push(o, now, HARDIRQ | 2, handler, "do_IRQ");
        Self::push(o, now + h, 1, running, parent);
    }

    /// The step that released the lock ended at `now` with swap `fill` percent full.
    fn on_unlock(&mut self, now: Nanos, fill: u64, tasks: &[Task]) {
        let Some(mut o) = self.open.take() else { return };
        let len = now - o.start;
        self.out.stretches += 1;
        let (last, parent) = o.last;
        let ended = if o.steps > 1 { parent } else { last };
        Self::push(&mut o, now, 1, "sub_preempt_count", ended);
        Self::push(&mut o, now, 1, "update_max_trace", "check_preempt_timing");
        let swap = o.first == "get_swap_page";
        let row = &mut self.out.by_fill[(fill.min(99) / 10) as usize];
        row.any_ns = row.any_ns.max(len);
        if swap {
            row.swap_calls += 1;
            row.get_swap_page_ns = row.get_swap_page_ns.max(len);
        }
        if (self.fill_pct[0]..=self.fill_pct[1]).contains(&fill) {
            let beats = |t: &Option<LatencyTrace>| t.as_ref().is_none_or(|t| len > t.latency_ns);
            if beats(&self.out.worst) {
                self.out.worst = Some(self.trace(&o, len, ended, tasks));
            }
            if swap && beats(&self.out.worst_swap) {
                self.out.worst_swap = Some(self.trace(&o, len, ended, tasks));
            }
        }
        self.spare = o.entries;
    }

    fn trace(&self, o: &Open, len: Nanos, ended: &str, tasks: &[Task]) -> LatencyTrace {
        let t = &tasks[o.task];
        LatencyTrace {
            kernel: self.kernel.clone(),
            latency_ns: len,
            task: t.label(),
            policy: t.policy.number(),
            rt_prio: t.rt_priority,
            started_at: o.first.into(),
            ended_at: ended.into(),
            flags: self.flags.clone(),
            entries: o.entries.iter().map(Entry::traced).collect(),
            version: self.version.into(),
            note: self.note.clone(),
        }
    }

    /// What the run measured.
    #[cfg(test)]
    fn measured(self) -> PreemptOff {
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::tests::variant_with;
    use crate::variant::{PreemptModel, SchedClass};

    fn task(pid: u32) -> Task {
        Task {
            pid,
            comm: "kswapd0".into(),
            ..crate::kernel::task::tests_task()
        }
    }

    #[test]
    fn a_stretch_runs_from_the_lock_to_its_release_with_the_interrupts_inside() {
        let v = variant_with(SchedClass::O1, PreemptModel::Full, &[]);
        let tasks = vec![task(0), task(35)];
        let mut t = PreemptOffTracer::new([0, 100], &v);
        t.on_step(1_000, 1, "get_swap_page", "balance_pgdat", true);
        t.on_step(1_100, 1, "scan_swap_map", "balance_pgdat", true);
        t.on_irq(300_000, 3_000, Irq::Tick);
        t.on_unlock(607_000, 42, &tasks);
        // Not locked: no stretch.
        t.on_step(700_000, 1, "shrink_list", "balance_pgdat", false);
        t.on_unlock(800_000, 42, &tasks);
        let out = t.measured();
        assert_eq!(out.stretches, 1);
        let w = out.worst_swap.expect("a get_swap_page stretch");
        assert_eq!(w.latency_ns, 606_000);
        assert_eq!(
            (w.started_at.as_str(), w.ended_at.as_str()),
            ("get_swap_page", "get_swap_page")
        );
        assert_eq!(w.task, "kswapd0/35");
        let funcs: Vec<(&str, &str)> = w.entries.iter().map(|e| (e.func.as_str(), e.parent.as_str())).collect();
        assert_eq!(
            funcs,
            [
                ("get_swap_page", "add_to_swap"),
                ("scan_swap_map", "get_swap_page"),
                ("do_IRQ", "scan_swap_map"),
                ("timer_interrupt", "do_IRQ"),
                ("scan_swap_map", "get_swap_page"),
                ("sub_preempt_count", "get_swap_page"),
                ("update_max_trace", "check_preempt_timing"),
            ]
        );
        assert_eq!(w.entries[2].preempt_count, 0x10001);
        assert_eq!(w.entries[4].t_ns, 302_000);
        assert_eq!(out.by_fill[4].get_swap_page_ns, 606_000);
        assert_eq!(out.by_fill[4].swap_calls, 1);
        assert_eq!(
            out.by_fill[3],
            FillRow {
                fill_pct: 30,
                ..FillRow::default()
            }
        );
    }

    #[test]
    fn only_stretches_inside_the_window_are_kept_as_worst() {
        let v = variant_with(SchedClass::O1, PreemptModel::Full, &[]);
        let tasks = vec![task(0), task(35)];
        let mut t = PreemptOffTracer::new([90, 100], &v);
        t.on_step(0, 1, "get_swap_page", "try_to_free_pages", true);
        t.on_unlock(5_000_000, 50, &tasks);
        t.on_step(6_000_000, 1, "get_swap_page", "try_to_free_pages", true);
        t.on_unlock(6_100_000, 95, &tasks);
        let out = t.measured();
        assert_eq!(out.worst.map(|w| w.latency_ns), Some(100_000));
        assert_eq!(out.by_fill[5].get_swap_page_ns, 5_000_000);
    }
}
