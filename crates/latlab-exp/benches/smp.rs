//! The SMP CPU loop's speed: model events per second on one core for benches/smp/bench.toml
//! (a cyclictest-like SCHED_FIFO thread beside SCHED_OTHER hogs and sleepers, 6.18 EEVDF,
//! 1 simulated second) at each CPU count by each task count. Each cell runs once to count
//! its events, then `RUNS` times; the fastest run's wall time gives its events/s (the
//! fastest is the one the machine's other work disturbed least: say the load beside the
//! figures). BENCHMARKS.md, "SMP", has the table.
//!
//! `cargo bench -p latlab-exp --bench smp`, or only some cells:
//! `cargo bench -p latlab-exp --bench smp -- cpus=64,256 tasks=1000`.

use std::time::{Duration, Instant};

// The allocator the `latlab` binary runs the model with.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const EXPERIMENT: &str = include_str!("smp/bench.toml");
const TASKS: &str = include_str!("smp/tasks.toml");
/// Timed runs per cell.
const RUNS: usize = 3;

/// The tasks file with `tasks` tasks: the cyclic thread, then hogs and sleepers half and half.
fn tasks_file(tasks: u32) -> String {
    let hogs = (tasks - 1) / 2;
    let sleepers = tasks - 1 - hogs;
    TASKS.replacen("count = 499", &format!("count = {hogs}"), 1).replacen(
        "count = 500",
        &format!("count = {sleepers}"),
        1,
    )
}

/// The run of `cpus` CPUs with `tasks` tasks.
fn config(cpus: u32, tasks: u32) -> latlab_sim::SimConfig {
    let text = tasks_file(tasks);
    let files = |name: &str| -> std::io::Result<(String, String)> {
        match name {
            "./tasks.toml" => Ok(("benches/smp/tasks.toml".into(), text.clone())),
            _ => Err(std::io::Error::new(std::io::ErrorKind::NotFound, name.to_string())),
        }
    };
    let exp = latlab_exp::load_with("benches/smp/bench.toml", EXPERIMENT, &files).expect("the bench file loads");
    let exp = latlab_exp::vary(&exp, "bench", "machine.cpus", &cpus.to_string()).expect("the CPUs vary");
    exp.runs[0].config.clone()
}

/// The values of `key=a,b,c` among the arguments, else `default`.
fn arg(key: &str, default: &[u32]) -> Vec<u32> {
    std::env::args()
        .filter_map(|a| a.strip_prefix(&format!("{key}=")).map(str::to_string))
        .next_back()
        .map(|v| v.split(',').map(|n| n.parse().expect("a number")).collect())
        .unwrap_or_else(|| default.to_vec())
}

fn main() {
    let cpus = arg("cpus", &[1, 2, 8, 64, 256]);
    let tasks = arg("tasks", &[10, 100, 1000]);
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("load average before: {}", load.trim());
    println!("| CPUs | tasks | events | fastest of {RUNS} | events/s |");
    println!("|---:|---:|---:|---:|---:|");
    for &c in &cpus {
        for &t in &tasks {
            let cfg = config(c, t);
            let (_, stats) = latlab_sim::simulate(&cfg, &mut |_, _| {}).expect("runs");
            let best = (0..RUNS)
                .map(|_| {
                    let start = Instant::now();
                    latlab_sim::simulate(&cfg, &mut |_, _| {}).expect("runs");
                    start.elapsed()
                })
                .min()
                .unwrap_or(Duration::MAX);
            let rate = stats.events as f64 / best.as_secs_f64();
            println!(
                "| {c} | {t} | {} | {:.1} ms | {:.2} M |",
                stats.events,
                best.as_secs_f64() * 1e3,
                rate / 1e6
            );
        }
    }
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("load average after: {}", load.trim());
}
