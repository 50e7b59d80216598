//! Machine profile: the hardware a model run simulates, and the per-operation costs every
//! kernel variant of an experiment shares. Profiles are data (see `machines/*.toml`, where
//! each value carries its source); this module only defines the fields and derives the costs.
//!
//! Code-path costs are not stored per loop here: the catalog (`kernel::catalog`) describes
//! each loop body as instructions and cache misses read off the kernel code, and
//! [`MachineProfile::cost`] turns those into time with this machine's CPI, clock and memory
//! latency. That keeps one set of numbers per machine, shared by every path and variant.

use crate::spread::Spreads;
use latlab_core::Nanos;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The most logical CPUs a profile may give: the per-CPU runqueues' limit
/// ([`crate::kernel::cpumask::MAX_CPUS`]); a kernel whose CPUs share one runqueue (2.4,
/// O(1)) runs on at most [`crate::MAX_SHARED_QUEUE_CPUS`].
pub const MAX_CPUS: u32 = crate::kernel::cpumask::MAX_CPUS as u32;

fn one_cpu() -> u32 {
    1
}

fn full_speed() -> f64 {
    1.0
}

fn is_full_speed(s: &f64) -> bool {
    *s == 1.0
}

/// A simulated machine.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MachineProfile {
    /// Profile name (`piii-850`).
    pub name: String,
    /// One-line description (CPU, memory, disk).
    pub description: String,
    /// CPU clock in MHz.
    pub cpu_mhz: f64,
    /// Logical CPUs the kernel runs on (a Pentium 4 with Hyper-Threading has two); 1 when
    /// the profile does not say.
    #[serde(default = "one_cpu")]
    pub cpus: u32,
    /// The share of its own speed a logical CPU keeps while its sibling is busy: below 1 for
    /// Hyper-Threading siblings sharing one core (CPUs 2k and 2k+1), 1 (the default) for
    /// separate cores.
    #[serde(default = "full_speed", skip_serializing_if = "is_full_speed")]
    pub sibling_speed: f64,
    /// Cycles per instruction of kernel code (pointer chasing, branches), dimensionless.
    pub kernel_cpi: f64,
    /// Load-to-use latency of a cache miss served from DRAM, ns.
    pub mem_latency_ns: f64,
    /// Bandwidth of a 4 KiB page copy (copy_to_user / copy_from_user / clear), MB/s.
    pub copy_mb_s: f64,
    /// RAM in MiB.
    pub ram_mib: u64,
    /// Online swap space in MiB.
    pub swap_mib: u64,
    /// Hardware interrupt entry + exit (do_IRQ, mask_and_ack, iret), ns: what an interrupt
    /// costs the code it interrupts.
    pub irq_entry_exit_ns: Nanos,
    /// Interrupt entry + exit when the interrupt finds the CPU in its idle loop, ns: leaving
    /// the idle state (a bare-metal CPU's cpuidle exit latency; a halted vCPU woken by its
    /// host) and the way back out of idle to `schedule()`. `latlab probe calibrate` measures
    /// it (docs/probe.md "Calibration"); absent, an idle CPU pays `irq_entry_exit_ns` like a
    /// busy one (every profile under machines/ leaves it out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_irq_entry_exit_ns: Option<Nanos>,
    /// Timer tick handler body (do_timer, update_process_times), ns.
    pub tick_handler_ns: Nanos,
    /// RTC interrupt handler body (rtc_interrupt: read CMOS status, wake_up_interruptible), ns.
    pub rtc_handler_ns: Nanos,
    /// Disk completion handler body (ide_intr, end_request per request), ns.
    pub disk_handler_ns: Nanos,
    /// System call entry + exit (int 0x80 / iret path), ns.
    pub syscall_ns: Nanos,
    /// Context switch (switch_mm + switch_to), ns.
    pub ctx_switch_ns: Nanos,
    /// Fixed part of one schedule() call, ns.
    pub schedule_base_ns: Nanos,
    /// Per-task cost of one goodness() evaluation in the 2.4 runqueue scan, ns.
    pub goodness_per_task_ns: Nanos,
    /// hrtimer interrupt body (`hrtimer_interrupt`: clock reads, `__run_hrtimer`, the expired
    /// timer's function such as `posix_timer_fn` -> `send_sigqueue`, reprogramming the
    /// clock event device), ns.
    pub hrtimer_handler_ns: Nanos,
    /// Catching a signal in a handler: `do_signal`, `setup_rt_frame`, the handler's entry
    /// and `sigreturn` (lmbench `lat_sig catch`), ns.
    pub signal_deliver_ns: Nanos,
    /// Creating a thread and its exit (NPTL `pthread_create` of a detached thread: `clone`
    /// without an mm copy, then the thread's `do_exit`), ns.
    pub thread_create_exit_ns: Nanos,
    /// The disk.
    pub disk: DiskProfile,
    /// Network bandwidth for NFS / cvs reads, MB/s.
    pub net_mb_s: f64,
    /// Catalog items whose instructions or cache misses differ on this machine from the
    /// catalog's (`kernel::catalog::COST_ITEMS`), by item name: a cache line of another size,
    /// a hash table sized for other RAM; and what `--vary catalog.NAME.instr|misses=...` sets.
    /// Empty for the built-in machines.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub catalog: BTreeMap<String, CostOverride>,
    /// How far each field may be off, by field (`disk.seq_mb_s` for the disk's): its
    /// source's class or bounds (`crate::spread`). The model does not read it; `latlab
    /// uncertainty` draws the fields within it.
    #[serde(default, skip_serializing_if = "Spreads::is_empty")]
    pub uncertainty: Spreads,
    /// What `latlab probe calibrate` measured or read on the machine it describes beyond the
    /// fields above (`[host]` and its tables): kept and checked; the model reads its topology
    /// (the per-CPU schedulers' domains, `sched::topology`), not the rest yet. Absent from the
    /// built-in machines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<HostFacts>,
}

