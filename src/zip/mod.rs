//! A ZIP archive of stored files, laid out without reading them: entries are stored (not
//! compressed) and their CRC-32 was taken at upload, so the archive's length, every header and
//! where each file's bytes sit are known up front. A download sends the generated records and
//! the files' own bytes in turn, with a `Content-Length`, and any byte range maps onto pieces of
//! both, so a cut download resumes like a single file's.

mod records;
mod stream;

use bytes::Bytes;
use chrono::NaiveDateTime;
use sha2::{Digest, Sha256};

use self::records::Record;
pub use self::stream::archive_bytes;

/// One file in the archive.
pub struct Entry {
    /// The name inside the archive (already cleaned and unique within the archive).
    pub name: String,
    pub size: u64,
    pub crc32: u32,
    /// The time tools show for the file.
    pub modified: NaiveDateTime,
    /// The file's SHA-256 (hex), which makes the archive's ETag change when a file's bytes do.
    pub sha256: String,
}

/// A stretch of the archive: generated record bytes, or bytes of one entry's stored file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    Records(Bytes),
    File { entry: usize, offset: u64, len: u64 },
}

impl Piece {
    fn len(&self) -> u64 {
        match self {
            Self::Records(bytes) => bytes.len() as u64,
            Self::File { len, .. } => *len,
        }
    }

    /// The part of this piece from `start` (within it) for at most `len` bytes.
    fn part(&self, start: u64, len: u64) -> Self {
        match self {
            Self::Records(bytes) => Self::Records(bytes.slice(start as usize..(start + len) as usize)),
            Self::File { entry, offset, .. } => Self::File { entry: *entry, offset: offset + start, len },
        }
    }
}

/// The whole archive as pieces in order.
pub struct Layout {
    pieces: Vec<Piece>,
    len: u64,
    etag: String,
}

impl Layout {
    /// Lays out `entries` in order: each local header then the file, then the central directory
    /// and the end records (ZIP64 where a count, size or offset needs it).
    pub fn new(entries: &[Entry]) -> Self {
        let mut pieces = Vec::with_capacity(entries.len() * 2 + 1);
        let mut directory = Vec::new();
        let mut offset = 0u64;
        let mut fingerprint = Sha256::new();
        for (index, entry) in entries.iter().enumerate() {
            let record =
                Record { name: &entry.name, size: entry.size, crc32: entry.crc32, modified: entry.modified, offset };
            let header = records::local_header(&record);
            directory.extend_from_slice(&records::central_header(&record));
            offset += header.len() as u64 + entry.size;
            pieces.push(Piece::Records(header.into()));
            pieces.push(Piece::File { entry: index, offset: 0, len: entry.size });
            fingerprint.update(entry.sha256.as_bytes());
        }
        let directory_size = directory.len() as u64;
        directory.extend_from_slice(&records::end_records(entries.len() as u64, offset, directory_size));
        fingerprint.update(&directory);
        let len = offset + directory.len() as u64;
        pieces.push(Piece::Records(directory.into()));
        let etag = format!("\"zip-{}\"", hex::encode(&fingerprint.finalize()[..16]));
        Self { pieces, len, etag }
    }

    /// The archive's length in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// A strong ETag: the same files under the same names give the same archive, byte for byte.
    pub fn etag(&self) -> &str {
        &self.etag
    }

    /// The pieces covering bytes `start..end` of the archive (`end` exclusive, within the length).
    pub fn range(&self, start: u64, end: u64) -> Vec<Piece> {
        let mut parts = Vec::new();
        let mut at = 0u64;
        for piece in &self.pieces {
            let piece_end = at + piece.len();
            if piece_end > start && at < end && piece.len() > 0 {
                let from = start.saturating_sub(at);
                let to = end.min(piece_end) - at;
                parts.push(piece.part(from, to - from));
            }
            if piece_end >= end {
                break;
            }
            at = piece_end;
        }
        parts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str, content: &[u8]) -> Entry {
        Entry {
            name: name.to_owned(),
            size: content.len() as u64,
            crc32: crc32fast::hash(content),
            modified: NaiveDateTime::parse_from_str("2026-12-03 09:30:00", "%Y-%m-%d %H:%M:%S").unwrap(),
            sha256: hex::encode(Sha256::digest(content)),
        }
    }

    fn assemble(layout: &Layout, files: &[&[u8]], start: u64, end: u64) -> Vec<u8> {
        let mut out = Vec::new();
        for piece in layout.range(start, end) {
            match piece {
                Piece::Records(bytes) => out.extend_from_slice(&bytes),
                Piece::File { entry, offset, len } => {
                    out.extend_from_slice(&files[entry][offset as usize..(offset + len) as usize])
                }
            }
        }
        out
    }

    #[test]
    fn every_range_is_the_same_bytes_as_the_whole_archive_cut_there() {
        let files: [&[u8]; 3] = [b"first file", b"", "二番目のファイル".as_bytes()];
        let entries = [entry("a.txt", files[0]), entry("empty", files[1]), entry("報告書.pdf", files[2])];
        let layout = Layout::new(&entries);
        let whole = assemble(&layout, &files, 0, layout.len());
        assert_eq!(whole.len() as u64, layout.len());
        for start in 0..layout.len() {
            for end in [start + 1, (start + 37).min(layout.len()), layout.len()] {
                assert_eq!(
                    assemble(&layout, &files, start, end),
                    whole[start as usize..end as usize],
                    "range {start}..{end}"
                );
            }
        }
    }

    #[test]
    fn the_etag_follows_the_files_contents_and_names() {
        let same = Layout::new(&[entry("a", b"one")]);
        assert_eq!(same.etag(), Layout::new(&[entry("a", b"one")]).etag());
        assert_ne!(same.etag(), Layout::new(&[entry("b", b"one")]).etag());
        let mut changed = entry("a", b"one");
        changed.sha256 = hex::encode(Sha256::digest(b"two"));
        assert_ne!(same.etag(), Layout::new(&[changed]).etag());
    }
}
