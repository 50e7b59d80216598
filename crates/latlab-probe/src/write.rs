//! write(2) latency per record, as seed 001 measured it with `iozone -Q`: a file of a share of
//! RAM written sequentially in 4 KiB records, every write(2) timed. Long writes are the writer
//! being throttled in `balance_dirty_pages()` (mm/page-writeback.c), which seed 001 moved out
//! of the writer. `--explain` traces the scheduler and `writeback:balance_dirty_pages` on every
//! CPU while writing (when tracefs is usable) and splits each slow record into time on a CPU,
//! time preempted and time asleep, with who woke the writer and the throttling it met
//! ([`crate::sched_trace::Recorded::off_cpu`]); it also notes the dirty and writeback page
//! counts (/proc/vmstat) right after each slow record.
//!
//! The file lives in a scratch directory, is refused when it would leave less than
//! [`MIN_FREE_SHARE`] of the file system free, and is unlinked as soon as it is created, so
//! nothing is left however the run ends (the loop also checks [`crate::signals`] after every
//! record, so SIGINT/SIGTERM/SIGHUP end it at once).

use crate::clock::mono_ns;
use crate::sched_trace::SchedTrace;
use crate::signals;
use crate::timer::Break;
use latlab_core::attribution::Attribution;
use latlab_core::result::{IoRecord, Sample, Stream};
use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Share of the file system that must stay free after the file is written.
pub const MIN_FREE_SHARE: f64 = 0.10;

#[derive(Clone, Debug)]
pub struct WriteConfig {
    /// Directory to write in.
    pub dir: PathBuf,
    /// File size in bytes (a multiple of `record` is written; the rest is dropped).
    pub size: u64,
    /// Bytes per write(2); iozone's default record is 4 KiB.
    pub record: usize,
    /// How many worst records to keep (seed 001 listed the last 10 of `sort -nk2`).
    pub keep_worst: usize,
    /// Note /proc/vmstat dirty/writeback figures after records slower than this (ns).
    pub explain_above_ns: Option<u64>,
    /// Stop at the first record of at least this (ns), freezing the trace.
    pub break_above_ns: Option<u64>,
    /// Bytes written so far, for a live display.
    pub progress: Option<std::sync::Arc<std::sync::atomic::AtomicU64>>,
    /// Keep every record's offset, latency and size in the stream (`Stream::records`).
    pub keep_records: bool,
}

/// What a write run produced.
#[derive(Debug)]
pub struct WriteOutcome {
    pub stream: Stream,
    pub bytes: u64,
    /// Time of the write(2) loop alone, then of the final fsync.
    pub write_ns: u64,
    pub fsync_ns: u64,
    pub interrupted: bool,
    /// The record that stopped the run (`break_above_ns`).
    pub broke: Option<Break>,
    /// Why the scheduler tracepoints could not be used, when `--explain` wanted them.
    pub trace_error: Option<String>,
    /// Context switches over the write loop: the machine's (/proc/stat `ctxt`, vmstat's
    /// `cs`) and the writer's involuntary ones (`getrusage` `ru_nivcsw`, /usr/bin/time's
    /// `%c`); None where either could not be read.
    pub switches: Option<(u64, u64)>,
    /// What the `--on-threshold` command did.
    pub on_threshold: Option<crate::on_threshold::Report>,
}

/// The machine's context switches since boot (/proc/stat `ctxt`).
fn machine_switches() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    stat.lines()
        .find_map(|l| l.strip_prefix("ctxt "))
        .and_then(|v| v.trim().parse().ok())
}

/// This thread's involuntary context switches so far.
fn involuntary_switches() -> Option<u64> {
    use nix::sys::resource::{getrusage, UsageWho};
    getrusage(UsageWho::RUSAGE_THREAD)
        .ok()
        .and_then(|u| u64::try_from(u.involuntary_context_switches()).ok())
}

/// Both counts now.
fn switches_now() -> Option<(u64, u64)> {
    machine_switches().zip(involuntary_switches())
}

/// Ring buffer per CPU for the write trace: the whole machine is traced, so a long run keeps
/// only its last stretch; 16 MiB holds a few seconds of a busy CPU.
const WRITE_TRACE_KB: usize = 16 * 1024;

/// Physical memory (/proc/meminfo MemTotal), in bytes.
pub fn mem_total() -> Option<u64> {
    meminfo_kb("MemTotal").map(|kb| kb * 1024)
}

