//! One-time codes mailed to a share's recipient: 6 digits from the CSPRNG, stored only as
//! HMAC-SHA256(pepper, challenge id ‖ code), valid 10 minutes. A try is claimed by one
//! conditional UPDATE *before* the code is compared, so no burst of concurrent guesses gets more
//! than five comparisons; the right code is consumed by another conditional UPDATE and works once.
//! Every try also counts against the share, in the same transaction and before the compare (a
//! right code gives its try back): past a cap of wrong ones the share takes no codes until the
//! sender acts. A mailed code is also kept sealed ([`seal`]) until it is used or set aside, so it
//! can be mailed again while it works.

mod seal;
mod step;

pub use step::{Challenge, Notice, Repeat};

use std::time::Duration;

use hmac::{KeyInit, Mac};
use rand::RngExt;
use sha2::Sha256;

use crate::{
    db::{Db, Dialect, Sql, seconds},
    on_db,
    secret::{SecretKey, SecretString, random_token},
    share::writes,
    sql,
};

/// The digits of a mailed code, as a literal the catalogue's sentences are built from at compile
/// time (`concat!`); [`CODE_LENGTH`] is the same number for the code.
#[macro_export]
macro_rules! code_length {
    () => {
        6
    };
}

/// The minutes a mailed code works, as a literal for the catalogue like [`code_length!`].
#[macro_export]
macro_rules! code_validity_minutes {
    () => {
        10
    };
}

/// How many digits a mailed code has.
pub const CODE_LENGTH: usize = code_length!();
/// How long a mailed code works.
pub const CODE_VALIDITY: Duration = Duration::from_secs(code_validity_minutes!() * 60);
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

/// Ends a browser's open challenges for a share: a newer one replaces them, or the browser goes
/// back to the email step.
const SET_ASIDE: Sql = sql!("UPDATE otp_challenges SET invalidated_at = " now ", code_sealed = NULL
      WHERE share_id = $1 AND session_id = $2 AND consumed_at IS NULL AND invalidated_at IS NULL");

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
    seal: seal::CodeSeal,
}

impl std::fmt::Debug for Codes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Codes { pepper: [redacted], seal: [redacted] }")
    }
}

impl Codes {
    pub fn new(db: Db, secret_key: &SecretKey) -> Self {
        Self {
            db,
            pepper: secret_key.derive(crate::secret::Purpose::OtpPepper),
            seal: seal::CodeSeal::derive(secret_key),
        }
    }

    fn mac(&self, challenge_id: i64, code: &str) -> hmac::Hmac<Sha256> {
        let mut mac = hmac::Hmac::<Sha256>::new_from_slice(&self.pepper).expect("HMAC takes any key length");
        mac.update(&challenge_id.to_be_bytes());
        mac.update(code.as_bytes());
        mac
    }

    /// Creates a new challenge for this share and browser session, replacing earlier ones. With
    /// `mailed` its code is returned to be mailed to the registered address; without, it gets a
    /// random MAC that no code can produce, so it behaves like any other challenge (tries, expiry,
    /// reloads) but can never verify.
    pub async fn issue(
        &self,
        share_id: i64,
        session_id: i64,
        mailed: bool,
    ) -> Result<Option<SecretString>, sqlx::Error> {
        self.issue_typed(share_id, session_id, mailed, "").await
    }

