//! rt-tests' cyclictest files: the `-h N` histogram (the probe's `--histfile` writes it;
//! `latlab report` reads cyclictest's own) and the `--json` result (`latlab report` reads it).
//!
//! The histogram's layout is cyclictest 2.x's (`print_hist` in cyclictest.c): `# Histogram`,
//! one row per microsecond bucket (`%06d ` then `%06lu` per thread, tab-separated), then
//! `# Total:` (the samples inside the buckets, overflows not counted, `%09llu` each),
//! `# Min Latencies:`, `# Avg Latencies:` (the mean truncated to whole microseconds),
//! `# Max Latencies:` and `# Histogram Overflows:` (`%05lu` each), then `# Histogram Overflow
//! at cycle number:` and a `# Thread N:` line per column listing the cycle numbers (0-based)
//! of its first overflowing samples, at most as many as there are buckets, with `# NNNNN
//! others` for the rest; an empty line ends the file. Buckets are whole microseconds
//! (latency truncated).

use latlab_core::result::Stream;
use latlab_core::LatencyHistogram;
use std::fmt::Write;

/// One column of the histogram: a thread's (a CPU's, a stream's) counts per microsecond.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Column {
    /// `buckets[i]` = samples with latency in [i, i+1) us.
    pub buckets: Vec<u64>,
    /// Samples of `buckets.len()` us or more.
    pub overflow: u64,
    /// Cycle numbers (0-based) of the first overflowing samples, where they are known: at
    /// most `buckets.len()` of them, as cyclictest keeps them.
    pub overflow_cycles: Vec<u64>,
    pub min_us: u64,
    /// The mean, truncated to whole microseconds.
    pub avg_us: u64,
    pub max_us: u64,
}

impl Column {
    /// Bucket a stream's histogram into `n_us` one-microsecond buckets. Samples are placed by
    /// the lowest value of their HDR bucket (3 significant digits); which cycles overflowed
    /// is not known from a histogram, so none are listed.
    pub fn from_stream(s: &Stream, n_us: usize) -> Column {
        let h = &s.hist;
        let buckets = (0..n_us as u64)
            .map(|i| h.count_between(i * 1000, (i + 1) * 1000))
            .collect();
        Column {
            buckets,
            overflow: h.count_between(n_us as u64 * 1000, u64::MAX),
            overflow_cycles: Vec::new(),
            min_us: h.min() / 1000,
            avg_us: (h.mean() / 1000.0) as u64,
            max_us: h.max() / 1000,
        }
    }

    /// Every sample of the column, overflows included.
    pub fn count(&self) -> u64 {
        self.buckets.iter().sum::<u64>() + self.overflow
    }

    /// The column as a latency histogram: each bucket's samples in the middle of the bucket
    /// (`i` us counts latencies of i.0 to i.999 us; the middle keeps them inside it at the
    /// HDR histogram's 0.1 % resolution), the overflows in the middle of the maximum's
    /// microsecond (the file does not say where they were), the file's minimum and maximum,
    /// and a sum of `mean_ns` per sample.
    pub fn to_histogram(&self, mean_ns: f64) -> LatencyHistogram {
        let middle = |us: u64| us * 1000 + 500;
        let recorded = self
            .buckets
            .iter()
            .enumerate()
            .filter(|(_, &n)| n > 0)
            .map(|(i, &n)| (middle(i as u64), n))
            .chain((self.overflow > 0).then_some((middle(self.max_us), self.overflow)));
        let sum = (mean_ns * self.count() as f64).round() as u128;
        LatencyHistogram::from_parts(recorded, self.min_us * 1000, self.max_us * 1000, sum)
    }
}

/// Render the histogram text for `cols`, as cyclictest writes it.
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
    line(&mut s, "# Total:", &|c| c.buckets.iter().sum::<u64>(), 9);
    line(&mut s, "# Min Latencies:", &|c| c.min_us, 5);
    line(&mut s, "# Avg Latencies:", &|c| c.avg_us, 5);
    line(&mut s, "# Max Latencies:", &|c| c.max_us, 5);
    line(&mut s, "# Histogram Overflows:", &|c| c.overflow, 5);
    s.push_str("# Histogram Overflow at cycle number:\n");
    for (j, c) in cols.iter().enumerate() {
        let _ = write!(s, "# Thread {j}:");
        for cycle in &c.overflow_cycles {
            let _ = write!(s, " {cycle:05}");
        }
        let listed = c.overflow_cycles.len() as u64;
        if listed < c.overflow {
            let _ = write!(s, " # {:05} others", c.overflow - listed);
        }
        s.push('\n');
    }
    s.push('\n');
    s
}

