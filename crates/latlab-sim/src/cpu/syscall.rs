//! The system-call table: [`Syscall::path`] (called by the CPU loop as the program returns,
//! before any other kernel work) turns a workload's typed call
//! ([`crate::workload::syscall::Syscall`]) into the kernel code path it runs. This is the one
//! place that builds a workload's system-call paths.

use crate::fs::ext3::{sys_create, sys_lookup, sys_lstat_tree, sys_read};
use crate::fs::state::FsState;
use crate::fs::{nfs, vfs};
use crate::kernel::catalog::Point;
use crate::kernel::futex;
use crate::kernel::path::{once, point, Chan, Ctx, LoopStep, Path, Script, Step, Work};
use crate::kernel::pipe;
use crate::kernel::posix_timer;
use crate::kernel::state::KReq;
use crate::kernel::task::Task;
use crate::machine::MachineProfile;
use crate::workload::syscall::Syscall;
use latlab_core::Nanos;
use smallvec::smallvec;
use std::cell::Cell;
use std::rc::Rc;

impl Syscall {
    /// The code path this call runs for the caller `t`.
    #[inline]
    pub(crate) fn path(self, k: &mut FsState, m: &MachineProfile, t: &Task) -> Box<dyn Path<FsState>> {
        let mm = t.mm;
        match self {
            Syscall::Fault { pages } => crate::mm::memory::fault_in(mm, pages),
            Syscall::TouchWorkingSet => crate::mm::swap_in::touch_working_set(mm),
            Syscall::Munmap { pages } => crate::mm::memory::sys_munmap(mm, pages),
            Syscall::Lookup { file } => sys_lookup(k, file),
            Syscall::LstatTree { first_night, nth } => sys_lstat_tree(k, first_night, nth),
            Syscall::Creat { pages, ret } => {
                let f = k.mm.create_file(pages);
                ret(f);
                sys_create(f)
            }
            Syscall::Read { file, page, bytes } => sys_read(file, page, bytes),
            Syscall::Write { file, bytes } => vfs::write(k, file, bytes),
            Syscall::Rewrite { file, page, bytes } => vfs::rewrite(k, file, page, bytes),
            Syscall::Ftruncate { file, pages } => vfs::ftruncate(k, file, pages),
            Syscall::Unlink { file } => vfs::unlink(k, file),
            Syscall::Setattr => once("ext3_setattr", k.c.setattr),
            Syscall::Fstat => once("sys_fstat", k.c.fstat),
            Syscall::Sync | Syscall::Fsync => vfs::sync(k),
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
            Syscall::RtcRead { buf } => crate::dev::rtc::rtc_read(buf),
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
            Syscall::FutexWait { futex } => futex::sys_futex_wait(futex, futex::plist_prio(t.policy, t.rt_priority)),
            Syscall::FutexWake { futex, n } => futex::sys_futex_wake(futex, n),
            Syscall::ForkExec => once("do_fork", k.c.fork_exec),
        }
    }
}

/// Wait for `ns` of network transfer (NFS read, cvs): the task sleeps until the data is in.
fn net_read(k: &mut FsState, ns: Nanos) -> Box<dyn Path<FsState>> {
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

impl Path<FsState> for NetRead {
    fn name(&self) -> &'static str {
        "sock_recvmsg"
    }
    fn next(&mut self, k: &mut FsState, cx: &Ctx) -> Step {
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
fn read_zero(bytes: u64) -> Box<dyn Path<FsState>> {
    Box::new(ReadZero {
        pages: bytes.div_ceil(4096),
        done: false,
    })
}

struct ReadZero {
    pages: u64,
    done: bool,
}

impl Path<FsState> for ReadZero {
    fn name(&self) -> &'static str {
        "read_zero"
    }
    fn next(&mut self, k: &mut FsState, _cx: &Ctx) -> Step {
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
fn urandom_read(k: &FsState, bytes: u64) -> Box<dyn Path<FsState>> {
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

impl Path<FsState> for SendMsg {
    fn name(&self) -> &'static str {
        "sys_sendmsg"
    }
    fn next(&mut self, k: &mut FsState, _cx: &Ctx) -> Step {
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

impl Path<FsState> for Select {
    fn name(&self) -> &'static str {
        "sys_select"
    }
    fn next(&mut self, _k: &mut FsState, _cx: &Ctx) -> Step {
        if self.queued.get() > 0 {
            Step::Done
        } else {
            Step::Block(self.chan)
        }
    }
}
