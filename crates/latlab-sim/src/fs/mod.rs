//! Filesystem state: the 2.4 buffer cache (fs/buffer.c), ext3's journal (fs/jbd), the dentry
//! and inode caches (fs/dcache.c, fs/inode.c), NFS over loopback (fs/nfs, fs/nfsd), and the
//! paths that walk them.
pub mod buffer;
pub mod commit;
pub mod dcache;
pub mod ext3;
pub mod flush;
pub mod jbd;
pub mod nfs;
