//! Engine throughput: model events per second on one core, running seed 000's stock kernel
//! for 20 simulated seconds of its script (kernel build under realfeel at 2048 Hz): as the
//! experiment runs it (after the box's history: `cat` of RAM's worth of old files, 37
//! simulated seconds of reads and reclaim), and with the page cache filled in place (no
//! history; the benchmark as it was before the history existed).
//! `seed004_cfs_thread_60s` runs seed 004's unpatched CFS kernel for the experiment's 60
//! simulated seconds (SIGEV_THREAD timer every 10 ms beside the video and make -j10).
//! `cargo bench -p latlab-exp --bench engine`

use criterion::{criterion_group, criterion_main, Criterion, Throughput};

// The allocator the `latlab` binary runs the model with.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn config(history: bool) -> latlab_sim::SimConfig {
    let exp = latlab_exp::builtin_experiment("mini-ll").expect("built-in experiment");
    let mut cfg = exp.runs[0].config.clone();
    cfg.min_duration_ns = 0;
    cfg.max_duration_ns = 20_000_000_000;
    cfg.workload.preload.reclaimed_before = history;
    cfg
}

fn engine(c: &mut Criterion) {
    let mut g = c.benchmark_group("engine");
    g.sample_size(10);
    for (name, history) in [("seed000_stock_20s", true), ("seed000_stock_20s_in_place", false)] {
        let cfg = config(history);
        let (_, stats) = latlab_sim::simulate(&cfg, &mut |_, _| {}).expect("runs");
        g.throughput(Throughput::Elements(stats.events));
        g.bench_function(name, |b| {
            b.iter(|| latlab_sim::simulate(&cfg, &mut |_, _| {}).expect("runs"))
        });
    }
    let exp = latlab_exp::builtin_experiment("cfs-granularity").expect("built-in experiment");
    let cfg = exp.runs[0].config.clone();
    let (_, stats) = latlab_sim::simulate(&cfg, &mut |_, _| {}).expect("runs");
    g.throughput(Throughput::Elements(stats.events));
    g.bench_function("seed004_cfs_thread_60s", |b| {
        b.iter(|| latlab_sim::simulate(&cfg, &mut |_, _| {}).expect("runs"))
    });
    g.finish();
}

criterion_group!(benches, engine);
criterion_main!(benches);
