//! Option values: durations (`10s`, `500ms`), sizes (`16M`, `1G`), CPU lists (`0,1`, `0-3`).
//! Each parser returns a message fit to follow "invalid value for --option".

/// Parse a duration; a bare number is in `default_unit` ("s", "us", ...).
pub fn duration_ns(s: &str, default_unit: &str) -> Result<u64, String> {
    let s = s.trim();
    let split = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let unit = if unit.is_empty() { default_unit } else { unit };
    let v: f64 = num
        .parse()
        .map_err(|_| format!("'{s}' is not a duration (examples: 10s, 500ms, 1000us, 2m)"))?;
    let mult = match unit {
        "ns" => 1.0,
        "us" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "m" | "min" => 60e9,
        "h" => 3600e9,
        _ => return Err(format!("unknown unit '{unit}' in '{s}' (use ns, us, ms, s, m, h)")),
    };
    let ns = v * mult;
    if !ns.is_finite() || ns < 1.0 {
        return Err(format!("'{s}' must be greater than zero"));
    }
    // 2^64 ns (584 years) and above would not fit: `as` would clamp them to u64::MAX.
    if ns >= u64::MAX as f64 {
        return Err(format!("'{s}' is too long (at most 584 years)"));
    }
    Ok(ns as u64)
}

/// The longest run a probe accepts: a year. Longer is a mistake, and the measuring threads
/// add it to the clock, which must not wrap.
pub const MAX_RUN_NS: u64 = 365 * 24 * 3600 * 1_000_000_000;

/// Parse a run's length (`--duration`): a duration (bare number: seconds) of at most
/// [`MAX_RUN_NS`].
pub fn run_duration_ns(s: &str) -> Result<u64, String> {
    let ns = duration_ns(s, "s")?;
    if ns > MAX_RUN_NS {
        return Err(format!("'{s}' is longer than a run may be: at most 8760h (365 days)"));
    }
    Ok(ns)
}

/// Parse a size: `4096`, `16K`, `16M`, `1G`, `1T` (binary multiples; optional trailing `B`/`iB`).
pub fn size_bytes(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let v: u64 = num
        .parse()
        .map_err(|_| format!("'{s}' is not a size (examples: 16M, 1G, 4096)"))?;
    let unit = unit.trim_end_matches("iB").trim_end_matches('B').to_ascii_uppercase();
    let mult: u64 = match unit.as_str() {
        "" => 1,
        "K" => 1 << 10,
        "M" => 1 << 20,
        "G" => 1 << 30,
        "T" => 1 << 40,
        _ => return Err(format!("unknown size unit in '{s}' (use K, M, G, T)")),
    };
    let b = v.checked_mul(mult).ok_or_else(|| format!("'{s}' is too large"))?;
    if b == 0 {
        return Err(format!("'{s}' must be greater than zero"));
    }
    Ok(b)
}

/// CPUs this process may run on (its affinity mask), ascending.
pub fn allowed_cpus() -> Vec<usize> {
    use nix::sched::{sched_getaffinity, CpuSet};
    use nix::unistd::Pid;
    match sched_getaffinity(Pid::from_raw(0)) {
        Ok(set) => (0..CpuSet::count())
            .filter(|&c| set.is_set(c).unwrap_or(false))
            .collect(),
        Err(_) => (0..std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)).collect(),
    }
}

/// Parse a CPU list (`0,1`, `0-3`, `all`) and check every CPU is online and allowed.
pub fn cpu_list(s: &str) -> Result<Vec<usize>, String> {
    let allowed = allowed_cpus();
    if s.trim() == "all" {
        return Ok(allowed);
    }
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (a, b),
            None => (part, part),
        };
        let a: usize = a
            .parse()
            .map_err(|_| format!("'{part}' is not a CPU number or range"))?;
        let b: usize = b
            .parse()
            .map_err(|_| format!("'{part}' is not a CPU number or range"))?;
        if a > b {
            return Err(format!("range '{part}' is reversed"));
        }
        for c in a..=b {
            if !allowed.contains(&c) {
                return Err(format!(
                    "CPU {c} is not online or not allowed (usable CPUs: {allowed:?})"
                ));
            }
            if !out.contains(&c) {
                out.push(c);
            }
        }
    }
    if out.is_empty() {
        return Err("empty CPU list".into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(duration_ns("10s", "s"), Ok(10_000_000_000));
        assert_eq!(duration_ns("1ms", "us"), Ok(1_000_000));
        assert_eq!(duration_ns("1000", "us"), Ok(1_000_000));
        assert!(duration_ns("x", "s").is_err());
        assert!(duration_ns("0", "us").is_err());
        assert!(duration_ns("5parsecs", "s").is_err());
    }

    #[test]
    fn run_durations_stop_at_a_year() {
        assert_eq!(run_duration_ns("8760h"), Ok(MAX_RUN_NS));
        assert_eq!(run_duration_ns("10"), Ok(10_000_000_000));
        for s in ["8761h", "18446744073709551615", "18446744073709551615ns"] {
            let e = run_duration_ns(s).unwrap_err();
            assert!(
                e.contains("at most 8760h (365 days)") || e.contains("at most 584 years"),
                "{s}: {e}"
            );
        }
        assert_eq!(
            duration_ns("18446744073709551615", "s").unwrap_err(),
            "'18446744073709551615' is too long (at most 584 years)"
        );
        assert_eq!(
            duration_ns("18000000000000000000ns", "s"),
            Ok(18_000_000_000_000_000_000)
        );
    }

    proptest::proptest! {
        /// Whatever the text, the parsers return (no panic); what they accept is positive,
        /// and a run's length fits the clock it is added to.
        #[test]
        fn any_text_parses_or_is_refused(s in "\\PC{0,24}") {
            if let Ok(ns) = duration_ns(&s, "us") {
                proptest::prop_assert!(ns >= 1);
            }
            if let Ok(ns) = run_duration_ns(&s) {
                proptest::prop_assert!((1..=MAX_RUN_NS).contains(&ns));
            }
        }

        /// Numbers of any size in every unit: accepted below the limit, refused above it
        /// with the limit named.
        #[test]
        fn durations_of_any_size(digits in "[0-9]{1,30}(\\.[0-9]{0,12})?", unit in "(|ns|us|ms|s|m|min|h)") {
            let s = format!("{digits}{unit}");
            match run_duration_ns(&s) {
                Ok(ns) => proptest::prop_assert!((1..=MAX_RUN_NS).contains(&ns)),
                Err(e) => proptest::prop_assert!(
                    e.contains("at most") || e.contains("greater than zero"),
                    "{}: {}", s, e
                ),
            }
            if let Ok(ns) = duration_ns(&s, "s") {
                proptest::prop_assert!(ns >= 1);
            }
        }
    }

    #[test]
    fn sizes() {
        assert_eq!(size_bytes("16M"), Ok(16 << 20));
        assert_eq!(size_bytes("1G"), Ok(1 << 30));
        assert_eq!(size_bytes("4096"), Ok(4096));
        assert_eq!(size_bytes("2KiB"), Ok(2048));
        assert!(size_bytes("lots").is_err());
        assert!(size_bytes("0").is_err());
    }

    #[test]
    fn cpus() {
        assert_eq!(cpu_list("0"), Ok(vec![0]));
        assert!(cpu_list("99999").is_err());
        assert!(cpu_list("a").is_err());
    }
}
