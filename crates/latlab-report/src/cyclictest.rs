//! `cyclictest -h N` histogram files (owned by the probe work; see crates/latlab-probe).
//!
//! Layout as rt-tests' cyclictest prints it: one row per microsecond bucket
//! (`%06d ` then `%06lu` per thread/CPU column, tab-separated), then `# Total:`, `# Min Latencies:`,
//! `# Avg Latencies:`, `# Max Latencies:` and `# Histogram Overflows:` with one `%05lu` per
//! column. Buckets are whole microseconds (latency truncated), as cyclictest's.

use latlab_core::result::Stream;
use std::fmt::Write;

/// One column of the histogram: a CPU's (or stream's) counts per microsecond.
#[derive(Clone, Debug, PartialEq)]
pub struct Column {
    /// `buckets[i]` = samples with latency in [i, i+1) us.
    pub buckets: Vec<u64>,
    /// Samples of `buckets.len()` us or more.
    pub overflow: u64,
    pub min_us: u64,
    pub avg_us: u64,
    pub max_us: u64,
}

impl Column {
    /// Bucket a stream's histogram into `n_us` one-microsecond buckets. Samples are placed by
    /// the lowest value of their HDR bucket (3 significant digits).
    pub fn from_stream(s: &Stream, n_us: usize) -> Column {
        let h = &s.hist;
        let buckets = (0..n_us as u64)
            .map(|i| h.count_between(i * 1000, (i + 1) * 1000))
            .collect();
        Column {
            buckets,
            overflow: h.count_between(n_us as u64 * 1000, u64::MAX),
            min_us: h.min() / 1000,
            avg_us: (h.mean() / 1000.0).round() as u64,
            max_us: h.max() / 1000,
        }
    }
}

/// Render the histogram text for `cols`.
pub fn render(cols: &[Column]) -> String {
    let n = cols.iter().map(|c| c.buckets.len()).max().unwrap_or(0);
    let mut s = String::from("# Histogram\n");
    for i in 0..n {
        let _ = write!(s, "{i:06} ");
        for (j, c) in cols.iter().enumerate() {
            let sep = if j + 1 < cols.len() { "\t" } else { "" };
            let _ = write!(s, "{:06}{sep}", c.buckets.get(i).copied().unwrap_or(0));
        }
        s.push('\n');
    }
    let line = |s: &mut String, label: &str, f: &dyn Fn(&Column) -> u64, width: usize| {
        s.push_str(label);
        for c in cols {
            let _ = write!(s, " {:0width$}", f(c), width = width);
        }
        s.push('\n');
    };
    line(&mut s, "# Total:", &|c| c.buckets.iter().sum::<u64>() + c.overflow, 9);
    line(&mut s, "# Min Latencies:", &|c| c.min_us, 5);
    line(&mut s, "# Avg Latencies:", &|c| c.avg_us, 5);
    line(&mut s, "# Max Latencies:", &|c| c.max_us, 5);
    line(&mut s, "# Histogram Overflows:", &|c| c.overflow, 5);
    s
}

/// Render streams directly (one column each, `n_us` buckets).
pub fn render_streams(streams: &[Stream], n_us: usize) -> String {
    let cols: Vec<Column> = streams.iter().map(|s| Column::from_stream(s, n_us)).collect();
    render(&cols)
}

