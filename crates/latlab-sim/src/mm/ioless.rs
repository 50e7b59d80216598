//! 3.2's IO-less `balance_dirty_pages()` (Fengguang Wu; mm/page-writeback.c of 3.2, research
//! notes writeback-2.6.17.md item 6) and the per-device flusher thread that does all the
//! writing (fs/fs-writeback.c `wb_writeback`).
//!
//! The writer never writes. Past the free-run point `(thresh + bg_thresh) / 2` it sleeps a
//! pause: the pages it dirtied since its last pause over a rate, the write bandwidth times
//! the position ratio `1 + ((setpoint - dirty) / (limit - setpoint))^3` with its per-device
//! linear correction, at most `max_pause` (200 ms). Its next pause comes after
//! `nr_dirtied_pause` pages: `dirty_poll_interval` in the free run, else about half a
//! maximum pause's worth at the throttled rate.
//!
//! Simplified: the device's `dirty_ratelimit` is taken at what 3.2's estimator converges to
//! with one dirtier, the write bandwidth (`avg_write_bandwidth`: pages completed, a 3 s
//! moving average updated every 200 ms, starting at INIT_BW 100 MB/s); `global_dirty_limit`
//! is the threshold itself (it only lags a falling threshold); the flusher's kupdate work
//! (every 5 s, inodes older than 30 s) is left out: a run's files are younger.

use crate::kernel::path::{Chan, Ctx, Nested, Path, Step, Work};
use crate::kernel::state::KReq;
use crate::mm::fs_ops::Wbc;
use crate::mm::state::MmK;
use latlab_core::Nanos;
use std::collections::BTreeMap;

/// MAX_PAUSE: 200 ms (`max(HZ/5, 1)`).
pub const MAX_PAUSE_NS: Nanos = 200_000_000;
/// BANDWIDTH_INTERVAL: the bandwidth estimate is updated at most every 200 ms.
const BANDWIDTH_INTERVAL_NS: Nanos = 200_000_000;
/// The averaging period of `bdi_update_write_bandwidth`: `roundup_pow_of_two(3 * HZ)`
/// jiffies, about 3 s (4.1 s at HZ 1000, 4.1 s at 250): 3 s.
const BANDWIDTH_PERIOD_NS: f64 = 3e9;
/// INIT_BW: 100 MB/s in 4 KiB pages per second.
const INIT_BW: f64 = 100.0 * 1024.0 * 1024.0 / 4096.0;
/// MIN_WRITEBACK_PAGES: a flusher chunk is a multiple of 4 MiB.
const MIN_WRITEBACK_PAGES: u64 = 1024;
/// DIRTY_SCOPE: a chunk is at most 1/8 of the dirty limit.
const DIRTY_SCOPE: u64 = 8;

/// The IO-less state: the bandwidth estimate and each dirtier's ratelimit.
pub struct IoLess {
    /// `avg_write_bandwidth`, pages per second.
    pub write_bw: f64,
    bw_stamp: Nanos,
    written_stamp: u64,
    /// Per task: (`nr_dirtied`, `nr_dirtied_pause`).
    tasks: BTreeMap<u32, (u64, u64)>,
    /// `bdi_start_background_writeback` asked the flusher to run.
    pub background_requested: bool,
    /// 6.x `wb->b_io`: the inodes `queue_io` moved for the flusher's walk, next first
    /// ([`crate::fs::fs_writeback6`]).
    pub b_io: std::collections::VecDeque<u32>,
    /// 6.x `wb->b_more_io`: inodes whose chunk ran out, spliced ahead of `b_io` by the next
    /// `queue_io`.
    pub b_more_io: std::collections::VecDeque<u32>,
}

impl Default for IoLess {
    fn default() -> Self {
        IoLess {
            write_bw: INIT_BW,
            bw_stamp: 0,
            written_stamp: 0,
            tasks: BTreeMap::new(),
            background_requested: false,
            b_io: std::collections::VecDeque::new(),
            b_more_io: std::collections::VecDeque::new(),
        }
    }
}

/// `global_dirty_limits()` of 3.2: (background, dirty threshold) over the dirtyable memory
/// (free and reclaimable pages; with swap, anonymous pages are reclaimable too).
pub fn global_dirty_limits<K: MmK>(k: &K) -> (u64, u64) {
    let dirtyable = k.mm.free + k.mm.cache + k.mm.anon;
    let t = k.writeback.pwb().tunables;
    let thresh = u64::from(t.dirty_ratio) * dirtyable / 100;
    let mut bg = u64::from(t.dirty_background_ratio) * dirtyable / 100;
    if bg >= thresh {
        bg = thresh / 2;
    }
    (bg, thresh)
}

