//! Devices: the RTC (realfeel's interrupt source), the disk and its request queue, 2.6's
//! anticipatory I/O scheduler, and 6.x's multi-queue block layer; their state over the
//! core's ([`DevState`]) and what a device path runs on ([`DevK`]).
pub mod as_iosched;
pub mod blk_mq;
pub mod disk;
pub mod rtc;

use crate::kernel::path::CoreK;
use crate::kernel::state::Core;

/// The devices' state over the core's: what a device path reaches (the core's fields
/// through `Deref`).
pub struct DevState {
    pub core: Core,
    pub rtc: rtc::Rtc,
    pub disk: disk::Disk,
}

impl std::ops::Deref for DevState {
    type Target = Core;
    fn deref(&self) -> &Core {
        &self.core
    }
}

impl std::ops::DerefMut for DevState {
    fn deref_mut(&mut self) -> &mut Core {
        &mut self.core
    }
}

/// What a device path runs on: the devices' state (and through it the core's).
pub trait DevK: CoreK {
    fn dev(&mut self) -> &mut DevState;
}

impl CoreK for DevState {
    #[inline(always)]
    fn core(&mut self) -> &mut Core {
        &mut self.core
    }
}

impl DevK for DevState {
    #[inline(always)]
    fn dev(&mut self) -> &mut DevState {
        self
    }
}

impl DevState {
    /// Queue a disk request (its completion interrupt is armed through `out`) of no task
    /// the elevator tells apart.
    pub fn disk_submit(
        &mut self,
        dir: disk::Dir,
        block: u64,
        blocks: u64,
        payload: disk::Payload,
        now: latlab_core::Nanos,
    ) -> u64 {
        self.disk_submit_by(dir, block, blocks, payload, 0, now)
    }

    /// Queue a disk request of task `pid` (its io_context: batching, anticipation).
    pub fn disk_submit_by(
        &mut self,
        dir: disk::Dir,
        block: u64,
        blocks: u64,
        payload: disk::Payload,
        pid: u32,
        now: latlab_core::Nanos,
    ) -> u64 {
        self.disk
            .submit(dir, block, blocks, payload, pid, now, &mut self.core.out)
    }
}
