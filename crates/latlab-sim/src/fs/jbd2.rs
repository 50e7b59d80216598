//! jbd2's ordered data as 6.18 has it (fs/jbd2/commit.c `journal_submit_data_buffers`,
//! `journal_finish_inode_data_buffers`; fs/jbd2/transaction.c `jbd2_journal_inode_ranged_write`
//! / `_wait`; fs/ext4/ext4_jbd2.c `ext4_jbd2_inode_add_write` / `_wait`;
//! fs/ext4/super.c `ext4_journal_submit_inode_data_buffers`), as of v6.18.
//!
//! jbd's ordered mode filed every data buffer on the transaction's `t_sync_datalist`, which
//! the commit walked under `journal_datalist_lock` ([`crate::fs::commit`]). jbd2 files the
//! *inode*: a handle that allocates blocks whose data must reach the disk before the commit
//! puts the inode on the running transaction's `t_inode_list` with `JI_WRITE_DATA` (the
//! commit writes it) and/or `JI_WAIT_DATA` (the commit waits for it). The commit's data
//! phase:
//! - `journal_submit_data_buffers`: under `j_list_lock`, step to the next inode and set
//!   `JI_COMMIT_RUNNING`; drop the lock; `j_submit_inode_data_buffers` (ext4's
//!   `ext4_journal_submit_inode_data_buffers`: `filemap_fdatawrite` with `can_map = 0`, so
//!   under delalloc only folios whose blocks are already mapped); take the lock again.
//! - `journal_finish_inode_data_buffers`: the same walk, waiting for each inode's data
//!   (`filemap_fdatawait_range_keep_errors`) with the lock dropped.
//!
//! The metadata, descriptor and commit-block phases are jbd's ([`crate::fs::commit`]),
//! unchanged in what the model counts. ext4 adds an inode only for blocks it allocates
//! written (`ext4_map_blocks`); under dioread_nolock its writeback allocates them unwritten
//! ([`crate::fs::ext4::Ext4::dioread_nolock`]), so in the model's runs the list stays
//! empty and the commit writes metadata only.

use crate::fs::ext4::{ext4_writepages, Mode};
use crate::fs::jbd::Journal;
use crate::fs::state::FsState;
use crate::kernel::lock::Lock;
use crate::kernel::path::{Chan, Ctx, Nested, Path, Step, Work};

/// A `jbd2_inode` on a transaction's list: what the commit does with its data.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct JInode {
    /// `JI_WRITE_DATA`: the commit submits its data.
    pub write: bool,
    /// `JI_WAIT_DATA`: the commit waits for its data.
    pub wait: bool,
}

impl Journal {
    /// Does the journal order data by inode (jbd2)?
    pub fn orders_by_inode(&self) -> bool {
        self.by_inode
    }

    /// `jbd2_journal_inode_ranged_write` (`write`) or `_wait`: `file`'s inode joins the
    /// running transaction's list (a flag more if it is there already).
    pub fn add_inode(&mut self, file: u32, write: bool) {
        let ji = self.running.jinodes.entry(file).or_default();
        ji.write |= write;
        ji.wait = true;
    }

    /// The committing transaction's inodes, in list order.
    fn committing_inodes(&self) -> Vec<(u32, JInode)> {
        self.committing
            .as_ref()
            .map(|t| t.jinodes.iter().map(|(&f, &j)| (f, j)).collect())
            .unwrap_or_default()
    }
}

/// The commit's data phase: submit, then wait, inode by inode.
pub fn commit_data_phase(k: &FsState) -> Box<dyn Path<FsState>> {
    Box::new(DataPhase {
        inodes: k.jbd.committing_inodes(),
        at: 0,
        finishing: false,
        stepped: false,
        sub: Nested::default(),
    })
}

struct DataPhase {
    inodes: Vec<(u32, JInode)>,
    /// The inode the walk is at.
    at: usize,
    /// In `journal_finish_inode_data_buffers` (else `journal_submit_data_buffers`).
    finishing: bool,
    /// The list step to `inodes[at]` is done (under `j_list_lock`).
    stepped: bool,
    sub: Nested<FsState>,
}

