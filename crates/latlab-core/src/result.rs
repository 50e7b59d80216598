//! [`RunResult`]: what one run of either engine produced.

use crate::attribution::Attribution;
use crate::histogram::LatencyHistogram;
use crate::trace::{LatencyTrace, PreemptOff, RecordedEvents};
use crate::units::Nanos;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Which engine produced a result.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Engine {
    /// The deterministic kernel model.
    Sim,
    /// The host probe on a real kernel.
    Probe,
    /// rt-tests' cyclictest, read back from its `--json` or `-h` histogram file.
    Cyclictest,
}

/// Everything needed to say what was run and to run it again.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunMeta {
    pub engine: Engine,
    /// Machine profile name (model) or hostname + CPU model (probe).
    pub machine: String,
    /// Kernel variant name (model) or `uname -r` (probe).
    pub kernel: String,
    /// Workload / load description.
    pub workload: String,
    /// PRNG seed (model); 0 for the probe.
    pub seed: u64,
    /// Length of the measured run (simulated or wall time).
    pub duration_ns: Nanos,
    /// latlab version that produced the result.
    pub version: String,
    /// Free-form settings (`interval_us`, `priority`, experiment file, ...).
    pub settings: BTreeMap<String, String>,
}

impl RunMeta {
    /// The settings that describe the system a run measured, in the order reports show them
    /// (the probe records them): the logical CPUs online (the model records those its kernel
    /// brought up), the preemption model in force, whether the kernel is PREEMPT_RT, whether
    /// its interrupt handlers are forced into threads, the interrupt threads with their
    /// policies and priorities, the kernel command line, the clocksource, the CPU frequency
    /// governor, the hypervisor's steal time during the run, and the kernel's own latency
    /// tracers.
    pub const SYSTEM: [&'static str; 10] = [
        "cpus_online",
        "preemption",
        "realtime",
        "threadirqs",
        "irq_threads",
        "cmdline",
        "clocksource",
        "cpufreq_governor",
        "steal",
        "latency_tracers",
    ];

    /// The setting of a probe run whose kept samples were explained from the kernel's
    /// tracepoints: the threshold (µs) above which they were. Such a sample's `steal_ns`
    /// is then its own host time, as the trace told it.
    pub const TRACED_ABOVE_US: &'static str = "traced_above_us";

    /// The run's system settings that it records, as (key, value), in [`RunMeta::SYSTEM`]'s
    /// order.
    pub fn system(&self) -> Vec<(&'static str, &str)> {
        RunMeta::SYSTEM
            .iter()
            .filter_map(|&k| Some((k, self.settings.get(k)?.as_str())))
            .collect()
    }

    /// The `policy` setting of a run whose every measuring thread ran SCHED_FIFO at `prio`,
    /// as both engines write it (`SCHED_FIFO 95`).
    pub fn fifo_policy(prio: impl std::fmt::Display) -> String {
        format!("SCHED_FIFO {prio}")
    }

    /// The SCHED_FIFO priority every measuring thread ran at, read back from the `policy`
    /// setting; `None` for SCHED_OTHER, a mix, or no setting.
    pub fn measured_fifo_priority(&self) -> Option<u32> {
        self.settings.get("policy")?.strip_prefix("SCHED_FIFO ")?.parse().ok()
    }
}

/// One latency sample kept in full, with its explanation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// When the stimulus happened (run-relative).
    pub at_ns: Nanos,
    pub latency_ns: Nanos,
    /// Extra per-sample identification (CPU, file offset in KB, ...).
    pub tag: BTreeMap<String, String>,
    pub attribution: Attribution,
}

/// A stream's latency split as rtla timerlat splits it, for the samples a kernel trace
/// covered: from the timer's expiry to its interrupt handler, and from the handler to the
/// measured thread switched in.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LatencySplit {
    /// Intended expiry to the timer's handler (the hrtimer base clock it read).
    pub irq: LatencyHistogram,
    /// The handler to the measured thread switched in.
    pub thread: LatencyHistogram,
    /// Where the figures come from and which samples they cover.
    pub note: String,
}

/// One measurement stream: realfeel wakeups, a CPU's timer wakeups, write(2) calls, ...
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Stream {
    pub name: String,
    /// What a sample measures (`irq-to-user wakeup`, `write(2) of 4 KiB`).
    pub measures: String,
    pub hist: LatencyHistogram,
    /// Expected events that never produced a sample (missed timer overruns, RTC overflows).
    pub missed: u64,
    /// The worst samples, worst first, each with its attribution.
    pub worst: Vec<Sample>,
    /// Kernel trace events recorded around worst samples (the probe's explained spikes),
    /// one window per sample that has one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub recorded: Vec<RecordedEvents>,
    /// The IRQ / thread split of the samples (the probe's, when it traced the run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split: Option<LatencySplit>,
    /// Every timed call in order, when the run was asked to keep them (a write stream's
    /// records, as iozone `-Q` lists them): empty otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub records: Vec<IoRecord>,
    /// The same samples with the host's time (`Attribution::steal_ns`) taken out of each:
    /// the kernel's own latencies (the probe's, when it traced the run and logged every
    /// wakeup; a sample the recording no longer covered counts whole).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_out: Option<LatencyHistogram>,
}

/// One timed I/O call of a write stream: where it was, how long it took, how much it moved.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IoRecord {
    /// File offset of the call, KiB.
    pub offset_kb: u64,
    pub latency_ns: Nanos,
    pub bytes: u64,
}

impl Stream {
    pub fn new(name: impl Into<String>, measures: impl Into<String>) -> Self {
        Stream {
            name: name.into(),
            measures: measures.into(),
            hist: LatencyHistogram::new(),
            missed: 0,
            worst: Vec::new(),
            recorded: Vec::new(),
            split: None,
            records: Vec::new(),
            host_out: None,
        }
    }

