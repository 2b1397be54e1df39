//! Keys of sealed files: a fresh random data key per stored file, kept only wrapped (AES-256-GCM
//! with the file's storage key as associated data, so a wrapped key moved to another row does not
//! open) under a key-encryption key derived from `WATASU_FILE_KEY`. Destroying a file's wrapped key
//! makes every copy of its bytes unreadable, wherever those copies are.
//!
//! Wrapped layout: `96-bit random nonce ‖ encrypted data key ‖ tag`.

use std::fmt;

use aes_gcm::{
    Aes256Gcm, KeyInit, Nonce,
    aead::{Aead, Payload},
};
use rand::Rng;

use crate::secret::{Purpose, SecretKey};

const NONCE_LEN: usize = 12;
/// The purpose the key-encryption key is derived for; a new wrapping scheme takes a new purpose.
const KEK_PURPOSE: Purpose = Purpose::FileKeyWrap;
const ID_PURPOSE: Purpose = Purpose::FileKeyId;

/// One stored file's key. Never stored as it is, never logged.
#[derive(Clone)]
pub struct DataKey([u8; 32]);

impl DataKey {
    pub fn generate() -> Self {
        Self(rand::random())
    }

    pub(super) fn expose(&self) -> &[u8; 32] {
        &self.0
    }
}

impl fmt::Debug for DataKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("DataKey([redacted])")
    }
}

/// What wraps and unwraps data keys: the key-encryption key of one `WATASU_FILE_KEY`, and that
/// key's id (recorded beside each wrapped key, so a rotation knows what is wrapped under which).
#[derive(Clone)]
pub struct FileKeys {
    kek: Aes256Gcm,
    id: String,
}

impl fmt::Debug for FileKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FileKeys").field("id", &self.id).finish_non_exhaustive()
    }
}

/// A wrapped data key as a row keeps it, with the id of the file key it is wrapped under.
#[derive(Clone, PartialEq, Eq)]
pub struct WrappedKey {
    pub wrapped: Vec<u8>,
    pub key_id: String,
}

impl fmt::Debug for WrappedKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WrappedKey").field("key_id", &self.key_id).finish_non_exhaustive()
    }
}

impl FileKeys {
    pub fn new(file_key: &SecretKey) -> Self {
        let kek = Aes256Gcm::new_from_slice(&file_key.derive(KEK_PURPOSE)).expect("a 32-byte key");
        Self { kek, id: hex::encode(&file_key.derive(ID_PURPOSE)[..8]) }
    }

    /// The id recorded beside every key this wraps.
    pub fn id(&self) -> &str {
        &self.id
    }

    pub fn wrap(&self, storage_key: &str, key: &DataKey) -> WrappedKey {
        let mut nonce = [0u8; NONCE_LEN];
        rand::rng().fill_bytes(&mut nonce);
        let sealed = self
            .kek
            .encrypt(Nonce::from_slice(&nonce), Payload { msg: key.expose(), aad: storage_key.as_bytes() })
            .expect("AES-GCM wraps a 32-byte key");
        WrappedKey { wrapped: [&nonce[..], &sealed].concat(), key_id: self.id.clone() }
    }

    /// The data key, or `None` when it does not open (another file key, another file's row, or
    /// altered).
    pub fn unwrap(&self, storage_key: &str, wrapped: &[u8]) -> Option<DataKey> {
        let (nonce, sealed) = wrapped.split_at_checked(NONCE_LEN)?;
        let plain =
            self.kek.decrypt(Nonce::from_slice(nonce), Payload { msg: sealed, aad: storage_key.as_bytes() }).ok()?;
        Some(DataKey(plain.try_into().ok()?))
    }
}

/// The file keys one instance holds: `WATASU_FILE_KEY`, and while a rotation runs
/// `WATASU_FILE_KEY_NEXT` too. A row's `file_key_id` says which of them opens its wrapped key, so
/// every file opens whether the rotation has reached its row yet or not.
#[derive(Clone, Debug)]
pub struct KeyRing {
    current: FileKeys,
    next: Option<FileKeys>,
}

impl KeyRing {
    pub fn new(current: FileKeys, next: Option<FileKeys>) -> Self {
        Self { current, next }
    }

    /// `WATASU_FILE_KEY`'s keys.
    pub fn current(&self) -> &FileKeys {
        &self.current
    }

    /// `WATASU_FILE_KEY_NEXT`'s keys, during a rotation.
    pub fn next(&self) -> Option<&FileKeys> {
        self.next.as_ref()
    }

    /// What new files' keys are wrapped under: the next key as soon as it is set, so a rotation
    /// has only the files stored before to re-wrap and new files never need the old key.
    pub fn wrapping(&self) -> &FileKeys {
        self.next.as_ref().unwrap_or(&self.current)
    }

    /// The keys whose id is `id` (a row's `file_key_id`), if this instance holds them.
    pub fn by_id(&self, id: &str) -> Option<&FileKeys> {
        std::iter::once(&self.current).chain(self.next.as_ref()).find(|keys| keys.id() == id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(byte: &str) -> FileKeys {
        FileKeys::new(&SecretKey::from_hex(&byte.repeat(32)).unwrap())
    }

    #[test]
    fn a_wrapped_key_opens_only_under_its_file_key_and_for_its_file() {
        let data_key = DataKey::generate();
        let wrapped = keys("ab").wrap("file-one", &data_key);
        assert!(!wrapped.wrapped.windows(8).any(|w| data_key.expose().windows(8).any(|k| k == w)));
        assert_eq!(keys("ab").unwrap("file-one", &wrapped.wrapped).unwrap().expose(), data_key.expose());
        assert!(keys("ab").unwrap("file-two", &wrapped.wrapped).is_none());
        assert!(keys("cd").unwrap("file-one", &wrapped.wrapped).is_none());
        assert!(keys("ab").unwrap("file-one", &wrapped.wrapped[..20]).is_none());
        assert_eq!(wrapped.key_id, keys("ab").id());
        assert_ne!(keys("ab").id(), keys("cd").id());
    }

    #[test]
    fn a_ring_wraps_new_keys_under_the_next_key_and_finds_either_by_its_id() {
        let ring = KeyRing::new(keys("ab"), Some(keys("cd")));
        assert_eq!(ring.wrapping().id(), keys("cd").id());
        assert_eq!(ring.by_id(keys("ab").id()).unwrap().id(), keys("ab").id());
        assert_eq!(ring.by_id(keys("cd").id()).unwrap().id(), keys("cd").id());
        assert!(ring.by_id(keys("ef").id()).is_none());
        assert_eq!(KeyRing::new(keys("ab"), None).wrapping().id(), keys("ab").id());
    }
}
