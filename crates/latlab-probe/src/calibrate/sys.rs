//! What sysfs and procfs say about the machine: CPUs and their topology, caches, NUMA nodes,
//! memory, the clock, the kernel's HZ, and the block device under a directory.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn read(path: impl AsRef<Path>) -> Option<String> {
    std::fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}

/// A sysfs CPU list (`0-3,8,10-11`) as CPU numbers; `None` if it does not parse.
pub fn cpu_list(s: &str) -> Option<Vec<u32>> {
    let mut out = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (u32, u32) = (a.parse().ok()?, b.parse().ok()?);
                if a > b || b - a > 1 << 16 {
                    return None;
                }
                out.extend(a..=b);
            }
            None => out.push(part.parse().ok()?),
        }
    }
    Some(out)
}

/// The CPUs online (`/sys/devices/system/cpu/online`), else those this process may use.
pub fn online_cpus() -> Vec<u32> {
    read("/sys/devices/system/cpu/online")
        .and_then(|s| cpu_list(&s))
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| crate::parse::allowed_cpus().into_iter().map(|c| c as u32).collect())
}

fn cpu_dir(cpu: u32) -> PathBuf {
    PathBuf::from(format!("/sys/devices/system/cpu/cpu{cpu}"))
}

/// Each core's logical CPUs (`topology/thread_siblings_list`), one set per core; a CPU
/// without the file is a core of its own.
pub fn smt_siblings(cpus: &[u32]) -> Vec<Vec<u32>> {
    let sets: BTreeSet<Vec<u32>> = cpus
        .iter()
        .map(|&c| {
            read(cpu_dir(c).join("topology/thread_siblings_list"))
                .and_then(|s| cpu_list(&s))
                .filter(|v| !v.is_empty())
                .unwrap_or_else(|| vec![c])
        })
        .collect();
    sets.into_iter().collect()
}

/// The CPUs of each NUMA node (`/sys/devices/system/node/nodeN/cpulist`); one node of every
/// CPU when the kernel has no node directory.
pub fn numa_nodes(cpus: &[u32]) -> Vec<Vec<u32>> {
    let mut nodes: Vec<(u32, Vec<u32>)> = std::fs::read_dir("/sys/devices/system/node")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let n: u32 = e.file_name().to_str()?.strip_prefix("node")?.parse().ok()?;
            let list = cpu_list(&read(e.path().join("cpulist"))?)?;
            (!list.is_empty()).then_some((n, list))
        })
        .collect();
    nodes.sort();
    match nodes.is_empty() {
        true => vec![cpus.to_vec()],
        false => nodes.into_iter().map(|(_, l)| l).collect(),
    }
}

/// One distinct cache: level, kind (`data`, `instruction`, `unified`), KiB, CPUs sharing it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Cache {
    pub level: u32,
    pub kind: String,
    pub size_kib: u64,
    pub shared: Vec<u32>,
}

/// Every distinct cache of the CPUs (`cache/indexN/{level,type,size,shared_cpu_list}`).
pub fn caches(cpus: &[u32]) -> Vec<Cache> {
    let mut out = BTreeSet::new();
    for &c in cpus {
        for e in std::fs::read_dir(cpu_dir(c).join("cache"))
            .into_iter()
            .flatten()
            .flatten()
        {
            let p = e.path();
            if !e.file_name().to_string_lossy().starts_with("index") {
                continue;
            }
            let parsed = (|| {
                let level = read(p.join("level"))?.parse().ok()?;
                let kind = read(p.join("type"))?.to_ascii_lowercase();
                let size = read(p.join("size"))?;
                let size_kib = parse_kib(&size)?;
                let shared = read(p.join("shared_cpu_list")).and_then(|s| cpu_list(&s))?;
                Some(Cache {
                    level,
                    kind,
                    size_kib,
                    shared,
                })
            })();
            if let Some(cache) = parsed {
                out.insert(cache);
            }
        }
    }
    out.into_iter().collect()
}

/// sysfs cache sizes: `32K`, `1024K`, `16M`.
fn parse_kib(s: &str) -> Option<u64> {
    let (num, mult) = match s.as_bytes().last()? {
        b'K' => (&s[..s.len() - 1], 1),
        b'M' => (&s[..s.len() - 1], 1024),
        b'G' => (&s[..s.len() - 1], 1024 * 1024),
        _ => (s, 1),
    };
    num.parse::<u64>().ok().map(|n| n * mult)
}

/// A `/proc/meminfo` figure in KiB (`MemTotal`, `SwapTotal`).
pub fn meminfo_kib(key: &str) -> Option<u64> {
    meminfo_kib_in(&read("/proc/meminfo")?, key)
}

fn meminfo_kib_in(text: &str, key: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
}

/// The CPU model (`/proc/cpuinfo` `model name`, else `Hardware`/`CPU part`).
pub fn cpu_model() -> String {
    read("/proc/cpuinfo")
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name") || l.starts_with("Hardware"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into())
}