/// The facts of a calibrated machine (`[host]`) that no field of the profile holds: its
/// topology, its kernel's HZ and preemption model, micro-benchmark costs, storage rates and
/// the noise that is not the kernel's. The model reads the topology only (the scheduling
/// domains of CFS and EEVDF on several CPUs, [`crate::sched::topology`]; its CPUs are still
/// `cpus`); `latlab probe calibrate` writes them, the loader checks them
/// ([`MachineProfile::validate`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostFacts {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology: Option<Topology>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<HostKernel>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub costs: Option<HostCosts>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage: Option<Storage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise: Option<Noise>,
}

/// `[host.topology]`: the CPUs as sysfs describes them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Topology {
    /// Logical CPUs online.
    pub cpus_online: u32,
    /// The logical CPUs of each core (SMT siblings), one list per core.
    pub smt_siblings: Vec<Vec<u32>>,
    /// The CPUs of each NUMA node, one list per node.
    pub numa_nodes: Vec<Vec<u32>>,
    /// Each distinct cache (`[[host.topology.caches]]`).
    #[serde(default)]
    pub caches: Vec<Cache>,
}

/// One cache of the topology.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cache {
    /// 1 for L1 ...
    pub level: u32,
    /// `data`, `instruction` or `unified`.
    pub kind: String,
    pub size_kib: u64,
    /// The logical CPUs sharing it.
    pub shared_cpus: Vec<u32>,
}

/// `[host.kernel]`: the kernel the machine ran when calibrated.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostKernel {
    /// `uname -r`.
    pub release: String,
    /// The tick rate (CONFIG_HZ).
    pub hz: u32,
    /// The preemption model in force: none, voluntary, full, lazy, or real-time.
    pub preemption: String,
}

/// A measured figure: the median of `runs` repetitions and the 5th and 95th percentiles.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Figure {
    pub median: f64,
    pub p5: f64,
    pub p95: f64,
    pub runs: u32,
}

