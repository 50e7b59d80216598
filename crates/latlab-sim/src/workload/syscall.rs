//! The system calls a workload makes, as a typed set: a program returns
//! [`crate::workload::Action::Call`] with one of them, and the CPU loop's system-call table
//! (`Syscall::path` in [`crate::cpu::syscall`]) turns it into the kernel code path it runs.
//! Programs hand over only their arguments (files, sizes, offsets) and, for a call that
//! returns something (`creat`'s new file, `read` of /dev/rtc's data), where to put it.

use crate::fs::nfs::NfsFile;
use crate::kernel::futex::Futex;
use crate::kernel::path::Chan;
use crate::kernel::pipe::Pipe;
use crate::kernel::posix_timer::SigInfo;
use latlab_core::Nanos;
use std::cell::Cell;
use std::rc::Rc;

/// Where a call that makes something hands it back: the program's continuation, called
/// with the result before the call's path runs (as `creat()` returns its descriptor).
pub type Ret<T> = Box<dyn FnOnce(T)>;

/// A system call (or trap) of a user program, with its arguments. Files are the model's
/// inode numbers; sizes in bytes unless named `pages` (4 KiB) or `page` (an offset in
/// pages).
pub enum Syscall {
    /// Page faults on `pages` new pages of the caller's address space (brk/mmap, touched).
    Fault { pages: u64 },
    /// The caller touches its whole working set again: faults on what was swapped out.
    TouchWorkingSet,
    /// `munmap` of `pages` of the caller's mapping.
    Munmap { pages: u64 },
    /// `open()`'s path lookup of `file`.
    Lookup { file: u32 },
    /// updatedb's `lstat()` of its `nth` name (`first_night`: the dentry is not cached yet).
    LstatTree { first_night: bool, nth: u64 },
    /// `creat()` of a new file of `pages` (its blocks reserved): the new file goes to `ret`.
    Creat { pages: u64, ret: Ret<u32> },
    /// `read()` of `bytes` of `file` from page `page`.
    Read { file: u32, page: u64, bytes: u64 },
    /// `write()` of `bytes` appended to `file`.
    Write { file: u32, bytes: u64 },
    /// `write()` of `bytes` over `file`'s existing data from page `page`.
    Rewrite { file: u32, page: u64, bytes: u64 },
    /// `ftruncate()` of `file` to `pages`.
    Ftruncate { file: u32, pages: u64 },
    /// `unlink()` of `file`.
    Unlink { file: u32 },
    /// `chmod`/`ftruncate64`-style attribute change (`ext3_setattr`).
    Setattr,
    /// `fstat()`.
    Fstat,
    /// `sync()`.
    Sync,
    /// `fsync()` of a benchmark whose files hold the only dirty data on the box: the model's
    /// `sync` (2.6.17's ext3 ordered `fsync` commits the running transaction, whose data
    /// list holds every file's dirty buffers).
    Fsync,
    /// `creat()` on the NFS mount of a file of `pages`: the new file goes to `ret`.
    NfsCreate { pages: u64, ret: Ret<NfsFile> },
    /// `write()` of `bytes` to an NFS file.
    NfsWrite { file: NfsFile, bytes: u64 },
    /// `read()` of `bytes` of an NFS file from page `page`.
    NfsRead { file: NfsFile, page: u64, bytes: u64 },
    /// `open()`'s lookup of an NFS file.
    NfsLookup { file: NfsFile },
    /// `unlink()` of an NFS file.
    NfsUnlink { file: NfsFile },
    /// `recv()` of `bytes` from the network (NFS read, cvs): the task sleeps while they come.
    NetRecv { bytes: u64 },
    /// A loopback TCP send of `bytes` ([`crate::net::tcp_send`]).
    TcpSend { bytes: u64 },
    /// A loopback TCP receive of `bytes` already queued.
    TcpRecv { bytes: u64 },
    /// A pipe `write()` of `bytes` (at most PIPE_BUF).
    PipeWrite { bytes: u64 },
    /// A pipe `read()` of `bytes`.
    PipeRead { bytes: u64 },
    /// `read()` of `bytes` of /dev/zero.
    ReadZero { bytes: u64 },
    /// `read()` of `bytes` of /dev/urandom.
    UrandomRead { bytes: u64 },
    /// `read()` of /dev/rtc: blocks until an interrupt; the data (when the interrupt came,
    /// how many it counts) goes to `buf`.
    RtcRead { buf: Rc<Cell<Option<(Nanos, u64)>>> },
    /// A fault on garbage code (crashme): the SIGSEGV's delivery, whose handler longjmps.
    BadInstruction,
    /// `pause()` until the timer's signal, then `do_signal`'s frame for its handler; the
    /// signal's info goes to `info`.
    Pause { info: Rc<Cell<Option<SigInfo>>> },
    /// `sigwaitinfo()` for the timer's signal; its info goes to `info`.
    Sigwaitinfo { info: Rc<Cell<Option<SigInfo>>> },
    /// `clone()` of a thread (pthread_create).
    CloneThread,
    /// `sendmsg()` of `bytes` on a local socket, waking the reader asleep on `wake`.
    SendMsg { wake: Option<Chan>, bytes: u64 },
    /// `select()` on a local socket until `queued` holds a request; asleep on `chan`.
    Select { queued: Rc<Cell<u32>>, chan: Chan },
    /// `read()` of up to `bytes` from a pipe another task writes: sleeps while it is empty
    /// ([`crate::kernel::pipe`]).
    PipeRecv { pipe: Rc<Pipe>, bytes: u64 },
    /// `write()` of `bytes` (at most PIPE_BUF) into a pipe another task reads: sleeps while
    /// they do not fit.
    PipeSend { pipe: Rc<Pipe>, bytes: u64 },
    /// `futex(FUTEX_WAIT)` of a semaphore's word ([`crate::kernel::futex`]).
    FutexWait { futex: Rc<Futex> },
    /// `futex(FUTEX_WAKE)` of up to `n` of a word's waiters.
    FutexWake { futex: Rc<Futex>, n: u32 },
    /// `fork()` and the child's `execve()` (the child itself is the program's
    /// [`crate::workload::Action::Spawn`] that follows).
    ForkExec,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_stays_small() {
        // Queued by the thousand (a dd's or a dt's calls): no larger than four words.
        assert!(
            std::mem::size_of::<Syscall>() <= 32,
            "{}",
            std::mem::size_of::<Syscall>()
        );
    }
}
