//! 2.6.17's page-based write throttling (mm/page-writeback.c of 2.6.16/2.6.17, research notes
//! writeback-2.6.17.md items 1-3), and seed 001's patch of it (Ananiev, June 2006).
//!
//! - `balance_dirty_pages_ratelimited`: a per-CPU count of pages dirtied; at
//!   `ratelimit_pages` (8 while `dirty_exceeded`) the dirtier calls `balance_dirty_pages`.
//! - `get_dirty_limits`: `dirty_ratio` capped at half the unmapped share of memory (so the
//!   patch's 60 % is about 45 % in effect), background halved when not below it.
//! - Stock `balance_dirty_pages`: over the limit, the writer runs `writeback_inodes` itself
//!   (`write_chunk` = 1.5 x ratelimit pages, blocking on the queue), and while it has not
//!   written its chunk and the limit is still exceeded, sleeps in `blk_congestion_wait(HZ/10)`
//!   and tries again; afterwards it hands `background_writeout` to pdflush unless
//!   `writeback_in_progress`.
//! - Patched: the writer never writes; while pdflush is writing and the dirty pages exceed
//!   the limit it sleeps `blk_congestion_wait(HZ/50)` once; otherwise it starts pdflush over
//!   the background limit.
//! - `background_writeout` (pdflush): 1024-page nonblocking passes until under the background
//!   limit; stock stops when a pass wrote less and met no congestion, patched keeps on.
//! - `wb_kupdate` (pdflush, every 5 s): inodes dirtied more than 30 s ago.
//!
//! `blk_congestion_wait` sleeps until a queue's congestion clears or the timeout passes
//! (`io_schedule_timeout` on the timer list: at a tick).

use crate::kernel::path::{Chan, Ctx, Nested, Path, Step, Work};
use crate::kernel::state::KReq;
use crate::mm::fs_ops::Wbc;
use crate::mm::pdflush::{pdflush_operation, Job, Pool};
use crate::mm::state::MmK;
use crate::variant::DirtyTunables;
use latlab_core::Nanos;
use std::collections::BTreeMap;

/// `MAX_WRITEBACK_PAGES`: pages per `background_writeout` / `wb_kupdate` pass.
pub const MAX_WRITEBACK_PAGES: u64 = 1024;
/// `dirty_writeback_interval`: 5 s between `wb_kupdate` runs.
pub const WRITEBACK_INTERVAL_NS: Nanos = 5_000_000_000;
/// `dirty_expire_interval`: kupdate writes inodes dirtied more than 30 s ago.
pub const EXPIRE_NS: Nanos = 30_000_000_000;
/// The ratelimit while `dirty_exceeded` (balance_dirty_pages_ratelimited_nr).
const EXCEEDED_RATELIMIT: u64 = 8;

/// The writeback subsystem's state, kept with it (not in the shared kernel struct).
pub struct PageWriteback {
    pub tunables: DirtyTunables,
    /// `ratelimit_pages` as `set_ratelimit()` leaves it.
    pub ratelimit_pages: u64,
    /// The per-CPU `ratelimits` count (one CPU).
    ratelimit_count: u64,
    /// The global `dirty_exceeded`.
    pub dirty_exceeded: bool,
    /// `BDI_pdflush` of the disk: the pdflush thread writing one of its inodes.
    pub bdi_pdflush: Option<u32>,
    /// `I_LOCK`: file -> pid of the task writing it back.
    pub i_lock: BTreeMap<u32, u32>,
    /// The caller's `writeback_control` of the `writeback_inodes` running or just returned.
    pub wbc: Wbc,
    /// The pdflush thread pool (2.6.17 kernels).
    pub pool: Pool,
    /// One jiffy, for timeouts on the timer list.
    pub tick_ns: Nanos,
    /// `blk_congestion_wait` sleepers (their wait tokens), woken when congestion clears.
    congestion_waiters: Vec<u64>,
    next_token: u64,
    /// 3.2's IO-less state ([`crate::mm::ioless`]).
    pub ioless: crate::mm::ioless::IoLess,
    /// Counters for the run's result.
    pub stats: WbStats,
}

