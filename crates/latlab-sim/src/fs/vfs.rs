//! The file operations a system call reaches through the VFS: the one place that picks the
//! mounted file system's implementation (`->write_iter`, `->setattr`, `->evict_inode`,
//! `->sync_fs`), by whether ext4 is mounted ([`FsState::ext4`]).

use crate::fs::state::FsState;
use crate::fs::{ext3, ext4};
use crate::kernel::path::Path;

/// `write()` appending `bytes` to `file`.
pub fn write(k: &FsState, file: u32, bytes: u64) -> Box<dyn Path<FsState>> {
    match k.ext4 {
        Some(_) => ext4::ext4_write(file, None, bytes),
        None => ext3::sys_write(file, bytes),
    }
}

/// `pwrite()` over `file`'s pages from `page` on.
pub fn rewrite(k: &FsState, file: u32, page: u64, bytes: u64) -> Box<dyn Path<FsState>> {
    match k.ext4 {
        Some(_) => ext4::ext4_write(file, Some(page), bytes),
        None => ext3::sys_rewrite(file, page, bytes),
    }
}

/// `unlink()` of `file`'s last link.
pub fn unlink(k: &FsState, file: u32) -> Box<dyn Path<FsState>> {
    match k.ext4 {
        Some(_) => ext4::ext4_unlink(file),
        None => ext3::sys_unlink(file),
    }
}

/// `ftruncate()` of `file` to `pages`.
pub fn ftruncate(k: &FsState, file: u32, pages: u64) -> Box<dyn Path<FsState>> {
    match k.ext4 {
        Some(_) => ext4::ext4_ftruncate(file, pages),
        None => ext3::sys_ftruncate(file, pages),
    }
}

/// `sync()` (and the model's `fsync()`, which syncs as it).
pub fn sync(k: &FsState) -> Box<dyn Path<FsState>> {
    match k.ext4 {
        Some(_) => ext4::ext4_sync(k),
        None => crate::fs::flush::sys_sync(k.kthreads.kjournald()),
    }
}
