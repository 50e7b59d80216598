//! The system calls a workload makes, as a typed set: a program returns
//! [`crate::workload::Action::Call`] with one of them, and [`Syscall::path`] (called by the
//! CPU loop as the program returns, before any other kernel work) turns it into the kernel code
//! path it runs. This is the one place that builds a workload's system-call paths: programs
//! hand over only their arguments (files, sizes, offsets) and, for a call that returns
//! something (`creat`'s new file, `read` of /dev/rtc's data), where to put it.

use crate::fs::ext3::{
    sys_create, sys_ftruncate, sys_lookup, sys_lstat_tree, sys_read, sys_rewrite, sys_unlink, sys_write,
};
use crate::fs::flush::sys_sync;
use crate::fs::nfs::{self, NfsFile};
use crate::kernel::catalog::{self, Point};
use crate::kernel::futex::{self, Futex};
use crate::kernel::path::{once, point, Chan, Ctx, LoopStep, Path, Script, Step, Work};
use crate::kernel::pipe::{self, Pipe};
use crate::kernel::posix_timer::{self, SigInfo};
use crate::kernel::state::{KReq, KState};
use crate::machine::MachineProfile;
use latlab_core::Nanos;
use smallvec::smallvec;
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

impl Syscall {
    /// The code path this call runs for the caller, whose address space is `mm`.
    #[inline]
    pub(crate) fn path(self, k: &mut KState, m: &MachineProfile, mm: u32) -> Box<dyn Path> {
        match self {
            Syscall::Fault { pages } => catalog::fault_in(mm, pages),
            Syscall::TouchWorkingSet => crate::mm::swap_in::touch_working_set(mm),
            Syscall::Munmap { pages } => catalog::sys_munmap(mm, pages),
            Syscall::Lookup { file } => sys_lookup(k, file),
            Syscall::LstatTree { first_night, nth } => sys_lstat_tree(k, first_night, nth),
            Syscall::Creat { pages, ret } => {
                let f = k.mm.create_file(pages);
                ret(f);
                sys_create(f)
            }
            Syscall::Read { file, page, bytes } => sys_read(file, page, bytes),
            Syscall::Write { file, bytes } => sys_write(file, bytes),
            Syscall::Rewrite { file, page, bytes } => sys_rewrite(file, page, bytes),
            Syscall::Ftruncate { file, pages } => sys_ftruncate(file, pages),
            Syscall::Unlink { file } => sys_unlink(file),
            Syscall::Setattr => once("ext3_setattr", k.c.setattr),
            Syscall::Fstat => once("sys_fstat", k.c.fstat),
            Syscall::Sync | Syscall::Fsync => sys_sync(k.kthreads.kjournald),
            Syscall::NfsCreate { pages, ret } => {
                let f = nfs::new_file(k, pages);
                ret(f);
                nfs::nfs_create(k, f)
            }
            Syscall::NfsWrite { file, bytes } => nfs::nfs_write(k, file, bytes),
            Syscall::NfsRead { file, page, bytes } => nfs::nfs_read(k, file, page, bytes),
            Syscall::NfsLookup { file } => nfs::nfs_lookup(k, file),
            Syscall::NfsUnlink { file } => nfs::nfs_unlink(k, file),
            Syscall::NetRecv { bytes } => net_read(k, m.net_ns(bytes)),
            Syscall::TcpSend { bytes } => crate::net::tcp_send(k, bytes),
            Syscall::TcpRecv { bytes } => crate::net::tcp_recv(k, bytes),
            Syscall::PipeWrite { bytes } => crate::net::pipe_rw(k, true, bytes),
            Syscall::PipeRead { bytes } => crate::net::pipe_rw(k, false, bytes),
            Syscall::ReadZero { bytes } => read_zero(bytes),
            Syscall::UrandomRead { bytes } => urandom_read(k, bytes),
            Syscall::RtcRead { buf } => catalog::rtc_read(buf),
            Syscall::BadInstruction => once("do_signal", k.c.signal_fault),
            Syscall::Pause { info } => posix_timer::sys_pause(k, info),
            Syscall::Sigwaitinfo { info } => posix_timer::sys_sigwaitinfo(k, info),
            Syscall::CloneThread => posix_timer::sys_clone_thread(k),
            Syscall::SendMsg { wake, bytes } => Box::new(SendMsg {
                wake,
                ns: k.c.pipe_op + k.c.copy(bytes),
                done: false,
            }),
            Syscall::Select { queued, chan } => Box::new(Select { queued, chan }),
            Syscall::PipeRecv { pipe, bytes } => pipe::sys_pipe_read(pipe, bytes),
            Syscall::PipeSend { pipe, bytes } => pipe::sys_pipe_write(pipe, bytes),
            Syscall::FutexWait { futex } => futex::sys_futex_wait(futex),
            Syscall::FutexWake { futex, n } => futex::sys_futex_wake(futex, n),
            Syscall::ForkExec => once("do_fork", k.c.fork_exec),
        }
    }
}

