//! Work accounting shared by every allocator: counts entries read and tracks the longest
//! stretch of them done while some lock is held (nested locks count as one stretch; the
//! stretch ends when the last lock is dropped).

use crate::Work;

#[derive(Debug, Default)]
pub(crate) struct Meter {
    work: Work,
    depth: u32,
    stretch: u64,
}

impl Meter {
    /// Take a lock (spinlock, mutex, or a preemption-disabling local lock).
    pub(crate) fn lock(&mut self) {
        self.work.lock_acquisitions += 1;
        self.depth += 1;
    }

    /// Drop a lock; dropping the outermost one ends the current stretch.
    pub(crate) fn unlock(&mut self) {
        debug_assert!(self.depth > 0, "unlock without lock");
        self.depth = self.depth.saturating_sub(1);
        if self.depth == 0 {
            self.stretch = 0;
        }
    }

    /// Read `n` entries (or visit `n` nodes), under whatever locks are held now.
    pub(crate) fn read(&mut self, n: u64) {
        self.work.entries += n;
        if self.depth > 0 {
            self.stretch += n;
            self.work.max_locked = self.work.max_locked.max(self.stretch);
        }
    }

    /// The work done so far. All locks must have been dropped.
    pub(crate) fn finish(self) -> Work {
        debug_assert_eq!(self.depth, 0, "finish with a lock held");
        self.work
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stretch_spans_nested_locks_and_ends_at_the_outermost_unlock() {
        let mut m = Meter::default();
        m.read(5); // unlocked: not a stretch
        m.lock();
        m.read(3);
        m.lock();
        m.read(4);
        m.unlock();
        m.read(1); // still under the outer lock
        m.unlock();
        m.lock();
        m.read(2);
        m.unlock();
        let w = m.finish();
        assert_eq!(w.entries, 15);
        assert_eq!(w.max_locked, 8);
        assert_eq!(w.lock_acquisitions, 3);
    }
}
