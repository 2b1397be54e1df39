//! TOTP secrets are stored sealed, as the outbox seals mail bodies: AES-256-GCM under a key derived
//! from the instance secret, with the account id as associated data, so a copy of the database
//! yields no authenticator and a sealed secret moved to another account does not open.
//!
//! Layout: `96-bit random nonce ‖ ciphertext ‖ tag`.

use aes_gcm::{
    Aes256Gcm, KeyInit, Nonce,
    aead::{Aead, Payload},
};
use rand::Rng;

use crate::secret::SecretKey;

const NONCE_LEN: usize = 12;

#[derive(Clone)]
pub struct TotpKey(Aes256Gcm);

impl std::fmt::Debug for TotpKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TotpKey([redacted])")
    }
}

/// A sealed secret that does not open: the instance's secret key changed, or the row was altered.
#[derive(Debug, thiserror::Error)]
#[error("the stored TOTP secret does not open with this instance's secret key")]
pub struct Unreadable;

impl TotpKey {
    pub fn derive(secret: &SecretKey) -> Self {
        Self(Aes256Gcm::new_from_slice(&secret.derive("totp-secret-v1")).expect("a 32-byte key"))
    }

    pub fn seal(&self, user_id: i64, secret: &[u8]) -> Vec<u8> {
        let mut nonce = [0u8; NONCE_LEN];
        rand::rng().fill_bytes(&mut nonce);
        let aad = user_id.to_be_bytes();
        let sealed = self
            .0
            .encrypt(Nonce::from_slice(&nonce), Payload { msg: secret, aad: &aad })
            .expect("AES-GCM seals a 20-byte secret");
        [&nonce[..], &sealed].concat()
    }

    pub fn open(&self, user_id: i64, stored: &[u8]) -> Result<Vec<u8>, Unreadable> {
        if stored.len() < NONCE_LEN {
            return Err(Unreadable);
        }
        let (nonce, sealed) = stored.split_at(NONCE_LEN);
        let aad = user_id.to_be_bytes();
        self.0.decrypt(Nonce::from_slice(nonce), Payload { msg: sealed, aad: &aad }).map_err(|_| Unreadable)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_secret_opens_only_with_its_key_and_account() {
        let key = TotpKey::derive(&SecretKey::from_hex(&"ab".repeat(32)).unwrap());
        let other = TotpKey::derive(&SecretKey::from_hex(&"cd".repeat(32)).unwrap());
        let sealed = key.seal(7, b"twenty bytes secret!");
        assert!(!sealed.windows(6).any(|w| w == b"twenty"));
        assert_eq!(key.open(7, &sealed).unwrap(), b"twenty bytes secret!");
        assert!(key.open(8, &sealed).is_err());
        assert!(other.open(7, &sealed).is_err());
        assert!(key.open(7, &sealed[..5]).is_err());
    }
}
