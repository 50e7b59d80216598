//! Logarithmic latency buckets and percentile points of a stream, shared by the compare
//! table, the CSV export and the plots.
//!
//! Buckets follow seed 000's table (0-1, 1-2, 2-4 ... ms: each bucket twice the last), with
//! the first edge at 1 us so that the probe's microsecond latencies get buckets too:
//! `[0, 1 us)`, then `[2^(k/n), 2^((k+1)/n))` us for `n` buckets per octave. A sample is
//! placed by the lowest value of its HDR bucket (3 significant digits), as
//! [`LatencyHistogram::count_between`] places it.

use latlab_core::{LatencyHistogram, Nanos, Stream};

/// The first bucket's upper edge: 1 us.
pub const FIRST_EDGE_NS: Nanos = 1_000;

/// Samples with `lo_ns <= latency < hi_ns`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bucket {
    pub lo_ns: Nanos,
    pub hi_ns: Nanos,
    pub count: u64,
}

/// Bucket edges from 0 up to the first edge above `max_ns`: 0, then 1, 2, 4 ... 512 us,
/// then 1, 2, 4 ... ms (so the millisecond buckets are seed 000's), each interval split
/// into `per_octave` (at least 1) geometrically equal parts.
pub fn edges(max_ns: Nanos, per_octave: u32) -> Vec<Nanos> {
    let n = per_octave.max(1);
    let octave = |k: u32| -> Nanos {
        match k {
            0..=9 => FIRST_EDGE_NS << k,
            _ => 1_000_000u64.saturating_mul(1u64.checked_shl(k - 10).unwrap_or(u64::MAX)),
        }
    };
    let mut e = vec![0, FIRST_EDGE_NS];
    let mut k = 0u32;
    while e[e.len() - 1] <= max_ns && e[e.len() - 1] < Nanos::MAX / 2 {
        let (a, b) = (octave(k) as f64, octave(k + 1) as f64);
        for i in 1..=n {
            let x = a * (b / a).powf(f64::from(i) / f64::from(n));
            let next = (x.round() as Nanos).max(e[e.len() - 1].saturating_add(1));
            e.push(next);
        }
        k += 1;
    }
    e
}

/// The histogram's counts in the buckets `edges` delimit.
pub fn count(h: &LatencyHistogram, edges: &[Nanos]) -> Vec<Bucket> {
    edges
        .windows(2)
        .map(|w| Bucket {
            lo_ns: w[0],
            hi_ns: w[1],
            count: h.count_between(w[0], w[1]),
        })
        .collect()
}

/// A stream's log buckets from its first non-empty bucket to its last (none when empty).
pub fn log_buckets(h: &LatencyHistogram, per_octave: u32) -> Vec<Bucket> {
    let all = count(h, &edges(h.max(), per_octave));
    trim(&all, |b| b.count > 0).to_vec()
}

/// The slice from the first element that `keep` holds for to the last one.
pub fn trim<T>(v: &[T], keep: impl Fn(&T) -> bool) -> &[T] {
    match (v.iter().position(&keep), v.iter().rposition(&keep)) {
        (Some(a), Some(b)) => &v[a..=b],
        _ => &[],
    }
}

/// A bucket's range as people read it: `0-1 us`, `1-2 ms`, `1.41-2 us`.
pub fn range_label(b: &Bucket) -> String {
    let unit = if b.hi_ns > 1_000_000 { 1e6 } else { 1e3 };
    let f = |ns: Nanos| {
        let x = ns as f64 / unit;
        let s = format!("{x:.2}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    };
    format!(
        "{}-{} {}",
        f(b.lo_ns),
        f(b.hi_ns),
        if unit == 1e6 { "ms" } else { "us" }
    )
}

/// The quantiles the reports show, with their names.
pub const QUANTILES: [(&str, f64); 6] = [
    ("p50", 0.50),
    ("p90", 0.90),
    ("p99", 0.99),
    ("p99.9", 0.999),
    ("p99.99", 0.9999),
    ("p99.999", 0.99999),
];

/// (name, quantile, latency) from p50 up, then `max` at quantile 1: only the quantiles the
/// stream has samples enough to tell apart from its maximum (1/(1-q) <= count).
pub fn percentile_points(s: &Stream) -> Vec<(&'static str, f64, Nanos)> {
    let n = s.hist.count() as f64;
    if n == 0.0 {
        return Vec::new();
    }
    let mut v: Vec<(&'static str, f64, Nanos)> = QUANTILES
        .iter()
        .filter(|(_, q)| 1.0 / (1.0 - q) <= n)
        .map(|&(name, q)| (name, q, s.hist.quantile(q)))
        .collect();
    v.push(("max", 1.0, s.hist.max()));
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn octave_edges_match_seed_000_in_ms() {
        let e = edges(5_000_000, 1);
        assert_eq!(&e[..4], &[0, 1_000, 2_000, 4_000]);
        // 512 us, then seed 000's millisecond edges.
        let ms: Vec<Nanos> = e.iter().copied().filter(|&x| x >= 512_000).collect();
        assert_eq!(ms, [512_000, 1_000_000, 2_000_000, 4_000_000, 8_000_000]);
        let fine = edges(10_000, 4);
        assert_eq!(&fine[..4], &[0, 1_000, 1_189, 1_414]);
        assert_eq!(fine[5], 2_000);
        // Huge maxima end without overflow.
        assert!(*edges(u64::MAX, 1).last().unwrap() > u64::MAX / 4);
        assert!(*edges(u64::MAX, 16).last().unwrap() > u64::MAX / 4);
        assert!(fine.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn buckets_trimmed_to_the_samples() {
        let mut h = LatencyHistogram::new();
        h.record_n(3_000, 5); // 2-4 us
        h.record(70_000); // 64-128 us
        let b = log_buckets(&h, 1);
        assert_eq!(
            b.first().unwrap(),
            &Bucket {
                lo_ns: 2_000,
                hi_ns: 4_000,
                count: 5
            }
        );
        assert_eq!(
            b.last().unwrap(),
            &Bucket {
                lo_ns: 64_000,
                hi_ns: 128_000,
                count: 1
            }
        );
        assert_eq!(b.iter().map(|x| x.count).sum::<u64>(), 6);
        assert!(log_buckets(&LatencyHistogram::new(), 1).is_empty());
        assert_eq!(range_label(&b[0]), "2-4 us");
        assert_eq!(
            range_label(&Bucket {
                lo_ns: 512_000,
                hi_ns: 1_000_000,
                count: 0
            }),
            "512-1000 us"
        );
        assert_eq!(
            range_label(&Bucket {
                lo_ns: 1_000_000,
                hi_ns: 2_000_000,
                count: 0
            }),
            "1-2 ms"
        );
    }

    #[test]
    fn percentile_points_stop_where_the_samples_do() {
        let mut s = Stream::new("x", "y");
        for v in 1..=200u64 {
            s.hist.record(v * 1_000);
        }
        let p = percentile_points(&s);
        let names: Vec<&str> = p.iter().map(|x| x.0).collect();
        assert_eq!(names, ["p50", "p90", "p99", "max"]);
        assert_eq!(p.last().unwrap().2, 200_000);
        assert!(p.windows(2).all(|w| w[0].2 <= w[1].2));
        assert!(percentile_points(&Stream::new("e", "y")).is_empty());
    }
}
