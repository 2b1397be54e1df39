//! Sign-ins whose password was right and that still owe a second factor: one row per session,
//! gone with the session, valid for a few minutes by the database clock. The session itself stays
//! signed out until the row is taken.

use std::time::Duration;

use crate::{
    db::{Db, Dialect, Sql, seconds},
    on_db, sql,
};

crate::db_code! {
    /// What the pending sign-in still needs: a factor entered, or (the team requires one and the
    /// account has none) a factor set up.
    pub enum Purpose { Verify = "verify", Enrol = "enrol" }
}

/// How long a password stays good for entering the code.
pub const VERIFY_TTL: Duration = Duration::from_secs(5 * 60);
/// Setting up an app takes longer than typing a code: installing one, scanning, confirming.
pub const ENROL_TTL: Duration = Duration::from_secs(15 * 60);

#[derive(Clone, Debug)]
pub struct PendingSignIns {
    db: Db,
}

const BEGIN: Sql = sql!(
    "INSERT INTO pending_sign_ins (session_id, user_id, purpose, expires_at)
     VALUES ($1, $2, $3, " now " + " secs("$4") ")
     ON CONFLICT (session_id) DO UPDATE
        SET user_id = excluded.user_id, purpose = excluded.purpose, expires_at = excluded.expires_at"
);
const FIND: Sql = sql!(
    "SELECT p.user_id, p.purpose FROM pending_sign_ins p JOIN users u ON u.id = p.user_id
      WHERE p.session_id = $1 AND p.expires_at > " now " AND u.disabled_at IS NULL"
);
const TAKE: Sql = sql!("DELETE FROM pending_sign_ins WHERE session_id = $1 AND user_id = $2 AND expires_at > " now);

impl PendingSignIns {
    pub fn new(db: Db) -> Self {
        Self { db }
    }

    /// Records that `session_id` passed the password of `user_id` and now owes `purpose`.
    pub async fn begin(&self, session_id: i64, user_id: i64, purpose: Purpose) -> Result<(), sqlx::Error> {
        let ttl = seconds(if purpose == Purpose::Verify { VERIFY_TTL } else { ENROL_TTL });
        on_db!(&self.db, |pool| {
            sqlx::query(pool.sql(&BEGIN))
                .bind(session_id)
                .bind(user_id)
                .bind(purpose)
                .bind(ttl)
                .execute(pool)
                .await
                .map(drop)
        })
    }

    /// The account and purpose of the session's live pending sign-in (not expired, account active).
    pub async fn find(&self, session_id: i64) -> Result<Option<(i64, Purpose)>, sqlx::Error> {
        let row: Option<(i64, String)> =
            on_db!(&self.db, |pool| sqlx::query_as(pool.sql(&FIND)).bind(session_id).fetch_optional(pool).await?);
        Ok(row.and_then(|(user, purpose)| Purpose::parse(&purpose).ok().map(|p| (user, p))))
    }

    /// Ends the pending sign-in once its factor was given; false when it expired meanwhile.
    pub async fn take(&self, session_id: i64, user_id: i64) -> Result<bool, sqlx::Error> {
        let taken = on_db!(&self.db, |pool| {
            sqlx::query(pool.sql(&TAKE)).bind(session_id).bind(user_id).execute(pool).await?.rows_affected()
        });
        Ok(taken == 1)
    }

    /// Ends the session's pending sign-in, whatever it was for (its tries ran out).
    pub async fn end(&self, session_id: i64) -> Result<(), sqlx::Error> {
        const SQL: &str = "DELETE FROM pending_sign_ins WHERE session_id = $1";
        on_db!(&self.db, |pool| sqlx::query(SQL).bind(session_id).execute(pool).await.map(drop))
    }

    /// Drops every pending sign-in of an account (its factors were reset).
    pub async fn drop_all_for(&self, user_id: i64) -> Result<u64, sqlx::Error> {
        const SQL: &str = "DELETE FROM pending_sign_ins WHERE user_id = $1";
        on_db!(&self.db, |pool| Ok(sqlx::query(SQL).bind(user_id).execute(pool).await?.rows_affected()))
    }
}
