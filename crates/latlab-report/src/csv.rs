//! `latlab report csv`: a result's streams as CSV (RFC 4180: comma-separated, a header
//! row, fields quoted when they hold a comma, quote or line break; `\n` line ends).
//!
//! - buckets: `stream,lo_ns,hi_ns,count`, one row per log bucket ([`crate::buckets`]) from
//!   each stream's first non-empty bucket to its last (empty buckets between are rows too).
//! - percentiles: `stream,count,missed,min_ns,mean_ns,p50_ns,p90_ns,p99_ns,p99.9_ns,
//!   p99.99_ns,max_ns`, one row per stream.

use crate::buckets;
use latlab_core::RunResult;
use std::fmt::Write;

/// A CSV field, quoted when it must be.
pub fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// Bucket rows of every stream, `per_octave` buckets per doubling.
pub fn buckets(r: &RunResult, per_octave: u32) -> String {
    let mut out = String::from("stream,lo_ns,hi_ns,count\n");
    for s in &r.streams {
        for b in buckets::log_buckets(&s.hist, per_octave) {
            let _ = writeln!(out, "{},{},{},{}", field(&s.name), b.lo_ns, b.hi_ns, b.count);
        }
    }
    out
}

/// One row of exact count/min/mean/max and HDR percentiles per stream.
pub fn percentiles(r: &RunResult) -> String {
    let mut out = String::from("stream,count,missed,min_ns,mean_ns,p50_ns,p90_ns,p99_ns,p99.9_ns,p99.99_ns,max_ns\n");
    for s in &r.streams {
        let m = s.hist.summary();
        let _ = writeln!(
            out,
            "{},{},{},{},{:.1},{},{},{},{},{},{}",
            field(&s.name),
            m.count,
            s.missed,
            m.min_ns,
            m.mean_ns,
            m.p50_ns,
            m.p90_ns,
            m.p99_ns,
            m.p999_ns,
            m.p9999_ns,
            m.max_ns
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::tests::result;
    use latlab_core::Engine;

    #[test]
    fn bucket_and_percentile_rows() {
        let mut r = result(Engine::Probe, "6.1", "cpu,0", &[1_500, 1_500, 5_000]);
        r.streams[0].missed = 2;
        let b = buckets(&r, 1);
        let lines: Vec<&str> = b.lines().collect();
        assert_eq!(
            lines,
            [
                "stream,lo_ns,hi_ns,count",
                "\"cpu,0\",1000,2000,2",
                "\"cpu,0\",2000,4000,0",
                "\"cpu,0\",4000,8000,1"
            ]
        );
        let p = percentiles(&r);
        let row: Vec<&str> = p.lines().nth(1).unwrap().rsplitn(11, ',').collect();
        // From the right: max, p99.99 ... count, then the quoted name.
        assert_eq!(row[0], "5000");
        assert_eq!(row[8], "2");
        assert_eq!(row[9], "3");
        assert_eq!(field("a\"b"), "\"a\"\"b\"");
    }
}
