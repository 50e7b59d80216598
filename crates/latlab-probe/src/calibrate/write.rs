//! The machine file of a [`Calibration`], and its summary table.

use super::{Calibration, Num, Spread, Stat};
use std::fmt::Write;

/// A number as TOML writes it: whole, or with a decimal point or exponent.
fn real(v: f64) -> String {
    let s = format!("{v:?}");
    match s.contains(['.', 'e', 'E']) {
        true => s,
        false => format!("{s}.0"),
    }
}

fn num(n: Num) -> String {
    match n {
        Num::Whole(v) => v.to_string(),
        Num::Real(v) => real(v),
    }
}

fn quoted(s: &str) -> String {
    serde_json::to_string(s).expect("a string serializes")
}

fn comment(out: &mut String, text: &str) {
    // Comments may hold no control character but tab (TOML).
    let clean: String = text.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    let _ = writeln!(out, "# {clean}");
}

fn figure(s: &Stat) -> String {
    format!(
        "{{ median = {}, p5 = {}, p95 = {}, runs = {} }}",
        real(super::stats::round_sig(s.median)),
        real(super::stats::round_sig(s.p5)),
        real(super::stats::round_sig(s.p95)),
        s.runs
    )
}

fn cpus(v: &[u32]) -> String {
    format!("[{}]", v.iter().map(u32::to_string).collect::<Vec<_>>().join(", "))
}

fn sets(v: &[Vec<u32>]) -> String {
    format!("[{}]", v.iter().map(|s| cpus(s)).collect::<Vec<_>>().join(", "))
}

impl Spread {
    fn toml(self) -> String {
        match self {
            Spread::Given => "\"given\"".into(),
            Spread::Estimate => "\"estimate\"".into(),
            Spread::Bounds(lo, hi) => format!("[{}, {}]", real(lo), real(hi)),
        }
    }
}