/// `[host.costs]`: micro-benchmark costs, ns; one not measured is absent.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostCosts {
    /// A system call that does nothing (getppid).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub syscall_ns: Option<Figure>,
    /// One switch of a pipe ping-pong between two threads on one CPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ctx_switch_ns: Option<Figure>,
    /// fork + exec of /bin/true to its exit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fork_exec_ns: Option<Figure>,
    /// A minor fault on a fresh anonymous page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_fault_ns: Option<Figure>,
    /// A timer interrupt, entry to exit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timer_interrupt_ns: Option<Figure>,
}

/// `[host.storage]`: the block device holding the calibration's directory.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Storage {
    /// Its name in /sys/block.
    pub device: String,
    /// sysfs `queue/rotational`.
    pub rotational: bool,
    /// Buffered write(2) rate of 1 MiB records into the page cache, MB/s.
    pub write_mb_s: Figure,
    /// fsync(2) of one freshly written 4 KiB block, us.
    pub fsync_us: Figure,
}

/// `[host.noise]`: gaps in a CPU's execution that are not the kernel's scheduling (the
/// hypervisor's steal, SMIs, interrupts), as hwlat/osnoise or a user-space loop saw them.
/// Reported apart from the kernel's latency. The model replays them only when asked
/// (`SimConfig::replay_noise`, from [`Noise::replay`]): off, it never reads them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Noise {
    /// What measured it (`hwlat`, `osnoise`, `user-space gap detector`).
    pub source: String,
    /// Seconds measured on each CPU.
    pub duration_s: f64,
    /// CPUs measured.
    pub cpus: u32,
    /// A gap counts from this long, us.
    pub threshold_us: f64,
    /// Gaps counted over all CPUs.
    pub gaps: u64,
    /// Gaps per second per CPU.
    pub gaps_per_s: f64,
    /// The longest gap, us.
    pub max_us: f64,
    /// Share of the time lost in gaps, percent.
    pub lost_percent: f64,
    /// The hypervisor's steal time over the measurement (/proc/stat), percent of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steal_percent: Option<f64>,
    /// Gaps per second of each CPU measured, in the order of their numbers (empty in a file
    /// from before they were recorded: every CPU then has `gaps_per_s`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub per_cpu_gaps_per_s: Vec<f64>,
    /// The gaps' lengths (`[host.noise.lengths]`), absent when no gap was counted or in a
    /// file from before they were recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lengths: Option<GapLengths>,
}

/// `[host.noise.lengths]`: quantiles of the gaps' lengths over the whole measurement, us
/// (with `threshold_us` below and `max_us` above them, the distribution the model draws a
/// replayed gap's length from).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GapLengths {
    pub p50_us: f64,
    pub p90_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
}

/// What the model replays of a machine's noise ([`Noise::replay`]): each CPU's gaps arrive
/// as a Poisson process at its rate, each gap's length drawn from the measured distribution.
#[derive(Clone, Debug, PartialEq)]
pub struct GapReplay {
    /// Gaps per second of the model's CPU `i` (`rate_per_s[i]`; a CPU past the list has
    /// `mean_per_s`).
    pub rate_per_s: Vec<f64>,
    pub mean_per_s: f64,
    /// The length distribution as (cumulative share, length ns) points, the share rising
    /// from 0 (the threshold) to 1 (the longest gap); a length between two points is
    /// interpolated geometrically (the lengths are heavy-tailed).
    pub quantiles: [(f64, f64); 6],
}

impl GapReplay {
    /// The gaps per second of CPU `cpu`.
    pub fn rate(&self, cpu: usize) -> f64 {
        self.rate_per_s.get(cpu).copied().unwrap_or(self.mean_per_s)
    }

    /// The length, ns, at cumulative share `u` (0 <= u < 1) of the distribution.
    pub fn length_at(&self, u: f64) -> f64 {
        let q = &self.quantiles;
        let i = q.partition_point(|&(p, _)| p <= u).clamp(1, q.len() - 1);
        let ((p0, a), (p1, b)) = (q[i - 1], q[i]);
        let f = ((u - p0) / (p1 - p0)).clamp(0.0, 1.0);
        match a > 0.0 {
            true => a * (b / a).powf(f),
            false => a + (b - a) * f,
        }
    }
}

