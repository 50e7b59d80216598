//! Kernel variant: a set of switches, nothing else. Named variants (`2.4.18`,
//! `2.4.18+mini-ll`, ...) are files of these switches (`variants/*.toml`); two variants
//! differ only in the mechanisms the corresponding patch changes.

use crate::kernel::catalog::PointSet;
use latlab_core::Nanos;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Where a woken task can get the CPU from kernel code (kernel-facts.md, "Preemption models").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PreemptModel {
    /// Stock 2.4 / CONFIG_PREEMPT_NONE: need_resched honoured at return to user space and at
    /// explicit schedule() (blocking, and the rescheduling points listed in `points`).
    #[default]
    None,
    /// CONFIG_PREEMPT_VOLUNTARY: as `none`, plus the might_sleep() points that became
    /// cond_resched() (Molnar 2004; mainline since 2.6.13), which the variant lists in `points`.
    Voluntary,
    /// Robert Love's preempt patch / CONFIG_PREEMPT / PREEMPT_DYNAMIC "full": also on IRQ
    /// return to kernel code and on the preempt_enable() (spin_unlock) that brings
    /// preempt_count to 0.
    #[serde(alias = "preempt", alias = "kernel")]
    Full,
    /// PREEMPT_LAZY (6.13+): a fair-class wakeup sets NEED_RESCHED_LAZY, honoured at return
    /// to user space or promoted to NEED_RESCHED at the next tick; an RT wakeup preempts as
    /// `full`.
    Lazy,
}

/// What the kernel's `spinlock_t` is (`locks`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LockFlavour {
    /// Every modelled lock spins with preemption off (every mainline kernel without
    /// PREEMPT_RT).
    #[default]
    Spinning,
    /// CONFIG_PREEMPT_RT (mainline since 6.12): a `spinlock_t` is an rt_mutex with priority
    /// inheritance, and a step holding one stays preemptible; `raw_spinlock_t` still spins
    /// (`kernel::lock::Lock::kind`, `kernel::rtmutex`).
    Sleeping,
}

/// Which scheduler class runs SCHED_OTHER tasks (SCHED_FIFO/RR always above it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SchedClass {
    /// Linux 2.4 `goodness()` with epochs (kernel/sched.c, 2.4.x).
    Goodness24,
    /// Ingo Molnar's O(1) scheduler: active/expired prio arrays with a bitmap, timeslices
    /// by nice level, the sleep-average interactivity bonus (kernel/sched.c, 2.6.11).
    O1,
    /// The Completely Fair Scheduler (kernel/sched_fair.c, 2.6.35/2.6.36), tunables in `[cfs]`.
    Cfs,
    /// EEVDF (kernel/sched/fair.c, 6.6+), tunables in `[eevdf]`.
    Eevdf,
}

/// Where timer expiries come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TimerSubsystem {
    /// The 2.4 timer list (kernel/timer.c): every timeout expires at the next tick after it
    /// is due, run from the timer interrupt.
    Jiffies,
    /// hrtimers (kernel/hrtimer.c, 2.6.16+ with CONFIG_HIGH_RES_TIMERS): each CPU's timers
    /// in a queue by expiry, the local APIC programmed for the first (one-shot); from 2.6.28
    /// a sleeper's timer has a range, its task's timer slack (`Variant::timer_slack_ns`).
    Hrtimer,
}

/// The timer slack every task starts with from 2.6.28 on (Arjan van de Ven's range
/// hrtimers): init_task's `.timer_slack_ns = 50000, /* 50 usec default slack */`
/// (init/init_task.c; `INIT_TASK` in include/linux/init_task.h before it, both read in the
/// index), inherited at fork (kernel/fork.c `copy_process`).
pub const DEFAULT_TIMER_SLACK_NS: Nanos = 50_000;

/// The first kernel with timer slack (hrtimer ranges, `timer_slack_ns`, PR_SET_TIMERSLACK).
const TIMER_SLACK_SINCE: (u32, u32, u32) = (2, 6, 28);

/// Dirty-data writeback (`mm::writeback`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Writeback {
    /// 2.4's bdflush (woken by balance_dirty) and kupdated (every 5 s), fs/buffer.c.
    #[serde(rename = "bdflush-2.4")]
    Bdflush24,
    /// 2.6.17's page-based writeback (mm/page-writeback.c, fs/fs-writeback.c, mm/pdflush.c):
    /// a writer over `dirty_ratio` runs `balance_dirty_pages()` itself; a pool of pdflush
    /// threads runs `background_writeout` and `wb_kupdate`.
    #[serde(rename = "pdflush-2.6.17")]
    Pdflush2617,
    /// 2.6.17 with seed 001's patch (Ananiev, June 2006): `balance_dirty_pages()` only hands
    /// the work to pdflush, and waits (20 ms) only while pdflush is writing and the dirty
    /// pages are over `dirty_ratio`; `background_writeout` keeps going while congested.
    #[serde(rename = "pdflush-balance")]
    PdflushBalance,
    /// 3.2's IO-less `balance_dirty_pages()` (Fengguang Wu): the writer never writes, it
    /// sleeps a pause of at most 200 ms set by position control; the per-device flusher
    /// thread writes.
    #[serde(rename = "io-less-3.2")]
    IoLess32,
}

impl Writeback {
    /// The `vm.dirty_*` sysctls belong to page-based writeback (2.6+): 2.4's bdflush has its
    /// own `bdf_prm`.
    fn page_based(self) -> bool {
        self != Writeback::Bdflush24
    }
}

/// The block layer (`block`; [`crate::dev::disk`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Block {
    /// 2.4's IDE request queue (drivers/block/ll_rw_blk.c): a FIFO of requests. The default
    /// with `bdflush-2.4` writeback.
    #[serde(rename = "ide-2.4")]
    Ide24,
    /// 2.6.17's request queue (block/ll_rw_blk.c): back merges, per-direction request pools,
    /// congestion, batching, and the elevator `noop` or `anticipatory`. The default with
    /// page-based writeback.
    #[serde(rename = "queue-2.6")]
    Queue26,
    /// 6.x's multi-queue block layer (block/blk-mq.c): tags shared by reads and writes, no
    /// congestion, the scheduler `none` or `mq-deadline` ([`crate::dev::blk_mq`]).
    #[serde(rename = "blk-mq")]
    BlkMq,
}