impl Calibration {
    /// The machine file: the profile's fields, `[disk]`, `[uncertainty]`, then `[host]`'s
    /// tables, each value after a comment saying how it was measured or read.
    pub fn toml(&self) -> String {
        let mut o = String::new();
        comment(
            &mut o,
            &format!(
                "This machine, as `latlab probe calibrate` measured and read it ({:.0} s). Load it as any machine file: machine = \"PATH\" in an experiment (docs/probe.md \"Calibration\").",
                self.wall_s
            ),
        );
        let _ = writeln!(o, "name = {}", quoted(&self.name));
        let _ = writeln!(o, "description = {}", quoted(&self.description));
        let top = |f: &&super::Field| !f.key.starts_with("disk.");
        for f in self.fields.iter().filter(top) {
            comment(&mut o, &f.how);
            let _ = writeln!(o, "{} = {}", f.key, num(f.value));
        }
        let _ = writeln!(o, "\n[disk]");
        for f in self.fields.iter().filter(|f| !top(f)) {
            comment(&mut o, &f.how);
            let _ = writeln!(o, "{} = {}", &f.key["disk.".len()..], num(f.value));
        }
        let _ = writeln!(o, "\n# How far each value may be off: a measured one's p5-p95 over its runs; `given` when read exactly; `estimate` when not measured.");
        let _ = writeln!(o, "[uncertainty]");
        for f in &self.fields {
            // The profile treats a sibling_speed of 1 as absent (separate cores): no number
            // field, so no spread to state.
            if f.key == "sibling_speed" && f.value == Num::Real(1.0) {
                continue;
            }
            let _ = writeln!(o, "{} = {}", f.key, f.spread.toml());
        }

        let k = &self.kernel;
        let _ = writeln!(
            o,
            "\n# What the machine is beyond the profile's fields. The model does not read these yet (its CPUs are `cpus` above; SMP from a topology is later work)."
        );
        let _ = writeln!(o, "[host.kernel]");
        comment(&mut o, "read: /proc/sys/kernel/osrelease");
        let _ = writeln!(o, "release = {}", quoted(&k.release));
        comment(&mut o, &k.hz_how);
        let _ = writeln!(o, "hz = {}", k.hz);
        comment(&mut o, &k.preemption_how);
        let _ = writeln!(o, "preemption = {}", quoted(&k.preemption));

        let t = &self.topology;
        let _ = writeln!(o, "\n[host.topology]");
        comment(&mut o, "read: /sys/devices/system/cpu/online");
        let _ = writeln!(o, "cpus_online = {}", t.cpus.len());
        comment(
            &mut o,
            "read: each CPU's topology/thread_siblings_list, one list per core",
        );
        let _ = writeln!(o, "smt_siblings = {}", sets(&t.smt_siblings));
        comment(
            &mut o,
            "read: /sys/devices/system/node/nodeN/cpulist, one list per node",
        );
        let _ = writeln!(o, "numa_nodes = {}", sets(&t.numa_nodes));
        for c in &t.caches {
            let _ = writeln!(o, "\n# read: /sys/devices/system/cpu/cpuN/cache/indexM");
            let _ = writeln!(o, "[[host.topology.caches]]");
            let _ = writeln!(
                o,
                "level = {}\nkind = {}\nsize_kib = {}\nshared_cpus = {}",
                c.level,
                quoted(&c.kind),
                c.size_kib,
                cpus(&c.shared)
            );
        }

        let _ = writeln!(
            o,
            "\n# Micro-benchmark costs, ns: the median of the runs with their p5 and p95."
        );
        let _ = writeln!(o, "[host.costs]");
        for c in &self.costs {
            match &c.stat {
                Ok(s) => {
                    comment(&mut o, &format!("measured: {}", c.how));
                    let _ = writeln!(o, "{} = {}", c.key, figure(s));
                }
                Err(why) => comment(&mut o, &format!("{}: not measured: {why}", c.key)),
            }
        }

        let s = &self.storage;
        let _ = writeln!(o, "\n[host.storage]");
        comment(
            &mut o,
            "read: the disk under the calibration's directory (/sys/dev/block)",
        );
        let _ = writeln!(o, "device = {}", quoted(&s.device));
        comment(&mut o, "read: queue/rotational");
        let _ = writeln!(o, "rotational = {}", s.rotational);
        comment(
            &mut o,
            "measured: buffered write(2) of 1 MiB records into the page cache, MB/s",
        );
        let _ = writeln!(o, "write_mb_s = {}", figure(&s.write_mb_s));
        comment(&mut o, "measured: fsync(2) of one freshly written 4 KiB block, us");
        let _ = writeln!(o, "fsync_us = {}", figure(&s.fsync_us));

        let n = &self.noise;
        let _ = writeln!(
            o,
            "\n# The machine's noise that is not the kernel's scheduling, reported apart from the kernel's latency; the model replays it only when asked (latlab run --replay-noise)."
        );
        let _ = writeln!(o, "[host.noise]");
        let _ = writeln!(o, "source = {}", quoted(&n.source));
        let _ = writeln!(o, "duration_s = {}", real(n.duration_s));
        let _ = writeln!(o, "cpus = {}", n.cpus);
        let _ = writeln!(o, "threshold_us = {}", real(n.threshold_us));
        let _ = writeln!(o, "gaps = {}", n.gaps);
        let _ = writeln!(o, "gaps_per_s = {}", real(n.gaps_per_s));
        let _ = writeln!(o, "max_us = {}", real(n.max_us));
        let _ = writeln!(o, "lost_percent = {}", real(n.lost_percent));
        match n.steal_percent {
            Some(v) => {
                comment(&mut o, "read: /proc/stat steal over the measurement, percent of it");
                let _ = writeln!(o, "steal_percent = {}", real(v));
            }
            None => comment(&mut o, "steal_percent: not read (/proc/stat has no steal column)"),
        }
        comment(
            &mut o,
            "measured: gaps per second of each CPU, in the order of their numbers",
        );
        let rates: Vec<String> = n.per_cpu_gaps_per_s.iter().map(|&v| real(v)).collect();
        let _ = writeln!(o, "per_cpu_gaps_per_s = [{}]", rates.join(", "));
        match n.lengths_us {
            Some([p50, p90, p99, p999]) => {
                let _ = writeln!(o, "\n[host.noise.lengths]");
                comment(&mut o, "measured: the gaps' lengths over every CPU, us (nearest rank)");
                for (k, v) in [("p50_us", p50), ("p90_us", p90), ("p99_us", p99), ("p999_us", p999)] {
                    let _ = writeln!(o, "{k} = {}", real(v));
                }
            }
            None => comment(&mut o, "lengths: no gap counted"),
        }
        o
    }