impl Noise {
    /// The replay the model runs of this noise (none at all when no gap was counted); `Err`
    /// (the field, why) when gaps were counted but the file does not hold their lengths.
    pub fn replay(&self) -> Result<GapReplay, (&'static str, String)> {
        let l = match (self.lengths, self.gaps) {
            (Some(l), _) => l,
            (None, 0) => {
                let t = self.threshold_us * 1e3;
                return Ok(GapReplay {
                    rate_per_s: Vec::new(),
                    mean_per_s: 0.0,
                    quantiles: [(0.0, t), (0.5, t), (0.9, t), (0.99, t), (0.999, t), (1.0, t)],
                });
            }
            (None, _) => return Err((
                "host.noise.lengths",
                "absent (a machine file from before the gaps' lengths were recorded): re-run `latlab probe calibrate`"
                    .into(),
            )),
        };
        let us = |v: f64| v * 1e3;
        Ok(GapReplay {
            rate_per_s: self.per_cpu_gaps_per_s.clone(),
            mean_per_s: self.gaps_per_s,
            quantiles: [
                (0.0, us(self.threshold_us)),
                (0.5, us(l.p50_us)),
                (0.9, us(l.p90_us)),
                (0.99, us(l.p99_us)),
                (0.999, us(l.p999_us)),
                (1.0, us(self.max_us)),
            ],
        })
    }

    /// Its numbers in range and in order; the offending field and why.
    fn validate(&self) -> Result<(), (&'static str, String)> {
        for (field, v) in [
            ("host.noise.duration_s", self.duration_s),
            ("host.noise.threshold_us", self.threshold_us),
            ("host.noise.gaps_per_s", self.gaps_per_s),
            ("host.noise.max_us", self.max_us),
            ("host.noise.lost_percent", self.lost_percent),
            ("host.noise.steal_percent", self.steal_percent.unwrap_or(0.0)),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return Err((field, format!("must be a number of at least 0, got {v:?}")));
            }
        }
        if self.duration_s == 0.0 {
            return Err(("host.noise.duration_s", "must be more than 0".into()));
        }
        if self.cpus == 0 {
            return Err(("host.noise.cpus", "must be at least 1".into()));
        }
        let per_cpu = &self.per_cpu_gaps_per_s;
        if !per_cpu.is_empty() && per_cpu.len() != self.cpus as usize {
            return Err((
                "host.noise.per_cpu_gaps_per_s",
                format!(
                    "must give one rate per CPU measured ({}), got {}",
                    self.cpus,
                    per_cpu.len()
                ),
            ));
        }
        if let Some(v) = per_cpu.iter().find(|v| !(v.is_finite() && **v >= 0.0)) {
            return Err((
                "host.noise.per_cpu_gaps_per_s",
                format!("every rate must be a number of at least 0, got {v:?}"),
            ));
        }
        // Gaps of at least `threshold_us` (1 ns at the least) each: no more fit in a second.
        let most = 1e6 / self.threshold_us.max(1e-3);
        for (field, v) in std::iter::once(("host.noise.gaps_per_s", self.gaps_per_s))
            .chain(per_cpu.iter().map(|&v| ("host.noise.per_cpu_gaps_per_s", v)))
        {
            if v > most {
                return Err((
                    field,
                    format!(
                        "gaps of at least {} us fit at most {most} times in a second, got {v}",
                        self.threshold_us
                    ),
                ));
            }
        }
        for (field, v) in [
            ("host.noise.lost_percent", self.lost_percent),
            ("host.noise.steal_percent", self.steal_percent.unwrap_or(0.0)),
        ] {
            if v > 100.0 {
                return Err((field, format!("must be at most 100, got {v}")));
            }
        }
        // No gap is longer than the measurement that saw it.
        if self.max_us > self.duration_s * 1e6 {
            return Err((
                "host.noise.max_us",
                format!(
                    "must be at most the measurement's {} s, got {:e} us",
                    self.duration_s, self.max_us
                ),
            ));
        }
        if let Some(l) = &self.lengths {
            if self.gaps == 0 {
                return Err(("host.noise.lengths", "given, but no gap was counted (gaps = 0)".into()));
            }
            // From the threshold up to the longest gap, each quantile at least the one before.
            let mut below = ("threshold_us", self.threshold_us);
            for (field, name, v) in [
                ("host.noise.lengths.p50_us", "p50_us", l.p50_us),
                ("host.noise.lengths.p90_us", "p90_us", l.p90_us),
                ("host.noise.lengths.p99_us", "p99_us", l.p99_us),
                ("host.noise.lengths.p999_us", "p999_us", l.p999_us),
                ("host.noise.max_us", "max_us", self.max_us),
            ] {
                if !v.is_finite() {
                    return Err((field, format!("must be a number, got {v:?}")));
                }
                if v < below.1 {
                    return Err((field, format!("must be at least {} ({}), got {v}", below.0, below.1)));
                }
                below = (name, v);
            }
        }
        Ok(())
    }
}

