//! `sysbench --test=fileio --file-total-size=SIZE --file-test-mode=rndrw prepare`, then the
//! same with `run`: seed 001's "Sysbench ... mix throughput", as sysbench 0.4's
//! `sysbench/tests/fileio/sb_fileio.c` does it (read in logicalclocks/sysbench-0.4.12, the
//! 0.4 line Ananiev's 2006 runs would have used; docs/fidelity.md "Seed 001").
//!
//! - `prepare` (`create_files`): `file-num` files of `file-total-size / file-num` bytes, each
//!   `open(O_CREAT | O_WRONLY)`, written from offset 0 one `file-block-size` `write()` at a
//!   time, `fsync`ed ("to prevent cache flush from affecting test results") and closed.
//!   Untimed.
//! - `run` (`file_get_rnd_request`, `file_execute_request`), one thread (`num-threads` 1),
//!   `file-io-mode` sync, no `file-extra-flags`: each request is a read while `(read_ops + 1)
//!   / (write_ops + 1) < file-rw-ratio`, else a write (so the mix is deterministic, 3 reads to
//!   2 writes at 1.5); its offset is `sb_rnd()` scaled to the total size and rounded down to a
//!   block, which picks the file and the offset in it; a `pread`/`pwrite` of one block. Once
//!   a write has been made (`is_dirty`), every `file-fsync-freq`-th request is followed by an
//!   `fsync` of each file in turn (`req_performed` does not move during the series, so the
//!   whole series runs), and after `max-requests` requests every file is fsynced
//!   (`file-fsync-end`). sysbench prints bytes read and written over the run's time (the
//!   fsyncs included) and requests a second; [`crate::measure::write_latency`] keeps both
//!   and each request's time.
//!
//! The model's `fsync` is its `sync` ([`Syscall::Fsync`]): the benchmark's files hold
//! the box's only dirty data. 2.6.17's `ext3_sync_file` also forces a journal commit for
//! each file whose inode is dirty (`sync_inode` -> `ext3_write_inode` ->
//! `ext3_force_commit`); the model's later fsyncs of a series find nothing dirty and commit
//! nothing (docs/fidelity.md says what that leaves out).

use super::iozone::timed;
use super::ops::{Batches, Ops, Reg, PROGRAM_PAGES};
use super::{Action, ProgCx, TaskSpec};
use crate::measure::write_latency::{IoOp, Pass};
use crate::workload::syscall::Syscall;
use rand::Rng as _;

/// The registry group holding the test files (`test_file.0` ...).
const GROUP: &str = "sysbench";

/// sysbench fileio's options this model takes, with sysbench 0.4's defaults (`fileio_args`
/// and `general_args` in sb_fileio.c and sysbench.c) where the seed gives none. In a workload
/// file, `sysbench = { file_mb = 512 }`: every option but `file_mb` may be left out (its
/// default).
#[derive(Clone, Copy, Debug, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fileio {
    /// `--file-total-size`, MB (MiB: sysbench's sizes are binary).
    pub file_mb: u64,
    /// `--file-num` (default 128).
    #[serde(default = "default::files")]
    pub files: u64,
    /// `--file-block-size`, KiB, whole pages (default 16384 bytes).
    #[serde(default = "default::block_kb")]
    pub block_kb: u64,
    /// `--file-rw-ratio` in hundredths: reads per 100 writes (default 1.5: 150).
    #[serde(default = "default::rw_ratio_pct")]
    pub rw_ratio_pct: u64,
    /// `--file-fsync-freq`: an fsync series after this many requests, 0 none (default 100).
    #[serde(default = "default::fsync_freq")]
    pub fsync_freq: u64,
    /// `--max-requests` (default 10000).
    #[serde(default = "default::requests")]
    pub requests: u64,
}

/// sysbench 0.4's defaults, one function a field (serde names them).
mod default {
    pub const fn files() -> u64 {
        128
    }
    pub const fn block_kb() -> u64 {
        16
    }
    pub const fn rw_ratio_pct() -> u64 {
        150
    }
    pub const fn fsync_freq() -> u64 {
        100
    }
    pub const fn requests() -> u64 {
        10_000
    }
}

impl Fileio {
    /// sysbench 0.4's defaults for a total size of `file_mb`.
    pub const fn defaults(file_mb: u64) -> Fileio {
        Fileio {
            file_mb,
            files: default::files(),
            block_kb: default::block_kb(),
            rw_ratio_pct: default::rw_ratio_pct(),
            fsync_freq: default::fsync_freq(),
            requests: default::requests(),
        }
    }
    /// Bytes of one file (`file_size = total_size / num_files`).
    fn file_bytes(&self) -> u64 {
        (self.file_mb << 20) / self.files.max(1)
    }
    /// Whole blocks in one file: the range of a request's offset.
    pub fn blocks_per_file(&self) -> u64 {
        self.file_bytes() / (self.block_kb * 1024).max(1)
    }
    fn block_pages(&self) -> u64 {
        self.block_kb / 4
    }
    /// Why these options cannot run, naming the option's size key; None if they can.
    pub fn check(&self) -> Option<(&'static str, String)> {
        (self.blocks_per_file() == 0).then(|| {
            (
                "sysbench.block_kb",
                format!(
                    "a {} KiB block does not fit in one of the {} files of {} MB ({} bytes each)",
                    self.block_kb,
                    self.files,
                    self.file_mb,
                    self.file_bytes()
                ),
            )
        })
    }
    /// The command line as sysbench 0.4 takes it.
    pub fn label(&self) -> String {
        format!(
            "sysbench --test=fileio --file-total-size={}M --file-num={} --file-block-size={} --file-rw-ratio={} --file-fsync-freq={} --max-requests={} --file-test-mode=rndrw",
            self.file_mb,
            self.files,
            self.block_kb * 1024,
            self.rw_ratio_pct as f64 / 100.0,
            self.fsync_freq,
            self.requests
        )
    }
}

