//! Run metadata for the probe: machine (hostname + CPU model), kernel (`uname -r`), and the
//! system's facts that bear on latency (preemption model, command line, clocksource, cpufreq
//! governor, steal time, the kernel's latency tracers).

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

/// The run's metadata: this machine and kernel, `settings` and the system's facts
/// ([`system_facts`]).
pub fn new_meta(workload: &str, duration_ns: u64, mut settings: BTreeMap<String, String>) -> RunMeta {
    settings.extend(system_facts());
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

/// The facts about this system that bear on latency, keyed as [`RunMeta::SYSTEM`] names
/// them (all but `steal`, which [`Steal`] measures over the run).
pub fn system_facts() -> BTreeMap<String, String> {
    let cmdline = read("/proc/cmdline").unwrap_or_default();
    let mut m = BTreeMap::new();
    // sysconf(_SC_NPROCESSORS_ONLN): the CPUs online, what the model's `cpus` counts.
    // SAFETY: sysconf has no preconditions.
    let online = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    m.insert(
        "cpus_online".into(),
        if online > 0 {
            online.to_string()
        } else {
            "not readable (sysconf)".into()
        },
    );
    m.insert("preemption".into(), preemption(&cmdline));
    let rt = read("/sys/kernel/realtime");
    m.insert("realtime".into(), realtime(rt.as_deref()));
    m.insert("threadirqs".into(), threadirqs(&cmdline, rt.as_deref() == Some("1")));
    m.insert("irq_threads".into(), irq_threads());
    m.insert(
        "cmdline".into(),
        match cmdline.is_empty() {
            true => "not readable (/proc/cmdline)".into(),
            false => cmdline,
        },
    );
    m.insert(
        "clocksource".into(),
        read("/sys/devices/system/clocksource/clocksource0/current_clocksource")
            .unwrap_or_else(|| "not readable (/sys/devices/system/clocksource)".into()),
    );
    m.insert("cpufreq_governor".into(), governors());
    m.insert("latency_tracers".into(), latency_tracers());
    m
}

fn read(path: &str) -> Option<String> {
    std::fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}

/// The preemption model in force and where it was read: `/sys/kernel/debug/sched/preempt`
/// (debugfs, root) names the one in force; else the kernel command line's `preempt=` (on a
/// PREEMPT_DYNAMIC kernel), the kernel config's default, or `uname -v`.
pub(crate) fn preemption(cmdline: &str) -> String {
    if let Some(s) = read("/sys/kernel/debug/sched/preempt") {
        if let Some(m) = s.split_whitespace().find(|w| w.starts_with('(')) {
            return format!("{} (/sys/kernel/debug/sched/preempt)", m.trim_matches(['(', ')']));
        }
    }
    preemption_from(
        cmdline,
        kernel_config().as_deref(),
        &read("/proc/sys/kernel/version").unwrap_or_default(),
    )
}

/// Is the kernel PREEMPT_RT? kernel/ksysfs.c has `/sys/kernel/realtime` (reading `1`) only
/// when CONFIG_PREEMPT_RT is set (mainline since 6.12; the RT patch set before).
fn realtime(file: Option<&str>) -> String {
    match file {
        Some("1") => "yes (/sys/kernel/realtime is 1)".into(),
        Some(other) => format!("no (/sys/kernel/realtime is {other:?})"),
        None => "no (/sys/kernel/realtime absent: not a PREEMPT_RT kernel)".into(),
    }
}

/// Are interrupt handlers forced into threads? kernel/irq/manage.c's `force_irqthreads()`:
/// on under PREEMPT_RT always, else with `threadirqs` on the command line
/// (CONFIG_IRQ_FORCED_THREADING). Without it, only handlers their drivers request as
/// threaded (`request_threaded_irq`) run in `irq/N-name` threads.
fn threadirqs(cmdline: &str, rt: bool) -> String {
    if rt {
        "forced (PREEMPT_RT threads every handler not marked IRQF_NO_THREAD)".into()
    } else if cmdline.split_whitespace().any(|w| w == "threadirqs") {
        "forced (threadirqs on the kernel command line)".into()
    } else {
        "no (hard interrupt context; only drivers' own threaded handlers run in threads)".into()
    }
}

/// The interrupt threads (`irq/N-name` kernel threads) with their scheduling policy and
/// real-time priority, read from /proc/PID/stat (fields 40 and 41, proc(5)), sorted by
/// name: `irq/9-acpi FIFO 50, irq/24-nvme0q1 FIFO 50`, or `none` (no handler is threaded).
fn irq_threads() -> String {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return "not readable (/proc)".into();
    };
    let mut threads: Vec<String> = dir
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
        })
        .filter_map(|e| read(&format!("/proc/{}/stat", e.file_name().to_str()?)))
        .filter_map(|stat| irq_thread(&stat))
        .collect();
    threads.sort();
    match threads.is_empty() {
        true => "none".into(),
        false => threads.join(", "),
    }
}

