//! What the code step shows a browser about its own newest challenge: the address it typed,
//! whether its code still works, the tries left, and one status line left by its last form post
//! (every post answers 303, so the page view after it reads the line here, once). Nothing here
//! depends on whether the typed address was the registered one.

use std::time::Duration;

use super::{Codes, MAX_TRIES, SET_ASIDE, SHARE_WRONG_CODE_CAP};
use crate::{
    db::{Dialect, Sql, Timestamp, seconds},
    on_db,
    secret::SecretString,
    sql,
};

crate::db_code! {
    /// The status line a form post leaves for the next view of the code step.
    pub enum Notice {
        Wrong = "wrong",
        Malformed = "malformed",
        Resent = "resent",
        Repeated = "repeated",
    }
}

/// What "send a new code" found on a browser's newest challenge.
#[derive(Debug)]
pub enum Repeat {
    /// Its code still works and was stamped as sent again: mail it again if it has one to mail
    /// (`None`: the address did not match, and nothing is sent, as nothing was the first time).
    Again(Option<SecretString>),
    /// No working code: only a new challenge (a code request) helps.
    NoLiveCode,
}

/// A browser's newest challenge for a share, as its code step shows it.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct Challenge {
    id: i64,
    /// As typed on the email step (trimmed); empty for a challenge made without one.
    pub typed_address: String,
    /// Neither used nor set aside: the browser is at the code step.
    pub open: bool,
    /// Its code can still be entered: unexpired, with tries left.
    pub live: bool,
    /// Its time ran out (whether or not a code was mailed: a browser whose address did not match
    /// waits out the same time, so saying so tells it nothing new).
    pub expired: bool,
    attempts: i32,
    pub created_at: Timestamp,
    /// When the same code was last sent again.
    pub resent_at: Option<Timestamp>,
    pub notice: Option<Notice>,
}

impl Challenge {
    /// Tries left on this code.
    pub fn tries_left(&self) -> i32 {
        (MAX_TRIES - self.attempts).max(0)
    }
}

const LATEST: Sql = sql!("SELECT id, typed_address, consumed_at IS NULL AND invalidated_at IS NULL AS open,
            attempts < $3 AND expires_at > " now " AS live, expires_at <= " now " AS expired, attempts, created_at, resent_at, notice
       FROM otp_challenges WHERE share_id = $1 AND session_id = $2 ORDER BY id DESC LIMIT 1");

impl Codes {
    /// The browser's newest challenge for the share with the status line its last post left,
    /// which is cleared: a reload shows the step again, not the line.
    pub async fn take_latest(&self, share_id: i64, session_id: i64) -> Result<Option<Challenge>, sqlx::Error> {
        const CLEAR: &str = "UPDATE otp_challenges SET notice = NULL WHERE id = $1";
        let latest: Option<Challenge> = on_db!(&self.db, |pool| {
            sqlx::query_as(pool.sql(&LATEST))
                .bind(share_id)
                .bind(session_id)
                .bind(MAX_TRIES)
                .fetch_optional(pool)
                .await?
        });
        if let Some(challenge) = latest.as_ref().filter(|c| c.notice.is_some()) {
            on_db!(&self.db, |pool| sqlx::query(CLEAR).bind(challenge.id).execute(pool).await.map(drop)?);
        }
        Ok(latest)
    }

    /// Leaves `notice` on the browser's newest challenge for its next view of the code step.
    pub async fn leave_notice(&self, share_id: i64, session_id: i64, notice: Notice) -> Result<(), sqlx::Error> {
        const SQL: &str = "UPDATE otp_challenges SET notice = $3
              WHERE id = (SELECT max(id) FROM otp_challenges WHERE share_id = $1 AND session_id = $2)";
        on_db!(&self.db, |pool| {
            sqlx::query(SQL).bind(share_id).bind(session_id).bind(notice).execute(pool).await.map(drop)
        })
    }

    /// "Send a new code" while the browser's newest code still works: the same code (same expiry)
    /// is stamped as sent again, with the status line that says so, whether or not it was mailed.
    pub async fn repeat(&self, share_id: i64, session_id: i64) -> Result<Repeat, sqlx::Error> {
        const AGAIN: Sql = sql!("UPDATE otp_challenges SET resent_at = " now ", notice = $4
              WHERE id = (SELECT max(id) FROM otp_challenges WHERE share_id = $1 AND session_id = $2)
                AND consumed_at IS NULL AND invalidated_at IS NULL AND attempts < $3 AND expires_at > " now "
          RETURNING id, code_sealed");
        let found: Option<(i64, Option<Vec<u8>>)> = on_db!(&self.db, |pool| {
            sqlx::query_as(pool.sql(&AGAIN))
                .bind(share_id)
                .bind(session_id)
                .bind(MAX_TRIES)
                .bind(Notice::Repeated)
                .fetch_optional(pool)
                .await?
        });
        let Some((id, sealed)) = found else { return Ok(Repeat::NoLiveCode) };
        let code = sealed.and_then(|sealed| self.seal.open(id, &sealed));
        Ok(Repeat::Again(code))
    }

    /// Notes on the browser's newest challenge that its code requests are blocked for `wait`;
    /// true only for the first note of a block, so the sender hears of each block once.
    pub async fn note_block(&self, share_id: i64, session_id: i64, wait: Duration) -> Result<bool, sqlx::Error> {
        const NOTE: Sql = sql!("UPDATE otp_challenges SET blocked_until = " now " + " secs("$3") "
              WHERE id = (SELECT max(id) FROM otp_challenges WHERE share_id = $1 AND session_id = $2)
                AND (blocked_until IS NULL OR blocked_until <= " now ")");
        let wait = seconds(wait);
        let noted = on_db!(&self.db, |pool| {
            sqlx::query(pool.sql(&NOTE)).bind(share_id).bind(session_id).bind(wait).execute(pool).await?.rows_affected()
        });
        Ok(noted == 1)
    }

    /// "Use a different address": the browser's open challenges end and it is at the email step
    /// again. Costs no code request; the next address it types does.
    pub async fn set_aside(&self, share_id: i64, session_id: i64) -> Result<(), sqlx::Error> {
        on_db!(&self.db, |pool| {
            sqlx::query(pool.sql(&SET_ASIDE)).bind(share_id).bind(session_id).execute(pool).await.map(drop)
        })
    }

    /// How many more wrong codes the share takes; the last of them locks it.
    pub async fn share_tries_left(&self, share_id: i64) -> Result<i32, sqlx::Error> {
        const SQL: &str = "SELECT wrong_codes FROM shares WHERE id = $1";
        let wrong: Option<i32> =
            on_db!(&self.db, |pool| sqlx::query_scalar(SQL).bind(share_id).fetch_optional(pool).await?);
        Ok((SHARE_WRONG_CODE_CAP - wrong.unwrap_or(0)).max(0))
    }
}
