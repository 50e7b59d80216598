//! `dbench:N`: N clients (threads of the load child), each churning files in its own directory
//! the way a file server does: create + write 64 KiB, read it back, rename, unlink, with an
//! fsync every 8th file. Counter: `ops` (one per create/write, read, rename, unlink, fsync).

use super::counters::Counters;
use std::io::{Read, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

/// Bytes written per file.
const FILE: usize = 64 << 10;

/// Run `clients` churning threads until `stop`.
pub fn run(dir: &Path, stop: &AtomicBool, counters: &Counters, clients: u32) -> std::io::Result<()> {
    counters.add("ops", 0);
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..clients)
            .map(|c| {
                let d = dir.join(format!("client{c:03}"));
                s.spawn(move || client(&d, c, stop, counters))
            })
            .collect();
        let mut r = Ok(());
        for w in workers {
            let one = w
                .join()
                .unwrap_or_else(|_| Err(std::io::Error::other("dbench client panicked")));
            if r.is_ok() {
                r = one;
            }
        }
        r
    })
}

fn client(d: &Path, id: u32, stop: &AtomicBool, counters: &Counters) -> std::io::Result<()> {
    std::fs::create_dir_all(d)?;
    let r = (|| {
        let data: Vec<u8> = (0..FILE).map(|i| (i as u32 ^ id) as u8).collect();
        let mut back = Vec::with_capacity(FILE);
        let mut n = 0u64;
        while !stop.load(Ordering::Relaxed) {
            let a = d.join(format!("f{}", n % 16));
            let b = d.join(format!("r{}", n % 16));
            let mut f = std::fs::File::create(&a)?;
            f.write_all(&data)?;
            if n.is_multiple_of(8) {
                f.sync_data()?;
                counters.add("ops", 1);
            }
            drop(f);
            back.clear();
            std::fs::File::open(&a)?.read_to_end(&mut back)?;
            if back != data {
                return Err(std::io::Error::other(format!("{}: read back differs", a.display())));
            }
            std::fs::rename(&a, &b)?;
            std::fs::remove_file(&b)?;
            counters.add("ops", 4);
            counters.ready();
            n += 1;
        }
        Ok(())
    })();
    let _ = std::fs::remove_dir_all(d);
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::testutil::run_for;
    use std::time::Duration;

    #[test]
    fn clients_churn_and_clean_up() {
        let (tmp, c, _) = run_for("dbench", Duration::from_millis(500), |d, s, c| run(d, s, c, 2));
        assert!(c.get("ops") >= 8, "{}", c.get("ops"));
        assert_eq!(std::fs::read_dir(tmp.work()).unwrap().count(), 0);
    }
}
