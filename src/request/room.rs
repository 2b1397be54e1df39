//! What a file request still takes: its limits less the files that count (see [`super::counts`])
//! and its unfinished uploads. Written once for the insert's check, the form's streaming bound and
//! the page's check before a byte is sent.

use super::{RequestLimits, UploadRefused, counts};
use crate::{share::FileInfo, uploads::Pending};

/// The room a request has left (either may be 0 or, past a limit lowered meanwhile, below).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Room {
    /// Files it still takes.
    pub files: i64,
    /// Bytes all further files may hold together.
    pub bytes: i64,
    limits: RequestLimits,
}

impl Room {
    /// The room `limits` leave beside the arrived `files` and the `pending` uploads.
    pub fn of(limits: RequestLimits, files: &[FileInfo], pending: Pending) -> Self {
        let kept = files.iter().filter(|file| counts(file));
        let (count, bytes) = kept.fold((0_i64, 0_i64), |(n, sum), file| (n + 1, sum.saturating_add(file.size_bytes)));
        Self {
            files: i64::from(limits.max_files) - count.saturating_add(pending.files),
            bytes: limits.max_total_bytes - bytes.saturating_add(pending.bytes),
            limits,
        }
    }

    /// Whether one more file of `size` bytes fits; else the limit it passes.
    pub fn admits(&self, size: i64) -> Result<(), UploadRefused> {
        if self.files <= 0 {
            return Err(UploadRefused::TooManyFiles(self.limits.max_files));
        }
        if size > self.limits.max_file_bytes {
            return Err(UploadRefused::FileTooLarge(self.limits.max_file_bytes));
        }
        if size > self.bytes {
            return Err(UploadRefused::TotalTooLarge(self.limits.max_total_bytes));
        }
        Ok(())
    }

    /// The most the next file may hold, and the limit a larger one passes: the size per file, or
    /// what is left of the total when that is less.
    pub fn bound(&self) -> (i64, UploadRefused) {
        if self.limits.max_file_bytes <= self.bytes {
            (self.limits.max_file_bytes, UploadRefused::FileTooLarge(self.limits.max_file_bytes))
        } else {
            (self.bytes.max(0), UploadRefused::TotalTooLarge(self.limits.max_total_bytes))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(size_bytes: i64, scan_state: Option<crate::scan::ScanState>) -> FileInfo {
        FileInfo {
            position: 0,
            storage_key: String::new(),
            original_name: String::new(),
            content_type: String::new(),
            size_bytes,
            sha256: String::new(),
            scan_state,
            scan_finding: None,
        }
    }

    const LIMITS: RequestLimits = RequestLimits { max_files: 3, max_file_bytes: 100, max_total_bytes: 250 };

    #[test]
    fn arrived_files_and_unfinished_uploads_both_take_room_and_a_refused_file_none() {
        let refused = file(90, Some(crate::scan::ScanState::Infected));
        let room = Room::of(LIMITS, &[file(80, None), refused], Pending { files: 1, bytes: 100 });
        assert_eq!((room.files, room.bytes), (1, 70));
        assert_eq!(room.admits(70), Ok(()));
        assert_eq!(room.admits(71), Err(UploadRefused::TotalTooLarge(250)));
        assert_eq!(room.bound(), (70, UploadRefused::TotalTooLarge(250)));
        let full = Room::of(LIMITS, &[file(1, None)], Pending { files: 2, bytes: 2 });
        assert_eq!(full.admits(0), Err(UploadRefused::TooManyFiles(3)));
    }

    #[test]
    fn a_file_past_its_own_limit_is_refused_as_such_while_the_total_has_room() {
        let room = Room::of(LIMITS, &[], Pending::default());
        assert_eq!(room.admits(100), Ok(()));
        assert_eq!(room.admits(101), Err(UploadRefused::FileTooLarge(100)));
        assert_eq!(room.bound(), (100, UploadRefused::FileTooLarge(100)));
    }
}
