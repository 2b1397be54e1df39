//! Sign-ins started at the provider and not yet come back, kept in the browser, not in a row: a
//! request for `/login/sso` from anyone writes nothing. The cookie holds the SHA-256 of the
//! `state` and of the `nonce`, the PKCE verifier and the expiry, sealed together (AES-256-GCM under
//! a key derived from the instance secret), so the browser can neither read the verifier nor
//! change a field, and another browser has no cookie to answer with. The callback clears it; a
//! replayed answer then finds no cookie, or (with a cookie kept by hand) a code the provider
//! already took.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aes_gcm::{
    Aes256Gcm, KeyInit, Nonce,
    aead::{Aead, Payload},
};
use rand::Rng;
use serde::{Deserialize, Serialize};
use subtle::ConstantTimeEq;

use crate::secret::{SecretKey, SecretString, sha256_hex};

/// How long the provider's answer is awaited.
pub const PENDING_TTL: Duration = Duration::from_secs(10 * 60);
const NONCE_LEN: usize = 12;
/// Binds a sealed value to this use: no other sealed thing opens as a pending sign-in.
const PURPOSE: &[u8] = b"watasu pending single sign-on v1";

/// A pending sign-in read back from its cookie for an answer.
#[derive(Debug)]
pub struct PendingLogin {
    /// SHA-256 of the nonce the ID token must carry.
    pub nonce_hash: String,
    pub pkce_verifier: SecretString,
    /// Still within its time (an expired one says so rather than looking unknown).
    pub live: bool,
}

/// What the cookie carries, sealed.
#[derive(Serialize, Deserialize)]
struct Sealed {
    state_hash: String,
    nonce_hash: String,
    verifier: String,
    /// Seconds since the epoch after which the answer is refused.
    expires: u64,
}

#[derive(Clone)]
pub struct PendingLogins {
    key: Aes256Gcm,
}

impl std::fmt::Debug for PendingLogins {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PendingLogins([redacted])")
    }
}

fn unix_now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

impl PendingLogins {
    pub fn new(secret: &SecretKey) -> Self {
        let key = Aes256Gcm::new_from_slice(&secret.derive(crate::secret::Purpose::SsoPending)).expect("a 32-byte key");
        Self { key }
    }

    /// The cookie value that remembers a sign-in this browser starts.
    pub fn seal(&self, state: &SecretString, nonce: &SecretString, verifier: &SecretString) -> String {
        self.seal_at(state, nonce, verifier, unix_now())
    }

    fn seal_at(&self, state: &SecretString, nonce: &SecretString, verifier: &SecretString, now: u64) -> String {
        let sealed = Sealed {
            state_hash: sha256_hex(state.expose()),
            nonce_hash: sha256_hex(nonce.expose()),
            verifier: verifier.expose().to_owned(),
            expires: now + PENDING_TTL.as_secs(),
        };
        let plain = serde_json::to_vec(&sealed).expect("plain fields serialise");
        let mut nonce = [0u8; NONCE_LEN];
        rand::rng().fill_bytes(&mut nonce);
        let cipher = self
            .key
            .encrypt(Nonce::from_slice(&nonce), Payload { msg: &plain, aad: PURPOSE })
            .expect("AES-GCM seals a short value");
        hex::encode([&nonce[..], &cipher].concat())
    }

    /// The pending sign-in in `cookie` for the answer's `state`; `None`: no cookie of ours, or
    /// one for another sign-in.
    pub fn open(&self, cookie: &str, state: &str) -> Option<PendingLogin> {
        self.open_at(cookie, state, unix_now())
    }

    fn open_at(&self, cookie: &str, state: &str, now: u64) -> Option<PendingLogin> {
        let stored = hex::decode(cookie).ok().filter(|bytes| bytes.len() > NONCE_LEN)?;
        let (nonce, cipher) = stored.split_at(NONCE_LEN);
        let plain = self.key.decrypt(Nonce::from_slice(nonce), Payload { msg: cipher, aad: PURPOSE }).ok()?;
        let sealed: Sealed = serde_json::from_slice(&plain).ok()?;
        if !bool::from(sealed.state_hash.as_bytes().ct_eq(sha256_hex(state).as_bytes())) {
            return None;
        }
        Some(PendingLogin {
            nonce_hash: sealed.nonce_hash,
            pkce_verifier: SecretString::new(sealed.verifier),
            live: now <= sealed.expires,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn logins() -> PendingLogins {
        PendingLogins::new(&SecretKey::from_hex(&"07".repeat(32)).unwrap())
    }

    #[test]
    fn a_cookie_opens_for_its_own_state_until_it_expires_and_never_when_changed() {
        let (state, nonce, verifier) = (SecretString::new("s1"), SecretString::new("n1"), SecretString::new("v1"));
        let pending = logins();
        let cookie = pending.seal_at(&state, &nonce, &verifier, 1_000);

        let opened = pending.open_at(&cookie, "s1", 1_000 + PENDING_TTL.as_secs()).expect("opens");
        assert!(opened.live);
        assert_eq!((opened.pkce_verifier.expose(), opened.nonce_hash.as_str()), ("v1", sha256_hex("n1").as_str()));
        assert!(!pending.open_at(&cookie, "s1", 1_001 + PENDING_TTL.as_secs()).unwrap().live, "still live too late");
        assert!(pending.open_at(&cookie, "s2", 1_000).is_none(), "opened for another state");
        let mut changed = cookie.clone().into_bytes();
        changed[40] = if changed[40] == b'0' { b'1' } else { b'0' };
        assert!(
            pending.open_at(&String::from_utf8(changed).unwrap(), "s1", 1_000).is_none(),
            "a changed cookie opened"
        );
        assert!(!cookie.contains("v1") && !cookie.contains("s1"), "the cookie shows what it holds");
        let other = PendingLogins::new(&SecretKey::from_hex(&"08".repeat(32)).unwrap());
        assert!(other.open_at(&cookie, "s1", 1_000).is_none(), "another instance key opened it");
    }
}
