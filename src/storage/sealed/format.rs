//! The sealed file's layout and its arithmetic: a header, then segments of `SEGMENT` plaintext
//! bytes each followed by its tag; the last segment may be shorter (or empty, for an empty file)
//! and is sealed with STREAM's last-segment flag, so a file cut at a segment boundary does not
//! open. Knowing the plaintext length (the row records it) and the header, any plaintext range maps
//! to the ciphertext range of the segments covering it.
//!
//! Header: `magic (4) ‖ version (1) ‖ segment size, u32 big-endian (4) ‖ STREAM nonce prefix (7)`.
//! Every segment is sealed with the header as associated data, so an altered header does not open.

use std::fmt;

/// Plaintext bytes per segment of a newly sealed file. A file keeps the size it was sealed with
/// (its header says it), so this may change without touching stored files.
pub const SEGMENT: u32 = 64 * 1024;
/// The AES-GCM tag after each segment.
pub const TAG: u64 = 16;
/// STREAM's nonce prefix: AES-GCM's 12-byte nonce less its 32-bit counter and 1-byte flag.
pub const NONCE_PREFIX: usize = 7;
pub const HEADER_LEN: usize = 4 + 1 + 4 + NONCE_PREFIX;

const MAGIC: &[u8; 4] = b"WTSF";
const VERSION: u8 = 1;
/// Segment sizes a header may state: what a benchmark may choose between, nothing absurd.
const SEGMENT_RANGE: std::ops::RangeInclusive<u32> = 4 * 1024..=16 * 1024 * 1024;

/// A stored segment did not authenticate (altered, cut, reordered, or the key is not this file's):
/// its bytes are never handed out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("a sealed file's segment did not authenticate: the stored bytes are damaged")]
pub struct Damaged;

impl Damaged {
    /// Whether an I/O error is this one (it travels through readers as `io::Error`).
    pub fn is(error: &std::io::Error) -> bool {
        error.get_ref().is_some_and(|inner| inner.is::<Damaged>())
    }

    pub fn into_io(self) -> std::io::Error {
        std::io::Error::new(std::io::ErrorKind::InvalidData, self)
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub segment: u32,
    pub nonce_prefix: [u8; NONCE_PREFIX],
}

impl fmt::Debug for Header {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Header").field("segment", &self.segment).finish_non_exhaustive()
    }
}

impl Header {
    pub fn new(segment: u32, nonce_prefix: [u8; NONCE_PREFIX]) -> Self {
        Self { segment, nonce_prefix }
    }

    pub fn to_bytes(self) -> [u8; HEADER_LEN] {
        let mut bytes = [0u8; HEADER_LEN];
        bytes[..4].copy_from_slice(MAGIC);
        bytes[4] = VERSION;
        bytes[5..9].copy_from_slice(&self.segment.to_be_bytes());
        bytes[9..].copy_from_slice(&self.nonce_prefix);
        bytes
    }

    pub fn parse(bytes: &[u8]) -> Result<Self, Damaged> {
        let bytes: &[u8; HEADER_LEN] = bytes.try_into().map_err(|_| Damaged)?;
        if &bytes[..4] != MAGIC || bytes[4] != VERSION {
            return Err(Damaged);
        }
        let segment = u32::from_be_bytes(bytes[5..9].try_into().expect("4 bytes"));
        if !SEGMENT_RANGE.contains(&segment) {
            return Err(Damaged);
        }
        Ok(Self { segment, nonce_prefix: bytes[9..].try_into().expect("7 bytes") })
    }

    /// How many segments hold `plain_len` bytes: at least one, so even an empty file has a last
    /// segment whose flag proves nothing was cut off.
    pub fn segments(self, plain_len: u64) -> u64 {
        plain_len.div_ceil(u64::from(self.segment)).max(1)
    }

    /// The stored length of a file of `plain_len` bytes.
    pub fn sealed_len(self, plain_len: u64) -> u64 {
        HEADER_LEN as u64 + plain_len + TAG * self.segments(plain_len)
    }

    /// Where segment `index` starts in the stored file.
    pub fn segment_start(self, index: u64) -> u64 {
        HEADER_LEN as u64 + index * (u64::from(self.segment) + TAG)
    }

    /// The plaintext length of segment `index` of a file of `plain_len` bytes.
    pub fn segment_plain_len(self, plain_len: u64, index: u64) -> u64 {
        let segment = u64::from(self.segment);
        plain_len.saturating_sub(index * segment).min(segment)
    }

    /// The segments covering `len` plaintext bytes from `start` (clamped to the file), as the
    /// stored byte range that holds them.
    pub fn covering(self, plain_len: u64, start: u64, len: u64) -> Covering {
        let start = start.min(plain_len);
        let end = start.saturating_add(len).min(plain_len);
        let segment = u64::from(self.segment);
        let first = (start / segment).min(self.segments(plain_len) - 1);
        let last = if end == start { first } else { (end - 1) / segment };
        let stored_start = self.segment_start(first);
        let stored_end = self.segment_start(last) + self.segment_plain_len(plain_len, last) + TAG;
        Covering {
            first_segment: first,
            stored_start,
            stored_len: stored_end - stored_start,
            skip: start - first * segment,
            len: end - start,
        }
    }
}

/// The stored bytes to read for a plaintext range, and where the range lies in them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Covering {
    pub first_segment: u64,
    pub stored_start: u64,
    pub stored_len: u64,
    /// Plaintext bytes of the first segment before the range.
    pub skip: u64,
    /// Plaintext bytes of the range (clamped to the file).
    pub len: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> Header {
        Header::new(4096, [7; NONCE_PREFIX])
    }

    #[test]
    fn a_header_reads_back_and_refuses_what_it_did_not_write() {
        let bytes = header().to_bytes();
        assert_eq!(Header::parse(&bytes), Ok(header()));
        let mut other_version = bytes;
        other_version[4] = 2;
        assert_eq!(Header::parse(&other_version), Err(Damaged));
        assert_eq!(Header::parse(&bytes[..HEADER_LEN - 1]), Err(Damaged));
    }

    #[test]
    fn every_segment_adds_a_tag_and_an_empty_file_has_one() {
        let h = header();
        assert_eq!(h.sealed_len(0), 16 + 16);
        assert_eq!(h.sealed_len(4096), 16 + 4096 + 16);
        assert_eq!(h.sealed_len(4097), 16 + 4097 + 32);
    }

    #[test]
    fn a_range_is_covered_by_the_segments_it_touches() {
        let h = header();
        let c = h.covering(10_000, 4000, 200);
        assert_eq!((c.first_segment, c.stored_start, c.skip, c.len), (0, 16, 4000, 200));
        assert_eq!(c.stored_len, 2 * (4096 + 16));
        let tail = h.covering(10_000, 9_000, u64::MAX);
        assert_eq!((tail.first_segment, tail.len), (2, 1000));
        assert_eq!(tail.stored_start + tail.stored_len, h.sealed_len(10_000));
        let past = h.covering(10_000, 20_000, 5);
        assert_eq!(past.len, 0);
    }
}
