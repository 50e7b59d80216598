//! A page count kept per address space. The kernel keeps such counts in `struct mm_struct`
//! itself (`rss`, `anon_rss` of 2.6's include/linux/sched.h), one pointer away from the
//! page being handled. The model numbers the kernel's address spaces up from 1 as they are
//! created (`Kernel::spawn`) and the preloaded ones down from `u32::MAX` (`preload` in
//! lib.rs), so two tables indexed from either end reach a count as directly.

/// Counts by address-space number; an address space never counted reads 0.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PerMm {
    /// Address spaces 0 ..= i32::MAX, by number.
    up: Vec<u64>,
    /// Those above, by `u32::MAX - number`.
    down: Vec<u64>,
}

impl PerMm {
    fn slot(mm: u32) -> (bool, usize) {
        match mm.checked_sub(1 << 31) {
            None => (true, mm as usize),
            Some(_) => (false, (u32::MAX - mm) as usize),
        }
    }

    pub fn get(&self, mm: u32) -> u64 {
        let (up, i) = Self::slot(mm);
        let table = if up { &self.up } else { &self.down };
        table.get(i).copied().unwrap_or(0)
    }

    pub fn get_mut(&mut self, mm: u32) -> &mut u64 {
        let (up, i) = Self::slot(mm);
        let table = if up { &mut self.up } else { &mut self.down };
        if table.len() <= i {
            table.resize(i + 1, 0);
        }
        &mut table[i]
    }

    /// Every count back to 0.
    pub fn clear(&mut self) {
        self.up.fill(0);
        self.down.fill(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_at_both_ends_of_the_numbering_are_kept_apart() {
        let mut c = PerMm::default();
        for (mm, n) in [(0, 1), (3, 2), (1000, 3), (u32::MAX, 4), (u32::MAX - 4, 5)] {
            *c.get_mut(mm) += n;
        }
        let read = |c: &PerMm| [0, 3, 1000, u32::MAX, u32::MAX - 4, 7, u32::MAX - 1].map(|mm| c.get(mm));
        assert_eq!(read(&c), [1, 2, 3, 4, 5, 0, 0]);
        c.clear();
        assert_eq!(read(&c), [0; 7]);
    }
}