/// One column parsed back from a cyclictest histogram (cyclictest's own `-h` output or ours).
pub fn parse(text: &str) -> Vec<Column> {
    let mut cols: Vec<Column> = Vec::new();
    let set = |cols: &mut Vec<Column>, vals: Vec<u64>, f: fn(&mut Column, u64)| {
        if cols.len() < vals.len() {
            cols.resize(
                vals.len(),
                Column {
                    buckets: vec![],
                    overflow: 0,
                    min_us: 0,
                    avg_us: 0,
                    max_us: 0,
                },
            );
        }
        for (c, v) in cols.iter_mut().zip(vals) {
            f(c, v);
        }
    };
    for l in text.lines() {
        let nums = |rest: &str| {
            rest.split_whitespace()
                .filter_map(|x| x.parse::<u64>().ok())
                .collect::<Vec<_>>()
        };
        if let Some(r) = l.strip_prefix("# Min Latencies:") {
            set(&mut cols, nums(r), |c, v| c.min_us = v);
        } else if let Some(r) = l.strip_prefix("# Avg Latencies:") {
            set(&mut cols, nums(r), |c, v| c.avg_us = v);
        } else if let Some(r) = l.strip_prefix("# Max Latencies:") {
            set(&mut cols, nums(r), |c, v| c.max_us = v);
        } else if let Some(r) = l.strip_prefix("# Histogram Overflows:") {
            set(&mut cols, nums(r), |c, v| c.overflow = v);
        } else if !l.starts_with('#') {
            let v = nums(l);
            if v.len() >= 2 {
                set(&mut cols, v[1..].to_vec(), |c, v| c.buckets.push(v));
            }
        }
    }
    cols
}

/// All columns summed into one (counts added; min/max over the columns; avg weighted by count).
pub fn merge(cols: &[Column]) -> Column {
    let n = cols.iter().map(|c| c.buckets.len()).max().unwrap_or(0);
    let mut buckets = vec![0; n];
    for c in cols {
        for (b, v) in buckets.iter_mut().zip(&c.buckets) {
            *b += v;
        }
    }
    let count = |c: &Column| c.buckets.iter().sum::<u64>() + c.overflow;
    let total: u64 = cols.iter().map(count).sum();
    let avg = cols
        .iter()
        .map(|c| c.avg_us * count(c))
        .sum::<u64>()
        .checked_div(total)
        .unwrap_or(0);
    Column {
        buckets,
        overflow: cols.iter().map(|c| c.overflow).sum(),
        min_us: cols.iter().map(|c| c.min_us).min().unwrap_or(0),
        avg_us: avg,
        max_us: cols.iter().map(|c| c.max_us).max().unwrap_or(0),
    }
}

/// Quantile `q` (0..1) of a parsed column, in whole microseconds (overflows count as max).
pub fn column_quantile(c: &Column, q: f64) -> u64 {
    let total: u64 = c.buckets.iter().sum::<u64>() + c.overflow;
    if total == 0 {
        return 0;
    }
    let target = ((q * total as f64).ceil() as u64).max(1);
    let mut acc = 0;
    for (i, &n) in c.buckets.iter().enumerate() {
        acc += n;
        if acc >= target {
            return i as u64;
        }
    }
    c.max_us
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_and_round_trip() {
        let mut a = Stream::new("cpu0", "x");
        a.hist.record(1_500);
        a.hist.record(3_200);
        a.hist.record(50_000);
        let mut b = Stream::new("cpu1", "x");
        b.hist.record(2_000);
        let text = render_streams(&[a, b], 10);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "# Histogram");
        assert_eq!(lines[1], "000000 000000\t000000");
        assert_eq!(lines[2], "000001 000001\t000000");
        assert_eq!(lines[3], "000002 000000\t000001");
        assert!(text.contains("# Min Latencies: 00001 00002\n"));
        assert!(text.contains("# Max Latencies: 00050 00002\n"));
        assert!(text.contains("# Histogram Overflows: 00001 00000\n"));
        let cols = parse(&text);
        assert_eq!(cols.len(), 2);
        assert_eq!(cols[0].buckets.len(), 10);
        assert_eq!(cols[0].overflow, 1);
        assert_eq!(column_quantile(&cols[0], 0.5), 3);
        let m = merge(&cols);
        assert_eq!(m.buckets[1] + m.buckets[2] + m.buckets[3], 3);
        assert_eq!((m.min_us, m.max_us, m.overflow), (1, 50, 1));
    }
}
