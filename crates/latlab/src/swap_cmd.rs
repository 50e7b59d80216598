//! `latlab swap-bench`: compare the swap-slot allocators of seed 003 (see `latlab-swap`)
//! at every swap size and fill level. The sweep lives in `latlab_swap::bench`; this module
//! parses arguments and formats the rows as tables or JSON.

use std::process::ExitCode;

use anyhow::Context;
use latlab_swap::bench::{self, growth_onset, BenchConfig, Row, GROWTH_FACTOR, GROWTH_FLOOR};
use latlab_swap::stream::Order;
use serde::Serialize;

#[derive(clap::Args, Debug)]
pub struct SwapBenchArgs {
    /// Measure only this swap size, in 4 KiB slots (a number, or with a Ki/Mi suffix:
    /// 64Ki, 4Mi). Default: 64Ki, 256Ki, 1Mi and 4Mi.
    #[arg(long, value_parser = parse_slots)]
    slots: Option<u64>,
    /// Measure only this fill level, as a fraction in [0, 1) or a percentage (0.99, 99%).
    /// Default: 0, 50, 75, 90, 95, 99 and 99.9 %.
    #[arg(long, value_parser = parse_fill)]
    fill: Option<f64>,
    /// Measure only this allocator (repeat for several): scan-2.4, vaddr-chunks,
    /// lockless-2.6.14, cluster-6.x, blist.
    #[arg(long = "allocator", value_name = "NAME")]
    allocators: Vec<String>,
    /// Measured allocations per cell (after the fill), 1..=1048576.
    #[arg(long, default_value_t = BenchConfig::default().allocs as u64,
          value_parser = clap::value_parser!(u64).range(1..=bench::MAX_ALLOCS as u64))]
    allocs: u64,
    /// Seed of the request streams; the same seed gives the same work figures.
    #[arg(long, default_value_t = BenchConfig::default().seed)]
    seed: u64,
    /// Order reclaim hands pages over in: lru (2.6's LRU lists) or vaddr (2.4's
    /// page-table walk).
    #[arg(long, value_enum, default_value_t = OrderArg::Lru)]
    order: OrderArg,
    /// Print `{"rows": [...]}` instead of tables.
    #[arg(long)]
    json: bool,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum OrderArg {
    Lru,
    Vaddr,
}

fn parse_slots(s: &str) -> Result<u64, String> {
    let (digits, unit) = match s.strip_suffix("Ki") {
        Some(d) => (d, 1u64 << 10),
        None => match s.strip_suffix("Mi") {
            Some(d) => (d, 1 << 20),
            None => (s, 1),
        },
    };
    digits
        .trim()
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(unit))
        .ok_or_else(|| format!("{s:?} is not a slot count (try 65536, 64Ki or 4Mi)"))
}

fn parse_fill(s: &str) -> Result<f64, String> {
    let (num, scale) = match s.strip_suffix('%') {
        Some(p) => (p, 100.0),
        None => (s, 1.0),
    };
    // round away the binary noise of dividing by 100, so that 99.9% and 0.999 are the
    // same fill (and the same stream seed)
    num.trim()
        .parse::<f64>()
        .map(|f| (f / scale * 1e12).round() / 1e12)
        .map_err(|_| format!("{s:?} is not a fill level (try 0.99 or 99%)"))
}

fn config(a: &SwapBenchArgs) -> BenchConfig {
    let mut cfg = BenchConfig {
        allocs: a.allocs as usize,
        seed: a.seed,
        ..BenchConfig::default()
    };
    if let Some(slots) = a.slots {
        cfg.slots = vec![slots];
    }
    if let Some(fill) = a.fill {
        cfg.fills = vec![fill];
    }
    if !a.allocators.is_empty() {
        cfg.allocators = a.allocators.clone();
    }
    cfg.stream.order = match a.order {
        OrderArg::Lru => Order::Lru,
        OrderArg::Vaddr => Order::Vaddr,
    };
    cfg
}

pub fn run(a: SwapBenchArgs) -> anyhow::Result<ExitCode> {
    let cfg = config(&a);
    let total = (cfg.allocators.len() * cfg.slots.len() * cfg.fills.len()) as u64;
    let rows = match crate::progress::enabled() {
        true => {
            let (display, done) = crate::progress::cells(total);
            let rows = bench::run_observed(&cfg, &|| {
                done.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            });
            drop(display);
            rows
        }
        false => bench::run_observed(&cfg, &crate::progress::tenths("swap-bench".into(), "cells", total)),
    }
    .context("swap-bench")?;
    if a.json {
        #[derive(Serialize)]
        struct Out<'a> {
            rows: &'a [Row],
        }
        outln!("{}", serde_json::to_string_pretty(&Out { rows: &rows })?)?;
    } else {
        out!("{}", render(&cfg, &rows))?;
    }
    Ok(ExitCode::SUCCESS)
}

fn size_label(slots: u64) -> String {
    let bytes = slots * 4096;
    let count = match slots {
        s if s % (1 << 20) == 0 => format!("{} Mi", s >> 20),
        s if s % (1 << 10) == 0 => format!("{} Ki", s >> 10),
        s => s.to_string(),
    };
    let size = if bytes >= 1 << 30 {
        format!("{:.4} GiB", bytes as f64 / (1u64 << 30) as f64)
    } else {
        format!("{:.4} MiB", bytes as f64 / (1u64 << 20) as f64)
    };
    let size = size.trim_end_matches(" GiB").trim_end_matches(" MiB");
    let size = size.trim_end_matches('0').trim_end_matches('.');
    let unit = if bytes >= 1 << 30 { "GiB" } else { "MiB" };
    format!("{count} slots ({size} {unit} of 4 KiB pages)")
}

