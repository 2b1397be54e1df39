//! Command-line administration: each subcommand's work, apart from argument parsing (in main.rs).

pub mod gc;
pub mod share;
pub mod user;

/// A failure the person running the command can fix: printed as one line, exit code 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

impl UsageError {
    pub fn new(message: impl Into<String>) -> anyhow::Error {
        Self(message.into()).into()
    }
}
