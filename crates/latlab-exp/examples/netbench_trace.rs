//! Measures a dbench NetBench loadfile (dbench 3/4 `client.txt` format) the way the model's
//! dbench client ([`latlab_sim::workload::script::NETBENCH`]) uses it: operations per 90,000
//! lines, bytes written in place and appended, reads, short-lived files, and the long-lived
//! files half-way through the trace.
//!
//! `cargo run --release -p latlab-exp --example netbench_trace [-- /usr/share/dbench/client.txt]`

use std::collections::HashMap;

/// The fields of a loadfile line: words, with "quoted paths" as one field.
fn fields(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = line.trim();
    while !rest.is_empty() {
        if let Some(q) = rest.strip_prefix('"') {
            let end = q.find('"').unwrap_or(q.len());
            out.push(q[..end].replace('\\', "/"));
            rest = q.get(end + 1..).unwrap_or("").trim_start();
        } else {
            let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
            out.push(rest[..end].to_string());
            rest = rest[end..].trim_start();
        }
    }
    out
}

fn num(f: &[String], i: usize) -> u64 {
    let s = f.get(i).map_or("0", |s| s.as_str());
    match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).unwrap_or(0),
        None => s.parse().unwrap_or(0),
    }
}

fn main() -> anyhow::Result<()> {
    let path = std::env::args().nth(1).unwrap_or("/usr/share/dbench/client.txt".into());
    let text = std::fs::read_to_string(&path).map_err(|e| anyhow::anyhow!("{path}: {e}"))?;
    let total = text.lines().count() as u64;
    let (mut size, mut born) = (HashMap::<String, u64>::new(), HashMap::<String, u64>::new());
    let mut handle = HashMap::<String, Option<String>>::new();
    let (mut opens, mut writes, mut reads, mut rewrite, mut append, mut read_bytes) = (0, 0, 0, 0, 0, 0);
    let mut gone: Vec<u64> = Vec::new();
    let mut mid: Vec<u64> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let n = n as u64 + 1;
        let f = fields(line);
        if f.last().map(String::as_str) != Some("NT_STATUS_OK") {
            continue;
        }
        match f[0].as_str() {
            "NTCreateX" => {
                let (p, dir) = (f[1].clone(), num(&f, 2) & 1 == 1);
                handle.insert(f[4].clone(), (!dir).then(|| p.clone()));
                if !dir {
                    opens += 1;
                    born.entry(p.clone()).or_insert(n);
                    let s = size.entry(p).or_insert(0);
                    if matches!(num(&f, 3), 0 | 4 | 5) {
                        *s = 0; // supersede / overwrite: truncated
                    }
                }
            }
            "WriteX" => {
                let Some(Some(p)) = handle.get(&f[1]) else { continue };
                let (off, len) = (num(&f, 2), num(&f, 4));
                let s = size.entry(p.clone()).or_insert(0);
                writes += 1;
                rewrite += (off + len).min(*s).saturating_sub(off);
                append += (off + len).saturating_sub((*s).max(off));
                *s = (*s).max(off + len);
            }
            "ReadX" => {
                reads += 1;
                read_bytes += num(&f, 4);
            }
            "Unlink" => {
                if let Some(s) = size.remove(&f[1]) {
                    born.remove(&f[1]);
                    gone.push(s);
                }
            }
            "Rename" => {
                if let Some(s) = size.remove(&f[1]) {
                    let b = born.remove(&f[1]).unwrap_or(n);
                    size.insert(f[2].clone(), s);
                    born.insert(f[2].clone(), b);
                }
            }
            "Deltree" => {
                let dir = format!("{}/", f[1]);
                size.retain(|k, _| !k.starts_with(&dir));
                born.retain(|k, _| !k.starts_with(&dir));
            }
            _ => {}
        }
        if n == total / 2 {
            mid = size
                .iter()
                .filter(|(k, _)| n - born[*k] > 50_000)
                .map(|(_, &s)| s)
                .collect();
            mid.sort_unstable();
        }
    }
    let per = |x: u64| x as f64 * 90_000.0 / total as f64;
    let mib = |x: u64| per(x) / 1048576.0;
    println!("{path}: {total} lines; per 90,000 lines:");
    println!(
        "  opens {:.0}, writes {:.0}, reads {:.0}",
        per(opens),
        per(writes),
        per(reads)
    );
    println!(
        "  written {:.1} MiB ({:.1} in place, {:.1} appended), read {:.1} MiB",
        mib(rewrite + append),
        mib(rewrite),
        mib(append),
        mib(read_bytes)
    );
    let mean = gone.iter().sum::<u64>() / (gone.len() as u64).max(1);
    println!("  files deleted {:.0}, mean size {mean} bytes", per(gone.len() as u64));
    println!(
        "long-lived files half-way (older than 50,000 lines): {}, {} KiB; sizes (KiB): {:?}",
        mid.len(),
        mid.iter().sum::<u64>() >> 10,
        mid.iter().map(|s| s >> 10).collect::<Vec<_>>()
    );
    Ok(())
}
