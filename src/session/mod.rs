//! Server-side sessions. The browser holds 256 random bits; the database holds only their SHA-256,
//! so a database leak yields no live session. Regeneration swaps the hash in one UPDATE: everything
//! keyed by the session's row id (signed-in user, download grants) moves to the new id, and the old
//! cookie value stops working in the same instant.

mod csrf;

pub use csrf::{csrf_tokens_match, origin_is_allowed};

use std::time::Duration;

use crate::{
    accounts::TimeZone,
    db::{Db, Dialect, Sql, seconds},
    on_db,
    secret::{SecretString, random_token, sha256_hex},
    sql,
};

/// A live session as a request sees it.
#[derive(Clone, Debug)]
pub struct Session {
    /// Row id: the stable key of grants and challenges; never shown to anyone.
    pub id: i64,
    /// SHA-256 of the cookie value this request came with. A grant is honoured only together with
    /// it, so a request still in flight on a cookie from before a regeneration gets nothing.
    pub id_hash: String,
    /// The signed-in sender, if any.
    pub user_id: Option<i64>,
    /// The expected CSRF token of this session's forms.
    pub csrf_secret: String,
    /// The signed-in sender is an admin (known from the next request after sign-in).
    pub is_admin: bool,
    /// The zone the signed-in sender chose to read times in (known from the next request).
    pub time_zone: Option<TimeZone>,
}

/// What `LOAD` reads, in its column order.
#[derive(sqlx::FromRow)]
struct LoadedRow {
    id: i64,
    user_id: Option<i64>,
    csrf_secret: String,
    /// `last_seen_at` is due a touch.
    stale: bool,
    is_admin: bool,
    time_zone: Option<String>,
}

/// The cookie value to send after a session was created or regenerated.
#[derive(Debug)]
pub struct NewSession {
    pub cookie_value: SecretString,
    pub session: Session,
}

/// Session storage rules: idle and absolute lifetimes.
#[derive(Clone, Debug)]
pub struct Sessions {
    db: Db,
    idle: Duration,
    max_age: Duration,
}

/// How often `last_seen_at` is written: often enough for idle expiry, rarely enough that
/// page views do not turn into a stream of writes.
const TOUCH_EVERY_SECS: f64 = 60.0;

const CREATE: Sql = sql!(
    "INSERT INTO sessions (id_hash, csrf_secret, expires_at)
     VALUES ($1, $2, " now " + " secs("$3") ") RETURNING id"
);
/// The session, whether `last_seen_at` is due a touch, whether its sender is an admin, and the
/// sender's time zone.
const LOAD: Sql = sql!(
    "SELECT s.id, s.user_id, s.csrf_secret, s.last_seen_at < " now " - " secs("$3") " AS stale,
            COALESCE(u.role = 'admin', false) AS is_admin, u.time_zone
       FROM sessions s LEFT JOIN users u ON u.id = s.user_id
      WHERE s.id_hash = $1
        AND s.expires_at > " now "
        AND s.last_seen_at > " now " - " secs("$2")
);
const TOUCH: Sql = sql!("UPDATE sessions SET last_seen_at = " now " WHERE id = $1");
// COALESCE keeps the signed-in user when only the id rotates.
const ROTATE: Sql = sql!(
    "UPDATE sessions
        SET id_hash = $2, csrf_secret = $3, user_id = COALESCE($4, user_id), last_seen_at = " now "
      WHERE id = $1 AND expires_at > " now "
  RETURNING id, user_id"
);

impl Sessions {
    pub fn new(db: Db, idle: Duration, max_age: Duration) -> Self {
        Self { db, idle, max_age }
    }

    /// Starts a fresh anonymous session.
    pub async fn create(&self) -> Result<NewSession, sqlx::Error> {
        let cookie_value = random_token();
        let id_hash = sha256_hex(cookie_value.expose());
        let csrf_secret = random_token().expose().to_owned();
        let max_age = seconds(self.max_age);
        // Every row read: see `db::written_row` (a full disk would otherwise pass for a session).
        let id: i64 = on_db!(&self.db, |pool| {
            let rows = sqlx::query_scalar(pool.sql(&CREATE)).bind(&id_hash).bind(&csrf_secret).bind(max_age);
            crate::db::one_written_row(rows.fetch_all(pool).await?)?
        });
        Ok(NewSession {
            cookie_value,
            session: Session { id, id_hash, user_id: None, csrf_secret, is_admin: false, time_zone: None },
        })
    }

