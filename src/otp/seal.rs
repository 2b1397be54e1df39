//! A mailed code is kept sealed beside its MAC so "send a new code" can mail the same code again:
//! AES-256-GCM under a key derived from the instance secret (as authenticator secrets are
//! sealed), with the challenge id as associated data, so a copy of the database yields no code and
//! a sealed code moved to another challenge does not open.
//!
//! Layout: `96-bit random nonce ‖ ciphertext ‖ tag`.

use aes_gcm::{
    Aes256Gcm, KeyInit, Nonce,
    aead::{Aead, Payload},
};
use rand::Rng;

use crate::secret::{SecretKey, SecretString};

const NONCE_LEN: usize = 12;

#[derive(Clone)]
pub struct CodeSeal(Aes256Gcm);

impl std::fmt::Debug for CodeSeal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CodeSeal([redacted])")
    }
}

impl CodeSeal {
    pub fn derive(secret: &SecretKey) -> Self {
        Self(Aes256Gcm::new_from_slice(&secret.derive("watasu otp code seal v1")).expect("a 32-byte key"))
    }

    pub fn seal(&self, challenge_id: i64, code: &str) -> Vec<u8> {
        let mut nonce = [0u8; NONCE_LEN];
        rand::rng().fill_bytes(&mut nonce);
        let aad = challenge_id.to_be_bytes();
        let sealed = self
            .0
            .encrypt(Nonce::from_slice(&nonce), Payload { msg: code.as_bytes(), aad: &aad })
            .expect("AES-GCM seals a 6-digit code");
        [&nonce[..], &sealed].concat()
    }

    /// The code, or `None` when it does not open (the secret key changed, or the row was altered).
    pub fn open(&self, challenge_id: i64, stored: &[u8]) -> Option<SecretString> {
        let (nonce, sealed) = stored.split_at_checked(NONCE_LEN)?;
        let aad = challenge_id.to_be_bytes();
        let code = self.0.decrypt(Nonce::from_slice(nonce), Payload { msg: sealed, aad: &aad }).ok()?;
        String::from_utf8(code).ok().map(SecretString::new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_code_opens_only_with_its_key_and_challenge() {
        let key = CodeSeal::derive(&SecretKey::from_hex(&"ab".repeat(32)).unwrap());
        let other = CodeSeal::derive(&SecretKey::from_hex(&"cd".repeat(32)).unwrap());
        let sealed = key.seal(7, "123456");
        assert!(!sealed.windows(6).any(|w| w == b"123456"));
        assert_eq!(key.open(7, &sealed).unwrap().expose(), "123456");
        assert!(key.open(8, &sealed).is_none());
        assert!(other.open(7, &sealed).is_none());
        assert!(key.open(7, &sealed[..5]).is_none());
    }
}
