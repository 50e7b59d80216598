//! Latency histogram: an HDR histogram (3 significant digits) for percentiles and buckets,
//! plus exact count, min, max and sum kept beside it (HDR's own min/max are rounded to the
//! bucket's equivalence range).

use crate::units::Nanos;
use hdrhistogram::Histogram;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Highest value the histogram resolves: one hour in nanoseconds. Larger samples are
/// clamped for percentiles (their exact value still counts in `max` and `sum`).
const HIGHEST_NS: u64 = 3_600_000_000_000;

/// A latency distribution in nanoseconds.
#[derive(Clone, Debug)]
pub struct LatencyHistogram {
    hist: Histogram<u64>,
    count: u64,
    min: Nanos,
    max: Nanos,
    sum: u128,
}

/// The summary every report prints: exact count/min/max/mean, HDR percentiles.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub count: u64,
    pub min_ns: Nanos,
    pub mean_ns: f64,
    pub p50_ns: Nanos,
    pub p90_ns: Nanos,
    pub p99_ns: Nanos,
    pub p999_ns: Nanos,
    pub p9999_ns: Nanos,
    pub max_ns: Nanos,
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl LatencyHistogram {
    pub fn new() -> Self {
        LatencyHistogram {
            hist: Histogram::new_with_bounds(1, HIGHEST_NS, 3).expect("static HDR bounds are valid"),
            count: 0,
            min: u64::MAX,
            max: 0,
            sum: 0,
        }
    }

    /// Record one sample.
    pub fn record(&mut self, v: Nanos) {
        self.record_n(v, 1);
    }

    /// Record `n` samples of the same value.
    pub fn record_n(&mut self, v: Nanos, n: u64) {
        if n == 0 {
            return;
        }
        self.hist.saturating_record_n(v.clamp(1, HIGHEST_NS), n);
        self.count += n;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
        self.sum += v as u128 * n as u128;
    }

    /// A histogram from recorded `(value_ns, count)` pairs whose exact minimum, maximum and
    /// sum are known apart from them (a histogram read back from a file, where the pairs
    /// are bucket edges). The count is the pairs' total.
    pub fn from_parts(recorded: impl IntoIterator<Item = (Nanos, u64)>, min: Nanos, max: Nanos, sum: u128) -> Self {
        let mut h = LatencyHistogram::new();
        for (v, n) in recorded {
            h.hist.saturating_record_n(v.clamp(1, HIGHEST_NS), n);
            h.count += n;
        }
        h.min = if h.count == 0 { u64::MAX } else { min };
        h.max = max;
        h.sum = sum;
        h
    }

    /// Merge another histogram into this one.
    pub fn merge(&mut self, other: &LatencyHistogram) {
        if other.count == 0 {
            return;
        }
        // Both histograms share the same bounds, so add cannot fail.
        self.hist.add(&other.hist).expect("same HDR bounds");
        self.count += other.count;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        self.sum += other.sum;
    }

    pub fn count(&self) -> u64 {
        self.count
    }
    /// Exact minimum (0 when empty).
    pub fn min(&self) -> Nanos {
        if self.count == 0 {
            0
        } else {
            self.min
        }
    }
    /// Exact maximum (0 when empty).
    pub fn max(&self) -> Nanos {
        self.max
    }
    /// Exact mean (0 when empty).
    pub fn mean(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum as f64 / self.count as f64
        }
    }
    /// Value at quantile `q` in `[0, 1]`, clamped into the exact `[min, max]`.
    pub fn quantile(&self, q: f64) -> Nanos {
        if self.count == 0 {
            return 0;
        }
        self.hist.value_at_quantile(q).clamp(self.min, self.max)
    }

    /// Number of samples with `lo <= v < hi`, each sample placed by the lowest value of its
    /// HDR bucket (3 significant digits), so bucket edges are exact to 0.1 %.
    pub fn count_between(&self, lo: Nanos, hi: Nanos) -> u64 {
        self.hist
            .iter_recorded()
            .filter(|v| {
                let x = self.hist.lowest_equivalent(v.value_iterated_to());
                x >= lo && x < hi
            })
            .map(|v| v.count_at_value())
            .sum()
    }

    /// Samples per bin of `width` ns (bin `i` holds `i * width <= v < (i + 1) * width`), each
    /// sample placed as [`Self::count_between`] places it; non-empty bins only, ascending. Its
    /// cost follows the recorded buckets, not the range they span.
    pub fn bins(&self, width: Nanos) -> std::collections::BTreeMap<u64, u64> {
        let mut out = std::collections::BTreeMap::new();
        for v in self.hist.iter_recorded() {
            let x = self.hist.lowest_equivalent(v.value_iterated_to());
            *out.entry(x / width.max(1)).or_insert(0) += v.count_at_value();
        }
        out
    }

    /// Non-empty recorded values as (value_ns, count), ascending.
    pub fn iter_recorded(&self) -> impl Iterator<Item = (Nanos, u64)> + '_ {
        self.hist
            .iter_recorded()
            .map(|v| (v.value_iterated_to(), v.count_at_value()))
    }

    pub fn summary(&self) -> Summary {
        Summary {
            count: self.count,
            min_ns: self.min(),
            mean_ns: self.mean(),
            p50_ns: self.quantile(0.50),
            p90_ns: self.quantile(0.90),
            p99_ns: self.quantile(0.99),
            p999_ns: self.quantile(0.999),
            p9999_ns: self.quantile(0.9999),
            max_ns: self.max(),
        }
    }
}

