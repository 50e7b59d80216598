//! `dbench N` (dbench 1.x, Tridgell): N clients, each replaying the NetBench client trace
//! once; what a client does and where its figures come from is on [`NetBench`].

use crate::workload::ops::{Ops, Reg};
use crate::workload::syscall::Syscall;
use crate::workload::{Action, ProgCx, Program, TaskSpec};
use latlab_core::Nanos;
use rand::Rng as _;
use std::cell::Cell;
use std::rc::Rc;

/// `dbench N`: its clients started together (at `stage` 0), then waited for.
pub(crate) fn refill(o: &mut Ops, reg: &Reg, stage: u32, clients: u32, group: String) -> bool {
    if stage > 0 {
        return false;
    }
    for i in 0..clients {
        let r = reg.clone();
        let g: &'static str = Box::leak(format!("{group}{i}").into_boxed_str());
        o.spawn(move |_| TaskSpec::user("dbench", Box::new(DbenchClient::new(g, r))));
    }
    o.push(|_| Some(Action::WaitChildren));
    true
}

/// What one dbench client does: dbench 1.x replays `client.txt`, a NetBench client's trace,
/// once per client. Its README (Tridgell, kept unchanged since dbench 1.0): the trace holds
/// "the 90 thousand operations that a netbench client does", the client writes "over a
/// hundred megabytes of data ... in a few minutes", "nearly 90% of the read/write IO
/// operations in netbench are writes", and a run needs "at least 25MB free per simulated
/// client". The 1.x trace itself is not at hand. Its shape comes from the NetBench trace
/// dbench 4 ships (`/usr/share/dbench/client.txt` of Debian's dbench 4.0, 458,344 lines),
/// measured by replaying its opens, writes, unlinks and renames (`cargo run --release -p
/// latlab-exp --example netbench_trace`; docs/fidelity.md): a
/// long-lived set of 56 files (20 MB) the client opens again and again and rewrites in place,
/// and short-lived files (created, written, deleted a few lines later).
pub struct NetBench {
    /// Bytes written: the README's "over a hundred megabytes" (its lower bound).
    pub written: u64,
    /// Lines of the trace: "90 thousand operations".
    pub lines: u64,
    /// Writes per read: "nearly 90%" of reads and writes are writes.
    pub writes_per_read: u64,
    /// Files opened: ~3,700. dbench 1.x prints a dot every 100 opens of each client; a
    /// 4-client run of 2002 (D. Sarma, linux-mm, 17 Oct 2002) printed 147.
    pub opens: u64,
    /// The long-lived files, (count, KiB), created first: the 4.x trace's set half-way
    /// through (48 documents of 254 KiB, one of 320 KiB, one of 1,824 KiB, six of 1 MiB of
    /// which five are dbench's filler files).
    pub documents: &'static [(u64, u64)],
    /// Of the opens after the first creation, those of a new short-lived file, per 1000
    /// (4.x trace: 3,142 unlinked files per 11,426 opens).
    pub temp_per_1000: u64,
    /// Of the bytes written after the first creation, those rewriting long-lived files in
    /// place, per 1000 (4.x trace: 104.5 of 190.3 MB; the rest extends new files).
    pub rewrite_per_1000: u64,
    /// CPU to parse one trace line (fgets, split, strcmp dispatch): ~4,000 instructions at
    /// ~1 per cycle on the PIII-850, ~5 us (an estimate).
    pub parse_ns: Nanos,
}

pub const NETBENCH: NetBench = NetBench {
    written: 100 << 20,
    lines: 90_000,
    writes_per_read: 9,
    opens: 3_700,
    documents: &[(48, 254), (1, 320), (1, 1824), (6, 1024)],
    temp_per_1000: 275,
    rewrite_per_1000: 549,
    parse_ns: 5_000,
};

