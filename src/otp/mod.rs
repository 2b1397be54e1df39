//! One-time codes mailed to a share's recipient: 6 digits from the CSPRNG, stored only as
//! HMAC-SHA256(pepper, challenge id ‖ code), valid 10 minutes. A try is claimed by one
//! conditional UPDATE *before* the code is compared, so no burst of concurrent guesses gets more
//! than five comparisons; the right code is consumed by another conditional UPDATE and works once.
//! Wrong codes also count against the share: past a cap it takes no codes until the sender acts.

use std::time::Duration;

use hmac::{KeyInit, Mac};
use rand::RngExt;
use sha2::Sha256;

use crate::{
    db::{Db, seconds, sqlite_write_tx},
    secret::{SecretKey, SecretString},
};

/// How long a mailed code works.
pub const CODE_VALIDITY: Duration = Duration::from_secs(10 * 60);
/// Tries per code, the right one included.
pub const MAX_TRIES: i32 = 5;
/// Wrong codes a share accepts across all its codes before it locks (ASVS 6.6.3).
pub const SHARE_WRONG_CODE_CAP: i32 = 15;

/// What checking a submitted code found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CodeOutcome {
    /// The right code, now consumed.
    Verified,
    /// Not the code; this many tries are left on it.
    Wrong { tries_left: i32 },
    /// No code is waiting: none was sent, it expired, was used, replaced, or ran out of tries.
    NoLiveCode,
    /// Not six digits; no try was used.
    Malformed,
    /// The share takes no more codes (too many wrong ones overall).
    Locked { now: bool },
}

/// Full-width digits (typed with a Japanese input method) as ASCII digits; anything else unchanged.
fn ascii_digits(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '０'..='９' => char::from(b'0' + (c as u32 - '０' as u32) as u8),
            other => other,
        })
        .collect()
}

#[derive(Clone)]
pub struct Codes {
    db: Db,
    pepper: [u8; 32],
}

impl std::fmt::Debug for Codes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Codes { pepper: [redacted] }")
    }
}

impl Codes {
    pub fn new(db: Db, secret_key: &SecretKey) -> Self {
        Self { db, pepper: secret_key.derive("watasu otp pepper v1") }
    }

    fn mac(&self, challenge_id: i64, code: &str) -> hmac::Hmac<Sha256> {
        let mut mac = hmac::Hmac::<Sha256>::new_from_slice(&self.pepper).expect("HMAC takes any key length");
        mac.update(&challenge_id.to_be_bytes());
        mac.update(code.as_bytes());
        mac
    }

    /// Creates a new code for this share and browser session, replacing earlier ones.
    pub async fn issue(&self, share_id: i64, session_id: i64) -> Result<SecretString, sqlx::Error> {
        let code = format!("{:06}", rand::rng().random_range(0..1_000_000u32));
        let validity = seconds(CODE_VALIDITY);
        match &self.db {
            Db::Sqlite(pool) => {
                let mut tx = sqlite_write_tx(pool).await?;
                sqlx::query(
                    "UPDATE otp_challenges SET invalidated_at = unixepoch('subsec')
                      WHERE share_id = $1 AND session_id = $2 AND consumed_at IS NULL AND invalidated_at IS NULL",
                )
                .bind(share_id)
                .bind(session_id)
                .execute(&mut *tx)
                .await?;
                let id: i64 = sqlx::query_scalar(
                    "INSERT INTO otp_challenges (share_id, session_id, code_mac, expires_at)
                     VALUES ($1, $2, '', unixepoch('subsec') + $3) RETURNING id",
                )
                .bind(share_id)
                .bind(session_id)
                .bind(validity)
                .fetch_one(&mut *tx)
                .await?;
                let mac = hex::encode(self.mac(id, &code).finalize().into_bytes());
                sqlx::query("UPDATE otp_challenges SET code_mac = $2 WHERE id = $1")
                    .bind(id)
                    .bind(mac)
                    .execute(&mut *tx)
                    .await?;
                tx.commit().await?;
            }
            Db::Postgres(pool) => {
                let mut tx = pool.begin().await?;
                sqlx::query(
                    "UPDATE otp_challenges SET invalidated_at = now()
                      WHERE share_id = $1 AND session_id = $2 AND consumed_at IS NULL AND invalidated_at IS NULL",
                )
                .bind(share_id)
                .bind(session_id)
                .execute(&mut *tx)
                .await?;
                let id: i64 = sqlx::query_scalar(
                    "INSERT INTO otp_challenges (share_id, session_id, code_mac, expires_at)
                     VALUES ($1, $2, '', now() + make_interval(secs => $3)) RETURNING id",
                )
                .bind(share_id)
                .bind(session_id)
                .bind(validity)
                .fetch_one(&mut *tx)
                .await?;
                let mac = hex::encode(self.mac(id, &code).finalize().into_bytes());
                sqlx::query("UPDATE otp_challenges SET code_mac = $2 WHERE id = $1")
                    .bind(id)
                    .bind(mac)
                    .execute(&mut *tx)
                    .await?;
                tx.commit().await?;
            }
        }
        Ok(SecretString::new(code))
    }

