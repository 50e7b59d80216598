//! One of 2.4.18's page LRU lists (`active_list`, `inactive_list` of mm/swap.c and
//! mm/vmscan.c) in age order, oldest (the list's tail in kernel terms) first: runs of one
//! owner's pages.
//!
//! A file's run counts the pages of its range that still carry its stamp
//! ([`super::pagecache`]); anonymous pages an address space loses from this list (exit,
//! swap-out, activation) are taken off lazily: `stale` counts them by address space, and they
//! are dropped from its oldest runs when a walk meets them.

use super::per_mm::PerMm;
use super::Files;
use std::collections::{BTreeMap, VecDeque};

/// A run of an LRU list: pages of one owner.
#[derive(Clone, Copy, Debug)]
pub enum Run {
    /// The pages of file `id` in `lo..hi` that carry `stamp`: one stamp belongs to one run.
    File { id: u32, lo: u64, hi: u64, stamp: u64 },
    /// `n` anonymous pages of address space `mm`, less what `stale` says it lost.
    Anon { mm: u32, n: u64 },
}

#[derive(Default)]
pub struct List {
    runs: VecDeque<Run>,
    stale: PerMm,
    stale_total: u64,
    /// Runs after the last compaction (the next comes when they have doubled).
    compacted_runs: usize,
}

impl List {
    /// The run at the young end.
    pub fn youngest(&self) -> Option<Run> {
        self.runs.back().copied()
    }

    pub fn pop_oldest(&mut self) -> Option<Run> {
        self.runs.pop_front()
    }

    /// Put back what is left of a run just taken off the old end.
    pub fn push_oldest(&mut self, r: Run) {
        self.runs.push_front(r);
    }

    /// The stamp for pages of `file` in `lo..hi` going to the young end: the youngest run's,
    /// widened to cover them, when it is the same file's; else `fresh`, in a new run.
    pub fn young_file(&mut self, file: u32, lo: u64, hi: u64, fresh: u64, files: &Files) -> u64 {
        if let Some(Run::File {
            id,
            lo: l,
            hi: h,
            stamp,
        }) = self.runs.back_mut()
        {
            if *id == file {
                *l = (*l).min(lo);
                *h = (*h).max(hi);
                return *stamp;
            }
        }
        self.runs.push_back(Run::File {
            id: file,
            lo,
            hi,
            stamp: fresh,
        });
        self.maybe_compact(files);
        fresh
    }

    /// `n` anonymous pages of `mm` at the young end.
    pub fn push_anon(&mut self, mm: u32, n: u64, files: &Files) {
        if n == 0 {
            return;
        }
        match self.runs.back_mut() {
            Some(Run::Anon { mm: m, n: k }) if *m == mm => *k += n,
            _ => {
                self.runs.push_back(Run::Anon { mm, n });
                self.maybe_compact(files);
            }
        }
    }

    /// `n` anonymous pages of `mm` left this list; `live` pages remain on it in all.
    pub fn forget_anon(&mut self, mm: u32, n: u64, live: u64, files: &Files) {
        if n == 0 {
            return;
        }
        *self.stale.get_mut(mm) += n;
        self.stale_total += n;
        if self.stale_total > 2 * live + 1024 {
            self.compact(files);
        }
    }

    /// As `n` calls of `forget_anon(mm, 1, live - i)` for i in 0..n (one page at a time, the
    /// list shrinking by one each): the pages are counted in stretches that end where one of
    /// those calls would compact, so compaction happens at the same page.
    pub fn forget_anon_each(&mut self, mm: u32, n: u64, live: u64, files: &Files) {
        let mut i = 0;
        while i < n {
            // Calls i..j as one: the last of them, call j - 1, is the first that compacts.
            let mut j = i + 1;
            while j < n && self.stale_total + (j - i) <= 2 * live.saturating_sub(j - 1) + 1024 {
                j += 1;
            }
            self.forget_anon(mm, j - i, live.saturating_sub(j - 1), files);
            i = j;
        }
    }

    fn maybe_compact(&mut self, files: &Files) {
        if self.runs.len() > 2 * self.compacted_runs + 1024 {
            self.compact(files);
        }
    }

