//! ext3's block groups and the block-bitmap read a write makes when its allocation enters a
//! new group (fs/ext3/balloc.c `ext3_new_blocks` -> `read_block_bitmap`, 2.6.17/2.6.18:
//! CentOS-5 2.6.18 `fs/ext3/balloc.c`; docs/research/seed001-stalls.md sections 1, 2.1, 4).
//!
//! ext3 allocates at `write()` time (`ext3_prepare_write` -> `ext3_get_block` ->
//! `ext3_new_blocks`), in the writer, under `i_mutex` and a journal handle. The goal block
//! follows the file's last one, so a sequential writer fills its group, then the next:
//! - a group has `EXT3_BLOCKS_PER_GROUP` (32,768) blocks, of which the first hold its block
//!   and inode bitmaps and inode table (`GROUP_OVERHEAD`), and in a `sparse_super` backup
//!   group (0, 1 and the powers of 3, 5 and 7) also a copy of the superblock and the group
//!   descriptors with their reserved blocks (`BACKUP_OVERHEAD`);
//! - an indirect block is allocated before each run of 1,024 data blocks (12 direct
//!   blocks, then the indirect block, then the double-indirect one with its first
//!   indirect), in line with the data;
//! - the first allocation in a group reads that group's block bitmap with `sb_bread`, a
//!   synchronous READ the writer sleeps on (`wait_on_buffer`): 2.6 keeps no bitmap cache of
//!   its own, the buffer cache does, and a group not touched since mount is not in it. No
//!   reservation window reaches past its group (`alloc_new_reservation` returns -1 for a
//!   window crossing the boundary), so nothing reads the next bitmap ahead.
//!
//! The model's data blocks stay where the page cache numbers them (a file's pages on
//! consecutive blocks from its first): the groups' metadata blocks are counted to find
//! where the allocation crosses, not laid out on the model's disk, so the bitmap read goes
//! to the block the new group's data starts at (about 2 MiB from the real bitmap: a
//! track-to-track seek either way). Left out: `ext3_journal_get_undo_access` waiting for a
//! bitmap buffer under write (the bitmap of a group the file has left becomes dirty only at
//! the next commit, and is never the one a crossing reads), the bitmap's and group
//! descriptor's journal credits (in the inode's per-write metadata already), and 2.4's
//! ext3 (`load_block_bitmap` with its eight cached groups), which the 2.4 kernels' paths
//! do not model.

use std::collections::{BTreeMap, BTreeSet};

/// `EXT3_BLOCKS_PER_GROUP` with 4 KiB blocks (8 * block size).
pub const BLOCKS_PER_GROUP: u64 = 32_768;
/// Blocks at the start of each group holding no data: the seed's own offsets give it, a
/// plain group holding 32,248 data and indirect blocks (seed001-stalls.md section 1: steps
/// of 128,864-128,868 KB = 32,216-32,217 data blocks + 31-32 indirect): 32,768 - 32,248.
/// mke2fs's defaults account for 514 of them (two bitmaps, 16,384 inodes of 128 bytes).
pub const GROUP_OVERHEAD: u64 = 520;
/// What a `sparse_super` backup group holds besides: the superblock copy, the group
/// descriptors and their reserved growth blocks; the seed's 890672 -> 1015436 KB step is
/// 1,026 blocks short of a plain group's (seed001-stalls.md section 1).
pub const BACKUP_OVERHEAD: u64 = 1_025;
/// Block pointers in a 4 KiB indirect block.
const PTRS_PER_BLOCK: u64 = 1_024;
/// `EXT3_NDIR_BLOCKS`: data blocks addressed from the inode itself.
const DIRECT_BLOCKS: u64 = 12;

/// Does group `g` carry a superblock backup (`ext3_group_sparse`: 0, 1, powers of 3, 5, 7)?
pub fn is_backup_group(g: u64) -> bool {
    fn power_of(mut g: u64, b: u64) -> bool {
        while g > 1 && g.is_multiple_of(b) {
            g /= b;
        }
        g == 1
    }
    g <= 1 || power_of(g, 3) || power_of(g, 5) || power_of(g, 7)
}

/// Blocks of group `g` before its first data block.
pub fn overhead(g: u64) -> u64 {
    GROUP_OVERHEAD + if is_backup_group(g) { BACKUP_OVERHEAD } else { 0 }
}

/// Indirect and double-indirect blocks allocated for a file's first `pages` data blocks.
fn meta_before(pages: u64) -> u64 {
    if pages <= DIRECT_BLOCKS {
        return 0;
    }
    let ind = (pages - DIRECT_BLOCKS).div_ceil(PTRS_PER_BLOCK);
    // The double-indirect block comes with the second indirect one.
    ind + u64::from(ind > 1)
}

/// Where a file's allocation stands: the next free block of its group, and the group.
#[derive(Clone, Copy, Debug)]
struct Cursor {
    next: u64,
    group: u64,
}

/// What the next append needs first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Alloc {
    /// Up to this many pages fit in the current group (whose bitmap is cached).
    Fits(u64),
    /// The next page's block is in group `group`, whose bitmap must be read first.
    ReadBitmap { group: u64 },
}

/// The filesystem's block groups as far as allocation needs them.
#[derive(Default)]
pub struct Balloc {
    /// Groups whose block bitmap is in the buffer cache.
    cached: BTreeSet<u64>,
    files: BTreeMap<u32, Cursor>,
    /// `read_block_bitmap` calls that went to the disk.
    pub bitmap_reads: u64,
}

