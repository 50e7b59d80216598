//! Sets of CPUs (`struct cpumask`), as the scheduler's domains and the CPU loop use them.

/// Most CPUs a per-CPU-runqueue kernel runs on (a task's CPU is a `u8`).
pub const MAX_CPUS: usize = 256;

/// A set of CPUs (`struct cpumask` of `NR_CPUS` = [`MAX_CPUS`] bits).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuSet([u64; MAX_CPUS / 64]);

impl CpuSet {
    /// CPUs `0..n`.
    pub fn first(n: usize) -> Self {
        let mut s = CpuSet::default();
        (0..n.min(MAX_CPUS)).for_each(|c| s.insert(c));
        s
    }

    pub fn insert(&mut self, c: usize) {
        self.0[c / 64] |= 1 << (c % 64);
    }

    pub fn remove(&mut self, c: usize) {
        self.0[c / 64] &= !(1 << (c % 64));
    }

    /// The lowest CPU of the set from `c` on.
    #[inline]
    pub fn next_from(&self, c: usize) -> Option<usize> {
        let mut w = c / 64;
        let mut bits = *self.0.get(w)? & (!0u64 << (c % 64));
        loop {
            if bits != 0 {
                return Some(w * 64 + bits.trailing_zeros() as usize);
            }
            w += 1;
            bits = *self.0.get(w)?;
        }
    }

    #[inline]
    pub fn contains(&self, c: usize) -> bool {
        c < MAX_CPUS && self.0[c / 64] & (1 << (c % 64)) != 0
    }

    pub fn len(&self) -> usize {
        self.0.iter().map(|w| w.count_ones() as usize).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|&w| w == 0)
    }

    pub fn and(&self, o: &CpuSet) -> CpuSet {
        let mut s = *self;
        s.0.iter_mut().zip(o.0).for_each(|(a, b)| *a &= b);
        s
    }

    /// The CPUs in increasing order.
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        (0..MAX_CPUS / 64).flat_map(move |w| {
            let mut bits = self.0[w];
            std::iter::from_fn(move || {
                (bits != 0).then(|| {
                    let b = bits.trailing_zeros() as usize;
                    bits &= bits - 1;
                    w * 64 + b
                })
            })
        })
    }

    /// The CPUs in increasing order from `start`, wrapping (`for_each_cpu_wrap`).
    pub fn iter_wrap(&self, start: usize) -> impl Iterator<Item = usize> + '_ {
        self.iter()
            .filter(move |&c| c >= start)
            .chain(self.iter().filter(move |&c| c < start))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_from_finds_the_lowest_cpu_at_or_after() {
        let mut s = CpuSet::default();
        for c in [3, 64, 200, 255] {
            s.insert(c);
        }
        assert_eq!(s.next_from(0), Some(3));
        assert_eq!(s.next_from(3), Some(3));
        assert_eq!(s.next_from(4), Some(64));
        assert_eq!(s.next_from(65), Some(200));
        assert_eq!(s.next_from(255), Some(255));
        s.remove(255);
        assert_eq!(s.next_from(201), None);
        assert_eq!(s.next_from(MAX_CPUS), None);
    }
}
