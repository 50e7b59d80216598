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

#[derive(Debug, Default)]
pub struct Dcache {
    /// Inodes on their superblock's `s_dirty` list (`__mark_inode_dirty`: a write's mtime
    /// update, a new inode), by file, oldest first.
    pub dirty_inodes: std::collections::BTreeSet<u32>,
    /// Dentries on `dentry_unused`.
    pub dentries_unused: u64,
    /// Of those, with DCACHE_REFERENCED set.
    pub referenced: u64,
    /// Inodes on `inode_unused`.
    pub inodes_unused: u64,
    /// Of those, still holding page-cache pages.
    pub inodes_with_pages: u64,
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
    /// A file was looked up or created and released (dput): its dentry is unused+referenced.
    pub fn touch_new(&mut self) {
        self.dentries_unused += 1;
        self.referenced += 1;
    }

    /// A lookup hit an existing cached dentry: it gets DCACHE_REFERENCED.
    pub fn touch_existing(&mut self) {
        if self.referenced < self.dentries_unused {
            self.referenced += 1;
        }
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
        self.delete();
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
        self.inodes_unused -= freed.min(self.inodes_unused - self.inodes_with_pages);
    }

    /// Reclaim took every page of `n` unused inodes: they become freeable.
    pub fn pages_dropped(&mut self, n: u64) {
        self.inodes_with_pages -= n.min(self.inodes_with_pages);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
