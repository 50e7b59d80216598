//! `tar`: unpacks and deletes a source-tree-like tree of many small files: 5000 files of
//! 0-8 KiB in 50 directories, then `rm -rf`, repeat. Counters: `files_created`, `trees_removed`.

use super::counters::Counters;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

/// Files per tree.
const FILES: usize = 5000;
/// Directories per tree.
const DIRS: usize = 50;
/// Largest file.
const MAX_FILE: usize = 8 << 10;

/// Create and remove the tree under `dir` until `stop`.
pub fn run(dir: &Path, stop: &AtomicBool, counters: &Counters) -> std::io::Result<()> {
    counters.add("files_created", 0);
    counters.add("trees_removed", 0);
    let data: Vec<u8> = (0..MAX_FILE)
        .map(|i| b"int main(void) { return 0; }\n"[i % 29])
        .collect();
    let tree = dir.join("tree");
    let r = (|| {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        while !stop.load(Ordering::Relaxed) {
            let _ = std::fs::remove_dir_all(&tree);
            for d in 0..DIRS {
                std::fs::create_dir_all(tree.join(format!("d{d:02}")))?;
            }
            let mut complete = true;
            for i in 0..FILES {
                if stop.load(Ordering::Relaxed) {
                    complete = false;
                    break;
                }
                let len = (super::xorshift64(&mut seed) % (MAX_FILE as u64 + 1)) as usize;
                std::fs::write(tree.join(format!("d{:02}/f{i:04}.c", i % DIRS)), &data[..len])?;
                counters.add("files_created", 1);
                counters.ready();
            }
            std::fs::remove_dir_all(&tree)?;
            if complete {
                counters.add("trees_removed", 1);
            }
        }
        Ok(())
    })();
    let _ = std::fs::remove_dir_all(&tree);
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::testutil::run_for;
    use std::time::Duration;

    #[test]
    fn creates_and_removes_trees() {
        let (tmp, c, _) = run_for("tar", Duration::from_millis(700), run);
        let files = c.get("files_created");
        assert!(files > 0);
        if files >= FILES as u64 {
            assert!(c.get("trees_removed") >= 1);
        }
        assert!(!tmp.work().join("tree").exists());
    }
}