/// The I/O scheduler (`elevator=`, 6.x's `queue/scheduler`): 2.6's queue takes `noop` or
/// `anticipatory`, blk-mq `none` or `mq-deadline`; 2.4's queue is the model's FIFO and
/// takes only the default.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Elevator {
    /// block/noop-iosched.c: submission order, back merges.
    #[default]
    Noop,
    /// block/as-iosched.c, 2.6.17's default: reads before queued writes in batches, and
    /// anticipation of a reader's next read ([`crate::dev::as_iosched`]).
    Anticipatory,
    /// blk-mq without a scheduler: submission order, `nr_requests` = the device's queue
    /// depth.
    None,
    /// block/mq-deadline.c, 6.x's default for a single-queue rotational disk
    /// (`elevator_get_default`): read and write FIFOs with deadlines, sector-order batches.
    MqDeadline,
}

impl Elevator {
    /// The name a variant file gives it.
    pub fn name(self) -> &'static str {
        match self {
            Elevator::Noop => "noop",
            Elevator::Anticipatory => "anticipatory",
            Elevator::None => "none",
            Elevator::MqDeadline => "mq-deadline",
        }
    }
}

/// The `vm.dirty_*` sysctls of page-based writeback (mm/page-writeback.c), percent of the
/// pages `get_dirty_limits()` counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DirtyTunables {
    /// `vm_dirty_ratio`: a writer over it throttles itself.
    pub dirty_ratio: u32,
    /// `dirty_background_ratio`: over it, background writeback starts.
    pub dirty_background_ratio: u32,
}

/// The journal layer under ext3 (fs/jbd): what sets kjournald's context.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Journal {
    /// 2.4's jbd: kjournald calls `lock_kernel()` before `daemonize()` and never unlocks
    /// it, so every commit runs under the big kernel lock (fs/jbd/journal.c, 2.4.18).
    #[default]
    #[serde(rename = "jbd-2.4")]
    Jbd24,
    /// 2.6's jbd (and jbd2 after it): kjournald takes no big kernel lock; its loop runs
    /// under `j_state_lock`, dropped around `journal_commit_transaction()` (fs/jbd/journal.c
    /// of 2.6; read in the index, id 31722133).
    #[serde(rename = "jbd-2.6")]
    Jbd26,
    /// 6.18's jbd2 under ext4 (`fs = "ext4-6.18"`): ordered data by inode, not by buffer.
    /// The committing transaction keeps a list of `jbd2_inode`s, and
    /// `journal_submit_data_buffers` (fs/jbd2/commit.c) holds `j_list_lock` only for its
    /// list steps, dropping it across each inode's data submission
    /// (`ext4_journal_submit_inode_data_buffers`); `journal_finish_inode_data_buffers`
    /// waits for that data the same way ([`crate::fs::jbd2`]).
    #[serde(rename = "jbd2-6.x")]
    Jbd2,
}

impl Journal {
    /// Does kjournald commit under the big kernel lock?
    pub(crate) fn kjournald_holds_bkl(self) -> bool {
        self == Journal::Jbd24
    }
    /// Does the journal order data by inode (jbd2's `t_inode_list`) rather than by buffer
    /// (jbd's `t_sync_datalist`)?
    pub(crate) fn orders_by_inode(self) -> bool {
        self == Journal::Jbd2
    }
}

/// The file system the model's files live on, and with it the page cache's unit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Fs {
    /// ext3 in ordered mode over 4 KiB pages, one buffer_head a page (fs/ext3 of 2.4 and
    /// 2.6; `crate::fs::ext3`).
    #[default]
    #[serde(rename = "ext3")]
    Ext3,
    /// 6.18's ext4 in its default mount (data=ordered, delalloc, dioread_nolock) over a page
    /// cache of large folios (ext4 caches regular files in folios of the write's size since
    /// 6.16): `crate::fs::ext4`. Needs `journal = "jbd2-6.x"`.
    #[serde(rename = "ext4-6.18")]
    Ext4,
}

/// Page reclaim: how the VM finds pages to free and anonymous pages to swap out.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Reclaim {
    /// 2.4.17/2.4.18 mm/vmscan.c: `shrink_cache` over the page LRU, `swap_out` walking each
    /// address space's page tables (the virtual scan), kswapd (`mm::vmscan`).
    #[default]
    #[serde(rename = "vmscan-2.4")]
    Vmscan24,
    /// 2.6.9 mm/vmscan.c with object-based reverse mapping: `shrink_zone` ->
    /// `refill_inactive_zone` / `shrink_cache` -> `shrink_list`, which gives an anonymous
    /// page its swap slot (`add_to_swap` -> `get_swap_page`) and unmaps it through rmap;
    /// kswapd0's `balance_pgdat`; swap-in by `do_swap_page` (`mm::vmscan26`).
    #[serde(rename = "rmap-2.6.9")]
    Rmap269,
    /// 2.6.9's reclaim with 2.6.17's handling of dirty page-cache pages (mm/vmscan.c of
    /// 2.6.17/2.6.18): `shrink_page_list` skips PageWriteback pages and hands a dirty page to
    /// `pageout()` -> `->writepage` when `may_write_to_queue()` allows (kswapd, the writer
    /// on its own queue, or an uncongested queue); `try_to_free_pages` wakes pdflush and
    /// naps in `blk_congestion_wait` (`mm::vmscan26`); 2.6.17's zone watermarks
    /// (`mm::watermarks_2617`). Needs page-based writeback. 2.6.17's swap token (mm/thrash.c,
    /// ignored at priority 0 since Nov 2004) is not modelled here: seed 001's workloads never
    /// fault a page in from swap.
    #[serde(rename = "rmap-2.6.17")]
    Rmap2617,
}

impl Reclaim {
    /// 2.6's reclaim (rmap, `shrink_zone`, kswapd0), either generation.
    fn rmap(self) -> bool {
        self != Reclaim::Vmscan24
    }
}

/// CFS tunables (kernel/sched_fair.c of the tree the variant follows), ns unless stated.
/// Scaled for one CPU: `1 + ilog2(1)` = 1 (SCHED_TUNABLESCALING_LOG).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CfsTunables {
    /// `sysctl_sched_latency`: the period in which each runnable task runs once.
    pub latency_ns: Nanos,
    /// `sysctl_sched_min_granularity`: the shortest slice; with seed 004's patch, the floor
    /// of `__sched_gran()`.
    pub min_granularity_ns: Nanos,
    /// `sysctl_sched_wakeup_granularity`: how far (in the wakee's virtual time) a woken
    /// task must be left of the running one to preempt it.
    pub wakeup_granularity_ns: Nanos,
    /// `sched_nr_latency`: above this many runnable tasks the period stretches
    /// (unpatched), or the granularity shrinks (seed 004's patch).
    pub nr_latency: u64,
    /// Seed 004's patch: `sysctl_sched_std_granularity` and `sched_nr_latency_max`, with
    /// `__sched_gran()` in `check_preempt_tick`. Absent: the unpatched tree.
    #[serde(default)]
    pub gran_patch: Option<GranPatch>,
    /// `sysctl_sched_child_runs_first`.
    #[serde(default)]
    pub child_runs_first: bool,
}

