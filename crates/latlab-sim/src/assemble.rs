//! One assembly (issue 30, item 1): the only code that reads which implementation of each
//! subsystem a [`Variant`] names, and builds it. As Linux picks its ops tables once (the
//! `sched_class` a policy runs in, the `elevator_type` a queue is set up with, the
//! filesystem's `address_space_operations`) and its code then calls through them, the model
//! builds each subsystem here and its callers ask the object for behaviour ("does the page
//! cache know which pages are dirty?"), never which kernel they are in.
//!
//! | subsystem       | built here from          | interface                                  |
//! |-----------------|--------------------------|--------------------------------------------|
//! | scheduler       | `sched`, `cfs`, `eevdf`, `rt_throttling` | [`crate::sched::Scheduler`] (trait object) |
//! | timers          | `timer`, `hz`, `timer_slack_ns` and `base` | [`crate::kernel::state::TimerBase`] |
//! | block layer     | `block`, `elevator`      | [`crate::dev::disk::Disk`]                 |
//! | writeback       | `writeback`, `dirty`     | [`crate::mm::writeback::DirtyWriteback`]   |
//! | reclaim         | `reclaim`                | [`crate::mm::reclaim::PageReclaim`]        |
//! | journal         | `journal`                | [`crate::fs::jbd::Journal`]                |
//! | ext3            | `writeback`              | [`crate::fs::ext3::Ext3`]                  |
//! | file system     | `fs`                     | [`crate::fs::ext4::Ext4`] (`FsState::ext4`; none: ext3) |
//! | swap allocator  | `swap_allocator`         | `latlab_swap::SwapAllocator` (trait object)|
//! | kernel threads  | the subsystems that own them: reclaim's kswapd, writeback's threads, the journal's kjournald, ext4's conversion kworker |
//! | irq threads     | `hardirq_threads`, `irq_thread_priority`, `softirq_threads` | [`crate::kernel::irq_thread::IrqThreads`] |
//!
//! The preemption model stays with the code that acts on it, in one place
//! (`kernel/preempt.rs`): it is a rule of the CPU loop, not a subsystem with state.
//! `tests/only_place.rs` checks that no other file names a variant's implementations.

use crate::dev::blk_mq::BlkMq;
use crate::dev::disk::Disk;
use crate::fs::ext3::Ext3;
use crate::fs::ext4::Ext4;
use crate::fs::jbd::Journal;
use crate::fs::state::{FsState, Subsystems};
use crate::kernel::irq_thread::{IrqThreads, Line, IRQ_THREAD_PRIORITY};
use crate::kernel::state::{Kthread, TimerBase};
use crate::machine::MachineProfile;
use crate::mm::page_writeback::PageWriteback;
use crate::mm::reclaim::{self, PageReclaim};
use crate::mm::writeback::DirtyWriteback;
use crate::mm::Mm;
use crate::sched::rt_bandwidth::RtBandwidth;
use crate::sched::{cfs, eevdf, goodness24, o1, rt, smp, Scheduler};
use crate::variant::{Block, Elevator, Fs, Reclaim, SchedClass, TimerSubsystem, Variant, Writeback};
use latlab_core::Nanos;

/// A kernel as the variant assembles it, before the model boots it.
pub struct Assembled {
    pub sched: Box<dyn Scheduler>,
    pub st: FsState,
    /// The kernel threads its subsystems start, in start order.
    pub kthreads: Vec<Kthread>,
}

/// Build the kernel variant `v` names on machine `m` (a validated variant).
pub fn assemble(v: &Variant, m: &MachineProfile) -> Result<Assembled, latlab_swap::SwapError> {
    let swap = latlab_swap::by_name(&v.swap_allocator, m.swap_slots().max(latlab_swap::MIN_SLOTS))?;
    let mut st = FsState::assembled(m, subsystems(v, m, swap));
    st.irq_threads = irq_threads(v, m);
    let mut kthreads = vec![st.reclaim.kswapd()];
    kthreads.extend(st.writeback.threads());
    kthreads.push(st.jbd.thread());
    kthreads.extend(st.ext4.as_ref().map(|e| e.thread()));
    Ok(Assembled {
        sched: scheduler(v, m),
        st,
        kthreads,
    })
}

