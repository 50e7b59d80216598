//! Time units. All latlab times are integer nanoseconds ([`Nanos`]).

/// Integer nanoseconds: simulated time, durations, latencies.
pub type Nanos = u64;

/// Nanoseconds to microseconds as a float (for display).
pub fn us(ns: Nanos) -> f64 {
    ns as f64 / 1_000.0
}

/// Nanoseconds to milliseconds as a float (for display).
pub fn ms(ns: Nanos) -> f64 {
    ns as f64 / 1_000_000.0
}

/// Length of the union of `spans` (`[start, end)` each, in any order, overlapping or not)
/// inside `[a, b]`: each instant counted once.
pub fn covered(spans: &[(Nanos, Nanos)], a: Nanos, b: Nanos) -> Nanos {
    let mut clipped: Vec<(Nanos, Nanos)> = spans
        .iter()
        .map(|&(s, e)| (s.max(a), e.min(b)))
        .filter(|(s, e)| s < e)
        .collect();
    clipped.sort_unstable();
    let (mut total, mut reach) = (0, a);
    for (s, e) in clipped {
        let s = s.max(reach);
        if e > s {
            total += e - s;
            reach = e;
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::covered;

    #[test]
    fn covered_counts_each_instant_of_the_window_once() {
        // Overlapping, nested, out of order, partly outside the window, and empty.
        let spans = [(50, 70), (10, 30), (20, 40), (25, 35), (90, 200), (5, 5)];
        assert_eq!(covered(&spans, 0, 100), 30 + 20 + 10);
        assert_eq!(covered(&spans, 30, 60), 10 + 10);
        assert_eq!(covered(&[], 0, 100), 0);
    }
}
