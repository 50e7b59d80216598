//! What a program sees when it decides: its clock, machine, random stream and marks, and
//! the few things a program does without a system call (files that were on disk before the
//! run, its user-mode accesses to memory), each a named method. The kernel state behind
//! them is private to this module, so a program reaches the rest of the kernel only
//! through its typed system calls ([`crate::workload::syscall::Syscall`]).

use crate::engine::Rng;
use crate::fs::state::FsState;
use crate::machine::MachineProfile;
use crate::measure::Mark;
use latlab_core::Nanos;

/// What a program sees when it decides.
pub struct ProgCx<'a> {
    pub now: Nanos,
    pub m: &'a MachineProfile,
    pub rng: &'a mut Rng,
    pub pid: u32,
    /// Measurement marks of this step (at most a couple; inline, no allocation).
    pub marks: &'a mut smallvec::SmallVec<[Mark; 2]>,
    /// The task's address space (its pages live in the page cache's `mms`).
    pub mm: u32,
    /// The kernel's state, reached only through the methods below.
    st: &'a mut FsState,
}

impl<'a> ProgCx<'a> {
    /// The context of task `pid` (address space `mm`) deciding at `now`.
    pub(crate) fn new(
        now: Nanos,
        m: &'a MachineProfile,
        rng: &'a mut Rng,
        pid: u32,
        marks: &'a mut smallvec::SmallVec<[Mark; 2]>,
        mm: u32,
        st: &'a mut FsState,
    ) -> Self {
        ProgCx {
            now,
            m,
            rng,
            pid,
            marks,
            mm,
            st,
        }
    }

    /// A file of `pages` already on disk when the run starts (a source tree, old files),
    /// not cached: the file system's record of it, made when the program first names it. No
    /// time passes and no system call is made: the stand-in for files that were there
    /// before the run.
    pub(crate) fn file_on_disk(&mut self, pages: u64) -> u32 {
        self.st.mm.existing_file(pages)
    }
    /// A local socket's channel (the X connection, made before the run): no time passes.
    pub(crate) fn socket(&mut self) -> u64 {
        self.st.net_token += 1;
        self.st.net_token
    }
    /// The history's lookup of an old file not looked up before (no path cost: the `cat`
    /// that fills the cache before a run): its new dentry goes on the unused list,
    /// unreferenced.
    pub(crate) fn looked_up_once(&mut self) {
        self.st.dcache.looked_up_once();
    }
    /// The history's `close()` of `file` (no path cost): its inode unused.
    pub(crate) fn closed(&mut self, file: u32) {
        if let Some(r) = self.st.mm.files_mut().get_mut(&file) {
            r.in_use = false;
        }
    }
    /// The caller's user-mode accesses to its whole working set: the MMU sets the ptes'
    /// young bits (no kernel entry; what swapped out comes back through
    /// [`Syscall::TouchWorkingSet`](crate::workload::syscall::Syscall::TouchWorkingSet)).
    pub(crate) fn touch_memory(&mut self) {
        self.st.mm.reference(self.mm);
    }
    /// The workload's script has ended (its shell exits): the run's measurement window may
    /// close.
    pub(crate) fn workload_done(&mut self) {
        self.st.workload_done = Some(self.now);
    }
    /// What `stat()` says of `file`'s size, in pages (`None`: no such file).
    pub(crate) fn file_pages(&self, file: u32) -> Option<u64> {
        self.st.mm.files().get(&file).map(|f| f.size)
    }

    /// The kernel's state, for the kernel's own threads ([`crate::cpu::kthreads`]: their
    /// passes are kernel code). No workload calls it (tests/only_place.rs).
    pub(crate) fn kthread_state(&mut self) -> &mut FsState {
        self.st
    }
}
