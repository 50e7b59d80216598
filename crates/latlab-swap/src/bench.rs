//! The measurement sweep behind `latlab swap-bench`: for each allocator, swap size and
//! fill level, fill a fresh swap area with the workload of [`crate::stream`], then measure
//! a bounded number of allocations in steady state (each swap-out burst followed by the
//! frees that bring the area back to its fill level).
//!
//! A cell is filled to a little above its level and then drained back to it (a fill of
//! 50 % goes to 75 % first, 99 % to 99.5 %), so the map carries the holes that swap-ins and
//! random frees leave; a fill of 0 is a fresh area. The stream depends on the seed and the
//! cell (size, fill) but not on the allocator, so every allocator gets the same requests.
//! Work figures are deterministic; wall times are whatever the machine gives.

use std::time::{Duration, Instant};

use rayon::prelude::*;
use serde::Serialize;

use crate::stream::{StreamConfig, Workload};
use crate::{by_name, check_slots, Alloc, SwapAllocator, SwapError, ALLOCATORS};

/// The default sizes: 64 Ki to 4 Mi slots (256 MiB to 16 GiB of 4 KiB pages).
pub const DEFAULT_SLOTS: &[u64] = &[1 << 16, 1 << 18, 1 << 20, 1 << 22];
/// The default fill levels.
pub const DEFAULT_FILLS: &[f64] = &[0.0, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999];
/// A cell's mean work per allocation must grow by this factor over the emptiest fill
/// measured to count as "cost starts to grow"...
pub const GROWTH_FACTOR: f64 = 4.0;
/// ...over a baseline of at least this many entries, so that going from 2 to 8 entries
/// (a handful of cache lines either way) does not count.
pub const GROWTH_FLOOR: f64 = 10.0;

/// Most measured allocations per cell: each is kept (40 bytes) for the cell's percentiles, and
/// every cell of the sweep runs at once, so this bounds the sweep's memory (about 40 MiB a cell).
pub const MAX_ALLOCS: usize = 1 << 20;

/// What to measure.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchConfig {
    pub allocators: Vec<String>,
    pub slots: Vec<u64>,
    pub fills: Vec<f64>,
    /// Measured allocations per cell.
    pub allocs: usize,
    pub seed: u64,
    pub stream: StreamConfig,
}

impl Default for BenchConfig {
    fn default() -> Self {
        Self {
            allocators: ALLOCATORS.iter().map(|s| s.to_string()).collect(),
            slots: DEFAULT_SLOTS.to_vec(),
            fills: DEFAULT_FILLS.to_vec(),
            allocs: 4096,
            seed: 3,
            stream: StreamConfig::default(),
        }
    }
}

impl BenchConfig {
    /// Reject anything that would make a cell meaningless, before doing any work.
    pub fn validate(&self) -> Result<(), SwapError> {
        for name in &self.allocators {
            if !ALLOCATORS.contains(&name.as_str()) {
                return Err(SwapError::UnknownAllocator {
                    name: name.clone(),
                    valid: ALLOCATORS.join(", "),
                });
            }
        }
        for &slots in &self.slots {
            check_slots(slots)?;
        }
        for &fill in &self.fills {
            if !(0.0..1.0).contains(&fill) {
                return Err(SwapError::BadFill { fill });
            }
        }
        if self.allocators.is_empty() || self.slots.is_empty() || self.fills.is_empty() {
            return Err(SwapError::BadConfig(
                "need at least one allocator, size and fill level".to_string(),
            ));
        }
        if !(1..=MAX_ALLOCS).contains(&self.allocs) {
            return Err(SwapError::BadConfig(format!(
                "measured allocations per cell must be 1..={MAX_ALLOCS}, got {}",
                self.allocs
            )));
        }
        self.stream.validate()
    }
}

/// One measured cell. Serializes to the JSON row of `latlab swap-bench --json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    pub allocator: String,
    pub slots: u64,
    pub fill: f64,
    /// Work per allocation (entries read or nodes visited): mean, 99th percentile, max.
    pub work_mean: f64,
    pub work_p99: u64,
    pub work_max: u64,
    /// The longest stretch of work under a lock without a preemption point.
    pub max_locked_work: u64,
    /// Wall time per allocation on this machine.
    pub ns_per_alloc: f64,
    /// Of pages whose previous virtual page was in swap, the fraction placed right after it.
    pub layout: f64,
    /// Allocations measured.
    #[serde(skip)]
    pub allocs: u64,
    /// Allocations that found the area full.
    #[serde(skip)]
    pub failed: u64,
}

/// A filled swap area with its workload, ready for measured rounds.
pub struct Cell {
    alloc: Box<dyn SwapAllocator>,
    workload: Workload,
    target: u64,
}

