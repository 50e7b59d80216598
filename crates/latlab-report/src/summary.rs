//! Percentile summaries and the explanation of the worst samples.

use latlab_core::{ms, us, Attribution, CgroupOf, Container, LoadFate, Nanos, RunResult, Sample};
use std::fmt::Write;

/// A stream's line label: the run's, and the stream's name when the run has several
/// (realfeel beside iozone's `write`).
fn stream_label(label: &str, r: &RunResult, stream: &str) -> String {
    if r.streams.len() > 1 {
        format!("{label} [{stream}]")
    } else {
        label.to_string()
    }
}

/// The width that lines up [`percentiles`]' columns for all of `runs` (28 at least, at most
/// what a format width can be: a longer label prints whole).
pub fn percentiles_width<'a>(runs: impl IntoIterator<Item = (&'a str, &'a RunResult)>) -> usize {
    crate::column_width(
        runs.into_iter().flat_map(|(l, r)| {
            r.streams
                .iter()
                .map(move |s| stream_label(l, r, &s.name).chars().count())
        }),
        28,
    )
}

/// One line per stream: count, min, p50, p90, p99, p99.9, max (us), the label padded to
/// `width` ([`percentiles_width`]).
pub fn percentiles(label: &str, r: &RunResult, width: usize) -> String {
    let width = width.min(u16::MAX as usize);
    let mut out = String::new();
    for s in &r.streams {
        let m = s.hist.summary();
        let label = stream_label(label, r, &s.name);
        let _ = writeln!(
            out,
            "{label:<width$} n={:<9} min {:>7.1}  p50 {:>7.1}  p90 {:>7.1}  p99 {:>8.1}  p99.9 {:>9.1}  max {:>10.1} us  missed {}",
            m.count,
            us(m.min_ns),
            us(m.p50_ns),
            us(m.p90_ns),
            us(m.p99_ns),
            us(m.p999_ns),
            us(m.max_ns),
            s.missed
        );
    }
    out
}

/// What became of one load: `ran to the end`, or `died 3.2 s after it started: exited with
/// status 1 (stderr: ...)`.
pub fn load_fate(f: &LoadFate) -> String {
    match &f.died {
        None => "ran to the end".into(),
        Some(d) => format!("died {:.1} s after it started: {}", d.after_ns as f64 / 1e9, d.how),
    }
}

/// The loads a probe ran beside its measurement, one line each (`load dd:1G: died ...`);
/// empty when it ran none.
pub fn loads(r: &RunResult) -> String {
    let mut out = String::new();
    if !r.loads.is_empty() {
        out.push('\n');
    }
    for f in &r.loads {
        let _ = writeln!(out, "load {}: {}", f.name, load_fate(f));
    }
    out
}

/// A sample's headline: `88.532 ms at t=339.906 s`.
pub fn headline(s: &Sample) -> String {
    format!("{:.3} ms at t={:.3} s", ms(s.latency_ns), s.at_ns as f64 / 1e9)
}

/// A sample in one line, what took longest first: `4.178 ms: khugepaged/38 on the CPU
/// 4.170 ms; waiting for preemption 4.137 ms` (the task that held the CPU longest, the
/// largest part, and the host's time when it had some).
pub fn why(s: &Sample) -> String {
    let a = &s.attribution;
    let mut out = format!("{:.3} ms", ms(s.latency_ns));
    let mut said = Vec::new();
    if let Some(t) = a.tasks.first() {
        said.push(format!("{}/{} on the CPU {:.3} ms", t.comm, t.pid, ms(t.ns)));
    }
    if let Some((name, v)) = parts(a).into_iter().filter(|&(_, v)| v > 0).max_by_key(|&(_, v)| v) {
        said.push(format!("{name} {:.3} ms", ms(v)));
    }
    if a.steal_ns > 0 {
        said.push(format!("the host {:.3} ms", ms(a.steal_ns)));
    }
    if !said.is_empty() {
        out.push_str(": ");
        out.push_str(&said.join("; "));
    }
    out
}

