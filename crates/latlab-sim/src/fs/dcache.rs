//! The dentry and inode caches' unused lists (fs/dcache.c, fs/inode.c, 2.4), as counts.
//!
//! `prune_dcache(count)` walks `dentry_unused` from its tail under `dcache_lock`: a dentry
//! with DCACHE_REFERENCED set is skipped (flag cleared, moved to the head), others are freed
//! (`prune_one_dentry`, which drops the lock in `dentry_iput`). `prune_icache(goal)` walks
//! `inode_unused` under `inode_lock`, skipping inodes that still have page-cache pages
//! (`CAN_UNUSE` fails), until `goal` inodes are freeable. The model keeps the list lengths
//! and flags as counts and assumes referenced/unreferenced (and with/without pages) entries
//! are evenly mixed along the lists. The inodes on `s_dirty` (fs/inode.c
//! `__mark_inode_dirty`), which kupdated and sync walk, are kept by file.
//!
//! Files the workload made keep their place in these counts: a file's dentry sits on
//! `dentry_unused` until `prune_dcache` frees it, its inode then on `inode_unused` until
//! `prune_icache` frees that too. Deleting or looking up such a file takes it off whichever
//! list holds it (fs/namei.c: the lookup's `iget` finds the inode in the hash and takes it
//! off `inode_unused`; the unlink's `iput` frees it). Of what a prune frees, the workload's
//! files take their share of the list (the evenly-mixed assumption again), oldest first.

use std::collections::BTreeSet;

#[derive(Debug, Default)]
pub struct Dcache {
    /// Inodes on their superblock's `s_dirty` list (`__mark_inode_dirty`: a write's mtime
    /// update, a new inode), by file, oldest first.
    pub(super) dirty_inodes: BTreeSet<u32>,
    /// Dentries on `dentry_unused`.
    pub(super) dentries_unused: u64,
    /// Of those, with DCACHE_REFERENCED set.
    pub(super) referenced: u64,
    /// Inodes on `inode_unused`.
    pub(super) inodes_unused: u64,
    /// Of those, still holding page-cache pages.
    pub(super) inodes_with_pages: u64,
    /// Files made by the workload (creat()) and not deleted, by where their entries are.
    made: Made,
    /// Running remainder that spreads the inodes leaving `inode_unused` over those with and
    /// without pages in proportion to their counts (error diffusion, no randomness); always
    /// below `inodes_unused` (or 0).
    pages_carry: u64,
}

/// The workload's live files by where their cache entries are, oldest (lowest id) first:
/// dentry on `dentry_unused`; only the inode left, on `inode_unused`; neither.
#[derive(Debug, Default)]
struct Made {
    dentry: BTreeSet<u32>,
    inode_only: BTreeSet<u32>,
    evicted: BTreeSet<u32>,
}

/// How many of the workload's live files are in each place ([`Dcache::files`]).
#[cfg(test)]
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct FilePlaces {
    pub dentry: u64,
    pub inode_only: u64,
    pub evicted: u64,
}

/// Move the `n` oldest files of `from` to `to`.
fn move_oldest(from: &mut BTreeSet<u32>, to: &mut BTreeSet<u32>, n: u64) {
    for _ in 0..n {
        let Some(f) = from.pop_first() else { break };
        to.insert(f);
    }
}

/// What one prune_dcache() walk does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DcachePrune {
    /// Referenced dentries skipped, in total.
    pub skipped: u64,
    /// Dentries freed.
    pub pruned: u64,
}

impl Dcache {
    /// `dentry_stat.nr_unused`.
    pub fn dentries_unused(&self) -> u64 {
        self.dentries_unused
    }
    /// Unused dentries with DCACHE_REFERENCED set.
    pub fn referenced(&self) -> u64 {
        self.referenced
    }
    /// `inodes_stat.nr_unused`.
    pub fn inodes_unused(&self) -> u64 {
        self.inodes_unused
    }
    /// Inodes on the super block's `s_dirty` list.
    pub fn nr_dirty_inodes(&self) -> u64 {
        self.dirty_inodes.len() as u64
    }
    /// The box's history left its unused dentries unreferenced (no lookup since the last
    /// prune cleared DCACHE_REFERENCED).
    pub fn forget_references(&mut self) {
        self.referenced = 0;
    }
    /// A file was looked up or created and released (dput): its dentry is unused+referenced.
    pub fn touch_new(&mut self) {
        self.dentries_unused += 1;
        self.referenced += 1;
    }

    /// A file outside the workload's was looked up for the first time and released: its new
    /// dentry (`d_alloc`) goes on `dentry_unused` without DCACHE_REFERENCED, which only a
    /// later lookup's `d_lookup` hit sets.
    pub fn looked_up_once(&mut self) {
        self.dentries_unused += 1;
    }

    /// creat() of a new file by the workload: its dentry goes unused+referenced on dput.
    pub fn created(&mut self, file: u32) {
        self.touch_new();
        self.made.dentry.insert(file);
    }

