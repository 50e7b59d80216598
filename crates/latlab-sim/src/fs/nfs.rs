//! NFS over the loopback device, client and server on one box (fs/nfs, fs/nfsd, net/sunrpc of
//! 2.4.17), as stress-kernel's NFS-COMPILE uses it: a local ext3 directory exported and
//! mounted again through `localhost`.
//!
//! Every file then exists twice in memory: the client's NFS inode with its dentry and page
//! cache, and the server's ext3 inode with its. What the client's caches cannot answer is a
//! remote procedure call: request and reply cross the loopback device (UDP; data copied into
//! socket buffers and out again), and an `nfsd` thread serves it with the ext3 calls, holding
//! the big kernel lock as 2.4's `nfsd()` does from start-up (`lock_kernel()` before
//! `daemonize()`, released only while it sleeps). The model runs the server's part in the
//! caller's context, under the BKL for exactly that part: what decides latency is that
//! stretch, the same whichever task runs it. The client writes through (each write is sent at
//! once, `nfs_wb_all` at close waits for the same work).

use crate::fs::ext3::{cached_read, sys_create, sys_lookup, sys_read};
use crate::fs::flush::{chain, effect};
use crate::fs::state::FsState;
use crate::fs::vfs;
use crate::kernel::path::{once, under_bkl, Path};

/// A file as the NFS client sees it and as the server stores it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NfsFile {
    /// The client's NFS inode (its page cache; it never reaches a disk).
    pub client: u32,
    /// The server's ext3 file.
    pub server: u32,
}

/// One remote procedure call named `name`: the call and the request's trip (half the
/// protocol work; a WRITE's data copied into a socket buffer and out of it), nfsd's `server`
/// work under the BKL, what the reply brings back to the client (`on_reply`), and the
/// reply's trip (a READ's data with it).
fn rpc(
    k: &FsState,
    name: &'static str,
    (sent, returned): (u64, u64),
    server: Box<dyn Path<FsState>>,
    on_reply: impl FnOnce(&mut FsState) + 'static,
) -> Box<dyn Path<FsState>> {
    let trip = |bytes: u64| k.c.rpc_call / 2 + 2 * k.c.copy(bytes);
    chain(
        name,
        vec![
            once("rpc_call_sync", trip(sent)),
            under_bkl(server),
            effect(on_reply),
            once("rpc_call_sync", trip(returned)),
        ],
    )
}

/// A new file on the mount: the client's inode (no disk blocks) and the server's.
pub fn new_file(k: &mut FsState, pages: u64) -> NfsFile {
    NfsFile {
        client: k.mm.create_file(0),
        server: k.mm.create_file(pages),
    }
}

/// The client's inode takes the server file's size (after a reply that carried it).
fn mirror_size(k: &mut FsState, f: NfsFile) {
    let size = k.mm.files().get(&f.server).map_or(0, |r| r.size);
    if let Some(c) = k.mm.files_mut().get_mut(&f.client) {
        c.size = size;
    }
}

/// open()/stat() of an existing file: the client's dentry, then a GETATTR to revalidate its
/// inode (close-to-open), served by a lookup in the server's dcache.
pub fn nfs_lookup(k: &mut FsState, f: NfsFile) -> Box<dyn Path<FsState>> {
    k.dcache.touch_existing(f.client);
    let server = sys_lookup(k, f.server);
    rpc(k, "nfs_proc_getattr", (0, 0), server, move |k| mirror_size(k, f))
}

/// creat(): the client's new dentry and inode, and a CREATE on the server.
pub fn nfs_create(k: &mut FsState, f: NfsFile) -> Box<dyn Path<FsState>> {
    k.dcache.created(f.client);
    k.mm.take_slab(crate::mm::vmscan::DENTRY_BYTES + crate::mm::vmscan::INODE_BYTES);
    rpc(k, "nfs_proc_create", (0, 0), sys_create(f.server), |_| {})
}

