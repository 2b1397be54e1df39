//! What is learned from a file's bytes as they stream past, in the one pass that stores them:
//! the size, the SHA-256 (shown to recipients, the download's ETag) and the CRC-32 (a bundle's
//! ZIP entry, so the archive is laid out without reading the file again). A digest can be saved
//! and resumed elsewhere: a resumable upload's parts arrive through any instance.

use sha2::{
    Digest, Sha256,
    digest::common::hazmat::{SerializableState, SerializedState},
};

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

    /// The digest so far as bytes a database keeps, to be [`resume`](Self::resume)d elsewhere.
    pub fn saved(&self) -> Vec<u8> {
        let mut saved = self.sha256.serialize().to_vec();
        saved.extend_from_slice(&self.crc32.clone().finalize().to_be_bytes());
        saved.extend_from_slice(&self.size.to_be_bytes());
        saved
    }

    /// The digest [`saved`](Self::saved) as these bytes; `None` for bytes it never wrote.
    pub fn resume(saved: &[u8]) -> Option<Self> {
        let (sha256, rest) = saved.split_at_checked(saved.len().checked_sub(12)?)?;
        let sha256 = Sha256::deserialize(&SerializedState::<Sha256>::try_from(sha256).ok()?).ok()?;
        let (crc32, size) = rest.split_at(4);
        let size = u64::from_be_bytes(size.try_into().ok()?);
        let crc32 = crc32fast::Hasher::new_with_initial_len(u32::from_be_bytes(crc32.try_into().ok()?), size);
        Some(Self { sha256, crc32, size })
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

    #[test]
    fn a_saved_digest_resumes_where_it_stopped() {
        let whole = {
            let mut digester = Digester::default();
            digester.update(&[7u8; 200]);
            digester.stored("k")
        };
        let mut first = Digester::default();
        first.update(&[7u8; 70]);
        let mut resumed = Digester::resume(&first.saved()).unwrap();
        resumed.update(&[7u8; 130]);
        assert_eq!(resumed.stored("k"), whole);
        assert!(Digester::resume(b"not a digest").is_none());
    }
}
