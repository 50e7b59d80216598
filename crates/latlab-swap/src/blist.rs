//! `blist`: Matt Dillon's radix-tree bitmap allocator, FreeBSD `sys/kern/subr_blist.c`
//! (`freebsd/freebsd-src`, the version with `BLIST_META_RADIX` 16 before the 2017-2019
//! rewrites), used by the swap pager under `sw_dev_mtx` (`vm/swap_pager.c`). Seed 003's
//! commenter quotes Dillon: "The swap bitmap code I wrote uses a radix tree with size
//! hinting for allocations".
//!
//! ```text
//! BLIST.C - Bitmap allocator/deallocator, using a radix tree with hinting
//!   A radix tree is used to maintain the bitmap.  Two radix constants are involved:
//!   One for the bitmaps contained in the leaf nodes (typically 32), and one for the
//!   meta nodes (typically 16).  Both meta and leaf nodes have a hint field.  This field
//!   gives us a hint as to the largest free contiguous range of blocks under the node.
//!   It may contain a value that is too high, but will never contain a value that is
//!   too low.  [...] The radix tree also implements two collapsed states for meta nodes:
//!   the ALL-ALLOCATED state and the ALL-FREE state.
//!   LAYOUT: [...] Each meta node is immediately followed (laid out sequentially in
//!   memory) by BLIST_META_RADIX lower level nodes.
//! ```
//!
//! `blst_meta_alloc` / `blst_leaf_alloc` / `blst_meta_free` / `blst_leaf_free` /
//! `blst_radix_init` are followed line by line, with 64-bit leaf bitmaps
//! (`BLIST_BMAP_RADIX` = 64, `u_daddr_t` is 64 bits) and a terminator (`bm_bighint ==
//! -1`) after the last real subtree. A swap device is created all-allocated and then
//! freed whole, as `swaponsomething()` does (less its two reserved label blocks).
//!
//! Work counts `blmeta_t` nodes read or written. An allocation is one root-to-leaf
//! descent, looking at up to 16 children per level, so it is bounded by the tree depth
//! (log16 of the area) whatever the fill.

use crate::meter::Meter;
use crate::{check_free, check_request, check_slots, corrupt, Alloc, AllocRequest, SwapAllocator, SwapError, Work};

/// Blocks per leaf bitmap.
pub const BLIST_BMAP_RADIX: u64 = 64;
/// Children per meta node.
pub const BLIST_META_RADIX: u64 = 16;
/// `bm_bighint` of a terminator node.
const TERMINATOR: i64 = -1;

/// `blmeta_t`: `u` is the leaf's bitmap (1 = free) or the meta node's `bmu_avail`.
#[derive(Debug, Clone, Copy, Default)]
struct BlMeta {
    u: u64,
    bighint: i64,
}

/// FreeBSD's blist.
#[derive(Debug, Clone)]
pub struct Blist {
    blocks: u64,
    radix: u64,
    skip: u64,
    nodes: Vec<BlMeta>,
}

impl Blist {
    /// `blist_create()` followed by `blist_free(bl, 0, blocks)`.
    pub fn new(slots: u64) -> Result<Self, SwapError> {
        check_slots(slots)?;
        let mut radix = BLIST_BMAP_RADIX;
        let mut skip = 0;
        while radix < slots {
            radix *= BLIST_META_RADIX;
            skip = (skip + 1) * BLIST_META_RADIX;
        }
        let mut bl = Self {
            blocks: slots,
            radix,
            skip,
            nodes: Vec::new(),
        };
        let len = 1 + bl.radix_init(0, radix, skip, slots, false);
        bl.nodes = vec![BlMeta::default(); len];
        bl.radix_init(0, radix, skip, slots, true);
        let mut setup = Meter::default();
        bl.meta_free(0, 0, slots, radix, skip, 0, &mut setup);
        Ok(bl)
    }