impl NetBench {
    fn document_bytes(&self) -> u64 {
        self.documents.iter().map(|&(n, kb)| n * kb * 1024).sum()
    }
    fn document_count(&self) -> u64 {
        self.documents.iter().map(|&(n, _)| n).sum()
    }
    /// Size in bytes of long-lived file `i` (in creation order).
    fn document(&self, i: usize) -> u64 {
        let mut left = i as u64;
        for &(n, kb) in self.documents {
            if left < n {
                return kb * 1024;
            }
            left -= n;
        }
        0
    }
    /// Mean bytes a write() carries: the bytes written over the trace's writes, its reads
    /// and writes being its lines less an open and a close per file, nine in ten of them
    /// writes (100 MB / 74,340 ~ 1.4 KB).
    fn write_bytes(&self) -> u64 {
        let io = self.lines - 2 * self.opens;
        self.written / (io * self.writes_per_read / (self.writes_per_read + 1))
    }
    /// Opens after the first creation: (of a short-lived file, of a long-lived one).
    fn sessions(&self) -> (u64, u64) {
        let n = self.opens - self.document_count();
        let temp = n * self.temp_per_1000 / 1000;
        (temp, n - temp)
    }
    /// Mean bytes of a short-lived file, and rewritten per open of a long-lived one.
    fn session_bytes(&self) -> (u64, u64) {
        let rest = self.written - self.document_bytes();
        let rewrite = rest * self.rewrite_per_1000 / 1000;
        let (temp, docs) = self.sessions();
        ((rest - rewrite) / temp.max(1), rewrite / docs.max(1))
    }
}

/// One dbench client replaying [`NETBENCH`]: first its long-lived files, then opens of a new
/// short-lived file (created, written, read back one write in ten, deleted) or of a
/// long-lived one (looked up, part of it rewritten in place and read back), in the trace's
/// proportions, until it has written what the trace writes; then it deletes what it made.
/// Sizes and offsets are drawn uniformly around the trace's means.
struct DbenchClient {
    group: &'static str,
    reg: Reg,
    ops: Ops,
    stage: ClientStage,
    written: u64,
    /// Writes since the last read.
    since_read: u64,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum ClientStage {
    Start,
    /// Creating the long-lived files, the next one this: queued one at a time, as the
    /// queue runs dry, so a client never holds the whole 20 MiB's calls at once.
    Documents(usize),
    Sessions,
    Cleanup,
}

impl DbenchClient {
    fn new(group: &'static str, reg: Reg) -> Self {
        DbenchClient {
            group,
            reg,
            ops: Ops::default(),
            stage: ClientStage::Start,
            written: 0,
            since_read: 0,
        }
    }

    /// The writes (and the reads among them) of `bytes` from byte `from` of the file the
    /// cell will hold: appends or rewrites. Returns the trace lines they take.
    fn writes(&mut self, file: &Rc<Cell<u32>>, from: u64, bytes: u64, rewrite: bool) -> u64 {
        let nb = &NETBENCH;
        let chunk = nb.write_bytes();
        let (mut off, end, mut lines) = (from, from + bytes, 0);
        while off < end {
            let n = chunk.min(end - off);
            // Pages this write reaches first (a write inside the page the last one reached
            // adds none).
            let page = off.div_ceil(4096);
            let pages = (off + n).div_ceil(4096) - page;
            let c = file.clone();
            self.ops.push(move |_| {
                let f = c.get();
                Some(Action::Call(if rewrite {
                    Syscall::Rewrite {
                        file: f,
                        page,
                        bytes: pages * 4096,
                    }
                } else {
                    Syscall::Write {
                        file: f,
                        bytes: pages * 4096,
                    }
                }))
            });
            self.since_read += 1;
            if self.since_read == nb.writes_per_read {
                self.since_read = 0;
                let c = file.clone();
                self.ops.push(move |_| {
                    Some(Action::Call(Syscall::Read {
                        file: c.get(),
                        page: off / 4096,
                        bytes: n,
                    }))
                });
                lines += 1;
            }
            off += n;
            lines += 1;
        }
        self.written += bytes;
        lines
    }