impl Path<FsState> for DataPhase {
    fn name(&self) -> &'static str {
        "jbd2_journal_commit_transaction"
    }
    fn next(&mut self, k: &mut FsState, cx: &Ctx) -> Step {
        loop {
            if let Some(s) = self.sub.next(k, cx) {
                return s;
            }
            let Some(&(file, ji)) = self.inodes.get(self.at) else {
                if self.finishing {
                    return Step::Done;
                }
                (self.finishing, self.at) = (true, 0);
                continue;
            };
            let func = if self.finishing {
                "journal_finish_inode_data_buffers"
            } else {
                "journal_submit_data_buffers"
            };
            if !std::mem::replace(&mut self.stepped, true) {
                // The list step, JI_COMMIT_RUNNING set or cleared; the lock is dropped after.
                return Work::locked(func, k.c.jbd2_inode_step, Lock::JList, false);
            }
            if !self.finishing {
                (self.at, self.stepped) = (self.at + 1, false);
                if ji.write {
                    // j_submit_inode_data_buffers, j_list_lock not held.
                    self.sub.start(ext4_writepages(file, Mode::MappedOnly));
                }
                continue;
            }
            // filemap_fdatawait_range_keep_errors, j_list_lock not held.
            if let Some(id) = k.buf.last_inflight_of(file).and_then(|s| k.disk.req_of_seq(s)) {
                return Step::Block(Chan::Io(id));
            }
            (self.at, self.stepped) = (self.at + 1, false);
        }
    }
    fn advanced(&mut self, k: &mut FsState, cx: &Ctx, done: u64) {
        self.sub.advanced(k, cx, done);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::tests::{kstate, run_to_sleep};
    use crate::fs::commit::journal_commit_transaction;
    use crate::fs::ext4::tests::kstate618;
    use crate::fs::ext4::{ext4_write, ext4_writepages};
    use crate::kernel::path::LoopStep;

    /// A step that holds a lock: (function, lock, items or 1, held after it).
    type Locked = (&'static str, Lock, u64, bool);

    /// Run kjournald's commit; each sleep on a disk request ends with every write done.
    /// Returns its steps that hold a lock, and its loops.
    fn commit_locked_steps(k: &mut FsState) -> (Vec<Locked>, Vec<LoopStep>) {
        let cx = Ctx { now: 0, pid: 4 };
        let mut p = journal_commit_transaction(false);
        let (mut locked, mut loops) = (Vec::new(), Vec::new());
        for _ in 0..10_000 {
            match p.next(k, &cx) {
                Step::Loop(l) => {
                    p.advanced(k, &cx, l.items);
                    if let Some(lock) = l.lock {
                        locked.push((l.func, lock, l.items, l.hold));
                    }
                    loops.push(l);
                }
                Step::Work(w) => {
                    if let Some(lock) = w.lock {
                        locked.push((w.func, lock, 1, w.hold));
                    }
                }
                Step::Block(Chan::Io(_)) => {
                    let hi = k.buf.next_seq();
                    let n = hi - k.buf.done_hi();
                    k.buf.io_done(hi, n);
                }
                Step::Block(c) => panic!("the commit slept on {c:?}"),
                Step::Done => return (locked, loops),
            }
        }
        panic!("the commit did not finish")
    }

    #[test]
    fn jbd2s_commit_drops_j_list_lock_across_each_inodes_data_where_jbd_walks_its_datalist_under_the_lock() {
        // jbd2: a file whose mapped blocks were written again, its inode on the list to write.
        let mut k = kstate618();
        let f = k.mm.create_file(256);
        assert_eq!(run_to_sleep(&mut k, ext4_write(f, None, 1 << 20)), None);
        assert_eq!(run_to_sleep(&mut k, ext4_writepages(f, Mode::Sync)), None);
        assert_eq!(run_to_sleep(&mut k, ext4_write(f, Some(0), 64 * 4096)), None);
        assert_eq!(k.buf.pending_of(f), 64);
        k.jbd.add_inode(f, true);
        let (locked, loops) = commit_locked_steps(&mut k);
        // j_list_lock is held only for the list steps (submit, then finish), dropped after each.
        assert_eq!(
            locked,
            [
                ("journal_submit_data_buffers", Lock::JList, 1, false),
                ("journal_finish_inode_data_buffers", Lock::JList, 1, false)
            ]
        );
        // The inode's data went out with no lock held, and only its mapped pages.
        assert!(loops
            .iter()
            .any(|l| l.func == "mpage_prepare_extent_to_map" && l.items == 64));
        assert_eq!(k.buf.pending_of(f), 0);
        assert_eq!(k.jbd.commits(), 1);

        // jbd (2.6): the commit's data buffers are walked under journal_datalist_lock.
        let mut k = kstate();
        k.jbd = Journal::new(false, false);
        let f = k.mm.create_file(256);
        assert_eq!(run_to_sleep(&mut k, crate::fs::ext3::sys_write(f, 1 << 20)), None);
        let (locked, _) = commit_locked_steps(&mut k);
        let walked = locked
            .iter()
            .filter(|&&(func, lock, _, _)| func == "journal_commit_transaction" && lock == Lock::JournalDatalist)
            .map(|&(_, _, n, _)| n)
            .max();
        assert_eq!(
            walked,
            Some(256),
            "the walk all the way round unfiles every buffer in one stretch"
        );
    }
}