/// A machine's replacement for one catalog item's numbers; a number not given keeps the
/// catalog's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CostOverride {
    /// Instructions per item.
    pub instr: Option<f64>,
    /// Cache misses per item.
    pub misses: Option<f64>,
}

/// Most instructions and cache misses one catalog item may be given: a billion instructions
/// is a second at 1000 MHz and CPI 1, a million misses a tenth of one at 100 ns; no loop body
/// of the model comes near either, and the bound keeps every per-item time far from overflow.
const MAX_ITEM_INSTR: f64 = 1e9;
const MAX_ITEM_MISSES: f64 = 1e6;

/// A rotating disk with a request queue.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiskProfile {
    /// Seek between adjacent tracks, ns: the shortest move of the seek curve
    /// (`dev::disk`: `track_to_track + (full_stroke - track_to_track) * sqrt(distance /
    /// capacity)`).
    pub track_to_track_ns: Nanos,
    /// Seek across the whole platter, ns: the curve's longest move.
    pub full_stroke_ns: Nanos,
    /// Average rotational latency, half a revolution, ns (30e9 / rpm), added to every seek.
    pub half_rotation_ns: Nanos,
    /// Capacity in decimal GB: the seek curve's distances are fractions of it.
    pub capacity_gb: f64,
    /// Sustained media transfer rate, MB/s.
    pub seq_mb_s: f64,
    /// Largest request the driver builds, KiB (max_sectors / 2).
    pub max_request_kib: u64,
    /// Request slots per queue (2.4 `queue_nr_requests`).
    pub nr_requests: u32,
    /// Commands the device takes at once: blk-mq's hardware queue depth (the SCSI host's
    /// `can_queue` under libata), which sets its tag count ([`crate::dev::blk_mq`]). 1 for an
    /// IDE/PATA disk, which has no command queueing (libata `ATA_DEF_QUEUE`), 32 for a SATA
    /// disk with NCQ under AHCI (`ATA_MAX_QUEUE`). Optional, default 1 (a disk without
    /// command queueing).
    #[serde(default = "ata_def_queue")]
    pub queue_depth: u32,
}

/// libata's `ATA_DEF_QUEUE`: a disk without command queueing takes one command at a time.
fn ata_def_queue() -> u32 {
    1
}

/// `ns` rounded to the nearest nanosecond, halves up, as `f64::round` rounds a non-negative
/// time (validate() bounds every constant, so a derived cost is far below 2^52 ns): a cast
/// rather than a libm call, since costs are computed on the simulator's hot path.
fn round_ns(ns: f64) -> Nanos {
    (ns + 0.5) as Nanos
}

/// Group ids of CPUs `0..n` by `lists`: each CPU listed in a group takes that group's id;
/// a CPU in no group is a group of its own.
pub fn cpu_groups(lists: &[Vec<u32>], n: usize) -> Vec<usize> {
    let mut id: Vec<usize> = (0..n).map(|c| lists.len() + c).collect();
    for (g, l) in lists.iter().enumerate() {
        for &c in l {
            if (c as usize) < n {
                id[c as usize] = g;
            }
        }
    }
    id
}