    /// How many of the workload's live files are in each place.
    #[cfg(test)]
    pub fn files(&self) -> FilePlaces {
        FilePlaces {
            dentry: self.made.dentry.len() as u64,
            inode_only: self.made.inode_only.len() as u64,
            evicted: self.made.evicted.len() as u64,
        }
    }

    /// A lookup of `file`: a cached dentry gets DCACHE_REFERENCED. For one of the
    /// workload's files whose dentry was pruned, the dentry is made again (`d_alloc`) and
    /// its inode taken off `inode_unused` or read back (`iget`).
    pub fn touch_existing(&mut self, file: u32) {
        if self.take_pruned(file) {
            self.made.dentry.insert(file);
            self.touch_new();
        } else {
            self.hit_unused();
        }
    }

    /// A lookup's `d_lookup` hit a cached, unused dentry: it gets DCACHE_REFERENCED (one
    /// without it, while any is left).
    pub fn hit_unused(&mut self) {
        if self.referenced < self.dentries_unused {
            self.referenced += 1;
        }
    }

    /// If `file` is one of the workload's files whose dentry was pruned, take it off the
    /// lists that still hold it (its inode off `inode_unused`, if not freed too) and say so.
    fn take_pruned(&mut self, file: u32) -> bool {
        if self.made.inode_only.remove(&file) {
            self.off_inode_unused();
            return true;
        }
        self.made.evicted.remove(&file)
    }

    /// An inode leaves `inode_unused` (looked up again, or its file deleted); whether it held
    /// pages is drawn in proportion to the list's counts.
    fn off_inode_unused(&mut self) {
        if self.inodes_unused == 0 {
            return;
        }
        self.pages_carry += self.inodes_with_pages;
        if self.pages_carry >= self.inodes_unused {
            self.pages_carry -= self.inodes_unused;
            self.inodes_with_pages -= 1;
        }
        self.inodes_unused -= 1;
        self.keep_carry();
    }

    /// Keep the running remainder below the list's length, so that an inode leaving the list
    /// is drawn as one with pages only while some are counted (`inodes_with_pages` never goes
    /// below zero, whatever shortened the list or took pages meanwhile).
    fn keep_carry(&mut self) {
        self.pages_carry = self.pages_carry.min(self.inodes_unused.saturating_sub(1));
    }

    /// `mark_inode_dirty(inode)` of `file`'s inode.
    pub fn mark_inode_dirty(&mut self, file: u32) {
        self.dirty_inodes.insert(file);
    }

    /// `__sync_one` wrote the `n` oldest dirty inodes (for ext3, without I/O).
    pub fn synced(&mut self, n: u64) {
        for _ in 0..n {
            if self.dirty_inodes.pop_first().is_none() {
                break;
            }
        }
    }

    /// A file was deleted: its dentry and inode go away (`iput` takes a freed inode off
    /// `s_dirty`).
    pub fn delete_file(&mut self, file: u32) {
        self.dirty_inodes.remove(&file);
        if !self.take_pruned(file) {
            self.made.dentry.remove(&file);
            self.delete();
        }
    }

    /// A file was deleted: its dentry and inode go away.
    fn delete(&mut self) {
        if self.dentries_unused > 0 {
            if self.referenced == self.dentries_unused {
                self.referenced -= 1;
            }
            self.dentries_unused -= 1;
        }
    }

    /// Plan a `prune_dcache(count)` walk.
    pub fn plan_prune_dcache(&self, count: u64) -> DcachePrune {
        let unref = self.dentries_unused - self.referenced;
        let pruned = count.min(self.dentries_unused);
        if pruned == 0 {
            return DcachePrune { skipped: 0, pruned: 0 };
        }
        // Evenly mixed: to find `pruned` unreferenced ones we pass pruned*ref/unref referenced
        // ones; if there are too few unreferenced, the walk clears every flag first.
        let skipped = if unref >= pruned {
            (pruned as u128 * self.referenced as u128 / unref.max(1) as u128) as u64
        } else {
            self.referenced
        };
        DcachePrune { skipped, pruned }
    }

    /// Apply `skipped` referenced skips and `pruned` prunes (inodes with pages move to
    /// `inode_unused`; `with_pages_share` is the fraction of files still cached, in 1/1024).
    pub fn apply_prune_dcache(&mut self, skipped: u64, pruned: u64, with_pages_share: u64) {
        self.referenced -= skipped.min(self.referenced);
        let pruned = pruned.min(self.dentries_unused);
        let ours = share_of(pruned, self.made.dentry.len() as u64, self.dentries_unused);
        move_oldest(&mut self.made.dentry, &mut self.made.inode_only, ours);
        self.dentries_unused -= pruned;
        self.referenced = self.referenced.min(self.dentries_unused);
        self.inodes_unused += pruned;
        self.inodes_with_pages += pruned * with_pages_share / 1024;
    }

    /// Plan a `prune_icache(goal)` walk: (inodes visited, inodes freed).
    pub fn plan_prune_icache(&self, goal: u64) -> (u64, u64) {
        let freeable = self.inodes_unused - self.inodes_with_pages;
        if goal == 0 || self.inodes_unused == 0 {
            return (0, 0);
        }
        if freeable >= goal {
            let visited = goal + (goal as u128 * self.inodes_with_pages as u128 / freeable.max(1) as u128) as u64;
            (visited, goal)
        } else {
            (self.inodes_unused, freeable)
        }
    }