    /// The summary table: field, value, spread, source; then `[host]`'s figures and notes.
    pub fn summary(&self) -> String {
        let mut rows: Vec<[String; 4]> = vec![["field".into(), "value".into(), "spread".into(), "source".into()]];
        for f in &self.fields {
            let spread = match f.spread {
                Spread::Given => "given".into(),
                Spread::Estimate => "x2 (estimate)".into(),
                Spread::Bounds(lo, hi) => format!("{}-{}", num_short(lo), num_short(hi)),
            };
            rows.push([f.key.into(), num(f.value), spread, f.source.name().into()]);
        }
        let fig = |s: &Stat| {
            [
                real(super::stats::round_sig(s.median)),
                format!("{}-{}", num_short(s.p5), num_short(s.p95)),
            ]
        };
        for c in &self.costs {
            let key = format!("host.costs.{}", c.key);
            match &c.stat {
                Ok(s) => {
                    let [v, sp] = fig(s);
                    rows.push([key, v, sp, "measured".into()]);
                }
                Err(_) => rows.push([key, "-".into(), "-".into(), "not measured".into()]),
            }
        }
        let s = &self.storage;
        for (k, st) in [
            ("host.storage.write_mb_s", &s.write_mb_s),
            ("host.storage.fsync_us", &s.fsync_us),
        ] {
            let [v, sp] = fig(st);
            rows.push([k.into(), v, sp, "measured".into()]);
        }
        rows.push([
            "host.kernel.hz".into(),
            self.kernel.hz.to_string(),
            "-".into(),
            self.kernel.hz_how.split(':').next().unwrap_or("").into(),
        ]);
        rows.push([
            "host.kernel.preemption".into(),
            self.kernel.preemption.clone(),
            "-".into(),
            "read".into(),
        ]);
        let n = &self.noise;
        rows.push([
            "host.noise.gaps_per_s".into(),
            real(n.gaps_per_s),
            "-".into(),
            "measured".into(),
        ]);
        rows.push([
            "host.noise.max_us".into(),
            real(n.max_us),
            "-".into(),
            "measured".into(),
        ]);
        rows.push([
            "host.noise.lost_percent".into(),
            real(n.lost_percent),
            "-".into(),
            "measured".into(),
        ]);
        if let Some(v) = n.steal_percent {
            rows.push(["host.noise.steal_percent".into(), real(v), "-".into(), "read".into()]);
        }
        if let Some([p50, _, p99, _]) = n.lengths_us {
            for (k, v) in [("host.noise.lengths.p50_us", p50), ("host.noise.lengths.p99_us", p99)] {
                rows.push([k.into(), real(v), "-".into(), "measured".into()]);
            }
        }
        let w: Vec<usize> = (0..4)
            .map(|i| rows.iter().map(|r| r[i].len()).max().unwrap_or(0))
            .collect();
        let mut o = String::new();
        for r in &rows {
            let _ = writeln!(
                o,
                "{:<a$}  {:>b$}  {:>c$}  {}",
                r[0],
                r[1],
                r[2],
                r[3],
                a = w[0],
                b = w[1],
                c = w[2]
            );
        }
        let _ = writeln!(o, "noise source: {}", n.source);
        for note in &self.notes {
            let _ = writeln!(o, "note: {note}");
        }
        o
    }
}

fn num_short(v: f64) -> String {
    let r = super::stats::round_sig(v);
    match r.fract() == 0.0 && r.abs() < 1e15 {
        true => format!("{}", r as i64),
        false => format!("{r}"),
    }
}