impl MachineProfile {
    /// The core each of CPUs `0..n` belongs to (group ids: the CPUs of one core, its
    /// hardware threads, share one): `[host.topology]`'s `smt_siblings` when the profile has
    /// it; else Hyper-Threading pairs, CPUs 2k and 2k+1, when `sibling_speed` < 1; else a
    /// core per CPU.
    pub fn cores(&self, n: usize) -> Vec<usize> {
        match self.host.as_ref().and_then(|h| h.topology.as_ref()) {
            Some(t) => cpu_groups(&t.smt_siblings, n),
            None if self.sibling_speed < 1.0 => (0..n).map(|c| c / 2).collect(),
            None => (0..n).collect(),
        }
    }

    /// Time for a code stretch of `instr` instructions and `misses` cache misses.
    pub fn cost(&self, instr: f64, misses: f64) -> Nanos {
        let ns = instr * self.kernel_cpi * 1000.0 / self.cpu_mhz + misses * self.mem_latency_ns;
        round_ns(ns)
    }

    /// A hardware interrupt's entry and exit on a CPU that was `idle` (in its idle loop) or
    /// not: `idle_irq_entry_exit_ns` for an idle one when the profile has it, else
    /// `irq_entry_exit_ns`.
    pub fn irq_entry_exit(&self, idle: bool) -> Nanos {
        match (idle, self.idle_irq_entry_exit_ns) {
            (true, Some(ns)) => ns,
            _ => self.irq_entry_exit_ns,
        }
    }

    /// Time to copy `bytes` between user and page cache.
    pub fn copy_ns(&self, bytes: u64) -> Nanos {
        round_ns(bytes as f64 * 1000.0 / self.copy_mb_s)
    }

    /// Media transfer time of `bytes`.
    pub fn disk_xfer_ns(&self, bytes: u64) -> Nanos {
        round_ns(bytes as f64 * 1000.0 / self.disk.seq_mb_s)
    }

    /// Network transfer time of `bytes`.
    pub fn net_ns(&self, bytes: u64) -> Nanos {
        round_ns(bytes as f64 * 1000.0 / self.net_mb_s)
    }

    /// RAM in 4 KiB pages.
    pub fn ram_pages(&self) -> u64 {
        self.ram_mib * 256
    }

    /// Swap in 4 KiB slots.
    pub fn swap_slots(&self) -> u64 {
        self.swap_mib * 256
    }

