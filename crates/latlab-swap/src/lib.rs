//! `latlab-swap`: the swap-slot allocators of seed 003 as real data structures.
//!
//! Seed 003 ends on `get_swap_page()`: Ingo Molnar calls it "a near linear search for a
//! free slot in the swap bitmap" under a spinlock, Andrew Morton posts a patch that lays
//! swap out by virtual address in 1 MB chunks, Lee Revell still sees 6 ms in
//! `scan_swap_map` once RAM and swap are full, and a commenter points at Matt Dillon's
//! radix tree "with size hinting". This crate implements five allocators, each following
//! its kernel source (cited at the top of its module):
//!
//! | name              | module            | source                                        |
//! |-------------------|-------------------|-----------------------------------------------|
//! | `scan-2.4`        | [`scan24`]        | 2.4 / 2.6.9 `mm/swapfile.c` `scan_swap_map`   |
//! | `vaddr-chunks`    | [`vaddr_chunks`]  | Morton's 2004-05 swapspace-layout patch       |
//! | `lockless-2.6.14` | [`lockless`]      | Hugh Dickins' July 2005 rewrite (2.6.14)      |
//! | `cluster-6.x`     | [`cluster`]       | the 6.12-6.15 cluster allocator               |
//! | `blist`           | [`blist`]         | FreeBSD `sys/kern/subr_blist.c` (Dillon)      |
//!
//! Every allocation and free reports its [`Work`]: the swap_map entries (or tree nodes)
//! the real code would read, and the longest stretch of that work done under a lock
//! without a preemption point, which is what a latency model needs. [`stream`] makes
//! seeded, reproducible request streams (swap-out bursts under memory pressure, swap-in
//! frees with locality, random frees, fills) and [`bench`](mod@bench) runs the measurement sweep
//! that `latlab swap-bench` prints.
//!
//! Model conventions shared by all allocators: one swap device of `slots` page-sized
//! slots, numbered from 0; the model has no header slot (the kernel reserves slot 0 for
//! the swap header, the model does not); a slot is either free or held by one owner
//! (no swap counts above 1, no swap cache).

#![forbid(unsafe_code)]

pub mod bench;
pub mod blist;
pub mod cluster;
pub mod lockless;
mod map;
mod meter;
pub mod scan24;
pub mod stream;
pub mod vaddr_chunks;

use serde::Serialize;

/// The smallest swap area the model accepts: one `SWAPFILE_CLUSTER` of 256 pages
/// (1 MiB of 4 KiB pages), which is also one of Morton's chunks.
pub const MIN_SLOTS: u64 = 256;
/// The largest swap area the model accepts: 2^27 slots (512 GiB of 4 KiB pages). The
/// allocators keep a byte per slot, so this bounds the model's memory at a few hundred MiB.
pub const MAX_SLOTS: u64 = 1 << 27;
/// The largest CPU number a request may name (x86-64's largest `NR_CPUS`).
pub const MAX_CPUS: u32 = 8192;

/// The allocator names [`by_name`] accepts, oldest design first.
pub const ALLOCATORS: &[&str] = &["scan-2.4", "vaddr-chunks", "lockless-2.6.14", "cluster-6.x", "blist"];

/// One swap-out request: which page wants a slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AllocRequest {
    /// Process / anon_vma cookie (Morton's patch hashes it with the virtual index).
    pub owner: u64,
    /// Virtual page index inside the owner (used by `vaddr-chunks`; the others ignore it).
    pub vpage: u64,
    /// The CPU doing reclaim (the per-CPU cluster of `cluster-6.x`).
    pub cpu: u32,
}

/// The work one allocation or free did, in the allocator's own unit: swap_map entries
/// read (scan-based allocators, plus cluster descriptors for `cluster-6.x`) or radix tree
/// nodes read or written (`blist`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Work {
    /// All entries read or nodes visited.
    pub entries: u64,
    /// The longest stretch of `entries` done under a lock without a preemption point.
    pub max_locked: u64,
    /// How many locks were taken.
    pub lock_acquisitions: u32,
}

/// The result of one allocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Alloc {
    /// The slot handed out; `None` when the swap area is full.
    pub slot: Option<u64>,
    /// What finding it (or failing to) cost.
    pub work: Work,
}