    /// [`Codes::issue`], remembering the address the browser typed so its code step can show it
    /// back (to that browser only).
    pub async fn issue_typed(
        &self,
        share_id: i64,
        session_id: i64,
        mailed: bool,
        typed: &str,
    ) -> Result<Option<SecretString>, sqlx::Error> {
        let code = rand::rng().random_range(0..10u32.pow(CODE_LENGTH as u32));
        let code = format!("{code:0CODE_LENGTH$}");
        let validity = seconds(CODE_VALIDITY);
        const INSERT: Sql = sql!("INSERT INTO otp_challenges (share_id, session_id, code_mac, expires_at, mailed, typed_address)
             VALUES ($1, $2, '', " now " + " secs("$3") ", $4, $5) RETURNING id");
        const SET_MAC: &str = "UPDATE otp_challenges SET code_mac = $2, code_sealed = $3 WHERE id = $1";
        let stored_mac = |id: i64| {
            if mailed {
                hex::encode(self.mac(id, &code).finalize().into_bytes())
            } else {
                random_token().expose().to_owned()
            }
        };
        let sealed = |id: i64| mailed.then(|| self.seal.seal(id, &code));
        on_db!(&self.db, |pool| {
            let mut tx = pool.begin_write().await?;
            sqlx::query(pool.sql(&SET_ASIDE)).bind(share_id).bind(session_id).execute(&mut *tx).await?;
            let id: i64 = sqlx::query_scalar(pool.sql(&INSERT))
                .bind(share_id)
                .bind(session_id)
                .bind(validity)
                .bind(mailed)
                .bind(typed)
                .fetch_one(&mut *tx)
                .await?;
            sqlx::query(SET_MAC).bind(id).bind(stored_mac(id)).bind(sealed(id)).execute(&mut *tx).await?;
            tx.commit().await?;
        });
        Ok(mailed.then(|| SecretString::new(code)))
    }

    /// True when this session has a code waiting for this share (the page then shows the code step).
    pub async fn has_live_code(&self, share_id: i64, session_id: i64) -> Result<bool, sqlx::Error> {
        const SQL: Sql = sql!("SELECT 1 FROM otp_challenges
              WHERE share_id = $1 AND session_id = $2 AND consumed_at IS NULL AND invalidated_at IS NULL
                AND attempts < $3 AND expires_at > " now " LIMIT 1");
        let found: Option<i32> = on_db!(&self.db, |pool| {
            sqlx::query_scalar(pool.sql(&SQL))
                .bind(share_id)
                .bind(session_id)
                .bind(MAX_TRIES)
                .fetch_optional(pool)
                .await?
        });
        Ok(found.is_some())
    }

    /// Whether this session's newest challenge for this share was mailed (it gave the right
    /// address); `None` when it never submitted an address.
    pub async fn latest_mailed(&self, share_id: i64, session_id: i64) -> Result<Option<bool>, sqlx::Error> {
        const SQL: &str = "SELECT mailed FROM otp_challenges WHERE share_id = $1 AND session_id = $2
                            ORDER BY id DESC LIMIT 1";
        on_db!(&self.db, |pool| sqlx::query_scalar(SQL).bind(share_id).bind(session_id).fetch_optional(pool).await)
    }

    /// Checks a submitted code for this share and session.
    pub async fn verify(&self, share_id: i64, session_id: i64, submitted: &str) -> Result<CodeOutcome, sqlx::Error> {
        let submitted = ascii_digits(submitted.trim());
        let submitted = submitted.as_str();
        if submitted.len() != CODE_LENGTH || !submitted.bytes().all(|b| b.is_ascii_digit()) {
            return Ok(CodeOutcome::Malformed);
        }
        let (id, code_mac, attempts, share_tries) = match self.take_try(share_id, session_id).await? {
            Try::Taken { challenge_id, code_mac, attempts, share_tries } => {
                (challenge_id, code_mac, attempts, share_tries)
            }
            Try::ShareLocked => return Ok(CodeOutcome::Locked { now: false }),
            Try::NoLiveCode => return Ok(CodeOutcome::NoLiveCode),
        };
        let expected = hex::decode(code_mac).unwrap_or_default();
        if self.mac(id, submitted).verify_slice(&expected).is_ok() {
            let verified = self.consume(id, share_id, session_id).await?;
            return Ok(if verified { CodeOutcome::Verified } else { CodeOutcome::NoLiveCode });
        }
        if share_tries >= SHARE_WRONG_CODE_CAP {
            self.lock_share(share_id).await?;
            return Ok(CodeOutcome::Locked { now: true });
        }
        Ok(CodeOutcome::Wrong { tries_left: MAX_TRIES - attempts })
    }

    /// Takes one try on the newest live code *and* one of the share's tries, in one transaction of
    /// two conditional UPDATEs, before anything is compared: concurrent guesses serialise on the
    /// share's row, so no burst gets more comparisons than the caps allow.
    async fn take_try(&self, share_id: i64, session_id: i64) -> Result<Try, sqlx::Error> {
        const CODE_TRY: Sql = sql!("UPDATE otp_challenges SET attempts = attempts + 1
              WHERE id = (SELECT max(id) FROM otp_challenges WHERE share_id = $1 AND session_id = $2)
                AND attempts < $3 AND consumed_at IS NULL AND invalidated_at IS NULL
                AND expires_at > " now "
          RETURNING id, code_mac, attempts");
        on_db!(&self.db, |pool| {
            let mut tx = pool.begin_write().await?;
            let share_tries: Option<i32> = sqlx::query_scalar(pool.sql(&writes::TAKE_CODE_TRY))
                .bind(share_id)
                .bind(SHARE_WRONG_CODE_CAP)
                .fetch_optional(&mut *tx)
                .await?;
            let Some(share_tries) = share_tries else { return Ok(Try::ShareLocked) };
            let code: Option<(i64, String, i32)> = sqlx::query_as(pool.sql(&CODE_TRY))
                .bind(share_id)
                .bind(session_id)
                .bind(MAX_TRIES)
                .fetch_optional(&mut *tx)
                .await?;
            // Dropping the transaction rolls the share's try back when no code was there.
            let Some((challenge_id, code_mac, attempts)) = code else { return Ok(Try::NoLiveCode) };
            tx.commit().await?;
            Ok(Try::Taken { challenge_id, code_mac, attempts, share_tries })
        })
    }

    async fn lock_share(&self, share_id: i64) -> Result<(), sqlx::Error> {
        on_db!(&self.db, |pool| sqlx::query(pool.sql(&writes::LOCK)).bind(share_id).execute(pool).await.map(drop))
    }

    /// Uses up the right code; the share's try it took is given back, since it was not wrong.
    /// The addresses this browser typed are forgotten: only its code step showed them, and the
    /// registered address is kept with the share alone.
    async fn consume(&self, id: i64, share_id: i64, session_id: i64) -> Result<bool, sqlx::Error> {
        const CONSUME: Sql = sql!("UPDATE otp_challenges SET consumed_at = " now ", code_sealed = NULL
              WHERE id = $1 AND consumed_at IS NULL AND invalidated_at IS NULL AND expires_at > " now);
        const FORGET_TYPED: &str =
            "UPDATE otp_challenges SET typed_address = '' WHERE share_id = $1 AND session_id = $2";
        let done = on_db!(&self.db, |pool| {
            let done = sqlx::query(pool.sql(&CONSUME)).bind(id).execute(pool).await?.rows_affected();
            sqlx::query(pool.sql(&writes::REFUND_CODE_TRY)).bind(share_id).execute(pool).await?;
            if done == 1 {
                sqlx::query(FORGET_TYPED).bind(share_id).bind(session_id).execute(pool).await?;
            }
            done
        });
        Ok(done == 1)
    }
}

/// What taking a try found.
enum Try {
    Taken { challenge_id: i64, code_mac: String, attempts: i32, share_tries: i32 },
    ShareLocked,
    NoLiveCode,
}

#[cfg(test)]
mod tests {
    #[test]
    fn full_width_digits_count_as_digits() {
        assert_eq!(super::ascii_digits("１２３４５６"), "123456");
        assert_eq!(super::ascii_digits("12a４"), "12a4");
    }
}
