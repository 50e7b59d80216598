//! The pdflush thread pool (mm/pdflush.c, 2.6.x; research notes writeback-2.6.17.md item 3).
//!
//! Idle threads wait on `pdflush_list`, most recently idle at its head. `pdflush_operation(fn,
//! arg)` hands the job to the head thread and wakes it, or fails (-1) when every thread is
//! busy. After a job, a thread creates another (at most 8) if the pool has had no idle thread
//! for a second, or exits (at least 2 stay) if the longest sleeper has slept more than a
//! second. The model spawns all 8 at boot: those not yet created (or exited) sleep outside
//! the pool until `start_one_pdflush_thread` wakes one (its `kthread_run` is not costed).
//!
//! `wb_timer` (every `dirty_writeback_interval`) hands `wb_kupdate` to the pool; when every
//! thread is busy it retries a second later. The model runs the timer in the pool's idle
//! threads: each sleeps at most until the timer is due, and the first to wake then takes
//! the job.

use crate::mm::page_writeback::WRITEBACK_INTERVAL_NS;
use crate::mm::state::MmK;
use latlab_core::Nanos;
use std::collections::BTreeMap;

/// MIN_PDFLUSH_THREADS, MAX_PDFLUSH_THREADS.
pub const MIN_THREADS: usize = 2;
pub const MAX_THREADS: usize = 8;
/// One second: the pool grows after this long without an idle thread, and a thread idle
/// this long may exit.
const ONE_SECOND: Nanos = 1_000_000_000;

/// A job `pdflush_operation` hands out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Job {
    /// `background_writeout(min_pages)`.
    Background { min_pages: u64 },
    /// `wb_kupdate(0)`.
    Kupdate,
}

/// What a pdflush thread does next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    Run(Job),
    /// Sleep, until the timeout if one is given.
    Sleep(Option<Nanos>),
}

#[derive(Default)]
pub struct Pool {
    /// Idle threads with when each went to sleep; the head (most recent) last.
    idle: Vec<(u32, Nanos)>,
    /// Threads that exist (created, not exited).
    live: Vec<u32>,
    /// Spawned but not created, or exited: outside the pool.
    dormant: Vec<u32>,
    jobs: BTreeMap<u32, Job>,
    /// When the idle list last became empty.
    last_empty: Nanos,
    /// When `wb_timer` is due.
    pub next_kupdate: Nanos,
}

impl Pool {
    /// Thread `pid` was spawned at boot: the first two are created (`pdflush_init`).
    pub fn register(&mut self, pid: u32) {
        if self.live.len() < MIN_THREADS {
            self.live.push(pid);
        } else {
            self.dormant.push(pid);
        }
        if self.next_kupdate == 0 {
            self.next_kupdate = WRITEBACK_INTERVAL_NS;
        }
    }

    /// Threads created and not exited.
    pub fn threads(&self) -> usize {
        self.live.len()
    }

    fn is_idle(&self, pid: u32) -> bool {
        self.idle.iter().any(|&(p, _)| p == pid)
    }
}

/// `pdflush_operation(job)`: false (the kernel's -1) when every thread is busy.
pub fn pdflush_operation<K: MmK>(k: &mut K, job: Job, now: Nanos) -> bool {
    let pool = &mut k.writeback.pwb_mut().pool;
    let Some((pid, _)) = pool.idle.pop() else {
        k.writeback.pwb_mut().stats.pdflush_busy += 1;
        return false;
    };
    if pool.idle.is_empty() {
        pool.last_empty = now;
    }
    pool.jobs.insert(pid, job);
    k.wake_kthread(pid);
    true
}

/// pdflush thread `pid` is asking for work at `now` (at start-up, woken, or after a job).
pub fn next<K: MmK>(k: &mut K, pid: u32, now: Nanos, after_job: bool) -> Next {
    let pool = &mut k.writeback.pwb_mut().pool;
    if !pool.live.contains(&pid) {
        // Not created yet (or exited): stays outside the pool until started.
        return Next::Sleep(None);
    }
    if after_job {
        // __pdflush after a job: grow the pool, or let this thread go.
        if pool.idle.is_empty() && now > pool.last_empty + ONE_SECOND && pool.live.len() < MAX_THREADS {
            if let Some(new) = pool.dormant.pop() {
                pool.live.push(new);
                pool.last_empty = now;
                pool.idle.push((new, now));
                k.wake_kthread(new);
                return next(k, pid, now, false);
            }
        } else if pool.live.len() > MIN_THREADS {
            if let Some(&(_, slept)) = pool.idle.first() {
                if now > slept + ONE_SECOND {
                    pool.idle[0].1 = now;
                    pool.live.retain(|&p| p != pid);
                    pool.dormant.push(pid);
                    return Next::Sleep(None);
                }
            }
        }
    }
    if let Some(job) = pool.jobs.remove(&pid) {
        return Next::Run(job);
    }
    if now >= pool.next_kupdate && (pool.is_idle(pid) || after_job || pool.idle.is_empty()) {
        // wb_timer_fn: pdflush_operation(wb_kupdate) takes the head idle thread; this one.
        pool.idle.retain(|&(p, _)| p != pid);
        if pool.idle.is_empty() {
            pool.last_empty = now;
        }
        pool.next_kupdate = now + WRITEBACK_INTERVAL_NS;
        return Next::Run(Job::Kupdate);
    }
    if !pool.is_idle(pid) {
        pool.idle.push((pid, now));
    }
    Next::Sleep(Some(pool.next_kupdate.saturating_sub(now).max(1)))
}