/// Each CPU's clock in MHz as /proc/cpuinfo's `cpu MHz` lines give it, else cpufreq's
/// `cpuinfo_max_freq`; with where it was read.
pub fn cpu_mhz(cpus: &[u32]) -> Option<(Vec<f64>, &'static str)> {
    let from_cpuinfo: Vec<f64> = read("/proc/cpuinfo")
        .map(|s| {
            s.lines()
                .filter(|l| l.starts_with("cpu MHz"))
                .filter_map(|l| l.split_once(':')?.1.trim().parse().ok())
                .collect()
        })
        .unwrap_or_default();
    if !from_cpuinfo.is_empty() {
        return Some((from_cpuinfo, "/proc/cpuinfo `cpu MHz`"));
    }
    let freq: Vec<f64> = cpus
        .iter()
        .filter_map(|&c| read(cpu_dir(c).join("cpufreq/cpuinfo_max_freq"))?.parse::<f64>().ok())
        .map(|khz| khz / 1000.0)
        .collect();
    (!freq.is_empty()).then_some((freq, "cpufreq cpuinfo_max_freq"))
}

/// `CONFIG_HZ` of the running kernel's config, if readable.
pub fn config_hz() -> Option<u32> {
    crate::meta::kernel_config()?
        .lines()
        .find_map(|l| l.strip_prefix("CONFIG_HZ="))
        .and_then(|v| v.parse().ok())
}

/// The local timer interrupts CPU `cpu` has taken (`/proc/interrupts`, the `LOC` row).
pub fn local_timer_interrupts(cpu: u32) -> Option<u64> {
    crate::explain::interrupts(cpu as usize)
        .into_iter()
        .find_map(|(name, n)| (name == "LOC" || name.starts_with("LOC ")).then_some(n))
}

/// The block device under `dir`, as sysfs names it, with its queue's facts.
#[derive(Clone, Debug, Default)]
pub struct BlockDev {
    pub name: String,
    pub rotational: bool,
    pub capacity_gb: f64,
    pub max_sectors_kb: Option<u64>,
    pub nr_requests: Option<u64>,
    /// The device's command queue depth (`device/queue_depth`, SCSI/SATA) or blk-mq's tags of
    /// its first hardware queue (`mq/0/nr_tags`), with which.
    pub queue_depth: Option<(u64, &'static str)>,
}

/// The whole disk holding `dir` (its partition's parent), or `None` when `dir` is on no block
/// device (tmpfs, overlay: device major 0).
pub fn block_device(dir: &Path) -> Option<BlockDev> {
    use std::os::unix::fs::MetadataExt;
    let dev = std::fs::metadata(dir).ok()?.dev();
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    if major == 0 {
        return None;
    }
    let mut sys = std::fs::canonicalize(format!("/sys/dev/block/{major}:{minor}")).ok()?;
    if sys.join("partition").exists() {
        sys = sys.parent()?.to_path_buf();
    }
    let name = sys.file_name()?.to_string_lossy().into_owned();
    let num = |f: &str| read(sys.join(f)).and_then(|s| s.parse::<u64>().ok());
    let queue_depth = num("device/queue_depth")
        .map(|d| (d, "device/queue_depth"))
        .or_else(|| num("mq/0/nr_tags").map(|d| (d, "mq/0/nr_tags")));
    Some(BlockDev {
        rotational: num("queue/rotational") == Some(1),
        capacity_gb: num("size").map_or(0.0, |s| s as f64 * 512.0 / 1e9),
        max_sectors_kb: num("queue/max_sectors_kb"),
        nr_requests: num("queue/nr_requests"),
        queue_depth,
        name,
    })
}

/// Total hypervisor steal time of `cpus` so far, ns (/proc/stat; `None` without the column).
pub fn steal_ns(cpus: &[u32]) -> Option<u64> {
    cpus.iter()
        .map(|&c| crate::explain::steal_ns(c as usize))
        .sum::<Option<u64>>()
}

/// The host's name, made a machine name (`[A-Za-z0-9._-]`).
pub fn hostname() -> String {
    let h = read("/proc/sys/kernel/hostname").unwrap_or_else(|| "host".into());
    h.chars()
        .map(|c| match c.is_ascii_alphanumeric() || "._-".contains(c) {
            true => c,
            false => '-',
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sysfs_lists_sizes_and_meminfo_parse() {
        assert_eq!(cpu_list("0-3,8,10-11"), Some(vec![0, 1, 2, 3, 8, 10, 11]));
        assert_eq!(cpu_list("5"), Some(vec![5]));
        assert_eq!(cpu_list("3-1"), None);
        assert_eq!(cpu_list("x"), None);
        assert_eq!(parse_kib("32K"), Some(32));
        assert_eq!(parse_kib("16M"), Some(16384));
        assert_eq!(parse_kib("bad"), None);
        let mi = "MemTotal:        8048576 kB\nSwapTotal:             0 kB\n";
        assert_eq!(meminfo_kib_in(mi, "MemTotal"), Some(8048576));
        assert_eq!(meminfo_kib_in(mi, "SwapTotal"), Some(0));
        assert_eq!(meminfo_kib_in(mi, "Mem"), None);
    }

    #[test]
    fn this_machines_topology_covers_its_online_cpus() {
        let cpus = online_cpus();
        assert!(!cpus.is_empty());
        let covered: BTreeSet<u32> = smt_siblings(&cpus).into_iter().flatten().collect();
        assert!(cpus.iter().all(|c| covered.contains(c)), "{cpus:?} {covered:?}");
        assert!(!numa_nodes(&cpus).is_empty());
    }
}
