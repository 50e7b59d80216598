use latlab_sim::*;
use std::collections::BTreeSet;

fn main() {
    let which = std::env::args().nth(1).unwrap_or("stock".into());
    let secs: u64 = std::env::args().nth(2).map(|s| s.parse().unwrap()).unwrap_or(3000);
    let m = MachineProfile {
        name: "piii-850".into(),
        description: "".into(),
        cpu_mhz: 850.0,
        kernel_cpi: 1.5,
        mem_latency_ns: 175.0,
        copy_mb_s: 120.0,
        ram_mib: 768,
        swap_mib: 1536,
        irq_entry_exit_ns: 1500,
        tick_handler_ns: 1000,
        rtc_handler_ns: 2000,
        disk_handler_ns: 3000,
        syscall_ns: 370,
        ctx_switch_ns: 800,
        schedule_base_ns: 1000,
        goodness_per_task_ns: 60,
        disk: DiskProfile {
            position_ns: 12_700_000,
            seq_mb_s: 28.0,
            max_request_kib: 64,
            nr_requests: 128,
        },
        net_mb_s: 10.0,
    };
    let stock = [
        "truncate_list_pages",
        "shrink_cache",
        "swap_out",
        "journal_commit_transaction",
        "kswapd_balance",
        "read_zero",
    ];
    let minill = [
        "wait_for_buffers",
        "bread",
        "dentry_iput",
        "journal_commit:write_out_data",
        "statm_pte_range",
        "proc_file_read",
        "filemap_fdatasync",
        "do_generic_file_read",
        "generic_file_write",
        "submit_bh",
    ];
    let ll = [
        "write_some_buffers",
        "prune_dcache",
        "prune_icache",
        "dispose_list",
        "ext3_free_data",
        "zap_page_range",
        "swap_out_pmd",
        "close_files",
    ];
    let mut pts: BTreeSet<String> = stock.iter().map(|s| s.to_string()).collect();
    let mut preempt = PreemptModel::None;
    if which.contains("mini") || which.contains("ll") {
        pts.extend(minill.iter().map(|s| s.to_string()));
    }
    if which == "ll" {
        pts.extend(ll.iter().map(|s| s.to_string()));
    }
    if which.contains("preempt") {
        preempt = PreemptModel::Kernel;
    }
    let v = Variant {
        name: which.clone(),
        description: "".into(),
        base: "2.4.18".into(),
        preempt,
        points: pts,
        hz: 100,
        sched: SchedClass::Goodness24,
        swap_allocator: "scan-2.4".into(),
    };
    let cfg = SimConfig {
        machine: m,
        variant: v,
        workload: Workload {
            name: "seed000".into(),
            commands: workload::script::seed000_script(),
            gap_ms: 0,
            preload: Preload {
                cache_full: true,
                old_file_kb: 64,
                unused_dentries: 150_000,
                referenced: true,
            },
        },
        rtc_hz: 2048,
        rt_priority: 99,
        seed: 1,
        min_duration_ns: 0,
        max_duration_ns: secs * 1_000_000_000,
    };
    let t = std::time::Instant::now();
    let (r, st) = simulate(&cfg, &mut |_, _| {}).unwrap();
    let el = t.elapsed().as_secs_f64();
    let s = &r.streams[0];
    println!(
        "{which}: sim {:.1}s wall {:.2}s events {} ({:.1} M/s) samples {} max {:.3} ms p99 {:.3} ms",
        st.simulated_ns as f64 / 1e9,
        el,
        st.events,
        st.events as f64 / el / 1e6,
        s.hist.count(),
        s.hist.max() as f64 / 1e6,
        s.hist.quantile(0.99) as f64 / 1e6
    );
    println!("{:?}", r.counters);
    if std::env::var_os("TRACE").is_some() {
        if let Some(t) = &r.trace {
            for e in t.entries.iter().take(80) {
                println!(
                    "    {:08x} {:>10.3}ms {} ({})",
                    e.preempt_count,
                    e.t_ns as f64 / 1e6,
                    e.func,
                    e.parent
                );
            }
        }
        println!("{:#?}", s.worst[0].attribution);
    }
    for w in s.worst.iter().take(5) {
        println!(
            "  {:.3} ms at {:.1}s: {:?}",
            w.latency_ns as f64 / 1e6,
            w.at_ns as f64 / 1e9,
            w.attribution.cause
        );
    }
}
// trace dump
#[allow(dead_code)]
fn _x() {}