/// Wait for `ns` of network transfer (NFS read, cvs): the task sleeps until the data is in.
fn net_read(k: &mut KState, ns: Nanos) -> Box<dyn Path> {
    k.net_token += 1;
    let chan = Chan::Net(k.net_token);
    Box::new(NetRead {
        chan,
        ns,
        waited: false,
    })
}

struct NetRead {
    chan: Chan,
    ns: Nanos,
    waited: bool,
}

impl Path for NetRead {
    fn name(&self) -> &'static str {
        "sock_recvmsg"
    }
    fn next(&mut self, k: &mut KState, cx: &Ctx) -> Step {
        if self.waited {
            return Step::Done;
        }
        self.waited = true;
        k.out.push(KReq::WakeAt {
            at: cx.now + self.ns,
            chan: self.chan,
        });
        Step::Block(self.chan)
    }
}

/// read(/dev/zero) of `bytes`: clear_user page by page, with the stock need_resched check.
fn read_zero(bytes: u64) -> Box<dyn Path> {
    Box::new(ReadZero {
        pages: bytes.div_ceil(4096),
        done: false,
    })
}

struct ReadZero {
    pages: u64,
    done: bool,
}

impl Path for ReadZero {
    fn name(&self) -> &'static str {
        "read_zero"
    }
    fn next(&mut self, k: &mut KState, _cx: &Ctx) -> Step {
        if self.done {
            return Step::Done;
        }
        self.done = true;
        LoopStep::plain(
            "read_zero",
            self.pages,
            k.c.page_copy,
            smallvec![point(Point::ReadZero, 1)],
        )
    }
}

/// A read of /dev/urandom: extract_entropy, one SHA-1 transform per 10 bytes handed out
/// (2.4 drivers/char/random.c), with the stock `need_resched` check before each.
fn urandom_read(k: &KState, bytes: u64) -> Box<dyn Path> {
    Box::new(Script {
        name: "urandom_read",
        steps: smallvec![LoopStep::plain(
            "extract_entropy",
            bytes.div_ceil(10),
            k.c.sha_transform,
            smallvec![point(Point::ExtractEntropy, 1)],
        )],
    })
}

/// `sendmsg` on a local socket (the X connection): the request queued, the reader woken.
struct SendMsg {
    wake: Option<Chan>,
    ns: Nanos,
    done: bool,
}

impl Path for SendMsg {
    fn name(&self) -> &'static str {
        "sys_sendmsg"
    }
    fn next(&mut self, k: &mut KState, _cx: &Ctx) -> Step {
        if std::mem::replace(&mut self.done, true) {
            if let Some(c) = self.wake {
                k.out.push(KReq::Wake(c));
            }
            return Step::Done;
        }
        Work::plain("unix_stream_sendmsg", self.ns)
    }
}

/// `select()` until a request is queued.
struct Select {
    queued: Rc<Cell<u32>>,
    chan: Chan,
}

impl Path for Select {
    fn name(&self) -> &'static str {
        "sys_select"
    }
    fn next(&mut self, _k: &mut KState, _cx: &Ctx) -> Step {
        if self.queued.get() > 0 {
            Step::Done
        } else {
            Step::Block(self.chan)
        }
    }
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
