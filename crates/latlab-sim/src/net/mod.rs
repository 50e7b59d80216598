//! Local communication of 2.4.17: TCP over the loopback device (net/ipv4/tcp*.c,
//! drivers/net/loopback.c) and pipes (fs/pipe.c), as stress-kernel's TTCP and FIFOS_MMAP
//! tests drive them.
//!
//! A loopback TCP send copies and checksums the user's data into a socket buffer
//! (`tcp_sendmsg`), builds and transmits the segment, and `loopback_xmit` hands it to
//! `netif_rx`; the receive side (`net_rx_action`, `ip_rcv`, `tcp_v4_rcv`) then runs as a
//! softirq when the sender re-enables bottom halves, with bottom halves off: no preemption
//! there under the preempt patch. The receiver's `tcp_recvmsg` copies the data out. A pipe
//! write or read copies up to a page (PIPE_BUF, 4 KiB) under the pipe inode's semaphore,
//! which a preemptible kernel may preempt.

use crate::kernel::lock::Lock;
use crate::kernel::path::{CoreK, Path, Script, Work};
use crate::kernel::state::Core;

/// One loopback TCP segment of `bytes` (at most the loopback MSS, ~16 KiB): the sender's
/// syscall, with the receive-side softirq it runs on its way out.
pub fn tcp_send<K: CoreK>(k: &Core, bytes: u64) -> Box<dyn Path<K>> {
    Box::new(Script {
        name: "sys_sendto",
        steps: [
            Work::plain("tcp_sendmsg", k.c.copy(bytes) + k.c.tcp_segment / 2),
            Work::locked("net_rx_action", k.c.tcp_segment / 2, Lock::Softirq, false),
        ]
        .into(),
    })
}

/// The receiver's `tcp_recvmsg` of `bytes` already queued.
pub fn tcp_recv<K: CoreK>(k: &Core, bytes: u64) -> Box<dyn Path<K>> {
    crate::kernel::path::once("tcp_recvmsg", k.c.copy(bytes) + k.c.pipe_op)
}

/// A pipe write or read of `bytes` (at most PIPE_BUF): the copy and the wake-up of the
/// other end.
pub fn pipe_rw<K: CoreK>(k: &Core, write: bool, bytes: u64) -> Box<dyn Path<K>> {
    let name = if write { "pipe_write" } else { "pipe_read" };
    crate::kernel::path::once(name, k.c.copy(bytes) + k.c.pipe_op)
}
