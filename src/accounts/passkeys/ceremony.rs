//! Passkey ceremonies under way: the state `webauthn-rs` made with the challenge it sent, kept in
//! our own database (never in a cookie), one per session and purpose, and taken exactly once, so
//! a replayed answer finds nothing to verify against.

use std::time::Duration;

use serde::{Serialize, de::DeserializeOwned};

use super::PasskeyError;
use crate::{
    db::{Db, Dialect, Sql, seconds},
    on_db, sql,
};

crate::db_code! {
    /// What a ceremony is for.
    pub enum Ceremony { Register = "register", SignIn = "sign_in", SecondFactor = "second_factor" }
}

/// How long an answer is awaited: the browser's own timeout (five minutes, as `webauthn-rs` asks
/// for) and as much again for a person who fetches a security key or takes a second try.
const TTL: Duration = Duration::from_secs(10 * 60);

const BEGIN: Sql = sql!(
    "INSERT INTO passkey_ceremonies (session_id, purpose, user_id, state, expires_at)
     VALUES ($1, $2, $3, $4, " now " + " secs("$5") ")
     ON CONFLICT (session_id, purpose) DO UPDATE
        SET user_id = excluded.user_id, state = excluded.state, expires_at = excluded.expires_at"
);
/// The `user_id` test is `IS NOT DISTINCT FROM` in PostgreSQL and `IS` in SQLite: both compare NULL
/// as a value, so a sign-in ceremony (nobody yet) is never taken as an account's.
const TAKE: Sql = sql!(
    "DELETE FROM passkey_ceremonies WHERE session_id = $1 AND purpose = $2 AND expires_at > " now
    { sqlite: " AND user_id IS $3", postgres: " AND user_id IS NOT DISTINCT FROM $3" }
    " RETURNING state"
);

#[derive(Clone, Debug)]
pub struct Ceremonies {
    db: Db,
}

impl Ceremonies {
    pub fn new(db: Db) -> Self {
        Self { db }
    }

    /// Keeps `state` for the session's answer, replacing a ceremony of the same purpose.
    pub async fn begin(
        &self,
        session_id: i64,
        purpose: Ceremony,
        user_id: Option<i64>,
        state: &impl Serialize,
    ) -> Result<(), PasskeyError> {
        let state = serde_json::to_string(state)?;
        on_db!(&self.db, |pool| {
            sqlx::query(pool.sql(&BEGIN))
                .bind(session_id)
                .bind(purpose)
                .bind(user_id)
                .bind(state)
                .bind(seconds(TTL))
                .execute(pool)
                .await
                .map(drop)?
        });
        Ok(())
    }

    /// Takes the session's live ceremony of `purpose` for `user_id`, once.
    pub async fn take<T: DeserializeOwned>(
        &self,
        session_id: i64,
        purpose: Ceremony,
        user_id: Option<i64>,
    ) -> Result<T, PasskeyError> {
        let state: Option<String> = on_db!(&self.db, |pool| {
            sqlx::query_scalar(pool.sql(&TAKE))
                .bind(session_id)
                .bind(purpose)
                .bind(user_id)
                .fetch_all(pool)
                .await
                .map(crate::db::written_row)?
        });
        Ok(serde_json::from_str(&state.ok_or(PasskeyError::NoCeremony)?)?)
    }
}
