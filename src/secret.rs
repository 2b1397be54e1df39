//! Secrets: types whose `Debug` never prints the value, the app's secret key, and random tokens.

use std::{fmt, fs, io::Write, os::unix::fs::OpenOptionsExt, path::Path};

use hmac::{KeyInit, Mac};
use rand::Rng;
use sha2::{Digest, Sha256};

/// A string that must never reach a log: passwords, tokens, URLs with credentials.
#[derive(Clone, PartialEq, Eq)]
pub struct SecretString(String);

impl SecretString {
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The value itself, for the one place that needs it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for SecretString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

impl std::str::FromStr for SecretString {
    type Err = std::convert::Infallible;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(Self(s.to_owned()))
    }
}

/// 256 random bits from the operating system's CSPRNG, as 64 lowercase hex characters.
pub fn random_token() -> SecretString {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    SecretString(hex::encode(bytes))
}

/// Hex SHA-256 of a token: what the database keeps instead of the token.
pub fn sha256_hex(value: &str) -> String {
    hex::encode(Sha256::digest(value.as_bytes()))
}

/// Declares [`Purpose`] and its `ALL` from one list, so no purpose can be left out of `ALL`.
macro_rules! purposes {
    ($($(#[$doc:meta])* $name:ident => $label:literal,)+) => {
        /// Every use of a master key (the instance secret or the file key), one variant each: a key
        /// is only ever derived for one of these, and the start-up check decides for each what in
        /// the database it opens (`key_check::held_by`), so a new use of the key cannot be left
        /// uncounted. The labels are what the keys are derived from: they never change.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Purpose {
            $($(#[$doc])* $name,)+
        }

        impl Purpose {
            /// Every purpose, in declaration order.
            pub const ALL: &[Purpose] = &[$(Purpose::$name),+];

            /// The label the key for this purpose is derived from.
            pub const fn label(self) -> &'static str {
                match self {
                    $(Purpose::$name => $label,)+
                }
            }
        }
    };
}

purposes! {
    /// The pepper of one-time codes' MACs.
    OtpPepper => "watasu otp pepper v1",
    /// Mailed codes kept sealed for "send a new code".
    OtpCodeSeal => "watasu otp code seal v1",
    /// Bodies of mails in the outbox.
    MailOutbox => "mail-outbox-v1",
    /// Authenticator apps' TOTP secrets.
    TotpSecret => "totp-secret-v1",
    /// Passkeys' user handles.
    PasskeyHandle => "watasu passkey user handle v1",
    /// Webhook endpoints' signing secrets.
    WebhookSecret => "webhook endpoint secret v1",
    /// Secret notes sealed before each had its own key (before migration 0051): opened until they end.
    NoteBeforeOwnKeys => "watasu handover note v1",
    /// The wrapping of each secret note's own key.
    NoteKeyWrap => "watasu handover note key v1",
    /// The sealed cookie of a single sign-on under way.
    SsoPending => "sso-pkce-verifier-v1",
    /// The form token of a browser without a session yet.
    AnonymousForm => "watasu anonymous form token v1",
    /// The cookie that shows a sender the links just made.
    CreatedLinkCookie => "watasu created link cookie v1",
    /// Derived from the file key: the wrapping of stored files' data keys.
    FileKeyWrap => "stored file data keys v1",
    /// Derived from the file key: the id that names it in files' rows.
    FileKeyId => "stored file key id v1",
}

/// The app's master key; every other key (code pepper, …) is derived from it by [`Purpose`].
#[derive(Clone)]
pub struct SecretKey([u8; 32]);

impl fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SecretKey([redacted])")
    }
}

impl SecretKey {
    /// Parses 64 hex characters.
    pub fn from_hex(text: &str) -> Result<Self, String> {
        let bytes = hex::decode(text.trim()).map_err(|_| "must be 64 hex characters".to_owned())?;
        let bytes: [u8; 32] = bytes.try_into().map_err(|_| "must be 64 hex characters".to_owned())?;
        Ok(Self(bytes))
    }

    /// Reads the key kept in `path`, or makes one and writes it there, readable by the owner only.
    pub fn load_or_generate(path: &Path) -> anyhow::Result<Self> {
        match Self::load(path)? {
            Some(key) => Ok(key),
            None => Self::generate(path),
        }
    }

    /// Reads the key kept in `path`; `None` when there is no such file.
    pub fn load(path: &Path) -> anyhow::Result<Option<Self>> {
        use anyhow::Context;
        match fs::read_to_string(path) {
            Ok(text) => Self::from_hex(&text).map(Some).map_err(|e| anyhow::anyhow!("{}: {e}", path.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
        }
    }

    /// Makes a new key and writes it to `path`, readable by the owner only; fails when the file
    /// exists (a key is never overwritten).
    pub fn generate(path: &Path) -> anyhow::Result<Self> {
        use anyhow::Context;
        let key = Self(rand::random());
        let mut file = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
            .with_context(|| format!("creating {}", path.display()))?;
        writeln!(file, "{}", hex::encode(key.0))?;
        file.sync_all()?;
        Ok(key)
    }

    /// A key for one purpose, so that a leak of one derived key reveals nothing of the others.
    pub fn derive(&self, purpose: Purpose) -> [u8; 32] {
        let mut mac = hmac::Hmac::<Sha256>::new_from_slice(&self.0).expect("HMAC takes any key length");
        mac.update(purpose.label().as_bytes());
        mac.finalize().into_bytes().into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_generated_key_is_kept_with_owner_only_permissions_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("secret.key");
        let first = SecretKey::load_or_generate(&path).unwrap();
        let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let second = SecretKey::load_or_generate(&path).unwrap();
        assert_eq!(first.0, second.0);
    }

    #[test]
    fn derived_keys_differ_by_purpose() {
        let key = SecretKey::from_hex(&"ab".repeat(32)).unwrap();
        assert_ne!(key.derive(Purpose::OtpPepper), key.derive(Purpose::AnonymousForm));
        assert_eq!(key.derive(Purpose::OtpPepper), key.derive(Purpose::OtpPepper));
        let labels: std::collections::HashSet<&str> = Purpose::ALL.iter().map(|p| p.label()).collect();
        assert_eq!(labels.len(), Purpose::ALL.len(), "two purposes share a label");
    }

    #[test]
    fn secrets_are_redacted_in_debug_output() {
        let secret = SecretString::new("hunter2");
        assert_eq!(format!("{secret:?}"), "[redacted]");
        assert!(!format!("{:?}", SecretKey([7; 32])).contains('7'));
    }

    #[test]
    fn random_tokens_are_64_lowercase_hex_and_differ() {
        let a = random_token();
        assert_eq!(a.expose().len(), 64);
        assert!(a.expose().bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
        assert_ne!(a, random_token());
    }
}
