//! Sign-ins started at the provider and not yet come back, one per session: the `state` and the
//! `nonce` are kept as SHA-256 only, the PKCE verifier sealed (AES-256-GCM under a key derived from
//! the instance secret, bound to the row's state), so a database copy cannot finish anyone's
//! sign-in. Taking one deletes it in the same statement: an answer is accepted once, by the
//! session that started it, and only until it expires by the database clock.

use std::time::Duration;

use aes_gcm::{
    Aes256Gcm, KeyInit, Nonce,
    aead::{Aead, Payload},
};
use rand::Rng;

use crate::{
    db::{Db, Dialect, Sql, seconds},
    on_db,
    secret::{SecretKey, SecretString, sha256_hex},
    sql,
};

/// How long the provider's answer is awaited.
pub const PENDING_TTL: Duration = Duration::from_secs(10 * 60);
const NONCE_LEN: usize = 12;

const START: Sql = sql!(
    "INSERT INTO sso_logins (session_id, state_hash, nonce_hash, pkce_verifier, expires_at)
     VALUES ($1, $2, $3, $4, " now " + " secs("$5") ")"
);
const TAKE: Sql = sql!(
    "DELETE FROM sso_logins WHERE session_id = $1 AND state_hash = $2
     RETURNING nonce_hash, pkce_verifier, expires_at > " now " AS live"
);

/// A pending sign-in taken back for its answer.
#[derive(Debug)]
pub struct PendingLogin {
    /// SHA-256 of the nonce the ID token must carry.
    pub nonce_hash: String,
    pub pkce_verifier: SecretString,
    /// Still within its time; an expired one is deleted all the same.
    pub live: bool,
}

#[derive(Clone)]
pub struct PendingLogins {
    db: Db,
    key: Aes256Gcm,
}

impl std::fmt::Debug for PendingLogins {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PendingLogins([redacted])")
    }
}

impl PendingLogins {
    pub fn new(db: Db, secret: &SecretKey) -> Self {
        let key = Aes256Gcm::new_from_slice(&secret.derive("sso-pkce-verifier-v1")).expect("a 32-byte key");
        Self { db, key }
    }

    /// Remembers a sign-in this session starts; an older one of the same session is dropped.
    pub async fn start(
        &self,
        session_id: i64,
        state: &SecretString,
        nonce: &SecretString,
        verifier: &SecretString,
    ) -> Result<(), sqlx::Error> {
        const CLEAR: &str = "DELETE FROM sso_logins WHERE session_id = $1";
        let state_hash = sha256_hex(state.expose());
        let sealed = self.seal(&state_hash, verifier.expose().as_bytes());
        let ttl = seconds(PENDING_TTL);
        on_db!(&self.db, |pool| {
            sqlx::query(CLEAR).bind(session_id).execute(pool).await?;
            sqlx::query(pool.sql(&START))
                .bind(session_id)
                .bind(&state_hash)
                .bind(sha256_hex(nonce.expose()))
                .bind(sealed)
                .bind(ttl)
                .execute(pool)
                .await
                .map(drop)
        })
    }

    /// Takes (deletes) this session's pending sign-in with this `state`; `None`: unknown, used,
    /// or another session's.
    pub async fn take(&self, session_id: i64, state: &str) -> Result<Option<PendingLogin>, sqlx::Error> {
        let state_hash = sha256_hex(state);
        let row: Option<(String, Vec<u8>, bool)> = on_db!(&self.db, |pool| {
            sqlx::query_as(pool.sql(&TAKE)).bind(session_id).bind(&state_hash).fetch_optional(pool).await?
        });
        Ok(row.and_then(|(nonce_hash, sealed, live)| {
            let verifier = self.open(&state_hash, &sealed)?;
            Some(PendingLogin { nonce_hash, pkce_verifier: SecretString::new(verifier), live })
        }))
    }

    fn seal(&self, state_hash: &str, verifier: &[u8]) -> Vec<u8> {
        let mut nonce = [0u8; NONCE_LEN];
        rand::rng().fill_bytes(&mut nonce);
        let sealed = self
            .key
            .encrypt(Nonce::from_slice(&nonce), Payload { msg: verifier, aad: state_hash.as_bytes() })
            .expect("AES-GCM seals a short verifier");
        [&nonce[..], &sealed].concat()
    }

    /// The verifier, unless the row does not open (another instance key, or tampered with).
    fn open(&self, state_hash: &str, stored: &[u8]) -> Option<String> {
        if stored.len() < NONCE_LEN {
            return None;
        }
        let (nonce, sealed) = stored.split_at(NONCE_LEN);
        let plain =
            self.key.decrypt(Nonce::from_slice(nonce), Payload { msg: sealed, aad: state_hash.as_bytes() }).ok()?;
        String::from_utf8(plain).ok()
    }
}
