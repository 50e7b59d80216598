//! Criterion benchmarks for the swap-slot allocators: one steady-state round (a swap-out
//! burst of 32 allocations plus the frees that hold the fill level) per iteration, for
//! each allocator at a few sizes and fill levels. `latlab swap-bench` measures the same
//! cells with work counts; this gives wall-time confidence intervals.
//!
//! Run: `cargo bench -p latlab-swap --bench swap_alloc`

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use latlab_swap::bench::Cell;
use latlab_swap::stream::StreamConfig;
use latlab_swap::ALLOCATORS;
use std::time::Duration;

const CELLS: &[(u64, f64)] = &[(1 << 16, 0.5), (1 << 16, 0.99), (1 << 20, 0.9), (1 << 20, 0.99)];
const BURST: usize = 32;

fn rounds(c: &mut Criterion) {
    let stream = StreamConfig::default();
    for &(slots, fill) in CELLS {
        let size = match slots {
            s if s % (1 << 20) == 0 => format!("{}Mi", s >> 20),
            s => format!("{}Ki", s >> 10),
        };
        let mut g = c.benchmark_group(format!("swap-alloc/{size}-slots/{}%", fill * 100.0));
        g.throughput(Throughput::Elements(BURST as u64));
        g.sample_size(20);
        g.warm_up_time(Duration::from_millis(500));
        g.measurement_time(Duration::from_secs(2));
        for name in ALLOCATORS {
            let mut cell = Cell::prepare(name, slots, fill, 3, &stream).expect("cell");
            let mut out = Vec::with_capacity(BURST);
            g.bench_function(BenchmarkId::from_parameter(name), |b| {
                b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        out.clear();
                        total += cell.round(BURST, &mut out).expect("round");
                    }
                    total
                })
            });
        }
        g.finish();
    }
}

criterion_group!(benches, rounds);
criterion_main!(benches);
