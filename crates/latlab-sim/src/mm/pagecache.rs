//! Which pages of a file the page cache holds (2.4's page hash, `find_get_page(mapping,
//! index)` of mm/filemap.c), as ranges of page indexes, with each page's PG_referenced.
//!
//! Each cached page also carries the stamp of the LRU run it sits in ([`super::Mm`]'s
//! lists): a run covers a range of one file's indexes and counts only the pages there that
//! carry its stamp. A page that is freed, truncated or moved to another run (activated,
//! rotated by a scan) loses or changes its stamp, so the runs it left stop counting it
//! without being touched. Stamps of active-list runs are odd, of inactive-list runs even
//! ([`is_active`]).

use std::collections::BTreeMap;

/// A stamp of a run on the active list?
pub fn is_active(stamp: u64) -> bool {
    stamp & 1 == 1
}

/// What a cached page carries: its run's stamp and PG_referenced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tag {
    pub stamp: u64,
    pub referenced: bool,
}

/// A file's cached pages: `lo -> (hi, tag)`, disjoint, neighbours with one tag merged.
#[derive(Clone, Debug, Default)]
pub struct PageSet {
    ranges: BTreeMap<u64, (u64, Tag)>,
    len: u64,
    /// Of those, on the active list.
    active: u64,
}

impl PageSet {
    /// Pages held.
    pub fn count(&self) -> u64 {
        self.len
    }

    /// Pages held on the active list.
    pub fn count_active(&self) -> u64 {
        self.active
    }

