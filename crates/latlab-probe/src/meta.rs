//! Run metadata for the probe: machine (hostname + CPU model), kernel (`uname -r`).

use latlab_core::result::{Engine, RunMeta};
use std::collections::BTreeMap;

pub fn machine() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown-host".into());
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let ncpu = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    format!("{host} ({model}, {ncpu} CPUs)")
}

pub fn kernel() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}

pub fn new_meta(workload: &str, duration_ns: u64, settings: BTreeMap<String, String>) -> RunMeta {
    RunMeta {
        engine: Engine::Probe,
        machine: machine(),
        kernel: kernel(),
        workload: workload.to_string(),
        seed: 0,
        duration_ns,
        version: env!("CARGO_PKG_VERSION").to_string(),
        settings,
    }
}