/// What the writeback did, for the run's counters.
#[derive(Clone, Copy, Debug, Default)]
pub struct WbStats {
    /// `balance_dirty_pages` calls.
    pub balance_calls: u64,
    /// Pages a throttled writer wrote itself.
    pub writer_pages: u64,
    /// `blk_congestion_wait` / IO-less pauses a writer slept.
    pub writer_waits: u64,
    /// `pdflush_operation` calls that found every thread busy.
    pub pdflush_busy: u64,
    /// Sleeps of a nonblocking writeback (pdflush) in `get_request_wait`, inside a page.
    pub nonblocking_request_waits: u64,
    /// Inodes a `WB_SYNC_NONE` pass skipped because another task held their `I_LOCK`.
    pub ilock_skips: u64,
}

impl PageWriteback {
    /// The state at boot for `tunables` on a box of `total_pages` (what
    /// `nr_free_pagecache_pages()` counts), one CPU, HZ `hz`.
    pub fn new(tunables: DirtyTunables, total_pages: u64, hz: u32) -> Self {
        // set_ratelimit(): total_pages / (ncpus * 32), at least 16, at most 4 MiB of pages.
        let ratelimit_pages = (total_pages / 32).clamp(16, 4096 * 1024 / 4096);
        PageWriteback {
            tunables,
            ratelimit_pages,
            ratelimit_count: 0,
            dirty_exceeded: false,
            bdi_pdflush: None,
            i_lock: BTreeMap::new(),
            wbc: Wbc::default(),
            pool: Pool::default(),
            tick_ns: 1_000_000_000 / u64::from(hz.max(1)),
            congestion_waiters: Vec::new(),
            next_token: 0,
            ioless: Default::default(),
            stats: WbStats::default(),
        }
    }

    /// `clear_queue_congested`: wake every `blk_congestion_wait` sleeper.
    pub fn congestion_cleared(&mut self, out: &mut Vec<KReq>) {
        for t in self.congestion_waiters.drain(..) {
            out.push(KReq::Wake(Chan::Congestion(t)));
        }
    }

    /// A fresh token for a timed sleep.
    pub fn token(&mut self) -> u64 {
        self.next_token += 1;
        self.next_token
    }

    /// `timeout_ns` from `now` on the timer list: at the tick it expires on.
    pub fn timer_expiry(&self, now: Nanos, timeout_ns: Nanos) -> Nanos {
        (now + timeout_ns).div_ceil(self.tick_ns) * self.tick_ns
    }

    /// Pages a dirtier may dirty before `balance_dirty_pages_ratelimited` calls
    /// `balance_dirty_pages`.
    pub fn ratelimit_headroom(&self) -> u64 {
        self.ratelimit().saturating_sub(self.ratelimit_count).max(1)
    }

    fn ratelimit(&self) -> u64 {
        if self.dirty_exceeded {
            EXCEEDED_RATELIMIT
        } else {
            self.ratelimit_pages
        }
    }

    /// `n` pages were dirtied on this CPU; true when the count reached the ratelimit (and
    /// was reset): the dirtier must balance.
    pub fn dirtied(&mut self, n: u64) -> bool {
        self.ratelimit_count += n;
        if self.ratelimit_count >= self.ratelimit() {
            self.ratelimit_count = 0;
            return true;
        }
        false
    }
}

/// What `get_dirty_limits` reads and computes, in pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    pub background: u64,
    pub dirty: u64,
    /// `nr_dirty + nr_unstable` (no NFS here: unstable is 0).
    pub nr_reclaimable: u64,
    pub nr_writeback: u64,
}

impl Limits {
    pub fn exceeded(&self) -> bool {
        self.nr_reclaimable + self.nr_writeback > self.dirty
    }
}

