//! Which pages of a file the page cache holds (2.4's page hash, `find_get_page(mapping,
//! index)` of mm/filemap.c), as ranges of page indexes, with each page's PG_referenced.
//!
//! Each cached page also carries the stamp of the LRU run it sits in ([`super::Mm`]'s
//! lists): a run covers a range of one file's indexes and counts only the pages there that
//! carry its stamp. A page that is freed, truncated or moved to another run (activated,
//! rotated by a scan) loses or changes its stamp, so the runs it left stop counting it
//! without being touched. Stamps of active-list runs are odd, of inactive-list runs even
//! ([`is_active`]).

/// 6.x's page cache holds a file's pages in folios of 2^order pages, each one entry of the
/// mapping's xarray, locked, dirtied, written and freed as one (include/linux/pagemap.h,
/// mm/filemap.c of 6.18). The model keeps one order per file ([`super::FileRec::folio_order`]:
/// the order of the folios its latest write created; the workloads write each file with one
/// size, aligned), and the walks over a file's folios count its pages, a folio every
/// `1 << order` of them.
///
/// `MAX_PAGECACHE_ORDER` on x86-64: `min(MAX_XAS_ORDER, PMD_ORDER)` = 9, folios of up to
/// 2 MiB (include/linux/pagemap.h).
pub const MAX_PAGECACHE_ORDER: u8 = 9;

/// `FOLIO_BATCH_SIZE` (include/linux/pagevec.h, 6.x: 31): the folios a walk looks up at a
/// time (`filemap_get_folios_tag`, `find_lock_entries`) before its `cond_resched()`.
pub const FOLIO_BATCH: u64 = 31;

/// The order of the folio a buffered write of `len` bytes at page `index` gets, as 6.18's
/// `generic_perform_write` asks for it: `write_begin` gets `len` (at most
/// `mapping_max_folio_size`, 2 MiB, less the offset inside it), `fgf_set_order(len)` makes
/// it `ilog2(len) - PAGE_SHIFT` (0 for a page or less), and `__filemap_get_folio` caps it
/// at the mapping's maximum (`MAX_PAGECACHE_ORDER` for ext4's regular files since 6.16) and
/// lowers it to the alignment of `index` (`if (index & ((1 << order) - 1)) order =
/// __ffs(index)`). A mapping without large folios (`large`: false) gets order 0.
pub fn write_folio_order(index: u64, len: u64, large: bool) -> u8 {
    if !large || len <= 4096 {
        return 0;
    }
    let chunk = 4096u64 << MAX_PAGECACHE_ORDER;
    let offset = (index * 4096) % chunk;
    let len = len.min(chunk - offset);
    let mut order = (len.ilog2().saturating_sub(12) as u8).min(MAX_PAGECACHE_ORDER);
    if index & ((1 << order) - 1) != 0 {
        order = index.trailing_zeros() as u8;
    }
    order
}

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

/// A file's cached pages: ranges `(lo, hi, tag)`, disjoint, sorted, neighbours with one tag
/// merged. A file holds tens to a few hundred ranges (a dbench run's largest: 511), so a
/// sorted vector searched by bisection beats a tree (BENCHMARKS.md, issue 20's profile).
#[derive(Clone, Debug, Default)]
pub struct PageSet {
    ranges: Vec<(u64, u64, Tag)>,
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

    /// Index of the first range ending after `at` (the one holding `at`, or the next).
    fn first_after(&self, at: u64) -> usize {
        self.ranges.partition_point(|&(_, b, _)| b <= at)
    }