    /// Finds the live session a cookie value names. Anything malformed, unknown, idle too long or
    /// past its absolute lifetime is simply no session.
    pub async fn load(&self, cookie_value: &str) -> Result<Option<Session>, sqlx::Error> {
        if !is_token_shaped(cookie_value) {
            return Ok(None);
        }
        let id_hash = sha256_hex(cookie_value);
        let idle = seconds(self.idle);
        let found: Option<LoadedRow> = on_db!(&self.db, |pool| {
            sqlx::query_as(pool.sql(&LOAD))
                .bind(&id_hash)
                .bind(idle)
                .bind(TOUCH_EVERY_SECS)
                .fetch_optional(pool)
                .await?
        });
        let Some(row) = found else { return Ok(None) };
        if row.stale {
            self.touch(row.id).await?;
        }
        let (id, user_id, csrf_secret, is_admin) = (row.id, row.user_id, row.csrf_secret, row.is_admin);
        let time_zone = row.time_zone.as_deref().and_then(TimeZone::parse);
        Ok(Some(Session { id, id_hash, user_id, csrf_secret, is_admin, time_zone }))
    }

    async fn touch(&self, id: i64) -> Result<(), sqlx::Error> {
        on_db!(&self.db, |pool| sqlx::query(pool.sql(&TOUCH)).bind(id).execute(pool).await.map(drop))
    }

    /// Gives the session a new id (and a new CSRF token) on a privilege change, keeping its
    /// state. `None` when the session had already ended.
    pub async fn regenerate(&self, session_id: i64) -> Result<Option<NewSession>, sqlx::Error> {
        self.rotate(session_id, None).await
    }

    /// Signs a sender in on this session: the same one-statement rotation, with the user set.
    pub async fn sign_in(&self, session_id: i64, user_id: i64) -> Result<Option<NewSession>, sqlx::Error> {
        self.rotate(session_id, Some(user_id)).await
    }

    async fn rotate(&self, session_id: i64, user_id: Option<i64>) -> Result<Option<NewSession>, sqlx::Error> {
        let cookie_value = random_token();
        let id_hash = sha256_hex(cookie_value.expose());
        let csrf_secret = random_token().expose().to_owned();
        let row: Option<(i64, Option<i64>)> = on_db!(&self.db, |pool| {
            sqlx::query_as(pool.sql(&ROTATE))
                .bind(session_id)
                .bind(&id_hash)
                .bind(&csrf_secret)
                .bind(user_id)
                .fetch_all(pool)
                .await
                .map(crate::db::written_row)?
        });
        Ok(row.map(|(id, user_id)| NewSession {
            cookie_value,
            session: Session { id, id_hash, user_id, csrf_secret, is_admin: false, time_zone: None },
        }))
    }

    /// Ends one session and everything that hangs on it (grants, pending codes).
    pub async fn end(&self, session_id: i64) -> Result<(), sqlx::Error> {
        const SQL: &str = "DELETE FROM sessions WHERE id = $1";
        on_db!(&self.db, |pool| sqlx::query(SQL).bind(session_id).execute(pool).await.map(drop))
    }

    /// Ends every session of a user, wherever they were signed in.
    pub async fn end_all_for_user(&self, user_id: i64) -> Result<u64, sqlx::Error> {
        const SQL: &str = "DELETE FROM sessions WHERE user_id = $1";
        on_db!(&self.db, |pool| Ok(sqlx::query(SQL).bind(user_id).execute(pool).await?.rows_affected()))
    }

    /// Ends every session of a user but `keep` (after a password change).
    pub async fn end_others_for_user(&self, user_id: i64, keep: i64) -> Result<u64, sqlx::Error> {
        const SQL: &str = "DELETE FROM sessions WHERE user_id = $1 AND id <> $2";
        on_db!(&self.db, |pool| Ok(sqlx::query(SQL).bind(user_id).bind(keep).execute(pool).await?.rows_affected()))
    }
}

/// Session cookies, like link tokens, are exactly 64 lowercase hex characters.
pub fn is_token_shaped(value: &str) -> bool {
    value.len() == 64 && value.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}
