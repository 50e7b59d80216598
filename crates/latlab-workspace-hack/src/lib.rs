//! Nothing to call: this crate only turns on, in shared dependencies, the features the
//! workspace's test build turns on, so every build of the workspace's binaries resolves
//! them alike and reuses one compilation (its `Cargo.toml` says which and why).