/// What seed 004's patch adds (its diff, kernel/sched_fair.c).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GranPatch {
    /// `sysctl_sched_std_granularity`, ns: the granularity with `sched_nr_latency` or fewer
    /// tasks.
    pub std_granularity_ns: Nanos,
    /// `sched_nr_latency_max`: above it the period stretches as `min_granularity * nr`.
    pub nr_latency_max: u64,
}

/// EEVDF tunables and features (kernel/sched/fair.c, kernel/sched/features.h of 6.6+).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EevdfTunables {
    /// `sysctl_sched_base_slice`, ns: the request size of every task.
    pub base_slice_ns: Nanos,
    /// RUN_TO_PARITY: no wakeup preemption until the running task has reached its 0-lag
    /// point or used its slice.
    pub run_to_parity: bool,
    /// PLACE_LAG: a waking task keeps the lag it had when it went to sleep.
    pub place_lag: bool,
}

/// A kernel variant: a name for each subsystem's implementation, and the switches the
/// patches it stands for change. Nothing else decides which mechanism runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Variant {
    /// Name (`2.4.18+mini-ll`).
    pub name: String,
    /// What the variant is, with the patch it stands for.
    pub description: String,
    /// Kernel version the variant is based on (`2.4.18-pre1`).
    pub base: String,
    /// Preemption model.
    pub preempt: PreemptModel,
    /// Rescheduling points and lock-breaks present in this kernel, by kernel function name
    /// (see `kernel::catalog::POINTS` for the list and what each one does); an unknown name
    /// is refused when the variant is read.
    pub points: PointSet,
    /// Timer interrupt rate, Hz.
    pub hz: u32,
    /// Scheduler class.
    pub sched: SchedClass,
    /// Timer subsystem.
    pub timer: TimerSubsystem,
    /// Writeback implementation.
    pub writeback: Writeback,
    /// The dirty ratios: required with page-based writeback, refused with `bdflush-2.4`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dirty: Option<DirtyTunables>,
    /// Swap-slot allocator (a `latlab_swap` allocator name).
    pub swap_allocator: String,
    /// CFS tunables: required with `sched = "cfs"`, refused otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cfs: Option<CfsTunables>,
    /// EEVDF tunables: required with `sched = "eevdf"`, refused otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eevdf: Option<EevdfTunables>,
    /// The block layer (default: `ide-2.4` with `bdflush-2.4` writeback, `queue-2.6` with
    /// page-based writeback); [`Variant::block`] gives it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block: Option<Block>,
    /// The block layer's I/O scheduler (default `noop`): `noop` or `anticipatory` on
    /// `queue-2.6`, `none` or `mq-deadline` (named) on `blk-mq`.
    #[serde(default, skip_serializing_if = "is_default")]
    pub elevator: Elevator,
    /// Page reclaim (default `vmscan-2.4`, the model's reclaim until seed 003).
    #[serde(default, skip_serializing_if = "is_default")]
    pub reclaim: Reclaim,
    /// ext3's journal layer (default `jbd-2.4`), or ext4's (`jbd2-6.x`).
    #[serde(default, skip_serializing_if = "is_default")]
    pub journal: Journal,
    /// The file system (default `ext3`; `ext4-6.18` with its large folios on a 6.16+
    /// kernel).
    #[serde(default, skip_serializing_if = "is_default")]
    pub fs: Fs,
    /// Ingo Molnar's voluntary-preempt patch applied, by release (`R6`, `S0`; seed 003):
    /// what makes the switches below exist on a 2.6.8-2.6.10 (o1) kernel. Its tracer's
    /// `/proc/latency_trace` layout follows the release (v1.0.6 in the R series, v1.0.7
    /// from S0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vp_patch: Option<String>,
    /// VP: the voluntary-preempt patch's `voluntary_preemption`: the `might_sleep()` points
    /// become rescheduling points (catalog origin `Voluntary`). With `preempt = "voluntary"`
    /// (mainline's CONFIG_PREEMPT_VOLUNTARY, 2.6.13+) they are on too.
    #[serde(default, skip_serializing_if = "is_default")]
    pub voluntary: bool,
    /// SP: the patch's `softirq_preemption`: every softirq runs in the `ksoftirqd/0` thread
    /// (SCHED_FIFO 24), never on the way out of an interrupt (`kernel/irq_thread.rs` says
    /// which kernel's threads the model follows).
    #[serde(default, skip_serializing_if = "is_default")]
    pub softirq_threads: bool,
    /// HP: the patch's `hardirq_preemption` (mainline's `threadirqs`): a device interrupt's
    /// handler runs in its `irq/<n>-<name>` thread (SCHED_FIFO 50 unless
    /// `irq_thread_priority` says otherwise), the interrupt itself only acknowledging it and
    /// waking the thread. The timer's (and the hrtimer expiry's) stay in hard context; under
    /// the voluntary-preempt patch the RTC's too (SA_NODELAY).
    #[serde(default, skip_serializing_if = "is_default")]
    pub hardirq_threads: bool,
    /// The SCHED_FIFO priority (1-99) of an interrupt thread, by line (`ide0`, `rtc0`), as
    /// `chrt -f -p` set it; needs `hardirq_threads`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub irq_thread_priority: BTreeMap<String, u32>,
    /// RT throttling (`sched_rt_runtime_us` 950000 of `sched_rt_period_us` 1000000, 2.6.25+;
    /// on 6.x kernels the fair deadline server: `sched/rt_bandwidth.rs`). Default: on for
    /// `cfs` and `eevdf` kernels, absent (refused) on `o1` and `goodness24`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rt_throttling: Option<bool>,
    /// What `spinlock_t` is: `spinning` (default) or `sleeping` (PREEMPT_RT's rt_mutex-based
    /// locks). Sleeping locks need `hardirq_threads` (PREEMPT_RT forces threaded
    /// interrupts: a handler may take a sleeping lock only in a thread) and kernel
    /// preemption (`full` or `lazy`), on a `cfs` or `eevdf` kernel.
    #[serde(default, skip_serializing_if = "is_default")]
    pub locks: LockFlavour,
    /// The timer slack every task starts with and inherits (`init_task.timer_slack_ns`), ns:
    /// a SCHED_OTHER task's `nanosleep`/`clock_nanosleep` timer may fire that much after the
    /// time asked (`hrtimer_nanosleep`: `hrtimer_set_expires_range_ns(&t.timer, rqtp,
    /// current->timer_slack_ns)`, kernel/time/hrtimer.c); RT tasks get none. Default: the
    /// kernel's, [`DEFAULT_TIMER_SLACK_NS`] on an `hrtimer` kernel from 2.6.28 (by `base`),
    /// none before. Refused on a `jiffies` kernel or one before 2.6.28.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timer_slack_ns: Option<Nanos>,
}

