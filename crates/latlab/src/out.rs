//! Standard output that reports a failed write instead of panicking as `print!` does: every
//! command writes through [`out!`] / [`outln!`], whose error ([`StdoutError`]) `main` turns
//! into a quiet exit when the reader went away (a closed pipe, as `latlab reproduce | head`)
//! and into a one-line error otherwise (`latlab reproduce > /dev/full`). Messages go to
//! standard error through [`errln!`], which drops a failed write (the terminal of a dropped
//! SSH session) instead of panicking, so the probe still cleans up and writes its files.

use std::io::Write;

/// Writing standard output failed.
#[derive(Debug)]
pub struct StdoutError(pub std::io::Error);

impl std::fmt::Display for StdoutError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cannot write to standard output: {}", self.0)
    }
}

impl std::error::Error for StdoutError {}

impl StdoutError {
    /// The reader closed its end (EPIPE): the output is no longer wanted.
    pub fn reader_gone(&self) -> bool {
        self.0.kind() == std::io::ErrorKind::BrokenPipe
    }
}

/// Whether standard output takes a write, asked before a long run instead of after it: a
/// write of no bytes, which a full device (`> /dev/full`) or a bad descriptor refuses, while
/// a pipe or a file takes it (a closed pipe is found at the first real write).
pub fn check() -> Result<(), StdoutError> {
    use std::os::fd::AsFd;
    nix::unistd::write(std::io::stdout().as_fd(), &[])
        .map(drop)
        .map_err(|e| StdoutError(std::io::Error::from(e)))
}

/// Write `args` to standard output.
pub fn write(args: std::fmt::Arguments) -> Result<(), StdoutError> {
    std::io::stdout().lock().write_fmt(args).map_err(StdoutError)
}

/// Flush what standard output still buffers (the last line of a `print!` without newline).
pub fn flush() -> Result<(), StdoutError> {
    std::io::stdout().lock().flush().map_err(StdoutError)
}

/// `print!` that returns a [`StdoutError`] instead of panicking.
macro_rules! out {
    ($($arg:tt)*) => { $crate::out::write(format_args!($($arg)*)) };
}

/// `println!` that returns a [`StdoutError`] instead of panicking.
macro_rules! outln {
    ($($arg:tt)*) => { $crate::out::write(format_args!("{}\n", format_args!($($arg)*))) };
}

/// `eprintln!` that drops a failed write instead of panicking.
macro_rules! errln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr().lock(), $($arg)*);
    }};
}