    /// Pages of a file run still on the list.
    pub fn file_live(r: &Run, files: &Files) -> u64 {
        match *r {
            Run::File { id, lo, hi, stamp } => files.get(&id).map_or(0, |f| f.pages.live(lo, hi, stamp)),
            Run::Anon { n, .. } => n,
        }
    }

    /// The runs oldest first with the pages each still holds, without changing anything.
    pub fn live_runs<'a>(&'a self, files: &'a Files) -> impl Iterator<Item = (Run, u64)> + 'a {
        let mut used: BTreeMap<u32, u64> = BTreeMap::new();
        self.runs.iter().map(move |r| match *r {
            Run::File { .. } => (*r, Self::file_live(r, files)),
            Run::Anon { mm, n } => {
                let gone = match self.stale.get(mm) {
                    0 => 0,
                    s => {
                        let u = used.entry(mm).or_default();
                        let g = (s - *u).min(n);
                        *u += g;
                        g
                    }
                };
                (*r, n - gone)
            }
        })
    }

    /// Drop every run with nothing left and every stale anonymous page, narrow each file
    /// run to the pages it still holds, and merge neighbouring runs of one address space.
    fn compact(&mut self, files: &Files) {
        // In place, in the list's own buffer (a fresh one per compaction cost more in page
        // zeroing than the walk: BENCHMARKS.md, issue 20's profile).
        let mut runs = std::mem::take(&mut self.runs);
        let slots = runs.make_contiguous();
        let mut kept = 0;
        for i in 0..slots.len() {
            let run = match slots[i] {
                Run::File { id, lo, hi, stamp } => {
                    let Some((lo, hi)) = files.get(&id).and_then(|f| f.pages.live_span(lo, hi, stamp)) else {
                        continue;
                    };
                    Run::File { id, lo, hi, stamp }
                }
                Run::Anon { mm, n } => {
                    let live = self.take_stale(mm, n);
                    if live == 0 {
                        continue;
                    }
                    if let Some(Run::Anon { mm: m, n: k }) = slots[..kept].last_mut() {
                        if *m == mm {
                            *k += live;
                            continue;
                        }
                    }
                    Run::Anon { mm, n: live }
                }
            };
            slots[kept] = run;
            kept += 1;
        }
        runs.truncate(kept);
        self.runs = runs;
        self.compacted_runs = self.runs.len();
        debug_assert_eq!(self.stale_total, 0);
        self.stale.clear();
    }

    /// Of a run of `n` anonymous pages of `mm`, how many are still there (consuming its
    /// stale count).
    pub fn take_stale(&mut self, mm: u32, n: u64) -> u64 {
        if self.stale.get(mm) == 0 {
            return n;
        }
        let s = self.stale.get_mut(mm);
        let gone = (*s).min(n);
        *s -= gone;
        self.stale_total -= gone;
        n - gone
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A list of `runs` alternating runs of address spaces 1 and 2, 8 pages each, with
    /// `stale` pages of space 1 already gone.
    fn list(runs: u32, stale: u64, files: &Files) -> List {
        let mut l = List::default();
        for i in 0..runs {
            l.push_anon(1 + i % 2, 8, files);
        }
        l.forget_anon(1, stale, 8 * u64::from(runs) - stale, files);
        l
    }

    #[test]
    fn pages_forgotten_each_at_once_compact_where_one_by_one_would() {
        let files = Files::default();
        // (runs, stale, pages forgotten, whether one of the calls compacts)
        for (runs, stale, n, compacts) in [(200, 1000, 500, true), (200, 0, 40, false), (300, 1800, 550, true)] {
            let live = 8 * u64::from(runs) - stale;
            let mut each = list(runs, stale, &files);
            each.forget_anon_each(1, n, live, &files);
            let mut one = list(runs, stale, &files);
            for i in 0..n {
                one.forget_anon(1, 1, live.saturating_sub(i), &files);
            }
            assert_eq!(one.runs.len() < runs as usize, compacts, "{runs} {stale} {n}");
            assert_eq!(
                format!("{:?}", each.runs),
                format!("{:?}", one.runs),
                "{runs} {stale} {n}"
            );
            assert_eq!((each.stale_total, &each.stale), (one.stale_total, &one.stale));
        }
    }
}
