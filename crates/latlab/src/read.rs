//! Reading the files a command names, bounded: a file longer than a command has use for, or
//! one without end (`/dev/zero`), is an error instead of a hang.

use std::io::Read;
use std::path::Path;

/// The text of `path`: at most `max` bytes of UTF-8, else an error saying the bound.
pub fn bounded(path: &Path, max: u64) -> std::io::Result<String> {
    let mut bytes = Vec::new();
    std::fs::File::open(path)?.take(max + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("longer than {max} bytes, the most latlab reads of such a file"),
        ));
    }
    String::from_utf8(bytes).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}