/// The parts of a sample's latency, named as [`explain`] names them, in its order.
pub fn parts(a: &Attribution) -> [(&'static str, Nanos); 6] {
    [
        ("irq-off", a.irq_off_ns),
        ("handlers", a.handler_ns),
        ("waiting for preemption", a.preempt_wait_ns),
        ("others ahead", a.ran_ahead_ns),
        ("scheduler", a.sched_ns),
        ("wakee's own kernel work", a.wakee_kernel_ns),
    ]
}

/// The tasks on the CPU during the sample: `kjournald/4 1.000 ms, cc1/15 0.200 ms`.
pub fn tasks(a: &Attribution) -> String {
    let t: Vec<String> = a
        .tasks
        .iter()
        .map(|t| format!("{}/{} {:.3} ms", t.comm, t.pid, ms(t.ns)))
        .collect();
    t.join(", ")
}

/// The interrupts during the sample: `rtc x3, ide0 x1`.
pub fn irqs(a: &Attribution) -> String {
    let i: Vec<String> = a.irqs.iter().map(|(n, c)| format!("{n} x{c}")).collect();
    i.join(", ")
}

/// Why one sample took as long as it did.
pub fn explain(s: &Sample) -> String {
    let a = &s.attribution;
    let mut out = String::new();
    let _ = writeln!(out, "  {}", headline(s));
    if let Some(c) = &a.cause {
        let lock = c.lock.as_deref().map_or(String::new(), |l| format!(" holding {l}"));
        let _ = writeln!(
            out,
            "    running: {} in {}{lock}, non-preemptible since {:.3} s for {:.3} ms; ended by {}",
            c.task,
            c.path,
            c.since_ns as f64 / 1e9,
            ms(c.until_ns.saturating_sub(c.since_ns)),
            c.ended_by
        );
    }
    let parts = parts(a);
    if parts.iter().any(|&(_, p)| p > 0) {
        let p: Vec<String> = parts.iter().map(|(n, v)| format!("{n} {:.3} ms", ms(*v))).collect();
        let _ = writeln!(out, "    {}", p.join(", "));
    }
    if a.blocked_ns > 0 {
        let _ = writeln!(out, "    asleep inside the call {:.3} ms", ms(a.blocked_ns));
    }
    if !a.note.is_empty() {
        let _ = writeln!(out, "    {}", a.note);
    }
    if !a.tasks.is_empty() {
        let _ = writeln!(out, "    on the CPU meanwhile: {}", tasks(a));
    }
    if let Some(g) = &a.cgroup {
        let container = g
            .container
            .as_ref()
            .map_or(String::new(), |c| format!(", container {}", c.label()));
        let _ = writeln!(
            out,
            "    cgroup of {}: {}{container} ({})",
            g.task,
            cgroup_path(g),
            g.source
        );
    }
    if !a.irqs.is_empty() {
        let _ = writeln!(out, "    interrupts: {}", irqs(a));
    }
    if a.steal_ns > 0 {
        let _ = writeln!(out, "    the host (outside the kernel): {:.3} ms", ms(a.steal_ns));
    }
    out
}

/// A cgroup's path as the tables show it: `(unknown)` when it could not be read.
fn cgroup_path(g: &CgroupOf) -> &str {
    match g.path.as_str() {
        "" => "(unknown)",
        p => p,
    }
}

/// The explained spikes of `r` grouped by the cgroup of the task blamed: (cgroup, container,
/// spikes, worst), the worst group first; empty when no spike names a cgroup.
pub fn by_cgroup(r: &RunResult) -> Vec<(String, String, u64, Nanos)> {
    let mut groups: Vec<(String, String, u64, Nanos)> = Vec::new();
    for (g, lat) in r
        .streams
        .iter()
        .flat_map(|s| &s.worst)
        .filter_map(|w| Some((w.attribution.cgroup.as_ref()?, w.latency_ns)))
    {
        let container = g.container.as_ref().map_or("-".to_string(), Container::label);
        let path = cgroup_path(g);
        match groups.iter_mut().find(|x| x.0 == path && x.1 == container) {
            Some(x) => {
                x.2 += 1;
                x.3 = x.3.max(lat);
            }
            None => groups.push((path.to_string(), container, 1, lat)),
        }
    }
    groups.sort_by(|a, b| b.3.cmp(&a.3).then_with(|| a.0.cmp(&b.0)));
    groups
}

/// [`by_cgroup`] as table rows (header first: `cgroup`, `container`, `spikes`, `worst`),
/// each prefixed by `first` cells (a run's label in a comparison).
pub fn cgroup_rows(r: &RunResult, first: &[&str]) -> Vec<Vec<String>> {
    by_cgroup(r)
        .into_iter()
        .map(|(path, container, n, worst)| {
            let mut row: Vec<String> = first.iter().map(|s| s.to_string()).collect();
            row.extend([path, container, n.to_string(), format!("{:.1} us", us(worst))]);
            row
        })
        .collect()
}

/// The header of [`cgroup_rows`] after the `first` column names.
pub fn cgroup_header(first: &[&str]) -> Vec<String> {
    first
        .iter()
        .chain(&["cgroup", "container", "spikes", "worst"])
        .map(|s| s.to_string())
        .collect()
}

/// The spikes by cgroup as a text table under a heading; empty when none names a cgroup.
pub fn cgroups(r: &RunResult) -> String {
    let rows = cgroup_rows(r, &[]);
    if rows.is_empty() {
        return String::new();
    }
    let table: Vec<Vec<String>> = std::iter::once(cgroup_header(&[])).chain(rows).collect();
    format!(
        "
spikes by cgroup:
{}",
        crate::compare::render_table(&table)
    )
}

/// Where the samples of 1 ms or more came from: the code path running when the interrupt
/// arrived, with how many samples and the worst (from the model's `samples>=1ms:` and
/// `worst_us:` counters).
pub fn causes(label: &str, r: &RunResult) -> String {
    let mut rows: Vec<(&str, u64, u64)> = r
        .counters
        .iter()
        .filter_map(|(k, &n)| {
            let path = k.strip_prefix("samples>=1ms:")?;
            let worst = r.counters.get(&format!("worst_us:{path}")).copied().unwrap_or(0);
            Some((path, n, worst))
        })
        .collect();
    rows.sort_by_key(|r| std::cmp::Reverse(r.2));
    if rows.is_empty() {
        return format!("{label:<28} no sample reached 1 ms\n");
    }
    let list: Vec<String> = rows
        .iter()
        .map(|(p, n, w)| format!("{p} {n} (worst {:.1} ms)", *w as f64 / 1000.0))
        .collect();
    format!("{label:<28} {}\n", list.join(", "))
}

/// Seed 001's listing of a `write` stream's slowest records: `offset_KB latency_us
/// record_bytes`, slowest last (as `sort -nk2 wol.dat | tail`). Model and probe tag their
/// samples alike.
pub fn slowest_records(stream: &latlab_core::Stream) -> String {
    let mut rows: Vec<&latlab_core::Sample> = stream.worst.iter().collect();
    rows.sort_by_key(|s| s.latency_ns);
    rows.iter()
        .map(|s| {
            format!(
                "{} {} {}\n",
                s.tag.get("offset_kb").map(String::as_str).unwrap_or("?"),
                s.latency_ns / 1000,
                s.tag.get("record_bytes").map(String::as_str).unwrap_or("?")
            )
        })
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn percentiles_name_the_stream_only_when_a_run_has_several() {
        let mut r = crate::testutil::realfeel_result(&[]);
        assert!(!percentiles("2.4.18", &r, 28).contains('['));
        r.streams.push(latlab_core::Stream::new("write", "write(2)"));
        let t = percentiles("2.4.18", &r, 28);
        assert!(t.contains("2.4.18 [realfeel]") && t.contains("2.4.18 [write]"), "{t}");
    }

    #[test]
    fn slowest_records_list_the_slowest_last_as_sort_does() {
        let mut s = latlab_core::Stream::new("write", "write(2)");
        for (kb, us) in [(8u64, 400u64), (0, 300), (4, 350)] {
            let mut tag = std::collections::BTreeMap::new();
            tag.insert("offset_kb".to_string(), kb.to_string());
            tag.insert("record_bytes".to_string(), "4096".to_string());
            s.offer_worst(
                latlab_core::Sample {
                    at_ns: 0,
                    latency_ns: us * 1000,
                    tag,
                    attribution: Default::default(),
                },
                10,
            );
        }
        assert_eq!(slowest_records(&s), "0 300 4096\n4 350 4096\n8 400 4096\n");
    }

    /// A spike blaming a task in a cgroup: its path, its container's runtime and id, the
    /// latency.
    pub(crate) type Spike<'a> = (&'a str, Option<(&'a str, &'a str)>, u64);

    /// A probe result whose worst samples are `spikes`.
    pub(crate) fn with_cgroups(spikes: &[Spike]) -> RunResult {
        let mut r = crate::input::tests::result(latlab_core::Engine::Probe, "6.1", "cpu0", &[1_000]);
        for (i, &(path, container, lat)) in spikes.iter().enumerate() {
            let attribution = Attribution {
                cgroup: Some(CgroupOf {
                    task: format!("t/{i}"),
                    path: path.into(),
                    container: container.map(|(runtime, id)| Container {
                        runtime: runtime.into(),
                        id: id.into(),
                        pod: None,
                    }),
                    source: "/proc/1/cgroup, read after the spike".into(),
                }),
                ..Default::default()
            };
            r.streams[0].worst.push(Sample {
                at_ns: i as u64,
                latency_ns: lat,
                tag: Default::default(),
                attribution,
            });
        }
        // A sample below the threshold blames no task.
        r.streams[0].worst.push(Sample {
            at_ns: 99,
            latency_ns: 1,
            tag: Default::default(),
            attribution: Attribution::default(),
        });
        r
    }

    #[test]
    fn spikes_are_grouped_by_cgroup_worst_first() {
        let r = with_cgroups(&[
            ("/system.slice/docker-ab.scope", Some(("docker", "ab")), 300_000),
            ("/user.slice", None, 900_000),
            ("/system.slice/docker-ab.scope", Some(("docker", "ab")), 500_000),
            ("", None, 100_000),
        ]);
        assert_eq!(
            by_cgroup(&r),
            [
                ("/user.slice".to_string(), "-".to_string(), 1, 900_000),
                (
                    "/system.slice/docker-ab.scope".to_string(),
                    "docker ab".to_string(),
                    2,
                    500_000
                ),
                ("(unknown)".to_string(), "-".to_string(), 1, 100_000),
            ]
        );
        let t = cgroups(&r);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[1], "spikes by cgroup:");
        assert!(lines[2].starts_with("cgroup ") && lines[2].ends_with("worst"), "{t}");
        assert!(
            lines[4].starts_with("/system.slice/docker-ab.scope") && lines[4].contains("docker ab"),
            "{t}"
        );
        assert!(lines[4].ends_with("  2  500.0 us"), "{t}");
        assert_eq!(lines.len(), 6, "{t}");
        assert_eq!(cgroups(&with_cgroups(&[])), "");
        let e = explain(&r.streams[0].worst[0]);
        assert!(
            e.contains(
                "    cgroup of t/0: /system.slice/docker-ab.scope, container docker ab (/proc/1/cgroup, read after the spike)"
            ),
            "{e}"
        );
    }
}
