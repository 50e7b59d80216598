//! The queue a command's program runs from: pending system calls and compute bursts, those
//! that need what an earlier call made (a write the file its `creat()` just made) queued as
//! closures; and the file groups the commands of one script share.

use super::{Action, ProgCx, Program, TaskSpec};
use crate::workload::syscall::Syscall;
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

/// One pending step: a system call or compute burst known when queued, or one that needs
/// what earlier calls made (a closure run when its turn comes; `None`: nothing to do).
enum Op {
    Call(Syscall),
    Compute(Nanos),
    Lazy(Later),
}

/// A step decided when its turn comes.
type Later = Box<dyn FnOnce(&mut ProgCx) -> Option<Action>>;

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
    /// A step decided when its turn comes.
    pub(crate) fn push(&mut self, f: impl FnOnce(&mut ProgCx) -> Option<Action> + 'static) {
        self.q.push_back(Op::Lazy(Box::new(f)));
    }
    pub(crate) fn call(&mut self, call: Syscall) {
        self.q.push_back(Op::Call(call));
    }
    pub(crate) fn compute(&mut self, ns: Nanos) {
        self.q.push_back(Op::Compute(ns));
    }
    pub(crate) fn grow(&mut self, pages: u64) {
        self.call(Syscall::Fault { pages });
    }
    pub(crate) fn lookup(&mut self, file: u32) {
        self.call(Syscall::Lookup { file });
    }
    pub(crate) fn read(&mut self, file: u32, bytes: u64) {
        self.call(Syscall::Read { file, page: 0, bytes });
    }
    /// creat() of a file of `pages` (its blocks reserved); it joins `group`. The cell holds
    /// the file once the creat() has run, for the calls queued after it.
    pub(crate) fn create(&mut self, reg: &Reg, group: &'static str, pages: u64) -> Rc<Cell<u32>> {
        let cur = Rc::new(Cell::new(0u32));
        let (c, r) = (cur.clone(), reg.clone());
        self.call(Syscall::Creat {
            pages,
            ret: Box::new(move |f| {
                r.borrow_mut().add(group, f);
                c.set(f);
            }),
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
            self.push(move |_| {
                Some(Action::Call(Syscall::Write {
                    file: c.get(),
                    bytes: n,
                }))
            });
        }
    }
    pub(crate) fn unlink(&mut self, file: u32) {
        self.call(Syscall::Unlink { file });
    }
    /// Wait for `bytes` from the network (NFS read, cvs).
    pub(crate) fn net(&mut self, bytes: u64) {
        self.call(Syscall::NetRecv { bytes });
    }
    pub(crate) fn spawn(&mut self, spec: impl FnOnce(&mut ProgCx) -> TaskSpec + 'static) {
        self.push(move |cx| Some(Action::Spawn(spec(cx))));
    }
    pub(crate) fn pop(&mut self, cx: &mut ProgCx) -> Option<Action> {
        while let Some(op) = self.q.pop_front() {
            match op {
                Op::Call(c) => return Some(Action::Call(c)),
                Op::Compute(ns) => return Some(Action::Compute(ns)),
                Op::Lazy(f) => {
                    if let Some(a) = f(cx) {
                        return Some(a);
                    }
                }
            }
        }
        None
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
