//! File requests: a sender asks someone (the uploader) for files. A request is a share pointed
//! the other way ([`crate::share::ShareKind::Request`]): its handover starts empty, its one
//! share's recipient is the uploader, who proves the mailbox exactly as a recipient does, and the
//! files the uploader leaves join the handover, where only the requesting sender (and admins)
//! can fetch them. With WATASU_CLAMD set, each is held from the sender until the virus scan
//! releases it; a refused one is deleted alone. This module holds the request's rules (its
//! limits, its states) and its SQL.

mod listing;
mod replies;
mod repo;
mod room;

pub use listing::{ArrivedFile, RequestListing, SenderReader};
pub use replies::Answerable;
pub(crate) use repo::{ARRIVED, OPEN_FOR_FILES, OpenRequest, request_room};
pub use repo::{NewRequest, RequestRepository};
pub use room::Room;

use crate::db::Timestamp;

/// Files a request may ask for at most, as a handover may hold.
pub const MAX_FILES: u32 = crate::share::create::MAX_FILES as u32;
/// Files a request asks for unless its sender says otherwise.
pub const DEFAULT_FILES: u32 = 10;

/// What the uploader may leave: checked once against the instance's cap, so the form and the
/// CLI accept exactly the same values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, sqlx::FromRow, serde::Serialize)]
pub struct RequestLimits {
    pub max_files: i32,
    pub max_file_bytes: i64,
    pub max_total_bytes: i64,
}

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum LimitError {
    #[error("a request asks for between 1 and {MAX_FILES} files")]
    Files,
    #[error("a size must be between 1 byte and the instance's limit of {0} bytes")]
    Bytes(u64),
}

impl RequestLimits {
    /// Limits within the instance's cap (`WATASU_MAX_UPLOAD_BYTES`, the most one upload may hold):
    /// unset sizes are the cap, a file is never larger than all of them together.
    pub fn parse(
        files: Option<u32>,
        file_bytes: Option<u64>,
        total_bytes: Option<u64>,
        cap: u64,
    ) -> Result<Self, LimitError> {
        let files = files.unwrap_or(DEFAULT_FILES);
        if !(1..=MAX_FILES).contains(&files) {
            return Err(LimitError::Files);
        }
        let within = |bytes: u64| (1..=cap).contains(&bytes).then_some(bytes).ok_or(LimitError::Bytes(cap));
        let total = within(total_bytes.unwrap_or(cap))?;
        let file = within(file_bytes.unwrap_or(total))?.min(total);
        let as_i64 = |bytes: u64| i64::try_from(bytes).unwrap_or(i64::MAX);
        Ok(Self { max_files: files as i32, max_file_bytes: as_i64(file), max_total_bytes: as_i64(total) })
    }
}

crate::db_code! {
    /// Where a request is, as its sender reads it: waiting for the uploader, answered (the files
    /// are kept for the sender), its link run out or ended by the sender unanswered, or its
    /// files removed.
    pub enum RequestState {
        Open = "open",
        Answered = "answered",
        Expired = "expired",
        Ended = "ended",
        Purged = "purged",
    }
}

/// Why an upload, a removal or the finish was refused; nothing was kept.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum UploadRefused {
    #[error("the request takes at most {0} files")]
    TooManyFiles(i32),
    #[error("a file may hold at most {0} bytes")]
    FileTooLarge(i64),
    #[error("the files together may hold at most {0} bytes")]
    TotalTooLarge(i64),
    #[error("choose a file to upload")]
    NoFile,
    #[error("finish needs at least one file")]
    NothingArrived,
    /// A resumable upload named by the form is not (or no longer) a finished one of the request.
    #[error("the upload is not complete")]
    UploadUnfinished,
    /// Answered, expired or ended meanwhile.
    #[error("the request no longer takes files")]
    Closed,
}

/// Whether a file the uploader left counts against the request's limits and for its finish:
/// not when the virus scan refused it (its bytes are deleted).
pub fn counts(file: &crate::share::FileInfo) -> bool {
    !matches!(file.scan_state, Some(crate::scan::ScanState::Infected | crate::scan::ScanState::Refused))
}

/// When an answered request's files go: `answered_at` plus the retention.
pub fn kept_until(answered_at: Timestamp, retention: std::time::Duration) -> Timestamp {
    Timestamp(answered_at.0 + chrono::Duration::from_std(retention).unwrap_or(chrono::Duration::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_stay_within_the_instance_cap_and_a_file_within_the_total() {
        let cap = 1000;
        let defaults = RequestLimits::parse(None, None, None, cap).unwrap();
        assert_eq!(defaults, RequestLimits { max_files: 10, max_file_bytes: 1000, max_total_bytes: 1000 });
        let set = RequestLimits::parse(Some(2), Some(900), Some(500), cap).unwrap();
        assert_eq!((set.max_file_bytes, set.max_total_bytes), (500, 500));
        assert_eq!(RequestLimits::parse(Some(0), None, None, cap), Err(LimitError::Files));
        assert_eq!(RequestLimits::parse(Some(MAX_FILES + 1), None, None, cap), Err(LimitError::Files));
        assert_eq!(RequestLimits::parse(None, None, Some(1001), cap), Err(LimitError::Bytes(cap)));
        assert_eq!(RequestLimits::parse(None, Some(0), None, cap), Err(LimitError::Bytes(cap)));
    }
}