pub(crate) fn meminfo_kb(key: &str) -> Option<u64> {
    let s = std::fs::read_to_string("/proc/meminfo").ok()?;
    s.lines()
        .find(|l| l.split(':').next() == Some(key))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// Bytes available to an unprivileged writer on the file system holding `dir`.
pub fn free_bytes(dir: &Path) -> Result<u64, String> {
    let st = nix::sys::statvfs::statvfs(dir).map_err(|e| format!("statvfs {}: {e}", dir.display()))?;
    Ok(st.blocks_available() as u64 * st.fragment_size() as u64)
}

/// Refuse sizes that would leave less than [`MIN_FREE_SHARE`] of the disk free.
pub fn check_space(dir: &Path, size: u64) -> Result<(), String> {
    let st = nix::sys::statvfs::statvfs(dir).map_err(|e| format!("statvfs {}: {e}", dir.display()))?;
    let frag = st.fragment_size() as u64;
    let avail = st.blocks_available() as u64 * frag;
    let total = st.blocks() as u64 * frag;
    let keep = (total as f64 * MIN_FREE_SHARE) as u64;
    if size.saturating_add(keep) > avail {
        return Err(format!(
            "{} has {} MiB free; writing {} MiB would leave less than {:.0} % of the disk free \
             (pass a smaller --size or another --dir)",
            dir.display(),
            avail >> 20,
            size >> 20,
            MIN_FREE_SHARE * 100.0
        ));
    }
    Ok(())
}

/// The test file, created and at once unlinked: it has no name while it is written, and the
/// kernel frees it when the probe's descriptor closes, however the probe ends (SIGKILL
/// included). It is made in a private directory (`latlab-write-PID-<random>`, mode 0700,
/// [`crate::private`]) removed with it, so no name another user could plant (a symlink to a
/// file root would truncate) is ever opened; the guardian, or failing it the next probe's
/// [`crate::guard::sweep`], removes the directory of a probe killed before it did.
fn scratch_file(dir: &Path) -> Result<File, String> {
    use std::os::unix::fs::OpenOptionsExt;
    let prefix = format!("latlab-write-{}-", std::process::id());
    let (private, _held) = crate::private::held_dir(dir, &prefix)
        .map_err(|e| format!("creating a private directory in {}: {e}", dir.display()))?;
    let path = private.join("data");
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&path)
        .map_err(|e| format!("create {}: {e}", path.display()));
    let unlinked = match &file {
        Ok(_) => std::fs::remove_file(&path),
        Err(_) => Ok(()),
    };
    let removed = unlinked
        .and_then(|()| std::fs::remove_dir(&private))
        .map_err(|e| format!("removing {}: {e}", private.display()));
    let file = file?;
    removed?;
    Ok(file)
}

/// Write the file and time every record.
pub fn run(cfg: &WriteConfig) -> Result<WriteOutcome, String> {
    run_acting(cfg, None)
}

