//! Results for the crate's unit tests.

use latlab_core::RunResult;

/// A model result with one realfeel stream holding `values` (ns).
pub(crate) fn realfeel_result(values: &[u64]) -> RunResult {
    let mut r = RunResult::new(latlab_core::RunMeta {
        engine: latlab_core::Engine::Sim,
        machine: "m".into(),
        kernel: "k".into(),
        workload: "w".into(),
        seed: 1,
        duration_ns: 1_000_000_000,
        version: "0".into(),
        settings: Default::default(),
    });
    let mut s = latlab_core::Stream::new("realfeel", "wakeup");
    for &v in values {
        s.hist.record(v);
    }
    r.streams.push(s);
    r
}
