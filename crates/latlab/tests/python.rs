//! The Python package (crates/latlab-py) built from this checkout into the venv that
//! scripts/python-venv makes (`.venv`), then its tests (crates/latlab-py/tests, on a local
//! Ray instance with two CPUs) against this binary. Without the venv the test says so and
//! passes: `scripts/install-deps` makes it.

use std::path::Path;
use std::process::Command;

#[test]
fn the_python_package_and_ray_give_the_commands_documents() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let venv = root.join(".venv");
    let py = venv.join("bin/python");
    if !py.exists() {
        eprintln!("skipped: no .venv (scripts/install-deps or scripts/python-venv makes it)");
        return;
    }
    let path = format!(
        "{}:{}",
        venv.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    // The package from this checkout: maturin builds it with cargo (release, target/ shared).
    let built = Command::new(venv.join("bin/maturin"))
        .args(["develop", "--release"])
        .current_dir(root.join("crates/latlab-py"))
        .env("VIRTUAL_ENV", &venv)
        .env("PATH", &path)
        .output()
        .expect("run maturin");
    assert!(
        built.status.success(),
        "maturin develop failed:\n{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let out = Command::new(&py)
        .args(["-m", "unittest", "-v", "test_latlab"])
        .current_dir(root.join("crates/latlab-py/tests"))
        .env("LATLAB_BIN", env!("CARGO_BIN_EXE_latlab"))
        .env("PATH", &path)
        .env("RAY_AUTH_MODE", "disabled")
        .output()
        .expect("run the Python tests");
    let err = String::from_utf8_lossy(&out.stderr);
    eprintln!("{err}");
    assert!(out.status.success(), "Python tests failed:\n{err}");
    assert!(err.contains("Ran 8 tests"), "{err}");
}