    /// One open of the trace after the first creation.
    fn session(&mut self, cx: &mut ProgCx) {
        let nb = &NETBENCH;
        let (temp, docs) = nb.sessions();
        let (temp_bytes, rewrite_bytes) = nb.session_bytes();
        let lines = if cx.rng.gen_range(0..temp + docs) < temp {
            // A short-lived file: creat(), written, deleted.
            let bytes = cx.rng.gen_range(0..=2 * temp_bytes);
            let cur = self.ops.create(&self.reg, self.group, bytes.div_ceil(4096));
            let lines = self.writes(&cur, 0, bytes, false);
            let (g, r) = (self.group, self.reg.clone());
            self.ops.push(move |_| {
                let f = cur.get();
                r.borrow_mut().remove(g, f);
                Some(Action::Call(Syscall::Unlink { file: f }))
            });
            lines + 3
        } else {
            // A long-lived file: opened (path lookup), part of it rewritten.
            let which = cx.rng.gen_range(0..nb.document_count() as usize);
            let size = nb.document(which);
            let bytes = cx.rng.gen_range(0..=2 * rewrite_bytes).min(size);
            let from = cx.rng.gen_range(0..=size - bytes) & !4095;
            let cur = Rc::new(Cell::new(0));
            let (g, r, c) = (self.group, self.reg.clone(), cur.clone());
            self.ops.push(move |_| {
                let f = *r.borrow().get(g).get(which)?;
                c.set(f);
                Some(Action::Call(Syscall::Lookup { file: f }))
            });
            self.writes(&cur, from, bytes, true) + 2
        };
        // The client's parsing of those lines of the trace.
        self.ops.compute(lines * nb.parse_ns);
    }
}

impl Program for DbenchClient {
    fn next(&mut self, cx: &mut ProgCx) -> Action {
        loop {
            if let Some(a) = self.ops.pop(cx) {
                return a;
            }
            match self.stage {
                ClientStage::Start => {
                    self.stage = ClientStage::Documents(0);
                    self.ops.grow(200);
                }
                ClientStage::Documents(i) if i < NETBENCH.document_count() as usize => {
                    self.stage = ClientStage::Documents(i + 1);
                    let bytes = NETBENCH.document(i);
                    let cur = self.ops.create(&self.reg, self.group, bytes.div_ceil(4096));
                    let lines = self.writes(&cur, 0, bytes, false) + 2;
                    self.ops.compute(lines * NETBENCH.parse_ns);
                }
                ClientStage::Documents(_) => self.stage = ClientStage::Sessions,
                ClientStage::Sessions if self.written < NETBENCH.written => self.session(cx),
                ClientStage::Sessions => {
                    self.stage = ClientStage::Cleanup;
                    for f in self.reg.borrow_mut().take(self.group) {
                        self.ops.unlink(f);
                    }
                }
                ClientStage::Cleanup => return Action::Exit,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn netbench_figures_follow_from_the_sources() {
        let nb = &NETBENCH;
        // 56 long-lived files, 20 MiB; 90,000 lines less 2 x 3,700 opens and closes, nine
        // in ten of them writes, carry 100 MB: ~1.4 KB a write.
        assert_eq!((nb.document_count(), nb.document_bytes() >> 10), (56, 20_480));
        assert_eq!(nb.write_bytes(), 1410);
        assert_eq!(nb.document(0), 254 * 1024);
        assert_eq!(nb.document(49), 1824 * 1024);
        assert_eq!(nb.document(55), 1024 * 1024);
        // The other 3,644 opens: 27.5 % new short-lived files.
        assert_eq!(nb.sessions(), (1002, 2642));
        let (temp, rewrite) = nb.session_bytes();
        // The 80 MiB after the first creation: 55 % rewrites, the rest new files.
        assert_eq!((temp >> 10, rewrite >> 10), (36, 17));
    }
}