impl Cursor {
    /// A file of `pages` starting at `first_block` (past its group's metadata).
    fn start(first_block: u64, pages: u64) -> Self {
        let group = first_block / BLOCKS_PER_GROUP;
        let start = group * BLOCKS_PER_GROUP + overhead(group);
        Cursor {
            next: first_block.max(start) + pages + meta_before(pages),
            group,
        }
    }
}

impl Balloc {
    fn cursor(&mut self, file: u32, first_block: u64, pages: u64) -> &mut Cursor {
        self.files
            .entry(file)
            .or_insert_with(|| Cursor::start(first_block, pages))
    }

    /// A writer appends up to `want` pages to `file` (first block `first_block`, `pages`
    /// long): how many fit before the allocation needs another group's bitmap, or which
    /// bitmap the next page's allocation reads.
    pub fn next_append(&mut self, file: u32, first_block: u64, pages: u64, want: u64) -> Alloc {
        let c = *self.cursor(file, first_block, pages);
        let end = (c.group + 1) * BLOCKS_PER_GROUP;
        let need = |n: u64| n + meta_before(pages + n) - meta_before(pages);
        if c.next + need(1) > end {
            return Alloc::ReadBitmap { group: c.group + 1 };
        }
        if !self.cached.contains(&c.group) {
            return Alloc::ReadBitmap { group: c.group };
        }
        // The most pages whose blocks (and indirect blocks) fit before the group's end.
        let left = end - c.next;
        let mut n = want.min(left);
        while n > 0 && need(n) > left {
            n -= need(n) - left;
        }
        Alloc::Fits(n)
    }

    /// `read_block_bitmap(sb, group)` is on its way for `file`: the bitmap is cached from now
    /// on, and the file's allocation moves into the group.
    pub fn bitmap_read(&mut self, file: u32, first_block: u64, pages: u64, group: u64) {
        self.bitmap_reads += 1;
        self.cached.insert(group);
        let c = self.cursor(file, first_block, pages);
        if group > c.group {
            c.group = group;
            c.next = group * BLOCKS_PER_GROUP + overhead(group);
        }
    }

    /// `n` pages were appended to `file`, which had `pages`: their blocks are allocated.
    pub fn appended(&mut self, file: u32, first_block: u64, pages: u64, n: u64) {
        let c = self.cursor(file, first_block, pages);
        c.next += n + meta_before(pages + n) - meta_before(pages);
    }

    /// `file` was deleted: its blocks go back to their groups (the bitmaps stay cached).
    pub fn deleted(&mut self, file: u32) {
        self.files.remove(&file);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Append one page at a time from an empty file at `first`, reading bitmaps as asked;
    /// the page offsets at which a bitmap was read.
    fn crossings(first: u64, pages: u64) -> Vec<(u64, u64)> {
        let mut b = Balloc::default();
        let mut out = Vec::new();
        let mut size = 0;
        while size < pages {
            match b.next_append(1, first, size, pages - size) {
                Alloc::ReadBitmap { group } => {
                    out.push((size, group));
                    b.bitmap_read(1, first, size, group);
                }
                Alloc::Fits(n) => {
                    assert!(n > 0);
                    b.appended(1, first, size, n);
                    size += n;
                }
            }
        }
        out
    }

    #[test]
    fn sparse_super_backups_are_in_groups_0_1_and_powers_of_3_5_7() {
        let backups: Vec<u64> = (0..60).filter(|&g| is_backup_group(g)).collect();
        assert_eq!(backups, [0, 1, 3, 5, 7, 9, 25, 27, 49]);
    }

    #[test]
    fn a_plain_group_holds_32248_data_and_indirect_blocks_as_the_seeds_offsets_say() {
        // A file starting at group 2's first data block: groups 2 and 4 are plain.
        let first = 2 * BLOCKS_PER_GROUP + overhead(2);
        let c = crossings(first, 5 * BLOCKS_PER_GROUP);
        assert_eq!(c[0], (0, 2), "the first write reads its own group's bitmap");
        let steps: Vec<u64> = c.windows(2).map(|w| w[1].0 - w[0].0).collect();
        // Group 2: 32,248 blocks, 31 or 32 of them indirect (and the double-indirect one).
        assert!((32_248 - 33..=32_248 - 31).contains(&steps[0]), "{steps:?}");
        // Group 3 is a backup group: 1,025 blocks fewer, give or take the indirect blocks
        // that fall in each.
        let less = steps[0] - steps[1];
        assert!((BACKUP_OVERHEAD - 3..=BACKUP_OVERHEAD + 1).contains(&less), "{steps:?}");
        // Group 4 again plain: 32,216 or 32,217 data blocks, as the seed's 128,864-128,868 KB.
        assert!((32_216..=32_217).contains(&steps[2]), "{steps:?}");
        assert_eq!(c.iter().map(|x| x.1).collect::<Vec<_>>(), [2, 3, 4, 5, 6, 7]);
    }

    #[test]
    fn a_bitmap_read_once_stays_cached() {
        let mut b = Balloc::default();
        let first = 10 * BLOCKS_PER_GROUP + 5_000;
        assert_eq!(b.next_append(1, first, 0, 10), Alloc::ReadBitmap { group: 10 });
        b.bitmap_read(1, first, 0, 10);
        assert_eq!(b.next_append(1, first, 0, 10), Alloc::Fits(10));
        // A second file in the same group needs no read.
        assert_eq!(b.next_append(2, first + 100, 0, 10), Alloc::Fits(10));
        assert_eq!(b.bitmap_reads, 1);
    }
}