/// `dirty_poll_interval(dirty, thresh)`: `2^(ilog2(thresh - dirty) / 2)`, 1 over the limit.
fn dirty_poll_interval(dirty: u64, thresh: u64) -> u64 {
    if thresh > dirty {
        1 << ((thresh - dirty).ilog2() / 2)
    } else {
        1
    }
}

/// Pages task `pid` may dirty before its next `balance_dirty_pages`.
pub fn headroom<K: MmK>(k: &K, pid: u32) -> u64 {
    let (dirtied, pause) = k.writeback.pwb().ioless.tasks.get(&pid).copied().unwrap_or((0, 32));
    pause.saturating_sub(dirtied).max(1)
}

/// Task `pid` dirtied `n` pages; true when it must call `balance_dirty_pages`.
pub fn dirtied<K: MmK>(k: &mut K, pid: u32, n: u64) -> bool {
    // nr_dirtied_pause starts at 32 (INIT_TASK, 128 KiB).
    let pwb = k.writeback.pwb_mut();
    let e = pwb.ioless.tasks.entry(pid).or_insert((0, 32));
    e.0 += n;
    let mut pause = e.1;
    if pwb.dirty_exceeded {
        pause = pause.min(8);
    }
    e.0 >= pause
}

/// `bdi_update_bandwidth`: at most every 200 ms, fold the pages completed since the last
/// update into the moving average.
fn update_bandwidth<K: MmK>(k: &mut K, now: Nanos) {
    let written = k.pages_written();
    let io = &mut k.writeback.pwb_mut().ioless;
    let elapsed = now.saturating_sub(io.bw_stamp);
    if elapsed < BANDWIDTH_INTERVAL_NS {
        return;
    }
    let rate = (written - io.written_stamp) as f64 * 1e9 / elapsed as f64;
    let e = (elapsed as f64).min(BANDWIDTH_PERIOD_NS);
    io.write_bw = (io.write_bw * (BANDWIDTH_PERIOD_NS - e) + rate * e) / BANDWIDTH_PERIOD_NS;
    io.bw_stamp = now;
    io.written_stamp = written;
}

/// The position ratio of 3.2's `bdi_position_ratio` for one device holding all the dirty
/// pages: the global cubic term times the device's linear correction.
fn pos_ratio(dirty: u64, freerun: u64, limit: u64, write_bw: f64) -> f64 {
    if dirty >= limit {
        return 0.0;
    }
    let setpoint = (freerun + limit) as f64 / 2.0;
    let x = (setpoint - dirty as f64) / (limit as f64 - setpoint + 1.0);
    let mut pos = 1.0 + x * x * x;
    // The device's line: its threshold is the global one, `span = 8 * write_bw`.
    let span = 8.0 * write_bw;
    let x_intercept = setpoint + span;
    if (dirty as f64) < x_intercept - span / 4.0 {
        pos *= (x_intercept - dirty as f64) / (x_intercept - setpoint + 1.0);
    } else {
        pos /= 4.0;
    }
    pos.max(0.0)
}

