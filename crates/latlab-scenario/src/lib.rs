//! Scenarios: what a machine runs, described once and read by both engines.
//!
//! - [`task`]: the `[[task]]` format (policy, priority, nice, affinity, copies, and a program
//!   of steps) and its checks that need no machine;
//! - [`scenario`]: a scenario file (`scenarios/*.toml`, docs/experiments.md "Scenarios"):
//!   name, description, duration, tasks, named loads and the streams measured;
//! - [`rtapp`]: rt-app's JSON task files read as scenarios.
//!
//! [`load`] reads either form by the file's extension. No engine lives here: the model maps a
//! scenario onto a workload (`latlab_exp::scenario`), the probe runs it for real
//! (`latlab_probe::scenario`).

pub mod rtapp;
pub mod scenario;
pub mod task;

pub use scenario::{load, parse_toml, Load, Scenario, ScenarioError};
