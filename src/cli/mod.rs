//! Command-line administration: each subcommand's work, apart from argument parsing (in main.rs).

pub mod deletion;
pub mod gc;
pub mod maintenance;
pub mod share;
pub mod user;

/// A failure the person running the command can fix: printed as one line, exit code 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// A `UsageError` as the `anyhow::Error` the commands return.
pub fn usage(message: impl Into<String>) -> anyhow::Error {
    UsageError(message.into()).into()
}