    /// `blst_radix_init()`: all allocated, terminators after the last real subtree.
    /// Returns the highest node index used; writes only when `write`.
    fn radix_init(&mut self, idx: usize, radix: u64, skip: u64, mut count: u64, write: bool) -> usize {
        if write {
            self.nodes[idx] = BlMeta::default();
        }
        if radix == BLIST_BMAP_RADIX {
            return 0;
        }
        let radix = radix / BLIST_META_RADIX;
        let next_skip = skip / BLIST_META_RADIX;
        let mut memindex = 0;
        let mut i = 1;
        while i <= skip {
            if count == 0 {
                if write {
                    self.nodes[idx + i as usize].bighint = TERMINATOR;
                }
                break;
            }
            let n = count.min(radix);
            memindex = i as usize + self.radix_init(idx + i as usize, radix, next_skip - 1, n, write);
            count -= n;
            i += next_skip;
        }
        memindex.max(i.min(skip) as usize)
    }

    /// `blst_leaf_alloc()` for one block: the lowest free bit.
    fn leaf_alloc(&mut self, idx: usize, blk: u64) -> Option<u64> {
        let leaf = &mut self.nodes[idx];
        if leaf.u == 0 {
            leaf.bighint = 0;
            return None;
        }
        let r = leaf.u.trailing_zeros() as u64;
        leaf.u &= !(1u64 << r);
        Some(blk + r)
    }

    /// `blst_meta_alloc()` for one block. The caller has counted reading this node.
    fn meta_alloc(&mut self, idx: usize, mut blk: u64, radix: u64, skip: u64, m: &mut Meter) -> Option<u64> {
        let next_skip = skip / BLIST_META_RADIX;
        let avail = self.nodes[idx].u;
        if avail < 1 {
            self.nodes[idx].bighint = avail as i64;
            return None;
        }
        let radix_child = radix / BLIST_META_RADIX;
        if avail == radix {
            // ALL-FREE: reinitialize each child before allocating from one
            let mut i = 1;
            while i <= skip {
                m.read(1);
                self.nodes[idx + i as usize] = if next_skip == 1 {
                    BlMeta {
                        u: u64::MAX,
                        bighint: BLIST_BMAP_RADIX as i64,
                    }
                } else {
                    BlMeta {
                        u: radix_child,
                        bighint: radix_child as i64,
                    }
                };
                i += next_skip;
            }
        }
        let mut i = 1;
        while i <= skip {
            let child = idx + i as usize;
            m.read(1);
            let hint = self.nodes[child].bighint;
            if hint >= 1 {
                let r = if next_skip == 1 {
                    self.leaf_alloc(child, blk)
                } else {
                    self.meta_alloc(child, blk, radix_child, next_skip - 1, m)
                };
                if r.is_some() {
                    self.nodes[idx].u -= 1;
                    return r;
                }
            } else if hint == TERMINATOR {
                break;
            }
            blk += radix_child;
            i += next_skip;
        }
        if self.nodes[idx].bighint >= 1 {
            self.nodes[idx].bighint = 0;
        }
        None
    }

    /// `blst_leaf_free()`.
    fn leaf_free(&mut self, idx: usize, blk: u64, count: u64) {
        let n = blk & (BLIST_BMAP_RADIX - 1);
        let mask = (u64::MAX << n) & (u64::MAX >> (BLIST_BMAP_RADIX - count - n));
        let leaf = &mut self.nodes[idx];
        debug_assert_eq!(leaf.u & mask, 0, "freeing free block");
        leaf.u |= mask;
        leaf.bighint = BLIST_BMAP_RADIX as i64;
    }