    pub fn apply_prune_icache(&mut self, freed: u64) {
        let freed = freed.min(self.inodes_unused - self.inodes_with_pages);
        let ours = share_of(freed, self.made.inode_only.len() as u64, self.inodes_unused);
        move_oldest(&mut self.made.inode_only, &mut self.made.evicted, ours);
        self.inodes_unused -= freed;
        self.keep_carry();
    }

    /// Reclaim took every page of `n` unused inodes: they become freeable.
    pub fn pages_dropped(&mut self, n: u64) {
        self.inodes_with_pages -= n.min(self.inodes_with_pages);
    }
}

/// Of `n` entries taken evenly from a list of `len`, how many of its `part` (rounded).
fn share_of(n: u64, part: u64, len: u64) -> u64 {
    if len == 0 {
        return 0;
    }
    ((n as u128 * part as u128 + len as u128 / 2) / len as u128).min(part as u128) as u64
}

#[cfg(test)]
impl Dcache {
    /// `n` unused inodes (other folders' tests of `prune_icache`).
    pub(crate) fn set_inodes_unused(&mut self, n: u64) {
        self.inodes_unused = n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inodes_leave_the_unused_list_after_reclaim_took_their_pages() {
        // Three unused inodes, one with pages: one leaves, reclaim takes the pages of the one
        // that held them, the other two leave. The count with pages must not go below zero.
        let unused = |n, with_pages| Dcache {
            inodes_unused: n,
            inodes_with_pages: with_pages,
            ..Dcache::default()
        };
        let mut d = unused(3, 1);
        d.off_inode_unused();
        d.pages_dropped(1);
        d.off_inode_unused();
        d.off_inode_unused();
        assert_eq!((d.inodes_unused, d.inodes_with_pages), (0, 0));
        // And after a prune_icache shortened the list under the running remainder.
        let mut d = unused(4, 2);
        d.off_inode_unused();
        d.apply_prune_icache(1);
        d.pages_dropped(2);
        while d.inodes_unused > 0 {
            d.off_inode_unused();
        }
        assert_eq!(d.inodes_with_pages, 0);
    }

    #[test]
    fn prune_walks_referenced_entries() {
        let mut d = Dcache::default();
        for _ in 0..1000 {
            d.touch_new();
        }
        // All referenced: the walk clears every flag before it can free anything.
        assert_eq!(
            d.plan_prune_dcache(100),
            DcachePrune {
                skipped: 1000,
                pruned: 100
            }
        );
        d.apply_prune_dcache(1000, 100, 512);
        assert_eq!((d.dentries_unused, d.referenced), (900, 0));
        assert_eq!((d.inodes_unused, d.inodes_with_pages), (100, 50));
        assert_eq!(d.plan_prune_icache(10), (20, 10));
        assert_eq!(d.plan_prune_icache(80), (100, 50));
    }

    /// A cache holding `n` files the workload just made.
    fn made(n: u32) -> Dcache {
        let mut d = Dcache::default();
        for f in 0..n {
            d.created(f);
        }
        d
    }

    #[test]
    fn deleting_a_pruned_file_takes_its_inode_off_the_unused_list() {
        let mut d = made(1000);
        // The walk clears the flags, then prunes 600 dentries; all their inodes hold pages.
        d.apply_prune_dcache(1000, 600, 1024);
        assert_eq!(
            (d.dentries_unused, d.inodes_unused, d.inodes_with_pages),
            (400, 600, 600)
        );
        assert_eq!(
            d.files(),
            FilePlaces {
                dentry: 400,
                inode_only: 600,
                evicted: 0
            }
        );
        // prune_icache can free none of them (pages), so nothing moves.
        d.apply_prune_icache(0);
        for f in 0..1000 {
            d.delete_file(f);
        }
        // Every file's entries went with it, wherever they were: no inode is left behind for
        // prune_icache to walk past.
        assert_eq!((d.dentries_unused, d.inodes_unused, d.inodes_with_pages), (0, 0, 0));
        assert_eq!(d.files(), FilePlaces::default());
    }

    #[test]
    fn looking_up_a_pruned_file_makes_its_dentry_again() {
        let mut d = made(100);
        d.apply_prune_dcache(100, 100, 0);
        // The inodes had no pages: prune_icache frees them all.
        d.apply_prune_icache(100);
        assert_eq!(d.files().evicted, 100);
        assert_eq!((d.dentries_unused, d.inodes_unused), (0, 0));
        for f in 0..100 {
            d.touch_existing(f);
        }
        assert_eq!(d.files().dentry, 100);
        assert_eq!((d.dentries_unused, d.referenced), (100, 100));
        // A file the workload did not make (the kernel tree on disk) only sets the flag.
        let before = (d.dentries_unused, d.files());
        d.touch_existing(5000);
        assert_eq!(before, (d.dentries_unused, d.files()));
    }
}