/// [`run`], running `on_threshold`'s command when a record crosses its threshold.
pub fn run_acting(
    cfg: &WriteConfig,
    on_threshold: Option<crate::on_threshold::Action>,
) -> Result<WriteOutcome, String> {
    if cfg.record == 0 {
        return Err("record size must be greater than zero".into());
    }
    check_space(&cfg.dir, cfg.size)?;
    signals::install();
    let mut file = scratch_file(&cfg.dir)?;
    let buf: Vec<u8> = (0..cfg.record).map(|i| (i % 251) as u8 + 1).collect();
    let records = cfg.size / cfg.record as u64;
    let mut stream = Stream::new("write", format!("write(2) of {} B", cfg.record));
    let (mut tracer, mut trace_error) = (None, None);
    if cfg.explain_above_ns.is_some() {
        match SchedTrace::start(&crate::parse::allowed_cpus(), WRITE_TRACE_KB) {
            Ok(t) => tracer = Some(t),
            Err(e) => trace_error = Some(e),
        }
    }
    let freezer = tracer.as_ref().map(SchedTrace::freezer);
    let hook = on_threshold
        .map(|a| crate::on_threshold::Hook::start(a, tracer.as_ref().map(SchedTrace::freezer)))
        .transpose()?;
    let watch = match cfg.explain_above_ns {
        Some(_) => Some(crate::cgroup::Watch::start()?),
        None => None,
    };
    let spotter = watch.as_ref().and_then(crate::cgroup::Watch::spotter);
    let tid = crate::clock::gettid();
    let switches_before = switches_now();
    let start = mono_ns();
    let mut bytes = 0;
    let mut interrupted = false;
    let mut broke = None;
    if cfg.keep_records {
        stream.records.reserve_exact(records as usize);
    }
    for i in 0..records {
        if signals::stop_requested() {
            interrupted = true;
            break;
        }
        let t0 = mono_ns();
        file.write_all(&buf)
            .map_err(|e| format!("write to {} at {} KB: {e}", cfg.dir.display(), bytes >> 10))?;
        let lat = mono_ns() - t0;
        bytes += cfg.record as u64;
        if let Some(p) = &cfg.progress {
            p.store(bytes, std::sync::atomic::Ordering::Relaxed);
        }
        stream.hist.record(lat);
        if let Some(h) = &hook {
            // SAFETY: sched_getcpu has no preconditions.
            let cpu = usize::try_from(unsafe { libc::sched_getcpu() }).ok();
            h.offer(&stream.name, cpu, t0 - start, t0, lat);
        }
        if let Some(sp) = spotter
            .as_ref()
            .filter(|_| cfg.explain_above_ns.is_some_and(|t| lat >= t))
        {
            sp.spike();
        }
        if cfg.keep_records {
            stream.records.push(IoRecord {
                offset_kb: (i * cfg.record as u64) >> 10,
                latency_ns: lat,
                bytes: cfg.record as u64,
            });
        }
        let keeps = stream.worst.len() < cfg.keep_worst || stream.worst.last().is_some_and(|w| w.latency_ns < lat);
        if keeps {
            let mut tag = BTreeMap::new();
            tag.insert("offset_kb".to_string(), ((i * cfg.record as u64) >> 10).to_string());
            tag.insert("record_bytes".to_string(), cfg.record.to_string());
            let attribution = match cfg.explain_above_ns {
                Some(t) if lat >= t => dirty_state(),
                _ => Attribution::default(),
            };
            stream.offer_worst(
                Sample {
                    at_ns: t0 - start,
                    latency_ns: lat,
                    tag,
                    attribution,
                },
                cfg.keep_worst,
            );
        }
        if cfg.break_above_ns.is_some_and(|b| lat >= b) {
            if let Some(f) = &freezer {
                f.freeze();
            }
            broke = Some(Break {
                stream: stream.name.clone(),
                at_ns: t0 - start,
                latency_ns: lat,
            });
            break;
        }
    }
    let write_ns = mono_ns() - start;
    let switches = switches_before
        .zip(switches_now())
        .map(|((m0, i0), (m1, i1))| (m1.saturating_sub(m0), i1.saturating_sub(i0)));
    // The command reads the frozen recording: wait for it before the instance goes.
    let on_threshold = hook.map(crate::on_threshold::Hook::finish);
    let sightings = watch.map(crate::cgroup::Watch::finish);
    if let (Some(t), Some(threshold)) = (tracer, cfg.explain_above_ns) {
        match t.finish() {
            Ok(rec) => {
                for w in stream.worst.iter_mut().filter(|w| w.latency_ns >= threshold) {
                    let t0 = start + w.at_ns;
                    let dirty = std::mem::take(&mut w.attribution.note);
                    w.attribution = rec.off_cpu(tid, t0, t0 + w.latency_ns);
                    w.attribution.note = format!("{}; {dirty}", w.attribution.note);
                    let cpus = rec.cpus_of(tid, t0, t0 + w.latency_ns);
                    stream.recorded.push(rec.window(&cpus, w.at_ns, t0, t0 + w.latency_ns));
                }
            }
            Err(e) => trace_error = Some(e),
        }
    }
    if let (Some(seen), Some(threshold)) = (sightings, cfg.explain_above_ns) {
        for w in stream.worst.iter_mut().filter(|w| w.latency_ns >= threshold) {
            seen.name(&mut w.attribution, tid);
        }
    }
    let t = mono_ns();
    let _ = file.sync_all();
    let fsync_ns = mono_ns() - t;
    Ok(WriteOutcome {
        stream,
        bytes,
        write_ns,
        fsync_ns,
        interrupted,
        broke,
        trace_error,
        switches,
        on_threshold,
    })
}

