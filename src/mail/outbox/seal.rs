//! Stored mail bodies are sealed: AES-256-GCM under a key derived from the instance secret, so a
//! copy of the database (a backup, a replica, a leaked dump) holds no live share link while a
//! mail waits for the relay. The row's recipient is bound in as associated data, so a body cannot
//! be moved to another row and still open.
//!
//! Layout: `MAGIC ‖ 96-bit random nonce ‖ ciphertext ‖ tag`. A body without the magic is a plain
//! message stored by an older version: it is still sent as it is, and start-up seals it.

use std::borrow::Cow;

use aes_gcm::{
    Aes256Gcm, KeyInit, Nonce,
    aead::{Aead, Payload},
};
use rand::Rng;

use super::Outbox;
use crate::{
    db::{Dialect, Sql},
    on_db,
    secret::{Purpose, SecretKey},
};

/// Starts every sealed body. The NUL byte cannot begin a formatted RFC 5322 message.
const MAGIC: &[u8; 4] = b"\0ws1";
const NONCE_LEN: usize = 12;

/// The outbox's key. Random nonces are safe far beyond the number of mails one instance queues
/// (the limit for AES-GCM is about 2^32 messages per key).
#[derive(Clone)]
pub struct OutboxKey(Aes256Gcm);

impl std::fmt::Debug for OutboxKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OutboxKey([redacted])")
    }
}

/// A sealed body that does not open: the secret key changed, or the row was tampered with.
#[derive(Debug, thiserror::Error)]
#[error("the stored mail does not open with this instance's secret key")]
pub struct Unreadable;

impl OutboxKey {
    pub fn derive(secret: &SecretKey) -> Self {
        let key = secret.derive(Purpose::MailOutbox);
        Self(Aes256Gcm::new_from_slice(&key).expect("a 32-byte key"))
    }

    pub fn seal(&self, recipient: &str, message: &[u8]) -> Vec<u8> {
        let mut nonce = [0u8; NONCE_LEN];
        rand::rng().fill_bytes(&mut nonce);
        let sealed = self
            .0
            .encrypt(Nonce::from_slice(&nonce), Payload { msg: message, aad: recipient.as_bytes() })
            .expect("AES-GCM seals any message of this size");
        [&MAGIC[..], &nonce, &sealed].concat()
    }

    /// The message a stored body holds (borrowed as it is for a body stored before sealing).
    pub fn open<'a>(&self, recipient: &str, stored: &'a [u8]) -> Result<Cow<'a, [u8]>, Unreadable> {
        let Some(rest) = stored.strip_prefix(&MAGIC[..]) else { return Ok(Cow::Borrowed(stored)) };
        if rest.len() < NONCE_LEN {
            return Err(Unreadable);
        }
        let (nonce, sealed) = rest.split_at(NONCE_LEN);
        self.0
            .decrypt(Nonce::from_slice(nonce), Payload { msg: sealed, aad: recipient.as_bytes() })
            .map(Cow::Owned)
            .map_err(|_| Unreadable)
    }

    /// True for a body this module wrote (sealed), false for an older plain one.
    pub fn is_sealed(stored: &[u8]) -> bool {
        stored.starts_with(MAGIC)
    }
}

impl Outbox {
    /// Seals the bodies that an older version stored in the clear (mails still waiting); returns
    /// how many. Each UPDATE names the body it read, so a row sent or changed meanwhile is left.
    pub async fn seal_plain_bodies(&self) -> Result<u64, sqlx::Error> {
        const FIND: Sql = Sql::same(
            "SELECT id, recipient, message FROM mail_outbox
              WHERE status IN ('pending', 'sending') AND length(message) > 0 ORDER BY id",
        );
        const SEAL: Sql = Sql::same("UPDATE mail_outbox SET message = $1 WHERE id = $2 AND message = $3");
        let rows: Vec<(i64, String, Vec<u8>)> =
            on_db!(&self.db, |pool| sqlx::query_as(pool.sql(&FIND)).fetch_all(pool).await?);
        let mut sealed = 0;
        for (id, recipient, message) in rows.into_iter().filter(|(_, _, m)| !OutboxKey::is_sealed(m)) {
            let body = self.key.seal(&recipient, &message);
            sealed += on_db!(&self.db, |pool| {
                sqlx::query(pool.sql(&SEAL)).bind(body).bind(id).bind(message).execute(pool).await?.rows_affected()
            });
        }
        Ok(sealed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(byte: &str) -> OutboxKey {
        OutboxKey::derive(&SecretKey::from_hex(&byte.repeat(32)).unwrap())
    }

    #[test]
    fn a_sealed_body_opens_only_with_its_key_and_recipient() {
        let message = b"Subject: hi\r\n\r\nhttps://files.example/s/0123456789abcdef";
        let sealed = key("ab").seal("r@example.test", message);
        assert!(OutboxKey::is_sealed(&sealed));
        assert!(!sealed.windows(16).any(|w| w == b"0123456789abcdef"));
        assert_eq!(key("ab").open("r@example.test", &sealed).unwrap().as_ref(), message);
        assert!(key("cd").open("r@example.test", &sealed).is_err());
        assert!(key("ab").open("other@example.test", &sealed).is_err());
        assert!(key("ab").open("r@example.test", &sealed[..10]).is_err());
    }

    #[test]
    fn a_plain_body_from_an_older_version_is_read_as_it_is() {
        let plain = b"From: a@example.test\r\n\r\nbody";
        assert!(!OutboxKey::is_sealed(plain));
        assert_eq!(key("ab").open("r@example.test", plain).unwrap().as_ref(), plain);
    }
}
