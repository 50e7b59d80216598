//! What the end-to-end tests share: running the built `latlab` (as root or as nobody), and
//! scratch directories.
// Each test binary compiles this module and uses only part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Run the built `latlab` with `args`.
pub fn latlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_latlab"))
        .args(args)
        .output()
        .expect("latlab runs")
}

/// Does this test process run as root?
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// `exe` run as uid/gid 65534 with no capabilities, through setpriv.
pub fn as_nobody(exe: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut c = Command::new("setpriv");
    c.args([
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
        "--inh-caps=-all",
        "--bounding-set=-all",
        "--",
    ]);
    c.arg(exe);
    c
}

/// A path as the string a command line takes.
pub fn path(p: &Path) -> String {
    p.to_str().unwrap().to_string()
}

/// A scratch directory under the system's temp dir, removed when dropped.
pub struct Scratch(pub PathBuf);

impl Scratch {
    pub fn new(tag: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("latlab-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }
    /// Write `text` to `name` in the directory; its path.
    pub fn file(&self, name: &str, text: &str) -> String {
        let f = self.0.join(name);
        std::fs::write(&f, text).unwrap();
        path(&f)
    }
    /// The path of `name` in the directory.
    pub fn path(&self, name: &str) -> String {
        path(&self.0.join(name))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        std::fs::remove_dir_all(&self.0).ok();
    }
}
