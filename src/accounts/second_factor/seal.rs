//! TOTP secrets are stored sealed, as the outbox seals mail bodies: AES-256-GCM under a key derived
//! from the instance secret, with the account id as associated data, so a copy of the database
//! yields no authenticator and a sealed secret moved to another account does not open.
//!
//! Sealed with [`RowSeal`].

use crate::{
    row_seal::RowSeal,
    secret::{Purpose, SecretKey},
};

#[derive(Clone, Debug)]
pub struct TotpKey(RowSeal);

/// A sealed secret that does not open: the instance's secret key changed, or the row was altered.
#[derive(Debug, thiserror::Error)]
#[error("the stored TOTP secret does not open with this instance's secret key")]
pub struct Unreadable;

impl TotpKey {
    pub fn derive(secret: &SecretKey) -> Self {
        Self(RowSeal::derive(secret, Purpose::TotpSecret))
    }

    pub fn seal(&self, user_id: i64, secret: &[u8]) -> Vec<u8> {
        self.0.seal(user_id, secret)
    }

    pub fn open(&self, user_id: i64, stored: &[u8]) -> Result<Vec<u8>, Unreadable> {
        self.0.open(user_id, stored).ok_or(Unreadable)
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
