//! The file system's state over mm's ([`FsState`]): the buffer cache, the journal, ext3's
//! block groups and the dentry and inode caches. It holds every layer beneath it (mm's
//! state, and through it the devices' and the core's, reached through `Deref`): the state
//! the CPU loop runs every path on.

use crate::dev::rtc::Rtc;
use crate::dev::DevState;
use crate::fs::buffer::BufferCache;
use crate::fs::dcache::Dcache;
use crate::fs::ext3::Ext3;
use crate::fs::jbd::Journal;
use crate::kernel::path::Chan;
use crate::kernel::state::{Core, KReq};
use crate::machine::MachineProfile;
use crate::mm::state::MmState;
use latlab_core::Nanos;

/// bdf_prm.nfract: percentage of buffer pages dirty that starts write-out (2.4.17, research §2).
pub const NFRACT: u64 = 40;
/// bdf_prm.nfract_sync: percentage at which writers are throttled (2.4.17).
pub const NFRACT_SYNC: u64 = 60;

/// The file system's state over mm's.
pub struct FsState {
    pub vm: MmState,
    pub buf: BufferCache,
    pub jbd: Journal,
    /// ext3's block groups and generation ([`crate::fs::ext3`]).
    pub ext3: Ext3,
    /// ext4, when the kernel's file system is 6.18's ([`crate::fs::ext4`]; None: ext3).
    pub ext4: Option<crate::fs::ext4::Ext4>,
    pub dcache: Dcache,
}

impl std::ops::Deref for FsState {
    type Target = MmState;
    fn deref(&self) -> &MmState {
        &self.vm
    }
}

impl std::ops::DerefMut for FsState {
    fn deref_mut(&mut self) -> &mut MmState {
        &mut self.vm
    }
}

/// The subsystems whose implementation the variant chooses, as
/// [`crate::assemble`] builds them.
pub struct Subsystems {
    pub timers: crate::kernel::state::TimerBase,
    pub disk: crate::dev::disk::Disk,
    pub mm: crate::mm::Mm,
    pub jbd: Journal,
    pub ext3: Ext3,
    pub ext4: Option<crate::fs::ext4::Ext4>,
    pub writeback: crate::mm::writeback::DirtyWriteback,
    pub reclaim: crate::mm::reclaim::PageReclaim,
}

impl FsState {
    /// The kernel's state around the assembled subsystems.
    pub fn assembled(m: &MachineProfile, s: Subsystems) -> Self {
        FsState {
            vm: MmState {
                dev: DevState {
                    core: Core::new(m, s.timers),
                    rtc: Rtc::default(),
                    disk: s.disk,
                },
                mm: s.mm,
                writeback: s.writeback,
                reclaim: s.reclaim,
            },
            buf: BufferCache::default(),
            jbd: s.jbd,
            ext3: s.ext3,
            ext4: s.ext4,
            dcache: Dcache::default(),
        }
    }
}

impl FsState {
    /// A disk interrupt: the request is done; buffers complete, sleepers wake.
    pub fn disk_complete(&mut self, id: u64, now: Nanos) {
        let mut uncongested = false;
        if let Some(r) = self
            .vm
            .dev
            .disk
            .complete(id, now, &mut self.vm.dev.core.out, &mut uncongested)
        {
            if let crate::dev::disk::Payload::Buffers { hi, lo } = r.payload {
                self.buf.io_done(hi, hi - lo);
            }
            self.vm.dev.core.out.push(KReq::Wake(Chan::Io(id)));
        }
        // ext4_end_bio: unwritten io_ends go to the conversion kworker.
        if let Some(e) = self.ext4.as_mut() {
            if e.io_done(self.buf.done_hi) {
                let pid = self.vm.dev.core.kthreads.ext4_rsv();
                self.vm.dev.core.wake_kthread(pid);
            }
        }
        if let (true, Some(pwb)) = (uncongested, self.vm.writeback.pages_mut()) {
            pwb.congestion_cleared(&mut self.vm.dev.core.out);
        }
    }
}
