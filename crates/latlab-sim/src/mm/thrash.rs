//! Rik van Riel's swap token ("token based thrashing control", mm/thrash.c), part of the
//! 2.6.9 reclaim from 2.6.9-rc1 on: posted 30 Jul 2004 (linux-mm,
//! <Pine.LNX.4.58.0407301730440.9228@dhcp030.home.surriel.com>), merged to Linus' tree on
//! 24 Aug 2004 (bk-commits-head, marc.theaimsgroup.com m=109330925227996), backed out of
//! 2.6.9-rc1 by Mats Johannesson (LKML, 20 Dec 2004: "Backing that one out 2.6.9-rc1
//! behaves just like 2.6.8.1-bk2"); 2.6.9-rc2's and rc3's mm/thrash.c still have
//! `SWAP_TOKEN_TIMEOUT (HZ * 300)` (the sysctl patches of Sep/Oct 2004 against them), and so
//! does 2.6.9 (Chuck Ebbert's 2.6.9 backport of 21 Dec 2004 turns it to 0, as 2.6.10 did):
//!
//! ```text
//! SWAP_TOKEN_CHECK_INTERVAL = HZ * 2, SWAP_TOKEN_TIMEOUT = HZ * 300
//! grab_swap_token():                       do_swap_page's major fault (and filemap_nopage's)
//!     if current->mm holds it: mm->recent_pagein = 1; return
//!     if jiffies after swap_token_check:
//!         if jiffies before current->mm->swap_token_time: return   (held it recently)
//!         swap_token_check = jiffies + SWAP_TOKEN_CHECK_INTERVAL
//!         should_release_swap_token(holder): no pagein since the last check -> ENOUGH_RSS,
//!             else held past swap_token_timeout -> TIMED_OUT; holder->recent_pagein = 0
//!         if released: holder->swap_token_time = jiffies (+ SWAP_TOKEN_TIMEOUT if TIMED_OUT)
//!             swap_token_timeout = jiffies + SWAP_TOKEN_TIMEOUT; swap_token_mm = current->mm
//! put_swap_token(mm) on exit (mmput): the token goes back to init_mm, swap_token_check = jiffies
//! page_referenced_one():  if (mm != current->mm && has_swap_token(mm)) referenced++;
//! ```
//!
//! In 2.6.9 `page_referenced` honours the token at every scanning priority: the
//! `ignore_token` argument (`sc->priority <= 0`) came with Andrew Morton's "vmscan: ignore
//! swap token when in trouble" of 19 Nov 2004 (the 2.6.9 -> 2.6.9.1 diff in Ebbert's
//! backport, LKML 17 Dec 2004). So nobody but the holder itself reclaims the holder's
//! mapped pages; kswapd, whose `current->mm` is none, never does.
//!
//! Not modelled: `filemap_nopage`'s grab (the storm's faults are anonymous) and the
//! spin_trylock (one CPU: it always succeeds).

use latlab_core::Nanos;
use std::collections::BTreeMap;

/// `SWAP_TOKEN_CHECK_INTERVAL`: HZ * 2.
pub const CHECK_INTERVAL_NS: Nanos = 2_000_000_000;
/// `SWAP_TOKEN_TIMEOUT`: HZ * 300.
pub const TIMEOUT_NS: Nanos = 300_000_000_000;

/// An address space's token fields (`mm->recent_pagein`, `mm->swap_token_time`).
#[derive(Clone, Copy, Debug, Default)]
struct MmToken {
    recent_pagein: bool,
    swap_token_time: Nanos,
}

/// The token's global state: `swap_token_mm` (None: init_mm), `swap_token_check`,
/// `swap_token_timeout`, and each address space's fields.
#[derive(Clone, Debug, Default)]
pub struct SwapToken {
    holder: Option<u32>,
    check: Nanos,
    timeout: Nanos,
    mms: BTreeMap<u32, MmToken>,
    /// Times the token changed hands.
    pub grabs: u64,
}