/// The interrupt threads (HP) and ksoftirqd (SP) the variant runs
/// (`kernel/irq_thread.rs`): under the voluntary-preempt patch the IDE line's thread only
/// (the RTC's handler is SA_NODELAY), under mainline's `threadirqs` (`cfs`, `eevdf`) the
/// RTC's too; each at the variant's `irq_thread_priority`, else SCHED_FIFO 50.
pub fn irq_threads(v: &Variant, m: &MachineProfile) -> IrqThreads {
    let prio = |l: Line| {
        v.irq_thread_priority
            .get(l.name())
            .copied()
            .unwrap_or(IRQ_THREAD_PRIORITY)
    };
    let ide = v.hardirq_threads.then(|| prio(Line::Ide));
    let rtc = (v.hardirq_threads && v.vp_patch.is_none()).then(|| prio(Line::Rtc));
    IrqThreads::new(ide, rtc, v.softirq_threads, m)
}

/// The scheduler the variant names on machine `m`: on several CPUs, CFS and EEVDF with a
/// runqueue per CPU ([`smp::PerCpu`]), goodness24 and O(1) with one they share.
pub fn scheduler(v: &Variant, m: &MachineProfile) -> Box<dyn Scheduler> {
    let smp = m.cpus > 1;
    let cfs = || {
        rt_throttled(
            v,
            rt::WithRt::new(cfs::Cfs::new(v.cfs_tunables()).on_cpus(m.cpus)),
            true,
        )
    };
    let eevdf = || {
        let fair = eevdf::Eevdf::new(v.eevdf_tunables(), v.hz).on_cpus(m.cpus);
        rt_throttled(v, rt::WithRt::new(fair), false)
    };
    match v.sched {
        SchedClass::Goodness24 => Box::new(goodness24::Goodness24::new(v.hz)),
        SchedClass::O1 => Box::new(o1::O1::new(v.hz)),
        SchedClass::Cfs if smp => Box::new(smp::PerCpu::new(m, v.hz, cfs)),
        SchedClass::Cfs => Box::new(cfs()),
        SchedClass::Eevdf if smp => Box::new(smp::PerCpu::new(m, v.hz, eevdf)),
        SchedClass::Eevdf => Box::new(eevdf()),
    }
}

/// The RT class with RT throttling unless the variant turns it off (`sched/rt_bandwidth.rs`):
/// a CPU throttled with no fair task waiting idles (`idle_when`: 2.6.25-6.11's
/// `rt_bandwidth`) or runs the RT task on (6.12+'s fair deadline server).
fn rt_throttled<F: rt::FairClass>(v: &Variant, s: rt::WithRt<F>, idle_when: bool) -> rt::WithRt<F> {
    if v.rt_throttling.unwrap_or(true) {
        s.with_bandwidth(RtBandwidth::new(idle_when))
    } else {
        s
    }
}

/// The subsystems the variant names, over swap allocator `swap`.
pub fn subsystems(v: &Variant, m: &MachineProfile, swap: Box<dyn latlab_swap::SwapAllocator>) -> Subsystems {
    let mut mm = Mm::new(m, swap);
    // Page-based writeback's ratelimit is set from memory as it stands at boot, before
    // the reclaim's own watermarks.
    let writeback = writeback(v, mm.buffer_pages());
    let reclaim = PageReclaim::new(reclaim_kind(v.reclaim));
    mm.set_anon_starts_active(reclaim.anon_starts_active());
    mm.set_watermarks(reclaim.watermarks(mm.total()));
    let timers = match v.timer {
        TimerSubsystem::Jiffies => TimerBase::TimerList {
            tick_ns: 1_000_000_000 / Nanos::from(v.hz),
        },
        TimerSubsystem::Hrtimer => TimerBase::Hrtimer {
            slack_ns: v.timer_slack(),
        },
    };
    let disk = block_layer(v, m);
    let jbd = Journal::new(v.journal.kjournald_holds_bkl(), v.journal.orders_by_inode());
    // 2.6.16+'s ext3 (file_update_time, block-group allocation) goes with 2.6's page cache.
    let ext3_26 = writeback.counts_dirty_pages();
    Subsystems {
        timers,
        disk,
        mm,
        jbd,
        ext3: Ext3::new(ext3_26),
        ext4: (v.fs == Fs::Ext4).then(Ext4::new),
        writeback,
        reclaim,
    }
}

