//! Command-line administration: the command tree (`command`) and each subcommand's work; and
//! the client commands that drive a server elsewhere through its API (`client`).

pub mod client;
pub mod command;
pub mod deletion;
pub mod gc;
pub mod keys;
pub mod maintenance;
pub mod request;
pub mod secret_key;
pub mod share;
pub mod sign_in;
pub mod storage;
pub mod token;
pub mod user;

/// A failure the person running the command can fix: printed as one line, exit code 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// A `UsageError` as the `anyhow::Error` the commands return.
pub fn usage(message: impl Into<String>) -> anyhow::Error {
    UsageError(message.into()).into()
}

/// Writes one line to standard output, or fails with the I/O error: with output piped into a
/// reader that stopped (`watasu share list | head`) that is a broken pipe, which `main` ends
/// quietly instead of letting `println!` panic.
pub fn write_line(line: std::fmt::Arguments<'_>) -> std::io::Result<()> {
    use std::io::Write;
    writeln!(std::io::stdout().lock(), "{line}")
}

/// True when `error` is, at its root, a write into a pipe whose reader has gone.
pub fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error
        .chain()
        .filter_map(|cause| cause.downcast_ref::<std::io::Error>())
        .any(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
}

/// `println!` for commands: `outln!(...)` writes a line and returns early with the error when
/// standard output is gone.
#[macro_export]
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::cli::write_line(format_args!($($arg)*))?
    };
}
