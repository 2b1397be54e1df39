//! Download grants: a verified recipient's permission, tied to one session and one share, with a
//! short lifetime of its own. They die with the session (ON DELETE CASCADE).

use std::time::Duration;

use crate::{
    db::{Db, Dialect, Sql, seconds},
    on_db,
    session::Session,
    sql,
};

#[derive(Clone, Debug)]
pub struct DownloadGrants {
    db: Db,
    ttl: Duration,
}

impl DownloadGrants {
    pub fn new(db: Db, ttl: Duration) -> Self {
        Self { db, ttl }
    }

    /// Grants (or renews) the download of `share_id` to the session.
    pub async fn grant(&self, session_id: i64, share_id: i64) -> Result<(), sqlx::Error> {
        const SQL: Sql = sql!(
            "INSERT INTO download_grants (session_id, share_id, expires_at)
                 VALUES ($1, $2, " now " + " secs("$3") ")
                 ON CONFLICT (session_id, share_id) DO UPDATE SET expires_at = excluded.expires_at"
        );
        let ttl = seconds(self.ttl);
        on_db!(&self.db, |pool| {
            sqlx::query(pool.sql(&SQL)).bind(session_id).bind(share_id).bind(ttl).execute(pool).await.map(drop)
        })
    }

    /// True while the session holds an unexpired grant for exactly this share, judged by the id
    /// hash of the cookie the request came with: after a regeneration the row id is the same, but
    /// the old cookie's hash names no session any more.
    pub async fn is_granted(&self, session: &Session, share_id: i64) -> Result<bool, sqlx::Error> {
        const SQL: Sql = sql!("SELECT 1 FROM download_grants g JOIN sessions s ON s.id = g.session_id
              WHERE s.id = $1 AND s.id_hash = $2 AND g.share_id = $3 AND g.expires_at > " now);
        let found: Option<i32> = on_db!(&self.db, |pool| {
            sqlx::query_scalar(pool.sql(&SQL))
                .bind(session.id)
                .bind(&session.id_hash)
                .bind(share_id)
                .fetch_optional(pool)
                .await?
        });
        Ok(found.is_some())
    }
}