/// What `file_get_rnd_request` hands out next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Request {
    /// A `pread` (false) or `pwrite` (true) of one block at block `block` of file `file`.
    Io { write: bool, file: u64, block: u64 },
    /// An `fsync` of file `file`.
    Fsync { file: u64 },
}

/// `file_get_rnd_request`'s state in `rndrw` mode, one thread.
#[derive(Clone, Debug)]
pub struct Requests {
    f: Fileio,
    read_ops: u64,
    write_ops: u64,
    req_performed: u64,
    is_dirty: bool,
    fsynced_file: u64,
    fsynced_file2: u64,
}

impl Requests {
    pub fn new(f: Fileio) -> Self {
        Requests {
            f,
            read_ops: 0,
            write_ops: 0,
            req_performed: 0,
            is_dirty: false,
            fsynced_file: 0,
            fsynced_file2: 0,
        }
    }

    /// The next request, `None` once the run is over; `draw(n)` is `sb_rnd()` scaled to `0..n`.
    pub fn next(&mut self, draw: impl FnOnce(u64) -> u64) -> Option<Request> {
        let f = &self.f;
        if self.req_performed == f.requests {
            // file_fsync_end: every file once, then the NULL request.
            if self.fsynced_file2 < f.files {
                self.fsynced_file2 += 1;
                return Some(Request::Fsync {
                    file: self.fsynced_file2 - 1,
                });
            }
            return None;
        }
        if f.fsync_freq != 0 && self.is_dirty && self.req_performed.is_multiple_of(f.fsync_freq) {
            let file = self.fsynced_file;
            self.fsynced_file += 1;
            if self.fsynced_file == f.files {
                self.fsynced_file = 0;
                self.is_dirty = false;
            }
            return Some(Request::Fsync { file });
        }
        // (read_ops + 1) / (write_ops + 1) < file_rw_ratio, in hundredths.
        let write = (self.read_ops + 1) * 100 >= f.rw_ratio_pct * (self.write_ops + 1);
        let per_file = f.blocks_per_file();
        let at = draw(f.files * per_file);
        self.req_performed += 1;
        if write {
            self.write_ops += 1;
            self.is_dirty = true;
        } else {
            self.read_ops += 1;
        }
        Some(Request::Io {
            write,
            file: at / per_file,
            block: at % per_file,
        })
    }
}

/// The `sysbench` command: `prepare` (at `stage` 0), then `run`, each a process waited for;
/// false after both.
pub(crate) fn refill(o: &mut Ops, reg: &Reg, stage: u32, f: Fileio) -> bool {
    let phase = match stage {
        0 => Phase::Prepare,
        1 => Phase::Run,
        _ => return false,
    };
    let reg = reg.clone();
    o.spawn(move |_| TaskSpec::user("sysbench", Box::new(Sysbench::new(f, phase, reg))));
    o.push(|_| Some(Action::WaitChildren));
    true
}

/// Which sysbench invocation a process is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Prepare,
    Run,
}

/// One `sysbench --test=fileio ... prepare` or `... run` process.
pub struct Sysbench {
    f: Fileio,
    phase: Phase,
    reg: Reg,
    ops: Ops,
    /// Prepare: files created so far.
    created: u64,
    /// Run: the request generator (None before the run's set-up).
    requests: Option<Requests>,
}

impl Sysbench {
    pub fn new(f: Fileio, phase: Phase, reg: Reg) -> Self {
        Sysbench {
            f,
            phase,
            reg,
            ops: Ops::default(),
            created: 0,
            requests: None,
        }
    }