    /// `blst_meta_free()`. The caller has counted reading this node.
    #[allow(clippy::too_many_arguments)] // the kernel's signature, plus the meter
    fn meta_free(
        &mut self,
        idx: usize,
        mut free_blk: u64,
        mut count: u64,
        radix: u64,
        skip: u64,
        mut blk: u64,
        m: &mut Meter,
    ) {
        let next_skip = skip / BLIST_META_RADIX;
        if self.nodes[idx].u == 0 {
            // ALL-ALLOCATED, with a possible shortcut to ALL-FREE
            self.nodes[idx] = BlMeta {
                u: count,
                bighint: count as i64,
            };
            if count != radix {
                let mut i = 1;
                while i <= skip {
                    let child = &mut self.nodes[idx + i as usize];
                    m.read(1);
                    if child.bighint == TERMINATOR {
                        break;
                    }
                    *child = BlMeta::default();
                    i += next_skip;
                }
            }
        } else {
            self.nodes[idx].u += count;
        }
        if self.nodes[idx].u == radix {
            return; // ALL-FREE
        }
        let radix = radix / BLIST_META_RADIX;
        let mut i = (free_blk - blk) / radix;
        blk += i * radix;
        i = i * next_skip + 1;
        while i <= skip && blk < free_blk + count {
            let v = (blk + radix - free_blk).min(count);
            let child = idx + i as usize;
            m.read(1);
            if next_skip == 1 {
                self.leaf_free(child, free_blk, v);
            } else {
                self.meta_free(child, free_blk, v, radix, next_skip - 1, blk, m);
            }
            let hint = self.nodes[child].bighint;
            let node = &mut self.nodes[idx];
            node.bighint = node.bighint.max(hint);
            count -= v;
            free_blk += v;
            blk += radix;
            i += next_skip;
        }
    }

    /// Free blocks under a node, checking its hints and counts on the way.
    fn check_node(&self, idx: usize, blk: u64, radix: u64, skip: u64) -> Result<u64, String> {
        let node = self.nodes[idx];
        let free = if radix == BLIST_BMAP_RADIX {
            let beyond = self.blocks.saturating_sub(blk).min(64);
            let outside = if beyond == 64 { 0 } else { u64::MAX << beyond };
            if node.u & outside != 0 {
                return Err(format!("leaf at block {blk} has free bits past the end"));
            }
            node.u.count_ones() as u64
        } else if node.u == 0 || node.u == radix {
            if node.u == radix && blk + radix > self.blocks {
                return Err(format!("ALL-FREE node at block {blk} reaches past the end"));
            }
            node.u
        } else {
            let next_skip = skip / BLIST_META_RADIX;
            let radix_child = radix / BLIST_META_RADIX;
            let mut sum = 0;
            let (mut i, mut b) = (1, blk);
            while i <= skip && self.nodes[idx + i as usize].bighint != TERMINATOR {
                sum += self.check_node(idx + i as usize, b, radix_child, next_skip - 1)?;
                b += radix_child;
                i += next_skip;
            }
            if sum != node.u {
                return Err(format!("node at block {blk}: avail {} but {sum} free below", node.u));
            }
            sum
        };
        if free > 0 && node.bighint < 1 {
            return Err(format!(
                "node at block {blk}: bighint {} with {free} free",
                node.bighint
            ));
        }
        Ok(free)
    }
}

