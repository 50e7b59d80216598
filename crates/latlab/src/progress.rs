//! Live progress on the terminal (indicatif, drawn on stderr): the probe's per-CPU line
//! (current, average, maximum latency, samples), `probe write`'s bytes, `swap-bench`'s cells.
//! (`run`/`reproduce` draw a bar per run from the model's own progress callback, in
//! `sim_cmd`.) Nothing is drawn when stderr is not a terminal: [`enabled`] is false, the
//! figures are not even kept, and indicatif's stderr target would hide them anyway; the
//! model's commands and `swap-bench` then write a line now and then instead ([`tenths`],
//! `sim_cmd`'s line per finished run), so a log or a pipe still shows the work going on.

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use latlab_probe::timer::LiveCpu;
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How often the display reads the figures.
const TICK: Duration = Duration::from_millis(200);

/// True when progress can be shown: stderr is a terminal.
pub fn enabled() -> bool {
    std::io::stderr().is_terminal()
}

/// A display refreshed by its own thread until dropped, when its lines are cleared.
pub struct Display {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Display {
    /// Call `update` every [`TICK`] on a thread of its own (a SCHED_OTHER thread: the
    /// measuring threads it reads from run at their own priority), and `finish` once at the
    /// end.
    fn spawn(mut update: impl FnMut() + Send + 'static, finish: impl FnOnce() + Send + 'static) -> Display {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                update();
                std::thread::sleep(TICK);
            }
            finish();
        });
        Display {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Display {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// One line per measured CPU: `cpu0  now 23.1 us  avg 25.0 us  max 2345.1 us  1234 samples`.
pub fn probe(cpus: &[usize], live: &[Arc<LiveCpu>]) -> Display {
    let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
    let style = ProgressStyle::with_template("{msg}").expect("static template");
    let lines: Vec<(usize, ProgressBar, Arc<LiveCpu>)> = cpus
        .iter()
        .zip(live)
        .map(|(&cpu, l)| {
            let bar = multi.add(ProgressBar::new_spinner().with_style(style.clone()));
            (cpu, bar, l.clone())
        })
        .collect();
    let finished = lines.iter().map(|(_, b, _)| b.clone()).collect::<Vec<_>>();
    Display::spawn(
        move || {
            for (cpu, bar, l) in &lines {
                bar.set_message(live_line(*cpu, l));
            }
        },
        move || finished.iter().for_each(ProgressBar::finish_and_clear),
    )
}

/// A CPU's live line.
fn live_line(cpu: usize, l: &LiveCpu) -> String {
    let n = l.count.load(Ordering::Relaxed);
    let us = |ns: u64| ns as f64 / 1000.0;
    let avg = l.sum_ns.load(Ordering::Relaxed).checked_div(n).unwrap_or(0);
    format!(
        "cpu{cpu:<3} now {:>9.1} us  avg {:>9.1} us  max {:>10.1} us  {n:>9} samples",
        us(l.last_ns.load(Ordering::Relaxed)),
        us(avg),
        us(l.max_ns.load(Ordering::Relaxed))
    )
}

/// A bar of bytes written out of `total`.
pub fn bytes(total: u64, done: Arc<AtomicU64>) -> Display {
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr()).with_style(
        ProgressStyle::with_template("write [{bar:40}] {bytes}/{total_bytes} {bytes_per_sec}")
            .expect("static template")
            .progress_chars("=> "),
    );
    let end = bar.clone();
    Display::spawn(
        move || bar.set_position(done.load(Ordering::Relaxed)),
        move || end.finish_and_clear(),
    )
}

/// A bar of cells measured out of `total`, moved by the returned counter.
pub fn cells(total: u64) -> (Display, Arc<AtomicU64>) {
    let done = Arc::new(AtomicU64::new(0));
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr()).with_style(
        ProgressStyle::with_template("swap-bench [{bar:40}] {pos}/{len} cells")
            .expect("static template")
            .progress_chars("=> "),
    );
    let (end, count) = (bar.clone(), done.clone());
    let d = Display::spawn(
        move || bar.set_position(count.load(Ordering::Relaxed)),
        move || end.finish_and_clear(),
    );
    (d, done)
}

/// Where stderr is not a terminal: a counter of `total` units of work that writes a line,
/// `latlab progress: WHAT N/TOTAL UNIT (S s)`, each time another tenth is done.
pub fn tenths(what: String, unit: &'static str, total: u64) -> impl Fn() + Sync {
    let (done, t0) = (AtomicU64::new(0), std::time::Instant::now());
    move || {
        let n = done.fetch_add(1, Ordering::Relaxed) + 1;
        if n * 10 / total.max(1) != (n - 1) * 10 / total.max(1) {
            errln!(
                "latlab progress: {what} {n}/{total} {unit} ({:.1} s)",
                t0.elapsed().as_secs_f64()
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn live_line_shows_current_average_max_and_count() {
        let l = LiveCpu::default();
        for ns in [20_000, 40_000, 3_000_000, 30_000] {
            l.record(ns);
        }
        assert_eq!(
            live_line(1, &l),
            "cpu1   now      30.0 us  avg     772.5 us  max     3000.0 us          4 samples"
        );
        assert!(live_line(0, &LiveCpu::default()).contains("avg       0.0 us"));
    }
}