/// `get_dirty_limits()` of 2.6.17.
pub fn get_dirty_limits<K: MmK>(k: &K) -> Limits {
    let total = k.buffer_pages().max(1);
    let t = k.writeback.pwb().tunables;
    // nr_mapped (2.6.17 counts mapped file and anonymous pages alike).
    let unmapped_ratio = 100 - (k.mm.anon * 100 / total).min(100);
    let dirty_ratio = u64::from(t.dirty_ratio).min(unmapped_ratio / 2).max(5);
    let mut background_ratio = u64::from(t.dirty_background_ratio);
    if background_ratio >= dirty_ratio {
        background_ratio = dirty_ratio / 2;
    }
    Limits {
        background: background_ratio * total / 100,
        dirty: dirty_ratio * total / 100,
        nr_reclaimable: k.nr_dirty(),
        nr_writeback: k.nr_writeback(),
    }
}

/// `blk_congestion_wait(WRITE, timeout)`: sleep until some queue's congestion clears, or
/// the timeout.
pub struct CongestionWait {
    timeout_ns: Nanos,
    slept: bool,
}

pub fn blk_congestion_wait<K: MmK>(timeout_ns: Nanos) -> Box<dyn Path<K>> {
    Box::new(CongestionWait {
        timeout_ns,
        slept: false,
    })
}

impl<K: MmK> Path<K> for CongestionWait {
    fn name(&self) -> &'static str {
        "blk_congestion_wait"
    }
    fn next(&mut self, k: &mut K, cx: &Ctx) -> Step {
        if std::mem::replace(&mut self.slept, true) {
            return Step::Done;
        }
        let token = k.writeback.pwb_mut().token();
        k.writeback.pwb_mut().congestion_waiters.push(token);
        let at = k.writeback.pwb_mut().timer_expiry(cx.now, self.timeout_ns);
        let chan = Chan::Congestion(token);
        k.out.push(KReq::WakeAt { at, chan });
        Step::Block(chan)
    }
}

/// HZ/10 and HZ/50 in ns (`blk_congestion_wait`'s timeouts are in jiffies).
pub(crate) fn jiffies_ns<K: MmK>(k: &K, div: u64) -> Nanos {
    let hz = 1_000_000_000 / k.writeback.pwb().tick_ns.max(1);
    (hz / div).max(1) * k.writeback.pwb().tick_ns
}

