//! iozone's `-Q` per-record files (iozone.c 3.x): `wol.dat` for the write pass, `rwol.dat`
//! for the rewrite pass, a header and then one line per record: offset in KB, latency in
//! microseconds, the record's bytes. Seed 001's listing is `sort -nk2 wol.dat | tail` of such
//! a file. Written from a stream's kept records ([`latlab_core::Stream::records`]), the
//! model's and the probe's alike.

use latlab_core::IoRecord;
use std::fmt::Write as _;

/// iozone's header line of the per-record files.
pub const HEADER: &str = "Offset in Kbytes   Latency in microseconds  Transfer size in bytes";

/// Every record in iozone `-Q`'s layout; latencies in whole microseconds, truncated as the
/// tables' slowest-record listings print them (iozone rounds its `%10.0f`: at most 1 us apart).
pub fn records_file(records: &[IoRecord]) -> String {
    let mut out = String::with_capacity(records.len() * 34 + HEADER.len() + 1);
    out.push_str(HEADER);
    out.push('\n');
    for r in records {
        let _ = writeln!(out, "{:>10} {:>10} {:>10}", r.offset_kb, r.latency_ns / 1000, r.bytes);
    }
    out
}

/// The file iozone names for a stream's records: `wol.dat` (write), `rwol.dat` (rewrite);
/// any other stream (sysbench's requests) `STREAM.dat`.
pub fn file_name(stream: &str) -> String {
    match stream {
        "write" => "wol.dat".into(),
        "rewrite" => "rwol.dat".into(),
        s => format!("{s}.dat"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_per_record_after_the_header_sorting_like_the_seeds_listing() {
        let recs = [
            IoRecord {
                offset_kb: 0,
                latency_ns: 12_400,
                bytes: 4096,
            },
            IoRecord {
                offset_kb: 4,
                latency_ns: 400_145_000,
                bytes: 4096,
            },
            IoRecord {
                offset_kb: 8,
                latency_ns: 43_950_000,
                bytes: 4096,
            },
        ];
        let f = records_file(&recs);
        let lines: Vec<&str> = f.lines().collect();
        assert_eq!(lines[0], HEADER);
        assert_eq!(lines.len(), 4);
        // `sort -nk2 | tail -1`: the slowest record, in microseconds.
        let worst = lines[1..]
            .iter()
            .map(|l| {
                l.split_whitespace()
                    .map(|w| w.parse::<u64>().unwrap())
                    .collect::<Vec<_>>()
            })
            .max_by_key(|c| c[1])
            .unwrap();
        assert_eq!(worst, vec![4, 400_145, 4096]);
    }

    #[test]
    fn names_follow_iozone() {
        assert_eq!(file_name("write"), "wol.dat");
        assert_eq!(file_name("rewrite"), "rwol.dat");
        assert_eq!(file_name("sysbench-rndrw"), "sysbench-rndrw.dat");
    }
}
