//! Filesystem state: the 2.4 buffer cache (fs/buffer.c), ext3's journal (fs/jbd), the dentry
//! and inode caches (fs/dcache.c, fs/inode.c), NFS over loopback (fs/nfs, fs/nfsd), and the
//! paths that walk them; their state over mm's ([`state::FsState`], the state the CPU loop
//! runs every path on) and its side of what mm reaches ([`ops`]).
pub mod buffer;
pub mod commit;
pub mod dcache;
pub mod ext3;
pub mod ext3_balloc;
pub mod ext4;
pub mod flush;
pub mod fs_writeback;
pub mod fs_writeback6;
pub mod jbd;
pub mod jbd2;
pub mod nfs;
pub mod ops;
pub mod state;
pub mod vfs;

/// The part of `all` that `n` of `of` make, things spread evenly over `of` (all of it once
/// `n` reaches `of`): e.g. the written-out buffers among `n` pages freed of a file's `of`.
pub(crate) fn share(all: u64, n: u64, of: u64) -> u64 {
    if n >= of {
        all
    } else {
        (all as u128 * n as u128 / of as u128) as u64
    }
}
