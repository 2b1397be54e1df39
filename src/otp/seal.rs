//! A mailed code is kept sealed beside its MAC so "send a new code" can mail the same code again:
//! AES-256-GCM under a key derived from the instance secret (as authenticator secrets are
//! sealed), with the challenge id as associated data, so a copy of the database yields no code and
//! a sealed code moved to another challenge does not open.
//!
//! Sealed with [`RowSeal`].

use crate::{
    row_seal::RowSeal,
    secret::{Purpose, SecretKey, SecretString},
};

#[derive(Clone, Debug)]
pub struct CodeSeal(RowSeal);

impl CodeSeal {
    pub fn derive(secret: &SecretKey) -> Self {
        Self(RowSeal::derive(secret, Purpose::OtpCodeSeal))
    }

    pub fn seal(&self, challenge_id: i64, code: &str) -> Vec<u8> {
        self.0.seal(challenge_id, code.as_bytes())
    }

    /// The code, or `None` when it does not open (the secret key changed, or the row was altered).
    pub fn open(&self, challenge_id: i64, stored: &[u8]) -> Option<SecretString> {
        String::from_utf8(self.0.open(challenge_id, stored)?).ok().map(SecretString::new)
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