/// Dirty-page state right after a slow record (/proc/vmstat and the dirty ratios).
fn dirty_state() -> Attribution {
    let vm = std::fs::read_to_string("/proc/vmstat").unwrap_or_default();
    let get = |k: &str| {
        vm.lines()
            .find_map(|l| l.strip_prefix(k).and_then(|r| r.strip_prefix(' ')))
            .and_then(|v| v.trim().parse::<u64>().ok())
    };
    let ratio = |f: &str| {
        std::fs::read_to_string(format!("/proc/sys/vm/{f}"))
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| "?".into())
    };
    let mib = |p: Option<u64>| p.map(|p| format!("{} MiB", p * 4 / 1024)).unwrap_or_else(|| "?".into());
    Attribution {
        note: format!(
            "after the write: dirty {}, writeback {}; throttling starts at {} dirty, background writeback at {} \
             (vm.dirty_ratio {} %, vm.dirty_background_ratio {} %)",
            mib(get("nr_dirty")),
            mib(get("nr_writeback")),
            mib(get("nr_dirty_threshold")),
            mib(get("nr_dirty_background_threshold")),
            ratio("dirty_ratio"),
            ratio("dirty_background_ratio")
        ),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmpdir(name: &str) -> PathBuf {
        crate::private::dir(&std::env::temp_dir(), &format!("latlab-write-test-{name}-")).unwrap()
    }

    #[test]
    fn writes_every_record_and_removes_the_file() {
        let dir = tmpdir("ok");
        let cfg = WriteConfig {
            dir: dir.clone(),
            size: 4 << 20,
            record: 4096,
            keep_worst: 10,
            explain_above_ns: Some(0),
            break_above_ns: None,
            progress: None,
            keep_records: true,
        };
        let out = run(&cfg).unwrap();
        assert_eq!(out.broke, None);
        assert_eq!(out.stream.hist.count(), 1024);
        // Every record, in file order.
        let recs = &out.stream.records;
        assert_eq!(recs.len(), 1024);
        assert_eq!(
            (recs[0].offset_kb, recs[1].offset_kb, recs[1023].offset_kb),
            (0, 4, 4092)
        );
        assert!(recs.iter().all(|r| r.bytes == 4096));
        assert_eq!(
            recs.iter().map(|r| r.latency_ns).max(),
            Some(out.stream.worst[0].latency_ns)
        );
        assert_eq!(out.bytes, 4 << 20);
        assert_eq!(out.stream.worst.len(), 10);
        assert!(out.stream.worst[0].attribution.note.contains("dirty"));
        assert!(out.stream.worst.iter().all(|w| w.tag["record_bytes"] == "4096"));
        // The machine switched at least as often as the writer was switched out unwillingly.
        let (all, invol) = out.switches.expect("/proc/stat and getrusage on Linux");
        assert!(all >= invol, "{all} {invol}");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0, "test file left behind");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn break_above_stops_at_the_first_record_above_it() {
        let dir = tmpdir("break");
        let cfg = WriteConfig {
            dir: dir.clone(),
            size: 4 << 20,
            record: 4096,
            keep_worst: 10,
            explain_above_ns: None,
            break_above_ns: Some(1),
            progress: Some(Default::default()),
            keep_records: false,
        };
        let out = run(&cfg).unwrap();
        assert_eq!(out.stream.hist.count(), 1);
        assert_eq!(out.bytes, 4096);
        assert_eq!(cfg.progress.unwrap().load(std::sync::atomic::Ordering::Relaxed), 4096);
        assert!(out.stream.records.is_empty());
        let b = out.broke.expect("broke");
        assert_eq!((b.stream.as_str(), b.latency_ns), ("write", out.stream.hist.max()));
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0, "test file left behind");
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// Another user's symlinks at the names the probe once used (`latlab-write-PID.dat`) and
    /// at names it might use are never followed: their targets keep their contents.
    #[test]
    fn planted_symlinks_are_not_followed() {
        let dir = tmpdir("planted");
        let victim = tmpdir("victim").join("precious");
        std::fs::write(&victim, "keep me").unwrap();
        let pid = std::process::id();
        let planted = [
            dir.join(format!("latlab-write-{pid}.dat")),
            dir.join(format!("latlab-write-{pid}-")),
            dir.join("data"),
        ];
        for p in &planted {
            std::os::unix::fs::symlink(&victim, p).unwrap();
        }
        let cfg = WriteConfig {
            dir: dir.clone(),
            size: 1 << 20,
            record: 4096,
            keep_worst: 10,
            explain_above_ns: None,
            break_above_ns: None,
            progress: None,
            keep_records: false,
        };
        let out = run(&cfg).unwrap();
        assert_eq!(out.bytes, 1 << 20);
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep me");
        let mut left: Vec<PathBuf> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
        left.sort();
        let mut want = planted.to_vec();
        want.sort();
        assert_eq!(left, want, "only the planted links are left");
        std::fs::remove_dir_all(dir).unwrap();
        std::fs::remove_dir_all(victim.parent().unwrap()).unwrap();
    }

    #[test]
    fn refuses_to_fill_the_disk() {
        let dir = tmpdir("full");
        let free = free_bytes(&dir).unwrap();
        let err = check_space(&dir, free).unwrap_err();
        assert!(err.contains("free"), "{err}");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