    /// True when this session has a code waiting for this share (the page then shows the code step).
    pub async fn has_live_code(&self, share_id: i64, session_id: i64) -> Result<bool, sqlx::Error> {
        let found: Option<i32> = match &self.db {
            Db::Sqlite(pool) => {
                sqlx::query_scalar(
                    "SELECT 1 FROM otp_challenges
                      WHERE share_id = $1 AND session_id = $2 AND consumed_at IS NULL AND invalidated_at IS NULL
                        AND attempts < $3 AND expires_at > unixepoch('subsec') LIMIT 1",
                )
                .bind(share_id)
                .bind(session_id)
                .bind(MAX_TRIES)
                .fetch_optional(pool)
                .await?
            }
            Db::Postgres(pool) => {
                sqlx::query_scalar(
                    "SELECT 1 FROM otp_challenges
                      WHERE share_id = $1 AND session_id = $2 AND consumed_at IS NULL AND invalidated_at IS NULL
                        AND attempts < $3 AND expires_at > now() LIMIT 1",
                )
                .bind(share_id)
                .bind(session_id)
                .bind(MAX_TRIES)
                .fetch_optional(pool)
                .await?
            }
        };
        Ok(found.is_some())
    }

    /// True when this session was ever sent a code for this share (it gave the right address).
    pub async fn has_any_code(&self, share_id: i64, session_id: i64) -> Result<bool, sqlx::Error> {
        const SQL: &str = "SELECT 1 FROM otp_challenges WHERE share_id = $1 AND session_id = $2 LIMIT 1";
        let found: Option<i32> = match &self.db {
            Db::Sqlite(pool) => sqlx::query_scalar(SQL).bind(share_id).bind(session_id).fetch_optional(pool).await?,
            Db::Postgres(pool) => sqlx::query_scalar(SQL).bind(share_id).bind(session_id).fetch_optional(pool).await?,
        };
        Ok(found.is_some())
    }

    /// Checks a submitted code for this share and session.
    pub async fn verify(&self, share_id: i64, session_id: i64, submitted: &str) -> Result<CodeOutcome, sqlx::Error> {
        let submitted = ascii_digits(submitted.trim());
        let submitted = submitted.as_str();
        if submitted.len() != 6 || !submitted.bytes().all(|b| b.is_ascii_digit()) {
            return Ok(CodeOutcome::Malformed);
        }
        if self.share_is_locked(share_id).await? {
            return Ok(CodeOutcome::Locked { now: false });
        }
        let Some((id, code_mac, attempts)) = self.claim_try(share_id, session_id).await? else {
            return Ok(CodeOutcome::NoLiveCode);
        };
        let expected = hex::decode(code_mac).unwrap_or_default();
        if self.mac(id, submitted).verify_slice(&expected).is_ok() {
            return Ok(if self.consume(id).await? { CodeOutcome::Verified } else { CodeOutcome::NoLiveCode });
        }
        let wrong_codes = self.count_wrong_code(share_id).await?;
        Ok(match wrong_codes.cmp(&SHARE_WRONG_CODE_CAP) {
            std::cmp::Ordering::Less => CodeOutcome::Wrong { tries_left: MAX_TRIES - attempts },
            std::cmp::Ordering::Equal => CodeOutcome::Locked { now: true },
            std::cmp::Ordering::Greater => CodeOutcome::Locked { now: false },
        })
    }

