//! The optional virus scan by clamd ([`clamd`]), failing closed: a file subject to it starts
//! `pending` and is held (its recipients are not mailed, its link does not open) until clamd
//! has answered for it. Clean, or too large under the `release` policy: released. Infected, too
//! large under `refuse`, or never answered within the retry limit: refused, and its handover's
//! shares end so the GC deletes the bytes. A request's file (inbound) is refused alone: its
//! bytes are deleted and the request stays open. A file is never released unscanned.
//!
//! Anything that inserts a `files` row in the pending state is scanned the same way: the worker
//! ([`crate::services::scanning`]) reads only [`files`].

pub mod clamd;
pub mod files;

pub use clamd::{Clamd, ClamdAddress, ScanError, Verdict};
pub use files::{DueFile, RefusedInbound, ScanFiles};

crate::db_code! {
    /// Where a file is in its scan (`files.scan_state`; NULL: not subject to scanning).
    pub enum ScanState {
        /// Held until clamd answers.
        Pending = "pending",
        Clean = "clean",
        Infected = "infected",
        /// Longer than clamd's StreamMaxLength, released unscanned by the admin's choice.
        TooLarge = "too_large",
        /// Too large under the `refuse` policy, or clamd never answered within the retry limit.
        Refused = "refused",
    }
}

impl ScanState {
    /// Whether a recipient may have the file: only once clamd found it clean, or the admin chose
    /// to release files too large to scan.
    pub fn is_released(self) -> bool {
        matches!(self, Self::Clean | Self::TooLarge)
    }
}

crate::db_code! {
    /// Why a file was refused without a signature found (`files.scan_finding` of a refused file).
    pub enum RefusalReason {
        TooLarge = "too_large",
        /// clamd never answered within WATASU_SCAN_ATTEMPTS.
        NoAnswer = "no_answer",
    }
}

/// What becomes of a file longer than clamd's StreamMaxLength.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum TooLargePolicy {
    /// Refused like an infected file: nothing unscanned reaches a recipient.
    Refuse,
    /// Released, marked "not scanned: too large" for its sender.
    Release,
}