impl SwapAllocator for Blist {
    fn name(&self) -> &'static str {
        "blist"
    }

    fn slots(&self) -> u64 {
        self.blocks
    }

    fn used(&self) -> u64 {
        self.blocks - self.nodes[0].u
    }

    fn alloc(&mut self, req: &AllocRequest) -> Result<Alloc, SwapError> {
        check_request(req)?;
        let mut m = Meter::default();
        m.lock(); // sw_dev_mtx
        m.read(1);
        let mut slot = None;
        if self.nodes[0].bighint >= 1 {
            slot = self.meta_alloc(0, 0, self.radix, self.skip, &mut m);
        }
        m.unlock();
        Ok(Alloc { slot, work: m.finish() })
    }

    fn free(&mut self, slot: u64) -> Result<Work, SwapError> {
        check_free(self, slot)?;
        let mut m = Meter::default();
        m.lock(); // sw_dev_mtx
        m.read(1);
        self.meta_free(0, slot, 1, self.radix, self.skip, 0, &mut m);
        m.unlock();
        Ok(m.finish())
    }

    fn is_allocated(&self, slot: u64) -> bool {
        if slot >= self.blocks {
            return false;
        }
        let (mut idx, mut blk, mut radix, mut skip) = (0usize, 0u64, self.radix, self.skip);
        loop {
            let node = self.nodes[idx];
            if radix == BLIST_BMAP_RADIX {
                return node.u & (1 << (slot - blk)) == 0;
            }
            if node.u == 0 || node.u == radix {
                return node.u == 0;
            }
            let next_skip = skip / BLIST_META_RADIX;
            radix /= BLIST_META_RADIX;
            let i = (slot - blk) / radix;
            idx += (i * next_skip + 1) as usize;
            blk += i * radix;
            skip = next_skip - 1;
        }
    }

    fn check_invariants(&self) -> Result<(), SwapError> {
        self.check_node(0, 0, self.radix, self.skip)
            .map(|_| ())
            .map_err(|d| corrupt("blist", d))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const REQ: AllocRequest = AllocRequest {
        owner: 0,
        vpage: 0,
        cpu: 0,
    };

    #[test]
    fn tree_shape_follows_blist_create() {
        // 64 Ki blocks: radix 64 * 16^3 = 262144, so the root has 4 real children and a
        // terminator
        let bl = Blist::new(1 << 16).unwrap();
        assert_eq!(bl.radix, 262_144);
        assert_eq!(bl.skip, 16 + 256 + 4096);
        let child_skip = bl.skip / BLIST_META_RADIX;
        assert_eq!(bl.nodes[1 + 4 * child_skip as usize].bighint, TERMINATOR);
        // a fresh area is free whole: the real children are collapsed ALL-FREE
        assert_eq!(bl.nodes[0].u, 1 << 16);
        assert_eq!(bl.nodes[1].u, 1 << 14);
        bl.check_invariants().unwrap();
    }

    #[test]
    fn allocates_lowest_first_and_descends_once() {
        let mut bl = Blist::new(1 << 22).unwrap();
        let first = bl.alloc(&REQ).unwrap();
        assert_eq!(first.slot, Some(0));
        // root + at each of 4 meta levels: 16 ALL-FREE child writes + the child taken
        assert_eq!(first.work.entries, 1 + 4 * 17);
        let second = bl.alloc(&REQ).unwrap();
        assert_eq!(second.slot, Some(1));
        assert_eq!(second.work.entries, 1 + 4);
        assert_eq!(second.work.max_locked, second.work.entries);
        bl.check_invariants().unwrap();
    }

    #[test]
    fn frees_collapse_back_to_all_free() {
        let mut bl = Blist::new(4096).unwrap();
        let got: Vec<u64> = (0..4096).map(|_| bl.alloc(&REQ).unwrap().slot.unwrap()).collect();
        assert_eq!(got, (0..4096).collect::<Vec<_>>());
        assert_eq!(bl.alloc(&REQ).unwrap().slot, None);
        assert_eq!(bl.nodes[0].u, 0);
        for s in (0..4096).rev() {
            bl.free(s).unwrap();
            bl.check_invariants().unwrap();
        }
        // the root (radix 16384) holds the count; its four real children (radix 1024)
        // have collapsed back to ALL-FREE
        assert_eq!(bl.nodes[0].u, 4096);
        let child_skip = (bl.skip / BLIST_META_RADIX) as usize;
        for c in 0..4 {
            assert_eq!(bl.nodes[1 + c * child_skip].u, 1024);
        }
    }

    #[test]
    fn hints_skip_full_subtrees() {
        let slots = 1 << 20;
        let mut bl = Blist::new(slots).unwrap();
        for _ in 0..slots - 1 {
            bl.alloc(&REQ).unwrap();
        }
        // the one free block is the last: each level skips 15 full children by hint
        let r = bl.alloc(&REQ).unwrap();
        assert_eq!(r.slot, Some(slots - 1));
        assert!(r.work.entries <= 1 + 4 * 16, "{:?}", r.work);
        bl.free(12345).unwrap();
        assert_eq!(bl.alloc(&REQ).unwrap().slot, Some(12345));
        bl.check_invariants().unwrap();
    }
}