    /// Check ranges; returns the first offending field and why.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        // Ranges far beyond any machine of any era (a 1 MHz CPU, a 1 ms DRAM miss, 10 KB/s
        // copies): they refuse nonsense and keep every derived time far from overflow.
        let num = |f: &'static str, v: f64, lo: f64, hi: f64| {
            if v.is_finite() && (lo..=hi).contains(&v) {
                Ok(())
            } else {
                Err((f, format!("must be a number in {lo}..={hi}, got {v:?}")))
            }
        };
        num("cpu_mhz", self.cpu_mhz, 1.0, 1e6)?;
        if !(1..=MAX_CPUS).contains(&self.cpus) {
            return Err(("cpus", format!("must be 1..={MAX_CPUS}, got {}", self.cpus)));
        }
        num("sibling_speed", self.sibling_speed, 0.05, 1.0)?;
        // 1 TiB of RAM and 64 GiB of swap: the swap map is a byte per slot (16 M slots).
        if !(16..=1 << 20).contains(&self.ram_mib) {
            return Err(("ram_mib", format!("must be 16..=1048576 (1 TiB), got {}", self.ram_mib)));
        }
        if self.swap_mib > 1 << 16 {
            return Err((
                "swap_mib",
                format!("must be at most 65536 (64 GiB), got {}", self.swap_mib),
            ));
        }
        num("kernel_cpi", self.kernel_cpi, 0.01, 100.0)?;
        num("mem_latency_ns", self.mem_latency_ns, 0.0, 1e6)?;
        num("copy_mb_s", self.copy_mb_s, 0.01, 1e7)?;
        num("net_mb_s", self.net_mb_s, 0.01, 1e7)?;
        num("disk.seq_mb_s", self.disk.seq_mb_s, 0.01, 1e7)?;
        num("disk.capacity_gb", self.disk.capacity_gb, 0.001, 1e9)?;
        // A second for one handler, switch or system call entry; a minute to position a head.
        for (f, v, max) in [
            ("irq_entry_exit_ns", self.irq_entry_exit_ns, 1_000_000_000),
            (
                "idle_irq_entry_exit_ns",
                self.idle_irq_entry_exit_ns.unwrap_or(0),
                1_000_000_000,
            ),
            ("tick_handler_ns", self.tick_handler_ns, 1_000_000_000),
            ("rtc_handler_ns", self.rtc_handler_ns, 1_000_000_000),
            ("disk_handler_ns", self.disk_handler_ns, 1_000_000_000),
            ("syscall_ns", self.syscall_ns, 1_000_000_000),
            ("ctx_switch_ns", self.ctx_switch_ns, 1_000_000_000),
            ("schedule_base_ns", self.schedule_base_ns, 1_000_000_000),
            ("goodness_per_task_ns", self.goodness_per_task_ns, 1_000_000_000),
            ("hrtimer_handler_ns", self.hrtimer_handler_ns, 1_000_000_000),
            ("signal_deliver_ns", self.signal_deliver_ns, 1_000_000_000),
            ("thread_create_exit_ns", self.thread_create_exit_ns, 1_000_000_000),
            ("disk.full_stroke_ns", self.disk.full_stroke_ns, 60_000_000_000),
            ("disk.half_rotation_ns", self.disk.half_rotation_ns, 60_000_000_000),
        ] {
            if v > max {
                return Err((f, format!("must be at most {max} ns, got {v}")));
            }
        }
        if self.disk.track_to_track_ns > self.disk.full_stroke_ns {
            return Err((
                "disk.track_to_track_ns",
                format!(
                    "must be at most disk.full_stroke_ns ({} ns), got {}",
                    self.disk.full_stroke_ns, self.disk.track_to_track_ns
                ),
            ));
        }
        if !(4..=1 << 20).contains(&self.disk.max_request_kib) {
            return Err((
                "disk.max_request_kib",
                format!("must be 4..=1048576 (1 GiB), got {}", self.disk.max_request_kib),
            ));
        }
        if !(1..=10_240).contains(&self.disk.queue_depth) {
            return Err((
                "disk.queue_depth",
                format!(
                    "must be 1..=10240 (blk-mq's BLK_MQ_MAX_DEPTH), got {}",
                    self.disk.queue_depth
                ),
            ));
        }
        if !(1..=1 << 20).contains(&self.disk.nr_requests) {
            return Err((
                "disk.nr_requests",
                format!("must be 1..=1048576, got {}", self.disk.nr_requests),
            ));
        }
        self.validate_catalog().map_err(|why| ("catalog", why))?;
        if let Some(h) = &self.host {
            h.validate()?;
        }
        Ok(())
    }

    /// Every catalog override names a catalog item and gives numbers in range.
    fn validate_catalog(&self) -> Result<(), String> {
        let items = crate::kernel::catalog::COST_ITEMS;
        for (name, o) in &self.catalog {
            if !items.iter().any(|it| it.name == name) {
                let also = if name == "page_copy" {
                    "page_copy is the machine's copy_mb_s, not a catalog item; "
                } else {
                    ""
                };
                return Err(format!(
                    "unknown catalog item `{name}`; {also}valid: {}",
                    items.iter().map(|it| it.name).collect::<Vec<_>>().join(", ")
                ));
            }
            for (what, v, max) in [
                ("instr", o.instr, MAX_ITEM_INSTR),
                ("misses", o.misses, MAX_ITEM_MISSES),
            ] {
                if let Some(v) = v {
                    if !(v.is_finite() && (0.0..=max).contains(&v)) {
                        return Err(format!("{name}.{what} must be a number in 0..={max}, got {v}"));
                    }
                }
            }
        }
        Ok(())
    }
}