fn percent(fill: f64) -> String {
    let p = format!("{:.1}", fill * 100.0);
    format!("{} %", p.trim_end_matches(".0"))
}

/// Right-align every column but the first two, pad to the widest cell.
fn table(header: &[&str], body: &[Vec<String>]) -> String {
    let mut width: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in body {
        for (w, cell) in width.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let mut out = String::new();
        for (i, (cell, w)) in cells.iter().zip(&width).enumerate() {
            let pad = w - cell.chars().count();
            if i == 0 {
                out.push_str(cell);
                out.push_str(&" ".repeat(pad));
            } else {
                out.push_str("  ");
                out.push_str(&" ".repeat(pad));
                out.push_str(cell);
            }
        }
        out.trim_end().to_string() + "\n"
    };
    let mut out = line(header.to_vec());
    // a blank line between allocators, unless each has a single row
    let grouped = body.iter().any(|row| row[0].is_empty());
    let mut last = "";
    for row in body {
        if grouped && !row[0].is_empty() && !last.is_empty() {
            out.push('\n');
        }
        if !row[0].is_empty() {
            last = &row[0];
        }
        out += &line(row.iter().map(String::as_str).collect());
    }
    out
}

fn render(cfg: &BenchConfig, rows: &[Row]) -> String {
    let order = match cfg.stream.order {
        Order::Lru => "LRU-order",
        Order::Vaddr => "virtual-address-order",
    };
    let mut out = format!(
        "latlab swap-bench: {} allocators x {} sizes x {} fill levels, {} measured allocations \
         per cell, seed {}, {order} swap-out bursts of {} pages\n\
         work     swap_map entries read (cluster-6.x: also cluster descriptors; blist: tree \
         nodes) per allocation\n\
         locked   longest stretch of that work under a lock without a preemption point\n\
         layout   share of a process's consecutive virtual pages put in consecutive slots\n\
         *        cost starts to grow: first fill where mean work reaches {GROWTH_FACTOR}x its \
         value at the emptiest fill (taken as at least {GROWTH_FLOOR})\n",
        cfg.allocators.len(),
        cfg.slots.len(),
        cfg.fills.len(),
        cfg.allocs,
        cfg.seed,
        cfg.stream.burst,
    );
    let header = [
        "allocator",
        "fill",
        "",
        "work mean",
        "p99",
        "max",
        "locked max",
        "ns/alloc",
        "layout",
    ];
    for &slots in &cfg.slots {
        out += &format!("\n== {} ==\n", size_label(slots));
        let mut body = Vec::new();
        for name in &cfg.allocators {
            let onset = growth_onset(rows, name, slots);
            let mine = rows.iter().filter(|r| &r.allocator == name && r.slots == slots);
            for (i, r) in mine.enumerate() {
                body.push(vec![
                    if i == 0 { name.clone() } else { String::new() },
                    percent(r.fill),
                    if onset == Some(r.fill) { "*" } else { "" }.to_string(),
                    format!("{:.1}", r.work_mean),
                    r.work_p99.to_string(),
                    r.work_max.to_string(),
                    r.max_locked_work.to_string(),
                    format!("{:.0}", r.ns_per_alloc),
                    format!("{:.2}", r.layout),
                ]);
            }
        }
        out += &table(&header, &body);
    }
    let failed: u64 = rows.iter().map(|r| r.failed).sum();
    if failed > 0 {
        out += &format!(
            "\nnote: {failed} measured allocations found the swap area full (a fill too close \
             to 100 % for the burst size)\n"
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_sizes_and_fills_in_the_forms_the_help_promises() {
        assert_eq!(parse_slots("65536"), Ok(65536));
        assert_eq!(parse_slots("64Ki"), Ok(65536));
        assert_eq!(parse_slots("4Mi"), Ok(4 << 20));
        assert!(parse_slots("4Gi").is_err());
        assert!(parse_slots("-1").is_err());
        assert!(parse_slots("99999999999999999999Mi").is_err());
        assert_eq!(parse_fill("0.99"), Ok(0.99));
        assert_eq!(parse_fill("99.9%"), Ok(0.999));
        assert!(parse_fill("full").is_err());
    }

    #[test]
    fn labels_read_well() {
        assert_eq!(size_label(1 << 16), "64 Ki slots (256 MiB of 4 KiB pages)");
        assert_eq!(size_label(4 << 20), "4 Mi slots (16 GiB of 4 KiB pages)");
        assert_eq!(size_label(1000), "1000 slots (3.9062 MiB of 4 KiB pages)");
        assert_eq!(percent(0.999), "99.9 %");
        assert_eq!(percent(0.5), "50 %");
    }

    #[test]
    fn table_aligns_columns_and_separates_allocators() {
        let body = vec![
            vec!["a".into(), "0 %".into(), "".into(), "1.0".into()],
            vec!["".into(), "50 %".into(), "*".into(), "12345.0".into()],
            vec!["bb".into(), "0 %".into(), "".into(), "2.0".into()],
        ];
        let t = table(&["allocator", "fill", "", "work"], &body);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 5); // header, 2 rows, blank, 1 row
        assert_eq!(lines[3], "");
        let ends: Vec<usize> = [0, 1, 2, 4].iter().map(|&i| lines[i].len()).collect();
        assert!(ends.iter().all(|&e| e == ends[0]), "{t}");
        // one row per allocator: no blank lines
        let flat = table(
            &["allocator", "fill"],
            &[vec!["a".into(), "0 %".into()], vec!["bb".into(), "0 %".into()]],
        );
        assert_eq!(flat.lines().count(), 3);
    }
}