    async fn share_is_locked(&self, share_id: i64) -> Result<bool, sqlx::Error> {
        const SQL: &str = "SELECT locked_at IS NOT NULL FROM shares WHERE id = $1";
        let locked: Option<bool> = match &self.db {
            Db::Sqlite(pool) => sqlx::query_scalar(SQL).bind(share_id).fetch_optional(pool).await?,
            Db::Postgres(pool) => sqlx::query_scalar(SQL).bind(share_id).fetch_optional(pool).await?,
        };
        Ok(locked.unwrap_or(true))
    }

    /// Takes one try on the newest live code, or nothing when no try is left.
    async fn claim_try(&self, share_id: i64, session_id: i64) -> Result<Option<(i64, String, i32)>, sqlx::Error> {
        match &self.db {
            Db::Sqlite(pool) => {
                sqlx::query_as(
                    "UPDATE otp_challenges SET attempts = attempts + 1
                      WHERE id = (SELECT max(id) FROM otp_challenges WHERE share_id = $1 AND session_id = $2)
                        AND attempts < $3 AND consumed_at IS NULL AND invalidated_at IS NULL
                        AND expires_at > unixepoch('subsec')
                  RETURNING id, code_mac, attempts",
                )
                .bind(share_id)
                .bind(session_id)
                .bind(MAX_TRIES)
                .fetch_optional(pool)
                .await
            }
            Db::Postgres(pool) => {
                sqlx::query_as(
                    "UPDATE otp_challenges SET attempts = attempts + 1
                      WHERE id = (SELECT max(id) FROM otp_challenges WHERE share_id = $1 AND session_id = $2)
                        AND attempts < $3 AND consumed_at IS NULL AND invalidated_at IS NULL
                        AND expires_at > now()
                  RETURNING id, code_mac, attempts",
                )
                .bind(share_id)
                .bind(session_id)
                .bind(MAX_TRIES)
                .fetch_optional(pool)
                .await
            }
        }
    }

    async fn consume(&self, id: i64) -> Result<bool, sqlx::Error> {
        let done = match &self.db {
            Db::Sqlite(pool) => sqlx::query(
                "UPDATE otp_challenges SET consumed_at = unixepoch('subsec')
                  WHERE id = $1 AND consumed_at IS NULL AND invalidated_at IS NULL AND expires_at > unixepoch('subsec')",
            )
            .bind(id)
            .execute(pool)
            .await?
            .rows_affected(),
            Db::Postgres(pool) => sqlx::query(
                "UPDATE otp_challenges SET consumed_at = now()
                  WHERE id = $1 AND consumed_at IS NULL AND invalidated_at IS NULL AND expires_at > now()",
            )
            .bind(id)
            .execute(pool)
            .await?
            .rows_affected(),
        };
        Ok(done == 1)
    }

    /// Counts a wrong code against the share; returns the share's count of wrong codes.
    async fn count_wrong_code(&self, share_id: i64) -> Result<i32, sqlx::Error> {
        let wrong_codes: Option<i32> = match &self.db {
            Db::Sqlite(pool) => {
                sqlx::query_scalar(
                    "UPDATE shares
                        SET wrong_codes = wrong_codes + 1,
                            locked_at = CASE WHEN wrong_codes + 1 >= $2 THEN COALESCE(locked_at, unixepoch('subsec'))
                                             ELSE locked_at END
                      WHERE id = $1
                  RETURNING wrong_codes",
                )
                .bind(share_id)
                .bind(SHARE_WRONG_CODE_CAP)
                .fetch_optional(pool)
                .await?
            }
            Db::Postgres(pool) => {
                sqlx::query_scalar(
                    "UPDATE shares
                        SET wrong_codes = wrong_codes + 1,
                            locked_at = CASE WHEN wrong_codes + 1 >= $2 THEN COALESCE(locked_at, now())
                                             ELSE locked_at END
                      WHERE id = $1
                  RETURNING wrong_codes",
                )
                .bind(share_id)
                .bind(SHARE_WRONG_CODE_CAP)
                .fetch_optional(pool)
                .await?
            }
        };
        Ok(wrong_codes.unwrap_or(SHARE_WRONG_CODE_CAP))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn full_width_digits_count_as_digits() {
        assert_eq!(super::ascii_digits("１２３４５６"), "123456");
        assert_eq!(super::ascii_digits("12a４"), "12a4");
    }
}