impl Cell {
    /// Build allocator `name` for `slots` slots and bring it to `fill` with the seeded
    /// stream: fill to halfway between `fill` and the nearer of empty or full, then drain.
    pub fn prepare(name: &str, slots: u64, fill: f64, seed: u64, stream: &StreamConfig) -> Result<Self, SwapError> {
        if !(0.0..1.0).contains(&fill) {
            return Err(SwapError::BadFill { fill });
        }
        let mut alloc = by_name(name, slots)?;
        let mut workload = Workload::new(slots, stream.clone(), cell_seed(seed, slots, fill))?;
        let target = (fill * slots as f64).round() as u64;
        let peak = target + target.min(slots - target) / 2;
        workload.fill(alloc.as_mut(), peak)?;
        workload.drain(alloc.as_mut(), target)?;
        workload.reset_layout();
        Ok(Self {
            alloc,
            workload,
            target,
        })
    }

    /// One steady-state round: a swap-out burst of at most `max` pages (timed, allocations
    /// only), then the frees that bring the area back to its fill level. Appends each
    /// allocation's result to `out` and returns the time the allocations took.
    pub fn round(&mut self, max: usize, out: &mut Vec<Alloc>) -> Result<Duration, SwapError> {
        let mut burst = self.workload.swapout_burst();
        for req in burst.drain(max.min(burst.len())..) {
            self.workload.complete(&req, None)?;
        }
        let first = out.len();
        let t0 = Instant::now();
        for req in &burst {
            out.push(self.alloc.alloc(req)?);
        }
        let took = t0.elapsed();
        for (req, a) in burst.iter().zip(&out[first..]) {
            self.workload.complete(req, a.slot)?;
        }
        self.workload.drain(self.alloc.as_mut(), self.target)?;
        Ok(took)
    }
}

