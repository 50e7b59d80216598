//! The built-in registries, built from the repository's folders: every `machines/*.toml`,
//! `variants/*.toml`, `workloads/*.toml` and `experiments/*.toml` (named by file stem) and every stored band
//! report `experiments/bands/*.json`, compiled in with `include_str!`. Adding a file to a
//! folder adds it to latlab; no list is kept by hand. Order: by name, but experiments by
//! their seed file and then name, the order `latlab reproduce` runs them in.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn files(dir: &Path, ext: &str) -> Vec<(String, PathBuf)> {
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut out: Vec<(String, PathBuf)> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a readable directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == ext))
        .map(|p| {
            let stem = p.file_stem().expect("a file name").to_string_lossy().into_owned();
            (stem, p)
        })
        .collect();
    out.sort();
    out
}

/// The value of `seed_file = "..."` in an experiment file (empty: a what-if without one).
fn seed_file(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .filter_map(|l| l.trim_start().strip_prefix("seed_file"))
        .filter_map(|rest| rest.trim_start().strip_prefix('='))
        .map(|v| v.trim().trim_matches('"').to_string())
        .next()
        .unwrap_or_default()
}

fn registry(out: &mut String, doc: &str, konst: &str, list: &[(String, PathBuf)]) {
    let _ = writeln!(out, "/// {doc}\npub const {konst}: &[(&str, &str)] = &[");
    for (name, path) in list {
        let _ = writeln!(out, "    ({name:?}, include_str!({:?})),", path.display().to_string());
    }
    let _ = writeln!(out, "];\n");
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let root = root.canonicalize().expect("the repository root");
    let mut experiments = files(&root.join("experiments"), "toml");
    // The seeds' experiments in seed order, then the what-ifs that reproduce no seed.
    experiments.sort_by_cached_key(|(name, path)| {
        let seed = seed_file(path);
        (seed.is_empty(), seed, name.clone())
    });
    let mut out = String::new();
    registry(
        &mut out,
        "Built-in machine profiles: `machines/*.toml`.",
        "MACHINES",
        &files(&root.join("machines"), "toml"),
    );
    registry(
        &mut out,
        "Built-in kernel variants: `variants/*.toml`.",
        "VARIANTS",
        &files(&root.join("variants"), "toml"),
    );
    registry(
        &mut out,
        "Built-in workloads: `workloads/*.toml`.",
        "WORKLOADS",
        &files(&root.join("workloads"), "toml"),
    );
    registry(
        &mut out,
        "Built-in experiments: `experiments/*.toml`, by seed file (what-ifs without one last), then name.",
        "EXPERIMENTS",
        &experiments,
    );
    registry(
        &mut out,
        "Each built-in experiment's stored uncertainty report: `experiments/bands/*.json`.",
        "BANDS",
        &files(&root.join("experiments/bands"), "json"),
    );
    let dest = Path::new(&std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("registry.rs");
    std::fs::write(&dest, out).unwrap_or_else(|e| panic!("{}: {e}", dest.display()));
}
