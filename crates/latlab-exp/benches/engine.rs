//! Engine throughput: model events per second on one core, running seed 000's stock kernel
//! for 20 simulated seconds of its script (kernel build under realfeel at 2048 Hz).
//! `cargo bench -p latlab-exp --bench engine`

use criterion::{criterion_group, criterion_main, Criterion, Throughput};

fn config() -> latlab_sim::SimConfig {
    let exp = latlab_exp::builtin_experiment("mini-ll").expect("built-in experiment");
    let mut cfg = exp.runs[0].config.clone();
    cfg.min_duration_ns = 0;
    cfg.max_duration_ns = 20_000_000_000;
    cfg
}

fn engine(c: &mut Criterion) {
    let cfg = config();
    let (_, stats) = latlab_sim::simulate(&cfg, &mut |_, _| {}).expect("runs");
    let mut g = c.benchmark_group("engine");
    g.sample_size(10);
    g.throughput(Throughput::Elements(stats.events));
    g.bench_function("seed000_stock_20s", |b| {
        b.iter(|| latlab_sim::simulate(&cfg, &mut |_, _| {}).expect("runs"))
    });
    g.finish();
}

criterion_group!(benches, engine);
criterion_main!(benches);