impl Figure {
    /// Finite, not negative, its percentiles around its median, from one run or more.
    fn check(&self, field: &'static str) -> Result<(), (&'static str, String)> {
        let Figure { median, p5, p95, runs } = *self;
        if ![median, p5, p95].iter().all(|v| v.is_finite() && *v >= 0.0) {
            return Err((
                field,
                format!("median, p5 and p95 must be numbers of at least 0, got {median:?}, {p5:?}, {p95:?}"),
            ));
        }
        if !(p5 <= median && median <= p95) {
            return Err((
                field,
                format!("must have p5 <= median <= p95, got {p5} <= {median} <= {p95}"),
            ));
        }
        if runs == 0 {
            return Err((field, "runs must be at least 1".into()));
        }
        Ok(())
    }
}

impl HostFacts {
    /// Every table's numbers in range; the offending field (`host.costs.syscall_ns`) and why.
    fn validate(&self) -> Result<(), (&'static str, String)> {
        if let Some(t) = &self.topology {
            if !(1..=1 << 16).contains(&t.cpus_online) {
                return Err((
                    "host.topology.cpus_online",
                    format!("must be 1..=65536, got {}", t.cpus_online),
                ));
            }
            for (field, sets) in [
                ("host.topology.smt_siblings", &t.smt_siblings),
                ("host.topology.numa_nodes", &t.numa_nodes),
            ] {
                if sets.iter().any(Vec::is_empty) {
                    return Err((field, "a list of CPUs is empty".into()));
                }
            }
            for (i, c) in t.caches.iter().enumerate() {
                let why = if !(1..=4).contains(&c.level) {
                    format!("level must be 1..=4, got {}", c.level)
                } else if !["data", "instruction", "unified"].contains(&c.kind.as_str()) {
                    format!("kind must be data, instruction or unified, got `{}`", c.kind)
                } else if c.size_kib == 0 {
                    "size_kib must be at least 1".into()
                } else {
                    continue;
                };
                return Err((
                    "host.topology.caches",
                    format!("[[host.topology.caches]] number {}: {why}", i + 1),
                ));
            }
        }
        if let Some(k) = &self.kernel {
            if !(10..=10_000).contains(&k.hz) {
                return Err(("host.kernel.hz", format!("must be 10..=10000, got {}", k.hz)));
            }
        }
        if let Some(c) = &self.costs {
            for (field, f) in [
                ("host.costs.syscall_ns", &c.syscall_ns),
                ("host.costs.ctx_switch_ns", &c.ctx_switch_ns),
                ("host.costs.fork_exec_ns", &c.fork_exec_ns),
                ("host.costs.page_fault_ns", &c.page_fault_ns),
                ("host.costs.timer_interrupt_ns", &c.timer_interrupt_ns),
            ] {
                if let Some(f) = f {
                    f.check(field)?;
                }
            }
        }
        if let Some(s) = &self.storage {
            s.write_mb_s.check("host.storage.write_mb_s")?;
            s.fsync_us.check("host.storage.fsync_us")?;
        }
        if let Some(n) = &self.noise {
            n.validate()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replayed_gaps_length_follows_the_measured_quantiles() {
        let n = Noise {
            threshold_us: 1.0,
            gaps: 10,
            max_us: 1000.0,
            lengths: Some(GapLengths {
                p50_us: 4.0,
                p90_us: 10.0,
                p99_us: 100.0,
                p999_us: 400.0,
            }),
            ..Default::default()
        };
        let r = n.replay().unwrap();
        let at = |u: f64| r.length_at(u).round();
        assert_eq!(
            [at(0.0), at(0.5), at(0.9), at(0.99), at(0.999)],
            [1e3, 4e3, 10e3, 100e3, 400e3]
        );
        assert_eq!(at(1.0 - 1e-12), 1e6);
        // Between two quantiles, geometrically: halfway from p90 to p99 is their geometric mean.
        assert_eq!(at(0.945), (10e3f64 * 100e3).sqrt().round());
        let old = Noise { lengths: None, ..n };
        assert_eq!(old.replay().unwrap_err().0, "host.noise.lengths");
        // No gap counted: nothing to replay, at any CPU.
        let quiet = Noise { gaps: 0, ..old }.replay().unwrap();
        assert_eq!((quiet.rate(0), quiet.rate(7)), (0.0, 0.0));
    }
}