/// Everything that can go wrong. Bad input is reported, never a panic, and leaves the
/// allocator's state untouched.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SwapError {
    #[error("swap area of {slots} slots is too small: the model needs at least {min} slots (1 MiB of 4 KiB pages)")]
    TooSmall { slots: u64, min: u64 },
    #[error("swap area of {slots} slots is beyond the model's limit of {max} slots (512 GiB of 4 KiB pages)")]
    TooLarge { slots: u64, max: u64 },
    #[error("unknown allocator {name:?}; valid names: {valid}")]
    UnknownAllocator { name: String, valid: String },
    #[error("slot {slot} is outside the swap area (slots 0..{slots})")]
    SlotOutOfRange { slot: u64, slots: u64 },
    #[error("slot {slot} is not allocated: double free, or free of a slot never handed out")]
    NotAllocated { slot: u64 },
    #[error("cpu {cpu} is beyond the model's limit of {max} CPUs")]
    CpuOutOfRange { cpu: u32, max: u32 },
    #[error("fill level {fill} is outside [0, 1): a fill of 1 leaves no slot to allocate")]
    BadFill { fill: f64 },
    #[error("request for owner {owner:#x} page {vpage} was not issued by this workload, or was already completed")]
    ForeignRequest { owner: u64, vpage: u64 },
    #[error("bad benchmark configuration: {0}")]
    BadConfig(String),
    #[error("allocator {allocator} is inconsistent: {detail}")]
    Corrupt { allocator: &'static str, detail: String },
}

/// A swap-slot allocator for one swap device.
pub trait SwapAllocator: Send {
    /// The name [`by_name`] knows it by.
    fn name(&self) -> &'static str;
    /// Size of the swap area in slots.
    fn slots(&self) -> u64;
    /// Slots currently handed out.
    fn used(&self) -> u64;
    /// Find a free slot for `req`. `Ok` with `slot: None` means the swap area is full; a
    /// CPU number of [`MAX_CPUS`] or more is an error.
    fn alloc(&mut self, req: &AllocRequest) -> Result<Alloc, SwapError>;
    /// Give `slot` back. Freeing a free or out-of-range slot is an error and changes nothing.
    fn free(&mut self, slot: u64) -> Result<Work, SwapError>;
    /// Whether `slot` is currently handed out (false for slots outside the area).
    fn is_allocated(&self, slot: u64) -> bool;
    /// Check the allocator's internal bookkeeping (counts, hints, lists) against its map.
    /// Costs O(slots): for tests and debugging, not for the hot path.
    fn check_invariants(&self) -> Result<(), SwapError>;
}

/// Build the allocator called `name` for a swap area of `slots` slots.
pub fn by_name(name: &str, slots: u64) -> Result<Box<dyn SwapAllocator>, SwapError> {
    Ok(match name {
        "scan-2.4" => Box::new(scan24::Scan24::new(slots)?),
        "vaddr-chunks" => Box::new(vaddr_chunks::VaddrChunks::new(slots)?),
        "lockless-2.6.14" => Box::new(lockless::Lockless::new(slots)?),
        "cluster-6.x" => Box::new(cluster::Cluster6::new(slots)?),
        "blist" => Box::new(blist::Blist::new(slots)?),
        _ => {
            return Err(SwapError::UnknownAllocator {
                name: name.to_string(),
                valid: ALLOCATORS.join(", "),
            })
        }
    })
}

/// Reject zero, tiny and absurd swap sizes.
pub fn check_slots(slots: u64) -> Result<(), SwapError> {
    if slots < MIN_SLOTS {
        return Err(SwapError::TooSmall { slots, min: MIN_SLOTS });
    }
    if slots > MAX_SLOTS {
        return Err(SwapError::TooLarge { slots, max: MAX_SLOTS });
    }
    Ok(())
}

/// A request from owner 1 for its page 0 on CPU 0, for unit tests.
#[cfg(test)]
pub(crate) const TEST_REQ: AllocRequest = AllocRequest {
    owner: 1,
    vpage: 0,
    cpu: 0,
};

/// Shared check for `alloc`: the request must name a CPU the model knows.
pub(crate) fn check_request(req: &AllocRequest) -> Result<(), SwapError> {
    if req.cpu >= MAX_CPUS {
        return Err(SwapError::CpuOutOfRange {
            cpu: req.cpu,
            max: MAX_CPUS,
        });
    }
    Ok(())
}

/// Shared check for `free`: the slot must be inside the area and handed out.
pub(crate) fn check_free(a: &dyn SwapAllocator, slot: u64) -> Result<(), SwapError> {
    if slot >= a.slots() {
        return Err(SwapError::SlotOutOfRange { slot, slots: a.slots() });
    }
    if !a.is_allocated(slot) {
        return Err(SwapError::NotAllocated { slot });
    }
    Ok(())
}

/// Shared helper for `check_invariants`: build a `Corrupt` error.
pub(crate) fn corrupt(allocator: &'static str, detail: String) -> SwapError {
    SwapError::Corrupt { allocator, detail }
}