/// Render streams directly (one column each, `n_us` buckets).
pub fn render_streams(streams: &[Stream], n_us: usize) -> String {
    let cols: Vec<Column> = streams.iter().map(|s| Column::from_stream(s, n_us)).collect();
    render(&cols)
}

/// True when `text` reads as a cyclictest histogram: one of its lines is `# Histogram`.
/// cyclictest's own standard output puts lines of its own before it (`# /dev/cpu_dma_latency
/// set to 0us`; without `-q`, its status lines), which [`parse`] skips.
pub fn looks_like_histogram(text: &str) -> bool {
    text.lines().any(|l| l.trim() == "# Histogram")
}

/// Longest latency a file may state, in microseconds: reports count in nanoseconds, in 64 bits.
pub const MAX_LATENCY_US: u64 = u64::MAX / 1000 - 1;

/// Parse a cyclictest `-h` histogram (cyclictest's own `--histfile` or standard output, or the
/// probe's `--histfile`); lines before `# Histogram` are skipped. An error names the line and
/// what is wrong with it; counts that add up (over every thread, overflows included) to more
/// than 2^64 - 1 samples, latencies beyond 2^64 ns and a maximum below the minimum are
/// refused.
pub fn parse(text: &str) -> Result<Vec<Column>, String> {
    let mut rows: Vec<Vec<u64>> = Vec::new();
    // Per summary line: its line number and values.
    let mut summary: [Option<(usize, Vec<u64>)>; 4] = Default::default();
    const SUMMARY: [&str; 4] = [
        "# Min Latencies:",
        "# Avg Latencies:",
        "# Max Latencies:",
        "# Histogram Overflows:",
    ];
    let mut cycles: Vec<Vec<u64>> = Vec::new();
    let mut total = 0u64;
    let too_many = |line: usize| format!("line {line}: the counts add up to more than {} samples", u64::MAX);
    let skip = text.lines().position(|l| l.trim() == "# Histogram").unwrap_or(0);
    for (i, l) in text.lines().enumerate().skip(skip) {
        let at = |what: String| format!("line {}: {what}", i + 1);
        let nums = |rest: &str| -> Result<Vec<u64>, String> {
            rest.split_whitespace()
                .map(|x| x.parse::<u64>().map_err(|_| at(format!("`{x}` is not a count"))))
                .collect()
        };
        if let Some(k) = SUMMARY.iter().position(|p| l.starts_with(p)) {
            summary[k] = Some((i + 1, nums(&l[SUMMARY[k].len()..])?));
        } else if let Some(rest) = l.strip_prefix("# Thread ") {
            let (_, list) = rest
                .split_once(':')
                .ok_or_else(|| at("`# Thread N:` without its colon".into()))?;
            // `... # 00015 others`: cycles beyond those cyclictest kept.
            let listed = list.split('#').next().unwrap_or("");
            cycles.push(nums(listed)?);
        } else if l.starts_with('#') || l.trim().is_empty() {
            continue;
        } else {
            let v = nums(l)?;
            if v.first() != Some(&(rows.len() as u64)) {
                return Err(at(format!(
                    "expected the row of bucket {} (`{:06} count...`), found `{l}`",
                    rows.len(),
                    rows.len()
                )));
            }
            if let Some(first) = rows.first().filter(|f| f.len() != v.len() - 1) {
                return Err(at(format!(
                    "{} columns, where the first row has {}",
                    v.len() - 1,
                    first.len()
                )));
            }
            total = v[1..]
                .iter()
                .try_fold(total, |t, &n| t.checked_add(n))
                .ok_or_else(|| too_many(i + 1))?;
            rows.push(v[1..].to_vec());
        }
    }
    let Some(n) = rows.first().map(Vec::len).or(summary[2].as_ref().map(|(_, v)| v.len())) else {
        return Err("no histogram rows and no `# Max Latencies:` line: not a cyclictest -h histogram".into());
    };
    let mut cols = vec![Column::default(); n];
    for r in &rows {
        for (c, &v) in cols.iter_mut().zip(r) {
            c.buckets.push(v);
        }
    }
    for (k, label) in SUMMARY.iter().enumerate() {
        let Some((line, v)) = &summary[k] else {
            return Err(format!("no `{label}` line"));
        };
        if v.len() != n {
            return Err(format!(
                "line {line}: `{label}` has {} columns, the histogram {n}",
                v.len()
            ));
        }
        for (c, &x) in cols.iter_mut().zip(v) {
            if k < 3 && x > MAX_LATENCY_US {
                return Err(format!(
                    "line {line}: {x} us is beyond the longest latency read, {MAX_LATENCY_US} us (2^64 ns)"
                ));
            }
            match k {
                0 => c.min_us = x,
                1 => c.avg_us = x,
                2 => c.max_us = x,
                _ => {
                    total = total.checked_add(x).ok_or_else(|| too_many(*line))?;
                    c.overflow = x
                }
            }
        }
    }
    for (j, c) in cols.iter().enumerate() {
        if c.count() > 0 && c.min_us > c.max_us {
            let line = summary[2].as_ref().map_or(0, |(l, _)| *l);
            return Err(format!(
                "line {line}: thread {j}'s maximum, {} us, is below its minimum, {} us",
                c.max_us, c.min_us
            ));
        }
    }
    for (c, list) in cols.iter_mut().zip(cycles) {
        c.overflow_cycles = list;
    }
    Ok(cols)
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
    let total: u64 = cols.iter().map(Column::count).sum();
    let avg = cols
        .iter()
        .map(|c| c.avg_us as u128 * c.count() as u128)
        .sum::<u128>()
        .checked_div(total as u128)
        .unwrap_or(0) as u64;
    Column {
        buckets,
        overflow: cols.iter().map(|c| c.overflow).sum(),
        overflow_cycles: Vec::new(),
        min_us: cols.iter().map(|c| c.min_us).min().unwrap_or(0),
        avg_us: avg,
        max_us: cols.iter().map(|c| c.max_us).max().unwrap_or(0),
    }
}