/// write() appending `bytes` (at most one wsize): into the client's page cache, then a WRITE
/// the server appends to its file.
pub fn nfs_write(k: &mut FsState, f: NfsFile, bytes: u64) -> Box<dyn Path<FsState>> {
    let pages = bytes.div_ceil(4096);
    let end = k.mm.files().get(&f.client).map_or(0, |c| c.size);
    k.mm.add_pages(f.client, end, pages);
    let write = vfs::write(k, f.server, bytes);
    rpc(k, "nfs_proc_write", (bytes, 0), write, move |k| mirror_size(k, f))
}

/// read() of `bytes` from page `off`: from the client's page cache if it holds them, else a
/// READ the server answers from its own cache or its disk; the reply fills the client's cache.
pub fn nfs_read(k: &mut FsState, f: NfsFile, off: u64, bytes: u64) -> Box<dyn Path<FsState>> {
    let pages = bytes.div_ceil(4096);
    if k.mm.cached_run(f.client, off) >= pages {
        return cached_read(f.client, off, bytes);
    }
    rpc(
        k,
        "nfs_proc_read",
        (0, bytes),
        sys_read(f.server, off, bytes),
        move |k| {
            mirror_size(k, f);
            k.mm.add_pages(f.client, off, pages);
        },
    )
}

/// unlink(): the client drops its inode and pages, the server unlinks (truncate and all).
pub fn nfs_unlink(k: &mut FsState, f: NfsFile) -> Box<dyn Path<FsState>> {
    k.mm.delete_file(f.client);
    k.dcache.delete_file(f.client);
    let unlink = vfs::unlink(k, f.server);
    rpc(k, "nfs_proc_remove", (0, 0), unlink, |_| {})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::tests::{kstate, run_to_sleep};
    use crate::kernel::path::{Ctx, Step};

    #[test]
    fn a_write_fills_both_caches_and_only_the_server_part_holds_the_bkl() {
        let mut k = kstate();
        let f = new_file(&mut k, 4);
        let c = nfs_create(&mut k, f);
        assert_eq!(run_to_sleep(&mut k, c), None);
        let mut w = nfs_write(&mut k, f, 8192);
        let cx = Ctx { now: 0, pid: 1 };
        let mut bkl = Vec::new();
        loop {
            let s = w.next(&mut k, &cx);
            bkl.push(w.holds_bkl());
            match s {
                Step::Loop(l) => w.advanced(&mut k, &cx, l.items),
                Step::Done => break,
                _ => {}
            }
        }
        // Client call (no BKL), nfsd's ext3 write (BKL), the reply (no BKL).
        assert_eq!(
            (bkl.first(), bkl.iter().filter(|&&b| b).count() > 0),
            (Some(&false), true)
        );
        assert!(!bkl[bkl.len() - 2]);
        assert_eq!(
            (k.mm.files()[&f.client].cached(), k.mm.files()[&f.server].cached()),
            (2, 2)
        );
        assert_eq!((k.mm.files()[&f.client].size, k.mm.files()[&f.server].size), (2, 2));
    }

    #[test]
    fn a_read_the_client_caches_needs_no_call() {
        let mut k = kstate();
        let f = new_file(&mut k, 0);
        k.mm.files_mut().get_mut(&f.server).expect("server").size = 4;
        k.mm.add_pages(f.server, 0, 4);
        // First read: a READ call fills the client's cache.
        assert_eq!(nfs_read(&mut k, f, 0, 8192).name(), "nfs_proc_read");
        let r = nfs_read(&mut k, f, 0, 8192);
        assert_eq!(run_to_sleep(&mut k, r), None);
        assert_eq!(k.mm.files()[&f.client].cached(), 2);
        assert_eq!(nfs_read(&mut k, f, 0, 8192).name(), "sys_read");
        assert_eq!(nfs_read(&mut k, f, 2, 8192).name(), "nfs_proc_read");
    }
}