/// Serialized form: exact figures plus the non-empty HDR buckets.
#[derive(Serialize, Deserialize)]
struct HistRepr {
    count: u64,
    min_ns: Nanos,
    max_ns: Nanos,
    sum_ns: u128,
    /// (value_ns, count) for every non-empty bucket.
    buckets: Vec<(Nanos, u64)>,
}

impl Serialize for LatencyHistogram {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        HistRepr {
            count: self.count,
            min_ns: self.min(),
            max_ns: self.max,
            sum_ns: self.sum,
            buckets: self.iter_recorded().collect(),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for LatencyHistogram {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let r = HistRepr::deserialize(d)?;
        // A histogram no recording could have made would break every report's arithmetic
        // (percentiles clamp into [min, max]).
        if r.count > 0 && r.min_ns > r.max_ns {
            return Err(serde::de::Error::custom(format!(
                "histogram with min_ns {} above max_ns {}",
                r.min_ns, r.max_ns
            )));
        }
        let held = r.buckets.iter().try_fold(0u64, |a, (_, n)| a.checked_add(*n));
        if held != Some(r.count) {
            return Err(serde::de::Error::custom(format!(
                "histogram whose buckets hold {} samples but whose count is {}",
                held.map_or("more than 2^64".into(), |n| n.to_string()),
                r.count
            )));
        }
        let mut h = LatencyHistogram::from_parts(r.buckets, r.min_ns, r.max_ns, r.sum_ns);
        h.count = r.count;
        if r.count == 0 {
            h.min = u64::MAX;
        }
        Ok(h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_min_max_mean() {
        let mut h = LatencyHistogram::new();
        for v in [1_234_567u64, 10, 999, 50_000] {
            h.record(v);
        }
        assert_eq!(h.count(), 4);
        assert_eq!(h.min(), 10);
        assert_eq!(h.max(), 1_234_567);
        assert!((h.mean() - 321_394.0).abs() < 1.0);
        let s = h.summary();
        assert!(s.min_ns <= s.p50_ns && s.p50_ns <= s.p99_ns && s.p99_ns <= s.max_ns);
    }

    #[test]
    fn buckets_count_between() {
        let mut h = LatencyHistogram::new();
        h.record_n(500_000, 10); // 0.5 ms
        h.record_n(1_500_000, 3); // 1.5 ms
        h.record(84_000_000); // 84 ms
        assert_eq!(h.count_between(0, 1_000_000), 10);
        assert_eq!(h.count_between(1_000_000, 2_000_000), 3);
        assert_eq!(h.count_between(64_000_000, 128_000_000), 1);
        assert_eq!(h.count_between(2_000_000, 64_000_000), 0);
    }

    #[test]
    fn serde_round_trip_keeps_exact_figures() {
        let mut h = LatencyHistogram::new();
        h.record(7);
        h.record(123_456_789);
        let j = serde_json::to_string(&h).unwrap();
        let back: LatencyHistogram = serde_json::from_str(&j).unwrap();
        assert_eq!(back.summary(), h.summary());
    }

    #[test]
    fn a_histogram_no_recording_could_make_is_refused() {
        let read = |j: &str| serde_json::from_str::<LatencyHistogram>(j).map_err(|e| e.to_string());
        let e = read(r#"{"count":1,"min_ns":9,"max_ns":3,"sum_ns":9,"buckets":[[9,1]]}"#).unwrap_err();
        assert!(e.contains("min_ns 9 above max_ns 3"), "{e}");
        let e = read(r#"{"count":5,"min_ns":3,"max_ns":9,"sum_ns":9,"buckets":[[9,1]]}"#).unwrap_err();
        assert!(e.contains("buckets hold 1 samples but whose count is 5"), "{e}");
        let e = read(r#"{"count":5,"min_ns":3,"max_ns":9,"sum_ns":9,"buckets":[[9,18446744073709551615],[3,2]]}"#)
            .unwrap_err();
        assert!(e.contains("more than 2^64"), "{e}");
        // An empty one says nothing of min and max.
        let h = read(r#"{"count":0,"min_ns":9,"max_ns":0,"sum_ns":0,"buckets":[]}"#).unwrap();
        assert_eq!((h.min(), h.quantile(0.5)), (0, 0));
    }

    #[test]
    fn bins_place_samples_as_count_between_does() {
        let mut h = LatencyHistogram::new();
        h.record_n(50_000, 3);
        h.record(150_000);
        h.record(3_600_000_000_000);
        let b = h.bins(100_000);
        assert_eq!(b.len(), 3);
        for (&i, &n) in &b {
            assert_eq!(h.count_between(i * 100_000, (i + 1) * 100_000), n, "bin {i}");
        }
        assert_eq!(b.values().sum::<u64>(), 5);
    }

    #[test]
    fn from_parts_keeps_the_exact_figures_given() {
        let h = LatencyHistogram::from_parts([(1_000, 3), (5_000, 1)], 1_400, 5_900, 9_000);
        assert_eq!((h.count(), h.min(), h.max()), (4, 1_400, 5_900));
        assert_eq!(h.mean(), 2_250.0);
        assert_eq!(h.count_between(0, 2_000), 3);
        assert_eq!(LatencyHistogram::from_parts([], 7, 0, 0).min(), 0);
    }

    #[test]
    fn merge_adds() {
        let mut a = LatencyHistogram::new();
        let mut b = LatencyHistogram::new();
        a.record(5);
        b.record(50);
        a.merge(&b);
        assert_eq!((a.count(), a.min(), a.max()), (2, 5, 50));
    }
}