    /// The ranges overlapping `lo..hi`, clipped to it: (lo, hi, tag), in order.
    fn overlaps(&self, lo: u64, hi: u64) -> impl Iterator<Item = (u64, u64, Tag)> + '_ {
        let from = if lo < hi {
            self.first_after(lo)
        } else {
            self.ranges.len()
        };
        self.ranges[from..]
            .iter()
            .take_while(move |&&(a, _, _)| a < hi)
            .map(move |&(a, b, t)| (a.max(lo), b.min(hi), t))
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
        let i = self.first_after(lo);
        let j = i + self.ranges[i..].partition_point(|&(a, _, _)| a < hi);
        if i == j {
            return 0;
        }
        // What survives: the part of the first range below `lo`, of the last above `hi`.
        let (a0, _, t0) = self.ranges[i];
        let (_, b1, t1) = self.ranges[j - 1];
        let mut gone = 0;
        for k in i..j {
            let (a, b, t) = self.ranges[k];
            let n = b.min(hi) - a.max(lo);
            gone += n;
            self.count_out(n, t);
        }
        let keep = [(a0, lo, t0), (hi, b1, t1)];
        self.ranges.splice(i..j, keep.into_iter().filter(|&(a, b, _)| a < b));
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
        let at = self.ranges.partition_point(|&(a, _, _)| a < lo);
        let joins_left = at > 0 && matches!(self.ranges[at - 1], (_, b, t) if b == lo && t == tag);
        let joins_right = matches!(self.ranges.get(at), Some(&(a, _, t)) if a == hi && t == tag);
        match (joins_left, joins_right) {
            (true, true) => {
                self.ranges[at - 1].1 = self.ranges[at].1;
                self.ranges.remove(at);
            }
            (true, false) => self.ranges[at - 1].1 = hi,
            (false, true) => self.ranges[at].0 = lo,
            (false, false) => self.ranges.insert(at, (lo, hi, tag)),
        }
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

    /// The first and last page (exclusive) of `lo..hi` carrying `stamp`, if any does.
    pub fn live_span(&self, lo: u64, hi: u64, stamp: u64) -> Option<(u64, u64)> {
        let mut live = self.overlaps(lo, hi).filter(|&(_, _, t)| t.stamp == stamp);
        let first = live.next()?;
        let last = live.last().unwrap_or(first);
        Some((first.0, last.1))
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
        for &(a, b, _) in &self.ranges[self.first_after(from)..] {
            if a > at {
                break;
            }
            at = b;
        }
        at - from
    }

    /// How many pages from `from` on are not held, up to `limit`.
    pub fn gap_from(&self, from: u64, limit: u64) -> u64 {
        match self.ranges.get(self.first_after(from)) {
            Some(&(a, _, _)) => a.saturating_sub(from).min(limit),
            None => limit,
        }
    }

    /// Pages held at `from` and above.
    pub fn count_from(&self, from: u64) -> u64 {
        if from == 0 {
            return self.len;
        }
        self.overlaps(from, u64::MAX).map(|(a, b, _)| b - a).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_writes_folio_order_comes_from_its_size_and_alignment() {
        // A 1 MiB write at an aligned offset: order-8 folios; a 4 KiB one: order 0.
        assert_eq!(write_folio_order(0, 1 << 20, true), 8);
        assert_eq!(write_folio_order(256, 1 << 20, true), 8);
        assert_eq!(write_folio_order(7, 4096, true), 0);
        // Capped at MAX_PAGECACHE_ORDER (2 MiB), lowered to the index's alignment.
        assert_eq!(write_folio_order(0, 64 << 20, true), MAX_PAGECACHE_ORDER);
        assert_eq!(write_folio_order(4, 1 << 20, true), 2);
        // 1 MiB starting 1.5 MiB into a 2 MiB chunk: only 512 KiB fit before its end.
        assert_eq!(write_folio_order(384, 1 << 20, true), 7);
        // A mapping without large folios (ext3's, 2.x's page cache).
        assert_eq!(write_folio_order(0, 1 << 20, false), 0);
    }
    use std::collections::BTreeMap;

    /// The pages held, one by one, with their stamps and PG_referenced.
    fn pages(p: &PageSet) -> Vec<(u64, u64, bool)> {
        p.ranges
            .iter()
            .flat_map(|&(a, b, t)| (a..b).map(move |i| (i, t.stamp, t.referenced)))
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