/// Each (size, fill) cell has its own stream; all allocators share it.
fn cell_seed(seed: u64, slots: u64, fill: f64) -> u64 {
    let mut z = seed ^ slots.rotate_left(29) ^ fill.to_bits().rotate_left(7);
    // splitmix64 finalizer
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Measure one cell.
pub fn run_cell(name: &str, slots: u64, fill: f64, cfg: &BenchConfig) -> Result<Row, SwapError> {
    let mut cell = Cell::prepare(name, slots, fill, cfg.seed, &cfg.stream)?;
    let mut results = Vec::with_capacity(cfg.allocs);
    let mut took = Duration::ZERO;
    while results.len() < cfg.allocs {
        took += cell.round(cfg.allocs - results.len(), &mut results)?;
    }
    let mut work: Vec<u64> = results.iter().map(|a| a.work.entries).collect();
    work.sort_unstable();
    let n = work.len();
    let p99 = work[(n * 99).div_ceil(100).max(1) - 1];
    Ok(Row {
        allocator: cell.alloc.name().to_string(),
        slots,
        fill,
        work_mean: work.iter().sum::<u64>() as f64 / n as f64,
        work_p99: p99,
        work_max: work[n - 1],
        max_locked_work: results.iter().map(|a| a.work.max_locked).max().unwrap_or(0),
        ns_per_alloc: took.as_nanos() as f64 / n as f64,
        layout: cell.workload.layout().unwrap_or(0.0),
        allocs: n as u64,
        failed: results.iter().filter(|a| a.slot.is_none()).count() as u64,
    })
}

/// Measure every cell, in parallel; rows come back ordered by size, allocator, fill.
pub fn run(cfg: &BenchConfig) -> Result<Vec<Row>, SwapError> {
    run_observed(cfg, &|| {})
}

/// [`run`], calling `cell_done` as each cell is measured (from the pool's threads).
pub fn run_observed(cfg: &BenchConfig, cell_done: &(dyn Fn() + Sync)) -> Result<Vec<Row>, SwapError> {
    cfg.validate()?;
    let mut cells = Vec::new();
    for &slots in &cfg.slots {
        for name in &cfg.allocators {
            for &fill in &cfg.fills {
                cells.push((name.as_str(), slots, fill));
            }
        }
    }
    // the biggest cells first, so the pool is not left waiting on one at the end
    let mut order: Vec<usize> = (0..cells.len()).collect();
    order.sort_by(|&a, &b| cells[b].1.cmp(&cells[a].1));
    let mut done: Vec<(usize, Row)> = order
        .into_par_iter()
        .map(|i| {
            let row = run_cell(cells[i].0, cells[i].1, cells[i].2, cfg).map(|r| (i, r));
            cell_done();
            row
        })
        .collect::<Result<_, _>>()?;
    done.sort_by_key(|(i, _)| *i);
    Ok(done.into_iter().map(|(_, r)| r).collect())
}

/// For one allocator and size, the lowest fill level at which mean work per allocation
/// reaches [`GROWTH_FACTOR`] times its value at the emptiest fill measured (taken as at
/// least [`GROWTH_FLOOR`]).
pub fn growth_onset(rows: &[Row], allocator: &str, slots: u64) -> Option<f64> {
    let mut mine: Vec<&Row> = rows
        .iter()
        .filter(|r| r.allocator == allocator && r.slots == slots)
        .collect();
    mine.sort_by(|a, b| a.fill.total_cmp(&b.fill));
    let base = mine.first()?.work_mean.max(GROWTH_FLOOR);
    mine.iter()
        .find(|r| r.work_mean >= GROWTH_FACTOR * base)
        .map(|r| r.fill)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> BenchConfig {
        BenchConfig {
            slots: vec![1 << 14],
            fills: vec![0.0, 0.9, 0.99],
            allocs: 300,
            ..BenchConfig::default()
        }
    }

    fn work_only(rows: &[Row]) -> Vec<(String, u64, u64, u64, u64, u64)> {
        rows.iter()
            .map(|r| {
                (
                    r.allocator.clone(),
                    r.work_mean.to_bits(),
                    r.work_p99,
                    r.work_max,
                    r.max_locked_work,
                    r.layout.to_bits(),
                )
            })
            .collect()
    }

    #[test]
    fn same_seed_same_work_and_another_seed_differs() {
        let cfg = small();
        let a = run(&cfg).unwrap();
        let cells = std::sync::atomic::AtomicUsize::new(0);
        let b = run_observed(&cfg, &|| {
            cells.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        })
        .unwrap();
        assert_eq!(a.len(), 5 * 3);
        assert_eq!(cells.into_inner(), a.len(), "one call per cell");
        assert_eq!(work_only(&a), work_only(&b));
        let c = run(&BenchConfig { seed: 4, ..cfg }).unwrap();
        assert_ne!(work_only(&a), work_only(&c));
    }

    #[test]
    fn rows_are_ordered_and_measure_what_was_asked() {
        let rows = run(&small()).unwrap();
        for (i, r) in rows.iter().enumerate() {
            assert_eq!(r.allocator, ALLOCATORS[i / 3]);
            assert_eq!(r.fill, [0.0, 0.9, 0.99][i % 3]);
            assert_eq!(r.allocs, 300);
            assert_eq!(r.failed, 0);
            assert!(r.work_mean >= 1.0 && r.work_mean <= r.work_max as f64);
            assert!(r.work_p99 <= r.work_max && r.max_locked_work <= r.work_max);
            assert!((0.0..=1.0).contains(&r.layout));
        }
    }

    #[test]
    fn cells_reach_their_fill_level() {
        for fill in [0.0, 0.5, 0.999] {
            let cell = Cell::prepare("blist", 1 << 14, fill, 1, &StreamConfig::default()).unwrap();
            assert_eq!(cell.alloc.used(), (fill * 16384.0).round() as u64);
            cell.alloc.check_invariants().unwrap();
        }
    }

    #[test]
    fn growth_onset_finds_the_first_fill_past_the_factor() {
        let row = |fill: f64, mean: f64| Row {
            allocator: "x".into(),
            slots: 1,
            fill,
            work_mean: mean,
            work_p99: 0,
            work_max: 0,
            max_locked_work: 0,
            ns_per_alloc: 0.0,
            layout: 0.0,
            allocs: 1,
            failed: 0,
        };
        let rows = [row(0.9, 90.0), row(0.0, 12.0), row(0.5, 30.0), row(0.99, 100.0)];
        assert_eq!(growth_onset(&rows, "x", 1), Some(0.9));
        assert_eq!(growth_onset(&rows[1..3], "x", 1), None);
        // 2 -> 39 entries stays under 4 x the floor of 10
        let cheap = [row(0.0, 2.0), row(0.5, 39.0), row(0.9, 40.0)];
        assert_eq!(growth_onset(&cheap, "x", 1), Some(0.9));
        assert_eq!(growth_onset(&rows, "y", 1), None);
    }

    #[test]
    fn bad_configs_fail_before_any_work() {
        let bad = [
            BenchConfig {
                fills: vec![1.0],
                ..small()
            },
            BenchConfig {
                slots: vec![0],
                ..small()
            },
            BenchConfig {
                allocators: vec!["buddy".into()],
                ..small()
            },
            BenchConfig { allocs: 0, ..small() },
            BenchConfig {
                allocs: MAX_ALLOCS + 1,
                ..small()
            },
            BenchConfig {
                allocs: usize::MAX,
                ..small()
            },
        ];
        for cfg in bad {
            assert!(run(&cfg).is_err());
        }
    }
}