/// `irq/N-name POLICY PRIO` from a /proc/PID/stat line, if it is an interrupt thread's.
fn irq_thread(stat: &str) -> Option<String> {
    // comm is in parentheses and may itself hold ") ": the fields follow the last one.
    let (open, close) = (stat.find('(')?, stat.rfind(')')?);
    let comm = stat.get(open + 1..close)?;
    if !comm.starts_with("irq/") {
        return None;
    }
    // Fields after comm start at field 3 (state); rt_priority is field 40, policy 41.
    let rest: Vec<&str> = stat.get(close + 1..)?.split_whitespace().collect();
    let (prio, policy) = (rest.get(40 - 3)?, rest.get(41 - 3)?);
    let policy = match *policy {
        "0" => "OTHER",
        "1" => "FIFO",
        "2" => "RR",
        "3" => "BATCH",
        "5" => "IDLE",
        "6" => "DEADLINE",
        other => other,
    };
    Some(format!("{comm} {policy} {prio}"))
}

/// The running kernel's config: /proc/config.gz (through `gzip -dc`) or /boot/config-RELEASE.
pub(crate) fn kernel_config() -> Option<String> {
    let gz = std::process::Command::new("gzip")
        .args(["-dc", "/proc/config.gz"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned());
    gz.or_else(|| read(&format!("/boot/config-{}", kernel())))
}

/// [`preemption`] from the command line, the kernel config (if readable) and `uname -v`.
fn preemption_from(cmdline: &str, config: Option<&str>, version: &str) -> String {
    let set = |key: &str| config.is_some_and(|c| c.lines().any(|l| l == format!("{key}=y")));
    let dynamic = set("CONFIG_PREEMPT_DYNAMIC") || version.contains("PREEMPT_DYNAMIC");
    let unread = "/sys/kernel/debug/sched/preempt not readable";
    if set("CONFIG_PREEMPT_RT") || version.contains("PREEMPT_RT") {
        return "full, real-time (PREEMPT_RT)".into();
    }
    if let Some(mode) = cmdline
        .split_whitespace()
        .find_map(|w| w.strip_prefix("preempt="))
        .filter(|_| dynamic)
    {
        return format!("{mode} (preempt= on the kernel command line of a PREEMPT_DYNAMIC kernel; {unread})");
    }
    let default = [
        ("CONFIG_PREEMPT_NONE", "none"),
        ("CONFIG_PREEMPT_VOLUNTARY", "voluntary"),
        ("CONFIG_PREEMPT", "full"),
        ("CONFIG_PREEMPT_LAZY", "lazy"),
    ]
    .into_iter()
    .find(|(k, _)| set(k));
    match (default, dynamic) {
        (Some((key, mode)), true) => {
            format!(
                "{mode} ({key}, the default of a PREEMPT_DYNAMIC kernel, no preempt= on its command line; {unread})"
            )
        }
        (Some((key, mode)), false) => format!("{mode} ({key} in the kernel config)"),
        (None, true) => format!("dynamic, mode unknown (uname -v says PREEMPT_DYNAMIC; {unread}, no kernel config)"),
        (None, false) if version.contains("PREEMPT ") => "full (uname -v says PREEMPT)".into(),
        (None, false) => "none or voluntary (uname -v names no PREEMPT; no kernel config)".into(),
    }
}

/// Each CPU's cpufreq governor: one name when they agree, else per CPU.
fn governors() -> String {
    let mut per_cpu: Vec<(usize, String)> = crate::parse::allowed_cpus()
        .into_iter()
        .filter_map(|c| {
            Some((
                c,
                read(&format!("/sys/devices/system/cpu/cpu{c}/cpufreq/scaling_governor"))?,
            ))
        })
        .collect();
    per_cpu.sort();
    match per_cpu.first() {
        None => "none (no cpufreq driver: the frequency is not the kernel's to set)".into(),
        Some((_, g)) if per_cpu.iter().all(|(_, x)| x == g) => format!("{g} (every CPU)"),
        Some(_) => per_cpu
            .iter()
            .map(|(c, g)| format!("cpu{c} {g}"))
            .collect::<Vec<_>>()
            .join(", "),
    }
}

/// Whether the kernel has its own latency tracers (timerlat, osnoise, hwlat).
fn latency_tracers() -> String {
    let path = "/sys/kernel/tracing/available_tracers";
    let Some(all) = read(path) else {
        return format!("not known ({path} not readable: tracefs needs root)");
    };
    let have: Vec<&str> = ["timerlat", "osnoise", "hwlat"]
        .into_iter()
        .filter(|t| all.split_whitespace().any(|a| a == *t))
        .collect();
    match have.is_empty() {
        true => format!("none of timerlat, osnoise, hwlat (available_tracers: {all})"),
        false => format!("{} in available_tracers (latlab does not run them)", have.join(", ")),
    }
}

/// Hypervisor steal time on every CPU over a run (/proc/stat, USER_HZ resolution).
#[derive(Debug)]
pub struct Steal(Vec<(usize, u64)>);

impl Steal {
    pub fn start() -> Steal {
        Steal(
            crate::parse::allowed_cpus()
                .into_iter()
                .filter_map(|c| Some((c, crate::explain::steal_ns(c)?)))
                .collect(),
        )
    }

    /// The steal since [`Steal::start`], per CPU: `cpu0 0.0 ms, cpu1 12.0 ms`.
    pub fn finish(&self) -> String {
        if self.0.is_empty() {
            return "not readable (/proc/stat has no steal column)".into();
        }
        let per_cpu: Vec<String> = self
            .0
            .iter()
            .map(|&(c, s)| {
                let now = crate::explain::steal_ns(c).unwrap_or(s);
                format!("cpu{c} {:.1} ms", now.saturating_sub(s) as f64 / 1e6)
            })
            .collect();
        format!("{} during the run (/proc/stat)", per_cpu.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preemption_model_from_each_source() {
        let config =
            "CONFIG_PREEMPT_BUILD=y\nCONFIG_PREEMPT_NONE=y\n# CONFIG_PREEMPT is not set\nCONFIG_PREEMPT_DYNAMIC=y\n";
        let v = "#1 SMP PREEMPT_DYNAMIC @0";
        assert!(preemption_from("quiet", Some(config), v)
            .starts_with("none (CONFIG_PREEMPT_NONE, the default of a PREEMPT_DYNAMIC"));
        assert!(preemption_from("quiet preempt=full", Some(config), v)
            .starts_with("full (preempt= on the kernel command line"));
        assert!(preemption_from("", None, v).starts_with("dynamic, mode unknown"));
        assert_eq!(
            preemption_from("", Some("CONFIG_PREEMPT=y\n"), "#1 SMP PREEMPT"),
            "full (CONFIG_PREEMPT in the kernel config)"
        );
        assert_eq!(
            preemption_from("", Some("CONFIG_PREEMPT_RT=y\n"), "#1"),
            "full, real-time (PREEMPT_RT)"
        );
        assert_eq!(
            preemption_from("", None, "#1 SMP PREEMPT Tue"),
            "full (uname -v says PREEMPT)"
        );
        // preempt= means nothing to a kernel that cannot switch.
        assert!(
            preemption_from("preempt=full", Some("CONFIG_PREEMPT_VOLUNTARY=y\n"), "#1 SMP").starts_with("voluntary (")
        );
    }

    #[test]
    fn realtime_and_forced_threading_from_their_sources() {
        assert!(realtime(Some("1")).starts_with("yes"));
        assert!(realtime(None).starts_with("no"));
        assert!(realtime(Some("0")).starts_with("no"));
        assert!(threadirqs("ro quiet", true).starts_with("forced (PREEMPT_RT"));
        assert!(threadirqs("ro threadirqs quiet", false).starts_with("forced (threadirqs"));
        assert!(threadirqs("ro nothreadirqs", false).starts_with("no"));
    }

    #[test]
    fn an_interrupt_threads_policy_and_priority_come_from_its_stat_line() {
        // A /proc/PID/stat of an irq thread (fields 1-52, proc(5)): rt_priority 50, SCHED_FIFO.
        let fields = |comm: &str, prio: u32, policy: u32| {
            let mut f: Vec<String> = (3..=52).map(|_| "0".to_string()).collect();
            f[0] = "S".into();
            f[40 - 3] = prio.to_string();
            f[41 - 3] = policy.to_string();
            format!("123 ({comm}) {}", f.join(" "))
        };
        assert_eq!(
            irq_thread(&fields("irq/24-nvme0q1", 50, 1)).as_deref(),
            Some("irq/24-nvme0q1 FIFO 50")
        );
        assert_eq!(
            irq_thread(&fields("irq/9-a) b", 49, 2)).as_deref(),
            Some("irq/9-a) b RR 49")
        );
        assert_eq!(irq_thread(&fields("ksoftirqd/0", 0, 0)), None);
        assert_eq!(irq_thread("7 (irq/1-i8042) S 2"), None, "a short line is no thread");
    }

    #[test]
    fn system_facts_name_every_key() {
        let f = system_facts();
        for k in RunMeta::SYSTEM.iter().filter(|&&k| k != "steal") {
            assert!(f.get(*k).is_some_and(|v| !v.is_empty()), "{k}: {f:?}");
        }
        assert!(Steal::start().finish().contains("during the run"));
    }
}