    /// The events recorded around worst sample `s`, if any were.
    pub fn recorded_for(&self, s: &Sample) -> Option<&RecordedEvents> {
        self.recorded.iter().find(|r| r.sample_at_ns == s.at_ns)
    }

    /// Keep `s` if it is among the `keep` worst seen so far (ties: the earlier stays first).
    pub fn offer_worst(&mut self, s: Sample, keep: usize) {
        if keep == 0 {
            return;
        }
        if self.worst.len() == keep && self.worst.last().is_some_and(|w| w.latency_ns >= s.latency_ns) {
            return;
        }
        let pos = self.worst.partition_point(|w| w.latency_ns >= s.latency_ns);
        self.worst.insert(pos, s);
        self.worst.truncate(keep);
    }
}

/// The result of one run of the model or the probe.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunResult {
    pub meta: RunMeta,
    pub streams: Vec<Stream>,
    /// Event counters: context switches, interrupts, missed timer events, pages written...
    pub counters: BTreeMap<String, u64>,
    /// Throughput figures with their unit in the key (`write_MBps`, `builds_per_min`).
    pub throughput: BTreeMap<String, f64>,
    /// The worst latency as a `/proc/latency_trace`-style trace, where the engine has one.
    pub trace: Option<LatencyTrace>,
    /// What became of each load the probe ran beside its measurement (none for the model, and
    /// in results written before loads were recorded).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub loads: Vec<LoadFate>,
    /// The voluntary-preempt tracer's view (seed 003): the longest preemption-off stretches,
    /// where the run asked for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preempt_off: Option<PreemptOff>,
}

/// One load the probe ran (`--load dd:1G`) and whether it lasted the whole measurement.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LoadFate {
    /// The load as `--load` names it (`dd:1G`; `tar#2` for a second `tar`).
    pub name: String,
    /// How it ended before the probe stopped it; `None`: it ran to the end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub died: Option<LoadDeath>,
}

/// How and when a load ended early.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LoadDeath {
    /// `exited with status 1 (stderr: dd: No space left on device)`, `killed by signal 9`.
    pub how: String,
    /// When, in ns after the load started.
    pub after_ns: Nanos,
}

impl RunResult {
    pub fn new(meta: RunMeta) -> Self {
        RunResult {
            meta,
            streams: Vec::new(),
            counters: BTreeMap::new(),
            throughput: BTreeMap::new(),
            trace: None,
            loads: Vec::new(),
            preempt_off: None,
        }
    }

    /// The loads that ended before the probe stopped them: the measurement did not run under
    /// the load the result names for all of its length.
    pub fn dead_loads(&self) -> impl Iterator<Item = (&str, &LoadDeath)> {
        self.loads
            .iter()
            .filter_map(|l| l.died.as_ref().map(|d| (l.name.as_str(), d)))
    }

    pub fn stream(&self, name: &str) -> Option<&Stream> {
        self.streams.iter().find(|s| s.name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(l: Nanos) -> Sample {
        Sample {
            at_ns: 0,
            latency_ns: l,
            tag: BTreeMap::new(),
            attribution: Attribution::default(),
        }
    }

    #[test]
    fn the_policy_setting_reads_back_only_when_every_thread_had_fifo() {
        let mut m = RunMeta {
            engine: Engine::Probe,
            machine: "m".into(),
            kernel: "k".into(),
            workload: "w".into(),
            seed: 0,
            duration_ns: 0,
            version: "0".into(),
            settings: BTreeMap::new(),
        };
        assert_eq!(m.measured_fifo_priority(), None);
        m.settings.insert("policy".into(), RunMeta::fifo_policy(95));
        assert_eq!(m.measured_fifo_priority(), Some(95));
        m.settings.insert(
            "policy".into(),
            "SCHED_FIFO 95 on 1 of 2 threads, SCHED_OTHER on the rest".into(),
        );
        assert_eq!(m.measured_fifo_priority(), None);
    }

    #[test]
    fn load_fates_round_trip_and_old_results_read_without_them() {
        let mut r = RunResult::new(RunMeta {
            engine: Engine::Probe,
            machine: "m".into(),
            kernel: "k".into(),
            workload: "timer under dd:1G + tar".into(),
            seed: 0,
            duration_ns: 1,
            version: "0".into(),
            settings: BTreeMap::new(),
        });
        let old = serde_json::to_value(&r).unwrap();
        assert!(
            old.get("loads").is_none(),
            "no loads, no key: the model's JSON is unchanged"
        );
        let back: RunResult = serde_json::from_value(old).unwrap();
        assert!(back.loads.is_empty());
        r.loads = vec![
            LoadFate {
                name: "dd:1G".into(),
                died: Some(LoadDeath {
                    how: "exited with status 1".into(),
                    after_ns: 3_200_000_000,
                }),
            },
            LoadFate {
                name: "tar".into(),
                died: None,
            },
        ];
        let back: RunResult = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
        assert_eq!(back.loads, r.loads);
        let dead: Vec<&str> = back.dead_loads().map(|(n, _)| n).collect();
        assert_eq!(dead, ["dd:1G"]);
    }

    #[test]
    fn offer_worst_keeps_the_largest_in_order() {
        let mut s = Stream::new("x", "y");
        for l in [5, 1, 9, 7, 3, 9] {
            s.offer_worst(sample(l), 3);
        }
        let got: Vec<_> = s.worst.iter().map(|w| w.latency_ns).collect();
        assert_eq!(got, vec![9, 9, 7]);
    }
}