    /// The ranges overlapping `lo..hi`, clipped to it: (lo, hi, tag), in order.
    fn overlaps(&self, lo: u64, hi: u64) -> impl Iterator<Item = (u64, u64, Tag)> + '_ {
        let head = if lo < hi {
            self.ranges
                .range(..lo)
                .next_back()
                .filter(|(_, &(b, _))| b > lo)
                .map(|(_, &(b, t))| (lo, b.min(hi), t))
        } else {
            None
        };
        let rest = if lo < hi { Some(self.ranges.range(lo..hi)) } else { None };
        head.into_iter()
            .chain(rest.into_iter().flatten().map(move |(&a, &(b, t))| (a, b.min(hi), t)))
    }

    /// The held ranges of `lo..hi`, clipped to it, with their tags, in order.
    pub fn tagged(&self, lo: u64, hi: u64) -> Vec<(u64, u64, Tag)> {
        self.overlaps(lo, hi).collect()
    }

    fn count_out(&mut self, n: u64, t: Tag) {
        self.len -= n;
        if is_active(t.stamp) {
            self.active -= n;
        }
    }

    /// Take `lo..hi` out of the set; returns the pages that were there.
    pub fn remove(&mut self, lo: u64, hi: u64) -> u64 {
        if lo >= hi {
            return 0;
        }
        // A range straddling `lo` is split there, so every range to cut starts inside.
        if let Some((&a, &(b, t))) = self.ranges.range(..lo).next_back() {
            if b > lo {
                self.ranges.insert(a, (lo, t));
                self.ranges.insert(lo, (b, t));
            }
        }
        let inside: Vec<(u64, (u64, Tag))> = self.ranges.range(lo..hi).map(|(&a, &v)| (a, v)).collect();
        let mut gone = 0;
        for (a, (b, t)) in inside {
            self.ranges.remove(&a);
            if b > hi {
                self.ranges.insert(hi, (b, t));
            }
            let n = b.min(hi) - a;
            self.count_out(n, t);
            gone += n;
        }
        gone
    }

    /// Add the pages of `lo..hi` not held yet, at most `max`, lowest first, with `stamp`
    /// and PG_referenced `referenced`; returns how many were added.
    pub fn add_missing(&mut self, lo: u64, hi: u64, stamp: u64, max: u64, referenced: bool) -> u64 {
        let mut added = 0;
        let mut at = lo;
        let mut gaps = Vec::new();
        for (a, b, _) in self.overlaps(lo, hi) {
            if a > at {
                gaps.push((at, a));
            }
            at = b;
        }
        if at < hi {
            gaps.push((at, hi));
        }
        for (a, b) in gaps {
            let n = (b - a).min(max - added);
            if n == 0 {
                break;
            }
            self.put_new(a, a + n, Tag { stamp, referenced });
            added += n;
        }
        added
    }

    /// `lo..hi`, none of it held, held now with `tag`.
    fn put_new(&mut self, lo: u64, hi: u64, tag: Tag) {
        self.len += hi - lo;
        if is_active(tag.stamp) {
            self.active += hi - lo;
        }
        let (mut lo, mut hi) = (lo, hi);
        if let Some((&a, &(b, t))) = self.ranges.range(..lo).next_back() {
            if b == lo && t == tag {
                self.ranges.remove(&a);
                lo = a;
            }
        }
        if let Some(&(b, t)) = self.ranges.get(&hi) {
            if t == tag {
                self.ranges.remove(&hi);
                hi = b;
            }
        }
        self.ranges.insert(lo, (hi, tag));
    }

    /// Give the held pages of `lo..hi` that carry `old` (all held ones if `old` is None) the
    /// stamp `new` (and PG_referenced `referenced`, if given), at most `max` of them, lowest
    /// first; returns how many.
    pub fn restamp(&mut self, lo: u64, hi: u64, old: Option<u64>, new: u64, max: u64, referenced: Option<bool>) -> u64 {
        let mut n = 0;
        for (a, b, t) in self.first(lo, hi, old, max) {
            self.remove(a, b);
            let tag = Tag {
                stamp: new,
                referenced: referenced.unwrap_or(t.referenced),
            };
            self.put_new(a, b, tag);
            n += b - a;
        }
        n
    }

    /// The held ranges of `lo..hi` (only those carrying `stamp`, if given), in order, cut to
    /// their first `n` pages.
    fn first(&self, lo: u64, hi: u64, stamp: Option<u64>, n: u64) -> Vec<(u64, u64, Tag)> {
        let mut left = n;
        let mut out = Vec::new();
        for (a, b, t) in self.overlaps(lo, hi) {
            if stamp.is_some_and(|s| s != t.stamp) {
                continue;
            }
            let take = (b - a).min(left);
            if take == 0 {
                break;
            }
            out.push((a, a + take, t));
            left -= take;
        }
        out
    }

    /// Is every held page of `lo..hi` such that `ok(tag)`?
    pub fn all(&self, lo: u64, hi: u64, ok: impl Fn(Tag) -> bool) -> bool {
        self.overlaps(lo, hi).all(|(_, _, t)| ok(t))
    }

    /// Set or clear PG_referenced on the held pages of `lo..hi`.
    pub fn set_referenced(&mut self, lo: u64, hi: u64, on: bool) {
        for (a, b, t) in self.tagged(lo, hi) {
            if t.referenced != on {
                self.remove(a, b);
                self.put_new(a, b, Tag { referenced: on, ..t });
            }
        }
    }

    /// Pages of `lo..hi` carrying `stamp`.
    pub fn live(&self, lo: u64, hi: u64, stamp: u64) -> u64 {
        self.overlaps(lo, hi)
            .filter(|&(_, _, t)| t.stamp == stamp)
            .map(|(a, b, _)| b - a)
            .sum()
    }

    /// The ranges of `lo..hi` carrying `stamp`, with their PG_referenced.
    pub fn live_ranges(&self, lo: u64, hi: u64, stamp: u64) -> Vec<(u64, u64, bool)> {
        self.overlaps(lo, hi)
            .filter(|&(_, _, t)| t.stamp == stamp)
            .map(|(a, b, t)| (a, b, t.referenced))
            .collect()
    }

    /// Remove the first `n` held pages of `lo..hi` (only those carrying `stamp`, if given);
    /// returns how many went.
    pub fn remove_first(&mut self, lo: u64, hi: u64, stamp: Option<u64>, n: u64) -> u64 {
        self.first(lo, hi, stamp, n)
            .into_iter()
            .map(|(a, b, _)| self.remove(a, b))
            .sum()
    }

    /// How many pages from `from` on are held without a gap (0 if `from` is not held).
    pub fn run_from(&self, from: u64) -> u64 {
        let mut at = from;
        loop {
            let next = match self.ranges.range(..=at).next_back() {
                Some((_, &(b, _))) if b > at => b,
                _ => return at - from,
            };
            at = next;
        }
    }

    /// How many pages from `from` on are not held, up to `limit`.
    pub fn gap_from(&self, from: u64, limit: u64) -> u64 {
        if self.run_from(from) > 0 {
            return 0;
        }
        match self.ranges.range(from..).next() {
            Some((&a, _)) => (a - from).min(limit),
            None => limit,
        }
    }

    /// Pages held at `from` and above.
    pub fn count_from(&self, from: u64) -> u64 {
        self.overlaps(from, u64::MAX).map(|(a, b, _)| b - a).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pages held, one by one, with their stamps and PG_referenced.
    fn pages(p: &PageSet) -> Vec<(u64, u64, bool)> {
        p.ranges
            .iter()
            .flat_map(|(&a, &(b, t))| (a..b).map(move |i| (i, t.stamp, t.referenced)))
            .collect()
    }

    #[test]
    fn a_set_agrees_with_a_page_by_page_model() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        let mut p = PageSet::default();
        let mut m: BTreeMap<u64, (u64, bool)> = BTreeMap::new();
        for step in 0..6000u64 {
            let lo = rng.gen_range(0..60);
            let hi = lo + rng.gen_range(0..20);
            let stamp = rng.gen_range(0..4);
            let max = rng.gen_range(0..25);
            match rng.gen_range(0..7) {
                0 => {
                    let r = rng.gen_bool(0.5);
                    let added = p.add_missing(lo, hi, stamp, max, r);
                    let mut want = 0;
                    for i in lo..hi {
                        if want < max && !m.contains_key(&i) {
                            m.insert(i, (stamp, r));
                            want += 1;
                        }
                    }
                    assert_eq!(added, want, "step {step}");
                }
                1 => {
                    let gone = p.remove(lo, hi);
                    let want = (lo..hi).filter(|i| m.remove(i).is_some()).count() as u64;
                    assert_eq!(gone, want, "step {step}");
                }
                2 => {
                    let old = stamp;
                    let r = [None, Some(true), Some(false)][rng.gen_range(0..3)];
                    let n = p.restamp(lo, hi, Some(old), 9 + step, max, r);
                    let mut want = 0;
                    for i in lo..hi {
                        if want < max && m.get(&i).is_some_and(|e| e.0 == old) {
                            let e = m.get_mut(&i).expect("held");
                            *e = (9 + step, r.unwrap_or(e.1));
                            want += 1;
                        }
                    }
                    assert_eq!(n, want, "step {step}");
                }
                3 => {
                    let gone = p.remove_first(lo, hi, Some(stamp), max);
                    let mut want = 0;
                    for i in lo..hi {
                        if want < max && m.get(&i).is_some_and(|e| e.0 == stamp) {
                            m.remove(&i);
                            want += 1;
                        }
                    }
                    assert_eq!(gone, want, "step {step}");
                }
                4 => {
                    let gone = p.remove_first(lo, u64::MAX, None, max);
                    let take: Vec<u64> = m.range(lo..).map(|(&i, _)| i).take(max as usize).collect();
                    for i in &take {
                        m.remove(i);
                    }
                    assert_eq!(gone, take.len() as u64, "step {step}");
                }
                5 => {
                    let on = rng.gen_bool(0.5);
                    p.set_referenced(lo, hi, on);
                    for (_, e) in m.range_mut(lo..hi) {
                        e.1 = on;
                    }
                }
                _ => {
                    let run = (lo..).take_while(|i| m.contains_key(i)).count() as u64;
                    assert_eq!(p.run_from(lo), run);
                    let gap = (lo..lo + 30).take_while(|i| !m.contains_key(i)).count() as u64;
                    let gap = if run > 0 { 0 } else { gap.min(30) };
                    assert_eq!(p.gap_from(lo, 30), gap);
                    assert_eq!(p.count_from(lo), m.range(lo..).count() as u64);
                    let live = (lo..hi).filter(|i| m.get(i).is_some_and(|e| e.0 == stamp)).count() as u64;
                    assert_eq!(p.live(lo, hi, stamp), live);
                }
            }
            assert_eq!(
                pages(&p),
                m.iter().map(|(&i, &(s, r))| (i, s, r)).collect::<Vec<_>>(),
                "step {step}"
            );
            assert_eq!(p.count(), m.len() as u64, "step {step}");
            let active = m.values().filter(|e| is_active(e.0)).count() as u64;
            assert_eq!(p.count_active(), active, "step {step}");
        }
    }
}
