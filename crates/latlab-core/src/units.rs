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
