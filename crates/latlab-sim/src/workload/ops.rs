//! The queue a command's program runs from: pending system calls and compute bursts, queued
//! as closures so that a call can use what an earlier one made (a write the file its
//! `creat()` just made), and the file groups the commands of one script share.

use super::{Action, ProgCx, Program, TaskSpec};
use crate::fs::ext3::{sys_create, sys_lookup, sys_read, sys_unlink, sys_write};
use crate::kernel::path::{Chan, Ctx, Path, Step};
use crate::kernel::state::{KReq, KState};
use latlab_core::Nanos;
use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, VecDeque};
use std::rc::Rc;

/// Files by group name, shared by the commands of one script (`make clean` deletes what
/// `make` built).
#[derive(Default)]
pub struct Registry {
    groups: BTreeMap<String, Vec<u32>>,
}

impl Registry {
    pub(crate) fn add(&mut self, group: &str, f: u32) {
        self.groups.entry(group.to_string()).or_default().push(f);
    }
    pub(crate) fn take(&mut self, group: &str) -> Vec<u32> {
        self.groups.remove(group).unwrap_or_default()
    }
    pub(crate) fn remove(&mut self, group: &str, f: u32) {
        if let Some(v) = self.groups.get_mut(group) {
            v.retain(|&x| x != f);
        }
    }
    pub(crate) fn get(&self, group: &str) -> &[u32] {
        self.groups.get(group).map_or(&[], |v| v.as_slice())
    }
}

pub type Reg = Rc<RefCell<Registry>>;
type Op = Box<dyn FnOnce(&mut ProgCx) -> Option<Action>>;

/// A queue of pending system calls and compute bursts.
#[derive(Default)]
pub struct Ops {
    q: VecDeque<Op>,
}

/// Pages a small I/O program (dd, iozone, sysbench) touches besides its I/O buffer: its text,
/// data and stack and the libc pages it writes. An estimate: 200 KiB, the resident size such
/// a program showed in `ps` of the era less the shared, already resident, libc text.
pub(crate) const PROGRAM_PAGES: u64 = 50;

impl Ops {
    pub(crate) fn push(&mut self, f: impl FnOnce(&mut ProgCx) -> Option<Action> + 'static) {
        self.q.push_back(Box::new(f));
    }
    pub(crate) fn compute(&mut self, ns: Nanos) {
        self.push(move |_| Some(Action::Compute(ns)));
    }
    pub(crate) fn grow(&mut self, pages: u64) {
        self.push(move |cx| Some(Action::Syscall(crate::kernel::catalog::fault_in(cx.mm, pages))));
    }
    pub(crate) fn lookup(&mut self, f: u32) {
        self.push(move |cx| Some(Action::Syscall(sys_lookup(cx.st, f))));
    }
    pub(crate) fn read(&mut self, f: u32, bytes: u64) {
        self.push(move |_| Some(Action::Syscall(sys_read(f, 0, bytes))));
    }
    /// creat() of a file of `pages` (its blocks reserved); it joins `group`. The cell holds
    /// the file once the creat() has run, for the calls queued after it.
    pub(crate) fn create(&mut self, reg: &Reg, group: &'static str, pages: u64) -> Rc<Cell<u32>> {
        let cur = Rc::new(Cell::new(0u32));
        let (c, r) = (cur.clone(), reg.clone());
        self.push(move |cx| {
            let f = cx.st.mm.create_file(pages);
            r.borrow_mut().add(group, f);
            c.set(f);
            Some(Action::Syscall(sys_create(f)))
        });
        cur
    }
    /// creat() + write() in `chunk`-byte calls + close(); the file joins `group`.
    pub(crate) fn create_write(&mut self, reg: &Reg, group: &'static str, bytes: u64, chunk: u64) {
        let cur = self.create(reg, group, bytes.div_ceil(4096));
        let mut left = bytes;
        while left > 0 {
            let n = left.min(chunk);
            left -= n;
            let c = cur.clone();
            self.push(move |_| Some(Action::Syscall(sys_write(c.get(), n))));
        }
    }
    pub(crate) fn unlink(&mut self, f: u32) {
        self.push(move |_| Some(Action::Syscall(sys_unlink(f))));
    }
    pub(crate) fn net(&mut self, bytes: u64) {
        self.push(move |cx| Some(Action::Syscall(net_read(cx.st, cx.m.net_ns(bytes)))));
    }
    pub(crate) fn spawn(&mut self, spec: impl FnOnce(&mut ProgCx) -> TaskSpec + 'static) {
        self.push(move |cx| Some(Action::Spawn(spec(cx))));
    }
    pub(crate) fn pop(&mut self, cx: &mut ProgCx) -> Option<Action> {
        while let Some(op) = self.q.pop_front() {
            if let Some(a) = op(cx) {
                return Some(a);
            }
        }
        None
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

/// A program that queues its work a batch at a time (its [`Program`] impl below runs it).
pub(crate) trait Batches {
    fn ops(&mut self) -> &mut Ops;
    /// Queue the next batch of work; false when there is nothing more to do.
    fn refill(&mut self, cx: &mut ProgCx) -> bool;
}

/// Every [`Batches`] program runs the same way: its queue's next action, refilled as it
/// runs dry; it exits once it has nothing more to do.
impl<T: Batches> Program for T {
    fn next(&mut self, cx: &mut ProgCx) -> Action {
        loop {
            if let Some(a) = self.ops().pop(cx) {
                return a;
            }
            if !self.refill(cx) {
                return Action::Exit;
            }
        }
    }
}
