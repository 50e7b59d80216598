//! The README's set-up builds each dependency once: `cargo run --release -p latlab`, maturin's
//! build of the Python package (`-p latlab-py`) and `cargo test --workspace --release` must
//! resolve every shared dependency with the same features, or cargo compiles it (and all
//! above it) again for each. Dev-dependencies (proptest, criterion) and pyo3 turn on features
//! the binaries' own graphs lack; `crates/latlab-workspace-hack` turns them on for every
//! build. This test fails, naming the crate and both feature sets, when a dependency change
//! makes them differ again: add the missing features to that crate's manifest.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

/// `cargo tree` of the workspace: each package (`name vX.Y.Z`) with its feature sets (one,
/// or two where it is built both for build scripts and proc-macros and for the binaries).
fn features(args: &[&str]) -> BTreeMap<String, BTreeSet<String>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "tree",
            "--offline",
            "--locked",
            "--prefix",
            "none",
            "--format",
            "{p}|{f}",
        ])
        .args(args)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .output()
        .expect("run cargo tree");
    assert!(
        out.status.success(),
        "cargo tree {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut all: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for l in String::from_utf8(out.stdout).unwrap().lines() {
        let Some((p, f)) = l.split_once('|') else { continue };
        // `name vX.Y.Z (path)` or `name vX.Y.Z (proc-macro)`: name and version identify it.
        let id = p.split_whitespace().take(2).collect::<Vec<_>>().join(" ");
        all.entry(id)
            .or_default()
            .insert(f.trim_end_matches(" (*)").to_string());
    }
    all
}

/// The workspace's packages.
const MEMBERS: [&str; 10] = [
    "latlab-core",
    "latlab-scenario",
    "latlab-sim",
    "latlab-exp",
    "latlab-swap",
    "latlab-probe",
    "latlab-report",
    "latlab-batch",
    "latlab",
    "latlab-py",
];

#[test]
fn the_binaries_and_the_test_build_resolve_shared_dependencies_alike() {
    let all = features(&["--workspace", "--edges", "normal,build,dev"]);
    // The README's two builds (`-p latlab`, maturin's `-p latlab-py`), then one package's
    // tests as a change to it is tested (`cargo test -p latlab-exp`).
    let builds = [("latlab", "normal,build"), ("latlab-py", "normal,build")]
        .into_iter()
        .chain(MEMBERS.map(|m| (m, "normal,build,dev")));
    for (root, edges) in builds {
        let mine = features(&["--package", root, "--edges", edges]);
        assert!(mine.len() > 5, "{root}: {mine:?}");
        let differ: Vec<String> = mine
            .iter()
            .filter(|(id, f)| all.get(*id).is_some_and(|g| !f.is_subset(g)))
            .map(|(id, f)| format!("{id}: `-p {root} -e {edges}` {f:?}, the test build {:?}", all[id]))
            .collect();
        assert!(
            differ.is_empty(),
            "built twice (add the features to crates/latlab-workspace-hack/Cargo.toml):\n{}",
            differ.join("\n")
        );
    }
}