fn is_default<T: Default + PartialEq>(v: &T) -> bool {
    *v == T::default()
}

impl Variant {
    /// Check the values serde cannot; returns the offending field and why.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        if !(10..=10_000).contains(&self.hz) {
            return Err(("hz", format!("must be 10..=10000, got {}", self.hz)));
        }
        if !latlab_swap::ALLOCATORS.contains(&self.swap_allocator.as_str()) {
            return Err((
                "swap_allocator",
                format!(
                    "unknown swap-slot allocator `{}`; valid: {}",
                    self.swap_allocator,
                    latlab_swap::ALLOCATORS.join(", ")
                ),
            ));
        }
        self.validate_combination()?;
        self.validate_vp()?;
        self.validate_timer_slack()?;
        if let Some(c) = &self.cfs {
            if c.latency_ns == 0 || c.min_granularity_ns == 0 || c.nr_latency == 0 {
                return Err((
                    "cfs",
                    "latency_ns, min_granularity_ns and nr_latency must be positive".into(),
                ));
            }
            // Ten seconds and a million tasks: far beyond any tunable a kernel shipped, and
            // `min_granularity * nr_running` stays far from overflow.
            if [c.latency_ns, c.min_granularity_ns, c.wakeup_granularity_ns]
                .iter()
                .any(|&ns| ns > 10_000_000_000)
                || c.nr_latency > 1_000_000
            {
                return Err((
                    "cfs",
                    "latency_ns, min_granularity_ns and wakeup_granularity_ns must be at most 10 s, nr_latency at most 1000000".into(),
                ));
            }
            if let Some(g) = &c.gran_patch {
                if g.std_granularity_ns == 0
                    || g.std_granularity_ns > 10_000_000_000
                    || g.nr_latency_max < c.nr_latency
                    || g.nr_latency_max > 1_000_000
                {
                    return Err((
                        "cfs.gran_patch",
                        "std_granularity_ns must be 1 ns ..= 10 s and nr_latency_max nr_latency ..= 1000000".into(),
                    ));
                }
            }
        }
        if let Some(d) = &self.dirty {
            for (field, v) in [
                ("dirty.dirty_ratio", d.dirty_ratio),
                ("dirty.dirty_background_ratio", d.dirty_background_ratio),
            ] {
                if v > 100 {
                    return Err((field, format!("a percentage of memory: must be 0..=100, got {v}")));
                }
            }
        }
        if let Some(e) = &self.eevdf {
            if !(1_000..=1_000_000_000).contains(&e.base_slice_ns) {
                return Err((
                    "eevdf.base_slice_ns",
                    format!("must be 1 us ..= 1 s, got {} ns", e.base_slice_ns),
                ));
            }
        }
        Ok(())
    }

    /// The kernel version `base` names (`2.6.17-rc` is 2.6.17, `3.2` is 3.2.0); `None` when
    /// it names none.
    fn kernel_version(&self) -> Option<(u32, u32, u32)> {
        let head = self.base.split(|c: char| !(c.is_ascii_digit() || c == '.')).next()?;
        let mut n = head.split('.').map(|p| p.parse::<u32>().ok());
        let (major, minor) = (n.next()??, n.next()??);
        Some((major, minor, n.next().flatten().unwrap_or(0)))
    }

    /// An explicit `timer_slack_ns` needs a kernel that has timer slack.
    fn validate_timer_slack(&self) -> Result<(), (&'static str, String)> {
        let Some(ns) = self.timer_slack_ns else {
            return Ok(());
        };
        if self.timer != TimerSubsystem::Hrtimer {
            return Err((
                "timer_slack_ns",
                "timer slack is a range on an hrtimer's expiry (2.6.28+); a `jiffies` kernel's timers fire from the tick (timer = \"hrtimer\" to have it)".into(),
            ));
        }
        match self.kernel_version() {
            None => {
                return Err((
                    "timer_slack_ns",
                    format!(
                        "`base` = \"{}\" names no kernel version, and timer slack arrived in 2.6.28: give base as a version (\"6.18\")",
                        self.base
                    ),
                ))
            }
            Some(v) if v < TIMER_SLACK_SINCE => {
                return Err((
                    "timer_slack_ns",
                    format!("timer slack arrived in 2.6.28; a {} kernel has none", self.base),
                ))
            }
            Some(_) => {}
        }
        if ns > 1_000_000_000 {
            return Err(("timer_slack_ns", format!("must be at most 1 s, got {ns} ns")));
        }
        Ok(())
    }

    /// The timer slack a SCHED_OTHER task sleeps with on this kernel (`timer_slack_ns`, or
    /// the kernel's default: 50 us on an `hrtimer` kernel from 2.6.28); `None` before, on
    /// `jiffies` timers, or when `base` names no version.
    pub fn timer_slack(&self) -> Option<Nanos> {
        if self.timer != TimerSubsystem::Hrtimer {
            return None;
        }
        self.timer_slack_ns
            .or_else(|| (self.kernel_version()? >= TIMER_SLACK_SINCE).then_some(DEFAULT_TIMER_SLACK_NS))
    }

    /// The block layer this kernel runs: `block`, or by default the one that goes with its
    /// writeback (2.4's IDE queue under bdflush, 2.6's queue under page-based writeback).
    pub fn block(&self) -> Block {
        self.block.unwrap_or(if self.writeback.page_based() {
            Block::Queue26
        } else {
            Block::Ide24
        })
    }

    /// Refuse a block layer and elevator no kernel (or no model path) pairs with the rest.
    fn validate_block(&self, gen: &str) -> Result<(), (&'static str, String)> {
        use SchedClass::*;
        match (self.block(), self.writeback.page_based(), self.sched) {
            (Block::Ide24, true, _) => {
                return Err((
                    "block",
                    "page-based writeback runs on queue-2.6 or blk-mq in the model, not 2.4's IDE queue".into(),
                ))
            }
            (Block::Queue26 | Block::BlkMq, false, _) => {
                return Err((
                    "block",
                    "2.4's bdflush writeback runs on 2.4's IDE queue (ide-2.4)".into(),
                ))
            }
            (Block::BlkMq, _, Goodness24 | O1) => {
                return Err(("block", format!("blk-mq arrived in 3.13; a {gen} kernel never had it")))
            }
            (Block::Queue26, _, Eevdf) => {
                return Err((
                    "block",
                    format!("the single-queue block layer left in 5.0; a {gen} kernel has blk-mq only"),
                ))
            }
            _ => {}
        }
        let ok: &[Elevator] = match self.block() {
            Block::Ide24 => &[Elevator::Noop],
            Block::Queue26 => &[Elevator::Noop, Elevator::Anticipatory],
            Block::BlkMq => &[Elevator::None, Elevator::MqDeadline],
        };
        if ok.contains(&self.elevator) {
            return Ok(());
        }
        let why = match self.block() {
            Block::Ide24 => "2.4's IDE queue is a FIFO and has no I/O scheduler to choose".to_string(),
            Block::Queue26 => "2.6's queue takes `noop` or `anticipatory`".to_string(),
            Block::BlkMq => "blk-mq takes `none` or `mq-deadline` (name it: 6.x's default for a rotational single-queue disk is mq-deadline)".to_string(),
        };
        Err(("elevator", format!("{why}; got \"{}\"", self.elevator.name())))
    }

    /// Refuse combinations no kernel had; returns the offending field and why.
    fn validate_combination(&self) -> Result<(), (&'static str, String)> {
        use SchedClass::*;
        let gen = match self.sched {
            Goodness24 => "2.4 (goodness24)",
            O1 => "2.6.0-2.6.22 (o1)",
            Cfs => "2.6.23-6.5 (cfs)",
            Eevdf => "6.6+ (eevdf)",
        };
        match (self.preempt, self.sched) {
            (PreemptModel::Lazy, Goodness24 | O1 | Cfs) => {
                return Err((
                    "preempt",
                    format!("`lazy` preemption arrived in 6.13, with EEVDF; a {gen} kernel never had it (valid here: none, voluntary, full)"),
                ))
            }
            (PreemptModel::Voluntary, Goodness24) => {
                return Err((
                    "preempt",
                    "`voluntary` preemption (2.6.9+) never ran on a 2.4 scheduler (valid with goodness24: none, full)".into(),
                ))
            }
            _ => {}
        }
        self.validate_block(gen)?;
        match (self.writeback, self.sched, &self.dirty) {
            (w, _, None) if w.page_based() => {
                return Err(("dirty", "page-based writeback needs a [dirty] table (dirty_ratio, dirty_background_ratio)".into()))
            }
            (Writeback::Bdflush24, _, Some(_)) => {
                return Err(("dirty", "2.4's bdflush has no vm.dirty_* sysctls: a [dirty] table goes with page-based writeback only".into()))
            }
            (Writeback::Pdflush2617 | Writeback::PdflushBalance, Goodness24 | Eevdf, _) => {
                return Err((
                    "writeback",
                    format!("pdflush writeback is 2.6.0-2.6.31's; a {gen} kernel never had it (valid here: bdflush-2.4 on 2.4, io-less-3.2 on 3.2+)"),
                ))
            }
            (Writeback::IoLess32, Goodness24 | O1, _) => {
                return Err((
                    "writeback",
                    format!("IO-less balance_dirty_pages arrived in 3.2; a {gen} kernel never had it"),
                ))
            }
            _ => {}
        }
        self.validate_fs(gen)?;
        if self.timer == TimerSubsystem::Hrtimer && self.sched == Goodness24 {
            return Err((
                "timer",
                "hrtimers arrived in 2.6.16; a 2.4 (goodness24) kernel has only `jiffies`".into(),
            ));
        }
        match (self.sched, &self.cfs, &self.eevdf) {
            (Cfs, None, _) => Err(("cfs", "sched = \"cfs\" needs a [cfs] table of tunables".into())),
            (Eevdf, _, None) => Err(("eevdf", "sched = \"eevdf\" needs an [eevdf] table of tunables".into())),
            (s, Some(_), _) if s != Cfs => Err((
                "cfs",
                format!("a [cfs] table only goes with sched = \"cfs\", not a {gen} kernel"),
            )),
            (s, _, Some(_)) if s != Eevdf => Err((
                "eevdf",
                format!("an [eevdf] table only goes with sched = \"eevdf\", not a {gen} kernel"),
            )),
            _ => Ok(()),
        }
    }

    /// Refuse a file system or journal the kernel never had, or a pair that never went
    /// together.
    fn validate_fs(&self, gen: &str) -> Result<(), (&'static str, String)> {
        use SchedClass::*;
        match (self.fs, self.journal, self.sched) {
            (Fs::Ext4, _, s) if s != Eevdf => Err((
                "fs",
                format!("ext4-6.18 (large folios for regular files, 6.16+) runs on a 6.x kernel; a {gen} kernel never had it (valid here: ext3)"),
            )),
            (Fs::Ext4, j, _) if !j.orders_by_inode() => Err((
                "journal",
                "ext4-6.18 journals through jbd2: journal = \"jbd2-6.x\"".into(),
            )),
            (Fs::Ext3, Journal::Jbd2, Goodness24 | O1) => Err((
                "journal",
                format!("jbd2 arrived in 2.6.28 with ext4; a {gen} kernel never had it (valid here: jbd-2.4, jbd-2.6)"),
            )),
            (Fs::Ext3, Journal::Jbd2, _) => Err((
                "journal",
                "jbd2-6.x orders ext4-6.18's data by inode; the model's ext3 files its data on jbd's buffer list: use it with fs = \"ext4-6.18\" (or jbd-2.6)".into(),
            )),
            _ => Ok(()),
        }
    }

    /// The voluntary-preempt patch's switches: VP and SP/HP need a kernel that has them.
    fn validate_vp(&self) -> Result<(), (&'static str, String)> {
        use SchedClass::*;
        if let Some(r) = &self.vp_patch {
            if self.sched != O1 {
                return Err((
                    "vp_patch",
                    "the voluntary-preempt patch (2004) applies to 2.6.8-2.6.10 kernels: sched = \"o1\" only".into(),
                ));
            }
            let known = r.len() >= 2 && r.starts_with(['R', 'S']) && r[1..].chars().all(|c| c.is_ascii_digit());
            if !known {
                return Err((
                    "vp_patch",
                    format!("unknown voluntary-preempt release `{r}`: a release is R<n> or S<n> (R6, S0)"),
                ));
            }
        }
        // A kernel with the patch (o1 era) or a later mainline one (threaded interrupts
        // arrived in 2.6.30, `threadirqs` forced threading in 2.6.39; preempt_rt's softirq
        // threads likewise): CFS and EEVDF kernels may have them.
        let has_threads = self.vp_patch.is_some() || matches!(self.sched, Cfs | Eevdf);
        let gen = match self.sched {
            Goodness24 => "a 2.4 (goodness24) kernel",
            O1 => "an o1 kernel without the voluntary-preempt patch (`vp_patch`)",
            Cfs | Eevdf => "this kernel",
        };
        if self.hardirq_threads && !has_threads {
            return Err((
                "hardirq_threads",
                format!("{gen} has no threaded hard interrupts (they came with the voluntary-preempt patch, mainline 2.6.30+)"),
            ));
        }
        if self.softirq_threads && !has_threads {
            return Err((
                "softirq_threads",
                format!(
                    "{gen} never runs every softirq in a thread (the voluntary-preempt patch's softirq_preemption)"
                ),
            ));
        }
        if self.rt_throttling == Some(true) && !matches!(self.sched, Cfs | Eevdf) {
            return Err((
                "rt_throttling",
                "RT throttling (sched_rt_runtime_us) arrived in 2.6.25 with the CFS scheduler: sched = \"cfs\" or \"eevdf\" only".into(),
            ));
        }
        for (line, &prio) in &self.irq_thread_priority {
            if !self.hardirq_threads {
                return Err((
                    "irq_thread_priority",
                    "sets an interrupt thread's priority, but `hardirq_threads` is off (no handler runs in a thread)"
                        .into(),
                ));
            }
            if !crate::kernel::irq_thread::Line::ALL.iter().any(|l| l.name() == line) {
                return Err((
                    "irq_thread_priority",
                    format!("unknown interrupt line `{line}` (threaded lines: ide0, rtc0)"),
                ));
            }
            if !(1..=99).contains(&prio) {
                return Err((
                    "irq_thread_priority",
                    format!("`{line}`: SCHED_FIFO priority {prio} is outside 1-99"),
                ));
            }
        }
        if self.locks == LockFlavour::Sleeping {
            if !matches!(self.sched, Cfs | Eevdf) {
                return Err((
                    "locks",
                    "sleeping spinlocks (PREEMPT_RT) need a cfs or eevdf kernel (the -rt patch from 2.6.24, mainline 6.12)".into(),
                ));
            }
            if !self.hardirq_threads {
                return Err((
                    "locks",
                    "sleeping spinlocks need `hardirq_threads = true`: PREEMPT_RT forces threaded interrupts, since a handler in hard context may not sleep on a lock".into(),
                ));
            }
            if !matches!(self.preempt, PreemptModel::Full | PreemptModel::Lazy) {
                return Err((
                    "locks",
                    "sleeping spinlocks need kernel preemption: PREEMPT_RT selects PREEMPTION (preempt = \"full\" or \"lazy\")".into(),
                ));
            }
        }
        if self.voluntary && self.vp_patch.is_none() {
            return Err((
                "voluntary",
                "the might_sleep() rescheduling points are the voluntary-preempt patch's (`vp_patch`); a mainline kernel has them as preempt = \"voluntary\"".into(),
            ));
        }
        if self.reclaim.rmap() && self.sched == Goodness24 {
            return Err((
                "reclaim",
                "2.6's rmap reclaim never ran on a 2.4 (goodness24) kernel (valid there: vmscan-2.4)".into(),
            ));
        }
        if self.reclaim == Reclaim::Rmap2617 && !self.writeback.page_based() {
            return Err((
                "reclaim",
                "`rmap-2.6.17` reclaim writes PG_dirty pages, which only page-based writeback has (writeback: pdflush-2.6.17, pdflush-balance or io-less-3.2; with bdflush-2.4 use rmap-2.6.9)".into(),
            ));
        }
        Ok(())
    }

    /// Does this kernel have POSIX interval timers? `timer_create` arrived in 2.6; the model
    /// tells a 2.4 kernel by its `goodness24` scheduler (`2.4.18+o1`, a 2.4 kernel with
    /// another, is let through: seed 004's timer test is never run on it).
    pub fn has_posix_timers(&self) -> bool {
        self.sched != SchedClass::Goodness24
    }

    /// Does each CPU have its own runqueue on a machine of several (CFS and EEVDF,
    /// [`crate::sched::smp`])? The 2.4 and O(1) schedulers share one.
    pub fn per_cpu_runqueues(&self) -> bool {
        matches!(self.sched, SchedClass::Cfs | SchedClass::Eevdf)
    }

    /// Is `spinlock_t` a sleeping lock (PREEMPT_RT)?
    pub fn sleeping_locks(&self) -> bool {
        self.locks == LockFlavour::Sleeping
    }

    /// Are the voluntary-preempt patch's `might_sleep()` points rescheduling points (VP)?
    pub fn might_sleep_points(&self) -> bool {
        self.voluntary || self.preempt == PreemptModel::Voluntary
    }

    /// The switches the voluntary-preempt tracer prints in its header: VP, KP, SP, HP.
    pub fn trace_flags(&self) -> Vec<(String, bool)> {
        let kp = matches!(self.preempt, PreemptModel::Full | PreemptModel::Lazy);
        [
            ("VP", self.might_sleep_points()),
            ("KP", kp),
            ("SP", self.softirq_threads),
            ("HP", self.hardirq_threads),
        ]
        .into_iter()
        .map(|(n, on)| (n.to_string(), on))
        .collect()
    }

    /// What the tracer's header says beside its switches: where SP and HP move the work
    /// when set, or nothing.
    pub fn trace_note(&self) -> String {
        let moved: Vec<&str> = [
            (self.softirq_threads, "SP: softirqs run in ksoftirqd/0"),
            (
                self.hardirq_threads,
                "HP: device interrupt handlers run in irq/<n>-<name> threads",
            ),
        ]
        .into_iter()
        .filter_map(|(on, what)| on.then_some(what))
        .collect();
        moved.join("; ")
    }

    /// The layout of the patch release's `/proc/latency_trace` (`1.0.6` in the R series,
    /// `1.0.7` from S0 and for kernels without the patch).
    pub fn tracer_version(&self) -> &'static str {
        match &self.vp_patch {
            Some(r) if r.starts_with('R') => "1.0.6",
            _ => "1.0.7",
        }
    }

    /// The CFS tunables (only called for a validated `sched = "cfs"` variant).
    pub fn cfs_tunables(&self) -> CfsTunables {
        self.cfs.expect("validated: a cfs variant has [cfs]")
    }

    /// The EEVDF tunables (only called for a validated `sched = "eevdf"` variant).
    pub fn eevdf_tunables(&self) -> EevdfTunables {
        self.eevdf.expect("validated: an eevdf variant has [eevdf]")
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::cpu::tests::variant_with;

    #[test]
    fn the_trace_note_says_where_sp_and_hp_move_the_work() {
        let mut v = variant_with(SchedClass::O1, PreemptModel::Full, &[]);
        assert_eq!(v.trace_note(), "");
        v.hardirq_threads = true;
        assert!(
            v.trace_note().starts_with("HP: device interrupt handlers"),
            "{}",
            v.trace_note()
        );
        v.softirq_threads = true;
        assert!(
            v.trace_note().starts_with("SP: softirqs run in ksoftirqd/0; HP: "),
            "{}",
            v.trace_note()
        );
    }

    #[test]
    fn an_interrupt_thread_priority_outside_1_to_99_is_refused_naming_the_field() {
        let mut v = variant_with(SchedClass::O1, PreemptModel::Full, &[]);
        v.vp_patch = Some("S0".into());
        assert!(v.validate().is_ok());
        v.irq_thread_priority.insert("ide0".into(), 0);
        let (f, why) = v.validate().unwrap_err();
        assert_eq!(f, "irq_thread_priority");
        assert!(why.contains("hardirq_threads"), "{why}");
        v.hardirq_threads = true;
        let (f, why) = v.validate().unwrap_err();
        assert_eq!(f, "irq_thread_priority");
        assert!(why.contains("ide0") && why.contains("1-99"), "{why}");
        v.irq_thread_priority.insert("ide0".into(), 99);
        v.irq_thread_priority.insert("eth0".into(), 50);
        assert!(v.validate().unwrap_err().1.contains("eth0"));
    }

    #[test]
    fn sleeping_spinlocks_without_threaded_interrupts_are_refused_naming_the_field() {
        let mut v = variant_618();
        v.preempt = PreemptModel::Full;
        v.locks = LockFlavour::Sleeping;
        let (f, why) = v.validate().unwrap_err();
        assert_eq!(f, "locks");
        assert!(why.contains("hardirq_threads"), "{why}");
        v.hardirq_threads = true;
        assert!(v.validate().is_ok(), "{:?}", v.validate());
        // PREEMPT_RT selects kernel preemption, and needs a cfs or eevdf kernel.
        v.preempt = PreemptModel::Voluntary;
        let (f, why) = v.validate().unwrap_err();
        assert_eq!(f, "locks");
        assert!(why.contains("full"), "{why}");
        let mut o1 = variant_with(SchedClass::O1, PreemptModel::Full, &[]);
        o1.vp_patch = Some("S0".into());
        o1.hardirq_threads = true;
        o1.locks = LockFlavour::Sleeping;
        assert_eq!(o1.validate().unwrap_err().0, "locks");
        // An unknown flavour is refused by name.
        let mut j = serde_json::to_value(variant_618()).unwrap();
        j["locks"] = "mutex".into();
        let err = serde_json::from_value::<Variant>(j).unwrap_err().to_string();
        assert!(err.contains("mutex") && err.contains("sleeping"), "{err}");
    }

    #[test]
    fn rt_throttling_is_refused_on_a_kernel_before_2_6_25() {
        let mut v = variant_with(SchedClass::O1, PreemptModel::Full, &[]);
        v.rt_throttling = Some(true);
        assert_eq!(v.validate().unwrap_err().0, "rt_throttling");
        v.rt_throttling = Some(false);
        assert!(v.validate().is_ok());
    }

    #[test]
    fn combinations_no_kernel_had_are_refused() {
        let lazy24 = variant_with(SchedClass::Goodness24, PreemptModel::Lazy, &[]);
        let (f, why) = lazy24.validate().unwrap_err();
        assert_eq!(f, "preempt");
        assert!(why.contains("6.13") && why.contains("valid here"), "{why}");
        let mut hr24 = variant_with(SchedClass::Goodness24, PreemptModel::None, &[]);
        hr24.timer = TimerSubsystem::Hrtimer;
        assert_eq!(hr24.validate().unwrap_err().0, "timer");
        let cfs_without_tunables = variant_with(SchedClass::Cfs, PreemptModel::Voluntary, &[]);
        assert_eq!(cfs_without_tunables.validate().unwrap_err().0, "cfs");
        let mut ok = variant_with(SchedClass::Eevdf, PreemptModel::Lazy, &[]);
        ok.timer = TimerSubsystem::Hrtimer;
        ok.eevdf = Some(EevdfTunables {
            base_slice_ns: 700_000,
            run_to_parity: true,
            place_lag: true,
        });
        assert!(ok.validate().is_ok());
        let mut rmap24 = variant_with(SchedClass::Goodness24, PreemptModel::None, &[]);
        rmap24.reclaim = Reclaim::Rmap269;
        assert_eq!(rmap24.validate().unwrap_err().0, "reclaim");
        let mut rmap2617_bdflush = variant_with(SchedClass::O1, PreemptModel::None, &[]);
        rmap2617_bdflush.reclaim = Reclaim::Rmap2617;
        let (f, why) = rmap2617_bdflush.validate().unwrap_err();
        assert_eq!(f, "reclaim");
        assert!(why.contains("page-based writeback"), "{why}");
    }

    #[test]
    fn timer_slack_is_the_kernels_from_2_6_28_on_hrtimers() {
        let mut v = variant_618();
        for (base, slack) in [
            ("6.18", Some(DEFAULT_TIMER_SLACK_NS)),
            ("3.2", Some(DEFAULT_TIMER_SLACK_NS)),
            ("2.6.28", Some(DEFAULT_TIMER_SLACK_NS)),
            ("2.6.27", None),
            ("2.6.17-rc", None),
            ("2.6.9-rc1-bk12", None),
            ("t", None),
        ] {
            v.base = base.into();
            assert_eq!(v.timer_slack(), slack, "{base}");
        }
        v.base = "6.18".into();
        v.timer_slack_ns = Some(1_000);
        assert!(v.validate().is_ok());
        assert_eq!(v.timer_slack(), Some(1_000), "PR_SET_TIMERSLACK's value, every task's");
        v.timer = TimerSubsystem::Jiffies;
        v.timer_slack_ns = None;
        assert_eq!(v.timer_slack(), None, "the timer list has no ranges");
    }

    #[test]
    fn a_timer_slack_on_a_kernel_without_it_is_refused_naming_the_field() {
        let mut v = variant_618();
        v.base = "6.18".into();
        v.timer_slack_ns = Some(50_000);
        let refused = |w: &Variant| {
            let (f, why) = w.validate().unwrap_err();
            assert_eq!(f, "timer_slack_ns", "{why}");
            why
        };
        let mut jiffies = v.clone();
        jiffies.timer = TimerSubsystem::Jiffies;
        assert!(refused(&jiffies).contains("jiffies"));
        let mut old = v.clone();
        old.base = "2.6.20".into();
        assert!(refused(&old).contains("2.6.28"));
        let mut unnamed = v.clone();
        unnamed.base = "t".into();
        assert!(refused(&unnamed).contains("`base`"));
        let mut huge = v.clone();
        huge.timer_slack_ns = Some(2_000_000_000);
        assert!(refused(&huge).contains("at most 1 s"));
        assert!(v.validate().is_ok());
    }

    /// A 6.18-like variant: EEVDF, io-less writeback, blk-mq with mq-deadline.
    pub(crate) fn variant_618() -> Variant {
        let mut v = variant_with(SchedClass::Eevdf, PreemptModel::None, &[]);
        v.timer = TimerSubsystem::Hrtimer;
        v.eevdf = Some(EevdfTunables {
            base_slice_ns: 700_000,
            run_to_parity: true,
            place_lag: true,
        });
        v.writeback = Writeback::IoLess32;
        v.dirty = Some(DirtyTunables {
            dirty_ratio: 20,
            dirty_background_ratio: 10,
        });
        v.reclaim = Reclaim::Rmap2617;
        v.block = Some(Block::BlkMq);
        v.elevator = Elevator::MqDeadline;
        v
    }

    #[test]
    fn an_ext4_or_jbd2_on_a_kernel_that_never_had_it_is_refused_naming_the_field() {
        let mut v = variant_618();
        (v.fs, v.journal) = (Fs::Ext4, Journal::Jbd2);
        assert!(v.validate().is_ok(), "{:?}", v.validate());
        // ext4-6.18 journals through jbd2.
        v.journal = Journal::Jbd26;
        let (f, why) = v.validate().unwrap_err();
        assert_eq!(f, "journal");
        assert!(why.contains("jbd2-6.x"), "{why}");
        // jbd2 does not order the model's ext3 data.
        (v.fs, v.journal) = (Fs::Ext3, Journal::Jbd2);
        let (f, why) = v.validate().unwrap_err();
        assert_eq!(f, "journal");
        assert!(why.contains("ext4-6.18"), "{why}");
        // A 2.6 kernel never had either.
        let mut o1 = variant_with(SchedClass::O1, PreemptModel::None, &[]);
        o1.journal = Journal::Jbd2;
        let (f, why) = o1.validate().unwrap_err();
        assert_eq!(f, "journal");
        assert!(why.contains("2.6.28") && why.contains("o1"), "{why}");
        let mut cfs = variant_with(SchedClass::Cfs, PreemptModel::None, &[]);
        (cfs.fs, cfs.journal) = (Fs::Ext4, Journal::Jbd2);
        let (f, why) = cfs.validate().unwrap_err();
        assert_eq!(f, "fs");
        assert!(why.contains("6.16") && why.contains("cfs"), "{why}");
        // An unknown file system is refused by name.
        let mut j = serde_json::to_value(variant_618()).unwrap();
        j["fs"] = "ext2".into();
        let err = serde_json::from_value::<Variant>(j).unwrap_err().to_string();
        assert!(err.contains("ext2") && err.contains("ext4-6.18"), "{err}");
    }

    #[test]
    fn a_block_layer_and_elevator_that_do_not_go_together_are_refused_naming_the_field() {
        let v = variant_618();
        assert!(v.validate().is_ok());
        assert_eq!(v.block(), Block::BlkMq);
        // blk-mq with a 2.6-only elevator, or with the default (noop): the elevator.
        for e in [Elevator::Anticipatory, Elevator::Noop] {
            let mut w = v.clone();
            w.elevator = e;
            let (f, why) = w.validate().unwrap_err();
            assert_eq!(f, "elevator");
            assert!(why.contains("mq-deadline") && why.contains(e.name()), "{why}");
        }
        // 2.6's queue with a blk-mq elevator.
        let mut w = variant_with(SchedClass::O1, PreemptModel::None, &[]);
        w.writeback = Writeback::Pdflush2617;
        w.dirty = v.dirty;
        w.elevator = Elevator::MqDeadline;
        let (f, why) = w.validate().unwrap_err();
        assert_eq!(f, "elevator");
        assert!(why.contains("anticipatory"), "{why}");
        // A 6.x kernel without blk-mq, blk-mq under 2.4's bdflush or on a 2.6.0-2.6.22 kernel.
        let mut w = v.clone();
        w.block = Some(Block::Queue26);
        let (f, why) = w.validate().unwrap_err();
        assert_eq!(f, "block");
        assert!(why.contains("5.0"), "{why}");
        let mut w = variant_with(SchedClass::Goodness24, PreemptModel::None, &[]);
        w.block = Some(Block::BlkMq);
        assert_eq!(w.validate().unwrap_err().0, "block");
        // Today's choices stay the defaults: the block layer goes with the writeback.
        let w = variant_with(SchedClass::Goodness24, PreemptModel::None, &[]);
        assert_eq!((w.block, w.block()), (None, Block::Ide24));
        let mut w = v.clone();
        w.block = None;
        assert_eq!(w.block(), Block::Queue26);
    }

    #[test]
    fn an_unknown_block_layer_is_refused_naming_the_field() {
        let v = serde_json::to_value(variant_618()).unwrap();
        let mut bad = v.clone();
        bad["block"] = "blk-sq".into();
        let err = serde_json::from_value::<Variant>(bad).unwrap_err().to_string();
        assert!(err.contains("blk-sq") && err.contains("blk-mq"), "{err}");
        let back: Variant = serde_json::from_value(v).unwrap();
        assert_eq!(back.block, Some(Block::BlkMq));
    }
}