/// The path a dirtier runs when its ratelimit fires, for 2.6.17 (stock or patched).
pub fn balance_dirty_pages<K: MmK>(k: &mut K) -> Box<dyn Path<K>> {
    k.writeback.pwb_mut().stats.balance_calls += 1;
    let patched = k.writeback.balance_hands_to_pdflush();
    Box::new(Balance {
        patched,
        write_chunk: k.writeback.pwb_mut().ratelimit_pages + k.writeback.pwb_mut().ratelimit_pages / 2,
        pages_written: 0,
        stage: Stage::Check,
        sub: Nested::default(),
    })
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Stage {
    /// Top of the loop: read the limits.
    Check,
    /// writeback_inodes returned.
    Wrote,
    /// Slept in blk_congestion_wait: loop again.
    Waited,
    /// The loop is over: the pdflush hand-off.
    Tail,
    Done,
}

struct Balance<K> {
    patched: bool,
    write_chunk: u64,
    pages_written: u64,
    stage: Stage,
    sub: Nested<K>,
}

impl<K: MmK> Balance<K> {
    fn wait(&mut self, timeout: Nanos, k: &mut K, stage: Stage) {
        k.writeback.pwb_mut().stats.writer_waits += 1;
        self.sub.start(blk_congestion_wait(timeout));
        self.stage = stage;
    }

    /// After the loop: clear `dirty_exceeded` if under the limit, then start pdflush unless
    /// it is already writing this disk.
    fn tail(&mut self, k: &mut K, cx: &Ctx) {
        let l = get_dirty_limits(k);
        if !l.exceeded() {
            k.writeback.pwb_mut().dirty_exceeded = false;
        }
        if k.writeback.pwb_mut().bdi_pdflush.is_none() && l.nr_reclaimable > l.background {
            pdflush_operation(k, Job::Background { min_pages: 0 }, cx.now);
        }
    }

    /// Seed 001's `balance_dirty_pages`: no writing, one short wait at most.
    fn patched(&mut self, k: &mut K, cx: &Ctx) {
        let l = get_dirty_limits(k);
        self.stage = Stage::Done;
        if k.writeback.pwb_mut().bdi_pdflush.is_some() {
            if l.nr_reclaimable > l.dirty {
                k.writeback.pwb_mut().dirty_exceeded = true;
                let t = jiffies_ns(k, 50);
                self.wait(t, k, Stage::Done);
            }
        } else if l.nr_reclaimable > l.background {
            pdflush_operation(k, Job::Background { min_pages: 0 }, cx.now);
        }
    }
}

impl<K: MmK> Path<K> for Balance<K> {
    fn name(&self) -> &'static str {
        "balance_dirty_pages"
    }
    fn next(&mut self, k: &mut K, cx: &Ctx) -> Step {
        loop {
            if let Some(s) = self.sub.next(k, cx) {
                return s;
            }
            match self.stage {
                Stage::Done => return Step::Done,
                // The patch's path runs once (its one wait leaves the stage at Done).
                Stage::Check if self.patched => {
                    self.patched(k, cx);
                    return Work::plain("balance_dirty_pages", k.c.dirty_limits);
                }
                Stage::Check | Stage::Waited => {
                    let l = get_dirty_limits(k);
                    if !l.exceeded() {
                        self.stage = Stage::Tail;
                        continue;
                    }
                    k.writeback.pwb_mut().dirty_exceeded = true;
                    if l.nr_reclaimable > 0 {
                        self.stage = Stage::Wrote;
                        let before = self.write_chunk;
                        self.sub
                            .start(K::writeback_inodes(Wbc::new(before, false, None), false));
                        return Work::plain("balance_dirty_pages", k.c.dirty_limits);
                    }
                    let t = jiffies_ns(k, 10);
                    self.wait(t, k, Stage::Waited);
                }
                Stage::Wrote => {
                    let wrote = self.write_chunk - k.writeback.pwb_mut().wbc.nr_to_write;
                    k.writeback.pwb_mut().stats.writer_pages += wrote;
                    if !get_dirty_limits(k).exceeded() {
                        self.stage = Stage::Tail;
                        continue;
                    }
                    self.pages_written += wrote;
                    if self.pages_written >= self.write_chunk {
                        // "We've done our duty".
                        self.stage = Stage::Tail;
                        continue;
                    }
                    let t = jiffies_ns(k, 10);
                    self.wait(t, k, Stage::Waited);
                }
                Stage::Tail => {
                    self.stage = Stage::Done;
                    self.tail(k, cx);
                }
            }
        }
    }
    fn advanced(&mut self, k: &mut K, cx: &Ctx, done: u64) {
        self.sub.advanced(k, cx, done);
    }
}

/// What a pdflush job does after one `writeback_inodes` pass of its loop.
enum After {
    /// Sleep in `blk_congestion_wait(HZ/10)`, then go on.
    Wait,
    /// Go on at once.
    Go,
    /// The job is over.
    Stop,
}

/// A pdflush job that loops over `writeback_inodes` passes of `MAX_WRITEBACK_PAGES`
/// (nonblocking), as `background_writeout` and `wb_kupdate` both do.
trait PassJob {
    fn name(&self) -> &'static str;
    /// The pass's `older_than_this`.
    fn older_than(&self) -> Option<Nanos>;
    /// Before a pass: is there more to do?
    fn more<K: MmK>(&mut self, k: &K) -> bool;
    /// After a pass that left `wbc`.
    fn after(&mut self, wbc: Wbc) -> After;
    /// The job's end.
    fn finish<K: MmK>(&mut self, _k: &mut K) {}
}

struct Passes<J, K> {
    job: J,
    /// A writeback_inodes pass just returned.
    passed: bool,
    sub: Nested<K>,
}

fn passes<K: MmK>(job: impl PassJob + 'static) -> Box<dyn Path<K>> {
    Box::new(Passes {
        job,
        passed: false,
        sub: Nested::default(),
    })
}

