//! How a resumable upload in the object store is cut into the parts of one multipart upload,
//! whatever sizes its PATCHes have: parts of one fixed size per upload (the last may be shorter),
//! numbered by their place in the file, so the offset the database holds decides which part a
//! byte belongs to, whichever instance receives it. A PATCH's bytes short of a full part stay a
//! piece until a later PATCH fills the part.

use crate::storage::{object_store::PART_BYTES, sealed::SEGMENT};

/// S3 takes at most this many parts in one multipart upload.
pub const MAX_PARTS: u64 = 10_000;

/// The size of every part of an upload of `length` bytes but the last: at least S3's minimum
/// (with room, as the form's uploads use), large enough that the upload fits in `MAX_PARTS`,
/// and a whole number of sealed segments.
pub fn part_bytes(length: u64) -> u64 {
    let fitting = length.div_ceil(MAX_PARTS).next_multiple_of(SEGMENT as u64);
    fitting.max(PART_BYTES as u64)
}

/// Where an upload of `length` bytes in parts of `part_bytes` stands at `offset`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PartAt {
    /// Its place in the upload (from 0): the part's number is this + 1.
    pub index: usize,
    /// Where the part begins: the bytes before it are in recorded parts, those from here to the
    /// offset in recorded pieces.
    pub start: u64,
    /// Its size: `part_bytes`, or what is left of the upload for the last one.
    pub len: u64,
}

impl PartAt {
    /// The part the byte at `offset` belongs to (`offset` < `length`).
    pub fn of(offset: u64, length: u64, part_bytes: u64) -> Self {
        let index = offset / part_bytes;
        let start = index * part_bytes;
        Self { index: usize::try_from(index).unwrap_or(usize::MAX), start, len: part_bytes.min(length - start) }
    }

    pub fn end(self) -> u64 {
        self.start + self.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1024 * 1024;

    #[test]
    fn parts_are_at_least_eight_mib_and_any_allowed_length_fits_in_ten_thousand() {
        assert_eq!(part_bytes(0), 8 * MIB);
        assert_eq!(part_bytes(80_000 * MIB), 8 * MIB);
        for length in [80_000 * MIB + 1, 5 * 1024 * 1024 * MIB, u64::MAX / 2] {
            let part = part_bytes(length);
            assert!(length.div_ceil(part) <= MAX_PARTS, "{length}");
            assert_eq!(part % SEGMENT as u64, 0, "{length}");
        }
    }

    #[test]
    fn an_offset_falls_in_one_part_and_the_last_part_is_what_is_left() {
        let length = 20 * MIB + 3;
        assert_eq!(PartAt::of(0, length, 8 * MIB), PartAt { index: 0, start: 0, len: 8 * MIB });
        assert_eq!(PartAt::of(8 * MIB, length, 8 * MIB), PartAt { index: 1, start: 8 * MIB, len: 8 * MIB });
        let last = PartAt::of(20 * MIB, length, 8 * MIB);
        assert_eq!(last, PartAt { index: 2, start: 16 * MIB, len: 4 * MIB + 3 });
        assert_eq!(last.end(), length);
    }
}