/// The block layer the variant names (by default the one that goes with its writeback:
/// 2.4's IDE queue under bdflush, 2.6's queue under page-based writeback) over the
/// machine's disk.
pub fn block_layer(v: &Variant, m: &MachineProfile) -> Disk {
    let mut disk = Disk::new(m);
    match v.block() {
        Block::Ide24 => {}
        Block::Queue26 => disk.use_26_block_layer(v.hz, v.elevator == Elevator::Anticipatory),
        Block::BlkMq => disk.use_blk_mq(BlkMq::new(m.disk.queue_depth, v.hz, v.elevator == Elevator::MqDeadline)),
    }
    disk
}

/// The writeback the variant names; `buffer_pages`: the memory page-based writeback's
/// ratelimit is set from.
pub fn writeback(v: &Variant, buffer_pages: u64) -> DirtyWriteback {
    let pwb = || {
        let d = v.dirty.expect("validated: page-based writeback has [dirty]");
        PageWriteback::new(d, buffer_pages, v.hz)
    };
    match v.writeback {
        Writeback::Bdflush24 => DirtyWriteback::bdflush24(),
        Writeback::Pdflush2617 => DirtyWriteback::pdflush(pwb(), false),
        Writeback::PdflushBalance => DirtyWriteback::pdflush(pwb(), true),
        Writeback::IoLess32 => DirtyWriteback::io_less(pwb()),
    }
}

