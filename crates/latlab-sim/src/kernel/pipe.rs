//! Pipes between tasks that wait for each other (fs/pipe.c, 6.x): a ring of
//! `PIPE_DEF_BUFFERS` pages; `pipe_read` sleeps on `pipe->rd_wait` while the pipe is empty,
//! `pipe_write` on `pipe->wr_wait` while a write of at most `PIPE_BUF` bytes does not fit
//! (such a write is atomic). A read that takes data from a full pipe wakes the writers
//! (`wake_up_interruptible_sync_poll(&pipe->wr_wait)`), a write into an empty pipe the
//! readers, each once its copy is done.
//!
//! The pipe's state lives here, shared by the tasks holding its two ends (as their file
//! descriptors share the `pipe_inode_info`); the paths below are the system calls.

use super::path::{Chan, CoreK, Ctx, Path, Step, Work};
use super::state::KReq;
use std::cell::Cell;
use std::rc::Rc;

/// `PIPE_DEF_BUFFERS` (16) pages of 4 KiB: the capacity of a pipe (include/linux/pipe_fs_i.h).
pub const PIPE_CAPACITY: u64 = 16 * 4096;
/// `PIPE_BUF`: the largest write that is atomic (include/uapi/linux/limits.h).
pub const PIPE_BUF: u64 = 4096;

/// One pipe (`struct pipe_inode_info`): the bytes queued in it.
#[derive(Debug)]
pub struct Pipe {
    id: u64,
    queued: Cell<u64>,
}

impl Pipe {
    /// Pipe number `id` (unique in the run: its wait queues' channels derive from it).
    pub fn new(id: u64) -> Rc<Pipe> {
        Rc::new(Pipe {
            id,
            queued: Cell::new(0),
        })
    }
    /// `pipe->rd_wait`.
    fn readers(&self) -> Chan {
        Chan::Pipe(2 * self.id)
    }
    /// `pipe->wr_wait`.
    fn writers(&self) -> Chan {
        Chan::Pipe(2 * self.id + 1)
    }
}

/// `read()` of up to `bytes` from `pipe`: sleeps while it is empty, then takes what is
/// queued (at most `bytes`).
pub fn sys_pipe_read<K: CoreK>(pipe: Rc<Pipe>, bytes: u64) -> Box<dyn Path<K>> {
    Box::new(PipeRw {
        pipe,
        bytes,
        write: false,
        wake: None,
        copied: false,
    })
}

/// `write()` of `bytes` (1..=PIPE_BUF, atomic) into `pipe`: sleeps while they do not fit.
pub fn sys_pipe_write<K: CoreK>(pipe: Rc<Pipe>, bytes: u64) -> Box<dyn Path<K>> {
    Box::new(PipeRw {
        pipe,
        bytes,
        write: true,
        wake: None,
        copied: false,
    })
}

struct PipeRw {
    pipe: Rc<Pipe>,
    bytes: u64,
    write: bool,
    /// The other end's wait queue, to wake once the copy is done.
    wake: Option<Chan>,
    copied: bool,
}

impl<K: CoreK> Path<K> for PipeRw {
    fn name(&self) -> &'static str {
        if self.write {
            "pipe_write"
        } else {
            "pipe_read"
        }
    }
    fn next(&mut self, k: &mut K, _cx: &Ctx) -> Step {
        let k = k.core();
        if self.copied {
            if let Some(c) = self.wake.take() {
                k.out.push(KReq::Wake(c));
            }
            return Step::Done;
        }
        let q = self.pipe.queued.get();
        let n = if self.write {
            if q + self.bytes > PIPE_CAPACITY {
                return Step::Block(self.pipe.writers());
            }
            // pipe_write wakes the readers when it made an empty pipe readable.
            self.wake = (q == 0).then(|| self.pipe.readers());
            self.pipe.queued.set(q + self.bytes);
            self.bytes
        } else {
            if q == 0 {
                return Step::Block(self.pipe.readers());
            }
            let n = q.min(self.bytes);
            // pipe_read wakes the writers when a full pipe has room again.
            self.wake = (q + PIPE_BUF > PIPE_CAPACITY).then(|| self.pipe.writers());
            self.pipe.queued.set(q - n);
            n
        };
        self.copied = true;
        Work::plain(<Self as Path<K>>::name(self), k.c.pipe_op + k.c.copy(n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::tests::{kstate, run_to_sleep};

    #[test]
    fn a_read_of_an_empty_pipe_sleeps_and_a_write_wakes_it() {
        let mut k = kstate();
        let p = Pipe::new(3);
        assert_eq!(run_to_sleep(&mut k, sys_pipe_read(p.clone(), 64)), Some(Chan::Pipe(6)));
        assert_eq!(run_to_sleep(&mut k, sys_pipe_write(p.clone(), 64)), None);
        assert!(
            matches!(k.out.as_slice(), [KReq::Wake(Chan::Pipe(6))]),
            "the write into an empty pipe wakes its readers"
        );
        k.out.clear();
        assert_eq!(run_to_sleep(&mut k, sys_pipe_read(p.clone(), 64)), None);
        assert!(k.out.is_empty(), "a pipe that was not full wakes no writer");
        assert_eq!(p.queued.get(), 0);
    }

    #[test]
    fn a_write_that_does_not_fit_sleeps_until_a_read_makes_room() {
        let mut k = kstate();
        let p = Pipe::new(0);
        for _ in 0..PIPE_CAPACITY / PIPE_BUF {
            assert_eq!(run_to_sleep(&mut k, sys_pipe_write(p.clone(), PIPE_BUF)), None);
        }
        assert_eq!(
            run_to_sleep(&mut k, sys_pipe_write(p.clone(), 1)),
            Some(Chan::Pipe(1)),
            "full"
        );
        k.out.clear();
        assert_eq!(run_to_sleep(&mut k, sys_pipe_read(p, 100)), None);
        assert!(matches!(k.out.as_slice(), [KReq::Wake(Chan::Pipe(1))]));
    }
}