impl SwapToken {
    /// `has_swap_token(mm)`.
    pub fn held_by(&self, mm: u32) -> bool {
        self.holder == Some(mm)
    }

    /// `page_referenced_one`'s test: the pages of `mm` count as referenced when `mm` holds
    /// the token and the reclaimer (`current_mm`, 0 for a kernel thread) is another.
    pub fn protects(&self, mm: u32, current_mm: u32) -> bool {
        mm != current_mm && self.held_by(mm)
    }

    /// `grab_swap_token()` by `mm` after a major fault at `now`.
    pub fn grab(&mut self, mm: u32, now: Nanos) {
        if self.held_by(mm) {
            self.mms.entry(mm).or_default().recent_pagein = true;
            return;
        }
        if now <= self.check {
            return;
        }
        if now < self.mms.get(&mm).map_or(0, |t| t.swap_token_time) {
            return;
        }
        self.check = now + CHECK_INTERVAL_NS;
        // should_release_swap_token(): init_mm never pages in, so it always gives way.
        if let Some(h) = self.holder {
            let t = self.mms.entry(h).or_default();
            let eligible = if !t.recent_pagein {
                now
            } else if now > self.timeout {
                now + TIMEOUT_NS
            } else {
                t.recent_pagein = false;
                return;
            };
            t.recent_pagein = false;
            t.swap_token_time = eligible;
        }
        self.timeout = now + TIMEOUT_NS;
        self.holder = Some(mm);
        self.grabs += 1;
    }

    /// `put_swap_token(mm)` as `mm` is torn down at `now`.
    pub fn put(&mut self, mm: u32, now: Nanos) {
        if self.held_by(mm) {
            self.holder = None;
            self.check = now;
        }
        self.mms.remove(&mm);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Nanos = 1_000_000_000;

    #[test]
    fn the_first_major_fault_takes_the_token_and_others_wait_for_the_check_interval() {
        let mut t = SwapToken::default();
        t.grab(3, S);
        assert!(t.held_by(3));
        // Another fault within two seconds: no check yet, even with the holder idle.
        t.grab(4, 2 * S);
        assert!(t.held_by(3));
        // After the interval: the holder paged in meanwhile, so it keeps it.
        t.grab(3, 2 * S);
        t.grab(4, 3 * S + 1);
        assert!(t.held_by(3));
        // The next check finds no pagein since the last one: the token moves.
        t.grab(4, 5 * S + 2);
        assert!(t.held_by(4));
        assert_eq!(t.grabs, 2);
    }

    #[test]
    fn a_holder_that_keeps_paging_in_loses_the_token_after_300_seconds_and_waits_300_more() {
        let mut t = SwapToken::default();
        t.grab(3, S);
        let mut now = S;
        while t.held_by(3) {
            now += S;
            t.grab(3, now);
            t.grab(4, now + 1);
        }
        assert!((S + TIMEOUT_NS..=S + TIMEOUT_NS + 3 * S).contains(&now), "{now}");
        assert!(t.held_by(4));
        // Timed out: mm 3 may not take it back for SWAP_TOKEN_TIMEOUT, even from an idle holder.
        t.grab(3, now + 10 * S);
        assert!(t.held_by(4));
        t.grab(3, now + TIMEOUT_NS + 10 * S);
        assert!(t.held_by(3));
    }

    #[test]
    fn the_holders_pages_are_referenced_for_every_reclaimer_but_itself_and_exit_frees_it() {
        let mut t = SwapToken::default();
        t.grab(3, S);
        assert!(t.protects(3, 4));
        assert!(t.protects(3, 0), "kswapd has no mm");
        assert!(!t.protects(3, 3));
        assert!(!t.protects(4, 3));
        t.put(3, 2 * S);
        assert!(!t.protects(3, 4));
        // The check restarts at the exit: the next major fault takes it at once.
        t.grab(5, 2 * S + 1);
        assert!(t.held_by(5));
    }
}