    /// Queue the process's next work; false when it is done.
    fn next_batch(&mut self, cx: &mut ProgCx) -> bool {
        let f = self.f;
        let block = f.block_kb * 1024;
        match self.phase {
            Phase::Prepare => {
                if self.created == 0 {
                    // The aligned block buffer (sb_memalign) and the program itself.
                    self.ops.grow(f.block_pages() + PROGRAM_PAGES);
                }
                if self.created == f.files {
                    return false;
                }
                self.created += 1;
                // create_files: creat(), the file's whole blocks written in order, fsync, close.
                self.ops
                    .create_write(&self.reg, GROUP, f.blocks_per_file() * block, block);
                self.ops.call(Syscall::Fsync);
                true
            }
            Phase::Run => {
                let reqs = self.requests.get_or_insert_with(|| {
                    self.ops.grow(f.block_pages() + PROGRAM_PAGES);
                    Requests::new(f)
                });
                let Some(req) = reqs.next(|n| cx.rng.gen_range(0..n)) else {
                    return false;
                };
                match req {
                    // Whichever file it names: the model's fsync is its sync.
                    Request::Fsync { .. } => timed(&mut self.ops, Pass::Rndrw, IoOp::Fsync, 0, 0, |_| Syscall::Fsync),
                    Request::Io { write, file, block: b } => {
                        let fd = *self
                            .reg
                            .borrow()
                            .get(GROUP)
                            .get(file as usize)
                            .expect("prepare created every file a request names");
                        let page = b * f.block_pages();
                        let offset_kb = (file * f.blocks_per_file() + b) * f.block_kb;
                        if write {
                            timed(&mut self.ops, Pass::Rndrw, IoOp::Write, offset_kb, block, move |_| {
                                Syscall::Rewrite {
                                    file: fd,
                                    page,
                                    bytes: block,
                                }
                            });
                        } else {
                            timed(&mut self.ops, Pass::Rndrw, IoOp::Read, offset_kb, block, move |_| {
                                Syscall::Read {
                                    file: fd,
                                    page,
                                    bytes: block,
                                }
                            });
                        }
                    }
                }
                true
            }
        }
    }
}

impl Batches for Sysbench {
    fn ops(&mut self) -> &mut Ops {
        &mut self.ops
    }
    fn refill(&mut self, cx: &mut ProgCx) -> bool {
        self.next_batch(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(f: Fileio) -> Vec<Request> {
        let mut r = Requests::new(f);
        let mut n = 0u64;
        std::iter::from_fn(|| {
            n += 7;
            r.next(|m| n % m)
        })
        .collect()
    }

    #[test]
    fn the_mix_follows_the_ratio_and_stays_on_whole_blocks_of_the_files() {
        for (pct, reads, writes) in [(150, 6000, 4000), (100, 5000, 5000), (300, 7500, 2500), (0, 0, 10_000)] {
            let f = Fileio {
                rw_ratio_pct: pct,
                ..Fileio::defaults(512)
            };
            let reqs = all(f);
            let io: Vec<(bool, u64, u64)> = reqs
                .iter()
                .filter_map(|r| match *r {
                    Request::Io { write, file, block } => Some((write, file, block)),
                    _ => None,
                })
                .collect();
            let w = io.iter().filter(|x| x.0).count();
            assert_eq!((io.len() - w, w), (reads, writes), "ratio {pct}");
            assert!(io.iter().all(|&(_, file, block)| file < 128 && block < 256));
        }
        // At 1.5 the first requests go read, write, read, write, read, read, write.
        let first: Vec<bool> = all(Fileio::defaults(512))
            .iter()
            .take(7)
            .map(|r| matches!(r, Request::Io { write: true, .. }))
            .collect();
        assert_eq!(first, [false, true, false, true, false, false, true]);
    }

    #[test]
    fn an_fsync_series_of_every_file_follows_each_hundredth_request_once_a_write_was_made() {
        let reqs = all(Fileio::defaults(512));
        let mut done = 0u64;
        let mut i = 0;
        let mut series = 0;
        while i < reqs.len() {
            match reqs[i] {
                Request::Io { .. } => {
                    done += 1;
                    i += 1;
                }
                Request::Fsync { .. } => {
                    // A whole series: files 0..128 in order, right after a hundredth request
                    // (or the last one: file-fsync-end).
                    assert!(done.is_multiple_of(100), "series after request {done}");
                    let files: Vec<u64> = reqs[i..i + 128]
                        .iter()
                        .map(|r| match r {
                            Request::Fsync { file } => *file,
                            r => panic!("{r:?} inside a series"),
                        })
                        .collect();
                    assert_eq!(files, (0..128).collect::<Vec<_>>());
                    series += 1;
                    i += 128;
                }
            }
        }
        // After requests 100, 200, ..., 9900 and the final one.
        assert_eq!((done, series), (10_000, 100));
        // Without fsync-freq only the final series; without writes no periodic series.
        let none = all(Fileio {
            fsync_freq: 0,
            ..Fileio::defaults(512)
        });
        assert_eq!(none.iter().filter(|r| matches!(r, Request::Fsync { .. })).count(), 128);
        let reads_only = all(Fileio {
            rw_ratio_pct: 1_000_000,
            requests: 1000,
            ..Fileio::defaults(512)
        });
        assert_eq!(
            reads_only.iter().filter(|r| matches!(r, Request::Fsync { .. })).count(),
            128
        );
    }

    #[test]
    fn a_block_larger_than_a_file_is_named() {
        assert!(Fileio::defaults(512).check().is_none());
        let (field, why) = Fileio {
            file_mb: 1,
            ..Fileio::defaults(1)
        }
        .check()
        .unwrap();
        assert_eq!(field, "sysbench.block_kb");
        assert!(why.contains("16 KiB") && why.contains("8192 bytes"), "{why}");
    }
}
