//! What is learned from a file's bytes as they stream past, in the one pass that stores them:
//! the size, the SHA-256 (shown to recipients, the download's ETag) and the CRC-32 (a bundle's
//! ZIP entry, so the archive is laid out without reading the file again).

use sha2::{Digest, Sha256};

use super::StoredFile;

#[derive(Default)]
pub struct Digester {
    sha256: Sha256,
    crc32: crc32fast::Hasher,
    size: u64,
}

impl Digester {
    pub fn update(&mut self, bytes: &[u8]) {
        self.sha256.update(bytes);
        self.crc32.update(bytes);
        self.size += bytes.len() as u64;
    }

    /// Bytes seen so far.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The stored file under `key` with the facts of every byte seen.
    pub fn stored(self, key: impl Into<String>) -> StoredFile {
        StoredFile {
            key: key.into(),
            size_bytes: self.size,
            sha256: hex::encode(self.sha256.finalize()),
            crc32: self.crc32.finalize(),
            sealed: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_digest_as_the_whole() {
        let mut digester = Digester::default();
        digester.update(b"hel");
        digester.update(b"lo");
        let stored = digester.stored("k");
        assert_eq!(stored.size_bytes, 5);
        assert_eq!(stored.sha256, "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824");
        assert_eq!(stored.crc32, 0x3610_a686);
    }
}
