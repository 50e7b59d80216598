//! Where the probe puts what it creates in a shared directory (the temp dir, `--scratch`,
//! `--dir`): in a directory of its own, made as mkdtemp(3) makes one. mkdir(2) creates the
//! name atomically and fails on any name that exists (a planted symlink included, which it
//! never follows); the name ends in [`SUFFIX_LEN`] random letters and digits, so another user
//! cannot plant it in advance; mode 0700, so nobody else can enter it. Files inside it are
//! then safe to create by name, even as root.

use crate::guard::Held;
use std::io;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

/// Random characters ending a private directory's name (62^12, some 2^71 names).
pub const SUFFIX_LEN: usize = 12;

/// Is `s` a suffix [`dir`] makes (for telling its directories by name)?
pub fn is_suffix(s: &str) -> bool {
    s.len() == SUFFIX_LEN && s.bytes().all(|b| b.is_ascii_alphanumeric())
}

/// [`SUFFIX_LEN`] letters and digits from the kernel's random pool (getrandom(2)).
fn random_suffix() -> io::Result<String> {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut bytes = [0u8; SUFFIX_LEN];
    let mut filled = 0;
    while filled < bytes.len() {
        let rest = &mut bytes[filled..];
        // SAFETY: the pointer and length describe `rest`, which getrandom fills.
        let n = unsafe { libc::getrandom(rest.as_mut_ptr().cast(), rest.len(), 0) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
            continue;
        }
        filled += n as usize;
    }
    // 256 = 4 * 62 + 8: the first eight letters come up 5 times in 256, the rest 4, which
    // leaves 5.95 bits a character of log2(62) = 5.954: harmless for a name.
    Ok(bytes
        .iter()
        .map(|&b| ALPHABET[b as usize % ALPHABET.len()] as char)
        .collect())
}

/// Make a fresh private directory `parent/<prefix><random>`; with `hold`, the guardian holds
/// its name from just before it exists, so a probe killed at any point after the mkdir
/// leaves nothing.
fn make(parent: &Path, prefix: &str, hold: bool) -> io::Result<(PathBuf, Option<Held>)> {
    for _ in 0..100 {
        let dir = parent.join(format!("{prefix}{}", random_suffix()?));
        let held = hold.then(|| Held::path(&dir));
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => return Ok((dir, held)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        format!("100 random names {prefix}... in {} all exist", parent.display()),
    ))
}

/// A fresh directory `parent/<prefix><random>` only this user may enter, that outlives the
/// probe (results).
pub fn dir(parent: &Path, prefix: &str) -> io::Result<PathBuf> {
    make(parent, prefix, false).map(|(d, _)| d)
}

/// A fresh directory `parent/<prefix><random>` only this user may enter, which the guardian
/// removes should the probe die before it does (scratch).
pub fn held_dir(parent: &Path, prefix: &str) -> io::Result<(PathBuf, Held)> {
    let (d, held) = make(parent, prefix, true)?;
    Ok((d, held.expect("made with hold")))
}

/// Create or truncate `path` for writing, refusing (ELOOP) a symlink at its last component
/// instead of following it: for a file written beside one the user named.
pub fn create_nofollow(path: &Path) -> io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
}

/// A new file beside `path` (in its directory), named `.NAME.<random>.tmp`, created with
/// O_CREAT|O_EXCL|O_NOFOLLOW and mode 0644 less the umask: for a file to be written whole
/// and then renamed or linked to `path`, so `path` never holds half of it.
pub fn create_beside(path: &Path) -> io::Result<(PathBuf, std::fs::File)> {
    use std::os::unix::fs::OpenOptionsExt;
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let name = path.file_name().map_or_else(|| "file".into(), |n| n.to_string_lossy());
    for _ in 0..100 {
        let tmp = parent.join(format!(".{name}.{}.tmp", random_suffix()?));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o644)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&tmp)
        {
            Ok(f) => return Ok((tmp, f)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        format!("100 random names .{name}.*.tmp in {} all exist", parent.display()),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn makes_a_0700_directory_with_an_unpredictable_name() {
        let parent = std::env::temp_dir();
        let a = dir(&parent, "latlab-private-test-").unwrap();
        let b = dir(&parent, "latlab-private-test-").unwrap();
        assert_ne!(a, b);
        for d in [&a, &b] {
            let meta = std::fs::symlink_metadata(d).unwrap();
            assert!(meta.is_dir());
            // mkdir's mode less the umask: never more than the owner's.
            assert_eq!(meta.permissions().mode() & 0o077, 0, "{}", d.display());
            let name = d.file_name().unwrap().to_str().unwrap();
            let suffix = name.strip_prefix("latlab-private-test-").unwrap();
            assert!(is_suffix(suffix), "{name}");
            std::fs::remove_dir(d).unwrap();
        }
        assert!(!is_suffix("0") && !is_suffix("abc-def-ghij") && is_suffix("aZ09aZ09aZ09"));
    }

    #[test]
    fn create_nofollow_refuses_a_symlink() {
        let d = dir(&std::env::temp_dir(), "latlab-private-test-").unwrap();
        let victim = d.join("victim");
        std::fs::write(&victim, "keep me").unwrap();
        let link = d.join("link");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        let e = create_nofollow(&link).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ELOOP), "{e}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep me");
        // An ordinary file is created, then truncated.
        let f = d.join("f");
        std::io::Write::write_all(&mut create_nofollow(&f).unwrap(), b"abc").unwrap();
        drop(create_nofollow(&f).unwrap());
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "");
        std::fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn fails_with_the_reason_where_it_cannot_make_one() {
        let e = dir(Path::new("/nonexistent/latlab"), "x-").unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
    }
}
