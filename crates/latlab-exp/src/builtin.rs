//! Built-in machines, variants, workloads and experiments, compiled into the binary from the
//! repository's `machines/`, `variants/`, `workloads/` and `experiments/` directories: the
//! registries are built from the folders by `build.rs` (every file there is a built-in; no
//! hand-kept list).

include!(concat!(env!("OUT_DIR"), "/registry.rs"));