/// Quantile `q` (0..1) of a parsed column, in whole microseconds (overflows count as max).
pub fn column_quantile(c: &Column, q: f64) -> u64 {
    let total = c.count();
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

    /// cyclictest 2.40's own file (`cyclictest -m -p 95 -i 1000 -l 300 -t 2 -a -h 22 -q
    /// --histfile=h.txt` on a 2-vCPU guest), the rows 0-16 cut.
    const CYCLICTEST_HIST: &str = "# Histogram
000000 000000\t000000
000001 000000\t000000
000002 000000\t000000
000003 000000\t000000
000004 000000\t000000
000005 000000\t000000
000006 000000\t000000
000007 000000\t000000
000008 000000\t000000
000009 000000\t000000
000010 000000\t000000
000011 000000\t000000
000012 000000\t000000
000013 000000\t000000
000014 000000\t000001
000015 000000\t000001
000016 000001\t000005
000017 000001\t000012
000018 000002\t000013
000019 000002\t000015
000020 000010\t000009
000021 000006\t000007
# Total: 000000022 000000063
# Min Latencies: 00016 00014
# Avg Latencies: 00038 00045
# Max Latencies: 01721 01895
# Histogram Overflows: 00278 00237
# Histogram Overflow at cycle number:
# Thread 0: 00000 00001 00003 00004 00005 00006 00007 00008 00010 00011 00012 00013 00014 00015 00016 00017 00018 00019 00020 00021 00022 00023 # 00256 others
# Thread 1: 00000 00001 00002 00004 00005 00006 00007 00008 00009 00010 00011 00012 00013 00014 00016 00017 00018 00019 00020 00021 00022 00024 # 00215 others

";

    #[test]
    fn reads_cyclictest_and_writes_it_back_byte_for_byte() {
        let cols = parse(CYCLICTEST_HIST).unwrap();
        assert_eq!(cols.len(), 2);
        assert_eq!(cols[0].buckets.len(), 22);
        assert_eq!(cols[0].buckets.iter().sum::<u64>(), 22);
        assert_eq!((cols[0].overflow, cols[0].count()), (278, 300));
        assert_eq!((cols[1].min_us, cols[1].avg_us, cols[1].max_us), (14, 45, 1895));
        assert_eq!(cols[0].overflow_cycles.len(), 22);
        assert_eq!(cols[1].overflow_cycles[2..4], [2, 4]);
        assert_eq!(render(&cols), CYCLICTEST_HIST);
    }

    #[test]
    fn layout_of_a_stream_total_excludes_overflows_and_the_average_is_truncated() {
        let mut a = Stream::new("cpu0", "x");
        a.hist.record(1_500);
        a.hist.record(3_900);
        a.hist.record(50_000);
        let mut b = Stream::new("cpu1", "x");
        b.hist.record(2_000);
        let text = render_streams(&[a, b], 10);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "# Histogram");
        assert_eq!(lines[1], "000000 000000\t000000");
        assert_eq!(lines[2], "000001 000001\t000000");
        assert_eq!(lines[3], "000002 000000\t000001");
        assert!(text.contains("# Total: 000000002 000000001\n"), "{text}");
        assert!(text.contains("# Min Latencies: 00001 00002\n"));
        // (1.5 + 3.9 + 50) / 3 = 18.47 us: truncated, as cyclictest's integer division.
        assert!(text.contains("# Avg Latencies: 00018 00002\n"), "{text}");
        assert!(text.contains("# Max Latencies: 00050 00002\n"));
        assert!(text.contains("# Histogram Overflows: 00001 00000\n"));
        assert!(
            text.ends_with("# Histogram Overflow at cycle number:\n# Thread 0: # 00001 others\n# Thread 1:\n\n"),
            "{text}"
        );
        let cols = parse(&text).unwrap();
        assert_eq!(cols[0].buckets.len(), 10);
        assert_eq!(cols[0].overflow, 1);
        assert_eq!(column_quantile(&cols[0], 0.5), 3);
        let m = merge(&cols);
        assert_eq!(m.buckets[1] + m.buckets[2] + m.buckets[3], 3);
        assert_eq!((m.min_us, m.max_us, m.overflow), (1, 50, 1));
    }

    #[test]
    fn a_column_becomes_a_histogram_with_its_exact_figures() {
        let cols = parse(CYCLICTEST_HIST).unwrap();
        let h = cols[0].to_histogram(38_000.0);
        assert_eq!((h.count(), h.min(), h.max()), (300, 16_000, 1_721_000));
        assert_eq!(h.mean(), 38_000.0);
        assert_eq!(h.count_between(20_000, 21_000), 10);
        // The overflows sit at the maximum.
        assert_eq!(h.count_between(1_000_000, u64::MAX), 278);
    }

    #[test]
    fn bad_histograms_are_refused_with_the_line() {
        let e = parse("# Histogram\n000000 000001\n000001 0x2\n").unwrap_err();
        assert_eq!(e, "line 3: `0x2` is not a count");
        let e = parse("# Histogram\n000000 000001\n000002 000001\n").unwrap_err();
        assert!(e.starts_with("line 3: expected the row of bucket 1"), "{e}");
        let e = parse("# Histogram\n000000 000001\t000001\n000001 000001\n").unwrap_err();
        assert_eq!(e, "line 3: 1 columns, where the first row has 2");
        let e = parse("# Histogram\n000000 000001\n# Min Latencies: 00000\n").unwrap_err();
        assert_eq!(e, "no `# Avg Latencies:` line");
        let e = parse(
            "# Histogram\n000000 000001\n# Min Latencies: 00009\n# Avg Latencies: 00009\n\
                       # Max Latencies: 00000\n# Histogram Overflows: 00000\n",
        )
        .unwrap_err();
        assert_eq!(e, "line 5: thread 0's maximum, 0 us, is below its minimum, 9 us");
        let e = parse("hello\n").unwrap_err();
        assert_eq!(e, "line 1: `hello` is not a count");
        assert!(parse("").unwrap_err().contains("not a cyclictest -h histogram"));
        assert!(looks_like_histogram("\n# Histogram\n"));
        assert!(!looks_like_histogram("{\"meta\": 1}"));
    }
}
