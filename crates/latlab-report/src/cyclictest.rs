//! `cyclictest -h N` histogram files (owned by the probe work; see crates/latlab-probe).