/// The reclaim implementation the variant's `reclaim` names.
pub fn reclaim_kind(r: Reclaim) -> reclaim::Kind {
    match r {
        Reclaim::Vmscan24 => reclaim::Kind::Vmscan24,
        Reclaim::Rmap269 => reclaim::Kind::Rmap269,
        Reclaim::Rmap2617 => reclaim::Kind::Rmap2617,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::tests::{machine, variant_with};
    use crate::kernel::task::Policy;
    use crate::variant::{DirtyTunables, Journal, PreemptModel};

    fn variant_26(writeback: Writeback, reclaim: Reclaim) -> Variant {
        let mut v = variant_with(SchedClass::O1, PreemptModel::None, &[]);
        v.writeback = writeback;
        v.reclaim = reclaim;
        v.dirty = Some(DirtyTunables {
            dirty_ratio: 40,
            dirty_background_ratio: 10,
        });
        v
    }

    #[test]
    fn the_kernel_threads_come_from_the_subsystems_and_each_registers_its_pid() {
        let v = variant_with(SchedClass::Goodness24, PreemptModel::None, &[]);
        let mut a = assemble(&v, &machine()).unwrap();
        assert_eq!(
            a.kthreads,
            [Kthread::Kswapd, Kthread::Bdflush, Kthread::Kupdated, Kthread::Kjournald]
        );
        for (i, t) in a.kthreads.iter().enumerate() {
            a.st.register_kthread(*t, 10 + i as u32);
        }
        // kupdated (12) runs from its timer: nothing wakes it by pid.
        let pids = a.st.kthreads;
        assert_eq!((pids.kswapd(), pids.bdflush(), pids.kjournald()), (10, 11, 13));
        let a = assemble(&variant_26(Writeback::Pdflush2617, Reclaim::Rmap2617), &machine()).unwrap();
        let mut want = vec![Kthread::Kswapd0];
        want.extend([Kthread::Pdflush; crate::mm::pdflush::MAX_THREADS]);
        want.push(Kthread::Kjournald);
        assert_eq!(a.kthreads, want);
        let a = assemble(&variant_26(Writeback::IoLess32, Reclaim::Rmap269), &machine()).unwrap();
        assert_eq!(a.kthreads, [Kthread::Kswapd0, Kthread::Flusher, Kthread::Kjournald]);
    }

    #[test]
    fn each_subsystem_answers_for_the_implementation_the_variant_names() {
        let v24 = variant_with(SchedClass::Goodness24, PreemptModel::None, &[]);
        let a = assemble(&v24, &machine()).unwrap();
        assert_eq!(a.sched.name(), scheduler(&v24, &machine()).name());
        assert!(!a.st.disk.is_26(), "2.4's IDE queue");
        assert!(a.st.writeback.pages().is_none(), "bdflush has no page-based state");
        assert!(!a.st.writeback.counts_dirty_pages() && !a.st.ext3.block_groups());
        assert!(!a.st.reclaim.anon_starts_active() && !a.st.mm.anon_starts_active());
        assert!(a.st.jbd.commit_holds_bkl());
        assert_eq!(a.st.timers, TimerBase::TimerList { tick_ns: 10_000_000 }, "HZ=100");
        assert_eq!(a.st.timers.fires_at(10_000_001), 20_000_000);
        assert!(!a.st.timers.own_interrupt());

        let mut v = variant_26(Writeback::PdflushBalance, Reclaim::Rmap2617);
        v.journal = Journal::Jbd26;
        v.elevator = Elevator::Anticipatory;
        v.timer = TimerSubsystem::Hrtimer;
        let a = assemble(&v, &machine()).unwrap();
        assert_eq!(a.st.timers.fires_at(10_000_001), 10_000_001);
        assert!(a.st.timers.own_interrupt());
        assert_eq!(
            a.st.timers,
            TimerBase::Hrtimer { slack_ns: None },
            "`base` names no version"
        );
        v.base = "2.6.35".into();
        let a = assemble(&v, &machine()).unwrap();
        assert_eq!(
            a.st.timers.sleep_slack(Policy::Other),
            50_000,
            "init_task's timer slack"
        );
        assert_eq!(a.st.timers.sleep_slack(Policy::Fifo), 0, "none for an RT task");
        assert!(
            a.st.disk.is_26() && a.st.disk.as_counts().is_some(),
            "2.6's queue with AS"
        );
        assert!(a.st.writeback.counts_dirty_pages() && a.st.writeback.balance_hands_to_pdflush());
        assert!(a.st.ext3.block_groups() && a.st.ext3.coarse_mtime());
        assert!(a.st.reclaim.writes_dirty_pages() && !a.st.reclaim.uses_swap_token());
        assert!(a.st.mm.anon_starts_active());
        assert!(!a.st.jbd.commit_holds_bkl());
        assert_eq!(
            [a.st.mm.pages_min(), a.st.mm.pages_low(), a.st.mm.pages_high()],
            crate::mm::watermarks_2617(a.st.mm.total())
        );

        let a = assemble(&variant_26(Writeback::Pdflush2617, Reclaim::Rmap269), &machine()).unwrap();
        assert!(!a.st.writeback.balance_hands_to_pdflush());
        assert!(a.st.reclaim.uses_swap_token() && !a.st.reclaim.writes_dirty_pages());
        assert!(a.st.disk.as_counts().is_none(), "noop elevator");
    }

    #[test]
    fn blk_mq_takes_its_tags_from_the_machines_queue_depth() {
        let mut v = variant_26(Writeback::IoLess32, Reclaim::Rmap2617);
        v.block = Some(Block::BlkMq);
        let mut m = machine();
        m.disk.queue_depth = 32;
        for (elevator, nr) in [(Elevator::MqDeadline, 64), (Elevator::None, 32)] {
            v.elevator = elevator;
            let disk = block_layer(&v, &m);
            assert!(disk.is_26() && disk.as_counts().is_none());
            assert_eq!(disk.nr_requests(), nr, "{elevator:?}");
        }
        // The default goes with the writeback: 2.6's queue of the machine's nr_requests.
        v.block = None;
        v.elevator = Elevator::Noop;
        assert_eq!(block_layer(&v, &m).nr_requests(), u64::from(m.disk.nr_requests));
    }
}