impl<J: PassJob, K: MmK> Path<K> for Passes<J, K> {
    fn name(&self) -> &'static str {
        self.job.name()
    }
    fn next(&mut self, k: &mut K, cx: &Ctx) -> Step {
        loop {
            if let Some(s) = self.sub.next(k, cx) {
                return s;
            }
            if std::mem::take(&mut self.passed) {
                match self.job.after(k.writeback.pwb_mut().wbc) {
                    After::Wait => self.sub.start(blk_congestion_wait(jiffies_ns(k, 10))),
                    After::Go => {}
                    After::Stop => {
                        self.job.finish(k);
                        return Step::Done;
                    }
                }
                continue;
            }
            if !self.job.more(k) {
                self.job.finish(k);
                return Step::Done;
            }
            self.passed = true;
            let wbc = Wbc::new(MAX_WRITEBACK_PAGES, true, self.job.older_than());
            self.sub.start(K::writeback_inodes(wbc, true));
        }
    }
    fn advanced(&mut self, k: &mut K, cx: &Ctx, done: u64) {
        self.sub.advanced(k, cx, done);
    }
}

/// pdflush's `background_writeout(min_pages)`, stock or as seed 001's patch has it.
pub fn background_writeout<K: MmK>(k: &K, min_pages: u64) -> Box<dyn Path<K>> {
    let patched = k.writeback.balance_hands_to_pdflush();
    let min_pages = if patched && min_pages == 0 {
        // The patch: min_pages = nr_dirty + nr_unstable when called with 0.
        get_dirty_limits(k).nr_reclaimable
    } else {
        min_pages
    };
    passes(Background {
        patched,
        min_pages: min_pages as i64,
    })
}

struct Background {
    patched: bool,
    min_pages: i64,
}

impl PassJob for Background {
    fn name(&self) -> &'static str {
        "background_writeout"
    }
    fn older_than(&self) -> Option<Nanos> {
        None
    }
    fn more<K: MmK>(&mut self, k: &K) -> bool {
        let l = get_dirty_limits(k);
        !(l.nr_reclaimable < l.background && self.min_pages <= 0)
    }
    fn after(&mut self, wbc: Wbc) -> After {
        self.min_pages -= (MAX_WRITEBACK_PAGES - wbc.nr_to_write) as i64;
        let short = wbc.nr_to_write > 0;
        match (
            self.patched,
            short || wbc.encountered_congestion,
            short || wbc.pages_skipped > 0,
        ) {
            // The patch: wait whenever short or congested, and keep on.
            (true, true, _) => After::Wait,
            (true, false, _) => After::Go,
            // Stock: wrote less than asked without meeting congestion: nothing left.
            (false, _, true) if !wbc.encountered_congestion => After::Stop,
            (false, _, true) => After::Wait,
            (false, _, false) => After::Go,
        }
    }
    fn finish<K: MmK>(&mut self, k: &mut K) {
        if self.patched {
            k.writeback.pwb_mut().dirty_exceeded = false;
        }
    }
}

/// pdflush's `wb_kupdate`: the inodes dirtied more than 30 s ago, 1024 pages a pass.
pub fn wb_kupdate<K: MmK>(k: &K, now: Nanos) -> Box<dyn Path<K>> {
    let l = get_dirty_limits(k);
    passes(Kupdate {
        oldest: now.saturating_sub(EXPIRE_NS),
        nr_to_write: (l.nr_reclaimable + k.nr_dirty_inodes()) as i64,
    })
}

struct Kupdate {
    oldest: Nanos,
    nr_to_write: i64,
}

