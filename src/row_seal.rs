//! Secrets a row keeps are sealed: AES-256-GCM under a key derived from the instance secret for one
//! purpose, with the row's id as associated data, so a copy of the database yields nothing readable
//! and a sealed value moved to another row does not open. Random nonces are safe far beyond the
//! number of values one instance seals (about 2^32 per key).
//!
//! Layout: `96-bit random nonce ‖ ciphertext ‖ tag`.

use aes_gcm::{
    Aes256Gcm, KeyInit, Nonce,
    aead::{Aead, Payload},
};
use rand::Rng;

use crate::secret::{Purpose, SecretKey};

const NONCE_LEN: usize = 12;

#[derive(Clone)]
pub struct RowSeal(Aes256Gcm);

impl std::fmt::Debug for RowSeal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RowSeal([redacted])")
    }
}

impl RowSeal {
    /// The key for `purpose` (one per kind of secret).
    pub fn derive(secret: &SecretKey, purpose: Purpose) -> Self {
        Self(Aes256Gcm::new_from_slice(&secret.derive(purpose)).expect("a 32-byte key"))
    }

    /// A seal under a key of its own (random, kept wrapped elsewhere) rather than one derived from
    /// the instance secret: the same layout, for a value destroyed by destroying its key.
    pub fn with_key(key: &[u8; 32]) -> Self {
        Self(Aes256Gcm::new_from_slice(key).expect("a 32-byte key"))
    }

    pub fn seal(&self, row_id: i64, plain: &[u8]) -> Vec<u8> {
        let mut nonce = [0u8; NONCE_LEN];
        rand::rng().fill_bytes(&mut nonce);
        let aad = row_id.to_be_bytes();
        let sealed = self
            .0
            .encrypt(Nonce::from_slice(&nonce), Payload { msg: plain, aad: &aad })
            .expect("AES-GCM seals any value a row keeps");
        [&nonce[..], &sealed].concat()
    }

    /// The value, or `None` when it does not open (the secret key changed, or the row was altered).
    pub fn open(&self, row_id: i64, stored: &[u8]) -> Option<Vec<u8>> {
        let (nonce, sealed) = stored.split_at_checked(NONCE_LEN)?;
        let aad = row_id.to_be_bytes();
        self.0.decrypt(Nonce::from_slice(nonce), Payload { msg: sealed, aad: &aad }).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_value_opens_only_with_its_key_purpose_and_row() {
        let secret = SecretKey::from_hex(&"ab".repeat(32)).unwrap();
        let key = RowSeal::derive(&secret, Purpose::TotpSecret);
        let other_purpose = RowSeal::derive(&secret, Purpose::WebhookSecret);
        let other_key = RowSeal::derive(&SecretKey::from_hex(&"cd".repeat(32)).unwrap(), Purpose::TotpSecret);
        let sealed = key.seal(7, b"door code 4711");
        assert!(!sealed.windows(4).any(|w| w == b"4711"));
        assert_eq!(key.open(7, &sealed).unwrap(), b"door code 4711");
        assert!(key.open(8, &sealed).is_none());
        assert!(other_purpose.open(7, &sealed).is_none());
        assert!(other_key.open(7, &sealed).is_none());
        assert!(key.open(7, &sealed[..5]).is_none());
    }
}