/// The writer's `balance_dirty_pages(mapping, pages_dirtied)` of 3.2: at most one pause.
pub fn balance_dirty_pages<K: MmK>(k: &mut K, cx: &Ctx) -> Option<Box<dyn Path<K>>> {
    k.writeback.pwb_mut().stats.balance_calls += 1;
    let (dirtied, _) = k
        .writeback
        .pwb_mut()
        .ioless
        .tasks
        .get(&cx.pid)
        .copied()
        .unwrap_or((0, 32));
    let nr_dirty = k.nr_dirty() + k.nr_writeback();
    let (bg, thresh) = global_dirty_limits(k);
    let freerun = (thresh + bg) / 2;
    let set = |k: &mut K, pause: u64| {
        k.writeback.pwb_mut().ioless.tasks.insert(cx.pid, (0, pause.max(1)));
    };
    if nr_dirty <= freerun {
        set(k, dirty_poll_interval(nr_dirty, thresh));
        k.writeback.pwb_mut().dirty_exceeded = false;
        return None;
    }
    if k.writeback.pwb_mut().bdi_pdflush.is_none() {
        start_background(k);
    }
    k.writeback.pwb_mut().dirty_exceeded = nr_dirty > thresh;
    update_bandwidth(k, cx.now);
    let bw = k.writeback.pwb_mut().ioless.write_bw;
    let limit = thresh.max(freerun + 1);
    let rate = bw * pos_ratio(nr_dirty, freerun, limit, bw);
    let tick = k.writeback.pwb_mut().tick_ns;
    // bdi_max_pause: the time the device needs for 1/8 of its dirty pages, at most 200 ms.
    let max_pause = ((nr_dirty as f64 / (8.0 * bw) * 1e9) as Nanos).clamp(tick, MAX_PAUSE_NS);
    let pause = if rate <= 0.0 {
        max_pause
    } else {
        ((dirtied as f64 / rate * 1e9) as Nanos).min(max_pause)
    };
    // The next ratelimit: about half a maximum pause's worth at the throttled rate.
    let half = (rate.max(1.0) * (max_pause as f64 / 2e9)) as u64;
    set(k, half.clamp(8, 4 * dirtied.max(8)));
    if pause < tick {
        return None;
    }
    k.writeback.pwb_mut().stats.writer_waits += 1;
    // io_schedule_timeout(pause) on the timer list.
    let token = k.writeback.pwb_mut().token();
    let chan = Chan::Throttle(token);
    let at = k.writeback.pwb_mut().timer_expiry(cx.now, pause);
    k.out.push(KReq::WakeAt { at, chan });
    Some(Box::new(crate::kernel::path::Script {
        name: "balance_dirty_pages",
        steps: smallvec::smallvec![Work::plain("balance_dirty_pages", k.c.dirty_limits), Step::Block(chan)],
    }))
}

/// `bdi_start_background_writeback`: wake the flusher.
fn start_background<K: MmK>(k: &mut K) {
    k.writeback.pwb_mut().ioless.background_requested = true;
    let pid = k.kthreads.flusher();
    k.wake_kthread(pid);
}

/// `over_bground_thresh()`.
pub fn over_bground_thresh<K: MmK>(k: &K) -> bool {
    let (bg, _) = global_dirty_limits(k);
    k.nr_dirty() > bg
}

/// The flusher's background `wb_writeback`: chunks of `writeback_chunk_size` pages, waiting
/// for request slots, while over the background threshold. It owns `BDI_writeback_running`
/// (what `writeback_in_progress` tests) for the whole work.
pub fn wb_writeback<K: MmK>(k: &mut K, pid: u32) -> Box<dyn Path<K>> {
    k.writeback.pwb_mut().ioless.background_requested = false;
    k.writeback.pwb_mut().bdi_pdflush = Some(pid);
    Box::new(WbWriteback {
        sub: Nested::default(),
        passed: false,
    })
}

struct WbWriteback<K> {
    sub: Nested<K>,
    passed: bool,
}

impl<K: MmK> Path<K> for WbWriteback<K> {
    fn name(&self) -> &'static str {
        "wb_writeback"
    }
    fn next(&mut self, k: &mut K, cx: &Ctx) -> Step {
        loop {
            if let Some(s) = self.sub.next(k, cx) {
                return s;
            }
            let stalled =
                std::mem::take(&mut self.passed) && k.writeback.pwb_mut().wbc.nr_to_write > 0 && k.nr_dirty() == 0;
            if stalled || !over_bground_thresh(k) {
                k.writeback.pwb_mut().bdi_pdflush = None;
                return Step::Done;
            }
            update_bandwidth(k, cx.now);
            let (_, thresh) = global_dirty_limits(k);
            // writeback_chunk_size: min(bw / 2, limit / DIRTY_SCOPE), in whole 4 MiB units.
            let pages = ((k.writeback.pwb_mut().ioless.write_bw / 2.0) as u64).min(thresh / DIRTY_SCOPE);
            let chunk = (pages + MIN_WRITEBACK_PAGES) / MIN_WRITEBACK_PAGES * MIN_WRITEBACK_PAGES;
            self.passed = true;
            self.sub.start(k.flusher_writeback(Wbc::new(chunk, false, None)));
        }
    }
    fn advanced(&mut self, k: &mut K, cx: &Ctx, done: u64) {
        self.sub.advanced(k, cx, done);
    }
}