impl PassJob for Kupdate {
    fn name(&self) -> &'static str {
        "wb_kupdate"
    }
    fn older_than(&self) -> Option<Nanos> {
        Some(self.oldest)
    }
    fn more<K: MmK>(&mut self, _k: &K) -> bool {
        self.nr_to_write > 0
    }
    fn after(&mut self, wbc: Wbc) -> After {
        self.nr_to_write -= (MAX_WRITEBACK_PAGES - wbc.nr_to_write) as i64;
        match (wbc.nr_to_write > 0, wbc.encountered_congestion) {
            // All the old data is written.
            (true, false) => After::Stop,
            (true, true) => After::Wait,
            (false, _) => After::Go,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::tests::kstate;
    use crate::fs::state::FsState;

    fn with(dirty_ratio: u32) -> FsState {
        let mut k = kstate();
        let t = DirtyTunables {
            dirty_ratio,
            dirty_background_ratio: 10,
        };
        k.writeback =
            crate::mm::writeback::DirtyWriteback::pdflush(PageWriteback::new(t, k.buffer_pages(), 250), false);
        k
    }

    #[test]
    fn the_ratelimit_is_set_from_memory_and_drops_to_eight_when_exceeded() {
        // set_ratelimit(): total_pages / 32, at most 4 MiB of pages.
        let k = with(40);
        assert_eq!(k.writeback.pwb().ratelimit_pages, (k.buffer_pages() / 32).min(1024));
        let mut p = PageWriteback::new(k.writeback.pwb().tunables, 1 << 20, 250);
        assert_eq!(p.ratelimit_pages, 1024);
        assert!(!p.dirtied(1023));
        assert!(p.dirtied(1));
        p.dirty_exceeded = true;
        assert_eq!(p.ratelimit_headroom(), 8);
        assert!(!p.dirtied(7) && p.dirtied(1));
    }

    #[test]
    fn get_dirty_limits_caps_the_ratio_at_half_the_unmapped_memory() {
        let mut k = with(60);
        let total = k.buffer_pages();
        k.mm.anon = total / 10;
        let l = get_dirty_limits(&k);
        // unmapped_ratio 90: the patch's 60 % becomes 45 %.
        assert_eq!(l.dirty, 45 * total / 100);
        assert_eq!(l.background, 10 * total / 100);
        k.writeback.pwb_mut().tunables.dirty_ratio = 40;
        assert_eq!(get_dirty_limits(&k).dirty, 40 * total / 100);
        // Background at or above the ratio is halved.
        k.writeback.pwb_mut().tunables.dirty_background_ratio = 50;
        assert_eq!(get_dirty_limits(&k).background, 20 * total / 100);
    }

    #[test]
    fn a_congestion_wait_ends_at_a_tick_or_when_congestion_clears() {
        let mut k = with(40);
        let cx = Ctx { now: 1_000_000, pid: 5 };
        let mut p = blk_congestion_wait(100_000_000);
        let Step::Block(chan) = p.next(&mut k, &cx) else {
            panic!("it sleeps")
        };
        // HZ 250: 100 ms from 1 ms is 101 ms, a tick boundary at 104 ms.
        assert!(k.out.contains(&KReq::WakeAt { at: 104_000_000, chan }));
        let mut out = Vec::new();
        k.writeback.pwb_mut().congestion_cleared(&mut out);
        assert_eq!(out, [KReq::Wake(chan)]);
        assert!(matches!(p.next(&mut k, &cx), Step::Done));
    }

    #[test]
    fn pdflush_operation_fails_when_every_thread_is_busy() {
        let mut k = with(40);
        for pid in [20, 21, 22] {
            k.writeback.pwb_mut().pool.register(pid);
        }
        assert_eq!(k.writeback.pwb_mut().pool.threads(), 2);
        // Both live threads go idle; the third sleeps outside the pool.
        for pid in [20, 21, 22] {
            let _ = crate::mm::pdflush::next(&mut k, pid, 1, false);
        }
        assert!(pdflush_operation(&mut k, Job::Background { min_pages: 0 }, 2));
        assert!(pdflush_operation(&mut k, Job::Kupdate, 2));
        assert!(!pdflush_operation(&mut k, Job::Background { min_pages: 0 }, 2));
        assert_eq!(k.writeback.pwb_mut().stats.pdflush_busy, 1);
        // The most recently idle thread took the first job.
        assert_eq!(
            crate::mm::pdflush::next(&mut k, 21, 3, false),
            crate::mm::pdflush::Next::Run(Job::Background { min_pages: 0 })
        );
    }
}
